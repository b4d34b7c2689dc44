// SPDX-License-Identifier: Apache-2.0
#include "seed_corpus.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace cxlpool::fuzz {
namespace {

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

}  // namespace

int seed_corpus_main(int argc, char** argv, const std::vector<Seed>& seeds) {
  const bool check = argc == 3 && std::strcmp(argv[1], "--check") == 0;
  if (!(argc == 2 || check)) {
    std::fprintf(stderr, "usage: %s [--check] DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir(argv[argc - 1]);
  int bad = 0;
  for (const Seed& seed : seeds) {
    const auto path = dir / seed.file;
    if (check) {
      if (read_file(path) != seed.bytes) {
        std::fprintf(stderr, "%s is missing or stale; regenerate with %s %s\n", path.c_str(), argv[0], dir.c_str());
        ++bad;
      }
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(seed.bytes.data()), static_cast<std::streamsize>(seed.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}

}  // namespace cxlpool::fuzz
