// SPDX-License-Identifier: Apache-2.0
// The process's VMAs from smaps, each classified by what a restore does with
// it. Shared mappings other than cxlpool regions, device mappings and
// mappings of files that are gone cannot be re-created, so they are refused;
// shared anonymous memory no other process maps is kept, as one object per
// shmem inode however many VMAs map it.
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "capture_steps.hpp"
#include "cxlpool/ckpt/proc_text.hpp"

namespace cxlpool::ckpt::detail {
namespace {

std::string range(const SmapsEntry& e) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%llx-%llx", static_cast<unsigned long long>(e.start),
                static_cast<unsigned long long>(e.end));
  return buf;
}

uint32_t prot_of(const std::string& perms) {
  return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
}

uint32_t advice_of(const SmapsEntry& e) {
  uint32_t a = 0;
  if (e.has_flag("dc")) a |= kAdviseDontFork;
  if (e.has_flag("wf")) a |= kAdviseWipeOnFork;
  if (e.has_flag("hg")) a |= kAdviseHugePage;
  if (e.has_flag("nh")) a |= kAdviseNoHugePage;
  if (e.has_flag("dd")) a |= kAdviseDontDump;
  return a;
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

const RegionRef* region_holding(const CaptureOptions& options, const SmapsEntry& e) {
  for (const RegionRef& r : options.regions) {
    if (e.start >= r.addr && e.end <= r.addr + r.length) return &r;
  }
  return nullptr;
}

// The region of options.region_files this shared mapping maps, or null.
const CaptureOptions::RegionFile* mapped_region(pid_t pid, const CaptureOptions& options, const SmapsEntry& e) {
  if (options.region_files.empty()) return nullptr;
  struct stat st {};
  if (::stat(proc_path(pid, "map_files/" + range(e)).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  return region_file(options, st.st_dev, st.st_ino);
}

// Shared anonymous memory shows in maps as this: a shmem object of its own.
constexpr std::string_view kSharedAnonPath = "/dev/zero (deleted)";

// The shmem object's identity, as stat of the mapping's map_files link sees it.
Result<std::pair<uint64_t, uint64_t>> shmem_identity(pid_t pid, const SmapsEntry& e) {
  struct stat st {};
  if (::stat(proc_path(pid, "map_files/" + range(e)).c_str(), &st) != 0)
    return fail_errno("checkpoint: stat shared anonymous memory at " + range(e));
  return std::pair<uint64_t, uint64_t>{st.st_dev, st.st_ino};
}

// A process other than `pid` (and the capturing one: cxlpoold maps every
// region it serves) that maps the shared object with inode `ino`, shown in
// maps as `path`: its pid, or 0. Its sharing could not be made again for a
// clone.
pid_t other_mapper(pid_t pid, uint64_t ino, const std::string& path) {
  const pid_t self = ::getpid();
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return 0;
  pid_t found = 0;
  while (dirent* de = ::readdir(d)) {
    char* end = nullptr;
    const long other = std::strtol(de->d_name, &end, 10);
    if (*end != '\0' || other <= 0 || other == pid || other == self) continue;
    auto text = read_proc(static_cast<pid_t>(other), "maps");
    if (!text) continue;  // gone, or a kernel thread without maps
    auto entries = parse_smaps(*text);
    if (!entries) continue;
    for (const SmapsEntry& o : *entries) {
      if (o.inode == ino && o.path == path && o.perms[3] == 's') {
        found = static_cast<pid_t>(other);
        break;
      }
    }
    if (found) break;
  }
  ::closedir(d);
  return found;
}

}  // namespace

Result<void> capture_vmas(pid_t pid, const CaptureOptions& options, FileTable& files, Manifest& m) {
  auto text = read_proc(pid, "smaps");
  if (!text) return tl::unexpected(text.error());
  auto entries = parse_smaps(*text);
  if (!entries) return tl::unexpected(entries.error());
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> shared_objects;  // shmem dev:inode -> object id
  std::set<uint64_t> leases_checked;  // inodes of leased regions looked for in other processes
  for (const SmapsEntry& e : *entries) {
    Vma v;
    v.start = e.start;
    v.end = e.end;
    v.prot = prot_of(e.perms);
    const bool shared = e.perms[3] == 's';
    v.map_flags = (shared ? MAP_SHARED : MAP_PRIVATE) | (e.has_flag("gd") ? MAP_GROWSDOWN : 0);
    v.madvise = advice_of(e);
    const std::string where = e.path.empty() ? "anonymous memory at " + range(e) : e.path + " at " + range(e);
    if (e.path == "[vdso]") {
      v.kind = VmaKind::kVdso;
    } else if (e.path == "[vvar]") {
      v.kind = VmaKind::kVvar;
    } else if (e.path == "[vvar_vclock]") {
      v.kind = VmaKind::kVvarVclock;
    } else if (e.path == "[vsyscall]") {
      v.kind = VmaKind::kVsyscall;
    } else if (e.has_flag("io") || e.has_flag("pf")) {
      // [vvar] is a PFN map too; it was handled above.
      return unsupported(pid, "it maps device memory (" + where + ")");
    } else if (e.has_flag("ht")) {
      return unsupported(pid, "it has a hugetlb mapping (" + where + ")");
    } else if (const auto* file = shared ? mapped_region(pid, options, e) : nullptr) {
      if (auto ok = check_region_restorable(pid, *file, "it maps (" + where + ")"); !ok) return ok;
      if (file->region.kind == RegionKind::kLeased && leases_checked.insert(file->ino).second) {
        if (const pid_t other = other_mapper(pid, file->ino, e.path))
          return unsupported(pid, "its leased cxlpool region " + std::to_string(file->region.region_id) + " (" +
                                      where + ") is mapped by process " + std::to_string(other) +
                                      " too, and that sharing cannot be restored");
      }
      v.kind = VmaKind::kCxlpoolRegion;
      auto index = files.add(e.path, proc_path(pid, "map_files/" + range(e)));
      if (!index) return tl::unexpected(index.error());
      v.file = *index;
      v.file_offset = e.offset;
      RegionRef ref = file->region;
      ref.addr = e.start;
      ref.length = e.end - e.start;
      ref.offset = e.offset;
      ref.prot = v.prot;
      ref.writable = (v.prot & PROT_WRITE) || e.has_flag("mw");
      m.regions.push_back(std::move(ref));
    } else if (shared && e.path == kSharedAnonPath && region_holding(options, e) == nullptr) {
      auto id = shmem_identity(pid, e);
      if (!id) return tl::unexpected(id.error());
      auto known = shared_objects.find(*id);
      if (known == shared_objects.end()) {
        if (const pid_t other = other_mapper(pid, id->second, std::string(kSharedAnonPath)))
          return unsupported(pid, "its shared anonymous memory at " + range(e) + " is mapped by process " +
                                      std::to_string(other) + " too, and that sharing cannot be restored");
        known = shared_objects.emplace(*id, static_cast<uint32_t>(shared_objects.size())).first;
      }
      v.kind = VmaKind::kSharedAnon;
      v.file = known->second;
      v.file_offset = e.offset;
    } else if (shared && region_holding(options, e) == nullptr) {
      // A shared mapping that can never be written (no write permission now
      // or later, VM_MAYWRITE clear) reads the file as a private one would.
      if (!starts_with(e.path, "/") || starts_with(e.path, "/memfd:") || (v.prot & PROT_WRITE) || e.has_flag("mw")) {
        return unsupported(pid, "it has a writable shared mapping that is not a cxlpool region (" + where + ")");
      }
      if (e.path.size() > 10 && e.path.compare(e.path.size() - 10, 10, " (deleted)") == 0) {
        return unsupported(pid, "it maps a deleted file (" + where + ")");
      }
      auto index = files.add(e.path, proc_path(pid, "map_files/" + range(e)));
      if (!index) return tl::unexpected(index.error());
      v.kind = VmaKind::kFileSharedReadOnly;
      v.file = *index;
      v.file_offset = e.offset;
    } else if (shared) {
      const RegionRef* region = region_holding(options, e);
      v.kind = VmaKind::kCxlpoolRegion;
      auto index = files.add(e.path, proc_path(pid, "map_files/" + range(e)));
      if (!index) return tl::unexpected(index.error());
      v.file = *index;
      v.file_offset = e.offset;
      auto known = std::find_if(m.regions.begin(), m.regions.end(),
                                [&](const RegionRef& r) { return r.addr == region->addr; });
      if (known == m.regions.end()) m.regions.push_back(*region);
    } else if (e.path.empty() || e.path == "[heap]" || e.path == "[stack]" || starts_with(e.path, "[anon:")) {
      v.kind = VmaKind::kAnon;
    } else if (starts_with(e.path, "/") && !starts_with(e.path, "/memfd:")) {
      if (e.path.size() > 10 && e.path.compare(e.path.size() - 10, 10, " (deleted)") == 0) {
        return unsupported(pid, "it maps a deleted file (" + where + ")");
      }
      struct stat st {};
      const std::string link = proc_path(pid, "map_files/" + range(e));
      if (::stat(link.c_str(), &st) != 0) return fail_errno("checkpoint: stat " + where);
      if (S_ISCHR(st.st_mode) && e.path == "/dev/zero") {
        v.kind = VmaKind::kAnon;  // a private mapping of /dev/zero is anonymous memory
      } else if (!S_ISREG(st.st_mode)) {
        return unsupported(pid, "it maps something that is not a regular file (" + where + ")");
      } else {
        auto index = files.add(e.path, link);
        if (!index) return tl::unexpected(index.error());
        v.kind = VmaKind::kFilePrivate;
        v.file = *index;
        v.file_offset = e.offset;
      }
    } else if (starts_with(e.path, "/memfd:")) {
      return unsupported(pid, "it maps a memfd that is not a cxlpool region (" + where + ")");
    } else {
      return unsupported(pid, "it has a mapping of a kind a checkpoint cannot hold (" + where + ")");
    }
    m.vmas.push_back(v);
  }
  return {};
}

}  // namespace cxlpool::ckpt::detail
