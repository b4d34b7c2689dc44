// SPDX-License-Identifier: Apache-2.0
// What the lazy pager did: counters, and how long it took to answer faults
// (from reading the fault message to the ioctl that resolved it), as a
// histogram of power-of-two nanosecond buckets.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

#include "cxlpool/common/counter_list.hpp"

namespace cxlpool::ckpt {

#define CXLPOOL_LAZY_PAGER_COUNTERS(X)                                               \
  X(faults, "faults")                   /* missing faults answered */                \
  X(pages_copied, "pages_copied")       /* pages placed with UFFDIO_COPY */          \
  X(bytes_copied, "bytes_copied")                                                    \
  X(zero_pages, "zero_pages")           /* pages placed with UFFDIO_ZEROPAGE */      \
  X(prefilled_pages, "prefilled_pages") /* of pages_copied: copied before faults */  \
  X(already_present, "already_present") /* EEXIST: another copy won the race */      \
  X(retries, "retries")                 /* EAGAIN: the clone's mm was changing */    \
  X(remove_events, "remove_events")                                                  \
  X(unmap_events, "unmap_events")                                                    \
  X(remap_events, "remap_events")                                                    \
  X(fork_events, "fork_events")                                                      \
  X(clients_added, "clients_added")                                                  \
  X(clients_dropped, "clients_dropped")                                              \
  X(errors, "errors") /* an ioctl failed for another reason: client dropped */

// Bucket i counts latencies in [2^i, 2^(i+1)) ns; bucket 0 also counts 0.
class LatencyHistogram {
 public:
  static constexpr int kBuckets = 40;

  void add(uint64_t ns) {
    int b = ns == 0 ? 0 : 63 - std::countl_zero(ns);
    ++buckets_[b < kBuckets ? b : kBuckets - 1];
    ++count_;
    sum_ns_ += ns;
  }
  uint64_t count() const { return count_; }
  uint64_t sum_ns() const { return sum_ns_; }
  uint64_t bucket(int i) const { return buckets_[i]; }

  // An upper bound of the q-quantile (0 < q <= 1): the end of the bucket
  // that holds it. 0 when empty.
  uint64_t quantile_upper_ns(double q) const {
    if (count_ == 0) return 0;
    auto rank = static_cast<uint64_t>(q * static_cast<double>(count_));
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += buckets_[i];
      if (seen >= rank) return (uint64_t{2} << i) - 1;
    }
    return UINT64_MAX;
  }

 private:
  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0, sum_ns_ = 0;
};

struct LazyPagerCounters {
  CXLPOOL_LAZY_PAGER_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_LAZY_PAGER_COUNTERS)
  LatencyHistogram fault_latency;
};

}  // namespace cxlpool::ckpt
