// SPDX-License-Identifier: Apache-2.0
// The commit's copies off the event loop: a few threads that copy committed
// chunks, or pieces of large ones, from clients' put windows into arena
// slots (taking the CRC-32C of what they copy in the same pass when asked)
// and hand each finished copy back through a list under a mutex and an
// eventfd, so that several commits, several chunks of one commit and the
// pieces of one chunk copy on several cores while the store's thread keeps
// serving requests.
//
// The threads touch the bytes of a job only: the store's state stays its
// own thread's. Whoever submits a job keeps both buffers mapped until the
// job comes back from take_done(), or until cancel() of its owner returned.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::kvcache {

struct CopyJob {
  std::uint64_t owner = 0;   // what cancel() names (the store: the client)
  std::uint64_t commit = 0;  // the submitter's: which commit, which chunk
  std::uint32_t chunk = 0;
  std::uint16_t piece = 0;   // which piece of the chunk (a large chunk is copied in pieces)
  std::byte* to = nullptr;  // null: no copy, the CRC of `from` only (with_crc)
  const std::byte* from = nullptr;
  std::uint32_t bytes = 0;
  // crc = crc32c(to, bytes) as copied: the CRC of what the destination
  // holds, whatever the source's writer does meanwhile (without a
  // destination: crc32c(from, bytes)).
  bool with_crc = false;
  std::uint32_t crc = 0;
};

// A chunk of at least two pieces' length is copied as pieces of at least
// this length on several threads at once, so that one commit's copy takes
// a fraction of one core's time: a lone writer waits for it.
inline constexpr std::uint32_t kMinCopyPiece = 256u << 10;
// The most pieces a chunk is cut into.
inline constexpr std::uint32_t kMaxCopyPieces = 16;

// How long each piece of a `bytes` chunk is, copied by `threads` workers and
// the caller: whole 4 KiB pages (so every piece keeps the chunk's
// alignment), `bytes` itself when the chunk stays whole. The last piece may
// be shorter.
std::uint32_t copy_piece_bytes(std::uint32_t bytes, std::size_t threads);

// The CRC-32C of a chunk of `bytes` from its pieces' CRCs (cut as
// copy_piece_bytes cuts them, piece_bytes each), combined in order.
std::uint32_t combine_piece_crcs(std::span<const std::uint32_t> crcs, std::uint64_t bytes, std::uint32_t piece_bytes);

// Does one job's copy (and its CRC when asked) on the calling thread: what
// the workers and run_one() do, and the store for a commit's first chunk.
void run_copy_job(CopyJob& job);

class CommitCopier {
 public:
  // EINVAL: no thread; the eventfd's or a thread's errno.
  static Result<std::unique_ptr<CommitCopier>> create(std::size_t threads);
  // Drops the queued jobs, lets the running ones finish, joins the threads.
  ~CommitCopier();
  CommitCopier(const CommitCopier&) = delete;
  CommitCopier& operator=(const CommitCopier&) = delete;

  // Queues the jobs (one lock, one wake-up per idle thread). Background
  // jobs run only when no other job waits: copies behind answered commits
  // never delay a commit that is not answered yet.
  void submit(std::span<const CopyJob> jobs, bool background = false);
  // Appends the finished jobs to `out`; resets event_fd() first, so that a
  // job finishing after the take signals it again.
  void take_done(std::vector<CopyJob>& out);
  // Signalled when finished jobs come to wait in take_done() (it may stay
  // readable after they were taken: read it to reset it).
  [[nodiscard]] int event_fd() const { return done_fd_.get(); }
  // Whether finished jobs wait, without a system call or the lock.
  [[nodiscard]] bool has_done() const { return has_done_.load(std::memory_order_acquire); }
  // Drops the queued jobs of `owner` (they never come back) and waits for
  // its running ones to finish (those come back from take_done()): then no
  // thread touches its buffers any more. At most one chunk copy per thread.
  // Returns how many were dropped.
  std::size_t cancel(std::uint64_t owner);
  // Waits until every queued and running job finished (they wait in
  // take_done()).
  void wait_idle();
  // Runs the oldest queued job on the caller's thread, if there is one
  // (true); it then waits in take_done(), without a signal of event_fd():
  // the caller takes it. For an owner with nothing else to do, so that a
  // copy never waits for a worker to be scheduled while it could run.
  // Background jobs only when `background` (they are off every answer's
  // path: a caller with a request about to come should leave them).
  bool run_one(bool background = false);
  // Moves the queued background jobs of commit `commit` ahead of the other
  // background jobs, with the foreground ones (someone waits for them now).
  void promote(std::uint64_t commit);
  // Keeps the threads off background jobs while `held` (run_one(true)
  // still runs them): a test's way to hold copies behind answered commits.
  void hold_background(bool held);
  [[nodiscard]] std::size_t threads() const { return threads_.size(); }

 private:
  explicit CommitCopier(UniqueFd done_fd) : done_fd_(std::move(done_fd)) {}
  void run(std::size_t slot);
  // The next job, foreground first (background ones only when asked);
  // false when none waits. Under mutex_.
  bool pop_job(CopyJob& job, bool background);

  UniqueFd done_fd_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable work_;  // a job was queued, or stopping
  std::condition_variable idle_;  // a job finished (cancel, wait_idle)
  std::deque<CopyJob> queue_;
  std::deque<CopyJob> background_;
  std::vector<CopyJob> done_;
  std::atomic<bool> has_done_{false};  // !done_.empty(), for a look without the lock
  struct Running {
    bool busy = false;
    std::uint64_t owner = 0;
  };
  std::vector<Running> running_;  // per thread, under mutex_
  bool stopping_ = false;
  bool held_ = false;  // hold_background
};

}  // namespace cxlpool::kvcache
