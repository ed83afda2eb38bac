#!/usr/bin/env bash
# bench/gpu-machine-scaling.sh - the one-shot thread-scaling run on the lent 16-core machine.
#
# Usage (from anywhere; runs in the repository root): bench/gpu-machine-scaling.sh
#
# Needs the carried, git-ignored folder .gpu/ (listed in .git/info/exclude):
#   .gpu/peerpath          stripped release binary (built elsewhere: the machine has no Rust)
#   .gpu/slice.fa.xz       first 48 MiB of data/corpus/metastudent_MFO_goasp.fasta, cut at a
#                          newline, xz -9; .gpu/slice.fa.sha256 holds its SHA-256
#   .gpu/*.deb             Debian 12 pigz, zlib1g, isal, libisal2 (apt-get download ...): the
#                          machine has neither pigz nor igzip, and pigz needs Debian's own zlib
#
# Runs bench/scaling.sh on a 384 MiB input (the slice x 8) built on /dev/shm, thread counts
# 1 2 4 8 ... nproc, 3 runs per cell, plus the disk rows in /var/tmp/ppdisk (root file
# system); results go to $OUT (or ./scaling-out when OUT is unset), with the log in
# $OUT/scaling.log; the markdown report is printed at the end. About 2 minutes on 16 cores;
# after 170 s of measuring, the remaining cells get 1 run each (--deadline).
set -euo pipefail

cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
fail() {
    printf '\n[gpu-machine-scaling] ERROR: %s\n\n' "$*" >&2
    exit 2
}
case ${1:-} in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac

[ -e .gpu/peerpath ] || fail ".gpu/peerpath is missing: copy a stripped release build there (strip -o .gpu/peerpath target/release/peerpath)"
[ -x .gpu/peerpath ] || chmod +x .gpu/peerpath 2>/dev/null || fail ".gpu/peerpath is not executable"
ver=$(.gpu/peerpath --version 2>&1) || fail ".gpu/peerpath does not run here: $ver"
[ -f .gpu/slice.fa.xz ] || fail ".gpu/slice.fa.xz is missing"
compgen -G '.gpu/*.deb' >/dev/null || fail ".gpu/ holds no .deb files (pigz, zlib1g, isal, libisal2)"

OUT=${OUT:-$PWD/scaling-out}
mkdir -p -- "$OUT"
echo "[gpu-machine-scaling] $ver; results -> $OUT; $(nproc) CPUs; $(uname -r)" >&2

# PP_SCALING_DISK=DIR (default /var/tmp/ppdisk; empty: no disk rows), PP_SCALING_QUICK=1 (1 run
# for the slow single-thread peers), PP_SCALING_DEADLINE=S (default 170): for shorter runs.
extra=()
[ -n "${PP_SCALING_DISK-/var/tmp/ppdisk}" ] && extra+=(--disk "${PP_SCALING_DISK-/var/tmp/ppdisk}")
[ "${PP_SCALING_QUICK:-0}" = 1 ] && extra+=(--quick)
rc=0
bench/scaling.sh \
    --peerpath .gpu/peerpath \
    --slice .gpu/slice.fa.xz --repeat 8 \
    --debs .gpu \
    --scratch /dev/shm/ppscale \
    "${extra[@]}" \
    --runs 3 \
    --deadline "${PP_SCALING_DEADLINE:-170}" \
    --label "gpu-machine-$(nproc)cpu" \
    --out "$OUT" 2> >(tee "$OUT/scaling.log" >&2) || rc=$?
wait # for tee

# A/B: decompression into one tmpfs file, decoded into its mapped pages (the default) or
# written (PEERPATH_NO_MAPPED_OUTPUT=1), at every core, 5 interleaved runs each
# (docs/tuning.md#mapped-output). Printed and kept in $OUT/mapped-ab.txt.
ab_dir=/dev/shm/ppmapab
if rm -rf -- "$ab_dir" && mkdir -p -- "$ab_dir" && xz -dc .gpu/slice.fa.xz > "$ab_dir/slice" \
    && for _ in 1 2 3 4 5 6 7 8; do cat -- "$ab_dir/slice"; done > "$ab_dir/in" \
    && .gpu/peerpath compress -T "$(nproc)" -q --no-sync "$ab_dir/in" -o "$ab_dir/in.gz"; then
    {
        echo "decompress -T $(nproc) of 384 MiB into one tmpfs file: seconds per run (mapped | written)"
        for _ in 1 2 3 4 5; do
            m=$( { TIMEFORMAT=%R; time .gpu/peerpath decompress -T "$(nproc)" -q -f --no-sync "$ab_dir/in.gz" -o "$ab_dir/out"; } 2>&1 )
            cmp -s "$ab_dir/out" "$ab_dir/in" || m="$m (WRONG OUTPUT)"
            w=$( { TIMEFORMAT=%R; time PEERPATH_NO_MAPPED_OUTPUT=1 .gpu/peerpath decompress -T "$(nproc)" -q -f --no-sync "$ab_dir/in.gz" -o "$ab_dir/out"; } 2>&1 )
            echo "$m | $w"
        done
    } 2>&1 | tee "$OUT/mapped-ab.txt" >&2
fi

# The machine's own ceiling: k independent 1-thread compressions of the 48 MiB slice at once
# (k = 1 2 4 8 ... nproc, 3 rounds), each its own process with its own input. Nothing is shared
# but the machine, so the wall time of a round over the 1-copy time is how much slower each core
# gets when k are busy (shared physical cores, frequency, memory): no program's parallel
# efficiency at k threads exceeds 1-copy time / k-copy time. Kept in $OUT/ceiling.txt.
if [ -s "$ab_dir/slice" ]; then
    {
        echo "k independent 'peerpath compress -l1 -T1' of 48 MiB at once: wall seconds per round (3 rounds), ceiling = best 1-copy wall / best k-copy wall"
        one_best=""
        for k in $(seq 0 6 | awk -v n="$(nproc)" '{k=2^$1; if (k<=n) print k}'); do
            for i in $(seq 1 "$k"); do cp -- "$ab_dir/slice" "$ab_dir/c$i"; done
            times=""
            for _ in 1 2 3; do
                t0=$EPOCHREALTIME
                for i in $(seq 1 "$k"); do .gpu/peerpath compress -l1 -T1 -q -f --no-sync "$ab_dir/c$i" -o "$ab_dir/c$i.gz" & done
                wait
                times="$times $(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')"
            done
            best=$(printf '%s\n' $times | sort -g | head -1)
            [ -n "$one_best" ] || one_best=$best
            echo "k=$k:$times; ceiling $(awk -v a="$one_best" -v b="$best" 'BEGIN { printf "%.0f%%", 100 * a / b }')"
            rm -f -- "$ab_dir"/c*
        done
    } 2>&1 | tee "$OUT/ceiling.txt" >&2
fi
rm -rf -- "$ab_dir"

if [ -f "$OUT/scaling.md" ]; then
    echo
    cat -- "$OUT/scaling.md"
    # The main table once more, last, so that a tail of the output shows it.
    echo
    sed -n '/^## Results in memory/,/^## peerpath/{/^## peerpath/d;p}' "$OUT/scaling.md"
fi
echo "[gpu-machine-scaling] exit $rc; files in $OUT: $(cd -- "$OUT" && ls | tr '\n' ' ')" >&2
exit "$rc"
