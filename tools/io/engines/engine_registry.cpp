// SPDX-License-Identifier: Apache-2.0
// open_engine: the ioengine name to its implementation. The cuda engine is
// built only with cuda/ (CXLPOOL_HAVE_CUDA).
#include "block_engine.hpp"
#include "cxlpool_build_config.h"
#include "engine.hpp"
#include "kvstore_engine.hpp"

#if CXLPOOL_HAVE_CUDA
#include "cuda_engine.hpp"
#endif

namespace cxlpool::io {

Result<std::unique_ptr<Engine>> open_engine(const JobSpec& job, const EngineTarget& target) {
  if (is_block_engine(job.ioengine)) return open_block_engine(job, target);
  if (job.ioengine == "cuda") {
#if CXLPOOL_HAVE_CUDA
    return open_cuda_engine(job, target);
#else
    return fail(ENODEV, "cuda: not compiled in (" CXLPOOL_HAVE_CUDA_REASON ")");
#endif
  }
  if (job.ioengine == "kvstore") return open_kvstore_engine(job, target);
  return fail(EINVAL, "unknown ioengine '" + job.ioengine + "'");
}

}  // namespace cxlpool::io
