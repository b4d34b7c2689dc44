// SPDX-License-Identifier: Apache-2.0
// Exhaustive interleavings of a small non-coherent channel: every order of
// producer steps (push, flush), consumer steps (poll one record, poll past a
// slot) and the two caches' own evictions and prefetches of every line,
// explored breadth-first over the distinct states they reach. In every
// reachable state no record seen so far was lost, duplicated, stale or torn,
// and the two sides alone (no more cache events) deliver everything: no
// schedule of evictions and prefetches can wedge the channel. The same
// search with the protocol broken on purpose must find a bad state.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <chrono>
#include <deque>
#include <unordered_set>

#include "model_world.hpp"

namespace cxlpool::devpool::test {
namespace {

struct Hash128 {
  size_t operator()(const XXH128_hash_t& h) const { return h.low64; }
};
struct Equal128 {
  bool operator()(const XXH128_hash_t& a, const XXH128_hash_t& b) const { return XXH128_isEqual(a, b) != 0; }
};

struct Exploration {
  uint64_t states = 0;
  uint64_t transitions = 0;
  uint64_t finished_states = 0;  // everything delivered
  std::string violation;         // the first bad state found, if any
};

// Applies step `action` to the world; false when it is not enabled here.
bool apply(ModelWorld& world, size_t action) {
  const uint32_t per_slot = world.geometry().records_per_slot();
  switch (action) {
    case 0:
      if (!world.can_push()) return false;
      world.push();
      return true;
    case 1:
      if (!world.can_flush()) return false;
      world.flush();
      return true;
    case 2:
      world.poll(1);
      return true;
    case 3:
      world.poll(per_slot + 1);
      return true;
    default: {
      // Cache events on every line but the header (read once, at attach).
      const size_t event = action - 4;
      const size_t lines = world.line_count() - 1;
      if (event >= 2 * lines) return false;
      world.cache_event(event < lines ? Side::kProducer : Side::kConsumer, 1 + event % lines);
      return true;
    }
  }
}

Exploration explore(const ChannelGeometry& g, uint64_t messages, Mutation producer_mutation,
                    Mutation consumer_mutation) {
  ModelWorld world(g, messages, producer_mutation, consumer_mutation);
  const size_t actions = 4 + 2 * (world.line_count() - 1);
  std::unordered_set<XXH128_hash_t, Hash128, Equal128> visited;
  std::deque<ModelWorld::Snapshot> frontier;
  auto key_of = [&world] {
    const std::string key = world.state_key();
    return XXH3_128bits(key.data(), key.size());
  };
  visited.insert(key_of());
  frontier.push_back(world.snapshot());
  Exploration result;
  while (!frontier.empty()) {
    const ModelWorld::Snapshot state = std::move(frontier.front());
    frontier.pop_front();
    ++result.states;
    world.restore(state);
    if (world.done()) ++result.finished_states;
    if (!world.drain()) {
      result.violation = "no progress from a reachable state: " + world.violation();
      return result;
    }
    for (size_t action = 0; action < actions; ++action) {
      world.restore(state);
      if (!apply(world, action)) continue;
      ++result.transitions;
      if (!world.violation().empty()) {
        result.violation = world.violation();
        return result;
      }
      if (visited.insert(key_of()).second) frontier.push_back(world.snapshot());
    }
  }
  return result;
}

struct Case {
  uint32_t slots;
  uint32_t record_bytes;  // 56: one record per slot, 28: two, 16: three
  uint64_t messages;
};

class ChannelExploreTest : public ::testing::TestWithParam<Case> {};

TEST_P(ChannelExploreTest, EveryInterleavingDeliversInOrder) {
  const Case c = GetParam();
  const ChannelGeometry g{.slots = c.slots, .record_bytes = c.record_bytes, .coherence = Coherence::kNonCoherent};
  const auto start = std::chrono::steady_clock::now();
  const Exploration e = explore(g, c.messages, Mutation::kNone, Mutation::kNone);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%u slots x %u records, %lu messages: %lu states, %lu transitions, %lu finished, %.2f s\n",
              g.slots, g.records_per_slot(), static_cast<unsigned long>(c.messages), static_cast<unsigned long>(e.states),
              static_cast<unsigned long>(e.transitions), static_cast<unsigned long>(e.finished_states), seconds);
  EXPECT_TRUE(e.violation.empty()) << e.violation;
  EXPECT_GT(e.finished_states, 0u);
}

// The search over the protocol with one step removed must reach a bad state.
void expect_found(const Case& c, Mutation producer_mutation, Mutation consumer_mutation) {
  const ChannelGeometry g{.slots = c.slots, .record_bytes = c.record_bytes, .coherence = Coherence::kNonCoherent};
  const Exploration e = explore(g, c.messages, producer_mutation, consumer_mutation);
  EXPECT_FALSE(e.violation.empty());
  std::printf("found: %s\n", e.violation.c_str());
}

TEST_P(ChannelExploreTest, DroppedWriteBackIsFound) {
  expect_found(GetParam(), Mutation::kDropWriteBack, Mutation::kNone);
}

TEST_P(ChannelExploreTest, DroppedConsumerInvalidateIsFound) {
  expect_found(GetParam(), Mutation::kNone, Mutation::kDropInvalidate);
}

TEST_P(ChannelExploreTest, DroppedProducerInvalidateIsFound) {
  expect_found(GetParam(), Mutation::kDropInvalidate, Mutation::kNone);
}

INSTANTIATE_TEST_SUITE_P(Small, ChannelExploreTest,
                         ::testing::Values(Case{2, 56, 3}, Case{2, 56, 5}, Case{2, 28, 3}, Case{2, 28, 5},
                                           Case{2, 16, 7}, Case{4, 56, 5}),
                         [](const auto& info) {
                           return std::to_string(info.param.slots) + "Slots" +
                                  std::to_string(56 / info.param.record_bytes) + "PerSlot" +
                                  std::to_string(info.param.messages) + "Messages";
                         });

}  // namespace
}  // namespace cxlpool::devpool::test
