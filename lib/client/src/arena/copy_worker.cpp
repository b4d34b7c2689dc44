// SPDX-License-Identifier: Apache-2.0
#include "copy_worker.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "cxlpool/common/clock.hpp"

namespace cxlpool::client::arena {

namespace {

// Calls fn(arena address, buffer, bytes) for each layer's K and V run of the
// segment, in the buffer's packed order.
template <typename Fn>
Result<void> for_each_run(const ArenaGeometry& geo, uint64_t base, uint32_t row, const CopySegment& seg, Fn&& fn) {
  const uint64_t bytes = uint64_t{seg.count} * geo.token_bytes;
  const uint64_t skip = uint64_t{row} * geo.row_stride + uint64_t{seg.first} * geo.token_bytes;
  uint8_t* buf = seg.buffer;
  for (uint32_t l = 0; l < geo.layers; ++l) {
    for (uint32_t kind = 0; kind < 2; ++kind) {
      if (auto r = fn(base + geo.tensor_offset(l, kind) + skip, buf, bytes); !r) return r;
      buf += bytes;
    }
  }
  return {};
}

}  // namespace

Result<void> copy_segment(const ArenaGeometry& geo, uint64_t base, uint32_t row, const CopySegment& seg,
                          hal::GpuCopyEngine* engine) {
  return for_each_run(geo, base, row, seg, [&](uint64_t at, uint8_t* buf, uint64_t bytes) -> Result<void> {
    if (engine != nullptr) {
      return seg.into_row ? engine->copy_to_device(at, buf, bytes) : engine->copy_to_host(buf, at, bytes);
    }
    if (seg.into_row) std::memcpy(reinterpret_cast<void*>(at), buf, bytes);
    else std::memcpy(buf, reinterpret_cast<const void*>(at), bytes);
    return {};
  });
}

CopyWorker::~CopyWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CopyWorker::use_engine(hal::GpuCopyEngine* engine) {
  std::lock_guard lock(mu_);
  engine_ = engine;
}

void CopyWorker::submit(CopyJob job) {
  std::lock_guard lock(mu_);
  // No thread until offload or restore is used at all.
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  queue_.push_back(std::move(job));
  work_cv_.notify_one();
}

std::vector<CopyJob> CopyWorker::take_done() {
  std::lock_guard lock(mu_);
  std::vector<CopyJob> out;
  out.reserve(done_.size());
  while (!done_.empty()) {
    out.push_back(std::move(done_.front()));
    done_.pop_front();
  }
  return out;
}

void CopyWorker::wait_done(int timeout_ms) {
  std::unique_lock lock(mu_);
  if (timeout_ms < 0) {
    done_cv_.wait(lock, [this] { return !done_.empty(); });
  } else {
    done_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return !done_.empty(); });
  }
}

uint64_t CopyWorker::bytes_copied() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

uint64_t CopyWorker::copy_ns() const {
  std::lock_guard lock(mu_);
  return ns_;
}

void CopyWorker::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    CopyJob job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run(job);
    lock.lock();
    bytes_ += job.bytes;
    ns_ += job.ns;
    done_.push_back(std::move(job));
    done_cv_.notify_all();
  }
}

Result<void> CopyWorker::copy_through_engine(hal::GpuCopyEngine& engine, const CopyJob& job) {
  if (!engine_bound_) {
    if (auto r = engine.bind_thread(); !r) return r;
    engine_bound_ = true;
    // Pinned staging when the driver gives it; without, each run is a
    // pageable copy the driver stages itself (slower, same result).
    auto staged = StagedCopier::create(engine);
    if (staged) staged_ = std::move(*staged);
  }
  if (!staged_) {
    for (const auto& seg : job.segments) {
      if (auto r = copy_segment(geo_, base_, job.row, seg, &engine); !r) return r;
    }
    return engine.synchronize();
  }
  // Consecutive segments of one direction go as one staged transfer.
  std::vector<DevicePiece> pieces;
  for (size_t i = 0; i < job.segments.size(); ++i) {
    const auto& seg = job.segments[i];
    auto r = for_each_run(geo_, base_, job.row, seg, [&](uint64_t at, uint8_t* buf, uint64_t bytes) -> Result<void> {
      pieces.push_back(DevicePiece{at, buf, bytes});
      return {};
    });
    const bool last = i + 1 == job.segments.size() || job.segments[i + 1].into_row != seg.into_row;
    if (!last) continue;
    r = seg.into_row ? staged_->to_device(pieces) : staged_->to_host(pieces);
    if (!r) return r;
    pieces.clear();
  }
  return {};
}

void CopyWorker::run(CopyJob& job) {
  hal::GpuCopyEngine* engine = nullptr;
  {
    std::lock_guard lock(mu_);
    engine = engine_;
  }
  const uint64_t t0 = monotonic_ns();
  Result<void> r;
  if (engine != nullptr) {
    r = copy_through_engine(*engine, job);
  } else {
    for (const auto& seg : job.segments) r = copy_segment(geo_, base_, job.row, seg);
  }
  if (r) {
    for (const auto& seg : job.segments) job.bytes += uint64_t{seg.count} * geo_.token_bytes * geo_.tensors;
  } else {
    job.error = r.error().code != 0 ? r.error().code : EIO;
    job.error_text = r.error().message;
  }
  job.ns = monotonic_ns() - t0;
}

}  // namespace cxlpool::client::arena
