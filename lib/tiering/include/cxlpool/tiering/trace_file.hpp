// SPDX-License-Identifier: Apache-2.0
// Binary trace files: a 64-byte header followed by fixed-size 24-byte
// little-endian records (docs/trace-format.md is the normative description).
//
// The header carries the record count and summary fields (address range,
// first and last timestamp) that the writer fills in at finish(); a file whose
// writer never finished keeps the "complete" flag clear and is rejected, so a
// crashed generator cannot be mistaken for a short trace.
//
// Errors (every read path, the first failure wins):
//   EBADMSG   not a trace (magic), header checksum, unknown flags or nonzero
//             reserved bytes, unfinished file, truncated file or trailing
//             bytes, record count mismatch, or an invalid record: size 0,
//             address + size past 2^64, unknown op or nonzero reserved bytes,
//             a timestamp below the previous one, summary fields that do not
//             match the records. Record errors name the record index.
//   ENOTSUP   a version this build does not read, or a different record size.
//   errno     from open/read/write/lseek, prefixed with the path.
// Writers reject invalid records with EINVAL, naming the record index.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/trace_record.hpp"

namespace cxlpool::tiering {

inline constexpr char kTraceMagic[8] = {'C', 'X', 'L', 'T', 'R', 'A', 'C', 'E'};
inline constexpr std::uint16_t kTraceVersion = 1;
inline constexpr std::size_t kTraceHeaderBytes = 64;
inline constexpr std::size_t kTraceRecordBytes = 24;
inline constexpr std::uint16_t kTraceFlagComplete = 1u << 0;

// The decoded header. Summary fields describe the records exactly:
// address_min = lowest record address, address_end = highest address + size
// (exclusive), first/last timestamp of the first and last record; all zero
// for an empty trace.
struct TraceHeader {
  std::uint16_t version = kTraceVersion;
  std::uint16_t flags = 0;
  std::uint64_t record_count = 0;
  std::uint64_t address_min = 0;
  std::uint64_t address_end = 0;
  std::uint64_t first_timestamp_ns = 0;
  std::uint64_t last_timestamp_ns = 0;
  bool operator==(const TraceHeader&) const = default;
};

// Header bytes, checksum included.
std::array<std::byte, kTraceHeaderBytes> encode_trace_header(const TraceHeader& header);
// Validates magic, version, sizes, flags, reserved bytes and the checksum.
// Does not check the summary fields against records (decode_trace does).
Result<TraceHeader> decode_trace_header(std::span<const std::byte> bytes);

// A whole trace in memory, with the same validation as the file reader.
Result<std::vector<TraceRecord>> decode_trace(std::span<const std::byte> bytes);
// EINVAL for records the format cannot hold (see TraceWriter::write).
Result<std::vector<std::byte>> encode_trace(std::span<const TraceRecord> records);

// Streams records to a file. Records are buffered; the header is rewritten
// at finish() with the count and summary fields. No fsync: a trace is a
// reproducible artifact, not durable state.
class TraceWriter {
 public:
  // Creates or truncates `path` (mode 0644).
  static Result<TraceWriter> create(const std::string& path);
  TraceWriter(TraceWriter&&) noexcept;
  TraceWriter& operator=(TraceWriter&&) noexcept;
  ~TraceWriter();  // without finish(): the file stays marked unfinished

  // EINVAL (nothing of the batch written) when a record has size 0, an
  // address + size past 2^64, or a timestamp below its predecessor's;
  // the message names the record's index in the whole trace.
  Result<void> write(std::span<const TraceRecord> records);
  // Flushes, writes the final header and closes. Further calls: EBADF.
  Result<void> finish();

  std::uint64_t records_written() const;

 private:
  struct State;
  explicit TraceWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Reads a trace file in batches, validating as it goes.
class TraceReader {
 public:
  // Validates the header and that the file size matches the record count.
  static Result<TraceReader> open(const std::string& path);
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;
  ~TraceReader();

  const TraceHeader& header() const;

  // Replaces `out` with up to `max` (>= 1) next records; 0 at the end of the
  // trace (after the summary fields were checked against the records).
  Result<std::size_t> next_batch(std::vector<TraceRecord>& out, std::size_t max);
  // Records returned so far.
  std::uint64_t position() const;

 private:
  struct State;
  explicit TraceReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

Result<void> write_trace(const std::string& path, std::span<const TraceRecord> records);
Result<std::vector<TraceRecord>> read_trace(const std::string& path);

}  // namespace cxlpool::tiering
