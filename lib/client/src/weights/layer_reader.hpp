// SPDX-License-Identifier: Apache-2.0
// LayerReader: the streamer's file reads. Each queued layer's aligned spans
// are cut into 1 MiB O_DIRECT reads and kept `depth` deep in flight across
// layer boundaries: the next layer's reads go out while the current one's
// last reads complete, so the device never sees the queue drain between
// layers. One block device per file (io_uring, else posix: the best engine
// lib/hal's registry offers), opened on first use; the window's slots are
// registered buffers of every device (READ_FIXED) when the kernel allows
// it. Single-threaded: only the streamer's copy thread (or set-up, before
// it starts) calls it.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"
#include "layer_plan.hpp"

namespace cxlpool::client {

class LayerReader {
 public:
  struct Done {
    uint64_t id = 0;
    Result<void> status;
  };

  // `align`: the spans' alignment (offsets, lengths, slot addresses).
  LayerReader(std::vector<std::string> paths, uint64_t align, uint32_t depth);
  ~LayerReader();
  LayerReader(const LayerReader&) = delete;
  LayerReader& operator=(const LayerReader&) = delete;

  // Buffers that add() may name by index; registered with each device as it
  // opens (call before the first add()).
  void set_registered(std::vector<iovec> buffers) { registered_ = std::move(buffers); }

  // Queues job `id`: the from_file ops of `ops`, each into base + op.dst.
  // `buffer`: the registered buffer holding base (-1: none).
  void add(uint64_t id, std::span<const CopyOp> ops, std::byte* base, int buffer);

  bool idle() const { return jobs_.empty(); }
  // True while some queued read is not issued yet.
  bool has_unissued() const;

  // Issues queued reads up to the depth, then waits for at least one
  // completion when reads are in flight; returns the jobs whose reads all
  // completed (a failed job ends once its issued reads are back).
  std::vector<Done> step();
  // Waits for every read in flight and drops the queue (shutdown).
  void drain();
  // Wall time with reads in flight (layers that overlap count once).
  uint64_t busy_ns() const { return busy_ns_; }

 private:
  struct Job {
    uint64_t id = 0;
    std::vector<CopyOp> ops;  // file ops only
    std::byte* base = nullptr;
    int buffer = -1;
    size_t op = 0;            // next op to issue
    uint64_t op_next = 0;     // next byte of that op
    uint32_t outstanding = 0;
    Error error;
    bool failed = false;
  };
  struct Chunk {
    uint64_t job = 0;
    uint32_t file = 0;
    uint64_t end = 0;  // file offset past the request
    bool used = false;
  };

  Result<hal::BlockDevice*> device(uint32_t file);
  Job* find(uint64_t id);
  void issue();
  void reap(uint32_t file, size_t min);
  void fail_job(Job& job, Error error);

  std::vector<std::string> paths_;
  uint64_t align_;
  uint32_t depth_;
  std::vector<iovec> registered_;
  std::vector<std::unique_ptr<hal::BlockDevice>> devices_;
  std::vector<bool> registered_ok_;
  std::deque<Job> jobs_;
  std::vector<Chunk> chunks_;  // depth_ entries; a request's user_data is its index
  std::deque<uint32_t> order_; // chunk indices in issue order (the oldest is waited on)
  uint32_t in_flight_ = 0;
  uint64_t busy_since_ = 0;
  uint64_t busy_ns_ = 0;
  std::vector<hal::IoCompletion> comps_;
};

}  // namespace cxlpool::client
