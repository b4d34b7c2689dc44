#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tiering evaluation on recorded traces (record_traces.sh): every
# policy at fast-tier fractions 0.25 and 0.10, M5 at tracker sampling 1 and
# 1/8, tiering and detection runs. One results folder per fraction (results.md,
# results.csv, results.json, ratio.svg, share_<trace>.svg: the fast-tier
# share over time per policy), and a summary table on stdout.
#
#   tests/bench/tiering/eval_real_traces.sh [BUILD_DIR] [TRACE_DIR] [RESULTS_DIR]
#
# EVAL=path overrides the cxlpool-tiering-eval binary (a before/after run);
# EVAL_ARGS adds options to every run (e.g. "--sampling-exact 1").
set -euo pipefail
build=${1:-build}
traces=${2:-tiering-traces}
results=${3:-tiering-results}
eval_bin=${EVAL:-$build/tools/tiering-eval/cxlpool-tiering-eval}
[[ -x $eval_bin ]] || { echo "eval_real_traces.sh: $eval_bin is not built" >&2; exit 1; }
shopt -s nullglob
files=("$traces"/*.trace)
((${#files[@]})) || { echo "eval_real_traces.sh: no traces in $traces (tests/bench/tiering/record_traces.sh)" >&2; exit 1; }
args=()
read -r -a extra <<<"${EVAL_ARGS:-}"
for f in "${files[@]}"; do args+=(--trace "$f"); done
for fraction in 0.25 0.10; do
  mkdir -p "$results/fast-$fraction"
  "$eval_bin" "${args[@]}" ${extra[@]+"${extra[@]}"} --fast-fraction "$fraction" --sampling-rate 1,1/8 --results "$results/fast-$fraction" \
      2>"$results/fast-$fraction/progress.log" |
    sed -n '/^trace /,/^$/p' | sed "s/^/[fast $fraction] /"
done
