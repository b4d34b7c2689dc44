// SPDX-License-Identifier: Apache-2.0
#include "tiering_service.hpp"

#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_set>

#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::daemon {
namespace {

using tiering::PageKey;
using tiering::TierLocation;

constexpr uint64_t kPage = hal::kAccessPageBytes;
constexpr uint32_t kMinEpochMs = 10;
constexpr uint32_t kMaxEpochMs = 600000;
// A process page run longer than this is queried by its first pages only.
constexpr uint64_t kMaxQueriedRun = 64;
// Keys of [tiering] that only a restart applies.
constexpr const char* kStartOnlyKeys[] = {"fast_tier", "slow_tier", "sources", "damon_sysfs_root", "damon_kdamond"};

std::optional<bool> parse_bool(const std::string& text) {
  if (text == "true" || text == "1" || text == "on" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "off" || text == "no") return false;
  return std::nullopt;
}

std::optional<uint32_t> parse_epoch_ms(const std::string& text) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit)) return std::nullopt;
  const unsigned long v = std::stoul(text);
  if (v < kMinEpochMs || v > kMaxEpochMs) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::string page_text(const PageKey& key) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s %llu:0x%llx", hal::address_space_name(key.space),
                static_cast<unsigned long long>(key.owner), static_cast<unsigned long long>(key.address));
  return buf;
}

std::string traits_text(const hal::AccessSourceTraits& t) {
  std::string text = t.exact_counts ? "exact counts" : "sampled counts";
  if (t.word_masks) text += ", word masks";
  if (t.virtual_addresses) text += ", virtual addresses";
  return text;
}

// Knobs checked against each other (the watermarks) may need the other one
// set first: applies in passes until nothing more applies.
Result<void> apply_knobs(tiering::M5Config& m5, const std::vector<std::pair<std::string, std::string>>& knobs) {
  std::vector<std::pair<std::string, std::string>> pending = knobs;
  for (bool progress = true; progress && !pending.empty();) {
    progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      if (m5.set(it->first, it->second)) {
        progress = true;
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!pending.empty()) return m5.set(pending.front().first, pending.front().second);
  return {};
}

// Why a configured source is missing: the build's reason when the registry
// says it is not compiled in, the error of setting it up otherwise.
UnavailableSource unavailable_source(const std::string& name, const Error& error) {
  const auto report = hal::probe_backend(hal::BackendClass::kAccessSource, name);
  if (report && report->state == hal::BackendState::kNotCompiled) {
    return {name, proto::BackendState::kNotCompiled, report->detail};
  }
  return {name, proto::BackendState::kNotPresent, error.message};
}

}  // namespace

TieringService::TieringService(RegionPool& pool, hal::PagePlacement* placement, bool move_all)
    : pool_(pool), placement_(placement), move_all_(move_all), mover_(placement) {}

TieringService::~TieringService() { stop(); }

Result<std::unique_ptr<TieringService>> TieringService::create(const Config& config, RegionPool& pool,
                                                               hal::PagePlacement* placement, bool move_all) {
  auto log = logger("tiering");
  const TieringConfig& tc = config.tiering;
  std::unique_ptr<TieringService> s(new TieringService(pool, placement, move_all));
  tiering::M5Config m5;
  if (auto ok = apply_knobs(m5, tc.knobs); !ok) return tl::unexpected(ok.error());
  auto manager = tiering::M5Manager::create(m5);
  if (!manager) return tl::unexpected(manager.error());
  s->manager_.emplace(std::move(*manager));
  s->epoch_ms_ = tc.epoch_ms;
  s->enabled_setting_ = tc.enabled;

  auto pair = choose_tier_pair(pool.tiers(), tc.fast_tier, tc.slow_tier);
  if (pair) {
    s->pair_ = *pair;
    s->view_ = std::make_unique<PoolPlacement>(pool, *pair);
    const Tier& fast = pool.tiers()[pair->fast];
    const Tier& slow = pool.tiers()[pair->slow];
    s->move_blocker_ = daemon::move_blocker(fast, slow, placement != nullptr);
    log->info("fast tier '{}', slow tier '{}'{}{}", fast.name, slow.name,
              s->move_blocker_.empty() ? "" : "; pages cannot move: ", s->move_blocker_);
  } else {
    s->disabled_reason_ = pair.error().message;
    log->info("tiering disabled: {}", s->disabled_reason_);
  }
  s->enabled_ = s->pair_.has_value() && tc.enabled.value_or(true);
  if (s->pair_ && !s->enabled_) s->disabled_reason_ = "tiering.enabled = false";

  for (const auto& name : tc.sources) {
    if (name == "client") continue;  // the daemon adds its client reports
    hal::AccessSourceOptions options;
    if (name == "damon") {
      // The daemon reads a kdamond that runs already; it never sets one up.
      options.sysfs_root = tc.damon_sysfs_root;
      options.attach = true;
      options.kdamond_index = tc.damon_kdamond;
    }
    auto source = hal::open_access_source(name, options);
    if (source) {
      s->owned_sources_.push_back(std::move(*source));
    } else {
      s->unavailable_.push_back(unavailable_source(name, source.error()));
    }
  }
  for (const auto& u : s->unavailable_) log->warn("tiering source {} unavailable: {}", u.name, u.detail);
  for (auto& owned : s->owned_sources_) s->add_source(owned.get());

  s->timer_fd_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!s->timer_fd_) return fail_errno("timerfd_create");
  if (auto ok = s->arm_timer(); !ok) return tl::unexpected(ok.error());
  if (placement != nullptr) {
    if (auto ok = s->mover_.start(); !ok) return tl::unexpected(ok.error());
  }
  return s;
}

void TieringService::add_source(hal::AccessSource* source) {
  if (source == nullptr) return;
  sources_.push_back(source);
  source_errors_.emplace_back();
}

Result<void> TieringService::arm_timer() {
  itimerspec spec{};
  if (enabled()) {
    const uint64_t ns = uint64_t{epoch_ms_} * 1000000ull;
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000ull);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000ull);
    spec.it_interval = spec.it_value;
  }
  if (::timerfd_settime(timer_fd_.get(), 0, &spec, nullptr) != 0) return fail_errno("timerfd_settime");
  return {};
}

void TieringService::on_timer() {
  uint64_t expirations = 0;
  (void)!::read(timer_fd_.get(), &expirations, sizeof expirations);
  run_epoch(monotonic_ns());
}

void TieringService::run_epoch(uint64_t now_ns) {
  if (!enabled()) return;
  scratch_.clear();
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (auto ok = sources_[i]->collect(scratch_); !ok) {
      ++counters_.source_errors;
      if (source_errors_[i] != ok.error().message) {
        logger("tiering")->warn("access source {}: {}", sources_[i]->name(), ok.error().message);
      }
      source_errors_[i] = ok.error().message;
    } else {
      source_errors_[i].clear();
    }
  }
  view_->prune();
  refresh_process_pages(scratch_);
  manager_->observe(scratch_, *view_);
  uint64_t accesses = 0;
  for (const auto& a : scratch_) accesses += a.count * std::max<uint64_t>(a.pages, 1);
  last_epoch_accesses_ = accesses;
  tiering::EpochInput input;
  input.now_ns = now_ns;
  input.fast = view_->usage(TierLocation::kFast);
  input.slow = view_->usage(TierLocation::kSlow);
  const tiering::MigrationPlan plan = manager_->end_epoch(input, *view_);
  ++epochs_;
  if (!plan.promote.empty() || !plan.demote.empty()) apply(plan);
}

void TieringService::refresh_process_pages(const std::vector<hal::PageAccess>& accesses) {
  if (placement_ == nullptr) return;
  std::map<uint64_t, std::vector<uint64_t>> by_pid;
  for (const auto& a : accesses) {
    if (a.space != hal::AddressSpace::kProcess) continue;
    auto& pages = by_pid[a.owner];
    const uint64_t n = std::min<uint64_t>(std::max<uint64_t>(a.pages, 1), kMaxQueriedRun);
    for (uint64_t i = 0; i < n; ++i) pages.push_back(a.address + i * kPage);
  }
  for (auto& [pid, pages] : by_pid) {
    std::sort(pages.begin(), pages.end());
    pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    std::vector<void*> addresses;
    addresses.reserve(pages.size());
    for (uint64_t p : pages) addresses.push_back(reinterpret_cast<void*>(p));
    auto nodes = placement_->query_pages(static_cast<int>(pid), addresses);
    for (size_t i = 0; i < pages.size(); ++i) {
      view_->note_process_page({hal::AddressSpace::kProcess, pid, pages[i]}, nodes ? (*nodes)[i] : -1);
    }
  }
}

void TieringService::apply(const tiering::MigrationPlan& plan) {
  const uint64_t planned = plan.promote.size() + plan.demote.size();
  if (moving_) {
    // The previous plan is still moving; the manager nominates again.
    ++counters_.plans_skipped;
    manager_->confirm({}, {});
    return;
  }
  ++counters_.plans;
  counters_.pages_planned += planned;
  if (!move_blocker_.empty()) {
    counters_.pages_failed += planned;
    last_move_error_ = move_blocker_;
    manager_->confirm({}, {});
    return;
  }
  const Tier& fast = pool_.tiers()[pair_->fast];
  const Tier& slow = pool_.tiers()[pair_->slow];
  PageMoveTask task;
  task.plan = next_plan_++;
  std::map<std::pair<uint64_t, bool>, size_t> batch_of;  // (pid, promote) -> batch
  std::unordered_set<uint64_t> held;
  uint64_t unmovable = 0;
  auto add = [&](const PageKey& key, bool promote) {
    int pid = 0;
    void* address = nullptr;
    if (key.space == hal::AddressSpace::kPoolRegion) {
      const Region* region = pool_.find(key.owner);
      if (region == nullptr || region->hugetlb || key.address >= region->size) {
        ++unmovable;
        return;
      }
      if (held.count(key.owner) == 0) {
        auto hold = pool_.hold_for_page_moves(key.owner);
        if (!hold) {
          ++unmovable;
          last_move_error_ = hold.error().message;
          return;
        }
        held.insert(key.owner);
        task.held_regions.push_back(key.owner);
      }
      address = region->mapping.data() + key.address;
    } else if (key.space == hal::AddressSpace::kProcess) {
      pid = static_cast<int>(key.owner);
      address = reinterpret_cast<void*>(key.address);
    } else {
      ++unmovable;  // physical or trace addresses name no mapping to move
      return;
    }
    auto [it, inserted] = batch_of.emplace(std::make_pair(static_cast<uint64_t>(pid), promote), task.batches.size());
    if (inserted) {
      PageMoveBatch batch;
      batch.pid = pid;
      batch.node = promote ? fast.numa_node : slow.numa_node;
      batch.promote = promote;
      batch.move_all = move_all_;
      task.batches.push_back(std::move(batch));
    }
    PageMoveBatch& batch = task.batches[it->second];
    batch.keys.push_back(key);
    batch.addresses.push_back(address);
  };
  for (const auto& key : plan.promote) add(key, true);
  for (const auto& key : plan.demote) add(key, false);
  counters_.pages_failed += unmovable;
  if (task.batches.empty()) {
    manager_->confirm({}, {});
    for (uint64_t id : task.held_regions) pool_.end_page_moves(id);
    return;
  }
  moving_ = true;
  mover_.submit(std::move(task));
}

void TieringService::book(PageMoveTask& task) {
  std::vector<PageKey> promoted;
  std::vector<PageKey> demoted;
  uint64_t elapsed = 0;
  for (auto& batch : task.batches) {
    elapsed += batch.elapsed_ns;
    const auto to = batch.promote ? TierLocation::kFast : TierLocation::kSlow;
    for (size_t i = 0; i < batch.keys.size(); ++i) {
      const int st = i < batch.status.size() ? batch.status[i] : -EIO;
      if (st == batch.node) {
        if (view_) view_->record_move(batch.keys[i], to);
        (batch.promote ? promoted : demoted).push_back(batch.keys[i]);
      } else if (st == -ENOENT || st == -EFAULT) {
        ++counters_.pages_absent;
        if (batch.keys[i].space == hal::AddressSpace::kProcess && view_) view_->note_process_page(batch.keys[i], -1);
      } else {
        ++counters_.pages_failed;
        if (batch.error) {
          last_move_error_ = batch.error->message;
        } else {
          const int code = st < 0 ? -st : EBUSY;
          last_move_error_ = "move_pages of " + page_text(batch.keys[i]) + " to node " + std::to_string(batch.node) +
                             ": " + std::strerror(code);
        }
      }
    }
  }
  for (uint64_t id : task.held_regions) pool_.end_page_moves(id);
  counters_.last_move_ns = elapsed;
  counters_.pages_moved += promoted.size() + demoted.size();
  moves_.promoted_pages += promoted.size();
  moves_.demoted_pages += demoted.size();
  moves_.promoted_bytes += promoted.size() * kPage;
  moves_.demoted_bytes += demoted.size() * kPage;
  if (!promoted.empty() || !demoted.empty()) {
    logger("tiering")->debug("plan {}: {} page(s) promoted, {} demoted in {} us", task.plan, promoted.size(),
                             demoted.size(), elapsed / 1000);
  }
  if (manager_) manager_->confirm(promoted, demoted);
  moving_ = false;
}

void TieringService::on_moves_done() {
  for (auto& task : mover_.take_finished()) book(task);
}

void TieringService::drain_moves() {
  for (int waited_ms = 0; moving_ && waited_ms < 120000; waited_ms += 100) {
    pollfd p{mover_.event_fd(), POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) on_moves_done();
  }
}

void TieringService::stop() {
  mover_.stop();
  on_moves_done();
  moving_ = false;
}

bool TieringService::knob_is_service_owned(const std::string& key) const {
  return key == "enabled" || key == "epoch_ms";
}

Result<proto::TieringSetReply> TieringService::set(const std::string& key, const std::string& value) {
  proto::TieringSetReply reply;
  reply.key = key;
  if (key == "enabled") {
    auto on = parse_bool(value);
    if (!on) return fail(EINVAL, "enabled: expected true or false, got '" + value + "'");
    if (*on && !pair_) return fail(EINVAL, "enabled: tiering cannot run here: " + disabled_reason_);
    reply.old_value = enabled() ? "true" : "false";
    enabled_ = *on;
    enabled_setting_ = *on;
    disabled_reason_ = enabled_ ? "" : "disabled at run time (tiering set enabled=false)";
    if (auto ok = arm_timer(); !ok) return tl::unexpected(ok.error());
    reply.new_value = enabled() ? "true" : "false";
    return reply;
  }
  if (key == "epoch_ms") {
    auto ms = parse_epoch_ms(value);
    if (!ms) {
      return fail(EINVAL, "epoch_ms: expected an integer between " + std::to_string(kMinEpochMs) + " and " +
                              std::to_string(kMaxEpochMs) + ", got '" + value + "'");
    }
    reply.old_value = std::to_string(epoch_ms_);
    epoch_ms_ = *ms;
    if (auto ok = arm_timer(); !ok) return tl::unexpected(ok.error());
    reply.new_value = std::to_string(epoch_ms_);
    return reply;
  }
  for (const char* start_only : kStartOnlyKeys) {
    if (key == start_only) {
      return fail(EINVAL, key + ": takes effect only when cxlpoold starts (edit [tiering] in the config file and restart)");
    }
  }
  const auto keys = tiering::M5Config::keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    std::string known = "enabled, epoch_ms";
    for (const auto& k : keys) known += ", " + k;
    return fail(EINVAL, "unknown tiering knob '" + key + "' (known: " + known + ")");
  }
  auto old = manager_->set_knob(key, value);
  if (!old) {
    std::string message = old.error().message;
    if (message.find(key) == std::string::npos) message = key + ": " + message;
    return fail(EINVAL, message);
  }
  reply.old_value = *old;
  reply.new_value = manager_->config().get(key).value_or(value);
  logger("tiering")->info("knob {}: {} -> {}", key, reply.old_value, reply.new_value);
  return reply;
}

void TieringService::reload(const TieringConfig& next) {
  auto log = logger("tiering");
  enabled_setting_ = next.enabled;
  enabled_ = pair_.has_value() && next.enabled.value_or(true);
  if (pair_) disabled_reason_ = enabled_ ? "" : "tiering.enabled = false";
  epoch_ms_ = next.epoch_ms;
  tiering::M5Config target;
  if (auto ok = apply_knobs(target, next.knobs); !ok) log->error("reload: {}", ok.error().message);
  std::vector<std::string> pending;
  for (const auto& key : tiering::M5Config::keys()) {
    if (target.get(key).value_or("") != manager_->config().get(key).value_or("")) pending.push_back(key);
  }
  // A pair of knobs checked together (the watermarks) may need the other
  // one first: retry until nothing more applies.
  for (bool progress = true; progress && !pending.empty();) {
    progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      if (manager_->set_knob(*it, target.get(*it).value_or(""))) {
        progress = true;
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& key : pending) log->error("reload: tiering knob {} could not be applied", key);
  if (auto ok = arm_timer(); !ok) log->error("reload: {}", ok.error().message);
}

std::vector<proto::KnobEntry> TieringService::knobs() const {
  std::vector<proto::KnobEntry> out;
  out.push_back({"enabled", enabled() ? "true" : "false"});
  out.push_back({"epoch_ms", std::to_string(epoch_ms_)});
  for (const auto& key : tiering::M5Config::keys()) {
    out.push_back({key, manager_->config().get(key).value_or("")});
  }
  return out;
}

proto::TieringStatusReply TieringService::status() const {
  proto::TieringStatusReply r;
  const auto& stats = manager_->stats();
  r.enabled = enabled() ? 1 : 0;
  r.nominator = manager_->config().nominator == tiering::NominatorMode::kHwt ? proto::Nominator::kHwt
                                                                              : proto::Nominator::kHpt;
  r.epoch = epochs_;
  r.epoch_ns = uint64_t{epoch_ms_} * 1000000ull;
  r.promotion_period_ns = stats.promotion_period_ns;
  r.last_epoch_accesses = last_epoch_accesses_;
  for (const auto& tier : pool_.tiers()) {
    proto::TieringTierEntry e;
    e.tier_id = tier.id;
    e.name = tier.name;
    e.capacity_bytes = tier.capacity;
    e.used_bytes = tier.used;
    const tiering::TierCounters* tc = nullptr;
    if (pair_ && tier.id == pair_->fast) {
      e.role = proto::TierRole::kFast;
      tc = &stats.fast;
    } else if (pair_ && tier.id == pair_->slow) {
      e.role = proto::TierRole::kSlow;
      tc = &stats.slow;
    }
    if (tc != nullptr) {
      e.used_bytes = view_->usage(e.role == proto::TierRole::kFast ? TierLocation::kFast : TierLocation::kSlow)
                         .used_pages * kPage;
      e.hot_pages = tc->hot_pages;
      e.accesses = tc->accesses;
      e.bandwidth_bps = tc->bandwidth_bps;
      e.rate_limit_hits = tc->rate_limit_hits;
      e.promotions = moves_.promoted_pages;
      e.demotions = moves_.demoted_pages;
      e.bytes_promoted = moves_.promoted_bytes;
      e.bytes_demoted = moves_.demoted_bytes;
    }
    r.tiers.push_back(std::move(e));
  }
  for (size_t i = 0; i < sources_.size(); ++i) {
    proto::TieringSourceEntry e;
    e.name = std::string(sources_[i]->name());
    e.state = source_errors_[i].empty() ? proto::BackendState::kAvailable : proto::BackendState::kFailed;
    e.accesses = sources_[i]->accesses_total();
    e.dropped = sources_[i]->dropped_total();
    e.detail = traits_text(sources_[i]->traits());
    if (!source_errors_[i].empty()) e.detail += "; last error: " + source_errors_[i];
    r.sources.push_back(std::move(e));
  }
  for (const auto& u : unavailable_) r.sources.push_back({u.state, 0, 0, u.name, u.detail});
  // An operator must see when the engine cannot act, and why.
  r.pages_moved = counters_.pages_moved;
  r.pages_failed = counters_.pages_failed;
  if (!pair_ || !enabled()) {
    r.detail = "tiering disabled: " + disabled_reason_;
  } else if (!move_blocker_.empty()) {
    r.detail = "cannot move pages: " + move_blocker_;
  } else {
    r.detail = std::string("move_pages via numa (") + (move_all_ ? "MPOL_MF_MOVE_ALL" : "MPOL_MF_MOVE") + ")";
    if (!last_move_error_.empty()) r.detail += "; last failure: " + last_move_error_;
  }
  if (r.detail.size() > proto::kMaxStringLength) r.detail.resize(proto::kMaxStringLength);
  r.knobs = knobs();
  return r;
}

proto::TieringHotReply TieringService::hot(uint32_t top) const {
  proto::TieringHotReply r;
  r.epoch = epochs_;
  for (const auto& n : manager_->nominations()) {
    if (r.pages.size() >= top || r.pages.size() >= proto::kMaxListEntries) break;
    proto::HotPageEntry e;
    e.space = static_cast<proto::AccessSpace>(n.page.space);
    e.page_class = static_cast<proto::PageClass>(n.page_class);
    e.touched_words = static_cast<uint8_t>(std::popcount(n.words));
    if (e.touched_words == 0 && e.page_class != proto::PageClass::kUnknown) e.page_class = proto::PageClass::kUnknown;
    e.tier_id = view_ ? view_->tier_of(n.page) : proto::kNoTier;
    e.owner = (n.page.space == hal::AddressSpace::kPoolRegion || n.page.space == hal::AddressSpace::kProcess)
                  ? n.page.owner
                  : 0;
    e.address = n.page.address & ~(kPage - 1);
    e.count = n.count;
    r.pages.push_back(e);
  }
  return r;
}

void TieringService::append_counters(std::vector<proto::Counter>& out) const {
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  const auto& stats = manager_->stats();
  add("tiering.enabled", enabled() ? 1 : 0);
  add("tiering.epochs", epochs_);
  add("tiering.last_epoch_accesses", last_epoch_accesses_);
  add("tiering.promotion_period_ns", stats.promotion_period_ns);
  emit_counters("tiering.", counters_, add);
  if (pair_) {
    for (auto [id, tc] : {std::pair{pair_->fast, &stats.fast}, {pair_->slow, &stats.slow}}) {
      const std::string prefix = "tiering.tier." + pool_.tiers()[id].name + ".";
      emit_counters(prefix, moves_, add);
      add(prefix + "rate_limit_hits", tc->rate_limit_hits);
      add(prefix + "hot_pages", tc->hot_pages);
      add(prefix + "accesses", tc->accesses);
      add(prefix + "bandwidth_bps", tc->bandwidth_bps);
    }
  }
  for (const auto* source : sources_) {
    const std::string prefix = "tiering.source." + std::string(source->name()) + ".";
    add(prefix + "accesses", source->accesses_total());
    add(prefix + "dropped", source->dropped_total());
  }
}

}  // namespace cxlpool::daemon
