// SPDX-License-Identifier: Apache-2.0
// Encoding and decoding of valid messages: every type round-trips, the bytes
// match the layout in docs/protocol.md, and the encoder's limits line up
// with the decoder's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "codec_checks.hpp"
#include "cxlpool/proto/messages.hpp"
#include "sample_messages.hpp"
#include "wire_builder.hpp"

namespace cxlpool::proto {
namespace {

using testing::Bytes;
using testing::datagram;
using testing::kSampleRequestId;
using testing::sample_messages;

// Iterates message_table.hpp: a type added there without a sample fails here.
TEST(ProtoCodec, EveryTypeRoundTrips) {
  const auto samples = sample_messages();
  EXPECT_EQ(samples.size(), std::variant_size_v<Message>);
  for_each_message_type([&]<typename T>(std::type_identity<T>) {
    SCOPED_TRACE(MessageTraits<T>::kName);
    const auto sample = std::ranges::find_if(samples, [](const Message& m) { return std::holds_alternative<T>(m); });
    ASSERT_NE(sample, samples.end()) << "sample_messages() has no sample of this type";
    auto bytes = encode(kSampleRequestId, *sample);
    ASSERT_TRUE(bytes) << bytes.error().message;
    ASSERT_GE(bytes->size(), kHeaderSize);
    auto decoded = decode(*bytes);
    ASSERT_TRUE(decoded) << decoded.error().message;
    EXPECT_EQ(decoded->header.magic, kMagic);
    EXPECT_EQ(decoded->header.version, kVersionMax);
    EXPECT_EQ(decoded->header.type, static_cast<uint16_t>(MessageTraits<T>::kType));
    EXPECT_EQ(decoded->header.request_id, kSampleRequestId);
    EXPECT_EQ(decoded->header.payload_length, bytes->size() - kHeaderSize);
    EXPECT_EQ(decoded->message, *sample);
  });
}

TEST(ProtoCodec, DefaultConstructedRequestsRoundTripOrAreRefused) {
  // Defaults that break a rule (size 0, empty name) must be refused by the
  // encoder, never sent.
  EXPECT_EQ(encode(1, RegionAlloc{}).error().code, EINVAL);
  EXPECT_EQ(encode(1, NamedCreate{}).error().code, EINVAL);
  EXPECT_EQ(encode(1, NamedOpen{}).error().code, EINVAL);
  EXPECT_EQ(encode(1, ErrorReply{}).error().code, EINVAL);
  for (const Message& m : {Message(Hello{}), Message(HelloReply{}), Message(Ok{}), Message(TiersReply{}),
                          Message(RegionReply{}), Message(RegionsReply{}), Message(MigrateReply{})}) {
    testing::expect_round_trip(m, 0);
  }
}

TEST(ProtoLayout, HeaderAndFixedOffsetsMatchTheDocument) {
  auto bytes = encode(0x01020304, RegionAlloc{.tier_id = 5, .size = 0x1122334455667788, .flags = 3});
  ASSERT_TRUE(bytes);
  Bytes expected;
  expected.u32(0x504c5843).u16(1).u16(20).u32(0x01020304).u32(16);  // header
  expected.u32(5).u64(0x1122334455667788).u32(3);                   // payload
  EXPECT_EQ(*bytes, expected.data());
  // "CXLP" on the wire.
  EXPECT_EQ(std::to_integer<char>((*bytes)[0]), 'C');
  EXPECT_EQ(std::to_integer<char>((*bytes)[3]), 'P');
}

TEST(ProtoLayout, StringsAndListsMatchTheDocument) {
  Bytes hello;
  hello.u16(1).u16(3).str("ab");
  EXPECT_EQ(*encode(9, Hello{.min_version = 1, .max_version = 3, .client_name = "ab"}, 1),
            datagram(MsgType::kHello, hello, 1, 9));

  Bytes create;
  create.u32(2).u64(4096).u32(0640).u32(kAllocPopulate).str("w.bin");
  EXPECT_EQ(*encode(9, NamedCreate{.name = "w.bin", .tier_id = 2, .size = 4096, .mode = 0640,
                                   .flags = kAllocPopulate}),
            datagram(MsgType::kNamedCreate, create, 1, 9));

  Bytes stats;
  stats.u32(2).u64(7).str("a.b").u64(8).str("");
  EXPECT_EQ(*encode(9, StatsReply{.counters = {{.name = "a.b", .value = 7}, {.name = "", .value = 8}}}),
            datagram(MsgType::kStatsReply, stats, 1, 9));

  Bytes backends;
  backends.u32(1).u8(2).str("MemTier").str("dax").str("none");
  EXPECT_EQ(*encode(9, BackendsReply{.backends = {{.cls = "MemTier", .name = "dax",
                                                   .state = BackendState::kNotPresent,
                                                   .detail = "none"}}}),
            datagram(MsgType::kBackendsReply, backends, 1, 9));

  EXPECT_EQ(*encode(9, StatusRequest{}), datagram(MsgType::kStatus, Bytes{}, 1, 9));
}

TEST(ProtoCodec, HelloDecodesAtFutureVersionsAndIgnoresAppendedFields) {
  Bytes payload;
  payload.u16(1).u16(9).str("future-client").u32(0xdeadbeef).str("v9 field");
  auto decoded = decode(datagram(MsgType::kHello, payload, 9));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->header.version, 9);
  EXPECT_EQ(std::get<Hello>(decoded->message),
            (Hello{.min_version = 1, .max_version = 9, .client_name = "future-client"}));

  // The encoder may send Hello at any version >= 1 too (for negotiation tests).
  auto bytes = encode(3, Hello{.min_version = 2, .max_version = 9}, 9);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(decode(*bytes)->header.version, 9);
}

TEST(ProtoCodec, EncoderRefusesUnsupportedVersions) {
  auto bad = encode(1, StatusRequest{}, 2);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_NE(bad.error().message.find("version"), std::string::npos);
  EXPECT_EQ(encode(1, StatusRequest{}, 0).error().code, EINVAL);
  EXPECT_EQ(encode(1, Hello{}, 0).error().code, EINVAL);
}

TEST(ProtoCodec, MessagesUpToTheSizeLimitEncodeAndLargerOnesAreRefused) {
  // StatsReply: 16 header + 4 count + n * (8 value + 2 length + name).
  const size_t name_length = 54;  // 64-byte entries
  const size_t fitting = (kMaxMessageSize - kHeaderSize - 4) / 64;
  StatsReply reply;
  for (size_t i = 0; i < fitting; ++i) {
    reply.counters.push_back(Counter{.name = std::string(name_length, 'c'), .value = i});
  }
  // Pad the last name so the message is exactly kMaxMessageSize.
  const size_t used = kHeaderSize + 4 + fitting * 64;
  reply.counters.back().name += std::string(kMaxMessageSize - used, 'p');
  auto bytes = encode(1, reply);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(bytes->size(), kMaxMessageSize);
  auto decoded = decode(*bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(std::get<StatsReply>(decoded->message), reply);

  reply.counters.back().name += "x";
  auto too_big = encode(1, reply);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, EMSGSIZE);
}

TEST(ProtoCodec, ListLimitIsEnforcedByTheEncoder) {
  StatsReply reply;
  reply.counters.resize(kMaxListEntries);
  EXPECT_TRUE(encode(1, reply));
  reply.counters.resize(kMaxListEntries + 1);
  auto bad = encode(1, reply);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_NE(bad.error().message.find("StatsReply.counters"), std::string::npos);
}

TEST(ProtoNames, RegionNameRules) {
  EXPECT_TRUE(valid_region_name("a"));
  EXPECT_TRUE(valid_region_name("Llama-3.1_70B.weights"));
  EXPECT_TRUE(valid_region_name("a."));
  EXPECT_TRUE(valid_region_name(std::string(kMaxNameLength, 'n')));
  EXPECT_FALSE(valid_region_name(""));
  EXPECT_FALSE(valid_region_name(std::string(kMaxNameLength + 1, 'n')));
  EXPECT_FALSE(valid_region_name("."));
  EXPECT_FALSE(valid_region_name(".."));
  EXPECT_FALSE(valid_region_name(".hidden"));
  EXPECT_FALSE(valid_region_name("a/b"));
  EXPECT_FALSE(valid_region_name("a b"));
  EXPECT_FALSE(valid_region_name("caf\xc3\xa9"));
  EXPECT_FALSE(valid_region_name(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace cxlpool::proto
