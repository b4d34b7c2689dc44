// SPDX-License-Identifier: Apache-2.0
#include "driver_api.hpp"

#include <dlfcn.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

namespace cxlpool::cuda {
namespace {

constexpr const char* kLibcuda = "libcuda.so.1";

// Both signatures of the resolver: cuGetProcAddress_v2 (CUDA 12+) reports why
// a symbol is missing, the original one (11.3+) does not.
using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, cuuint64_t);

struct NamePair {
  std::string_view field;
  std::string_view symbol;
};

constexpr NamePair kNames[] = {
#define CXLPOOL_CUDA_NAME_PAIR(field, symbol, version) {#field, #symbol},
    CXLPOOL_CUDA_DRIVER_FUNCTIONS(CXLPOOL_CUDA_NAME_PAIR)
    CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS(CXLPOOL_CUDA_NAME_PAIR)
    CXLPOOL_CUDA_OPTIONAL_FUNCTIONS(CXLPOOL_CUDA_NAME_PAIR)
#undef CXLPOOL_CUDA_NAME_PAIR
};

const char* query_result_name(CUdriverProcAddressQueryResult status) {
  switch (status) {
    case CU_GET_PROC_ADDRESS_SUCCESS:
      return "found";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND:
      return "symbol not found";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
      return "driver version not sufficient";
  }
  return "unknown status";
}

class Resolver {
 public:
  explicit Resolver(void* handle)
      : v2_(reinterpret_cast<GetProcAddressV2>(dlsym(handle, "cuGetProcAddress_v2"))),
        v1_(v2_ != nullptr
                ? nullptr
                : reinterpret_cast<GetProcAddressV1>(dlsym(handle, "cuGetProcAddress"))) {}

  bool usable() const { return v2_ != nullptr || v1_ != nullptr; }

  // Asks for the ABI `symbol` had in CUDA `version` (see driver_api.hpp).
  Result<void> resolve(const char* symbol, int version, void** slot) const {
    *slot = nullptr;
    CUresult result = CUDA_SUCCESS;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    if (v2_ != nullptr) {
      result = v2_(symbol, slot, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    } else {
      result = v1_(symbol, slot, version, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    if (result == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && *slot != nullptr) {
      return {};
    }
    *slot = nullptr;
    // The driver explains a miss through `status` (its CUresult is then a
    // generic CUDA_ERROR_NOT_FOUND); the CUresult matters only otherwise.
    std::string why = status != CU_GET_PROC_ADDRESS_SUCCESS ? query_result_name(status)
                      : result != CUDA_SUCCESS ? "CUresult " + std::to_string(result)
                                               : "null entry point";
    return fail(ENOSYS, std::string("cuGetProcAddress(") + symbol + "): " + why);
  }

 private:
  GetProcAddressV2 v2_;
  GetProcAddressV1 v1_;
};

Result<DriverApi> load_once() {
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace so
  // they cannot interpose on another copy a framework may load.
  void* handle = dlopen(kLibcuda, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    const std::string reason = why != nullptr ? why : "unknown dlopen error";
    // A missing file means no driver; anything else (a broken install, wrong
    // architecture, missing dependency) is worth showing verbatim.
    if (reason.find("No such file") != std::string::npos) {
      return fail(ENOENT, std::string(kLibcuda) + " not found (no NVIDIA driver)");
    }
    return fail(ELIBBAD, "dlopen " + std::string(kLibcuda) + ": " + reason);
  }
  const Resolver resolver(handle);
  if (!resolver.usable()) {
    return fail(ENOSYS,
                std::string(kLibcuda) + " has no cuGetProcAddress (driver older than CUDA 11.3)");
  }
  DriverApi api;
#define CXLPOOL_CUDA_RESOLVE(field, symbol, version)                                           \
  if (auto r = resolver.resolve(#symbol, version, reinterpret_cast<void**>(&api.field)); !r) { \
    return tl::unexpected(r.error());                                                          \
  }
  CXLPOOL_CUDA_DRIVER_FUNCTIONS(CXLPOOL_CUDA_RESOLVE)
#undef CXLPOOL_CUDA_RESOLVE
  if (const CUresult r = api.driver_get_version(&api.driver_version); r != CUDA_SUCCESS) {
    return tl::unexpected(cu_error(api, "cuDriverGetVersion", r));
  }
#define CXLPOOL_CUDA_RESOLVE_ALONE(field, symbol, version) \
  if (!resolver.resolve(#symbol, version, reinterpret_cast<void**>(&api.field))) api.field = nullptr;
  CXLPOOL_CUDA_OPTIONAL_FUNCTIONS(CXLPOOL_CUDA_RESOLVE_ALONE)
#undef CXLPOOL_CUDA_RESOLVE_ALONE
  // All or nothing: a half-present checkpoint API is as unusable as none.
#define CXLPOOL_CUDA_RESOLVE_OPTIONAL(field, symbol, version)                                 \
  if (api.checkpoint_missing.empty()) {                                                       \
    if (auto r = resolver.resolve(#symbol, version, reinterpret_cast<void**>(&api.field)); !r) { \
      api.checkpoint_missing = r.error().message;                                             \
    }                                                                                         \
  }
  CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS(CXLPOOL_CUDA_RESOLVE_OPTIONAL)
#undef CXLPOOL_CUDA_RESOLVE_OPTIONAL
  if (!api.checkpoint_missing.empty()) {
#define CXLPOOL_CUDA_CLEAR(field, symbol, version) api.field = nullptr;
    CXLPOOL_CUDA_CHECKPOINT_FUNCTIONS(CXLPOOL_CUDA_CLEAR)
#undef CXLPOOL_CUDA_CLEAR
  }
  return api;
}

}  // namespace

Result<const DriverApi*> load_driver_api() {
  static const Result<DriverApi> api = load_once();
  if (!api) return tl::unexpected(api.error());
  return &*api;
}

Result<void> checkpoint_api_available(const DriverApi& api) {
  if (api.checkpoint_missing.empty()) return {};
  const int major = api.driver_version / 1000;
  const int minor = api.driver_version % 1000 / 10;
  return fail(ENOSYS, api.checkpoint_missing +
                          "; the CUDA checkpoint API needs driver 570 (CUDA 12.8) or newer, this "
                          "one is CUDA " +
                          std::to_string(major) + "." + std::to_string(minor));
}

Result<const DriverApi*> init_driver_api() {
  auto api = load_driver_api();
  if (!api) return api;
  static const Result<void> initialised = [&]() -> Result<void> {
    CXLPOOL_CU_TRY(**api, init, 0);
    return {};
  }();
  if (!initialised) return tl::unexpected(initialised.error());
  return api;
}

Error cu_error(const DriverApi& api, const char* call, CUresult result) {
  std::string_view name_of_call = call;
  for (const NamePair& n : kNames) {
    if (n.field == name_of_call) name_of_call = n.symbol;
  }
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.get_error_name == nullptr || api.get_error_name(result, &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  if (api.get_error_string == nullptr || api.get_error_string(result, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  std::string message(name_of_call);
  message += ": ";
  message += name != nullptr ? name : "CUresult " + std::to_string(result);
  if (text != nullptr) message += std::string(" (") + text + ")";

  int code = EIO;
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      code = ENOMEM;
      break;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_DEVICE:
      code = EINVAL;
      break;
    case CUDA_ERROR_NO_DEVICE:
      code = ENODEV;
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      code = ENOTSUP;
      break;
    case CUDA_ERROR_NOT_PERMITTED:
      code = EPERM;
      break;
    case CUDA_ERROR_NOT_FOUND:
      code = ENOENT;
      break;
    default:
      break;
  }
  return Error{code, std::move(message)};
}

}  // namespace cxlpool::cuda
