// SPDX-License-Identifier: Apache-2.0
#include "ivshmem_device.hpp"

#include <filesystem>
#include <fstream>

namespace cxlpool::vmtest {
namespace {

constexpr const char* kPciDevices = "/sys/bus/pci/devices";

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

Result<std::string> enable_ivshmem_bar2() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kPciDevices, ec)) {
    const auto dir = entry.path();
    if (first_line(dir / "vendor") != "0x1af4" || first_line(dir / "device") != "0x1110") continue;
    // No driver binds ivshmem-plain here: without `enable` the memory BAR
    // may not decode and reads return all ones.
    std::ofstream enable(dir / "enable");
    enable << "1";
    enable.close();
    if (!enable) return fail(EIO, "cannot enable " + dir.string());
    return (dir / "resource2").string();
  }
  return fail(ENODEV, std::string("no ivshmem device (1af4:1110) under ") + kPciDevices);
}

}  // namespace cxlpool::vmtest
