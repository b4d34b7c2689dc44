// SPDX-License-Identifier: Apache-2.0
#include "page_pool.hpp"

#include <utility>

namespace cxlpool::client::arena {

PagePool::PagePool(hal::GpuVmm& vmm, std::unique_ptr<BackingSource> source, uint64_t page_bytes,
                   uint64_t piece_bytes)
    : vmm_(vmm),
      source_(std::move(source)),
      page_bytes_(page_bytes),
      piece_bytes_(piece_bytes),
      pages_per_piece_(static_cast<uint32_t>(piece_bytes / page_bytes)) {}

PagePool::~PagePool() { release_all(); }

Result<PhysPage> PagePool::take() {
  for (uint32_t i = 0; i < pieces_.size(); ++i) {
    auto& piece = pieces_[i];
    if (piece.live && !piece.free.empty()) {
      const uint32_t index = piece.free.back();
      piece.free.pop_back();
      --free_pages_;
      return PhysPage{i, index};
    }
  }
  auto backing = source_->acquire(vmm_, piece_bytes_);
  if (!backing) return tl::unexpected(backing.error());
  uint32_t slot = 0;
  while (slot < pieces_.size() && pieces_[slot].live) ++slot;
  if (slot == pieces_.size()) pieces_.emplace_back();
  auto& piece = pieces_[slot];
  piece.backing = *backing;
  piece.live = true;
  piece.free.clear();
  // Highest index first in the vector so that pop_back hands out page 0 first.
  for (uint32_t i = pages_per_piece_; i-- > 1;) piece.free.push_back(i);
  free_pages_ += pages_per_piece_ - 1;
  held_bytes_ += piece_bytes_;
  return PhysPage{slot, 0};
}

void PagePool::put(PhysPage page, bool discard) {
  auto& piece = pieces_[page.piece];
  if (discard) source_->discard(piece.backing, offset(page), page_bytes_);
  piece.free.push_back(page.index);
  ++free_pages_;
}

size_t PagePool::release_empty() {
  size_t released = 0;
  for (auto& piece : pieces_) {
    if (piece.live && piece.free.size() == pages_per_piece_) {
      source_->release(vmm_, piece.backing);
      piece.live = false;
      piece.free.clear();
      free_pages_ -= pages_per_piece_;
      held_bytes_ -= piece_bytes_;
      ++released;
    }
  }
  return released;
}

void PagePool::release_all() {
  for (auto& piece : pieces_) {
    if (piece.live) source_->release(vmm_, piece.backing);
    piece.live = false;
    piece.free.clear();
  }
  pieces_.clear();
  held_bytes_ = 0;
  free_pages_ = 0;
}

}  // namespace cxlpool::client::arena
