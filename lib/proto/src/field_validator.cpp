// SPDX-License-Identifier: Apache-2.0
#include <cstdio>

#include "field_io.hpp"

namespace cxlpool::proto::fields {

namespace {

// Index of the first byte outside [lo, hi], or npos.
size_t first_outside(const std::string& s, unsigned char lo, unsigned char hi) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < lo || c > hi) return i;
  }
  return std::string::npos;
}

std::string too_long(size_t length, size_t limit) {
  return "length " + std::to_string(length) + " exceeds the limit of " + std::to_string(limit);
}

}  // namespace

void FieldValidator::text(const char* field, const std::string& s, Text kind) {
  if (failed_) return;
  switch (kind) {
    case Text::kPlain:
    case Text::kErrorMessage: {
      const size_t limit = kind == Text::kPlain ? kMaxStringLength : kMaxErrorMessageLength;
      if (s.size() > limit) return fail(field, too_long(s.size(), limit));
      // Strings end up in C APIs and terminals; an embedded NUL would silently cut them.
      if (s.find('\0') != std::string::npos) {
        return fail(field, "NUL byte at offset " + std::to_string(s.find('\0')));
      }
      return;
    }
    case Text::kClientName: {
      if (s.size() > kMaxClientNameLength) return fail(field, too_long(s.size(), kMaxClientNameLength));
      return printable_ascii(field, s);
    }
    case Text::kKnobOrEmpty:
      if (s.empty()) return;
      [[fallthrough]];
    case Text::kKnob: {
      if (s.empty()) return fail(field, "empty");
      if (s.size() > kMaxKnobLength) return fail(field, too_long(s.size(), kMaxKnobLength));
      return printable_ascii(field, s);
    }
    case Text::kKvNamespaceOrEmpty:
      if (s.empty()) return;
      [[fallthrough]];
    case Text::kKvNamespace: {
      if (s.empty()) return fail(field, "empty");
      if (s.size() > kMaxKvNamespaceField) return fail(field, too_long(s.size(), kMaxKvNamespaceField));
      // Bytes from 0x80 up pass (UTF-8); control bytes would break keys shown in a terminal.
      for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) {
          return fail(field, "control byte " + hex(c) + " at offset " + std::to_string(i));
        }
      }
      return;
    }
    case Text::kRegionNameOrEmpty:
      if (s.empty()) return;
      [[fallthrough]];
    case Text::kRegionName:
      if (!valid_region_name(s)) {
        return fail(field, "not a valid region name (1.." + std::to_string(kMaxNameLength) +
                               " bytes of [A-Za-z0-9._-], not starting with '.')");
      }
      return;
    case Text::kWeightsModel:
      if (s.size() > kMaxWeightsModelLength) return fail(field, too_long(s.size(), kMaxWeightsModelLength));
      if (!valid_region_name(s)) {
        return fail(field, "not a valid model name (bytes of [A-Za-z0-9._-], not starting with '.')");
      }
      return;
  }
}

void FieldValidator::printable_ascii(const char* field, const std::string& s) {
  const size_t bad = first_outside(s, 0x20, 0x7e);
  if (bad != std::string::npos) {
    fail(field, "byte " + hex(static_cast<unsigned char>(s[bad])) + " at offset " + std::to_string(bad) +
                    " is not printable ASCII");
  }
}

void FieldValidator::fail(const char* field, const std::string& what) {
  if (failed_) return;
  failed_ = true;
  error_ = path_ + "." + field + ": " + what;
}

std::string FieldValidator::hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string FieldValidator::octal(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0%llo", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace cxlpool::proto::fields
