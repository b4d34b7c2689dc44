// SPDX-License-Identifier: Apache-2.0
// graph: pull-style PageRank over a CSR graph that fills the footprint (see
// workloads.hpp). The graph is implicit: degrees and edge sources are hashes
// of the vertex and edge index, so the same graph is replayed every
// iteration without storing it.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cxlpool/common/units.hpp"
#include "workload_generators.hpp"

namespace cxlpool::tiering::workload_detail {
namespace {

constexpr std::uint64_t kIdsPerLine = kLineBytes / 8;     // offsets, ranks
constexpr std::uint64_t kEdgesPerLine = kLineBytes / 4;   // 32-bit edge entries

struct Layout {
  std::uint64_t vertices = 0;
  std::uint64_t edges = 0;
  std::uint64_t offsets = 0;  // base addresses of the four arrays
  std::uint64_t edge_array = 0;
  std::uint64_t rank[2] = {0, 0};
  std::uint64_t end = 0;
};

Layout plan(std::uint64_t base, std::uint64_t vertices, std::uint64_t degree) {
  Layout l;
  l.vertices = vertices;
  l.edges = vertices * degree;
  l.offsets = base;
  l.edge_array = l.offsets + round_up((vertices + 1) * 8, kPageBytes);
  l.rank[0] = l.edge_array + round_up(l.edges * 4, kPageBytes);
  l.rank[1] = l.rank[0] + round_up(vertices * 8, kPageBytes);
  l.end = l.rank[1] + round_up(vertices * 8, kPageBytes);
  return l;
}

class Graph final : public WorkloadStream::Generator {
 public:
  Graph(const WorkloadConfig& config, const Layout& layout)
      : config_(config),
        layout_(layout),
        degree_salt_(derive_seed(config.seed, 21)),
        source_salt_(derive_seed(config.seed, 22)),
        mean_degree_(config.graph_degree) {
    // Popularity rank -> vertex: an affine bijection mod V (a multiplier
    // coprime with V near V * golden ratio), so popular vertices spread over
    // the rank array without a V-sized table.
    const std::uint64_t v = layout_.vertices;
    multiplier_ = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(v) * 0.6180339887)) | 1;
    while (std::gcd(multiplier_, v) != 1) multiplier_ += 2;
    multiplier_ %= v;
    if (multiplier_ == 0) multiplier_ = 1;
    offset_ = derive_seed(config.seed, 23) % v;
    // Continuous Zipf inverse CDF constants for source popularity.
    s_ = config.zipf_exponent;
    const double n = static_cast<double>(v);
    log_n_ = std::log(n);
    span_ = std::abs(1 - s_) < 1e-9 ? 0 : std::pow(n, 1 - s_) - 1;
  }

  void fill(std::span<TraceRecord> out, std::uint64_t) override {
    for (TraceRecord& r : out) {
      if (pending_ == pending_records_.size()) plan_vertex();
      r = pending_records_[pending_++];
    }
  }

 private:
  // Out-degree: Pareto(alpha = 2) with mean ~graph_degree, at least 1.
  std::uint64_t degree(std::uint64_t v) const {
    const double u = static_cast<double>((mix64(v ^ degree_salt_) >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    const double d = 0.5 * static_cast<double>(mean_degree_) / std::sqrt(u);
    const double cap = 64.0 * static_cast<double>(mean_degree_);
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::min(d, cap)));
  }

  // The source vertex of edge e: power-law popular.
  std::uint64_t source(std::uint64_t e) const {
    const double u = static_cast<double>(mix64(e ^ source_salt_) >> 11) * 0x1.0p-53;  // [0, 1)
    double x;
    if (span_ == 0) {
      x = std::exp(u * log_n_);
    } else {
      x = std::pow(u * span_ + 1, 1 / (1 - s_));
    }
    const std::uint64_t rank = std::min(layout_.vertices - 1, static_cast<std::uint64_t>(x >= 1 ? x - 1 : 0));
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(rank) * multiplier_ + offset_) %
                                      layout_.vertices);
  }

  void emit(std::uint64_t address, std::uint64_t size, bool is_write) {
    pending_records_.push_back({0, address, static_cast<std::uint32_t>(size), is_write});
  }

  // Records of one vertex of the current iteration.
  void plan_vertex() {
    pending_records_.clear();
    pending_ = 0;
    const std::uint64_t v = vertex_;
    const std::uint64_t* rank = &layout_.rank[iteration_ & 1];
    const std::uint64_t next = layout_.rank[(iteration_ & 1) ^ 1];
    if (v % kIdsPerLine == 0) emit(layout_.offsets + v * 8, kLineBytes, false);
    const std::uint64_t deg = degree(v);
    for (std::uint64_t i = 0; i < deg; ++i) {
      const std::uint64_t e = edge_cursor_;
      edge_cursor_ = edge_cursor_ + 1 == layout_.edges ? 0 : edge_cursor_ + 1;
      // A line the previous vertex already pulled in is still cached.
      const std::uint64_t line = e / kEdgesPerLine;
      if (line != last_edge_line_) emit(layout_.edge_array + line * kLineBytes, kLineBytes, false);
      last_edge_line_ = line;
      emit(*rank + source(e) * 8, 8, false);
    }
    if (v % kIdsPerLine == kIdsPerLine - 1 || v + 1 == layout_.vertices) {
      emit(next + v / kIdsPerLine * kLineBytes, kLineBytes, true);
    }
    if (++vertex_ == layout_.vertices) {
      vertex_ = 0;
      edge_cursor_ = 0;
      ++iteration_;
    }
  }

  WorkloadConfig config_;
  Layout layout_;
  std::uint64_t degree_salt_;
  std::uint64_t source_salt_;
  std::uint64_t mean_degree_;
  std::uint64_t multiplier_ = 1;
  std::uint64_t offset_ = 0;
  double s_ = 1;
  double log_n_ = 0;
  double span_ = 0;
  std::uint64_t vertex_ = 0;
  std::uint64_t edge_cursor_ = 0;
  std::uint64_t iteration_ = 0;
  std::uint64_t last_edge_line_ = ~0ull;
  std::vector<TraceRecord> pending_records_;  // reused: no allocation per vertex once grown
  std::size_t pending_ = 0;
};

}  // namespace

Result<GeneratorPtr> make_graph(const WorkloadConfig& config) {
  const std::uint64_t degree = config.graph_degree;
  const std::uint64_t per_vertex = 8 + 4 * degree + 8 + 8;
  std::uint64_t vertices = config.footprint_bytes / per_vertex;
  // Page rounding of the four arrays may overshoot: shrink until it fits.
  while (vertices > 0 && plan(config.base_address, vertices, degree).end - config.base_address > config.footprint_bytes) {
    const std::uint64_t step = std::max<std::uint64_t>(1, 4 * kPageBytes / per_vertex);
    vertices = vertices > step ? vertices - step : 0;
  }
  if (vertices < 2) return fail(EINVAL, "workload graph: footprint too small for a graph of degree " + std::to_string(degree));
  return GeneratorPtr(std::make_unique<Graph>(config, plan(config.base_address, vertices, degree)));
}

}  // namespace cxlpool::tiering::workload_detail
