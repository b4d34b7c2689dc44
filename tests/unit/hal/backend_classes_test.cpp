// SPDX-License-Identifier: Apache-2.0
// The registry's front-ends beyond block devices, against a table of test
// backends: access sources (options reach the driver, a source that cannot
// run moves the choice on), MemTier page placement and region discovery,
// GpuVmm host-memory export, and one backend's report.
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/driver/access_source_driver.hpp"
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"
#include "cxlpool/hal/driver/mem_tier_driver.hpp"
#include "no_backend_filter.hpp"

namespace cxlpool::hal {
namespace {

BackendReport available() { return {"", "", BackendState::kAvailable, "test backend"}; }

// An access source that remembers the sysfs root it was given.
class RootSource final : public AccessSource {
 public:
  explicit RootSource(std::string root) : root_(std::move(root)) {}
  std::string_view name() const override { return root_; }
  AccessSourceTraits traits() const override { return {}; }
  Result<void> collect(std::vector<PageAccess>&) override { return {}; }
  std::uint64_t accesses_total() const override { return 0; }

 private:
  std::string root_;
};

Result<std::unique_ptr<AccessSource>> no_pmu(const AccessSourceOptions&) {
  return fail(ENODEV, "no sampling PMU here");
}

Result<std::unique_ptr<AccessSource>> open_root_source(const AccessSourceOptions& options) {
  return std::unique_ptr<AccessSource>(new RootSource(options.sysfs_root));
}

Result<std::unique_ptr<PagePlacement>> no_numa() { return fail(ENOSYS, "kernel without NUMA support"); }

Result<std::vector<MemRegionInfo>> one_region() {
  return std::vector<MemRegionInfo>{{"region0", 1ull << 30, "ram", 2, "dax0.0", 3}};
}

Result<GpuHostMemory> no_gpu(int, std::uint64_t, int) { return fail(ENODEV, "no GPU"); }

}  // namespace
}  // namespace cxlpool::hal

CXLPOOL_REGISTER_BACKEND(flaky, cxlpool::hal::AccessSourceOps, "flaky", 5, &cxlpool::hal::available,
                         (cxlpool::hal::AccessSourceOps{&cxlpool::hal::no_pmu}))
CXLPOOL_REGISTER_BACKEND(steady, cxlpool::hal::AccessSourceOps, "steady", 10, &cxlpool::hal::available,
                         (cxlpool::hal::AccessSourceOps{&cxlpool::hal::open_root_source}))
CXLPOOL_REGISTER_BACKEND(finder, cxlpool::hal::MemTierOps, "finder", 5, &cxlpool::hal::available,
                         (cxlpool::hal::MemTierOps{nullptr, &cxlpool::hal::one_region}))
CXLPOOL_REGISTER_BACKEND(placer, cxlpool::hal::MemTierOps, "placer", 10, &cxlpool::hal::available,
                         (cxlpool::hal::MemTierOps{&cxlpool::hal::no_numa, nullptr}))
CXLPOOL_REGISTER_BACKEND(plainmem, cxlpool::hal::MemTierOps, "plainmem", 30, &cxlpool::hal::available,
                         (cxlpool::hal::MemTierOps{nullptr, nullptr}))
CXLPOOL_REGISTER_BACKEND(exporter, cxlpool::hal::GpuVmmOps, "exporter", 10, &cxlpool::hal::available,
                         (cxlpool::hal::GpuVmmOps{nullptr, nullptr, &cxlpool::hal::no_gpu}))
CXLPOOL_REGISTER_BACKEND(hostvmm, cxlpool::hal::GpuVmmOps, "hostvmm", 20, &cxlpool::hal::available,
                         (cxlpool::hal::GpuVmmOps{nullptr}))

namespace cxlpool::hal {

// This test program's backend table, as gen_backend_table.py would write it.
std::span<const BackendTableEntry> linked_backends() {
  static const BackendTableEntry table[] = {
      {&backends::flaky, BackendClass::kAccessSource, "flaky", nullptr},
      {&backends::steady, BackendClass::kAccessSource, "steady", nullptr},
      {nullptr, BackendClass::kAccessSource, "gone", "libgone not found"},
      {&backends::finder, BackendClass::kMemTier, "finder", nullptr},
      {&backends::placer, BackendClass::kMemTier, "placer", nullptr},
      {&backends::plainmem, BackendClass::kMemTier, "plainmem", nullptr},
      {&backends::exporter, BackendClass::kGpuVmm, "exporter", nullptr},
      {&backends::hostvmm, BackendClass::kGpuVmm, "hostvmm", nullptr},
      {nullptr, BackendClass::kGpuVmm, "gpuless", "nvcc not found"},
  };
  return table;
}

namespace {

using BackendClasses = NoBackendFilter;

TEST_F(BackendClasses, AccessSourcesGetTheOptionsAndMoveOnFromOneThatCannotRun) {
  AccessSourceOptions options;
  options.sysfs_root = "/fixture/sys";
  BackendSkips skipped;
  auto best = open_access_source("auto", options, &skipped);
  ASSERT_TRUE(best) << best.error().message;
  EXPECT_EQ((*best)->name(), "/fixture/sys");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].name, "gone");
  EXPECT_EQ(skipped[0].reason, "not compiled: libgone not found");
  EXPECT_EQ(skipped[1].name, "flaky");
  EXPECT_EQ(skipped[1].reason, "no sampling PMU here");

  auto named = open_access_source("flaky", options);
  ASSERT_FALSE(named);
  EXPECT_EQ(named.error().code, ENODEV);
  EXPECT_EQ(named.error().message, "AccessSource flaky: no sampling PMU here");

  auto gone = open_access_source("gone", options);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, ENOTSUP);
  EXPECT_EQ(gone.error().message, "AccessSource backend 'gone' is not compiled in: libgone not found");

  ::setenv(kBackendFilterVariable, "^steady", 1);
  auto excluded = open_access_source("steady", options);
  ASSERT_FALSE(excluded);
  EXPECT_EQ(excluded.error().code, ENOTSUP);
  EXPECT_NE(excluded.error().message.find("excluded by CXLPOOL_BACKENDS=^steady"), std::string::npos);
}

TEST_F(BackendClasses, OneBackendsReportProbesOnlyIt) {
  auto gone = probe_backend(BackendClass::kAccessSource, "gone");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->state, BackendState::kNotCompiled);
  EXPECT_EQ(gone->detail, "libgone not found");
  EXPECT_EQ(gone->cls, "AccessSource");
  auto steady = probe_backend(BackendClass::kAccessSource, "steady");
  ASSERT_TRUE(steady);
  EXPECT_EQ(steady->state, BackendState::kAvailable);
  EXPECT_EQ(steady->name, "steady");
  EXPECT_FALSE(probe_backend(BackendClass::kAccessSource, "placer")) << "a backend of another class";
  EXPECT_FALSE(probe_backend(BackendClass::kAccessSource, "nosuch"));
  EXPECT_FALSE(probe_backend(BackendClass::kAccessSource, ""));
  ::setenv(kBackendFilterVariable, "^steady", 1);
  steady = probe_backend(BackendClass::kAccessSource, "steady");
  ASSERT_TRUE(steady);
  EXPECT_EQ(steady->state, BackendState::kNotPresent);
  EXPECT_EQ(steady->detail, "excluded by CXLPOOL_BACKENDS=^steady");
}

TEST_F(BackendClasses, PagePlacementComesFromTheBackendThatOffersIt) {
  auto placement = open_page_placement();
  ASSERT_FALSE(placement);
  EXPECT_EQ(placement.error().code, ENOSYS);
  EXPECT_EQ(placement.error().message, "MemTier placer: kernel without NUMA support");

  ::setenv(kBackendFilterVariable, "^placer", 1);
  placement = open_page_placement();
  ASSERT_FALSE(placement);
  EXPECT_EQ(placement.error().code, ENOTSUP);
  EXPECT_EQ(placement.error().message,
            "no MemTier backend here can place pages (placer: excluded by CXLPOOL_BACKENDS=^placer)");
}

TEST_F(BackendClasses, RegionsComeFromEveryBackendThatFindsThem) {
  auto regions = discover_mem_regions();
  ASSERT_TRUE(regions) << regions.error().message;
  ASSERT_EQ(regions->size(), 1u);
  EXPECT_EQ((*regions)[0].name, "region0");
  EXPECT_EQ((*regions)[0].numa_node, 3);
  EXPECT_EQ((*regions)[0].memdevs, 2u);

  // None allowed to look: none found, not an error.
  ::setenv(kBackendFilterVariable, "^finder", 1);
  regions = discover_mem_regions();
  ASSERT_TRUE(regions) << regions.error().message;
  EXPECT_TRUE(regions->empty());

  ::setenv(kBackendFilterVariable, "finder,typo", 1);
  EXPECT_EQ(discover_mem_regions().error().code, EINVAL);
}

TEST_F(BackendClasses, HostMemoryExportSaysWhyNoBackendCan) {
  auto memory = export_gpu_host_memory(0, 1 << 20, 0);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code, ENODEV) << "the exporter's own answer";
  EXPECT_EQ(memory.error().message, "GpuVmm exporter: no GPU");

  ::setenv(kBackendFilterVariable, "^exporter", 1);
  BackendSkips skipped;
  memory = export_gpu_host_memory(0, 1 << 20, 0, &skipped);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().code, ENOTSUP);
  EXPECT_EQ(memory.error().message,
            "no GpuVmm backend here can export host memory (exporter: excluded by CXLPOOL_BACKENDS=^exporter; "
            "gpuless: not compiled: nvcc not found)");
  EXPECT_EQ(skipped.size(), 2u);
}

}  // namespace
}  // namespace cxlpool::hal
