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

// host_range_protection of [addr, addr + bytes) succeeds and is `want`.
::testing::AssertionResult protection_is(const void* addr, size_t bytes, HostProtection want) {
  auto got = host_range_protection(addr, bytes);
  if (!got) return ::testing::AssertionFailure() << got.error().message;
  if (*got != want) {
    return ::testing::AssertionFailure() << "protection " << static_cast<int>(*got) << ", want "
                                         << static_cast<int>(want);
  }
  return ::testing::AssertionSuccess();
}

// host_range_protection of [addr, addr + bytes) fails with `code`.
::testing::AssertionResult fails_with(const void* addr, size_t bytes, int code) {
  auto got = host_range_protection(addr, bytes);
  if (got) return ::testing::AssertionFailure() << "succeeded: " << static_cast<int>(*got);
  if (got.error().code != code) {
    return ::testing::AssertionFailure() << "error " << got.error().code << " ("
                                         << got.error().message << "), want " << code;
  }
  return ::testing::AssertionSuccess();
}

TEST(HostProtection, ReadWriteMappingIsReadWrite) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  EXPECT_TRUE(protection_is(m.addr, m.bytes, HostProtection::kReadWrite));
}

TEST(HostProtection, ReadOnlyMappingIsReadOnly) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  ASSERT_EQ(::mprotect(m.addr, m.bytes, PROT_READ), 0);
  EXPECT_TRUE(protection_is(m.addr, m.bytes, HostProtection::kReadOnly));
}

TEST(HostProtection, OneReadOnlyPageMakesTheRangeReadOnly) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  ASSERT_EQ(::mprotect(m.addr + 2 * kPage, kPage, PROT_READ), 0);
  EXPECT_TRUE(protection_is(m.addr, m.bytes, HostProtection::kReadOnly));
  // The writable pages before it on their own (split into another maps line).
  EXPECT_TRUE(protection_is(m.addr, 2 * kPage, HostProtection::kReadWrite));
}

TEST(HostProtection, HoleOrUnreadablePageIsEFAULT) {
  Map m(4);
  ASSERT_NE(m.addr, MAP_FAILED);
  ASSERT_EQ(::munmap(m.addr + kPage, kPage), 0);
  EXPECT_TRUE(fails_with(m.addr, m.bytes, EFAULT));
  ASSERT_EQ(::mprotect(m.addr + 2 * kPage, kPage, PROT_NONE), 0);
  EXPECT_TRUE(fails_with(m.addr + 2 * kPage, kPage, EFAULT));
}

TEST(HostProtection, EmptyRangeIsEINVAL) {
  int x = 0;
  EXPECT_TRUE(fails_with(&x, 0, EINVAL));
  EXPECT_TRUE(fails_with(nullptr, 16, EINVAL));
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
