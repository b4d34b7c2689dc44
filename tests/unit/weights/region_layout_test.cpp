// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>

#include "cxlpool/weights/region_layout.hpp"
#include "cxlpool/weights/safetensors_writer.hpp"

namespace cxlpool::weights {
namespace {

// A loaded file from a writer, plus the file bytes to copy tensors from.
struct Built {
  LoadedFile file;
  std::vector<std::byte> bytes;
};

Built build(const SafetensorsWriter& w, std::string path) {
  Built b;
  b.bytes = w.serialize();
  uint64_t n = parse_header_size(b.bytes, b.bytes.size()).value();
  b.file.path = std::move(path);
  b.file.header_json.assign(reinterpret_cast<const char*>(b.bytes.data()) + 8, n);
  b.file.file_size = b.bytes.size();
  b.file.header = parse_header(b.file.header_json, b.file.file_size).value();
  return b;
}

std::vector<float> ramp(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// Two files: globals + layers 0,1 in the first, layers 2,3 + head in the second.
std::vector<Built> model() {
  SafetensorsWriter a, b;
  EXPECT_TRUE(a.add_f32("embed", {100}, ramp(100, 0)));  // 400 B
  EXPECT_TRUE(a.add_f32("layers.0.w", {250}, ramp(250, 1000)));  // 1000 B
  EXPECT_TRUE(a.add_f32("layers.1.w", {250}, ramp(250, 2000)));
  EXPECT_TRUE(b.add_f32("layers.2.w", {250}, ramp(250, 3000)));
  EXPECT_TRUE(b.add_f32("layers.3.w", {250}, ramp(250, 4000)));
  EXPECT_TRUE(b.add_f32("head", {10}, ramp(10, 5000)));  // 40 B
  std::vector<Built> out;
  out.push_back(build(a, "/m/a.safetensors"));
  out.push_back(build(b, "/m/b.safetensors"));
  return out;
}

std::vector<LoadedFile> files_of(const std::vector<Built>& built) {
  std::vector<LoadedFile> files;
  for (const auto& b : built) files.push_back(b.file);
  return files;
}

// Builds the region the daemon would, tensor bytes included.
std::vector<std::byte> make_region(const std::vector<Built>& built, const RegionPlan& plan) {
  auto files = files_of(built);
  std::vector<std::byte> region(plan.region_bytes);
  EXPECT_TRUE(write_region_meta(region, files, plan));
  for (size_t f = 0; f < files.size(); ++f) {
    for (size_t t = 0; t < files[f].header.tensors.size(); ++t) {
      uint64_t off = plan.tensor_offset[f][t];
      if (off == kNotResident) continue;
      const auto& ti = files[f].header.tensors[t];
      std::memcpy(region.data() + off, built[f].bytes.data() + files[f].header.tensor_offset_in_file(ti), ti.bytes());
    }
  }
  return region;
}

TEST(RegionLayout, EverythingResidentRoundTrips) {
  auto built = model();
  auto files = files_of(built);
  auto res = choose_residency(files, 0);
  auto plan = plan_region(files, res);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->tensor_bytes, 4440u);
  EXPECT_EQ(plan->resident_bytes, 4440u);
  EXPECT_EQ(plan->region_bytes % kRegionFileAlign, 0u);
  for (auto base : plan->data_base) EXPECT_EQ(base % kRegionFileAlign, 0u);
  auto region = make_region(built, *plan);
  auto view = parse_region(region);
  ASSERT_TRUE(view) << view.error().message;
  ASSERT_EQ(view->files.size(), 2u);
  EXPECT_EQ(view->files[1].path, "/m/b.safetensors");
  EXPECT_EQ(view->n_tensors, 6u);
  const auto& f1 = view->files[1];
  for (size_t t = 0; t < f1.header.tensors.size(); ++t) {
    const auto& ti = f1.header.tensors[t];
    ASSERT_NE(f1.tensor_offset[t], kNotResident);
    EXPECT_EQ(std::memcmp(region.data() + f1.tensor_offset[t],
                          built[1].bytes.data() + f1.header.tensor_offset_in_file(ti), ti.bytes()), 0)
        << ti.name;
  }
}

TEST(RegionLayout, BudgetKeepsGlobalsAndTheFirstLayers) {
  auto built = model();
  auto files = files_of(built);
  // Globals (440 B) + two layers (2000 B) fit 2500; layer 2 does not.
  auto res = choose_residency(files, 2500);
  EXPECT_EQ(res[0], (std::vector<bool>{true, true, true}));
  EXPECT_EQ(res[1], (std::vector<bool>{false, false, true}));  // layers.2, layers.3, head
  auto plan = plan_region(files, res);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->resident_bytes, 2440u);
  auto region = make_region(built, *plan);
  auto view = parse_region(region);
  ASSERT_TRUE(view) << view.error().message;
  EXPECT_EQ(view->files[1].tensor_offset[0], kNotResident);
  EXPECT_EQ(view->resident_bytes, 2440u);
  // A budget below the globals still keeps them (and no layer).
  res = choose_residency(files, 1);
  EXPECT_EQ(res[0], (std::vector<bool>{true, false, false}));
}

TEST(RegionLayout, CorruptRegionsAreRejected) {
  auto built = model();
  auto files = files_of(built);
  auto plan = plan_region(files, choose_residency(files, 0)).value();
  auto good = make_region(built, plan);

  auto region = good;
  region[0] = std::byte{0};
  EXPECT_EQ(parse_region(region).error().code, EBADMSG);

  // A tensor offset past the end.
  region = good;
  RegionFileRecord rec{};
  std::memcpy(&rec, region.data() + sizeof(RegionSuperblock), sizeof rec);
  uint64_t huge = plan.region_bytes;
  std::memcpy(region.data() + rec.table_offset, &huge, sizeof huge);
  EXPECT_FALSE(parse_region(region));

  // A path pointing outside the region.
  region = good;
  rec.path_offset = ~0ull - 2;
  std::memcpy(region.data() + sizeof(RegionSuperblock), &rec, sizeof rec);
  EXPECT_FALSE(parse_region(region));

  // A damaged header copy.
  region = good;
  std::memcpy(&rec, good.data() + sizeof(RegionSuperblock), sizeof rec);
  region[rec.header_offset] = std::byte{'x'};
  auto v = parse_region(region);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("/m/a.safetensors"), std::string::npos);

  // Truncated mapping.
  EXPECT_FALSE(parse_region(std::span(good).first(good.size() / 2)));
}

TEST(RegionLayout, PlanRejectsMismatchedResidency) {
  auto files = files_of(model());
  EXPECT_FALSE(plan_region(files, Residency{}));
  EXPECT_FALSE(plan_region({}, Residency{}));
}

}  // namespace
}  // namespace cxlpool::weights
