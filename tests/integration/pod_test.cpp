// SPDX-License-Identifier: Apache-2.0
// Pods of hosts against real daemons and a real etcd: three cxlpoold with
// their own state directories join one pod; one is killed with SIGKILL and
// the others drop it within the lease TTL plus a second; etcd goes away and
// the daemons keep serving local work; a daemon that starts while etcd is
// away joins when it is back, and every member's table is reconciled.
// `cxlpoolctl pod status --json` is what the tests read. Skips when etcd
// (Debian's etcd-server) is not installed.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "etcd_server.hpp"
#include "pool_queries.hpp"
#include "support/wait_until.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr uint32_t kTtlS = 2;

std::string pod_config(const std::string& host, const std::string& endpoint) {
  TestConfig config;
  config.tables = "[pod]\nstate = \"etcd\"\nname = \"test-pod\"\nhost = \"" + host + "\"\netcd_endpoints = [\"" +
                  endpoint + "\"]\nlease_ttl_s = " + std::to_string(kTtlS) +
                  "\netcd_timeout_ms = 500\nprovider = \"tcp;ofi_rxm\"\naddress = \"127.0.0.1:7" + host.substr(5) +
                  "00\"\n";
  return config.render();
}

json pod_status(const DaemonProcess& d) { return run_ctl_json(d.socket(), {"pod", "status"}); }

std::set<std::string> member_hosts(const json& status) {
  std::set<std::string> hosts;
  if (status.is_object() && status.contains("members")) {
    for (const json& m : status["members"]) hosts.insert(m.value("host", std::string()));
  }
  return hosts;
}

// Waits until the daemon knows exactly `hosts` and is connected (or not).
testing::AssertionResult sees(const DaemonProcess& d, const std::set<std::string>& hosts, bool connected,
                              std::chrono::milliseconds timeout) {
  json last;
  const bool ok = test::wait_until(
      [&] {
        last = pod_status(d);
        return member_hosts(last) == hosts && last.value("connected", !connected) == connected;
      },
      timeout, 20ms);
  if (ok) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "pod status: " << last.dump();
}

// Local work: a region on the emulated tier, allocated and freed.
testing::AssertionResult serves_local_work(const DaemonProcess& d) {
  auto conn = connect_admin(d.socket(), "pod-test");
  if (!conn) return testing::AssertionFailure() << "no connection";
  const uint32_t emu = tier_named(*conn, kEmuTier).id;
  auto region = conn->call_for<proto::RegionReply>(proto::RegionAlloc{emu, 1 << 20, 0});
  if (!region) return testing::AssertionFailure() << "RegionAlloc: " << region.error().message;
  auto freed = conn->call_for<proto::Ok>(proto::RegionFree{region->region_id});
  if (!freed) return testing::AssertionFailure() << "RegionFree: " << freed.error().message;
  return testing::AssertionSuccess();
}

TEST(Pod, EmbeddedPodHasOnlyThisHost) {
  TestConfig config;
  config.tables = "[pod]\nhost = \"solo\"\n";
  DaemonProcess d(config.render());
  ASSERT_TRUE(d.start());
  const json s = pod_status(d);
  EXPECT_EQ(s.value("backend", ""), "embedded");
  EXPECT_TRUE(s.value("connected", false));
  ASSERT_EQ(s["members"].size(), 1u) << s.dump();
  EXPECT_EQ(s["members"][0]["host"], "solo");
  EXPECT_TRUE(s["members"][0]["self"].get<bool>());
  EXPECT_EQ(s["members"][0]["exported_bytes"].get<uint64_t>() >= kEmuCapacity, true);
  const auto text = run_ctl(d.socket(), {"pod", "status"});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("embedded (single host)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("solo *"), std::string::npos) << text.out;
}

// The tests that need a real etcd: started before each, skipped without one.
class PodEtcd : public testing::Test {
 protected:
  void SetUp() override {
    if (etcd_binary().empty()) GTEST_SKIP() << "etcd is not installed (Debian package etcd-server)";
    const std::string failed = etcd.start();
    ASSERT_TRUE(failed.empty()) << failed;
  }
  EtcdServer etcd;
};

TEST_F(PodEtcd, MembershipFollowsLeasesAndSurvivesEtcd) {
  DaemonProcess a(pod_config("host-1", etcd.endpoint()));
  DaemonProcess b(pod_config("host-2", etcd.endpoint()));
  DaemonProcess c(pod_config("host-3", etcd.endpoint()));
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(c.start());
  const std::set<std::string> all = {"host-1", "host-2", "host-3"};
  for (const DaemonProcess* d : {&a, &b, &c}) ASSERT_TRUE(sees(*d, all, true, 10s));

  // What a member publishes reaches its peers.
  const json status = pod_status(a);
  EXPECT_EQ(status.value("backend", ""), "etcd");
  EXPECT_EQ(status.value("host", ""), "host-1");
  EXPECT_NE(status.value("lease_id", uint64_t{0}), 0u);
  for (const json& m : status["members"]) {
    EXPECT_EQ(m.value("self", false), m["host"] == "host-1");
    EXPECT_EQ(m.value("provider", ""), "tcp;ofi_rxm");
    EXPECT_GE(m.value("exported_bytes", uint64_t{0}), kEmuCapacity);
    EXPECT_NE(m.value("lease_id", uint64_t{0}), 0u);
  }
  EXPECT_EQ(status["members"][2].value("address", ""), "127.0.0.1:7300");

  // A daemon killed without a word: its lease runs out and every peer drops it.
  const auto killed = std::chrono::steady_clock::now();
  c.send_signal(SIGKILL);
  const std::set<std::string> two = {"host-1", "host-2"};
  ASSERT_TRUE(sees(a, two, true, 10s));
  const auto a_dropped = std::chrono::steady_clock::now() - killed;
  ASSERT_TRUE(sees(b, two, true, 10s));
  const auto b_dropped = std::chrono::steady_clock::now() - killed;
  const auto limit = std::chrono::seconds(kTtlS) + 1s;
  std::printf("pod: SIGKILLed member dropped by its peers after %lld ms and %lld ms (lease ttl %u s)\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(a_dropped).count()),
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(b_dropped).count()), kTtlS);
  EXPECT_LE(a_dropped, limit) << std::chrono::duration_cast<std::chrono::milliseconds>(a_dropped).count() << " ms";
  EXPECT_LE(b_dropped, limit) << std::chrono::duration_cast<std::chrono::milliseconds>(b_dropped).count() << " ms";
  EXPECT_GE(pod_status(a).value("departures", uint64_t{0}), 1u);
  EXPECT_GE(stat(*connect_admin(a.socket()), "pod.departures"), 1u);

  // etcd goes away: local work goes on, the daemons say they are cut off.
  etcd.kill();
  ASSERT_TRUE(sees(a, two, false, 10s));
  ASSERT_TRUE(sees(b, two, false, 10s));
  EXPECT_TRUE(serves_local_work(a));
  EXPECT_TRUE(serves_local_work(b));
  EXPECT_GE(pod_status(a).value("etcd_errors", uint64_t{0}), 1u);
  EXPECT_FALSE(pod_status(a).value("last_error", std::string()).empty());

  // A daemon that starts meanwhile cannot register, and serves anyway.
  DaemonProcess d(pod_config("host-4", etcd.endpoint()));
  ASSERT_TRUE(d.start());
  EXPECT_TRUE(serves_local_work(d));
  EXPECT_FALSE(pod_status(d).value("connected", true));

  // etcd is back: everyone reconciles to the same three members.
  const std::string restarted = etcd.start();
  ASSERT_TRUE(restarted.empty()) << restarted;
  const std::set<std::string> three = {"host-1", "host-2", "host-4"};
  for (const DaemonProcess* p : {&a, &b, &d}) ASSERT_TRUE(sees(*p, three, true, 15s));

  // A clean stop revokes the lease: peers see the departure at once.
  EXPECT_EQ(b.stop(), 0);
  ASSERT_TRUE(sees(a, {"host-1", "host-4"}, true, 5s));
  ASSERT_TRUE(sees(d, {"host-1", "host-4"}, true, 5s));
}

TEST_F(PodEtcd, SecondDaemonWithATakenNameIsRefused) {
  DaemonProcess a(pod_config("host-1", etcd.endpoint()));
  DaemonProcess twin(pod_config("host-1", etcd.endpoint()));
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(sees(a, {"host-1"}, true, 10s));
  ASSERT_TRUE(twin.start());
  json last;
  ASSERT_TRUE(test::wait_until(
      [&] {
        last = pod_status(twin);
        return last.value("last_error", std::string()).find("held by lease") != std::string::npos;
      },
      10s, 20ms))
      << last.dump();
  EXPECT_FALSE(last.value("connected", true));
  EXPECT_EQ(last.value("lease_id", uint64_t{1}), 0u);
  // The first one keeps its record.
  const json first = pod_status(a);
  ASSERT_EQ(first["members"].size(), 1u);
  EXPECT_EQ(first["members"][0].value("lease_id", uint64_t{0}), first.value("lease_id", uint64_t{1}));
}

// The transfer engine opens with the pod and its rails show in the status;
// one that cannot open (a rail address this host lacks) is an error there,
// and the daemon still registers and serves local work.
TEST_F(PodEtcd, TransferEngineOpensOrSaysWhyNot) {
  DaemonProcess a(pod_config("host-1", etcd.endpoint()));
  TestConfig broken;
  broken.tables = "[pod]\nstate = \"etcd\"\nname = \"test-pod\"\nhost = \"host-2\"\netcd_endpoints = [\"" +
                  etcd.endpoint() + "\"]\nlease_ttl_s = 2\nrails = [\"192.0.2.77\"]\n";
  DaemonProcess b(broken.render());
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  ASSERT_TRUE(sees(a, {"host-1", "host-2"}, true, 10s));
  ASSERT_TRUE(sees(b, {"host-1", "host-2"}, true, 10s));
  const json sa = pod_status(a);
  if (sa["fabric"]["transport"] == "") GTEST_SKIP() << "no tcp;ofi_rxm here: " << sa["fabric"]["error"];
  EXPECT_EQ(sa["fabric"]["transport"], "ofi tcp;ofi_rxm");
  ASSERT_GE(sa["fabric"]["rails"].size(), 1u) << sa.dump();
  EXPECT_TRUE(sa["fabric"]["rails"][0]["up"].get<bool>());
  EXPECT_EQ(sa["fabric"]["rails"][0]["provider"], "tcp;ofi_rxm");

  const json sb = pod_status(b);
  EXPECT_EQ(sb["fabric"]["transport"], "") << sb.dump();
  EXPECT_NE(sb["fabric"]["error"], "") << sb.dump();
  const auto text = run_ctl(b.socket(), {"pod", "status"});
  EXPECT_NE(text.out.find("transfer engine: NOT OPEN"), std::string::npos) << text.out;
  EXPECT_TRUE(serves_local_work(b));
}

}  // namespace
}  // namespace cxlpool::integration
