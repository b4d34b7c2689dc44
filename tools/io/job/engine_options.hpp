// SPDX-License-Identifier: Apache-2.0
// The engines a job may name and the options that belong to one engine only
// (kept as strings in JobSpec::engine_options and read by that engine).
#pragma once

#include <span>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

// psync, libaio, io_uring, mmap, cuda, kvstore, devpool.
std::span<const std::string_view> engine_names();
bool is_engine_name(std::string_view name);

// True when some engine declares `key` (it is then stored in engine_options
// and checked against the job's engine once that is known).
bool is_engine_option(std::string_view key);

// The engine that declares `key` (for messages), or "" when none does.
std::string_view engine_of_option(std::string_view key);

// EINVAL with the reason when `key` is not an option of `engine` or `value`
// is not valid for it. Options and values:
//   cuda:    mem=cudahost|cudadevice (target buffers; default cudahost)
//   kvstore: kv_socket=PATH (default: libcxlpool's default socket),
//            kv_namespace=NAME (model id of the namespace; default "cxlpool-io"),
//            kv_chunk_tokens=N (tokens per chunk for key derivation; default 256)
//   devpool: devpool_link=PATH (the link file; default: the job's filename),
//            devpool_timeout_ms=N (a silent backend is dead after N ms; default 10000)
Result<void> check_engine_option(std::string_view engine, std::string_view key, std::string_view value);

}  // namespace cxlpool::io
