// SPDX-License-Identifier: Apache-2.0
// The bodies of the handshake that opens an authenticated KV control
// connection (pod_auth.hpp): kAuthHello and kAuthChallenge carry the
// sender's member name and a nonce, kAuthProof and kAuthAccept an
// HMAC-SHA256. The decoders take hostile input (the handshake is the first
// thing anyone who reaches [pod] address sends) and accept exactly one
// encoding: a name by the pod-name rule, fixed sizes, no trailing bytes.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::daemon {

inline constexpr size_t kKvAuthRandomBytes = 32;  // a nonce
inline constexpr size_t kKvAuthMacBytes = 32;     // a proof

struct KvAuthHello {
  std::string name;  // the sender's member name
  std::array<std::byte, kKvAuthRandomBytes> nonce{};
};

// 16-bit name length, the name, the nonce.
std::vector<std::byte> encode_auth_hello(const KvAuthHello& hello);
// EINVAL: a bad name, a short body or trailing bytes.
Result<KvAuthHello> decode_auth_hello(std::span<const std::byte> body);
std::vector<std::byte> encode_auth_proof(const std::array<std::byte, kKvAuthMacBytes>& proof);
// EINVAL: not exactly kKvAuthMacBytes bytes.
Result<std::array<std::byte, kKvAuthMacBytes>> decode_auth_proof(std::span<const std::byte> body);

}  // namespace cxlpool::daemon
