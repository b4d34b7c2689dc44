# SPDX-License-Identifier: Apache-2.0
# Sourced by the Transport's test and benchmark: two network namespaces
# ("hosts" A and B) joined by two veth pairs (rails 10.$net.0.0/24 and
# 10.$net.1.0/24; A is .1, B is .2), and an owner (fabric_peer serve) in B
# that serves until its input closes. Everything goes at exit.
#   fabric_lab NAME_PREFIX NET FABRIC_PEER
# sets A, B, dir, peer, tag and the veth names ${prefix}a{0,1}_$tag, ${prefix}b{0,1}_$tag.
fabric_lab() {
  prefix=$1
  net=$2
  peer=$3
  tag=$$
  A=cx${prefix}A$tag
  B=cx${prefix}B$tag
  dir=$(mktemp -d /tmp/cxlpool-fabric.XXXXXX)
  pids=()
  trap fabric_lab_cleanup EXIT
  ip netns add "$A"
  ip netns add "$B"
  for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
  for r in 0 1; do
    ip link add "${prefix}a${r}_$tag" netns "$A" type veth peer name "${prefix}b${r}_$tag" netns "$B"
    ip -n "$A" addr add "10.$net.$r.1/24" dev "${prefix}a${r}_$tag"
    ip -n "$B" addr add "10.$net.$r.2/24" dev "${prefix}b${r}_$tag"
    ip -n "$A" link set "${prefix}a${r}_$tag" up
    ip -n "$B" link set "${prefix}b${r}_$tag" up
  done
}

fabric_lab_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$dir"
}

# owner_start ARGS...: the owner in B; its card in $dir/card. Exits 77 when
# libfabric has no such provider, 1 when the owner does not start.
owner_start() {
  rm -f "$dir/card" "$dir/hold"
  mkfifo "$dir/hold"
  ip netns exec "$B" "$peer" serve "$@" --card "$dir/card" < "$dir/hold" > "$dir/owner.log" 2>&1 &
  pids+=($!)
  exec {hold}> "$dir/hold"
  for _ in $(seq 200); do [ -s "$dir/card" ] && return 0; sleep 0.05; done
  if grep -q "No data available" "$dir/owner.log"; then
    echo "fabric: libfabric has no such provider here; skipped"
    cat "$dir/owner.log"
    exit 77
  fi
  echo "FAIL: the owner did not start"
  cat "$dir/owner.log"
  exit 1
}

# The owner ends when its input closes; it must end cleanly (a sanitizer's
# report makes it fail).
owner_stop() {
  exec {hold}>&-
  local rc=0
  wait "${pids[-1]}" || rc=$?
  unset 'pids[-1]'
  if [ "$rc" != 0 ]; then
    echo "FAIL: the owner exited with $rc"
    cat "$dir/owner.log"
    exit 1
  fi
}
