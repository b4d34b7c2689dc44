// SPDX-License-Identifier: Apache-2.0
// cxlpool/blk.h over lib/devpool's storage frontend: a link file mapped by
// the application, or an attachment the pod allocator hands out (DevAttach),
// the frontend queue driven by the caller's submit and poll.
#include "cxlpool/blk.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <memory>
#include <vector>

#include "../c_api_support.hpp"
#include "cxlpool/client/connection.hpp"
#include "cxlpool/devpool/blk_frontend.hpp"
#include "cxlpool/devpool/blk_pod_frontend.hpp"
#include "cxlpool/devpool/link_file.hpp"

#define CXLPOOL_EXPORT __attribute__((visibility("default")))

using cxlpool::client::guarded;
using cxlpool::client::record;
namespace blk = cxlpool::devpool::blk;

struct cxlpool_blk {
  cxlpool::devpool::LinkFile link;            // directly attached
  std::unique_ptr<cxlpool::client::Connection> daemon;  // attached through the pod: holds the attachment
  std::uint32_t attachment_id = 0;
  std::unique_ptr<blk::BlkFrontend> frontend;
  std::vector<blk::BlkRequest> requests;
  std::vector<blk::BlkResult> results;
};

namespace {

constexpr std::uint32_t kDefaultTimeoutMs = 10000;

int finish_open(cxlpool::Result<cxlpool::devpool::LinkFile> link, const cxlpool_blk_options* opts, cxlpool_blk** out) {
  if (!link) return record(link.error());
  auto handle = std::make_unique<cxlpool_blk>();
  handle->link = std::move(*link);
  const std::chrono::milliseconds timeout(opts != nullptr && opts->timeout_ms != 0 ? opts->timeout_ms : kDefaultTimeoutMs);
  // One frontend at a time, on a link the backend formatted for it.
  if (auto ok = handle->link.claim_frontend(timeout); !ok) return record(ok.error());
  blk::BlkFrontendOptions options;
  options.command_timeout = timeout;
  const cxlpool::devpool::LinkFile* file = &handle->link;
  options.backend_alive = [file] { return file->backend_alive(); };
  options.doorbell = handle->link.view().geometry.completions.coherence == cxlpool::devpool::Coherence::kCoherent;
  auto frontend = blk::make_blk_frontend(handle->link.view(), options);
  if (!frontend) return record(frontend.error());
  handle->frontend = std::move(*frontend);
  *out = handle.release();
  return 0;
}

bool bad_options(const cxlpool_blk_options* opts) { return opts != nullptr && opts->reserved != 0; }

bool bad_name(const char* s, bool may_be_empty) {
  if (s == nullptr) return !may_be_empty;
  const std::size_t n = std::strlen(s);
  return (n == 0 && !may_be_empty) || n > cxlpool::proto::kMaxDeviceNameLength * 2 + 1;
}

int attach(const char* socket, const char* host, const char* preferred, const cxlpool_blk_options* opts,
           cxlpool_blk** out) {
  auto conn = cxlpool::client::Connection::open(socket != nullptr ? socket : "", "cxlpool_blk");
  if (!conn) return record(conn.error());
  cxlpool::proto::DevAttach request{.kind = cxlpool::proto::DevKind::kBlk, .host = host};
  if (preferred != nullptr) {
    // "name" or "host/name"
    const std::string p(preferred);
    const auto slash = p.find('/');
    request.preferred = slash == std::string::npos ? p : p.substr(slash + 1);
    request.preferred_host = slash == std::string::npos ? "" : p.substr(0, slash);
  }
  auto received = (*conn)->call(request);
  if (!received) return record(received.error());
  auto* reply = std::get_if<cxlpool::proto::DevAttachReply>(&received->envelope.message);
  if (reply == nullptr || received->fds.size() != 1) return record(EPROTO, "not an attach reply with the pod file");
  auto handle = std::make_unique<cxlpool_blk>();
  handle->daemon = std::move(*conn);
  handle->attachment_id = reply->attachment_id;
  blk::PodBlkOptions options;
  const std::chrono::milliseconds timeout(opts != nullptr && opts->timeout_ms != 0 ? opts->timeout_ms : kDefaultTimeoutMs);
  options.command_timeout = timeout;
  options.failover_timeout = timeout;
  auto frontend = blk::make_pod_blk_frontend(received->fds[0].get(), reply->line, options);
  if (!frontend) return record(frontend.error());
  handle->frontend = std::move(*frontend);
  *out = handle.release();
  return 0;
}

}  // namespace

extern "C" {

CXLPOOL_EXPORT int cxlpool_blk_open(const char* link_path, const cxlpool_blk_options* opts,
                                                             cxlpool_blk** out) {
  return guarded([&] {
    if (link_path == nullptr || out == nullptr || bad_options(opts)) return record(EINVAL, "bad argument");
    return finish_open(cxlpool::devpool::LinkFile::open(link_path, opts != nullptr ? opts->link_offset : 0), opts, out);
  });
}

CXLPOOL_EXPORT int cxlpool_blk_open_fd(int fd, const cxlpool_blk_options* opts, cxlpool_blk** out) {
  return guarded([&] {
    if (fd < 0 || out == nullptr || bad_options(opts)) return record(EINVAL, "bad argument");
    return finish_open(cxlpool::devpool::LinkFile::adopt(fd, opts != nullptr ? opts->link_offset : 0), opts, out);
  });
}

CXLPOOL_EXPORT int cxlpool_blk_attach(const char* daemon_socket, const char* host, const char* preferred,
                                      const cxlpool_blk_options* opts, cxlpool_blk** out) {
  return guarded([&] {
    if (out == nullptr || bad_name(host, false) || bad_name(preferred, true) || bad_options(opts) ||
        (opts != nullptr && opts->link_offset != 0)) {
      return record(EINVAL, "bad argument");
    }
    return attach(daemon_socket, host, preferred, opts, out);
  });
}

CXLPOOL_EXPORT void cxlpool_blk_close(cxlpool_blk* blk) {
  // The frontend goes before the mapping it points into; the attachment
  // goes back to the allocator last.
  if (blk != nullptr) blk->frontend.reset();
  if (blk != nullptr && blk->daemon) {
    (void)blk->daemon->call(cxlpool::proto::DevDetach{blk->attachment_id});
    blk->daemon->close();
  }
  delete blk;
}

CXLPOOL_EXPORT int cxlpool_blk_get_info(const cxlpool_blk* blk, cxlpool_blk_info* out) {
  return guarded([&] {
    if (blk == nullptr || out == nullptr) return record(EINVAL, "bad argument");
    const blk::DeviceInfo& d = blk->frontend->device();
    *out = cxlpool_blk_info{};
    out->capacity = d.capacity;
    out->block_size = d.block_size;
    out->mem_alignment = d.mem_alignment;
    out->max_transfer = d.max_transfer;
    out->queue_depth = d.queue_depth;
    out->max_in_flight = blk->frontend->max_in_flight();
    out->read_only = d.read_only() ? 1 : 0;
    out->buffer_bytes = blk->frontend->buffer_area().size();
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_blk_buffer_alloc(cxlpool_blk* blk, size_t bytes, void** out) {
  return guarded([&] {
    if (blk == nullptr || out == nullptr) return record(EINVAL, "bad argument");
    auto offset = blk->frontend->alloc_buffer(bytes);
    if (!offset) return record(offset.error());
    *out = blk->frontend->buffer_area().data() + *offset;
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_blk_buffer_free(cxlpool_blk* blk, void* buf) {
  return guarded([&] {
    if (blk == nullptr || buf == nullptr) return record(EINVAL, "bad argument");
    const auto area = blk->frontend->buffer_area();
    const auto* p = static_cast<const std::byte*>(buf);
    if (p < area.data() || p >= area.data() + area.size()) return record(EINVAL, "not a buffer of this link");
    if (auto ok = blk->frontend->free_buffer(static_cast<std::uint64_t>(p - area.data())); !ok) return record(ok.error());
    return 0;
  });
}

CXLPOOL_EXPORT int cxlpool_blk_submit(cxlpool_blk* blk, const cxlpool_blk_request* reqs, size_t n) {
  return guarded([&] {
    if (blk == nullptr || reqs == nullptr || n == 0) return record(EINVAL, "bad argument");
    const auto area = blk->frontend->buffer_area();
    const auto base = reinterpret_cast<std::uintptr_t>(area.data());
    blk->requests.clear();
    for (size_t i = 0; i < std::min<size_t>(n, INT_MAX); ++i) {
      const cxlpool_blk_request& r = reqs[i];
      blk::BlkRequest q;
      if (r.op > CXLPOOL_BLK_READ || (r.flags & ~CXLPOOL_BLK_FUA) != 0 || r.reserved != 0) {
        if (i == 0) return record(EINVAL, "unknown op or flags");
        break;
      }
      q.opcode = static_cast<blk::Opcode>(r.op);
      q.flags = static_cast<std::uint8_t>(r.flags);
      q.offset = r.offset;
      q.length = r.length;
      q.user_data = r.user_data;
      if (r.buf != nullptr) {
        // An address below the area maps past its end: the frontend's
        // buffer check then refuses it with EFAULT.
        q.buffer_offset = reinterpret_cast<std::uintptr_t>(r.buf) - base;
      }
      blk->requests.push_back(q);
    }
    auto sent = blk->frontend->submit(blk->requests);
    if (!sent) return record(sent.error());
    return static_cast<int>(*sent);
  });
}

CXLPOOL_EXPORT int cxlpool_blk_poll(cxlpool_blk* blk, cxlpool_blk_completion* out, size_t max,
                                                             size_t min, int timeout_ms) {
  return guarded([&] {
    if (blk == nullptr || out == nullptr || max == 0 || min > max) return record(EINVAL, "bad argument");
    max = std::min<size_t>(max, INT_MAX);
    blk->results.resize(max);
    const auto timeout = timeout_ms < 0 ? std::chrono::nanoseconds::max()
                                        : std::chrono::nanoseconds(std::chrono::milliseconds(timeout_ms));
    auto got = blk->frontend->poll(blk->results, min, timeout);
    if (!got) return record(got.error());
    for (size_t i = 0; i < *got; ++i) {
      out[i] = cxlpool_blk_completion{blk->results[i].user_data, blk->results[i].status, blk->results[i].bytes};
    }
    return static_cast<int>(*got);
  });
}

}  // extern "C"
