// SPDX-License-Identifier: Apache-2.0
// The process tests/bench/ckpt_restore.sh checkpoints: `ckpt_bench_target
// MIB` writes MIB of anonymous memory, prints "checkpoint", and then (in the
// original or in a restored clone) answers commands on stdin, one per line:
//   stat       "rss_anon_kib N rss_file_kib N rss_shmem_kib N"
//   read       reads every byte once: "read_ms X"
//   write PCT [RUN]  writes one byte in PCT% of the pages, spread evenly in
//              runs of RUN consecutive pages (default 1): "write_ms X pages N"
//   quit       exits
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

long status_kib(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = static_cast<size_t>(argc > 1 ? std::atol(argv[1]) : 64) << 20;
  auto* p = static_cast<uint64_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return 1;
  for (size_t i = 0; i < bytes / 8; ++i) p[i] = i * 0x9e3779b97f4a7c15ull;
  std::printf("checkpoint\n");
  std::fflush(stdout);
  char line[128];
  while (std::fgets(line, sizeof line, stdin)) {
    const auto t = std::chrono::steady_clock::now();
    if (std::strncmp(line, "stat", 4) == 0) {
      std::printf("rss_anon_kib %ld rss_file_kib %ld rss_shmem_kib %ld\n", status_kib("RssAnon"),
                  status_kib("RssFile"), status_kib("RssShmem"));
    } else if (std::strncmp(line, "read", 4) == 0) {
      uint64_t sum = 0;
      for (size_t i = 0; i < bytes / 8; ++i) sum += p[i];
      std::printf("read_ms %.3f sum %llu\n", ms_since(t), static_cast<unsigned long long>(sum & 0xff));
    } else if (std::strncmp(line, "write", 5) == 0) {
      char* rest = nullptr;
      const size_t pct = std::strtoul(line + 5, &rest, 10);
      const size_t run = std::max<size_t>(1, std::strtoul(rest, nullptr, 10));
      // Groups of `step` pages whose first `run` are written: PCT% in all.
      const size_t pages = bytes / 4096, step = pct ? std::max(run + (pct < 100), run * 100 / pct) : pages + 1;
      size_t written = 0;
      for (size_t group = 0; group < pages; group += step) {
        for (size_t pg = group; pg < std::min(group + run, pages); ++pg, ++written) p[pg * 512] += 1;
      }
      std::printf("write_ms %.3f pages %zu\n", ms_since(t), written);
    } else if (std::strncmp(line, "quit", 4) == 0) {
      return 0;
    }
    std::fflush(stdout);
  }
  return 0;
}
