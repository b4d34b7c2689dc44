// SPDX-License-Identifier: Apache-2.0
// Which block device holds a file and what its queue allows: st_dev (or
// st_rdev for a device node) names /sys/dev/block/MAJ:MIN; a partition's
// queue limits live on its parent disk. Request counts come from the
// device's sysfs "stat" file, which has /proc/diskstats' fields for that
// one device, so a fixture tree can stand in for /sys in tests.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "output.hpp"

namespace cxlpool::io {

namespace fs = std::filesystem;

namespace {

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

std::uint32_t read_u32(const fs::path& p) {
  const auto s = read_line(p);
  if (s.empty()) return 0;
  try {
    return static_cast<std::uint32_t>(std::stoul(s));
  } catch (...) {
    return 0;
  }
}

// "mq-deadline kyber [none]" -> "none".
std::string active_scheduler(const std::string& line) {
  const auto open = line.find('[');
  const auto close = line.find(']', open);
  if (open != std::string::npos && close != std::string::npos) return line.substr(open + 1, close - open - 1);
  return line;
}

// The sysfs directory of the whole disk: the device's own, or its parent
// when it is a partition.
fs::path disk_dir(const fs::path& dev_dir) {
  std::error_code ec;
  if (fs::exists(dev_dir / "partition", ec)) {
    const auto real = fs::canonical(dev_dir, ec);
    if (!ec) return real.parent_path();
  }
  return dev_dir;
}

void read_stat(DeviceInfo& info, const fs::path& stat_file) {
  std::ifstream in(stat_file);
  std::uint64_t f[11] = {};
  for (auto& v : f) {
    if (!(in >> v)) return;
  }
  // read ios, read merges, read sectors, read ticks, write ios, write merges,
  // write sectors, write ticks, in flight, io ticks, time in queue.
  info.reads_completed = f[0];
  info.read_sectors = f[2];
  info.read_ticks_ms = f[3];
  info.writes_completed = f[4];
  info.write_sectors = f[6];
  info.write_ticks_ms = f[7];
  info.io_ticks_ms = f[9];
}

void read_dio_alignment(DeviceInfo& info, const std::string& path) {
  struct statx stx {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &stx) != 0) return;
  if ((stx.stx_mask & STATX_DIOALIGN) == 0) return;
  info.dio_mem_align = stx.stx_dio_mem_align;
  info.dio_offset_align = stx.stx_dio_offset_align;
}

}  // namespace

DeviceInfo probe_device(const std::string& path, const std::string& sysfs_root) {
  DeviceInfo info;
  info.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return info;
  read_dio_alignment(info, path);
  const dev_t dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  const fs::path dev_dir = fs::path(sysfs_root) / "dev" / "block" / fmt::format("{}:{}", major(dev), minor(dev));
  std::error_code ec;
  if (!fs::exists(dev_dir, ec)) return info;  // tmpfs, overlay, NFS: no block device
  const fs::path real = fs::canonical(dev_dir, ec);
  info.block_device = (ec ? dev_dir : real).filename().string();
  const fs::path disk = disk_dir(dev_dir);
  const fs::path queue = disk / "queue";
  info.max_sectors_kb = read_u32(queue / "max_sectors_kb");
  info.max_hw_sectors_kb = read_u32(queue / "max_hw_sectors_kb");
  info.read_ahead_kb = read_u32(queue / "read_ahead_kb");
  info.logical_block_size = read_u32(queue / "logical_block_size");
  info.physical_block_size = read_u32(queue / "physical_block_size");
  info.nr_requests = read_u32(queue / "nr_requests");
  info.scheduler = active_scheduler(read_line(queue / "scheduler"));
  info.rotational = read_u32(queue / "rotational") != 0;
  // The partition's own counters: the requests this file system issued.
  read_stat(info, dev_dir / "stat");
  return info;
}

void add_diskstats_delta(DeviceInfo& info, const DeviceInfo& before) {
  auto delta = [](std::uint64_t after, std::uint64_t b) { return after >= b ? after - b : 0; };
  info.reads_completed = delta(info.reads_completed, before.reads_completed);
  info.writes_completed = delta(info.writes_completed, before.writes_completed);
  info.read_sectors = delta(info.read_sectors, before.read_sectors);
  info.write_sectors = delta(info.write_sectors, before.write_sectors);
  info.read_ticks_ms = delta(info.read_ticks_ms, before.read_ticks_ms);
  info.write_ticks_ms = delta(info.write_ticks_ms, before.write_ticks_ms);
  info.io_ticks_ms = delta(info.io_ticks_ms, before.io_ticks_ms);
}

}  // namespace cxlpool::io
