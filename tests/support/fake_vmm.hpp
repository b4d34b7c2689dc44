// SPDX-License-Identifier: Apache-2.0
// A GpuVmm that maps nothing real: it checks every call against the
// interface's rules (granularity, reserved ranges, no double mapping, no
// unmapping what was not mapped) and records what is mapped where, so tests
// can see which physical piece backs which address. Failures can be
// injected.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "backing.hpp"
#include "cxlpool/hal/gpu_vmm.hpp"

namespace cxlpool::client::arena::test {

struct FakeVmmState {
  std::map<uint64_t, uint64_t> ranges;                          // va -> bytes
  std::map<uint64_t, std::pair<hal::VmmHandle, uint64_t>> maps; // va -> (handle, offset)
  std::set<hal::VmmHandle> handles;
  uint64_t map_calls = 0, unmap_calls = 0;
  int fail_map_in = -1;  // the n-th next map fails (0: the next one); -1 never
  std::string violation;  // first broken rule, "" when none
};

class FakeVmm final : public hal::GpuVmm {
 public:
  explicit FakeVmm(std::shared_ptr<FakeVmmState> state, uint64_t granularity = 64 * 1024)
      : s_(std::move(state)), gran_(granularity) {}
  const char* name() const override { return "fake"; }
  size_t granularity() const override { return gran_; }
  Result<uint64_t> reserve(size_t bytes) override {
    if (bytes % gran_ != 0) return bad("reserve size");
    const uint64_t va = next_;
    next_ += bytes + gran_;
    s_->ranges[va] = bytes;
    return va;
  }
  Result<void> release_range(uint64_t va, size_t bytes) override {
    auto it = s_->ranges.find(va);
    if (it == s_->ranges.end() || it->second != bytes) return bad("release_range");
    for (const auto& [m, h] : s_->maps) {
      if (m >= va && m < va + bytes) return bad("release_range with pieces mapped");
    }
    s_->ranges.erase(it);
    return {};
  }
  Result<hal::VmmHandle> create(size_t bytes) override {
    if (bytes % gran_ != 0) return bad("create size");
    const auto h = next_handle_++;
    s_->handles.insert(h);
    return h;
  }
  Result<hal::VmmHandle> import_fd(int, size_t bytes) override { return create(bytes); }
  Result<void> release(hal::VmmHandle h) override {
    if (s_->handles.erase(h) == 0) return bad("release of an unknown handle");
    return {};
  }
  Result<void> map(uint64_t va, size_t bytes, hal::VmmHandle h, uint64_t offset) override {
    if (s_->fail_map_in == 0) {
      s_->fail_map_in = -1;
      return fail(ENOMEM, "injected map failure");
    }
    if (s_->fail_map_in > 0) --s_->fail_map_in;
    if (va % gran_ || bytes != page_ || offset % gran_) return bad("map alignment or size");
    if (!s_->handles.count(h)) return bad("map of an unknown handle");
    if (s_->maps.count(va)) return bad("map over a mapped piece");
    bool inside = false;
    for (const auto& [r, b] : s_->ranges) inside |= va >= r && va + bytes <= r + b;
    if (!inside) return bad("map outside a reservation");
    s_->maps[va] = {h, offset};
    ++s_->map_calls;
    return {};
  }
  Result<void> unmap(uint64_t va, size_t bytes) override {
    if (bytes != page_ || s_->maps.erase(va) == 0) return bad("unmap of a piece not mapped");
    ++s_->unmap_calls;
    return {};
  }
  hal::VmmStats stats() const override {
    hal::VmmStats st;
    st.maps = s_->map_calls;
    st.unmaps = s_->unmap_calls;
    st.mapped_bytes = s_->maps.size() * page_;
    return st;
  }
  void set_page(uint64_t page) { page_ = page; }

 private:
  tl::unexpected<Error> bad(const std::string& what) {
    if (s_->violation.empty()) s_->violation = what;
    return fail(EINVAL, "fake vmm: " + what);
  }
  std::shared_ptr<FakeVmmState> s_;
  uint64_t gran_;
  uint64_t page_ = 64 * 1024;
  uint64_t next_ = uint64_t{1} << 40;
  hal::VmmHandle next_handle_ = 1;
};

// Backing pieces from vmm.create(); counts them and can refuse.
struct CountingBackingState {
  int live = 0;
  int acquired = 0;
  int discards = 0;
  int refuse_after = -1;  // acquisitions allowed; -1 unlimited
};

class CountingBacking final : public BackingSource {
 public:
  explicit CountingBacking(std::shared_ptr<CountingBackingState> s) : s_(std::move(s)) {}
  Result<Backing> acquire(hal::GpuVmm& vmm, uint64_t bytes) override {
    if (s_->refuse_after >= 0 && s_->acquired >= s_->refuse_after) return fail(EDQUOT, "quota (test)");
    auto h = vmm.create(bytes);
    if (!h) return tl::unexpected(h.error());
    ++s_->live;
    ++s_->acquired;
    return Backing{*h, bytes, nullptr};
  }
  void release(hal::GpuVmm& vmm, Backing& b) override {
    (void)vmm.release(b.handle);
    --s_->live;
  }
  void discard(const Backing&, uint64_t, uint64_t) override { ++s_->discards; }
  uint32_t tier() const override { return UINT32_MAX; }

 private:
  std::shared_ptr<CountingBackingState> s_;
};

}  // namespace cxlpool::client::arena::test
