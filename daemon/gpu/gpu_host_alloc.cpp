// SPDX-License-Identifier: Apache-2.0
#include "gpu_host_alloc.hpp"

#include <string>

#include "cxlpool_build_config.h"
#if CXLPOOL_HAVE_CUDA
#include "cuda_vmm.hpp"
#endif

namespace cxlpool::daemon {
namespace {

#if CXLPOOL_HAVE_CUDA
// A missing or unusable driver and a missing device all mean the same to the
// client: this host cannot give it GPU-visible host memory.
bool no_gpu(int code) { return code == ENOENT || code == ELIBBAD || code == ENOSYS || code == ENODEV; }
#endif

}  // namespace

Result<GpuHostAllocation> GpuHostAllocator::allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
                                                     const proto::GpuHostAlloc& request) {
  auto out = try_allocate(tiers, max_region_size, request);
  if (!out) {
    ++failures_;
    return out;
  }
  ++allocs_;
  bytes_ += out->reply.bytes;
  return out;
}

Result<GpuHostAllocation> GpuHostAllocator::try_allocate(const std::vector<Tier>& tiers, uint64_t max_region_size,
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
#if CXLPOOL_HAVE_CUDA
  auto exported = cuda::export_host_numa(tier->numa_node, request.bytes, static_cast<int>(request.device));
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
#else
  return fail(ENOTSUP, "gpu host alloc: cxlpoold built without CUDA (" CXLPOOL_HAVE_CUDA_REASON ")");
#endif
}

void GpuHostAllocator::add_counters(std::vector<proto::Counter>& out) const {
  out.push_back({"gpu.host_allocs", allocs_});
  out.push_back({"gpu.host_alloc_bytes", bytes_});
  out.push_back({"gpu.host_alloc_failures", failures_});
}

}  // namespace cxlpool::daemon
