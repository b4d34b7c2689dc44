// SPDX-License-Identifier: Apache-2.0
// The storage frontend of an attachment in the pod region: it uses the link
// in the active leg's slot and, when that backend dies (its liveness lock
// drops) or stops answering, waits for the pod table to name another
// active leg and resubmits there every command that had not completed.
//
// A command is reported only with the answer of a backend that ran it, so
// an acknowledged write went through that backend's device (O_DIRECT; FUA
// and flush as asked). The application's buffers stay in the first link's
// buffer area for the attachment's life; on another leg they are bounced
// through the same offsets of that link's area (one copy per command).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/blk_frontend.hpp"

namespace cxlpool::devpool::blk {

struct PodBlkOptions {
  std::chrono::milliseconds command_timeout{10000};
  // How long to wait for a backend on a leg: its liveness lock at attach,
  // and the table naming a new active leg after a failure.
  std::chrono::milliseconds failover_timeout{10000};
};

struct PodBlkStats {
  std::uint64_t failovers = 0;   // legs switched
  std::uint64_t resubmitted = 0; // commands sent again on the new leg
  std::uint64_t bounced = 0;     // commands copied through another leg's area
};

class PodBlkFrontend : public BlkFrontend {
 public:
  virtual PodBlkStats pod_stats() const = 0;
};

// `pod_fd`: the pod file (from DevAttachReply; reopened, the caller keeps
// it); `line`: the attachment's line in the pod table. EPROTO for a pod
// file or line that does not validate, ENOTCONN/ETIMEDOUT when no backend
// serves the active leg in time, and the errors of make_blk_frontend.
Result<std::unique_ptr<PodBlkFrontend>> make_pod_blk_frontend(int pod_fd, std::uint32_t line,
                                                              const PodBlkOptions& options = {});

}  // namespace cxlpool::devpool::blk
