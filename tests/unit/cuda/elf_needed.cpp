// SPDX-License-Identifier: Apache-2.0
#include "elf_needed.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

namespace cxlpool::test {

Result<std::vector<std::string>> elf_needed(const std::string& path) {
  // Mapped, not read: only the headers and .dynamic are touched, and an
  // ASan build's daemon is close to half a GiB.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return fail(EINVAL, path + ": empty or unreadable");
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return fail(errno, "mmap " + path);
  struct Unmap {
    void* p;
    size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, static_cast<size_t>(st.st_size)};
  const std::string_view data(static_cast<const char*>(map), unmap.n);
  auto at = [&](size_t off, size_t len) { return off <= data.size() && len <= data.size() - off; };

  Elf64_Ehdr eh;
  if (!at(0, sizeof(eh))) return fail(EINVAL, path + ": too short for an ELF header");
  std::memcpy(&eh, data.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return fail(EINVAL, path + ": not an ELF64 file");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !at(eh.e_shoff, size_t{eh.e_shnum} * sizeof(Elf64_Shdr))) {
    return fail(EINVAL, path + ": bad section header table");
  }
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, data.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof(sh));
    return sh;
  };
  std::vector<std::string> needed;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr dyn = section(i);
    if (dyn.sh_type != SHT_DYNAMIC) continue;
    if (dyn.sh_link >= eh.e_shnum) return fail(EINVAL, path + ": bad .dynamic link");
    const Elf64_Shdr str = section(dyn.sh_link);
    if (!at(dyn.sh_offset, dyn.sh_size) || !at(str.sh_offset, str.sh_size)) {
      return fail(EINVAL, path + ": .dynamic or its strings out of bounds");
    }
    for (size_t off = 0; off + sizeof(Elf64_Dyn) <= dyn.sh_size; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, data.data() + dyn.sh_offset + off, sizeof(d));
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag != DT_NEEDED) continue;
      if (d.d_un.d_val >= str.sh_size) return fail(EINVAL, path + ": DT_NEEDED out of bounds");
      const char* name = data.data() + str.sh_offset + d.d_un.d_val;
      needed.emplace_back(name, strnlen(name, str.sh_size - d.d_un.d_val));
    }
  }
  return needed;
}

}  // namespace cxlpool::test
