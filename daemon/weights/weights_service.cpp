// SPDX-License-Identifier: Apache-2.0
#include "weights_service.hpp"

#include <unistd.h>

#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/weights/region_layout.hpp"
#include "weights_loader.hpp"

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

WeightsService::~WeightsService() { clear(); }

Result<proto::WeightsLoadReply> WeightsService::load(const proto::WeightsLoad& req, const Requester& who) {
  std::vector<std::string> paths;
  for (const auto& p : req.paths) paths.push_back(p.path);
  if (auto it = models_.find(req.model); it != models_.end()) {
    if (it->second.paths != paths) {
      return fail(EEXIST, "model '" + req.model + "' is loaded from other files");
    }
    return open(req.model);
  }
  const uint64_t started = monotonic_ns();
  auto failed = [&](const Error& e) -> tl::unexpected<Error> {
    ++counters_.load_errors;
    if (e.code == EBADMSG) ++counters_.rejected_files;
    logger("weights")->warn("weights: load of '{}' failed: {}", req.model, e.message);
    return tl::unexpected(e);
  };
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
  std::span<std::byte> bytes(r.mapping.data(), plan->region_bytes);
  auto ok = weights::write_region_meta(bytes, opened->files, *plan);
  if (ok) ok = copy_resident_tensors(*opened, *plan, bytes);
  if (!ok) {
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
  ++counters_.loads;
  counters_.bytes_loaded += plan->resident_bytes;
  counters_.load_ns += monotonic_ns() - started;
  logger("weights")->info("weights: loaded '{}': {} files, {} tensors, {} of {} bytes resident in {} on tier {}",
                          model.name, reply.files, reply.tensor_count, reply.resident_bytes, reply.total_bytes,
                          reply.region_name, reply.tier_id);
  proto::WeightsLoadReply out = reply;
  models_.emplace(model.name, std::move(model));
  return out;
}

Result<proto::WeightsLoadReply> WeightsService::open(const std::string& model) {
  auto it = models_.find(model);
  if (it == models_.end()) return fail(ENOENT, "model '" + model + "' is not loaded");
  ++it->second.opens;
  ++counters_.opens;
  proto::WeightsLoadReply reply = it->second.reply;
  reply.loaded = 0;
  return reply;
}

Result<proto::WeightsUnloadReply> WeightsService::unload(const std::string& model, const Requester& who) {
  auto it = models_.find(model);
  if (it == models_.end()) return fail(ENOENT, "model '" + model + "' is not loaded");
  if (!who.admin && who.uid != it->second.owner_uid) {
    return fail(EPERM, "only the owner (uid " + std::to_string(it->second.owner_uid) +
                           ") or an admin may unload '" + model + "'");
  }
  proto::WeightsUnloadReply reply{.region_bytes = it->second.reply.region_bytes};
  drop(it->second);
  models_.erase(it);
  ++counters_.unloads;
  logger("weights")->info("weights: unloaded '{}'", model);
  return reply;
}

void WeightsService::drop(Model& model) {
  Region* r = pool_.find(model.region_id);
  if (r == nullptr) return;
  // The pool refuses to unlink system regions for anyone: the service that
  // owns this one lifts the flag for its own unlink. Clients' handles keep
  // the pages until they go; the daemon's handle goes now.
  r->system = false;
  (void)pool_.unlink_named(r->name, daemon_requester());
  pool_.release_handle(model.region_id);
}

proto::WeightsListReply WeightsService::list() const {
  proto::WeightsListReply out;
  for (const auto& [name, m] : models_) {
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
  uint64_t resident = 0, region = 0;
  for (const auto& [name, m] : models_) {
    resident += m.reply.resident_bytes;
    region += m.reply.region_bytes;
  }
  add("models", models_.size());
  add("region_bytes", region);
  add("resident_bytes", resident);
  add("loads", counters_.loads);
  add("opens", counters_.opens);
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
