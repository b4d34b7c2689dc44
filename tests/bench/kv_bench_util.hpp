// SPDX-License-Identifier: Apache-2.0
// Pieces shared by the KV-store benchmarks: connecting and opening the data
// path, deterministic chunk keys, percentiles and "--key value" options.
// Benchmarks exit on the first failure with the library's message: a number
// measured after an error would mean nothing.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "support/kv_namespace_spec.hpp"

namespace kvbench {

using Clock = std::chrono::steady_clock;

[[noreturn]] inline void die(const char* what, int rc) {
  std::fprintf(stderr, "%s: %s (%s)\n", what, cxlpool_strerror(rc), cxlpool_last_error());
  std::exit(1);
}

inline double micros_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// p in [0, 1] of an unsorted sample (sorts it).
inline double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// "--key value" pairs after the positional arguments; unknown keys are an
// error so that a typo never runs a different benchmark than intended.
class Options {
 public:
  Options(int argc, char** argv, int first, std::map<std::string, std::string> defaults)
      : values_(std::move(defaults)) {
    for (int i = first; i < argc; i += 2) {
      std::string key = argv[i];
      if (key.rfind("--", 0) != 0 || i + 1 >= argc || !values_.count(key.substr(2))) {
        std::fprintf(stderr, "unknown or incomplete option %s\n", key.c_str());
        std::exit(2);
      }
      values_[key.substr(2)] = argv[i + 1];
    }
  }
  [[nodiscard]] std::uint64_t u64(const std::string& key) const {
    return std::strtoull(values_.at(key).c_str(), nullptr, 0);
  }
  [[nodiscard]] double f64(const std::string& key) const { return std::strtod(values_.at(key).c_str(), nullptr); }
  [[nodiscard]] const std::string& str(const std::string& key) const { return values_.at(key); }

 private:
  std::map<std::string, std::string> values_;
};

struct Connection {
  cxlpool_client* client = nullptr;
  cxlpool_kv* kv = nullptr;
  cxlpool_kv_info info{};

  Connection(const char* socket, const char* name, std::uint64_t put_window_bytes = 0) {
    if (int rc = cxlpool_connect(socket, name, &client); rc != 0) die("connect", rc);
    cxlpool_kv_options opts{};
    opts.put_window_bytes = put_window_bytes;
    if (int rc = cxlpool_kv_open(client, &opts, &kv); rc != 0) die("cxlpool_kv_open", rc);
    if (int rc = cxlpool_kv_get_info(kv, &info); rc != 0) die("cxlpool_kv_get_info", rc);
  }
  ~Connection() {
    cxlpool_kv_close(kv);
    cxlpool_disconnect(client);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  [[nodiscard]] cxlpool_kv_namespace open_namespace(const char* model, std::uint32_t chunk_tokens) const {
    const auto spec = cxlpool::test::kv_namespace_spec(model, "bench-contiguous", chunk_tokens);
    cxlpool_kv_namespace ns{};
    if (int rc = cxlpool_kv_namespace_open(kv, &spec, &ns); rc != 0) die("cxlpool_kv_namespace_open", rc);
    return ns;
  }
};

// splitmix64: a fast deterministic generator for token ids and payload words.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace kvbench
