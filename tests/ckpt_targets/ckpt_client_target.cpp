// SPDX-License-Identifier: Apache-2.0
// A libcxlpool client to checkpoint: it connects to cxlpoold, holds a
// region and maps it, prints "key value" lines and "ready", then serves
// commands from stdin, one per line:
//   report      the region's first two words, its address and descriptor,
//               and the result of a fresh daemon call (a leased region
//               allocated, written, freed), then "done"
//   poke V      writes V (decimal) into the region's second word, "done"
//   free        frees the region through the library ("free ok" or the
//               error), "done"
//   exit
// Usage: ckpt_client_target SOCKET MODE [NAME]
//   named NAME     opens the named region NAME writable and maps it
//   named-ro NAME  opens it read-only
//   leased         allocates a 64 KiB leased region on tier 0 and maps it
//   leased-shared  the same, then forks a child that maps it too and waits
//                  (killed with its parent)
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cxlpool/cxlpool.h"

namespace {

cxlpool_client* g_client = nullptr;
cxlpool_region* g_region = nullptr;
uint64_t* g_words = nullptr;
// A word in the region's tenth page: the region's data is not one run.
constexpr size_t kFarWord = 9 * 4096 / sizeof(uint64_t);

void line(const char* key, const std::string& value) { std::printf("%s %s\n", key, value.c_str()); }

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "%#" PRIx64, v);
  return b;
}

// A daemon round trip that needs a working connection and a new mapping.
std::string fresh_call() {
  cxlpool_region* r = nullptr;
  if (cxlpool_region_alloc(g_client, 0, 65536, 0, &r) < 0) return std::string("error ") + cxlpool_last_error();
  void* addr = nullptr;
  if (cxlpool_region_map(r, &addr) < 0) {
    cxlpool_region_free(r);
    return std::string("error ") + cxlpool_last_error();
  }
  static_cast<volatile uint64_t*>(addr)[0] = 7;
  const int rc = cxlpool_region_free(r);
  return rc < 0 ? std::string("error ") + cxlpool_last_error() : "ok";
}

void report() {
  line("pid", std::to_string(getpid()));
  line("word0", std::to_string(g_words[0]));
  line("word1", std::to_string(g_words[1]));
  line("far", std::to_string(g_words[kFarWord]));
  line("addr", hex(reinterpret_cast<uint64_t>(g_words)));
  line("region_fd", std::to_string(cxlpool_region_fd(g_region)));
  line("region_id", std::to_string(cxlpool_region_id(g_region)));
  line("call", fresh_call());
  std::printf("done\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ckpt_client_target SOCKET named|named-ro|leased|leased-shared [NAME]\n");
    return 2;
  }
  const std::string mode = argv[2];
  if (cxlpool_connect(argv[1], "ckpt-client", &g_client) < 0) {
    std::fprintf(stderr, "connect: %s\n", cxlpool_last_error());
    return 1;
  }
  int rc = -EINVAL;
  if ((mode == "named" || mode == "named-ro") && argc > 3) {
    rc = cxlpool_named_open(g_client, argv[3], mode == "named" ? CXLPOOL_OPEN_WRITABLE : 0, &g_region);
  } else if (mode == "leased" || mode == "leased-shared") {
    rc = cxlpool_region_alloc(g_client, 0, 65536, 0, &g_region);
  }
  void* addr = nullptr;
  if (rc < 0 || cxlpool_region_map(g_region, &addr) < 0) {
    std::fprintf(stderr, "%s: %s\n", mode.c_str(), cxlpool_last_error());
    return 1;
  }
  g_words = static_cast<uint64_t*>(addr);
  if (mode != "named" && mode != "named-ro") {
    g_words[0] = 1234;
    g_words[kFarWord] = 4321;
  }
  if (mode == "leased-shared") {
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      for (;;) pause();
    }
    line("child", std::to_string(child));
  }
  line("pid", std::to_string(getpid()));
  line("addr", hex(reinterpret_cast<uint64_t>(addr)));
  std::printf("ready\n");
  std::fflush(stdout);
  char buf[128];
  while (std::fgets(buf, sizeof buf, stdin) != nullptr) {
    if (std::strncmp(buf, "exit", 4) == 0) break;
    if (std::strncmp(buf, "report", 6) == 0) report();
    if (std::strncmp(buf, "free", 4) == 0) {
      const int rc = cxlpool_region_free(g_region);
      g_region = nullptr;
      g_words = nullptr;
      line("free", rc < 0 ? std::string("error ") + cxlpool_last_error() : "ok");
      std::printf("done\n");
      std::fflush(stdout);
    }
    if (std::strncmp(buf, "poke ", 5) == 0) {
      g_words[1] = std::strtoull(buf + 5, nullptr, 10);
      std::printf("done\n");
      std::fflush(stdout);
    }
  }
  if (g_region != nullptr) cxlpool_region_free(g_region);
  cxlpool_disconnect(g_client);
  return 0;
}
