// SPDX-License-Identifier: Apache-2.0
// One job clone: its files, engines, buffers and offset generators (set up
// on the caller's thread, so set-up errors surface before anything runs),
// then the submit/reap loop on its own thread.
#pragma once

#include <atomic>
#include <memory>

#include "../stats/run_result.hpp"
#include "cxlpool/common/result.hpp"
#include "runner.hpp"

namespace cxlpool::io {

class JobWorker {
 public:
  static Result<std::unique_ptr<JobWorker>> prepare(const JobSpec& job, const RunOptions& options);
  ~JobWorker();

  // Runs the job to its end (io_size, runtime, an I/O error, or *stop).
  void run();
  // Ends the job early from another thread (another job's exitall); it
  // reports what it did, as on *stop.
  void request_stop();
  JobResult& result();

 private:
  struct State;
  explicit JobWorker(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace cxlpool::io
