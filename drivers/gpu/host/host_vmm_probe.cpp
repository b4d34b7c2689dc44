// SPDX-License-Identifier: Apache-2.0
#include "host_vmm_probe.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::drivers {
namespace {

Result<void> reserve_and_map_one_chunk() {
  UniqueFd chunk(::memfd_create("cxlpool-host-vmm-probe", MFD_CLOEXEC));
  if (!chunk) return fail_errno("memfd_create");
  if (::ftruncate(chunk.get(), kHostVmmGranularity) != 0) return fail_errno("ftruncate memfd");

  // mmap only promises page alignment: reserve one extra granule and place
  // the chunk at the first 64 KiB boundary inside the reservation.
  auto reserved = Mapping::map(2 * kHostVmmGranularity, PROT_NONE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
  if (!reserved) {
    return fail(reserved.error().code, "reserve address space: " + reserved.error().message);
  }
  const auto base = reinterpret_cast<uintptr_t>(reserved->addr());
  const uintptr_t aligned = (base + kHostVmmGranularity - 1) & ~(kHostVmmGranularity - 1);
  void* slot = reinterpret_cast<void*>(aligned);

  // MAP_FIXED replaces part of our own PROT_NONE reservation; the Mapping
  // still unmaps the whole reservation (chunk included) on return.
  void* mapped = ::mmap(slot, kHostVmmGranularity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                        chunk.get(), 0);
  if (mapped == MAP_FAILED) return fail_errno("mmap memfd chunk MAP_FIXED");
  if (mapped != slot) return fail(EFAULT, "mmap MAP_FIXED placed the chunk elsewhere");

  // A mapping that is not really the file (or not really shared) would show
  // up here: bytes written through memory must be readable through the fd.
  auto* bytes = static_cast<unsigned char*>(mapped);
  for (size_t i = 0; i < kHostVmmGranularity; i += 4096) {
    bytes[i] = static_cast<unsigned char>(0xA5 ^ (i >> 12));
  }
  bytes[kHostVmmGranularity - 1] = 0x5A;
  unsigned char check[2] = {};
  if (::pread(chunk.get(), &check[0], 1, 4096 * 3) != 1 ||
      ::pread(chunk.get(), &check[1], 1, kHostVmmGranularity - 1) != 1) {
    return fail_errno("pread memfd chunk");
  }
  if (check[0] != (0xA5 ^ 3) || check[1] != 0x5A) {
    return fail(EIO, "memfd chunk does not hold what was written through its mapping");
  }
  return {};
}

}  // namespace

hal::BackendReport probe_host_vmm() {
  hal::BackendReport report{"GpuVmm", "host", hal::BackendState::kAvailable, ""};
  if (auto r = reserve_and_map_one_chunk(); !r) {
    report.state = hal::BackendState::kFailed;
    report.detail = r.error().message;
    return report;
  }
  report.detail = "mmap reserve + memfd MAP_FIXED, " + std::to_string(kHostVmmGranularity >> 10) +
                  " KiB granularity";
  return report;
}

}  // namespace cxlpool::drivers
