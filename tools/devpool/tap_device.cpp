// SPDX-License-Identifier: Apache-2.0
#include "tap_device.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
// After net/if.h, whose definitions linux/if.h would clash with.
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstring>

namespace cxlpool::devpool_tool {

Result<TapDevice> TapDevice::create(const std::string& name, const hal::MacAddress& mac, uint32_t mtu) {
  ifreq req{};
  if (name.empty() || name.size() >= sizeof(req.ifr_name)) {
    return fail(EINVAL, "TAP name '" + name + "' must be 1.." + std::to_string(IFNAMSIZ - 1) + " bytes");
  }
  UniqueFd fd(::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return fail_errno("open /dev/net/tun");
  std::memcpy(req.ifr_name, name.data(), name.size());
  req.ifr_flags = IFF_TAP | IFF_NO_PI;
  if (::ioctl(fd.get(), TUNSETIFF, &req) != 0) return fail_errno("TUNSETIFF " + name);

  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) return fail_errno("socket");
  req.ifr_hwaddr.sa_family = ARPHRD_ETHER;
  std::memcpy(req.ifr_hwaddr.sa_data, mac.bytes.data(), mac.bytes.size());
  if (::ioctl(sock.get(), SIOCSIFHWADDR, &req) != 0) return fail_errno("set MAC of " + name);
  req.ifr_mtu = static_cast<int>(mtu);
  if (::ioctl(sock.get(), SIOCSIFMTU, &req) != 0) return fail_errno("set MTU of " + name);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0) return fail_errno("SIOCGIFFLAGS " + name);
  req.ifr_flags |= IFF_UP;
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &req) != 0) return fail_errno("bring up " + name);
  return TapDevice(std::move(fd), name);
}

}  // namespace cxlpool::devpool_tool
