// SPDX-License-Identifier: Apache-2.0
#include "kv_demo.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "cxlpool/kv.hpp"

namespace {

constexpr uint32_t kChunkTokens = 256;
constexpr uint64_t kChunkBytes = 256 << 10;  // a small model's KV for 256 tokens

// Token ids of a prompt: a system prompt shared by every request, then text
// of its own from `tail_seed` on.
std::vector<uint32_t> prompt(size_t tokens, size_t shared_tokens, uint32_t tail_seed) {
  std::vector<uint32_t> out(tokens);
  for (size_t i = 0; i < tokens; ++i) out[i] = i < shared_tokens ? 1000 + static_cast<uint32_t>(i) : tail_seed + static_cast<uint32_t>(i) * 7;
  return out;
}

// The bytes a real engine would have computed for chunk `index`: any
// deterministic pattern lets the reader check them.
void fill_chunk(std::vector<std::byte>& buffer, size_t index) {
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::byte>((i * 131 + index * 17) & 0xff);
}

cxlpool::KvNamespace open_namespace(cxlpool::KvStore& kv) {
  return kv.open_namespace("cxlpool-demo-model", "demo-contiguous", "bf16", 0, 1, kChunkTokens);
}

// The second process: its prompt shares the first three chunks.
int reader(const std::string& socket) {
  try {
    cxlpool::Client client(socket, "cxlpool-demo-kv-reader");
    cxlpool::KvStore kv(client);
    const cxlpool::KvNamespace ns = open_namespace(kv);
    const auto keys = ns.compute_keys(prompt(6 * kChunkTokens, 3 * kChunkTokens, 77));
    cxlpool::KvLease lease = kv.get(ns, keys);
    std::vector<std::byte> expected(kChunkBytes);
    size_t good = 0;
    for (size_t i = 0; i < lease.size(); ++i) {
      fill_chunk(expected, i);
      good += lease.bytes(i).size() == kChunkBytes && std::memcmp(lease.data(i), expected.data(), kChunkBytes) == 0;
    }
    std::printf("  reader pid %d: %zu of its %zu chunks cached, %zu read zero-copy and verified\n",
                static_cast<int>(::getpid()), lease.size(), keys.size(), good);
    const size_t leased = lease.size();
    lease.release();
    std::fflush(stdout);
    return leased == 3 && good == 3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  reader: %s\n", e.what());
    std::fflush(stdout);
    return 1;
  }
}

}  // namespace

int run_kv_demo(const std::string& socket) {
  std::printf("\nKV-cache store\n");
  try {
    cxlpool::Client client(socket, "cxlpool-demo-kv-writer");
    cxlpool::KvStore kv(client);
    const cxlpool::KvNamespace ns = open_namespace(kv);
    // 4 full chunks and a partial one: the partial tail gets no key.
    const auto tokens = prompt(4 * kChunkTokens + 100, 3 * kChunkTokens, 5);
    const auto keys = ns.compute_keys(tokens);
    std::vector<std::vector<std::byte>> chunks(keys.size(), std::vector<std::byte>(kChunkBytes));
    std::vector<const void*> data;
    for (size_t i = 0; i < keys.size(); ++i) {
      fill_chunk(chunks[i], i);
      data.push_back(chunks[i].data());
    }
    const size_t stored = kv.put(ns, keys, data, kChunkBytes);
    std::printf("  writer pid %d: %zu tokens -> %zu full chunks stored (the %zu-token tail is not a chunk)\n",
                static_cast<int>(::getpid()), tokens.size(), stored, tokens.size() % kChunkTokens);
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(reader(socket));
    int status = 0;
    ::waitpid(pid, &status, 0);
    const bool ok = stored == keys.size() && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    kv.erase(ns, keys);
    std::printf("  %s\n", ok ? "prefix shared between processes" : "prefix sharing FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  KV demo: %s\n", e.what());
    return 1;
  }
}
