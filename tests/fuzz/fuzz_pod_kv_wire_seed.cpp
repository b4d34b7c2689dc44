// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_pod_kv_wire_decode: a frame of every
// message type a peer sends, and near misses that each break one rule (bad
// magic, unknown type, a body over the limit, a bad member name, no keys,
// more entries than keys, a zero-length chunk, trailing bytes, an
// unprintable card, a probe without keys, a probe reply holding more keys
// than asked or cut short, a replicate reply accepting more keys than
// asked; a handshake message with a bad name, a short nonce, a proof too
// long or empty).
//   fuzz_pod_kv_wire_seed DIR          write DIR/<name>.bin
//   fuzz_pod_kv_wire_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "pod/kv_auth_wire.hpp"
#include "pod/kv_peer_wire.hpp"
#include "seed_corpus.hpp"

namespace {

using namespace cxlpool::daemon;
using cxlpool::fuzz::Seed;

std::vector<std::byte> frame(KvPeerType type, std::vector<std::byte> body) {
  auto out = encode_kv_peer_header({type, static_cast<uint32_t>(body.size()), 42});
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

KvPinRequest pin_request(std::string from, size_t keys) {
  KvPinRequest r;
  r.from = std::move(from);
  r.fp.hi = 0x1122334455667788ull;
  r.fp.lo = 0x99aabbccddeeff00ull;
  for (size_t i = 0; i < keys; ++i) r.keys.push_back({0x1000 + i, 0x2000 + i});
  return r;
}

KvReplicateRequest replicate_request(std::string from, size_t keys) {
  KvReplicateRequest r;
  r.from = std::move(from);
  r.fp.hi = 0x0102030405060708ull;
  r.fp.lo = 0x1112131415161718ull;
  for (size_t i = 0; i < keys; ++i) r.keys.push_back({0x3000 + i, 0x4000 + i});
  return r;
}

KvPinReply pin_reply(size_t entries, uint32_t length) {
  KvPinReply r;
  for (size_t i = 0; i < entries; ++i) r.entries.push_back({i + 1, (7ull << 8) | 1, i * (2 << 20), length, 0xdeadbeef});
  return r;
}

std::vector<std::byte> text(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::vector<Seed> seeds() {
  std::vector<Seed> out;
  out.push_back({"pin.bin", frame(KvPeerType::kPin, encode_pin_request(pin_request("node-b", 3)))});
  out.push_back({"pin-most-keys.bin", frame(KvPeerType::kPin, encode_pin_request(pin_request("b", kMaxPinKeys)))});
  out.push_back({"pin-reply.bin", frame(KvPeerType::kPinReply, encode_pin_reply(pin_reply(3, 2 << 20)))});
  out.push_back({"pin-reply-empty.bin", frame(KvPeerType::kPinReply, encode_pin_reply(pin_reply(0, 0)))});
  out.push_back({"unpin.bin", frame(KvPeerType::kUnpin, encode_unpin_request({{1, 2, 3}}))});
  out.push_back({"unpin-reply.bin", frame(KvPeerType::kUnpinReply, {})});
  out.push_back({"card.bin", frame(KvPeerType::kCard, {})});
  out.push_back({"card-reply.bin", frame(KvPeerType::kCardReply, text("rail=tcp,0,fi_sockaddr_in://10.0.0.2:7000"))});
  out.push_back({"probe.bin", frame(KvPeerType::kProbe, encode_probe_request(pin_request("node-b", 5)))});
  out.push_back({"probe-reply.bin", frame(KvPeerType::kProbeReply, encode_probe_reply({5}))});
  out.push_back({"replicate.bin", frame(KvPeerType::kReplicate, encode_replicate_request(replicate_request("node-a", 3)))});
  out.push_back({"replicate-most-keys.bin",
                 frame(KvPeerType::kReplicate, encode_replicate_request(replicate_request("a", kMaxPinKeys)))});
  out.push_back({"replicate-reply.bin", frame(KvPeerType::kReplicateReply, encode_replicate_reply({3}))});

  auto bad = frame(KvPeerType::kCard, {});
  bad[0] = std::byte{0};
  out.push_back({"bad-magic.bin", bad});
  bad = frame(KvPeerType::kCard, {});
  bad[6] = std::byte{99};
  out.push_back({"unknown-type.bin", bad});
  auto big = encode_kv_peer_header({KvPeerType::kCardReply, static_cast<uint32_t>(kMaxKvPeerBody + 1), 1});
  out.push_back({"body-over-limit.bin", big});
  out.push_back({"pin-bad-name.bin", frame(KvPeerType::kPin, encode_pin_request(pin_request(".hidden", 1)))});
  out.push_back({"pin-no-keys.bin", frame(KvPeerType::kPin, encode_pin_request(pin_request("b", 0)))});
  out.push_back({"pin-reply-too-many.bin",
                 frame(KvPeerType::kPinReply, encode_pin_reply(pin_reply(kMaxPinKeys + 1, 4096)))});
  out.push_back({"pin-reply-zero-length.bin", frame(KvPeerType::kPinReply, encode_pin_reply(pin_reply(1, 0)))});
  auto trailing = encode_unpin_request({{5}});
  trailing.push_back(std::byte{0});
  out.push_back({"unpin-trailing.bin", frame(KvPeerType::kUnpin, trailing)});
  out.push_back({"probe-no-keys.bin", frame(KvPeerType::kProbe, encode_probe_request(pin_request("b", 0)))});
  out.push_back({"probe-reply-too-many.bin", frame(KvPeerType::kProbeReply, encode_probe_reply({kMaxPinKeys + 1}))});
  auto short_reply = encode_probe_reply({1});
  short_reply.pop_back();
  out.push_back({"probe-reply-short.bin", frame(KvPeerType::kProbeReply, short_reply)});
  out.push_back({"replicate-bad-name.bin",
                 frame(KvPeerType::kReplicate, encode_replicate_request(replicate_request("a b", 1)))});
  out.push_back({"replicate-too-many-keys.bin",
                 frame(KvPeerType::kReplicate, encode_replicate_request(replicate_request("a", kMaxPinKeys + 1)))});
  out.push_back({"replicate-reply-too-many.bin",
                 frame(KvPeerType::kReplicateReply, encode_replicate_reply({static_cast<uint32_t>(kMaxPinKeys + 1)}))});
  auto reply_trailing = encode_replicate_reply({1});
  reply_trailing.push_back(std::byte{0});
  out.push_back({"replicate-reply-trailing.bin", frame(KvPeerType::kReplicateReply, reply_trailing)});
  out.push_back({"card-reply-unprintable.bin", frame(KvPeerType::kCardReply, text(std::string("a\0b", 3)))});

  // The handshake of an authenticated pod, and its near misses.
  KvAuthHello hello{"node-b", {}};
  for (size_t i = 0; i < hello.nonce.size(); ++i) hello.nonce[i] = static_cast<std::byte>(i * 7 + 1);
  std::array<std::byte, kKvAuthMacBytes> proof{};
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<std::byte>(0xa0 ^ i);
  out.push_back({"auth-hello.bin", frame(KvPeerType::kAuthHello, encode_auth_hello(hello))});
  out.push_back({"auth-challenge.bin", frame(KvPeerType::kAuthChallenge, encode_auth_hello({"node-a", hello.nonce}))});
  out.push_back({"auth-proof.bin", frame(KvPeerType::kAuthProof, encode_auth_proof(proof))});
  out.push_back({"auth-accept.bin", frame(KvPeerType::kAuthAccept, encode_auth_proof(proof))});
  out.push_back({"auth-hello-bad-name.bin", frame(KvPeerType::kAuthHello, encode_auth_hello({"a/b", hello.nonce}))});
  auto short_hello = encode_auth_hello(hello);
  short_hello.pop_back();
  out.push_back({"auth-hello-short-nonce.bin", frame(KvPeerType::kAuthHello, short_hello)});
  auto long_proof = encode_auth_proof(proof);
  long_proof.push_back(std::byte{0});
  out.push_back({"auth-proof-trailing.bin", frame(KvPeerType::kAuthProof, long_proof)});
  out.push_back({"auth-proof-empty.bin", frame(KvPeerType::kAuthProof, {})});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
