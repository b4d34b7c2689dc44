// SPDX-License-Identifier: Apache-2.0
// The runtime path's serving loop, as an engine on a KV arena runs it:
// admission (restore what the store has, prefill the rest, offload the
// prompt's chunks for later requests), decode steps with the arena mapping
// one step ahead on its worker while the model computes, and preemption
// (offload the youngest row, free it, restore it later) when the arena's
// memory limit is reached.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "decoder.hpp"
#include "runtime_session.hpp"
#include "workload.hpp"

namespace cxlpool::infer {

struct RuntimeSummary {
  uint64_t prompt_tokens = 0;           // over all requests
  uint64_t prefix_tokens_reused = 0;    // restored from the store instead of prefilled
  uint64_t prompt_tokens_computed = 0;
  uint64_t rows_preempted = 0;
  uint64_t rows_resumed = 0;
  uint64_t tokens_restored = 0;         // on resume, from the store and the pool
  uint64_t tokens_recomputed = 0;       // on resume, what the store no longer had
  uint64_t offloads = 0;
  uint64_t decode_steps = 0;
  uint32_t max_active_rows = 0;
  uint64_t peak_mapped_bytes = 0;
  uint64_t chunks_deleted = 0;
  cxlpool_kv_arena_stats arena{};
  cxlpool_streamer_stats streamer{};
};

// Points in a runtime run a caller may act at: once the first requests are
// prefilled, before the first decode step (the worker is warm: weights
// mapped, KV rows in the arena; nothing is in flight on the KV store), and
// once that step's tokens are decoded.
struct RuntimeHooks {
  std::function<Result<void>()> warm;
  std::function<void()> after_first_token;
};

class Scheduler {
 public:
  // The session's arena, store handle and namespace serve the KV; the
  // decoder reads `weights` and `cache` (the session's streamed weights and
  // arena view in cxlpool-infer).
  Scheduler(const ModelConfig& config, RuntimeSession& session, WeightSource& weights, const KvCache& cache,
            const RuntimeOptions& options, std::vector<Sequence>& requests, uint32_t decode_steps,
            uint32_t max_context);

  Result<void> run();
  void set_hooks(RuntimeHooks hooks) { hooks_ = std::move(hooks); }
  const RuntimeSummary& summary() const { return summary_; }

 private:
  enum class State { kWaiting, kActive, kDone };
  struct Slot {
    State state = State::kWaiting;
    uint32_t row = 0;
    bool started = false;       // prefilled once (a resume restores instead)
    uint64_t ticket = 0;        // offload in flight
    size_t offloaded = 0;       // longest token run offloaded (for cleanup)
  };

  Result<void> serve();
  Result<void> settle();
  Result<void> poll_offloads(int timeout_ms);
  Result<void> wait_ticket(Slot& slot);
  Result<void> admit();
  Result<bool> grow(bool allow_preempt);
  Result<void> preempt(uint32_t id);
  Result<void> retire(uint32_t id);
  Result<void> offload(uint32_t id, size_t tokens);
  Result<void> cleanup();
  uint64_t row_bytes(uint64_t tokens) const;
  bool fits(uint64_t extra_tokens) const;
  uint64_t next_need(uint32_t id) const;
  std::string memory_limit_message() const;
  void note_stats();

  const ModelConfig& config_;
  RuntimeSession& session_;
  WeightSource& weights_;
  const KvCache& cache_;
  const RuntimeOptions& options_;
  std::vector<Sequence>& requests_;
  uint32_t decode_steps_;
  uint32_t max_batch_;
  Decoder decoder_;
  std::vector<Slot> slots_;
  std::deque<uint32_t> queue_;
  std::vector<uint32_t> active_;  // in admission order: the last is preempted first
  std::vector<uint32_t> finished_;
  std::vector<uint32_t> seq_lens_;
  bool async_running_ = false;
  RuntimeSummary summary_;
  RuntimeHooks hooks_;
};

}  // namespace cxlpool::infer
