// SPDX-License-Identifier: Apache-2.0
// The tiering engine inside cxlpoold. Every tiering.epoch_ms a timer in the
// daemon's event loop ends an epoch: the access sources are drained, the M5
// manager is fed through a placement view of the pool, and the migration
// plan it returns is applied with move_pages -- on the daemon's own mapping
// of a pool region, or in the process that owns a virtual address -- on a
// worker thread. Only what the kernel confirms counts as moved.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../region_pool.hpp"
#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/hal/access_source.hpp"
#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/proto/messages.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "page_mover.hpp"
#include "pool_placement.hpp"

namespace cxlpool::daemon {

// Per tier of the pair: moves the kernel confirmed, counted on both tiers
// (a promotion leaves the slow tier and lands on the fast one). Member, and
// its metric's name after "tiering.tier.<tier>.".
// clang-format off
#define CXLPOOL_TIERING_MOVE_COUNTERS(X) \
  X(promoted_pages, "promotions")        \
  X(demoted_pages,  "demotions")         \
  X(promoted_bytes, "bytes_promoted")    \
  X(demoted_bytes,  "bytes_demoted")
// clang-format on

struct TieringMoveCounters {
  CXLPOOL_TIERING_MOVE_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_TIERING_MOVE_COUNTERS)
};

// Member, and its metric's name after "tiering.".
// clang-format off
#define CXLPOOL_TIERING_COUNTERS(X)                                                                 \
  X(plans,         "plans")         /* plans with pages to move */                                  \
  X(plans_skipped, "plans_skipped") /* a plan came while the previous one still moved */            \
  X(pages_planned, "pages_planned")                                                                 \
  X(pages_moved,   "pages_moved")                                                                   \
  X(pages_absent,  "pages_absent")  /* gone or never faulted in when the move ran */                \
  X(pages_failed,  "pages_failed")  /* the kernel refused, or no move is possible (move_blocker) */ \
  X(source_errors, "source_errors")
// clang-format on

struct TieringCounters {
  CXLPOOL_TIERING_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_TIERING_COUNTERS)
  uint64_t last_move_ns = 0;  // worker time of the last plan (not exported)
};

// A configured access source that could not be set up, for the status.
struct UnavailableSource {
  std::string name;
  proto::BackendState state = proto::BackendState::kNotPresent;
  std::string detail;
};

class TieringService {
 public:
  // Picks the tier pair, creates the manager with the config's knobs and
  // the configured damon/perf sources. Never fails because tiering cannot
  // work here: it then stays disabled and says why in status().
  static Result<std::unique_ptr<TieringService>> create(const Config& config, RegionPool& pool,
                                                        hal::PagePlacement* placement, bool move_all);
  ~TieringService();

  // A source owned elsewhere (the daemon's client reports); must outlive this.
  void add_source(hal::AccessSource* source);

  // The epoch timer and the worker's completion eventfd, for epoll.
  int timer_fd() const { return timer_fd_.get(); }
  int mover_fd() const { return mover_.event_fd(); }
  void on_timer();
  void on_moves_done();

  // One epoch at `now_ns` (the timer calls it; tests call it directly).
  void run_epoch(uint64_t now_ns);
  // Waits for the move in progress (tests, shutdown) and books it.
  void drain_moves();
  // Stops the worker; moves in progress finish, queued ones are dropped.
  void stop();

  // SIGHUP: the file's knobs, epoch_ms and enabled replace the running ones.
  void reload(const TieringConfig& next);
  // TieringSet: a knob by its config name; EINVAL naming it when unknown or bad.
  Result<proto::TieringSetReply> set(const std::string& key, const std::string& value);

  proto::TieringStatusReply status() const;
  proto::TieringHotReply hot(uint32_t top) const;
  void append_counters(std::vector<proto::Counter>& out) const;

  bool enabled() const { return enabled_ && pair_.has_value(); }
  const std::string& disabled_reason() const { return disabled_reason_; }
  const std::string& move_blocker() const { return move_blocker_; }
  const TieringCounters& counters() const { return counters_; }
  const PoolPlacement* placement_view() const { return view_.get(); }
  const tiering::M5Manager& manager() const { return *manager_; }

 private:
  TieringService(RegionPool& pool, hal::PagePlacement* placement, bool move_all);
  Result<void> arm_timer();
  void refresh_process_pages(const std::vector<hal::PageAccess>& accesses);
  void apply(const tiering::MigrationPlan& plan);
  void book(PageMoveTask& task);
  bool knob_is_service_owned(const std::string& key) const;
  std::vector<proto::KnobEntry> knobs() const;

  RegionPool& pool_;
  hal::PagePlacement* placement_;
  bool move_all_ = false;
  bool enabled_ = false;
  std::optional<bool> enabled_setting_;  // as configured; unset = on when a pair exists
  uint32_t epoch_ms_ = 1000;
  std::optional<TierPair> pair_;
  std::string disabled_reason_;
  std::string move_blocker_;  // why no page can move; empty when moves are possible
  std::string last_move_error_;
  std::optional<tiering::M5Manager> manager_;
  std::unique_ptr<PoolPlacement> view_;
  std::vector<hal::AccessSource*> sources_;
  std::vector<std::unique_ptr<hal::AccessSource>> owned_sources_;
  std::vector<std::string> source_errors_;  // per sources_ entry: the last collect error
  std::vector<UnavailableSource> unavailable_;
  std::vector<hal::PageAccess> scratch_;
  UniqueFd timer_fd_;
  PageMover mover_;
  bool moving_ = false;
  uint64_t next_plan_ = 1;
  uint64_t epochs_ = 0;
  uint64_t last_epoch_accesses_ = 0;
  TieringMoveCounters moves_;
  TieringCounters counters_;
};

}  // namespace cxlpool::daemon
