// SPDX-License-Identifier: Apache-2.0
#include "devdax_devices.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

namespace cxlpool::drivers {
namespace {

constexpr const char* kDaxBus = "/sys/bus/dax/devices/";

bool is_dax_name(std::string_view name) {
  // daxR.N: region and instance numbers.
  if (!name.starts_with("dax")) return false;
  name.remove_prefix(3);
  const auto dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == name.size()) return false;
  const auto digits = [](std::string_view s) { return std::all_of(s.begin(), s.end(), ::isdigit); };
  return digits(name.substr(0, dot)) && digits(name.substr(dot + 1));
}

// The name of the driver the `driver` link points at, "" when unbound.
std::string bound_driver(const SysfsRoot& root, const std::string& dir) {
  std::error_code ec;
  const auto target = std::filesystem::read_symlink(root.resolve(dir + "/driver"), ec);
  return ec ? std::string() : target.filename().string();
}

Result<std::uint64_t> read_align(const SysfsRoot& root, const std::string& dir) {
  // Per-device since Linux 5.10; the region's before that.
  for (const std::string& file : {dir + "/align", dir + "/../dax_region/align"}) {
    if (!root.exists(file)) continue;
    auto align = root.read_int(file);
    if (!align) return tl::unexpected(align.error());
    if (*align <= 0 || (*align & (*align - 1)) != 0) return fail(EINVAL, file + ": bad alignment");
    return static_cast<std::uint64_t>(*align);
  }
  return kDefaultDaxAlign;
}

}  // namespace

std::optional<std::string> devdax_name_of_path(const std::string& path) {
  constexpr std::string_view kDev = "/dev/";
  if (!path.starts_with(kDev)) return std::nullopt;
  std::string name = path.substr(kDev.size());
  if (!is_dax_name(name)) return std::nullopt;
  return name;
}

Result<std::vector<DevDaxDevice>> find_devdax_devices(const SysfsRoot& root) {
  std::vector<DevDaxDevice> out;
  for (const std::string& name : root.list(kDaxBus, "dax")) {
    if (!is_dax_name(name)) continue;
    const std::string dir = kDaxBus + name;
    DevDaxDevice dev;
    dev.name = name;
    dev.device_path = "/dev/" + name;
    auto size = root.read_int(dir + "/size");
    if (!size || *size < 0) return fail(EINVAL, dir + "/size: " + (size ? "negative" : size.error().message));
    dev.size_bytes = static_cast<std::uint64_t>(*size);
    auto align = read_align(root, dir);
    if (!align) return tl::unexpected(align.error());
    dev.align = *align;
    if (auto node = root.read_int(dir + "/target_node")) dev.target_node = static_cast<int>(*node);
    dev.driver = bound_driver(root, dir);
    out.push_back(std::move(dev));
  }
  return out;
}

}  // namespace cxlpool::drivers
