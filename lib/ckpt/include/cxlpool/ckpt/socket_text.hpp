// SPDX-License-Identifier: Apache-2.0
// Parsers for the socket tables of /proc/PID/net (unix, netlink, tcp, udp,
// their v6 twins), so that a checkpoint can say what a socket is, and
// restore the one kind it can: a socketpair whose both ends the process holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cxlpool::ckpt {

struct UnixSocketRow {
  uint64_t inode = 0;
  uint32_t type = 0;   // SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET
  uint32_t state = 0;  // SS_UNCONNECTED 1, SS_CONNECTING 2, SS_CONNECTED 3, SS_DISCONNECTING 4
  bool listening = false;  // __SO_ACCEPTCON in Flags
  std::string path;    // "" unbound; "@name" abstract; "/path"
};

struct NetlinkSocketRow {
  uint64_t inode = 0;
  uint32_t protocol = 0;  // NETLINK_ROUTE 0, NETLINK_KOBJECT_UEVENT 15, ...
  uint32_t portid = 0;
};

struct InetSocketRow {
  uint64_t inode = 0;
  std::string local, remote;  // "127.0.0.1:8080", "[::1]:443"
  uint32_t state = 0;         // TCP_ESTABLISHED 1 ... TCP_LISTEN 10 (udp: 7 unconnected, 1 connected)
};

// /proc/PID/net/unix: rows whose line parses (the header and others skipped).
std::vector<UnixSocketRow> parse_net_unix(std::string_view text);
// /proc/PID/net/netlink.
std::vector<NetlinkSocketRow> parse_net_netlink(std::string_view text);
// /proc/PID/net/{tcp,udp,raw}[6]; v6 says which address form the file has.
std::vector<InetSocketRow> parse_net_inet(std::string_view text, bool v6);

// "stream", "dgram", "seqpacket", or "type N".
std::string socket_type_name(uint32_t type);

}  // namespace cxlpool::ckpt
