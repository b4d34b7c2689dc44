// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the KV control messages a daemon reads from its
// pod's peers over TCP (pin, pin reply, unpin, card reply, probe, probe
// reply, replicate, replicate reply, the handshake of an authenticated
// pod): bytes anyone on
// the pod's network could send to a daemon running as root. The input is a
// frame: a 20-byte header, then the body its type names. Properties:
// rejections carry EINVAL with a message; an accepted header or body keeps
// the documented limits and re-encodes to the bytes it came from.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "fuzz_violation.hpp"
#include "pod/kv_auth_wire.hpp"
#include "pod/kv_peer_wire.hpp"
#include "pod/pod_name.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_pod_kv_wire_decode";

namespace {

using cxlpool::fuzz::accepted;
using cxlpool::fuzz::violated;
using namespace cxlpool::daemon;

// The largest chunk a reply may name, as a daemon with 2 MiB slots asks.
constexpr uint64_t kSlotBytes = 2 << 20;

template <class Encoded>
void same_bytes(const Encoded& encoded, std::span<const std::byte> input, const char* what) {
  if (encoded.size() != input.size() || !std::equal(encoded.begin(), encoded.end(), input.begin())) {
    violated(what, "re-encoding differs from the input");
  }
}

void check_body(KvPeerType type, std::span<const std::byte> body) {
  switch (type) {
    case KvPeerType::kPin:
      if (auto r = decode_pin_request(body); accepted(r, {EINVAL})) {
        if (r->keys.empty() || r->keys.size() > kMaxPinKeys) violated("pin request", "key count out of range");
        if (!valid_pod_name(r->from)) violated("pin request", "member name accepted: " + r->from);
        same_bytes(encode_pin_request(*r), body, "pin request");
      }
      break;
    case KvPeerType::kPinReply:
      if (auto r = decode_pin_reply(body, kMaxPinKeys, kSlotBytes); accepted(r, {EINVAL})) {
        if (r->entries.size() > kMaxPinKeys) violated("pin reply", "more entries than keys asked");
        for (const auto& e : r->entries) {
          if (e.length == 0 || e.length > kSlotBytes) violated("pin reply", "chunk length out of range");
        }
        same_bytes(encode_pin_reply(*r), body, "pin reply");
      }
      break;
    case KvPeerType::kUnpin:
      if (auto r = decode_unpin_request(body); accepted(r, {EINVAL})) {
        if (r->pin_ids.empty() || r->pin_ids.size() > kMaxPinKeys) violated("unpin request", "count out of range");
        same_bytes(encode_unpin_request(*r), body, "unpin request");
      }
      break;
    case KvPeerType::kCardReply:
      if (auto r = decode_card_reply(body); accepted(r, {EINVAL})) {
        if (r->size() != body.size()) violated("card reply", "length differs from the body");
      }
      break;
    case KvPeerType::kProbe:
      if (auto r = decode_probe_request(body); accepted(r, {EINVAL})) {
        if (r->keys.empty() || r->keys.size() > kMaxPinKeys) violated("probe request", "key count out of range");
        if (!valid_pod_name(r->from)) violated("probe request", "member name accepted: " + r->from);
        same_bytes(encode_probe_request(*r), body, "probe request");
      }
      break;
    case KvPeerType::kProbeReply:
      if (auto r = decode_probe_reply(body, kMaxPinKeys); accepted(r, {EINVAL})) {
        if (r->held > kMaxPinKeys) violated("probe reply", "more keys held than asked");
        same_bytes(encode_probe_reply(*r), body, "probe reply");
      }
      break;
    case KvPeerType::kReplicate:
      if (auto r = decode_replicate_request(body); accepted(r, {EINVAL})) {
        if (r->keys.empty() || r->keys.size() > kMaxPinKeys) violated("replicate request", "key count out of range");
        if (!valid_pod_name(r->from)) violated("replicate request", "member name accepted: " + r->from);
        same_bytes(encode_replicate_request(*r), body, "replicate request");
      }
      break;
    case KvPeerType::kReplicateReply:
      if (auto r = decode_replicate_reply(body, kMaxPinKeys); accepted(r, {EINVAL})) {
        if (r->accepted > kMaxPinKeys) violated("replicate reply", "more keys accepted than asked");
        same_bytes(encode_replicate_reply(*r), body, "replicate reply");
      }
      break;
    case KvPeerType::kAuthHello:
    case KvPeerType::kAuthChallenge:
      if (auto r = decode_auth_hello(body); accepted(r, {EINVAL})) {
        if (!valid_pod_name(r->name)) violated("auth hello", "member name accepted: " + r->name);
        same_bytes(encode_auth_hello(*r), body, "auth hello");
      }
      break;
    case KvPeerType::kAuthProof:
    case KvPeerType::kAuthAccept:
      if (auto r = decode_auth_proof(body); accepted(r, {EINVAL})) same_bytes(encode_auth_proof(*r), body, "auth proof");
      break;
    case KvPeerType::kUnpinReply:
    case KvPeerType::kCard:
      break;  // empty bodies: nothing to decode
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  if (bytes.size() < kKvPeerHeaderBytes) {
    if (auto h = decode_kv_peer_header(bytes); accepted(h, {EINVAL})) violated("header", "a short header was accepted");
    return 0;
  }
  const auto head = bytes.first(kKvPeerHeaderBytes);
  auto h = decode_kv_peer_header(head);
  if (!accepted(h, {EINVAL})) return 0;
  if (h->body_bytes > kMaxKvPeerBody) violated("header", "body longer than the limit accepted");
  same_bytes(encode_kv_peer_header(*h), head, "header");
  check_body(h->type, bytes.subspan(kKvPeerHeaderBytes));
  return 0;
}
