// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_kvstore_decode: small region images (sealed,
// open, reused, with tombstones) and near misses that each break one rule.
//   fuzz_kvstore_seed DIR          write DIR/<name>.region
//   fuzz_kvstore_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/kvcache/ssd_region_writer.hpp"
#include "seed_corpus.hpp"

namespace {

using namespace cxlpool::kvcache;

constexpr std::uint32_t kRegion = 32 * 1024;
const NamespaceFingerprint kNs{0x0123456789ABCDEFULL, 0xFEDCBA9876543210ULL};

using cxlpool::fuzz::Seed;

std::vector<std::byte> payload(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 29 + seed) & 0xff);
  return v;
}

// Region image of three entries (5000 B, a tombstone, 100 B) in generation gen.
std::vector<std::byte> region(RegionWriter& w, std::uint64_t gen, bool seal) {
  w.open(1, gen);
  w.append({gen, 1}, kNs, gen * 10 + 1, payload(5000, 1));
  w.append({gen, 2}, kNs, gen * 10 + 2, {}, kEntryTombstone);
  w.append({gen, 3}, kNs, gen * 10 + 3, payload(100, 3));
  const auto used = seal ? w.seal() : w.bytes(0, w.used_bytes());
  std::vector<std::byte> out(used.begin(), used.end());
  if (!seal) out.resize(out.size() + kSsdBlockBytes, std::byte{0});  // unwritten space after
  return out;
}

std::vector<Seed> seeds() {
  RegionWriter w = std::move(*RegionWriter::create(kRegion));
  std::vector<Seed> out;
  const auto sealed = region(w, 7, true);
  const auto open = region(w, 8, false);
  out.push_back({"sealed.region", sealed});
  out.push_back({"open.region", open});
  // Generation 9 rewrote the start of the open image, then stopped.
  auto reused = open;
  w.open(1, 9);
  w.append({9, 1}, kNs, 91, payload(4096, 9));
  const auto fresh = w.bytes(0, w.used_bytes());
  std::copy(fresh.begin(), fresh.end(), reused.begin());
  out.push_back({"reused.region", reused});
  const auto entry = encode_entry_header(EntryHeader{1, 0, {5, 6}, kNs, 77, 7, 100, 0x12345678});
  out.push_back({"entry-header.bin", std::vector<std::byte>(entry.begin(), entry.end())});
  // Near misses, one broken rule each.
  auto b = sealed;
  // erase, not resize: gcc at -O1 warned that size() - 3000 could wrap.
  b.erase(b.end() - 3000, b.end());
  out.push_back({"truncated.region", b});
  b = sealed;
  b[2 * kSsdBlockBytes + 17] ^= std::byte{0x20};  // payload of entry 1
  out.push_back({"payload-crc.region", b});
  b = open;
  std::fill(b.begin() + 3 * kSsdBlockBytes + 30, b.begin() + 3 * kSsdBlockBytes + 80, std::byte{0});  // torn header
  out.push_back({"torn-header.region", b});
  b = sealed;
  b[4] = std::byte{2};
  out.push_back({"version-2.region", b});
  b = sealed;
  b[0] = std::byte{'X'};
  out.push_back({"bad-magic.region", b});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
