// SPDX-License-Identifier: Apache-2.0
// The job options cxlpool-io knows: fio's names (and aliases), how each value
// is parsed into JobSpec, and the cross-option checks done once a section is
// complete. Used by the job file parser and by command-line overrides.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "job_spec.hpp"

namespace cxlpool::io {

// A job while its options are being read.
struct JobDraft {
  JobSpec spec;
  std::uint32_t kb_base = 1024;
  std::map<std::string, int, std::less<>> lines;  // canonical option -> line it was set on
  std::vector<std::string> explicit_names;        // filename= entries before directory= is applied
};

// Applies one option; `value` is nullopt for a bare flag. Errors (EINVAL)
// read "option 'key': why" ("... unknown" or "... not supported by cxlpool-io").
Result<void> apply_option(JobDraft& draft, std::string_view key, std::optional<std::string_view> value, int line);

// Checks what depends on several options (engine options against the
// engine, io_uring-only flags, hipri without direct=1, ...) and resolves
// derived values (iodepth batches, file names of clone 0). Errors read
// "origin:line: option 'key': why" using the line the option was set on.
Result<void> finalize_draft(JobDraft& draft, std::string_view origin);

// File names of one clone: filename= entries with directory= prefixed to
// relative ones, or fio's generated "jobname.clone.filenumber".
std::vector<std::string> clone_filenames(const JobDraft& draft, std::uint32_t clone);

// "origin:line: " or "origin: " when line is 0.
std::string where(std::string_view origin, int line);

}  // namespace cxlpool::io
