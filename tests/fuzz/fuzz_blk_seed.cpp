// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_blk_decode: valid commands of every
// opcode, completions, an identify record, and near misses that each break
// one rule (unknown opcode, reserved bytes, a range past the device, a
// buffer past the area, a positive status).
//   fuzz_blk_seed DIR          write DIR/<name>.bin
//   fuzz_blk_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <vector>

#include "cxlpool/devpool/blk_records.hpp"
#include "seed_corpus.hpp"

namespace {

using namespace cxlpool::devpool::blk;
using cxlpool::fuzz::Seed;

template <std::size_t N>
std::vector<std::byte> bytes(const std::array<std::byte, N>& a) {
  return std::vector<std::byte>(a.begin(), a.end());
}

// A command followed by the completion and identify records the target
// reads from the same input's front (so one seed reaches all three).
std::vector<std::byte> command_seed(const Command& c) { return bytes(encode_command(c)); }

Command command(Opcode op, std::uint64_t offset, std::uint32_t length, std::uint64_t buffer, std::uint8_t flags = 0) {
  Command c;
  c.opcode = op;
  c.flags = flags;
  c.command_id = 0x00010002;
  c.offset = offset;
  c.length = length;
  c.buffer_offset = buffer;
  return c;
}

std::vector<Seed> seeds() {
  std::vector<Seed> out;
  out.push_back({"read.bin", command_seed(command(Opcode::kRead, 8192, 4096, 4096))});
  out.push_back({"write-fua.bin", command_seed(command(Opcode::kWrite, 0, 65536, 0, kFlagFua))});
  out.push_back({"flush.bin", command_seed(command(Opcode::kFlush, 0, 0, 0))});
  out.push_back({"identify.bin", command_seed(command(Opcode::kIdentify, 0, kIdentifyBytes, 0))});
  out.push_back({"past-capacity.bin", command_seed(command(Opcode::kRead, 1ull << 30, 4096, 0))});
  out.push_back({"wrapping-range.bin", command_seed(command(Opcode::kRead, ~0ull - 4095, 8192, 0))});
  out.push_back({"buffer-past-area.bin", command_seed(command(Opcode::kRead, 0, 8192, (1 << 20) - 4096))});
  auto b = command_seed(command(Opcode::kRead, 0, 4096, 0));
  b[0] = std::byte{0x42};
  out.push_back({"unknown-opcode.bin", b});
  b = command_seed(command(Opcode::kRead, 0, 4096, 0));
  b[50] = std::byte{1};
  out.push_back({"reserved-set.bin", b});
  out.push_back({"completion-ok.bin", bytes(encode_completion({7, 0, 4096}))});
  out.push_back({"completion-error.bin", bytes(encode_completion({7, -5, 0}))});
  auto c = bytes(encode_completion({7, 0, 0}));
  c[4] = std::byte{1};
  out.push_back({"completion-positive-status.bin", c});
  DeviceInfo d;
  d.capacity = 1ull << 30;
  d.block_size = 4096;
  d.mem_alignment = 4096;
  out.push_back({"identify-data.bin", bytes(encode_identify(d))});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
