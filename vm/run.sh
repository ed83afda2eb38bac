#!/usr/bin/env bash
# Boot one QEMU topology and collect what the guest reports.
#
#   vm/run.sh TOPOLOGY [--kernel BZIMAGE] [--initrd CPIO] [--out DIR] [--timeout SECONDS] [--append TEXT]
#
# TOPOLOGY is a name from vm/topologies/ (switch-cmb) or a path to such a file.
# Defaults: the cached kernel (vm/build-kernel.sh), target/vm/initramfs.cpio.gz
# (vm/build-initramfs.sh), out target/vm/runs/<name>, timeout 600 s.
# Writes into DIR: qemu-cmdline.txt (one argument per line), console.log (the
# guest's kernel console, ttyS0), results.txt (the guest's results, ttyS1),
# disks/*.raw (fresh sparse NVMe images). Exit status 0 when the guest finished
# (results.txt ends with ===PEERPATH-DONE===), 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "run: ERROR: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: vm/run.sh TOPOLOGY [--kernel K] [--initrd I] [--out DIR] [--timeout S] [--append TEXT]"
topo=$1
shift
case "$topo" in
    */*|*.toml) ;;
    *) topo=$here/topologies/$topo.toml ;;
esac
[ -f "$topo" ] || die "no topology file $topo (see vm/topologies/)"
name=$(basename "$topo" .toml)
kernel="" initrd=$repo/target/vm/initramfs.cpio.gz out=$repo/target/vm/runs/$name timeout=600 append=""
while [ $# -gt 0 ]; do
    case "$1" in
        --kernel) kernel=$2; shift 2 ;;
        --initrd) initrd=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --append) append=$2; shift 2 ;;
        *) die "unknown option $1" ;;
    esac
done
if [ -z "$kernel" ]; then
    kernel=$("$here/build-kernel.sh" --print-path) || die "no cached kernel: run vm/build-kernel.sh first"
fi
[ -f "$kernel" ] || die "no kernel $kernel"
[ -f "$initrd" ] || die "no initramfs $initrd: run vm/build-initramfs.sh first"
command -v qemu-system-x86_64 > /dev/null || die "qemu-system-x86_64 missing (vm/build-kernel.sh --deps-only)"

mkdir -p "$out"
rm -f "$out/console.log" "$out/results.txt"
python3 "$here/topology.py" argv "$topo" --kernel "$kernel" --initrd "$initrd" --disks "$out/disks" \
    --console "$out/console.log" --results "$out/results.txt" --append "$append" > "$out/qemu-cmdline.txt" \
    || die "bad topology $topo"
mapfile -t cmd < "$out/qemu-cmdline.txt"
echo "run: booting $name (QEMU TCG; log: $out/console.log)" >&2
start=$(date +%s.%N)
rc=0
nice -n 19 timeout --foreground -k 10 "$timeout" "${cmd[@]}" < /dev/null > "$out/qemu.log" 2>&1 || rc=$?
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
echo "$secs" > "$out/wall-seconds"
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "run: $name timed out after $timeout s; last console lines:" >&2
    tail -20 "$out/console.log" >&2 || true
    exit 1
fi
if ! grep -q '===PEERPATH-DONE===' "$out/results.txt" 2>/dev/null; then
    echo "run: $name: the guest did not finish (qemu exit $rc); last console lines:" >&2
    tail -30 "$out/console.log" >&2 || true
    cat "$out/qemu.log" >&2 || true
    exit 1
fi
echo "run: $name finished in $secs s (wall, VM (QEMU TCG): function, not speed); results: $out/results.txt" >&2
