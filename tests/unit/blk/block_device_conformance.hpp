// SPDX-License-Identifier: Apache-2.0
// The BlockDevice conformance suite's fixture: every test runs once per
// BlockEngine backend this program links (hal::usable_backend_names at run
// time, so CXLPOOL_BACKENDS narrows it), opened by name through
// hal::open_block_device on a file in the build tree (a disk file system that
// takes O_DIRECT; tmpfs may not), in direct or buffered mode. A backend that
// cannot run here, or refuses the mode, skips with its own reason; a test of
// something a backend documents it does not do skips saying so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/hal/block_device.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::blk_test {

using hal::BlockOpenOptions;
using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

enum class IoMode { kDirect, kBuffered };

struct BlockCase {
  std::string backend;
  IoMode mode = IoMode::kDirect;
};

// One case per usable BlockEngine backend, in `mode`.
std::vector<BlockCase> block_cases(IoMode mode);
// gtest prints a failing case's parameter with this.
void PrintTo(const BlockCase& c, std::ostream* os);
// "posix_direct", "mmap_buffered": the test name's suffix.
std::string block_case_name(const ::testing::TestParamInfo<BlockCase>& info);

// What a backend's header documents that the common contract leaves open or
// that it does differently. A backend not listed has every default.
struct BackendTraits {
  bool completion_eventfd = false;  // completion_fd() is an eventfd, not -1
  const char* past_eof = nullptr;   // why a read past the end is not short (nullptr: it is)
  const char* empty_file = nullptr; // why an empty file does not open (nullptr: it does)
};
BackendTraits backend_traits(const std::string& backend);

constexpr std::size_t kAlign = 4096;

struct AlignedFree {
  void operator()(void* p) const;
};
using Buffer = std::unique_ptr<std::uint8_t[], AlignedFree>;

// `bytes` (a multiple of kAlign) at a kAlign boundary: good for any O_DIRECT.
Buffer aligned_buffer(std::size_t bytes);
// Bytes that differ with position and seed, so a misplaced block shows.
void fill_pattern(std::uint8_t* p, std::size_t bytes, std::uint64_t seed);

class BlockDeviceConformance : public ::testing::TestWithParam<BlockCase> {
 protected:
  const std::string& backend() const { return GetParam().backend; }
  bool direct() const { return GetParam().mode == IoMode::kDirect; }
  BackendTraits traits() const { return backend_traits(backend()); }
  const std::string& path() const { return path_; }

  // The case's options: its mode, create so the file exists, and the size
  // to truncate it to (0: as it is).
  BlockOpenOptions options(std::uint64_t truncate_to = 0) const;
  // hal::open_block_device(backend(), path(), options) as it answers.
  Result<std::unique_ptr<hal::BlockDevice>> open_raw(const hal::BlockOpenOptions& options) const;
  // As open_raw; a refusal this host or backend cannot help (the kernel
  // refuses the engine, O_DIRECT refused, a host limit) sets skip_reason_
  // and returns nullptr; any other error is a test failure.
  std::unique_ptr<hal::BlockDevice> open_device(const hal::BlockOpenOptions& options);

  // Polls (min 1) until `count` completions arrived or an error.
  static std::vector<hal::IoCompletion> drain(hal::BlockDevice& dev, std::size_t count);

  std::string skip_reason_;

 private:
  test::TempDir scratch_{"blk", CXLPOOL_BLK_TEST_DIR};
  std::string path_ = scratch_.resolve("device.img").string();
};

// Tests that only mean something with O_DIRECT (alignment) or without it.
class DirectBlockDevice : public BlockDeviceConformance {};
class BufferedBlockDevice : public BlockDeviceConformance {};

}  // namespace cxlpool::blk_test

// Opens `var` with `options`, or skips the test with the backend's reason.
#define OPEN_OR_SKIP(var, options)                          \
  auto var = open_device(options);                          \
  if (!var && !skip_reason_.empty()) GTEST_SKIP() << skip_reason_; \
  ASSERT_NE(var, nullptr)
