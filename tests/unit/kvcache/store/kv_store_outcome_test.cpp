// SPDX-License-Identifier: Apache-2.0
// The statuses KvStore answers requests with, each produced where it is
// expected and counted per status: a miss is kOk with an empty prefix,
// anything unknown kNotFound, refusals kRetry / kTooLarge / kInvalid /
// kNotPermitted / kDenied. (The SSD tier's kChecksumError and kDeviceError:
// kv_store_ssd_test.cpp.)
#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

TEST(KvStoreOutcomes, AMissIsOkAndWhatIsUnknownIsNotFound) {
  KvHarness h;
  KV_OPEN_OR_SKIP(h, HarnessOptions{});
  const auto keys = keys_of(300, 2);
  auto look = h.call(kAlice, KvOp::kLookup, keys);
  EXPECT_EQ(look.outcome, KvStatus::kOk);
  EXPECT_EQ(look.completion.result0, 0u);
  auto get = h.call(kAlice, KvOp::kGet, keys);
  EXPECT_EQ(get.outcome, KvStatus::kOk) << "an empty prefix is an answer";
  EXPECT_EQ(get.completion.result0, 0u) << "no lease";
  EXPECT_EQ(h.call(kAlice, KvOp::kRelease, {}, 12345).outcome, KvStatus::kNotFound);
  EXPECT_EQ(h.call(kAlice, KvOp::kPutCommit, keys, 999).outcome, KvStatus::kNotFound) << "no such reservation";
  for (KvOp op : {KvOp::kLookup, KvOp::kGet, KvOp::kPrefetch, KvOp::kDelete}) {
    EXPECT_EQ(h.call(kAlice, op, keys, 0, 0, 0, 77).outcome, KvStatus::kNotFound) << "no namespace 77";
  }
  EXPECT_EQ(h.call(kAlice, KvOp::kPutBegin, keys, kChunk, 0, 0, 77).outcome, KvStatus::kNotFound);
  EXPECT_EQ(h.call(99, KvOp::kLookup, keys).outcome, KvStatus::kNotFound) << "a client never added";
  EXPECT_EQ(h.outcome_count(KvStatus::kOk), 2u);
  EXPECT_EQ(h.outcome_count(KvStatus::kNotFound), 8u);
  EXPECT_EQ(h.store().counters().rejected_requests, 8u);
}

TEST(KvStoreOutcomes, RefusalsAreStatusesAndCountedPerStatus) {
  HarnessOptions o;
  o.window_slots = 2;
  KvHarness h;
  KV_OPEN_OR_SKIP(h, o);
  const auto keys = keys_of(310, 3);
  EXPECT_EQ(h.call(kAlice, KvOp::kPutBegin, std::span(keys).first(1), kSlot + 1).outcome, KvStatus::kTooLarge);
  EXPECT_EQ(h.call(kAlice, KvOp::kPutBegin, std::span(keys).first(1), 0).outcome, KvStatus::kInvalid);
  EXPECT_EQ(h.call(kAlice, KvOp::kPutBegin, keys, kChunk).outcome, KvStatus::kRetry) << "3 keys, 2 window slots";
  Area none;
  ASSERT_TRUE(h.store().add_client(7, none.span()));
  EXPECT_EQ(h.call(7, KvOp::kPutBegin, std::span(keys).first(1), kChunk).outcome, KvStatus::kNotPermitted)
      << "no put window";
  // What the daemon refuses before the store sees it comes back as it said.
  proto::KvRequest r;
  r.request_id = 5000;
  r.op = static_cast<std::uint8_t>(KvOp::kLookup);
  r.namespace_id = h.ns();
  h.store().submit(kAlice, r, {}, KvStatus::kDenied);
  EXPECT_EQ(h.wait(kAlice, 5000).outcome, KvStatus::kDenied);
  r.request_id = 5001;
  r.op = 99;
  h.store().submit(kAlice, r, {});
  EXPECT_EQ(h.wait(kAlice, 5001).outcome, KvStatus::kInvalid) << "an unknown op";
  EXPECT_EQ(h.outcome_count(KvStatus::kTooLarge), 1u);
  EXPECT_EQ(h.outcome_count(KvStatus::kInvalid), 2u);
  EXPECT_EQ(h.outcome_count(KvStatus::kRetry), 1u);
  EXPECT_EQ(h.outcome_count(KvStatus::kNotPermitted), 1u);
  EXPECT_EQ(h.outcome_count(KvStatus::kDenied), 1u);
  EXPECT_EQ(h.outcome_count(KvStatus::kOk), 0u);
  EXPECT_EQ(h.store().counters().rejected_requests, 6u);
}

}  // namespace
}  // namespace cxlpool::kvcache::testing
