// SPDX-License-Identifier: Apache-2.0
#include "pool_queries.hpp"

#include <dirent.h>

#include <gtest/gtest.h>

namespace cxlpool::integration {

std::unique_ptr<Connection> connect_admin(const std::string& socket_path, const std::string& name) {
  auto conn = Connection::open(socket_path, name);
  if (!conn) {
    ADD_FAILURE() << "connect " << socket_path << ": " << conn.error().message;
    return nullptr;
  }
  return std::move(*conn);
}

std::vector<proto::TierInfo> list_tiers(Connection& conn) {
  return call_or_fail<proto::TiersReply>(conn, proto::TiersRequest{}, "Tiers").tiers;
}

proto::TierInfo tier_named(Connection& conn, const std::string& name) {
  for (const auto& t : list_tiers(conn)) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "the daemon has no tier '" << name << "'";
  return {};
}

uint64_t tier_used(Connection& conn, const std::string& name) { return tier_named(conn, name).used; }

std::vector<proto::RegionEntry> list_regions(Connection& conn) {
  return call_or_fail<proto::RegionsReply>(conn, proto::RegionsRequest{}, "Regions").regions;
}

std::map<std::string, uint64_t> stats(Connection& conn) {
  std::map<std::string, uint64_t> out;
  for (const auto& c : call_or_fail<proto::StatsReply>(conn, proto::StatsRequest{}, "Stats").counters) {
    out[c.name] = c.value;
  }
  return out;
}

uint64_t stat(Connection& conn, const std::string& name) {
  const auto all = stats(conn);
  auto it = all.find(name);
  if (it == all.end()) {
    ADD_FAILURE() << "the daemon has no counter '" << name << "'";
    return 0;
  }
  return it->second;
}

int open_fd_count(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

}  // namespace cxlpool::integration
