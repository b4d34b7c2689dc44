// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/block_workers.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
  WorkerBlockDevice(std::vector<std::unique_ptr<BlockDevice>> queues, UniqueFd done_fd, ReadDigest digest)
      : BlockDevice(queues.front()->path(), queues.front()->geometry(), queues.front()->direct(),
                    queues.front()->queue_depth()),
        backend_(queues.front()->backend_name()),
        done_fd_(std::move(done_fd)),
        digest_(digest) {
    for (auto& queue : queues) {
      auto worker = std::make_unique<Worker>();
      // The owner keeps at most queue_depth() requests in flight in all,
      // so a worker never holds more than that.
      worker->requests.resize(queue_depth());
      for (std::uint32_t tag = queue_depth(); tag > 0; --tag) worker->free_tags.push_back(tag - 1);
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
    // Requests go round the workers one at a time, small and large ones in
    // turns of their own (what a request costs a worker is mostly its
    // bytes); a worker is woken once for what this call gave it, and only
    // when it sleeps: one that is awake takes its inbox up before it sleeps
    // again, so a busy device costs the owner no system call per request.
    given_.assign(workers_.size(), 0);
    for (const IoRequest& request : requests) {
      std::size_t& turn = request.length <= kSmallWorkerRequest ? next_small_ : next_;
      const std::size_t to = turn;
      turn = (turn + 1) % workers_.size();
      Worker& w = *workers_[to];
      given_[to] = 1;
      const std::lock_guard lock(w.inbox_mutex);
      w.inbox.push_back(request);
    }
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      if (given_[i] != 0 && workers_[i]->asleep.exchange(false)) signal(workers_[i]->wake.get());
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
    // Workers signal only when the queue turns non-empty: completions left
    // for a later poll must keep completion_fd() readable.
    if (!done_.empty()) signal(done_fd_.get());
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

  // Every queue, each under its lock while its thread may be submitting:
  // the caller has no request naming the index queued or in flight. A queue
  // that fails leaves the index empty on every queue.
  Result<void> update_buffer_impl(std::uint32_t index, const iovec& buffer) override {
    for (auto& worker : workers_) {
      const std::lock_guard lock(worker->device_mutex);
      if (auto r = worker->device->update_buffer(index, buffer); !r) {
        for (auto& other : workers_) {
          if (other == worker) continue;
          const std::lock_guard other_lock(other->device_mutex);
          (void)other->device->update_buffer(index, iovec{nullptr, 0});
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
    // Set by the thread before it sleeps in poll(); whoever clears it signals
    // `wake` (so a worker that is awake is not signalled for each request).
    std::atomic<bool> asleep{false};
    std::thread thread;
    // The thread's own: the requests on its queue, by the tag that stands
    // for the caller's user_data there.
    std::vector<IoRequest> requests;
    std::vector<std::uint32_t> free_tags;
  };

  // The caller's request back for a completion of the worker's queue, with
  // its digest taken when it asked for one and the read filled the bytes.
  IoCompletion finish(Worker& w, IoCompletion c) {
    const auto tag = static_cast<std::uint32_t>(c.user_data);
    const IoRequest& request = w.requests[tag];
    c.user_data = request.user_data;
    const bool filled = c.result >= static_cast<std::int64_t>(request.digest_bytes);
    if (digest_ != nullptr && request.digest_bytes != 0 && filled) {
      const auto t0 = std::chrono::steady_clock::now();
      c.digest = digest_({static_cast<const std::byte*>(request.buffer), request.digest_bytes});
      const auto took = std::chrono::steady_clock::now() - t0;
      c.digest_ns = static_cast<std::uint32_t>(
          std::min<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count(), UINT32_MAX));
      c.digested = true;
    }
    w.free_tags.push_back(tag);
    return c;
  }

  // Reaped completions to the owner: those without a digest at once, each
  // digested one as soon as its digest is taken, so that the first
  // finished read is not held back by the digests of the others.
  void hand_back(Worker& w, std::span<IoCompletion> reaped) {
    const auto plain = std::partition(reaped.begin(), reaped.end(), [&](const IoCompletion& c) {
      return digest_ == nullptr || w.requests[static_cast<std::uint32_t>(c.user_data)].digest_bytes == 0;
    });
    for (auto it = reaped.begin(); it != plain; ++it) *it = finish(w, *it);
    post({reaped.begin(), plain});
    for (auto it = plain; it != reaped.end(); ++it) {
      const IoCompletion done = finish(w, *it);
      post({&done, 1});
    }
  }

  // Hands completions to the owner, waking it when it has none waiting (it
  // takes everything queued once woken: no system call per completion
  // while it keeps up).
  void post(std::span<const IoCompletion> completions) {
    if (completions.empty()) return;
    bool was_empty = false;
    {
      const std::lock_guard lock(done_mutex_);
      was_empty = done_.empty();
      done_.insert(done_.end(), completions.begin(), completions.end());
    }
    done_cv_.notify_all();
    if (was_empty) signal(done_fd_.get());
  }

  void run(Worker& w) {
    std::vector<IoRequest> batch;
    std::vector<IoCompletion> reaped(std::max<std::uint32_t>(w.device->queue_depth(), 1));
    const int device_fd = w.device->completion_fd();
    // Which counters poll() found signalled (the first pass looks at both).
    bool woken = true, completed = true;
    for (;;) {
      // Counters are reset before the inbox and the queue are looked at:
      // whatever arrives after this wakes the poll below. One that was not
      // signalled is left alone (no system call for nothing).
      if (woken) drain(w.wake.get());
      if (completed) drain(device_fd);
      woken = completed = false;
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
          for (IoRequest& request : batch) {
            const std::uint32_t tag = w.free_tags.back();
            w.free_tags.pop_back();
            w.requests[tag] = request;
            request.user_data = tag;
          }
          if (auto r = w.device->submit(batch); !r) {
            std::vector<IoCompletion> refused;
            for (const IoRequest& request : batch) {
              refused.push_back(finish(w, {request.user_data, -static_cast<std::int64_t>(r.error().code), request.op,
                                           request.length}));
            }
            post(refused);
          }
          batch.clear();
        }
        for (;;) {
          auto got = w.device->poll_completions(reaped, 0, std::chrono::nanoseconds{0});
          if (!got || *got == 0) break;
          hand_back(w, std::span(reaped).first(*got));
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
        if (got) hand_back(w, std::span(reaped).first(*got));
        continue;
      }
      // About to sleep: say so, then look at the inbox once more, since the
      // owner signals only a worker that said it sleeps. (A stop is always
      // signalled, and was seen above if it was signalled before the drain.)
      w.asleep.store(true);
      {
        const std::lock_guard lock(w.inbox_mutex);
        if (!w.inbox.empty()) {
          w.asleep.store(false);
          continue;
        }
      }
      pollfd fds[2] = {{w.wake.get(), POLLIN, 0}, {device_fd, POLLIN, 0}};
      if (::poll(fds, device_fd >= 0 ? 2 : 1, -1) < 0) {
        woken = completed = true;  // EINTR: look at everything again
      } else {
        woken = (fds[0].revents & POLLIN) != 0;
        completed = device_fd >= 0 && (fds[1].revents & POLLIN) != 0;
      }
      w.asleep.store(false);
    }
  }

  const char* backend_;
  UniqueFd done_fd_;
  std::vector<std::unique_ptr<Worker>> workers_;
  ReadDigest digest_;
  // The owner's: the worker the next large and the next small request go
  // to, and which workers this submit gave requests to.
  std::size_t next_ = 0;
  std::size_t next_small_ = 0;
  std::vector<std::uint8_t> given_;
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  std::deque<IoCompletion> done_;
};

}  // namespace

Result<std::unique_ptr<BlockDevice>> make_worker_block_device(std::vector<std::unique_ptr<BlockDevice>> queues,
                                                              ReadDigest digest) {
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
  auto device = std::make_unique<WorkerBlockDevice>(std::move(queues), std::move(done_fd), digest);
  if (auto started = device->start(); !started) return tl::unexpected(started.error());
  return std::unique_ptr<BlockDevice>(std::move(device));
}

}  // namespace cxlpool::hal
