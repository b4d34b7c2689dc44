// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the trace decoder. Property: any input either fails
// with a documented errno, or decodes to records that re-encode to exactly
// the input bytes (the format has one encoding per trace: every header field
// is either fixed, checked against the records, or covered by the checksum).
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "cxlpool/tiering/trace_file.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_trace_decode";

using cxlpool::fuzz::accepted;
using cxlpool::fuzz::violated;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxlpool::tiering;
  const auto bytes = std::as_bytes(std::span(data, size));
  auto records = decode_trace(bytes);
  if (!accepted(records, {EBADMSG, ENOTSUP})) return 0;
  auto header = decode_trace_header(bytes);
  if (!header) violated("trace decodes but its header does not", header.error().message.c_str());
  if (header->record_count != records->size()) violated("record count differs from the header", "");
  for (const TraceRecord& r : *records) {
    if (r.size == 0) violated("decoded a record of size 0", "");
  }
  auto encoded = encode_trace(*records);
  if (!encoded) violated("decoded trace does not re-encode", encoded.error().message.c_str());
  if (encoded->size() != size || std::memcmp(encoded->data(), data, size) != 0) {
    violated("re-encoding differs from the input", "");
  }
  return 0;
}
