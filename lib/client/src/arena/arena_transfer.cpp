// SPDX-License-Identifier: Apache-2.0
#include "arena_transfer.hpp"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <string>

#include "cxlpool/common/clock.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "kv_arena_impl.hpp"

namespace cxlpool::client::arena {
namespace {

// user_data of our requests: a tag in the top 16 bits, the ticket below.
constexpr uint64_t kTag = uint64_t{0xA7E4} << 48;
constexpr uint64_t kIdMask = (uint64_t{1} << 48) - 1;
constexpr size_t kReapBatch = 32;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Transfers::TailRegion::~TailRegion() { cxlpool_region_free(region); }

Transfers::Transfers(KvArena& arena) : arena_(arena), copier_(arena.geometry(), arena.base()) {}

Transfers::~Transfers() = default;  // the copier stops first; leases go when the kv handle closes

Transfers::TailKey Transfers::tail_key(const cxlpool_kv_namespace& ns, std::span<const uint32_t> tokens) const {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t head[2] = {ns.fingerprint_hi, ns.fingerprint_lo};
  XXH3_128bits_update(&state, head, sizeof head);
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.high64, h.low64};
}

Result<std::shared_ptr<Transfers::TailRegion>> Transfers::make_tail(uint32_t count) {
  const auto& g = arena_.geometry();
  if (arena_.client() == nullptr || arena_.tier() == UINT32_MAX) {
    return fail(ENOTSUP, "kv arena: no daemon tier to keep a partial chunk in");
  }
  const uint64_t bytes = round_up(uint64_t{count} * g.token_bytes * g.tensors, 4096);
  cxlpool_region* region = nullptr;
  int rc = cxlpool_region_alloc(arena_.client(), arena_.tier(), bytes, 0, &region);
  if (rc < 0) return fail(-rc, std::string("kv arena: region for a partial chunk: ") + cxlpool_last_error());
  void* addr = nullptr;
  rc = cxlpool_region_map(region, &addr);
  if (rc < 0) {
    cxlpool_region_free(region);
    return fail(-rc, std::string("kv arena: map the partial chunk's region: ") + cxlpool_last_error());
  }
  return std::make_shared<TailRegion>(region, static_cast<uint8_t*>(addr), count);
}

Result<void> Transfers::open_engine() {
  if (engine_) return {};
  auto engine = hal::open_gpu_copy_engine(arena_.backend_name(), arena_.config().device);
  if (!engine) {
    return fail(engine.error().code, "kv arena: offload and restore of device memory copy through the " +
                                         std::string(arena_.backend_name()) +
                                         " backend's copy engine: " + engine.error().message);
  }
  engine_ = std::move(*engine);
  copier_.use_engine(engine_.get());
  return {};
}

Result<std::shared_ptr<Transfers::Ticket>> Transfers::start(Kind kind, cxlpool_kv* kv, const cxlpool_kv_namespace& ns,
                                                             uint32_t row, std::span<const uint32_t> tokens) {
  if (!arena_.host_memory()) {
    if (auto e = open_engine(); !e) return tl::unexpected(e.error());
  }
  if (kv == nullptr || ns.chunk_tokens == 0) return fail(EINVAL, "kv arena: a kv handle and an open namespace are needed");
  if (tokens.data() == nullptr && !tokens.empty()) return fail(EINVAL, "kv arena: tokens is NULL");
  const auto& g = arena_.geometry();
  if (tokens.size() > g.max_context) return fail(ERANGE, "kv arena: more tokens than max_context");
  if (!arena_.row_active(row)) return fail(ENOENT, "kv arena: reqid " + std::to_string(row) + " is not allocated");
  auto t = std::make_shared<Ticket>();
  t->kind = kind;
  t->kv = kv;
  t->ns = ns;
  t->row = row;
  t->tokens.assign(tokens.begin(), tokens.end());
  t->chunk_bytes = g.chunk_bytes(ns.chunk_tokens);
  t->keys.resize(tokens.size() / ns.chunk_tokens);
  if (!t->keys.empty()) {
    const int n = cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, t->keys.data(), t->keys.size());
    if (n < 0) return fail(-n, "kv arena: compute chunk keys");
  }
  cxlpool_kv_info info{};
  if (cxlpool_kv_get_info(kv, &info) == 0 && info.slot_bytes != 0 && t->chunk_bytes > info.slot_bytes) {
    return fail(EMSGSIZE, "kv arena: a chunk of " + std::to_string(t->chunk_bytes) + " bytes exceeds the store's " +
                              std::to_string(info.slot_bytes) + "-byte slots (fewer chunk_tokens)");
  }
  t->max_batch = info.put_window_bytes >= t->chunk_bytes ? info.put_window_bytes / t->chunk_bytes : 1;
  t->tail_key = tail_key(ns, tokens);
  // The id names the ticket's copy jobs, which may go before admit().
  t->id = next_id_++;
  return t;
}

uint64_t Transfers::admit(const std::shared_ptr<Ticket>& t) {
  tickets_.emplace(t->id, t);
  pump(*t);
  settle(*t);
  return t->id;
}

Result<uint64_t> Transfers::offload_begin(cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t row,
                                          std::span<const uint32_t> tokens) {
  auto t = start(Kind::kOffload, kv, ns, row, tokens);
  if (!t) return tl::unexpected(t.error());
  auto& ticket = **t;
  if (arena_.row_mapped_tokens(row) < tokens.size()) {
    return fail(ERANGE, "kv arena: reqid " + std::to_string(row) + " holds fewer tokens than offload names");
  }
  // A new offload of the same tokens replaces an older tail.
  tails_.erase(ticket.tail_key);
  const uint32_t full = full_tokens(ticket);
  const uint32_t count = static_cast<uint32_t>(ticket.tokens.size()) - full;
  std::shared_ptr<TailRegion> tail;
  if (count != 0) {
    auto made = make_tail(count);
    if (!made) return tl::unexpected(made.error());
    tail = std::move(*made);
  }
  if (!arena_.pin_row(row)) return fail(ENOENT, "kv arena: reqid " + std::to_string(row) + " is not allocated");
  ticket.pinned = true;
  if (tail) {
    // Registered once copied (drain): a restore never sees half a tail.
    ticket.tail = tail;
    copy(ticket, {CopySegment{false, full, count, tail->addr}}, 0, tail);
  }
  if (ticket.keys.empty()) {
    ticket.tokens_done = ticket.tokens.size();
    ticket.complete = true;
  } else {
    ticket.to_submit = CXLPOOL_KV_PUT_BEGIN;
  }
  return admit(*t);
}

Result<uint64_t> Transfers::restore_begin(cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t row,
                                          std::span<const uint32_t> tokens) {
  auto t = start(Kind::kRestore, kv, ns, row, tokens);
  if (!t) return tl::unexpected(t.error());
  auto& ticket = **t;
  if (auto grown = arena_.ensure_row(row, static_cast<uint32_t>(tokens.size())); !grown) {
    return tl::unexpected(grown.error());
  }
  if (!arena_.pin_row(row)) return fail(ENOENT, "kv arena: reqid " + std::to_string(row) + " is not allocated");
  ticket.pinned = true;
  if (ticket.keys.empty()) {
    std::vector<CopySegment> segments;
    auto it = tails_.find(ticket.tail_key);
    if (ticket.tokens.empty() || (it != tails_.end() && it->second->tokens == ticket.tokens.size())) {
      if (!ticket.tokens.empty()) {
        segments.push_back(CopySegment{true, 0, it->second->tokens, it->second->addr});
        ticket.tail = it->second;
      }
      ticket.tokens_done = ticket.tokens.size();
    }
    if (!segments.empty()) copy(ticket, std::move(segments), 0, ticket.tail);
    ticket.complete = true;
  } else {
    ticket.to_submit = CXLPOOL_KV_GET;
  }
  return admit(*t);
}

void Transfers::copy(Ticket& t, std::vector<CopySegment> segments, uint32_t then_op, std::shared_ptr<void> keep) {
  CopyJob job;
  job.ticket = t.id;
  job.row = t.row;
  job.then_op = then_op;
  job.segments = std::move(segments);
  job.keep = std::move(keep);
  ++t.copies;
  copier_.submit(std::move(job));
}

void Transfers::drain() {
  for (auto& job : copier_.take_done()) {
    auto it = tickets_.find(job.ticket);
    if (it == tickets_.end()) continue;
    Ticket& t = *it->second;
    --t.copies;
    if (job.error != 0 && t.status == 0) {
      t.status = job.error;
      t.detail = job.error_text;
    }
    if (t.tail && job.keep == t.tail) {
      if (t.kind == Kind::kOffload) {
        if (t.status == 0) tails_[t.tail_key] = t.tail;
      } else {
        // The tail belongs to this row's one preemption: restored, it is done.
        auto kept = tails_.find(t.tail_key);
        if (kept != tails_.end() && kept->second == t.tail) tails_.erase(kept);
      }
      t.tail.reset();
    }
    if (job.then_op != 0 && !t.complete) {
      // A failed copy commits nothing it half wrote (the protocol has no
      // abort: its reservation holds its slots until the connection
      // closes); a lease is still given back.
      if (job.error == 0 || job.then_op == CXLPOOL_KV_RELEASE) t.to_submit = job.then_op;
      else finish(t, job.error);
    }
    pump(t);
    settle(t);
  }
}

void Transfers::finish(Ticket& t, int error) {
  if (t.status == 0) t.status = error;
  t.complete = true;
  t.to_submit = 0;
}

void Transfers::settle(Ticket& t) {
  if (t.done || !t.complete || t.copies != 0) return;
  t.done = true;
  if (t.pinned) {
    arena_.unpin_row(t.row);
    t.pinned = false;
  }
}

void Transfers::pump(Ticket& t) {
  if (t.complete || t.in_flight || t.to_submit == 0) return;
  cxlpool_kv_request req{};
  req.user_data = kTag | (t.id & kIdMask);
  req.op = t.to_submit;
  req.namespace_id = t.ns.id;
  switch (t.to_submit) {
    case CXLPOOL_KV_PUT_BEGIN:
      t.batch = std::min(t.keys.size() - t.next, std::max<size_t>(t.max_batch, 1));
      req.keys = t.keys.data() + t.next;
      req.n_keys = static_cast<uint32_t>(t.batch);
      req.param0 = t.chunk_bytes;
      break;
    case CXLPOOL_KV_PUT_COMMIT:
      req.keys = t.commit_keys.data();
      req.n_keys = static_cast<uint32_t>(t.commit_keys.size());
      req.param0 = t.reservation;
      break;
    case CXLPOOL_KV_GET:
      req.keys = t.keys.data();
      req.n_keys = static_cast<uint32_t>(t.keys.size());
      break;
    case CXLPOOL_KV_RELEASE:
      req.param0 = t.lease;
      break;
    default:
      break;
  }
  const int rc = cxlpool_kv_submit(t.kv, &req, 1);
  if (rc == 1) {
    t.in_flight = true;
    t.to_submit = 0;
  } else if (rc != -EAGAIN && rc != 0) {
    finish(t, -rc);
  }
}

void Transfers::reap(cxlpool_kv* kv, int timeout_ms) {
  cxlpool_kv_completion out[kReapBatch];
  const int n = cxlpool_kv_reap(kv, out, kReapBatch, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const auto& c = out[i];
    // Locations are valid only until the next reap: handled right here.
    if ((c.user_data & ~kIdMask) != kTag) continue;
    auto it = tickets_.find(c.user_data & kIdMask);
    if (it == tickets_.end()) continue;
    Ticket& t = *it->second;
    t.in_flight = false;
    on_completion(t, c);
    pump(t);
    settle(t);
  }
}

void Transfers::on_completion(Ticket& t, const cxlpool_kv_completion& c) {
  if (t.complete) return;
  switch (c.op) {
    case CXLPOOL_KV_PUT_BEGIN:
      on_put_begin(t, c);
      return;
    case CXLPOOL_KV_PUT_COMMIT:
      if (c.status < 0) return finish(t, -c.status);
      t.next += t.batch;
      t.tokens_done = t.next * t.ns.chunk_tokens;
      if (t.next < t.keys.size()) {
        t.to_submit = CXLPOOL_KV_PUT_BEGIN;
      } else {
        t.tokens_done = t.tokens.size();
        finish(t, 0);
      }
      return;
    case CXLPOOL_KV_GET:
      on_get(t, c);
      return;
    case CXLPOOL_KV_RELEASE:
      finish(t, t.status);
      return;
    default:
      finish(t, EPROTO);
  }
}

void Transfers::on_put_begin(Ticket& t, const cxlpool_kv_completion& c) {
  if (c.status == -EAGAIN) {
    // The put window is busy: smaller batches, or the same one later.
    t.max_batch = std::max<size_t>(t.batch / 2, 1);
    t.to_submit = CXLPOOL_KV_PUT_BEGIN;
    return;
  }
  if (c.status < 0) return finish(t, -c.status);
  if (!arena_.row_active(t.row)) return finish(t, ENOENT);
  t.reservation = c.result0;
  t.commit_keys.clear();
  std::vector<CopySegment> segments;
  const size_t n = std::min<size_t>(c.n_locations, t.batch);
  for (size_t i = 0; i < n; ++i) {
    const auto& loc = c.locations[i];
    if (loc.flags & CXLPOOL_KV_LOC_CACHED) continue;
    if (loc.data == nullptr || loc.length < t.chunk_bytes) return finish(t, EPROTO);
    const uint32_t first = static_cast<uint32_t>((t.next + i) * t.ns.chunk_tokens);
    segments.push_back(CopySegment{false, first, t.ns.chunk_tokens, static_cast<uint8_t*>(loc.data)});
    t.commit_keys.push_back(t.keys[t.next + i]);
  }
  if (!segments.empty()) {
    // The slots stay ours until the commit, which goes once they are filled.
    copy(t, std::move(segments), CXLPOOL_KV_PUT_COMMIT);
    return;
  }
  // Every chunk of the batch is stored already: committing them writes
  // nothing and ends the reservation, which would otherwise hold its
  // put-window slots and count against the reservation limit until the
  // connection closes.
  t.commit_keys.assign(t.keys.begin() + t.next, t.keys.begin() + t.next + n);
  t.to_submit = CXLPOOL_KV_PUT_COMMIT;
}

void Transfers::on_get(Ticket& t, const cxlpool_kv_completion& c) {
  if (c.status < 0) return finish(t, -c.status);
  t.lease = c.result0;
  size_t good = 0;
  std::vector<CopySegment> segments;
  if (arena_.row_active(t.row)) {
    const size_t n = std::min<size_t>({c.n_locations, static_cast<size_t>(c.result1), t.keys.size()});
    for (; good < n; ++good) {
      const auto& loc = c.locations[good];
      // A chunk of another size is not this arena's layout: stop there.
      if (loc.data == nullptr || loc.length != t.chunk_bytes) break;
      // The lease keeps the chunk's bytes in place until released.
      segments.push_back(CopySegment{true, static_cast<uint32_t>(good * t.ns.chunk_tokens), t.ns.chunk_tokens,
                                     static_cast<uint8_t*>(const_cast<void*>(loc.data))});
    }
  } else {
    t.status = ENOENT;
  }
  t.tokens_done = good * t.ns.chunk_tokens;
  if (t.status == 0 && good == t.keys.size()) {
    const uint32_t full = full_tokens(t);
    const uint32_t count = static_cast<uint32_t>(t.tokens.size()) - full;
    auto it = tails_.find(t.tail_key);
    if (count == 0) {
      t.tokens_done = t.tokens.size();
    } else if (it != tails_.end() && it->second->tokens == count) {
      segments.push_back(CopySegment{true, full, count, it->second->addr});
      t.tail = it->second;
      t.tokens_done = t.tokens.size();
    }
  }
  const uint32_t then = t.lease != 0 ? CXLPOOL_KV_RELEASE : 0;
  if (!segments.empty()) {
    copy(t, std::move(segments), then, t.tail);
    if (then == 0) t.complete = true;
    return;
  }
  if (then != 0) {
    t.to_submit = then;
  } else {
    finish(t, t.status);
  }
}

Result<uint64_t> Transfers::poll(uint64_t ticket, int timeout_ms) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return fail(ENOENT, "kv arena: unknown ticket " + std::to_string(ticket));
  auto t = it->second;  // stays alive while completions of others are handled
  const uint64_t deadline = timeout_ms > 0 ? monotonic_ns() + uint64_t(timeout_ms) * 1000000 : 0;
  for (;;) {
    drain();
    pump(*t);
    settle(*t);
    if (!t->done) {
      int wait = 0;
      if (timeout_ms != 0) {
        // Short waits: a ticket waiting for ring room has nothing in flight.
        wait = t->in_flight || t->copies != 0 ? 10 : 1;
        if (timeout_ms > 0) {
          const uint64_t now = monotonic_ns();
          if (now >= deadline) wait = 0;
          else wait = static_cast<int>(std::min<uint64_t>(wait, (deadline - now) / 1000000 + 1));
        }
      }
      if (!t->in_flight && t->copies != 0) {
        // Only the copy thread can move this ticket on: wait for it, and
        // keep other tickets' completions moving.
        if (wait != 0) copier_.wait_done(wait);
        reap(t->kv, 0);
      } else {
        reap(t->kv, wait);
      }
      drain();
      settle(*t);
    }
    if (t->done) {
      tickets_.erase(ticket);
      if (t->status != 0) {
        return fail(t->status, std::string("kv arena: ") + (t->kind == Kind::kOffload ? "offload" : "restore") +
                                   " of reqid " + std::to_string(t->row) + " failed" +
                                   (t->detail.empty() ? "" : ": " + t->detail));
      }
      return t->tokens_done;
    }
    if (timeout_ms == 0 || (timeout_ms > 0 && monotonic_ns() >= deadline)) {
      return fail(EINPROGRESS, "kv arena: ticket still running");
    }
  }
}

}  // namespace cxlpool::client::arena
