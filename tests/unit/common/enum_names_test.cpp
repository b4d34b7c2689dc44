// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/enum_names.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace cxlpool {
namespace {

enum class Mode { kRead, kWrite, kBoth, kUnnamed };

constexpr EnumName<Mode> kModeNames[] = {
    {Mode::kRead, "read"},
    {Mode::kWrite, "write"},
    {Mode::kBoth, "rw"},
    {Mode::kBoth, "readwrite"},
};

// Both directions work at compile time, so headers can keep constexpr names.
static_assert(std::string_view(enum_name(kModeNames, Mode::kWrite, "?")) == "write");
static_assert(enum_from_name(kModeNames, "rw") == Mode::kBoth);

TEST(EnumNames, NameOfEachValue) {
  EXPECT_STREQ(enum_name(kModeNames, Mode::kRead, "?"), "read");
  EXPECT_STREQ(enum_name(kModeNames, Mode::kWrite, "?"), "write");
}

TEST(EnumNames, FirstRowOfAnAliasedValueIsItsName) {
  EXPECT_STREQ(enum_name(kModeNames, Mode::kBoth, "?"), "rw");
}

TEST(EnumNames, ValueWithoutARowGetsTheFallback) {
  EXPECT_STREQ(enum_name(kModeNames, Mode::kUnnamed, "unknown"), "unknown");
  EXPECT_STREQ(enum_name(kModeNames, static_cast<Mode>(42), "?"), "?");
}

TEST(EnumNames, EveryRowParses) {
  for (const auto& row : kModeNames) {
    EXPECT_EQ(enum_from_name(kModeNames, row.name), row.value) << row.name;
  }
}

TEST(EnumNames, NamesRoundTrip) {
  for (Mode m : {Mode::kRead, Mode::kWrite, Mode::kBoth}) {
    EXPECT_EQ(enum_from_name(kModeNames, enum_name(kModeNames, m, "?")), m);
  }
}

TEST(EnumNames, UnknownTextIsNullopt) {
  EXPECT_EQ(enum_from_name(kModeNames, ""), std::nullopt);
  EXPECT_EQ(enum_from_name(kModeNames, "reads"), std::nullopt);
  EXPECT_EQ(enum_from_name(kModeNames, "rea"), std::nullopt);
}

TEST(EnumNames, ExactMatchIsCaseSensitive) {
  EXPECT_EQ(enum_from_name(kModeNames, "Read"), std::nullopt);
  EXPECT_EQ(enum_from_name(kModeNames, "READ", NameCase::kExact), std::nullopt);
}

TEST(EnumNames, IgnoreCaseFoldsAsciiOnly) {
  EXPECT_EQ(enum_from_name(kModeNames, "Read", NameCase::kIgnore), Mode::kRead);
  EXPECT_EQ(enum_from_name(kModeNames, "READWRITE", NameCase::kIgnore), Mode::kBoth);
  EXPECT_EQ(enum_from_name(kModeNames, "writes", NameCase::kIgnore), std::nullopt);
  // '@' + 32 is '`', not a letter: only A-Z fold.
  EXPECT_EQ(enum_from_name(kModeNames, "@ead", NameCase::kIgnore), std::nullopt);
}

}  // namespace
}  // namespace cxlpool
