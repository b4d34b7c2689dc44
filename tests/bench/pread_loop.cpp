// SPDX-License-Identifier: Apache-2.0
// The smallest psync reader there is, as a control for run-io-vs-fio.sh:
// pread() of fixed-size blocks into one page-aligned buffer, sequential or
// random, for a given time; one clock read before and after each call. It
// writes the handful of fio JSON fields io_compare reads, so its figures go
// through the same reader as fio's and cxlpool-io's. If it matches
// cxlpool-io where both trail fio, the gap is outside cxlpool-io's code.
//   pread_loop FILE BLOCK_BYTES SECONDS [random] > report.json
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <nlohmann/json.hpp>

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t cpu_ns(const timeval& tv) {
  return static_cast<std::uint64_t>(tv.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(tv.tv_usec) * 1000ull;
}

std::uint64_t percentile(std::vector<std::uint32_t>& lat_ns, double p) {
  if (lat_ns.empty()) return 0;
  const auto k = static_cast<std::size_t>(p / 100.0 * static_cast<double>(lat_ns.size() - 1));
  std::nth_element(lat_ns.begin(), lat_ns.begin() + static_cast<std::ptrdiff_t>(k), lat_ns.end());
  return lat_ns[k];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5 || (argc == 5 && std::strcmp(argv[4], "random") != 0)) {
    std::fprintf(stderr, "usage: %s FILE BLOCK_BYTES SECONDS [random]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const std::uint64_t block = std::strtoull(argv[2], nullptr, 10);
  const std::uint64_t seconds = std::strtoull(argv[3], nullptr, 10);
  const bool random = argc == 5;
  if (block == 0 || block % 4096 != 0 || seconds == 0) {
    std::fprintf(stderr, "pread_loop: BLOCK_BYTES must be a multiple of 4096 and SECONDS > 0\n");
    return 2;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "pread_loop: open %s (O_DIRECT): %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  std::uint64_t size = 0;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISBLK(st.st_mode)) {
    if (::ioctl(fd, BLKGETSIZE64, &size) != 0) size = 0;
  } else {
    size = static_cast<std::uint64_t>(st.st_size);
  }
  const std::uint64_t blocks = size / block;
  if (blocks == 0) {
    std::fprintf(stderr, "pread_loop: %s is smaller than one block\n", path.c_str());
    return 1;
  }
  void* mem = ::mmap(nullptr, block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (mem == MAP_FAILED) {
    std::fprintf(stderr, "pread_loop: mmap: %s\n", std::strerror(errno));
    return 1;
  }
  std::mt19937_64 rng(1);
  std::vector<std::uint32_t> lat_ns;
  lat_ns.reserve(1 << 20);
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  const std::uint64_t start = now_ns();
  const std::uint64_t end = start + seconds * 1'000'000'000ull;
  std::uint64_t next = 0, ios = 0, t = start;
  while (t < end) {
    const std::uint64_t index = random ? rng() % blocks : next++ % blocks;
    const ssize_t got = ::pread(fd, mem, block, static_cast<off_t>(index * block));
    const std::uint64_t done = now_ns();
    if (got != static_cast<ssize_t>(block)) {
      std::fprintf(stderr, "pread_loop: pread at %llu: %s\n", static_cast<unsigned long long>(index * block),
                   got < 0 ? std::strerror(errno) : "short read");
      return 1;
    }
    lat_ns.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(done - t, UINT32_MAX)));
    ++ios;
    t = done;
  }
  ::getrusage(RUSAGE_SELF, &after);
  const double runtime_ns = static_cast<double>(t - start);
  const double usr = 100.0 * static_cast<double>(cpu_ns(after.ru_utime) - cpu_ns(before.ru_utime)) / runtime_ns;
  const double sys = 100.0 * static_cast<double>(cpu_ns(after.ru_stime) - cpu_ns(before.ru_stime)) / runtime_ns;
  // Every field read_fio_report asks for; slat is 0 (synchronous), lat = clat.
  const nlohmann::json none = {{"min", 0}, {"max", 0}, {"mean", 0.0}, {"stddev", 0.0}, {"N", 0}};
  nlohmann::json clat = none;
  clat["N"] = ios;
  clat["percentile"] = {{"50.000000", percentile(lat_ns, 50)}, {"99.000000", percentile(lat_ns, 99)}};
  const auto direction = [&](std::uint64_t n, const nlohmann::json& latency) {
    const double b = static_cast<double>(n * block);
    return nlohmann::json{{"io_bytes", n * block},
                          {"bw_bytes", static_cast<std::uint64_t>(b * 1e9 / runtime_ns)},
                          {"bw", static_cast<std::uint64_t>(b * 1e9 / runtime_ns / 1024)},
                          {"iops", static_cast<double>(n) * 1e9 / runtime_ns},
                          {"runtime", n ? static_cast<std::uint64_t>(runtime_ns / 1e6) : 0},
                          {"total_ios", n},
                          {"slat_ns", none},
                          {"clat_ns", latency},
                          {"lat_ns", latency}};
  };
  nlohmann::json job = {{"jobname", "pread_loop"},
                        {"groupid", 0},
                        {"error", 0},
                        {"read", direction(ios, clat)},
                        {"write", direction(0, none)},
                        {"job_runtime", static_cast<std::uint64_t>(runtime_ns / 1e6)},
                        {"usr_cpu", usr},
                        {"sys_cpu", sys},
                        {"ctx", after.ru_nvcsw + after.ru_nivcsw}};
  nlohmann::json report = {{"fio version", "pread_loop"}, {"timestamp", std::time(nullptr)}, {"jobs", {job}}};
  std::printf("%s\n", report.dump(1).c_str());
  return 0;
}
