// SPDX-License-Identifier: Apache-2.0
#pragma once
// The SSD tier of the KV-cache store: a log of fixed-size regions on a
// hal::BlockDevice in the format of docs/kvstore-format.md, with an in-memory
// index rebuilt at open by scanning every region.
//
// Writes: puts append to the open region's buffer (RegionWriter). A full region
// is sealed and the next one opened: a free region if any, otherwise the
// oldest region (FIFO by generation) is evicted. Its entries leave the index,
// except hot ones (read at least reinsert_min_hits times since they were
// written) which are read back and appended to the new region with a new
// sequence, within a budget of reinsert_max_percent of a region so that
// eviction always frees space; their hit count restarts at zero, so a chunk
// survives one more lap only if it is read again (second chance).
//
// Under kPerRegion a sealed region is written asynchronously: its buffer goes
// to the device's queue and the next region fills another of write_buffers
// buffers meanwhile. The entries of a region in flight are indexed at once
// and served from its buffer until its write completes; completions are
// reaped by every call that polls the device (poll_gets, get, put...), so a
// caller keeps polling while writes_in_flight() is non-zero (the device's
// completion_fd() signals them). After a region's write completes, one
// fdatasync covers every region written since the previous one (group
// commit). A write or fdatasync that fails drops the entries of the regions
// it held from the index (the eviction listener hears of each): they are
// never served from a region that may be torn. A put waits for the device
// only when every buffer is in flight. put_lent() appends only an entry's
// header and writes its payload from the caller's memory along with the
// region (several device writes, the same bytes as one); that memory is
// handed back through the lend listener when the region's write completes or
// fails, or when the store is destroyed.
//
// Durability: durable_sequence() is the largest sequence s such that every
// put/erase with a sequence <= s survives a crash, bar those a failed write
// dropped (and reported). Under kPerCommit it covers a put as soon as put()
// returns; under kPerRegion once its region's write and the fdatasync after
// it complete (flush() waits for that).
//
// Reads: get() copies from a region buffer (the open region, or one in
// flight), or reads the padded payload with one O_DIRECT read straight into
// the caller's buffer and checks its CRC. An I/O error, short read or CRC
// mismatch fails that get and drops that entry from the index, nothing else.
// submit_gets/poll_gets do the same asynchronously so a caller can keep many
// reads in flight.
//
// Outcomes: the data-path calls (put, put_lent, erase, get, submit_gets and
// the completions of poll_gets) answer with a KvStatus (kv_status.hpp): a
// miss, a full index or a bad CRC is an expected outcome, answered without
// allocating; a device failure is kDeviceError with the device's errno.
// Opening, flushing and waiting for the device stay Result/Error.
//
// Checksums of reads: a device that takes digests of reads on its own threads
// (hal::make_worker_block_device given ssd_read_digest) computes each
// read's CRC32C before the store hears of it, so that the caller's thread
// only compares; over any other device the caller's thread computes it.
//
// Single-threaded: the caller serialises all calls.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"
#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/kvcache/kv_status.hpp"
#include "cxlpool/kvcache/namespace.hpp"
#include "cxlpool/kvcache/ssd_format.hpp"
#include "cxlpool/kvcache/ssd_region_writer.hpp"

namespace cxlpool::kvcache {

enum class SsdSyncPolicy {
  kPerRegion,  // one write + fdatasync per sealed region
  kPerCommit,  // every put/erase is written and fdatasync'd before it returns
};

struct SsdStoreConfig {
  std::uint32_t region_bytes = kDefaultRegionBytes;
  SsdSyncPolicy sync = SsdSyncPolicy::kPerRegion;
  // Most keys indexed. When full, the oldest regions are evicted (without
  // reinsertion) to make room; ENOSPC if only the open region holds keys.
  std::size_t index_capacity = 1u << 20;
  // Regions to use from the device start; 0: as many as fit. At least 2.
  std::uint32_t max_regions = 0;
  // Reads since written that make an entry hot (reinserted when its region is
  // evicted); 0 disables reinsertion.
  std::uint8_t reinsert_min_hits = 1;
  // Reinserted bytes per eviction, as a percentage of region_bytes (<= 90).
  std::uint32_t reinsert_max_percent = 50;
  // Region buffers (1..16): under kPerRegion, one fills while the others'
  // writes are in flight; 1 makes every seal wait for its write.
  std::uint32_t write_buffers = 4;
  // Staging buffers of staging_bytes each (0: none), registered with the
  // device with the region buffers: a submit_gets read whose buffer is not
  // registered and fits one goes to a free staging buffer as a fixed-buffer
  // read, and is copied into the caller's buffer once its CRC checked. Some
  // kernels run O_DIRECT reads into unregistered memory of a file about one
  // at a time (docs/perf.md); this trades a copy per read for the device's
  // queue. At most 256.
  std::uint32_t read_staging = 0;
  std::uint32_t staging_bytes = 0;
};

struct SsdStoreStats {
  std::uint64_t puts = 0, erases = 0;
  std::uint64_t bytes_written = 0;     // device bytes written (headers, padding, reinsertions), once issued
  std::uint64_t syncs = 0;
  std::uint64_t regions_sealed = 0, regions_evicted = 0;
  std::uint64_t entries_evicted = 0;   // left the index with their region
  std::uint64_t reinsertions = 0;      // hot entries rewritten into a new region
  std::uint64_t reinsert_skipped = 0;  // hot entries evicted because the budget was spent
  std::uint64_t recovered_entries = 0; // indexed by the scan at open
  std::uint64_t damaged_regions = 0;   // scan at open: torn/corrupt region (header or walk)
  std::uint64_t corrupt_dropped = 0;   // entries dropped for a CRC mismatch (open or read): kChecksumError
  std::uint64_t reads = 0, read_bytes = 0;  // gets served
  std::uint64_t misses = 0;            // gets of keys not indexed
  std::uint64_t read_errors = 0;       // gets failed by I/O errors or short reads: kDeviceError
  std::uint64_t write_errors = 0;      // region/entry writes or syncs that failed
  std::uint64_t write_dropped = 0;     // entries dropped because their region's write failed
  int last_write_error = 0;            // errno of the latest failed write or sync (0: none yet)
  std::uint64_t buffer_reads = 0;      // gets served from a region buffer (open or in flight)
  std::uint64_t write_stalls = 0;      // puts that waited for a region buffer to come free
  std::uint64_t verify_ns = 0;         // time spent checking device reads (CRC32C), on any thread
  std::uint64_t worker_verifies = 0;   // device reads whose CRC32C the device's I/O workers took
  std::uint64_t lent_puts = 0;         // puts written from the caller's memory (put_lent), not copied
  std::uint64_t lent_reclaimed = 0;    // lent payloads copied into their region's buffer (reclaim_lent)
  std::uint64_t lent_changed = 0;      // entries dropped: their checked lent memory changed before the write
  std::uint64_t staged_reads = 0;      // reads that went through a staging buffer (read_staging)
};

// What the index holds for one stored key (for_each_entry).
struct SsdEntryInfo {
  ChunkKey key;
  NamespaceFingerprint ns;
  std::uint32_t payload_bytes = 0;
  std::uint64_t sequence = 0;
};

// Called with each key that leaves the index without the caller asking:
// its region was evicted (hot entries only if their reinsertion failed or was
// over budget), a read found it damaged, or a write that held it failed. Not
// called for erase()/erase_namespace(). It must not call back into the store.
using SsdEvictionListener = std::function<void(const ChunkKey&)>;

// Called with the token of each put_lent payload the store no longer uses:
// its region's write completed or failed, or the region was given up. It
// must not call back into the store.
using SsdLendListener = std::function<void(std::uint64_t token)>;

// The caller's memory lent to put_lent.
struct SsdLentPayload {
  std::span<const std::byte> bytes;
  // The device's registered buffer holding `bytes`, for a fixed-buffer write;
  // kNoRegisteredBuffer if none.
  std::int32_t buffer_index = hal::kNoRegisteredBuffer;
  std::uint64_t token = 0;  // handed to the lend listener when the store is done with it
  // crc32c of `bytes` when the caller has it (taken as they were written,
  // and they have not changed since): the store then does not read them.
  std::optional<std::uint32_t> crc;
  // The caller's memory may still change before the region's write (a
  // client's put window): a get that copies from it checks the copy against
  // `crc` (which must be set) and on a mismatch drops the entry and answers
  // kNotFound (the entry is gone; stats().lent_changed counts it, not
  // corrupt_dropped: the device is not at fault). The device then holds
  // whatever the memory held when it was written, which the entry's CRC
  // checks at every later read.
  bool check_copies = false;
};

struct SsdGetRequest {
  ChunkKey key;
  // Aligned to the device's mem_alignment, at least read_buffer_bytes() long.
  std::span<std::byte> buffer;
  std::uint64_t user_data = 0;
  // The device's registered buffer holding `buffer` (BlockDevice::
  // register_buffers), for fixed-buffer reads; kNoRegisteredBuffer if none.
  std::int32_t buffer_index = hal::kNoRegisteredBuffer;
};

struct SsdGetCompletion {
  std::uint64_t user_data = 0;
  ChunkKey key;
  // kOk, kNotFound (not indexed), kInvalid (buffer too small or
  // misaligned), kChecksumError (CRC mismatch; the entry is dropped), or
  // kDeviceError (an I/O error, with the device's errno, or a short read:
  // EIO; the entry is dropped).
  KvOutcome outcome;
  std::uint32_t payload_bytes = 0;  // valid bytes at the buffer start when outcome is kOk
};

// The digest a worker device takes of the log's reads: the CRC32C that
// entries carry (docs/kvstore-format.md). Safe on any thread.
std::uint32_t ssd_read_digest(std::span<const std::byte> bytes);

class SsdStore {
 public:
  // Scans every region and rebuilds the index. EINVAL for a bad region size or
  // a device whose alignment does not divide 4096; ENOSPC when fewer than two
  // regions fit; a read error of the device during the scan.
  static Result<std::unique_ptr<SsdStore>> open(std::unique_ptr<hal::BlockDevice> device,
                                                const SsdStoreConfig& config);

  // Waits for reads still in flight; does not flush (call close() for that).
  ~SsdStore();
  SsdStore(const SsdStore&) = delete;
  SsdStore& operator=(const SsdStore&) = delete;

  // Stores payload under key (replacing any earlier value) and returns its
  // sequence. kTooLarge when no region can hold it; kRejected when the
  // index is full and only the open region holds keys; kDeviceError when
  // sealing/committing failed (the put is then not stored).
  KvResult<std::uint64_t> put(const ChunkKey& key, const NamespaceFingerprint& ns,
                              std::span<const std::byte> payload);
  // put() without copying the payload into the region buffer, when it can:
  // under kPerRegion, with whole 4 KiB blocks at an address aligned to the
  // device's mem_alignment. The region's write then takes the payload
  // straight from the caller's memory, and gets copy from it until that
  // write completes. Returns true when the memory was lent: the caller keeps
  // it unchanged (and mapped) until the lend listener hears its token. False
  // when the payload was copied as by put() (the memory is free at once).
  // Outcomes as put()'s.
  KvResult<bool> put_lent(const ChunkKey& key, const NamespaceFingerprint& ns, const SsdLentPayload& payload);

  // Removes key (writes a tombstone so the delete survives a restart).
  // kNotFound when it is not indexed; kDeviceError when the tombstone's
  // write failed.
  KvOutcome erase(const ChunkKey& key);
  // erase() of every key stored under namespace `ns`; returns how many. Stops
  // at the first failed tombstone write (its errno and what failed).
  Result<std::size_t> erase_namespace(const NamespaceFingerprint& ns);

  // Reads key's payload into buffer and returns its length. Outcomes as in
  // SsdGetCompletion::outcome.
  KvResult<std::uint32_t> get(const ChunkKey& key, std::span<std::byte> buffer);

  // Queues gets; returns how many were accepted (a prefix of requests), fewer
  // when the device queue is full: poll, then submit the rest. Every accepted
  // get completes exactly once through poll_gets: those that need no I/O
  // (kNotFound, kInvalid, reads from a region buffer) at once, and those the
  // device refused with kDeviceError.
  std::size_t submit_gets(std::span<const SsdGetRequest> requests);
  // Returns up to out.size() finished gets, waiting until `min` (capped at
  // gets_in_flight()) are ready or timeout passes.
  Result<std::size_t> poll_gets(std::span<SsdGetCompletion> out, std::size_t min,
                                std::chrono::nanoseconds timeout = hal::BlockDevice::kWaitForever);
  // Submitted and not yet returned by poll_gets.
  [[nodiscard]] std::size_t gets_in_flight() const { return ready_.size() + reads_on_device_; }
  // Region writes and fdatasyncs on the device (kPerRegion): reaped by
  // poll_gets, which a caller runs when completion_fd() signals.
  [[nodiscard]] std::size_t writes_in_flight() const { return flights_.size(); }
  // Waits until every region write in flight and its fdatasync completed.
  Result<void> wait_for_writes();

  // Registers the region buffers with the device as fixed buffers, followed
  // by `extra` (the caller's, e.g. arenas that reads land in); returns the
  // index of extra[0]. Replaces any earlier registration; needs an idle
  // device. A device or kernel that refuses is not an error for writes:
  // they then go out as plain writes.
  Result<std::int32_t> register_buffers(std::span<const iovec> extra);
  // Frees the read staging buffers (their registrations emptied, their
  // places kept): for a caller whose read buffers are all registered, which
  // never need them. Only with no get in flight (false otherwise, and
  // nothing changes).
  bool release_staging();
  // Brings released staging buffers back into their places (a caller whose
  // buffers could not all be registered after all); as many as memory and
  // the device allow.
  void restore_staging();

  // Seals the open region if it holds entries (the rest of it stays unused)
  // and waits for every region write; afterwards durable_sequence() covers
  // every put so far. Fails when a write or fdatasync failed meanwhile.
  Result<void> flush();
  // Waits for in-flight gets (their completions stay pollable), then flush().
  Result<void> close();
  // Lent payloads in the open region whose token `counted` accepts (not
  // yet on their way to the device).
  [[nodiscard]] std::size_t open_lent(const std::function<bool(std::uint64_t token)>& counted) const;
  // Copies the lent payloads of the open region whose token `wanted`
  // accepts into the region's buffer, where their place is kept, and hands
  // their memory back at once (the lend listener hears each token) instead
  // of when the region's write completes; the region is written as before.
  // A checked payload (check_copies) that no longer matches its CRC is
  // dropped from the index. Returns how many came back.
  std::size_t reclaim_lent(const std::function<bool(std::uint64_t token)>& wanted);

  [[nodiscard]] bool contains(const ChunkKey& key) const { return index_.count(key) != 0; }
  // Every indexed key (order unspecified); recovered ones right after open.
  void for_each_entry(const std::function<void(const SsdEntryInfo&)>& fn) const;
  void set_eviction_listener(SsdEvictionListener listener) { listener_ = std::move(listener); }
  void set_lend_listener(SsdLendListener listener) { lend_listener_ = std::move(listener); }
  // put_lent payloads not yet handed back.
  [[nodiscard]] std::size_t lent() const { return lent_; }
  // Lowers (or raises) the most keys indexed; a lower value takes effect at
  // the next put, which evicts the oldest regions as needed. 0 is ignored.
  void set_index_capacity(std::size_t keys) {
    if (keys != 0) config_.index_capacity = keys;
  }
  // Regions holding entries (the open one included): the log's used space.
  [[nodiscard]] std::uint32_t regions_in_use() const { return static_cast<std::uint32_t>(fifo_.size()); }
  [[nodiscard]] std::optional<std::uint32_t> payload_bytes(const ChunkKey& key) const;
  // Buffer length a get of payload_bytes needs (the padded on-disk payload).
  [[nodiscard]] static std::uint32_t read_buffer_bytes(std::uint32_t payload_bytes) {
    return static_cast<std::uint32_t>(align_up_block(payload_bytes));
  }
  [[nodiscard]] std::size_t size() const { return index_.size(); }
  [[nodiscard]] std::uint32_t region_count() const { return static_cast<std::uint32_t>(regions_.size()); }
  [[nodiscard]] std::uint64_t durable_sequence() const { return durable_sequence_; }
  [[nodiscard]] const SsdStoreStats& stats() const { return stats_; }
  [[nodiscard]] const SsdStoreConfig& config() const { return config_; }
  [[nodiscard]] hal::BlockDevice& device() { return *device_; }

 private:
  static constexpr std::int32_t kNoBuffer = -1;

  struct Slot {
    std::uint32_t region = 0;
    std::uint32_t payload_offset = 0;  // from the region start
    std::uint32_t payload_bytes = 0;
    std::uint32_t payload_crc = 0;
    std::uint64_t sequence = 0;
    NamespaceFingerprint ns;
    std::uint8_t hits = 0;
    const std::byte* lent = nullptr;  // the payload while its region is in a buffer (put_lent)
    bool check_lent = false;          // SsdLentPayload::check_copies
  };
  // A payload a region's write takes from the caller's memory.
  struct Lent {
    ChunkKey key;
    std::uint32_t payload_offset = 0;
    std::uint32_t length = 0;  // whole blocks
    const std::byte* bytes = nullptr;
    std::int32_t buffer_index = hal::kNoRegisteredBuffer;
    std::uint64_t token = 0;
  };
  struct Region {
    std::uint64_t generation = 0;  // 0: free
    std::vector<ChunkKey> keys;    // written here (may since be superseded)
    std::int32_t buffer = kNoBuffer;  // writers_ index while open or being written
    bool in_flight = false;           // sealed, write or its fdatasync not yet done
    std::vector<Lent> lent;           // in payload_offset order
    std::uint32_t writes_pending = 0; // device writes of its image not yet completed
    int write_error = 0;              // the first failed one's errno
  };
  // A sealed region on its way to the device (kPerRegion), in seal order.
  struct Flight {
    enum class State { kWriting, kWritten, kSyncing, kDone };
    std::uint32_t region = 0;
    std::uint64_t generation = 0;
    std::uint64_t last_sequence = 0;  // of the puts before its seal
    State state = State::kWriting;
  };
  struct Hot {  // an entry read back for reinsertion
    ChunkKey key;
    NamespaceFingerprint ns;
    std::vector<std::byte> payload;
  };
  struct PendingGet {
    ChunkKey key;
    Slot slot;
    std::byte* buffer = nullptr;
    std::uint64_t user_data = 0;
    std::int32_t staging = kNoBuffer;  // the staging buffer it reads into, if any
  };
  struct StagingFree {
    void operator()(std::byte* p) const { std::free(p); }
  };

  SsdStore(std::unique_ptr<hal::BlockDevice> device, const SsdStoreConfig& config,
           std::vector<RegionWriter> writers, std::uint32_t region_count);

  Result<void> recover();
  [[nodiscard]] std::uint64_t region_base(std::uint32_t region) const {
    return static_cast<std::uint64_t>(region) * config_.region_bytes;
  }

  // Write path (ssd_store.cpp).
  Result<std::uint64_t> append(const ChunkKey& key, const NamespaceFingerprint& ns,
                               std::span<const std::byte> payload, std::uint16_t flags,
                               const SsdLentPayload* lend = nullptr);
  Result<void> write_now(std::uint64_t offset, std::span<const std::byte> bytes);
  Result<void> sync_now();
  Result<void> commit_entry(const AppendResult& at);
  Result<void> seal_open_region();
  void abandon_open_region();
  [[nodiscard]] RegionWriter& open_writer() { return writers_[static_cast<std::size_t>(open_buffer_)]; }
  [[nodiscard]] bool region_open() const { return open_buffer_ != kNoBuffer && writers_[open_buffer_].is_open(); }
  Result<std::int32_t> take_free_buffer();

  // Asynchronous region writes (ssd_store_flight.cpp).
  Result<void> start_region_write(std::uint32_t region, std::span<const std::byte> image);
  Result<void> submit_now(hal::IoRequest request);
  void handle_write_completion(const hal::IoCompletion& c);
  void finish_region_write(std::uint32_t region);
  void return_lent(Region& reg);
  void handle_sync_completion(const hal::IoCompletion& c);
  void start_group_sync();
  void settle_sync(Flight::State which, int err);
  void fail_region(std::uint32_t region);
  void retire_flights();
  Result<void> wait_for_region(std::uint32_t region);
  // Waits for at least one completion and dispatches what came.
  Result<void> poll_device_once();
  void dispatch(const hal::IoCompletion& c);
  Result<void> open_next_region();
  Result<void> evict_oldest(bool reinsert, std::vector<Hot>* hot = nullptr);
  // kRejected when only the open region holds keys.
  KvOutcome make_index_room();
  KvOutcome admit_put(const ChunkKey& key, std::size_t payload_bytes);

  // Read path (ssd_store_read.cpp).
  Result<std::int64_t> io_now(hal::IoRequest request);
  void handle_completion(const hal::IoCompletion& c);
  // crc: the buffer's CRC32C when the device took it, else computed here.
  [[nodiscard]] static KvOutcome check_read(const Slot& slot, std::int64_t result, const std::byte* buffer,
                                            std::optional<std::uint32_t> crc);
  // digested: the device's completion when it carries the read's digest.
  KvOutcome finish_read(const ChunkKey& key, const Slot& slot, std::int64_t result, const std::byte* buffer,
                        const hal::IoCompletion* digested = nullptr);
  [[nodiscard]] bool buffer_fits(const Slot& slot, std::span<std::byte> buffer) const;
  // The region buffer holding slot's region (open or in flight), or null.
  [[nodiscard]] const RegionWriter* buffer_of(const Slot& slot) const;
  // kNotFound (the entry dropped) when a lent payload that may change no
  // longer matches its CRC.
  KvOutcome copy_from_buffer(const ChunkKey& key, const RegionWriter& w, Slot& live, std::byte* out);
  void drop_entry(const ChunkKey& key, std::uint64_t sequence);
  void drop_changed(const ChunkKey& key);
  void notify_evicted(const ChunkKey& key) {
    if (listener_) listener_(key);
  }
  Result<void> drain_reads();

  std::unique_ptr<hal::BlockDevice> device_;
  SsdStoreConfig config_;
  std::vector<RegionWriter> writers_;    // region buffers
  std::vector<std::int32_t> free_buffers_;
  std::int32_t open_buffer_ = kNoBuffer;  // the filling one
  std::uint32_t open_region_ = 0;         // meaningful while region_open()
  std::deque<Flight> flights_;           // kPerRegion writes not yet durable, seal order
  bool sync_in_flight_ = false;
  std::size_t written_unsynced_ = 0;     // flights in State::kWritten
  std::uint32_t write_reserve_ = 0;      // device queue entries batched reads leave free
  std::optional<std::int64_t> now_result_;  // io_now's completion, whoever reaped it
  std::optional<Error> write_error_;     // first failed write since the last flush()
  std::int32_t fixed_write_base_ = hal::kNoRegisteredBuffer;
  std::vector<Region> regions_;
  std::deque<std::uint32_t> fifo_;       // regions holding data, oldest generation first
  std::deque<std::uint32_t> free_;       // regions holding nothing
  std::unordered_map<ChunkKey, Slot, ChunkKeyHash> index_;
  std::uint64_t next_generation_ = 1;
  std::uint64_t next_sequence_ = 1;
  std::uint64_t durable_sequence_ = 0;

  std::vector<PendingGet> pending_;      // indexed by device user_data
  std::vector<std::unique_ptr<std::byte, StagingFree>> staging_;  // read_staging buffers
  std::vector<std::int32_t> free_staging_;
  std::int32_t staging_base_ = hal::kNoRegisteredBuffer;  // registered index of staging_[0]
  std::size_t staging_released_ = 0;  // buffers release_staging() freed
  std::vector<std::uint32_t> free_tags_;
  std::size_t reads_on_device_ = 0;
  std::deque<SsdGetCompletion> ready_;
  std::vector<hal::IoCompletion> poll_scratch_;  // poll_gets without allocating
  SsdEvictionListener listener_;
  SsdLendListener lend_listener_;
  std::size_t lent_ = 0;
  SsdStoreStats stats_;
};

}  // namespace cxlpool::kvcache
