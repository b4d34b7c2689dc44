// SPDX-License-Identifier: Apache-2.0
#include "commit_copier.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <system_error>
#include <utility>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/stream_copy.hpp"

namespace cxlpool::kvcache {

Result<std::unique_ptr<CommitCopier>> CommitCopier::create(std::size_t threads) {
  if (threads == 0) return fail(EINVAL, "commit copier: no thread");
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd) return fail_errno("eventfd for the commit copier");
  std::unique_ptr<CommitCopier> copier(new CommitCopier(std::move(fd)));
  copier->running_.resize(threads);
  copier->threads_.reserve(threads);
  try {
    for (std::size_t i = 0; i < threads; ++i) copier->threads_.emplace_back([c = copier.get(), i] { c->run(i); });
  } catch (const std::system_error& e) {
    // The destructor joins the threads that did start.
    return fail(e.code().value(), "commit copier: starting a thread");
  }
  return copier;
}

CommitCopier::~CommitCopier() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
    background_.clear();
  }
  work_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void CommitCopier::submit(std::span<const CopyJob> jobs, bool background) {
  if (jobs.empty()) return;
  {
    const std::lock_guard lock(mutex_);
    std::deque<CopyJob>& q = background ? background_ : queue_;
    q.insert(q.end(), jobs.begin(), jobs.end());
  }
  if (jobs.size() == 1) {
    work_.notify_one();
  } else {
    work_.notify_all();
  }
}

void CommitCopier::take_done(std::vector<CopyJob>& out) {
  std::uint64_t count = 0;
  (void)!::read(done_fd_.get(), &count, sizeof count);
  const std::lock_guard lock(mutex_);
  if (out.empty()) {
    out.swap(done_);
  } else {
    out.insert(out.end(), done_.begin(), done_.end());
    done_.clear();
  }
  has_done_.store(false, std::memory_order_relaxed);
}

std::size_t CommitCopier::cancel(std::uint64_t owner) {
  std::unique_lock lock(mutex_);
  const auto of_owner = [owner](const CopyJob& j) { return j.owner == owner; };
  const std::size_t dropped = std::erase_if(queue_, of_owner) + std::erase_if(background_, of_owner);
  idle_.wait(lock, [&] {
    return std::none_of(running_.begin(), running_.end(), [owner](const Running& r) { return r.busy && r.owner == owner; });
  });
  return dropped;
}

void CommitCopier::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] {
    return queue_.empty() && background_.empty() &&
           std::none_of(running_.begin(), running_.end(), [](const Running& r) { return r.busy; });
  });
}

std::uint32_t copy_piece_bytes(std::uint32_t bytes, std::size_t threads) {
  const std::size_t pieces = std::min<std::size_t>({threads + 1, bytes / kMinCopyPiece, kMaxCopyPieces});
  if (pieces < 2) return bytes;
  // Rounded up twice (the share, then to a page), so that no remainder
  // makes a piece more than `pieces`.
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t share = (std::uint64_t{bytes} + pieces - 1) / pieces;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>((share + kPage - 1) / kPage * kPage, bytes));
}

std::uint32_t combine_piece_crcs(std::span<const std::uint32_t> crcs, std::uint64_t bytes, std::uint32_t piece_bytes) {
  std::uint32_t crc = crcs[0];
  std::size_t piece = 1;
  for (std::uint64_t at = piece_bytes; at < bytes; at += piece_bytes, ++piece) {
    crc = crc32c_combine(crc, crcs[piece], std::min<std::uint64_t>(piece_bytes, bytes - at));
  }
  return crc;
}

void run_copy_job(CopyJob& job) {
  if (job.to == nullptr) {  // a chunk the SSD log writes from where it is: its CRC only
    job.crc = crc32c({job.from, job.bytes});
    return;
  }
  // The destination is an arena slot the store never reads again (a
  // client does, later): streamed past the caches.
  // With a CRC: of what was stored, each 4 KiB block through an L1 buffer.
  // Also the cheaper way here: from a window slot another core just wrote,
  // 364-381 us of daemon CPU per 2 MiB SSD put against 414-430 us with a
  // CRC of the source as it was read (docs/perf.md).
  if (job.with_crc) {
    job.crc = copy_crc32c_of_copy(job.to, job.from, job.bytes);
  } else {
    stream_copy(job.to, job.from, job.bytes);
  }
}

void CommitCopier::promote(std::uint64_t commit) {
  {
    const std::lock_guard lock(mutex_);
    const auto of_commit = [commit](const CopyJob& j) { return j.commit == commit; };
    std::copy_if(background_.begin(), background_.end(), std::back_inserter(queue_), of_commit);
    if (std::erase_if(background_, of_commit) == 0) return;
  }
  work_.notify_all();
}

void CommitCopier::hold_background(bool held) {
  {
    const std::lock_guard lock(mutex_);
    held_ = held;
  }
  if (!held) work_.notify_all();
}

bool CommitCopier::pop_job(CopyJob& job, bool background) {
  std::deque<CopyJob>& q = queue_.empty() && background ? background_ : queue_;
  if (q.empty()) return false;
  job = q.front();
  q.pop_front();
  return true;
}

bool CommitCopier::run_one(bool background) {
  std::unique_lock lock(mutex_);
  CopyJob job;
  if (!pop_job(job, background)) return false;
  lock.unlock();
  run_copy_job(job);
  lock.lock();
  done_.push_back(job);
  has_done_.store(true, std::memory_order_release);
  return true;
}

void CommitCopier::run(std::size_t slot) {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !queue_.empty() || (!background_.empty() && !held_); });
    if (stopping_) return;
    CopyJob job;
    (void)pop_job(job, !held_);
    running_[slot] = Running{true, job.owner};
    lock.unlock();
    run_copy_job(job);
    lock.lock();
    running_[slot].busy = false;
    const bool was_empty = done_.empty();
    done_.push_back(job);
    has_done_.store(true, std::memory_order_release);
    // Only when the list turns non-empty: the store takes everything once
    // woken, so a busy store costs no system call per copy.
    if (was_empty) {
      const std::uint64_t one = 1;
      (void)!::write(done_fd_.get(), &one, sizeof one);
    }
    idle_.notify_all();
  }
}

}  // namespace cxlpool::kvcache
