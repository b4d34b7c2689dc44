// SPDX-License-Identifier: Apache-2.0
// The tiering engine in a live daemon: `cxlpoolctl tiering status|hot|set`,
// accesses reported with cxlpool_access_report showing up as hot pages, the
// knobs' validation, and the honest "cannot move" on a host whose slow tier
// is emulated (this machine has one NUMA node: nothing can really move).
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Fast epochs and a low nomination threshold, so tests see results quickly.
const char* kTieringTable = "[tiering]\nepoch_ms = 100\nmin_accesses = 1\nmin_period_ms = 10\n";

class Tiering : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(daemon_.start()); }

  ProgramResult ctl(std::vector<std::string> args, ProgramOptions options = {}) {
    return run_ctl(daemon_.socket(), std::move(args), options);
  }
  json ctl_json(std::vector<std::string> args) { return run_ctl_json(daemon_.socket(), std::move(args)); }
  static const json* entry(const json& array, const std::string& name) {
    for (const auto& e : array) {
      if (e.at("name") == name) return &e;
    }
    return nullptr;
  }

  DaemonProcess daemon_{TestConfig{.tables = kTieringTable}.render()};
};

TEST_F(Tiering, StatusNamesThePairAndWhyPagesCannotMove) {
  const json s = ctl_json({"tiering", "status"});
  ASSERT_TRUE(s.is_object()) << s.dump();
  EXPECT_EQ(s.at("enabled"), true);
  EXPECT_EQ(s.at("nominator"), "hpt");
  EXPECT_EQ(s.at("epoch_ns"), 100'000'000u);
  const json* dram = entry(s.at("tiers"), "dram0");
  const json* emu = entry(s.at("tiers"), kEmuTier);
  ASSERT_NE(dram, nullptr) << s.dump();
  ASSERT_NE(emu, nullptr) << s.dump();
  EXPECT_EQ(dram->at("role"), "fast");
  EXPECT_EQ(emu->at("role"), "slow");
  EXPECT_EQ(emu->at("capacity"), kEmuCapacity);

  const json* client = entry(s.at("sources"), "client");
  ASSERT_NE(client, nullptr) << s.dump();
  EXPECT_EQ(client->at("state"), "available");
  EXPECT_NE(s.at("detail").get<std::string>().find("emulated"), std::string::npos) << s.dump();

  // Every knob with its value; the file's ones as written there.
  const json& knobs = s.at("knobs");
  for (const char* key : {"enabled", "epoch_ms", "nominator", "sketch_rows", "sketch_width", "top_k",
                          "hwt_capacity", "sparse_max_words", "promote_sparse", "min_accesses", "base_frequency_hz",
                          "fscale_power", "min_period_ms", "max_period_ms", "high_watermark", "low_watermark",
                          "rate_limit_mib_s", "batch_pages"}) {
    EXPECT_TRUE(knobs.contains(key)) << key;
  }
  EXPECT_EQ(knobs.at("epoch_ms"), "100");
  EXPECT_EQ(knobs.at("min_accesses"), "1");

  // The human form has the tier table and the reason too.
  auto text = ctl({"tiering", "status"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("RATE-LIMITED"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cannot move pages"), std::string::npos) << text.out;
  // Epochs run on their own.
  EXPECT_TRUE(wait_until([&] { return ctl_json({"tiering", "status"}).at("epoch").get<uint64_t>() >= 2; }, 5s, 50ms));
}

TEST_F(Tiering, ReportedAccessesBecomeHotPagesOnTheirTier) {
  auto admin = connect_admin(daemon_.socket());
  const uint32_t emu = tier_named(*admin, kEmuTier).id;
  Client client(daemon_.socket(), "hot-reporter");
  Region region = client.alloc(emu, 64 * 4096);
  // Pages 0..7 hot and dense (every word), page 20 touched in 4 words only.
  auto report_epoch = [&] {
    for (int round = 0; round < 20; ++round) {
      for (uint64_t p = 0; p < 8; ++p) ASSERT_EQ(cxlpool_access_report(region.get(), p * 4096, 4096, 0), 0);
      for (uint64_t w = 0; w < 4; ++w) ASSERT_EQ(cxlpool_access_report(region.get(), 20 * 4096 + w * 64, 8, 0), 0);
    }
    ASSERT_EQ(cxlpool_access_flush(client.get()), 0);
  };
  json hot;
  const bool seen = wait_until(
      [&] {
        report_epoch();
        hot = ctl_json({"tiering", "hot", "--top", "50"});
        // Counted in the last epoch: a page reported just before the epoch
        // ended, then listed from the candidate pool with 0 accesses (as
        // the manager names pages it remembers but did not see this epoch),
        // waits for the next round.
        std::set<uint64_t> pages;
        for (const auto& p : hot.at("pages")) {
          if (p.at("space") == "region" && p.at("owner") == region.id() && p.at("count").get<uint64_t>() > 0) {
            pages.insert(p.at("address").get<uint64_t>());
          }
        }
        for (uint64_t p = 0; p < 8; ++p) {
          if (pages.count(p * 4096) == 0) return false;
        }
        return pages.count(20 * 4096) != 0;
      },
      10s, 120ms);
  ASSERT_TRUE(seen) << hot.dump() << "\n" << daemon_.log();
  for (const auto& p : hot.at("pages")) {
    if (p.at("owner") != region.id()) continue;
    EXPECT_EQ(p.at("tier"), emu) << p.dump();  // nothing could move
    EXPECT_GT(p.at("count").get<uint64_t>(), 0u);
    if (p.at("address") == 20 * 4096) {
      EXPECT_EQ(p.at("touched_words"), 4) << p.dump();
      EXPECT_EQ(p.at("class"), "sparse") << p.dump();
    } else {
      EXPECT_EQ(p.at("touched_words"), 64) << p.dump();
      EXPECT_EQ(p.at("class"), "dense") << p.dump();
    }
  }
  // --top bounds the list; the human table names the class.
  EXPECT_LE(ctl_json({"tiering", "hot", "--top", "3"}).at("pages").size(), 3u);
  // The hot list is the last epoch's: report again until an epoch that saw
  // the reports has ended (epochs without reports have an empty list).
  ProgramResult text;
  EXPECT_TRUE(wait_until(
      [&] {
        report_epoch();
        text = ctl({"tiering", "hot"});
        return text.exit_code == 0 && text.out.find("dense") != std::string::npos;
      },
      10s, 120ms))
      << text.exit_code << " " << text.err << "\n" << text.out;

  // The slow tier is emulated: planned promotions fail, none is claimed.
  EXPECT_TRUE(wait_until(
      [&] {
        report_epoch();
        return stat(*admin, "tiering.pages_failed") > 0;
      },
      10s, 120ms))
      << daemon_.log();
  EXPECT_EQ(stat(*admin, "tiering.pages_moved"), 0u);
  EXPECT_EQ(stat(*admin, "tiering.tier.dram0.promotions"), 0u);
  EXPECT_GT(stat(*admin, "tiering.source.client.accesses"), 0u);
  // Per-tier accesses and hot pages describe the last epoch only: keep
  // reporting until an epoch that saw the reports has ended.
  json s;
  EXPECT_TRUE(wait_until(
      [&] {
        report_epoch();
        s = ctl_json({"tiering", "status"});
        const json* slow = entry(s.at("tiers"), kEmuTier);
        return slow != nullptr && slow->at("accesses").get<uint64_t>() + slow->at("hot_pages").get<uint64_t>() > 0;
      },
      10s, 120ms))
      << s.dump();
  EXPECT_GT(s.at("pages_failed").get<uint64_t>(), 0u);
}

TEST_F(Tiering, SetChangesKnobsAndRejectsUnknownKeysAndBadValues) {
  const json changed = ctl_json({"tiering", "set", "top_k=64"});
  EXPECT_EQ(changed.at("key"), "top_k");
  EXPECT_EQ(changed.at("old"), "512");
  EXPECT_EQ(changed.at("new"), "64");
  EXPECT_EQ(ctl_json({"tiering", "status"}).at("knobs").at("top_k"), "64");

  // The watermarks are checked against each other: low first, then high.
  auto refused = ctl({"tiering", "set", "high_watermark=0.5"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("low_watermark"), std::string::npos) << refused.err;
  ASSERT_EQ(ctl({"tiering", "set", "low_watermark=0.4"}).exit_code, 0);
  auto text = ctl({"tiering", "set", "high_watermark=0.5"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("high_watermark: 0.98 -> 0.5"), std::string::npos) << text.out;

  auto unknown = ctl({"tiering", "set", "no_such_knob=1"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("no_such_knob"), std::string::npos) << unknown.err;
  auto bad = ctl({"tiering", "set", "sketch_width=1000"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("sketch_width"), std::string::npos) << bad.err;
  auto below = ctl({"tiering", "set", "low_watermark=0.7"});  // above high_watermark 0.5
  EXPECT_EQ(below.exit_code, 1);
  EXPECT_NE(below.err.find("low_watermark"), std::string::npos) << below.err;
  auto restart_only = ctl({"tiering", "set", "slow_tier=dram0"});
  EXPECT_EQ(restart_only.exit_code, 1);
  auto usage = ctl({"tiering", "set", "top_k"});
  EXPECT_EQ(usage.exit_code, 2);
  auto top = ctl({"tiering", "hot", "--top", "0"});
  EXPECT_EQ(top.exit_code, 2);
  // Nothing of a refused change was applied.
  const json knobs = ctl_json({"tiering", "status"}).at("knobs");
  EXPECT_EQ(knobs.at("sketch_width"), "8192");
  EXPECT_EQ(knobs.at("low_watermark"), "0.4");

  // The protocol answer is EINVAL, naming the key.
  auto admin = connect_admin(daemon_.socket());
  auto reply = admin->call_for<proto::TieringSetReply>(proto::TieringSet{"nominator", "lru"});
  ASSERT_FALSE(reply);
  EXPECT_EQ(reply.error().code, EINVAL);
  EXPECT_NE(reply.error().message.find("nominator"), std::string::npos) << reply.error().message;

  // epoch_ms and enabled belong to the service.
  EXPECT_EQ(ctl_json({"tiering", "set", "epoch_ms=250"}).at("new"), "250");
  EXPECT_EQ(ctl_json({"tiering", "set", "enabled=false"}).at("new"), "false");
  const json off = ctl_json({"tiering", "status"});
  EXPECT_EQ(off.at("enabled"), false);
  const uint64_t epoch = off.at("epoch").get<uint64_t>();
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(ctl_json({"tiering", "status"}).at("epoch").get<uint64_t>(), epoch);
}

TEST_F(Tiering, SighupRestoresTheFilesKnobs) {
  ASSERT_EQ(ctl({"tiering", "set", "top_k=64"}).exit_code, 0);
  daemon_.write_config(TestConfig{.tables = std::string(kTieringTable) + "sketch_rows = 2\n"}.render());
  daemon_.send_signal(SIGHUP);
  ASSERT_TRUE(wait_until(
      [&] { return ctl_json({"tiering", "status"}).at("knobs").at("sketch_rows") == "2"; }, 5s, 50ms))
      << daemon_.log();
  EXPECT_EQ(ctl_json({"tiering", "status"}).at("knobs").at("top_k"), "512");
}

TEST(TieringAccess, NonAdminMayReadButNotSet) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  DaemonProcess daemon(TestConfig{.daemon = kOpenToAll}.render());
  ASSERT_TRUE(daemon.start());
  const std::string socket = daemon.socket();
  auto status = run_program({ctl_binary(), "--socket", socket, "tiering", "status"}, {.run_as = RunAs{}});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  auto hot = run_program({ctl_binary(), "--socket", socket, "tiering", "hot"}, {.run_as = RunAs{}});
  EXPECT_EQ(hot.exit_code, 0) << hot.err;
  auto set = run_program({ctl_binary(), "--socket", socket, "tiering", "set", "top_k=8"}, {.run_as = RunAs{}});
  EXPECT_EQ(set.exit_code, 4) << set.out << set.err;
  EXPECT_NE(set.err.find("requires root"), std::string::npos) << set.err;
  auto admin = connect_admin(socket);
  const json knobs = json::parse(run_program({ctl_binary(), "--socket", socket, "--json", "tiering", "status"}).out)
                         .at("knobs");
  EXPECT_EQ(knobs.at("top_k"), "512");
}

TEST(TieringConfig, BadValuesStopTheDaemonNamingFileLineAndKey) {
  DaemonProcess dir(TestConfig{}.render());
  expect_configs_rejected(dir, {{"[tiering]\nsketch_width = 1000\n", ":2: tiering.sketch_width:"},
                                {"[tiering]\nepoch_ms = 1\n", ":2: tiering.epoch_ms:"},
                                {"[tiering]\nsources = [\"client\", \"magic\"]\n", ":2: tiering.sources:"},
                                {"[tiering]\nlow_watermark = 0.5\nhigh_watermark = 0.4\n", "tiering."},
                                {"[tiering]\nno_such = 1\n", ":2: tiering.no_such:"}});
  // Watermarks in either order are fine.
  const std::string good = dir.dir() + "/good.toml";
  std::ofstream(good) << TestConfig{.tables = "[tiering]\nhigh_watermark = 0.5\nlow_watermark = 0.4\n"}.render();
  auto ok = run_program({daemon_binary(), "--check-config", "--config", good, "--state-dir", dir.dir()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST(TieringConfig, ExplicitlyDisabledStaysOffUntilSet) {
  DaemonProcess daemon(TestConfig{.tables = "[tiering]\nenabled = false\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto r = run_program({ctl_binary(), "--socket", daemon.socket(), "--json", "tiering", "status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s.at("enabled"), false);
  auto on = run_program({ctl_binary(), "--socket", daemon.socket(), "tiering", "set", "enabled=true"});
  EXPECT_EQ(on.exit_code, 0) << on.err;
}

}  // namespace
}  // namespace cxlpool::integration
