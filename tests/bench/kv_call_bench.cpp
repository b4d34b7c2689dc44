// SPDX-License-Identifier: Apache-2.0
// The C side of the Python call-overhead comparison (python/bench/
// call_overhead.py runs it against the same daemon in the same run and does
// the same operations through the cxlpool package):
//   lookup   one blocking one-key lookup of a stored chunk
//   get      get + release of that chunk
//   put      put_begin + a 4 KiB write into the slot + commit, a new key each
//   put2m    the same with 2 MiB chunks: throughput of the median chunk
//   get2m    get + a 2 MiB copy out of the arena + release: the same
//   kv_call_bench SOCKET ITERATIONS CHUNKS_2M
// The last line is "RESULT key=value ..." (median ns per call, GB/s).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench_timing.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"

namespace {

using cxlpool::bench::now_s;

[[noreturn]] void die(const char* what, int rc) {
  std::fprintf(stderr, "kv_call_bench: %s: %s (%s)\n", what, cxlpool_strerror(rc), cxlpool_last_error());
  std::exit(1);
}

void ok(const char* what, int rc) {
  if (rc < 0) die(what, rc);
}

cxlpool_kv_key key(uint64_t hi, uint64_t lo) { return cxlpool_kv_key{lo, hi}; }

// put_begin + write + commit of one chunk of `bytes` from src.
void put_one(cxlpool_kv* kv, uint64_t ns, const cxlpool_kv_key& k, const void* src, uint64_t bytes) {
  uint64_t reservation = 0;
  cxlpool_kv_location slot{};
  ok("put_begin", cxlpool_kv_put_begin(kv, ns, &k, 1, bytes, &reservation, &slot));
  if ((slot.flags & CXLPOOL_KV_LOC_CACHED) == 0) std::memcpy(slot.data, src, bytes);
  ok("put_commit", cxlpool_kv_put_commit(kv, ns, reservation, &k, 1));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SOCKET ITERATIONS CHUNKS_2M\n", argv[0]);
    return 2;
  }
  const int iterations = std::atoi(argv[2]);
  const int chunks = std::atoi(argv[3]);
  cxlpool_client* client = nullptr;
  ok("connect", cxlpool_connect(argv[1], "kv-call-bench", &client));
  cxlpool_kv* kv = nullptr;
  ok("kv_open", cxlpool_kv_open(client, nullptr, &kv));
  const std::string model = "call-bench-c-" + std::to_string(::getpid());
  cxlpool_kv_namespace_spec spec{model.c_str(), "raw", "bf16", 0, 1, 16, 0};
  cxlpool_kv_namespace ns{};
  ok("namespace_open", cxlpool_kv_namespace_open(kv, &spec, &ns));

  constexpr uint64_t kSmall = 4096;
  constexpr uint64_t kBig = 2ull << 20;
  std::vector<char> small(kSmall, 1), big(kBig, 2), out(kBig);
  // The store indexes chunks by key alone: every run (and the Python side)
  // needs keys of its own, or its puts find the chunks already stored.
  const uint64_t run = (uint64_t(::getpid()) << 32) ^ uint64_t(now_s() * 1e9);
  const cxlpool_kv_key k0 = key(run + 1, 0);
  put_one(kv, ns.id, k0, small.data(), kSmall);

  // Per call: the median, which a busy machine's preemptions do not move
  // the way they move a mean.
  std::vector<double> times(iterations);
  auto median_ns = [&](auto&& call) {
    for (int i = 0; i < iterations; ++i) {
      const double t0 = now_s();
      call(i);
      times[i] = now_s() - t0;
    }
    return cxlpool::bench::median(times) * 1e9;
  };
  const double lookup_ns = median_ns([&](int) {
    if (cxlpool_kv_lookup(kv, ns.id, &k0, 1, nullptr) != 1) die("lookup", -EIO);
  });
  const double get_ns = median_ns([&](int) {
    uint64_t lease = 0;
    cxlpool_kv_location loc{};
    if (cxlpool_kv_get(kv, ns.id, &k0, 1, &lease, &loc) != 1) die("get", -EIO);
    ok("release", cxlpool_kv_release(kv, lease));
  });
  const double put_ns = median_ns([&](int i) { put_one(kv, ns.id, key(run + 2, i), small.data(), kSmall); });

  // 2 MiB chunks: GB/s of the median chunk, as for the calls above.
  std::vector<double> chunk_times(chunks);
  for (int i = 0; i < chunks; ++i) {
    const double t0 = now_s();
    put_one(kv, ns.id, key(run + 3, i), big.data(), kBig);
    chunk_times[i] = now_s() - t0;
  }
  const double put2m_gbps = kBig / cxlpool::bench::median(chunk_times) / 1e9;

  // The most recent puts are resident: read the last few over and over.
  const int resident = chunks < 8 ? chunks : 8;
  for (int i = 0; i < chunks; ++i) {
    const cxlpool_kv_key k = key(run + 3, chunks - 1 - (i % resident));
    const double t0 = now_s();
    uint64_t lease = 0;
    cxlpool_kv_location loc{};
    if (cxlpool_kv_get(kv, ns.id, &k, 1, &lease, &loc) != 1) die("get of a resident chunk", -EIO);
    std::memcpy(out.data(), loc.data, kBig);
    ok("release", cxlpool_kv_release(kv, lease));
    chunk_times[i] = now_s() - t0;
  }
  const double get2m_gbps = kBig / cxlpool::bench::median(chunk_times) / 1e9;

  std::printf("RESULT lookup_ns=%.0f get_ns=%.0f put_ns=%.0f put2m_gbps=%.3f get2m_gbps=%.3f\n", lookup_ns, get_ns,
              put_ns, put2m_gbps, get2m_gbps);
  cxlpool_kv_close(kv);
  cxlpool_disconnect(client);
  return 0;
}
