// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_ckpt_manifest_decode: a manifest's bytes
// (full, minimal, with an unknown section, with eventfds, a pipe and a
// socketpair), a whole image, and near misses
// that each break one rule (a run outside its VMA, a duplicate section, a
// truncated section, another version, a thread name too long, a cxlpool region of an unknown kind
// or a region descriptor naming no region), and a leased region with its
// lease record (alone and in an image) and with a run past the region's
// end (client-leased.bin: one without its record).
//   fuzz_ckpt_manifest_seed DIR          write DIR/<name>.bin
//   fuzz_ckpt_manifest_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <vector>

#include "cxlpool/ckpt/manifest_codec.hpp"
#include "seed_corpus.hpp"
#include "support/ckpt_sample_manifest.hpp"

namespace {

using namespace cxlpool::ckpt;
using cxlpool::fuzz::Seed;

std::vector<std::byte> image_of(const Manifest& m) {
  return cxlpool::test::image_of(m, std::vector<std::byte>(m.image_data_bytes, std::byte{0x11}));
}

void add_section(std::vector<std::byte>& bytes, uint32_t type, std::size_t length) {
  for (uint32_t v : {type, static_cast<uint32_t>(length)}) {
    for (int i = 0; i < 4; ++i) bytes.push_back(std::byte{static_cast<uint8_t>(v >> (8 * i))});
  }
  bytes.resize(bytes.size() + length, std::byte{0x22});
}

std::vector<Seed> seeds() {
  std::vector<Seed> out;
  const Manifest sample = cxlpool::test::sample_manifest();
  out.push_back({"manifest.bin", encode_manifest(sample)});
  Manifest minimal;
  minimal.process.pid = 1;
  minimal.threads.resize(1);
  minimal.threads[0].tid = 1;
  minimal.threads[0].regs.resize(kRegsBytes);
  minimal.threads[0].xsave.resize(kMinXsaveBytes);
  out.push_back({"minimal.bin", encode_manifest(minimal)});
  auto unknown = encode_manifest(sample);
  add_section(unknown, 99, 7);
  out.push_back({"unknown-section.bin", unknown});
  auto must = encode_manifest(sample);
  add_section(must, 99 | kSectionMustUnderstand, 3);
  out.push_back({"must-understand.bin", must});
  auto dup = encode_manifest(minimal);
  const auto again = encode_manifest(minimal);
  dup.insert(dup.end(), again.begin(), again.end());
  out.push_back({"duplicate.bin", dup});
  auto truncated = encode_manifest(sample);
  truncated.resize(truncated.size() / 2);
  out.push_back({"truncated.bin", truncated});
  Manifest outside = sample;
  outside.runs[1].pages = 9;
  out.push_back({"run-outside-vma.bin", encode_manifest(outside)});
  Manifest v1 = sample;
  v1.version = 1;
  out.push_back({"version1.bin", encode_manifest(v1)});
  Manifest long_name = sample;
  long_name.threads[1].name += "x";  // one byte past TASK_COMM_LEN's 15
  out.push_back({"thread-name-long.bin", encode_manifest(long_name)});
  Manifest leased = sample;
  leased.regions[0].kind = RegionKind::kLeased;
  out.push_back({"client-leased.bin", encode_manifest(leased)});
  Manifest bad_kind = sample;
  bad_kind.regions[1].kind = static_cast<RegionKind>(9);
  out.push_back({"client-bad-kind.bin", encode_manifest(bad_kind)});
  Manifest no_region = sample;
  no_region.fds.back().file = 7;
  out.push_back({"client-fd-past-regions.bin", encode_manifest(no_region)});
  out.push_back({"image.bin", image_of(sample)});
  const Manifest objects = cxlpool::test::sample_manifest_with_fd_objects();
  out.push_back({"fd-objects.bin", encode_manifest(objects)});
  Manifest lone_pipe = objects;
  lone_pipe.fds[6].open_flags = 0;  // both pipe fds read ends: a pipe without a writer
  out.push_back({"fd-objects-lone-pipe.bin", encode_manifest(lone_pipe)});
  Manifest relative_listener = objects;
  relative_listener.fd_objects.back().contents = {'s', 'o', 'c', 'k'};  // a path that is not absolute
  out.push_back({"fd-objects-listener-relative.bin", encode_manifest(relative_listener)});
  Manifest dgram_listener = objects;
  dgram_listener.fd_objects.back().detail = 2;  // SOCK_DGRAM cannot listen
  out.push_back({"fd-objects-listener-dgram.bin", encode_manifest(dgram_listener)});
  const Manifest shared = cxlpool::test::sample_manifest_with_shared_anon();
  out.push_back({"shared-anon.bin", encode_manifest(shared)});
  Manifest shared_gap = shared;
  shared_gap.vmas.back().file = 5;  // an object id that skips ids
  out.push_back({"shared-anon-id-gap.bin", encode_manifest(shared_gap)});
  const Manifest lease = cxlpool::test::sample_manifest_with_lease();
  out.push_back({"lease.bin", encode_manifest(lease)});
  out.push_back({"lease-image.bin", image_of(lease)});
  Manifest lease_past = lease;
  lease_past.leases[0].runs[1].offset = 0x7000;  // a run past the region's end
  out.push_back({"lease-run-past-end.bin", encode_manifest(lease_past)});
  Manifest past = sample;
  past.runs[2].image_offset = 4 * 4096;
  out.push_back({"image-run-past-data.bin", image_of(past)});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
