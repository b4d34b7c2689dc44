// SPDX-License-Identifier: Apache-2.0
#include "kv_peer_link.hpp"

#include <sys/socket.h>
#include <sys/time.h>

namespace cxlpool::daemon {

Result<KvPeerFrame> KvPeerLink::exchange(KvPeerType type, std::span<const std::byte> body, KvPeerType reply_type) {
  if (!fd) {
    auto connected = kv_peer_connect(address, kKvPeerConnectTimeout);
    if (!connected) return tl::unexpected(connected.error());
    fd = std::move(*connected);
    timeval tv{};
    tv.tv_sec = std::chrono::duration_cast<std::chrono::seconds>(kKvPeerExchangeTimeout).count();
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (on_connect) {
      if (auto ok = on_connect(fd.get()); !ok) {
        fd.reset();
        return tl::unexpected(ok.error());
      }
    }
  }
  const uint64_t id = next_id++;
  auto fail_link = [&](const Error& e) -> Result<KvPeerFrame> {
    fd.reset();  // the stream may be out of step: start a fresh one next time
    return tl::unexpected(e);
  };
  if (auto sent = send_kv_peer_frame(fd.get(), type, id, body); !sent) return fail_link(sent.error());
  auto frame = recv_kv_peer_frame(fd.get());
  if (!frame) return fail_link(frame.error());
  if (frame->header.type != reply_type || frame->header.id != id) {
    return fail_link(Error{EPROTO, "peer '" + host + "' answered out of turn"});
  }
  return frame;
}

}  // namespace cxlpool::daemon
