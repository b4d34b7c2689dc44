// SPDX-License-Identifier: Apache-2.0
// KV-store data path through a running cxlpoold, with the client C ABI
// (cxlpool/kv.h). tests/bench/run-kvstore.sh starts the daemon with the
// configuration each mode needs and runs the baselines (fio, redis) in the
// same run; docs/perf.md has the results.
//
//   kvstore_bench SOCKET MODE [--key value]...
//
// Modes:
//   latency  lookup + get + release of one 16-chunk prefix held in DRAM,
//            p50/p99/p99.9 over --iterations: as three blocking calls (three
//            ring round trips), and batched (the previous lease's release,
//            the lookup and the get in one submit: one round trip), and as
//            get + cxlpool_kv_release_nowait (no lookup; the release is not
//            waited for: one round trip, the API's unbatched form); the
//            same percentiles for a one-key lookup miss (one round trip with
//            no store work) as the reference in the same run.
//   put      --chunks distinct 2 MiB chunks with --qd puts in flight:
//            put_begin, write the chunk into the put-window slot, commit.
//            The write is cxlpool_kv_put's (--checksums auto): with one put
//            in flight cxlpool_kv_copy_chunk, whose CRC-32C the commit
//            declares (CXLPOOL_KV_COMMIT_CHECKSUMS), else a memcpy, the
//            daemon taking any CRC itself; --checksums 1 / 0 force either.
//            The first DRAM-full (+ qd) is an untimed warm-up, so timed puts
//            find the arena full. --write 0 writes only the key stamps, for
//            a producer that puts the bytes there itself (a DMA engine):
//            what is left is the store's own cost. --clients N: N writers,
//            each a thread with a connection of its own and its own keys,
//            --chunks and --qd each; every one warms up, then all start
//            the timed puts together, and the rate is of all their puts
//            over the span from the first start to the last finish.
//            --tenants 1: each writer in a namespace of its own, so that
//            a full arena hands slots from one namespace to another (the
//            old view punched, the new one faulted in) as tenants do.
//   get      puts --chunks chunks, then gets them in a shuffled order with
//            --qd in flight; each get copies the chunk out of the arena
//            (--copy 1, what a consumer that is not a DMA engine pays) and
//            releases the lease.
//   ssd-put  like put, for a daemon whose chunks go to SSD (tiny DRAM, no
//            CXL arena, admission_threshold 1): each timed put evicts one
//            chunk to the SSD log. The time includes waiting, after the
//            last put, for the log's region writes still in flight.
//            --to-ssd 1 (put and ssd-put): every commit, warm-up included,
//            carries CXLPOOL_KV_COMMIT_TO_SSD, so the chunks go to the SSD
//            log only, written from the put window where the log can; the
//            chunks the timed commits stored so (their result1, summed) are
//            printed, and the mode is reported as put-to-ssd / ssd-put-to-ssd.
//   ssd-get  gets, in a shuffled order, every chunk of the ssd-put key set
//            that lookup places on SSD, --qd in flight; each completes when
//            its O_DIRECT read into a DRAM slot does (and its CRC check,
//            whose share of the time is printed too).
//   memcpy   no daemon (SOCKET is ignored: pass -): the ceiling a put or a
//            get that moves its bytes through the CPU cannot beat on this
//            machine. One thread copies --bytes chunks into --chunks
//            rotating destinations (pre-faulted, so cold), from one source
//            (hot: a producer's fresh chunk) and from --chunks rotating
//            sources (cold: an arena chunk not read lately), about a second
//            each; then the hot copy again with cxlpool_kv_copy_chunk (a
//            put's own copy and CRC, for reference).
//   handover no daemon (pass -): what a put that hands its pages to the
//            store instead of the commit's copy would cost its writer, a
//            fresh sealed memfd per put and a pool of windows prepared by
//            another thread, against a memcpy of --bytes in the same run
//            (kv_handover.cpp describes both).
// --seed (default 1) picks the key set: ssd-get needs the seed of the
// ssd-put before it; a put into a daemon that still holds an earlier run's
// chunks needs a new one (cached chunks are not counted).
// Every chunk carries its key in its first and last 16 bytes; gets check
// them, so a wrong or stale chunk fails the run.
// The last line is "RESULT mode=... key=value ..." for scripts.
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv_bench_util.hpp"
#include "kv_handover.hpp"

namespace {

using namespace kvbench;

constexpr std::uint32_t kChunkTokens = 256;
constexpr std::uint32_t kLatencyBatch = 16;
// Keeps the copies of get observable so the compiler cannot drop them.
volatile unsigned char g_sink;

// Bench chunk i is the first chunk of its own sequence (tokens from (seed,
// i)), so separate runs compute the same keys and every key is a prefix of
// length one.
cxlpool_kv_key single_chunk_key(const cxlpool_kv_namespace& ns, std::uint64_t seed, std::uint64_t i) {
  std::vector<std::uint32_t> tokens(ns.chunk_tokens);
  for (std::uint32_t t = 0; t < ns.chunk_tokens; ++t)
    tokens[t] = static_cast<std::uint32_t>(mix64(seed * 0x100000001b3ull + i * 65537 + t) % 128000);
  cxlpool_kv_key key{};
  const int n = cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, &key, 1);
  if (n != 1) die("cxlpool_kv_compute_keys", n < 0 ? n : -EINVAL);
  return key;
}

std::vector<cxlpool_kv_key> key_range(const cxlpool_kv_namespace& ns, std::uint64_t seed, std::uint64_t n) {
  std::vector<cxlpool_kv_key> keys(n);
  for (std::uint64_t i = 0; i < n; ++i) keys[i] = single_chunk_key(ns, seed, i);
  return keys;
}

void stamp(void* data, std::uint64_t bytes, const cxlpool_kv_key& key) {
  auto* p = static_cast<unsigned char*>(data);
  std::memcpy(p, &key, sizeof key);
  std::memcpy(p + bytes - sizeof key, &key, sizeof key);
}

bool stamped(const void* data, std::uint64_t bytes, const cxlpool_kv_key& key) {
  const auto* p = static_cast<const unsigned char*>(data);
  return std::memcmp(p, &key, sizeof key) == 0 && std::memcmp(p + bytes - sizeof key, &key, sizeof key) == 0;
}

std::vector<unsigned char> make_source(std::uint64_t bytes) {
  std::vector<unsigned char> src(bytes);
  for (std::uint64_t i = 0; i + 8 <= bytes; i += 8) {
    const std::uint64_t w = mix64(i);
    std::memcpy(src.data() + i, &w, 8);
  }
  return src;
}

// Keeps up to `depth` multi-step operations in flight: `start(i)` makes the
// first request of operation i, `on_completion` returns the follow-up
// request of that operation or nothing when it is finished. Requests that do
// not fit in the ring wait for the next round; -EAGAIN completions (put
// window or DRAM slots full) are retried.
class Pipeline {
 public:
  Pipeline(cxlpool_kv* kv, std::size_t depth) : kv_(kv), depth_(depth), completions_(256) {}

  template <typename Start, typename OnCompletion>
  void run(std::size_t count, Start start, OnCompletion on_completion) {
    std::size_t next = 0, done = 0, in_flight = 0;
    while (done < count) {
      while (in_flight < depth_ && next < count) {
        queue_.push_back(start(next++));
        ++in_flight;
      }
      submit_queued();
      const int got = cxlpool_kv_reap(kv_, completions_.data(), completions_.size(), queue_.empty() ? -1 : 0);
      if (got < 0) die("cxlpool_kv_reap", got);
      for (int c = 0; c < got; ++c) {
        const cxlpool_kv_completion& comp = completions_[c];
        if (comp.status == -EAGAIN) {
          queue_.push_back(retry_of(comp));
          continue;
        }
        sent_.erase(comp.user_data);
        if (comp.status < 0) die("kv request", comp.status);
        cxlpool_kv_request follow{};
        if (on_completion(comp, follow)) {
          queue_.push_back(follow);
        } else {
          ++done;
          --in_flight;
        }
      }
    }
  }

  // Requests are remembered until completed so that -EAGAIN can resubmit them.
  void remember(const cxlpool_kv_request& req) { sent_[req.user_data] = req; }

 private:
  void submit_queued() {
    while (!queue_.empty()) {
      std::vector<cxlpool_kv_request> batch(queue_.begin(), queue_.end());
      const int n = cxlpool_kv_submit(kv_, batch.data(), batch.size());
      if (n == -EAGAIN) return;
      if (n < 0) die("cxlpool_kv_submit", n);
      for (int i = 0; i < n; ++i) remember(queue_.front()), queue_.pop_front();
      if (static_cast<std::size_t>(n) < batch.size()) return;
    }
  }
  cxlpool_kv_request retry_of(const cxlpool_kv_completion& comp) {
    auto it = sent_.find(comp.user_data);
    if (it == sent_.end()) die("completion for an unknown request", -EPROTO);
    return it->second;
  }

  cxlpool_kv* kv_;
  std::size_t depth_;
  std::vector<cxlpool_kv_completion> completions_;
  std::deque<cxlpool_kv_request> queue_;
  std::unordered_map<std::uint64_t, cxlpool_kv_request> sent_;
};

// user_data: operation index in the low 48 bits; step in the high bits so the
// remembered request of each step is kept apart.
constexpr std::uint64_t kStepShift = 48;
std::uint64_t tag(std::size_t op, std::uint64_t step) { return (step << kStepShift) | op; }
std::size_t op_of(std::uint64_t user_data) { return user_data & ((1ull << kStepShift) - 1); }

struct Throughput {
  std::size_t ops = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;
  std::uint64_t on_ssd = 0;  // puts: chunks the commits stored on the SSD log only
  [[nodiscard]] double ops_per_s() const { return static_cast<double>(ops) / seconds; }
  [[nodiscard]] double mib_per_s() const { return static_cast<double>(bytes) / seconds / (1 << 20); }
};

// How a put writes its chunk into the put-window slot.
enum class Write {
  kNone,      // the key stamps only (a producer that fills the slot itself)
  kMemcpy,    // memcpy; the daemon takes the chunk's CRC itself
  kDeclared,  // cxlpool_kv_copy_chunk; the commit declares the CRC (cxlpool_kv_put's way)
};

// src is the producer's chunk: each put stamps its key into it, then copies
// it into the slot (so a declared CRC covers the stamps).
Throughput put_chunks(const Connection& conn, const cxlpool_kv_namespace& ns, const std::vector<cxlpool_kv_key>& keys,
                      std::size_t first, std::size_t count, std::uint64_t bytes, std::size_t qd,
                      std::vector<unsigned char>& src, Write write, std::uint32_t commit_flags) {
  Pipeline pipe(conn.kv, qd);
  std::size_t cached = 0;
  std::uint64_t on_ssd = 0;
  // Each commit's declared CRC, until the commit is submitted (copied then).
  std::vector<std::uint32_t> checksums(count);
  const auto t0 = Clock::now();
  pipe.run(
      count,
      [&](std::size_t i) {
        cxlpool_kv_request r{};
        r.user_data = tag(i, 0);
        r.op = CXLPOOL_KV_PUT_BEGIN;
        r.namespace_id = ns.id;
        r.keys = &keys[first + i];
        r.n_keys = 1;
        r.param0 = bytes;
        return r;
      },
      [&](const cxlpool_kv_completion& c, cxlpool_kv_request& follow) {
        const std::size_t i = op_of(c.user_data);
        if (c.op == CXLPOOL_KV_PUT_COMMIT) {
          if (c.result0 != 1) die("put_commit committed nothing", -EIO);
          on_ssd += c.result1;
          return false;
        }
        if (c.n_locations != 1) die("put_begin: no slot", -EPROTO);
        const cxlpool_kv_location& slot = c.locations[0];
        bool declares = false;
        if (slot.flags & CXLPOOL_KV_LOC_CACHED) {
          ++cached;  // nothing to write; the reservation still ends with a commit
        } else if (write == Write::kNone) {
          stamp(slot.data, bytes, keys[first + i]);
        } else {
          stamp(src.data(), bytes, keys[first + i]);
          if (write == Write::kMemcpy) {
            std::memcpy(slot.data, src.data(), bytes);
          } else {
            checksums[i] = cxlpool_kv_copy_chunk(slot.data, src.data(), bytes);
            declares = true;
          }
        }
        follow = cxlpool_kv_request{};
        follow.user_data = tag(i, 1);
        follow.op = CXLPOOL_KV_PUT_COMMIT;
        follow.flags = commit_flags | (declares ? CXLPOOL_KV_COMMIT_CHECKSUMS : 0u);
        if (declares) follow.param1 = reinterpret_cast<std::uintptr_t>(&checksums[i]);
        follow.namespace_id = ns.id;
        follow.keys = &keys[first + i];
        follow.n_keys = 1;
        follow.param0 = c.result0;
        return true;
      });
  Throughput t{count - cached, (count - cached) * bytes, seconds_since(t0), on_ssd};
  if (cached) std::printf("  (%zu of %zu chunks were already stored: not counted)\n", cached, count);
  return t;
}

// Gets keys[order[i]] one chunk per request, optionally copying each out,
// then releases it. Counts chunks whose location is `expect_tier` after the
// get (a DRAM slot for SSD reads too).
Throughput get_chunks(const Connection& conn, const cxlpool_kv_namespace& ns, const std::vector<cxlpool_kv_key>& keys,
                      const std::vector<std::size_t>& order, std::uint64_t bytes, std::size_t qd, bool copy) {
  Pipeline pipe(conn.kv, qd);
  std::vector<unsigned char> sink(copy ? bytes : 0);
  const auto t0 = Clock::now();
  pipe.run(
      order.size(),
      [&](std::size_t i) {
        cxlpool_kv_request r{};
        r.user_data = tag(i, 0);
        r.op = CXLPOOL_KV_GET;
        r.namespace_id = ns.id;
        r.keys = &keys[order[i]];
        r.n_keys = 1;
        return r;
      },
      [&](const cxlpool_kv_completion& c, cxlpool_kv_request& follow) {
        if (c.op == CXLPOOL_KV_RELEASE) return false;
        const std::size_t i = op_of(c.user_data);
        if (c.result1 != 1 || c.n_locations < 1 || c.locations[0].data == nullptr) die("get: chunk not stored", -ENOENT);
        const cxlpool_kv_location& loc = c.locations[0];
        if (loc.length != bytes || !stamped(loc.data, bytes, keys[order[i]])) die("get: wrong chunk bytes", -EBADMSG);
        if (copy) {
          std::memcpy(sink.data(), loc.data, bytes);
          g_sink = sink[bytes / 2];
        }
        follow = cxlpool_kv_request{};
        follow.user_data = tag(i, 1);
        follow.op = CXLPOOL_KV_RELEASE;
        follow.param0 = c.result0;
        return true;
      });
  const double s = seconds_since(t0);
  return {order.size(), order.size() * bytes, s};
}

std::vector<std::size_t> shuffled(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// to_ssd: puts whose commits asked for the SSD log; t.on_ssd is printed too.
void print_throughput(const char* mode, const Throughput& t, std::size_t qd, std::uint64_t bytes,
                      bool to_ssd = false) {
  std::printf("%-8s %zu x %llu KiB, qd %zu: %.0f ops/s, %.1f MiB/s (%.3f s)\n", mode, t.ops,
              static_cast<unsigned long long>(bytes >> 10), qd, t.ops_per_s(), t.mib_per_s(), t.seconds);
  if (to_ssd) {
    std::printf("%s: %llu of %zu chunks committed went to the SSD log only\n", mode,
                static_cast<unsigned long long>(t.on_ssd), t.ops);
  }
  std::printf("RESULT mode=%s qd=%zu chunk_bytes=%llu ops=%zu ops_per_s=%.1f mib_per_s=%.1f", mode, qd,
              static_cast<unsigned long long>(bytes), t.ops, t.ops_per_s(), t.mib_per_s());
  if (to_ssd) std::printf(" on_ssd=%llu", static_cast<unsigned long long>(t.on_ssd));
  std::printf("\n");
}

int tier_of(const Connection& conn, const cxlpool_kv_namespace& ns, const cxlpool_kv_key& key) {
  cxlpool_kv_location loc{};
  const int n = cxlpool_kv_lookup(conn.kv, ns.id, &key, 1, &loc);
  if (n < 0) die("cxlpool_kv_lookup", n);
  return n == 0 ? -1 : loc.tier;
}

int run_latency(const Connection& conn, const Options& opt) {
  const auto ns = conn.open_namespace("kvstore-bench-latency", kChunkTokens);
  const std::uint64_t bytes = opt.u64("bytes");
  const std::size_t iterations = opt.u64("iterations");
  std::vector<std::uint32_t> tokens(kLatencyBatch * ns.chunk_tokens);
  for (std::size_t t = 0; t < tokens.size(); ++t) tokens[t] = static_cast<std::uint32_t>(mix64(t + 7) % 128000);
  cxlpool_kv_key keys[kLatencyBatch];
  if (int n = cxlpool_kv_compute_keys(&ns, tokens.data(), tokens.size(), nullptr, keys, kLatencyBatch);
      n != static_cast<int>(kLatencyBatch))
    die("cxlpool_kv_compute_keys", n < 0 ? n : -EINVAL);
  auto src = make_source(bytes);
  std::vector<std::vector<unsigned char>> chunks(kLatencyBatch, src);
  std::vector<const void*> data(kLatencyBatch);
  for (std::uint32_t i = 0; i < kLatencyBatch; ++i) {
    stamp(chunks[i].data(), bytes, keys[i]);
    data[i] = chunks[i].data();
  }
  if (int n = cxlpool_kv_put(conn.kv, ns.id, keys, kLatencyBatch, data.data(), bytes); n < 0) die("cxlpool_kv_put", n);

  cxlpool_kv_location locs[kLatencyBatch];
  if (int n = cxlpool_kv_lookup(conn.kv, ns.id, keys, kLatencyBatch, locs); n != static_cast<int>(kLatencyBatch))
    die("lookup after put: prefix not fully cached", n < 0 ? n : -ENOENT);
  for (const auto& loc : locs)
    if (loc.tier != CXLPOOL_KV_TIER_DRAM) die("lookup after put: a chunk is not in DRAM", -EINVAL);

  std::vector<double> total, lookup, get, release, miss;
  total.reserve(iterations);
  const cxlpool_kv_key absent = single_chunk_key(ns, 0xdead, 1);
  const std::size_t warmup = iterations / 10;
  for (std::size_t it = 0; it < warmup + iterations; ++it) {
    const auto t0 = Clock::now();
    const int found = cxlpool_kv_lookup(conn.kv, ns.id, keys, kLatencyBatch, locs);
    const auto t1 = Clock::now();
    std::uint64_t lease = 0;
    const int leased = cxlpool_kv_get(conn.kv, ns.id, keys, kLatencyBatch, &lease, locs);
    const auto t2 = Clock::now();
    const int released = cxlpool_kv_release(conn.kv, lease);
    const auto t3 = Clock::now();
    if (found != static_cast<int>(kLatencyBatch)) die("lookup", found < 0 ? found : -ENOENT);
    if (leased != static_cast<int>(kLatencyBatch)) die("get", leased < 0 ? leased : -ENOENT);
    if (released != 0) die("release", released);
    if (!stamped(locs[kLatencyBatch - 1].data, bytes, keys[kLatencyBatch - 1])) die("get: wrong bytes", -EBADMSG);
    const auto t4 = Clock::now();
    const int none = cxlpool_kv_lookup(conn.kv, ns.id, &absent, 1, nullptr);
    const auto t5 = Clock::now();
    if (none != 0) die("lookup of an absent key", none < 0 ? none : -EEXIST);
    if (it < warmup) continue;
    using us = std::chrono::duration<double, std::micro>;
    lookup.push_back(us(t1 - t0).count());
    get.push_back(us(t2 - t1).count());
    release.push_back(us(t3 - t2).count());
    total.push_back(us(t3 - t0).count());
    miss.push_back(us(t5 - t4).count());
  }
  // The same work in one round trip per iteration: the release of the
  // previous iteration's lease travels in the batch with this iteration's
  // lookup and get (one submit, one doorbell), as a serving loop would send it.
  std::vector<double> batched;
  batched.reserve(iterations);
  std::uint64_t previous = 0;
  cxlpool_kv_completion comps[8];
  for (std::size_t it = 0; it < warmup + iterations; ++it) {
    cxlpool_kv_request reqs[3] = {};
    std::size_t n = 0;
    if (previous != 0) {
      reqs[n].op = CXLPOOL_KV_RELEASE;
      reqs[n++].param0 = previous;
    }
    for (std::uint32_t op : {CXLPOOL_KV_LOOKUP, CXLPOOL_KV_GET}) {
      reqs[n].user_data = op;
      reqs[n].op = op;
      reqs[n].namespace_id = ns.id;
      reqs[n].keys = keys;
      reqs[n++].n_keys = kLatencyBatch;
    }
    const auto t0 = Clock::now();
    if (int q = cxlpool_kv_submit(conn.kv, reqs, n); q != static_cast<int>(n)) die("cxlpool_kv_submit", q < 0 ? q : -EAGAIN);
    for (std::size_t got = 0; got < n;) {
      const int r = cxlpool_kv_reap(conn.kv, comps, 8, -1);
      if (r < 0) die("cxlpool_kv_reap", r);
      for (int c = 0; c < r; ++c) {
        if (comps[c].status < 0) die("batched request", comps[c].status);
        if (comps[c].op != CXLPOOL_KV_RELEASE && comps[c].op != CXLPOOL_KV_GET && comps[c].result0 != kLatencyBatch)
          die("batched lookup", -ENOENT);
        if (comps[c].op == CXLPOOL_KV_GET) {
          if (comps[c].result1 != kLatencyBatch || comps[c].n_locations != kLatencyBatch ||
              !stamped(comps[c].locations[kLatencyBatch - 1].data, bytes, keys[kLatencyBatch - 1]))
            die("batched get", -EBADMSG);
          previous = comps[c].result0;
        }
      }
      got += static_cast<std::size_t>(r);
    }
    if (it >= warmup) batched.push_back(micros_since(t0));
  }
  if (int rc = cxlpool_kv_release(conn.kv, previous); rc != 0) die("release", rc);
  // The unbatched form the API steers a serving loop to: a get (which
  // answers the cached prefix: no lookup first) and a release that does not
  // wait for its answer, two blocking-style calls and one round trip.
  std::vector<double> steered;
  steered.reserve(iterations);
  for (std::size_t it = 0; it < warmup + iterations; ++it) {
    const auto t0 = Clock::now();
    std::uint64_t lease = 0;
    const int leased = cxlpool_kv_get(conn.kv, ns.id, keys, kLatencyBatch, &lease, locs);
    if (leased != static_cast<int>(kLatencyBatch)) die("get", leased < 0 ? leased : -ENOENT);
    if (!stamped(locs[kLatencyBatch - 1].data, bytes, keys[kLatencyBatch - 1])) die("get: wrong bytes", -EBADMSG);
    if (int rc = cxlpool_kv_release_nowait(conn.kv, lease); rc != 0) die("release_nowait", rc);
    if (it >= warmup) steered.push_back(micros_since(t0));
  }

  auto row = [](const char* name, std::vector<double>& v) {
    const double p50 = percentile(v, 0.50), p99 = percentile(v, 0.99), p999 = percentile(v, 0.999);
    std::printf("  %-40s p50 %7.2f us   p99 %7.2f us   p99.9 %7.2f us\n", name, p50, p99, p999);
  };
  std::printf("latency: %u DRAM chunks of %llu KiB, %zu iterations\n", kLatencyBatch,
              static_cast<unsigned long long>(bytes >> 10), iterations);
  row("lookup (16 keys)", lookup);
  row("get (16 keys, one lease)", get);
  row("release", release);
  row("lookup + get + release", total);
  row("batched: release(prev) + lookup + get", batched);
  row("get + release_nowait", steered);
  row("reference: lookup of 1 absent key", miss);
  std::printf("RESULT mode=latency batch=%u p50_us=%.2f p99_us=%.2f p999_us=%.2f batched_p50_us=%.2f "
              "batched_p99_us=%.2f steered_p50_us=%.2f steered_p99_us=%.2f rtt_p50_us=%.2f rtt_p99_us=%.2f\n",
              kLatencyBatch, percentile(total, 0.5), percentile(total, 0.99), percentile(total, 0.999),
              percentile(batched, 0.5), percentile(batched, 0.99), percentile(steered, 0.5), percentile(steered, 0.99),
              percentile(miss, 0.5), percentile(miss, 0.99));
  return 0;
}

// One of the daemon's counters (cxlpool_stats); 0 when it has none.
std::uint64_t daemon_counter(const Connection& conn, const char* name) {
  std::vector<cxlpool_stat> stats(512);
  const int n = cxlpool_stats(conn.client, stats.data(), stats.size());
  if (n < 0) die("cxlpool_stats", n);
  for (int i = 0; i < std::min<int>(n, static_cast<int>(stats.size())); ++i) {
    if (std::strcmp(stats[i].name, name) == 0) return stats[i].value;
  }
  return 0;
}

// What the throughput modes read from their options: the chunk size, the
// queue depth, and the keys of --chunks chunks (from --seed) in one namespace.
struct ChunkSet {
  ChunkSet(const Connection& conn, const Options& opt, const char* model)
      : bytes(opt.u64("bytes")), qd(opt.u64("qd")), chunks(opt.u64("chunks")),
        ns(conn.open_namespace(model, kChunkTokens)), keys(key_range(ns, opt.u64("seed"), chunks)) {}
  const std::uint64_t bytes;
  const std::size_t qd, chunks;
  const cxlpool_kv_namespace ns;
  const std::vector<cxlpool_kv_key> keys;
};

// --write 0: kNone; else --checksums 1: kDeclared, 0: kMemcpy, auto (the
// default): cxlpool_kv_put's choice, kDeclared for a writer with one put in
// flight (the handle's only request), kMemcpy behind other puts.
Write write_of(const Options& opt) {
  if (opt.u64("write") == 0) return Write::kNone;
  if (opt.str("checksums") == "auto") {
    return opt.u64("qd") == 1 && opt.u64("clients") <= 1 ? Write::kDeclared : Write::kMemcpy;
  }
  return opt.u64("checksums") != 0 ? Write::kDeclared : Write::kMemcpy;
}
const char* write_suffix(Write w) { return w == Write::kNone ? "-nowrite" : w == Write::kMemcpy ? "-memcpy" : ""; }

int run_put(const Connection& conn, const Options& opt, bool ssd) {
  const ChunkSet set(conn, opt, ssd ? "kvstore-bench-ssd" : "kvstore-bench-put");
  const auto& [bytes, qd, chunks, ns, keys] = set;
  const Write write = write_of(opt);
  const bool to_ssd = opt.u64("to-ssd") != 0;
  const std::uint32_t flags = to_ssd ? CXLPOOL_KV_COMMIT_TO_SSD : 0;
  auto src = make_source(bytes);
  // Untimed warm-up: fills the DRAM arena (and faults in its pages and the
  // put window's), so every timed put finds the store full and evicts one
  // chunk: to SSD in the ssd-put setup, dropped when there is no lower tier.
  // With --to-ssd 1 the chunks take no DRAM slot: the warm-up faults in the
  // put window and starts the log.
  const std::uint64_t dram_slots = conn.info.arena_bytes[0] / conn.info.slot_bytes;
  if (ssd && conn.info.arena_bytes[1] != 0)
    std::printf("warning: the daemon has a CXL arena: chunks demote there before SSD\n");
  const std::size_t warm = std::min<std::size_t>(chunks / 2, dram_slots + qd);
  put_chunks(conn, ns, keys, 0, warm, bytes, qd, src, Write::kDeclared, flags);
  // The log's counters over the timed puts: why a run was slow shows here.
  // The first four are printed as two pairs: demotions written from their
  // DRAM slot of all demotions, and puts to SSD written from their window
  // slot of all puts to SSD.
  static constexpr const char* kLogCounters[] = {"kv.ssd_lent_puts",    "kv.tier.ssd.demotions", "kv.window_lends",
                                                 "kv.puts_to_ssd",      "kv.ssd_write_stalls",   "kv.ssd_syncs",
                                                 "kv.ssd_regions_sealed", "kv.ssd_write_dropped",
                                                 "kv.ssd_registrations", "kv.ssd_registration_errors"};
  constexpr std::size_t kFirstPlain = 4;
  std::vector<std::uint64_t> before;
  if (ssd) {
    for (const char* name : kLogCounters) before.push_back(daemon_counter(conn, name));
  }
  Throughput t = put_chunks(conn, ns, keys, warm, chunks - warm, bytes, qd, src, write, flags);
  if (ssd) {
    std::vector<std::uint64_t> delta;
    for (std::size_t i = 0; i < std::size(kLogCounters); ++i)
      delta.push_back(daemon_counter(conn, kLogCounters[i]) - before[i]);
    if (to_ssd) {
      // How many puts to SSD the log wrote straight from their put-window
      // slot rather than copying them into a region buffer.
      std::printf("ssd-put: %llu of %llu chunks put to SSD written from their put-window slot; %llu demotions\n",
                  static_cast<unsigned long long>(delta[2]), static_cast<unsigned long long>(delta[3]),
                  static_cast<unsigned long long>(delta[1]));
    } else {
      // How many demotions the log wrote straight from their DRAM slot.
      std::printf("ssd-put: %llu of %llu demotions written from their DRAM slot\n",
                  static_cast<unsigned long long>(delta[0]), static_cast<unsigned long long>(delta[1]));
    }
    std::printf("ssd-put: the log's counters over the timed puts:");
    for (std::size_t i = kFirstPlain; i < std::size(kLogCounters); ++i) {
      std::printf(" %s +%llu", kLogCounters[i], static_cast<unsigned long long>(delta[i]));
    }
    std::printf("\n");
    // Region writes still in flight when the last put was acknowledged
    // belong to the timed work: wait for the device to finish them.
    const auto t0 = Clock::now();
    while (daemon_counter(conn, "kv.ssd_writes_in_flight") != 0) {}
    t.seconds += seconds_since(t0);
    const int tier = tier_of(conn, ns, keys[0]);
    if (tier != CXLPOOL_KV_TIER_SSD) {
      std::fprintf(stderr, "the first chunk put is in tier %d, not on SSD: is the daemon configured with a tiny DRAM "
                   "arena, cxl_bytes 0, admission_threshold 1 and an SSD tier?\n", tier);
      return 1;
    }
  }
  const std::string mode = std::string(ssd ? "ssd-put" : "put") + write_suffix(write) + (to_ssd ? "-to-ssd" : "");
  print_throughput(mode.c_str(), t, qd, bytes, to_ssd);
  return 0;
}

// put with --clients N > 1: N threads, each with a connection, a namespace
// and keys of its own (seeds seed, seed + 1, ...), run_put's warm-up, then
// the timed puts of all of them at once.
int run_put_clients(const char* socket, const Options& opt, std::size_t clients) {
  const Write write = write_of(opt);
  const bool to_ssd = opt.u64("to-ssd") != 0;
  const std::uint32_t flags = to_ssd ? CXLPOOL_KV_COMMIT_TO_SSD : 0;
  const std::uint64_t bytes = opt.u64("bytes");
  const std::size_t qd = opt.u64("qd"), chunks = opt.u64("chunks");
  std::barrier ready(static_cast<std::ptrdiff_t>(clients));
  std::vector<Clock::time_point> starts(clients), ends(clients);
  std::vector<std::size_t> counted(clients);
  std::vector<std::uint64_t> counted_on_ssd(clients);
  std::vector<std::thread> threads;
  threads.reserve(clients);
  for (std::size_t k = 0; k < clients; ++k) {
    threads.emplace_back([&, k] {
      const Connection conn(socket, "kvstore-bench", 0);
      const std::string model = opt.u64("tenants") != 0 ? "kvstore-bench-put-" + std::to_string(k) : "kvstore-bench-put";
      const cxlpool_kv_namespace ns = conn.open_namespace(model.c_str(), kChunkTokens);
      const auto keys = key_range(ns, opt.u64("seed") + k, chunks);
      const std::uint64_t dram_slots = conn.info.arena_bytes[0] / conn.info.slot_bytes;
      const std::size_t warm = std::min<std::size_t>(chunks / 2, dram_slots / clients + qd);
      auto src = make_source(bytes);  // each writer stamps its own
      put_chunks(conn, ns, keys, 0, warm, bytes, qd, src, Write::kDeclared, flags);
      ready.arrive_and_wait();
      starts[k] = Clock::now();
      const Throughput t = put_chunks(conn, ns, keys, warm, chunks - warm, bytes, qd, src, write, flags);
      ends[k] = Clock::now();
      counted[k] = t.ops;
      counted_on_ssd[k] = t.on_ssd;
    });
  }
  for (std::thread& t : threads) t.join();
  Throughput all;
  for (std::size_t k = 0; k < clients; ++k) {
    all.ops += counted[k];
    all.bytes += counted[k] * bytes;
    all.on_ssd += counted_on_ssd[k];
  }
  all.seconds = std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                              *std::min_element(starts.begin(), starts.end()))
                    .count();
  std::printf("%zu writers, %zu in flight each:\n", clients, qd);
  const std::string mode = std::string("put") + write_suffix(write) + (to_ssd ? "-to-ssd" : "");
  print_throughput(mode.c_str(), all, qd, bytes, to_ssd);
  return 0;
}

int run_get(const Connection& conn, const Options& opt) {
  const ChunkSet set(conn, opt, "kvstore-bench-get");
  const auto& [bytes, qd, chunks, ns, keys] = set;
  auto src = make_source(bytes);
  put_chunks(conn, ns, keys, 0, chunks, bytes, qd, src, Write::kDeclared, 0);
  for (std::size_t i = 0; i < chunks; ++i)
    if (tier_of(conn, ns, keys[i]) != CXLPOOL_KV_TIER_DRAM) die("get: the chunks do not all fit in DRAM", -ENOSPC);
  const bool copy = opt.u64("copy") != 0;
  const std::size_t passes = std::max<std::uint64_t>(1, opt.u64("passes"));
  Throughput sum;
  for (std::size_t p = 0; p < passes; ++p) {
    const Throughput t = get_chunks(conn, ns, keys, shuffled(chunks, p + 1), bytes, qd, copy);
    sum.ops += t.ops, sum.bytes += t.bytes, sum.seconds += t.seconds;
  }
  print_throughput(copy ? "get" : "get-nocopy", sum, qd, bytes);
  return 0;
}

int run_ssd_get(const Connection& conn, const Options& opt) {
  const ChunkSet set(conn, opt, "kvstore-bench-ssd");
  const auto& [bytes, qd, chunks, ns, keys] = set;
  std::vector<std::size_t> on_ssd;
  for (std::size_t i = 0; i < chunks; ++i)
    if (tier_of(conn, ns, keys[i]) == CXLPOOL_KV_TIER_SSD) on_ssd.push_back(i);
  if (on_ssd.size() < qd) {
    std::fprintf(stderr, "ssd-get: only %zu chunks are on SSD; run ssd-put with the same --seed first\n",
                 on_ssd.size());
    return 1;
  }
  std::mt19937_64 rng(opt.u64("seed"));
  std::shuffle(on_ssd.begin(), on_ssd.end(), rng);
  const std::uint64_t verify0 = daemon_counter(conn, "kv.ssd_verify_ns");
  const std::uint64_t staged0 = daemon_counter(conn, "kv.ssd_staged_reads");
  const Throughput t = get_chunks(conn, ns, keys, on_ssd, bytes, qd, opt.u64("copy") != 0);
  const double verify_s = static_cast<double>(daemon_counter(conn, "kv.ssd_verify_ns") - verify0) / 1e9;
  print_throughput("ssd-get", t, qd, bytes);
  // Reads into registered slots land there directly; staged ones (into a
  // slot the kernel would not register) cost a copy each.
  std::printf("ssd-get: %llu of %zu reads went through a staging buffer\n",
              static_cast<unsigned long long>(daemon_counter(conn, "kv.ssd_staged_reads") - staged0), on_ssd.size());
  // The daemon's CRC32C checks of what it read, as a share of the wall time:
  // what they take from its event loop.
  std::printf("RESULT mode=ssd-get-verify verify_s=%.4f verify_pct=%.1f\n", verify_s, 100 * verify_s / t.seconds);
  return 0;
}

// A plain 2 MiB memcpy, one thread: what one core can move.
int run_memcpy(const Options& opt) {
  const std::uint64_t bytes = opt.u64("bytes");
  const std::size_t n = std::max<std::uint64_t>(2, opt.u64("chunks"));
  std::vector<std::vector<unsigned char>> src(n), dst(n);
  for (std::size_t i = 0; i < n; ++i) {
    src[i] = make_source(bytes);
    dst[i].assign(bytes, 1);  // faulted in: page faults are not what is measured
  }
  auto measure = [&](bool hot, bool with_crc) {
    std::size_t ops = 0;
    const auto t0 = Clock::now();
    double seconds = 0;
    while (seconds < 1.0) {
      for (std::size_t i = 0; i < n; ++i, ++ops) {
        // Sources in a different order than destinations: no pairing the
        // prefetchers could learn beyond what a real copy offers.
        const unsigned char* from = src[hot ? 0 : (i * 7 + 3) % n].data();
        if (with_crc) {
          g_sink = static_cast<unsigned char>(cxlpool_kv_copy_chunk(dst[i].data(), from, bytes));
        } else {
          std::memcpy(dst[i].data(), from, bytes);
        }
        g_sink = dst[i][ops % bytes];
      }
      seconds = seconds_since(t0);
    }
    return Throughput{ops, ops * bytes, seconds};
  };
  const Throughput hot = measure(true, false), cold = measure(false, false), copy_crc = measure(true, true);
  std::printf("memcpy of %llu KiB, one thread, %zu rotating destinations: hot source %.0f ops/s (%.1f GiB/s), "
              "cold source %.0f ops/s (%.1f GiB/s)\n",
              static_cast<unsigned long long>(bytes >> 10), n, hot.ops_per_s(), hot.mib_per_s() / 1024,
              cold.ops_per_s(), cold.mib_per_s() / 1024);
  std::printf("cxlpool_kv_copy_chunk (copy + CRC-32C), hot source: %.0f ops/s (%.1f GiB/s)\n", copy_crc.ops_per_s(),
              copy_crc.mib_per_s() / 1024);
  std::printf("RESULT mode=memcpy bytes=%llu hot_ops_per_s=%.0f cold_ops_per_s=%.0f hot_mib_per_s=%.0f "
              "cold_mib_per_s=%.0f copy_crc_hot_ops_per_s=%.0f\n",
              static_cast<unsigned long long>(bytes), hot.ops_per_s(), cold.ops_per_s(), hot.mib_per_s(),
              cold.mib_per_s(), copy_crc.ops_per_s());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s SOCKET|- latency|put|get|ssd-put|ssd-get|memcpy|handover [--qd N] [--chunks N] [--bytes N]\n"
                 "       [--iterations N] [--copy 0|1] [--passes N] [--write 0|1] [--checksums auto|0|1] [--seed N]\n"
                 "       [--clients N] [--tenants 0|1]\n"
                 "       [--to-ssd 0|1]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[2];
  const bool ssd_mode = mode.rfind("ssd-", 0) == 0;
  const Options opt(argc, argv, 3,
                    {{"qd", ssd_mode ? "32" : "8"},
                     {"chunks", ssd_mode ? "512" : (mode == "put" ? "1024" : "256")},
                     {"bytes", std::to_string(2u << 20)},
                     {"iterations", "20000"},
                     {"copy", ssd_mode ? "0" : "1"},
                     {"passes", "4"},
                     {"write", "1"},
                     {"checksums", "auto"},
                     {"seed", "1"},
                     {"clients", "1"},
                     {"tenants", "0"},
                     {"to-ssd", "0"}});
  if (mode == "memcpy") return run_memcpy(opt);
  if (mode == "handover") return run_handover(opt.u64("bytes"));
  const std::uint64_t clients = opt.u64("clients");
  if (clients == 0 || clients > 64 || (clients > 1 && mode != "put")) {
    std::fprintf(stderr, "--clients must be 1..64, and more than 1 only with put\n");
    return 2;
  }
  if (opt.u64("to-ssd") > 1 || (opt.u64("to-ssd") != 0 && mode != "put" && mode != "ssd-put")) {
    std::fprintf(stderr, "--to-ssd must be 0 or 1, and 1 only with put or ssd-put\n");
    return 2;
  }
  const Connection conn(argv[1], "kvstore-bench", 0);
  if (opt.u64("bytes") == 0 || opt.u64("bytes") > conn.info.slot_bytes || opt.u64("bytes") % 16 != 0) {
    std::fprintf(stderr, "--bytes must be a multiple of 16 in 16..%llu (the store's slot size)\n",
                 static_cast<unsigned long long>(conn.info.slot_bytes));
    return 2;
  }
  if (opt.u64("qd") == 0) {
    std::fprintf(stderr, "--qd must be at least 1\n");
    return 2;
  }
  if (mode == "latency") return run_latency(conn, opt);
  if (mode == "put") return clients > 1 ? run_put_clients(argv[1], opt, clients) : run_put(conn, opt, false);
  if (mode == "get") return run_get(conn, opt);
  if (mode == "ssd-put") return run_put(conn, opt, true);
  if (mode == "ssd-get") return run_ssd_get(conn, opt);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
