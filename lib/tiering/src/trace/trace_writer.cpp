// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/tiering/trace_file.hpp"
#include "trace_codec.hpp"

namespace cxlpool::tiering {
namespace {

constexpr std::size_t kBufferRecords = 16384;  // 384 KiB per write(2)

Result<void> write_all(int fd, const std::byte* p, std::size_t n, off_t offset, bool positioned,
                       const std::string& path) {
  while (n > 0) {
    const ssize_t w = positioned ? ::pwrite(fd, p, n, offset) : ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail_errno("write " + path);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    offset += w;
  }
  return {};
}

}  // namespace

struct TraceWriter::State {
  std::string path;
  UniqueFd fd;
  trace_detail::TraceValidator validator{EINVAL};
  std::vector<std::byte> buffer;
  std::size_t buffered = 0;  // bytes in buffer

  Result<void> flush() {
    auto ok = write_all(fd.get(), buffer.data(), buffered, 0, false, path);
    buffered = 0;
    return ok;
  }
};

TraceWriter::TraceWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceWriter::TraceWriter(TraceWriter&&) noexcept = default;
TraceWriter& TraceWriter::operator=(TraceWriter&&) noexcept = default;
TraceWriter::~TraceWriter() = default;

Result<TraceWriter> TraceWriter::create(const std::string& path) {
  auto state = std::make_unique<State>();
  state->path = path;
  state->fd.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!state->fd) return fail_errno("create " + path);
  // Placeholder without the complete flag until finish() rewrites it.
  const auto header = encode_trace_header(state->validator.summary(0));
  if (auto ok = write_all(state->fd.get(), header.data(), header.size(), 0, false, path); !ok) {
    return tl::unexpected(ok.error());
  }
  state->buffer.resize(kBufferRecords * kTraceRecordBytes);
  return TraceWriter(std::move(state));
}

Result<void> TraceWriter::write(std::span<const TraceRecord> records) {
  State& s = *state_;
  if (!s.fd) return fail(EBADF, "trace writer " + s.path + ": already finished");
  // Validate the whole batch first so a rejected batch leaves nothing behind.
  trace_detail::TraceValidator probe = s.validator;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (auto ok = probe.check_and_add(records[i], s.validator.count() + i); !ok) return ok;
  }
  for (const TraceRecord& r : records) {
    if (s.buffered == s.buffer.size()) {
      if (auto ok = s.flush(); !ok) return ok;
    }
    trace_detail::put_record(s.buffer.data() + s.buffered, r);
    s.buffered += kTraceRecordBytes;
  }
  s.validator = probe;
  return {};
}

Result<void> TraceWriter::finish() {
  State& s = *state_;
  if (!s.fd) return fail(EBADF, "trace writer " + s.path + ": already finished");
  if (auto ok = s.flush(); !ok) return ok;
  const auto header = encode_trace_header(s.validator.summary(kTraceFlagComplete));
  if (auto ok = write_all(s.fd.get(), header.data(), header.size(), 0, true, s.path); !ok) return ok;
  if (::close(s.fd.release()) != 0) return fail_errno("close " + s.path);
  return {};
}

std::uint64_t TraceWriter::records_written() const { return state_->validator.count(); }

Result<void> write_trace(const std::string& path, std::span<const TraceRecord> records) {
  auto writer = TraceWriter::create(path);
  if (!writer) return tl::unexpected(writer.error());
  if (auto ok = writer->write(records); !ok) return ok;
  return writer->finish();
}

}  // namespace cxlpool::tiering
