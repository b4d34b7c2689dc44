// SPDX-License-Identifier: Apache-2.0
// cxlpool-io: fio-style I/O characterization. Jobs come from fio job files,
// a built-in profile, or fio-style --name=... options on the command line;
// results print like fio's (normal, json, json+).
//
// Exit status: 0 every job ran (or, with --parse-only, parsed); 1 a job failed (set-up or I/O error, verify
// mismatch); 2 usage or job-file errors; 77 an engine this machine cannot
// run (e.g. cuda without a GPU), with the reason on stderr.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "job/job_file.hpp"
#include "output/output.hpp"
#include "profiles/profiles.hpp"
#include "run/runner.hpp"

namespace {

using namespace cxlpool;
using namespace cxlpool::io;

constexpr int kExitJobError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSkipped = 77;

std::atomic<bool> g_stop{false};

extern "C" void on_interrupt(int) { g_stop.store(true); }

// fio-style job options after the tool's own: "--name=x" starts a job,
// options before the first --name are [global]; "--key=value" and bare
// "--flag" become job-file lines.
Result<std::string> command_line_job_text(const std::vector<std::string>& args, bool& has_jobs) {
  std::ostringstream global, jobs;
  bool in_job = false;
  has_jobs = false;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) != 0 || a.size() == 2)
      return fail(EINVAL, "unexpected argument '" + a + "' (job options are --key=value)");
    const std::string body = a.substr(2);
    const auto eq = body.find('=');
    const std::string key = body.substr(0, eq);
    if (key == "name") {
      if (eq == std::string::npos || eq + 1 == body.size()) return fail(EINVAL, "--name needs a job name");
      jobs << "[" << body.substr(eq + 1) << "]\n";
      in_job = true;
      has_jobs = true;
      continue;
    }
    (in_job ? jobs : global) << body << "\n";
  }
  if (!has_jobs) {
    if (!global.str().empty()) return fail(EINVAL, "job options given without --name=JOB");
    return std::string();
  }
  return "[global]\n" + global.str() + jobs.str();
}

void append_jobs(JobFile& into, JobFile&& more) {
  const int base = into.jobs.empty() ? 0 : into.groups;
  int report_base = 0;
  for (const JobSpec& j : into.jobs) report_base = std::max(report_base, j.report_group + 1);
  for (JobSpec& j : more.jobs) {
    j.group += base;
    j.report_group += report_base;
    into.jobs.push_back(std::move(j));
  }
  into.groups = base + more.groups;
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(errno ? errno : ENOENT, "cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The paths a run touches, for the device facts recorded with the results.
std::vector<std::string> distinct_targets(const JobFile& file) {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const JobSpec& j : file.jobs) {
    for (const std::string& f : j.filenames)
      if (seen.insert(f).second) out.push_back(f);
    if (j.filenames.empty()) {
      const std::string dir = j.directory.empty() ? "." : j.directory;
      if (seen.insert(dir).second) out.push_back(dir);
    }
  }
  return out;
}

std::string probe_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return path;
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

bool wants_logs(const JobFile& file) {
  for (const JobSpec& j : file.jobs)
    if (!j.write_lat_log.empty() || !j.write_bw_log.empty() || !j.write_iops_log.empty() ||
        !j.write_hist_log.empty())
      return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpool-io: fio-style I/O characterization for weight and KV-cache offload"};
  app.set_version_flag("--version", "cxlpool-io " CXLPOOL_VERSION_STRING);
  std::string output_format = "normal";
  std::string output_file;
  std::string plot_dir;
  std::string profile;
  std::vector<std::string> sets;
  std::vector<std::string> job_files;
  bool list = false;
  bool parse_only = false;
  ParseOptions parse_options;
  app.add_option("--output-format", output_format, "normal, json or json+")
      ->check(CLI::IsMember({"normal", "json", "json+"}));
  app.add_option("--output", output_file, "write the report to FILE instead of stdout");
  app.add_option("--plot", plot_dir, "write SVG charts and an index.html to DIR");
  app.add_option("--profile", profile, "run a built-in LLM profile (see --list-profiles)");
  app.add_option("--set", sets, "override a profile parameter or job option: key=value")->allow_extra_args(false);
  app.add_flag("--list-profiles", list, "list the built-in profiles with their sources");
  app.add_flag("--parse-only", parse_only, "parse the jobs and their options, print the job count, run nothing");
  app.add_option("--section", parse_options.sections, "run only this job section of the job files (repeatable)")
      ->allow_extra_args(false);
  app.add_option("jobfile", job_files, "fio job files");
  app.allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  if (list) {
    for (const ProfileInfo& p : list_profiles()) {
      std::cout << p.name << "\t" << p.description << "\n\tsource: " << p.source << "\n";
      for (const ProfileParam& param : p.params)
        std::cout << "\t--set " << param.name << "=" << (param.default_value.empty() ? "(required)" : param.default_value)
                  << "\t" << param.help << "\n";
    }
    return 0;
  }

  const EnvLookup env = process_environment();
  JobFile jobs;
  for (const std::string& path : job_files) {
    auto text = read_text(path);
    if (!text) {
      std::cerr << "cxlpool-io: " << text.error().message << "\n";
      return kExitUsage;
    }
    auto parsed = parse_job_file(*text, path, env, parse_options);
    if (!parsed) {
      std::cerr << "cxlpool-io: " << parsed.error().message << "\n";
      return kExitUsage;
    }
    append_jobs(jobs, std::move(*parsed));
  }
  if (!profile.empty()) {
    auto text = profile_job_text(profile, sets);
    if (!text) {
      std::cerr << "cxlpool-io: " << text.error().message << "\n";
      return kExitUsage;
    }
    auto parsed = parse_job_file(*text, "profile " + profile, env);
    if (!parsed) {
      std::cerr << "cxlpool-io: " << parsed.error().message << "\n";
      return kExitUsage;
    }
    append_jobs(jobs, std::move(*parsed));
  }
  bool cli_jobs = false;
  auto cli_text = command_line_job_text(app.remaining(), cli_jobs);
  if (!cli_text) {
    std::cerr << "cxlpool-io: " << cli_text.error().message << "\n";
    return kExitUsage;
  }
  if (cli_jobs) {
    auto parsed = parse_job_file(*cli_text, "command line", env);
    if (!parsed) {
      std::cerr << "cxlpool-io: " << parsed.error().message << "\n";
      return kExitUsage;
    }
    append_jobs(jobs, std::move(*parsed));
  }
  // --set without a profile applies to the job files and command-line jobs.
  if (profile.empty() && !sets.empty()) {
    if (auto ok = apply_overrides(jobs, sets); !ok) {
      std::cerr << "cxlpool-io: " << ok.error().message << "\n";
      return kExitUsage;
    }
  }
  if (jobs.jobs.empty()) {
    std::cerr << "cxlpool-io: no jobs (give a job file, --profile NAME, or --name=JOB with options)\n"
              << app.help();
    return kExitUsage;
  }

  if (parse_only) {
    std::cout << jobs.jobs.size() << (jobs.jobs.size() == 1 ? " job" : " jobs") << " in " << jobs.groups
              << (jobs.groups == 1 ? " group" : " groups") << ": options parsed\n";
    return 0;
  }

  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  const std::vector<std::string> targets = distinct_targets(jobs);
  std::vector<DeviceInfo> before;
  for (const std::string& t : targets) before.push_back(probe_device(probe_path(t)));

  RunOptions options;
  options.stop = &g_stop;
  auto run = run_jobs(jobs, options);
  if (!run) {
    std::cerr << "cxlpool-io: " << run.error().message << "\n";
    // An engine this machine cannot run is a skip, not a failure.
    return run.error().code == ENODEV ? kExitSkipped : kExitJobError;
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    DeviceInfo after = probe_device(probe_path(targets[i]));
    add_diskstats_delta(after, before[i]);
    after.path = targets[i];
    run->devices.push_back(std::move(after));
  }

  std::string report = output_format == "normal" ? render_human(*run) : render_json(*run, output_format == "json+");
  if (output_file.empty()) {
    std::cout << report;
    std::cout.flush();
  } else {
    std::ofstream out(output_file);
    out << report;
    if (!out) {
      std::cerr << "cxlpool-io: cannot write " << output_file << "\n";
      return kExitJobError;
    }
  }
  int status = 0;
  if (wants_logs(jobs)) {
    if (auto ok = write_logs(*run, std::filesystem::current_path()); !ok) {
      std::cerr << "cxlpool-io: " << ok.error().message << "\n";
      status = kExitJobError;
    }
  }
  if (!plot_dir.empty()) {
    if (auto ok = write_plots(*run, plot_dir); !ok) {
      std::cerr << "cxlpool-io: " << ok.error().message << "\n";
      status = kExitJobError;
    }
  }
  for (const JobResult& j : run->jobs) {
    if (j.error != 0) {
      std::cerr << "cxlpool-io: job " << j.spec.name << ": " << j.error_message << "\n";
      status = kExitJobError;
    }
  }
  return status;
}
