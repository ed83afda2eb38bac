#!/usr/bin/env bash
# bench/disk-ab.sh - file to file on a disk: the disk's own O_DIRECT rates (peerpath bench-io)
# and peerpath compress/decompress at every core, reading 2, 4 and 8 MiB at a time
# ($PEERPATH_CPU_READ_BYTES), interleaved, page cache dropped before each run.
#
# Usage: bench/disk-ab.sh --peerpath PATH --input FILE --dir DIR [--runs 3] [--out DIR]
#   DIR must be on the disk to measure (a private sub-directory is made and removed).
# Writes disk-ab.md (and bench-io.json, one JSON report per run) to --out (default .).
set -uo pipefail
pp="" input="" dir="" runs=3 out=.
while [ $# -gt 0 ]; do
    case $1 in
        --peerpath) pp=$2; shift 2 ;; --input) input=$2; shift 2 ;; --dir) dir=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[ -x "$pp" ] && [ -f "$input" ] && [ -n "$dir" ] || { echo "need --peerpath, --input and --dir" >&2; exit 2; }
mkdir -p "$out" "$dir"; d=$(mktemp -d "$dir/ppdisk.XXXXXX"); trap 'rm -rf "$d"' EXIT
cp "$input" "$d/in"; size=$(stat -c %s "$d/in"); n=$(nproc)
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }
"$pp" bench-io --file "$d/bench-io.dat" --size 1G --sweep-bs 1M,2M,4M,8M --sweep-qd 4,16 --rw both --random skip --runtime-s 1 --json > "$out/bench-io.json" 2>&1
rm -f "$d/bench-io.dat"
"$pp" compress -T "$n" -q -f "$d/in" -o "$d/ref.gz"
{
    echo "# file to file on $(findmnt -no SOURCE,FSTYPE -T "$d" | head -1) ($(date -u +%F), $n CPUs)"; echo
    echo "input $size bytes; peerpath -T $n, synced outputs (the default); page cache dropped before each run"; echo
    python3 - "$out/bench-io.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"bench-io failed: {e}"); sys.exit(0)
pts = r.get("points") or r.get("results") or []
print("| bench-io pattern | block | queue depth | GB/s |"); print("|---|---|---|---|")
for p in pts:
    print(f"| {p.get('pattern')} | {p.get('block_size_bytes', 0) >> 10} KiB | {p.get('queue_depth')} | {p.get('throughput_gb_per_s', 0):.2f} |")
PY
    echo; echo "| run | wall s | GB/s of the uncompressed bytes | check |"; echo "|---|---|---|---|"
} > "$out/disk-ab.md"
for ((r = 1; r <= runs; r++)); do
    for rb in 2097152 4194304 8388608; do
        rm -f "$d/c.gz"; drop
        PEERPATH_CPU_READ_BYTES=$rb "$pp" compress -T "$n" -f "$d/in" -o "$d/c.gz" --json > "$out/c-$rb-$r.json" 2>&1
        ok=$(cmp -s "$d/c.gz" "$d/ref.gz" && echo "same bytes as the reference" || echo DIFFERENT)
        python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print('| compress, %s MiB reads (%s) | %.3f | %.2f | %s |'%(int(sys.argv[2])>>20,sys.argv[3],r['wall_s'],int(sys.argv[4])/r['wall_s']/1e9,sys.argv[5]))" "$out/c-$rb-$r.json" "$rb" "$r" "$size" "$ok" >> "$out/disk-ab.md" || echo "| compress $rb ($r) | FAILED |" >> "$out/disk-ab.md"
    done
    rm -f "$d/out"; drop
    "$pp" decompress -T "$n" -f "$d/ref.gz" -o "$d/out" --json > "$out/d-$r.json" 2>&1
    ok=$(cmp -s "$d/out" "$d/in" && echo ok || echo WRONG)
    python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print('| decompress (%s) | %.3f | %.2f | %s |'%(sys.argv[2],r['wall_s'],int(sys.argv[3])/r['wall_s']/1e9,sys.argv[4]))" "$out/d-$r.json" "$r" "$size" "$ok" >> "$out/disk-ab.md" || echo "| decompress ($r) | FAILED |" >> "$out/disk-ab.md"
done
cat "$out/disk-ab.md"
