// SPDX-License-Identifier: Apache-2.0
// cxlpoolctl against a live daemon: every verb's JSON, the human tables, and
// the exit codes scripts rely on.
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr uint64_t kNamedSize = 12288;
constexpr uint64_t kLeasedSize = 3 * 4096;

class Ctl : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.start());
    client_.emplace(daemon_.socket(), "ctl-test");
    cxlpool_tier_info emu{};
    ASSERT_EQ(cxlpool_tier_by_name(client_->get(), kEmuTier, &emu), 0);
    emu_id_ = emu.id;
    named_ = client_->create_named("ctl-named", emu.id, kNamedSize, 0640);
    leased_ = client_->alloc(emu.id, kLeasedSize);
  }
  void TearDown() override {
    if (client_) client_->unlink_named("ctl-named");
  }

  ProgramResult ctl(std::vector<std::string> args, ProgramOptions options = {}) {
    return run_ctl(daemon_.socket(), std::move(args), options);
  }

  // `cxlpoolctl --json VERB`, parsed; a failure and null when it fails.
  json ctl_json(const std::string& verb) { return run_ctl_json(daemon_.socket(), {verb}); }

  DaemonProcess daemon_{TestConfig{}.render()};
  std::optional<Client> client_;
  cxlpool::Region named_;
  cxlpool::Region leased_;
  uint32_t emu_id_ = 0;
};

const json* find_by(const json& array, const std::string& key, const std::string& value) {
  for (const auto& e : array) {
    if (e.contains(key) && e.at(key).is_string() && e.at(key).get<std::string>() == value) return &e;
  }
  return nullptr;
}

TEST_F(Ctl, JsonTiers) {
  const json tiers = ctl_json("tiers");
  ASSERT_TRUE(tiers.is_array());
  ASSERT_EQ(tiers.size(), 2u);
  const json* dram = find_by(tiers, "name", "dram0");
  ASSERT_NE(dram, nullptr) << tiers.dump();
  EXPECT_EQ(dram->at("kind"), "dram");
  EXPECT_EQ(dram->at("numa_node"), 0);
  EXPECT_EQ(dram->at("used"), 0);
  EXPECT_EQ(dram->at("page_size"), 4096);
  EXPECT_GT(dram->at("capacity").get<uint64_t>(), 0u);
  const json* emu = find_by(tiers, "name", kEmuTier);
  ASSERT_NE(emu, nullptr) << tiers.dump();
  EXPECT_EQ(emu->at("id"), emu_id_);
  EXPECT_EQ(emu->at("kind"), "emulated");
  EXPECT_EQ(emu->at("capacity").get<uint64_t>(), kEmuCapacity);
  EXPECT_EQ(emu->at("used").get<uint64_t>(), kNamedSize + kLeasedSize);
  EXPECT_EQ(emu->at("free").get<uint64_t>(), kEmuCapacity - kNamedSize - kLeasedSize);
  EXPECT_EQ(emu->at("latency_ns"), 300);
  EXPECT_EQ(emu->at("bandwidth_mbps"), 15000);
}

TEST_F(Ctl, JsonStatus) {
  const json status = ctl_json("status");
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status.at("version"), cxlpool_version());
  EXPECT_EQ(status.at("pid"), daemon_.pid());
  EXPECT_EQ(status.at("state_dir"), daemon_.dir());
  EXPECT_EQ(status.at("config"), daemon_.config_path());
  EXPECT_EQ(status.at("socket"), daemon_.socket());
  EXPECT_EQ(status.at("protocol_version"), 1);
  EXPECT_EQ(status.at("clients"), 2) << "this test's client and cxlpoolctl";
  EXPECT_EQ(status.at("regions"), 2);
  EXPECT_EQ(status.at("bytes_allocated").get<uint64_t>(), kNamedSize + kLeasedSize);
  EXPECT_GT(status.at("uptime_ns").get<uint64_t>(), 0u);
}

TEST_F(Ctl, JsonRegions) {
  const json regions = ctl_json("regions");
  ASSERT_TRUE(regions.is_array());
  ASSERT_EQ(regions.size(), 2u);
  const json* named = find_by(regions, "name", "ctl-named");
  ASSERT_NE(named, nullptr) << regions.dump();
  EXPECT_EQ(named->at("id"), named_.id());
  EXPECT_EQ(named->at("kind"), "named");
  EXPECT_EQ(named->at("tier"), emu_id_);
  EXPECT_EQ(named->at("size"), kNamedSize);
  EXPECT_EQ(named->at("mode"), 0640);
  EXPECT_EQ(named->at("owner_uid"), ::getuid());
  EXPECT_EQ(named->at("client"), 0);
  EXPECT_EQ(named->at("handles"), 1);
  const json* leased = find_by(regions, "kind", "leased");
  ASSERT_NE(leased, nullptr);
  EXPECT_EQ(leased->at("id"), leased_.id());
  EXPECT_EQ(leased->at("name"), "");
  EXPECT_EQ(leased->at("size"), kLeasedSize);
  EXPECT_NE(leased->at("client"), 0);
}

TEST_F(Ctl, JsonStats) {
  const json stats = ctl_json("stats");
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(stats.at("pool.allocated_bytes").get<uint64_t>(), kNamedSize + kLeasedSize);
  EXPECT_EQ(stats.at("pool.regions"), 2);
  EXPECT_EQ(stats.at("tier.emu.capacity_bytes").get<uint64_t>(), kEmuCapacity);
  EXPECT_EQ(stats.at("tier.emu.used_bytes").get<uint64_t>(), kNamedSize + kLeasedSize);
  EXPECT_EQ(stats.at("tier.dram0.used_bytes"), 0);
  EXPECT_EQ(stats.at("clients.connected"), 2);
  EXPECT_EQ(stats.at("daemon.reloads"), 0);
}

TEST_F(Ctl, JsonBackends) {
  const json backends = ctl_json("backends");
  ASSERT_TRUE(backends.is_array());
  const std::set<std::string> states = {"available", "not compiled", "not present", "failed"};
  std::set<std::string> names;
  for (const auto& b : backends) {
    names.insert(b.at("name").get<std::string>());
    EXPECT_FALSE(b.at("class").get<std::string>().empty()) << b.dump();
    EXPECT_TRUE(states.count(b.at("state").get<std::string>())) << b.dump();
    EXPECT_TRUE(b.at("detail").is_string());
  }
  for (const char* expected : {"numa", "dax", "emu", "uring", "posix", "aio", "mmap", "dpdk", "packet", "afxdp",
                               "verbs", "ofi", "cuda", "host", "damon", "perf"}) {
    EXPECT_TRUE(names.count(expected)) << "no backend " << expected << " in " << backends.dump();
  }
  // memfd and pread/pwrite exist on every Linux host.
  EXPECT_EQ(find_by(backends, "name", "emu")->at("state"), "available");
  EXPECT_EQ(find_by(backends, "name", "posix")->at("state"), "available");
  EXPECT_EQ(find_by(backends, "name", "mmap")->at("state"), "available");
}

TEST_F(Ctl, JsonClients) {
  const json clients = ctl_json("clients");
  ASSERT_TRUE(clients.is_array());
  ASSERT_EQ(clients.size(), 2u);
  const json* me = find_by(clients, "name", "ctl-test");
  ASSERT_NE(me, nullptr) << clients.dump();
  EXPECT_EQ(me->at("pid"), ::getpid());
  EXPECT_EQ(me->at("uid"), ::getuid());
  EXPECT_EQ(me->at("gid"), ::getgid());
  EXPECT_EQ(me->at("regions"), 2);
  EXPECT_EQ(me->at("bytes").get<uint64_t>(), kNamedSize + kLeasedSize);
  const json* ctl = find_by(clients, "name", "cxlpoolctl");
  ASSERT_NE(ctl, nullptr) << clients.dump();
  EXPECT_NE(ctl->at("pid"), ::getpid());
  EXPECT_EQ(ctl->at("regions"), 0);
}

TEST_F(Ctl, HumanTablesHaveAHeaderRow) {
  auto tiers = ctl({"tiers"});
  ASSERT_EQ(tiers.exit_code, 0) << tiers.err;
  const std::string header = tiers.out.substr(0, tiers.out.find('\n'));
  EXPECT_EQ(header.rfind("ID", 0), 0u) << header;
  for (const char* column : {"NAME", "KIND", "CAPACITY", "USED", "FREE"}) {
    EXPECT_NE(header.find(column), std::string::npos) << header;
  }
  EXPECT_NE(tiers.out.find("dram0"), std::string::npos);
  EXPECT_NE(tiers.out.find("emu"), std::string::npos);

  auto regions = ctl({"regions"});
  ASSERT_EQ(regions.exit_code, 0) << regions.err;
  EXPECT_EQ(regions.out.rfind("ID", 0), 0u) << regions.out;
  EXPECT_NE(regions.out.find("ctl-named"), std::string::npos);
  EXPECT_NE(regions.out.find("0640"), std::string::npos);

  auto status = ctl({"status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("(pid " + std::to_string(daemon_.pid()) + ")"), std::string::npos) << status.out;
}

TEST_F(Ctl, ExitCodes) {
  auto bad_verb = ctl({"frobnicate"});
  EXPECT_EQ(bad_verb.exit_code, 2) << bad_verb.out << bad_verb.err;
  auto no_verb = ctl({});
  EXPECT_EQ(no_verb.exit_code, 2);
  auto missing_args = ctl({"region", "migrate"});
  EXPECT_EQ(missing_args.exit_code, 2);
  auto bad_id = ctl({"region", "migrate", "not-a-number", "emu"});
  EXPECT_EQ(bad_id.exit_code, 2);

  auto unreachable = run_program({ctl_binary(), "--socket", daemon_.dir() + "/nobody-here.sock", "status"});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable.err;
  EXPECT_NE(unreachable.err.find("is cxlpoold running"), std::string::npos) << unreachable.err;
}

TEST_F(Ctl, SocketFromEnvironment) {
  auto r = run_program({ctl_binary(), "--json", "status"}, {.env = {"CXLPOOL_SOCKET=" + daemon_.socket()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json status = json::parse(r.out);
  EXPECT_EQ(status.at("pid"), daemon_.pid());
  EXPECT_EQ(status.at("socket"), daemon_.socket());
  // --socket wins over the environment.
  auto both = run_program({ctl_binary(), "--socket", daemon_.socket(), "status"},
                          {.env = {"CXLPOOL_SOCKET=" + daemon_.dir() + "/wrong.sock"}});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  auto wrong = run_program({ctl_binary(), "status"}, {.env = {"CXLPOOL_SOCKET=" + daemon_.dir() + "/wrong.sock"}});
  EXPECT_EQ(wrong.exit_code, 3);
}

}  // namespace
}  // namespace cxlpool::integration
