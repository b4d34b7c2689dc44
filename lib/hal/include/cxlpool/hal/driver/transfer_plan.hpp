// SPDX-License-Identifier: Apache-2.0
// How a transport cuts a batch into chunks and spreads them over its rails:
// pure logic, so that the choices are tested without a network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cxlpool::hal {

struct ChunkPlan {
  std::size_t request = 0;   // index of the request it belongs to
  std::uint64_t offset = 0;  // from the start of the request
  std::uint32_t length = 0;
  std::uint32_t rail = 0;    // one of the rails the plan was given
};

// Slices requests of `lengths` bytes into chunks of at most `chunk_bytes`
// (every chunk full but each request's last) and gives each chunk to the
// rail among `rails` that has been given the fewest bytes so far (the first
// such rail in `rails` order on a tie), so that rails of equal speed finish
// together. Empty when `rails` is empty or chunk_bytes is 0. A request of
// length 0 gets no chunk.
std::vector<ChunkPlan> plan_chunks(std::span<const std::uint64_t> lengths, std::uint32_t chunk_bytes,
                                   std::span<const std::uint32_t> rails);

}  // namespace cxlpool::hal
