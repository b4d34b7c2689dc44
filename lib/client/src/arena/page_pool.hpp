// SPDX-License-Identifier: Apache-2.0
// Physical pages: backing pieces of region_bytes cut into page_bytes pages.
// A page is free (in no mapping) or handed out. Free pages are kept as
// extents (runs of consecutive free pages of one piece).
//
// Placement (kContiguous): a page asked for right after another one gets
// the next page of the same piece when it is free, so that a growing row's
// consecutive virtual pages map consecutive offsets of one file and the
// kernel merges them into one VMA (vm.max_map_count bounds VMAs, not
// bytes). A page with no predecessor goes to the middle of the largest
// free extent, leaving the extent's first half for whatever ends just
// before it to grow into (at a piece's start: the start). kFirstFree hands
// out the lowest free page of the lowest piece, whatever came before (the
// old behaviour, kept to measure against).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "backing.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"

namespace cxlpool::client::arena {

struct PhysPage {
  uint32_t piece = 0;
  uint32_t index = 0;
};

enum class PagePlacement { kContiguous, kFirstFree };

class PagePool {
 public:
  PagePool(hal::GpuVmm& vmm, std::unique_ptr<BackingSource> source, uint64_t page_bytes, uint64_t piece_bytes,
           PagePlacement placement = PagePlacement::kContiguous);
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // A free page; takes a new piece from the source when none is free.
  // `after`: the page that precedes the wanted one in virtual memory (its
  // file successor is preferred), or null.
  Result<PhysPage> take(const PhysPage* after = nullptr);
  // The page is mapped nowhere any more; `discard` also returns its memory.
  void put(PhysPage page, bool discard);
  // Returns pieces whose pages are all free. Returns how many went.
  size_t release_empty();
  void release_all();

  hal::VmmHandle handle(PhysPage p) const { return pieces_[p.piece].backing.handle; }
  uint64_t offset(PhysPage p) const { return uint64_t{p.index} * page_bytes_; }
  uint64_t held_bytes() const { return held_bytes_; }  // taken from the source
  uint64_t free_pages() const { return free_pages_; }
  uint32_t tier() const { return source_->tier(); }

 private:
  struct Piece {
    Backing backing;
    std::map<uint32_t, uint32_t> free;  // free extents: first page -> length
    uint32_t free_pages = 0;
    bool live = false;
  };
  // Longest first, then lowest piece and page: the pick for a page with
  // no predecessor.
  using ExtentKey = std::tuple<int64_t, uint32_t, uint32_t>;  // (-length, piece, start)

  void add_extent(uint32_t piece, uint32_t start, uint32_t length);
  void remove_extent(uint32_t piece, std::map<uint32_t, uint32_t>::iterator it);
  // Takes page `index` out of the free extent `it` that holds it.
  PhysPage carve(uint32_t piece, std::map<uint32_t, uint32_t>::iterator it, uint32_t index);
  bool take_next(const PhysPage& after, PhysPage* out);
  Result<uint32_t> new_piece();

  hal::GpuVmm& vmm_;
  std::unique_ptr<BackingSource> source_;
  uint64_t page_bytes_;
  uint64_t piece_bytes_;
  uint32_t pages_per_piece_;
  PagePlacement placement_;
  std::vector<Piece> pieces_;
  std::set<ExtentKey> by_length_;
  uint64_t held_bytes_ = 0;
  uint64_t free_pages_ = 0;
};

}  // namespace cxlpool::client::arena
