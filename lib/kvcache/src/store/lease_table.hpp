// SPDX-License-Identifier: Apache-2.0
// Read leases by id. A lease id names its table slot and that slot's
// generation, so a lookup is an array index and a stale or forged id (a
// released lease, another slot's generation) is simply not found. Released
// slots keep their key vectors' capacity, so a steady stream of gets and
// releases allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlpool/kvcache/chunk_key.hpp"

namespace cxlpool::kvcache {

struct Lease {
  std::uint64_t client = 0;
  std::uint64_t bytes = 0;     // chunk bytes pinned, for the client's quota
  std::uint64_t opened_ns = 0; // when it was opened, for the lease timeout
  std::vector<ChunkKey> keys;  // pinned chunks, in prefix order
};

class LeaseTable {
 public:
  // A fresh lease (empty keys) and its id (never 0).
  std::uint64_t open(std::uint64_t client, Lease** lease);
  // nullptr when id is not a live lease.
  Lease* find(std::uint64_t id);
  void close(std::uint64_t id);
  // Ids of the client's live leases.
  void ids_of(std::uint64_t client, std::vector<std::uint64_t>& out) const;
  // Ids of the live leases opened at or before `opened_before_ns`.
  void opened_before(std::uint64_t opened_before_ns, std::vector<std::uint64_t>& out) const;
  [[nodiscard]] std::size_t live() const { return live_; }

 private:
  struct Entry {
    Lease lease;
    std::uint32_t generation = 0;
    bool in_use = false;
  };
  static std::uint64_t make_id(std::uint32_t index, std::uint32_t generation) {
    return (std::uint64_t{generation} << 32) | (std::uint64_t{index} + 1);
  }

  std::vector<Entry> entries_;
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;
};

}  // namespace cxlpool::kvcache
