// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus for fuzz_proto_decode: one valid encoding of every
// message type, plus a Hello from a future version and the KV-store shapes
// the samples do not show (defaults, a disabled store, a namespace known only
// from SSD recovery).
//   fuzz_proto_seed DIR          write DIR/<Type>.bin
//   fuzz_proto_seed --check DIR  exit 1 unless DIR holds exactly those bytes
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/proto/messages.hpp"
#include "sample_messages.hpp"
#include "seed_corpus.hpp"

namespace {

using cxlpool::fuzz::Seed;
using cxlpool::proto::Hello;

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

  out.push_back({"KvOpen-defaults.bin", *encode(testing::kSampleRequestId, KvOpen{})});
  out.push_back({"KvStatusReply-disabled.bin",
                 *encode(testing::kSampleRequestId, KvStatusReply{.detail = "kvstore.enabled = false"})});
  out.push_back({"KvNamespacesReply-recovered.bin",
                 *encode(testing::kSampleRequestId,
                         KvNamespacesReply{.namespaces = {KvNamespaceEntry{.namespace_id = 3,
                                                                           .fingerprint_hi = 0xabcdef,
                                                                           .fingerprint_lo = 0x123456,
                                                                           .chunks = {0, 0, 12},
                                                                           .bytes = {0, 0, 24ull << 20}}}})});
  out.push_back({"WeightsLoad-one-file.bin",
                 *encode(testing::kSampleRequestId,
                         WeightsLoad{.model = "m", .paths = {WeightsPath{"/m.safetensors"}}})});
  out.push_back({"WeightsListReply-empty.bin", *encode(testing::kSampleRequestId, WeightsListReply{})});
  return out;
}

}  // namespace

int main(int argc, char** argv) { return cxlpool::fuzz::seed_corpus_main(argc, argv, seeds()); }
