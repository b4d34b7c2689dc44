// SPDX-License-Identifier: Apache-2.0
// The clone's C++ stage: runs in the new process (already the target's pid)
// with the restorer's libc, prepares descriptors, working directory and the
// restorer's area, then enters the freestanding final stage. Failures before
// that point are written to the status pipe with a message.
#pragma once

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/ckpt/restore_plan.hpp"

namespace cxlpool::ckpt {

struct CloneChannels {
  int image_fd = -1;
  int status_fd = -1;    // write end
  int uffd_socket = -1;  // moa: where the final stage sends its userfaultfd
  bool host_pids = false;  // threads get their tids in the parent namespace too
};

[[noreturn]] void run_clone_stage(const Manifest& manifest, const RestorePlan& plan, const CloneChannels& channels);

// The status record's failure codes the final stage does not use.
inline constexpr uint32_t kFailurePrepare = 100;  // followed by a message

}  // namespace cxlpool::ckpt
