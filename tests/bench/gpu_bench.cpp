// SPDX-License-Identifier: Apache-2.0
// GPU memory figures the client runtime depends on, on a host with a CUDA
// device:
//  - H2D and D2H copy bandwidth from pinned host memory (cuMemHostAlloc) and
//    from pageable memory, against the PCIe link's raw rate read from sysfs
//    (current_link_speed x current_link_width, 128b/130b encoding);
//  - VMM mapping bandwidth through the cuda GpuVmm backend (what a KV arena
//    pays to grow): GB of device pages mapped per second, creating the
//    physical memory too or reusing handles (deferred reclamation), and
//    unmapping.
//   gpu_bench [--copy-mib N (256)] [--map-mib N (4096)] [--reps N (5)]
// Exit: 0, 77 without a usable GPU (1 instead when CXLPOOL_REQUIRE_GPU is
// set), 1 on errors.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench_timing.hpp"
#include "cuda_vmm.hpp"
#include "device_context.hpp"
#include "driver_api.hpp"

namespace {

using namespace cxlpool;

using bench::median;
using bench::now_s;

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Raw PCIe rate in GB/s of the device's link, 0 when sysfs does not say
// (e.g. an SXM part behind a switch the VM does not show).
double link_gbps(const cuda::DriverApi& api, int device, std::string* what) {
  int domain = 0, bus = 0, dev = 0;
  if (api.device_get_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device) != 0 ||
      api.device_get_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device) != 0 ||
      api.device_get_attribute(&dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device) != 0) {
    return 0;
  }
  char addr[32];
  std::snprintf(addr, sizeof(addr), "%04x:%02x:%02x.0", domain, bus, dev);
  const std::string base = std::string("/sys/bus/pci/devices/") + addr + "/";
  const std::string speed = read_line(base + "current_link_speed");  // "32.0 GT/s PCIe"
  const std::string width = read_line(base + "current_link_width");  // "16"
  const double gts = std::atof(speed.c_str());
  const int lanes = std::atoi(width.c_str());
  if (gts <= 0 || lanes <= 0) return 0;
  *what = std::string(addr) + ": " + speed + " x" + width;
  // 8 GT/s and up use 128b/130b encoding, older generations 8b/10b.
  const double efficiency = gts >= 8.0 ? 128.0 / 130.0 : 0.8;
  return gts * lanes * efficiency / 8.0;
}

struct Copies {
  const cuda::DriverApi& api;
  CUstream stream;
  CUdeviceptr device;
  size_t bytes;

  // Seconds per copy of `bytes`, median of `reps`.
  double time(void* host, bool to_device, int reps) const {
    std::vector<double> t;
    for (int r = -1; r < reps; ++r) {
      const double t0 = now_s();
      const CUresult res = to_device ? api.memcpy_htod_async(device, host, bytes, stream)
                                     : api.memcpy_dtoh_async(host, device, bytes, stream);
      if (res != CUDA_SUCCESS || api.stream_synchronize(stream) != CUDA_SUCCESS) return -1;
      if (r >= 0) t.push_back(now_s() - t0);
    }
    return median(t);
  }
};

int copy_bandwidth(const cuda::DeviceContext& ctx, size_t bytes, int reps) {
  const cuda::DriverApi& api = ctx.api();
  CUstream stream = nullptr;
  CUdeviceptr device = 0;
  void* pinned = nullptr;
  if (api.stream_create(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      api.mem_alloc(&device, bytes) != CUDA_SUCCESS ||
      api.mem_host_alloc(&pinned, bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
    std::fprintf(stderr, "copy bandwidth: allocation failed\n");
    return 1;
  }
  std::vector<std::byte> pageable(bytes, std::byte{1});
  std::memset(pinned, 1, bytes);
  const Copies c{api, stream, device, bytes};
  std::string link;
  const double link_rate = link_gbps(api, ctx.device(), &link);
  std::printf("host <-> device copies, %zu MiB each, median of %d\n", bytes >> 20, reps);
  if (link_rate > 0) {
    std::printf("  PCIe link %s: %.1f GB/s raw per direction\n", link.c_str(), link_rate);
  } else {
    std::printf("  PCIe link: not visible in sysfs\n");
  }
  const struct {
    const char* name;
    void* host;
    bool to_device;
  } runs[] = {{"H2D pinned  ", pinned, true},
              {"D2H pinned  ", pinned, false},
              {"H2D pageable", pageable.data(), true},
              {"D2H pageable", pageable.data(), false}};
  int status = 0;
  for (const auto& r : runs) {
    const double s = c.time(r.host, r.to_device, reps);
    if (s <= 0) {
      status = 1;
      continue;
    }
    const double gbs = double(bytes) / s / 1e9;
    if (link_rate > 0) {
      std::printf("  %s %7.2f GB/s  (%.0f%% of link)\n", r.name, gbs, 100.0 * gbs / link_rate);
    } else {
      std::printf("  %s %7.2f GB/s\n", r.name, gbs);
    }
  }
  api.mem_free_host(pinned);
  api.mem_free(device);
  api.stream_destroy(stream);
  return status;
}

int map_bandwidth(size_t total, int reps) {
  auto vmm = cuda::make_cuda_vmm(0);
  if (!vmm) {
    std::fprintf(stderr, "cuda vmm: %s\n", vmm.error().message.c_str());
    return 1;
  }
  hal::GpuVmm& v = **vmm;
  const size_t page = v.granularity();
  total = std::max(page, total / page * page);
  const size_t pages = total / page;
  auto va = v.reserve(total);
  if (!va) {
    std::fprintf(stderr, "reserve: %s\n", va.error().message.c_str());
    return 1;
  }
  std::vector<double> create_map, remap, unmap;
  std::vector<hal::VmmHandle> handles(pages);
  for (int r = 0; r < reps; ++r) {
    // Growing into fresh memory: cuMemCreate + cuMemMap + cuMemSetAccess per page.
    double t0 = now_s();
    for (size_t i = 0; i < pages; ++i) {
      auto h = v.create(page);
      if (!h || !v.map(*va + i * page, page, *h, 0)) return 1;
      handles[i] = *h;
    }
    create_map.push_back(now_s() - t0);
    t0 = now_s();
    if (!v.unmap(*va, total)) return 1;
    unmap.push_back(now_s() - t0);
    // Reusing pages a finished request left behind: map only.
    t0 = now_s();
    for (size_t i = 0; i < pages; ++i) {
      if (!v.map(*va + i * page, page, handles[pages - 1 - i], 0)) return 1;
    }
    remap.push_back(now_s() - t0);
    if (!v.unmap(*va, total)) return 1;
    for (const hal::VmmHandle h : handles) (void)v.release(h);
  }
  (void)v.release_range(*va, total);
  const double gb = double(total) / 1e9;
  std::printf("GPU VMM mapping (cuda GpuVmm, %zu KiB pages, %zu MiB, median of %d)\n", page >> 10,
              total >> 20, reps);
  std::printf("  create + map + set access: %7.2f GB/s (%.1f us per page)\n",
              gb / median(create_map), median(create_map) / double(pages) * 1e6);
  std::printf("  map existing handles:      %7.2f GB/s (%.1f us per page)\n", gb / median(remap),
              median(remap) / double(pages) * 1e6);
  std::printf("  unmap:                     %7.2f GB/s (%.1f us per page)\n", gb / median(unmap),
              median(unmap) / double(pages) * 1e6);
  // vAttention (Prabhu et al., ASPLOS '25) reports 7.6 GB/s of physical
  // memory mapped per second with 2 MB pages through the same driver calls.
  constexpr double kVattentionMapGbs = 7.6;
  std::printf("  vs vAttention's 7.6 GB/s (2 MB pages): create + map %.2fx, map existing %.2fx\n",
              gb / median(create_map) / kVattentionMapGbs, gb / median(remap) / kVattentionMapGbs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  size_t copy_mib = 256, map_mib = 4096;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::atol(argv[i + 1]);
    if (v <= 0) return 2;
    if (a == "--copy-mib") {
      copy_mib = size_t(v);
    } else if (a == "--map-mib") {
      map_mib = size_t(v);
    } else if (a == "--reps") {
      reps = int(v);
    } else {
      std::fprintf(stderr, "usage: gpu_bench [--copy-mib N] [--map-mib N] [--reps N]\n");
      return 2;
    }
  }
  auto ctx = cuda::DeviceContext::open(0);
  if (!ctx) {
    std::printf("SKIP: %s\n", ctx.error().message.c_str());
    return std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr ? 1 : 77;
  }
  char name[128] = {};
  ctx->api().device_get_name(name, sizeof(name), ctx->device());
  std::printf("device 0: %s\n", name);
  int status = copy_bandwidth(*ctx, copy_mib << 20, reps);
  status |= map_bandwidth(map_mib << 20, reps);
  return status;
}
