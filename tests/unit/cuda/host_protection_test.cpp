// SPDX-License-Identifier: Apache-2.0
// host_range_protection: what cuMemHostRegister's flags are chosen from.
// Real mappings of this process (read-write, read-only, a hole) and
// hand-written maps texts; no GPU needed.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "host_protection.hpp"

namespace cxlpool::cuda {
namespace {

const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));

struct Map {
  explicit Map(size_t pages) : bytes(pages * kPage) {
    addr = static_cast<std::byte*>(
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Map() {
    if (addr != MAP_FAILED) ::munmap(addr, bytes);
  }
  std::byte* addr;
  size_t bytes;
};

TEST(HostProtection, ReadWriteMappingIsReadWrite) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  auto p = host_range_protection(m.addr, m.bytes);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*p, HostProtection::kReadWrite);
}

TEST(HostProtection, ReadOnlyMappingIsReadOnly) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  ASSERT_EQ(::mprotect(m.addr, m.bytes, PROT_READ), 0);
  auto p = host_range_protection(m.addr, m.bytes);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(*p, HostProtection::kReadOnly);
}

TEST(HostProtection, OneReadOnlyPageMakesTheRangeReadOnly) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  ASSERT_EQ(::mprotect(m.addr + 2 * kPage, kPage, PROT_READ), 0);
  auto whole = host_range_protection(m.addr, m.bytes);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(*whole, HostProtection::kReadOnly);
  // The writable pages before it on their own (split into another maps line).
  auto head = host_range_protection(m.addr, 2 * kPage);
  ASSERT_TRUE(head) << head.error().message;
  EXPECT_EQ(*head, HostProtection::kReadWrite);
}

TEST(HostProtection, HoleOrUnreadablePageIsEFAULT) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  ASSERT_EQ(::munmap(m.addr + kPage, kPage), 0);
  auto hole = host_range_protection(m.addr, m.bytes);
  ASSERT_FALSE(hole);
  EXPECT_EQ(hole.error().code, EFAULT);
  ASSERT_EQ(::mprotect(m.addr + 2 * kPage, kPage, PROT_NONE), 0);
  auto none = host_range_protection(m.addr + 2 * kPage, kPage);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, EFAULT);
}

TEST(HostProtection, EmptyRangeIsEINVAL) {
  int x = 0;
  auto p = host_range_protection(&x, 0);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, EINVAL);
  auto q = host_range_protection(nullptr, 16);
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().code, EINVAL);
}

TEST(HostProtection, MapsTextAcrossAdjacentLines) {
  const std::string maps =
      "1000-3000 rw-p 00000000 00:00 0 \n"
      "3000-5000 r--s 00000000 00:05 42                         /memfd:region (deleted)\n"
      "5000-6000 rw-p 00000000 00:00 0\n"
      "8000-9000 rw-p 00000000 00:00 0\n";
  auto at = [](uintptr_t a) { return reinterpret_cast<const void*>(a); };
  EXPECT_EQ(host_range_protection_in(maps, at(0x1000), 0x2000).value(), HostProtection::kReadWrite);
  EXPECT_EQ(host_range_protection_in(maps, at(0x2000), 0x2000).value(), HostProtection::kReadOnly);
  EXPECT_EQ(host_range_protection_in(maps, at(0x3800), 0x100).value(), HostProtection::kReadOnly);
  EXPECT_EQ(host_range_protection_in(maps, at(0x5000), 0x1000).value(), HostProtection::kReadWrite);
  // 0x6000..0x8000 is a hole; 0x9000 is past every line.
  EXPECT_EQ(host_range_protection_in(maps, at(0x5000), 0x3001).error().code, EFAULT);
  EXPECT_EQ(host_range_protection_in(maps, at(0x8800), 0x1000).error().code, EFAULT);
  EXPECT_EQ(host_range_protection_in(maps, at(0x500), 0x1000).error().code, EFAULT);
  EXPECT_EQ(host_range_protection_in("garbage\n", at(0x1000), 1).error().code, EFAULT);
}

}  // namespace
}  // namespace cxlpool::cuda
