// SPDX-License-Identifier: Apache-2.0
// [kvstore]: defaults, every key read, every rejection naming its key and
// line, restart-only keys, and the example file and the documentation
// covering every key.
#include <gtest/gtest.h>

#include "config.hpp"
#include "config_test_support.hpp"
#include "cxlpool/common/units.hpp"

namespace cxlpool::daemon {
namespace {

constexpr const char* kSource = "kv.toml";

Result<Config> parse(const std::string& text) { return parse_config(text, kSource); }

const std::vector<std::string> kKvKeys = {
    "enabled",           "dram_tier",          "cxl_tier",          "dram_bytes",
    "cxl_bytes",         "slot_bytes",         "eviction",          "admission_threshold",
    "ssd_path",          "ssd_bytes",          "ssd_region_bytes",  "ssd_sync",
    "ssd_engine",        "put_window_bytes",   "client_quota_bytes", "max_leases_per_client",
    "index_capacity",    "dram_bandwidth_mbps", "dram_latency_ns",  "cxl_bandwidth_mbps",
    "cxl_latency_ns",    "ssd_bandwidth_mbps", "ssd_latency_ns",   "ssd_lend_min_bytes",
    "lease_timeout_ms",  "ssd_format_foreign", "ssd_workers",       "commit_workers",
    "ssd_read_staging",  "copy_behind_min_bytes", "view_dir",
};

TEST(KvStoreConfig, Defaults) {
  auto config = parse("");
  ASSERT_TRUE(config) << config.error().message;
  const KvStoreSection& kv = config->kvstore;
  EXPECT_TRUE(kv.enabled);
  EXPECT_TRUE(kv.dram_tier.empty());
  EXPECT_TRUE(kv.cxl_tier.empty());
  EXPECT_EQ(kv.dram_bytes, 256 * kMiB);
  EXPECT_EQ(kv.cxl_bytes, 256 * kMiB);
  EXPECT_EQ(kv.slot_bytes, 2 * kMiB);
  EXPECT_EQ(kv.eviction, KvEviction::kLru);
  EXPECT_EQ(kv.admission_threshold, 2u);
  EXPECT_TRUE(kv.ssd_path.empty());
  EXPECT_TRUE(kv.view_dir.empty()) << "memfd views";
  EXPECT_EQ(kv.ssd_bytes, 0u);
  EXPECT_EQ(kv.ssd_region_bytes, 16 * kMiB);
  EXPECT_EQ(kv.ssd_sync, KvSsdSync::kPerRegion);
  EXPECT_EQ(kv.ssd_engine, KvSsdEngine::kAuto);
  EXPECT_EQ(kv.ssd_workers, 2u);
  EXPECT_FALSE(kv.ssd_read_staging.has_value());
  EXPECT_FALSE(kv.commit_workers.has_value());
  EXPECT_EQ(kv.ssd_lend_min_bytes, 256u * 1024);
  EXPECT_EQ(kv.copy_behind_min_bytes, kMiB);
  EXPECT_EQ(kv.put_window_bytes, 64 * kMiB);
  EXPECT_FALSE(kv.client_quota_bytes.has_value());
  EXPECT_EQ(kv.lease_timeout_ms, 30000u);
  EXPECT_FALSE(kv.ssd_format_foreign);
  EXPECT_EQ(kv.max_leases_per_client, 65536u);
  EXPECT_EQ(kv.index_capacity, 1u << 20);
  EXPECT_EQ(kv.dram_bandwidth_mbps, 20000u);
  EXPECT_EQ(kv.dram_latency_ns, 100u);
  EXPECT_EQ(kv.cxl_bandwidth_mbps, 0u);
  EXPECT_EQ(kv.cxl_latency_ns, 0u);
  EXPECT_EQ(kv.ssd_bandwidth_mbps, 2000u);
  EXPECT_EQ(kv.ssd_latency_ns, 100000u);
  EXPECT_TRUE(embedded_default_config().kvstore.enabled);
}

TEST(KvStoreConfig, EveryKeyRead) {
  auto config = parse(R"([kvstore]
enabled = false
dram_tier = "dram0"
cxl_tier = "emu-slow"
dram_bytes = "1G"
cxl_bytes = "4G"
slot_bytes = "1M"
eviction = "s3fifo"
admission_threshold = 1
ssd_path = "/var/lib/cxlpool/kv.log"
ssd_bytes = "64G"
ssd_region_bytes = "32M"
ssd_sync = "per-commit"
ssd_engine = "posix"
commit_workers = 8
ssd_lend_min_bytes = "1M"
copy_behind_min_bytes = "4M"
put_window_bytes = "16M"
client_quota_bytes = "2G"
lease_timeout_ms = 500
ssd_format_foreign = true
max_leases_per_client = 100
index_capacity = 5000000
dram_bandwidth_mbps = 30000
dram_latency_ns = 90
cxl_bandwidth_mbps = 12000
cxl_latency_ns = 350
ssd_bandwidth_mbps = 6000
ssd_latency_ns = 80000
)");
  ASSERT_TRUE(config) << config.error().message;
  const KvStoreSection& kv = config->kvstore;
  EXPECT_FALSE(kv.enabled);
  EXPECT_EQ(kv.dram_tier, "dram0");
  EXPECT_EQ(kv.cxl_tier, "emu-slow");
  EXPECT_EQ(kv.dram_bytes, kGiB);
  EXPECT_EQ(kv.cxl_bytes, 4 * kGiB);
  EXPECT_EQ(kv.slot_bytes, kMiB);
  EXPECT_EQ(kv.eviction, KvEviction::kS3Fifo);
  EXPECT_EQ(kv.admission_threshold, 1u);
  EXPECT_EQ(kv.ssd_path, "/var/lib/cxlpool/kv.log");
  EXPECT_EQ(kv.ssd_bytes, 64 * kGiB);
  EXPECT_EQ(kv.ssd_region_bytes, 32 * kMiB);
  EXPECT_EQ(kv.ssd_sync, KvSsdSync::kPerCommit);
  EXPECT_EQ(kv.ssd_engine, KvSsdEngine::kPosix);
  EXPECT_EQ(kv.commit_workers, 8u);
  EXPECT_EQ(kv.ssd_lend_min_bytes, kMiB);
  EXPECT_EQ(kv.copy_behind_min_bytes, 4 * kMiB);
  EXPECT_EQ(kv.put_window_bytes, 16 * kMiB);
  EXPECT_EQ(kv.client_quota_bytes, 2 * kGiB);
  EXPECT_EQ(kv.lease_timeout_ms, 500u);
  EXPECT_TRUE(kv.ssd_format_foreign);
  EXPECT_EQ(kv.max_leases_per_client, 100u);
  EXPECT_EQ(kv.index_capacity, 5000000u);
  EXPECT_EQ(kv.dram_bandwidth_mbps, 30000u);
  EXPECT_EQ(kv.dram_latency_ns, 90u);
  EXPECT_EQ(kv.cxl_bandwidth_mbps, 12000u);
  EXPECT_EQ(kv.cxl_latency_ns, 350u);
  EXPECT_EQ(kv.ssd_bandwidth_mbps, 6000u);
  EXPECT_EQ(kv.ssd_latency_ns, 80000u);
}

TEST(KvStoreConfig, CommitWorkersFollowTheCpusUnlessSet) {
  const KvStoreSection unset;
  EXPECT_EQ(kv_commit_workers(unset, 1), 1u);
  EXPECT_EQ(kv_commit_workers(unset, 2), 1u);
  EXPECT_EQ(kv_commit_workers(unset, 12), 3u);
  EXPECT_EQ(kv_commit_workers(unset, 16), 4u);
  EXPECT_EQ(kv_commit_workers(unset, 192), 4u);
  KvStoreSection set;
  set.commit_workers = 7;
  EXPECT_EQ(kv_commit_workers(set, 2), 7u);
  set.commit_workers = 0;
  EXPECT_EQ(kv_commit_workers(set, 64), 0u) << "0: the event loop copies";
}

TEST(KvStoreConfig, AcceptedEdges) {
  // No CXL arena; a slot as large as the DRAM arena and the put window.
  auto small = parse("[kvstore]\ncxl_bytes = 0\nslot_bytes = 4096\ndram_bytes = 4096\nput_window_bytes = 4096\n"
                     "admission_threshold = 0\nssd_engine = \"io_uring\"\ncommit_workers = 0");
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(small->kvstore.cxl_bytes, 0u);
  EXPECT_EQ(small->kvstore.slot_bytes, 4096u);
  EXPECT_EQ(small->kvstore.commit_workers, 0u);  // the event loop copies, as before commit workers
  EXPECT_EQ(kv_commit_workers(small->kvstore, 16), 0u);
  // An SSD path without a size (an existing file or a block device), a
  // region that just holds one slot plus its header and tail blocks.
  auto ssd = parse("[kvstore]\nssd_path = \"/dev/nvme0n1\"\nslot_bytes = \"2M\"\nssd_region_bytes = 2105344");
  ASSERT_TRUE(ssd) << ssd.error().message;
  EXPECT_EQ(ssd->kvstore.ssd_region_bytes, 2 * kMiB + 8192);
  // Arena sizes need not be whole slots: the remainder is unused.
  auto ragged = parse("[kvstore]\nslot_bytes = \"3M\"");
  ASSERT_TRUE(ragged) << ragged.error().message;
  auto inline_table = parse("kvstore = { enabled = false }");
  ASSERT_TRUE(inline_table) << inline_table.error().message;
  EXPECT_FALSE(inline_table->kvstore.enabled);
  auto empty_path = parse("[kvstore]\nssd_path = \"\"");
  ASSERT_TRUE(empty_path) << empty_path.error().message;
  EXPECT_TRUE(empty_path->kvstore.ssd_path.empty());
}

class KvStoreConfigRejects : public ::testing::TestWithParam<Rejection> {};

TEST_P(KvStoreConfigRejects, NamesKeyAndLine) { expect_rejection(GetParam(), kSource); }

const Rejection kRejections[] = {
    {"kvstore = 1", "kvstore", 1, "expected a table ([kvstore])"},
    {"[kvstore]\nenabled = 1", "kvstore.enabled", 2, "expected a boolean"},
    {"[kvstore]\ndram_tier = \"DRAM 0\"", "kvstore.dram_tier", 2, "must be a tier name"},
    {"[kvstore]\ncxl_tier = 3", "kvstore.cxl_tier", 2, "expected a string"},
    {"[kvstore]\ndram_tier = \"a\"\ncxl_tier = \"a\"", "kvstore.cxl_tier", 3, "must differ from dram_tier"},
    {"[kvstore]\ndram_bytes = 0", "kvstore.dram_bytes", 2, "must be greater than 0"},
    {"[kvstore]\ndram_bytes = \"lots\"", "kvstore.dram_bytes", 2, "not a size"},
    {"[kvstore]\ncxl_bytes = -1", "kvstore.cxl_bytes", 2, "must not be negative"},
    {"[kvstore]\nslot_bytes = 0", "kvstore.slot_bytes", 2, "must be greater than 0"},
    {"[kvstore]\nslot_bytes = 5000", "kvstore.slot_bytes", 2, "must be a multiple of 4096"},
    {"[kvstore]\nslot_bytes = \"2G\"", "kvstore.slot_bytes", 2, "no larger than"},
    {"[kvstore]\neviction = \"lfu\"", "kvstore.eviction", 2, "must be one of \"lru\", \"s3fifo\"; got 'lfu'"},
    {"[kvstore]\neviction = true", "kvstore.eviction", 2, "expected a string"},
    {"[kvstore]\nadmission_threshold = 256", "kvstore.admission_threshold", 2, "between 0 and 255"},
    {"[kvstore]\nadmission_threshold = -1", "kvstore.admission_threshold", 2, "between 0 and 255"},
    {"[kvstore]\nssd_path = \"kv.log\"", "kvstore.ssd_path", 2, "must be an absolute path"},
    {"[kvstore]\nview_dir = \"views\"", "kvstore.view_dir", 2, "must be an absolute path"},
    {"[kvstore]\nview_dir = 3", "kvstore.view_dir", 2, "expected a string"},
    {"[kvstore]\nssd_bytes = \"1G\"", "kvstore.ssd_bytes", 2, "only meaningful with ssd_path"},
    {"[kvstore]\nssd_path = \"/x\"\nssd_bytes = 0", "kvstore.ssd_bytes", 3, "must be greater than 0"},
    {"[kvstore]\nssd_path = \"/x\"\nssd_bytes = \"16M\"", "kvstore.ssd_bytes", 3,
     "must hold at least two regions of ssd_region_bytes (16777216)"},
    {"[kvstore]\nssd_region_bytes = 4096", "kvstore.ssd_region_bytes", 2, "between 8192 and 1073741824"},
    {"[kvstore]\nssd_region_bytes = 10000", "kvstore.ssd_region_bytes", 2, "multiple of 4096"},
    {"[kvstore]\nssd_region_bytes = \"2G\"", "kvstore.ssd_region_bytes", 2, "between 8192 and 1073741824"},
    {"[kvstore]\nssd_path = \"/x\"\nslot_bytes = \"2M\"\nssd_region_bytes = \"2M\"", "kvstore.ssd_region_bytes", 4,
     "must hold one chunk of slot_bytes (2097152)"},
    {"[kvstore]\nssd_path = \"/x\"\nslot_bytes = \"16M\"", "kvstore.ssd_region_bytes", 1,
     "must hold one chunk of slot_bytes (16777216) plus 8192 bytes of entry header and tail (the default)"},
    {"[kvstore]\nssd_sync = \"always\"", "kvstore.ssd_sync", 2, "must be one of \"per-region\", \"per-commit\""},
    {"[kvstore]\nssd_engine = \"aio\"", "kvstore.ssd_engine", 2,
     "must be one of \"auto\", \"io_uring\", \"posix\"; got 'aio'"},
    {"[kvstore]\nssd_workers = 65", "kvstore.ssd_workers", 2, "between 0 and 64"},
    {"[kvstore]\nssd_workers = -1", "kvstore.ssd_workers", 2, "between 0 and 64"},
    {"[kvstore]\nssd_read_staging = 257", "kvstore.ssd_read_staging", 2, "between 0 and 256"},
    {"[kvstore]\nssd_read_staging = -1", "kvstore.ssd_read_staging", 2, "between 0 and 256"},
    {"[kvstore]\ncommit_workers = 65", "kvstore.commit_workers", 2, "between 0 and 64"},
    {"[kvstore]\ncommit_workers = -1", "kvstore.commit_workers", 2, "between 0 and 64"},
    {"[kvstore]\ncommit_workers = \"2\"", "kvstore.commit_workers", 2, "expected an integer, got a string"},
    {"[kvstore]\nssd_lend_min_bytes = 1000", "kvstore.ssd_lend_min_bytes", 2, "must be 0 (always copy) or a multiple of 4096"},
    {"[kvstore]\nssd_lend_min_bytes = -4096", "kvstore.ssd_lend_min_bytes", 2, "must not be negative"},
    {"[kvstore]\ncopy_behind_min_bytes = -1", "kvstore.copy_behind_min_bytes", 2, "must not be negative"},
    {"[kvstore]\nput_window_bytes = 0", "kvstore.put_window_bytes", 2, "must be greater than 0"},
    {"[kvstore]\nslot_bytes = \"4M\"\nput_window_bytes = \"2M\"", "kvstore.put_window_bytes", 3,
     "must hold at least one slot of slot_bytes (4194304)"},
    {"[kvstore]\nslot_bytes = \"4M\"\ndram_bytes = \"2M\"", "kvstore.dram_bytes", 3, "must hold at least one slot"},
    {"[kvstore]\nslot_bytes = \"512M\"", "kvstore.dram_bytes", 1, "must hold at least one slot of slot_bytes "
                                                                   "(536870912) (the default)"},
    {"[kvstore]\ncxl_bytes = 4096", "kvstore.cxl_bytes", 2, "must be 0 (no CXL arena) or hold at least one slot"},
    {"[kvstore]\nclient_quota_bytes = \"1Q\"", "kvstore.client_quota_bytes", 2, "unknown size unit"},
    {"[kvstore]\nlease_timeout_ms = -1", "kvstore.lease_timeout_ms", 2, "between 0 and 86400000"},
    {"[kvstore]\nlease_timeout_ms = 86400001", "kvstore.lease_timeout_ms", 2, "between 0 and 86400000"},
    {"[kvstore]\nssd_format_foreign = 1", "kvstore.ssd_format_foreign", 2, "expected a boolean"},
    {"[kvstore]\nssd_format_foreign = true", "kvstore.ssd_format_foreign", 2, "only meaningful with ssd_path"},
    {"[kvstore]\nssd_path = \"/x\"\nssd_bytes = \"1025T\"", "kvstore.ssd_bytes", 3, "must be at most 1 PiB"},
    {"[kvstore]\ndram_bytes = \"1025T\"", "kvstore.dram_bytes", 2, "must be at most 1 PiB"},
    {"[kvstore]\nmax_leases_per_client = 0", "kvstore.max_leases_per_client", 2, "between 1 and 16777216"},
    {"[kvstore]\nindex_capacity = 0", "kvstore.index_capacity", 2, "between 1 and 4294967296"},
    {"[kvstore]\ndram_bandwidth_mbps = 0", "kvstore.dram_bandwidth_mbps", 2, "between 1 and 10000000"},
    {"[kvstore]\ndram_latency_ns = 0", "kvstore.dram_latency_ns", 2, "between 1 and 100000000"},
    {"[kvstore]\ncxl_bandwidth_mbps = -1", "kvstore.cxl_bandwidth_mbps", 2, "between 0 and 10000000"},
    {"[kvstore]\ncxl_latency_ns = 100000001", "kvstore.cxl_latency_ns", 2, "between 0 and 100000000"},
    {"[kvstore]\nssd_bandwidth_mbps = 1.5", "kvstore.ssd_bandwidth_mbps", 2, "expected an integer, got a float"},
    {"[kvstore]\nssd_latency_ns = 0", "kvstore.ssd_latency_ns", 2, "between 1 and 100000000"},
    {"[kvstore]\nslot = 4096", "kvstore.slot", 2, "unknown key (valid in [kvstore]: enabled, dram_tier"},
};

INSTANTIATE_TEST_SUITE_P(Table, KvStoreConfigRejects, ::testing::ValuesIn(kRejections));

TEST(KvStoreConfig, EveryKeyNeedsARestart) {
  const Config running = *parse("");
  for (const auto& [line, key] : std::vector<std::pair<std::string, std::string>>{
           {"enabled = false", "enabled"},
           {"dram_tier = \"x\"", "dram_tier"},
           {"cxl_tier = \"x\"", "cxl_tier"},
           {"dram_bytes = \"1G\"", "dram_bytes"},
           {"cxl_bytes = 0", "cxl_bytes"},
           {"slot_bytes = \"1M\"", "slot_bytes"},
           {"eviction = \"s3fifo\"", "eviction"},
           {"admission_threshold = 3", "admission_threshold"},
           {"ssd_path = \"/kv\"", "ssd_path"},
           {"ssd_path = \"\"\nssd_region_bytes = \"8M\"", "ssd_region_bytes"},
           {"ssd_sync = \"per-commit\"", "ssd_sync"},
           {"ssd_engine = \"posix\"", "ssd_engine"},
           {"ssd_workers = 4", "ssd_workers"},
           {"ssd_read_staging = 4", "ssd_read_staging"},
           {"commit_workers = 0", "commit_workers"},
           {"ssd_lend_min_bytes = 0", "ssd_lend_min_bytes"},
           {"copy_behind_min_bytes = 0", "copy_behind_min_bytes"},
           {"put_window_bytes = \"8M\"", "put_window_bytes"},
           {"client_quota_bytes = \"1G\"", "client_quota_bytes"},
           {"max_leases_per_client = 5", "max_leases_per_client"},
           {"lease_timeout_ms = 0", "lease_timeout_ms"},
           {"index_capacity = 10", "index_capacity"},
           {"dram_bandwidth_mbps = 1", "dram_bandwidth_mbps"},
           {"dram_latency_ns = 1", "dram_latency_ns"},
           {"cxl_bandwidth_mbps = 1", "cxl_bandwidth_mbps"},
           {"cxl_latency_ns = 1", "cxl_latency_ns"},
           {"ssd_bandwidth_mbps = 1", "ssd_bandwidth_mbps"},
           {"ssd_latency_ns = 1", "ssd_latency_ns"},
       }) {
    auto next = parse("[kvstore]\n" + line);
    ASSERT_TRUE(next) << line << ": " << next.error().message;
    const auto keys = changes_needing_restart(running, *next);
    EXPECT_EQ(keys, std::vector<std::string>{"kvstore." + key}) << line;
  }
  auto with_size = parse("[kvstore]\nssd_path = \"/kv\"\nssd_bytes = \"1G\"");
  auto bigger = parse("[kvstore]\nssd_path = \"/kv\"\nssd_bytes = \"2G\"");
  ASSERT_TRUE(with_size && bigger);
  EXPECT_EQ(changes_needing_restart(*with_size, *bigger), std::vector<std::string>{"kvstore.ssd_bytes"});
  auto forced = parse("[kvstore]\nssd_path = \"/kv\"\nssd_bytes = \"1G\"\nssd_format_foreign = true");
  ASSERT_TRUE(forced) << forced.error().message;
  EXPECT_EQ(changes_needing_restart(*with_size, *forced), std::vector<std::string>{"kvstore.ssd_format_foreign"});
  EXPECT_TRUE(changes_needing_restart(running, *parse("[kvstore]\n")).empty());
}

TEST(KvStoreConfig, DefaultQuotaIsAQuarterOfTheDramArena) {
  KvStoreSection kv;
  kv.slot_bytes = 2 * kMiB;
  EXPECT_EQ(kv_client_quota(kv, 256 * kMiB), 64 * kMiB);
  EXPECT_EQ(kv_client_quota(kv, 10 * kMiB), 2 * kMiB) << "whole slots, at least one";
  EXPECT_EQ(kv_client_quota(kv, 2 * kMiB), 2 * kMiB);
  kv.client_quota_bytes = 0;
  EXPECT_EQ(kv_client_quota(kv, 256 * kMiB), 0u) << "0 set explicitly: unlimited";
  kv.client_quota_bytes = 5 * kMiB;
  EXPECT_EQ(kv_client_quota(kv, 256 * kMiB), 5 * kMiB);
}

TEST(KvStoreConfig, ExampleFileShowsEveryKeyAndParses) {
  const std::string path = env_value("CXLPOOL_EXAMPLE_CONFIG");
  ASSERT_FALSE(path.empty()) << "CXLPOOL_EXAMPLE_CONFIG is not set (run through meson test)";
  auto config = load_config_file(path);
  ASSERT_TRUE(config) << config.error().message;
  const std::string text = read_file(path);
  const auto section = text.find("\n[kvstore]");
  ASSERT_NE(section, std::string::npos) << "the example has no [kvstore] table";
  const std::string body = text.substr(section);
  for (const std::string& key : kKvKeys) {
    EXPECT_TRUE(example_shows(body, key)) << "the example's [kvstore] does not show " << key;
  }
}

TEST(KvStoreConfig, DocumentationListsEveryKey) {
  const std::string path = env_value("CXLPOOL_CONFIG_DOC");
  ASSERT_FALSE(path.empty()) << "CXLPOOL_CONFIG_DOC is not set (run through meson test)";
  const std::string text = read_file(path);
  ASSERT_FALSE(text.empty()) << path;
  for (const std::string& key : kKvKeys) {
    EXPECT_TRUE(doc_has_row(text, "kvstore." + key)) << "docs/configuration.md has no row for " << key;
  }
}

}  // namespace
}  // namespace cxlpool::daemon
