// SPDX-License-Identifier: Apache-2.0
// Threads that serve peers' checksum and verify requests for the owner's
// memory. A rail's own thread must not do it: over tcp the owner's
// progress is manual, so a rail thread busy with the CRC-32C of megabytes
// stops moving the data that arrives meanwhile, and a reader's chunks or
// a writer's next request wait behind a check that could run beside them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cxlpool::drivers::ofi {

class CheckWorkers {
 public:
  using Task = std::function<void()>;
  explicit CheckWorkers(std::size_t threads);
  ~CheckWorkers();
  CheckWorkers(const CheckWorkers&) = delete;
  CheckWorkers& operator=(const CheckWorkers&) = delete;

  // Queues a task; false once stop() began (the caller runs it itself or
  // drops it).
  bool post(Task task);
  // Runs what is queued, then joins the threads. Idempotent.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cxlpool::drivers::ofi
