// SPDX-License-Identifier: Apache-2.0
// kvstore_bench's handover mode: what a put that hands its pages to the
// store instead of having them copied would cost, measured without a daemon
// (the description is kvstore_bench.cpp's).
#pragma once

#include <cstdint>

namespace kvbench {

// Runs the fresh-memfd and the pooled-window handovers of `bytes` against a
// plain memcpy of the same bytes, about a second each, and prints them with
// a RESULT line. Returns the process exit status.
int run_handover(std::uint64_t bytes);

}  // namespace kvbench
