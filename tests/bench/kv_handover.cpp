// SPDX-License-Identifier: Apache-2.0
// A put without the commit's copy can only work by handing the writer's
// pages to the store and sealing them against the writer: Linux makes pages
// immutable for a process that mapped them writable in one way, a memfd
// sealed with F_SEAL_WRITE (refused with EBUSY while a writable mapping is
// left, and never lifted). This measures the writer's side of two ways to do
// it, against a plain copy of the same bytes in the same run:
//   fresh   per put, a new memfd created, sized, mapped (pages faulted in
//           and zeroed one by one as the copy touches them), written,
//           unmapped and sealed;
//   pooled  a preparing thread (the daemon's, off the put's path) creates
//           memfds and allocates their pages with fallocate ahead of use;
//           per put the writer maps one with MAP_POPULATE, writes, unmaps
//           and seals it, and the store maps it read-only (as it would to
//           serve it) and closes it. The preparer's CPU time per window is
//           reported too: on a machine without an idle core it is paid by
//           the put all the same.
// Both with 4 KiB pages and, where the system has free hugetlb pages, with
// MFD_HUGETLB. Also checked: a window whose writer kept a writable mapping
// cannot be sealed (EBUSY), so a store that seals before it takes pages
// falls back to copying from such a writer.
#include "kv_handover.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kv_bench_util.hpp"

namespace kvbench {
namespace {

constexpr unsigned kSeals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
constexpr std::size_t kPoolDepth = 8;  // windows prepared ahead

volatile unsigned char g_seen;  // keeps the copies observable

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// -1 when the system cannot make one (no free hugetlb pages).
int sealable_memfd(std::uint64_t bytes, unsigned flags) {
  const int fd = ::memfd_create("kvstore-bench-window", MFD_CLOEXEC | MFD_ALLOW_SEALING | flags);
  if (fd < 0) return -1;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The writer is done with fd's pages: seal them and check that it cannot
// write them again.
void seal_and_check(int fd, std::uint64_t bytes) {
  if (::fcntl(fd, F_ADD_SEALS, kSeals) != 0) die("F_ADD_SEALS after the writer unmapped", -errno);
  void* again = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (again != MAP_FAILED) die("a sealed memfd was mapped writable", -EINVAL);
}

struct Rate {
  double ops_per_s = 0;
  double prepare_cpu_us = 0;  // per window, on the preparing thread
  std::size_t stalls = 0;     // puts that waited for a prepared window
};

// Runs op until about a second has passed; ops/s. op false: cannot run.
template <typename Op>
double per_second(Op op) {
  std::size_t ops = 0;
  const auto t0 = Clock::now();
  double seconds = 0;
  while (seconds < 1.0) {
    if (!op()) return 0;
    ++ops;
    seconds = seconds_since(t0);
  }
  return static_cast<double>(ops) / seconds;
}

double copy_rate(const std::vector<unsigned char>& src) {
  std::vector<std::vector<unsigned char>> dst(16, std::vector<unsigned char>(src.size(), 1));
  std::size_t i = 0;
  return per_second([&] {
    std::vector<unsigned char>& d = dst[i++ % dst.size()];
    std::memcpy(d.data(), src.data(), src.size());
    g_seen = d[i % d.size()];
    return true;
  });
}

double fresh_rate(const std::vector<unsigned char>& src, unsigned flags) {
  return per_second([&] {
    const int fd = sealable_memfd(src.size(), flags);
    if (fd < 0) return false;
    void* p = ::mmap(nullptr, src.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      return false;
    }
    std::memcpy(p, src.data(), src.size());
    ::munmap(p, src.size());
    seal_and_check(fd, src.size());
    ::close(fd);
    return true;
  });
}

// Windows made and filled with pages by a thread of their own.
class WindowPool {
 public:
  WindowPool(std::uint64_t bytes, unsigned flags) : bytes_(bytes), flags_(flags), thread_([this] { run(); }) {}
  ~WindowPool() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    for (const int fd : ready_) ::close(fd);
  }
  WindowPool(const WindowPool&) = delete;
  WindowPool& operator=(const WindowPool&) = delete;

  // A prepared window, -1 when the preparer failed; counts waits.
  int take() {
    std::unique_lock lock(mutex_);
    if (ready_.empty() && !failed_) ++stalls_;
    cv_.wait(lock, [&] { return !ready_.empty() || failed_; });
    if (ready_.empty()) return -1;
    const int fd = ready_.front();
    ready_.pop_front();
    cv_.notify_all();
    return fd;
  }
  [[nodiscard]] std::size_t stalls() const { return stalls_; }
  // The preparer's CPU time per window made so far.
  [[nodiscard]] double cpu_us_per_window() {
    const std::lock_guard lock(mutex_);
    return made_ == 0 ? 0 : cpu_s_ / static_cast<double>(made_) * 1e6;
  }

 private:
  void run() {
    const double cpu0 = thread_cpu_seconds();
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || ready_.size() < kPoolDepth; });
        if (stop_) return;
      }
      const int fd = sealable_memfd(bytes_, flags_);
      const bool ok = fd >= 0 && ::fallocate(fd, 0, 0, static_cast<off_t>(bytes_)) == 0;
      const std::lock_guard lock(mutex_);
      if (!ok) {
        if (fd >= 0) ::close(fd);
        failed_ = true;
        cv_.notify_all();
        return;
      }
      ready_.push_back(fd);
      ++made_;
      cpu_s_ = thread_cpu_seconds() - cpu0;
      cv_.notify_all();
    }
  }

  std::uint64_t bytes_;
  unsigned flags_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<int> ready_;
  bool stop_ = false, failed_ = false;
  std::size_t stalls_ = 0, made_ = 0;
  double cpu_s_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

Rate pooled_rate(const std::vector<unsigned char>& src, unsigned flags) {
  WindowPool pool(src.size(), flags);
  Rate rate;
  rate.ops_per_s = per_second([&] {
    const int fd = pool.take();
    if (fd < 0) return false;
    void* p = ::mmap(nullptr, src.size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) die("mmap of a prepared window", -errno);
    std::memcpy(p, src.data(), src.size());
    ::munmap(p, src.size());
    seal_and_check(fd, src.size());
    // The store's side: a read-only mapping to serve the chunk from.
    void* r = ::mmap(nullptr, src.size(), PROT_READ, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) die("read-only mmap of a sealed window", -errno);
    g_seen = static_cast<const unsigned char*>(r)[src.size() - 1];
    ::munmap(r, src.size());
    ::close(fd);
    return true;
  });
  rate.prepare_cpu_us = pool.cpu_us_per_window();
  rate.stalls = pool.stalls();
  return rate;
}

// A writer that keeps its writable mapping cannot be sealed against: the
// store must copy from it instead.
void check_kept_mapping_refused(std::uint64_t bytes) {
  const int fd = sealable_memfd(bytes, 0);
  if (fd < 0) die("memfd_create", -errno);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) die("mmap", -errno);
  std::memset(p, 1, bytes);
  if (::fcntl(fd, F_ADD_SEALS, kSeals) == 0 || errno != EBUSY) die("F_ADD_SEALS with a writable mapping left", -EINVAL);
  ::munmap(p, bytes);
  ::close(fd);
}

// One core's rate for a pooled put: the writer's time plus the preparer's.
double one_core(const Rate& r) {
  if (r.ops_per_s == 0) return 0;
  return 1.0 / (1.0 / r.ops_per_s + r.prepare_cpu_us / 1e6);
}

std::string huge_text(double rate) {
  return rate > 0 ? std::to_string(static_cast<long long>(rate)) + " ops/s" : "skipped (no free hugetlb pages)";
}

}  // namespace

int run_handover(std::uint64_t bytes) {
  std::vector<unsigned char> src(bytes);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + (i >> 12));
  check_kept_mapping_refused(bytes);
  const double copy = copy_rate(src);
  const double fresh = fresh_rate(src, 0);
  if (fresh == 0) die("memfd_create/ftruncate/mmap of a sealable memfd", -errno);
  const Rate pooled = pooled_rate(src, 0);
  if (pooled.ops_per_s == 0) die("preparing put windows (memfd_create + fallocate)", -errno);
  const bool huge_size = bytes % (2u << 20) == 0;  // the default huge page size
  const double fresh_huge = huge_size ? fresh_rate(src, MFD_HUGETLB) : 0;
  const Rate pooled_huge = huge_size && fresh_huge > 0 ? pooled_rate(src, MFD_HUGETLB) : Rate{};
  std::printf("handover of %llu KiB vs memcpy %.0f ops/s (a copy-path put makes two such copies):\n",
              static_cast<unsigned long long>(bytes >> 10), copy);
  std::printf("  fresh memfd per put, 4 KiB pages: %.0f ops/s; hugetlb: %s\n", fresh, huge_text(fresh_huge).c_str());
  std::printf("  pooled windows, 4 KiB pages: writer %.0f ops/s, preparer %.1f us CPU per window, %zu stalls, "
              "one core %.0f ops/s\n",
              pooled.ops_per_s, pooled.prepare_cpu_us, pooled.stalls, one_core(pooled));
  if (pooled_huge.ops_per_s > 0) {
    std::printf("  pooled windows, hugetlb: writer %.0f ops/s, preparer %.1f us CPU per window, one core %.0f ops/s\n",
                pooled_huge.ops_per_s, pooled_huge.prepare_cpu_us, one_core(pooled_huge));
  }
  std::printf("  a window whose writer kept its writable mapping: sealing refused (EBUSY), as required\n");
  std::printf("RESULT mode=handover bytes=%llu memcpy_ops_per_s=%.0f ops_per_s=%.0f hugetlb_ops_per_s=%.0f "
              "pooled_ops_per_s=%.0f pooled_prepare_us=%.1f pooled_one_core_ops_per_s=%.0f "
              "pooled_hugetlb_ops_per_s=%.0f pooled_hugetlb_one_core_ops_per_s=%.0f\n",
              static_cast<unsigned long long>(bytes), copy, fresh, fresh_huge, pooled.ops_per_s,
              pooled.prepare_cpu_us, one_core(pooled), pooled_huge.ops_per_s, one_core(pooled_huge));
  return 0;
}

}  // namespace kvbench
