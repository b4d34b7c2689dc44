// SPDX-License-Identifier: Apache-2.0
#include "layer_reader.hpp"

#include <algorithm>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::client {
namespace {

constexpr uint32_t kReadChunk = 1u << 20;
// io_uring refuses to register a buffer above 1 GiB.
constexpr uint64_t kMaxRegisteredBuffer = uint64_t{1} << 30;

}  // namespace

LayerReader::LayerReader(std::vector<std::string> paths, uint64_t align, uint32_t depth)
    : paths_(std::move(paths)), align_(align), depth_(std::max<uint32_t>(1, depth)) {
  chunks_.resize(depth_);
  comps_.resize(depth_);
}

LayerReader::~LayerReader() { drain(); }

Result<hal::BlockDevice*> LayerReader::device(uint32_t file) {
  if (file >= paths_.size()) return fail(EINVAL, "streamer: no file " + std::to_string(file));
  if (devices_.size() < paths_.size()) {
    devices_.resize(paths_.size());
    registered_ok_.resize(paths_.size(), false);
  }
  if (devices_[file]) return devices_[file].get();
  const std::string& path = paths_[file];
  hal::BlockOpenOptions opts;
  opts.direct = true;
  opts.read_only = true;
  opts.queue_depth = depth_;
  // The best engine libcxlpool links (io_uring, else posix); a file system
  // without direct I/O is read buffered.
  opts.buffered_fallback = true;
  auto dev = hal::open_block_device("auto", path, opts);
  if (!dev) return fail(dev.error().code, "streamer: " + path + ": " + dev.error().message);
  if ((*dev)->offset_alignment() > align_ || (*dev)->mem_alignment() > align_) {
    return fail(ENOTSUP, "streamer: " + path + " needs alignment above " + std::to_string(align_));
  }
  // Fixed buffers save the page pinning of every request; a kernel or a
  // memlock limit that refuses them costs only that.
  bool fits = !registered_.empty() && std::all_of(registered_.begin(), registered_.end(), [](const iovec& v) {
    return v.iov_len <= kMaxRegisteredBuffer;
  });
  if (fits) registered_ok_[file] = static_cast<bool>((*dev)->register_buffers(registered_));
  devices_[file] = std::move(*dev);
  return devices_[file].get();
}

void LayerReader::add(uint64_t id, std::span<const CopyOp> ops, std::byte* base, int buffer) {
  Job job;
  job.id = id;
  job.base = base;
  job.buffer = buffer;
  for (const CopyOp& op : ops) {
    if (op.from_file && op.bytes > 0) job.ops.push_back(op);
  }
  jobs_.push_back(std::move(job));
}

bool LayerReader::has_unissued() const {
  return std::any_of(jobs_.begin(), jobs_.end(), [](const Job& j) { return !j.failed && j.op < j.ops.size(); });
}

LayerReader::Job* LayerReader::find(uint64_t id) {
  for (auto& j : jobs_) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

void LayerReader::fail_job(Job& job, Error error) {
  if (!job.failed) job.error = std::move(error);
  job.failed = true;
}

void LayerReader::issue() {
  for (Job& job : jobs_) {
    while (!job.failed && job.op < job.ops.size() && in_flight_ < depth_) {
      const CopyOp& op = job.ops[job.op];
      auto dev = device(op.file);
      if (!dev) {
        fail_job(job, dev.error());
        break;
      }
      hal::BlockDevice& d = **dev;
      // One batch per device and op: as many 1 MiB reads as the depth allows.
      std::vector<hal::IoRequest> batch;
      std::vector<uint32_t> used;
      uint32_t free_idx = 0;
      while (job.op_next < op.bytes && in_flight_ + batch.size() < depth_) {
        while (chunks_[free_idx].used) ++free_idx;
        const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(kReadChunk, op.bytes - job.op_next));
        hal::IoRequest r{hal::IoOp::kRead, op.file_offset + job.op_next, job.base + op.dst + job.op_next, len,
                         free_idx};
        if (job.buffer >= 0 && registered_ok_[op.file]) r.buffer_index = job.buffer;
        chunks_[free_idx] = Chunk{job.id, op.file, r.offset + len, true};
        used.push_back(free_idx);
        batch.push_back(r);
        job.op_next += len;
      }
      if (auto ok = d.submit(batch); !ok) {
        for (uint32_t c : used) chunks_[c].used = false;
        fail_job(job, Error{ok.error().code, "streamer: read " + paths_[op.file] + ": " + ok.error().message});
        break;
      }
      if (in_flight_ == 0) busy_since_ = monotonic_ns();
      in_flight_ += static_cast<uint32_t>(batch.size());
      job.outstanding += static_cast<uint32_t>(batch.size());
      for (uint32_t c : used) order_.push_back(c);
      if (job.op_next == op.bytes) {
        ++job.op;
        job.op_next = 0;
      }
    }
    if (in_flight_ >= depth_) break;
  }
}

void LayerReader::reap(uint32_t file, size_t min) {
  hal::BlockDevice& d = *devices_[file];
  if (d.in_flight() == 0) return;
  auto got = d.poll_completions(comps_, min, min == 0 ? std::chrono::nanoseconds(0) : hal::BlockDevice::kWaitForever);
  if (!got) {
    // The device cannot report completions: its reads are lost to us; fail
    // their jobs (the kernel still owns the buffers only until the ring goes,
    // which the device's destructor waits for).
    for (auto& c : chunks_) {
      if (!c.used || c.file != file) continue;
      if (Job* j = find(c.job)) {
        fail_job(*j, Error{got.error().code, "streamer: " + paths_[file] + ": " + got.error().message});
        --j->outstanding;
      }
      c.used = false;
      --in_flight_;
    }
    devices_[file].reset();
    return;
  }
  for (size_t i = 0; i < *got; ++i) {
    const hal::IoCompletion& c = comps_[i];
    Chunk& chunk = chunks_[c.user_data];
    chunk.used = false;
    --in_flight_;
    Job* job = find(chunk.job);
    if (job == nullptr) continue;
    --job->outstanding;
    if (c.result < 0) {
      fail_job(*job, Error{static_cast<int>(-c.result), "streamer: read " + paths_[file]});
    } else if (c.result < c.length && chunk.end - c.length + static_cast<uint64_t>(c.result) < d.size()) {
      // A short read is fine only at the end of the file (spans are rounded up past it).
      fail_job(*job, Error{EIO, "streamer: short read from " + paths_[file]});
    }
  }
}

std::vector<LayerReader::Done> LayerReader::step() {
  issue();
  if (in_flight_ > 0) {
    while (!order_.empty() && !chunks_[order_.front()].used) order_.pop_front();
    // Block on the device of the oldest read, then take what the others have.
    const uint32_t oldest = order_.empty() ? 0 : chunks_[order_.front()].file;
    if (oldest < devices_.size() && devices_[oldest]) reap(oldest, 1);
    for (uint32_t f = 0; f < devices_.size(); ++f) {
      if (f != oldest && devices_[f]) reap(f, 0);
    }
    const uint64_t now = monotonic_ns();
    busy_ns_ += now - busy_since_;
    busy_since_ = now;
  }
  std::vector<Done> done;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const bool finished = it->outstanding == 0 && (it->failed || it->op == it->ops.size());
    if (!finished) {
      ++it;
      continue;
    }
    Done d{it->id, {}};
    if (it->failed) d.status = tl::unexpected(it->error);
    done.push_back(std::move(d));
    it = jobs_.erase(it);
  }
  return done;
}

void LayerReader::drain() {
  for (auto& j : jobs_) j.failed = true;
  while (in_flight_ > 0) {
    const uint32_t before = in_flight_;
    for (uint32_t f = 0; f < devices_.size(); ++f) {
      if (devices_[f]) reap(f, 1);
    }
    if (in_flight_ == before) break;
  }
  jobs_.clear();
  order_.clear();
}

}  // namespace cxlpool::client
