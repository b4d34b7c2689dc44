// SPDX-License-Identifier: Apache-2.0
// The handshake that opens an authenticated KV control connection
// (daemon/pod/pod_auth.hpp), over socket pairs: both sides accept each
// other with the same secret; a wrong secret, a wrong name, a skipped,
// truncated, garbled or silent handshake and a proof replayed from another
// connection are refused with the documented errors; the proof is the
// HMAC-SHA256 of the documented message.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <string>
#include <thread>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "pod/kv_peer_socket.hpp"
#include "pod/pod_auth.hpp"

namespace cxlpool::daemon {
namespace {

constexpr uint64_t kSecond = 1'000'000'000ULL;

PodSecret secret_of(char fill) { return PodSecret(std::vector<std::byte>(32, std::byte(fill))); }

struct Pair {
  UniqueFd client;
  UniqueFd server;
};

Pair socket_pair() {
  int fds[2] = {-1, -1};
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  Pair p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  // Nothing in these tests may hang: a receive gives up after 5 s.
  timeval tv{5, 0};
  for (int fd : fds) (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return p;
}

// The server side on its own thread; its socket closes when it returns, as
// the daemon's does.
std::future<Result<std::string>> serve(UniqueFd fd, PodSecret secret, std::string self = "node-b",
                                       uint64_t timeout_ns = 5 * kSecond, int stop_fd = -1) {
  return std::async(std::launch::async, [fd = std::move(fd), secret = std::move(secret), self, timeout_ns,
                                         stop_fd]() mutable {
    auto r = kv_auth_server(fd.get(), secret, self, monotonic_ns() + timeout_ns, stop_fd);
    fd.reset();
    return r;
  });
}

std::vector<std::byte> hex(const std::string& text) {
  std::vector<std::byte> out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) out.push_back(std::byte(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(PodAuth, TheProofIsTheDocumentedHmac) {
  // Computed independently (Python's hmac module) from the message of
  // pod_auth.hpp: 16-bit-length-prefixed label, both nonces, both names.
  std::vector<std::byte> key(32);
  for (size_t i = 0; i < key.size(); ++i) key[i] = std::byte(i + 1);
  const PodSecret secret(key);
  KvAuthNonce client_nonce, server_nonce;
  client_nonce.fill(std::byte{0x11});
  server_nonce.fill(std::byte{0x22});
  const KvAuthProof c = kv_auth_proof(secret, KvAuthRole::kClient, client_nonce, server_nonce, "node-a", "node-b");
  const KvAuthProof s = kv_auth_proof(secret, KvAuthRole::kServer, client_nonce, server_nonce, "node-a", "node-b");
  EXPECT_EQ(std::vector<std::byte>(c.begin(), c.end()),
            hex("c6b5067dc03097c9ab2508c431e5b945f27ed975bd96f59e7891b675dffa3866"));
  EXPECT_EQ(std::vector<std::byte>(s.begin(), s.end()),
            hex("58bb3bc12a4f0e7901cd7fe7ee4294f7601b92315414ad64939680ed7dc033ae"));
  EXPECT_TRUE(kv_auth_proof_equal(c, c));
  EXPECT_FALSE(kv_auth_proof_equal(c, s));
  // Every input changes it.
  KvAuthNonce other = server_nonce;
  other[31] = std::byte{0x23};
  EXPECT_FALSE(kv_auth_proof_equal(c, kv_auth_proof(secret, KvAuthRole::kClient, client_nonce, other, "node-a", "node-b")));
  EXPECT_FALSE(kv_auth_proof_equal(c, kv_auth_proof(secret, KvAuthRole::kClient, server_nonce, client_nonce, "node-a", "node-b")));
  EXPECT_FALSE(kv_auth_proof_equal(c, kv_auth_proof(secret, KvAuthRole::kClient, client_nonce, server_nonce, "node-b", "node-a")));
  EXPECT_FALSE(kv_auth_proof_equal(c, kv_auth_proof(secret_of('x'), KvAuthRole::kClient, client_nonce, server_nonce, "node-a", "node-b")));
}

TEST(PodAuth, NoncesAreFresh) {
  auto a = kv_auth_nonce();
  auto b = kv_auth_nonce();
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
}

TEST(PodAuth, TheSameSecretAuthenticatesBothSides) {
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'));
  auto client = kv_auth_client(p.client.get(), secret_of('s'), "node-a", "node-b");
  ASSERT_TRUE(client) << client.error().message;
  auto name = server.get();
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(*name, "node-a");
}

TEST(PodAuth, AWrongSecretIsRefusedByTheServer) {
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'));
  auto client = kv_auth_client(p.client.get(), secret_of('t'), "node-a", "node-b");
  auto name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EACCES) << name.error().message;
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, ECONNRESET) << "the server closes without proving anything: "
                                             << client.error().message;
}

// A server that does not hold the secret (or an impostor at its address):
// it answers the hello and the proof with bytes of its own.
TEST(PodAuth, AServerWithoutTheSecretIsRefusedByTheClient) {
  Pair p = socket_pair();
  auto impostor = std::async(std::launch::async, [fd = std::move(p.server)]() mutable {
    auto hello = recv_kv_peer_frame(fd.get());
    KvAuthNonce nonce{};
    (void)send_kv_peer_frame(fd.get(), KvPeerType::kAuthChallenge, 0, encode_auth_hello({"node-b", nonce}));
    auto proof = recv_kv_peer_frame(fd.get());
    KvAuthProof guess{};
    (void)send_kv_peer_frame(fd.get(), KvPeerType::kAuthAccept, 0, encode_auth_proof(guess));
    return hello && proof;
  });
  auto client = kv_auth_client(p.client.get(), secret_of('s'), "node-a", "node-b");
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, EACCES) << client.error().message;
  EXPECT_TRUE(impostor.get());
}

TEST(PodAuth, AServerUnderAnotherNameIsRefusedByTheClient) {
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'), "node-c");
  auto client = kv_auth_client(p.client.get(), secret_of('s'), "node-a", "node-b");
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error().code, EACCES);
  EXPECT_NE(client.error().message.find("'node-c'"), std::string::npos) << client.error().message;
  p.client.reset();  // the client gives up: the server sees the connection end
  EXPECT_FALSE(server.get());
}

TEST(PodAuth, ARequestWithoutTheHandshakeIsRefused) {
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'));
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kCard, 1, {}));
  auto name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EACCES) << name.error().message;
  // Nothing was answered: the next read sees the end of the stream.
  auto reply = recv_kv_peer_frame(p.client.get());
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code, ECONNRESET);
}

TEST(PodAuth, ATruncatedHandshakeIsRefused) {
  // Half a header, then the peer closes.
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'));
  const auto header = encode_kv_peer_header({KvPeerType::kAuthHello, 40, 0});
  ASSERT_EQ(::send(p.client.get(), header.data(), 10, MSG_NOSIGNAL), 10);
  p.client.reset();
  auto name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, ECONNRESET) << name.error().message;

  // A whole hello whose nonce is cut short by its own length field.
  p = socket_pair();
  server = serve(std::move(p.server), secret_of('s'));
  auto body = encode_auth_hello({"node-a", {}});
  body.pop_back();
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kAuthHello, 0, body));
  name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EPROTO) << name.error().message;
}

TEST(PodAuth, AGarbledHandshakeIsRefused) {
  // Not a frame at all.
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'));
  const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(p.client.get(), junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  auto name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EPROTO) << name.error().message;

  // A hello with a name no member may have.
  p = socket_pair();
  server = serve(std::move(p.server), secret_of('s'));
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kAuthHello, 0, encode_auth_hello({"../etc", {}})));
  name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EPROTO);

  // A proof of the wrong size.
  p = socket_pair();
  server = serve(std::move(p.server), secret_of('s'));
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kAuthHello, 0, encode_auth_hello({"node-a", {}})));
  ASSERT_TRUE(recv_kv_peer_frame(p.client.get()));
  const std::vector<std::byte> short_proof(16);
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kAuthProof, 0, short_proof));
  name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EPROTO);
}

TEST(PodAuth, ASilentPeerTimesOutAndStopEndsTheWait) {
  Pair p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'), "node-b", kSecond / 5);
  auto name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, ETIMEDOUT);

  UniqueFd stop(::eventfd(0, EFD_CLOEXEC));
  p = socket_pair();
  server = serve(std::move(p.server), secret_of('s'), "node-b", 60 * kSecond, stop.get());
  const uint64_t one = 1;
  ASSERT_EQ(::write(stop.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, ECANCELED);
}

// An attacker who recorded a member's whole handshake replays its hello
// and its proof on a new connection: the server's nonce differs, so the
// recorded proof does not verify.
TEST(PodAuth, AProofReplayedOnAnotherConnectionIsRefused) {
  // 1. A legitimate handshake, recorded: the client's hello and proof.
  Pair p = socket_pair();
  std::vector<std::byte> hello_body, proof_body;
  auto recorder = std::async(std::launch::async, [&, fd = std::move(p.server)]() mutable {
    // Relays to a real server over a second pair, keeping what the client sent.
    Pair q = socket_pair();
    auto real = serve(std::move(q.server), secret_of('s'));
    auto hello = recv_kv_peer_frame(fd.get());
    hello_body = hello->body;
    (void)send_kv_peer_frame(q.client.get(), KvPeerType::kAuthHello, 0, hello->body);
    auto challenge = recv_kv_peer_frame(q.client.get());
    (void)send_kv_peer_frame(fd.get(), KvPeerType::kAuthChallenge, 0, challenge->body);
    auto proof = recv_kv_peer_frame(fd.get());
    proof_body = proof->body;
    (void)send_kv_peer_frame(q.client.get(), KvPeerType::kAuthProof, 0, proof->body);
    auto accept = recv_kv_peer_frame(q.client.get());
    (void)send_kv_peer_frame(fd.get(), KvPeerType::kAuthAccept, 0, accept->body);
    return real.get();
  });
  ASSERT_TRUE(kv_auth_client(p.client.get(), secret_of('s'), "node-a", "node-b"));
  auto relayed = recorder.get();
  ASSERT_TRUE(relayed) << "the relayed handshake itself succeeds";
  ASSERT_FALSE(proof_body.empty());

  // 2. The same hello (same client nonce) and the recorded proof, replayed.
  p = socket_pair();
  auto server = serve(std::move(p.server), secret_of('s'));
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kAuthHello, 0, hello_body));
  auto challenge = recv_kv_peer_frame(p.client.get());
  ASSERT_TRUE(challenge);
  ASSERT_TRUE(send_kv_peer_frame(p.client.get(), KvPeerType::kAuthProof, 0, proof_body));
  auto name = server.get();
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, EACCES) << name.error().message;
  auto accept = recv_kv_peer_frame(p.client.get());
  EXPECT_FALSE(accept) << "no proof is sent to a client that failed";
}

TEST(PodAuth, TheLogLimiterLetsOneLineThroughPerInterval) {
  LogLimiter limit(10);
  uint64_t suppressed = 99;
  EXPECT_TRUE(limit.allow(1000, suppressed));
  EXPECT_EQ(suppressed, 0u);
  EXPECT_FALSE(limit.allow(1001, suppressed));
  EXPECT_FALSE(limit.allow(1009, suppressed));
  EXPECT_TRUE(limit.allow(1010, suppressed));
  EXPECT_EQ(suppressed, 2u);
}

}  // namespace
}  // namespace cxlpool::daemon
