// SPDX-License-Identifier: Apache-2.0
// The four visitors that fields::walk() drives: SizeCounter, FieldWriter,
// FieldReader and FieldValidator. Private to lib/proto.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/proto/messages.hpp"
#include "fields.hpp"
#include "wire.hpp"

namespace cxlpool::proto::fields {

// Bytes a value takes on the wire. On a default-constructed entry it gives
// the smallest possible entry, which bounds list counts before allocating.
class SizeCounter {
 public:
  size_t size() const { return size_; }

  void u8(const char*, uint8_t, const auto&...) { size_ += 1; }
  void u16(const char*, uint16_t, const auto&...) { size_ += 2; }
  void u32(const char*, uint32_t, const auto&...) { size_ += 4; }
  void i32(const char*, int32_t, const auto&...) { size_ += 4; }
  void u64(const char*, uint64_t, const auto&...) { size_ += 8; }
  template <typename E>
  void enumeration(const char*, E, E) {
    size_ += 1;
  }
  void text(const char*, const std::string& s, Text) { size_ += 2 + s.size(); }
  template <typename T>
  void list(const char*, const std::vector<T>& entries) {
    size_ += 4;
    for (const T& entry : entries) walk(*this, entry);
  }
  template <typename F>
  void check(const char*, F&&) {}

 private:
  size_t size_ = 0;
};

template <typename T>
size_t min_entry_size() {
  const T empty{};
  SizeCounter counter;
  walk(counter, empty);
  return counter.size();
}

// Appends fields; the caller validated and sized the message first.
class FieldWriter {
 public:
  explicit FieldWriter(wire::Writer& out) : out_(out) {}

  void u8(const char*, uint8_t v, const auto&...) { out_.u8(v); }
  void u16(const char*, uint16_t v, const auto&...) { out_.u16(v); }
  void u32(const char*, uint32_t v, const auto&...) { out_.u32(v); }
  void i32(const char*, int32_t v, const auto&...) { out_.u32(static_cast<uint32_t>(v)); }
  void u64(const char*, uint64_t v, const auto&...) { out_.u64(v); }
  template <typename E>
  void enumeration(const char*, E v, E) {
    out_.u8(static_cast<uint8_t>(v));
  }
  void text(const char*, const std::string& s, Text) {
    out_.u16(static_cast<uint16_t>(s.size()));
    out_.bytes(std::as_bytes(std::span(s.data(), s.size())));
  }
  template <typename T>
  void list(const char*, const std::vector<T>& entries) {
    out_.u32(static_cast<uint32_t>(entries.size()));
    for (const T& entry : entries) walk(*this, entry);
  }
  template <typename F>
  void check(const char*, F&&) {}

 private:
  wire::Writer& out_;
};

// Reads fields in wire order. The first shortfall is remembered with the
// field's path and every later read is skipped, so walk() needs no checks.
// Values are stored as read; FieldValidator judges them afterwards (an
// out-of-range enum value is representable in its uint8_t-based type).
class FieldReader {
 public:
  FieldReader(wire::Reader& in, std::string path) : in_(in), path_(std::move(path)) {}

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

  void u8(const char* field, uint8_t& v, const auto&...) { read(field, v); }
  void u16(const char* field, uint16_t& v, const auto&...) { read(field, v); }
  void u32(const char* field, uint32_t& v, const auto&...) { read(field, v); }
  void u64(const char* field, uint64_t& v, const auto&...) { read(field, v); }
  void i32(const char* field, int32_t& v, const auto&...) {
    uint32_t raw = 0;
    if (read(field, raw)) v = static_cast<int32_t>(raw);
  }
  template <typename E>
  void enumeration(const char* field, E& v, E) {
    uint8_t raw = 0;
    if (read(field, raw)) v = static_cast<E>(raw);
  }
  void text(const char* field, std::string& s, Text) {
    uint16_t length = 0;
    if (!read(field, length)) return;
    std::span<const std::byte> bytes;
    if (!in_.bytes(length, bytes)) {
      fail(field, "length " + std::to_string(length) + " but only " +
                      std::to_string(in_.remaining()) + " bytes left");
      return;
    }
    s.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  template <typename T>
  void list(const char* field, std::vector<T>& entries) {
    uint32_t count = 0;
    if (!read(field, count)) return;
    if (count > kMaxListEntries) {
      fail(field, std::to_string(count) + " entries exceed the limit of " +
                      std::to_string(kMaxListEntries));
      return;
    }
    // Refuse counts the remaining bytes cannot hold before allocating for them.
    const size_t min_size = min_entry_size<T>();
    if (count > in_.remaining() / min_size) {
      fail(field, std::to_string(count) + " entries cannot fit in the " +
                      std::to_string(in_.remaining()) + " bytes left");
      return;
    }
    entries.resize(count);
    const std::string parent = path_;
    for (uint32_t i = 0; i < count && !failed_; ++i) {
      path_ = parent + "." + field + "[" + std::to_string(i) + "]";
      walk(*this, entries[i]);
    }
    path_ = parent;
  }
  template <typename F>
  void check(const char*, F&&) {}

 private:
  template <typename T>
  bool read(const char* field, T& v) {
    if (failed_) return false;
    bool ok = false;
    if constexpr (sizeof(T) == 1) ok = in_.u8(v);
    if constexpr (sizeof(T) == 2) ok = in_.u16(v);
    if constexpr (sizeof(T) == 4) ok = in_.u32(v);
    if constexpr (sizeof(T) == 8) ok = in_.u64(v);
    if (!ok) {
      fail(field, "truncated: needs " + std::to_string(sizeof(T)) + " bytes, " +
                      std::to_string(in_.remaining()) + " left");
    }
    return ok;
  }
  void fail(const char* field, const std::string& what) {
    failed_ = true;
    error_ = path_ + "." + field + ": " + what;
  }

  wire::Reader& in_;
  std::string path_;
  bool failed_ = false;
  std::string error_;
};

// Applies every rule walk() states; keeps the first violation with its path.
class FieldValidator {
 public:
  explicit FieldValidator(std::string path) : path_(std::move(path)) {}

  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }

  void u8([[maybe_unused]] const char* field, [[maybe_unused]] uint8_t v, const auto&... rules) {
    (apply(field, v, rules), ...);
  }
  void u16([[maybe_unused]] const char* field, [[maybe_unused]] uint16_t v, const auto&... rules) {
    (apply(field, v, rules), ...);
  }
  void u32([[maybe_unused]] const char* field, [[maybe_unused]] uint32_t v, const auto&... rules) {
    (apply(field, v, rules), ...);
  }
  void i32([[maybe_unused]] const char* field, [[maybe_unused]] int32_t v, const auto&... rules) {
    (apply(field, v, rules), ...);
  }
  void u64([[maybe_unused]] const char* field, [[maybe_unused]] uint64_t v, const auto&... rules) {
    (apply(field, v, rules), ...);
  }

  template <typename E>
  void enumeration(const char* field, E v, E last) {
    const auto raw = static_cast<unsigned>(v);
    if (raw > static_cast<unsigned>(last)) {
      fail(field, "unknown value " + std::to_string(raw) + " (highest is " +
                      std::to_string(static_cast<unsigned>(last)) + ")");
    }
  }

  void text(const char* field, const std::string& s, Text kind);

  template <typename T>
  void list(const char* field, const std::vector<T>& entries) {
    if (entries.size() > kMaxListEntries) {
      fail(field, std::to_string(entries.size()) + " entries exceed the limit of " +
                      std::to_string(kMaxListEntries));
      return;
    }
    const std::string parent = path_;
    for (size_t i = 0; i < entries.size() && !failed_; ++i) {
      path_ = parent + "." + field + "[" + std::to_string(i) + "]";
      walk(*this, entries[i]);
    }
    path_ = parent;
  }

  template <typename F>
  void check(const char* field, F&& rule) {
    if (failed_) return;
    std::string what = rule();
    if (!what.empty()) fail(field, what);
  }

 private:
  void apply(const char* field, uint32_t v, const KnownBits& rule) {
    if (v & ~rule.known) fail(field, "unknown bits " + hex(v & ~rule.known));
  }
  void apply(const char* field, uint32_t v, const PermissionBits&) {
    if (v & ~kModeMask) fail(field, "bits " + octal(v & ~kModeMask) + " outside 0777");
  }
  template <typename T>
  void apply(const char* field, T v, const Positive&) {
    if (!(v > T{0})) fail(field, "must be greater than 0");
  }
  template <typename T>
  void apply(const char* field, T v, const Between<T>& rule) {
    if (v < rule.min || v > rule.max) {
      fail(field, std::to_string(v) + " outside [" + std::to_string(rule.min) + ", " +
                      std::to_string(rule.max) + "]");
    }
  }

  void fail(const char* field, const std::string& what);
  static std::string hex(uint64_t v);
  static std::string octal(uint64_t v);

  std::string path_;
  bool failed_ = false;
  std::string error_;
};

}  // namespace cxlpool::proto::fields
