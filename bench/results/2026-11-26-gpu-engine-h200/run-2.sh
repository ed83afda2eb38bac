#!/usr/bin/env bash
# Where the GPU job's time goes: device opening, and steady state on a bigger input.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
PP=$PWD/.gpu/pp-gpu; chmod +x "$PP"
mkdir -p /dev/shm/nv && { [ -s /dev/shm/nv/libnvcomp.so.6 ] || xz -dc .gpu/libnvcomp.so.6.xz > /dev/shm/nv/libnvcomp.so.6; }
export PEERPATH_NVCOMP=/dev/shm/nv/libnvcomp.so.6
{ [ -s /dev/shm/slice.fa ] || xz -dc .gpu/slice.fa.xz > /dev/shm/slice.fa; }
D=/var/tmp/ppg; mkdir -p $D
for i in 1 2 3 4 5 6 7 8; do cat /dev/shm/slice.fa; done > $D/in.fa
for i in 1 2 3 4; do cat $D/in.fa; done > $D/in4.fa; sync
for f in in.fa in4.fa; do
  for r in 1 2; do
    for e in gpu cpu; do
      timeout 60 $PP compress --engine $e -T 16 -f $D/$f -o $D/out.gz --json > $D/r.json 2>&1
      python3 -c "import json;r=json.load(open('$D/r.json'));d=r['devices'];print('$f $e run $r: wall %.3f s, %.2f GB/s, ratio %.3f, host CPU %.1f%%, fallbacks %s%s' % (r['wall_s'], r['throughput_gb_per_s'], r['ratio'], r['cpu']['total_utilisation_pct'], r['fallbacks'], ('; '+d[0]['kind'].split('; ')[-1]) if d else ''))" | tee -a "$OUT/summary.txt"
    done
  done
done
timeout 60 $PP decompress -q -T 16 -o - $D/out.gz | cmp - $D/in4.fa && echo "in4 round trip ok (cpu output)" | tee -a "$OUT/summary.txt"
timeout 60 $PP compress --engine gpu -q -f $D/in4.fa -o $D/g.gz && timeout 60 $PP decompress -q -T 16 -o - $D/g.gz | cmp - $D/in4.fa && echo "in4 round trip ok (gpu output)" | tee -a "$OUT/summary.txt"
rm -rf $D
