// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <optional>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/tiering/trace_file.hpp"
#include "trace_codec.hpp"

namespace cxlpool::tiering {
namespace {

// Fills exactly n bytes unless the file ends first; returns the bytes read.
Result<std::size_t> read_full(int fd, std::byte* p, std::size_t n, const std::string& path) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail_errno("read " + path);
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

constexpr std::size_t kReadChunkRecords = 16384;

}  // namespace

struct TraceReader::State {
  std::string path;
  UniqueFd fd;
  TraceHeader header;
  trace_detail::TraceValidator validator{EBADMSG};
  std::vector<std::byte> bytes;
  bool summary_checked = false;
  std::optional<Error> failed;  // a bad record poisons the rest of the stream

  Result<std::size_t> fail_with(Error e) {
    e.message = path + ": " + e.message;
    failed = e;
    return tl::unexpected(std::move(e));
  }
};

TraceReader::TraceReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;
TraceReader::~TraceReader() = default;

Result<TraceReader> TraceReader::open(const std::string& path) {
  auto state = std::make_unique<State>();
  state->path = path;
  state->fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!state->fd) return fail_errno("open " + path);
  struct stat st {};
  if (::fstat(state->fd.get(), &st) != 0) return fail_errno("stat " + path);
  if (!S_ISREG(st.st_mode)) return fail(EINVAL, path + ": not a regular file");
  std::array<std::byte, kTraceHeaderBytes> raw{};
  auto got = read_full(state->fd.get(), raw.data(), raw.size(), path);
  if (!got) return tl::unexpected(got.error());
  auto header = decode_trace_header(std::span(raw.data(), *got));
  if (!header) return fail(header.error().code, path + ": " + header.error().message);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::uint64_t body = size - kTraceHeaderBytes;
  if (header->record_count > body / kTraceRecordBytes) {
    return fail(EBADMSG, path + ": truncated: header says " + std::to_string(header->record_count) +
                             " records, file holds " + std::to_string(body / kTraceRecordBytes));
  }
  if (body != header->record_count * kTraceRecordBytes) {
    return fail(EBADMSG, path + ": " + std::to_string(body - header->record_count * kTraceRecordBytes) +
                             " bytes after the " + std::to_string(header->record_count) + " records the header names");
  }
  state->header = *header;
  return TraceReader(std::move(state));
}

const TraceHeader& TraceReader::header() const { return state_->header; }

std::uint64_t TraceReader::position() const { return state_->validator.count(); }

Result<std::size_t> TraceReader::next_batch(std::vector<TraceRecord>& out, std::size_t max) {
  State& s = *state_;
  out.clear();
  if (s.failed) return tl::unexpected(*s.failed);
  if (max == 0) return fail(EINVAL, "trace reader: batch size 0");
  const std::uint64_t left = s.header.record_count - s.validator.count();
  if (left == 0) {
    if (!s.summary_checked) {
      if (auto ok = s.validator.check_summary(s.header); !ok) return s.fail_with(ok.error());
      s.summary_checked = true;
    }
    return std::size_t{0};
  }
  const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>({left, max, kReadChunkRecords}));
  s.bytes.resize(want * kTraceRecordBytes);
  auto got = read_full(s.fd.get(), s.bytes.data(), s.bytes.size(), s.path);
  if (!got) return tl::unexpected(got.error());
  if (*got != s.bytes.size()) {
    // The file shrank after open().
    return s.fail_with({EBADMSG, "truncated at record " + std::to_string(s.validator.count() + *got / kTraceRecordBytes)});
  }
  out.reserve(want);
  for (std::size_t i = 0; i < want; ++i) {
    const std::uint64_t index = s.validator.count();
    auto r = trace_detail::get_record(s.bytes.data() + i * kTraceRecordBytes, index);
    if (!r) return s.fail_with(r.error());
    if (auto ok = s.validator.check_and_add(*r, index); !ok) return s.fail_with(ok.error());
    out.push_back(*r);
  }
  return want;
}

Result<std::vector<TraceRecord>> read_trace(const std::string& path) {
  auto reader = TraceReader::open(path);
  if (!reader) return tl::unexpected(reader.error());
  std::vector<TraceRecord> all;
  all.reserve(static_cast<std::size_t>(reader->header().record_count));
  std::vector<TraceRecord> batch;
  for (;;) {
    auto n = reader->next_batch(batch, kReadChunkRecords);
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) break;
    all.insert(all.end(), batch.begin(), batch.end());
  }
  return all;
}

}  // namespace cxlpool::tiering
