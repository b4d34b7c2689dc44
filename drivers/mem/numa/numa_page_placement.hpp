// SPDX-License-Identifier: Apache-2.0
// hal::PagePlacement on Linux NUMA nodes: mbind(MPOL_BIND) to place a range
// before first touch, move_pages(2) to query and migrate its pages.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "cxlpool/hal/page_placement.hpp"

namespace cxlpool::drivers {

class NumaPagePlacement final : public hal::PagePlacement {
 public:
  // Pages per move_pages call: bounds the kernel's per-call work and our
  // temporary arrays.
  static constexpr size_t kDefaultBatchPages = 1024;

  explicit NumaPagePlacement(size_t batch_pages = kDefaultBatchPages);

  // Errors: EINVAL (unaligned addr, zero length, negative node, node beyond the
  // kernel's limit), ENODEV (node has no memory this process may use), or the
  // errno of mbind.
  Result<void> bind(void* addr, size_t length, int node) override;

  // Errors: EINVAL (page_size not a multiple of the base page size, addr not
  // aligned to page_size, zero length), or the errno of move_pages.
  // Per-page entries: node id, or -errno (-ENOENT: not faulted in; -EFAULT:
  // not mapped, the shared zero page, or, before Linux 6.x, not faulted in
  // and without a page table yet).
  Result<std::vector<int>> query(void* addr, size_t length, size_t page_size) override;

  // Queries first, so pages already on `node` are counted and not passed to
  // the kernel again. -ENOENT and -EFAULT pages count as absent. Errors: as query and bind, plus EPERM for `all`
  // without CAP_SYS_NICE, and the errno of a failed move_pages call (pages
  // moved by earlier batches stay moved).
  Result<hal::MoveStats> move(void* addr, size_t length, size_t page_size, int node,
                              bool all) override;

  // Batched move_pages(2) on a page list, in batch_pages steps; pages the
  // kernel reports busy are retried twice. Errors: EINVAL (unaligned page,
  // bad node), ESRCH (no process `pid`), EPERM (not allowed to move another
  // process's pages, or `all` without CAP_SYS_NICE), or the errno of a
  // failed call (entries of later batches are then -errno of that call).
  Result<std::vector<int>> query_pages(int pid, std::span<void* const> pages) override;
  Result<std::vector<int>> move_pages(int pid, std::span<void* const> pages, int node, bool all) override;

 private:
  size_t batch_pages_;
};

// The numa driver's PagePlacement with the default batch size.
std::unique_ptr<hal::PagePlacement> make_numa_page_placement();

}  // namespace cxlpool::drivers
