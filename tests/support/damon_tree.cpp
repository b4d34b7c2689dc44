// SPDX-License-Identifier: Apache-2.0
#include "damon_tree.hpp"

#include <stdexcept>

#include "sysfs_fixture.hpp"
#include "whole_file.hpp"

namespace cxlpool::testing {
namespace fs = std::filesystem;

DamonTree::DamonTree(const std::string& fixture) : dir_("damon") {
  const fs::path from = test::sysfs_fixture(fixture) / "sys";
  if (!fs::is_directory(from)) throw std::runtime_error("no fixture " + from.string());
  dir_.copy_in(from, "sys");
}

std::string DamonTree::read(const std::string& rel) const {
  const fs::path p = admin() / rel;
  if (!fs::exists(p)) return "<missing>";
  std::string s = test::read_file(p);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void DamonTree::write(const std::string& rel, const std::string& value) const {
  test::write_file(admin() / rel, value + "\n");
}

void DamonTree::remove(const std::string& rel) const { fs::remove_all(admin() / rel); }

void DamonTree::set_tried_regions(const std::string& scheme_rel,
                                  const std::vector<TriedRegion>& regions) const {
  const fs::path tried = admin() / scheme_rel / "tried_regions";
  for (const auto& e : fs::directory_iterator(tried)) {
    if (e.is_directory()) fs::remove_all(e.path());
  }
  uint64_t total = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    const std::string r = scheme_rel + "/tried_regions/" + std::to_string(i);
    write(r + "/start", std::to_string(regions[i].start));
    write(r + "/end", std::to_string(regions[i].end));
    write(r + "/nr_accesses", std::to_string(regions[i].nr_accesses));
    write(r + "/age", "1");
    total += regions[i].end - regions[i].start;
  }
  write(scheme_rel + "/tried_regions/total_bytes", std::to_string(total));
}

std::map<std::string, std::string> DamonTree::snapshot() const {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(admin())) {
    if (!e.is_regular_file()) continue;
    files[fs::relative(e.path(), admin()).string()] = test::read_file(e.path());
  }
  return files;
}

}  // namespace cxlpool::testing
