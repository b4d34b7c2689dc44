// SPDX-License-Identifier: Apache-2.0
// GpuVmm: reserve a virtually contiguous range once, then back pieces of it
// with physical memory on demand and take them back, without moving the
// range (the vAttention scheme). Two backends implement it:
//   host  (drivers/gpu/host): mmap(PROT_NONE) reservation, physical chunks
//         are file-descriptor backed (the daemon's region memfds) mapped
//         MAP_FIXED|MAP_SHARED; unmapping puts PROT_NONE back.
//   cuda  (cuda/): cuMemAddressReserve / cuMemCreate / cuMemMap /
//         cuMemSetAccess; file-descriptor memory is a POSIX_FILE_DESCRIPTOR
//         export imported with cuMemImportFromShareableHandle.
// Addresses are uint64_t: host pointers for `host`, CUdeviceptr for `cuda`.
// Physical memory is named by an opaque handle the backend hands out.
// Nothing here is thread-safe: callers serialize per GpuVmm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::hal {

using VmmHandle = std::uint64_t;

// Pinned host memory a GPU may map, exported by the backend's driver as a
// file descriptor that the same backend's import_fd takes (cuda: HOST_NUMA
// VMM memory). `bytes` is the size after the driver's rounding.
struct GpuHostMemory {
  UniqueFd fd;
  std::uint64_t bytes = 0;
};

struct VmmStats {
  std::uint64_t reserved_bytes = 0;
  std::uint64_t mapped_bytes = 0;
  std::uint64_t maps = 0, unmaps = 0;
  std::uint64_t map_ns = 0, unmap_ns = 0;  // total time inside map()/unmap()
};

class GpuVmm {
 public:
  virtual ~GpuVmm() = default;
  virtual const char* name() const = 0;  // "host" | "cuda"

  // Mapping and handle sizes must be multiples of this (host: 64 KiB;
  // cuda: cuMemGetAllocationGranularity, usually 2 MiB).
  virtual std::size_t granularity() const = 0;

  // Reserves `bytes` (a multiple of granularity) of address space with no
  // memory behind it. The range stays valid until release_range.
  virtual Result<std::uint64_t> reserve(std::size_t bytes) = 0;
  virtual Result<void> release_range(std::uint64_t va, std::size_t bytes) = 0;

  // Physical memory of the backend's own kind (cuda: device memory on the
  // backend's device; host: an anonymous memfd). ENOTSUP when it has none.
  virtual Result<VmmHandle> create(std::size_t bytes) = 0;

  // Adopts `bytes` of memory behind a file descriptor (dup'ed; the caller
  // keeps its own): host = a memfd/region fd mapped at offsets within it;
  // cuda = a POSIX_FILE_DESCRIPTOR shareable handle (offsets must be 0 in
  // map: the driver maps a handle whole or from its start).
  virtual Result<VmmHandle> import_fd(int fd, std::size_t bytes) = 0;

  // Drops the handle; memory goes away once nothing maps it any more.
  virtual Result<void> release(VmmHandle handle) = 0;

  // Backs [va, va+bytes) with [offset, offset+bytes) of `handle`, readable
  // and writable (cuda: by the backend's device). va/bytes/offset are
  // granularity multiples; va must be in a reserved range and unmapped.
  virtual Result<void> map(std::uint64_t va, std::size_t bytes, VmmHandle handle,
                           std::uint64_t offset) = 0;

  // Takes the memory away again; the range stays reserved.
  virtual Result<void> unmap(std::uint64_t va, std::size_t bytes) = 0;

  virtual VmmStats stats() const = 0;
};

}  // namespace cxlpool::hal
