// SPDX-License-Identifier: Apache-2.0
// WeightStreamer: a window of `buffers` layer slots in host memory and one
// copy thread that fills them ahead of use. acquire(i) waits for layer i and
// queues layers i+1..i+depth (wrapping, as decoding cycles through the
// layers); release(i) frees its slot (its bytes stay, so a layer acquired
// again before the slot is reused costs nothing). Layers in the region are
// copied with non-temporal stores (window_copy.hpp); layers left in their
// files are read with O_DIRECT through io_uring (posix fallback) by a
// LayerReader that keeps its queue full across layers: the copy thread takes
// the next queued slot as soon as the current one's reads are all issued.
// The placement policy picks layers to keep in a slot of their own for good
// within pinned_budget_bytes. With target CUDA the slots (pinned layers'
// too) are device memory behind a DeviceWindow: file reads land in a pinned
// staging slot and go up with H2D copies; region bytes go up directly when
// the region could be registered with the driver, else through staging.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"
#include "cxlpool/weights.h"
#include "layer_plan.hpp"
#include "device_window.hpp"
#include "layer_reader.hpp"
#include "weights_model.hpp"

namespace cxlpool::client {

class WeightStreamer {
 public:
  // EINVAL: bad config (buffers outside 2..8, depth >= buffers, a layer
  // with no tensors when there are none at all); ENODEV: target CUDA
  // without a usable device (or a build without CUDA).
  static Result<std::unique_ptr<WeightStreamer>> create(const WeightsModel& model,
                                                        const cxlpool_streamer_config& config);
  ~WeightStreamer();
  WeightStreamer(const WeightStreamer&) = delete;
  WeightStreamer& operator=(const WeightStreamer&) = delete;

  // The out view stays valid until the layer's release. EBUSY: every slot is
  // in use (release before acquiring more); EIO etc.: its copy failed.
  Result<void> acquire(uint32_t layer, cxlpool_streamed_layer* out);
  // EINVAL: the layer is not held.
  Result<void> release(uint32_t layer);
  cxlpool_streamer_stats stats() const;

  uint32_t prefetch_depth() const { return depth_; }
  uint32_t buffers() const { return static_cast<uint32_t>(slots_.size()); }

 private:
  // kReady: loaded, not yet acquired; kCached: released, bytes still valid.
  enum class SlotState { kEmpty, kLoading, kReady, kInUse, kCached, kFailed };
  struct Slot {
    std::byte* mem = nullptr;
    int64_t layer = -1;
    SlotState state = SlotState::kEmpty;
    uint64_t released_seq = 0;  // LRU among free slots
    Error error;
    std::vector<uint64_t> ptrs;
  };
  struct Pinned {
    Mapping mem;          // host target
    size_t device_slot = 0;  // CUDA target
    std::vector<uint64_t> ptrs;
    bool held = false;
  };

  WeightStreamer(const WeightsModel& model) : model_(model) {}
  Result<void> setup(const cxlpool_streamer_config& config);
  void choose_pinned(const cxlpool_streamer_config& config, uint64_t slot_bytes);
  // Set-up only: copies a pinned layer into mem (host) or device slot
  // `device_slot` (CUDA), waiting for its reads and copies.
  Result<void> fill_now(uint32_t layer, std::byte* mem, size_t device_slot);
  // CUDA: the file part of a filled staging slot goes up; waits for the
  // slot's copies. Host: nothing to do.
  Result<void> upload(size_t device_slot, uint32_t layer);
  // The copy thread: copies the region part of the slot's layer and queues
  // its file reads; true when the layer has none or its copy failed
  // (`status`): the slot is done.
  bool start_slot(size_t idx, uint32_t layer, Result<void>& status);
  // Under mutex_ (or during set-up): a layer's region part was queued;
  // counts it as direct (registered region) or staged.
  void count_region_copy(const LayerPlan& plan, uint64_t copy_ns);
  // Under mutex_: the slot's copy ended.
  void finish_slot(size_t idx, const Result<void>& status);
  void copy_loop();
  // Under mutex_: wants `layer` loaded; assigns a slot when one is free.
  void want(uint32_t layer, bool urgent);
  void assign_slots();
  Slot* slot_of(uint32_t layer);
  uint32_t next_streamed(uint32_t layer) const;

  const WeightsModel& model_;
  std::vector<LayerPlan> plans_;
  std::vector<std::unique_ptr<Pinned>> pinned_;  // per layer; null when streamed
  std::vector<bool> pinned_layer_;               // the placement policy's choice
  int64_t urgent_ = -1;                          // the layer acquire() waits for
  uint32_t depth_ = 1;
  uint64_t align_ = 4096;
  Mapping window_;
  std::vector<Slot> slots_;
  std::unique_ptr<DeviceWindow> device_;  // target CUDA; before reader_, which reads into its staging
  std::unique_ptr<LayerReader> reader_;  // the copy thread's, after set-up
  std::deque<uint32_t> wanted_;       // layers waiting for a slot
  std::deque<size_t> jobs_;           // slots to fill, in order
  uint64_t release_seq_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable job_cv_;
  std::condition_variable ready_cv_;
  bool stop_ = false;
  std::thread thread_;
  cxlpool_streamer_stats stats_{};
};

}  // namespace cxlpool::client
