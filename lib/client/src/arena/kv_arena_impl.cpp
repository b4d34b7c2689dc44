// SPDX-License-Identifier: Apache-2.0
#include "kv_arena_impl.hpp"

#include <algorithm>
#include <utility>

#include "arena_transfer.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::client::arena {
namespace {

// The C ABI's backend is a GpuVmm backend by name. One that libcxlpool was
// not linked with (or CXLPOOL_BACKENDS excludes) is ENOTSUP, as kv_arena.h
// promises; the backend's own errors pass through.
Result<std::unique_ptr<hal::GpuVmm>> make_backend(const cxlpool_kv_arena_config& config) {
  const char* name = config.backend == CXLPOOL_ARENA_BACKEND_HOST ? "host" : "cuda";
  auto vmm = hal::open_gpu_vmm(name, config.device);
  if (!vmm) return fail(vmm.error().code, "kv arena: " + vmm.error().message);
  return vmm;
}

}  // namespace

Result<std::unique_ptr<KvArena>> KvArena::create(cxlpool_client* client, const cxlpool_kv_arena_config& config) {
  if (config.backend > CXLPOOL_ARENA_BACKEND_CUDA) return fail(EINVAL, "kv arena: unknown backend");
  std::unique_ptr<BackingSource> source;
  if (config.backend == CXLPOOL_ARENA_BACKEND_HOST) {
    auto daemon = make_daemon_backing(client, config.tier_id);
    if (!daemon) return tl::unexpected(daemon.error());
    source = std::move(*daemon);
  } else if (config.tier_id == UINT32_MAX) {
    // Device memory of the backend's own: the hot tier.
    source = make_own_backing();
  } else {
    // Host memory of the daemon's tier, allocated by the driver on its NUMA
    // node. No quiet fallback to device memory: the caller asked for a tier.
    auto daemon = make_daemon_gpu_host_backing(client, config.tier_id, config.device);
    if (!daemon) return tl::unexpected(daemon.error());
    source = std::move(*daemon);
  }
  auto vmm = make_backend(config);
  if (!vmm) return tl::unexpected(vmm.error());
  if (config.backend == CXLPOOL_ARENA_BACKEND_CUDA && config.tier_id != UINT32_MAX) {
    // One piece now, so that a daemon or driver that cannot serve the tier
    // fails the creation rather than a later step.
    auto piece = source->acquire(**vmm, (*vmm)->granularity());
    if (!piece) return tl::unexpected(piece.error());
    source->release(**vmm, *piece);
  }
  return create(client, config, std::move(*vmm), std::move(source));
}

Result<std::unique_ptr<KvArena>> KvArena::create(cxlpool_client* client, const cxlpool_kv_arena_config& config,
                                                 std::unique_ptr<hal::GpuVmm> vmm,
                                                 std::unique_ptr<BackingSource> source, PagePlacement placement) {
  if (!vmm) return fail(EINVAL, "kv arena: no backend");
  auto geo = make_geometry(config, vmm->granularity());
  if (!geo) return tl::unexpected(geo.error());
  // A device handle maps whole, from its start: one piece per page.
  if (std::string_view(vmm->name()) != "host") geo->region_bytes = geo->page_bytes;
  auto core = ArenaCore::create(*geo, std::move(vmm), std::move(source), config.memory_limit_bytes, placement);
  if (!core) return tl::unexpected(core.error());
  std::unique_ptr<KvArena> arena(new KvArena(client, config, std::move(*core)));
  if (config.async != 0) arena->worker_ = std::thread([a = arena.get()] { a->worker_loop(); });
  return arena;
}

KvArena::KvArena(cxlpool_client* client, const cxlpool_kv_arena_config& config, std::unique_ptr<ArenaCore> core)
    : client_(client),
      config_(config),
      geo_(core->geometry()),
      base_(core->base()),
      host_memory_(std::string_view(core->backend_name()) == "host"),
      core_(std::move(core)),
      transfers_(std::make_unique<Transfers>(*this)) {
  tier_ = core_->tier();
}

KvArena::~KvArena() {
  {
    std::lock_guard lock(job_mu_);
    stop_ = true;
  }
  job_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  transfers_.reset();
  std::lock_guard lock(mu_);
  core_.reset();
}

Result<cxlpool_kv_arena_tensor> KvArena::tensor(uint32_t layer, uint32_t kind) const {
  cxlpool_kv_arena_tensor t{};
  t.row_stride = geo_.row_stride;
  t.token_stride = geo_.token_bytes;
  if (config_.layout == CXLPOOL_ARENA_LAYOUT_FUSED) {
    t.base = base_;
    t.bytes = geo_.total_bytes;
    return t;
  }
  if (layer >= geo_.layers || kind > CXLPOOL_ARENA_V) return fail(EINVAL, "kv arena: no such layer or tensor kind");
  t.base = base_ + geo_.tensor_offset(layer, kind);
  t.bytes = geo_.tensor_bytes;
  return t;
}

Result<uint32_t> KvArena::alloc_reqid() {
  std::lock_guard lock(mu_);
  return core_->alloc_reqid();
}

Result<void> KvArena::free_reqid(uint32_t row) {
  std::lock_guard lock(mu_);
  return core_->free_reqid(row);
}

bool KvArena::row_active(uint32_t row) const {
  std::lock_guard lock(mu_);
  return core_->active(row);
}

bool KvArena::pin_row(uint32_t row) {
  std::lock_guard lock(mu_);
  if (!core_->active(row)) return false;
  core_->pin(row);
  return true;
}

void KvArena::unpin_row(uint32_t row) {
  std::lock_guard lock(mu_);
  core_->unpin(row);
}

uint32_t KvArena::row_mapped_tokens(uint32_t row) const {
  std::lock_guard lock(mu_);
  return core_->mapped_tokens(row);
}

Result<void> KvArena::ensure_row(uint32_t row, uint32_t tokens) {
  std::lock_guard lock(mu_);
  return core_->grow_row(row, tokens);
}

void KvArena::note_step(uint64_t ns, bool async) {
  ++steps_;
  if (async) ++async_steps_;
  step_ns_total_ += ns;
  step_ns_max_ = std::max(step_ns_max_, ns);
}

Result<void> KvArena::step(std::span<const uint32_t> seq_lens) {
  const uint64_t t0 = monotonic_ns();
  bool pending;
  {
    std::lock_guard lock(job_mu_);
    pending = job_pending_;
  }
  if (pending) (void)wait();  // its outcome is superseded by this step's
  std::lock_guard lock(mu_);
  auto r = core_->step(seq_lens, 0);
  note_step(monotonic_ns() - t0, false);
  return r;
}

Result<void> KvArena::step_async(std::span<const uint32_t> seq_lens) {
  const uint64_t t0 = monotonic_ns();
  std::unique_lock job(job_mu_);
  if (job_pending_) return fail(EBUSY, "kv arena: an async step is still running (wait first)");
  std::unique_lock lock(mu_);
  if (auto v = core_->validate(seq_lens); !v) return v;
  const uint32_t ahead = geo_.lookahead_tokens;
  job_pending_ = true;
  if (core_->satisfied(seq_lens, ahead)) {
    // Decode mostly stays inside mapped pages: nothing for the worker.
    job_result_ = {};
  } else if (!worker_.joinable()) {
    job_result_ = core_->step(seq_lens, ahead);
  } else {
    job_seq_.assign(seq_lens.begin(), seq_lens.end());
    stop_ahead_.store(false, std::memory_order_relaxed);
    job_queued_ = true;
    job_cv_.notify_one();
  }
  note_step(monotonic_ns() - t0, true);
  return {};
}

Result<void> KvArena::wait() {
  stop_ahead_.store(true, std::memory_order_relaxed);
  std::unique_lock job(job_mu_);
  job_cv_.wait(job, [this] { return !job_queued_; });
  job_pending_ = false;
  return std::exchange(job_result_, Result<void>{});
}

void KvArena::worker_loop() {
  std::unique_lock job(job_mu_);
  for (;;) {
    job_cv_.wait(job, [this] { return stop_ || job_queued_; });
    if (stop_) return;
    std::vector<uint32_t> seq = job_seq_;
    job.unlock();
    Result<void> r;
    {
      std::lock_guard lock(mu_);
      r = core_->step(seq, geo_.lookahead_tokens, &stop_ahead_);
    }
    job.lock();
    job_result_ = std::move(r);
    job_queued_ = false;
    job_cv_.notify_all();
  }
}

Result<void> KvArena::trim(uint64_t keep_bytes) {
  std::lock_guard lock(mu_);
  return core_->trim(keep_bytes);
}

cxlpool_kv_arena_stats KvArena::stats() const {
  std::lock_guard lock(mu_);
  const auto c = core_->stats();
  cxlpool_kv_arena_stats s{};
  s.reserved_bytes = c.reserved_bytes;
  s.mapped_bytes = c.mapped_bytes;
  s.pages_in_use = c.pages_in_use;
  s.pages_deferred = c.pages_deferred;
  s.region_bytes = c.held_bytes;
  s.maps = c.maps;
  s.unmaps = c.unmaps;
  s.reuses = c.reuses;
  s.map_ns_total = c.map_ns_total;
  s.unmap_ns_total = c.unmap_ns_total;
  s.map_ns_max = c.map_ns_max;
  s.steps = steps_;
  s.async_steps = async_steps_;
  s.step_ns_total = step_ns_total_;
  s.step_ns_max = step_ns_max_;
  s.rows_active = c.rows_active;
  s.backend = config_.backend;
  return s;
}

}  // namespace cxlpool::client::arena
