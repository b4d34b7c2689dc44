// SPDX-License-Identifier: Apache-2.0
// Workload names, config validation and the stream that stamps timestamps.
#include "cxlpool/tiering/workloads.hpp"

#include <cmath>
#include <string>

#include "workload_generators.hpp"

namespace cxlpool::tiering {
namespace {

Result<void> check_range(const char* field, double value, double lo, double hi) {
  if (!(value >= lo && value <= hi)) {
    return fail(EINVAL, std::string("workload: ") + field + " " + std::to_string(value) + " not in " +
                            std::to_string(lo) + ".." + std::to_string(hi));
  }
  return {};
}

}  // namespace

const char* workload_kind_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kZipf: return "zipf";
    case WorkloadKind::kShiftingHotSet: return "shifting";
    case WorkloadKind::kSparseKv: return "sparse-kv";
    case WorkloadKind::kGraph: return "graph";
  }
  return "?";
}

std::vector<WorkloadKind> all_workload_kinds() {
  return {WorkloadKind::kZipf, WorkloadKind::kShiftingHotSet, WorkloadKind::kSparseKv, WorkloadKind::kGraph};
}

std::optional<WorkloadKind> parse_workload_kind(std::string_view name) {
  for (const WorkloadKind kind : all_workload_kinds()) {
    if (name == workload_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

Result<void> WorkloadConfig::validate() const {
  if (footprint_bytes < kMinFootprint || footprint_bytes > kMaxFootprint ||
      footprint_bytes % workload_detail::kPageBytes != 0) {
    return fail(EINVAL, "workload: footprint_bytes " + std::to_string(footprint_bytes) +
                            " must be a multiple of 4096 in " + std::to_string(kMinFootprint) + ".." +
                            std::to_string(kMaxFootprint));
  }
  if (accesses > kMaxAccesses) {
    return fail(EINVAL, "workload: accesses " + std::to_string(accesses) + " above " + std::to_string(kMaxAccesses));
  }
  if (duration_ns == 0) return fail(EINVAL, "workload: duration_ns must be >= 1");
  if (base_address % workload_detail::kPageBytes != 0 || base_address > ~0ull - footprint_bytes) {
    return fail(EINVAL, "workload: base_address must be 4 KiB aligned with base_address + footprint_bytes <= 2^64");
  }
  for (auto ok : {check_range("zipf_exponent", zipf_exponent, 0, 5), check_range("word_exponent", word_exponent, 0, 5),
                  check_range("write_fraction", write_fraction, 0, 1), check_range("phases", phases, 1, 4096),
                  check_range("graph_degree", graph_degree, 1, 1024)}) {
    if (!ok) return ok;
  }
  if (!(hot_fraction > 0 && hot_fraction <= 0.5)) {
    return fail(EINVAL, "workload: hot_fraction " + std::to_string(hot_fraction) + " not in (0, 0.5]");
  }
  return {};
}

WorkloadStream::WorkloadStream(const WorkloadConfig& config, std::unique_ptr<Generator> generator)
    : config_(config), generator_(std::move(generator)) {}
WorkloadStream::WorkloadStream(WorkloadStream&&) noexcept = default;
WorkloadStream& WorkloadStream::operator=(WorkloadStream&&) noexcept = default;
WorkloadStream::~WorkloadStream() = default;

Result<WorkloadStream> WorkloadStream::create(const WorkloadConfig& config) {
  if (auto ok = config.validate(); !ok) return tl::unexpected(ok.error());
  Result<workload_detail::GeneratorPtr> generator = fail(EINVAL, "workload: unknown kind");
  switch (config.kind) {
    case WorkloadKind::kZipf: generator = workload_detail::make_zipf_pages(config, 1); break;
    case WorkloadKind::kShiftingHotSet: generator = workload_detail::make_zipf_pages(config, config.phases); break;
    case WorkloadKind::kSparseKv: generator = workload_detail::make_sparse_kv(config); break;
    case WorkloadKind::kGraph: generator = workload_detail::make_graph(config); break;
  }
  if (!generator) return tl::unexpected(generator.error());
  return WorkloadStream(config, std::move(*generator));
}

std::size_t WorkloadStream::next(std::span<TraceRecord> out) {
  const std::uint64_t left = config_.accesses - produced_;
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, out.size()));
  if (n == 0) return 0;
  generator_->fill(out.first(n), produced_);
  // Even spread over [0, duration): record i at floor(i * duration / accesses).
  for (std::size_t i = 0; i < n; ++i) {
    const auto idx = static_cast<unsigned __int128>(produced_ + i);
    out[i].timestamp_ns = static_cast<std::uint64_t>(idx * config_.duration_ns / config_.accesses);
  }
  produced_ += n;
  return n;
}

std::uint64_t WorkloadStream::produced() const { return produced_; }
const WorkloadConfig& WorkloadStream::config() const { return config_; }

Result<std::vector<TraceRecord>> generate_workload(const WorkloadConfig& config) {
  auto stream = WorkloadStream::create(config);
  if (!stream) return tl::unexpected(stream.error());
  std::vector<TraceRecord> out(static_cast<std::size_t>(config.accesses));
  std::size_t done = 0;
  while (done < out.size()) done += stream->next(std::span(out).subspan(done));
  return out;
}

std::vector<std::uint32_t> workload_detail::random_permutation(std::uint32_t n, Rng& rng) {
  std::vector<std::uint32_t> p(n);
  for (std::uint32_t i = 0; i < n; ++i) p[i] = i;
  for (std::uint32_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng.below(i)]);
  return p;
}

}  // namespace cxlpool::tiering
