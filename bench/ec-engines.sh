#!/usr/bin/env bash
# bench/ec-engines.sh - peerpath ec on the host CPU beside the same jobs on an emulated CSP
# (issue 19): encode, verify, repair and decode of a set that lost M shards.
#
# Usage: bench/ec-engines.sh [--k 4] [--m 2] [--unit 1M] [--rounds 5] [--size-mib 256]
#                            [--scratch DIR] [--out FILE]
#
# Each round runs every job with --engine cpu -T 1, --engine cpu (every core) and --engine
# emulated --no-fallback, in turn (interleaved, so the machine's drift hits all alike). The
# set is damaged the same way each time (shard 0 deleted, the last parity shard cut in half);
# every repair is compared with the original shards and every decode with the source.
# Figures: wall seconds (median) and CPU seconds of the command and its children (the
# emulated CSP is a child process on this host's cores, so its CPU is counted too).
# Emulated rows are "measured on emulated devices": on a machine whose every core is the
# host's, a device process cannot be faster than the CPU; the rows show what the offload
# path costs and that its host process handles no payload (the reports say so).
# Scratch (default /dev/shm) is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
k=4 m=2 unit=1M rounds=5 size_mib=256 scratch="" out=""
while [ $# -gt 0 ]; do
    case $1 in
        --k) k=$2; shift 2 ;; --m) m=$2; shift 2 ;; --unit) unit=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;; --size-mib) size_mib=$2; shift 2 ;;
        --scratch) scratch=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
cargo build --release --locked -q -p peerpath-cli
pp=$PWD/target/release/peerpath
scratch=${scratch:-/dev/shm}/.bench-ec-engines.$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
head -c $((size_mib << 20)) /dev/urandom > "$scratch/in"
"$pp" ec encode "$scratch/in" -k "$k" -m "$m" --unit "$unit" -o "$scratch/orig" > /dev/null
last=$(printf 'shard-%03d' $((k + m - 1)))
damage() {
    rm -rf "$scratch/set"; cp -r "$scratch/orig" "$scratch/set"
    rm "$scratch/set/shard-000"
    truncate -s $(( $(stat -c %s "$scratch/orig/$last") / 2 )) "$scratch/set/$last"
}
# Runs a command; appends "wall cpu" (seconds) to $scratch/$1.
timed() {
    local row=$1; shift
    python3 - "$@" >> "$scratch/$row" <<'PY'
import resource, subprocess, sys, time
u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
t = time.monotonic()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.monotonic() - t
u = resource.getrusage(resource.RUSAGE_CHILDREN)
if r.returncode not in (0, 6):
    sys.exit("failed: %s: %s" % (" ".join(sys.argv[1:]), r.stderr.decode()))
print("%.4f %.4f" % (wall, u.ru_utime + u.ru_stime - u0.ru_utime - u0.ru_stime))
PY
}
engines=("cpu1:--engine cpu -T 1" "cpu:--engine cpu" "emulated:--engine emulated --no-fallback")
for ((r = 0; r < rounds; r++)); do
    for e in "${engines[@]}"; do
        name=${e%%:*}; read -ra opts <<< "${e#*:}"
        rm -rf "$scratch/enc"
        timed "encode.$name" "$pp" ec encode "$scratch/in" -k "$k" -m "$m" --unit "$unit" -o "$scratch/enc" "${opts[@]}"
        for f in "$scratch"/orig/shard-*; do cmp -s "$f" "$scratch/enc/${f##*/}" || { echo "CHECK FAILED: $name encode" >&2; exit 1; }; done
        damage
        timed "verify.$name" "$pp" ec verify "$scratch/set" "${opts[@]}"
        rm -f "$scratch/back"
        timed "decode.$name" "$pp" ec decode "$scratch/set" -o "$scratch/back" "${opts[@]}"
        cmp -s "$scratch/in" "$scratch/back" || { echo "CHECK FAILED: $name decode" >&2; exit 1; }
        timed "repair.$name" "$pp" ec repair "$scratch/set" "${opts[@]}"
        for f in "$scratch"/orig/shard-*; do cmp -s "$f" "$scratch/set/${f##*/}" || { echo "CHECK FAILED: $name repair" >&2; exit 1; }; done
    done
done
med() { awk -v c="$2" '{print $c}' "$scratch/$1" | sort -g | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.3f", m}'; }
{
echo "# peerpath ec on the host CPU and on an emulated CSP, RS($k, $m), $unit units, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r)."
echo "Data: ${size_mib} MiB of random bytes in $(dirname "$scratch"); the set damaged before verify, decode and repair (shard-000 deleted, $last cut in half: both units lost in the stripes past the cut, shard-000's in the others)."
echo "Command: \`bench/ec-engines.sh --k $k --m $m --unit $unit --rounds $rounds --size-mib $size_mib\`; median of $rounds interleaved rounds. CPU rows measured on this host's CPU; emulated rows measured on emulated devices (the device process runs on the same cores; its CPU is in the CPU column)."
echo
echo "| job | cpu -T 1: wall s | CPU s | cpu, $(nproc) threads: wall s | CPU s | emulated CSP: wall s | CPU s (host + device) |"
echo "|---|---|---|---|---|---|---|"
for job in encode verify decode repair; do
    echo "| $job | $(med "$job.cpu1" 1) | $(med "$job.cpu1" 2) | $(med "$job.cpu" 1) | $(med "$job.cpu" 2) | $(med "$job.emulated" 1) | $(med "$job.emulated" 2) |"
done
} | tee ${out:+"$out"}
