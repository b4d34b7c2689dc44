// SPDX-License-Identifier: Apache-2.0
#include "fio_report.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <type_traits>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace cxlpool::io {

namespace {

using Json = nlohmann::json;

// A number written as an object key; none when the key does not start with one.
template <typename Key>
std::optional<Key> number_key(const std::string& text) {
  char* end = nullptr;
  Key value{};
  if constexpr (std::is_floating_point_v<Key>) {
    value = std::strtod(text.c_str(), &end);
  } else {
    value = std::strtoull(text.c_str(), &end, 10);
  }
  if (end == text.c_str()) return std::nullopt;
  return value;
}

// Reports the first key fio always writes that is missing or mistyped, so
// a malformed report is named rather than read as zeros.
struct Reader {
  std::string error;

  const Json* child(const Json& obj, const char* key, const std::string& where) {
    if (!error.empty()) return nullptr;
    if (!obj.is_object() || !obj.contains(key)) {
      error = fmt::format("{}: missing \"{}\"", where, key);
      return nullptr;
    }
    return &obj.at(key);
  }

  std::uint64_t u64(const Json& obj, const char* key, const std::string& where) {
    const Json* v = child(obj, key, where);
    if (v == nullptr) return 0;
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    if (v->is_number_integer()) {
      const auto s = v->get<std::int64_t>();
      return s < 0 ? 0 : static_cast<std::uint64_t>(s);
    }
    if (v->is_number_float()) return static_cast<std::uint64_t>(std::llround(v->get<double>()));
    error = fmt::format("{}: \"{}\" is not a number", where, key);
    return 0;
  }

  double f64(const Json& obj, const char* key, const std::string& where) {
    const Json* v = child(obj, key, where);
    if (v == nullptr) return 0;
    if (!v->is_number()) {
      error = fmt::format("{}: \"{}\" is not a number", where, key);
      return 0;
    }
    return v->get<double>();
  }

  // The object at `key`, handed with its dotted path (for messages) to
  // `fill`; a missing one leaves the result default.
  template <typename T, typename Fill>
  T section(const Json& obj, const char* key, const std::string& where, Fill fill) {
    T out;
    if (const Json* v = child(obj, key, where); v != nullptr) fill(*v, where + "." + key, out);
    return out;
  }

  // An optional object of counts keyed by numbers ("percentile": decimal
  // keys, "bins": whole nanoseconds), each entry handed to `add` as (key,
  // count). False (and the entry named) at the first one that does not parse.
  template <typename Key, typename Add>
  bool counts(const Json& obj, const char* key, const std::string& where, Add add) {
    if (!obj.contains(key)) return true;
    for (const auto& [k, val] : obj.at(key).items()) {
      const auto number = number_key<Key>(k);
      if (!number || !val.is_number()) {
        error = fmt::format("{}.{}: bad entry \"{}\"", where, key, k);
        return false;
      }
      add(*number, val.template get<std::uint64_t>());
    }
    return true;
  }

  FioLatency latency(const Json& obj, const char* key, const std::string& where) {
    return section<FioLatency>(obj, key, where, [this](const Json& v, const std::string& here, FioLatency& lat) {
      lat.min = u64(v, "min", here);
      lat.max = u64(v, "max", here);
      lat.mean = f64(v, "mean", here);
      lat.stddev = f64(v, "stddev", here);
      lat.n = u64(v, "N", here);
      if (!counts<double>(v, "percentile", here, [&](double p, std::uint64_t n) { lat.percentiles[p] = n; })) return;
      counts<std::uint64_t>(v, "bins", here, [&](std::uint64_t ns, std::uint64_t n) { lat.bins[ns] += n; });
    });
  }

  FioDirection direction(const Json& job, const char* key, const std::string& where) {
    return section<FioDirection>(job, key, where, [this](const Json& v, const std::string& here, FioDirection& d) {
      d.io_bytes = u64(v, "io_bytes", here);
      d.bw_bytes = u64(v, "bw_bytes", here);
      d.bw_kib = u64(v, "bw", here);
      d.iops = f64(v, "iops", here);
      d.runtime_ms = u64(v, "runtime", here);
      d.total_ios = u64(v, "total_ios", here);
      d.slat = latency(v, "slat_ns", here);
      d.clat = latency(v, "clat_ns", here);
      d.lat = latency(v, "lat_ns", here);
    });
  }
};

}  // namespace

std::uint64_t FioLatency::at(double p) const {
  for (const auto& [q, v] : percentiles) {
    if (std::fabs(q - p) < 1e-6) return v;
  }
  return 0;
}

double FioJob::cpu_ns_per_io() const {
  const auto ios = total_ios();
  if (ios == 0) return 0;
  return (usr_cpu + sys_cpu) / 100.0 * static_cast<double>(job_runtime_ms) * 1e6 / static_cast<double>(ios);
}

Result<FioReport> read_fio_report(std::string_view json) {
  // fio may print notes ("fio: ...") on stdout ahead of the JSON document.
  std::size_t start = 0;
  while (start < json.size()) {
    if (json[start] == '{' && (start == 0 || json[start - 1] == '\n')) break;
    const auto nl = json.find('\n', start);
    if (nl == std::string_view::npos) {
      start = json.size();
      break;
    }
    start = nl + 1;
  }
  if (start >= json.size()) return fail(EINVAL, "fio report: no JSON object found");
  Json root = Json::parse(json.substr(start), nullptr, false);
  if (root.is_discarded()) return fail(EINVAL, "fio report: not valid JSON");

  Reader r;
  FioReport report;
  if (const Json* v = r.child(root, "fio version", "report"); v != nullptr) {
    if (!v->is_string()) return fail(EINVAL, "fio report: \"fio version\" is not a string");
    report.version = v->get<std::string>();
  }
  report.timestamp = r.u64(root, "timestamp", "report");
  const Json* jobs = r.child(root, "jobs", "report");
  if (jobs != nullptr && !jobs->is_array()) r.error = "report: \"jobs\" is not an array";
  if (r.error.empty()) {
    for (std::size_t i = 0; i < jobs->size() && r.error.empty(); ++i) {
      const Json& j = (*jobs)[i];
      const std::string where = fmt::format("jobs[{}]", i);
      FioJob job;
      if (const Json* n = r.child(j, "jobname", where); n != nullptr && n->is_string()) job.name = n->get<std::string>();
      job.groupid = static_cast<int>(r.u64(j, "groupid", where));
      job.error = static_cast<int>(r.u64(j, "error", where));
      job.read = r.direction(j, "read", where);
      job.write = r.direction(j, "write", where);
      job.job_runtime_ms = r.u64(j, "job_runtime", where);
      job.usr_cpu = r.f64(j, "usr_cpu", where);
      job.sys_cpu = r.f64(j, "sys_cpu", where);
      job.ctx = r.u64(j, "ctx", where);
      report.jobs.push_back(std::move(job));
    }
  }
  if (!r.error.empty()) return fail(EINVAL, "fio report: " + r.error);
  return report;
}

}  // namespace cxlpool::io
