#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks channel.pml with spin: the protocol passes (no assertion, every
# message delivered under weak fairness), and each variant with one step
# removed fails. Skips (77) where spin or a C compiler is missing.
#   channel_spin.sh PATH/TO/channel.pml
set -euo pipefail
command -v spin >/dev/null || { echo "SKIP: spin is not installed (apt-get install spin)"; exit 77; }
model=$(realpath "$1")
cc=${CC:-cc}
command -v "$cc" >/dev/null || { echo "SKIP: no C compiler ($cc) to build spin's verifier"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# check VARIANT_DEFINE EXPECTED_ERRORS(0 or "some")
check() {
  local define=$1 expect=$2
  rm -f pan pan.* _spin_nvr.tmp
  spin ${define:+"$define"} -a "$model" >spin.log 2>&1 || { cat spin.log; exit 1; }
  "$cc" -O2 -w -o pan pan.c
  ./pan -a -f -m200000 >pan.log 2>&1 || true
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log)
  if [ -z "$errors" ]; then
    echo "spin ${define:-(protocol)}: no verdict"; cat pan.log; exit 1
  fi
  if grep -q "max search depth too small" pan.log; then
    echo "spin ${define:-(protocol)}: search truncated"; exit 1
  fi
  local states
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log)
  if [ "$expect" = 0 ] && [ "$errors" != 0 ]; then
    echo "FAIL: the protocol violates its properties"; cat pan.log; exit 1
  fi
  if [ "$expect" = some ] && [ "$errors" = 0 ]; then
    echo "FAIL: spin found nothing wrong with ${define}"; cat pan.log; exit 1
  fi
  echo "spin ${define:-(protocol)}: $errors errors, $states states"
}

check "" 0
check -DDROP_WRITE_BACK some
check -DDROP_CONSUMER_INVALIDATE some
check -DDROP_PRODUCER_INVALIDATE some
