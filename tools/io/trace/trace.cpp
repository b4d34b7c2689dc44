// SPDX-License-Identifier: Apache-2.0
#include "trace.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "../job/value_parsers.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kSectorBytes = 512;

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

std::string at(std::string_view origin, int line) { return std::string(origin) + ":" + std::to_string(line) + ": "; }

Result<std::uint64_t> number(std::string_view text, std::string_view what, std::string_view origin, int line) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return fail(EINVAL, at(origin, line) + std::string(what) + " '" + std::string(text) + "' is not a number");
  }
  return value;
}

Result<std::uint32_t> length(std::uint64_t bytes, std::string_view origin, int line) {
  if (bytes > std::numeric_limits<std::uint32_t>::max()) {
    return fail(EINVAL, at(origin, line) + "a request of " + std::to_string(bytes) + " bytes is too large");
  }
  return static_cast<std::uint32_t>(bytes);
}

// Makes times relative to the earliest operation.
void rebase(std::vector<TraceOp>& ops) {
  if (ops.empty()) return;
  std::uint64_t first = ops.front().time_ns;
  for (const auto& op : ops) first = std::min(first, op.time_ns);
  for (auto& op : ops) op.time_ns -= first;
}

Result<Trace> parse_bpftrace(std::string_view text, std::string_view origin) {
  Trace trace;
  int line_no = 0;
  for (auto raw : split(text, '\n')) {
    ++line_no;
    std::string_view line = trim(raw);
    if (line.empty() || line.starts_with("Attaching ")) continue;
    auto cols = fields(line);
    if (cols[0] == "nsecs") continue;  // a header line naming the columns
    if (cols.size() != 5) {
      return fail(EINVAL, at(origin, line_no) + "expected 5 columns (nsecs rwbs bytes sector nr_sector), got " +
                              std::to_string(cols.size()));
    }
    auto nsecs = number(cols[0], "nsecs", origin, line_no);
    if (!nsecs) return tl::unexpected(nsecs.error());
    auto bytes = number(cols[2], "bytes", origin, line_no);
    if (!bytes) return tl::unexpected(bytes.error());
    auto sector = number(cols[3], "sector", origin, line_no);
    if (!sector) return tl::unexpected(sector.error());
    auto nr_sector = number(cols[4], "nr_sector", origin, line_no);
    if (!nr_sector) return tl::unexpected(nr_sector.error());
    std::string_view rwbs = cols[1];
    if (rwbs.find_first_not_of("RWDFNSMAE") != std::string_view::npos) {
      return fail(EINVAL, at(origin, line_no) + "rwbs '" + std::string(rwbs) + "' is not a block-layer rwbs string");
    }
    if (rwbs.find('D') != std::string_view::npos) {
      ++trace.summary.discards;
      continue;
    }
    // bytes is 0 for some request kinds on older kernels; the sector count
    // then says how much moved.
    std::uint64_t size = *bytes != 0 ? *bytes : *nr_sector * kSectorBytes;
    bool write = rwbs.find('W') != std::string_view::npos;
    bool read = rwbs.find('R') != std::string_view::npos;
    if ((!write && !read) || size == 0) {
      ++trace.summary.flushes;
      continue;
    }
    auto len = length(size, origin, line_no);
    if (!len) return tl::unexpected(len.error());
    trace.ops.push_back(TraceOp{*nsecs, write ? kWriteDir : kReadDir, *sector * kSectorBytes, *len});
  }
  // Per-CPU output buffers can print requests slightly out of order.
  std::stable_sort(trace.ops.begin(), trace.ops.end(),
                   [](const TraceOp& a, const TraceOp& b) { return a.time_ns < b.time_ns; });
  rebase(trace.ops);
  return trace;
}

Result<Trace> parse_fio_iolog(std::string_view text, std::string_view origin) {
  Trace trace;
  std::set<std::string, std::less<>> files;
  int version = 0;
  int line_no = 0;
  std::uint64_t clock_ns = 0;  // version 2: the sum of "wait" actions
  for (auto raw : split(text, '\n')) {
    ++line_no;
    std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (version == 0) {
      if (line == "fio version 2 iolog") version = 2;
      else if (line == "fio version 3 iolog") version = 3;
      else return fail(EINVAL, at(origin, line_no) + "not a fio iolog version 2 or 3 (first line '" + std::string(line) + "')");
      continue;
    }
    auto cols = fields(line);
    std::uint64_t time_ns = clock_ns;
    if (version == 3) {
      auto stamp = number(cols[0], "time stamp", origin, line_no);
      if (!stamp) return tl::unexpected(stamp.error());
      time_ns = *stamp * 1000;
      cols.erase(cols.begin());
    }
    if (cols.size() != 2 && cols.size() != 4) {
      return fail(EINVAL, at(origin, line_no) + "expected '" + std::string(version == 3 ? "time " : "") +
                              "filename action [offset length]'");
    }
    files.emplace(cols[0]);
    std::string_view action = cols[1];
    if (cols.size() == 2) {
      if (action == "add" || action == "open" || action == "close") continue;
      return fail(EINVAL, at(origin, line_no) + "unknown file action '" + std::string(action) + "'");
    }
    auto offset = number(cols[2], "offset", origin, line_no);
    if (!offset) return tl::unexpected(offset.error());
    auto bytes = number(cols[3], "length", origin, line_no);
    if (!bytes) return tl::unexpected(bytes.error());
    if (action == "wait") {
      // Version 2 delays: the offset field holds microseconds.
      clock_ns += *offset * 1000;
      continue;
    }
    if (action == "sync" || action == "datasync") {
      ++trace.summary.flushes;
      continue;
    }
    if (action == "trim") {
      ++trace.summary.discards;
      continue;
    }
    if (action != "read" && action != "write") {
      return fail(EINVAL, at(origin, line_no) + "unknown action '" + std::string(action) + "'");
    }
    auto len = length(*bytes, origin, line_no);
    if (!len) return tl::unexpected(len.error());
    trace.ops.push_back(TraceOp{time_ns, action == "write" ? kWriteDir : kReadDir, *offset, *len});
  }
  if (version == 0) return fail(EINVAL, std::string(origin) + ": empty fio iolog");
  trace.summary.files = std::max<std::uint64_t>(1, files.size());
  rebase(trace.ops);
  return trace;
}

}  // namespace

bool is_trace_format(std::string_view format) {
  return format.empty() || format == "bpftrace" || format == "fio-iolog";
}

Result<Trace> parse_trace(std::string_view text, std::string_view format, std::string_view origin) {
  if (!is_trace_format(format)) {
    return fail(EINVAL, std::string(origin) + ": unknown trace format '" + std::string(format) + "' (bpftrace, fio-iolog)");
  }
  if (format.empty()) {
    auto body = trim(text);
    auto first = trim(body.substr(0, body.find('\n')));
    format = first.starts_with("fio version ") ? "fio-iolog" : "bpftrace";
  }
  return format == "bpftrace" ? parse_bpftrace(text, origin) : parse_fio_iolog(text, origin);
}

Result<Trace> load_trace(const std::string& path, std::string_view format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail_errno("open trace " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail_errno("read trace " + path);
  return parse_trace(text.str(), format, path);
}

Result<std::vector<TraceOp>> read_trace(const std::string& path, std::string_view format) {
  auto trace = load_trace(path, format);
  if (!trace) return tl::unexpected(trace.error());
  return std::move(trace->ops);
}

}  // namespace cxlpool::io
