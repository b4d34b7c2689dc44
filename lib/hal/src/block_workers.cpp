// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/block_workers.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::hal {
namespace {

// Resets an eventfd's counter; a wakeup posted after this read makes it
// readable again, so nothing signalled later is lost.
void drain(int fd) {
  if (fd < 0) return;
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t got = ::read(fd, &count, sizeof count);
}

void signal(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t put = ::write(fd, &one, sizeof one);
}

class WorkerBlockDevice final : public BlockDevice {
 public:
  WorkerBlockDevice(std::vector<std::unique_ptr<BlockDevice>> queues, UniqueFd done_fd)
      : BlockDevice(queues.front()->path(), queues.front()->geometry(), queues.front()->direct(),
                    queues.front()->queue_depth()),
        backend_(queues.front()->backend_name()),
        done_fd_(std::move(done_fd)) {
    for (auto& queue : queues) {
      auto worker = std::make_unique<Worker>();
      worker->device = std::move(queue);
      workers_.push_back(std::move(worker));
    }
  }

  // Threads start once every worker exists: none touches a half-built vector.
  Result<void> start() {
    for (auto& worker : workers_) {
      worker->wake.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
      if (!worker->wake) return fail_errno("eventfd for a block I/O worker");
    }
    for (auto& worker : workers_) {
      Worker* w = worker.get();
      w->thread = std::thread([this, w] { run(*w); });
    }
    return {};
  }

  ~WorkerBlockDevice() override {
    for (auto& worker : workers_) {
      {
        const std::lock_guard lock(worker->inbox_mutex);
        worker->stop = true;
      }
      if (worker->wake) signal(worker->wake.get());
    }
    for (auto& worker : workers_) {
      if (worker->thread.joinable()) worker->thread.join();
    }
  }

  const char* backend_name() const override { return backend_; }
  int completion_fd() const override { return done_fd_.get(); }

 protected:
  Result<void> submit_impl(std::span<const IoRequest> requests) override {
    // Requests go round the workers one at a time; each worker is woken
    // once for what this call gave it.
    for (const IoRequest& request : requests) {
      Worker& w = *workers_[next_];
      next_ = (next_ + 1) % workers_.size();
      const std::lock_guard lock(w.inbox_mutex);
      w.inbox.push_back(request);
    }
    const std::size_t woken = std::min(requests.size(), workers_.size());
    for (std::size_t i = 0; i < woken; ++i) {
      signal(workers_[(next_ + workers_.size() - 1 - i) % workers_.size()]->wake.get());
    }
    return {};
  }

  Result<std::size_t> poll_impl(std::span<IoCompletion> out, std::size_t min,
                                std::chrono::nanoseconds timeout) override {
    std::unique_lock lock(done_mutex_);
    const auto ready = [&] { return done_.size() >= min; };
    // A wait of days is as good as forever, and now() + it must not overflow.
    if (timeout == kWaitForever || timeout > std::chrono::hours(24)) {
      done_cv_.wait(lock, ready);
    } else if (timeout.count() > 0) {
      done_cv_.wait_for(lock, timeout, ready);
    }
    std::size_t n = 0;
    for (; n < out.size() && !done_.empty(); ++n) {
      out[n] = done_.front();
      done_.pop_front();
    }
    return n;
  }

  Result<void> register_buffers_impl(std::span<const iovec> buffers) override {
    for (auto& worker : workers_) {
      const std::lock_guard lock(worker->device_mutex);
      if (auto r = worker->device->register_buffers(buffers); !r) {
        // All queues or none: a request naming a buffer may go to any.
        for (auto& other : workers_) {
          if (other == worker) break;
          const std::lock_guard other_lock(other->device_mutex);
          (void)other->device->register_buffers({});
        }
        return r;
      }
    }
    return {};
  }

 private:
  struct Worker {
    std::mutex device_mutex;  // the queue: its thread, and register_buffers
    std::unique_ptr<BlockDevice> device;
    std::mutex inbox_mutex;   // inbox and stop: the owner and the thread
    std::vector<IoRequest> inbox;
    bool stop = false;
    UniqueFd wake;  // eventfd: the inbox has requests, or stop was set
    std::thread thread;
  };

  // Hands completions to the owner and wakes it.
  void post(std::span<const IoCompletion> completions) {
    if (completions.empty()) return;
    {
      const std::lock_guard lock(done_mutex_);
      done_.insert(done_.end(), completions.begin(), completions.end());
    }
    done_cv_.notify_all();
    signal(done_fd_.get());
  }

  void run(Worker& w) {
    std::vector<IoRequest> batch;
    std::vector<IoCompletion> reaped(std::max<std::uint32_t>(w.device->queue_depth(), 1));
    const int device_fd = w.device->completion_fd();
    for (;;) {
      // Counters are reset before the inbox and the queue are looked at:
      // whatever arrives after this wakes the poll below.
      drain(w.wake.get());
      drain(device_fd);
      bool stop = false;
      {
        const std::lock_guard lock(w.inbox_mutex);
        batch.swap(w.inbox);
        stop = w.stop;
      }
      std::uint32_t in_flight = 0;
      {
        const std::lock_guard lock(w.device_mutex);
        if (!batch.empty()) {
          if (auto r = w.device->submit(batch); !r) {
            std::vector<IoCompletion> refused;
            for (const IoRequest& request : batch) {
              refused.push_back({request.user_data, -static_cast<std::int64_t>(r.error().code), request.op,
                                 request.length});
            }
            post(refused);
          }
          batch.clear();
        }
        for (;;) {
          auto got = w.device->poll_completions(reaped, 0, std::chrono::nanoseconds{0});
          if (!got || *got == 0) break;
          post(std::span(reaped).first(*got));
        }
        in_flight = w.device->in_flight();
      }
      if (stop && in_flight == 0) {
        const std::lock_guard lock(w.inbox_mutex);
        if (w.inbox.empty()) return;
        continue;
      }
      if (in_flight != 0 && device_fd < 0) {
        // A queue without a completion eventfd: wait in it, briefly, so
        // that new requests are still taken up.
        const std::lock_guard lock(w.device_mutex);
        auto got = w.device->poll_completions(reaped, 1, std::chrono::milliseconds(1));
        if (got) post(std::span(reaped).first(*got));
        continue;
      }
      pollfd fds[2] = {{w.wake.get(), POLLIN, 0}, {device_fd, POLLIN, 0}};
      ::poll(fds, device_fd >= 0 ? 2 : 1, -1);
    }
  }

  const char* backend_;
  UniqueFd done_fd_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::size_t next_ = 0;  // the owner's: the worker the next request goes to
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  std::deque<IoCompletion> done_;
};

}  // namespace

Result<std::unique_ptr<BlockDevice>> make_worker_block_device(std::vector<std::unique_ptr<BlockDevice>> queues) {
  if (queues.empty() || !queues.front()) return fail(EINVAL, "block I/O workers: no queue given");
  const BlockDevice& first = *queues.front();
  for (const auto& queue : queues) {
    if (!queue || queue->path() != first.path() || queue->direct() != first.direct() ||
        queue->size() != first.size() || queue->mem_alignment() != first.mem_alignment() ||
        queue->offset_alignment() != first.offset_alignment() || queue->queue_depth() < first.queue_depth()) {
      return fail(EINVAL, "block I/O workers: every queue must be on " + first.path() +
                              " with the same geometry, O_DIRECT choice and at least its queue depth");
    }
  }
  UniqueFd done_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!done_fd) return fail_errno("eventfd for block I/O completions");
  auto device = std::make_unique<WorkerBlockDevice>(std::move(queues), std::move(done_fd));
  if (auto started = device->start(); !started) return tl::unexpected(started.error());
  return std::unique_ptr<BlockDevice>(std::move(device));
}

}  // namespace cxlpool::hal
