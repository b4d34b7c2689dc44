// SPDX-License-Identifier: Apache-2.0
// The KV-cache store engine: chunks of prefix-keyed KV tensors over a DRAM
// arena, a CXL arena and an SSD log, shared by every client of one daemon.
// It is the daemon-independent core of cxlpoold's KV service: the daemon
// hands it its own mappings of the two arenas and of each client's put
// window, feeds it the requests taken from each client's ring and publishes
// what poll() returns. No sockets, no threads: unit tests drive it with plain
// buffers.
//
// Memory model. Each arena is cut into fixed slots of `slot_bytes`; a chunk
// takes one slot whatever its length (<= slot_bytes). Clients map the arenas
// (or, with a KvSlotMemory, the views of their namespaces) read-only, so a
// committed chunk is immutable for everyone. A request sees only chunks of
// its own namespace, whatever keys it sends. A put reserves
// slots in the client's private, writable put window (cut into slots the same
// way); the client writes the chunk there and commit copies it into a DRAM
// slot (one memcpy on the daemon's side buys isolation: no client can change
// a chunk another one reads).
//
// Tiers. Puts land in DRAM. When a tier needs a slot and has none free, its
// eviction policy (LRU or S3-FIFO) picks an unleased victim which moves down:
// DRAM -> CXL (copy) -> SSD (append to the log, only when the admission
// filter has seen the chunk at least `admission.threshold` times; otherwise
// it is dropped and counted as an admission reject). A chunk that already
// has an SSD copy is dropped from the arena without a second write. A get of
// a CXL chunk promotes it into DRAM when a DRAM slot can be had; a get of an
// SSD chunk reads it with one O_DIRECT read straight into a DRAM slot (a CXL
// slot when no DRAM slot can be had; the arenas are the device's registered
// buffers when it takes them and no KvSlotMemory stands for them; the request
// completes when the read does), and
// so does prefetch. Demotions append to the SSD log's region buffer; under
// the per-region policy full regions are written asynchronously (the caller
// keeps polling while io_in_flight() is non-zero) and a chunk whose region
// is still in flight is read from that buffer. Per-commit write-through and
// flush() are synchronous on the caller's thread.
//
// Durability. Under SsdSyncPolicy::kPerCommit a put_commit also writes each
// committed chunk through to the SSD log (admission bypassed) before it is
// acknowledged, so an acknowledged commit survives a crash. Under kPerRegion
// chunks reach the log by demotion or flush().
//
// Leases. A get pins the longest cached prefix of its keys and returns a
// lease id; pinned chunks are never moved or freed until release, until the
// client is removed, or until the lease outlives lease_timeout_ns and
// expire_leases() revokes it. Quota: bytes an account (a set of clients,
// one uid in the daemon) holds in leases plus put reservations are capped
// (kOverQuota). Admission sightings: a commit, a chunk
// leased by a get, a put_begin of an already cached key (not lookups).
//
// Outcomes. Every request ends with a KvStatus (kv_status.hpp) in its
// completion: a miss, a full window or a corrupt SSD record is an expected
// outcome, answered without allocating. The store never writes an errno;
// the daemon turns the status into the ring's `-errno` (to_errno()).
//
// Single-threaded: the daemon's event loop owns it. The one exception is
// the commit's copy: with commit_workers threads, a put_commit's chunks are
// copied from the put window into their DRAM slots by those threads (which
// touch nothing but the bytes), and the commit finishes -- indexed, written
// through, answered -- on the owner's thread in poll().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/counter_list.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/admission.hpp"
#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/kvcache/eviction.hpp"
#include "cxlpool/kvcache/kv_status.hpp"
#include "cxlpool/kvcache/load_cost.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"
#include "cxlpool/kvcache/tier.hpp"
#include "cxlpool/proto/kv_ring.hpp"

namespace cxlpool::kvcache {

using KvClientId = std::uint64_t;

struct KvStoreConfig {
  std::uint64_t slot_bytes = 2ull << 20;  // largest chunk; multiple of 4096
  EvictionKind eviction = EvictionKind::kLru;
  S3FifoConfig s3fifo;
  AdmissionConfig admission;               // SSD admission (threshold 2)
  // Chunks indexed over all tiers: at least the arenas' slots (more than
  // them with an SSD tier, whose own index capacity create() lowers to the
  // rest so that the index never fills).
  std::size_t index_capacity = 1u << 20;
  bool promote_on_get = true;              // CXL hit -> DRAM when a slot can be had
  // Leased + reserved bytes per account (all the clients added with one
  // account id, e.g. one uid); 0: unlimited.
  std::uint64_t client_quota_bytes = 0;
  std::uint32_t max_leases_per_client = 65536;
  // A lease older than this is revoked by expire_leases(); 0: never.
  std::uint64_t lease_timeout_ns = 0;
  // Monotonic nanoseconds for lease ages; empty: CLOCK_MONOTONIC.
  std::function<std::uint64_t()> clock;
  std::uint32_t max_namespaces = 1024;
  // Tier speeds for the lookup cut-off (KvRequest flag kKvLookupCostCutoff);
  // bandwidth 0 marks a tier absent.
  TierRates tier_rates;
  // Demoted chunks of at least this many bytes (whole 4 KiB blocks) are
  // written to the SSD log straight from their arena slot, which stays out
  // of use until the log's write of it completes (at most half of an
  // arena's slots at a time); smaller ones are copied into the log's region
  // buffer. 0: always copied.
  std::uint64_t ssd_lend_min_bytes = 256 * 1024;
  // Threads that copy committed chunks from the put windows into their DRAM
  // slots (at most kMaxCommitWorkers); the commit finishes on the caller's
  // thread in poll() once its copies are done (commit_fd() wakes it). 0:
  // the commit copies on the caller's thread and finishes at once.
  std::uint32_t commit_workers = 0;
  // With commit workers, a committed chunk of at least this many bytes
  // whose writer's window has room is answered once its CRC-32C is taken
  // (in pieces on the workers), and copied into its DRAM slot behind the
  // answer; the copy is checked against that CRC and the chunk dropped when
  // its writer changed the window slot meanwhile. Gets wait for the copy.
  // 0: every commit copies before it is answered.
  std::uint64_t copy_behind_min_bytes = 1ull << 20;
};

inline constexpr std::uint32_t kMaxCommitWorkers = 64;

// Per-namespace memory behind the arena slots (the daemon's per-namespace
// views, docs/kvstore.md "Isolation"): slot `offset` of a tier holds a chunk
// of namespace N in N's view at that offset, so a client maps only the views
// of namespaces it may read. Without one, slots are the arenas' own bytes.
class KvSlotMemory {
 public:
  virtual ~KvSlotMemory() = default;
  // The writable address of slot `offset` of `tier` in namespace ns_id's
  // view; the store only asks for namespaces whose chunks it holds, after
  // assign().
  virtual std::byte* slot(KvTier tier, std::uint64_t offset, std::uint32_t ns_id) = 0;
  // The slot is about to receive a chunk of ns_id: memory another namespace
  // had behind it must go (that namespace's readers then see zeros there).
  virtual void assign(KvTier tier, std::uint64_t offset, std::uint32_t ns_id) = 0;
};

// The daemon's writable mappings of the arenas. `dram` is required; `cxl`
// may be empty (no CXL tier). Both 4096-aligned, sizes multiples of slot_bytes
// (a remainder is unused). With `memory`, the spans give the arenas' sizes
// only: every slot access goes through it, and each slot is registered
// with the SSD device on its own, in the view of the namespace that claims
// it (registered buffers pin the pages they cover, and a slot's pages
// change when it passes to another namespace).
struct KvArenas {
  std::span<std::byte> dram;
  std::span<std::byte> cxl;
  KvSlotMemory* memory = nullptr;  // not owned; outlives the store
};

// One finished request, to be published on the client's completion ring.
struct KvStoreCompletion {
  KvClientId client = 0;
  KvOutcome outcome;                      // the request's result
  // request_id, op, result0..2. `status` is left 0: it is the wire's, which
  // the daemon writes from `outcome` (-to_errno(outcome)); count and
  // arg_offset are the ring's.
  proto::KvCompletion completion;
  std::vector<proto::KvLocation> locations;
};

struct KvNamespaceInfo {
  std::uint32_t id = 0;
  NamespaceFingerprint fp;
  NamespaceSpec spec;        // spec.model_id empty: known only from SSD recovery
  bool recovered_only = false;
  std::uint64_t chunks[kKvTierCount] = {};
  std::uint64_t bytes[kKvTierCount] = {};
};

// The counters, each with the name the daemon exports it under (after its
// "kv." or "kv.tier.<tier>." prefix), in export order.
// clang-format off
#define CXLPOOL_KV_TIER_COUNTERS(X)                            \
  X(capacity_bytes,      "capacity_bytes")                     \
  X(used_bytes,          "used_bytes")                         \
  X(chunks,              "chunks")                             \
  X(hits,                "hits")                               \
  X(misses,              "misses")                             \
  X(evictions,           "evictions")                          \
  X(promotions,          "promotions")                         \
  X(demotions,           "demotions")                          \
  X(admissions_rejected, "admissions_rejected") /* ssd only */ \
  X(bytes_written,       "bytes_written")                      \
  X(bytes_read,          "bytes_read")                         \
  X(errors,              "errors")

#define CXLPOOL_KV_STORE_COUNTERS(X)                                                    \
  X(lookups,           "lookups")                                                       \
  X(lookup_keys,       "lookup_keys")                                                   \
  X(lookup_hits,       "lookup_hits")                                                   \
  X(gets,              "gets")                                                          \
  X(puts,              "puts")                                                          \
  X(put_aborts,        "put_aborts")                                                    \
  X(prefetches,        "prefetches")                                                    \
  X(deletes,           "deletes")                                                       \
  X(leases,            "leases")                                                        \
  X(leased_bytes,      "leased_bytes")                                                  \
  X(reservations,      "reservations")                                                  \
  X(quota_rejections,  "quota_rejections")                                              \
  X(leases_expired,    "leases_expired")    /* revoked by expire_leases() */            \
  X(rejected_requests, "rejected_requests") /* answered with a status other than kOk */ \
  X(commit_copies_offloaded, "commit_copies_offloaded") /* copies (chunks or pieces) handed to commit workers */ \
  X(commits_in_flight, "commits_in_flight") /* commits waiting for their copies (gauge) */ \
  X(puts_to_ssd,       "puts_to_ssd")       /* chunks committed to the SSD log only (kKvPutCommitToSsd) */ \
  X(window_lends,      "window_lends")      /* of those, written from the put window without a copy */ \
  X(window_reclaims,   "window_reclaims")   /* lent window slots copied into the log's buffer early (full window, client gone) */ \
  X(puts_copied_behind, "puts_copied_behind") /* chunks whose commits were answered before their DRAM copy */ \
  X(copies_behind_in_flight, "copies_behind_in_flight") /* of those, copies not in yet (gauge) */ \
  X(put_window_changed, "put_window_changed") /* of those, dropped: the window slot changed after the commit */ \
  X(put_checksum_mismatch, "put_checksum_mismatch") /* chunks not stored: their bytes did not match the declared CRC */ \
  X(ssd_registrations, "ssd_registrations") /* slots (in a namespace's view) and put windows registered with the SSD device */ \
  X(ssd_registration_errors, "ssd_registration_errors") /* registrations the device refused: at start, a tier's slot, a window slot (that memory's SSD I/O goes unregistered) */
// clang-format on

struct KvTierCounters {
  CXLPOOL_KV_TIER_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_KV_TIER_COUNTERS)
};

struct KvStoreCounters {
  CXLPOOL_KV_STORE_COUNTERS(CXLPOOL_COUNTER_MEMBER)
  CXLPOOL_COUNTER_VISIT(CXLPOOL_KV_STORE_COUNTERS)
  std::uint64_t outcomes[kKvStatusCount] = {};  // completions per KvStatus (index: its value)
  KvTierCounters tiers[kKvTierCount];
};

// A chunk pinned for a peer daemon's one-sided read (docs/pods.md, "Remote
// KV get"): where it is and its CRC-32C when the store took one as it was
// written (crc_known).
struct KvPeerPin {
  KvTier tier = KvTier::kDram;
  std::uint32_t ns_id = 0;
  std::uint64_t offset = 0;  // arena slot offset
  std::uint32_t length = 0;
  std::uint32_t crc = 0;
  bool crc_known = false;
  bool loaded = false;  // read from the SSD tier into its arena slot for this pin
};

// A peer's pin that waited for SSD reads (KvStore::pin_for_peer_loading).
struct KvPeerLoad {
  std::uint64_t ticket = 0;
  std::vector<proto::KvKey> keys;  // the prefix pinned, in order
  std::vector<KvPeerPin> pins;     // pins[i] is keys[i]'s
};

struct KvDropResult {
  std::uint64_t dropped = 0;
  std::uint64_t deferred = 0;
};

class KvStore {
 public:
  // EINVAL: commit_workers above kMaxCommitWorkers, slot_bytes not a
  // positive multiple of 4096, a DRAM arena smaller
  // than one slot or misaligned, bad admission/eviction config, negative tier
  // rates, index_capacity below the arenas' slot count (or equal to it with
  // an SSD tier), max_leases_per_client or max_namespaces 0. `ssd` may be
  // null (no SSD tier); when given, its recovered entries are indexed as SSD
  // chunks (namespaces known only by fingerprint until a client opens them).
  static Result<std::unique_ptr<KvStore>> create(const KvStoreConfig& config, KvArenas arenas,
                                                 std::unique_ptr<SsdStore> ssd);
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // The same spec always gets the same id (also one recovered from SSD by
  // fingerprint). EINVAL: empty model_id/layout/dtype, tp_rank >= tp_size,
  // chunk_tokens 0; ENOSPC: max_namespaces reached.
  Result<std::uint32_t> open_namespace(const NamespaceSpec& spec);
  [[nodiscard]] std::vector<KvNamespaceInfo> namespaces() const;
  // Ids run from 1 to this count, recovered and opened ones alike.
  [[nodiscard]] std::uint32_t namespace_count() const;
  // Erases the namespace's chunks on every tier (SSD tombstones included);
  // leased ones go at their last release. The id stays valid. ENOENT:
  // unknown id; a device error writing tombstones (the index is dropped
  // already; chunks whose tombstone was not written may return at restart).
  Result<KvDropResult> drop_namespace(std::uint32_t ns_id);

  // A client and its put window (the daemon's writable mapping of it, cut
  // into slot_bytes slots; empty: the client cannot put), charged to
  // `account`: clients sharing an account share one client_quota_bytes.
  // Without an account the client is its own. EEXIST if known, or removed
  // while the SSD log still writes from its window.
  Result<void> add_client(KvClientId client, std::span<std::byte> put_window);
  Result<void> add_client(KvClientId client, std::span<std::byte> put_window, std::uint64_t account);
  // The same, with what keeps put_window mapped: the store holds a reference
  // to it while the SSD log holds chunks that it writes straight from the
  // window (put_commit with kKvPutCommitToSsd), after remove_client too,
  // until their region's write completes. Without an owner, such chunks are
  // copied into the log's buffer instead.
  Result<void> add_client(KvClientId client, std::span<std::byte> put_window, std::uint64_t account,
                          std::shared_ptr<const void> window_owner);
  // Releases its leases, aborts its reservations, forgets its pending
  // requests (their completions are never returned). Commits whose copies
  // are in flight are aborted: queued copies are dropped and running ones
  // waited for (one chunk per commit worker at most), so that the store
  // never touches the put window once this returns, but for the window
  // slots the SSD log writes from (kept mapped by the window's owner, see
  // add_client). Unknown: no-op.
  void remove_client(KvClientId client);

  // Handles one request taken from the client's ring (keys already copied
  // out and the request checked by kv_request_well_formed; `refused` other
  // than kOk means the daemon refused it already, kInvalid when malformed,
  // kDenied without the namespace right, and it is answered with that
  // status). Most requests finish at once; gets and prefetches of SSD chunks
  // finish when their reads do. Either way the result comes out of poll().
  // Semantics per op (the wire's errno in parentheses):
  // Every op but release answers kNotFound (ENOENT) for an unknown
  // namespace_id, and a client never added gets kNotFound for everything;
  // an unknown op gets kInvalid (EINVAL).
  //   lookup     result0 = cached prefix length; locations of the prefix
  //              (ssd entries have tier 2 and offset 0); with
  //              kKvLookupCostCutoff, param0 = prompt tokens and param1 =
  //              declared prefill tokens/s, result1 = chunks worth loading
  //              (kInvalid when decide_load refuses the question). A miss
  //              is kOk with result0 = 0.
  //   put_begin  param0 = bytes per chunk (1..slot_bytes); reserves one put
  //              window slot per key: result0 = reservation id, locations in
  //              the put window (tier kKvLocationPutWindow); a key already
  //              cached gets flag kKvLocationCached (nothing to write).
  //              kRetry (EAGAIN): window full (or max_leases_per_client
  //              reservations open); kOverQuota (EDQUOT); kTooLarge
  //              (EMSGSIZE): param0 > slot_bytes; kInvalid (EINVAL): param0
  //              0 or a key twice; kNotPermitted (EPERM): no put window.
  //   put_commit param0 = reservation id; keys = the reserved keys to keep
  //              (any subset, in any order); the rest are dropped and the
  //              reservation ends. result0 = chunks committed (a key stored
  //              meanwhile counts). kNotFound: unknown reservation;
  //              kInvalid: a key not in it or twice (the reservation stays).
  //              A chunk that finds no DRAM slot (all leased; without
  //              commit workers also: taken by copies in flight or lent
  //              to the SSD log) or fails its
  //              per-commit SSD write is not committed: kOk with a smaller
  //              result0, or, when none was, the first chunk's outcome:
  //              kRejected (ENOSPC), kDeviceError (the device's errno),
  //              kNotFound (a cached key gone meanwhile).
  //              With commit_workers, the chunks' copies run on those
  //              threads (but the first one's, on the caller's thread,
  //              when no other copy is out) and the commit finishes in a
  //              later poll(): until then its chunks are in no index
  //              (lookups and gets miss them), their DRAM slots are no
  //              eviction's victims and its put-window slots and quota
  //              stay held. A chunk that finds no DRAM slot at submit is
  //              tried again, copied on the caller's thread, when the
  //              others are in; if it still finds none while slots are
  //              out that come back by themselves (other commits' copies
  //              in flight, slots lent to the SSD log; those of its open
  //              region are copied into its buffer and freed at once),
  //              the commit waits for them (each poll() tries again;
  //              flush() answers it with what it then finds).
  //              With kKvPutCommitToSsd and an SSD log, the chunks go to
  //              the log only, not into DRAM: result1 = chunks stored so.
  //              Under kPerRegion, a chunk of at least ssd_lend_min_bytes
  //              in whole 4 KiB blocks of a client with a window owner is
  //              not copied at all: its CRC32C is taken (on the commit
  //              workers, in pieces) and the log writes it from the put
  //              window with its region; the window slot stays taken
  //              until that write completes, and a get before then copies
  //              from the window and checks the copy against the CRC
  //              (on a mismatch the chunk is dropped and the get's
  //              prefix ends before it, as for a chunk deleted
  //              meanwhile). Other chunks are copied into the log's
  //              buffer (under kPerCommit: written and synced before the
  //              answer). A put_begin that finds the window full while
  //              all of the client's lent slots wait for the log's open
  //              region has the log copy them into its buffer, which frees
  //              them (kRetry if that is still not room enough); so does
  //              remove_client.
  //              Without an SSD log the flag is ignored (result1 = 0).
  //              With kKvPutCommitChecksums the writer declares each
  //              chunk's CRC-32C (records after the keys). A chunk copied
  //              behind the answer then needs no CRC pass before it: its
  //              copy checks the declared CRC. Wherever the store takes a
  //              chunk's CRC anyway (that copy, a copy into a DRAM slot
  //              the SSD log may borrow, a chunk for the SSD log) a chunk
  //              that does not match is not stored (kChecksumError when
  //              no chunk is committed; put_checksum_mismatch); a copy
  //              that takes no CRC (DRAM only, before the answer) ignores
  //              it: the chunk is then the store's own copy.
  //   get        pins the longest cached prefix: result0 = lease id (0 when
  //              the prefix is empty: a miss is kOk), result1 = chunks
  //              leased, locations in the arenas. kOverQuota /
  //              kTooManyLeases (EMFILE). An SSD chunk that finds no free
  //              arena slot ends the prefix; a failed read (kDeviceError,
  //              kChecksumError: EBADMSG) fails the whole get and takes that
  //              chunk out of the index.
  //   release    param0 = lease id. kNotFound: unknown (or another client's).
  //   prefetch   result0 = SSD chunks of the cached prefix queued for DRAM
  //              (finishes at once).
  //   delete     result0 = chunks deleted (leased ones go at release).
  void submit(KvClientId client, const proto::KvRequest& request, std::span<const proto::KvKey> keys,
              KvStatus refused = KvStatus::kOk);

  // Revokes every lease older than lease_timeout_ns (none when it is 0):
  // its chunks are unpinned (evictable again), its bytes leave the owner's
  // quota, and a later release of it answers ENOENT like an unknown lease.
  // The client's mapping still shows the slots, whose contents may change
  // from then on. Returns how many were revoked (counted in leases_expired).
  std::size_t expire_leases();

  // Moves finished requests to `out` (appends); reaps SSD reads without
  // waiting and resets completion_fd(), and finishes the commits whose
  // copies are done. Returns how many were appended.
  std::size_t poll(std::vector<KvStoreCompletion>& out);
  // SSD reads and region writes in flight: while non-zero the daemon must
  // keep polling (the device's completion_fd() wakes it when it has one).
  [[nodiscard]] std::size_t io_in_flight() const;
  // The SSD device's completion eventfd, or -1 (none, or no SSD tier).
  [[nodiscard]] int completion_fd() const;
  // Commits whose copies run on the commit workers (their completions come
  // out of a later poll()).
  [[nodiscard]] std::size_t commits_in_flight() const;
  // Whether copies run on the commit workers: commits in flight, or copies
  // behind answered commits (copy_behind_min_bytes). poll() takes them back.
  [[nodiscard]] bool copies_in_flight() const;
  // While held, the commit workers leave copies behind answered commits
  // queued (a put_begin that needs their window slots, or flush(), runs
  // them on the caller's thread). A seam for tests that must see a chunk
  // whose copy is not in yet.
  void hold_copies_behind(bool held);
  // An eventfd that turns readable when commit copies finished (poll() then
  // finishes their commits), or -1 without commit_workers. The caller may
  // read it to reset it; poll() does too.
  [[nodiscard]] int commit_fd() const;
  // The commit copy threads running (0: the caller's thread copies).
  [[nodiscard]] std::uint32_t commit_workers() const;
  // Runs up to `max` commit copies that no worker took yet on the caller's
  // thread (and copies behind answered commits that a get waits for, never
  // the other background ones); the next poll() finishes their commits. For a caller with
  // nothing else to do (no request waiting): a copy then does not wait for
  // a worker to be scheduled (on a loaded host, or one with few cores, a
  // wake-up can take longer than the copy). Returns how many ran.
  std::size_t run_commit_copies(std::size_t max);

  // Finishes the commits in flight (waiting for their copies), then writes
  // every arena chunk the SSD log lacks to it (admission bypassed),
  // seals the log's open region (per-region durability) and waits for reads,
  // so that a restart finds what the arenas held. Call at shutdown.
  Result<void> flush();

  // --- Chunks that move between the daemons of a pod (kv_peers.cpp).
  // How many leading keys namespace ns_id holds on any tier; counts nothing.
  [[nodiscard]] std::size_t cached_prefix(std::uint32_t ns_id, std::span<const proto::KvKey> keys) const;
  // The id of the namespace with this fingerprint, when the store knows it.
  [[nodiscard]] std::optional<std::uint32_t> namespace_of(const NamespaceFingerprint& fp) const;
  [[nodiscard]] std::optional<NamespaceFingerprint> fingerprint_of(std::uint32_t ns_id) const;
  // The namespace with this fingerprint, created when the store has none:
  // known only by its fingerprint (as one recovered from the SSD log) until
  // a client opens its spec. For chunks a peer asks this store to keep a
  // copy of. nullopt: max_namespaces are open.
  std::optional<std::uint32_t> namespace_for_peer(const NamespaceFingerprint& fp);
  // Pins chunk `key` of namespace ns_id where it lies in an arena, so that
  // a peer can read it: it is neither moved nor freed until
  // unpin_for_peer(). kNotFound when absent, of another namespace, or only
  // on SSD.
  KvResult<KvPeerPin> pin_for_peer(std::uint32_t ns_id, const proto::KvKey& key);
  void unpin_for_peer(const proto::KvKey& key);
  // Pins for a peer the longest prefix of `keys` that namespace ns_id holds
  // on any tier: arena chunks at once, chunks only on SSD once the same
  // asynchronous reads a get uses brought them into free arena slots (DRAM,
  // else CXL; a read already in flight for a get is shared). A chunk that
  // finds no slot, or whose read fails (a CRC-32C mismatch, a device
  // error: the chunk leaves the index as for a get), ends the prefix there.
  // Returns a ticket (never 0); the answer, possibly empty, comes out of
  // take_peer_loads() with it -- at once when no read was needed. Every
  // chunk in it is pinned until unpin_for_peer().
  std::uint64_t pin_for_peer_loading(std::uint32_t ns_id, std::span<const proto::KvKey> keys);
  // Appends the peers' pins whose reads finished (poll() reaps the reads).
  void take_peer_loads(std::vector<KvPeerLoad>& out);
  // A free DRAM slot, claimed for a chunk of ns_id that is being read from
  // a peer (evicting as a commit would); kRejected when every DRAM chunk is
  // leased. Until commit_fetch_slot() or cancel_fetch_slot() the slot is in
  // no index and no other chunk takes it.
  KvResult<std::uint64_t> reserve_fetch_slot(std::uint32_t ns_id);
  // The chunk arrived whole in the reserved slot: it is indexed as a DRAM
  // chunk. When the key was stored meanwhile the slot goes back (kOk).
  KvStatus commit_fetch_slot(std::uint32_t ns_id, const proto::KvKey& key, std::uint64_t offset,
                             std::uint32_t length, std::uint32_t crc);
  void cancel_fetch_slot(std::uint64_t offset);

  [[nodiscard]] const KvStoreCounters& counters() const;  // refreshed on every call
  [[nodiscard]] const KvStoreConfig& config() const { return config_; }
  [[nodiscard]] bool has_tier(KvTier tier) const;
  [[nodiscard]] std::uint64_t ssd_durable_sequence() const;
  // The SSD log's own counters and region writes in flight; null / 0
  // without an SSD tier.
  [[nodiscard]] const SsdStoreStats* ssd_stats() const;
  // Why the SSD device last refused to register memory (counted in
  // ssd_registration_errors); empty while it never has.
  [[nodiscard]] const std::string& ssd_registration_refusal() const;
  [[nodiscard]] std::size_t ssd_writes_in_flight() const;
  [[nodiscard]] std::size_t index_capacity() const;

 private:
  struct Impl;
  explicit KvStore(const KvStoreConfig& config);
  KvStoreConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cxlpool::kvcache
