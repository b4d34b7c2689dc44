// SPDX-License-Identifier: Apache-2.0
// Decodes the records perf_event_open writes into its mmap'd ring buffer.
// Pure byte parsing, no system calls: the ring's bytes may be anything, so
// every length is checked before it is trusted.
#pragma once

#include <cstdint>
#include <functional>

#include "cxlpool/common/result.hpp"

namespace cxlpool::drivers {

// What one PERF_RECORD_SAMPLE carries; fields the sample_type lacks are 0.
struct PerfSample {
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;  // sampled data (virtual) address
  uint32_t cpu = 0;
  uint64_t period = 0;
  uint64_t weight = 0;  // latency in cycles (PEBS) when sampled
  uint64_t data_src = 0;
  uint64_t phys_addr = 0;
};

struct PerfDrainStats {
  uint64_t samples = 0;    // PERF_RECORD_SAMPLE decoded and delivered
  uint64_t lost = 0;       // samples the kernel reports lost (LOST, LOST_SAMPLES)
  uint64_t malformed = 0;  // records rejected: bad sizes, truncated bodies
  uint64_t other = 0;      // well-formed records of other types, skipped
  bool desync = false;     // a header could not be trusted; the rest was skipped
};

class PerfRecordParser {
 public:
  // Fixed-size sample layouts only: IDENTIFIER, IP, TID, TIME, ADDR, ID,
  // STREAM_ID, CPU, PERIOD, WEIGHT or WEIGHT_STRUCT, DATA_SRC, TRANSACTION,
  // PHYS_ADDR. EINVAL for any other bit.
  static Result<PerfRecordParser> make(uint64_t sample_type);

  uint64_t sample_type() const { return sample_type_; }
  // Bytes of a PERF_RECORD_SAMPLE body (after the 8-byte header).
  uint32_t sample_body_bytes() const { return body_bytes_; }

  // Decodes one PERF_RECORD_SAMPLE body. False when `len` is not exactly
  // the layout's size.
  bool decode_sample(const uint8_t* body, uint64_t len, PerfSample& out) const;

  // Walks the records in [tail, head) of a ring of `size` bytes (a power of
  // two; positions are free-running byte counters as in
  // perf_event_mmap_page, taken modulo `size`), handing every sample to
  // `on_sample`. Records may wrap around the end of the ring. The caller
  // moves data_tail to `head` afterwards: everything was consumed or, on
  // desync, abandoned.
  PerfDrainStats drain(const uint8_t* ring, uint64_t size, uint64_t tail, uint64_t head,
                       const std::function<void(const PerfSample&)>& on_sample) const;

 private:
  PerfRecordParser(uint64_t sample_type, uint32_t body_bytes)
      : sample_type_(sample_type), body_bytes_(body_bytes) {}

  uint64_t sample_type_;
  uint32_t body_bytes_;
};

}  // namespace cxlpool::drivers
