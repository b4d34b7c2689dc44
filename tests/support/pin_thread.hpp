// SPDX-License-Identifier: Apache-2.0
// Pins the calling thread to one CPU, so that a producer and a consumer
// thread run on different cores; a no-op on a single-CPU machine (or when
// the CPU is not ours to use: the thread then runs wherever it may).
#pragma once

#include <pthread.h>
#include <sched.h>

#include <thread>

namespace cxlpool::test {

inline void pin_thread_to_cpu(unsigned cpu) {
  if (std::thread::hardware_concurrency() < 2) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace cxlpool::test
