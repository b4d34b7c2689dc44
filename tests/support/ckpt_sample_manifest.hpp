// SPDX-License-Identifier: Apache-2.0
// A small manifest that keeps every rule of validate_manifest, with one of
// each kind of record (two threads, anonymous and file VMAs, runs, fds, a
// region, hot pages), for tests and seed corpora to start from and break,
// and the image bytes around a manifest.
#pragma once

#include <sys/mman.h>

#include <span>
#include <vector>

#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/common/crc32c.hpp"

namespace cxlpool::test {

// `data_pages` pages of page data at image offset 4096 (where ImageWriter
// puts them) back the runs.
inline ckpt::Manifest sample_manifest() {
  using namespace ckpt;
  Manifest m;
  m.created_unix_ns = 1700000000123456789ull;
  m.kernel_release = "6.18.0-test";
  m.process.pid = 4242;
  m.process.comm = "sample";
  m.process.cwd = "/tmp";
  m.process.umask = 022;
  m.process.rlimits[7] = {1024, 4096};
  m.process.sigactions[9] = {0x401000, 0x04000000, 0x402000, 1ull << 1};
  m.process.shared_pending.push_back({});
  m.process.shared_pending[0][0] = 10;
  m.process.itimer_real = {100000, 50000};
  m.process.creds.uid[0] = 1000;
  m.process.creds.groups = {1000, 27};
  m.process.creds.cap_bounding = ~0ull >> 23;
  m.process.mm.start_code = 0x400000;
  m.process.mm.end_code = 0x401000;
  m.process.mm.start_brk = m.process.mm.brk = 0x600000;
  m.process.mm.auxv = {6, 4096, 0, 0};
  m.process.mm.exe_file = 0;
  for (int32_t tid : {4242, 4243}) {
    ThreadState t;
    t.tid = tid;
    t.regs.assign(27 * 8, static_cast<uint8_t>(tid));
    t.xsave.assign(1088, 0x5a);
    t.sigmask = 1ull << 9;
    t.rseq = {0x7f0000001000ull + static_cast<uint64_t>(tid - 4242) * 32, 32, 0x53053053};
    t.clear_child_tid = 0x7f0000002000ull;
    t.name = tid == 4242 ? "sample" : "fifteen-bytes:1";  // the leader's is comm; the longest a name may be
    m.threads.push_back(std::move(t));
  }
  m.threads[1].pending.push_back({});
  m.threads[1].pending[0][0] = 12;
  m.files.push_back({"/usr/bin/sample", 0x803, 1234, 8192, 1700000000000000000});
  m.files.push_back({"/tmp/data.txt", 0x803, 99, 100, 1700000000000000001});
  m.vmas.push_back({0x400000, 0x402000, PROT_READ | PROT_EXEC, MAP_PRIVATE, VmaKind::kFilePrivate, 0, 0, 0});
  m.vmas.push_back({0x600000, 0x604000, PROT_READ | PROT_WRITE, MAP_PRIVATE, VmaKind::kAnon, kNoFile, 0, 0});
  m.vmas.push_back({0x7f0000000000ull, 0x7f0000004000ull, PROT_READ | PROT_WRITE, MAP_PRIVATE, VmaKind::kAnon,
                    kNoFile, 0, 0});
  m.vmas.push_back({0x7f0000010000ull, 0x7f0000012000ull, PROT_READ | PROT_EXEC, MAP_PRIVATE, VmaKind::kVdso,
                    kNoFile, 0, 0});
  m.runs.push_back({0x401000, 1, 4096});
  m.runs.push_back({0x600000, 2, 8192});
  m.runs.push_back({0x7f0000001000ull, 1, 16384});
  m.fds.push_back({0, FdKind::kStdio, kNoFile, 0, 0});
  m.fds.push_back({3, FdKind::kRegular, 1, 0, 17});
  m.fds.push_back({4, FdKind::kCxlpoolSocket, kNoFile, 02000002, 0});
  m.fds.push_back({5, FdKind::kCxlpoolRegion, 1, 02000000, 0});
  m.regions.push_back({0x7e0000000000ull, 1 << 21, "weights", 7, PROT_READ, 4096, RegionKind::kNamed, false});
  m.regions.push_back({0, 0, "weights", 7, 0, 0, RegionKind::kNamed, false});  // fd 5
  m.cxlpool_socket = "/run/cxlpool/cxlpool.sock";
  m.hot_pages = {0x600000, 0x7f0000001000ull};
  m.image_data_offset = 4096;
  m.image_data_bytes = 4 * 4096;
  return m;
}

// `m` without what a cxlpool client holds (its regions, the control socket
// and region descriptors): a restore of it needs no cxlpoold.
inline ckpt::Manifest without_client(ckpt::Manifest m) {
  m.regions.clear();
  m.cxlpool_socket.clear();
  std::erase_if(m.fds, [](const ckpt::FdEntry& f) {
    return f.kind == ckpt::FdKind::kCxlpoolSocket || f.kind == ckpt::FdKind::kCxlpoolRegion;
  });
  return m;
}

// sample_manifest() plus an eventfd (fd 6, its dup at 11), a pipe (7 read,
// 8 write) with bytes in it, a stream socketpair (9, 10), a seqpacket
// listener on an abstract name holding NULs (12, its dup at 13) and a stream
// listener on a path (14): every kind of the fd objects section.
inline ckpt::Manifest sample_manifest_with_fd_objects() {
  using namespace ckpt;
  Manifest m = sample_manifest();
  auto add = [&](int fd, FdKind kind, uint32_t flags, FdObject o) {
    m.fds.push_back({fd, kind, kNoFile, flags, 0});
    o.fd = fd;
    m.fd_objects.push_back(std::move(o));
  };
  constexpr uint32_t kRead = 0, kWrite = 1, kReadWrite = 2, kNonBlock = 04000, kCloexec = 02000000;
  add(6, FdKind::kEventfd, kReadWrite | kCloexec, {0, 11, 0, 5, kEventfdSemaphore, {}});
  add(7, FdKind::kPipe, kRead | kNonBlock, {0, 900, 0, 0, kDefaultPipeBytes, {'a', 'b', 'c'}});
  add(8, FdKind::kPipe, kWrite, {0, 900, 0, 0, kDefaultPipeBytes, {}});
  add(9, FdKind::kSocketPair, kReadWrite, {0, 1001, 1002, 0, 1, {}});
  add(10, FdKind::kSocketPair, kReadWrite, {0, 1002, 1001, 0, 1, {}});
  add(11, FdKind::kEventfd, kReadWrite, {0, 11, 0, 5, kEventfdSemaphore, {}});
  const std::string abstract("\0cuda-uvmfd-4026531836-511\0", 28);
  const std::vector<uint8_t> name(abstract.begin(), abstract.end());
  add(12, FdKind::kUnixListener, kReadWrite | kNonBlock | kCloexec, {0, 2001, 0, 128, 5, name});
  add(13, FdKind::kUnixListener, kReadWrite, {0, 2001, 0, 128, 5, name});
  const std::string path = "/run/sample.sock";
  add(14, FdKind::kUnixListener, kReadWrite, {0, 2002, 0, 4096, 1, {path.begin(), path.end()}});
  return m;
}

// A whole image of `m` in memory as ImageWriter lays it out: header, `data`
// (m.image_data_bytes of it) at m.image_data_offset, the manifest behind.
inline std::vector<std::byte> image_of(const ckpt::Manifest& m, std::span<const std::byte> data) {
  const auto manifest = ckpt::encode_manifest(m);
  ckpt::ImageHeader h;
  h.version = ckpt::kFormatVersion;
  h.data_offset = m.image_data_offset;
  h.data_bytes = m.image_data_bytes;
  h.manifest_offset = h.data_offset + h.data_bytes;
  h.manifest_bytes = manifest.size();
  h.manifest_crc32c = crc32c(manifest);
  const auto header = ckpt::encode_image_header(h);
  std::vector<std::byte> out(header.begin(), header.end());
  out.resize(h.data_offset);
  out.insert(out.end(), data.begin(), data.end());
  out.resize(h.manifest_offset);
  out.insert(out.end(), manifest.begin(), manifest.end());
  return out;
}

// sample_manifest() plus shared anonymous memory: object 0 as two VMAs (an
// mprotect split: 2 pages at offset 0, read-write, then 2 read-only at
// offset 0x2000) and mapped again whole (offset 0) elsewhere; object 1 as
// one page. One page of object 0 is stored (a fifth page of data).
inline ckpt::Manifest sample_manifest_with_shared_anon() {
  using namespace ckpt;
  Manifest m = sample_manifest();
  constexpr uint32_t kShared = MAP_SHARED, kRw = PROT_READ | PROT_WRITE, kRo = PROT_READ;
  const Vma vmas[] = {
      {0x7f0000020000ull, 0x7f0000022000ull, kRw, kShared, VmaKind::kSharedAnon, 0, 0, 0},
      {0x7f0000022000ull, 0x7f0000024000ull, kRo, kShared, VmaKind::kSharedAnon, 0, 0x2000, 0},
      {0x7f0000030000ull, 0x7f0000034000ull, kRw, kShared, VmaKind::kSharedAnon, 0, 0, 0},
      {0x7f0000040000ull, 0x7f0000041000ull, kRw, kShared, VmaKind::kSharedAnon, 1, 0, 0},
  };
  m.vmas.insert(m.vmas.end(), std::begin(vmas), std::end(vmas));
  m.runs.push_back({0x7f0000020000ull, 1, m.image_data_offset + m.image_data_bytes});
  m.image_data_bytes += 4096;
  return m;
}

// sample_manifest() with a leased region (id 21, 32 KiB on tier 1) mapped
// at 0x7f0000050000 (4 pages from offset 0x1000, read-write) and held as fd
// 6; its data: page 0 and pages 3-4, three more pages of the image.
inline ckpt::Manifest sample_manifest_with_lease() {
  using namespace ckpt;
  Manifest m = sample_manifest();
  m.regions.push_back({0x7f0000050000ull, 0x4000, "", 21, PROT_READ | PROT_WRITE, 0x1000, RegionKind::kLeased, true});
  m.regions.push_back({0, 0, "", 21, 0, 0, RegionKind::kLeased, true});
  m.fds.push_back({6, FdKind::kCxlpoolRegion, 3, 02000002, 0});
  const uint64_t data_end = m.image_data_offset + m.image_data_bytes;
  m.leases.push_back({21, 0x8000, 1, {{0, 1, data_end}, {0x3000, 2, data_end + 4096}}});
  m.image_data_bytes += 3 * 4096;
  return m;
}

}  // namespace cxlpool::test
