// SPDX-License-Identifier: Apache-2.0
#include "io_priority.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <string>

namespace cxlpool::io {
namespace {

constexpr int kIoprioWhoProcess = 1;  // linux/ioprio.h: a thread id (0: the caller)

}  // namespace

IoPriority::IoPriority(const JobSpec& job) : spec_(job) {
  if (job.prio >= 0 || job.prioclass >= 0) {
    const int cls = job.prioclass >= 0 ? job.prioclass : kPrioClassBe;
    job_ = ioprio_value(cls, job.prio >= 0 ? job.prio : 0);
  }
  for (int d = 0; d < 2; ++d) {
    cmd_[d] = ioprio_value(job.cmdprio_class[d] >= 0 ? job.cmdprio_class[d] : kPrioClassRt,
                           job.cmdprio[d] >= 0 ? job.cmdprio[d] : 0);
    if (job.cmdprio_percentage[d] != 0 || !job.cmdprio_bssplit[d].empty()) per_io_ = true;
  }
}

std::uint16_t IoPriority::pick(int direction, std::uint32_t bytes, Rng& rng) const {
  if (!per_io_) return job_;
  const auto& split = spec_.cmdprio_bssplit[direction];
  if (!split.empty()) {
    // The entries of this size share the I/Os by their percentages; what
    // they leave runs at the job's priority.
    std::uint64_t draw = rng.below(100);
    for (const PrioritySplit& p : split) {
      if (p.bytes != bytes) continue;
      if (draw < p.percent) return p.prio_class >= 0 ? ioprio_value(p.prio_class, p.level) : cmd_[direction];
      draw -= p.percent;
    }
    return job_;
  }
  const std::uint32_t percent = spec_.cmdprio_percentage[direction];
  if (percent != 0 && rng.below(100) < percent) return cmd_[direction];
  return job_;
}

Result<void> set_thread_ioprio(std::uint16_t value) {
  if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, static_cast<int>(value)) != 0)
    return fail_errno("ioprio_set class " + std::to_string(ioprio_class(value)) + " level " +
                      std::to_string(value & 0x1fff) + " (prio/prioclass)");
  return {};
}

}  // namespace cxlpool::io
