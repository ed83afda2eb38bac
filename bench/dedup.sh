#!/usr/bin/env bash
# bench/dedup.sh - peerpath dedup store beside b3sum (issue 19).
#
# Usage: bench/dedup.sh [--rounds 5] [--size-mib 256] [--scratch DIR] [--out FILE]
#
# Data: SIZE MiB of random bytes (A) and an edited copy of it (B: a few bytes inserted in
# three places, 1 MiB cut from the end). Each round, in order:
#   b3sum --num-threads 1 A     BLAKE3 alone, one thread (b3sum from crates.io, installed with
#                               `cargo install b3sum --locked` if missing)
#   peerpath dedup store A      into a new store: chunking (FastCDC) + BLAKE3 + writing A's
#                               chunks; the chunk-and-hash rate is A's size over its run time
#   peerpath dedup store B      the same store: only B's new chunks are written
# then prints medians and the deduplication ratio from `dedup stats`, checked to be the same in
# every round (the CPU oracle is deterministic). Restoring B is checked once against B.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 size_mib=256 scratch="" out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --size-mib) size_mib=$2; shift 2 ;;
        --scratch) scratch=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli
pp=target/release/peerpath
command -v b3sum >/dev/null || cargo install b3sum --locked -q
scratch=${scratch:-/dev/shm}/.bench-dedup.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
a=$scratch/A b=$scratch/B
head -c $((size_mib << 20)) /dev/urandom > "$a"
python3 - "$a" "$b" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
for f in (0.25, 0.5, 0.75):
    at = int(len(d) * f)
    d[at:at] = b"an edit the chunker must absorb"
open(sys.argv[2], "wb").write(bytes(d[: len(d) - (1 << 20)]))
PY
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null; awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }'; }
rate() { awk -v s=$((size_mib << 20)) -v t="$1" 'BEGIN { printf "%.3f\n", s / t / 1e9 }'; }
for ((r = 0; r < rounds; r++)); do
    rate "$(secs b3sum --num-threads 1 "$a")" >> "$scratch/b3"
    rm -rf "$scratch/st"
    rate "$(secs "$pp" dedup store "$a" -s "$scratch/st")" >> "$scratch/storeA"
    rate "$(secs "$pp" dedup store "$b" -s "$scratch/st")" >> "$scratch/storeB"
    "$pp" dedup stats -s "$scratch/st" | sed -n 's/^deduplication ratio: \([0-9.]*\).*/\1/p' >> "$scratch/ratio"
    [ "$r" -eq 0 ] && { "$pp" dedup restore "$b" -s "$scratch/st" -o "$scratch/B.back"; cmp "$b" "$scratch/B.back" || { echo "CHECK FAILED: restore" >&2; exit 1; }; }
done
[ "$(sort -u "$scratch/ratio" | wc -l)" -eq 1 ] || { echo "CHECK FAILED: the ratio differs between rounds" >&2; exit 1; }
median() { sort -g "$scratch/$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f", m}'; }
pct() { awk -v x="$(median "$1")" -v y="$(median b3)" 'BEGIN { printf "%.0f %%", 100 * x / y }'; }
{
echo "# Deduplication: peerpath dedup store beside b3sum, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r); $(b3sum --version)."
echo "Data: ${size_mib} MiB of random bytes and an edited copy, in $(dirname "$scratch"). Chunks 16/64/256 KiB (the default)."
echo "Command: \`bench/dedup.sh --rounds $rounds --size-mib $size_mib\`; median of $rounds rounds, one thread, measured on this host's CPU."
echo
echo "| row | GB/s (median) | vs b3sum |"
echo "|---|---|---|"
echo "| b3sum --num-threads 1 | $(median b3) | 100 % |"
echo "| peerpath dedup store A (new store: chunk, hash, write) | $(median storeA) | $(pct storeA) |"
echo "| peerpath dedup store B (edited copy: chunk, hash, few writes) | $(median storeB) | $(pct storeB) |"
echo
echo "Deduplication ratio after A and B (logical / unique chunk bytes): $(sort -u "$scratch/ratio") (the same in every round)."
} | tee ${out:+"$out"}
