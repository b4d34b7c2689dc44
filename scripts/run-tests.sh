#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite, as CI runs it:
#   1. unit + integration + python suites on the default (gcc) build
#   2. the same suites under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. the decoders under libFuzzer (clang) for FUZZ_SECONDS each (less
#      when the run is late: see step 3)
#   4. the slow suite (QEMU guest with a CPU-less NUMA node)
#   5. the Debian packages (tests/package: built with dpkg-buildpackage,
#      linted, installed, started and purged in a throwaway root; needs the
#      network, skips with the reason without it)
# Disk: the run needs about 20 GiB free (default build ~6, sanitizer build
# ~7, guest image and package build ~4). Each step's header prints what is
# free. With CI=true (or CXLPOOL_PRUNE_BUILDS=1) the sanitizer and fuzz build
# trees are removed once their step is done, so that the later steps have
# their space; a developer's run keeps them for the next incremental build.
# Flags: --quick runs only step 1; --no-slow skips steps 4 and 5;
# --no-package skips step 5. Step 5 is skipped, saying so, when the run has
# already taken CXLPOOL_PACKAGE_DEADLINE_S (default 3300) seconds: a cold
# package build takes 10-25 minutes and CI stops the whole run at 90.
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0
slow=1
package=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-slow) slow=0 ;;
    --no-package) package=0 ;;
    --package) package=1 ;;  # the default; kept for older command lines
    *) echo "usage: $0 [--quick] [--no-slow] [--no-package]" >&2; exit 2 ;;
  esac
done
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
prune=${CXLPOOL_PRUNE_BUILDS:-0}
case "${CI:-}" in true | 1) prune=${CXLPOOL_PRUNE_BUILDS:-1} ;; esac
JOBS=${JOBS:-$(nproc)}
status=0
logs=()

run_suites() {  # build_dir suite...
  local dir=$1; shift
  local args=()
  for s in "$@"; do args+=(--suite "$s"); done
  meson test -C "$dir" "${args[@]}" --num-processes "$JOBS" --print-errorlogs || status=1
  # The copy goes beside the default build's logs: a pruned tree takes its
  # own logs with it.
  mkdir -p build/meson-logs
  local copy="build/meson-logs/testlog-$(basename "$dir")-$(IFS=-; echo "$*")"
  cp "$dir/meson-logs/testlog.txt" "$copy.txt" 2>/dev/null
  cp "$dir/meson-logs/testlog.json" "$copy.json" 2>/dev/null && logs+=("$copy.json")
  slowest "$copy.json"
}

asan_link_args() {  # a meson array of the link flags that shrink the sanitizer tests
  # Each sanitizer test links the whole daemon: ~370 MB apiece, the tree
  # 15 GB in all.
  # Packed relative relocations (DT_RELR; the binaries are PIE) and zlib-
  # compressed line tables halve that; reports keep their file:line. Only
  # the flags this toolchain accepts are used.
  local flags=() f probe
  probe=$(mktemp -d)
  echo 'int main() { return 0; }' > "$probe/p.cpp"
  for f in -Wl,-z,pack-relative-relocs -Wl,--compress-debug-sections=zlib; do
    ${CXX:-c++} "$probe/p.cpp" -o "$probe/p" -Wl,--fatal-warnings "$f" 2>/dev/null && "$probe/p" && flags+=("'$f'")
  done
  rm -rf "$probe"
  echo "[$(IFS=,; echo "${flags[*]}")]"
}

free_space() {  # what is free for the build trees, e.g. "31G free"
  echo "$(df -h --output=avail . | tail -1 | tr -d ' ') free"
}

prune_tree() {  # dir: removed when pruning, saying what it returned
  [ "$prune" = "1" ] || return 0
  [ -d "$1" ] || return 0
  local size
  size=$(du -sh "$1" 2>/dev/null | cut -f1)
  rm -rf "$1"
  echo "prune: removed $1 ($size; $(free_space) now)"
}

slowest() {  # testlog.json: the five longest tests, where the time goes
  python3 - "$1" <<'PY' || true
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows.sort(key=lambda r: -r.get("duration", 0))
print("slowest:", ", ".join(f'{r["name"].split(" / ")[-1]} {r.get("duration", 0):.0f} s' for r in rows[:5]))
PY
}

if [ $quick -eq 0 ]; then
  free_gib=$(df -BG --output=avail . | tail -1 | tr -dc '0-9')
  if [ "${free_gib:-0}" -lt 20 ]; then
    echo "run-tests: WARNING: ${free_gib} GiB free here; the whole run needs about 20 GiB" \
         "(a step that runs out fails with 'No space left on device')"
  fi
fi
echo "== [1] default build: unit + integration + python ($(free_space))"
scripts/setup.sh || exit 1
run_suites build unit integration python

if [ $quick -eq 0 ]; then
  echo "== [2] ASan + UBSan build: unit + integration (after ${SECONDS} s; $(free_space))"
  # -O1 (and line tables only, the debug_info default) compile in less than
  # half the time of -O2 -g and still give symbolized reports with lines.
  # meson test builds what the two suites run, not the benchmarks and VM
  # programs the default build already compiled.
  if [ ! -f build-asan/build.ninja ]; then
    meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dcuda=disabled \
      -Doptimization=1 -Dcpp_link_args="$(asan_link_args)" >/dev/null || exit 1
  fi
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suites build-asan unit integration
  prune_tree build-asan

  echo "== [3] libFuzzer: protocol, trace, SSD-region, safetensors, device-channel, block-command, checkpoint-image and pod-wire decoders, ${FUZZ_SECONDS}s each (after ${SECONDS} s; $(free_space))"
  # Fuzzing time is a budget: when the earlier steps ran long (a slow
  # machine), each decoder gets less of it, at least 15 s, so that the slow
  # suite still ends by CXLPOOL_FUZZ_END_S (default 4500 s, 75 minutes) and
  # the whole run well inside CI's 90.
  fuzz_targets=(proto trace kvstore safetensors devpool blk ckpt_manifest pod_kv_wire)
  fuzz_end=${CXLPOOL_FUZZ_END_S:-4500}
  fuzz_left=$(((fuzz_end - SECONDS) / ${#fuzz_targets[@]} - 20))  # 20 s for each one's build
  if [ "$fuzz_left" -lt "$FUZZ_SECONDS" ]; then
    FUZZ_SECONDS=$((fuzz_left < 15 ? 15 : fuzz_left))
    echo "fuzz: ${FUZZ_SECONDS}s each: the run has taken ${SECONDS} s"
  fi
  if command -v clang++ >/dev/null; then
    if [ ! -f build-fuzz/build.ninja ]; then
      CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Dcuda=disabled >/dev/null || status=1
    fi
    for target in "${fuzz_targets[@]}"; do
      fuzzer=tests/fuzz/fuzz_${target}_decode
      if ! ninja -C build-fuzz "$fuzzer"; then
        status=1
        continue
      fi
      corpus=$(mktemp -d)
      cp tests/fuzz/corpus/$target/* "$corpus"/
      if build-fuzz/$fuzzer -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
           "$corpus" 2>build-fuzz/fuzz-$target.log; then
        grep -E "stat::number_of_executed_units|Done" build-fuzz/fuzz-$target.log | tail -2
        echo "fuzz $target: no crash"
      else
        tail -40 build-fuzz/fuzz-$target.log
        echo "fuzz $target: FAILED"
        status=1
      fi
      rm -rf "$corpus"
    done
    prune_tree build-fuzz
  else
    echo "fuzz: skipped (clang++ not installed)"
  fi

  if [ $slow -eq 1 ]; then
    echo "== [4] slow suite (QEMU guest) (after ${SECONDS} s; $(free_space))"
    run_suites build slow
  fi
  deadline=${CXLPOOL_PACKAGE_DEADLINE_S:-3300}
  if [ $slow -eq 1 ] && [ $package -eq 1 ]; then
    if [ "$SECONDS" -lt "$deadline" ]; then
      echo "== [5] Debian packages (after ${SECONDS} s; $(free_space))"
      # What is left of 80 minutes bounds the package build (the check skips,
      # saying so, when it would run past it).
      export CXLPOOL_PACKAGE_BUDGET_S=$((4800 - SECONDS))
      run_suites build package
    else
      echo "== [5] Debian packages: SKIPPED — the run has taken ${SECONDS} s, past the" \
           "${deadline} s after which a cold package build could overrun CI's limit"
    fi
  fi
fi

python3 - "${logs[@]}" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
echo "run-tests: ${SECONDS} s in all"
exit $status
