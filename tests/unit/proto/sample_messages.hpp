// SPDX-License-Identifier: Apache-2.0
// One valid message of every type, with every field set to a non-default
// value. Shared by the codec tests and the fuzz seed generator.
#pragma once

#include <vector>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::proto::testing {

// Index i holds the Message alternative with index i.
std::vector<Message> sample_messages();

// A request id that is not 0 and has a distinct value in each byte.
inline constexpr uint32_t kSampleRequestId = 0x0a0b0c0d;

}  // namespace cxlpool::proto::testing
