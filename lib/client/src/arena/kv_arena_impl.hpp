// SPDX-License-Identifier: Apache-2.0
// KvArena: what a cxlpool_kv_arena handle holds. ArenaCore behind a lock,
// the worker thread that runs step_async's mapping, step timing, and the
// offload/restore transfers (arena_transfer.hpp), whose copies run on a
// thread of their own (copy_worker.hpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "arena_core.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/kv_arena.h"

namespace cxlpool::client::arena {

class Transfers;

class KvArena {
 public:
  // The public path: backend from config.backend, memory from the daemon
  // (host) or the device (cuda).
  static Result<std::unique_ptr<KvArena>> create(cxlpool_client* client, const cxlpool_kv_arena_config& config);
  // From parts (tests, benchmarks): any GpuVmm and backing source. `client`
  // may be null; offload then cannot keep partial tails.
  // `placement`: how pages are picked (page_pool.hpp); kFirstFree only to
  // measure against.
  static Result<std::unique_ptr<KvArena>> create(cxlpool_client* client, const cxlpool_kv_arena_config& config,
                                                 std::unique_ptr<hal::GpuVmm> vmm,
                                                 std::unique_ptr<BackingSource> source,
                                                 PagePlacement placement = PagePlacement::kContiguous);
  ~KvArena();
  KvArena(const KvArena&) = delete;
  KvArena& operator=(const KvArena&) = delete;

  const ArenaGeometry& geometry() const { return geo_; }
  const cxlpool_kv_arena_config& config() const { return config_; }
  bool host_memory() const { return host_memory_; }
  const char* backend_name() const { return core_->backend_name(); }
  cxlpool_client* client() const { return client_; }
  uint64_t base() const { return base_; }
  uint32_t tier() const { return tier_; }

  Result<cxlpool_kv_arena_tensor> tensor(uint32_t layer, uint32_t kind) const;
  Result<uint32_t> alloc_reqid();
  Result<void> free_reqid(uint32_t row);
  Result<void> step(std::span<const uint32_t> seq_lens);
  Result<void> step_async(std::span<const uint32_t> seq_lens);
  Result<void> wait();
  Result<void> trim(uint64_t keep_bytes);
  cxlpool_kv_arena_stats stats() const;

  // For transfers: the row's tokens [0, tokens) must be mapped (grows the
  // row like step). Host address of (row, layer, kind)'s first token.
  Result<void> ensure_row(uint32_t row, uint32_t tokens);
  bool row_active(uint32_t row) const;
  // A copy in flight keeps the row's pages in place (no reclaim, trim or
  // reuse, even after free_reqid) until unpinned. False: not allocated.
  bool pin_row(uint32_t row);
  void unpin_row(uint32_t row);
  uint32_t row_mapped_tokens(uint32_t row) const;
  uint8_t* row_address(uint32_t row, uint32_t layer, uint32_t kind) const {
    return reinterpret_cast<uint8_t*>(base_ + geo_.tensor_offset(layer, kind) + uint64_t{row} * geo_.row_stride);
  }
  Transfers& transfers() { return *transfers_; }

 private:
  KvArena(cxlpool_client* client, const cxlpool_kv_arena_config& config, std::unique_ptr<ArenaCore> core);
  void worker_loop();
  void note_step(uint64_t ns, bool async);

  cxlpool_client* client_;
  cxlpool_kv_arena_config config_;
  ArenaGeometry geo_;
  uint64_t base_;
  bool host_memory_;
  uint32_t tier_;

  mutable std::mutex mu_;  // guards core_ and the step counters
  std::unique_ptr<ArenaCore> core_;
  uint64_t steps_ = 0, async_steps_ = 0, step_ns_total_ = 0, step_ns_max_ = 0;

  // step_async's job, handed to the worker.
  std::mutex job_mu_;
  std::condition_variable job_cv_;
  std::vector<uint32_t> job_seq_;
  bool job_pending_ = false;  // submitted and not yet waited for
  bool job_queued_ = false;   // the worker has not finished it
  bool stop_ = false;
  // Set by wait(): the worker ends the step's speculative map-ahead at the
  // next page group, so a caller that is out of other work waits only for
  // the pages the step needs (the first async step of a batch would
  // otherwise map a page ahead for every row at once).
  std::atomic<bool> stop_ahead_{false};
  Result<void> job_result_;
  std::thread worker_;

  std::unique_ptr<Transfers> transfers_;
};

}  // namespace cxlpool::client::arena
