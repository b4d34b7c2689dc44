// SPDX-License-Identifier: Apache-2.0
#include "pod_auth.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "kv_peer_socket.hpp"

namespace cxlpool::daemon {
namespace {

// Versioned labels: a proof of one role (or of a later handshake) never
// verifies as another's.
constexpr std::string_view kClientLabel = "cxlpool pod kv auth v1 client";
constexpr std::string_view kServerLabel = "cxlpool pod kv auth v1 server";

std::string mode_text(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof text, "0%03o", static_cast<unsigned>(mode & 07777));
  return text;
}

void append(std::vector<unsigned char>& out, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  out.insert(out.end(), p, p + n);
}

void append_text(std::vector<unsigned char>& out, std::string_view text) {
  const auto n = static_cast<uint16_t>(text.size());
  append(out, &n, sizeof n);
  append(out, text.data(), text.size());
}

// A handshake message's decoding error is the peer's protocol error.
tl::unexpected<Error> garbled(const Error& e) { return tl::unexpected(Error{EPROTO, e.message}); }

Result<KvPeerFrame> expect(int fd, KvPeerType type, uint64_t deadline_ns, int stop_fd) {
  // Without a deadline or a stop descriptor the socket's timeout bounds the wait.
  while (deadline_ns != 0 || stop_fd >= 0) {
    const uint64_t now = monotonic_ns();
    if (deadline_ns != 0 && now >= deadline_ns) return fail(ETIMEDOUT, "the peer did not finish the handshake in time");
    const int wait_ms = deadline_ns == 0 ? -1 : static_cast<int>((deadline_ns - now + 999'999) / 1'000'000);
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const int ready = ::poll(p, stop_fd >= 0 ? 2 : 1, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return fail_errno("poll");
    }
    if (stop_fd >= 0 && p[1].revents != 0) return fail(ECANCELED, "stopping");
    if (p[0].revents != 0) break;
  }
  auto frame = recv_kv_peer_frame(fd);
  if (!frame) {
    if (frame.error().code == EINVAL) return garbled(frame.error());
    return frame;
  }
  if (frame->header.type != type) {
    return fail(EACCES, "a message of type " + std::to_string(static_cast<unsigned>(frame->header.type)) +
                            " where the handshake expects type " + std::to_string(static_cast<unsigned>(type)));
  }
  return frame;
}

}  // namespace

PodSecret::~PodSecret() {
  if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

namespace {

// A file only root or the daemon's user may read, of min..max bytes.
Result<std::vector<std::byte>> load_private_file(const std::string& key, const std::string& path, uid_t daemon_uid,
                                                 size_t min_bytes, size_t max_bytes, const char* hint) {
  const std::string what = key + " " + path;
  // O_NONBLOCK: a FIFO put there must not hang the start (it is refused
  // below, as anything but a regular file is).
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return fail(ENOENT, what + " does not exist");
    return fail_errno(what);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail_errno(what);
  if (!S_ISREG(st.st_mode)) return fail(EINVAL, what + " is not a regular file");
  if (st.st_uid != 0 && st.st_uid != daemon_uid) {
    return fail(EPERM, what + " is owned by uid " + std::to_string(st.st_uid) + "; it must belong to root" +
                           (daemon_uid != 0 ? " or to the daemon's uid " + std::to_string(daemon_uid) : ""));
  }
  if ((st.st_mode & 077) != 0) {
    return fail(EPERM, what + " has mode " + mode_text(st.st_mode) +
                           ": group and others must have no access to it (chmod 600)");
  }
  if (st.st_size < static_cast<off_t>(min_bytes) || st.st_size > static_cast<off_t>(max_bytes)) {
    return fail(EINVAL, what + " holds " + std::to_string(st.st_size) + " bytes; it must hold " +
                            std::to_string(min_bytes) + ".." + std::to_string(max_bytes) + hint);
  }
  std::vector<std::byte> bytes(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      OPENSSL_cleanse(bytes.data(), bytes.size());
      return fail_errno(what);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  if (done != bytes.size()) {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return fail(EINVAL, what + " changed while it was read");
  }
  return bytes;
}

}  // namespace

Result<PodSecret> load_pod_secret(const std::string& path, uid_t daemon_uid) {
  if (path.empty()) return PodSecret{};
  auto bytes = load_private_file("pod.secret_file", path, daemon_uid, kPodSecretMinBytes, kPodSecretMaxBytes,
                                 " (e.g. head -c 32 /dev/urandom)");
  if (!bytes) return tl::unexpected(bytes.error());
  return PodSecret(std::move(*bytes));
}

Result<std::string> load_etcd_password(const std::string& path, uid_t daemon_uid) {
  if (path.empty()) return std::string{};
  auto bytes = load_private_file("pod.etcd_password_file", path, daemon_uid, 1, 4096, "");
  if (!bytes) return tl::unexpected(bytes.error());
  std::string password(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  OPENSSL_cleanse(bytes->data(), bytes->size());
  if (password.back() == '\n') password.pop_back();
  if (password.empty()) return fail(EINVAL, "pod.etcd_password_file " + path + " holds no password");
  return password;
}

KvAuthProof kv_auth_proof(const PodSecret& secret, KvAuthRole role, const KvAuthNonce& client_nonce,
                          const KvAuthNonce& server_nonce, const std::string& client_name,
                          const std::string& server_name) {
  std::vector<unsigned char> message;
  message.reserve(2 * kKvAuthRandomBytes + 160);
  append_text(message, role == KvAuthRole::kClient ? kClientLabel : kServerLabel);
  append(message, client_nonce.data(), client_nonce.size());
  append(message, server_nonce.data(), server_nonce.size());
  append_text(message, client_name);
  append_text(message, server_name);
  KvAuthProof proof{};
  unsigned int length = 0;
  const std::span<const std::byte> key = secret.bytes();
  // An empty key is a valid HMAC key to OpenSSL; callers never use one.
  (void)HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(), message.size(),
             reinterpret_cast<unsigned char*>(proof.data()), &length);
  return proof;
}

bool kv_auth_proof_equal(const KvAuthProof& a, const KvAuthProof& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<KvAuthNonce> kv_auth_nonce() {
  KvAuthNonce nonce{};
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), static_cast<int>(nonce.size())) != 1) {
    return fail(EIO, "RAND_bytes failed: no nonce for the handshake");
  }
  return nonce;
}

Result<void> kv_auth_client(int fd, const PodSecret& secret, const std::string& self,
                            const std::string& expected_peer) {
  auto nonce = kv_auth_nonce();
  if (!nonce) return tl::unexpected(nonce.error());
  if (auto sent = send_kv_peer_frame(fd, KvPeerType::kAuthHello, 0, encode_auth_hello({self, *nonce})); !sent) {
    return sent;
  }
  auto frame = expect(fd, KvPeerType::kAuthChallenge, 0, -1);
  if (!frame) return tl::unexpected(frame.error());
  auto challenge = decode_auth_hello(frame->body);
  if (!challenge) return garbled(challenge.error());
  if (challenge->name != expected_peer) {
    return fail(EACCES, "the peer answered as '" + challenge->name + "', not '" + expected_peer + "'");
  }
  const KvAuthProof mine = kv_auth_proof(secret, KvAuthRole::kClient, *nonce, challenge->nonce, self, expected_peer);
  if (auto sent = send_kv_peer_frame(fd, KvPeerType::kAuthProof, 0, encode_auth_proof(mine)); !sent) return sent;
  frame = expect(fd, KvPeerType::kAuthAccept, 0, -1);
  if (!frame) return tl::unexpected(frame.error());
  auto theirs = decode_auth_proof(frame->body);
  if (!theirs) return garbled(theirs.error());
  const KvAuthProof want = kv_auth_proof(secret, KvAuthRole::kServer, *nonce, challenge->nonce, self, expected_peer);
  if (!kv_auth_proof_equal(*theirs, want)) return fail(EACCES, "the peer's proof is wrong: it does not hold the pod's secret");
  return {};
}

Result<std::string> kv_auth_server(int fd, const PodSecret& secret, const std::string& self, uint64_t deadline_ns,
                                   int stop_fd) {
  auto frame = expect(fd, KvPeerType::kAuthHello, deadline_ns, stop_fd);
  if (!frame) return tl::unexpected(frame.error());
  auto hello = decode_auth_hello(frame->body);
  if (!hello) return garbled(hello.error());
  auto nonce = kv_auth_nonce();
  if (!nonce) return tl::unexpected(nonce.error());
  if (auto sent = send_kv_peer_frame(fd, KvPeerType::kAuthChallenge, 0, encode_auth_hello({self, *nonce})); !sent) {
    return tl::unexpected(sent.error());
  }
  frame = expect(fd, KvPeerType::kAuthProof, deadline_ns, stop_fd);
  if (!frame) return tl::unexpected(frame.error());
  auto theirs = decode_auth_proof(frame->body);
  if (!theirs) return garbled(theirs.error());
  const KvAuthProof want = kv_auth_proof(secret, KvAuthRole::kClient, hello->nonce, *nonce, hello->name, self);
  if (!kv_auth_proof_equal(*theirs, want)) {
    return fail(EACCES, "'" + hello->name + "' sent a wrong proof: it does not hold the pod's secret");
  }
  const KvAuthProof mine = kv_auth_proof(secret, KvAuthRole::kServer, hello->nonce, *nonce, hello->name, self);
  if (auto sent = send_kv_peer_frame(fd, KvPeerType::kAuthAccept, 0, encode_auth_proof(mine)); !sent) {
    return tl::unexpected(sent.error());
  }
  return std::move(hello->name);
}

bool LogLimiter::allow(uint64_t now_ns, uint64_t& suppressed) {
  std::lock_guard lock(mutex_);
  if (logged_ && now_ns - last_ns_ < interval_ns_) {
    ++suppressed_;
    return false;
  }
  logged_ = true;
  last_ns_ = now_ns;
  suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace cxlpool::daemon
