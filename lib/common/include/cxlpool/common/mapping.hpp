// SPDX-License-Identifier: Apache-2.0
// Owning mmap()ed range: unmaps on destruction.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <utility>

#include "cxlpool/common/result.hpp"

namespace cxlpool {

class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t length) : addr_(addr), length_(length) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  Mapping(Mapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), length_(std::exchange(o.length_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      length_ = std::exchange(o.length_, 0);
    }
    return *this;
  }
  ~Mapping() { reset(); }

  // mmap(NULL, length, prot, flags, fd, offset) with an error naming `what`.
  static Result<Mapping> map(size_t length, int prot, int flags, int fd, off_t offset = 0);

  void* addr() const { return addr_; }
  std::byte* data() const { return static_cast<std::byte*>(addr_); }
  size_t length() const { return length_; }
  bool valid() const { return addr_ != nullptr; }

  void reset() {
    if (addr_ != nullptr) ::munmap(addr_, length_);
    addr_ = nullptr;
    length_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t length_ = 0;
};

}  // namespace cxlpool
