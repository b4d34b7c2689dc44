// SPDX-License-Identifier: Apache-2.0
// Opening: create and truncate_to on regular files, the size reported, a
// missing file, and read-only devices, which change nothing on disk.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "block_device_conformance.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::blk_test {
namespace {

namespace fs = std::filesystem;

TEST_P(BlockDeviceConformance, CreateMakesTheFileAndTruncateToSizesIt) {
  ASSERT_FALSE(fs::exists(path()));
  OPEN_OR_SKIP(dev, options(64 * 1024));
  EXPECT_EQ(dev->size(), 64u * 1024);
  EXPECT_EQ(dev->path(), path());
  EXPECT_EQ(fs::file_size(path()), 64u * 1024);
}

TEST_P(BlockDeviceConformance, CreateWithoutASizeGivesAnEmptyDevice) {
  if (const char* why = traits().empty_file) GTEST_SKIP() << why;
  OPEN_OR_SKIP(dev, options());
  EXPECT_EQ(dev->size(), 0u);
  EXPECT_TRUE(fs::exists(path()));
}

TEST_P(BlockDeviceConformance, TruncateToShrinksAndZeroKeepsTheSize) {
  test::write_file(path(), "");
  fs::resize_file(path(), 1 << 20);
  BlockOpenOptions opts = options(64 * 1024);
  opts.create = false;
  {
    OPEN_OR_SKIP(dev, opts);
    EXPECT_EQ(dev->size(), 64u * 1024);
  }
  EXPECT_EQ(fs::file_size(path()), 64u * 1024);
  opts.truncate_to = 0;
  OPEN_OR_SKIP(again, opts);
  EXPECT_EQ(again->size(), 64u * 1024) << "truncate_to 0 leaves the size alone";
}

TEST_P(BlockDeviceConformance, AMissingFileWithoutCreateIsENOENT) {
  BlockOpenOptions opts = options(kAlign);
  {
    OPEN_OR_SKIP(usable, opts);  // the error below is about the file, not the mode
  }
  std::filesystem::remove(path());
  opts.create = false;
  auto dev = open_raw(opts);
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, ENOENT);
  EXPECT_NE(dev.error().message.find(path()), std::string::npos) << "names the file: " << dev.error().message;
  EXPECT_NE(dev.error().message.find(backend()), std::string::npos) << "names the backend: " << dev.error().message;
  EXPECT_FALSE(fs::exists(path()));
}

// A read-only device reads; its writes fail (refused at submit or completed
// with an errno, as the backend's kernel interface reports them) and the
// file keeps its bytes. create and truncate_to do nothing to it.
TEST_P(BlockDeviceConformance, ReadOnlyReadsAndRefusesWrites) {
  constexpr std::size_t kBytes = 4 * kAlign;
  Buffer original = aligned_buffer(kBytes);
  fill_pattern(original.get(), kBytes, 21);
  test::write_file(path(), std::string_view(reinterpret_cast<const char*>(original.get()), kBytes));

  BlockOpenOptions opts = options(kBytes / 2);
  opts.read_only = true;
  opts.create = true;
  OPEN_OR_SKIP(dev, opts);
  EXPECT_EQ(dev->size(), kBytes) << "truncate_to is not applied read-only";

  Buffer in = aligned_buffer(kBytes);
  ASSERT_EQ(dev->read(0, in.get(), kBytes).value_or(0), kBytes);
  EXPECT_EQ(std::memcmp(in.get(), original.get(), kBytes), 0);

  Buffer junk = aligned_buffer(kAlign);
  std::memset(junk.get(), 0xee, kAlign);
  EXPECT_FALSE(dev->write(0, junk.get(), kAlign)) << "a read-only device wrote";
  const IoRequest w{IoOp::kWrite, kAlign, junk.get(), kAlign, 7};
  if (dev->submit(std::span<const IoRequest>(&w, 1))) {
    const auto done = drain(*dev, 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_LT(done[0].result, 0) << "a read-only device wrote";
  }
  EXPECT_EQ(dev->stats().writes, 0u);
  dev.reset();
  EXPECT_EQ(test::read_file(path()), std::string(reinterpret_cast<const char*>(original.get()), kBytes));

  // create does not create a read-only file.
  fs::remove(path());
  auto missing = open_raw(opts);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ENOENT);
}

}  // namespace
}  // namespace cxlpool::blk_test
