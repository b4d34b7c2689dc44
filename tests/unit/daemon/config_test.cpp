// SPDX-License-Identifier: Apache-2.0
#include "config.hpp"
#include "config_test_support.hpp"

#include <gtest/gtest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cxlpool/common/units.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::daemon {
namespace {

constexpr const char* kSource = "test.toml";

Result<Config> parse(const std::string& text) { return parse_config(text, kSource); }

// Every key of the schema, as docs/configuration.md names it.
const std::vector<std::string> kAllKeys = {
    "daemon.state_dir",        "daemon.socket_mode",     "daemon.socket_group",
    "daemon.admin_groups",     "daemon.log_level",       "daemon.max_clients",
    "daemon.max_regions_per_client", "daemon.watchdog_divisor", "daemon.busy_poll_us", "pool.max_region_size",
    "daemon.max_clients_per_uid", "daemon.admin_reserved_clients", "pool.gpu_host_bytes_per_uid",
    "numa.enabled",            "numa.capacity_percent",  "numa.exclude_nodes",
    "numa.sysfs_root",         "emulated_tier.name",     "emulated_tier.capacity",
    "emulated_tier.backing",   "emulated_tier.hugetlbfs_path", "emulated_tier.numa_node",
    "emulated_tier.latency_ns", "emulated_tier.bandwidth_mbps", "quota.default_bytes",
    "quota.user.uid",          "quota.user.tier",        "quota.user.bytes",
    "metrics.prometheus_port", "metrics.prometheus_address", "ckpt.restore_timeout_ms",
};

// A file that sets every key to something other than its default.
constexpr const char* kFullFile = R"(# every key
[daemon]
state_dir = "/var/lib/cxlpool-test"
socket_mode = "0640"
socket_group = "pool-users"
admin_groups = ["wheel", "cxladmin"]
log_level = "debug"
max_clients = 1000
max_clients_per_uid = 10
admin_reserved_clients = 20
max_regions_per_client = 5000
watchdog_divisor = 4
busy_poll_us = 0

[pool]
max_region_size = "16G"
gpu_host_bytes_per_uid = "2G"

[numa]
enabled = true
capacity_percent = 80
exclude_nodes = [0, 3]
sysfs_root = "/tmp/fixture"

[[emulated_tier]]
name = "slow_1"
capacity = "2G"
backing = "memfd"
numa_node = 0
latency_ns = 400
bandwidth_mbps = 12000

[[emulated_tier]]
name = "huge-2"
capacity = 1073741824
backing = "hugetlbfs"
hugetlbfs_path = "/dev/hugepages"
numa_node = -1
latency_ns = 1000000
bandwidth_mbps = 1

[quota]
default_bytes = "8G"

[[quota.user]]
uid = 1000
tier = "slow_1"
bytes = "1G"

[[quota.user]]
uid = 1001
bytes = 0

[metrics]
prometheus_port = 9464
prometheus_address = "::1"

[ckpt]
restore_timeout_ms = 5000
)";

TEST(DaemonConfig, EmbeddedDefault) {
  const Config config = embedded_default_config();
  EXPECT_EQ(config.source, "embedded default");
  EXPECT_TRUE(config.numa_enabled);
  EXPECT_EQ(config.numa_capacity_percent, 50u);
  ASSERT_EQ(config.emulated_tiers.size(), 1u);
  const EmulatedTierConfig& tier = config.emulated_tiers[0];
  EXPECT_EQ(tier.name, "emu-slow");
  EXPECT_EQ(tier.capacity, kGiB);
  EXPECT_EQ(tier.backing, EmulatedBacking::kMemfd);
  EXPECT_EQ(tier.latency_ns, 250u);
  EXPECT_EQ(tier.bandwidth_mbps, 20000u);
  EXPECT_EQ(tier.numa_node, -1);
  EXPECT_TRUE(config.state_dir.empty());
  EXPECT_EQ(config.metrics_port, 0);
  EXPECT_EQ(config.ckpt_restore_timeout_ms, 60000u);
}

TEST(DaemonConfig, EmptyFileGivesDefaultsButNoEmulatedTier) {
  for (const char* text : {"", "# only a comment\n", "\n\n"}) {
    auto config = parse(text);
    ASSERT_TRUE(config) << config.error().message;
    const Config defaults;
    EXPECT_EQ(config->source, kSource);
    EXPECT_TRUE(config->emulated_tiers.empty());
    EXPECT_TRUE(config->numa_enabled);
    EXPECT_EQ(config->numa_capacity_percent, defaults.numa_capacity_percent);
    EXPECT_EQ(config->socket_mode, 0660u);
    EXPECT_EQ(config->socket_group, "cxlpool");
    EXPECT_EQ(config->admin_groups, std::vector<std::string>{"cxlpool"});
    EXPECT_EQ(config->log_level, LogLevel::kInfo);
    EXPECT_EQ(config->max_clients, 256u);
    EXPECT_EQ(config->max_regions_per_client, 1024u);
    EXPECT_EQ(config->watchdog_divisor, 2u);
    EXPECT_EQ(config->max_region_size, 64 * kGiB);
    EXPECT_EQ(config->sysfs_root, "/");
    EXPECT_EQ(config->quota_default_bytes, 0u);
    EXPECT_TRUE(config->quota_rules.empty());
    EXPECT_EQ(config->metrics_port, 0);
    EXPECT_EQ(config->metrics_address, "127.0.0.1");
    EXPECT_TRUE(changes_needing_restart(defaults, *config).empty());
  }
}

TEST(DaemonConfig, FullFile) {
  auto parsed = parse(kFullFile);
  ASSERT_TRUE(parsed) << parsed.error().message;
  const Config& c = *parsed;
  EXPECT_EQ(c.state_dir, "/var/lib/cxlpool-test");
  EXPECT_EQ(c.socket_mode, 0640u);
  EXPECT_EQ(c.socket_group, "pool-users");
  EXPECT_EQ(c.admin_groups, (std::vector<std::string>{"wheel", "cxladmin"}));
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.max_clients, 1000u);
  EXPECT_EQ(c.max_clients_per_uid, 10u);
  EXPECT_EQ(c.admin_reserved_clients, 20u);
  EXPECT_EQ(c.gpu_host_bytes_per_uid, 2 * kGiB);
  EXPECT_EQ(c.max_regions_per_client, 5000u);
  EXPECT_EQ(c.watchdog_divisor, 4u);
  EXPECT_EQ(c.busy_poll_us, 0u);
  EXPECT_EQ(c.max_region_size, 16 * kGiB);
  EXPECT_TRUE(c.numa_enabled);
  EXPECT_EQ(c.numa_capacity_percent, 80u);
  EXPECT_EQ(c.numa_exclude_nodes, (std::vector<int>{0, 3}));
  EXPECT_EQ(c.sysfs_root, "/tmp/fixture");
  ASSERT_EQ(c.emulated_tiers.size(), 2u);
  EXPECT_EQ(c.emulated_tiers[0].name, "slow_1");
  EXPECT_EQ(c.emulated_tiers[0].capacity, 2 * kGiB);
  EXPECT_EQ(c.emulated_tiers[0].backing, EmulatedBacking::kMemfd);
  EXPECT_TRUE(c.emulated_tiers[0].hugetlbfs_path.empty());
  EXPECT_EQ(c.emulated_tiers[0].numa_node, 0);
  EXPECT_EQ(c.emulated_tiers[0].latency_ns, 400u);
  EXPECT_EQ(c.emulated_tiers[0].bandwidth_mbps, 12000u);
  EXPECT_EQ(c.emulated_tiers[1].name, "huge-2");
  EXPECT_EQ(c.emulated_tiers[1].capacity, kGiB);
  EXPECT_EQ(c.emulated_tiers[1].backing, EmulatedBacking::kHugetlbfs);
  EXPECT_EQ(c.emulated_tiers[1].hugetlbfs_path, "/dev/hugepages");
  EXPECT_EQ(c.emulated_tiers[1].numa_node, -1);
  EXPECT_EQ(c.emulated_tiers[1].latency_ns, 1000000u);
  EXPECT_EQ(c.emulated_tiers[1].bandwidth_mbps, 1u);
  EXPECT_EQ(c.quota_default_bytes, 8 * kGiB);
  ASSERT_EQ(c.quota_rules.size(), 2u);
  EXPECT_EQ(c.quota_rules[0].uid, 1000u);
  EXPECT_EQ(c.quota_rules[0].tier, "slow_1");
  EXPECT_EQ(c.quota_rules[0].bytes, kGiB);
  EXPECT_EQ(c.quota_rules[1].uid, 1001u);
  EXPECT_EQ(c.quota_rules[1].tier, "*");  // the default
  EXPECT_EQ(c.quota_rules[1].bytes, 0u);
  EXPECT_EQ(c.metrics_port, 9464);
  EXPECT_EQ(c.ckpt_restore_timeout_ms, 5000u);
  EXPECT_EQ(c.metrics_address, "::1");

  // The full file uses every key of the schema: this keeps kAllKeys honest.
  for (const std::string& key : kAllKeys) {
    const std::string leaf = key.substr(key.rfind('.') + 1);
    EXPECT_NE(std::string(kFullFile).find("\n" + leaf + " = "), std::string::npos) << key;
  }
}

TEST(DaemonConfig, AcceptedSpellings) {
  struct Case {
    const char* text;
    uint32_t mode;
  };
  for (const Case& c : {Case{"[daemon]\nsocket_mode = \"660\"", 0660}, Case{"[daemon]\nsocket_mode = 0o600", 0600},
                        Case{"[daemon]\nsocket_mode = \"0\"", 0}, Case{"[daemon]\nsocket_mode = \"0777\"", 0777}}) {
    auto config = parse(c.text);
    ASSERT_TRUE(config) << c.text << ": " << config.error().message;
    EXPECT_EQ(config->socket_mode, c.mode) << c.text;
  }
  auto sizes = parse("[pool]\nmax_region_size = \"512MiB\"\n[quota]\ndefault_bytes = 4096");
  ASSERT_TRUE(sizes) << sizes.error().message;
  EXPECT_EQ(sizes->max_region_size, 512 * kMiB);
  EXPECT_EQ(sizes->quota_default_bytes, 4096u);

  auto levels = parse("[daemon]\nlog_level = \"WARNING\"");
  ASSERT_TRUE(levels) << levels.error().message;
  EXPECT_EQ(levels->log_level, LogLevel::kWarning);

  auto empty_group = parse("[daemon]\nsocket_group = \"\"\nadmin_groups = []\nstate_dir = \"\"");
  ASSERT_TRUE(empty_group) << empty_group.error().message;
  EXPECT_EQ(empty_group->socket_group, "");
  EXPECT_TRUE(empty_group->admin_groups.empty());
  EXPECT_TRUE(empty_group->state_dir.empty());

  auto inline_tables = parse("daemon = { max_clients = 3 }\nemulated_tier = [{ name = \"a\", capacity = \"1M\" }]");
  ASSERT_TRUE(inline_tables) << inline_tables.error().message;
  EXPECT_EQ(inline_tables->max_clients, 3u);
  ASSERT_EQ(inline_tables->emulated_tiers.size(), 1u);
  EXPECT_EQ(inline_tables->emulated_tiers[0].capacity, kMiB);

  auto numa_off = parse("[numa]\nenabled = false\n[[emulated_tier]]\nname = \"x\"\ncapacity = \"1G\"");
  ASSERT_TRUE(numa_off) << numa_off.error().message;
  EXPECT_FALSE(numa_off->numa_enabled);
}

class DaemonConfigRejects : public ::testing::TestWithParam<Rejection> {};

TEST_P(DaemonConfigRejects, NamesKeyAndLine) { expect_rejection(GetParam(), kSource); }

const Rejection kRejections[] = {
    // Wrong shapes at the top level and unknown tables.
    {"daemon = 5", "daemon", 1, "expected a table ([daemon]), got an integer"},
    {"[daemons]\nmax_clients = 3", "daemons", 1, "unknown key"},
    {"\nverbose = true", "verbose", 2, "unknown key (valid in the top level: daemon, pool"},
    {"[emulated_tier]\nname = \"a\"", "emulated_tier", 1, "expected an array of tables ([[emulated_tier]])"},
    // [daemon]
    {"[daemon]\nstate_dir = \"relative/dir\"", "daemon.state_dir", 2, "must be an absolute path"},
    {"[daemon]\nstate_dir = 7", "daemon.state_dir", 2, "expected a string, got an integer"},
    {"[daemon]\nsocket_mode = 660", "daemon.socket_mode", 2, "0o660"},
    {"[daemon]\nsocket_mode = \"0999\"", "daemon.socket_mode", 2, "octal permission mode"},
    {"[daemon]\nsocket_mode = \"01777\"", "daemon.socket_mode", 2, "octal permission mode"},
    {"[daemon]\nsocket_mode = true", "daemon.socket_mode", 2, "got a boolean"},
    {"[daemon]\nsocket_group = \"a:b\"", "daemon.socket_group", 2, "not a valid group name"},
    {"[daemon]\nsocket_group = 0", "daemon.socket_group", 2, "expected a string"},
    {"[daemon]\nadmin_groups = \"wheel\"", "daemon.admin_groups", 2, "expected an array of strings, got a string"},
    {"[daemon]\nadmin_groups = [\"ok\",\n  3]", "daemon.admin_groups", 3, "each element a string"},
    {"[daemon]\nadmin_groups = [\"\"]", "daemon.admin_groups", 2, "not a valid group name"},
    {"[daemon]\nlog_level = \"verbose\"", "daemon.log_level", 2, "must be one of error, warning"},
    {"[daemon]\nlog_level = 7", "daemon.log_level", 2, "expected a string"},
    {"[daemon]\n\nmax_clients = 0", "daemon.max_clients", 3, "between 1 and 65536, got 0"},
    {"[daemon]\nmax_clients = 65537", "daemon.max_clients", 2, "between 1 and 65536"},
    {"[daemon]\nmax_clients = 1.5", "daemon.max_clients", 2, "expected an integer, got a float"},
    {"[daemon]\nmax_clients = \"10\"", "daemon.max_clients", 2, "expected an integer, got a string"},
    {"[daemon]\nsocket_mode = 0o1000", "daemon.socket_mode", 2, "got 0o1000"},
    {"[daemon]\nmax_clients_per_uid = -1", "daemon.max_clients_per_uid", 2, "between 0 and 65536"},
    {"[daemon]\nmax_clients = 8\nadmin_reserved_clients = 8", "daemon.admin_reserved_clients", 3,
     "must be less than max_clients (8), got 8"},
    {"[pool]\ngpu_host_bytes_per_uid = -1", "pool.gpu_host_bytes_per_uid", 2, "must not be negative"},
    {"[[emulated_tier]]\nname = \"big\"\ncapacity = \"1025T\"", "emulated_tier[0].capacity", 3,
     "must be at most 1 PiB"},
    {"[[emulated_tier]]\nname = \"big\"\ncapacity = 9223372036854775807", "emulated_tier[0].capacity", 3,
     "must be at most 1 PiB"},
    {"[daemon]\nmax_regions_per_client = 1000001", "daemon.max_regions_per_client", 2, "between 1 and 1000000"},
    {"[daemon]\nmax_regions_per_client = 0", "daemon.max_regions_per_client", 2, "between 1 and 1000000"},
    {"[daemon]\nwatchdog_divisor = 1", "daemon.watchdog_divisor", 2, "between 2 and 10"},
    {"[daemon]\nbusy_poll_us = 10001", "daemon.busy_poll_us", 2, "between 0 and 10000"},
    {"[daemon]\nwatchdog_divisor = 11", "daemon.watchdog_divisor", 2, "between 2 and 10"},
    {"[daemon]\nlog_level = \"info\"\ncolour = \"blue\"", "daemon.colour", 3, "unknown key (valid in [daemon]:"},
    // [pool]
    {"[pool]\nmax_region_size = \"12X\"", "pool.max_region_size", 2, "unknown size unit in '12X'"},
    {"[pool]\nmax_region_size = \"lots\"", "pool.max_region_size", 2, "not a size: 'lots'"},
    {"[pool]\nmax_region_size = \"\"", "pool.max_region_size", 2, "not a size"},
    {"[pool]\nmax_region_size = 0", "pool.max_region_size", 2, "must be greater than 0"},
    {"[pool]\nmax_region_size = \"0G\"", "pool.max_region_size", 2, "must be greater than 0"},
    {"[pool]\nmax_region_size = -5", "pool.max_region_size", 2, "must not be negative"},
    {"[pool]\nmax_region_size = 1.5", "pool.max_region_size", 2, "expected a size"},
    {"[pool]\nmax_region_size = \"99999999999T\"", "pool.max_region_size", 2, "overflows"},
    {"[pool]\nmax_size = \"1G\"", "pool.max_size", 2, "unknown key"},
    // [numa]
    {"[numa]\nenabled = \"yes\"", "numa.enabled", 2, "expected a boolean"},
    {"[numa]\ncapacity_percent = 0", "numa.capacity_percent", 2, "between 1 and 100"},
    {"[numa]\ncapacity_percent = 101", "numa.capacity_percent", 2, "between 1 and 100"},
    {"[numa]\ncapcity_percent = 50", "numa.capcity_percent", 2, "unknown key"},
    {"[numa]\nexclude_nodes = 1", "numa.exclude_nodes", 2, "expected an array of integers"},
    {"[numa]\nexclude_nodes = [1, -1]", "numa.exclude_nodes", 2, "between 0 and 1023, got -1"},
    {"[numa]\nexclude_nodes = [1, \"2\"]", "numa.exclude_nodes", 2, "each element an integer"},
    {"[numa]\nexclude_nodes = [\n  1,\n  1,\n]", "numa.exclude_nodes", 4, "node 1 is listed twice"},
    {"[numa]\nsysfs_root = \"\"", "numa.sysfs_root", 2, "absolute path"},
    {"[numa]\nsysfs_root = \"fixtures/sys\"", "numa.sysfs_root", 2, "absolute path"},
    {"[numa]\n\nenabled = false", "numa.enabled", 3, "no [[emulated_tier]] is declared"},
    // [[emulated_tier]]
    {"[[emulated_tier]]\ncapacity = \"1G\"", "emulated_tier[0].name", 1, "required key is missing"},
    {"[[emulated_tier]]\nname = \"Bad Name\"\ncapacity = \"1G\"", "emulated_tier[0].name", 2, "a-z, 0-9"},
    {"[[emulated_tier]]\nname = \"abcdefghijklmnopqrstuvwxyz0123456\"\ncapacity = 1", "emulated_tier[0].name", 2,
     "1 to 32 characters"},
    {"[[emulated_tier]]\nname = \"\"\ncapacity = 1", "emulated_tier[0].name", 2, "1 to 32 characters"},
    {"[[emulated_tier]]\nname = 3\ncapacity = 1", "emulated_tier[0].name", 2, "expected a string"},
    {"[[emulated_tier]]\nname = \"a\"", "emulated_tier[0].capacity", 1, "required key is missing"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = \"0\"", "emulated_tier[0].capacity", 3, "greater than 0"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = \"1 parsec\"", "emulated_tier[0].capacity", 3, "unknown size unit"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nbacking = \"tmpfs\"", "emulated_tier[0].backing", 4,
     "must be \"memfd\" or \"hugetlbfs\""},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\n\n[[emulated_tier]]\nname = \"b\"\ncapacity = 1\n"
     "backing = \"hugetlbfs\"",
     "emulated_tier[1].hugetlbfs_path", 5, "required when backing = \"hugetlbfs\""},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nhugetlbfs_path = \"/dev/hugepages\"",
     "emulated_tier[0].hugetlbfs_path", 4, "only meaningful with backing = \"hugetlbfs\""},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nbacking = \"hugetlbfs\"\nhugetlbfs_path = \"huge\"",
     "emulated_tier[0].hugetlbfs_path", 5, "absolute path"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nnuma_node = -2", "emulated_tier[0].numa_node", 4,
     "between -1 and 1023"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nlatency_ns = 0", "emulated_tier[0].latency_ns", 4,
     "between 1 and 10000000"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nbandwidth_mbps = 10000001", "emulated_tier[0].bandwidth_mbps",
     4, "between 1 and 10000000"},
    {"[[emulated_tier]]\nname = \"a\"\ncapacity = 1\nspeed = 3", "emulated_tier[0].speed", 4, "unknown key"},
    {"[[emulated_tier]]\nname = \"slow\"\ncapacity = 1\n\n[[emulated_tier]]\nname = \"slow\"\ncapacity = 2",
     "emulated_tier[1].name", 6, "duplicate tier name 'slow' (first declared on line 2)"},
    // [quota]
    {"[quota]\ndefault_bytes = \"1Q\"", "quota.default_bytes", 2, "unknown size unit"},
    {"[quota]\ndefault_bytes = -1", "quota.default_bytes", 2, "must not be negative"},
    {"[quota]\nuser = 5", "quota.user", 2, "expected an array of tables ([[quota.user]])"},
    {"[[quota.user]]\nbytes = \"1G\"", "quota.user[0].uid", 1, "required key is missing"},
    {"[[quota.user]]\nuid = -1\nbytes = 0", "quota.user[0].uid", 2, "between 0 and 4294967294"},
    {"[[quota.user]]\nuid = 4294967295\nbytes = 0", "quota.user[0].uid", 2, "between 0 and 4294967294"},
    {"[[quota.user]]\nuid = 1\ntier = \"Fast!\"\nbytes = 0", "quota.user[0].tier", 3, "tier name or \"*\""},
    {"[[quota.user]]\nuid = 1\ntier = \"a\"", "quota.user[0].bytes", 1, "required key is missing"},
    {"[[quota.user]]\nuid = 1\nbytes = \"1G\"\nquota = 2", "quota.user[0].quota", 4, "unknown key"},
    {"[[quota.user]]\nuid = 1\nbytes = 1\n[[quota.user]]\nuid = 1\nbytes = 2", "quota.user[1]", 4,
     "a second rule for uid 1 and tier '*' (first on line 1)"},
    {"[quota]\nlimit = 1", "quota.limit", 2, "unknown key"},
    // [metrics]
    {"[metrics]\nprometheus_port = 70000", "metrics.prometheus_port", 2, "between 0 and 65535"},
    {"[metrics]\nprometheus_port = -1", "metrics.prometheus_port", 2, "between 0 and 65535"},
    {"[metrics]\nprometheus_address = \"localhost\"", "metrics.prometheus_address", 2,
     "not an IPv4 or IPv6 address literal: 'localhost'"},
    {"[metrics]\nprometheus_address = \"[::1]\"", "metrics.prometheus_address", 2, "address literal"},
    {"[metrics]\nport = 9000", "metrics.port", 2, "unknown key"},
};

INSTANTIATE_TEST_SUITE_P(Table, DaemonConfigRejects, ::testing::ValuesIn(kRejections));

TEST(DaemonConfig, SyntaxErrorReportsLineAndColumn) {
  auto config = parse("[daemon]\nmax_clients = 3\nlog_level = \"info\n");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, EINVAL);
  EXPECT_EQ(config.error().message.rfind("test.toml:3:", 0), 0u) << config.error().message;

  auto duplicate = parse("[numa]\nenabled = true\nenabled = false\n");
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().message.rfind("test.toml:3:", 0), 0u) << duplicate.error().message;
}

TEST(DaemonConfig, LoadFile) {
  test::TempDir dir("config");
  const auto path = dir.path() / "cxlpoold.toml";
  std::ofstream(path) << "[numa]\ncapacity_percent = 30\n";
  auto config = load_config_file(path);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->source, path.string());
  EXPECT_EQ(config->numa_capacity_percent, 30u);

  std::ofstream(path) << "[numa]\ncapacity_percent = 300\n";
  auto bad = load_config_file(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind(path.string() + ":2: numa.capacity_percent: ", 0), 0u)
      << bad.error().message;
}

TEST(DaemonConfig, LoadFileErrorsNameThePath) {
  test::TempDir dir("config");
  const auto missing = dir.path() / "absent.toml";
  auto config = load_config_file(missing);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, ENOENT);
  EXPECT_NE(config.error().message.find(missing.string()), std::string::npos) << config.error().message;

  auto directory = load_config_file(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, EISDIR);
  EXPECT_NE(directory.error().message.find(dir.path().string()), std::string::npos);

  const auto huge = dir.path() / "huge.toml";
  std::ofstream(huge) << std::string(2 * kMiB, '#');
  auto too_big = load_config_file(huge);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, EFBIG);
}

// Root reads any file whatever its mode, so as root the read is tried from a
// child that has become nobody.
TEST(DaemonConfig, LoadFileUnreadable) {
  test::TempDir dir("config");
  const auto path = dir.path() / "private.toml";
  std::ofstream(path) << "\n";
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  auto names_path_with_eacces = [&path] {
    auto config = load_config_file(path);
    return !config && config.error().code == EACCES &&
           config.error().message.find(path.string()) != std::string::npos;
  };
  if (::geteuid() != 0) {
    EXPECT_TRUE(names_path_with_eacces());
    return;
  }
  constexpr uid_t kNobody = 65534;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(2);
    ::_exit(names_path_with_eacces() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 2) GTEST_SKIP() << "cannot drop to uid 65534 to provoke EACCES";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "reading a mode-0 file as nobody did not give EACCES naming the path";
}

TEST(DaemonConfig, ConnectionLimitDefaults) {
  auto config = parse("");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->max_clients_per_uid, 64u);
  EXPECT_EQ(config->admin_reserved_clients, 4u);
  EXPECT_EQ(config->gpu_host_bytes_per_uid, 16 * kGiB);
  // Left unset, the admins' reserve shrinks to leave others one slot.
  auto small = parse("[daemon]\nmax_clients = 3\n");
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_EQ(small->admin_reserved_clients, 2u);
  auto single = parse("[daemon]\nmax_clients = 1\n");
  ASSERT_TRUE(single) << single.error().message;
  EXPECT_EQ(single->admin_reserved_clients, 0u);
  auto none = parse("[daemon]\nmax_clients_per_uid = 0\nadmin_reserved_clients = 0\n");
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(none->max_clients_per_uid, 0u);
  EXPECT_EQ(none->admin_reserved_clients, 0u);
}

TEST(DaemonConfig, ChangesNeedingRestart) {
  const Config base = embedded_default_config();
  EXPECT_TRUE(changes_needing_restart(base, base).empty());

  // Reloadable: applied by SIGHUP in place.
  Config reloadable = base;
  reloadable.source = "/elsewhere.toml";
  reloadable.log_level = LogLevel::kDebug;
  reloadable.max_clients = 7;
  reloadable.max_clients_per_uid = 2;
  reloadable.admin_reserved_clients = 1;
  reloadable.gpu_host_bytes_per_uid = kMiB;
  reloadable.max_regions_per_client = 9;
  reloadable.admin_groups = {"ops"};
  reloadable.max_region_size = kGiB;
  reloadable.quota_default_bytes = kMiB;
  reloadable.quota_rules.push_back(QuotaRule{1000, "*", kGiB});
  EXPECT_TRUE(changes_needing_restart(base, reloadable).empty());

  struct Case {
    void (*change)(Config&);
    const char* key;
  };
  const Case cases[] = {
      {[](Config& c) { c.state_dir = "/run/other"; }, "daemon.state_dir"},
      {[](Config& c) { c.socket_mode = 0600; }, "daemon.socket_mode"},
      {[](Config& c) { c.socket_group = "other"; }, "daemon.socket_group"},
      {[](Config& c) { c.watchdog_divisor = 3; }, "daemon.watchdog_divisor"},
      {[](Config& c) { c.numa_enabled = false; }, "numa.enabled"},
      {[](Config& c) { c.numa_capacity_percent = 90; }, "numa.capacity_percent"},
      {[](Config& c) { c.numa_exclude_nodes = {1}; }, "numa.exclude_nodes"},
      {[](Config& c) { c.sysfs_root = "/fixture"; }, "numa.sysfs_root"},
      {[](Config& c) { c.emulated_tiers.clear(); }, "emulated_tier"},
      {[](Config& c) { c.emulated_tiers[0].capacity *= 2; }, "emulated_tier"},
      {[](Config& c) { c.emulated_tiers[0].latency_ns = 1; }, "emulated_tier"},
      {[](Config& c) { c.emulated_tiers.push_back(c.emulated_tiers[0]); }, "emulated_tier"},
      {[](Config& c) { c.metrics_port = 9464; }, "metrics.prometheus_port"},
      {[](Config& c) { c.metrics_address = "::1"; }, "metrics.prometheus_address"},
  };
  for (const Case& c : cases) {
    Config next = base;
    c.change(next);
    EXPECT_EQ(changes_needing_restart(base, next), std::vector<std::string>{c.key}) << c.key;
  }

  Config several = base;
  several.state_dir = "/x";
  several.metrics_port = 1;
  several.log_level = LogLevel::kError;
  EXPECT_EQ(changes_needing_restart(base, several),
            (std::vector<std::string>{"daemon.state_dir", "metrics.prometheus_port"}));
}

TEST(DaemonConfig, LogLevelNames) {
  for (LogLevel level :
       {LogLevel::kError, LogLevel::kWarning, LogLevel::kNotice, LogLevel::kInfo, LogLevel::kDebug}) {
    EXPECT_EQ(parse_log_level_or(log_level_name(level), LogLevel::kNotice), level) << log_level_name(level);
  }
  EXPECT_EQ(parse_log_level_or("Debug", LogLevel::kError), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level_or("loud", LogLevel::kError), LogLevel::kError);
  EXPECT_EQ(parse_log_level_or("", LogLevel::kWarning), LogLevel::kWarning);
  EXPECT_STREQ(log_level_name(LogLevel::kWarning), "warning");
}

TEST(DaemonConfig, ExampleFileParsesAndShowsEveryKey) {
  const std::string path = env_value("CXLPOOL_EXAMPLE_CONFIG");
  ASSERT_FALSE(path.empty()) << "CXLPOOL_EXAMPLE_CONFIG is not set (run through meson test)";
  auto config = load_config_file(path);
  ASSERT_TRUE(config) << config.error().message;
  // Usable on any host: no hugetlbfs tier that needs a mount and reserved pages.
  for (const auto& tier : config->emulated_tiers) EXPECT_EQ(tier.backing, EmulatedBacking::kMemfd) << tier.name;
  EXPECT_FALSE(config->emulated_tiers.empty());

  const std::string text = read_file(path);
  for (const std::string& key : kAllKeys) {
    EXPECT_TRUE(example_shows(text, key.substr(key.rfind('.') + 1))) << "the example does not show " << key;
  }
}

// The commented-out hugetlbfs tier in the example is valid once uncommented.
TEST(DaemonConfig, ExampleHugetlbfsTierIsValidWhenEnabled) {
  const std::string path = env_value("CXLPOOL_EXAMPLE_CONFIG");
  ASSERT_FALSE(path.empty()) << "CXLPOOL_EXAMPLE_CONFIG is not set (run through meson test)";
  std::istringstream in(read_file(path));
  std::string line;
  std::string enabled;
  bool inside = false;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind("#[[emulated_tier]]", 0) == 0) inside = found = true;
    if (inside && line.rfind("#", 0) != 0) inside = false;
    enabled += (inside ? line.substr(1) : line) + "\n";
  }
  ASSERT_TRUE(found) << "the example has no commented '#[[emulated_tier]]' block";
  auto config = parse_config(enabled, "uncommented example");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_TRUE(std::any_of(config->emulated_tiers.begin(), config->emulated_tiers.end(),
                          [](const EmulatedTierConfig& t) { return t.backing == EmulatedBacking::kHugetlbfs; }));
}

TEST(DaemonConfig, DocumentationListsEveryKey) {
  const std::string path = env_value("CXLPOOL_CONFIG_DOC");
  ASSERT_FALSE(path.empty()) << "CXLPOOL_CONFIG_DOC is not set (run through meson test)";
  const std::string text = read_file(path);
  ASSERT_FALSE(text.empty()) << path;
  for (const std::string& key : kAllKeys) {
    EXPECT_TRUE(doc_has_row(text, key)) << "docs/configuration.md has no row for " << key;
  }
}

}  // namespace
}  // namespace cxlpool::daemon
