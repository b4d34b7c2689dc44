#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every GPU test and benchmark (meson suite `gpu`) on a host with an
# NVIDIA GPU: the cuda unit tests (kernels vs CPU references, the cuda
# GpuVmm backend, host-NUMA export, registered memfd staging), then the
# benchmarks with their figures printed: attention_bench (decode attention,
# contiguous arena vs paged, CPU and GPU) and gpu_bench (H2D/D2H pinned and
# pageable vs the PCIe link, VMM mapping bandwidth). Builds with -Dcuda=enabled in $CXLPOOL_GPU_BUILDDIR (default
# <repo>/build-gpu), extra `meson setup` arguments may follow on the command
# line. Exit: 0 all passed, 77 no usable GPU here, anything else a failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
builddir="${CXLPOOL_GPU_BUILDDIR:-$root/build-gpu}"
jobs="${CXLPOOL_GPU_JOBS:-$(nproc)}"

# Same question the tests ask: does libcuda.so.1 load, does cuInit succeed,
# is there a device? Answered before spending minutes on a build.
if ! why="$(python3 - <<'PY' 2>&1
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
print("%d CUDA device(s)" % n.value)
PY
)"; then
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

# With a GPU present a skipped GPU case is a failure, not a pass.
export CXLPOOL_REQUIRE_GPU=1
status=0
meson test -C "$builddir" --no-rebuild --suite gpu --print-errorlogs || status=$?
# Benchmarks registered with benchmark(..., suite: 'gpu'), one at a time
# (they time the device) and verbose so their figures land on stdout.
meson test -C "$builddir" --no-rebuild --benchmark --suite gpu --verbose --num-processes 1 \
  || status=$?
exit "$status"
