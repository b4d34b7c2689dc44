// SPDX-License-Identifier: Apache-2.0
// The device pool against the real cxlpoold: fake backends register NICs
// over the control socket and send heartbeats, a frontend attaches and gets
// a primary and a backup on another host, each in a formatted link slot of
// the pod file the replies carry; a backend whose connection closes, whose
// lease runs out or whose link goes down is failed over (the attachment's
// line in the pod file gets a new generation and names the backup), an
// admin fails a device over with cxlpoolctl, and `cxlpoolctl devices
// --json` shows the registry, the attachments, load and health.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/devpool/line_access.hpp"
#include "cxlpool/devpool/link.hpp"
#include "cxlpool/devpool/pod_region.hpp"
#include "support/child_process.hpp"
#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using client::Connection;
using Reader = devpool::PodTableReader<devpool::CoherentLines>;

constexpr uint64_t k10G = 10'000'000'000;

// Leases long enough that no backend of a test that does not beat loses its device.
std::string devpool_config(uint32_t lease_ms = 60000, const std::string& extra = "", const char* daemon = "") {
  TestConfig config{.daemon = daemon};
  config.tables = "[devpool]\nlink_slots = 8\nmax_devices = 4\nlink_buffer_bytes = \"64K\"\n"
                  "lease_ms = " + std::to_string(lease_ms) + "\ntelemetry_ms = 20\n" + extra;
  return config.render();
}

std::unique_ptr<Connection> connect(const DaemonProcess& daemon, const std::string& name) {
  auto conn = Connection::open(daemon.socket(), name);
  EXPECT_TRUE(conn) << conn.error().message;
  return conn ? std::move(*conn) : nullptr;
}

// A backend: its connection, and the device it registered.
struct Backend {
  std::unique_ptr<Connection> conn;
  proto::DevRegisterReply reply;
  UniqueFd pod;

  Result<proto::DevHeartbeatReply> beat(bool link_up = true, uint64_t bytes_per_s = 0) {
    return conn->call_for<proto::DevHeartbeatReply>(
        proto::DevHeartbeat{reply.device_id, static_cast<uint8_t>(link_up ? 1 : 0), bytes_per_s, 0});
  }
};

testing::AssertionResult register_nic(const DaemonProcess& daemon, const std::string& name, const std::string& host,
                                      Backend& out) {
  out.conn = connect(daemon, "backend-" + host);
  if (!out.conn) return testing::AssertionFailure() << "no connection";
  proto::DevRegister request{.kind = proto::DevKind::kNet, .capacity = k10G, .mac = {2, 0, 0, 0, 0, 1},
                             .name = name, .host = host};
  auto received = out.conn->call(request);
  if (!received) return testing::AssertionFailure() << received.error().message;
  auto* reply = std::get_if<proto::DevRegisterReply>(&received->envelope.message);
  if (reply == nullptr) return testing::AssertionFailure() << "not a DevRegisterReply";
  if (received->fds.size() != 1) return testing::AssertionFailure() << received->fds.size() << " descriptors";
  out.reply = *reply;
  out.pod = std::move(received->fds[0]);
  return testing::AssertionSuccess();
}

// The frontend's view of the pod file: mapped from the attach reply's descriptor.
struct Frontend {
  std::unique_ptr<Connection> conn;
  proto::DevAttachReply reply;
  Mapping pod;

  Result<devpool::AttachmentLine> line() {
    auto reader = Reader::open({pod.data(), pod.length()});
    if (!reader) return tl::unexpected(reader.error());
    return reader->attachment(reply.line);
  }
};

testing::AssertionResult attach(const DaemonProcess& daemon, const std::string& host, Frontend& out) {
  out.conn = connect(daemon, "frontend-" + host);
  if (!out.conn) return testing::AssertionFailure() << "no connection";
  auto received = out.conn->call(proto::DevAttach{.kind = proto::DevKind::kNet, .host = host});
  if (!received) return testing::AssertionFailure() << received.error().message;
  auto* reply = std::get_if<proto::DevAttachReply>(&received->envelope.message);
  if (reply == nullptr || received->fds.size() != 1) return testing::AssertionFailure() << "bad attach reply";
  out.reply = *reply;
  auto mapping = Mapping::map(reply->pod_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, received->fds[0].get());
  if (!mapping) return testing::AssertionFailure() << mapping.error().message;
  out.pod = std::move(*mapping);
  return testing::AssertionSuccess();
}

// Waits until the attachment's line has a generation above `after`.
devpool::AttachmentLine line_after(Frontend& f, uint32_t after) {
  devpool::AttachmentLine seen;
  EXPECT_TRUE(wait_until(
      [&] {
        auto line = f.line();
        if (!line) return false;
        seen = *line;
        return line->generation > after;
      },
      5s))
      << "the attachment's line stayed at generation " << seen.generation;
  return seen;
}

TEST(DevPool, AttachGetsAPrimaryAndABackupOnAnotherHostInThePodFile) {
  DaemonProcess daemon(devpool_config());
  ASSERT_TRUE(daemon.start());
  Backend a, b;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a));
  ASSERT_TRUE(register_nic(daemon, "eth0", "h2", b));
  EXPECT_EQ(a.reply.lease_ms, 60000u);
  EXPECT_EQ(a.reply.telemetry_ms, 20u);
  EXPECT_EQ(a.reply.link_slots, 8u);
  struct stat st{};
  ASSERT_EQ(::fstat(a.pod.get(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), a.reply.pod_bytes);
  // The same name on the same host is taken.
  Backend dup;
  EXPECT_FALSE(register_nic(daemon, "eth0", "h1", dup));

  Frontend f;
  ASSERT_TRUE(attach(daemon, "h3", f));
  EXPECT_EQ(f.reply.device[f.reply.active], a.reply.device_id);
  EXPECT_EQ(f.reply.device[f.reply.active ^ 1], b.reply.device_id);
  auto line = f.line();
  ASSERT_TRUE(line) << line.error().message;
  EXPECT_EQ(line->state, devpool::LineState::kInUse);
  EXPECT_EQ(line->generation, f.reply.generation);
  EXPECT_EQ(line->active_device(), a.reply.device_id);
  // Both legs' slots hold formatted links.
  auto reader = Reader::open({f.pod.data(), f.pod.length()});
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->geometry().link_slots(), 8u);
  for (uint32_t slot : line->slot) {
    auto memory = reader->slot(slot);
    ASSERT_TRUE(memory);
    auto link = devpool::open_link(*memory);
    ASSERT_TRUE(link) << link.error().message;
    EXPECT_EQ(link->geometry.frontend_buffer_bytes, 64u << 10);
  }
  // The devices' lines are in the table too.
  auto dev = reader->device(a.reply.device_line);
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->device_id, a.reply.device_id);

  const auto list = run_ctl_json(daemon.socket(), {"devices"});
  ASSERT_EQ(list["devices"].size(), 2u);
  EXPECT_EQ(list["devices"][0]["host"], "h1");
  EXPECT_EQ(list["devices"][0]["primaries"], 1);
  EXPECT_EQ(list["devices"][1]["backups"], 1);
  ASSERT_EQ(list["attachments"].size(), 1u);
  EXPECT_EQ(list["attachments"][0]["primary"], a.reply.device_id);
  EXPECT_EQ(list["attachments"][0]["backup"], b.reply.device_id);

  // Detach frees the line.
  ASSERT_TRUE(f.conn->call_for<proto::Ok>(proto::DevDetach{f.reply.attachment_id}));
  EXPECT_EQ(f.line()->state, devpool::LineState::kFree);
  EXPECT_EQ(f.conn->call_for<proto::Ok>(proto::DevDetach{f.reply.attachment_id}).error().code, ENOENT);
}

TEST(DevPool, ClosedBackendFailsOverAndAdminFailoverMovesBack) {
  DaemonProcess daemon(devpool_config());
  ASSERT_TRUE(daemon.start());
  Backend a, b;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a));
  ASSERT_TRUE(register_nic(daemon, "eth0", "h2", b));
  Frontend f;
  ASSERT_TRUE(attach(daemon, "h3", f));
  const uint32_t first = f.line()->generation;

  a.conn->close();  // the backend dies: its device is gone at once
  auto line = line_after(f, first);
  EXPECT_EQ(line.active_device(), b.reply.device_id);
  EXPECT_EQ(line.device[line.active ^ 1], proto::kNoDeviceId);  // no third device for a backup
  auto admin = connect_admin(daemon.socket());
  EXPECT_EQ(stat(*admin, "devpool.failovers_total"), 1u);
  EXPECT_EQ(stat(*admin, "devpool.session_losses"), 1u);
  EXPECT_EQ(stat(*admin, "devpool.devices"), 1u);

  // The backend comes back (a new connection): it becomes the backup.
  Backend a2;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a2));
  line = line_after(f, line.generation);
  EXPECT_EQ(line.active_device(), b.reply.device_id);
  EXPECT_EQ(line.device[line.active ^ 1], a2.reply.device_id);
  ASSERT_TRUE(b.beat());
  ASSERT_TRUE(a2.beat());

  // An operator drains h2/eth0: traffic moves to the backup.
  auto moved = run_ctl_json(daemon.socket(), {"devices", "failover", "h2/eth0"});
  EXPECT_EQ(moved["moved"], 1);
  line = line_after(f, line.generation);
  EXPECT_EQ(line.active_device(), a2.reply.device_id);
  EXPECT_EQ(line.device[line.active ^ 1], b.reply.device_id);
  const auto list = run_ctl_json(daemon.socket(), {"devices"});
  EXPECT_EQ(list["failovers"], 2);  // the backend lost, then the admin's
  EXPECT_EQ(list["attachments"][0]["primary"], a2.reply.device_id);
  EXPECT_EQ(stat(*admin, "devpool.admin_failovers"), 1u);
  // Naming no device is an error with the usual exit code.
  EXPECT_EQ(run_ctl(daemon.socket(), {"devices", "failover", "nope"}).exit_code, 1);
}

TEST(DevPool, LeaseExpiryAndLinkDownFailOver) {
  DaemonProcess daemon(devpool_config(1000));
  ASSERT_TRUE(daemon.start());
  Backend a, b, c;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a));
  ASSERT_TRUE(register_nic(daemon, "eth0", "h2", b));
  ASSERT_TRUE(register_nic(daemon, "eth0", "h3", c));
  Frontend f;
  ASSERT_TRUE(attach(daemon, "h9", f));
  ASSERT_EQ(f.line()->active_device(), a.reply.device_id);
  const uint32_t first = f.line()->generation;

  // b and c keep beating; a hangs (its connection stays open).
  auto deadline = std::chrono::steady_clock::now() + 10s;
  devpool::AttachmentLine line = *f.line();
  while (std::chrono::steady_clock::now() < deadline && line.generation == first) {
    ASSERT_TRUE(b.beat(true, 125'000'000));
    ASSERT_TRUE(c.beat());
    std::this_thread::sleep_for(20ms);
    line = *f.line();
  }
  ASSERT_GT(line.generation, first) << "a hung backend's lease did not expire";
  EXPECT_NE(line.active_device(), a.reply.device_id);
  EXPECT_NE(line.device[line.active ^ 1], a.reply.device_id);

  // The primary's link goes down: the backup takes over.
  Backend& primary = line.active_device() == b.reply.device_id ? b : c;
  Backend& other = line.active_device() == b.reply.device_id ? c : b;
  auto down = primary.beat(false);
  ASSERT_TRUE(down);
  ASSERT_TRUE(other.beat());
  EXPECT_EQ(down->health, proto::DevHealth::kLinkDown);
  line = line_after(f, line.generation);
  EXPECT_EQ(line.active_device(), other.reply.device_id);

  auto admin = connect_admin(daemon.socket());
  EXPECT_EQ(stat(*admin, "devpool.lease_expiries"), 1u);
  EXPECT_EQ(stat(*admin, "devpool.link_downs"), 1u);
  EXPECT_EQ(stat(*admin, "devpool.failovers_total"), 2u);
  // Its next heartbeat tells the hung backend to register again.
  auto stale = a.beat();
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ESTALE);
  const auto list = run_ctl_json(daemon.socket(), {"devices"});
  EXPECT_EQ(list["devices"][0]["health"], "dead");
  EXPECT_GT(list["devices"][1]["load"].get<double>(), 0.05);  // b reported 1 Gbit/s of 10
  EXPECT_GT(list["devices"][1]["samples"].get<int>(), 0);
}

TEST(DevPool, LimitsAndRefusals) {
  DaemonProcess daemon(devpool_config());
  ASSERT_TRUE(daemon.start());
  Frontend f;
  EXPECT_FALSE(attach(daemon, "h1", f));  // no device yet: ENODEV
  auto conn = connect(daemon, "probe");
  auto none = conn->call(proto::DevAttach{.kind = proto::DevKind::kNet, .host = "h1"});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ENODEV);
  // Heartbeats for a device of another connection are refused.
  Backend a;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a));
  auto foreign = conn->call(proto::DevHeartbeat{a.reply.device_id, 1, 0, 0});
  ASSERT_FALSE(foreign);
  EXPECT_EQ(foreign.error().code, ENOENT);
  // max_devices = 4 lines in the table.
  Backend more[4];
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(register_nic(daemon, "eth" + std::to_string(i + 1), "h1", more[i]));
  auto full = conn->call(proto::DevRegister{.kind = proto::DevKind::kNet, .capacity = 1, .name = "x", .host = "h"});
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ENOSPC);
  // 8 link slots: 4 attachments.
  Frontend fs[5];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(attach(daemon, "h2", fs[i]));
  auto no_slot = conn->call(proto::DevAttach{.kind = proto::DevKind::kNet, .host = "h2"});
  ASSERT_FALSE(no_slot);
  EXPECT_EQ(no_slot.error().code, ENOSPC);
  // The failover of a device is for admins; this test runs as one, and an
  // unknown device is ENOENT.
  auto unknown = conn->call(proto::DevFailover{999});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ENOENT);
}

// The pod file opens every link of the pod to its holder: a user who is not
// an admin neither registers a device nor attaches, and is told why; listing
// stays open to everyone.
TEST(DevPool, OnlyAdminsJoinThePod) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as a second user (nobody) needs root";
  DaemonProcess daemon(devpool_config(60000, "", kOpenToAll));
  ASSERT_TRUE(daemon.start());
  Backend a;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a));
  const std::string socket = daemon.socket();
  const std::string failures = run_checks_in_child(
      [&](ChildChecks& check) {
        auto conn = Connection::open(socket, "nobody");
        CHILD_EXPECT(check, conn.has_value());
        if (!conn) return;
        auto reg = (*conn)->call(proto::DevRegister{.kind = proto::DevKind::kNet, .capacity = 1, .name = "e", .host = "h"});
        CHILD_EXPECT(check, !reg && reg.error().code == EPERM && reg.error().message.find("admin") != std::string::npos);
        auto att = (*conn)->call(proto::DevAttach{.kind = proto::DevKind::kNet, .host = "h2"});
        CHILD_EXPECT(check, !att && att.error().code == EPERM);
        auto list = (*conn)->call(proto::DevListRequest{});
        CHILD_EXPECT(check, list.has_value());
      },
      RunAs{});
  EXPECT_EQ(failures, "");
}

// A clean stop removes the pod file's name (its formatted slots would stay
// in tmpfs); an engine still mapping it keeps its mapping.
TEST(DevPool, CleanStopRemovesThePodFile) {
  DaemonProcess daemon(devpool_config());
  ASSERT_TRUE(daemon.start());
  const std::string pod = daemon.dir() + "/devpool.pod";
  Frontend f;
  Backend a, b;
  ASSERT_TRUE(register_nic(daemon, "eth0", "h1", a));
  ASSERT_TRUE(register_nic(daemon, "eth0", "h3", b));
  ASSERT_TRUE(attach(daemon, "h2", f));
  struct stat st{};
  ASSERT_EQ(::stat(pod.c_str(), &st), 0) << pod;
  EXPECT_EQ(daemon.stop(), 0);
  EXPECT_NE(::stat(pod.c_str(), &st), 0) << pod << " outlived the daemon";
  // The frontend's mapping still reads, and shows what the daemon wrote as
  // its connections closed on the way out.
  auto line = f.line();
  ASSERT_TRUE(line) << line.error().message;
  EXPECT_GE(line->generation, f.reply.generation);
}

TEST(DevPool, OffMeansNotSupported) {
  DaemonProcess daemon(devpool_config(60000, "enabled = false\n"));
  ASSERT_TRUE(daemon.start());
  auto conn = connect(daemon, "probe");
  auto refused = conn->call(proto::DevRegister{.kind = proto::DevKind::kNet, .capacity = 1, .name = "e", .host = "h"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ENOTSUP);
  const auto list = run_ctl_json(daemon.socket(), {"devices"});
  EXPECT_FALSE(list["enabled"].get<bool>());
  EXPECT_EQ(stat(*conn, "devpool.enabled"), 0u);
}

}  // namespace
}  // namespace cxlpool::integration
