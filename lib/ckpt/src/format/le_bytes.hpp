// SPDX-License-Identifier: Apache-2.0
// Little-endian field access for the image's header and manifest. The reader
// never reads past its span: a short read sets a sticky failure and yields
// zeros, so a decoder checks ok() once per record instead of per field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace cxlpool::ckpt::detail {

class LeWriter {
 public:
  explicit LeWriter(std::vector<std::byte>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(std::byte{v}); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void raw(const void* data, std::size_t n) {
    const auto* p = static_cast<const std::byte*>(data);
    out_.insert(out_.end(), p, p + n);
  }
  // u32 length, then the bytes.
  void blob(const void* data, std::size_t n) {
    u32(static_cast<uint32_t>(n));
    raw(data, n);
  }
  void str(const std::string& s) { blob(s.data(), s.size()); }
  std::size_t size() const { return out_.size(); }
  // Overwrites a u32 written earlier (a section's length).
  void patch_u32(std::size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) out_[at + i] = std::byte{static_cast<uint8_t>(v >> (8 * i))};
  }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(std::byte{static_cast<uint8_t>(v >> (8 * i))});
  }
  std::vector<std::byte>& out_;
};

class LeReader {
 public:
  explicit LeReader(std::span<const std::byte> in) : in_(in) {}
  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  // The next n bytes, or an empty span (and failure) when fewer are left.
  std::span<const std::byte> take(uint64_t n) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return {};
    }
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  void raw(void* out, std::size_t n) {
    auto s = take(n);
    if (ok_) std::memcpy(out, s.data(), n);
  }
  // A u32 length (at most max_bytes), then that many bytes.
  std::string str(uint32_t max_bytes) {
    const uint32_t n = u32();
    if (n > max_bytes) ok_ = false;
    auto s = take(ok_ ? n : 0);
    return ok_ ? std::string(reinterpret_cast<const char*>(s.data()), s.size()) : std::string();
  }
  // A u32 element count whose elements take at least min_bytes each: fails,
  // instead of returning a count a caller would reserve, when the rest of
  // the input cannot hold that many.
  uint32_t count(uint64_t min_bytes) {
    const uint32_t n = u32();
    if (ok_ && static_cast<uint64_t>(n) * min_bytes > remaining()) ok_ = false;
    return ok_ ? n : 0;
  }
  void fail() { ok_ = false; }
  bool ok() const { return ok_; }
  uint64_t remaining() const { return in_.size() - pos_; }
  bool done() const { return ok_ && remaining() == 0; }

 private:
  uint64_t get(int n) {
    if (!ok_ || remaining() < static_cast<uint64_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(std::to_integer<uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::span<const std::byte> in_;
  uint64_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace cxlpool::ckpt::detail
