// SPDX-License-Identifier: Apache-2.0
// ioengine=cuda: file I/O whose data lives on the GPU side, over an inner
// hal::BlockDevice (io_uring, else posix; direct= as the job says).
//   mem=cudahost   (default) buffers are pinned host memory (cuMemHostAlloc):
//                  the file I/O lands straight in memory the GPU can DMA.
//   mem=cudadevice every buffer has a device twin: a read completes after
//                  file -> pinned bounce -> async H2D copy; a write first
//                  copies D2H into the bounce and then writes it. The copies
//                  are on one CUDA stream and overlap other requests' I/O.
//                  The bytes a write stores are the device buffer's, so
//                  verify= is refused for writing jobs with this mode.
// Errors: ENODEV "cuda: no CUDA device (<driver's reason>)" when the driver
// is missing or cuInit fails, so callers can skip; EINVAL for a bad mem=.
#pragma once

#include <memory>

#include "engine.hpp"

namespace cxlpool::io {

Result<std::unique_ptr<Engine>> open_cuda_engine(const JobSpec& job, const EngineTarget& target);

}  // namespace cxlpool::io
