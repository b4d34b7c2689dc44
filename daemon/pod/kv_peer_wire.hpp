// SPDX-License-Identifier: Apache-2.0
// The control messages of the KV store across a pod, over TCP to a peer's
// [pod] address: a reader asks the holder to pin chunks (the answer says
// where each is, how long, and its CRC-32C), reads them with one-sided
// reads of the transfer engine, then unpins them; asks for the holder's
// transport card when a region it names is not on the card it has; and
// probes how long a prefix the holder has, for a lookup (nothing pinned).
// A holder also asks peers to keep copies of chunks it committed
// (replicate: the peer pulls them with pin, read, unpin). A frame is a fixed header (magic, version, type, body length, id)
// and a body; the decoders take hostile input and check every field.
// Integers are little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "cxlpool/proto/kv_ring.hpp"

namespace cxlpool::daemon {

enum class KvPeerType : uint16_t {
  kPin = 1,         // from, namespace fingerprint, keys → kPinReply
  kPinReply = 2,    // the longest prefix of the keys the holder pinned
  kUnpin = 3,       // pin ids → kUnpinReply
  kUnpinReply = 4,  // empty
  kCard = 5,        // empty → kCardReply
  kCardReply = 6,   // the holder's transport card
  kReplicate = 7,       // from, namespace fingerprint, keys → kReplicateReply
  kReplicateReply = 8,  // how many of the keys the peer took on
  kProbe = 9,           // from, namespace fingerprint, keys → kProbeReply (nothing pinned)
  kProbeReply = 10,     // how many leading keys the holder has, on any tier
  // The handshake of an authenticated connection (pod_auth.hpp,
  // kv_auth_wire.hpp), before any other message.
  kAuthHello = 11,      // client's name and nonce → kAuthChallenge
  kAuthChallenge = 12,  // server's name and nonce
  kAuthProof = 13,      // client's proof → kAuthAccept
  kAuthAccept = 14,     // server's proof
};

inline constexpr uint32_t kKvPeerMagic = 0x4b505843;  // "CXPK"
inline constexpr uint16_t kKvPeerVersion = 1;
inline constexpr size_t kKvPeerHeaderBytes = 20;
inline constexpr size_t kMaxKvPeerBody = 64 * 1024;
inline constexpr size_t kMaxPinKeys = 64;

struct KvPeerHeader {
  KvPeerType type = KvPeerType::kPin;
  uint32_t body_bytes = 0;
  uint64_t id = 0;  // a reply repeats its request's
};

struct KvPinRequest {
  std::string from;  // the reader's member name
  kvcache::NamespaceFingerprint fp;
  std::vector<proto::KvKey> keys;  // 1..kMaxPinKeys
};

struct KvPinEntry {
  uint64_t pin_id = 0;
  uint64_t region_key = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  uint32_t crc = 0;
};

struct KvPinReply {
  std::vector<KvPinEntry> entries;  // at most the keys asked, in their order
};

// The holder `from` committed these chunks and asks the peer to keep a
// copy of each (docs/pods.md, "Replicas").
// Asks about the same things as a pin (from: the holder's member name).
using KvReplicateRequest = KvPinRequest;

struct KvReplicateReply {
  uint32_t accepted = 0;  // keys the peer queued for copying (the rest it refused)
};

struct KvUnpinRequest {
  std::vector<uint64_t> pin_ids;  // 1..kMaxPinKeys
};

std::vector<std::byte> encode_kv_peer_header(const KvPeerHeader& header);
// EINVAL: bad magic, version, type or a body longer than kMaxKvPeerBody.
Result<KvPeerHeader> decode_kv_peer_header(std::span<const std::byte> bytes);

std::vector<std::byte> encode_pin_request(const KvPinRequest& request);
Result<KvPinRequest> decode_pin_request(std::span<const std::byte> body);
std::vector<std::byte> encode_pin_reply(const KvPinReply& reply);
// `asked`: how many keys the request had (a reply may not hold more).
Result<KvPinReply> decode_pin_reply(std::span<const std::byte> body, size_t asked, uint64_t max_length);
std::vector<std::byte> encode_unpin_request(const KvUnpinRequest& request);
Result<KvUnpinRequest> decode_unpin_request(std::span<const std::byte> body);
// A probe asks what a pin would (from, fingerprint, 1..kMaxPinKeys keys)
// and pins nothing; its body is a pin request's.
std::vector<std::byte> encode_probe_request(const KvPinRequest& request);
Result<KvPinRequest> decode_probe_request(std::span<const std::byte> body);
struct KvProbeReply {
  uint32_t held = 0;  // leading keys the holder has, at most the keys asked
};
std::vector<std::byte> encode_probe_reply(const KvProbeReply& reply);
// EINVAL: not 4 bytes, or more keys held than `asked`.
Result<KvProbeReply> decode_probe_reply(std::span<const std::byte> body, size_t asked);
std::vector<std::byte> encode_replicate_request(const KvReplicateRequest& request);
Result<KvReplicateRequest> decode_replicate_request(std::span<const std::byte> body);
std::vector<std::byte> encode_replicate_reply(const KvReplicateReply& reply);
// `asked`: how many keys the request had (a reply may not accept more).
Result<KvReplicateReply> decode_replicate_reply(std::span<const std::byte> body, size_t asked);
// A card is printable text of at most kMaxKvPeerBody bytes.
Result<std::string> decode_card_reply(std::span<const std::byte> body);

}  // namespace cxlpool::daemon
