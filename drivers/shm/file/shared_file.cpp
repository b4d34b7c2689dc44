// SPDX-License-Identifier: Apache-2.0
#include "shared_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxlpool/common/units.hpp"
#include "file_system_kind.hpp"

namespace cxlpool::drivers {
namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// O_CREAT | O_EXCL first so that the caller learns whether it created the
// file (and must size it) or joined one another process made.
Result<UniqueFd> open_or_create(const std::string& path, bool create, bool* created) {
  constexpr int kFlags = O_RDWR | O_CLOEXEC | O_NOFOLLOW;
  if (create) {
    UniqueFd fd(::open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0600));
    if (fd) {
      *created = true;
      return fd;
    }
    if (errno != EEXIST) return fail_errno("create " + path);
  }
  UniqueFd fd(::open(path.c_str(), kFlags));
  if (!fd) return fail_errno("open " + path);
  *created = false;
  return fd;
}

Error no_huge_pages(const std::string& path, std::uint64_t size) {
  return Error{ENOMEM, path + ": cannot reserve " + format_size(size) +
                           " of huge pages: echo N > /proc/sys/vm/nr_hugepages"};
}

}  // namespace

Result<hal::SharedMemory> open_shared_file(const hal::SharedMemorySpec& spec) {
  if (spec.path.empty()) return fail(ENODEV, "no file path given");
  bool created = false;
  auto fd = open_or_create(spec.path, spec.create, &created);
  if (!fd) return tl::unexpected(fd.error());
  // A file this call created is removed again when it cannot be set up, so a
  // failed open leaves nothing a later open would mistake for a region.
  auto undo = [&](Error error) -> Result<hal::SharedMemory> {
    if (created) ::unlink(spec.path.c_str());
    return tl::unexpected(std::move(error));
  };

  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return undo(Error{errno, errno_message("fstat " + spec.path, errno)});
  // A fifo, device or directory mapped as a region would hang or mislead.
  if (!S_ISREG(st.st_mode)) return undo(Error{EINVAL, spec.path + " is not a regular file"});
  auto fs = file_system_of(fd->get());
  if (!fs) return undo(Error{fs.error().code, spec.path + ": " + fs.error().message});

  const std::uint64_t existing = static_cast<std::uint64_t>(st.st_size);
  std::uint64_t size = spec.size == 0 ? existing : round_up(spec.size, fs->page_size);
  if (size == 0) return undo(Error{EINVAL, spec.path + " is empty and no size was asked for"});
  if (existing == 0) {
    // New, or created by a peer that has not sized it yet: both size it the same.
    if (::ftruncate(fd->get(), static_cast<off_t>(size)) != 0) {
      const int code = errno;
      if (fs->hugetlbfs && (code == ENOMEM || code == ENOSPC)) return undo(no_huge_pages(spec.path, size));
      return undo(Error{code, errno_message("ftruncate " + spec.path, code)});
    }
  } else if (existing < size) {
    // Mapping past the end would SIGBUS on first touch; growing a file
    // another process sized would change a region under its users.
    return undo(Error{EINVAL, spec.path + " holds " + format_size(existing) + ", less than the " +
                                  format_size(size) + " asked for"});
  }
  if (fs->hugetlbfs && size % fs->page_size != 0) {
    return undo(Error{EINVAL, spec.path + ": " + format_size(size) + " is not a multiple of its " +
                                  format_size(fs->page_size) + " huge pages"});
  }

  auto mapping = Mapping::map(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd->get());
  if (!mapping) {
    // hugetlbfs reserves a shared file's pages when it is first mapped.
    const int code = mapping.error().code;
    if (fs->hugetlbfs && (code == ENOMEM || code == ENOSPC)) return undo(no_huge_pages(spec.path, size));
    return undo(Error{code, spec.path + ": " + mapping.error().message});
  }
  hal::SharedMemoryInfo info;
  info.backend = "file";
  info.filesystem = fs->name;
  info.path = spec.path;
  info.alignment = fs->page_size;
  info.created = created;
  // A sysfs file is device memory (a PCI BAR's resourceN), which another
  // host or VM may share without keeping this CPU's cache in step.
  info.coherent = fs->name != "sysfs";
  info.coherence_reason = info.coherent ? "a file of this host's page cache"
                                        : "device memory (sysfs resource file) other hosts may share";
  return hal::SharedMemory(std::move(*fd), std::move(*mapping), std::move(info));
}

}  // namespace cxlpool::drivers
