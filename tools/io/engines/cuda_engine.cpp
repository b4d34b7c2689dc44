// SPDX-License-Identifier: Apache-2.0
#include "cuda_engine.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "device_context.hpp"
#include "host_copy.hpp"

namespace cxlpool::io {
namespace {

using Clock = std::chrono::steady_clock;

// One request on its way: where its bytes are and what the runner called it.
struct Pending {
  std::uint64_t user_data = 0;
  hal::IoOp op = hal::IoOp::kRead;
  std::uint64_t offset = 0;
  std::byte* host = nullptr;       // inside the bounce buffers
  std::uint64_t device = 0;        // its twin in device memory (cudadevice)
  std::uint32_t length = 0;
  std::int64_t result = 0;         // the file I/O's result once known
  cuda::CopyStream::Ticket ticket = 0;
};

class CudaEngine final : public Engine {
 public:
  CudaEngine(cuda::DeviceContext ctx, cuda::CopyStream stream,
             std::unique_ptr<hal::BlockDevice> device, bool on_device)
      : ctx_(std::move(ctx)),
        stream_(std::move(stream)),
        device_(std::move(device)),
        on_device_(on_device),
        name_(on_device ? "cuda(mem=cudadevice)" : "cuda(mem=cudahost)"),
        owner_(std::this_thread::get_id()) {}

  ~CudaEngine() override {
    // Copies in flight read or write the buffers about to be freed.
    (void)current();
    (void)stream_.synchronize();
  }

  const char* name() const override { return name_.c_str(); }
  const hal::BlockGeometry& geometry() const override { return device_->geometry(); }

  Result<std::span<std::byte*>> buffers(std::uint32_t count, std::size_t bytes) override {
    if (auto r = current(); !r) return tl::unexpected(r.error());
    const std::size_t align = std::max<std::size_t>(4096, device_->mem_alignment());
    stride_ = (std::max<std::size_t>(bytes, 1) + align - 1) / align * align;
    auto pinned = cuda::PinnedHostBuffer::allocate(ctx_, stride_ * count);
    if (!pinned) return fail(pinned.error().code, "cuda: pinned buffers: " + pinned.error().message);
    pinned_.emplace(std::move(*pinned));
    if (on_device_) {
      auto dev = cuda::DeviceBuffer::allocate(ctx_, stride_ * count);
      if (!dev) return fail(dev.error().code, "cuda: device buffers: " + dev.error().message);
      device_buffers_.emplace(std::move(*dev));
    }
    pointers_.clear();
    for (std::uint32_t i = 0; i < count; ++i) pointers_.push_back(pinned_->data() + i * stride_);
    return std::span<std::byte*>(pointers_);
  }

  Result<void> submit(std::span<const hal::IoRequest> requests) override {
    if (!on_device_) return device_->submit(requests);
    if (auto r = current(); !r) return tl::unexpected(r.error());
    for (const hal::IoRequest& rq : requests) {
      if (auto r = check(rq); !r) return r;
    }
    if (in_flight() + requests.size() > device_->queue_depth()) {
      return fail(EAGAIN, "cuda: more requests than iodepth in flight");
    }
    std::vector<hal::IoRequest> direct;
    for (const hal::IoRequest& rq : requests) {
      Pending p{rq.user_data, rq.op, rq.offset, static_cast<std::byte*>(rq.buffer), 0, rq.length};
      if (rq.buffer != nullptr && pinned_) {
        p.device = device_buffers_->ptr() + (p.host - pinned_->data());
      }
      if (rq.op == hal::IoOp::kWrite) {
        // The device's bytes go to the file: D2H first, the write once it lands.
        if (auto r = stream_.to_host(p.host, p.device, p.length); !r) return r;
        auto t = stream_.mark();
        if (!t) return tl::unexpected(t.error());
        p.ticket = *t;
        downloading_.push_back(p);
      } else {
        direct.push_back(inner_request(p));
      }
    }
    if (!direct.empty()) return device_->submit(direct);
    return {};
  }

  Result<std::size_t> reap(std::span<hal::IoCompletion> out, std::size_t min,
                           std::chrono::nanoseconds timeout) override {
    if (!on_device_) return device_->poll_completions(out, min, timeout);
    if (auto r = current(); !r) return tl::unexpected(r.error());
    min = std::min({min, out.size(), static_cast<std::size_t>(in_flight())});
    const auto deadline = timeout == hal::BlockDevice::kWaitForever
                              ? Clock::time_point::max()
                              : Clock::now() + timeout;
    std::size_t n = 0;
    while (true) {
      if (auto r = advance(out, n); !r) return tl::unexpected(r.error());
      if (n >= min || n == out.size()) break;
      const auto now = Clock::now();
      if (now >= deadline) break;
      // Block where the oldest outstanding work is: a copy (short) or the file I/O.
      if (!uploading_.empty() || !downloading_.empty()) {
        Pending& oldest = !uploading_.empty() ? uploading_.front() : downloading_.front();
        if (auto r = stream_.wait(oldest.ticket); !r) return tl::unexpected(r.error());
        oldest.ticket = kReached;
      } else if (device_->in_flight() > 0) {
        const auto left = deadline == Clock::time_point::max()
                              ? hal::BlockDevice::kWaitForever
                              : std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
        if (auto r = collect_file_completions(1, left); !r) return tl::unexpected(r.error());
      } else {
        break;
      }
    }
    return n;
  }

  std::uint32_t in_flight() const override {
    return device_->in_flight() +
           static_cast<std::uint32_t>(uploading_.size() + downloading_.size() + finished_.size());
  }

 private:
  static constexpr cuda::CopyStream::Ticket kReached = ~cuda::CopyStream::Ticket{0};

  // The runner may call from a thread other than the one that opened us.
  Result<void> current() {
    if (std::this_thread::get_id() == owner_) return {};
    if (auto r = ctx_.make_current(); !r) return r;
    owner_ = std::this_thread::get_id();
    return {};
  }

  Result<void> check(const hal::IoRequest& rq) const {
    if (rq.op != hal::IoOp::kRead && rq.op != hal::IoOp::kWrite) return {};
    const auto* host = static_cast<const std::byte*>(rq.buffer);
    if (!pinned_ || host < pinned_->data() ||
        host + rq.length > pinned_->data() + pinned_->size()) {
      return fail(EINVAL, "cuda: mem=cudadevice requests must use the engine's buffers");
    }
    return {};
  }

  hal::IoRequest inner_request(const Pending& p) {
    std::uint32_t slot = 0;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[slot] = p;
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(p);
    }
    return hal::IoRequest{p.op, p.offset, p.host, p.length, slot, hal::kNoRegisteredBuffer};
  }

  // File completions: reads with data go on to the H2D copy, the rest finish.
  Result<void> collect_file_completions(std::size_t min, std::chrono::nanoseconds timeout) {
    hal::IoCompletion done[64];
    auto got = device_->poll_completions(done, min, timeout);
    if (!got) return tl::unexpected(got.error());
    for (std::size_t i = 0; i < *got; ++i) {
      Pending p = slots_[done[i].user_data];
      free_slots_.push_back(static_cast<std::uint32_t>(done[i].user_data));
      p.result = done[i].result;
      if (p.op == hal::IoOp::kRead && p.result > 0) {
        if (auto r = stream_.to_device(p.device, p.host, static_cast<std::size_t>(p.result)); !r) {
          return r;
        }
        auto t = stream_.mark();
        if (!t) return tl::unexpected(t.error());
        p.ticket = *t;
        uploading_.push_back(p);
      } else {
        finished_.push_back(p);
      }
    }
    return {};
  }

  // Moves everything that can move without blocking and fills `out`.
  Result<void> advance(std::span<hal::IoCompletion> out, std::size_t& n) {
    // Writes whose D2H copy landed go to the file, in order.
    std::vector<hal::IoRequest> writes;
    while (!downloading_.empty()) {
      Pending& p = downloading_.front();
      if (p.ticket != kReached) {
        auto done = stream_.reached(p.ticket);
        if (!done) return tl::unexpected(done.error());
        if (!*done) break;
      }
      writes.push_back(inner_request(p));
      downloading_.pop_front();
    }
    if (!writes.empty()) {
      if (auto r = device_->submit(writes); !r) return r;
    }
    if (device_->in_flight() > 0) {
      if (auto r = collect_file_completions(0, std::chrono::nanoseconds(0)); !r) return r;
    }
    while (!uploading_.empty()) {
      Pending& p = uploading_.front();
      if (p.ticket != kReached) {
        auto done = stream_.reached(p.ticket);
        if (!done) return tl::unexpected(done.error());
        if (!*done) break;
      }
      finished_.push_back(p);
      uploading_.pop_front();
    }
    while (!finished_.empty() && n < out.size()) {
      const Pending& p = finished_.front();
      out[n++] = hal::IoCompletion{p.user_data, p.result, p.op, p.length};
      finished_.pop_front();
    }
    return {};
  }

  cuda::DeviceContext ctx_;
  cuda::CopyStream stream_;
  std::unique_ptr<hal::BlockDevice> device_;
  bool on_device_;
  std::string name_;
  std::thread::id owner_;
  std::size_t stride_ = 0;
  std::optional<cuda::PinnedHostBuffer> pinned_;
  std::optional<cuda::DeviceBuffer> device_buffers_;
  std::vector<std::byte*> pointers_;
  std::vector<Pending> slots_;  // requests at the file, by the user_data given to it
  std::vector<std::uint32_t> free_slots_;
  std::deque<Pending> downloading_;  // writes waiting for their D2H copy
  std::deque<Pending> uploading_;    // reads waiting for their H2D copy
  std::deque<Pending> finished_;     // done, not yet reaped
};

Result<std::unique_ptr<hal::BlockDevice>> open_inner(const JobSpec& job,
                                                     const EngineTarget& target) {
  hal::BlockOpenOptions o;
  o.direct = job.direct;
  o.read_only = !target.writes;
  o.create = target.writes;
  o.queue_depth = std::max<std::uint32_t>(1, job.iodepth);
  o.register_files = true;  // io_uring only; posix ignores it
  // The best engine this program may use: io_uring, else posix.
  return hal::open_block_device("auto", target.path, o);
}

}  // namespace

Result<std::unique_ptr<Engine>> open_cuda_engine(const JobSpec& job, const EngineTarget& target) {
  std::string mem = "cudahost";
  if (const auto it = job.engine_options.find("mem"); it != job.engine_options.end()) {
    mem = it->second;
  }
  if (mem != "cudahost" && mem != "cudadevice") {
    return fail(EINVAL, "cuda: mem=" + mem + ": expected cudahost or cudadevice");
  }
  const bool on_device = mem == "cudadevice";
  if (on_device && job.verify != VerifyMode::kNone && does_writes(job.rw)) {
    return fail(EINVAL, "cuda: verify with mem=cudadevice: writes store device memory, which "
                        "the job does not fill");
  }
  auto ctx = cuda::DeviceContext::open(0);
  if (!ctx) return fail(ENODEV, "cuda: no CUDA device (" + ctx.error().message + ")");
  auto stream = cuda::CopyStream::create(*ctx);
  if (!stream) return fail(stream.error().code, "cuda: " + stream.error().message);
  auto dev = open_inner(job, target);
  if (!dev) return fail(dev.error().code, "cuda: " + dev.error().message);
  return std::unique_ptr<Engine>(
      new CudaEngine(std::move(*ctx), std::move(*stream), std::move(*dev), on_device));
}

}  // namespace cxlpool::io
