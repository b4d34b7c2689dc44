// SPDX-License-Identifier: Apache-2.0
// A small model written to safetensors files in a temp directory and loaded
// into an in-memory region exactly as the daemon lays it out, for the
// client-side model view and streamer tests (no daemon needed).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/weights/region_layout.hpp"
#include "cxlpool/weights/safetensors_writer.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::weights::testing {

// Layer l's tensor k holds floats base(l, k) + i.
inline float base_of(int layer, int k) { return static_cast<float>(layer * 100000 + k * 10000); }

class ModelFixture {
 public:
  // `layers` layers of two tensors (`elems` and elems/2 floats) plus an
  // embedding, split over two files; layers past the budget stay in files.
  ModelFixture(int layers, size_t elems, uint64_t max_resident_bytes) {
    SafetensorsWriter a, b;
    std::vector<float> emb(64, 0.5f);
    (void)a.add_f32("model.embed_tokens.weight", {64}, emb);
    for (int l = 0; l < layers; ++l) {
      SafetensorsWriter& w = l < layers / 2 ? a : b;
      for (int k = 0; k < 2; ++k) {
        size_t n = k == 0 ? elems : elems / 2;
        std::vector<float> v(n);
        for (size_t i = 0; i < n; ++i) v[i] = base_of(l, k) + static_cast<float>(i);
        (void)w.add_f32("model.layers." + std::to_string(l) + (k == 0 ? ".mlp.w" : ".attn.w"), {n}, v);
      }
    }
    paths_ = {dir_.resolve("a.safetensors").string(), dir_.resolve("b.safetensors").string()};
    (void)a.write_file(paths_[0]);
    (void)b.write_file(paths_[1]);
    for (const auto& p : paths_) {
      UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
      files_.push_back(read_loaded_file(fd.get(), p).value());
    }
    plan_ = plan_region(files_, choose_residency(files_, max_resident_bytes)).value();
    auto m = Mapping::map(plan_.region_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1).value();
    std::span<std::byte> region(m.data(), plan_.region_bytes);
    (void)write_region_meta(region, files_, plan_);
    for (size_t f = 0; f < files_.size(); ++f) {
      UniqueFd fd(::open(paths_[f].c_str(), O_RDONLY | O_CLOEXEC));
      for (size_t t = 0; t < files_[f].header.tensors.size(); ++t) {
        if (plan_.tensor_offset[f][t] == kNotResident) continue;
        const auto& ti = files_[f].header.tensors[t];
        (void)::pread(fd.get(), region.data() + plan_.tensor_offset[f][t], ti.bytes(),
                      static_cast<off_t>(files_[f].header.tensor_offset_in_file(ti)));
      }
    }
    region_ = std::move(m);
  }
  // A read-only mapping of the region, as a client gets it.
  Mapping client_mapping() const {
    void* p = ::mmap(nullptr, region_.length(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::memcpy(p, region_.data(), region_.length());
    ::mprotect(p, region_.length(), PROT_READ);
    return Mapping(p, region_.length());
  }
  const RegionPlan& plan() const { return plan_; }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  test::TempDir dir_{"wfix"};
  std::vector<std::string> paths_;
  std::vector<LoadedFile> files_;
  RegionPlan plan_;
  Mapping region_;
};

}  // namespace cxlpool::weights::testing
