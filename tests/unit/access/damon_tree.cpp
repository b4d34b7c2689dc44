// SPDX-License-Identifier: Apache-2.0
#include "damon_tree.hpp"

#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cxlpool::testing {
namespace fs = std::filesystem;

DamonTree::DamonTree(const std::string& fixture) {
  char templ[] = "/tmp/cxlpool-damon-XXXXXX";
  if (::mkdtemp(templ) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  const fs::path from = fs::path(CXLPOOL_SYSFS_FIXTURES) / fixture / "sys";
  if (!fs::is_directory(from)) throw std::runtime_error("no fixture " + from.string());
  fs::copy(from, dir_ / "sys", fs::copy_options::recursive);
  // Fixtures may be checked out read-only; the copy must be writable.
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  }
}

DamonTree::~DamonTree() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

std::string DamonTree::read(const std::string& rel) const {
  std::ifstream in(admin() / rel);
  if (!in) return "<missing>";
  std::stringstream buf;
  buf << in.rdbuf();
  std::string s = buf.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void DamonTree::write(const std::string& rel, const std::string& value) const {
  const fs::path p = admin() / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::trunc) << value << "\n";
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
    std::ifstream in(e.path());
    std::stringstream buf;
    buf << in.rdbuf();
    files[fs::relative(e.path(), admin()).string()] = buf.str();
  }
  return files;
}

}  // namespace cxlpool::testing
