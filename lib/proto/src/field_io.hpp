// SPDX-License-Identifier: Apache-2.0
// The four visitors that fields::walk() drives: SizeCounter, FieldWriter,
// FieldReader and FieldValidator. Private to lib/proto.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
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

  template <std::integral T>
  void number(const char*, T, const auto&...) {
    size_ += sizeof(T);
  }
  template <std::integral T, size_t N>
  void array(const char*, const T (&)[N]) {
    size_ += N * sizeof(T);
  }
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

  // Signed values travel as their two's complement bits.
  template <std::integral T>
  void number(const char*, T v, const auto&...) {
    out_.value(static_cast<std::make_unsigned_t<T>>(v));
  }
  template <std::integral T, size_t N>
  void array(const char* field, const T (&values)[N]) {
    for (const T v : values) number(field, v);
  }
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

  template <std::integral T>
  void number(const char* field, T& v, const auto&...) {
    std::make_unsigned_t<T> raw = 0;
    if (read(field, raw)) v = static_cast<T>(raw);
  }
  // Elements are named "field[i]"; the name is built only for an error.
  template <std::integral T, size_t N>
  void array(const char* field, T (&values)[N]) {
    for (size_t i = 0; i < N && !failed_; ++i) {
      std::make_unsigned_t<T> raw = 0;
      if (!in_.value(raw)) {
        fail((std::string(field) + "[" + std::to_string(i) + "]").c_str(), truncated(sizeof(T)));
        return;
      }
      values[i] = static_cast<T>(raw);
    }
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
  template <std::unsigned_integral T>
  bool read(const char* field, T& v) {
    if (failed_) return false;
    const bool ok = in_.value(v);
    if (!ok) fail(field, truncated(sizeof(T)));
    return ok;
  }
  std::string truncated(size_t needed) const {
    return "truncated: needs " + std::to_string(needed) + " bytes, " + std::to_string(in_.remaining()) + " left";
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

  template <std::integral T>
  void number([[maybe_unused]] const char* field, [[maybe_unused]] T v, const auto&... rules) {
    (apply(field, v, rules), ...);
  }
  // Array elements carry no rules.
  template <std::integral T, size_t N>
  void array(const char*, const T (&)[N]) {}

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
  // Names the first byte outside 0x20..0x7e.
  void printable_ascii(const char* field, const std::string& s);
  static std::string hex(uint64_t v);
  static std::string octal(uint64_t v);

  std::string path_;
  bool failed_ = false;
  std::string error_;
};

}  // namespace cxlpool::proto::fields
