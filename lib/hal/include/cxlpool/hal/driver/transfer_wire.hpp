// SPDX-License-Identifier: Apache-2.0
// What transports say to each other besides the data: a peer's card (its
// addresses and regions, exchanged out of band) and the control messages
// that carry chunk checksums (a reader asks the owner for the CRC-32C of
// the chunks it read; a writer asks the owner to check the chunks it wrote
// against its CRC-32C). Decoders take hostile input: every field is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::hal {

struct CardRail {
  std::string provider;             // "tcp;ofi_rxm", "shm", ...
  std::vector<std::byte> address;   // the provider's endpoint name (fi_getname)
};
struct CardRegion {
  std::uint64_t key = 0;
  std::uint64_t base = 0;  // its address in the owner (providers that address by virtual address)
  std::uint64_t length = 0;
};
// The key a rail's provider chose for a region, where the provider picks
// keys itself (verbs); on the others a region's key is the same on every
// rail and the card lists none.
struct CardRailKey {
  std::uint64_t region = 0;  // a region's key, as in CardRegion
  std::uint32_t rail = 0;    // an index into PeerCard::rails
  std::uint64_t key = 0;     // the provider's key for it on that rail
};
struct PeerCard {
  std::uint64_t instance = 0;  // tells transports apart (a new one per open)
  std::string host_id;         // [A-Za-z0-9._-], 1..64 characters
  std::vector<CardRail> rails; // network rails and the shm endpoint, at most kMaxCardRails
  std::vector<CardRegion> regions;
  std::vector<CardRailKey> rail_keys;  // each (region, rail) once; region and rail exist
};
inline constexpr std::size_t kMaxCardRails = 16;
inline constexpr std::size_t kMaxCardRegions = 4096;
inline constexpr std::size_t kMaxAddressBytes = 128;

// "cxlpool-fabric/1 id=<hex> host=<id> rail=<provider>,<hex address> ...
// region=<hex key>,<hex base>,<hex length> ... [rkey=<hex region key>,<hex
// rail index>,<hex provider key> ...]": one line of text.
std::string encode_peer_card(const PeerCard& card);
// EINVAL naming the bad token.
Result<PeerCard> decode_peer_card(std::string_view text);

enum class WireType : std::uint16_t {
  kChecksumRequest = 1,  // entries: key, offset, length (of chunks the sender read)
  kChecksumReply = 2,    // entries: crc, status per requested chunk, same order
  kVerifyRequest = 3,    // entries: key, offset, length, crc (of chunks the sender wrote)
  kVerifyReply = 4,      // entries: status per chunk (0, or EIO when the bytes differ)
};

struct WireEntry {
  std::uint64_t key = 0;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::uint32_t crc = 0;
  std::uint32_t status = 0;  // replies: 0, or a positive errno (ENOENT, ERANGE, EIO)
};

struct WireMessage {
  WireType type = WireType::kChecksumRequest;
  std::uint64_t id = 0;               // the request's id, echoed by its reply
  std::vector<std::byte> reply_to;    // requests: the sender's address on this rail
  std::vector<WireEntry> entries;     // 1..kMaxWireEntries
};
inline constexpr std::size_t kMaxWireEntries = 256;
// The largest encoded message (a receive buffer of this size takes any).
std::size_t max_wire_bytes();

std::vector<std::byte> encode_message(const WireMessage& message);
// EINVAL (EPROTO for a wrong magic or version) naming the bad field.
Result<WireMessage> decode_message(std::span<const std::byte> bytes);

}  // namespace cxlpool::hal
