#!/usr/bin/env bash
# bench/ec.sh - peerpath ec encode/repair beside ISA-L's own erasure_code_perf (issue 19).
#
# Usage: bench/ec.sh [--k 4] [--m 2] [--unit-kib 1024] [--rounds 5] [--size-mib 512]
#                    [--scratch DIR] [--out FILE]
#
# Builds erasure_code_perf from the ISA-L source peerpath links (vendor/isal-sys, else
# isal-sys in cargo's registry) with fragments of UNIT bytes (TEST_CUSTOM), against the libisal.a of the
# release build. Each round runs, in order: erasure_code_perf -k K -p M -e M (encode and
# decode of M lost fragments, 1 thread, cache-warm buffers), peerpath ec encode of a
# SIZE file with --unit UNIT (coded in slices that fit in cache; ISA-L is run with that
# fragment size too), and peerpath ec repair of M lost shards (one data, the rest
# parity). peerpath's "coding" figures are bytes over the seconds inside ec_encode_data,
# counted as erasure_code_perf counts them ((k + m) units per encoded stripe, (k + lost)
# per rebuilt one); "whole run" is the command's wall time over the source size.
# Scratch (default /dev/shm) is removed at the end; repaired shards are checked once.
set -euo pipefail
cd "$(dirname "$0")/.."
k=4 m=2 unit_kib=1024 rounds=5 size_mib=512 scratch="" out=""
while [ $# -gt 0 ]; do
    case $1 in
        --k) k=$2; shift 2 ;; --m) m=$2; shift 2 ;; --unit-kib) unit_kib=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;; --size-mib) size_mib=$2; shift 2 ;;
        --scratch) scratch=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli
pp=target/release/peerpath
# The ISA-L source peerpath builds: vendored (vendor/isal-sys, patched), else the registry's
# (in that order: `ls` would sort the registry's /root/... path first).
isal=$(for d in vendor/isal-sys/isa-l "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/isal-sys-*/isa-l; do [ -d "$d" ] && echo "$d" && break; done || true)
lib=$(ls target/release/build/isal-sys-*/out/lib/libisal.a | head -1)
scratch=${scratch:-/dev/shm}/.bench-ec.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
unit=$((unit_kib << 10))
# peerpath codes each stripe in slices of all its units that fit in 512 KiB
# (ec.rs, encode_slice_bytes); ISA-L is also measured with fragments of that size.
slice=$(( (512 * 1024 / (k + m)) / 4096 * 4096 )); [ "$slice" -lt 4096 ] && slice=4096; [ "$slice" -gt "$unit" ] && slice=$unit
for frag in "$unit" "$slice"; do
    gcc -O2 -DTEST_CUSTOM -DTEST_SOURCES=32 "-DTEST_LEN(m)=($frag)" -I"$isal/include" \
        "$isal/erasure_code/erasure_code_perf.c" "$lib" -o "$scratch/erasure_code_perf.$frag"
done
head -c $((size_mib << 20)) /dev/urandom > "$scratch/in"
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
mbs() { awk '{for (i = 1; i <= NF; i++) if ($i == "MB/s") printf "%.3f\n", $(i - 1) / 1000}'; }
for ((r = 0; r < rounds; r++)); do
    "$scratch/erasure_code_perf.$unit" -k "$k" -p "$m" -e "$m" > "$scratch/isal.txt"
    grep '^erasure_code_encode' "$scratch/isal.txt" | mbs >> "$scratch/isal.enc"
    grep '^erasure_code_decode' "$scratch/isal.txt" | mbs >> "$scratch/isal.dec"
    "$scratch/erasure_code_perf.$slice" -k "$k" -p "$m" -e "$m" > "$scratch/isal-slice.txt"
    grep '^erasure_code_encode' "$scratch/isal-slice.txt" | mbs >> "$scratch/isal.enc.slice"
    grep '^erasure_code_decode' "$scratch/isal-slice.txt" | mbs >> "$scratch/isal.dec.slice"
    rm -rf "$scratch/set"
    "$pp" ec encode "$scratch/in" -k "$k" -m "$m" --unit "$unit" -T 1 -o "$scratch/set" --json > "$scratch/e.json"
    field coding_gb_per_s < "$scratch/e.json" >> "$scratch/pp.enc"
    awk -v s=$((size_mib << 20)) -v t="$(field seconds < "$scratch/e.json")" 'BEGIN { printf "%.3f\n", s / t / 1e9 }' >> "$scratch/pp.enc.whole"
    [ "$r" -eq 0 ] && cp "$scratch/set/shard-000" "$scratch/orig-000"
    rm "$scratch/set/shard-000"
    for ((p = k + 1; p < k + m; p++)); do rm "$scratch/set/shard-$(printf %03d $p)"; done
    "$pp" ec repair "$scratch/set" -T 1 --json > "$scratch/r.json"
    field coding_gb_per_s < "$scratch/r.json" >> "$scratch/pp.rep"
    awk -v s=$((size_mib << 20)) -v t="$(field seconds < "$scratch/r.json")" 'BEGIN { printf "%.3f\n", s / t / 1e9 }' >> "$scratch/pp.rep.whole"
    [ "$r" -eq 0 ] && { cmp "$scratch/orig-000" "$scratch/set/shard-000" || { echo "CHECK FAILED: repaired shard differs" >&2; exit 1; }; }
done
median() { sort -g "$scratch/$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f", m}'; }
pct() { awk -v x="$(median "$1")" -v y="$(median "$2")" 'BEGIN { printf "%.0f %%", 100 * x / y }'; }
{
echo "# Erasure coding RS($k, $m), ${unit_kib} KiB units: peerpath beside ISA-L's erasure_code_perf, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r)."
echo "ISA-L: $isal (the source of the library peerpath links). Data: ${size_mib} MiB of random bytes in $(dirname "$scratch")."
echo "Command: \`bench/ec.sh --k $k --m $m --unit-kib $unit_kib --rounds $rounds --size-mib $size_mib\`; median of $rounds rounds, one thread, measured on this host's CPU."
echo
echo "| row | GB/s (median; ISA-L's byte count) | peerpath / ISA-L |"
echo "|---|---|---|"
echo "| erasure_code_perf encode, ${unit_kib} KiB fragments | $(median isal.enc) | |"
echo "| erasure_code_perf encode, $((slice >> 10)) KiB fragments (peerpath's slice) | $(median isal.enc.slice) | |"
echo "| peerpath ec encode: coding (in $((slice >> 10)) KiB slices of ${unit_kib} KiB units) | $(median pp.enc) | $(pct pp.enc isal.enc) of the first, $(pct pp.enc isal.enc.slice) of the second |"
echo "| erasure_code_perf decode ($m lost), ${unit_kib} KiB fragments | $(median isal.dec) | |"
echo "| erasure_code_perf decode ($m lost), $((slice >> 10)) KiB fragments (peerpath's slice) | $(median isal.dec.slice) | |"
echo "| peerpath ec repair ($m lost): coding (in $((slice >> 10)) KiB slices of ${unit_kib} KiB units) | $(median pp.rep) | $(pct pp.rep isal.dec) of the first, $(pct pp.rep isal.dec.slice) of the second |"
echo "| peerpath ec encode: whole run (source bytes / wall) | $(median pp.enc.whole) | |"
echo "| peerpath ec repair: whole run (source bytes / wall) | $(median pp.rep.whole) | |"
} | tee ${out:+"$out"}
