// SPDX-License-Identifier: Apache-2.0
// PMU discovery and event encoding on generated sysfs/procfs trees, and the
// probe and factory on this host (which has no memory-sampling PMU).
#include <gtest/gtest.h>

#include <iostream>

#include "perf_pmu.hpp"
#include "perf_probe.hpp"
#include "perf_source.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::drivers {
namespace {

class FakeHost {
 public:
  FakeHost() : dir_("perf") {
    write("sys/devices/system/cpu/online", "0-1");
    write("sys/bus/event_source/devices/software/type", "1");
    write("sys/bus/event_source/devices/tracepoint/type", "2");
    write("proc/sys/kernel/perf_event_paranoid", "2");
    write("proc/self/status", "Name:\tx\nCapEff:\t0000000000000000\n");
  }
  void write(const std::string& rel, const std::string& value) const { dir_.write(rel, value + "\n"); }
  // An Intel core PMU `name` of perf type `type` with a mem-loads event;
  // returns its sysfs folder.
  std::string core_pmu(const std::string& name, const std::string& type, const std::string& mem_loads) const {
    const std::string pmu = "sys/bus/event_source/devices/" + name + "/";
    write(pmu + "type", type);
    write(pmu + "format/event", "config:0-7");
    write(pmu + "format/umask", "config:8-15");
    write(pmu + "format/ldlat", "config1:0-15");
    write(pmu + "events/mem-loads", mem_loads);
    return pmu;
  }
  void intel() const {
    const std::string cpu = core_pmu("cpu", "4", "event=0xcd,umask=0x1,ldlat=3");
    write(cpu + "format/inv", "config:23");
    write(cpu + "events/mem-stores", "event=0xd0,umask=0x82");
  }
  void amd() const {
    const std::string ibs = "sys/bus/event_source/devices/ibs_op/";
    write(ibs + "type", "11");
    write(ibs + "format/cnt_ctl", "config:19");
  }
  PerfSamplingConfig config() const {
    PerfSamplingConfig c;
    c.sysfs_root = dir_.resolve("sys").string();
    c.procfs_root = dir_.resolve("proc").string();
    return c;
  }

 private:
  test::TempDir dir_;
};

TEST(PerfPmu, FindsIntelPebs) {
  FakeHost host;
  host.intel();
  auto c = host.config();
  c.load_latency = 50;
  c.stores = true;
  auto pmu = find_memory_pmu(c);
  ASSERT_TRUE(pmu) << pmu.error().message;
  EXPECT_EQ(pmu->kind, "Intel PEBS");
  ASSERT_EQ(pmu->events.size(), 2u);
  EXPECT_EQ(pmu->events[0].label, "cpu/mem-loads/");
  EXPECT_EQ(pmu->events[0].type, 4u);
  EXPECT_EQ(pmu->events[0].config, 0x01cdu);
  EXPECT_EQ(pmu->events[0].config1, 50u) << "ldlat comes from the configuration";
  EXPECT_EQ(pmu->events[0].precise_ip, 3u);
  EXPECT_EQ(pmu->events[0].sample_period, c.sample_period);
  EXPECT_EQ(pmu->events[1].label, "cpu/mem-stores/");
  EXPECT_EQ(pmu->events[1].config, 0x82d0u);
  EXPECT_EQ(pmu->events[1].config1, 0u);
}

TEST(PerfPmu, PrefersTheHybridCorePmu) {
  FakeHost host;
  host.intel();
  host.core_pmu("cpu_core", "8", "event=0xd0,umask=0x5,ldlat=3");
  auto pmu = find_memory_pmu(host.config());
  ASSERT_TRUE(pmu) << pmu.error().message;
  EXPECT_EQ(pmu->events[0].label, "cpu_core/mem-loads/");
  EXPECT_EQ(pmu->events[0].type, 8u);
  EXPECT_EQ(pmu->events[0].config, 0x05d0u);
}

TEST(PerfPmu, FindsAmdIbs) {
  FakeHost host;
  host.amd();
  auto c = host.config();
  c.sample_period = 100'003;
  auto pmu = find_memory_pmu(c);
  ASSERT_TRUE(pmu) << pmu.error().message;
  EXPECT_EQ(pmu->kind, "AMD IBS");
  ASSERT_EQ(pmu->events.size(), 1u);
  EXPECT_EQ(pmu->events[0].type, 11u);
  EXPECT_EQ(pmu->events[0].config, 0u);
  EXPECT_EQ(pmu->events[0].sample_period % 16, 0u);
  EXPECT_EQ(pmu->events[0].sample_period, 100'000u);
}

TEST(PerfPmu, PreferenceIsHonoured) {
  FakeHost host;
  host.intel();
  host.amd();
  auto c = host.config();
  c.pmu = PerfPmuPreference::kIbs;
  auto pmu = find_memory_pmu(c);
  ASSERT_TRUE(pmu);
  EXPECT_EQ(pmu->kind, "AMD IBS");
  c.pmu = PerfPmuPreference::kAuto;
  EXPECT_EQ(find_memory_pmu(c)->kind, "Intel PEBS");
}

TEST(PerfPmu, NoPmuNamesWhatIsMissing) {
  FakeHost host;
  auto pmu = find_memory_pmu(host.config());
  ASSERT_FALSE(pmu);
  EXPECT_EQ(pmu.error().code, ENODEV);
  EXPECT_NE(pmu.error().message.find("mem-loads"), std::string::npos) << pmu.error().message;
  EXPECT_NE(pmu.error().message.find("ibs_op"), std::string::npos);
  EXPECT_NE(pmu.error().message.find("PMUs: software tracepoint"), std::string::npos)
      << pmu.error().message;
  auto c = host.config();
  c.pmu = PerfPmuPreference::kPebs;
  EXPECT_EQ(find_memory_pmu(c).error().code, ENODEV);
}

TEST(PerfPmu, MalformedDescriptionsAreRejected) {
  const std::pair<std::string, std::string> cases[] = {
      {"events/mem-loads", "event=0xzz,umask=0x1"},
      {"events/mem-loads", "event=0xcd,bogus=1"},  // no format for the term
      {"format/event", "config:7-0"},
      {"format/event", "config3:0-7"},
      {"format/event", "config:0-64"},
      {"format/umask", "config:8"},  // umask 0x1 fits, but 0x82 would not: see below
  };
  for (size_t i = 0; i + 1 < std::size(cases); ++i) {
    FakeHost host;
    host.intel();
    host.write("sys/bus/event_source/devices/cpu/" + cases[i].first, cases[i].second);
    auto pmu = find_memory_pmu(host.config());
    ASSERT_FALSE(pmu) << cases[i].second;
    EXPECT_EQ(pmu.error().code, EINVAL) << cases[i].second << ": " << pmu.error().message;
  }
  FakeHost host;
  host.intel();
  host.write("sys/bus/event_source/devices/cpu/format/umask", "config:8");
  auto c = host.config();
  c.stores = true;  // mem-stores has umask 0x82: does not fit one bit
  auto pmu = find_memory_pmu(c);
  ASSERT_FALSE(pmu);
  EXPECT_NE(pmu.error().message.find("does not fit"), std::string::npos) << pmu.error().message;
}

TEST(PerfPmu, SplitFormatRanges) {
  FakeHost host;
  host.write("sys/bus/event_source/devices/x/type", "9");
  host.write("sys/bus/event_source/devices/x/format/event", "config:0-7,32-35");
  auto spec = encode_pmu_event(SysfsRoot(host.config().sysfs_root), "x", "event=0x1ab", {});
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->config, 0xabu | (0x1ULL << 32));
}

TEST(PerfPmu, Permission) {
  FakeHost host;
  auto c = host.config();
  // paranoid 2, no capabilities: system-wide refused, per-thread allowed
  // without physical addresses.
  auto r = check_perf_permission(c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EACCES);
  EXPECT_NE(r.error().message.find("perf_event_paranoid is 2"), std::string::npos);
  c.pids = {1};
  r = check_perf_permission(c);
  ASSERT_TRUE(r);
  EXPECT_FALSE(*r);
  host.write("proc/sys/kernel/perf_event_paranoid", "3");
  EXPECT_FALSE(check_perf_permission(c));
  host.write("proc/self/status", "CapEff:\t0000004000000000\n");  // CAP_PERFMON
  r = check_perf_permission(c);
  ASSERT_TRUE(r);
  EXPECT_TRUE(*r);
  c.pids.clear();
  host.write("proc/self/status", "CapEff:\t0000000000000000\n");
  host.write("proc/sys/kernel/perf_event_paranoid", "-1");
  r = check_perf_permission(c);
  ASSERT_TRUE(r);
  EXPECT_TRUE(*r);
}

TEST(PerfPmu, FactoryValidatesConfiguration) {
  FakeHost host;
  auto c = host.config();
  c.ring_pages = 3;
  EXPECT_EQ(make_perf_sampling_source(c).error().code, EINVAL);
  c.ring_pages = 64;
  c.sample_period = 0;
  EXPECT_EQ(make_perf_sampling_source(c).error().code, EINVAL);
}

TEST(PerfPmu, FactoryRefusesWithoutPermission) {
  FakeHost host;
  host.intel();
  auto source = make_perf_sampling_source(host.config());
  ASSERT_FALSE(source);
  EXPECT_EQ(source.error().code, EACCES) << source.error().message;
  const auto report = probe_perf_sampling_with(host.config());
  EXPECT_EQ(report.state, hal::BackendState::kNotPresent);
  EXPECT_NE(report.detail.find("perf_event_paranoid is 2"), std::string::npos) << report.detail;
}

bool host_has_memory_pmu() { return probe_perf_sampling().state == hal::BackendState::kAvailable; }

TEST(PerfHost, ProbeSaysNotPresent) {
  const auto r = probe_perf_sampling();
  std::cout << "  AccessSource/perf: " << hal::backend_state_name(r.state) << " (" << r.detail << ")\n";
  if (r.state == hal::BackendState::kAvailable) GTEST_SKIP() << "this host has a memory-sampling PMU: " << r.detail;
  EXPECT_EQ(r.cls, "AccessSource");
  EXPECT_EQ(r.name, "perf");
  EXPECT_EQ(r.state, hal::BackendState::kNotPresent);
  EXPECT_EQ(r.detail.find('\n'), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("mem-loads"), std::string::npos) << r.detail;
}

TEST(PerfHost, FactorySaysNoDevice) {
  if (host_has_memory_pmu()) GTEST_SKIP() << "this host has a memory-sampling PMU";
  auto source = make_perf_sampling_source(PerfSamplingConfig{});
  ASSERT_FALSE(source);
  // ENODEV without the PMU; a host whose PMU exists but refuses us gives
  // the refusal's errno instead.
  if (source.error().code != ENODEV) {
    GTEST_SKIP() << "memory PMU present but unusable: " << source.error().message;
  }
  EXPECT_NE(source.error().message.find("ibs_op"), std::string::npos) << source.error().message;
}

// A PMU description on a host whose CPU has no such counters: the event
// does not open, and the probe names perf_event_open's errno.
TEST(PerfHost, DescribedButUnopenablePmu) {
  if (host_has_memory_pmu()) GTEST_SKIP() << "this host has a memory-sampling PMU";
  FakeHost host;
  host.intel();
  host.write("proc/sys/kernel/perf_event_paranoid", "-1");
  const auto report = probe_perf_sampling_with(host.config());
  EXPECT_EQ(report.state, hal::BackendState::kNotPresent) << report.detail;
  EXPECT_NE(report.detail.find("perf_event_open(cpu/mem-loads/"), std::string::npos) << report.detail;
  auto source = make_perf_sampling_source(host.config());
  ASSERT_FALSE(source);
  EXPECT_NE(source.error().message.find("perf_event_open"), std::string::npos) << source.error().message;
}

}  // namespace
}  // namespace cxlpool::drivers
