// SPDX-License-Identifier: Apache-2.0
#include "block_engine.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "io_buffers.hpp"
#include "sqpoll_thread.hpp"

namespace cxlpool::io {
namespace {

class BlockEngine final : public Engine {
 public:
  BlockEngine(std::string name, std::unique_ptr<hal::BlockDevice> device, bool fixedbufs,
              std::optional<pid_t> sqpoll_tid)
      : name_(std::move(name)), device_(std::move(device)), fixedbufs_(fixedbufs), sqpoll_tid_(sqpoll_tid) {
    if (sqpoll_tid_) helper_base_ = task_cpu(*sqpoll_tid_).value_or(HelperCpu{});
  }

  const char* name() const override { return name_.c_str(); }
  const hal::BlockGeometry& geometry() const override { return device_->geometry(); }

  Result<std::span<std::byte*>> buffers(std::uint32_t count, std::size_t bytes) override {
    if (auto ok = buffers_.allocate(count, bytes, device_->mem_alignment()); !ok) return tl::unexpected(ok.error());
    if (fixedbufs_) {
      std::vector<iovec> iov(count);
      for (std::uint32_t i = 0; i < count; ++i) iov[i] = {buffers_.pointers()[i], buffers_.stride()};
      if (auto ok = device_->register_buffers(iov); !ok)
        return fail(ok.error().code, name_ + ": fixedbufs: " + ok.error().message);
    }
    return buffers_.pointers();
  }

  Result<void> start() override {
    if (auto ok = device_->bind_to_thread(); !ok) return fail(ok.error().code, name_ + ": " + ok.error().message);
    return {};
  }

  Result<void> submit(std::span<const hal::IoRequest> requests) override { return device_->submit(requests); }

  Result<std::size_t> reap(std::span<hal::IoCompletion> out, std::size_t min,
                           std::chrono::nanoseconds timeout) override {
    return device_->poll_completions(out, min, timeout);
  }

  std::uint32_t in_flight() const override { return device_->in_flight(); }

  std::optional<HelperCpu> helper_cpu() const override {
    if (!sqpoll_tid_) return std::nullopt;
    // Once the ring is gone so is its thread; what it used until then was
    // read last time.
    if (auto now = task_cpu(*sqpoll_tid_)) {
      last_helper_ = HelperCpu{now->user_ns - std::min(now->user_ns, helper_base_.user_ns),
                               now->system_ns - std::min(now->system_ns, helper_base_.system_ns)};
    }
    return last_helper_;
  }

 private:
  std::string name_;
  std::unique_ptr<hal::BlockDevice> device_;
  bool fixedbufs_;
  std::optional<pid_t> sqpoll_tid_;
  HelperCpu helper_base_;
  mutable HelperCpu last_helper_;
  IoBuffers buffers_;
};

hal::BlockOpenOptions open_options(const JobSpec& job, const EngineTarget& target) {
  hal::BlockOpenOptions o;
  o.direct = job.direct;
  o.read_only = !target.writes;
  o.create = target.writes;
  o.truncate_to = 0;  // the runner lays files out; never shrink one here
  o.allow_char_device = true;  // fio reads and writes /dev/null, /dev/zero and the like
  o.queue_depth = std::max<std::uint32_t>(1, job.iodepth);
  o.sq_poll = job.sqthread_poll;
  o.sq_poll_cpu = job.sqthread_poll_cpu;
  o.io_poll = job.hipri;
  // SQPOLL rings submit without us entering the kernel: fio registers the
  // file for them as well.
  o.register_files = job.registerfiles || job.sqthread_poll;
  // fio's io_uring engine asks for this too: the runner waits inside
  // io_uring_enter, so completions need no interrupt to reach it.
  o.coop_taskrun = true;
  // Nothing here waits in epoll: no eventfd to signal per completion.
  o.completion_eventfd = false;
  // One thread runs each job's I/O and waits in io_uring_enter, so
  // completions are processed there (fio's io_uring engine does the same:
  // SINGLE_ISSUER | DEFER_TASKRUN).
  o.single_thread = true;
  return o;
}

Result<std::unique_ptr<Engine>> wrap(const std::string& engine, Result<std::unique_ptr<hal::BlockDevice>> dev,
                                     const JobSpec& job, std::optional<pid_t> sqpoll_tid = std::nullopt) {
  if (!dev) return fail(dev.error().code, engine + ": " + dev.error().message);
  return std::unique_ptr<Engine>(new BlockEngine(engine, std::move(*dev), job.fixedbufs, sqpoll_tid));
}

// fio's engine names and the registry's names of the same BlockEngine
// backends; null for anything else.
const char* backend_of(std::string_view engine) {
  // fio's sync engine uses read/write after lseek, psync pread/pwrite: the
  // same positioned transfer, one system call fewer here.
  if (engine == "psync" || engine == "sync") return "posix";
  if (engine == "io_uring") return "uring";
  if (engine == "libaio") return "aio";
  if (engine == "mmap") return "mmap";
  return nullptr;
}

Result<void> refuse_uring_only(const JobSpec& job) {
  const char* opt = job.fixedbufs ? "fixedbufs" : job.registerfiles ? "registerfiles"
                  : job.sqthread_poll ? "sqthread_poll" : job.hipri ? "hipri" : nullptr;
  if (opt != nullptr) return fail(EINVAL, job.ioengine + ": option '" + opt + "' needs ioengine=io_uring");
  return {};
}

}  // namespace

bool is_block_engine(std::string_view e) { return backend_of(e) != nullptr; }

bool block_engine_usable(std::string_view e) {
  const char* backend = backend_of(e);
  if (backend == nullptr) return false;
  const auto usable = hal::usable_backend_names(hal::BackendClass::kBlockEngine);
  return std::find(usable.begin(), usable.end(), backend) != usable.end();
}

Result<std::unique_ptr<Engine>> open_block_engine(const JobSpec& job, const EngineTarget& target) {
  const std::string& e = job.ioengine;
  const bool uring = e == "io_uring";
  if (!uring) {
    if (auto ok = refuse_uring_only(job); !ok) return tl::unexpected(ok.error());
  }
  const char* backend = backend_of(e);
  if (backend == nullptr) return fail(EINVAL, "ioengine '" + e + "' is not a block engine");
  // An engine this program lacks, or one CXLPOOL_BACKENDS excludes, is
  // ENOTSUP from the registry, with the build's reason.
  const auto before = uring && job.sqthread_poll ? task_ids() : std::vector<pid_t>{};
  auto dev = hal::open_block_device(backend, target.path, open_options(job, target));
  std::optional<pid_t> tid;
  if (dev && uring && job.sqthread_poll) tid = new_task(before, task_ids());
  return wrap(e, std::move(dev), job, tid);
}

}  // namespace cxlpool::io
