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

// A TaskWorker that runs each job's migration through `placement`. stop()
// drops queued jobs: the next take_finished returns them as "nothing moved".
class MigrationWorker : public TaskWorker<MigrationTask> {
 public:
  explicit MigrationWorker(hal::PagePlacement* placement);
};

}  // namespace cxlpool::daemon
