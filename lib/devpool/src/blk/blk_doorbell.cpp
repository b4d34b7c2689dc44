// SPDX-License-Identifier: Apache-2.0
#include "blk_doorbell.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace cxlpool::devpool::blk {

std::uint32_t* slot_sequence_word(std::span<std::byte> channel, const ChannelGeometry& g, std::uint64_t position) {
  // Line 0 is the header, line 1 the consumer's, slots from line 2 (channel.hpp).
  const std::uint64_t line = 2 + (position & (g.slots - 1));
  return reinterpret_cast<std::uint32_t*>(channel.data() + line * kLineBytes + 56);
}

void ring_doorbell(std::uint32_t* word) {
  // A shared (not private) futex: the waiter is another process mapping the same file.
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool wait_doorbell(std::uint32_t* word, std::uint32_t seen, std::chrono::nanoseconds timeout) {
  if (timeout <= std::chrono::nanoseconds(0)) return false;
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const struct timespec ts{static_cast<time_t>(s.count()), static_cast<long>((timeout - s).count())};
  return ::syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, nullptr, 0) < 0 && errno == ETIMEDOUT;
}

}  // namespace cxlpool::devpool::blk
