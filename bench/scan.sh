#!/usr/bin/env bash
# bench/scan.sh - peerpath scan beside seqkit and grep on the same files (issue 19).
#
# Usage: bench/scan.sh [--rounds 5] [--motif 'KL[VI]{2}'] [--fasta FILE] [--lines FILE] [--out FILE]
#
# Defaults: the corpus (scripts/fetch-corpus.sh): data/corpus/metastudent_MFO_goasp.fasta and its
# one-sequence-per-line twin metastudent_MFO_seqonly.txt, plus a gzip copy of the FASTA made by
# peerpath compress. Each round, in order (every row counts matching records; the counts must agree):
#   seqkit grep -s -r -P -p MOTIF -j N FASTA | grep -c '^>'
#   peerpath scan FASTA --motif MOTIF -c, with -T 1 and -T N
#   peerpath scan FASTA.gz --motif MOTIF -c -T N
#   grep -c -E MOTIF LINES;  peerpath scan LINES --motif MOTIF -c -T N
# Prints the median seconds and MB/s (input bytes) of each; files are read from the page cache.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 motif='KL[VI]{2}' fasta=data/corpus/metastudent_MFO_goasp.fasta lines=data/corpus/metastudent_MFO_seqonly.txt out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --motif) motif=$2; shift 2 ;; --fasta) fasta=$2; shift 2 ;;
        --lines) lines=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli
pp=target/release/peerpath n=$(nproc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$pp" compress "$fasta" -o "$tmp/in.fa.gz" -q
rows=("seqkit grep -s -r -P -j $n" "peerpath scan -T 1" "peerpath scan -T $n" "peerpath scan -T $n, gzip input" "grep -c -E (lines)" "peerpath scan -T $n (lines)")
run_row() {
    case $1 in
        0) seqkit grep -s -r -P -p "$motif" -j "$n" "$fasta" | grep -c '^>' ;;
        1) "$pp" scan "$fasta" --motif "$motif" -c -q -T 1 ;;
        2) "$pp" scan "$fasta" --motif "$motif" -c -q -T "$n" ;;
        3) "$pp" scan "$tmp/in.fa.gz" --motif "$motif" -c -q -T "$n" ;;
        4) grep -c -E "$motif" "$lines" ;;
        5) "$pp" scan "$lines" --motif "$motif" -c -q -T "$n" ;;
    esac
}
for ((r = 0; r < rounds; r++)); do
    for i in "${!rows[@]}"; do
        t0=$EPOCHREALTIME; c=$(run_row "$i"); t1=$EPOCHREALTIME
        echo "$c" >> "$tmp/count.$((i < 4 ? 0 : 1))"
        awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }' >> "$tmp/t.$i"
    done
done
for k in 0 1; do [ "$(sort -u "$tmp/count.$k" | wc -l)" -eq 1 ] || { echo "CHECK FAILED: counts differ: $(sort -u "$tmp/count.$k" | tr '\n' ' ')" >&2; exit 1; }; done
median() { sort -g "$tmp/t.$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f", m}'; }
{
echo "# peerpath scan beside seqkit and grep, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $n CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); $(seqkit version), $(grep --version | head -1)."
echo "Files: $fasta ($(stat -c %s "$fasta") bytes), $lines ($(stat -c %s "$lines") bytes); motif \`$motif\`; matching records: $(head -1 "$tmp/count.0") (FASTA), $(head -1 "$tmp/count.1") (lines), the same in every row and round."
echo "Command: \`bench/scan.sh --rounds $rounds\`; median of $rounds rounds, measured on this host's CPU."
echo
echo "| row | seconds | MB/s of input |"
echo "|---|---|---|"
for i in "${!rows[@]}"; do
    f=$fasta; [ "$i" -ge 4 ] && f=$lines
    echo "| ${rows[$i]} | $(median "$i") | $(awk -v s="$(stat -c %s "$f")" -v t="$(median "$i")" 'BEGIN { printf "%.0f", s / t / 1e6 }') |"
done
} | tee ${out:+"$out"}
