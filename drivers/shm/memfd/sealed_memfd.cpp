// SPDX-License-Identifier: Apache-2.0
#include "sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cxlpool/common/units.hpp"

namespace cxlpool::drivers {
namespace {

static_assert(kSharedMemfdSeals == (F_SEAL_SHRINK | F_SEAL_GROW));

std::uint64_t page_size() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

Result<hal::SharedMemory> map_memfd(UniqueFd fd, std::uint64_t size, bool created) {
  auto mapping = Mapping::map(size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get());
  if (!mapping) return tl::unexpected(mapping.error());
  hal::SharedMemoryInfo info;
  info.backend = "memfd";
  info.filesystem = "memfd";
  info.alignment = page_size();
  info.created = created;
  info.coherent = true;
  info.coherence_reason = "a memfd of this host's memory";
  return hal::SharedMemory(std::move(fd), std::move(*mapping), std::move(info));
}

Result<hal::SharedMemory> create_memfd(const hal::SharedMemorySpec& spec) {
  if (spec.size == 0) return fail(EINVAL, "a new memfd needs a size");
  const std::uint64_t size = (spec.size + page_size() - 1) / page_size() * page_size();
  UniqueFd fd(::memfd_create(spec.name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fail_errno("memfd_create " + spec.name);
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return fail_errno("ftruncate memfd " + spec.name);
  if (::fcntl(fd.get(), F_ADD_SEALS, kSharedMemfdSeals | F_SEAL_SEAL) != 0) {
    return fail_errno("seal memfd " + spec.name);
  }
  return map_memfd(std::move(fd), size, true);
}

// The descriptor came from another process: trust nothing about it.
Result<hal::SharedMemory> map_received_memfd(const hal::SharedMemorySpec& spec) {
  const int seals = ::fcntl(spec.fd, F_GET_SEALS);
  if (seals < 0) {
    if (errno == EINVAL) return fail(EINVAL, "the received descriptor is not a memfd");
    return fail_errno("F_GET_SEALS on the received descriptor");
  }
  if ((seals & kSharedMemfdSeals) != kSharedMemfdSeals) {
    return fail(EINVAL, "the received memfd is not sealed against shrinking and growing");
  }
  if ((seals & F_SEAL_WRITE) != 0) return fail(EINVAL, "the received memfd is sealed against writes");
  struct stat st {};
  if (::fstat(spec.fd, &st) != 0) return fail_errno("fstat the received memfd");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size == 0) return fail(EINVAL, "the received memfd is empty");
  if (size < spec.size) {
    return fail(EINVAL, "the received memfd holds " + format_size(size) + ", less than the " +
                            format_size(spec.size) + " asked for");
  }
  UniqueFd own(::fcntl(spec.fd, F_DUPFD_CLOEXEC, 0));
  if (!own) return fail_errno("dup the received memfd");
  return map_memfd(std::move(own), spec.size == 0 ? size : spec.size, false);
}

}  // namespace

Result<hal::SharedMemory> open_sealed_memfd(const hal::SharedMemorySpec& spec) {
  if (!spec.path.empty()) return fail(ENODEV, "a memfd has no path (got " + spec.path + ")");
  return spec.fd < 0 ? create_memfd(spec) : map_received_memfd(spec);
}

}  // namespace cxlpool::drivers
