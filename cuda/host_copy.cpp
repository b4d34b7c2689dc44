// SPDX-License-Identifier: Apache-2.0
#include "host_copy.hpp"

#include <utility>

#include "driver_api.hpp"

namespace cxlpool::cuda {

Result<PinnedHostBuffer> PinnedHostBuffer::allocate(const DeviceContext& ctx, size_t bytes) {
  if (bytes == 0) return fail(EINVAL, "cuda: pinned buffer of 0 bytes");
  void* ptr = nullptr;
  CXLPOOL_CU_TRY(ctx.api(), mem_host_alloc, &ptr, bytes, CU_MEMHOSTALLOC_PORTABLE);
  return PinnedHostBuffer(&ctx.api(), ptr, bytes);
}

void free_pinned_host_memory(const DriverApi& api, void* ptr) { api.mem_free_host(ptr); }

Result<CopyStream> CopyStream::create(const DeviceContext& ctx) {
  CUstream stream = nullptr;
  CXLPOOL_CU_TRY(ctx.api(), stream_create, &stream, CU_STREAM_NON_BLOCKING);
  return CopyStream(&ctx.api(), stream);
}

CopyStream::CopyStream(CopyStream&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      stream_(std::exchange(other.stream_, nullptr)),
      events_(std::move(other.events_)),
      free_tickets_(std::move(other.free_tickets_)) {}

CopyStream& CopyStream::operator=(CopyStream&& other) noexcept {
  if (this != &other) {
    reset();
    api_ = std::exchange(other.api_, nullptr);
    stream_ = std::exchange(other.stream_, nullptr);
    events_ = std::move(other.events_);
    free_tickets_ = std::move(other.free_tickets_);
  }
  return *this;
}

CopyStream::~CopyStream() { reset(); }

void CopyStream::reset() {
  if (stream_ == nullptr) return;
  api_->stream_synchronize(static_cast<CUstream>(stream_));
  for (void* e : events_) api_->event_destroy(static_cast<CUevent>(e));
  api_->stream_destroy(static_cast<CUstream>(stream_));
  events_.clear();
  free_tickets_.clear();
  stream_ = nullptr;
}

Result<void> CopyStream::to_device(uint64_t dst, const void* src, size_t bytes) {
  CXLPOOL_CU_TRY(*api_, memcpy_htod_async, static_cast<CUdeviceptr>(dst), src, bytes,
                 static_cast<CUstream>(stream_));
  return {};
}

Result<void> CopyStream::to_host(void* dst, uint64_t src, size_t bytes) {
  CXLPOOL_CU_TRY(*api_, memcpy_dtoh_async, dst, static_cast<CUdeviceptr>(src), bytes,
                 static_cast<CUstream>(stream_));
  return {};
}

Result<CopyStream::Ticket> CopyStream::mark() {
  Ticket t = 0;
  if (!free_tickets_.empty()) {
    t = free_tickets_.back();
    free_tickets_.pop_back();
  } else {
    CUevent e = nullptr;
    CXLPOOL_CU_TRY(*api_, event_create, &e, CU_EVENT_DISABLE_TIMING);
    t = static_cast<Ticket>(events_.size());
    events_.push_back(e);
  }
  if (const CUresult r = api_->event_record(static_cast<CUevent>(events_[t]),
                                            static_cast<CUstream>(stream_));
      r != CUDA_SUCCESS) {
    free_tickets_.push_back(t);
    return tl::unexpected(cu_error(*api_, "event_record", r));
  }
  return t;
}

Result<bool> CopyStream::reached(Ticket ticket) {
  if (ticket >= events_.size()) return fail(EINVAL, "cuda: unknown copy ticket");
  const CUresult r = api_->event_query(static_cast<CUevent>(events_[ticket]));
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (r != CUDA_SUCCESS) return tl::unexpected(cu_error(*api_, "event_query", r));
  free_tickets_.push_back(ticket);
  return true;
}

Result<void> CopyStream::wait(Ticket ticket) {
  if (ticket >= events_.size()) return fail(EINVAL, "cuda: unknown copy ticket");
  CXLPOOL_CU_TRY(*api_, event_synchronize, static_cast<CUevent>(events_[ticket]));
  free_tickets_.push_back(ticket);
  return {};
}

Result<void> CopyStream::synchronize() {
  CXLPOOL_CU_TRY(*api_, stream_synchronize, static_cast<CUstream>(stream_));
  return {};
}

}  // namespace cxlpool::cuda
