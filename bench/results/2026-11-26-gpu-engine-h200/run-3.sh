#!/usr/bin/env bash
# Whole-chunk commands on the GPU: 384 MB and 1.6 GB file to file, and tmpfs in -> disk out.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}; mkdir -p "$OUT"
PP=$PWD/.gpu/pp-gpu; chmod +x "$PP"
mkdir -p /dev/shm/nv && { [ -s /dev/shm/nv/libnvcomp.so.6 ] || xz -dc .gpu/libnvcomp.so.6.xz > /dev/shm/nv/libnvcomp.so.6; }
export PEERPATH_NVCOMP=/dev/shm/nv/libnvcomp.so.6
{ [ -s /dev/shm/slice.fa ] || xz -dc .gpu/slice.fa.xz > /dev/shm/slice.fa; }
D=/var/tmp/ppg; mkdir -p $D
for i in 1 2 3 4 5 6 7 8; do cat /dev/shm/slice.fa; done > $D/in.fa
for i in 1 2 3 4; do cat $D/in.fa; done > $D/in4.fa; cp $D/in4.fa /dev/shm/in4.fa; sync
one() { timeout 60 $PP compress --engine $1 -T 16 -f $2 -o $D/out.gz --json > $D/r.json 2>&1
  python3 -c "import json;r=json.load(open('$D/r.json'));d=r['devices'];print('$2 $1: wall %.3f s, %.2f GB/s, ratio %.3f, host CPU %.1f%%, fallbacks %s%s' % (r['wall_s'], r['throughput_gb_per_s'], r['ratio'], r['cpu']['total_utilisation_pct'], r['fallbacks'], ('; '+d[0]['kind'].split('; ')[-1]+'; commands '+str(d[0]['commands'])) if d else ''))" | tee -a "$OUT/summary.txt"; }
for f in $D/in.fa $D/in4.fa /dev/shm/in4.fa; do for r in 1 2; do one gpu $f; one cpu $f; done; done
timeout 60 $PP compress --engine gpu -q -f /dev/shm/in4.fa -o $D/g.gz && timeout 60 $PP decompress -q -T 16 -o - $D/g.gz | cmp - /dev/shm/in4.fa && echo "in4 round trip ok (gpu output)" | tee -a "$OUT/summary.txt"
gzip -t $D/g.gz && echo "gzip -t ok" | tee -a "$OUT/summary.txt"
rm -rf $D /dev/shm/in4.fa
