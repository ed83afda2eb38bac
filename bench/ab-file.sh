#!/usr/bin/env bash
# bench/ab-file.sh - two peerpath builds side by side, file to file on disk, interleaved.
#
# Usage: bench/ab-file.sh --a NAME=BINARY --b NAME=BINARY --input FILE [--runs 7]
#        [--threads N] [--scratch DIR]
#
# Jobs (each run alternates A and B; outputs durable, as the default is):
#   cpu          compress on the host CPU, file to file
#   emulated-1   compress on 1 emulated CSP (SSD -> device memory -> device -> SSD)
#   emulated-2   compress two copies of the input on 2 emulated CSPs at once
#   decompress   decompress A's output, file to file
# Prints the median and min seconds of each and the B/A ratio of medians. The scratch
# directory (default: next to the input, so on its file system, which must take
# O_DIRECT for the emulated rows to run on devices) is removed at the end. Every
# output is checked once (round trip), untimed.
set -euo pipefail
runs=7 threads=$(nproc) scratch="" a="" b="" input=""
while [ $# -gt 0 ]; do
    case $1 in
        --a) a=$2; shift 2 ;; --b) b=$2; shift 2 ;; --input) input=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;; --runs) runs=$2; shift 2 ;; --scratch) scratch=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$a" ] && [ -n "$b" ] && [ -f "$input" ] || { echo "need --a, --b and --input" >&2; exit 2; }
an=${a%%=*} ab=${a#*=} bn=${b%%=*} bb=${b#*=}
scratch=${scratch:-$(dirname "$input")/.ab-file.$$}
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
cp "$input" "$scratch/in2"
size=$(stat -c %s "$input")
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>"$scratch/err" || { echo "FAILED: $*" >&2; cat "$scratch/err" >&2; return 1; }; awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }'; }
median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.4f %.4f\n", m, v[1]}'; }
"$ab" compress --level 1 -q -f "$input" -o "$scratch/ref.gz"
echo "# $(date -u +%F) $(uname -n), $(nproc) CPUs; input $input ($size bytes); $runs runs each, interleaved"
echo "# command: $0 --a $a --b $b --input $input --runs $runs --threads $threads"
printf '| job | %s median (min) s | %s median (min) s | %s/%s |\n|---|---|---|---|\n' "$an" "$bn" "$bn" "$an"
for job in cpu emulated-1 emulated-2 decompress; do
    : > "$scratch/a.t"; : > "$scratch/b.t"
    for ((r = 0; r < runs; r++)); do
        for side in a b; do
            if [ $side = a ]; then bin=$ab; else bin=$bb; fi
            rm -rf "$scratch/out.$side" "$scratch/o12.$side"; mkdir "$scratch/o12.$side"
            case $job in
                cpu) s=$(secs "$bin" compress --level 1 -q -f -T "$threads" "$input" -o "$scratch/out.$side") ;;
                emulated-1) s=$(secs "$bin" compress --level 1 -q -f --engine emulated --devices 1 --device-workers "$threads" --no-fallback "$input" -o "$scratch/out.$side") ;;
                emulated-2) s=$(secs "$bin" compress --level 1 -q -f --engine emulated --devices 2 --device-workers "$(( (threads + 1) / 2 ))" --no-fallback "$input" "$scratch/in2" -o "$scratch/o12.$side" ) ;;
                decompress) s=$(secs "$bin" decompress -q -f -T "$threads" "$scratch/ref.gz" -o "$scratch/out.$side") ;;
            esac
            echo "$s" >> "$scratch/$side.t"
        done
    done
    for side in a b; do
        case $job in
            cpu|emulated-1) "$ab" decompress -q -o - "$scratch/out.$side" | cmp - "$input" || echo "CHECK FAILED: $side $job" >&2 ;;
            decompress) cmp "$scratch/out.$side" "$input" || echo "CHECK FAILED: $side $job" >&2 ;;
        esac
    done
    read -r am amin < <(median < "$scratch/a.t")
    read -r bm bmin < <(median < "$scratch/b.t")
    printf '| %s | %s (%s) | %s (%s) | %.3f |\n' "$job" "$am" "$amin" "$bm" "$bmin" "$(awk -v a="$am" -v b="$bm" 'BEGIN { print b / a }')"
done
