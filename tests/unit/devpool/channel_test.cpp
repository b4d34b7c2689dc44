// SPDX-License-Identifier: Apache-2.0
// The channel on real memory, with both line access policies: geometry,
// batching, flow control, hostile slots, and a producer and a consumer
// thread (and process) checking every message arrives once, in order, whole.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "channel_records.hpp"
#include "cxlpool/devpool/channel.hpp"
#include "support/pin_thread.hpp"

namespace cxlpool::devpool {
namespace {

using test::AlignedMemory;
using test::make_record;
using test::record_number;

constexpr size_t kTailOffset = 56;

std::byte* slot_line(std::span<std::byte> memory, uint64_t position, uint32_t slots) {
  return memory.data() + (2 + (position & (slots - 1))) * kLineBytes;
}

void write_slot_tail(std::span<std::byte> memory, uint64_t position, uint32_t slots, uint32_t sequence,
                     uint32_t count, uint32_t record_bytes) {
  const uint64_t tail = uint64_t{sequence} | uint64_t{count} << 32 | uint64_t{record_bytes} << 48;
  std::memcpy(slot_line(memory, position, slots) + kTailOffset, &tail, sizeof tail);
}

TEST(ChannelGeometryTest, BytesAndRecordsPerSlot) {
  ChannelGeometry g{.slots = 8, .record_bytes = 16};
  EXPECT_EQ(channel_bytes(g), 10u * 64);
  EXPECT_EQ(g.records_per_slot(), 3u);
  g.record_bytes = 56;
  EXPECT_EQ(g.records_per_slot(), 1u);
  g.record_bytes = 8;
  EXPECT_EQ(g.records_per_slot(), 7u);
}

TEST(ChannelGeometryTest, FormatRejectsBadGeometry) {
  AlignedMemory mem(1 << 16);
  for (uint32_t slots : {0u, 1u, 3u, 6u, kMaxChannelSlots * 2}) {
    auto r = format_channel(mem.span(), ChannelGeometry{.slots = slots});
    ASSERT_FALSE(r) << slots;
    EXPECT_EQ(r.error().code, EINVAL);
  }
  for (uint32_t bytes : {0u, 7u, 57u, 64u}) {
    auto r = format_channel(mem.span(), ChannelGeometry{.slots = 4, .record_bytes = bytes});
    ASSERT_FALSE(r) << bytes;
    EXPECT_EQ(r.error().code, EINVAL);
  }
  auto bad_coherence = format_channel(mem.span(), ChannelGeometry{.slots = 4, .coherence = Coherence{7}});
  ASSERT_FALSE(bad_coherence);
  EXPECT_EQ(bad_coherence.error().code, EINVAL);
  // Too short, and unaligned.
  const ChannelGeometry g{.slots = 64};
  auto short_range = format_channel(mem.span().first(channel_bytes(g) - 64), g);
  ASSERT_FALSE(short_range);
  EXPECT_EQ(short_range.error().code, EINVAL);
  auto unaligned = format_channel(mem.span().subspan(8), g);
  ASSERT_FALSE(unaligned);
  EXPECT_EQ(unaligned.error().code, EINVAL);
}

TEST(ChannelGeometryTest, HeaderRoundTrip) {
  AlignedMemory mem(1 << 16);
  const ChannelGeometry g{.slots = 128, .record_bytes = 24, .coherence = Coherence::kNonCoherent};
  ASSERT_TRUE(format_channel(mem.span(), g));
  auto read = read_channel_header(mem.span());
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->slots, 128u);
  EXPECT_EQ(read->record_bytes, 24u);
  EXPECT_EQ(read->coherence, Coherence::kNonCoherent);
  auto short_range = read_channel_header(mem.span().first(channel_bytes(g) - 1));
  ASSERT_FALSE(short_range);
  EXPECT_EQ(short_range.error().code, EINVAL);
  auto no_header = read_channel_header(mem.span().first(10));
  ASSERT_FALSE(no_header);
  EXPECT_EQ(no_header.error().code, EINVAL);
}

// Each corruption of the header line is EPROTO, at read and at attach.
TEST(ChannelGeometryTest, GarbageHeadersAreEproto) {
  struct Corruption {
    size_t offset;
    std::vector<uint8_t> bytes;
  };
  const std::vector<Corruption> corruptions = {
      {0, {0x00}},                    // magic
      {4, {0x02, 0x00}},              // version
      {6, {0x05}},                    // coherence
      {8, {0x03, 0x00, 0x00, 0x00}},  // slots not a power of two
      {8, {0x01, 0x00, 0x00, 0x00}},  // one slot
      {8, {0x00, 0x00, 0x00, 0x80}},  // too many slots
      {12, {0x00, 0x00, 0x00, 0x00}}, // record size 0
      {12, {0x40, 0x00, 0x00, 0x00}}, // record size 64
      {16, {0x02, 0x00, 0x00, 0x00}}, // records per slot disagrees
  };
  AlignedMemory mem(1 << 16);
  const ChannelGeometry g{.slots = 16, .record_bytes = 16};
  for (const auto& c : corruptions) {
    ASSERT_TRUE(format_channel(mem.span(), g));
    std::memcpy(mem.span().data() + c.offset, c.bytes.data(), c.bytes.size());
    auto read = read_channel_header(mem.span());
    ASSERT_FALSE(read) << "offset " << c.offset;
    EXPECT_EQ(read.error().code, EPROTO) << "offset " << c.offset;
    auto producer = ChannelProducer<CoherentLines>::attach(mem.span());
    ASSERT_FALSE(producer);
    EXPECT_EQ(producer.error().code, EPROTO);
    auto consumer = ChannelConsumer<NonCoherentLines>::attach(mem.span());
    ASSERT_FALSE(consumer);
    EXPECT_EQ(consumer.error().code, EPROTO);
  }
  // Random garbage never attaches and never crashes.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    for (size_t b = 0; b < 64; ++b) mem.span()[b] = static_cast<std::byte>(rng());
    if (i % 2 == 0) std::memcpy(mem.span().data(), &kChannelMagic, 4);
    auto read = read_channel_header(mem.span());
    if (read) {
      EXPECT_LE(channel_bytes(*read), mem.size);
    } else {
      EXPECT_TRUE(read.error().code == EPROTO || read.error().code == EINVAL);
    }
  }
}

template <class Lines>
class ChannelSidesTest : public ::testing::Test {};
using Policies = ::testing::Types<CoherentLines, NonCoherentLines>;
TYPED_TEST_SUITE(ChannelSidesTest, Policies);

template <class Lines>
struct Pair {
  ChannelProducer<Lines> producer;
  ChannelConsumer<Lines> consumer;
};

template <class Lines>
Pair<Lines> attach_pair(std::span<std::byte> memory, const ChannelGeometry& g) {
  auto formatted = format_channel(memory, g);
  EXPECT_TRUE(formatted);
  auto p = ChannelProducer<Lines>::attach(memory);
  auto c = ChannelConsumer<Lines>::attach(memory);
  if (!p || !c) std::abort();
  return {*p, *c};
}

// Pushes message `number`.
template <class Lines>
bool push_number(ChannelProducer<Lines>& producer, uint64_t number) {
  std::vector<std::byte> record(producer.geometry().record_bytes);
  make_record(number, record);
  return producer.push(record.data());
}

// Polls up to `max` records, each of which must be message `next` (which
// advances). Returns how many.
template <class Lines>
uint32_t poll_in_order(ChannelConsumer<Lines>& consumer, uint32_t max, uint64_t& next) {
  const uint32_t bytes = consumer.geometry().record_bytes;
  std::vector<std::byte> out(size_t{bytes} * max);
  auto n = consumer.poll(out.data(), max);
  EXPECT_TRUE(n) << n.error().message;
  if (!n) return 0;
  for (uint32_t i = 0; i < *n; ++i) {
    auto number = record_number(std::span<const std::byte>(out.data() + size_t{bytes} * i, bytes));
    EXPECT_TRUE(number) << "torn record after " << next;
    EXPECT_EQ(number.value_or(~uint64_t{0}), next);
    ++next;
  }
  return *n;
}

// Polls until nothing is left.
template <class Lines>
void drain_in_order(ChannelConsumer<Lines>& consumer, uint64_t& next) {
  while (poll_in_order(consumer, 32, next) != 0) {
  }
}

TYPED_TEST(ChannelSidesTest, SingleThreadInOrder) {
  AlignedMemory mem(1 << 16);
  auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), {.slots = 8, .record_bytes = 16});
  uint64_t sent = 0, received = 0;
  for (int round = 0; round < 500; ++round) {
    for (int i = 0; i < round % 13 && push_number(producer, sent); ++i) ++sent;
    producer.flush();
    poll_in_order(consumer, round % 5 == 0 ? 1 : 32, received);
  }
  drain_in_order(consumer, received);
  EXPECT_EQ(received, sent);
  EXPECT_EQ(consumer.records_consumed(), sent);
  EXPECT_EQ(producer.in_flight(), 0u);
}

// Records wait in the slot being filled until it is full or flushed.
TYPED_TEST(ChannelSidesTest, BatchesRecordsIntoSlots) {
  AlignedMemory mem(1 << 16);
  auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), {.slots = 4, .record_bytes = 16});
  uint64_t received = 0;
  ASSERT_TRUE(push_number(producer, 0));
  ASSERT_TRUE(push_number(producer, 1));
  EXPECT_EQ(producer.staged(), 2u);
  EXPECT_EQ(producer.published(), 0u);
  EXPECT_EQ(poll_in_order(consumer, 8, received), 0u);
  EXPECT_EQ(producer.flush(), 2u);
  EXPECT_EQ(producer.flush(), 0u);
  EXPECT_EQ(producer.published(), 1u);
  // A full slot publishes itself.
  for (uint64_t i = 2; i < 5; ++i) ASSERT_TRUE(push_number(producer, i));
  EXPECT_EQ(producer.published(), 2u);
  EXPECT_EQ(producer.staged(), 0u);
  EXPECT_EQ(poll_in_order(consumer, 8, received), 5u);
  EXPECT_EQ(consumer.consumed(), 2u);
}

TYPED_TEST(ChannelSidesTest, FullRingRefusesUntilConsumed) {
  AlignedMemory mem(1 << 16);
  auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), {.slots = 4, .record_bytes = 16});
  uint64_t sent = 0, received = 0;
  for (; sent < 12; ++sent) ASSERT_TRUE(push_number(producer, sent)) << sent;
  EXPECT_FALSE(push_number(producer, sent));
  EXPECT_FALSE(push_number(producer, sent));
  EXPECT_EQ(producer.staged(), 0u);
  EXPECT_EQ(producer.in_flight(), 4u);
  // Part of a slot frees nothing.
  ASSERT_EQ(poll_in_order(consumer, 2, received), 2u);
  EXPECT_FALSE(push_number(producer, sent));
  // The rest of it does (one slot of four: the consumer line is updated at
  // once for a ring this small).
  ASSERT_EQ(poll_in_order(consumer, 1, received), 1u);
  EXPECT_TRUE(push_number(producer, sent++));
  EXPECT_EQ(producer.in_flight(), 3u);
  producer.flush();
  drain_in_order(consumer, received);
  EXPECT_EQ(received, sent);
  EXPECT_EQ(producer.in_flight(), 0u);
}

TYPED_TEST(ChannelSidesTest, PerRecordReloadDeliversTheSame) {
  AlignedMemory mem(1 << 16);
  auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), {.slots = 16, .record_bytes = 8});
  consumer.set_per_record_reload(true);
  uint64_t sent = 0, received = 0;
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 9 && push_number(producer, sent); ++i) ++sent;
    producer.flush();
    poll_in_order(consumer, 10, received);
  }
  drain_in_order(consumer, received);
  EXPECT_EQ(received, sent);
}

// One producer and one consumer thread: no loss, no duplicate, order kept,
// no torn record; a slow side and a small ring exercise flow control.
TYPED_TEST(ChannelSidesTest, TwoThreadStress) {
  for (uint32_t record_bytes : {16u, 56u, 8u}) {
    AlignedMemory mem(1 << 16);
    const ChannelGeometry g{.slots = 16, .record_bytes = record_bytes};
    auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), g);
    constexpr uint64_t kMessages = 200'000;
    std::thread producer_thread([&, &producer = producer] {
      cxlpool::test::pin_thread_to_cpu(0);
      std::mt19937 rng(1);
      std::vector<std::byte> rec(record_bytes);
      for (uint64_t i = 0; i < kMessages; ++i) {
        make_record(i, rec);
        while (!producer.push(rec.data())) {
          producer.flush();
          std::this_thread::yield();
        }
        if (rng() % 7 == 0) producer.flush();
      }
      producer.flush();
    });
    cxlpool::test::pin_thread_to_cpu(1);
    std::mt19937 rng(2);
    std::vector<std::byte> out(size_t{record_bytes} * 64);
    uint64_t received = 0;
    uint64_t idle = 0;
    while (received < kMessages) {
      auto n = consumer.poll(out.data(), 1 + rng() % 64);
      ASSERT_TRUE(n) << n.error().message;
      if (*n == 0) {
        ASSERT_LT(++idle, 2'000'000'000u) << "stalled at " << received;
        std::this_thread::yield();
        continue;
      }
      for (uint32_t i = 0; i < *n; ++i) {
        auto number = record_number(std::span<const std::byte>(out.data() + size_t{record_bytes} * i, record_bytes));
        ASSERT_TRUE(number) << "torn record after " << received;
        ASSERT_EQ(*number, received) << record_bytes << "-byte records";
        ++received;
      }
    }
    producer_thread.join();
    auto extra = consumer.poll(out.data(), 64);
    ASSERT_TRUE(extra);
    EXPECT_EQ(*extra, 0u);
  }
}

// The two sides in two processes over a MAP_SHARED memfd, as the engines
// run them: the child produces, the parent consumes and checks.
TYPED_TEST(ChannelSidesTest, AcrossProcesses) {
  const ChannelGeometry g{.slots = 64, .record_bytes = 16};
  const int fd = ::memfd_create("devpool-channel-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(channel_bytes(g))), 0);
  void* addr = ::mmap(nullptr, channel_bytes(g), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(addr, MAP_FAILED);
  ::close(fd);
  std::span<std::byte> memory(static_cast<std::byte*>(addr), channel_bytes(g));
  ASSERT_TRUE(format_channel(memory, g));
  constexpr uint64_t kMessages = 100'000;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto producer = ChannelProducer<TypeParam>::attach(memory);
    if (!producer) ::_exit(2);
    for (uint64_t i = 0; i < kMessages; ++i) {
      while (!push_number(*producer, i)) sched_yield();
    }
    producer->flush();
    ::_exit(0);
  }
  auto consumer = ChannelConsumer<TypeParam>::attach(memory);
  ASSERT_TRUE(consumer);
  uint64_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (received < kMessages && std::chrono::steady_clock::now() < deadline) {
    if (poll_in_order(*consumer, 64, received) == 0) sched_yield();
    if (::testing::Test::HasFailure()) break;
  }
  int status = 0;
  if (received < kMessages) ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_EQ(received, kMessages);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ::munmap(addr, channel_bytes(g));
}

// What a hostile or corrupt producer can write into a slot.
TYPED_TEST(ChannelSidesTest, MalformedSlotsAreEproto) {
  const ChannelGeometry g{.slots = 8, .record_bytes = 16};
  struct Bad {
    uint32_t count, record_bytes;
  };
  for (Bad bad : {Bad{4, 16}, Bad{0, 16}, Bad{0xffff, 16}, Bad{1, 8}, Bad{1, 0xffff}, Bad{1, 0}}) {
    AlignedMemory mem(1 << 16);
    auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), g);
    std::byte rec[16];
    make_record(0, rec);
    producer.push(rec);
    producer.flush();
    write_slot_tail(mem.span(), 0, g.slots, 1, bad.count, bad.record_bytes);
    std::byte out[16 * 8];
    auto n = consumer.poll(out, 8);
    ASSERT_FALSE(n) << bad.count << " " << bad.record_bytes;
    EXPECT_EQ(n.error().code, EPROTO);
    EXPECT_TRUE(consumer.broken());
    auto again = consumer.poll(out, 8);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code, EPROTO);
  }
}

// Garbage whose sequence is not the expected one is simply not ready; the
// consumer reads nothing outside the channel and hands out nothing.
TYPED_TEST(ChannelSidesTest, GarbageSlotsAreNotReady) {
  const ChannelGeometry g{.slots = 8, .record_bytes = 16};
  AlignedMemory mem(1 << 16);
  auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), g);
  std::mt19937_64 rng(3);
  for (size_t b = 2 * 64; b < channel_bytes(g); ++b) mem.span()[b] = static_cast<std::byte>(rng());
  for (uint32_t s = 0; s < g.slots; ++s) write_slot_tail(mem.span(), s, g.slots, s + 2, 3, 16);
  std::byte out[16 * 8];
  auto n = consumer.poll(out, 8);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0u);
}

// A consumer line that goes backwards or past what was published is
// ignored: the producer neither overwrites unconsumed slots nor believes the
// ring is emptier than it is.
TYPED_TEST(ChannelSidesTest, HostileConsumerLineIsIgnored) {
  const ChannelGeometry g{.slots = 4, .record_bytes = 56};
  AlignedMemory mem(1 << 16);
  auto [producer, consumer] = attach_pair<TypeParam>(mem.span(), g);
  std::byte rec[56];
  for (int i = 0; i < 4; ++i) {
    make_record(i, rec);
    ASSERT_TRUE(producer.push(rec));
  }
  for (uint64_t value : {uint64_t{1000}, ~uint64_t{0}, uint64_t{5}}) {
    std::memcpy(mem.span().data() + 64 + kTailOffset, &value, sizeof value);
    EXPECT_FALSE(producer.push(rec)) << value;
    EXPECT_EQ(producer.in_flight(), 4u);
  }
  const uint64_t two = 2;
  std::memcpy(mem.span().data() + 64 + kTailOffset, &two, sizeof two);
  EXPECT_EQ(producer.in_flight(), 2u);
  const uint64_t one = 1;  // backwards
  std::memcpy(mem.span().data() + 64 + kTailOffset, &one, sizeof one);
  EXPECT_EQ(producer.in_flight(), 2u);
}

TEST(ChannelAttachTest, RejectsShortAndUnalignedRanges) {
  AlignedMemory mem(1 << 16);
  const ChannelGeometry g{.slots = 64};
  ASSERT_TRUE(format_channel(mem.span(), g));
  auto short_range = ChannelConsumer<CoherentLines>::attach(mem.span().first(channel_bytes(g) - 64));
  ASSERT_FALSE(short_range);
  EXPECT_EQ(short_range.error().code, EINVAL);
  auto tiny = ChannelProducer<CoherentLines>::attach(mem.span().first(32));
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code, EINVAL);
  auto unaligned = ChannelProducer<CoherentLines>::attach(mem.span().subspan(16));
  ASSERT_FALSE(unaligned);
  EXPECT_EQ(unaligned.error().code, EINVAL);
}

TEST(LineAccessTest, CoherenceNames) {
  EXPECT_STREQ(coherence_name(Coherence::kCoherent), "coherent");
  EXPECT_STREQ(coherence_name(Coherence::kNonCoherent), "non-coherent");
  EXPECT_STREQ(coherence_name(Coherence{9}), "unknown");
}

}  // namespace
}  // namespace cxlpool::devpool
