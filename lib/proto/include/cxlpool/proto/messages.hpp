// SPDX-License-Identifier: Apache-2.0
// Control-socket messages. One SOCK_SEQPACKET datagram carries exactly one
// message: a fixed 16-byte header followed by a typed payload. All integers are
// little-endian; strings and lists carry explicit lengths. docs/protocol.md is
// the normative description; this header and codec.cpp implement it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/proto/message_table.hpp"

namespace cxlpool::proto {

inline constexpr uint32_t kMagic = 0x504c5843;  // "CXLP" as little-endian bytes
inline constexpr uint16_t kVersionMin = 1;
inline constexpr uint16_t kVersionMax = 1;
inline constexpr size_t kHeaderSize = 16;
inline constexpr size_t kMaxMessageSize = 64 * 1024;  // header + payload
inline constexpr size_t kMaxNameLength = 200;         // named regions
inline constexpr size_t kMaxClientNameLength = 64;
inline constexpr size_t kMaxErrorMessageLength = 1024;
inline constexpr size_t kMaxStringLength = 4096;      // any other string field
inline constexpr size_t kMaxListEntries = 1024;       // any list in a reply

// The header's type field; one enumerator per row of message_table.hpp.
enum class MsgType : uint16_t {
#define CXLPOOL_PROTO_ENUMERATOR(type, code, id, kind, answer, fds) code = id,
  CXLPOOL_PROTO_MESSAGES(CXLPOOL_PROTO_ENUMERATOR)
#undef CXLPOOL_PROTO_ENUMERATOR
};

struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersionMax;
  uint16_t type = 0;
  uint32_t request_id = 0;
  uint32_t payload_length = 0;
  bool operator==(const Header&) const = default;
};

enum class TierKind : uint8_t { kDram = 0, kCxl = 1, kEmulated = 2 };
enum class RegionKind : uint8_t { kLeased = 0, kNamed = 1 };
enum class BackendState : uint8_t { kAvailable = 0, kNotCompiled = 1, kNotPresent = 2, kFailed = 3 };
// Same codes as hal::AddressSpace.
enum class AccessSpace : uint8_t { kPoolRegion = 0, kProcess = 1, kPhysical = 2, kTrace = 3 };

// RegionAlloc / NamedCreate flags.
inline constexpr uint32_t kAllocHugetlb = 1u << 0;   // back with MFD_HUGETLB pages
inline constexpr uint32_t kAllocPopulate = 1u << 1;  // fault in and verify every page now
inline constexpr uint32_t kAllocKnownFlags = kAllocHugetlb | kAllocPopulate;
// NamedOpen flags.
inline constexpr uint32_t kOpenWritable = 1u << 0;
inline constexpr uint32_t kOpenKnownFlags = kOpenWritable;
// RegionReply flags.
inline constexpr uint32_t kRegionWritable = 1u << 0;
inline constexpr uint32_t kRegionHugetlb = 1u << 1;
inline constexpr uint32_t kRegionKnownFlags = kRegionWritable | kRegionHugetlb;
// Named region mode: permission bits only (like chmod, no setuid/sticky).
inline constexpr uint32_t kModeMask = 0777;

struct Hello {
  uint16_t min_version = kVersionMin;
  uint16_t max_version = kVersionMax;
  std::string client_name;  // ≤ kMaxClientNameLength, shown by `cxlpoolctl clients`
  bool operator==(const Hello&) const = default;
};
struct HelloReply {
  uint16_t version = kVersionMax;  // the version both sides now speak
  std::string daemon_version;
  uint64_t client_id = 0;
  uint32_t max_regions = 0;  // per-client limit
  uint32_t max_message_size = kMaxMessageSize;
  bool operator==(const HelloReply&) const = default;
};
struct ErrorReply {
  int32_t code = 0;  // positive errno value, see docs/protocol.md
  std::string message;
  bool operator==(const ErrorReply&) const = default;
};
struct Ok {
  bool operator==(const Ok&) const = default;
};

struct StatusRequest {
  bool operator==(const StatusRequest&) const = default;
};
struct StatusReply {
  std::string daemon_version;
  uint32_t pid = 0;
  uint64_t uptime_ns = 0;
  uint32_t clients = 0;
  uint32_t regions = 0;
  uint64_t bytes_allocated = 0;
  std::string state_dir;
  std::string config_source;  // file path or "embedded default"
  bool operator==(const StatusReply&) const = default;
};

struct TierInfo {
  uint32_t id = 0;
  TierKind kind = TierKind::kDram;
  int32_t numa_node = -1;  // -1: no NUMA node of its own
  std::string name;
  uint64_t capacity = 0;  // bytes the pool may hand out on this tier
  uint64_t used = 0;      // bytes currently allocated from it
  uint64_t free = 0;      // capacity - used, bounded by the node's free memory
  uint32_t latency_ns = 0;       // declared or measured load latency class
  uint32_t bandwidth_mbps = 0;   // declared or measured bandwidth class
  uint32_t page_size = 4096;     // base page size of its regions
  bool operator==(const TierInfo&) const = default;
};
struct TiersRequest {
  bool operator==(const TiersRequest&) const = default;
};
struct TiersReply {
  std::vector<TierInfo> tiers;
  bool operator==(const TiersReply&) const = default;
};

struct RegionAlloc {
  uint32_t tier_id = 0;
  uint64_t size = 0;  // > 0; rounded up to the tier's page size
  uint32_t flags = 0;
  bool operator==(const RegionAlloc&) const = default;
};
struct RegionReply {
  uint64_t region_id = 0;  // handle id, used for free and migrate
  uint32_t tier_id = 0;
  uint64_t size = 0;
  uint32_t page_size = 0;
  uint32_t flags = 0;  // kRegion*
  std::string name;    // empty for leased regions
  bool operator==(const RegionReply&) const = default;
};
struct RegionFree {
  uint64_t region_id = 0;
  bool operator==(const RegionFree&) const = default;
};
struct NamedCreate {
  std::string name;
  uint32_t tier_id = 0;
  uint64_t size = 0;
  uint32_t mode = 0600;
  uint32_t flags = 0;  // kAlloc*
  bool operator==(const NamedCreate&) const = default;
};
struct NamedOpen {
  std::string name;
  uint32_t flags = 0;  // kOpen*
  bool operator==(const NamedOpen&) const = default;
};
struct NamedUnlink {
  std::string name;
  bool operator==(const NamedUnlink&) const = default;
};

struct RegionEntry {
  uint64_t id = 0;
  RegionKind kind = RegionKind::kLeased;
  std::string name;
  uint32_t tier_id = 0;
  uint64_t size = 0;
  uint32_t owner_uid = 0;
  uint32_t mode = 0;
  uint64_t client_id = 0;  // leased: the holder; named: 0
  uint32_t handles = 0;    // open handles held by clients
  uint64_t resident_bytes = 0;
  bool operator==(const RegionEntry&) const = default;
};
struct RegionsRequest {
  bool operator==(const RegionsRequest&) const = default;
};
struct RegionsReply {
  std::vector<RegionEntry> regions;
  bool operator==(const RegionsReply&) const = default;
};

struct RegionMigrate {
  uint64_t region_id = 0;  // a region id as listed by Regions
  uint32_t target_tier = 0;
  bool operator==(const RegionMigrate&) const = default;
};
struct MigrateReply {
  uint64_t region_id = 0;
  uint32_t from_tier = 0;
  uint32_t to_tier = 0;
  uint64_t pages_total = 0;
  uint64_t pages_moved = 0;    // moved by this call
  uint64_t pages_already = 0;  // already on the target node
  uint64_t pages_absent = 0;   // never touched: no page to move yet
  uint64_t pages_failed = 0;
  uint64_t bytes_moved = 0;
  uint64_t elapsed_ns = 0;
  bool operator==(const MigrateReply&) const = default;
};

struct ClientEntry {
  uint64_t id = 0;
  uint32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string name;
  uint32_t regions = 0;
  uint64_t bytes = 0;
  uint64_t connected_ns = 0;  // how long ago it connected
  bool operator==(const ClientEntry&) const = default;
};
struct ClientsRequest {
  bool operator==(const ClientsRequest&) const = default;
};
struct ClientsReply {
  std::vector<ClientEntry> clients;
  bool operator==(const ClientsReply&) const = default;
};

struct Counter {
  std::string name;  // dotted, e.g. "pool.tier0.used_bytes"
  uint64_t value = 0;
  bool operator==(const Counter&) const = default;
};
struct StatsRequest {
  bool operator==(const StatsRequest&) const = default;
};
struct StatsReply {
  std::vector<Counter> counters;
  bool operator==(const StatsReply&) const = default;
};

struct BackendEntry {
  std::string cls;   // "MemTier", "BlockEngine", ...
  std::string name;  // "numa", "emu", "uring", ...
  BackendState state = BackendState::kAvailable;
  std::string detail;  // version or the reason it is not available
  bool operator==(const BackendEntry&) const = default;
};
struct BackendsRequest {
  bool operator==(const BackendsRequest&) const = default;
};
struct BackendsReply {
  std::vector<BackendEntry> backends;
  bool operator==(const BackendsReply&) const = default;
};

// Access-report ring (client -> daemon, shared memory). The daemon creates the
// ring and hands its memfd to the client; lib/proto/access_ring.hpp is the layout.
inline constexpr uint32_t kMaxAccessRingEntries = 1u << 20;
struct AccessRingOpen {
  uint32_t entries = 0;  // power of two up to kMaxAccessRingEntries; 0: the daemon's default
  bool operator==(const AccessRingOpen&) const = default;
};
struct AccessRingReply {
  uint32_t entries = 0;     // ring capacity in entries (a power of two)
  uint32_t entry_size = 0;  // bytes per entry
  uint64_t ring_bytes = 0;  // size of the memfd to map
  bool operator==(const AccessRingReply&) const = default;
};

enum class TierRole : uint8_t { kFast = 0, kSlow = 1, kUnmanaged = 2 };
enum class Nominator : uint8_t { kHpt = 0, kHwt = 1 };
enum class PageClass : uint8_t { kUnknown = 0, kDense = 1, kSparse = 2 };
inline constexpr uint32_t kNoTier = 0xffffffffu;
inline constexpr size_t kMaxKnobLength = 256;  // TieringSet key and value

struct TieringTierEntry {
  uint32_t tier_id = 0;
  TierRole role = TierRole::kUnmanaged;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t hot_pages = 0;          // pages of this tier in the last epoch's hot set
  uint64_t accesses = 0;           // accesses observed on this tier, last epoch
  uint64_t bandwidth_bps = 0;      // estimated from the access sources (bytes/s)
  uint64_t promotions = 0;         // pages moved onto this tier by the manager
  uint64_t demotions = 0;          // pages moved off this tier by the manager
  uint64_t bytes_promoted = 0;
  uint64_t bytes_demoted = 0;
  uint64_t rate_limit_hits = 0;    // moves deferred by the migration rate limit
  std::string name;
  bool operator==(const TieringTierEntry&) const = default;
};
struct TieringSourceEntry {
  BackendState state = BackendState::kAvailable;
  uint64_t accesses = 0;
  uint64_t dropped = 0;
  std::string name;
  std::string detail;
  bool operator==(const TieringSourceEntry&) const = default;
};
struct KnobEntry {
  std::string key;
  std::string value;
  bool operator==(const KnobEntry&) const = default;
};
struct TieringStatusRequest {
  bool operator==(const TieringStatusRequest&) const = default;
};
struct TieringStatusReply {
  uint8_t enabled = 0;  // 0 or 1
  Nominator nominator = Nominator::kHpt;
  uint64_t epoch = 0;              // epochs completed
  uint64_t epoch_ns = 0;           // tracker query period
  uint64_t promotion_period_ns = 0;  // the Elector's current period T
  uint64_t last_epoch_accesses = 0;
  uint64_t pages_moved = 0;    // by the engine, both directions, since start
  uint64_t pages_failed = 0;   // planned moves that did not happen
  std::string detail;          // why the engine is off or cannot move pages; how it moves them
  std::vector<TieringTierEntry> tiers;
  std::vector<TieringSourceEntry> sources;
  std::vector<KnobEntry> knobs;
  bool operator==(const TieringStatusReply&) const = default;
};

struct TieringHot {
  uint32_t top = 0;  // 1..kMaxListEntries
  bool operator==(const TieringHot&) const = default;
};
struct HotPageEntry {
  AccessSpace space = AccessSpace::kPoolRegion;
  PageClass page_class = PageClass::kUnknown;
  uint8_t touched_words = 0;  // 0..64; 0 with kUnknown
  uint32_t tier_id = kNoTier;  // where the page is now, kNoTier when unknown
  uint64_t owner = 0;          // region id or pid, per space
  uint64_t address = 0;        // page address in that space
  uint64_t count = 0;          // estimated accesses, last epoch
  bool operator==(const HotPageEntry&) const = default;
};
struct TieringHotReply {
  uint64_t epoch = 0;
  std::vector<HotPageEntry> pages;  // hottest first
  bool operator==(const TieringHotReply&) const = default;
};

struct TieringSet {
  std::string key;    // a [tiering] config key, 1..kMaxKnobLength bytes
  std::string value;  // its new value, as written in the config file
  bool operator==(const TieringSet&) const = default;
};
struct TieringSetReply {
  std::string key;
  std::string old_value;
  std::string new_value;  // normalized
  bool operator==(const TieringSetReply&) const = default;
};


// KV-cache store (docs/kvstore.md). The control socket sets up a connection's
// data path (KvOpen: the request/completion rings of lib/proto/kv_ring.hpp and
// a private writable put window) and its namespaces; the arenas are named pool
// regions the client opens read-only with NamedOpen.
inline constexpr size_t kMaxKvNamespaceField = 256;  // model_id, layout, dtype bytes
inline constexpr uint8_t kKvTierCountWire = 3;        // dram, cxl, ssd (kvcache::KvTier)

struct KvOpen {
  uint32_t sq_entries = 0;      // power of two 2..2^16; 0: the daemon's default
  uint32_t cq_entries = 0;      // power of two 2..2^16; 0: the daemon's default
  uint32_t sq_slab_bytes = 0;   // multiple of 64, 256..2^26; 0: default
  uint32_t cq_slab_bytes = 0;   // multiple of 64, 256..2^26; 0: default
  uint64_t put_window_bytes = 0;  // 0: the daemon's default; capped by it
  bool operator==(const KvOpen&) const = default;
};
// One arena the client maps read-only (NamedOpen of `region_name`).
// KvLocation.tier of a chunk in it equals `tier`.
struct KvArenaEntry {
  uint8_t tier = 0;          // kvcache::KvTier: 0 dram, 1 cxl
  uint32_t pool_tier_id = 0; // the pool tier holding its pages
  uint64_t bytes = 0;
  std::string region_name;
  bool operator==(const KvArenaEntry&) const = default;
};
struct KvOpenReply {
  uint32_t sq_entries = 0;
  uint32_t cq_entries = 0;
  uint32_t sq_slab_bytes = 0;
  uint32_t cq_slab_bytes = 0;
  uint64_t ring_bytes = 0;        // size of the ring memfd to map
  uint64_t put_window_bytes = 0;  // size of the writable put window memfd
  uint64_t slot_bytes = 0;        // largest chunk the store accepts
  uint64_t quota_bytes = 0;       // leased + reserved bytes this connection may hold; 0: none
  // Measured or configured speed of each tier as a client sees it, for the
  // recompute-or-load model; index = kvcache::KvTier. 0: tier absent.
  uint64_t tier_bandwidth_bps[kKvTierCountWire] = {0, 0, 0};
  uint64_t tier_latency_ns[kKvTierCountWire] = {0, 0, 0};
  std::vector<KvArenaEntry> arenas;
  bool operator==(const KvOpenReply&) const = default;
};

struct KvNamespaceOpen {
  std::string model_id;  // 1..kMaxKvNamespaceField bytes
  std::string layout;    // 1..kMaxKvNamespaceField bytes
  std::string dtype;     // 1..kMaxKvNamespaceField bytes
  uint32_t tp_rank = 0;  // < tp_size
  uint32_t tp_size = 1;  // >= 1
  uint32_t chunk_tokens = 0;  // >= 1
  // Read/write bits for owner, group, others (at most 0666; 0: 0600). Sets
  // the mode when this open creates the namespace (or the owner reopens it
  // with another non-zero mode); other openers are checked against it.
  uint32_t mode = 0;
  bool operator==(const KvNamespaceOpen&) const = default;
};
struct KvNamespaceReply {
  uint64_t namespace_id = 0;  // KvRequest.namespace_id for this namespace
  uint64_t fingerprint_hi = 0;
  uint64_t fingerprint_lo = 0;
  uint32_t chunk_tokens = 0;
  uint32_t owner_uid = 0;
  uint32_t owner_gid = 0;
  uint32_t mode = 0;          // the namespace's mode now
  uint8_t rights = 0;         // this connection's: 1 read, 2 write (kvcache::kKvRight*)
  bool operator==(const KvNamespaceReply&) const = default;
};

struct KvStatusRequest {
  bool operator==(const KvStatusRequest&) const = default;
};
struct KvTierStatus {
  uint8_t tier = 0;               // kvcache::KvTier
  uint8_t present = 0;            // 0 or 1
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t chunks = 0;
  uint64_t hits = 0;              // gets served from this tier
  uint64_t misses = 0;            // keys asked for that were not here nor above
  uint64_t evictions = 0;         // chunks that left this tier for lack of space
  uint64_t promotions = 0;        // chunks moved up into this tier
  uint64_t demotions = 0;         // chunks moved down into this tier
  uint64_t admissions_rejected = 0;  // ssd: chunks not admitted (seen too few times)
  uint64_t bytes_written = 0;     // ssd: device bytes written; arenas: bytes copied in
  uint64_t bytes_read = 0;        // ssd: device bytes read
  uint64_t errors = 0;            // ssd: read/write errors and corrupt entries dropped
  std::string name;               // pool tier name, or the SSD path
  bool operator==(const KvTierStatus&) const = default;
};
struct KvStatusReply {
  uint8_t enabled = 0;
  uint8_t eviction = 0;           // 0 lru, 1 s3fifo
  uint8_t ssd_sync = 0;           // 0 per-region, 1 per-commit
  uint32_t admission_threshold = 0;
  uint64_t slot_bytes = 0;
  uint64_t chunks = 0;            // indexed, all tiers
  uint64_t index_capacity = 0;
  uint64_t lookups = 0;
  uint64_t lookup_keys = 0;
  uint64_t lookup_hits = 0;
  uint64_t gets = 0;
  uint64_t puts = 0;              // chunks committed
  uint64_t put_aborts = 0;        // reservations dropped uncommitted
  uint64_t prefetches = 0;        // chunks queued SSD -> DRAM
  uint64_t deletes = 0;
  uint64_t leases = 0;            // outstanding, all clients
  uint64_t leased_bytes = 0;
  uint64_t reservations = 0;      // outstanding put slots
  uint64_t quota_rejections = 0;
  uint64_t ssd_durable_sequence = 0;
  std::string detail;             // why disabled, SSD engine, recovery summary
  std::vector<KvTierStatus> tiers;
  bool operator==(const KvStatusReply&) const = default;
};

struct KvNamespacesRequest {
  bool operator==(const KvNamespacesRequest&) const = default;
};
struct KvNamespaceEntry {
  uint64_t namespace_id = 0;
  uint64_t fingerprint_hi = 0;
  uint64_t fingerprint_lo = 0;
  uint32_t tp_rank = 0;
  uint32_t tp_size = 1;
  uint32_t chunk_tokens = 0;
  uint64_t chunks[kKvTierCountWire] = {0, 0, 0};  // per kvcache::KvTier
  uint64_t bytes[kKvTierCountWire] = {0, 0, 0};
  uint32_t owner_uid = 0;  // 0 with mode 0600 for a namespace known only from SSD recovery
  uint32_t owner_gid = 0;
  uint32_t mode = 0;
  std::string model_id;  // empty for a namespace known only from SSD recovery
  std::string layout;
  std::string dtype;
  bool operator==(const KvNamespaceEntry&) const = default;
};
struct KvNamespacesReply {
  std::vector<KvNamespaceEntry> namespaces;
  bool operator==(const KvNamespacesReply&) const = default;
};

// The namespace's owner or an admin: drops every chunk of a namespace on every tier (leased chunks go when
// their last lease is released).
struct KvNamespaceDrop {
  uint64_t namespace_id = 0;
  bool operator==(const KvNamespaceDrop&) const = default;
};
struct KvNamespaceDropReply {
  uint64_t chunks_dropped = 0;
  uint64_t chunks_deferred = 0;  // leased: dropped on release
  bool operator==(const KvNamespaceDropReply&) const = default;
};

// Shared model weights (docs/weights.md). The daemon validates a model's
// safetensors files and loads them once into a system named region
// "cxlpool-w-<model>" (mode 0444) the client maps read-only with NamedOpen;
// the region's own layout (lib/weights/region_layout.hpp) describes the
// tensors. Model names follow the region-name rule and are at most
// kMaxWeightsModelLength bytes, so the region name fits kMaxNameLength.
inline constexpr size_t kMaxWeightsModelLength = 180;
// One descriptor per file travels with WeightsLoad, in one datagram: Linux
// passes at most 253 (SCM_MAX_FD) per sendmsg, and a receiver must be able
// to see (and refuse) a few more than the limit.
inline constexpr size_t kMaxWeightsFiles = 250;

struct WeightsPath {
  std::string path;  // absolute, 1..kMaxStringLength bytes
  bool operator==(const WeightsPath&) const = default;
};
struct WeightsLoad {
  uint32_t tier_id = kNoTier;        // kNoTier: the first DRAM tier
  uint64_t max_resident_bytes = 0;   // 0: every tensor in the region
  std::string model;
  // 1..kMaxWeightsFiles labels; the files themselves travel as one
  // descriptor each, in this order (socket_io.hpp descriptor_count).
  std::vector<WeightsPath> paths;
  bool operator==(const WeightsLoad&) const = default;
};
struct WeightsOpen {
  std::string model;
  bool operator==(const WeightsOpen&) const = default;
};
struct WeightsLoadReply {
  uint32_t tier_id = 0;
  uint32_t files = 0;
  uint64_t tensor_count = 0;
  uint64_t total_bytes = 0;     // every tensor
  uint64_t resident_bytes = 0;  // the tensors in the region
  uint64_t region_bytes = 0;
  uint8_t loaded = 0;           // 1: this call loaded it; 0: it was loaded already
  std::string region_name;
  bool operator==(const WeightsLoadReply&) const = default;
};
struct WeightsUnload {
  std::string model;
  bool operator==(const WeightsUnload&) const = default;
};
struct WeightsUnloadReply {
  uint64_t region_bytes = 0;  // freed once no process maps it
  bool operator==(const WeightsUnloadReply&) const = default;
};
struct WeightsListRequest {
  bool operator==(const WeightsListRequest&) const = default;
};
struct WeightsEntry {
  uint32_t tier_id = 0;
  uint32_t files = 0;
  uint32_t owner_uid = 0;
  uint32_t opens = 0;           // loads and opens answered since it was loaded
  uint64_t tensor_count = 0;
  uint64_t total_bytes = 0;
  uint64_t resident_bytes = 0;
  uint64_t region_bytes = 0;
  std::string model;
  std::string region_name;
  bool operator==(const WeightsEntry&) const = default;
};
struct WeightsListReply {
  std::vector<WeightsEntry> models;
  bool operator==(const WeightsListReply&) const = default;
};

// Pinned host memory for a CUDA KV arena (docs/cuda.md): the daemon
// allocates it with the CUDA driver on the NUMA node of `tier_id` and sends
// the allocation's POSIX file descriptor, which the client imports into its
// GPU address space. The memory lives as long as that descriptor or an
// import of it; the daemon keeps no reference.
struct GpuHostAlloc {
  uint32_t tier_id = 0;
  uint32_t device = 0;  // CUDA device ordinal the allocation is made for
  uint64_t bytes = 0;   // > 0; rounded up to the driver's granularity
  bool operator==(const GpuHostAlloc&) const = default;
};
struct GpuHostAllocReply {
  uint64_t bytes = 0;  // the allocation's size, >= the request's
  uint32_t numa_node = 0;
  bool operator==(const GpuHostAllocReply&) const = default;
};

// Device pooling (docs/devpool.md): backends register the NICs and SSDs
// they own and renew a lease with heartbeats that carry the device's load;
// frontends attach to a kind of device and get a primary and a backup,
// each with a link slot of the pod region, whose file comes with the
// register and attach replies (one descriptor each).
enum class DevKind : uint8_t { kNet = 0, kBlk = 1 };
enum class DevHealth : uint8_t { kHealthy = 0, kLinkDown = 1, kDead = 2 };
inline constexpr size_t kMaxDeviceNameLength = 64;  // device and host names
inline constexpr uint32_t kNoDeviceId = 0;
inline constexpr uint32_t kNoLinkSlot = 0xffffffffu;

struct DevRegister {
  DevKind kind = DevKind::kNet;
  uint64_t capacity = 0;       // net: link speed in bit/s; blk: bytes; > 0
  uint64_t iops = 0;           // blk: nominal; 0 unknown
  uint64_t bandwidth_bps = 0;  // blk: nominal bytes/s; 0 unknown
  uint8_t mac[6] = {0, 0, 0, 0, 0, 0};  // net; all zero for blk
  std::string name;  // 1..kMaxDeviceNameLength printable ASCII
  std::string host;  // 1..kMaxDeviceNameLength printable ASCII
  bool operator==(const DevRegister&) const = default;
};
struct DevRegisterReply {
  uint32_t device_id = 0;     // > 0
  uint32_t device_line = 0;   // its line in the pod table
  uint32_t lease_ms = 0;      // heartbeats must come more often than this
  uint32_t telemetry_ms = 0;  // how often to send one (with the load)
  // The pod region, for mapping its file and checking its header.
  uint64_t pod_bytes = 0;        // size of the pod file
  uint64_t slot_bytes = 0;       // bytes per link slot, a multiple of 4096
  uint32_t link_slots = 0;
  uint32_t max_devices = 0;
  uint32_t max_attachments = 0;
  uint8_t coherence = 0;         // devpool::Coherence: 0 coherent, 1 non-coherent
  bool operator==(const DevRegisterReply&) const = default;
};

struct DevHeartbeat {
  uint32_t device_id = 0;
  uint8_t link_up = 1;        // 0 or 1; net: the port's link
  uint64_t bytes_per_s = 0;   // load since the last heartbeat
  uint64_t ops_per_s = 0;
  bool operator==(const DevHeartbeat&) const = default;
};
struct DevHeartbeatReply {
  DevHealth health = DevHealth::kHealthy;
  uint32_t lease_ms = 0;
  uint64_t table_version = 0;  // changes whenever the pod table is rewritten
  bool operator==(const DevHeartbeatReply&) const = default;
};

struct DevAttach {
  DevKind kind = DevKind::kNet;
  std::string host;            // the frontend's host, 1..kMaxDeviceNameLength
  std::string preferred;       // a device name, or empty: the least loaded
  std::string preferred_host;  // its host, or empty: any
  bool operator==(const DevAttach&) const = default;
};
struct DevAttachReply {
  uint32_t attachment_id = 0;   // > 0
  uint32_t line = 0;            // its line in the pod table
  uint32_t generation = 0;
  uint8_t active = 0;           // 0 or 1: which leg carries the traffic
  uint32_t device[2] = {0, 0};  // each leg's device; kNoDeviceId for a leg without one
  uint32_t slot[2] = {0, 0};    // each leg's link slot
  // The pod region, for mapping its file and checking its header.
  uint64_t pod_bytes = 0;        // size of the pod file
  uint64_t slot_bytes = 0;       // bytes per link slot, a multiple of 4096
  uint32_t link_slots = 0;
  uint32_t max_devices = 0;
  uint32_t max_attachments = 0;
  uint8_t coherence = 0;         // devpool::Coherence: 0 coherent, 1 non-coherent
  bool operator==(const DevAttachReply&) const = default;
};

struct DevDetach {
  uint32_t attachment_id = 0;
  bool operator==(const DevDetach&) const = default;
};

struct DevListRequest {
  bool operator==(const DevListRequest&) const = default;
};
struct DevDeviceEntry {
  uint32_t id = 0;
  DevKind kind = DevKind::kNet;
  DevHealth health = DevHealth::kHealthy;
  uint64_t capacity = 0;
  uint64_t iops = 0;
  uint64_t bandwidth_bps = 0;
  uint8_t mac[6] = {0, 0, 0, 0, 0, 0};
  uint32_t load_ppm = 0;          // EWMA utilization, parts per million of capacity
  uint64_t bytes_per_s = 0;       // last sample
  uint64_t ops_per_s = 0;
  uint32_t samples = 0;           // telemetry samples received
  uint32_t primaries = 0;         // attachments it serves
  uint32_t backups = 0;           // attachments it stands by for
  uint64_t lease_left_ms = 0;     // 0 once expired
  uint64_t client_id = 0;         // the backend's connection
  std::string name;
  std::string host;
  bool operator==(const DevDeviceEntry&) const = default;
};
struct DevAttachmentEntry {
  uint32_t id = 0;
  DevKind kind = DevKind::kNet;
  uint8_t active = 0;
  uint32_t generation = 0;
  uint32_t device[2] = {0, 0};
  uint32_t slot[2] = {0, 0};
  uint64_t client_id = 0;  // the frontend's connection
  std::string host;
  bool operator==(const DevAttachmentEntry&) const = default;
};
struct DevListReply {
  uint8_t enabled = 0;       // 0 or 1
  uint64_t failovers = 0;    // attachments switched to their backups since start
  uint64_t table_version = 0;
  std::string pod_path;      // the pod file; empty when disabled
  std::vector<DevDeviceEntry> devices;
  std::vector<DevAttachmentEntry> attachments;
  std::string state_backend;    // where the allocator's state lives: "embedded" or "etcd"
  uint8_t state_connected = 0;  // 0 or 1: etcd answers (always 1 embedded)
  std::string state_error;      // the last etcd error; empty when none
  bool operator==(const DevListReply&) const = default;
};

// Admin: the attachments whose primary is the device switch to their backups.
struct DevFailover {
  uint32_t device_id = 0;
  bool operator==(const DevFailover&) const = default;
};
struct DevFailoverReply {
  uint32_t device_id = 0;
  uint32_t moved = 0;           // attachments switched
  uint32_t without_backup = 0;  // attachments left on it: no backup to switch to
  bool operator==(const DevFailoverReply&) const = default;
};

// Checkpoints (docs/ckpt.md "Through the daemon"): the daemon checkpoints a
// process the client could trace itself into an image that is a pool object
// on a tier, and restores clones of it with cxlpool-restore. Checkpoint
// names follow the region-name rule.
enum class CkptPolicy : uint8_t { kMow = 0, kMoa = 1, kHybrid = 2 };
inline constexpr size_t kMaxCkptNameLength = 180;
inline constexpr uint32_t kMaxCkptClones = 64;
// CkptCreate flags.
inline constexpr uint32_t kCkptKillAfter = 1u << 0;  // kill the target once the image is complete
inline constexpr uint32_t kCkptKnownFlags = kCkptKillAfter;

struct CkptCreate {
  // The target's pid in the daemon's pid namespace; 0: the target is the
  // pidfd that comes with the message (no pid-reuse race).
  uint32_t pid = 0;
  uint32_t tier_id = kNoTier;  // kNoTier: the slowest tier (a CXL tier when there is one)
  uint32_t flags = 0;          // kCkpt*
  std::string name;
  bool operator==(const CkptCreate&) const = default;
};
struct CkptEntry {
  uint64_t region_id = 0;    // the pool region that holds the image
  uint64_t image_bytes = 0;  // > 0; charged to the owner on the tier
  uint64_t created_unix_ns = 0;
  uint64_t capture_ns = 0;   // how long the target was stopped and copied
  uint32_t tier_id = 0;
  uint32_t owner_uid = 0;
  uint32_t pid = 0;          // the checkpointed process
  uint32_t threads = 0;      // > 0
  uint32_t restores = 0;     // clones restored from it so far
  std::string name;
  bool operator==(const CkptEntry&) const = default;
};
struct CkptListRequest {
  bool operator==(const CkptListRequest&) const = default;
};
// The answer to CkptList, and to CkptCreate (then its one entry).
struct CkptListReply {
  std::vector<CkptEntry> checkpoints;
  bool operator==(const CkptListReply&) const = default;
};
// Clones of a checkpoint, each in a pid namespace of its own. The caller's
// stdin, stdout and stderr come with it (three descriptors, in that order)
// or none (the clones get /dev/null).
struct CkptRestore {
  CkptPolicy policy = CkptPolicy::kMow;
  uint32_t count = 1;  // 1..kMaxCkptClones
  std::string name;
  bool operator==(const CkptRestore&) const = default;
};
struct CkptClone {
  uint32_t pid = 0;     // the clone, in the daemon's pid namespace
  uint32_t keeper = 0;  // its pid namespace's init (reaps it, serves moa faults)
  uint32_t ns_pid = 0;  // the clone's pid inside its namespace: the original pid
  bool operator==(const CkptClone&) const = default;
};
struct CkptRestoreReply {
  uint64_t restore_ns = 0;  // from the request to the last clone running
  std::vector<CkptClone> clones;
  bool operator==(const CkptRestoreReply&) const = default;
};
struct CkptRemove {
  std::string name;
  bool operator==(const CkptRemove&) const = default;
};
// A restored clone's connection answers to the ids its library recorded:
// `alias` (a leased region id of the checkpointed process) stands for
// `region_id` (a leased region this connection allocated) in this
// connection's RegionFree, until that region is freed.
inline constexpr uint32_t kMaxRegionAliases = 1024;  // per connection
struct RegionAlias {
  uint64_t region_id = 0;  // > 0: a leased region this connection allocated
  uint64_t alias = 0;      // > 0 and != region_id
  bool operator==(const RegionAlias&) const = default;
};

// Pods of hosts (docs/pods.md): the members this daemon knows, from its pod
// state (the embedded single-host pod, or etcd).
enum class PodBackend : uint8_t { kEmbedded = 0, kEtcd = 1 };

struct PodStatusRequest {
  bool operator==(const PodStatusRequest&) const = default;
};
struct PodMemberEntry {
  uint64_t lease_id = 0;        // the etcd lease its record lives by; 0 embedded
  uint64_t exported_bytes = 0;  // memory it offers the pod (its tiers' capacity)
  uint64_t revision = 0;        // the etcd revision that created its record
  uint8_t self = 0;             // 1 for this daemon's own record
  std::string host;
  std::string provider;  // libfabric provider it is reached with ("tcp;ofi_rxm", "shm")
  std::string address;   // its fabric address
  std::string tiers;     // "name:kind:capacity" entries, comma-separated
  std::string devices;   // pooled device names, comma-separated
  bool operator==(const PodMemberEntry&) const = default;
};
// One rail of this daemon's transfer engine (hal::Transport).
struct PodRailEntry {
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t chunks = 0;
  uint64_t failures = 0;  // chunks or messages that failed or stalled on it
  uint64_t resets = 0;    // times it was taken out of service
  uint8_t up = 0;         // 1 while in service
  std::string provider;
  std::string address;
  bool operator==(const PodRailEntry&) const = default;
};
// What this daemon moved with one peer of the pod.
struct PodPeerEntry {
  uint64_t fetched_chunks = 0;  // KV chunks read from it
  uint64_t fetched_bytes = 0;
  uint64_t fetch_errors = 0;    // reads or control exchanges with it that failed
  uint64_t retries = 0;         // chunk attempts beyond the first on its reads
  uint64_t pins_served = 0;     // chunks it pinned here to read them
  std::string host;
  bool operator==(const PodPeerEntry&) const = default;
};
struct PodStatusReply {
  PodBackend backend = PodBackend::kEmbedded;
  uint8_t connected = 0;       // 1 while the pod state is reachable (always, embedded)
  uint32_t lease_ttl_s = 0;
  uint64_t lease_id = 0;       // this daemon's lease; 0 while it has none
  uint64_t joins = 0;
  uint64_t departures = 0;
  uint64_t etcd_errors = 0;
  std::string pod;        // the pod's name
  std::string host;       // this daemon's member name
  std::string endpoints;  // etcd endpoints, comma-separated; empty embedded
  std::string last_error; // the last etcd error; empty when none
  std::vector<PodMemberEntry> members;  // by host, at most kMaxListEntries
  // The transfer engine: "" when it is not open (embedded pod), else its
  // backend and provider; fabric_error says why it could not be opened.
  std::string fabric;
  std::string fabric_error;
  uint64_t transfer_requests = 0;
  uint64_t transfer_failures = 0;
  uint64_t chunks_retried = 0;
  uint64_t checksum_mismatches = 0;
  // The KV store across the pod: gets that asked peers, chunks found there
  // and not, bytes fetched, failed fetches, chunks pinned for peers.
  uint64_t kv_remote_gets = 0;
  uint64_t kv_remote_hits = 0;
  uint64_t kv_remote_misses = 0;
  uint64_t kv_remote_bytes = 0;
  uint64_t kv_remote_errors = 0;
  uint64_t kv_pins_served = 0;
  // Replicas ([pod] replica_num): requests to keep copies a peer accepted,
  // chunks copied here from peers' puts, failed requests and copies,
  // copies not made.
  uint64_t kv_replications_sent = 0;
  uint64_t kv_replicated_chunks = 0;
  uint64_t kv_replication_errors = 0;
  uint64_t kv_replication_dropped = 0;
  std::vector<PodRailEntry> rails;  // at most kMaxListEntries
  std::vector<PodPeerEntry> peers;  // by host, at most kMaxListEntries
  bool operator==(const PodStatusReply&) const = default;
};

enum class MessageKind : uint8_t { kRequest, kReply };

namespace detail {
// Drops the placeholder that lets the table's rows each start with a comma.
template <typename Placeholder, typename... T>
using MessageVariant = std::variant<T...>;
}  // namespace detail

// Every message type, in the table's order.
#define CXLPOOL_PROTO_ALTERNATIVE(type, code, id, kind, answer, fds) , type
using Message = detail::MessageVariant<void CXLPOOL_PROTO_MESSAGES(CXLPOOL_PROTO_ALTERNATIVE)>;
#undef CXLPOOL_PROTO_ALTERNATIVE

// The table's row for T; not defined for types that are not messages.
template <typename T>
struct MessageTraits;
#define CXLPOOL_PROTO_TRAITS(type, code, id, kind, answer, fds) \
  template <>                                                   \
  struct MessageTraits<type> {                                  \
    static constexpr MsgType kType = MsgType::code;             \
    static constexpr const char* kName = #type;                 \
    static constexpr MessageKind kKind = MessageKind::k##kind;  \
    static constexpr size_t kDescriptors = fds;                 \
    using Answer = answer;                                      \
  };
CXLPOOL_PROTO_MESSAGES(CXLPOOL_PROTO_TRAITS)
#undef CXLPOOL_PROTO_TRAITS

template <typename T>
concept RequestMessage = MessageTraits<T>::kKind == MessageKind::kRequest;

// The reply that answers a successful request of type T.
template <RequestMessage T>
using ReplyTo = typename MessageTraits<T>::Answer;

// Calls f(std::type_identity<T>{}) for every message type T, in table order.
template <typename F>
constexpr void for_each_message_type(F&& f) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (f(std::type_identity<std::variant_alternative_t<I, Message>>{}), ...);
  }(std::make_index_sequence<std::variant_size_v<Message>>());
}

struct Envelope {
  Header header;
  Message message;
  bool operator==(const Envelope&) const = default;
};

MsgType message_type(const Message& message);
const char* message_type_name(MsgType type);

// True for the types a client may send (requests); false for replies.
bool is_request(MsgType type);

// Serializes one message. Fails with EMSGSIZE when the result would exceed
// kMaxMessageSize and EINVAL when a field breaks a limit or `version` is not
// one this build speaks (Hello: any version >= 1), so a sender cannot
// produce what a receiver must reject.
Result<std::vector<std::byte>> encode(uint32_t request_id, const Message& message,
                                      uint16_t version = kVersionMax);

// Parses and validates one datagram. Every field is checked: magic, version
// range, known type, payload_length == bytes present, enum values, flag bits,
// string lengths and contents, list counts, no trailing bytes. Errors use
// EPROTO (malformed), EMSGSIZE (too large) or EPROTONOSUPPORT (version).
// Hello is the exception to the version range: it decodes at any header
// version >= 1 so that a daemon can answer a newer client, and at versions
// above kVersionMax bytes after its last known field are ignored (a later
// version may append fields; the first three are frozen).
Result<Envelope> decode(std::span<const std::byte> datagram);

// Named region names: 1..kMaxNameLength bytes of [A-Za-z0-9._-], not starting with '.'.
bool valid_region_name(std::string_view name);

}  // namespace cxlpool::proto
