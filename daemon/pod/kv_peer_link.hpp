// SPDX-License-Identifier: Apache-2.0
// One thread's control connection to one pod member, for the KV messages
// (docs/pods.md): connected on first use, authenticated there when the
// pod has a secret (on_connect), and dropped after any failure or a reply
// out of turn so that the next exchange starts on a fresh stream. The
// fetch threads, the lookup probe and the replica sender each keep their
// own links.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "kv_peer_socket.hpp"
#include "kv_peer_wire.hpp"

namespace cxlpool::daemon {

inline constexpr std::chrono::milliseconds kKvPeerConnectTimeout{1000};
inline constexpr std::chrono::milliseconds kKvPeerExchangeTimeout{5000};

struct KvPeerLink {
  std::string host;
  std::string address;
  UniqueFd fd;
  uint64_t next_id = 1;
  std::string last_warning;
  // Run on every new connection before its first request (the handshake
  // of an authenticated pod); null: none.
  std::function<Result<void>(int fd)> on_connect;

  // One request and its reply on this connection.
  Result<KvPeerFrame> exchange(KvPeerType type, std::span<const std::byte> body, KvPeerType reply_type);
};

}  // namespace cxlpool::daemon
