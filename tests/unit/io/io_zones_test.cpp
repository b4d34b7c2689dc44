// SPDX-License-Identifier: Apache-2.0
// zonemode=zbd's emulated zones: writes at write pointers, resets of full
// zones, the open-zone limit, reads kept below write pointers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <set>

#include "run/zone_table.hpp"

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kZone = 64 * 1024;
constexpr std::uint32_t kBs = 4096;

TEST(ZoneTable, ZonesStartFullOverWrittenDataAndEmptyBeyond) {
  ZoneTable t(4 * kZone + 100, kZone, kZone, 2 * kZone, 0);
  EXPECT_EQ(t.zones(), 4u);  // the partial last zone is left out
  EXPECT_EQ(t.write_pointer(0), kZone);
  EXPECT_EQ(t.write_pointer(1), 2 * kZone);
  EXPECT_EQ(t.write_pointer(2), 2 * kZone);
  EXPECT_EQ(t.write_pointer(3), 3 * kZone);
}

TEST(ZoneTable, RandomWritesLandAtTheWritePointerOfTheirZone) {
  ZoneTable t(4 * kZone, kZone, kZone, 0, 0);
  Rng rng(7);
  auto io = t.place_write(2 * kZone + 40960, kBs, kBs, 0, 4, rng);
  EXPECT_EQ(io.offset, 2 * kZone);
  EXPECT_EQ(io.bytes, kBs);
  io = t.place_write(2 * kZone + 8192, kBs, kBs, 0, 4, rng);
  EXPECT_EQ(io.offset, 2 * kZone + kBs);
  EXPECT_EQ(t.write_pointer(2), 2 * kZone + 2 * kBs);
  EXPECT_EQ(t.open_zones(), 1u);
}

TEST(ZoneTable, AFullZoneIsResetBeforeItIsWrittenAgain) {
  ZoneTable t(2 * kZone, kZone, kZone, 2 * kZone, 0);
  Rng rng(1);
  const auto io = t.place_write(100, kBs, kBs, 0, 2, rng);
  EXPECT_EQ(io.offset, 0u);
  EXPECT_EQ(t.resets(), 1u);
  EXPECT_EQ(t.write_pointer(0), kBs);
}

TEST(ZoneTable, WritesStopAtTheZoneCapacity) {
  // Capacity 10 KiB of a 64 KiB zone: an 8 KiB write after one of 4 KiB
  // is shortened to the 4 KiB left (whole units), then the zone is full.
  ZoneTable t(kZone, kZone, 12 * 1024, 0, 0);
  Rng rng(1);
  t.place_write(0, kBs, kBs, 0, 1, rng);
  const auto io = t.place_write(0, 2 * kBs, kBs, 0, 1, rng);
  EXPECT_EQ(io.offset, kBs);
  EXPECT_EQ(io.bytes, 2 * kBs);
  EXPECT_EQ(t.open_zones(), 0u);  // full: closed
  EXPECT_EQ(t.place_write(0, kBs, kBs, 0, 1, rng).offset, 0u);
  EXPECT_EQ(t.resets(), 1u);
}

TEST(ZoneTable, NoMoreThanMaxOpenZonesTakeWrites) {
  ZoneTable t(64 * kZone, kZone, kZone, 0, 3);
  Rng rng(42);
  std::set<std::uint64_t> written;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t pick = rng.below(64) * kZone;
    const auto io = t.place_write(pick, kBs, kBs, 0, 64, rng);
    written.insert(io.offset / kZone);
    EXPECT_LE(t.open_zones(), 3u);
  }
  // Zones close only when full (16 writes each): 200 writes fill some and
  // open others, but far fewer than 64 zones are ever touched.
  EXPECT_LE(written.size(), 3u + 200u / 16u);
}

TEST(ZoneTable, ReadsStayBelowTheWritePointer) {
  ZoneTable t(4 * kZone, kZone, kZone, 0, 0);
  Rng rng(3);
  EXPECT_FALSE(t.place_read(0, kBs, kBs, 0, 4, true).has_value());  // nothing written
  t.place_write(2 * kZone, kBs, kBs, 0, 4, rng);
  t.place_write(2 * kZone, kBs, kBs, 0, 4, rng);
  // Zone 0 is empty: a sequential read moves to the next zone with data.
  auto io = t.place_read(0, kBs, kBs, 0, 4, true);
  ASSERT_TRUE(io.has_value());
  EXPECT_EQ(io->offset, 2 * kZone);
  // A read straddling the write pointer is shortened to it.
  io = t.place_read(2 * kZone + kBs, 4 * kBs, kBs, 0, 4, true);
  ASSERT_TRUE(io.has_value());
  EXPECT_EQ(io->offset, 2 * kZone + kBs);
  EXPECT_EQ(io->bytes, kBs);
  // A random read past it wraps into the zone's data.
  io = t.place_read(2 * kZone + 5 * kBs, kBs, kBs, 0, 4, false);
  ASSERT_TRUE(io.has_value());
  EXPECT_LT(io->offset, 2 * kZone + 2 * kBs);
  EXPECT_GE(io->offset, 2 * kZone);
}

TEST(ZoneTable, ResetRangeEmptiesOnlyItsZones) {
  ZoneTable t(4 * kZone, kZone, kZone, 4 * kZone, 0);
  t.reset_range(1, 3);
  EXPECT_EQ(t.write_pointer(0), kZone);
  EXPECT_EQ(t.write_pointer(1), kZone);
  EXPECT_EQ(t.write_pointer(2), 2 * kZone);
  EXPECT_EQ(t.write_pointer(3), 4 * kZone);
  EXPECT_EQ(t.resets(), 2u);
}

TEST(ZoneTable, SharedTablesRefuseOtherZoneSizes) {
  char path[] = "/tmp/cxlpool-zones-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  auto a = shared_zone_table(path, 4 * kZone, 0, kZone, kZone, 0);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  auto b = shared_zone_table(path, 4 * kZone, 0, kZone, kZone, 0);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->get(), b->get());
  auto c = shared_zone_table(path, 4 * kZone, 0, 2 * kZone, 2 * kZone, 0);
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("already has zones of 65536 bytes"), std::string::npos) << c.error().message;
  EXPECT_FALSE(shared_zone_table(path, 1ull << 50, 0, 4096, 4096, 0).has_value());  // too many zones
  ::unlink(path);
}

}  // namespace
}  // namespace cxlpool::io
