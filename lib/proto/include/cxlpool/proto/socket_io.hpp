// SPDX-License-Identifier: Apache-2.0
// Sending and receiving one message per SOCK_SEQPACKET datagram, with file
// descriptors in SCM_RIGHTS. Received descriptors are always O_CLOEXEC and are
// owned by the caller; descriptors that arrive with a message that fails to
// decode are closed, never leaked.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/messages.hpp"

namespace cxlpool::proto {

// WeightsLoad's one descriptor per file sets the limit (kMaxWeightsFiles).
inline constexpr size_t kMaxFdsPerMessage = kMaxWeightsFiles;

struct Received {
  Envelope envelope;
  std::vector<UniqueFd> fds;
};

// Descriptors a message of this type carries in SCM_RIGHTS in this protocol
// version, at most: the fds column of message_table.hpp (docs/protocol.md §9
// says which and in what order; KvNamespaceReply carries none when it grants
// no reading). The transport below accepts up to kMaxFdsPerMessage with any
// type; checking the count against this is the receiver's job (a mismatch is
// EPROTO, see docs/protocol.md). WeightsLoad's count depends on the message:
// see the overload below (this one returns 0 for it).
size_t descriptor_count(MsgType type);
// The descriptors this message carries: one per path for WeightsLoad (the
// files the client opened, in the order of `paths`; the daemon refuses a
// WeightsLoad with another count with EINVAL), the target's pidfd for a
// CkptCreate whose pid is 0 and none otherwise, descriptor_count(type) else
// (CkptRestore: at most three, its stdio; none is allowed too).
size_t descriptor_count(const Message& message);

// Encodes and sends; retries EINTR. EAGAIN is returned as an error for
// non-blocking sockets. MSG_NOSIGNAL: a closed peer gives EPIPE, not SIGPIPE.
// More than kMaxFdsPerMessage descriptors gives EINVAL, a negative one EBADF;
// encode() errors are passed through. The descriptors stay the caller's.
Result<void> send_message(int sock, uint32_t request_id, const Message& message,
                          std::span<const int> fds = {}, uint16_t version = kVersionMax);

// Receives one datagram and decodes it. A closed peer gives ECONNRESET; a
// datagram larger than kMaxMessageSize or with more than kMaxFdsPerMessage
// descriptors gives EMSGSIZE (the datagram is consumed and its fds closed).
// decode() errors are passed through (and the descriptors closed).
Result<Received> recv_message(int sock);

}  // namespace cxlpool::proto
