// SPDX-License-Identifier: Apache-2.0
#include "client_reconnect.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>
#include <map>

#include <fmt/format.h>

#include "cxlpool/proto/socket_io.hpp"
#include "process_creds.hpp"

namespace cxlpool::ckpt {
namespace {

// connect() as the clone: SO_PEERCRED and SO_PEERGROUPS, which the daemon
// trusts, are taken at connect time.
Result<UniqueFd> connect_as(const std::string& path, const Credentials& creds) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return fail(ENAMETOOLONG, "cxlpoold socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!sock) return fail_errno("socket for cxlpoold");
  auto connected = as_process(creds, [&]() -> Result<void> {
    if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      return fail_errno("connect " + path);
    }
    return {};
  });
  if (!connected) return tl::unexpected(connected.error());
  return sock;
}

// One request and its reply.
Result<proto::Received> call(int sock, uint32_t id, const proto::Message& request, uint16_t version) {
  if (auto sent = proto::send_message(sock, id, request, {}, version); !sent) return tl::unexpected(sent.error());
  auto reply = proto::recv_message(sock);
  if (!reply) return tl::unexpected(reply.error());
  if (auto* err = std::get_if<proto::ErrorReply>(&reply->envelope.message)) return fail(err->code, err->message);
  return reply;
}

// The lease's stored pages, from the image into the new region's file.
Result<void> fill_lease(const Lease& lease, int image_fd, int region_fd) {
  constexpr uint64_t kChunk = 8u << 20;
  std::vector<char> buffer(kChunk);
  for (const LeaseRun& run : lease.runs) {
    const uint64_t bytes = run.pages * kPageSize;
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t n = std::min(kChunk, bytes - done);
      const ssize_t got = ::pread(image_fd, buffer.data(), n, static_cast<off_t>(run.image_offset + done));
      if (got != static_cast<ssize_t>(n)) return fail(got < 0 ? errno : EIO, "reading the lease's pages from the image");
      const ssize_t put = ::pwrite(region_fd, buffer.data(), n, static_cast<off_t>(run.offset + done));
      if (put != static_cast<ssize_t>(n)) return fail(put < 0 ? errno : EIO, "writing the lease's pages");
      done += n;
    }
  }
  return {};
}

// A region leased on the clone's connection in place of `lease`, filled,
// and answering to the recorded id there: its descriptor.
Result<UniqueFd> lease_again(int sock, uint32_t& id, uint16_t version, const Lease& lease, int image_fd) {
  const std::string which = fmt::format("leased cxlpool region {} ({} bytes on tier {})", lease.region_id,
                                        lease.size, lease.tier_id);
  auto r = call(sock, id++, proto::RegionAlloc{lease.tier_id, lease.size, 0}, version);
  if (!r) return fail(r.error().code, fmt::format("leasing a region for the clone in place of {}: {}", which,
                                                  r.error().message));
  const auto* region = std::get_if<proto::RegionReply>(&r->envelope.message);
  if (region == nullptr || r->fds.size() != 1)
    return fail(EPROTO, fmt::format("leasing a region in place of {}: no region descriptor in the reply", which));
  if (region->size != lease.size)
    return fail(EINVAL, fmt::format("leasing a region in place of {}: the daemon leased {} bytes", which,
                                    region->size));
  if (auto filled = fill_lease(lease, image_fd, r->fds[0].get()); !filled)
    return fail(filled.error().code, fmt::format("filling the region in place of {}: {}", which,
                                                 filled.error().message));
  auto aliased = call(sock, id++, proto::RegionAlias{region->region_id, lease.region_id}, version);
  if (!aliased)
    return fail(aliased.error().code, fmt::format("giving region {} the id of {}: {}", region->region_id, which,
                                                  aliased.error().message));
  return std::move(r->fds[0]);
}

}  // namespace

Result<ClientResources> reconnect_client(const Manifest& m, int image_fd) {
  ClientResources out;
  if (m.cxlpool_socket.empty()) return out;
  auto sock = connect_as(m.cxlpool_socket, m.process.creds);
  if (!sock) return fail(sock.error().code, "reconnecting to cxlpoold: " + sock.error().message);
  proto::Hello hello;
  hello.client_name = m.process.comm.substr(0, proto::kMaxClientNameLength);
  for (char& c : hello.client_name) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  auto greeted = call(sock->get(), 1, hello, proto::kVersionMax);
  if (!greeted) return fail(greeted.error().code, "reconnecting to cxlpoold: " + greeted.error().message);
  const auto* reply = std::get_if<proto::HelloReply>(&greeted->envelope.message);
  if (reply == nullptr) return fail(EPROTO, "reconnecting to cxlpoold: no HelloReply");
  const uint16_t version = reply->version;
  // A region held several times (a descriptor and its mappings) is opened
  // once, writable if any of them was.
  std::map<std::string, bool> writable;
  for (const RegionRef& g : m.regions)
    if (g.kind != RegionKind::kLeased) writable[g.name] = writable[g.name] || g.writable;
  std::map<std::string, UniqueFd> opened;
  uint32_t id = 2;
  for (const auto& [name, rw] : writable) {
    proto::NamedOpen open{name, rw ? proto::kOpenWritable : 0u};
    auto r = call(sock->get(), id++, open, version);
    if (!r) return fail(r.error().code, fmt::format("opening cxlpool region '{}' for the clone: {}", name,
                                                    r.error().message));
    const auto* region = std::get_if<proto::RegionReply>(&r->envelope.message);
    if (region == nullptr || r->fds.size() != 1)
      return fail(EPROTO, fmt::format("opening cxlpool region '{}': no region descriptor in the reply", name));
    // The name may since have been given to another region: mapping that
    // would hand the clone other bytes under the library's old region id.
    const auto recorded = std::find_if(m.regions.begin(), m.regions.end(),
                                       [&](const RegionRef& g) { return g.name == name; });
    if (region->region_id != recorded->region_id)
      return fail(ESTALE, fmt::format("opening cxlpool region '{}' for the clone: the name is another region now "
                                      "(id {}, the checkpoint's {})", name, region->region_id, recorded->region_id));
    opened[name] = std::move(r->fds[0]);
  }
  std::map<uint64_t, UniqueFd> leased;  // by the recorded id
  for (const Lease& lease : m.leases) {
    auto fd = lease_again(sock->get(), id, version, lease, image_fd);
    if (!fd) return tl::unexpected(fd.error());
    leased[lease.region_id] = std::move(*fd);
  }
  for (const RegionRef& g : m.regions) {
    const UniqueFd& held = g.kind == RegionKind::kLeased ? leased.at(g.region_id) : opened.at(g.name);
    const int fd = ::fcntl(held.get(), F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return fail_errno("duplicating the descriptor of region " + std::to_string(g.region_id));
    out.regions.emplace_back(fd);
  }
  out.socket = std::move(*sock);
  return out;
}

}  // namespace cxlpool::ckpt
