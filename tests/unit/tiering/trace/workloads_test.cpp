// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/workloads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cxlpool::tiering {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

WorkloadConfig small(WorkloadKind kind) {
  WorkloadConfig c;
  c.kind = kind;
  c.footprint_bytes = 16 * kMiB;
  c.accesses = 250'000;
  c.duration_ns = 1'000'000'000;
  c.seed = 7;
  return c;
}

struct PageStat {
  std::uint64_t count = 0;
  std::uint64_t words = 0;
};

std::unordered_map<std::uint64_t, PageStat> per_page(std::span<const TraceRecord> t) {
  std::unordered_map<std::uint64_t, PageStat> m;
  for (const TraceRecord& r : t) {
    for (std::uint64_t a = r.address; a < r.address + r.size; a = (a | 63) + 1) {
      PageStat& p = m[a >> 12];
      p.words |= 1ull << ((a >> 6) & 63);
    }
    ++m[r.address >> 12].count;
  }
  return m;
}

// Share of accesses that go to the hottest `fraction` of the touched pages.
double top_share(const std::unordered_map<std::uint64_t, PageStat>& m, double fraction) {
  std::vector<std::uint64_t> counts;
  std::uint64_t total = 0;
  for (const auto& [page, s] : m) {
    counts.push_back(s.count);
    total += s.count;
  }
  std::sort(counts.rbegin(), counts.rend());
  const auto k = std::max<std::size_t>(1, static_cast<std::size_t>(counts.size() * fraction));
  return static_cast<double>(std::accumulate(counts.begin(), counts.begin() + k, std::uint64_t{0})) / total;
}

double sparse_fraction(const std::unordered_map<std::uint64_t, PageStat>& m) {
  std::size_t sparse = 0;
  for (const auto& [page, s] : m) sparse += std::popcount(s.words) <= 16;
  return static_cast<double>(sparse) / m.size();
}

TEST(WorkloadKinds, NamesRoundTrip) {
  for (const WorkloadKind k : all_workload_kinds()) EXPECT_EQ(parse_workload_kind(workload_kind_name(k)), k);
  EXPECT_EQ(parse_workload_kind("shifting"), WorkloadKind::kShiftingHotSet);
  EXPECT_EQ(parse_workload_kind("sparse-kv"), WorkloadKind::kSparseKv);
  EXPECT_FALSE(parse_workload_kind("Zipf").has_value());
  EXPECT_FALSE(parse_workload_kind("").has_value());
}

TEST(WorkloadConfig, RejectsBadFields) {
  auto bad = [](auto mutate) {
    WorkloadConfig c = small(WorkloadKind::kZipf);
    mutate(c);
    auto r = generate_workload(c);
    return !r.has_value() && r.error().code == EINVAL;
  };
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.footprint_bytes = 4096; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.footprint_bytes = kMiB + 1; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.duration_ns = 0; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.zipf_exponent = -1; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.write_fraction = 1.5; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.phases = 0; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.hot_fraction = 0.6; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.base_address = 100; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.base_address = ~0ull - 4095; }));
  EXPECT_TRUE(bad([](WorkloadConfig& c) { c.graph_degree = 0; }));
  auto msg = generate_workload([] {
    WorkloadConfig c = small(WorkloadKind::kZipf);
    c.write_fraction = 2;
    return c;
  }());
  EXPECT_NE(msg.error().message.find("write_fraction"), std::string::npos);
}

class EveryKind : public ::testing::TestWithParam<WorkloadKind> {};

TEST_P(EveryKind, DeterministicPerSeedAndDifferentAcrossSeeds) {
  WorkloadConfig c = small(GetParam());
  c.accesses = 50'000;
  auto a = generate_workload(c);
  auto b = generate_workload(c);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(*a, *b);
  c.seed = 8;
  auto other = generate_workload(c);
  EXPECT_NE(*a, *other);
}

TEST_P(EveryKind, StaysInsideTheFootprintWithSaneRecords) {
  WorkloadConfig c = small(GetParam());
  c.base_address = 1ull << 32;
  auto t = generate_workload(c);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  ASSERT_EQ(t->size(), c.accesses);
  std::uint64_t writes = 0;
  for (std::size_t i = 0; i < t->size(); ++i) {
    const TraceRecord& r = (*t)[i];
    ASSERT_GE(r.address, c.base_address) << i;
    ASSERT_LE(r.address + r.size, c.base_address + c.footprint_bytes) << i;
    ASSERT_GE(r.size, 1u);
    ASSERT_LE(r.size, 64u);
    // No record crosses a cache line: each is one controller access.
    ASSERT_EQ(r.address >> 6, (r.address + r.size - 1) >> 6) << i;
    ASSERT_LT(r.timestamp_ns, c.duration_ns);
    if (i > 0) {
      ASSERT_GE(r.timestamp_ns, (*t)[i - 1].timestamp_ns) << i;
    }
    writes += r.is_write;
  }
  EXPECT_GT(writes, 0u);
  EXPECT_LT(writes, c.accesses);
  EXPECT_EQ(t->front().timestamp_ns, 0u);
  EXPECT_GT(t->back().timestamp_ns, c.duration_ns * 99 / 100);
}

TEST_P(EveryKind, StreamMatchesTheBatchGenerator) {
  WorkloadConfig c = small(GetParam());
  c.accesses = 30'001;
  auto whole = generate_workload(c);
  auto stream = WorkloadStream::create(c);
  ASSERT_TRUE(stream.has_value());
  std::vector<TraceRecord> pieces, buf(997);
  while (std::size_t n = stream->next(buf)) pieces.insert(pieces.end(), buf.begin(), buf.begin() + n);
  EXPECT_EQ(stream->produced(), c.accesses);
  EXPECT_EQ(pieces, *whole);
}

INSTANTIATE_TEST_SUITE_P(Workloads, EveryKind,
                         ::testing::Values(WorkloadKind::kZipf, WorkloadKind::kShiftingHotSet, WorkloadKind::kSparseKv,
                                           WorkloadKind::kGraph),
                         [](const auto& info) {
                           std::string n = workload_kind_name(info.param);
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(ZipfWorkload, PagesAreSkewedAndScattered) {
  auto t = generate_workload(small(WorkloadKind::kZipf));
  const auto pages = per_page(*t);
  // 4096 pages, s = 0.99: the hottest 1% of the touched pages take far more
  // than 1% of the accesses (about a third with s = 0.99).
  EXPECT_GT(top_share(pages, 0.01), 0.2);
  // Hot pages are scattered: the 16 hottest span most of the footprint.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> by_count;
  for (const auto& [page, s] : pages) by_count.push_back({s.count, page});
  std::sort(by_count.rbegin(), by_count.rend());
  std::uint64_t lo = ~0ull, hi = 0;
  for (int i = 0; i < 16; ++i) {
    lo = std::min(lo, by_count[i].second);
    hi = std::max(hi, by_count[i].second);
  }
  EXPECT_GT(hi - lo, 4096u / 2);
  // The hottest page is dense, the coldest touched pages are not.
  EXPECT_GT(std::popcount(pages.at(by_count.front().second).words), 48);
  EXPECT_LE(std::popcount(pages.at(by_count.back().second).words), 2);
}

TEST(ZipfWorkload, ExponentControlsSkew) {
  WorkloadConfig flat = small(WorkloadKind::kZipf);
  flat.zipf_exponent = 0;
  WorkloadConfig steep = small(WorkloadKind::kZipf);
  steep.zipf_exponent = 1.2;
  const double flat_share = top_share(per_page(*generate_workload(flat)), 0.01);
  const double steep_share = top_share(per_page(*generate_workload(steep)), 0.01);
  EXPECT_LT(flat_share, 0.03);
  EXPECT_GT(steep_share, 0.5);
}

// The hottest `k` pages of records [from, to).
std::set<std::uint64_t> hot_pages(std::span<const TraceRecord> t, std::size_t k) {
  const auto m = per_page(t);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
  for (const auto& [page, s] : m) v.push_back({s.count, page});
  std::sort(v.rbegin(), v.rend());
  std::set<std::uint64_t> out;
  for (std::size_t i = 0; i < k && i < v.size(); ++i) out.insert(v[i].second);
  return out;
}

TEST(ShiftingWorkload, HotSetMovesEveryPhase) {
  WorkloadConfig c = small(WorkloadKind::kShiftingHotSet);
  c.phases = 4;
  auto t = generate_workload(c);
  const std::size_t phase = t->size() / 4;
  std::vector<std::set<std::uint64_t>> hot;
  for (int p = 0; p < 4; ++p) hot.push_back(hot_pages(std::span(*t).subspan(p * phase, phase), 100));
  for (int p = 1; p < 4; ++p) {
    std::vector<std::uint64_t> common;
    std::set_intersection(hot[p - 1].begin(), hot[p - 1].end(), hot[p].begin(), hot[p].end(),
                          std::back_inserter(common));
    // The 100 hottest pages are well inside the 10% hot set, which is drawn
    // from pages outside the previous one: no overlap at all.
    EXPECT_EQ(common.size(), 0u) << "phase " << p;
  }
  // Within a phase the hot set is stable: its two halves agree.
  const auto first_half = hot_pages(std::span(*t).subspan(0, phase / 2), 20);
  const auto second_half = hot_pages(std::span(*t).subspan(phase / 2, phase / 2), 100);
  std::size_t kept = 0;
  for (auto p : first_half) kept += second_half.count(p);
  EXPECT_GE(kept, 15u);
  // The zipf workload (one phase) does not move.
  WorkloadConfig z = small(WorkloadKind::kZipf);
  auto zt = generate_workload(z);
  const auto z0 = hot_pages(std::span(*zt).subspan(0, phase), 20);
  const auto z3 = hot_pages(std::span(*zt).subspan(3 * phase, phase), 100);
  kept = 0;
  for (auto p : z0) kept += z3.count(p);
  EXPECT_GE(kept, 15u);
}

TEST(SparseKvWorkload, MostPagesAreSparseSomeAreDense) {
  WorkloadConfig c = small(WorkloadKind::kSparseKv);
  c.footprint_bytes = 64 * kMiB;
  c.accesses = 1'000'000;  // the ratio the evaluation uses: 4M accesses on 256 MiB
  auto t = generate_workload(c);
  ASSERT_TRUE(t.has_value());
  const auto pages = per_page(*t);
  const double sparse = sparse_fraction(pages);
  EXPECT_GT(sparse, 0.7) << sparse;
  std::size_t dense = 0;
  for (const auto& [page, s] : pages) dense += std::popcount(s.words) >= 48;
  EXPECT_GT(dense, pages.size() / 100) << "the bucket array pages are dense";
  // Popular keys are zipf: the hottest 1% of pages get well over 1%.
  EXPECT_GT(top_share(pages, 0.01), 0.05);
  // Compare: the zipf page workload on the same footprint is mostly dense
  // among the pages it uses often.
  WorkloadConfig z = c;
  z.kind = WorkloadKind::kZipf;
  EXPECT_LT(sparse_fraction(per_page(*generate_workload(z))), sparse);
}

TEST(GraphWorkload, StreamsEdgesAndReadsSkewedProperties) {
  WorkloadConfig c = small(WorkloadKind::kGraph);
  c.footprint_bytes = 1 * kMiB;  // about 200K accesses per iteration: several iterations
  c.accesses = 1'000'000;
  auto t = generate_workload(c);
  ASSERT_TRUE(t.has_value());
  // Sequential scan: many records are exactly one line past the previous
  // full-line read (the edge stream advancing).
  std::size_t line_reads = 0, stride_hits = 0;
  std::uint64_t last_line = 0;
  for (const TraceRecord& r : *t) {
    if (r.size != 64 || r.is_write) continue;
    stride_hits += r.address == last_line + 64;
    last_line = r.address;
    ++line_reads;
  }
  EXPECT_GT(line_reads, c.accesses / 40);
  EXPECT_GT(stride_hits, line_reads / 2);
  // Property reads (8 bytes) dominate and are skewed.
  std::vector<TraceRecord> props;
  for (const TraceRecord& r : *t) {
    if (r.size == 8) props.push_back(r);
  }
  EXPECT_GT(props.size(), c.accesses / 2);
  std::unordered_map<std::uint64_t, std::uint64_t> per_vertex;
  for (const TraceRecord& r : props) ++per_vertex[r.address];
  std::vector<std::uint64_t> counts;
  for (const auto& [a, n] : per_vertex) counts.push_back(n);
  std::sort(counts.rbegin(), counts.rend());
  const std::uint64_t top = std::accumulate(counts.begin(), counts.begin() + counts.size() / 100, std::uint64_t{0});
  EXPECT_GT(static_cast<double>(top) / props.size(), 0.2);
  // Iterations repeat: the same edge line is read more than once.
  std::unordered_map<std::uint64_t, int> line_seen;
  for (const TraceRecord& r : *t) {
    if (r.size == 64 && !r.is_write) ++line_seen[r.address];
  }
  std::size_t repeated = 0;
  for (const auto& [a, n] : line_seen) repeated += n >= 2;
  EXPECT_GT(repeated, line_seen.size() / 2);
  // next_rank writes exist.
  EXPECT_TRUE(std::any_of(t->begin(), t->end(), [](const TraceRecord& r) { return r.is_write; }));
}

TEST(Workloads, GenerateQuickly) {
  // The evaluation generates millions of records per trace: keep it cheap.
  WorkloadConfig c = small(WorkloadKind::kZipf);
  c.footprint_bytes = 256 * kMiB;
  c.accesses = 2'000'000;
  for (const WorkloadKind k : all_workload_kinds()) {
    c.kind = k;
    auto t = generate_workload(c);
    ASSERT_TRUE(t.has_value()) << workload_kind_name(k) << ": " << t.error().message;
    EXPECT_EQ(t->size(), c.accesses);
  }
}

}  // namespace
}  // namespace cxlpool::tiering
