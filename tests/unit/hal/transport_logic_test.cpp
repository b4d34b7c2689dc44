// SPDX-License-Identifier: Apache-2.0
// The Transport's pure logic: how batches are sliced and striped over
// rails, when a rail goes out of service and where a failed chunk goes
// next, the peer card and the control messages (hostile input included),
// and the option checks.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <numeric>

#include "cxlpool/hal/driver/rail_health.hpp"
#include "cxlpool/hal/driver/transfer_plan.hpp"
#include "cxlpool/hal/driver/transfer_wire.hpp"
#include "cxlpool/hal/driver/transport_driver.hpp"

namespace cxlpool::hal {
namespace {

using namespace std::chrono_literals;

TEST(TransferPlan, SlicesEveryRequestAndCoversItExactly) {
  const std::vector<std::uint64_t> lengths{10, 0, 4096 * 3 + 1, 4096};
  const std::vector<std::uint32_t> rails{0};
  auto plan = plan_chunks(lengths, 4096, rails);
  ASSERT_EQ(plan.size(), 1u + 4u + 1u);
  std::vector<std::uint64_t> covered(lengths.size(), 0);
  for (const auto& c : plan) {
    EXPECT_EQ(c.offset, covered[c.request]) << "chunks of a request are in order and contiguous";
    EXPECT_LE(c.length, 4096u);
    EXPECT_GT(c.length, 0u);
    covered[c.request] += c.length;
  }
  EXPECT_EQ(covered, lengths);
}

TEST(TransferPlan, StripesEvenlyOverRails) {
  const std::vector<std::uint64_t> lengths{4 << 20};
  const std::vector<std::uint32_t> rails{0, 1};
  auto plan = plan_chunks(lengths, 512 << 10, rails);
  ASSERT_EQ(plan.size(), 8u);
  std::uint64_t bytes[2] = {0, 0};
  for (const auto& c : plan) bytes[c.rail] += c.length;
  EXPECT_EQ(bytes[0], bytes[1]);
  // Alternating: both rails start at once.
  EXPECT_EQ(plan[0].rail, 0u);
  EXPECT_EQ(plan[1].rail, 1u);
}

TEST(TransferPlan, BalancesBytesNotChunks) {
  // A short chunk then long ones: the rail that got the short one gets the next.
  const std::vector<std::uint64_t> lengths{100, 8192, 8192};
  const std::vector<std::uint32_t> rails{3, 5};
  auto plan = plan_chunks(lengths, 8192, rails);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].rail, 3u);
  EXPECT_EQ(plan[1].rail, 5u);
  EXPECT_EQ(plan[2].rail, 3u);
}

TEST(TransferPlan, NoRailsOrNoChunkSizeGivesNothing) {
  const std::vector<std::uint64_t> lengths{100};
  EXPECT_TRUE(plan_chunks(lengths, 4096, {}).empty());
  const std::vector<std::uint32_t> rails{0};
  EXPECT_TRUE(plan_chunks(lengths, 0, rails).empty());
}

TEST(RailHealth, DownRailComesBackAfterItsTime) {
  RailHealth h(3, 1000ms);
  const auto t0 = RailClock::now();
  const std::vector<std::uint32_t> all{0, 1, 2};
  EXPECT_EQ(h.usable_rails(all, t0), all);
  h.take_down(1, t0);
  EXPECT_FALSE(h.in_service(1));
  EXPECT_EQ(h.usable_rails(all, t0 + 999ms), (std::vector<std::uint32_t>{0, 2}));
  // Offered again (to reconnect) once its time has come, not yet in service.
  EXPECT_TRUE(h.usable(1, t0 + 1000ms));
  EXPECT_FALSE(h.in_service(1));
  h.mark_up(1);
  EXPECT_TRUE(h.in_service(1));
  EXPECT_FALSE(h.usable(7, t0)) << "a rail it does not have";
}

TEST(RetryDecision, FailingRailGoesDownAndTheChunkMovesOn) {
  const std::vector<std::uint32_t> usable{0, 1, 2};
  auto d = decide_retry(ChunkFailure::kTimeout, 1, 4, 1, usable);
  EXPECT_TRUE(d.retry);
  EXPECT_TRUE(d.take_rail_down);
  EXPECT_EQ(d.rail, 2u);
  d = decide_retry(ChunkFailure::kCompletionError, 1, 4, 2, usable);
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.rail, 0u) << "wraps around";
}

TEST(RetryDecision, FailingOnlyRailGivesUp) {
  const std::vector<std::uint32_t> only{1};
  auto d = decide_retry(ChunkFailure::kTimeout, 1, 4, 1, only);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.error, ETIMEDOUT);
  d = decide_retry(ChunkFailure::kCompletionError, 1, 4, 1, {});
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.error, EHOSTUNREACH);
}

TEST(RetryDecision, ChecksumMismatchKeepsTheRailAndMayReuseIt) {
  const std::vector<std::uint32_t> only{0};
  auto d = decide_retry(ChunkFailure::kChecksumMismatch, 1, 4, 0, only);
  EXPECT_TRUE(d.retry);
  EXPECT_FALSE(d.take_rail_down);
  EXPECT_EQ(d.rail, 0u);
  const std::vector<std::uint32_t> two{0, 1};
  EXPECT_EQ(decide_retry(ChunkFailure::kChecksumMismatch, 1, 4, 0, two).rail, 1u);
}

TEST(RetryDecision, AttemptsRunOutAndRefusalsAreFinal) {
  const std::vector<std::uint32_t> usable{0, 1};
  auto d = decide_retry(ChunkFailure::kChecksumMismatch, 4, 4, 0, usable);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.error, EIO);
  d = decide_retry(ChunkFailure::kRefused, 1, 4, 0, usable, ERANGE);
  EXPECT_FALSE(d.retry);
  EXPECT_FALSE(d.take_rail_down);
  EXPECT_EQ(d.error, ERANGE);
}

PeerCard sample_card() {
  PeerCard card;
  card.instance = 0xfeedface12345678ull;
  card.host_id = "e2704743-0db7-4346-9f7e-a88e5f7098f0";
  card.rails.push_back({"tcp;ofi_rxm", {std::byte{2}, std::byte{0}, std::byte{0xb2}, std::byte{0x6d}}});
  card.rails.push_back({"shm", {std::byte{'f'}, std::byte{'i'}}});
  card.regions.push_back({1, 0x7f54f93e4000ull, 0x1000000});
  card.regions.push_back({7, 0, 4096});
  card.rail_keys.push_back({1, 0, 0x1a2b3c});
  card.rail_keys.push_back({7, 0, 0x4d5e});
  return card;
}

TEST(PeerCard, RoundTrips) {
  const PeerCard card = sample_card();
  const std::string text = encode_peer_card(card);
  auto back = decode_peer_card(text + "\n");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->instance, card.instance);
  EXPECT_EQ(back->host_id, card.host_id);
  ASSERT_EQ(back->rails.size(), 2u);
  EXPECT_EQ(back->rails[0].provider, "tcp;ofi_rxm");
  EXPECT_EQ(back->rails[0].address, card.rails[0].address);
  EXPECT_EQ(back->rails[1].address, card.rails[1].address);
  ASSERT_EQ(back->regions.size(), 2u);
  EXPECT_EQ(back->regions[0].base, card.regions[0].base);
  EXPECT_EQ(back->regions[1].length, 4096u);
  ASSERT_EQ(back->rail_keys.size(), 2u);
  EXPECT_EQ(back->rail_keys[0].region, 1u);
  EXPECT_EQ(back->rail_keys[0].rail, 0u);
  EXPECT_EQ(back->rail_keys[0].key, 0x1a2b3cu);
  EXPECT_EQ(back->rail_keys[1].region, 7u);
  EXPECT_EQ(back->rail_keys[1].key, 0x4d5eu);
}

TEST(PeerCard, RailKeysMayComeBeforeTheirRailsAndRegions) {
  auto card = decode_peer_card("cxlpool-fabric/1 id=1 host=h rkey=5,0,99 rail=verbs;ofi_rxm,00 region=5,1000,10");
  ASSERT_TRUE(card) << card.error().message;
  ASSERT_EQ(card->rail_keys.size(), 1u);
  EXPECT_EQ(card->rail_keys[0].key, 0x99u);
}

TEST(PeerCard, RefusesBadCards) {
  const std::string good = encode_peer_card(sample_card());
  const std::vector<std::string> bad{
      "",
      "cxlpool-fabric/2 id=1 host=h rail=tcp,00",
      "cxlpool-fabric/1 host=h rail=tcp,00",                        // no id
      "cxlpool-fabric/1 id=1 rail=tcp,00",                          // no host
      "cxlpool-fabric/1 id=1 host=h",                               // no rail
      "cxlpool-fabric/1 id=1 host=h rail=tcp,0",                    // odd hex
      "cxlpool-fabric/1 id=1 host=h rail=tcp,zz",                   // not hex
      "cxlpool-fabric/1 id=1 host=h rail=tcp",                      // no address
      "cxlpool-fabric/1 id=1 host=h/x rail=tcp,00",                 // bad host
      "cxlpool-fabric/1 id=1 id=2 host=h rail=tcp,00",              // twice
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,0",      // empty region
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,ffffffffffffffff,2",  // wraps
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 region=1,0,1",    // same key
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 color=blue",
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 rkey=1,1,5",          // no rail 1
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 rkey=2,0,5",          // no region 2
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 rkey=1,0,5 rkey=1,0,6",  // twice
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 rkey=1,0",            // no key
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 rkey=1,10,5",         // rail 16
      "cxlpool-fabric/1 id=1 host=h rail=tcp,00 region=1,0,1 rkey=1,0,x5",         // not hex
      "cxlpool-fabric/1 id=11111111111111111 host=h rail=tcp,00",  // 17 digits
      good + " extra",
  };
  for (const std::string& text : bad) {
    auto card = decode_peer_card(text);
    EXPECT_FALSE(card) << text;
    if (!card) {
      EXPECT_EQ(card.error().code, EINVAL) << text;
    }
  }
  std::string many = "cxlpool-fabric/1 id=1 host=h";
  for (int i = 0; i < 17; ++i) many += " rail=tcp,00";
  EXPECT_FALSE(decode_peer_card(many));
}

WireMessage sample_request() {
  WireMessage m;
  m.type = WireType::kVerifyRequest;
  m.id = 42;
  m.reply_to = {std::byte{1}, std::byte{2}, std::byte{3}};
  m.entries.push_back({7, 4096, 512, 0xdeadbeef, 0});
  m.entries.push_back({7, 0, 4096, 0x12345678, 0});
  return m;
}

TEST(WireMessage, RoundTrips) {
  const WireMessage m = sample_request();
  const auto bytes = encode_message(m);
  EXPECT_LE(bytes.size(), max_wire_bytes());
  auto back = decode_message(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->type, m.type);
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->reply_to, m.reply_to);
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries[0].crc, 0xdeadbeefu);
  EXPECT_EQ(back->entries[1].length, 4096u);

  WireMessage reply;
  reply.type = WireType::kChecksumReply;
  reply.id = 9;
  reply.entries.resize(kMaxWireEntries);
  reply.entries[3].status = ERANGE;
  const auto reply_bytes = encode_message(reply);
  EXPECT_LE(reply_bytes.size(), max_wire_bytes());
  auto r = decode_message(reply_bytes);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->entries[3].status, static_cast<std::uint32_t>(ERANGE));
}

TEST(WireMessage, RefusesDamagedMessages) {
  const auto good = encode_message(sample_request());
  // Every truncation.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(decode_message(std::span(good).first(n))) << n;
  }
  auto with = [&](std::size_t at, std::uint32_t value, std::size_t width) {
    auto b = good;
    std::memcpy(b.data() + at, &value, width);
    return decode_message(b);
  };
  EXPECT_EQ(with(0, 0x12345678, 4).error().code, EPROTO);  // magic
  EXPECT_EQ(with(4, 2, 2).error().code, EPROTO);           // version
  EXPECT_EQ(with(6, 9, 2).error().code, EINVAL);           // type
  EXPECT_EQ(with(16, 0, 4).error().code, EINVAL);          // no entries
  EXPECT_EQ(with(16, 3, 4).error().code, EINVAL);          // count vs length
  EXPECT_EQ(with(20, 0, 4).error().code, EINVAL);          // a request without a reply address
  // A request entry of length 0, and a status that is no errno.
  const std::size_t first_entry = 24 + 3;
  EXPECT_EQ(with(first_entry + 16, 0, 4).error().code, EINVAL);
  EXPECT_EQ(with(first_entry + 24, 70000, 4).error().code, EINVAL);
  auto longer = good;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_message(longer));
}

TEST(TransportOptions, ChecksEveryField) {
  TransportOptions ok;
  ok.rails = {"10.0.0.1", "fd00::1"};
  EXPECT_TRUE(validate_transport_options(ok));
  auto expect_bad = [&](auto change) {
    TransportOptions o = ok;
    change(o);
    auto r = validate_transport_options(o);
    EXPECT_FALSE(r);
    if (!r) {
      EXPECT_EQ(r.error().code, EINVAL);
    }
  };
  expect_bad([](TransportOptions& o) { o.chunk_bytes = 3000; });
  expect_bad([](TransportOptions& o) { o.chunk_bytes = 6000; });
  expect_bad([](TransportOptions& o) { o.chunk_bytes = 128u << 20; });
  expect_bad([](TransportOptions& o) { o.max_attempts = 0; });
  expect_bad([](TransportOptions& o) { o.op_timeout = 0ms; });
  expect_bad([](TransportOptions& o) { o.rails = {"eth0"}; });
  expect_bad([](TransportOptions& o) { o.rails = std::vector<std::string>(9, "10.0.0.1"); });
  expect_bad([](TransportOptions& o) { o.provider = ""; });
  expect_bad([](TransportOptions& o) { o.host_id = std::string(65, 'h'); });
}

}  // namespace
}  // namespace cxlpool::hal
