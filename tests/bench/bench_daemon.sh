# SPDX-License-Identifier: Apache-2.0
# Sourced by the run-*.sh benchmarks that measure against a cxlpoold of
# their own: a temporary folder for its state and log, starting it and
# waiting for its socket, and stopping it and removing the folder on exit.
# Sets: work (the folder), state ($work/state), sock (the daemon's socket),
# daemon (its pid while it runs).

daemon=""

# Stops the daemon this script started, if it runs, and removes $work.
# A script with more to clean up calls it from its own EXIT trap.
bench_cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
}

# bench_make_workdir PARENT PREFIX: a new folder PARENT/PREFIX.XXXXXX,
# removed on exit (with bench_cleanup unless the caller traps EXIT itself).
bench_make_workdir() {
  work=$(mktemp -d -p "$1" "$2.XXXXXX")
  state="$work/state"
  sock="$state/cxlpoold.sock"
  trap bench_cleanup EXIT
}

# bench_start_daemon CXLPOOLD CONFIG: starts CXLPOOLD with CONFIG on $state,
# its log appended to $work/daemon.log, and returns once its socket is
# there; exits 1, printing the config and the log, when it does not start.
bench_start_daemon() {
  mkdir -p "$state"
  "$1" --config "$2" --state-dir "$state" 2>>"$work/daemon.log" &
  daemon=$!
  for _ in $(seq 200); do
    [ -S "$sock" ] && return 0
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.05
  done
  echo "${0##*/}: cxlpoold did not start with $2:" >&2
  cat "$2" "$work/daemon.log" >&2
  exit 1
}

# Stops the daemon (to restart it with another config).
bench_stop_daemon() {
  kill -TERM "$daemon"
  wait "$daemon" || true
  daemon=""
}
