// SPDX-License-Identifier: Apache-2.0
// A short tour of the pool through the public C++ API: on every tier it
// allocates a leased region, writes and checks it, shares a named region with
// a second process that reads it and writes back, then frees everything;
// then two processes share a prompt prefix through the KV-cache store.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "cxlpool/cxlpool.hpp"
#include "kv_demo.hpp"
#include "kv_ssd_demo.hpp"

namespace {

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case CXLPOOL_TIER_DRAM: return "dram";
    case CXLPOOL_TIER_CXL: return "cxl";
    case CXLPOOL_TIER_EMULATED: return "emulated";
  }
  return "?";
}

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// Runs in a forked child: a separate client process that maps the named
// region, checks the parent's message and answers in the second half.
int child_reader(const std::string& socket, const std::string& name, const std::string& expected) {
  try {
    cxlpool::Client client(socket, "cxlpool-demo-peer");
    cxlpool::Region shared = client.open_named(name, /*writable=*/true);
    char* bytes = shared.data<char>();
    if (std::strncmp(bytes, expected.c_str(), expected.size() + 1) != 0) {
      std::fprintf(stderr, "  peer: unexpected content '%.40s'\n", bytes);
      return 1;
    }
    std::snprintf(bytes + shared.size() / 2, 64, "ack from pid %d", static_cast<int>(::getpid()));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  peer: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string socket = argc > 1 ? argv[1] : "";
  try {
    cxlpool::Client client(socket, "cxlpool-demo");
    auto tiers = client.tiers();
    std::printf("connected to cxlpoold (library %s); %zu tier(s)\n", cxlpool_version(), tiers.size());
    int failures = 0;
    for (const auto& tier : tiers) {
      std::printf("\ntier %u '%s' (%s, node %d): %.0f MiB free of %.0f MiB\n", tier.id, tier.name,
                  kind_name(tier.kind), tier.numa_node, mib(tier.free), mib(tier.capacity));

      // A leased region: written and checked through this process's mapping.
      const uint64_t lease_size = 16ull << 20;
      const auto t0 = std::chrono::steady_clock::now();
      cxlpool::Region lease = client.alloc(tier.id, lease_size, CXLPOOL_ALLOC_POPULATE);
      auto* words = lease.data<uint64_t>();
      const size_t n = lease.size() / sizeof(uint64_t);
      for (size_t i = 0; i < n; ++i) words[i] = i * 0x9e3779b97f4a7c15ull;
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += words[i] != i * 0x9e3779b97f4a7c15ull;
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  leased region %llu: %.0f MiB allocated, populated, written and verified in %.1f ms%s\n",
                  static_cast<unsigned long long>(lease.id()), mib(lease.size()), ms,
                  bad ? " — MISMATCH" : "");
      failures += bad != 0;

      // A named region shared with a second process.
      const std::string name = std::string("demo-") + tier.name + "-" + std::to_string(::getpid());
      cxlpool::Region named = client.create_named(name, tier.id, 1 << 20, 0600);
      const std::string message = "hello from pid " + std::to_string(::getpid()) + " on " + tier.name;
      std::snprintf(named.data<char>(), 128, "%s", message.c_str());
      std::fflush(stdout);
      const pid_t pid = ::fork();
      if (pid == 0) ::_exit(child_reader(socket, name, message));
      int status = 0;
      ::waitpid(pid, &status, 0);
      const char* ack = named.data<char>() + named.size() / 2;
      const bool shared_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && std::strncmp(ack, "ack", 3) == 0;
      std::printf("  named region '%s': peer pid %d read \"%s\" and answered \"%s\"%s\n", name.c_str(),
                  static_cast<int>(pid), message.c_str(), shared_ok ? ack : "", shared_ok ? "" : " — FAILED");
      failures += !shared_ok;
      client.unlink_named(name);
      named.free();
      lease.free();
      std::printf("  freed both regions\n");
    }
    auto after = client.tiers();
    uint64_t used = 0;
    for (const auto& t : after) used += t.used;
    std::printf("\nall regions released: %s (%llu bytes still in use by this demo's tiers)\n",
                used == 0 ? "yes" : "no", static_cast<unsigned long long>(used));
    failures += run_kv_demo(socket);
    failures += run_kv_ssd_demo(socket);
    std::printf("%s\n", failures == 0 ? "demo OK" : "demo FAILED");
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cxlpool-demo: %s\n", e.what());
    return 1;
  }
}
