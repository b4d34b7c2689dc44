// SPDX-License-Identifier: Apache-2.0
#include "model_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "cxlpool/weights/safetensors.hpp"
#include "cxlpool/weights/safetensors_writer.hpp"

namespace cxlpool::infer {

namespace {

std::string file_name(uint32_t index, uint32_t files) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05u-of-%05u.safetensors", index + 1, files);
  return buf;
}

// Which file holds a layer: layers split into `files` contiguous runs.
uint32_t file_of_layer(uint32_t layer, uint32_t layers, uint32_t files) {
  return static_cast<uint32_t>(uint64_t{layer} * files / layers);
}

int32_t layer_of(const ModelConfig& config, const std::string& name) {
  for (uint32_t l = 0; l < config.layers; ++l)
    if (name.rfind("model.layers." + std::to_string(l) + ".", 0) == 0) return static_cast<int32_t>(l);
  return -1;
}

Result<void> read_exact(int fd, void* buf, size_t bytes, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno("read " + path);
    if (n == 0) return fail(EIO, "read " + path + ": file ends early");
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> write_model_files(const ModelConfig& config, const std::vector<HostTensor>& tensors,
                                                   const std::string& dir, uint32_t files) {
  if (files == 0 || files > config.layers) return fail(EINVAL, "model files: need 1..layers files");
  std::vector<weights::SafetensorsWriter> writers(files);
  for (const HostTensor& t : tensors) {
    const int32_t layer = layer_of(config, t.spec.name);
    const uint32_t index = layer < 0 ? 0 : file_of_layer(static_cast<uint32_t>(layer), config.layers, files);
    if (auto r = writers[index].add_f32(t.spec.name, t.spec.shape, t.data); !r)
      return fail(r.error().code, "model files: " + r.error().message);
  }
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < files; ++i) {
    writers[i].set_metadata("format", "pt");
    writers[i].set_metadata("producer", "cxlpool-infer");
    const std::string path = dir + "/" + file_name(i, files);
    if (auto r = writers[i].write_file(path); !r) return tl::unexpected(r.error());
    paths.push_back(path);
  }
  return paths;
}

Result<PlainModel> read_model_files(const ModelConfig& config, const std::vector<std::string>& paths) {
  PlainModel model;
  for (const std::string& path : paths) {
    auto header = weights::read_header_file(path);
    if (!header) return tl::unexpected(header.error());
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("open " + path);
    for (const weights::TensorInfo& t : header->tensors) {
      if (t.dtype != weights::Dtype::kF32) {
        ::close(fd);
        return fail(EINVAL, path + ": tensor " + t.name + " is not F32");
      }
      std::vector<float> data(t.bytes() / sizeof(float));
      if (auto r = read_exact(fd, data.data(), t.bytes(), header->tensor_offset_in_file(t), path); !r) {
        ::close(fd);
        return tl::unexpected(r.error());
      }
      model.tensors[t.name] = std::move(data);
    }
    ::close(fd);
  }
  for (const TensorSpec& spec : all_tensor_specs(config)) {
    auto it = model.tensors.find(spec.name);
    if (it == model.tensors.end()) return fail(ENOENT, "model files: no tensor " + spec.name);
    if (it->second.size() != spec.elements()) return fail(EINVAL, "model files: tensor " + spec.name + " has the wrong size");
  }
  return model;
}

Result<PlainWeights> PlainWeights::create(const ModelConfig& config, const PlainModel& model) {
  PlainWeights w;
  auto find = [&](const TensorSpec& spec) -> const float* {
    auto it = model.tensors.find(spec.name);
    return it == model.tensors.end() || it->second.size() != spec.elements() ? nullptr : it->second.data();
  };
  for (size_t g = 0; g < kGlobalTensorCount; ++g) {
    const TensorSpec spec = global_tensor_spec(config, static_cast<GlobalTensor>(g));
    w.globals_.tensors[g] = find(spec);
    if (w.globals_.tensors[g] == nullptr) return fail(ENOENT, "weights: no tensor " + spec.name);
  }
  w.layers_.resize(config.layers);
  for (uint32_t l = 0; l < config.layers; ++l) {
    for (size_t t = 0; t < kLayerTensorCount; ++t) {
      const TensorSpec spec = layer_tensor_spec(config, l, static_cast<LayerTensor>(t));
      w.layers_[l].tensors[t] = find(spec);
      if (w.layers_[l].tensors[t] == nullptr) return fail(ENOENT, "weights: no tensor " + spec.name);
    }
  }
  return w;
}

Result<LayerWeights> PlainWeights::acquire(uint32_t layer) {
  if (layer >= layers_.size()) return fail(EINVAL, "weights: no layer " + std::to_string(layer));
  return layers_[layer];
}

}  // namespace cxlpool::infer
