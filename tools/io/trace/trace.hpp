// SPDX-License-Identifier: Apache-2.0
// Block I/O traces to replay (trace_file= / the trace-replay profile): the
// kernel's block layer as recorded by bpftrace, or fio's own iologs. Both are
// read into one list of timed reads and writes the runner issues in order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "../job/job_spec.hpp"

namespace cxlpool::io {

struct TraceOp {
  std::uint64_t time_ns = 0;  // since the trace's first operation
  int direction = kReadDir;   // kReadDir or kWriteDir
  std::uint64_t offset = 0;   // bytes
  std::uint32_t bytes = 0;
};

// What a trace held besides reads and writes. Flushes, discards and fio's
// open/close/wait actions are not replayed (only their timing is kept:
// a replayed op keeps its own time stamp); they are counted so a caller can
// say what was left out.
struct TraceSummary {
  std::uint64_t flushes = 0;   // bpftrace rwbs without data ("F", "FF"), fio sync/datasync
  std::uint64_t discards = 0;  // bpftrace "D...", fio trim
  std::uint64_t files = 1;     // distinct file names in a fio iolog (all replay on the job's file)
};

struct Trace {
  std::vector<TraceOp> ops;
  TraceSummary summary;
};

// Formats, as JobSpec::trace_format spells them:
//  "bpftrace"  — one line per request with the columns
//                  nsecs rwbs bytes sector nr_sector
//                as printed by
//                  bpftrace -e 'tracepoint:block:block_rq_issue
//                    { printf("%llu %s %u %llu %u\n", nsecs, args->rwbs,
//                      args->bytes, args->sector, args->nr_sector); }'
//                (a device filter such as `/args->dev == 271581184/` may be
//                added). bpftrace's "Attaching N probe..." line and a header
//                line naming the columns are accepted; sectors are 512 bytes.
//  "fio-iolog" — fio's write_iolog output, version 2 ("fio version 2 iolog",
//                timing from "wait" actions in microseconds) or version 3
//                ("fio version 3 iolog", a leading time stamp in microseconds
//                since the run started, as fio 3.33 writes it).
//  ""          — detect: a fio iolog header, else bpftrace.
// Errors (EINVAL) read "origin:line: why"; an unreadable file is the errno.
Result<Trace> parse_trace(std::string_view text, std::string_view format, std::string_view origin);
Result<Trace> load_trace(const std::string& path, std::string_view format);

// load_trace's operations alone.
Result<std::vector<TraceOp>> read_trace(const std::string& path, std::string_view format);

// True for the names above ("bpftrace", "fio-iolog", "").
bool is_trace_format(std::string_view format);

}  // namespace cxlpool::io
