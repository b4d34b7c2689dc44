// SPDX-License-Identifier: Apache-2.0
#include "backing.hpp"

#include <fcntl.h>

#include <string>
#include <utility>
#include <vector>

#include "c_api_support.hpp"

namespace cxlpool::client::arena {
namespace {

class DaemonBacking final : public BackingSource {
 public:
  DaemonBacking(cxlpool_client* client, uint32_t tier) : client_(client), tier_(tier) {}

  Result<Backing> acquire(hal::GpuVmm& vmm, uint64_t bytes) override {
    cxlpool_region* region = nullptr;
    const int rc = cxlpool_region_alloc(client_, tier_, bytes, 0, &region);
    if (rc < 0) {
      return fail(-rc, "kv arena: region of " + std::to_string(bytes) + " bytes on tier " + std::to_string(tier_) +
                           ": " + cxlpool_last_error());
    }
    auto handle = vmm.import_fd(cxlpool_region_fd(region), bytes);
    if (!handle) {
      cxlpool_region_free(region);
      return tl::unexpected(handle.error());
    }
    return Backing{*handle, bytes, region};
  }

  void release(hal::GpuVmm& vmm, Backing& backing) override {
    (void)vmm.release(backing.handle);
    if (backing.region != nullptr) cxlpool_region_free(backing.region);
    backing = {};
  }

  void discard(const Backing& backing, uint64_t offset, uint64_t bytes) override {
    // Punching the hole frees the pages in the region's memfd: the daemon's
    // tier gets them back although the region stays leased.
    if (backing.region == nullptr) return;
    (void)::fallocate(cxlpool_region_fd(backing.region), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(offset), static_cast<off_t>(bytes));
  }

  uint32_t tier() const override { return tier_; }

 private:
  cxlpool_client* client_;
  uint32_t tier_;
};

// Memory that only its VMM handle holds (no pool region behind it): releasing
// the handle frees it, and pages cannot be given back while it lives (device
// memory, pinned host memory).
class HandleOnlyBacking : public BackingSource {
 public:
  void release(hal::GpuVmm& vmm, Backing& backing) override {
    (void)vmm.release(backing.handle);
    backing = {};
  }
  void discard(const Backing&, uint64_t, uint64_t) override {}
};

class OwnBacking final : public HandleOnlyBacking {
 public:
  Result<Backing> acquire(hal::GpuVmm& vmm, uint64_t bytes) override {
    auto handle = vmm.create(bytes);
    if (!handle) return tl::unexpected(handle.error());
    return Backing{*handle, bytes, nullptr};
  }
  uint32_t tier() const override { return UINT32_MAX; }
};

class GpuHostBacking final : public HandleOnlyBacking {
 public:
  GpuHostBacking(GpuHostAllocFn alloc, uint32_t tier) : alloc_(std::move(alloc)), tier_(tier) {}

  Result<Backing> acquire(hal::GpuVmm& vmm, uint64_t bytes) override {
    auto memory = alloc_(bytes);
    if (!memory) {
      return fail(memory.error().code, "kv arena: GPU host memory of " + std::to_string(bytes) + " bytes on tier " +
                                           std::to_string(tier_) + ": " + memory.error().message);
    }
    auto handle = vmm.import_fd(memory->fd.get(), memory->bytes);
    if (!handle) {
      return fail(handle.error().code, "kv arena: import GPU host memory on tier " + std::to_string(tier_) + ": " +
                                           handle.error().message);
    }
    return Backing{*handle, bytes, nullptr};
  }

  uint32_t tier() const override { return tier_; }

 private:
  GpuHostAllocFn alloc_;
  uint32_t tier_;
};

}  // namespace

std::unique_ptr<BackingSource> make_gpu_host_backing(GpuHostAllocFn alloc, uint32_t tier_id) {
  return std::make_unique<GpuHostBacking>(std::move(alloc), tier_id);
}

Result<std::unique_ptr<BackingSource>> make_daemon_gpu_host_backing(cxlpool_client* client, uint32_t tier_id,
                                                                    int device) {
  if (client == nullptr || !client->conn) {
    return fail(EINVAL, "kv arena: cuda pages on a daemon tier need a client connection");
  }
  if (device < 0) return fail(EINVAL, "kv arena: negative cuda device");
  std::shared_ptr<Connection> conn = client->conn;
  auto alloc = [conn, tier_id, device](uint64_t bytes) {
    return gpu_host_alloc(*conn, tier_id, static_cast<uint32_t>(device), bytes);
  };
  return make_gpu_host_backing(std::move(alloc), tier_id);
}

Result<std::unique_ptr<BackingSource>> make_daemon_backing(cxlpool_client* client, uint32_t tier_id) {
  if (client == nullptr) return fail(EINVAL, "kv arena: the host backend needs a client connection");
  if (tier_id == UINT32_MAX) {
    std::vector<cxlpool_tier_info> tiers(16);
    int n = cxlpool_tiers(client, tiers.data(), tiers.size());
    if (n > static_cast<int>(tiers.size())) {
      tiers.resize(static_cast<size_t>(n));
      n = cxlpool_tiers(client, tiers.data(), tiers.size());
    }
    if (n < 0) return fail(-n, std::string("kv arena: list tiers: ") + cxlpool_last_error());
    for (int i = 0; i < n && i < static_cast<int>(tiers.size()); ++i) {
      if (tiers[static_cast<size_t>(i)].kind == CXLPOOL_TIER_DRAM) {
        tier_id = tiers[static_cast<size_t>(i)].id;
        break;
      }
    }
    if (tier_id == UINT32_MAX) return fail(ENOENT, "kv arena: the daemon has no DRAM tier");
  }
  return std::unique_ptr<BackingSource>(new DaemonBacking(client, tier_id));
}

std::unique_ptr<BackingSource> make_own_backing() { return std::make_unique<OwnBacking>(); }

}  // namespace cxlpool::client::arena
