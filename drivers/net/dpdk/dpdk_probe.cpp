// SPDX-License-Identifier: Apache-2.0
#include "dpdk_probe.hpp"

#include <dlfcn.h>

#include <string>
#include <string_view>

#include "cxlpool/common/sysfs_root.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/huge_pages.hpp"
#include "dpdk_build_info.h"

namespace cxlpool::drivers {
namespace {

// The extension the build's -march baseline needs beyond x86-64, or nullptr
// when this CPU has it. Loading EAL on a CPU without it is SIGILL.
const char* missing_cpu_feature(std::string_view machine) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (machine == "haswell" || machine == "core-avx2" || machine == "x86-64-v3" ||
      machine == "skylake" || machine == "znver1" || machine == "znver2" || machine == "znver3") {
    if (!__builtin_cpu_supports("avx2")) return "AVX2";
  }
  if (machine == "sandybridge" || machine == "corei7-avx" || machine == "ivybridge") {
    if (!__builtin_cpu_supports("avx")) return "AVX";
  }
  if (machine != "x86-64" && machine != "generic" && !__builtin_cpu_supports("sse4.2")) {
    return "SSE4.2";  // DPDK's minimum on x86 (-march=corei7)
  }
#else
  (void)machine;
#endif
  return nullptr;
}

std::string huge_page_text() {
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (!pool) return "huge pages unknown (" + pool.error().message + "): EAL needs --no-huge";
  if (pool->total == 0) return "no huge pages configured: EAL needs --no-huge";
  return std::to_string(pool->free) + " of " + std::to_string(pool->total) + " huge pages of " +
         format_size(pool->page_size) + " free";
}

}  // namespace

hal::BackendReport probe_dpdk() {
  hal::BackendReport report{"NetPort", "dpdk", hal::BackendState::kNotPresent, ""};
  const std::string built = std::string("DPDK ") + CXLPOOL_DPDK_VERSION;
  if (const char* feature = missing_cpu_feature(CXLPOOL_DPDK_MACHINE)) {
    report.detail = "this CPU lacks " + std::string(feature) + ", which " + built +
                    " (-march=" + CXLPOOL_DPDK_MACHINE + ") requires";
    return report;
  }
  // Stays loaded: EAL registers state in its constructors and does not
  // support being unloaded; the dpdk backend uses it afterwards anyway.
  void* eal = dlopen(CXLPOOL_DPDK_EAL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (eal == nullptr) {
    report.state = hal::BackendState::kFailed;
    report.detail = built + ": dlopen " + CXLPOOL_DPDK_EAL_SONAME + ": " + dlerror();
    return report;
  }
  using VersionFn = const char* (*)();
  auto version = reinterpret_cast<VersionFn>(dlsym(eal, "rte_version"));
  if (version == nullptr) {
    report.state = hal::BackendState::kFailed;
    report.detail = built + ": " + CXLPOOL_DPDK_EAL_SONAME + " has no rte_version";
    return report;
  }
  report.state = hal::BackendState::kAvailable;
  report.detail = std::string(version()) + " (" + CXLPOOL_DPDK_EAL_SONAME + "); " + huge_page_text();
  return report;
}

}  // namespace cxlpool::drivers
