#!/usr/bin/env bash
# bench/dedup-real.sh - peerpath dedup on real data with duplication (issue 19): the corpus's
# protein FASTA (A) and an edited copy of it (B: every 5000th record deleted, every 7001st
# repeated, one residue changed in every 3001st), both stored into one store.
#
# Usage: bench/dedup-real.sh [--rounds 3] [--fasta FILE] [--scratch DIR] [--out FILE]
#
# Each round stores A then B into a new store, on the host CPU with -T 1 and -T N (all cores) and
# on an emulated CSP (one process; measured on emulated devices), and on a GPU where
# `--engine gpu` finds one (said otherwise). It prints the median seconds of each store, the
# dedup ratio and stored bytes from `dedup stats`, which must be the same for every engine and
# round (the CPU is the oracle), and checks that B restores exactly from every store. Files in
# DIR (default /dev/shm).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 fasta=data/corpus/metastudent_MFO_goasp.fasta scratch="" out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --fasta) fasta=$2; shift 2 ;;
        --scratch) scratch=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -f "$fasta" ] || { echo "no $fasta: run scripts/fetch-corpus.sh" >&2; exit 2; }
cargo build --release --locked -q -p peerpath-cli
pp=$PWD/target/release/peerpath n=$(nproc)
scratch=${scratch:-/dev/shm}/.bench-dedup-real.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
a=$scratch/A b=$scratch/B
cp "$fasta" "$a"
python3 - "$a" "$b" <<'PY'
import sys
records = open(sys.argv[1], "rb").read().split(b"\n>")
out = []
for i, r in enumerate(records):
    if i % 5000 == 4999:
        continue
    if i % 3001 == 3000:
        head, _, seq = r.partition(b"\n")
        j = len(seq) // 2
        if j > 0 and seq[j] not in b"\n":
            seq = seq[:j] + (b"W" if seq[j:j + 1] != b"W" else b"C") + seq[j + 1:]
        r = head + b"\n" + seq
    out.append(r)
    if i % 7001 == 7000:
        out.append(r)
open(sys.argv[2], "wb").write(b"\n>".join(out))
PY
engines=("cpu -T 1" "cpu -T $n" "emulated")
if "$pp" dedup store "$a" -s "$scratch/probe" --engine gpu --no-fallback -q > /dev/null 2>&1; then engines+=("gpu"); else echo "dedup-real: no GPU here (--engine gpu refused): its row is left out" >&2; fi
rm -rf "$scratch/probe"
for ((r = 0; r < rounds; r++)); do
    for i in "${!engines[@]}"; do
        e=${engines[$i]} st=$scratch/store
        rm -rf "$st"
        # shellcheck disable=SC2086
        set -- ${e#cpu }
        [ "${e%% *}" = cpu ] && args=(--engine cpu "$@") || args=(--engine "$e" --no-fallback)
        t0=$EPOCHREALTIME
        "$pp" dedup store "$a" "$b" -s "$st" "${args[@]}" > /dev/null
        t1=$EPOCHREALTIME
        awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }' >> "$scratch/t.$i"
        "$pp" dedup stats -s "$st" | grep -E "ratio|stored|unique" | sed "s#$st#STORE#g" > "$scratch/stats.$i.$r"
        if [ "$r" = 0 ]; then
            "$pp" dedup restore "$b" -s "$st" -o "$scratch/B.back" -f
            cmp -s "$scratch/B.back" "$b" || { echo "CHECK FAILED: B restored from the $e store differs" >&2; exit 1; }
            rm -f "$scratch/B.back"
        fi
    done
done
[ "$(cat "$scratch"/stats.* | sort | uniq -c | awk '{print $1}' | sort -u | wc -l)" = 1 ] || { echo "CHECK FAILED: the stores differ:" >&2; head -50 "$scratch"/stats.* >&2; exit 1; }
median() { sort -g "$scratch/t.$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f", m}'; }
bytes=$(( $(stat -c %s "$a") + $(stat -c %s "$b") ))
{
echo "# peerpath dedup on real data with duplication, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $n CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))."
echo "Data: A = $fasta ($(stat -c %s "$a") bytes), B = an edited copy ($(stat -c %s "$b") bytes: every 5000th record deleted, every 7001st repeated, a residue changed in every 3001st); both into one store, default chunk sizes."
echo "Command: \`bench/dedup-real.sh --rounds $rounds\`; median of $rounds rounds; the CPU rows measured on this host's CPU, the emulated row on emulated devices$( [ "${#engines[@]}" = 4 ] && echo ", the gpu row on a real accelerator (GPU)")."
echo "Every store in every round has the same dedup stats (checked), and B restored exactly from each:"
echo
sed 's/^/    /' "$scratch/stats.0.0"
echo
echo "| engine | seconds (A then B) | MB/s of A and B |"
echo "|---|---|---|"
for i in "${!engines[@]}"; do
    echo "| ${engines[$i]} | $(median "$i") | $(awk -v s="$bytes" -v t="$(median "$i")" 'BEGIN { printf "%.0f", s / t / 1e6 }') |"
done
} | tee ${out:+"$out"}
