// SPDX-License-Identifier: Apache-2.0
// Pod members: the published record round-trips, a peer's record is
// validated field by field, the member table turns listings and changes
// into joins and departures, and the etcd gateway's encodings (base64,
// prefix range ends).
#include <gtest/gtest.h>

#include "pod/etcd_client.hpp"
#include "pod/pod_member.hpp"

namespace cxlpool::daemon {
namespace {

PodMember sample(const std::string& host) {
  PodMember m;
  m.host = host;
  m.provider = "tcp;ofi_rxm";
  m.address = "10.0.0.1:7100";
  m.exported_bytes = 3ull << 30;
  m.tiers = {{"dram", "dram", 1ull << 30}, {"emu", "emu", 2ull << 30}};
  m.devices = {"ns1/eth1"};
  return m;
}

TEST(PodMember, RecordRoundTrips) {
  const PodMember m = sample("host-a");
  auto back = decode_pod_member(encode_pod_member(m), "host-a");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, m);
}

TEST(PodMember, CardRoundTripsAndOldRecordsHaveNone) {
  PodMember m = sample("host-a");
  m.card = "cxlpool-fabric/1 id=1f host=boot-1 rail=tcp;ofi_rxm,0a0b region=100,7f00,200000";
  auto back = decode_pod_member(encode_pod_member(m), "host-a");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->card, m.card);
  // A record written before the engine was served: no card, still a member.
  auto old = decode_pod_member(R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[]})",
                               "host-a");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_TRUE(old->card.empty());
  EXPECT_EQ(encode_pod_member(*old).find("card"), std::string::npos);
}

TEST(PodMember, RecordsAreValidated) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case cases[] = {
      {"[]", "not a JSON object"},
      {"{not json", "not a JSON object"},
      {R"({"provider":"tcp","exported_bytes":1,"tiers":[],"devices":[]})", "host: missing"},
      {R"({"host":"host-b","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[]})", "under the key"},
      {R"({"host":"host-a","exported_bytes":1,"tiers":[],"devices":[]})", "provider: missing"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":-1,"tiers":[],"devices":[]})", "exported_bytes"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":"1","tiers":[],"devices":[]})", "exported_bytes"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":{},"devices":[]})", "tiers"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[{"name":"x","kind":"dram"}],"devices":[]})",
       "tiers.capacity"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[""]})", "devices"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[3]})", "devices"},
      {R"({"host":"host-a","provider":"a\nb","exported_bytes":1,"tiers":[],"devices":[]})", "provider"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[],"card":7})", "card"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[],"card":"hello"})", "card"},
      {R"({"host":"host-a","provider":"tcp","exported_bytes":1,"tiers":[],"devices":[],"card":"cxlpool-fabric/1\n"})",
       "card"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    auto m = decode_pod_member(c.json, "host-a");
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().code, EINVAL);
    EXPECT_NE(m.error().message.find(c.field), std::string::npos) << m.error().message;
  }
  EXPECT_FALSE(decode_pod_member(std::string(kMaxPodRecordBytes + 1, ' '), "host-a"));
}

TEST(PodMember, TableReportsJoinsAndDepartures) {
  PodMemberTable table;
  auto c = table.replace({sample("a"), sample("b")});
  EXPECT_EQ(c.joined, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(c.departed.empty());
  // An updated record of a known member is no join.
  PodMember b2 = sample("b");
  b2.exported_bytes = 1;
  EXPECT_TRUE(table.put(b2).empty());
  EXPECT_EQ(table.find("b")->exported_bytes, 1u);
  c = table.put(sample("c"));
  EXPECT_EQ(c.joined, (std::vector<std::string>{"c"}));
  c = table.erase("a");
  EXPECT_EQ(c.departed, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(table.erase("a").empty());
  // Reconciliation: b left and d came while the watch was lost.
  c = table.replace({sample("c"), sample("d")});
  EXPECT_EQ(c.joined, (std::vector<std::string>{"d"}));
  EXPECT_EQ(c.departed, (std::vector<std::string>{"b"}));
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table.members()[0].host, "c");
  EXPECT_EQ(table.members()[1].host, "d");
}

TEST(PodMember, KeysLiveUnderThePodPrefix) {
  EXPECT_EQ(pod_members_prefix("rack-7"), "/cxlpool/pods/rack-7/members/");
}

TEST(EtcdGateway, Base64MatchesTheStandardAlphabet) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("/a/x"), "L2EveA==");
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
  for (const std::string text : {"", "f", "fo", "foo", "foob", "/cxlpool/pods/p/members/h"}) {
    auto back = base64_decode(base64_encode(text));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, text);
  }
  EXPECT_FALSE(base64_decode("Zg="));
  EXPECT_FALSE(base64_decode("Z=g="));
  EXPECT_FALSE(base64_decode("Zm9*"));
}

TEST(EtcdGateway, PrefixRangeEndCoversThePrefix) {
  EXPECT_EQ(prefix_range_end("/a/"), "/a0");
  EXPECT_EQ(prefix_range_end(std::string("a\xff", 2)), "b");
  EXPECT_EQ(prefix_range_end(std::string("\xff", 1)), std::string(1, '\0'));
}

}  // namespace
}  // namespace cxlpool::daemon
