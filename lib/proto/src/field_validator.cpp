// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <limits>

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

// What an empty string of a Text kind means.
enum class EmptyText {
  kByRules,   // no rule of its own: the length and byte rules decide
  kRefused,   // "empty"
  kAccepted,  // valid, nothing else checked
};

// The bytes a Text kind may hold.
enum class TextBytes {
  kNoNul,           // strings end up in C APIs and terminals: an embedded NUL would silently cut them
  kPrintableAscii,
  kNoControl,       // bytes from 0x80 up pass (UTF-8); control bytes would break keys shown in a terminal
  kRegionName,      // valid_region_name(), which bounds the length too
  kModelName,       // valid_region_name()
};

struct TextRule {
  size_t max_length;
  EmptyText empty;
  TextBytes bytes;
};

constexpr size_t kNoLengthRule = std::numeric_limits<size_t>::max();

constexpr TextRule text_rule(Text kind) {
  switch (kind) {
    case Text::kPlain: return {kMaxStringLength, EmptyText::kByRules, TextBytes::kNoNul};
    case Text::kErrorMessage: return {kMaxErrorMessageLength, EmptyText::kByRules, TextBytes::kNoNul};
    case Text::kClientName: return {kMaxClientNameLength, EmptyText::kByRules, TextBytes::kPrintableAscii};
    case Text::kKnob: return {kMaxKnobLength, EmptyText::kRefused, TextBytes::kPrintableAscii};
    case Text::kKnobOrEmpty: return {kMaxKnobLength, EmptyText::kAccepted, TextBytes::kPrintableAscii};
    case Text::kKvNamespace: return {kMaxKvNamespaceField, EmptyText::kRefused, TextBytes::kNoControl};
    case Text::kKvNamespaceOrEmpty: return {kMaxKvNamespaceField, EmptyText::kAccepted, TextBytes::kNoControl};
    case Text::kRegionName: return {kNoLengthRule, EmptyText::kByRules, TextBytes::kRegionName};
    case Text::kRegionNameOrEmpty: return {kNoLengthRule, EmptyText::kAccepted, TextBytes::kRegionName};
    case Text::kWeightsModel: return {kMaxWeightsModelLength, EmptyText::kByRules, TextBytes::kModelName};
    case Text::kDeviceName: return {kMaxDeviceNameLength, EmptyText::kRefused, TextBytes::kPrintableAscii};
    case Text::kDeviceNameOrEmpty: return {kMaxDeviceNameLength, EmptyText::kAccepted, TextBytes::kPrintableAscii};
    case Text::kCkptName: return {kMaxCkptNameLength, EmptyText::kByRules, TextBytes::kModelName};
  }
  return {0, EmptyText::kRefused, TextBytes::kNoNul};  // not a Text: refuses everything
}

}  // namespace

void FieldValidator::text(const char* field, const std::string& s, Text kind) {
  if (failed_) return;
  const TextRule rule = text_rule(kind);
  if (s.empty() && rule.empty == EmptyText::kAccepted) return;
  if (s.empty() && rule.empty == EmptyText::kRefused) return fail(field, "empty");
  if (s.size() > rule.max_length) return fail(field, too_long(s.size(), rule.max_length));
  switch (rule.bytes) {
    case TextBytes::kNoNul:
      if (s.find('\0') != std::string::npos) return fail(field, "NUL byte at offset " + std::to_string(s.find('\0')));
      return;
    case TextBytes::kPrintableAscii:
      return printable_ascii(field, s);
    case TextBytes::kNoControl:
      for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f) return fail(field, "control byte " + hex(c) + " at offset " + std::to_string(i));
      }
      return;
    case TextBytes::kRegionName:
      if (!valid_region_name(s)) {
        return fail(field, "not a valid region name (1.." + std::to_string(kMaxNameLength) +
                               " bytes of [A-Za-z0-9._-], not starting with '.')");
      }
      return;
    case TextBytes::kModelName:
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
