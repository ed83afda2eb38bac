#!/usr/bin/env bash
# bench/ab-threads.sh - two peerpath builds side by side on one in-memory input, interleaved.
#
# Usage: bench/ab-threads.sh --a NAME=BINARY --b NAME=BINARY --input FILE [--threads "8 16"]
#        [--runs 5] [--scratch DIR] [--extra-a "ARGS"] [--extra-b "ARGS"]
#
# For each thread count: compress (level 1, --no-sync) the input to a tmpfs file and to
# /dev/null (-o -), then decompress the first build's output to a tmpfs file and to
# /dev/null, alternating A and B run by run; prints the median and min seconds of each
# and the B/A ratio of medians. Every output is checked (round trip) once, untimed.
set -euo pipefail
runs=5 threads="8 16" scratch=/dev/shm/ppab a="" b="" input="" extra_a="" extra_b=""
while [ $# -gt 0 ]; do
    case $1 in
        --a) a=$2; shift 2 ;; --b) b=$2; shift 2 ;; --input) input=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;; --runs) runs=$2; shift 2 ;; --scratch) scratch=$2; shift 2 ;;
        --extra-a) extra_a=$2; shift 2 ;; --extra-b) extra_b=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$a" ] && [ -n "$b" ] && [ -f "$input" ] || { echo "need --a, --b and --input" >&2; exit 2; }
an=${a%%=*} ab=${a#*=} bn=${b%%=*} bb=${b#*=}
mkdir -p "$scratch"
size=$(stat -c %s "$input")
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>&1 || { echo "FAILED: $*" >&2; return 1; }; awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.6f\n", a - b }'; }
median() { sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.4f %.4f\n", m, v[1]}'; }
"$ab" compress --level 1 --no-sync -q -f "$input" -o "$scratch/ref.gz"
printf '| threads | job | %s median (min) s | %s median (min) s | %s/%s | %s GB/s |\n|---|---|---|---|---|---|\n' "$an" "$bn" "$bn" "$an" "$bn"
for t in $threads; do
    for job in compress-tmpfs compress-null decompress-tmpfs decompress-null; do
        : > "$scratch/a.t"; : > "$scratch/b.t"
        for ((r = 0; r < runs; r++)); do
            for side in a b; do
                if [ $side = a ]; then bin=$ab extra=$extra_a; else bin=$bb extra=$extra_b; fi
                rm -f "$scratch/out.$side"
                # shellcheck disable=SC2086
                case $job in
                    compress-tmpfs) s=$(secs "$bin" compress --level 1 --no-sync -q -f -T "$t" $extra "$input" -o "$scratch/out.$side") ;;
                    compress-null) s=$(secs "$bin" compress --level 1 -q -T "$t" $extra "$input" -o -) ;;
                    decompress-tmpfs) s=$(secs "$bin" decompress --no-sync -q -f -T "$t" $extra "$scratch/ref.gz" -o "$scratch/out.$side") ;;
                    decompress-null) s=$(secs "$bin" decompress -q -T "$t" $extra "$scratch/ref.gz" -o -) ;;
                esac
                echo "$s" >> "$scratch/$side.t"
            done
        done
        case $job in
            compress-tmpfs) for side in a b; do "$ab" decompress -q -o - "$scratch/out.$side" | cmp - "$input" || echo "CHECK FAILED: $side $job" >&2; done ;;
            decompress-tmpfs) for side in a b; do cmp "$scratch/out.$side" "$input" || echo "CHECK FAILED: $side $job" >&2; done ;;
        esac
        read -r am amin < <(median < "$scratch/a.t")
        read -r bm bmin < <(median < "$scratch/b.t")
        printf '| %s | %s | %s (%s) | %s (%s) | %.3f | %.2f |\n' "$t" "$job" "$am" "$amin" "$bm" "$bmin" "$(awk -v a="$am" -v b="$bm" 'BEGIN { print b / a }')" "$(awk -v s="$size" -v b="$bm" 'BEGIN { print s / b / 1e9 }')"
    done
done
rm -rf "$scratch"
