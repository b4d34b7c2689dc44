#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sanitize.sh TOOL PROGRAM [ARGS...]: runs PROGRAM under NVIDIA's
# compute-sanitizer with --tool TOOL (memcheck, racecheck, ...), failing on
# any error it reports. Exit 77 (a skip for meson and tests/gpu/run.sh) with
# the reason when compute-sanitizer is not installed; CUDA_SANITIZER names
# it explicitly.
set -euo pipefail
tool="${1:?usage: sanitize.sh TOOL PROGRAM [ARGS...]}"
shift
sanitizer="${CUDA_SANITIZER:-}"
if [[ -z "$sanitizer" ]]; then
  sanitizer="$(command -v compute-sanitizer || true)"
fi
if [[ -z "$sanitizer" ]]; then
  for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
                   /opt/nvidia/compute-sanitizer/compute-sanitizer; do
    if [[ -x "$candidate" ]]; then
      sanitizer="$candidate"
      break
    fi
  done
fi
if [[ -z "$sanitizer" || ! -x "$sanitizer" ]]; then
  echo "SKIP: compute-sanitizer not found (PATH, /usr/local/cuda; set CUDA_SANITIZER)"
  exit 77
fi
echo "$sanitizer --tool $tool $*"
exec "$sanitizer" --tool "$tool" --error-exitcode 1 --print-limit 20 "$@"
