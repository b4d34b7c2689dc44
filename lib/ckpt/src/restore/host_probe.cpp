// SPDX-License-Identifier: Apache-2.0
// What the restorer learns about this host before planning: where its own
// kernel mappings lie, and whether the files a checkpoint names are still
// the ones it recorded.
#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cxlpool/ckpt/restorer.hpp"

namespace cxlpool::ckpt {

bool fd_writes(const FdEntry& f) { return (f.open_flags & O_ACCMODE) != O_RDONLY; }

Result<HostFacts> probe_host() {
  HostFacts facts;
  std::ifstream maps("/proc/self/maps");
  if (!maps) return fail_errno("open /proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, name;
    in >> range >> perms >> offset >> dev >> inode >> name;
    VmaKind kind;
    if (name == "[vdso]") kind = VmaKind::kVdso;
    else if (name == "[vvar]") kind = VmaKind::kVvar;
    else if (name == "[vvar_vclock]") kind = VmaKind::kVvarVclock;
    else continue;
    SpecialMapping s;
    s.kind = kind;
    if (std::sscanf(range.c_str(), "%lx-%lx", &s.start, &s.end) != 2)
      return fail(EIO, fmt::format("/proc/self/maps: cannot read '{}'", line));
    facts.specials.push_back(s);
  }
  std::ifstream min_addr("/proc/sys/vm/mmap_min_addr");
  uint64_t v = 0;
  if (min_addr >> v) facts.mmap_min_addr = std::max<uint64_t>(v, kPageSize);
#ifdef CXLPOOL_CKPT_LAZY_PAGER
  facts.lazy_pager = true;
#endif
  return facts;
}

Result<void> check_files(const Manifest& m) {
  std::vector<bool> used(m.files.size(), false), content(m.files.size(), false);
  for (const Vma& v : m.vmas)
    if (v.kind == VmaKind::kFilePrivate && v.file < used.size()) used[v.file] = content[v.file] = true;
  for (const FdEntry& f : m.fds) {
    if ((f.kind != FdKind::kRegular && f.kind != FdKind::kDirectory) || f.file >= used.size()) continue;
    used[f.file] = true;
    // A file the process writes changes as it runs (and as its clones do):
    // only its identity must hold. What it reads or maps must be as it was.
    if (!fd_writes(f)) content[f.file] = true;
  }
  if (m.process.mm.exe_file < used.size()) used[m.process.mm.exe_file] = content[m.process.mm.exe_file] = true;
  for (size_t i = 0; i < m.files.size(); ++i) {
    if (!used[i]) continue;
    struct stat st{};
    if (::stat(m.files[i].path.c_str(), &st) != 0) return fail_errno(fmt::format("stat {}", m.files[i].path));
    FileStat now{static_cast<uint64_t>(st.st_dev), st.st_ino, static_cast<uint64_t>(st.st_size),
                 st.st_mtim.tv_sec * 1'000'000'000ll + st.st_mtim.tv_nsec};
    // A directory's size and mtime change with its entries; its identity is enough.
    if (S_ISDIR(st.st_mode) || !content[i]) {
      now.size = m.files[i].size;
      now.mtime_ns = m.files[i].mtime_ns;
    }
    if (auto ok = check_file_unchanged(m.files[i], now); !ok) return ok;
  }
  return {};
}

}  // namespace cxlpool::ckpt
