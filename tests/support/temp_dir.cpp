// SPDX-License-Identifier: Apache-2.0
#include "temp_dir.hpp"

#include <stdlib.h>

#include <cerrno>
#include <system_error>

#include "whole_file.hpp"

namespace cxlpool::test {
namespace fs = std::filesystem;

TempDir::TempDir(std::string_view tag, const fs::path& parent) {
  const fs::path base = parent.empty() ? fs::temp_directory_path() : parent;
  std::string pattern = (base / ("cxlpool-" + std::string(tag) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "mkdtemp " + pattern);
  }
  path_ = pattern;
}

TempDir TempDir::copy_of(const fs::path& seed, std::string_view tag) {
  TempDir dir(tag);
  dir.copy_in(seed);
  return dir;
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path TempDir::resolve(std::string_view relative) const {
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  return path_ / relative;
}

void TempDir::write(std::string_view relative, std::string_view content) const {
  write_file(resolve(relative), content);
}

std::string TempDir::read(std::string_view relative) const { return read_file(resolve(relative)); }

void TempDir::remove(std::string_view relative) const { fs::remove_all(resolve(relative)); }

void TempDir::copy_in(const fs::path& from, std::string_view relative) const {
  const fs::path to = resolve(relative);
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  // A checkout may be read-only; tests write into their copy.
  fs::permissions(to, fs::perms::owner_all, fs::perm_options::add);
  for (const auto& entry : fs::recursive_directory_iterator(to)) {
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
  }
}

}  // namespace cxlpool::test
