// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_safetensors_decode: valid files (tensors,
// metadata, scalars, empty tensors, padding) and near misses that each break
// one rule the parser enforces.
//   fuzz_safetensors_seed DIR          write DIR/<name>.safetensors
//   fuzz_safetensors_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <cstdint>
#include <string>
#include <vector>

#include "seed_corpus.hpp"

namespace {

using cxlpool::fuzz::Seed;

// prefix + json + `data` zero bytes.
std::vector<std::byte> file_of(const std::string& json, size_t data) {
  std::vector<std::byte> out;
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((n >> (8 * i)) & 0xff));
  for (const char c : json) out.push_back(static_cast<std::byte>(c));
  out.resize(out.size() + data, std::byte{0});
  return out;
}

std::vector<Seed> seeds() {
  const std::string a = R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]})";
  const std::string b = R"("model.layers.0.w":{"dtype":"BF16","shape":[4],"data_offsets":[16,24]})";
  std::vector<Seed> out;
  out.push_back({"two.safetensors", file_of("{" + a + "," + b + "}", 24)});
  out.push_back({"metadata.safetensors",
                 file_of(R"({"__metadata__":{"format":"pt","k":"v"},)" + a + "}", 16)});
  out.push_back({"scalar-empty-padded.safetensors",
                 file_of(R"({"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
                         R"("e":{"dtype":"F16","shape":[0,3],"data_offsets":[8,8]}}      )",
                         8)});
  out.push_back({"empty-object.safetensors", file_of("{}", 0)});
  // Near misses.
  out.push_back({"duplicate.safetensors", file_of("{" + a + "," + a + "}", 16)});
  out.push_back({"nul-name.safetensors",
                 file_of(R"({"a\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1)});
  out.push_back({"overlap.safetensors",
                 file_of(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                         R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                         6)});
  out.push_back({"dtype.safetensors", file_of(R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", 4)});
  out.push_back({"shape-size.safetensors",
                 file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)});
  out.push_back({"dims.safetensors",
                 file_of(R"({"a":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1)});
  out.push_back({"past-data.safetensors", file_of(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", 4)});
  out.push_back({"unknown-field.safetensors",
                 file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[]}})", 1)});
  out.push_back({"not-json.safetensors", file_of(R"({"a":{"dtype":"U8",)", 0)});
  auto text = std::vector<std::byte>();
  for (const char c : std::string("password is not a safetensors file")) text.push_back(static_cast<std::byte>(c));
  out.push_back({"text-file.safetensors", text});
  auto truncated = file_of("{" + a + "}", 16);
  truncated.resize(20);
  out.push_back({"truncated.safetensors", truncated});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
