// SPDX-License-Identifier: Apache-2.0
// The hybrid policy's up-front copy into a process without a userfaultfd:
// process_vm_writev of runs of consecutive pages, many runs per call.
#include <sys/uio.h>

#include <string>
#include <vector>

#include "cxlpool/ckpt/lazy_pager.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "range_map.hpp"

namespace cxlpool::ckpt {

namespace {
constexpr size_t kIovBatch = 512;  // below IOV_MAX (1024)
}

Result<uint64_t> write_pages_to_process(pid_t pid, std::span<const std::byte> source,
                                        std::span<const LazyRange> ranges, std::span<const uint64_t> pages) {
  std::vector<LazyRange> list(ranges.begin(), ranges.end());
  if (auto ok = lazy::check_ranges(list, source.size()); !ok) return tl::unexpected(ok.error());
  lazy::RangeMap map;
  for (const LazyRange& r : list) map.insert(r);
  std::vector<iovec> local, remote;
  uint64_t written = 0, batch_bytes = 0;
  auto flush = [&]() -> Result<void> {
    if (local.empty()) return {};
    ssize_t n = ::process_vm_writev(pid, local.data(), local.size(), remote.data(), remote.size(), 0);
    if (n < 0) return fail_errno("process_vm_writev into " + std::to_string(pid));
    if (static_cast<uint64_t>(n) != batch_bytes)
      return fail(EFAULT, "process_vm_writev into " + std::to_string(pid) + ": wrote " + std::to_string(n) + " of " +
                              std::to_string(batch_bytes) + " bytes");
    written += batch_bytes / kPageSize;
    local.clear();
    remote.clear();
    batch_bytes = 0;
    return {};
  };
  for (const lazy::ImageRun& run : lazy::image_runs(map, pages)) {
    uint64_t bytes = run.end - run.addr;
    local.push_back({const_cast<std::byte*>(source.data() + run.source_offset), bytes});
    remote.push_back({reinterpret_cast<void*>(run.addr), bytes});
    batch_bytes += bytes;
    if (local.size() == kIovBatch)
      if (auto ok = flush(); !ok) return tl::unexpected(ok.error());
  }
  if (auto ok = flush(); !ok) return tl::unexpected(ok.error());
  return written;
}

}  // namespace cxlpool::ckpt
