// SPDX-License-Identifier: Apache-2.0
#include "job_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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
  int report_group = 0;
  for (std::size_t i = 0; i < drafts.size(); ++i) {
    const JobDraft& d = drafts[i];
    if (d.spec.stonewall && i > 0) ++group;
    // fio: a stonewall starts a new reporting group too.
    if ((d.spec.stonewall || d.spec.new_group) && i > 0) ++report_group;
    for (std::uint32_t clone = 0; clone < d.spec.numjobs; ++clone) {
      JobSpec spec = d.spec;
      spec.clone = clone;
      spec.group = group;
      spec.report_group = report_group;
      spec.offset = d.spec.offset + std::uint64_t{clone} * d.spec.offset_increment;
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

// One line of the job text after includes are spliced in, with where it came from.
struct SourceLine {
  std::string text;
  std::string origin;
  int line = 0;
};

Result<std::string> read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return fail(ENOENT, "cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// fio's "include FILE": a whole line, the file's lines take its place.
std::optional<std::string_view> include_target(std::string_view line) {
  constexpr std::string_view kInclude = "include";
  if (!line.starts_with(kInclude) || line.size() == kInclude.size()) return std::nullopt;
  const char after = line[kInclude.size()];
  if (after != ' ' && after != '\t') return std::nullopt;
  return trim(line.substr(kInclude.size()));
}

Result<void> gather_lines(std::string_view text, const std::string& origin, const std::filesystem::path& dir,
                          int depth, std::vector<SourceLine>& out) {
  int line_no = 0;
  for (auto raw : split(text, '\n')) {
    ++line_no;
    auto cut = raw.find_first_of(";#");
    std::string_view line = trim(raw.substr(0, cut));
    auto target = include_target(line);
    if (!target) {
      out.push_back({std::string(line), origin, line_no});
      continue;
    }
    if (target->empty()) return fail(EINVAL, where(origin, line_no) + "include needs a file name");
    if (depth >= kMaxIncludeDepth)
      return fail(ELOOP, where(origin, line_no) + "includes nested deeper than " + std::to_string(kMaxIncludeDepth));
    std::filesystem::path path(*target);
    if (path.is_relative()) path = dir / path;
    auto body = read_whole_file(path);
    if (!body) return fail(body.error().code, where(origin, line_no) + "include: " + body.error().message);
    auto r = gather_lines(*body, path.string(), path.parent_path(), depth + 1, out);
    if (!r) return r;
  }
  return {};
}

std::filesystem::path include_base(std::string_view origin, const ParseOptions& options) {
  if (!options.include_dir.empty()) return options.include_dir;
  std::error_code ec;
  const std::filesystem::path path(origin);
  if (std::filesystem::is_regular_file(path, ec)) return path.parent_path();
  return std::filesystem::current_path(ec);
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

Result<JobFile> parse_job_file(std::string_view text, std::string_view origin, const EnvLookup& env,
                               const ParseOptions& options) {
  std::vector<SourceLine> lines;
  if (auto ok = gather_lines(text, std::string(origin), include_base(origin, options), 0, lines); !ok)
    return tl::unexpected(ok.error());
  JobDraft global;
  global.spec.name = "global";
  std::vector<JobDraft> drafts;
  JobDraft* current = nullptr;
  bool skipping = false;  // a section --section did not name
  for (const SourceLine& source : lines) {
    std::string_view line = source.text;
    const std::string& at = source.origin;
    const int line_no = source.line;
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']') return fail(EINVAL, where(at, line_no) + "section header without ']'");
      std::string_view name = trim(line.substr(1, line.size() - 2));
      if (name.empty()) return fail(EINVAL, where(at, line_no) + "empty section name");
      skipping = false;
      if (name == "global") {
        current = &global;
        continue;
      }
      if (!options.sections.empty() &&
          std::find(options.sections.begin(), options.sections.end(), name) == options.sections.end()) {
        skipping = true;
        continue;
      }
      JobDraft draft = global;  // a job sees the [global] options above it
      draft.spec.name = std::string(name);
      draft.spec.line = line_no;
      drafts.push_back(std::move(draft));
      current = &drafts.back();
      continue;
    }
    if (skipping) continue;
    if (!current) return fail(EINVAL, where(at, line_no) + "option outside a section");
    auto expanded = expand(line, env);
    if (!expanded) return fail(EINVAL, where(at, line_no) + expanded.error().message);
    auto [key, value] = split_assignment(*expanded);
    if (key.empty()) return fail(EINVAL, where(at, line_no) + "missing option name");
    auto r = apply_option(*current, key, value, line_no);
    if (!r) return fail(r.error().code, where(at, line_no) + r.error().message);
  }
  if (drafts.empty()) {
    if (!options.sections.empty()) return fail(EINVAL, std::string(origin) + ": no job section matches --section");
    return fail(EINVAL, std::string(origin) + ": no job sections");
  }
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
