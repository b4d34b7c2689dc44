// SPDX-License-Identifier: Apache-2.0
// The storage engine end to end in one process: a BlkFrontend and a
// BlkBackend over a link in shared memory, the backend on a real block
// device (io_uring with O_DIRECT, and posix) over a file. Data written
// through the link is read back byte for byte and is in the file; device
// errors, hostile commands and a backend that stops all reach the frontend
// as negative errno, never as a hang or a false success.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "cxlpool/devpool/blk_backend.hpp"
#include "cxlpool/devpool/blk_frontend.hpp"
#include "cxlpool/devpool/channel.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "support/faulty_block_device.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::devpool::blk {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kDiskBytes = 4 << 20;
constexpr std::uint32_t kBlock = 4096;

std::string test_dir() {
  const char* dir = std::getenv("CXLPOOL_BLK_TEST_DIR");
  return dir != nullptr ? dir : ".";
}

class BlkEngine : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    hal::BlockOpenOptions o;
    o.create = true;
    o.truncate_to = kDiskBytes;
    o.queue_depth = 64;
    o.completion_eventfd = false;
    auto dev = hal::open_block_device(GetParam(), (dir_.path() / "disk").string(), o);
    if (!dev) GTEST_SKIP() << GetParam() << " here: " << dev.error().message;
    device_ = std::move(*dev);
    const LinkGeometry g = blk_link_geometry(64, 2 << 20);
    link_bytes_ = link_bytes(g);
    void* p = ::mmap(nullptr, link_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    memory_ = {static_cast<std::byte*>(p), link_bytes_};
    ASSERT_TRUE(format_link(memory_, g));
    auto view = open_link(memory_);
    ASSERT_TRUE(view) << view.error().message;
    link_ = *view;
  }

  void TearDown() override {
    stop_backend();
    frontend_.reset();
    backend_.reset();
    if (!memory_.empty()) ::munmap(memory_.data(), memory_.size());
  }

  void start_backend(hal::BlockDevice& device, BlkBackendOptions options = {}) {
    auto b = make_blk_backend(link_, device, options);
    ASSERT_TRUE(b) << b.error().message;
    backend_ = std::move(*b);
    thread_ = std::thread([this] { backend_error_ = !backend_->run(stop_).has_value(); });
  }

  void stop_backend() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  void attach(BlkFrontendOptions options = {}) {
    auto f = make_blk_frontend(link_, options);
    ASSERT_TRUE(f) << f.error().message;
    frontend_ = std::move(*f);
  }

  // Submits every request (waiting for room) and returns the results in
  // submission order of their user_data (0..n-1).
  std::vector<BlkResult> run_all(const std::vector<BlkRequest>& requests) {
    std::vector<BlkResult> results(requests.size());
    std::size_t next = 0, done = 0;
    BlkResult batch[16];
    while (done < requests.size()) {
      if (next < requests.size()) {
        auto sent = frontend_->submit(std::span(requests).subspan(next));
        if (sent) next += *sent;
        else if (sent.error().code != EAGAIN) {
          ADD_FAILURE() << sent.error().message;
          return results;
        }
      }
      auto got = frontend_->poll(batch, 1, 5s);
      if (!got) {
        ADD_FAILURE() << got.error().message;
        return results;
      }
      for (std::size_t i = 0; i < *got; ++i) results[batch[i].user_data] = batch[i];
      done += *got;
    }
    return results;
  }

  std::byte* buffer(std::uint64_t offset) { return frontend_->buffer_area().data() + offset; }

  test::TempDir dir_{"blk-engine", test_dir()};
  std::unique_ptr<hal::BlockDevice> device_;
  std::size_t link_bytes_ = 0;
  std::span<std::byte> memory_;
  LinkView link_{};
  std::unique_ptr<BlkBackend> backend_;
  std::unique_ptr<BlkFrontend> frontend_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  bool backend_error_ = false;
};

TEST_P(BlkEngine, IdentifyReportsTheDevice) {
  start_backend(*device_);
  attach();
  EXPECT_EQ(frontend_->device().capacity, kDiskBytes);
  EXPECT_GE(frontend_->device().block_size, 512u);
  EXPECT_EQ(kDiskBytes % frontend_->device().block_size, 0u);
  EXPECT_EQ(backend_->stats().identifies, 1u);
}

TEST_P(BlkEngine, WritesThenReadsByteForByte) {
  start_backend(*device_);
  attach();
  constexpr std::uint32_t kBlocks = 96;  // more than the request ring's 64 slots
  auto out = frontend_->alloc_buffer(kBlocks * kBlock);
  auto in = frontend_->alloc_buffer(kBlocks * kBlock);
  ASSERT_TRUE(out && in);
  std::mt19937 rng(42);
  for (std::uint32_t i = 0; i < kBlocks * kBlock; ++i) buffer(*out)[i] = static_cast<std::byte>(rng());
  std::vector<BlkRequest> writes, reads;
  for (std::uint32_t i = 0; i < kBlocks; ++i) {
    // Scattered over the device, not in order.
    const std::uint64_t where = (static_cast<std::uint64_t>(i) * 37 % kBlocks) * kBlock;
    writes.push_back({Opcode::kWrite, 0, where, kBlock, *out + i * kBlock, i});
    reads.push_back({Opcode::kRead, 0, where, kBlock, *in + i * kBlock, i});
  }
  for (const BlkResult& r : run_all(writes)) {
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.bytes, kBlock);
  }
  auto flushed = run_all({BlkRequest{Opcode::kFlush, 0, 0, 0, 0, 0}});
  EXPECT_EQ(flushed[0].status, 0);
  for (const BlkResult& r : run_all(reads)) {
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.bytes, kBlock);
  }
  EXPECT_EQ(std::memcmp(buffer(*out), buffer(*in), kBlocks * kBlock), 0);
  // And the bytes are on the device itself, where the write put them.
  stop_backend();
  std::byte* check = buffer(*in);  // aligned for O_DIRECT
  ASSERT_TRUE(device_->read(37 * kBlock, check, kBlock));
  EXPECT_EQ(std::memcmp(check, buffer(*out) + kBlock, kBlock), 0);
  EXPECT_EQ(backend_->stats().writes, kBlocks);
  EXPECT_EQ(backend_->stats().reads, kBlocks);
  EXPECT_EQ(backend_->stats().flushes, 1u);
}

// The doorbell: the frontend sleeps on the completion slot and the backend
// wakes it; with a backend that never rings the frontend still gets every
// answer (its waits are bounded, then it polls).
TEST_P(BlkEngine, DoorbellWakesTheFrontendAndIsOptional) {
  for (const bool rings : {true, false}) {
    stop_ = false;
    BlkBackendOptions bo;
    bo.doorbell = rings;
    start_backend(*device_, bo);
    BlkFrontendOptions fo;
    fo.doorbell = true;
    attach(fo);
    auto buf = frontend_->alloc_buffer(32 * kBlock);
    ASSERT_TRUE(buf);
    std::vector<BlkRequest> writes, reads;
    for (std::uint32_t i = 0; i < 32; ++i) {
      for (std::uint32_t k = 0; k < kBlock; ++k) buffer(*buf)[i * kBlock + k] = static_cast<std::byte>(i + k + rings);
      writes.push_back({Opcode::kWrite, 0, std::uint64_t{i} * kBlock, kBlock, *buf + i * kBlock, i});
      reads.push_back({Opcode::kRead, 0, std::uint64_t{i} * kBlock, kBlock, *buf + i * kBlock, i});
    }
    const auto start = std::chrono::steady_clock::now();
    for (int round = 0; round < 20; ++round) {
      for (const BlkResult& r : run_all(writes)) EXPECT_EQ(r.status, 0);
    }
    std::memset(buffer(*buf), 0, 32 * kBlock);
    for (const BlkResult& r : run_all(reads)) EXPECT_EQ(r.status, 0);
    for (std::uint32_t i = 0; i < 32; ++i) {
      ASSERT_EQ(buffer(*buf)[i * kBlock + 7], static_cast<std::byte>(i + 7 + rings)) << i;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "rings " << rings;
    stop_backend();
    frontend_.reset();
    backend_.reset();
    // A fresh link for the next round.
    ASSERT_TRUE(format_link(memory_, link_.geometry));
  }
}

TEST_P(BlkEngine, NonCoherentLinkCarriesTheSameData) {
  // Both sides then write lines back and invalidate them as on memory two
  // hosts share without coherence.
  ASSERT_TRUE(format_link(memory_, blk_link_geometry(64, 2 << 20, Coherence::kNonCoherent)));
  link_ = *open_link(memory_);
  start_backend(*device_);
  attach();
  constexpr std::uint32_t kBlocks = 80;
  auto out = frontend_->alloc_buffer(kBlocks * kBlock);
  auto in = frontend_->alloc_buffer(kBlocks * kBlock);
  ASSERT_TRUE(out && in);
  for (std::uint32_t i = 0; i < kBlocks * kBlock; ++i) buffer(*out)[i] = static_cast<std::byte>(i * 13 + i / kBlock);
  std::vector<BlkRequest> writes, reads;
  for (std::uint32_t i = 0; i < kBlocks; ++i) {
    writes.push_back({Opcode::kWrite, 0, i * kBlock, kBlock, *out + i * kBlock, i});
    reads.push_back({Opcode::kRead, 0, i * kBlock, kBlock, *in + i * kBlock, i});
  }
  for (const BlkResult& r : run_all(writes)) EXPECT_EQ(r.status, 0);
  for (const BlkResult& r : run_all(reads)) EXPECT_EQ(r.bytes, kBlock);
  EXPECT_EQ(std::memcmp(buffer(*out), buffer(*in), kBlocks * kBlock), 0);
}

TEST_P(BlkEngine, LargeTransfersAndForcedUnitAccess) {
  start_backend(*device_);
  attach();
  constexpr std::uint32_t kBig = 1 << 20;
  auto out = frontend_->alloc_buffer(kBig);
  auto in = frontend_->alloc_buffer(kBig);
  ASSERT_TRUE(out && in);
  for (std::uint32_t i = 0; i < kBig; ++i) buffer(*out)[i] = static_cast<std::byte>(i * 7 + 3);
  auto w = run_all({BlkRequest{Opcode::kWrite, kFlagFua, kBig, kBig, *out, 0}});
  EXPECT_EQ(w[0].status, 0);
  EXPECT_EQ(w[0].bytes, kBig);
  auto r = run_all({BlkRequest{Opcode::kRead, 0, kBig, kBig, *in, 0}});
  EXPECT_EQ(r[0].bytes, kBig);
  EXPECT_EQ(std::memcmp(buffer(*out), buffer(*in), kBig), 0);
}

TEST_P(BlkEngine, FrontendRefusesMalformedRequestsBeforeSending) {
  start_backend(*device_);
  attach();
  auto buf = frontend_->alloc_buffer(kBlock);
  ASSERT_TRUE(buf);
  auto code = [&](BlkRequest r) {
    auto sent = frontend_->submit({&r, 1});
    return sent ? 0 : sent.error().code;
  };
  EXPECT_EQ(code({Opcode::kRead, 0, kDiskBytes, kBlock, *buf, 0}), ERANGE);
  EXPECT_EQ(code({Opcode::kRead, 0, 100, kBlock, *buf, 0}), EINVAL);
  EXPECT_EQ(code({Opcode::kRead, 0, 0, kBlock, frontend_->buffer_area().size(), 0}), EFAULT);
  EXPECT_EQ(frontend_->in_flight(), 0u);
}

TEST_P(BlkEngine, DeviceErrorsReachTheFrontend) {
  testing::FaultPlan plan;
  plan.fail_nth_op = 2;
  plan.fail_errno = EIO;
  testing::FaultyBlockDevice faulty(std::move(device_), plan);
  start_backend(faulty);
  attach();
  auto buf = frontend_->alloc_buffer(3 * kBlock);
  ASSERT_TRUE(buf);
  std::vector<BlkRequest> reads;
  for (std::uint32_t i = 0; i < 3; ++i) reads.push_back({Opcode::kRead, 0, i * kBlock, kBlock, *buf + i * kBlock, i});
  // One at a time, so "the second operation" is the second request.
  std::vector<BlkResult> results;
  for (const BlkRequest& r : reads) results.push_back(run_all({BlkRequest{r.opcode, 0, r.offset, r.length, r.buffer_offset, 0}})[0]);
  EXPECT_EQ(results[0].status, 0);
  EXPECT_EQ(results[1].status, -EIO);
  EXPECT_EQ(results[1].bytes, 0u);
  EXPECT_EQ(results[2].status, 0);
}

TEST_P(BlkEngine, HostileCommandsAreAnsweredAndTheLinkStaysUp) {
  auto backend = make_blk_backend(link_, *device_);
  ASSERT_TRUE(backend);
  auto requests = ChannelProducer<CoherentLines>::attach(link_.request_channel);
  auto completions = ChannelConsumer<CoherentLines>::attach(link_.completion_channel);
  ASSERT_TRUE(requests && completions);
  const std::uint64_t area = link_.frontend_buffers.size();
  std::vector<CommandBytes> sent;
  auto command = [&](Opcode op, std::uint32_t id, std::uint64_t offset, std::uint32_t length, std::uint64_t buffer) {
    Command c;
    c.opcode = op;
    c.command_id = id;
    c.offset = offset;
    c.length = length;
    c.buffer_offset = buffer;
    sent.push_back(encode_command(c));
  };
  command(Opcode::kRead, 1, 0, kBlock, area - 512);            // buffer runs off the area
  command(Opcode::kRead, 2, kDiskBytes, kBlock, 0);            // past the device
  command(Opcode::kRead, 3, ~0ull - 4095, kBlock, 0);          // offset + length wraps
  command(Opcode::kWrite, 4, 0, 100, 0);                       // unaligned length
  command(Opcode::kRead, 5, 0, kBlock, ~0ull - 4095);          // buffer offset + length wraps
  sent.push_back(encode_command({}));
  sent.back()[0] = std::byte{0x42};                            // unknown opcode
  sent.back()[4] = std::byte{6};
  sent.push_back(encode_command({}));
  sent.back()[40] = std::byte{1};                              // reserved bytes
  sent.back()[4] = std::byte{7};
  command(Opcode::kRead, 8, 0, kBlock, 0);                     // a good one after all that
  for (const CommandBytes& c : sent) ASSERT_TRUE(requests->push(c.data()));
  requests->flush();
  std::vector<Completion> got;
  for (int round = 0; round < 100000 && got.size() < sent.size(); ++round) {
    ASSERT_TRUE((*backend)->step());
    CompletionBytes raw[8];
    auto n = completions->poll(raw, 8);
    ASSERT_TRUE(n);
    for (std::uint32_t i = 0; i < *n; ++i) got.push_back(*decode_completion(raw[i]));
  }
  ASSERT_EQ(got.size(), sent.size());
  std::map<std::uint32_t, std::int32_t> status;
  for (const Completion& c : got) status[c.command_id] = c.status;
  EXPECT_EQ(status[1], -EFAULT);
  EXPECT_EQ(status[2], -ERANGE);
  EXPECT_EQ(status[3], -ERANGE);
  EXPECT_EQ(status[4], -EINVAL);
  EXPECT_EQ(status[5], -EFAULT);
  EXPECT_EQ(status[6], -EOPNOTSUPP);
  EXPECT_EQ(status[7], -EBADMSG);
  EXPECT_EQ(status[8], 0);
  EXPECT_EQ((*backend)->stats().rejected, 7u);
}

TEST_P(BlkEngine, StoppedBackendTimesOutInsteadOfHanging) {
  start_backend(*device_);
  BlkFrontendOptions options;
  options.command_timeout = 300ms;
  attach(options);
  auto buf = frontend_->alloc_buffer(kBlock);
  ASSERT_TRUE(buf);
  stop_backend();
  BlkRequest r{Opcode::kRead, 0, 0, kBlock, *buf, 99};
  ASSERT_TRUE(frontend_->submit({&r, 1}));
  const auto start = std::chrono::steady_clock::now();
  BlkResult result;
  auto got = frontend_->poll({&result, 1}, 1, 10s);
  ASSERT_TRUE(got);
  ASSERT_EQ(*got, 1u);
  EXPECT_EQ(result.user_data, 99u);
  EXPECT_EQ(result.status, -ETIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(frontend_->submit({&r, 1}).error().code, ENOTCONN);
  EXPECT_EQ(frontend_->poll({&result, 1}, 1, 10ms).error().code, ETIMEDOUT);
}

TEST_P(BlkEngine, LivenessProbeEndsWaitsEarly) {
  start_backend(*device_);
  std::atomic<bool> alive{true};
  BlkFrontendOptions options;
  options.command_timeout = 60s;
  options.backend_alive = [&] { return alive.load(); };
  options.probe_interval = 10ms;
  attach(options);
  auto buf = frontend_->alloc_buffer(kBlock);
  stop_backend();
  alive = false;
  BlkRequest r{Opcode::kRead, 0, 0, kBlock, *buf, 5};
  ASSERT_TRUE(frontend_->submit({&r, 1}));
  BlkResult result;
  auto got = frontend_->poll({&result, 1}, 1, 10s);
  ASSERT_TRUE(got);
  ASSERT_EQ(*got, 1u);
  EXPECT_EQ(result.status, -ENOTCONN);
}

TEST_P(BlkEngine, NoBackendMeansAttachTimesOut) {
  BlkFrontendOptions options;
  options.command_timeout = 100ms;
  auto f = make_blk_frontend(link_, options);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ETIMEDOUT);
}

TEST_P(BlkEngine, BufferAllocatorHandsOutDisjointPages) {
  start_backend(*device_);
  attach();
  auto a = frontend_->alloc_buffer(1);
  auto b = frontend_->alloc_buffer(8192);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a % 4096, 0u);
  EXPECT_GE(*b, *a + 4096);
  EXPECT_EQ(frontend_->alloc_buffer(1ull << 40).error().code, ENOMEM);
  EXPECT_EQ(frontend_->alloc_buffer(0).error().code, EINVAL);
  EXPECT_TRUE(frontend_->free_buffer(*a));
  EXPECT_EQ(frontend_->free_buffer(*a).error().code, EINVAL);
  auto c = frontend_->alloc_buffer(4096);
  EXPECT_EQ(*c, *a);  // first fit reuses the freed page
}

INSTANTIATE_TEST_SUITE_P(Backends, BlkEngine, ::testing::Values("uring", "posix"));

}  // namespace
}  // namespace cxlpool::devpool::blk
