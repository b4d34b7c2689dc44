// SPDX-License-Identifier: Apache-2.0
// Parsing fio-syntax job files: [global] then job sections, key=value or bare
// flags, ';' and '#' comments, ${VAR} from the environment, and fio's
// "include FILE" lines (relative to the including file's directory).
// Every unknown or unsupported option is an error naming the option and its
// line; nothing is silently ignored.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "job_spec.hpp"

namespace cxlpool::io {

// Looks an environment variable up; tests inject their own.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;
EnvLookup process_environment();

struct JobFile {
  std::vector<JobSpec> jobs;  // numjobs expanded (clones named like fio: the section name for each)
  int groups = 1;             // number of stonewall groups
};

struct ParseOptions {
  // fio's --section: only these job sections are read (and run); [global]
  // always is. Empty: every section.
  std::vector<std::string> sections;
  // Where "include FILE" looks for a relative FILE; empty: the directory of
  // `origin` when that names a file, else the working directory.
  std::string include_dir;
};

// Most nested includes followed (a file including itself is an error long
// before the stack is at risk).
inline constexpr int kMaxIncludeDepth = 16;

// `origin` names the text in messages ("job.fio", "profile layer-stream").
// Errors (EINVAL) read "origin:line: option 'name': why"; for lines of an
// included file the origin is that file.
Result<JobFile> parse_job_file(std::string_view text, std::string_view origin, const EnvLookup& env,
                               const ParseOptions& options = {});

// Applies `key=value` overrides (the command line's --set / fio-style
// --name=value options) to every job, with the same validation.
Result<void> apply_overrides(JobFile& file, const std::vector<std::string>& assignments);

}  // namespace cxlpool::io
