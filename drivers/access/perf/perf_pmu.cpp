// SPDX-License-Identifier: Apache-2.0
#include "perf_pmu.hpp"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <charconv>
#include <cstring>
#include <sstream>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::drivers {
namespace {

constexpr const char* kPmuDir = "/bus/event_source/devices";
// Hybrid Intel parts name the big-core PMU cpu_core; others call it cpu.
constexpr const char* kPebsPmus[] = {"cpu_core", "cpu"};
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
// IBS op counts in units of 16 and rejects tiny periods.
constexpr uint64_t kIbsMinPeriod = 0x100;

std::string pmu_path(const std::string& pmu, const std::string& rel) {
  return std::string(kPmuDir) + "/" + pmu + (rel.empty() ? "" : "/" + rel);
}

Result<uint64_t> parse_number(const std::string& text) {
  uint64_t v = 0;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    b += 2;
    base = 16;
  }
  auto [p, ec] = std::from_chars(b, e, v, base);
  if (b == e || ec != std::errc() || p != e) return fail(EINVAL, "bad number '" + text + "'");
  return v;
}

struct FormatField {
  std::string word;  // config, config1, config2
  std::vector<std::pair<unsigned, unsigned>> bits;  // inclusive ranges, low bits of the value first
};

// "config:0-7", "config1:0-15", "config:0-7,21".
Result<FormatField> parse_format(const std::string& text) {
  FormatField f;
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return fail(EINVAL, "bad PMU format '" + text + "'");
  f.word = text.substr(0, colon);
  if (f.word != "config" && f.word != "config1" && f.word != "config2") {
    return fail(EINVAL, "bad PMU format '" + text + "': unknown word");
  }
  std::stringstream ranges(text.substr(colon + 1));
  std::string part;
  while (std::getline(ranges, part, ',')) {
    const size_t dash = part.find('-');
    auto lo = parse_number(part.substr(0, dash));
    auto hi = dash == std::string::npos ? lo : parse_number(part.substr(dash + 1));
    if (!lo || !hi || *lo > *hi || *hi > 63) return fail(EINVAL, "bad PMU format '" + text + "'");
    f.bits.emplace_back(static_cast<unsigned>(*lo), static_cast<unsigned>(*hi));
  }
  if (f.bits.empty()) return fail(EINVAL, "bad PMU format '" + text + "'");
  return f;
}

Result<void> deposit(const FormatField& f, uint64_t value, PerfEventSpec& spec, const std::string& term) {
  uint64_t* word = f.word == "config" ? &spec.config : f.word == "config1" ? &spec.config1 : &spec.config2;
  uint64_t rest = value;
  for (const auto& [lo, hi] : f.bits) {
    const unsigned width = hi - lo + 1;
    const uint64_t mask = width == 64 ? ~0ULL : ((1ULL << width) - 1);
    *word = (*word & ~(mask << lo)) | ((rest & mask) << lo);
    rest = width == 64 ? 0 : rest >> width;
  }
  if (rest != 0) return fail(EINVAL, "value " + std::to_string(value) + " does not fit PMU term '" + term + "'");
  return {};
}

std::string list_pmus(const SysfsRoot& sys) {
  std::string names;
  for (const auto& n : sys.list(kPmuDir)) names += (names.empty() ? "" : " ") + n;
  return names.empty() ? "none" : names;
}

Result<PerfMemoryPmu> find_pebs(const SysfsRoot& sys, const PerfSamplingConfig& config) {
  for (const char* pmu : kPebsPmus) {
    if (!sys.exists(pmu_path(pmu, "events/mem-loads"))) continue;
    PerfMemoryPmu found;
    found.kind = "Intel PEBS";
    std::vector<std::string> events = {"mem-loads"};
    if (config.stores) {
      if (!sys.exists(pmu_path(pmu, "events/mem-stores"))) {
        return fail(ENODEV, std::string(pmu) + " has mem-loads but no mem-stores event");
      }
      events.push_back("mem-stores");
    }
    for (const auto& name : events) {
      auto terms = sys.read_string(pmu_path(pmu, "events/" + name));
      if (!terms) return tl::unexpected(terms.error());
      std::vector<std::pair<std::string, uint64_t>> overrides;
      if (name == "mem-loads" && sys.exists(pmu_path(pmu, "format/ldlat"))) {
        overrides.emplace_back("ldlat", config.load_latency);
      }
      auto spec = encode_pmu_event(sys, pmu, *terms, overrides);
      if (!spec) return tl::unexpected(spec.error());
      spec->label = std::string(pmu) + "/" + name + "/";
      spec->precise_ip = 3;
      spec->sample_period = config.sample_period;
      found.events.push_back(std::move(*spec));
    }
    return found;
  }
  return fail(ENODEV, "no Intel PEBS memory sampling (no cpu/events/mem-loads)");
}

Result<PerfMemoryPmu> find_ibs(const SysfsRoot& sys, const PerfSamplingConfig& config) {
  if (!sys.exists(pmu_path("ibs_op", "type"))) {
    return fail(ENODEV, "no AMD IBS (no ibs_op PMU)");
  }
  auto spec = encode_pmu_event(sys, "ibs_op", "", {});
  if (!spec) return tl::unexpected(spec.error());
  spec->label = "ibs_op//";
  spec->precise_ip = 0;
  spec->sample_period = std::max(config.sample_period, kIbsMinPeriod) & ~0xfULL;
  PerfMemoryPmu found;
  found.kind = "AMD IBS";
  found.events.push_back(std::move(*spec));
  return found;
}

}  // namespace

Result<PerfEventSpec> encode_pmu_event(const SysfsRoot& sys, const std::string& pmu,
                                       const std::string& terms,
                                       const std::vector<std::pair<std::string, uint64_t>>& overrides) {
  PerfEventSpec spec;
  auto type = sys.read_int(pmu_path(pmu, "type"));
  if (!type) return tl::unexpected(type.error());
  if (*type < 0 || *type > UINT32_MAX) return fail(EINVAL, pmu + "/type out of range");
  spec.type = static_cast<uint32_t>(*type);

  std::vector<std::pair<std::string, uint64_t>> values;
  std::stringstream in(terms);
  std::string term;
  while (std::getline(in, term, ',')) {
    if (term.empty()) continue;
    const size_t eq = term.find('=');
    const std::string name = term.substr(0, eq);
    uint64_t value = 1;  // a bare term is a flag
    if (eq != std::string::npos) {
      auto v = parse_number(term.substr(eq + 1));
      if (!v) return fail(EINVAL, pmu + " event '" + terms + "': " + v.error().message);
      value = *v;
    }
    values.emplace_back(name, value);
  }
  for (const auto& [name, value] : overrides) {
    bool replaced = false;
    for (auto& v : values) {
      if (v.first == name) {
        v.second = value;
        replaced = true;
      }
    }
    if (!replaced) values.emplace_back(name, value);
  }
  for (const auto& [name, value] : values) {
    auto text = sys.read_string(pmu_path(pmu, "format/" + name));
    if (!text) return fail(EINVAL, pmu + " event term '" + name + "' has no format description");
    auto field = parse_format(*text);
    if (!field) return fail(EINVAL, pmu + "/format/" + name + ": " + field.error().message);
    if (auto r = deposit(*field, value, spec, name); !r) return fail(EINVAL, pmu + ": " + r.error().message);
  }
  return spec;
}

Result<PerfMemoryPmu> find_memory_pmu(const PerfSamplingConfig& config) {
  const SysfsRoot sys(config.sysfs_root);
  std::string why;
  if (config.pmu != PerfPmuPreference::kIbs) {
    auto pebs = find_pebs(sys, config);
    if (pebs || pebs.error().code != ENODEV || config.pmu == PerfPmuPreference::kPebs) {
      if (!pebs && pebs.error().code == ENODEV) {
        return fail(ENODEV, pebs.error().message + "; PMUs: " + list_pmus(sys));
      }
      return pebs;
    }
    why = pebs.error().message;
  }
  auto ibs = find_ibs(sys, config);
  if (ibs || ibs.error().code != ENODEV) return ibs;
  why += (why.empty() ? "" : ", ") + ibs.error().message;
  return fail(ENODEV, why + "; PMUs: " + list_pmus(sys));
}

Result<bool> check_perf_permission(const PerfSamplingConfig& config) {
  const SysfsRoot proc(config.procfs_root);
  auto paranoid = proc.read_int("/sys/kernel/perf_event_paranoid");
  if (!paranoid) return fail(paranoid.error().code, "perf_event_paranoid: " + paranoid.error().message);
  bool capable = false;
  if (auto status = proc.read_string("/self/status")) {
    std::istringstream lines(*status);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("CapEff:", 0) != 0) continue;
      auto caps = parse_number("0x" + line.substr(line.find_first_not_of(" \t", 7)));
      if (caps) capable = ((*caps >> kCapSysAdmin) & 1) != 0 || ((*caps >> kCapPerfmon) & 1) != 0;
    }
  }
  if (capable) return true;
  const std::string level = "perf_event_paranoid is " + std::to_string(*paranoid);
  // The kernel's rules (perf_event_open(2)): CPU-wide events need <= 0,
  // kernel samples and physical addresses <= 1, per-thread events <= 2.
  if (config.pids.empty() && *paranoid > 0) {
    return fail(EACCES, level + ": system-wide sampling needs <= 0 or CAP_PERFMON/CAP_SYS_ADMIN");
  }
  if (!config.exclude_kernel && *paranoid > 1) {
    return fail(EACCES, level + ": kernel samples need <= 1 or CAP_PERFMON/CAP_SYS_ADMIN");
  }
  if (*paranoid > 2) return fail(EACCES, level + ": sampling needs <= 2 or CAP_PERFMON/CAP_SYS_ADMIN");
  return *paranoid <= 1;
}

Result<std::vector<int>> online_cpus(const std::string& sysfs_root) {
  const SysfsRoot sys(sysfs_root);
  auto text = sys.read_string("/devices/system/cpu/online");
  if (!text) return tl::unexpected(text.error());
  auto cpus = parse_id_list(*text);
  if (!cpus) return tl::unexpected(cpus.error());
  if (cpus->empty()) return fail(EINVAL, "no online CPUs listed");
  return cpus;
}

std::string hardware_counter_note() {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) return "no hardware PMU (perf_event_open(cycles): " + std::string(strerror(errno)) + ")";
  UniqueFd owned(fd);
  return "a cycles counter opens";
}

}  // namespace cxlpool::drivers
