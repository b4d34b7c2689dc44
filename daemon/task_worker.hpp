// SPDX-License-Identifier: Apache-2.0
// One background thread that runs queued tasks in order and signals an
// eventfd when finished ones wait, so the control loop can poll it with
// epoll and never block on page moves. Region migrations and the tiering
// engine's page moves both run on one.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::daemon {

template <typename Task>
class TaskWorker {
 public:
  using Run = std::function<void(Task&)>;
  // `run` executes a task on the worker thread; `cancel` marks a task that
  // stop() returns without running.
  TaskWorker(Run run, Run cancel) : run_(std::move(run)), cancel_(std::move(cancel)) {}
  ~TaskWorker() { stop(); }
  TaskWorker(const TaskWorker&) = delete;
  TaskWorker& operator=(const TaskWorker&) = delete;

  Result<void> start() {
    event_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!event_fd_) return fail_errno("eventfd");
    thread_ = std::thread([this] { loop(); });
    return {};
  }

  // Finishes the task in progress; queued ones come back unrun (cancelled)
  // from the next take_finished.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      for (auto& task : pending_) {
        cancel_(task);
        finished_.push_back(std::move(task));
      }
      pending_.clear();
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void submit(Task task) {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back(std::move(task));
    }
    wake_.notify_one();
  }

  // Readable when finished tasks wait in take_finished().
  int event_fd() const { return event_fd_.get(); }

  std::vector<Task> take_finished() {
    uint64_t count = 0;
    if (event_fd_) (void)!::read(event_fd_.get(), &count, sizeof count);
    std::lock_guard lock(mutex_);
    return std::exchange(finished_, {});
  }

  size_t queued() const {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }
  bool busy() const {
    std::lock_guard lock(mutex_);
    return !pending_.empty() || running_ != 0;
  }

 private:
  void loop() {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
        if (pending_.empty()) return;
        task = std::move(pending_.front());
        pending_.pop_front();
        ++running_;
      }
      run_(task);
      {
        std::lock_guard lock(mutex_);
        finished_.push_back(std::move(task));
        --running_;
      }
      const uint64_t one = 1;
      (void)!::write(event_fd_.get(), &one, sizeof one);
    }
  }

  Run run_;
  Run cancel_;
  UniqueFd event_fd_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> pending_;
  std::vector<Task> finished_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cxlpool::daemon
