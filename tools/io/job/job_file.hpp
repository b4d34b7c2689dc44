// SPDX-License-Identifier: Apache-2.0
// Parsing fio-syntax job files: [global] then job sections, key=value or bare
// flags, ';' and '#' comments, ${VAR} from the environment, include-free.
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

// `origin` names the text in messages ("job.fio", "profile layer-stream").
// Errors (EINVAL) read "origin:line: option 'name': why".
Result<JobFile> parse_job_file(std::string_view text, std::string_view origin, const EnvLookup& env);

// Applies `key=value` overrides (the command line's --set / fio-style
// --name=value options) to every job, with the same validation.
Result<void> apply_overrides(JobFile& file, const std::vector<std::string>& assignments);

}  // namespace cxlpool::io
