// SPDX-License-Identifier: Apache-2.0
#include "backends.hpp"

#include "cxlpool_build_config.h"

#if CXLPOOL_HAVE_NUMA
#include "numa_probe.hpp"
#endif
#if CXLPOOL_HAVE_EMU
#include "emu_probe.hpp"
#endif
#if CXLPOOL_HAVE_DAX
#include "dax_probe.hpp"
#endif
#if CXLPOOL_HAVE_POSIX
#include "posix_probe.hpp"
#endif
#if CXLPOOL_HAVE_URING
#include "uring_probe.hpp"
#endif
#if CXLPOOL_HAVE_AIO
#include "aio_probe.hpp"
#endif
#if CXLPOOL_HAVE_MMAP
#include "mmap_probe.hpp"
#endif
#if CXLPOOL_HAVE_DPDK
#include "dpdk_probe.hpp"
#endif
#if CXLPOOL_HAVE_OFI
#include "ofi_probe.hpp"
#endif
#if CXLPOOL_HAVE_VERBS
#include "verbs_probe.hpp"
#endif
#if CXLPOOL_HAVE_HOST
#include "host_vmm_probe.hpp"
#endif
#if CXLPOOL_HAVE_CUDA
#include "cuda_probe.hpp"
#endif
#if CXLPOOL_HAVE_DAMON
#include "damon_probe.hpp"
#endif
#if CXLPOOL_HAVE_PERF
#include "perf_probe.hpp"
#endif

namespace cxlpool::daemon {
namespace {

[[maybe_unused]] hal::BackendReport not_compiled(const char* cls, const char* name, const char* reason) {
  return {cls, name, hal::BackendState::kNotCompiled, reason};
}

}  // namespace

std::vector<hal::BackendReport> probe_backends() {
  std::vector<hal::BackendReport> reports;
#if CXLPOOL_HAVE_NUMA
  reports.push_back(drivers::probe_numa());
#else
  reports.push_back(not_compiled("MemTier", "numa", CXLPOOL_HAVE_NUMA_REASON));
#endif
#if CXLPOOL_HAVE_DAX
  reports.push_back(drivers::probe_cxl());
#else
  reports.push_back(not_compiled("MemTier", "dax", CXLPOOL_HAVE_DAX_REASON));
#endif
#if CXLPOOL_HAVE_EMU
  reports.push_back(drivers::probe_emu());
#else
  reports.push_back(not_compiled("MemTier", "emu", CXLPOOL_HAVE_EMU_REASON));
#endif
#if CXLPOOL_HAVE_URING
  reports.push_back(drivers::probe_uring());
#else
  reports.push_back(not_compiled("BlockEngine", "uring", CXLPOOL_HAVE_URING_REASON));
#endif
#if CXLPOOL_HAVE_POSIX
  reports.push_back(drivers::probe_posix());
#else
  reports.push_back(not_compiled("BlockEngine", "posix", CXLPOOL_HAVE_POSIX_REASON));
#endif
#if CXLPOOL_HAVE_AIO
  reports.push_back(drivers::probe_aio());
#else
  reports.push_back(not_compiled("BlockEngine", "aio", CXLPOOL_HAVE_AIO_REASON));
#endif
#if CXLPOOL_HAVE_MMAP
  reports.push_back(drivers::probe_mmap());
#else
  reports.push_back(not_compiled("BlockEngine", "mmap", CXLPOOL_HAVE_MMAP_REASON));
#endif
#if CXLPOOL_HAVE_DPDK
  reports.push_back(drivers::probe_dpdk());
#else
  reports.push_back(not_compiled("NetPort", "dpdk", CXLPOOL_HAVE_DPDK_REASON));
#endif
#if CXLPOOL_HAVE_VERBS
  reports.push_back(drivers::probe_verbs());
#else
  reports.push_back(not_compiled("Transport", "verbs", CXLPOOL_HAVE_VERBS_REASON));
#endif
#if CXLPOOL_HAVE_OFI
  reports.push_back(drivers::probe_ofi());
#else
  reports.push_back(not_compiled("Transport", "ofi", CXLPOOL_HAVE_OFI_REASON));
#endif
#if CXLPOOL_HAVE_CUDA
  reports.push_back(cuda::probe_cuda());
#else
  reports.push_back(not_compiled("GpuVmm", "cuda", CXLPOOL_HAVE_CUDA_REASON));
#endif
#if CXLPOOL_HAVE_HOST
  reports.push_back(drivers::probe_host_vmm());
#else
  reports.push_back(not_compiled("GpuVmm", "host", CXLPOOL_HAVE_HOST_REASON));
#endif
#if CXLPOOL_HAVE_DAMON
  reports.push_back(drivers::probe_damon());
#else
  reports.push_back(not_compiled("AccessSource", "damon", CXLPOOL_HAVE_DAMON_REASON));
#endif
#if CXLPOOL_HAVE_PERF
  reports.push_back(drivers::probe_perf_sampling());
#else
  reports.push_back(not_compiled("AccessSource", "perf", CXLPOOL_HAVE_PERF_REASON));
#endif
  return reports;
}

}  // namespace cxlpool::daemon
