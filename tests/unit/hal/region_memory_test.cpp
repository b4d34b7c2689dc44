// SPDX-License-Identifier: Apache-2.0
#include "region_memory.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include <gtest/gtest.h>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/huge_pages.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::drivers {
namespace {

uint64_t file_size(int fd) {
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return static_cast<uint64_t>(st.st_size);
}

std::string fd_target(int fd) {
  char buf[PATH_MAX] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

void write_and_read_back(int fd, uint64_t size) {
  auto m = Mapping::map(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
  ASSERT_TRUE(m.has_value()) << m.error().message;
  std::memset(m->data(), 0x5a, size);
  EXPECT_EQ(m->data()[size - 1], std::byte{0x5a});
}

hal::HugePagePool host_pool() {
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  EXPECT_TRUE(pool.has_value()) << (pool ? "" : pool.error().message);
  return pool ? *pool : hal::HugePagePool{};
}

void expect_no_huge_pages_error(const Result<UniqueFd>& r) {
  ASSERT_FALSE(r.has_value()) << "created a hugetlb file although no huge page is free";
  EXPECT_EQ(r.error().code, ENOMEM) << r.error().message;
  EXPECT_NE(r.error().message.find("no free huge pages: echo "), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("nr_hugepages"), std::string::npos) << r.error().message;
}

TEST(RegionMemfd, PlainMemfd) {
  const uint64_t size = 1 * kMiB + 4096;
  auto fd = create_region_memfd("kv-arena", size, false);
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  EXPECT_EQ(file_size(fd->get()), size);
  EXPECT_NE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(fd_target(fd->get()), "/memfd:kv-arena (deleted)");
  // The size is sealed before any client sees the file, and the seals are final.
  EXPECT_EQ(fcntl(fd->get(), F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(ftruncate(fd->get(), static_cast<off_t>(size * 2)), 0);
  EXPECT_NE(ftruncate(fd->get(), 0), 0);
  EXPECT_NE(fcntl(fd->get(), F_ADD_SEALS, F_SEAL_WRITE), 0);
  write_and_read_back(fd->get(), size);
}

TEST(RegionMemfd, RejectsZeroSize) {
  auto fd = create_region_memfd("empty", 0, false);
  ASSERT_FALSE(fd.has_value());
  EXPECT_EQ(fd.error().code, EINVAL);
  EXPECT_NE(fd.error().message.find("empty"), std::string::npos);
}

TEST(RegionMemfd, LongNameIsCut) {
  auto fd = create_region_memfd(std::string(400, 'n'), 4096, false);
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  EXPECT_EQ(fd_target(fd->get()), "/memfd:" + std::string(249, 'n') + " (deleted)");
}

TEST(RegionMemfd, Hugetlb) {
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (!pool && pool.error().code == ENOTSUP) GTEST_SKIP() << pool.error().message;
  ASSERT_TRUE(pool.has_value()) << pool.error().message;
  const uint64_t hp = pool->page_size;
  auto fd = create_region_memfd("weights", hp + 1, true);
  if (pool->available() < 2) {
    expect_no_huge_pages_error(fd);
    return;
  }
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  EXPECT_EQ(file_size(fd->get()), 2 * hp);  // rounded up to whole huge pages
  const hal::HugePagePool after = host_pool();
  EXPECT_GE(after.reserved, pool->reserved + 2) << "pages were not reserved";
  write_and_read_back(fd->get(), 2 * hp);
}

TEST(HugetlbfsFile, RejectsOtherFilesystems) {
  test::TempDir dir;
  auto fd = create_hugetlbfs_file(dir.path().string(), 4096);
  ASSERT_FALSE(fd.has_value());
  EXPECT_EQ(fd.error().code, EINVAL);
  EXPECT_NE(fd.error().message.find(dir.path().string() + " is not a hugetlbfs mount"),
            std::string::npos)
      << fd.error().message;
  auto missing = hugetlbfs_page_size("/nonexistent/hugepages");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ENOENT);
}

// Mounts a hugetlbfs in a private mount namespace of this test process, so
// the mount disappears with the process and nobody else sees it.
class HugetlbfsMount : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNS) != 0) GTEST_SKIP() << "unshare(CLONE_NEWNS): " << strerror(errno);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      GTEST_SKIP() << "making / private: " << strerror(errno);
    }
    if (mount("cxlpool-test", dir_.path().c_str(), "hugetlbfs", 0, nullptr) != 0) {
      GTEST_SKIP() << "mount hugetlbfs: " << strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount2(dir_.path().c_str(), MNT_DETACH);
  }
  test::TempDir dir_;
  bool mounted_ = false;
};

TEST_F(HugetlbfsMount, CreatesReservedTmpfile) {
  const std::string dir = dir_.path().string();
  auto page_size = hugetlbfs_page_size(dir);
  ASSERT_TRUE(page_size.has_value()) << page_size.error().message;
  const hal::HugePagePool pool = host_pool();
  EXPECT_EQ(*page_size, pool.page_size);  // mounted without pagesize=: the default size
  auto fd = create_hugetlbfs_file(dir, 3 * *page_size - 1);
  if (pool.available() < 3) {
    expect_no_huge_pages_error(fd);
    return;
  }
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  EXPECT_EQ(file_size(fd->get()), 3 * *page_size);
  EXPECT_NE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);
  // O_TMPFILE: no name in the directory.
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()));
  write_and_read_back(fd->get(), 3 * *page_size);
}

TEST_F(HugetlbfsMount, RejectsZeroSize) {
  auto fd = create_hugetlbfs_file(dir_.path().string(), 0);
  ASSERT_FALSE(fd.has_value());
  EXPECT_EQ(fd.error().code, EINVAL);
}

}  // namespace
}  // namespace cxlpool::drivers
