// SPDX-License-Identifier: Apache-2.0
// A software model of non-coherent shared memory, for tests only (it lives
// in the devpool_testing library, which no program links).
//
// One shared "memory" byte range; each side of a channel has its own
// CacheModel of it. A load fills the line from memory when the cache lacks it
// and otherwise serves the cached copy, however stale; a store writes the
// cache (dirty); write_back copies a dirty line to memory; invalidate drops
// the copy, writing it back first when dirty (as clflushopt does). The test
// drives what real caches do on their own: evict() (a dirty line reaches
// memory at any moment) and prefetch() (a line is filled from memory at any
// moment, so it can be stale later). Lines move whole: memory never holds
// half of a line's store.
//
// ModelLines is the line access policy (line_access.hpp) over one side's
// model, with optional mutations that break the protocol on purpose, so that
// a test can show its checker catches a missing write-back or invalidate.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/devpool/channel.hpp"
#include "cxlpool/devpool/line_access.hpp"

namespace cxlpool::devpool::testing {

class CacheModel {
 public:
  // `memory` is 64-byte aligned and `bytes` a multiple of 64; the model
  // neither owns nor clears it.
  CacheModel(std::byte* memory, size_t bytes);

  void load(const void* line, void* out64);
  void store(void* line, const void* in64);
  void write_back(const void* line);
  void invalidate(const void* line);

  // Spontaneous events, by line index (0 = the first line of the memory).
  void evict(size_t index);     // a dirty line is written back; the copy is dropped
  void prefetch(size_t index);  // filled from memory unless already cached

  size_t line_count() const { return lines_.size(); }
  bool cached(size_t index) const { return lines_[index].present; }
  bool dirty(size_t index) const { return lines_[index].dirty; }
  // Appends the cache's contents (for hashing explored states).
  void append_state(std::string& out) const;

 private:
  struct Line {
    bool present = false;
    bool dirty = false;
    std::array<std::byte, kLineBytes> data{};
  };
  size_t index_of(const void* line) const;
  void write_line_back(size_t index);

  std::byte* memory_ = nullptr;
  std::vector<Line> lines_;
};

enum class Mutation : uint8_t {
  kNone = 0,
  kDropWriteBack = 1,   // write_back does nothing
  kDropInvalidate = 2,  // invalidate does nothing
};

struct ModelLines {
  CacheModel* cache = nullptr;
  Mutation mutation = Mutation::kNone;

  void load(const void* line, void* out64) { cache->load(line, out64); }
  void store(void* line, const void* in64) { cache->store(line, in64); }
  void write_back(const void* line) {
    if (mutation != Mutation::kDropWriteBack) cache->write_back(line);
  }
  void fence() {}
  void invalidate(const void* line) {
    if (mutation != Mutation::kDropInvalidate) cache->invalidate(line);
  }
};

}  // namespace cxlpool::devpool::testing

namespace cxlpool::devpool {
extern template class ChannelProducer<testing::ModelLines>;
extern template class ChannelConsumer<testing::ModelLines>;
}  // namespace cxlpool::devpool
