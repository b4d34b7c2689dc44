// SPDX-License-Identifier: Apache-2.0
// Parse time of safetensors headers by tensor count: a header of N one-byte
// U8 tensors named like a model's ("model.layers.L.mlp.wK"), parsed with
// parse_header. Prints one line per count; no thresholds (docs/weights.md
// records the numbers).
//   safetensors_parse_bench [count...]   (default: 10000 40000 1048576)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cxlpool/weights/safetensors.hpp"

namespace {

std::string header_of(size_t n) {
  std::string json = "{";
  json.reserve(n * 80);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) json += ',';
    json += "\"model.layers." + std::to_string(i / 64) + ".mlp.w" + std::to_string(i % 64) +
            "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" + std::to_string(i) + "," +
            std::to_string(i + 1) + "]}";
  }
  return json + "}";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::strtoull(argv[i], nullptr, 10));
  if (counts.empty()) counts = {10000, 40000, 1u << 20};
  for (size_t n : counts) {
    const std::string json = header_of(n);
    const auto start = std::chrono::steady_clock::now();
    auto h = cxlpool::weights::parse_header(json, 8 + json.size() + n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!h) {
      std::fprintf(stderr, "%zu tensors: %s\n", n, h.error().message.c_str());
      return 1;
    }
    std::printf("%8zu tensors  %10zu header bytes  %9.3f s  %7.1f MB/s\n", n, json.size(), s,
                static_cast<double>(json.size()) / s / 1e6);
  }
  return 0;
}
