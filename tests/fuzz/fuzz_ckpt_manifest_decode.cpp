// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for checkpoint images as a restore reads them from a file
// anyone could have written. The input is taken twice: as a manifest's bytes
// (the sections, no checksum in the way) and, when it is at least a header
// long, as a whole image. Properties: rejections carry EBADMSG or ENOTSUP
// with a message; an accepted manifest keeps the rules, and its encoding is
// canonical (decode(encode(m)) encodes to the same bytes); an accepted
// image's runs lie inside the input.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/image_reader.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/ckpt/manifest_validate.hpp"
#include "fuzz_violation.hpp"

const char cxlpool::fuzz::kFuzzTarget[] = "fuzz_ckpt_manifest_decode";

namespace {

using cxlpool::fuzz::accepted;
using cxlpool::fuzz::violated;
using namespace cxlpool::ckpt;

void check_accepted(const Manifest& m) {
  if (auto v = validate_manifest(m); !v) violated("decoded manifest breaks a rule", v.error().message);
  const auto bytes = encode_manifest(m);
  auto again = decode_manifest(bytes);
  if (!again) violated("re-encoded manifest does not decode", again.error().message);
  if (encode_manifest(*again) != bytes) violated("manifest encoding is not canonical", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  if (auto m = decode_manifest(bytes); accepted(m, {EBADMSG, ENOTSUP})) check_accepted(*m);
  if (size >= kImageHeaderBytes) {
    auto m = decode_image(bytes);
    if (accepted(m, {EBADMSG, ENOTSUP})) {
      check_accepted(*m);
      for (const PageRun& run : m->runs) {
        if (run.image_offset + run.pages * kPageSize > size) violated("run outside the image", "");
      }
    }
  }
  return 0;
}
