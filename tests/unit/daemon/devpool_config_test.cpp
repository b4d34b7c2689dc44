// SPDX-License-Identifier: Apache-2.0
// [devpool]: defaults, every key read, every rejection naming its key and
// line, restart-only keys, and the example file and the documentation
// covering every key.
#include <gtest/gtest.h>

#include "config.hpp"
#include "config_test_support.hpp"

namespace cxlpool::daemon {
namespace {

constexpr const char* kSource = "devpool.toml";

Result<Config> parse(const std::string& text) { return parse_config(text, kSource); }

const std::vector<std::string> kDevpoolKeys = {
    "enabled",   "pod_path", "link_slots",   "max_devices",         "link_buffer_bytes",
    "coherence", "lease_ms", "telemetry_ms", "max_devices_per_uid", "max_attachments_per_uid",
};

constexpr const char* kEveryKey = R"([devpool]
enabled = false
pod_path = "/dev/shm/pod"
link_slots = 128
max_devices = 32
link_buffer_bytes = "4M"
coherence = "non-coherent"
lease_ms = 2000
telemetry_ms = 50
max_devices_per_uid = 0
max_attachments_per_uid = 3
)";

TEST(DevpoolConfig, Defaults) {
  auto config = parse("");
  ASSERT_TRUE(config) << config.error().message;
  const DevpoolSection& d = config->devpool;
  EXPECT_TRUE(d.enabled);
  EXPECT_TRUE(d.pod_path.empty());
  EXPECT_EQ(d.link_slots, 64u);
  EXPECT_EQ(d.max_devices, 64u);
  EXPECT_EQ(d.link_buffer_bytes, 1u << 20);
  EXPECT_EQ(d.coherence, DevpoolCoherence::kCoherent);
  EXPECT_EQ(d.lease_ms, 1000u);
  EXPECT_EQ(d.telemetry_ms, 100u);
  EXPECT_EQ(d.max_devices_per_uid, 16u);
  EXPECT_EQ(d.max_attachments_per_uid, 16u);
  EXPECT_TRUE(embedded_default_config().devpool.enabled);
}

TEST(DevpoolConfig, EveryKeyIsRead) {
  auto config = parse(kEveryKey);
  ASSERT_TRUE(config) << config.error().message;
  const DevpoolSection& d = config->devpool;
  EXPECT_FALSE(d.enabled);
  EXPECT_EQ(d.pod_path, "/dev/shm/pod");
  EXPECT_EQ(d.link_slots, 128u);
  EXPECT_EQ(d.max_devices, 32u);
  EXPECT_EQ(d.link_buffer_bytes, 4u << 20);
  EXPECT_EQ(d.coherence, DevpoolCoherence::kNonCoherent);
  EXPECT_EQ(d.lease_ms, 2000u);
  EXPECT_EQ(d.telemetry_ms, 50u);
  EXPECT_EQ(d.max_devices_per_uid, 0u);
  EXPECT_EQ(d.max_attachments_per_uid, 3u);
  for (const std::string& key : kDevpoolKeys) {
    EXPECT_NE(std::string(kEveryKey).find("\n" + key + " = "), std::string::npos) << key;
  }
}

TEST(DevpoolConfig, Rejections) {
  for (const Rejection& r : {
           Rejection{"[devpool]\nlink_slots = 7\n", "devpool.link_slots", 2, "must be even"},
           Rejection{"[devpool]\nlink_slots = 0\n", "devpool.link_slots", 2, "between"},
           Rejection{"[devpool]\nmax_devices = 5000\n", "devpool.max_devices", 2, "between"},
           Rejection{"[devpool]\nlink_buffer_bytes = 5000\n", "devpool.link_buffer_bytes", 2, "multiple of 4096"},
           Rejection{"[devpool]\ncoherence = \"sometimes\"\n", "devpool.coherence", 2, "must be one of"},
           Rejection{"[devpool]\npod_path = \"relative/pod\"\n", "devpool.pod_path", 2, "absolute"},
           Rejection{"[devpool]\ntelemetry_ms = 1000\n", "devpool.telemetry_ms", 2, "below lease_ms"},
           Rejection{"[devpool]\nlease_ms = 50\ntelemetry_ms = 50\n", "devpool.telemetry_ms", 3, "below lease_ms"},
           Rejection{"[devpool]\nlease_ms = 50\n", "devpool.lease_ms", 2, "below lease_ms"},
           Rejection{"[devpool]\nslots = 4\n", "devpool.slots", 2, "unknown key"},
       }) {
    SCOPED_TRACE(r.text);
    expect_rejection(r, kSource);
  }
}

TEST(DevpoolConfig, EveryKeyNeedsARestart) {
  auto running = parse("");
  auto next = parse(kEveryKey);
  ASSERT_TRUE(running && next);
  const auto keys = changes_needing_restart(*running, *next);
  for (const std::string& key : kDevpoolKeys) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), "devpool." + key), keys.end()) << key;
  }
}

TEST(DevpoolConfig, ExampleAndDocumentationShowEveryKey) {
  const std::string example = read_file(env_value("CXLPOOL_EXAMPLE_CONFIG"));
  const std::string doc = read_file(env_value("CXLPOOL_CONFIG_DOC"));
  ASSERT_FALSE(example.empty() || doc.empty()) << "run through meson test";
  for (const std::string& key : kDevpoolKeys) {
    EXPECT_TRUE(example_shows(example, key)) << "the example does not show devpool." << key;
    EXPECT_TRUE(doc_has_row(doc, "devpool." + key)) << "docs/configuration.md has no row for devpool." << key;
  }
}

}  // namespace
}  // namespace cxlpool::daemon
