// SPDX-License-Identifier: Apache-2.0
#include "kv_view_dir.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace cxlpool::daemon {
namespace {

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<UniqueFd> open_view_dir(const std::string& dir, uid_t owner) {
  const std::string what = "kvstore.view_dir " + dir;
  // O_NOFOLLOW with O_DIRECTORY says ENOTDIR of a link: lstat first, to
  // name it; the open's O_NOFOLLOW still holds if it changes in between.
  struct stat link {};
  if (::lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    return fail(ELOOP, what + " is a symbolic link; give the directory itself");
  }
  UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return fail_errno(what);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail_errno(what);
  if (st.st_uid != owner || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "0%o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(EPERM, what + ": owner uid " + std::to_string(st.st_uid) + ", mode " + mode +
                           "; it must be the daemon's (uid " + std::to_string(owner) +
                           ") and writable by nobody else, or a client could give a view a name");
  }
  struct statfs fs {};
  if (::fstatfs(fd.get(), &fs) != 0) return fail_errno(what);
  if (static_cast<unsigned long>(fs.f_type) != TMPFS_MAGIC) {
    char magic[24];
    std::snprintf(magic, sizeof magic, "%#lx", static_cast<unsigned long>(fs.f_type));
    return fail(EINVAL, what + " is not on tmpfs (file system magic " + magic +
                            "): mount one there, e.g. mount -t tmpfs -o huge=within_size,size=0,mode=0700 cxlpool-kv " +
                            dir);
  }
  if (fs.f_blocks != 0) {
    return fail(EINVAL, what + ": its tmpfs has a size limit; a full tmpfs answers a write through a mapping with "
                               "SIGBUS, and readers can fill it by touching their views: mount it with size=0");
  }
  return fd;
}

Result<void> check_view_dir(const std::string& dir, uid_t owner) {
  auto fd = open_view_dir(dir, owner);
  if (!fd) return tl::unexpected(fd.error());
  return {};
}

// mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPEROPTS". huge= is
// the superblock's, so any mount of dir's device tells it (bind mounts too).
std::string view_dir_huge_pages(const std::string& dir, std::string_view mountinfo, std::string_view shmem_enabled) {
  if (shmem_enabled.find("[deny]") != std::string_view::npos) return "deny";
  if (shmem_enabled.find("[force]") != std::string_view::npos) return "force";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "";
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::istringstream lines{std::string(mountinfo)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string id, parent, mount_dev, word;
    if (!(in >> id >> parent >> mount_dev) || mount_dev != dev) continue;
    while (in >> word && word != "-") {
    }
    std::string type, source, options;
    if (!(in >> type >> source >> options) || type != "tmpfs") return "";
    std::string huge = "never";
    std::istringstream opts(options);
    for (std::string opt; std::getline(opts, opt, ',');) {
      if (opt.rfind("huge=", 0) == 0) huge = opt.substr(5);
    }
    return huge;
  }
  return "";
}

std::string view_dir_huge_pages(const std::string& dir) {
  return view_dir_huge_pages(dir, read_text("/proc/self/mountinfo"),
                             read_text("/sys/kernel/mm/transparent_hugepage/shmem_enabled"));
}

bool huge_pages_in_views(std::string_view words) {
  return words == "always" || words == "within_size" || words == "force";
}

Result<UniqueFd> create_view_file(int dir_fd, const std::string& dir, const std::string& name, uint64_t bytes) {
  const std::string what = "kvstore.view_dir " + dir;
  UniqueFd fd(::openat(dir_fd, ".", O_TMPFILE | O_EXCL | O_RDWR | O_CLOEXEC, 0400));
  if (!fd) return fail_errno(what + ": creating " + name);
  if (auto ok = finish_view(fd.get(), what + ": " + name, bytes); !ok) return tl::unexpected(ok.error());
  return fd;
}

Result<void> finish_view(int fd, const std::string& what, uint64_t bytes) {
  if (::fchmod(fd, 0400) != 0) return fail_errno("fchmod " + what);
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return fail_errno("ftruncate " + what);
  return {};
}

}  // namespace cxlpool::daemon
