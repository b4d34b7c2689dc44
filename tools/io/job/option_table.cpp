// SPDX-License-Identifier: Apache-2.0
#include "option_table.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>

#include "../trace/trace.hpp"
#include "engine_options.hpp"
#include "placement_parsers.hpp"
#include "priority_parsers.hpp"
#include "value_parsers.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kNsPerUs = 1000;
constexpr std::uint64_t kNsPerSecond = 1000000000ull;
// A bare log flag names the log after the job, which a [global] section
// cannot know yet.
constexpr std::string_view kJobNamePlaceholder = "$jobname";

using Value = std::optional<std::string_view>;
using Handler = Result<void> (*)(JobDraft&, Value);

struct Option {
  std::string_view name;
  std::string_view alias;
  Handler handler;
};

Result<std::string_view> need(Value value) {
  if (!value || trim(*value).empty()) return fail(EINVAL, "needs a value");
  return trim(*value);
}

template <typename T>
Result<T> bounded(Value value, std::uint64_t lo, std::uint64_t hi) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  auto n = parse_uint(*text);
  if (!n) return tl::unexpected(n.error());
  if (*n < lo || *n > hi) {
    return fail(EINVAL, std::to_string(*n) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<T>(*n);
}

Result<std::uint32_t> block_size(std::string_view text, std::uint32_t kb_base) {
  auto bytes = parse_size(text, kb_base);
  if (!bytes) return tl::unexpected(bytes.error());
  if (*bytes == 0) return fail(EINVAL, "block size must be greater than 0");
  if (*bytes > std::numeric_limits<std::uint32_t>::max()) return fail(EINVAL, "block size is larger than 4 GiB - 1");
  return static_cast<std::uint32_t>(*bytes);
}

template <typename T>
Result<void> set_bounded(T& field, Value value, std::uint64_t lo, std::uint64_t hi) {
  auto n = bounded<T>(value, lo, hi);
  if (!n) return tl::unexpected(n.error());
  field = *n;
  return {};
}

Result<void> set_flag(bool& field, Value value) {
  auto on = parse_bool(value);
  if (!on) return tl::unexpected(on.error());
  field = *on;
  return {};
}

Result<void> set_count(std::uint32_t& field, Value value, std::uint32_t min, std::uint32_t max) {
  auto n = bounded<std::uint32_t>(value, min, max);
  if (!n) return tl::unexpected(n.error());
  field = *n;
  return {};
}

Result<void> set_size(std::uint64_t& field, const JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  auto bytes = parse_size(*text, d.kb_base);
  if (!bytes) return tl::unexpected(bytes.error());
  field = *bytes;
  return {};
}

Result<void> set_time(std::uint64_t& field, Value value, std::uint64_t unit) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  auto ns = parse_time_ns(*text, unit);
  if (!ns) return tl::unexpected(ns.error());
  field = *ns;
  return {};
}

Result<void> set_log(std::string& field, Value value) {
  if (!value || trim(*value).empty()) {
    field = std::string(kJobNamePlaceholder);
    return {};
  }
  field = std::string(trim(*value));
  return {};
}

// Runs `each(direction, text)` for the directions a per-direction list sets.
template <typename Each>
Result<void> per_direction(Value value, Each each) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  auto fields = split_directions(*text);
  if (!fields) return tl::unexpected(fields.error());
  for (int dir = 0; dir < 2; ++dir) {
    if (!(*fields)[dir]) continue;
    auto r = each(dir, std::string_view(*(*fields)[dir]));
    if (!r) return r;
  }
  return {};
}

// A per-direction option whose every value `parse` turns into what the
// direction's slot of `field` holds.
template <typename T, typename Parse>
Result<void> set_per_direction(T (&field)[2], Value value, Parse parse) {
  return per_direction(value, [&](int dir, std::string_view text) -> Result<void> {
    auto parsed = parse(text);
    if (!parsed) return tl::unexpected(parsed.error());
    field[dir] = std::move(*parsed);
    return {};
  });
}

Result<void> set_rw(JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  auto spec = parse_rw_spec(*text, d.kb_base);
  if (!spec) return tl::unexpected(spec.error());
  d.spec.rw = spec->mode;
  d.spec.seq_skip = spec->seq_skip;
  d.spec.random_run = spec->random_run;
  return {};
}

// A rate list's third (trim) entry limits trims, which cxlpool-io never
// issues (rw= refuses trim modes): inert, as in fio for a job without
// trims, so it is dropped rather than refused.
Value without_trim_limit(Value value) {
  if (!value) return value;
  const std::string_view text = *value;
  const auto first = text.find(',');
  if (first == std::string_view::npos) return value;
  const auto second = text.find(',', first + 1);
  if (second == std::string_view::npos) return value;
  return text.substr(0, second);
}

Result<void> set_index_list(std::vector<int>& field, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  auto list = parse_index_list(*text, kMaxCpuIndex);
  if (!list) return tl::unexpected(list.error());
  field = std::move(*list);
  return {};
}

Result<void> set_text(std::string& field, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  field = std::string(*text);
  return {};
}

// A keyword option: `value` must be one of `names`; returns its index.
Result<std::size_t> keyword(Value value, std::initializer_list<std::string_view> names) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  std::size_t i = 0;
  std::string all;
  for (std::string_view name : names) {
    if (*text == name) return i;
    all += (all.empty() ? "" : ", ") + std::string(name);
    ++i;
  }
  return fail(EINVAL, "'" + std::string(*text) + "' is not one of " + all);
}

Result<void> set_filename(JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  // ':' separates files as in fio; "\:" is a literal colon.
  d.explicit_names.clear();
  std::string current;
  for (std::size_t i = 0; i < text->size(); ++i) {
    char c = (*text)[i];
    if (c == '\\' && i + 1 < text->size() && (*text)[i + 1] == ':') {
      current += ':';
      ++i;
    } else if (c == ':') {
      if (current.empty()) return fail(EINVAL, "empty file name in '" + std::string(*text) + "'");
      d.explicit_names.push_back(std::move(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (current.empty()) return fail(EINVAL, "empty file name in '" + std::string(*text) + "'");
  d.explicit_names.push_back(std::move(current));
  return {};
}

Result<void> set_directory(JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  if (text->find(':') != std::string_view::npos) {
    return fail(EINVAL, "several directories ('" + std::string(*text) + "') are not supported by cxlpool-io");
  }
  d.spec.directory = std::string(*text);
  return {};
}

Result<void> set_ioengine(JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  if (!is_engine_name(*text)) {
    std::string names;
    for (auto name : engine_names()) names += (names.empty() ? "" : ", ") + std::string(name);
    return fail(EINVAL, "'" + std::string(*text) + "' is not supported by cxlpool-io (" + names + ")");
  }
  d.spec.ioengine = std::string(*text);
  return {};
}

Result<void> set_verify(JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  if (*text == "crc32c" || *text == "crc32c-intel") {
    d.spec.verify = VerifyMode::kCrc32c;
  } else if (*text == "0") {
    d.spec.verify = VerifyMode::kNone;
  } else {
    return fail(EINVAL, "'" + std::string(*text) + "' is not supported by cxlpool-io (crc32c or 0)");
  }
  return {};
}

Result<void> set_trace_format(JobDraft& d, Value value) {
  auto text = need(value);
  if (!text) return tl::unexpected(text.error());
  if (!is_trace_format(*text)) return fail(EINVAL, "'" + std::string(*text) + "' is not bpftrace or fio-iolog");
  d.spec.trace_format = std::string(*text);
  return {};
}

const Option kOptions[] = {
    {"name", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       d.spec.name = std::string(*text);
       return {};
     }},
    {"description", "", [](JobDraft&, Value v) -> Result<void> {
       // A label fio only prints; accepted so existing job files load.
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       return {};
     }},
    {"thread", "threads", [](JobDraft&, Value v) -> Result<void> {
       // cxlpool-io always runs jobs as threads (fio's thread=1); the
       // processes of thread=0 would only separate address spaces.
       auto on = parse_bool(v);
       if (!on) return tl::unexpected(on.error());
       return {};
     }},
    {"kb_base", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       if (*text != "1024" && *text != "1000") return fail(EINVAL, "must be 1024 or 1000");
       d.kb_base = *text == "1024" ? 1024 : 1000;
       return {};
     }},
    {"ioengine", "", set_ioengine},
    {"filename", "", set_filename},
    {"directory", "", set_directory},
    {"nrfiles", "", [](JobDraft& d, Value v) { return set_count(d.spec.nrfiles, v, 1, 65536); }},
    {"size", "", [](JobDraft& d, Value v) { return set_size(d.spec.size, d, v); }},
    {"offset", "", [](JobDraft& d, Value v) { return set_size(d.spec.offset, d, v); }},
    {"io_size", "io_limit", [](JobDraft& d, Value v) { return set_size(d.spec.io_size, d, v); }},
    {"rw", "readwrite", set_rw},
    {"rwmixread", "", [](JobDraft& d, Value v) { return set_count(d.spec.rwmixread, v, 0, 100); }},
    {"rwmixwrite", "", [](JobDraft& d, Value v) -> Result<void> {
       auto n = bounded<std::uint32_t>(v, 0, 100);
       if (!n) return tl::unexpected(n.error());
       d.spec.rwmixread = 100 - *n;
       return {};
     }},
    {"bs", "blocksize", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.bs, v, [&](std::string_view text) { return block_size(text, d.kb_base); });
     }},
    {"bsrange", "blocksize_range", [](JobDraft& d, Value v) {
       return per_direction(v, [&](int dir, std::string_view text) -> Result<void> {
         auto range = parse_bsrange(text, d.kb_base);
         if (!range) return tl::unexpected(range.error());
         d.spec.bsrange_min[dir] = range->min;
         d.spec.bsrange_max[dir] = range->max;
         return {};
       });
     }},
    {"bssplit", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.bssplit, v, [&](std::string_view text) { return parse_bssplit(text, d.kb_base); });
     }},
    {"iodepth", "", [](JobDraft& d, Value v) { return set_count(d.spec.iodepth, v, 1, 65536); }},
    {"iodepth_batch_submit", "iodepth_batch",
     [](JobDraft& d, Value v) { return set_count(d.spec.iodepth_batch_submit, v, 0, 65536); }},
    {"iodepth_batch_complete_min", "iodepth_batch_complete",
     [](JobDraft& d, Value v) { return set_count(d.spec.iodepth_batch_complete_min, v, 0, 65536); }},
    {"iodepth_batch_complete_max", "",
     [](JobDraft& d, Value v) { return set_count(d.spec.iodepth_batch_complete_max, v, 0, 65536); }},
    {"iodepth_low", "", [](JobDraft& d, Value v) { return set_count(d.spec.iodepth_low, v, 0, 65536); }},
    {"direct", "", [](JobDraft& d, Value v) { return set_flag(d.spec.direct, v); }},
    {"buffered", "", [](JobDraft& d, Value v) -> Result<void> {
       bool buffered = false;
       auto r = set_flag(buffered, v);
       if (r) d.spec.direct = !buffered;
       return r;
     }},
    {"runtime", "timeout", [](JobDraft& d, Value v) { return set_time(d.spec.runtime_ns, v, kNsPerSecond); }},
    {"time_based", "", [](JobDraft& d, Value v) { return set_flag(d.spec.time_based, v); }},
    {"ramp_time", "", [](JobDraft& d, Value v) { return set_time(d.spec.ramp_time_ns, v, kNsPerSecond); }},
    {"rate", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.rate_bytes, without_trim_limit(v),
                                [&](std::string_view text) { return parse_size(text, d.kb_base); });
     }},
    {"rate_iops", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.rate_iops, without_trim_limit(v), parse_uint);
     }},
    {"thinktime", "", [](JobDraft& d, Value v) { return set_time(d.spec.thinktime_ns, v, kNsPerUs); }},
    {"thinktime_blocks", "",
     [](JobDraft& d, Value v) { return set_count(d.spec.thinktime_blocks, v, 1, 0xffffffffu); }},
    {"random_distribution", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       auto spec = parse_distribution(*text);
       if (!spec) return tl::unexpected(spec.error());
       d.spec.random_distribution = spec->kind;
       d.spec.distribution_param = spec->param;
       d.spec.zones = std::move(spec->zones);
       return {};
     }},
    {"randrepeat", "", [](JobDraft& d, Value v) { return set_flag(d.spec.randrepeat, v); }},
    {"random_generator", "", [](JobDraft& d, Value v) -> Result<void> {
       auto k = keyword(v, {"tausworthe", "tausworthe64", "lfsr"});
       if (!k) return tl::unexpected(k.error());
       d.spec.random_generator = static_cast<RandomGenerator>(*k);
       return {};
     }},
    {"blockalign", "ba", [](JobDraft& d, Value v) -> Result<void> {
       // One alignment for reads and writes (fio's per-direction list with equal entries).
       std::uint64_t align[2] = {0, 0};
       auto r = set_per_direction(align, v, [&](std::string_view text) { return parse_size(text, d.kb_base); });
       if (!r) return r;
       if (align[0] != align[1]) return fail(EINVAL, "different alignments for reads and writes are not supported by cxlpool-io");
       d.spec.blockalign = align[0];
       return {};
     }},
    {"filesize", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       if (text->find('-') != std::string_view::npos)
         return fail(EINVAL, "a range of file sizes ('" + std::string(*text) + "') is not supported by cxlpool-io");
       return set_size(d.spec.filesize, d, v);
     }},
    {"allow_file_create", "", [](JobDraft& d, Value v) { return set_flag(d.spec.allow_file_create, v); }},
    {"offset_increment", "", [](JobDraft& d, Value v) { return set_size(d.spec.offset_increment, d, v); }},
    {"loops", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.loops, v, 1, 1ull << 32); }},
    {"number_ios", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       auto n = parse_uint(*text);
       if (!n) return tl::unexpected(n.error());
       d.spec.number_ios = *n;
       return {};
     }},
    {"startdelay", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       if (text->find('-') != std::string_view::npos)
         return fail(EINVAL, "a random start delay ('" + std::string(*text) + "') is not supported by cxlpool-io");
       return set_time(d.spec.startdelay_ns, v, kNsPerSecond);
     }},
    {"gtod_reduce", "", [](JobDraft& d, Value v) { return set_flag(d.spec.gtod_reduce, v); }},
    {"cpus_allowed", "", [](JobDraft& d, Value v) { return set_index_list(d.spec.cpus_allowed, v); }},
    {"cpus_allowed_policy", "", [](JobDraft&, Value v) -> Result<void> {
       auto k = keyword(v, {"shared", "split"});
       if (!k) return tl::unexpected(k.error());
       if (*k == 1) return fail(EINVAL, "'split' is not supported by cxlpool-io (shared)");
       return {};
     }},
    {"numa_cpu_nodes", "", [](JobDraft& d, Value v) { return set_index_list(d.spec.numa_cpu_nodes, v); }},
    {"numa_mem_policy", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       auto policy = parse_mem_policy(*text);
       if (!policy) return tl::unexpected(policy.error());
       d.spec.numa_mem_policy = std::move(*policy);
       return {};
     }},
    {"io_submit_mode", "", [](JobDraft& d, Value v) -> Result<void> {
       auto k = keyword(v, {"inline", "offload"});
       if (!k) return tl::unexpected(k.error());
       d.spec.io_submit_offload = *k == 1;
       return {};
     }},
    {"rate_process", "", [](JobDraft& d, Value v) -> Result<void> {
       auto k = keyword(v, {"linear", "poisson"});
       if (!k) return tl::unexpected(k.error());
       d.spec.rate_poisson = *k == 1;
       return {};
     }},
    {"ratemin", "rate_min", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.ratemin_bytes, without_trim_limit(v),
                                [&](std::string_view text) { return parse_size(text, d.kb_base); });
     }},
    {"rate_iops_min", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.ratemin_iops, without_trim_limit(v), parse_uint);
     }},
    {"ratecycle", "", [](JobDraft& d, Value v) -> Result<void> {
       auto n = bounded<std::uint64_t>(v, 1, 86400000);
       if (!n) return tl::unexpected(n.error());
       d.spec.ratecycle_ns = *n * 1000000ull;
       return {};
     }},
    {"new_group", "", [](JobDraft& d, Value v) { return set_flag(d.spec.new_group, v); }},
    {"wait_for", "", [](JobDraft& d, Value v) { return set_text(d.spec.wait_for, v); }},
    {"exitall", "", [](JobDraft& d, Value v) { return set_flag(d.spec.exitall, v); }},
    {"zonemode", "", [](JobDraft& d, Value v) -> Result<void> {
       auto k = keyword(v, {"none", "strided", "zbd"});
       if (!k) return tl::unexpected(k.error());
       d.spec.zone_strided = *k == 1;
       d.spec.zone_zbd = *k == 2;
       return {};
     }},
    {"zonecapacity", "", [](JobDraft& d, Value v) { return set_size(d.spec.zonecapacity, d, v); }},
    {"max_open_zones", "", [](JobDraft& d, Value v) { return set_count(d.spec.max_open_zones, v, 0, 1u << 24); }},
    {"read_beyond_wp", "", [](JobDraft& d, Value v) { return set_flag(d.spec.read_beyond_wp, v); }},
    {"zonesize", "", [](JobDraft& d, Value v) { return set_size(d.spec.zonesize, d, v); }},
    {"zonerange", "", [](JobDraft& d, Value v) { return set_size(d.spec.zonerange, d, v); }},
    {"zoneskip", "", [](JobDraft& d, Value v) { return set_size(d.spec.zoneskip, d, v); }},
    {"log_offset", "", [](JobDraft& d, Value v) { return set_flag(d.spec.log_offset, v); }},
    {"log_prio", "", [](JobDraft& d, Value v) { return set_flag(d.spec.log_prio, v); }},
    {"dedupe_percentage", "", [](JobDraft& d, Value v) { return set_count(d.spec.dedupe_percentage, v, 0, 100); }},
    {"dedupe_mode", "", [](JobDraft& d, Value v) -> Result<void> {
       auto k = keyword(v, {"repeat", "working_set"});
       if (!k) return tl::unexpected(k.error());
       d.spec.dedupe_working_set = *k == 1;
       return {};
     }},
    {"dedupe_working_set_percentage", "",
     [](JobDraft& d, Value v) { return set_count(d.spec.dedupe_working_set_percentage, v, 0, 100); }},
    {"dedupe_global", "", [](JobDraft& d, Value v) { return set_flag(d.spec.dedupe_global, v); }},
    {"buffer_compress_percentage", "",
     [](JobDraft& d, Value v) { return set_count(d.spec.buffer_compress_percentage, v, 0, 100); }},
    {"buffer_compress_chunk", "", [](JobDraft& d, Value v) -> Result<void> {
       std::uint64_t bytes = 0;
       if (auto ok = set_size(bytes, d, v); !ok) return ok;
       if (bytes > UINT32_MAX) return fail(EINVAL, "larger than 4 GiB - 1");
       d.spec.buffer_compress_chunk = static_cast<std::uint32_t>(bytes);
       return {};
     }},
    {"latency_target", "", [](JobDraft& d, Value v) { return set_time(d.spec.latency_target_ns, v, kNsPerUs); }},
    {"latency_window", "", [](JobDraft& d, Value v) { return set_time(d.spec.latency_window_ns, v, kNsPerUs); }},
    {"latency_percentile", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       auto p = parse_double(*text);
       if (!p) return tl::unexpected(p.error());
       if (!(*p > 0 && *p <= 100)) return fail(EINVAL, "must be in (0, 100]");
       d.spec.latency_percentile = *p;
       return {};
     }},
    {"latency_run", "", [](JobDraft&, Value v) -> Result<void> {
       auto on = parse_bool(v);
       if (!on) return tl::unexpected(on.error());
       if (*on) return fail(EINVAL, "1 (keep adjusting the depth after the search) is not supported by cxlpool-io");
       return {};
     }},
    {"prio", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.prio, v, 0, kMaxPrioLevel); }},
    {"prioclass", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.prioclass, v, 0, kMaxPrioClass); }},
    {"cmdprio_percentage", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.cmdprio_percentage, v,
                                [](std::string_view t) { return bounded<std::uint32_t>(t, 0, 100); });
     }},
    {"cmdprio_class", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.cmdprio_class, v, [](std::string_view t) { return bounded<int>(t, 0, kMaxPrioClass); });
     }},
    {"cmdprio", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.cmdprio, v, [](std::string_view t) { return bounded<int>(t, 0, kMaxPrioLevel); });
     }},
    {"cmdprio_bssplit", "", [](JobDraft& d, Value v) {
       return set_per_direction(d.spec.cmdprio_bssplit, v,
                                [&](std::string_view t) { return parse_cmdprio_bssplit(t, d.kb_base); });
     }},
    {"ss", "steadystate", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       const auto colon = text->find(':');
       if (colon == std::string_view::npos) return fail(EINVAL, "needs metric:limit (iops:10%, bw_slope:1%)");
       auto metric = keyword(text->substr(0, colon), {"iops", "iops_slope", "bw", "bw_slope"});
       if (!metric) return tl::unexpected(metric.error());
       std::string_view limit = trim(text->substr(colon + 1));
       d.spec.ss_percent = !limit.empty() && limit.back() == '%';
       if (d.spec.ss_percent) limit.remove_suffix(1);
       auto value = parse_double(limit);
       if (!value) return tl::unexpected(value.error());
       if (*value < 0) return fail(EINVAL, "the limit must not be negative");
       d.spec.ss_metric = static_cast<SteadyMetric>(*metric + 1);
       d.spec.ss_limit = *value;
       return {};
     }},
    {"ss_dur", "steadystate_duration", [](JobDraft& d, Value v) { return set_time(d.spec.ss_dur_ns, v, kNsPerSecond); }},
    {"ss_ramp", "steadystate_ramp_time", [](JobDraft& d, Value v) { return set_time(d.spec.ss_ramp_ns, v, kNsPerSecond); }},
    {"exit_what", "", [](JobDraft& d, Value v) -> Result<void> {
       auto k = keyword(v, {"group", "stonewall", "all"});
       if (!k) return tl::unexpected(k.error());
       d.spec.exit_what = static_cast<ExitWhat>(*k);
       return {};
     }},
    {"flow", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.flow, v, 0, 0x7fffffff); }},
    {"flow_id", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.flow_id, v, 0, 0x7fffffff); }},
    {"flow_sleep", "", [](JobDraft& d, Value v) { return set_time(d.spec.flow_sleep_ns, v, kNsPerUs); }},
    {"norandommap", "", [](JobDraft& d, Value v) { return set_flag(d.spec.norandommap, v); }},
    {"randseed", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       auto n = parse_uint(*text);
       if (!n) return tl::unexpected(n.error());
       d.spec.randseed = *n;
       return {};
     }},
    {"fixedbufs", "", [](JobDraft& d, Value v) { return set_flag(d.spec.fixedbufs, v); }},
    {"registerfiles", "", [](JobDraft& d, Value v) { return set_flag(d.spec.registerfiles, v); }},
    {"sqthread_poll", "", [](JobDraft& d, Value v) { return set_flag(d.spec.sqthread_poll, v); }},
    {"sqthread_poll_cpu", "", [](JobDraft& d, Value v) { return set_count(d.spec.sqthread_poll_cpu, v, 0, 4095); }},
    {"hipri", "", [](JobDraft& d, Value v) { return set_flag(d.spec.hipri, v); }},
    {"verify", "", set_verify},
    {"verify_backlog", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.verify_backlog, v, 0, 1ull << 32); }},
    {"verify_dump", "", [](JobDraft& d, Value v) { return set_flag(d.spec.verify_dump, v); }},
    {"percentile_list", "", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       auto list = parse_percentile_list(*text);
       if (!list) return tl::unexpected(list.error());
       d.spec.percentile_list = std::move(*list);
       return {};
     }},
    {"write_lat_log", "", [](JobDraft& d, Value v) { return set_log(d.spec.write_lat_log, v); }},
    {"write_bw_log", "", [](JobDraft& d, Value v) { return set_log(d.spec.write_bw_log, v); }},
    {"write_iops_log", "", [](JobDraft& d, Value v) { return set_log(d.spec.write_iops_log, v); }},
    {"write_hist_log", "", [](JobDraft& d, Value v) { return set_log(d.spec.write_hist_log, v); }},
    {"log_avg_msec", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.log_avg_msec, v, 0, 86400000); }},
    {"log_hist_msec", "", [](JobDraft& d, Value v) { return set_bounded(d.spec.log_hist_msec, v, 0, 86400000); }},
    {"group_reporting", "", [](JobDraft& d, Value v) { return set_flag(d.spec.group_reporting, v); }},
    {"numjobs", "", [](JobDraft& d, Value v) { return set_count(d.spec.numjobs, v, 1, 4096); }},
    {"stonewall", "wait_for_previous", [](JobDraft& d, Value v) { return set_flag(d.spec.stonewall, v); }},
    {"read_iolog", "trace_file", [](JobDraft& d, Value v) -> Result<void> {
       auto text = need(v);
       if (!text) return tl::unexpected(text.error());
       d.spec.trace_file = std::string(*text);
       return {};
     }},
    {"trace_format", "", set_trace_format},
    {"replay_no_stall", "", [](JobDraft& d, Value v) { return set_flag(d.spec.replay_no_stall, v); }},
};

// fio options a job file may well contain that cxlpool-io does not
// implement: named as unsupported rather than unknown.
constexpr std::string_view kUnsupported[] = {
    "fsync", "fdatasync", "end_fsync", "fsync_on_close", "invalidate", "unlink",
    "create_on_open", "create_serialize", "buffer_pattern",
    "zero_buffers", "refill_buffers", "scramble_buffers",
    "rw_sequencer", "file_service_type", "fallocate",
    "fadvise_hint", "nice", "cpumask",
    "disable_lat", "disable_clat", "disable_slat", "clat_percentiles", "lat_percentiles", "slat_percentiles",
    "continue_on_error", "do_verify", "verify_pattern", "verify_interval",
    "ioscheduler", "write_iolog", "iolog", "replay_redirect", "lockmem", "iomem",
    "iomem_align", "allow_mounted_write", "unified_rw_reporting",
    "thinktime_spin", "filename_format",
    "ss_interval", "max_latency",
    "verify_fatal", "verify_async", "fill_device", "job_max_open_zones", "zone_reset_threshold",
    "zone_reset_frequency", "ignore_zone_limits", "ignore_error", "error_dump",
};

const Option* find_option(std::string_view key) {
  for (const auto& option : kOptions) {
    if (option.name == key || (!option.alias.empty() && option.alias == key)) return &option;
  }
  return nullptr;
}

Result<void> option_error(std::string_view key, const Error& e) {
  return fail(e.code, "option '" + std::string(key) + "': " + e.message);
}

bool is_set(const JobDraft& d, std::string_view key) { return d.lines.find(key) != d.lines.end(); }

int line_of(const JobDraft& d, std::string_view key) {
  auto it = d.lines.find(key);
  return it == d.lines.end() ? 0 : it->second;
}

Result<void> fail_at(std::string_view origin, const JobDraft& d, std::string_view key, const std::string& why) {
  return fail(EINVAL, where(origin, line_of(d, key)) + "option '" + std::string(key) + "': " + why);
}

}  // namespace

std::string where(std::string_view origin, int line) {
  if (line <= 0) return std::string(origin) + ": ";
  return std::string(origin) + ":" + std::to_string(line) + ": ";
}

Result<void> apply_option(JobDraft& draft, std::string_view key, std::optional<std::string_view> value, int line) {
  if (const Option* option = find_option(key)) {
    auto r = option->handler(draft, value);
    if (!r) return option_error(key, r.error());
    draft.lines[std::string(option->name)] = line;
    return {};
  }
  if (is_engine_option(key)) {
    if (!value || trim(*value).empty()) return fail(EINVAL, "option '" + std::string(key) + "': needs a value");
    draft.spec.engine_options[std::string(key)] = std::string(trim(*value));
    draft.lines[std::string(key)] = line;
    return {};
  }
  if (std::find(std::begin(kUnsupported), std::end(kUnsupported), key) != std::end(kUnsupported)) {
    return fail(EINVAL, "option '" + std::string(key) + "': not supported by cxlpool-io");
  }
  return fail(EINVAL, "option '" + std::string(key) + "': unknown");
}

Result<void> finalize_draft(JobDraft& d, std::string_view origin) {
  JobSpec& s = d.spec;
  for (const auto& [key, value] : s.engine_options) {
    auto r = check_engine_option(s.ioengine, key, value);
    if (!r) return fail_at(origin, d, key, r.error().message);
  }
  if (s.ioengine != "io_uring") {
    const std::pair<std::string_view, bool> flags[] = {
        {"fixedbufs", s.fixedbufs}, {"registerfiles", s.registerfiles}, {"sqthread_poll", s.sqthread_poll},
        {"sqthread_poll_cpu", is_set(d, "sqthread_poll_cpu")}, {"hipri", s.hipri}};
    for (const auto& [key, on] : flags) {
      if (on) return fail_at(origin, d, key, "only for ioengine=io_uring (this job uses " + s.ioengine + ")");
    }
  }
  if (s.hipri && !s.direct) {
    return fail_at(origin, d, "hipri", "needs direct=1 (polled completions bypass the page cache)");
  }
  for (int dir = 0; dir < 2; ++dir) {
    if (!s.bssplit[dir].empty() && s.bsrange_max[dir] != 0) {
      return fail_at(origin, d, "bssplit", "cannot be combined with bsrange for the same direction");
    }
  }
  if (s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth) s.iodepth_batch_submit = s.iodepth;
  if (s.iodepth_batch_complete_min > s.iodepth) s.iodepth_batch_complete_min = s.iodepth;
  // fio: an unset (or smaller) maximum is the minimum, a low-water mark of 0
  // or above iodepth is iodepth.
  if (s.iodepth_batch_complete_max < s.iodepth_batch_complete_min)
    s.iodepth_batch_complete_max = s.iodepth_batch_complete_min;
  if (s.iodepth_batch_complete_max > s.iodepth) s.iodepth_batch_complete_max = s.iodepth;
  if (s.iodepth_low == 0 || s.iodepth_low > s.iodepth) s.iodepth_low = s.iodepth;
  for (std::string* log : {&s.write_lat_log, &s.write_bw_log, &s.write_iops_log, &s.write_hist_log}) {
    if (*log == kJobNamePlaceholder) *log = s.name;
  }
  if (s.replay_no_stall && s.trace_file.empty()) {
    return fail_at(origin, d, "replay_no_stall", "needs read_iolog= (a trace to replay)");
  }
  if (is_set(d, "trace_format") && s.trace_file.empty()) {
    return fail_at(origin, d, "trace_format", "needs read_iolog= (a trace to replay)");
  }
  if (s.io_submit_offload && (s.ioengine == "psync" || s.ioengine == "sync" || s.ioengine == "mmap")) {
    return fail_at(origin, d, "io_submit_mode",
                   "offload needs an engine that submits without waiting (libaio, io_uring, null; this job uses " +
                       s.ioengine + ")");
  }
  if (s.ss_metric != SteadyMetric::kNone && s.ss_dur_ns < 2'000'000'000ull)
    return fail_at(origin, d, "ss", "needs ss_dur= of at least 2s (one sample a second)");
  for (std::string_view key : {"cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_bssplit"}) {
    if (is_set(d, key) && s.ioengine != "libaio" && s.ioengine != "io_uring")
      return fail_at(origin, d, key, "only for ioengine=libaio or io_uring (this job uses " + s.ioengine + ")");
  }
  if (is_set(d, "cmdprio_percentage") && is_set(d, "cmdprio_bssplit"))
    return fail_at(origin, d, "cmdprio_bssplit", "cannot be combined with cmdprio_percentage");
  if ((s.dedupe_percentage != 0 || s.buffer_compress_percentage != 0) && s.verify != VerifyMode::kNone)
    return fail_at(origin, d, s.dedupe_percentage != 0 ? "dedupe_percentage" : "buffer_compress_percentage",
                   "cannot be combined with verify= (verified blocks carry their own data)");
  if (s.dedupe_percentage == 0) {
    for (std::string_view key : {"dedupe_mode", "dedupe_working_set_percentage", "dedupe_global"}) {
      if (is_set(d, key)) return fail_at(origin, d, key, "needs dedupe_percentage=");
    }
  }
  if (s.latency_target_ns != 0 && s.latency_window_ns == 0)
    return fail_at(origin, d, "latency_target", "needs latency_window= (the time each depth is measured for)");
  if (s.latency_target_ns == 0) {
    for (std::string_view key : {"latency_window", "latency_percentile"}) {
      if (is_set(d, key)) return fail_at(origin, d, key, "needs latency_target=");
    }
  }
  if (s.verify_backlog != 0 && s.verify == VerifyMode::kNone)
    return fail_at(origin, d, "verify_backlog", "needs verify=crc32c");
  if (s.zone_strided && s.zonesize == 0) return fail_at(origin, d, "zonemode", "strided needs zonesize=");
  if (s.zone_zbd && s.zoneskip != 0) return fail_at(origin, d, "zoneskip", "must be 0 with zonemode=zbd");
  if (s.zone_zbd && s.zonecapacity > s.zonesize && s.zonesize != 0)
    return fail_at(origin, d, "zonecapacity", "is larger than zonesize");
  if (!s.zone_zbd) {
    for (std::string_view key : {"zonecapacity", "max_open_zones", "read_beyond_wp"}) {
      if (is_set(d, key)) return fail_at(origin, d, key, "needs zonemode=zbd");
    }
  }
  if (s.rate_poisson && s.rate_iops[0] == 0 && s.rate_iops[1] == 0 && s.rate_bytes[0] == 0 && s.rate_bytes[1] == 0) {
    return fail_at(origin, d, "rate_process", "poisson needs rate= or rate_iops=");
  }
  // fio's randrepeat=0: a seed from the clock, unless randseed= names one.
  if (!s.randrepeat && !is_set(d, "randseed")) {
    std::random_device entropy;
    s.randseed = (std::uint64_t{entropy()} << 32) ^ entropy() ^
                 static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  if (s.name.empty()) return fail(EINVAL, where(origin, s.line) + "a job needs a name");
  s.filenames_generated = d.explicit_names.empty();
  s.filenames = clone_filenames(d, s.clone);
  return {};
}

std::vector<std::string> clone_filenames(const JobDraft& d, std::uint32_t clone) {
  const JobSpec& s = d.spec;
  auto place = [&](const std::string& name) {
    if (s.directory.empty() || name.starts_with('/')) return name;
    return s.directory + (s.directory.ends_with('/') ? "" : "/") + name;
  };
  std::vector<std::string> out;
  if (!d.explicit_names.empty()) {
    for (const auto& name : d.explicit_names) out.push_back(place(name));
    return out;
  }
  for (std::uint32_t f = 0; f < s.nrfiles; ++f) {
    out.push_back(place(s.name + "." + std::to_string(clone) + "." + std::to_string(f)));
  }
  return out;
}

}  // namespace cxlpool::io
