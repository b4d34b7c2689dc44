// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the control-message decoder. Property: any input
// either fails to decode, or decodes to a message that re-encodes (the
// encoder accepts everything the decoder does) and decodes again to the
// same header fields and the same message.
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/proto/messages.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_proto_decode";

using cxlpool::fuzz::accepted;
using cxlpool::fuzz::violated;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cxlpool::proto;
  const auto bytes = std::as_bytes(std::span(data, size));
  auto first = decode(bytes);
  if (!accepted(first, {EPROTO, EMSGSIZE, EPROTONOSUPPORT})) return 0;
  auto encoded = encode(first->header.request_id, first->message, first->header.version);
  if (!encoded) violated("decoded message does not re-encode", encoded.error().message.c_str());
  if (encoded->size() > size) violated("re-encoding grew", message_type_name(message_type(first->message)));
  auto second = decode(*encoded);
  if (!second) violated("re-encoded message does not decode", second.error().message.c_str());
  if (second->header.type != first->header.type) violated("type changed", "");
  if (second->header.request_id != first->header.request_id) violated("request id changed", "");
  if (second->header.version != first->header.version) violated("version changed", "");
  if (!(second->message == first->message)) violated("message changed", message_type_name(message_type(first->message)));
  return 0;
}
