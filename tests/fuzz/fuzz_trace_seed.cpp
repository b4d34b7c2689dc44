// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_trace_decode: valid traces (empty, small,
// page-crossing, a slice of each generated workload) and near misses that
// each break one rule of the format.
//   fuzz_trace_seed DIR          write DIR/<name>.trace
//   fuzz_trace_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/tiering/trace_file.hpp"
#include "cxlpool/tiering/workloads.hpp"
#include "seed_corpus.hpp"

namespace {

using namespace cxlpool::tiering;

using cxlpool::fuzz::Seed;

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

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
