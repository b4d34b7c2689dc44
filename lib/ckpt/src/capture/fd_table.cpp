// SPDX-License-Identifier: Apache-2.0
// Open descriptors: regular files, directories and stateless devices
// (/dev/null, /dev/zero, /dev/full, /dev/[u]random) are reopened by path at
// restore; fds 0-2 that are pipes, ttys or sockets are the restorer's
// caller's; the cxlpool control socket and region descriptors are the client
// library's to get again;
// eventfds, pipes and unix socketpairs whose both ends the process holds are
// made again (fd_objects.cpp). Anything else would restore wrong, so it is
// refused by name.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "capture_steps.hpp"
#include "fd_objects.hpp"
#include "cxlpool/ckpt/proc_text.hpp"

namespace cxlpool::ckpt {
namespace detail {
namespace {

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// What an fd that cannot be checkpointed is, in words.
std::string describe(const std::string& link, const struct stat& st) {
  static const std::pair<std::string_view, const char*> kAnon[] = {
      {"anon_inode:[eventfd]", "an eventfd"},       {"anon_inode:[eventpoll]", "an epoll instance"},
      {"anon_inode:[signalfd]", "a signalfd"},      {"anon_inode:[timerfd]", "a timerfd"},
      {"anon_inode:[io_uring]", "an io_uring"},     {"anon_inode:[pidfd]", "a pidfd"},
      {"anon_inode:[userfaultfd]", "a userfaultfd"}, {"anon_inode:inotify", "an inotify instance"},
      {"anon_inode:[fanotify]", "a fanotify group"}, {"anon_inode:[perf_event]", "a perf event"},
      {"anon_inode:bpf", "a BPF object"},
  };
  for (const auto& [prefix, what] : kAnon) {
    if (starts_with(link, prefix)) return what;
  }
  if (starts_with(link, "pidfd:")) return "a pidfd";
  if (starts_with(link, "socket:")) return "a socket (" + link + ")";
  if (starts_with(link, "pipe:")) return "a pipe (" + link + ")";
  if (starts_with(link, "/memfd:")) return "a memfd (" + link + ") that is not a cxlpool region";
  if (starts_with(link, "anon_inode:")) return "an anonymous inode (" + link + ")";
  if (S_ISCHR(st.st_mode)) return "a character device (" + link + ")";
  if (S_ISBLK(st.st_mode)) return "a block device (" + link + ")";
  if (S_ISFIFO(st.st_mode)) return "a FIFO (" + link + ")";
  if (S_ISSOCK(st.st_mode)) return "a socket (" + link + ")";
  return "an unsupported kind of file (" + link + ")";
}

// Character devices without state of their own, reopened by path like a file.
bool stateless_device(const std::string& link, const struct stat& st) {
  static const char* const kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  if (!S_ISCHR(st.st_mode)) return false;
  return std::any_of(std::begin(kDevices), std::end(kDevices), [&](const char* d) { return link == d; });
}

std::vector<int> open_fds(pid_t pid) {
  std::vector<int> out;
  const std::string dir = proc_path(pid, "fd");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

const CaptureOptions::RegionFile* region_file(const CaptureOptions& options, uint64_t dev, uint64_t ino) {
  for (const auto& f : options.region_files) {
    if (f.dev == dev && f.ino == ino) return &f;
  }
  return nullptr;
}

Result<void> check_region_restorable(pid_t pid, const CaptureOptions::RegionFile& file, const std::string& what) {
  const RegionRef& region = file.region;
  const std::string id = std::to_string(region.region_id);
  std::string why;
  if (region.kind == RegionKind::kNamed) return {};
  if (!region.name.empty()) {
    // A named one that is no longer named keeps its name for the message.
    why = " cxlpool region " + id + " ('" + region.name +
          "'), whose name was unlinked: a restored process could not open it again";
  } else if (file.lease_owner == pid) {
    return {};
  } else {
    // A clone's connection leases a region in place of its own process's
    // lease; one of another connection is shared with its holder, which
    // a copy would not be.
    why = " leased cxlpool region " + id + ", which belongs to " +
          (file.lease_owner > 0 ? "the connection of process " + std::to_string(file.lease_owner)
                                : std::string("no client's connection (a service's of cxlpoold)")) +
          ", not this process's: a restored process could not share it (use a named region)";
  }
  return fail(ENOTSUP, "checkpoint of " + std::to_string(pid) + " refused: " + what + why);
}

// One descriptor, classified from /proc alone (nothing of the process is
// touched): its entry, or the refusal.
Result<ClassifiedFd> classify_fd(pid_t pid, int fd, const CaptureOptions& options, FileTable& files,
                                 SocketTables& sockets, Manifest& m, bool& have_socket) {
  const std::string rel = "fd/" + std::to_string(fd);
  auto link = read_proc_link(pid, rel);
  if (!link) return tl::unexpected(link.error());
  struct stat st {};
  if (::stat(proc_path(pid, rel).c_str(), &st) != 0) return fail_errno("checkpoint: stat fd " + std::to_string(fd));
  auto info_text = read_proc(pid, "fdinfo/" + std::to_string(fd));
  if (!info_text) return tl::unexpected(info_text.error());
  auto info = parse_fdinfo(*info_text);
  if (!info) return tl::unexpected(info.error());
  ClassifiedFd c;
  FdEntry& e = c.entry;
  e.fd = fd;
  e.open_flags = info->flags;
  e.offset = info->pos;
  c.what = *link;
  const bool is_memfd = starts_with(*link, "/memfd:");
  const bool is_deleted = link->size() > 10 && link->compare(link->size() - 10, 10, " (deleted)") == 0;
  const auto* region = S_ISREG(st.st_mode) ? region_file(options, st.st_dev, st.st_ino) : nullptr;
  if (region != nullptr) {
    if (auto ok = check_region_restorable(pid, *region, "fd " + std::to_string(fd) + " holds"); !ok) {
      return tl::unexpected(ok.error());
    }
    RegionRef ref = region->region;
    ref.addr = ref.length = ref.offset = 0;
    ref.prot = 0;
    ref.writable = (info->flags & O_ACCMODE) != O_RDONLY;
    e.kind = FdKind::kCxlpoolRegion;
    e.file = static_cast<uint32_t>(m.regions.size());
    e.offset = 0;
    m.regions.push_back(std::move(ref));
  } else if (((S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) && starts_with(*link, "/") && !is_memfd) ||
             stateless_device(*link, st)) {
    if (is_deleted) {
      c.refusal = "a deleted file (" + *link + ")";
      return c;
    }
    auto index = files.add(*link, proc_path(pid, rel));
    if (!index) return tl::unexpected(index.error());
    e.kind = S_ISDIR(st.st_mode) ? FdKind::kDirectory : FdKind::kRegular;
    e.file = *index;
  } else if (S_ISSOCK(st.st_mode) && std::find(options.cxlpool_socket_inodes.begin(),
                                               options.cxlpool_socket_inodes.end(),
                                               st.st_ino) != options.cxlpool_socket_inodes.end()) {
    // One connection is re-made at restore; the library keeps one.
    if (have_socket) {
      c.refusal = "a second connection to cxlpoold";
      return c;
    }
    have_socket = true;
    e.kind = FdKind::kCxlpoolSocket;
    e.offset = 0;
  } else if (fd <= 2 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode))) {
    e.kind = FdKind::kStdio;
    e.offset = 0;
    c.what = "stdio (" + *link + "), the restorer's caller's at restore";
  } else if (starts_with(*link, "anon_inode:[eventfd]")) {
    e.kind = FdKind::kEventfd;
    e.offset = 0;
    c.object = eventfd_object(fd, *info, &c.refusal);
    if (c.object) {
      c.what = "an eventfd (counter " + std::to_string(c.object->counter) +
               (c.object->detail & kEventfdSemaphore ? ", semaphore)" : ")");
    }
  } else if (S_ISFIFO(st.st_mode) && starts_with(*link, "pipe:") && (info->flags & O_ACCMODE) == O_RDWR) {
    // Only reopening /proc/PID/fd/N makes one: it is neither end alone.
    c.refusal = "a pipe (" + *link + ") opened for reading and writing at once";
  } else if (S_ISFIFO(st.st_mode) && starts_with(*link, "pipe:")) {
    e.kind = FdKind::kPipe;
    e.offset = 0;
    FdObject o;
    o.fd = fd;
    o.object = st.st_ino;
    o.detail = kDefaultPipeBytes;
    c.object = o;
  } else if (S_ISSOCK(st.st_mode)) {
    e.kind = FdKind::kSocketPair;
    e.offset = 0;
    c.object = sockets.classify(c, st.st_ino);
  } else {
    c.refusal = describe(*link, st);
  }
  return c;
}

Result<std::vector<ClassifiedFd>> classify_fds(pid_t pid, const CaptureOptions& options, FileTable& files,
                                               Manifest& m) {
  std::vector<ClassifiedFd> out;
  SocketTables sockets(pid);
  bool have_socket = false;
  for (int fd : open_fds(pid)) {
    auto c = classify_fd(pid, fd, options, files, sockets, m, have_socket);
    if (!c) return tl::unexpected(c.error());
    out.push_back(std::move(*c));
  }
  pair_fd_objects(out);
  return out;
}

Result<void> capture_fds(pid_t pid, const CaptureOptions& options, FileTable& files, Manifest& m) {
  auto classified = classify_fds(pid, options, files, m);
  if (!classified) return tl::unexpected(classified.error());
  // Refusals first, so that no pipe is read for a capture that will not be.
  for (const ClassifiedFd& c : *classified) {
    if (!c.refusal.empty()) return unsupported(pid, "fd " + std::to_string(c.entry.fd) + " is " + c.refusal);
  }
  if (auto ok = read_pipe_contents(pid, *classified); !ok) return tl::unexpected(ok.error());
  for (ClassifiedFd& c : *classified) {
    m.fds.push_back(c.entry);
    if (c.object) m.fd_objects.push_back(std::move(*c.object));
  }
  return {};
}

}  // namespace detail

Result<std::vector<FdVerdict>> describe_fds(pid_t pid, const CaptureOptions& options) {
  Manifest scratch;
  detail::FileTable table(scratch.files);
  auto classified = detail::classify_fds(pid, options, table, scratch);
  if (!classified) return tl::unexpected(classified.error());
  std::vector<FdVerdict> out;
  for (const detail::ClassifiedFd& c : *classified) {
    out.push_back({c.entry.fd, c.refusal.empty(), c.refusal.empty() ? c.what : c.refusal});
  }
  return out;
}

}  // namespace cxlpool::ckpt
