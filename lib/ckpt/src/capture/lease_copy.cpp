// SPDX-License-Identifier: Apache-2.0
// The bytes of the process's leased regions, copied into the image like
// shared anonymous memory: a lease is shared memory of cxlpoold that only
// this process's connection holds, and a clone's connection gets a new one,
// so what it held must travel in the image. The region's file is read
// (through the process's own mapping or descriptor, which reach the very
// file) where it has data: SEEK_DATA skips what was never written or was
// given back with a punched hole, which a restore leaves zero.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "capture_steps.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt::detail {
namespace {

constexpr uint64_t kCopyBytes = 8u << 20;

// A /proc path of the process that opens the region's file: a mapping of
// it, else a descriptor.
std::string region_link(pid_t pid, const Manifest& m, uint64_t region_id) {
  for (const RegionRef& g : m.regions) {
    if (g.region_id != region_id || g.length == 0) continue;
    char name[64];
    std::snprintf(name, sizeof name, "map_files/%llx-%llx", static_cast<unsigned long long>(g.addr),
                  static_cast<unsigned long long>(g.addr + g.length));
    return proc_path(pid, name);
  }
  for (const FdEntry& f : m.fds) {
    if (f.kind == FdKind::kCxlpoolRegion && f.file < m.regions.size() && m.regions[f.file].region_id == region_id)
      return proc_path(pid, "fd/" + std::to_string(f.fd));
  }
  return {};
}

// Copies [from, to) of the file into the image as one run.
Result<void> copy_extent(int file, uint64_t from, uint64_t to, std::vector<std::byte>& buffer, ImageWriter& image,
                         Lease& lease) {
  LeaseRun run{from, (to - from) / kPageSize, ImageWriter::kDataOffset + image.data_bytes()};
  for (uint64_t at = from; at < to;) {
    const uint64_t n = std::min<uint64_t>(to - at, buffer.size());
    // Past the file's end (it cannot shrink while the lease lives, but a
    // short read must not store garbage) the bytes are zero.
    const ssize_t got = ::pread(file, buffer.data(), n, static_cast<off_t>(at));
    if (got < 0) return fail_errno("checkpoint: read leased region " + std::to_string(lease.region_id));
    std::fill(buffer.begin() + got, buffer.begin() + static_cast<std::ptrdiff_t>(n), std::byte{0});
    if (auto a = image.append(std::span(buffer).first(n)); !a) return tl::unexpected(a.error());
    at += n;
  }
  lease.runs.push_back(run);
  return {};
}

Result<void> capture_lease(pid_t pid, const CaptureOptions::RegionFile& region, Manifest& m,
                           std::vector<std::byte>& buffer, ImageWriter& image) {
  Lease lease;
  lease.region_id = region.region.region_id;
  lease.size = region.size;
  lease.tier_id = region.tier_id;
  const std::string which = "leased region " + std::to_string(lease.region_id);
  if (lease.size == 0 || lease.size % kPageSize != 0 || lease.size > kMaxLeaseBytes)
    return fail(EINVAL, "checkpoint: " + which + " has a size of " + std::to_string(lease.size) + " bytes");
  const std::string link = region_link(pid, m, lease.region_id);
  UniqueFd file(link.empty() ? -1 : ::open(link.c_str(), O_RDONLY | O_CLOEXEC));
  if (!file) return fail_errno("checkpoint: open " + which + " through " + (link.empty() ? "?" : link));
  for (uint64_t at = 0; at < lease.size;) {
    const off_t data = ::lseek(file.get(), static_cast<off_t>(at), SEEK_DATA);
    if (data < 0 && errno == ENXIO) break;  // no data past `at`
    if (data < 0) return fail_errno("checkpoint: SEEK_DATA in " + which);
    if (static_cast<uint64_t>(data) >= lease.size) break;
    const off_t hole = ::lseek(file.get(), data, SEEK_HOLE);
    if (hole < 0) return fail_errno("checkpoint: SEEK_HOLE in " + which);
    const uint64_t from = static_cast<uint64_t>(data) / kPageSize * kPageSize;
    const uint64_t to =
        std::min<uint64_t>((static_cast<uint64_t>(hole) + kPageSize - 1) / kPageSize * kPageSize, lease.size);
    if (to <= from || from < at) return fail(EIO, "checkpoint: SEEK_HOLE went backwards in " + which);
    if (auto c = copy_extent(file.get(), from, to, buffer, image, lease); !c) return c;
    at = to;
  }
  m.leases.push_back(std::move(lease));
  return {};
}

}  // namespace

Result<void> capture_leases(pid_t pid, const CaptureOptions& options, Manifest& m, ImageWriter& image) {
  std::map<uint64_t, const CaptureOptions::RegionFile*> leased;  // by id: the leases come out sorted
  for (const RegionRef& g : m.regions) {
    if (g.kind != RegionKind::kLeased) continue;
    // The process's own lease under this id (a restored clone's lease goes
    // by the recorded id, which may also name the original's lease).
    const auto f = std::find_if(options.region_files.begin(), options.region_files.end(), [&](const auto& r) {
      return r.region.region_id == g.region_id && r.region.kind == RegionKind::kLeased && r.lease_owner == pid;
    });
    if (f == options.region_files.end())
      return fail(EINVAL, "checkpoint: leased region " + std::to_string(g.region_id) + " is not the pool's");
    leased.emplace(g.region_id, &*f);
  }
  if (leased.empty()) return {};
  std::vector<std::byte> buffer(kCopyBytes);
  for (const auto& [id, region] : leased) {
    if (auto c = capture_lease(pid, *region, m, buffer, image); !c) return c;
  }
  return {};
}

}  // namespace cxlpool::ckpt::detail
