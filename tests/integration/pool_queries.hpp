// SPDX-License-Identifier: Apache-2.0
// What the tests ask a running daemon, through the internal client
// connection (the one cxlpoolctl uses): tiers, regions, counters, and the
// daemon's open descriptors. Failures are reported as test failures.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/proto/messages.hpp"
#include "support/wait_until.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {

using client::Connection;

std::unique_ptr<Connection> connect_admin(const std::string& socket_path, const std::string& name = "integration");

// The daemon's reply to `request`; a failure naming `what`, and a default
// reply, when the call fails.
template <typename Reply, typename Request>
Reply call_or_fail(Connection& conn, const Request& request, const char* what) {
  auto reply = conn.call_for<Reply>(request);
  if (!reply) {
    ADD_FAILURE() << what << ": " << reply.error().message;
    return {};
  }
  return std::move(*reply);
}

std::vector<proto::TierInfo> list_tiers(Connection& conn);
// The tier with that name; a failure (and a default TierInfo) if none.
proto::TierInfo tier_named(Connection& conn, const std::string& name);
uint64_t tier_used(Connection& conn, const std::string& name);
std::vector<proto::RegionEntry> list_regions(Connection& conn);
std::map<std::string, uint64_t> stats(Connection& conn);
// One counter; a failure (and 0) if the daemon has no such counter.
uint64_t stat(Connection& conn, const std::string& name);

// Entries of /proc/PID/fd; -1 if unreadable.
int open_fd_count(pid_t pid);

using test::wait_until;

}  // namespace cxlpool::integration
