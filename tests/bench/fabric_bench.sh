#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pod transfer engine (hal Transport, ofi backend) between two network
# namespaces joined by two veth pairs (rails), each number against a
# baseline measured here, in this run, on the same path:
#   1. 4 MiB writes and reads over tcp;ofi_rxm on one rail / iperf3 (one TCP stream)
#   2. two threads / one thread (one rail, 4 MiB reads)
#   3. two rails / one rail, each rail limited by `tc tbf` (4 MiB writes)
#   4. 4 KiB one-sided read p50 / a 4 KiB TCP request-response p50
#   5. shm / tcp for 4 MiB reads between the two namespaces (same host)
# and the fraction of the line rate reached: of the `tc tbf` rate on the
# shaped rails; on the unshaped veth (no line rate of its own) of iperf3.
# Needs root, iproute2, tc and iperf3; exits 77 (skipped) otherwise.
#   tests/bench/fabric_bench.sh [BUILD_DIR] [SECONDS] [TBF_RATE]
set -euo pipefail
build=${1:-build}
seconds=${2:-3}
rate=${3:-1gbit}
peer="$build/tests/integration/fabric/fabric_peer"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null || ! command -v iperf3 >/dev/null; then
  echo "fabric_bench: needs root, iproute2, tc and iperf3; skipped" >&2
  exit 77
fi
[ -x "$peer" ] || { echo "fabric_bench: build $peer first (ninja -C $build tests/integration/fabric/fabric_peer)" >&2; exit 1; }
source "$(dirname "$0")/../integration/fabric/fabric_lab.sh"
fabric_lab g 94 "$peer"
owner() { owner_start --region-mib 64 "$@"; }

# client ARGS...: one bench run in A against the owner; prints GB/s or the p50.
client() {
  ip netns exec "$A" "$peer" bench --region-mib 64 --card "$dir/card" --seconds "$seconds" "$@" | tee -a "$dir/runs.log"
}
gbps() { sed -n 's/.*gbytes_per_s=\([0-9.]*\).*/\1/p'; }
p50() { sed -n 's/.*batch_p50_us=\([0-9.]*\).*/\1/p'; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else 'n/a')" "$1" "$2"; }
# A tc rate (1gbit, 500mbit, 100kbit) in GB/s.
rate_gbytes() {
  python3 -c "
import re, sys
m = re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1].lower())
if not m: sys.exit('fabric_bench: cannot read the rate ' + sys.argv[1])
print(float(m.group(1)) * {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m.group(2)] / 8e9)" "$1"
}
shaped=$(rate_gbytes "$rate")
mib=$((4 << 20))

echo "fabric_bench: $(nproc) CPUs, $seconds s per run, kernel $(uname -r)"

# 1. iperf3 and the engine on rail 0.
ip netns exec "$B" iperf3 -s -1 -B 10.94.0.2 > /dev/null 2>&1 &
pids+=($!)
sleep 0.3
iperf_bps=$(ip netns exec "$A" iperf3 -c 10.94.0.2 -t "$seconds" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
wait "${pids[-1]}" || true
unset 'pids[-1]'
iperf_gbytes=$(python3 -c "print(f'{$iperf_bps / 8e9:.3f}')")
owner --rails 10.94.0.2 --no-shm
write1=$(client --rails 10.94.0.1 --no-shm --bytes $mib --depth 4 --write | gbps)
read1=$(client --rails 10.94.0.1 --no-shm --bytes $mib --depth 4 | gbps)
read1t2=$(client --rails 10.94.0.1 --no-shm --bytes $mib --depth 4 --threads 2 | gbps)
# 4. latency of a 4 KiB read against a TCP round trip of the same size.
lat_fabric=$(client --rails 10.94.0.1 --no-shm --bytes 4096 --depth 1 | p50)
owner_stop
ip netns exec "$B" "$peer" tcp-serve 10.94.0.2 5899 4096 > /dev/null &
pids+=($!)
lat_tcp=$(ip netns exec "$A" "$peer" tcp-rtt 10.94.0.2 5899 4096 20000 | sed -n 's/p50_us=//p')
wait "${pids[-1]}" || true
unset 'pids[-1]'

# 3. two rails against one, every veth end limited to $rate.
for r in 0 1; do
  ip netns exec "$A" tc qdisc add dev "ga${r}_$tag" root tbf rate "$rate" burst 256kb latency 20ms
  ip netns exec "$B" tc qdisc add dev "gb${r}_$tag" root tbf rate "$rate" burst 256kb latency 20ms
done
owner --rails 10.94.0.2,10.94.1.2 --no-shm
tbf1=$(client --rails 10.94.0.1 --no-shm --bytes $mib --depth 4 --write | gbps)
tbf2=$(client --rails 10.94.0.1,10.94.1.1 --no-shm --bytes $mib --depth 4 --write | gbps)
owner_stop
for r in 0 1; do
  ip netns exec "$A" tc qdisc del dev "ga${r}_$tag" root
  ip netns exec "$B" tc qdisc del dev "gb${r}_$tag" root
done

# 5. shm against tcp between the namespaces (one host: the same boot id).
owner --rails 10.94.0.2
shm_read=$(client --rails 10.94.0.1 --bytes $mib --depth 4 | gbps)
owner_stop

printf '\n%-52s %12s %12s %8s %s\n' "measure" "engine" "baseline" "ratio" "target"
printf '%-52s %12s %12s %8s %s\n' "4 MiB writes, tcp;ofi_rxm, 1 rail (GB/s) / iperf3" "$write1" "$iperf_gbytes" "$(ratio "$write1" "$iperf_gbytes")" ">= 0.8"
printf '%-52s %12s %12s %8s %s\n' "4 MiB reads, tcp;ofi_rxm, 1 rail (GB/s) / iperf3" "$read1" "$iperf_gbytes" "$(ratio "$read1" "$iperf_gbytes")" ">= 0.8"
printf '%-52s %12s %12s %8s %s\n' "4 MiB reads, 2 threads / 1 thread (GB/s)" "$read1t2" "$read1" "$(ratio "$read1t2" "$read1")" ">= 1.3"
printf '%-52s %12s %12s %8s %s\n' "4 MiB writes, 2 rails / 1 rail, tbf $rate each (GB/s)" "$tbf2" "$tbf1" "$(ratio "$tbf2" "$tbf1")" ">= 1.8"
printf '%-52s %12s %12s %8s %s\n' "4 KiB read p50 (us) / TCP 4 KiB round trip p50" "$lat_fabric" "$lat_tcp" "$(ratio "$lat_fabric" "$lat_tcp")" "<= 2"
printf '%-52s %12s %12s %8s %s\n' "4 MiB reads between namespaces, shm / tcp (GB/s)" "$shm_read" "$read1" "$(ratio "$shm_read" "$read1")" ">= 3"
printf '%-52s %12s %12s %8s\n' "line rate: 1 shaped rail / tbf $rate (GB/s)" "$tbf1" "$shaped" "$(ratio "$tbf1" "$shaped")"
printf '%-52s %12s %12s %8s\n' "line rate: 2 shaped rails / 2 x tbf $rate (GB/s)" "$tbf2" "$(python3 -c "print(2 * $shaped)")" "$(ratio "$tbf2" "$(python3 -c "print(2 * $shaped)")")"
