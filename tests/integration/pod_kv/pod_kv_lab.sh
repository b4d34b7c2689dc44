# SPDX-License-Identifier: Apache-2.0
# Sourced by the pod KV tests and benchmark: two network namespaces ("hosts"
# A at 10.$net.0.1 and B at 10.$net.0.2) joined by a veth pair, or three
# (C at 10.$net.0.3) whose veths end on a bridge in a namespace of its own;
# etcd in A's namespace, and cxlpoold in each (state directories under
# $dir). The transfer engine runs tcp;ofi_rxm over the veths (shm off: the
# namespaces share this host's memory). Everything goes at exit.
#   pod_kv_lab PREFIX NET CXLPOOLD CXLPOOLCTL [HOSTS]  (needs root, ip, etcd, python3)
# HOSTS: "a b" (the default) or "a b c". Sets A, B (C, L), dir, pids; then
# pod_kv_start a|b|c [KVSTORE-KEYS [POD-KEYS]] starts a daemon (its pid in
# $pid_a, $pid_b, $pid_c), status/field/wait_for read `pod status`.
pod_kv_lab() {
  lab_prefix=$1
  lab_net=$2
  lab_daemon=$3
  lab_ctl=$4
  lab_etcd=${CXLPOOL_ETCD:-$(command -v etcd || true)}
  if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
    echo "$lab_prefix: needs root and iproute2 (network namespaces); skipped"
    exit 77
  fi
  if [ -z "$lab_etcd" ] || ! command -v python3 >/dev/null; then
    echo "$lab_prefix: needs etcd (Debian package etcd-server) and python3; skipped"
    exit 77
  fi
  lab_hosts=${5:-a b}
  local tag=$$ h
  A=cx${lab_prefix}A$tag
  B=cx${lab_prefix}B$tag
  C=
  L=
  dir=$(mktemp -d /tmp/cxlpool-podkv.XXXXXX)
  pids=()
  trap pod_kv_lab_cleanup EXIT
  if [ "$lab_hosts" = "a b" ]; then
    ip netns add "$A"
    ip netns add "$B"
    for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
    ip link add "${lab_prefix}a_$tag" netns "$A" type veth peer name "${lab_prefix}b_$tag" netns "$B"
  else
    C=cx${lab_prefix}C$tag
    L=cx${lab_prefix}L$tag
    ip netns add "$L"
    ip -n "$L" link add br0 type bridge
    ip -n "$L" link set br0 up
    for h in $lab_hosts; do
      ip netns add "$(pod_kv_ns $h)"
      ip -n "$(pod_kv_ns $h)" link set lo up
      ip link add "${lab_prefix}${h}_$tag" netns "$(pod_kv_ns $h)" type veth peer name "${lab_prefix}${h}p_$tag" netns "$L"
      ip -n "$L" link set "${lab_prefix}${h}p_$tag" master br0 up
    done
  fi
  for h in $lab_hosts; do
    ip -n "$(pod_kv_ns $h)" addr add "$(pod_kv_ip $h)/24" dev "${lab_prefix}${h}_$tag"
    ip -n "$(pod_kv_ns $h)" link set "${lab_prefix}${h}_$tag" up
  done
  etcd_url=http://10.$lab_net.0.1:23795
  pod_kv_etcd_start
}

# etcd in A's namespace (again, after a kill: same data directory); its
# pid in $pid_etcd.
pod_kv_etcd_start() {
  ip netns exec "$A" "$lab_etcd" --name=podkv --data-dir="$dir/etcd" --listen-client-urls="$etcd_url" \
    --advertise-client-urls="$etcd_url" --listen-peer-urls=http://127.0.0.1:23796 \
    --initial-advertise-peer-urls=http://127.0.0.1:23796 --initial-cluster=podkv=http://127.0.0.1:23796 \
    --log-level=warn >> "$dir/etcd.log" 2>&1 &
  pids+=($!)
  pid_etcd=$!
}

# pod_kv_etcd_auth USER PASSWORD: turns etcd's authentication on, with
# root (password "root-pw") and USER, whose role may read and write
# /cxlpool/ and nothing else (through the v3 JSON gateway, from A).
pod_kv_etcd_auth() {
  ip netns exec "$A" python3 - "$etcd_url" "$1" "$2" <<'PY'
import base64, json, sys, time, urllib.error, urllib.request
url, user, password = sys.argv[1:4]
def call(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as reply:
        return json.load(reply)
b64 = lambda s: base64.b64encode(s.encode()).decode()
for _ in range(100):  # etcd may still be starting
    try:
        call("/v3/auth/user/add", {"name": "root", "password": "root-pw"})
        break
    except Exception:
        time.sleep(0.1)
else:
    sys.exit("etcd did not answer")
try:
    call("/v3/auth/role/add", {"name": "root"})
except urllib.error.HTTPError:
    pass  # etcd versions that have it already
call("/v3/auth/user/grant", {"user": "root", "role": "root"})
call("/v3/auth/role/add", {"name": "cxlpool-pod"})
call("/v3/auth/role/grant", {"name": "cxlpool-pod",
                             "perm": {"permType": "READWRITE", "key": b64("/cxlpool/"), "range_end": b64("/cxlpool0")}})
call("/v3/auth/user/add", {"name": user, "password": password})
call("/v3/auth/user/grant", {"user": user, "role": "cxlpool-pod"})
call("/v3/auth/enable", {})
PY
}

pod_kv_lab_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ns in "$A" "$B" "$C" "$L"; do [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$dir"
}

# The namespace and address of host a, b or c.
pod_kv_ns() { case $1 in a) echo "$A" ;; b) echo "$B" ;; c) echo "$C" ;; esac; }
pod_kv_ip() { case $1 in a) echo "10.$lab_net.0.1" ;; b) echo "10.$lab_net.0.2" ;; c) echo "10.$lab_net.0.3" ;; esac; }

# pod_kv_start a|b|c [KVSTORE-KEYS [POD-KEYS]]: the daemon of that host.
pod_kv_start() {
  local h=$1 ns ip
  ns=$(pod_kv_ns "$h")
  ip=$(pod_kv_ip "$h")
  cat > "$dir/$h.toml" <<TOML
[daemon]
socket_group = ""
log_level = "debug"

[[emulated_tier]]
name = "emu"
capacity = 268435456
latency_ns = 300
bandwidth_mbps = 15000

[kvstore]
cxl_bytes = 0
client_quota_bytes = 0
${2:-}

[pod]
state = "etcd"
name = "kv-pod"
host = "host-$h"
etcd_endpoints = ["$etcd_url"]
lease_ttl_s = 2
etcd_timeout_ms = 500
provider = "tcp;ofi_rxm"
address = "$ip:7411"
shm = false
${3:-}
TOML
  mkdir -p "$dir/$h"
  ip netns exec "$ns" "$lab_daemon" --config "$dir/$h.toml" --state-dir "$dir/$h" > "$dir/$h.log" 2>&1 &
  pids+=($!)
  eval "pid_$h=$!"
}

status() { CXLPOOL_SOCKET="$dir/$1/cxlpoold.sock" "$lab_ctl" pod status --json 2>/dev/null; }
# field HOST PYTHON-EXPRESSION over the status `s`
field() { status "$1" | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)" 2>/dev/null || echo "?"; }
wait_for() {  # HOST EXPRESSION EXPECTED SECONDS
  local i
  for i in $(seq $(($4 * 10))); do
    [ "$(field "$1" "$2")" = "$3" ] && return 0
    sleep 0.1
  done
  return 1
}

# Every daemon up and seeing the others; exit 77 when the engine cannot open.
pod_kv_wait_all() {
  local h want
  want=$(python3 -c "import sys; print(sorted('host-' + h for h in sys.argv[1:]))" $lab_hosts)
  sleep 1
  if grep -q "transfer engine not opened" "$dir/a.log"; then
    grep "transfer engine not opened" "$dir/a.log"
    echo "$lab_prefix: the transfer engine cannot open here; skipped"
    exit 77
  fi
  for h in $lab_hosts; do
    wait_for $h "sorted(m['host'] for m in s['members'])" "$want" 20 || {
      echo "FAIL: daemon $h does not see every member: $(status $h)"
      tail -n 40 "$dir/$h.log"
      exit 1
    }
  done
}
pod_kv_wait_both() { pod_kv_wait_all; }
