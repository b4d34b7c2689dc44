// SPDX-License-Identifier: Apache-2.0
// cxlpoolctl: administer a running cxlpoold over its control socket.
//
// Exit codes (stable, for scripts):
//   0 success
//   1 the daemon refused or failed the request
//   2 usage error
//   3 cannot reach the daemon (no socket, refused, protocol mismatch)
//   4 permission denied (not an admin, or the socket's mode)
#include <sys/syscall.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "ckpt_format.hpp"
#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/units.hpp"
#include "devices_format.hpp"
#include "pod_format.hpp"
#include "kv_format.hpp"
#include "weights_format.hpp"
#include "table.hpp"

using cxlpool::format_size;
using cxlpool::client::Connection;
using nlohmann::json;
namespace proto = cxlpool::proto;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;
constexpr int kExitDenied = 4;

int exit_code_for(int code) {
  return (code == EPERM || code == EACCES) ? kExitDenied : kExitFailed;
}

int report(const cxlpool::Error& error, int code_if_any) {
  std::fprintf(stderr, "cxlpoolctl: %s\n", error.message.c_str());
  return code_if_any;
}

const char* kind_name(proto::TierKind kind) {
  switch (kind) {
    case proto::TierKind::kDram: return "dram";
    case proto::TierKind::kCxl: return "cxl";
    case proto::TierKind::kEmulated: return "emulated";
  }
  return "?";
}

const char* state_name(proto::BackendState state) {
  switch (state) {
    case proto::BackendState::kAvailable: return "available";
    case proto::BackendState::kNotCompiled: return "not compiled";
    case proto::BackendState::kNotPresent: return "not present";
    case proto::BackendState::kFailed: return "failed";
  }
  return "?";
}

std::string seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ns) / 1e9);
  return buf;
}

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }
void print_json(const json& j) { print(j.dump(2) + "\n"); }

struct Context {
  std::unique_ptr<Connection> conn;
  bool json = false;
};

// A reply that lists entries: a JSON array with an object per entry, or a
// table with a row per entry.
template <typename Entry, typename ToJson, typename ToRow>
void print_list(const Context& ctx, const std::vector<Entry>& entries, std::vector<std::string> header,
                ToJson to_json, ToRow to_row) {
  if (ctx.json) {
    json out = json::array();
    for (const Entry& e : entries) out.push_back(to_json(e));
    print_json(out);
    return;
  }
  cxlpool::ctl::Table table(std::move(header));
  for (const Entry& e : entries) table.add(to_row(e));
  print(table.render());
}

template <typename Reply>
int call(Context& ctx, const proto::Message& request, const std::function<void(const Reply&)>& show) {
  auto reply = ctx.conn->call_for<Reply>(request);
  if (!reply) return report(reply.error(), exit_code_for(reply.error().code));
  show(*reply);
  return kExitOk;
}

int cmd_status(Context& ctx) {
  return call<proto::StatusReply>(ctx, proto::StatusRequest{}, [&](const proto::StatusReply& s) {
    if (ctx.json) {
      print_json(json{{"version", s.daemon_version}, {"pid", s.pid}, {"uptime_ns", s.uptime_ns},
                      {"clients", s.clients}, {"regions", s.regions}, {"bytes_allocated", s.bytes_allocated},
                      {"state_dir", s.state_dir}, {"config", s.config_source},
                      {"protocol_version", ctx.conn->version()}, {"socket", ctx.conn->socket_path()}});
      return;
    }
    std::printf("cxlpoold %s (pid %u), up %s\n", s.daemon_version.c_str(), s.pid, seconds(s.uptime_ns).c_str());
    std::printf("socket:    %s (protocol v%u)\n", ctx.conn->socket_path().c_str(), ctx.conn->version());
    std::printf("state dir: %s\nconfig:    %s\n", s.state_dir.c_str(), s.config_source.c_str());
    std::printf("clients:   %u\nregions:   %u (%s allocated)\n", s.clients, s.regions,
                format_size(s.bytes_allocated).c_str());
  });
}

int cmd_tiers(Context& ctx) {
  return call<proto::TiersReply>(ctx, proto::TiersRequest{}, [&](const proto::TiersReply& r) {
    print_list(
        ctx, r.tiers, {"ID", "NAME", "KIND", "NODE", "CAPACITY", "USED", "FREE", "LATENCY", "BANDWIDTH"},
        [](const proto::TierInfo& t) -> json {
          return {{"id", t.id}, {"name", t.name}, {"kind", kind_name(t.kind)}, {"numa_node", t.numa_node},
                  {"capacity", t.capacity}, {"used", t.used}, {"free", t.free},
                  {"latency_ns", t.latency_ns}, {"bandwidth_mbps", t.bandwidth_mbps},
                  {"page_size", t.page_size}};
        },
        [](const proto::TierInfo& t) -> std::vector<std::string> {
          return {std::to_string(t.id), t.name, kind_name(t.kind),
                  t.numa_node < 0 ? "-" : std::to_string(t.numa_node), format_size(t.capacity),
                  format_size(t.used), format_size(t.free), std::to_string(t.latency_ns) + " ns",
                  t.bandwidth_mbps ? std::to_string(t.bandwidth_mbps) + " MB/s" : "-"};
        });
  });
}

int cmd_regions(Context& ctx) {
  return call<proto::RegionsReply>(ctx, proto::RegionsRequest{}, [&](const proto::RegionsReply& r) {
    print_list(
        ctx, r.regions, {"ID", "KIND", "NAME", "TIER", "SIZE", "RESIDENT", "OWNER", "MODE", "CLIENT", "HANDLES"},
        [](const proto::RegionEntry& e) -> json {
          return {{"id", e.id}, {"kind", e.kind == proto::RegionKind::kNamed ? "named" : "leased"},
                  {"name", e.name}, {"tier", e.tier_id}, {"size", e.size}, {"owner_uid", e.owner_uid},
                  {"mode", e.mode}, {"client", e.client_id}, {"handles", e.handles},
                  {"resident_bytes", e.resident_bytes}};
        },
        [](const proto::RegionEntry& e) -> std::vector<std::string> {
          char mode[8];
          std::snprintf(mode, sizeof mode, "%04o", e.mode);
          return {std::to_string(e.id), e.kind == proto::RegionKind::kNamed ? "named" : "leased",
                  e.name.empty() ? "-" : e.name, std::to_string(e.tier_id), format_size(e.size),
                  format_size(e.resident_bytes), std::to_string(e.owner_uid), mode,
                  e.client_id ? std::to_string(e.client_id) : "-", std::to_string(e.handles)};
        });
  });
}

int cmd_clients(Context& ctx) {
  return call<proto::ClientsReply>(ctx, proto::ClientsRequest{}, [&](const proto::ClientsReply& r) {
    print_list(
        ctx, r.clients, {"ID", "PID", "UID", "GID", "NAME", "REGIONS", "BYTES", "CONNECTED"},
        [](const proto::ClientEntry& c) -> json {
          return {{"id", c.id}, {"pid", c.pid}, {"uid", c.uid}, {"gid", c.gid}, {"name", c.name},
                  {"regions", c.regions}, {"bytes", c.bytes}, {"connected_ns", c.connected_ns}};
        },
        [](const proto::ClientEntry& c) -> std::vector<std::string> {
          return {std::to_string(c.id), std::to_string(c.pid), std::to_string(c.uid), std::to_string(c.gid),
                  c.name.empty() ? "-" : c.name, std::to_string(c.regions), format_size(c.bytes),
                  seconds(c.connected_ns)};
        });
  });
}

int cmd_stats(Context& ctx) {
  return call<proto::StatsReply>(ctx, proto::StatsRequest{}, [&](const proto::StatsReply& r) {
    if (ctx.json) {
      json out = json::object();
      for (const auto& c : r.counters) out[c.name] = c.value;
      print_json(out);
      return;
    }
    cxlpool::ctl::Table table({"COUNTER", "VALUE"});
    for (const auto& c : r.counters) table.add({c.name, std::to_string(c.value)});
    print(table.render());
  });
}

int cmd_backends(Context& ctx) {
  return call<proto::BackendsReply>(ctx, proto::BackendsRequest{}, [&](const proto::BackendsReply& r) {
    print_list(
        ctx, r.backends, {"CLASS", "BACKEND", "STATE", "DETAIL"},
        [](const proto::BackendEntry& b) -> json {
          return {{"class", b.cls}, {"name", b.name}, {"state", state_name(b.state)}, {"detail", b.detail}};
        },
        [](const proto::BackendEntry& b) -> std::vector<std::string> {
          return {b.cls, b.name, state_name(b.state), b.detail};
        });
  });
}

// A tier given by id or by name.
int resolve_tier(Context& ctx, const std::string& text, uint32_t& out) {
  auto tiers = ctx.conn->call_for<proto::TiersReply>(proto::TiersRequest{});
  if (!tiers) return report(tiers.error(), exit_code_for(tiers.error().code));
  for (const auto& t : tiers->tiers) {
    if (t.name == text || std::to_string(t.id) == text) {
      out = t.id;
      return kExitOk;
    }
  }
  std::fprintf(stderr, "cxlpoolctl: no tier '%s' (see `cxlpoolctl tiers`)\n", text.c_str());
  return kExitFailed;
}

int cmd_migrate(Context& ctx, uint64_t region, const std::string& tier_text) {
  uint32_t tier = 0;
  if (int rc = resolve_tier(ctx, tier_text, tier); rc != kExitOk) return rc;
  return call<proto::MigrateReply>(ctx, proto::RegionMigrate{region, tier}, [&](const proto::MigrateReply& m) {
    const double secs = static_cast<double>(m.elapsed_ns) / 1e9;
    const double mibps = secs > 0 ? static_cast<double>(m.bytes_moved) / (1 << 20) / secs : 0.0;
    if (ctx.json) {
      print_json(json{{"region", m.region_id}, {"from_tier", m.from_tier}, {"to_tier", m.to_tier},
                      {"pages_total", m.pages_total}, {"pages_moved", m.pages_moved},
                      {"pages_already", m.pages_already}, {"pages_absent", m.pages_absent},
                      {"pages_failed", m.pages_failed}, {"bytes_moved", m.bytes_moved}, {"elapsed_ns", m.elapsed_ns},
                      {"mib_per_s", mibps}});
      return;
    }
    std::printf("region %llu: tier %u -> %u\n", static_cast<unsigned long long>(m.region_id), m.from_tier, m.to_tier);
    std::printf("pages: %llu total, %llu moved, %llu already there, %llu not present, %llu failed\n",
                static_cast<unsigned long long>(m.pages_total), static_cast<unsigned long long>(m.pages_moved),
                static_cast<unsigned long long>(m.pages_already), static_cast<unsigned long long>(m.pages_absent),
                static_cast<unsigned long long>(m.pages_failed));
    std::printf("moved %s in %.3f ms (%.1f MiB/s)\n", format_size(m.bytes_moved).c_str(), secs * 1e3, mibps);
  });
}

const char* role_name(proto::TierRole role) {
  switch (role) {
    case proto::TierRole::kFast: return "fast";
    case proto::TierRole::kSlow: return "slow";
    case proto::TierRole::kUnmanaged: return "-";
  }
  return "?";
}

const char* class_name(proto::PageClass c) {
  switch (c) {
    case proto::PageClass::kDense: return "dense";
    case proto::PageClass::kSparse: return "sparse";
    case proto::PageClass::kUnknown: return "unknown";
  }
  return "?";
}

const char* space_name(proto::AccessSpace space) {
  switch (space) {
    case proto::AccessSpace::kPoolRegion: return "region";
    case proto::AccessSpace::kProcess: return "process";
    case proto::AccessSpace::kPhysical: return "physical";
    case proto::AccessSpace::kTrace: return "trace";
  }
  return "?";
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string rate(uint64_t bytes_per_s) { return bytes_per_s ? format_size(bytes_per_s) + "/s" : "-"; }

int cmd_tiering_status(Context& ctx) {
  return call<proto::TieringStatusReply>(ctx, proto::TieringStatusRequest{}, [&](const proto::TieringStatusReply& r) {
    const char* nominator = r.nominator == proto::Nominator::kHwt ? "hwt" : "hpt";
    if (ctx.json) {
      json tiers = json::array();
      for (const auto& t : r.tiers) {
        tiers.push_back({{"id", t.tier_id}, {"name", t.name}, {"role", role_name(t.role)},
                         {"capacity", t.capacity_bytes}, {"used", t.used_bytes}, {"hot_pages", t.hot_pages},
                         {"accesses", t.accesses}, {"bandwidth_bps", t.bandwidth_bps}, {"promotions", t.promotions},
                         {"demotions", t.demotions}, {"bytes_promoted", t.bytes_promoted},
                         {"bytes_demoted", t.bytes_demoted}, {"rate_limit_hits", t.rate_limit_hits}});
      }
      json sources = json::array();
      for (const auto& s : r.sources) {
        sources.push_back({{"name", s.name}, {"state", state_name(s.state)}, {"accesses", s.accesses},
                           {"dropped", s.dropped}, {"detail", s.detail}});
      }
      json knobs = json::object();
      for (const auto& k : r.knobs) knobs[k.key] = k.value;
      print_json(json{{"enabled", r.enabled != 0}, {"nominator", nominator}, {"epoch", r.epoch},
                      {"epoch_ns", r.epoch_ns}, {"promotion_period_ns", r.promotion_period_ns},
                      {"last_epoch_accesses", r.last_epoch_accesses}, {"pages_moved", r.pages_moved},
                      {"pages_failed", r.pages_failed}, {"detail", r.detail}, {"tiers", tiers}, {"sources", sources},
                      {"knobs", knobs}});
      return;
    }
    std::printf("tiering:   %s, nominator %s\n", r.enabled ? "enabled" : "disabled", nominator);
    std::printf("epoch:     %llu (every %s), promotion period %s, %llu accesses in the last epoch\n",
                static_cast<unsigned long long>(r.epoch), seconds(r.epoch_ns).c_str(),
                seconds(r.promotion_period_ns).c_str(), static_cast<unsigned long long>(r.last_epoch_accesses));
    std::printf("moves:     %llu pages moved, %llu failed; %s\n", static_cast<unsigned long long>(r.pages_moved),
                static_cast<unsigned long long>(r.pages_failed), r.detail.c_str());
    std::printf("\n");
    cxlpool::ctl::Table tiers({"ID", "TIER", "ROLE", "CAPACITY", "USED", "HOT", "ACCESSES", "BANDWIDTH",
                               "PROMOTED", "DEMOTED", "MIGRATED", "RATE-LIMITED"});
    for (const auto& t : r.tiers) {
      tiers.add({std::to_string(t.tier_id), t.name, role_name(t.role), format_size(t.capacity_bytes),
                 format_size(t.used_bytes), std::to_string(t.hot_pages), std::to_string(t.accesses),
                 rate(t.bandwidth_bps), std::to_string(t.promotions), std::to_string(t.demotions),
                 format_size(t.bytes_promoted + t.bytes_demoted), std::to_string(t.rate_limit_hits)});
    }
    print(tiers.render());
    std::printf("\n");
    cxlpool::ctl::Table sources({"SOURCE", "STATE", "ACCESSES", "DROPPED", "DETAIL"});
    for (const auto& s : r.sources) {
      sources.add({s.name, state_name(s.state), std::to_string(s.accesses), std::to_string(s.dropped),
                   s.detail.empty() ? "-" : s.detail});
    }
    print(sources.render());
    std::printf("\n");
    cxlpool::ctl::Table knobs({"KNOB", "VALUE"});
    for (const auto& k : r.knobs) knobs.add({k.key, k.value});
    print(knobs.render());
  });
}

int cmd_tiering_hot(Context& ctx, uint32_t top) {
  return call<proto::TieringHotReply>(ctx, proto::TieringHot{top}, [&](const proto::TieringHotReply& r) {
    if (ctx.json) {
      json pages = json::array();
      for (const auto& p : r.pages) {
        pages.push_back({{"space", space_name(p.space)}, {"owner", p.owner}, {"address", p.address},
                         {"tier", p.tier_id == proto::kNoTier ? json(nullptr) : json(p.tier_id)},
                         {"count", p.count}, {"class", class_name(p.page_class)},
                         {"touched_words", p.touched_words}});
      }
      print_json(json{{"epoch", r.epoch}, {"pages", pages}});
      return;
    }
    std::printf("hot pages of epoch %llu (hottest first)\n", static_cast<unsigned long long>(r.epoch));
    cxlpool::ctl::Table table({"#", "SPACE", "OWNER", "ADDRESS", "TIER", "ACCESSES", "CLASS", "WORDS"});
    size_t rank = 0;
    for (const auto& p : r.pages) {
      table.add({std::to_string(++rank), space_name(p.space), std::to_string(p.owner), hex(p.address),
                 p.tier_id == proto::kNoTier ? "-" : std::to_string(p.tier_id), std::to_string(p.count),
                 class_name(p.page_class), p.touched_words ? std::to_string(p.touched_words) + "/64" : "-"});
    }
    print(table.render());
  });
}

int cmd_tiering_set(Context& ctx, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    std::fprintf(stderr, "cxlpoolctl: expected KEY=VALUE, got '%s'\n", assignment.c_str());
    return kExitUsage;
  }
  proto::TieringSet request{assignment.substr(0, eq), assignment.substr(eq + 1)};
  return call<proto::TieringSetReply>(ctx, request, [&](const proto::TieringSetReply& r) {
    if (ctx.json) {
      print_json(json{{"key", r.key}, {"old", r.old_value}, {"new", r.new_value}});
      return;
    }
    std::printf("%s: %s -> %s\n", r.key.c_str(), r.old_value.c_str(), r.new_value.c_str());
  });
}

void print_json_or_text(const Context& ctx, const json& j, const std::string& text) {
  print(ctx.json ? j.dump(2) + "\n" : text);
}

int cmd_kv_status(Context& ctx) {
  return call<proto::KvStatusReply>(ctx, proto::KvStatusRequest{}, [&](const proto::KvStatusReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::kv_status_json(r), cxlpool::ctl::kv_status_text(r));
  });
}

int cmd_kv_namespaces(Context& ctx) {
  return call<proto::KvNamespacesReply>(ctx, proto::KvNamespacesRequest{}, [&](const proto::KvNamespacesReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::kv_namespaces_json(r), cxlpool::ctl::kv_namespaces_text(r));
  });
}

int cmd_kv_drop(Context& ctx, uint64_t namespace_id) {
  return call<proto::KvNamespaceDropReply>(ctx, proto::KvNamespaceDrop{namespace_id},
                                           [&](const proto::KvNamespaceDropReply& r) {
                                             print_json_or_text(ctx, cxlpool::ctl::kv_drop_json(namespace_id, r),
                                                                cxlpool::ctl::kv_drop_text(namespace_id, r));
                                           });
}

// The target travels as a pidfd: the daemon checkpoints the process this
// command named, even if its pid is reused meanwhile.
int cmd_ckpt_create(Context& ctx, pid_t pid, const std::string& name, const std::string& tier, bool kill) {
  uint32_t tier_id = proto::kNoTier;
  if (!tier.empty()) {
    if (int rc = resolve_tier(ctx, tier, tier_id); rc != kExitOk) return rc;
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    std::fprintf(stderr, "cxlpoolctl: no process %d: %s\n", pid, std::strerror(errno));
    return kExitFailed;
  }
  const int fds[1] = {pidfd};
  auto reply = ctx.conn->call_for<proto::CkptListReply>(
      proto::CkptCreate{0, tier_id, kill ? proto::kCkptKillAfter : 0u, name}, fds);
  ::close(pidfd);
  if (!reply) return report(reply.error(), exit_code_for(reply.error().code));
  print_json_or_text(ctx, cxlpool::ctl::ckpt_list_json(*reply), cxlpool::ctl::ckpt_list_text(*reply));
  return kExitOk;
}

// The clones write where this command does: its stdin, stdout and stderr
// go with the request.
int cmd_ckpt_restore(Context& ctx, const std::string& name, const std::string& policy, uint32_t count) {
  proto::CkptPolicy p = proto::CkptPolicy::kMow;
  if (policy == "moa") {
    p = proto::CkptPolicy::kMoa;
  } else if (policy == "hybrid") {
    p = proto::CkptPolicy::kHybrid;
  } else if (policy != "mow") {
    std::fprintf(stderr, "cxlpoolctl: unknown policy '%s' (mow, moa, hybrid)\n", policy.c_str());
    return kExitUsage;
  }
  std::fflush(nullptr);
  const int fds[3] = {0, 1, 2};
  auto reply = ctx.conn->call_for<proto::CkptRestoreReply>(proto::CkptRestore{p, count, name}, fds);
  if (!reply) return report(reply.error(), exit_code_for(reply.error().code));
  print_json_or_text(ctx, cxlpool::ctl::ckpt_restore_json(*reply), cxlpool::ctl::ckpt_restore_text(name, *reply));
  return kExitOk;
}

int cmd_ckpt_list(Context& ctx) {
  return call<proto::CkptListReply>(ctx, proto::CkptListRequest{}, [&](const proto::CkptListReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::ckpt_list_json(r), cxlpool::ctl::ckpt_list_text(r));
  });
}

int cmd_ckpt_remove(Context& ctx, const std::string& name) {
  return call<proto::Ok>(ctx, proto::CkptRemove{name}, [&](const proto::Ok&) {
    if (ctx.json) {
      print_json(json{{"removed", name}});
    } else {
      print("removed checkpoint '" + name + "' (running clones keep their pages)\n");
    }
  });
}

int cmd_weights_list(Context& ctx) {
  return call<proto::WeightsListReply>(ctx, proto::WeightsListRequest{}, [&](const proto::WeightsListReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::weights_list_json(r), cxlpool::ctl::weights_list_text(r));
  });
}

int cmd_weights_unload(Context& ctx, const std::string& model) {
  return call<proto::WeightsUnloadReply>(ctx, proto::WeightsUnload{model}, [&](const proto::WeightsUnloadReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::weights_unload_json(model, r),
                       cxlpool::ctl::weights_unload_text(model, r));
  });
}

int cmd_devices(Context& ctx) {
  return call<proto::DevListReply>(ctx, proto::DevListRequest{}, [&](const proto::DevListReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::devices_json(r), cxlpool::ctl::devices_text(r));
  });
}

int cmd_pod_status(Context& ctx) {
  return call<proto::PodStatusReply>(ctx, proto::PodStatusRequest{}, [&](const proto::PodStatusReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::pod_status_json(r), cxlpool::ctl::pod_status_text(r));
  });
}

int cmd_devices_failover(Context& ctx, const std::string& which) {
  auto list = ctx.conn->call_for<proto::DevListReply>(proto::DevListRequest{});
  if (!list) return report(list.error(), exit_code_for(list.error().code));
  const auto device = cxlpool::ctl::find_device(*list, which);
  if (!device) {
    std::fprintf(stderr, "cxlpoolctl: no device '%s' (an id, host/name, or a name only one host has; see `cxlpoolctl devices`)\n",
                 which.c_str());
    return kExitFailed;
  }
  return call<proto::DevFailoverReply>(ctx, proto::DevFailover{*device}, [&](const proto::DevFailoverReply& r) {
    print_json_or_text(ctx, cxlpool::ctl::failover_json(r), cxlpool::ctl::failover_text(r));
  });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cxlpoolctl — administer cxlpoold"};
  app.set_version_flag("--version", "cxlpoolctl " CXLPOOL_VERSION_STRING);
  app.require_subcommand(1);
  std::string socket;
  bool json_out = false;
  app.add_option("--socket", socket, "Control socket (default: $CXLPOOL_SOCKET, else the daemon's default)");
  app.add_flag("--json", json_out, "Machine-readable JSON output");
  auto* status = app.add_subcommand("status", "Daemon version, uptime, clients and regions");
  auto* tiers = app.add_subcommand("tiers", "Memory tiers: capacity, used, free");
  auto* regions = app.add_subcommand("regions", "Allocated regions (all for admins, own otherwise)");
  auto* clients = app.add_subcommand("clients", "Connected clients (admin)");
  auto* stats = app.add_subcommand("stats", "Counters per subsystem and tier");
  auto* backends = app.add_subcommand("backends", "Compiled and available backends (and those the daemon's CXLPOOL_BACKENDS excludes)");
  auto* region = app.add_subcommand("region", "Region operations");
  region->require_subcommand(1);
  auto* migrate = region->add_subcommand("migrate", "Move a region's pages to another tier (admin)");
  uint64_t region_id = 0;
  std::string target;
  migrate->add_option("region", region_id, "Region id (see `cxlpoolctl regions`)")->required();
  migrate->add_option("tier", target, "Target tier id or name")->required();
  auto* tiering = app.add_subcommand("tiering", "Tiered-memory engine: status, hot pages, knobs");
  tiering->require_subcommand(1);
  auto* tiering_status = tiering->add_subcommand("status", "Per-tier hot set, migrations, sources and knobs");
  auto* tiering_hot = tiering->add_subcommand("hot", "Hottest pages of the last epoch");
  uint32_t hot_top = 20;
  tiering_hot->add_option("--top", hot_top, "How many pages to list (1-1024)")
      ->check(CLI::Range(1u, static_cast<unsigned>(proto::kMaxListEntries)));
  auto* tiering_set = tiering->add_subcommand("set", "Change a [tiering] knob at run time (admin)");
  std::string assignment;
  tiering_set->add_option("assignment", assignment, "KEY=VALUE, as in the [tiering] config section")->required();
  auto* kv = app.add_subcommand("kv", "KV-cache store: tiers, namespaces");
  kv->require_subcommand(1);
  auto* kv_status = kv->add_subcommand("status", "Per tier: capacity, used, chunks, hit rate, evictions, SSD writes");
  auto* kv_namespaces = kv->add_subcommand("namespaces", "Namespaces with their chunks per tier");
  auto* kv_drop = kv->add_subcommand("drop", "Drop every chunk of a namespace on every tier (admin)");
  uint64_t kv_namespace_id = 0;
  kv_drop->add_option("namespace", kv_namespace_id, "Namespace id (see `cxlpoolctl kv namespaces`)")->required();
  auto* weights = app.add_subcommand("weights", "Shared model weights: loaded models, unload");
  weights->require_subcommand(1);
  auto* weights_list = weights->add_subcommand("list", "Loaded models: tier, files, tensors, resident bytes, opens");
  auto* weights_unload =
      weights->add_subcommand("unload", "Drop the daemon's copy of a model (its owner or an admin)");
  std::string weights_model;
  weights_unload->add_option("model", weights_model, "Model name (see `cxlpoolctl weights list`)")->required();
  auto* ckpt = app.add_subcommand("ckpt", "Checkpoints: create, restore clones, list, remove");
  ckpt->require_subcommand(1);
  auto* ckpt_create = ckpt->add_subcommand("create", "Checkpoint a running process into a tier");
  auto* ckpt_restore = ckpt->add_subcommand("restore", "Start clones of a checkpoint (its owner or an admin)");
  auto* ckpt_list = ckpt->add_subcommand("list", "Checkpoints: size, tier, owner, threads, created");
  auto* ckpt_rm = ckpt->add_subcommand("rm", "Remove a checkpoint (running clones keep their pages)");
  pid_t ckpt_pid = 0;
  std::string ckpt_name, ckpt_tier, ckpt_policy = "mow";
  bool ckpt_kill = false;
  uint32_t ckpt_count = 1;
  ckpt_create->add_option("pid", ckpt_pid, "The process to checkpoint")->required()->check(CLI::PositiveNumber);
  ckpt_create->add_option("name", ckpt_name, "Checkpoint name (letters, digits, '.', '_', '-')")->required();
  ckpt_create->add_option("--tier", ckpt_tier, "Tier id or name (default: the slowest tier)");
  ckpt_create->add_flag("--kill", ckpt_kill, "Kill the process once it is checkpointed");
  ckpt_restore->add_option("name", ckpt_name, "Checkpoint name (see `cxlpoolctl ckpt list`)")->required();
  ckpt_restore->add_option("--policy", ckpt_policy, "mow (map copy-on-write), moa (fill on access), hybrid");
  ckpt_restore->add_option("--count", ckpt_count, "Clones to start")
      ->check(CLI::Range(1u, proto::kMaxCkptClones));
  ckpt_rm->add_option("name", ckpt_name, "Checkpoint name")->required();
  auto* devices = app.add_subcommand("devices", "Device pool: registered NICs and SSDs, attachments, load, health");
  devices->require_subcommand(0, 1);
  auto* devices_failover =
      devices->add_subcommand("failover", "Switch a device's attachments to their backups (admin)");
  std::string failover_device;
  devices_failover->add_option("device", failover_device, "Device id, host/name, or a name (see `cxlpoolctl devices`)")
      ->required();
  auto* pod = app.add_subcommand("pod", "Pod of hosts: membership through etcd, or the embedded single-host pod");
  pod->require_subcommand(1);
  auto* pod_status = pod->add_subcommand("status", "Members, their fabric addresses, tiers and devices, leases");
  for (auto* sub : {status, tiers, regions, clients, stats, backends, migrate, tiering, tiering_status, tiering_hot,
                    tiering_set, kv, kv_status, kv_namespaces, kv_drop, weights, weights_list, weights_unload, devices,
                    devices_failover, ckpt, ckpt_create, ckpt_restore, ckpt_list, ckpt_rm, pod_status}) {
    sub->add_flag("--json", json_out, "Machine-readable JSON output");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  Context ctx;
  ctx.json = json_out;
  auto conn = Connection::open(socket, "cxlpoolctl");
  if (!conn) {
    const int code = conn.error().code;
    return report(conn.error(), code == EACCES || code == EPERM ? kExitDenied : kExitUnreachable);
  }
  ctx.conn = std::move(*conn);
  if (*status) return cmd_status(ctx);
  if (*tiers) return cmd_tiers(ctx);
  if (*regions) return cmd_regions(ctx);
  if (*clients) return cmd_clients(ctx);
  if (*stats) return cmd_stats(ctx);
  if (*backends) return cmd_backends(ctx);
  if (*migrate) return cmd_migrate(ctx, region_id, target);
  if (*tiering_status) return cmd_tiering_status(ctx);
  if (*tiering_hot) return cmd_tiering_hot(ctx, hot_top);
  if (*tiering_set) return cmd_tiering_set(ctx, assignment);
  if (*kv_status) return cmd_kv_status(ctx);
  if (*kv_namespaces) return cmd_kv_namespaces(ctx);
  if (*kv_drop) return cmd_kv_drop(ctx, kv_namespace_id);
  if (*weights_list) return cmd_weights_list(ctx);
  if (*weights_unload) return cmd_weights_unload(ctx, weights_model);
  if (*ckpt_create) return cmd_ckpt_create(ctx, ckpt_pid, ckpt_name, ckpt_tier, ckpt_kill);
  if (*ckpt_restore) return cmd_ckpt_restore(ctx, ckpt_name, ckpt_policy, ckpt_count);
  if (*ckpt_list) return cmd_ckpt_list(ctx);
  if (*ckpt_rm) return cmd_ckpt_remove(ctx, ckpt_name);
  if (*devices_failover) return cmd_devices_failover(ctx, failover_device);
  if (*devices) return cmd_devices(ctx);
  if (*pod_status) return cmd_pod_status(ctx);
  return kExitUsage;
}
