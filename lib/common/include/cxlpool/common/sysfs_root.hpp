// SPDX-License-Identifier: Apache-2.0
// Reads kernel pseudo-files below an injectable root, so discovery code runs
// against fixture trees in tests and against "/" in production.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool {

class SysfsRoot {
 public:
  explicit SysfsRoot(std::filesystem::path root = "/") : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  // `relative` is an absolute kernel path such as "/sys/devices/system/node".
  std::filesystem::path resolve(const std::string& relative) const;
  bool exists(const std::string& relative) const;

  // Whole file, trailing newline stripped.
  Result<std::string> read_string(const std::string& relative) const;
  Result<int64_t> read_int(const std::string& relative) const;
  // Entries of a directory whose names start with `prefix`, sorted.
  std::vector<std::string> list(const std::string& relative, const std::string& prefix = "") const;

 private:
  std::filesystem::path root_;
};

// Parses a kernel cpulist/nodelist such as "0-3,8,10-11". Empty input → empty.
Result<std::vector<int>> parse_id_list(const std::string& text);

}  // namespace cxlpool
