// SPDX-License-Identifier: Apache-2.0
#include "fd_objects.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "process_creds.hpp"

namespace cxlpool::ckpt {
namespace {

const FdEntry& entry_of(const Manifest& m, int32_t fd) {
  for (const FdEntry& e : m.fds) {
    if (e.fd == fd) return e;
  }
  return m.fds.front();  // validate_manifest guarantees every object has its entry
}

// A new object's descriptor, moved out of the way of numbers still to be
// filled: the kernel hands out the lowest free ones, which may be any
// target number not yet placed.
Result<int> to_scratch(int fd, int scratch_from, std::vector<int>& scratch) {
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, scratch_from);
  const int saved = errno;
  ::close(fd);
  if (moved < 0) return fail(saved, fmt::format("moving a new descriptor above {}", scratch_from));
  scratch.push_back(moved);
  return moved;
}

// dup3 of the object's descriptor to the target's number, with the
// target's close-on-exec and status flags.
Result<void> place(int from, const FdEntry& e) {
  if (::dup3(from, e.fd, (e.open_flags & O_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
    return fail_errno(fmt::format("dup3 to fd {}", e.fd));
  }
  const int now = ::fcntl(e.fd, F_GETFL);
  const int want = (now & ~(O_NONBLOCK | O_APPEND)) | (static_cast<int>(e.open_flags) & O_NONBLOCK);
  if (now < 0 || (now != want && ::fcntl(e.fd, F_SETFL, want) != 0)) {
    return fail_errno(fmt::format("setting the status flags of fd {}", e.fd));
  }
  return {};
}

Result<void> fill_pipe(int write_end, const FdObject& o) {
  if (o.detail != kDefaultPipeBytes && ::fcntl(write_end, F_SETPIPE_SZ, static_cast<int>(o.detail)) < 0) {
    return fail_errno(fmt::format("F_SETPIPE_SZ {} for the pipe at fd {}", o.detail, o.fd));
  }
  std::size_t done = 0;
  while (done < o.contents.size()) {
    const ssize_t n = ::write(write_end, o.contents.data() + done, o.contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_errno(fmt::format("writing {} bytes back into the pipe at fd {}", o.contents.size(), o.fd));
    done += static_cast<std::size_t>(n);
  }
  return {};
}

// The address for messages: an abstract name as "@name" with its NULs as
// "@" (how /proc/net/unix shows it), a path as it is.
std::string address_text(const std::vector<uint8_t>& a) {
  std::string out(a.begin(), a.end());
  for (char& c : out) {
    if (c == 0) c = '@';
  }
  return out;
}

// A path still there from the checkpointed process: removed when it is a
// socket file nobody listens on any more; anything else is left alone.
Result<void> clear_stale_path(const sockaddr_un& addr, socklen_t len, const std::string& text, const FdObject& o) {
  const int32_t fd = o.fd;
  struct stat st {};
  if (::lstat(addr.sun_path, &st) != 0) {
    if (errno == ENOENT) return {};
    return fail_errno(fmt::format("lstat of {} for the listening socket at fd {}", text, fd));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return fail(EEXIST, fmt::format("the listening socket at fd {} binds {}, which is now a file that is not a socket",
                                    fd, text));
  }
  // Only a refused connect says nobody listens there: a connect that works,
  // a full queue, a socket of another type all say someone may.
  const int probe = ::socket(AF_UNIX, static_cast<int>(o.detail) | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (probe < 0) return fail_errno("probe socket");
  const int connected = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), len);
  const int why = errno;
  ::close(probe);
  if (connected == 0 || why != ECONNREFUSED) {
    return fail(EADDRINUSE, fmt::format("the listening socket at fd {} binds {}, where another socket listens now{}",
                                        fd, text, connected == 0 ? "" : fmt::format(" ({})", std::strerror(why))));
  }
  if (::unlink(addr.sun_path) != 0 && errno != ENOENT) {
    return fail_errno(fmt::format("unlinking the stale socket file {} for fd {}", text, fd));
  }
  return {};
}

// socket, bind and listen again, at a descriptor of its own. A path is
// cleared and bound as the process (as_process): the restorer may be root.
Result<int> make_listener(const FdObject& o, const Credentials& creds) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, o.contents.data(), o.contents.size());  // validated: within sun_path
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + o.contents.size());
  const std::string text = address_text(o.contents);
  const int fd = ::socket(AF_UNIX, static_cast<int>(o.detail) | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail_errno(fmt::format("socket for the listening socket at fd {}", o.fd));
  auto bound = as_process(creds, [&]() -> Result<void> {
    if (o.contents[0] != 0) {
      if (auto ok = clear_stale_path(addr, len, text, o); !ok) return ok;
    }
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
      const int saved = errno;
      if (saved == EADDRINUSE) {
        return fail(saved, fmt::format("the listening socket at fd {} cannot bind {} again: the name is in use",
                                       o.fd, text));
      }
      return fail(saved,
                  fmt::format("bind {} for the listening socket at fd {}: {}", text, o.fd, std::strerror(saved)));
    }
    return {};
  });
  if (!bound) {
    ::close(fd);
    return tl::unexpected(bound.error());
  }
  if (::listen(fd, static_cast<int>(o.counter)) != 0) {
    const int saved = errno;
    ::close(fd);
    return fail(saved, fmt::format("listen on {} for fd {}: {}", text, o.fd, std::strerror(saved)));
  }
  return fd;
}

}  // namespace

Result<void> recreate_fd_objects(const Manifest& m, int scratch_from) {
  std::vector<int> scratch;
  // Per kind and object: the descriptor(s) made for it.
  std::map<uint64_t, int> eventfds, sockets, listeners;
  std::map<uint64_t, std::pair<int, int>> pipes;
  auto made = [&]() -> Result<void> {
    for (const FdObject& o : m.fd_objects) {
      const FdEntry& e = entry_of(m, o.fd);
      int from = -1;
      if (e.kind == FdKind::kEventfd) {
        auto it = eventfds.find(o.object);
        if (it == eventfds.end()) {
          const int fd = ::eventfd(0, (o.detail & kEventfdSemaphore) ? EFD_SEMAPHORE : 0);
          if (fd < 0) return fail_errno(fmt::format("eventfd for fd {}", o.fd));
          // eventfd2's initial value is 32 bits; a write adds the whole
          // 64-bit counter (at most 2^64 - 2, which a write takes at once).
          if (o.counter > 0 && ::write(fd, &o.counter, sizeof o.counter) != sizeof o.counter) {
            const int saved = errno;
            ::close(fd);
            return fail(saved, fmt::format("setting the counter of the eventfd at fd {} to {}", o.fd, o.counter));
          }
          auto moved = to_scratch(fd, scratch_from, scratch);
          if (!moved) return tl::unexpected(moved.error());
          it = eventfds.emplace(o.object, *moved).first;
        }
        from = it->second;
      } else if (e.kind == FdKind::kPipe) {
        auto it = pipes.find(o.object);
        if (it == pipes.end()) {
          int ends[2];
          if (::pipe2(ends, O_CLOEXEC) != 0) return fail_errno(fmt::format("pipe2 for fd {}", o.fd));
          auto r = to_scratch(ends[0], scratch_from, scratch);
          auto w = r ? to_scratch(ends[1], scratch_from, scratch) : (::close(ends[1]), r);
          if (!w) return tl::unexpected(w.error());
          if (auto ok = fill_pipe(*w, o); !ok) return ok;
          it = pipes.emplace(o.object, std::pair{*r, *w}).first;
        }
        from = (e.open_flags & O_ACCMODE) == O_RDONLY ? it->second.first : it->second.second;
      } else if (e.kind == FdKind::kSocketPair) {
        auto it = sockets.find(o.object);
        if (it == sockets.end()) {
          int pair[2];
          if (::socketpair(AF_UNIX, static_cast<int>(o.detail) | SOCK_CLOEXEC, 0, pair) != 0) {
            return fail_errno(fmt::format("socketpair for fd {}", o.fd));
          }
          auto a = to_scratch(pair[0], scratch_from, scratch);
          auto b = a ? to_scratch(pair[1], scratch_from, scratch) : (::close(pair[1]), a);
          if (!b) return tl::unexpected(b.error());
          it = sockets.emplace(o.object, *a).first;
          sockets.emplace(o.peer, *b);
        }
        from = it->second;
      } else if (e.kind == FdKind::kUnixListener) {
        auto it = listeners.find(o.object);
        if (it == listeners.end()) {
          auto fd = make_listener(o, m.process.creds);
          if (!fd) return tl::unexpected(fd.error());
          auto moved = to_scratch(*fd, scratch_from, scratch);
          if (!moved) return tl::unexpected(moved.error());
          it = listeners.emplace(o.object, *moved).first;
        }
        from = it->second;
      }
      if (from < 0) return fail(EINVAL, fmt::format("fd {} has an object but no kind that takes one", o.fd));
      if (auto ok = place(from, e); !ok) return ok;
    }
    return {};
  };
  auto result = made();
  for (int fd : scratch) ::close(fd);
  return result;
}

}  // namespace cxlpool::ckpt
