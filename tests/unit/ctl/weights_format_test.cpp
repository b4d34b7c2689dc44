// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl weights` output: the JSON fields scripts rely on and the text
// table operators read, from replies built by hand.
#include "weights_format.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cxlpool::ctl {
namespace {

proto::WeightsEntry entry(const std::string& model, uint64_t total, uint64_t resident) {
  return proto::WeightsEntry{.tier_id = 1,
                             .files = 2,
                             .owner_uid = 1000,
                             .opens = 3,
                             .tensor_count = 291,
                             .total_bytes = total,
                             .resident_bytes = resident,
                             .region_bytes = resident + (1u << 20),
                             .model = model,
                             .region_name = "cxlpool-w-" + model};
}

TEST(WeightsFormat, ListJsonIsOrderedByNameWithEveryField) {
  proto::WeightsListReply r;
  r.models = {entry("zeta", 4ull << 30, 1ull << 30), entry("alpha", 0, 0)};
  auto j = weights_list_json(r);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["model"], "alpha");
  EXPECT_EQ(j[0]["resident_fraction"], 1.0);  // nothing to hold: fully resident
  EXPECT_EQ(j[1]["model"], "zeta");
  EXPECT_EQ(j[1]["region"], "cxlpool-w-zeta");
  EXPECT_EQ(j[1]["tier"], 1);
  EXPECT_EQ(j[1]["files"], 2);
  EXPECT_EQ(j[1]["tensors"], 291);
  EXPECT_EQ(j[1]["total_bytes"], 4ull << 30);
  EXPECT_EQ(j[1]["resident_bytes"], 1ull << 30);
  EXPECT_DOUBLE_EQ(j[1]["resident_fraction"].get<double>(), 0.25);
  EXPECT_EQ(j[1]["region_bytes"], (1ull << 30) + (1u << 20));
  EXPECT_EQ(j[1]["owner_uid"], 1000);
  EXPECT_EQ(j[1]["opens"], 3);
  EXPECT_EQ(weights_list_json(proto::WeightsListReply{}), nlohmann::json::array());
}

TEST(WeightsFormat, ListTextHasAHeaderAndOneRowPerModel) {
  proto::WeightsListReply r;
  r.models = {entry("llama", 4ull << 30, 1ull << 30)};
  const std::string text = weights_list_text(r);
  EXPECT_NE(text.find("MODEL"), std::string::npos);
  EXPECT_NE(text.find("RESIDENT"), std::string::npos);
  EXPECT_NE(text.find("llama"), std::string::npos);
  EXPECT_NE(text.find("4.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("(25%)"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_EQ(weights_list_text(proto::WeightsListReply{}), "no models loaded\n");
}

TEST(WeightsFormat, Unload) {
  proto::WeightsUnloadReply r{.region_bytes = 3ull << 20};
  auto j = weights_unload_json("m", r);
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["region_bytes"], 3ull << 20);
  const std::string text = weights_unload_text("m", r);
  EXPECT_NE(text.find("'m'"), std::string::npos);
  EXPECT_NE(text.find("3.0 MiB"), std::string::npos) << text;
}

}  // namespace
}  // namespace cxlpool::ctl
