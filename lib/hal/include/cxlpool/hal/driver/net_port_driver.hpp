// SPDX-License-Identifier: Apache-2.0
// Driver SDK for NetPort backends (drivers/net/*): the interface facts every
// driver needs at open, and the operations a net driver registers. Users
// open ports with hal::open_net_port.
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "cxlpool/hal/net_port.hpp"

namespace cxlpool::hal {

// What the kernel says about an interface, asked through `fd` (any socket).
struct InterfaceFacts {
  int index = 0;
  MacAddress mac;
  std::uint32_t mtu = 0;
};
// ENODEV when there is no such interface (in this network namespace).
Result<InterfaceFacts> query_interface(int fd, const std::string& interface);
// IFF_UP and IFF_RUNNING (carrier) both set.
Result<bool> query_link_up(int fd, const std::string& interface);
// Makes the interface accept frames for `mac` (unicast filter entry or
// multicast group) for as long as AF_PACKET socket `fd` stays open; a NIC
// that cannot filter goes promiscuous, which the kernel does itself.
Result<void> add_packet_membership(int fd, int ifindex, const MacAddress& mac, const std::string& interface);
// Promiscuous mode on the interface for as long as `fd` stays open.
Result<void> add_packet_promiscuous(int fd, int ifindex, const std::string& interface);

struct NetPortOps {
  static constexpr BackendClass kClass = BackendClass::kNetPort;
  // Null for a backend that is only a probe so far (dpdk).
  Result<std::unique_ptr<NetPort>> (*open)(const std::string& interface, const NetPortOptions& options);
};

}  // namespace cxlpool::hal
