// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_proto_decode: one valid encoding of every
// message type, plus a Hello from a future version.
//   fuzz_proto_seed DIR          write DIR/<Type>.bin
//   fuzz_proto_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cxlpool/proto/messages.hpp"
#include "sample_messages.hpp"

namespace {

using cxlpool::proto::Hello;

struct Seed {
  std::string file;
  std::vector<std::byte> bytes;
};

std::vector<Seed> seeds() {
  using namespace cxlpool::proto;
  std::vector<Seed> out;
  for (const Message& m : testing::sample_messages()) {
    out.push_back({std::string(message_type_name(message_type(m))) + ".bin",
                   *encode(testing::kSampleRequestId, m)});
  }
  // A newer client's Hello: decodable at any version, appended fields ignored.
  auto future = *encode(1, Hello{.min_version = 1, .max_version = 3, .client_name = "next"}, 3);
  for (const char c : std::string("v3-extension")) future.push_back(static_cast<std::byte>(c));
  const uint32_t payload_length = static_cast<uint32_t>(future.size() - kHeaderSize);
  for (int i = 0; i < 4; ++i) future[12 + i] = static_cast<std::byte>((payload_length >> (8 * i)) & 0xff);
  out.push_back({"Hello-v3.bin", future});
  return out;
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::strcmp(argv[1], "--check") == 0;
  if (!(argc == 2 || check)) {
    std::fprintf(stderr, "usage: %s [--check] DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir(argv[argc - 1]);
  int bad = 0;
  for (const Seed& seed : seeds()) {
    const auto path = dir / seed.file;
    if (check) {
      if (read_file(path) != seed.bytes) {
        std::fprintf(stderr, "%s is missing or stale; regenerate with %s %s\n", path.c_str(), argv[0],
                     dir.c_str());
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
