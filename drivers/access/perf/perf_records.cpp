// SPDX-License-Identifier: Apache-2.0
#include "perf_records.hpp"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace cxlpool::drivers {
namespace {

// In the order the kernel writes them (include/uapi/linux/perf_event.h).
// WEIGHT and WEIGHT_STRUCT share one 8-byte slot.
constexpr uint64_t kSupported =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
    PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
    PERF_SAMPLE_PERIOD | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC |
    PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_PHYS_ADDR;

constexpr uint64_t kHeaderBytes = sizeof(perf_event_header);

class Reader {
 public:
  Reader(const uint8_t* p, uint64_t len) : p_(p), len_(len) {}
  bool u64(uint64_t& v) { return take(&v, sizeof v); }
  bool u32(uint32_t& v) { return take(&v, sizeof v); }
  bool done() const { return pos_ == len_; }

 private:
  bool take(void* v, uint64_t n) {
    if (len_ - pos_ < n) return false;
    std::memcpy(v, p_ + pos_, n);
    pos_ += n;
    return true;
  }
  const uint8_t* p_;
  uint64_t len_;
  uint64_t pos_ = 0;
};

// Copies `n` bytes starting at free-running position `pos` of a ring of
// `size` (power of two) bytes, following the wrap.
void ring_copy(const uint8_t* ring, uint64_t size, uint64_t pos, uint8_t* dst, uint64_t n) {
  const uint64_t off = pos & (size - 1);
  const uint64_t first = std::min(n, size - off);
  std::memcpy(dst, ring + off, first);
  if (first < n) std::memcpy(dst + first, ring, n - first);
}

// Adds a LOST or LOST_SAMPLES record's count of lost samples, the u64 at
// `offset` of its body; a body too short for it is malformed.
void count_lost(const std::vector<uint8_t>& body, std::size_t offset, PerfDrainStats& stats) {
  uint64_t lost = 0;
  if (body.size() < offset + sizeof lost) {
    ++stats.malformed;
    return;
  }
  std::memcpy(&lost, body.data() + offset, sizeof lost);
  stats.lost += lost;
}

}  // namespace

Result<PerfRecordParser> PerfRecordParser::make(uint64_t sample_type) {
  if ((sample_type & ~kSupported) != 0) {
    return fail(EINVAL, "perf sample_type bits 0x" + [&] {
      char buf[32];
      snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(sample_type & ~kSupported));
      return std::string(buf);
    }() + " are not supported by the record parser");
  }
  uint32_t bytes = 0;
  const auto add = [&](uint64_t bit, uint32_t n) {
    if ((sample_type & bit) != 0) bytes += n;
  };
  add(PERF_SAMPLE_IDENTIFIER, 8);
  add(PERF_SAMPLE_IP, 8);
  add(PERF_SAMPLE_TID, 8);
  add(PERF_SAMPLE_TIME, 8);
  add(PERF_SAMPLE_ADDR, 8);
  add(PERF_SAMPLE_ID, 8);
  add(PERF_SAMPLE_STREAM_ID, 8);
  add(PERF_SAMPLE_CPU, 8);
  add(PERF_SAMPLE_PERIOD, 8);
  if ((sample_type & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) != 0) bytes += 8;
  add(PERF_SAMPLE_DATA_SRC, 8);
  add(PERF_SAMPLE_TRANSACTION, 8);
  add(PERF_SAMPLE_PHYS_ADDR, 8);
  return PerfRecordParser(sample_type, bytes);
}

bool PerfRecordParser::decode_sample(const uint8_t* body, uint64_t len, PerfSample& out) const {
  if (len != body_bytes_) return false;
  Reader r(body, len);
  PerfSample s;
  uint64_t skip = 0;
  uint32_t skip32 = 0;
  const uint64_t t = sample_type_;
  bool ok = true;
  if (t & PERF_SAMPLE_IDENTIFIER) ok = ok && r.u64(skip);
  if (t & PERF_SAMPLE_IP) ok = ok && r.u64(s.ip);
  if (t & PERF_SAMPLE_TID) ok = ok && r.u32(s.pid) && r.u32(s.tid);
  if (t & PERF_SAMPLE_TIME) ok = ok && r.u64(s.time);
  if (t & PERF_SAMPLE_ADDR) ok = ok && r.u64(s.addr);
  if (t & PERF_SAMPLE_ID) ok = ok && r.u64(skip);
  if (t & PERF_SAMPLE_STREAM_ID) ok = ok && r.u64(skip);
  if (t & PERF_SAMPLE_CPU) ok = ok && r.u32(s.cpu) && r.u32(skip32);
  if (t & PERF_SAMPLE_PERIOD) ok = ok && r.u64(s.period);
  if (t & PERF_SAMPLE_WEIGHT) {
    ok = ok && r.u64(s.weight);
  } else if (t & PERF_SAMPLE_WEIGHT_STRUCT) {
    // var1_dw (u32) is the latency; the rest are other weights.
    uint64_t w = 0;
    ok = ok && r.u64(w);
    s.weight = w & 0xffffffffULL;
  }
  if (t & PERF_SAMPLE_DATA_SRC) ok = ok && r.u64(s.data_src);
  if (t & PERF_SAMPLE_TRANSACTION) ok = ok && r.u64(skip);
  if (t & PERF_SAMPLE_PHYS_ADDR) ok = ok && r.u64(s.phys_addr);
  if (!ok || !r.done()) return false;
  out = s;
  return true;
}

PerfDrainStats PerfRecordParser::drain(const uint8_t* ring, uint64_t size, uint64_t tail,
                                       uint64_t head,
                                       const std::function<void(const PerfSample&)>& on_sample) const {
  PerfDrainStats stats;
  // A head behind the tail, or further ahead than the ring holds, means the
  // control page itself is garbage.
  if (size == 0 || (size & (size - 1)) != 0 || head - tail > size) {
    stats.desync = head != tail;
    stats.malformed += stats.desync ? 1 : 0;
    return stats;
  }
  std::vector<uint8_t> record;
  uint64_t pos = tail;
  while (pos != head) {
    const uint64_t remain = head - pos;
    perf_event_header header{};
    if (remain < kHeaderBytes) {
      stats.desync = true;
      ++stats.malformed;
      break;
    }
    ring_copy(ring, size, pos, reinterpret_cast<uint8_t*>(&header), kHeaderBytes);
    // The kernel writes whole records padded to 8 bytes; anything else means
    // we lost track of record boundaries and nothing after can be trusted.
    if (header.size < kHeaderBytes || header.size > remain || header.size % 8 != 0) {
      stats.desync = true;
      ++stats.malformed;
      break;
    }
    const uint64_t body_len = header.size - kHeaderBytes;
    record.resize(body_len);
    if (body_len > 0) ring_copy(ring, size, pos + kHeaderBytes, record.data(), body_len);
    pos += header.size;

    switch (header.type) {
      case PERF_RECORD_SAMPLE: {
        PerfSample sample;
        if (!decode_sample(record.data(), body_len, sample)) {
          ++stats.malformed;
          break;
        }
        ++stats.samples;
        on_sample(sample);
        break;
      }
      case PERF_RECORD_LOST:
        // { u64 id; u64 lost; } then sample_id fields we do not request.
        count_lost(record, 8, stats);
        break;
      case PERF_RECORD_LOST_SAMPLES:
        // { u64 lost; }
        count_lost(record, 0, stats);
        break;
      default:
        ++stats.other;
        break;
    }
  }
  return stats;
}

}  // namespace cxlpool::drivers
