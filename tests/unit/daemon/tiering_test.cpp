// SPDX-License-Identifier: Apache-2.0
// The tiering service's bookkeeping: which tiers it pairs, where it believes
// each page lives after the moves it applied, and what it reports when a
// move is impossible. Page moves go to a recording fake (this host has one
// NUMA node); region files are real memfds.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "config.hpp"
#include "config_test_support.hpp"
#include "memfd_backing.hpp"
#include "metrics_http.hpp"
#include "tiering/pool_placement.hpp"
#include "tiering/tiering_service.hpp"

namespace cxlpool::daemon {
namespace {

using tiering::PageKey;
using tiering::TierLocation;

constexpr uint64_t kPage = 4096;

// Records page moves and says every page landed where it was sent, except
// the addresses listed in `refuse` (-EBUSY).
class FakePlacement : public hal::PagePlacement {
 public:
  Result<void> bind(void*, size_t, int) override { return {}; }
  Result<std::vector<int>> query(void*, size_t length, size_t page_size) override {
    return std::vector<int>(length / page_size, 0);
  }
  Result<hal::MoveStats> move(void*, size_t, size_t, int, bool) override { return hal::MoveStats{}; }
  Result<std::vector<int>> query_pages(int, std::span<void* const> pages) override {
    return std::vector<int>(pages.size(), 1);
  }
  Result<std::vector<int>> move_pages(int pid, std::span<void* const> pages, int node, bool all) override {
    std::vector<int> status;
    for (void* p : pages) {
      status.push_back(std::find(refuse.begin(), refuse.end(), p) != refuse.end() ? -EBUSY : node);
      moved.push_back({pid, p, node, all});
    }
    return status;
  }
  struct Move {
    int pid;
    void* page;
    int node;
    bool all;
  };
  std::vector<Move> moved;
  std::vector<void*> refuse;
};

// Reports the same accesses every epoch.
class FixedSource : public hal::AccessSource {
 public:
  std::string_view name() const override { return "fixed"; }
  hal::AccessSourceTraits traits() const override { return {true, true, false}; }
  Result<void> collect(std::vector<hal::PageAccess>& out) override {
    for (const auto& a : accesses) {
      out.push_back(a);
      total += a.count;
    }
    return {};
  }
  uint64_t accesses_total() const override { return total; }
  std::vector<hal::PageAccess> accesses;
  uint64_t total = 0;
};

Tier make_tier(uint32_t id, const char* name, proto::TierKind kind, int node, bool own_node) {
  return {.id = id, .kind = kind, .name = name, .numa_node = node, .own_node = own_node, .capacity = 64ull << 20};
}

// dram0 (node 0), cxl1 (node 1), emu (emulated on node 0).
std::vector<Tier> three_tiers() {
  return {make_tier(0, "dram0", proto::TierKind::kDram, 0, true),
          make_tier(1, "cxl1", proto::TierKind::kCxl, 1, true),
          make_tier(2, "emu", proto::TierKind::kEmulated, 0, false)};
}

hal::Topology two_nodes() {
  hal::Topology t;
  t.numa_present = true;
  for (int id : {0, 1}) {
    hal::NumaNode n;
    n.id = id;
    n.total_bytes = n.free_bytes = 1ull << 30;
    if (id == 0) n.cpus = {0};
    t.nodes.push_back(n);
  }
  return t;
}

Requester user() {
  Requester r;
  r.uid = 1000;
  r.gid = 1000;
  r.client_id = 1;
  return r;
}

TEST(TierPair, DefaultsToFirstDramAndFirstCxlTier) {
  auto pair = choose_tier_pair(three_tiers(), "", "");
  ASSERT_TRUE(pair) << pair.error().message;
  EXPECT_EQ(pair->fast, 0u);
  EXPECT_EQ(pair->slow, 1u);
}

TEST(TierPair, FallsBackToAnEmulatedSlowTier) {
  auto tiers = three_tiers();
  tiers.erase(tiers.begin() + 1);
  tiers[1].id = 1;
  auto pair = choose_tier_pair(tiers, "", "");
  ASSERT_TRUE(pair) << pair.error().message;
  EXPECT_EQ(pair->slow, 1u);
}

TEST(TierPair, NamedTiersWinAndUnknownNamesFail) {
  auto pair = choose_tier_pair(three_tiers(), "dram0", "emu");
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->slow, 2u);
  auto unknown = choose_tier_pair(three_tiers(), "", "nope");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("nope"), std::string::npos);
  auto same = choose_tier_pair(three_tiers(), "dram0", "dram0");
  EXPECT_FALSE(same);
}

TEST(TierPair, NoSlowTierIsAnErrorThatSaysWhy) {
  std::vector<Tier> tiers = {make_tier(0, "dram0", proto::TierKind::kDram, 0, true)};
  auto pair = choose_tier_pair(tiers, "", "");
  ASSERT_FALSE(pair);
  EXPECT_NE(pair.error().message.find("slow tier"), std::string::npos) << pair.error().message;
}

TEST(MoveBlocker, EmulatedTiersAndSharedNodesCannotMove) {
  const auto tiers = three_tiers();
  EXPECT_EQ(move_blocker(tiers[0], tiers[1], true), "");
  EXPECT_NE(move_blocker(tiers[0], tiers[2], true).find("emulated"), std::string::npos);
  EXPECT_NE(move_blocker(tiers[0], tiers[1], false).find("placement"), std::string::npos);
  Tier other = tiers[1];
  other.numa_node = 0;
  EXPECT_NE(move_blocker(tiers[0], other, true).find("share"), std::string::npos);
}

class PoolPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool = std::make_unique<RegionPool>(three_tiers(), two_nodes(), memfd_backing, &fake, PoolLimits{});
    auto s = pool->create({1, 8 * kPage, 0, proto::RegionKind::kLeased, {}, 0600}, user());
    ASSERT_TRUE(s) << s.error().message;
    slow_region = (*s)->id;
    auto f = pool->create({0, 4 * kPage, 0, proto::RegionKind::kLeased, {}, 0600}, user());
    ASSERT_TRUE(f) << f.error().message;
    fast_region = (*f)->id;
    view = std::make_unique<PoolPlacement>(*pool, TierPair{0, 1});
  }
  PageKey slow_page(uint64_t i) const { return {hal::AddressSpace::kPoolRegion, slow_region, i * kPage}; }
  PageKey fast_page(uint64_t i) const { return {hal::AddressSpace::kPoolRegion, fast_region, i * kPage}; }

  FakePlacement fake;
  std::unique_ptr<RegionPool> pool;
  std::unique_ptr<PoolPlacement> view;
  uint64_t slow_region = 0;
  uint64_t fast_region = 0;
};

TEST_F(PoolPlacementTest, PagesLiveOnTheirRegionsTierUntilMoved) {
  EXPECT_EQ(view->locate(slow_page(0)), TierLocation::kSlow);
  EXPECT_EQ(view->locate(fast_page(3)), TierLocation::kFast);
  EXPECT_EQ(view->locate(slow_page(8)), TierLocation::kUnknown);  // past the end
  EXPECT_EQ(view->locate({hal::AddressSpace::kPoolRegion, 999, 0}), TierLocation::kUnknown);
  EXPECT_EQ(view->locate({hal::AddressSpace::kPhysical, 0, 0}), TierLocation::kUnknown);

  view->record_move(slow_page(2), TierLocation::kFast);
  EXPECT_EQ(view->locate(slow_page(2)), TierLocation::kFast);
  EXPECT_EQ(view->tier_of(slow_page(2)), 0u);
  EXPECT_EQ(view->locate(slow_page(3)), TierLocation::kSlow);
  EXPECT_EQ(view->net_moved_pages(TierLocation::kFast), 1);
  EXPECT_EQ(view->net_moved_pages(TierLocation::kSlow), -1);
  // Back home: nothing is remembered.
  view->record_move(slow_page(2), TierLocation::kSlow);
  EXPECT_EQ(view->moved_pool_pages(), 0u);
}

TEST_F(PoolPlacementTest, UsageCountsMovedPagesOnTheirNewTier) {
  const auto fast_before = view->usage(TierLocation::kFast);
  EXPECT_EQ(fast_before.used_pages, 4u);
  EXPECT_EQ(fast_before.capacity_pages, (64ull << 20) / kPage);
  view->record_move(slow_page(0), TierLocation::kFast);
  view->record_move(slow_page(1), TierLocation::kFast);
  view->record_move(fast_page(0), TierLocation::kSlow);
  EXPECT_EQ(view->usage(TierLocation::kFast).used_pages, 5u);
  EXPECT_EQ(view->usage(TierLocation::kSlow).used_pages, 7u);
}

TEST_F(PoolPlacementTest, FastPagesListsPromotedPagesFirstAndSkipsDemotedOnes) {
  view->record_move(slow_page(5), TierLocation::kFast);
  view->record_move(fast_page(1), TierLocation::kSlow);
  std::vector<PageKey> out;
  view->fast_pages(out, 100);
  ASSERT_EQ(out.size(), 4u);  // 1 promoted + 3 of the fast region
  EXPECT_EQ(out[0], slow_page(5));
  EXPECT_EQ(std::count(out.begin(), out.end(), fast_page(1)), 0);
  out.clear();
  view->fast_pages(out, 2);
  EXPECT_EQ(out.size(), 2u);
}

TEST_F(PoolPlacementTest, WholeRegionMigrationOrReleaseForgetsPageMoves) {
  view->record_move(slow_page(1), TierLocation::kFast);
  auto migrated = pool->migrate(slow_region, 0, false);
  ASSERT_TRUE(migrated) << migrated.error().message;
  // The region is on the fast tier now; the old override must not survive.
  EXPECT_EQ(view->locate(slow_page(1)), TierLocation::kFast);
  EXPECT_EQ(view->locate(slow_page(2)), TierLocation::kFast);
  view->prune();
  EXPECT_EQ(view->moved_pool_pages(), 0u);

  view->record_move(fast_page(0), TierLocation::kSlow);
  pool->release_handle(fast_region);
  view->prune();
  EXPECT_EQ(view->moved_pool_pages(), 0u);
}

TEST_F(PoolPlacementTest, ProcessPagesFollowTheirNode) {
  const PageKey page{hal::AddressSpace::kProcess, 1234, 0x7f0000000000};
  EXPECT_EQ(view->locate(page), TierLocation::kUnknown);
  view->note_process_page(page, 1);
  EXPECT_EQ(view->locate(page), TierLocation::kSlow);
  view->record_move(page, TierLocation::kFast);
  EXPECT_EQ(view->locate(page), TierLocation::kFast);
  view->note_process_page(page, -ENOENT);
  EXPECT_EQ(view->locate(page), TierLocation::kUnknown);
}

TEST_F(PoolPlacementTest, HeldRegionOutlivesItsReleaseUntilTheMovesEnd) {
  auto held = pool->hold_for_page_moves(slow_region);
  ASSERT_TRUE(held);
  EXPECT_FALSE(pool->begin_migration(slow_region, 0, false));  // EBUSY while moving pages
  pool->release_handle(slow_region);
  ASSERT_NE(pool->find(slow_region), nullptr);
  EXPECT_TRUE(pool->find(slow_region)->destroy_pending);
  pool->end_page_moves(slow_region);
  EXPECT_EQ(pool->find(slow_region), nullptr);
}

// The service end to end with the fake: accesses reported on a slow-tier
// region's pages become confirmed promotions and move the view.
class ServiceTest : public ::testing::Test {
 protected:
  void start(std::vector<Tier> tiers, const std::string& slow_tier = "") {
    pool = std::make_unique<RegionPool>(std::move(tiers), two_nodes(), memfd_backing, &fake, PoolLimits{});
    Config config;
    config.tiering.slow_tier = slow_tier;
    config.tiering.knobs = {{"min_accesses", "1"}, {"fscale_power", "1"}, {"min_period_ms", "10"}};
    auto s = TieringService::create(config, *pool, &fake, false);
    ASSERT_TRUE(s) << s.error().message;
    service = std::move(*s);
    service->add_source(&source);
    const uint32_t slow_id = service->status().tiers[1].role == proto::TierRole::kSlow ? 1 : 2;
    auto r = pool->create({slow_id, 16 * kPage, 0, proto::RegionKind::kLeased, {}, 0600}, user());
    ASSERT_TRUE(r) << r.error().message;
    region = *r;
    for (uint64_t i = 0; i < 4; ++i) {
      source.accesses.push_back({hal::AddressSpace::kPoolRegion, region->id, i * kPage, 1000, ~0ull, 1});
    }
  }
  void epochs(int n) {
    for (int i = 0; i < n; ++i) {
      now += 1'000'000'000ull;
      service->run_epoch(now);
      service->drain_moves();
    }
  }
  FakePlacement fake;
  FixedSource source;
  std::unique_ptr<RegionPool> pool;
  std::unique_ptr<TieringService> service;
  Region* region = nullptr;
  uint64_t now = 0;
};

TEST_F(ServiceTest, ReportedHotPagesArePromotedAndConfirmed) {
  start(three_tiers());
  ASSERT_TRUE(service->enabled()) << service->disabled_reason();
  EXPECT_EQ(service->move_blocker(), "");
  epochs(5);
  const PoolPlacement* view = service->placement_view();
  for (uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(view->locate({hal::AddressSpace::kPoolRegion, region->id, i * kPage}), TierLocation::kFast) << i;
  }
  EXPECT_EQ(view->locate({hal::AddressSpace::kPoolRegion, region->id, 8 * kPage}), TierLocation::kSlow);
  ASSERT_FALSE(fake.moved.empty());
  for (const auto& m : fake.moved) {
    EXPECT_EQ(m.pid, 0);
    EXPECT_EQ(m.node, 0);
    const auto* base = region->mapping.data();
    EXPECT_GE(static_cast<std::byte*>(m.page), base);
    EXPECT_LT(static_cast<std::byte*>(m.page), base + region->size);
  }
  const auto status = service->status();
  EXPECT_EQ(status.enabled, 1);
  EXPECT_EQ(status.tiers[0].role, proto::TierRole::kFast);
  EXPECT_EQ(status.tiers[0].promotions, 4u);
  EXPECT_EQ(status.tiers[0].bytes_promoted, 4 * kPage);
  EXPECT_EQ(service->counters().pages_moved, 4u);
  EXPECT_EQ(region->page_moves, 0u);  // every hold ended
  const auto hot = service->hot(10);
  ASSERT_FALSE(hot.pages.empty());
  EXPECT_EQ(hot.pages[0].owner, region->id);
  EXPECT_EQ(hot.pages[0].tier_id, 0u);
}

TEST_F(ServiceTest, RefusedPagesAreNotConfirmed) {
  start(three_tiers());
  fake.refuse.push_back(region->mapping.data() + 2 * kPage);
  epochs(5);
  const PoolPlacement* view = service->placement_view();
  EXPECT_EQ(view->locate({hal::AddressSpace::kPoolRegion, region->id, 2 * kPage}), TierLocation::kSlow);
  EXPECT_EQ(view->locate({hal::AddressSpace::kPoolRegion, region->id, 1 * kPage}), TierLocation::kFast);
  EXPECT_GT(service->counters().pages_failed, 0u);
  EXPECT_NE(service->status().detail.find("Device or resource busy"), std::string::npos);
}

TEST_F(ServiceTest, EmulatedSlowTierCountsPlannedMovesAsFailedAndSaysWhy) {
  start(three_tiers(), "emu");
  ASSERT_TRUE(service->enabled());
  EXPECT_NE(service->move_blocker().find("emulated"), std::string::npos);
  epochs(5);
  EXPECT_TRUE(fake.moved.empty());
  EXPECT_GT(service->counters().pages_failed, 0u);
  EXPECT_EQ(service->counters().pages_moved, 0u);
  const auto status = service->status();
  EXPECT_NE(status.detail.find("cannot move pages"), std::string::npos);
  EXPECT_NE(status.detail.find("emulated"), std::string::npos);
  EXPECT_GT(status.pages_failed, 0u);
  EXPECT_EQ(status.tiers[0].promotions, 0u);
}

TEST_F(ServiceTest, SetValidatesKeysAndValues) {
  start(three_tiers());
  auto unknown = service->set("no_such_knob", "1");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, EINVAL);
  EXPECT_NE(unknown.error().message.find("no_such_knob"), std::string::npos);
  auto bad = service->set("sketch_rows", "zero");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_NE(bad.error().message.find("sketch_rows"), std::string::npos);
  auto start_only = service->set("fast_tier", "cxl1");
  ASSERT_FALSE(start_only);
  EXPECT_EQ(start_only.error().code, EINVAL);

  auto rows = service->set("sketch_rows", "8");
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->old_value, "4");
  EXPECT_EQ(rows->new_value, "8");
  auto epoch = service->set("epoch_ms", "250");
  ASSERT_TRUE(epoch);
  EXPECT_EQ(epoch->old_value, "1000");
  EXPECT_EQ(service->status().epoch_ns, 250'000'000u);
  EXPECT_FALSE(service->set("epoch_ms", "5"));
  auto off = service->set("enabled", "false");
  ASSERT_TRUE(off);
  EXPECT_FALSE(service->enabled());
  epochs(2);
  EXPECT_EQ(service->status().epoch, 0u);
}

TEST_F(ServiceTest, ReloadAppliesTheFilesKnobs) {
  start(three_tiers());
  ASSERT_TRUE(service->set("top_k", "64"));
  TieringConfig next;
  next.epoch_ms = 500;
  next.knobs = {{"high_watermark", "0.5"}, {"low_watermark", "0.4"}};
  service->reload(next);
  const auto knobs = service->status().knobs;
  std::map<std::string, std::string> values;
  for (const auto& k : knobs) values[k.key] = k.value;
  EXPECT_EQ(values["epoch_ms"], "500");
  EXPECT_EQ(values["top_k"], "512");  // back to the default: the file does not set it
  EXPECT_EQ(std::stod(values["high_watermark"]), 0.5);
  EXPECT_EQ(std::stod(values["low_watermark"]), 0.4);
}

TEST(Service, WithoutASlowTierItIsDisabledAndSaysWhy) {
  FakePlacement fake;
  RegionPool pool({make_tier(0, "dram0", proto::TierKind::kDram, 0, true)}, two_nodes(), memfd_backing, &fake,
                  PoolLimits{});
  auto s = TieringService::create(Config{}, pool, &fake, false);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE((*s)->enabled());
  const auto status = (*s)->status();
  EXPECT_EQ(status.enabled, 0);
  EXPECT_NE(status.detail.find("tiering disabled"), std::string::npos) << status.detail;
  EXPECT_NE(status.detail.find("slow tier"), std::string::npos) << status.detail;
  auto on = (*s)->set("enabled", "true");
  ASSERT_FALSE(on);
  EXPECT_EQ(on.error().code, EINVAL);
}

TEST(TieringMetrics, TiersAndSourcesAreLabels) {
  const std::vector<proto::Counter> counters = {{"tiering.tier.emu-slow.promotions", 3},
                                                {"tiering.tier.dram0.promotions", 4},
                                                {"tiering.tier.dram0.hot_pages", 7},
                                                {"tiering.tier.dram0.bytes_promoted", 8192},
                                                {"tiering.source.client.accesses", 9},
                                                {"tiering.epochs", 2}};
  const std::string text = render_prometheus(counters);
  EXPECT_NE(text.find("# TYPE cxlpool_tiering_promotions_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tiering_promotions_total{tier=\"emu-slow\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tiering_promotions_total{tier=\"dram0\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE cxlpool_tiering_hot_pages gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tiering_promoted_bytes_total{tier=\"dram0\"} 8192\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tiering_source_accesses_total{source=\"client\"} 9\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tiering_epochs_total 2\n"), std::string::npos) << text;
  // One TYPE line per metric, however many tiers.
  EXPECT_EQ(text.find("# TYPE cxlpool_tiering_promotions_total"), text.rfind("# TYPE cxlpool_tiering_promotions_total"));
}

std::vector<std::string> tiering_keys() {
  std::vector<std::string> keys = {"enabled", "epoch_ms", "fast_tier", "slow_tier", "sources",
                                   "damon_sysfs_root", "damon_kdamond"};
  for (const auto& k : tiering::M5Config::keys()) keys.push_back(k);
  return keys;
}

TEST(TieringConfig, EveryKeyIsDocumentedAndShownInTheExample) {
  const std::string doc = read_file(env_value("CXLPOOL_CONFIG_DOC"));
  const std::string example = read_file(env_value("CXLPOOL_EXAMPLE_CONFIG"));
  ASSERT_FALSE(doc.empty()) << "CXLPOOL_CONFIG_DOC is not set (run through meson test)";
  ASSERT_FALSE(example.empty()) << "CXLPOOL_EXAMPLE_CONFIG is not set (run through meson test)";
  for (const auto& key : tiering_keys()) {
    EXPECT_TRUE(doc_has_row(doc, "tiering." + key)) << "docs/configuration.md lacks " << key;
    EXPECT_TRUE(example_shows(example, key)) << "the example does not show tiering." << key;
  }
  auto parsed = parse_config(example, "example");
  ASSERT_TRUE(parsed) << parsed.error().message;
}

TEST(TieringConfig, DefaultsAndNormalizedKnobs) {
  auto plain = parse_config("", "empty");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->tiering.enabled.has_value());
  EXPECT_EQ(plain->tiering.epoch_ms, 1000u);
  EXPECT_EQ(plain->tiering.sources, std::vector<std::string>{"client"});
  EXPECT_TRUE(plain->tiering.knobs.empty());

  auto c = parse_config(
      "[tiering]\nenabled = false\nepoch_ms = 250\nfast_tier = \"dram0\"\nslow_tier = \"cxl1\"\n"
      "sources = [\"client\", \"perf\"]\nnominator = \"hwt\"\nhigh_watermark = 0.5\nlow_watermark = 0.25\n"
      "promote_sparse = true\nrate_limit_mib_s = 64\n",
      "t.toml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->tiering.enabled, std::optional<bool>(false));
  EXPECT_EQ(c->tiering.epoch_ms, 250u);
  EXPECT_EQ(c->tiering.fast_tier, "dram0");
  EXPECT_EQ(c->tiering.slow_tier, "cxl1");
  std::map<std::string, std::string> knobs(c->tiering.knobs.begin(), c->tiering.knobs.end());
  EXPECT_EQ(knobs.size(), 5u);
  EXPECT_EQ(knobs["nominator"], "hwt");
  EXPECT_EQ(knobs["promote_sparse"], "true");
  EXPECT_EQ(std::stod(knobs["high_watermark"]), 0.5);
  EXPECT_EQ(std::stod(knobs["rate_limit_mib_s"]), 64.0);
}

TEST(TieringConfig, ErrorsNameFileLineAndKey) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : {Case{"[tiering]\nsketch_rows = 0\n", "t.toml:2: tiering.sketch_rows: "},
                        Case{"[tiering]\nnominator = 3\n", "t.toml:2: tiering.nominator: "},
                        Case{"[tiering]\nhigh_watermark = [1]\n", "t.toml:2: tiering.high_watermark: expected"},
                        Case{"[tiering]\nepoch_ms = 5\n", "t.toml:2: tiering.epoch_ms: "},
                        Case{"[tiering]\nsources = [\"client\", \"client\"]\n", "t.toml:2: tiering.sources: "},
                        Case{"[tiering]\nfast_tier = \"A B\"\n", "t.toml:2: tiering.fast_tier: "},
                        Case{"[tiering]\nbogus = 1\n", "t.toml:2: tiering.bogus: unknown key"}}) {
    auto r = parse_config(c.text, "t.toml");
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().code, EINVAL);
    EXPECT_EQ(r.error().message.rfind(c.expected, 0), 0u) << r.error().message;
    // The manager's own prefix is not repeated.
    const size_t first = r.error().message.find("tiering.");
    EXPECT_EQ(r.error().message.find("tiering.", first + 1), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace cxlpool::daemon
