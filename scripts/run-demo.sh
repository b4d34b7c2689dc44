#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, configures and builds the programs the demo runs
# (only those: scripts/run-tests.sh builds the tests), starts cxlpoold on its
# embedded default (default state dir), shows the tiers and backends, runs
# the demo client and stops the daemon. Says what it is doing at each step.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}

echo "== [1/4] packages (scripts/setup.sh --packages-only)"
scripts/setup.sh --packages-only

if [ ! -f "$B/build.ninja" ]; then
  echo "== [2/4] configuring $B (meson setup; log in $B/meson-setup.log)"
  if ! meson setup "$B" ${MESON_ARGS:-} >"$B.meson-setup.log" 2>&1; then
    cat "$B.meson-setup.log" >&2
    exit 1
  fi
  mv "$B.meson-setup.log" "$B/meson-setup.log"
else
  echo "== [2/4] configuring: $B is configured already"
fi

# What the demo runs; the device-pooling step needs net_bench and root.
targets=(daemon/cxlpoold tools/ctl/cxlpoolctl tools/demo/cxlpool-demo tools/infer/cxlpool-infer
         tools/devpool/cxlpool-devpool)
[ "$(id -u)" -eq 0 ] && targets+=(tests/bench/net_bench)
echo "== [3/4] building the ${#targets[@]} programs the demo runs (ninja -C $B ${targets[*]})"
# ninja prints "[done/total] what" per step; every 20th step and the last are
# shown, everything when the build fails.
build_log="$B/demo-build.log"
if ! NINJA_STATUS="[%f/%t] " ninja -C "$B" "${targets[@]}" 2>&1 | tee "$build_log" |
    awk '/^\[[0-9]+\/[0-9]+\]/ { gsub(/[][]/, "", $1); split($1, n, "/"); if (n[1] % 20 == 0 || n[1] == n[2]) { printf "  built %s of %s steps\n", n[1], n[2]; fflush() } }'; then
  echo "build failed; its output:" >&2
  cat "$build_log" >&2
  exit 1
fi
grep -q "no work to do" "$build_log" && echo "  up to date"

if [ "$(id -u)" -ne 0 ] && [ -z "${XDG_RUNTIME_DIR:-}" ]; then
  export XDG_RUNTIME_DIR=$(mktemp -d)
fi
if [ "$(id -u)" -eq 0 ]; then state=/run/cxlpool; else state=$XDG_RUNTIME_DIR/cxlpool; fi
socket=$state/cxlpoold.sock

echo "== [4/4] starting cxlpoold (embedded default, state dir $state)"
"$B/daemon/cxlpoold" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [ -S "$socket" ] && "$B/tools/ctl/cxlpoolctl" status >/dev/null 2>&1 && break
  kill -0 $daemon 2>/dev/null || { echo "cxlpoold exited early" >&2; exit 1; }
  sleep 0.1
done

echo; echo "== cxlpoolctl tiers"; "$B/tools/ctl/cxlpoolctl" tiers
echo; echo "== cxlpoolctl backends"; "$B/tools/ctl/cxlpoolctl" backends
echo; echo "== cxlpool-demo"; "$B/tools/demo/cxlpool-demo"
echo; echo "== cxlpool-infer --short (a small decoder through libcxlpool vs plain buffers)"
"$B/tools/infer/cxlpool-infer" --short
echo; echo "== examples/python/tiny_decoder.py (PyTorch: KV in a KvArena, weights shared, a prefix from another process)"
py=${PYTHON:-/usr/bin/python3}  # Debian's, where apt put python3-torch
if "$py" -c "import torch" 2>/dev/null; then
  CXLPOOL_LIBRARY=$B/lib/client/libcxlpool.so PYTHONPATH=python "$py" examples/python/tiny_decoder.py \
    --socket "$socket" --decode 16
else
  echo "skipped: $py has no torch (apt-get install python3-torch)"
fi
echo; echo "== cxlpoolctl kv status"; "$B/tools/ctl/cxlpoolctl" kv status
echo; echo "== cxlpoolctl tiering status"; "$B/tools/ctl/cxlpoolctl" tiering status
echo; echo "== device pooling: UDP through another namespace's NIC, assigned by the daemon's pod"
scripts/demo-devpool.sh "$B" "$socket"
echo; echo "== cxlpoolctl status"; "$B/tools/ctl/cxlpoolctl" status
echo; echo "== stopping cxlpoold (SIGTERM)"
kill -TERM $daemon
wait $daemon
trap - EXIT
echo "cxlpoold exited cleanly; socket removed: $([ -e "$socket" ] && echo no || echo yes)"
