// SPDX-License-Identifier: Apache-2.0
#include "devdax_mapping.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "cxlpool/common/units.hpp"
#include "devdax_devices.hpp"

namespace cxlpool::drivers {
namespace {

Result<DevDaxDevice> choose_device(const hal::SharedMemorySpec& spec, const SysfsRoot& root) {
  // Never a device nobody named: it may be another host's memory.
  if (spec.path.empty()) return fail(ENODEV, "no device path given");
  const auto wanted = devdax_name_of_path(spec.path);
  if (!wanted) return fail(ENODEV, spec.path + " does not name a device-DAX device (/dev/daxX.Y)");
  auto devices = find_devdax_devices(root);
  if (!devices) return tl::unexpected(devices.error());
  for (const auto& dev : *devices) {
    if (dev.name != *wanted) continue;
    if (!dev.mappable()) {
      return fail(EINVAL, dev.name + " is bound to " + (dev.driver.empty() ? "no driver" : dev.driver) +
                              ", not device_dax: no character device to map");
    }
    return dev;
  }
  // ENOENT, not ENODEV: "auto" must not go on to create a plain file there.
  return fail(ENOENT, "no device-DAX device " + *wanted);
}

}  // namespace

Result<hal::SharedMemory> open_devdax(const hal::SharedMemorySpec& spec, const SysfsRoot& root) {
  auto dev = choose_device(spec, root);
  if (!dev) return tl::unexpected(dev.error());
  const std::uint64_t size = spec.size == 0 ? dev->size_bytes : (spec.size + dev->align - 1) / dev->align * dev->align;
  if (size == 0 || size > dev->size_bytes) {
    return fail(EINVAL, dev->name + " holds " + format_size(dev->size_bytes) + ", less than the " +
                            format_size(size) + " asked for");
  }
  UniqueFd fd(::open(dev->device_path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return fail_errno("open " + dev->device_path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail_errno("fstat " + dev->device_path);
  if (!S_ISCHR(st.st_mode)) return fail(EINVAL, dev->device_path + " is not a character device");
  // The driver refuses mappings whose length is not a multiple of the
  // alignment; it places the address itself.
  auto mapping = Mapping::map(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  if (!mapping) return fail(mapping.error().code, dev->device_path + ": " + mapping.error().message);
  hal::SharedMemoryInfo info;
  info.backend = "devdax";
  info.filesystem = "devdax";
  info.path = dev->device_path;
  info.alignment = dev->align;
  info.coherent = false;
  info.coherence_reason = "device-DAX memory may be shared with other hosts' caches";
  return hal::SharedMemory(std::move(fd), std::move(*mapping), std::move(info));
}

Result<hal::SharedMemory> open_devdax_here(const hal::SharedMemorySpec& spec) {
  return open_devdax(spec, SysfsRoot("/"));
}

}  // namespace cxlpool::drivers
