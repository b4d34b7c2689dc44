// SPDX-License-Identifier: Apache-2.0
#include "copy_worker.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "cxlpool/common/clock.hpp"

namespace cxlpool::client::arena {

Result<void> copy_segment(const ArenaGeometry& geo, uint64_t base, uint32_t row, const CopySegment& seg,
                          hal::GpuCopyEngine* engine) {
  const uint64_t bytes = uint64_t{seg.count} * geo.token_bytes;
  const uint64_t skip = uint64_t{row} * geo.row_stride + uint64_t{seg.first} * geo.token_bytes;
  uint8_t* buf = seg.buffer;
  for (uint32_t l = 0; l < geo.layers; ++l) {
    for (uint32_t kind = 0; kind < 2; ++kind) {
      const uint64_t at = base + geo.tensor_offset(l, kind) + skip;
      if (engine != nullptr) {
        auto r = seg.into_row ? engine->copy_to_device(at, buf, bytes) : engine->copy_to_host(buf, at, bytes);
        if (!r) return r;
      } else if (seg.into_row) {
        std::memcpy(reinterpret_cast<void*>(at), buf, bytes);
      } else {
        std::memcpy(buf, reinterpret_cast<const void*>(at), bytes);
      }
      buf += bytes;
    }
  }
  return {};
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

void CopyWorker::run(CopyJob& job) {
  hal::GpuCopyEngine* engine = nullptr;
  {
    std::lock_guard lock(mu_);
    engine = engine_;
  }
  const uint64_t t0 = monotonic_ns();
  Result<void> r;
  if (engine != nullptr && !engine_bound_) {
    r = engine->bind_thread();
    engine_bound_ = r.has_value();
  }
  for (size_t i = 0; r && i < job.segments.size(); ++i) {
    r = copy_segment(geo_, base_, job.row, job.segments[i], engine);
    if (r) job.bytes += uint64_t{job.segments[i].count} * geo_.token_bytes * geo_.tensors;
  }
  // Device copies are queued: the job is done when the engine says so.
  if (r && engine != nullptr) r = engine->synchronize();
  if (!r) {
    job.error = r.error().code != 0 ? r.error().code : EIO;
    job.error_text = r.error().message;
    job.bytes = 0;
  }
  job.ns = monotonic_ns() - t0;
}

}  // namespace cxlpool::client::arena
