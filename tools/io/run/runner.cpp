// SPDX-License-Identifier: Apache-2.0
#include "runner.hpp"

#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../engines/engine.hpp"
#include "flow_control.hpp"
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

// fio's wait_for: a job of the group starts once every clone of the job it
// names has ended. Clones still running are counted per name.
class EndedJobs {
 public:
  void expect(const std::string& name) {
    std::lock_guard lock(mu_);
    ++running_[name];
  }
  void ended(const std::string& name) {
    {
      std::lock_guard lock(mu_);
      --running_[name];
    }
    cv_.notify_all();
  }
  void wait(const std::string& name) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return running_[name] <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> running_;
};

// wait_for must name a job defined before this one (as in fio); a job it
// names in an earlier stonewall group has ended by the time this one runs.
Result<void> check_wait_for(const JobFile& file) {
  for (std::size_t i = 0; i < file.jobs.size(); ++i) {
    const JobSpec& job = file.jobs[i];
    if (job.wait_for.empty()) continue;
    bool found = false;
    for (std::size_t k = 0; k < i && !found; ++k)
      found = file.jobs[k].name == job.wait_for && file.jobs[k].name != job.name;
    if (!found) return fail(EINVAL, "job " + job.name + ": wait_for=" + job.wait_for + " names no job defined before it");
  }
  return {};
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
  if (auto ok = check_wait_for(file); !ok) return tl::unexpected(ok.error());
  int last_group = 0;
  for (const JobSpec& job : file.jobs) last_group = std::max(last_group, job.group);
  FlowGroups flows;
  RunOptions run_options = options;
  if (run_options.flows == nullptr) run_options.flows = &flows;
  std::atomic<bool> exit_all{false};  // an exitall job with exit_what=all has ended
  for (int group = 0; group <= last_group; ++group) {
    if (options.stop != nullptr && options.stop->load()) break;
    if (exit_all.load()) break;
    // Set every job of the group up first: a job that cannot start stops
    // the run before any of its group has done I/O.
    std::vector<std::unique_ptr<JobWorker>> workers;
    for (const JobSpec& job : file.jobs) {
      if (job.group != group) continue;
      auto w = JobWorker::prepare(job, run_options);
      if (!w) return tl::unexpected(w.error());
      workers.push_back(std::move(*w));
    }
    if (workers.empty()) continue;
    if (workers.size() == 1) {
      workers[0]->run();
      const JobSpec& spec = workers[0]->result().spec;
      if (spec.exitall && spec.exit_what == ExitWhat::kAll) exit_all.store(true);
    } else {
      EndedJobs ended;
      for (auto& w : workers) ended.expect(w->result().spec.name);
      // fio's exitall: the end of such a job stops the others exit_what
      // names (its reporting group, this stonewall group, or all).
      const auto on_exit = [&](const JobSpec& spec) {
        if (!spec.exitall) return;
        if (spec.exit_what == ExitWhat::kAll) exit_all.store(true);
        for (auto& other : workers) {
          if (spec.exit_what != ExitWhat::kGroup || other->result().spec.report_group == spec.report_group)
            other->request_stop();
        }
      };
      std::vector<std::thread> threads;
      threads.reserve(workers.size());
      for (auto& w : workers) {
        threads.emplace_back([&w, &ended, &on_exit] {
          const JobSpec spec = w->result().spec;
          if (!spec.wait_for.empty()) ended.wait(spec.wait_for);
          w->run();
          ended.ended(spec.name);
          on_exit(spec);
        });
      }
      for (auto& t : threads) t.join();
    }
    for (auto& w : workers) out.jobs.push_back(std::move(w->result()));
  }
  return out;
}

}  // namespace cxlpool::io
