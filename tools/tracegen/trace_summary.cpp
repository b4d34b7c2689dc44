// SPDX-License-Identifier: Apache-2.0
#include "trace_summary.hpp"

#include <bit>
#include <cmath>

#include "cxlpool/tiering/controller_model.hpp"

namespace cxlpool::tracegen {
namespace {

using tiering::ControllerEpoch;
using tiering::ControllerModel;
using tiering::TraceRecord;

std::uint64_t count_sparse(const ControllerEpoch& e) {
  std::uint64_t n = 0;
  for (const auto& p : e.pages) n += std::popcount(p.words) <= kSparseMaxWords;
  return n;
}

}  // namespace

Result<TraceSummary> summarize_trace(const std::string& path, std::uint64_t epoch_ns) {
  auto reader = tiering::TraceReader::open(path);
  if (!reader) return tl::unexpected(reader.error());
  auto whole = ControllerModel::create({});
  if (!whole) return tl::unexpected(whole.error());
  auto epoch = ControllerModel::create({});
  if (!epoch) return tl::unexpected(epoch.error());
  TraceSummary s;
  s.header = reader->header();
  s.epoch_ns = epoch_ns;
  std::uint64_t epoch_end =
      epoch_ns > ~0ull - s.header.first_timestamp_ns ? ~0ull : s.header.first_timestamp_ns + epoch_ns;
  std::uint64_t epoch_pages = 0, epoch_sparse = 0;
  const auto close_epoch = [&] {
    const ControllerEpoch e = epoch->end_epoch();
    ++s.epochs;
    epoch_pages += e.pages.size();
    epoch_sparse += count_sparse(e);
  };
  std::vector<TraceRecord> batch;
  for (;;) {
    auto n = reader->next_batch(batch, 65536);
    if (!n) return tl::unexpected(n.error());
    if (*n == 0) break;
    for (const TraceRecord& r : batch) {
      s.writes += r.is_write;
      whole->access(r);
      if (epoch_ns == 0) continue;
      if (r.timestamp_ns >= epoch_end && epoch_end != ~0ull) {
        close_epoch();
        // Skip empty epochs arithmetically: a trace with a long gap must not
        // cost one iteration per empty epoch.
        const std::uint64_t skipped = (r.timestamp_ns - epoch_end) / epoch_ns;
        s.epochs += skipped;
        const unsigned __int128 next = static_cast<unsigned __int128>(skipped + 1) * epoch_ns + epoch_end;
        epoch_end = next > ~0ull ? ~0ull : static_cast<std::uint64_t>(next);
      }
      epoch->access(r);
    }
  }
  if (epoch_ns != 0 && s.header.record_count > 0) close_epoch();
  s.pages_touched = whole->pages_touched();
  s.words_touched = whole->words_touched();
  const auto top = whole->true_top_k(static_cast<std::size_t>(std::ceil(0.01 * static_cast<double>(s.pages_touched))));
  std::uint64_t top_accesses = 0;
  std::uint64_t top_sparse = 0;
  for (const auto& p : top) {
    top_accesses += p.count;
    top_sparse += std::popcount(p.words) <= kSparseMaxWords;
  }
  s.top1_sparse_fraction = top.empty() ? 0 : static_cast<double>(top_sparse) / static_cast<double>(top.size());
  const ControllerEpoch all = whole->end_epoch();
  s.page_accesses = all.page_accesses;
  s.sparse_pages = count_sparse(all);
  s.top1_share = s.page_accesses ? static_cast<double>(top_accesses) / static_cast<double>(s.page_accesses) : 0;
  if (s.epochs > 0) {
    s.mean_pages_per_epoch = static_cast<double>(epoch_pages) / static_cast<double>(s.epochs);
    s.epoch_sparse_fraction = epoch_pages ? static_cast<double>(epoch_sparse) / static_cast<double>(epoch_pages) : 0;
  }
  return s;
}

}  // namespace cxlpool::tracegen
