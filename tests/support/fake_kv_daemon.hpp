// SPDX-License-Identifier: Apache-2.0
// An in-process stand-in for cxlpoold's KV service, enough to drive
// libcxlpool's data path without the daemon: a control socket that answers
// Hello, KvOpen (ring, eventfds, put window), KvNamespaceOpen (with the two
// arenas as the namespace's views), and a thread that serves the rings with a
// tiny store (a map of keys to DRAM slots, leases, reservations). Knobs let a
// test reorder, withhold or corrupt completions.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/kv_ring.hpp"
#include "cxlpool/proto/messages.hpp"
#include "temp_dir.hpp"

namespace cxlpool::test {

class FakeKvDaemon {
 public:
  static constexpr uint64_t kSlotBytes = 64 * 1024;
  static constexpr uint64_t kArenaSlots = 16;
  static constexpr uint64_t kWindowSlots = 8;
  static constexpr uint32_t kCqEntries = 8;

  FakeKvDaemon();
  ~FakeKvDaemon();

  const std::string& socket_path() const { return socket_path_; }

  // Hold the first request of this op until another request arrives, then
  // complete the held one first (0: off).
  std::atomic<uint8_t> hold_op{0};
  // Never answer requests of this op (0: off).
  std::atomic<uint8_t> ignore_op{0};
  // The next location sent points past the DRAM arena.
  std::atomic<bool> corrupt_next_location{false};
  // put_commit with kKvPutCommitToSsd answers every chunk it commits as
  // stored on the SSD log only (result1), as a daemon with an SSD log does;
  // off: result1 0, as one without. The chunks stay readable either way.
  std::atomic<bool> ssd_log{false};
  // The flags of the last put_commit served.
  std::atomic<uint16_t> last_commit_flags{0};
  // put_commit with kKvPutCommitChecksums: checked against the window (a
  // chunk that does not match is not stored, and counted); off: answered
  // -EINVAL, as a daemon older than the flag.
  std::atomic<bool> knows_checksums{true};
  std::atomic<uint64_t> checksum_mismatches{0};
  // Answered, by op.
  std::atomic<uint64_t> answered[8] = {};
  std::atomic<uint64_t> releases_ok{0};

  // Drops the control connection (as a crashed daemon would).
  void disconnect();
  // The first `bytes` of DRAM slot `slot` as the daemon sees them (copied
  // under its lock: the ring's ordering is through another mapping).
  std::vector<std::byte> dram_slot(uint64_t slot, size_t bytes);
  uint64_t leases_held();

 private:
  struct Chunk {
    uint64_t slot = 0;
    uint32_t length = 0;
  };
  using Key = std::pair<uint64_t, uint64_t>;
  struct Answer {
    proto::KvCompletion completion;
    std::vector<proto::KvLocation> locations;
  };

  void control_loop();
  void data_loop();
  Answer handle(const proto::KvRequest& r, std::span<const proto::KvKey> keys);

  TempDir dir_{"fake-kv"};
  std::string socket_path_;
  UniqueFd listen_;
  UniqueFd conn_;
  std::atomic<bool> stop_{false};
  std::thread control_;
  std::thread data_;

  std::mutex mutex_;  // the rings' setup vs the data thread
  bool ring_ready_ = false;
  proto::KvRingMemory ring_memory_;
  proto::KvDaemonRing ring_;
  UniqueFd sq_efd_, cq_efd_;
  UniqueFd window_fd_, arena_fd_[2];
  std::byte* window_ = nullptr;
  std::byte* dram_ = nullptr;
  std::byte* cxl_ = nullptr;

  std::map<Key, Chunk> chunks_;
  uint64_t next_dram_slot_ = 0;
  std::map<uint64_t, std::vector<Key>> leases_;
  std::map<uint64_t, std::vector<std::pair<Key, uint64_t>>> reservations_;  // key, window slot
  std::map<uint64_t, uint32_t> put_length_;  // reservation -> chunk bytes
  uint64_t next_id_ = 1;
  std::vector<Answer> held_;
  bool holding_ = false;
};

}  // namespace cxlpool::test
