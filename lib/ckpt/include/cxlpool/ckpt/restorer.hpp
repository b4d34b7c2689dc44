// SPDX-License-Identifier: Apache-2.0
// Restores clones of a checkpointed process (docs/ckpt.md "Restore"). Each
// clone lives in a pid namespace of its own, whose pid 1 is a keeper that
// created it with the original pid and tids, reaps it, serves its lazily
// filled memory, and exits with its status. Needs CAP_SYS_ADMIN (clone3
// with set_tid, PR_SET_MM_MAP).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/ckpt/restore_plan.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

// The facts plan_restore needs about this host, from the restorer's own
// mappings. Errors: reading /proc/self/maps.
Result<HostFacts> probe_host();

// Every file the manifest maps or has open must be the one it recorded:
// the same file (device, inode) with the same size and mtime, except a file
// open for writing, whose identity is enough. ESTALE naming the first one
// that changed; ENOENT/EACCES from stat.
Result<void> check_files(const Manifest& manifest);

// Whether the descriptor was open for writing.
bool fd_writes(const FdEntry& fd);

struct CloneHandle {
  pid_t keeper = -1;     // in the caller's pid namespace
  int report_fd = -1;    // the keeper's report (owned)
};

struct CloneReport {
  bool restored = false;
  double restore_ms = 0;  // from start_clone to the clone's last step before returning into the target
  std::string error;      // when not restored: which step failed and why
};

// Starts one clone of `manifest`, whose pages lie in the image `image_fd`,
// under `plan`. Returns once the keeper runs; wait_restored tells how the
// restore went. Unless `detach`, the keeper (and so the clone) is killed when
// the calling thread exits.
Result<CloneHandle> start_clone(const Manifest& manifest, const RestorePlan& plan, int image_fd, bool detach = false);

struct CloneOptions {
  bool detach = false;
  // moa: where the keeper leaves the pages its pager placed, in fault order
  // (LazyPager::fault_order(), u64 addresses, little-endian, from offset 0
  // and truncated to them): a regular file or memfd, written once, after
  // record_ms milliseconds or when the clone exits, whichever comes first
  // (record_ms 0: at the exit).
  int fault_record_fd = -1;
  int record_ms = 0;
  // Also give the clone and its threads their original pids in the caller's
  // pid namespace (clone3 set_tid at both levels), for software that names
  // the clone by the pid it had, such as a GPU driver's checkpoint API
  // called from outside. Needs those pids free there (EEXIST otherwise) and
  // CAP_SYS_ADMIN over the caller's namespace; one clone per image at a time.
  bool host_pids = false;
};
Result<CloneHandle> start_clone(const Manifest& manifest, const RestorePlan& plan, int image_fd,
                                const CloneOptions& options);
// The pages of the manifest's runs that process `pid` has written since it
// mapped them from the image: present or swapped and no longer file pages in
// its /proc/PID/pagemap (mow's copy-on-write made them anonymous). Needs
// root or ptrace access to pid.
Result<std::vector<uint64_t>> written_image_pages(pid_t pid, const Manifest& manifest);
// Whether a pagemap entry is a page of anonymous memory (present or
// swapped, PM_FILE clear).
bool pagemap_entry_anonymous(uint64_t entry);
// The clone a keeper (start_clone's CloneHandle::keeper) created, as a pid
// of the caller's namespace; ESRCH when it has none (yet or any more).
Result<pid_t> clone_pid(pid_t keeper);
// Blocks until the clone reported that it runs the target's code (or failed).
CloneReport wait_restored(CloneHandle& clone);
// Blocks until the clone exits: its exit status, or 128 + the signal that
// killed it. Closes the handle.
int wait_exit(CloneHandle& clone);

}  // namespace cxlpool::ckpt
