// SPDX-License-Identifier: Apache-2.0
// Environment variables in tests: the value of one that the test's meson
// definition sets (a path to a source file, a binary), and one set or unset
// for as long as a test needs it, then put back as it was, so that one
// test's setting never leaks into the next.
#pragma once

#include <optional>
#include <string>

namespace cxlpool::test {

// The variable's value; "" when it is not set.
std::string env_value(const char* name);

class ScopedEnv {
 public:
  // Remembers the variable's value; changes nothing yet.
  explicit ScopedEnv(std::string name);
  ScopedEnv(std::string name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  void set(const std::string& value) const;
  void unset() const;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

}  // namespace cxlpool::test
