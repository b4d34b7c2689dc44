// SPDX-License-Identifier: Apache-2.0
// The steps of capture_process, each in its own file, over a process that
// FrozenProcess holds still.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "cxlpool/ckpt/capture.hpp"
#include "cxlpool/ckpt/image_writer.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"
#include "frozen_process.hpp"

namespace cxlpool::ckpt::detail {

std::string proc_path(pid_t pid, const std::string& rest);
// A whole /proc file (they are small and must be read in one go to be consistent).
Result<std::string> read_proc(pid_t pid, const std::string& rest);
// readlink of /proc/PID/<rest>.
Result<std::string> read_proc_link(pid_t pid, const std::string& rest);

// The manifest's files, each once (by device and inode).
class FileTable {
 public:
  explicit FileTable(std::vector<FileRef>& files) : files_(files) {}
  // `path` as the process names it; `stat_path` where to stat it (a
  // /proc/PID/map_files or fd link, which reaches the very file).
  Result<uint32_t> add(const std::string& path, const std::string& stat_path);

 private:
  std::vector<FileRef>& files_;
};

// ENOTSUP naming `what` and why a checkpoint cannot hold it.
tl::unexpected<Error> unsupported(pid_t pid, const std::string& what);

// comm, cwd, root, exe, umask, personality, credentials, rlimits, mm fields
// from stat and auxv, namespaces, POSIX timers, seccomp.
Result<void> capture_process_files(pid_t pid, ProcessState& process, FileTable& files);
// Name, registers, xsave area, signal mask, private pending signals, rseq.
Result<ThreadState> capture_thread(pid_t pid, pid_t tid);
// Process-wide pending signals (read through any thread).
Result<void> capture_shared_pending(pid_t tid, ProcessState& process);
// What only the process can ask for: sigactions, itimers and brk (through
// the leader), clear_child_tid and sigaltstack (each thread).
Result<void> capture_injected(const FrozenProcess& frozen, uint64_t syscall_insn, Manifest& manifest);
// Open descriptors and the kernel objects behind eventfds, pipes and
// socketpairs; refuses kinds a restore cannot make again.
Result<void> capture_fds(pid_t pid, const CaptureOptions& options, FileTable& files, Manifest& manifest);
// The region of options.region_files behind (dev, ino), or null.
const CaptureOptions::RegionFile* region_file(const CaptureOptions& options, uint64_t dev, uint64_t ino);
// ENOTSUP naming a region a restore cannot get again (`what`: how the
// process holds it): a named region whose name was unlinked, a lease of
// another process's connection or of none. Nothing for one it can.
Result<void> check_region_restorable(pid_t pid, const CaptureOptions::RegionFile& region, const std::string& what);
// VMAs from smaps, classified; refuses mappings a restore cannot re-create.
Result<void> capture_vmas(pid_t pid, const CaptureOptions& options, FileTable& files, Manifest& manifest);
// Present private pages (pagemap), copied into the image as runs.
Result<void> capture_pages(pid_t pid, Manifest& manifest, ImageWriter& image);
// The data of every leased region in manifest.regions (SEEK_DATA over its
// file, through the process's mapping or descriptor), copied into the image
// as Manifest::leases.
Result<void> capture_leases(pid_t pid, const CaptureOptions& options, Manifest& manifest, ImageWriter& image);

}  // namespace cxlpool::ckpt::detail
