// SPDX-License-Identifier: Apache-2.0
// The perf source's kernel path (perf_event_open, mmap'd rings, draining,
// lost-sample accounting) driven by a software page-fault event, whose
// samples carry the faulting address: it runs on hosts without a memory PMU.
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>

#include "perf_open.hpp"

namespace cxlpool::drivers {
namespace {

PerfEventSpec page_fault_event() {
  PerfEventSpec e;
  e.label = "software/page-faults/";
  e.type = PERF_TYPE_SOFTWARE;
  e.config = PERF_COUNT_SW_PAGE_FAULTS;
  e.sample_period = 1;  // every fault
  e.precise_ip = 0;
  return e;
}

PerfSamplingConfig self_config(uint32_t ring_pages) {
  PerfSamplingConfig c;
  c.pids = {static_cast<int>(::getpid())};
  c.physical = false;  // the page is not mapped yet when the fault is sampled
  c.ring_pages = ring_pages;
  return c;
}

// Touches `pages` fresh anonymous pages, one fault each.
struct Touched {
  explicit Touched(size_t pages) : bytes(pages * 4096) {
    base = static_cast<char*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) return;
    ::madvise(base, bytes, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < pages; ++i) base[i * 4096] = 1;
  }
  ~Touched() {
    if (base != MAP_FAILED) ::munmap(base, bytes);
  }
  size_t bytes;
  char* base = static_cast<char*>(MAP_FAILED);
};

Result<std::unique_ptr<hal::AccessSource>> open_or_skip_reason(uint32_t ring_pages, std::string& skip) {
  auto source = open_perf_sampling_source({page_fault_event()}, self_config(ring_pages));
  if (!source && (source.error().code == EACCES || source.error().code == EPERM ||
                  source.error().code == ENOENT || source.error().code == ENOSYS)) {
    skip = "software perf events unavailable here: " + source.error().message;
  }
  return source;
}

TEST(PerfSource, ReportsSampledPagesOfThisProcess) {
  std::string skip;
  auto source = open_or_skip_reason(64, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(source) << source.error().message;
  EXPECT_EQ((*source)->name(), "perf");
  EXPECT_TRUE((*source)->traits().virtual_addresses);
  EXPECT_FALSE((*source)->traits().exact_counts);

  constexpr size_t kPages = 200;
  Touched touched(kPages);
  ASSERT_NE(touched.base, MAP_FAILED);
  std::vector<hal::PageAccess> out;
  ASSERT_TRUE((*source)->collect(out));

  const auto first = reinterpret_cast<uint64_t>(touched.base);
  std::set<uint64_t> seen;
  for (const auto& a : out) {
    EXPECT_GT(a.count, 0u);
    EXPECT_EQ(a.pages, 1u);
    EXPECT_EQ(a.address % hal::kAccessPageBytes, 0u);
    if (a.space == hal::AddressSpace::kProcess && a.owner == static_cast<uint64_t>(::getpid()) &&
        a.address >= first && a.address < first + touched.bytes) {
      EXPECT_EQ(a.count, 1u) << "one fault per page";
      seen.insert(a.address);
    }
  }
  EXPECT_EQ(seen.size(), kPages) << "every touched page was sampled once";
  EXPECT_GE((*source)->accesses_total(), kPages);
  EXPECT_EQ((*source)->dropped_total(), 0u);

  // The ring was consumed: a quiet epoch reports none of those pages again.
  out.clear();
  ASSERT_TRUE((*source)->collect(out));
  for (const auto& a : out) {
    EXPECT_FALSE(a.address >= first && a.address < first + touched.bytes) << std::hex << a.address;
  }
}

TEST(PerfSource, CountsWhatAFullRingLoses) {
  std::string skip;
  auto source = open_or_skip_reason(1, skip);  // one 4 KiB page: ~100 samples
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_TRUE(source) << source.error().message;
  constexpr size_t kPages = 4000;
  Touched touched(kPages);
  ASSERT_NE(touched.base, MAP_FAILED);
  std::vector<hal::PageAccess> out;
  ASSERT_TRUE((*source)->collect(out));
  const uint64_t stored = (*source)->accesses_total();
  EXPECT_LT(stored, kPages);
  // The kernel writes its LOST record once the ring has room again, i.e.
  // ahead of the first sample after our drain.
  Touched more(50);
  out.clear();
  ASSERT_TRUE((*source)->collect(out));
  EXPECT_GT((*source)->dropped_total(), 0u) << "the kernel reports the samples it could not store";
  EXPECT_GE((*source)->dropped_total() + stored, kPages) << "every fault was either stored or counted lost";
  EXPECT_GE((*source)->accesses_total() - stored, 40u) << "the drained ring takes samples again";
}

TEST(PerfSource, MissingPidIsEsrch) {
  PerfSamplingConfig c = self_config(8);
  c.pids = {999'999'999};
  auto source = open_perf_sampling_source({page_fault_event()}, c);
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error().code, ESRCH);
}

}  // namespace
}  // namespace cxlpool::drivers
