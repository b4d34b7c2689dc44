// SPDX-License-Identifier: Apache-2.0
// A channel over the non-coherent cache model with a checker: one producer
// and one consumer, each with its own cache of the same memory, driven one
// step at a time (a push, a flush, a poll, or a cache's own eviction or
// prefetch of a line). Every record the consumer returns is checked against
// the sequence sent: a record that is not exactly the next message is a
// violation (lost, duplicated, stale or torn), and so is a producer that has
// sent everything while the consumer, with no help from spontaneous cache
// events, cannot receive it (a stall).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "channel_records.hpp"
#include "cxlpool/devpool/testing/cache_model.hpp"

namespace cxlpool::devpool::test {

using devpool::testing::CacheModel;
using devpool::testing::ModelLines;
using devpool::testing::Mutation;

enum class Side : uint8_t { kProducer, kConsumer };

class ModelWorld {
 public:
  ModelWorld(const ChannelGeometry& g, uint64_t messages, Mutation producer_mutation = Mutation::kNone,
             Mutation consumer_mutation = Mutation::kNone)
      : geometry_(g),
        messages_(messages),
        memory_(channel_bytes(g)),
        producer_cache_(memory_.span().data(), channel_bytes(g)),
        consumer_cache_(memory_.span().data(), channel_bytes(g)),
        producer_(attach_producer(ModelLines{&producer_cache_, producer_mutation})),
        consumer_(attach_consumer(ModelLines{&consumer_cache_, consumer_mutation})) {}

  ModelWorld(const ModelWorld&) = delete;
  ModelWorld& operator=(const ModelWorld&) = delete;

  // A copy of everything that changes, to come back to (the explorer).
  struct Snapshot {
    std::vector<std::byte> memory;
    CacheModel producer_cache;
    CacheModel consumer_cache;
    ChannelProducer<ModelLines> producer;
    ChannelConsumer<ModelLines> consumer;
    uint64_t sent, received;
    std::string violation;
  };
  Snapshot snapshot() const {
    const auto bytes = memory_.span().first(channel_bytes(geometry_));
    return {{bytes.begin(), bytes.end()}, producer_cache_, consumer_cache_, producer_, consumer_, sent_, received_,
            violation_};
  }
  void restore(const Snapshot& s) {
    std::memcpy(memory_.span().data(), s.memory.data(), s.memory.size());
    producer_cache_ = s.producer_cache;
    consumer_cache_ = s.consumer_cache;
    producer_ = s.producer;
    consumer_ = s.consumer;
    sent_ = s.sent;
    received_ = s.received;
    violation_ = s.violation;
  }
  // Everything a step depends on, as bytes (for a set of visited states).
  std::string state_key() const {
    std::string key(reinterpret_cast<const char*>(memory_.span().data()), channel_bytes(geometry_));
    producer_cache_.append_state(key);
    consumer_cache_.append_state(key);
    key.append(reinterpret_cast<const char*>(&producer_), sizeof producer_);
    key.append(reinterpret_cast<const char*>(&consumer_), sizeof consumer_);
    key.append(reinterpret_cast<const char*>(&sent_), sizeof sent_);
    key.append(reinterpret_cast<const char*>(&received_), sizeof received_);
    return key;
  }

  bool can_push() const { return sent_ < messages_; }
  bool can_flush() const { return producer_.staged() != 0; }

  // The producer offers the next message; false when the ring was full.
  bool push() {
    std::vector<std::byte> record(geometry_.record_bytes);
    make_record(sent_, record);
    if (!producer_.push(record.data())) return false;
    ++sent_;
    return true;
  }
  void flush() { producer_.flush(); }

  // The consumer takes up to `max` records and checks each. Returns how many.
  uint32_t poll(uint32_t max) {
    std::vector<std::byte> out(size_t{geometry_.record_bytes} * max);
    auto n = consumer_.poll(out.data(), max);
    if (!n) {
      note("poll failed: " + n.error().message);
      return 0;
    }
    for (uint32_t i = 0; i < *n; ++i) {
      auto number = record_number(std::span<const std::byte>(out.data() + size_t{geometry_.record_bytes} * i,
                                                             geometry_.record_bytes));
      if (!number) {
        note("torn or garbage record after message " + std::to_string(received_));
      } else if (*number < received_) {
        note("message " + std::to_string(*number) + " again (duplicate or stale) after " + std::to_string(received_));
      } else if (*number > received_) {
        note("message " + std::to_string(received_) + " lost (got " + std::to_string(*number) + ")");
      } else if (*number >= sent_) {
        note("message " + std::to_string(*number) + " received before it was sent");
      }
      received_ = number ? *number + 1 : received_ + 1;
    }
    return *n;
  }

  // A cache's own event on line `index`: a cached line is evicted (written
  // back when dirty), an absent one prefetched (filled from memory).
  void cache_event(Side side, size_t index) {
    CacheModel& cache = side == Side::kProducer ? producer_cache_ : consumer_cache_;
    if (cache.cached(index)) {
      cache.evict(index);
    } else {
      cache.prefetch(index);
    }
  }
  size_t line_count() const { return producer_cache_.line_count(); }

  // With no more spontaneous cache events, the two sides alone must deliver
  // everything: the producer pushes the rest (flushing when the ring is
  // full) and flushes, the consumer polls. A bounded number of rounds that
  // delivers nothing more is a stall.
  bool drain() {
    const uint64_t rounds = 4 * (messages_ + geometry_.slots) + 16;
    for (uint64_t round = 0; round < rounds && violation_.empty(); ++round) {
      if (can_push() && !push()) flush();
      if (!can_push()) flush();
      poll(geometry_.records_per_slot() + 1);
      if (received_ == messages_ && !can_push() && !can_flush()) return true;
    }
    if (violation_.empty()) {
      note("stall: " + std::to_string(received_) + " of " + std::to_string(sent_) + " sent messages received (" +
           std::to_string(messages_) + " to send)");
    }
    return false;
  }

  bool done() const { return received_ == messages_ && sent_ == messages_ && producer_.staged() == 0; }
  const std::string& violation() const { return violation_; }
  uint64_t sent() const { return sent_; }
  uint64_t received() const { return received_; }
  const ChannelGeometry& geometry() const { return geometry_; }

 private:
  ChannelProducer<ModelLines> attach_producer(ModelLines lines) {
    if (!format_channel(memory_.span(), geometry_)) std::abort();
    auto p = ChannelProducer<ModelLines>::attach(memory_.span().first(channel_bytes(geometry_)), lines);
    if (!p) std::abort();
    return *p;
  }
  ChannelConsumer<ModelLines> attach_consumer(ModelLines lines) {
    auto c = ChannelConsumer<ModelLines>::attach(memory_.span().first(channel_bytes(geometry_)), lines);
    if (!c) std::abort();
    return *c;
  }
  void note(const std::string& what) {
    if (violation_.empty()) violation_ = what;
  }

  ChannelGeometry geometry_;
  uint64_t messages_;
  AlignedMemory memory_;
  CacheModel producer_cache_;
  CacheModel consumer_cache_;
  ChannelProducer<ModelLines> producer_;
  ChannelConsumer<ModelLines> consumer_;
  uint64_t sent_ = 0;
  uint64_t received_ = 0;
  std::string violation_;
};

}  // namespace cxlpool::devpool::test
