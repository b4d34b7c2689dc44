// SPDX-License-Identifier: Apache-2.0
// The KV store's data path: two single-producer / single-consumer rings in
// one memfd shared by one client connection and cxlpoold. The submission
// ring (SQ) carries requests from the client to the daemon, the completion
// ring (CQ) carries their results back. Each ring has a payload slab for its
// variable-length record lists (keys going in, chunk locations coming out),
// filled in the same order as the ring so that its consumer can check every
// list's position exactly. Layout and the wake-up protocol:
// docs/protocol.md §9.2.
//
// Neither side trusts the other: the daemon treats the whole mapping as
// hostile (bounded indices, entries and lists copied out before they are
// checked, a ring whose positions stop making sense is quarantined), and the
// client bounds what it reads from the completion ring the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/shm_ring.hpp"

namespace cxlpool::proto {

inline constexpr uint32_t kKvRingMagic = 0x564B5843;  // "CXKV" little-endian
inline constexpr uint32_t kKvRingVersion = 1;
inline constexpr uint32_t kKvRingHeaderBytes = 512;
inline constexpr uint32_t kKvRingEntryBytes = 64;
inline constexpr uint32_t kKvRecordBytes = 16;
inline constexpr uint32_t kKvRingMinEntries = 2;
inline constexpr uint32_t kKvRingMaxEntries = 1u << 16;
inline constexpr uint32_t kKvSlabMinBytes = 256;
inline constexpr uint32_t kKvSlabMaxBytes = 1u << 26;
// Records in one list, whatever the slab size.
inline constexpr uint32_t kKvMaxRecordsPerEntry = 1u << 16;

enum class KvOp : uint8_t {
  kLookup = 1,     // keys → result0 = cached prefix length (chunks); locations of the prefix
  kPutBegin = 2,   // keys, param0 = chunk bytes → result0 = reservation id; one slot per key
  kPutCommit = 3,  // keys, param0 = reservation id → result0 = chunks committed
  kGet = 4,        // keys → result0 = lease id; locations
  kRelease = 5,    // no keys, param0 = lease id
  kPrefetch = 6,   // keys → result0 = chunks queued
  kDelete = 7,     // keys → result0 = chunks deleted
};
inline constexpr uint8_t kKvOpMax = 7;
// "lookup", "put_begin", ...; nullptr for a value that is no op.
const char* kv_op_name(uint8_t op);

// Request flags.
inline constexpr uint16_t kKvLookupCostCutoff = 1u << 0;  // lookup: result1 = recompute-or-load cut-off
// put_commit: store the chunks on the SSD log only, written from the put
// window where the log can (no copy into a DRAM slot); result1 = chunks
// stored so. Without an SSD log the commit stores them in DRAM as usual.
inline constexpr uint16_t kKvPutCommitToSsd = 1u << 1;
// put_commit: the writer declares each chunk's CRC-32C. param1 = the number
// of keys n; the record list holds the n keys, then kv_checksum_records(n)
// records of four CRC-32C values each (little-endian, in key order, unused
// lanes zero). The daemon needs no pass of its own over a chunk it copies
// behind its answer, and refuses one whose bytes do not match wherever it
// takes their CRC (docs/kvstore.md "Declared checksums").
inline constexpr uint16_t kKvPutCommitChecksums = 1u << 2;

// A 128-bit chunk key (XXH3-128: low, high).
struct KvKey {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const KvKey&) const = default;
};
static_assert(sizeof(KvKey) == kKvRecordBytes);

// Records that carry n declared checksums (four per record).
inline constexpr uint32_t kv_checksum_records(uint32_t n) { return (n + 3) / 4; }
// Checksum i of a put_commit's checksum records (records past its keys).
uint32_t kv_checksum_at(std::span<const KvKey> records, uint32_t i);
// Appends the records that carry `checksums` to `out`.
void kv_append_checksums(std::span<const uint32_t> checksums, std::vector<KvKey>& out);

// KvLocation.tier values: 0 dram arena, 1 cxl arena, 2 ssd (a lookup's
// answer only: not mapped), kKvLocationPutWindow for put_begin's slots in the
// connection's private put window.
inline constexpr uint16_t kKvLocationPutWindow = 0xff;
// KvLocation.flags.
inline constexpr uint16_t kKvLocationSsdCopy = 1u << 0;  // also stored on SSD
inline constexpr uint16_t kKvLocationCached = 1u << 1;   // put_begin: already cached, nothing to write

// Where a chunk is, in the client's mapping of the arena named by `tier`.
struct KvLocation {
  uint64_t offset = 0;
  uint32_t length = 0;
  uint16_t tier = 0;
  uint16_t flags = 0;
  bool operator==(const KvLocation&) const = default;
};
static_assert(sizeof(KvLocation) == kKvRecordBytes);

// A submission entry. `count` and `arg_offset` are filled by the ring.
struct KvRequest {
  uint64_t request_id = 0;  // echoed in the completion
  uint8_t op = 0;           // KvOp
  uint8_t reserved0 = 0;
  uint16_t flags = 0;       // kKv* request flags valid for `op`
  uint32_t count = 0;       // keys in the submission slab
  uint32_t arg_offset = 0;  // byte offset of the first key in the submission slab
  uint32_t reserved1 = 0;
  uint64_t namespace_id = 0;
  uint64_t param0 = 0;
  uint64_t param1 = 0;
  uint64_t reserved2[2] = {0, 0};
  bool operator==(const KvRequest&) const = default;
};
static_assert(sizeof(KvRequest) == kKvRingEntryBytes);

// A completion entry. `count` and `arg_offset` are filled by the ring.
struct KvCompletion {
  uint64_t request_id = 0;
  int32_t status = 0;       // 0 or a negative errno
  uint8_t op = 0;           // the request's op; 0 (with an error status) when it was not a known op
  uint8_t reserved0 = 0;
  uint16_t flags = 0;       // 0 in version 1
  uint32_t count = 0;       // locations in the completion slab
  uint32_t arg_offset = 0;  // byte offset of the first location in the completion slab
  uint64_t result0 = 0;
  uint64_t result1 = 0;
  uint64_t result2 = 0;
  uint64_t reserved1[2] = {0, 0};
  bool operator==(const KvCompletion&) const = default;
};
static_assert(sizeof(KvCompletion) == kKvRingEntryBytes);

struct KvRingGeometry {
  uint32_t sq_entries = 256;          // power of two, 2..2^16
  uint32_t cq_entries = 256;          // power of two, 2..2^16
  uint32_t sq_slab_bytes = 1u << 20;  // multiple of 64, 256..2^26
  uint32_t cq_slab_bytes = 1u << 20;  // multiple of 64, 256..2^26
  bool operator==(const KvRingGeometry&) const = default;
};

struct KvRingLayout {
  uint32_t sq_ring_offset = 0;
  uint32_t cq_ring_offset = 0;
  uint32_t sq_slab_offset = 0;
  uint32_t cq_slab_offset = 0;
  uint64_t total_bytes = 0;
};

bool kv_ring_geometry_valid(const KvRingGeometry& g);
// Offsets of the four areas; meaningless for an invalid geometry.
KvRingLayout kv_ring_layout(const KvRingGeometry& g);

// The shared header: eight 64-byte lines, each written by one side only.
struct alignas(64) KvRingHeader {
  uint32_t magic;           // kKvRingMagic
  uint32_t version;         // kKvRingVersion
  uint32_t sq_entries;
  uint32_t cq_entries;
  uint32_t sq_slab_bytes;
  uint32_t cq_slab_bytes;
  uint32_t entry_bytes;     // kKvRingEntryBytes
  uint32_t record_bytes;    // kKvRecordBytes
  uint32_t header_bytes;    // kKvRingHeaderBytes
  uint32_t sq_ring_offset;
  uint32_t cq_ring_offset;
  uint32_t sq_slab_offset;
  uint32_t cq_slab_offset;
  uint32_t reserved0;
  uint64_t total_bytes;
  alignas(64) uint64_t sq_producer;      // client: requests ever published
  alignas(64) uint64_t sq_consumer;      // daemon: requests ever taken
  uint64_t sq_slab_consumer;             // daemon: slab bytes ever released
  alignas(64) uint32_t sq_need_wakeup;   // daemon: "asleep, kick the SQ eventfd"
  alignas(64) uint64_t cq_producer;      // daemon: completions ever published
  alignas(64) uint64_t cq_consumer;      // client: completions ever reaped
  uint64_t cq_slab_consumer;             // client: slab bytes ever released
  alignas(64) uint32_t cq_need_wakeup;   // client: "asleep, kick the CQ eventfd"
  // daemon: 1 + the CPU its loop last published completions from (0:
  // unknown). A scheduling hint only: a waiting client that runs on the
  // same CPU yields at once instead of spinning, since the daemon cannot
  // answer while it spins.
  alignas(64) uint32_t daemon_cpu;
  uint8_t reserved1[60];
};
static_assert(sizeof(KvRingHeader) == kKvRingHeaderBytes);

// The memfd holding both rings, mapped. Daemon side: create() makes it
// (sealed) and writes the header; client side: map() a received descriptor.
class KvRingMemory {
 public:
  static Result<KvRingMemory> create(const KvRingGeometry& g);
  static Result<KvRingMemory> map(int fd, uint64_t total_bytes);

  std::span<std::byte> bytes() const { return mapping_.bytes(); }
  int fd() const { return mapping_.fd(); }
  UniqueFd take_fd() { return mapping_.take_fd(); }

 private:
  ShmMapping mapping_;
};

// Writes a fresh header. EINVAL: bad geometry, or the mapping is too small
// or misaligned.
Result<void> kv_ring_init(std::span<std::byte> mapping, const KvRingGeometry& g);

// Checks a request's fields that need no store state: known op, flags valid
// for it, reserved zero, key count rule (release: none; others: at least one;
// a put_commit with kKvPutCommitChecksums: param1 keys and their checksum
// records, param1 at least one).
bool kv_request_well_formed(const KvRequest& r);
// Whether the request is a put_commit that declares its chunks' checksums.
bool kv_declares_checksums(const KvRequest& r);
// The keys among a well-formed request's records: all of them, except for a
// put_commit that declares checksums (its first param1).
std::span<const KvKey> kv_request_keys(const KvRequest& r, std::span<const KvKey> records);

// Requests the daemon took, with their keys copied out of the mapping.
struct KvRequestBatch {
  std::vector<KvRequest> requests;
  std::vector<int32_t> errors;        // per request: 0, or -EINVAL when malformed (answer it so)
  std::vector<uint32_t> first_key;    // per request: index of its first key in `keys`
  std::vector<KvKey> keys;
  void clear();
  std::span<const KvKey> keys_of(size_t i) const { return {keys.data() + first_key[i], requests[i].count}; }
};

// Completions the client reaped, with their locations copied out.
struct KvCompletionBatch {
  std::vector<KvCompletion> completions;
  std::vector<uint32_t> first_location;
  std::vector<KvLocation> locations;
  void clear();
  std::span<const KvLocation> locations_of(size_t i) const {
    return {locations.data() + first_location[i], completions[i].count};
  }
};

// The client's end: produces requests, consumes completions. Not
// thread-safe; libcxlpool serializes callers per connection.
class KvClientRing {
 public:
  // Checks the daemon-written header against the mapping (EPROTO when it
  // does not describe rings that fit). `sq_efd` is rung to wake the daemon,
  // `cq_efd` is where the daemon rings us; neither is owned.
  static Result<KvClientRing> attach(std::span<std::byte> mapping, int sq_efd, int cq_efd);

  KvClientRing() = default;

  // Stages one request with its keys: copies the keys into the slab, fills
  // `count`/`arg_offset`, writes the entry. Not visible to the daemon until
  // flush(). Never blocks. EAGAIN: SQ full, slab full, or cq_entries
  // requests already in flight; EINVAL: malformed request or too many keys;
  // EPIPE: the ring is broken.
  Result<void> submit(const KvRequest& request, std::span<const KvKey> keys);
  // Publishes staged requests and kicks the daemon if it sleeps. Returns
  // whether it kicked.
  bool flush();

  // Appends up to `max` completions with their locations to `out`, releases
  // their space, kicks the daemon if it sleeps (it may wait for CQ space).
  // Returns how many. A daemon that breaks the ring's rules (indices out of
  // bounds, list out of place, more completions than requests in flight, a
  // malformed entry) marks the ring broken: nothing more is read.
  size_t reap(KvCompletionBatch& out, size_t max = SIZE_MAX);

  // Sleep protocol, for callers with their own poll loop: arm_wakeup()
  // asks the daemon to kick `cq_efd` and returns false when a completion is
  // already there (do not sleep); after waking, disarm_wakeup().
  bool arm_wakeup();
  void disarm_wakeup();
  // arm_wakeup + poll(cq_efd) + disarm_wakeup. True when completions wait
  // or the doorbell rang (possibly a kick left over from an earlier arm that
  // did not sleep: reap and call again); false on timeout.
  Result<bool> wait(int timeout_ms);

  bool broken() const { return broken_; }
  uint64_t in_flight() const { return submitted_ - reaped_; }
  // Whether the daemon last published completions from the CPU this thread
  // runs on (the header's daemon_cpu hint).
  bool daemon_on_this_cpu() const;
  uint32_t sq_capacity() const { return sq_mask_ + 1; }

 private:
  bool completions_pending() const;

  KvRingHeader* header_ = nullptr;
  std::byte* sq_ = nullptr;
  const std::byte* cq_ = nullptr;
  std::byte* sq_slab_ = nullptr;
  const std::byte* cq_slab_ = nullptr;
  KvRingGeometry geometry_;
  uint32_t sq_mask_ = 0;
  uint32_t cq_mask_ = 0;
  int sq_efd_ = -1;
  int cq_efd_ = -1;
  uint64_t sq_head_ = 0;       // staged requests
  uint64_t sq_published_ = 0;  // last published sq_producer
  uint64_t sq_tail_seen_ = 0;  // daemon's sq_consumer, last read
  uint64_t sq_slab_head_ = 0;
  uint64_t sq_slab_tail_seen_ = 0;
  uint64_t cq_tail_ = 0;       // our consumer index: never read back
  uint64_t cq_slab_tail_ = 0;
  uint64_t submitted_ = 0;
  uint64_t reaped_ = 0;
  bool broken_ = false;
};

// The daemon's end: consumes requests, produces completions. Trusts nothing
// in the mapping but its size; the geometry is the one it created.
class KvDaemonRing {
 public:
  static Result<KvDaemonRing> attach(std::span<std::byte> mapping, const KvRingGeometry& g, int sq_efd,
                                     int cq_efd);

  KvDaemonRing() = default;

  // Takes up to `max` published requests (never more than the CQ can answer:
  // taken-but-uncompleted plus unreaped completions stay ≤ cq_entries),
  // copies them and their keys out, and releases their SQ space. A request
  // whose list is out of place (offset not where the slab discipline puts
  // it, count beyond the slab), a producer index out of bounds or a header
  // overwritten quarantines the ring. Returns how many were taken.
  size_t take(KvRequestBatch& out, size_t max = SIZE_MAX);

  // Stages a completion with its locations; visible after flush(). EAGAIN:
  // no room in the CQ or its slab (retry after the client reaps; it kicks
  // `sq_efd` when we sleep); EINVAL: more completions than requests taken,
  // or too many locations; EPIPE: broken ring.
  Result<void> complete(const KvCompletion& completion, std::span<const KvLocation> locations);
  // Publishes staged completions and kicks the client if it sleeps.
  bool flush();

  // Sleep protocol (see KvClientRing): arm_wakeup() returns false when a
  // request can be taken now or CQ space was freed since the last look.
  bool arm_wakeup();
  void disarm_wakeup();
  Result<bool> wait(int timeout_ms);

  bool broken() const { return broken_; }
  uint64_t outstanding() const { return taken_ - completed_; }

 private:
  bool header_intact() const;
  // Reads the client's CQ consumer words; false (and broken) when absurd.
  bool refresh_cq_tail();
  uint64_t take_room() const;

  KvRingHeader* header_ = nullptr;
  const std::byte* sq_ = nullptr;
  std::byte* cq_ = nullptr;
  const std::byte* sq_slab_ = nullptr;
  std::byte* cq_slab_ = nullptr;
  KvRingGeometry geometry_;
  KvRingLayout layout_;
  uint32_t sq_mask_ = 0;
  uint32_t cq_mask_ = 0;
  int sq_efd_ = -1;
  int cq_efd_ = -1;
  uint64_t sq_tail_ = 0;       // our consumer index: never read back
  uint64_t sq_slab_tail_ = 0;
  uint64_t cq_head_ = 0;       // staged completions
  uint64_t cq_published_ = 0;  // last published cq_producer
  uint64_t cq_slab_head_ = 0;
  uint64_t cq_tail_seen_ = 0;  // client's cq_consumer, last read (bounded)
  uint64_t cq_slab_tail_seen_ = 0;
  uint64_t taken_ = 0;
  uint64_t completed_ = 0;
  uint32_t cpu_said_ = 0;  // what daemon_cpu holds, so that an unchanged CPU costs no store
  bool broken_ = false;
};

}  // namespace cxlpool::proto
