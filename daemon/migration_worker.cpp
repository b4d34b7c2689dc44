// SPDX-License-Identifier: Apache-2.0
#include "migration_worker.hpp"

namespace cxlpool::daemon {

MigrationWorker::MigrationWorker(hal::PagePlacement* placement)
    : TaskWorker([placement](MigrationTask& task) { task.moved = task.job.run(placement); },
              // Jobs that never started are finished as "nothing moved".
              [](MigrationTask&) {}) {}

}  // namespace cxlpool::daemon
