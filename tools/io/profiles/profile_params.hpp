// SPDX-License-Identifier: Apache-2.0
// A profile's parameters while its job text is generated (typed reads that
// remember the first bad value) and the text builder the generators write
// into (sizes printed with fio's k/m/g units, which mean 1024-powers).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "profiles.hpp"

namespace cxlpool::io {

class ProfileParams {
 public:
  ProfileParams(const ProfileInfo& info, std::map<std::string, std::string, std::less<>> values);

  std::string text(std::string_view name);
  std::uint64_t size(std::string_view name);                                   // bytes, > 0
  std::uint64_t count(std::string_view name, std::uint64_t lo, std::uint64_t hi);
  std::uint64_t time_us(std::string_view name);                                // bare numbers are µs
  double real(std::string_view name, double lo, double hi);                    // lo < value < hi
  std::vector<std::uint64_t> size_list(std::string_view name);                 // "1m:16m"
  std::vector<std::string> word_list(std::string_view name);                   // "psync:libaio"
  bool flag(std::string_view name);                                            // 0 or 1

  // Records `why` against parameter `name` unless `ok`.
  void check(bool ok, std::string_view name, std::string_view why);

  const std::optional<Error>& error() const { return error_; }

 private:
  std::string raw(std::string_view name);
  void bad(std::string_view name, std::string_view why);

  const ProfileInfo& info_;
  std::map<std::string, std::string, std::less<>> values_;
  std::optional<Error> error_;
};

// fio job text, section by section; job options given on the command line
// are appended to every job section when rendered.
class JobText {
 public:
  void comment(std::string_view line);
  void section(std::string_view name);
  void set(std::string_view key, std::string_view value);
  void set(std::string_view key, std::uint64_t value);
  void set_bytes(std::string_view key, std::uint64_t bytes);
  void set_us(std::string_view key, std::uint64_t us);
  void flag(std::string_view key);
  std::string render(const std::vector<std::string>& job_overrides) const;

 private:
  struct Section {
    std::string name;
    std::vector<std::string> lines;
  };
  std::vector<std::string> header_;
  std::vector<Section> sections_;
};

// "4m", "16k", or plain bytes when not a whole number of KiB.
std::string size_text(std::uint64_t bytes);

}  // namespace cxlpool::io
