// SPDX-License-Identifier: Apache-2.0
// Pieces shared by the rings that live in a memfd mapped by the daemon and one
// client: the sealed shared mapping, index words read through atomic_ref
// (the other side may write them at any moment), and eventfd wake-ups.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::proto {

using RingIndex = std::atomic_ref<uint64_t>;
using RingWord = std::atomic_ref<uint32_t>;

// A word of the shared mapping, read once; the other side may be writing it.
inline uint32_t ring_word(uint32_t& w) { return RingWord(w).load(std::memory_order_relaxed); }

inline constexpr bool ring_power_of_two(uint64_t n, uint64_t max) {
  return n >= 1 && n <= max && (n & (n - 1)) == 0;
}

// A MAP_SHARED read-write mapping of a memfd, unmapped on destruction.
class ShmMapping {
 public:
  // A fresh memfd of `bytes`, sealed against shrinking and growing (the peer
  // maps it read-write and must not be able to truncate it under our
  // mapping: SIGBUS), mapped. `name` shows in /proc/<pid>/fd.
  static Result<ShmMapping> create(const char* name, uint64_t bytes);
  // Maps `bytes` of a received descriptor read-write; keeps no descriptor.
  static Result<ShmMapping> map(int fd, uint64_t bytes);

  ShmMapping() = default;
  ShmMapping(ShmMapping&& other) noexcept;
  ShmMapping& operator=(ShmMapping&& other) noexcept;
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;
  ~ShmMapping();

  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(addr_), size_}; }
  int fd() const { return fd_.get(); }
  UniqueFd take_fd() { return std::move(fd_); }

 private:
  void reset();
  UniqueFd fd_;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// A non-blocking, close-on-exec eventfd used as a doorbell.
Result<UniqueFd> ring_eventfd();
// Rings the doorbell (adds 1). A full counter (EAGAIN) already means "woken".
void ring_kick(int efd);
// Waits up to timeout_ms (-1: forever) for the doorbell and resets it.
// Returns true when it rang, false on timeout; EINTR counts as a timeout.
Result<bool> ring_wait(int efd, int timeout_ms);

}  // namespace cxlpool::proto
