// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl pod status` output: JSON fields (lists split back out of
// their comma-separated wire form) and the text summary and table.
#include <gtest/gtest.h>

#include "pod_format.hpp"

namespace cxlpool::ctl {
namespace {

proto::PodStatusReply sample() {
  proto::PodStatusReply r;
  r.backend = proto::PodBackend::kEtcd;
  r.connected = 0;
  r.lease_ttl_s = 2;
  r.lease_id = 0x2a;
  r.joins = 3;
  r.departures = 1;
  r.etcd_errors = 5;
  r.pod = "rack-7";
  r.host = "a";
  r.endpoints = "http://e1:2379,http://e2:2379";
  r.last_error = "etcd /v3/kv/range: no reply";
  r.members = {proto::PodMemberEntry{.lease_id = 0x2a, .exported_bytes = 1ull << 30, .revision = 4, .self = 1,
                                     .host = "a", .provider = "tcp;ofi_rxm", .address = "10.0.0.1:7100",
                                     .tiers = "dram:dram:1073741824", .devices = ""},
               proto::PodMemberEntry{.lease_id = 0x2b, .exported_bytes = 2ull << 30, .revision = 6, .self = 0,
                                     .host = "b", .provider = "shm", .address = "",
                                     .tiers = "dram:dram:1073741824,emu:emulated:1073741824",
                                     .devices = "b/eth1,b/nvme0n1"}};
  return r;
}

TEST(PodFormat, JsonSplitsLists) {
  const auto j = pod_status_json(sample());
  EXPECT_EQ(j["backend"], "etcd");
  EXPECT_FALSE(j["connected"].get<bool>());
  EXPECT_EQ(j["endpoints"].size(), 2u);
  EXPECT_EQ(j["departures"], 1);
  ASSERT_EQ(j["members"].size(), 2u);
  EXPECT_TRUE(j["members"][0]["self"].get<bool>());
  EXPECT_TRUE(j["members"][0]["devices"].empty());
  EXPECT_EQ(j["members"][1]["tiers"].size(), 2u);
  EXPECT_EQ(j["members"][1]["devices"][1], "b/nvme0n1");
  EXPECT_EQ(j["members"][1]["exported_bytes"], 2ull << 30);
}

TEST(PodFormat, TextSaysWhenCutOffFromEtcd) {
  const std::string text = pod_status_text(sample());
  EXPECT_NE(text.find("NOT CONNECTED"), std::string::npos) << text;
  EXPECT_NE(text.find("last etcd error: etcd /v3/kv/range"), std::string::npos) << text;
  EXPECT_NE(text.find("a *"), std::string::npos) << text;
  EXPECT_NE(text.find("shm"), std::string::npos) << text;
  auto embedded = sample();
  embedded.backend = proto::PodBackend::kEmbedded;
  EXPECT_NE(pod_status_text(embedded).find("embedded (single host)"), std::string::npos);
}

TEST(PodFormat, TransferEngineRailsAndPeers) {
  auto r = sample();
  r.fabric = "ofi tcp;ofi_rxm";
  r.transfer_requests = 12;
  r.kv_remote_hits = 8;
  r.kv_remote_bytes = 8ull << 20;
  r.kv_pins_served = 3;
  r.kv_replications_sent = 2;
  r.kv_replicated_chunks = 5;
  r.kv_replication_dropped = 7;
  r.rails = {proto::PodRailEntry{.bytes_read = 8ull << 20, .chunks = 16, .up = 1, .provider = "tcp;ofi_rxm",
                                 .address = "10.0.0.1"},
             proto::PodRailEntry{.failures = 2, .resets = 1, .up = 0, .provider = "tcp;ofi_rxm", .address = "10.0.1.1"}};
  r.peers = {proto::PodPeerEntry{.fetched_chunks = 8, .fetched_bytes = 8ull << 20, .fetch_errors = 1, .host = "b"}};
  const auto j = pod_status_json(r);
  EXPECT_EQ(j["fabric"]["transport"], "ofi tcp;ofi_rxm");
  ASSERT_EQ(j["fabric"]["rails"].size(), 2u);
  EXPECT_TRUE(j["fabric"]["rails"][0]["up"].get<bool>());
  EXPECT_FALSE(j["fabric"]["rails"][1]["up"].get<bool>());
  EXPECT_EQ(j["fabric"]["rails"][1]["resets"], 1);
  EXPECT_EQ(j["fabric"]["peers"][0]["host"], "b");
  EXPECT_EQ(j["fabric"]["peers"][0]["fetched_chunks"], 8);
  EXPECT_EQ(j["kv"]["remote_hits"], 8);
  EXPECT_EQ(j["kv"]["pins_served"], 3);
  EXPECT_EQ(j["kv"]["replications_sent"], 2);
  EXPECT_EQ(j["kv"]["replicated_chunks"], 5);
  EXPECT_EQ(j["kv"]["replication_errors"], 0);
  EXPECT_EQ(j["kv"]["replication_dropped"], 7);
  const std::string text = pod_status_text(r);
  EXPECT_NE(text.find("transfer engine: ofi tcp;ofi_rxm, 12 requests"), std::string::npos) << text;
  EXPECT_NE(text.find("DOWN"), std::string::npos) << text;
  EXPECT_NE(text.find("8 chunks fetched (8.0 MiB)"), std::string::npos) << text;
  EXPECT_NE(text.find("KV replicas: 2 requests accepted by peers, 5 chunks copied here, 0 errors, 7 copies dropped"),
            std::string::npos)
      << text;

  auto closed = sample();
  closed.fabric_error = "fi_getinfo: No data available";
  EXPECT_NE(pod_status_text(closed).find("transfer engine: NOT OPEN: fi_getinfo"), std::string::npos);
  EXPECT_EQ(pod_status_json(closed)["fabric"]["error"], "fi_getinfo: No data available");
}

}  // namespace
}  // namespace cxlpool::ctl
