// SPDX-License-Identifier: Apache-2.0
#include "block_device_conformance.hpp"

#include <cerrno>
#include <cstdlib>

#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::blk_test {

std::vector<BlockCase> block_cases(IoMode mode) {
  std::vector<BlockCase> cases;
  for (std::string& name : hal::usable_backend_names(hal::BackendClass::kBlockEngine)) {
    cases.push_back(BlockCase{std::move(name), mode});
  }
  return cases;
}

void PrintTo(const BlockCase& c, std::ostream* os) {
  *os << c.backend << (c.mode == IoMode::kDirect ? " (direct)" : " (buffered)");
}

std::string block_case_name(const ::testing::TestParamInfo<BlockCase>& info) {
  return info.param.backend + (info.param.mode == IoMode::kDirect ? "_direct" : "_buffered");
}

BackendTraits backend_traits(const std::string& backend) {
  if (backend == "uring") return BackendTraits{.completion_eventfd = true};
  if (backend == "mmap") {
    return BackendTraits{
        .past_eof = "mmap maps the size at open: I/O beyond it is EINVAL per request, not a short read",
        .empty_file = "mmap cannot map an empty file (EINVAL at open)",
    };
  }
  return {};
}

void AlignedFree::operator()(void* p) const { std::free(p); }

Buffer aligned_buffer(std::size_t bytes) { return Buffer(static_cast<std::uint8_t*>(std::aligned_alloc(kAlign, bytes))); }

void fill_pattern(std::uint8_t* p, std::size_t bytes, std::uint64_t seed) {
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>((seed * 131 + i * 7 + (i >> 9)) & 0xff);
}

BlockOpenOptions BlockDeviceConformance::options(std::uint64_t truncate_to) const {
  BlockOpenOptions o;
  o.direct = direct();
  o.create = true;
  o.truncate_to = truncate_to;
  return o;
}

Result<std::unique_ptr<hal::BlockDevice>> BlockDeviceConformance::open_raw(const hal::BlockOpenOptions& options) const {
  return hal::open_block_device(backend(), path_, options);
}

std::unique_ptr<hal::BlockDevice> BlockDeviceConformance::open_device(const hal::BlockOpenOptions& options) {
  auto dev = open_raw(options);
  if (dev) {
    EXPECT_EQ((*dev)->backend_name(), backend()) << "a named backend opens exactly that backend";
    return std::move(*dev);
  }
  const int code = dev.error().code;
  // As the registry's "best available" decides that an engine cannot run
  // here: the kernel refuses it (kernel.io_uring_disabled, seccomp).
  const bool engine_refused = code == ENOSYS || code == EPERM || code == EOPNOTSUPP;
  // O_DIRECT refused by the file system, or by a page-cache backend.
  const bool direct_refused = options.direct && code == EINVAL;
  // A host-wide limit another program may hold (fs.aio-max-nr).
  const bool host_limit = code == EAGAIN;
  if (engine_refused || direct_refused || host_limit) {
    skip_reason_ = dev.error().message;
    return nullptr;
  }
  ADD_FAILURE() << dev.error().message;
  return nullptr;
}

std::vector<hal::IoCompletion> BlockDeviceConformance::drain(hal::BlockDevice& dev, std::size_t count) {
  std::vector<hal::IoCompletion> all;
  std::vector<hal::IoCompletion> buf(count);
  while (all.size() < count) {
    auto got = dev.poll_completions(buf, 1);
    if (!got) {
      ADD_FAILURE() << got.error().message;
      break;
    }
    if (*got == 0 && dev.in_flight() == 0) {
      ADD_FAILURE() << "drained " << all.size() << " of " << count << " with nothing in flight";
      break;
    }
    all.insert(all.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*got));
  }
  return all;
}

// Every test of the suite for every backend, direct and buffered; the
// mode-specific fixtures only in their mode. A CXLPOOL_BACKENDS that
// excludes every block backend instantiates nothing, which is not an error.
INSTANTIATE_TEST_SUITE_P(Direct, BlockDeviceConformance, ::testing::ValuesIn(block_cases(IoMode::kDirect)),
                         block_case_name);
INSTANTIATE_TEST_SUITE_P(Buffered, BlockDeviceConformance, ::testing::ValuesIn(block_cases(IoMode::kBuffered)),
                         block_case_name);
INSTANTIATE_TEST_SUITE_P(Direct, DirectBlockDevice, ::testing::ValuesIn(block_cases(IoMode::kDirect)),
                         block_case_name);
INSTANTIATE_TEST_SUITE_P(Buffered, BufferedBlockDevice, ::testing::ValuesIn(block_cases(IoMode::kBuffered)),
                         block_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BlockDeviceConformance);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DirectBlockDevice);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BufferedBlockDevice);

}  // namespace cxlpool::blk_test
