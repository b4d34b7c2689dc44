// SPDX-License-Identifier: Apache-2.0
#include "cuda_vmm.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "cxlpool/hal/driver/vmm_ranges.hpp"
#include "driver_api.hpp"
#include "host_protection.hpp"

namespace cxlpool::cuda {
namespace {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

CUmemAllocationProp allocation_prop(CUmemLocationType type, int id,
                                    CUmemAllocationHandleType handles) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = type;
  prop.location.id = id;
  prop.requestedHandleTypes = handles;
  return prop;
}

bool device_attribute(const DriverApi& api, CUdevice_attribute attr, int device) {
  int value = 0;
  return api.device_get_attribute(&value, attr, device) == CUDA_SUCCESS && value != 0;
}

// The context of `device` when the device has `attr`; ENOTSUP ("cuda: device
// N <lacks>") when it does not.
Result<DeviceContext> open_device_with(int device, CUdevice_attribute attr, const char* lacks) {
  auto ctx = DeviceContext::open(device);
  if (!ctx) return ctx;
  if (!device_attribute(ctx->api(), attr, ctx->device())) {
    return fail(ENOTSUP, "cuda: device " + std::to_string(device) + " " + lacks);
  }
  return ctx;
}

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

class CudaVmm final : public hal::GpuVmm {
 public:
  CudaVmm(DeviceContext ctx, size_t granularity)
      : ctx_(std::move(ctx)), api_(ctx_.api()), granularity_(granularity) {}

  ~CudaVmm() override {
    // A destructor cannot report failures; the context's teardown would
    // reclaim what is left anyway.
    if (!ctx_.make_current()) return;
    for (const auto& [va, bytes] : mappings_) api_.mem_unmap(va, bytes);
    for (const auto& [handle, bytes] : handles_) api_.mem_release(handle);
    for (const auto& [va, bytes] : reservations_) api_.mem_address_free(va, bytes);
  }

  const char* name() const override { return "cuda"; }
  size_t granularity() const override { return granularity_; }

  Result<uint64_t> reserve(size_t bytes) override {
    if (bytes == 0 || bytes % granularity_ != 0) {
      return fail(EINVAL, "cuda: reserve " + std::to_string(bytes) +
                              " bytes: not a positive multiple of the granularity " +
                              std::to_string(granularity_));
    }
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    CUdeviceptr va = 0;
    CXLPOOL_CU_TRY(api_, mem_address_reserve, &va, bytes, granularity_, 0, 0);
    reservations_.emplace(va, bytes);
    stats_.reserved_bytes += bytes;
    return static_cast<uint64_t>(va);
  }

  Result<void> release_range(uint64_t va, size_t bytes) override {
    const auto it = reservations_.find(va);
    if (it == reservations_.end() || it->second != bytes) {
      return fail(EINVAL, "cuda: release_range: no reservation of " + std::to_string(bytes) +
                              " bytes at that address");
    }
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    // The driver refuses to free a range with mappings left in it.
    if (auto r = unmap(va, bytes); !r) return r;
    CXLPOOL_CU_TRY(api_, mem_address_free, va, bytes);
    reservations_.erase(it);
    stats_.reserved_bytes -= bytes;
    return {};
  }

  Result<hal::VmmHandle> create(size_t bytes) override {
    if (auto r = check_size("create", bytes); !r) return tl::unexpected(r.error());
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    const CUmemAllocationProp prop =
        allocation_prop(CU_MEM_LOCATION_TYPE_DEVICE, ctx_.device(), CU_MEM_HANDLE_TYPE_NONE);
    CUmemGenericAllocationHandle handle = 0;
    CXLPOOL_CU_TRY(api_, mem_create, &handle, bytes, &prop, 0);
    handles_.emplace(handle, bytes);
    return static_cast<hal::VmmHandle>(handle);
  }

  Result<hal::VmmHandle> import_fd(int fd, size_t bytes) override {
    if (fd < 0) return fail(EBADF, "cuda: import_fd: bad file descriptor");
    if (auto r = check_size("import_fd", bytes); !r) return tl::unexpected(r.error());
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    // The driver takes its own reference to the allocation; the caller's fd
    // stays the caller's.
    CUmemGenericAllocationHandle handle = 0;
    CXLPOOL_CU_TRY(api_, mem_import_from_shareable_handle, &handle,
                   reinterpret_cast<void*>(static_cast<intptr_t>(fd)),
                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    handles_.emplace(handle, bytes);
    return static_cast<hal::VmmHandle>(handle);
  }

  Result<void> release(hal::VmmHandle handle) override {
    const auto it = handles_.find(handle);
    if (it == handles_.end()) return fail(EINVAL, "cuda: release: unknown handle");
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    CXLPOOL_CU_TRY(api_, mem_release, handle);
    handles_.erase(it);
    return {};
  }

  Result<void> map(uint64_t va, size_t bytes, hal::VmmHandle handle, uint64_t offset) override {
    const auto h = handles_.find(handle);
    if (h == handles_.end()) return fail(EINVAL, "cuda: map: unknown handle");
    if (offset != 0) {
      return fail(EINVAL, "cuda: map: offset must be 0 (cuMemMap maps a handle from its start)");
    }
    if (bytes == 0 || bytes % granularity_ != 0 || va % granularity_ != 0 || bytes > h->second) {
      return fail(EINVAL, "cuda: map: address or size not granularity-aligned, or larger than "
                          "the handle");
    }
    if (!inside_reservation(va, bytes)) {
      return fail(EINVAL, "cuda: map: range is not inside a reserved range");
    }
    if (overlaps_mapping(va, bytes)) return fail(EEXIST, "cuda: map: range is already mapped");
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    const uint64_t start = now_ns();
    CXLPOOL_CU_TRY(api_, mem_map, va, bytes, 0, handle, 0);
    CUmemAccessDesc access = {};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = ctx_.device();
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (const CUresult r = api_.mem_set_access(va, bytes, &access, 1); r != CUDA_SUCCESS) {
      api_.mem_unmap(va, bytes);
      return tl::unexpected(cu_error(api_, "mem_set_access", r));
    }
    mappings_.emplace(va, bytes);
    stats_.mapped_bytes += bytes;
    ++stats_.maps;
    stats_.map_ns += now_ns() - start;
    return {};
  }

  Result<void> unmap(uint64_t va, size_t bytes) override {
    const uint64_t end = va + bytes;
    auto first = mappings_.lower_bound(va);
    if (first != mappings_.begin()) {
      const auto prev = std::prev(first);
      if (prev->first + prev->second > va) {
        return fail(EINVAL, "cuda: unmap: range starts inside a mapping (unmap whole maps)");
      }
    }
    auto last = first;
    while (last != mappings_.end() && last->first < end) {
      if (last->first + last->second > end) {
        return fail(EINVAL, "cuda: unmap: range ends inside a mapping (unmap whole maps)");
      }
      ++last;
    }
    if (first == last) return {};
    if (auto r = ctx_.make_current(); !r) return tl::unexpected(r.error());
    const uint64_t start = now_ns();
    for (auto it = first; it != last;) {
      CXLPOOL_CU_TRY(api_, mem_unmap, it->first, it->second);
      stats_.mapped_bytes -= it->second;
      ++stats_.unmaps;
      it = mappings_.erase(it);
    }
    stats_.unmap_ns += now_ns() - start;
    return {};
  }

  hal::VmmStats stats() const override { return stats_; }

 private:
  Result<void> check_size(const char* call, size_t bytes) const {
    if (bytes == 0 || bytes % granularity_ != 0) {
      return fail(EINVAL, std::string("cuda: ") + call + ": " + std::to_string(bytes) +
                              " bytes is not a positive multiple of the granularity " +
                              std::to_string(granularity_));
    }
    return {};
  }

  bool inside_reservation(uint64_t va, size_t bytes) const {
    return hal::vmm_range_inside_one(reservations_, va, bytes);
  }

  bool overlaps_mapping(uint64_t va, size_t bytes) const {
    return hal::vmm_range_overlaps_any(mappings_, va, bytes);
  }

  DeviceContext ctx_;
  const DriverApi& api_;
  size_t granularity_;
  std::map<uint64_t, size_t> reservations_;  // va -> bytes
  std::map<uint64_t, size_t> mappings_;      // va -> bytes, one per map() call
  std::unordered_map<hal::VmmHandle, size_t> handles_;
  hal::VmmStats stats_;
};

Result<size_t> granularity_of(const DriverApi& api, const CUmemAllocationProp& prop) {
  size_t gran = 0;
  CXLPOOL_CU_TRY(api, mem_get_allocation_granularity, &gran, &prop,
                 CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (gran == 0) return fail(EIO, "cuMemGetAllocationGranularity returned 0");
  return gran;
}

}  // namespace

Result<std::unique_ptr<hal::GpuVmm>> make_cuda_vmm(int device) {
  auto ctx = open_device_with(device, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              "does not support virtual memory management");
  if (!ctx) return tl::unexpected(ctx.error());
  const DriverApi& api = ctx->api();
  auto gran = granularity_of(
      api, allocation_prop(CU_MEM_LOCATION_TYPE_DEVICE, ctx->device(), CU_MEM_HANDLE_TYPE_NONE));
  if (!gran) return tl::unexpected(gran.error());
  // Imports of host-NUMA exports share the address space: one granularity
  // has to fit both kinds of memory.
  size_t granularity = *gran;
  if (device_attribute(api, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                       ctx->device())) {
    if (auto host = granularity_of(api, allocation_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        host) {
      granularity = std::max(granularity, *host);
    }
  }
  return std::unique_ptr<hal::GpuVmm>(new CudaVmm(std::move(*ctx), granularity));
}

Result<HostNumaExport> export_host_numa(int numa_node, size_t bytes, int device) {
  if (numa_node < 0 || bytes == 0) {
    return fail(EINVAL, "cuda: export_host_numa: bad node or empty size");
  }
  auto ctx = open_device_with(device,
                              CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              "cannot allocate host-NUMA VMM memory (needs CUDA 12.2+ and "
                              "HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)");
  if (!ctx) return tl::unexpected(ctx.error());
  const DriverApi& api = ctx->api();
  const CUmemAllocationProp prop = allocation_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA, numa_node,
                                                   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  auto gran = granularity_of(api, prop);
  if (!gran) return tl::unexpected(gran.error());
  HostNumaExport out;
  out.bytes = round_up(bytes, *gran);
  CUmemGenericAllocationHandle handle = 0;
  CXLPOOL_CU_TRY(api, mem_create, &handle, out.bytes, &prop, 0);
  int fd = -1;
  const CUresult exported =
      api.mem_export_to_shareable_handle(&fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  // The exported fd holds its own reference: ours goes either way.
  api.mem_release(handle);
  if (exported != CUDA_SUCCESS) {
    return tl::unexpected(cu_error(api, "mem_export_to_shareable_handle", exported));
  }
  out.fd.reset(fd);
  return out;
}

Result<HostRegistration> HostRegistration::register_range(int device, void* host, size_t bytes,
                                                          HostAccess access) {
  if (host == nullptr || bytes == 0) {
    return fail(EINVAL, "cuda: register_range: empty host range");
  }
  bool read_only = access == HostAccess::kReadOnly;
  if (access == HostAccess::kDetect) {
    auto prot = host_range_protection(host, bytes);
    if (!prot) return fail(prot.error().code, "cuda: register_range: " + prot.error().message);
    read_only = *prot == HostProtection::kReadOnly;
  }
  auto ctx = open_device_with(device, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
                              "cannot map host memory");
  if (!ctx) return tl::unexpected(ctx.error());
  const DriverApi& api = ctx->api();
  unsigned flags = CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE;
  if (read_only) {
    if (!device_attribute(api, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED,
                          ctx->device())) {
      return fail(ENOTSUP, "cuda: device " + std::to_string(device) +
                               " cannot register read-only host memory "
                               "(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED is 0)");
    }
    flags |= CU_MEMHOSTREGISTER_READ_ONLY;
  }
  if (const CUresult r = api.mem_host_register(host, bytes, flags); r != CUDA_SUCCESS) {
    Error e = cu_error(api, "cuMemHostRegister", r);
    e.message += read_only ? " (read-only mapping, CU_MEMHOSTREGISTER_READ_ONLY)"
                           : " (read-write mapping)";
    return tl::unexpected(std::move(e));
  }
  CUdeviceptr dev = 0;
  if (const CUresult r = api.mem_host_get_device_pointer(&dev, host, 0); r != CUDA_SUCCESS) {
    api.mem_host_unregister(host);
    return tl::unexpected(cu_error(api, "cuMemHostGetDevicePointer", r));
  }
  return HostRegistration(std::move(*ctx), host, bytes, static_cast<uint64_t>(dev), read_only);
}

HostRegistration::HostRegistration(DeviceContext ctx, void* host, size_t bytes,
                                   uint64_t device_ptr, bool read_only)
    : ctx_(std::make_unique<DeviceContext>(std::move(ctx))),
      host_(host),
      size_(bytes),
      device_ptr_(device_ptr),
      read_only_(read_only) {}

HostRegistration::HostRegistration(HostRegistration&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      host_(std::exchange(other.host_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      device_ptr_(std::exchange(other.device_ptr_, 0)),
      read_only_(std::exchange(other.read_only_, false)) {}

HostRegistration& HostRegistration::operator=(HostRegistration&& other) noexcept {
  if (this != &other) {
    reset();
    ctx_ = std::move(other.ctx_);
    host_ = std::exchange(other.host_, nullptr);
    size_ = std::exchange(other.size_, 0);
    device_ptr_ = std::exchange(other.device_ptr_, 0);
    read_only_ = std::exchange(other.read_only_, false);
  }
  return *this;
}

HostRegistration::~HostRegistration() { reset(); }

void HostRegistration::reset() {
  if (host_ != nullptr && ctx_ != nullptr && ctx_->make_current()) {
    ctx_->api().mem_host_unregister(host_);
  }
  host_ = nullptr;
  size_ = 0;
  device_ptr_ = 0;
  read_only_ = false;
  ctx_.reset();
}

}  // namespace cxlpool::cuda
