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

struct Config {
  std::string source = "embedded default";  // file path when loaded from a file

  // [daemon]
  std::filesystem::path state_dir;  // empty: $XDG_RUNTIME_DIR/cxlpool, or /run/cxlpool as root
  uint32_t socket_mode = 0660;
  std::string socket_group = "cxlpool";  // applied when the group exists
  std::vector<std::string> admin_groups = {"cxlpool"};
  LogLevel log_level = LogLevel::kInfo;
  uint32_t max_clients = 256;
  uint32_t max_regions_per_client = 1024;
  uint32_t watchdog_divisor = 2;  // ping every WATCHDOG_USEC / divisor
  uint32_t busy_poll_us = 50;     // keep polling this long after a request before sleeping

  // [pool]
  uint64_t max_region_size = 64ull << 30;

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

  // [metrics]
  uint16_t metrics_port = 0;  // 0 = no Prometheus endpoint
  std::string metrics_address = "127.0.0.1";
};

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

LogLevel parse_log_level_or(std::string_view text, LogLevel fallback);
const char* log_level_name(LogLevel level);

}  // namespace cxlpool::daemon
