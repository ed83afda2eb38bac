#!/usr/bin/env bash
# compress --engine gpu on the job executor (GPU memory staged through a pinned window).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
PP=$PWD/.gpu/pp-gpu; chmod +x "$PP"
mkdir -p /dev/shm/nv && { [ -s /dev/shm/nv/libnvcomp.so.6 ] || xz -dc .gpu/libnvcomp.so.6.xz > /dev/shm/nv/libnvcomp.so.6; }
export PEERPATH_NVCOMP=/dev/shm/nv/libnvcomp.so.6
{ [ -s /dev/shm/slice.fa ] || xz -dc .gpu/slice.fa.xz > /dev/shm/slice.fa; }
D=/var/tmp/ppg; mkdir -p $D
for i in 1 2 3 4 5 6 7 8; do cat /dev/shm/slice.fa; done > $D/in.fa; sync
echo "## one GPU job, small first (48 MiB), report"
timeout 60 $PP compress --engine gpu -f /dev/shm/slice.fa -o $D/slice.gz 2>&1 | tee "$OUT/gpu-48m.txt"
timeout 60 $PP decompress -q -o - $D/slice.gz | cmp - /dev/shm/slice.fa && echo "48m round trip ok"
gzip -t $D/slice.gz && echo "48m gzip -t ok"
echo "## 384 MB file to file, GPU, JSON"
timeout 60 $PP compress --engine gpu --no-fallback -f $D/in.fa -o $D/in.gz --json > "$OUT/gpu-384m.json" 2>&1; echo "exit $?"
python3 -c "import json;r=json.load(open('$OUT/gpu-384m.json'));print(r['wall_s'],r['throughput_gb_per_s'],r['ratio'],r['cpu']['total_utilisation_pct'],r['fallbacks'],r['engine'])" 2>&1 | tee -a "$OUT/summary.txt"
timeout 60 $PP decompress -q -T 16 -o - $D/in.gz | cmp - $D/in.fa && echo "384m round trip ok" | tee -a "$OUT/summary.txt"
echo "## side by side, file to file, 3 runs each"
for r in 1 2 3; do
  for e in gpu cpu; do
    t0=$EPOCHREALTIME; timeout 60 $PP compress --engine $e -T 16 -q -f $D/in.fa -o $D/out.$e.gz; t=$(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN{printf "%.3f", a-b}')
    echo "$e run $r: $t s, $(stat -c %s $D/out.$e.gz) bytes" | tee -a "$OUT/summary.txt"
  done
done
for q in 64 128; do
  t0=$EPOCHREALTIME; timeout 60 $PP compress --engine gpu --queue-depth $q -q -f $D/in.fa -o $D/out.q.gz; echo "gpu qd $q: $(awk -v a=$EPOCHREALTIME -v b=$t0 'BEGIN{printf "%.3f", a-b}') s" | tee -a "$OUT/summary.txt"
done
timeout 60 $PP compress --engine gpu -f $D/in.fa -o $D/text.gz 2>&1 | tee "$OUT/gpu-384m.txt"
rm -rf $D
