// SPDX-License-Identifier: Apache-2.0
// The network engine through the pod allocator, and its failover:
//
//   peer (10.67.0.1) ── bridge in "lan" ──┬── hostA NIC: backend, registered with the pod
//                                         └── hostC NIC: backend, registered with the pod
//   hostB: frontend only (TAP, 10.67.0.2), attached through cxlpoold:
//          primary on hostA's NIC, backup on hostC's
//
// One cxlpoold (devpool enabled) in the root namespace; the engines reach it
// by its socket's path from their namespaces. UDP and TCP cross the
// assigned NIC byte for byte; when the primary backend is killed (kill -9)
// or its NIC goes down, the frontend moves to the backup leg, announces its
// MAC through it (gratuitous ARP: the bridge learns the new port) and
// traffic resumes: a 10k datagrams/s echo stream keeps flowing, a TCP
// transfer completes with every byte right. `cxlpoolctl devices --json`
// shows the assignment and health. Needs root; skips otherwise.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "net_lab.hpp"
#include "support/wait_until.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kPeerIp = "10.67.0.1";
constexpr const char* kHostBIp = "10.67.0.2";

bool connect_to(int fd, const char* ip, uint16_t port) {
  const sockaddr_in a = address(ip, port);
  return ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
}

// A UDP echo on hostB until stopped.
class Echo {
 public:
  explicit Echo(UniqueFd fd) : fd_(std::move(fd)) {
    thread_ = std::thread([this] {
      std::vector<char> buf(65536);
      while (!stop_) {
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 50) != 1) continue;
        sockaddr_in from{};
        socklen_t len = sizeof(from);
        const ssize_t n = ::recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
        if (n >= 0) ::sendto(fd_.get(), buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
    });
  }
  ~Echo() {
    stop_ = true;
    thread_.join();
  }

 private:
  UniqueFd fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class DevPoolNet : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = net_lab_unavailable(); !why.empty()) GTEST_SKIP() << why;
    const char* engine = std::getenv("CXLPOOL_DEVPOOL");
    ASSERT_NE(engine, nullptr) << "CXLPOOL_DEVPOOL must name the cxlpool-devpool program";
    TestConfig config;
    // The defaults: a heartbeat every 100 ms, a lease of 1 s (a killed
    // backend is noticed at once anyway: its connection closes).
    config.tables = "[devpool]\nlease_ms = 1000\ntelemetry_ms = 100\n";
    daemon_ = std::make_unique<DaemonProcess>(config.render());
    ASSERT_TRUE(daemon_->start());
    lab_ = std::make_unique<NetLab>(engine);
    host_a_ = lab_->add_host("A");
    host_b_ = lab_->add_host("B");
    host_c_ = lab_->add_host("C");
    lan_ = lab_->add_host("L");
    peer_ = lab_->add_host("P");
    ASSERT_FALSE(host_a_.empty() || host_b_.empty() || host_c_.empty() || lan_.empty() || peer_.empty());
    ASSERT_TRUE(lab_->add_bridge(lan_));
    nic_a_ = lab_->plug(host_a_, lan_);
    nic_c_ = lab_->plug(host_c_, lan_);
    const std::string peer_nic = lab_->plug(peer_, lan_);
    ASSERT_FALSE(nic_a_.empty() || nic_c_.empty() || peer_nic.empty()) << "cannot build the LAN";
    ASSERT_TRUE(lab_->ip({"-n", peer_, "addr", "add", std::string(kPeerIp) + "/24", "dev", peer_nic}));
    pid_a_ = start_backend(host_a_, "hostA", nic_a_);
    pid_c_ = start_backend(host_c_, "hostC", nic_c_);
    std::string error;
    ASSERT_TRUE(lab_->start_engine({"frontend", "--netns", host_b_, "--socket", daemon_->socket(), "--host", "hostB",
                                    "--tap", "tpB", "--mac", "02:00:00:67:00:02", "--prefer", nic_a_, "--prefer-host",
                                    "hostA"},
                                   &error))
        << error;
    ASSERT_TRUE(lab_->ip({"-n", host_b_, "addr", "add", std::string(kHostBIp) + "/24", "dev", "tpB"}, &error)) << error;
  }

  pid_t start_backend(const std::string& ns, const std::string& host, const std::string& nic) {
    std::string error;
    EXPECT_TRUE(lab_->start_engine({"backend", "--netns", ns, "--socket", daemon_->socket(), "--host", host, "--nic",
                                    nic, "--netport", "packet"},
                                   &error))
        << error;
    return lab_->last_engine();
  }

  nlohmann::json devices() { return run_ctl_json(daemon_->socket(), {"devices"}); }

  // The one attachment's primary device's host ("" when none).
  std::string primary_host() {
    const auto list = devices();
    if (list["attachments"].size() != 1) return "";
    const auto primary = list["attachments"][0]["primary"];
    for (const auto& d : list["devices"]) {
      if (d["id"] == primary) return d["host"];
    }
    return "";
  }

  // A datagram from the peer to hostB's echo comes back intact.
  testing::AssertionResult echoes(int client, size_t size, uint64_t seed, int tries = 20) {
    const auto payload = pattern(size, seed);
    std::vector<uint8_t> in(65536);
    for (int i = 0; i < tries; ++i) {
      if (::send(client, payload.data(), payload.size(), 0) != static_cast<ssize_t>(payload.size())) continue;
      pollfd p{client, POLLIN, 0};
      if (::poll(&p, 1, 500) != 1) continue;
      const ssize_t n = ::recv(client, in.data(), in.size(), 0);
      if (n == static_cast<ssize_t>(size) && std::memcmp(in.data(), payload.data(), size) == 0) {
        return testing::AssertionSuccess();
      }
    }
    return testing::AssertionFailure() << "no intact echo of a " << size << "-byte datagram";
  }

  UniqueFd peer_client(uint16_t port) {
    UniqueFd fd = lab_->socket_in(peer_, AF_INET, SOCK_DGRAM);
    EXPECT_TRUE(fd);
    set_timeout(fd.get(), 5);
    EXPECT_TRUE(connect_to(fd.get(), kHostBIp, port));
    return fd;
  }
  std::unique_ptr<Echo> start_echo(uint16_t port) {
    UniqueFd fd = lab_->socket_in(host_b_, AF_INET, SOCK_DGRAM);
    EXPECT_TRUE(fd);
    set_timeout(fd.get(), 5);
    EXPECT_TRUE(bind_to(fd.get(), kHostBIp, port));
    return std::make_unique<Echo>(std::move(fd));
  }

  // TCP from hostB to the peer: `bytes` of a pattern, sent while `during`
  // runs halfway through; the peer must get every byte right.
  void tcp_transfer(size_t bytes, const std::function<void()>& during) {
    UniqueFd listener = lab_->socket_in(peer_, AF_INET, SOCK_STREAM);
    ASSERT_TRUE(listener);
    ASSERT_TRUE(bind_to(listener.get(), kPeerIp, 5201));
    ASSERT_EQ(::listen(listener.get(), 1), 0);
    const auto data = pattern(bytes, 7);
    std::vector<uint8_t> got;
    std::thread receiver([&] {
      UniqueFd conn(::accept(listener.get(), nullptr, nullptr));
      if (!conn) return;
      set_timeout(conn.get(), 20);
      std::vector<uint8_t> buf(1 << 16);
      for (;;) {
        const ssize_t n = ::recv(conn.get(), buf.data(), buf.size(), 0);
        if (n <= 0) break;
        got.insert(got.end(), buf.begin(), buf.begin() + n);
      }
    });
    UniqueFd client = lab_->socket_in(host_b_, AF_INET, SOCK_STREAM);
    ASSERT_TRUE(client);
    set_timeout(client.get(), 20);
    ASSERT_TRUE(connect_to(client.get(), kPeerIp, 5201)) << std::strerror(errno);
    size_t sent = 0;
    bool done_event = false;
    while (sent < bytes) {
      // Small writes, so that the transfer is still going when the event comes.
      const size_t chunk = std::min<size_t>(64 << 10, bytes - sent);
      const ssize_t n = ::send(client.get(), data.data() + sent, chunk, MSG_NOSIGNAL);
      ASSERT_GT(n, 0) << "send after " << sent << " bytes: " << std::strerror(errno);
      sent += static_cast<size_t>(n);
      if (!done_event && sent >= bytes / 2) {
        done_event = true;
        during();
      }
    }
    ::shutdown(client.get(), SHUT_WR);
    receiver.join();
    ASSERT_EQ(got.size(), bytes);
    EXPECT_TRUE(got == data) << "the bytes received differ from those sent";
  }

  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<NetLab> lab_;
  std::string host_a_, host_b_, host_c_, lan_, peer_;
  std::string nic_a_, nic_c_;
  pid_t pid_a_ = -1, pid_c_ = -1;
};

TEST_F(DevPoolNet, UdpAndTcpCrossThePodAssignedNicAndTheAssignmentIsListed) {
  const auto list = devices();
  ASSERT_EQ(list["devices"].size(), 2u);
  ASSERT_EQ(list["attachments"].size(), 1u);
  EXPECT_EQ(list["attachments"][0]["host"], "hostB");
  EXPECT_EQ(primary_host(), "hostA");
  for (const auto& d : list["devices"]) {
    EXPECT_EQ(d["health"], "healthy");
    EXPECT_EQ(d["name"], d["host"] == "hostA" ? nic_a_ : nic_c_);
    EXPECT_EQ(d["host"] == "hostA" ? d["primaries"] : d["backups"], 1);
  }
  auto echo = start_echo(9000);
  UniqueFd client = peer_client(9000);
  for (size_t size : {1, 64, 1472, 1473, 9000, 65507}) {
    EXPECT_TRUE(echoes(client.get(), size, size));
  }
  tcp_transfer(4 << 20, [] {});
  // The primary NIC carries the traffic: its load shows in the telemetry.
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    char out[1024] = {};
    while (!stop) {
      ::send(client.get(), out, sizeof(out), 0);
      std::this_thread::sleep_for(100us);
    }
  });
  EXPECT_TRUE(test::wait_until(
      [&] {
        const auto list = devices();
        for (const auto& d : list["devices"]) {
          if (d["host"] == "hostA" && d["bytes_per_s"].get<uint64_t>() > 0) return true;
        }
        return false;
      },
      3000ms))
      << devices().dump();
  stop = true;
  flood.join();
}

TEST_F(DevPoolNet, AUdpStreamResumesThroughTheBackupWhenThePrimaryBackendIsKilled) {
  auto echo = start_echo(9001);
  UniqueFd client = peer_client(9001);
  ASSERT_TRUE(echoes(client.get(), 64, 1));
  // 10k datagrams/s for 2 s; the primary's backend dies after 1 s.
  constexpr int kRate = 10000;
  constexpr int kCount = 2 * kRate;
  std::atomic<int> received{0};
  std::atomic<int64_t> last_ns{0};
  std::atomic<bool> stop{false};
  std::thread receiver([&] {
    char buf[2048];
    while (!stop) {
      pollfd p{client.get(), POLLIN, 0};
      if (::poll(&p, 1, 20) != 1) continue;
      while (::recv(client.get(), buf, sizeof(buf), MSG_DONTWAIT) > 0) {
        ++received;
        last_ns = Clock::now().time_since_epoch().count();
      }
    }
  });
  const auto start = Clock::now();
  Clock::time_point killed{};
  char out[64] = {};
  for (int i = 0; i < kCount; ++i) {
    std::this_thread::sleep_until(start + std::chrono::microseconds(i * 1'000'000LL / kRate));
    std::memcpy(out, &i, sizeof(i));
    ::send(client.get(), out, sizeof(out), 0);
    if (i == kCount / 2) {
      lab_->kill_engine(pid_a_);
      killed = Clock::now();
    }
  }
  std::this_thread::sleep_for(300ms);
  stop = true;
  receiver.join();
  // Echoes kept coming after the kill, and little was lost.
  EXPECT_GT(Clock::time_point(Clock::duration(last_ns.load())), killed + 500ms);
  EXPECT_GT(received.load(), kCount * 9 / 10) << "of " << kCount;
  EXPECT_EQ(primary_host(), "hostC");
  const auto list = devices();
  ASSERT_EQ(list["devices"].size(), 1u);  // hostA's device went with its backend's connection
  EXPECT_EQ(list["failovers"], 1);
  EXPECT_TRUE(echoes(client.get(), 1472, 2));
}

TEST_F(DevPoolNet, ATcpTransferContinuesIntactAfterThePrimaryBackendIsKilled) {
  tcp_transfer(16 << 20, [&] { lab_->kill_engine(pid_a_); });
  EXPECT_EQ(primary_host(), "hostC");
}

TEST_F(DevPoolNet, TheNicGoingDownFailsOverToTheBackup) {
  auto echo = start_echo(9002);
  UniqueFd client = peer_client(9002);
  ASSERT_TRUE(echoes(client.get(), 64, 3));
  ASSERT_TRUE(lab_->ip({"-n", host_a_, "link", "set", nic_a_, "down"}));
  ASSERT_TRUE(test::wait_until([&] { return primary_host() == "hostC"; }, 5000ms)) << devices().dump();
  EXPECT_TRUE(echoes(client.get(), 1472, 4));
  EXPECT_TRUE(echoes(client.get(), 9000, 5));
  const auto list = devices();
  for (const auto& d : list["devices"]) {
    EXPECT_EQ(d["health"], d["host"] == "hostA" ? "link-down" : "healthy");
  }
  // Traffic does not move back by itself when the link comes up again, but
  // hostA's NIC stands by once more.
  ASSERT_TRUE(lab_->ip({"-n", host_a_, "link", "set", nic_a_, "up"}));
  ASSERT_TRUE(test::wait_until(
      [&] {
        const auto l = devices();
        return l["attachments"].size() == 1 && l["attachments"][0]["backup"] != 0 &&
               l["attachments"][0]["backup"] != nullptr;
      },
      5000ms))
      << devices().dump();
  EXPECT_EQ(primary_host(), "hostC");
  EXPECT_TRUE(echoes(client.get(), 64, 6));
}

}  // namespace
}  // namespace cxlpool::integration
