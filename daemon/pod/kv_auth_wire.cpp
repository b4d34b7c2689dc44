// SPDX-License-Identifier: Apache-2.0
#include "kv_auth_wire.hpp"

#include <cstdint>
#include <cstring>

#include "pod_name.hpp"

namespace cxlpool::daemon {

std::vector<std::byte> encode_auth_hello(const KvAuthHello& hello) {
  std::vector<std::byte> out(2 + hello.name.size() + hello.nonce.size());
  const auto n = static_cast<uint16_t>(hello.name.size());
  std::memcpy(out.data(), &n, sizeof n);
  std::memcpy(out.data() + 2, hello.name.data(), hello.name.size());
  std::memcpy(out.data() + 2 + hello.name.size(), hello.nonce.data(), hello.nonce.size());
  return out;
}

Result<KvAuthHello> decode_auth_hello(std::span<const std::byte> body) {
  KvAuthHello hello;
  uint16_t n = 0;
  if (body.size() < sizeof n) return fail(EINVAL, "auth hello: truncated");
  std::memcpy(&n, body.data(), sizeof n);
  if (body.size() != sizeof n + n + hello.nonce.size()) {
    return fail(EINVAL, "auth hello: " + std::to_string(body.size()) + " bytes for a name of " + std::to_string(n));
  }
  hello.name.assign(reinterpret_cast<const char*>(body.data() + sizeof n), n);
  if (!valid_pod_name(hello.name)) return fail(EINVAL, "auth hello: bad member name");
  std::memcpy(hello.nonce.data(), body.data() + sizeof n + n, hello.nonce.size());
  return hello;
}

std::vector<std::byte> encode_auth_proof(const std::array<std::byte, kKvAuthMacBytes>& proof) {
  return {proof.begin(), proof.end()};
}

Result<std::array<std::byte, kKvAuthMacBytes>> decode_auth_proof(std::span<const std::byte> body) {
  std::array<std::byte, kKvAuthMacBytes> proof{};
  if (body.size() != proof.size()) {
    return fail(EINVAL, "auth proof: " + std::to_string(body.size()) + " bytes, not " + std::to_string(proof.size()));
  }
  std::memcpy(proof.data(), body.data(), proof.size());
  return proof;
}

}  // namespace cxlpool::daemon
