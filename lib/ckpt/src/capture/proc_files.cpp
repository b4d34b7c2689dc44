// SPDX-License-Identifier: Apache-2.0
// Reading /proc/PID and the manifest's file table.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "capture_steps.hpp"

namespace cxlpool::ckpt::detail {

std::string proc_path(pid_t pid, const std::string& rest) { return "/proc/" + std::to_string(pid) + "/" + rest; }

Result<std::string> read_proc(pid_t pid, const std::string& rest) {
  const std::string path = proc_path(pid, rest);
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return fail_errno("checkpoint: read " + path);
  std::string out;
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const bool bad = std::ferror(f);
  const int saved = errno;
  std::fclose(f);
  if (bad) return fail(saved, errno_message("checkpoint: read " + path, saved));
  return out;
}

Result<std::string> read_proc_link(pid_t pid, const std::string& rest) {
  const std::string path = proc_path(pid, rest);
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  if (n < 0) return fail_errno("checkpoint: readlink " + path);
  if (static_cast<std::size_t>(n) == sizeof buf) return fail(ENAMETOOLONG, "checkpoint: " + path + " names a path too long");
  return std::string(buf, static_cast<std::size_t>(n));
}

Result<uint32_t> FileTable::add(const std::string& path, const std::string& stat_path) {
  struct stat st {};
  if (::stat(stat_path.c_str(), &st) != 0) return fail_errno("checkpoint: stat " + path);
  for (std::size_t i = 0; i < files_.size(); ++i) {
    if (files_[i].dev == st.st_dev && files_[i].ino == st.st_ino) return static_cast<uint32_t>(i);
  }
  FileRef f;
  f.path = path;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size() - 1);
}

tl::unexpected<Error> unsupported(pid_t pid, const std::string& what) {
  return fail(ENOTSUP, "checkpoint of " + std::to_string(pid) + " refused: " + what);
}

}  // namespace cxlpool::ckpt::detail
