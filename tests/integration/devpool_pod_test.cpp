// SPDX-License-Identifier: Apache-2.0
// The device pool's state in etcd across a pod of two daemons: each runs in
// a network namespace of its own ("hosts" on a bridged LAN), etcd runs in a
// third and both reach it over the LAN. Fake backends register a NIC with
// each daemon; each daemon's allocator sees both devices; an attachment made
// through one is seen by the other; frontends attaching through both at
// once never get one table line (or link slot, or id) twice; when one
// daemon is killed with SIGKILL its devices and attachments leave the pod
// within the lease TTL plus a second and the other daemon's attachments on
// its device fail over to their backups; while etcd is away local work goes
// on, devices are not handed out, and the pod is reconciled when etcd is
// back. A device's host/name is the pod's: refused through a second daemon
// (one winner when both register it at once), free again when its holder's
// lease is gone, and a daemon back from a partition does not write its
// devices again where their line or name was taken meanwhile; the load a
// backend reports to one daemon is seen by the other. Root only (network namespaces); skips without etcd.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/client/connection.hpp"
#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "etcd_server.hpp"
#include "net_lab.hpp"
#include "pool_queries.hpp"
#include "support/wait_until.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using client::Connection;
using nlohmann::json;

constexpr uint32_t kTtlS = 2;
constexpr uint64_t k10G = 10'000'000'000;
constexpr int kSlots = 12;  // six attachment lines

std::string node_config(const std::string& member, const std::string& endpoint) {
  TestConfig config;
  // Device leases far longer than the test: no heartbeats needed.
  config.tables = "[devpool]\nlink_slots = " + std::to_string(kSlots) +
                  "\nmax_devices = 8\nlink_buffer_bytes = \"64K\"\nlease_ms = 600000\ntelemetry_ms = 20\n"
                  "[pod]\nstate = \"etcd\"\nname = \"devpool-pod\"\nhost = \"" + member + "\"\netcd_endpoints = [\"" +
                  endpoint + "\"]\nlease_ttl_s = " + std::to_string(kTtlS) + "\netcd_timeout_ms = 500\n";
  return config.render();
}

std::unique_ptr<Connection> connect(const DaemonProcess& daemon, const std::string& name) {
  auto conn = Connection::open(daemon.socket(), name);
  EXPECT_TRUE(conn) << conn.error().message;
  return conn ? std::move(*conn) : nullptr;
}

// A backend's connection (the device lives as long as it) and its device id.
struct Backend {
  std::unique_ptr<Connection> conn;
  uint32_t device = 0;
};

Result<uint32_t> register_named(const DaemonProcess& daemon, const std::string& host, const std::string& name,
                                Backend& out) {
  auto conn = Connection::open(daemon.socket(), "backend-" + host);
  if (!conn) return tl::unexpected(conn.error());
  out.conn = std::move(*conn);
  auto reply = out.conn->call_for<proto::DevRegisterReply>(proto::DevRegister{
      .kind = proto::DevKind::kNet, .capacity = k10G, .mac = {2, 0, 0, 0, 0, 1}, .name = name, .host = host});
  if (!reply) return tl::unexpected(reply.error());
  out.device = reply->device_id;
  return out.device;
}

testing::AssertionResult register_nic(const DaemonProcess& daemon, const std::string& host, Backend& out) {
  auto ok = register_named(daemon, host, "eth0", out);
  if (!ok) return testing::AssertionFailure() << ok.error().message;
  return testing::AssertionSuccess();
}

struct Frontend {
  std::unique_ptr<Connection> conn;
  proto::DevAttachReply reply;
};

Result<proto::DevAttachReply> attach(const DaemonProcess& daemon, const std::string& host, Frontend& out) {
  auto conn = Connection::open(daemon.socket(), "frontend-" + host);
  if (!conn) return tl::unexpected(conn.error());
  out.conn = std::move(*conn);
  auto reply = out.conn->call_for<proto::DevAttachReply>(proto::DevAttach{.kind = proto::DevKind::kNet, .host = host});
  if (reply) out.reply = *reply;
  return reply;
}

json devices(const DaemonProcess& d) { return run_ctl_json(d.socket(), {"devices"}); }

std::set<uint32_t> ids_of(const json& list, const char* what) {
  std::set<uint32_t> ids;
  if (list.is_object() && list.contains(what)) {
    for (const json& e : list[what]) ids.insert(e.value("id", 0u));
  }
  return ids;
}

// Waits until the daemon's allocator holds exactly these devices and attachments.
testing::AssertionResult holds(const DaemonProcess& d, const std::set<uint32_t>& device_ids,
                               const std::set<uint32_t>& attachment_ids, std::chrono::milliseconds timeout) {
  json last;
  const bool ok = test::wait_until(
      [&] {
        last = devices(d);
        return ids_of(last, "devices") == device_ids && ids_of(last, "attachments") == attachment_ids;
      },
      timeout, 20ms);
  if (ok) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "devices --json: " << last.dump();
}

json attachment_in(const json& list, uint32_t id) {
  for (const json& a : list["attachments"]) {
    if (a.value("id", 0u) == id) return a;
  }
  return nullptr;
}

uint64_t counter(const DaemonProcess& d, const std::string& name) {
  auto conn = connect(d, "stats");
  return conn ? stat(*conn, name) : 0;
}

class DevpoolPod : public testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = net_lab_unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (etcd_binary().empty()) GTEST_SKIP() << "etcd is not installed (Debian package etcd-server)";
    lab_ = std::make_unique<NetLab>("");
    const std::string lan = lab_->add_host("lan");
    ASSERT_FALSE(lan.empty());
    ASSERT_TRUE(lab_->add_bridge(lan));
    std::string error;
    ASSERT_TRUE(lab_->ip({"-n", lan, "addr", "add", "10.93.0.1/24", "dev", "br0"}, &error)) << error;
    int n = 2;
    for (std::string* host : {&ha_, &hb_}) {
      *host = lab_->add_host(n == 2 ? "ha" : "hb");
      ASSERT_FALSE(host->empty());
      const std::string nic = lab_->plug(*host, lan);
      if (n == 2) nic_a_ = nic;
      ASSERT_FALSE(nic.empty());
      ASSERT_TRUE(lab_->ip({"-n", *host, "addr", "add", "10.93.0." + std::to_string(n++) + "/24", "dev", nic}, &error))
          << error;
    }
    etcd_.place(lan, "10.93.0.1");
    const std::string failed = etcd_.start();
    ASSERT_TRUE(failed.empty()) << failed;
  }

  std::unique_ptr<NetLab> lab_;
  std::string ha_, hb_;
  std::string nic_a_;  // host A's interface on the LAN
  EtcdServer etcd_;
};

TEST_F(DevpoolPod, AllocatorStateIsThePods) {
  DaemonProcess a(node_config("node-a", etcd_.endpoint()));
  DaemonProcess b(node_config("node-b", etcd_.endpoint()));
  ASSERT_TRUE(a.start({.netns = ha_}));
  ASSERT_TRUE(b.start({.netns = hb_}));
  for (const DaemonProcess* d : {&a, &b}) {
    json state;
    ASSERT_TRUE(test::wait_until(
        [&] {
          state = devices(*d)["state"];
          return state.value("connected", false);
        },
        10s, 20ms))
        << state.dump();
    EXPECT_EQ(state.value("backend", ""), "etcd");
  }
  const auto text = run_ctl(a.socket(), {"devices"});
  EXPECT_NE(text.out.find("state: etcd (connected)"), std::string::npos) << text.out;

  // A device registered through one daemon is in the other's allocator.
  Backend nic_a, nic_b;
  ASSERT_TRUE(register_nic(a, "node-a", nic_a));
  ASSERT_TRUE(register_nic(b, "node-b", nic_b));
  EXPECT_NE(nic_a.device, nic_b.device);
  const std::set<uint32_t> both = {nic_a.device, nic_b.device};
  ASSERT_TRUE(holds(a, both, {}, 5s));
  ASSERT_TRUE(holds(b, both, {}, 5s));

  // An attachment made through A is B's to see, legs and all.
  Frontend first;
  auto attached = attach(a, "node-a", first);
  ASSERT_TRUE(attached) << attached.error().message;
  ASSERT_TRUE(holds(b, both, {first.reply.attachment_id}, 5s));
  const json seen = attachment_in(devices(b), first.reply.attachment_id);
  EXPECT_EQ(seen.value("primary", 0u), first.reply.device[first.reply.active]);
  EXPECT_EQ(seen.value("backup", 0u), first.reply.device[first.reply.active ^ 1]);
  EXPECT_EQ(seen.value("primary_slot", 0u), first.reply.slot[first.reply.active]);

  // Frontends attaching through both daemons at once: five lines are left
  // for eight requests. Every line, slot and id goes out once.
  constexpr int kPerDaemon = 4;
  std::vector<Frontend> racers(2 * kPerDaemon);
  std::vector<int> codes(racers.size(), 0);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < racers.size(); ++i) {
    threads.emplace_back([&, i] {
      while (!go) std::this_thread::yield();
      const bool through_a = i % 2 == 0;
      auto r = attach(through_a ? a : b, through_a ? "node-a" : "node-b", racers[i]);
      codes[i] = r ? 0 : r.error().code;
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  std::set<uint32_t> lines = {first.reply.line}, slots = {first.reply.slot[0], first.reply.slot[1]};
  std::set<uint32_t> attachment_ids = {first.reply.attachment_id};
  int won = 0;
  for (size_t i = 0; i < racers.size(); ++i) {
    if (codes[i] != 0) {
      EXPECT_EQ(codes[i], ENOSPC) << "request " << i;
      continue;
    }
    ++won;
    const auto& r = racers[i].reply;
    EXPECT_TRUE(lines.insert(r.line).second) << "line " << r.line << " handed out twice";
    EXPECT_TRUE(slots.insert(r.slot[0]).second) << "slot " << r.slot[0] << " handed out twice";
    EXPECT_TRUE(slots.insert(r.slot[1]).second) << "slot " << r.slot[1] << " handed out twice";
    EXPECT_TRUE(attachment_ids.insert(r.attachment_id).second) << "id " << r.attachment_id << " handed out twice";
    EXPECT_FALSE(both.count(r.attachment_id)) << "an attachment got a device's id";
  }
  EXPECT_EQ(won, kSlots / 2 - 1);
  ASSERT_TRUE(holds(a, both, attachment_ids, 5s));
  ASSERT_TRUE(holds(b, both, attachment_ids, 5s));
  std::printf("devpool pod: %d of %zu concurrent attaches won, %llu + %llu commits lost to the other daemon\n", won,
              racers.size(), static_cast<unsigned long long>(counter(a, "devpool.state_conflicts")),
              static_cast<unsigned long long>(counter(b, "devpool.state_conflicts")));

  // A dies without a word: its lease takes its device and the attachments
  // made through it out of the pod; B's attachments that had A's NIC as
  // primary switch to their backup, B's NIC.
  std::set<uint32_t> b_attachments;
  std::set<uint32_t> b_on_a;
  const json before = devices(b);
  for (size_t i = 1; i < racers.size(); i += 2) {
    if (codes[i] != 0) continue;
    b_attachments.insert(racers[i].reply.attachment_id);
    const json e = attachment_in(before, racers[i].reply.attachment_id);
    if (e.value("primary", 0u) == nic_a.device) b_on_a.insert(racers[i].reply.attachment_id);
  }
  const auto killed = std::chrono::steady_clock::now();
  a.send_signal(SIGKILL);
  ASSERT_TRUE(holds(b, {nic_b.device}, b_attachments, 10s));
  const auto dropped = std::chrono::steady_clock::now() - killed;
  const json after = devices(b);
  for (uint32_t id : b_attachments) {
    const json e = attachment_in(after, id);
    EXPECT_EQ(e.value("primary", 0u), nic_b.device) << e.dump();
    EXPECT_TRUE(e["backup"].is_null()) << e.dump();
    if (b_on_a.count(id) != 0) {
      EXPECT_GT(e.value("generation", 0u), attachment_in(before, id).value("generation", 0u));
    }
  }
  const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(dropped).count();
  std::printf("devpool pod: SIGKILLed daemon's device and attachments dropped by its peer after %lld ms "
              "(lease ttl %u s); %zu attachment(s) failed over\n", ms, kTtlS, b_on_a.size());
  EXPECT_LE(dropped, std::chrono::seconds(kTtlS) + 1s) << ms << " ms";
  EXPECT_GE(counter(b, "devpool.failovers_total"), b_on_a.size());
}

json device_in(const json& list, uint32_t id) {
  for (const json& d : list["devices"]) {
    if (d.value("id", 0u) == id) return d;
  }
  return nullptr;
}

TEST_F(DevpoolPod, DeviceNamesAndLoadAreThePods) {
  DaemonProcess a(node_config("node-a", etcd_.endpoint()));
  DaemonProcess b(node_config("node-b", etcd_.endpoint()));
  ASSERT_TRUE(a.start({.netns = ha_}));
  ASSERT_TRUE(b.start({.netns = hb_}));
  for (const DaemonProcess* d : {&a, &b}) {
    ASSERT_TRUE(test::wait_until([&] { return devices(*d)["state"].value("connected", false); }, 10s, 20ms));
  }

  // A host/name one daemon holds is refused through the other, naming the holder.
  Backend held;
  ASSERT_TRUE(register_nic(a, "node-a", held));
  ASSERT_TRUE(holds(b, {held.device}, {}, 5s));
  Backend twin;
  auto refused = register_named(b, "node-a", "eth0", twin);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EEXIST) << refused.error().message;
  EXPECT_NE(refused.error().message.find("daemon 'node-a'"), std::string::npos) << refused.error().message;
  EXPECT_EQ(counter(b, "devpool.names_taken"), 1u);

  // One name through both daemons at once, a few times: exactly one wins.
  constexpr int kRounds = 4;
  std::vector<Backend> racers(2 * kRounds);
  for (int round = 0; round < kRounds; ++round) {
    const std::string name = "race" + std::to_string(round);
    Result<uint32_t> got[2];
    std::atomic<int> ready{0};
    std::thread through_b([&] {
      ++ready;
      while (ready < 2) std::this_thread::yield();
      got[1] = register_named(b, "node-x", name, racers[2 * round + 1]);
    });
    ++ready;
    while (ready < 2) std::this_thread::yield();
    got[0] = register_named(a, "node-x", name, racers[2 * round]);
    through_b.join();
    EXPECT_NE(got[0].has_value(), got[1].has_value()) << name;
    for (const auto& g : got) {
      if (!g) {
        EXPECT_EQ(g.error().code, EEXIST) << g.error().message;
      }
    }
  }
  std::set<std::string> names;
  const json listed = devices(a);
  for (const json& d : listed["devices"]) names.insert(d.value("host", "") + "/" + d.value("name", ""));
  EXPECT_EQ(names.size(), 1u + kRounds) << listed.dump();
  EXPECT_EQ(listed["devices"].size(), 1u + kRounds) << listed.dump();
  std::printf("devpool pod: %d names registered through both daemons at once, one winner each; %llu + %llu "
              "commits lost to the other daemon\n", kRounds,
              static_cast<unsigned long long>(counter(a, "devpool.state_conflicts")),
              static_cast<unsigned long long>(counter(b, "devpool.state_conflicts")));

  // The load A's backend reports is B's to see (and to balance on).
  for (int i = 0; i < 30; ++i) {
    auto beat = held.conn->call_for<proto::DevHeartbeatReply>(
        proto::DevHeartbeat{.device_id = held.device, .link_up = 1, .bytes_per_s = k10G / 8 * 2 / 5, .ops_per_s = 1000});
    ASSERT_TRUE(beat) << beat.error().message;
    std::this_thread::sleep_for(20ms);
  }
  json seen;
  ASSERT_TRUE(test::wait_until(
      [&] {
        seen = device_in(devices(b), held.device);
        return seen.is_object() && seen.value("samples", 0u) > 0 && seen.value("load", 0.0) > 0.35;
      },
      5s, 20ms))
      << seen.dump();
  EXPECT_NEAR(seen.value("load", 0.0), 0.4, 0.01) << seen.dump();
  EXPECT_EQ(seen.value("bytes_per_s", 0ull), k10G / 8 * 2 / 5);
  EXPECT_EQ(seen.value("ops_per_s", 0ull), 1000u);
  const auto text = run_ctl(b.socket(), {"devices"});
  EXPECT_NE(text.out.find("40.0%"), std::string::npos) << text.out;
  // Rate-limited: 30 heartbeats in about a second, a handful of writes.
  const uint64_t writes = counter(a, "devpool.state_load_writes");
  EXPECT_GE(writes, 1u);
  EXPECT_LE(writes, 5u);
  std::printf("devpool pod: 30 heartbeats over ~1 s wrote the device's load %llu time(s)\n",
              static_cast<unsigned long long>(writes));

  // The holder dies: once its lease is gone the name is free again.
  const auto killed = std::chrono::steady_clock::now();
  a.send_signal(SIGKILL);
  Result<uint32_t> again = fail(EEXIST, "not tried");
  ASSERT_TRUE(test::wait_until(
      [&] {
        again = register_named(b, "node-a", "eth0", twin);
        return again.has_value() || again.error().code != EEXIST;
      },
      std::chrono::seconds(kTtlS) + 3s, 50ms));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_NE(*again, held.device);
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count();
  std::printf("devpool pod: the name registered again through the other daemon %lld ms after its holder was "
              "SIGKILLed (lease ttl %u s)\n", ms, kTtlS);
}

TEST_F(DevpoolPod, ADaemonBackFromAPartitionDoesNotWriteANameTakenMeanwhile) {
  DaemonProcess a(node_config("node-a", etcd_.endpoint()));
  DaemonProcess b(node_config("node-b", etcd_.endpoint()));
  ASSERT_TRUE(a.start({.netns = ha_}));
  ASSERT_TRUE(b.start({.netns = hb_}));
  for (const DaemonProcess* d : {&a, &b}) {
    ASSERT_TRUE(test::wait_until([&] { return devices(*d)["state"].value("connected", false); }, 10s, 20ms));
  }
  // A's eth0 on line 1, behind a spare on line 0.
  Backend spare, held;
  ASSERT_TRUE(register_named(a, "node-a", "spare", spare));
  ASSERT_TRUE(register_named(a, "node-a", "eth0", held));
  ASSERT_TRUE(holds(b, {spare.device, held.device}, {}, 5s));

  // A loses the LAN: its lease runs out and its devices leave the pod,
  // while its backends stay connected to it. B registers A's eth0 name
  // meanwhile; it lands on line 0.
  std::string error;
  ASSERT_TRUE(lab_->ip({"-n", ha_, "link", "set", "dev", nic_a_, "down"}, &error)) << error;
  ASSERT_TRUE(holds(b, {}, {}, std::chrono::seconds(kTtlS) + 3s));
  Backend taken;
  auto got = register_named(b, "node-a", "eth0", taken);
  ASSERT_TRUE(got) << got.error().message;

  // A is back: its spare's line and its eth0's name are taken, so it
  // writes neither again; the pod holds one node-a/eth0, B's.
  ASSERT_TRUE(lab_->ip({"-n", ha_, "link", "set", "dev", nic_a_, "up"}, &error)) << error;
  ASSERT_TRUE(test::wait_until([&] { return devices(a)["state"].value("connected", false); }, 10s, 20ms));
  ASSERT_TRUE(holds(a, {taken.device}, {}, 5s));
  std::this_thread::sleep_for(500ms);  // a refresh or two later: still nothing of A's
  EXPECT_TRUE(holds(a, {taken.device}, {}, 0ms));
  EXPECT_TRUE(holds(b, {taken.device}, {}, 0ms));
  EXPECT_EQ(counter(a, "devpool.state_republished"), 0u);
  const std::string log = a.log();
  EXPECT_NE(log.find("its name was registered again through daemon 'node-b'"), std::string::npos) << log;
  // Its backend learns it at its next heartbeat.
  auto beat = held.conn->call_for<proto::DevHeartbeatReply>(proto::DevHeartbeat{.device_id = held.device});
  ASSERT_FALSE(beat);
  EXPECT_EQ(beat.error().code, ENOENT) << beat.error().message;
}

TEST_F(DevpoolPod, EtcdAwayRefusesNewAttachmentsAndComesBack) {
  DaemonProcess b(node_config("node-b", etcd_.endpoint()));
  ASSERT_TRUE(b.start({.netns = hb_}));
  ASSERT_TRUE(test::wait_until([&] { return devices(b)["state"].value("connected", false); }, 10s, 20ms));
  Backend nic;
  ASSERT_TRUE(register_nic(b, "node-b", nic));
  Frontend kept;
  ASSERT_TRUE(attach(b, "node-b", kept));

  etcd_.kill();
  json state;
  ASSERT_TRUE(test::wait_until(
      [&] {
        state = devices(b)["state"];
        return !state.value("connected", true);
      },
      10s, 20ms));
  EXPECT_FALSE(state.value("last_error", std::string()).empty()) << state.dump();
  // Nothing is handed out without the pod's word, and the refusal is at once.
  Frontend refused;
  const auto asked = std::chrono::steady_clock::now();
  auto r = attach(b, "node-b", refused);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EHOSTUNREACH) << r.error().message;
  // No round trip to etcd: a generous bound, for a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 1s);
  // What the daemon holds goes on: the device's heartbeats, the attachment.
  auto beat = nic.conn->call_for<proto::DevHeartbeatReply>(proto::DevHeartbeat{nic.device, 1, 0, 0});
  EXPECT_TRUE(beat) << beat.error().message;
  EXPECT_EQ(ids_of(devices(b), "attachments"), std::set<uint32_t>{kept.reply.attachment_id});
  EXPECT_GE(counter(b, "devpool.state_etcd_errors"), 1u);
  // A detach while etcd is away is kept and reaches the pod once it is back.
  kept.conn.reset();

  const std::string restarted = etcd_.start();
  ASSERT_TRUE(restarted.empty()) << restarted;
  ASSERT_TRUE(test::wait_until([&] { return devices(b)["state"].value("connected", false); }, 15s, 20ms));
  ASSERT_TRUE(holds(b, {nic.device}, {}, 5s));
  Frontend again;
  auto ok = attach(b, "node-b", again);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->device[ok->active], nic.device);
}

}  // namespace
}  // namespace cxlpool::integration
