// SPDX-License-Identifier: Apache-2.0
#include "runtime_session.hpp"

namespace cxlpool::infer {

RuntimeSession::~RuntimeSession() {
  arena.reset();
  kv.reset();
  kv_client.reset();
  streamer.reset();
  weights.reset();
}

Result<void> RuntimeSession::close(const RuntimeOptions& options) {
  kv_cache.reset();
  weight_source.reset();
  arena.reset();
  kv.reset();
  kv_client.reset();
  streamer.reset();
  weights.reset();
  if (loaded_weights && client && !options.keep_model) {
    loaded_weights = false;
    if (int rc = cxlpool_weights_unload(client.get(), options.model_name.c_str()); rc < 0)
      return api_error("weights: unload " + options.model_name, rc);
  }
  return {};
}

namespace {

Result<ClientHandle> connect_client(const RuntimeOptions& o, const char* name) {
  cxlpool_client* client = nullptr;
  if (int rc = cxlpool_connect(o.socket.empty() ? nullptr : o.socket.c_str(), name, &client); rc < 0)
    return api_error("connect to cxlpoold" + (o.socket.empty() ? std::string() : " at " + o.socket), rc);
  return ClientHandle(client);
}

}  // namespace

void close_kv(RuntimeSession& s) {
  s.kv.reset();
  s.kv_client.reset();
  s.ns = {};
}

Result<void> open_kv(RuntimeSession& s, const RuntimeOptions& o) {
  auto client = connect_client(o, "cxlpool-infer-kv");
  if (!client) return tl::unexpected(client.error());
  s.kv_client = std::move(*client);
  cxlpool_kv* kv = nullptr;
  if (int rc = cxlpool_kv_open(s.kv_client.get(), nullptr, &kv); rc < 0) return api_error("kv: open", rc);
  s.kv.reset(kv);
  cxlpool_kv_namespace_spec spec{};
  spec.model_id = o.namespace_id.c_str();
  spec.layout = "cxlpool-arena";
  spec.dtype = "f32";
  spec.tp_rank = 0;
  spec.tp_size = 1;
  spec.chunk_tokens = o.chunk_tokens;
  if (int rc = cxlpool_kv_namespace_open(kv, &spec, &s.ns); rc < 0) return api_error("kv: namespace", rc);
  return {};
}

Result<void> open_session(RuntimeSession& s, const ModelConfig& config, const RuntimeOptions& o, uint32_t max_batch,
                          uint32_t max_context) {
  auto client = connect_client(o, "cxlpool-infer");
  if (!client) return tl::unexpected(client.error());
  s.client = std::move(*client);

  // Weights: the daemon loads the files once into its shared region.
  std::vector<const char*> paths;
  for (const std::string& p : o.model_paths) paths.push_back(p.c_str());
  cxlpool_weights_load_options load{};
  load.tier_id = o.tier_id;
  load.max_resident_bytes = o.weights_resident_bytes;
  cxlpool_weights* weights = nullptr;
  if (int rc = cxlpool_weights_load(s.client.get(), o.model_name.c_str(), paths.data(), paths.size(), &load, &weights);
      rc < 0)
    return api_error("weights: load " + o.model_name, rc);
  s.weights.reset(weights);
  s.loaded_weights = true;
  const int count = cxlpool_weights_count(weights);
  for (int i = 0; i < count; ++i) {
    cxlpool_weight_tensor t{};
    if (cxlpool_weights_tensor(weights, static_cast<size_t>(i), &t) == 0) {
      s.weight_bytes += t.bytes;
      if (t.data != nullptr) s.resident_bytes += t.bytes;
    }
  }

  cxlpool_streamer_config sc{};
  sc.target = CXLPOOL_STREAM_HOST;
  sc.buffers = o.stream_buffers;
  sc.prefetch_depth = o.prefetch_depth;
  sc.pinned_budget_bytes = o.pinned_bytes;
  cxlpool_weight_streamer* streamer = nullptr;
  if (int rc = cxlpool_weight_streamer_create(weights, &sc, &streamer); rc < 0)
    return api_error("weights: streamer", rc);
  s.streamer.reset(streamer);
  auto source = StreamedWeights::create(config, weights, streamer);
  if (!source) return tl::unexpected(source.error());
  s.weight_source.emplace(std::move(*source));

  // The KV store: offloaded and shared-prefix chunks.
  if (auto kv = open_kv(s, o); !kv) return kv;

  cxlpool_kv_arena_config ac{};
  ac.layers = config.layers;
  ac.kv_heads = config.n_kv_heads;
  ac.head_dim = config.head_dim;
  ac.dtype_bytes = sizeof(float);
  ac.max_batch = max_batch;
  ac.max_context = max_context;
  ac.page_bytes = o.page_bytes;
  ac.layout = CXLPOOL_ARENA_LAYOUT_PER_LAYER;
  ac.backend = CXLPOOL_ARENA_BACKEND_HOST;
  ac.tier_id = o.tier_id;
  ac.region_bytes = o.region_bytes;
  ac.memory_limit_bytes = o.memory_limit_bytes;
  ac.async = o.async_step ? 1 : 0;
  cxlpool_kv_arena* arena = nullptr;
  if (int rc = cxlpool_kv_arena_create(s.client.get(), &ac, &arena); rc < 0) return api_error("kv arena: create", rc);
  s.arena.reset(arena);
  auto cache = ArenaKvCache::create(config, arena);
  if (!cache) return tl::unexpected(cache.error());
  s.kv_cache.emplace(std::move(*cache));
  return {};
}

}  // namespace cxlpool::infer
