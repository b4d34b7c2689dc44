// SPDX-License-Identifier: Apache-2.0
// The backend registry: which backends this program has, whether each can
// run here, and opening one by name or the best available.
//
// The set of backends is fixed when a program is linked (daemon, libcxlpool,
// cxlpool-io each link the drivers they need); the table lists the others
// too, as "not compiled" with the build's reason. At run time the
// environment variable CXLPOOL_BACKENDS narrows the choice, as libfabric's
// FI_PROVIDER does:
//   CXLPOOL_BACKENDS=posix,host      only these, within the classes they name
//                                    (BlockEngine: posix; GpuVmm: host); other
//                                    classes keep all their backends
//   CXLPOOL_BACKENDS=^uring,cuda     every backend except these
// An excluded backend reports "not present" with the filter as the reason.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"
#include "cxlpool/hal/backend.hpp"
#include "cxlpool/hal/block_device.hpp"
#include "cxlpool/hal/gpu_copy.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"
#include "cxlpool/hal/mem_tier.hpp"
#include "cxlpool/hal/net_port.hpp"
#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/hal/shared_memory.hpp"
#include "cxlpool/hal/transport.hpp"

namespace cxlpool::hal {

inline constexpr const char* kBackendFilterVariable = "CXLPOOL_BACKENDS";

// A backend "best available" passed over, and why ("not compiled: liburing
// not found", "excluded by CXLPOOL_BACKENDS", or its open error).
struct BackendSkip {
  std::string name;
  std::string reason;
  // kNotCompiled: this program lacks it; kNotPresent: CXLPOOL_BACKENDS
  // excludes it; kFailed: it was tried here and refused.
  BackendState state = BackendState::kFailed;
};
using BackendSkips = std::vector<BackendSkip>;

// The entry open_block_device adds when it drops O_DIRECT and tries again
// buffered (BlockOpenOptions::buffered_fallback).
inline constexpr std::string_view kDirectIoSkip = "direct I/O";

// Runs every linked backend's probe (in class order, then preference
// order); backends not linked in or excluded are reported without probing.
std::vector<BackendReport> probe_all_backends();
std::vector<BackendReport> probe_backends(BackendClass cls);
// One backend's report (only its probe runs); nullopt when the build knows
// no backend of that class and name. A program tells why it lacks a backend
// with this: state kNotCompiled, the build's reason as the detail.
std::optional<BackendReport> probe_backend(BackendClass cls, std::string_view name);

// Names of the class's backends that may be chosen here (linked in and not
// excluded), most preferred first; explicit-only backends last.
std::vector<std::string> usable_backend_names(BackendClass cls);

// Checks CXLPOOL_BACKENDS: EINVAL naming the entry when it names no backend
// this build knows. The open functions below check it too.
Result<void> check_backend_filter();

// Empty or "auto" `backend`: the best available — each auto-selectable
// backend in preference order until one opens; an engine that refuses to run
// here is skipped (and listed in *skipped), an error about the file ends the
// search. With options.direct and buffered_fallback, a file system without
// O_DIRECT (EINVAL from every engine) is opened again buffered.
// A named backend: exactly that one; ENOTSUP when it was not compiled in or
// is excluded, EINVAL when no BlockEngine has that name, else its own error.
// Every error names the backend.
Result<std::unique_ptr<BlockDevice>> open_block_device(std::string_view backend, const std::string& path,
                                                       const BlockOpenOptions& options,
                                                       BackendSkips* skipped = nullptr);

// As open_block_device, for the GpuVmm class ("cuda" before "host").
Result<std::unique_ptr<GpuVmm>> open_gpu_vmm(std::string_view backend, int device,
                                              BackendSkips* skipped = nullptr);

// The copy engine of a GpuVmm backend on GPU `device`, chosen as
// open_gpu_vmm chooses: by name, ENOTSUP for a backend without one (host)
// as for one not compiled in or excluded; "auto" takes the first that opens.
// Otherwise the backend's error (cuda: ENOENT without libcuda.so.1, EINVAL
// for a device that does not exist, the driver's error otherwise).
Result<std::unique_ptr<GpuCopyEngine>> open_gpu_copy_engine(std::string_view backend, int device,
                                                            BackendSkips* skipped = nullptr);

// Pinned host memory on NUMA node `node` for GPU `device`, from the most
// preferred usable GpuVmm backend that exports any (cuda). ENOTSUP when no
// backend here can (the message names each one passed over and why: "cuda:
// not compiled: nvcc not found"); otherwise that backend's own error.
Result<GpuHostMemory> export_gpu_host_memory(int node, std::uint64_t bytes, int device,
                                             BackendSkips* skipped = nullptr);

// As open_block_device, for the AccessSource class ("damon" before
// "perf"); "best available" moves on whenever a source cannot be set up.
Result<std::unique_ptr<AccessSource>> open_access_source(std::string_view backend, const AccessSourceOptions& options,
                                                         BackendSkips* skipped = nullptr);

// As open_block_device, for the NetPort class, on network interface
// `interface` of the caller's network namespace: "best available" passes
// over backends that are only probes (dpdk) or that the kernel refuses
// here (EPERM without CAP_NET_RAW, EAFNOSUPPORT) and stops at ENODEV (no
// such interface) and EINVAL (a bad name or option).
Result<std::unique_ptr<NetPort>> open_net_port(std::string_view backend, const std::string& interface,
                                               const NetPortOptions& options, BackendSkips* skipped = nullptr);

// As open_block_device, for the Transport class (pods: data between hosts):
// "best available" passes over backends that are only probes (verbs) or
// find no provider; EINVAL (bad options, validate_transport_options) stops.
Result<std::unique_ptr<Transport>> open_transport(std::string_view backend, const TransportOptions& options,
                                                  BackendSkips* skipped = nullptr);

// Page placement among NUMA nodes from the most preferred usable MemTier
// backend that offers it (numa). ENOTSUP as export_gpu_host_memory when
// none can; otherwise the last backend's error.
Result<std::unique_ptr<PagePlacement>> open_page_placement(BackendSkips* skipped = nullptr);

// Shared memory for device links (shared_memory.hpp). A named backend
// ("file", "memfd", "devdax"): exactly that one, errors as
// open_block_device. Empty or "auto": the backend the spec is for, in
// rank order devdax (a path /dev/daxX.Y), file (any other path), memfd
// (no path); a backend that answers ENODEV ("not a spec for me") is passed
// over, any other error ends the search. Each backend's errors:
//   file    ENODEV (no path), ENOENT (missing and !create), EINVAL (not a
//           regular file; smaller than spec.size; size 0 for a new or empty
//           file), ENOMEM (hugetlbfs without free huge pages), or the errno
//           of open/ftruncate/mmap
//   memfd   ENODEV (a path given), EINVAL (size 0 for a new one; a received
//           fd that is not a memfd, lacks the grow/shrink seals or is
//           smaller than spec.size), or the errno of memfd_create/mmap
//   devdax  ENODEV (no path, or one that does not look like /dev/daxX.Y),
//           ENOENT (no such DAX device), EINVAL (not a character device;
//           device smaller than spec.size; bound to kmem, not device_dax),
//           or the errno of open/mmap
Result<SharedMemory> open_shared_memory(std::string_view backend, const SharedMemorySpec& spec,
                                        BackendSkips* skipped = nullptr);

// The CXL regions every usable MemTier backend that discovers regions (dax)
// finds; empty when no such backend is linked in or allowed. Errors: the
// first failing backend's, naming it.
Result<std::vector<MemRegionInfo>> discover_mem_regions();

}  // namespace cxlpool::hal
