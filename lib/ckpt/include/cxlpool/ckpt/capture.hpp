// SPDX-License-Identifier: Apache-2.0
// Checkpoints a running process into an image: every thread is stopped with
// ptrace (seize + interrupt), its state and private memory are recorded, and
// it is let go again, or killed when the caller asks. Needs CAP_SYS_PTRACE
// (or a Yama ptrace_scope that lets the caller trace the target).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/ckpt/image_writer.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

struct CaptureOptions {
  // Kill the target (SIGKILL while it is still stopped) once the image is
  // complete, instead of letting it run on.
  bool kill_after = false;
  // The cxlpool regions the process has mapped (the daemon knows them): a
  // shared mapping that is exactly one of these is recorded as a
  // kCxlpoolRegion VMA instead of being refused.
  std::vector<RegionRef> regions;
  // Socket inodes that are the process's connections to the cxlpool control
  // socket (FdKind::kCxlpoolSocket); any other socket above fd 2 is refused,
  // but for a unix socketpair whose both ends the process holds.
  std::vector<uint64_t> cxlpool_socket_inodes;
  // The daemon's regions by their file (dev, ino of the memfd or hugetlbfs
  // file; RegionRef::addr and length unused): a shared mapping or a
  // descriptor of one of these is recorded as the region. A named region
  // is restored by name; a leased one only when the process's own
  // connection leased it and no other process maps it: its bytes are then
  // stored (Manifest::leases) and a restore leases one like it. Any other
  // is refused, naming it.
  struct RegionFile {
    uint64_t dev = 0, ino = 0;
    RegionRef region;
    uint64_t size = 0;       // the region's bytes
    uint32_t tier_id = 0;
    pid_t lease_owner = 0;   // leased: the pid of the connection that holds the lease (0: none)
  };
  std::vector<RegionFile> region_files;
  // Where cxlpoold listens (Manifest::cxlpool_socket, for the restore's new
  // connection), recorded when the process holds a control socket or a region.
  std::string cxlpool_socket;
  // For capture_to_image: the new file to write the image to (a tier's
  // tmpfs or hugetlbfs mount); empty: a memfd.
  std::string image_path;
  // A pidfd of the process the caller checked (-1: none). Once every thread
  // is frozen (a traced, stopped process cannot exit and have its pid
  // reused) the capture goes on only if this pidfd's process is still
  // alive, so the frozen process is the checked one: ESRCH otherwise.
  int pidfd = -1;
  // 0: no limit. Otherwise a finished image larger than this fails the
  // capture with EDQUOT before the target is killed or let go (it runs on,
  // as after any error): the caller's quota, checked while a kill_after
  // target can still be spared.
  uint64_t max_image_bytes = 0;
};

// Records process `pid` into `image` and finishes it (ImageWriter::finish).
// On any error the target is left running exactly as it was (registers and
// signal mask restored, every thread detached) and the image is unfinished;
// the message names what stopped the checkpoint. Errors:
//   EPERM / ESRCH  the target cannot be traced, or is gone
//   EBUSY          another tracer (a debugger, strace) holds the target
//   ENOTSUP        the process uses something a checkpoint cannot record:
//                  the message names it (a socket other than an unnamed unix
//                  socketpair held at both ends, pidfd, epoll, io_uring,
//                  signalfd, timerfd, userfaultfd, inotify fd, a pipe above
//                  fd 2 whose other end is elsewhere, an eventfd on a kernel
//                  that hides its semaphore flag, a device above fd 2, a
//                  memfd or deleted file, a
//                  shared mapping other than a cxlpool region, POSIX timers,
//                  a namespace other than the caller's, a seccomp filter, a
//                  root directory other than /, a zombie leader)
//   EIO / others   reading /proc, ptrace or the page copy failed
[[nodiscard]] Result<Manifest> capture_process(pid_t pid, const CaptureOptions& options, ImageWriter& image);

// What a capture would decide about each open descriptor of `pid`, read
// from /proc without stopping or touching the process (a pipe's buffered
// bytes are not looked at): for diagnostics. Errors: reading /proc.
struct FdVerdict {
  int fd = -1;
  bool supported = false;
  std::string what;  // supported: what it is; refused: why, as a capture would say it
};
[[nodiscard]] Result<std::vector<FdVerdict>> describe_fds(pid_t pid, const CaptureOptions& options);

// A finished image: its descriptor (read-write; a memfd is sealed against
// resizing) and, for a file, its path.
struct CapturedImage {
  Manifest manifest;
  UniqueFd fd;
  std::string path;
};

// capture_process into a memfd, or into the new file options.image_path,
// which is removed again when the capture fails. Errors: capture_process's,
// and creating the image (EEXIST when the file exists).
[[nodiscard]] Result<CapturedImage> capture_to_image(pid_t pid, const CaptureOptions& options);

}  // namespace cxlpool::ckpt
