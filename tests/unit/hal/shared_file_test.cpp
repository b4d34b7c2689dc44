// SPDX-License-Identifier: Apache-2.0
// SharedMemory/file: creating, joining and refusing files by path.
#include "shared_file.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "cxlpool/hal/huge_pages.hpp"
#include "file_system_kind.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::drivers {
namespace {

hal::SharedMemorySpec spec_for(const std::filesystem::path& path, uint64_t size) {
  hal::SharedMemorySpec spec;
  spec.path = path.string();
  spec.size = size;
  return spec;
}

uint64_t size_on_disk(const std::filesystem::path& path) { return std::filesystem::file_size(path); }

TEST(SharedFile, CreatesSizesAndMapsANewFile) {
  test::TempDir dir("shm-file");
  const auto path = dir.resolve("pod");
  auto shm = open_shared_file(spec_for(path, 10000));
  ASSERT_TRUE(shm.has_value()) << shm.error().message;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(shm->size(), (10000 + page - 1) / page * page);
  EXPECT_EQ(size_on_disk(path), shm->size());
  EXPECT_TRUE(shm->info().created);
  EXPECT_EQ(shm->info().backend, "file");
  EXPECT_EQ(shm->info().path, path.string());
  EXPECT_EQ(shm->info().alignment, page);
  EXPECT_TRUE(shm->info().coherent);
  EXPECT_FALSE(shm->info().coherence_reason.empty());
  EXPECT_FALSE(shm->info().filesystem.empty());
  EXPECT_NE(fcntl(shm->fd(), F_GETFD) & FD_CLOEXEC, 0);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_NE(shm->describe().find(path.string()), std::string::npos) << shm->describe();
}

TEST(SharedFile, TwoOpensShareTheBytes) {
  test::TempDir dir("shm-file");
  const auto path = dir.resolve("pod");
  auto a = open_shared_file(spec_for(path, 8192));
  ASSERT_TRUE(a.has_value()) << a.error().message;
  auto b = open_shared_file(spec_for(path, 4096));  // a smaller view of a larger file is fine
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_FALSE(b->info().created);
  EXPECT_EQ(b->size(), 4096u);
  std::memcpy(a->bytes().data() + 100, "channel", 7);
  EXPECT_EQ(std::memcmp(b->bytes().data() + 100, "channel", 7), 0);
  auto whole = open_shared_file(spec_for(path, 0));  // 0: all of it
  ASSERT_TRUE(whole.has_value()) << whole.error().message;
  EXPECT_EQ(whole->size(), 8192u);
}

TEST(SharedFile, RefusesAFileSmallerThanAsked) {
  test::TempDir dir("shm-file");
  const auto path = dir.resolve("pod");
  ASSERT_TRUE(open_shared_file(spec_for(path, 4096)).has_value());
  auto bigger = open_shared_file(spec_for(path, 1 << 20));
  ASSERT_FALSE(bigger.has_value());
  EXPECT_EQ(bigger.error().code, EINVAL);
  EXPECT_NE(bigger.error().message.find("less than"), std::string::npos) << bigger.error().message;
  EXPECT_EQ(size_on_disk(path), 4096u) << "a refused open must not grow the file";
}

TEST(SharedFile, SizesAnEmptyFileSomeoneElseCreated) {
  test::TempDir dir("shm-file");
  dir.write("pod", "");
  auto shm = open_shared_file(spec_for(dir.resolve("pod"), 4096));
  ASSERT_TRUE(shm.has_value()) << shm.error().message;
  EXPECT_FALSE(shm->info().created);
  EXPECT_EQ(size_on_disk(dir.resolve("pod")), 4096u);
}

TEST(SharedFile, RefusesWhatIsNotARegularFile) {
  test::TempDir dir("shm-file");
  const auto fifo = dir.resolve("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto shm = open_shared_file(spec_for(fifo, 4096));
  ASSERT_FALSE(shm.has_value());
  EXPECT_EQ(shm.error().code, EINVAL);
  EXPECT_NE(shm.error().message.find("not a regular file"), std::string::npos) << shm.error().message;

  auto directory = open_shared_file(spec_for(dir.path(), 4096));
  ASSERT_FALSE(directory.has_value());
  EXPECT_EQ(directory.error().code, EISDIR);

  // A symbolic link could redirect the region anywhere the caller may write.
  dir.write("target", std::string(4096, '\0'));
  std::filesystem::create_symlink(dir.resolve("target"), dir.resolve("link"));
  auto link = open_shared_file(spec_for(dir.resolve("link"), 4096));
  ASSERT_FALSE(link.has_value());
  EXPECT_EQ(link.error().code, ELOOP);
}

TEST(SharedFile, MissingFileWithoutCreateAndOtherRefusals) {
  test::TempDir dir("shm-file");
  auto spec = spec_for(dir.resolve("absent"), 4096);
  spec.create = false;
  auto missing = open_shared_file(spec);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ENOENT);

  auto no_size = open_shared_file(spec_for(dir.resolve("new"), 0));
  ASSERT_FALSE(no_size.has_value());
  EXPECT_EQ(no_size.error().code, EINVAL);
  EXPECT_FALSE(std::filesystem::exists(dir.resolve("new"))) << "a failed create leaves no file behind";

  auto no_path = open_shared_file(spec_for("", 4096));
  ASSERT_FALSE(no_path.has_value());
  EXPECT_EQ(no_path.error().code, ENODEV) << "not a spec for this backend";
}

TEST(SharedFile, NamesTmpfsUnderDevShm) {
  std::error_code ec;
  if (!std::filesystem::is_directory("/dev/shm", ec)) GTEST_SKIP() << "no /dev/shm";
  test::TempDir dir("shm-file", "/dev/shm");
  auto shm = open_shared_file(spec_for(dir.resolve("pod"), 4096));
  ASSERT_TRUE(shm.has_value()) << shm.error().message;
  if (shm->info().filesystem != "tmpfs") GTEST_SKIP() << "/dev/shm is " << shm->info().filesystem;
  EXPECT_EQ(shm->info().filesystem, "tmpfs");
}

// A sysfs file is a device's memory (an ivshmem BAR's resource2): the
// backend names it so and reports it non-coherent.
TEST(FileSystemKind, NamesSysfsAndTmpfs) {
  UniqueFd sys(open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!sys) GTEST_SKIP() << "no /sys";
  auto kind = file_system_of(sys.get());
  ASSERT_TRUE(kind.has_value()) << kind.error().message;
  EXPECT_EQ(kind->name, "sysfs");
  EXPECT_FALSE(kind->hugetlbfs);
  EXPECT_EQ(kind->page_size, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
}

// A private hugetlbfs mount (this process's own mount namespace).
class SharedFileHugetlbfs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (unshare(CLONE_NEWNS) != 0) GTEST_SKIP() << "unshare(CLONE_NEWNS): " << strerror(errno);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) GTEST_SKIP() << "making / private";
    if (mount("cxlpool-test", dir_.path().c_str(), "hugetlbfs", 0, nullptr) != 0) {
      GTEST_SKIP() << "mount hugetlbfs: " << strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount2(dir_.path().c_str(), MNT_DETACH);
  }
  test::TempDir dir_{"shm-hugetlbfs"};
  bool mounted_ = false;
};

TEST_F(SharedFileHugetlbfs, RoundsToHugePagesOrSaysWhyNot) {
  auto pool = hal::read_huge_page_pool(SysfsRoot("/"));
  if (!pool) GTEST_SKIP() << pool.error().message;
  auto shm = open_shared_file(spec_for(dir_.resolve("pod"), 4096));
  if (pool->available() == 0) {
    ASSERT_FALSE(shm.has_value());
    EXPECT_EQ(shm.error().code, ENOMEM);
    EXPECT_NE(shm.error().message.find("nr_hugepages"), std::string::npos) << shm.error().message;
    EXPECT_FALSE(std::filesystem::exists(dir_.resolve("pod")));
    return;
  }
  ASSERT_TRUE(shm.has_value()) << shm.error().message;
  EXPECT_EQ(shm->info().filesystem, "hugetlbfs");
  EXPECT_EQ(shm->info().alignment, pool->page_size);
  EXPECT_EQ(shm->size(), pool->page_size);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(shm->bytes().data()) % pool->page_size, 0u);
  shm->bytes()[0] = std::byte{1};
}

}  // namespace
}  // namespace cxlpool::drivers
