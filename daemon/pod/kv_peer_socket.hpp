// SPDX-License-Identifier: Apache-2.0
// Frames of kv_peer_wire.hpp over blocking TCP sockets with timeouts, and
// the sockets themselves (a listener on [pod] address, a connection to a
// peer's).
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "kv_peer_wire.hpp"

namespace cxlpool::daemon {

struct KvPeerFrame {
  KvPeerHeader header;
  std::vector<std::byte> body;
};

// "HOST:PORT" (HOST an IPv4 literal, a name, or [IPv6]).
Result<UniqueFd> kv_peer_listen(const std::string& address);
Result<UniqueFd> kv_peer_connect(const std::string& address, std::chrono::milliseconds timeout);
Result<void> send_kv_peer_frame(int fd, KvPeerType type, uint64_t id, std::span<const std::byte> body);
// ECONNRESET when the peer closed; EAGAIN when the socket's timeout passed.
Result<KvPeerFrame> recv_kv_peer_frame(int fd);

}  // namespace cxlpool::daemon
