// SPDX-License-Identifier: Apache-2.0
// A synthetic multi-turn chat trace through a running cxlpoold's KV store:
// hit rate and what the recompute-or-load model saves.
//
//   kvstore_trace_bench plan [--key value]...          trace statistics and
//                                                      working set, no daemon
//   kvstore_trace_bench run SOCKET [--key value]...    replay it
//
// The trace. Sessions have a log-normal number of turns, median 3 and mean 7
// (mu = ln 3, sigma = sqrt(2 ln(7/3)) = 1.30; rounded, at least 1, at most
// 128: the heavy tail of ShareGPT conversations). A turn adds a user message
// (log-normal tokens, median --user-median) and a reply (median
// --reply-median). Turn t's prompt is the whole conversation so far plus the
// new user message, so from the second turn on the history is most of the
// prompt (the statistics line prints its share). --concurrency sessions are
// open at once; each step picks one of them at random for its next turn, and
// a finished session makes room for a new one, so a session's next turn comes
// after about --concurrency other turns (what a server with that many live
// conversations sees). Token ids are random per session: no two sessions
// share a prefix (set --system-tokens to give every session the same system
// prompt).
//
// A turn through the store, as an inference server would do it: keys of the
// prompt's full chunks; lookup; cxlpool_kv_should_load on the cached prefix
// with the declared prefill rate decides the cut-off k; get + release chunks
// [0, k) (bytes checked); after the reply, put every full chunk of the
// conversation past k (put_begin skips the ones still cached).
//
// Sizes. The hit rate depends on how many chunks fit, not on their size, so
// the store holds --stored-chunk-bytes per chunk (the daemon's slot_bytes)
// while the cost model is given the chunk's real KV size, --chunk-tokens x
// --kv-bytes-per-token (default 32 KiB per token: 16 layers x 2 x 8 KV heads
// x 64 x bf16, a 1B-class GQA model). run-kvstore.sh sizes the DRAM arena at
// 10% of the working set that `plan` prints (every distinct chunk the trace
// stores).
//
// Savings: for each turn, the model's time with its decision vs recomputing
// the whole prompt (sum over turns), also for loading every cached chunk and
// for an unbounded DRAM cache (every chunk ever stored still there). Extra
// prefill rates in --prefill-tokens-per-s (comma-separated) are evaluated on
// the same lookups; the first one drives the loads.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kv_bench_util.hpp"

namespace {

using namespace kvbench;

constexpr int kMaxTurns = 128;
constexpr std::uint32_t kPutBatch = 128;

struct Turn {
  std::uint32_t user = 0;
  std::uint32_t reply = 0;
};

struct Session {
  std::vector<Turn> turns;
  std::size_t next_turn = 0;
  std::uint64_t seed = 0;
  std::vector<std::uint32_t> tokens;     // conversation so far
  std::vector<cxlpool_kv_key> keys;      // of its full chunks
  std::size_t stored = 0;                // chunks ever put (the unbounded cache's prefix)
};

struct TraceConfig {
  std::size_t sessions = 0, concurrency = 0;
  std::uint32_t chunk_tokens = 0, system_tokens = 0;
  double user_median = 0, reply_median = 0;
  std::uint64_t seed = 0;
};

std::uint32_t log_normal_tokens(std::mt19937_64& rng, double median, double sigma, std::uint32_t lo,
                                std::uint32_t hi) {
  std::lognormal_distribution<double> d(std::log(median), sigma);
  return static_cast<std::uint32_t>(std::clamp(std::lround(d(rng)), static_cast<long>(lo), static_cast<long>(hi)));
}

std::vector<Session> make_sessions(const TraceConfig& c) {
  std::mt19937_64 rng(c.seed);
  const double sigma = std::sqrt(2.0 * std::log(7.0 / 3.0));
  std::vector<Session> sessions(c.sessions);
  for (std::size_t s = 0; s < c.sessions; ++s) {
    const int turns = static_cast<int>(log_normal_tokens(rng, 3.0, sigma, 1, kMaxTurns));
    sessions[s].seed = mix64(c.seed * 1000003 + s);
    for (int t = 0; t < turns; ++t)
      sessions[s].turns.push_back({log_normal_tokens(rng, c.user_median, 1.0, 4, 4096),
                                   log_normal_tokens(rng, c.reply_median, 0.7, 8, 4096)});
  }
  return sessions;
}

// The order turns are served in: (session, turn) pairs.
std::vector<std::pair<std::size_t, std::size_t>> schedule(const std::vector<Session>& sessions, const TraceConfig& c) {
  std::mt19937_64 rng(c.seed ^ 0x5eed);
  std::vector<std::size_t> open;
  std::vector<std::size_t> next(sessions.size(), 0);
  std::size_t started = 0;
  std::vector<std::pair<std::size_t, std::size_t>> order;
  while (started < sessions.size() && open.size() < c.concurrency) open.push_back(started++);
  while (!open.empty()) {
    const std::size_t slot = std::uniform_int_distribution<std::size_t>(0, open.size() - 1)(rng);
    const std::size_t s = open[slot];
    order.emplace_back(s, next[s]++);
    if (next[s] == sessions[s].turns.size()) {
      if (started < sessions.size()) open[slot] = started++;
      else open.erase(open.begin() + static_cast<std::ptrdiff_t>(slot));
    }
  }
  return order;
}

struct TraceStats {
  std::size_t turns = 0;
  double mean_turns = 0, median_turns = 0;
  double prompt_tokens = 0, history_tokens = 0;  // sums over turns
  double history_share_mean = 0;                 // mean over turns of history / prompt
  std::uint64_t distinct_chunks = 0;             // working set, in chunks
};

TraceStats trace_stats(const std::vector<Session>& sessions, const TraceConfig& c) {
  TraceStats st;
  std::vector<double> turns;
  for (const auto& s : sessions) {
    turns.push_back(static_cast<double>(s.turns.size()));
    std::uint64_t history = c.system_tokens;
    for (const auto& t : s.turns) {
      const double prompt = static_cast<double>(history + t.user);
      st.prompt_tokens += prompt;
      st.history_tokens += static_cast<double>(history);
      st.history_share_mean += static_cast<double>(history) / prompt;
      history += t.user + t.reply;
      ++st.turns;
    }
    st.distinct_chunks += history / c.chunk_tokens;  // every full chunk is put once
  }
  // The shared system prompt's chunks are one set for all sessions.
  if (c.system_tokens >= c.chunk_tokens && !sessions.empty())
    st.distinct_chunks -= (sessions.size() - 1) * (c.system_tokens / c.chunk_tokens);
  st.history_share_mean /= static_cast<double>(st.turns);
  double sum = 0;
  for (double t : turns) sum += t;
  st.mean_turns = sum / static_cast<double>(turns.size());
  st.median_turns = percentile(turns, 0.5);
  return st;
}

void print_plan(const TraceStats& st, const TraceConfig& c, std::uint64_t stored_chunk_bytes) {
  std::printf("trace: %zu sessions, %zu turns, turns per session mean %.2f median %.0f; %zu open at once\n",
              c.sessions, st.turns, st.mean_turns, st.median_turns, c.concurrency);
  std::printf("prompt tokens mean %.0f; history = %.1f%% of prompt tokens (mean share per turn %.1f%%)\n",
              st.prompt_tokens / static_cast<double>(st.turns), 100.0 * st.history_tokens / st.prompt_tokens,
              100.0 * st.history_share_mean);
  std::printf("working set: %llu chunks of %u tokens = %.1f MiB stored\n",
              static_cast<unsigned long long>(st.distinct_chunks), c.chunk_tokens,
              static_cast<double>(st.distinct_chunks * stored_chunk_bytes) / (1 << 20));
  std::printf("PLAN working_set_chunks=%llu working_set_bytes=%llu turns=%zu mean_turns=%.2f median_turns=%.0f "
              "history_share=%.3f\n",
              static_cast<unsigned long long>(st.distinct_chunks),
              static_cast<unsigned long long>(st.distinct_chunks * stored_chunk_bytes), st.turns, st.mean_turns,
              st.median_turns, st.history_tokens / st.prompt_tokens);
}

std::vector<double> parse_rates(const std::string& list) {
  std::vector<double> rates;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) rates.push_back(std::strtod(item.c_str(), nullptr));
  return rates;
}

// Sums over turns of the modelled prefill time for one declared rate.
struct Savings {
  double rate = 0;
  double full = 0, decided = 0, load_all = 0, unbounded = 0;
  std::uint64_t chunks_loaded = 0;
};

class Replay {
 public:
  Replay(Connection& conn, const cxlpool_kv_namespace& ns, std::uint64_t stored_bytes, std::uint64_t modeled_bytes,
         std::vector<double> rates)
      : conn_(conn), ns_(ns), stored_bytes_(stored_bytes), modeled_bytes_(modeled_bytes), src_(stored_bytes) {
    for (double r : rates) savings_.push_back({r});
    modeled_.reserve(1);  // data() of an empty prefix is still a valid pointer
    for (std::uint64_t i = 0; i + 8 <= stored_bytes; i += 8) {
      const std::uint64_t w = mix64(i);
      std::memcpy(src_.data() + i, &w, 8);
    }
  }

  void turn(Session& s, const Turn& t, std::uint32_t system_tokens) {
    if (s.tokens.empty()) append(s, system_tokens, true);
    append(s, t.user, false);
    const std::uint64_t prompt = s.tokens.size();
    const std::uint32_t n = static_cast<std::uint32_t>(prompt / ns_.chunk_tokens);
    chunks_asked_ += n;
    tokens_asked_ += prompt;
    std::size_t reusable = s.stored;
    if (system_stored_) reusable = std::max<std::size_t>(reusable, system_tokens / ns_.chunk_tokens);
    const std::uint32_t ideal = static_cast<std::uint32_t>(std::min<std::size_t>(n, reusable));
    ideal_hits_ += ideal;

    const auto t0 = Clock::now();
    locs_.resize(std::max<std::uint32_t>(n, 1));
    const int hit = n == 0 ? 0 : cxlpool_kv_lookup(conn_.kv, ns_.id, s.keys.data(), n, locs_.data());
    if (hit < 0) die("cxlpool_kv_lookup", hit);
    hits_ += hit;
    for (int i = 0; i < hit; ++i) ++tier_hits_[std::min<int>(locs_[i].tier, 2)];

    std::uint32_t load = 0;
    for (std::size_t r = 0; r < savings_.size(); ++r) {
      const std::uint32_t k = account(savings_[r], prompt, static_cast<std::uint32_t>(hit), ideal);
      if (r == 0) load = k;
    }
    if (load > 0) {
      std::uint64_t lease = 0;
      const int got = cxlpool_kv_get(conn_.kv, ns_.id, s.keys.data(), load, &lease, locs_.data());
      if (got < 0) die("cxlpool_kv_get", got);
      for (int i = 0; i < got; ++i)
        if (locs_[i].data == nullptr || std::memcmp(locs_[i].data, &s.keys[i], sizeof(cxlpool_kv_key)) != 0)
          die("get: a chunk holds the wrong bytes", -EBADMSG);
      loaded_ += got;
      if (lease != 0)
        if (int rc = cxlpool_kv_release(conn_.kv, lease); rc != 0) die("cxlpool_kv_release", rc);
      if (static_cast<std::uint32_t>(got) < load) ++short_gets_;
    }
    load_path_us_.push_back(micros_since(t0));

    append(s, t.reply, false);
    put_from(s, load);
  }

  void report(const char* label) {
    const double chunk_rate = static_cast<double>(hits_) / static_cast<double>(chunks_asked_);
    const double token_rate =
        static_cast<double>(hits_) * ns_.chunk_tokens / static_cast<double>(tokens_asked_);
    const double ideal_rate = static_cast<double>(ideal_hits_) / static_cast<double>(chunks_asked_);
    const double hits = std::max<double>(1, static_cast<double>(hits_));
    std::printf("%s\n", label);
    std::printf("  hit rate: chunks %.1f%% (%llu of %llu), prompt tokens %.1f%%; unbounded cache: chunks %.1f%%\n",
                100 * chunk_rate, static_cast<unsigned long long>(hits_),
                static_cast<unsigned long long>(chunks_asked_), 100 * token_rate, 100 * ideal_rate);
    std::printf("  hits by tier: DRAM %.1f%%, CXL %.1f%%, SSD %.1f%%; chunks loaded %llu%s\n",
                100 * tier_hits_[0] / hits, 100 * tier_hits_[1] / hits, 100 * tier_hits_[2] / hits,
                static_cast<unsigned long long>(loaded_),
                short_gets_ ? " (some gets found less than lookup did)" : "");
    std::printf("  lookup+get+release per turn: p50 %.1f us, p99 %.1f us\n", percentile(load_path_us_, 0.5),
                percentile(load_path_us_, 0.99));
    std::printf("RESULT mode=trace chunk_hit_rate=%.4f token_hit_rate=%.4f unbounded_chunk_hit_rate=%.4f "
                "dram_share=%.4f cxl_share=%.4f ssd_share=%.4f\n",
                chunk_rate, token_rate, ideal_rate, tier_hits_[0] / hits, tier_hits_[1] / hits,
                tier_hits_[2] / hits);
    for (const auto& sv : savings_) {
      std::printf("  prefill %.0f tokens/s: full recompute %.2f s; with the model's cut-off %.2f s (saves %.1f%%), "
                  "loading every cached chunk %.2f s (saves %.1f%%), unbounded DRAM cache %.2f s (saves %.1f%%)\n",
                  sv.rate, sv.full, sv.decided, 100 * (1 - sv.decided / sv.full), sv.load_all,
                  100 * (1 - sv.load_all / sv.full), sv.unbounded, 100 * (1 - sv.unbounded / sv.full));
      std::printf("RESULT mode=trace-savings prefill_tokens_per_s=%.0f full_s=%.4f decided_s=%.4f load_all_s=%.4f "
                  "unbounded_s=%.4f saving=%.4f chunks_loaded=%llu\n",
                  sv.rate, sv.full, sv.decided, sv.load_all, sv.unbounded, 1 - sv.decided / sv.full,
                  static_cast<unsigned long long>(sv.chunks_loaded));
    }
  }

 private:
  // Appends `count` tokens of the session (or of the shared system prompt)
  // and the keys of the chunks they complete.
  void append(Session& s, std::uint32_t count, bool system) {
    const std::size_t begin = s.tokens.size();
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t stream = system ? 0x5157e3 : s.seed;
      s.tokens.push_back(static_cast<std::uint32_t>(mix64(stream + begin + i) % 128000));
    }
    const std::size_t have = s.keys.size();
    const std::size_t full = s.tokens.size() / ns_.chunk_tokens;
    if (full == have) return;
    s.keys.resize(full);
    const cxlpool_kv_key* parent = have == 0 ? nullptr : &s.keys[have - 1];
    const cxlpool_kv_key parent_copy = parent ? *parent : cxlpool_kv_key{};
    const int n = cxlpool_kv_compute_keys(&ns_, s.tokens.data() + have * ns_.chunk_tokens,
                                          (full - have) * ns_.chunk_tokens, parent ? &parent_copy : nullptr,
                                          s.keys.data() + have, full - have);
    if (n != static_cast<int>(full - have)) die("cxlpool_kv_compute_keys", n < 0 ? n : -EINVAL);
  }

  // The model's decision for one rate; returns the cut-off k.
  std::uint32_t account(Savings& sv, std::uint64_t prompt, std::uint32_t hit, std::uint32_t ideal) {
    cxlpool_kv_load_query q{};
    q.prompt_tokens = prompt;
    q.chunk_tokens = ns_.chunk_tokens;
    q.prefill_tokens_per_s = sv.rate;
    q.overlap = 0;
    modeled_.assign(locs_.begin(), locs_.begin() + hit);
    for (auto& c : modeled_) c.length = static_cast<std::uint32_t>(modeled_bytes_);
    q.chunks = modeled_.data();
    q.n_chunks = hit;
    cxlpool_kv_load_decision d{};
    if (int rc = cxlpool_kv_should_load(conn_.kv, &q, &d); rc < 0) die("cxlpool_kv_should_load", rc);
    sv.full += d.full_recompute_s;
    sv.decided += d.expected_s;
    sv.load_all += d.load_all_s;
    sv.chunks_loaded += d.load_chunks;

    modeled_.assign(ideal, cxlpool_kv_location{nullptr, 0, static_cast<std::uint32_t>(modeled_bytes_),
                                               CXLPOOL_KV_TIER_DRAM, 0});
    q.chunks = modeled_.data();
    q.n_chunks = ideal;
    cxlpool_kv_load_decision u{};
    if (int rc = cxlpool_kv_should_load(conn_.kv, &q, &u); rc < 0) die("cxlpool_kv_should_load", rc);
    sv.unbounded += u.expected_s;
    return d.load_chunks;
  }

  // Puts chunks [from, end) of the conversation, kPutBatch at a time.
  void put_from(Session& s, std::uint32_t from) {
    for (std::size_t first = from; first < s.keys.size(); first += kPutBatch) {
      const std::uint32_t n = static_cast<std::uint32_t>(std::min<std::size_t>(kPutBatch, s.keys.size() - first));
      slots_.resize(n);
      std::uint64_t reservation = 0;
      const int rc = cxlpool_kv_put_begin(conn_.kv, ns_.id, &s.keys[first], n, stored_bytes_, &reservation,
                                          slots_.data());
      if (rc < 0) die("cxlpool_kv_put_begin", rc);
      for (std::uint32_t i = 0; i < n; ++i) {
        if (slots_[i].flags & CXLPOOL_KV_LOC_CACHED) continue;
        std::memcpy(slots_[i].data, src_.data(), stored_bytes_);
        std::memcpy(slots_[i].data, &s.keys[first + i], sizeof(cxlpool_kv_key));
        ++puts_;
      }
      if (int c = cxlpool_kv_put_commit(conn_.kv, ns_.id, reservation, &s.keys[first], n); c < 0)
        die("cxlpool_kv_put_commit", c);
    }
    s.stored = std::max(s.stored, s.keys.size());
    system_stored_ = true;
  }

  Connection& conn_;
  cxlpool_kv_namespace ns_;
  std::uint64_t stored_bytes_, modeled_bytes_;
  std::vector<unsigned char> src_;
  std::vector<Savings> savings_;
  std::vector<cxlpool_kv_location> locs_, modeled_, slots_;
  std::vector<double> load_path_us_;
  std::uint64_t chunks_asked_ = 0, tokens_asked_ = 0, hits_ = 0, ideal_hits_ = 0, loaded_ = 0, puts_ = 0;
  std::uint64_t short_gets_ = 0;
  double tier_hits_[3] = {0, 0, 0};
  bool system_stored_ = false;  // some session has put the shared system prompt
};

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (!(cmd == "plan" && argc >= 2) && !(cmd == "run" && argc >= 3)) {
    std::fprintf(stderr,
                 "usage: %s plan|run SOCKET [--sessions N] [--concurrency N] [--chunk-tokens N]\n"
                 "       [--user-median T] [--reply-median T] [--system-tokens T] [--stored-chunk-bytes B]\n"
                 "       [--kv-bytes-per-token B] [--prefill-tokens-per-s R[,R...]] [--seed N]\n",
                 argv[0]);
    return 2;
  }
  const Options opt(argc, argv, cmd == "plan" ? 2 : 3,
                    {{"sessions", "1000"},
                     {"concurrency", "64"},
                     {"chunk-tokens", "64"},
                     {"user-median", "80"},
                     {"reply-median", "220"},
                     {"system-tokens", "0"},
                     {"stored-chunk-bytes", "16384"},
                     {"kv-bytes-per-token", "32768"},
                     {"prefill-tokens-per-s", "20000,100000"},
                     {"seed", "1"}});
  TraceConfig tc;
  tc.sessions = opt.u64("sessions");
  tc.concurrency = std::max<std::uint64_t>(1, opt.u64("concurrency"));
  tc.chunk_tokens = static_cast<std::uint32_t>(opt.u64("chunk-tokens"));
  tc.system_tokens = static_cast<std::uint32_t>(opt.u64("system-tokens"));
  tc.user_median = opt.f64("user-median");
  tc.reply_median = opt.f64("reply-median");
  tc.seed = opt.u64("seed");
  const std::uint64_t stored = opt.u64("stored-chunk-bytes");
  const std::uint64_t modeled = tc.chunk_tokens * opt.u64("kv-bytes-per-token");
  const auto rates = parse_rates(opt.str("prefill-tokens-per-s"));
  if (tc.sessions == 0 || tc.chunk_tokens == 0 || stored < 64 || rates.empty() || modeled > UINT32_MAX) {
    std::fprintf(stderr, "bad options: sessions, chunk-tokens >= 1, stored-chunk-bytes >= 64, a prefill rate, "
                         "chunk KV bytes < 4 GiB\n");
    return 2;
  }
  auto sessions = make_sessions(tc);
  const TraceStats st = trace_stats(sessions, tc);
  print_plan(st, tc, stored);
  if (cmd == "plan") return 0;

  Connection conn(argv[2], "kvstore-trace-bench");
  if (stored > conn.info.slot_bytes) {
    std::fprintf(stderr, "--stored-chunk-bytes %llu is larger than the store's slot (%llu)\n",
                 static_cast<unsigned long long>(stored), static_cast<unsigned long long>(conn.info.slot_bytes));
    return 2;
  }
  const auto ns = conn.open_namespace("kvstore-trace-bench", tc.chunk_tokens);
  std::printf("store: DRAM arena %.1f MiB = %.1f%% of the working set, CXL arena %.1f MiB, SSD tier %s; "
              "chunk KV modelled as %.2f MiB\n",
              static_cast<double>(conn.info.arena_bytes[0]) / (1 << 20),
              100.0 * static_cast<double>(conn.info.arena_bytes[0]) /
                  static_cast<double>(st.distinct_chunks * stored),
              static_cast<double>(conn.info.arena_bytes[1]) / (1 << 20),
              conn.info.tier_bandwidth_bps[2] ? "on" : "off", static_cast<double>(modeled) / (1 << 20));
  std::printf("tier rates from the daemon: DRAM %.0f MB/s, CXL %.0f MB/s, SSD %.0f MB/s + %.0f us per chunk\n",
              static_cast<double>(conn.info.tier_bandwidth_bps[0]) / 1e6,
              static_cast<double>(conn.info.tier_bandwidth_bps[1]) / 1e6,
              static_cast<double>(conn.info.tier_bandwidth_bps[2]) / 1e6,
              static_cast<double>(conn.info.tier_latency_ns[2]) / 1e3);
  Replay replay(conn, ns, stored, modeled, rates);
  const auto t0 = Clock::now();
  for (const auto& [s, t] : schedule(sessions, tc)) replay.turn(sessions[s], sessions[s].turns[t], tc.system_tokens);
  char label[128];
  std::snprintf(label, sizeof label, "replayed in %.1f s", seconds_since(t0));
  replay.report(label);
  return 0;
}
