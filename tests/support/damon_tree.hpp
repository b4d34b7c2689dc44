// SPDX-License-Identifier: Apache-2.0
// A private, writable copy of a committed DAMON fixture tree, and the few
// things the kernel would do to it that the tests play instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace cxlpool::testing {

struct TriedRegion {
  uint64_t start;
  uint64_t end;
  uint64_t nr_accesses;
};

class DamonTree {
 public:
  // Copies tests/fixtures/sysfs/<fixture>/sys into a fresh temporary
  // directory; the copy is removed on destruction.
  explicit DamonTree(const std::string& fixture);

  // The sysfs root to hand to the adapter.
  std::string sysfs_root() const { return dir_.resolve("sys").string(); }
  std::filesystem::path admin() const { return dir_.resolve("sys/kernel/mm/damon/admin"); }

  std::string read(const std::string& rel) const;  // trimmed; "<missing>" if absent
  void write(const std::string& rel, const std::string& value) const;
  void remove(const std::string& rel) const;

  // What the kernel does on "update_schemes_tried_regions": replaces the
  // scheme's tried regions.
  void set_tried_regions(const std::string& scheme_rel, const std::vector<TriedRegion>& regions) const;

  // Every file and its content, to prove what a call did or did not write.
  std::map<std::string, std::string> snapshot() const;

 private:
  test::TempDir dir_;
};

}  // namespace cxlpool::testing
