// SPDX-License-Identifier: Apache-2.0
// The daemon's KV service without a socket: arena planning and tier speeds,
// the arenas' system-region protection, and the data path end to end through
// real rings, eventfds and put window (the client's end driven with
// KvClientRing), with the store engine behind it. Region files are memfds;
// the SSD tier is a file in a temporary directory.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "kvstore/kv_arenas.hpp"
#include "kvstore/kv_remote.hpp"
#include "kvstore/kv_service.hpp"
#include "kvstore/kv_ssd.hpp"
#include "kvstore/kv_views.hpp"
#include "kvstore/ssd_error_report.hpp"
#include "memfd_backing.hpp"
#include "region_pool.hpp"
#include "support/temp_dir.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::daemon {
namespace {

constexpr uint64_t kSlot = 64 * 1024;

Tier tier(uint32_t id, const char* name, proto::TierKind kind, uint64_t capacity) {
  Tier t;
  t.id = id;
  t.name = name;
  t.kind = kind;
  t.capacity = capacity;
  return t;
}

std::vector<Tier> dram_and_emulated() {
  auto slow = tier(1, "emu", proto::TierKind::kEmulated, 8 << 20);
  slow.bandwidth_mbps = 15000;
  slow.latency_ns = 300;
  return {tier(0, "dram0", proto::TierKind::kDram, 64 << 20), slow};
}

KvStoreSection small_section() {
  KvStoreSection kv;
  kv.slot_bytes = kSlot;
  kv.dram_bytes = 4 * kSlot + 1000;  // cut to 4 slots
  kv.cxl_bytes = 4 * kSlot;
  kv.put_window_bytes = 4 * kSlot;
  kv.admission_threshold = 1;
  return kv;
}

std::unique_ptr<RegionPool> make_pool(std::vector<Tier> tiers, PoolLimits limits = {}) {
  return std::make_unique<RegionPool>(std::move(tiers), hal::Topology{}, memfd_backing, nullptr, std::move(limits));
}

Requester user(uid_t uid, bool admin = false) {
  Requester r;
  r.client_id = 1;
  r.uid = uid;
  r.gid = uid;
  r.admin = admin;
  return r;
}

// ---- planning ----

TEST(KvArenas, PlanPicksDramAndTheSlowTierAndCutsToWholeSlots) {
  auto tiers = dram_and_emulated();
  tiers.insert(tiers.begin() + 1, tier(1, "cxl1", proto::TierKind::kCxl, 8 << 20));
  tiers[2].id = 2;
  auto plan = plan_kv_arenas(small_section(), tiers);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->dram_tier, 0u);
  ASSERT_TRUE(plan->cxl_tier.has_value());
  EXPECT_EQ(*plan->cxl_tier, 1u) << "a cxl tier comes before an emulated one";
  EXPECT_EQ(plan->dram_bytes, 4 * kSlot);
  EXPECT_EQ(plan->cxl_bytes, 4 * kSlot);

  auto emulated = plan_kv_arenas(small_section(), dram_and_emulated());
  ASSERT_TRUE(emulated);
  EXPECT_EQ(*emulated->cxl_tier, 1u);

  auto section = small_section();
  section.cxl_bytes = 0;
  auto no_cxl = plan_kv_arenas(section, dram_and_emulated());
  ASSERT_TRUE(no_cxl);
  EXPECT_FALSE(no_cxl->cxl_tier.has_value());
  EXPECT_EQ(no_cxl->cxl_bytes, 0u);

  auto only_dram = plan_kv_arenas(small_section(), {tier(0, "dram0", proto::TierKind::kDram, 1 << 30)});
  ASSERT_TRUE(only_dram);
  EXPECT_FALSE(only_dram->cxl_tier.has_value()) << "no slow tier: no CXL arena, not an error";
}

TEST(KvArenas, PlanRejections) {
  auto no_dram = plan_kv_arenas(small_section(), {tier(0, "emu", proto::TierKind::kEmulated, 1 << 30)});
  ASSERT_FALSE(no_dram);
  EXPECT_EQ(no_dram.error().code, ENODEV);

  auto section = small_section();
  section.dram_tier = "nvme";
  auto unknown = plan_kv_arenas(section, dram_and_emulated());
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ENOENT);
  EXPECT_NE(unknown.error().message.find("kvstore.dram_tier: no tier named 'nvme' (tiers: dram0, emu)"),
            std::string::npos)
      << unknown.error().message;

  section = small_section();
  section.dram_tier = "emu";
  auto same = plan_kv_arenas(section, dram_and_emulated());
  ASSERT_FALSE(same);
  EXPECT_EQ(same.error().code, EINVAL);

  section = small_section();
  section.dram_tier = "emu";
  section.cxl_tier = "dram0";
  auto swapped = plan_kv_arenas(section, dram_and_emulated());
  ASSERT_TRUE(swapped) << "any tier may be named";
  EXPECT_EQ(swapped->dram_tier, 1u);
  EXPECT_EQ(*swapped->cxl_tier, 0u);
}

TEST(KvArenas, TierRates) {
  const auto tiers = dram_and_emulated();
  auto section = small_section();
  auto plan = *plan_kv_arenas(section, tiers);
  auto rates = kv_tier_rates(section, tiers, plan, false);
  EXPECT_DOUBLE_EQ(rates.bandwidth_bps[0], 20000e6);
  EXPECT_DOUBLE_EQ(rates.latency_s[0], 100e-9);
  EXPECT_DOUBLE_EQ(rates.bandwidth_bps[1], 15000e6) << "the emulated tier's declared bandwidth";
  EXPECT_DOUBLE_EQ(rates.latency_s[1], 300e-9);
  EXPECT_EQ(rates.bandwidth_bps[2], 0.0) << "no SSD tier";
  rates = kv_tier_rates(section, tiers, plan, true);
  EXPECT_DOUBLE_EQ(rates.bandwidth_bps[2], 2000e6);
  EXPECT_DOUBLE_EQ(rates.latency_s[2], 100e-6);

  section.cxl_bandwidth_mbps = 9000;
  section.cxl_latency_ns = 500;
  rates = kv_tier_rates(section, tiers, plan, false);
  EXPECT_DOUBLE_EQ(rates.bandwidth_bps[1], 9000e6);
  EXPECT_DOUBLE_EQ(rates.latency_s[1], 500e-9);

  std::vector<Tier> real{tier(0, "dram0", proto::TierKind::kDram, 1 << 30),
                         tier(1, "cxl1", proto::TierKind::kCxl, 1 << 30)};
  section = small_section();
  plan = *plan_kv_arenas(section, real);
  rates = kv_tier_rates(section, real, plan, false);
  EXPECT_DOUBLE_EQ(rates.bandwidth_bps[1], 10000e6) << "a real CXL node declares nothing";
  EXPECT_DOUBLE_EQ(rates.latency_s[1], 300e-9);

  section.cxl_bytes = 0;
  plan = *plan_kv_arenas(section, real);
  rates = kv_tier_rates(section, real, plan, false);
  EXPECT_EQ(rates.bandwidth_bps[1], 0.0);
}

// ---- the arenas are the daemon's ----

TEST(KvArenas, ArenasAreClosedToClientsAndChargedToNoQuota) {
  PoolLimits limits;
  limits.quota_default_bytes = kSlot;  // far below the arena
  auto pool = make_pool(dram_and_emulated(), limits);
  auto arena = create_kv_arena(*pool, kKvDramArenaName, 0, 8 * kSlot);
  ASSERT_TRUE(arena) << arena.error().message;
  EXPECT_EQ(arena->bytes.size(), 8 * kSlot);
  EXPECT_EQ(pool->tiers()[0].used, 8 * kSlot) << "the tier's capacity pays for it";
  EXPECT_EQ(pool->quota_used(::geteuid(), 0), 0u) << "no user's quota does";
  const Region* region = pool->find(arena->region_id);
  ASSERT_NE(region, nullptr);
  EXPECT_TRUE(region->system);
  EXPECT_EQ(region->mode, 0u);
  // The daemon writes through its mapping.
  std::memset(arena->bytes.data(), 0x5a, 4096);

  const Requester other = user(4242);
  const Requester admin = user(0, true);
  // Chunks live in the namespaces' views: no client maps the whole arena.
  auto read = pool->open_named(kKvDramArenaName, false, other);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, EACCES);
  for (const Requester& who : {other, admin, user(::geteuid(), true)}) {
    auto write = pool->open_named(kKvDramArenaName, true, who);
    ASSERT_FALSE(write) << who.uid;
    EXPECT_EQ(write.error().code, EPERM);
  }
  auto unlink = pool->unlink_named(kKvDramArenaName, admin);
  ASSERT_FALSE(unlink);
  EXPECT_EQ(unlink.error().code, EPERM);
  auto migrate = pool->begin_migration(arena->region_id, 1, false);
  ASSERT_FALSE(migrate);
  EXPECT_EQ(migrate.error().code, EPERM);
  auto hold = pool->hold_for_page_moves(arena->region_id);
  ASSERT_FALSE(hold);
  EXPECT_EQ(hold.error().code, EPERM);
  // The read-only descriptor a client gets cannot be mapped writable.
  auto ro = pool->read_only_fd(*region);
  ASSERT_TRUE(ro);
  EXPECT_EQ(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro->get(), 0), MAP_FAILED);
  void* view = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, ro->get(), 0);
  ASSERT_NE(view, MAP_FAILED);
  EXPECT_EQ(static_cast<const unsigned char*>(view)[100], 0x5a);
  ::munmap(view, 4096);

  auto again = create_kv_arena(*pool, kKvDramArenaName, 0, kSlot);
  EXPECT_FALSE(again) << "one arena per name";
  pool->clear();
  EXPECT_EQ(pool->tiers()[0].used, 0u);
}

// ---- the service ----

// The client's end of one connection, as libcxlpool holds it.
struct TestClient {
  proto::KvOpenReply reply;
  std::array<UniqueFd, 4> fds;
  proto::KvRingMemory ring_memory;
  proto::ShmMapping window;
  proto::KvClientRing ring;
  proto::KvCompletionBatch batch;
  uint64_t next_id = 1;

  Result<void> attach(KvOpenResult opened) {
    reply = opened.reply;
    fds = std::move(opened.fds);
    auto memory = proto::KvRingMemory::map(fds[0].get(), reply.ring_bytes);
    if (!memory) return tl::unexpected(memory.error());
    ring_memory = std::move(*memory);
    auto w = proto::ShmMapping::map(fds[3].get(), reply.put_window_bytes);
    if (!w) return tl::unexpected(w.error());
    window = std::move(*w);
    auto r = proto::KvClientRing::attach(ring_memory.bytes(), fds[1].get(), fds[2].get());
    if (!r) return tl::unexpected(r.error());
    ring = std::move(*r);
    return {};
  }

  uint64_t submit(proto::KvOp op, uint64_t ns, std::vector<proto::KvKey> keys, uint64_t param0 = 0) {
    proto::KvRequest r;
    r.request_id = next_id++;
    r.op = static_cast<uint8_t>(op);
    r.namespace_id = ns;
    r.param0 = param0;
    EXPECT_TRUE(ring.submit(r, keys));
    ring.flush();
    return r.request_id;
  }

  // Serves until the completion of `id` is reaped; its index in batch.
  size_t wait(KvService& service, uint64_t id) {
    for (int i = 0; i < 1000; ++i) {
      service.poll();
      const size_t before = batch.completions.size();
      ring.reap(batch);
      for (size_t j = before; j < batch.completions.size(); ++j) {
        if (batch.completions[j].request_id == id) return j;
      }
      ::usleep(100);
    }
    ADD_FAILURE() << "request " << id << " never completed";
    return SIZE_MAX;
  }
};

// The service's counter `name`, or -1 when it has none.
int64_t counter_of(const KvService& service, const std::string& name) {
  std::vector<proto::Counter> counters;
  service.append_counters(counters);
  for (const auto& ctr : counters) {
    if (ctr.name == name) return static_cast<int64_t>(ctr.value);
  }
  return -1;
}

struct ExpectedCounter {
  const char* name;
  int64_t value;  // -1: the service has no such counter
};

// Every counter in `expected` has its value; a failure names the counter.
void expect_counters(const KvService& service, std::initializer_list<ExpectedCounter> expected) {
  for (const ExpectedCounter& e : expected) EXPECT_EQ(counter_of(service, e.name), e.value) << e.name;
}

std::vector<proto::KvKey> keys(uint64_t seed, size_t n) {
  std::vector<proto::KvKey> out;
  for (size_t i = 0; i < n; ++i) out.push_back({seed * 1000 + i + 1, ~(seed * 1000 + i)});
  return out;
}

// Opens session `session` for `uid` and attaches `c` to it.
void attach_session(KvService& service, uint64_t session, uid_t uid, TestClient& c) {
  auto opened = service.open(session, uid, {});
  ASSERT_TRUE(opened) << opened.error().message;
  ASSERT_TRUE(c.attach(std::move(*opened)));
}

class KvServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { pool = make_pool(dram_and_emulated()); }
  void TearDown() override {
    service.reset();
    pool->clear();
  }
  void make(const KvStoreSection& section) {
    auto created = KvService::create(section, *pool);
    ASSERT_TRUE(created) << created.error().message;
    service = std::move(*created);
  }
  // Starts the service with small_section() and attaches `c` as session 1
  // (uid 1000).
  void start_with_client(TestClient& c) {
    make(small_section());
    ASSERT_NO_FATAL_FAILURE(attach_session(*service, 1, 1000, c));
  }
  // Opens the test's namespace for session `session` as its owner (uid 1000).
  uint64_t namespace_id(uint64_t session, const Requester& who = user(1000)) {
    proto::KvNamespaceOpen spec;
    spec.model_id = "model";
    spec.layout = "layout";
    spec.dtype = "bf16";
    spec.chunk_tokens = 16;
    auto ns = service->open_namespace(session, who, spec);
    EXPECT_TRUE(ns) << (ns ? "" : ns.error().message);
    if (!ns) return 0;
    views = std::move(ns->views);
    return ns->reply.namespace_id;
  }
  // The last opened namespace's view of the DRAM arena, as a client maps it.
  std::span<const std::byte> dram_view() {
    if (views.empty()) return {};
    struct stat st {};
    if (::fstat(views[0].get(), &st) != 0) return {};
    auto m = Mapping::map(static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, views[0].get());
    if (!m) return {};
    view_mapping = std::move(*m);
    return {view_mapping.data(), view_mapping.length()};
  }

  std::vector<UniqueFd> views;
  Mapping view_mapping;

  std::unique_ptr<RegionPool> pool;
  std::unique_ptr<KvService> service;
};

TEST_F(KvServiceTest, ArenasWaitForTheFirstRequest) {
  make(small_section());
  EXPECT_FALSE(service->started());
  EXPECT_TRUE(pool->regions().empty());
  EXPECT_EQ(pool->tiers()[0].used, 0u);
  const auto status = service->status();
  EXPECT_TRUE(service->started());
  EXPECT_EQ(status.enabled, 1);
  EXPECT_EQ(status.slot_bytes, kSlot);
  ASSERT_EQ(status.tiers.size(), 3u);
  EXPECT_EQ(status.tiers[0].present, 1);
  EXPECT_EQ(status.tiers[0].capacity_bytes, 4 * kSlot);
  EXPECT_EQ(status.tiers[0].name, "dram0");
  EXPECT_EQ(status.tiers[1].present, 1);
  EXPECT_EQ(status.tiers[1].name, "emu");
  EXPECT_EQ(status.tiers[2].present, 0);
  EXPECT_EQ(pool->regions().size(), 2u);
  EXPECT_EQ(pool->tiers()[0].used, 4 * kSlot);
  EXPECT_EQ(pool->tiers()[1].used, 4 * kSlot);
}

TEST_F(KvServiceTest, AnArenaThatDoesNotFitIsRetriedAndTheRequestSaysWhy) {
  // The emulated tier has 8 MiB; fill it so the CXL arena cannot be had.
  auto blocker = pool->create({1, 8 << 20, 0, proto::RegionKind::kLeased, {}, 0600}, user(1000));
  ASSERT_TRUE(blocker) << blocker.error().message;
  make(small_section());
  auto opened = service->open(1, 1000, {});
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ENOTSUP);
  EXPECT_NE(opened.error().message.find("could not start"), std::string::npos) << opened.error().message;
  EXPECT_NE(opened.error().message.find("cxlpool-kv-cxl"), std::string::npos) << opened.error().message;
  const auto status = service->status();
  EXPECT_EQ(status.enabled, 0);
  EXPECT_NE(status.detail.find("emu"), std::string::npos) << status.detail;
  auto listed = service->namespaces(user(0, true));
  ASSERT_TRUE(listed);
  EXPECT_TRUE(listed->namespaces.empty());
  pool->release_handle((*blocker)->id);
  auto retried = service->open(1, 1000, {});
  ASSERT_TRUE(retried) << retried.error().message;
  EXPECT_TRUE(service->started());
  EXPECT_EQ(pool->regions().size(), 2u) << "the DRAM arena of the first attempt was kept, not made twice";
}

TEST_F(KvServiceTest, OpenHandsOverTheDataPath) {
  make(small_section());
  proto::KvOpen request;
  request.sq_entries = 8;
  request.cq_entries = 16;
  request.put_window_bytes = 2 * kSlot + 5;
  auto opened = service->open(3, 1000, request);
  ASSERT_TRUE(opened) << opened.error().message;
  const auto& r = opened->reply;
  EXPECT_EQ(r.sq_entries, 8u);
  EXPECT_EQ(r.cq_entries, 16u);
  EXPECT_EQ(r.sq_slab_bytes, proto::KvRingGeometry{}.sq_slab_bytes);
  EXPECT_EQ(r.put_window_bytes, 2 * kSlot) << "whole slots, capped by the configuration";
  EXPECT_EQ(r.slot_bytes, kSlot);
  EXPECT_EQ(r.ring_bytes, proto::kv_ring_layout({8, 16, r.sq_slab_bytes, r.cq_slab_bytes}).total_bytes);
  EXPECT_EQ(r.tier_bandwidth_bps[0], 20000000000u);
  EXPECT_EQ(r.tier_latency_ns[1], 300u);
  EXPECT_EQ(r.tier_bandwidth_bps[2], 0u);
  ASSERT_EQ(r.arenas.size(), 2u);
  EXPECT_EQ(r.arenas[0].region_name, kKvDramArenaName);
  EXPECT_EQ(r.arenas[0].tier, 0);
  EXPECT_EQ(r.arenas[0].bytes, 4 * kSlot);
  EXPECT_EQ(r.arenas[1].region_name, kKvCxlArenaName);
  EXPECT_EQ(r.arenas[1].pool_tier_id, 1u);
  for (const auto& fd : opened->fds) EXPECT_TRUE(fd) << "four descriptors";
  EXPECT_EQ(opened->doorbell_fd >= 0, true);
  EXPECT_NE(opened->doorbell_fd, opened->fds[1].get()) << "the client gets its own reference";
  struct stat st {};
  ASSERT_EQ(::fstat(opened->fds[3].get(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 2 * kSlot);
  EXPECT_TRUE(service->has_connection(3));

  auto twice = service->open(3, 1000, {});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, EBUSY);
  proto::KvOpen odd;
  odd.sq_entries = 3;
  auto bad = service->open(4, 1000, odd);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_FALSE(service->has_connection(4));
  proto::KvOpen big;
  big.put_window_bytes = 1ull << 40;
  auto capped = service->open(5, 1000, big);
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->reply.put_window_bytes, 4 * kSlot);
}

TEST_F(KvServiceTest, PutCommitGetReleaseThroughTheRings) {
  TestClient c;
  ASSERT_NO_FATAL_FAILURE(start_with_client(c));
  const uint64_t ns = namespace_id(1);
  const auto k = keys(1, 3);

  // Nothing cached yet.
  auto id = c.submit(proto::KvOp::kLookup, ns, k);
  auto i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].status, 0);
  EXPECT_EQ(c.batch.completions[i].result0, 0u);

  // put_begin: one put-window slot per key; the client writes there.
  constexpr uint64_t kLength = 5000;
  id = c.submit(proto::KvOp::kPutBegin, ns, k, kLength);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  ASSERT_EQ(c.batch.completions[i].status, 0);
  const uint64_t reservation = c.batch.completions[i].result0;
  const auto slots = c.batch.locations_of(i);
  ASSERT_EQ(slots.size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(slots[j].tier, proto::kKvLocationPutWindow);
    ASSERT_LE(slots[j].offset + kLength, c.window.bytes().size());
    std::memset(c.window.bytes().data() + slots[j].offset, 0x10 + static_cast<int>(j), kLength);
  }
  id = c.submit(proto::KvOp::kPutCommit, ns, k, reservation);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].status, 0);
  EXPECT_EQ(c.batch.completions[i].result0, 3u);

  // get: locations in the DRAM arena, which holds the committed bytes.
  id = c.submit(proto::KvOp::kGet, ns, k);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  ASSERT_EQ(c.batch.completions[i].status, 0);
  const uint64_t lease = c.batch.completions[i].result0;
  EXPECT_NE(lease, 0u);
  EXPECT_EQ(c.batch.completions[i].result1, 3u);
  const auto locs = c.batch.locations_of(i);
  ASSERT_EQ(locs.size(), 3u);
  const auto dram = dram_view();
  ASSERT_FALSE(dram.empty());
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(locs[j].tier, 0);
    EXPECT_EQ(locs[j].length, kLength);
    ASSERT_LE(locs[j].offset + kLength, dram.size());
    EXPECT_EQ(static_cast<int>(dram[locs[j].offset]), 0x10 + static_cast<int>(j));
    EXPECT_EQ(static_cast<int>(dram[locs[j].offset + kLength - 1]), 0x10 + static_cast<int>(j));
  }
  EXPECT_EQ(service->status().leases, 1u);

  // Release ends the lease.
  id = c.submit(proto::KvOp::kRelease, ns, {}, lease);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].status, 0);
  EXPECT_EQ(service->status().leases, 0u);

  expect_counters(*service, {{"kv.started", 1},
                             {"kv.connections", 1},
                             {"kv.ring_requests", 5},
                             {"kv.ring_completions", 5},
                             {"kv.puts", 3},
                             {"kv.tier.dram.chunks", 3},
                             {"kv.tier.dram.capacity_bytes", static_cast<int64_t>(4 * kSlot)},
                             {"kv.tier.ssd.chunks", -1}});  // no SSD tier: no SSD counters
}

// The store answers with statuses; the ring carries their errnos, exactly
// the values clients have always seen, and the counters count each status.
TEST_F(KvServiceTest, OutcomesReachTheRingAsTheirErrnos) {
  TestClient c;
  ASSERT_NO_FATAL_FAILURE(start_with_client(c));
  const uint64_t ns = namespace_id(1);
  const auto k = keys(7, 1);
  struct Case {
    proto::KvOp op;
    uint64_t ns;
    uint64_t param0;
    int32_t status;
  };
  const Case cases[] = {
      {proto::KvOp::kLookup, ns, 0, 0},                      // a miss is an answer
      {proto::KvOp::kRelease, ns, 4242, -ENOENT},            // unknown lease
      {proto::KvOp::kPutCommit, ns, 4242, -ENOENT},          // unknown reservation
      {proto::KvOp::kPutBegin, ns, kSlot + 1, -EMSGSIZE},    // larger than a slot
      {proto::KvOp::kLookup, ns + 1, 0, -EACCES},            // a namespace this session did not open
  };
  for (const Case& t : cases) {
    const auto id = c.submit(t.op, t.ns, t.op == proto::KvOp::kRelease ? std::vector<proto::KvKey>{} : k, t.param0);
    const size_t i = c.wait(*service, id);
    ASSERT_NE(i, SIZE_MAX);
    EXPECT_EQ(c.batch.completions[i].status, t.status) << "op " << static_cast<int>(t.op);
  }
  expect_counters(*service, {{"kv.outcome.ok", 1},
                             {"kv.outcome.not_found", 2},
                             {"kv.outcome.too_large", 1},
                             {"kv.outcome.denied", 1},
                             {"kv.outcome.checksum_error", 0},
                             {"kv.rejected_requests", 4},
                             {"kv.ring_denied_requests", 1}});
}

// Namespaces carry an owner and a mode; each session's requests are checked
// against the rights its own opens were granted.
TEST_F(KvServiceTest, NamespaceModesAndPerSessionRights) {
  make(small_section());
  TestClient owner_c, other_c;
  ASSERT_NO_FATAL_FAILURE(attach_session(*service, 1, 1000, owner_c));
  ASSERT_NO_FATAL_FAILURE(attach_session(*service, 2, 1001, other_c));
  const Requester owner = user(1000);
  const Requester other = user(1001);

  proto::KvNamespaceOpen spec;
  spec.model_id = "private";
  spec.layout = "layout";
  spec.dtype = "bf16";
  spec.chunk_tokens = 16;
  auto priv = service->open_namespace(1, owner, spec).transform([](auto r) { return r.reply; });  // mode 0: 0600
  ASSERT_TRUE(priv) << priv.error().message;
  EXPECT_EQ(priv->owner_uid, 1000u);
  EXPECT_EQ(priv->mode, 0600u);
  EXPECT_EQ(priv->rights, kvcache::kKvRightRead | kvcache::kKvRightWrite);
  auto denied = service->open_namespace(2, other, spec).transform([](auto r) { return r.reply; });
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code, EACCES);
  EXPECT_NE(denied.error().message.find("belongs to uid 1000 with mode 0600"), std::string::npos)
      << denied.error().message;

  // The owner stores a chunk; the other session names the namespace id
  // without having opened it: every op but release is refused.
  const auto k = keys(1, 1);
  auto id = owner_c.submit(proto::KvOp::kPutBegin, priv->namespace_id, k, 100);
  auto i = owner_c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  ASSERT_EQ(owner_c.batch.completions[i].status, 0);
  id = owner_c.submit(proto::KvOp::kPutCommit, priv->namespace_id, k, owner_c.batch.completions[i].result0);
  i = owner_c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  ASSERT_EQ(owner_c.batch.completions[i].result0, 1u);
  for (auto op : {proto::KvOp::kLookup, proto::KvOp::kGet, proto::KvOp::kPrefetch, proto::KvOp::kDelete,
                  proto::KvOp::kPutBegin}) {
    id = other_c.submit(op, priv->namespace_id, k, op == proto::KvOp::kPutBegin ? 100 : 0);
    i = other_c.wait(*service, id);
    ASSERT_NE(i, SIZE_MAX);
    EXPECT_EQ(other_c.batch.completions[i].status, -EACCES) << static_cast<int>(op);
    EXPECT_EQ(other_c.batch.completions[i].count, 0u) << "no location leaks out";
  }
  // Unknown ids are refused the same way (nothing to tell them apart).
  id = other_c.submit(proto::KvOp::kLookup, 999, k);
  i = other_c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(other_c.batch.completions[i].status, -EACCES);

  // A 0644 namespace: the other uid reads, cannot write.
  spec.model_id = "shared";
  spec.mode = 0644;
  auto shared = service->open_namespace(1, owner, spec).transform([](auto r) { return r.reply; });
  ASSERT_TRUE(shared) << shared.error().message;
  // Its own keys (keys name one namespace's chunks: the private one's key
  // would find nothing here).
  const auto ks = keys(3, 1);
  id = owner_c.submit(proto::KvOp::kPutBegin, shared->namespace_id, ks, 100);
  i = owner_c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  id = owner_c.submit(proto::KvOp::kPutCommit, shared->namespace_id, ks, owner_c.batch.completions[i].result0);
  ASSERT_NE(owner_c.wait(*service, id), SIZE_MAX);
  spec.mode = 0;  // "whatever it is"
  auto reader = service->open_namespace(2, other, spec).transform([](auto r) { return r.reply; });
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(reader->mode, 0644u);
  EXPECT_EQ(reader->rights, kvcache::kKvRightRead);
  id = other_c.submit(proto::KvOp::kGet, shared->namespace_id, ks);
  i = other_c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(other_c.batch.completions[i].status, 0);
  EXPECT_EQ(other_c.batch.completions[i].result1, 1u) << "the chunk is leased";
  const uint64_t lease = other_c.batch.completions[i].result0;
  id = other_c.submit(proto::KvOp::kRelease, shared->namespace_id, {}, lease);
  i = other_c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(other_c.batch.completions[i].status, 0);
  for (auto op : {proto::KvOp::kPutBegin, proto::KvOp::kDelete}) {
    id = other_c.submit(op, shared->namespace_id, keys(2, 1), op == proto::KvOp::kPutBegin ? 100 : 0);
    i = other_c.wait(*service, id);
    ASSERT_NE(i, SIZE_MAX);
    EXPECT_EQ(other_c.batch.completions[i].status, -EACCES);
  }
  // A non-owner's mode does not change the namespace.
  spec.mode = 0666;
  auto ignored = service->open_namespace(2, other, spec).transform([](auto r) { return r.reply; });
  ASSERT_TRUE(ignored);
  EXPECT_EQ(ignored->mode, 0644u);
  EXPECT_EQ(ignored->rights, kvcache::kKvRightRead);

  // The owner may widen a mode, never narrow it (a reader's mapped views
  // cannot be taken back).
  spec.mode = 0600;
  auto narrowed = service->open_namespace(1, owner, spec);
  ASSERT_FALSE(narrowed);
  EXPECT_EQ(narrowed.error().code, EPERM);
  spec.model_id = "private";
  spec.mode = 0640;
  auto widened = service->open_namespace(1, owner, spec).transform([](auto r) { return r.reply; });
  ASSERT_TRUE(widened) << widened.error().message;
  EXPECT_EQ(widened->mode, 0640u);
  spec.model_id = "shared";

  // Bad modes are refused before anything changes.
  spec.mode = 0755;
  auto bad = service->open_namespace(1, owner, spec).transform([](auto r) { return r.reply; });
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);

  // Drop: the owner or an admin.
  auto not_owner = service->drop_namespace(other, shared->namespace_id);
  ASSERT_FALSE(not_owner);
  EXPECT_EQ(not_owner.error().code, EPERM);
  EXPECT_TRUE(service->drop_namespace(user(0, true), priv->namespace_id));
  EXPECT_TRUE(service->drop_namespace(owner, shared->namespace_id));

  // The listing shows owners and modes.
  auto listed = service->namespaces(user(0, true));
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->namespaces.size(), 2u);
  EXPECT_EQ(listed->namespaces[0].owner_uid, 1000u);
  EXPECT_EQ(listed->namespaces[0].mode, 0640u);
  EXPECT_EQ(listed->namespaces[1].mode, 0644u);
}

// ---- per-namespace views ----

TEST(KvViews, SlotsMoveBetweenViewsWithoutLeavingBytesBehind) {
  KvViews views(kSlot, {KvViewTier{4 * kSlot, -1}, KvViewTier{2 * kSlot, -1}}, nullptr);
  ASSERT_TRUE(views.ensure(1));
  ASSERT_TRUE(views.ensure(2));
  ASSERT_TRUE(views.ensure(2)) << "once";
  EXPECT_EQ(views.counters().views, 2u);
  auto a_fds = views.reader_fds(1);
  ASSERT_TRUE(a_fds) << a_fds.error().message;
  ASSERT_EQ(a_fds->size(), 2u) << "one per arena";
  auto b_fds = views.reader_fds(2);
  ASSERT_TRUE(b_fds);
  auto none = views.reader_fds(3);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ENOENT);

  // What a client gets: read-only descriptors of an inode only the daemon's
  // uid may open (so /proc/self/fd/N cannot be reopened by anyone else).
  for (const UniqueFd& fd : *a_fds) {
    struct stat st {};
    ASSERT_EQ(::fstat(fd.get(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0400u);
    EXPECT_EQ(st.st_uid, ::geteuid());
    EXPECT_EQ(::fcntl(fd.get(), F_GETFL) & O_ACCMODE, O_RDONLY);
    void* w = ::mmap(nullptr, kSlot, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    EXPECT_EQ(w, MAP_FAILED) << "no writable mapping of a view";
    if (w != MAP_FAILED) ::munmap(w, kSlot);
  }
  auto a_map = Mapping::map(4 * kSlot, PROT_READ, MAP_SHARED, (*a_fds)[0].get());
  ASSERT_TRUE(a_map);
  auto b_map = Mapping::map(4 * kSlot, PROT_READ, MAP_SHARED, (*b_fds)[0].get());
  ASSERT_TRUE(b_map);

  // Namespace 1's chunk in slot 1: visible through 1's view only.
  const uint64_t off = kSlot;
  views.assign(kvcache::KvTier::kDram, off, 1);
  std::memset(views.slot(kvcache::KvTier::kDram, off, 1), 0xa1, kSlot);
  EXPECT_EQ(static_cast<int>(a_map->data()[off + 5]), 0xa1);
  EXPECT_EQ(static_cast<int>(b_map->data()[off + 5]), 0);
  EXPECT_EQ(views.holder(kvcache::KvTier::kDram, off), 1u);
  // The slot passes to namespace 2: 1's view is punched there first.
  views.assign(kvcache::KvTier::kDram, off, 2);
  EXPECT_EQ(views.counters().punches, 1u);
  std::memset(views.slot(kvcache::KvTier::kDram, off, 2), 0xb2, kSlot);
  for (uint64_t i = 0; i < kSlot; i += 512) {
    ASSERT_EQ(static_cast<int>(a_map->data()[off + i]), 0) << "1 sees zeros, never 2's bytes, at " << i;
    ASSERT_EQ(static_cast<int>(b_map->data()[off + i]), 0xb2);
  }
  // Back to the holder it has: no punch, the pages stay.
  views.assign(kvcache::KvTier::kDram, off, 2);
  EXPECT_EQ(views.counters().punches, 1u);
  EXPECT_EQ(static_cast<int>(b_map->data()[off]), 0xb2);
}

TEST_F(KvServiceTest, SleepAndDoorbells) {
  make(small_section());
  EXPECT_TRUE(service->arm()) << "nothing started: nothing to wait for";
  auto opened = service->open(1, 1000, {});
  ASSERT_TRUE(opened);
  const int doorbell = opened->doorbell_fd;
  TestClient c;
  ASSERT_TRUE(c.attach(std::move(*opened)));
  EXPECT_EQ(service->poll(), 0u);
  EXPECT_TRUE(service->arm()) << "idle: may sleep";
  // The client sees the daemon asleep and rings the doorbell.
  proto::KvRequest r;
  r.request_id = 77;
  r.op = static_cast<uint8_t>(proto::KvOp::kLookup);
  r.namespace_id = namespace_id(1);
  const auto k = keys(2, 1);
  ASSERT_TRUE(c.ring.submit(r, k));
  EXPECT_TRUE(c.ring.flush()) << "the flush kicked the sleeping daemon";
  uint64_t value = 0;
  ASSERT_EQ(::read(doorbell, &value, sizeof value), static_cast<ssize_t>(sizeof value)) << "the doorbell rang";
  ASSERT_EQ(::write(doorbell, &value, sizeof value), static_cast<ssize_t>(sizeof value));
  service->disarm();
  service->on_doorbell(1);
  EXPECT_EQ(::read(doorbell, &value, sizeof value), -1) << "on_doorbell resets it";
  EXPECT_GT(service->poll(), 0u);
  c.ring.reap(c.batch);
  ASSERT_EQ(c.batch.completions.size(), 1u);
  EXPECT_EQ(c.batch.completions[0].request_id, 77u);
  // A request published while armed: arm() refuses to sleep.
  r.request_id = 78;
  ASSERT_TRUE(c.ring.submit(r, k));
  c.ring.flush();
  EXPECT_FALSE(service->arm());
  service->disarm();
  EXPECT_GT(service->poll(), 0u);
}

TEST_F(KvServiceTest, CloseEndsTheConnectionsLeasesNotItsChunks) {
  make(small_section());
  TestClient c;
  ASSERT_NO_FATAL_FAILURE(attach_session(*service, 9, 1000, c));
  const uint64_t ns = namespace_id(9);
  const auto k = keys(3, 2);
  auto id = c.submit(proto::KvOp::kPutBegin, ns, k, 100);
  auto i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  const uint64_t reservation = c.batch.completions[i].result0;
  id = c.submit(proto::KvOp::kPutCommit, ns, k, reservation);
  ASSERT_NE(c.wait(*service, id), SIZE_MAX);
  id = c.submit(proto::KvOp::kGet, ns, k);
  ASSERT_NE(c.wait(*service, id), SIZE_MAX);
  // A request the daemon has not served yet when the client goes.
  c.submit(proto::KvOp::kGet, ns, k);
  EXPECT_EQ(service->status().leases, 1u);
  service->close(9);
  EXPECT_FALSE(service->has_connection(9));
  EXPECT_EQ(service->status().leases, 0u);
  EXPECT_EQ(service->poll(), 0u) << "nothing left to serve";
  service->close(9);  // unknown: no-op

  // The namespace and its chunks outlive the connection.
  auto listed = service->namespaces(user(0, true));
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->namespaces.size(), 1u);
  EXPECT_EQ(listed->namespaces[0].model_id, "model");
  EXPECT_EQ(listed->namespaces[0].chunks[0], 2u);
  auto stranger = service->drop_namespace(user(1001), ns);
  ASSERT_FALSE(stranger);
  EXPECT_EQ(stranger.error().code, EPERM);
  auto dropped = service->drop_namespace(user(1000), ns);
  ASSERT_TRUE(dropped) << dropped.error().message;
  EXPECT_EQ(dropped->chunks_dropped, 2u);
  auto unknown = service->drop_namespace(user(0, true), 1ull << 40);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ENOENT);
  service->shutdown();
  EXPECT_FALSE(service->started());
}

// ---- the SSD tier ----

// A pod whose peers hold the first `held` keys of any probe; fetches find
// nothing. Jobs are answered as they come: the next poll takes them.
class FakeRemote final : public KvRemote {
 public:
  size_t held = 0;
  std::vector<KvProbeJob> probes;

  bool has_peers() const override { return true; }
  void fetch(KvFetchJob job) override { fetched_.push_back({job.ticket, {}}); }
  void take_results(std::vector<KvFetchResult>& out) override {
    out.insert(out.end(), fetched_.begin(), fetched_.end());
    fetched_.clear();
  }
  void register_view(uint32_t, kvcache::KvTier, std::span<std::byte>) override {}
  void probe(KvProbeJob job) override {
    probed_.push_back({job.ticket, std::min(held, job.keys.size())});
    probes.push_back(std::move(job));
  }
  void take_probe_results(std::vector<KvProbeResult>& out) override {
    out.insert(out.end(), probed_.begin(), probed_.end());
    probed_.clear();
  }

 private:
  std::vector<KvFetchResult> fetched_;
  std::vector<KvProbeResult> probed_;
};

// A lookup that stops short here asks the pod about the keys after its
// prefix and answers with this host's prefix (result0, one location per
// chunk) and the peers' part after it (result2); one that is whole here
// asks nobody.
TEST_F(KvServiceTest, ALookupThatStopsShortAsksThePod) {
  TestClient c;
  ASSERT_NO_FATAL_FAILURE(start_with_client(c));
  FakeRemote remote;
  service->set_remote(&remote);
  const uint64_t ns = namespace_id(1);
  const auto k = keys(7, 5);

  const std::vector<proto::KvKey> mine(k.begin(), k.begin() + 2);
  auto id = c.submit(proto::KvOp::kPutBegin, ns, mine, 4096);
  auto i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  ASSERT_EQ(c.batch.completions[i].status, 0);
  id = c.submit(proto::KvOp::kPutCommit, ns, mine, c.batch.completions[i].result0);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  ASSERT_EQ(c.batch.completions[i].result0, 2u);

  remote.held = 2;
  id = c.submit(proto::KvOp::kLookup, ns, k);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].status, 0);
  EXPECT_EQ(c.batch.completions[i].result0, 2u);
  EXPECT_EQ(c.batch.completions[i].result2, 2u);
  EXPECT_EQ(c.batch.locations_of(i).size(), 2u) << "locations are this host's chunks only";
  ASSERT_EQ(remote.probes.size(), 1u);
  EXPECT_EQ(remote.probes[0].keys, std::vector<proto::KvKey>(k.begin() + 2, k.end()));

  remote.held = 0;
  id = c.submit(proto::KvOp::kLookup, ns, k);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].result0, 2u);
  EXPECT_EQ(c.batch.completions[i].result2, 0u);

  id = c.submit(proto::KvOp::kLookup, ns, mine);
  i = c.wait(*service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].result0, 2u);
  EXPECT_EQ(c.batch.completions[i].result2, 0u);
  EXPECT_EQ(remote.probes.size(), 2u) << "a prefix whole here asks nobody";
  service->set_remote(nullptr);
}

class KvSsdTest : public ::testing::Test {
 protected:
  KvStoreSection section() {
    auto kv = small_section();
    kv.ssd_path = (dir / "kv.img").string();
    kv.ssd_region_bytes = 256 * 1024;
    kv.ssd_bytes = 4ull << 20;
    return kv;
  }
  // On a disk file system, where the SSD log opens with O_DIRECT (tmpfs has none).
  test::TempDir scratch{"kvssd", "/var/tmp"};
  const std::filesystem::path dir = scratch.path();
};

TEST_F(KvSsdTest, CreatesGrowsNeverShrinks) {
  auto kv = section();
  kv.ssd_engine = KvSsdEngine::kPosix;
  {
    auto ssd = open_kv_ssd(kv);
    ASSERT_TRUE(ssd) << ssd.error().message;
    EXPECT_EQ(ssd->engine, "posix");
    EXPECT_EQ(std::filesystem::file_size(kv.ssd_path), 4ull << 20);
    EXPECT_EQ(ssd->store->region_count(), 16u);
  }
  kv.ssd_bytes = 8ull << 20;
  ASSERT_TRUE(open_kv_ssd(kv));
  EXPECT_EQ(std::filesystem::file_size(kv.ssd_path), 8ull << 20);
  kv.ssd_bytes = 2ull << 20;
  ASSERT_TRUE(open_kv_ssd(kv));
  EXPECT_EQ(std::filesystem::file_size(kv.ssd_path), 8ull << 20) << "a larger file keeps its size";
  kv.ssd_bytes = 0;
  auto held = open_kv_ssd(kv);
  ASSERT_TRUE(held) << "an existing file needs no size";
  auto second = open_kv_ssd(kv);
  ASSERT_FALSE(second) << "one daemon per SSD log";
  EXPECT_EQ(second.error().code, EBUSY);
  held->store.reset();
  EXPECT_FALSE(open_kv_ssd(kv)) << "the lock lasts as long as the service, not the store";
  held->lock.reset();
  EXPECT_TRUE(open_kv_ssd(kv));

  auto missing = section();
  missing.ssd_path = (dir / "none.img").string();
  missing.ssd_bytes = 0;
  auto no_size = open_kv_ssd(missing);
  ASSERT_FALSE(no_size);
  EXPECT_EQ(no_size.error().code, EINVAL);
  EXPECT_NE(no_size.error().message.find("kvstore.ssd_bytes is not set"), std::string::npos);
  auto not_a_file = section();
  not_a_file.ssd_path = dir.string();
  auto directory = open_kv_ssd(not_a_file);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, EINVAL);
}

TEST_F(KvSsdTest, ASymlinkIsRefusedAndItsTargetUntouched) {
  auto kv = section();
  kv.ssd_engine = KvSsdEngine::kPosix;
  const auto target = dir / "system-file";
  test::write_file(target, "root:x:0:0:root:/root:/bin/bash\n");
  std::filesystem::create_symlink(target, kv.ssd_path);
  auto opened = open_kv_ssd(kv);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ELOOP);
  EXPECT_NE(opened.error().message.find(kv.ssd_path), std::string::npos) << opened.error().message;
  EXPECT_NE(opened.error().message.find("symbolic link"), std::string::npos) << opened.error().message;
  kv.ssd_format_foreign = true;  // forcing does not make a link acceptable
  EXPECT_FALSE(open_kv_ssd(kv));
  EXPECT_EQ(test::read_file(target), "root:x:0:0:root:/root:/bin/bash\n");
  EXPECT_EQ(std::filesystem::file_size(target), 32u);
}

TEST_F(KvSsdTest, AForeignFileIsRefusedUnlessForced) {
  auto kv = section();
  kv.ssd_engine = KvSsdEngine::kPosix;
  const std::string content = "not a KV log, and nobody's to overwrite\n";
  test::write_file(kv.ssd_path, content);
  auto refused = open_kv_ssd(kv);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EEXIST);
  EXPECT_NE(refused.error().message.find("not a cxlpool KV log"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("ssd_format_foreign"), std::string::npos) << refused.error().message;
  EXPECT_EQ(test::read_file(kv.ssd_path), content) << "nothing grown, nothing written";

  kv.ssd_format_foreign = true;
  {
    auto forced = open_kv_ssd(kv);
    ASSERT_TRUE(forced) << forced.error().message;
    EXPECT_EQ(forced->store->size(), 0u);
    EXPECT_EQ(std::filesystem::file_size(kv.ssd_path), kv.ssd_bytes);
  }
  // Formatted: the foreign bytes are gone and the file is the log's now.
  kv.ssd_format_foreign = false;
  EXPECT_TRUE(open_kv_ssd(kv));
  // A blank file (all zeros, as a fresh one is) is the log's, forced or not.
  kv.ssd_format_foreign = false;
  const auto blank = dir / "blank.img";
  test::write_file(blank, "");
  std::filesystem::resize_file(blank, 1 << 20);
  auto zero = section();
  zero.ssd_path = blank.string();
  zero.ssd_engine = KvSsdEngine::kPosix;
  EXPECT_TRUE(open_kv_ssd(zero));
}

TEST_F(KvSsdTest, ALogWrittenBeforeIsTakenBack) {
  auto pool = make_pool(dram_and_emulated());
  auto kv = section();
  kv.ssd_engine = KvSsdEngine::kPosix;
  {
    auto ssd = open_kv_ssd(kv);
    ASSERT_TRUE(ssd) << ssd.error().message;
    // A sealed region carries the log's header.
    std::vector<std::byte> payload(8192, std::byte{7});
    kvcache::NamespaceFingerprint ns{1, 2};
    ASSERT_TRUE(ssd->store->put(kvcache::ChunkKey{3, 4}, ns, payload));
    ASSERT_TRUE(ssd->store->flush());
  }
  auto again = open_kv_ssd(kv);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->store->size(), 1u);
}

TEST_F(KvSsdTest, AMissingDirectoryIsNamed) {
  auto kv = section();
  kv.ssd_path = (dir / "no-such-dir" / "kv.img").string();
  auto opened = open_kv_ssd(kv);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ENOENT);
  EXPECT_NE(opened.error().message.find("no-such-dir does not exist"), std::string::npos) << opened.error().message;
}

TEST_F(KvSsdTest, TheFileIsAllocatedInFull) {
  auto kv = section();
  kv.ssd_engine = KvSsdEngine::kPosix;
  // An existing sparse file is given its blocks too.
  test::write_file(kv.ssd_path, "");
  std::filesystem::resize_file(kv.ssd_path, kv.ssd_bytes);
  struct stat before {};
  ASSERT_EQ(::stat(kv.ssd_path.c_str(), &before), 0);
  ASSERT_LT(static_cast<uint64_t>(before.st_blocks) * 512, kv.ssd_bytes);
  auto opened = open_kv_ssd(kv);
  ASSERT_TRUE(opened) << opened.error().message;
  struct stat after {};
  ASSERT_EQ(::stat(kv.ssd_path.c_str(), &after), 0);
  EXPECT_GE(static_cast<uint64_t>(after.st_blocks) * 512, kv.ssd_bytes);
}

TEST_F(KvSsdTest, AFullFileSystemStopsTheStartNotTheWritesLater) {
  // A 1 MiB tmpfs cannot hold a 4 MiB log.
  const auto mount_point = dir / "small-fs";
  std::filesystem::create_directory(mount_point);
  if (::mount("cxlpool-test", mount_point.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here: " << std::strerror(errno);
  }
  auto kv = section();
  kv.ssd_engine = KvSsdEngine::kPosix;
  kv.ssd_path = (mount_point / "kv.img").string();
  auto opened = open_kv_ssd(kv);
  const int code = opened ? 0 : opened.error().code;
  const std::string message = opened ? std::string() : opened.error().message;
  const bool left_behind = std::filesystem::exists(kv.ssd_path);
  opened = tl::unexpected(Error{0, ""});
  ::umount2(mount_point.c_str(), MNT_DETACH);
  EXPECT_EQ(code, ENOSPC) << message;
  EXPECT_NE(message.find("cannot allocate 4.0 MiB for kvstore.ssd_path"), std::string::npos) << message;
  EXPECT_FALSE(left_behind) << "the file it created is removed again";
}

TEST(SsdErrorReport, WriteFailuresAreReportedAtOnceThenAtMostEveryTenSeconds) {
  SsdErrorReport report("/var/lib/kv.img");
  kvcache::SsdStoreStats stats;
  constexpr uint64_t kSecond = 1'000'000'000;
  EXPECT_FALSE(report.update(stats, 5 * kSecond)) << "no failure: no line";
  stats.write_errors = 1;
  stats.write_dropped = 15;
  stats.last_write_error = ENOSPC;
  auto first = report.update(stats, 6 * kSecond);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, "SSD log /var/lib/kv.img: 1 write(s) failed and 15 chunk(s) dropped (latest: " +
                        std::string(std::strerror(ENOSPC)) + ")");
  EXPECT_FALSE(report.update(stats, 7 * kSecond)) << "nothing new";
  stats.write_errors = 3;
  stats.write_dropped = 20;
  EXPECT_FALSE(report.update(stats, 15 * kSecond)) << "new failures within 10 s of the last line wait";
  stats.write_errors = 4;
  auto second = report.update(stats, 16 * kSecond);
  ASSERT_TRUE(second);
  EXPECT_NE(second->find(": 3 write(s) failed and 5 chunk(s) dropped in the last 10 s"), std::string::npos)
      << *second;
  EXPECT_FALSE(report.update(stats, 100 * kSecond)) << "counted already";
}

TEST_F(KvSsdTest, SectionKnobsReachTheStore) {
  auto pool = make_pool(dram_and_emulated());
  auto kv = section();
  kv.ssd_lend_min_bytes = 1 << 20;
  kv.copy_behind_min_bytes = 0;
  kv.admission_threshold = 5;
  auto created = KvService::create(kv, *pool);
  ASSERT_TRUE(created) << created.error().message;
  const kvcache::KvStoreConfig c = (*created)->store_config();
  EXPECT_EQ(c.ssd_lend_min_bytes, 1u << 20);
  EXPECT_EQ(c.copy_behind_min_bytes, 0u);
  EXPECT_EQ(c.admission.threshold, 5u);
  EXPECT_EQ(c.slot_bytes, kv.slot_bytes);
}

TEST_F(KvSsdTest, AutoEngineAndRecoveryAcrossServices) {
  auto pool = make_pool(dram_and_emulated());
  auto kv = section();
  kv.cxl_bytes = 0;
  kv.dram_bytes = 2 * kSlot;
  const uint64_t ns_fp_hi = [&] {
    auto created = KvService::create(kv, *pool);
    EXPECT_TRUE(created) << created.error().message;
    if (!created) return uint64_t{0};
    auto& service = **created;
    auto opened = service.open(1, 1000, {});
    EXPECT_TRUE(opened);
    TestClient c;
    EXPECT_TRUE(c.attach(std::move(*opened)));
    proto::KvNamespaceOpen spec;
    spec.model_id = "m";
    spec.layout = "l";
    spec.dtype = "d";
    spec.chunk_tokens = 8;
    auto ns = service.open_namespace(1, user(1000), spec).transform([](auto r) { return r.reply; });
    EXPECT_TRUE(ns);
    const auto k = keys(5, 4);
    auto id = c.submit(proto::KvOp::kPutBegin, ns->namespace_id, k, 3000);
    auto i = c.wait(service, id);
    EXPECT_NE(i, SIZE_MAX);
    id = c.submit(proto::KvOp::kPutCommit, ns->namespace_id, k, c.batch.completions[i].result0);
    EXPECT_NE(c.wait(service, id), SIZE_MAX);
    // The oldest chunk went to SSD; reading it back into DRAM leaves a copy
    // on both tiers.
    id = c.submit(proto::KvOp::kGet, ns->namespace_id, {k[0]});
    i = c.wait(service, id);
    EXPECT_NE(i, SIZE_MAX);
    if (i != SIZE_MAX) {
      EXPECT_EQ(c.batch.completions[i].status, 0);
      EXPECT_EQ(c.batch.completions[i].result1, 1u);
      id = c.submit(proto::KvOp::kRelease, ns->namespace_id, {}, c.batch.completions[i].result0);
      EXPECT_NE(c.wait(service, id), SIZE_MAX);
    }
    const auto status = service.status();
    uint64_t per_tier = 0;
    for (const auto& t : status.tiers) per_tier += t.chunks;
    EXPECT_GT(per_tier, 4u) << "some chunk is on two tiers";
    EXPECT_EQ(status.chunks, 4u) << "each chunk once, wherever its copies are";
    EXPECT_EQ(status.tiers[2].present, 1);
    EXPECT_EQ(status.tiers[2].name, kv.ssd_path);
    EXPECT_NE(status.detail.find("SSD " + kv.ssd_path), std::string::npos) << status.detail;
    service.close(1);
    service.shutdown();  // writes what the arena holds and seals the log
    return ns->fingerprint_hi;
  }();
  pool->clear();
  auto created = KvService::create(kv, *pool);
  ASSERT_TRUE(created) << created.error().message;
  auto listed = (*created)->namespaces(user(0, true));
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->namespaces.size(), 1u);
  EXPECT_EQ(listed->namespaces[0].fingerprint_hi, ns_fp_hi);
  EXPECT_TRUE(listed->namespaces[0].model_id.empty()) << "known by its fingerprint only";
  EXPECT_EQ(listed->namespaces[0].chunks[2], 4u);
  EXPECT_NE((*created)->status().detail.find("4 chunks recovered"), std::string::npos);
  // Nobody owns it until it is opened: it is listed as root's, private.
  EXPECT_EQ(listed->namespaces[0].owner_uid, 0u);
  EXPECT_EQ(listed->namespaces[0].mode, 0600u);
}

// After a restart the SSD log's namespaces have no known owner: an admin's
// open keeps their chunks, anyone else's takes the namespace over empty.
TEST_F(KvSsdTest, RecoveredNamespacesGoToTheFirstOpenerEmptyUnlessAdmin) {
  auto pool = make_pool(dram_and_emulated());
  auto kv = section();
  kv.cxl_bytes = 0;
  proto::KvNamespaceOpen a;
  a.model_id = "tenant-a";
  a.layout = "l";
  a.dtype = "d";
  a.chunk_tokens = 8;
  proto::KvNamespaceOpen b = a;
  b.model_id = "tenant-b";
  const auto k = keys(7, 2);
  {
    auto created = KvService::create(kv, *pool);
    ASSERT_TRUE(created) << created.error().message;
    auto& service = **created;
    TestClient c;
    ASSERT_NO_FATAL_FAILURE(attach_session(service, 1, 1000, c));
    for (const auto* spec : {&a, &b}) {
      auto ns = service.open_namespace(1, user(1000), *spec);
      ASSERT_TRUE(ns) << ns.error().message;
      const auto ks = keys(spec == &a ? 7 : 8, 2);
      auto id = c.submit(proto::KvOp::kPutBegin, ns->reply.namespace_id, ks, 3000);
      auto i = c.wait(service, id);
      ASSERT_NE(i, SIZE_MAX);
      id = c.submit(proto::KvOp::kPutCommit, ns->reply.namespace_id, ks, c.batch.completions[i].result0);
      ASSERT_NE(c.wait(service, id), SIZE_MAX);
    }
    service.close(1);
    service.shutdown();  // both namespaces' chunks go to the log
  }
  pool->clear();
  auto created = KvService::create(kv, *pool);
  ASSERT_TRUE(created) << created.error().message;
  auto& service = **created;
  TestClient c;
  ASSERT_NO_FATAL_FAILURE(attach_session(service, 2, 1001, c));
  // Another uid (even the one that wrote them: the log does not say) gets
  // tenant-a's namespace, without its chunks.
  auto taken = service.open_namespace(2, user(1001), a);
  ASSERT_TRUE(taken) << taken.error().message;
  EXPECT_EQ(taken->reply.owner_uid, 1001u);
  auto id = c.submit(proto::KvOp::kLookup, taken->reply.namespace_id, k);
  auto i = c.wait(service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].status, 0);
  EXPECT_EQ(c.batch.completions[i].result0, 0u) << "the recovered chunks were dropped, not handed over";
  // An admin takes tenant-b over with its chunks.
  auto kept = service.open_namespace(2, user(0, true), b);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->reply.owner_uid, 0u);
  id = c.submit(proto::KvOp::kLookup, kept->reply.namespace_id, keys(8, 2));
  i = c.wait(service, id);
  ASSERT_NE(i, SIZE_MAX);
  EXPECT_EQ(c.batch.completions[i].result0, 2u);
  // Now owned, mode 0600: uid 1001 may not open it.
  auto denied = service.open_namespace(3, user(1001), b);
  ASSERT_FALSE(denied);
  EXPECT_EQ(denied.error().code, EACCES);
}

}  // namespace
}  // namespace cxlpool::daemon
