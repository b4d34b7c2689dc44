// SPDX-License-Identifier: Apache-2.0
#include "migration_worker.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

namespace cxlpool::daemon {

MigrationWorker::MigrationWorker(hal::PagePlacement* placement) : placement_(placement) {}

MigrationWorker::~MigrationWorker() { stop(); }

Result<void> MigrationWorker::start() {
  event_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event_fd_) return fail_errno("eventfd");
  thread_ = std::thread([this] { run(); });
  return {};
}

void MigrationWorker::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    // Jobs that never started are finished as "nothing moved".
    for (auto& task : pending_) finished_.push_back(std::move(task));
    pending_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MigrationWorker::submit(MigrationTask task) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(task));
  }
  wake_.notify_one();
}

size_t MigrationWorker::queued() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

std::vector<MigrationTask> MigrationWorker::take_finished() {
  uint64_t count = 0;
  (void)!::read(event_fd_.get(), &count, sizeof count);
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, {});
}

void MigrationWorker::run() {
  for (;;) {
    MigrationTask task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      task = std::move(pending_.front());
      pending_.pop_front();
    }
    task.moved = task.job.run(placement_);
    {
      std::lock_guard lock(mutex_);
      finished_.push_back(std::move(task));
    }
    const uint64_t one = 1;
    (void)!::write(event_fd_.get(), &one, sizeof one);
  }
}

}  // namespace cxlpool::daemon
