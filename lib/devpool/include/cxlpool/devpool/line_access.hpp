// SPDX-License-Identifier: Apache-2.0
// How a channel side touches the shared memory, one 64-byte line at a time.
//
// A channel is written against this policy so that the same protocol runs on
// coherent memory (DDR shared between processes, CXL 3 with back-invalidate),
// on non-coherent shared memory (CXL 2.0 pooled memory shared by two hosts:
// a host's cache may hold a line another host rewrote), and on a software
// model of such a cache in tests. Each side of a channel owns one policy
// object; the policy never needs locking because one thread drives a side.
//
// A policy provides:
//   void load(const void* line, void* out64);   // read a whole line
//   void store(void* line, const void* in64);   // write a whole line
//   void write_back(const void* line);          // push a written line to memory
//   void fence();                               // order write-backs before later stores
//   void invalidate(const void* line);          // drop a (clean) cached copy
// `line` is always 64-byte aligned. The channel calls write_back + fence
// before it publishes and invalidate after it consumed every message in a
// line; on coherent memory those are no-ops.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

namespace cxlpool::devpool {

inline constexpr size_t kLineBytes = 64;

enum class Coherence : uint8_t {
  kCoherent = 0,     // loads see the other side's stores: no flush, no invalidate
  kNonCoherent = 1,  // write back before publishing, invalidate after consuming
};

const char* coherence_name(Coherence c);

// Coherent shared memory: plain loads and stores. The last 8 bytes of a line
// (where a slot keeps its sequence word) are accessed atomically with
// acquire/release so a reader that sees the sequence sees the payload.
struct CoherentLines {
  void load(const void* line, void* out64);
  void store(void* line, const void* in64);
  void write_back(const void*) {}
  void fence() {}
  void invalidate(const void*) {}
};

// Non-coherent shared memory on x86-64: clwb (or clflushopt where clwb is
// missing) to write back, sfence to order, clflushopt to invalidate (then
// mfence, so that a later load of the line waits for the flush). On CPUs
// with neither instruction, clflush (always present on x86-64). Chosen by
// cpuid when the policy is constructed.
struct NonCoherentLines {
  NonCoherentLines();
  void load(const void* line, void* out64);
  void store(void* line, const void* in64);
  void write_back(const void* line);
  void fence();
  void invalidate(const void* line);

 private:
  bool has_clwb_ = false;
  bool has_clflushopt_ = false;
};

}  // namespace cxlpool::devpool
