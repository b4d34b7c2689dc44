// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::tiering {
namespace {

std::map<std::string, std::string> snapshot(const M5Config& c) {
  std::map<std::string, std::string> out;
  for (const std::string& k : M5Config::keys()) {
    auto v = c.get(k);
    EXPECT_TRUE(v.has_value()) << k;
    out[k] = v.value_or("?");
  }
  return out;
}

const std::vector<std::string> kExpectedKeys = {
    "nominator",      "sketch_rows",       "sketch_width",  "top_k",         "hwt_capacity",  "sparse_max_words",
    "promote_sparse", "min_accesses",      "base_frequency_hz", "fscale_power", "min_period_ms", "max_period_ms",
    "high_watermark", "low_watermark",     "rate_limit_mib_s",  "batch_pages"};

TEST(M5Config, KeysAreTheHeaderKnobs) {
  EXPECT_EQ(M5Config::keys(), kExpectedKeys);
  EXPECT_TRUE(M5Config{}.validate().has_value());
}

TEST(M5Config, DefaultsPrintAsWritten) {
  const M5Config c;
  const std::map<std::string, std::string> want = {
      {"nominator", "hpt"},          {"sketch_rows", "4"},         {"sketch_width", "8192"},
      {"top_k", "512"},              {"hwt_capacity", "4096"},     {"sparse_max_words", "16"},
      {"promote_sparse", "false"},   {"min_accesses", "2"},        {"base_frequency_hz", "10"},
      {"fscale_power", "4"},         {"min_period_ms", "10"},      {"max_period_ms", "10000"},
      {"high_watermark", "0.98"},    {"low_watermark", "0.96"},    {"rate_limit_mib_s", "256"},
      {"batch_pages", "2048"}};
  EXPECT_EQ(snapshot(c), want);
}

TEST(M5Config, EveryKnobRoundTrips) {
  // key, value to set, what get() prints back, and the field it lands in.
  struct Case {
    std::string key, value, printed;
  };
  const std::vector<Case> cases = {
      {"nominator", "hwt", "hwt"},
      {"sketch_rows", "8", "8"},
      {"sketch_width", "1_024", "1024"},
      {"top_k", "64", "64"},
      {"hwt_capacity", "100", "100"},
      {"sparse_max_words", "0", "0"},
      {"promote_sparse", "true", "true"},
      {"min_accesses", "1", "1"},
      {"base_frequency_hz", "2.5", "2.5"},
      {"fscale_power", "3", "3"},
      {"min_period_ms", "0.5", "0.5"},
      {"max_period_ms", "60000", "60000"},
      {"high_watermark", "0.99", "0.99"},
      {"low_watermark", "0.5", "0.5"},
      {"rate_limit_mib_s", "1.5", "1.5"},
      {"batch_pages", "64", "64"},
  };
  std::set<std::string> covered;
  for (const Case& c : cases) {
    M5Config config;
    auto ok = config.set(c.key, c.value);
    ASSERT_TRUE(ok.has_value()) << c.key << ": " << ok.error().message;
    EXPECT_EQ(config.get(c.key).value(), c.printed) << c.key;
    // What get() prints is accepted by set() and changes nothing.
    const auto before = snapshot(config);
    ASSERT_TRUE(config.set(c.key, c.printed).has_value()) << c.key;
    EXPECT_EQ(snapshot(config), before) << c.key;
    covered.insert(c.key);
  }
  EXPECT_EQ(covered.size(), M5Config::keys().size());

  M5Config c;
  ASSERT_TRUE(c.set("min_period_ms", "0.5").has_value());
  EXPECT_EQ(c.min_period_ns, 500'000u);
  ASSERT_TRUE(c.set("rate_limit_mib_s", "1.5").has_value());
  EXPECT_EQ(c.rate_limit_bytes_per_s, 3u << 19);
  ASSERT_TRUE(c.set("rate_limit_mib_s", "0").has_value());
  EXPECT_EQ(c.rate_limit_bytes_per_s, 0u);
  ASSERT_TRUE(c.set("nominator", "hwt").has_value());
  EXPECT_EQ(c.nominator, NominatorMode::kHwt);
  ASSERT_TRUE(c.set("max_period_ms", "20000").has_value());
  EXPECT_EQ(c.max_period_ns, 20'000'000'000u);
  ASSERT_TRUE(c.set("promote_sparse", "true").has_value());
  EXPECT_TRUE(c.promote_sparse);
}

TEST(M5Config, AcceptsTheSectionPrefix) {
  M5Config c;
  ASSERT_TRUE(c.set("tiering.top_k", "7").has_value());
  EXPECT_EQ(c.top_k, 7u);
  EXPECT_EQ(c.get("tiering.top_k").value(), "7");
}

TEST(M5Config, InvalidValuesAreRejectedNamingTheKeyAndLeaveTheConfigAlone) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"nominator", "lru"},          {"nominator", "HPT"},         {"nominator", ""},
      {"sketch_rows", "0"},          {"sketch_rows", "17"},        {"sketch_rows", "-1"},
      {"sketch_rows", "four"},       {"sketch_rows", "99999999999"},
      {"sketch_width", "1000"},      {"sketch_width", "8"},        {"sketch_width", "536870912"},
      {"sketch_width", "4_096_"},    {"top_k", "0"},               {"top_k", "1048577"},
      {"top_k", "1.5"},              {"hwt_capacity", "0"},        {"hwt_capacity", "16777217"},
      {"sparse_max_words", "65"},    {"promote_sparse", "yes"},    {"promote_sparse", "1"},
      {"min_accesses", "0"},         {"min_accesses", "1073741825"},
      {"base_frequency_hz", "0"},    {"base_frequency_hz", "-1"},  {"base_frequency_hz", "nan"},
      {"base_frequency_hz", "inf"},  {"base_frequency_hz", "2000000"}, {"base_frequency_hz", "0x10"},
      {"fscale_power", "0.5"},       {"fscale_power", "9"},
      {"min_period_ms", "0"},        {"min_period_ms", "-5"},      {"min_period_ms", "20000"},
      {"max_period_ms", "5"},        {"max_period_ms", "3600001"}, {"max_period_ms", "1e300"},
      {"high_watermark", "0"},       {"high_watermark", "1.01"},   {"high_watermark", "0.8"},
      {"low_watermark", "-0.1"},     {"low_watermark", "0.99"},    {"low_watermark", "1"},
      {"rate_limit_mib_s", "-1"},    {"rate_limit_mib_s", "0.001"}, {"rate_limit_mib_s", "2000000"},
      {"rate_limit_mib_s", "fast"},  {"batch_pages", "0"},         {"batch_pages", "1048577"},
  };
  std::set<std::string> covered;
  for (const auto& [key, value] : bad) {
    M5Config c;
    const auto before = snapshot(c);
    auto r = c.set(key, value);
    ASSERT_FALSE(r.has_value()) << key << "=" << value;
    EXPECT_EQ(r.error().code, EINVAL);
    EXPECT_NE(r.error().message.find("tiering." + key + ":"), std::string::npos) << r.error().message;
    EXPECT_EQ(snapshot(c), before) << key << "=" << value;
    covered.insert(key);
  }
  // Every knob that can hold a bad value was tried.
  EXPECT_EQ(covered.size(), M5Config::keys().size());
}

// c.set(key, value) fails with exactly `message`.
void expect_set_fails(M5Config& c, const std::string& key, const std::string& value, const std::string& message) {
  auto r = c.set(key, value);
  ASSERT_FALSE(r.has_value()) << key << "=" << value;
  EXPECT_EQ(r.error().message, message);
}

TEST(M5Config, CombinationRulesNameBothKnobs) {
  M5Config c;
  expect_set_fails(c, "low_watermark", "0.99", "tiering.low_watermark: 0.99 must be below high_watermark 0.98");
  expect_set_fails(c, "high_watermark", "0.85", "tiering.high_watermark: 0.85 must be above low_watermark 0.96");
  expect_set_fails(c, "max_period_ms", "5", "tiering.max_period_ms: 5 must not be below min_period_ms 10");
  expect_set_fails(c, "min_period_ms", "20000", "tiering.min_period_ms: 20000 must not exceed max_period_ms 10000");
  // In the right order both change.
  ASSERT_TRUE(c.set("high_watermark", "0.99").has_value());
  ASSERT_TRUE(c.set("low_watermark", "0.97").has_value());
}

TEST(M5Config, ParseErrorsQuoteTheValue) {
  M5Config c;
  expect_set_fails(c, "top_k", "many", "tiering.top_k: 'many' is not an unsigned integer");
  expect_set_fails(c, "top_k", "0", "tiering.top_k: 0 must be in 1..1048576");
}

TEST(M5Config, UnknownKeys) {
  M5Config c;
  auto r = c.set("colour", "blue");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("colour"), std::string::npos);
  EXPECT_FALSE(c.get("colour").has_value());
  EXPECT_FALSE(c.get("tiering.").has_value());
}

TEST(M5Config, ValidateNamesTheBrokenField) {
  M5Config c;
  c.sketch_width = 1000;
  auto r = c.validate();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.rfind("tiering.sketch_width: 1000 ", 0), 0u) << r.error().message;
  c = M5Config{};
  c.low_watermark = 0.99;
  r = c.validate();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("low_watermark 0.99"), std::string::npos) << r.error().message;
  c = M5Config{};
  c.nominator = static_cast<NominatorMode>(7);
  EXPECT_FALSE(c.validate().has_value());
  // A broken config cannot build a manager.
  EXPECT_FALSE(M5Manager::create(c).has_value());
}

}  // namespace
}  // namespace cxlpool::tiering
