// SPDX-License-Identifier: Apache-2.0
// The C ABI. Every entry point catches everything: no exception crosses it.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "c_api_support.hpp"
#include "cxlpool/common/default_paths.hpp"
#include "cxlpool/common/log.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/cxlpool.h"

#define CXLPOOL_EXPORT __attribute__((visibility("default")))

using cxlpool::Error;
using cxlpool::Result;
using cxlpool::client::Connection;
namespace proto = cxlpool::proto;

struct cxlpool_region {
  std::shared_ptr<Connection> conn;
  std::shared_ptr<cxlpool::client::AccessReporter> reporter;  // the connection's access ring
  cxlpool::UniqueFd fd;
  uint64_t id = 0;
  uint64_t size = 0;
  uint32_t tier = 0;
  uint32_t page_size = 0;
  uint32_t flags = 0;
  std::mutex map_mutex;
  void* addr = nullptr;
};

namespace cxlpool::client {

std::string& last_error() {
  thread_local std::string message;
  return message;
}

}  // namespace cxlpool::client

namespace {

using cxlpool::client::guarded;
using cxlpool::client::record;

void copy_name(char* dst, size_t cap, const std::string& src) {
  const size_t n = std::min(cap - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

int make_region(const cxlpool_client* client, cxlpool::Result<proto::Received> received,
                cxlpool_region** out) {
  if (!received) return record(received.error());
  auto* reply = std::get_if<proto::RegionReply>(&received->envelope.message);
  if (reply == nullptr || received->fds.size() != 1) {
    return record(EPROTO, "daemon reply carries no region descriptor");
  }
  auto region = std::make_unique<cxlpool_region>();
  region->conn = client->conn;
  region->reporter = client->reporter;
  region->fd = std::move(received->fds[0]);
  region->id = reply->region_id;
  region->size = reply->size;
  region->tier = reply->tier_id;
  region->page_size = reply->page_size;
  region->flags = reply->flags;
  *out = region.release();
  return 0;
}

cxlpool_tier_info to_tier_info(const proto::TierInfo& t) {
  cxlpool_tier_info o{};
  o.id = t.id;
  o.kind = static_cast<uint32_t>(t.kind);
  o.numa_node = t.numa_node;
  o.page_size = t.page_size;
  o.capacity = t.capacity;
  o.used = t.used;
  o.free = t.free;
  o.latency_ns = t.latency_ns;
  o.bandwidth_mbps = t.bandwidth_mbps;
  copy_name(o.name, sizeof o.name, t.name);
  return o;
}

// The listing calls' contract: as many of the daemon's items as `cap`
// allows go into the caller's array (`fill` converts one), and the result is
// how many there are, so that a caller can size its array and ask again.
template <typename Reply, typename Request, typename Item, typename Out, typename Fill>
int list_call(cxlpool_client* client, const Request& request, std::vector<Item> Reply::*items, Out* out, size_t cap,
              Fill fill) {
  return guarded([&] {
    if (client == nullptr || (out == nullptr && cap > 0)) return record(EINVAL, "NULL argument");
    auto reply = client->conn->call_for<Reply>(request);
    if (!reply) return record(reply.error());
    const std::vector<Item>& list = (*reply).*items;
    for (size_t i = 0; i < list.size() && i < cap; ++i) fill(out[i], list[i]);
    return static_cast<int>(list.size());
  });
}

cxlpool_log_fn g_log_fn = nullptr;
void* g_log_user = nullptr;

void forward_log(cxlpool::LogLevel level, std::string_view component, std::string_view message,
                 void* /*user*/) {
  if (g_log_fn == nullptr) return;
  const std::string comp(component);
  const std::string msg(message);
  g_log_fn(static_cast<int>(level), comp.c_str(), msg.c_str(), g_log_user);
}

}  // namespace

extern "C" {

CXLPOOL_EXPORT const char* cxlpool_version(void) { return CXLPOOL_VERSION_STRING; }

CXLPOOL_EXPORT const char* cxlpool_strerror(int error) {
  return ::strerrordesc_np(error < 0 ? -error : error) ?: "Unknown error";
}

CXLPOOL_EXPORT const char* cxlpool_last_error(void) { return cxlpool::client::last_error().c_str(); }

CXLPOOL_EXPORT void cxlpool_set_log_callback(cxlpool_log_fn fn, void* user, int max_level) {
  g_log_fn = fn;
  g_log_user = user;
  cxlpool::set_log_sink(fn != nullptr ? forward_log : nullptr, nullptr,
                        static_cast<cxlpool::LogLevel>(max_level));
}

CXLPOOL_EXPORT int cxlpool_default_socket_path(char* buf, size_t len) {
  return guarded([&] {
    if (buf == nullptr) return record(EINVAL, "buf is NULL");
    auto path = cxlpool::default_socket_path();
    if (!path) return record(path.error());
    if (path->size() + 1 > len) return record(ENAMETOOLONG, "buffer too small for socket path");
    std::memcpy(buf, path->c_str(), path->size() + 1);
    return static_cast<int>(path->size());
  });
}

CXLPOOL_EXPORT int cxlpool_connect(const char* socket_path, const char* client_name,
                                   cxlpool_client** out) {
  return guarded([&] {
    if (out == nullptr) return record(EINVAL, "out is NULL");
    auto conn = Connection::open(socket_path ? socket_path : "", client_name ? client_name : "");
    if (!conn) return record(conn.error());
    auto client = std::make_unique<cxlpool_client>();
    client->conn = std::shared_ptr<Connection>(std::move(*conn));
    client->reporter = std::make_shared<cxlpool::client::AccessReporter>(client->conn);
    *out = client.release();
    return 0;
  });
}

CXLPOOL_EXPORT void cxlpool_disconnect(cxlpool_client* client) {
  if (client == nullptr) return;
  try {
    client->conn->close();
  } catch (...) {
  }
  delete client;
}

CXLPOOL_EXPORT int cxlpool_protocol_version(const cxlpool_client* client) {
  if (client == nullptr) return record(EINVAL, "client is NULL");
  return client->conn->version();
}

CXLPOOL_EXPORT int cxlpool_tiers(cxlpool_client* client, cxlpool_tier_info* tiers, size_t cap) {
  return list_call<proto::TiersReply>(client, proto::TiersRequest{}, &proto::TiersReply::tiers, tiers, cap,
                                      [](cxlpool_tier_info& o, const proto::TierInfo& t) { o = to_tier_info(t); });
}

CXLPOOL_EXPORT int cxlpool_tier_by_name(cxlpool_client* client, const char* name,
                                        cxlpool_tier_info* out) {
  return guarded([&] {
    if (client == nullptr || name == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    auto reply = client->conn->call_for<proto::TiersReply>(proto::TiersRequest{});
    if (!reply) return record(reply.error());
    for (const auto& t : reply->tiers) {
      if (t.name == name) {
        *out = to_tier_info(t);
        return 0;
      }
    }
    return record(ENOENT, "no tier with that name");
  });
}

CXLPOOL_EXPORT int cxlpool_region_alloc(cxlpool_client* client, uint32_t tier_id, uint64_t size,
                                        uint32_t flags, cxlpool_region** out) {
  return guarded([&] {
    if (client == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    proto::RegionAlloc req{tier_id, size, flags};
    return make_region(client, client->conn->call(req), out);
  });
}

CXLPOOL_EXPORT int cxlpool_named_create(cxlpool_client* client, const char* name,
                                        uint32_t tier_id, uint64_t size, uint32_t mode,
                                        uint32_t flags, cxlpool_region** out) {
  return guarded([&] {
    if (client == nullptr || name == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    proto::NamedCreate req{name, tier_id, size, mode, flags};
    return make_region(client, client->conn->call(req), out);
  });
}

CXLPOOL_EXPORT int cxlpool_named_open(cxlpool_client* client, const char* name, uint32_t flags,
                                      cxlpool_region** out) {
  return guarded([&] {
    if (client == nullptr || name == nullptr || out == nullptr) return record(EINVAL, "NULL argument");
    proto::NamedOpen req{name, flags};
    return make_region(client, client->conn->call(req), out);
  });
}

CXLPOOL_EXPORT int cxlpool_named_unlink(cxlpool_client* client, const char* name) {
  return guarded([&] {
    if (client == nullptr || name == nullptr) return record(EINVAL, "NULL argument");
    auto reply = client->conn->call_for<proto::Ok>(proto::NamedUnlink{name});
    return reply ? 0 : record(reply.error());
  });
}

CXLPOOL_EXPORT int cxlpool_region_map(cxlpool_region* region, void** addr) {
  return guarded([&] {
    if (region == nullptr || addr == nullptr) return record(EINVAL, "NULL argument");
    std::lock_guard lock(region->map_mutex);
    if (region->addr == nullptr) {
      const int prot = (region->flags & proto::kRegionWritable) ? PROT_READ | PROT_WRITE : PROT_READ;
      void* p = ::mmap(nullptr, region->size, prot, MAP_SHARED, region->fd.get(), 0);
      if (p == MAP_FAILED) return record(cxlpool::fail_errno("mmap region").value());
      region->addr = p;
    }
    *addr = region->addr;
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_region_free(cxlpool_region* region) {
  if (region == nullptr) return 0;
  return guarded([&] {
    std::unique_ptr<cxlpool_region> owned(region);
    if (owned->addr != nullptr) ::munmap(owned->addr, owned->size);
    owned->addr = nullptr;
    owned->fd.reset();
    // After a disconnect the daemon has already dropped the handle.
    if (owned->conn->closed()) return 0;
    auto reply = owned->conn->call_for<proto::Ok>(proto::RegionFree{owned->id});
    return reply ? 0 : record(reply.error());
  });
}

CXLPOOL_EXPORT uint64_t cxlpool_region_id(const cxlpool_region* r) { return r ? r->id : 0; }
CXLPOOL_EXPORT uint64_t cxlpool_region_size(const cxlpool_region* r) { return r ? r->size : 0; }
CXLPOOL_EXPORT uint32_t cxlpool_region_tier(const cxlpool_region* r) { return r ? r->tier : 0; }
CXLPOOL_EXPORT uint32_t cxlpool_region_page_size(const cxlpool_region* r) {
  return r ? r->page_size : 0;
}
CXLPOOL_EXPORT int cxlpool_region_writable(const cxlpool_region* r) {
  return r && (r->flags & proto::kRegionWritable) ? 1 : 0;
}
CXLPOOL_EXPORT int cxlpool_region_fd(const cxlpool_region* r) { return r ? r->fd.get() : -EINVAL; }

CXLPOOL_EXPORT int cxlpool_stats(cxlpool_client* client, cxlpool_stat* stats, size_t cap) {
  return list_call<proto::StatsReply>(client, proto::StatsRequest{}, &proto::StatsReply::counters, stats, cap,
                                      [](cxlpool_stat& o, const proto::Counter& c) {
                                        copy_name(o.name, sizeof o.name, c.name);
                                        o.value = c.value;
                                      });
}

CXLPOOL_EXPORT int cxlpool_region_migrate(cxlpool_client* client, uint64_t region_id,
                                          uint32_t target_tier, cxlpool_migrate_result* out) {
  return guarded([&] {
    if (client == nullptr) return record(EINVAL, "client is NULL");
    auto reply = client->conn->call_for<proto::MigrateReply>(proto::RegionMigrate{region_id, target_tier});
    if (!reply) return record(reply.error());
    if (out != nullptr) {
      *out = cxlpool_migrate_result{reply->pages_total, reply->pages_moved, reply->pages_already,
                                    reply->pages_absent, reply->pages_failed, reply->bytes_moved,
                                    reply->elapsed_ns};
    }
    return 0;
  });
}

namespace {

cxlpool_ckpt_info ckpt_info(const proto::CkptEntry& e) {
  cxlpool_ckpt_info info{};
  std::snprintf(info.name, sizeof info.name, "%s", e.name.c_str());
  info.region_id = e.region_id;
  info.image_bytes = e.image_bytes;
  info.created_unix_ns = e.created_unix_ns;
  info.capture_ns = e.capture_ns;
  info.tier_id = e.tier_id;
  info.owner_uid = e.owner_uid;
  info.pid = e.pid;
  info.threads = e.threads;
  info.restores = e.restores;
  return info;
}

}  // namespace

CXLPOOL_EXPORT int cxlpool_ckpt_create(cxlpool_client* client, int pidfd, const char* name, uint32_t tier_id,
                                       uint32_t flags, cxlpool_ckpt_info* out) {
  return guarded([&] {
    if (client == nullptr || name == nullptr) return record(EINVAL, "client or name is NULL");
    if (pidfd < 0) return record(EBADF, "pidfd is not a descriptor");
    const int fds[1] = {pidfd};
    auto reply = client->conn->call_for<proto::CkptListReply>(proto::CkptCreate{0, tier_id, flags, name}, fds);
    if (!reply) return record(reply.error());
    if (out != nullptr && !reply->checkpoints.empty()) *out = ckpt_info(reply->checkpoints.front());
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_ckpt_restore(cxlpool_client* client, const char* name, cxlpool_ckpt_policy policy,
                                        uint32_t count, const int* stdio_fds, cxlpool_ckpt_clone* clones,
                                        size_t cap) {
  return guarded([&] {
    if (client == nullptr || name == nullptr) return record(EINVAL, "client or name is NULL");
    if (static_cast<int>(policy) < 0 || static_cast<int>(policy) > CXLPOOL_CKPT_HYBRID) return record(EINVAL, "unknown policy");
    if (count == 0 || count > proto::kMaxCkptClones) return record(EINVAL, "count must be 1..64");
    std::span<const int> fds;
    if (stdio_fds != nullptr) fds = std::span<const int>(stdio_fds, 3);
    auto reply = client->conn->call_for<proto::CkptRestoreReply>(
        proto::CkptRestore{static_cast<proto::CkptPolicy>(policy), count, name}, fds);
    if (!reply) return record(reply.error());
    for (size_t i = 0; i < reply->clones.size() && clones != nullptr && i < cap; ++i) {
      const auto& c = reply->clones[i];
      clones[i] = cxlpool_ckpt_clone{static_cast<int32_t>(c.pid), static_cast<int32_t>(c.keeper),
                                     static_cast<int32_t>(c.ns_pid)};
    }
    return static_cast<int>(reply->clones.size());
  });
}

CXLPOOL_EXPORT int cxlpool_ckpt_list(cxlpool_client* client, cxlpool_ckpt_info* out, size_t cap) {
  return guarded([&] {
    if (client == nullptr) return record(EINVAL, "client is NULL");
    auto reply = client->conn->call_for<proto::CkptListReply>(proto::CkptListRequest{});
    if (!reply) return record(reply.error());
    for (size_t i = 0; i < reply->checkpoints.size() && out != nullptr && i < cap; ++i) {
      out[i] = ckpt_info(reply->checkpoints[i]);
    }
    return static_cast<int>(reply->checkpoints.size());
  });
}

CXLPOOL_EXPORT int cxlpool_ckpt_remove(cxlpool_client* client, const char* name) {
  return guarded([&] {
    if (client == nullptr || name == nullptr) return record(EINVAL, "client or name is NULL");
    auto reply = client->conn->call_for<proto::Ok>(proto::CkptRemove{name});
    return reply ? 0 : record(reply.error());
  });
}

CXLPOOL_EXPORT int cxlpool_access_ring_open(cxlpool_client* client, uint32_t entries) {
  return guarded([&] {
    if (client == nullptr) return record(EINVAL, "client is NULL");
    if (entries != 0 && !proto::access_ring_entries_valid(entries)) {
      return record(EINVAL, "entries must be 0 or a power of two up to 1048576");
    }
    auto ok = client->reporter->open(entries);
    return ok ? 0 : record(ok.error());
  });
}

// The hot path: no try/catch frame setup beyond guarded's (zero-cost), no
// allocation once the ring is open.
CXLPOOL_EXPORT int cxlpool_access_report(cxlpool_region* region, uint64_t offset, uint64_t length,
                                         uint32_t flags) {
  if (region == nullptr || length == 0 || offset > region->size || length > region->size - offset ||
      (flags & ~CXLPOOL_ACCESS_WRITE) != 0) {
    return record(EINVAL, "access outside the region, empty, or with unknown flags");
  }
  return guarded([&] {
    auto dropped = region->reporter->report(region->id, offset, length,
                                            (flags & CXLPOOL_ACCESS_WRITE) ? proto::kAccessWrite : 0);
    if (!dropped) return record(dropped.error());
    return static_cast<int>(std::min<uint64_t>(*dropped, INT32_MAX));
  });
}

CXLPOOL_EXPORT int cxlpool_access_flush(cxlpool_client* client) {
  return guarded([&] {
    if (client == nullptr) return record(EINVAL, "client is NULL");
    auto dropped = client->reporter->flush();
    if (!dropped) return record(dropped.error());
    return static_cast<int>(std::min<uint64_t>(*dropped, INT32_MAX));
  });
}

}  // extern "C"
