// SPDX-License-Identifier: Apache-2.0
// ioengine=kvstore: characterizes cxlpoold's KV-cache store end to end. Each
// I/O is one chunk of the request's size whose key derives from the chunk
// index (offset / length): a read is get (lease) + copy out + release, a
// write is put_begin + copy in + put_commit. A read of a chunk the store does
// not hold completes with 0 bytes (a short read), so a read job after a
// write job of the same layout measures hits. Requests go through the
// store's asynchronous rings, iodepth deep.
//
// Engine options: kv_socket (default: libcxlpool's default socket),
// kv_namespace (the namespace's model id, default "cxlpool-io"),
// kv_chunk_tokens (tokens per chunk for key derivation, default 256).
#pragma once

#include <memory>

#include "engine.hpp"

namespace cxlpool::io {

// ECONNREFUSED/ENOENT when no cxlpoold listens, ENOTSUP when it runs without
// a KV store, EMSGSIZE (at I/O time) for a chunk over the store's slot size.
Result<std::unique_ptr<Engine>> open_kvstore_engine(const JobSpec& job, const EngineTarget& target);

}  // namespace cxlpool::io
