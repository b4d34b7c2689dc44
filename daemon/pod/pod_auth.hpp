// SPDX-License-Identifier: Apache-2.0
// Authentication of the pod's KV control connections (docs/pods.md, "Trust
// and authentication"). The members of a pod share a secret ([pod]
// secret_file); at the start of every control connection both sides prove
// they hold it before any other message:
//   client → server  kAuthHello      client's name, client's nonce
//   server → client  kAuthChallenge  server's name, server's nonce
//   client → server  kAuthProof      HMAC-SHA256(secret, "client" label, both nonces, both names)
//   server → client  kAuthAccept     HMAC-SHA256(secret, "server" label, both nonces, both names)
// The server proves itself only after the client has; each side checks the
// other's proof in constant time. Nonces are fresh on both sides, so a
// proof recorded on one connection is worth nothing on another; the role
// label keeps a client's proof from passing for a server's. Only the start
// of a connection is authenticated: the frames after it carry no MAC and
// are not encrypted (an on-path attacker who can rewrite TCP streams could
// still take over a connection; the pod's network stays a trusted one).
// HMAC, the random nonces and the comparison are OpenSSL's libcrypto.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "kv_auth_wire.hpp"

namespace cxlpool::daemon {

inline constexpr size_t kPodSecretMinBytes = 32;
inline constexpr size_t kPodSecretMaxBytes = 4096;
using KvAuthNonce = std::array<std::byte, kKvAuthRandomBytes>;
using KvAuthProof = std::array<std::byte, kKvAuthMacBytes>;  // HMAC-SHA256

// The pod's shared secret: the secret file's bytes, all of them. Empty:
// no authentication. Wiped when destroyed.
class PodSecret {
 public:
  PodSecret() = default;
  explicit PodSecret(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
  ~PodSecret();
  PodSecret(const PodSecret& other) = default;
  PodSecret& operator=(const PodSecret& other) = default;
  PodSecret(PodSecret&& other) noexcept = default;
  PodSecret& operator=(PodSecret&& other) noexcept = default;

  [[nodiscard]] bool empty() const { return bytes_.empty(); }
  [[nodiscard]] std::span<const std::byte> bytes() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

// Reads [pod] secret_file (an empty path: an empty secret). The file must
// be a regular file (a symbolic link to one is followed), owned by root or
// by `daemon_uid`, with no permission bits for group or others, and hold
// kPodSecretMinBytes..kPodSecretMaxBytes bytes. Every error names the key
// and the path. ENOENT: missing; EINVAL: not a regular file, too short or
// too long; EPERM: its owner or mode; the open or read error otherwise.
Result<PodSecret> load_pod_secret(const std::string& path, uid_t daemon_uid);

// Reads [pod] etcd_password_file (an empty path: ""): the same checks of
// owner and mode as load_pod_secret, 1..4096 bytes; one trailing newline
// is not part of the password. EINVAL also for a file of just a newline.
Result<std::string> load_etcd_password(const std::string& path, uid_t daemon_uid);

enum class KvAuthRole : uint8_t { kClient, kServer };

// HMAC-SHA256(secret, role label || client nonce || server nonce || client
// name || server name), each name preceded by its 16-bit length.
KvAuthProof kv_auth_proof(const PodSecret& secret, KvAuthRole role, const KvAuthNonce& client_nonce,
                          const KvAuthNonce& server_nonce, const std::string& client_name,
                          const std::string& server_name);
// Constant-time comparison.
bool kv_auth_proof_equal(const KvAuthProof& a, const KvAuthProof& b);
// From the system's CSPRNG (RAND_bytes). EIO when it fails.
Result<KvAuthNonce> kv_auth_nonce();

// The handshake over a connected, blocking socket (kv_peer_socket.hpp),
// bounded by the socket's receive timeout and, for the server, by
// `deadline_ns` (monotonic) and `stop_fd` (readable: give up at once; -1:
// none). Errors: EACCES: the peer's proof is wrong, it sent another
// message first, or it answered under another name than `expected_peer`
// (the peer does not hold the secret, or is not the member we meant);
// EPROTO: a garbled handshake message (EINVAL from its decoder is
// reported as EPROTO); ECONNRESET: the peer closed; EAGAIN/ETIMEDOUT: it
// stayed silent; ECANCELED: stop_fd became readable.
Result<void> kv_auth_client(int fd, const PodSecret& secret, const std::string& self,
                            const std::string& expected_peer);
// Returns the client's member name.
Result<std::string> kv_auth_server(int fd, const PodSecret& secret, const std::string& self, uint64_t deadline_ns,
                                   int stop_fd);

// At most one line per interval for a stream of similar events, with how
// many were left out since the last line. Thread-safe.
class LogLimiter {
 public:
  explicit LogLimiter(uint64_t interval_ns) : interval_ns_(interval_ns) {}
  // True when a line may be logged now; `suppressed` is then the number of
  // events that were not logged before this one.
  bool allow(uint64_t now_ns, uint64_t& suppressed);

 private:
  std::mutex mutex_;
  uint64_t interval_ns_;
  uint64_t last_ns_ = 0;
  bool logged_ = false;
  uint64_t suppressed_ = 0;
};

}  // namespace cxlpool::daemon
