// SPDX-License-Identifier: Apache-2.0
#include "weights_service.hpp"

#include <unistd.h>

#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/weights/region_layout.hpp"

namespace cxlpool::daemon {
namespace {

Requester daemon_requester() {
  Requester daemon;
  daemon.uid = ::geteuid();
  daemon.gid = ::getegid();
  daemon.admin = true;
  return daemon;
}

Result<uint32_t> pick_tier(const RegionPool& pool, uint32_t tier_id) {
  const auto& tiers = pool.tiers();
  if (tier_id == proto::kNoTier) {
    for (const auto& t : tiers) {
      if (t.kind == proto::TierKind::kDram) return t.id;
    }
    return fail(ENODEV, "no DRAM tier for the weights (name a tier)");
  }
  for (const auto& t : tiers) {
    if (t.id == tier_id) return t.id;
  }
  return fail(ENOENT, "no tier " + std::to_string(tier_id));
}

}  // namespace

WeightsService::WeightsService(RegionPool& pool)
    : pool_(pool),
      worker_(
          [](CopyTask& task) {
            task.copied = copy_resident_tensors(*task.opened, task.plan, task.region, task.cancel);
            // The files' descriptors go on this thread, not the loop's.
            task.opened.reset();
          },
          [](CopyTask& task) { task.copied = fail(ECANCELED, "the daemon is stopping"); }) {}

WeightsService::~WeightsService() {
  stop();
  (void)finish_loads();
  clear();
}

Result<void> WeightsService::start() { return worker_.start(); }

Error WeightsService::count_failure(const std::string& model, const Error& e) {
  ++counters_.load_errors;
  if (e.code == EBADMSG) ++counters_.rejected_files;
  logger("weights")->warn("weights: load of '{}' failed: {}", model, e.message);
  return e;
}

Result<WeightsAnswer> WeightsService::load(const proto::WeightsLoad& req, const Requester& who,
                                           WeightsWaiter waiter) {
  std::vector<std::string> paths;
  for (const auto& p : req.paths) paths.push_back(p.path);
  if (auto it = models_.find(req.model); it != models_.end()) {
    if (it->second.paths != paths) {
      return fail(EEXIST, "model '" + req.model + "' is loaded from other files");
    }
    return open(req.model, waiter);
  }
  const uint64_t started = monotonic_ns();
  auto failed = [&](const Error& e) { return tl::unexpected(count_failure(req.model, e)); };
  auto tier = pick_tier(pool_, req.tier_id);
  if (!tier) return failed(tier.error());
  auto opened = open_model_files(paths, who);
  if (!opened) return failed(opened.error());
  auto residency = weights::choose_residency(opened->files, req.max_resident_bytes);
  auto plan = weights::plan_region(opened->files, residency);
  if (!plan) return failed(plan.error());

  CreateSpec spec;
  spec.tier_id = *tier;
  spec.size = plan->region_bytes;
  spec.kind = proto::RegionKind::kNamed;
  spec.name = std::string(kWeightsRegionPrefix) + req.model;
  spec.mode = 0444;
  spec.system = true;
  auto region = pool_.create(spec, daemon_requester());
  if (!region) return failed(Error{region.error().code, "weights region: " + region.error().message});
  Region& r = **region;

  Model model;
  model.name = req.model;
  model.paths = std::move(paths);
  model.region_id = r.id;
  model.owner_uid = who.uid;
  model.loading = true;
  model.started_ns = started;
  model.waiters.push_back(waiter);
  std::span<std::byte> bytes(r.mapping.data(), plan->region_bytes);
  if (auto ok = weights::write_region_meta(bytes, opened->files, *plan); !ok) {
    drop(model);
    return failed(ok.error());
  }
  auto& reply = model.reply;
  reply.tier_id = r.tier_id;
  reply.files = static_cast<uint32_t>(opened->files.size());
  reply.tensor_count = plan->n_tensors;
  reply.total_bytes = plan->tensor_bytes;
  reply.resident_bytes = plan->resident_bytes;
  reply.region_bytes = plan->region_bytes;
  reply.region_name = spec.name;
  reply.loaded = 1;

  CopyTask task;
  task.model = req.model;
  task.opened = std::make_shared<OpenedModelFiles>(std::move(*opened));
  task.plan = std::move(*plan);
  task.region = bytes;
  task.cancel = &cancel_;
  models_.emplace(model.name, std::move(model));
  worker_.submit(std::move(task));
  return WeightsAnswer{};
}

Result<proto::WeightsLoadReply> WeightsService::open_loaded(Model& model) {
  ++model.opens;
  ++counters_.opens;
  proto::WeightsLoadReply reply = model.reply;
  reply.loaded = 0;
  return reply;
}

Result<WeightsAnswer> WeightsService::open(const std::string& model, WeightsWaiter waiter) {
  auto it = models_.find(model);
  if (it == models_.end()) return fail(ENOENT, "model '" + model + "' is not loaded");
  if (it->second.loading) {
    it->second.waiters.push_back(waiter);
    ++counters_.waited;
    return WeightsAnswer{};
  }
  auto reply = open_loaded(it->second);
  if (!reply) return tl::unexpected(reply.error());
  return WeightsAnswer{std::move(*reply)};
}

std::vector<WeightsFinished> WeightsService::finish_loads() {
  std::vector<WeightsFinished> out;
  for (auto& task : worker_.take_finished()) {
    auto it = models_.find(task.model);
    if (it == models_.end() || !it->second.loading) continue;
    Model& m = it->second;
    auto waiters = std::move(m.waiters);
    m.waiters.clear();
    if (!task.copied) {
      const Error e = count_failure(m.name, task.copied.error());
      drop(m);
      models_.erase(it);
      for (const auto& w : waiters) out.push_back({w, tl::unexpected(e)});
      continue;
    }
    m.loading = false;
    ++counters_.loads;
    counters_.bytes_loaded += m.reply.resident_bytes;
    counters_.load_ns += monotonic_ns() - m.started_ns;
    logger("weights")->info("weights: loaded '{}': {} files, {} tensors, {} of {} bytes resident in {} on tier {}",
                            m.name, m.reply.files, m.reply.tensor_count, m.reply.resident_bytes,
                            m.reply.total_bytes, m.reply.region_name, m.reply.tier_id);
    for (size_t i = 0; i < waiters.size(); ++i) {
      out.push_back({waiters[i], i == 0 ? Result<proto::WeightsLoadReply>(m.reply) : open_loaded(m)});
    }
  }
  return out;
}

void WeightsService::stop() {
  cancel_ = true;
  worker_.stop();
}

Result<proto::WeightsUnloadReply> WeightsService::unload(const std::string& model, const Requester& who) {
  auto it = models_.find(model);
  if (it == models_.end()) return fail(ENOENT, "model '" + model + "' is not loaded");
  if (!who.admin && who.uid != it->second.owner_uid) {
    return fail(EPERM, "only the owner (uid " + std::to_string(it->second.owner_uid) +
                           ") or an admin may unload '" + model + "'");
  }
  if (it->second.loading) return fail(EBUSY, "model '" + model + "' is still loading");
  proto::WeightsUnloadReply reply{.region_bytes = it->second.reply.region_bytes};
  drop(it->second);
  models_.erase(it);
  ++counters_.unloads;
  logger("weights")->info("weights: unloaded '{}'", model);
  return reply;
}

void WeightsService::drop(Model& model) {
  // Clients' handles keep the pages until they go; the daemon's goes now.
  (void)pool_.drop_system(model.region_id);
}

proto::WeightsListReply WeightsService::list() const {
  proto::WeightsListReply out;
  for (const auto& [name, m] : models_) {
    if (m.loading) continue;
    if (out.models.size() == proto::kMaxListEntries) break;
    proto::WeightsEntry e;
    e.tier_id = m.reply.tier_id;
    e.files = m.reply.files;
    e.owner_uid = m.owner_uid;
    e.opens = m.opens;
    e.tensor_count = m.reply.tensor_count;
    e.total_bytes = m.reply.total_bytes;
    e.resident_bytes = m.reply.resident_bytes;
    e.region_bytes = m.reply.region_bytes;
    e.model = name;
    e.region_name = m.reply.region_name;
    out.models.push_back(std::move(e));
  }
  return out;
}

void WeightsService::add_counters(std::vector<proto::Counter>& out) const {
  auto add = [&](const char* name, uint64_t v) { out.push_back({std::string("weights.") + name, v}); };
  uint64_t loaded = 0, loading = 0, resident = 0, region = 0;
  for (const auto& [name, m] : models_) {
    if (m.loading) {
      ++loading;
      continue;
    }
    ++loaded;
    resident += m.reply.resident_bytes;
    region += m.reply.region_bytes;
  }
  add("models", loaded);
  add("loading", loading);
  add("region_bytes", region);
  add("resident_bytes", resident);
  add("loads", counters_.loads);
  add("opens", counters_.opens);
  add("loads_waited", counters_.waited);
  add("unloads", counters_.unloads);
  add("load_errors", counters_.load_errors);
  add("rejected_files", counters_.rejected_files);
  add("bytes_loaded", counters_.bytes_loaded);
  add("load_ns_total", counters_.load_ns);
}

void WeightsService::clear() {
  for (auto& [name, m] : models_) drop(m);
  models_.clear();
}

}  // namespace cxlpool::daemon
