// SPDX-License-Identifier: Apache-2.0
#include "dpdk_module_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string_view>
#include <vector>

#include "dpdk_build_info.h"

namespace cxlpool::drivers {
namespace {

// The extension the build's -march baseline needs beyond x86-64, or nullptr
// when this CPU has it. Loading DPDK on a CPU without it is SIGILL.
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

Result<const CxlpoolDpdkModule*> load_once() {
  const std::string built = dpdk_build_text();
  if (const char* feature = missing_cpu_feature(CXLPOOL_DPDK_MACHINE)) {
    return fail(ENOTSUP, "this CPU lacks " + std::string(feature) + ", which " + built + " (-march=" +
                             CXLPOOL_DPDK_MACHINE + ") requires");
  }
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("CXLPOOL_DPDK_MODULE"); path != nullptr && *path != '\0') {
    candidates.emplace_back(path);
  } else {
    candidates = {CXLPOOL_DPDK_MODULE_INSTALLED, CXLPOOL_DPDK_MODULE_BUILT};
  }
  std::string tried;
  for (const std::string& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(why != nullptr ? why : path);
      continue;
    }
    auto entry = reinterpret_cast<CxlpoolDpdkEntry>(dlsym(handle, CXLPOOL_DPDK_ENTRY));
    const CxlpoolDpdkModule* module = entry != nullptr ? entry() : nullptr;
    if (module == nullptr || module->abi_version != CXLPOOL_DPDK_ABI_VERSION) {
      tried += (tried.empty() ? "" : "; ") + path + ": not a cxlpool DPDK module of ABI version " +
               std::to_string(CXLPOOL_DPDK_ABI_VERSION);
      continue;
    }
    return module;
  }
  return fail(ENOTSUP, built + ": cannot load the DPDK port module (" + tried + ")");
}

}  // namespace

std::string dpdk_build_text() { return std::string("DPDK ") + CXLPOOL_DPDK_VERSION; }

Result<const CxlpoolDpdkModule*> load_dpdk_module() {
  static std::once_flag once;
  static Result<const CxlpoolDpdkModule*> loaded = fail(ENOTSUP, "not loaded");
  std::call_once(once, [] { loaded = load_once(); });
  return loaded;
}

}  // namespace cxlpool::drivers
