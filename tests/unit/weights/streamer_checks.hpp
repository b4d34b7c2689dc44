// SPDX-License-Identifier: Apache-2.0
// What the CUDA-target streamer tests share, on a GPU (streamer_cuda_test)
// and on a copy engine over host memory (streamer_engine_test): the
// configuration, the byte check of an acquired layer (however its device
// bytes are read back), decoding passes, the copy-path statistics of a
// registered and of a refused region, and the warnings the library logs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/log.hpp"
#include "model_fixture.hpp"
#include "weight_streamer.hpp"
#include "weights_model.hpp"

namespace cxlpool::client::testing {

inline cxlpool_streamer_config cuda_config(uint32_t buffers, uint32_t depth, uint64_t pinned = 0, int device = 0) {
  cxlpool_streamer_config c{};
  c.target = CXLPOOL_STREAM_CUDA;
  c.device = device;
  c.buffers = buffers;
  c.prefetch_depth = depth;
  c.pinned_budget_bytes = pinned;
  return c;
}

// Every tensor of the acquired layer holds its fixture values.
// `floats(address, bytes)` returns the tensor's bytes as host floats, or
// null after reporting why it could not read them.
template <typename Floats>
void expect_layer_values(const WeightsModel& m, const cxlpool_streamed_layer& sl, Floats&& floats) {
  using weights::testing::base_of;
  ASSERT_EQ(sl.n_tensors, 2u);
  for (uint32_t i = 0; i < sl.n_tensors; ++i) {
    const auto& t = m.tensor(sl.tensor_index[i]);
    const int k = std::string(t.name).find(".mlp.") != std::string::npos ? 0 : 1;
    const float* f = floats(sl.data[i], t.bytes);
    ASSERT_NE(f, nullptr);
    const size_t n = t.bytes / 4;
    for (size_t j = 0; j < n; j += 499) {
      ASSERT_EQ(f[j], base_of(static_cast<int>(sl.layer), k) + static_cast<float>(j)) << t.name << " at " << j;
    }
    ASSERT_EQ(f[n - 1], base_of(static_cast<int>(sl.layer), k) + static_cast<float>(n - 1)) << t.name;
  }
}

// `passes` decoding passes over `layers` layers, each acquired, checked
// with `check(sl)` and released.
template <typename Check>
void stream_passes(WeightStreamer& s, int layers, int passes, Check&& check) {
  for (int pass = 0; pass < passes; ++pass) {
    for (uint32_t l = 0; l < static_cast<uint32_t>(layers); ++l) {
      cxlpool_streamed_layer sl{};
      auto ok = s.acquire(l, &sl);
      ASSERT_TRUE(ok) << ok.error().message;
      check(sl);
      ASSERT_TRUE(s.release(l));
    }
  }
}

// Region layers went up straight from the registered region.
inline void expect_direct_copies(const cxlpool_streamer_stats& st, uint64_t min_layers) {
  EXPECT_EQ(st.region_registered, 1u) << "the read-only region was not registered";
  EXPECT_GE(st.layers_direct, min_layers);
  EXPECT_EQ(st.bytes_direct, st.bytes_copied);
  EXPECT_EQ(st.layers_staged, 0u);
  EXPECT_EQ(st.bytes_staged, 0u);
}

// Region layers went through staging: the registration was refused.
inline void expect_staged_copies(const cxlpool_streamer_stats& st, uint64_t min_layers) {
  EXPECT_EQ(st.region_registered, 0u);
  EXPECT_GE(st.layers_staged, min_layers);
  EXPECT_EQ(st.bytes_staged, st.bytes_copied);
  EXPECT_EQ(st.layers_direct, 0u);
}

// The warnings the library logs while one of these lives.
class WarningLines {
 public:
  WarningLines() {
    active_ = this;
    set_log_sink(&WarningLines::capture, nullptr, LogLevel::kDebug);
  }
  ~WarningLines() {
    set_log_sink(nullptr, nullptr, LogLevel::kError);
    active_ = nullptr;
  }
  WarningLines(const WarningLines&) = delete;
  WarningLines& operator=(const WarningLines&) = delete;
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  static void capture(LogLevel level, std::string_view component, std::string_view message, void*) {
    if (active_ != nullptr && level == LogLevel::kWarning) {
      active_->lines_.push_back(std::string(component) + ": " + std::string(message));
    }
  }
  static inline WarningLines* active_ = nullptr;
  std::vector<std::string> lines_;
};

// WeightStreamer::create, with the warnings it logged in *warnings.
inline Result<std::unique_ptr<WeightStreamer>> create_streamer(const WeightsModel& m,
                                                               const cxlpool_streamer_config& config,
                                                               std::vector<std::string>* warnings) {
  WarningLines lines;
  auto s = WeightStreamer::create(m, config);
  *warnings = lines.lines();
  return s;
}

// A refused registration is logged once, naming staging and the reason.
inline void expect_refusal_logged_once(const std::vector<std::string>& warnings, std::string_view reason) {
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("staging"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(reason), std::string::npos) << warnings[0];
}

}  // namespace cxlpool::client::testing
