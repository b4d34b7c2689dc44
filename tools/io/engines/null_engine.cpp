// SPDX-License-Identifier: Apache-2.0
#include "null_engine.hpp"

#include <algorithm>
#include <vector>

#include "io_buffers.hpp"

namespace cxlpool::io {
namespace {

class NullEngine final : public Engine {
 public:
  NullEngine(std::uint64_t size, std::uint32_t depth) {
    geometry_.size = size;
    geometry_.alignment_source = "null engine";
    done_.reserve(depth);
  }

  const char* name() const override { return "null"; }
  const hal::BlockGeometry& geometry() const override { return geometry_; }

  Result<std::span<std::byte*>> buffers(std::uint32_t count, std::size_t bytes) override {
    if (auto ok = buffers_.allocate(count, bytes, 1); !ok) return tl::unexpected(ok.error());
    return buffers_.pointers();
  }

  Result<void> submit(std::span<const hal::IoRequest> requests) override {
    for (const hal::IoRequest& r : requests)
      done_.push_back({r.user_data, static_cast<std::int64_t>(r.length), r.op, r.length});
    return {};
  }

  Result<std::size_t> reap(std::span<hal::IoCompletion> out, std::size_t, std::chrono::nanoseconds) override {
    // Everything submitted is already complete, so `min` is always met.
    const std::size_t n = std::min(out.size(), done_.size());
    std::copy(done_.begin(), done_.begin() + static_cast<std::ptrdiff_t>(n), out.begin());
    done_.erase(done_.begin(), done_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
  }

  std::uint32_t in_flight() const override { return static_cast<std::uint32_t>(done_.size()); }

 private:
  hal::BlockGeometry geometry_;
  IoBuffers buffers_;
  std::vector<hal::IoCompletion> done_;
};

}  // namespace

Result<std::unique_ptr<Engine>> open_null_engine(const JobSpec& job, const EngineTarget& target) {
  if (target.size == 0) return fail(EINVAL, "null: needs size= (there is no file to take a size from)");
  return std::unique_ptr<Engine>(new NullEngine(target.size, std::max<std::uint32_t>(1, job.iodepth)));
}

}  // namespace cxlpool::io
