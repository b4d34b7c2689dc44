// SPDX-License-Identifier: Apache-2.0
#include "ofi_check_workers.hpp"

#include <utility>

namespace cxlpool::drivers::ofi {

CheckWorkers::CheckWorkers(std::size_t threads) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

CheckWorkers::~CheckWorkers() { stop(); }

bool CheckWorkers::post(Task task) {
  {
    std::lock_guard guard(mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void CheckWorkers::stop() {
  {
    std::lock_guard guard(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void CheckWorkers::run() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace cxlpool::drivers::ofi
