// SPDX-License-Identifier: Apache-2.0
// What a restore will do, decided from a manifest before anything is touched:
// the mappings that rebuild the target's address space under a policy, the
// room the restorer's own area may take, and the reasons a checkpoint cannot
// be restored here (docs/ckpt.md "Restore"). Pure logic: the facts about this
// host come in as values, so every decision is unit tested.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

enum class RestorePolicy : uint8_t {
  kMow = 1,  // MAP_PRIVATE of the image: the kernel's copy-on-write migrates written pages
  kMoa,      // anonymous memory filled on first access by the keeper's userfaultfd server
  kHybrid,   // Manifest::hot_pages copied up front, the rest mapped as mow
  kCopy,     // every page read into fresh anonymous memory (the copy-based baseline)
};

// "mow", "moa", "hybrid", "copy".
std::string_view policy_name(RestorePolicy policy);
Result<RestorePolicy> parse_policy(std::string_view name);

// A special mapping of this host's kernel, as the restorer finds its own.
struct SpecialMapping {
  VmaKind kind = VmaKind::kVdso;
  uint64_t start = 0, end = 0;
};

// Where a mapping's pages come from.
enum class MapSource : uint8_t {
  kAnon = 1,  // zero-filled anonymous memory
  kFile,      // Manifest::files[file] at file_offset, MAP_PRIVATE
  kImage,     // the image at image_offset, MAP_PRIVATE (mow)
  kRegion,    // Manifest::regions[file], opened again through cxlpoold, MAP_SHARED at its offset
  kSharedObject,  // kSharedAnon object `file`, made once as a memfd, MAP_SHARED at its offset
};

enum class StepKind : uint8_t {
  kMap = 1,   // mmap at addr with MAP_FIXED
  kCopy,      // read len bytes of the image at image_offset into addr
  kProtect,   // mprotect to prot (after copies into a read-only mapping)
  kUffd,      // register with the clone's userfaultfd; the keeper fills it from image_offset
  kAdvise,    // madvise(addr, len, advice) again, as the process had advised
};

struct RestoreStep {
  StepKind kind = StepKind::kMap;
  uint64_t addr = 0, len = 0;
  uint32_t prot = 0;
  uint32_t map_flags = 0;  // MAP_PRIVATE [| MAP_ANONYMOUS | MAP_GROWSDOWN]; MAP_FIXED is implied
  MapSource source = MapSource::kAnon;
  uint32_t file = kNoFile;
  uint64_t offset = 0;     // file offset (kFile, kRegion, kSharedObject) or image offset (kImage, kCopy, kUffd)
  int32_t advice = 0;      // MADV_* (kAdvise)
};

// A range of addresses (start inclusive, end exclusive).
struct AddrRange {
  uint64_t start = 0, end = 0;
  uint64_t bytes() const { return end - start; }
};

// A special mapping to move from the restorer's place to the target's.
struct SpecialMove {
  VmaKind kind = VmaKind::kVdso;
  uint64_t from = 0, to = 0, len = 0;
};

struct RestorePlan {
  RestorePolicy policy = RestorePolicy::kMow;
  std::vector<RestoreStep> steps;  // in order
  std::vector<SpecialMove> moves;
  std::vector<AddrRange> gaps;     // free in the target's layout, for the restorer's area
  uint64_t copied_bytes = 0;       // read up front (kCopy)
  uint64_t mapped_image_bytes = 0; // mapped from the image (kImage)
  uint64_t lazy_bytes = 0;         // served on access (kUffd)
};

// What the host offers that a plan depends on.
struct HostFacts {
  std::vector<SpecialMapping> specials;  // the restorer's own [vdso], [vvar], [vvar_vclock]
  bool lazy_pager = false;               // moa is built
  uint64_t mmap_min_addr = 65536;
  uint64_t task_size = 0x7ffffffff000ull;
};

// The checks that need no host facts: threads, registers, descriptors,
// regions, addresses. Errors: EINVAL or ENOTSUP with the reason.
Result<void> check_restorable(const Manifest& manifest);

// Decides the steps for `policy`. Errors: check_restorable's; ENOTSUP for a
// policy this build lacks; EXDEV when this kernel's vDSO/vvar differ from
// the checkpointing kernel's in kind, size or layout.
Result<RestorePlan> plan_restore(const Manifest& manifest, RestorePolicy policy, const HostFacts& host);

// Makes the restore fill the clone's page tables for the image's pages
// (MADV_POPULATE_READ after each image mapping): the restore takes longer,
// in proportion to the pages, and the clone's first pass over its memory
// takes no page faults. The pages stay the image's, shared, until written.
void prefault_image_pages(RestorePlan& plan);

// File identity as stat reports it.
struct FileStat {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0;
};

// ESTALE, naming the path and what changed, when `now` is not the file the
// checkpoint recorded.
Result<void> check_file_unchanged(const FileRef& recorded, const FileStat& now);

// Addresses, in order of preference, where an area of `bytes` could start
// inside the gaps (page aligned, never below mmap_min_addr).
std::vector<uint64_t> area_candidates(const std::vector<AddrRange>& gaps, uint64_t bytes, uint64_t mmap_min_addr);

// Everything from mmap_min_addr to task_size that is not in `keep` (sorted,
// not overlapping): what the final stage unmaps of the restorer.
std::vector<AddrRange> unmap_ranges(std::vector<AddrRange> keep, uint64_t mmap_min_addr, uint64_t task_size);

// The x86-64 registers (struct user_regs_struct) a thread stopped in a
// system call needs so that it restarts the call, as the kernel would have
// on its way out: -ERESTARTSYS/-ERESTARTNOINTR/-ERESTARTNOHAND repeat the
// call, -ERESTART_RESTARTBLOCK returns -EINTR (its restart block is gone).
void fix_syscall_restart(std::vector<uint8_t>& regs);

}  // namespace cxlpool::ckpt
