// SPDX-License-Identifier: Apache-2.0
// Drives one policy model by hand: a footprint of `pages` pages, a Tiers
// placement, and a clock that fires the policy's events in order.
#pragma once

#include <memory>
#include <vector>

#include "policy.hpp"
#include "prepared_trace.hpp"
#include "simulator.hpp"

namespace cxlpool::tiering::eval::testing {

class ModelFixture {
 public:
  ModelFixture(std::size_t pages, std::uint64_t fast_capacity) : tiers_(pages, fast_capacity) {
    std::vector<TraceRecord> records;
    for (std::size_t p = 0; p < pages; ++p) records.push_back(TraceRecord{0, p * kPageBytes, 64, false});
    trace_ = *prepare_trace(records);
    ctx_ = std::make_unique<SimContext>(SimContext{tiers_, trace_, config_, 0});
  }

  void start(Policy& policy) {
    policy_ = &policy;
    policy.start(*ctx_);
  }

  // Runs the policy's events up to and including `time_ns`.
  void advance(std::uint64_t time_ns) {
    while (policy_->next_event_ns() <= time_ns) {
      ctx_->now_ns = policy_->next_event_ns();
      policy_->on_event(*ctx_);
    }
    ctx_->now_ns = time_ns;
  }

  // Events up to `time_ns`, then the accesses at `time_ns`.
  void access(std::uint64_t time_ns, const std::vector<std::uint32_t>& pages) {
    advance(time_ns);
    std::vector<Access> batch;
    for (auto p : pages) {
      batch.push_back(Access{time_ns, 1, p, false});
      tiers_.touch(p, time_ns);
    }
    policy_->observe(batch, *ctx_);
  }

  Tiers& tiers() { return tiers_; }
  SimContext& ctx() { return *ctx_; }
  SimConfig& config() { return config_; }

 private:
  Tiers tiers_;
  PreparedTrace trace_;
  SimConfig config_;
  std::unique_ptr<SimContext> ctx_;
  Policy* policy_ = nullptr;
};

}  // namespace cxlpool::tiering::eval::testing
