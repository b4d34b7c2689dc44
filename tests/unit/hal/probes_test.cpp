// SPDX-License-Identifier: Apache-2.0
// Runs every compiled backend probe on this host. A backend that was not
// compiled must carry the reason the build recorded.
#include <filesystem>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend.hpp"
#include "cxlpool/hal/topology.hpp"
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
#if CXLPOOL_HAVE_DPDK
#include "dpdk_probe.hpp"
#endif
#if CXLPOOL_HAVE_OFI
#include "ofi_probe.hpp"
#endif
#if CXLPOOL_HAVE_VERBS
#include "verbs_probe.hpp"
#endif

namespace cxlpool::drivers {
namespace {

using hal::BackendReport;
using hal::BackendState;

void expect_well_formed(const BackendReport& r, const char* cls, const char* name) {
  EXPECT_EQ(r.cls, cls);
  EXPECT_EQ(r.name, name);
  EXPECT_TRUE(r.state == BackendState::kAvailable || r.state == BackendState::kNotPresent ||
              r.state == BackendState::kFailed)
      << name << ": a compiled backend cannot report 'not compiled'";
  EXPECT_FALSE(r.detail.empty()) << name;
  // Shown by `cxlpoolctl backends`: keep it one line.
  EXPECT_EQ(r.detail.find('\n'), std::string::npos) << r.detail;
  ::testing::Test::RecordProperty(name, std::string(hal::backend_state_name(r.state)) + ": " + r.detail);
  std::cout << "  " << cls << "/" << name << ": " << hal::backend_state_name(r.state) << " ("
            << r.detail << ")\n";
}

size_t count_entries(const std::string& dir, const std::string& prefix) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

#define EXPECT_REASON_RECORDED(HAVE, REASON)                                  \
  do {                                                                        \
    if (!(HAVE)) {                                                            \
      EXPECT_STRNE(REASON, "") << #HAVE " is 0 without a reason";             \
    }                                                                         \
  } while (0)

TEST(Probes, NotCompiledBackendsHaveReasons) {
  EXPECT_REASON_RECORDED(CXLPOOL_HAVE_NUMA, CXLPOOL_HAVE_NUMA_REASON);
  EXPECT_REASON_RECORDED(CXLPOOL_HAVE_DAX, CXLPOOL_HAVE_DAX_REASON);
  EXPECT_REASON_RECORDED(CXLPOOL_HAVE_URING, CXLPOOL_HAVE_URING_REASON);
  EXPECT_REASON_RECORDED(CXLPOOL_HAVE_DPDK, CXLPOOL_HAVE_DPDK_REASON);
  EXPECT_REASON_RECORDED(CXLPOOL_HAVE_OFI, CXLPOOL_HAVE_OFI_REASON);
  EXPECT_REASON_RECORDED(CXLPOOL_HAVE_VERBS, CXLPOOL_HAVE_VERBS_REASON);
  // The software backends need no library, so they are always built.
  EXPECT_EQ(CXLPOOL_HAVE_EMU, 1);
  EXPECT_EQ(CXLPOOL_HAVE_POSIX, 1);
}

#if CXLPOOL_HAVE_NUMA
TEST(Probes, Numa) {
  const BackendReport r = probe_numa();
  expect_well_formed(r, "MemTier", "numa");
  if (!std::filesystem::exists("/sys/devices/system/node")) {
    EXPECT_EQ(r.state, BackendState::kNotPresent);
    return;
  }
  ASSERT_EQ(r.state, BackendState::kAvailable);
  auto t = hal::discover_topology(SysfsRoot("/"));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(r.detail.rfind(std::to_string(t->nodes.size()) + " node(s), libnuma ", 0), 0u)
      << r.detail;
}
#endif

#if CXLPOOL_HAVE_EMU
TEST(Probes, Emu) {
  const BackendReport r = probe_emu();
  expect_well_formed(r, "MemTier", "emu");
  EXPECT_EQ(r.state, BackendState::kAvailable);
  EXPECT_EQ(r.detail.rfind("memfd", 0), 0u) << r.detail;
  EXPECT_NE(r.detail.find("huge pages"), std::string::npos) << r.detail;
}
#endif

#if CXLPOOL_HAVE_DAX
TEST(Probes, Dax) {
  const BackendReport r = probe_cxl();
  expect_well_formed(r, "MemTier", "dax");
  ASSERT_NE(r.state, BackendState::kFailed) << r.detail;
  const size_t memdevs = count_entries("/sys/bus/cxl/devices", "mem");
  const size_t dax = count_entries("/sys/bus/dax/devices", "dax");
  if (memdevs == 0 && dax == 0) {
    EXPECT_EQ(r.state, BackendState::kNotPresent);
    EXPECT_EQ(r.detail.rfind("no CXL memdevs", 0), 0u) << r.detail;
  } else {
    EXPECT_EQ(r.state, BackendState::kAvailable);
    EXPECT_NE(r.detail.find(std::to_string(memdevs) + " memdev(s)"), std::string::npos) << r.detail;
  }
}
#endif

#if CXLPOOL_HAVE_POSIX
TEST(Probes, Posix) {
  const BackendReport r = probe_posix();
  expect_well_formed(r, "BlockEngine", "posix");
  EXPECT_EQ(r.state, BackendState::kAvailable);
}
#endif

#if CXLPOOL_HAVE_URING
TEST(Probes, Uring) {
  const BackendReport r = probe_uring();
  expect_well_formed(r, "BlockEngine", "uring");
  EXPECT_NE(r.detail.find("liburing "), std::string::npos) << r.detail;
  if (r.state == BackendState::kAvailable) {
    EXPECT_NE(r.detail.find(" opcodes, features 0x"), std::string::npos) << r.detail;
  } else {
    EXPECT_NE(r.detail.find("io_uring_setup"), std::string::npos) << r.detail;
  }
}
#endif

#if CXLPOOL_HAVE_DPDK
TEST(Probes, Dpdk) {
  const BackendReport r = probe_dpdk();
  expect_well_formed(r, "NetPort", "dpdk");
  // Debian's DPDK is built for -march=corei7: every CPU with SSE4.2 loads it.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    EXPECT_EQ(r.state, BackendState::kAvailable);
    EXPECT_EQ(r.detail.rfind("DPDK ", 0), 0u) << r.detail;
  } else {
    EXPECT_EQ(r.state, BackendState::kNotPresent);
    EXPECT_EQ(r.detail.rfind("this CPU lacks ", 0), 0u) << r.detail;
  }
}
#endif

#if CXLPOOL_HAVE_OFI
TEST(Probes, Ofi) {
  const BackendReport r = probe_ofi();
  expect_well_formed(r, "Transport", "ofi");
  EXPECT_EQ(r.detail.rfind("libfabric ", 0), 0u) << r.detail;
  if (r.state == BackendState::kAvailable) {
    EXPECT_NE(r.detail.find("; providers: "), std::string::npos) << r.detail;
  }
}
#endif

#if CXLPOOL_HAVE_VERBS
TEST(Probes, Verbs) {
  const BackendReport r = probe_verbs();
  expect_well_formed(r, "Transport", "verbs");
  const size_t devices = count_entries("/sys/class/infiniband", "");
  if (devices == 0) {
    EXPECT_EQ(r.state, BackendState::kNotPresent);
    EXPECT_EQ(r.detail.rfind("no RDMA devices", 0), 0u) << r.detail;
  } else if (r.state == BackendState::kAvailable) {
    EXPECT_NE(r.detail.find("RDMA device(s): "), std::string::npos) << r.detail;
  }
}
#endif

}  // namespace
}  // namespace cxlpool::drivers
