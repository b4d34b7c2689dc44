// SPDX-License-Identifier: Apache-2.0
// The checks the codec tests of this folder share. A valid message encodes
// to the documented bytes and decodes back to itself. In a rejection the
// encoder refuses an invalid message with EINVAL, the decoder refuses
// malformed bytes with the expected errno, and either way the error message
// names the field, so an operator reading a log knows which field was wrong.
#pragma once

#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::proto::testing {

namespace detail {
inline void expect_round_trip(const Message& message, uint32_t request_id,
                              const std::optional<std::vector<std::byte>>& expected) {
  auto bytes = encode(request_id, message);
  ASSERT_TRUE(bytes) << bytes.error().message;
  if (expected) { EXPECT_EQ(*bytes, *expected); }
  auto decoded = decode(*bytes);
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(decoded->message, message);
}
}  // namespace detail

inline void expect_round_trip(const Message& message, uint32_t request_id = 7) {
  detail::expect_round_trip(message, request_id, std::nullopt);
}

// Also checks the bytes: `expected` is the documented layout, written
// independently of the codec.
inline void expect_wire_form(const Message& message, const std::vector<std::byte>& expected,
                             uint32_t request_id = 7) {
  detail::expect_round_trip(message, request_id, expected);
}

inline void expect_mentions(const Error& error, std::string_view needle) {
  EXPECT_NE(error.message.find(needle), std::string::npos)
      << "message \"" << error.message << "\" does not mention \"" << needle << "\"";
}

inline void expect_encode_refused(const Message& message, std::string_view needle) {
  auto bytes = encode(1, message);
  ASSERT_FALSE(bytes) << "encoded an invalid message";
  EXPECT_EQ(bytes.error().code, EINVAL) << bytes.error().message;
  expect_mentions(bytes.error(), needle);
}

// `error_message`, when given, receives the decoder's message (for the test report).
inline void expect_decode_refused(std::span<const std::byte> datagram, int code, std::string_view needle,
                                  std::string* error_message = nullptr) {
  auto decoded = decode(datagram);
  ASSERT_FALSE(decoded) << "decoded a malformed message";
  EXPECT_EQ(decoded.error().code, code) << decoded.error().message;
  expect_mentions(decoded.error(), needle);
  if (error_message != nullptr) *error_message = decoded.error().message;
}

// Names each instance of a parameterized test by its case's `label`.
struct CaseLabel {
  template <typename Case>
  std::string operator()(const ::testing::TestParamInfo<Case>& info) const {
    return info.param.label;
  }
};

}  // namespace cxlpool::proto::testing
