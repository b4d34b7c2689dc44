// SPDX-License-Identifier: Apache-2.0
// The host GpuVmm against real memory: reservations are 64 KiB aligned,
// mapped pieces are the file's bytes, unmapped pieces are gone (a fresh
// mapping shows other bytes), and every rule of the interface is enforced.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "cxlpool/common/unique_fd.hpp"
#include "host_vmm.hpp"

namespace cxlpool {
namespace {

constexpr uint64_t kG = 64 * 1024;

uint8_t* at(uint64_t va) { return reinterpret_cast<uint8_t*>(va); }

// Kernel VMAs of this process (lines of /proc/self/maps).
// Mappings of this process, or only those overlapping [lo, hi): a sanitizer's
// allocator maps memory of its own at any time, so counts that must be exact
// look only at the range under test.
long vma_count(uint64_t lo = 0, uint64_t hi = ~uint64_t{0}) {
  std::ifstream maps("/proc/self/maps");
  long n = 0;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) != 2) continue;
    if (start < hi && end > lo) ++n;
  }
  return n;
}

long max_map_count() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  long v = -1;
  f >> v;
  return v;
}

// A host GpuVmm with one memory handle and one reservation, for the tests
// that map the one into the other.
struct HandleAndRange {
  std::unique_ptr<hal::GpuVmm> vmm = drivers::make_host_vmm();
  hal::VmmHandle h = 0;
  uint64_t va = 0;
};

void create_and_reserve(HandleAndRange& r, uint64_t handle_bytes, uint64_t reserve_bytes) {
  auto h = r.vmm->create(handle_bytes);
  ASSERT_TRUE(h) << h.error().message;
  auto va = r.vmm->reserve(reserve_bytes);
  ASSERT_TRUE(va) << va.error().message;
  r.h = *h;
  r.va = *va;
}

TEST(HostVmm, ReserveIsAlignedAndReleased) {
  auto vmm = drivers::make_host_vmm();
  EXPECT_STREQ(vmm->name(), "host");
  EXPECT_EQ(vmm->granularity(), kG);
  auto va = vmm->reserve(16 * kG);
  ASSERT_TRUE(va) << va.error().message;
  EXPECT_EQ(*va % kG, 0u);
  EXPECT_EQ(vmm->stats().reserved_bytes, 16 * kG);
  EXPECT_FALSE(vmm->reserve(kG + 1));
  EXPECT_FALSE(vmm->reserve(0));
  EXPECT_FALSE(vmm->release_range(*va, 8 * kG));
  ASSERT_TRUE(vmm->release_range(*va, 16 * kG));
  EXPECT_EQ(vmm->stats().reserved_bytes, 0u);
}

TEST(HostVmm, MappedPiecesAreTheFilesBytes) {
  auto vmm = drivers::make_host_vmm();
  UniqueFd fd(::memfd_create("host-vmm-test", MFD_CLOEXEC));
  ASSERT_TRUE(fd);
  ASSERT_EQ(::ftruncate(fd.get(), 4 * kG), 0);
  auto h = vmm->import_fd(fd.get(), 4 * kG);
  ASSERT_TRUE(h) << h.error().message;
  auto va = vmm->reserve(8 * kG);
  ASSERT_TRUE(va);
  // Piece 2 of the file at slot 5 of the range.
  ASSERT_TRUE(vmm->map(*va + 5 * kG, kG, *h, 2 * kG));
  std::memset(at(*va + 5 * kG), 0x3C, kG);
  uint8_t b = 0;
  ASSERT_EQ(::pread(fd.get(), &b, 1, 2 * kG + 100), 1);
  EXPECT_EQ(b, 0x3C);
  ASSERT_EQ(::pread(fd.get(), &b, 1, 1 * kG + 100), 1);
  EXPECT_EQ(b, 0);
  EXPECT_EQ(vmm->stats().mapped_bytes, kG);
  EXPECT_EQ(vmm->stats().maps, 1u);

  // Moving the piece: unmap, map the same file range elsewhere: same bytes.
  ASSERT_TRUE(vmm->unmap(*va + 5 * kG, kG));
  ASSERT_TRUE(vmm->map(*va + 1 * kG, kG, *h, 2 * kG));
  EXPECT_EQ(at(*va + kG)[77], 0x3C);
  // The old slot is reserved but not mapped: mapping another piece there
  // shows that piece's bytes, not the old ones.
  ASSERT_TRUE(vmm->map(*va + 5 * kG, kG, *h, 3 * kG));
  EXPECT_EQ(at(*va + 5 * kG)[77], 0);
  const auto st = vmm->stats();
  EXPECT_EQ(st.maps, 3u);
  EXPECT_EQ(st.unmaps, 1u);
  EXPECT_EQ(st.mapped_bytes, 2 * kG);

  // The handle goes; mappings keep working.
  ASSERT_TRUE(vmm->release(*h));
  EXPECT_EQ(at(*va + kG)[0], 0x3C);
  ASSERT_TRUE(vmm->release_range(*va, 8 * kG));
  EXPECT_EQ(vmm->stats().mapped_bytes, 0u);
}

TEST(HostVmm, CreateIsAnonymousMemory) {
  HandleAndRange r;
  ASSERT_NO_FATAL_FAILURE(create_and_reserve(r, 2 * kG, 4 * kG));
  auto& [vmm, h, va] = r;
  ASSERT_TRUE(vmm->map(va, kG, h, 0));
  ASSERT_TRUE(vmm->map(va + kG, kG, h, 0));  // the same memory twice
  at(va)[10] = 9;
  EXPECT_EQ(at(va + kG)[10], 9);
  ASSERT_TRUE(vmm->release_range(va, 4 * kG));
  EXPECT_TRUE(vmm->release(h));
}

TEST(HostVmm, RulesAreEnforced) {
  HandleAndRange r;
  ASSERT_NO_FATAL_FAILURE(create_and_reserve(r, 2 * kG, 4 * kG));
  auto& [vmm, h, va] = r;
  EXPECT_EQ(vmm->map(va + 4096, kG, h, 0).error().code, EINVAL);        // unaligned va
  EXPECT_EQ(vmm->map(va, kG, h, 4096).error().code, EINVAL);            // unaligned offset
  EXPECT_EQ(vmm->map(va, 3 * kG, h, 0).error().code, EINVAL);           // past the handle
  EXPECT_EQ(vmm->map(va + 4 * kG, kG, h, 0).error().code, EINVAL);      // past the range
  EXPECT_EQ(vmm->map(va, kG, h + 100, 0).error().code, ENOENT);         // unknown handle
  ASSERT_TRUE(vmm->map(va, 2 * kG, h, 0));
  EXPECT_EQ(vmm->map(va + kG, kG, h, 0).error().code, EEXIST);          // overlaps
  EXPECT_EQ(vmm->unmap(va, kG).error().code, EINVAL);                    // part of a map
  EXPECT_EQ(vmm->unmap(va + 2 * kG, kG).error().code, EINVAL);           // never mapped
  EXPECT_TRUE(vmm->unmap(va, 2 * kG));
  EXPECT_EQ(vmm->release(h + 100).error().code, ENOENT);
  EXPECT_FALSE(vmm->import_fd(-1, kG));
}

TEST(HostVmm, ContiguousFileRangesMergeIntoOneMapping) {
  HandleAndRange r;
  ASSERT_NO_FATAL_FAILURE(create_and_reserve(r, 16 * kG, 32 * kG));
  auto& [vmm, h, va] = r;
  const uint64_t lo = va, hi = va + 32 * kG;
  const long before = vma_count(lo, hi);
  // Eight pages at consecutive addresses and consecutive file offsets: the
  // kernel merges them; the reservation splits around them (+2 at most).
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(vmm->map(va + (4 + i) * kG, kG, h, i * kG));
  const long merged = vma_count(lo, hi) - before;
  EXPECT_LE(merged, 2);
  // The same eight pages at file offsets out of order: one VMA each.
  for (uint64_t i = 0; i < 8; ++i) ASSERT_TRUE(vmm->map(va + (20 + i) * kG, kG, h, (15 - i) * kG));
  const long scattered = vma_count(lo, hi) - before - merged;
  EXPECT_GE(scattered, 8);
  RecordProperty("vmas_8_contiguous_pages", std::to_string(merged));
  RecordProperty("vmas_8_scattered_pages", std::to_string(scattered));
  // Unmapping the middle of a merged run splits it again and stays correct.
  ASSERT_TRUE(vmm->unmap(va + 7 * kG, kG));
  at(va + 6 * kG)[1] = 6;
  at(va + 8 * kG)[1] = 8;
  uint8_t b = 0;
  auto fd_bytes = [&](uint64_t off) {
    // The handle's memory as mapped elsewhere: page `off` of the file.
    EXPECT_TRUE(vmm->map(va + 30 * kG, kG, h, off));
    b = at(va + 30 * kG)[1];
    EXPECT_TRUE(vmm->unmap(va + 30 * kG, kG));
    return b;
  };
  EXPECT_EQ(fd_bytes(2 * kG), 6);
  EXPECT_EQ(fd_bytes(4 * kG), 8);
  ASSERT_TRUE(vmm->release_range(va, 32 * kG));
}

// At vm.max_map_count a map that needs a new VMA fails with ENOMEM, and the
// message says which limit it is.
TEST(HostVmm, MappingLimitIsNamedInTheError) {
  const long limit = max_map_count();
  if (limit <= 0) GTEST_SKIP() << "/proc/sys/vm/max_map_count is not readable";
  if (limit > (1L << 20)) GTEST_SKIP() << "vm.max_map_count is " << limit << ": too many mappings to fill in a test";
  HandleAndRange r;
  ASSERT_NO_FATAL_FAILURE(create_and_reserve(r, 2 * kG, 4 * kG));
  auto& [vmm, h, va] = r;
  // Fill the process up to the limit with one-page VMAs of alternating
  // protection inside one PROT_NONE range.
  const long free_slots = limit - vma_count() + 16;
  const size_t page = 4096;
  const size_t span = static_cast<size_t>(free_slots) * 2 * page;
  void* filler = ::mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(filler, MAP_FAILED);
  bool full = false;
  for (size_t off = page; off + page < span; off += 2 * page) {
    if (::mprotect(static_cast<uint8_t*>(filler) + off, page, PROT_READ) != 0) {
      full = errno == ENOMEM;
      break;
    }
  }
  // In the middle of the reservation: needs two more VMAs.
  auto mapped = vmm->map(va + kG, kG, h, 0);
  ::munmap(filler, span);
  ASSERT_TRUE(full) << "could not reach vm.max_map_count";
  ASSERT_FALSE(mapped);
  EXPECT_EQ(mapped.error().code, ENOMEM);
  EXPECT_NE(mapped.error().message.find("vm.max_map_count"), std::string::npos) << mapped.error().message;
  // Room again: the same map works and the range was left reserved.
  EXPECT_TRUE(vmm->map(va + kG, kG, h, 0));
  EXPECT_TRUE(vmm->release_range(va, 4 * kG));
}

}  // namespace
}  // namespace cxlpool
