// SPDX-License-Identifier: Apache-2.0
#include "config.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cerrno>
#include <map>
#include <new>
#include <set>
#include <utility>

#include <toml++/toml.h>

#include "cxlpool/common/enum_names.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/common/units.hpp"
#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::daemon {
namespace {

// A configuration file is a few kilobytes; anything far larger is a mistake
// (a wrong path such as a disk image) and is refused before it is read whole.
constexpr size_t kMaxConfigBytes = 1 << 20;
// Linux never numbers NUMA nodes beyond MAX_NUMNODES (1024 on x86-64).
constexpr int64_t kMaxNumaNode = 1023;
// uid_t is 32 bits and (uid_t)-1 means "no user" to the kernel.
constexpr int64_t kMaxUid = 4294967294LL;
constexpr size_t kMaxTierNameLength = 32;

const char* type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string in_quotes(std::string_view text) { return "'" + std::string(text) + "'"; }

// Permission modes are read in octal by everyone; "0o1000" says what "512"
// hides. Negative values keep their sign.
std::string octal_text(int64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%s0o%llo", value < 0 ? "-" : "",
                static_cast<unsigned long long>(value < 0 ? -value : value));
  return buffer;
}

// Keeps the first problem only: later ones are mostly consequences of it, and
// one precise message is what an operator fixing a file needs.
class Problems {
 public:
  explicit Problems(std::string source) : source_(std::move(source)) {}

  void report(const toml::source_region& where, std::string_view key, std::string_view what) {
    if (first_) return;
    std::string message = source_;
    if (where.begin.line > 0) message += ":" + std::to_string(where.begin.line);
    message += ": ";
    message += key;
    message += ": ";
    message += what;
    first_ = Error{EINVAL, std::move(message)};
  }

  bool any() const { return first_.has_value(); }
  Error take() { return std::move(*first_); }

 private:
  std::string source_;
  std::optional<Error> first_;
};

// One TOML table being read. Every key a reader asks for is recorded, so that
// whatever is left over is reported as unknown once the section is done.
class Section {
 public:
  Section(const toml::table& table, std::string path, Problems& problems)
      : table_(table), path_(std::move(path)), problems_(problems) {}

  std::string key_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

  const toml::node* get(std::string_view key) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
    return table_.get(key);
  }

  void fail_at(std::string_view key, const toml::node& node, std::string_view what) {
    problems_.report(node.source(), key_path(key), what);
  }

  // For problems with a key that is absent: the table's header line points
  // the reader at the right block.
  void fail_here(std::string_view key, std::string_view what) {
    problems_.report(table_.source(), key_path(key), what);
  }

  void require(std::string_view key) {
    if (get(key) == nullptr) fail_here(key, "required key is missing");
  }

  void wrong_type(std::string_view key, const toml::node& node, std::string_view expected) {
    fail_at(key, node, "expected " + std::string(expected) + ", got " + type_name(node.type()));
  }

  // The key's node as a T (a toml::value<...>, array or table); null when
  // the key is absent or, reported, holds another type.
  template <typename T>
  auto typed(std::string_view key, std::string_view expected) {
    const toml::node* node = get(key);
    decltype(node->as<T>()) value = node != nullptr ? node->as<T>() : nullptr;
    if (node != nullptr && value == nullptr) wrong_type(key, *node, expected);
    return value;
  }

  bool read_bool(std::string_view key, bool& out) {
    const auto* value = typed<bool>(key, "a boolean (true or false)");
    if (value == nullptr) return false;
    out = value->get();
    return true;
  }

  template <typename Int>
  bool read_int(std::string_view key, int64_t min, int64_t max, Int& out) {
    const auto* value = typed<int64_t>(key, "an integer");
    if (value == nullptr) return false;
    if (value->get() < min || value->get() > max) {
      fail_at(key, *value,
              "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " +
                  std::to_string(value->get()));
      return false;
    }
    out = static_cast<Int>(value->get());
    return true;
  }

  bool read_string(std::string_view key, std::string& out) {
    const auto* value = typed<std::string>(key, "a string");
    if (value == nullptr) return false;
    out = value->get();
    return true;
  }

  // Sizes are written as strings with a binary unit ("64G", "512MiB") or as
  // integers counting bytes.
  bool read_size(std::string_view key, uint64_t min, uint64_t& out) {
    const toml::node* node = get(key);
    if (node == nullptr) return false;
    uint64_t bytes = 0;
    if (const auto* integer = node->as_integer()) {
      if (integer->get() < 0) {
        fail_at(key, *node, "must not be negative, got " + std::to_string(integer->get()));
        return false;
      }
      bytes = static_cast<uint64_t>(integer->get());
    } else if (const auto* text = node->as_string()) {
      auto parsed = parse_size(text->get());
      if (!parsed) {
        fail_at(key, *node, parsed.error().message);
        return false;
      }
      bytes = *parsed;
    } else {
      wrong_type(key, *node, "a size (a string such as \"64G\" or an integer number of bytes)");
      return false;
    }
    if (bytes < min) {
      fail_at(key, *node, min == 1 ? "must be greater than 0" : "must be at least " + std::to_string(min));
      return false;
    }
    out = bytes;
    return true;
  }

  // An absolute path, or (when allow_empty) "" for "use the default".
  bool read_path(std::string_view key, bool allow_empty, std::string& out) {
    std::string text;
    if (!read_string(key, text)) return false;
    if (text.empty() && allow_empty) {
      out.clear();
      return true;
    }
    if (text.empty() || text.front() != '/') {
      fail_at(key, *table_.get(key), "must be an absolute path, got " + in_quotes(text));
      return false;
    }
    out = std::move(text);
    return true;
  }

  bool read_string_list(std::string_view key, std::vector<std::string>& out) {
    const auto* array = typed<toml::array>(key, "an array of strings");
    if (array == nullptr) return false;
    std::vector<std::string> values;
    for (const toml::node& element : *array) {
      const auto* text = element.as_string();
      if (text == nullptr) {
        wrong_type(key, element, "an array of strings (each element a string)");
        return false;
      }
      values.push_back(text->get());
    }
    out = std::move(values);
    return true;
  }

  // Returns the nodes of an integer array after checking each element's range.
  bool read_int_list(std::string_view key, int64_t min, int64_t max, std::vector<int>& out,
                     std::vector<const toml::node*>* nodes = nullptr) {
    const auto* array = typed<toml::array>(key, "an array of integers");
    if (array == nullptr) return false;
    std::vector<int> values;
    for (const toml::node& element : *array) {
      const auto* integer = element.as_integer();
      if (integer == nullptr) {
        wrong_type(key, element, "an array of integers (each element an integer)");
        return false;
      }
      if (integer->get() < min || integer->get() > max) {
        fail_at(key, element,
                "elements must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    ", got " + std::to_string(integer->get()));
        return false;
      }
      values.push_back(static_cast<int>(integer->get()));
      if (nodes != nullptr) nodes->push_back(&element);
    }
    out = std::move(values);
    return true;
  }

  const toml::table* read_table(std::string_view key) {
    return typed<toml::table>(key, "a table ([" + key_path(key) + "])");
  }

  const toml::array* read_table_array(std::string_view key) {
    const toml::node* node = get(key);
    if (node == nullptr) return nullptr;
    const auto* array = node->as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
      wrong_type(key, *node, "an array of tables ([[" + key_path(key) + "]])");
      return nullptr;
    }
    return array;
  }

  void reject_unknown_keys() {
    for (auto&& [key, node] : table_) {
      if (std::find(known_.begin(), known_.end(), key.str()) != known_.end()) continue;
      std::string valid;
      for (const auto& name : known_) valid += (valid.empty() ? "" : ", ") + name;
      const std::string where = path_.empty() ? "the top level" : "[" + path_ + "]";
      problems_.report(key.source().begin.line > 0 ? key.source() : node.source(), key_path(key.str()),
                       "unknown key (valid in " + where + ": " + valid + ")");
      return;
    }
  }

 private:
  const toml::table& table_;
  std::string path_;
  Problems& problems_;
  std::vector<std::string> known_;
};

// The values of [daemon] log_level, matched in any case.
constexpr EnumName<LogLevel> kLogLevelNames[] = {
    {LogLevel::kError, "error"}, {LogLevel::kWarning, "warning"}, {LogLevel::kNotice, "notice"},
    {LogLevel::kInfo, "info"},   {LogLevel::kDebug, "debug"},
};

std::optional<LogLevel> log_level_from_name(std::string_view text) {
  return enum_from_name(kLogLevelNames, text, NameCase::kIgnore);
}

// Group names as useradd/groupadd accept them, minus the characters that would
// make a config line ambiguous; the daemon resolves the name at start.
bool valid_group_name(std::string_view name) {
  if (name.empty() || name.size() > 256 || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isgraph(u) && c != ':' && c != '/' && c != ',';
  });
}

bool valid_tier_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxTierNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// "0660", "660" or a TOML integer such as 0o660. A decimal integer like 660 is
// almost always a forgotten 0o prefix, which the range check catches.
void read_socket_mode(Section& section, uint32_t& out) {
  static constexpr std::string_view kKey = "socket_mode";
  const toml::node* node = section.get(kKey);
  if (node == nullptr) return;
  int64_t mode = -1;
  if (const auto* integer = node->as_integer()) {
    mode = integer->get();
    if (mode < 0 || mode > 0777) {
      section.fail_at(kKey, *node,
                      "must be a permission mode between 0 and 0o777, got " + octal_text(mode) +
                          " (write octal as 0o660 or \"0660\")");
      return;
    }
  } else if (const auto* text = node->as_string()) {
    const std::string& digits = text->get();
    const bool octal = !digits.empty() && digits.size() <= 4 &&
                       std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; });
    if (octal) mode = std::stol(digits, nullptr, 8);
    if (!octal || mode > 0777) {
      section.fail_at(kKey, *node, "must be an octal permission mode such as \"0660\", got " + in_quotes(digits));
      return;
    }
  } else {
    section.wrong_type(kKey, *node, "an octal string such as \"0660\" or an integer such as 0o660");
    return;
  }
  out = static_cast<uint32_t>(mode);
}

void parse_daemon(Section section, Config& config) {
  std::string state_dir;
  if (section.read_path("state_dir", true, state_dir)) config.state_dir = state_dir;
  read_socket_mode(section, config.socket_mode);

  std::string group;
  if (section.read_string("socket_group", group)) {
    // Empty leaves the socket with the daemon's own group.
    if (!group.empty() && !valid_group_name(group)) {
      section.fail_at("socket_group", *section.get("socket_group"), "not a valid group name: " + in_quotes(group));
    } else {
      config.socket_group = group;
    }
  }

  std::vector<std::string> admin_groups;
  if (section.read_string_list("admin_groups", admin_groups)) {
    const auto bad = std::find_if_not(admin_groups.begin(), admin_groups.end(), valid_group_name);
    if (bad != admin_groups.end()) {
      section.fail_at("admin_groups", *section.get("admin_groups"), "not a valid group name: " + in_quotes(*bad));
    } else {
      config.admin_groups = std::move(admin_groups);
    }
  }

  std::string level;
  if (section.read_string("log_level", level)) {
    if (auto parsed = log_level_from_name(level)) {
      config.log_level = *parsed;
    } else {
      section.fail_at("log_level", *section.get("log_level"),
                      "must be one of error, warning, notice, info, debug; got " + in_quotes(level));
    }
  }

  section.read_int("max_clients", 1, 65536, config.max_clients);
  section.read_int("max_clients_per_uid", 0, 65536, config.max_clients_per_uid);
  section.read_int("admin_reserved_clients", 0, 65535, config.admin_reserved_clients);
  // Non-admins must have at least one slot, or the socket serves no client.
  // Left unset, the reserve shrinks to fit a small max_clients.
  if (section.get("admin_reserved_clients") == nullptr) {
    config.admin_reserved_clients = std::min(config.admin_reserved_clients, config.max_clients - 1);
  } else if (config.admin_reserved_clients >= config.max_clients) {
    section.fail_at("admin_reserved_clients", *section.get("admin_reserved_clients"),
                    "must be less than max_clients (" + std::to_string(config.max_clients) + "), got " +
                        std::to_string(config.admin_reserved_clients));
  }
  section.read_int("max_regions_per_client", 1, 1000000, config.max_regions_per_client);
  section.read_int("watchdog_divisor", 2, 10, config.watchdog_divisor);
  section.read_int("busy_poll_us", 0, 10000, config.busy_poll_us);
  section.reject_unknown_keys();
}

void parse_pool(Section section, Config& config) {
  section.read_size("max_region_size", 1, config.max_region_size);
  section.read_size("gpu_host_bytes_per_uid", 0, config.gpu_host_bytes_per_uid);
  section.reject_unknown_keys();
}

void parse_numa(Section section, Config& config) {
  section.read_bool("enabled", config.numa_enabled);
  section.read_int("capacity_percent", 1, 100, config.numa_capacity_percent);

  std::vector<int> nodes;
  std::vector<const toml::node*> node_at;
  if (section.read_int_list("exclude_nodes", 0, kMaxNumaNode, nodes, &node_at)) {
    std::set<int> seen;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!seen.insert(nodes[i]).second) {
        section.fail_at("exclude_nodes", *node_at[i], "node " + std::to_string(nodes[i]) + " is listed twice");
      }
    }
    config.numa_exclude_nodes = std::move(nodes);
  }

  std::string root;
  if (section.read_path("sysfs_root", false, root)) config.sysfs_root = root;
  section.reject_unknown_keys();
}

void parse_tier(Section section, EmulatedTierConfig& tier) {
  section.require("name");
  std::string name;
  if (section.read_string("name", name)) {
    if (!valid_tier_name(name)) {
      section.fail_at("name", *section.get("name"),
                      "must be 1 to 32 characters from a-z, 0-9, '_' and '-', got " + in_quotes(name));
    }
    tier.name = name;
  }

  section.require("capacity");
  if (section.read_size("capacity", 1, tier.capacity) && tier.capacity > kMaxTierCapacity) {
    section.fail_at("capacity", *section.get("capacity"),
                    "must be at most 1 PiB, got " + std::to_string(tier.capacity) + " bytes (a unit typo?)");
  }

  std::string backing;
  if (section.read_string("backing", backing)) {
    if (backing == "memfd") {
      tier.backing = EmulatedBacking::kMemfd;
    } else if (backing == "hugetlbfs") {
      tier.backing = EmulatedBacking::kHugetlbfs;
    } else {
      section.fail_at("backing", *section.get("backing"),
                      "must be \"memfd\" or \"hugetlbfs\", got " + in_quotes(backing));
    }
  }

  const bool has_path = section.read_path("hugetlbfs_path", false, tier.hugetlbfs_path);
  if (tier.backing == EmulatedBacking::kHugetlbfs && section.get("hugetlbfs_path") == nullptr) {
    section.fail_here("hugetlbfs_path", "required when backing = \"hugetlbfs\" (the hugetlbfs mount to use)");
  } else if (tier.backing == EmulatedBacking::kMemfd && has_path) {
    section.fail_at("hugetlbfs_path", *section.get("hugetlbfs_path"),
                    "only meaningful with backing = \"hugetlbfs\"");
  }

  section.read_int("numa_node", -1, kMaxNumaNode, tier.numa_node);
  section.read_int("latency_ns", 1, 10000000, tier.latency_ns);
  section.read_int("bandwidth_mbps", 1, 10000000, tier.bandwidth_mbps);
  section.reject_unknown_keys();
}

void parse_tiers(const toml::array& array, Problems& problems, Config& config) {
  std::map<std::string, uint32_t> first_line;
  size_t index = 0;
  for (const toml::node& element : array) {
    const std::string path = "emulated_tier[" + std::to_string(index++) + "]";
    const toml::table& table = *element.as_table();
    EmulatedTierConfig tier;
    parse_tier(Section(table, path, problems), tier);
    if (!tier.name.empty()) {
      const toml::node* name = table.get("name");
      const uint32_t line = name->source().begin.line;
      auto [it, inserted] = first_line.emplace(tier.name, line);
      if (!inserted) {
        problems.report(name->source(), path + ".name",
                        "duplicate tier name " + in_quotes(tier.name) + " (first declared on line " +
                            std::to_string(it->second) + ")");
      }
    }
    config.emulated_tiers.push_back(std::move(tier));
  }
}

void parse_quota_rule(Section section, QuotaRule& rule) {
  section.require("uid");
  section.read_int("uid", 0, kMaxUid, rule.uid);
  rule.tier = "*";
  std::string tier;
  if (section.read_string("tier", tier)) {
    if (tier != "*" && !valid_tier_name(tier)) {
      section.fail_at("tier", *section.get("tier"), "must be a tier name or \"*\", got " + in_quotes(tier));
    }
    rule.tier = tier;
  }
  section.require("bytes");
  section.read_size("bytes", 0, rule.bytes);
  section.reject_unknown_keys();
}

void parse_quota(Section section, Problems& problems, Config& config) {
  section.read_size("default_bytes", 0, config.quota_default_bytes);
  if (const toml::array* users = section.read_table_array("user")) {
    std::map<std::pair<uint32_t, std::string>, uint32_t> first_line;
    size_t index = 0;
    for (const toml::node& element : *users) {
      const std::string path = "quota.user[" + std::to_string(index++) + "]";
      QuotaRule rule;
      parse_quota_rule(Section(*element.as_table(), path, problems), rule);
      const uint32_t line = element.source().begin.line;
      auto [it, inserted] = first_line.emplace(std::make_pair(rule.uid, rule.tier), line);
      if (!inserted) {
        problems.report(element.source(), path,
                        "a second rule for uid " + std::to_string(rule.uid) + " and tier " + in_quotes(rule.tier) +
                            " (first on line " + std::to_string(it->second) + ")");
      }
      config.quota_rules.push_back(std::move(rule));
    }
  }
  section.reject_unknown_keys();
}

void parse_ckpt(Section section, Config& config) {
  section.read_int("restore_timeout_ms", 100, 3'600'000, config.ckpt_restore_timeout_ms);
  section.reject_unknown_keys();
}

void parse_metrics(Section section, Config& config) {
  section.read_int("prometheus_port", 0, 65535, config.metrics_port);
  std::string address;
  if (section.read_string("prometheus_address", address)) {
    in_addr v4;
    in6_addr v6;
    if (::inet_pton(AF_INET, address.c_str(), &v4) != 1 && ::inet_pton(AF_INET6, address.c_str(), &v6) != 1) {
      section.fail_at("prometheus_address", *section.get("prometheus_address"),
                      "not an IPv4 or IPv6 address literal: " + in_quotes(address));
    } else {
      config.metrics_address = address;
    }
  }
  section.reject_unknown_keys();
}

// A TOML scalar in the form the knob validator reads ("true", "12", "0.9",
// "hpt"); nullopt for tables, arrays and dates.
std::optional<std::string> knob_text(const toml::node& node) {
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", f->get());
    return std::string(buf);
  }
  if (const auto* t = node.as_string()) return t->get();
  return std::nullopt;
}

// Two optional tier names a section pairs (fast and slow, DRAM and CXL):
// each must be a tier name, and the second must not repeat the first.
void read_tier_pair(Section& section, std::string_view first_key, std::string& first, std::string_view second_key,
                    std::string& second) {
  for (auto [key, out] : {std::pair<std::string_view, std::string*>{first_key, &first}, {second_key, &second}}) {
    std::string name;
    if (!section.read_string(key, name)) continue;
    if (!valid_tier_name(name)) {
      section.fail_at(key, *section.get(key), "must be a tier name (a-z, 0-9, '_', '-'), got " + in_quotes(name));
      continue;
    }
    *out = name;
  }
  if (!first.empty() && first == second) {
    section.fail_at(second_key, *section.get(second_key), "must differ from " + std::string(first_key));
  }
}

constexpr std::string_view kTieringSources[] = {"client", "damon", "perf"};

void parse_tiering(Section section, Config& config) {
  TieringConfig& t = config.tiering;
  bool enabled = false;
  if (section.read_bool("enabled", enabled)) t.enabled = enabled;
  section.read_int("epoch_ms", 10, 600000, t.epoch_ms);
  read_tier_pair(section, "fast_tier", t.fast_tier, "slow_tier", t.slow_tier);
  std::vector<std::string> sources;
  if (section.read_string_list("sources", sources)) {
    std::set<std::string> seen;
    for (const auto& name : sources) {
      if (std::find(std::begin(kTieringSources), std::end(kTieringSources), name) == std::end(kTieringSources)) {
        section.fail_at("sources", *section.get("sources"),
                        "unknown access source " + in_quotes(name) + " (known: client, damon, perf)");
      } else if (!seen.insert(name).second) {
        section.fail_at("sources", *section.get("sources"), in_quotes(name) + " is listed twice");
      }
    }
    t.sources = std::move(sources);
  }
  section.read_path("damon_sysfs_root", false, t.damon_sysfs_root);
  section.read_int("damon_kdamond", 0, 1023, t.damon_kdamond);
  // The manager's own validator checks each value and the combination, so
  // the file, SIGHUP and `cxlpoolctl tiering set` share one set of rules.
  std::vector<std::pair<std::string, std::string>> knobs;
  std::vector<const toml::node*> nodes;  // one per knob
  for (const std::string& key : tiering::M5Config::keys()) {
    const toml::node* node = section.get(key);
    if (node == nullptr) continue;
    auto text = knob_text(*node);
    if (!text) {
      section.wrong_type(key, *node, "a boolean, number or string");
      continue;
    }
    knobs.emplace_back(key, *text);
    nodes.push_back(node);
  }
  tiering::M5Config m5;
  for (size_t i : set_m5_knobs(m5, knobs)) {
    const auto& [key, text] = knobs[i];
    std::string message = m5.set(key, text).error().message;
    const std::string own_prefix = "tiering." + key + ": ";
    if (message.rfind(own_prefix, 0) == 0) message.erase(0, own_prefix.size());
    section.fail_at(key, *nodes[i], message);
  }
  for (const std::string& key : tiering::M5Config::keys()) {
    if (section.get(key) == nullptr) continue;
    if (auto value = m5.get(key)) t.knobs.emplace_back(key, *value);
  }
  section.reject_unknown_keys();
}

// The SSD log's limits (docs/kvstore-format.md): regions are whole 4 KiB
// blocks, and an entry needs a header block and a tail block beside its
// payload.
constexpr uint64_t kKvBlock = 4096;
constexpr uint64_t kKvMinRegionBytes = 2 * kKvBlock;
constexpr uint64_t kKvMaxRegionBytes = 1ull << 30;
// SSD I/O threads: beyond this many, threads would outnumber the queues
// any device has to fill.
constexpr int64_t kKvMaxSsdWorkers = 64;
constexpr int64_t kKvMaxCommitWorkers = 64;  // kvcache::kMaxCommitWorkers
constexpr uint64_t kKvMaxSlotBytes = kKvMaxRegionBytes - 2 * kKvBlock;

template <typename Enum, size_t N>
void read_choice(Section& section, std::string_view key, const std::pair<std::string_view, Enum> (&names)[N],
                 Enum& out) {
  std::string text;
  if (!section.read_string(key, text)) return;
  std::string valid;
  for (const auto& [name, value] : names) {
    if (text == name) {
      out = value;
      return;
    }
    valid += (valid.empty() ? "\"" : ", \"") + std::string(name) + "\"";
  }
  section.fail_at(key, *section.get(key), "must be one of " + valid + "; got " + in_quotes(text));
}

void parse_kvstore(Section section, Config& config) {
  KvStoreSection& kv = config.kvstore;
  section.read_bool("enabled", kv.enabled);
  read_tier_pair(section, "dram_tier", kv.dram_tier, "cxl_tier", kv.cxl_tier);
  section.read_size("dram_bytes", 1, kv.dram_bytes);
  section.read_size("cxl_bytes", 0, kv.cxl_bytes);
  if (section.read_size("slot_bytes", 1, kv.slot_bytes)) {
    if (kv.slot_bytes % kKvBlock != 0 || kv.slot_bytes > kKvMaxSlotBytes) {
      section.fail_at("slot_bytes", *section.get("slot_bytes"),
                      "must be a multiple of 4096 no larger than " + std::to_string(kKvMaxSlotBytes) + ", got " +
                          std::to_string(kv.slot_bytes));
    }
  }
  static constexpr std::pair<std::string_view, KvEviction> kEvictions[] = {{"lru", KvEviction::kLru},
                                                                           {"s3fifo", KvEviction::kS3Fifo}};
  read_choice(section, "eviction", kEvictions, kv.eviction);
  // The admission sketch counts sightings in 8-bit saturating counters.
  section.read_int("admission_threshold", 0, 255, kv.admission_threshold);
  section.read_path("ssd_path", true, kv.ssd_path);
  section.read_path("view_dir", true, kv.view_dir);
  const bool has_ssd_bytes = section.read_size("ssd_bytes", 1, kv.ssd_bytes);
  if (section.read_size("ssd_region_bytes", 1, kv.ssd_region_bytes)) {
    if (kv.ssd_region_bytes % kKvBlock != 0 || kv.ssd_region_bytes < kKvMinRegionBytes ||
        kv.ssd_region_bytes > kKvMaxRegionBytes) {
      section.fail_at("ssd_region_bytes", *section.get("ssd_region_bytes"),
                      "must be a multiple of 4096 between " + std::to_string(kKvMinRegionBytes) + " and " +
                          std::to_string(kKvMaxRegionBytes) + ", got " + std::to_string(kv.ssd_region_bytes));
    }
  }
  static constexpr std::pair<std::string_view, KvSsdSync> kSyncs[] = {{"per-region", KvSsdSync::kPerRegion},
                                                                      {"per-commit", KvSsdSync::kPerCommit}};
  read_choice(section, "ssd_sync", kSyncs, kv.ssd_sync);
  static constexpr std::pair<std::string_view, KvSsdEngine> kEngines[] = {
      {"auto", KvSsdEngine::kAuto}, {"io_uring", KvSsdEngine::kIoUring}, {"posix", KvSsdEngine::kPosix}};
  read_choice(section, "ssd_engine", kEngines, kv.ssd_engine);
  section.read_int("ssd_workers", 0, kKvMaxSsdWorkers, kv.ssd_workers);
  uint32_t read_staging = 0;
  if (section.read_int("ssd_read_staging", 0, 256, read_staging)) kv.ssd_read_staging = read_staging;
  uint32_t commit_workers = 0;
  if (section.read_int("commit_workers", 0, kKvMaxCommitWorkers, commit_workers)) kv.commit_workers = commit_workers;
  if (section.read_size("ssd_lend_min_bytes", 0, kv.ssd_lend_min_bytes) && kv.ssd_lend_min_bytes % kKvBlock != 0) {
    section.fail_at("ssd_lend_min_bytes", *section.get("ssd_lend_min_bytes"),
                    "must be 0 (always copy) or a multiple of 4096, got " + std::to_string(kv.ssd_lend_min_bytes));
  }
  section.read_size("copy_behind_min_bytes", 0, kv.copy_behind_min_bytes);
  section.read_size("put_window_bytes", 1, kv.put_window_bytes);
  uint64_t quota = 0;
  if (section.read_size("client_quota_bytes", 0, quota)) kv.client_quota_bytes = quota;
  section.read_int("lease_timeout_ms", 0, 86400000, kv.lease_timeout_ms);
  section.read_bool("ssd_format_foreign", kv.ssd_format_foreign);
  section.read_int("max_leases_per_client", 1, 1 << 24, kv.max_leases_per_client);
  section.read_int("index_capacity", 1, int64_t{1} << 32, kv.index_capacity);
  section.read_int("dram_bandwidth_mbps", 1, 10000000, kv.dram_bandwidth_mbps);
  section.read_int("dram_latency_ns", 1, 100000000, kv.dram_latency_ns);
  section.read_int("cxl_bandwidth_mbps", 0, 10000000, kv.cxl_bandwidth_mbps);
  section.read_int("cxl_latency_ns", 0, 100000000, kv.cxl_latency_ns);
  section.read_int("ssd_bandwidth_mbps", 1, 10000000, kv.ssd_bandwidth_mbps);
  section.read_int("ssd_latency_ns", 1, 100000000, kv.ssd_latency_ns);
  section.reject_unknown_keys();

  // Sizes checked against each other, each at its own line when the file
  // sets it (the table's header otherwise: the default is what conflicts).
  auto fail_key = [&](std::string_view key, const std::string& what) {
    if (const toml::node* node = section.get(key)) {
      section.fail_at(key, *node, what);
    } else {
      section.fail_here(key, what + " (the default)");
    }
  };
  const std::string slot = "slot_bytes (" + std::to_string(kv.slot_bytes) + ")";
  if (kv.dram_bytes < kv.slot_bytes) fail_key("dram_bytes", "must hold at least one slot of " + slot);
  if (kv.cxl_bytes != 0 && kv.cxl_bytes < kv.slot_bytes) {
    fail_key("cxl_bytes", "must be 0 (no CXL arena) or hold at least one slot of " + slot);
  }
  if (kv.put_window_bytes < kv.slot_bytes) fail_key("put_window_bytes", "must hold at least one slot of " + slot);
  if (kv.ssd_format_foreign && kv.ssd_path.empty()) {
    section.fail_at("ssd_format_foreign", *section.get("ssd_format_foreign"), "only meaningful with ssd_path");
  }
  if (has_ssd_bytes && kv.ssd_bytes > kMaxTierCapacity) {
    section.fail_at("ssd_bytes", *section.get("ssd_bytes"),
                    "must be at most 1 PiB, got " + std::to_string(kv.ssd_bytes) + " bytes (a unit typo?)");
  }
  for (auto [key, bytes] : {std::pair<std::string_view, uint64_t>{"dram_bytes", kv.dram_bytes},
                            {"cxl_bytes", kv.cxl_bytes}}) {
    if (bytes > kMaxTierCapacity) {
      section.fail_at(key, *section.get(key),
                      "must be at most 1 PiB, got " + std::to_string(bytes) + " bytes (a unit typo?)");
    }
  }
  if (has_ssd_bytes && kv.ssd_path.empty()) {
    section.fail_at("ssd_bytes", *section.get("ssd_bytes"), "only meaningful with ssd_path");
  }
  if (!kv.ssd_path.empty()) {
    if (kv.ssd_region_bytes < kv.slot_bytes + 2 * kKvBlock) {
      fail_key("ssd_region_bytes", "must hold one chunk of " + slot + " plus 8192 bytes of entry header and tail");
    }
    if (has_ssd_bytes && kv.ssd_bytes < 2 * kv.ssd_region_bytes) {
      fail_key("ssd_bytes", "must hold at least two regions of ssd_region_bytes (" +
                                std::to_string(kv.ssd_region_bytes) + ")");
    }
  }
}

void parse_devpool(Section section, Config& config) {
  DevpoolSection& d = config.devpool;
  section.read_bool("enabled", d.enabled);
  section.read_path("pod_path", true, d.pod_path);
  if (section.read_int("link_slots", 2, 8192, d.link_slots) && d.link_slots % 2 != 0) {
    section.fail_at("link_slots", *section.get("link_slots"),
                    "must be even (each attachment takes two slots), got " + std::to_string(d.link_slots));
  }
  section.read_int("max_devices", 1, 4096, d.max_devices);
  if (section.read_size("link_buffer_bytes", 4096, d.link_buffer_bytes) &&
      (d.link_buffer_bytes % 4096 != 0 || d.link_buffer_bytes > (1ull << 30))) {
    section.fail_at("link_buffer_bytes", *section.get("link_buffer_bytes"),
                    "must be a multiple of 4096 no larger than 1 GiB, got " + std::to_string(d.link_buffer_bytes));
  }
  static constexpr std::pair<std::string_view, DevpoolCoherence> kCoherences[] = {
      {"coherent", DevpoolCoherence::kCoherent}, {"non-coherent", DevpoolCoherence::kNonCoherent}};
  read_choice(section, "coherence", kCoherences, d.coherence);
  section.read_int("lease_ms", 10, 600000, d.lease_ms);
  section.read_int("telemetry_ms", 1, 60000, d.telemetry_ms);
  section.read_int("max_devices_per_uid", 0, 4096, d.max_devices_per_uid);
  section.read_int("max_attachments_per_uid", 0, 4096, d.max_attachments_per_uid);
  section.reject_unknown_keys();
  // A backend heartbeats once per telemetry period: a lease shorter than
  // that would expire between two of them.
  if (d.telemetry_ms >= d.lease_ms) {
    const char* key = section.get("telemetry_ms") != nullptr ? "telemetry_ms" : "lease_ms";
    if (const toml::node* node = section.get(key)) {
      section.fail_at(key, *node, "telemetry_ms (" + std::to_string(d.telemetry_ms) + ") must be below lease_ms (" +
                                      std::to_string(d.lease_ms) + ")");
    }
  }
}

}  // namespace

namespace {

// "http://HOST:PORT": the etcd v3 JSON gateway without TLS (a pod's etcd
// lives on its management network); HOST a name, an IPv4 address or [IPv6].
bool valid_etcd_endpoint(std::string_view url) {
  static constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return false;
  url.remove_prefix(kScheme.size());
  const size_t colon = url.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view host = url.substr(0, colon);
  const std::string_view port = url.substr(colon + 1);
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), digit)) return false;
  const int port_number = std::stoi(std::string(port));
  if (port_number < 1 || port_number > 65535) return false;
  if (host.front() == '[') return host.size() > 2 && host.back() == ']';
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
  });
}

bool valid_ip_literal(const std::string& text) {
  in6_addr buf{};
  return ::inet_pton(AF_INET, text.c_str(), &buf) == 1 || ::inet_pton(AF_INET6, text.c_str(), &buf) == 1;
}

void parse_pod(Section section, Config& config) {
  PodSection& p = config.pod;
  static constexpr std::pair<std::string_view, PodStateKind> kStates[] = {{"embedded", PodStateKind::kEmbedded},
                                                                          {"etcd", PodStateKind::kEtcd}};
  read_choice(section, "state", kStates, p.state);
  if (section.read_string("name", p.name) && !valid_pod_name(p.name)) {
    section.fail_at("name", *section.get("name"), "must be 1..64 bytes of [A-Za-z0-9._-] not starting with '.'");
  }
  if (section.read_string("host", p.host) && !p.host.empty() && !valid_pod_name(p.host)) {
    section.fail_at("host", *section.get("host"), "must be 1..64 bytes of [A-Za-z0-9._-] not starting with '.'");
  }
  if (section.read_string_list("etcd_endpoints", p.etcd_endpoints)) {
    const auto bad = std::find_if_not(p.etcd_endpoints.begin(), p.etcd_endpoints.end(), valid_etcd_endpoint);
    if (bad != p.etcd_endpoints.end()) {
      section.fail_at("etcd_endpoints", *section.get("etcd_endpoints"),
                      "not an endpoint of the form http://HOST:PORT: " + in_quotes(*bad));
    } else if (p.etcd_endpoints.size() > 16) {
      section.fail_at("etcd_endpoints", *section.get("etcd_endpoints"), "at most 16 endpoints");
    }
  }
  section.read_int("lease_ttl_s", 2, 300, p.lease_ttl_s);
  section.read_int("etcd_timeout_ms", 50, 60000, p.etcd_timeout_ms);
  static constexpr std::string_view kProviders[] = {"tcp;ofi_rxm", "shm", "verbs;ofi_rxm", "efa", "tcp"};
  if (section.read_string("provider", p.provider) &&
      std::find(std::begin(kProviders), std::end(kProviders), p.provider) == std::end(kProviders)) {
    section.fail_at("provider", *section.get("provider"),
                    "must be one of \"tcp;ofi_rxm\", \"shm\", \"verbs;ofi_rxm\", \"efa\", \"tcp\", got " +
                        in_quotes(p.provider));
  }
  if (section.read_string("address", p.address) && !p.address.empty() &&
      !valid_etcd_endpoint("http://" + p.address)) {
    section.fail_at("address", *section.get("address"), "must be HOST:PORT, got " + in_quotes(p.address));
  }
  if (section.read_string_list("rails", p.rails)) {
    const auto bad = std::find_if_not(p.rails.begin(), p.rails.end(), valid_ip_literal);
    if (bad != p.rails.end()) {
      section.fail_at("rails", *section.get("rails"), "not an IPv4 or IPv6 address: " + in_quotes(*bad));
    } else if (p.rails.size() > 8) {
      section.fail_at("rails", *section.get("rails"), "at most 8 rails");
    }
  }
  section.read_bool("shm", p.shm);
  section.read_int("replica_num", 1, 8, p.replica_num);
  if (section.read_string("secret_file", p.secret_file) && !p.secret_file.empty() &&
      !std::filesystem::path(p.secret_file).is_absolute()) {
    section.fail_at("secret_file", *section.get("secret_file"), "must be an absolute path, got " + in_quotes(p.secret_file));
  }
  if (section.read_string("etcd_user", p.etcd_user) && !p.etcd_user.empty() &&
      (p.etcd_user.size() > 128 || !std::all_of(p.etcd_user.begin(), p.etcd_user.end(), [](char c) {
        return std::isgraph(static_cast<unsigned char>(c));
      }))) {
    section.fail_at("etcd_user", *section.get("etcd_user"), "must be 1..128 printable bytes without spaces");
  }
  if (section.read_string("etcd_password_file", p.etcd_password_file) && !p.etcd_password_file.empty() &&
      !std::filesystem::path(p.etcd_password_file).is_absolute()) {
    section.fail_at("etcd_password_file", *section.get("etcd_password_file"),
                    "must be an absolute path, got " + in_quotes(p.etcd_password_file));
  }
  section.reject_unknown_keys();
  if (!p.etcd_user.empty() && p.etcd_password_file.empty()) {
    section.fail_here("etcd_password_file", "etcd_user is set: give the file of its password");
  }
  if (p.etcd_user.empty() && !p.etcd_password_file.empty()) {
    section.fail_here("etcd_user", "etcd_password_file is set: give the user it is the password of");
  }
  if (p.state == PodStateKind::kEtcd && p.etcd_endpoints.empty()) {
    section.fail_here("etcd_endpoints", "state = \"etcd\" needs at least one endpoint");
  }
}

Result<Config> parse_document(const toml::table& root, const std::string& source_name) {
  Config config;  // struct defaults; a file declares its own emulated tiers
  config.source = source_name;
  Problems problems(source_name);
  Section top(root, "", problems);

  if (const auto* table = top.read_table("daemon")) parse_daemon(Section(*table, "daemon", problems), config);
  if (const auto* table = top.read_table("pool")) parse_pool(Section(*table, "pool", problems), config);
  if (const auto* table = top.read_table("numa")) parse_numa(Section(*table, "numa", problems), config);
  if (const auto* array = top.read_table_array("emulated_tier")) parse_tiers(*array, problems, config);
  if (const auto* table = top.read_table("quota")) parse_quota(Section(*table, "quota", problems), problems, config);
  if (const auto* table = top.read_table("metrics")) parse_metrics(Section(*table, "metrics", problems), config);
  if (const auto* table = top.read_table("ckpt")) parse_ckpt(Section(*table, "ckpt", problems), config);
  if (const auto* table = top.read_table("tiering")) parse_tiering(Section(*table, "tiering", problems), config);
  if (const auto* table = top.read_table("kvstore")) parse_kvstore(Section(*table, "kvstore", problems), config);
  if (const auto* table = top.read_table("devpool")) parse_devpool(Section(*table, "devpool", problems), config);
  if (const auto* table = top.read_table("pod")) parse_pod(Section(*table, "pod", problems), config);
  top.reject_unknown_keys();

  if (!problems.any() && !config.numa_enabled && config.emulated_tiers.empty()) {
    const toml::node* enabled = root.at_path("numa.enabled").node();
    problems.report(enabled != nullptr ? enabled->source() : root.source(), "numa.enabled",
                    "NUMA tiers are disabled and no [[emulated_tier]] is declared: the pool would have no memory");
  }
  if (problems.any()) return tl::unexpected(problems.take());
  return config;
}

bool same_tier(const EmulatedTierConfig& a, const EmulatedTierConfig& b) {
  return a.name == b.name && a.capacity == b.capacity && a.backing == b.backing &&
         a.hugetlbfs_path == b.hugetlbfs_path && a.numa_node == b.numa_node && a.latency_ns == b.latency_ns &&
         a.bandwidth_mbps == b.bandwidth_mbps;
}

}  // namespace

Config embedded_default_config() {
  Config config;
  config.numa_enabled = true;
  config.numa_capacity_percent = 50;
  EmulatedTierConfig slow;
  slow.name = "emu-slow";
  slow.capacity = kGiB;
  slow.backing = EmulatedBacking::kMemfd;
  slow.latency_ns = 250;
  slow.bandwidth_mbps = 20000;
  config.emulated_tiers.push_back(std::move(slow));
  return config;
}

Result<Config> parse_config(std::string_view toml_text, const std::string& source_name) {
  try {
    const toml::table root = toml::parse(toml_text, std::string_view(source_name));
    return parse_document(root, source_name);
  } catch (const toml::parse_error& error) {
    const auto& where = error.source().begin;
    return fail(EINVAL, source_name + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                            ": " + std::string(error.description()));
  } catch (const std::bad_alloc&) {
    return fail(ENOMEM, source_name + ": out of memory while parsing");
  }
}

Result<Config> load_config_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return fail_errno("config file " + name);
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail_errno("reading config file " + name);
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
    if (text.size() > kMaxConfigBytes) {
      return fail(EFBIG, "config file " + name + ": larger than " + format_size(kMaxConfigBytes) +
                             "; is this the right file?");
    }
  }
  auto config = parse_config(text, name);
  if (config) config->source = name;
  return config;
}

std::vector<std::string> changes_needing_restart(const Config& running, const Config& next) {
  std::vector<std::string> keys;
  auto check = [&keys](bool changed, const char* key) {
    if (changed) keys.emplace_back(key);
  };
  check(running.state_dir != next.state_dir, "daemon.state_dir");
  check(running.socket_mode != next.socket_mode, "daemon.socket_mode");
  check(running.socket_group != next.socket_group, "daemon.socket_group");
  // The watchdog timer is armed once from WATCHDOG_USEC at start.
  check(running.watchdog_divisor != next.watchdog_divisor, "daemon.watchdog_divisor");
  check(running.numa_enabled != next.numa_enabled, "numa.enabled");
  check(running.numa_capacity_percent != next.numa_capacity_percent, "numa.capacity_percent");
  check(running.numa_exclude_nodes != next.numa_exclude_nodes, "numa.exclude_nodes");
  check(running.sysfs_root != next.sysfs_root, "numa.sysfs_root");
  check(!std::equal(running.emulated_tiers.begin(), running.emulated_tiers.end(), next.emulated_tiers.begin(),
                    next.emulated_tiers.end(), same_tier),
        "emulated_tier");
  check(running.metrics_port != next.metrics_port, "metrics.prometheus_port");
  check(running.ckpt_restore_timeout_ms != next.ckpt_restore_timeout_ms, "ckpt.restore_timeout_ms");
  check(running.metrics_address != next.metrics_address, "metrics.prometheus_address");
  check(running.tiering.fast_tier != next.tiering.fast_tier, "tiering.fast_tier");
  check(running.tiering.slow_tier != next.tiering.slow_tier, "tiering.slow_tier");
  check(running.tiering.sources != next.tiering.sources, "tiering.sources");
  // The KV store's arenas, SSD log and limits are set up once.
  const KvStoreSection& a = running.kvstore;
  const KvStoreSection& b = next.kvstore;
  check(a.enabled != b.enabled, "kvstore.enabled");
  check(a.dram_tier != b.dram_tier, "kvstore.dram_tier");
  check(a.cxl_tier != b.cxl_tier, "kvstore.cxl_tier");
  check(a.dram_bytes != b.dram_bytes, "kvstore.dram_bytes");
  check(a.cxl_bytes != b.cxl_bytes, "kvstore.cxl_bytes");
  check(a.slot_bytes != b.slot_bytes, "kvstore.slot_bytes");
  check(a.eviction != b.eviction, "kvstore.eviction");
  check(a.admission_threshold != b.admission_threshold, "kvstore.admission_threshold");
  check(a.ssd_path != b.ssd_path, "kvstore.ssd_path");
  check(a.view_dir != b.view_dir, "kvstore.view_dir");
  check(a.ssd_bytes != b.ssd_bytes, "kvstore.ssd_bytes");
  check(a.ssd_region_bytes != b.ssd_region_bytes, "kvstore.ssd_region_bytes");
  check(a.ssd_sync != b.ssd_sync, "kvstore.ssd_sync");
  check(a.ssd_lend_min_bytes != b.ssd_lend_min_bytes, "kvstore.ssd_lend_min_bytes");
  check(a.ssd_engine != b.ssd_engine, "kvstore.ssd_engine");
  check(a.ssd_workers != b.ssd_workers, "kvstore.ssd_workers");
  check(a.ssd_read_staging != b.ssd_read_staging, "kvstore.ssd_read_staging");
  check(a.commit_workers != b.commit_workers, "kvstore.commit_workers");
  check(a.copy_behind_min_bytes != b.copy_behind_min_bytes, "kvstore.copy_behind_min_bytes");
  check(a.put_window_bytes != b.put_window_bytes, "kvstore.put_window_bytes");
  check(a.client_quota_bytes != b.client_quota_bytes, "kvstore.client_quota_bytes");
  check(a.lease_timeout_ms != b.lease_timeout_ms, "kvstore.lease_timeout_ms");
  check(a.ssd_format_foreign != b.ssd_format_foreign, "kvstore.ssd_format_foreign");
  check(a.max_leases_per_client != b.max_leases_per_client, "kvstore.max_leases_per_client");
  check(a.index_capacity != b.index_capacity, "kvstore.index_capacity");
  check(a.dram_bandwidth_mbps != b.dram_bandwidth_mbps, "kvstore.dram_bandwidth_mbps");
  check(a.dram_latency_ns != b.dram_latency_ns, "kvstore.dram_latency_ns");
  check(a.cxl_bandwidth_mbps != b.cxl_bandwidth_mbps, "kvstore.cxl_bandwidth_mbps");
  check(a.cxl_latency_ns != b.cxl_latency_ns, "kvstore.cxl_latency_ns");
  check(a.ssd_bandwidth_mbps != b.ssd_bandwidth_mbps, "kvstore.ssd_bandwidth_mbps");
  check(a.ssd_latency_ns != b.ssd_latency_ns, "kvstore.ssd_latency_ns");
  // The pod region and its allocator are set up once.
  const DevpoolSection& p = running.devpool;
  const DevpoolSection& q = next.devpool;
  check(p.enabled != q.enabled, "devpool.enabled");
  check(p.pod_path != q.pod_path, "devpool.pod_path");
  check(p.link_slots != q.link_slots, "devpool.link_slots");
  check(p.max_devices != q.max_devices, "devpool.max_devices");
  check(p.link_buffer_bytes != q.link_buffer_bytes, "devpool.link_buffer_bytes");
  check(p.coherence != q.coherence, "devpool.coherence");
  check(p.lease_ms != q.lease_ms, "devpool.lease_ms");
  check(p.telemetry_ms != q.telemetry_ms, "devpool.telemetry_ms");
  check(p.max_devices_per_uid != q.max_devices_per_uid, "devpool.max_devices_per_uid");
  check(p.max_attachments_per_uid != q.max_attachments_per_uid, "devpool.max_attachments_per_uid");
  // Pod membership is set up once.
  check(running.pod.state != next.pod.state, "pod.state");
  check(running.pod.name != next.pod.name, "pod.name");
  check(running.pod.host != next.pod.host, "pod.host");
  check(running.pod.etcd_endpoints != next.pod.etcd_endpoints, "pod.etcd_endpoints");
  check(running.pod.lease_ttl_s != next.pod.lease_ttl_s, "pod.lease_ttl_s");
  check(running.pod.etcd_timeout_ms != next.pod.etcd_timeout_ms, "pod.etcd_timeout_ms");
  check(running.pod.provider != next.pod.provider, "pod.provider");
  check(running.pod.address != next.pod.address, "pod.address");
  check(running.pod.rails != next.pod.rails, "pod.rails");
  check(running.pod.shm != next.pod.shm, "pod.shm");
  check(running.pod.replica_num != next.pod.replica_num, "pod.replica_num");
  check(running.pod.secret_file != next.pod.secret_file, "pod.secret_file");
  check(running.pod.etcd_user != next.pod.etcd_user, "pod.etcd_user");
  check(running.pod.etcd_password_file != next.pod.etcd_password_file, "pod.etcd_password_file");
  return keys;
}

uint32_t kv_commit_workers(const KvStoreSection& kv, unsigned online_cpus) {
  if (kv.commit_workers) return *kv.commit_workers;
  // A large chunk's copy is cut into pieces that the workers and the loop
  // copy at once: on a 16-core host 2 or 4 workers took a lone writer's
  // 2 MiB puts from 0.5-0.6 of one core's memcpy to 0.7 at 1 in flight and
  // 1.0-1.2 at 8, and its SSD puts from 0.7 to 0.9 of fio; 8 were slower
  // than 4 (docs/perf.md). A quarter of the CPUs, 1 to 4, leaves the rest to
  // the clients.
  return std::clamp<uint32_t>(online_cpus / 4, 1, 4);
}

uint64_t kv_client_quota(const KvStoreSection& kv, uint64_t dram_arena_bytes) {
  if (kv.client_quota_bytes) return *kv.client_quota_bytes;
  const uint64_t slot = kv.slot_bytes == 0 ? 1 : kv.slot_bytes;
  return std::max(dram_arena_bytes / 4 / slot, uint64_t{1}) * slot;
}

LogLevel parse_log_level_or(std::string_view text, LogLevel fallback) {
  return log_level_from_name(text).value_or(fallback);
}

const char* log_level_name(LogLevel level) { return enum_name(kLogLevelNames, level, "unknown"); }

std::vector<size_t> set_m5_knobs(tiering::M5Config& m5, const std::vector<std::pair<std::string, std::string>>& knobs) {
  std::vector<size_t> pending(knobs.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  for (bool progress = true; progress && !pending.empty();) {
    progress = false;
    for (auto it = pending.begin(); it != pending.end();) {
      if (m5.set(knobs[*it].first, knobs[*it].second)) {
        progress = true;
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  return pending;
}

}  // namespace cxlpool::daemon
