// SPDX-License-Identifier: Apache-2.0
// Both ends of the vm_devpool_channel test: a device channel between two
// kernels. The host end maps a file on the host (hal SharedMemory, backend
// "file"); QEMU maps the same file as the guest's ivshmem-plain BAR 2,
// which the guest end maps through sysfs. Both run the channel in
// non-coherent mode (write back before publish, invalidate after consume).
//
// usage: vm_devpool_channel host --file PATH [--count N] [--ready PATH] [--timeout-ms MS]
//                                 [--corrupt-at SEQ]
//        vm_devpool_channel guest [--file PATH] [--timeout-ms MS]
// The host formats the channels, then touches --ready and exchanges; the
// guest takes the record count from the region. `guest --file` maps a file
// instead of the ivshmem BAR (both ends on one host: the self-test), and
// `--corrupt-at` sends one record with a bad checksum, which the other end
// must report.
// exit: 0 ok, 1 failure, 2 usage, 77 (guest) no ivshmem device
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "channel_exchange.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/hal/backend_registry.hpp"
#include "ivshmem_device.hpp"
#include "report.hpp"
#include "vm_options.hpp"

namespace vt = cxlpool::vmtest;
namespace hal = cxlpool::hal;
namespace dp = cxlpool::devpool;

namespace {

struct Options {
  vt::ChannelRole role = vt::ChannelRole::kHost;
  std::string file;
  std::string ready;
  uint32_t count = 20000;
  vt::ExchangeOptions exchange;
};

int usage() {
  std::fprintf(stderr,
               "usage: vm_devpool_channel host --file PATH [--count N] [--ready PATH] [--timeout-ms MS]\n"
               "                                [--corrupt-at SEQ]\n"
               "       vm_devpool_channel guest [--file PATH] [--timeout-ms MS]\n");
  return 2;
}

bool parse(int argc, char** argv, Options& o) {
  if (argc < 2) return false;
  const std::string role = argv[1];
  if (role != "host" && role != "guest") return false;
  o.role = role == "host" ? vt::ChannelRole::kHost : vt::ChannelRole::kGuest;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--file") {
      o.file = value;
    } else if (flag == "--ready") {
      o.ready = value;
    } else if (flag == "--count") {
      o.count = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    } else if (flag == "--timeout-ms") {
      o.exchange.timeout_ms = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    } else if (flag == "--corrupt-at") {
      o.exchange.corrupt_at = std::strtoull(value, nullptr, 10);
    } else {
      return false;
    }
  }
  if ((argc - 2) % 2 != 0) return false;
  return o.role == vt::ChannelRole::kGuest || (!o.file.empty() && o.count > 0);
}

void report_memory(vt::Report& report, const hal::SharedMemory& shm) {
  report.line("mapped " + shm.describe() + "; coherence default: " +
              (shm.info().coherent ? "coherent" : "non-coherent") + " (" + shm.info().coherence_reason +
              "); the test runs non-coherent");
}

int finish_exchange(vt::Report& report, const char* side, cxlpool::Result<vt::ExchangeStats> stats) {
  if (!stats) return report.failure(std::string(side) + ": " + stats.error().message);
  const double seconds = static_cast<double>(stats->elapsed_ns) / 1e9;
  report.line(std::string(side) + ": sent " + std::to_string(stats->sent) + " and received " +
              std::to_string(stats->received) + " records, every sequence number and checksum right, in " +
              std::to_string(seconds) + " s");
  return 0;
}

int run_host(const Options& o, vt::Report& report) {
  const dp::ChannelGeometry g = vt::exchange_geometry(dp::Coherence::kNonCoherent);
  hal::SharedMemorySpec spec;
  spec.path = o.file;
  // QEMU wants the ivshmem BAR a power of two; 1 MiB holds the exchange.
  spec.size = std::max<size_t>(vt::exchange_region_bytes(g), size_t{1} << 20);
  auto shm = hal::open_shared_memory("file", spec);
  if (!shm) return report.failure(shm.error().message);
  report_memory(report, *shm);
  if (auto r = vt::format_exchange(shm->bytes(), g, o.count); !r) return report.failure(r.error().message);
  if (!o.ready.empty()) {
    const int fd = ::open(o.ready.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return report.failure("cannot create " + o.ready + ": " + std::strerror(errno));
    ::close(fd);
  }
  return finish_exchange(report, "host", vt::run_exchange(shm->bytes(), vt::ChannelRole::kHost, o.exchange));
}

int run_guest(const Options& o, vt::Report& report) {
  std::string path = o.file;
  if (path.empty()) {
    auto bar = vt::enable_ivshmem_bar2();
    if (!bar) {
      report.line("SKIP: " + bar.error().message);
      return 77;
    }
    path = *bar;
  }
  hal::SharedMemorySpec spec;
  spec.path = path;
  spec.create = false;
  auto shm = hal::open_shared_memory("auto", spec);
  if (!shm) return report.failure(shm.error().message);
  report_memory(report, *shm);
  return finish_exchange(report, "guest", vt::run_exchange(shm->bytes(), vt::ChannelRole::kGuest, o.exchange));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return usage();
  const bool host = o.role == vt::ChannelRole::kHost;
  vt::Report report(host ? "vm_devpool_channel_host" : "vm_devpool_channel_guest", "");
  return vt::finish(report, host ? run_host(o, report) : run_guest(o, report));
}
