// SPDX-License-Identifier: Apache-2.0
// hal::open_shared_memory through the registry of every built backend:
// "auto" picks the backend the spec is for, names pick exactly one.
#include <filesystem>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend_registry.hpp"
#include "support/environment.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::hal {
namespace {

SharedMemorySpec spec_for(const std::string& path, uint64_t size) {
  SharedMemorySpec spec;
  spec.path = path;
  spec.size = size;
  return spec;
}

TEST(OpenSharedMemory, AutoPicksTheBackendTheSpecIsFor) {
  test::TempDir dir("shm-open");
  BackendSkips skipped;
  auto file = open_shared_memory("auto", spec_for(dir.resolve("pod").string(), 4096), &skipped);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_EQ(file->info().backend, "file");
  ASSERT_FALSE(skipped.empty());
  EXPECT_EQ(skipped.front().name, "devdax") << "devdax ranks first and declines a plain path";

  auto memfd = open_shared_memory("", spec_for("", 4096));
  ASSERT_TRUE(memfd.has_value()) << memfd.error().message;
  EXPECT_EQ(memfd->info().backend, "memfd");
}

TEST(OpenSharedMemory, AMissingDaxDeviceIsNeverCreatedAsAFile) {
  // A DAX path whose device is absent ends the search: the file backend
  // must not make a regular file under /dev in its place.
  auto r = open_shared_memory("auto", spec_for("/dev/dax97.3", 4096));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENOENT) << r.error().message;
  EXPECT_NE(r.error().message.find("SharedMemory devdax"), std::string::npos) << r.error().message;
  EXPECT_FALSE(std::filesystem::exists("/dev/dax97.3"));
}

TEST(OpenSharedMemory, ANamedBackendGetsExactlyThatOne) {
  auto r = open_shared_memory("file", spec_for("", 4096));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENODEV);
  EXPECT_NE(r.error().message.find("SharedMemory file"), std::string::npos) << r.error().message;
  auto unknown = open_shared_memory("nosuch", spec_for("", 4096));
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, EINVAL);
}

TEST(OpenSharedMemory, TheFilterExcludesBackends) {
  test::ScopedEnv env("CXLPOOL_BACKENDS", "^memfd");
  auto r = open_shared_memory("memfd", spec_for("", 4096));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENOTSUP);
  test::TempDir dir("shm-open");
  auto file = open_shared_memory("auto", spec_for(dir.resolve("pod").string(), 4096));
  EXPECT_TRUE(file.has_value()) << file.error().message;
}

TEST(OpenSharedMemory, ProbesReportTheClass) {
  const auto reports = probe_backends(BackendClass::kSharedMemory);
  ASSERT_EQ(reports.size(), 3u);
  for (const auto& r : reports) {
    EXPECT_EQ(r.cls, "SharedMemory");
    EXPECT_FALSE(r.detail.empty()) << r.name;
  }
  EXPECT_EQ(reports[0].name, "devdax");
  EXPECT_EQ(reports[1].name, "file");
  EXPECT_EQ(reports[2].name, "memfd");
  EXPECT_EQ(reports[1].state, BackendState::kAvailable);
  EXPECT_EQ(reports[2].state, BackendState::kAvailable);
}

}  // namespace
}  // namespace cxlpool::hal
