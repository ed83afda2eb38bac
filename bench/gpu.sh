#!/usr/bin/env bash
# bench/gpu.sh - peerpath on a GPU against the host CPU and the tools people use, side by side.
#
# Usage: bench/gpu.sh --input FILE [--peerpath PATH] [--runs 3] [--threads N] [--disk DIR]
#                     [--debs DIR] [--nvcomp PATH] [--out DIR]
#
#   --input FILE     uncompressed input (e.g. 384 MB of protein FASTA)
#   --peerpath PATH  peerpath binary (default target/release/peerpath)
#   --runs N         timed runs per row, interleaved in rounds; medians and minima reported
#   --threads N      CPU threads for peerpath --engine cpu, pigz -p, igzip -T (default: all cores)
#   --disk DIR       where file-to-file inputs and outputs go (default /var/tmp/ppgpu; a file system
#                    that takes O_DIRECT: the GPU reads and writes through its pinned window by DMA)
#   --debs DIR       unpack pigz/igzip .deb files found there (machines without them installed)
#   --nvcomp PATH    nvCOMP's libnvcomp.so.6 (else $PEERPATH_NVCOMP, the loader's path, Python's wheel)
#   --out DIR        where gpu.md and the probe's JSON go (default: the current directory)
#
# Rows: peerpath gpu probe (nvCOMP kernel only; and copies between GPU memory and registered mappings
# of /dev/shm files, the case a job in memory could use to skip the host's copies); file to file (input in DIR, output in DIR,
# synced): peerpath --engine gpu, peerpath --engine cpu -T N, pigz -1 -p N, igzip -1 -T N; the
# same with the input in /dev/shm; and in memory (input and output in /dev/shm, no sync), where
# the GPU also runs with --gpu-memory-files mapped (its copy engine reads and writes the files'
# pages; each GPU job's JSON report in memory, staged and mapped, is kept as gpu-memory-*.json).
# Every output is checked once (peerpath decompress | cmp). Then
# decompression of peerpath's own output (members with size fields), in memory and disk to disk:
# peerpath decompress --engine gpu, peerpath decompress -T N, igzip -d (one thread: it has no
# parallel decoder), pigz -d -p N; each output compared with the input once. Last, the disk's own
# O_DIRECT rate (peerpath bench-io, 1 MiB at queue depth 16, read and write) as the ceiling the
# file-to-file rows answer to. Where there is no GPU, the gpu rows say why and the others still run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
input="" pp=$here/target/release/peerpath runs=3 threads=$(nproc) disk=/var/tmp/ppgpu debs="" out=$PWD
while [ $# -gt 0 ]; do
    case $1 in
        --input) input=$2; shift 2 ;; --peerpath) pp=$2; shift 2 ;; --runs) runs=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;; --disk) disk=$2; shift 2 ;; --debs) debs=$2; shift 2 ;;
        --nvcomp) export PEERPATH_NVCOMP=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -f "$input" ] && [ -x "$pp" ] || { echo "need --input FILE and a peerpath binary ($pp)" >&2; exit 2; }
mkdir -p "$disk" "$out"
trap 'rm -rf "$disk/bench" /dev/shm/ppgpu-in /dev/shm/ppgpu-out /dev/shm/ppgpu-d.gz' EXIT
mkdir -p "$disk/bench"
cp "$input" "$disk/bench/in" && cp "$input" /dev/shm/ppgpu-in && sync
ld=""
if [ -n "$debs" ]; then
    root=$disk/bench/debroot; mkdir -p "$root"
    for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$root"; done
    PATH=$root/usr/bin:$PATH; ld=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
fi
size=$(stat -c %s "$input")
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>"$disk/bench/err" || { echo "FAILED: $*: $(head -c 300 "$disk/bench/err")" >&2; echo NaN; return 0; }; awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.4f\n", a - b }'; }
median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.4f %.4f\n", m, v[1]}'; }
gpu_note=$("$pp" gpu probe --input "$input" --bytes "$size" --chunk 1M --algorithm 0,1,2 --repeat 3 --mapped-at /dev/shm --json > "$out/gpu-probe.json" 2>&1 && echo ok || cat "$out/gpu-probe.json")
declare -A rows
row() { # name, command...
    local name=$1; shift
    rows[$name]+="$(secs "$@") "
}
for ((r = 0; r < runs; r++)); do
    for where in "disk" "tmpfs in -> disk" "memory"; do
        case $where in
            disk) src=$disk/bench/in o=$disk/bench sync=() ;;
            "tmpfs in -> disk") src=/dev/shm/ppgpu-in o=$disk/bench sync=() ;;
            memory) src=/dev/shm/ppgpu-in o=/dev/shm/ppgpu-out sync=(--no-sync); mkdir -p "$o" ;;
        esac
        [ "$gpu_note" = ok ] && row "peerpath --engine gpu ($where)" "$pp" compress --engine gpu --no-fallback "${sync[@]}" -q -f "$src" -o "$o/g.gz"
        # Memory files mapped for the copy engine (no CPU copy of either file; --gpu-memory-files).
        [ "$gpu_note" = ok ] && [ "$where" = memory ] && row "peerpath --engine gpu --gpu-memory-files mapped ($where)" "$pp" compress --engine gpu --gpu-memory-files mapped --no-fallback "${sync[@]}" -q -f "$src" -o "$o/gm.gz"
        row "peerpath --engine cpu -T $threads ($where)" "$pp" compress -T "$threads" "${sync[@]}" -q -f "$src" -o "$o/c.gz"
        sy="&& sync '$o/p.gz'"; [ "$where" = memory ] && sy=""
        command -v pigz >/dev/null && row "pigz -1 -p $threads ($where)" sh -c "LD_LIBRARY_PATH=$ld pigz -1 -p $threads -c '$src' > '$o/p.gz' $sy"
        sy="&& sync '$o/i.gz'"; [ "$where" = memory ] && sy=""
        command -v igzip >/dev/null && row "igzip -1 -T $threads ($where)" sh -c "LD_LIBRARY_PATH=$ld igzip -1 -T $threads -c '$src' > '$o/i.gz' $sy"
    done
done
# Decompression of peerpath's own output (the CPU's, members with size fields), every row's output
# compared with the input in the first round.
dchecks=""
if [ -f /dev/shm/ppgpu-out/c.gz ]; then
    cp /dev/shm/ppgpu-out/c.gz "$disk/bench/d.gz" && cp /dev/shm/ppgpu-out/c.gz /dev/shm/ppgpu-d.gz && sync
else
    dchecks="decompression rows skipped: the CPU's compressed output is missing (its row failed); "
    runs_d=0
fi
dcheck() { # name, output file
    if cmp -s "$2" "$input"; then dchecks+="$1: identical; "; else dchecks+="$1: CHECK FAILED; "; echo "CHECK FAILED: $1" >&2; fi
}
for ((r = 0; r < ${runs_d:-$runs}; r++)); do
    for where in "disk" "memory"; do
        case $where in
            disk) src=$disk/bench/d.gz o=$disk/bench sync=() sy="&& sync '$disk/bench/dx'" ;;
            memory) src=/dev/shm/ppgpu-d.gz o=/dev/shm/ppgpu-out sync=(--no-sync) sy="" ;;
        esac
        if [ "$gpu_note" = ok ]; then
            row "decompress: peerpath --engine gpu ($where)" "$pp" decompress --engine gpu --no-fallback "${sync[@]}" -q -f "$src" -o "$o/dg"
            [ "$r" = 0 ] && dcheck "peerpath --engine gpu ($where)" "$o/dg"
        fi
        row "decompress: peerpath -T $threads ($where)" "$pp" decompress -T "$threads" "${sync[@]}" -q -f "$src" -o "$o/dc"
        [ "$r" = 0 ] && dcheck "peerpath -T $threads ($where)" "$o/dc"
        if command -v igzip >/dev/null; then
            row "decompress: igzip -d ($where)" sh -c "LD_LIBRARY_PATH=$ld igzip -d -c '$src' > '$o/dx' ${sy}"
            [ "$r" = 0 ] && dcheck "igzip -d ($where)" "$o/dx"
        fi
        if command -v pigz >/dev/null; then
            row "decompress: pigz -d -p $threads ($where)" sh -c "LD_LIBRARY_PATH=$ld pigz -d -p $threads -c '$src' > '$o/dx' ${sy}"
            [ "$r" = 0 ] && dcheck "pigz -d -p $threads ($where)" "$o/dx"
        fi
        rm -f "$o/dg" "$o/dc" "$o/dx"
    done
done
# The disk's own O_DIRECT rate: what file-to-file rows cannot beat.
io_note=$("$pp" bench-io --file "$disk/bench/io" --size 1G --sweep-bs 1M --sweep-qd 16 --random skip --json > "$out/bench-io.json" 2> "$disk/bench/err" && echo ok || head -c 300 "$disk/bench/err")
rm -f "$disk/bench/io"
checks=""
# One report of each GPU job in memory: where its time and bytes went.
if [ "$gpu_note" = ok ]; then
    for m in staged mapped; do
        "$pp" compress --engine gpu --gpu-memory-files "$m" --no-fallback --no-sync --json -f /dev/shm/ppgpu-in -o /dev/shm/ppgpu-out/g-$m.gz > "$out/gpu-memory-$m.json" 2> "$disk/bench/err" || echo "FAILED: --gpu-memory-files $m: $(head -c 300 "$disk/bench/err")" >&2
        rm -f /dev/shm/ppgpu-out/g-$m.gz
    done
fi
for f in "$disk/bench/g.gz" "$disk/bench/c.gz" /dev/shm/ppgpu-out/g.gz /dev/shm/ppgpu-out/gm.gz /dev/shm/ppgpu-out/c.gz; do
    [ -f "$f" ] || continue
    if "$pp" decompress -q -o - "$f" | cmp -s - "$input" && gzip -t "$f"; then checks+="$f: round trip and gzip -t ok; "; else checks+="$f: CHECK FAILED; "; echo "CHECK FAILED: $f" >&2; fi
done
sizes=$(for f in g c p i; do [ -f "/dev/shm/ppgpu-out/$f.gz" ] || continue; printf '%s.gz %s bytes (ratio %.3f); ' "$f" "$(stat -c %s "/dev/shm/ppgpu-out/$f.gz")" "$(awk -v a="$size" -v b="$(stat -c %s "/dev/shm/ppgpu-out/$f.gz")" 'BEGIN { print a / b }')"; done)
{
    echo "# peerpath on a GPU, side by side ($(date -u +%F), $(uname -n), $(nproc) CPUs)"
    echo
    echo "command: $0 --input $input --runs $runs --threads $threads --disk $disk; input $size bytes"
    echo
    if [ "$gpu_note" = ok ]; then
        python3 -c "import json;r=json.load(open('$out/gpu-probe.json'));print('GPU: %s, nvCOMP %s; kernel only: ' % (r['gpu']['name'], r['nvcomp_version']) + ', '.join('algorithm %d %.2f GB/s ratio %.3f' % (x['algorithm'], x['kernel_gb_per_s'], x['ratio']) for x in r['runs']))"
        python3 -c "import json;m=json.load(open('$out/gpu-probe.json')).get('mapped') or {};print('mapped files in /dev/shm (memory file system: %s): pinned -> GPU %s GB/s; source read-only: registered in %s s, -> GPU %s GB/s, bytes match %s; target: registered in %s s, GPU -> %s GB/s, bytes match %s; error: %s' % tuple(m.get(k) for k in ['memory_file_system', 'pinned_h2d_gb_per_s', 'source_register_s', 'source_h2d_gb_per_s', 'source_bytes_match', 'target_register_s', 'target_d2h_gb_per_s', 'target_bytes_match', 'error']))"
    else
        echo "GPU rows skipped: $gpu_note"
    fi
    echo
    echo "outputs (memory rows; g = peerpath gpu, c = peerpath cpu, p = pigz, i = igzip): $sizes"
    echo
    echo "checks: $checks"
    echo
    echo "decompression checks (first round): $dchecks"
    echo
    if [ "$io_note" = ok ]; then
        python3 -c "import json;r=json.load(open('$out/bench-io.json'));print('disk ceiling (peerpath bench-io, O_DIRECT, 1 MiB, QD 16, $disk): ' + ', '.join('%s %.2f GB/s' % (p['pattern'], p['throughput_gb_per_s']) for p in r['points']))" 2>/dev/null || echo "disk ceiling: see $out/bench-io.json"
    else
        echo "disk ceiling: bench-io failed: $io_note"
    fi
    echo
    echo "GB/s: uncompressed bytes a second (what compression reads, what decompression writes)."
    echo
    echo "| row | median (min) s | GB/s (median) |"
    echo "|---|---|---|"
    for k in "${!rows[@]}"; do
        read -r m mn < <(tr ' ' '\n' <<< "${rows[$k]}" | grep -v '^$' | median)
        printf '| %s | %s (%s) | %.2f |\n' "$k" "$m" "$mn" "$(awk -v s="$size" -v t="$m" 'BEGIN { print (t > 0) ? s / t / 1e9 : 0 }')"
    done | sort
} | tee "$out/gpu.md"
