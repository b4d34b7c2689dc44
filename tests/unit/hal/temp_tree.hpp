// SPDX-License-Identifier: Apache-2.0
// A throw-away directory for tests that need a sysfs-like tree of their own
// (malformed files, edge cases), optionally seeded from a fixture.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace cxlpool::test {

class TempTree {
 public:
  TempTree() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cxlpool-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  explicit TempTree(const std::filesystem::path& fixture) : TempTree() {
    std::filesystem::copy(fixture, path_, std::filesystem::copy_options::recursive);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  ~TempTree() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  const std::filesystem::path& path() const { return path_; }

  // `relative` may start with '/' ("/sys/devices/system/node/online").
  void write(const std::string& relative, const std::string& content) const {
    const auto file = resolve(relative);
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::trunc) << content;
  }
  void remove(const std::string& relative) const { std::filesystem::remove_all(resolve(relative)); }
  std::filesystem::path resolve(const std::string& relative) const {
    std::string rel = relative;
    while (!rel.empty() && rel.front() == '/') rel.erase(rel.begin());
    return path_ / rel;
  }

 private:
  std::filesystem::path path_;
};

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(CXLPOOL_SYSFS_FIXTURES) / name;
}

}  // namespace cxlpool::test
