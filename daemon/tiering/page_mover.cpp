// SPDX-License-Identifier: Apache-2.0
#include "page_mover.hpp"

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

PageMover::PageMover(hal::PagePlacement* placement)
    : TaskWorker(
          [placement](PageMoveTask& task) {
            for (auto& batch : task.batches) run_page_move_batch(*placement, batch);
          },
          [](PageMoveTask& task) {
            for (auto& batch : task.batches) {
              batch.error = Error{ECANCELED, "the daemon stopped before the move ran"};
              batch.status.assign(batch.addresses.size(), -ECANCELED);
            }
          }) {}

}  // namespace cxlpool::daemon
