// SPDX-License-Identifier: Apache-2.0
// Waiting for something another thread or process does, with a bound so a
// test that would hang fails instead.
#pragma once

#include <chrono>
#include <functional>

namespace cxlpool::test {

// Calls `done` every `step` until it returns true (true) or `timeout` passes
// (false). `done` is checked once more after the last wait.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout,
                std::chrono::milliseconds step = std::chrono::milliseconds(10));

}  // namespace cxlpool::test
