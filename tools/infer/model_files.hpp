// SPDX-License-Identifier: Apache-2.0
// The model on disk: safetensors files written with lib/weights' writer, and
// read back with plain file reads into process-private buffers for the
// reference path (the runtime path has the daemon load the same files).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "model_config.hpp"
#include "random_model.hpp"
#include "weight_source.hpp"

namespace cxlpool::infer {

// Writes the tensors into `files` safetensors files in `dir`
// (model-0000i-of-0000n.safetensors): the global tensors in the first, the
// layers split evenly. Returns the absolute paths in order.
Result<std::vector<std::string>> write_model_files(const ModelConfig& config, const std::vector<HostTensor>& tensors,
                                                   const std::string& dir, uint32_t files);

// Every f32 tensor of the files, by name, checked against the config's shapes.
struct PlainModel {
  std::map<std::string, std::vector<float>> tensors;
};
Result<PlainModel> read_model_files(const ModelConfig& config, const std::vector<std::string>& paths);

// A WeightSource over a PlainModel (which must outlive it).
class PlainWeights final : public WeightSource {
 public:
  static Result<PlainWeights> create(const ModelConfig& config, const PlainModel& model);
  const GlobalWeights& globals() const override { return globals_; }
  Result<LayerWeights> acquire(uint32_t layer) override;
  Result<void> release(uint32_t) override { return {}; }

 private:
  GlobalWeights globals_;
  std::vector<LayerWeights> layers_;
};

}  // namespace cxlpool::infer
