// SPDX-License-Identifier: Apache-2.0
// Turns the SSD log's failure counters into log lines an operator sees when
// the failures happen, without flooding the journal while a device fails
// every write: at most one line per interval, carrying the counts since
// the previous line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cxlpool/kvcache/ssd_store.hpp"

namespace cxlpool::daemon {

class SsdErrorReport {
 public:
  static constexpr uint64_t kIntervalNs = 10'000'000'000ull;

  explicit SsdErrorReport(std::string path) : path_(std::move(path)) {}

  // The line to log now, or nullopt: nothing new since the last line, or
  // the last line is younger than kIntervalNs (the counts then wait for the
  // next call after it).
  std::optional<std::string> update(const kvcache::SsdStoreStats& stats, uint64_t now_ns);

 private:
  std::string path_;
  uint64_t logged_errors_ = 0;
  uint64_t logged_dropped_ = 0;
  uint64_t logged_ns_ = 0;
  bool logged_once_ = false;
};

}  // namespace cxlpool::daemon
