// SPDX-License-Identifier: Apache-2.0
// Which hosts form this daemon's pod, behind an interface: the embedded
// single-host pod (the daemon alone) or etcd (docs/pods.md). The etcd one
// works on threads of its own and never blocks the event loop: local work
// goes on while etcd is unreachable, and the member table is reconciled
// with a full listing when it is back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../config.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "pod_member.hpp"

namespace cxlpool::daemon {

// Member, and its metric's name after "pod.".
// clang-format off
#define CXLPOOL_POD_COUNTERS(X)                                                                   \
  X(joins,            "joins")            /* members that appeared */                             \
  X(departures,       "departures")       /* members whose record went (lease expired, deleted) */ \
  X(etcd_errors,      "etcd_errors")      /* failed etcd requests and lost watches */             \
  X(registrations,    "registrations")    /* leases granted with this daemon's record */          \
  X(keepalives,       "keepalives")                                                               \
  X(resyncs,          "resyncs")          /* full listings after a watch ended */                 \
  X(records_refused,  "records_refused")  /* peers' records that failed validation */
// clang-format on

struct PodCounters {
  CXLPOOL_POD_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_POD_COUNTERS)
};

struct PodSnapshot {
  bool etcd = false;
  bool connected = true;  // etcd answers and this daemon's record is published
  uint64_t lease_id = 0;
  std::string last_error;
  std::vector<PodMember> members;  // by host
  PodCounters counters;
};

class PodMembership {
 public:
  virtual ~PodMembership() = default;
  virtual PodSnapshot snapshot() const = 0;
  // This daemon's record changed (tiers, devices): published when it differs.
  virtual void update_self(const PodMember& self) = 0;
  // Leaves the pod (a clean stop: peers see the departure at once).
  virtual void stop() = 0;
};

// The single-host pod: this daemon is its only member.
class EmbeddedPodMembership final : public PodMembership {
 public:
  explicit EmbeddedPodMembership(PodMember self) : self_(std::move(self)) {}
  PodSnapshot snapshot() const override;
  void update_self(const PodMember& self) override { self_ = self; }
  void stop() override {}

 private:
  PodMember self_;
};

// The membership `config` asks for; an etcd one starts registering at once
// and keeps trying while etcd is unreachable.
std::unique_ptr<PodMembership> open_pod_membership(const PodSection& config, PodMember self);

}  // namespace cxlpool::daemon
