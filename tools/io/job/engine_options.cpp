// SPDX-License-Identifier: Apache-2.0
#include "engine_options.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "value_parsers.hpp"

namespace cxlpool::io {
namespace {

constexpr std::array<std::string_view, 9> kEngines = {"psync", "sync", "libaio", "io_uring", "mmap", "null",
                                                      "cuda", "kvstore", "devpool"};

struct EngineOption {
  std::string_view engine;
  std::string_view key;
  Result<void> (*check)(std::string_view value);
};

Result<void> check_positive(std::string_view value) {
  auto n = parse_uint(value);
  if (!n) return tl::unexpected(n.error());
  if (*n == 0 || *n > 0xffffffffu) return fail(EINVAL, "must be between 1 and 4294967295");
  return {};
}

Result<void> check_non_empty(std::string_view value) {
  if (trim(value).empty()) return fail(EINVAL, "needs a value");
  return {};
}

Result<void> check_cuda_mem(std::string_view value) {
  value = trim(value);
  if (value == "cudahost" || value == "cudadevice") return {};
  return fail(EINVAL, "'" + std::string(value) + "' is not cudahost or cudadevice");
}

constexpr std::array<EngineOption, 9> kOptions = {{
    {"cuda", "mem", check_cuda_mem},
    {"kvstore", "kv_socket", check_non_empty},
    {"kvstore", "kv_namespace", check_non_empty},
    {"kvstore", "kv_chunk_tokens", check_positive},
    {"devpool", "devpool_link", check_non_empty},
    {"devpool", "devpool_timeout_ms", check_positive},
    {"devpool", "devpool_socket", check_non_empty},
    {"devpool", "devpool_host", check_non_empty},
    {"devpool", "devpool_device", check_non_empty},
}};

}  // namespace

std::span<const std::string_view> engine_names() { return kEngines; }

bool is_engine_name(std::string_view name) {
  return std::find(kEngines.begin(), kEngines.end(), name) != kEngines.end();
}

bool is_engine_option(std::string_view key) { return !engine_of_option(key).empty(); }

std::string_view engine_of_option(std::string_view key) {
  for (const auto& option : kOptions) {
    if (option.key == key) return option.engine;
  }
  return {};
}

Result<void> check_engine_option(std::string_view engine, std::string_view key, std::string_view value) {
  for (const auto& option : kOptions) {
    if (option.key != key) continue;
    if (option.engine != engine) {
      return fail(EINVAL, "not an option of ioengine=" + std::string(engine) + " (only of ioengine=" +
                              std::string(option.engine) + ")");
    }
    return option.check(value);
  }
  return fail(EINVAL, "unknown");
}

}  // namespace cxlpool::io
