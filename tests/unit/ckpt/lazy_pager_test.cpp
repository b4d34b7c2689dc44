// SPDX-License-Identifier: Apache-2.0
// The lazy pager against real userfaultfds: forked children register
// anonymous memory, send the descriptor over a socketpair, and check what
// they read against the image. Skips where userfaultfd is not available.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "cxlpool/ckpt/lazy_pager.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/ckpt/uffd_raw.hpp"
#include "support/child_process.hpp"
#include "support/wait_until.hpp"

namespace cxlpool::ckpt {
namespace {

using integration::ForkedChild;
using namespace std::chrono_literals;

constexpr uint64_t kPages = 64;
constexpr uint64_t kBytes = kPages * kPageSize;

// Every 8-byte word of the image says where it is, and is never zero.
uint64_t word_at(uint64_t offset) { return (offset / 8 + 1) * 0x9e3779b97f4a7c15ull | 1; }

bool page_matches(const volatile uint64_t* p, uint64_t source_offset) {
  for (uint64_t i = 0; i < kPageSize / 8; ++i)
    if (p[i] != word_at(source_offset + i * 8)) return false;
  return true;
}

bool page_is_zero(const volatile uint64_t* p) {
  for (uint64_t i = 0; i < kPageSize / 8; ++i)
    if (p[i] != 0) return false;
  return true;
}

UniqueFd pidfd_of(pid_t pid) { return UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))); }

class LazyPagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    long probe = uffd_raw::open(uffd_raw::RawSyscall{});
    if (probe < 0) GTEST_SKIP() << "userfaultfd unavailable: " << std::strerror(static_cast<int>(-probe));
    ::close(static_cast<int>(probe));
    image_.reset(::memfd_create("lazy-image", MFD_CLOEXEC));
    ASSERT_TRUE(image_.valid());
    std::vector<uint64_t> words(kBytes / 8);
    for (uint64_t i = 0; i < words.size(); ++i) words[i] = word_at(i * 8);
    ASSERT_EQ(::pwrite(image_.get(), words.data(), kBytes, 0), static_cast<ssize_t>(kBytes));
  }

  void TearDown() override {
    if (pager_) {
      pager_->stop();
      if (thread_.joinable()) thread_.join();
    }
    if (region_ != nullptr) ::munmap(region_, region_bytes_);
  }

  void start_pager(LazyPagerOptions options = {}) {
    auto p = LazyPager::create(image_.get(), options);
    ASSERT_TRUE(p) << p.error().message;
    pager_ = std::move(*p);
    thread_ = std::thread([this] { ASSERT_TRUE(pager_->run()); });
  }

  // Untouched anonymous memory, inherited by the children forked after it:
  // each child's copy has every page missing.
  uint64_t make_region(uint64_t pages) {
    region_bytes_ = pages * kPageSize;
    region_ = ::mmap(nullptr, region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(region_, MAP_FAILED);
    return reinterpret_cast<uint64_t>(region_);
  }

  // A child that registers [addr, addr + length) and sends the descriptor
  // over a socketpair, then waits for a byte on `go` (when given) and runs
  // `body`. The parent adds it to the pager with `ranges` and its pidfd.
  std::unique_ptr<ForkedChild> spawn(uint64_t addr, uint64_t length, std::vector<LazyRange> ranges,
                                     const std::function<int()>& body, LazyClientId* id = nullptr,
                                     bool close_uffd = false) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    auto child = std::make_unique<ForkedChild>([&](int) {
      ::alarm(20);  // a pager bug fails the test instead of hanging it
      ::close(sv[0]);
      LazyRange whole{addr, length, 0};
      auto uffd = create_registered_uffd({&whole, 1});
      if (!uffd) return 90;
      if (!send_uffd(sv[1], uffd->get(), 7)) return 91;
      if (close_uffd) uffd->reset();
      char go;
      if (::read(sv[1], &go, 1) != 1) return 92;
      return body();
    });
    ::close(sv[1]);
    UniqueFd sock(sv[0]);
    uint64_t tag = 0;
    auto uffd = receive_uffd(sock.get(), &tag);
    EXPECT_TRUE(uffd) << (uffd ? "" : uffd.error().message);
    EXPECT_EQ(tag, 7u);
    if (!uffd) return child;
    if (pager_) {
      auto added = pager_->add_client(std::move(*uffd), std::move(ranges), pidfd_of(child->pid()));
      EXPECT_TRUE(added) << (added ? "" : added.error().message);
      if (added && id != nullptr) *id = *added;
    }
    go_.push_back(std::move(sock));
    return child;
  }

  void go() {
    for (UniqueFd& s : go_) EXPECT_EQ(::write(s.get(), "g", 1), 1);
  }

  UniqueFd image_;
  std::unique_ptr<LazyPager> pager_;
  std::thread thread_;
  void* region_ = nullptr;
  uint64_t region_bytes_ = 0;
  std::vector<UniqueFd> go_;
};

TEST_F(LazyPagerTest, ChildReadsTheImage) {
  start_pager({.window_pages = 4});
  uint64_t base = make_region(kPages);
  auto child = spawn(base, kBytes, {{base, kBytes, 0}}, [base] {
    // Backwards, so the window runs past pages already placed (EEXIST).
    for (uint64_t i = kPages; i-- > 0;)
      if (!page_matches(reinterpret_cast<uint64_t*>(base + i * kPageSize), i * kPageSize)) return 1;
    return 0;
  });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  LazyPagerCounters c = pager_->counters();
  EXPECT_EQ(c.pages_copied, kPages);
  EXPECT_EQ(c.bytes_copied, kBytes);
  EXPECT_GE(c.faults, kPages / 4);
  EXPECT_EQ(c.fault_latency.count(), c.faults);
  EXPECT_EQ(pager_->fault_order().size(), kPages);
  EXPECT_TRUE(test::wait_until([&] { return pager_->client_count() == 0; }, 5s)) << "exit not noticed";
}

TEST_F(LazyPagerTest, RangesMapAtOffsetsAndHolesReadZero) {
  start_pager({.window_pages = 8});
  uint64_t base = make_region(16);
  // Pages 0-3 from image page 10, pages 8-11 from image page 40, the rest
  // is not in the image.
  auto child = spawn(base, 16 * kPageSize,
                     {{base, 4 * kPageSize, 10 * kPageSize}, {base + 8 * kPageSize, 4 * kPageSize, 40 * kPageSize}},
                     [base] {
                       for (uint64_t i = 0; i < 16; ++i) {
                         auto* p = reinterpret_cast<uint64_t*>(base + i * kPageSize);
                         bool ok = i < 4    ? page_matches(p, (10 + i) * kPageSize)
                                   : i < 8  ? page_is_zero(p)
                                   : i < 12 ? page_matches(p, (40 + i - 8) * kPageSize)
                                            : page_is_zero(p);
                         if (!ok) return static_cast<int>(i) + 1;
                       }
                       return 0;
                     });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  LazyPagerCounters c = pager_->counters();
  EXPECT_EQ(c.pages_copied, 8u);
  EXPECT_EQ(c.zero_pages, 8u);
  std::vector<uint64_t> order = pager_->fault_order();
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(order[0], base);  // the window stopped at the range's end
  EXPECT_EQ(order[4], base + 8 * kPageSize);
}

TEST_F(LazyPagerTest, DontneedReadsZerosAfterwards) {
  start_pager({.window_pages = 2});
  uint64_t base = make_region(16);
  auto child = spawn(base, 16 * kPageSize, {{base, 16 * kPageSize, 0}}, [base] {
    auto page = [base](uint64_t i) { return reinterpret_cast<volatile uint64_t*>(base + i * kPageSize); };
    for (uint64_t i = 0; i < 8; ++i)
      if (!page_matches(page(i), i * kPageSize)) return 1;
    page(3)[0] = 42;
    // Pages 2-5 were placed (3 written to); 10-12 never touched.
    if (::madvise(reinterpret_cast<void*>(base + 2 * kPageSize), 4 * kPageSize, MADV_DONTNEED) != 0) return 2;
    if (::madvise(reinterpret_cast<void*>(base + 10 * kPageSize), 3 * kPageSize, MADV_DONTNEED) != 0) return 3;
    for (uint64_t i : {2, 3, 4, 5, 10, 11, 12})
      if (!page_is_zero(page(i))) return 10 + static_cast<int>(i);
    for (uint64_t i : {0, 1, 6, 7, 8, 9, 13, 14, 15})
      if (!page_matches(page(i), i * kPageSize)) return 30 + static_cast<int>(i);
    // Written after the drop, dropped again: still zeros, never the image.
    page(4)[0] = 7;
    if (::madvise(reinterpret_cast<void*>(base + 4 * kPageSize), kPageSize, MADV_DONTNEED) != 0) return 4;
    return page_is_zero(page(4)) ? 0 : 5;
  });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  LazyPagerCounters c = pager_->counters();
  EXPECT_EQ(c.remove_events, 3u);
  EXPECT_GE(c.zero_pages, 7u);
}

TEST_F(LazyPagerTest, ForkedChildIsServedThroughItsOwnDescriptor) {
  start_pager({.window_pages = 1});
  uint64_t base = make_region(8);
  auto child = spawn(base, 8 * kPageSize, {{base, 8 * kPageSize, 0}}, [base] {
    auto page = [base](uint64_t i) { return reinterpret_cast<volatile uint64_t*>(base + i * kPageSize); };
    if (!page_matches(page(0), 0)) return 1;
    page(1)[0] = 99;  // placed from the image, then changed
    pid_t pid = ::fork();
    if (pid == 0) {
      // Present pages are inherited; missing ones come through the fork's uffd.
      bool ok = page_matches(page(0), 0) && page(1)[0] == 99 && page(1)[1] == word_at(kPageSize + 8);
      for (uint64_t i = 2; i < 8; ++i) ok = ok && page_matches(page(i), i * kPageSize);
      ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return 2;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
    // The parent's own missing pages still come from the image.
    return page_matches(page(5), 5 * kPageSize) ? 0 : 4;
  });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  LazyPagerCounters c = pager_->counters();
  EXPECT_EQ(c.fork_events, 1u);
  EXPECT_EQ(c.clients_added, 2u);
}

TEST_F(LazyPagerTest, MremapMovesTheSourceAndLeavesZeros) {
  start_pager({.window_pages = 1});
  uint64_t base = make_region(16);  // pages 8-15 are the mremap target
  auto child = spawn(base, 8 * kPageSize, {{base, 8 * kPageSize, 0}}, [base] {
    if (!page_matches(reinterpret_cast<uint64_t*>(base), 0)) return 1;
    void* to = reinterpret_cast<void*>(base + 8 * kPageSize);
    void* moved = ::mremap(reinterpret_cast<void*>(base), 8 * kPageSize, 8 * kPageSize,
                           MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to);
    if (moved != to) return 2;
    for (uint64_t i = 0; i < 8; ++i) {
      if (!page_matches(reinterpret_cast<uint64_t*>(base + (8 + i) * kPageSize), i * kPageSize)) return 10 + static_cast<int>(i);
      // DONTUNMAP leaves the old range registered and empty.
      if (!page_is_zero(reinterpret_cast<uint64_t*>(base + i * kPageSize))) return 30 + static_cast<int>(i);
    }
    return 0;
  });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  EXPECT_EQ(pager_->counters().remap_events, 1u);
}

TEST_F(LazyPagerTest, UnmapDropsTheRange) {
  start_pager({.window_pages = 1});
  uint64_t base = make_region(8);
  auto child = spawn(base, 8 * kPageSize, {{base, 8 * kPageSize, 0}}, [base] {
    if (::munmap(reinterpret_cast<void*>(base + 4 * kPageSize), 4 * kPageSize) != 0) return 1;
    // New anonymous memory in the hole is not registered: zeros, no pager.
    void* again = ::mmap(reinterpret_cast<void*>(base + 4 * kPageSize), 4 * kPageSize, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (again == MAP_FAILED || !page_is_zero(reinterpret_cast<uint64_t*>(base + 5 * kPageSize))) return 2;
    return page_matches(reinterpret_cast<uint64_t*>(base + kPageSize), kPageSize) ? 0 : 3;
  });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  EXPECT_GE(pager_->counters().unmap_events, 1u);
  EXPECT_EQ(pager_->counters().pages_copied, 1u);
}

TEST_F(LazyPagerTest, TenClonesShareOneImage) {
  start_pager({.window_pages = 4});
  uint64_t base = make_region(kPages);
  std::vector<std::unique_ptr<ForkedChild>> children;
  for (uint64_t k = 0; k < 10; ++k)
    children.push_back(spawn(base, kBytes, {{base, kBytes, 0}}, [base, k] {
      // Each in its own order, all at once.
      for (uint64_t n = 0; n < kPages; ++n) {
        uint64_t i = (n * 7 + k * 13) % kPages;
        if (!page_matches(reinterpret_cast<uint64_t*>(base + i * kPageSize), i * kPageSize)) return 1;
      }
      return 0;
    }));
  go();
  for (auto& c : children) EXPECT_EQ(c->wait(10s), 0);
  EXPECT_EQ(pager_->counters().pages_copied, 10 * kPages);
  EXPECT_EQ(pager_->fault_order().size(), kPages);  // recorded once per page of the image
  EXPECT_TRUE(test::wait_until([&] { return pager_->client_count() == 0; }, 5s));
  EXPECT_EQ(pager_->counters().clients_dropped, 10u);
}

// Threads of one clone fault on the same pages at once: every fault is
// answered once its page is in, whoever placed it (EEXIST is not an error).
TEST_F(LazyPagerTest, ThreadsOfOneCloneRaceForPages) {
  start_pager({.window_pages = 4});
  uint64_t base = make_region(kPages);
  auto child = spawn(base, kBytes, {{base, kBytes, 0}}, [base] {
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&bad, base, t] {
        for (uint64_t n = 0; n < kPages; ++n) {
          uint64_t i = (n + static_cast<uint64_t>(t)) % kPages;  // neighbours fault on overlapping windows
          if (!page_matches(reinterpret_cast<uint64_t*>(base + i * kPageSize), i * kPageSize)) ++bad;
        }
      });
    for (auto& th : threads) th.join();
    return bad.load() == 0 ? 0 : 1;
  });
  go();
  EXPECT_EQ(child->wait(10s), 0);
  EXPECT_EQ(pager_->counters().pages_copied, kPages);
}

TEST_F(LazyPagerTest, PrefillPlacesTheHotSetBeforeFaults) {
  start_pager({.window_pages = 1});
  uint64_t base = make_region(16);
  LazyClientId id = 0;
  auto child = spawn(base, 16 * kPageSize, {{base, 16 * kPageSize, 0}}, [base] {
    for (uint64_t i = 0; i < 16; ++i)
      if (!page_matches(reinterpret_cast<uint64_t*>(base + i * kPageSize), i * kPageSize)) return 1;
    return 0;
  }, &id);
  std::vector<uint64_t> hot = {base + 5 * kPageSize, base + 3 * kPageSize, base + 4 * kPageSize, base + 3 * kPageSize,
                               base + 40 * kPageSize /* outside: skipped */};
  auto placed = pager_->prefill(id, hot);
  ASSERT_TRUE(placed) << placed.error().message;
  EXPECT_EQ(*placed, 3u);
  go();
  EXPECT_EQ(child->wait(10s), 0);
  LazyPagerCounters c = pager_->counters();
  EXPECT_EQ(c.prefilled_pages, 3u);
  EXPECT_EQ(c.pages_copied, 16u);
  EXPECT_EQ(c.faults, 13u);
  EXPECT_EQ(pager_->fault_order().size(), 13u);
  EXPECT_FALSE(pager_->prefill(id + 100, hot));
}

TEST_F(LazyPagerTest, BadRangesAreRefused) {
  start_pager();
  UniqueFd fd(static_cast<int>(uffd_raw::open(uffd_raw::RawSyscall{})));
  auto r = pager_->add_client(std::move(fd), {{0x10000, kPageSize, kBytes}});  // past the image
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_FALSE(pager_->add_client(UniqueFd{}, {}));
}

// The pager runs in a process of its own here, as the restore's keeper
// does. It dies before the child touches its memory. The child still holds
// its userfaultfd, so the fault waits: it must not read zeros or anything
// else, and SIGKILL (what the pid namespace's end delivers) ends it.
TEST_F(LazyPagerTest, PagerDeathBlocksTheCloneRatherThanLie) {
  uint64_t base = make_region(4);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ForkedChild keeper([&](int report) {
    ::close(sv[1]);
    auto uffd = receive_uffd(sv[0]);
    if (!uffd) return 1;
    auto pager = LazyPager::create(image_.get());
    if (!pager || !(*pager)->add_client(std::move(*uffd), {{base, 4 * kPageSize, 0}})) return 2;
    if (::write(report, "r\n", 2) != 2) return 3;
    return (*pager)->run() ? 0 : 4;
  });
  ::close(sv[0]);
  int go_pipe[2];
  ASSERT_EQ(::pipe2(go_pipe, O_CLOEXEC), 0);
  ForkedChild clone([&](int report) {
    ::alarm(20);
    LazyRange whole{base, 4 * kPageSize, 0};
    auto uffd = create_registered_uffd({&whole, 1});
    if (!uffd || !send_uffd(sv[1], uffd->get(), 0)) return 1;
    char go;
    if (::read(go_pipe[0], &go, 1) != 1) return 2;
    uint64_t v = *reinterpret_cast<volatile uint64_t*>(base);
    std::string line = std::to_string(v) + "\n";
    return ::write(report, line.data(), line.size()) > 0 ? 0 : 3;
  });
  ASSERT_EQ(keeper.read_line(5s), "r");
  keeper.kill(SIGKILL);
  EXPECT_EQ(keeper.wait(5s), 128 + SIGKILL);
  ::close(sv[1]);
  ASSERT_EQ(::write(go_pipe[1], "g", 1), 1);
  ::close(go_pipe[0]);
  ::close(go_pipe[1]);
  EXPECT_EQ(clone.read_line(300ms), std::nullopt) << "the clone read a value with no pager";
  EXPECT_EQ(clone.wait(0ms), -1) << "the clone should be waiting on its fault";
  clone.kill(SIGKILL);
  EXPECT_EQ(clone.wait(5s), 128 + SIGKILL);
}

// The restore's arrangement: the pager is pid 1 of the clone's pid
// namespace. When it dies the kernel kills the clone, which was waiting on a
// fault the pager never answered: an error in the clone, not a hang and not
// a wrong page.
TEST_F(LazyPagerTest, KeeperDeathKillsTheCloneInItsPidNamespace) {
  uint64_t base = make_region(4);
  ForkedChild outer([&](int report) {
    if (::unshare(CLONE_NEWPID) != 0) return 77;
    pid_t keeper = ::fork();
    if (keeper == 0) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) ::_exit(1);
      if (::fork() == 0) {
        ::alarm(20);
        char self[32] = {};
        if (::readlink("/proc/self", self, sizeof self - 1) <= 0) ::_exit(1);  // the host's pid
        LazyRange whole{base, 4 * kPageSize, 0};
        auto uffd = create_registered_uffd({&whole, 1});
        if (!uffd || !send_uffd(sv[1], uffd->get(), 0)) ::_exit(2);
        std::string line = std::string("c ") + self + "\n";
        if (::write(report, line.data(), line.size()) <= 0) ::_exit(3);
        uint64_t v = *reinterpret_cast<volatile uint64_t*>(base);
        line = "v " + std::to_string(v) + "\n";
        ::_exit(::write(report, line.data(), line.size()) > 0 ? 0 : 4);
      }
      auto uffd = receive_uffd(sv[0]);
      if (!uffd) ::_exit(5);
      auto pager = LazyPager::create(image_.get());
      if (!pager || !(*pager)->add_client(std::move(*uffd), {{base, 4 * kPageSize, 0}})) ::_exit(6);
      // A pager that never answers: the clone's fault stays pending.
      for (;;) ::pause();
    }
    std::string line = "k " + std::to_string(keeper) + "\n";
    if (keeper < 0 || ::write(report, line.data(), line.size()) <= 0) return 1;
    ::waitpid(keeper, nullptr, 0);
    return 0;
  });
  pid_t keeper = -1, clone = -1;
  for (int i = 0; i < 2; ++i) {
    auto line = outer.read_line(5s);
    if (!line && outer.wait(1s) == 77) GTEST_SKIP() << "no new pid namespace here";
    ASSERT_TRUE(line);
    (line->at(0) == 'k' ? keeper : clone) = std::stoi(line->substr(2));
  }
  ASSERT_GT(keeper, 0);
  ASSERT_GT(clone, 0);
  std::this_thread::sleep_for(50ms);  // let the clone reach its fault
  ASSERT_EQ(::kill(keeper, SIGKILL), 0);
  EXPECT_EQ(outer.wait(5s), 0);
  EXPECT_EQ(outer.read_all(1s), "") << "the clone read a value with no pager";
  EXPECT_TRUE(test::wait_until([&] { return ::kill(clone, 0) != 0; }, 5s)) << "the clone outlived its keeper";
}

// Why the clone keeps its descriptor: once the last reference to a
// userfaultfd is gone the kernel unregisters its ranges, and a missing
// anonymous page then reads as zeros. The test pins down that kernel
// behaviour, which the design depends on.
TEST_F(LazyPagerTest, ADroppedDescriptorWouldReadZeros) {
  uint64_t base = make_region(4);
  LazyClientId id = 0;
  start_pager();
  auto child = spawn(base, 4 * kPageSize, {{base, 4 * kPageSize, 0}}, [base] {
    return page_is_zero(reinterpret_cast<uint64_t*>(base)) ? 0 : 1;
  }, &id, /*close_uffd=*/true);
  pager_->stop();
  thread_.join();
  pager_.reset();  // the pager's copy was the last one
  go();
  EXPECT_EQ(child->wait(10s), 0);
}

TEST_F(LazyPagerTest, WritePagesToProcess) {
  auto p = LazyPager::create(image_.get());
  ASSERT_TRUE(p);
  uint64_t base = make_region(8);
  std::vector<LazyRange> ranges = {{base, 8 * kPageSize, 16 * kPageSize}};
  std::vector<uint64_t> pages = {base + 2 * kPageSize, base + kPageSize, base + 7 * kPageSize, base + 99 * kPageSize};
  auto n = write_pages_to_process(::getpid(), (*p)->source(), ranges, pages);
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 3u);
  for (uint64_t i = 0; i < 8; ++i) {
    auto* page = reinterpret_cast<uint64_t*>(base + i * kPageSize);
    bool hot = i == 1 || i == 2 || i == 7;
    EXPECT_TRUE(hot ? page_matches(page, (16 + i) * kPageSize) : page_is_zero(page)) << i;
  }
}

TEST_F(LazyPagerTest, ReceiveErrors) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  uint64_t tag = 1;
  ASSERT_EQ(::write(b.get(), &tag, sizeof tag), 8);
  auto r = receive_uffd(a.get());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EPROTO);
  // A one-byte payload, as a minimal sender writes, is a one-byte tag.
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd pr(pipe_fds[0]), pw(pipe_fds[1]);
  long sent = uffd_raw::send_fd(uffd_raw::RawSyscall{}, b.get(), pr.get(), 0xffffffffffffff75ull);
  ASSERT_EQ(sent, 8);
  // The restorer's sender: one byte of payload, laid out with uffd_raw's structs.
  char one = 'u';
  uffd_raw::RawIovec iov{&one, 1};
  uffd_raw::RawFdControl ctl{sizeof(unsigned long) + 3 * sizeof(int), SOL_SOCKET, SCM_RIGHTS, pipe_fds[1], 0};
  uffd_raw::RawMsgHdr msg{nullptr, 0, &iov, 1, &ctl, sizeof ctl, 0};
  auto full = receive_uffd(a.get(), &tag);
  ASSERT_TRUE(full) << full.error().message;
  EXPECT_EQ(tag, 0xffffffffffffff75ull);
  ASSERT_EQ(uffd_raw::RawSyscall{}(__NR_sendmsg, b.get(), reinterpret_cast<long>(&msg), 0), 1);
  auto small = receive_uffd(a.get(), &tag);
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(tag, static_cast<uint64_t>('u'));
  b.reset();
  r = receive_uffd(a.get());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ECONNRESET);
}

}  // namespace
}  // namespace cxlpool::ckpt
