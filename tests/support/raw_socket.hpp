// SPDX-License-Identifier: Apache-2.0
// The control socket without the client library: for tests that send what
// a well-behaved client never would.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/socket_io.hpp"

namespace cxlpool::integration {

// A blocking SOCK_SEQPACKET connection; invalid (errno set) on failure.
UniqueFd raw_connect(const std::string& path);

// One datagram, never blocking, never raising SIGPIPE; false (errno set) on failure.
bool send_datagram(int fd, std::span<const std::byte> bytes, std::span<const int> fds = {});

// Encodes and sends one message with an explicit request id and header version.
bool send_encoded(int fd, uint32_t request_id, const proto::Message& message,
                  uint16_t version = proto::kVersionMax);

// Waits up to `timeout` for one message. ETIMEDOUT when none came,
// ECONNRESET when the daemon closed the connection.
Result<proto::Received> recv_reply(int fd, std::chrono::milliseconds timeout);

}  // namespace cxlpool::integration
