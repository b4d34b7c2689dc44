// SPDX-License-Identifier: Apache-2.0
// CPU time and scheduling counters of the calling thread (getrusage
// RUSAGE_THREAD): a job's usr/sys CPU, context switches and faults are the
// difference between two readings on its own thread.
#pragma once

#include <cstdint>

namespace cxlpool::io {

struct ThreadUsage {
  std::uint64_t user_ns = 0;
  std::uint64_t system_ns = 0;
  std::uint64_t context_switches = 0;  // voluntary + involuntary
  std::uint64_t major_faults = 0;
  std::uint64_t minor_faults = 0;
};

ThreadUsage thread_usage();
ThreadUsage operator-(const ThreadUsage& a, const ThreadUsage& b);

}  // namespace cxlpool::io
