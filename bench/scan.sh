#!/usr/bin/env bash
# bench/scan.sh - peerpath scan beside seqkit and grep on the same files (issue 19).
#
# Usage: bench/scan.sh [--rounds 5] [--motif 'KL[VI]{2}'] [--fasta FILE] [--lines FILE] [--out FILE]
#
# Defaults: the corpus (scripts/fetch-corpus.sh): data/corpus/metastudent_MFO_goasp.fasta and its
# one-sequence-per-line twin metastudent_MFO_seqonly.txt, plus a gzip copy of the FASTA made by
# peerpath compress and a FASTQ made from the FASTA (each sequence line a read, quality 'I').
# Each round, in order; the rows of a group count the same records (the counts must agree):
#   motif:  seqkit grep -s -r -P -p MOTIF -j N FASTA | grep -c '^>'; peerpath scan FASTA --motif
#           MOTIF -c with -T 1, -T N, on gzip input, and --engine emulated (one emulated CSP)
#   length: seqkit seq -m 500 -j N FASTA | grep -c '^>';  peerpath scan FASTA --min-length 500 -c
#   id:     seqkit grep -r -p ^P0A -j N FASTA | grep -c '^>';  peerpath scan FASTA --id-prefix P0A -c
#   FASTQ:  seqkit grep -s -r -P -p MOTIF -j N FASTQ (records);  peerpath scan FASTQ --motif MOTIF -c
#   lines:  grep -c -E MOTIF LINES;  peerpath scan LINES --motif MOTIF -c -T N
# Prints the median seconds and MB/s (input bytes) of each; files are read from the page cache
# (the emulated CSP reads with O_DIRECT where the file system takes it).
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
awk '/^>/ { next } { print "@r" NR; print; print "+"; gsub(/./, "I"); print }' "$fasta" > "$tmp/in.fq"
# label | group | input
rows=("seqkit grep -s -r -P -j $n|motif|$fasta" "peerpath scan -T 1|motif|$fasta" "peerpath scan -T $n|motif|$fasta"
      "peerpath scan -T $n, gzip input|motif|$fasta" "peerpath scan --engine emulated|motif|$fasta"
      "seqkit seq -m 500 -j $n|length|$fasta" "peerpath scan --min-length 500 -T $n|length|$fasta"
      "seqkit grep -r -p ^P0A -j $n|id|$fasta" "peerpath scan --id-prefix P0A -T $n|id|$fasta"
      "seqkit grep -s -r -P -j $n (FASTQ)|fastq|$tmp/in.fq" "peerpath scan -T $n (FASTQ)|fastq|$tmp/in.fq"
      "grep -c -E (lines)|lines|$lines" "peerpath scan -T $n (lines)|lines|$lines")
field() { echo "${rows[$1]}" | cut -d'|' -f"$2"; }
run_row() {
    case $1 in
        0) seqkit grep -s -r -P -p "$motif" -j "$n" "$fasta" | grep -c '^>' ;;
        1) "$pp" scan "$fasta" --motif "$motif" -c -q -T 1 ;;
        2) "$pp" scan "$fasta" --motif "$motif" -c -q -T "$n" ;;
        3) "$pp" scan "$tmp/in.fa.gz" --motif "$motif" -c -q -T "$n" ;;
        4) "$pp" scan "$fasta" --motif "$motif" -c -q --engine emulated --no-fallback ;;
        5) seqkit seq -m 500 -j "$n" "$fasta" | grep -c '^>' ;;
        6) "$pp" scan "$fasta" --min-length 500 -c -q -T "$n" ;;
        7) seqkit grep -r -p '^P0A' -j "$n" "$fasta" | grep -c '^>' ;;
        8) "$pp" scan "$fasta" --id-prefix P0A -c -q -T "$n" ;;
        9) seqkit grep -s -r -P -p "$motif" -j "$n" "$tmp/in.fq" | awk 'END { print NR / 4 }' ;;
        10) "$pp" scan "$tmp/in.fq" --motif "$motif" -c -q -T "$n" ;;
        11) grep -c -E "$motif" "$lines" ;;
        12) "$pp" scan "$lines" --motif "$motif" -c -q -T "$n" ;;
    esac
}
for ((r = 0; r < rounds; r++)); do
    for i in "${!rows[@]}"; do
        t0=$EPOCHREALTIME; c=$(run_row "$i"); t1=$EPOCHREALTIME
        echo "$c" >> "$tmp/count.$(field "$i" 2)"
        awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }' >> "$tmp/t.$i"
    done
done
groups="motif length id fastq lines"
for g in $groups; do [ "$(sort -u "$tmp/count.$g" | wc -l)" -eq 1 ] || { echo "CHECK FAILED: $g counts differ: $(sort -u "$tmp/count.$g" | tr '\n' ' ')" >&2; exit 1; }; done
median() { sort -g "$tmp/t.$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f", m}'; }
{
echo "# peerpath scan beside seqkit and grep, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $n CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); $(seqkit version), $(grep --version | head -1)."
echo "Files: $fasta ($(stat -c %s "$fasta") bytes), $lines ($(stat -c %s "$lines") bytes), a FASTQ of the FASTA's lines ($(stat -c %s "$tmp/in.fq") bytes); motif \`$motif\`."
echo "Matching records, the same in every row of a group and every round: $(for g in $groups; do printf '%s %s; ' "$g" "$(head -1 "$tmp/count.$g")"; done)"
echo "Command: \`bench/scan.sh --rounds $rounds\`; median of $rounds rounds, measured on this host's CPU (the emulated row: measured on emulated devices, one CSP process)."
echo
echo "| row | group | seconds | MB/s of input (the gzip row: of the FASTA it decodes to) |"
echo "|---|---|---|---|"
for i in "${!rows[@]}"; do
    f=$(field "$i" 3)
    echo "| $(field "$i" 1) | $(field "$i" 2) | $(median "$i") | $(awk -v s="$(stat -c %s "$f")" -v t="$(median "$i")" 'BEGIN { printf "%.0f", s / t / 1e6 }') |"
done
} | tee ${out:+"$out"}
