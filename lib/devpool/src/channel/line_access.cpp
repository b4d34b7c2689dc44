// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/line_access.hpp"

#include <cpuid.h>
#include <immintrin.h>

namespace cxlpool::devpool {

namespace {

constexpr size_t kWords = kLineBytes / sizeof(uint64_t);

// Word-wise atomic copies: the other side may be rewriting a line we read
// (a slot of an earlier lap), so plain memcpy would be a data race. Relaxed
// 8-byte accesses compile to plain moves on x86-64.
void copy_words_in(const void* line, uint64_t* out, size_t words) {
  auto* src = static_cast<uint64_t*>(const_cast<void*>(line));
  for (size_t i = 0; i < words; ++i) out[i] = std::atomic_ref<uint64_t>(src[i]).load(std::memory_order_relaxed);
}

void copy_words_out(void* line, const uint64_t* in, size_t words) {
  auto* dst = static_cast<uint64_t*>(line);
  for (size_t i = 0; i < words; ++i) std::atomic_ref<uint64_t>(dst[i]).store(in[i], std::memory_order_relaxed);
}

// The last word carries the line's sequence (or the consumer count): it is
// read first with acquire and written last with release, so whoever sees it
// sees the rest of the line as it was when it was written.
void load_line(const void* line, void* out64) {
  uint64_t words[kWords];
  auto* src = static_cast<uint64_t*>(const_cast<void*>(line));
  words[kWords - 1] = std::atomic_ref<uint64_t>(src[kWords - 1]).load(std::memory_order_acquire);
  copy_words_in(line, words, kWords - 1);
  std::memcpy(out64, words, kLineBytes);
}

void store_line(void* line, const void* in64) {
  uint64_t words[kWords];
  std::memcpy(words, in64, kLineBytes);
  copy_words_out(line, words, kWords - 1);
  std::atomic_ref<uint64_t>(static_cast<uint64_t*>(line)[kWords - 1]).store(words[kWords - 1], std::memory_order_release);
}

__attribute__((target("clwb"))) void clwb_line(const void* line) { _mm_clwb(const_cast<void*>(line)); }
__attribute__((target("clflushopt"))) void clflushopt_line(const void* line) {
  _mm_clflushopt(const_cast<void*>(line));
}

}  // namespace

const char* coherence_name(Coherence c) {
  switch (c) {
    case Coherence::kCoherent:
      return "coherent";
    case Coherence::kNonCoherent:
      return "non-coherent";
  }
  return "unknown";
}

void CoherentLines::load(const void* line, void* out64) { load_line(line, out64); }
void CoherentLines::store(void* line, const void* in64) { store_line(line, in64); }

NonCoherentLines::NonCoherentLines() {
  // CPUID leaf 7, subleaf 0, EBX: bit 23 CLFLUSHOPT, bit 24 CLWB.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0) {
    has_clflushopt_ = (ebx & (1u << 23)) != 0;
    has_clwb_ = (ebx & (1u << 24)) != 0;
  }
}

// Plain loads are right here: the protocol invalidates a line before it
// looks at it again, so what the cache holds is either the line's memory
// contents or a copy the protocol tolerates (an earlier lap, rejected by its
// sequence).
void NonCoherentLines::load(const void* line, void* out64) { load_line(line, out64); }
void NonCoherentLines::store(void* line, const void* in64) { store_line(line, in64); }

void NonCoherentLines::write_back(const void* line) {
  if (has_clwb_) {
    clwb_line(line);
  } else if (has_clflushopt_) {
    clflushopt_line(line);
  } else {
    _mm_clflush(line);
  }
}

// sfence orders clwb/clflushopt before later stores (the publish); clflush
// is ordered by itself but the fence is harmless.
void NonCoherentLines::fence() { _mm_sfence(); }

void NonCoherentLines::invalidate(const void* line) {
  if (has_clflushopt_) {
    clflushopt_line(line);
  } else {
    _mm_clflush(line);
  }
  // clflushopt is weakly ordered with later loads of the same line only
  // through a fence; without it the reload could be served before the flush.
  _mm_mfence();
}

}  // namespace cxlpool::devpool
