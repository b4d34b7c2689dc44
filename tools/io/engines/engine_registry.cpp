// SPDX-License-Identifier: Apache-2.0
// open_engine: the ioengine name to its implementation. cuda and kvstore are
// built only when their sources are part of this build (their meson blocks
// define CXLPOOL_IO_HAVE_CUDA_ENGINE / CXLPOOL_IO_HAVE_KVSTORE_ENGINE).
#include "block_engine.hpp"
#include "engine.hpp"

#if CXLPOOL_IO_HAVE_CUDA_ENGINE
#include "cuda_engine.hpp"
#endif
#if CXLPOOL_IO_HAVE_KVSTORE_ENGINE
#include "kvstore_engine.hpp"
#endif

namespace cxlpool::io {

Result<std::unique_ptr<Engine>> open_engine(const JobSpec& job, const EngineTarget& target) {
  if (is_block_engine(job.ioengine)) return open_block_engine(job, target);
  if (job.ioengine == "cuda") {
#if CXLPOOL_IO_HAVE_CUDA_ENGINE
    return open_cuda_engine(job, target);
#else
    return fail(ENODEV, "cuda: engine not part of this build");
#endif
  }
  if (job.ioengine == "kvstore") {
#if CXLPOOL_IO_HAVE_KVSTORE_ENGINE
    return open_kvstore_engine(job, target);
#else
    return fail(ENOTSUP, "kvstore: engine not part of this build");
#endif
  }
  return fail(EINVAL, "unknown ioengine '" + job.ioengine + "'");
}

}  // namespace cxlpool::io
