// SPDX-License-Identifier: Apache-2.0
// Runs a parsed job file: stonewall groups one after another, the jobs of a
// group concurrently (one thread per job clone), each issuing I/O through its
// engine per the job's options, and collects a RunResult.
#pragma once

#include <atomic>

#include "../job/job_file.hpp"
#include "../stats/run_result.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

class FlowGroups;

struct RunOptions {
  std::atomic<bool>* stop = nullptr;  // set by SIGINT: jobs end early and report what they did
  bool collect_logs = true;           // fill the *_log vectors the job asked for
  FlowGroups* flows = nullptr;        // flow= state of the run (run_jobs provides it)
};

// Errors are set-up failures (a file cannot be opened, an engine refuses);
// an I/O error during a job is recorded in that job's result (fio's
// continue_on_error=none: the job stops, others go on).
Result<RunResult> run_jobs(const JobFile& jobs, const RunOptions& options);

}  // namespace cxlpool::io
