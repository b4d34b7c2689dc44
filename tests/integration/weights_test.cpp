// SPDX-License-Identifier: Apache-2.0
// Shared weights (weights.h) against the real cxlpoold: a model loads once
// and two processes map the same physical pages read-only; malformed files
// are rejected naming the file and the reason; layers past the residency
// budget stay in the files and the streamer reads them with the right
// bytes; unload is for the owner and leaves existing mappings readable; a
// big load copies off the daemon's event loop (other clients are answered
// meanwhile, a second load of the model waits for the first, a loader that
// disconnects meanwhile harms nobody). The daemon reads only descriptors
// the client opened: another user cannot get at a file it could not read,
// and the model's region is no easier to open than its files.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <thread>
#include <variant>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/weights.h"
#include "daemon_process.hpp"
#include "support/raw_socket.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

constexpr int kLayers = 4;
constexpr uint32_t kElems = 40000;  // 160 KB per layer tensor

float value_of(int layer, uint32_t i) { return static_cast<float>(layer * 1000000 + static_cast<int>(i)); }

// A safetensors file written by hand (the format is part of what is tested):
// an embedding plus kLayers layers of one f32 tensor.
std::string write_model(const std::string& dir, const std::string& name) {
  std::string json = "{";
  uint64_t off = 0;
  auto add = [&](const std::string& tensor, uint64_t elems) {
    if (json.size() > 1) json += ",";
    json += "\"" + tensor + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(elems) +
            "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + elems * 4) + "]}";
    off += elems * 4;
  };
  add("embed", 1024);
  for (int l = 0; l < kLayers; ++l) add("layers." + std::to_string(l) + ".w", kElems);
  json += "}";
  while ((8 + json.size()) % 8 != 0) json += ' ';
  std::string path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  uint64_t n = json.size();
  EXPECT_EQ(::write(fd, &n, 8), 8);
  EXPECT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  std::vector<float> embed(1024, 0.25f);
  EXPECT_EQ(::write(fd, embed.data(), 4096), 4096);
  for (int l = 0; l < kLayers; ++l) {
    std::vector<float> v(kElems);
    for (uint32_t i = 0; i < kElems; ++i) v[i] = value_of(l, i);
    EXPECT_EQ(::write(fd, v.data(), kElems * 4), static_cast<ssize_t>(kElems * 4));
  }
  ::close(fd);
  return path;
}

std::string write_raw(const std::string& dir, const std::string& name, const std::string& json, size_t data) {
  std::string path = dir + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  uint64_t n = json.size();
  EXPECT_EQ(::write(fd, &n, 8), 8);
  EXPECT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  std::string zeros(data, '\0');
  EXPECT_EQ(::write(fd, zeros.data(), zeros.size()), static_cast<ssize_t>(zeros.size()));
  ::close(fd);
  return path;
}

// `layers` f32 tensors "layers.N.w" of `layer_mib` MiB each, element i of
// layer l being big_value(l, i); synced and dropped from the page cache so
// the daemon reads it from the disk.
float big_value(int layer, uint64_t i) { return static_cast<float>(layer * 1000 + static_cast<int>(i % 1000)); }

std::string write_big_model(const std::string& dir, int layers, uint64_t layer_mib) {
  const uint64_t elems = (layer_mib << 20) / 4;
  std::string json = "{";
  for (int l = 0; l < layers; ++l) {
    if (l > 0) json += ",";
    json += "\"layers." + std::to_string(l) + ".w\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(elems) +
            "],\"data_offsets\":[" + std::to_string(l * elems * 4) + "," + std::to_string((l + 1) * elems * 4) + "]}";
  }
  json += "}";
  while ((8 + json.size()) % 8 != 0) json += ' ';
  std::string path = dir + "/big.safetensors";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  uint64_t n = json.size();
  EXPECT_EQ(::write(fd, &n, 8), 8);
  EXPECT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  std::vector<float> v(elems);
  for (int l = 0; l < layers; ++l) {
    for (uint64_t i = 0; i < elems; ++i) v[i] = big_value(l, i);
    EXPECT_EQ(::write(fd, v.data(), elems * 4), static_cast<ssize_t>(elems * 4));
  }
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  return path;
}

std::map<std::string, uint64_t> weight_stats(cxlpool_client* c) {
  std::vector<cxlpool_stat> stats(512);
  std::map<std::string, uint64_t> out;
  int n = cxlpool_stats(c, stats.data(), stats.size());
  for (int i = 0; i < n && i < static_cast<int>(stats.size()); ++i) {
    std::string name = stats[static_cast<size_t>(i)].name;
    if (name.rfind("weights.", 0) == 0) out[name] = stats[static_cast<size_t>(i)].value;
  }
  return out;
}

// The page frame behind `addr`, 0 when the kernel hides PFNs (not root).
uint64_t pfn_of(const void* addr) {
  int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint64_t entry = 0;
  off_t off = static_cast<off_t>(reinterpret_cast<uintptr_t>(addr) / 4096 * 8);
  if (::pread(fd, &entry, 8, off) != 8) entry = 0;
  ::close(fd);
  return (entry >> 63) & 1 ? entry & ((1ull << 55) - 1) : 0;
}

// The end of the daemon's log, for failure messages.
std::string log_tail(const DaemonProcess& d) {
  const std::string log = d.log();
  return log.size() > 4096 ? log.substr(log.size() - 4096) : log;
}

// Loads the one file `path` as `model`; the client call's result.
int load_one(cxlpool_client* c, const char* model, const std::string& path, cxlpool_weights** out,
             const cxlpool_weights_load_options* options = nullptr) {
  const char* paths[] = {path.c_str()};
  return cxlpool_weights_load(c, model, paths, 1, options, out);
}

class Weights : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.start());
    ASSERT_EQ(cxlpool_connect(daemon_.socket().c_str(), "weights-test", &client_), 0);
  }
  void TearDown() override {
    if (client_ != nullptr) cxlpool_disconnect(client_);
  }
  // Any user may connect (the unload test acts as another user).
  DaemonProcess daemon_{TestConfig{.daemon = kOpenToAll}.render()};
  cxlpool_client* client_ = nullptr;
};

TEST_F(Weights, TwoProcessesMapTheSamePagesReadOnly) {
  std::string path = write_model(daemon_.dir(), "m.safetensors");
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "tiny", path, &w), 0) << cxlpool_last_error();
  EXPECT_EQ(cxlpool_weights_count(w), kLayers + 1);
  EXPECT_EQ(cxlpool_weights_layers(w), kLayers);
  cxlpool_weight_tensor t{};
  ASSERT_EQ(cxlpool_weights_find(w, "layers.2.w", &t), 0);
  ASSERT_NE(t.data, nullptr);
  EXPECT_EQ(t.layer, 2);
  EXPECT_EQ(t.bytes, kElems * 4u);
  EXPECT_EQ(static_cast<const float*>(t.data)[123], value_of(2, 123));
  // Read-only for the client: the mapping cannot be made writable.
  void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(t.data) & ~uintptr_t{4095});
  EXPECT_NE(::mprotect(page, 4096, PROT_READ | PROT_WRITE), 0);
  const uint64_t mine = pfn_of(t.data);

  ForkedChild other([&](int fd) {
    cxlpool_client* c = nullptr;
    if (cxlpool_connect(daemon_.socket().c_str(), "weights-other", &c) != 0) return 1;
    cxlpool_weights* w2 = nullptr;
    if (cxlpool_weights_open(c, "tiny", &w2) != 0) return 2;
    // Loading the same files again only opens it.
    cxlpool_weights* w3 = nullptr;
    if (load_one(c, "tiny", path, &w3) != 0) return 3;
    cxlpool_weight_tensor t2{};
    if (cxlpool_weights_find(w2, "layers.2.w", &t2) != 0 || t2.data == nullptr) return 4;
    const float seen = static_cast<const volatile float*>(t2.data)[123];  // faults the page in
    std::string line = std::to_string(seen) + " " + std::to_string(pfn_of(t2.data)) + "\n";
    if (::write(fd, line.data(), line.size()) < 0) return 5;
    cxlpool_weights_close(w3);
    cxlpool_weights_close(w2);
    cxlpool_disconnect(c);
    return 0;
  });
  auto line = other.read_line(std::chrono::seconds(10));
  ASSERT_TRUE(line);
  EXPECT_EQ(other.wait(std::chrono::seconds(10)), 0);
  float v = 0;
  unsigned long long pfn = 0;
  ASSERT_EQ(std::sscanf(line->c_str(), "%f %llu", &v, &pfn), 2);
  EXPECT_EQ(v, value_of(2, 123));
  if (mine != 0) {
    EXPECT_EQ(pfn, mine) << "the two processes map different pages";
  }

  // Same name, other files: refused.
  cxlpool_weights* w4 = nullptr;
  EXPECT_EQ(load_one(client_, "tiny", write_model(daemon_.dir(), "other.safetensors"), &w4), -EEXIST);
  cxlpool_weights_close(w);
}

TEST_F(Weights, MalformedFilesAreRejectedWithTheReason) {
  struct Case {
    const char* name;
    std::string json;
    size_t data;
    const char* reason;
  } cases[] = {
      {"json.safetensors", "{\"a\":", 0, "not valid JSON"},
      {"dtype.safetensors", R"({"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype"},
      {"overlap.safetensors",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "overlap"},
      {"past.safetensors", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8, "past the data"},
      {"shape.safetensors", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "need 12"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = write_raw(daemon_.dir(), c.name, c.json, c.data);
    cxlpool_weights* w = nullptr;
    EXPECT_EQ(load_one(client_, "bad", path, &w), -EBADMSG);
    std::string err = cxlpool_last_error();
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_NE(err.find(c.reason), std::string::npos) << err;
  }
  // A header length past the end of the file.
  std::string path = daemon_.dir() + "/short.safetensors";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  uint64_t n = 1 << 20;
  ASSERT_EQ(::write(fd, &n, 8), 8);
  ::close(fd);
  cxlpool_weights* w = nullptr;
  EXPECT_EQ(load_one(client_, "bad", path, &w), -EBADMSG);
  // A relative path never reaches the daemon's file system.
  EXPECT_EQ(load_one(client_, "bad", "m.safetensors", &w), -EINVAL);
  cxlpool_weights* none = nullptr;
  EXPECT_EQ(cxlpool_weights_open(client_, "bad", &none), -ENOENT);
}

TEST_F(Weights, LayersPastTheBudgetStreamFromTheFile) {
  std::string path = write_model(daemon_.dir(), "m.safetensors");
  cxlpool_weights_load_options opts{};
  opts.tier_id = UINT32_MAX;
  opts.max_resident_bytes = 4096 + kElems * 4;  // the embedding and layer 0
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "budget", path, &w, &opts), 0) << cxlpool_last_error();
  cxlpool_weight_tensor t{};
  ASSERT_EQ(cxlpool_weights_find(w, "layers.0.w", &t), 0);
  EXPECT_NE(t.data, nullptr);
  ASSERT_EQ(cxlpool_weights_find(w, "layers.1.w", &t), 0);
  EXPECT_EQ(t.data, nullptr);
  ASSERT_EQ(cxlpool_weights_find(w, "embed", &t), 0);
  EXPECT_NE(t.data, nullptr);

  cxlpool_streamer_config cfg{};
  cfg.target = CXLPOOL_STREAM_HOST;
  cfg.buffers = 3;
  cfg.prefetch_depth = 2;
  cxlpool_weight_streamer* s = nullptr;
  ASSERT_EQ(cxlpool_weight_streamer_create(w, &cfg, &s), 0) << cxlpool_last_error();
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      cxlpool_streamed_layer sl{};
      ASSERT_EQ(cxlpool_weight_streamer_acquire(s, l, &sl), 0) << cxlpool_last_error();
      ASSERT_EQ(sl.n_tensors, 1u);
      const auto* f = reinterpret_cast<const float*>(sl.data[0]);
      for (uint32_t i = 0; i < kElems; ++i) ASSERT_EQ(f[i], value_of(static_cast<int>(l), i)) << l << " " << i;
      ASSERT_EQ(cxlpool_weight_streamer_release(s, l), 0);
    }
  }
  cxlpool_streamer_stats st{};
  ASSERT_EQ(cxlpool_weight_streamer_stats(s, &st), 0);
  EXPECT_GE(st.layers_read, 3u);
  EXPECT_GE(st.bytes_read, 3u * kElems * 4);
  EXPECT_GE(st.layers_copied, 1u);
  cxlpool_weight_streamer_destroy(s);
  // A device window needs a GPU: without one it is refused with the reason.
  cfg.target = CXLPOOL_STREAM_CUDA;
  cxlpool_weight_streamer* s2 = nullptr;
  if (const int rc = cxlpool_weight_streamer_create(w, &cfg, &s2); rc == 0) {
    cxlpool_weight_streamer_destroy(s2);  // a GPU host: the gpu suite checks its bytes
  } else {
    EXPECT_EQ(rc, -ENODEV);
    EXPECT_NE(std::string(cxlpool_last_error()).find("CUDA"), std::string::npos) << cxlpool_last_error();
  }
  cxlpool_weights_close(w);
}

TEST_F(Weights, UnloadIsForTheOwnerAndKeepsMappings) {
  std::string path = write_model(daemon_.dir(), "m.safetensors");
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "gone", path, &w), 0) << cxlpool_last_error();
  if (::geteuid() == 0) {
    ForkedChild stranger([&](int) {
      cxlpool_client* c = nullptr;
      if (cxlpool_connect(daemon_.socket().c_str(), "stranger", &c) != 0) return 1;
      return cxlpool_weights_unload(c, "gone") == -EPERM ? 0 : 2;
    }, RunAs{});
    EXPECT_EQ(stranger.wait(std::chrono::seconds(10)), 0);
  }
  // Clients may not take the daemon's region names.
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_named_create(client_, "cxlpool-w-gone2", 0, 4096, 0600, 0, &r), -EPERM);
  ASSERT_EQ(cxlpool_weights_unload(client_, "gone"), 0);
  cxlpool_weights* again = nullptr;
  EXPECT_EQ(cxlpool_weights_open(client_, "gone", &again), -ENOENT);
  cxlpool_weight_tensor t{};
  ASSERT_EQ(cxlpool_weights_find(w, "layers.3.w", &t), 0);
  EXPECT_EQ(static_cast<const float*>(t.data)[kElems - 1], value_of(3, kElems - 1));
  cxlpool_weights_close(w);
  // Loadable again after the unload.
  ASSERT_EQ(load_one(client_, "gone", path, &w), 0) << cxlpool_last_error();
  cxlpool_weights_close(w);
}

TEST_F(Weights, CtlListsAndUnloads) {
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "listed", write_model(daemon_.dir(), "m.safetensors"), &w), 0) << cxlpool_last_error();
  auto listed = run_program({ctl_binary(), "--socket", daemon_.socket(), "weights", "list", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto j = nlohmann::json::parse(listed.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["model"], "listed");
  EXPECT_EQ(j[0]["region"], "cxlpool-w-listed");
  EXPECT_EQ(j[0]["tensors"], kLayers + 1);
  EXPECT_EQ(j[0]["total_bytes"], 4096u + kLayers * kElems * 4u);
  EXPECT_EQ(j[0]["resident_fraction"], 1.0);
  auto text = run_program({ctl_binary(), "--socket", daemon_.socket(), "weights", "list"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("listed"), std::string::npos) << text.out;
  auto unloaded = run_program({ctl_binary(), "--socket", daemon_.socket(), "weights", "unload", "listed"});
  ASSERT_EQ(unloaded.exit_code, 0) << unloaded.err;
  EXPECT_NE(unloaded.out.find("unloaded 'listed'"), std::string::npos) << unloaded.out;
  auto missing = run_program({ctl_binary(), "--socket", daemon_.socket(), "weights", "unload", "listed"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("not loaded"), std::string::npos) << missing.err;
  auto empty = run_program({ctl_binary(), "--socket", daemon_.socket(), "weights", "list"});
  EXPECT_EQ(empty.out, "no models loaded\n");
  EXPECT_EQ(run_program({ctl_binary(), "--socket", daemon_.socket(), "weights"}).exit_code, 2);
  cxlpool_weights_close(w);
}

TEST_F(Weights, BigLoadCopiesOffTheEventLoop) {
  constexpr int kBigLayers = 4;
  constexpr uint64_t kLayerMiB = 64;  // 256 MiB: the copy takes long enough to answer others meanwhile
  // The DRAM tier's free bytes follow the host's free memory: on a host busy
  // with other tests the load would be refused for space, which tests nothing
  // here.
  std::vector<cxlpool_tier_info> tiers(16);
  const int n_tiers = cxlpool_tiers(client_, tiers.data(), tiers.size());
  ASSERT_GT(n_tiers, 0) << cxlpool_last_error();
  uint64_t most_free = 0;
  for (int i = 0; i < n_tiers && i < static_cast<int>(tiers.size()); ++i) {
    most_free = std::max(most_free, tiers[static_cast<size_t>(i)].free);
  }
  if (most_free < 2 * kBigLayers * kLayerMiB * kMiB) {
    GTEST_SKIP() << "no tier has twice the model's " << kBigLayers * kLayerMiB << " MiB free (most: "
                 << most_free / kMiB << " MiB): the host is short of memory";
  }
  const std::string path = write_big_model(daemon_.dir(), kBigLayers, kLayerMiB);
  const std::string socket = daemon_.socket();
  auto load_and_check = [&](int fd) {
    cxlpool_client* c = nullptr;
    if (cxlpool_connect(socket.c_str(), "weights-loader", &c) != 0) return 1;
    cxlpool_weights* w = nullptr;
    if (load_one(c, "big", path, &w) != 0) return 2;
    cxlpool_weight_tensor t{};
    if (cxlpool_weights_find(w, "layers.3.w", &t) != 0 || t.data == nullptr) return 3;
    const uint64_t last = t.bytes / 4 - 1;
    if (static_cast<const float*>(t.data)[last] != big_value(3, last)) return 4;
    if (::write(fd, "ok\n", 3) < 0) return 5;
    cxlpool_weights_close(w);
    cxlpool_disconnect(c);
    return 0;
  };
  // The first loader goes away while its copy runs.
  ForkedChild quitter(load_and_check);
  // Another client is answered while the copy is under way: the loop is free.
  // Nor can anyone map the region by name before its tensors are all in:
  // ENOENT before it exists, EAGAIN while the copy runs.
  int answered_while_loading = 0;
  int refused_while_copying = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    auto st = weight_stats(client_);
    // A failed load or a daemon that stopped answering ends the wait at
    // once, with the reason, instead of spinning to the deadline.
    ASSERT_FALSE(st.empty()) << "stats failed: " << cxlpool_last_error() << "\n" << log_tail(daemon_);
    ASSERT_EQ(st["weights.load_errors"], 0u) << "the 256 MiB load failed\n" << log_tail(daemon_);
    if (st["weights.models"] == 1) break;
    if (st["weights.loading"] != 1) continue;
    cxlpool_region* r = nullptr;
    const int opened = cxlpool_named_open(client_, "cxlpool-w-big", 0, &r);
    if (opened == 0) {
      EXPECT_EQ(weight_stats(client_)["weights.loading"], 0u) << "a half-copied weights region was opened by name";
      cxlpool_region_free(r);
    } else {
      EXPECT_TRUE(opened == -ENOENT || opened == -EAGAIN) << opened << ": " << cxlpool_last_error();
      if (opened == -EAGAIN) ++refused_while_copying;
    }
    // The first loader goes away once the loop has shown it is free; the
    // copy goes on, and so do the NamedOpen attempts until it ends.
    if (++answered_while_loading == 3) {
      ::kill(quitter.pid(), SIGKILL);
      quitter.wait(std::chrono::seconds(10));
    }
  }
  ASSERT_GE(answered_while_loading, 3) << "no request was answered while the 256 MiB model loaded\n" << log_tail(daemon_);
  std::printf("[ loading  ] %d requests answered while loading; NamedOpen refused with EAGAIN %d time(s) while the copy ran\n",
              answered_while_loading, refused_while_copying);
  // A second load of the model waits for the copy (or opens it once done).
  ForkedChild second(load_and_check);
  auto line = second.read_line(std::chrono::seconds(60));
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "ok");
  EXPECT_EQ(second.wait(std::chrono::seconds(10)), 0);
  auto st = weight_stats(client_);
  EXPECT_EQ(st["weights.models"], 1u);
  EXPECT_EQ(st["weights.loading"], 0u);
  EXPECT_EQ(st["weights.loads"], 1u);
  EXPECT_EQ(st["weights.load_errors"], 0u);
  EXPECT_GE(st["weights.opens"], 1u);
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(cxlpool_weights_open(client_, "big", &w), 0) << cxlpool_last_error();
  cxlpool_weight_tensor t{};
  ASSERT_EQ(cxlpool_weights_find(w, "layers.3.w", &t), 0);
  EXPECT_EQ(static_cast<const float*>(t.data)[999], big_value(3, 999));
  cxlpool_weights_close(w);
  EXPECT_EQ(cxlpool_weights_unload(client_, "big"), 0);
}


// A copy of the small model with the given mode (owned by root, the test).
std::string model_with_mode(const std::string& dir, const std::string& name, mode_t mode) {
  std::string path = write_model(dir, name);
  EXPECT_EQ(::chmod(path.c_str(), mode), 0);
  return path;
}

class WeightsAccess : public Weights {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "acting as a second user (nobody) needs root";
    Weights::SetUp();
  }

  // In the child: a connection named `name`; nullptr, and a reported
  // failure, when the daemon refuses it.
  static cxlpool_client* connect_checked(ChildChecks& check, const std::string& socket, const char* name) {
    cxlpool_client* c = nullptr;
    check.expect_eq(cxlpool_connect(socket.c_str(), name, &c), 0, name, __LINE__);
    return c;
  }

  // Runs `body` in a child acting as nobody, on a connection of its own that
  // the body closes; the failures the child reported, "" when none.
  std::string run_as_nobody(const std::function<void(ChildChecks&, cxlpool_client*)>& body) {
    const std::string socket = daemon_.socket();
    return run_checks_in_child(
        [&](ChildChecks& check) {
          if (cxlpool_client* c = connect_checked(check, socket, "nobody")) body(check, c);
        },
        RunAs{});
  }
};

TEST_F(WeightsAccess, NobodyCannotLoadAFileItCannotRead) {
  const std::string path = model_with_mode(daemon_.dir(), "private.safetensors", 0600);
  const std::string socket = daemon_.socket();
  ForkedChild nobody([&](int fd) {
    cxlpool_client* c = nullptr;
    if (cxlpool_connect(socket.c_str(), "nobody", &c) != 0) return 1;
    cxlpool_weights* w = nullptr;
    // The library opens the file with nobody's rights: nothing is sent.
    if (load_one(c, "stolen", path, &w) != -EACCES) return 2;
    std::string err = cxlpool_last_error();
    if (err.find(path) == std::string::npos) return 3;
    cxlpool_disconnect(c);
    // Without the library: the path alone, no descriptor. The daemon refuses.
    UniqueFd raw = raw_connect(socket);
    if (!raw || !send_encoded(raw.get(), 1, proto::Hello{})) return 4;
    auto hello = recv_reply(raw.get(), std::chrono::seconds(5));
    if (!hello || !std::holds_alternative<proto::HelloReply>(hello->envelope.message)) return 5;
    proto::WeightsLoad load;
    load.model = "stolen";
    load.paths.push_back({path});
    if (!send_encoded(raw.get(), 2, load)) return 6;
    auto reply = recv_reply(raw.get(), std::chrono::seconds(5));
    if (!reply) return 7;
    const auto* error = std::get_if<proto::ErrorReply>(&reply->envelope.message);
    if (error == nullptr) return 8;
    const std::string line = std::to_string(error->code) + " " + error->message + "\n";
    if (::write(fd, line.data(), line.size()) < 0) return 9;
    return 0;
  }, RunAs{});
  auto line = nobody.read_line(std::chrono::seconds(10));
  EXPECT_EQ(nobody.wait(std::chrono::seconds(10)), 0);
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind(std::to_string(EINVAL) + " ", 0), 0u) << *line;
  EXPECT_NE(line->find("0 descriptors for 1 files"), std::string::npos) << *line;
  // Nothing was loaded, and no error quoted the file.
  auto st = weight_stats(client_);
  EXPECT_EQ(st["weights.models"], 0u);
  EXPECT_EQ(st["weights.loading"], 0u);
}

TEST_F(WeightsAccess, TheRegionIsNoEasierToOpenThanItsFiles) {
  const std::string private_path = model_with_mode(daemon_.dir(), "private.safetensors", 0600);
  const std::string public_path = model_with_mode(daemon_.dir(), "public.safetensors", 0644);
  cxlpool_weights* priv = nullptr;
  cxlpool_weights* pub = nullptr;
  ASSERT_EQ(load_one(client_, "private", private_path, &priv), 0) << cxlpool_last_error();
  ASSERT_EQ(load_one(client_, "public", public_path, &pub), 0) << cxlpool_last_error();
  const std::string failures = run_as_nobody([&](ChildChecks& check, cxlpool_client* c) {
    cxlpool_weights* w = nullptr;
    check.expect_eq(cxlpool_weights_open(c, "private", &w), -EACCES, "WeightsOpen of the 0600 model", __LINE__);
    cxlpool_region* r = nullptr;
    check.expect_eq(cxlpool_named_open(c, "cxlpool-w-private", 0, &r), -EACCES, "NamedOpen of its region", __LINE__);
    check.expect_eq(cxlpool_weights_open(c, "public", &w), 0, "WeightsOpen of the 0644 model", __LINE__);
    if (w != nullptr) {
      cxlpool_weight_tensor t{};
      check.expect_eq(cxlpool_weights_find(w, "layers.1.w", &t), 0, "find", __LINE__);
      if (t.data != nullptr) {
        check.expect_eq(static_cast<const float*>(t.data)[7], value_of(1, 7), "a byte of the model", __LINE__);
      }
      cxlpool_weights_close(w);
    }
    check.expect_eq(cxlpool_named_open(c, "cxlpool-w-public", 0, &r), 0, "NamedOpen of its region", __LINE__);
    if (r != nullptr) cxlpool_region_free(r);
    cxlpool_disconnect(c);
  });
  EXPECT_EQ(failures, "");
  cxlpool_weights_close(priv);
  cxlpool_weights_close(pub);
}

TEST_F(WeightsAccess, DescriptorsOfTheSameFilesProveAccess) {
  // Nobody's own file, readable by nobody only: root loads it; the region
  // is 0400 root, so nobody cannot open it by name, but passing descriptors
  // of the very file proves it may read it.
  const std::string path = model_with_mode(daemon_.dir(), "nobodys.safetensors", 0400);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "nobodys", path, &w), 0) << cxlpool_last_error();
  const std::string socket = daemon_.socket();
  const std::string failures = run_as_nobody([&](ChildChecks& check, cxlpool_client* c) {
    cxlpool_weights* mine = nullptr;
    check.expect_eq(cxlpool_weights_open(c, "nobodys", &mine), -EACCES, "open by name", __LINE__);
    check.expect_eq(load_one(c, "nobodys", path, &mine), 0, "load from the files", __LINE__);
    if (mine != nullptr) {
      cxlpool_weight_tensor t{};
      check.expect_eq(cxlpool_weights_find(mine, "layers.3.w", &t), 0, "find", __LINE__);
      if (t.data != nullptr) check.expect_eq(static_cast<const float*>(t.data)[5], value_of(3, 5), "data", __LINE__);
      cxlpool_weights_close(mine);
    }
    cxlpool_disconnect(c);
    // The proof belongs to the connection that gave it.
    c = connect_checked(check, socket, "nobody-again");
    if (c == nullptr) return;
    check.expect_eq(cxlpool_weights_open(c, "nobodys", &mine), -EACCES, "open by name again", __LINE__);
    cxlpool_disconnect(c);
  });
  EXPECT_EQ(failures, "");
  cxlpool_weights_close(w);
}

TEST_F(Weights, OneFileUnderTwoNamesIsOneFile) {
  const std::string path = write_model(daemon_.dir(), "m.safetensors");
  const std::string link = daemon_.dir() + "/hardlink.safetensors";
  const std::string sym = daemon_.dir() + "/symlink.safetensors";
  ASSERT_EQ(::link(path.c_str(), link.c_str()), 0);
  ASSERT_EQ(::symlink(path.c_str(), sym.c_str()), 0);
  const std::string dotted = daemon_.dir() + "/./m.safetensors";
  for (const std::string& other : {link, sym, dotted, path}) {
    SCOPED_TRACE(other);
    const char* paths[] = {path.c_str(), other.c_str()};
    cxlpool_weights* w = nullptr;
    EXPECT_EQ(cxlpool_weights_load(client_, "twice", paths, 2, nullptr, &w), -EINVAL);
    EXPECT_NE(std::string(cxlpool_last_error()).find("the same file as"), std::string::npos) << cxlpool_last_error();
  }
  // Loaded through one name, the others are the same files: opened, not loaded again.
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "once", path, &w), 0) << cxlpool_last_error();
  for (const std::string& other : {link, sym, dotted}) {
    cxlpool_weights* again = nullptr;
    ASSERT_EQ(load_one(client_, "once", other, &again), 0) << cxlpool_last_error();
    cxlpool_weights_close(again);
  }
  auto st = weight_stats(client_);
  EXPECT_EQ(st["weights.loads"], 1u);
  EXPECT_EQ(st["weights.opens"], 3u);
  // A copy with the same bytes is another file.
  cxlpool_weights* other = nullptr;
  EXPECT_EQ(load_one(client_, "once", write_model(daemon_.dir(), "copy.safetensors"), &other), -EEXIST);
  cxlpool_weights_close(w);
}

class WeightsQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.start());
    ASSERT_EQ(cxlpool_connect(daemon_.socket().c_str(), "weights-quota", &client_), 0);
    ASSERT_EQ(cxlpool_tier_by_name(client_, kEmuTier, &emu_), 0) << cxlpool_last_error();
  }
  void TearDown() override {
    if (client_ != nullptr) cxlpool_disconnect(client_);
  }
  // Every uid may hold 2 MiB per tier; the model's region is about 700 KiB.
  DaemonProcess daemon_{TestConfig{.tables = "[quota]\ndefault_bytes = \"2M\"\n"}.render()};
  cxlpool_client* client_ = nullptr;
  cxlpool_tier_info emu_{};
};

TEST_F(WeightsQuota, TheRegionIsChargedToTheLoader) {
  const std::string path = write_model(daemon_.dir(), "m.safetensors");
  cxlpool_weights_load_options opts{};
  opts.tier_id = emu_.id;
  cxlpool_weights* w = nullptr;
  ASSERT_EQ(load_one(client_, "charged", path, &w, &opts), 0) << cxlpool_last_error();
  // 1.5 MiB more does not fit next to the model's region.
  cxlpool_region* r = nullptr;
  EXPECT_EQ(cxlpool_region_alloc(client_, emu_.id, 3 * kMiB / 2, 0, &r), -EDQUOT) << cxlpool_last_error();
  // Unloaded and unmapped, the charge is gone.
  cxlpool_weights_close(w);
  ASSERT_EQ(cxlpool_weights_unload(client_, "charged"), 0);
  ASSERT_EQ(cxlpool_region_alloc(client_, emu_.id, 3 * kMiB / 2, 0, &r), 0) << cxlpool_last_error();
  // A model bigger than what is left of the quota is refused.
  EXPECT_EQ(load_one(client_, "charged", path, &w, &opts), -EDQUOT) << cxlpool_last_error();
  EXPECT_NE(std::string(cxlpool_last_error()).find("quota"), std::string::npos) << cxlpool_last_error();
  cxlpool_region_free(r);
  auto st = weight_stats(client_);
  EXPECT_EQ(st["weights.models"], 0u);
  EXPECT_EQ(st["weights.loading"], 0u);
}

// A safetensors file of `n` one-byte tensors: a big header, little data.
std::string write_many_tensors(const std::string& dir, size_t n) {
  std::string json = "{";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) json += ",";
    json += "\"model.layers." + std::to_string(i / 64) + ".w" + std::to_string(i % 64) +
            "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" + std::to_string(i) + "," +
            std::to_string(i + 1) + "]}";
  }
  json += "}";
  return write_raw(dir, "many.safetensors", json, n);
}

TEST_F(Weights, AHugeHeaderDoesNotStallOtherClients) {
  constexpr size_t kTensors = 40000;  // a 3 MB header: 37 s on the event loop with the old parser
  const std::string path = write_many_tensors(daemon_.dir(), kTensors);
  const std::string socket = daemon_.socket();
  ForkedChild loader([&](int fd) {
    cxlpool_client* c = nullptr;
    if (cxlpool_connect(socket.c_str(), "many-loader", &c) != 0) return 1;
    cxlpool_weights* w = nullptr;
    if (load_one(c, "many", path, &w) != 0) return 2;
    if (cxlpool_weights_count(w) != static_cast<int>(kTensors)) return 3;
    if (::write(fd, "ok\n", 3) < 0) return 4;
    cxlpool_weights_close(w);
    cxlpool_disconnect(c);
    return 0;
  });
  // Status requests in a loop until the load is answered: each must come
  // back within a bound only a frozen event loop would miss.
  std::vector<double> ms;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int loaded = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<cxlpool_stat> stats(512);
    ASSERT_GT(cxlpool_stats(client_, stats.data(), stats.size()), 0) << cxlpool_last_error();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (const auto& s : stats) {
      if (std::string(s.name) == "weights.models") loaded = static_cast<int>(s.value);
    }
    if (loaded == 1) break;
  }
  auto line = loader.read_line(std::chrono::seconds(60));
  ASSERT_TRUE(line);
  EXPECT_EQ(*line, "ok");
  EXPECT_EQ(loader.wait(std::chrono::seconds(10)), 0);
  ASSERT_EQ(loaded, 1);
  ASSERT_FALSE(ms.empty());
  std::sort(ms.begin(), ms.end());
  const double p50 = ms[ms.size() / 2];
  const double p99 = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  std::printf("[ stall    ] %zu requests while loading %zu tensors: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
              ms.size(), kTensors, p50, p99, ms.back());
  EXPECT_LT(ms.back(), 1000.0) << "a request waited a second: the event loop was stalled";
}

}  // namespace
}  // namespace cxlpool::integration
