#!/usr/bin/env bash
# bench/crypt.sh - peerpath encrypt/decrypt beside the AES-256-GCM libraries' own speed (issue 19).
#
# Usage: bench/crypt.sh [--rounds 5] [--size-mib 512] [--scratch DIR] [--peerpath BIN] [--out FILE]
#
# Each round runs, in this order (so a slow stretch of a shared machine falls on all rows):
#   openssl       `openssl speed -evp aes-256-gcm -bytes 1048576 -seconds 1` (the system OpenSSL)
#   aws-lc        the aead_speed example: aws-lc's seal_in_place on a 1 MiB buffer, 1 thread
#   encrypt -T1   peerpath encrypt, file to file, one worker (JSON: its cipher stage and whole run)
#   decrypt -T1   peerpath decrypt of that file, one worker
#   encrypt -TN   peerpath encrypt on every core
#   cp            copying the file (the copy floor of a file-to-file job on that file system)
#   xts           `openssl speed -evp aes-256-xts`, then peerpath encrypt --mode xts (4 KiB
#                 sectors) -T1 and -TN, decrypt --mode xts -T1 (AES-256-XTS for images)
# and prints the median of each. "cipher stage" is plaintext bytes over the seconds the
# workers spent inside AES-GCM (reads and writes excluded): the figure to set beside the
# libraries' own benchmarks. Scratch (default /dev/shm, memory) is removed at the end;
# the decrypted file is compared with the source once.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 size_mib=512 scratch="" pp=target/release/peerpath out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --size-mib) size_mib=$2; shift 2 ;; --scratch) scratch=$2; shift 2 ;;
        --peerpath) pp=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli -p peerpath-func --example aead_speed
speed=target/release/examples/aead_speed
scratch=${scratch:-/dev/shm}/.bench-crypt.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
head -c $((size_mib << 20)) /dev/urandom > "$scratch/in"
"$pp" keygen -o "$scratch/key" 2>/dev/null
n=$(nproc)
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
for ((r = 0; r < rounds; r++)); do
    openssl speed -evp aes-256-gcm -bytes 1048576 -seconds 1 2>/dev/null | awk '/^AES-256-GCM/ {printf "%.3f\n", $2 / 1e6}' | sed 's/k//' >> "$scratch/openssl"
    "$speed" 1 | awk '{for (i = 1; i <= NF; i++) if ($i == "GB/s") print $(i - 1)}' >> "$scratch/awslc"
    rm -f "$scratch/in.ppenc" "$scratch/back"
    "$pp" encrypt "$scratch/in" --key-file "$scratch/key" -T 1 --json > "$scratch/e1.json"
    field cipher_gb_per_s_per_core < "$scratch/e1.json" >> "$scratch/e1.cipher"
    field plaintext_gb_per_s < "$scratch/e1.json" >> "$scratch/e1.whole"
    "$pp" decrypt "$scratch/in.ppenc" -o "$scratch/back" --key-file "$scratch/key" -T 1 --json > "$scratch/d1.json"
    field cipher_gb_per_s_per_core < "$scratch/d1.json" >> "$scratch/d1.cipher"
    field plaintext_gb_per_s < "$scratch/d1.json" >> "$scratch/d1.whole"
    [ "$r" -eq 0 ] && { cmp "$scratch/in" "$scratch/back" || { echo "CHECK FAILED: decrypted file differs" >&2; exit 1; }; }
    rm -f "$scratch/in.ppenc"
    "$pp" encrypt "$scratch/in" --key-file "$scratch/key" -T "$n" --json > "$scratch/en.json"
    field cipher_gb_per_s_per_core < "$scratch/en.json" >> "$scratch/en.cipher"
    field plaintext_gb_per_s < "$scratch/en.json" >> "$scratch/en.whole"
    openssl speed -evp aes-256-xts -bytes 1048576 -seconds 1 2>/dev/null | awk '/^AES-256-XTS/ {printf "%.3f\n", $2 / 1e6}' | sed 's/k//' >> "$scratch/openssl-xts"
    rm -f "$scratch/in.xts" "$scratch/back-xts"
    "$pp" encrypt "$scratch/in" --mode xts --key-file "$scratch/key" -T 1 --json > "$scratch/x1.json"
    field cipher_gb_per_s_per_core < "$scratch/x1.json" >> "$scratch/x1.cipher"
    "$pp" decrypt "$scratch/in.xts" --mode xts -o "$scratch/back-xts" --key-file "$scratch/key" -T 1 --json > "$scratch/xd1.json"
    field cipher_gb_per_s_per_core < "$scratch/xd1.json" >> "$scratch/xd1.cipher"
    [ "$r" -eq 0 ] && { cmp "$scratch/in" "$scratch/back-xts" || { echo "CHECK FAILED: XTS round trip differs" >&2; exit 1; }; }
    rm -f "$scratch/in.xts" "$scratch/back-xts"
    "$pp" encrypt "$scratch/in" --mode xts --key-file "$scratch/key" -T "$n" --json > "$scratch/xn.json"
    field plaintext_gb_per_s < "$scratch/xn.json" >> "$scratch/xn.whole"
    rm -f "$scratch/in.xts" "$scratch/copy"
    t0=$EPOCHREALTIME; cp "$scratch/in" "$scratch/copy"; t1=$EPOCHREALTIME
    awk -v a="$t1" -v b="$t0" -v s=$((size_mib << 20)) 'BEGIN { printf "%.3f\n", s / (a - b) / 1e9 }' >> "$scratch/cp"
done
median() { sort -g "$scratch/$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f", m}'; }
aws=$(median awslc)
pct() { awk -v x="$1" -v y="$aws" 'BEGIN { printf "%.0f %%", 100 * x / y }'; }
{
echo "# AES-256-GCM: peerpath beside the libraries, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r);"
echo "$(openssl version); aws-lc through aws-lc-rs (Cargo.lock). Data: ${size_mib} MiB of random bytes in $(dirname "$scratch")."
echo "Command: \`bench/crypt.sh --rounds $rounds --size-mib $size_mib\`; median of $rounds rounds, measured on this host's CPU."
echo
echo "| row | GB/s (median) | vs aws-lc's own speed |"
echo "|---|---|---|"
echo "| openssl speed, AES-256-GCM, 1 MiB, 1 thread | $(median openssl) | $(pct "$(median openssl)") |"
echo "| aws-lc seal_in_place, 1 MiB, 1 thread (aead_speed) | $aws | 100 % |"
echo "| peerpath encrypt -T 1: cipher stage, per core | $(median e1.cipher) | $(pct "$(median e1.cipher)") |"
echo "| peerpath decrypt -T 1: cipher stage, per core | $(median d1.cipher) | $(pct "$(median d1.cipher)") |"
echo "| peerpath encrypt -T $n: cipher stage, per core | $(median en.cipher) | $(pct "$(median en.cipher)") |"
echo "| peerpath encrypt -T 1: file to file, whole run | $(median e1.whole) | |"
echo "| peerpath decrypt -T 1: file to file, whole run | $(median d1.whole) | |"
echo "| peerpath encrypt -T $n: file to file, whole run | $(median en.whole) | |"
echo "| cp of the same file (copy floor) | $(median cp) | |"
echo
echo "AES-256-XTS (4 KiB sectors), beside OpenSSL's own speed for it:"
echo
echo "| row | GB/s (median) | vs openssl speed |"
echo "|---|---|---|"
ox=$(median openssl-xts)
px() { awk -v x="$1" -v y="$ox" 'BEGIN { printf "%.0f %%", 100 * x / y }'; }
echo "| openssl speed, AES-256-XTS, 1 MiB, 1 thread | $ox | 100 % |"
echo "| peerpath encrypt --mode xts -T 1: cipher stage, per core | $(median x1.cipher) | $(px "$(median x1.cipher)") |"
echo "| peerpath decrypt --mode xts -T 1: cipher stage, per core | $(median xd1.cipher) | $(px "$(median xd1.cipher)") |"
echo "| peerpath encrypt --mode xts -T $n: file to file, whole run | $(median xn.whole) | |"
} | tee ${out:+"$out"}
