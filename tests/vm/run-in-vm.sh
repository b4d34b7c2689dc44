#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs one command inside a QEMU (TCG) guest that has two NUMA nodes: node 0
# with every CPU and some memory, node 1 with memory only (how a CXL memory
# expander appears to Linux). The host root is shared read-only over 9p and
# the command runs in `chroot /host`, so host-built binaries and their shared
# libraries work unchanged; inside the chroot /tmp and /run are tmpfs and
# $CXLPOOL_VM_RESULTS is a writable share that comes back to the host.
#
# usage: run-in-vm.sh [--cache DIR] [--results DIR] [--mem-node0 SIZE]
#                     [--mem-node1 SIZE] [--smp N] [--cpu MODEL]
#                     [--timeout SECONDS] [--share DIR]... [--ivshmem FILE]
#                     [--modules "MOD..."]
#                     -- COMMAND [ARG]...
#
# --share DIR makes DIR visible in the guest at the same path, read-only,
# also under /tmp or /run (which the guest covers with tmpfs).
# --ivshmem FILE gives the guest an ivshmem-plain PCI device (1af4:1110)
# whose BAR 2 is FILE, mapped shared: host processes that map FILE and the
# guest share that memory. FILE's size must be a power of two (1 MiB up).
# --modules loads these modules of the guest kernel (and what they need) at
# boot as well; each list is a guest image of its own in the cache.
#
# Exit status: the command's own (77 stays 77, so skips pass through);
# 77 when the host lacks QEMU, a static busybox or a guest kernel;
# 124 when the guest ran past --timeout; 1 when the guest did not report.
#
# The Debian kernel package and the initramfs built from it are cached in
# --cache (default $CXLPOOL_VM_CACHE, else ~/.cache/cxlpool-vm); the first run
# downloads the kernel package with apt-get.

set -u

readonly kGuestResults=/run/vm-results
# Loaded in the guest together with everything they depend on.
readonly kRootModules="virtio_pci 9pnet_virtio 9p"
# Bump when build_guest() changes what goes into the image; /init, the module
# list, busybox and the kernel package are part of the cache key anyway.
readonly kImageLayout=1

cache_dir=${CXLPOOL_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/cxlpool-vm}
results_dir=""
mem_node0=1G
mem_node1=1G
smp=2
cpu_model=max
timeout_s=600

log() { printf 'run-in-vm: %s\n' "$*" >&2; }
skip() { log "SKIP: $*"; exit 77; }
die() { log "ERROR: $*"; exit 1; }

usage() {
  sed -n 's/^# \{0,1\}//; /^usage:/,/^$/p' "$0" >&2
  exit 2
}

shares=()
ivshmem_file=""
extra_modules=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache_dir=$2; shift 2 ;;
    --results) results_dir=$2; shift 2 ;;
    --share) shares+=("$(cd "$2" && pwd)") || die "--share: no directory $2"; shift 2 ;;
    --ivshmem) ivshmem_file=$2; shift 2 ;;
    --modules) extra_modules=$2; shift 2 ;;
    --mem-node0) mem_node0=$2; shift 2 ;;
    --mem-node1) mem_node1=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --cpu) cpu_model=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) log "unknown option: $1"; usage ;;
  esac
done
[ $# -gt 0 ] || usage
case "$timeout_s" in ''|*[!0-9]*) die "--timeout wants whole seconds, got '$timeout_s'" ;; esac
case "$smp" in ''|*[!0-9]*|0) die "--smp wants a positive count, got '$smp'" ;; esac
case "$extra_modules" in *[!a-z0-9_\ -]*) die "--modules wants module names, got '$extra_modules'" ;; esac
root_modules=$kRootModules${extra_modules:+ $extra_modules}

# Sizes as QEMU spells them (512M, 1G); returns MiB so -m can be the sum.
size_mib() {
  local v=$1
  case "$v" in
    *[Gg]) v=${v%?}; case "$v" in ''|*[!0-9]*) return 1 ;; esac; echo $((v * 1024)) ;;
    *[Mm]) v=${v%?}; case "$v" in ''|*[!0-9]*) return 1 ;; esac; echo "$v" ;;
    *) return 1 ;;
  esac
}
node0_mib=$(size_mib "$mem_node0") || die "bad --mem-node0 '$mem_node0' (use e.g. 512M or 1G)"
node1_mib=$(size_mib "$mem_node1") || die "bad --mem-node1 '$mem_node1' (use e.g. 512M or 1G)"
if [ "$node0_mib" -eq 0 ] || [ "$node1_mib" -eq 0 ]; then die "both NUMA nodes need memory"; fi

ivshmem_args=()
if [ -n "$ivshmem_file" ]; then
  [ -f "$ivshmem_file" ] || die "--ivshmem: no file $ivshmem_file"
  ivshmem_bytes=$(stat -c %s "$ivshmem_file") || die "--ivshmem: cannot stat $ivshmem_file"
  if [ "$ivshmem_bytes" -lt 1048576 ] || [ $((ivshmem_bytes & (ivshmem_bytes - 1))) -ne 0 ]; then
    die "--ivshmem: $ivshmem_file holds $ivshmem_bytes bytes; a PCI BAR needs a power of two of 1 MiB or more"
  fi
  ivshmem_args=(-object "memory-backend-file,id=ivshmem0,share=on,mem-path=$ivshmem_file,size=$ivshmem_bytes"
                -device ivshmem-plain,memdev=ivshmem0)
fi

# ---------------------------------------------------------------- host tools
qemu=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
busybox=""
for candidate in /bin/busybox /usr/bin/busybox; do
  [ -x "$candidate" ] && { busybox=$candidate; break; }
done
[ -n "$busybox" ] || skip "busybox not found (apt-get install busybox-static)"
if command -v readelf > /dev/null && readelf -l "$busybox" 2> /dev/null | grep -q INTERP; then
  skip "$busybox is dynamically linked; the initramfs needs busybox-static"
fi
for tool in dpkg gzip sha256sum flock; do
  command -v "$tool" > /dev/null || skip "$tool not found"
done

mkdir -p "$cache_dir" || die "cannot create cache dir $cache_dir"
cache_dir=$(cd "$cache_dir" && pwd)

# ------------------------------------------------------------ guest kernel
# The package that linux-image-amd64 currently depends on; when apt cannot
# tell (no package lists), the newest package already in the cache.
kernel_package() {
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2> /dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
  if [ -z "$pkg" ]; then
    pkg=$(ls "$cache_dir"/linux-image-*-amd64_*.deb 2> /dev/null | sort -V | tail -n 1)
    pkg=${pkg##*/}
    pkg=${pkg%%_*}
  fi
  echo "$pkg"
}

fetch_kernel_deb() {
  local pkg=$1 deb
  deb=$(ls "$cache_dir/${pkg}"_*.deb 2> /dev/null | sort -V | tail -n 1)
  if [ -z "$deb" ]; then
    command -v apt-get > /dev/null || return 1
    log "downloading $pkg into $cache_dir"
    (cd "$cache_dir" && apt-get download "$pkg") > "$cache_dir/apt-download.log" 2>&1 || return 1
    deb=$(ls "$cache_dir/${pkg}"_*.deb 2> /dev/null | sort -V | tail -n 1)
  fi
  [ -n "$deb" ] && echo "$deb"
}

# Prints the .modinfo dependencies of one module, comma separated.
module_depends() {
  local ko=$1
  if command -v objcopy > /dev/null; then
    objcopy -O binary --only-section=.modinfo "$ko" /dev/stdout 2> /dev/null
  else
    cat "$ko"
  fi | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1
}

# Writes the load order of root_modules and their dependencies (a
# depth-first post-order, so every module follows what it needs) to stdout.
module_load_order() {
  local moddir=$1
  declare -A path_of=() state=()
  local ko name
  while IFS= read -r ko; do
    name=${ko##*/}
    name=${name%.ko}
    path_of[${name//-/_}]=$ko
  done < <(find "$moddir" -name '*.ko')

  visit() {
    local mod=${1//-/_} dep deps
    case "${state[$mod]:-}" in
      done) return 0 ;;
      active) log "module dependency cycle at $mod"; return 1 ;;
    esac
    [ -n "${path_of[$mod]:-}" ] || { log "module $mod not in the kernel package"; return 1; }
    state[$mod]=active
    deps=$(module_depends "${path_of[$mod]}")
    for dep in ${deps//,/ }; do
      visit "$dep" || return 1
    done
    state[$mod]="done"
    echo "${path_of[$mod]}"
  }
  local root
  for root in $root_modules; do
    visit "$root" || return 1
  done
}

write_init() {
  cat << 'EOF'
#!/bin/busybox sh
# /init of the cxlpool test guest: mount the host root, run one command in
# it, report its exit status, power off.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts

fail() { echo "vm-init: $*"; poweroff -f; }

while read -r mod; do
  insmod "/lib/modules/$mod" || fail "insmod $mod failed"
done < /lib/modules/load-order

opts=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /host /results
mount -t 9p -o "$opts,ro,cache=loose" hostroot /host || fail "cannot mount the host root"
mount -t 9p -o "$opts" results /results || fail "cannot mount the results share"
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || fail "no /tmp in the host root"
mount -t tmpfs -o mode=0755 tmpfs /host/run || fail "no /run in the host root"
for d in proc sys dev; do
  mount --bind "/$d" "/host/$d" || fail "cannot bind /$d"
done
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
mount -t devpts devpts /host/dev/pts
mkdir -p /host@GUEST_RESULTS@
mount --bind /results /host@GUEST_RESULTS@
# Directories the host asked for (--share) appear at their own paths, also
# where the tmpfs above hides them (a checkout under /tmp).
if [ -f /results/shares ]; then
  while read -r tag path; do
    mkdir -p "/host$path" 2> /dev/null
    mount -t 9p -o "$opts,ro,cache=loose" "$tag" "/host$path" || fail "cannot mount share $path"
  done < /results/shares
fi

# Output goes to the console and to output.log; a fifo (not a pipeline) so
# that daemons the command leaves behind cannot keep init waiting.
mkfifo /output.fifo
tee /results/output.log < /output.fifo &
tee_pid=$!
chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb CXLPOOL_VM_RESULTS=@GUEST_RESULTS@ \
  /bin/bash @GUEST_RESULTS@/cmd.sh > /output.fifo 2>&1 < /dev/null
rc=$?

# Give leftovers a chance to exit cleanly, then let tee drain.
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" = 1 ] || [ "$pid" = "$tee_pid" ] && continue
  [ -s "$p/cmdline" ] && kill -TERM "$pid" 2> /dev/null
done
n=0
while kill -0 "$tee_pid" 2> /dev/null && [ $n -lt 50 ]; do
  sleep 0.1
  n=$((n + 1))
done
echo "$rc" > /results/exit_code
sync
echo "vm-init: exit code $rc"
poweroff -f
EOF
}

# Builds vmlinuz + initramfs for $1 into $2 (a fresh directory).
build_guest() {
  local deb=$1 out=$2 work kdir moddir order ko rel
  work=$(mktemp -d "$cache_dir/build.XXXXXX") || return 1
  dpkg -x "$deb" "$work/pkg" || { rm -rf "$work"; return 1; }
  kdir=$(ls -d "$work"/pkg/lib/modules/*/ 2> /dev/null | head -n 1)
  moddir=${kdir}kernel
  [ -d "$moddir" ] || { log "no modules in $deb"; rm -rf "$work"; return 1; }
  cp "$work"/pkg/boot/vmlinuz-* "$out/vmlinuz" || { rm -rf "$work"; return 1; }

  local root=$work/initramfs
  mkdir -p "$root"/{bin,dev,proc,sys,lib/modules}
  cp "$busybox" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  order=$(module_load_order "$moddir") || { rm -rf "$work"; return 1; }
  : > "$root/lib/modules/load-order"
  for ko in $order; do
    rel=${ko##*/}
    cp "$ko" "$root/lib/modules/$rel"
    echo "$rel" >> "$root/lib/modules/load-order"
  done
  write_init | sed "s|@GUEST_RESULTS@|$kGuestResults|g" > "$root/init"
  chmod 755 "$root/init"
  (cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
     "$busybox" cpio -o -H newc 2> /dev/null) | gzip -1 > "$out/initrd.gz" ||
    { rm -rf "$work"; return 1; }
  rm -rf "$work"
}

pkg=$(kernel_package)
[ -n "$pkg" ] || skip "cannot tell which linux-image package to use (apt-cache failed, nothing cached)"
guest_key=$( { echo "$kImageLayout $root_modules $pkg"; write_init; sha256sum < "$busybox"; } |
  sha256sum | cut -c1-16)
guest_dir=$cache_dir/guest-$pkg-$guest_key

exec 9> "$cache_dir/.lock"
flock 9
if [ ! -s "$guest_dir/initrd.gz" ] || [ ! -s "$guest_dir/vmlinuz" ]; then
  build_start=$SECONDS
  deb=$(fetch_kernel_deb "$pkg") ||
    { flock -u 9; skip "cannot download $pkg (see $cache_dir/apt-download.log)"; }
  tmp_dir=$(mktemp -d "$cache_dir/guest.XXXXXX") || die "mktemp failed"
  build_guest "$deb" "$tmp_dir" || { rm -rf "$tmp_dir"; die "building the guest image failed"; }
  # Images of older script versions or kernels are never used again.
  rm -rf "$cache_dir"/guest-*
  mv "$tmp_dir" "$guest_dir"
  log "built guest image $guest_dir in $((SECONDS - build_start)) s"
fi
flock -u 9

# ----------------------------------------------------------------- the run
own_results=0
if [ -z "$results_dir" ]; then
  results_dir=$(mktemp -d "${TMPDIR:-/tmp}/cxlpool-vm.XXXXXX") || die "mktemp failed"
  own_results=1
fi
mkdir -p "$results_dir" || die "cannot create $results_dir"
results_dir=$(cd "$results_dir" && pwd)
rm -f "$results_dir/exit_code" "$results_dir/output.log"
{
  echo "# generated by run-in-vm.sh"
  # The host's /tmp and /run are hidden by the guest's tmpfs.
  printf 'cd %q 2> /dev/null || { echo "run-in-vm: %s is not visible in the guest, running in /" >&2; cd /; }\n' "$PWD" "$PWD"
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} > "$results_dir/cmd.sh"

share_args=()
: > "$results_dir/shares"
for i in "${!shares[@]}"; do
  share_args+=(-virtfs "local,path=${shares[$i]},mount_tag=share$i,security_model=none,readonly=on,multidevs=remap")
  echo "share$i ${shares[$i]}" >> "$results_dir/shares"
done

qemu_pid=""
cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2> /dev/null; then
    kill -TERM "$qemu_pid" 2> /dev/null
    sleep 1
    kill -KILL "$qemu_pid" 2> /dev/null
  fi
  if [ "$own_results" = 1 ]; then rm -rf "$results_dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

boot_start=$SECONDS
"$qemu" -accel tcg -cpu "$cpu_model" -nodefaults -no-user-config \
  -m "$((node0_mib + node1_mib))M" -smp "$smp" \
  -object "memory-backend-ram,id=m0,size=${node0_mib}M" \
  -object "memory-backend-ram,id=m1,size=${node1_mib}M" \
  -numa "node,nodeid=0,cpus=0-$((smp - 1)),memdev=m0" \
  -numa node,nodeid=1,memdev=m1 \
  -kernel "$guest_dir/vmlinuz" -initrd "$guest_dir/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$results_dir,mount_tag=results,security_model=none" \
  "${share_args[@]}" "${ivshmem_args[@]}" \
  -display none -serial stdio -no-reboot -monitor none < /dev/null &
qemu_pid=$!

while kill -0 "$qemu_pid" 2> /dev/null; do
  if [ $((SECONDS - boot_start)) -ge "$timeout_s" ]; then
    log "guest still running after ${timeout_s} s: stopping QEMU (pid $qemu_pid)"
    kill -TERM "$qemu_pid" 2> /dev/null
    sleep 2
    kill -KILL "$qemu_pid" 2> /dev/null
    wait "$qemu_pid" 2> /dev/null
    qemu_pid=""
    exit 124
  fi
  sleep 0.2
done
wait "$qemu_pid"
qemu_rc=$?
qemu_pid=""

rc=$(cat "$results_dir/exit_code" 2> /dev/null)
case "$rc" in
  ''|*[!0-9]*)
    die "the guest reported no exit code (QEMU exit status $qemu_rc)" ;;
esac
log "guest command exited with $rc after $((SECONDS - boot_start)) s"
exit "$rc"
