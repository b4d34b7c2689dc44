// SPDX-License-Identifier: Apache-2.0
// The io_uring SQPOLL kernel thread runs as a task of this process named
// "iou-sqp-<tid>". Its CPU time is the job's too (fio 3.33 leaves it out);
// we find the thread a ring created by comparing the task list before and
// after setting it up, then read its utime/stime from /proc.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

#include "engine.hpp"

namespace cxlpool::io {

// Task ids of this process's SQPOLL threads.
std::vector<pid_t> sqpoll_threads();

// The one in `after` that is not in `before`, if exactly one is new.
std::optional<pid_t> new_sqpoll_thread(const std::vector<pid_t>& before, const std::vector<pid_t>& after);

// CPU time of task `tid` of this process (/proc/self/task/<tid>/stat fields
// utime and stime, clock ticks); nullopt once the task is gone.
std::optional<HelperCpu> task_cpu(pid_t tid);

}  // namespace cxlpool::io
