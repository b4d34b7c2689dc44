// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/namespace.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace cxlpool::kvcache {
namespace {

NamespaceSpec base() { return {"llama-3-8b", "vllm-paged-nhd", "bf16", 0, 2, 256}; }

TEST(KvNamespace, SerializationIsDocumentedLayout) {
  NamespaceSpec s{"m", "ly", "f16", 1, 2, 16};
  const std::vector<std::uint8_t> want = {
      'C', 'X', 'K', 'V', 'N', 'S', 1, 0,  //
      1, 0, 0, 0, 'm',                     //
      2, 0, 0, 0, 'l', 'y',                //
      3, 0, 0, 0, 'f', '1', '6',           //
      1, 0, 0, 0, 2, 0, 0, 0, 16, 0, 0, 0};
  EXPECT_EQ(serialize_namespace(s), want);
}

TEST(KvNamespace, EveryFieldChangesTheFingerprint) {
  const auto f0 = fingerprint(base());
  auto s = base();
  s.model_id = "llama-3-70b";
  EXPECT_NE(fingerprint(s), f0);
  s = base();
  s.layout = "vllm-paged-hnd";
  EXPECT_NE(fingerprint(s), f0);
  s = base();
  s.dtype = "fp8";
  EXPECT_NE(fingerprint(s), f0);
  s = base();
  s.tp_rank = 1;
  EXPECT_NE(fingerprint(s), f0);
  s = base();
  s.tp_size = 4;
  EXPECT_NE(fingerprint(s), f0);
  s = base();
  s.chunk_tokens = 128;
  EXPECT_NE(fingerprint(s), f0);
  EXPECT_EQ(fingerprint(base()), f0);
}

TEST(KvNamespace, LengthPrefixesPreventFieldShifting) {
  // Without length prefixes "ab"+"c" and "a"+"bc" would hash alike.
  NamespaceSpec a{"ab", "c", "x", 0, 1, 256};
  NamespaceSpec b{"a", "bc", "x", 0, 1, 256};
  EXPECT_NE(fingerprint(a), fingerprint(b));
}

TEST(KvNamespace, KnownAnswer) {
  const auto f = fingerprint(base());
  std::printf("fingerprint(base) = %016llx%016llx\n", static_cast<unsigned long long>(f.hi),
              static_cast<unsigned long long>(f.lo));
  EXPECT_EQ(f.hi, 0xd55a49a7d233fd21ULL);
  EXPECT_EQ(f.lo, 0x8a66f8b84a7df06aULL);
}

}  // namespace
}  // namespace cxlpool::kvcache
