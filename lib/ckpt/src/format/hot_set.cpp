// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/hot_set.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "le_bytes.hpp"

namespace cxlpool::ckpt {
namespace {

constexpr std::array<char, 8> kHotMagic = {'C', 'X', 'L', 'H', 'O', 'T', '\0', '\0'};
constexpr uint64_t kFixedBytes = 8 + 4 * 4;
// A hot set file is small; the cap keeps a hostile one from costing memory.
constexpr uint64_t kMaxFileBytes = kFixedBytes + uint64_t{kMaxHotPages} * 8 + 4;

auto broken(const std::string& why) { return fail(EBADMSG, "hot set: " + why); }

// The run holding `page`, by binary search over the sorted runs.
bool in_runs(const Manifest& m, uint64_t page) {
  auto it = std::upper_bound(m.runs.begin(), m.runs.end(), page,
                             [](uint64_t a, const PageRun& r) { return a < r.addr; });
  if (it == m.runs.begin()) return false;
  --it;
  return page - it->addr < it->pages * kPageSize;
}

}  // namespace

std::vector<std::byte> encode_hot_set(const HotSet& set) {
  std::vector<std::byte> out;
  out.reserve(kFixedBytes + set.pages.size() * 8 + 4);
  detail::LeWriter w(out);
  for (char c : kHotMagic) w.u8(static_cast<uint8_t>(c));
  w.u32(kHotSetVersion);
  w.u32(static_cast<uint32_t>(set.source));
  w.u32(set.manifest_crc32c);
  w.u32(static_cast<uint32_t>(set.pages.size()));
  for (uint64_t p : set.pages) w.u64(p);
  w.u32(crc32c(out));
  return out;
}

Result<HotSet> decode_hot_set(std::span<const std::byte> bytes) {
  if (bytes.size() < kFixedBytes + 4) return broken("truncated");
  if (std::memcmp(bytes.data(), kHotMagic.data(), kHotMagic.size()) != 0) return broken("not a hot set file");
  detail::LeReader r(bytes.subspan(kHotMagic.size()));
  const uint32_t version = r.u32();
  if (version != kHotSetVersion)
    return fail(ENOTSUP, fmt::format("hot set: version {}; this build reads {}", version, kHotSetVersion));
  HotSet set;
  const uint32_t source = r.u32();
  set.manifest_crc32c = r.u32();
  const uint32_t n = r.u32();
  if (n > kMaxHotPages || r.remaining() != uint64_t{n} * 8 + 4)
    return broken(fmt::format("{} pages do not fit the file's {} bytes", n, bytes.size()));
  const auto body = bytes.first(bytes.size() - 4);
  detail::LeReader tail(bytes.last(4));
  if (crc32c(body) != tail.u32()) return broken("checksum mismatch");
  if (source != static_cast<uint32_t>(HotSource::kFaults) && source != static_cast<uint32_t>(HotSource::kWritten))
    return broken(fmt::format("unknown source {}", source));
  set.source = static_cast<HotSource>(source);
  set.pages.reserve(n);
  std::unordered_set<uint64_t> seen;
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t p = r.u64();
    if (p % kPageSize != 0) return broken(fmt::format("page {:#x} is not aligned", p));
    if (!seen.insert(p).second) return broken(fmt::format("page {:#x} is listed twice", p));
    set.pages.push_back(p);
  }
  return set;
}

std::vector<uint64_t> pages_in_runs(const Manifest& m, std::span<const uint64_t> pages) {
  std::vector<uint64_t> out;
  std::unordered_set<uint64_t> seen;
  for (uint64_t p : pages) {
    p -= p % kPageSize;
    if (in_runs(m, p) && seen.insert(p).second) out.push_back(p);
  }
  return out;
}

Result<void> apply_hot_set(Manifest& m, uint32_t manifest_crc32c, const HotSet& set) {
  if (set.manifest_crc32c != manifest_crc32c)
    return fail(ESTALE, fmt::format("hot set: recorded for another image (manifest checksum {:08x}, this image's "
                                    "{:08x})", set.manifest_crc32c, manifest_crc32c));
  for (uint64_t p : set.pages)
    if (!in_runs(m, p)) return fail(EINVAL, fmt::format("hot set: page {:#x} is not one of the image's", p));
  m.hot_pages = set.pages;
  std::sort(m.hot_pages.begin(), m.hot_pages.end());
  return {};
}

Result<HotSet> read_hot_set_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail_errno("hot set: open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail_errno("hot set: stat " + path);
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > kMaxFileBytes)
    return fail(EBADMSG, fmt::format("hot set: {} is {} bytes, more than a hot set holds", path, st.st_size));
  std::vector<std::byte> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno("hot set: read " + path);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  auto set = decode_hot_set(bytes);
  if (!set) return fail(set.error().code, set.error().message + " (" + path + ")");
  return set;
}

Result<void> write_hot_set_file(const std::string& path, const HotSet& set) {
  const std::vector<std::byte> bytes = encode_hot_set(set);
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return fail_errno("hot set: create " + tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail_errno("hot set: write " + tmp);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail_errno("hot set: fsync " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail_errno("hot set: rename to " + path);
  return {};
}

}  // namespace cxlpool::ckpt
