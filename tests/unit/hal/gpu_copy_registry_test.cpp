// SPDX-License-Identifier: Apache-2.0
// hal::open_gpu_copy_engine against a table of test GpuVmm backends: a
// backend without a copy engine (as host) is ENOTSUP by name and passed over
// by "auto", one not compiled in is ENOTSUP with the build's reason, and a
// backend's own error names it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/driver/gpu_vmm_driver.hpp"

namespace cxlpool::hal {
namespace {

class NullEngine final : public GpuCopyEngine {
 public:
  explicit NullEngine(int device) : device_(device) {}
  const char* name() const override { return "withengine"; }
  int device() const override { return device_; }
  Result<void> bind_thread() override { return {}; }
  Result<std::unique_ptr<GpuDeviceBuffer>> allocate_device(size_t) override { return fail(ENOMEM, "none"); }
  Result<std::unique_ptr<GpuPinnedBuffer>> allocate_pinned(size_t) override { return fail(ENOMEM, "none"); }
  HostRangeRegistration register_host_range(const std::byte*, size_t) override { return {}; }
  Result<void> copy_to_device(uint64_t, const void*, size_t) override { return {}; }
  Result<void> copy_to_host(void*, uint64_t, size_t) override { return {}; }
  Result<void> synchronize() override { return {}; }

 private:
  int device_;
};

Result<std::unique_ptr<GpuCopyEngine>> open_engine(int device) {
  if (device > 0) return fail(ENODEV, "no device " + std::to_string(device));
  return std::make_unique<NullEngine>(device);
}

BackendReport available() { return {"", "", BackendState::kAvailable, "test backend"}; }

}  // namespace
}  // namespace cxlpool::hal

// Preferred, but without device memory of its own.
CXLPOOL_REGISTER_BACKEND(noengine, cxlpool::hal::GpuVmmOps, "noengine", 5, &cxlpool::hal::available,
                         (cxlpool::hal::GpuVmmOps{nullptr}))
CXLPOOL_REGISTER_BACKEND(withengine, cxlpool::hal::GpuVmmOps, "withengine", 10, &cxlpool::hal::available,
                         (cxlpool::hal::GpuVmmOps{nullptr, &cxlpool::hal::open_engine}))

namespace cxlpool::hal {

std::span<const BackendTableEntry> linked_backends() {
  static const BackendTableEntry table[] = {
      {&backends::noengine, BackendClass::kGpuVmm, "noengine", nullptr},
      {&backends::withengine, BackendClass::kGpuVmm, "withengine", nullptr},
      {nullptr, BackendClass::kGpuVmm, "absentgpu", "libabsentgpu not found"},
  };
  return table;
}

namespace {

class GpuCopyRegistry : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv(kBackendFilterVariable); }
  void TearDown() override { ::unsetenv(kBackendFilterVariable); }
};

TEST_F(GpuCopyRegistry, BestAvailablePassesOverABackendWithoutAnEngine) {
  BackendSkips skipped;
  auto engine = open_gpu_copy_engine("auto", 0, &skipped);
  ASSERT_TRUE(engine) << engine.error().message;
  EXPECT_STREQ((*engine)->name(), "withengine");
  bool noted = false;
  for (const auto& s : skipped) noted = noted || (s.name == "noengine" && s.reason.find("no copy engine") != std::string::npos);
  EXPECT_TRUE(noted);
}

TEST_F(GpuCopyRegistry, NamedChoices) {
  auto none = open_gpu_copy_engine("noengine", 0);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ENOTSUP);
  EXPECT_NE(none.error().message.find("GpuVmm noengine"), std::string::npos) << none.error().message;

  auto absent = open_gpu_copy_engine("absentgpu", 0);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, ENOTSUP);
  EXPECT_NE(absent.error().message.find("libabsentgpu not found"), std::string::npos) << absent.error().message;

  auto no_device = open_gpu_copy_engine("withengine", 3);
  ASSERT_FALSE(no_device);
  EXPECT_EQ(no_device.error().code, ENODEV);
  EXPECT_NE(no_device.error().message.find("GpuVmm withengine: no device 3"), std::string::npos)
      << no_device.error().message;

  ::setenv(kBackendFilterVariable, "^withengine", 1);
  auto excluded = open_gpu_copy_engine("withengine", 0);
  ASSERT_FALSE(excluded);
  EXPECT_EQ(excluded.error().code, ENOTSUP);
  EXPECT_FALSE(open_gpu_copy_engine("auto", 0));
}

TEST_F(GpuCopyRegistry, AnEngineIsNotAVmm) {
  auto vmm = open_gpu_vmm("withengine", 0);
  ASSERT_FALSE(vmm);
  EXPECT_EQ(vmm.error().code, ENOTSUP);
}

}  // namespace
}  // namespace cxlpool::hal
