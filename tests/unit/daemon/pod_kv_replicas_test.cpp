// SPDX-License-Identifier: Apache-2.0
// Replicas of the KV store across a pod: which members hold the copies of
// a put (rendezvous hashing: never this host nor a member without an
// address, the same ranking whatever order the table lists, spread over
// the members, and a member joining or leaving moves only the copies it
// ranks first for), and the bounded queues on both sides (a full queue
// refuses and counts, never blocks).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "pod/pod_kv_replicas.hpp"

namespace cxlpool::daemon {
namespace {

PodMember member(std::string host, std::string address) {
  PodMember m;
  m.host = std::move(host);
  m.address = std::move(address);
  return m;
}

std::vector<PodMember> pod_of(size_t n) {
  std::vector<PodMember> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(member("node-" + std::to_string(i), "10.0.0." + std::to_string(i + 1) + ":7100"));
  }
  return out;
}

proto::KvKey key_of(uint64_t i) { return {i * 0x9E3779B97F4A7C15ULL + 1, i ^ 0x5555}; }

std::vector<std::string> hosts(const std::vector<PodMember>& members) {
  std::vector<std::string> out;
  for (const auto& m : members) out.push_back(m.host);
  return out;
}

TEST(PodKvReplicaTargets, NeverSelfNorAMemberWithoutAddress) {
  auto pod = pod_of(4);
  pod.push_back(member("no-address", ""));
  for (uint64_t i = 0; i < 200; ++i) {
    const auto ranked = hosts(replica_candidates(key_of(i), "node-2", pod));
    EXPECT_EQ(ranked.size(), 3u);
    EXPECT_EQ(std::count(ranked.begin(), ranked.end(), "node-2"), 0);
    EXPECT_EQ(std::count(ranked.begin(), ranked.end(), "no-address"), 0);
  }
  EXPECT_TRUE(replica_candidates(key_of(1), "node-0", pod_of(1)).empty());
  EXPECT_TRUE(replica_candidates(key_of(1), "node-0", {}).empty());
}

TEST(PodKvReplicaTargets, RankingIsDeterministicAndIndependentOfListOrder) {
  const auto pod = pod_of(6);
  auto reversed = pod;
  std::reverse(reversed.begin(), reversed.end());
  auto doubled = pod;  // a host listed twice ranks once
  doubled.push_back(pod[3]);
  for (uint64_t i = 0; i < 100; ++i) {
    const auto ranked = hosts(replica_candidates(key_of(i), "self", pod));
    EXPECT_EQ(ranked, hosts(replica_candidates(key_of(i), "self", reversed)));
    EXPECT_EQ(ranked, hosts(replica_candidates(key_of(i), "self", doubled)));
    for (size_t r = 1; r < ranked.size(); ++r) {
      EXPECT_GE(replica_weight(key_of(i), ranked[r - 1]), replica_weight(key_of(i), ranked[r]));
    }
  }
  // Fixed across builds and hosts: the weight is a function of its inputs only.
  EXPECT_EQ(replica_weight({1, 2}, "node-a"), replica_weight({1, 2}, "node-a"));
  EXPECT_NE(replica_weight({1, 2}, "node-a"), replica_weight({1, 2}, "node-b"));
  EXPECT_NE(replica_weight({1, 2}, "node-a"), replica_weight({1, 3}, "node-a"));
}

TEST(PodKvReplicaTargets, SpreadsFirstChoicesOverMembers) {
  const auto pod = pod_of(4);
  std::map<std::string, size_t> first;
  constexpr size_t kKeys = 4000;
  for (uint64_t i = 0; i < kKeys; ++i) ++first[replica_candidates(key_of(i), "self", pod).front().host];
  ASSERT_EQ(first.size(), 4u);
  for (const auto& [host, n] : first) {
    // A quarter each, give or take: far from all on one member.
    EXPECT_GT(n, kKeys / 8) << host;
    EXPECT_LT(n, kKeys * 3 / 8) << host;
  }
}

TEST(PodKvReplicaTargets, MembershipChangesMoveOnlyTheirOwnCopies) {
  const auto pod = pod_of(5);
  auto without = pod;
  without.erase(without.begin() + 2);  // node-2 leaves
  auto with = pod;
  with.push_back(member("node-new", "10.0.0.99:7100"));
  size_t moved_to_new = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    const auto before = hosts(replica_candidates(key_of(i), "self", pod));
    // Leaving: the order of the others stays; only node-2's place is gone.
    auto expected = before;
    std::erase(expected, "node-2");
    EXPECT_EQ(hosts(replica_candidates(key_of(i), "self", without)), expected);
    // Joining: the others keep their order; the new member slots in.
    auto after = hosts(replica_candidates(key_of(i), "self", with));
    if (after.front() != before.front()) {
      EXPECT_EQ(after.front(), "node-new");
      ++moved_to_new;
    }
    std::erase(after, "node-new");
    EXPECT_EQ(after, before);
  }
  EXPECT_GT(moved_to_new, 0u);
  EXPECT_LT(moved_to_new, 1000u / 3);  // about one in six
}

TEST(PodKvReplicas, OneCopyMeansNoReplication) {
  bool asked = false;
  PodKvReplicas replicas(1, "node-0", [&] {
    asked = true;
    return pod_of(3);
  }, [] {});
  EXPECT_FALSE(replicas.enabled());
  const proto::KvKey keys[] = {key_of(1), key_of(2)};
  replicas.replicate({1, 2}, keys);
  replicas.stop();
  EXPECT_FALSE(asked);
  const auto c = replicas.counters();
  EXPECT_EQ(c.sent + c.dropped + c.errors + c.chunks, 0u);
}

TEST(PodKvReplicas, TooFewMembersDropsTheCopies) {
  // This host alone: replica_num = 3 wants two copies of each chunk.
  PodKvReplicas replicas(3, "node-0", [] { return pod_of(1); }, [] {});
  ASSERT_TRUE(replicas.enabled());
  const proto::KvKey keys[] = {key_of(1), key_of(2), key_of(3)};
  replicas.replicate({1, 2}, keys);
  // The sender thread gets to it soon; the bound only stops a hung test.
  for (int i = 0; i < 5000 && replicas.counters().dropped < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(replicas.counters().dropped, 6u);
  EXPECT_EQ(replicas.counters().sent, 0u);
}

TEST(PodKvReplicas, PeersRequestsQueueBoundedForTheEventLoop) {
  int wakes = 0;
  PodKvReplicas replicas(1, "node-0", [] { return pod_of(2); }, [&] { ++wakes; });
  KvReplicateRequest r;
  r.from = "node-1";
  r.keys.assign(kMaxPinKeys, key_of(7));
  size_t taken = 0, refused = 0;
  for (int i = 0; i < 100; ++i) {
    const uint32_t n = replicas.accept(r);
    EXPECT_TRUE(n == 0 || n == kMaxPinKeys);
    (n != 0 ? taken : refused) += 1;
  }
  EXPECT_GT(taken, 0u);
  EXPECT_GT(refused, 0u);  // the queue is bounded
  EXPECT_EQ(wakes, static_cast<int>(taken));
  EXPECT_EQ(replicas.counters().dropped, refused * kMaxPinKeys);
  // Without a store the event loop drops them; then the queue has room again.
  replicas.on_event(nullptr);
  EXPECT_EQ(replicas.counters().dropped, 100 * kMaxPinKeys);
  EXPECT_EQ(replicas.accept(r), kMaxPinKeys);
  replicas.copied(3, 4);
  EXPECT_EQ(replicas.counters().chunks, 3u);
  EXPECT_EQ(replicas.counters().errors, 1u);
  replicas.stop();
  EXPECT_EQ(replicas.accept(r), 0u);  // stopping: refused
}

}  // namespace
}  // namespace cxlpool::daemon
