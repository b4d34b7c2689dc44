// SPDX-License-Identifier: Apache-2.0
#include "copy_worker.hpp"

#include <chrono>
#include <cstring>
#include <utility>

#include "cxlpool/common/clock.hpp"

namespace cxlpool::client::arena {

void copy_segment(const ArenaGeometry& geo, uint64_t base, uint32_t row, const CopySegment& seg) {
  const uint64_t bytes = uint64_t{seg.count} * geo.token_bytes;
  const uint64_t skip = uint64_t{row} * geo.row_stride + uint64_t{seg.first} * geo.token_bytes;
  uint8_t* buf = seg.buffer;
  for (uint32_t l = 0; l < geo.layers; ++l) {
    for (uint32_t kind = 0; kind < 2; ++kind) {
      auto* at = reinterpret_cast<uint8_t*>(base + geo.tensor_offset(l, kind) + skip);
      if (seg.into_row) std::memcpy(at, buf, bytes);
      else std::memcpy(buf, at, bytes);
      buf += bytes;
    }
  }
}

CopyWorker::~CopyWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
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
    const uint64_t t0 = monotonic_ns();
    for (const auto& seg : job.segments) {
      copy_segment(geo_, base_, job.row, seg);
      job.bytes += uint64_t{seg.count} * geo_.token_bytes * geo_.tensors;
    }
    job.ns = monotonic_ns() - t0;
    lock.lock();
    bytes_ += job.bytes;
    ns_ += job.ns;
    done_.push_back(std::move(job));
    done_cv_.notify_all();
  }
}

}  // namespace cxlpool::client::arena
