// SPDX-License-Identifier: Apache-2.0
#include "weights_service.hpp"

#include <unistd.h>

#include <cstdio>

#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/weights/region_layout.hpp"

namespace cxlpool::daemon {
namespace {

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

std::string octal(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

}  // namespace

WeightsService::WeightsService(RegionPool& pool, weights::ParseLimits limits)
    : pool_(pool),
      limits_(limits),
      worker_([](Task& task) { run(task); },
              [](Task& task) { task.done = fail(ECANCELED, "the daemon is stopping"); }) {}

WeightsService::~WeightsService() {
  stop();
  (void)finish_loads();
  clear();
}

Result<void> WeightsService::start() { return worker_.start(); }

// Worker thread: everything whose cost a client controls.
void WeightsService::run(Task& task) {
  const uint64_t started = monotonic_ns();
  if (!task.copy) {
    auto opened = read_model_files(std::move(*task.files), *task.limits, task.cancel);
    task.files.reset();
    if (!opened) {
      task.done = tl::unexpected(opened.error());
    } else {
      auto residency = weights::choose_residency(opened->files, task.max_resident_bytes);
      auto plan = weights::plan_region(opened->files, residency);
      if (!plan) {
        task.done = tl::unexpected(plan.error());
      } else {
        task.plan = std::move(*plan);
        task.opened = std::make_shared<OpenedModelFiles>(std::move(*opened));
        task.done = {};
      }
    }
  } else {
    // The meta holds every verbatim header (up to kMaxLoadHeaderBytes): it
    // is written here, not on the loop.
    task.done = weights::write_region_meta(task.region, task.opened->files, task.plan);
    if (task.done) task.done = copy_resident_tensors(*task.opened, task.plan, task.region, task.cancel);
    // The files' descriptors go on this thread, not the loop's.
    task.opened.reset();
  }
  task.elapsed_ns = monotonic_ns() - started;
}

Error WeightsService::count_failure(const std::string& model, const Error& e) {
  ++counters_.load_errors;
  if (e.code == EBADMSG) ++counters_.rejected_files;
  logger("weights")->warn("load of '{}' failed: {}", model, e.message);
  return e;
}

Result<WeightsAnswer> WeightsService::load(const proto::WeightsLoad& req, std::vector<UniqueFd> fds,
                                           const Requester& who, WeightsWaiter waiter) {
  std::vector<std::string> paths;
  for (const auto& p : req.paths) paths.push_back(p.path);
  auto files = check_client_files(std::move(paths), std::move(fds));
  if (!files) return tl::unexpected(count_failure(req.model, files.error()));

  if (auto it = models_.find(req.model); it != models_.end()) {
    Model& m = it->second;
    // Same identities, same order: the same model. Strings prove nothing.
    if (m.ids != files->ids) return fail(EEXIST, "model '" + req.model + "' is loaded from other files");
    if (m.stage != Stage::kLoaded) {
      m.waiters.push_back({waiter, who, true});
      ++counters_.waited;
      return WeightsAnswer{};
    }
    auto reply = open_loaded(m, who, waiter.session_id, true);
    if (!reply) return tl::unexpected(reply.error());
    return WeightsAnswer{std::move(*reply)};
  }
  size_t under_way = 0;
  for (const auto& [name, m] : models_) under_way += m.stage != Stage::kLoaded ? 1 : 0;
  if (under_way >= kMaxLoadsUnderWay) {
    return fail(EBUSY, std::to_string(under_way) + " model loads are under way; retry when one ends");
  }
  auto tier = pick_tier(pool_, req.tier_id);
  if (!tier) return tl::unexpected(count_failure(req.model, tier.error()));

  Model model;
  model.name = req.model;
  model.generation = next_generation_++;
  model.paths = files->paths;
  model.ids = files->ids;
  model.mode = files->read_mode;
  model.tier_id = *tier;
  model.loader = who;
  model.started_ns = monotonic_ns();
  model.waiters.push_back({waiter, who, true});

  Task task;
  task.model = req.model;
  task.generation = model.generation;
  task.files = std::make_unique<ClientFiles>(std::move(*files));
  task.max_resident_bytes = req.max_resident_bytes;
  task.limits = &limits_;
  task.cancel = &cancel_;
  models_.emplace(model.name, std::move(model));
  worker_.submit(std::move(task));
  return WeightsAnswer{};
}

bool WeightsService::may_open(const Model& model, const Requester& who, uint64_t session_id) const {
  if (model.proved_sessions.contains(session_id)) return true;
  const Region* region = pool_.find(model.region_id);
  return region != nullptr && mode_allows(*region, who, false);
}

Result<proto::WeightsLoadReply> WeightsService::open_loaded(Model& model, const Requester& who, uint64_t session_id,
                                                            bool proved) {
  if (proved) model.proved_sessions.insert(session_id);
  if (!may_open(model, who, session_id)) {
    ++counters_.access_denied;
    return fail(EACCES, "model '" + model.name + "': its region's mode " + octal(model.mode) +
                            " (the files' read bits) denies uid " + std::to_string(who.uid) +
                            "; loading it from its files proves access");
  }
  ++model.opens;
  ++counters_.opens;
  proto::WeightsLoadReply reply = model.reply;
  reply.loaded = 0;
  return reply;
}

Result<WeightsAnswer> WeightsService::open(const std::string& model, const Requester& who, WeightsWaiter waiter) {
  auto it = models_.find(model);
  if (it == models_.end()) return fail(ENOENT, "model '" + model + "' is not loaded");
  if (it->second.stage != Stage::kLoaded) {
    it->second.waiters.push_back({waiter, who, false});
    ++counters_.waited;
    return WeightsAnswer{};
  }
  auto reply = open_loaded(it->second, who, waiter.session_id, false);
  if (!reply) return tl::unexpected(reply.error());
  return WeightsAnswer{std::move(*reply)};
}

bool WeightsService::proved_access(uint64_t session_id, const std::string& region_name) const {
  if (region_name.rfind(kWeightsRegionPrefix, 0) != 0) return false;
  auto it = models_.find(region_name.substr(kWeightsRegionPrefix.size()));
  return it != models_.end() && it->second.stage == Stage::kLoaded &&
         it->second.proved_sessions.contains(session_id);
}

void WeightsService::forget_session(uint64_t session_id) {
  for (auto& [name, m] : models_) m.proved_sessions.erase(session_id);
}

void WeightsService::fail_model(std::map<std::string, Model>::iterator it, const Error& e,
                                std::vector<WeightsFinished>& out) {
  Model& m = it->second;
  const Error counted = count_failure(m.name, e);
  if (m.region_id != 0) drop(m);
  for (const auto& w : m.waiters) out.push_back({w.to, tl::unexpected(counted)});
  models_.erase(it);
}

void WeightsService::finish_parse(Task& task, Model& m, std::vector<WeightsFinished>& out) {
  counters_.parse_ns += task.elapsed_ns;
  CreateSpec spec;
  spec.tier_id = m.tier_id;
  spec.size = task.plan.region_bytes;
  spec.kind = proto::RegionKind::kNamed;
  spec.name = std::string(kWeightsRegionPrefix) + m.name;
  spec.mode = m.mode;
  spec.system = true;
  spec.charge_owner = true;  // the loader's quota, not the daemon's
  auto region = pool_.create(spec, m.loader);
  auto it = models_.find(m.name);
  if (!region) {
    fail_model(it, Error{region.error().code, "weights region: " + region.error().message}, out);
    return;
  }
  Region& r = **region;
  r.filling = true;  // until finish_copy: no NamedOpen of half-copied tensors
  m.region_id = r.id;
  std::span<std::byte> bytes(r.mapping.data(), task.plan.region_bytes);
  auto& reply = m.reply;
  reply.tier_id = r.tier_id;
  reply.files = static_cast<uint32_t>(task.opened->files.size());
  reply.tensor_count = task.plan.n_tensors;
  reply.total_bytes = task.plan.tensor_bytes;
  reply.resident_bytes = task.plan.resident_bytes;
  reply.region_bytes = task.plan.region_bytes;
  reply.region_name = spec.name;
  reply.loaded = 1;
  m.stage = Stage::kCopying;

  Task copy;
  copy.copy = true;
  copy.model = m.name;
  copy.generation = m.generation;
  copy.opened = std::move(task.opened);
  copy.plan = std::move(task.plan);
  copy.region = bytes;
  copy.cancel = &cancel_;
  worker_.submit(std::move(copy));
}

void WeightsService::finish_copy(Task& task, Model& m, std::vector<WeightsFinished>& out) {
  (void)task;
  if (Region* r = pool_.find(m.region_id); r != nullptr) r->filling = false;
  m.stage = Stage::kLoaded;
  ++counters_.loads;
  counters_.bytes_loaded += m.reply.resident_bytes;
  counters_.load_ns += monotonic_ns() - m.started_ns;
  logger("weights")->info(
      "loaded '{}' for uid {}: {} files, {} tensors, {} of {} bytes resident in {} (mode {}) on tier {}",
      m.name, m.loader.uid, m.reply.files, m.reply.tensor_count, m.reply.resident_bytes, m.reply.total_bytes,
      m.reply.region_name, octal(m.mode), m.reply.tier_id);
  auto waiters = std::move(m.waiters);
  m.waiters.clear();
  for (size_t i = 0; i < waiters.size(); ++i) {
    const Waiter& w = waiters[i];
    if (i == 0) {
      m.proved_sessions.insert(w.to.session_id);
      out.push_back({w.to, Result<proto::WeightsLoadReply>(m.reply)});
    } else {
      out.push_back({w.to, open_loaded(m, w.who, w.to.session_id, w.proved)});
    }
  }
}

std::vector<WeightsFinished> WeightsService::finish_loads() {
  std::vector<WeightsFinished> out;
  for (auto& task : worker_.take_finished()) {
    auto it = models_.find(task.model);
    if (it == models_.end() || it->second.generation != task.generation) continue;
    if (it->second.stage == Stage::kLoaded) continue;
    if (!task.done) {
      fail_model(it, task.done.error(), out);
      continue;
    }
    if (!task.copy) {
      finish_parse(task, it->second, out);
    } else {
      finish_copy(task, it->second, out);
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
  if (!who.admin && who.uid != it->second.loader.uid) {
    return fail(EPERM, "only the owner (uid " + std::to_string(it->second.loader.uid) +
                           ") or an admin may unload '" + model + "'");
  }
  if (it->second.stage != Stage::kLoaded) return fail(EBUSY, "model '" + model + "' is still loading");
  proto::WeightsUnloadReply reply{.region_bytes = it->second.reply.region_bytes};
  drop(it->second);
  models_.erase(it);
  ++counters_.unloads;
  logger("weights")->info("unloaded '{}'", model);
  return reply;
}

void WeightsService::drop(Model& model) {
  // Clients' handles keep the pages (and the loader's quota charge) until
  // they go; the daemon's goes now.
  (void)pool_.drop_system(model.region_id);
  model.region_id = 0;
}

proto::WeightsListReply WeightsService::list() const {
  proto::WeightsListReply out;
  for (const auto& [name, m] : models_) {
    if (m.stage != Stage::kLoaded) continue;
    if (out.models.size() == proto::kMaxListEntries) break;
    proto::WeightsEntry e;
    e.tier_id = m.reply.tier_id;
    e.files = m.reply.files;
    e.owner_uid = m.loader.uid;
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
    if (m.stage != Stage::kLoaded) {
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
  counters_.visit(add);
}

void WeightsService::clear() {
  for (auto& [name, m] : models_) {
    if (m.region_id != 0) drop(m);
  }
  models_.clear();
}

}  // namespace cxlpool::daemon
