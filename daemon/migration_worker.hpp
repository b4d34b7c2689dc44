// SPDX-License-Identifier: Apache-2.0
// Runs page migrations on a thread of their own so the event loop keeps
// serving other clients while a large region moves. The loop submits jobs,
// the worker runs them in order, and each finished job is handed back
// through an eventfd the loop polls; all pool state stays on the loop.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "region_pool.hpp"

namespace cxlpool::daemon {

struct MigrationTask {
  MigrationJob job;
  uint64_t session_id = 0;  // who asked (0: nobody waits for the reply)
  uint32_t request_id = 0;
  Result<hal::MoveStats> moved = hal::MoveStats{};
};

class MigrationWorker {
 public:
  explicit MigrationWorker(hal::PagePlacement* placement);
  ~MigrationWorker();

  Result<void> start();
  // Finishes the job in progress, drops queued ones (they are returned by
  // the next take_finished) and joins the thread.
  void stop();

  void submit(MigrationTask task);
  // Readable when finished tasks wait in take_finished().
  int event_fd() const { return event_fd_.get(); }
  std::vector<MigrationTask> take_finished();
  size_t queued() const;

 private:
  void run();

  hal::PagePlacement* placement_;
  UniqueFd event_fd_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<MigrationTask> pending_;
  std::vector<MigrationTask> finished_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cxlpool::daemon
