// SPDX-License-Identifier: Apache-2.0
#include "streamed_weights.hpp"

#include <algorithm>

namespace cxlpool::infer {

namespace {

Result<void> check_tensor(const cxlpool_weight_tensor& t, const TensorSpec& spec) {
  if (t.dtype != CXLPOOL_DTYPE_F32) return fail(EINVAL, "weights: " + spec.name + " is not f32");
  if (t.ndim != spec.shape.size() || !std::equal(spec.shape.begin(), spec.shape.end(), t.shape))
    return fail(EINVAL, "weights: " + spec.name + " has an unexpected shape");
  if (t.bytes != spec.elements() * sizeof(float)) return fail(EINVAL, "weights: " + spec.name + " has the wrong size");
  return {};
}

}  // namespace

Result<StreamedWeights> StreamedWeights::create(const ModelConfig& config, cxlpool_weights* weights,
                                                cxlpool_weight_streamer* streamer) {
  StreamedWeights w;
  w.streamer_ = streamer;
  for (size_t g = 0; g < kGlobalTensorCount; ++g) {
    const TensorSpec spec = global_tensor_spec(config, static_cast<GlobalTensor>(g));
    cxlpool_weight_tensor t{};
    if (int rc = cxlpool_weights_find(weights, spec.name.c_str(), &t); rc < 0) return api_error("weights: find " + spec.name, rc);
    if (auto r = check_tensor(t, spec); !r) return tl::unexpected(r.error());
    if (t.data == nullptr) return fail(EINVAL, "weights: global tensor " + spec.name + " is not resident");
    w.globals_.tensors[g] = static_cast<const float*>(t.data);
  }
  for (uint32_t l = 0; l < config.layers; ++l) {
    for (size_t k = 0; k < kLayerTensorCount; ++k) {
      const TensorSpec spec = layer_tensor_spec(config, l, static_cast<LayerTensor>(k));
      cxlpool_weight_tensor t{};
      if (int rc = cxlpool_weights_find(weights, spec.name.c_str(), &t); rc < 0) return api_error("weights: find " + spec.name, rc);
      if (auto r = check_tensor(t, spec); !r) return tl::unexpected(r.error());
      if (t.layer != static_cast<int32_t>(l))
        return fail(EINVAL, "weights: " + spec.name + " grouped into layer " + std::to_string(t.layer));
    }
  }
  const int count = cxlpool_weights_count(weights);
  if (count < 0) return api_error("weights: count", count);
  w.role_.assign(static_cast<size_t>(count), LayerTensor::kCount);
  for (int i = 0; i < count; ++i) {
    cxlpool_weight_tensor t{};
    if (int rc = cxlpool_weights_tensor(weights, static_cast<size_t>(i), &t); rc < 0) return api_error("weights: tensor", rc);
    w.role_[static_cast<size_t>(i)] = layer_tensor_from_name(t.name);
  }
  return w;
}

Result<LayerWeights> StreamedWeights::acquire(uint32_t layer) {
  cxlpool_streamed_layer s{};
  if (int rc = cxlpool_weight_streamer_acquire(streamer_, layer, &s); rc < 0)
    return api_error("streamer: acquire layer " + std::to_string(layer), rc);
  LayerWeights out;
  for (uint32_t i = 0; i < s.n_tensors; ++i) {
    const uint32_t index = s.tensor_index[i];
    if (index >= role_.size() || role_[index] == LayerTensor::kCount) continue;
    out.tensors[static_cast<size_t>(role_[index])] = reinterpret_cast<const float*>(static_cast<uintptr_t>(s.data[i]));
  }
  for (const float* p : out.tensors)
    if (p == nullptr) {
      (void)cxlpool_weight_streamer_release(streamer_, layer);
      return fail(EINVAL, "streamer: layer " + std::to_string(layer) + " lacks a tensor the model needs");
    }
  return out;
}

Result<void> StreamedWeights::release(uint32_t layer) {
  if (int rc = cxlpool_weight_streamer_release(streamer_, layer); rc < 0)
    return api_error("streamer: release layer " + std::to_string(layer), rc);
  return {};
}

}  // namespace cxlpool::infer
