// SPDX-License-Identifier: Apache-2.0
// open_engine: the ioengine name to its implementation. The build compiles
// cuda_engine.cpp where the cuda backend is built and cuda_engine_none.cpp
// (which says why not) elsewhere.
#include "block_engine.hpp"
#include "cuda_engine.hpp"
#include "devpool_engine.hpp"
#include "engine.hpp"
#include "kvstore_engine.hpp"
#include "null_engine.hpp"

namespace cxlpool::io {

Result<std::unique_ptr<Engine>> open_engine(const JobSpec& job, const EngineTarget& target) {
  if (is_block_engine(job.ioengine)) return open_block_engine(job, target);
  if (job.ioengine == "cuda") return open_cuda_engine(job, target);
  if (job.ioengine == "kvstore") return open_kvstore_engine(job, target);
  if (job.ioengine == "devpool") return open_devpool_engine(job, target);
  if (job.ioengine == "null") return open_null_engine(job, target);
  return fail(EINVAL, "unknown ioengine '" + job.ioengine + "'");
}

bool engine_uses_local_files(std::string_view ioengine) { return ioengine != "devpool" && ioengine != "null"; }

void close_engines_shared_state() { close_devpool_links(); }

}  // namespace cxlpool::io
