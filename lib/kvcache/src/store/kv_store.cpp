// SPDX-License-Identifier: Apache-2.0
// KvStore: configuration checks, creation, the public entry points, counters
// and the shutdown flush.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <string>

#include "kv_store_impl.hpp"
#include "outcome_error.hpp"

namespace cxlpool::kvcache {

namespace {

constexpr std::uint64_t kAlign = 4096;

bool aligned(std::span<std::byte> area) {
  return reinterpret_cast<std::uintptr_t>(area.data()) % kAlign == 0;
}

Result<void> validate(const KvStoreConfig& c, const KvArenas& arenas) {
  if (c.commit_workers > kMaxCommitWorkers) {
    return fail(EINVAL, "kv store: commit_workers must be at most " + std::to_string(kMaxCommitWorkers));
  }
  if (c.slot_bytes == 0 || c.slot_bytes % kAlign != 0 || c.slot_bytes > (1ull << 32) - kAlign) {
    return fail(EINVAL, "kv store: slot_bytes must be a positive multiple of 4096 below 4 GiB");
  }
  if (arenas.dram.size() < c.slot_bytes || !aligned(arenas.dram)) {
    return fail(EINVAL, "kv store: the DRAM arena must be 4096-aligned and hold at least one slot");
  }
  if (!arenas.cxl.empty() && (arenas.cxl.size() < c.slot_bytes || !aligned(arenas.cxl))) {
    return fail(EINVAL, "kv store: the CXL arena must be 4096-aligned and hold at least one slot (or be empty)");
  }
  if ((arenas.dram.size() + arenas.cxl.size()) / c.slot_bytes > UINT32_MAX) {
    return fail(EINVAL, "kv store: more than 2^32 slots");
  }
  if (c.admission.depth == 0 || c.admission.depth > 8 || c.admission.width == 0) {
    return fail(EINVAL, "kv store: admission depth must be 1..8 and width positive");
  }
  if (c.eviction == EvictionKind::kS3Fifo && !(c.s3fifo.small_ratio > 0 && c.s3fifo.small_ratio < 1)) {
    return fail(EINVAL, "kv store: s3fifo small_ratio must be in (0, 1)");
  }
  if (c.max_leases_per_client == 0) return fail(EINVAL, "kv store: max_leases_per_client is 0");
  if (c.max_namespaces == 0) return fail(EINVAL, "kv store: max_namespaces is 0");
  for (std::size_t t = 0; t < kKvTierCount; ++t) {
    const double bw = c.tier_rates.bandwidth_bps[t], lat = c.tier_rates.latency_s[t];
    if (!std::isfinite(bw) || bw < 0 || !std::isfinite(lat) || lat < 0) {
      return fail(EINVAL, "kv store: tier rates must be finite and non-negative");
    }
  }
  if (!std::isfinite(c.tier_rates.link_bps) || c.tier_rates.link_bps < 0) {
    return fail(EINVAL, "kv store: link rate must be finite and non-negative");
  }
  return {};
}

}  // namespace

KvStore::Impl::Impl(const KvStoreConfig& c, std::size_t index_capacity)
    : config(c), index(index_capacity), admission(c.admission) {
  pinned = [this](const ChunkKey& k) { return index.is_pinned(k); };
}

KvStore::KvStore(const KvStoreConfig& config) : config_(config) {}

KvStore::~KvStore() = default;

Result<std::unique_ptr<KvStore>> KvStore::create(const KvStoreConfig& config, KvArenas arenas,
                                                 std::unique_ptr<SsdStore> ssd) {
  if (auto ok = validate(config, arenas); !ok) return tl::unexpected(ok.error());
  const std::uint64_t arena_slots = arenas.dram.size() / config.slot_bytes + arenas.cxl.size() / config.slot_bytes;
  // Every arena chunk must fit the index whatever the SSD holds; the SSD log
  // is then limited to the rest, so a commit never finds the index full.
  if (config.index_capacity < arena_slots || (ssd && config.index_capacity <= arena_slots)) {
    return fail(EINVAL, "kv store: index_capacity " + std::to_string(config.index_capacity) +
                            " must exceed the arenas' " + std::to_string(arena_slots) + " slots");
  }
  std::unique_ptr<KvStore> store(new KvStore(config));
  store->impl_ = std::make_unique<Impl>(config, config.index_capacity);
  Impl& s = *store->impl_;
  s.arenas[0] = ArenaTier{arenas.dram, SlotPool(arenas.dram.size(), config.slot_bytes),
                          make_eviction_policy(config.eviction, config.s3fifo)};
  if (!arenas.cxl.empty()) {
    s.arenas[1] = ArenaTier{arenas.cxl, SlotPool(arenas.cxl.size(), config.slot_bytes),
                            make_eviction_policy(config.eviction, config.s3fifo)};
  }
  s.memory = arenas.memory;
  if (config.commit_workers != 0) {
    auto copier = CommitCopier::create(config.commit_workers);
    if (!copier) return tl::unexpected(copier.error());
    s.copier = std::move(*copier);
  }
  if (ssd) {
    const std::size_t room = config.index_capacity - arena_slots;
    if (ssd->config().index_capacity > room) ssd->set_index_capacity(room);
    ssd->set_eviction_listener([impl = &s](const ChunkKey& k) { impl->ssd_evicted.push_back(k); });
    ssd->set_lend_listener([impl = &s](std::uint64_t token) { impl->return_lent_slot(token); });
    s.ssd = std::move(ssd);
    s.ssd_touched = true;  // the recovery scan's reads were counted on the eventfd
    s.register_with_ssd();
    s.index_recovered_ssd();
  }
  return store;
}

Result<std::uint32_t> KvStore::open_namespace(const NamespaceSpec& spec) {
  if (spec.model_id.empty() || spec.layout.empty() || spec.dtype.empty()) {
    return fail(EINVAL, "kv namespace: model_id, layout and dtype are required");
  }
  if (spec.tp_size == 0 || spec.tp_rank >= spec.tp_size) return fail(EINVAL, "kv namespace: tp_rank >= tp_size");
  if (spec.chunk_tokens == 0) return fail(EINVAL, "kv namespace: chunk_tokens is 0");
  const NamespaceFingerprint fp = fingerprint(spec);
  auto id = impl_->ns_for_fingerprint(fp, true);
  if (!id) {
    return fail(ENOSPC, "kv namespace: " + std::to_string(config_.max_namespaces) + " namespaces already open");
  }
  NamespaceState& ns = impl_->namespaces[*id - 1];
  if (ns.recovered_only || ns.spec.model_id.empty()) {
    ns.spec = spec;
    ns.recovered_only = false;
  }
  return *id;
}

void KvStore::submit(KvClientId client, const proto::KvRequest& request, std::span<const proto::KvKey> keys,
                     KvStatus refused) {
  Impl& s = *impl_;
  if (refused != KvStatus::kOk || !s.clients.contains(client)) {
    s.complete(client, request, refused != KvStatus::kOk ? refused : KvStatus::kNotFound);
    return;
  }
  // A put_commit with declared checksums carries them as records after its
  // keys; unused lanes of the last record must be zero.
  const bool declares = proto::kv_declares_checksums(request);
  const std::size_t n_keys = declares ? request.param1 : keys.size();
  if (declares && (request.param1 > keys.size() ||
                   keys.size() - n_keys != proto::kv_checksum_records(static_cast<std::uint32_t>(n_keys)))) {
    return s.complete(client, request, KvStatus::kInvalid);
  }
  s.scratch_keys.resize(n_keys);
  for (std::size_t i = 0; i < n_keys; ++i) s.scratch_keys[i] = to_chunk_key(keys[i]);
  s.scratch_checksums.clear();
  if (declares) {
    const auto records = keys.subspan(n_keys);
    for (std::uint32_t i = 0; i < records.size() * 4; ++i) {
      const std::uint32_t crc = proto::kv_checksum_at(records, i);
      if (i < n_keys) {
        s.scratch_checksums.push_back(crc);
      } else if (crc != 0) {
        return s.complete(client, request, KvStatus::kInvalid);
      }
    }
  }
  switch (static_cast<proto::KvOp>(request.op)) {
    case proto::KvOp::kLookup: s.do_lookup(client, request); break;
    case proto::KvOp::kPutBegin: s.do_put_begin(client, request); break;
    case proto::KvOp::kPutCommit: s.do_put_commit(client, request); break;
    case proto::KvOp::kGet: s.do_get(client, request); break;
    case proto::KvOp::kRelease: s.do_release(client, request); break;
    case proto::KvOp::kPrefetch: s.do_prefetch(client, request); break;
    case proto::KvOp::kDelete: s.do_delete(client, request); break;
    default: s.complete(client, request, KvStatus::kInvalid); break;
  }
  if (!s.ssd_evicted.empty()) s.reap_ssd_evictions();
}

std::size_t KvStore::poll(std::vector<KvStoreCompletion>& out) {
  Impl& s = *impl_;
  if (s.copier && s.copier->has_done()) s.reap_commits();
  if (s.ssd && (s.ssd_touched || s.ssd->gets_in_flight() != 0 || s.ssd->writes_in_flight() != 0 ||
                !s.unsubmitted.empty())) {
    // Reset the wake-up before reaping: a read that completes after the
    // reap signals the eventfd again.
    if (const int fd = completion_fd(); fd >= 0) {
      std::uint64_t count = 0;
      (void)!::read(fd, &count, sizeof count);
    }
    s.ssd_touched = s.ssd->gets_in_flight() != 0 || s.ssd->writes_in_flight() != 0;
    s.reap_loads();
    s.submit_loads();
    if (!s.ssd_evicted.empty()) s.reap_ssd_evictions();
  }
  if (s.commits_waiting != 0) s.retry_waiting_commits();
  const std::size_t n = s.ready.size();
  if (n == 0) return 0;
  if (out.empty()) {
    out.swap(s.ready);  // hands over the vector whole: no per-completion moves
  } else {
    for (KvStoreCompletion& c : s.ready) out.push_back(std::move(c));
    s.ready.clear();
  }
  return n;
}

std::size_t KvStore::io_in_flight() const {
  const SsdStore* ssd = impl_->ssd.get();
  return ssd ? ssd->gets_in_flight() + ssd->writes_in_flight() + impl_->unsubmitted.size() : 0;
}

int KvStore::completion_fd() const { return impl_->ssd ? impl_->ssd->device().completion_fd() : -1; }

std::size_t KvStore::commits_in_flight() const { return impl_->commits.size(); }

bool KvStore::copies_in_flight() const { return !impl_->commits.empty() || !impl_->fills.empty(); }

void KvStore::hold_copies_behind(bool held) {
  if (impl_->copier) impl_->copier->hold_background(held);
}

int KvStore::commit_fd() const { return impl_->copier ? impl_->copier->event_fd() : -1; }

std::uint32_t KvStore::commit_workers() const {
  return impl_->copier ? static_cast<std::uint32_t>(impl_->copier->threads()) : 0;
}

std::size_t KvStore::run_commit_copies(std::size_t max) {
  Impl& s = *impl_;
  // Commits' copies, and copies behind answered commits that a get now
  // waits for (run_one leaves the other background copies to the workers).
  if (s.commits.empty() && s.fills.empty()) return 0;
  std::size_t ran = 0;
  while (ran < max && s.copier->run_one()) ++ran;
  return ran;
}

// Writes every arena chunk the SSD lacks (CXL first, so that DRAM's hotter
// chunks are the last to be evicted from the log if it is small), then seals
// the open region, so that a restart finds what the arenas held.
Result<void> KvStore::flush() {
  Impl& s = *impl_;
  // Commits in flight, and copies behind answered ones: their chunks are
  // written below once they are in.
  if (!s.commits.empty() || !s.fills.empty()) s.settle_copies();
  if (s.commits_waiting != 0) {
    // Slots lent to the log come back once its writes are done; whatever
    // still finds no slot then is refused, so that nothing stays pending.
    if (s.ssd) (void)s.ssd->wait_for_writes();  // a failure is reported by the flush below
    s.retry_waiting_commits(false);
  }
  if (!s.ssd) return {};
  s.ssd_touched = true;
  Result<void> first_error;
  for (KvTier t : {KvTier::kCxl, KvTier::kDram}) {
    if (!s.arena(t).present()) continue;
    std::vector<ChunkEntry> resident;
    s.index.for_each([&](const ChunkEntry& e) {
      if (e.info.tier == t && !(e.info.flags & kChunkDoomed)) resident.push_back(e);
    });
    for (const ChunkEntry& e : resident) {
      if (s.has_ssd_copy(e.key)) continue;
      const KvOutcome written = s.write_to_ssd(e, {s.slot_ptr(t, e.info.offset, e.info.ns_id), e.info.length});
      if (!written.ok() && first_error) {
        first_error = outcome_error(written, "kv store: writing an arena chunk to the SSD log");
      }
    }
  }
  auto closed = s.ssd->close();
  s.reap_loads();
  if (!s.ssd_evicted.empty()) s.reap_ssd_evictions();
  if (!closed) return closed;
  return first_error;
}

const KvStoreCounters& KvStore::counters() const {
  Impl& s = *impl_;
  KvStoreCounters& c = s.counters;
  const IndexStats& st = s.index.stats();
  c.leases = s.leases.live();
  c.leased_bytes = s.leased_bytes;
  c.reservations = s.reservations_live;
  c.commits_in_flight = s.commits.size();
  c.copies_behind_in_flight = s.fills.size();
  for (KvTier t : {KvTier::kDram, KvTier::kCxl}) {
    KvTierCounters& tc = c.tiers[tier_index(t)];
    const ArenaTier& a = s.arena(t);
    tc.capacity_bytes = a.slots.capacity() * config_.slot_bytes;
    tc.used_bytes = a.slots.used_count() * config_.slot_bytes;
    tc.chunks = st.entries_per_tier[tier_index(t)];
  }
  KvTierCounters& ssd = c.tiers[tier_index(KvTier::kSsd)];
  if (s.ssd) {
    const SsdStoreStats& ss = s.ssd->stats();
    const std::uint64_t region = s.ssd->config().region_bytes;
    ssd.capacity_bytes = std::uint64_t{s.ssd->region_count()} * region;
    ssd.used_bytes = std::uint64_t{s.ssd->regions_in_use()} * region;
    ssd.chunks = s.ssd->size();
    ssd.evictions = ss.entries_evicted;
    ssd.bytes_written = ss.bytes_written;
    ssd.bytes_read = ss.read_bytes;
    ssd.errors = ss.read_errors + ss.write_errors + ss.corrupt_dropped;
  }
  return c;
}

bool KvStore::has_tier(KvTier tier) const {
  switch (tier) {
    case KvTier::kDram: return true;
    case KvTier::kCxl: return impl_->arena(KvTier::kCxl).present();
    case KvTier::kSsd: return impl_->ssd != nullptr;
  }
  return false;
}

std::uint64_t KvStore::ssd_durable_sequence() const { return impl_->ssd ? impl_->ssd->durable_sequence() : 0; }

const SsdStoreStats* KvStore::ssd_stats() const { return impl_->ssd ? &impl_->ssd->stats() : nullptr; }

const std::string& KvStore::ssd_registration_refusal() const { return impl_->ssd_registration_refusal; }

std::size_t KvStore::ssd_writes_in_flight() const { return impl_->ssd ? impl_->ssd->writes_in_flight() : 0; }

std::size_t KvStore::index_capacity() const { return impl_->index.max_entries(); }

}  // namespace cxlpool::kvcache
