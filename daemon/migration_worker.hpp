// SPDX-License-Identifier: Apache-2.0
// Runs page migrations on a thread of their own so the event loop keeps
// serving other clients while a large region moves. The loop submits jobs,
// the worker runs them in order, and each finished job is handed back
// through an eventfd the loop polls; all pool state stays on the loop.
#pragma once

#include <cstdint>
#include <vector>

#include "region_pool.hpp"
#include "task_worker.hpp"

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

  Result<void> start() { return worker_.start(); }
  // Finishes the job in progress, drops queued ones (they are returned by
  // the next take_finished as "nothing moved") and joins the thread.
  void stop() { worker_.stop(); }

  void submit(MigrationTask task) { worker_.submit(std::move(task)); }
  // Readable when finished tasks wait in take_finished().
  int event_fd() const { return worker_.event_fd(); }
  std::vector<MigrationTask> take_finished() { return worker_.take_finished(); }
  size_t queued() const { return worker_.queued(); }

 private:
  TaskWorker<MigrationTask> worker_;
};

}  // namespace cxlpool::daemon
