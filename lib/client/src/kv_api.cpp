// SPDX-License-Identifier: Apache-2.0
// The KV store's C ABI (cxlpool/kv.h). Every entry point catches
// everything: no exception crosses it.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>

#include "c_api_support.hpp"
#include "cxlpool/common/stream_copy.hpp"
#include "cxlpool/kv.h"
#include "cxlpool/kvcache/namespace.hpp"
#include "kv_pure.hpp"
#include "kv_session.hpp"

#define CXLPOOL_EXPORT __attribute__((visibility("default")))

using cxlpool::Error;
using cxlpool::client::guarded;
using cxlpool::client::KvCall;
using cxlpool::client::KvSession;
using cxlpool::client::KvWaiter;
using cxlpool::client::record;
namespace proto = cxlpool::proto;

namespace {

// cxlpool_kv is opaque to callers; it is the session.
KvSession* session(cxlpool_kv* kv) { return reinterpret_cast<KvSession*>(kv); }
const KvSession* session(const cxlpool_kv* kv) { return reinterpret_cast<const KvSession*>(kv); }

// Chunks one put_begin may reserve in cxlpool_kv_put (its slots live on the stack).
constexpr uint32_t kPutBatch = 64;

const char* op_name(uint8_t op) {
  const char* name = proto::kv_op_name(op);
  return name != nullptr ? name : "request";
}

// The request's own failure, with a message naming it (no allocation
// beyond the message on this error path).
int record_status(const KvWaiter& w) {
  const int code = -w.status;
  const char* why = ::strerrordesc_np(code);
  return record(Error{code, std::string("kv ") + op_name(w.op) + ": " + (why != nullptr ? why : "unknown error")});
}

// Runs one blocking request. Returns 0 when it completed with status 0,
// else the negative errno (recorded).
int run(KvSession& s, const KvCall& request, KvWaiter& waiter) {
  auto ok = s.call(request, waiter);
  if (!ok) return record(ok.error());
  if (waiter.status != 0) return record_status(waiter);
  return 0;
}

int protocol_error(const char* what) { return record(EPROTO, what); }

// Request flags go on the wire as they are.
static_assert(CXLPOOL_KV_LOOKUP_COST_CUTOFF == proto::kKvLookupCostCutoff &&
              CXLPOOL_KV_COMMIT_TO_SSD == proto::kKvPutCommitToSsd &&
              CXLPOOL_KV_COMMIT_CHECKSUMS == proto::kKvPutCommitChecksums);

// Flags a put_commit of the blocking helpers may carry. 0: go on.
int check_commit_flags(uint32_t flags) {
  if ((flags & ~uint32_t{CXLPOOL_KV_COMMIT_TO_SSD}) != 0) {
    return record(EINVAL, "put_commit flags other than CXLPOOL_KV_COMMIT_TO_SSD");
  }
  return 0;
}

// The chunks a put_commit stored on the SSD log only, from its completion;
// -EPROTO when the answer counts more of them than it committed.
int64_t commit_on_ssd(const KvWaiter& w) {
  if (w.result1 > w.result0) return protocol_error("put_commit stored more chunks on SSD than it committed");
  return static_cast<int64_t>(w.result1);
}

// How long a blocking put to the SSD log waits for its put window: the
// slots the log writes from come back as the device completes their
// regions, so a full window frees itself unless the device is stuck.
constexpr std::chrono::seconds kWindowWait{10};

// A put round's put_begin. When the earlier rounds' slots may still be out
// with the SSD log (wait_for_window: CXLPOOL_KV_COMMIT_TO_SSD to a store
// with one), -EAGAIN (a full window) is retried, backing off from 50 us to
// 2 ms, for up to kWindowWait.
int begin_put_round(KvSession& s, const KvCall& call, cxlpool_kv_location* slots, uint32_t count,
                    bool wait_for_window, KvWaiter& begin) {
  const auto deadline = std::chrono::steady_clock::now() + kWindowWait;
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    begin = KvWaiter{};
    begin.locations = slots;
    begin.capacity = count;
    const int rc = run(s, call, begin);
    if (rc != -EAGAIN || !wait_for_window || std::chrono::steady_clock::now() > deadline) {
      return rc;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(2));
  }
}

// Shared argument checks of the key-list helpers. 0: go on.
int check_keys(const cxlpool_kv* kv, const cxlpool_kv_key* keys, uint32_t n) {
  if (kv == nullptr) return record(EINVAL, "kv is NULL");
  if (n > 0 && keys == nullptr) return record(EINVAL, "keys is NULL");
  if (n > proto::kKvMaxRecordsPerEntry) return record(EINVAL, "more keys than one request carries (65536)");
  return 0;
}

KvCall key_call(proto::KvOp op, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n) {
  KvCall call;
  call.op = static_cast<uint8_t>(op);
  call.namespace_id = ns_id;
  call.keys = {keys, n};
  return call;
}

// One blocking put_commit; checksums (one per key, or empty) are declared
// with it. The number committed, or a negative errno; *answered (may be
// null) is the daemon's status, 0 when the error is this side's.
int commit(KvSession& s, uint64_t ns_id, uint64_t reservation, std::span<const cxlpool_kv_key> keys, uint32_t flags,
           std::span<const uint32_t> checksums, uint64_t* on_ssd, int* answered = nullptr) {
  if (keys.empty()) return record(EINVAL, "put_commit needs at least one key");
  KvWaiter w;
  KvCall call = key_call(proto::KvOp::kPutCommit, ns_id, keys.data(), static_cast<uint32_t>(keys.size()));
  call.flags = static_cast<uint16_t>(flags & ~uint32_t{CXLPOOL_KV_COMMIT_CHECKSUMS});
  if (!checksums.empty()) call.flags |= proto::kKvPutCommitChecksums;
  call.param0 = reservation;
  call.checksums = checksums;
  if (int rc = run(s, call, w); rc != 0) {
    if (answered != nullptr) *answered = w.status;
    return rc;
  }
  if (w.result0 > keys.size()) return protocol_error("put_commit committed more keys than it was given");
  const int64_t ssd = commit_on_ssd(w);
  if (ssd < 0) return static_cast<int>(ssd);
  if (on_ssd != nullptr) *on_ssd = static_cast<uint64_t>(ssd);
  return static_cast<int>(w.result0);
}

// commit(), for cxlpool_kv_put. With checksums: a daemon that does not know
// the flag refuses the request before it touches the reservation (-EINVAL),
// which is then committed without them, as every later one on this handle.
// A refusal on this side (the checksum records do not fit the ring's slab)
// sends this commit without them too.
int commit_declared(KvSession& s, uint64_t ns_id, uint64_t reservation, std::span<const cxlpool_kv_key> keys,
                    uint32_t flags, std::span<const uint32_t> checksums, uint64_t* on_ssd) {
  if (checksums.empty()) return commit(s, ns_id, reservation, keys, flags, {}, on_ssd);
  int answered = 0;
  const int rc = commit(s, ns_id, reservation, keys, flags, checksums, on_ssd, &answered);
  if (rc != -EINVAL) return rc;
  if (answered == -EINVAL) s.stop_declaring_checksums();
  return commit(s, ns_id, reservation, keys, flags, {}, on_ssd);
}

// One cxlpool_kv_put call, counted while it runs.
class PutScope {
 public:
  explicit PutScope(KvSession& s) : s_(s) { s_.puts_running().fetch_add(1, std::memory_order_relaxed); }
  ~PutScope() { s_.puts_running().fetch_sub(1, std::memory_order_relaxed); }
  PutScope(const PutScope&) = delete;
  PutScope& operator=(const PutScope&) = delete;
  // Whether this put's next round declares its checksums. Only while it is
  // the handle's one request under way (no other put, nothing submitted):
  // its commit is then what the writer waits for, which the daemon may
  // answer before its copy once it has the CRCs, and taking them in the
  // copy is cheaper than the daemon's pass. Behind other requests the
  // daemon copies before its answer and takes no CRC of its own in a
  // DRAM-only store: a declared one would be work for nothing (on the
  // 2-vCPU VM, puts with 8 in flight ran 0.7 times as fast declaring).
  bool declares() const {
    return s_.declares_checksums() && s_.puts_running().load(std::memory_order_relaxed) == 1 && s_.in_flight() == 0;
  }

 private:
  KvSession& s_;
};

// An operation on a key list whose answer is how many keys it acted on
// (prefetch, delete): that count, never more than `n`, or a negative errno.
int counted_key_op(cxlpool_kv* kv, proto::KvOp op, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (n == 0) return 0;
    KvWaiter w;
    if (int rc = run(*session(kv), key_call(op, ns_id, keys, n), w); rc != 0) return rc;
    return static_cast<int>(std::min<uint64_t>(w.result0, n));
  });
}

}  // namespace

extern "C" {

CXLPOOL_EXPORT int cxlpool_kv_open(cxlpool_client* client, const cxlpool_kv_options* opts, cxlpool_kv** out) {
  return guarded([&] {
    if (client == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    auto s = KvSession::open(client->conn, opts);
    if (!s) return record(s.error());
    *out = reinterpret_cast<cxlpool_kv*>(s->release());
    return 0;
  });
}

CXLPOOL_EXPORT void cxlpool_kv_close(cxlpool_kv* kv) {
  if (kv == nullptr) return;
  try {
    delete session(kv);
  } catch (...) {
  }
}

CXLPOOL_EXPORT int cxlpool_kv_get_info(const cxlpool_kv* kv, cxlpool_kv_info* out) {
  if (kv == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
  *out = session(kv)->info();
  return 0;
}

CXLPOOL_EXPORT int cxlpool_kv_namespace_open(cxlpool_kv* kv, const cxlpool_kv_namespace_spec* spec,
                                             cxlpool_kv_namespace* out) {
  return guarded([&] {
    if (kv == nullptr || spec == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    auto local = cxlpool::client::kv_namespace_spec(*spec);
    if (!local) return record(local.error());
    proto::KvNamespaceOpen request{local->model_id, local->layout,  local->dtype,
                                   local->tp_rank,  local->tp_size, local->chunk_tokens, spec->mode};
    auto reply = session(kv)->open_namespace(request);
    if (!reply) return record(reply.error());
    // Keys are computed here from this fingerprint and matched there: a
    // daemon hashing namespaces differently would never hit.
    const auto fp = cxlpool::kvcache::fingerprint(*local);
    if (reply->fingerprint_hi != fp.hi || reply->fingerprint_lo != fp.lo ||
        reply->chunk_tokens != local->chunk_tokens) {
      return protocol_error("the daemon's namespace fingerprint differs from this library's");
    }
    *out = cxlpool_kv_namespace{reply->namespace_id, fp.hi, fp.lo, local->chunk_tokens};
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_kv_compute_keys(const cxlpool_kv_namespace* ns, const uint32_t* tokens, size_t n_tokens,
                                           const cxlpool_kv_key* parent, cxlpool_kv_key* keys, size_t max_keys) {
  return guarded([&] {
    if (ns == nullptr || (tokens == nullptr && n_tokens > 0) || (keys == nullptr && max_keys > 0)) {
      return record(EINVAL, "NULL argument");
    }
    auto n = cxlpool::client::kv_compute_keys(*ns, {tokens, n_tokens}, parent, {keys, max_keys});
    if (!n) return record(n.error());
    return static_cast<int>(*n);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_submit(cxlpool_kv* kv, const cxlpool_kv_request* reqs, size_t n) {
  return guarded([&] {
    if (kv == nullptr || (reqs == nullptr && n > 0)) return record(EINVAL, "NULL argument");
    if (n == 0) return 0;
    auto queued = session(kv)->submit({reqs, std::min<size_t>(n, INT_MAX)});
    if (!queued) return record(queued.error());
    return static_cast<int>(*queued);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_reap(cxlpool_kv* kv, cxlpool_kv_completion* out, size_t max, int timeout_ms) {
  return guarded([&] {
    if (kv == nullptr || (out == nullptr && max > 0)) return record(EINVAL, "NULL argument");
    auto n = session(kv)->reap({out, std::min<size_t>(max, INT_MAX)}, timeout_ms);
    if (!n) return record(n.error());
    return static_cast<int>(*n);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_eventfd(const cxlpool_kv* kv) {
  if (kv == nullptr) return record(EINVAL, "kv is NULL");
  return session(kv)->eventfd();
}

CXLPOOL_EXPORT int cxlpool_kv_arm(cxlpool_kv* kv) {
  return guarded([&] {
    if (kv == nullptr) return record(EINVAL, "kv is NULL");
    auto armed = session(kv)->arm();
    if (!armed) return record(armed.error());
    return *armed ? 1 : 0;
  });
}

CXLPOOL_EXPORT uint64_t cxlpool_kv_in_flight(const cxlpool_kv* kv) {
  if (kv == nullptr) return 0;
  // The count is guarded by the session's lock, which a const handle still takes.
  return const_cast<KvSession*>(session(kv))->in_flight();
}

CXLPOOL_EXPORT int cxlpool_kv_lookup(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n,
                                     cxlpool_kv_location* locs) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (n == 0) return 0;
    KvWaiter w;
    w.locations = locs;
    w.capacity = n;
    if (int rc = run(*session(kv), key_call(proto::KvOp::kLookup, ns_id, keys, n), w); rc != 0) return rc;
    if (w.result0 > n || w.n_locations != w.result0) return protocol_error("lookup answer does not match its prefix");
    return static_cast<int>(w.result0);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_put_begin(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n,
                                        uint64_t chunk_bytes, uint64_t* reservation, cxlpool_kv_location* slots) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (n == 0 || reservation == nullptr || slots == nullptr) {
      return record(EINVAL, "put_begin needs keys, a reservation and room for the slots");
    }
    KvWaiter w;
    w.locations = slots;
    w.capacity = n;
    KvCall call = key_call(proto::KvOp::kPutBegin, ns_id, keys, n);
    call.param0 = chunk_bytes;
    if (int rc = run(*session(kv), call, w); rc != 0) return rc;
    if (w.n_locations != n) return protocol_error("put_begin answered a slot count other than the key count");
    *reservation = w.result0;
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_kv_put_commit(cxlpool_kv* kv, uint64_t ns_id, uint64_t reservation,
                                         const cxlpool_kv_key* keys, uint32_t n) {
  return cxlpool_kv_put_commit_flags(kv, ns_id, reservation, keys, n, 0, nullptr);
}

CXLPOOL_EXPORT int cxlpool_kv_put_commit_flags(cxlpool_kv* kv, uint64_t ns_id, uint64_t reservation,
                                               const cxlpool_kv_key* keys, uint32_t n, uint32_t flags,
                                               uint64_t* on_ssd) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (int rc = check_commit_flags(flags); rc != 0) return rc;
    return commit(*session(kv), ns_id, reservation, {keys, n}, flags, {}, on_ssd);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_put_commit_checksums(cxlpool_kv* kv, uint64_t ns_id, uint64_t reservation,
                                                   const cxlpool_kv_key* keys, uint32_t n, const uint32_t* checksums,
                                                   uint32_t flags, uint64_t* on_ssd) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (int rc = check_commit_flags(flags & ~uint32_t{CXLPOOL_KV_COMMIT_CHECKSUMS}); rc != 0) return rc;
    if (n > 0 && checksums == nullptr) return record(EINVAL, "checksums is NULL");
    return commit(*session(kv), ns_id, reservation, {keys, n}, flags, {checksums, n}, on_ssd);
  });
}

CXLPOOL_EXPORT uint32_t cxlpool_kv_copy_chunk(void* dst, const void* src, size_t bytes) {
  if (dst == nullptr || src == nullptr) return 0;
  return cxlpool::copy_crc32c(dst, src, bytes);
}

CXLPOOL_EXPORT int cxlpool_kv_put(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n,
                                  const void* const* data, uint64_t chunk_bytes) {
  return cxlpool_kv_put_flags(kv, ns_id, keys, n, data, chunk_bytes, 0, nullptr);
}

CXLPOOL_EXPORT int cxlpool_kv_put_flags(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n,
                                        const void* const* data, uint64_t chunk_bytes, uint32_t flags,
                                        uint64_t* on_ssd) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (int rc = check_commit_flags(flags); rc != 0) return rc;
    if (n > 0 && data == nullptr) return record(EINVAL, "data is NULL");
    if (chunk_bytes == 0) return record(EINVAL, "chunk_bytes is 0");
    KvSession& s = *session(kv);
    const cxlpool_kv_info& info = s.info();
    if (chunk_bytes > info.slot_bytes) return record(EMSGSIZE, "chunk larger than the store's slot size");
    for (uint32_t i = 0; i < n; ++i) {
      if (data[i] == nullptr) return record(EINVAL, "a chunk's data pointer is NULL");
    }
    const PutScope scope(s);
    // A batch must fit in the put window at once.
    const uint64_t window_slots = info.slot_bytes != 0 ? info.put_window_bytes / info.slot_bytes : 0;
    const uint32_t batch = static_cast<uint32_t>(std::clamp<uint64_t>(window_slots, 1, kPutBatch));
    const bool wait_for_window = (flags & CXLPOOL_KV_COMMIT_TO_SSD) != 0 && info.tier_bandwidth_bps[2] != 0;
    cxlpool_kv_location slots[kPutBatch];
    cxlpool_kv_key written[kPutBatch];
    uint32_t checksums[kPutBatch];
    uint64_t stored = 0;
    uint64_t stored_on_ssd = 0;
    for (uint32_t first = 0; first < n; first += batch) {
      const uint32_t count = std::min(batch, n - first);
      KvWaiter begin;
      KvCall call = key_call(proto::KvOp::kPutBegin, ns_id, keys + first, count);
      call.param0 = chunk_bytes;
      if (int rc = begin_put_round(s, call, slots, count, wait_for_window, begin); rc != 0) return rc;
      if (begin.n_locations != count) return protocol_error("put_begin answered a slot count other than the key count");
      const bool declares = scope.declares();
      uint32_t n_written = 0;
      for (uint32_t i = 0; i < count; ++i) {
        if ((slots[i].flags & CXLPOOL_KV_LOC_CACHED) != 0) continue;
        if (slots[i].data == nullptr || slots[i].length < chunk_bytes) {
          return protocol_error("put_begin gave a slot smaller than the chunk");
        }
        if (declares) {
          checksums[n_written] = cxlpool::copy_crc32c(slots[i].data, data[first + i], chunk_bytes);
        } else {
          std::memcpy(slots[i].data, data[first + i], chunk_bytes);
        }
        written[n_written++] = keys[first + i];
      }
      const uint32_t cached = count - n_written;
      // Every key cached: commit them all, which only ends the reservation.
      uint64_t round_on_ssd = 0;
      int committed = 0;
      if (n_written == 0) {
        committed = commit(s, ns_id, begin.result0, {keys + first, count}, flags, {}, nullptr);
      } else {
        committed = commit_declared(s, ns_id, begin.result0, {written, n_written}, flags,
                                    {checksums, declares ? n_written : 0}, &round_on_ssd);
      }
      // A commit that stores none of its chunks (their bytes changed under
      // the copy) is no failure of the put: they are simply not stored.
      if (committed == -EBADMSG) committed = 0;
      if (committed < 0) return committed;
      stored += cached + (n_written > 0 ? std::min<uint64_t>(static_cast<uint64_t>(committed), n_written) : 0);
      stored_on_ssd += round_on_ssd;
    }
    if (on_ssd != nullptr) *on_ssd = stored_on_ssd;
    return static_cast<int>(stored);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_get(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n,
                                  uint64_t* lease, cxlpool_kv_location* locs) {
  return guarded([&] {
    if (int rc = check_keys(kv, keys, n); rc != 0) return rc;
    if (lease == nullptr) return record(EINVAL, "lease is NULL");
    *lease = 0;
    if (n == 0) return 0;
    KvWaiter w;
    w.locations = locs;
    w.capacity = n;
    if (int rc = run(*session(kv), key_call(proto::KvOp::kGet, ns_id, keys, n), w); rc != 0) return rc;
    if (w.result1 > n || w.n_locations != w.result1 || (w.result1 > 0) != (w.result0 != 0)) {
      return protocol_error("get answer does not match its lease");
    }
    *lease = w.result0;
    return static_cast<int>(w.result1);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_release(cxlpool_kv* kv, uint64_t lease) {
  return guarded([&] {
    if (kv == nullptr) return record(EINVAL, "kv is NULL");
    if (lease == 0) return 0;  // what an empty get leases
    KvWaiter w;
    KvCall call;
    call.op = static_cast<uint8_t>(proto::KvOp::kRelease);
    call.param0 = lease;
    return run(*session(kv), call, w);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_release_nowait(cxlpool_kv* kv, uint64_t lease) {
  return guarded([&] {
    if (kv == nullptr) return record(EINVAL, "kv is NULL");
    if (lease == 0) return 0;
    KvSession& s = *session(kv);
    auto queued = s.release_nowait(lease);
    if (!queued) return record(queued.error());
    if (*queued) return 0;
    // The rings are full of other requests: wait for this one like
    // cxlpool_kv_release, but an unknown lease is still no error here.
    KvWaiter w;
    KvCall call;
    call.op = static_cast<uint8_t>(proto::KvOp::kRelease);
    call.param0 = lease;
    auto ok = s.call(call, w);
    if (!ok) return record(ok.error());
    return w.status == 0 || w.status == -ENOENT ? 0 : record_status(w);
  });
}

CXLPOOL_EXPORT int cxlpool_kv_prefetch(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n) {
  return counted_key_op(kv, proto::KvOp::kPrefetch, ns_id, keys, n);
}

CXLPOOL_EXPORT int cxlpool_kv_delete(cxlpool_kv* kv, uint64_t ns_id, const cxlpool_kv_key* keys, uint32_t n) {
  return counted_key_op(kv, proto::KvOp::kDelete, ns_id, keys, n);
}

CXLPOOL_EXPORT int cxlpool_kv_should_load(const cxlpool_kv* kv, const cxlpool_kv_load_query* query,
                                          cxlpool_kv_load_decision* out) {
  return guarded([&] {
    if (kv == nullptr || query == nullptr) return record(EINVAL, "NULL argument");
    auto decision = cxlpool::client::kv_decide_load(cxlpool::client::kv_tier_rates(session(kv)->info()), *query);
    if (!decision) return record(decision.error());
    if (out != nullptr) {
      *out = cxlpool_kv_load_decision{static_cast<uint32_t>(decision->load_chunks), decision->should_load ? 1 : 0,
                                      decision->recompute_tokens, decision->time_s, decision->full_recompute_s,
                                      decision->load_all_s};
    }
    return decision->should_load ? 1 : 0;
  });
}

}  // extern "C"
