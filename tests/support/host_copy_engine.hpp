// SPDX-License-Identifier: Apache-2.0
// A GpuCopyEngine over host memory ("device" addresses are host pointers),
// for unit tests of code that moves bytes through a GPU's copy engine — the
// weight streamer's device window, a device KV arena's offload and restore —
// on machines without one. What it was asked to do is counted, and a
// refusal to register host ranges can be set, so tests see which path ran.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "cxlpool/hal/gpu_copy.hpp"

namespace cxlpool::test {

// Shared by every engine a test opens (engines are opened by code under
// test, often through the registry).
struct HostCopyEngineLog {
  std::string refusal;  // why register_host_range refuses; empty: it registers
  std::atomic<int> bound_threads{0};
  std::atomic<uint64_t> bytes_to_device{0};
  std::atomic<uint64_t> bytes_to_host{0};
  std::atomic<int> synchronizes{0};
  std::atomic<int> fail_copies_with{0};  // errno every copy fails with; 0: they work
  void reset();
};

HostCopyEngineLog& host_copy_engine_log();

// Device ordinal 0 only (ENODEV otherwise), like a host with one GPU.
Result<std::unique_ptr<hal::GpuCopyEngine>> open_host_copy_engine(int device);

}  // namespace cxlpool::test
