// SPDX-License-Identifier: Apache-2.0
// The KV control messages between the daemons of a pod: every message
// round-trips, and the decoders refuse what a hostile or broken peer could
// send (bad magic, version, type, sizes, counts, truncation, trailing
// bytes, chunk lengths a slot cannot hold, more keys accepted than asked),
// the handshake's bodies too.
#include <gtest/gtest.h>

#include <cstring>

#include "pod/kv_auth_wire.hpp"
#include "pod/kv_peer_wire.hpp"

namespace cxlpool::daemon {
namespace {

TEST(KvPeerWire, HeaderRoundTripsAndIsChecked) {
  const auto bytes = encode_kv_peer_header({KvPeerType::kUnpin, 24, 99});
  ASSERT_EQ(bytes.size(), kKvPeerHeaderBytes);
  auto back = decode_kv_peer_header(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->type, KvPeerType::kUnpin);
  EXPECT_EQ(back->body_bytes, 24u);
  EXPECT_EQ(back->id, 99u);

  auto damaged = [&](size_t at, uint8_t value) {
    auto copy = bytes;
    copy[at] = std::byte{value};
    return decode_kv_peer_header(copy);
  };
  EXPECT_FALSE(damaged(0, 0x00));  // magic
  EXPECT_FALSE(damaged(4, 0x02));  // version
  EXPECT_FALSE(damaged(6, 0x00));  // type 0
  EXPECT_FALSE(damaged(6, 0x0f));  // type 15
  EXPECT_FALSE(damaged(6, 0xff));  // type 255
  EXPECT_FALSE(damaged(10, 0x01)); // body of 64 KiB + 24
  EXPECT_FALSE(decode_kv_peer_header(std::span(bytes).first(kKvPeerHeaderBytes - 1)));
  EXPECT_TRUE(damaged(6, 0x07));   // kReplicate
  EXPECT_TRUE(damaged(6, 0x09));   // kProbe
  EXPECT_TRUE(damaged(6, 0x0a));   // kProbeReply
  EXPECT_TRUE(damaged(6, 0x0b));   // kAuthHello
  EXPECT_TRUE(damaged(6, 0x0e));   // kAuthAccept
}

TEST(KvPeerWire, PinRequestRoundTripsAndIsChecked) {
  KvPinRequest r;
  r.from = "host-b";
  r.fp = {0x1111, 0x2222};
  r.keys = {{1, 2}, {3, 4}};
  const auto body = encode_pin_request(r);
  auto back = decode_pin_request(body);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->from, "host-b");
  EXPECT_EQ(back->fp.hi, 0x1111u);
  EXPECT_EQ(back->fp.lo, 0x2222u);
  EXPECT_EQ(back->keys, r.keys);

  EXPECT_FALSE(decode_pin_request(std::span(body).first(body.size() - 1)));  // truncated
  auto longer = body;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_pin_request(longer));  // trailing
  KvPinRequest none = r;
  none.keys.clear();
  EXPECT_FALSE(decode_pin_request(encode_pin_request(none)));
  KvPinRequest many = r;
  many.keys.assign(kMaxPinKeys + 1, {5, 6});
  EXPECT_FALSE(decode_pin_request(encode_pin_request(many)));
  KvPinRequest bad_name = r;
  bad_name.from = "a/b";
  EXPECT_FALSE(decode_pin_request(encode_pin_request(bad_name)));
}

TEST(KvPeerWire, PinReplyRoundTripsAndIsChecked) {
  KvPinReply r;
  r.entries = {{7, 0x100, 4096, 65536, 0xdeadbeef}, {8, 0x101, 0, 100, 1}};
  const auto body = encode_pin_reply(r);
  auto back = decode_pin_reply(body, 2, 65536);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries[0].pin_id, 7u);
  EXPECT_EQ(back->entries[0].region_key, 0x100u);
  EXPECT_EQ(back->entries[0].offset, 4096u);
  EXPECT_EQ(back->entries[0].length, 65536u);
  EXPECT_EQ(back->entries[0].crc, 0xdeadbeefu);
  EXPECT_FALSE(decode_pin_reply(body, 1, 65536));      // more entries than keys asked
  EXPECT_FALSE(decode_pin_reply(body, 2, 65535));      // a chunk larger than a slot
  EXPECT_FALSE(decode_pin_reply(std::span(body).first(body.size() - 4), 2, 65536));
  KvPinReply empty_chunk;
  empty_chunk.entries = {{1, 1, 0, 0, 0}};
  EXPECT_FALSE(decode_pin_reply(encode_pin_reply(empty_chunk), 1, 65536));
  auto none = decode_pin_reply(encode_pin_reply({}), 3, 65536);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->entries.empty());
}

TEST(KvPeerWire, ProbeRoundTripsAndIsChecked) {
  KvPinRequest r;
  r.from = "host-b";
  r.fp = {0x3333, 0x4444};
  r.keys = {{1, 2}, {3, 4}, {5, 6}};
  const auto body = encode_probe_request(r);
  auto back = decode_probe_request(body);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->from, "host-b");
  EXPECT_EQ(back->fp.hi, 0x3333u);
  EXPECT_EQ(back->keys, r.keys);
  auto truncated = decode_probe_request(std::span(body).first(body.size() - 1));
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().code, EINVAL);
  EXPECT_NE(truncated.error().message.find("probe request"), std::string::npos);
  auto longer = body;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_probe_request(longer));
  KvPinRequest none = r;
  none.keys.clear();
  EXPECT_FALSE(decode_probe_request(encode_probe_request(none)));
  KvPinRequest many = r;
  many.keys.assign(kMaxPinKeys + 1, {5, 6});
  EXPECT_FALSE(decode_probe_request(encode_probe_request(many)));
  KvPinRequest bad_name = r;
  bad_name.from = ".x";
  EXPECT_FALSE(decode_probe_request(encode_probe_request(bad_name)));

  const auto reply = encode_probe_reply({2});
  ASSERT_EQ(reply.size(), 4u);
  auto held = decode_probe_reply(reply, 3);
  ASSERT_TRUE(held) << held.error().message;
  EXPECT_EQ(held->held, 2u);
  EXPECT_TRUE(decode_probe_reply(encode_probe_reply({0}), 1));
  EXPECT_FALSE(decode_probe_reply(reply, 1));  // more held than asked
  EXPECT_FALSE(decode_probe_reply(std::span(reply).first(3), 3));
  auto trailing = reply;
  trailing.push_back(std::byte{0});
  EXPECT_FALSE(decode_probe_reply(trailing, 3));
  EXPECT_FALSE(decode_probe_reply({}, 3));
}

TEST(KvPeerWire, ReplicateRequestRoundTripsAndIsChecked) {
  KvReplicateRequest r;
  r.from = "host-a";
  r.fp = {0x3333, 0x4444};
  r.keys = {{1, 2}, {3, 4}, {5, 6}};
  const auto body = encode_replicate_request(r);
  auto back = decode_replicate_request(body);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->from, "host-a");
  EXPECT_EQ(back->fp.hi, 0x3333u);
  EXPECT_EQ(back->fp.lo, 0x4444u);
  EXPECT_EQ(back->keys, r.keys);
  auto header = decode_kv_peer_header(encode_kv_peer_header({KvPeerType::kReplicate, 8, 1}));
  ASSERT_TRUE(header);
  EXPECT_EQ(header->type, KvPeerType::kReplicate);

  EXPECT_FALSE(decode_replicate_request(std::span(body).first(body.size() - 1)));  // truncated
  EXPECT_FALSE(decode_replicate_request(std::span(body).first(2)));                // name length only
  auto longer = body;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_replicate_request(longer));  // trailing
  KvReplicateRequest none = r;
  none.keys.clear();
  EXPECT_FALSE(decode_replicate_request(encode_replicate_request(none)));
  KvReplicateRequest many = r;
  many.keys.assign(kMaxPinKeys + 1, {5, 6});
  EXPECT_FALSE(decode_replicate_request(encode_replicate_request(many)));
  KvReplicateRequest most = r;
  most.keys.assign(kMaxPinKeys, {5, 6});
  EXPECT_TRUE(decode_replicate_request(encode_replicate_request(most)));
  for (const char* bad : {"", "a/b", ".hidden"}) {
    KvReplicateRequest bad_name = r;
    bad_name.from = bad;
    EXPECT_FALSE(decode_replicate_request(encode_replicate_request(bad_name))) << bad;
  }
  // A key count that promises more keys than the body holds.
  auto short_keys = body;
  short_keys.resize(body.size() - 16);
  EXPECT_FALSE(decode_replicate_request(short_keys));
}

TEST(KvPeerWire, ReplicateReplyIsChecked) {
  auto back = decode_replicate_reply(encode_replicate_reply({3}), 3);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->accepted, 3u);
  auto none = decode_replicate_reply(encode_replicate_reply({0}), 5);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->accepted, 0u);
  EXPECT_FALSE(decode_replicate_reply(encode_replicate_reply({4}), 3));  // more than asked
  const auto body = encode_replicate_reply({1});
  EXPECT_FALSE(decode_replicate_reply(std::span(body).first(3), 1));
  auto longer = body;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_replicate_reply(longer, 1));
  EXPECT_FALSE(decode_replicate_reply({}, 1));
}

TEST(KvPeerWire, UnpinAndCardAreChecked) {
  auto back = decode_unpin_request(encode_unpin_request({{1, 2, 3}}));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pin_ids, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_FALSE(decode_unpin_request(encode_unpin_request({})));
  EXPECT_FALSE(decode_unpin_request(encode_unpin_request({std::vector<uint64_t>(kMaxPinKeys + 1, 1)})));
  const std::string card = "cxlpool-fabric/1 id=1 host=h";
  auto text = decode_card_reply(std::as_bytes(std::span(card.data(), card.size())));
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, card);
  const std::string bad = "a\nb";
  EXPECT_FALSE(decode_card_reply(std::as_bytes(std::span(bad.data(), bad.size()))));
  EXPECT_FALSE(decode_card_reply({}));
}

TEST(KvPeerWire, HandshakeTypesAreKnown) {
  for (KvPeerType t : {KvPeerType::kAuthHello, KvPeerType::kAuthChallenge, KvPeerType::kAuthProof,
                       KvPeerType::kAuthAccept}) {
    auto back = decode_kv_peer_header(encode_kv_peer_header({t, 40, 0}));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(back->type, t);
  }
  auto bytes = encode_kv_peer_header({KvPeerType::kAuthHello, 0, 0});
  bytes[6] = std::byte{15};
  EXPECT_FALSE(decode_kv_peer_header(bytes));
}

TEST(KvPeerWire, AuthHelloRoundTripsAndIsChecked) {
  KvAuthHello hello{"node-3.a", {}};
  for (size_t i = 0; i < hello.nonce.size(); ++i) hello.nonce[i] = static_cast<std::byte>(i + 1);
  const auto body = encode_auth_hello(hello);
  EXPECT_EQ(body.size(), 2 + hello.name.size() + kKvAuthRandomBytes);
  auto back = decode_auth_hello(body);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->name, hello.name);
  EXPECT_EQ(back->nonce, hello.nonce);

  EXPECT_FALSE(decode_auth_hello({}));
  EXPECT_FALSE(decode_auth_hello(std::span(body).first(1)));
  EXPECT_FALSE(decode_auth_hello(std::span(body).first(body.size() - 1)));  // a short nonce
  auto longer = body;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_auth_hello(longer));  // trailing bytes
  auto lying = body;
  lying[0] = std::byte{200};  // a name longer than the body
  EXPECT_FALSE(decode_auth_hello(lying));
  for (const char* name : {"", ".hidden", "a/b", "a b"}) {
    const auto bad = encode_auth_hello({name, hello.nonce});
    auto decoded = decode_auth_hello(bad);
    EXPECT_FALSE(decoded) << name;
    if (!decoded) {
      EXPECT_EQ(decoded.error().code, EINVAL);
    }
  }
  EXPECT_FALSE(decode_auth_hello(encode_auth_hello({std::string(65, 'a'), hello.nonce})));
}

TEST(KvPeerWire, AuthProofIsExactlyOneMac) {
  std::array<std::byte, kKvAuthMacBytes> proof{};
  proof[0] = std::byte{7};
  proof[31] = std::byte{9};
  auto back = decode_auth_proof(encode_auth_proof(proof));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, proof);
  auto body = encode_auth_proof(proof);
  EXPECT_FALSE(decode_auth_proof(std::span(body).first(31)));
  body.push_back(std::byte{0});
  EXPECT_FALSE(decode_auth_proof(body));
  EXPECT_FALSE(decode_auth_proof({}));
}

}  // namespace
}  // namespace cxlpool::daemon
