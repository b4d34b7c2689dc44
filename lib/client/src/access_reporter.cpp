// SPDX-License-Identifier: Apache-2.0
#include "access_reporter.hpp"

#include <algorithm>
#include <string>

namespace cxlpool::client {

Result<void> AccessReporter::open(uint32_t entries) {
  std::lock_guard lock(mutex_);
  if (open_) return fail(EALREADY, "the access ring is open already");
  return open_locked(entries);
}

Result<void> AccessReporter::open_locked(uint32_t entries) {
  auto received = conn_->call(proto::AccessRingOpen{entries});
  auto remember = [&](Error e) -> Result<void> {
    open_error_ = e;
    return tl::unexpected(std::move(e));
  };
  if (!received) return remember(received.error());
  auto* reply = std::get_if<proto::AccessRingReply>(&received->envelope.message);
  if (reply == nullptr || received->fds.size() != 1) {
    return remember(Error{EPROTO, "daemon reply carries no access ring"});
  }
  if (reply->entry_size != sizeof(proto::AccessRingEntry) ||
      reply->ring_bytes != proto::access_ring_bytes(reply->entries)) {
    return remember(Error{EPROTO, "access ring of " + std::to_string(reply->entries) + " entries of " +
                                      std::to_string(reply->entry_size) + " bytes in " +
                                      std::to_string(reply->ring_bytes) + " bytes: not this library's layout"});
  }
  auto memory = proto::AccessRingMemory::map(received->fds[0].get(), reply->ring_bytes);
  if (!memory) return remember(memory.error());
  auto producer = proto::AccessRingProducer::attach(memory->bytes());
  if (!producer) return remember(producer.error());
  memory_ = std::move(*memory);
  producer_ = *producer;
  open_ = true;
  open_error_.reset();
  return {};
}

Result<uint64_t> AccessReporter::report(uint64_t region_id, uint64_t offset, uint64_t length, uint32_t flags) {
  std::lock_guard lock(mutex_);
  if (!open_) {
    if (open_error_) return tl::unexpected(*open_error_);
    if (auto ok = open_locked(0); !ok) return tl::unexpected(ok.error());
  }
  uint64_t dropped = 0;
  while (length > 0) {
    const uint32_t chunk = static_cast<uint32_t>(std::min(length, kMaxEntryBytes));
    if (batched_ > 0) {
      auto& last = batch_[batched_ - 1];
      if (last.region_id == region_id && last.offset == offset && last.length == chunk && last.flags == flags &&
          last.count != UINT32_MAX) {
        ++last.count;
        offset += chunk;
        length -= chunk;
        continue;
      }
    }
    // Publish when a new entry finds the batch full, not when the batch
    // fills: its last entry can still absorb a run of identical reports.
    if (batched_ == kBatch) {
      auto published = publish_locked();
      if (!published) return published;
      dropped += *published;
    }
    batch_[batched_++] = proto::AccessRingEntry{region_id, offset, chunk, 1, flags, 0};
    offset += chunk;
    length -= chunk;
  }
  return dropped;
}

Result<uint64_t> AccessReporter::flush() {
  std::lock_guard lock(mutex_);
  if (!open_ || batched_ == 0) return uint64_t{0};
  return publish_locked();
}

Result<uint64_t> AccessReporter::publish_locked() {
  // No check of the connection here: that would wait for its lock, which a
  // long call (a migration) holds. After a disconnect nobody drains the
  // ring, so it fills and further batches count as dropped.
  const size_t n = batched_;
  batched_ = 0;
  return n - producer_.try_push(std::span(batch_.data(), n));
}

}  // namespace cxlpool::client
