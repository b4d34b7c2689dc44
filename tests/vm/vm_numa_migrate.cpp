// SPDX-License-Identifier: Apache-2.0
// Guest-side end-to-end test of tier migration through cxlpoold: a region
// allocated on the CXL tier (the memory-only NUMA node) really sits on that
// node, and cxlpool_region_migrate() moves every page to DRAM and back with
// the contents intact, as seen through the client's own mapping. Reports the
// migration rate next to memcpy's.
//
// usage: vm_numa_migrate [--socket PATH] [--size-mib N] [--report FILE]
// exit: 0 ok, 1 failure, 77 no NUMA node 1 (not in the VM guest)
#include <cxlpool/cxlpool.h>

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "client_session.hpp"
#include "cxlpool/common/clock.hpp"
#include "cxlpool/common/units.hpp"
#include "memcpy_baseline.hpp"
#include "memory_pattern.hpp"
#include "page_placement.hpp"
#include "report.hpp"
#include "vm_options.hpp"

namespace vt = cxlpool::vmtest;

namespace {

using vt::api_error;
using vt::Session;

constexpr int kCxlNode = 1;
constexpr uint64_t kSeed = 0x63786c706f6f6cull;

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case CXLPOOL_TIER_DRAM: return "dram";
    case CXLPOOL_TIER_CXL: return "cxl";
    case CXLPOOL_TIER_EMULATED: return "emulated";
    default: return "?";
  }
}

class MigrateTest {
 public:
  MigrateTest(std::string socket, size_t bytes, vt::Report& report)
      : socket_(std::move(socket)), bytes_(bytes), report_(report) {}

  int run() {
    if (int rc = vt::skip_without_node(kCxlNode); rc != 0) return rc;
    if (int rc = cxlpool_connect(socket_.c_str(), "vm_numa_migrate", &s_.client); rc < 0) {
      return report_.failure(api_error("connect to " + socket_, rc));
    }
    if (int rc = find_tiers(); rc != 0) return rc;

    // Measured before the region exists, so node 0 has room for both buffers.
    auto baseline = vt::memcpy_mib_per_s(bytes_, 3, dram_.numa_node);
    if (!baseline) return report_.failure("memcpy baseline: " + baseline.error().message);
    memcpy_mib_per_s_ = *baseline;

    if (int rc = cxlpool_region_alloc(s_.client, cxl_.id, bytes_, CXLPOOL_ALLOC_POPULATE, &s_.region);
        rc < 0) {
      return report_.failure(api_error("allocate " + std::to_string(bytes_ >> 20) +
                                           " MiB on tier " + cxl_.name, rc));
    }
    if (int rc = cxlpool_region_map(s_.region, &addr_); rc < 0) {
      return report_.failure(api_error("map region", rc));
    }
    page_size_ = cxlpool_region_page_size(s_.region);
    if (page_size_ == 0 || cxlpool_region_size(s_.region) < bytes_) {
      return report_.failure("region reports page size " + std::to_string(page_size_) +
                             " and size " + std::to_string(cxlpool_region_size(s_.region)));
    }
    report_.line("region " + std::to_string(cxlpool_region_id(s_.region)) + ": " +
                 std::to_string(bytes_ >> 20) + " MiB on tier " + cxl_.name + ", page size " +
                 std::to_string(page_size_));
    vt::fill_pattern(addr_, bytes_, kSeed);
    if (!placement_ok(cxl_, "after allocation")) return 1;

    if (!migrate(cxl_, dram_)) return 1;
    if (!migrate(dram_, cxl_)) return 1;

    if (int rc = cxlpool_region_free(s_.region); rc < 0) {
      s_.region = nullptr;
      return report_.failure(api_error("free region", rc));
    }
    s_.region = nullptr;
    return 0;
  }

 private:
  int find_tiers() {
    std::vector<cxlpool_tier_info> tiers(16);
    int n = cxlpool_tiers(s_.client, tiers.data(), tiers.size());
    if (n > static_cast<int>(tiers.size())) {
      tiers.resize(n);
      n = cxlpool_tiers(s_.client, tiers.data(), tiers.size());
    }
    if (n < 0) return report_.failure(api_error("list tiers", n));
    tiers.resize(std::min<size_t>(n, tiers.size()));

    bool have_cxl = false, have_dram = false;
    for (const auto& t : tiers) {
      char text[256];
      std::snprintf(text, sizeof(text),
                    "tier %u %s: kind %s, node %d, capacity %" PRIu64 " MiB, free %" PRIu64 " MiB",
                    t.id, t.name, kind_name(t.kind), t.numa_node, t.capacity >> 20, t.free >> 20);
      report_.line(text);
      if (t.kind == CXLPOOL_TIER_CXL && t.numa_node == kCxlNode && !have_cxl) {
        cxl_ = t;
        have_cxl = true;
      }
      if (t.kind == CXLPOOL_TIER_DRAM && t.numa_node >= 0 && t.numa_node != kCxlNode && !have_dram) {
        dram_ = t;
        have_dram = true;
      }
    }
    if (!have_cxl) {
      return report_.failure("the daemon has no tier of kind cxl on node " +
                             std::to_string(kCxlNode) + " although the node exists");
    }
    if (!have_dram) return report_.failure("the daemon has no DRAM tier on a NUMA node");
    if (cxl_.free < bytes_) {
      return report_.failure("tier " + std::string(cxl_.name) + " has only " +
                             std::to_string(cxl_.free >> 20) + " MiB free");
    }
    return 0;
  }

  // Every page of the client's mapping is on the tier's node and holds the
  // pattern.
  bool placement_ok(const cxlpool_tier_info& tier, const std::string& when) {
    auto nodes = vt::query_page_nodes(addr_, bytes_, page_size_);
    if (!nodes) {
      report_.failure(when + ": " + nodes.error().message);
      return false;
    }
    if (auto r = vt::expect_all_on_node(*nodes, tier.numa_node); !r) {
      report_.failure(when + ": " + r.error().message);
      return false;
    }
    if (auto r = vt::verify_pattern(addr_, bytes_, kSeed); !r) {
      report_.failure(when + ": " + r.error().message);
      return false;
    }
    report_.line(when + ": all " + std::to_string(nodes->size()) + " pages on node " +
                 std::to_string(tier.numa_node) + ", pattern intact");
    return true;
  }

  bool migrate(const cxlpool_tier_info& from, const cxlpool_tier_info& to) {
    cxlpool_migrate_result result{};
    const uint64_t start = cxlpool::monotonic_ns();
    const int rc = cxlpool_region_migrate(s_.client, cxlpool_region_id(s_.region), to.id, &result);
    const uint64_t elapsed = cxlpool::monotonic_ns() - start;
    if (rc < 0) {
      report_.failure(api_error(std::string("migrate to tier ") + to.name, rc));
      return false;
    }
    char text[256];
    std::snprintf(text, sizeof(text),
                  "daemon: pages total %" PRIu64 " moved %" PRIu64 " already %" PRIu64
                  " absent %" PRIu64 " failed %" PRIu64 ", %" PRIu64 " bytes in %.1f ms",
                  result.pages_total, result.pages_moved, result.pages_already,
                  result.pages_absent, result.pages_failed, result.bytes_moved,
                  static_cast<double>(result.elapsed_ns) / 1e6);
    report_.line(text);
    const uint64_t pages = bytes_ / page_size_;
    if (result.pages_failed != 0 || result.pages_moved != pages ||
        result.bytes_moved != pages * page_size_) {
      report_.failure("expected all " + std::to_string(pages) + " pages to move");
      return false;
    }
    report_.throughput("migrate", from.numa_node, to.numa_node, bytes_, elapsed, memcpy_mib_per_s_);
    return placement_ok(to, std::string("after migrate to ") + to.name);
  }

  std::string socket_;
  size_t bytes_;
  vt::Report& report_;
  Session s_;
  cxlpool_tier_info cxl_{};
  cxlpool_tier_info dram_{};
  void* addr_ = nullptr;
  size_t page_size_ = 0;
  double memcpy_mib_per_s_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const auto options = vt::parse_vm_test_options(argc, argv, {.takes_socket = true, .size_mib = 256});
  if (!options) return 2;
  vt::Report report("vm_numa_migrate", options->report_path);
  return vt::finish(report, MigrateTest(options->socket, options->size_mib * cxlpool::kMiB, report).run());
}
