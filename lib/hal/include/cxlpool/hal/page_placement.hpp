// SPDX-License-Identifier: Apache-2.0
// Placing and moving the pages of a mapped range between NUMA nodes. The numa
// driver implements it with mbind/move_pages; tests may supply a fake.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::hal {

struct MoveStats {
  uint64_t pages_total = 0;
  uint64_t pages_moved = 0;    // now on the target node, were elsewhere
  uint64_t pages_already = 0;  // were on the target node already
  uint64_t pages_absent = 0;   // no page of its own: not faulted in (-ENOENT), or the
                               // zero page / not mapped (-EFAULT)
  uint64_t pages_failed = 0;   // any other per-page error
  int first_error = 0;         // positive errno of the first failed page
};

class PagePlacement {
 public:
  virtual ~PagePlacement() = default;

  // Sets the memory policy of [addr, addr+length) to MPOL_BIND on `node`.
  // For a shared memfd mapping this is the file's shared policy, so it holds
  // for faults through any process's mapping. Call before first touch.
  virtual Result<void> bind(void* addr, size_t length, int node) = 0;

  // Node of each page of [addr, addr+length) in `page_size` steps; negative
  // entries are -errno (-ENOENT: not present; -EFAULT: zero page or not
  // mapped, and on older kernels also not present).
  virtual Result<std::vector<int>> query(void* addr, size_t length, size_t page_size) = 0;

  // Moves every present page to `node` in batches. `all` asks for
  // MPOL_MF_MOVE_ALL (pages mapped by other processes too; needs CAP_SYS_NICE).
  virtual Result<MoveStats> move(void* addr, size_t length, size_t page_size, int node,
                                 bool all) = 0;

  // Scattered pages, as the tiering engine moves them: `pages` are base-page
  // addresses in process `pid` (0: this process). query_pages() returns each
  // page's node or -errno as query() does; move_pages() moves each page to
  // `node` and returns the per-page status the kernel left (the node the page
  // is on afterwards, or -errno). Backends without page moves answer ENOTSUP.
  virtual Result<std::vector<int>> query_pages(int pid, std::span<void* const> pages) {
    (void)pid;
    (void)pages;
    return fail(ENOTSUP, "this placement backend cannot query single pages");
  }
  virtual Result<std::vector<int>> move_pages(int pid, std::span<void* const> pages, int node, bool all) {
    (void)pid;
    (void)pages;
    (void)node;
    (void)all;
    return fail(ENOTSUP, "this placement backend cannot move single pages");
  }
};

}  // namespace cxlpool::hal
