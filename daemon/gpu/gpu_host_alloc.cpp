// SPDX-License-Identifier: Apache-2.0
#include "gpu_host_alloc.hpp"

#include <string>
#include <utility>

#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::daemon {
namespace {

// A missing or unusable driver and a missing device all mean the same to the
// client: this host cannot give it GPU-visible host memory.
bool no_gpu(int code) { return code == ENOENT || code == ELIBBAD || code == ENOSYS || code == ENODEV; }

}  // namespace

Result<GpuHostAllocation> GpuHostAllocator::allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                                     const GpuHostRequester& who, const proto::GpuHostAlloc& request) {
  auto out = try_allocate(tiers, max_region_size, who, request);
  if (!out) {
    ++counters_.failures;
    if (out.error().code == EDQUOT) ++counters_.quota_rejections;
    return out;
  }
  ++counters_.allocs;
  counters_.bytes += out->reply.bytes;
  Charge& charge = by_session_[who.session_id];
  charge.uid = who.uid;
  charge.bytes += out->reply.bytes;
  by_uid_[who.uid] += out->reply.bytes;
  charged_ += out->reply.bytes;
  return out;
}

void GpuHostAllocator::close_session(uint64_t session_id) {
  auto it = by_session_.find(session_id);
  if (it == by_session_.end()) return;
  auto uid = by_uid_.find(it->second.uid);
  uid->second -= it->second.bytes;
  if (uid->second == 0) by_uid_.erase(uid);
  charged_ -= it->second.bytes;
  by_session_.erase(it);
}

uint64_t GpuHostAllocator::charged_to_uid(uid_t uid) const {
  auto it = by_uid_.find(uid);
  return it == by_uid_.end() ? 0 : it->second;
}

Result<GpuHostAllocation> GpuHostAllocator::try_allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                                         const GpuHostRequester& who,
                                                         const proto::GpuHostAlloc& request) {
  const std::string tier_name = "tier " + std::to_string(request.tier_id);
  const Tier* tier = nullptr;
  for (const auto& t : tiers) {
    if (t.id == request.tier_id) tier = &t;
  }
  if (tier == nullptr) return fail(EINVAL, "gpu host alloc: no " + tier_name);
  // The driver places HOST_NUMA memory on a node; an emulated tier's pages
  // are only a share of some other tier's node.
  if (!tier->own_node || tier->numa_node < 0) {
    return fail(EINVAL, "gpu host alloc: " + tier_name + " (" + tier->name + ") has no NUMA node of its own");
  }
  if (request.bytes > max_region_size) {
    return fail(E2BIG, "gpu host alloc: " + std::to_string(request.bytes) + " bytes exceed max_region_size " +
                           std::to_string(max_region_size));
  }
  // Checked before the driver is asked: a refusal must cost nothing. The
  // driver may round the size up; what it hands out is what is charged.
  const uint64_t held = charged_to_uid(who.uid);
  if (who.limit_per_uid != 0 && (request.bytes > who.limit_per_uid || held > who.limit_per_uid - request.bytes)) {
    return fail(EDQUOT, "gpu host alloc: uid " + std::to_string(who.uid) + " holds " + std::to_string(held) +
                            " bytes in open sessions; " + std::to_string(request.bytes) +
                            " more exceed gpu_host_bytes_per_uid " + std::to_string(who.limit_per_uid));
  }
  // ENOTSUP when no GpuVmm backend here exports host memory (cuda not
  // compiled in, or excluded by CXLPOOL_BACKENDS): the message says which.
  auto exported = hal::export_gpu_host_memory(tier->numa_node, request.bytes, static_cast<int>(request.device));
  if (!exported) {
    const Error& e = exported.error();
    if (no_gpu(e.code)) return fail(ENODEV, "gpu host alloc: no usable GPU: " + e.message);
    return fail(e.code, "gpu host alloc: " + e.message);
  }
  GpuHostAllocation out;
  out.reply.bytes = exported->bytes;
  out.reply.numa_node = static_cast<uint32_t>(tier->numa_node);
  out.fd = std::move(exported->fd);
  return out;
}

void GpuHostAllocator::add_counters(std::vector<proto::Counter>& out) const {
  emit_counters("gpu.", counters_, [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); });
  out.push_back({"gpu.host_alloc_charged_bytes", charged_});
}

}  // namespace cxlpool::daemon
