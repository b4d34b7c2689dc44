// SPDX-License-Identifier: Apache-2.0
// A BlockDevice that wraps a real one and injects faults, for the fault
// tests of code built on the block layer: the Nth data operation (counted
// from 1 across reads and writes) completes with an errno without reaching the
// device, and/or every read is cut to at most `short_read_bytes`, and/or
// write completions are held back (a slow device): polls never see them
// until release_held() hands one out (in any order), or a poll waits with
// nothing else on the device (it gets them all: a slow write still ends).
#pragma once

#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::testing {

struct FaultPlan {
  std::uint64_t fail_nth_op = 0;          // 0: never
  int fail_errno = EIO;
  bool fail_all_after = false;            // fail every op from the Nth on
  std::uint32_t short_read_bytes = 0;     // 0: reads are not cut
  bool hold_write_completions = false;
  // update_buffer() calls that fill an entry succeed this many times, then
  // fail with ENOMEM (as a full RLIMIT_MEMLOCK does); -1: never fail.
  std::int64_t fill_updates_allowed = -1;
  // register_buffers() with more entries than this fails with ENOMEM (a
  // table the memlock limit cannot hold); 0: no limit.
  std::size_t max_registered_buffers = 0;
};

class FaultyBlockDevice final : public hal::BlockDevice {
 public:
  FaultyBlockDevice(std::unique_ptr<hal::BlockDevice> inner, FaultPlan plan)
      : BlockDevice(inner->path(), inner->geometry(), inner->direct(), inner->queue_depth()),
        inner_(std::move(inner)), plan_(plan), tags_(queue_depth()), offsets_(queue_depth()) {
    for (std::size_t i = tags_.size(); i > 0; --i) free_.push_back(static_cast<std::uint32_t>(i - 1));
  }

  const char* backend_name() const override { return "faulty"; }
  hal::BlockDevice& inner() { return *inner_; }
  std::uint64_t injected() const { return injected_; }
  // Write completions held back (hold_write_completions), oldest first.
  std::size_t held() const { return held_.size(); }
  std::uint64_t held_offset(std::size_t i) const { return held_offsets_[i]; }
  void release_held(std::size_t i) {
    pending_.push_back(held_[i]);
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
    held_offsets_.erase(held_offsets_.begin() + static_cast<std::ptrdiff_t>(i));
  }

 protected:
  Result<void> submit_impl(std::span<const hal::IoRequest> requests) override {
    std::vector<hal::IoRequest> forward;
    std::vector<std::uint32_t> taken;
    std::deque<hal::IoCompletion> failed;
    for (const hal::IoRequest& r : requests) {
      const bool data = r.op == hal::IoOp::kRead || r.op == hal::IoOp::kWrite;
      if (data) ++ops_;
      const bool fail_now = data && plan_.fail_nth_op != 0 &&
                            (ops_ == plan_.fail_nth_op || (plan_.fail_all_after && ops_ > plan_.fail_nth_op));
      if (fail_now) {
        failed.push_back(hal::IoCompletion{r.user_data, -plan_.fail_errno, r.op, r.length});
        continue;
      }
      const std::uint32_t tag = free_.back();
      free_.pop_back();
      taken.push_back(tag);
      tags_[tag] = r.user_data;
      offsets_[tag] = r.offset;
      hal::IoRequest f = r;
      f.user_data = tag;
      forward.push_back(f);
    }
    if (!forward.empty()) {
      if (auto ok = inner_->submit(forward); !ok) {
        free_.insert(free_.end(), taken.begin(), taken.end());
        return ok;
      }
    }
    injected_ += failed.size();
    pending_.insert(pending_.end(), failed.begin(), failed.end());
    return {};
  }

  Result<std::size_t> poll_impl(std::span<hal::IoCompletion> out, std::size_t min,
                                std::chrono::nanoseconds timeout) override {
    if (min > pending_.size() && !held_.empty() && inner_->in_flight() == 0) {
      pending_.insert(pending_.end(), held_.begin(), held_.end());
      held_.clear();
      held_offsets_.clear();
    }
    std::size_t n = 0;
    while (n < out.size() && !pending_.empty()) {
      out[n++] = pending_.front();
      pending_.pop_front();
    }
    const std::size_t want = min > n ? min - n : 0;
    auto got = inner_->poll_completions(out.subspan(n), want, want == 0 ? std::chrono::nanoseconds(0) : timeout);
    if (!got) return got;
    std::size_t kept = n;
    for (std::size_t i = n; i < n + *got; ++i) {
      hal::IoCompletion c = out[i];
      const auto tag = static_cast<std::uint32_t>(c.user_data);
      c.user_data = tags_[tag];
      free_.push_back(tag);
      if (c.op == hal::IoOp::kRead && plan_.short_read_bytes != 0 && c.result > plan_.short_read_bytes) {
        c.result = plan_.short_read_bytes;
        ++injected_;
      }
      if (c.op == hal::IoOp::kWrite && plan_.hold_write_completions) {
        held_.push_back(c);
        held_offsets_.push_back(offsets_[tag]);
        continue;
      }
      out[kept++] = c;
    }
    return kept;
  }

  Result<void> register_buffers_impl(std::span<const iovec> buffers) override {
    if (plan_.max_registered_buffers != 0 && buffers.size() > plan_.max_registered_buffers) {
      ++injected_;
      return fail(ENOMEM, "injected: buffer table refused");
    }
    return inner_->register_buffers(buffers);
  }
  Result<void> update_buffer_impl(std::uint32_t index, const iovec& buffer) override {
    if (buffer.iov_base != nullptr && plan_.fill_updates_allowed >= 0 && fill_updates_++ >= plan_.fill_updates_allowed) {
      ++injected_;
      return fail(ENOMEM, "injected: buffer registration refused");
    }
    return inner_->update_buffer(index, buffer);
  }

 private:
  std::unique_ptr<hal::BlockDevice> inner_;
  FaultPlan plan_;
  std::int64_t fill_updates_ = 0;
  std::vector<std::uint64_t> tags_;
  std::vector<std::uint64_t> offsets_;  // of each forwarded request, by tag
  std::deque<hal::IoCompletion> held_;
  std::deque<std::uint64_t> held_offsets_;
  std::vector<std::uint32_t> free_;
  std::deque<hal::IoCompletion> pending_;
  std::uint64_t ops_ = 0;
  std::uint64_t injected_ = 0;
};

}  // namespace cxlpool::testing
