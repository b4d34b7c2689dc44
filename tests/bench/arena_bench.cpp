// SPDX-License-Identifier: Apache-2.0
// The KV arena (kv_arena.h) on a running cxlpoold, host backend (or the cuda
// backend with --cuda 1). Run by tests/bench/run-arena.sh (host) and
// tests/bench/run-cuda-client.sh (cuda), which start the daemon;
// docs/perf.md ("KV arena", "GPU") has the results.
//
//   arena_bench SOCKET MODE [--key value]...
//
// Modes:
//   step    decode at --batch rows: every step grows each row by one token
//           and the "model" writes that token's K and V into every layer.
//           Requests come and go (prompt and output lengths uniform in
//           [--min-len, --max-len]); a finished row is freed and a new
//           request takes a row. Reports the time one step() call costs
//           (mean, p50, p99, max) and the same for step_async() + wait()
//           with --compute-us of simulated compute between them.
//   mapbw   maps --rows rows from empty to --context tokens in one step:
//           bytes mapped per second of step(), and per second of caller
//           stall with step_async() overlapped with --compute-us of work
//           per step at decode-like growth (--grow tokens per step).
//           Host pages are populated on first touch: --touch 1 also writes
//           one byte per 4 KiB after mapping and reports that rate too.
//   demand  the step workload twice in the same run: with memory mapped on
//           demand, and with every row mapped to --context up front
//           (preallocation); tokens/s of both and the mapped bytes (mean
//           and peak) of on-demand against the preallocated arena.
//   offload a decode loop over --batch rows (each iteration: every row grows
//           a token, step(), the token's K and V written, --compute-us of
//           compute) while one more row of --offload-len tokens goes to the
//           KV store and comes back (--chunk tokens per store chunk,
//           --cycles times, new token ids each time). The caller's time per
//           iteration (all but the compute) without any transfer, with the
//           transfers overlapped (begin, then a poll(0) per iteration), and
//           with each transfer waited for inside one iteration (begin +
//           poll(-1): no overlap). Then offload and restore alone, bytes per
//           second against a memcpy of the same bytes.
// Shape: --layers, --kv-heads, --head-dim, --dtype (bytes), --context,
// --page (bytes), --region (bytes).
// --cuda 1: the arena is device memory on CUDA device 0 (every mode; mapbw
// without --touch). The "model's" token writes are left out there: on a
// GPU they are the attention kernels' stores, not host work between steps;
// offload and restore copy through the GPU's copy engine, and the row's
// bytes are whatever the device memory held.
// The last line is "RESULT mode=... key=value ..." for scripts.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "cxlpool/kv_arena.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode;
  uint32_t layers = 8, kv_heads = 8, head_dim = 128, dtype = 2;
  uint32_t batch = 256, context = 2048, rows = 64, grow = 16;
  uint64_t page = 2ull << 20, region = 64ull << 20;
  uint32_t steps = 2000, min_len = 64, max_len = 1000;
  uint32_t compute_us = 200;
  uint32_t offload_len = 2000, chunk = 32, cycles = 5;
  int touch = 0;
  int cuda = 0;
  uint64_t seed = 1;
};

// --name value: every numeric option, by the member it sets.
bool set_option(Options& o, std::string_view name, uint64_t v) {
  static constexpr std::pair<std::string_view, uint32_t Options::*> kU32[] = {
      {"--layers", &Options::layers},         {"--kv-heads", &Options::kv_heads},
      {"--head-dim", &Options::head_dim},     {"--dtype", &Options::dtype},
      {"--batch", &Options::batch},           {"--rows", &Options::rows},
      {"--context", &Options::context},       {"--grow", &Options::grow},
      {"--steps", &Options::steps},           {"--min-len", &Options::min_len},
      {"--max-len", &Options::max_len},       {"--compute-us", &Options::compute_us},
      {"--offload-len", &Options::offload_len}, {"--chunk", &Options::chunk},
      {"--cycles", &Options::cycles}};
  static constexpr std::pair<std::string_view, uint64_t Options::*> kU64[] = {
      {"--page", &Options::page}, {"--region", &Options::region}, {"--seed", &Options::seed}};
  static constexpr std::pair<std::string_view, int Options::*> kFlags[] = {
      {"--touch", &Options::touch}, {"--cuda", &Options::cuda}};
  for (const auto& [n, m] : kU32) {
    if (n == name) return (o.*m = uint32_t(v)), true;
  }
  for (const auto& [n, m] : kU64) {
    if (n == name) return (o.*m = v), true;
  }
  for (const auto& [n, m] : kFlags) {
    if (n == name) return (o.*m = int(v)), true;
  }
  return false;
}

[[noreturn]] void die(const char* what, int rc) {
  std::fprintf(stderr, "arena_bench: %s: %s (%s)\n", what, std::strerror(-rc), cxlpool_last_error());
  std::exit(1);
}

void ok(int rc, const char* what) {
  if (rc < 0) die(what, rc);
}

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void spin_us(uint32_t us) {
  const auto end = Clock::now() + std::chrono::microseconds(us);
  while (Clock::now() < end) {
  }
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

cxlpool_kv_arena* make_arena(cxlpool_client* client, const Options& o, uint32_t rows, uint32_t async) {
  cxlpool_kv_arena_config c{};
  c.layers = o.layers;
  c.kv_heads = o.kv_heads;
  c.head_dim = o.head_dim;
  c.dtype_bytes = o.dtype;
  c.max_batch = rows;
  c.max_context = o.context;
  c.page_bytes = o.page;
  c.layout = CXLPOOL_ARENA_LAYOUT_PER_LAYER;
  c.backend = o.cuda != 0 ? CXLPOOL_ARENA_BACKEND_CUDA : CXLPOOL_ARENA_BACKEND_HOST;
  c.device = 0;
  c.tier_id = UINT32_MAX;
  c.region_bytes = o.region;
  c.async = async;
  cxlpool_kv_arena* a = nullptr;
  ok(cxlpool_kv_arena_create(client, &c, &a), "create arena");
  return a;
}

cxlpool_kv_arena_stats stats(cxlpool_kv_arena* a) {
  cxlpool_kv_arena_stats s{};
  ok(cxlpool_kv_arena_get_stats(a, &s), "stats");
  return s;
}

// The decode workload: rows of requests with a prompt and an output length.
// Every K and V tensor's base in layer order, and the strides they share.
void read_tensors(cxlpool_kv_arena* arena, uint32_t layers, std::vector<uint8_t*>& bases, uint64_t& row_stride,
                  uint64_t& token_bytes) {
  for (uint32_t l = 0; l < layers; ++l) {
    for (uint32_t k = 0; k < 2; ++k) {
      cxlpool_kv_arena_tensor t{};
      ok(cxlpool_kv_arena_get_tensor(arena, l, k, &t), "tensor");
      bases.push_back(reinterpret_cast<uint8_t*>(t.base));
      row_stride = t.row_stride;
      token_bytes = t.token_stride;
    }
  }
}

struct Workload {
  const Options& o;
  cxlpool_kv_arena* arena;
  std::vector<uint8_t*> bases;  // per tensor (layer, K/V)
  uint64_t row_stride = 0, token_bytes = 0;
  std::vector<uint32_t> seq, end;
  std::vector<uint8_t> token;  // one token's K or V
  std::mt19937_64 rng;
  uint64_t tokens = 0;

  Workload(const Options& opts, cxlpool_kv_arena* a) : o(opts), arena(a), rng(opts.seed) {
    read_tensors(arena, o.layers, bases, row_stride, token_bytes);
    token.assign(token_bytes, 0x11);
    seq.assign(o.batch, 0);
    end.assign(o.batch, 0);
  }

  uint32_t length() { return o.min_len + static_cast<uint32_t>(rng() % (o.max_len - o.min_len + 1)); }

  // Rows whose request is done get a new one: free, alloc, prompt length.
  void refill() {
    for (uint32_t r = 0; r < o.batch; ++r) {
      if (end[r] != 0 && seq[r] < end[r]) continue;
      if (end[r] != 0) ok(cxlpool_kv_arena_free_reqid(arena, r), "free reqid");
      uint32_t id = 0;
      ok(cxlpool_kv_arena_alloc_reqid(arena, &id), "alloc reqid");
      // Rows are freed and taken back one at a time, so the id is r.
      if (id != r) die("alloc returned another row", -EPROTO);
      seq[r] = std::min(length(), o.context - 1);
      end[r] = std::min(seq[r] + length(), o.context);
    }
  }

  // The model's writes for the newest token of every row (prefill's writes
  // are left out: decode is what the arena serves step after step).
  void write_tokens() {
    for (uint32_t r = 0; r < o.batch && o.cuda == 0; ++r) {
      const uint64_t off = r * row_stride + uint64_t(seq[r] - 1) * token_bytes;
      for (auto* b : bases) std::memcpy(b + off, token.data(), token_bytes);
    }
    tokens += o.batch;
  }

  void advance() {
    for (uint32_t r = 0; r < o.batch; ++r) ++seq[r];
  }
};

// One decode run: per step refill, grow, step (sync or async), write.
struct StepRun {
  std::vector<double> step_us;
  double seconds = 0;
  uint64_t tokens = 0;
  double mapped_mean = 0;
  uint64_t mapped_peak = 0;
  cxlpool_kv_arena_stats end{};
};

StepRun run_steps(const Options& o, cxlpool_kv_arena* arena, bool async, bool prealloc) {
  Workload w(o, arena);
  StepRun out;
  if (prealloc) {
    std::vector<uint32_t> full(o.batch, o.context);
    for (uint32_t r = 0; r < o.batch; ++r) {
      uint32_t id = 0;
      ok(cxlpool_kv_arena_alloc_reqid(arena, &id), "alloc reqid");
    }
    ok(cxlpool_kv_arena_step(arena, full.data(), full.size()), "preallocate");
    for (uint32_t r = 0; r < o.batch; ++r) ok(cxlpool_kv_arena_free_reqid(arena, r), "free reqid");
  }
  w.refill();
  ok(cxlpool_kv_arena_step(arena, w.seq.data(), w.seq.size()), "first step");
  double mapped_sum = 0;
  const auto t0 = Clock::now();
  for (uint32_t i = 0; i < o.steps; ++i) {
    w.refill();
    w.advance();
    if (async) {
      // The next step's memory is mapped while this one computes.
      const auto s0 = Clock::now();
      ok(cxlpool_kv_arena_step_async(arena, w.seq.data(), w.seq.size()), "step_async");
      double stall = us_since(s0);
      spin_us(o.compute_us);
      const auto s1 = Clock::now();
      ok(cxlpool_kv_arena_wait(arena), "wait");
      stall += us_since(s1);
      out.step_us.push_back(stall);
    } else {
      const auto s0 = Clock::now();
      ok(cxlpool_kv_arena_step(arena, w.seq.data(), w.seq.size()), "step");
      out.step_us.push_back(us_since(s0));
      spin_us(o.compute_us);
    }
    w.write_tokens();
    const auto s = stats(arena);
    mapped_sum += static_cast<double>(s.mapped_bytes);
    out.mapped_peak = std::max(out.mapped_peak, s.mapped_bytes);
  }
  out.seconds = us_since(t0) / 1e6;
  out.tokens = w.tokens;
  out.mapped_mean = mapped_sum / o.steps;
  out.end = stats(arena);
  return out;
}

void mode_step(cxlpool_client* client, const Options& o) {
  std::map<std::string, StepRun> runs;
  for (bool async : {false, true}) {
    cxlpool_kv_arena* a = make_arena(client, o, o.batch, async ? 1 : 0);
    auto r = run_steps(o, a, async, false);
    cxlpool_kv_arena_destroy(a);
    std::printf("%-6s step: mean %.2f us  p50 %.2f  p99 %.2f  max %.1f  (%u steps at batch %u, %lu maps, "
                "%.1f ms mapping)\n",
                async ? "async" : "sync", mean(r.step_us), pct(r.step_us, 0.5), pct(r.step_us, 0.99),
                pct(r.step_us, 1.0), o.steps, o.batch, (unsigned long)r.end.maps, r.end.map_ns_total / 1e6);
    runs[async ? "async" : "sync"] = std::move(r);
  }
  const auto& s = runs["sync"];
  const auto& a = runs["async"];
  std::printf("RESULT mode=step backend=%s batch=%u sync_mean_us=%.2f sync_p99_us=%.2f sync_max_us=%.1f async_mean_us=%.2f "
              "async_p99_us=%.2f async_max_us=%.1f\n",
              o.cuda != 0 ? "cuda" : "host", o.batch, mean(s.step_us), pct(s.step_us, 0.99), pct(s.step_us, 1.0), mean(a.step_us),
              pct(a.step_us, 0.99), pct(a.step_us, 1.0));
}

void touch(cxlpool_kv_arena* a, const Options& o, uint32_t rows) {
  for (uint32_t l = 0; l < o.layers; ++l) {
    for (uint32_t k = 0; k < 2; ++k) {
      cxlpool_kv_arena_tensor t{};
      ok(cxlpool_kv_arena_get_tensor(a, l, k, &t), "tensor");
      for (uint32_t r = 0; r < rows; ++r) {
        auto* p = reinterpret_cast<volatile uint8_t*>(t.base + r * t.row_stride);
        for (uint64_t b = 0; b < uint64_t(o.context) * t.token_stride; b += 4096) p[b] = 1;
      }
    }
  }
}

void mode_mapbw(cxlpool_client* client, const Options& o) {
  // 1. One step maps everything: the backend's raw rate.
  cxlpool_kv_arena* a = make_arena(client, o, o.rows, 0);
  std::vector<uint32_t> seq(o.rows, 0);
  for (uint32_t r = 0; r < o.rows; ++r) {
    uint32_t id = 0;
    ok(cxlpool_kv_arena_alloc_reqid(a, &id), "alloc");
    seq[id] = o.context;
  }
  auto t0 = Clock::now();
  ok(cxlpool_kv_arena_step(a, seq.data(), seq.size()), "step");
  const double step_s = us_since(t0) / 1e6;
  auto s = stats(a);
  const double bulk_gbs = s.mapped_bytes / step_s / 1e9;
  const double map_only_gbs = s.mapped_bytes / (s.map_ns_total / 1e9) / 1e9;
  double touch_gbs = 0;
  if (o.touch != 0) {
    t0 = Clock::now();
    touch(a, o, o.rows);
    touch_gbs = s.mapped_bytes / (us_since(t0) / 1e6) / 1e9;
  }
  std::printf("bulk: %.2f GiB mapped in %.1f ms: %.2f GB/s per step() time, %.2f GB/s inside map calls, "
              "%lu maps of %lu KiB%s\n",
              s.mapped_bytes / double(1 << 30), step_s * 1e3, bulk_gbs, map_only_gbs, (unsigned long)s.maps,
              (unsigned long)(o.page >> 10),
              o.touch ? (", first touch " + std::to_string(touch_gbs) + " GB/s").c_str() : "");
  cxlpool_kv_arena_destroy(a);

  // 2. Decode-like growth: --grow tokens per row and step, --compute-us of
  // work per step; what the caller waits for, without and with the worker.
  double stall_gbs[2] = {0, 0};
  double stall_ms[2] = {0, 0};
  for (int async = 0; async < 2; ++async) {
    cxlpool_kv_arena* b = make_arena(client, o, o.rows, async);
    std::vector<uint32_t> len(o.rows, 0);
    for (uint32_t r = 0; r < o.rows; ++r) {
      uint32_t id = 0;
      ok(cxlpool_kv_arena_alloc_reqid(b, &id), "alloc");
    }
    double stall_us = 0;
    for (uint32_t t = o.grow; t <= o.context; t += o.grow) {
      std::fill(len.begin(), len.end(), t);
      const auto c0 = Clock::now();
      if (async) {
        ok(cxlpool_kv_arena_step_async(b, len.data(), len.size()), "step_async");
        stall_us += us_since(c0);
        spin_us(o.compute_us);
        const auto c1 = Clock::now();
        ok(cxlpool_kv_arena_wait(b), "wait");
        stall_us += us_since(c1);
      } else {
        ok(cxlpool_kv_arena_step(b, len.data(), len.size()), "step");
        stall_us += us_since(c0);
        spin_us(o.compute_us);
      }
    }
    const auto st = stats(b);
    stall_ms[async] = stall_us / 1e3;
    stall_gbs[async] = st.mapped_bytes / (stall_us / 1e6) / 1e9;
    std::printf("%-5s growth: %.2f GiB mapped, caller stalled %.1f ms: %.2f GB/s per stall second\n",
                async ? "async" : "sync", st.mapped_bytes / double(1 << 30), stall_ms[async], stall_gbs[async]);
    cxlpool_kv_arena_destroy(b);
  }
  std::printf("RESULT mode=mapbw backend=%s page_kib=%lu bulk_gbs=%.2f map_only_gbs=%.2f touch_gbs=%.2f sync_gbs=%.2f "
              "async_gbs=%.2f sync_stall_ms=%.1f async_stall_ms=%.1f\n",
              o.cuda != 0 ? "cuda" : "host", (unsigned long)(o.page >> 10), bulk_gbs, map_only_gbs,
              touch_gbs, stall_gbs[0], stall_gbs[1],
              stall_ms[0], stall_ms[1]);
}

void mode_demand(cxlpool_client* client, const Options& o) {
  StepRun runs[2];
  for (int prealloc = 0; prealloc < 2; ++prealloc) {
    cxlpool_kv_arena* a = make_arena(client, o, o.batch, 1);
    runs[prealloc] = run_steps(o, a, true, prealloc == 1);
    cxlpool_kv_arena_destroy(a);
    const auto& r = runs[prealloc];
    std::printf("%-11s %.0f tokens/s, mapped mean %.2f GiB, peak %.2f GiB\n",
                prealloc ? "preallocate" : "on-demand", r.tokens / r.seconds, r.mapped_mean / double(1 << 30),
                r.mapped_peak / double(1 << 30));
  }
  const double saved = 1.0 - runs[0].mapped_mean / static_cast<double>(runs[1].mapped_peak);
  const double ratio = (runs[0].tokens / runs[0].seconds) / (runs[1].tokens / runs[1].seconds);
  std::printf("RESULT mode=demand batch=%u demand_tok_s=%.0f prealloc_tok_s=%.0f throughput_ratio=%.3f "
              "demand_mean_gib=%.2f demand_peak_gib=%.2f prealloc_gib=%.2f saved_pct=%.1f\n",
              o.batch, runs[0].tokens / runs[0].seconds, runs[1].tokens / runs[1].seconds, ratio,
              runs[0].mapped_mean / double(1 << 30), runs[0].mapped_peak / double(1 << 30),
              runs[1].mapped_peak / double(1 << 30), saved * 100);
}

// One row's KV to the store and back, against a decode loop over the rest.
struct OffloadBench {
  const Options& o;
  cxlpool_kv_arena* arena = nullptr;
  cxlpool_kv* kv = nullptr;
  cxlpool_kv_namespace ns{};
  std::vector<uint8_t*> bases;
  uint64_t row_stride = 0, token_bytes = 0;
  std::vector<uint32_t> seq;
  uint32_t big = 0;  // the row that is offloaded and restored
  std::vector<uint8_t> token;

  OffloadBench(const Options& opts, cxlpool_client* client) : o(opts) {
    arena = make_arena(client, o, o.batch + 1, 0);
    ok(cxlpool_kv_open(client, nullptr, &kv), "kv open");
    cxlpool_kv_namespace_spec spec{};
    spec.model_id = "arena-bench";
    spec.layout = "cxlpool-arena";
    spec.dtype = "bf16";
    spec.tp_size = 1;
    spec.chunk_tokens = o.chunk;
    ok(cxlpool_kv_namespace_open(kv, &spec, &ns), "kv namespace");
    read_tensors(arena, o.layers, bases, row_stride, token_bytes);
    token.assign(token_bytes, 0x22);
    seq.assign(o.batch + 1, 0);
    for (uint32_t r = 0; r <= o.batch; ++r) {
      uint32_t id = 0;
      ok(cxlpool_kv_arena_alloc_reqid(arena, &id), "alloc reqid");
      seq[id] = r == o.batch ? o.offload_len : o.min_len;
      if (r == o.batch) big = id;
    }
    ok(cxlpool_kv_arena_step(arena, seq.data(), seq.size()), "first step");
    if (o.cuda == 0) {
      for (auto* b : bases) std::memset(b + big * row_stride, 0x5A, uint64_t(o.offload_len) * token_bytes);
    }
  }
  ~OffloadBench() {
    cxlpool_kv_arena_destroy(arena);
    cxlpool_kv_close(kv);
  }

  uint64_t row_bytes() const { return uint64_t(o.offload_len) * token_bytes * bases.size(); }

  std::vector<uint32_t> tokens(uint32_t cycle) const {
    std::vector<uint32_t> out(o.offload_len);
    for (uint32_t i = 0; i < o.offload_len; ++i) out[i] = (cycle * 1000003u + i * 7919u + 11) % 60000;
    return out;
  }

  // One decode iteration; `between` runs after the step (the transfer's
  // poll). Returns the caller's time without the compute.
  template <typename F>
  double iterate(F&& between) {
    const auto t0 = Clock::now();
    for (uint32_t r = 0; r < seq.size(); ++r) {
      if (r != big && seq[r] < o.context) ++seq[r];
    }
    ok(cxlpool_kv_arena_step(arena, seq.data(), seq.size()), "step");
    for (uint32_t r = 0; r < seq.size() && o.cuda == 0; ++r) {
      if (r == big) continue;
      const uint64_t off = r * row_stride + uint64_t(seq[r] - 1) * token_bytes;
      for (auto* b : bases) std::memcpy(b + off, token.data(), token_bytes);
    }
    between();
    const double us = us_since(t0);
    spin_us(o.compute_us);
    return us;
  }

  uint64_t begin(bool restore, const std::vector<uint32_t>& toks) {
    uint64_t ticket = 0;
    if (restore) {
      ok(cxlpool_kv_arena_restore_begin(arena, kv, &ns, big, toks.data(), toks.size(), &ticket), "restore begin");
    } else {
      ok(cxlpool_kv_arena_offload_begin(arena, kv, &ns, big, toks.data(), toks.size(), &ticket), "offload begin");
    }
    return ticket;
  }

  // Returns true when the ticket finished; checks a restore got everything.
  bool poll(uint64_t ticket, int timeout_ms, bool restore) {
    uint64_t n = 0;
    const int rc = cxlpool_kv_arena_offload_poll(arena, ticket, timeout_ms, &n);
    if (rc == -EINPROGRESS) return false;
    ok(rc, restore ? "restore" : "offload");
    if (n != o.offload_len) die("transfer moved fewer tokens than asked", -EIO);
    return true;
  }
};

void mode_offload(cxlpool_client* client, const Options& o) {
  OffloadBench b(o, client);
  const double mib = b.row_bytes() / double(1 << 20);
  std::printf("row of %u tokens: %.1f MiB in %u-token chunks; decode over %u rows, %u us compute per iteration\n",
              o.offload_len, mib, o.chunk, o.batch, o.compute_us);
  // Warm-up: offloads that fill the store's DRAM once, so that what is
  // measured reuses faulted-in slots and put window pages, as a running
  // server's store does.
  for (uint32_t c = 0; c < o.cycles; ++c) {
    const auto toks = b.tokens(1000 + c);
    b.poll(b.begin(false, toks), -1, false);
  }
  // 1. No transfer.
  std::vector<double> none;
  for (uint32_t i = 0; i < o.steps; ++i) none.push_back(b.iterate([] {}));
  // 2. Overlapped: the copies run on the arena's copy thread while the
  // loop goes on; each iteration polls once.
  std::vector<double> during;
  std::vector<double> overlap_ms[2];
  uint32_t iters_per[2] = {0, 0};
  for (uint32_t c = 0; c < o.cycles; ++c) {
    const auto toks = b.tokens(c);
    for (int restore = 0; restore < 2; ++restore) {
      const auto t0 = Clock::now();
      const uint64_t ticket = b.begin(restore != 0, toks);
      bool fin = false;
      while (!fin) {
        during.push_back(b.iterate([&] { fin = b.poll(ticket, 0, restore != 0); }));
        ++iters_per[restore];
      }
      overlap_ms[restore].push_back(us_since(t0) / 1e3);
    }
  }
  // 3. Not overlapped: the iteration that starts a transfer waits for it.
  std::vector<double> blocking, blocked_ms[2];
  for (uint32_t c = 0; c < o.cycles; ++c) {
    const auto toks = b.tokens(o.cycles + c);
    for (int restore = 0; restore < 2; ++restore) {
      const auto t0 = Clock::now();
      blocking.push_back(b.iterate([&] { b.poll(b.begin(restore != 0, toks), -1, restore != 0); }));
      blocked_ms[restore].push_back(us_since(t0) / 1e3);
    }
  }
  // 4. Alone, against memcpy of the same bytes (both buffers touched first).
  std::vector<double> alone_gbs[2], memcpy_gbs;
  std::vector<uint8_t> src(b.row_bytes(), 1), dst(b.row_bytes(), 2);
  for (uint32_t c = 0; c < o.cycles; ++c) {
    const auto toks = b.tokens(2 * o.cycles + c);
    for (int restore = 0; restore < 2; ++restore) {
      const auto t0 = Clock::now();
      b.poll(b.begin(restore != 0, toks), -1, restore != 0);
      alone_gbs[restore].push_back(b.row_bytes() / (us_since(t0) / 1e6) / 1e9);
    }
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    memcpy_gbs.push_back(b.row_bytes() / (us_since(t0) / 1e6) / 1e9);
    src[c] = dst[c + 1];  // keeps the copies from being folded together
  }
  const double base = mean(none);
  std::printf("no transfer:  iteration mean %.1f us  p99 %.1f  max %.1f\n", base, pct(none, 0.99), pct(none, 1.0));
  std::printf("overlapped:   iteration mean %.1f us  p99 %.1f  max %.1f over %zu iterations with a transfer in "
              "flight (%.1f per offload, %.1f per restore); offload %.1f ms, restore %.1f ms begin to done\n",
              mean(during), pct(during, 0.99), pct(during, 1.0), during.size(), iters_per[0] / double(o.cycles),
              iters_per[1] / double(o.cycles), pct(overlap_ms[0], 0.5), pct(overlap_ms[1], 0.5));
  std::printf("not overlapped: the iteration that waits: mean %.1f us (offload %.1f ms, restore %.1f ms)\n",
              mean(blocking), pct(blocked_ms[0], 0.5), pct(blocked_ms[1], 0.5));
  // What the loop lost to the transfers, per transfer: the extra caller
  // time over the iterations they spanned.
  const double lost_overlap = (mean(during) - base) * during.size() / (2.0 * o.cycles) / 1e3;
  const double lost_blocking = mean(blocking) / 1e3 - base / 1e3;
  std::printf("caller time lost per transfer: overlapped %.2f ms, not overlapped %.2f ms\n", lost_overlap,
              lost_blocking);
  std::printf("alone (median): offload %.2f GB/s, restore %.2f GB/s, memcpy of the same %.1f MiB %.2f GB/s\n",
              pct(alone_gbs[0], 0.5), pct(alone_gbs[1], 0.5), mib, pct(memcpy_gbs, 0.5));
  std::printf("RESULT mode=offload batch=%u row_mib=%.1f base_mean_us=%.1f base_p99_us=%.1f overlap_mean_us=%.1f "
              "overlap_p99_us=%.1f overlap_max_us=%.1f blocking_mean_us=%.1f lost_overlap_ms=%.2f "
              "lost_blocking_ms=%.2f offload_gbs=%.2f restore_gbs=%.2f memcpy_gbs=%.2f offload_ratio=%.2f "
              "restore_ratio=%.2f\n",
              o.batch, mib, base, pct(none, 0.99), mean(during), pct(during, 0.99), pct(during, 1.0), mean(blocking),
              lost_overlap, lost_blocking, pct(alone_gbs[0], 0.5), pct(alone_gbs[1], 0.5), pct(memcpy_gbs, 0.5),
              pct(alone_gbs[0], 0.5) / pct(memcpy_gbs, 0.5), pct(alone_gbs[1], 0.5) / pct(memcpy_gbs, 0.5));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: arena_bench SOCKET step|mapbw|demand|offload [--key value]...\n");
    return 2;
  }
  Options o;
  o.mode = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!set_option(o, argv[i], std::strtoull(argv[i + 1], nullptr, 0))) {
      std::fprintf(stderr, "arena_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (o.min_len == 0 || o.max_len < o.min_len || o.context < 2 || o.offload_len > o.context || o.chunk == 0 ||
      o.cycles == 0) {
    std::fprintf(stderr, "arena_bench: bad lengths\n");
    return 2;
  }
  if (o.cuda != 0 && o.touch != 0) {
    std::fprintf(stderr, "arena_bench: --cuda 1 and --touch 1 do not go together (device pages)\n");
    return 2;
  }
  cxlpool_client* client = nullptr;
  ok(cxlpool_connect(argv[1], "arena-bench", &client), "connect");
  if (o.mode == "step") mode_step(client, o);
  else if (o.mode == "mapbw") mode_mapbw(client, o);
  else if (o.mode == "demand") mode_demand(client, o);
  else if (o.mode == "offload") mode_offload(client, o);
  else {
    std::fprintf(stderr, "arena_bench: unknown mode %s\n", o.mode.c_str());
    return 2;
  }
  cxlpool_disconnect(client);
  return 0;
}
