// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the safetensors header parser the daemon runs on
// every model file a client passes. The input is a whole file: the 8-byte
// length, the JSON, the data. Properties: a rejection is EBADMSG with a
// message that never quotes the length prefix; an accepted header only
// holds what the loader trusts (tensors in data order, inside the data
// section, sized by dtype and shape, not overlapping, names unique, plain
// and within the limits).
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

#include "cxlpool/weights/safetensors.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_safetensors_decode";

namespace {

using cxlpool::fuzz::violated;
using namespace cxlpool::weights;

// Small limits, so the fuzzer reaches each of them.
ParseLimits fuzz_limits() {
  ParseLimits limits;
  limits.max_header_bytes = 1u << 20;
  limits.max_tensors = 64;
  limits.max_name_bytes = 64;
  limits.max_metadata_entries = 8;
  return limits;
}

void check_rejection(const cxlpool::Error& e) { cxlpool::fuzz::check_rejection(e, {EBADMSG}); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ParseLimits limits = fuzz_limits();
  const auto bytes = std::as_bytes(std::span(data, size));
  auto n = parse_header_size(bytes.first(std::min(size, kSafetensorsPrefixBytes)), size, limits);
  if (!n) {
    check_rejection(n.error());
    uint64_t raw = 0;
    for (size_t i = 0; i < kSafetensorsPrefixBytes && i < size; ++i) raw |= uint64_t{data[i]} << (8 * i);
    // Long numbers only: a short one may be part of a limit or a size.
    if (raw >= 1000000000 && n.error().message.find(std::to_string(raw)) != std::string::npos) {
      violated("the message quotes the length prefix", n.error().message);
    }
    return 0;
  }
  const std::string_view json(reinterpret_cast<const char*>(data) + kSafetensorsPrefixBytes, *n);
  auto h = parse_header(json, size, limits);
  if (!h) {
    check_rejection(h.error());
    return 0;
  }
  if (h->data_offset != kSafetensorsPrefixBytes + *n || h->data_offset + h->data_bytes != size) {
    violated("data section does not follow the header", "");
  }
  if (h->tensors.size() > limits.max_tensors) violated("more tensors than the limit", "");
  std::unordered_set<std::string> names;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : h->tensors) {
    if (t.name.empty() || t.name.size() > limits.max_name_bytes) violated("name breaks the limits", t.name);
    for (const char c : t.name) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) violated("name holds a control byte", "");
    }
    if (!names.insert(t.name).second) violated("duplicate name accepted", t.name);
    if (t.shape.size() > kMaxTensorDims) violated("too many dimensions", t.name);
    if (t.end < t.begin || t.end > h->data_bytes) violated("tensor outside the data section", t.name);
    uint64_t elements = dtype_size(t.dtype);
    for (uint64_t d : t.shape) {
      if (__builtin_mul_overflow(elements, d, &elements)) violated("accepted an overflowing shape", t.name);
    }
    if (elements != t.bytes()) violated("byte count differs from dtype and shape", t.name);
    if (prev != nullptr && t.begin < prev->begin) violated("tensors not in data order", t.name);
    if (prev != nullptr && t.bytes() > 0 && prev->bytes() > 0 && t.begin < prev->end) {
      violated("overlapping tensors accepted", t.name);
    }
    if (t.bytes() > 0) prev = &t;
  }
  if (h->metadata.size() > limits.max_metadata_entries) violated("more metadata than the limit", "");
  return 0;
}
