// SPDX-License-Identifier: Apache-2.0
// KvStore's state and the helpers its source files share. Each file holds
// one job: kv_store.cpp (creation, counters, flush), kv_namespaces.cpp,
// kv_clients.cpp (clients, leases, quota), kv_tiers.cpp (slots, eviction,
// demotion, promotion), kv_requests.cpp (lookup, get, release, prefetch,
// delete), kv_put.cpp (put_begin, put_commit and the commits whose copies
// run on commit_copier.hpp's workers), kv_loads.cpp (SSD reads into
// arena slots, gets waiting for them, poll).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cxlpool/kvcache/admission.hpp"
#include "cxlpool/kvcache/eviction.hpp"
#include "cxlpool/kvcache/index.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "commit_copier.hpp"
#include "lease_table.hpp"
#include "slot_pool.hpp"

namespace cxlpool::kvcache {

inline ChunkKey to_chunk_key(const proto::KvKey& k) { return ChunkKey{k.hi, k.lo}; }

inline std::size_t tier_index(KvTier t) { return static_cast<std::size_t>(t); }

struct FingerprintHash {
  std::size_t operator()(const NamespaceFingerprint& f) const noexcept {
    return f.lo ^ (f.hi * 0x9E3779B97F4A7C15ULL);
  }
};

// The DRAM or CXL arena: slots and the policy that picks what leaves.
struct ArenaTier {
  std::span<std::byte> bytes;
  SlotPool slots;
  std::unique_ptr<EvictionPolicy> policy;
  [[nodiscard]] bool present() const { return slots.capacity() != 0; }
};

struct NamespaceState {
  NamespaceFingerprint fp;
  NamespaceSpec spec;
  bool recovered_only = false;
};

struct ReservedChunk {
  ChunkKey key;
  std::uint64_t window_offset = 0;
  bool cached = false;  // already stored at put_begin: no window slot
  bool lent = false;    // committed to the SSD log from its window slot, which the log holds
  bool filling = false; // committed; its copy into DRAM runs behind the answer, from the window slot
  // The commit carried the writer's CRC-32C of the chunk (kKvPutCommitChecksums):
  // the chunk is stored only if the bytes copied out of the slot match it.
  bool declared = false;
  std::uint32_t declared_crc = 0;
};

struct Reservation {
  std::uint32_t ns_id = 0;
  std::uint32_t chunk_bytes = 0;
  std::uint64_t held_bytes = 0;  // counted in the client's quota
  std::vector<ReservedChunk> chunks;
};

// What the quota is charged to: one account per uid in the daemon, shared
// by all of its connections so that more connections do not mean more quota.
struct AccountState {
  std::uint64_t held_bytes = 0;  // the sum of its clients' held_bytes
  std::uint32_t clients = 0;
};

struct ClientState {
  AccountState* account = nullptr;  // node of Impl::accounts: stable while the client lives
  std::uint64_t account_id = 0;
  std::span<std::byte> window;
  SlotPool window_slots;
  std::unordered_map<std::uint64_t, Reservation> reservations;
  std::uint64_t held_bytes = 0;  // leases (and gets waiting for SSD reads) plus reservations
  std::uint32_t leases = 0;      // the same, counted
  // Keeps `window` mapped (add_client); null: its slots are never lent.
  std::shared_ptr<const void> window_owner;
  // Per window slot, its registered buffer with the SSD device
  // (kNoRegisteredBuffer: none yet); empty until the first lend.
  std::vector<std::int32_t> window_places;
  std::uint32_t window_lent = 0;  // window slots the SSD log writes from
  std::uint32_t window_fills = 0;  // window slots copies behind answered commits read from
};

// A removed client's put window whose slots the SSD log still writes from.
struct RetiredWindow {
  std::shared_ptr<const void> owner;
  std::uint32_t lent = 0;
  std::vector<std::int32_t> places;  // registered until the last lend is back
};

// A put-window slot lent to the SSD log, by lend token.
struct WindowLend {
  KvClientId client = 0;
  std::uint64_t window_offset = 0;
};

// Lend tokens of window slots carry this bit; an arena slot's token is its
// offset and tier, far below it.
inline constexpr std::uint64_t kWindowLendToken = std::uint64_t{1} << 63;

// A committed chunk being copied from its put-window slot into DRAM slot
// `offset` behind its commit's answer (KvStoreConfig::copy_behind_min_bytes).
// Indexed with kChunkFilling and pinned once by the copy; its Load in
// `loads` holds the gets waiting for it.
struct Fill {
  KvClientId client = 0;
  std::uint64_t window_offset = 0;
  // Keeps the window mapped should its client go before the copy is in.
  std::shared_ptr<const void> window_owner;
  ChunkKey key;
  std::uint64_t offset = 0;  // the DRAM slot
  std::uint32_t bytes = 0;
  std::uint32_t crc = 0;  // taken from the window before the commit's answer, or declared by the writer
  bool declared = false;  // crc is the writer's (kKvPutCommitChecksums), not the daemon's
  std::uint32_t piece_bytes = 0;
  std::uint16_t pieces_left = 0;
  std::array<std::uint32_t, kMaxCopyPieces> piece_crcs{};
  // Deleted before the copy was in (abandon_fill): the index entry and the
  // Load are gone already; the slot goes back when the copy is.
  bool abandoned = false;
};

// CopyJob::commit of a fill's pieces carries this bit over the fill's id;
// CopyJob::owner is kFillOwner, which no client's cancel names: a fill
// finishes even when its writer goes.
inline constexpr std::uint64_t kFillJob = std::uint64_t{1} << 63;
inline constexpr std::uint64_t kFillOwner = ~std::uint64_t{0};

// One kept chunk of a commit whose copies run on the commit workers.
struct CommitChunk {
  enum class State : std::uint8_t {
    kStored,   // stored before the commit (maybe by another client): counts
    kSettled,  // settled at submit: `outcome` says whether it counts
    kCopying,  // its copy into DRAM slot `offset` runs on a worker (to_ssd: its CRC is taken)
    kCopied,   // that copy finished (crc taken when the slot may be lent)
    kDeferred  // found no DRAM slot: committed on the loop at the end
  };
  State state = State::kStored;
  bool to_ssd = false;  // goes to the SSD log only (kKvPutCommitToSsd): no DRAM slot
  bool behind = false;  // only its CRC is taken before the answer; copied behind it (Fill)
  std::uint32_t reserved = 0;  // index in the reservation's chunks
  KvOutcome outcome;
  std::uint64_t offset = 0;
  std::uint32_t crc = 0;
  // Its copy's pieces still on the workers, and each piece's CRC (combined
  // in order once the last is back).
  std::uint16_t pieces_left = 0;
  std::array<std::uint32_t, kMaxCopyPieces> piece_crcs{};
};

// A put_commit whose copies are in flight. Its reservation left the
// client's map (a second commit of it is kNotFound) but keeps its
// put-window slots and quota until the commit finishes.
struct PendingCommit {
  KvClientId client = 0;
  proto::KvRequest request;
  Reservation reservation;
  std::vector<CommitChunk> chunks;  // the kept keys, in the request's order
  std::size_t copies_left = 0;   // copy jobs (pieces) not yet back
  std::uint32_t piece_bytes = 0;  // copy_piece_bytes() of the chunks
  bool crc = false;  // the copies take the payloads' CRC
  std::uint64_t on_ssd = 0;  // chunks settled at submit on the SSD log only
  // Its copies are back but a deferred chunk still finds no DRAM slot while
  // some will come back: poll() tries again (retry_waiting_commits).
  bool waits_for_slots = false;
};

// A get whose prefix holds SSD chunks: it completes when their reads do.
struct PendingGet {
  KvClientId client = 0;
  std::uint64_t request_id = 0;
  std::uint64_t held_bytes = 0;    // charged at submit for the whole prefix
  std::vector<ChunkKey> keys;      // the prefix found at submit
  std::vector<std::uint8_t> pinned;
  std::size_t loads_left = 0;
  KvOutcome failed;                // the first failed read's outcome (kOk: none)
  // A peer's pin (pin_for_peer_loading), not a client's get: no lease, no
  // quota; a failed read only ends its prefix, and the pins go to
  // peer_loads_done.
  bool for_peer = false;
  std::uint32_t ns_id = 0;
};

// pinned[] of a peer's PendingGet: how the chunk came to be pinned.
inline constexpr std::uint8_t kPinnedResident = 1;
inline constexpr std::uint8_t kPinnedLoaded = 2;  // read from SSD for it

// One SSD read into an arena slot, for gets waiting on it and/or a prefetch.
struct Load {
  KvTier tier = KvTier::kDram;     // where the slot is
  std::uint64_t offset = 0;
  std::uint32_t ns_id = 0;         // whose view the read lands in
  std::uint64_t fill = 0;          // a copy behind an answered commit (its Fill's id), not an SSD read
  bool submitted = false;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> waiters;  // (pending get, index in its prefix)
};

struct KvStore::Impl {
  KvStoreConfig config;
  ArenaTier arenas[2];  // kDram, kCxl
  KvSlotMemory* memory = nullptr;  // per-namespace views, or null: the arenas' bytes
  ChunkIndex index;
  AdmissionFilter admission;
  PinnedFn pinned;

  std::vector<NamespaceState> namespaces;  // id = position + 1
  std::unordered_map<NamespaceFingerprint, std::uint32_t, FingerprintHash> ns_by_fp;

  std::unordered_map<KvClientId, ClientState> clients;
  std::unordered_map<std::uint64_t, AccountState> accounts;
  LeaseTable leases;
  std::uint64_t next_reservation = 1;
  std::uint64_t reservations_live = 0;
  std::uint64_t leased_bytes = 0;

  std::unordered_map<ChunkKey, Load, ChunkKeyHash> loads;
  std::deque<ChunkKey> unsubmitted;  // loads waiting for device queue room
  std::unordered_map<std::uint64_t, PendingGet> pending_gets;
  std::uint64_t next_pending = 1;
  std::vector<KvPeerLoad> peer_loads_done;  // peers' pins whose reads finished

  std::vector<KvStoreCompletion> ready;
  std::vector<ChunkKey> ssd_evicted;  // filled by the SSD store's listener
  bool ssd_touched = false;           // the completion eventfd may be signalled
  // Arenas registered with the SSD device as fixed buffers, cut into pieces
  // of fixed_piece bytes (whole slots, at most 1 GiB each): the registered
  // buffer of an arena offset is fixed_base[tier] + offset / fixed_piece.
  // With per-namespace memory each slot is its own piece, registered as the
  // view of the namespace that claimed it last (slot_holder, 0: none yet).
  // Put-window slots take places from free_window_places
  // (kv_registered_buffers.cpp).
  std::int32_t fixed_base[2] = {hal::kNoRegisteredBuffer, hal::kNoRegisteredBuffer};
  std::uint64_t fixed_piece = 0;
  std::vector<std::uint32_t> slot_holder[2];
  std::vector<std::int32_t> free_window_places;
  bool windows_unregistered = false;  // the device refused a window slot: no more tries
  // The device's reason for the last registration it refused (the kernel's
  // errno, and for RLIMIT_MEMLOCK the limit): the daemon logs it.
  std::string ssd_registration_refusal;
  void registration_refused(const Error& why);
  bool closing = false;  // set as the store is destroyed (its members go after)
  // Arena slots lent to the SSD log (demoted chunks written from their slot,
  // SsdStore::put_lent), per tier: taken out of use until the log hands them
  // back. At most half of an arena's slots, so that evictions find victims.
  std::uint64_t lent_slots[2] = {0, 0};
  // Put-window slots lent to the SSD log (put_commit to the log), and the
  // windows of removed clients that still hold some: their owners keep them
  // mapped until the log is done. Declared before `ssd`, which hands every
  // lent slot back when it is destroyed.
  std::unordered_map<std::uint64_t, WindowLend> window_lends;
  std::uint64_t next_window_lend = kWindowLendToken;
  std::unordered_map<KvClientId, RetiredWindow> retired_windows;

  std::uint64_t next_sequence = 1;
  KvStoreCounters counters;  // request and movement counts; tier gauges filled in on read

  // Scratch reused by every request (the store is single-threaded).
  std::vector<ChunkKey> scratch_keys;
  std::vector<std::uint32_t> scratch_checksums;  // a put_commit's declared CRCs (kKvPutCommitChecksums), or none
  std::vector<ChunkEntry> scratch_entries;
  std::vector<std::uint8_t> scratch_marks;
  std::vector<SsdGetRequest> scratch_gets;
  std::vector<SsdGetCompletion> scratch_done;
  std::vector<CachedChunk> scratch_chunks;
  std::vector<ChunkKey> scratch_sorted;
  std::vector<std::uint32_t> scratch_index;

  // Commits whose copies run on the commit workers, by commit id.
  std::unordered_map<std::uint64_t, PendingCommit> commits;
  std::uint64_t next_commit = 1;
  std::size_t copies_out = 0;  // handed to the copier, not yet taken back (or dropped)
  std::size_t commits_waiting = 0;  // commits with waits_for_slots
  std::vector<CopyJob> scratch_jobs;
  std::vector<CopyJob> scratch_copied;
  std::vector<CopyJob> scratch_fill_jobs;
  // Copies behind answered commits, by fill id.
  std::unordered_map<std::uint64_t, Fill> fills;
  std::uint64_t next_fill = 1;
  std::size_t fill_copies_out = 0;  // of copies_out, the fills' pieces

  // Declared late: destroyed early, so its pending reads finish while the
  // rest is still there.
  std::unique_ptr<SsdStore> ssd;
  // Declared last: its threads are joined first (they write into arena
  // slots from put windows, both mapped by the store's owner).
  std::unique_ptr<CommitCopier> copier;

  Impl(const KvStoreConfig& c, std::size_t index_capacity);
  ~Impl() { closing = true; }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // --- tiers (kv_tiers.cpp)
  ArenaTier& arena(KvTier t) { return arenas[tier_index(t)]; }
  // Slot `offset` of tier t as namespace ns_id's chunks are stored in it.
  std::byte* slot_ptr(KvTier t, std::uint64_t offset, std::uint32_t ns_id) {
    return memory != nullptr ? memory->slot(t, offset, ns_id) : arena(t).bytes.data() + offset;
  }
  // Before a chunk of ns_id is written into a slot.
  void claim_slot(KvTier t, std::uint64_t offset, std::uint32_t ns_id) {
    if (memory == nullptr) return;
    memory->assign(t, offset, ns_id);
    if (fixed_base[tier_index(t)] != hal::kNoRegisteredBuffer &&
        slot_holder[tier_index(t)][offset / fixed_piece] != ns_id) {
      register_slot(t, offset, ns_id);
    }
  }
  // The registered buffer for SSD I/O on slot `offset` of tier t holding a
  // chunk of ns_id; kNoRegisteredBuffer when there is none.
  [[nodiscard]] std::int32_t slot_buffer(KvTier t, std::uint64_t offset, std::uint32_t ns_id) const {
    const std::size_t ti = tier_index(t);
    if (fixed_base[ti] == hal::kNoRegisteredBuffer) return hal::kNoRegisteredBuffer;
    const std::uint64_t piece = offset / fixed_piece;
    if (memory != nullptr && slot_holder[ti][piece] != ns_id) return hal::kNoRegisteredBuffer;
    return fixed_base[ti] + static_cast<std::int32_t>(piece);
  }
  // A free slot of tier t, evicting (and demoting) an unleased chunk if
  // needed; nullopt when every resident chunk is leased or loading.
  std::optional<std::uint64_t> acquire_slot(KvTier t);
  bool evict_one(KvTier t);
  void demote(KvTier from, const ChunkEntry& e);
  void demote_to_ssd(KvTier from, const ChunkEntry& e);
  // The chunk left the index for good: give its arena slot back.
  void forget_resident(const ChunkEntry& e);
  // CXL -> DRAM for a chunk pinned once (by the caller); keeps the pin.
  void promote(const ChunkKey& key);
  [[nodiscard]] bool has_ssd_copy(const ChunkKey& key) const { return ssd && ssd->contains(key); }
  KvOutcome write_to_ssd(const ChunkEntry& e, std::span<const std::byte> bytes);
  // Writes an arena chunk to the log, lending its slot when it can; true when
  // the slot was lent (the log gives it back through return_lent_slot).
  KvResult<bool> lend_to_ssd(KvTier from, const ChunkEntry& e);
  // Whether a demotion may write a chunk of `bytes` to the SSD log from its
  // arena slot (the log then needs its CRC), arena room for lending aside.
  [[nodiscard]] bool lends_to_ssd(std::uint64_t bytes) const {
    return ssd && ssd->config().sync == SsdSyncPolicy::kPerRegion && config.ssd_lend_min_bytes != 0 &&
           bytes >= config.ssd_lend_min_bytes && bytes % kSsdBlockBytes == 0;
  }
  void return_lent_slot(std::uint64_t token);
  void return_window_slot(std::uint64_t token);
  // Whether `token` lends a put-window slot of `client`.
  [[nodiscard]] bool lent_by(KvClientId client, std::uint64_t token) const {
    auto it = window_lends.find(token);
    return it != window_lends.end() && it->second.client == client;
  }
  void reap_ssd_evictions();
  // Whether a get or a peer must wait for the chunk's bytes to land in its
  // slot: an SSD read, or a copy behind its commit's answer.
  [[nodiscard]] static bool awaits_load(const ChunkEntry& e) {
    return e.info.tier == KvTier::kSsd || (e.info.flags & kChunkFilling) != 0;
  }
  void unpin_key(const ChunkKey& key);

  // --- namespaces (kv_namespaces.cpp)
  [[nodiscard]] const NamespaceState* ns(std::uint64_t id) const {
    return id == 0 || id > namespaces.size() ? nullptr : &namespaces[id - 1];
  }
  std::optional<std::uint32_t> ns_for_fingerprint(const NamespaceFingerprint& fp, bool create);
  void index_recovered_ssd();

  // --- clients (kv_clients.cpp)
  ClientState* client(KvClientId id);
  std::uint64_t now_ns() const;
  // Every change of a client's held bytes goes through these, so that its
  // account's sum stays exact.
  static void charge(ClientState& c, std::uint64_t bytes) {
    c.held_bytes += bytes;
    c.account->held_bytes += bytes;
  }
  static void uncharge(ClientState& c, std::uint64_t bytes) {
    c.held_bytes -= bytes;
    c.account->held_bytes -= bytes;
  }
  // True (and counted) when `bytes` more would take the client's account
  // past client_quota_bytes.
  bool over_quota(const ClientState& c, std::uint64_t bytes);
  // kOverQuota / kTooManyLeases, or kOk when a lease of `bytes` fits.
  KvStatus admit_lease(KvClientId id, ClientState& c, std::uint64_t bytes);
  std::uint64_t open_lease(KvClientId id, ClientState& c, std::span<const ChunkKey> keys);
  KvStatus release_lease(KvClientId id, std::uint64_t lease_id);

  // --- requests
  void complete(KvClientId client, const proto::KvRequest& r, KvOutcome outcome, std::uint64_t r0 = 0,
                std::uint64_t r1 = 0, std::uint64_t r2 = 0);
  KvStoreCompletion& begin_completion(KvClientId client, const proto::KvRequest& r,
                                      KvOutcome outcome = KvStatus::kOk);
  void count_tier_hits(std::span<const ChunkEntry> prefix, std::size_t asked);
  void location_of(const ChunkEntry& e, proto::KvLocation& out) const;
  std::size_t own_prefix(std::size_t p, std::uint64_t ns_id);
  void do_lookup(KvClientId id, const proto::KvRequest& r);
  void do_get(KvClientId id, const proto::KvRequest& r);
  void do_release(KvClientId id, const proto::KvRequest& r);
  void do_prefetch(KvClientId id, const proto::KvRequest& r);
  void do_delete(KvClientId id, const proto::KvRequest& r);
  void do_put_begin(KvClientId id, const proto::KvRequest& r);
  void do_put_commit(KvClientId id, const proto::KvRequest& r);
  // --- commits (kv_put.cpp)
  // One kept chunk committed on this thread, its copy included: kOk when
  // it is stored (maybe by another client meanwhile), else why not.
  KvOutcome commit_inline(const ClientState& c, const Reservation& res, const ReservedChunk& rc, bool write_through);
  // commit_inline's copy, into DRAM slot `offset` already taken.
  KvOutcome copy_into_slot(const ClientState& c, const Reservation& res, const ReservedChunk& rc,
                           std::uint64_t offset, bool write_through);
  std::uint16_t queue_pieces(std::vector<CopyJob>& out, CopyJob job, const std::byte* from, std::byte* to,
                             std::uint64_t bytes, std::uint32_t piece_bytes);
  // A chunk copied into DRAM slot `offset` did not match its declared CRC:
  // the slot goes back, kChecksumError.
  KvOutcome refuse_mismatch(std::uint64_t offset);
  // A chunk whose bytes are in DRAM slot `offset` goes into the index
  // (written through first under the per-commit policy); the slot goes
  // back when it does not.
  KvOutcome index_copied(const Reservation& res, const ReservedChunk& rc, std::uint64_t offset, const std::uint32_t* crc,
                         bool write_through);
  // put_commit with kKvPutCommitToSsd: the chunk goes to the SSD log only,
  // written from its window slot when the log can lend it (crc: its
  // payload's, taken from the window), else copied into the log's buffer.
  // kOk when stored (maybe by another client meanwhile: *on_ssd unchanged).
  KvOutcome commit_to_ssd(KvClientId id, ClientState& c, const Reservation& res, ReservedChunk& rc,
                          std::optional<std::uint32_t> crc, std::uint64_t& on_ssd);
  // A put_begin found c's window full: its slots lent to the log's open
  // region come back now (copied into the region's buffer) when no others
  // are on their way back.
  void reclaim_window(KvClientId id, const ClientState& c);
  // Has the log copy the client's window slots lent to its open region
  // into the region's buffer, which frees them at once; how many.
  std::size_t reclaim_window_lends(KvClientId client);
  // Whether a chunk of `bytes` of client c committed to the SSD log is
  // written from its window slot (its CRC is then taken first).
  [[nodiscard]] bool lends_window(const ClientState& c, std::uint64_t bytes) const {
    return c.window_owner != nullptr && lends_to_ssd(bytes);
  }
  // The reservation's end: counters, window slots, quota, the completion.
  void end_commit(KvClientId id, ClientState& c, const proto::KvRequest& r, const Reservation& res,
                  std::size_t kept, std::uint64_t committed, KvOutcome first_failure, std::uint64_t on_ssd);
  // Starts the kept chunks' copies on the workers; the reservation leaves
  // the client's map either way (finished at once when nothing is copied).
  void start_commit(KvClientId id, ClientState& c, const proto::KvRequest& r, Reservation& res, bool to_ssd);
  // Indexes the copied chunks and commits the deferred ones; true when the
  // commit is answered, false when it waits for DRAM slots (may_wait: while
  // dram_slots_come_back()).
  bool finish_commit(PendingCommit& pc, bool may_wait = true);
  void retry_waiting_commits(bool may_wait = true);
  // DRAM slots out that return by themselves: taken by commit copies in
  // flight, or lent to the SSD log until their region is written (those of
  // its open region only once it fills: reclaim_open_dram_lends).
  [[nodiscard]] bool dram_slots_come_back() const {
    return copies_out != 0 || lent_slots[tier_index(KvTier::kDram)] != 0;
  }
  // Has the log copy the DRAM slots lent to its open region into the
  // region's buffer, which frees them at once; how many.
  std::size_t reclaim_open_dram_lends();
  // Whether a chunk of `bytes` kept by a commit of `chunks` chunks of
  // client c is answered before its copy (copy_behind_min_bytes): never
  // under the per-commit policy, which writes the copy through first, nor
  // for a window whose slots are half taken by such copies already.
  [[nodiscard]] bool copies_behind(const ClientState& c, std::uint64_t bytes, std::size_t chunks) const;
  // Indexes a chunk whose window slot's CRC is `crc` as filling and starts
  // its copy into DRAM slot `offset` on the workers; the window slot stays
  // taken until the copy is in. kOk, or why it is not stored.
  KvOutcome start_fill(KvClientId id, ClientState& c, const Reservation& res, ReservedChunk& rc,
                       std::uint64_t offset, std::uint32_t crc);
  void fill_piece_done(const CopyJob& job);
  // A delete or a namespace drop of a filling chunk: the chunk leaves the
  // index now (so that its key can be put again at once) and its waiters
  // find it gone; its slot waits for the copy. False: no such fill.
  bool abandon_fill(const ChunkKey& key);
  // A get or peer now waits for the fill: its copy's pieces go ahead of
  // the background.
  void hurry_fill(const Load& load);
  // The copy is in: the chunk becomes readable when it matches the CRC of
  // the commit, and leaves the index when it does not.
  void finish_fill(Fill& f);
  // Runs every queued copy on this thread and waits for the workers' ones,
  // then finishes them: a put_begin that finds its window full of slots
  // that fills still read gets them back now.
  void settle_copies();
  // Takes the finished copies back and finishes the commits they complete.
  void reap_commits();
  bool piece_copied(PendingCommit& pc, const CopyJob& job);
  // Aborts the client's commits in flight; no worker touches its window
  // once this returns.
  void cancel_commits(KvClientId client);

  void finish_get(KvClientId id, ClientState& c, std::uint64_t request_id, std::span<const ChunkKey> keys);

  // --- SSD loads (kv_loads.cpp)
  // Queues a read of SSD chunk `key` of namespace ns_id into a free arena
  // slot (DRAM, else CXL); false when no slot can be had.
  bool start_load(const ChunkKey& key, std::uint32_t ns_id);
  // --- registered buffers (kv_registered_buffers.cpp)
  // At create: the arenas, or with per-namespace memory a place per slot
  // (filled as namespaces claim slots), and places for put windows.
  void register_with_ssd();
  void register_slot(KvTier t, std::uint64_t offset, std::uint32_t ns_id);
  // The registered buffer of the client's window slot at window_offset,
  // registering it when a place is free; kNoRegisteredBuffer otherwise.
  // The places go back (release_window_places) before the window goes.
  std::int32_t window_buffer(ClientState& c, std::uint64_t window_offset);
  void release_window_places(std::vector<std::int32_t>& places);
  void submit_loads();
  void reap_loads();
  void finish_load(const SsdGetCompletion& done);
  // The load's bytes are in (or not: `failed`, or the chunk gone): the gets
  // and peers waiting for it pin it, or end their prefix before it.
  void wake_load_waiters(const Load& load, const ChunkKey& key, const KvOutcome& failed);
  void finish_pending_get(std::uint64_t id);
  void cancel_pending_gets(KvClientId client);
  // --- peers' pins of SSD chunks (kv_peer_loads.cpp)
  void finish_peer_load(std::uint64_t id, PendingGet& pg);
};

}  // namespace cxlpool::kvcache
