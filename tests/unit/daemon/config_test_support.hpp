// SPDX-License-Identifier: Apache-2.0
// What the configuration tests share: the files meson points them at (the
// example config, docs/configuration.md), the checks that those files show
// a key, and a table-driven rejection check (message = "<source>:<line>:
// <key>: <explanation>").
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>
#include <algorithm>

#include "config.hpp"
#include "support/environment.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::daemon {

// The files meson passes in CXLPOOL_EXAMPLE_CONFIG and CXLPOOL_CONFIG_DOC
// ("" when the test was run by hand).
using test::env_value;
using test::read_file;

// The example shows a key when a line assigns it, commented out or not.
inline bool example_shows(const std::string& example, const std::string& key) {
  return std::regex_search(example, std::regex("(^|\n)[ \t]*#?[ \t]*" + key + "[ \t]*="));
}

// docs/configuration.md has a table row per key, "| `section.key`".
inline bool doc_has_row(const std::string& doc, const std::string& dotted_key) {
  return doc.find("| `" + dotted_key + "`") != std::string::npos;
}

struct Rejection {
  const char* text;
  const char* key;   // "section.key" the message must name
  uint32_t line;     // line the message must point at
  const char* what;  // a fragment of the explanation
};

// Parses `r.text` as `source` and checks the error names the key and line.
inline void expect_rejection(const Rejection& r, const char* source) {
  auto config = parse_config(r.text, source);
  ASSERT_FALSE(config) << "accepted:\n" << r.text;
  EXPECT_EQ(config.error().code, EINVAL);
  const std::string& message = config.error().message;
  const std::string prefix = std::string(source) + ":" + std::to_string(r.line) + ": " + r.key + ": ";
  EXPECT_EQ(message.rfind(prefix, 0), 0u) << "message: " << message << "\nexpected prefix: " << prefix;
  EXPECT_NE(message.find(r.what), std::string::npos) << "message: " << message << "\nexpected: " << r.what;
}

// Every key of `section` changes from `running` to `next` and each change
// needs a restart.
inline void expect_keys_need_restart(const std::string& section, const std::vector<std::string>& keys,
                                     const Config& running, const Config& next) {
  const auto changed = changes_needing_restart(running, next);
  for (const std::string& key : keys) {
    EXPECT_NE(std::find(changed.begin(), changed.end(), section + "." + key), changed.end()) << key;
  }
}

// The example file and docs/configuration.md show every key of `section`.
inline void expect_example_and_doc_show(const std::string& section, const std::vector<std::string>& keys) {
  const std::string example = read_file(env_value("CXLPOOL_EXAMPLE_CONFIG"));
  const std::string doc = read_file(env_value("CXLPOOL_CONFIG_DOC"));
  ASSERT_FALSE(example.empty() || doc.empty()) << "run through meson test";
  for (const std::string& key : keys) {
    EXPECT_TRUE(example_shows(example, key)) << "the example does not show " << section << "." << key;
    EXPECT_TRUE(doc_has_row(doc, section + "." + key)) << "docs/configuration.md has no row for " << section << "." << key;
  }
}

}  // namespace cxlpool::daemon
