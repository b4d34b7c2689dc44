// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/weights/region_layout.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cxlpool/weights/layer_group.hpp"

namespace cxlpool::weights {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

tl::unexpected<Error> bad(std::string message) {
  return fail(EBADMSG, "weights region: " + std::move(message));
}

// [off, off + len) inside [0, size) without overflow.
bool inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

}  // namespace

Result<LoadedFile> read_loaded_file(int fd, std::string path, const ParseLimits& limits) {
  // Read once and parse the kept copy: the bytes kept are the bytes validated.
  auto text = read_header_text(fd, limits);
  if (!text) return fail(text.error().code, path + ": " + text.error().message);
  auto h = parse_header(text->json, text->file_size, limits);
  if (!h) return fail(h.error().code, path + ": " + h.error().message);
  LoadedFile file;
  file.header_json = std::move(text->json);
  file.header = std::move(*h);
  file.file_size = text->file_size;
  file.path = std::move(path);
  return file;
}

Residency choose_residency(const std::vector<LoadedFile>& files, uint64_t max_resident_bytes) {
  Residency resident(files.size());
  std::vector<uint64_t> layer_bytes;
  uint64_t global_bytes = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const auto& tensors = files[f].header.tensors;
    resident[f].assign(tensors.size(), max_resident_bytes == 0);
    for (size_t t = 0; t < tensors.size(); ++t) {
      int32_t l = layer_of(tensors[t].name);
      if (l < 0) {
        resident[f][t] = true;
        global_bytes += tensors[t].bytes();
      } else {
        if (layer_bytes.size() <= static_cast<size_t>(l)) layer_bytes.resize(static_cast<size_t>(l) + 1, 0);
        layer_bytes[static_cast<size_t>(l)] += tensors[t].bytes();
      }
    }
  }
  if (max_resident_bytes == 0) return resident;
  uint64_t left = max_resident_bytes > global_bytes ? max_resident_bytes - global_bytes : 0;
  size_t layers_in = 0;
  while (layers_in < layer_bytes.size() && layer_bytes[layers_in] <= left) {
    left -= layer_bytes[layers_in];
    ++layers_in;
  }
  for (size_t f = 0; f < files.size(); ++f) {
    const auto& tensors = files[f].header.tensors;
    for (size_t t = 0; t < tensors.size(); ++t) {
      int32_t l = layer_of(tensors[t].name);
      if (l >= 0 && static_cast<size_t>(l) < layers_in) resident[f][t] = true;
    }
  }
  return resident;
}

Result<RegionPlan> plan_region(const std::vector<LoadedFile>& files, const Residency& resident) {
  if (files.empty()) return fail(EINVAL, "no files");
  if (files.size() > kMaxRegionFiles) return fail(EINVAL, "too many files");
  if (resident.size() != files.size()) return fail(EINVAL, "residency does not match the files");
  RegionPlan plan;
  uint64_t at = sizeof(RegionSuperblock) + files.size() * sizeof(RegionFileRecord);
  for (size_t f = 0; f < files.size(); ++f) {
    if (resident[f].size() != files[f].header.tensors.size()) {
      return fail(EINVAL, "residency does not match " + files[f].path);
    }
    plan.n_tensors += files[f].header.tensors.size();
    at += files[f].header.tensors.size() * sizeof(uint64_t);
  }
  for (const auto& file : files) at += file.path.size() + file.header_json.size();
  plan.meta_bytes = at;
  at = align_up(at, kRegionFileAlign);
  plan.data_base.resize(files.size());
  plan.tensor_offset.resize(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    at = align_up(at, kRegionFileAlign);
    plan.data_base[f] = at;
    const auto& tensors = files[f].header.tensors;
    plan.tensor_offset[f].assign(tensors.size(), kNotResident);
    for (size_t t = 0; t < tensors.size(); ++t) {
      plan.tensor_bytes += tensors[t].bytes();
      if (!resident[f][t]) continue;
      at = align_up(at, kTensorAlign);
      plan.tensor_offset[f][t] = at;
      at += tensors[t].bytes();
      plan.resident_bytes += tensors[t].bytes();
    }
  }
  plan.region_bytes = align_up(at, kRegionFileAlign);
  return plan;
}

Result<void> write_region_meta(std::span<std::byte> region, const std::vector<LoadedFile>& files,
                               const RegionPlan& plan) {
  if (region.size() < plan.region_bytes) return fail(EINVAL, "region smaller than its plan");
  RegionSuperblock sb{};
  sb.magic = kRegionMagic;
  sb.version = kRegionVersion;
  sb.n_files = static_cast<uint32_t>(files.size());
  sb.n_tensors = plan.n_tensors;
  sb.tensor_bytes = plan.tensor_bytes;
  sb.resident_bytes = plan.resident_bytes;
  sb.region_bytes = plan.region_bytes;
  sb.files_offset = sizeof(RegionSuperblock);
  std::memcpy(region.data(), &sb, sizeof sb);

  uint64_t tables = sizeof(RegionSuperblock) + files.size() * sizeof(RegionFileRecord);
  uint64_t strings = tables;
  for (const auto& file : files) strings += file.header.tensors.size() * sizeof(uint64_t);
  for (size_t f = 0; f < files.size(); ++f) {
    const auto& file = files[f];
    RegionFileRecord rec{};
    rec.table_offset = tables;
    rec.n_tensors = file.header.tensors.size();
    std::memcpy(region.data() + tables, plan.tensor_offset[f].data(), rec.n_tensors * sizeof(uint64_t));
    tables += rec.n_tensors * sizeof(uint64_t);
    rec.path_offset = strings;
    rec.path_bytes = file.path.size();
    std::memcpy(region.data() + strings, file.path.data(), file.path.size());
    strings += file.path.size();
    rec.header_offset = strings;
    rec.header_bytes = file.header_json.size();
    std::memcpy(region.data() + strings, file.header_json.data(), file.header_json.size());
    strings += file.header_json.size();
    rec.file_size = file.file_size;
    rec.data_base = plan.data_base[f];
    std::memcpy(region.data() + sizeof(RegionSuperblock) + f * sizeof(RegionFileRecord), &rec, sizeof rec);
  }
  return {};
}

Result<RegionView> parse_region(std::span<const std::byte> region) {
  const uint64_t size = region.size();
  RegionSuperblock sb{};
  if (size < sizeof sb) return bad("smaller than its superblock");
  std::memcpy(&sb, region.data(), sizeof sb);
  if (sb.magic != kRegionMagic) return bad("bad magic");
  if (sb.version != kRegionVersion) return bad("unknown version " + std::to_string(sb.version));
  if (sb.region_bytes > size) return bad("says it is larger than the mapping");
  if (sb.n_files == 0 || sb.n_files > kMaxRegionFiles) return bad("bad file count");
  if (!inside(sb.files_offset, uint64_t{sb.n_files} * sizeof(RegionFileRecord), size)) {
    return bad("file records out of bounds");
  }
  RegionView view;
  view.tensor_bytes = sb.tensor_bytes;
  view.resident_bytes = sb.resident_bytes;
  view.n_tensors = sb.n_tensors;
  uint64_t tensors_seen = 0, total = 0, resident = 0;
  for (uint32_t f = 0; f < sb.n_files; ++f) {
    RegionFileRecord rec{};
    std::memcpy(&rec, region.data() + sb.files_offset + f * sizeof rec, sizeof rec);
    std::string who = "file " + std::to_string(f);
    if (!inside(rec.path_offset, rec.path_bytes, size) || !inside(rec.header_offset, rec.header_bytes, size)) {
      return bad(who + ": strings out of bounds");
    }
    if (rec.n_tensors > size / sizeof(uint64_t) ||
        !inside(rec.table_offset, rec.n_tensors * sizeof(uint64_t), size)) {
      return bad(who + ": tensor table out of bounds");
    }
    RegionFileView fv;
    fv.path.assign(reinterpret_cast<const char*>(region.data() + rec.path_offset), rec.path_bytes);
    fv.file_size = rec.file_size;
    std::string_view json(reinterpret_cast<const char*>(region.data() + rec.header_offset), rec.header_bytes);
    auto h = parse_header(json, rec.file_size);
    if (!h) return bad(who + " (" + fv.path + "): " + h.error().message);
    fv.header = std::move(*h);
    if (fv.header.tensors.size() != rec.n_tensors) return bad(who + ": tensor table size differs from its header");
    fv.tensor_offset.resize(rec.n_tensors);
    std::memcpy(fv.tensor_offset.data(), region.data() + rec.table_offset, rec.n_tensors * sizeof(uint64_t));
    for (size_t t = 0; t < rec.n_tensors; ++t) {
      uint64_t bytes = fv.header.tensors[t].bytes();
      total += bytes;
      uint64_t off = fv.tensor_offset[t];
      if (off == kNotResident) continue;
      if (off % kTensorAlign != 0 || !inside(off, bytes, sb.region_bytes)) {
        return bad(who + ": tensor '" + fv.header.tensors[t].name + "' out of bounds");
      }
      resident += bytes;
    }
    tensors_seen += rec.n_tensors;
    view.files.push_back(std::move(fv));
  }
  if (tensors_seen != sb.n_tensors || total != sb.tensor_bytes || resident != sb.resident_bytes) {
    return bad("totals differ from the tables");
  }
  return view;
}

}  // namespace cxlpool::weights
