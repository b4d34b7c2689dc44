// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_trace_decode: valid traces (empty, small,
// page-crossing, a slice of each generated workload) and near misses that
// each break one rule of the format.
//   fuzz_trace_seed DIR          write DIR/<name>.trace
//   fuzz_trace_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cxlpool/tiering/trace_file.hpp"
#include "cxlpool/tiering/workloads.hpp"

namespace {

using namespace cxlpool::tiering;

struct Seed {
  std::string file;
  std::vector<std::byte> bytes;
};

std::vector<std::byte> encode(const std::vector<TraceRecord>& records) { return *encode_trace(records); }

void poke(std::vector<std::byte>& b, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

std::vector<Seed> seeds() {
  std::vector<Seed> out;
  out.push_back({"empty.trace", encode({})});
  const std::vector<TraceRecord> small = {
      {0, 0x1000, 64, false}, {10, 0x1040, 8, true}, {10, 0x1ff8, 16, false}, {25, 0x80000, 4096, true}};
  out.push_back({"small.trace", encode(small)});
  for (const WorkloadKind kind : all_workload_kinds()) {
    WorkloadConfig c;
    c.kind = kind;
    c.footprint_bytes = 1 << 20;
    c.accesses = 48;
    c.duration_ns = 1000;
    out.push_back({std::string("workload-") + workload_kind_name(kind) + ".trace", encode(*generate_workload(c))});
  }
  // Near misses, one broken rule each.
  const std::vector<std::byte> good = encode(small);
  auto b = good;
  b[0] = std::byte{'X'};
  out.push_back({"bad-magic.trace", b});
  b = good;
  b.resize(b.size() - 7);
  out.push_back({"truncated.trace", b});
  b = good;
  poke(b, kTraceHeaderBytes + 2 * kTraceRecordBytes, 5, 8);  // record 2 before record 1
  out.push_back({"backwards.trace", b});
  b = good;
  poke(b, kTraceHeaderBytes + 1 * kTraceRecordBytes + 16, 0, 4);
  out.push_back({"size-zero.trace", b});
  TraceHeader h = *decode_trace_header(good);
  h.flags = 0;
  b = good;
  auto raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  out.push_back({"unfinished.trace", b});
  h = *decode_trace_header(good);
  h.version = 2;
  b = good;
  raw = encode_trace_header(h);
  std::memcpy(b.data(), raw.data(), raw.size());
  out.push_back({"version-2.trace", b});
  return out;
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::strcmp(argv[1], "--check") == 0;
  if (!(argc == 2 || check)) {
    std::fprintf(stderr, "usage: %s [--check] DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir(argv[argc - 1]);
  int bad = 0;
  for (const Seed& seed : seeds()) {
    const auto path = dir / seed.file;
    if (check) {
      if (read_file(path) != seed.bytes) {
        std::fprintf(stderr, "%s is missing or stale; regenerate with %s %s\n", path.c_str(), argv[0], dir.c_str());
        ++bad;
      }
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(seed.bytes.data()), static_cast<std::streamsize>(seed.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}
