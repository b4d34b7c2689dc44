// SPDX-License-Identifier: Apache-2.0
#include "perf_source.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/sysfs_root.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "perf_open.hpp"
#include "perf_pmu.hpp"
#include "perf_records.hpp"

namespace cxlpool::drivers {
namespace {

constexpr uint64_t kPageMask = hal::kAccessPageBytes - 1;
// Above this a "virtual address" is a kernel one, which no pid owns.
constexpr uint64_t kUserAddressLimit = 1ULL << 47;
constexpr uint32_t kMaxRingPages = 1U << 14;

struct Ring {
  explicit Ring(PerfRecordParser p) : parser(p) {}
  UniqueFd fd;
  Mapping map;
  perf_event_mmap_page* meta = nullptr;
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  PerfRecordParser parser;  // each event settles its own sample layout
};

using Key = std::tuple<hal::AddressSpace, uint64_t, uint64_t>;

class PerfSamplingSource final : public hal::AccessSource {
 public:
  explicit PerfSamplingSource(std::vector<Ring> rings) : rings_(std::move(rings)) {}

  ~PerfSamplingSource() override {
    for (auto& ring : rings_) ::ioctl(ring.fd.get(), PERF_EVENT_IOC_DISABLE, 0);
  }

  std::string_view name() const override { return "perf"; }
  hal::AccessSourceTraits traits() const override {
    return {.word_masks = false, .exact_counts = false, .virtual_addresses = true};
  }
  uint64_t accesses_total() const override { return accesses_; }
  uint64_t dropped_total() const override { return dropped_; }

  Result<void> collect(std::vector<hal::PageAccess>& out) override {
    std::map<Key, uint64_t> counts;
    uint64_t unattributed = 0;
    const auto on_sample = [&](const PerfSample& s) {
      if (s.phys_addr != 0) {
        ++counts[{hal::AddressSpace::kPhysical, 0, s.phys_addr & ~kPageMask}];
      } else if (s.addr != 0 && s.addr < kUserAddressLimit && s.pid != 0 &&
                 s.pid != static_cast<uint32_t>(-1)) {
        ++counts[{hal::AddressSpace::kProcess, s.pid, s.addr & ~kPageMask}];
      } else {
        ++unattributed;
      }
    };
    for (auto& ring : rings_) {
      // Pairs with the kernel's store of data_head after it wrote records.
      const uint64_t head = __atomic_load_n(&ring.meta->data_head, __ATOMIC_ACQUIRE);
      const uint64_t tail = ring.meta->data_tail;
      const PerfDrainStats stats = ring.parser.drain(ring.data, ring.size, tail, head, on_sample);
      // Our reads of the records must finish before the kernel may reuse
      // their space.
      __atomic_store_n(&ring.meta->data_tail, head, __ATOMIC_RELEASE);
      dropped_ += stats.lost + stats.malformed;
    }
    dropped_ += unattributed;
    for (const auto& [key, count] : counts) {
      hal::PageAccess access;
      access.space = std::get<0>(key);
      access.owner = std::get<1>(key);
      access.address = std::get<2>(key);
      access.count = count;
      out.push_back(access);
      accesses_ += count;
    }
    return {};
  }

 private:
  std::vector<Ring> rings_;
  uint64_t accesses_ = 0;
  uint64_t dropped_ = 0;
};

Result<Ring> map_ring(UniqueFd fd, uint64_t sample_type, uint32_t data_pages, const std::string& label) {
  auto parser = PerfRecordParser::make(sample_type);
  if (!parser) return tl::unexpected(parser.error());
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  auto map = Mapping::map((data_pages + 1ULL) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  if (!map) return fail(map.error().code, "mmap ring of " + label + ": " + map.error().message);
  Ring ring(*parser);
  ring.meta = static_cast<perf_event_mmap_page*>(map->addr());
  // data_offset/data_size exist since Linux 4.1; before, data follows the
  // control page.
  const uint64_t offset = ring.meta->data_offset != 0 ? ring.meta->data_offset : page;
  ring.size = ring.meta->data_size != 0 ? ring.meta->data_size : data_pages * page;
  if (offset + ring.size > map->length()) return fail(EINVAL, "ring of " + label + " larger than its mapping");
  ring.data = reinterpret_cast<const uint8_t*>(map->data()) + offset;
  ring.fd = std::move(fd);
  ring.map = std::move(*map);
  return ring;
}

Result<void> validate_ring_pages(const PerfSamplingConfig& config) {
  if (config.ring_pages == 0 || config.ring_pages > kMaxRingPages ||
      (config.ring_pages & (config.ring_pages - 1)) != 0) {
    return fail(EINVAL, "perf: ring_pages must be a power of two in [1, 16384]");
  }
  return {};
}

// (pid, cpu) pairs for perf_event_open.
Result<std::vector<std::pair<int, int>>> targets(const PerfSamplingConfig& config) {
  std::vector<std::pair<int, int>> out;
  if (config.pids.empty()) {
    auto cpus = online_cpus(config.sysfs_root);
    if (!cpus) return tl::unexpected(cpus.error());
    for (const int cpu : *cpus) out.emplace_back(-1, cpu);
    return out;
  }
  const SysfsRoot proc(config.procfs_root);
  for (const int pid : config.pids) {
    const std::string task = "/" + std::to_string(pid) + "/task";
    if (pid <= 0 || !proc.exists(task)) return fail(ESRCH, "no process " + std::to_string(pid));
    for (const auto& tid : proc.list(task)) {
      int id = 0;
      if (std::sscanf(tid.c_str(), "%d", &id) == 1 && id > 0) out.emplace_back(id, -1);
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<hal::AccessSource>> make_perf_sampling_source(const PerfSamplingConfig& config) {
  if (config.sample_period == 0) return fail(EINVAL, "perf: sample_period must be > 0");
  if (auto r = validate_ring_pages(config); !r) return tl::unexpected(r.error());
  auto pmu = find_memory_pmu(config);
  if (!pmu) return tl::unexpected(pmu.error());
  return open_perf_sampling_source(pmu->events, config);
}

Result<std::unique_ptr<hal::AccessSource>> open_perf_sampling_source(const std::vector<PerfEventSpec>& events,
                                                                     const PerfSamplingConfig& config) {
  if (events.empty()) return fail(EINVAL, "perf: no events to sample");
  if (auto r = validate_ring_pages(config); !r) return tl::unexpected(r.error());
  auto phys_allowed = check_perf_permission(config);
  if (!phys_allowed) return tl::unexpected(phys_allowed.error());
  auto where = targets(config);
  if (!where) return tl::unexpected(where.error());
  if (where->empty()) return fail(ESRCH, "perf: nothing to sample (no threads)");

  std::vector<Ring> rings;
  for (const auto& event : events) {
    PerfOpenSettings settings = initial_open_settings(config, *phys_allowed, event);
    bool settled = false;
    for (const auto& [pid, cpu] : *where) {
      auto fd = settled ? open_sampling_event(event, settings, config, pid, cpu)
                        : open_sampling_event_settling(event, settings, config, pid, cpu);
      if (!fd) {
        // A thread may exit between listing and opening.
        if (fd.error().code == ESRCH && pid > 0) continue;
        return tl::unexpected(fd.error());
      }
      settled = true;
      auto ring = map_ring(std::move(*fd), settings.sample_type, config.ring_pages, event.label);
      if (!ring) return tl::unexpected(ring.error());
      rings.push_back(std::move(*ring));
    }
  }
  if (rings.empty()) return fail(ESRCH, "perf: every sampled thread exited");
  for (auto& ring : rings) {
    if (::ioctl(ring.fd.get(), PERF_EVENT_IOC_ENABLE, 0) != 0) return fail_errno("perf: enable event");
  }
  return std::unique_ptr<hal::AccessSource>(
      std::make_unique<PerfSamplingSource>(std::move(rings)));
}

}  // namespace cxlpool::drivers
