// SPDX-License-Identifier: Apache-2.0
// The Prometheus endpoint, scraped over plain TCP the way a scraper would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cxlpool/common/unique_fd.hpp"
#include "ctl_runner.hpp"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "support/environment.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// A port nothing listens on right now: bind port 0, read it back, release it.
uint16_t free_port() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof addr;
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot find a free port: " << std::strerror(errno);
    return 0;
  }
  return ntohs(addr.sin_port);
}

// The whole HTTP response, "" when the connection fails.
std::string http_get(uint16_t port, const std::string& path) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr = loopback(port);
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return "";
  timeval timeout{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    return "";
  }
  std::string response;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  return response;
}

bool has_sample(const std::string& text, const std::string& sample) {
  return text.find("\n" + sample + "\n") != std::string::npos;
}

TEST(Metrics, PrometheusEndpointServesLiveCounters) {
  const uint16_t port = free_port();
  ASSERT_NE(port, 0);
  TestConfig config;
  // Two tiers whose names differ only in '-' versus '_' must stay two series.
  config.tables = "[metrics]\nprometheus_port = " + std::to_string(port) +
                  "\n\n[[emulated_tier]]\nname = \"slow-a\"\ncapacity = \"16M\"\n"
                  "\n[[emulated_tier]]\nname = \"slow_a\"\ncapacity = \"32M\"\n";
  DaemonProcess daemon(config.render());
  ASSERT_TRUE(daemon.start());

  const std::string first = http_get(port, "/metrics");
  ASSERT_EQ(first.rfind("HTTP/1.1 200", 0), 0u) << first.substr(0, 200);
  EXPECT_NE(first.find("Content-Type: text/plain"), std::string::npos);
  EXPECT_TRUE(has_sample(first, "cxlpool_tier_used_bytes{tier=\"dram0\"} 0")) << first;
  EXPECT_TRUE(has_sample(first, "cxlpool_pool_regions_created_total 0")) << first;
  EXPECT_TRUE(has_sample(first, "cxlpool_tier_capacity_bytes{tier=\"emu\"} 268435456")) << first;
  EXPECT_TRUE(has_sample(first, "cxlpool_tier_capacity_bytes{tier=\"slow-a\"} 16777216")) << first;
  EXPECT_TRUE(has_sample(first, "cxlpool_tier_capacity_bytes{tier=\"slow_a\"} 33554432")) << first;
  EXPECT_NE(first.find("# TYPE cxlpool_tier_used_bytes gauge"), std::string::npos);

  Client client(daemon.socket(), "metered");
  cxlpool_tier_info emu{};
  ASSERT_EQ(cxlpool_tier_by_name(client.get(), kEmuTier, &emu), 0);
  cxlpool::Region region = client.alloc(emu.id, 4 * kMiB);
  const auto allocated = std::chrono::steady_clock::now();
  std::string latest;
  const bool seen = wait_until(
      [&] {
        latest = http_get(port, "/metrics");
        return has_sample(latest, "cxlpool_tier_used_bytes{tier=\"emu\"} 4194304") &&
               has_sample(latest, "cxlpool_pool_regions_created_total 1");
      },
      3s, 50ms);
  const auto elapsed = std::chrono::steady_clock::now() - allocated;
  EXPECT_TRUE(seen) << latest;
  EXPECT_LT(elapsed, 2s);

  const std::string missing = http_get(port, "/nothing-here");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404", 0), 0u) << missing.substr(0, 200);
}

// The response's body: what follows the blank line after the headers.
std::string body_of(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

// "name type" for each "# TYPE name type" line.
std::set<std::string> families_of(const std::string& text) {
  std::set<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) out.insert(line.substr(7));
  }
  return out;
}

// A daemon with every optional part that has metrics (KV store with an SSD
// tier, devpool, weights, tiering), its KV store started and a control
// request made, scraped once.
class MetricsScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = free_port();
    ASSERT_NE(port_, 0);
    TestConfig config;
    config.tables = "[metrics]\nprometheus_port = " + std::to_string(port_) + "\n";
    daemon_ = std::make_unique<DaemonProcess>(config.render());
    daemon_->write_config(config.render() + "\n[kvstore]\nssd_path = \"" + daemon_->dir() +
                          "/kv.ssd\"\nssd_bytes = \"64M\"\n");
    ASSERT_TRUE(daemon_->start());
    const auto kv = run_ctl(daemon_->socket(), {"kv", "status"});
    ASSERT_EQ(kv.exit_code, 0) << kv.err;
    ASSERT_TRUE(wait_until(
        [&] {
          text_ = body_of(http_get(port_, "/metrics"));
          return text_.find("cxlpool_kv_tier_capacity_bytes{kv_tier=\"ssd\"}") != std::string::npos &&
                 text_.find("cxlpool_control_request_duration_seconds_count{type=\"KvStatusRequest\"}") !=
                     std::string::npos;
        },
        3s, 50ms))
        << text_;
  }

  uint16_t port_ = 0;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string text_;
};

TEST_F(MetricsScrape, FamiliesMatchTheGoldenList) {
  const std::string golden_path = test::env_value("CXLPOOL_METRICS_GOLDEN");
  ASSERT_FALSE(golden_path.empty()) << "CXLPOOL_METRICS_GOLDEN is not set (run through meson test)";
  std::set<std::string> golden;
  std::istringstream lines(test::read_file(golden_path));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] != '#') golden.insert(line);
  }
  ASSERT_FALSE(golden.empty());
  const std::set<std::string> served = families_of(text_);
  std::string missing;
  std::string extra;
  for (const auto& f : golden) {
    if (!served.contains(f)) missing += "  " + f + "\n";
  }
  for (const auto& f : served) {
    if (!golden.contains(f)) extra += "  " + f + "\n";
  }
  EXPECT_EQ(missing, "") << "in " << golden_path << " but not served";
  EXPECT_EQ(extra, "") << "served but not in " << golden_path
                       << " (a new counter: add it to daemon/metrics/metric_table.cpp, docs/metrics.md and the list)";
  EXPECT_EQ(text_.find(" untyped\n"), std::string::npos) << "a counter the metrics table lacks";
}

TEST_F(MetricsScrape, PromtoolAcceptsTheEndpoint) {
  const auto which = run_program({"/bin/sh", "-c", "command -v promtool"});
  if (which.exit_code != 0) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  const std::string file = daemon_->dir() + "/metrics.txt";
  std::ofstream(file) << text_;
  const auto checked = run_program({"/bin/sh", "-c", "promtool check metrics < '" + file + "'"});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  EXPECT_EQ(checked.out + checked.err, "") << "promtool reports lint problems";
}

}  // namespace
}  // namespace cxlpool::integration
