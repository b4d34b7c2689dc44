// SPDX-License-Identifier: Apache-2.0
// SharedMemory/devdax on a sysfs tree built here: which DAX devices exist,
// which can be mapped, and the refusals that need no hardware.
#include "devdax_devices.hpp"

#include <filesystem>

#include <gtest/gtest.h>

#include "devdax_mapping.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::drivers {
namespace {

constexpr const char* kBus = "sys/bus/dax/devices/";

// dax0.0: 4 GiB, 1 GiB aligned, bound to device_dax (the one to map);
// dax1.0: onlined as system RAM through kmem; dax2.0: unbound, no align
// attribute of its own (its region's); dax_region: not a device.
class DaxTree : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("sys/bus/dax/drivers/device_dax/bind", "");
    dir_.write("sys/bus/dax/drivers/kmem/bind", "");
    add("dax0.0", "4294967296", "1073741824", "device_dax");
    dir_.write(std::string(kBus) + "dax0.0/target_node", "2");
    add("dax1.0", "2147483648", "2097152", "kmem");
    add("dax2.0", "1073741824", "", "");
    dir_.write(std::string(kBus) + "dax_region/align", "4096");
  }
  void add(const std::string& name, const std::string& size, const std::string& align, const std::string& driver) {
    const std::string d = std::string(kBus) + name;
    dir_.write(d + "/size", size + "\n");
    if (!align.empty()) dir_.write(d + "/align", align + "\n");
    if (!driver.empty()) {
      std::filesystem::create_directory_symlink(dir_.resolve("sys/bus/dax/drivers/" + driver), dir_.resolve(d + "/driver"));
    }
  }
  SysfsRoot root() const { return SysfsRoot(dir_.path()); }
  hal::SharedMemorySpec spec(const std::string& path, uint64_t size) const {
    hal::SharedMemorySpec s;
    s.path = path;
    s.size = size;
    return s;
  }
  test::TempDir dir_{"devdax"};
};

TEST_F(DaxTree, FindsEveryDeviceWithItsAlignmentAndDriver) {
  auto devices = find_devdax_devices(root());
  ASSERT_TRUE(devices.has_value()) << devices.error().message;
  ASSERT_EQ(devices->size(), 3u);
  const DevDaxDevice& d0 = (*devices)[0];
  EXPECT_EQ(d0.name, "dax0.0");
  EXPECT_EQ(d0.device_path, "/dev/dax0.0");
  EXPECT_EQ(d0.size_bytes, 4ull << 30);
  EXPECT_EQ(d0.align, 1ull << 30);
  EXPECT_EQ(d0.target_node, 2);
  EXPECT_EQ(d0.driver, "device_dax");
  EXPECT_TRUE(d0.mappable());
  EXPECT_EQ((*devices)[1].driver, "kmem");
  EXPECT_FALSE((*devices)[1].mappable());
  EXPECT_EQ((*devices)[2].driver, "");
  EXPECT_EQ((*devices)[2].align, 4096u) << "the region's alignment when the device has none";
}

TEST_F(DaxTree, DefaultsTheAlignmentAndRejectsABadOne) {
  dir_.remove(std::string(kBus) + "dax_region");
  auto devices = find_devdax_devices(root());
  ASSERT_TRUE(devices.has_value()) << devices.error().message;
  EXPECT_EQ((*devices)[2].align, kDefaultDaxAlign);
  dir_.write(std::string(kBus) + "dax0.0/align", "3000\n");
  devices = find_devdax_devices(root());
  ASSERT_FALSE(devices.has_value());
  EXPECT_EQ(devices.error().code, EINVAL);
}

TEST(DevDaxDevices, NoneOnAHostWithoutTheBus) {
  test::TempDir empty("devdax-none");
  auto devices = find_devdax_devices(SysfsRoot(empty.path()));
  ASSERT_TRUE(devices.has_value()) << devices.error().message;
  EXPECT_TRUE(devices->empty());
}

TEST(DevDaxDevices, RecognisesDevicePaths) {
  EXPECT_EQ(devdax_name_of_path("/dev/dax0.0"), "dax0.0");
  EXPECT_EQ(devdax_name_of_path("/dev/dax12.3"), "dax12.3");
  for (const char* p : {"/dev/shm/dax0.0", "dax0.0", "/dev/dax0", "/dev/dax.0", "/dev/dax0.", "/dev/daxa.0", "/tmp/x"}) {
    EXPECT_FALSE(devdax_name_of_path(p).has_value()) << p;
  }
}

TEST_F(DaxTree, RefusesWhatItCannotMapBeforeTouchingTheDevice) {
  // Not a DAX path at all: ENODEV, so "auto" tries the next backend.
  auto r = open_devdax(spec("/dev/shm/pod", 0), root());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENODEV);
  r = open_devdax(spec("", 0), root());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENODEV) << "never a device nobody named";
  // A DAX path without such a device: ENOENT, so "auto" stops there.
  r = open_devdax(spec("/dev/dax9.0", 0), root());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ENOENT);
  // System RAM now: no character device behind it.
  r = open_devdax(spec("/dev/dax1.0", 0), root());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("kmem"), std::string::npos) << r.error().message;
  // More than the device holds (after rounding to 1 GiB).
  r = open_devdax(spec("/dev/dax0.0", (4ull << 30) + 1), root());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("less than"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace cxlpool::drivers
