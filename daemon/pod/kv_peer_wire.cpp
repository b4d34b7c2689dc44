// SPDX-License-Identifier: Apache-2.0
#include "kv_peer_wire.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "pod_name.hpp"

namespace cxlpool::daemon {
namespace {

class Writer {
 public:
  template <typename T>
  void put(T value) {
    const size_t at = out_.size();
    out_.resize(at + sizeof value);
    std::memcpy(out_.data() + at, &value, sizeof value);
  }
  void put_text(const std::string& text) {
    put<uint16_t>(static_cast<uint16_t>(text.size()));
    const size_t at = out_.size();
    out_.resize(at + text.size());
    std::memcpy(out_.data() + at, text.data(), text.size());
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  bool get(T& value) {
    if (in_.size() - at_ < sizeof value) return false;
    std::memcpy(&value, in_.data() + at_, sizeof value);
    at_ += sizeof value;
    return true;
  }
  bool get_text(std::string& text, size_t max) {
    uint16_t n = 0;
    if (!get(n) || n > max || in_.size() - at_ < n) return false;
    text.assign(reinterpret_cast<const char*>(in_.data() + at_), n);
    at_ += n;
    return true;
  }
  [[nodiscard]] bool done() const { return at_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  size_t at_ = 0;
};

bool known_type(uint16_t t) {
  return t >= 1 && t <= 14;  // 11..14: the handshake
}

}  // namespace

std::vector<std::byte> encode_kv_peer_header(const KvPeerHeader& header) {
  Writer w;
  w.put<uint32_t>(kKvPeerMagic);
  w.put<uint16_t>(kKvPeerVersion);
  w.put<uint16_t>(static_cast<uint16_t>(header.type));
  w.put<uint32_t>(header.body_bytes);
  w.put<uint64_t>(header.id);
  return w.take();
}

Result<KvPeerHeader> decode_kv_peer_header(std::span<const std::byte> bytes) {
  Reader r(bytes);
  uint32_t magic = 0, body = 0;
  uint16_t version = 0, type = 0;
  KvPeerHeader h;
  if (!r.get(magic) || !r.get(version) || !r.get(type) || !r.get(body) || !r.get(h.id) || !r.done()) {
    return fail(EINVAL, "kv peer message: header is not " + std::to_string(kKvPeerHeaderBytes) + " bytes");
  }
  if (magic != kKvPeerMagic) return fail(EINVAL, "kv peer message: bad magic");
  if (version != kKvPeerVersion) return fail(EINVAL, "kv peer message: version " + std::to_string(version));
  if (!known_type(type)) return fail(EINVAL, "kv peer message: unknown type " + std::to_string(type));
  if (body > kMaxKvPeerBody) return fail(EINVAL, "kv peer message: body of " + std::to_string(body) + " bytes");
  h.type = static_cast<KvPeerType>(type);
  h.body_bytes = body;
  return h;
}

std::vector<std::byte> encode_pin_request(const KvPinRequest& request) {
  Writer w;
  w.put_text(request.from);
  w.put<uint64_t>(request.fp.hi);
  w.put<uint64_t>(request.fp.lo);
  w.put<uint32_t>(static_cast<uint32_t>(request.keys.size()));
  for (const proto::KvKey& k : request.keys) {
    w.put<uint64_t>(k.lo);
    w.put<uint64_t>(k.hi);
  }
  return w.take();
}

namespace {

// A pin, a probe and a replicate request ask about the same things: `what`
// names the message.
Result<KvPinRequest> decode_key_request(std::span<const std::byte> body, const std::string& what) {
  Reader r(body);
  KvPinRequest req;
  uint32_t n = 0;
  if (!r.get_text(req.from, 64) || !valid_pod_name(req.from)) return fail(EINVAL, what + ": bad member name");
  if (!r.get(req.fp.hi) || !r.get(req.fp.lo) || !r.get(n)) return fail(EINVAL, what + ": truncated");
  if (n == 0 || n > kMaxPinKeys) return fail(EINVAL, what + ": " + std::to_string(n) + " keys");
  req.keys.resize(n);
  for (proto::KvKey& k : req.keys) {
    if (!r.get(k.lo) || !r.get(k.hi)) return fail(EINVAL, what + ": truncated key list");
  }
  if (!r.done()) return fail(EINVAL, what + ": trailing bytes");
  return req;
}

// A probe's and a replicate request's answer: one count of the keys asked.
std::vector<std::byte> encode_count_reply(uint32_t count) {
  Writer w;
  w.put<uint32_t>(count);
  return w.take();
}

Result<uint32_t> decode_count_reply(std::span<const std::byte> body, size_t asked, const std::string& what,
                                    const std::string& verb) {
  Reader r(body);
  uint32_t count = 0;
  if (!r.get(count) || !r.done()) return fail(EINVAL, what + ": not 4 bytes");
  if (count > asked) {
    return fail(EINVAL, what + ": " + std::to_string(count) + " keys " + verb + " of " + std::to_string(asked) + " asked");
  }
  return count;
}

}  // namespace

Result<KvPinRequest> decode_pin_request(std::span<const std::byte> body) {
  return decode_key_request(body, "pin request");
}

std::vector<std::byte> encode_probe_request(const KvPinRequest& request) { return encode_pin_request(request); }

Result<KvPinRequest> decode_probe_request(std::span<const std::byte> body) {
  return decode_key_request(body, "probe request");
}

std::vector<std::byte> encode_probe_reply(const KvProbeReply& reply) { return encode_count_reply(reply.held); }

Result<KvProbeReply> decode_probe_reply(std::span<const std::byte> body, size_t asked) {
  auto held = decode_count_reply(body, asked, "probe reply", "held");
  if (!held) return tl::unexpected(held.error());
  return KvProbeReply{*held};
}

std::vector<std::byte> encode_replicate_request(const KvReplicateRequest& request) {
  return encode_pin_request(request);
}

Result<KvReplicateRequest> decode_replicate_request(std::span<const std::byte> body) {
  return decode_key_request(body, "replicate request");
}

std::vector<std::byte> encode_replicate_reply(const KvReplicateReply& reply) {
  return encode_count_reply(reply.accepted);
}

Result<KvReplicateReply> decode_replicate_reply(std::span<const std::byte> body, size_t asked) {
  auto accepted = decode_count_reply(body, asked, "replicate reply", "accepted");
  if (!accepted) return tl::unexpected(accepted.error());
  return KvReplicateReply{*accepted};
}

std::vector<std::byte> encode_pin_reply(const KvPinReply& reply) {
  Writer w;
  w.put<uint32_t>(static_cast<uint32_t>(reply.entries.size()));
  for (const KvPinEntry& e : reply.entries) {
    w.put<uint64_t>(e.pin_id);
    w.put<uint64_t>(e.region_key);
    w.put<uint64_t>(e.offset);
    w.put<uint32_t>(e.length);
    w.put<uint32_t>(e.crc);
  }
  return w.take();
}

Result<KvPinReply> decode_pin_reply(std::span<const std::byte> body, size_t asked, uint64_t max_length) {
  Reader r(body);
  KvPinReply reply;
  uint32_t n = 0;
  if (!r.get(n)) return fail(EINVAL, "pin reply: truncated");
  if (n > asked) return fail(EINVAL, "pin reply: " + std::to_string(n) + " entries for " + std::to_string(asked) + " keys");
  reply.entries.resize(n);
  for (KvPinEntry& e : reply.entries) {
    if (!r.get(e.pin_id) || !r.get(e.region_key) || !r.get(e.offset) || !r.get(e.length) || !r.get(e.crc)) {
      return fail(EINVAL, "pin reply: truncated entry");
    }
    if (e.length == 0 || e.length > max_length) {
      return fail(EINVAL, "pin reply: a chunk of " + std::to_string(e.length) + " bytes (a slot holds " +
                              std::to_string(max_length) + ")");
    }
  }
  if (!r.done()) return fail(EINVAL, "pin reply: trailing bytes");
  return reply;
}

std::vector<std::byte> encode_unpin_request(const KvUnpinRequest& request) {
  Writer w;
  w.put<uint32_t>(static_cast<uint32_t>(request.pin_ids.size()));
  for (uint64_t id : request.pin_ids) w.put<uint64_t>(id);
  return w.take();
}

Result<KvUnpinRequest> decode_unpin_request(std::span<const std::byte> body) {
  Reader r(body);
  KvUnpinRequest req;
  uint32_t n = 0;
  if (!r.get(n) || n == 0 || n > kMaxPinKeys) return fail(EINVAL, "unpin request: bad count");
  req.pin_ids.resize(n);
  for (uint64_t& id : req.pin_ids) {
    if (!r.get(id)) return fail(EINVAL, "unpin request: truncated");
  }
  if (!r.done()) return fail(EINVAL, "unpin request: trailing bytes");
  return req;
}

Result<std::string> decode_card_reply(std::span<const std::byte> body) {
  std::string card(reinterpret_cast<const char*>(body.data()), body.size());
  if (card.empty() || !std::all_of(card.begin(), card.end(), [](char c) { return std::isprint(static_cast<unsigned char>(c)); })) {
    return fail(EINVAL, "card reply: empty or not printable");
  }
  return card;
}

}  // namespace cxlpool::daemon
