// SPDX-License-Identifier: Apache-2.0
// Control-plane cost of the pool: allocate + map + free of a 2 MiB leased
// region through the daemon's socket, against the same work done locally
// without a daemon (memfd_create + ftruncate + mmap + munmap + close) in the
// same run. Prints ops/s and p50/p99/p99.9 latency of both and their ratio.
//
//   control_plane_bench SOCKET [--ops N] [--clients C] [--size BYTES] [--tier ID]
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/cxlpool.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Summary {
  double ops_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
};

Summary summarize(std::vector<double>& lat_us, double wall_s) {
  std::sort(lat_us.begin(), lat_us.end());
  auto pct = [&](double p) { return lat_us[std::min(lat_us.size() - 1, static_cast<size_t>(p * lat_us.size()))]; };
  return {static_cast<double>(lat_us.size()) / wall_s, pct(0.50), pct(0.99), pct(0.999)};
}

// One op = what a client does to get usable pool memory and give it back.
bool pool_op(cxlpool_client* client, uint32_t tier, uint64_t size) {
  cxlpool_region* region = nullptr;
  if (cxlpool_region_alloc(client, tier, size, 0, &region) != 0) return false;
  void* addr = nullptr;
  const bool mapped = cxlpool_region_map(region, &addr) == 0;
  if (mapped) static_cast<volatile char*>(addr)[0];  // mapping is usable; no page is faulted in
  return cxlpool_region_free(region) == 0 && mapped;
}

bool local_op(uint64_t size) {
  const int fd = memfd_create("bench", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return false;
  void* addr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return false;
  static_cast<volatile char*>(addr)[0];
  munmap(addr, size);
  close(fd);
  return true;
}

template <typename Op>
Summary run(int clients, int ops, Op make_worker_op) {
  std::vector<std::vector<double>> lat(clients);
  std::atomic<bool> ok{true};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto op = make_worker_op();
      lat[c].reserve(ops / clients);
      for (int i = 0; i < ops / clients; ++i) {
        const auto t0 = Clock::now();
        if (!op()) {
          ok = false;
          return;
        }
        lat[c].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  if (!ok) {
    std::fprintf(stderr, "operation failed: %s\n", cxlpool_last_error());
    std::exit(1);
  }
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  return summarize(all, wall);
}

void print(const char* name, const Summary& s) {
  std::printf("%-34s %10.0f ops/s   p50 %7.1f us   p99 %7.1f us   p99.9 %7.1f us\n", name, s.ops_per_s,
              s.p50_us, s.p99_us, s.p999_us);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SOCKET [--ops N] [--clients C] [--size BYTES] [--tier ID]\n", argv[0]);
    return 2;
  }
  const std::string socket = argv[1];
  int ops = 20000;
  int clients = 1;
  uint64_t size = 2 << 20;
  uint32_t tier = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const long long value = std::atoll(argv[i + 1]);
    if (key == "--ops") ops = static_cast<int>(value);
    else if (key == "--clients") clients = static_cast<int>(value);
    else if (key == "--size") size = static_cast<uint64_t>(value);
    else if (key == "--tier") tier = static_cast<uint32_t>(value);
    else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  std::printf("alloc+map+free of %llu KiB, %d ops, %d client(s)\n", static_cast<unsigned long long>(size >> 10),
              ops, clients);

  const Summary local = run(clients, ops, [&] { return [&] { return local_op(size); }; });
  std::vector<cxlpool_client*> conns;
  const Summary pool = run(clients, ops, [&] {
    cxlpool_client* client = nullptr;
    if (cxlpool_connect(socket.c_str(), "control-plane-bench", &client) != 0) {
      std::fprintf(stderr, "connect: %s\n", cxlpool_last_error());
      std::exit(1);
    }
    return [client, tier, size] { return pool_op(client, tier, size); };
  });
  print("local memfd+mmap (no daemon)", local);
  print("cxlpoold alloc+map+free", pool);
  std::printf("ratio pool/local: throughput %.2fx, p99 latency %.2fx\n", pool.ops_per_s / local.ops_per_s,
              pool.p99_us / local.p99_us);
  return 0;
}
