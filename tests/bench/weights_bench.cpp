// SPDX-License-Identifier: Apache-2.0
// Weight streaming, against a running cxlpoold:
//   weights_bench --socket S --dir D [--layers N] [--layer-mib M] [--passes P] [--mode region|ssd] [--reuse-file 1]
//                 [--target host|cuda]
// Writes a model of N layers of M MiB (f32) into D (synced to disk, so no
// write-back competes with the reads; --reuse-file keeps one an earlier run
// wrote), loads it (mode region:
// every layer in the shared region; mode ssd: only the globals, every layer
// read from the file with O_DIRECT), then streams P passes through a
// 3-slot window with prefetch depth 2 and no compute, and measures the
// baseline in the same run: region mode memcpys the same layers from the
// region into the same kind of window. Prints RESULT lines with GB/s.
// --target cuda: the window is device memory on CUDA device 0 and the
// baseline is the device's pinned H2D copy bandwidth, measured in the same
// run with the same layer-sized copies (cuMemHostAlloc'd source, one stream,
// synchronized per copy as the streamer's layers are).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/weights.h"
#include "cxlpool/weights/safetensors_writer.hpp"
#include "weights_bench_pinned.hpp"

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int die(const char* what, int rc) {
  std::fprintf(stderr, "weights_bench: %s: %s (%s)\n", what, cxlpool_strerror(rc), cxlpool_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, dir, mode = "region", target = "host";
  bool reuse_file = false;
  int layers = 16, layer_mib = 16, passes = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--socket") socket = v;
    else if (k == "--dir") dir = v;
    else if (k == "--layers") layers = std::atoi(v.c_str());
    else if (k == "--layer-mib") layer_mib = std::atoi(v.c_str());
    else if (k == "--passes") passes = std::atoi(v.c_str());
    else if (k == "--mode") mode = v;
    else if (k == "--reuse-file") reuse_file = v == "1";
    else if (k == "--target") target = v;
  }
  if (dir.empty() || layers < 2 || layer_mib < 1 || (mode != "region" && mode != "ssd") ||
      (target != "host" && target != "cuda")) {
    std::fprintf(stderr, "usage: weights_bench --socket S --dir D [--layers N] [--layer-mib M] [--passes P] [--mode region|ssd] [--reuse-file 1] [--target host|cuda]\n");
    return 2;
  }
  const uint64_t layer_bytes = static_cast<uint64_t>(layer_mib) << 20;
  const std::string path = dir + "/bench-model.safetensors";
  struct stat file_st {};
  if (!reuse_file || ::stat(path.c_str(), &file_st) != 0) {
    cxlpool::weights::SafetensorsWriter w;
    std::vector<float> g(4096, 1.0f);
    (void)w.add_f32("model.norm.weight", {4096}, g);
    std::vector<float> v(layer_bytes / 4);
    for (int l = 0; l < layers; ++l) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(l) + static_cast<float>(i & 1023);
      auto ok = w.add_f32("model.layers." + std::to_string(l) + ".mlp.weight", {v.size()}, v);
      if (!ok) return die("add tensor", -ok.error().code);
    }
    auto ok = w.write_file(path);
    if (!ok) {
      std::fprintf(stderr, "weights_bench: %s\n", ok.error().message.c_str());
      return 1;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) return die("fsync", -errno);
    ::close(fd);
  }
  cxlpool_client* c = nullptr;
  int rc = cxlpool_connect(socket.empty() ? nullptr : socket.c_str(), "weights-bench", &c);
  if (rc != 0) return die("connect", rc);
  cxlpool_weights_load_options opts{};
  opts.tier_id = UINT32_MAX;
  opts.max_resident_bytes = mode == "ssd" ? 1 : 0;  // ssd: globals only
  const char* paths[] = {path.c_str()};
  cxlpool_weights* w = nullptr;
  const std::string model = "bench-" + mode;
  (void)cxlpool_weights_unload(c, model.c_str());
  double t0 = now_s();
  rc = cxlpool_weights_load(c, model.c_str(), paths, 1, &opts, &w);
  if (rc != 0) return die("load", rc);
  std::printf("load: %d layers x %d MiB, %.2f s\n", layers, layer_mib, now_s() - t0);

  cxlpool_streamer_config cfg{};
  const bool cuda = target == "cuda";
  cfg.target = cuda ? CXLPOOL_STREAM_CUDA : CXLPOOL_STREAM_HOST;
  cfg.device = 0;
  cfg.buffers = 3;
  cfg.prefetch_depth = 2;
  cxlpool_weight_streamer* s = nullptr;
  rc = cxlpool_weight_streamer_create(w, &cfg, &s);
  if (rc != 0) return die("streamer", rc);
  // One warm-up pass, then the timed ones.
  volatile float sink = 0;
  double start = 0;
  for (int p = 0; p <= passes; ++p) {
    if (p == 1) start = now_s();
    for (int l = 0; l < layers; ++l) {
      cxlpool_streamed_layer sl{};
      rc = cxlpool_weight_streamer_acquire(s, static_cast<uint32_t>(l), &sl);
      if (rc != 0) return die("acquire", rc);
      // A device window is the GPU's to read; a host one is read here.
      if (!cuda) sink = sink + reinterpret_cast<const float*>(sl.data[0])[1];
      cxlpool_weight_streamer_release(s, static_cast<uint32_t>(l));
    }
  }
  const double stream_s = now_s() - start;
  const double bytes = static_cast<double>(layer_bytes) * layers * passes;
  const double stream_gbs = bytes / stream_s / 1e9;
  cxlpool_streamer_stats st{};
  cxlpool_weight_streamer_stats(s, &st);
  std::printf("RESULT mode=%s target=%s stream_gbps=%.2f layers_copied=%llu layers_read=%llu wait_ms=%.1f\n",
              mode.c_str(), target.c_str(), stream_gbs, static_cast<unsigned long long>(st.layers_copied),
              static_cast<unsigned long long>(st.layers_read), st.wait_ns_total / 1e6);
  if (cuda) {
    std::printf("cuda: region registered %u, layers direct %llu, staged %llu\n", st.region_registered,
                static_cast<unsigned long long>(st.layers_direct),
                static_cast<unsigned long long>(st.layers_staged));
  }
  cxlpool_weight_streamer_destroy(s);

  if (cuda) {
    const double seconds = cxlpool::weights_bench::pinned_h2d_seconds(layer_bytes, layers, passes);
    if (seconds <= 0) return 1;
    const double pinned_gbs = bytes / seconds / 1e9;
    std::printf("RESULT mode=pinned_h2d pinned_gbps=%.2f ratio=%.2f\n", pinned_gbs, stream_gbs / pinned_gbs);
  } else if (mode == "region") {
    // Baseline: the same bytes memcpy'd from the region into a 3-slot window
    // on this thread, no synchronization at all.
    void* win = ::mmap(nullptr, 3 * layer_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    std::vector<const void*> src;
    for (int l = 0; l < layers; ++l) {
      cxlpool_weight_tensor t{};
      std::string name = "model.layers." + std::to_string(l) + ".mlp.weight";
      if (cxlpool_weights_find(w, name.c_str(), &t) != 0 || t.data == nullptr) return die("find", -ENOENT);
      src.push_back(t.data);
    }
    for (int p = 0; p <= passes; ++p) {
      if (p == 1) start = now_s();
      for (int l = 0; l < layers; ++l) {
        std::memcpy(static_cast<char*>(win) + (l % 3) * layer_bytes, src[l], layer_bytes);
      }
    }
    const double memcpy_gbs = bytes / (now_s() - start) / 1e9;
    ::munmap(win, 3 * layer_bytes);
    std::printf("RESULT mode=memcpy memcpy_gbps=%.2f ratio=%.2f\n", memcpy_gbs, stream_gbs / memcpy_gbs);
  }
  cxlpool_weights_close(w);
  cxlpool_weights_unload(c, model.c_str());
  cxlpool_disconnect(c);
  return 0;
}
