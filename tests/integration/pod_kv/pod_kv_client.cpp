// SPDX-License-Identifier: Apache-2.0
// A KV client for the pod tests: puts or gets the chunks of one sequence
// and checks every byte it is given.
//   pod_kv_client put|get SOCKET SEED CHUNKS CHUNK_BYTES [THREADS ROUNDS]
//   pod_kv_client lookup SOCKET SEED CHUNKS CHUNK_BYTES
//   pod_kv_client fill SOCKET SEED CHUNKS CHUNK_BYTES
//   pod_kv_client bench-remote|bench-ssd|bench-remote-ssd SOCKET SEED 1 CHUNK_BYTES FILL ROUNDS
//   pod_kv_client bench-put SOCKET SEED CHUNKS CHUNK_BYTES 1 ROUNDS
// Chunk i of sequence SEED holds a pattern of (SEED, i); tokens are derived
// from SEED, so both hosts compute the same keys. `get` prints
//   got=<chunks leased> bad=<chunks whose bytes differ>
// (with THREADS, the smallest prefix any get saw and the bad chunks of all)
// and exits 1 when a byte is wrong, 2 on an error. `lookup` prints
//   local=<cached prefix here> ssd=<of those, on SSD> pod=<chunks after it peers hold>
// `fill` puts CHUNKS chunks of other sequences one by one (pushing older
// chunks out of DRAM).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/cxlpool.hpp"
#include "cxlpool/kv.hpp"

namespace {

constexpr uint32_t kChunkTokens = 256;

std::vector<uint32_t> tokens_of(uint64_t seed, size_t chunks) {
  std::vector<uint32_t> t(chunks * kChunkTokens);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (auto& v : t) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = static_cast<uint32_t>(x % 32000);
  }
  return t;
}

void fill(std::byte* out, size_t bytes, uint64_t seed, uint64_t chunk) {
  uint64_t x = (seed << 20) ^ (chunk * 0xD6E8FEB86659FD93ULL) ^ 0x1234567;
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::memcpy(out + i, &x, 8);
  }
}

struct Args {
  std::string op, socket;
  uint64_t seed = 0;
  size_t chunks = 0, bytes = 0;
  int threads = 1, rounds = 1;
};

cxlpool::KvNamespace open_ns(cxlpool::KvStore& kv) {
  return kv.open_namespace("pod-kv-test-model", "paged", "fp16", 0, 1, kChunkTokens, 0644);
}

int put(const Args& a) {
  cxlpool::Client client(a.socket, "pod-kv-put");
  cxlpool::KvStore kv(client);
  const auto ns = open_ns(kv);
  const auto keys = ns.compute_keys(tokens_of(a.seed, a.chunks));
  std::vector<std::vector<std::byte>> data(a.chunks, std::vector<std::byte>(a.bytes));
  std::vector<const void*> ptrs;
  for (size_t i = 0; i < a.chunks; ++i) {
    fill(data[i].data(), a.bytes, a.seed, i);
    ptrs.push_back(data[i].data());
  }
  const size_t stored = kv.put(ns, keys, ptrs, a.bytes);
  std::printf("stored=%zu\n", stored);
  return stored == a.chunks ? 0 : 1;
}

// One get of the whole sequence: the chunks leased, and how many differ.
std::pair<size_t, size_t> get_once(cxlpool::KvStore& kv, const cxlpool::KvNamespace& ns,
                                   const std::vector<cxlpool::KvKey>& keys, const Args& a) {
  auto lease = kv.get(ns, keys);
  std::vector<std::byte> want(a.bytes);
  size_t bad = 0;
  for (size_t i = 0; i < lease.size(); ++i) {
    fill(want.data(), a.bytes, a.seed, i);
    const auto got = lease.bytes(i);
    if (got.size() != a.bytes || std::memcmp(got.data(), want.data(), a.bytes) != 0) ++bad;
  }
  return {lease.size(), bad};
}

int get(const Args& a) {
  std::vector<size_t> least(a.threads, SIZE_MAX), bad(a.threads, 0);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(a.threads);
  for (int t = 0; t < a.threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        cxlpool::Client client(a.socket, "pod-kv-get");
        cxlpool::KvStore kv(client);
        const auto ns = open_ns(kv);
        const auto keys = ns.compute_keys(tokens_of(a.seed, a.chunks));
        for (int r = 0; r < a.rounds; ++r) {
          const auto [got, wrong] = get_once(kv, ns, keys, a);
          least[t] = std::min(least[t], got);
          bad[t] += wrong;
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  size_t got = SIZE_MAX, wrong = 0;
  for (int t = 0; t < a.threads; ++t) {
    if (!errors[t].empty()) {
      std::fprintf(stderr, "pod_kv_client: %s\n", errors[t].c_str());
      return 2;
    }
    got = std::min(got, least[t]);
    wrong += bad[t];
  }
  std::printf("got=%zu bad=%zu\n", got, wrong);
  return wrong == 0 ? 0 : 1;
}

int lookup(const Args& a) {
  cxlpool::Client client(a.socket, "pod-kv-lookup");
  cxlpool::KvStore kv(client);
  const auto ns = open_ns(kv);
  const auto keys = ns.compute_keys(tokens_of(a.seed, a.chunks));
  // The asynchronous form: a lookup's result2 is the part the pod's peers hold.
  cxlpool_kv_request r{};
  r.user_data = 1;
  r.op = CXLPOOL_KV_LOOKUP;
  r.namespace_id = ns.id();
  r.keys = keys.data();
  r.n_keys = static_cast<uint32_t>(keys.size());
  if (cxlpool_kv_submit(kv.get(), &r, 1) != 1) throw std::runtime_error("lookup: submit failed");
  cxlpool_kv_completion c{};
  if (cxlpool_kv_reap(kv.get(), &c, 1, 10000) != 1) throw std::runtime_error("lookup: no completion");
  if (c.status != 0) throw std::runtime_error("lookup: status " + std::to_string(c.status));
  size_t ssd = 0;
  for (uint32_t i = 0; i < c.n_locations; ++i) ssd += c.locations[i].tier == CXLPOOL_KV_TIER_SSD ? 1 : 0;
  std::printf("local=%llu ssd=%zu pod=%llu\n", static_cast<unsigned long long>(c.result0), ssd,
              static_cast<unsigned long long>(c.result2));
  return 0;
}

int fill_dram(const Args& a) {
  cxlpool::Client client(a.socket, "pod-kv-fill");
  cxlpool::KvStore kv(client);
  const auto ns = open_ns(kv);
  std::vector<std::byte> data(a.bytes);
  size_t stored = 0;
  for (size_t f = 0; f < a.chunks; ++f) {
    const auto key = ns.compute_keys(tokens_of(a.seed * 1000003 + f + 1, 1));
    fill(data.data(), a.bytes, a.seed, f);
    const void* p = data.data();
    stored += kv.put(ns, key, {&p, 1}, a.bytes);
  }
  std::printf("stored=%zu\n", stored);
  return stored == a.chunks ? 0 : 1;
}

// Latency of one get of chunk 0 of sequence SEED, ROUNDS times; before
// each get the chunk is made to miss DRAM: "remote" deletes it here (the
// next get fetches it from the peer that holds it), "ssd" pushes it out by
// putting FILL other chunks (the daemon writes every commit through to its
// SSD log, so the chunk is read back from the device), "remote-ssd" deletes
// it here and pushes it out of the holder's DRAM by putting FILL other
// chunks there (POD_KV_HOLDER_SOCKET: the holder's daemon writes every
// commit through to its SSD log, so the holder reads it back for the pin).
int bench(const Args& a, const std::string& mode, size_t fillers) {
  using Clock = std::chrono::steady_clock;
  cxlpool::Client client(a.socket, "pod-kv-bench");
  cxlpool::KvStore kv(client);
  const auto ns = open_ns(kv);
  std::optional<cxlpool::Client> holder_client;
  std::optional<cxlpool::KvStore> holder;
  std::optional<cxlpool::KvNamespace> holder_ns;
  if (mode == "remote-ssd") {
    const char* socket = std::getenv("POD_KV_HOLDER_SOCKET");
    if (socket == nullptr) throw std::runtime_error("bench-remote-ssd needs POD_KV_HOLDER_SOCKET");
    holder_client.emplace(socket, "pod-kv-bench-holder");
    holder.emplace(*holder_client);
    holder_ns = open_ns(*holder);
  }
  const auto keys = ns.compute_keys(tokens_of(a.seed, 1));
  // A copy here (bench-ssd put one) would answer the first get.
  if (mode == "remote-ssd") (void)kv.erase(ns, keys);
  std::vector<std::byte> want(a.bytes), filler(a.bytes);
  fill(want.data(), a.bytes, a.seed, 0);
  if (mode == "ssd") {
    const void* p = want.data();
    if (kv.put(ns, keys, {&p, 1}, a.bytes) != 1) throw std::runtime_error("put of the chunk failed");
  }
  std::vector<double> us;
  for (int r = 0; r < a.rounds; ++r) {
    if (mode == "ssd" || mode == "remote-ssd") {
      cxlpool::KvStore& target = mode == "ssd" ? kv : *holder;
      const cxlpool::KvNamespace& target_ns = mode == "ssd" ? ns : *holder_ns;
      for (size_t f = 0; f < fillers; ++f) {
        const auto other = target_ns.compute_keys(tokens_of(a.seed * 1000003 + r * 1009 + f + 1, 1));
        fill(filler.data(), a.bytes, r, f);
        const void* p = filler.data();
        (void)target.put(target_ns, other, {&p, 1}, a.bytes);
      }
    }
    const auto t0 = Clock::now();
    auto lease = kv.get(ns, keys);
    const auto t1 = Clock::now();
    if (lease.size() != 1 || std::memcmp(lease.bytes(0).data(), want.data(), a.bytes) != 0) {
      std::fprintf(stderr, "pod_kv_client: round %d: %s\n", r, lease.size() != 1 ? "miss" : "bytes differ");
      return 1;
    }
    lease.release();
    if (mode == "remote" || mode == "remote-ssd") (void)kv.erase(ns, keys);
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  const double median = us[us.size() / 2];
  std::printf("mode=%s bytes=%zu rounds=%d median_us=%.1f p90_us=%.1f gbps=%.3f\n", mode.c_str(), a.bytes, a.rounds,
              median, us[us.size() * 9 / 10], static_cast<double>(a.bytes) / (median * 1e3));
  return 0;
}

// Latency of ROUNDS puts of CHUNKS new chunks each (sequences SEED * 1000
// + round: every put commits chunks the store did not have).
int bench_put(const Args& a) {
  using Clock = std::chrono::steady_clock;
  cxlpool::Client client(a.socket, "pod-kv-bench");
  cxlpool::KvStore kv(client);
  const auto ns = open_ns(kv);
  std::vector<std::vector<std::byte>> data(a.chunks, std::vector<std::byte>(a.bytes));
  std::vector<const void*> ptrs;
  for (size_t i = 0; i < a.chunks; ++i) {
    fill(data[i].data(), a.bytes, a.seed, i);
    ptrs.push_back(data[i].data());
  }
  std::vector<double> us;
  for (int r = 0; r < a.rounds; ++r) {
    const auto keys = ns.compute_keys(tokens_of(a.seed * 1000 + static_cast<uint64_t>(r), a.chunks));
    const auto t0 = Clock::now();
    const size_t stored = kv.put(ns, keys, ptrs, a.bytes);
    const auto t1 = Clock::now();
    if (stored != a.chunks) {
      std::fprintf(stderr, "pod_kv_client: round %d: stored %zu of %zu\n", r, stored, a.chunks);
      return 1;
    }
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("mode=put chunks=%zu bytes=%zu rounds=%d median_us=%.1f p90_us=%.1f\n", a.chunks, a.bytes, a.rounds,
              us[us.size() / 2], us[us.size() * 9 / 10]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: pod_kv_client put|get SOCKET SEED CHUNKS CHUNK_BYTES [THREADS ROUNDS]\n");
    return 2;
  }
  Args a;
  a.op = argv[1];
  a.socket = argv[2];
  a.seed = std::strtoull(argv[3], nullptr, 10);
  a.chunks = std::strtoull(argv[4], nullptr, 10);
  a.bytes = std::strtoull(argv[5], nullptr, 10);
  if (argc >= 8) {
    a.threads = std::atoi(argv[6]);
    a.rounds = std::atoi(argv[7]);
  }
  if (a.chunks == 0 || a.bytes == 0 || a.bytes % 8 != 0 || a.threads < 1 || a.rounds < 1) {
    std::fprintf(stderr, "pod_kv_client: bad arguments\n");
    return 2;
  }
  try {
    if (a.op == "put") return put(a);
    if (a.op == "get") return get(a);
    if (a.op == "lookup") return lookup(a);
    if (a.op == "fill") return fill_dram(a);
    if (a.op == "bench-remote") return bench(a, "remote", 0);
    if (a.op == "bench-ssd") return bench(a, "ssd", static_cast<size_t>(a.threads));
    if (a.op == "bench-remote-ssd") return bench(a, "remote-ssd", static_cast<size_t>(a.threads));
    if (a.op == "bench-put") return bench_put(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pod_kv_client: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "pod_kv_client: unknown op %s\n", a.op.c_str());
  return 2;
}
