// SPDX-License-Identifier: Apache-2.0
#include "page_mover.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cxlpool/common/clock.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

namespace cxlpool::daemon {
namespace {

constexpr size_t kPage = hal::kAccessPageBytes;

// Maps the existing pages among `batch`'s unmapped ones into the daemon's
// mapping. mincore() reports a shared file's page cache, so pages that were
// never written stay unallocated.
void map_present_pages(hal::PagePlacement& placement, PageMoveBatch& batch) {
  auto where = placement.query_pages(0, batch.addresses);
  if (!where) return;
  for (size_t i = 0; i < where->size(); ++i) {
    const int node = (*where)[i];
    if (node != -ENOENT && node != -EFAULT) continue;
    unsigned char resident = 0;
    if (::mincore(batch.addresses[i], kPage, &resident) != 0 || (resident & 1) == 0) continue;
    (void)::madvise(batch.addresses[i], kPage, MADV_POPULATE_READ);
  }
}

}  // namespace

void run_page_move_batch(hal::PagePlacement& placement, PageMoveBatch& batch) {
  const uint64_t start = monotonic_ns();
  if (batch.pid == 0) map_present_pages(placement, batch);
  auto moved = placement.move_pages(batch.pid, batch.addresses, batch.node, batch.move_all);
  if (moved) {
    batch.status = std::move(*moved);
  } else {
    batch.error = moved.error();
    batch.status.assign(batch.addresses.size(), -moved.error().code);
  }
  batch.elapsed_ns = monotonic_ns() - start;
}

PageMover::~PageMover() { stop(); }

Result<void> PageMover::start() {
  event_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event_fd_) return fail_errno("eventfd");
  thread_ = std::thread([this] { run(); });
  return {};
}

void PageMover::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& task : pending_) {
      for (auto& batch : task.batches) {
        batch.error = Error{ECANCELED, "the daemon stopped before the move ran"};
        batch.status.assign(batch.addresses.size(), -ECANCELED);
      }
      finished_.push_back(std::move(task));
    }
    pending_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PageMover::submit(PageMoveTask task) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(task));
  }
  wake_.notify_one();
}

bool PageMover::busy() const {
  std::lock_guard lock(mutex_);
  return !pending_.empty() || running_ != 0;
}

std::vector<PageMoveTask> PageMover::take_finished() {
  uint64_t count = 0;
  if (event_fd_) (void)!::read(event_fd_.get(), &count, sizeof count);
  std::lock_guard lock(mutex_);
  return std::exchange(finished_, {});
}

void PageMover::run() {
  for (;;) {
    PageMoveTask task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      task = std::move(pending_.front());
      pending_.pop_front();
      ++running_;
    }
    for (auto& batch : task.batches) run_page_move_batch(*placement_, batch);
    {
      std::lock_guard lock(mutex_);
      finished_.push_back(std::move(task));
      --running_;
    }
    const uint64_t one = 1;
    (void)!::write(event_fd_.get(), &one, sizeof one);
  }
}

}  // namespace cxlpool::daemon
