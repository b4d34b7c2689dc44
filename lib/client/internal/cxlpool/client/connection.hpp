// SPDX-License-Identifier: Apache-2.0
// One control-socket connection to cxlpoold: connects, negotiates the
// protocol version and performs request/reply calls. Internal to libcxlpool
// and cxlpoolctl; applications use the C ABI in cxlpool/cxlpool.h.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/proto/socket_io.hpp"

namespace cxlpool::client {

class Connection {
 public:
  // Connects to `socket_path` (empty: the default path) and says hello.
  static Result<std::unique_ptr<Connection>> open(const std::string& socket_path,
                                                  const std::string& client_name);

  // Sends `request` and waits for its reply. An ErrorReply becomes an Error
  // with the daemon's code and message. Thread-safe: calls are serialized.
  // `fds` travel with the request (SCM_RIGHTS) and stay the caller's.
  Result<proto::Received> call(const proto::Message& request, std::span<const int> fds = {});

  // call() that also checks the reply's type.
  template <typename Reply>
  Result<Reply> call_for(const proto::Message& request, std::span<const int> fds = {}) {
    auto received = call(request, fds);
    if (!received) return tl::unexpected(received.error());
    if (auto* reply = std::get_if<Reply>(&received->envelope.message)) return std::move(*reply);
    return fail(EPROTO, std::string("unexpected reply type ") +
                            proto::message_type_name(proto::message_type(received->envelope.message)));
  }

  // Closes the socket; later calls fail with ENOTCONN. The daemon then
  // releases everything leased through this connection.
  void close();
  bool closed();

  // The socket, for poll(POLLRDHUP) by a data path that sleeps on other
  // descriptors and must notice the daemon going away. Never read or write
  // it: replies would be lost. -1 after close().
  int socket_fd() const { return sock_.get(); }

  uint16_t version() const { return hello_.version; }
  const proto::HelloReply& hello() const { return hello_; }
  const std::string& socket_path() const { return socket_path_; }

 private:
  void wait_for_reply();
  Connection(UniqueFd sock, std::string path) : sock_(std::move(sock)), socket_path_(std::move(path)) {}

  UniqueFd sock_;
  std::string socket_path_;
  std::mutex mutex_;
  uint32_t next_request_id_ = 1;
  bool broken_ = false;
  proto::HelloReply hello_;
};

}  // namespace cxlpool::client
