// SPDX-License-Identifier: Apache-2.0
// The thread that copies KV between arena rows and packed buffers (store
// chunks in the put window or in a lease, partial tails in a pool region)
// for offload and restore, so that the thread driving the arena keeps
// stepping other rows meanwhile. Started by the first job. Jobs run in
// order; a finished job comes back to the driving thread (take_done), which
// acts on it and drops what the job kept alive, so that nothing but copies
// ever run here (no daemon call, no arena bookkeeping). The rows a job
// touches must stay mapped until it is back: the arena pins them.
// Host-memory arenas copy with memcpy; device arenas through the GPU's copy
// engine (use_engine), which this thread binds to before its first copy.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arena_geometry.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/gpu_copy.hpp"

namespace cxlpool::client::arena {

// Tokens [first, first + count) of one row, every layer's K and V, against
// a buffer packed in the order layer, K/V, token, head, dim.
struct CopySegment {
  bool into_row = false;  // true: buffer -> row (restore); false: row -> buffer
  uint32_t first = 0;
  uint32_t count = 0;
  uint8_t* buffer = nullptr;
};

struct CopyJob {
  uint64_t ticket = 0;
  uint32_t row = 0;
  uint32_t then_op = 0;  // ring op the ticket submits once the job is back; 0: none
  std::vector<CopySegment> segments;
  std::shared_ptr<void> keep;  // memory the segments point into, released by the driver
  uint64_t bytes = 0;          // filled in by the worker
  uint64_t ns = 0;
  int error = 0;               // errno of a failed copy (device arenas only)
  std::string error_text;
};

// Packs (gather) or unpacks (scatter) one segment; `base` is the arena's
// reservation. With an engine, `base` is a device address and the copies
// are queued on the engine (the caller synchronizes); without, memcpy.
Result<void> copy_segment(const ArenaGeometry& geo, uint64_t base, uint32_t row, const CopySegment& seg,
                          hal::GpuCopyEngine* engine = nullptr);

class CopyWorker {
 public:
  CopyWorker(const ArenaGeometry& geo, uint64_t base) : geo_(geo), base_(base) {}
  ~CopyWorker();  // stops after the job in progress; jobs not started are dropped
  CopyWorker(const CopyWorker&) = delete;
  CopyWorker& operator=(const CopyWorker&) = delete;

  // Device arenas: the engine every later job copies through (must outlive
  // the worker). Set before the first submit.
  void use_engine(hal::GpuCopyEngine* engine);
  void submit(CopyJob job);
  // Jobs finished since the last call, in submission order.
  std::vector<CopyJob> take_done();
  // Blocks until a finished job is waiting or timeout_ms passed (-1: no limit).
  void wait_done(int timeout_ms);
  // Bytes copied and time spent copying, over the worker's life.
  uint64_t bytes_copied() const;
  uint64_t copy_ns() const;

 private:
  void loop();
  void run(CopyJob& job);

  const ArenaGeometry geo_;
  const uint64_t base_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<CopyJob> queue_, done_;
  bool stop_ = false;
  uint64_t bytes_ = 0, ns_ = 0;
  hal::GpuCopyEngine* engine_ = nullptr;
  bool engine_bound_ = false;  // the worker thread's engine binding (worker only)
  std::thread thread_;
};

}  // namespace cxlpool::client::arena
