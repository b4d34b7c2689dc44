// SPDX-License-Identifier: Apache-2.0
// Thin C++ layer over cxlpool/kv.h: RAII handles for the KV store. Like
// cxlpool.hpp, failures throw std::system_error carrying the errno and the
// library's message; expected outcomes are values (a miss is a shorter
// prefix, a full ring is 0 requests queued). The C ABI underneath never
// throws. Destructors never throw: a lease whose release fails is released
// by the daemon when the connection closes.
//
// The helpers here allocate (vectors of locations); a loop that must not,
// calls the C functions with its own arrays.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cxlpool/cxlpool.hpp"
#include "cxlpool/kv.h"

namespace cxlpool {

using KvKey = cxlpool_kv_key;
using KvLocation = cxlpool_kv_location;

// Flags of a put or of a reservation's commit (kv.h).
enum class KvPutFlags : uint32_t {
  kNone = 0,
  // The chunks go to the daemon's SSD log only, written from the put window
  // where the log can (CXLPOOL_KV_COMMIT_TO_SSD); a daemon without an SSD
  // log stores them as usual.
  kToSsd = CXLPOOL_KV_COMMIT_TO_SSD,
};

// A registered namespace. Key computation is local (no daemon).
class KvNamespace {
 public:
  KvNamespace() = default;
  explicit KvNamespace(const cxlpool_kv_namespace& ns) : ns_(ns) {}

  uint64_t id() const { return ns_.id; }
  uint32_t chunk_tokens() const { return ns_.chunk_tokens; }
  const cxlpool_kv_namespace& c() const { return ns_; }

  // Keys of the full chunks of `tokens`, chained from `parent` (nullptr: a
  // sequence start). A partial trailing chunk gets none.
  std::vector<KvKey> compute_keys(std::span<const uint32_t> tokens, const KvKey* parent = nullptr) const {
    std::vector<KvKey> keys(ns_.chunk_tokens != 0 ? tokens.size() / ns_.chunk_tokens : 0);
    const int n = check(cxlpool_kv_compute_keys(&ns_, tokens.data(), tokens.size(), parent, keys.data(), keys.size()),
                        "compute KV keys");
    keys.resize(static_cast<size_t>(n));
    return keys;
  }

 private:
  cxlpool_kv_namespace ns_{};
};

// A get's read lease: the chunks stay where `chunks()` says, unchanged, until
// release() or destruction.
class KvLease {
 public:
  KvLease() = default;
  // Adopts a lease obtained with cxlpool_kv_submit (the completion's
  // result0 and locations).
  KvLease(cxlpool_kv* kv, uint64_t id, std::vector<KvLocation> chunks)
      : kv_(kv), id_(id), chunks_(std::move(chunks)) {}
  KvLease(const KvLease&) = delete;
  KvLease& operator=(const KvLease&) = delete;
  KvLease(KvLease&& o) noexcept
      : kv_(std::exchange(o.kv_, nullptr)), id_(std::exchange(o.id_, 0)), chunks_(std::move(o.chunks_)) {}
  KvLease& operator=(KvLease&& o) noexcept {
    if (this != &o) {
      reset();
      kv_ = std::exchange(o.kv_, nullptr);
      id_ = std::exchange(o.id_, 0);
      chunks_ = std::move(o.chunks_);
    }
    return *this;
  }
  ~KvLease() { reset(); }

  uint64_t id() const { return id_; }
  // Chunks leased: the longest cached prefix of the keys asked for.
  size_t size() const { return chunks_.size(); }
  bool empty() const { return chunks_.empty(); }
  std::span<const KvLocation> chunks() const { return chunks_; }
  const void* data(size_t i) const { return chunks_.at(i).data; }
  std::span<const std::byte> bytes(size_t i) const {
    return {static_cast<const std::byte*>(chunks_.at(i).data), chunks_.at(i).length};
  }

  // Releases now and reports the daemon's answer (the destructor ignores it).
  void release() {
    if (kv_ != nullptr && id_ != 0) {
      const int rc = cxlpool_kv_release(kv_, id_);
      kv_ = nullptr;
      id_ = 0;
      chunks_.clear();
      check(rc, "release KV lease");
    }
  }
  // Gives up ownership: the caller releases the returned id itself.
  uint64_t detach() {
    kv_ = nullptr;
    chunks_.clear();
    return std::exchange(id_, 0);
  }

 private:
  // The destructor reports nothing, so it need not wait for the answer: the
  // daemon takes the release before the handle's next request.
  void reset() noexcept {
    if (kv_ != nullptr && id_ != 0) cxlpool_kv_release_nowait(kv_, id_);
    kv_ = nullptr;
    id_ = 0;
    chunks_.clear();
  }
  cxlpool_kv* kv_ = nullptr;
  uint64_t id_ = 0;
  std::vector<KvLocation> chunks_;
};

// put_begin's slots: write each chunk whose slot is not cached(), then
// commit(). Protocol version 1 has no abort: a reservation never committed
// keeps its put-window slots until the connection closes. Chunks written
// with copy() have their CRC-32Cs declared by the commit when every chunk
// it commits was (docs/kvstore.md "Declared checksums").
class KvReservation {
 public:
  KvReservation() = default;
  KvReservation(cxlpool_kv* kv, uint64_t ns_id, uint64_t id, std::vector<KvKey> keys, std::vector<KvLocation> slots)
      : kv_(kv), ns_id_(ns_id), id_(id), keys_(std::move(keys)), slots_(std::move(slots)) {}

  uint64_t id() const { return id_; }
  size_t size() const { return slots_.size(); }
  std::span<const KvLocation> slots() const { return slots_; }
  const KvKey& key(size_t i) const { return keys_.at(i); }
  // The store already holds chunk i: nothing to write, nothing to commit.
  bool cached(size_t i) const { return (slots_.at(i).flags & CXLPOOL_KV_LOC_CACHED) != 0; }
  // Where chunk i is written (nullptr when cached).
  void* data(size_t i) const { return slots_.at(i).data; }
  size_t capacity(size_t i) const { return slots_.at(i).length; }

  // Copies `bytes` (at most capacity(i)) from src into chunk i's slot with
  // cxlpool_kv_copy_chunk, keeping its CRC-32C for the commit. A slot
  // changed after its copy() (through data()) no longer matches it: the
  // daemon drops such a chunk.
  void copy(size_t i, const void* src, size_t bytes) {
    if (cached(i)) throw std::system_error(EINVAL, std::generic_category(), "copy into a cached KV chunk");
    if (src == nullptr || bytes > capacity(i)) {
      throw std::system_error(EINVAL, std::generic_category(), "copy into a KV slot: no source, or too long");
    }
    checksums_.resize(slots_.size());
    copied_.resize(slots_.size());
    checksums_[i] = cxlpool_kv_copy_chunk(data(i), src, bytes);
    copied_[i] = true;
  }

  // Commits every chunk that was not cached (all keys when every one was,
  // which ends the reservation). Returns the chunks committed.
  size_t commit(KvPutFlags flags = KvPutFlags::kNone) {
    std::vector<KvKey> keep;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (!cached(i)) keep.push_back(keys_[i]);
    }
    return commit(keep.empty() ? std::span<const KvKey>(keys_) : std::span<const KvKey>(keep), flags);
  }
  // Commits `keys` (a subset of the reserved ones); the rest are dropped.
  size_t commit(std::span<const KvKey> keys, KvPutFlags flags = KvPutFlags::kNone) {
    uint64_t on_ssd = 0;
    const auto n_keys = static_cast<uint32_t>(keys.size());
    int n = -EINVAL;
    // Declared when every committed chunk went through copy(); a daemon
    // older than the flag refuses it (-EINVAL, the reservation untouched):
    // committed again without.
    if (const std::vector<uint32_t> declared = declared_for(keys); !declared.empty()) {
      n = cxlpool_kv_put_commit_checksums(kv_, ns_id_, id_, keys.data(), n_keys, declared.data(),
                                          static_cast<uint32_t>(flags), &on_ssd);
    }
    if (n == -EINVAL) {
      n = cxlpool_kv_put_commit_flags(kv_, ns_id_, id_, keys.data(), n_keys, static_cast<uint32_t>(flags), &on_ssd);
    }
    kv_ = nullptr;
    check(n, "commit KV reservation");
    on_ssd_ = on_ssd;
    return static_cast<size_t>(n);
  }
  bool committed() const { return kv_ == nullptr; }
  // Chunks the commit stored on the SSD log only (KvPutFlags::kToSsd to a
  // daemon with an SSD log; else 0).
  uint64_t on_ssd() const { return on_ssd_; }

 private:
  cxlpool_kv* kv_ = nullptr;
  uint64_t ns_id_ = 0;
  uint64_t id_ = 0;
  std::vector<KvKey> keys_;
  // The CRCs of `keys` when each is a chunk written with copy(); else none.
  std::vector<uint32_t> declared_for(std::span<const KvKey> keys) const {
    std::vector<uint32_t> out;
    for (const KvKey& k : keys) {
      size_t i = 0;
      while (i < keys_.size() && !(keys_[i].lo == k.lo && keys_[i].hi == k.hi)) ++i;
      if (i >= copied_.size() || !copied_[i]) return {};
      out.push_back(checksums_[i]);
    }
    return out;
  }

  std::vector<KvLocation> slots_;
  uint64_t on_ssd_ = 0;
  std::vector<uint32_t> checksums_;  // per slot, after copy()
  std::vector<bool> copied_;
};

// One connection's KV data path (cxlpool_kv). Thread-safe like the C handle.
class KvStore {
 public:
  explicit KvStore(Client& client, const cxlpool_kv_options* opts = nullptr) {
    check(cxlpool_kv_open(client.get(), opts, &kv_), "open KV store");
  }
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;
  KvStore(KvStore&& o) noexcept : kv_(std::exchange(o.kv_, nullptr)) {}
  ~KvStore() { cxlpool_kv_close(kv_); }

  cxlpool_kv_info info() const {
    cxlpool_kv_info out{};
    check(cxlpool_kv_get_info(kv_, &out), "KV store info");
    return out;
  }

  KvNamespace open_namespace(const std::string& model_id, const std::string& layout, const std::string& dtype,
                             uint32_t tp_rank = 0, uint32_t tp_size = 1, uint32_t chunk_tokens = 0,
                             uint32_t mode = 0) {
    const cxlpool_kv_namespace_spec spec{model_id.c_str(), layout.c_str(), dtype.c_str(),
                                         tp_rank,          tp_size,        chunk_tokens,
                                         mode};
    cxlpool_kv_namespace ns{};
    check(cxlpool_kv_namespace_open(kv_, &spec, &ns), "open KV namespace");
    return KvNamespace(ns);
  }

  // Longest cached prefix; its locations (not pinned) when `locations` is given.
  size_t lookup(const KvNamespace& ns, std::span<const KvKey> keys, std::vector<KvLocation>* locations = nullptr) {
    std::vector<KvLocation> locs(locations != nullptr ? keys.size() : 0);
    const int n = check(cxlpool_kv_lookup(kv_, ns.id(), keys.data(), count(keys),
                                          locations != nullptr ? locs.data() : nullptr),
                        "KV lookup");
    if (locations != nullptr) {
      locs.resize(static_cast<size_t>(n));
      *locations = std::move(locs);
    }
    return static_cast<size_t>(n);
  }

  // Leases the longest cached prefix (empty lease: nothing cached).
  KvLease get(const KvNamespace& ns, std::span<const KvKey> keys) {
    std::vector<KvLocation> locs(keys.size());
    uint64_t lease = 0;
    const int n = check(cxlpool_kv_get(kv_, ns.id(), keys.data(), count(keys), &lease, locs.data()), "KV get");
    locs.resize(static_cast<size_t>(n));
    return KvLease(kv_, lease, std::move(locs));
  }

  KvReservation put_begin(const KvNamespace& ns, std::span<const KvKey> keys, uint64_t chunk_bytes) {
    std::vector<KvLocation> slots(keys.size());
    uint64_t reservation = 0;
    check(cxlpool_kv_put_begin(kv_, ns.id(), keys.data(), count(keys), chunk_bytes, &reservation, slots.data()),
          "KV put_begin");
    return KvReservation(kv_, ns.id(), reservation, std::vector<KvKey>(keys.begin(), keys.end()), std::move(slots));
  }

  // Copies and commits chunks (data[i] holds chunk i); returns how many the
  // store holds afterwards (committed plus already cached). `on_ssd`, when
  // given, receives how many of them the commits stored on the SSD log only
  // (KvPutFlags::kToSsd to a daemon with an SSD log; else 0).
  size_t put(const KvNamespace& ns, std::span<const KvKey> keys, std::span<const void* const> data,
             uint64_t chunk_bytes, KvPutFlags flags = KvPutFlags::kNone, uint64_t* on_ssd = nullptr) {
    if (data.size() != keys.size()) check(-EINVAL, "KV put: one data pointer per key");
    return static_cast<size_t>(check(cxlpool_kv_put_flags(kv_, ns.id(), keys.data(), count(keys), data.data(),
                                                          chunk_bytes, static_cast<uint32_t>(flags), on_ssd),
                                     "KV put"));
  }

  size_t prefetch(const KvNamespace& ns, std::span<const KvKey> keys) {
    return static_cast<size_t>(check(cxlpool_kv_prefetch(kv_, ns.id(), keys.data(), count(keys)), "KV prefetch"));
  }
  size_t erase(const KvNamespace& ns, std::span<const KvKey> keys) {
    return static_cast<size_t>(check(cxlpool_kv_delete(kv_, ns.id(), keys.data(), count(keys)), "KV delete"));
  }

  // Asynchronous requests: returns how many were queued (0: rings full).
  size_t submit(std::span<const cxlpool_kv_request> requests) {
    const int n = cxlpool_kv_submit(kv_, requests.data(), requests.size());
    if (n == -EAGAIN) return 0;
    return static_cast<size_t>(check(n, "KV submit"));
  }
  // Completions; their locations stay valid until the next reap.
  size_t reap(std::span<cxlpool_kv_completion> out, int timeout_ms = 0) {
    return static_cast<size_t>(check(cxlpool_kv_reap(kv_, out.data(), out.size(), timeout_ms), "KV reap"));
  }
  int eventfd() const { return cxlpool_kv_eventfd(kv_); }
  // True: armed, sleep on eventfd(); false: completions wait, reap first.
  bool arm() { return check(cxlpool_kv_arm(kv_), "KV arm") != 0; }
  uint64_t in_flight() const { return cxlpool_kv_in_flight(kv_); }

  cxlpool_kv_load_decision should_load(const cxlpool_kv_load_query& query) const {
    cxlpool_kv_load_decision out{};
    check(cxlpool_kv_should_load(kv_, &query, &out), "KV should_load");
    return out;
  }

  cxlpool_kv* get() const { return kv_; }

 private:
  static uint32_t count(std::span<const KvKey> keys) {
    if (keys.size() > UINT32_MAX) check(-EINVAL, "too many keys");
    return static_cast<uint32_t>(keys.size());
  }
  cxlpool_kv* kv_ = nullptr;
};

}  // namespace cxlpool
