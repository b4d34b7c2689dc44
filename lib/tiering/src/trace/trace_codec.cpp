// SPDX-License-Identifier: Apache-2.0
#include "trace_codec.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

namespace cxlpool::tiering {
namespace {

using trace_detail::TraceValidator;

void put_u16(std::byte* p, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
void put_u32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
void put_u64(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
std::uint64_t get_le(const std::byte* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint64_t>(p[i]);
  return v;
}

// FNV-1a over the header bytes before the checksum field.
std::uint32_t header_checksum(const std::byte* p) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < kTraceHeaderBytes - 4; ++i) {
    h ^= static_cast<std::uint32_t>(p[i]);
    h *= 16777619u;
  }
  return h;
}

constexpr std::size_t kOpOffset = 20;

std::string at(std::uint64_t index) { return "trace record " + std::to_string(index) + ": "; }

}  // namespace

namespace trace_detail {

void put_record(std::byte* out, const TraceRecord& record) {
  put_u64(out, record.timestamp_ns);
  put_u64(out + 8, record.address);
  put_u32(out + 16, record.size);
  out[kOpOffset] = static_cast<std::byte>(record.is_write ? 1 : 0);
  out[21] = out[22] = out[23] = std::byte{0};
}

Result<TraceRecord> get_record(const std::byte* in, std::uint64_t index) {
  const auto op = static_cast<unsigned>(in[kOpOffset]);
  if (op > 1) return fail(EBADMSG, at(index) + "unknown op " + std::to_string(op) + " (0 read, 1 write)");
  if (in[21] != std::byte{0} || in[22] != std::byte{0} || in[23] != std::byte{0}) {
    return fail(EBADMSG, at(index) + "nonzero reserved bytes");
  }
  TraceRecord r;
  r.timestamp_ns = get_le(in, 8);
  r.address = get_le(in + 8, 8);
  r.size = static_cast<std::uint32_t>(get_le(in + 16, 4));
  r.is_write = op == 1;
  return r;
}

Result<void> TraceValidator::check(const TraceRecord& record, std::uint64_t index) const {
  if (record.size == 0) return fail(code_, at(index) + "size 0");
  if (record.address > std::numeric_limits<std::uint64_t>::max() - record.size) {
    return fail(code_, at(index) + "address + size past 2^64");
  }
  if (count_ > 0 && record.timestamp_ns < last_ns_) {
    return fail(code_, at(index) + "timestamp " + std::to_string(record.timestamp_ns) +
                           " ns goes backwards (previous " + std::to_string(last_ns_) + " ns)");
  }
  return {};
}

void TraceValidator::add(const TraceRecord& record) {
  const std::uint64_t end = record.address + record.size;
  if (count_ == 0) {
    address_min_ = record.address;
    address_end_ = end;
    first_ns_ = record.timestamp_ns;
  } else {
    address_min_ = std::min(address_min_, record.address);
    address_end_ = std::max(address_end_, end);
  }
  last_ns_ = record.timestamp_ns;
  ++count_;
}

TraceHeader TraceValidator::summary(std::uint16_t flags) const {
  TraceHeader h;
  h.flags = flags;
  h.record_count = count_;
  h.address_min = address_min_;
  h.address_end = address_end_;
  h.first_timestamp_ns = first_ns_;
  h.last_timestamp_ns = last_ns_;
  return h;
}

Result<void> TraceValidator::check_summary(const TraceHeader& header) const {
  if (header.record_count != count_) {
    return fail(EBADMSG, "trace header: record count " + std::to_string(header.record_count) + ", file holds " +
                             std::to_string(count_));
  }
  TraceHeader expect = summary(header.flags);
  expect.version = header.version;
  if (header.address_min != expect.address_min || header.address_end != expect.address_end) {
    return fail(EBADMSG, "trace header: address range [" + std::to_string(header.address_min) + ", " +
                             std::to_string(header.address_end) + ") does not match the records' [" +
                             std::to_string(expect.address_min) + ", " + std::to_string(expect.address_end) + ")");
  }
  if (header.first_timestamp_ns != expect.first_timestamp_ns ||
      header.last_timestamp_ns != expect.last_timestamp_ns) {
    return fail(EBADMSG, "trace header: timestamps " + std::to_string(header.first_timestamp_ns) + ".." +
                             std::to_string(header.last_timestamp_ns) + " ns do not match the records' " +
                             std::to_string(expect.first_timestamp_ns) + ".." +
                             std::to_string(expect.last_timestamp_ns) + " ns");
  }
  return {};
}

}  // namespace trace_detail

std::array<std::byte, kTraceHeaderBytes> encode_trace_header(const TraceHeader& header) {
  std::array<std::byte, kTraceHeaderBytes> b{};
  std::memcpy(b.data(), kTraceMagic, sizeof kTraceMagic);
  put_u16(&b[8], header.version);
  put_u16(&b[10], static_cast<std::uint16_t>(kTraceHeaderBytes));
  put_u16(&b[12], static_cast<std::uint16_t>(kTraceRecordBytes));
  put_u16(&b[14], header.flags);
  put_u64(&b[16], header.record_count);
  put_u64(&b[24], header.address_min);
  put_u64(&b[32], header.address_end);
  put_u64(&b[40], header.first_timestamp_ns);
  put_u64(&b[48], header.last_timestamp_ns);
  put_u32(&b[60], header_checksum(b.data()));
  return b;
}

Result<TraceHeader> decode_trace_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kTraceHeaderBytes) {
    return fail(EBADMSG, "trace header: truncated (" + std::to_string(bytes.size()) + " of " +
                             std::to_string(kTraceHeaderBytes) + " bytes)");
  }
  const std::byte* p = bytes.data();
  if (std::memcmp(p, kTraceMagic, sizeof kTraceMagic) != 0) return fail(EBADMSG, "not a trace file (bad magic)");
  const auto checksum = static_cast<std::uint32_t>(get_le(p + 60, 4));
  if (checksum != header_checksum(p)) return fail(EBADMSG, "trace header: checksum mismatch");
  TraceHeader h;
  h.version = static_cast<std::uint16_t>(get_le(p + 8, 2));
  if (h.version != kTraceVersion) {
    return fail(ENOTSUP, "trace version " + std::to_string(h.version) + " not supported (this build reads " +
                             std::to_string(kTraceVersion) + ")");
  }
  const auto header_bytes = get_le(p + 10, 2);
  const auto record_bytes = get_le(p + 12, 2);
  if (header_bytes != kTraceHeaderBytes || record_bytes != kTraceRecordBytes) {
    return fail(ENOTSUP, "trace header: header/record size " + std::to_string(header_bytes) + "/" +
                             std::to_string(record_bytes) + ", expected " + std::to_string(kTraceHeaderBytes) +
                             "/" + std::to_string(kTraceRecordBytes));
  }
  h.flags = static_cast<std::uint16_t>(get_le(p + 14, 2));
  if ((h.flags & ~kTraceFlagComplete) != 0) {
    return fail(EBADMSG, "trace header: unknown flag bits " + std::to_string(h.flags & ~kTraceFlagComplete));
  }
  if (get_le(p + 56, 4) != 0) return fail(EBADMSG, "trace header: nonzero reserved bytes");
  if ((h.flags & kTraceFlagComplete) == 0) return fail(EBADMSG, "trace file was not finished by its writer");
  h.record_count = get_le(p + 16, 8);
  h.address_min = get_le(p + 24, 8);
  h.address_end = get_le(p + 32, 8);
  h.first_timestamp_ns = get_le(p + 40, 8);
  h.last_timestamp_ns = get_le(p + 48, 8);
  return h;
}

Result<std::vector<TraceRecord>> decode_trace(std::span<const std::byte> bytes) {
  auto header = decode_trace_header(bytes);
  if (!header) return tl::unexpected(header.error());
  const std::uint64_t body = bytes.size() - kTraceHeaderBytes;
  const std::uint64_t held = body / kTraceRecordBytes;
  if (held != header->record_count || body % kTraceRecordBytes != 0) {
    return fail(EBADMSG, "trace: header says " + std::to_string(header->record_count) + " records, data holds " +
                             std::to_string(held) + " (+" + std::to_string(body % kTraceRecordBytes) +
                             " stray bytes)");
  }
  std::vector<TraceRecord> out;
  out.reserve(held);
  TraceValidator validator(EBADMSG);
  const std::byte* p = bytes.data() + kTraceHeaderBytes;
  for (std::uint64_t i = 0; i < held; ++i, p += kTraceRecordBytes) {
    auto r = trace_detail::get_record(p, i);
    if (!r) return tl::unexpected(r.error());
    if (auto ok = validator.check_and_add(*r, i); !ok) return tl::unexpected(ok.error());
    out.push_back(*r);
  }
  if (auto ok = validator.check_summary(*header); !ok) return tl::unexpected(ok.error());
  return out;
}

Result<std::vector<std::byte>> encode_trace(std::span<const TraceRecord> records) {
  TraceValidator validator(EINVAL);
  std::vector<std::byte> out(kTraceHeaderBytes + records.size() * kTraceRecordBytes);
  std::byte* p = out.data() + kTraceHeaderBytes;
  for (std::size_t i = 0; i < records.size(); ++i, p += kTraceRecordBytes) {
    if (auto ok = validator.check_and_add(records[i], i); !ok) return tl::unexpected(ok.error());
    trace_detail::put_record(p, records[i]);
  }
  const auto header = encode_trace_header(validator.summary(kTraceFlagComplete));
  std::memcpy(out.data(), header.data(), header.size());
  return out;
}

}  // namespace cxlpool::tiering
