// SPDX-License-Identifier: Apache-2.0
#include "scheduler.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace cxlpool::infer {

namespace {

bool same_key(const cxlpool_kv_key& a, const cxlpool_kv_key& b) { return a.lo == b.lo && a.hi == b.hi; }

}  // namespace

Scheduler::Scheduler(const ModelConfig& config, RuntimeSession& session, WeightSource& weights, const KvCache& cache,
                     const RuntimeOptions& options, std::vector<Sequence>& requests, uint32_t decode_steps,
                     uint32_t max_context)
    : config_(config),
      session_(session),
      weights_(weights),
      cache_(cache),
      options_(options),
      requests_(requests),
      decode_steps_(decode_steps),
      max_batch_(static_cast<uint32_t>(requests.size())),
      decoder_(config, max_context),
      slots_(requests.size()),
      seq_lens_(requests.size(), 0) {
  for (uint32_t i = 0; i < requests.size(); ++i) queue_.push_back(i);
  for (const Sequence& s : requests) summary_.prompt_tokens += s.prompt.size();
}

uint64_t Scheduler::row_bytes(uint64_t tokens) const {
  const uint64_t page = options_.page_bytes;
  const uint64_t pages = (tokens * config_.kv_token_bytes() + page - 1) / page;
  return uint64_t{config_.layers} * 2 * pages * page;
}

std::string Scheduler::memory_limit_message() const {
  return "kv arena: the memory limit (" + std::to_string(options_.memory_limit_bytes) +
         " bytes) does not hold one request (" +
         std::to_string(row_bytes(requests_[0].prompt.size() + decode_steps_)) + " bytes at full length)";
}

uint64_t Scheduler::next_need(uint32_t id) const {
  const Sequence& s = requests_[id];
  // A started request's newest token is its pending one; a fresh request
  // needs its prompt and then the first generated token.
  return slots_[id].started ? s.length() : s.prompt.size() + 1;
}

// Admission control in the spirit of vLLM's: a request comes in only when
// the rows already running can still take their next token next to it, so
// that a row just admitted is not preempted at once.
bool Scheduler::fits(uint64_t extra_tokens) const {
  if (options_.memory_limit_bytes == 0) return true;
  uint64_t projected = row_bytes(extra_tokens);
  for (uint32_t id : active_) projected += row_bytes(next_need(id) + 1);
  return projected <= options_.memory_limit_bytes;
}

void Scheduler::note_stats() {
  cxlpool_kv_arena_stats st{};
  if (cxlpool_kv_arena_get_stats(session_.arena.get(), &st) == 0)
    summary_.peak_mapped_bytes = std::max(summary_.peak_mapped_bytes, st.mapped_bytes);
}

Result<void> Scheduler::settle() {
  if (!async_running_) return {};
  async_running_ = false;
  // An async step that ran out of memory is not an error here: the
  // synchronous step that follows finds the same shortage and preempts.
  const int rc = cxlpool_kv_arena_wait(session_.arena.get());
  if (rc < 0 && rc != -ENOMEM) return api_error("kv arena: wait", rc);
  return {};
}

Result<void> Scheduler::poll_offloads(int timeout_ms) {
  for (Slot& slot : slots_) {
    if (slot.ticket == 0) continue;
    const int rc = cxlpool_kv_arena_offload_poll(session_.arena.get(), slot.ticket, timeout_ms, nullptr);
    if (rc == -EINPROGRESS) continue;
    slot.ticket = 0;
    if (rc < 0) return api_error("kv arena: offload", rc);
  }
  return {};
}

Result<void> Scheduler::wait_ticket(Slot& slot) {
  if (slot.ticket == 0) return {};
  const int rc = cxlpool_kv_arena_offload_poll(session_.arena.get(), slot.ticket, -1, nullptr);
  slot.ticket = 0;
  if (rc < 0) return api_error("kv arena: offload", rc);
  return {};
}

Result<void> Scheduler::offload(uint32_t id, size_t tokens) {
  Slot& slot = slots_[id];
  if (auto r = wait_ticket(slot); !r) return r;
  const std::vector<uint32_t> ids = requests_[id].tokens(tokens);
  uint64_t ticket = 0;
  const int rc = cxlpool_kv_arena_offload_begin(session_.arena.get(), session_.kv.get(), &session_.ns, slot.row,
                                                ids.data(), ids.size(), &ticket);
  if (rc < 0) return api_error("kv arena: offload row " + std::to_string(slot.row), rc);
  slot.ticket = ticket;
  slot.offloaded = std::max(slot.offloaded, tokens);
  ++summary_.offloads;
  return {};
}

Result<void> Scheduler::preempt(uint32_t id) {
  Slot& slot = slots_[id];
  const size_t processed = requests_[id].length() - 1;  // all but the pending token
  if (auto r = offload(id, processed); !r) return r;
  // The row's memory goes back only once its KV has been copied out.
  if (auto r = wait_ticket(slot); !r) return r;
  if (int rc = cxlpool_kv_arena_free_reqid(session_.arena.get(), slot.row); rc < 0)
    return api_error("kv arena: free row", rc);
  seq_lens_[slot.row] = 0;
  slot.state = State::kWaiting;
  active_.erase(std::find(active_.begin(), active_.end(), id));
  queue_.push_front(id);
  ++summary_.rows_preempted;
  return {};
}

Result<void> Scheduler::retire(uint32_t id) {
  Slot& slot = slots_[id];
  if (auto r = wait_ticket(slot); !r) return r;
  if (int rc = cxlpool_kv_arena_free_reqid(session_.arena.get(), slot.row); rc < 0)
    return api_error("kv arena: free row", rc);
  seq_lens_[slot.row] = 0;
  slot.state = State::kDone;
  active_.erase(std::find(active_.begin(), active_.end(), id));
  return {};
}

// Makes the arena hold seq_lens_ for every row. Under the memory limit it
// preempts the youngest rows while that helps; false when even that fails
// (only with allow_preempt == false).
Result<bool> Scheduler::grow(bool allow_preempt) {
  for (;;) {
    const int rc = cxlpool_kv_arena_step(session_.arena.get(), seq_lens_.data(), seq_lens_.size());
    if (rc == 0) {
      note_stats();
      return true;
    }
    if (rc != -ENOMEM) return api_error("kv arena: step", rc);
    if (!allow_preempt) return false;
    if (active_.size() <= 1) return fail(ENOMEM, memory_limit_message());
    if (auto r = preempt(active_.back()); !r) return tl::unexpected(r.error());
  }
}

Result<void> Scheduler::admit() {
  std::vector<TokenWork> work;
  std::vector<uint32_t> admitted;
  std::vector<cxlpool_kv_key> missed_first_chunks;
  bool drained = false;
  const uint32_t chunk = session_.ns.chunk_tokens;
  while (!queue_.empty() && active_.size() < max_batch_) {
    const uint32_t id = queue_.front();
    Slot& slot = slots_[id];
    Sequence& s = requests_[id];
    const uint64_t need = next_need(id);
    if (!active_.empty() && !fits(need)) break;

    // A fresh request whose first chunk another request of this round is
    // about to compute waits one step, then finds it in the store.
    cxlpool_kv_key first{};
    const bool has_chunk = !slot.started && chunk > 0 && s.prompt.size() > chunk;
    if (has_chunk) {
      if (cxlpool_kv_compute_keys(&session_.ns, s.prompt.data(), chunk, nullptr, &first, 1) != 1)
        return fail(EINVAL, "kv: computing a chunk key failed");
      if (std::any_of(missed_first_chunks.begin(), missed_first_chunks.end(),
                      [&](const cxlpool_kv_key& k) { return same_key(k, first); }))
        break;
    }
    // What earlier requests offloaded must be committed before a lookup.
    if (!drained) {
      if (auto r = poll_offloads(-1); !r) return r;
      drained = true;
    }

    uint32_t row = 0;
    if (int rc = cxlpool_kv_arena_alloc_reqid(session_.arena.get(), &row); rc < 0) {
      if (rc == -ENOSPC) break;
      return api_error("kv arena: alloc row", rc);
    }
    // Fresh: restore at most all but the last prompt token (its logits are
    // needed). Resumed: everything it had computed.
    const size_t have = slot.started ? s.length() - 1 : s.prompt.size() - 1;
    uint64_t restored = 0;
    if (have > 0) {
      const std::vector<uint32_t> ids = s.tokens(have);
      uint64_t ticket = 0;
      int rc = cxlpool_kv_arena_restore_begin(session_.arena.get(), session_.kv.get(), &session_.ns, row, ids.data(),
                                              ids.size(), &ticket);
      if (rc == 0) rc = cxlpool_kv_arena_offload_poll(session_.arena.get(), ticket, -1, &restored);
      if (rc == -ENOMEM) {
        (void)cxlpool_kv_arena_free_reqid(session_.arena.get(), row);
        if (active_.empty()) return fail(ENOMEM, memory_limit_message());
        break;
      }
      if (rc < 0) return api_error("kv arena: restore row " + std::to_string(row), rc);
    }
    const size_t target = slot.started ? have : s.prompt.size();
    seq_lens_[row] = static_cast<uint32_t>(target);
    auto grown = grow(false);
    if (!grown) return tl::unexpected(grown.error());
    if (!*grown) {
      seq_lens_[row] = 0;
      if (int rc = cxlpool_kv_arena_free_reqid(session_.arena.get(), row); rc < 0)
        return api_error("kv arena: free row", rc);
      if (active_.empty()) return fail(ENOMEM, memory_limit_message());
      break;
    }

    queue_.pop_front();
    slot.row = row;
    slot.state = State::kActive;
    active_.push_back(id);
    admitted.push_back(id);
    if (slot.started) {
      ++summary_.rows_resumed;
      summary_.tokens_restored += restored;
      summary_.tokens_recomputed += have - restored;
    } else {
      summary_.prefix_tokens_reused += restored;
      summary_.prompt_tokens_computed += target - restored;
      if (has_chunk && restored < chunk) missed_first_chunks.push_back(first);
    }
    for (size_t p = restored; p < target; ++p)
      work.push_back({row, static_cast<uint32_t>(p), s.token_at(p), !slot.started && p + 1 == target});
  }
  summary_.max_active_rows = std::max<uint32_t>(summary_.max_active_rows, static_cast<uint32_t>(active_.size()));
  if (work.empty()) return {};

  // One batched prefill for every row admitted in this round.
  std::vector<float> logits;
  if (auto f = decoder_.forward(weights_, cache_, work, logits); !f) return f;
  size_t next = 0;
  for (uint32_t id : admitted) {
    Slot& slot = slots_[id];
    if (slot.started) continue;
    slot.started = true;
    if (requests_[id].record(&logits[next++ * config_.vocab], config_.vocab, decode_steps_)) finished_.push_back(id);
    // Its prompt's chunks go to the store for the requests that share them.
    if (auto r = offload(id, requests_[id].prompt.size()); !r) return r;
  }
  return {};
}

Result<void> Scheduler::run() {
  auto served = serve();
  // Stored chunks are deleted even after a failure; the first error wins.
  auto settled = settle();
  if (settled) settled = poll_offloads(-1);
  auto cleaned = cleanup();
  if (!served) return served;
  if (!settled) return settled;
  return cleaned;
}

Result<void> Scheduler::serve() {
  for (;;) {
    if (auto r = settle(); !r) return r;
    if (auto r = poll_offloads(0); !r) return r;
    for (uint32_t id : finished_)
      if (auto r = retire(id); !r) return r;
    finished_.clear();
    if (queue_.empty() && active_.empty()) break;
    if (auto r = admit(); !r) return r;
    if (!finished_.empty()) continue;  // prefill-only requests
    if (active_.empty()) {
      if (queue_.empty()) break;
      return fail(ENOMEM, "scheduler: no request could be admitted");
    }

    if (hooks_.warm) {
      // Every offload committed, so that the hook may close the store.
      if (auto r = poll_offloads(-1); !r) return r;
      auto warm = std::exchange(hooks_.warm, nullptr);
      if (auto r = warm(); !r) return r;
    }
    // This step's memory (mapped ahead by the last async step, so usually
    // nothing is left to do), preempting under the limit.
    for (uint32_t id : active_) seq_lens_[slots_[id].row] = static_cast<uint32_t>(requests_[id].length());
    if (auto g = grow(true); !g) return tl::unexpected(g.error());
    // The next step's memory is mapped by the arena's worker while this
    // step computes.
    if (options_.async_step) {
      std::vector<uint32_t> ahead = seq_lens_;
      for (uint32_t id : active_)
        if (requests_[id].logit_steps < decode_steps_) ++ahead[slots_[id].row];
      const int rc = cxlpool_kv_arena_step_async(session_.arena.get(), ahead.data(), ahead.size());
      if (rc < 0) return api_error("kv arena: step_async", rc);
      async_running_ = true;
    }

    std::vector<TokenWork> work;
    for (uint32_t id : active_) {
      const Sequence& s = requests_[id];
      const auto pos = static_cast<uint32_t>(s.length() - 1);
      work.push_back({slots_[id].row, pos, s.token_at(pos), true});
    }
    std::vector<float> logits;
    if (auto f = decoder_.forward(weights_, cache_, work, logits); !f) return f;
    ++summary_.decode_steps;
    if (auto first = std::exchange(hooks_.after_first_token, nullptr)) first();
    for (size_t i = 0; i < active_.size(); ++i) {
      const uint32_t id = active_[i];
      if (requests_[id].record(&logits[i * config_.vocab], config_.vocab, decode_steps_)) finished_.push_back(id);
    }
  }
  if (auto r = settle(); !r) return r;
  if (auto r = poll_offloads(-1); !r) return r;
  if (int rc = cxlpool_kv_arena_get_stats(session_.arena.get(), &summary_.arena); rc < 0)
    return api_error("kv arena: stats", rc);
  if (session_.streamer) {
    if (int rc = cxlpool_weight_streamer_stats(session_.streamer.get(), &summary_.streamer); rc < 0)
      return api_error("streamer: stats", rc);
  }
  return {};
}

// Deletes the chunks this run stored, so that the next run starts cold and
// reports the same reuse (unless asked to keep them).
Result<void> Scheduler::cleanup() {
  if (options_.keep_cache) return {};
  const uint32_t chunk = session_.ns.chunk_tokens;
  for (size_t id = 0; id < slots_.size(); ++id) {
    const size_t n = slots_[id].offloaded;
    if (chunk == 0 || n < chunk) continue;
    const std::vector<uint32_t> ids = requests_[id].tokens(n);
    std::vector<cxlpool_kv_key> keys(n / chunk);
    const int k = cxlpool_kv_compute_keys(&session_.ns, ids.data(), ids.size(), nullptr, keys.data(), keys.size());
    if (k < 0) return api_error("kv: keys", k);
    const int rc = cxlpool_kv_delete(session_.kv.get(), session_.ns.id, keys.data(), static_cast<uint32_t>(k));
    if (rc < 0) return api_error("kv: delete", rc);
    summary_.chunks_deleted += static_cast<uint64_t>(rc);
  }
  return {};
}

}  // namespace cxlpool::infer
