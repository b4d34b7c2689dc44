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
// Blocks until the clone reported that it runs the target's code (or failed).
CloneReport wait_restored(CloneHandle& clone);
// Blocks until the clone exits: its exit status, or 128 + the signal that
// killed it. Closes the handle.
int wait_exit(CloneHandle& clone);

}  // namespace cxlpool::ckpt
