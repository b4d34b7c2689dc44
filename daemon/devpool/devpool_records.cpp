// SPDX-License-Identifier: Apache-2.0
#include "devpool_records.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "../config.hpp"
#include "cxlpool/devpool/device_load.hpp"

namespace cxlpool::daemon {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxNameBytes = 64;  // device and host names, as in the control protocol
constexpr std::string_view kDevices = "devices/";
constexpr std::string_view kAttachments = "attachments/";
constexpr std::string_view kNextId = "next_id";

// A decimal without sign or leading zeros, at most `digits` digits.
std::optional<uint64_t> parse_decimal(std::string_view text, size_t digits) {
  if (text.empty() || text.size() > digits || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

// Reads the fields of one record, remembering the first that is wrong.
class Fields {
 public:
  explicit Fields(const json& doc) : doc_(doc) {}

  uint64_t number(const char* field, uint64_t min = 0, uint64_t max = UINT64_MAX) {
    const auto it = doc_.find(field);
    if (it == doc_.end() || !it->is_number_unsigned()) return wrong(field, "missing or not an unsigned integer"), 0;
    const uint64_t v = it->get<uint64_t>();
    if (v < min || v > max) {
      return wrong(field, "outside " + std::to_string(min) + ".." + std::to_string(max)), 0;
    }
    return v;
  }

  std::string text(const char* field, size_t max = kMaxNameBytes) {
    const auto it = doc_.find(field);
    if (it == doc_.end() || !it->is_string()) return wrong(field, "missing or not a string"), std::string();
    std::string v = it->get<std::string>();
    const bool printable =
        std::all_of(v.begin(), v.end(), [](char c) { return std::isprint(static_cast<unsigned char>(c)) != 0; });
    if (v.empty() || v.size() > max || !printable) {
      return wrong(field, "not 1.." + std::to_string(max) + " printable bytes"), std::string();
    }
    return v;
  }

  std::string member() {
    std::string m = text("member");
    if (error_.empty() && !valid_pod_name(m)) wrong("member", "not a member name");
    return m;
  }

  template <typename E, size_t N>
  E choice(const char* field, const E (&values)[N], const char* (*name)(E)) {
    const std::string v = text(field);
    for (E e : values) {
      if (v == name(e)) return e;
    }
    if (error_.empty()) wrong(field, "unknown value '" + v + "'");
    return values[0];
  }

  void wrong(const char* field, const std::string& why) {
    if (error_.empty()) error_ = std::string(field) + ": " + why;
  }
  Result<void> result() const {
    if (error_.empty()) return {};
    return fail(EINVAL, error_);
  }

 private:
  const json& doc_;
  std::string error_;
};

Result<json> parse_object(std::string_view text) {
  if (text.size() > kMaxDevpoolRecordBytes) return fail(EINVAL, "record larger than 4 KiB");
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail(EINVAL, "not a JSON object");
  return doc;
}

std::string mac_text(const std::array<uint8_t, 6>& mac) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  return buf;
}

std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  std::array<uint8_t, 6> mac{};
  for (size_t i = 0; i < 6; ++i) {
    if (i > 0 && text[3 * i - 1] != ':') return std::nullopt;
    uint8_t byte = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = text[3 * i + j];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return std::nullopt;
      byte = static_cast<uint8_t>(byte * 16 + digit);
    }
    mac[i] = byte;
  }
  return mac;
}

constexpr devpool::DeviceKind kKinds[] = {devpool::DeviceKind::kNet, devpool::DeviceKind::kBlk};
constexpr devpool::DeviceHealth kHealths[] = {devpool::DeviceHealth::kHealthy, devpool::DeviceHealth::kLinkDown,
                                              devpool::DeviceHealth::kDead};

}  // namespace

std::string devpool_prefix(std::string_view pod) { return "/cxlpool/pods/" + std::string(pod) + "/devpool/"; }

std::string devpool_key(std::string_view prefix, const DevpoolKey& key) {
  std::string out(prefix);
  switch (key.kind) {
    case DevpoolKeyKind::kDevice: return out.append(kDevices) + std::to_string(key.line);
    case DevpoolKeyKind::kAttachment: return out.append(kAttachments) + std::to_string(key.line);
    case DevpoolKeyKind::kNextId: return out.append(kNextId);
  }
  return out;
}

Result<DevpoolKey> parse_devpool_key(std::string_view key, std::string_view prefix) {
  if (!key.starts_with(prefix)) return fail(EINVAL, "not under " + std::string(prefix));
  std::string_view rest = key.substr(prefix.size());
  if (rest == kNextId) return DevpoolKey{DevpoolKeyKind::kNextId, 0};
  DevpoolKey out;
  if (rest.starts_with(kDevices)) {
    out.kind = DevpoolKeyKind::kDevice;
    rest.remove_prefix(kDevices.size());
  } else if (rest.starts_with(kAttachments)) {
    out.kind = DevpoolKeyKind::kAttachment;
    rest.remove_prefix(kAttachments.size());
  } else {
    return fail(EINVAL, "unknown key " + std::string(key));
  }
  const auto line = parse_decimal(rest, 9);
  if (!line) return fail(EINVAL, "key " + std::string(key) + ": the line is not a decimal number");
  out.line = static_cast<uint32_t>(*line);
  return out;
}

std::string encode_device_record(const devpool::Device& d, std::string_view member) {
  json doc{{"member", member},
              {"id", d.id},
              {"line", d.line},
              {"kind", devpool::device_kind_name(d.spec.kind)},
              {"name", d.spec.name},
              {"host", d.spec.host},
              {"capacity", d.spec.capacity},
              {"iops", d.spec.iops},
              {"bandwidth_bps", d.spec.bandwidth_bps},
              {"mac", mac_text(d.spec.mac)},
              {"health", devpool::device_health_name(d.health)},
              {"owner", d.owner},
              {"registered_ns", d.registered_ns}};
  // Only once its daemon wrote a load: a record without one reads as
  // before (and daemons that predate the field ignore it).
  if (d.load.samples != 0) {
    doc["load"] = json{{"utilization_ppm", d.load.utilization_ppm},
                       {"bytes_per_s", d.load.bytes_per_s},
                       {"ops_per_s", d.load.ops_per_s},
                       {"samples", d.load.samples}};
  }
  return doc.dump();
}

Result<DeviceRecord> decode_device_record(std::string_view text, uint32_t line, const DevpoolLimits& limits) {
  auto doc = parse_object(text);
  if (!doc) return tl::unexpected(doc.error());
  Fields f(*doc);
  DeviceRecord out;
  devpool::Device& d = out.device;
  out.member = f.member();
  d.id = static_cast<uint32_t>(f.number("id", 1, UINT32_MAX));
  d.line = static_cast<uint32_t>(f.number("line", 0, UINT32_MAX));
  if (d.line != line) f.wrong("line", "differs from the key's line " + std::to_string(line));
  if (d.line >= limits.max_devices) f.wrong("line", "past this daemon's max_devices");
  d.spec.kind = f.choice("kind", kKinds, devpool::device_kind_name);
  d.spec.name = f.text("name");
  d.spec.host = f.text("host");
  d.spec.capacity = f.number("capacity");
  d.spec.iops = f.number("iops");
  d.spec.bandwidth_bps = f.number("bandwidth_bps");
  const std::string mac = f.text("mac", 17);
  if (auto parsed = parse_mac(mac)) {
    d.spec.mac = *parsed;
    if (d.spec.kind == devpool::DeviceKind::kBlk && *parsed != std::array<uint8_t, 6>{}) {
      f.wrong("mac", "set for a block device");
    }
  } else {
    f.wrong("mac", "not six lower-case hex bytes");
  }
  d.health = f.choice("health", kHealths, devpool::device_health_name);
  d.owner = f.number("owner");
  d.registered_ns = f.number("registered_ns");
  // Optional (records written before load was shared have none); when
  // present, every figure is checked.
  if (const auto load = doc->find("load"); load != doc->end()) {
    if (!load->is_object()) {
      f.wrong("load", "not an object");
    } else {
      Fields lf(*load);
      d.load.utilization_ppm = static_cast<uint32_t>(lf.number("utilization_ppm", 0, devpool::kMaxUtilizationPpm));
      d.load.bytes_per_s = lf.number("bytes_per_s");
      d.load.ops_per_s = lf.number("ops_per_s");
      d.load.samples = static_cast<uint32_t>(lf.number("samples", 1, UINT32_MAX));
      if (load->size() != 4) lf.wrong("load", "fields other than utilization_ppm, bytes_per_s, ops_per_s, samples");
      if (auto ok = lf.result(); !ok) f.wrong("load", ok.error().message);
    }
  }
  if (auto ok = f.result(); !ok) return tl::unexpected(ok.error());
  return out;
}

std::string encode_attachment_record(const devpool::Attachment& a, std::string_view member) {
  json legs = json::array();
  for (const auto& leg : a.legs) legs.push_back(json{{"device", leg.device}, {"slot", leg.slot}});
  return json{{"member", member},
              {"id", a.id},
              {"line", a.line},
              {"host", a.host},
              {"kind", devpool::device_kind_name(a.kind)},
              {"legs", legs},
              {"active", a.active},
              {"generation", a.generation},
              {"owner", a.owner},
              {"attached_ns", a.attached_ns}}
      .dump();
}

Result<AttachmentRecord> decode_attachment_record(std::string_view text, uint32_t line,
                                                  const DevpoolLimits& limits) {
  auto doc = parse_object(text);
  if (!doc) return tl::unexpected(doc.error());
  Fields f(*doc);
  AttachmentRecord out;
  devpool::Attachment& a = out.attachment;
  out.member = f.member();
  a.id = static_cast<uint32_t>(f.number("id", 1, UINT32_MAX));
  a.line = static_cast<uint32_t>(f.number("line", 0, UINT32_MAX));
  if (a.line != line) f.wrong("line", "differs from the key's line " + std::to_string(line));
  if (a.line >= limits.max_attachments) f.wrong("line", "past this daemon's link_slots / 2");
  a.host = f.text("host");
  a.kind = f.choice("kind", kKinds, devpool::device_kind_name);
  const auto legs = doc->find("legs");
  if (legs == doc->end() || !legs->is_array() || legs->size() != 2) {
    f.wrong("legs", "not an array of two legs");
  } else {
    for (size_t i = 0; i < 2; ++i) {
      const json& leg = (*legs)[i];
      if (!leg.is_object()) {
        f.wrong("legs", "a leg is not an object");
        break;
      }
      Fields lf(leg);
      a.legs[i].device = static_cast<uint32_t>(lf.number("device", 0, UINT32_MAX - 1));
      a.legs[i].slot = static_cast<uint32_t>(lf.number("slot", 0, UINT32_MAX));
      if (auto ok = lf.result(); !ok) f.wrong("legs", ok.error().message);
      // The slots follow from the line: a record may not claim another line's.
      if (a.legs[i].slot != 2 * a.line + i) f.wrong("legs", "slot " + std::to_string(a.legs[i].slot) + " is not the line's");
    }
    if (a.legs[0].device != devpool::kNoDevice && a.legs[0].device == a.legs[1].device) {
      f.wrong("legs", "both legs on one device");
    }
  }
  a.active = static_cast<uint8_t>(f.number("active", 0, 1));
  a.generation = static_cast<uint32_t>(f.number("generation", 1, UINT32_MAX));
  a.owner = f.number("owner");
  a.attached_ns = f.number("attached_ns");
  if (auto ok = f.result(); !ok) return tl::unexpected(ok.error());
  return out;
}

std::string encode_next_id(uint32_t next) { return std::to_string(next); }

Result<uint32_t> decode_next_id(std::string_view text) {
  const auto v = parse_decimal(text, 10);
  if (!v || *v == 0 || *v > UINT32_MAX) return fail(EINVAL, "next_id: not a decimal 1..4294967295");
  return static_cast<uint32_t>(*v);
}

}  // namespace cxlpool::daemon
