#!/usr/bin/env bash
# The VM tests, one command: real P2PDMA under QEMU (TCG), end to end.
#
#   vm/test.sh [TOPOLOGY...] [--update-fixture]
#
# 1. builds (or takes from the cache) the kernel: vm/build-kernel.sh
# 2. builds the initramfs with a static peerpath: vm/build-initramfs.sh
# 3. boots each topology (default: every vm/topologies/*.toml): vm/run.sh
# 4. checks what each guest reported: vm/check.py (the CMB registered as a
#    published P2P provider; peerpath's verdicts against the kernel's own
#    answer; an O_DIRECT copy through P2P memory, data verified; ENOMEM,
#    EINVAL and buffered I/O provoked on purpose)
# --update-fixture copies the switch-cmb guest's trimmed sysfs into
# crates/peerpath-topo/fixtures/qemu-switch-cmb/sys (plus topology.toml and
# topology.svg exported from it).
#
# Outputs: target/vm/runs/<topology>/{console.log,results.txt,report.json,sysfs/}.
# Every figure from the VM is "VM (QEMU TCG): function, not speed".
# Exit status 0 when every check passed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"
topos=()
update_fixture=no
for a in "$@"; do
    case "$a" in
        --update-fixture) update_fixture=yes ;;
        -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
        -*) echo "vm/test.sh: unknown option $a" >&2; exit 2 ;;
        *) topos+=("$a") ;;
    esac
done
if [ ${#topos[@]} -eq 0 ]; then
    for f in "$here"/topologies/*.toml; do topos+=("$(basename "$f" .toml)"); done
fi

t0=$(date +%s)
kernel=$("$here/build-kernel.sh" | tail -1)
t1=$(date +%s)
initrd=$("$here/build-initramfs.sh" "$repo/target/vm/initramfs.cpio.gz" | tail -1)
t2=$(date +%s)
pp=${CARGO_TARGET_DIR:-$repo/target}/x86_64-unknown-linux-gnu/release/peerpath
echo "vm/test.sh: kernel $kernel ($((t1 - t0)) s), initramfs $initrd ($((t2 - t1)) s)"

failed=0 passed_topos=0
summary=()
for t in "${topos[@]}"; do
    out=$repo/target/vm/runs/$t
    if ! "$here/run.sh" "$t" --kernel "$kernel" --initrd "$initrd" --out "$out"; then
        summary+=("$t: guest did not finish (see $out/console.log)")
        failed=$((failed + 1))
        continue
    fi
    if python3 "$here/check.py" "$here/topologies/$t.toml" "$out" --peerpath "$pp" | tee "$out/check.txt"; then
        passed_topos=$((passed_topos + 1))
    else
        failed=$((failed + 1))
    fi
    summary+=("$(tail -1 "$out/check.txt") (boot to power-off $(cat "$out/wall-seconds") s wall, VM (QEMU TCG): function, not speed)")
done

if [ "$update_fixture" = yes ]; then
    src=$repo/target/vm/runs/switch-cmb/sysfs/sys
    fx=$repo/crates/peerpath-topo/fixtures/qemu-switch-cmb
    if [ -d "$src" ]; then
        rm -rf "$fx/sys"
        mkdir -p "$fx"
        cp -a "$src" "$fx/sys"
        # The Zen guest's sysfs differs only in the CPU: keep its modalias beside the tree.
        zen=$repo/target/vm/runs/switch-cmb-zen/sysfs/sys/devices/system/cpu/modalias
        [ -f "$zen" ] && cp "$zen" "$fx/zen-cpu-modalias"
        "$pp" topo --sysfs "$fx/sys" --export "$fx/topology.toml" --svg "$fx/topology.svg" > "$repo/target/vm/fixture-topo.txt"
        # The model says where it was read from; make that path repository-relative.
        sed -i "s#$fx/#crates/peerpath-topo/fixtures/qemu-switch-cmb/#g" "$fx/topology.toml" "$repo/target/vm/fixture-topo.txt"
        echo "vm/test.sh: fixture updated: $fx"
    else
        echo "vm/test.sh: no switch-cmb capture to make a fixture from" >&2
        failed=$((failed + 1))
    fi
fi

echo
echo "== VM tests (VM (QEMU TCG): function, not speed), $(( $(date +%s) - t0 )) s in all"
for s in "${summary[@]}"; do echo "   $s"; done
echo "vm: $passed_topos passed, $failed failed"
[ "$failed" -eq 0 ]
