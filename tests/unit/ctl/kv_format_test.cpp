// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl kv` output: the JSON fields scripts rely on and the text
// tables operators read, from replies built by hand.
#include "kv_format.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cxlpool::ctl {
namespace {

using nlohmann::json;

proto::KvTierStatus tier(uint8_t t, uint64_t hits, uint64_t misses) {
  return proto::KvTierStatus{.tier = t,
                             .present = 1,
                             .capacity_bytes = 8ull << 20,
                             .used_bytes = 6ull << 20,
                             .chunks = 3,
                             .hits = hits,
                             .misses = misses,
                             .evictions = 4,
                             .promotions = 5,
                             .demotions = 6,
                             .admissions_rejected = t == 2 ? 7u : 0u,
                             .bytes_written = 3ull << 20,
                             .bytes_read = t == 2 ? 1ull << 20 : 0,
                             .errors = t == 2 ? 1u : 0u,
                             .name = t == 2 ? "/var/lib/cxlpool/kv.img" : "dram0"};
}

proto::KvStatusReply status() {
  // The SSD tier before the DRAM one, and no CXL tier: the output orders and fills.
  return proto::KvStatusReply{.enabled = 1,
                              .eviction = 1,
                              .ssd_sync = 1,
                              .admission_threshold = 2,
                              .slot_bytes = 2ull << 20,
                              .chunks = 6,
                              .index_capacity = 1024,
                              .lookups = 10,
                              .lookup_keys = 40,
                              .lookup_hits = 30,
                              .gets = 9,
                              .puts = 6,
                              .put_aborts = 1,
                              .prefetches = 2,
                              .deletes = 3,
                              .leases = 1,
                              .leased_bytes = 2ull << 20,
                              .reservations = 0,
                              .quota_rejections = 4,
                              .ssd_durable_sequence = 77,
                              .detail = "ssd: io_uring",
                              .tiers = {tier(2, 1, 3), tier(0, 3, 1)}};
}

TEST(CtlKvFormat, HitRate) {
  EXPECT_DOUBLE_EQ(kv_hit_rate(3, 1), 0.75);
  EXPECT_DOUBLE_EQ(kv_hit_rate(0, 5), 0.0);
  EXPECT_LT(kv_hit_rate(0, 0), 0.0);
}

TEST(CtlKvFormat, TierNames) {
  EXPECT_EQ(kv_tier_name(0), "dram");
  EXPECT_EQ(kv_tier_name(1), "cxl");
  EXPECT_EQ(kv_tier_name(2), "ssd");
  EXPECT_EQ(kv_tier_name(9), "tier 9");
}

TEST(CtlKvFormat, StatusJsonHasEveryTierInOrder) {
  const json j = kv_status_json(status());
  EXPECT_EQ(j.at("enabled"), true);
  EXPECT_EQ(j.at("eviction"), "s3fifo");
  EXPECT_EQ(j.at("ssd_sync"), "per-commit");
  EXPECT_EQ(j.at("slot_bytes"), 2u << 20);
  EXPECT_EQ(j.at("chunks"), 6u);
  EXPECT_EQ(j.at("quota_rejections"), 4u);
  EXPECT_EQ(j.at("ssd_durable_sequence"), 77u);
  EXPECT_DOUBLE_EQ(j.at("lookup_hit_rate").get<double>(), 0.75);
  const json& tiers = j.at("tiers");
  ASSERT_EQ(tiers.size(), 3u);
  EXPECT_EQ(tiers[0].at("tier"), "dram");
  EXPECT_EQ(tiers[0].at("present"), true);
  EXPECT_EQ(tiers[0].at("capacity"), 8u << 20);
  EXPECT_EQ(tiers[0].at("used"), 6u << 20);
  EXPECT_EQ(tiers[0].at("chunks"), 3u);
  EXPECT_DOUBLE_EQ(tiers[0].at("hit_rate").get<double>(), 0.75);
  EXPECT_EQ(tiers[0].at("evictions"), 4u);
  EXPECT_EQ(tiers[0].at("bytes_written"), 3u << 20);
  EXPECT_EQ(tiers[1].at("tier"), "cxl");
  EXPECT_EQ(tiers[1].at("present"), false);
  EXPECT_TRUE(tiers[1].at("hit_rate").is_null()) << "no requests: no rate";
  EXPECT_EQ(tiers[2].at("tier"), "ssd");
  EXPECT_EQ(tiers[2].at("name"), "/var/lib/cxlpool/kv.img");
  EXPECT_DOUBLE_EQ(tiers[2].at("hit_rate").get<double>(), 0.25);
  EXPECT_EQ(tiers[2].at("admissions_rejected"), 7u);
  EXPECT_EQ(tiers[2].at("bytes_read"), 1u << 20);
  EXPECT_EQ(tiers[2].at("errors"), 1u);
}

TEST(CtlKvFormat, StatusTextShowsTiersAndRates) {
  const std::string text = kv_status_text(status());
  EXPECT_NE(text.find("eviction s3fifo"), std::string::npos) << text;
  EXPECT_NE(text.find("SSD sync per-commit"), std::string::npos) << text;
  EXPECT_NE(text.find("75.0% hit"), std::string::npos) << text;
  EXPECT_NE(text.find("TIER"), std::string::npos) << text;
  EXPECT_NE(text.find("ADMISSIONS REJECTED"), std::string::npos) << text;
  // Rows in tier order, the absent one marked.
  const size_t dram = text.find("\ndram ");
  const size_t cxl = text.find("\ncxl ");
  const size_t ssd = text.find("\nssd ");
  ASSERT_NE(dram, std::string::npos) << text;
  ASSERT_NE(cxl, std::string::npos) << text;
  ASSERT_NE(ssd, std::string::npos) << text;
  EXPECT_LT(dram, cxl);
  EXPECT_LT(cxl, ssd);
  EXPECT_NE(text.find("(absent)", cxl), std::string::npos) << text;
  EXPECT_NE(text.find("25.0%", ssd), std::string::npos) << text;
  EXPECT_NE(text.find("/var/lib/cxlpool/kv.img"), std::string::npos) << text;
  EXPECT_NE(text.find("8.0 MiB"), std::string::npos) << text;
}

TEST(CtlKvFormat, DisabledStatusSaysWhy) {
  const proto::KvStatusReply off{.detail = "kvstore.enabled = false"};
  EXPECT_EQ(kv_status_text(off), "kv store:  disabled (kvstore.enabled = false)\n");
  const json j = kv_status_json(off);
  EXPECT_EQ(j.at("enabled"), false);
  EXPECT_EQ(j.at("detail"), "kvstore.enabled = false");
  EXPECT_EQ(j.at("tiers").size(), 3u);
  EXPECT_TRUE(j.at("lookup_hit_rate").is_null());
}

proto::KvNamespacesReply namespaces() {
  return proto::KvNamespacesReply{
      .namespaces = {proto::KvNamespaceEntry{.namespace_id = 9,
                                             .fingerprint_hi = 0xab,
                                             .fingerprint_lo = 0xcd,
                                             .tp_rank = 0,
                                             .tp_size = 1,
                                             .chunk_tokens = 256,
                                             .chunks = {0, 0, 5},
                                             .bytes = {0, 0, 10ull << 20}},
                     proto::KvNamespaceEntry{.namespace_id = 2,
                                             .fingerprint_hi = 1,
                                             .fingerprint_lo = 2,
                                             .tp_rank = 1,
                                             .tp_size = 4,
                                             .chunk_tokens = 128,
                                             .chunks = {1, 2, 3},
                                             .bytes = {1ull << 20, 2ull << 20, 3ull << 20},
                                             .owner_uid = 1000,
                                             .owner_gid = 100,
                                             .mode = 0640,
                                             .model_id = "llama",
                                             .layout = "nhd",
                                             .dtype = "bf16"}}};
}

TEST(CtlKvFormat, NamespacesJsonByIdWithRecoveredOnesMarked) {
  const json j = kv_namespaces_json(namespaces());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].at("id"), 2u);
  EXPECT_EQ(j[0].at("model_id"), "llama");
  EXPECT_EQ(j[0].at("layout"), "nhd");
  EXPECT_EQ(j[0].at("dtype"), "bf16");
  EXPECT_EQ(j[0].at("tp_rank"), 1u);
  EXPECT_EQ(j[0].at("tp_size"), 4u);
  EXPECT_EQ(j[0].at("chunk_tokens"), 128u);
  EXPECT_EQ(j[0].at("recovered_only"), false);
  EXPECT_EQ(j[0].at("owner_uid"), 1000u);
  EXPECT_EQ(j[0].at("owner_gid"), 100u);
  EXPECT_EQ(j[0].at("mode"), "0640");
  EXPECT_EQ(j[0].at("chunks").at("cxl"), 2u);
  EXPECT_EQ(j[0].at("bytes").at("ssd"), 3u << 20);
  EXPECT_EQ(j[0].at("total_chunks"), 6u);
  EXPECT_EQ(j[0].at("total_bytes"), 6u << 20);
  EXPECT_EQ(j[0].at("fingerprint"), "00000000000000010000000000000002");
  EXPECT_EQ(j[1].at("id"), 9u);
  EXPECT_EQ(j[1].at("recovered_only"), true);
  EXPECT_EQ(j[1].at("model_id"), "");
  EXPECT_TRUE(j[1].at("tp_size").is_null());
  EXPECT_TRUE(j[1].at("chunk_tokens").is_null());
  EXPECT_EQ(j[1].at("chunks").at("ssd"), 5u);
}

TEST(CtlKvFormat, NamespacesText) {
  const std::string text = kv_namespaces_text(namespaces());
  EXPECT_EQ(text.rfind("ID", 0), 0u) << text;
  const size_t llama = text.find("\n2 ");
  const size_t recovered = text.find("\n9 ");
  ASSERT_NE(llama, std::string::npos) << text;
  ASSERT_NE(recovered, std::string::npos) << text;
  EXPECT_LT(llama, recovered);
  EXPECT_NE(text.find("llama", llama), std::string::npos);
  EXPECT_NE(text.find("1000", llama), std::string::npos) << "owner uid";
  EXPECT_NE(text.find("0640", llama), std::string::npos) << "mode in octal";
  EXPECT_NE(text.find("1/4", llama), std::string::npos);
  EXPECT_NE(text.find("6.0 MiB", llama), std::string::npos);
  EXPECT_NE(text.find("(recovered from SSD)", recovered), std::string::npos);
  EXPECT_EQ(kv_namespaces_text({}), "ID  OWNER  MODE  MODEL  LAYOUT  DTYPE  TP  TOKENS  DRAM  CXL  SSD  BYTES  FINGERPRINT\n");
}

TEST(CtlKvFormat, Drop) {
  const proto::KvNamespaceDropReply r{.chunks_dropped = 3, .chunks_deferred = 1};
  const json j = kv_drop_json(7, r);
  EXPECT_EQ(j.at("namespace_id"), 7u);
  EXPECT_EQ(j.at("chunks_dropped"), 3u);
  EXPECT_EQ(j.at("chunks_deferred"), 1u);
  EXPECT_EQ(kv_drop_text(7, r), "namespace 7: 3 chunks dropped, 1 leased ones go when their leases are released\n");
  EXPECT_EQ(kv_drop_text(7, {.chunks_dropped = 0}), "namespace 7: 0 chunks dropped\n");
}

}  // namespace
}  // namespace cxlpool::ctl
