// SPDX-License-Identifier: Apache-2.0
// The Prometheus endpoint, scraped over plain TCP the way a scraper would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"

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
  EXPECT_TRUE(has_sample(first, "cxlpool_pool_regions_created 0")) << first;
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
               has_sample(latest, "cxlpool_pool_regions_created 1");
      },
      3s, 50ms);
  const auto elapsed = std::chrono::steady_clock::now() - allocated;
  EXPECT_TRUE(seen) << latest;
  EXPECT_LT(elapsed, 2s);

  const std::string missing = http_get(port, "/nothing-here");
  EXPECT_EQ(missing.rfind("HTTP/1.1 404", 0), 0u) << missing.substr(0, 200);
}

}  // namespace
}  // namespace cxlpool::integration
