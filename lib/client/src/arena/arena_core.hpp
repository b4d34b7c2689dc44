// SPDX-License-Identifier: Apache-2.0
// The arena's memory logic, backend-agnostic: one reservation holding every
// layer's K and V tensor, per-row page tables, growth on step(), deferred
// reclamation (a freed row keeps its pages; alloc_reqid hands out the freed
// row with the most of them, and a growing row takes the tail pages of freed
// rows when fresh memory would exceed the limit or the source has none), and
// trim. A row's next page in a tensor is asked of the pool right after its
// previous one (page_pool.hpp), so that the kernel can merge them into one
// mapping. Pinned rows (an offload or restore is copying them) are neither
// reclaimed, trimmed nor handed out by alloc_reqid, even once freed.
// Not thread-safe: KvArena serializes callers and its worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "arena_geometry.hpp"
#include "backing.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"
#include "page_pool.hpp"

namespace cxlpool::client::arena {

struct CoreStats {
  uint64_t reserved_bytes = 0;
  uint64_t mapped_bytes = 0;
  uint64_t pages_in_use = 0;
  uint64_t pages_deferred = 0;
  uint64_t held_bytes = 0;  // taken from the backing source
  uint64_t maps = 0, unmaps = 0, reuses = 0;
  uint64_t map_ns_total = 0, unmap_ns_total = 0, map_ns_max = 0;
  uint32_t rows_active = 0;
};

class ArenaCore {
 public:
  // Reserves geometry.total_bytes. memory_limit 0: no limit.
  static Result<std::unique_ptr<ArenaCore>> create(const ArenaGeometry& geometry, std::unique_ptr<hal::GpuVmm> vmm,
                                                   std::unique_ptr<BackingSource> source, uint64_t memory_limit,
                                                   PagePlacement placement = PagePlacement::kContiguous);
  ~ArenaCore();
  ArenaCore(const ArenaCore&) = delete;
  ArenaCore& operator=(const ArenaCore&) = delete;

  const ArenaGeometry& geometry() const { return geo_; }
  uint64_t base() const { return base_; }
  const char* backend_name() const { return vmm_->name(); }
  uint32_t tier() const { return pool_.tier(); }

  Result<uint32_t> alloc_reqid();
  Result<void> free_reqid(uint32_t row);
  bool active(uint32_t row) const { return row < rows_.size() && rows_[row].active; }
  // Keeps the row's pages where they are while a copy runs (counted).
  void pin(uint32_t row) { ++rows_[row].pins; }
  void unpin(uint32_t row) { --rows_[row].pins; }
  // Tokens the row can hold now (its mapped pages).
  uint32_t mapped_tokens(uint32_t row) const;

  // Checks seq_lens against the rows (EINVAL, ENOENT, ERANGE) without
  // changing anything.
  Result<void> validate(std::span<const uint32_t> seq_lens) const;
  // True when step(seq_lens, lookahead) would map nothing.
  bool satisfied(std::span<const uint32_t> seq_lens, uint32_t lookahead) const;
  // Maps every active row up to seq_lens[r] tokens (ENOMEM, with nothing
  // mapped, when that cannot fit under the limit), then best effort up to
  // seq_lens[r] + lookahead. Rows that are no longer active are skipped.
  // The best-effort part stops between page groups once `stop_ahead` (when
  // given) reads true: a caller waiting for the step then waits for what it
  // needs, not for speculation; later steps map the rest.
  Result<void> step(std::span<const uint32_t> seq_lens, uint32_t lookahead,
                    const std::atomic<bool>* stop_ahead = nullptr);
  // One row up to `tokens` tokens.
  Result<void> grow_row(uint32_t row, uint32_t tokens);

  // Unmaps deferred pages (freed rows' pages) until at most keep_bytes are
  // mapped, and returns emptied backing pieces.
  Result<void> trim(uint64_t keep_bytes);

  CoreStats stats() const;

 private:
  struct Row {
    bool active = false;
    uint32_t pins = 0;
    uint32_t pages = 0;               // mapped pages per tensor
    std::vector<PhysPage> table;      // [page * tensors + tensor]
  };

  ArenaCore(const ArenaGeometry& geometry, std::unique_ptr<hal::GpuVmm> vmm, uint64_t base,
            std::unique_ptr<BackingSource> source, uint64_t memory_limit, PagePlacement placement);

  uint64_t va(uint32_t tensor, uint32_t row, uint32_t page) const { return base_ + geo_.page_offset(tensor, row, page); }
  uint64_t group_bytes() const { return geo_.page_bytes * geo_.tensors; }
  uint64_t deferred_groups() const;
  bool fresh_fits() const;
  // Appends one page per tensor to `row`: fresh memory within the limit,
  // else a freed row's tail.
  Result<void> add_group(uint32_t row);
  Result<void> map_group(uint32_t row, const std::vector<PhysPage>& pages);
  // Unmaps the last page group of `victim` into `out` (discarding memory
  // when `discard`).
  Result<void> take_tail(uint32_t victim, std::vector<PhysPage>* out);
  int victim_row() const;  // a freed row with pages; -1: none
  Result<void> timed_map(uint64_t va, PhysPage page);
  Result<void> timed_unmap(uint64_t va);

  ArenaGeometry geo_;
  std::unique_ptr<hal::GpuVmm> vmm_;
  uint64_t base_;
  PagePool pool_;
  uint64_t limit_;
  std::vector<Row> rows_;
  uint64_t mapped_pages_ = 0;
  uint64_t deferred_pages_ = 0;
  uint64_t reuses_ = 0;
  uint64_t map_ns_max_ = 0;
  uint32_t rows_active_ = 0;
  std::vector<PhysPage> scratch_;
};

}  // namespace cxlpool::client::arena
