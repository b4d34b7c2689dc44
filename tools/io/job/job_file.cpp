// SPDX-License-Identifier: Apache-2.0
#include "job_file.hpp"

#include <unistd.h>

#include <cstdlib>

#include "option_table.hpp"
#include "value_parsers.hpp"

namespace cxlpool::io {
namespace {

// fio's reserved names, usable as $name without braces.
std::optional<std::string> reserved_value(std::string_view name) {
  if (name == "ncpus") return std::to_string(sysconf(_SC_NPROCESSORS_ONLN));
  if (name == "pagesize") return std::to_string(sysconf(_SC_PAGESIZE));
  if (name == "mb_memory") {
    auto pages = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES));
    auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    return std::to_string(pages * page / (1024 * 1024));
  }
  return std::nullopt;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

Result<std::string> expand(std::string_view text, const EnvLookup& env) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') {
      out += text[i];
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      auto close = text.find('}', i + 2);
      if (close == std::string_view::npos) return fail(EINVAL, "unterminated ${ in '" + std::string(text) + "'");
      std::string_view name = text.substr(i + 2, close - i - 2);
      auto value = env ? env(name) : std::nullopt;
      if (!value) return fail(EINVAL, "environment variable '" + std::string(name) + "' is not set");
      out += *value;
      i = close;
      continue;
    }
    std::size_t end = i + 1;
    while (end < text.size() && is_name_char(text[end])) ++end;
    auto value = reserved_value(text.substr(i + 1, end - i - 1));
    if (value) {
      out += *value;
      i = end - 1;
    } else {
      out += '$';
    }
  }
  return out;
}

std::pair<std::string_view, std::optional<std::string_view>> split_assignment(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos) return {trim(text), std::nullopt};
  return {trim(text.substr(0, eq)), trim(text.substr(eq + 1))};
}

JobFile expand_clones(const std::vector<JobDraft>& drafts) {
  JobFile file;
  int group = 0;
  for (std::size_t i = 0; i < drafts.size(); ++i) {
    const JobDraft& d = drafts[i];
    if (d.spec.stonewall && i > 0) ++group;
    for (std::uint32_t clone = 0; clone < d.spec.numjobs; ++clone) {
      JobSpec spec = d.spec;
      spec.clone = clone;
      spec.group = group;
      spec.filenames = clone_filenames(d, clone);
      file.jobs.push_back(std::move(spec));
    }
  }
  file.groups = group + 1;
  return file;
}

// filename= entries as written, from names that have directory= applied.
std::vector<std::string> written_names(const JobSpec& spec) {
  if (spec.filenames_generated) return {};
  std::vector<std::string> names;
  std::string prefix = spec.directory.empty() ? "" : spec.directory + (spec.directory.ends_with('/') ? "" : "/");
  for (const auto& name : spec.filenames) {
    names.push_back(!prefix.empty() && name.starts_with(prefix) ? name.substr(prefix.size()) : name);
  }
  return names;
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

Result<JobFile> parse_job_file(std::string_view text, std::string_view origin, const EnvLookup& env) {
  JobDraft global;
  global.spec.name = "global";
  std::vector<JobDraft> drafts;
  JobDraft* current = nullptr;
  int line_no = 0;
  for (auto raw : split(text, '\n')) {
    ++line_no;
    // fio cuts a line at the first ';' or '#', wherever it is.
    auto cut = raw.find_first_of(";#");
    std::string_view line = trim(raw.substr(0, cut));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') return fail(EINVAL, where(origin, line_no) + "section header without ']'");
      std::string_view name = trim(line.substr(1, line.size() - 2));
      if (name.empty()) return fail(EINVAL, where(origin, line_no) + "empty section name");
      if (name == "global") {
        current = &global;
        continue;
      }
      JobDraft draft = global;  // a job sees the [global] options above it
      draft.spec.name = std::string(name);
      draft.spec.line = line_no;
      drafts.push_back(std::move(draft));
      current = &drafts.back();
      continue;
    }
    if (!current) return fail(EINVAL, where(origin, line_no) + "option outside a section");
    auto expanded = expand(line, env);
    if (!expanded) return fail(EINVAL, where(origin, line_no) + expanded.error().message);
    auto [key, value] = split_assignment(*expanded);
    if (key.empty()) return fail(EINVAL, where(origin, line_no) + "missing option name");
    auto r = apply_option(*current, key, value, line_no);
    if (!r) return fail(r.error().code, where(origin, line_no) + r.error().message);
  }
  if (drafts.empty()) return fail(EINVAL, std::string(origin) + ": no job sections");
  for (auto& draft : drafts) {
    auto r = finalize_draft(draft, origin);
    if (!r) return tl::unexpected(r.error());
  }
  return expand_clones(drafts);
}

Result<void> apply_overrides(JobFile& file, const std::vector<std::string>& assignments) {
  static constexpr std::string_view kOrigin = "command line";
  std::vector<JobDraft> drafts;
  for (const auto& job : file.jobs) {
    if (job.clone != 0) continue;
    JobDraft draft;
    draft.spec = job;
    draft.explicit_names = written_names(job);
    for (const auto& assignment : assignments) {
      auto [key, value] = split_assignment(assignment);
      if (key.empty()) return fail(EINVAL, where(kOrigin, 0) + "'" + assignment + "': missing option name");
      auto r = apply_option(draft, key, value, 0);
      if (!r) return fail(r.error().code, where(kOrigin, 0) + r.error().message);
    }
    auto r = finalize_draft(draft, kOrigin);
    if (!r) return tl::unexpected(r.error());
    drafts.push_back(std::move(draft));
  }
  file = expand_clones(drafts);
  return {};
}

}  // namespace cxlpool::io
