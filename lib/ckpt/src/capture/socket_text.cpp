// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/socket_text.hpp"

#include <cstdio>

#include "text_fields.hpp"

namespace cxlpool::ckpt {
namespace {

using detail::lines;
using detail::number;
using detail::words;

template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  for (std::string_view line : lines(text)) fn(line);
}

// "0100007F:1F90" (the kernel's words in host order, x86: little-endian
// bytes) as "127.0.0.1:8080"; "" when it does not parse.
std::string inet_address(std::string_view s, bool v6) {
  const auto colon = s.find(':');
  const std::size_t hex_digits = v6 ? 32 : 8;
  uint64_t port = 0;
  if (colon != hex_digits || !number(s.substr(colon + 1), port, 16)) return "";
  uint8_t bytes[16];
  for (std::size_t word = 0; word < hex_digits / 8; ++word) {
    uint64_t v = 0;
    if (!number(s.substr(word * 8, 8), v, 16)) return "";
    for (int b = 0; b < 4; ++b) bytes[word * 4 + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  char text[64];
  if (!v6) {
    std::snprintf(text, sizeof text, "%u.%u.%u.%u:%u", bytes[0], bytes[1], bytes[2], bytes[3],
                  static_cast<unsigned>(port));
    return text;
  }
  std::string out = "[";
  for (int group = 0; group < 8; ++group) {
    std::snprintf(text, sizeof text, group ? ":%x" : "%x", (bytes[2 * group] << 8) | bytes[2 * group + 1]);
    out += text;
  }
  return out + "]:" + std::to_string(port);
}

}  // namespace

std::vector<UnixSocketRow> parse_net_unix(std::string_view text) {
  // Num RefCount Protocol Flags Type St Inode [Path]
  std::vector<UnixSocketRow> out;
  for_each_line(text, [&](std::string_view line) {
    const auto w = words(line);
    uint64_t flags = 0, type = 0, state = 0, inode = 0;
    if (w.size() < 7 || !number(w[3], flags, 16) || !number(w[4], type, 16) || !number(w[5], state, 16) ||
        !number(w[6], inode, 10)) {
      return;
    }
    UnixSocketRow row;
    row.inode = inode;
    row.type = static_cast<uint32_t>(type);
    row.state = static_cast<uint32_t>(state);
    row.listening = (flags & 0x10000) != 0;
    if (w.size() > 7) {
      // A path may hold spaces: the rest of the line after the inode.
      const std::size_t at = static_cast<std::size_t>(w[7].data() - line.data());
      row.path = std::string(line.substr(at));
    }
    out.push_back(std::move(row));
  });
  return out;
}

std::vector<NetlinkSocketRow> parse_net_netlink(std::string_view text) {
  // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
  std::vector<NetlinkSocketRow> out;
  for_each_line(text, [&](std::string_view line) {
    const auto w = words(line);
    uint64_t protocol = 0, portid = 0, inode = 0;
    if (w.size() < 10 || !number(w[1], protocol, 10) || !number(w[2], portid, 10) || !number(w[9], inode, 10)) return;
    out.push_back({inode, static_cast<uint32_t>(protocol), static_cast<uint32_t>(portid)});
  });
  return out;
}

std::vector<InetSocketRow> parse_net_inet(std::string_view text, bool v6) {
  // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
  std::vector<InetSocketRow> out;
  for_each_line(text, [&](std::string_view line) {
    const auto w = words(line);
    uint64_t state = 0, inode = 0;
    if (w.size() < 10 || !number(w[3], state, 16) || !number(w[9], inode, 10)) return;
    InetSocketRow row{inode, inet_address(w[1], v6), inet_address(w[2], v6), static_cast<uint32_t>(state)};
    if (row.local.empty() || row.remote.empty()) return;
    out.push_back(std::move(row));
  });
  return out;
}

std::string socket_type_name(uint32_t type) {
  switch (type) {
    case 1: return "stream";
    case 2: return "dgram";
    case 3: return "raw";
    case 5: return "seqpacket";
    default: return "type " + std::to_string(type);
  }
}

}  // namespace cxlpool::ckpt
