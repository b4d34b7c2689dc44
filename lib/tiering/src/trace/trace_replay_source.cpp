// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/trace_replay_source.hpp"

#include <algorithm>
#include <limits>
#include <optional>

#include "cxlpool/tiering/trace_file.hpp"
#include "trace_codec.hpp"

namespace cxlpool::tiering {
namespace {

constexpr std::size_t kReadBatch = 16384;

Result<void> check_config(const TraceReplayConfig& config) {
  if (config.epoch_ns == 0 && config.epoch_records == 0) {
    return fail(EINVAL, "trace replay: epoch_ns and epoch_records are both 0");
  }
  return {};
}

Result<void> validate(std::span<const TraceRecord> records) {
  trace_detail::TraceValidator validator(EINVAL);
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (auto ok = validator.check_and_add(records[i], i); !ok) return ok;
  }
  return {};
}

}  // namespace

struct TraceReplaySource::State {
  State(ControllerModel m, const TraceReplayConfig& c) : model(std::move(m)), config(c) {}

  ControllerModel model;
  TraceReplayConfig config;
  std::optional<TraceReader> reader;
  std::vector<TraceRecord> owned;
  std::span<const TraceRecord> records;  // memory mode: the whole trace; file mode: the current batch
  std::size_t pos = 0;
  bool reader_done = false;
  bool started = false;
  bool finished = false;
  std::uint64_t epoch_start = 0;
  std::uint64_t last_start = 0;
  std::uint64_t last_end = 0;
  std::uint64_t total = 0;
  ControllerEpoch last;

  // The next record without consuming it; nullptr at the end.
  Result<const TraceRecord*> peek() {
    if (pos < records.size()) return &records[pos];
    if (!reader || reader_done) return nullptr;
    auto n = reader->next_batch(owned, kReadBatch);
    if (!n) return tl::unexpected(n.error());
    records = owned;
    pos = 0;
    if (*n == 0) {
      reader_done = true;
      return nullptr;
    }
    return &records[0];
  }
};

TraceReplaySource::TraceReplaySource(std::unique_ptr<State> state) : state_(std::move(state)) {}
TraceReplaySource::~TraceReplaySource() = default;

Result<std::unique_ptr<TraceReplaySource>> TraceReplaySource::open(const std::string& path,
                                                                   const TraceReplayConfig& config) {
  if (auto ok = check_config(config); !ok) return tl::unexpected(ok.error());
  auto model = ControllerModel::create(config.model);
  if (!model) return tl::unexpected(model.error());
  auto reader = TraceReader::open(path);
  if (!reader) return tl::unexpected(reader.error());
  auto state = std::make_unique<State>(std::move(*model), config);
  state->reader.emplace(std::move(*reader));
  return std::unique_ptr<TraceReplaySource>(new TraceReplaySource(std::move(state)));
}

Result<std::unique_ptr<TraceReplaySource>> TraceReplaySource::from_records(std::vector<TraceRecord> records,
                                                                           const TraceReplayConfig& config) {
  auto source = from_span(records, config);
  if (!source) return source;
  // The source takes the vector over and replays from it.
  State& state = *(*source)->state_;
  state.owned = std::move(records);
  state.records = state.owned;
  return source;
}

Result<std::unique_ptr<TraceReplaySource>> TraceReplaySource::from_span(std::span<const TraceRecord> records,
                                                                        const TraceReplayConfig& config) {
  if (auto ok = check_config(config); !ok) return tl::unexpected(ok.error());
  if (auto ok = validate(records); !ok) return tl::unexpected(ok.error());
  auto model = ControllerModel::create(config.model);
  if (!model) return tl::unexpected(model.error());
  auto state = std::make_unique<State>(std::move(*model), config);
  state->records = records;
  return std::unique_ptr<TraceReplaySource>(new TraceReplaySource(std::move(state)));
}

Result<void> TraceReplaySource::collect(std::vector<hal::PageAccess>& out) {
  State& s = *state_;
  if (s.finished) return {};
  auto next = s.peek();
  if (!next) return tl::unexpected(next.error());
  if (*next == nullptr) {
    s.finished = true;
    s.last = s.model.end_epoch();
    return {};
  }
  if (s.config.epoch_ns != 0) {
    if (!s.started) s.epoch_start = (*next)->timestamp_ns;
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t end = s.config.epoch_ns > max - s.epoch_start ? max : s.epoch_start + s.config.epoch_ns;
    // A record stamped exactly UINT64_MAX belongs to the last epoch.
    while (*next != nullptr && ((*next)->timestamp_ns < end || end == max)) {
      s.model.access(**next);
      ++s.pos;
      ++s.total;
      next = s.peek();
      if (!next) return tl::unexpected(next.error());
    }
    s.last_start = s.epoch_start;
    s.last_end = end;
    s.epoch_start = end;
  } else {
    s.last_start = (*next)->timestamp_ns;
    for (std::uint64_t n = 0; n < s.config.epoch_records && *next != nullptr; ++n) {
      s.model.access(**next);
      s.last_end = std::max((*next)->timestamp_ns, (*next)->timestamp_ns + 1);  // saturates at the top
      ++s.pos;
      ++s.total;
      next = s.peek();
      if (!next) return tl::unexpected(next.error());
    }
  }
  s.started = true;
  if (*next == nullptr) s.finished = true;
  s.last = s.model.end_epoch();
  out.reserve(out.size() + s.last.pages.size());
  for (const PageCount& p : s.last.pages) {
    out.push_back(hal::PageAccess{hal::AddressSpace::kTrace, 0, p.page << kModelPageShift, p.count, p.words, 1});
  }
  return {};
}

std::uint64_t TraceReplaySource::accesses_total() const { return state_->total; }
bool TraceReplaySource::finished() const { return state_->finished; }
const ControllerEpoch& TraceReplaySource::last_epoch() const { return state_->last; }
std::uint64_t TraceReplaySource::last_epoch_start_ns() const { return state_->last_start; }
std::uint64_t TraceReplaySource::last_epoch_end_ns() const { return state_->last_end; }
const ControllerModel& TraceReplaySource::model() const { return state_->model; }

}  // namespace cxlpool::tiering
