// SPDX-License-Identifier: Apache-2.0
// ioengine=null, as fio's: no file is opened and every request completes at
// once with all its bytes, so a job measures cxlpool-io's own per-I/O cost
// (offset generation, rate limiting, statistics) and nothing of a device.
#pragma once

#include <memory>

#include "engine.hpp"

namespace cxlpool::io {

// The target's size (the job's offset + size) is the pretend device's size.
Result<std::unique_ptr<Engine>> open_null_engine(const JobSpec& job, const EngineTarget& target);

}  // namespace cxlpool::io
