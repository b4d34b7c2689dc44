// SPDX-License-Identifier: Apache-2.0
// Everything the runtime path holds from the daemon, opened through the
// public API only: the connection, the model's shared weights and a layer
// streamer over them, the KV store's data path and namespace, and a KV arena.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arena_kv.hpp"
#include "client_handles.hpp"
#include "model_config.hpp"
#include "streamed_weights.hpp"

namespace cxlpool::infer {

struct RuntimeOptions {
  std::string socket;                      // "": the library's default
  std::string model_name;                  // the daemon's name for the weights
  std::vector<std::string> model_paths;    // absolute
  uint64_t weights_resident_bytes = 0;     // 0: every layer in the shared region
  uint32_t stream_buffers = 3;
  uint32_t prefetch_depth = 2;
  uint64_t pinned_bytes = 0;
  uint64_t page_bytes = 64 << 10;
  uint64_t region_bytes = 0;               // 0: the arena's default
  uint64_t memory_limit_bytes = 0;         // 0: none
  uint32_t chunk_tokens = 32;
  uint32_t tier_id = UINT32_MAX;
  bool async_step = true;
  bool keep_cache = false;                 // leave the offloaded chunks in the store
  bool keep_model = false;                 // leave the model loaded in the daemon at the end
  std::string namespace_id;                // the KV namespace's model id
};

struct RuntimeSession {
  ClientHandle client;
  // The KV store's data path has a connection of its own: the daemon keeps
  // a connection's KV-store session until the connection closes, so closing
  // the store for a checkpoint closes this connection, and the store is
  // opened again on a new one.
  ClientHandle kv_client;
  WeightsHandle weights;
  StreamerHandle streamer;
  KvHandle kv;
  ArenaHandle arena;
  cxlpool_kv_namespace ns{};
  std::optional<StreamedWeights> weight_source;
  std::optional<ArenaKvCache> kv_cache;
  bool loaded_weights = false;
  uint64_t weight_bytes = 0;  // every tensor
  uint64_t resident_bytes = 0; // tensors in the shared region

  // Closes the arena, the store's data path and the streamer, and unloads the
  // model this session loaded. Safe to call twice.
  Result<void> close(const RuntimeOptions& options);
  ~RuntimeSession();
};

Result<void> open_session(RuntimeSession& session, const ModelConfig& config, const RuntimeOptions& options,
                          uint32_t max_batch, uint32_t max_context);

// The KV store's data path, its namespace and its connection alone: closed
// before a checkpoint (a checkpoint refuses a KV-store session, whose rings
// and eventfds are the daemon's state of that connection, and a second
// connection) and opened again after the resume. The arena, the weights
// and the main connection stay. Nothing may be in flight on the store when
// it is closed.
void close_kv(RuntimeSession& session);
Result<void> open_kv(RuntimeSession& session, const RuntimeOptions& options);

}  // namespace cxlpool::infer
