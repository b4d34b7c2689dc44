// SPDX-License-Identifier: Apache-2.0
// hal::open_block_device: the one place that chooses a block engine.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/block_driver.hpp"

namespace cxlpool::hal {
namespace {

bool engine_refused(const BackendDescriptor& d, const Error& error) {
  const auto* ops = backend_ops<BlockEngineOps>(d);
  if (ops != nullptr && ops->refused != nullptr) return ops->refused(error);
  return error.code == ENOSYS || error.code == EPERM || error.code == EOPNOTSUPP;
}

Result<std::unique_ptr<BlockDevice>> open_once(std::string_view backend, const std::string& path,
                                               const BlockOpenOptions& options, BackendSkips* skipped) {
  return open_backend<std::unique_ptr<BlockDevice>>(
      BackendClass::kBlockEngine, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<BlockEngineOps, &BlockEngineOps::open>(d, "no block device implementation", path,
                                                                     options);
      },
      engine_refused);
}

}  // namespace

Result<std::unique_ptr<BlockDevice>> open_block_device(std::string_view backend, const std::string& path,
                                                       const BlockOpenOptions& options, BackendSkips* skipped) {
  auto device = open_once(backend, path, options, skipped);
  if (device || !options.direct || !options.buffered_fallback || device.error().code != EINVAL) return device;
  // The file system has no O_DIRECT: buffered I/O still works.
  BlockOpenOptions buffered = options;
  buffered.direct = false;
  if (skipped != nullptr) skipped->push_back({std::string(kDirectIoSkip), device.error().message});
  return open_once(backend, path, buffered, skipped);
}

}  // namespace cxlpool::hal
