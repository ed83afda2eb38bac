#!/bin/sh
# /init of the peerpath test VM (busybox sh). Runs peerpath and the kernel
# probes on the guest's real sysfs, writes every result to the second serial
# port (/dev/ttyS1, free of kernel messages) between markers:
#
#   ===PEERPATH-BEGIN <name>===
#   ...
#   ===PEERPATH-END <name> rc=<exit status>===
#
# and powers off. vm/check.py reads those sections on the host. Progress
# lines go to the console (ttyS0). Nothing here knows the topology: it finds
# the P2P providers (p2pmem/) and NVMe namespaces itself.
export PATH=/bin:/sbin
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
# No /dev/console node in the archive: take stdio from devtmpfs's.
exec < /dev/console > /dev/console 2>&1
/bin/busybox mount -t tmpfs tmpfs /tmp
/bin/busybox --install -s
# The kernel's config where distributions put it (vm/build-initramfs.sh packed it as /boot/config).
[ -f /boot/config ] && mv /boot/config "/boot/config-$(uname -r)"

LABEL="VM (QEMU TCG): function, not speed"
OUT=/dev/ttyS1
[ -c "$OUT" ] || OUT=/dev/console
stty -F "$OUT" raw -echo 2>/dev/null
# Keep kernel messages off the console while we print; dmesg is collected whole.
dmesg -n 1

say() { echo "guest: $*" > /dev/console; }

# section NAME COMMAND...: runs COMMAND, its stdout and stderr between markers.
section() {
    name=$1
    shift
    {
        echo "===PEERPATH-BEGIN $name==="
        "$@" 2>&1
        rc=$?
        echo "===PEERPATH-END $name rc=$rc==="
    } > "$OUT"
    return $rc
}

say "up; topology $(sed -n 's/.*peerpath\.topology=\([^ ]*\).*/\1/p' /proc/cmdline)"

# The nvme driver brings controllers up asynchronously (reset work): wait until
# every controller is live and has its namespaces (the CMB is registered on the way).
i=0
while [ $i -lt 120 ]; do
    ready=yes
    for c in /sys/class/nvme/nvme*; do
        [ -e "$c" ] || continue
        [ "$(cat "$c/state" 2>/dev/null)" = live ] || ready=no
        ls -d "$c"/nvme*n* > /dev/null 2>&1 || ready=no
    done
    [ $ready = yes ] && break
    sleep 0.5
    i=$((i + 1))
done
say "nvme controllers ready after $((i / 2)) s: $(ls /sys/class/nvme 2>/dev/null | tr '\n' ' ')"

section meta sh -c '
    echo "label: '"$LABEL"'"
    echo "kernel: $(uname -r) $(uname -v)"
    echo "cmdline: $(cat /proc/cmdline)"
    grep -m1 "^vendor_id" /proc/cpuinfo
    grep -m1 "^cpu family" /proc/cpuinfo
    grep -m1 "^model name" /proc/cpuinfo
    echo "modalias: $(cat /sys/devices/system/cpu/modalias 2>/dev/null | cut -c1-48)"
    echo "peerpath: $(peerpath --version 2>&1)"
    echo "uptime: $(cut -d" " -f1 /proc/uptime)"'

# The PCI functions: BDF, ids, class, where they sit, P2P memory.
pci_inventory() {
    for d in /sys/bus/pci/devices/*; do
        b=$(basename "$d")
        real=$(readlink -f "$d")
        line="pci $b vendor=$(cat "$d/vendor") device=$(cat "$d/device") class=$(cat "$d/class") path=${real#/sys/devices/}"
        if [ -d "$d/p2pmem" ]; then
            line="$line p2pmem.size=$(cat "$d/p2pmem/size") p2pmem.available=$(cat "$d/p2pmem/available") p2pmem.published=$(cat "$d/p2pmem/published")"
            [ -e "$d/p2pmem/allocate" ] && line="$line p2pmem.allocate=yes"
        fi
        echo "$line"
    done
    for c in /sys/class/nvme/nvme*; do
        [ -e "$c" ] || continue
        n=$(basename "$c")
        pci=$(basename "$(readlink -f "$c/device")")
        ns=$(cd "$c" && ls -d nvme*n* 2>/dev/null | tr '\n' ',' | sed 's/,$//')
        cmb=""
        [ -e "$c/cmbsz" ] && cmb=" cmbsz=$(cat "$c/cmbsz") cmbloc=$(cat "$c/cmbloc")"
        echo "nvme $n serial=$(cat "$c/serial" | tr -d ' ') pci=$pci namespaces=$ns$cmb"
    done
}
section inventory pci_inventory
# The boot log (the CMB registration is in it) before any probe clears the ring.
section dmesg-boot dmesg

# peerpath on the real sysfs.
section topo peerpath topo
section topo-json peerpath topo --json

PROVIDERS=""
for d in /sys/bus/pci/devices/*; do
    [ -e "$d/p2pmem/allocate" ] && PROVIDERS="$PROVIDERS $(basename "$d")"
done
NAMESPACES=""
for c in /sys/class/nvme/nvme*; do
    [ -e "$c" ] || continue
    for ns in $(cd "$c" && ls -d nvme*n* 2>/dev/null); do
        [ -b "/dev/$ns" ] && NAMESPACES="$NAMESPACES $ns"
    done
done
say "providers:$PROVIDERS namespaces:$NAMESPACES"

# The compress job with P2P memory as the device memory: the bundled sample on
# sw1's ext2 file system, the output on sw2's, the emulated CSP computing in the
# first provider's memory (the CMB). Run before the raw probes below, which
# write to the drives. Checked in the guest: verify, decompress + cmp, and the
# CPU path's output byte for byte.
ns_of() {
    for c in /sys/class/nvme/nvme*; do
        [ "$(tr -d ' ' < "$c/serial")" = "$1" ] && (cd "$c" && ls -d nvme*n* 2>/dev/null | head -n 1)
    done
}
SRC_NS=$(ns_of sw1)
DST_NS=$(ns_of sw2)
set -- $PROVIDERS
CMB_PCI=${1:-}
if [ -n "$SRC_NS" ] && [ -n "$DST_NS" ] && [ -n "$CMB_PCI" ] \
    && mkdir -p /mnt/src /mnt/dst && mount -t ext2 -o ro "/dev/$SRC_NS" /mnt/src && mount -t ext2 "/dev/$DST_NS" /mnt/dst; then
    section "compress-p2p $CMB_PCI $SRC_NS $DST_NS" sh -c "peerpath compress --engine emulated --device-memory-from p2p:$CMB_PCI \
        --block-size 256K /mnt/src/protein.fasta -o /mnt/dst/ --json 2> /tmp/compress-p2p.err"
    section "compress-p2p-stderr" cat /tmp/compress-p2p.err
    section "compress-p2p-verify" peerpath verify /mnt/dst/protein.fasta.gz
    # Into the guest's memory file system through the mapped target (asked for: with its few
    # workers the target would be written), whose pages this kernel, built without madvise,
    # allocates with fallocate alone.
    section "compress-p2p-roundtrip" sh -c 'PEERPATH_MAPPED_OUTPUT=1 peerpath decompress -q /mnt/dst/protein.fasta.gz -o /tmp/restored \
        && cmp /tmp/restored /mnt/src/protein.fasta && echo "restored = source"'
    section "compress-p2p-vs-cpu" sh -c 'peerpath compress -q --engine cpu --block-size 256K /mnt/src/protein.fasta -o /tmp/cpu.gz \
        && cmp /tmp/cpu.gz /mnt/dst/protein.fasta.gz && echo "byte-identical to the CPU path"'
    # The same job from the drive on the other root port: peerpath's placement (the
    # topology planner) must route it as the kernel would: CPU with the reason on the
    # Intel guest (no P2P across the q35 host bridge), the device on the Zen guest.
    RP_NS=$(ns_of rp0)
    if [ -n "$RP_NS" ] && mkdir -p /mnt/rp && mount -t ext2 -o ro "/dev/$RP_NS" /mnt/rp; then
        section "compress-p2p-rp $CMB_PCI $RP_NS $DST_NS" sh -c "peerpath compress --engine emulated --device-memory-from p2p:$CMB_PCI \\
            --block-size 256K /mnt/rp/protein.fasta -o /mnt/dst/rp.fasta.gz --json 2> /tmp/compress-rp.err"
        section "compress-p2p-rp-stderr" cat /tmp/compress-rp.err
        section "compress-p2p-rp-explain" peerpath compress -q --force --engine emulated --device-memory-from "p2p:$CMB_PCI" \
            --block-size 256K /mnt/rp/protein.fasta -o /mnt/dst/rp.fasta.gz --explain
        section "compress-p2p-rp-roundtrip" sh -c 'peerpath decompress -q --force /mnt/dst/rp.fasta.gz -o /tmp/restored-rp \
            && cmp /tmp/restored-rp /mnt/rp/protein.fasta && echo "restored = source"'
        umount /mnt/rp
    fi
    umount /mnt/dst
    umount /mnt/src
else
    say "compress with P2P device memory: skipped (sw1=$SRC_NS sw2=$DST_NS provider=$CMB_PCI, or mount failed)"
fi

# peerpath's verdict for every provider and client namespace, then the kernel's
# own answer: a 1 MiB O_DIRECT read from the namespace into the provider's
# memory and a write back out of it (p2ptest, which uses no peerpath code).
# If this peerpath has a `probe` command (the P2P pre-flight: 4 KiB O_DIRECT read
# into 4 KiB of the provider's memory), its answer is collected and checked too.
HAS_PROBE=no
peerpath probe --help > /dev/null 2>&1 && HAS_PROBE=yes
for p in $PROVIDERS; do
    alloc=/sys/bus/pci/devices/$p/p2pmem/allocate
    ok=""
    for ns in $NAMESPACES; do
        section "verdict $p $ns" peerpath topo --explain "$p" "$ns" --json
        section "explain $p $ns" peerpath topo --explain "$p" "$ns"
        dmesg -c > /dev/null # the next dmesg section holds what this probe made the kernel say
        section "kprobe $p $ns" p2ptest probe "$alloc" "/dev/$ns" 1048576 && ok="$ok $ns"
        section "kprobe-dmesg $p $ns" dmesg
        if [ "$HAS_PROBE" = yes ]; then
            section "peerpath-probe $p $ns" peerpath probe --device "$p" --target "/dev/$ns" --json
        fi
    done
    say "provider $p: O_DIRECT P2P works with:$ok"
    # The data path end to end, between namespaces the kernel accepted (other
    # than the provider's own): the first to the second, and the first to the
    # last when there are more (on the Zen guest, through the host bridge).
    others=""
    for ns in $ok; do
        own=$(basename "$(readlink -f /sys/block/$ns/device/device 2>/dev/null)")
        [ "$own" = "$p" ] || others="$others $ns"
    done
    set -- $others
    if [ $# -ge 2 ]; then
        first=$1 second=$2
        eval "last=\${$#}"
        section "copy $p $first $second" p2ptest copy "$alloc" "/dev/$first" "/dev/$second" 4194304
        [ "$last" != "$second" ] \
            && section "copy $p $first $last" p2ptest copy "$alloc" "/dev/$first" "/dev/$last" 4194304
    fi
    # peerpath's I/O sweep with its buffers in this provider's memory (p2pmem/allocate):
    # reads from every namespace, the accepted ones must run, the others must fail
    # with the kernel's EREMOTEIO explained. Short points: TCG is slow.
    # The provider's own namespace at depth 1 only: at depth 4 the block layer merges
    # sequential reads into one multi-segment request, which QEMU's NVMe refuses when
    # the data is in the drive's own CMB (status 0x12, Invalid Use of Controller Memory
    # Buffer); that case runs apart ("pp-bench-io-own-qd4") and is reported, not hidden.
    for ns in $NAMESPACES; do
        own=$(basename "$(readlink -f /sys/block/$ns/device/device 2>/dev/null)")
        qds=1,4
        [ "$own" = "$p" ] && qds=1
        section "pp-bench-io $p $ns" peerpath bench-io --file "/dev/$ns" --size 16M --memory "p2p:$p" \
            --sweep-bs 4K,128K,1M --sweep-qd $qds --rw read --random skip --runtime-s 0.5 --json
        if [ "$own" = "$p" ]; then
            dmesg -c > /dev/null
            section "pp-bench-io-own-qd4 $p $ns" peerpath bench-io --file "/dev/$ns" --size 16M --memory "p2p:$p" \
                --sweep-bs 128K --sweep-qd 4 --rw read --random skip --runtime-s 0.5 --json
            section "pp-bench-io-own-qd4-dmesg $p $ns" dmesg
        fi
    done
    # peerpath refuses buffered I/O into P2P memory itself: a file on the initramfs
    # (rootfs takes no O_DIRECT), where the kernel would let the CPU copy.
    section "pp-buffered $p" peerpath bench-io --file /tmp/pp-buffered --size 1M --memory "p2p:$p" \
        --sweep-bs 4K --sweep-qd 1 --rw both --random skip --runtime-s 0.5 --json
    # Failures to provoke: buffered I/O into P2P memory (the kernel lets the CPU
    # copy: peerpath must refuse it itself), an allocation larger than what is
    # free (ENOMEM), a private mapping (EINVAL).
    set -- $NAMESPACES
    [ $# -ge 1 ] && section "buffered $p $1" p2ptest buffered "$alloc" "/dev/$1" 1048576
    section "toolarge $p" p2ptest toolarge "$alloc"
    section "private $p" p2ptest private "$alloc"
    section "p2pmem-after $p" sh -c "cd /sys/bus/pci/devices/$p/p2pmem && echo size=\$(cat size) available=\$(cat available) published=\$(cat published)"
done

section dmesg-rest dmesg

# The guest's sysfs, trimmed to what peerpath-topo reads (crates/peerpath-topo/src/sysfs.rs),
# symlinks kept, as a base64 tar.gz: vm/check.py unpacks it into the fixture.
section sysfs-capture sh -c 'capture-sysfs /tmp/cap && tar -czf - -C /tmp/cap $(cd /tmp/cap && ls -d sys proc boot 2>/dev/null) | base64'

say "done"
sync
echo "===PEERPATH-DONE===" > "$OUT"
poweroff -f
