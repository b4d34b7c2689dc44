// SPDX-License-Identifier: Apache-2.0
// fio's flow=: jobs sharing a flow_id keep their I/O counts in the ratio of
// their weights. Each I/O a job would issue while its share of the flow's
// count is above its share of the flow's weight is held back (for
// flow_sleep, then asked again). Shared by the jobs of one run.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace cxlpool::io {

class FlowGroups {
 public:
  struct Flow {
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> total_weight{0};
  };

  // Adds a job of `weight` to flow `id`; the Flow lives as long as this.
  Flow& join(std::int32_t id, std::uint32_t weight);

 private:
  std::mutex mu_;
  std::map<std::int32_t, std::unique_ptr<Flow>> flows_;
};

// One job's side of a flow.
class FlowMember {
 public:
  FlowMember() = default;
  FlowMember(FlowGroups::Flow* flow, std::uint32_t weight) : flow_(flow), weight_(weight) {}

  // True when the job may issue one more I/O now (and counts it); false
  // while the job is ahead of its share.
  bool try_issue();

 private:
  FlowGroups::Flow* flow_ = nullptr;
  std::uint32_t weight_ = 0;
  std::uint64_t mine_ = 0;
};

}  // namespace cxlpool::io
