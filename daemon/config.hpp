// SPDX-License-Identifier: Apache-2.0
// cxlpoold configuration: the TOML schema (docs/configuration.md), its
// validation, and the embedded default used when no file is given. Parsing is
// kept apart from the services that consume the values.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cxlpool/common/log.hpp"
#include "cxlpool/common/result.hpp"
#include "pod/pod_name.hpp"

namespace cxlpool::tiering {
struct M5Config;
}

namespace cxlpool::daemon {

enum class EmulatedBacking { kMemfd, kHugetlbfs };

struct EmulatedTierConfig {
  std::string name;                 // unique among tiers, [a-z0-9_-]{1,32}
  uint64_t capacity = 0;            // > 0
  EmulatedBacking backing = EmulatedBacking::kMemfd;
  std::string hugetlbfs_path;       // required for kHugetlbfs, a hugetlbfs mount
  int numa_node = -1;               // node the pages physically live on; -1 = first DRAM node
  uint32_t latency_ns = 250;        // declared load-latency class
  uint32_t bandwidth_mbps = 20000;  // declared bandwidth class
};

struct QuotaRule {
  uint32_t uid = 0;
  std::string tier;  // tier name, or "*" for every tier
  uint64_t bytes = 0;
};

// [tiering]: the M5 tiering engine. The manager's knobs (M5Config) are kept
// as normalized text so that this header and its parser stay the only place
// that knows the file format; the engine validates and applies them.
struct TieringConfig {
  std::optional<bool> enabled;  // unset: on when a fast/slow tier pair exists
  uint32_t epoch_ms = 1000;     // tracker query period
  std::string fast_tier;        // tier name; empty: the first dram tier
  std::string slow_tier;        // tier name; empty: the first cxl, then emulated, tier
  std::vector<std::string> sources = {"client"};  // client, damon, perf
  std::string damon_sysfs_root = "/sys";  // damon: read a running kdamond there
  uint32_t damon_kdamond = 0;             // damon: which kdamond
  std::vector<std::pair<std::string, std::string>> knobs;  // M5Config key -> value, file order
};

// Sets `knobs` (M5Config key -> value) on `m5` in passes until a pass sets
// none: a knob checked against another (the watermarks) may need that one
// set first. Returns the positions in `knobs` of those still not set, in
// order; m5.set() on one of them says why.
std::vector<size_t> set_m5_knobs(tiering::M5Config& m5, const std::vector<std::pair<std::string, std::string>>& knobs);

// [kvstore]: the KV-cache store served by cxlpoold (docs/kvstore.md). Kept
// free of lib/kvcache types so that the parser stays independent of the
// engine; daemon/kvstore translates.
enum class KvEviction { kLru, kS3Fifo };
enum class KvSsdSync { kPerRegion, kPerCommit };
enum class KvSsdEngine { kAuto, kIoUring, kPosix };

struct KvStoreSection {
  bool enabled = true;
  std::string dram_tier;  // tier name; empty: the first dram tier
  std::string cxl_tier;   // tier name; empty: the first cxl tier, else the first emulated one
  uint64_t dram_bytes = 256ull << 20;
  uint64_t cxl_bytes = 256ull << 20;   // 0: no CXL arena
  uint64_t slot_bytes = 2ull << 20;    // largest chunk; multiple of 4096
  KvEviction eviction = KvEviction::kLru;
  uint32_t admission_threshold = 2;    // SSD admission: sightings needed
  std::string ssd_path;                // file or block device; empty: no SSD tier
  std::string view_dir;                // tmpfs directory for the namespace views; empty: memfds
  uint64_t ssd_bytes = 0;              // size to give a new (or smaller) file
  uint64_t ssd_region_bytes = 16ull << 20;
  KvSsdSync ssd_sync = KvSsdSync::kPerRegion;
  KvSsdEngine ssd_engine = KvSsdEngine::kAuto;
  // Threads with a device queue each that carry the SSD tier's I/O; 0: the
  // event loop's own queue.
  uint32_t ssd_workers = 2;
  // Registered staging buffers (of slot_bytes) that SSD reads go through
  // before a copy into their slot; 0: reads land in the slot directly;
  // unset: kv_ssd_read_staging().
  std::optional<uint32_t> ssd_read_staging;
  // Threads that copy committed chunks from the put windows into the DRAM
  // arena; 0: the event loop copies; unset: kv_commit_workers().
  std::optional<uint32_t> commit_workers;
  // With commit workers, chunks this large are answered once their CRC is
  // taken and copied behind the answer; 0: always copied before it.
  uint64_t copy_behind_min_bytes = 1ull << 20;
  uint64_t ssd_lend_min_bytes = 256ull << 10;  // demotions this large go to the log from their slot; 0: never
  uint64_t put_window_bytes = 64ull << 20;  // per connection
  // Leased + reserved bytes per uid, over all of its connections; 0:
  // unlimited; unset: a quarter of the DRAM arena (kv_client_quota()).
  std::optional<uint64_t> client_quota_bytes;
  uint32_t lease_timeout_ms = 30000;        // a lease older than this is revoked; 0: never
  bool ssd_format_foreign = false;          // take over an ssd_path that holds something else
  uint32_t max_leases_per_client = 65536;
  uint64_t index_capacity = 1ull << 20;     // chunks indexed over all tiers
  // Tier speeds the recompute-or-load model uses. The cxl pair 0: the
  // emulated tier's declared values, else 10000 MB/s and 300 ns.
  uint32_t dram_bandwidth_mbps = 20000;
  uint32_t dram_latency_ns = 100;
  uint32_t cxl_bandwidth_mbps = 0;
  uint32_t cxl_latency_ns = 0;
  uint32_t ssd_bandwidth_mbps = 2000;
  uint32_t ssd_latency_ns = 100000;
};

// [devpool]: the embedded pod allocator and its pod region (docs/devpool.md).
enum class DevpoolCoherence { kCoherent, kNonCoherent };

struct DevpoolSection {
  bool enabled = true;
  std::string pod_path;                  // empty: <state dir>/devpool.pod
  uint32_t link_slots = 64;              // even; two per attachment
  uint32_t max_devices = 64;             // device lines of the pod table
  uint64_t link_buffer_bytes = 1ull << 20;  // each side of a link
  DevpoolCoherence coherence = DevpoolCoherence::kCoherent;
  uint32_t lease_ms = 1000;
  uint32_t telemetry_ms = 100;
  uint32_t max_devices_per_uid = 16;     // 0: no limit
  uint32_t max_attachments_per_uid = 16; // 0: no limit
};

// [pod]: the pod of hosts this daemon belongs to (docs/pods.md).
enum class PodStateKind { kEmbedded, kEtcd };

struct PodSection {
  PodStateKind state = PodStateKind::kEmbedded;  // embedded: a single-host pod
  std::string name = "default";                  // the pod's name: its etcd key prefix
  std::string host;                              // member name; empty: the host name
  std::vector<std::string> etcd_endpoints;       // "http://HOST:PORT", tried in order
  uint32_t lease_ttl_s = 10;                     // a silent member is dropped after this
  uint32_t etcd_timeout_ms = 1000;               // per etcd request
  std::string provider = "tcp;ofi_rxm";          // libfabric provider peers reach it with
  std::string address;                           // its fabric address, "HOST:PORT"; may be empty
  // The transfer engine's rails (local IP literals); empty: one rail on
  // the address's host, else where the provider picks.
  std::vector<std::string> rails;
  bool shm = true;  // also reach peers on this host through shared memory
  // Copies of each KV chunk put here that the pod keeps, this host's
  // included: 1 = no replicas; n = n - 1 peers also hold it.
  uint32_t replica_num = 1;
  // The pod's shared secret (an absolute path); its holders authenticate
  // each other's KV control connections. "": no authentication.
  std::string secret_file;
  // etcd with its authentication enabled: the user the daemon calls etcd
  // as, and the file of its password (both or neither).
  std::string etcd_user;
  std::string etcd_password_file;
};

struct Config {
  std::string source = "embedded default";  // file path when loaded from a file

  // [daemon]
  std::filesystem::path state_dir;  // empty: $XDG_RUNTIME_DIR/cxlpool, or /run/cxlpool as root
  uint32_t socket_mode = 0660;
  std::string socket_group = "cxlpool";  // applied when the group exists
  std::vector<std::string> admin_groups = {"cxlpool"};
  LogLevel log_level = LogLevel::kInfo;
  uint32_t max_clients = 256;
  uint32_t max_clients_per_uid = 64;     // connections of one non-admin uid; 0: no limit
  uint32_t admin_reserved_clients = 4;   // of max_clients, only admins may take these
  uint32_t max_regions_per_client = 1024;
  uint32_t watchdog_divisor = 2;  // ping every WATCHDOG_USEC / divisor
  uint32_t busy_poll_us = 50;     // keep polling this long after a request before sleeping

  // [pool]
  uint64_t max_region_size = 64ull << 30;
  // GpuHostAlloc bytes per uid, charged to the session until it closes; 0: no limit.
  uint64_t gpu_host_bytes_per_uid = 16ull << 30;

  // [numa]
  bool numa_enabled = true;
  uint32_t numa_capacity_percent = 50;  // share of each node's memory the pool may hand out
  std::vector<int> numa_exclude_nodes;
  std::string sysfs_root = "/";         // tests point this at a fixture tree

  // [[emulated_tier]]
  std::vector<EmulatedTierConfig> emulated_tiers;

  // [quota]
  uint64_t quota_default_bytes = 0;  // per uid per tier; 0 = unlimited
  std::vector<QuotaRule> quota_rules;

  // [tiering]
  TieringConfig tiering;

  // [kvstore]
  KvStoreSection kvstore;

  // [devpool]
  DevpoolSection devpool;

  // [ckpt]
  uint32_t ckpt_restore_timeout_ms = 60'000;  // a restore that has not reported by then fails

  // [pod]
  PodSection pod;

  // [metrics]
  uint16_t metrics_port = 0;  // 0 = no Prometheus endpoint
  std::string metrics_address = "127.0.0.1";
};

// Pod and member names (etcd key segments and protocol names):
// valid_pod_name in pod/pod_name.hpp.

// The configuration used when cxlpoold starts without --config: DRAM node(s)
// as the fast tier plus one emulated slow tier of 1 GiB.
Config embedded_default_config();

// Parses TOML text. Errors name the file, line and key ("cxlpoold.toml:7: numa.capacity_percent:
// must be 1..100"); unknown keys and tables are errors too.
Result<Config> parse_config(std::string_view toml_text, const std::string& source_name);
Result<Config> load_config_file(const std::filesystem::path& path);

// Keys whose change SIGHUP cannot apply without a restart (state_dir, tiers,
// metrics address/port, ...), as "section.key" names; empty when all changes
// can be applied in place.
std::vector<std::string> changes_needing_restart(const Config& running, const Config& next);

// The commit copy threads in effect: the configured number, else a quarter
// of `online_cpus`, 1 to 4.
uint32_t kv_commit_workers(const KvStoreSection& kv, unsigned online_cpus);

// The KV quota per uid in effect for a DRAM arena of `dram_arena_bytes`:
// the configured one, else a quarter of the arena (at least one slot), so
// that no one user can pin or reserve the whole arena.
uint64_t kv_client_quota(const KvStoreSection& kv, uint64_t dram_arena_bytes);

// Largest capacity any tier may declare: a typo ("64P" for "64G") is refused
// rather than planned around.
inline constexpr uint64_t kMaxTierCapacity = 1ull << 50;

LogLevel parse_log_level_or(std::string_view text, LogLevel fallback);
const char* log_level_name(LogLevel level);

}  // namespace cxlpool::daemon
