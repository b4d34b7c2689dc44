// SPDX-License-Identifier: Apache-2.0
#include "image_estimate.hpp"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace cxlpool::daemon {
namespace {

constexpr uint64_t kHeaderBytes = 4096;

// The value of "NAME:   123 kB" in bytes.
Result<uint64_t> kb_line(std::string_view text, std::string_view name) {
  size_t at = 0;
  for (;;) {
    at = text.find(name, at);
    if (at == std::string_view::npos) return fail(EINVAL, "smaps_rollup has no " + std::string(name) + " line");
    if ((at == 0 || text[at - 1] == '\n') && text.substr(at + name.size()).starts_with(":")) break;
    at += name.size();
  }
  std::string_view rest = text.substr(at + name.size() + 1);
  rest = rest.substr(0, rest.find('\n'));
  const size_t digits = rest.find_first_not_of(" \t");
  if (digits == std::string_view::npos || !rest.ends_with(" kB")) {
    return fail(EINVAL, "smaps_rollup's " + std::string(name) + " line is malformed");
  }
  uint64_t kb = 0;
  const char* end = rest.data() + rest.size() - 3;
  const auto [ptr, ec] = std::from_chars(rest.data() + digits, end, kb);
  if (ec != std::errc() || ptr != end || kb > (UINT64_MAX >> 11)) {
    return fail(EINVAL, "smaps_rollup's " + std::string(name) + " line is malformed");
  }
  return kb * 1024;
}

}  // namespace

Result<uint64_t> image_estimate_from_smaps_rollup(std::string_view text) {
  auto anonymous = kb_line(text, "Anonymous");
  if (!anonymous) return anonymous;
  auto swap = kb_line(text, "Swap");
  if (!swap) return swap;
  return kHeaderBytes + *anonymous + *swap;
}

Result<uint64_t> image_estimate(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::stringstream text;
  text << in.rdbuf();
  if (!in || text.str().empty()) return fail(ESRCH, "no process " + std::to_string(pid) + " (smaps_rollup)");
  return image_estimate_from_smaps_rollup(text.str());
}

}  // namespace cxlpool::daemon
