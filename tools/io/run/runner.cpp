// SPDX-License-Identifier: Apache-2.0
#include "runner.hpp"

#include <time.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <thread>
#include <vector>

#include "../engines/engine.hpp"
#include "job_worker.hpp"

namespace cxlpool::io {
namespace {

std::string ctime_text(std::time_t t) {
  char buf[64] = {};
  std::tm tm{};
  ::localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return buf;
}

}  // namespace

Result<RunResult> run_jobs(const JobFile& file, const RunOptions& options) {
  RunResult out;
  out.timestamp_unix = static_cast<std::uint64_t>(std::time(nullptr));
  out.time_text = ctime_text(static_cast<std::time_t>(out.timestamp_unix));
  // Whatever engines shared across jobs is closed when the run ends, however it ends.
  struct SharedStateCloser {
    ~SharedStateCloser() { close_engines_shared_state(); }
  } closer;
  int last_group = 0;
  for (const JobSpec& job : file.jobs) last_group = std::max(last_group, job.group);
  for (int group = 0; group <= last_group; ++group) {
    if (options.stop != nullptr && options.stop->load()) break;
    // Set every job of the group up first: a job that cannot start stops
    // the run before any of its group has done I/O.
    std::vector<std::unique_ptr<JobWorker>> workers;
    for (const JobSpec& job : file.jobs) {
      if (job.group != group) continue;
      auto w = JobWorker::prepare(job, options);
      if (!w) return tl::unexpected(w.error());
      workers.push_back(std::move(*w));
    }
    if (workers.empty()) continue;
    if (workers.size() == 1) {
      workers[0]->run();
    } else {
      std::vector<std::thread> threads;
      threads.reserve(workers.size());
      for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
      for (auto& t : threads) t.join();
    }
    for (auto& w : workers) out.jobs.push_back(std::move(w->result()));
  }
  return out;
}

}  // namespace cxlpool::io
