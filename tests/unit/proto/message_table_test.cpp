// SPDX-License-Identifier: Apache-2.0
// message_table.hpp against the normative table of docs/protocol.md §6: the
// same types with the same codes, directions, replies and descriptor
// counts. The codes are on the wire, so this is what keeps a row of the
// table from being renumbered; the seed corpus check pins the bytes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "cxlpool/proto/messages.hpp"
#include "cxlpool/proto/socket_io.hpp"

namespace cxlpool::proto {
namespace {

struct DocRow {
  uint16_t code = 0;
  bool request = false;
  std::string answer;  // empty for "—"
  std::string fds;     // as written, without the bold markers
};

// The §6 table, by message name.
std::map<std::string, DocRow> doc_rows() {
  const char* path = std::getenv("CXLPOOL_PROTOCOL_DOC");
  if (path == nullptr) return {};
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  // | 20 | `RegionAlloc` | C→D | §6.6 | `RegionReply` | 0 |
  const std::regex row(R"(\| (\d+) \| `(\w+)` \| (C→D|D→C)[^|]* \| [^|]+ \| (?:`(\w+)`|—) \| ([^|]+) \|)");
  std::map<std::string, DocRow> rows;
  std::string line;
  while (std::getline(text, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    std::string fds = std::regex_replace(m[5].str(), std::regex(R"(\*\*)"), "");
    rows[m[2]] = DocRow{static_cast<uint16_t>(std::stoul(m[1])), m[3] == "C→D", m[4], fds};
  }
  return rows;
}

// descriptor_count(type) for a row's fds column: a count, "0–N" (at most
// N) or "1 per path" (counted per message, 0 per type).
size_t documented_descriptors(const std::string& fds) {
  if (fds.find("per path") != std::string::npos) return 0;
  const size_t dash = fds.find("–");
  return std::stoul(dash == std::string::npos ? fds : fds.substr(dash + std::string("–").size()));
}

template <typename T>
std::string answer_name() {
  if constexpr (RequestMessage<T>) {
    return MessageTraits<ReplyTo<T>>::kName;
  } else {
    return "";
  }
}

TEST(ProtoTable, MatchesTheDocument) {
  const auto rows = doc_rows();
  ASSERT_FALSE(rows.empty()) << "CXLPOOL_PROTOCOL_DOC is not set or has no §6 table (run through meson test)";
  EXPECT_EQ(rows.size(), std::variant_size_v<Message>) << "docs/protocol.md §6 lists another number of messages";
  for_each_message_type([&]<typename T>(std::type_identity<T>) {
    using Traits = MessageTraits<T>;
    SCOPED_TRACE(Traits::kName);
    const auto row = rows.find(Traits::kName);
    ASSERT_NE(row, rows.end()) << "docs/protocol.md §6 has no row for it";
    EXPECT_EQ(static_cast<uint16_t>(Traits::kType), row->second.code);
    EXPECT_EQ(RequestMessage<T>, row->second.request);
    EXPECT_EQ(answer_name<T>(), row->second.answer);
    EXPECT_EQ(Traits::kDescriptors, documented_descriptors(row->second.fds)) << row->second.fds;
  });
}

TEST(ProtoTable, LookupsFollowTheTable) {
  for_each_message_type([]<typename T>(std::type_identity<T>) {
    using Traits = MessageTraits<T>;
    SCOPED_TRACE(Traits::kName);
    EXPECT_EQ(message_type(Message(T{})), Traits::kType);
    EXPECT_STREQ(message_type_name(Traits::kType), Traits::kName);
    EXPECT_EQ(is_request(Traits::kType), RequestMessage<T>);
    EXPECT_EQ(descriptor_count(Traits::kType), Traits::kDescriptors);
    EXPECT_LE(descriptor_count(Traits::kType), kMaxFdsPerMessage);
  });
  for (const uint16_t unknown : {0, 5, 99, 0xffff}) {
    EXPECT_STREQ(message_type_name(static_cast<MsgType>(unknown)), "unknown");
    EXPECT_FALSE(is_request(static_cast<MsgType>(unknown)));
    EXPECT_EQ(descriptor_count(static_cast<MsgType>(unknown)), 0u);
  }
}

}  // namespace
}  // namespace cxlpool::proto
