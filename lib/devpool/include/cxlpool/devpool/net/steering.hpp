// SPDX-License-Identifier: Apache-2.0
// Which frontends a received frame goes to, by its destination MAC: the one
// frontend that announced that address, or every frontend for broadcast and
// multicast (each host's stack filters multicast groups itself, as behind a
// switch). Frames for addresses nobody announced are dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace cxlpool::devpool::net {

class MacSteering {
 public:
  explicit MacSteering(std::size_t frontends) : frontends_(frontends) {}

  // Frontend `index` answers to `mac` (48 bits, first byte most
  // significant). A MAC announced again by another frontend moves there (a
  // failed-over instance keeps its address); a frontend may own several.
  void announce(std::size_t index, std::uint64_t mac);
  // Forgets every address of frontend `index` (its link went away).
  void forget(std::size_t index);

  // The frontend for a unicast destination; nullopt when none announced it.
  std::optional<std::size_t> unicast(std::uint64_t mac) const;
  static bool is_group(std::uint64_t mac) { return ((mac >> 40) & 1) != 0; }
  std::size_t frontends() const { return frontends_; }

 private:
  struct Entry {
    std::uint64_t mac;
    std::size_t index;
  };
  std::size_t frontends_;
  std::vector<Entry> entries_;  // few: one or two per frontend
};

// The destination MAC of a frame of at least 6 bytes, as MacSteering takes it.
std::uint64_t destination_mac(std::span<const std::byte> frame);

}  // namespace cxlpool::devpool::net
