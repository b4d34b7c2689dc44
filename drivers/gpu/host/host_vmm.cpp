// SPDX-License-Identifier: Apache-2.0
#include "host_vmm.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/driver/vmm_ranges.hpp"
#include "host_vmm_probe.hpp"

namespace cxlpool::drivers {
namespace {

constexpr uint64_t kGran = kHostVmmGranularity;

bool aligned(uint64_t v) { return v % kGran == 0; }

// Lines of /proc/self/maps (the process's VMAs), -1 when unreadable.
long count_mappings() {
  UniqueFd fd(::open("/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (!fd) return -1;
  long lines = 0;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  }
  return lines;
}

long max_map_count() {
  UniqueFd fd(::open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC));
  if (!fd) return -1;
  char buf[32] = {};
  if (::read(fd.get(), buf, sizeof buf - 1) <= 0) return -1;
  return std::strtol(buf, nullptr, 10);
}

// An mmap that fails with ENOMEM while the process is at its VMA limit:
// say so, with the numbers, instead of a bare "Cannot allocate memory".
Error mmap_error(const std::string& what) {
  const int saved = errno;
  if (saved == ENOMEM) {
    const long maps = count_mappings();
    const long limit = max_map_count();
    // A split or a new VMA needs one or two more than what is there.
    if (maps >= 0 && limit > 0 && maps + 2 >= limit) {
      return Error{ENOMEM, errno_message(what, saved) + ": the process has " + std::to_string(maps) + " memory mappings and vm.max_map_count is " +
                               std::to_string(limit) +
                               " (each run of host pages that is not contiguous in one region is a mapping: "
                               "use larger page_bytes or raise vm.max_map_count)"};
    }
  }
  return Error{saved, errno_message(what, saved)};
}

class HostVmm final : public hal::GpuVmm {
 public:
  ~HostVmm() override {
    for (auto& [va, bytes] : ranges_) ::munmap(reinterpret_cast<void*>(va), bytes);
  }

  const char* name() const override { return "host"; }
  size_t granularity() const override { return kGran; }

  Result<uint64_t> reserve(size_t bytes) override {
    if (bytes == 0 || !aligned(bytes)) return fail(EINVAL, "host vmm: reserve size must be a non-zero multiple of 64 KiB");
    // mmap aligns to 4 KiB only: over-reserve one granule and trim both ends.
    const size_t span = bytes + kGran;
    void* p = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return fail_errno("host vmm: reserve " + std::to_string(bytes) + " bytes");
    const auto base = reinterpret_cast<uint64_t>(p);
    const uint64_t va = (base + kGran - 1) / kGran * kGran;
    if (va > base) ::munmap(p, va - base);
    const uint64_t tail = base + span - (va + bytes);
    if (tail > 0) ::munmap(reinterpret_cast<void*>(va + bytes), tail);
    ranges_.emplace(va, bytes);
    stats_.reserved_bytes += bytes;
    return va;
  }

  Result<void> release_range(uint64_t va, size_t bytes) override {
    auto it = ranges_.find(va);
    if (it == ranges_.end() || it->second != bytes) return fail(EINVAL, "host vmm: release of a range that was not reserved");
    // Whatever is still mapped inside goes with the range.
    for (auto m = mapped_.lower_bound(va); m != mapped_.end() && m->first < va + bytes;) {
      stats_.mapped_bytes -= m->second;
      m = mapped_.erase(m);
    }
    if (::munmap(reinterpret_cast<void*>(va), bytes) != 0) return fail_errno("host vmm: munmap reservation");
    ranges_.erase(it);
    stats_.reserved_bytes -= bytes;
    return {};
  }

  Result<hal::VmmHandle> create(size_t bytes) override {
    if (bytes == 0 || !aligned(bytes)) return fail(EINVAL, "host vmm: create size must be a non-zero multiple of 64 KiB");
    UniqueFd fd(::memfd_create("cxlpool-host-vmm", MFD_CLOEXEC));
    if (!fd) return fail_errno("host vmm: memfd_create");
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return fail_errno("host vmm: ftruncate memfd");
    return adopt(std::move(fd), bytes);
  }

  Result<hal::VmmHandle> import_fd(int fd, size_t bytes) override {
    if (fd < 0 || bytes == 0) return fail(EINVAL, "host vmm: import needs a file descriptor and a size");
    UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!own) return fail_errno("host vmm: dup imported fd");
    return adopt(std::move(own), bytes);
  }

  Result<void> release(hal::VmmHandle handle) override {
    // Existing mappings keep the file alive on their own.
    if (handles_.erase(handle) == 0) return fail(ENOENT, "host vmm: unknown handle");
    return {};
  }

  Result<void> map(uint64_t va, size_t bytes, hal::VmmHandle handle, uint64_t offset) override {
    auto h = handles_.find(handle);
    if (h == handles_.end()) return fail(ENOENT, "host vmm: unknown handle");
    if (bytes == 0 || !aligned(va) || !aligned(bytes) || !aligned(offset)) {
      return fail(EINVAL, "host vmm: map arguments must be 64 KiB multiples");
    }
    if (offset > h->second.bytes || bytes > h->second.bytes - offset) {
      return fail(EINVAL, "host vmm: map past the end of the handle's memory");
    }
    if (!inside_reservation(va, bytes)) return fail(EINVAL, "host vmm: map outside a reserved range");
    if (overlaps_mapping(va, bytes)) return fail(EEXIST, "host vmm: range already mapped");
    const uint64_t t0 = monotonic_ns();
    void* p = ::mmap(reinterpret_cast<void*>(va), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                     h->second.fd.get(), static_cast<off_t>(offset));
    const uint64_t dt = monotonic_ns() - t0;
    if (p == MAP_FAILED) {
      // MAP_FIXED failing may have torn down what was there: restore the
      // reservation so the range is never left open to other mmaps.
      const Error error = mmap_error("host vmm: mmap MAP_FIXED");
      ::mmap(reinterpret_cast<void*>(va), bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
             -1, 0);
      return tl::unexpected(error);
    }
    mapped_.emplace(va, bytes);
    stats_.mapped_bytes += bytes;
    stats_.maps++;
    stats_.map_ns += dt;
    return {};
  }

  Result<void> unmap(uint64_t va, size_t bytes) override {
    auto m = mapped_.find(va);
    if (m == mapped_.end() || m->second != bytes) return fail(EINVAL, "host vmm: unmap of a range map() did not map");
    const uint64_t t0 = monotonic_ns();
    void* p = ::mmap(reinterpret_cast<void*>(va), bytes, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    const uint64_t dt = monotonic_ns() - t0;
    if (p == MAP_FAILED) return tl::unexpected(mmap_error("host vmm: mmap PROT_NONE over a mapped range"));
    mapped_.erase(m);
    stats_.mapped_bytes -= bytes;
    stats_.unmaps++;
    stats_.unmap_ns += dt;
    return {};
  }

  hal::VmmStats stats() const override { return stats_; }

 private:
  struct Memory {
    UniqueFd fd;
    uint64_t bytes = 0;
  };

  Result<hal::VmmHandle> adopt(UniqueFd fd, uint64_t bytes) {
    const hal::VmmHandle id = next_handle_++;
    handles_.emplace(id, Memory{std::move(fd), bytes});
    return id;
  }

  bool inside_reservation(uint64_t va, uint64_t bytes) const {
    return hal::vmm_range_inside_one(ranges_, va, bytes);
  }

  bool overlaps_mapping(uint64_t va, uint64_t bytes) const {
    return hal::vmm_range_overlaps_any(mapped_, va, bytes);
  }

  std::map<uint64_t, uint64_t> ranges_;  // reserved: va -> bytes
  std::map<uint64_t, uint64_t> mapped_;  // mapped pieces: va -> bytes
  std::unordered_map<hal::VmmHandle, Memory> handles_;
  hal::VmmHandle next_handle_ = 1;
  hal::VmmStats stats_;
};

}  // namespace

std::unique_ptr<hal::GpuVmm> make_host_vmm() { return std::make_unique<HostVmm>(); }

}  // namespace cxlpool::drivers
