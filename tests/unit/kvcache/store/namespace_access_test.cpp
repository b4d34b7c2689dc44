// SPDX-License-Identifier: Apache-2.0
// Namespace modes and the per-connection rights table.
#include "cxlpool/kvcache/namespace_access.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "cxlpool/proto/kv_ring.hpp"

namespace cxlpool::kvcache {
namespace {

constexpr std::uint8_t kRw = kKvRightRead | kKvRightWrite;

KvAccessor user(std::uint32_t uid, std::uint32_t gid, std::span<const std::uint32_t> groups = {}) {
  KvAccessor a;
  a.uid = uid;
  a.gid = gid;
  a.groups = groups;
  return a;
}

TEST(KvNamespaceMode, ZeroMeansPrivateToTheOwner) {
  auto m = normalize_kv_mode(0);
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, 0600u);
  EXPECT_EQ(*normalize_kv_mode(0644), 0644u);
  EXPECT_EQ(*normalize_kv_mode(0400), 0400u);
}

TEST(KvNamespaceMode, ExecuteAndSpecialBitsAreRefused) {
  for (std::uint32_t bad : {0700u, 0644u | 01u, 04600u, 01000u, 0100000u}) {
    auto m = normalize_kv_mode(bad);
    ASSERT_FALSE(m) << std::oct << bad;
    EXPECT_EQ(m.error().code, EINVAL);
    EXPECT_NE(m.error().message.find("read and write"), std::string::npos);
  }
}

TEST(KvNamespaceRights, PrivateNamespaceIsTheOwnersOnly) {
  const KvNamespaceOwner owner{1000, 100, 0600};
  EXPECT_EQ(kv_rights(owner, user(1000, 100)), kRw);
  EXPECT_EQ(kv_rights(owner, user(1001, 100)), 0);  // same group: nothing
  EXPECT_EQ(kv_rights(owner, user(65534, 65534)), 0);
}

TEST(KvNamespaceRights, GroupBitsApplyToPrimaryAndSupplementaryMembers) {
  const KvNamespaceOwner owner{1000, 100, 0640};
  EXPECT_EQ(kv_rights(owner, user(1001, 100)), kKvRightRead);
  const std::vector<std::uint32_t> groups{5, 100};
  EXPECT_EQ(kv_rights(owner, user(1002, 7, groups)), kKvRightRead);
  EXPECT_EQ(kv_rights(owner, user(1003, 7)), 0);
}

TEST(KvNamespaceRights, OthersGetTheLowBits) {
  const KvNamespaceOwner owner{0, 0, 0644};
  EXPECT_EQ(kv_rights(owner, user(65534, 65534)), kKvRightRead);
  const KvNamespaceOwner shared{0, 0, 0666};
  EXPECT_EQ(kv_rights(shared, user(65534, 65534)), kRw);
  const KvNamespaceOwner write_only{0, 0, 0622};
  EXPECT_EQ(kv_rights(write_only, user(65534, 65534)), kKvRightWrite);
}

TEST(KvNamespaceRights, OwnerBitsWinOverGroupBits) {
  // As for files: the owner of a 0460 namespace may read, not write, although
  // its group may write.
  const KvNamespaceOwner owner{1000, 100, 0460};
  EXPECT_EQ(kv_rights(owner, user(1000, 100)), kKvRightRead);
  EXPECT_EQ(kv_rights(owner, user(1001, 100)), kRw);
}

TEST(KvNamespaceRights, AdminsHoldEveryRight) {
  KvAccessor admin = user(0, 0);
  admin.admin = true;
  EXPECT_EQ(kv_rights(KvNamespaceOwner{1000, 100, 0600}, admin), kRw);
  EXPECT_EQ(kv_rights(KvNamespaceOwner{1000, 100, 0}, admin), kRw);
  // Root that the daemon does not count as an admin is an ordinary uid.
  EXPECT_EQ(kv_rights(KvNamespaceOwner{1000, 100, 0600}, user(0, 0)), 0);
}

TEST(KvNamespaceRights, EachOpNeedsItsRight) {
  using proto::KvOp;
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kLookup)), kKvRightRead);
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kGet)), kKvRightRead);
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kPrefetch)), kKvRightRead);
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kPutBegin)), kKvRightWrite);
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kPutCommit)), kKvRightWrite);
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kDelete)), kKvRightWrite);
  EXPECT_EQ(kv_rights_needed(static_cast<std::uint8_t>(KvOp::kRelease)), 0);
  EXPECT_EQ(kv_rights_needed(0), kRw);
  EXPECT_EQ(kv_rights_needed(200), kRw);
}

TEST(KvRightsTable, UnopenedNamespacesHaveNoRights) {
  KvRightsTable t;
  EXPECT_EQ(t.rights(0), 0);
  EXPECT_EQ(t.rights(1), 0);
  EXPECT_EQ(t.rights(UINT64_MAX), 0);
  EXPECT_EQ(t.check(1, kKvRightRead), KvStatus::kDenied);
  EXPECT_EQ(t.check(1, 0), KvStatus::kOk);  // release needs nothing
}

TEST(KvRightsTable, GrantsAddUpPerNamespaceAndRevokeClears) {
  KvRightsTable t;
  t.grant(3, kKvRightRead);
  EXPECT_EQ(t.check(3, kKvRightRead), KvStatus::kOk);
  EXPECT_EQ(t.check(3, kKvRightWrite), KvStatus::kDenied);
  EXPECT_EQ(t.check(2, kKvRightRead), KvStatus::kDenied);
  EXPECT_EQ(t.check(4, kKvRightRead), KvStatus::kDenied);
  t.grant(3, kKvRightWrite);
  EXPECT_EQ(t.check(3, kRw), KvStatus::kOk);
  t.grant(1, kKvRightWrite);
  EXPECT_EQ(t.rights(1), kKvRightWrite);
  EXPECT_EQ(t.rights(3), kRw);
  t.revoke(3);
  EXPECT_EQ(t.rights(3), 0);
  EXPECT_EQ(t.rights(1), kKvRightWrite);
  t.revoke(1000);  // never granted: no-op
}

TEST(KvRightsTable, RightsNamesForMessages) {
  EXPECT_EQ(kv_rights_name(kKvRightRead), "read");
  EXPECT_EQ(kv_rights_name(kKvRightWrite), "write");
  EXPECT_EQ(kv_rights_name(kRw), "read and write");
  EXPECT_EQ(kv_rights_name(0), "no access");
}

}  // namespace
}  // namespace cxlpool::kvcache
