// SPDX-License-Identifier: Apache-2.0
// A private, throw-away directory for a test: created fresh (mkdtemp), empty
// or seeded with a copy of a fixture tree, and removed with everything under
// it when the object goes. Paths given to its helpers are relative to it and
// may start with '/' ("/sys/devices/system/node/online"), so sysfs-like
// trees read naturally.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace cxlpool::test {

class TempDir {
 public:
  // <parent>/cxlpool-<tag>-XXXXXX; `parent` empty: $TMPDIR or /tmp. Tests
  // that need O_DIRECT pass a parent on a disk file system (tmpfs may refuse
  // it). Throws std::system_error when the directory cannot be made.
  explicit TempDir(std::string_view tag = "test", const std::filesystem::path& parent = {});
  // A fresh directory holding a copy of `seed` (a fixture tree), every file
  // writable whatever the checkout's modes.
  static TempDir copy_of(const std::filesystem::path& seed, std::string_view tag = "test");
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path resolve(std::string_view relative) const;

  // Replaces the file's content, creating the directories above it.
  void write(std::string_view relative, std::string_view content) const;
  // The file's content; "" when it cannot be read.
  std::string read(std::string_view relative) const;
  // Removes a file or a directory tree; nothing when it is not there.
  void remove(std::string_view relative) const;
  // Copies the tree `from` to `relative` (the directory itself when empty)
  // and makes the copy writable.
  void copy_in(const std::filesystem::path& from, std::string_view relative = {}) const;

 private:
  std::filesystem::path path_;
};

}  // namespace cxlpool::test
