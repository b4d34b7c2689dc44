// SPDX-License-Identifier: Apache-2.0
// Guest-side end-to-end test of the tiering engine: a region on the CXL
// tier (the memory-only node 1) whose client touches a hot working set and
// reports it with cxlpool_access_report. cxlpoold's M5 engine must move the
// hot pages to node 0 and leave the cold ones on node 1 (checked page by page
// through the client's own mapping); then, with the fast tier's watermarks
// lowered below what the hot set occupies, the pages that went cold must go
// back to node 1 while the still-hot ones stay.
//
// usage: vm_tiering_promote [--socket PATH] [--report FILE]
// exit: 0 ok, 1 failure, 77 no NUMA node 1 (not in the VM guest)
#include <cxlpool/cxlpool.h>

#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "client_session.hpp"
#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/clock.hpp"
#include "page_placement.hpp"
#include "report.hpp"
#include "vm_options.hpp"

namespace vt = cxlpool::vmtest;
namespace proto = cxlpool::proto;

namespace {

using vt::api_error;
using vt::Session;

constexpr int kCxlNode = 1;
constexpr int kDramNode = 0;
constexpr size_t kPage = 4096;
constexpr size_t kRegionPages = 4096;  // 16 MiB
constexpr size_t kHotPages = 256;      // [0, 256) hot, the rest cold
constexpr size_t kStillHot = 128;      // phase 2: [0, 128) stay hot, [128, 256) cool down
constexpr auto kPromoteTimeout = std::chrono::seconds(120);
constexpr auto kDemoteTimeout = std::chrono::seconds(120);

class TieringTest {
 public:
  TieringTest(std::string socket, vt::Report& report) : socket_(std::move(socket)), report_(report) {}

  int run() {
    if (int rc = vt::skip_without_node(kCxlNode); rc != 0) return rc;
    if (int rc = cxlpool_connect(socket_.c_str(), "vm_tiering_promote", &s_.client); rc < 0) {
      return report_.failure(api_error("connect to " + socket_, rc));
    }
    auto admin = cxlpool::client::Connection::open(socket_, "vm_tiering_admin");
    if (!admin) return report_.failure("admin connection: " + admin.error().message);
    admin_ = std::move(*admin);
    if (int rc = find_tiers(); rc != 0) return rc;

    if (int rc = cxlpool_region_alloc(s_.client, cxl_.id, kRegionPages * kPage, 0, &s_.region); rc < 0) {
      return report_.failure(api_error("allocate on tier " + std::string(cxl_.name), rc));
    }
    if (int rc = cxlpool_region_map(s_.region, &addr_); rc < 0) return report_.failure(api_error("map region", rc));
    base_ = static_cast<unsigned char*>(addr_);
    // Every page written once through the client's mapping: the cold pages
    // exist (on node 1) and are reported once, below min_accesses.
    for (size_t p = 0; p < kRegionPages; ++p) base_[p * kPage] = static_cast<unsigned char>(p);
    for (size_t p = kHotPages; p < kRegionPages; ++p) {
      if (int rc = cxlpool_access_report(s_.region, p * kPage, 64, CXLPOOL_ACCESS_WRITE); rc < 0) {
        return report_.failure(api_error("report a cold page", rc));
      }
    }
    (void)cxlpool_access_flush(s_.client);
    auto nodes = where();
    if (!nodes) return report_.failure(nodes.error().message);
    if (auto ok = vt::expect_all_on_node(*nodes, kCxlNode); !ok) {
      return report_.failure("after allocation: " + ok.error().message);
    }
    report_.line("region " + std::to_string(cxlpool_region_id(s_.region)) + ": " +
                 std::to_string(kRegionPages) + " pages on tier " + cxl_.name + " (node 1), hot set " +
                 std::to_string(kHotPages) + " pages");

    // Phase 1: the hot set is promoted, the cold pages stay.
    const Wait promotion = keep_hot_until(kHotPages, kPromoteTimeout, nodes, [](const std::vector<int>& n) {
      return count_on(n, 0, kHotPages, kDramNode) == kHotPages;
    });
    if (promotion.rc != 0) return promotion.rc;
    const bool promoted = promotion.settled;
    const double promote_s = promotion.seconds;
    const size_t hot_fast = count_on(*nodes, 0, kHotPages, kDramNode);
    const size_t cold_slow = count_on(*nodes, kHotPages, kRegionPages, kCxlNode);
    char line[256];
    std::snprintf(line, sizeof line, "promotion: %zu/%zu hot pages on node 0 after %.1f s; %zu/%zu cold pages on node 1",
                  hot_fast, kHotPages, promote_s, cold_slow, kRegionPages - kHotPages);
    report_.line(line);
    status_line("after promotion");
    if (!promoted) return report_.failure("not every hot page reached node 0 within the timeout");
    if (cold_slow != kRegionPages - kHotPages) {
      return report_.failure(std::to_string(kRegionPages - kHotPages - cold_slow) + " cold page(s) left node 1");
    }
    if (!contents_intact()) return report_.failure("page contents changed across the moves");

    // Phase 2: half of the hot set cools down; the fast tier's watermarks go
    // below what the promoted pages occupy, so the engine must demote.
    const uint64_t cap_pages = dram_.capacity / kPage;
    const double high = static_cast<double>(kHotPages - 64) / static_cast<double>(cap_pages);
    const double low = static_cast<double>(kStillHot + 16) / static_cast<double>(cap_pages);
    if (!set_knob("low_watermark", std::to_string(low)) || !set_knob("high_watermark", std::to_string(high))) return 1;
    // Demotion stops at the low watermark: most, not all, cooled pages go.
    const Wait demotion = keep_hot_until(kStillHot, kDemoteTimeout, nodes, [](const std::vector<int>& n) {
      return count_on(n, kStillHot, kHotPages, kCxlNode) >= kHotPages - kStillHot - 32;
    });
    if (demotion.rc != 0) return demotion.rc;
    const bool demoted = demotion.settled;
    const double demote_s = demotion.seconds;
    const size_t still_fast = count_on(*nodes, 0, kStillHot, kDramNode);
    const size_t cooled_slow = count_on(*nodes, kStillHot, kHotPages, kCxlNode);
    const size_t cold_slow2 = count_on(*nodes, kHotPages, kRegionPages, kCxlNode);
    std::snprintf(line, sizeof line,
                  "demotion (high %.5f, low %.5f of %" PRIu64 " pages): %zu/%zu cooled pages back on node 1 after "
                  "%.1f s; %zu/%zu still-hot pages on node 0; %zu/%zu cold pages on node 1",
                  high, low, cap_pages, cooled_slow, kHotPages - kStillHot, demote_s, still_fast, kStillHot,
                  cold_slow2, kRegionPages - kHotPages);
    report_.line(line);
    status_line("after demotion");
    if (!demoted) return report_.failure("the cooled pages were not demoted within the timeout");
    if (still_fast != kStillHot) {
      return report_.failure(std::to_string(kStillHot - still_fast) + " still-hot page(s) were demoted");
    }
    if (cold_slow2 != kRegionPages - kHotPages) return report_.failure("cold pages moved during demotion");
    if (!contents_intact()) return report_.failure("page contents changed across the moves");
    return 0;
  }

 private:
  int find_tiers() {
    std::vector<cxlpool_tier_info> tiers(16);
    const int n = cxlpool_tiers(s_.client, tiers.data(), tiers.size());
    if (n < 0) return report_.failure(api_error("list tiers", n));
    bool have_cxl = false, have_dram = false;
    for (int i = 0; i < std::min<int>(n, static_cast<int>(tiers.size())); ++i) {
      const auto& t = tiers[i];
      report_.line("tier " + std::to_string(t.id) + " " + t.name + ": node " + std::to_string(t.numa_node) +
                   ", capacity " + std::to_string(t.capacity >> 20) + " MiB");
      if (t.kind == CXLPOOL_TIER_CXL && t.numa_node == kCxlNode && !have_cxl) {
        cxl_ = t;
        have_cxl = true;
      } else if (t.kind == CXLPOOL_TIER_DRAM && t.numa_node == kDramNode && !have_dram) {
        dram_ = t;
        have_dram = true;
      }
    }
    if (!have_cxl || !have_dram) return report_.failure("need a dram tier on node 0 and a cxl tier on node 1");
    return 0;
  }

  // One round of the workload: every page of [first, end) read and written
  // across all its words, reported as one access of the whole page.
  int touch_and_report(size_t first, size_t end) {
    for (int round = 0; round < 4; ++round) {
      for (size_t p = first; p < end; ++p) {
        volatile unsigned char* page = base_ + p * kPage;
        for (size_t w = 0; w < kPage; w += 64) page[w] = static_cast<unsigned char>(page[w] + 0);
        if (int rc = cxlpool_access_report(s_.region, p * kPage, kPage, 0); rc < 0) {
          return report_.failure(api_error("report a hot page", rc));
        }
      }
      (void)cxlpool_access_flush(s_.client);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return 0;
  }

  struct Wait {
    int rc = 0;            // the exit status of a failure, 0: none
    bool settled = false;  // `settled` held before the timeout
    double seconds = 0;
  };

  // Keeps pages [0, hot_end) hot (touch_and_report rounds) until `settled`
  // holds for the region's placement, left in `nodes`, or `timeout` passes.
  Wait keep_hot_until(size_t hot_end, std::chrono::seconds timeout, cxlpool::Result<std::vector<int>>& nodes,
                      const std::function<bool(const std::vector<int>&)>& settled) {
    Wait w;
    const uint64_t start = cxlpool::monotonic_ns();
    while (std::chrono::nanoseconds(cxlpool::monotonic_ns() - start) < timeout) {
      if (w.rc = touch_and_report(0, hot_end); w.rc != 0) return w;
      nodes = where();
      if (!nodes) {
        w.rc = report_.failure(nodes.error().message);
        return w;
      }
      if (settled(*nodes)) {
        w.settled = true;
        break;
      }
    }
    w.seconds = static_cast<double>(cxlpool::monotonic_ns() - start) / 1e9;
    return w;
  }

  cxlpool::Result<std::vector<int>> where() { return vt::query_page_nodes(addr_, kRegionPages * kPage, kPage); }

  static size_t count_on(const std::vector<int>& nodes, size_t first, size_t end, int node) {
    size_t n = 0;
    for (size_t p = first; p < end; ++p) n += nodes[p] == node ? 1 : 0;
    return n;
  }

  bool contents_intact() const {
    for (size_t p = 0; p < kRegionPages; ++p) {
      if (base_[p * kPage] != static_cast<unsigned char>(p)) return false;
    }
    return true;
  }

  bool set_knob(const std::string& key, const std::string& value) {
    auto reply = admin_->call_for<proto::TieringSetReply>(proto::TieringSet{key, value});
    if (!reply) {
      report_.failure("tiering set " + key + "=" + value + ": " + reply.error().message);
      return false;
    }
    report_.line("tiering set " + key + ": " + reply->old_value + " -> " + reply->new_value);
    return true;
  }

  void status_line(const std::string& when) {
    auto s = admin_->call_for<proto::TieringStatusReply>(proto::TieringStatusRequest{});
    if (!s) return;
    for (const auto& t : s->tiers) {
      if (t.role == proto::TierRole::kUnmanaged) continue;
      char line[256];
      std::snprintf(line, sizeof line,
                    "%s: tier %s (%s): epoch %" PRIu64 ", hot %" PRIu64 ", promoted %" PRIu64 " demoted %" PRIu64
                    ", rate-limited %" PRIu64,
                    when.c_str(), t.name.c_str(), t.role == proto::TierRole::kFast ? "fast" : "slow", s->epoch,
                    t.hot_pages, t.promotions, t.demotions, t.rate_limit_hits);
      report_.line(line);
    }
    for (const auto& src : s->sources) {
      report_.line(when + ": source " + src.name + ": " + std::to_string(src.accesses) + " / dropped " +
                   std::to_string(src.dropped) + " (" + src.detail + ")");
    }
  }

  std::string socket_;
  vt::Report& report_;
  Session s_;
  std::unique_ptr<cxlpool::client::Connection> admin_;
  cxlpool_tier_info cxl_{};
  cxlpool_tier_info dram_{};
  void* addr_ = nullptr;
  unsigned char* base_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  const auto options = vt::parse_vm_test_options(argc, argv, {.takes_socket = true});
  if (!options) return 2;
  vt::Report report("vm_tiering_promote", options->report_path);
  return vt::finish(report, TieringTest(options->socket, report).run());
}
