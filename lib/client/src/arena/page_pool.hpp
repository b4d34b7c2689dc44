// SPDX-License-Identifier: Apache-2.0
// Physical pages: backing pieces of region_bytes cut into page_bytes pages.
// A page is free (in no mapping) or handed out. Free pages are taken from
// the lowest piece first, so that trimming can empty the newest pieces and
// return them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backing.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"

namespace cxlpool::client::arena {

struct PhysPage {
  uint32_t piece = 0;
  uint32_t index = 0;
};

class PagePool {
 public:
  PagePool(hal::GpuVmm& vmm, std::unique_ptr<BackingSource> source, uint64_t page_bytes, uint64_t piece_bytes);
  ~PagePool();
  PagePool(const PagePool&) = delete;
  PagePool& operator=(const PagePool&) = delete;

  // A free page; takes a new piece from the source when none is free.
  Result<PhysPage> take();
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
    std::vector<uint32_t> free;  // free page indices
    bool live = false;
  };

  hal::GpuVmm& vmm_;
  std::unique_ptr<BackingSource> source_;
  uint64_t page_bytes_;
  uint64_t piece_bytes_;
  uint32_t pages_per_piece_;
  std::vector<Piece> pieces_;
  uint64_t held_bytes_ = 0;
  uint64_t free_pages_ = 0;
};

}  // namespace cxlpool::client::arena
