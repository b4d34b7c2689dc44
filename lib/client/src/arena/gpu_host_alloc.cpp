// SPDX-License-Identifier: Apache-2.0
#include "gpu_host_alloc.hpp"

#include <string>
#include <utility>

namespace cxlpool::client::arena {

Result<GpuHostMemory> gpu_host_alloc(Connection& conn, uint32_t tier_id, uint32_t device, uint64_t bytes) {
  auto received = conn.call(proto::GpuHostAlloc{.tier_id = tier_id, .device = device, .bytes = bytes});
  if (!received) return tl::unexpected(received.error());
  const auto* reply = std::get_if<proto::GpuHostAllocReply>(&received->envelope.message);
  if (reply == nullptr) {
    return fail(EPROTO, std::string("GpuHostAlloc: unexpected reply ") +
                            proto::message_type_name(proto::message_type(received->envelope.message)));
  }
  if (received->fds.size() != 1) return fail(EPROTO, "GpuHostAlloc: the reply carries no descriptor");
  if (reply->bytes < bytes) {
    return fail(EPROTO, "GpuHostAlloc: " + std::to_string(reply->bytes) + " bytes answered for " +
                            std::to_string(bytes) + " asked");
  }
  return GpuHostMemory{std::move(received->fds[0]), reply->bytes, reply->numa_node};
}

}  // namespace cxlpool::client::arena
