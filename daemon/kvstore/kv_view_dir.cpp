// SPDX-License-Identifier: Apache-2.0
#include "kv_view_dir.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace cxlpool::daemon {

Result<void> check_view_dir(const std::string& dir) {
  const std::string what = "kvstore.view_dir " + dir;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return fail_errno(what);
  if (S_ISLNK(st.st_mode)) return fail(ELOOP, what + " is a symbolic link; give the directory itself");
  if (!S_ISDIR(st.st_mode)) return fail(ENOTDIR, what + " is not a directory");
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return fail_errno(what);
  if (static_cast<unsigned long>(fs.f_type) != TMPFS_MAGIC) {
    char magic[24];
    std::snprintf(magic, sizeof magic, "%#lx", static_cast<unsigned long>(fs.f_type));
    return fail(EINVAL, what + " is not on tmpfs (file system magic " + magic +
                            "): mount one there, e.g. mount -t tmpfs -o huge=within_size,mode=0700 cxlpool-kv " + dir);
  }
  return {};
}

// /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPEROPTS".
// The mount whose point is the longest prefix of dir holds it.
std::string view_dir_huge_pages(const std::string& dir) {
  std::ifstream info("/proc/self/mountinfo");
  std::string line, best_point, best_huge;
  bool found = false;
  while (std::getline(info, line)) {
    std::istringstream in(line);
    std::string id, parent, dev, root, point, word;
    if (!(in >> id >> parent >> dev >> root >> point)) continue;
    const bool holds = dir == point || (dir.rfind(point, 0) == 0 && (point == "/" || dir[point.size()] == '/'));
    if (!holds || (found && point.size() < best_point.size())) continue;
    while (in >> word && word != "-") {
    }
    std::string type, source, options;
    if (!(in >> type >> source >> options)) continue;
    std::string huge = "never";
    std::istringstream opts(options);
    for (std::string opt; std::getline(opts, opt, ',');) {
      if (opt.rfind("huge=", 0) == 0) huge = opt.substr(5);
    }
    found = true;
    best_point = point;
    best_huge = type == "tmpfs" ? huge : "";
  }
  return best_huge;
}

Result<UniqueFd> create_view_file(const std::string& dir, const std::string& name, uint64_t bytes) {
  UniqueFd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0400));
  if (!fd) return fail_errno("kvstore.view_dir " + dir + ": creating " + name);
  if (::fchmod(fd.get(), 0400) != 0) return fail_errno("fchmod " + name);
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return fail_errno("kvstore.view_dir " + dir + ": sizing " + name);
  return fd;
}

}  // namespace cxlpool::daemon
