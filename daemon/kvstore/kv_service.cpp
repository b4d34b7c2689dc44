// SPDX-License-Identifier: Apache-2.0
#include "kv_service.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "../backing.hpp"
#include "../logging.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "kv_view_dir.hpp"

namespace cxlpool::daemon {
namespace {

// Ring sizes for a KvOpen that leaves them to the daemon: 256 requests of
// up to 256 keys each in flight fit the 1 MiB slabs.
constexpr proto::KvRingGeometry kDefaultGeometry{};

// KvNamespacesReply's encoding (docs/protocol.md §6.30): the header and list
// count, then per entry 96 bytes of numbers and three length-prefixed strings.
constexpr size_t kNamespacesReplyOverhead = 64;
constexpr size_t kNamespaceEntryFixedBytes = 102;

Result<UniqueFd> dup_fd(int fd) {
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy) return fail_errno("dup");
  return copy;
}

// The CPUs this daemon may run on (its affinity mask, which a cpuset or
// systemd's CPUAffinity narrows), at least 1.
unsigned online_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  // EINVAL: more CPUs than a cpu_set_t holds; all of them online, then.
  return static_cast<unsigned>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
}

void drain_eventfd(int fd) {
  uint64_t value = 0;
  (void)!::read(fd, &value, sizeof value);
}

}  // namespace

Result<std::unique_ptr<KvService>> KvService::create(const KvStoreSection& config, RegionPool& pool) {
  std::unique_ptr<KvService> service(new KvService(config, pool));
  auto plan = plan_kv_arenas(config, pool.tiers());
  if (!plan) return tl::unexpected(plan.error());
  service->plan_ = *plan;
  if (!config.ssd_path.empty()) {
    auto ssd = open_kv_ssd(config);
    if (!ssd) return tl::unexpected(ssd.error());
    service->ssd_ = std::move(*ssd);
    const auto& stats = service->ssd_.store->stats();
    service->ssd_detail_ = "SSD " + config.ssd_path + " through " + service->ssd_.engine +
                           (service->ssd_.direct ? "" : " (buffered: no O_DIRECT here)") + ", " +
                           std::to_string(stats.recovered_entries) + " chunks recovered at start";
    if (stats.damaged_regions != 0 || stats.corrupt_dropped != 0) {
      service->ssd_detail_ += " (" + std::to_string(stats.damaged_regions) + " damaged regions, " +
                              std::to_string(stats.corrupt_dropped) + " corrupt entries dropped)";
    }
  }
  service->rates_ = kv_tier_rates(config, pool.tiers(), service->plan_, service->ssd_.store != nullptr);
  const auto& tiers = pool.tiers();
  logger("kvstore")->info("DRAM arena {} on tier {}, CXL arena {}{}, slots of {} (created at first use)",
                          format_size(service->plan_.dram_bytes), tiers[service->plan_.dram_tier].name,
                          service->plan_.cxl_tier ? format_size(service->plan_.cxl_bytes) : "none",
                          service->plan_.cxl_tier ? " on tier " + tiers[*service->plan_.cxl_tier].name : "",
                          format_size(config.slot_bytes));
  return service;
}

KvService::~KvService() { shutdown(); }

kvcache::KvStoreConfig KvService::store_config() const {
  kvcache::KvStoreConfig c;
  c.slot_bytes = config_.slot_bytes;
  c.eviction = config_.eviction == KvEviction::kS3Fifo ? kvcache::EvictionKind::kS3Fifo : kvcache::EvictionKind::kLru;
  c.admission.threshold = config_.admission_threshold;
  c.index_capacity = static_cast<size_t>(config_.index_capacity);
  c.client_quota_bytes = kv_client_quota(config_, plan_.dram_bytes);
  c.lease_timeout_ns = uint64_t{config_.lease_timeout_ms} * 1000000;
  c.max_leases_per_client = config_.max_leases_per_client;
  c.ssd_lend_min_bytes = config_.ssd_lend_min_bytes;
  c.commit_workers = kv_commit_workers(config_, online_cpus());
  c.copy_behind_min_bytes = config_.copy_behind_min_bytes;
  c.tier_rates = rates_;
  return c;
}

Result<void> KvService::start() {
  if (store_) return {};
  auto started = try_start();
  if (started) return {};
  // The protocol answers every request of a store that cannot run ENOTSUP;
  // the message keeps the cause.
  return fail(ENOTSUP, "the KV store could not start: " + started.error().message);
}

Result<void> KvService::try_start() {
  if (start_error_) return tl::unexpected(*start_error_);
  auto log = logger("kvstore");
  // An arena that could not be had (a full tier) is tried again on the next
  // request; one already created is kept.
  if (!dram_arena_) {
    auto arena = create_kv_arena(pool_, kKvDramArenaName, plan_.dram_tier, plan_.dram_bytes);
    if (!arena) {
      ++counters_.start_failures;
      log->warn("{}", arena.error().message);
      return tl::unexpected(arena.error());
    }
    dram_arena_ = *arena;
  }
  if (plan_.cxl_tier && !cxl_arena_) {
    auto arena = create_kv_arena(pool_, kKvCxlArenaName, *plan_.cxl_tier, plan_.cxl_bytes);
    if (!arena) {
      ++counters_.start_failures;
      log->warn("{}", arena.error().message);
      return tl::unexpected(arena.error());
    }
    cxl_arena_ = *arena;
  }
  if (!views_) {
    // Every chunk lives in its namespace's views; the arena regions only
    // hold the tier capacity (never touched, never handed out).
    const auto& tiers = pool_.tiers();
    const bool bindable = pool_.topology().nodes.size() > 1;
    std::array<KvViewTier, 2> view_tiers{};
    view_tiers[0] = {dram_arena_->bytes.size(), bindable ? tiers[dram_arena_->tier_id].numa_node : -1};
    if (cxl_arena_) view_tiers[1] = {cxl_arena_->bytes.size(), bindable ? tiers[cxl_arena_->tier_id].numa_node : -1};
    if (bindable && (view_tiers[0].numa_node >= 0 || view_tiers[1].numa_node >= 0)) {
      placement_ = make_page_placement(pool_.topology());
    }
    UniqueFd view_dir;
    if (!config_.view_dir.empty()) {
      auto dir = open_view_dir(config_.view_dir, ::geteuid());
      if (!dir) {
        ++counters_.start_failures;
        log->error("{}", dir.error().message);
        return tl::unexpected(dir.error());
      }
      view_dir = std::move(*dir);
      const std::string huge = view_dir_huge_pages(config_.view_dir);
      if (huge_pages_in_views(huge)) {
        log->info("namespace views in {} (tmpfs, huge={}: 2 MiB pages)", config_.view_dir, huge);
        if (config_.slot_bytes % (2 * kMiB) != 0) {
          log->warn("slots of {} share 2 MiB pages: a view may hold a whole page where its namespace has one "
                    "slot, so the views can take more memory than the arenas; use a slot_bytes multiple of 2M",
                    format_size(config_.slot_bytes));
        }
      } else {
        log->warn("namespace views in {} (tmpfs, huge={}): 4 KiB pages, as with memfds; mount it with "
                  "huge=within_size for 2 MiB pages", config_.view_dir, huge.empty() ? "unknown" : huge);
      }
    }
    views_ = std::make_unique<KvViews>(config_.slot_bytes, view_tiers, placement_.get(), std::move(view_dir),
                                       config_.view_dir);
  }
  kvcache::KvArenas arenas{dram_arena_->bytes, cxl_arena_ ? cxl_arena_->bytes : std::span<std::byte>{},
                           views_.get()};
  auto store = kvcache::KvStore::create(store_config(), arenas, std::move(ssd_.store));
  if (!store) {
    // The SSD store went with the failed attempt; nothing left to retry with.
    ++counters_.start_failures;
    start_error_ = store.error();
    const ScopedLogFields fields({.error = start_error_->code});
    log->error("{}", start_error_->message);
    return tl::unexpected(*start_error_);
  }
  store_ = std::move(*store);
  // Every namespace that exists now came from the SSD log: nobody owns it
  // until it is opened (open_namespace's rule for recovered namespaces).
  recovered_namespaces_ = store_->namespace_count();
  owners_.assign(recovered_namespaces_, std::nullopt);
  const uint32_t commit_workers = store_->commit_workers();
  log->info("started: DRAM arena {} ({} slots){}{}, {}", format_size(dram_arena_->bytes.size()),
            dram_arena_->bytes.size() / config_.slot_bytes,
            cxl_arena_ ? ", CXL arena " + format_size(cxl_arena_->bytes.size()) : std::string(),
            ssd_detail_.empty() ? std::string() : ", " + ssd_detail_,
            commit_workers == 0 ? std::string("commits copied on the event loop")
                                : std::to_string(commit_workers) + " commit copy worker(s)");
  return {};
}

Result<KvOpenResult> KvService::open(uint64_t session_id, uid_t uid, const proto::KvOpen& request) {
  if (auto ok = start(); !ok) return tl::unexpected(ok.error());
  if (connections_.contains(session_id)) return fail(EBUSY, "this connection has opened the KV store already");
  proto::KvRingGeometry g = kDefaultGeometry;
  if (request.sq_entries != 0) g.sq_entries = request.sq_entries;
  if (request.cq_entries != 0) g.cq_entries = request.cq_entries;
  if (request.sq_slab_bytes != 0) g.sq_slab_bytes = request.sq_slab_bytes;
  if (request.cq_slab_bytes != 0) g.cq_slab_bytes = request.cq_slab_bytes;
  if (!proto::kv_ring_geometry_valid(g)) return fail(EINVAL, "KV ring geometry outside the protocol's limits");

  auto c = std::make_unique<KvConnection>();
  c->id = session_id;
  c->geometry = g;
  auto memory = proto::KvRingMemory::create(g);
  if (!memory) return tl::unexpected(memory.error());
  c->memory = std::move(*memory);
  auto sq = proto::ring_eventfd();
  if (!sq) return tl::unexpected(sq.error());
  c->sq_efd = std::move(*sq);
  auto cq = proto::ring_eventfd();
  if (!cq) return tl::unexpected(cq.error());
  c->cq_efd = std::move(*cq);
  // The client may ask for less than the configured window, never more;
  // the store uses whole slots of it.
  uint64_t window = config_.put_window_bytes;
  if (request.put_window_bytes != 0) window = std::min(window, request.put_window_bytes);
  window = std::max(window / config_.slot_bytes, uint64_t{1}) * config_.slot_bytes;
  auto put_window = proto::ShmMapping::create("cxlpool-kv-put", window);
  if (!put_window) return tl::unexpected(put_window.error());
  c->put_window = std::make_shared<proto::ShmMapping>(std::move(*put_window));
  auto ring = proto::KvDaemonRing::attach(c->memory.bytes(), g, c->sq_efd.get(), c->cq_efd.get());
  if (!ring) return tl::unexpected(ring.error());
  c->ring = std::move(*ring);
  c->rights = &rights_[session_id].table;

  KvOpenResult result;
  // The daemon keeps its mappings and eventfds; the client gets its own
  // references to all four.
  auto sq_copy = dup_fd(c->sq_efd.get());
  if (!sq_copy) return tl::unexpected(sq_copy.error());
  auto cq_copy = dup_fd(c->cq_efd.get());
  if (!cq_copy) return tl::unexpected(cq_copy.error());
  if (auto ok = store_->add_client(session_id, c->put_window->bytes(), uid, c->put_window); !ok) {
    return tl::unexpected(ok.error());
  }
  result.fds[0] = c->memory.take_fd();
  result.fds[1] = std::move(*sq_copy);
  result.fds[2] = std::move(*cq_copy);
  result.fds[3] = c->put_window->take_fd();
  result.doorbell_fd = c->sq_efd.get();

  proto::KvOpenReply& r = result.reply;
  r.sq_entries = g.sq_entries;
  r.cq_entries = g.cq_entries;
  r.sq_slab_bytes = g.sq_slab_bytes;
  r.cq_slab_bytes = g.cq_slab_bytes;
  r.ring_bytes = c->memory.bytes().size();
  r.put_window_bytes = window;
  r.slot_bytes = config_.slot_bytes;
  r.quota_bytes = kv_client_quota(config_, plan_.dram_bytes);
  for (size_t i = 0; i < kvcache::kKvTierCount; ++i) {
    r.tier_bandwidth_bps[i] = static_cast<uint64_t>(rates_.bandwidth_bps[i]);
    r.tier_latency_ns[i] = rates_.bandwidth_bps[i] > 0 ? static_cast<uint64_t>(rates_.latency_s[i] * 1e9 + 0.5) : 0;
  }
  r.arenas.push_back({0, dram_arena_->tier_id, dram_arena_->bytes.size(), kKvDramArenaName});
  if (cxl_arena_) r.arenas.push_back({1, cxl_arena_->tier_id, cxl_arena_->bytes.size(), kKvCxlArenaName});

  connections_[session_id] = std::move(c);
  rebuild_active();
  ++counters_.connections_opened;
  logger("kvstore")->debug("client {} opened the KV store: rings {}/{}, put window {}", session_id, g.sq_entries,
                           g.cq_entries, format_size(window));
  return result;
}

void KvService::close(uint64_t session_id) {
  auto it = connections_.find(session_id);
  if (it == connections_.end()) {
    rights_.erase(session_id);
    return;
  }
  if (store_) store_->remove_client(session_id);
  std::erase_if(replicate_after_, [&](const CommitToReplicate& c) { return c.client == session_id; });
  connections_.erase(it);
  rights_.erase(session_id);
  rebuild_active();
  ++counters_.connections_closed;
}

void KvService::expire_leases() {
  if (!store_) return;
  if (const size_t revoked = store_->expire_leases(); revoked != 0) {
    logger("kvstore")->info("{} lease(s) older than {} ms revoked", revoked, config_.lease_timeout_ms);
  }
}

void KvService::report_ssd_errors(uint64_t now_ns) {
  if (!store_) return;
  const kvcache::SsdStoreStats* ss = store_->ssd_stats();
  if (ss == nullptr) return;
  if (auto line = ssd_errors_.update(*ss, now_ns)) logger("kvstore")->error("{}", *line);
  // A refusal ends registration of its kind (the table at start, a tier's
  // slots, the put windows): four at most, each new count one line.
  const uint64_t refused = store_->counters().ssd_registration_errors;
  if (refused != registration_errors_logged_) {
    registration_errors_logged_ = refused;
    logger("kvstore")->warn("SSD I/O on memory the device would not register ({} refusal(s) so far) pins its pages "
                            "per request: {}", refused, store_->ssd_registration_refusal());
  }
}

void KvService::rebuild_active() {
  active_.clear();
  for (auto& [id, c] : connections_) active_.push_back(c.get());
}

void KvService::on_doorbell(uint64_t session_id) {
  auto it = connections_.find(session_id);
  if (it == connections_.end()) return;
  drain_eventfd(it->second->sq_efd.get());
  ++counters_.doorbells;
}

int KvService::completion_fd() const { return store_ ? store_->completion_fd() : -1; }

void KvService::on_completion_fd() {
  if (const int fd = completion_fd(); fd >= 0) drain_eventfd(fd);
  ++counters_.io_wakeups;
}

int KvService::commit_fd() const { return store_ ? store_->commit_fd() : -1; }

void KvService::on_commit_fd() {
  if (const int fd = commit_fd(); fd >= 0) drain_eventfd(fd);
}

bool KvService::must_poll() const { return store_ && store_->io_in_flight() != 0 && store_->completion_fd() < 0; }

void KvService::mark_broken(KvConnection& c, const std::string& why) {
  if (c.reported_broken) return;
  c.reported_broken = true;
  c.backlog.clear();
  c.taken_ns.clear();
  ++counters_.broken_rings;
  // Its requests are no longer served; the control connection stays so the
  // client can still release its regions. Leases go when it disconnects.
  const ScopedLogFields fields({.client = c.id});
  logger("kvstore")->warn("client {}: KV ring quarantined: {}", c.id, why);
}

void KvService::drain_backlog(KvConnection& c) {
  while (!c.backlog.empty()) {
    const auto& done = c.backlog.front();
    auto ok = c.ring.complete(done.completion, done.locations);
    if (!ok) {
      if (ok.error().code != EAGAIN) mark_broken(c, ok.error().message);
      return;
    }
    published(c, done.completion);
    c.backlog.pop_front();
    c.dirty = true;
    ++c.completions;
    ++counters_.completions;
  }
}

void KvService::published(KvConnection& c, const proto::KvCompletion& completion) {
  const auto it = c.taken_ns.find(completion.request_id);
  if (it == c.taken_ns.end()) return;
  if (completion.op <= proto::kKvOpMax) op_durations_[completion.op].record(monotonic_ns() - it->second);
  c.taken_ns.erase(it);
}

void KvService::append_histograms(std::vector<HistogramSample>& out) const {
  for (uint8_t op = 1; op <= proto::kKvOpMax; ++op) {
    if (const char* name = proto::kv_op_name(op)) out.push_back({std::string("kv.op_duration.") + name, &op_durations_[op]});
  }
}

void KvService::deliver(kvcache::KvStoreCompletion&& done) {
  auto it = connections_.find(done.client);
  if (it == connections_.end()) return;
  KvConnection& c = *it->second;
  if (c.reported_broken) return;
  // The wire's status: the store answers with a KvStatus, the ring carries
  // its negative errno.
  done.completion.status = -kvcache::to_errno(done.outcome);
  if (c.backlog.empty()) {
    auto ok = c.ring.complete(done.completion, done.locations);
    if (ok) {
      published(c, done.completion);
      c.dirty = true;
      ++c.completions;
      ++counters_.completions;
      return;
    }
    if (ok.error().code != EAGAIN) {
      mark_broken(c, ok.error().message);
      return;
    }
  }
  ++counters_.backlogged;
  c.backlog.push_back(std::move(done));
}

size_t KvService::poll() {
  if (!store_ || (active_.empty() && !peer_work())) return 0;
  size_t work = 0;
  for (KvConnection* c : active_) {
    if (c->reported_broken) continue;
    if (c->ring.broken()) {
      mark_broken(*c, "the client broke the ring's rules");
      continue;
    }
    if (!c->backlog.empty()) drain_backlog(*c);
    batch_.clear();
    const size_t n = c->ring.take(batch_);
    const uint64_t taken_ns = n != 0 ? monotonic_ns() : 0;
    for (size_t i = 0; i < n; ++i) {
      const proto::KvRequest& r = batch_.requests[i];
      c->taken_ns[r.request_id] = taken_ns;
      // The ring marks a malformed request -EINVAL.
      kvcache::KvStatus refused = batch_.errors[i] != 0 ? kvcache::KvStatus::kInvalid : kvcache::KvStatus::kOk;
      if (refused != kvcache::KvStatus::kOk) {
        ++counters_.malformed_requests;
      } else if ((refused = c->rights->check(r.namespace_id, kvcache::kv_rights_needed(r.op))) !=
                 kvcache::KvStatus::kOk) {
        // A namespace this session did not open, or opened without the
        // right the op needs.
        ++counters_.denied_requests;
      }
      if (refused == kvcache::KvStatus::kOk && remote_ != nullptr &&
          r.op == static_cast<uint8_t>(proto::KvOp::kPutCommit) && remote_->replicates()) {
        commit_and_replicate(c->id, r, batch_.keys_of(i));
        continue;
      }
      if (refused == kvcache::KvStatus::kOk && remote_ != nullptr && r.op == static_cast<uint8_t>(proto::KvOp::kGet) &&
          park_for_remote(*c, r, batch_.keys_of(i))) {
        continue;
      }
      if (refused == kvcache::KvStatus::kOk && remote_ != nullptr &&
          r.op == static_cast<uint8_t>(proto::KvOp::kLookup) && park_lookup(*c, r, batch_.keys_of(i))) {
        continue;
      }
      store_->submit(c->id, r, batch_.keys_of(i), refused);
    }
    c->requests += n;
    counters_.requests += n;
    work += n;
  }
  if (!parked_.empty() || !replica_fetches_.empty()) finish_remote_gets();
  if (!parked_lookups_.empty()) finish_lookups();
  // No request came this round: the loop copies a chunk of a commit itself
  // rather than wait for a worker to be scheduled (one at a time, so that
  // a request arriving meanwhile waits at most one chunk's copy).
  if (work == 0 && store_->copies_in_flight()) store_->run_commit_copies(1);
  done_.clear();
  const size_t finished = store_->poll(done_);
  if (!peer_pins_.empty()) answer_peer_pins();
  for (auto& done : done_) {
    if (!replicate_after_.empty() && done.completion.op == static_cast<uint8_t>(proto::KvOp::kPutCommit)) {
      replicate_committed(done);
    }
    if (!pod_prefix_.empty()) add_pod_prefix(done);
    deliver(std::move(done));
  }
  pod_prefix_.clear();
  work += finished;
  for (KvConnection* c : active_) {
    if (!c->dirty) continue;
    c->dirty = false;
    // Publishes, and rings the client's doorbell only when it sleeps.
    if (c->ring.flush()) ++counters_.client_wakeups;
  }
  return work;
}

bool KvService::arm() {
  if (!store_) return true;
  if (must_poll()) return false;
  bool can_sleep = true;
  for (KvConnection* c : active_) {
    if (c->reported_broken) continue;
    // Every ring is armed even after one says no, so disarm() is uniform.
    if (!c->ring.arm_wakeup()) can_sleep = false;
  }
  return can_sleep;
}

void KvService::disarm() {
  for (KvConnection* c : active_) {
    if (!c->reported_broken) c->ring.disarm_wakeup();
  }
}

const std::optional<kvcache::KvNamespaceOwner>& KvService::owner_of(uint32_t id) {
  if (owners_.size() < id) owners_.resize(id);
  return owners_[id - 1];
}

Result<KvNamespaceOpenResult> KvService::open_namespace(uint64_t session_id, const Requester& who,
                                                        const proto::KvNamespaceOpen& request) {
  if (auto ok = start(); !ok) return tl::unexpected(ok.error());
  auto mode = kvcache::normalize_kv_mode(request.mode);
  if (!mode) return tl::unexpected(mode.error());
  kvcache::NamespaceSpec spec;
  spec.model_id = request.model_id;
  spec.layout = request.layout;
  spec.dtype = request.dtype;
  spec.tp_rank = request.tp_rank;
  spec.tp_size = request.tp_size;
  spec.chunk_tokens = request.chunk_tokens;
  auto id = store_->open_namespace(spec);
  if (!id) return tl::unexpected(id.error());
  auto log = logger("kvstore");

  // The session's entry exists once it opened the data path or a namespace.
  KvSessionRights& session = rights_[session_id];
  session.uid = who.uid;
  session.gid = who.gid;
  session.groups.assign(who.groups.begin(), who.groups.end());
  session.admin = who.admin;
  const kvcache::KvAccessor accessor = session.accessor();

  (void)owner_of(*id);
  auto& owner = owners_[*id - 1];
  if (!owner) {
    if (*id <= recovered_namespaces_ && !who.admin) {
      // Recovered from the SSD log: whoever wrote those chunks before the
      // restart is unknown, so a non-admin opener gets the namespace empty.
      // An admin could read them anyway and keeps them.
      auto dropped = store_->drop_namespace(*id);
      if (!dropped) return tl::unexpected(dropped.error());
      log->info("namespace {} recovered from the SSD log claimed by uid {}: its {} chunks of an unknown owner "
                "dropped",
                *id, who.uid, dropped->dropped + dropped->deferred);
    }
    owner = kvcache::KvNamespaceOwner{who.uid, who.gid, *mode};
  } else if (request.mode != 0 && *mode != owner->mode && (who.uid == owner->uid || who.admin)) {
    // The owner may widen the mode, never narrow it: a reader that mapped
    // the namespace's views keeps them, so a right once granted cannot be
    // taken back (drop the namespace's chunks, or use a new namespace).
    if ((*mode & owner->mode) != owner->mode) {
      char was[8], asked[8];
      std::snprintf(was, sizeof was, "%o", owner->mode);
      std::snprintf(asked, sizeof asked, "%o", *mode);
      return fail(EPERM, std::string("KV namespace ") + std::to_string(*id) + " has mode 0" + was +
                             ": mode 0" + asked + " would take rights away, which views already mapped cannot "
                             "undo (a mode can only be widened)");
    }
    owner->mode = *mode;
  }
  const uint8_t rights = kvcache::kv_rights(*owner, accessor);
  if (rights == 0) {
    char octal[8];
    std::snprintf(octal, sizeof octal, "%o", owner->mode);
    return fail(EACCES, "KV namespace " + std::to_string(*id) + " (" + spec.model_id + ") belongs to uid " +
                            std::to_string(owner->uid) + " with mode 0" + octal + ": uid " +
                            std::to_string(who.uid) + " may neither read nor write it");
  }
  // Created for writers too: the daemon writes their chunks through it.
  const bool had_views = views_->has(*id);
  if (auto ok = views_->ensure(*id); !ok) return tl::unexpected(ok.error());
  if (!had_views) register_views(*id);
  KvNamespaceOpenResult result;
  if (rights & kvcache::kKvRightRead) {
    auto fds = views_->reader_fds(*id);
    if (!fds) return tl::unexpected(fds.error());
    result.views = std::move(*fds);
  }
  session.table.grant(*id, rights);

  const auto fp = kvcache::fingerprint(spec);
  proto::KvNamespaceReply& reply = result.reply;
  reply.namespace_id = *id;
  reply.fingerprint_hi = fp.hi;
  reply.fingerprint_lo = fp.lo;
  reply.chunk_tokens = spec.chunk_tokens;
  reply.owner_uid = owner->uid;
  reply.owner_gid = owner->gid;
  reply.mode = owner->mode;
  // This open's rights: the views sent are those of a reader.
  reply.rights = rights;
  return result;
}

Result<proto::KvNamespacesReply> KvService::namespaces(const Requester& who) {
  proto::KvNamespacesReply reply;
  // A store that cannot start has no namespaces to show (its status says why).
  if (!start()) return reply;
  auto all = store_->namespaces();
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  size_t bytes = kNamespacesReplyOverhead;
  for (const auto& ns : all) {
    proto::KvNamespaceEntry e;
    e.namespace_id = ns.id;
    e.fingerprint_hi = ns.fp.hi;
    e.fingerprint_lo = ns.fp.lo;
    if (!ns.recovered_only) {
      e.tp_rank = ns.spec.tp_rank;
      e.tp_size = ns.spec.tp_size;
      e.chunk_tokens = ns.spec.chunk_tokens;
      e.model_id = ns.spec.model_id;
      e.layout = ns.spec.layout;
      e.dtype = ns.spec.dtype;
    }
    for (size_t t = 0; t < kvcache::kKvTierCount; ++t) {
      e.chunks[t] = ns.chunks[t];
      e.bytes[t] = ns.bytes[t];
    }
    // Unowned (recovered, not opened since): root's, private.
    const auto& owner = owner_of(ns.id);
    if (!who.admin) {
      const kvcache::KvAccessor accessor{who.uid, who.gid, who.groups, false};
      if (!owner || kvcache::kv_rights(*owner, accessor) == 0) continue;
    }
    e.owner_uid = owner ? owner->uid : 0;
    e.owner_gid = owner ? owner->gid : 0;
    e.mode = owner ? owner->mode : kvcache::kKvDefaultNamespaceMode;
    // One datagram: stop before the entry that would not fit.
    bytes += kNamespaceEntryFixedBytes + e.model_id.size() + e.layout.size() + e.dtype.size();
    if (bytes > proto::kMaxMessageSize || reply.namespaces.size() == proto::kMaxListEntries) break;
    reply.namespaces.push_back(std::move(e));
  }
  return reply;
}

Result<proto::KvNamespaceDropReply> KvService::drop_namespace(const Requester& who, uint64_t namespace_id) {
  if (auto ok = start(); !ok) return tl::unexpected(ok.error());
  if (namespace_id == 0 || namespace_id > UINT32_MAX || namespace_id > store_->namespace_count()) {
    return fail(ENOENT, "no KV namespace " + std::to_string(namespace_id));
  }
  const auto& owner = owner_of(static_cast<uint32_t>(namespace_id));
  if (!who.admin && (!owner || owner->uid != who.uid)) {
    return fail(EPERM, "only the owner of KV namespace " + std::to_string(namespace_id) + " (uid " +
                           std::to_string(owner ? owner->uid : 0) + ") or an admin may drop it");
  }
  auto dropped = store_->drop_namespace(static_cast<uint32_t>(namespace_id));
  if (!dropped) return tl::unexpected(dropped.error());
  logger("kvstore")->info("namespace {} dropped: {} chunks, {} leased (dropped at release)", namespace_id,
                          dropped->dropped, dropped->deferred);
  proto::KvNamespaceDropReply reply;
  reply.chunks_dropped = dropped->dropped;
  reply.chunks_deferred = dropped->deferred;
  return reply;
}

std::string KvService::tier_name(kvcache::KvTier tier) const {
  switch (tier) {
    case kvcache::KvTier::kDram: return pool_.tiers()[plan_.dram_tier].name;
    case kvcache::KvTier::kCxl: return plan_.cxl_tier ? pool_.tiers()[*plan_.cxl_tier].name : std::string();
    case kvcache::KvTier::kSsd: return config_.ssd_path;
  }
  return {};
}

proto::KvStatusReply KvService::status() {
  proto::KvStatusReply s;
  auto started = start();
  s.enabled = started ? 1 : 0;
  s.eviction = config_.eviction == KvEviction::kS3Fifo ? 1 : 0;
  s.ssd_sync = config_.ssd_sync == KvSsdSync::kPerCommit ? 1 : 0;
  s.admission_threshold = config_.admission_threshold;
  s.slot_bytes = config_.slot_bytes;
  s.detail = started ? ssd_detail_ : started.error().message;
  if (s.detail.size() > proto::kMaxStringLength) s.detail.resize(proto::kMaxStringLength);
  for (size_t t = 0; t < kvcache::kKvTierCount; ++t) {
    const auto tier = static_cast<kvcache::KvTier>(t);
    proto::KvTierStatus ts;
    ts.tier = static_cast<uint8_t>(t);
    ts.name = tier_name(tier);
    if (store_) {
      ts.present = store_->has_tier(tier) ? 1 : 0;
      const auto& c = store_->counters().tiers[t];
      ts.capacity_bytes = c.capacity_bytes;
      ts.used_bytes = c.used_bytes;
      ts.chunks = c.chunks;
      ts.hits = c.hits;
      ts.misses = c.misses;
      ts.evictions = c.evictions;
      ts.promotions = c.promotions;
      ts.demotions = c.demotions;
      ts.admissions_rejected = c.admissions_rejected;
      ts.bytes_written = c.bytes_written;
      ts.bytes_read = c.bytes_read;
      ts.errors = c.errors;
    } else {
      ts.present = tier == kvcache::KvTier::kDram || (tier == kvcache::KvTier::kCxl && plan_.cxl_tier) ||
                   (tier == kvcache::KvTier::kSsd && !config_.ssd_path.empty());
      ts.capacity_bytes = tier == kvcache::KvTier::kDram ? plan_.dram_bytes
                          : tier == kvcache::KvTier::kCxl ? plan_.cxl_bytes
                                                         : 0;
    }
    if (ts.name.size() > proto::kMaxStringLength) ts.name.resize(proto::kMaxStringLength);
    s.tiers.push_back(std::move(ts));
  }
  if (!store_) return s;
  const auto& c = store_->counters();
  // Distinct chunks: the SSD tier's count includes the copies of chunks that
  // are in an arena too, the namespaces count each chunk once, where it is.
  for (const auto& ns : store_->namespaces()) {
    for (const auto n : ns.chunks) s.chunks += n;
  }
  s.index_capacity = store_->index_capacity();
  s.lookups = c.lookups;
  s.lookup_keys = c.lookup_keys;
  s.lookup_hits = c.lookup_hits;
  s.gets = c.gets;
  s.puts = c.puts;
  s.put_aborts = c.put_aborts;
  s.prefetches = c.prefetches;
  s.deletes = c.deletes;
  s.leases = c.leases;
  s.leased_bytes = c.leased_bytes;
  s.reservations = c.reservations;
  s.quota_rejections = c.quota_rejections;
  s.ssd_durable_sequence = store_->ssd_durable_sequence();
  return s;
}

void KvService::shutdown() {
  while (!connections_.empty()) close(connections_.begin()->first);
  // Peers waiting for SSD reads get a miss; their pins go with the store.
  for (auto& [ticket, answer] : peer_pins_) (void)answer({});
  peer_pins_.clear();
  if (!store_) return;
  auto log = logger("kvstore");
  if (auto flushed = store_->flush(); !flushed) {
    log->error("flushing the SSD log at shutdown failed: {}", flushed.error().message);
  } else if (!config_.ssd_path.empty()) {
    log->info("SSD log sealed at sequence {}", store_->ssd_durable_sequence());
  }
  store_.reset();
}

void KvService::append_counters(std::vector<proto::Counter>& out) const {
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  add("kv.started", store_ ? 1 : 0);
  add("kv.connections", connections_.size());
  emit_counters("kv.", counters_, add);
  if (views_) emit_counters("kv.", views_->counters(), add);
  if (!store_) return;
  const auto& c = store_->counters();
  emit_counters("kv.", c, add);
  for (size_t st = 0; st < kvcache::kKvStatusCount; ++st) {
    add("kv.outcome." + std::string(kvcache::to_string(static_cast<kvcache::KvStatus>(st))), c.outcomes[st]);
  }
  add("kv.io_in_flight", store_->io_in_flight());
  add("kv.ssd_durable_sequence", store_->ssd_durable_sequence());
  if (const kvcache::SsdStoreStats* ss = store_->ssd_stats()) {
    add("kv.ssd_writes_in_flight", store_->ssd_writes_in_flight());
    add("kv.ssd_regions_sealed", ss->regions_sealed);
    add("kv.ssd_syncs", ss->syncs);
    add("kv.ssd_write_stalls", ss->write_stalls);
    add("kv.ssd_lent_puts", ss->lent_puts);
    add("kv.ssd_lent_changed", ss->lent_changed);
    add("kv.ssd_lent_reclaimed", ss->lent_reclaimed);
    add("kv.ssd_staged_reads", ss->staged_reads);
    add("kv.ssd_buffer_reads", ss->buffer_reads);
    add("kv.ssd_write_dropped", ss->write_dropped);
    add("kv.ssd_write_errors", ss->write_errors);
    add("kv.ssd_verify_ns", ss->verify_ns);
    add("kv.ssd_worker_verifies", ss->worker_verifies);
  }
  for (size_t t = 0; t < kvcache::kKvTierCount; ++t) {
    const auto tier = static_cast<kvcache::KvTier>(t);
    if (!store_->has_tier(tier)) continue;
    emit_counters("kv.tier." + std::string(kvcache::to_string(tier)) + ".", c.tiers[t], add);
  }
}

}  // namespace cxlpool::daemon
