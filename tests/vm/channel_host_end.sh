# SPDX-License-Identifier: Apache-2.0
# Sourced by vm_devpool_channel.sh and vm_devpool_channel_selftest.sh: a
# working directory on tmpfs (so the shared file is memory, as a BAR
# should be) and the host end of the channel test running in it.
#   channel_dir                        the directory (removed at exit)
#   start_channel_host PROGRAM ARG...  starts `PROGRAM host --file
#       $channel_dir/link --ready ... ARG...` in the background (output in
#       $channel_dir/host.txt, pid in $channel_host_pid) and returns once
#       it has formatted the region; exits 1 when it does not
#   stop_channel_host                  waits for it; its status in $channel_host_rc

channel_parent=/dev/shm
[ -d "$channel_parent" ] && [ -w "$channel_parent" ] || channel_parent=${TMPDIR:-/tmp}
channel_dir=$(mktemp -d "$channel_parent/cxlpool-vmchan.XXXXXX") || exit 1
channel_host_pid=""
channel_host_rc=0
channel_cleanup() {
  if [ -n "$channel_host_pid" ] && kill -0 "$channel_host_pid" 2> /dev/null; then
    kill "$channel_host_pid" 2> /dev/null
  fi
  rm -rf "$channel_dir"
}
trap channel_cleanup EXIT

start_channel_host() {
  local program=$1
  shift
  rm -f "$channel_dir/link" "$channel_dir/ready"
  "$program" host --file "$channel_dir/link" --ready "$channel_dir/ready" "$@" > "$channel_dir/host.txt" 2>&1 &
  channel_host_pid=$!
  for _ in $(seq 100); do
    [ -e "$channel_dir/ready" ] && return 0
    kill -0 "$channel_host_pid" 2> /dev/null || break
    sleep 0.1
  done
  echo "FAIL: the host end did not format the region"
  cat "$channel_dir/host.txt"
  exit 1
}

stop_channel_host() {
  wait "$channel_host_pid"
  channel_host_rc=$?
  channel_host_pid=""
}
