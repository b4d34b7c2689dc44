// SPDX-License-Identifier: Apache-2.0
// Applies the tiering engine's page moves on a thread of its own, so a large
// plan never stalls the event loop: the loop submits one task per plan, the
// thread runs move_pages through the placement backend and hands the task
// back through an eventfd, with the kernel's per-page status filled in.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "task_worker.hpp"

namespace cxlpool::daemon {

// Pages of one process (pid 0: the daemon's own mappings of pool regions)
// that go to one node.
struct PageMoveBatch {
  int pid = 0;
  int node = -1;
  bool promote = true;  // slow -> fast; false: fast -> slow
  bool move_all = false;
  std::vector<tiering::PageKey> keys;
  std::vector<void*> addresses;  // one per key
  // Filled by the worker.
  std::vector<int> status;        // node after the move, or -errno
  std::optional<Error> error;     // the whole batch failed
  uint64_t elapsed_ns = 0;
};

struct PageMoveTask {
  uint64_t plan = 0;
  std::vector<PageMoveBatch> batches;
  std::vector<uint64_t> held_regions;  // RegionPool::hold_for_page_moves, ended on completion
};

// Runs one batch on the calling thread. Pool pages that the daemon's own
// mapping has not faulted in (the client touched them through its mapping)
// are mapped first when they exist, so move_pages can see them; holes stay
// holes and come back -ENOENT.
void run_page_move_batch(hal::PagePlacement& placement, PageMoveBatch& batch);

// A TaskWorker that runs each task's batches through `placement`. stop()
// returns queued tasks unrun, their batches carrying ECANCELED.
class PageMover : public TaskWorker<PageMoveTask> {
 public:
  explicit PageMover(hal::PagePlacement* placement);
};

}  // namespace cxlpool::daemon
