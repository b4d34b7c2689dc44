#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every GPU test and benchmark (meson suite `gpu`) on a host with an
# NVIDIA GPU: the cuda unit tests (kernels vs CPU references, the cuda
# GpuVmm backend, host-NUMA export, registered read-only and read-write host
# ranges), the kernel tests under compute-sanitizer memcheck and racecheck,
# the CUDA weight streamer, ioengine=cuda, the integration suites that use a
# GPU (KvArena, GpuHostAlloc) against the real daemon, the Python package's
# CUDA cases (python_cuda: arena tensors, SDPA over them, the tiny decoder on
# CUDA; under the host's python3, no pytest needed), then the benchmarks
# with their figures: attention_bench (decode attention, contiguous arena vs
# paged, against the device's copy bandwidth), sdpa_compare (PyTorch's
# scaled_dot_product_attention on the same shapes, where the host has
# PyTorch), gpu_bench (H2D/D2H pinned and pageable vs the PCIe link, VMM
# mapping bandwidth), cuda_client_bench (arena steps, mapping, KV
# offload/restore of device rows, weight streaming) and
# python_tiny_decoder_cuda (the Python example's decode tokens/s on CUDA,
# arena against plain torch tensors).
#
# Two ways to run it:
#  - from a bundle made by tests/gpu/bundle.sh (this script sits beside a
#    tests.sh there): `DEST/run.sh [OUTDIR] [NAME-REGEX]` runs the packed
#    programs (those whose name matches NAME-REGEX, a bash regular
#    expression) with the bundle's libraries, needing nothing of the build
#    host; each case's output goes to OUTDIR/<name>.log (default DEST/out),
#    benchmark logs are printed too; CXLPOOL_GPU_CASE_TIMEOUT (seconds)
#    lowers every case's time limit; CXLPOOL_GPU_BUNDLE_CHECK=1 runs the
#    cases without a GPU (they skip) to check a bundle where it was made;
#  - from the source tree: `tests/gpu/run.sh [extra meson setup args]`
#    builds with -Dcuda=enabled in $CXLPOOL_GPU_BUILDDIR (default
#    <repo>/build-gpu) and runs the suite with meson.
# Either way CXLPOOL_REQUIRE_GPU=1 is set: with a GPU present a GPU case
# that skips is a failure. Exit: 0 all passed, 77 no usable GPU here,
# anything else a failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Same question the tests ask: does libcuda.so.1 load, does cuInit succeed,
# is there a device? Answered before spending minutes on anything else.
gpu_check() {
  python3 - <<'PY' 2>&1
import ctypes, sys
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError:
    sys.exit("libcuda.so.1 not found (no NVIDIA driver)")
r = cu.cuInit(0)
if r != 0:
    sys.exit("cuInit failed: CUresult %d" % r)
n = ctypes.c_int(0)
r = cu.cuDeviceGetCount(ctypes.byref(n))
if r != 0 or n.value == 0:
    sys.exit("no CUDA devices")
v = ctypes.c_int(0)
cu.cuDriverGetVersion(ctypes.byref(v))
print("%d CUDA device(s), driver API %d.%d" % (n.value, v.value // 1000, v.value % 1000 // 10))
PY
}

if [[ -f "$here/tests.sh" ]]; then
  # ---- bundle mode
  G="$here"
  out="${1:-$G/out}"
  filter="${2:-}"
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  # The bundle's libraries reach the packed programs only (through each
  # case's environment): the host's own tools (python3, nvidia-smi,
  # compute-sanitizer) keep the host's libraries.
  libs="$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if why="$(gpu_check)"; then
    echo "GPU host: $why"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
      echo "nvidia-smi: not available"
    export CXLPOOL_REQUIRE_GPU=1
  elif [[ "${CXLPOOL_GPU_BUNDLE_CHECK:-}" == 1 ]]; then
    # Checking a bundle where it was made: every program must start; the
    # GPU cases skip.
    echo "no GPU ($why): checking that the bundle runs, GPU cases skip"
  else
    echo "SKIP: $why"
    exit 77
  fi
  passed=0 failed=0 skipped=0
  failures=()
  # gpu_case NAME TIMEOUT test|benchmark [VAR=VALUE...] -- PROGRAM [ARGS...]
  gpu_case() {
    local name="$1" limit="$2" kind="$3"
    shift 3
    [[ -n "$filter" && ! "$name" =~ $filter ]] && return 0
    if [[ -n "${CXLPOOL_GPU_CASE_TIMEOUT:-}" && "$CXLPOOL_GPU_CASE_TIMEOUT" -lt "$limit" ]]; then
      limit="$CXLPOOL_GPU_CASE_TIMEOUT"
    fi
    local env=("LD_LIBRARY_PATH=$libs") cmd=() arg
    while [[ $# -gt 0 && "$1" != "--" ]]; do env+=("${1//\$G\//$G/}"); shift; done
    shift
    for arg in "$@"; do cmd+=("${arg//\$G\//$G/}"); done
    local log="$out/$name.log" start=$SECONDS rc=0
    env "${env[@]}" timeout "$limit" "${cmd[@]}" >"$log" 2>&1 || rc=$?
    local result
    case "$rc" in
      0) result="ok"; passed=$((passed + 1)) ;;
      77) result="SKIP"; skipped=$((skipped + 1)) ;;
      124) result="TIMEOUT"; failed=$((failed + 1)); failures+=("$name") ;;
      *) result="FAIL rc=$rc"; failed=$((failed + 1)); failures+=("$name") ;;
    esac
    printf '%-42s %-12s %4ss  %s\n' "$name" "$result" $((SECONDS - start)) \
      "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|^SKIP:' "$log" | head -3 | tr '\n' ' ' | cut -c1-110)"
    if [[ "$kind" == "benchmark" || "$rc" != 0 ]]; then
      sed 's/^/    /' "$log" | tail -n 60
    fi
  }
  # shellcheck source=/dev/null
  . "$G/tests.sh"
  echo "$passed passed, $failed failed, $skipped skipped${failures:+: ${failures[*]}}"
  [[ $failed -eq 0 ]]
  exit
fi

# ---- source-tree mode
set -e
root="$(cd "$here/../.." && pwd)"
builddir="${CXLPOOL_GPU_BUILDDIR:-$root/build-gpu}"
jobs="${CXLPOOL_GPU_JOBS:-$(nproc)}"
if ! why="$(gpu_check)"; then
  echo "SKIP: $why"
  exit 77
fi
echo "GPU host: $why"

if [[ -f "$builddir/build.ninja" ]]; then
  meson configure "$builddir" -Dcuda=enabled "$@"
else
  meson setup "$builddir" "$root" -Dcuda=enabled "$@"
fi
ninja -C "$builddir" -j "$jobs"

export CXLPOOL_REQUIRE_GPU=1
status=0
meson test -C "$builddir" --no-rebuild --suite gpu --print-errorlogs || status=$?
# Benchmarks registered with benchmark(..., suite: 'gpu'), one at a time
# (they time the device) and verbose so their figures land on stdout.
meson test -C "$builddir" --no-rebuild --benchmark --suite gpu --verbose --num-processes 1 \
  || status=$?
exit "$status"
