// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_devpool_decode: channel images (idle,
// with published slots, half consumed, a lap further) and near misses that
// each break one rule (a slot's count or record size, the header), and link
// images.
//   fuzz_devpool_seed DIR          write DIR/<name>.img
//   fuzz_devpool_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/devpool/channel.hpp"
#include "cxlpool/devpool/link.hpp"
#include "seed_corpus.hpp"

namespace {

using namespace cxlpool::devpool;
using cxlpool::fuzz::Seed;

struct Image {
  explicit Image(size_t n) : bytes(n + 64) {}
  std::span<std::byte> span(size_t n) {
    auto* p = bytes.data();
    while (reinterpret_cast<uintptr_t>(p) % 64 != 0) ++p;
    return {p, n};
  }
  std::vector<std::byte> bytes;
};

std::vector<std::byte> copy(std::span<std::byte> s) { return {s.begin(), s.end()}; }

// A channel of `slots` slots of `record_bytes`, `pushed` records published
// and `polled` consumed.
std::vector<std::byte> channel(uint32_t slots, uint32_t record_bytes, int pushed, int polled) {
  const ChannelGeometry g{.slots = slots, .record_bytes = record_bytes};
  Image image(channel_bytes(g));
  auto memory = image.span(channel_bytes(g));
  format_channel(memory, g);
  auto producer = ChannelProducer<CoherentLines>::attach(memory);
  auto consumer = ChannelConsumer<CoherentLines>::attach(memory);
  std::vector<std::byte> record(record_bytes), out(record_bytes);
  for (int i = 0; i < pushed; ++i) {
    std::memset(record.data(), i + 1, record_bytes);
    if (!producer->push(record.data())) {
      producer->flush();
      for (int j = 0; j < polled && consumer->poll(out.data(), 1).value_or(0) == 1; ++j) {
      }
      polled = 0;
      producer->push(record.data());
    }
  }
  producer->flush();
  for (int j = 0; j < polled; ++j) consumer->poll(out.data(), 1);
  return copy(memory);
}

void poke(std::vector<std::byte>& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

std::vector<Seed> seeds() {
  std::vector<Seed> out;
  out.push_back({"idle.img", channel(4, 16, 0, 0)});
  out.push_back({"published.img", channel(4, 16, 10, 0)});
  out.push_back({"half-consumed.img", channel(4, 24, 7, 3)});
  out.push_back({"second-lap.img", channel(2, 56, 5, 3)});
  out.push_back({"eight-byte.img", channel(8, 8, 30, 0)});
  // Near misses: slot 0 of a published channel (line 2; its tail at 56).
  const auto good = channel(4, 16, 10, 0);
  auto b = good;
  poke(b, 2 * 64 + 60, 4, 2);  // four 16-byte records in a slot that holds three
  out.push_back({"count-too-big.img", b});
  b = good;
  poke(b, 2 * 64 + 60, 0, 2);
  out.push_back({"count-zero.img", b});
  b = good;
  poke(b, 2 * 64 + 62, 24, 2);
  out.push_back({"record-size.img", b});
  b = good;
  poke(b, 8, 1u << 20, 4);  // header: more slots than the image holds
  out.push_back({"short.img", b});
  b = good;
  poke(b, 16, 2, 4);
  out.push_back({"records-per-slot.img", b});
  // Links.
  LinkGeometry lg;
  lg.requests = {.slots = 2, .record_bytes = 56};
  lg.completions = {.slots = 4, .record_bytes = 16};
  lg.frontend_buffer_bytes = 4096;
  lg.backend_buffer_bytes = 0;
  Image link(link_bytes(lg));
  auto memory = link.span(link_bytes(lg));
  format_link(memory, lg);
  out.push_back({"link.img", copy(memory)});
  b = copy(memory);
  poke(b, 32, 8192, 8);  // frontend buffers past the end
  out.push_back({"link-short.img", b});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
