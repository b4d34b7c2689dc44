// SPDX-License-Identifier: Apache-2.0
// ioengine=cuda: option checks everywhere; without a GPU the engine reports
// ENODEV with the driver's reason; with one, data read into device buffers
// and written back out of them reaches the file unchanged (file -> bounce
// -> H2D on reads, D2H -> bounce -> file on writes), for both mem= modes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engines/cuda_engine.hpp"
#include "engines/engine.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint32_t kBlock = 64 * 1024;
constexpr std::uint32_t kBlocks = 8;

class TempFile {
 public:
  TempFile() {
    char name[] = "/var/tmp/cxlpool-cuda-engine-XXXXXX";
    const int fd = ::mkstemp(name);
    path_ = name;
    if (fd >= 0) ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

JobSpec job(const std::string& mem, RwMode rw = RwMode::kRead) {
  JobSpec j;
  j.name = "cuda-test";
  j.ioengine = "cuda";
  if (!mem.empty()) j.engine_options["mem"] = mem;
  j.rw = rw;
  j.iodepth = 4;
  j.direct = true;
  return j;
}

TEST(CudaEngine, RejectsUnknownMemMode) {
  TempFile f;
  auto e = open_engine(job("cudamanaged"), EngineTarget{f.path(), kBlock, false});
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, EINVAL);
  EXPECT_NE(e.error().message.find("mem=cudamanaged"), std::string::npos);
}

TEST(CudaEngine, RefusesVerifiedWritesFromDeviceMemory) {
  TempFile f;
  JobSpec j = job("cudadevice", RwMode::kWrite);
  j.verify = VerifyMode::kCrc32c;
  auto e = open_engine(j, EngineTarget{f.path(), kBlock, true});
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, EINVAL);
}

// Opens the engine or explains why the rest of a test cannot run here.
std::unique_ptr<Engine> open_or_skip_reason(const JobSpec& j, const EngineTarget& t,
                                            std::string* why) {
  auto e = open_engine(j, t);
  if (e) return std::move(*e);
  *why = e.error().message;
  EXPECT_EQ(e.error().code, ENODEV) << e.error().message;
  EXPECT_EQ(e.error().message.rfind("cuda: no CUDA device (", 0), 0u) << e.error().message;
  return nullptr;
}

// Runs requests one batch at a time and waits for all of them.
void run(Engine& e, std::vector<hal::IoRequest> requests) {
  ASSERT_TRUE(e.submit(requests)) << "submit";
  std::size_t done = 0;
  hal::IoCompletion out[kBlocks];
  while (done < requests.size()) {
    auto got = e.reap(out, 1, std::chrono::seconds(10));
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_GT(*got, 0u) << "no completion within 10 s";
    for (std::size_t i = 0; i < *got; ++i) {
      EXPECT_EQ(out[i].result, static_cast<std::int64_t>(out[i].length));
    }
    done += *got;
  }
  EXPECT_EQ(e.in_flight(), 0u);
}

class CudaEngineData : public ::testing::TestWithParam<const char*> {};

TEST_P(CudaEngineData, ReadThenWriteBackKeepsTheBytes) {
  TempFile f;
  std::vector<char> data(size_t{kBlock} * kBlocks);
  std::mt19937 gen(1);
  for (auto& c : data) c = static_cast<char>(gen());
  {
    std::ofstream out(f.path(), std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size() / 2));
    out.write(std::string(data.size() / 2, '\0').data(),
              static_cast<std::streamsize>(data.size() / 2));
  }
  std::string why;
  auto e = open_or_skip_reason(job(GetParam(), RwMode::kReadWrite),
                               EngineTarget{f.path(), data.size(), true}, &why);
  if (!e) {
    if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << why;
    GTEST_SKIP() << why;
  }
  auto bufs = e->buffers(kBlocks / 2, kBlock);
  ASSERT_TRUE(bufs) << bufs.error().message;
  // Read the first half into the buffers, scribble over the host side, then
  // write the buffers to the second half: with mem=cudadevice the bytes come
  // back from device memory, so the scribbles must not reach the file.
  std::vector<hal::IoRequest> reads, writes;
  for (std::uint32_t i = 0; i < kBlocks / 2; ++i) {
    reads.push_back(hal::IoRequest{hal::IoOp::kRead, std::uint64_t{i} * kBlock, (*bufs)[i], kBlock, i});
    writes.push_back(hal::IoRequest{hal::IoOp::kWrite, std::uint64_t{i + kBlocks / 2} * kBlock, (*bufs)[i],
                      kBlock, 100 + i});
  }
  run(*e, reads);
  const bool on_device = std::string(GetParam()) == "cudadevice";
  if (on_device) {
    for (std::uint32_t i = 0; i < kBlocks / 2; ++i) std::memset((*bufs)[i], 0x5A, kBlock);
  }
  run(*e, writes);
  e.reset();
  std::ifstream in(f.path(), std::ios::binary);
  std::vector<char> back(data.size());
  in.read(back.data(), static_cast<std::streamsize>(back.size()));
  EXPECT_EQ(std::memcmp(back.data() + data.size() / 2, data.data(), data.size() / 2), 0);
}

INSTANTIATE_TEST_SUITE_P(Mem, CudaEngineData, ::testing::Values("cudahost", "cudadevice"));

}  // namespace
}  // namespace cxlpool::io
