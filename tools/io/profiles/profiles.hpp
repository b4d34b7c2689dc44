// SPDX-License-Identifier: Apache-2.0
// Built-in LLM I/O profiles: each generates fio job text (so it can be
// printed, saved and run by fio too) from a few named parameters that
// describe the model or workload rather than the I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

struct ProfileParam {
  std::string name;
  std::string default_value;  // empty: required
  std::string help;
};

struct ProfileInfo {
  std::string name;
  std::string description;  // one line
  std::string source;       // the study or system whose pattern it reproduces
  std::vector<ProfileParam> params;
};

// Every profile, in a stable order.
const std::vector<ProfileInfo>& list_profiles();

// The job text of profile `name`. `sets` are "key=value": a profile
// parameter's name sets that parameter; anything else is a job option
// (checked like a job file's) appended to every job so it wins over the
// profile's own value, e.g. "filename=/dev/nvme0n1" or "ioengine=io_uring".
// Errors (EINVAL): unknown profile, a bad parameter value, an unknown or
// unsupported job option, a required parameter left unset.
Result<std::string> profile_job_text(std::string_view name, const std::vector<std::string>& sets);

}  // namespace cxlpool::io
