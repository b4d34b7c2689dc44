// SPDX-License-Identifier: Apache-2.0
// Opening and closing a KV data path: the KvOpen exchange, the mappings.
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "cxlpool/common/log.hpp"
#include "kv_session.hpp"

namespace cxlpool::client {
namespace {

constexpr std::string_view kLogComponent = "kv";

// Same knob and default as the control connection's reply wait.
uint64_t spin_ns_from_env() {
  const char* env = std::getenv("CXLPOOL_SPIN_US");
  const long us = env != nullptr ? std::strtol(env, nullptr, 10) : 50;
  return static_cast<uint64_t>(std::clamp(us, 0L, 10000L)) * 1000;
}

bool entries_ok(uint32_t n) {
  return n == 0 || (proto::ring_power_of_two(n, proto::kKvRingMaxEntries) && n >= proto::kKvRingMinEntries);
}

// A descriptor shorter than what we map would fault (SIGBUS) on first touch.
Result<void> check_fd_size(int fd, uint64_t bytes, const char* what) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return fail_errno(std::string("fstat ") + what);
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) < bytes) {
    return fail(EPROTO, std::string(what) + " descriptor holds " + std::to_string(st.st_size) +
                            " bytes, the daemon announced " + std::to_string(bytes));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<KvSession>> KvSession::open(std::shared_ptr<Connection> conn, const cxlpool_kv_options* opts) {
  std::unique_ptr<KvSession> session(new KvSession(std::move(conn)));
  if (auto ok = session->setup(opts); !ok) return tl::unexpected(ok.error());
  return session;
}

Result<void> KvSession::setup(const cxlpool_kv_options* opts) {
  proto::KvOpen request;
  if (opts != nullptr) {
    if (!entries_ok(opts->sq_entries) || !entries_ok(opts->cq_entries)) {
      return fail(EINVAL, "sq_entries and cq_entries must be 0 or a power of two from 2 to 65536");
    }
    if (opts->put_window_bytes % 4096 != 0) return fail(EINVAL, "put_window_bytes must be a multiple of 4096");
    request.sq_entries = opts->sq_entries;
    request.cq_entries = opts->cq_entries;
    request.put_window_bytes = opts->put_window_bytes;
  }
  auto received = conn_->call(request);
  if (!received) return tl::unexpected(received.error());
  auto* reply = std::get_if<proto::KvOpenReply>(&received->envelope.message);
  if (reply == nullptr || received->fds.size() != 4) {
    return fail(EPROTO, "daemon reply to KvOpen carries no ring, eventfds and put window");
  }
  // The codec checked the geometry and that ring_bytes matches it.
  if (auto ok = check_fd_size(received->fds[0].get(), reply->ring_bytes, "kv ring"); !ok) return ok;
  auto memory = proto::KvRingMemory::map(received->fds[0].get(), reply->ring_bytes);
  if (!memory) return tl::unexpected(memory.error());
  ring_memory_ = std::move(*memory);
  sq_efd_ = std::move(received->fds[1]);
  cq_efd_ = std::move(received->fds[2]);
  auto ring = proto::KvClientRing::attach(ring_memory_.bytes(), sq_efd_.get(), cq_efd_.get());
  if (!ring) return tl::unexpected(ring.error());
  ring_ = *ring;
  if (reply->put_window_bytes > 0) {
    const int fd = received->fds[3].get();
    if (auto ok = check_fd_size(fd, reply->put_window_bytes, "put window"); !ok) return ok;
    auto window = Mapping::map(reply->put_window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
    if (!window) return tl::unexpected(window.error());
    put_window_ = std::move(*window);
  }

  info_.slot_bytes = reply->slot_bytes;
  info_.put_window_bytes = reply->put_window_bytes;
  info_.quota_bytes = reply->quota_bytes;
  for (size_t t = 0; t < proto::kKvTierCountWire; ++t) {
    info_.tier_bandwidth_bps[t] = reply->tier_bandwidth_bps[t];
    info_.tier_latency_ns[t] = reply->tier_latency_ns[t];
  }
  // The arenas themselves are not mapped: each namespace opened for
  // reading brings its own views of them (open_namespace).
  for (const proto::KvArenaEntry& entry : reply->arenas) {
    arena_bytes_[entry.tier] = entry.bytes;  // the codec allows tiers 0 and 1, each once
    info_.arena_bytes[entry.tier] = entry.bytes;
  }

  // Every buffer of the data path at its working size now, so that requests
  // and completions do not allocate.
  const uint32_t cq_entries = reply->cq_entries;
  const size_t cq_records = reply->cq_slab_bytes / proto::kKvRecordBytes;
  slots_.assign(cq_entries, Slot{});
  free_slots_.reserve(cq_entries);
  for (uint32_t i = cq_entries; i > 0; --i) free_slots_.push_back(i - 1);
  scratch_.completions.reserve(cq_entries);
  scratch_.first_location.reserve(cq_entries);
  scratch_.locations.reserve(cq_records);
  stash_.reserve(cq_entries);
  stash_locations_.reserve(cq_records);
  reaped_locations_.reserve(cq_records);
  leases_.reserve(64);
  spin_ns_ = spin_ns_from_env();
  socket_fd_ = conn_->socket_fd();
  if (log_enabled(LogLevel::kDebug)) {
    log(LogLevel::kDebug, kLogComponent,
        "data path open: " + std::to_string(reply->sq_entries) + "/" + std::to_string(cq_entries) +
            " ring entries, put window " + std::to_string(reply->put_window_bytes) + " bytes, slot " +
            std::to_string(reply->slot_bytes) + " bytes, " + std::to_string(reply->arenas.size()) + " arenas");
  }
  return {};
}

// Views are the namespace's own memory: a chunk of another namespace is
// never in them (docs/kvstore.md, "Isolation").
Result<proto::KvNamespaceReply> KvSession::open_namespace(const proto::KvNamespaceOpen& request) {
  auto received = conn_->call(request);
  if (!received) return tl::unexpected(received.error());
  auto* reply = std::get_if<proto::KvNamespaceReply>(&received->envelope.message);
  if (reply == nullptr) return fail(EPROTO, "daemon reply to KvNamespaceOpen is not a KvNamespaceReply");
  const bool reads = (reply->rights & 1) != 0;
  size_t arenas = 0;
  for (const uint64_t bytes : arena_bytes_) arenas += bytes != 0 ? 1 : 0;
  if (received->fds.size() != (reads ? arenas : 0)) {
    return fail(EPROTO, "daemon reply to KvNamespaceOpen carries " + std::to_string(received->fds.size()) +
                            " views, expected " + std::to_string(reads ? arenas : 0));
  }
  if (!reads) return *reply;
  Views views;
  size_t next = 0;
  for (size_t t = 0; t < 2; ++t) {
    if (arena_bytes_[t] == 0) continue;
    const int fd = received->fds[next++].get();
    if (auto ok = check_fd_size(fd, arena_bytes_[t], "KV namespace view"); !ok) return tl::unexpected(ok.error());
    // Read-only (the descriptor is too). No MAP_POPULATE: a fault taken
    // here would place pages by this process's memory policy, not the
    // tier's (the daemon bound the view's shared policy).
    auto mapping = Mapping::map(arena_bytes_[t], PROT_READ, MAP_SHARED, fd);
    if (!mapping) return tl::unexpected(mapping.error());
    views.mapping[t] = std::move(*mapping);
  }
  std::lock_guard lock(mutex_);
  if (reply->namespace_id >= views_.size()) views_.resize(reply->namespace_id + 1);
  // Opened before: keep the first mapping, which earlier gets' pointers use
  // (both map the same memory).
  if (!views_[reply->namespace_id].mapping[0].valid() && !views_[reply->namespace_id].mapping[1].valid()) {
    views_[reply->namespace_id] = std::move(views);
  }
  return *reply;
}

KvSession::~KvSession() {
  try {
    release_all_leases();
  } catch (...) {
    // Out of memory while closing: the daemon releases everything at disconnect.
  }
}

void KvSession::release_all_leases() {
  std::vector<uint64_t> leases;
  {
    std::lock_guard lock(mutex_);
    if (broken_ || dead_ || conn_->closed()) return;
    leases = leases_;
  }
  for (const uint64_t lease : leases) {
    KvWaiter waiter;
    KvCall request;
    request.op = static_cast<uint8_t>(proto::KvOp::kRelease);
    request.param0 = lease;
    if (!call(request, waiter)) return;  // the path broke: the daemon releases at disconnect
  }
}

}  // namespace cxlpool::client
