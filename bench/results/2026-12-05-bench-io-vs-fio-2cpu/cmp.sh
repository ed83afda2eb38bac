#!/bin/bash
# Interleaved peerpath bench-io / fio runs of the same points, 3 repeats (odd: peerpath first, even: fio first).
# usage: RT=SECONDS cmp.sh PEERPATH FILE SIZE_BYTES OUTDIR   (then: python3 table.py OUTDIR)

set -e
pp=$1; file=$2; size=$3; out=$4; mkdir -p $out
[ -f $file ] || dd if=/dev/urandom of=$file bs=1M count=$((size>>20)) oflag=direct status=none
for i in 1 2 3; do
 for pt in "read 4K 1" "read 64K 4" "read 1M 16" "write 4K 1" "write 64K 4" "write 1M 16" "randread 4K 1" "randwrite 4K 1"; do
  set -- $pt; rw=$1 bs=$2 qd=$3
  case $rw in rand*) ppargs="--rw ${rw#rand} --random only";; *) ppargs="--rw $rw --random skip --sweep-bs $bs --sweep-qd $qd";; esac
  f() { fio --name=x --filename=$file --size=$size --rw=$rw --bs=$bs --iodepth=$qd --ioengine=io_uring --direct=1 --runtime=${RT:-3} --norandommap --randrepeat=0 --lat_percentiles=1 --percentile_list=50:99:99.9 --output-format=json --output=$out/fio-$rw-$bs-$qd-$i.json >/dev/null; }
  p() { $pp bench-io --file $file --size $size $ppargs --runtime-s ${RT:-3} --json > $out/pp-$rw-$bs-$qd-$i.json; }
  if [ $((i%2)) = 1 ]; then p; f; else f; p; fi
 done
done
