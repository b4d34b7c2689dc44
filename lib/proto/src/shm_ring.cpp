// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/proto/shm_ring.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace cxlpool::proto {

Result<ShmMapping> ShmMapping::create(const char* name, uint64_t bytes) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return fail_errno("shared ring: memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return fail_errno("shared ring: ftruncate");
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return fail_errno("shared ring: sealing its size");
  }
  auto mapping = map(fd.get(), bytes);
  if (!mapping) return mapping;
  mapping->fd_ = std::move(fd);
  return mapping;
}

Result<ShmMapping> ShmMapping::map(int fd, uint64_t bytes) {
  if (bytes == 0) return fail(EINVAL, "shared ring: empty mapping");
  void* addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return fail_errno("shared ring: mmap");
  ShmMapping mapping;
  mapping.addr_ = addr;
  mapping.size_ = bytes;
  return mapping;
}

ShmMapping::ShmMapping(ShmMapping&& other) noexcept
    : fd_(std::move(other.fd_)),
      addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

ShmMapping& ShmMapping::operator=(ShmMapping&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::move(other.fd_);
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ShmMapping::~ShmMapping() { reset(); }

void ShmMapping::reset() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
  fd_.reset();
}

Result<UniqueFd> ring_eventfd() {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!fd) return fail_errno("ring eventfd");
  return fd;
}

void ring_kick(int efd) {
  const uint64_t one = 1;
  // EAGAIN: the counter is saturated, the sleeper will wake anyway.
  while (::write(efd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

Result<bool> ring_wait(int efd, int timeout_ms) {
  pollfd p{.fd = efd, .events = POLLIN, .revents = 0};
  const int n = ::poll(&p, 1, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return false;
    return fail_errno("ring eventfd: poll");
  }
  if (n == 0) return false;
  uint64_t value = 0;
  if (::read(efd, &value, sizeof value) < 0 && errno != EAGAIN) return fail_errno("ring eventfd: read");
  return true;
}

}  // namespace cxlpool::proto
