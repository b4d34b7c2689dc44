// SPDX-License-Identifier: Apache-2.0
// The channel over the non-coherent cache model: random schedules of
// producer and consumer steps mixed with the caches' own evictions and
// prefetches must deliver exactly the sequence sent; and the same schedules
// with the protocol broken on purpose (no write-back, no invalidate) must be
// caught by the checker, which shows the checker can see what it is for.
#include <gtest/gtest.h>

#include <random>

#include "model_world.hpp"

namespace cxlpool::devpool::test {
namespace {

struct Outcome {
  bool delivered = false;
  std::string violation;
};

// One random schedule: steps drawn with weights until everything was sent,
// then a while longer, then the two sides alone (drain). Every few steps the
// schedule also checks, on a copy, that the two sides alone could finish
// from there: progress must never wait on a lucky eviction.
Outcome run_schedule(uint64_t seed, Mutation producer_mutation, Mutation consumer_mutation) {
  std::mt19937_64 rng(seed);
  const uint32_t slots = 2u << (rng() % 3);
  const uint32_t record_sizes[] = {8, 16, 24, 28, 56};
  const uint32_t record_bytes = record_sizes[rng() % 5];
  const uint64_t messages = 20 + rng() % 150;
  ModelWorld world({.slots = slots, .record_bytes = record_bytes, .coherence = Coherence::kNonCoherent}, messages,
                   producer_mutation, consumer_mutation);
  const unsigned event_weight = 1 + rng() % 8;  // how busy the caches are
  const uint64_t probe_every = 5 + rng() % 20;
  uint64_t tail_steps = 50;
  Outcome out;
  for (uint64_t step = 1; world.violation().empty() && (world.can_push() || tail_steps-- > 0); ++step) {
    if (step % probe_every == 0) {
      const auto here = world.snapshot();
      const bool finished = world.drain();
      out.violation = world.violation();
      world.restore(here);
      if (!finished) return out;
    }
    const unsigned pick = rng() % (8 + event_weight);
    if (pick < 3) {
      if (world.can_push()) world.push();
    } else if (pick < 4) {
      world.flush();
    } else if (pick < 8) {
      world.poll(1 + rng() % (world.geometry().records_per_slot() * 2));
    } else {
      world.cache_event(rng() % 2 ? Side::kProducer : Side::kConsumer, 1 + rng() % (world.line_count() - 1));
    }
  }
  if (world.violation().empty()) out.delivered = world.drain();
  out.violation = world.violation();
  return out;
}

TEST(ChannelModelTest, RandomSchedulesDeliverExactlyTheSequence) {
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    const Outcome o = run_schedule(seed, Mutation::kNone, Mutation::kNone);
    ASSERT_TRUE(o.delivered) << "seed " << seed << ": " << o.violation;
  }
}

TEST(ChannelModelTest, PerRecordReloadOverTheModel) {
  ModelWorld world({.slots = 4, .record_bytes = 16, .coherence = Coherence::kNonCoherent}, 100);
  std::mt19937_64 rng(11);
  while (world.can_push() && world.violation().empty()) {
    world.push();
    if (rng() % 3 == 0) world.cache_event(Side::kConsumer, 2 + rng() % 4);
    if (rng() % 2 == 0) world.poll(2);
  }
  EXPECT_TRUE(world.drain()) << world.violation();
}

// How many of `seeds` schedules the checker flags with the protocol broken.
int schedules_caught(Mutation producer_mutation, Mutation consumer_mutation, int seeds) {
  int caught = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    const Outcome o = run_schedule(seed, producer_mutation, consumer_mutation);
    if (!o.delivered) {
      EXPECT_FALSE(o.violation.empty());
      ++caught;
    }
  }
  std::printf("caught in %d of %d schedules\n", caught, seeds);
  return caught;
}

// Without the producer's write-back a published slot reaches memory only
// when the producer's cache happens to evict it.
TEST(ChannelModelTest, DroppedWriteBackIsDetected) {
  EXPECT_EQ(schedules_caught(Mutation::kDropWriteBack, Mutation::kNone, 500), 500);
}

// Without the consumer's invalidates it keeps reading its cached copy of a
// slot from an earlier lap.
TEST(ChannelModelTest, DroppedInvalidateIsDetected) {
  EXPECT_EQ(schedules_caught(Mutation::kNone, Mutation::kDropInvalidate, 500), 500);
}

// The producer's flow control reads the consumer line: without its
// invalidate it trusts a stale count and stalls once the ring fills (some
// schedules never fill it while the probe looks).
TEST(ChannelModelTest, DroppedProducerInvalidateIsDetected) {
  EXPECT_GT(schedules_caught(Mutation::kDropInvalidate, Mutation::kNone, 500), 450);
}

TEST(CacheModelTest, ServesStaleCopiesUntilInvalidated) {
  AlignedMemory memory(4096);
  CacheModel a(memory.span().data(), 256), b(memory.span().data(), 256);
  std::byte line[64], out[64];
  std::memset(line, 1, 64);
  b.load(memory.span().data() + 64, out);  // b caches the zero line
  a.store(memory.span().data() + 64, line);
  EXPECT_TRUE(a.dirty(1));
  EXPECT_EQ(memory.span()[64], std::byte{0});
  a.write_back(memory.span().data() + 64);
  EXPECT_FALSE(a.dirty(1));
  EXPECT_EQ(memory.span()[64], std::byte{1});
  b.load(memory.span().data() + 64, out);
  EXPECT_EQ(out[0], std::byte{0});  // stale
  b.invalidate(memory.span().data() + 64);
  b.load(memory.span().data() + 64, out);
  EXPECT_EQ(out[0], std::byte{1});
  // Invalidating a dirty line writes it back first; eviction too.
  std::memset(line, 2, 64);
  a.store(memory.span().data() + 128, line);
  a.invalidate(memory.span().data() + 128);
  EXPECT_EQ(memory.span()[128], std::byte{2});
  std::memset(line, 3, 64);
  a.store(memory.span().data() + 192, line);
  a.evict(3);
  EXPECT_FALSE(a.cached(3));
  EXPECT_EQ(memory.span()[192], std::byte{3});
}

}  // namespace
}  // namespace cxlpool::devpool::test
