// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/net/steering.hpp"

#include <algorithm>

namespace cxlpool::devpool::net {

void MacSteering::announce(std::size_t index, std::uint64_t mac) {
  for (Entry& e : entries_) {
    if (e.mac == mac) {
      e.index = index;
      return;
    }
  }
  entries_.push_back({mac, index});
}

void MacSteering::forget(std::size_t index) {
  std::erase_if(entries_, [index](const Entry& e) { return e.index == index; });
}

std::optional<std::size_t> MacSteering::unicast(std::uint64_t mac) const {
  for (const Entry& e : entries_) {
    if (e.mac == mac) return e.index;
  }
  return std::nullopt;
}

std::uint64_t destination_mac(std::span<const std::byte> frame) {
  std::uint64_t mac = 0;
  for (std::size_t i = 0; i < 6; ++i) mac = (mac << 8) | static_cast<std::uint8_t>(frame[i]);
  return mac;
}

}  // namespace cxlpool::devpool::net
