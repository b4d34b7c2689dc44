// SPDX-License-Identifier: Apache-2.0
#include "staged_copy.hpp"

#include <algorithm>
#include <cstring>

namespace cxlpool::client::arena {

Result<std::unique_ptr<StagedCopier>> StagedCopier::create(hal::GpuCopyEngine& engine, std::size_t stage_bytes) {
  auto a = engine.allocate_pinned(stage_bytes);
  if (!a) return tl::unexpected(a.error());
  auto b = engine.allocate_pinned(stage_bytes);
  if (!b) return tl::unexpected(b.error());
  return std::unique_ptr<StagedCopier>(new StagedCopier(engine, std::move(*a), std::move(*b)));
}

StagedCopier::StagedCopier(hal::GpuCopyEngine& engine, std::unique_ptr<hal::GpuPinnedBuffer> a,
                           std::unique_ptr<hal::GpuPinnedBuffer> b)
    : engine_(engine), stages_{std::move(a), std::move(b)},
      stage_bytes_(std::min(stages_[0]->size(), stages_[1]->size())) {}

std::vector<StagedCopier::Batch> StagedCopier::batches(const std::vector<DevicePiece>& pieces) const {
  std::vector<Batch> out(1);
  std::size_t used = 0;
  for (const auto& p : pieces) {
    // Pieces larger than what is left of a buffer are cut where it ends.
    for (std::size_t done = 0; done < p.bytes;) {
      if (used == stage_bytes_) {
        out.emplace_back();
        used = 0;
      }
      const std::size_t n = std::min(p.bytes - done, stage_bytes_ - used);
      out.back().pieces.push_back(DevicePiece{p.device + done, p.host + done, n});
      out.back().offsets.push_back(used);
      used += n;
      done += n;
    }
  }
  if (out.back().pieces.empty()) out.pop_back();
  return out;
}

Result<void> StagedCopier::to_host(const std::vector<DevicePiece>& pieces) {
  const auto work = batches(pieces);
  // DMA of batch i into one buffer while the CPU empties batch i - 1 from
  // the other; one synchronize per batch.
  for (std::size_t i = 0; i <= work.size(); ++i) {
    if (i < work.size()) {
      for (std::size_t j = 0; j < work[i].pieces.size(); ++j) {
        const auto& p = work[i].pieces[j];
        if (auto r = engine_.copy_to_host(stage(i) + work[i].offsets[j], p.device, p.bytes); !r) return r;
      }
    }
    if (i > 0) {
      const auto& prev = work[i - 1];
      for (std::size_t j = 0; j < prev.pieces.size(); ++j) {
        std::memcpy(prev.pieces[j].host, stage(i - 1) + prev.offsets[j], prev.pieces[j].bytes);
      }
    }
    if (i < work.size()) {
      if (auto r = engine_.synchronize(); !r) return r;
    }
  }
  return {};
}

Result<void> StagedCopier::to_device(const std::vector<DevicePiece>& pieces) {
  const auto work = batches(pieces);
  // The CPU fills one buffer while the DMA of the previous batch reads the
  // other: fill i, wait for DMA i - 1 (so DMA i - 2, the last reader of
  // this buffer, is long done by the next fill), queue DMA i.
  for (std::size_t i = 0; i < work.size(); ++i) {
    for (std::size_t j = 0; j < work[i].pieces.size(); ++j) {
      std::memcpy(stage(i) + work[i].offsets[j], work[i].pieces[j].host, work[i].pieces[j].bytes);
    }
    if (auto r = engine_.synchronize(); !r) return r;
    for (std::size_t j = 0; j < work[i].pieces.size(); ++j) {
      const auto& p = work[i].pieces[j];
      if (auto r = engine_.copy_to_device(p.device, stage(i) + work[i].offsets[j], p.bytes); !r) return r;
    }
  }
  return engine_.synchronize();
}

}  // namespace cxlpool::client::arena
