// SPDX-License-Identifier: Apache-2.0
// Migrate-on-access: a userfaultfd page server. Clones register their
// anonymous VMAs for missing faults (cxlpool/ckpt/uffd_raw.hpp) and hand the
// descriptor to the pager, which fills each faulting page from a read-only
// mapping of the checkpoint image, on one thread, for any number of clones
// of one image (docs/ckpt.md "Migrate-on-access").
//
// Addresses the pager was given no image data for (pages absent from the
// checkpoint, pages the clone dropped with MADV_DONTNEED, the old place of
// an mremap) read as zeros, as anonymous memory does.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cxlpool/ckpt/lazy_pager_counters.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::ckpt {

// `length` bytes at `addr` in the clone come from `source_offset` in the
// image. All three page aligned.
struct LazyRange {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint64_t source_offset = 0;
};

struct LazyPagerOptions {
  // Pages copied per fault: the faulting page and the ones after it, never
  // past the end of its range. 1 copies exactly what is touched.
  uint32_t window_pages = 4;
  // Keep the order in which pages were first placed (fault_order()).
  bool record_order = true;
  // run() returns once the last client is gone (after there was one): a
  // keeper serving one clone and its children exits with them.
  bool stop_when_no_clients = false;
};

using LazyClientId = uint64_t;

class LazyPager {
 public:
  // Maps `source_fd` (the checkpoint image) read-only, whole. The descriptor
  // is not kept. EINVAL: window_pages is 0; an mmap/epoll/eventfd error.
  static Result<std::unique_ptr<LazyPager>> create(int source_fd, LazyPagerOptions options = {});
  // Closes every client's descriptor. run() must have returned.
  ~LazyPager();
  LazyPager(const LazyPager&) = delete;
  LazyPager& operator=(const LazyPager&) = delete;

  // Serves `uffd` (after the UFFDIO_API handshake with uffd_raw::kFeatures
  // and registration of at least the ranges' addresses). `ranges` must be
  // page aligned, inside the image and not overlapping. `pidfd`, when
  // valid, tells the pager when the clone exited; without it a client is
  // dropped when an ioctl on it says its memory is gone (ESRCH). Safe to
  // call while run() serves others, from another thread. EINVAL: bad
  // ranges.
  Result<LazyClientId> add_client(UniqueFd uffd, std::vector<LazyRange> ranges, UniqueFd pidfd = {});

  // Copies the listed pages (clone addresses, any order, duplicates
  // allowed) into client `id` now, before it faults on them: the hybrid
  // policy's hot set. Pages outside the ranges and pages already present
  // are skipped. Returns the pages copied. ENOENT: no such client.
  Result<uint64_t> prefill(LazyClientId id, std::span<const uint64_t> pages);

  // Serves faults and events on the calling thread until stop() (or, with
  // stop_when_no_clients, until the last client is gone). An error only
  // when epoll itself fails; a client whose descriptor fails is dropped.
  Result<void> run();
  // One round: waits up to timeout_ms (-1: forever) and handles what is
  // ready. Returns false once stop() was called.
  Result<bool> run_once(int timeout_ms);
  // Makes run() return; callable from any thread, and before run().
  // While a stopped pager still holds a client's descriptor, that client's
  // munmap, mremap, MADV_DONTNEED and fork wait for it to read the event:
  // destroy the pager (closing the descriptors) if the clients live on.
  void stop();

  size_t client_count() const;
  LazyPagerCounters counters() const;
  // Clone page addresses in the order they were first placed from the
  // image (faulting page and window, across all clients, each once): the
  // working set a hybrid restore copies up front (Manifest::hot_pages).
  std::vector<uint64_t> fault_order() const;
  // The read-only image mapping.
  std::span<const std::byte> source() const;

  class Impl;

 private:
  explicit LazyPager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The clone side with libc: a userfaultfd with uffd_raw::kFeatures and
// `ranges` registered for missing faults (ranges of one VMA may be passed
// as one range covering it). Errors name the step that failed.
Result<UniqueFd> create_registered_uffd(std::span<const LazyRange> ranges);

// Sends `uffd` with `tag` over the unix socket `sock` (SCM_RIGHTS).
Result<void> send_uffd(int sock, int uffd, uint64_t tag);
// Receives one descriptor sent by send_uffd or uffd_raw::send_fd; `tag`
// gets its tag (a sender's shorter payload, 1 to 7 bytes, in the low
// bytes). EPROTO: the message carried no descriptor; ECONNRESET: the peer
// closed the socket.
Result<UniqueFd> receive_uffd(int sock, uint64_t* tag = nullptr);

// Hybrid without a userfaultfd: writes the listed pages (clone addresses)
// from `source` (an image mapping, LazyPager::source() or the caller's)
// into process `pid`'s memory with process_vm_writev, `ranges` telling
// where each page comes from; pages outside them are skipped. pid may be
// the caller's. Returns the pages written.
Result<uint64_t> write_pages_to_process(pid_t pid, std::span<const std::byte> source,
                                        std::span<const LazyRange> ranges, std::span<const uint64_t> pages);

}  // namespace cxlpool::ckpt
