// SPDX-License-Identifier: Apache-2.0
// BlockEngine bandwidth: 2 MiB O_DIRECT requests at queue depth 32 over one
// file, through the uring driver and the posix driver in the same run, so the
// ratio compares them on the same file and the same device state.
//   block_device_bench [path] [file MiB = 1024] [passes = 2]
// The file is written once (through the uring driver when it opens, else
// posix) so reads hit allocated blocks, then read in the same shuffled order
// by each driver. The file is removed at the end.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace {

using namespace cxlpool;
using hal::BlockDevice;
using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

constexpr std::uint32_t kBlock = 2u << 20;
constexpr std::uint32_t kDepth = 32;

struct Free {
  void operator()(void* p) const { std::free(p); }
};

// Runs every offset once as `op`, keeping up to kDepth requests in flight,
// each slot with its own 2 MiB registered buffer. Returns MiB/s, or < 0.
double run(BlockDevice& dev, IoOp op, const std::vector<std::uint64_t>& offsets, std::uint8_t* buffers) {
  std::size_t next = 0, done = 0;
  std::vector<std::uint32_t> free_slots;
  for (std::uint32_t s = 0; s < kDepth; ++s) free_slots.push_back(s);
  std::vector<IoRequest> batch;
  IoCompletion completions[kDepth];
  const auto start = std::chrono::steady_clock::now();
  while (done < offsets.size()) {
    batch.clear();
    while (!free_slots.empty() && next < offsets.size()) {
      const std::uint32_t s = free_slots.back();
      free_slots.pop_back();
      batch.push_back(IoRequest{op, offsets[next++], buffers + std::size_t{s} * kBlock, kBlock, s, 0});
    }
    if (!batch.empty()) {
      if (auto ok = dev.submit(batch); !ok) {
        std::fprintf(stderr, "%s submit: %s\n", dev.backend_name(), ok.error().message.c_str());
        return -1;
      }
    }
    auto got = dev.poll_completions(completions, 1);
    if (!got) {
      std::fprintf(stderr, "%s poll: %s\n", dev.backend_name(), got.error().message.c_str());
      return -1;
    }
    for (std::size_t i = 0; i < *got; ++i) {
      if (completions[i].result != kBlock) {
        std::fprintf(stderr, "%s %s: result %lld\n", dev.backend_name(), hal::io_op_name(op),
                     static_cast<long long>(completions[i].result));
        return -1;
      }
      free_slots.push_back(static_cast<std::uint32_t>(completions[i].user_data));
    }
    done += *got;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(offsets.size()) * (kBlock >> 20) / s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "block_device_bench.img";
  const std::uint64_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024;
  const int passes = argc > 3 ? std::atoi(argv[3]) : 2;
  const std::uint64_t bytes = (mib << 20) / kBlock * kBlock;
  if (bytes == 0 || passes <= 0) {
    std::fprintf(stderr, "usage: %s [path] [file MiB >= 2] [passes >= 1]\n", argv[0]);
    return 2;
  }

  hal::BlockOpenOptions opts;
  opts.direct = true;
  opts.create = true;
  opts.truncate_to = bytes;
  opts.queue_depth = kDepth;

  std::unique_ptr<BlockDevice> uring;
  if (auto d = hal::open_block_device("uring", path, opts)) uring = std::move(*d);
  else std::printf("uring: unavailable: %s\n", d.error().message.c_str());
  auto posix_or = hal::open_block_device("posix", path, opts);
  if (!posix_or) {
    std::fprintf(stderr, "posix: %s\n", posix_or.error().message.c_str());
    ::unlink(path.c_str());
    return 1;
  }
  std::unique_ptr<BlockDevice> posix = std::move(*posix_or);

  std::unique_ptr<std::uint8_t, Free> buffers(
      static_cast<std::uint8_t*>(std::aligned_alloc(4096, std::size_t{kDepth} * kBlock)));
  for (std::size_t i = 0; i < std::size_t{kDepth} * kBlock; ++i) buffers.get()[i] = static_cast<std::uint8_t>(i * 31 + 7);
  const iovec reg{buffers.get(), std::size_t{kDepth} * kBlock};
  for (BlockDevice* d : {uring.get(), posix.get()}) {
    if (d == nullptr) continue;
    if (auto ok = d->register_buffers(std::span(&reg, 1)); !ok) {
      std::fprintf(stderr, "%s register_buffers: %s\n", d->backend_name(), ok.error().message.c_str());
      return 1;
    }
  }

  std::vector<std::uint64_t> offsets;
  for (std::uint64_t off = 0; off < bytes; off += kBlock) offsets.push_back(off);
  std::printf("file %s: %llu MiB, %u KiB requests, QD %u, O_DIRECT (alignment %u, %s), %d read passes\n",
              path.c_str(), static_cast<unsigned long long>(bytes >> 20), kBlock >> 10, kDepth,
              posix->offset_alignment(), posix->geometry().alignment_source.c_str(), passes);

  BlockDevice& writer = uring ? *uring : *posix;
  const double write_mibs = run(writer, IoOp::kWrite, offsets, buffers.get());
  if (write_mibs < 0 || !writer.sync()) return 1;
  std::printf("write (fill, %s): %.0f MiB/s\n", writer.backend_name(), write_mibs);

  std::mt19937_64 rng(42);
  std::shuffle(offsets.begin(), offsets.end(), rng);
  double best[2] = {0, 0};
  for (int p = 0; p < passes; ++p) {
    // Alternate the order so neither driver always runs first.
    BlockDevice* order[2] = {p % 2 ? posix.get() : uring.get(), p % 2 ? uring.get() : posix.get()};
    for (BlockDevice* d : order) {
      if (d == nullptr) continue;
      const double r = run(*d, IoOp::kRead, offsets, buffers.get());
      if (r < 0) return 1;
      std::printf("pass %d read %-5s: %.0f MiB/s\n", p + 1, d->backend_name(), r);
      double& b = best[d == uring.get() ? 0 : 1];
      b = std::max(b, r);
    }
  }
  std::printf("best read: uring %.0f MiB/s, posix %.0f MiB/s", best[0], best[1]);
  if (best[0] > 0) std::printf(", uring/posix %.2fx", best[0] / best[1]);
  std::printf("\n");
  ::unlink(path.c_str());
  return 0;
}
