// SPDX-License-Identifier: Apache-2.0
// The KV data path's statuses: each one's errno is the one the wire carried
// for that outcome before statuses existed (protocol and client tests rely on
// them), a device error passes the device's own errno on, and every status
// has a distinct name for logs and counters.
#include <cerrno>
#include <cstdint>
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "../kv_status_print.hpp"
#include "cxlpool/kvcache/kv_status.hpp"

namespace cxlpool::kvcache {
namespace {

TEST(KvStatus, EachStatusHasTheWireErrnoOfItsOutcome) {
  struct Row {
    KvStatus status;
    int wire;
  };
  const Row rows[] = {
      {KvStatus::kOk, 0},
      {KvStatus::kNotFound, ENOENT},         // unknown lease, reservation, namespace; a stored key gone
      {KvStatus::kRejected, ENOSPC},         // no DRAM slot, index full
      {KvStatus::kRetry, EAGAIN},            // put window full
      {KvStatus::kBusy, EBUSY},              // a leased chunk cannot move
      {KvStatus::kOverQuota, EDQUOT},        // the account's quota
      {KvStatus::kTooManyLeases, EMFILE},    // max_leases_per_client
      {KvStatus::kTooLarge, EMSGSIZE},       // put_begin larger than a slot
      {KvStatus::kInvalid, EINVAL},          // malformed request, a key twice
      {KvStatus::kNotPermitted, EPERM},      // no put window
      {KvStatus::kDenied, EACCES},           // namespace not opened with the right
      {KvStatus::kChecksumError, EBADMSG},   // corrupt SSD record
      {KvStatus::kDeviceError, EIO},         // without the device's errno
      {KvStatus::kBadState, EINVAL},
  };
  static_assert(std::size(rows) == kKvStatusCount);
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(rows[i].status), i) << "rows follow the enum";
    EXPECT_EQ(to_errno(rows[i].status), rows[i].wire) << to_string(rows[i].status);
    EXPECT_EQ(to_errno(KvOutcome(rows[i].status)), rows[i].wire) << to_string(rows[i].status);
  }
}

TEST(KvStatus, ADeviceErrorCarriesTheDevicesErrno) {
  EXPECT_EQ(to_errno(KvOutcome::device_error(EROFS)), EROFS);
  EXPECT_EQ(to_errno(KvOutcome::device_error(ENOSPC)), ENOSPC);
  EXPECT_EQ(to_errno(KvOutcome::device_error(0)), EIO) << "no errno given: EIO";
  EXPECT_EQ(KvOutcome::device_error(EIO).status, KvStatus::kDeviceError);
  EXPECT_NE(KvOutcome::device_error(EIO), KvOutcome::device_error(EROFS));
  EXPECT_NE(KvOutcome::device_error(EIO), KvOutcome(KvStatus::kDeviceError));
}

TEST(KvStatus, NamesAreDistinctAndFitCounterNames) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < kKvStatusCount; ++i) {
    const std::string name(to_string(static_cast<KvStatus>(i)));
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"), std::string::npos) << name;
    EXPECT_TRUE(seen.insert(name).second) << name << " twice";
  }
  EXPECT_EQ(to_string(KvStatus::kNotFound), "not_found");
  EXPECT_EQ(to_string(KvStatus::kChecksumError), "checksum_error");
  EXPECT_EQ(to_string(KvStatus::kDeviceError), "device_error");
}

TEST(KvStatus, ResultHoldsAValueOnlyWhenOk) {
  const KvResult<std::uint32_t> hit(std::uint32_t{4096});
  EXPECT_TRUE(hit.ok());
  EXPECT_TRUE(static_cast<bool>(hit));
  EXPECT_EQ(*hit, 4096u);
  EXPECT_EQ(hit.outcome, KvStatus::kOk);
  const KvResult<std::uint32_t> miss(KvStatus::kNotFound);
  EXPECT_FALSE(miss);
  EXPECT_EQ(miss.status(), KvStatus::kNotFound);
  const KvResult<bool> failed(KvOutcome::device_error(EROFS));
  EXPECT_EQ(failed.status(), KvStatus::kDeviceError);
  EXPECT_EQ(to_errno(failed.outcome), EROFS);
  EXPECT_TRUE(KvOutcome());
  EXPECT_FALSE(KvOutcome(KvStatus::kRejected));
}

}  // namespace
}  // namespace cxlpool::kvcache
