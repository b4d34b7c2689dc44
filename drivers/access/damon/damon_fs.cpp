// SPDX-License-Identifier: Apache-2.0
#include "damon_fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::drivers {
namespace {

// A sysfs attribute is at most one page; anything longer is not one.
constexpr size_t kMaxAttrBytes = 4096;

std::string_view trim(std::string_view text) {
  const auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace

Result<uint64_t> parse_u64(std::string_view text) {
  const std::string_view t = trim(text);
  if (t.empty()) return fail(EINVAL, "empty value");
  if (!std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return fail(EINVAL, "not a decimal number: '" + std::string(t.substr(0, 64)) + "'");
  }
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || ptr != t.data() + t.size()) {
    return fail(ERANGE, "number out of range: '" + std::string(t.substr(0, 64)) + "'");
  }
  return value;
}

DamonFs::DamonFs(std::string sysfs_root) : root_(std::move(sysfs_root)) {}

std::string DamonFs::path(const std::string& rel) const {
  std::string p = root_.resolve(kDamonAdminDir).string();
  if (!rel.empty()) p += "/" + rel;
  return p;
}

bool DamonFs::exists(const std::string& rel) const {
  std::error_code ec;
  return std::filesystem::exists(path(rel), ec);
}

Result<void> DamonFs::check_writable(const std::string& rel) const {
  if (::access(path(rel).c_str(), W_OK) != 0) return fail_errno("cannot write " + path(rel));
  return {};
}

Result<std::string> DamonFs::read_text(const std::string& rel) const {
  const std::string p = path(rel);
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno("open " + p);
  std::string text(kMaxAttrBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail_errno("read " + p);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxAttrBytes) return fail(EFBIG, p + ": larger than a sysfs attribute");
  text.resize(got);
  return std::string(trim(text));
}

Result<uint64_t> DamonFs::read_u64(const std::string& rel) const {
  auto text = read_text(rel);
  if (!text) return tl::unexpected(text.error());
  auto value = parse_u64(*text);
  if (!value) return fail(value.error().code, path(rel) + ": " + value.error().message);
  return *value;
}

Result<void> DamonFs::write(const std::string& rel, std::string_view value) const {
  const std::string p = path(rel);
  // O_TRUNC is ignored by sysfs and replaces the old value in a fixture copy.
  UniqueFd fd(::open(p.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd) return fail_errno("open " + p + " for writing");
  // A sysfs store takes the whole value in one write; a short write is a
  // failure, not something to resume.
  const ssize_t n = ::write(fd.get(), value.data(), value.size());
  if (n < 0) return fail_errno("write '" + std::string(value) + "' to " + p);
  if (static_cast<size_t>(n) != value.size()) {
    return fail(EIO, "short write of '" + std::string(value) + "' to " + p);
  }
  return {};
}

Result<void> DamonFs::write_u64(const std::string& rel, uint64_t value) const {
  return write(rel, std::to_string(value));
}

std::vector<uint64_t> DamonFs::indices(const std::string& rel) const {
  std::vector<uint64_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path(rel), ec)) {
    if (!entry.is_directory(ec)) continue;
    const std::string name = entry.path().filename().string();
    auto index = parse_u64(name);
    if (index && std::to_string(*index) == name) out.push_back(*index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cxlpool::drivers
