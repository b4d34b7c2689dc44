// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/stream_copy.hpp"

#include <algorithm>
#include <cstring>
#include <span>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cxlpool/common/crc32c.hpp"

namespace cxlpool {

namespace {

// Below this a copy stays in cache anyway and memcpy is as good.
constexpr std::size_t kMinStreamBytes = 64 * 1024;
// Fused checksum + copy block: well inside L1+L2, so the copy reads what
// the checksum just loaded.
constexpr std::size_t kFuseBlock = 64 * 1024;
// copy_crc32c_of_copy's buffer: one page, which stays in L1.
constexpr std::size_t kBounceBlock = 4096;

#if defined(__SSE2__)
// n a multiple of 64, dst 16-byte aligned. The caller fences.
void stream_lines(std::byte* dst, const std::byte* src, std::size_t n) {
  auto* d = reinterpret_cast<__m128i*>(dst);
  const auto* s = reinterpret_cast<const __m128i*>(src);
  for (std::size_t i = 0; i < n / 16; i += 4) {
    const __m128i a = _mm_loadu_si128(s + i);
    const __m128i b = _mm_loadu_si128(s + i + 1);
    const __m128i c = _mm_loadu_si128(s + i + 2);
    const __m128i e = _mm_loadu_si128(s + i + 3);
    _mm_stream_si128(d + i, a);
    _mm_stream_si128(d + i + 1, b);
    _mm_stream_si128(d + i + 2, c);
    _mm_stream_si128(d + i + 3, e);
  }
}
#endif

bool streamable(const void* dst, std::size_t n) {
#if defined(__SSE2__)
  return n >= kMinStreamBytes && reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
#else
  (void)dst;
  (void)n;
  return false;
#endif
}

// Streams the 64-byte lines of [0, n) and memcpys the tail.
void copy_block(std::byte* d, const std::byte* s, std::size_t n) {
#if defined(__SSE2__)
  const std::size_t lines = n / 64 * 64;
  stream_lines(d, s, lines);
  if (lines != n) std::memcpy(d + lines, s + lines, n - lines);
#else
  std::memcpy(d, s, n);
#endif
}

void fence() {
#if defined(__SSE2__)
  // Non-temporal stores are weakly ordered: make them visible before
  // anything that publishes the copy (a completion, an I/O submission).
  _mm_sfence();
#endif
}

}  // namespace

void stream_copy(void* dst, const void* src, std::size_t n) {
  if (!streamable(dst, n)) {
    std::memcpy(dst, src, n);
    return;
  }
  copy_block(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), n);
  fence();
}

std::uint32_t stream_copy_crc32c(void* dst, const void* src, std::size_t n, std::uint32_t seed) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  if (!streamable(dst, n)) {
    std::memcpy(d, s, n);
    return crc32c({s, n}, seed);
  }
  std::uint32_t crc = seed;
  for (std::size_t off = 0; off < n; off += kFuseBlock) {
    const std::size_t len = std::min(kFuseBlock, n - off);
    crc = crc32c({s + off, len}, crc);
    copy_block(d + off, s + off, len);
  }
  fence();
  return crc;
}

std::uint32_t copy_crc32c(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  std::uint32_t crc = 0;
  for (std::size_t off = 0; off < n; off += kBounceBlock) {
    const std::size_t len = std::min(kBounceBlock, n - off);
    crc = crc32c({s + off, len}, crc);
    std::memcpy(d + off, s + off, len);
  }
  return crc;
}

std::uint32_t copy_crc32c_of_copy(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  if (!streamable(dst, n)) {
    std::memcpy(d, s, n);
    return crc32c({d, n});
  }
  // Each block goes through a buffer that stays in L1: the checksum and the
  // streamed stores both read the buffer, so the checksum is of what was
  // stored, and the destination is still written past the caches.
  alignas(64) thread_local std::byte bounce[kBounceBlock];
  std::uint32_t crc = 0;
  for (std::size_t off = 0; off < n; off += kBounceBlock) {
    const std::size_t len = std::min(kBounceBlock, n - off);
    std::memcpy(bounce, s + off, len);
    crc = crc32c({bounce, len}, crc);
    copy_block(d + off, bounce, len);
  }
  fence();
  return crc;
}

}  // namespace cxlpool
