// SPDX-License-Identifier: Apache-2.0
// The hot set sidecar (docs/ckpt.md "Hot sets"): its encoding round-trips,
// every damaged or hostile variant is refused with the reason, a set is
// accepted only for the image it was recorded for, and a hybrid plan from
// an applied set copies exactly its pages.
#include "cxlpool/ckpt/hot_set.hpp"

#include <sys/mman.h>

#include <gtest/gtest.h>

#include "cxlpool/ckpt/restore_plan.hpp"
#include "cxlpool/common/crc32c.hpp"
#include "support/ckpt_sample_manifest.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::ckpt {
namespace {

HotSet sample_set() {
  HotSet s;
  s.source = HotSource::kFaults;
  s.manifest_crc32c = 0xabcd1234;
  s.pages = {0x601000, 0x401000, 0x600000};  // fault order, not sorted
  return s;
}

// Re-seals bytes after an edit, so that the decoder's own checks are reached.
void reseal(std::vector<std::byte>& b) {
  const uint32_t crc = crc32c(std::span(b).first(b.size() - 4));
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = std::byte{static_cast<uint8_t>(crc >> (8 * i))};
}

TEST(HotSet, RoundTripsInRecordedOrder) {
  auto d = decode_hot_set(encode_hot_set(sample_set()));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->source, HotSource::kFaults);
  EXPECT_EQ(d->manifest_crc32c, 0xabcd1234u);
  EXPECT_EQ(d->pages, sample_set().pages);
}

TEST(HotSet, DamagedFilesAreRefused) {
  const std::vector<std::byte> good = encode_hot_set(sample_set());
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_EQ(decode_hot_set(std::span(good).first(n)).error().code, EBADMSG) << "truncated to " << n;
  for (size_t at = 0; at < good.size(); ++at) {
    std::vector<std::byte> b = good;
    b[at] ^= std::byte{0x10};
    EXPECT_FALSE(decode_hot_set(b)) << "bit flipped at " << at;
  }
  std::vector<std::byte> extra = good;
  extra.push_back(std::byte{0});
  EXPECT_EQ(decode_hot_set(extra).error().code, EBADMSG);
}

TEST(HotSet, HostileContentIsRefusedWithTheReason) {
  auto edited = [](auto&& edit) {
    std::vector<std::byte> b = encode_hot_set(sample_set());
    edit(b);
    reseal(b);
    return decode_hot_set(b);
  };
  auto version = edited([](auto& b) { b[8] = std::byte{2}; });
  EXPECT_EQ(version.error().code, ENOTSUP);
  auto source = edited([](auto& b) { b[12] = std::byte{9}; });
  EXPECT_NE(source.error().message.find("unknown source"), std::string::npos);
  auto count = edited([](auto& b) { b[20] = std::byte{200}; });
  EXPECT_NE(count.error().message.find("do not fit"), std::string::npos);
  auto unaligned = edited([](auto& b) { b[24] = std::byte{8}; });
  EXPECT_NE(unaligned.error().message.find("not aligned"), std::string::npos);
  HotSet twice = sample_set();
  twice.pages.push_back(0x401000);
  EXPECT_NE(decode_hot_set(encode_hot_set(twice)).error().message.find("twice"), std::string::npos);
}

TEST(HotSet, RecordersKeepOnlyTheImagesPagesOnce) {
  const Manifest m = test::sample_manifest();
  const std::vector<uint64_t> recorded = {0x601234, 0x500000, 0x600000, 0x601000, 0x7f0000001000ull};
  EXPECT_EQ(pages_in_runs(m, recorded), (std::vector<uint64_t>{0x601000, 0x600000, 0x7f0000001000ull}));
}

TEST(HotSet, AppliesOnlyToItsImage) {
  Manifest m = test::sample_manifest();
  HotSet s = sample_set();
  EXPECT_EQ(apply_hot_set(m, 0x1111, s).error().code, ESTALE);
  s.pages.push_back(0x602000);  // past the heap's run
  EXPECT_EQ(apply_hot_set(m, s.manifest_crc32c, s).error().code, EINVAL);
  s.pages.pop_back();
  ASSERT_TRUE(apply_hot_set(m, s.manifest_crc32c, s));
  EXPECT_EQ(m.hot_pages, (std::vector<uint64_t>{0x401000, 0x600000, 0x601000}));
}

TEST(HotSet, AHybridPlanCopiesTheAppliedPagesAndMapsTheRest) {
  Manifest m = test::without_client(test::sample_manifest());
  HotSet s = sample_set();
  s.pages = {0x600000};
  ASSERT_TRUE(apply_hot_set(m, s.manifest_crc32c, s));
  HostFacts host;
  for (const Vma& v : m.vmas)
    if (v.kind == VmaKind::kVdso) host.specials.push_back({VmaKind::kVdso, 0x7ff000000000ull, 0x7ff000000000ull + (v.end - v.start)});
  auto plan = plan_restore(m, RestorePolicy::kHybrid, host);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->copied_bytes, kPageSize);
  size_t written = 0;
  for (const RestoreStep& st : plan->steps)
    if (st.kind == StepKind::kAdvise && st.advice == MADV_POPULATE_WRITE) {
      EXPECT_EQ(st.addr, 0x600000u);
      EXPECT_EQ(st.len, kPageSize);
      ++written;
    }
  EXPECT_EQ(written, 1u);
}

TEST(HotSet, FilesRoundTrip) {
  test::TempDir dir;
  const std::string path = (dir.path() / "a.hot").string();
  ASSERT_TRUE(write_hot_set_file(path, sample_set()));
  auto r = read_hot_set_file(path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pages, sample_set().pages);
  EXPECT_EQ(read_hot_set_file(path + ".none").error().code, ENOENT);
}

}  // namespace
}  // namespace cxlpool::ckpt
