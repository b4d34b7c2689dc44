// SPDX-License-Identifier: Apache-2.0
// Reading fio's --output-format=json (and json+): the figures a comparison
// needs, from real fio or from cxlpool-io (one reader for both, so our JSON
// is checked against the shape fio's tooling expects).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

struct FioLatency {
  std::uint64_t min = 0, max = 0;
  double mean = 0, stddev = 0;
  std::uint64_t n = 0;
  std::map<double, std::uint64_t> percentiles;  // 99.9 -> ns
  std::map<std::uint64_t, std::uint64_t> bins;  // json+: ns -> count

  // The percentile closest to p (within 1e-6), 0 when absent.
  std::uint64_t at(double p) const;
};

struct FioDirection {
  std::uint64_t io_bytes = 0;
  std::uint64_t bw_bytes = 0;   // bytes/s
  std::uint64_t bw_kib = 0;     // "bw", KiB/s
  double iops = 0;
  std::uint64_t runtime_ms = 0;
  std::uint64_t total_ios = 0;
  FioLatency slat, clat, lat;
};

struct FioJob {
  std::string name;
  int groupid = 0;
  int error = 0;
  FioDirection read, write;
  std::uint64_t job_runtime_ms = 0;
  double usr_cpu = 0, sys_cpu = 0;  // percent
  std::uint64_t ctx = 0;

  std::uint64_t total_ios() const { return read.total_ios + write.total_ios; }
  // CPU time per I/O in ns: (usr+sys)% x job runtime / I/Os, 0 without I/O.
  double cpu_ns_per_io() const;
};

struct FioReport {
  std::string version;   // "fio-3.33" or "cxlpool-io ..."
  std::uint64_t timestamp = 0;
  std::vector<FioJob> jobs;
};

// EINVAL with the reason when the text is not fio JSON (a missing key that
// fio always writes, a wrong type). Text before the first '{' (fio's own
// notes on stdout) is skipped.
Result<FioReport> read_fio_report(std::string_view json);

}  // namespace cxlpool::io
