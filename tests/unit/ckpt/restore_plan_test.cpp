// SPDX-License-Identifier: Apache-2.0
// The restore plan: per-VMA steps under each policy, the room for the
// restorer's area, the vDSO checks and every refusal's reason.
#include "cxlpool/ckpt/restore_plan.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

#include "support/ckpt_sample_manifest.hpp"

namespace cxlpool::ckpt {
namespace {

// The sample without its cxlpool resources (a restore of them connects to
// cxlpoold; ClientRegionsAreMappedShared covers their plan).
Manifest restorable() { return test::without_client(test::sample_manifest()); }

HostFacts host_like(const Manifest& m) {
  HostFacts h;
  for (const Vma& v : m.vmas)
    if (v.kind == VmaKind::kVdso) h.specials.push_back({VmaKind::kVdso, 0x7ff000000000ull, 0x7ff000000000ull + (v.end - v.start)});
  return h;
}

std::vector<RestoreStep> steps_in(const RestorePlan& p, uint64_t start, uint64_t end) {
  std::vector<RestoreStep> out;
  for (const RestoreStep& s : p.steps)
    if (s.addr >= start && s.addr < end) out.push_back(s);
  return out;
}

TEST(RestorePlan, MowMapsTheImageOverEachVma) {
  const Manifest m = restorable();
  auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
  ASSERT_TRUE(plan) << plan.error().message;
  // The executable: the file, then its one changed page from the image.
  auto exe = steps_in(*plan, 0x400000, 0x402000);
  ASSERT_EQ(exe.size(), 2u);
  EXPECT_EQ(exe[0].kind, StepKind::kMap);
  EXPECT_EQ(exe[0].source, MapSource::kFile);
  EXPECT_EQ(exe[0].file, 0u);
  EXPECT_EQ(exe[0].len, 0x2000u);
  EXPECT_EQ(exe[0].prot, static_cast<uint32_t>(PROT_READ | PROT_EXEC));
  EXPECT_EQ(exe[1].source, MapSource::kImage);
  EXPECT_EQ(exe[1].addr, 0x401000u);
  EXPECT_EQ(exe[1].offset, 4096u);
  EXPECT_EQ(exe[1].map_flags, static_cast<uint32_t>(MAP_PRIVATE));
  // The heap: anonymous, then two pages from the image.
  auto heap = steps_in(*plan, 0x600000, 0x604000);
  ASSERT_EQ(heap.size(), 2u);
  EXPECT_EQ(heap[0].source, MapSource::kAnon);
  EXPECT_EQ(heap[0].map_flags, static_cast<uint32_t>(MAP_PRIVATE | MAP_ANONYMOUS));
  EXPECT_EQ(heap[1].len, 2 * kPageSize);
  EXPECT_EQ(heap[1].offset, 8192u);
  EXPECT_EQ(plan->mapped_image_bytes, 4 * kPageSize);
  EXPECT_EQ(plan->copied_bytes, 0u);
  // The vDSO is moved, not mapped.
  EXPECT_TRUE(steps_in(*plan, 0x7f0000010000ull, 0x7f0000012000ull).empty());
  ASSERT_EQ(plan->moves.size(), 1u);
  EXPECT_EQ(plan->moves[0].to, 0x7f0000010000ull);
  EXPECT_EQ(plan->moves[0].from, 0x7ff000000000ull);
}

TEST(RestorePlan, CopyReadsEveryPageAndRestoresProtection) {
  Manifest m = restorable();
  m.vmas[1].prot = PROT_READ;  // a read-only anonymous VMA with pages
  auto plan = plan_restore(m, RestorePolicy::kCopy, host_like(m));
  ASSERT_TRUE(plan) << plan.error().message;
  auto heap = steps_in(*plan, 0x600000, 0x604000);
  ASSERT_EQ(heap.size(), 3u);
  EXPECT_EQ(heap[0].prot, static_cast<uint32_t>(PROT_READ | PROT_WRITE));  // writable while copied into
  EXPECT_EQ(heap[1].kind, StepKind::kCopy);
  EXPECT_EQ(heap[2].kind, StepKind::kProtect);
  EXPECT_EQ(heap[2].prot, static_cast<uint32_t>(PROT_READ));
  EXPECT_EQ(plan->copied_bytes, 4 * kPageSize);
  EXPECT_EQ(plan->mapped_image_bytes, 0u);
}

TEST(RestorePlan, HybridCopiesHotPagesAndMapsTheRest) {
  Manifest m = restorable();
  m.hot_pages = {0x601000};  // the second page of the heap's run
  auto plan = plan_restore(m, RestorePolicy::kHybrid, host_like(m));
  ASSERT_TRUE(plan) << plan.error().message;
  // The run is mapped from the image whole (one VMA), and the hot page
  // written once in it so that the kernel's copy-on-write makes it the
  // clone's own; the VMA is writable meanwhile and given its protection back.
  auto heap = steps_in(*plan, 0x600000, 0x604000);
  ASSERT_GE(heap.size(), 3u);
  EXPECT_EQ(heap[1].kind, StepKind::kMap);
  EXPECT_EQ(heap[1].source, MapSource::kImage);
  EXPECT_EQ(heap[1].addr, 0x600000u);
  EXPECT_EQ(heap[1].len, 2 * kPageSize);
  EXPECT_EQ(heap[1].offset, 8192u);
  EXPECT_TRUE(heap[1].prot & PROT_WRITE);
  EXPECT_EQ(heap[2].kind, StepKind::kAdvise);
  EXPECT_EQ(heap[2].advice, MADV_POPULATE_WRITE);
  EXPECT_EQ(heap[2].addr, 0x601000u);
  EXPECT_EQ(heap[2].len, kPageSize);
  EXPECT_EQ(plan->copied_bytes, kPageSize);
}

TEST(RestorePlan, MoaRegistersAnonymousRunsAndMapsFileRuns) {
  const Manifest m = restorable();
  HostFacts h = host_like(m);
  EXPECT_EQ(plan_restore(m, RestorePolicy::kMoa, h).error().code, ENOTSUP);
  h.lazy_pager = true;
  auto plan = plan_restore(m, RestorePolicy::kMoa, h);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(steps_in(*plan, 0x400000, 0x402000)[1].kind, StepKind::kMap);  // uffd cannot serve file mappings
  auto heap = steps_in(*plan, 0x600000, 0x604000);
  ASSERT_EQ(heap.size(), 2u);
  EXPECT_EQ(heap[1].kind, StepKind::kUffd);
  EXPECT_EQ(plan->lazy_bytes, 3 * kPageSize);
}

TEST(RestorePlan, AdviceIsGivenAgainOverTheWholeVma) {
  Manifest m = restorable();
  m.vmas[1].madvise = kAdviseDontFork | kAdviseHugePage | kAdviseWipeOnFork;
  m.vmas[0].madvise = kAdviseWipeOnFork;  // a file mapping: the kernel refuses it there
  auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
  ASSERT_TRUE(plan);
  std::vector<int32_t> heap_advice, exe_advice;
  for (const RestoreStep& s : steps_in(*plan, 0x600000, 0x604000))
    if (s.kind == StepKind::kAdvise) {
      heap_advice.push_back(s.advice);
      EXPECT_EQ(s.len, 0x4000u);
    }
  for (const RestoreStep& s : steps_in(*plan, 0x400000, 0x402000))
    if (s.kind == StepKind::kAdvise) exe_advice.push_back(s.advice);
  EXPECT_EQ(heap_advice, (std::vector<int32_t>{MADV_DONTFORK, MADV_WIPEONFORK, MADV_HUGEPAGE}));
  EXPECT_TRUE(exe_advice.empty());
  EXPECT_EQ(steps_in(*plan, 0x600000, 0x604000).back().kind, StepKind::kAdvise);  // after the image's pages
}

TEST(RestorePlan, PrefaultPopulatesEachImageMapping) {
  const Manifest m = restorable();
  auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
  ASSERT_TRUE(plan);
  const size_t before = plan->steps.size();
  prefault_image_pages(*plan);
  size_t populates = 0;
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    if (plan->steps[i].kind != StepKind::kAdvise) continue;
    ++populates;
    EXPECT_EQ(plan->steps[i].advice, MADV_POPULATE_READ);
    EXPECT_EQ(plan->steps[i - 1].source, MapSource::kImage);
    EXPECT_EQ(plan->steps[i].addr, plan->steps[i - 1].addr);
  }
  EXPECT_EQ(populates, 3u);
  EXPECT_EQ(plan->steps.size(), before + 3);
}

TEST(RestorePlan, StacksKeepGrowingDown) {
  Manifest m = restorable();
  m.vmas[2].map_flags |= MAP_GROWSDOWN;
  auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
  ASSERT_TRUE(plan);
  auto stack = steps_in(*plan, 0x7f0000000000ull, 0x7f0000004000ull);
  EXPECT_TRUE(stack[0].map_flags & MAP_GROWSDOWN);
  // And the restorer's area keeps out of the room below it.
  for (const AddrRange& g : plan->gaps)
    EXPECT_FALSE(g.end > 0x7f0000000000ull - (16ull << 20) && g.start < 0x7f0000000000ull);
}

TEST(RestorePlan, AreaGoesWhereTheTargetHasNothing) {
  const Manifest m = restorable();
  auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
  ASSERT_TRUE(plan);
  const uint64_t bytes = 1 << 20;
  auto candidates = area_candidates(plan->gaps, bytes, 1 << 20);
  ASSERT_FALSE(candidates.empty());
  for (uint64_t at : candidates) {
    EXPECT_EQ(at % kPageSize, 0u);
    EXPECT_GE(at, 1u << 20);
    for (const Vma& v : m.vmas) EXPECT_TRUE(at + bytes <= v.start || at >= v.end) << std::hex << at;
  }
  // Nothing fits in a gap too small.
  EXPECT_TRUE(area_candidates({{0x100000, 0x101000}}, 0x2000, 0x1000).empty());
}

TEST(RestorePlan, UnmapsEverythingButWhatIsKept) {
  auto r = unmap_ranges({{0x5000, 0x6000}, {0x1000, 0x2000}}, 0, 0x10000);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].start, 0u);
  EXPECT_EQ(r[0].end, 0x1000u);
  EXPECT_EQ(r[1].start, 0x2000u);
  EXPECT_EQ(r[1].end, 0x5000u);
  EXPECT_EQ(r[2].start, 0x6000u);
  EXPECT_EQ(r[2].end, 0x10000u);
}

TEST(RestorePlan, RefusesAnotherKernelsVdso) {
  const Manifest m = restorable();
  HostFacts h = host_like(m);
  h.specials[0].end += kPageSize;
  auto plan = plan_restore(m, RestorePolicy::kMow, h);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, EXDEV);
  EXPECT_NE(plan.error().message.find("[vdso] is 12288 bytes, the checkpoint's 8192"), std::string::npos)
      << plan.error().message;
  h = host_like(m);
  h.specials.push_back({VmaKind::kVvar, 0x7ff000100000ull, 0x7ff000104000ull});
  EXPECT_EQ(plan_restore(m, RestorePolicy::kMow, h).error().code, EXDEV);
  h = host_like(m);
  h.specials[0].kind = VmaKind::kVvar;
  EXPECT_EQ(plan_restore(m, RestorePolicy::kMow, h).error().code, EXDEV);
}

// A CPU whose last xstate component is PKRU (offset 2688, 8 bytes) has a
// 2696-byte xsave area: not a multiple of 64, and valid.
TEST(RestorePlan, AnXsaveAreaEndingWithPkruIsRestorable) {
  Manifest m = restorable();
  for (ThreadState& t : m.threads) t.xsave.resize(2696);
  auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
  EXPECT_TRUE(plan) << plan.error().message;
}

TEST(RestorePlan, RefusesWithAReason) {
  struct Case {
    const char* what;
    void (*change)(Manifest&);
    int code;
    const char* says;
  };
  const Case cases[] = {
      {"region of an old image",
       [](Manifest& m) {
         m.regions = test::sample_manifest().regions;
         for (RegionRef& g : m.regions) g.kind = RegionKind::kUnknown;
       },
       ENOTSUP, "neither named nor leased"},
      {"no socket path", [](Manifest& m) { m.regions = test::sample_manifest().regions; }, ENOTSUP,
       "which cxlpoold"},
      {"region VMA not listed",
       [](Manifest& m) {
         m.vmas.insert(m.vmas.begin() + 2, {0x7e0000000000ull, 0x7e0000001000ull, PROT_READ, MAP_SHARED,
                                            VmaKind::kCxlpoolRegion, 0, 0, 0});
       },
       EINVAL, "does not list"},
      {"pid 1", [](Manifest& m) { m.process.pid = 1; m.threads[0].tid = 1; }, EINVAL, "keeper"},
      {"leader", [](Manifest& m) { std::swap(m.threads[0], m.threads[1]); }, EINVAL, "leader"},
      {"repeated tid", [](Manifest& m) { m.threads[1].tid = m.threads[0].tid; }, EINVAL, "repeated"},
      {"registers", [](Manifest& m) { m.threads[0].regs.resize(100); }, EINVAL, "registers"},
      {"xsave", [](Manifest& m) { m.threads[1].xsave.resize(100); }, EINVAL, "xsave"},
      {"two sockets",
       [](Manifest& m) {
         m.cxlpool_socket = "/run/cxlpool.sock";
         m.fds.push_back({5, FdKind::kCxlpoolSocket, kNoFile, 0, 0});
         m.fds.push_back({6, FdKind::kCxlpoolSocket, kNoFile, 0, 0});
       },
       ENOTSUP, "second cxlpool control socket"},
      {"stdio above 2", [](Manifest& m) { m.fds.push_back({7, FdKind::kStdio, kNoFile, 0, 0}); }, ENOTSUP, "fd 7"},
      {"shared", [](Manifest& m) { m.vmas[1].map_flags = MAP_SHARED; }, ENOTSUP, "shared"},
      {"version", [](Manifest& m) { m.version = 9; }, ENOTSUP, "version 9"},
      {"no threads", [](Manifest& m) { m.threads.clear(); }, EINVAL, "no threads"},
  };
  for (const Case& c : cases) {
    Manifest m = restorable();
    c.change(m);
    auto plan = plan_restore(m, RestorePolicy::kMow, host_like(m));
    ASSERT_FALSE(plan) << c.what;
    EXPECT_EQ(plan.error().code, c.code) << c.what;
    EXPECT_NE(plan.error().message.find(c.says), std::string::npos) << c.what << ": " << plan.error().message;
  }
}

// A named region's VMA becomes a MAP_SHARED mapping of the region's
// descriptor (opened again through cxlpoold) at its offset; the socket and
// the region's own descriptor are the clone stage's, not the plan's.
TEST(RestorePlan, ClientRegionsAreMappedShared) {
  Manifest m = test::sample_manifest();
  m.vmas.push_back({0x7e0000000000ull, 0x7e0000200000ull, PROT_READ, MAP_SHARED, VmaKind::kCxlpoolRegion, 0, 4096,
                    0});
  std::sort(m.vmas.begin(), m.vmas.end(), [](const Vma& a, const Vma& b) { return a.start < b.start; });
  auto plan = plan_restore(m, RestorePolicy::kMoa, [&] {
    HostFacts h = host_like(m);
    h.lazy_pager = true;
    return h;
  }());
  ASSERT_TRUE(plan) << plan.error().message;
  auto step = std::find_if(plan->steps.begin(), plan->steps.end(),
                           [](const RestoreStep& s) { return s.source == MapSource::kRegion; });
  ASSERT_NE(step, plan->steps.end());
  EXPECT_EQ(step->kind, StepKind::kMap);
  EXPECT_EQ(step->addr, 0x7e0000000000ull);
  EXPECT_EQ(step->len, 2u << 20);
  EXPECT_EQ(step->map_flags, static_cast<uint32_t>(MAP_SHARED));
  EXPECT_EQ(step->prot, static_cast<uint32_t>(PROT_READ));
  EXPECT_EQ(step->file, 0u);
  EXPECT_EQ(step->offset, 4096u);
  EXPECT_EQ(std::count_if(plan->steps.begin(), plan->steps.end(),
                          [](const RestoreStep& s) { return s.source == MapSource::kRegion; }),
            1);
}

// A leased region's VMA is mapped as a named one's: MAP_SHARED from the
// descriptor of the lease the clone's connection makes in its place.
TEST(RestorePlan, LeasedRegionsAreMappedSharedLikeNamedOnes) {
  Manifest m = test::sample_manifest_with_lease();
  m.vmas.push_back({0x7f0000050000ull, 0x7f0000054000ull, PROT_READ | PROT_WRITE, MAP_SHARED,
                    VmaKind::kCxlpoolRegion, 0, 0x1000, 0});
  std::sort(m.vmas.begin(), m.vmas.end(), [](const Vma& a, const Vma& b) { return a.start < b.start; });
  for (RestorePolicy policy : {RestorePolicy::kMow, RestorePolicy::kHybrid, RestorePolicy::kCopy}) {
    auto plan = plan_restore(m, policy, host_like(m));
    ASSERT_TRUE(plan) << plan.error().message;
    auto step = std::find_if(plan->steps.begin(), plan->steps.end(),
                             [](const RestoreStep& s) { return s.source == MapSource::kRegion; });
    ASSERT_NE(step, plan->steps.end());
    EXPECT_EQ(step->addr, 0x7f0000050000ull);
    EXPECT_EQ(step->len, 0x4000u);
    EXPECT_EQ(step->map_flags, static_cast<uint32_t>(MAP_SHARED));
    EXPECT_EQ(step->prot, static_cast<uint32_t>(PROT_READ | PROT_WRITE));
    EXPECT_EQ(step->file, 2u) << "the lease's mapping entry";
    EXPECT_EQ(step->offset, 0x1000u);
  }
}

TEST(RestorePlan, ChangedFilesAreRefused) {
  const FileRef f{"/usr/bin/sample", 0x803, 1234, 8192, 1700000000000000000};
  EXPECT_TRUE(check_file_unchanged(f, {0x803, 1234, 8192, 1700000000000000000}));
  auto other = check_file_unchanged(f, {0x803, 99, 8192, 1700000000000000000});
  EXPECT_EQ(other.error().code, ESTALE);
  EXPECT_NE(other.error().message.find("another file"), std::string::npos);
  EXPECT_NE(check_file_unchanged(f, {0x803, 1234, 8193, 1700000000000000000}).error().message.find("size"),
            std::string::npos);
  EXPECT_NE(check_file_unchanged(f, {0x803, 1234, 8192, 1700000000000000001}).error().message.find("modified"),
            std::string::npos);
}

// Shared anonymous memory is one new object per id, mapped MAP_SHARED at
// each VMA's offset, its stored pages copied in under every policy.
TEST(RestorePlan, SharedAnonymousMemoryIsMappedSharedAndCopiedUnderEveryPolicy) {
  const Manifest m = test::without_client(test::sample_manifest_with_shared_anon());
  for (RestorePolicy policy : {RestorePolicy::kMow, RestorePolicy::kMoa, RestorePolicy::kHybrid, RestorePolicy::kCopy}) {
    HostFacts host = host_like(m);
    host.lazy_pager = true;
    auto plan = plan_restore(m, policy, host);
    ASSERT_TRUE(plan) << plan.error().message;
    auto first = steps_in(*plan, 0x7f0000020000ull, 0x7f0000022000ull);
    ASSERT_EQ(first.size(), 2u) << policy_name(policy);
    EXPECT_EQ(first[0].kind, StepKind::kMap);
    EXPECT_EQ(first[0].source, MapSource::kSharedObject);
    EXPECT_EQ(first[0].map_flags, static_cast<uint32_t>(MAP_SHARED));
    EXPECT_EQ(first[0].file, 0u);
    EXPECT_EQ(first[0].offset, 0u);
    EXPECT_EQ(first[1].kind, StepKind::kCopy);
    EXPECT_EQ(first[1].len, kPageSize);
    EXPECT_EQ(first[1].offset, m.runs.back().image_offset);
    // The read-only part: no pages, mapped read-only at its offset.
    auto split = steps_in(*plan, 0x7f0000022000ull, 0x7f0000024000ull);
    ASSERT_EQ(split.size(), 1u);
    EXPECT_EQ(split[0].offset, 0x2000u);
    EXPECT_EQ(split[0].prot, static_cast<uint32_t>(PROT_READ));
    EXPECT_EQ(split[0].file, 0u);
    auto alias = steps_in(*plan, 0x7f0000030000ull, 0x7f0000034000ull);
    ASSERT_EQ(alias.size(), 1u);
    EXPECT_EQ(alias[0].file, 0u);
    EXPECT_EQ(alias[0].len, 0x4000u);
    auto other = steps_in(*plan, 0x7f0000040000ull, 0x7f0000041000ull);
    ASSERT_EQ(other.size(), 1u);
    EXPECT_EQ(other[0].file, 1u);
    EXPECT_GE(plan->copied_bytes, kPageSize);
  }
}

TEST(RestorePlan, PolicyNames) {
  for (const char* name : {"mow", "moa", "hybrid", "copy"}) EXPECT_EQ(policy_name(*parse_policy(name)), name);
  EXPECT_EQ(parse_policy("lazy").error().code, EINVAL);
}

TEST(RestorePlan, SystemCallsRestartAsTheKernelWould) {
  auto regs_with = [](int64_t rax, int64_t orig, uint64_t rip) {
    std::vector<uint8_t> r(27 * 8, 0);
    std::memcpy(r.data() + 10 * 8, &rax, 8);
    std::memcpy(r.data() + 15 * 8, &orig, 8);
    std::memcpy(r.data() + 16 * 8, &rip, 8);
    return r;
  };
  auto word = [](const std::vector<uint8_t>& r, size_t i) {
    int64_t v;
    std::memcpy(&v, r.data() + i * 8, 8);
    return v;
  };
  for (int64_t restart : {-512, -513, -514}) {
    auto r = regs_with(restart, 202, 0x1000);
    fix_syscall_restart(r);
    EXPECT_EQ(word(r, 10), 202);
    EXPECT_EQ(word(r, 16), 0xffe);
  }
  auto block = regs_with(-516, 230, 0x1000);
  fix_syscall_restart(block);
  EXPECT_EQ(word(block, 10), -EINTR);
  EXPECT_EQ(word(block, 16), 0x1000);
  auto not_in_call = regs_with(-512, -1, 0x1000);
  fix_syscall_restart(not_in_call);
  EXPECT_EQ(word(not_in_call, 10), -512);
  auto done = regs_with(3, 0, 0x1000);
  fix_syscall_restart(done);
  EXPECT_EQ(word(done, 10), 3);
}

}  // namespace
}  // namespace cxlpool::ckpt
