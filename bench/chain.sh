#!/usr/bin/env bash
# bench/chain.sh - `compress --encrypt --ec K+M` (one pass) beside the same work as separate
# commands (issue 19, chains).
#
# Usage: bench/chain.sh [--rounds 5] [--size-mib 256] [--ec 4+2] [--scratch DIR] [--out FILE]
#
# Data: the bundled protein sample repeated to SIZE MiB, in SCRATCH (default /dev/shm). Each round:
#   chain      peerpath compress S --encrypt --ec K+M -o DIR       (one pass: no intermediate file)
#   separate   peerpath compress S --encrypt -o S.gz.ppenc, then peerpath ec encode S.gz.ppenc
#              -k K -m M -o DIR2                                     (two commands, a file between)
#   compress   peerpath compress S --encrypt -o S.gz.ppenc alone     (what the chain adds EC to)
#   device     the chain with --engine emulated: every stage in an emulated CSP's memory
# and the reverse, from the chain's shards with one data shard removed (so every stripe is rebuilt):
#   reverse           peerpath decompress --ec DIR --key-file KEY -o OUT   (one pass, host CPU)
#   reverse separate  peerpath ec decode DIR -o X.gz.ppenc, then peerpath decompress X.gz.ppenc
#   reverse device    the reverse with --engine emulated (rebuild, open, inflate in its memory)
# and checks once that both shard sets decode to files that decrypt to the same .gz, and that every
# reverse gives the source back. Prints medians.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 size_mib=256 ec=4+2 scratch="" out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --size-mib) size_mib=$2; shift 2 ;; --ec) ec=$2; shift 2 ;;
        --scratch) scratch=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli
pp=$PWD/target/release/peerpath
scratch=${scratch:-/dev/shm}/.bench-chain.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
s=$scratch/S key=$scratch/key
while [ "$(stat -c %s "$s" 2>/dev/null || echo 0)" -lt $((size_mib << 20)) ]; do cat data/sample/protein.fasta >> "$s"; done
truncate -s $((size_mib << 20)) "$s"
"$pp" keygen -o "$key" 2>/dev/null
k=${ec%+*} m=${ec#*+}
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null; awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }'; }
for ((r = 0; r < rounds; r++)); do
    rm -rf "$scratch/c" "$scratch/e" "$scratch/d" "$scratch/S.gz.ppenc"
    secs "$pp" compress "$s" --encrypt --key-file "$key" --ec "$ec" -o "$scratch/c" >> "$scratch/chain"
    a=$(secs "$pp" compress "$s" --encrypt --key-file "$key" -o "$scratch/S.gz.ppenc")
    b=$(secs "$pp" ec encode "$scratch/S.gz.ppenc" -k "$k" -m "$m" -o "$scratch/e")
    echo "$a" >> "$scratch/compress"
    secs "$pp" compress "$s" --encrypt --key-file "$key" --ec "$ec" -o "$scratch/d" --engine emulated --no-fallback >> "$scratch/device"
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.6f\n", a + b }' >> "$scratch/separate"
    rm -f "$scratch/c/shard-000" "$scratch/r1" "$scratch/r2" "$scratch/r3" "$scratch/x.ppenc"
    secs "$pp" decompress --ec "$scratch/c" --key-file "$key" -o "$scratch/r1" >> "$scratch/reverse"
    a=$(secs "$pp" ec decode "$scratch/c" -o "$scratch/x.ppenc")
    b=$(secs "$pp" decompress "$scratch/x.ppenc" --key-file "$key" -o "$scratch/r2")
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%.6f\n", a + b }' >> "$scratch/reverse_separate"
    secs "$pp" decompress --ec "$scratch/c" --key-file "$key" -o "$scratch/r3" --engine emulated --no-fallback >> "$scratch/reverse_device"
    for f in r1 r2 r3; do cmp "$scratch/$f" "$s" || { echo "CHECK FAILED: $f differs from the source" >&2; exit 1; }; done
    if [ "$r" -eq 0 ]; then
        "$pp" ec decode "$scratch/c" -o "$scratch/c.ppenc" && "$pp" decrypt "$scratch/c.ppenc" --key-file "$key" -o "$scratch/c.gz" >/dev/null
        "$pp" decrypt "$scratch/S.gz.ppenc" --key-file "$key" -o "$scratch/s.gz" >/dev/null
        cmp "$scratch/c.gz" "$scratch/s.gz" || { echo "CHECK FAILED: the chain's members differ" >&2; exit 1; }
        rm -f "$scratch/c.ppenc" "$scratch/c.gz" "$scratch/s.gz"
    fi
done
median() { sort -g "$scratch/$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f", m}'; }
rate() { awk -v s=$((size_mib << 20)) -v t="$(median "$1")" 'BEGIN { printf "%.2f", s / t / 1e9 }'; }
{
echo "# compress -> encrypt -> erasure code: one pass beside separate commands, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r)."
echo "Data: ${size_mib} MiB of protein FASTA (the bundled sample repeated) in $(dirname "$scratch"); level 1, 1 MiB members and sealed blocks, RS($k, $m), 1 MiB units."
echo "Command: \`bench/chain.sh --rounds $rounds --size-mib $size_mib --ec $ec\`; median of $rounds rounds, wall seconds, measured on this host's CPU (every stage on it)."
echo
echo "| row | seconds (median) | GB/s of source |"
echo "|---|---|---|"
echo "| chain: compress --encrypt --ec $ec -o DIR | $(median chain) | $(rate chain) |"
echo "| separate: compress --encrypt, then ec encode | $(median separate) | $(rate separate) |"
echo "| compress --encrypt alone | $(median compress) | $(rate compress) |"
echo "| chain on 1 emulated CSP (--engine emulated; measured on emulated devices) | $(median device) | $(rate device) |"
echo "| reverse: decompress --ec DIR (1 data shard lost: every stripe rebuilt) | $(median reverse) | $(rate reverse) |"
echo "| reverse separate: ec decode, then decompress | $(median reverse_separate) | $(rate reverse_separate) |"
echo "| reverse on 1 emulated CSP (--engine emulated; measured on emulated devices) | $(median reverse_device) | $(rate reverse_device) |"
} | tee ${out:+"$out"}
