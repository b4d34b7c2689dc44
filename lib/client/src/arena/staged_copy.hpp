// SPDX-License-Identifier: Apache-2.0
// Copies between device memory and pageable host memory (the KV store's
// chunks) through two pinned staging buffers: the GPU's DMA engine moves
// one buffer while the CPU copies the other, instead of the driver staging
// every small pageable copy itself and waiting for it. The store's memory
// cannot be registered with the driver instead: its per-namespace views
// are sparse, and registering pins (and populates) a whole range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_copy.hpp"

namespace cxlpool::client::arena {

// One contiguous run of bytes: device address `device`, host address `host`.
struct DevicePiece {
  std::uint64_t device = 0;
  std::uint8_t* host = nullptr;
  std::size_t bytes = 0;
};

class StagedCopier {
 public:
  // Each of the two buffers holds `stage_bytes`.
  static constexpr std::size_t kDefaultStageBytes = 8u << 20;

  // Allocates the pinned buffers from `engine` (which must outlive this);
  // the engine's error when pinned memory cannot be had.
  static Result<std::unique_ptr<StagedCopier>> create(hal::GpuCopyEngine& engine,
                                                      std::size_t stage_bytes = kDefaultStageBytes);

  // Every piece host -> device, or device -> host; returns once all bytes
  // are in place.
  Result<void> to_device(const std::vector<DevicePiece>& pieces);
  Result<void> to_host(const std::vector<DevicePiece>& pieces);

 private:
  StagedCopier(hal::GpuCopyEngine& engine, std::unique_ptr<hal::GpuPinnedBuffer> a,
               std::unique_ptr<hal::GpuPinnedBuffer> b);

  // A staging buffer's worth of (sub)pieces: where each sits in the buffer.
  struct Batch {
    std::vector<DevicePiece> pieces;  // host fields point into the caller's memory
    std::vector<std::size_t> offsets;
  };
  std::vector<Batch> batches(const std::vector<DevicePiece>& pieces) const;
  std::byte* stage(std::size_t i) const { return stages_[i % 2]->data(); }

  hal::GpuCopyEngine& engine_;
  std::unique_ptr<hal::GpuPinnedBuffer> stages_[2];
  std::size_t stage_bytes_;
};

}  // namespace cxlpool::client::arena
