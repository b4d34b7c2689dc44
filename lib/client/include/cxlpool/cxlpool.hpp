// SPDX-License-Identifier: Apache-2.0
// Thin C++ layer over cxlpool.h: RAII handles. Failures throw
// std::system_error carrying the errno and the daemon's message; the C ABI
// underneath never throws.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cxlpool/cxlpool.h"

namespace cxlpool {

inline int check(int rc, const char* what) {
  if (rc < 0) {
    std::string msg = what;
    const char* detail = cxlpool_last_error();
    if (detail != nullptr && detail[0] != '\0') msg += std::string(": ") + detail;
    throw std::system_error(-rc, std::generic_category(), msg);
  }
  return rc;
}

class Region {
 public:
  Region() = default;
  explicit Region(cxlpool_region* r) : r_(r) {}
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  Region(Region&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  Region& operator=(Region&& o) noexcept {
    if (this != &o) {
      reset();
      r_ = std::exchange(o.r_, nullptr);
    }
    return *this;
  }
  ~Region() { reset(); }

  void* map() {
    void* addr = nullptr;
    check(cxlpool_region_map(r_, &addr), "map region");
    return addr;
  }
  template <typename T>
  T* data() {
    return static_cast<T*>(map());
  }
  uint64_t id() const { return cxlpool_region_id(r_); }
  uint64_t size() const { return cxlpool_region_size(r_); }
  uint32_t tier() const { return cxlpool_region_tier(r_); }
  uint32_t page_size() const { return cxlpool_region_page_size(r_); }
  bool writable() const { return cxlpool_region_writable(r_) != 0; }
  int fd() const { return cxlpool_region_fd(r_); }
  cxlpool_region* get() const { return r_; }
  explicit operator bool() const { return r_ != nullptr; }

  // Records an access of [offset, offset + length) for the tiering engine
  // (cxlpool_access_report). Returns the entries a full ring dropped (0 normally).
  int report_access(uint64_t offset, uint64_t length, bool write = false) {
    return check(cxlpool_access_report(r_, offset, length, write ? CXLPOOL_ACCESS_WRITE : 0u),
                 "report access");
  }

  // Frees now and reports the daemon's answer (the destructor ignores it).
  void free() { check(cxlpool_region_free(std::exchange(r_, nullptr)), "free region"); }

 private:
  void reset() {
    if (r_ != nullptr) cxlpool_region_free(std::exchange(r_, nullptr));
  }
  cxlpool_region* r_ = nullptr;
};

class Client {
 public:
  // Empty socket_path: the default socket.
  explicit Client(const std::string& socket_path = "", const std::string& name = "") {
    check(cxlpool_connect(socket_path.empty() ? nullptr : socket_path.c_str(), name.c_str(), &c_),
          "connect to cxlpoold");
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  ~Client() { cxlpool_disconnect(c_); }

  std::vector<cxlpool_tier_info> tiers() {
    std::vector<cxlpool_tier_info> out(16);
    for (;;) {
      const int n = check(cxlpool_tiers(c_, out.data(), out.size()), "list tiers");
      if (static_cast<size_t>(n) <= out.size()) {
        out.resize(n);
        return out;
      }
      out.resize(n);
    }
  }
  Region alloc(uint32_t tier, uint64_t size, uint32_t flags = 0) {
    cxlpool_region* r = nullptr;
    check(cxlpool_region_alloc(c_, tier, size, flags, &r), "allocate region");
    return Region(r);
  }
  Region create_named(const std::string& name, uint32_t tier, uint64_t size, uint32_t mode = 0600,
                      uint32_t flags = 0) {
    cxlpool_region* r = nullptr;
    check(cxlpool_named_create(c_, name.c_str(), tier, size, mode, flags, &r),
          "create named region");
    return Region(r);
  }
  Region open_named(const std::string& name, bool writable = false) {
    cxlpool_region* r = nullptr;
    check(cxlpool_named_open(c_, name.c_str(), writable ? CXLPOOL_OPEN_WRITABLE : 0, &r),
          "open named region");
    return Region(r);
  }
  void unlink_named(const std::string& name) {
    check(cxlpool_named_unlink(c_, name.c_str()), "unlink named region");
  }
  cxlpool_migrate_result migrate(uint64_t region_id, uint32_t tier) {
    cxlpool_migrate_result res{};
    check(cxlpool_region_migrate(c_, region_id, tier, &res), "migrate region");
    return res;
  }
  // Access reports (see cxlpool.h): opening the ring explicitly is optional.
  void open_access_ring(uint32_t entries = 0) {
    check(cxlpool_access_ring_open(c_, entries), "open access ring");
  }
  // Publishes buffered reports; returns the entries a full ring dropped.
  int flush_access_reports() { return check(cxlpool_access_flush(c_), "flush access reports"); }

  cxlpool_client* get() const { return c_; }

 private:
  cxlpool_client* c_ = nullptr;
};

}  // namespace cxlpool
