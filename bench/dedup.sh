#!/usr/bin/env bash
# bench/dedup.sh - peerpath dedup store beside b3sum (issue 19).
#
# Usage: bench/dedup.sh [--rounds 5] [--size-mib 256] [--scratch DIR] [--base BIN] [--out FILE]
#
# Data: SIZE MiB of random bytes (A), an edited copy of it (B: a few bytes inserted in three
# places, 1 MiB cut from the end), SIZE MiB of zeros (Z) and SIZE MiB of base64 text (C). Each
# round, in order:
#   b3sum --num-threads 1 A     BLAKE3 alone, one thread (b3sum from crates.io, installed with
#                               `cargo install b3sum --locked` if missing)
#   for each thread count (-T 1, the default: all cores but one, and -T all cores):
#     peerpath dedup store A    into a new store: chunking (FastCDC) + BLAKE3 + writing A's
#                               chunks; the rate is A's size over the run's wall time
#     peerpath dedup store B    the same store: only B's new chunks are written
#     peerpath dedup store Z    the same store: a run of zeros (one chunk written)
#     peerpath dedup store --compress 1 C   into a new store, new chunks kept as gzip members
#   with --base BIN, the same four with that binary (e.g. an older build) at its default
# then prints medians and the deduplication ratio from `dedup stats`, checked to be the same for
# every thread count and every round (the CPU oracle is deterministic). Restoring B is checked
# against B in the first round, from every variant's store.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 size_mib=256 scratch="" out="" base=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --size-mib) size_mib=$2; shift 2 ;;
        --scratch) scratch=$2; shift 2 ;; --out) out=$2; shift 2 ;; --base) base=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli
pp=$PWD/target/release/peerpath
command -v b3sum >/dev/null || cargo install b3sum --locked -q
scratch=${scratch:-/dev/shm}/.bench-dedup.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
a=$scratch/A b=$scratch/B z=$scratch/Z
head -c $((size_mib << 20)) /dev/urandom > "$a"
head -c $((size_mib << 20)) /dev/zero > "$z"
base64 -w 76 "$a" > "$scratch/C" && truncate -s $((size_mib << 20)) "$scratch/C"
python3 - "$a" "$b" <<'PY'
import sys
d = bytearray(open(sys.argv[1], "rb").read())
for f in (0.25, 0.5, 0.75):
    at = int(len(d) * f)
    d[at:at] = b"an edit the chunker must absorb"
open(sys.argv[2], "wb").write(bytes(d[: len(d) - (1 << 20)]))
PY
n=$(nproc)
# Each variant: a name (the rows' label and the files' prefix) and its command.
variants=("T1|$pp dedup store -T 1" "default|$pp dedup store" "T$n|$pp dedup store -T $n")
[ -n "$base" ] && variants+=("base|$base dedup store")
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null; awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }'; }
rate() { awk -v s=$((size_mib << 20)) -v t="$1" 'BEGIN { printf "%.3f\n", s / t / 1e9 }'; }
for ((r = 0; r < rounds; r++)); do
    rate "$(secs b3sum --num-threads 1 "$a")" >> "$scratch/b3"
    for v in "${variants[@]}"; do
        name=${v%%|*} cmd=${v#*|}
        rm -rf "$scratch/st"
        for f in A B Z; do
            # shellcheck disable=SC2086 # the command is words
            rate "$(secs $cmd "$scratch/$f" -s "$scratch/st")" >> "$scratch/$name.$f"
        done
        "$pp" dedup stats -s "$scratch/st" | sed -n 's/^deduplication ratio: \([0-9.]*\).*/\1/p' >> "$scratch/ratio"
        if [ "$r" -eq 0 ]; then
            rm -f "$scratch/B.back"; "$pp" dedup restore "$b" -s "$scratch/st" -o "$scratch/B.back"
            cmp "$b" "$scratch/B.back" || { echo "CHECK FAILED: restore ($name)" >&2; exit 1; }
        fi
        rm -rf "$scratch/st"
        # shellcheck disable=SC2086 # the command is words
        rate "$(secs $cmd "$scratch/C" -s "$scratch/st" --compress 1)" >> "$scratch/$name.C"
        "$pp" dedup stats -s "$scratch/st" | sed -n 's/^compression ratio: \([0-9.]*\).*/\1/p' >> "$scratch/cratio"
    done
done
[ "$(sort -u "$scratch/ratio" | wc -l)" -eq 1 ] || { echo "CHECK FAILED: the ratio differs between thread counts or rounds" >&2; exit 1; }
[ "$(sort -u "$scratch/cratio" | wc -l)" -eq 1 ] || { echo "CHECK FAILED: the compression ratio differs between thread counts or rounds" >&2; exit 1; }
median() { sort -g "$scratch/$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f", m}'; }
pct() { awk -v x="$(median "$1")" -v y="$(median b3)" 'BEGIN { printf "%.0f %%", 100 * x / y }'; }
{
echo "# Deduplication: peerpath dedup store beside b3sum, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $n CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r); $(b3sum --version)."
echo "Data: ${size_mib} MiB of random bytes (A), an edited copy (B), zeros (Z) and base64 text (C), in $(dirname "$scratch"). Chunks 16/64/256 KiB (the default)."
echo "Command: \`bench/dedup.sh --rounds $rounds --size-mib $size_mib${base:+ --base BIN}\`; median of $rounds interleaved rounds, measured on this host's CPU."
echo
echo "| row | GB/s (median) | vs b3sum one thread |"
echo "|---|---|---|"
echo "| b3sum --num-threads 1 | $(median b3) | 100 % |"
for v in "${variants[@]}"; do
    name=${v%%|*} cmd=${v#*|}
    label="\`${cmd/#$pp/peerpath}\`"; [ "$name" = base ] && label="\`BIN dedup store\` (--base)"
    echo "| $label A (new store: chunk, hash, write) | $(median "$name.A") | $(pct "$name.A") |"
    echo "| $label B (edited copy: chunk, hash, few writes) | $(median "$name.B") | $(pct "$name.B") |"
    echo "| $label Z (zeros: one chunk written) | $(median "$name.Z") | $(pct "$name.Z") |"
    echo "| $label --compress 1 C (text, new store) | $(median "$name.C") | $(pct "$name.C") |"
done
echo
echo "Deduplication ratio after A, B and Z (logical / unique chunk bytes): $(sort -u "$scratch/ratio"); compression ratio of C: $(sort -u "$scratch/cratio") (each the same for every thread count and round)."
} | tee ${out:+"$out"}
