#!/usr/bin/env bash
# bench/gpu-sweep.sh - `peerpath compress --engine gpu` in memory (tmpfs in and out, --no-sync)
# across CUDA streams and queue depths, beside the CPU on every core, interleaved in rounds.
#
# Usage: bench/gpu-sweep.sh --input FILE [--peerpath PATH] [--rounds 2] [--out DIR]
#                           [--configs "STREAMS:DEPTH[:STAGING[:WINDOW[:BATCH[:CHUNK[:MEMORY]]]]] ..."] [--no-gzip-t]
#
#   --input FILE     uncompressed input (copied, untimed, to /dev/shm/ppsweep)
#   --peerpath PATH  peerpath binary (default target/release/peerpath)
#   --rounds N       rounds; each runs every configuration once (default 2)
#   --configs LIST   GPU configurations, streams:queue-depth[:staging[:window[:batch[:chunk[:memory]]]]]
#                    (--gpu-staging commands, the default, or device; --gpu-window, --gpu-batch,
#                    --gpu-chunk, --device-memory; a field left out keeps peerpath's default),
#                    default "1:64 1:128 1:128::0 1:128:device"
#   --out DIR        where sweep.md and one JSON report per configuration go (default .)
#   --no-gzip-t      check outputs by peerpath's round trip only (gzip -t takes ~5 s per GB)
#
# Per run: wall seconds (the report's, and the whole process's: starting, and closing the GPU),
# GB/s, the device's opening time and its parts (CUDA context, nvCOMP, pinning, allocation:
# "opened in" on the report's device line) and the rate past it,
# host CPU, ratio. The CPU row is `peerpath compress -T <nproc>` on the same files. Every
# configuration's last output is decompressed by peerpath and compared with the input, and
# checked by `gzip -t`. Needs a GPU, CUDA's driver and nvCOMP ($PEERPATH_NVCOMP or --nvcomp
# in PEERPATH_ARGS); where there is none, each GPU run fails with the reason (--no-fallback).
set -uo pipefail
pp=target/release/peerpath input="" rounds=2 out=. configs="1:64 1:128 1:128::0 1:128:device" gzip_t=1
while [ $# -gt 0 ]; do
    case $1 in
        --input) input=$2; shift 2 ;; --peerpath) pp=$2; shift 2 ;; --rounds) rounds=$2; shift 2 ;;
        --out) out=$2; shift 2 ;; --configs) configs=$2; shift 2 ;; --no-gzip-t) gzip_t=0; shift ;;
        -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -f "$input" ] && [ -x "$pp" ] || { echo "need --input FILE and a peerpath binary ($pp)" >&2; exit 2; }
mkdir -p "$out"
d=/dev/shm/ppsweep; rm -rf "$d"; mkdir -p "$d"; trap 'rm -rf "$d"' EXIT
cp "$input" "$d/in"
size=$(stat -c %s "$d/in")
line() { # label json process-wall-seconds
    python3 - "$1" "$2" "$size" "$3" <<'EOF'
import json, re, sys
label, path, size, process = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
try:
    r = json.load(open(path))
except Exception:
    print(f"| {label} | FAILED: {open(path).read().strip()[:300]} |||||||")
    sys.exit(0)
wall = r["wall_s"]
opened, parts = None, "-"
for dev in r.get("devices") or []:
    m = re.search(r"opened in ([0-9.]+) s( \(([^)]*)\))?", dev.get("kind", ""))
    if m:
        opened, parts = float(m.group(1)), m.group(3) or "-"
past = f"{size / (wall - opened) / 1e9:.2f}" if opened is not None and wall > opened else "-"
prof = " ".join(dev.get("profile") or "" for dev in r.get("devices") or [])
m = re.search(r"([0-9.]+) GB/s while it ran", prof)
k = f"{m.group(1)}" if m else "-"
m = re.search(r"([0-9]+) batches, ([0-9.]+) commands each", prof)
batches = f"{m.group(1)} x {m.group(2)}" if m else "-"
fb = "; ".join(str(f) for f in r.get("fallbacks") or []) or "none"
print(f"| {label} | {wall:.3f} | {process:.3f} | {size / wall / 1e9:.2f} | {opened if opened is not None else '-'} | {parts} | {past} | "
      f"{r['cpu']['total_utilisation_pct']:.1f} | {r['ratio']:.3f} | {batches} | {k} | {fb[:120]} |")
EOF
}
{
    echo "# compress --engine gpu in memory: streams and queue depth ($(date -u +%F), $(nproc) CPUs)"
    echo
    echo "input: $input, $size bytes, copied to $d (tmpfs); outputs there too, --no-sync; $rounds round(s)"
    echo
    echo "| configuration | wall s (report) | wall s (process) | GB/s | device opened in s | opening's parts s | GB/s past opening | host CPU % of all cores | ratio | batches x commands | nvCOMP GB/s while it ran | fallbacks |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} | tee "$out/sweep.md"
for ((r = 1; r <= rounds; r++)); do
    for c in $configs; do
        IFS=: read -r s q st win gb ch mem <<< "$c"; st=${st:-commands}
        # Fields left out keep peerpath's defaults.
        extra=(); label="gpu, $s stream(s), queue depth $q, staged by $st"
        [ -n "$win" ] && { extra+=(--gpu-window "$win"); label+=", window $win"; }
        [ -n "$gb" ] && { extra+=(--gpu-batch "$gb"); label+=", batches up to $gb"; }
        [ -n "$ch" ] && { extra+=(--gpu-chunk "$ch"); label+=", chunks $ch"; }
        [ -n "$mem" ] && { extra+=(--device-memory "$mem"); label+=", GPU memory $mem"; }
        tag="s$s-q$q-$st-w${win:-d}-b${gb:-d}-c${ch:-d}-m${mem:-d}"
        t=$EPOCHREALTIME
        timeout 120 "$pp" compress --engine gpu --no-fallback --no-sync -f --gpu-streams "$s" --queue-depth "$q" --gpu-staging "$st" \
            "${extra[@]}" "$d/in" -o "$d/g-$tag.gz" --json > "$out/gpu-$tag.json" 2>&1
        line "$label (round $r)" "$out/gpu-$tag.json" "$(awk -v a="$EPOCHREALTIME" -v b="$t" 'BEGIN { print a - b }')" | tee -a "$out/sweep.md"
    done
    t=$EPOCHREALTIME
    timeout 120 "$pp" compress -T "$(nproc)" --no-sync -f "$d/in" -o "$d/c.gz" --json > "$out/cpu.json" 2>&1
    line "cpu, -T $(nproc) (round $r)" "$out/cpu.json" "$(awk -v a="$EPOCHREALTIME" -v b="$t" 'BEGIN { print a - b }')" | tee -a "$out/sweep.md"
done
echo | tee -a "$out/sweep.md"
for f in "$d"/g-*.gz; do
    [ -s "$f" ] || continue
    if timeout 60 "$pp" decompress -q -o - "$f" | cmp -s - "$d/in" && { [ "$gzip_t" = 0 ] || gzip -t "$f"; }; then
        echo "check $(basename "$f"): round trip ok$([ "$gzip_t" = 1 ] && echo ", gzip -t ok")" | tee -a "$out/sweep.md"
    else
        echo "CHECK FAILED: $(basename "$f")" | tee -a "$out/sweep.md"
    fi
done
