// SPDX-License-Identifier: Apache-2.0
// The statuses KvStore answers requests with, each produced where it is
// expected and counted per status: a miss is kOk with an empty prefix,
// anything unknown kNotFound, refusals kRetry / kTooLarge / kInvalid /
// kNotPermitted / kDenied, and on the SSD tier a damaged record
// kChecksumError and an injected device failure kDeviceError carrying the
// device's errno.
#include <fcntl.h>
#include <unistd.h>

#include "kv_store_harness.hpp"

namespace cxlpool::kvcache::testing {
namespace {

using proto::KvOp;

std::uint64_t outcomes(KvHarness& h, KvStatus s) { return h.store().counters().outcomes[static_cast<std::size_t>(s)]; }

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
  EXPECT_EQ(outcomes(h, KvStatus::kOk), 2u);
  EXPECT_EQ(outcomes(h, KvStatus::kNotFound), 8u);
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
  EXPECT_EQ(outcomes(h, KvStatus::kTooLarge), 1u);
  EXPECT_EQ(outcomes(h, KvStatus::kInvalid), 2u);
  EXPECT_EQ(outcomes(h, KvStatus::kRetry), 1u);
  EXPECT_EQ(outcomes(h, KvStatus::kNotPermitted), 1u);
  EXPECT_EQ(outcomes(h, KvStatus::kDenied), 1u);
  EXPECT_EQ(outcomes(h, KvStatus::kOk), 0u);
  EXPECT_EQ(h.store().counters().rejected_requests, 6u);
}

class KvStoreSsdOutcomes : public ::testing::TestWithParam<Driver> {
 protected:
  // Two DRAM slots, no CXL, every demoted chunk admitted to SSD.
  HarnessOptions options() const {
    HarnessOptions o;
    o.dram_slots = 2;
    o.ssd = true;
    o.driver = GetParam();
    o.config.admission.threshold = 1;
    return o;
  }
  // Puts `keys` one by one: all but the last two end up SSD-only, the first
  // one as the first entry of region 0.
  void put_each(std::span<const proto::KvKey> keys) {
    for (const auto& k : keys) ASSERT_EQ(h_.put(kAlice, {&k, 1}).completion.result0, 1u);
  }
  // Flips one bit of the SSD file behind the store's back.
  void flip_byte(std::uint64_t offset) {
    const int fd = ::open(h_.path().c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    unsigned char b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
    b ^= 0x04;
    ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
  }

  KvHarness h_;
};

TEST_P(KvStoreSsdOutcomes, ACorruptRecordFailsTheGetWithChecksumError) {
  KV_OPEN_OR_SKIP(h_, options());
  const auto keys = keys_of(320, 4);
  put_each(keys);
  ASSERT_TRUE(h_.store().flush());  // reads now go to the device
  // Region 0: its header block, then the first entry's header block and
  // payload.
  flip_byte(2 * kSsdBlockBytes + 1234);
  auto bad = h_.call(kAlice, KvOp::kGet, std::span(keys).first(1));
  EXPECT_EQ(bad.outcome, KvStatus::kChecksumError);
  EXPECT_EQ(bad.completion.result0, 0u);
  EXPECT_EQ(h_.store().counters().leases, 0u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, std::span(keys).first(1)).completion.result0, 0u)
      << "a record that cannot be read is no longer found";
  auto good = h_.call(kAlice, KvOp::kGet, std::span(keys).subspan(1, 1));
  ASSERT_EQ(good.outcome, KvStatus::kOk);
  ASSERT_EQ(good.completion.result1, 1u);
  EXPECT_TRUE(h_.holds(good.locations[0], keys[1]));
  EXPECT_EQ(outcomes(h_, KvStatus::kChecksumError), 1u);
  EXPECT_EQ(h_.store().ssd_stats()->corrupt_dropped, 1u);
}

TEST_P(KvStoreSsdOutcomes, ADeviceErrorKeepsTheDevicesErrno) {
  HarnessOptions o = options();
  o.faulty = true;
  // Data operations: 16 region-header reads at open, the region write at
  // flush, then the get's read.
  o.fault.fail_nth_op = o.ssd_regions + 2;
  o.fault.fail_errno = EROFS;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(330, 4);
  put_each(keys);
  ASSERT_TRUE(h_.store().flush());
  auto bad = h_.call(kAlice, KvOp::kGet, std::span(keys).first(2));
  EXPECT_EQ(bad.outcome, KvOutcome::device_error(EROFS));
  EXPECT_EQ(to_errno(bad.outcome), EROFS) << "what the wire carries";
  EXPECT_EQ(outcomes(h_, KvStatus::kDeviceError), 1u);
}

TEST_P(KvStoreSsdOutcomes, AFailedWriteThroughIsADeviceError) {
  HarnessOptions o = options();
  o.sync = SsdSyncPolicy::kPerCommit;
  o.faulty = true;
  // Data operations: 16 region-header reads at open, the first region's
  // header block, then the commit's entry.
  o.fault.fail_nth_op = o.ssd_regions + 2;
  KV_OPEN_OR_SKIP(h_, o);
  const auto keys = keys_of(340, 2);
  auto failed = h_.put(kAlice, std::span(keys).first(1));
  EXPECT_EQ(failed.outcome, KvOutcome::device_error(EIO));
  EXPECT_EQ(failed.completion.result0, 0u);
  EXPECT_EQ(h_.call(kAlice, KvOp::kLookup, std::span(keys).first(1)).completion.result0, 0u) << "not committed";
  auto next = h_.put(kAlice, std::span(keys).subspan(1, 1));
  EXPECT_EQ(next.outcome, KvStatus::kOk);
  EXPECT_EQ(next.completion.result0, 1u);
}

INSTANTIATE_TEST_SUITE_P(Drivers, KvStoreSsdOutcomes, ::testing::Values(Driver::kPosix, Driver::kUring),
                         driver_name);

}  // namespace
}  // namespace cxlpool::kvcache::testing
