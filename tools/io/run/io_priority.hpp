// SPDX-License-Identifier: Apache-2.0
// The I/O priority of each of a job's I/Os, as ioprio_set(2) values
// (class << 13 | level): prio/prioclass set the job's thread (so every I/O
// it issues, whatever the engine), cmdprio_percentage or cmdprio_bssplit
// give some I/Os of libaio/io_uring jobs their own. What the logs' priority
// column shows comes from here too.
#pragma once

#include <cstdint>

#include "../job/job_spec.hpp"
#include "cxlpool/common/result.hpp"
#include "rng.hpp"

namespace cxlpool::io {

inline constexpr int kPrioClassRt = 1;
inline constexpr int kPrioClassBe = 2;

constexpr std::uint16_t ioprio_value(int prio_class, int level) {
  return static_cast<std::uint16_t>((prio_class << 13) | level);
}
constexpr int ioprio_class(std::uint16_t value) { return value >> 13; }

class IoPriority {
 public:
  explicit IoPriority(const JobSpec& job);

  // The job's own priority (prio/prioclass; a level without a class is in
  // the best-effort class, a class without a level at level 0, as fio
  // takes them); 0 when neither is set.
  std::uint16_t job_value() const { return job_; }
  // The priority of one I/O of `bytes` in `direction`: a cmdprio one for
  // the share of I/Os that get it, else the job's.
  std::uint16_t pick(int direction, std::uint32_t bytes, Rng& rng) const;
  // Whether any I/O gets a priority other than the thread's.
  bool per_io() const { return per_io_; }

 private:
  const JobSpec& spec_;
  std::uint16_t job_ = 0;
  std::uint16_t cmd_[2] = {0, 0};
  bool per_io_ = false;
};

// Sets the calling thread's I/O priority (ioprio_set, IOPRIO_WHO_PROCESS
// of this thread's id); EPERM for the real-time class without
// CAP_SYS_ADMIN/CAP_SYS_NICE.
Result<void> set_thread_ioprio(std::uint16_t value);

// The value fio's logs carry in their priority column: the full ioprio
// value with log_prio=1, else 1 for a real-time (high) priority and 0.
inline std::uint16_t logged_priority(std::uint16_t value, bool log_prio) {
  if (log_prio) return value;
  return ioprio_class(value) == kPrioClassRt ? 1 : 0;
}

}  // namespace cxlpool::io
