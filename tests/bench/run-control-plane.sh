#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts a cxlpoold on its embedded default in a temp state dir and runs the
# control-plane benchmark against it with 1 and 2 clients.
#   tests/bench/run-control-plane.sh [BUILD_DIR] [OPS]
set -euo pipefail
build=${1:-build}
ops=${2:-20000}
state=$(mktemp -d)
"$build/daemon/cxlpoold" --state-dir "$state" 2>"$state/daemon.log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$state"' EXIT
for _ in $(seq 100); do [ -S "$state/cxlpoold.sock" ] && break; sleep 0.05; done
"$build/tests/bench/control_plane_bench" "$state/cxlpoold.sock" --ops "$ops" --clients 1
"$build/tests/bench/control_plane_bench" "$state/cxlpoold.sock" --ops "$ops" --clients 2
