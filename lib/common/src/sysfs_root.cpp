// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/sysfs_root.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace cxlpool {

std::filesystem::path SysfsRoot::resolve(const std::string& relative) const {
  std::string rel = relative;
  while (!rel.empty() && rel.front() == '/') rel.erase(rel.begin());
  return root_ / rel;
}

bool SysfsRoot::exists(const std::string& relative) const {
  std::error_code ec;
  return std::filesystem::exists(resolve(relative), ec);
}

Result<std::string> SysfsRoot::read_string(const std::string& relative) const {
  const auto path = resolve(relative);
  std::ifstream in(path);
  if (!in) return fail(ENOENT, "cannot read " + path.string());
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

Result<int64_t> SysfsRoot::read_int(const std::string& relative) const {
  auto text = read_string(relative);
  if (!text) return tl::unexpected(text.error());
  int64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) {
    return fail(EINVAL, resolve(relative).string() + ": not an integer: '" + *text + "'");
  }
  return value;
}

std::vector<std::string> SysfsRoot::list(const std::string& relative,
                                         const std::string& prefix) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(resolve(relative), ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::vector<int>> parse_id_list(const std::string& text) {
  std::vector<int> ids;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (part.empty()) continue;
    int first = 0;
    int last = 0;
    const size_t dash = part.find('-');
    const char* b = part.data();
    const char* e = part.data() + part.size();
    if (dash == std::string::npos) {
      auto [p, ec] = std::from_chars(b, e, first);
      if (ec != std::errc() || p != e) return fail(EINVAL, "bad id list '" + text + "'");
      last = first;
    } else {
      auto [p1, ec1] = std::from_chars(b, b + dash, first);
      auto [p2, ec2] = std::from_chars(b + dash + 1, e, last);
      if (ec1 != std::errc() || ec2 != std::errc() || p1 != b + dash || p2 != e || last < first) {
        return fail(EINVAL, "bad id list '" + text + "'");
      }
    }
    if (last - first > 1 << 20) return fail(EINVAL, "id range too large in '" + text + "'");
    for (int id = first; id <= last; ++id) ids.push_back(id);
  }
  return ids;
}

}  // namespace cxlpool
