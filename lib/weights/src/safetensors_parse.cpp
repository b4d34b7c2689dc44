// SPDX-License-Identifier: Apache-2.0
// The header parser: one pass of nlohmann's SAX reader with a handler that
// builds the TensorInfo list as the events arrive, so the cost is linear in
// the header's size (the callback/DOM parse this replaces grew with the
// square of the tensor count). Limits are checked as soon as the event that
// breaks them arrives, so a hostile header costs no more than its bytes.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "cxlpool/weights/safetensors.hpp"

namespace cxlpool::weights {
namespace {

using nlohmann::json;

tl::unexpected<Error> bad(std::string message) { return fail(EBADMSG, std::move(message)); }

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

// The first byte of `s` below 0x20 or 0x7f, or -1. Names end up in logs,
// error messages and the C API as NUL-terminated strings.
ptrdiff_t control_byte_at(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

// A field or key quoted in an error message only when it is plain text.
std::string shown(const std::string& s) {
  if (s.size() > 64 || control_byte_at(s) >= 0) return "(a key with control bytes or over 64 bytes)";
  return "'" + s + "'";
}

class HeaderHandler {
 public:
  HeaderHandler(uint64_t data_bytes, const ParseLimits& limits, SafetensorsHeader& out)
      : data_bytes_(data_bytes), limits_(limits), out_(out) {}

  std::optional<Error> error;

  // nlohmann's SAX interface; returning false stops the parse.
  bool null() { return value_kind("null"); }
  bool boolean(bool) { return value_kind("a boolean"); }
  bool number_integer(json::number_integer_t v) {
    if (v >= 0) return number_unsigned(static_cast<uint64_t>(v));
    return value_kind("a negative number");
  }
  bool number_float(json::number_float_t, const std::string&) { return value_kind("a non-integer number"); }
  bool binary(json::binary_t&) { return value_kind("binary data"); }

  bool number_unsigned(json::number_unsigned_t v) {
    switch (state_) {
      case State::kShape:
        if (tensor_.shape.size() == kMaxTensorDims) {
          return stop(who() + ": more than " + std::to_string(kMaxTensorDims) + " dimensions");
        }
        tensor_.shape.push_back(v);
        return true;
      case State::kOffsets:
        if (offsets_seen_ == 2) return stop(who() + ": data_offsets must be two unsigned integers");
        (offsets_seen_ == 0 ? tensor_.begin : tensor_.end) = v;
        ++offsets_seen_;
        return true;
      default:
        return value_kind("a number");
    }
  }

  bool string(json::string_t& s) {
    if (state_ == State::kTensor && field_ == Field::kDtype) {
      auto dtype = dtype_from_name(s);
      if (!dtype) return stop(who() + ": unknown dtype " + shown(s));
      tensor_.dtype = *dtype;
      return true;
    }
    if (state_ == State::kMetadata) {
      out_.metadata.emplace(std::move(meta_key_), std::move(s));
      return true;
    }
    return value_kind("a string");
  }

  bool start_object(size_t) {
    switch (state_) {
      case State::kStart:
        state_ = State::kTop;
        return true;
      case State::kTop:
        if (in_metadata_) {
          state_ = State::kMetadata;
          inner_keys_.clear();
          return true;
        }
        state_ = State::kTensor;
        inner_keys_.clear();
        offsets_seen_ = 0;
        have_ = 0;
        return true;
      default:
        return value_kind("an object");
    }
  }

  bool end_object() {
    switch (state_) {
      case State::kTensor:
        state_ = State::kTop;
        return finish_tensor();
      case State::kMetadata:
        state_ = State::kTop;
        in_metadata_ = false;
        return true;
      case State::kTop:
        state_ = State::kDone;
        return true;
      default:
        return stop("unexpected end of an object");
    }
  }

  bool start_array(size_t) {
    if (state_ == State::kTensor && field_ == Field::kShape) {
      state_ = State::kShape;
      return true;
    }
    if (state_ == State::kTensor && field_ == Field::kOffsets) {
      state_ = State::kOffsets;
      return true;
    }
    return value_kind("an array");
  }

  bool end_array() {
    if (state_ == State::kShape) {
      state_ = State::kTensor;
      return true;
    }
    if (state_ == State::kOffsets) {
      state_ = State::kTensor;
      if (offsets_seen_ != 2) return stop(who() + ": data_offsets must be two unsigned integers");
      return true;
    }
    return stop("unexpected end of an array");
  }

  bool key(json::string_t& k) {
    if (state_ == State::kTop) return top_key(k);
    if (state_ == State::kMetadata) {
      if (!inner_keys_.insert(k).second) return stop("duplicate key " + shown(k) + " in __metadata__");
      if (out_.metadata.size() >= limits_.max_metadata_entries) {
        return stop("__metadata__ has more than " + std::to_string(limits_.max_metadata_entries) + " entries");
      }
      meta_key_ = std::move(k);
      return true;
    }
    if (state_ != State::kTensor) return stop("unexpected key");
    if (!inner_keys_.insert(k).second) return stop(who() + ": duplicate key " + shown(k));
    if (k == "dtype") {
      field_ = Field::kDtype;
    } else if (k == "shape") {
      field_ = Field::kShape;
    } else if (k == "data_offsets") {
      field_ = Field::kOffsets;
    } else {
      return stop(who() + ": unknown field " + shown(k));
    }
    have_ |= 1u << static_cast<unsigned>(field_);
    return true;
  }

  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception&) {
    // nlohmann's message quotes the bytes it choked on; the position is enough.
    return stop("header is not valid JSON (at byte " + std::to_string(position) + ")");
  }

 private:
  enum class State { kStart, kTop, kTensor, kShape, kOffsets, kMetadata, kDone };
  enum class Field : unsigned { kDtype = 0, kShape = 1, kOffsets = 2 };

  bool stop(std::string message) {
    if (!error) error = Error{EBADMSG, std::move(message)};
    return false;
  }
  std::string who() const { return "tensor '" + tensor_.name + "'"; }

  // A value of the wrong kind, reported as the field it was found in.
  bool value_kind(const char* kind) {
    switch (state_) {
      case State::kTop:
        if (in_metadata_) return stop("__metadata__ is not an object");
        return stop("tensor '" + tensor_.name + "': entry is not an object (" + kind + ")");
      case State::kTensor:
        if (field_ == Field::kDtype) return stop(who() + ": missing or non-string dtype");
        if (field_ == Field::kShape) return stop(who() + ": missing or non-array shape");
        return stop(who() + ": data_offsets must be two unsigned integers");
      case State::kShape:
        return stop(who() + ": shape holds a non-integer or negative dimension (" + kind + ")");
      case State::kOffsets:
        return stop(who() + ": data_offsets must be two unsigned integers");
      case State::kMetadata:
        return stop("__metadata__ value of " + shown(meta_key_) + " is not a string");
      default:
        return stop(std::string("header is not a JSON object (") + kind + ")");
    }
  }

  bool top_key(json::string_t& k) {
    if (!top_keys_.insert(k).second) return stop("duplicate key " + shown(k) + " in the header");
    if (k == "__metadata__") {
      in_metadata_ = true;
      return true;
    }
    if (++tensor_count_ > limits_.max_tensors) {
      return stop("header names more than " + std::to_string(limits_.max_tensors) + " tensors (at most " +
                  std::to_string(limits_.max_tensors) + ")");
    }
    if (k.empty()) return stop("empty tensor name");
    if (k.size() > limits_.max_name_bytes) {
      return stop("tensor name longer than " + std::to_string(limits_.max_name_bytes) + " bytes");
    }
    if (const ptrdiff_t at = control_byte_at(k); at >= 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(k[static_cast<size_t>(at)]));
      return stop("tensor name " + std::to_string(tensor_count_) + " holds a control byte (" + byte +
                  " at offset " + std::to_string(at) + ")");
    }
    tensor_ = TensorInfo{};
    tensor_.name = std::move(k);
    return true;
  }

  bool finish_tensor() {
    if (!(have_ & (1u << static_cast<unsigned>(Field::kDtype)))) return stop(who() + ": missing or non-string dtype");
    if (!(have_ & (1u << static_cast<unsigned>(Field::kShape)))) return stop(who() + ": missing or non-array shape");
    if (!(have_ & (1u << static_cast<unsigned>(Field::kOffsets)))) {
      return stop(who() + ": data_offsets must be two unsigned integers");
    }
    uint64_t elements = 1;
    for (uint64_t dim : tensor_.shape) {
      if (mul_overflows(elements, dim, &elements)) return stop(who() + ": shape element count overflows");
    }
    uint64_t expect_bytes = 0;
    if (mul_overflows(elements, dtype_size(tensor_.dtype), &expect_bytes)) {
      return stop(who() + ": shape byte count overflows");
    }
    const TensorInfo& t = tensor_;
    if (t.end < t.begin) return stop(who() + ": data_offsets end before begin");
    if (t.end > data_bytes_) {
      return stop(who() + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                  ") past the data section (" + std::to_string(data_bytes_) + " bytes)");
    }
    if (t.end - t.begin != expect_bytes) {
      return stop(who() + ": data_offsets span " + std::to_string(t.end - t.begin) + " bytes, dtype " +
                  std::string(dtype_name(t.dtype)) + " and shape need " + std::to_string(expect_bytes));
    }
    out_.tensors.push_back(std::move(tensor_));
    tensor_ = TensorInfo{};
    return true;
  }

  const uint64_t data_bytes_;
  const ParseLimits& limits_;
  SafetensorsHeader& out_;
  State state_ = State::kStart;
  Field field_ = Field::kDtype;
  bool in_metadata_ = false;
  unsigned have_ = 0;  // bit per Field seen in the current tensor
  size_t offsets_seen_ = 0;
  size_t tensor_count_ = 0;
  TensorInfo tensor_;
  std::string meta_key_;
  std::unordered_set<std::string> top_keys_;
  std::unordered_set<std::string> inner_keys_;
};

}  // namespace

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<uint64_t> parse_header_size(std::span<const std::byte> prefix, uint64_t file_size,
                                   const ParseLimits& limits) {
  if (prefix.size() < kSafetensorsPrefixBytes || file_size < kSafetensorsPrefixBytes) {
    return bad("file shorter than the 8-byte header length");
  }
  uint64_t n = 0;
  for (size_t i = 0; i < kSafetensorsPrefixBytes; ++i) {
    n |= static_cast<uint64_t>(prefix[i]) << (8 * i);
  }
  // The value itself stays out of the messages: the 8 bytes of a file that
  // is not a safetensors file are whatever it holds (text, a key...).
  if (n < 2) return bad("header length too small for a JSON object");
  if (n > limits.max_header_bytes) {
    return bad("header length over the limit of " + std::to_string(limits.max_header_bytes) + " bytes");
  }
  if (n > file_size - kSafetensorsPrefixBytes) {
    return bad("header length past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  return n;
}

Result<SafetensorsHeader> parse_header(std::string_view text, uint64_t file_size, const ParseLimits& limits) {
  if (text.size() > limits.max_header_bytes) return bad("header over the size limit");
  if (file_size < kSafetensorsPrefixBytes + text.size()) return bad("header past the end of the file");
  if (text.empty() || text.front() != '{') return bad("header does not start with '{'");

  SafetensorsHeader h;
  h.header_bytes = text.size();
  h.data_offset = kSafetensorsPrefixBytes + text.size();
  h.data_bytes = file_size - h.data_offset;
  HeaderHandler handler(h.data_bytes, limits, h);
  const bool parsed = json::sax_parse(text.data(), text.data() + text.size(), &handler);
  if (handler.error) return tl::unexpected(*handler.error);
  if (!parsed) return bad("header is not valid JSON");

  std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.name < b.name;
  });
  const TensorInfo* prev = nullptr;
  for (const auto& t : h.tensors) {
    if (t.bytes() == 0) continue;
    if (prev && t.begin < prev->end) {
      return bad("tensors '" + prev->name + "' and '" + t.name + "' overlap at data offset " +
                 std::to_string(t.begin));
    }
    prev = &t;
  }
  return h;
}

}  // namespace cxlpool::weights
