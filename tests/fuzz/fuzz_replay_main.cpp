// SPDX-License-Identifier: Apache-2.0
// Runs a libFuzzer target's LLVMFuzzerTestOneInput over saved inputs without
// libFuzzer, so every build replays the corpus and any past crash files.
// Usage: <program> FILE|DIR...   (directories: every regular file in them)
// Exits 1 when an input cannot be read or no input was found at all.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else {
      inputs.push_back(arg);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIR... (no inputs found)\n", argc > 0 ? argv[0] : "replay");
    return 1;
  }
  for (const auto& path : inputs) {
    if (!run_file(path)) return 1;
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
