// SPDX-License-Identifier: Apache-2.0
// The host GpuVmm probe really reserves, maps and checks a chunk; it must
// succeed on any Linux host and leave nothing behind.
#include "host_vmm_probe.hpp"

#include <dirent.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace cxlpool::drivers {
namespace {

// Mappings of the probe's memfd chunk. Other mappings are not counted:
// allocators (ASan's especially) map and guard memory of their own at any
// time, so a whole-process count would flag them.
size_t count_probe_like_mappings() {
  std::ifstream in("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("memfd:cxlpool-host-vmm-probe") != std::string::npos) ++n;
  }
  return n;
}

size_t count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  size_t n = 0;
  while (::readdir(dir) != nullptr) ++n;
  ::closedir(dir);
  return n;
}

TEST(HostVmmProbe, AvailableWith64KiBGranularity) {
  const hal::BackendReport report = probe_host_vmm();
  EXPECT_EQ(report.cls, "GpuVmm");
  EXPECT_EQ(report.name, "host");
  EXPECT_EQ(report.state, hal::BackendState::kAvailable) << report.detail;
  EXPECT_EQ(report.detail, "mmap reserve + memfd MAP_FIXED, 64 KiB granularity");
  EXPECT_EQ(kHostVmmGranularity, 65536u);
}

TEST(HostVmmProbe, LeavesNoMappingOrDescriptorBehind) {
  (void)probe_host_vmm();  // let one-time allocations (iostreams, malloc arenas) settle
  const size_t maps_before = count_probe_like_mappings();
  const size_t fds_before = count_open_fds();
  for (int i = 0; i < 8; ++i) ASSERT_EQ(probe_host_vmm().state, hal::BackendState::kAvailable);
  EXPECT_EQ(count_probe_like_mappings(), maps_before);
  EXPECT_EQ(count_open_fds(), fds_before);
}

}  // namespace
}  // namespace cxlpool::drivers
