// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc: pinned host memory for a client's CUDA KV arena.
#include "../daemon.hpp"
#include "../logging.hpp"

namespace cxlpool::daemon {

Result<Daemon::Reply> Daemon::handle(Session& session, const proto::GpuHostAlloc& request) {
  auto out = gpu_host_.allocate(pool_->tiers(), config_.max_region_size,
                                GpuHostRequester{session.id, session.who.uid, config_.gpu_host_bytes_per_uid},
                                request);
  if (!out) return tl::unexpected(out.error());
  logger("pool")->debug("client {} got {} bytes of GPU host memory on node {}", session.id, out->reply.bytes,
                        out->reply.numa_node);
  return Reply{out->reply, std::move(out->fd)};
}

}  // namespace cxlpool::daemon
