// SPDX-License-Identifier: Apache-2.0
#include "ssd_error_report.hpp"

#include <cstring>

namespace cxlpool::daemon {

std::optional<std::string> SsdErrorReport::update(const kvcache::SsdStoreStats& stats, uint64_t now_ns) {
  if (stats.write_errors == logged_errors_ && stats.write_dropped == logged_dropped_) return std::nullopt;
  if (logged_once_ && now_ns - logged_ns_ < kIntervalNs) return std::nullopt;
  std::string line = "SSD log " + path_ + ": " + std::to_string(stats.write_errors - logged_errors_) +
                     " write(s) failed and " + std::to_string(stats.write_dropped - logged_dropped_) +
                     " chunk(s) dropped";
  if (logged_once_) line += " in the last " + std::to_string((now_ns - logged_ns_) / 1'000'000'000ull) + " s";
  if (stats.last_write_error != 0) line += std::string(" (latest: ") + std::strerror(stats.last_write_error) + ")";
  logged_errors_ = stats.write_errors;
  logged_dropped_ = stats.write_dropped;
  logged_ns_ = now_ns;
  logged_once_ = true;
  return line;
}

}  // namespace cxlpool::daemon
