// SPDX-License-Identifier: Apache-2.0
#include "damon_source.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "damon_fs.hpp"

namespace cxlpool::drivers {
namespace {

constexpr uint64_t kPageMask = hal::kAccessPageBytes - 1;
// DAMON refuses fewer than three regions per target.
constexpr uint32_t kDamonMinRegions = 3;

std::string idx(uint64_t i) { return std::to_string(i); }

// Tags an error with what the adapter was doing when it happened.
tl::unexpected<Error> context(const Error& e, const std::string& what) {
  return fail(e.code, what + ": " + e.message);
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string token;
  while (in >> token) {
    if (token == word) return true;
  }
  return false;
}

class DamonSource final : public hal::AccessSource {
 public:
  DamonSource(DamonSourceConfig config, DamonFs fs)
      : config_(std::move(config)),
        fs_(std::move(fs)),
        kdamond_("kdamonds/" + idx(config_.kdamond_index)),
        context_(kdamond_ + "/contexts/" + idx(config_.attach ? config_.context_index : 0)),
        scheme_(context_ + "/schemes/" + idx(config_.attach ? config_.scheme_index : 0)) {}

  ~DamonSource() override { release(); }

  std::string_view name() const override { return "damon"; }
  hal::AccessSourceTraits traits() const override { return {}; }
  uint64_t accesses_total() const override { return accesses_; }

  Result<void> set_up_own();
  Result<void> attach();
  Result<void> collect(std::vector<hal::PageAccess>& out) override;

 private:
  Result<void> expect_dir(const std::string& rel) const;
  Result<void> require_running() const;
  Result<void> write(const std::string& rel, std::string_view value) const;
  Result<void> write_u64(const std::string& rel, uint64_t value) const;
  Result<uint64_t> read_addr_unit() const;
  void release();

  DamonSourceConfig config_;
  DamonFs fs_;
  std::string kdamond_;
  std::string context_;
  std::string scheme_;
  bool created_ = false;  // we wrote nr_kdamonds: release on destruction
  uint64_t addr_unit_ = 1;
  uint64_t accesses_ = 0;
};

Result<void> DamonSource::expect_dir(const std::string& rel) const {
  if (!fs_.exists(rel)) return fail(ENOENT, fs_.path(rel) + " is missing (the kernel should have created it)");
  return {};
}

Result<void> DamonSource::write(const std::string& rel, std::string_view value) const {
  return fs_.write(rel, value);
}

Result<void> DamonSource::write_u64(const std::string& rel, uint64_t value) const {
  return fs_.write_u64(rel, value);
}

Result<void> DamonSource::require_running() const {
  auto state = fs_.read_text(kdamond_ + "/state");
  if (!state) return tl::unexpected(state.error());
  if (*state != "on") {
    return fail(ESRCH, "kdamond " + idx(config_.kdamond_index) + " is not running (state '" +
                           state->substr(0, 32) + "')");
  }
  return {};
}

// Since 6.18 a context may scale its region addresses; older kernels have no
// such file and use bytes.
Result<uint64_t> DamonSource::read_addr_unit() const {
  if (!fs_.exists(context_ + "/addr_unit")) return 1;
  auto unit = fs_.read_u64(context_ + "/addr_unit");
  if (!unit) return tl::unexpected(unit.error());
  if (*unit == 0) return fail(EINVAL, fs_.path(context_ + "/addr_unit") + ": 0");
  return *unit;
}

Result<void> DamonSource::set_up_own() {
  auto nr = fs_.read_u64("kdamonds/nr_kdamonds");
  if (!nr) return tl::unexpected(nr.error());
  if (*nr != 0) {
    return fail(EBUSY, std::to_string(*nr) +
                           " kdamond(s) exist already; writing nr_kdamonds would rebuild them all "
                           "(use attach mode to read an existing one)");
  }
  if (auto r = write_u64("kdamonds/nr_kdamonds", config_.kdamond_index + 1ULL); !r) return r;
  created_ = true;
  if (auto r = expect_dir(kdamond_ + "/contexts"); !r) return r;

  if (auto r = write("kdamonds/" + idx(config_.kdamond_index) + "/contexts/nr_contexts", "1"); !r) return r;
  if (auto r = expect_dir(context_); !r) return r;
  auto ops = fs_.read_text(context_ + "/avail_operations");
  if (!ops) return tl::unexpected(ops.error());
  if (!has_word(*ops, "paddr")) {
    return fail(ENOTSUP, "DAMON cannot monitor physical addresses: 'paddr' is not in " +
                             fs_.path(context_ + "/avail_operations"));
  }
  if (auto r = write(context_ + "/operations", "paddr"); !r) return r;
  if (fs_.exists(context_ + "/addr_unit")) {
    if (auto r = write(context_ + "/addr_unit", "1"); !r) return r;
  }

  const std::string attrs = context_ + "/monitoring_attrs";
  if (auto r = write_u64(attrs + "/intervals/sample_us", config_.sample_us); !r) return r;
  if (auto r = write_u64(attrs + "/intervals/aggr_us", config_.aggr_us); !r) return r;
  if (auto r = write_u64(attrs + "/intervals/update_us", config_.update_us); !r) return r;
  if (auto r = write_u64(attrs + "/nr_regions/min", config_.min_regions); !r) return r;
  if (auto r = write_u64(attrs + "/nr_regions/max", config_.max_regions); !r) return r;

  // paddr takes no pid; its regions must be given explicitly.
  if (auto r = write(context_ + "/targets/nr_targets", "1"); !r) return r;
  const std::string regions = context_ + "/targets/0/regions";
  if (auto r = expect_dir(regions); !r) return r;
  auto ranges = config_.ranges;
  std::sort(ranges.begin(), ranges.end());
  if (auto r = write_u64(regions + "/nr_regions", ranges.size()); !r) return r;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const std::string region = regions + "/" + idx(i);
    if (auto r = expect_dir(region); !r) return r;
    if (auto r = write_u64(region + "/start", ranges[i].first); !r) return r;
    if (auto r = write_u64(region + "/end", ranges[i].second); !r) return r;
  }

  // A "stat" scheme changes nothing; it only makes DAMON keep per-region
  // results we can read back as tried regions. Its pattern matches anything.
  if (auto r = write(context_ + "/schemes/nr_schemes", "1"); !r) return r;
  if (auto r = expect_dir(scheme_); !r) return r;
  if (auto r = write(scheme_ + "/action", "stat"); !r) return r;
  const std::string pattern = scheme_ + "/access_pattern";
  constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();
  if (auto r = write_u64(pattern + "/sz/min", 0); !r) return r;
  if (auto r = write_u64(pattern + "/sz/max", kU64Max); !r) return r;
  if (auto r = write_u64(pattern + "/nr_accesses/min", 0); !r) return r;
  if (auto r = write_u64(pattern + "/nr_accesses/max", kU32Max); !r) return r;
  if (auto r = write_u64(pattern + "/age/min", 0); !r) return r;
  if (auto r = write_u64(pattern + "/age/max", kU32Max); !r) return r;

  if (auto r = write(kdamond_ + "/state", "on"); !r) return r;
  addr_unit_ = 1;
  return {};
}

Result<void> DamonSource::attach() {
  auto nr = fs_.read_u64("kdamonds/nr_kdamonds");
  if (!nr) return tl::unexpected(nr.error());
  if (config_.kdamond_index >= *nr) {
    return fail(ENOENT, "no kdamond " + idx(config_.kdamond_index) + " (nr_kdamonds is " +
                            std::to_string(*nr) + ")");
  }
  if (auto r = require_running(); !r) return r;
  auto nr_contexts = fs_.read_u64(kdamond_ + "/contexts/nr_contexts");
  if (!nr_contexts) return tl::unexpected(nr_contexts.error());
  if (config_.context_index >= *nr_contexts) {
    return fail(ENOENT, "kdamond " + idx(config_.kdamond_index) + " has no context " +
                            idx(config_.context_index));
  }
  auto ops = fs_.read_text(context_ + "/operations");
  if (!ops) return tl::unexpected(ops.error());
  if (*ops != "paddr") {
    return fail(ENOTSUP, fs_.path(context_) + " monitors '" + ops->substr(0, 32) +
                             "', not physical addresses ('paddr')");
  }
  auto nr_schemes = fs_.read_u64(context_ + "/schemes/nr_schemes");
  if (!nr_schemes) return tl::unexpected(nr_schemes.error());
  if (config_.scheme_index >= *nr_schemes) {
    return fail(ENOENT, fs_.path(context_) + " has no scheme " + idx(config_.scheme_index));
  }
  if (auto r = expect_dir(scheme_ + "/tried_regions"); !r) {
    return fail(ENOENT, r.error().message + "; tried regions need Linux 6.2+");
  }
  auto unit = read_addr_unit();
  if (!unit) return tl::unexpected(unit.error());
  addr_unit_ = *unit;
  return {};
}

Result<void> DamonSource::collect(std::vector<hal::PageAccess>& out) {
  if (auto r = require_running(); !r) return r;
  // The kernel refills tried_regions/ before this write returns.
  if (auto r = write(kdamond_ + "/state", "update_schemes_tried_regions"); !r) return r;

  const std::string tried = scheme_ + "/tried_regions";
  if (auto r = expect_dir(tried); !r) return r;
  std::vector<hal::PageAccess> found;
  uint64_t accesses = 0;
  for (const uint64_t i : fs_.indices(tried)) {
    const std::string region = tried + "/" + idx(i);
    auto start = fs_.read_u64(region + "/start");
    if (!start) return context(start.error(), "tried region " + idx(i));
    auto end = fs_.read_u64(region + "/end");
    if (!end) return context(end.error(), "tried region " + idx(i));
    auto nr_accesses = fs_.read_u64(region + "/nr_accesses");
    if (!nr_accesses) return context(nr_accesses.error(), "tried region " + idx(i));
    if (*start >= *end) {
      return fail(EINVAL, fs_.path(region) + ": start " + std::to_string(*start) +
                              " is not below end " + std::to_string(*end));
    }
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
    if (*end > kMax / addr_unit_) {
      return fail(ERANGE, fs_.path(region) + ": end overflows with addr_unit " + idx(addr_unit_));
    }
    const uint64_t first = (*start * addr_unit_) & ~kPageMask;
    const uint64_t last = *end * addr_unit_;
    // The kernel keeps nr_accesses in an unsigned int.
    if (*nr_accesses > std::numeric_limits<uint32_t>::max()) {
      return fail(ERANGE, fs_.path(region + "/nr_accesses") + ": " + std::to_string(*nr_accesses) +
                              " is out of range");
    }
    if (*nr_accesses == 0) continue;  // cold: nothing to report
    hal::PageAccess access;
    access.space = hal::AddressSpace::kPhysical;
    access.owner = 0;
    access.address = first;
    access.pages = (last - first + kPageMask) >> hal::kAccessPageShift;
    access.count = *nr_accesses;
    access.words = 0;
    uint64_t weight = 0;
    if (__builtin_mul_overflow(access.count, access.pages, &weight) ||
        __builtin_add_overflow(accesses, weight, &accesses)) {
      accesses = std::numeric_limits<uint64_t>::max();
    }
    found.push_back(access);
  }
  // All or nothing: a malformed region discards the whole epoch.
  out.insert(out.end(), found.begin(), found.end());
  if (__builtin_add_overflow(accesses_, accesses, &accesses_)) accesses_ = std::numeric_limits<uint64_t>::max();
  return {};
}

void DamonSource::release() {
  if (!created_) return;
  created_ = false;
  // Best effort: a destructor has nobody to report to, and "off" on a
  // kdamond that never started fails harmlessly.
  (void)write(kdamond_ + "/state", "off");
  (void)write("kdamonds/nr_kdamonds", "0");
}

}  // namespace

Result<void> validate_damon_config(const DamonSourceConfig& c) {
  if (c.sysfs_root.empty()) return fail(EINVAL, "damon: empty sysfs root");
  if (c.attach) return {};
  if (c.ranges.empty()) return fail(EINVAL, "damon: no physical ranges to monitor");
  auto ranges = c.ranges;
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [start, end] = ranges[i];
    const std::string text = "[" + std::to_string(start) + ", " + std::to_string(end) + ")";
    if (start >= end) return fail(EINVAL, "damon: empty range " + text);
    if ((start & kPageMask) != 0 || (end & kPageMask) != 0) {
      return fail(EINVAL, "damon: range " + text + " is not 4 KiB aligned");
    }
    if (i > 0 && start < ranges[i - 1].second) return fail(EINVAL, "damon: range " + text + " overlaps another");
  }
  if (c.sample_us == 0) return fail(EINVAL, "damon: sample_us must be > 0");
  if (c.aggr_us < c.sample_us) return fail(EINVAL, "damon: aggr_us must be >= sample_us");
  if (c.update_us == 0) return fail(EINVAL, "damon: update_us must be > 0");
  if (c.min_regions < kDamonMinRegions) return fail(EINVAL, "damon: min_regions must be >= 3");
  if (c.max_regions < c.min_regions) return fail(EINVAL, "damon: max_regions must be >= min_regions");
  return {};
}

Result<std::unique_ptr<hal::AccessSource>> make_damon_source(const DamonSourceConfig& config) {
  if (auto r = validate_damon_config(config); !r) return tl::unexpected(r.error());
  DamonFs fs(config.sysfs_root);
  if (!fs.exists("kdamonds/nr_kdamonds")) {
    return fail(ENOENT, "no DAMON sysfs interface at " + fs.path("") +
                            " (needs Linux 5.18+ with CONFIG_DAMON_SYSFS)");
  }
  auto source = std::make_unique<DamonSource>(config, std::move(fs));
  auto r = config.attach ? source->attach() : source->set_up_own();
  if (!r) return context(r.error(), config.attach ? "damon attach" : "damon set-up");
  return std::unique_ptr<hal::AccessSource>(std::move(source));
}

}  // namespace cxlpool::drivers
