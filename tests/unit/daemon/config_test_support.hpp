// SPDX-License-Identifier: Apache-2.0
// What the configuration tests share: the files meson points them at (the
// example config, docs/configuration.md), the checks that those files show
// a key, and a table-driven rejection check (message = "<source>:<line>:
// <key>: <explanation>").
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "config.hpp"

namespace cxlpool::daemon {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The path meson passes in `name`, or "" when the test was run by hand.
inline std::string required_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

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

}  // namespace cxlpool::daemon
