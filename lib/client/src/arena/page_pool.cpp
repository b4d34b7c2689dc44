// SPDX-License-Identifier: Apache-2.0
#include "page_pool.hpp"

#include <utility>

namespace cxlpool::client::arena {

PagePool::PagePool(hal::GpuVmm& vmm, std::unique_ptr<BackingSource> source, uint64_t page_bytes,
                   uint64_t piece_bytes, PagePlacement placement)
    : vmm_(vmm),
      source_(std::move(source)),
      page_bytes_(page_bytes),
      piece_bytes_(piece_bytes),
      pages_per_piece_(static_cast<uint32_t>(piece_bytes / page_bytes)),
      placement_(placement) {}

PagePool::~PagePool() { release_all(); }

void PagePool::add_extent(uint32_t piece, uint32_t start, uint32_t length) {
  if (length == 0) return;
  pieces_[piece].free.emplace(start, length);
  by_length_.emplace(-int64_t{length}, piece, start);
}

void PagePool::remove_extent(uint32_t piece, std::map<uint32_t, uint32_t>::iterator it) {
  by_length_.erase(ExtentKey{-int64_t{it->second}, piece, it->first});
  pieces_[piece].free.erase(it);
}

PhysPage PagePool::carve(uint32_t piece, std::map<uint32_t, uint32_t>::iterator it, uint32_t index) {
  const uint32_t start = it->first;
  const uint32_t length = it->second;
  remove_extent(piece, it);
  add_extent(piece, start, index - start);
  add_extent(piece, index + 1, start + length - index - 1);
  --pieces_[piece].free_pages;
  --free_pages_;
  return PhysPage{piece, index};
}

bool PagePool::take_next(const PhysPage& after, PhysPage* out) {
  if (after.piece >= pieces_.size() || !pieces_[after.piece].live) return false;
  const uint32_t want = after.index + 1;
  if (want >= pages_per_piece_) return false;
  auto& free = pieces_[after.piece].free;
  auto it = free.upper_bound(want);
  if (it == free.begin()) return false;
  --it;
  if (want >= it->first + it->second) return false;
  *out = carve(after.piece, it, want);
  return true;
}

Result<uint32_t> PagePool::new_piece() {
  auto backing = source_->acquire(vmm_, piece_bytes_);
  if (!backing) return tl::unexpected(backing.error());
  uint32_t slot = 0;
  while (slot < pieces_.size() && pieces_[slot].live) ++slot;
  if (slot == pieces_.size()) pieces_.emplace_back();
  auto& piece = pieces_[slot];
  piece.backing = *backing;
  piece.live = true;
  piece.free.clear();
  piece.free_pages = pages_per_piece_;
  add_extent(slot, 0, pages_per_piece_);
  free_pages_ += pages_per_piece_;
  held_bytes_ += piece_bytes_;
  return slot;
}

Result<PhysPage> PagePool::take(const PhysPage* after) {
  PhysPage page;
  if (placement_ == PagePlacement::kContiguous && after != nullptr && take_next(*after, &page)) return page;
  if (free_pages_ == 0) {
    auto slot = new_piece();
    if (!slot) return tl::unexpected(slot.error());
  }
  if (placement_ == PagePlacement::kFirstFree) {
    for (uint32_t i = 0; i < pieces_.size(); ++i) {
      auto& piece = pieces_[i];
      if (piece.live && !piece.free.empty()) return carve(i, piece.free.begin(), piece.free.begin()->first);
    }
  }
  const auto [neg_length, piece, start] = *by_length_.begin();
  const auto length = static_cast<uint32_t>(-neg_length);
  const uint32_t index = start == 0 ? 0 : start + length / 2;
  return carve(piece, pieces_[piece].free.find(start), index);
}

void PagePool::put(PhysPage page, bool discard) {
  auto& piece = pieces_[page.piece];
  if (discard) source_->discard(piece.backing, offset(page), page_bytes_);
  uint32_t start = page.index;
  uint32_t length = 1;
  // Merge with the free neighbours on both sides.
  auto next = piece.free.upper_bound(page.index);
  if (next != piece.free.end() && next->first == page.index + 1) {
    length += next->second;
    remove_extent(page.piece, next);
  }
  auto prev = piece.free.upper_bound(page.index);
  if (prev != piece.free.begin()) {
    --prev;
    if (prev->first + prev->second == page.index) {
      start = prev->first;
      length += prev->second;
      remove_extent(page.piece, prev);
    }
  }
  add_extent(page.piece, start, length);
  ++piece.free_pages;
  ++free_pages_;
}

size_t PagePool::release_empty() {
  size_t released = 0;
  for (uint32_t i = 0; i < pieces_.size(); ++i) {
    auto& piece = pieces_[i];
    if (piece.live && piece.free_pages == pages_per_piece_) {
      source_->release(vmm_, piece.backing);
      while (!piece.free.empty()) remove_extent(i, piece.free.begin());
      piece.live = false;
      piece.free_pages = 0;
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
  }
  pieces_.clear();
  by_length_.clear();
  held_bytes_ = 0;
  free_pages_ = 0;
}

}  // namespace cxlpool::client::arena
