// SPDX-License-Identifier: Apache-2.0
// Runs every backend probe this build links in, through the registry, on
// this host. Every built backend must answer with a one-line detail; every
// backend the build left out must carry the reason it recorded.
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/topology.hpp"
#include "support/dir_entries.hpp"

namespace cxlpool::hal {
namespace {

const std::vector<BackendReport>& reports() {
  static const std::vector<BackendReport> all = probe_all_backends();
  return all;
}

const BackendReport* find_report(const std::string& name) {
  for (const auto& r : reports()) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

using test::count_dir_entries;

TEST(Probes, EveryBackendAnswersWithADetailOrTheBuildsReason) {
  const std::set<std::string> classes = {"MemTier", "BlockEngine", "NetPort", "Transport", "GpuVmm", "AccessSource",
                                            "SharedMemory"};
  std::set<std::string> names;
  for (const auto& r : reports()) {
    SCOPED_TRACE(r.cls + "/" + r.name);
    EXPECT_TRUE(classes.count(r.cls)) << r.cls;
    EXPECT_TRUE(names.insert(r.name).second) << "reported twice";
    // Shown by `cxlpoolctl backends`: never empty, one line.
    EXPECT_FALSE(r.detail.empty()) << (r.state == BackendState::kNotCompiled ? "not compiled without a reason"
                                                                             : "built without a detail");
    EXPECT_EQ(r.detail.find('\n'), std::string::npos) << r.detail;
    // Keyed by class too: gtest reserves some plain words ("file") as keys.
    ::testing::Test::RecordProperty(r.cls + "_" + r.name, std::string(backend_state_name(r.state)) + ": " + r.detail);
    std::cout << "  " << r.cls << "/" << r.name << ": " << backend_state_name(r.state) << " (" << r.detail << ")\n";
  }
  for (const char* name : {"numa", "emu", "dax", "posix", "uring", "aio", "mmap", "dpdk", "packet", "afxdp", "ofi",
                           "verbs", "host", "cuda", "damon", "perf"}) {
    EXPECT_TRUE(names.count(name)) << "no report for " << name;
  }
  // The software backends need no library, so they are always built.
  for (const char* name : {"emu", "posix", "mmap", "host", "packet"}) {
    const BackendReport* r = find_report(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_NE(r->state, BackendState::kNotCompiled) << name << ": " << r->detail;
  }
  // Nor do the SharedMemory backends (devdax reads sysfs, not libdaxctl).
  for (const char* name : {"file", "memfd", "devdax"}) {
    const BackendReport* r = find_report(name);
    ASSERT_NE(r, nullptr) << "no report for " << name;
    EXPECT_EQ(r->cls, "SharedMemory") << name;
    EXPECT_NE(r->state, BackendState::kNotCompiled) << name << ": " << r->detail;
  }
}

// The report of a backend this build has, or a skip with the reason it
// lacks it.
#define BUILT_REPORT(var, name)                                                               \
  const BackendReport* var = find_report(name);                                               \
  ASSERT_NE(var, nullptr) << "no report for " << name;                                         \
  if (var->state == BackendState::kNotCompiled) GTEST_SKIP() << name << ": " << var->detail;   \
  if (var->detail.rfind("excluded by ", 0) == 0) GTEST_SKIP() << name << ": " << var->detail

TEST(Probes, Numa) {
  BUILT_REPORT(r, "numa");
  EXPECT_EQ(r->cls, "MemTier");
  if (!std::filesystem::exists("/sys/devices/system/node")) {
    EXPECT_EQ(r->state, BackendState::kNotPresent);
    return;
  }
  ASSERT_EQ(r->state, BackendState::kAvailable);
  auto t = discover_topology(SysfsRoot("/"));
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(r->detail.rfind(std::to_string(t->nodes.size()) + " node(s), libnuma ", 0), 0u) << r->detail;
}

TEST(Probes, Emu) {
  BUILT_REPORT(r, "emu");
  EXPECT_EQ(r->cls, "MemTier");
  EXPECT_EQ(r->state, BackendState::kAvailable);
  EXPECT_EQ(r->detail.rfind("memfd", 0), 0u) << r->detail;
  EXPECT_NE(r->detail.find("huge pages"), std::string::npos) << r->detail;
}

TEST(Probes, Dax) {
  BUILT_REPORT(r, "dax");
  EXPECT_EQ(r->cls, "MemTier");
  ASSERT_NE(r->state, BackendState::kFailed) << r->detail;
  const size_t memdevs = count_dir_entries("/sys/bus/cxl/devices", "mem");
  const size_t dax = count_dir_entries("/sys/bus/dax/devices", "dax");
  if (memdevs == 0 && dax == 0) {
    EXPECT_EQ(r->state, BackendState::kNotPresent);
    EXPECT_EQ(r->detail.rfind("no CXL memdevs", 0), 0u) << r->detail;
  } else {
    EXPECT_EQ(r->state, BackendState::kAvailable);
    EXPECT_NE(r->detail.find(std::to_string(memdevs) + " memdev(s)"), std::string::npos) << r->detail;
  }
}

TEST(Probes, Posix) {
  BUILT_REPORT(r, "posix");
  EXPECT_EQ(r->cls, "BlockEngine");
  EXPECT_EQ(r->state, BackendState::kAvailable);
}

TEST(Probes, Uring) {
  BUILT_REPORT(r, "uring");
  EXPECT_EQ(r->cls, "BlockEngine");
  EXPECT_NE(r->detail.find("liburing "), std::string::npos) << r->detail;
  if (r->state == BackendState::kAvailable) {
    EXPECT_NE(r->detail.find(" opcodes, features 0x"), std::string::npos) << r->detail;
  } else {
    EXPECT_NE(r->detail.find("io_uring_setup"), std::string::npos) << r->detail;
  }
}

TEST(Probes, Dpdk) {
  BUILT_REPORT(r, "dpdk");
  EXPECT_EQ(r->cls, "NetPort");
  // Debian's DPDK is built for -march=corei7: every CPU with SSE4.2 loads it.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sse4.2")) {
    EXPECT_EQ(r->state, BackendState::kAvailable);
    EXPECT_EQ(r->detail.rfind("DPDK ", 0), 0u) << r->detail;
  } else {
    EXPECT_EQ(r->state, BackendState::kNotPresent);
    EXPECT_EQ(r->detail.rfind("this CPU lacks ", 0), 0u) << r->detail;
  }
}

TEST(Probes, Packet) {
  BUILT_REPORT(r, "packet");
  EXPECT_EQ(r->cls, "NetPort");
  if (r->state != BackendState::kAvailable) {
    EXPECT_EQ(r->state, BackendState::kNotPresent);
    EXPECT_EQ(r->detail.rfind("AF_PACKET socket: ", 0), 0u) << r->detail;
  }
}

TEST(Probes, Afxdp) {
  BUILT_REPORT(r, "afxdp");
  EXPECT_EQ(r->cls, "NetPort");
  if (r->state == BackendState::kAvailable) {
    EXPECT_NE(r->detail.find("libxdp "), std::string::npos) << r->detail;
  } else {
    EXPECT_EQ(r->state, BackendState::kNotPresent);
    EXPECT_EQ(r->detail.rfind("AF_XDP socket: ", 0), 0u) << r->detail;
  }
}

TEST(Probes, Ofi) {
  BUILT_REPORT(r, "ofi");
  EXPECT_EQ(r->cls, "Transport");
  EXPECT_EQ(r->detail.rfind("libfabric ", 0), 0u) << r->detail;
  if (r->state == BackendState::kAvailable) {
    EXPECT_NE(r->detail.find("; providers: "), std::string::npos) << r->detail;
  }
}

TEST(Probes, Verbs) {
  BUILT_REPORT(r, "verbs");
  EXPECT_EQ(r->cls, "Transport");
  const size_t devices = count_dir_entries("/sys/class/infiniband", "");
  if (devices == 0) {
    EXPECT_EQ(r->state, BackendState::kNotPresent);
    EXPECT_EQ(r->detail.rfind("no RDMA devices", 0), 0u) << r->detail;
  } else if (r->state == BackendState::kAvailable) {
    EXPECT_NE(r->detail.find("RDMA device(s): "), std::string::npos) << r->detail;
  }
}

}  // namespace
}  // namespace cxlpool::hal
