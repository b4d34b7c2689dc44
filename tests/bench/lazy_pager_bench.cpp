// SPDX-License-Identifier: Apache-2.0
// Migrate-on-access against its alternatives, on one image held in a memfd:
// the time to make every page of N MiB readable in fresh memory by
//   copy   memcpy into fresh anonymous memory (a copy-based restore),
//   mow    touching a MAP_PRIVATE mapping of the image (the kernel's page
//          cache pages, mapped on fault),
//   moa    touching userfaultfd-registered anonymous memory that a
//          LazyPager on another thread fills (one fault per window),
// and the per-fault latency the toucher sees under moa. Ratios are to copy
// and to mow in the same run.
//
//   lazy_pager_bench [--mib N] [--window W]... [--repeat R]
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/ckpt/lazy_pager.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/clock.hpp"

using namespace cxlpool;
using namespace cxlpool::ckpt;

namespace {

struct Run {
  double seconds = 0;
  std::vector<uint64_t> touch_ns;  // per page, moa only
};

void* fresh_anon(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::perror("mmap"), std::exit(1);
  return p;
}

uint64_t touch_all(const void* base, size_t bytes) {
  uint64_t sum = 0;
  for (size_t off = 0; off < bytes; off += kPageSize) sum += *reinterpret_cast<const volatile uint64_t*>(
      static_cast<const char*>(base) + off);
  return sum;
}

Run run_copy(const void* image, size_t bytes) {
  void* dst = fresh_anon(bytes);
  uint64_t t0 = monotonic_ns();
  std::memcpy(dst, image, bytes);
  Run r{static_cast<double>(monotonic_ns() - t0) / 1e9, {}};
  ::munmap(dst, bytes);
  return r;
}

Run run_mow(int fd, size_t bytes) {
  uint64_t t0 = monotonic_ns();
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) std::perror("mmap image"), std::exit(1);
  touch_all(p, bytes);
  Run r{static_cast<double>(monotonic_ns() - t0) / 1e9, {}};
  ::munmap(p, bytes);
  return r;
}

Run run_moa(int fd, size_t bytes, uint32_t window, LazyPagerCounters* counters) {
  auto pager = LazyPager::create(fd, {.window_pages = window, .record_order = false});
  if (!pager) std::fprintf(stderr, "%s\n", pager.error().message.c_str()), std::exit(1);
  void* dst = fresh_anon(bytes);
  LazyRange range{reinterpret_cast<uint64_t>(dst), bytes, 0};
  auto uffd = create_registered_uffd({&range, 1});
  if (!uffd) std::fprintf(stderr, "%s\n", uffd.error().message.c_str()), std::exit(77);
  if (!(*pager)->add_client(std::move(*uffd), {range})) std::exit(1);
  std::thread server([&] { (void)(*pager)->run(); });
  Run r;
  r.touch_ns.reserve(bytes / kPageSize / window + 1);
  uint64_t t0 = monotonic_ns();
  for (size_t off = 0; off < bytes; off += kPageSize) {
    uint64_t a = monotonic_ns();
    (void)*reinterpret_cast<const volatile uint64_t*>(static_cast<const char*>(dst) + off);
    uint64_t b = monotonic_ns();
    if ((off / kPageSize) % window == 0) r.touch_ns.push_back(b - a);  // the touches that faulted
  }
  r.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
  (*pager)->stop();
  server.join();
  *counters = (*pager)->counters();
  // munmap of registered memory waits until a pager reads the unmap event:
  // close the pager's descriptor first.
  pager->reset();
  ::munmap(dst, bytes);
  return r;
}

uint64_t percentile(std::vector<uint64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 64;
  int repeat = 3;
  std::vector<uint32_t> windows;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mib") mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--window") windows.push_back(static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10)));
    else if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
    else return std::fprintf(stderr, "usage: %s [--mib N] [--window W]... [--repeat R]\n", argv[0]), 2;
  }
  if (windows.empty()) windows = {1, 4, 16};
  size_t bytes = mib << 20;
  int fd = ::memfd_create("lazy-bench-image", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return std::perror("memfd"), 1;
  void* image = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (image == MAP_FAILED) return std::perror("mmap"), 1;
  for (size_t i = 0; i < bytes / 8; ++i) static_cast<uint64_t*>(image)[i] = i * 0x9e3779b97f4a7c15ull | 1;

  // Best of `repeat` for each, so page cache warm-up and stray scheduling
  // do not decide the ratios.
  auto best = [&](auto&& fn) {
    Run b;
    b.seconds = 1e30;
    for (int i = 0; i < repeat; ++i) {
      Run r = fn();
      if (r.seconds < b.seconds) b = std::move(r);
    }
    return b;
  };
  double pages = static_cast<double>(bytes / kPageSize);
  Run copy = best([&] { return run_copy(image, bytes); });
  Run mow = best([&] { return run_mow(fd, bytes); });
  std::printf("image %zu MiB, %zu pages, best of %d\n", mib, bytes / kPageSize, repeat);
  std::printf("%-10s %10s %10s %12s\n", "method", "ms", "GiB/s", "ns/page");
  auto row = [&](const char* name, const Run& r) {
    std::printf("%-10s %10.2f %10.2f %12.0f\n", name, r.seconds * 1e3,
                static_cast<double>(bytes) / r.seconds / (1ull << 30), r.seconds * 1e9 / pages);
  };
  row("copy", copy);
  row("mow", mow);
  for (uint32_t w : windows) {
    LazyPagerCounters c;
    Run moa = best([&] { return run_moa(fd, bytes, w, &c); });
    std::string name = "moa w=" + std::to_string(w);
    row(name.c_str(), moa);
    std::printf("           faults %llu, toucher p50 %llu ns p99 %llu ns, pager service p50 <= %llu ns p99 <= %llu ns\n",
                static_cast<unsigned long long>(c.faults),
                static_cast<unsigned long long>(percentile(moa.touch_ns, 0.5)),
                static_cast<unsigned long long>(percentile(moa.touch_ns, 0.99)),
                static_cast<unsigned long long>(c.fault_latency.quantile_upper_ns(0.5)),
                static_cast<unsigned long long>(c.fault_latency.quantile_upper_ns(0.99)));
    std::printf("           moa/copy %.2fx  moa/mow %.2fx (time ratios)\n", moa.seconds / copy.seconds,
                moa.seconds / mow.seconds);
  }
  return 0;
}
