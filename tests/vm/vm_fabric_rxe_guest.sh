#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Guest end of vm_fabric_rxe (run by run-in-vm.sh): two rails, each an
# rxe device on one end of a veth pair holding both processes' addresses
# (rxe hands a packet for an address of its own device straight back to
# it; the guest kernel's rxe has no network namespaces). An owner serves a
# region over verbs;ofi_rxm; a client reads the owner's pattern whole, then
# two threads write fresh patterns and read them back, every byte compared
# and every chunk's CRC checked by the engine. Exits 77 saying why when the
# guest cannot have rxe or libfabric does not see it.
#   vm_fabric_rxe_guest.sh FABRIC_PEER
set -u
peer=${1:?usage: vm_fabric_rxe_guest.sh FABRIC_PEER}
report=${CXLPOOL_VM_RESULTS:-/tmp}/vm_fabric_rxe.txt
provider="verbs;ofi_rxm"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

guest_end() {
[ -d /sys/module/rdma_rxe ] || skip "the guest kernel has no rdma_rxe"
command -v rdma > /dev/null || skip "no rdma tool (iproute2)"
command -v fi_info > /dev/null || skip "no fi_info (apt-get install libfabric-bin)"
ls /usr/lib/*/libibverbs/librxe-*.so > /dev/null 2>&1 || skip "no rxe provider for libibverbs (apt-get install ibverbs-providers)"

ip link set lo up
ip link add vfa type veth peer name vfb || skip "cannot make a veth pair in the guest"
r=0
for dev in vfa vfb; do
  ip addr add "10.96.$r.1/24" dev "$dev" && ip addr add "10.96.$r.2/24" dev "$dev" && ip link set "$dev" up ||
    fail "cannot address $dev"
  rdma link add "rxe$r" type rxe netdev "$dev" || skip "rdma link add rxe$r on $dev failed"
  r=$((r + 1))
done
rdma link show
# The ports become active once the links are.
for _ in $(seq 100); do
  [ "$(rdma link show | grep -c 'state ACTIVE')" -ge 2 ] && break
  sleep 0.1
done
fi_info -p "$provider" > /tmp/fi_info.txt 2>&1
grep -q "rxe0" /tmp/fi_info.txt || { cat /tmp/fi_info.txt; skip "libfabric's verbs provider does not see rxe0"; }
grep -E "^ *(domain|provider):" /tmp/fi_info.txt | sort -u

dir=$(mktemp -d)
mkfifo "$dir/hold"
FI_LOG_LEVEL=warn "$peer" serve --provider "$provider" --rails 10.96.0.2,10.96.1.2 --no-shm --region-mib 16 --card "$dir/card" \
  < "$dir/hold" > "$dir/owner.log" 2>&1 &
owner=$!
exec {hold}> "$dir/hold"
for _ in $(seq 600); do [ -s "$dir/card" ] && break; kill -0 "$owner" 2> /dev/null || break; sleep 0.1; done
[ -s "$dir/card" ] || { cat "$dir/owner.log"; fail "the owner did not start over $provider"; }
echo "owner's card: $(cut -c1-200 "$dir/card")..."

"$peer" verify --provider "$provider" --rails 10.96.0.1,10.96.1.1 --no-shm --region-mib 16 --card "$dir/card" \
  --seconds 20 --threads 2 --max-bytes $((2 << 20)) --timeout-ms 10000 > "$dir/verify.log" 2>&1
client_rc=$?
cat "$dir/verify.log"
exec {hold}>&-
wait "$owner"
owner_rc=$?
[ "$owner_rc" -eq 0 ] || { cat "$dir/owner.log"; fail "the owner exited with $owner_rc"; }
[ "$client_rc" -eq 0 ] || fail "verify exited with $client_rc"
grep -q " bad=0" "$dir/verify.log" || fail "bytes differed"
for r in 0 1; do
  grep -E "^rail $r verbs" "$dir/verify.log" | grep -qv "written=0 " || fail "rail $r (rxe$r) carried nothing"
done
echo "PASS: byte-exact reads and writes over $provider on rxe0 and rxe1"
}

# The report comes back to the host through the results share.
guest_end 2>&1 | tee "$report"
exit "${PIPESTATUS[0]}"
