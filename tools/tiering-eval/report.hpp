// SPDX-License-Identifier: Apache-2.0
// The evaluation's outputs: a text table for the terminal, and in the
// results directory results.md, results.csv, results.json and SVG plots
// (fast-tier share over time per trace, access-count ratios per trace).
#pragma once

#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "evaluation.hpp"

namespace cxlpool::tiering::eval {

struct RunInfo {
  std::string command;     // as invoked
  std::string host;        // machine and load, free text
  std::vector<TraceSummary> traces;
  std::vector<std::string> trace_origins;  // per trace: file path or generator parameters
  EvalOptions options;
  double wall_s = 0;
};

std::string format_table(const std::vector<PolicyRow>& rows);

// Targets of the evaluation, checked on the rows (rate-1 M5 rows):
// ratio >= 0.9 on every trace; >= 1.5x the better baseline on the sparse
// and shifting traces; fast-tier share >= 0.95 of the oracle's.
std::string format_targets(const std::vector<PolicyRow>& rows);

// Creates `dir` if needed and writes every output file. errno on I/O failure.
Result<void> write_results(const std::string& dir, const RunInfo& info, const std::vector<PolicyRow>& rows);

}  // namespace cxlpool::tiering::eval
