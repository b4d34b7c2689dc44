// SPDX-License-Identifier: Apache-2.0
// The io_uring SQPOLL kernel thread runs as a task of this process (it names
// itself "iou-sqp-<tid>" once it first runs, which may be after the ring's
// set-up returns). Its CPU time is the job's too (fio 3.33 leaves it out):
// we find the thread a ring created as the one task that appeared while the
// ring was set up (rings are set up one at a time, before job threads
// start), then read its utime/stime from /proc.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "engine.hpp"

namespace cxlpool::io {

// Task ids of this process, sorted.
std::vector<pid_t> task_ids();

// The one in `after` that is not in `before`, if exactly one is new.
std::optional<pid_t> new_task(const std::vector<pid_t>& before, const std::vector<pid_t>& after);

// CPU time of task `tid` of this process (/proc/self/task/<tid>/stat fields
// utime and stime, clock ticks); nullopt once the task is gone.
std::optional<HelperCpu> task_cpu(pid_t tid);

}  // namespace cxlpool::io
