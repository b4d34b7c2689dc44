// SPDX-License-Identifier: Apache-2.0
// The `cuda` GpuVmm backend and the pieces of CUDA memory that the daemon and
// clients hand each other. No cuda.h here: lib/client includes this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"
#include "device_context.hpp"

namespace cxlpool::cuda {

// hal::GpuVmm over the driver's virtual memory management API on device
// `device` (cuMemAddressReserve / cuMemCreate / cuMemMap / cuMemSetAccess).
// create() allocates device memory; import_fd() takes a POSIX_FILE_DESCRIPTOR
// export (e.g. export_host_numa's, from the daemon). Every call makes the
// device's primary context current on the calling thread first, so a worker
// thread may drive it. Limits of the driver the interface exposes:
//  - map() offsets must be 0 (cuMemMap maps a handle from its start);
//  - unmap() must cover whole earlier map() calls (EINVAL otherwise).
// Errors: as DeviceContext::open(); ENOTSUP when the device has no VMM
// support.
Result<std::unique_ptr<hal::GpuVmm>> make_cuda_vmm(int device);

// Pinned host memory on NUMA node `numa_node`, allocated by the driver
// (CU_MEM_LOCATION_TYPE_HOST_NUMA) and exported as a POSIX file descriptor:
// what the daemon hands a client for host/CXL-backed arena pages; the client
// maps it with GpuVmm::import_fd. `bytes` is rounded up to the allocation
// granularity. The memory lives as long as the fd or any import of it.
// Errors: as DeviceContext::open(); ENOTSUP when the driver or device cannot
// allocate host-NUMA VMM memory (CUDA < 12.2, or no
// HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED).
struct HostNumaExport {
  UniqueFd fd;
  std::size_t bytes = 0;
};
Result<HostNumaExport> export_host_numa(int numa_node, std::size_t bytes, int device = 0);

// How the device may use a registered host range. kDetect reads the
// mapping's protection from /proc/self/maps: a read-only mapping (e.g. a
// model region a client maps PROT_READ) must be registered read-only, as the
// driver refuses it otherwise with CUDA_ERROR_INVALID_VALUE.
enum class HostAccess { kDetect, kReadWrite, kReadOnly };

// The staging fallback when the driver refuses host-NUMA VMM memory: an
// existing host mapping (e.g. a MAP_SHARED mmap of a daemon region memfd)
// page-locked with cuMemHostRegister and visible to the device at
// device_ptr(). Kernels and async copies use it directly. Unregisters on
// destruction; the host mapping must outlive the registration.
class HostRegistration {
 public:
  // Errors: as DeviceContext::open(); EINVAL for a null or empty range;
  // EFAULT (kDetect) when part of the range is not mapped readable; ENOTSUP
  // when the device cannot map registered host memory, or cannot register
  // read-only host memory and the range is read-only; the cuMemHostRegister
  // failure otherwise (e.g. EPERM for a range another registration already
  // covers, EINVAL for kReadWrite on a read-only mapping). Messages name the
  // driver call and its CUDA_ERROR_* reason.
  static Result<HostRegistration> register_range(int device, void* host, std::size_t bytes,
                                                 HostAccess access = HostAccess::kDetect);

  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  HostRegistration(HostRegistration&& other) noexcept;
  HostRegistration& operator=(HostRegistration&& other) noexcept;
  ~HostRegistration();

  void* host() const { return host_; }
  std::size_t size() const { return size_; }
  std::uint64_t device_ptr() const { return device_ptr_; }
  // Registered with CU_MEMHOSTREGISTER_READ_ONLY: the device must not write.
  bool read_only() const { return read_only_; }

 private:
  HostRegistration(DeviceContext ctx, void* host, std::size_t bytes, std::uint64_t device_ptr,
                   bool read_only);
  void reset();

  std::unique_ptr<DeviceContext> ctx_;
  void* host_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t device_ptr_ = 0;
  bool read_only_ = false;
};

}  // namespace cxlpool::cuda
