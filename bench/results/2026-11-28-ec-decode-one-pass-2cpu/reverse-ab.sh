#!/usr/bin/env bash
# decompress --ec (the chain's reverse: shards -> open blocks -> inflate), two builds interleaved:
# 256 MiB of the bundled protein FASTA repeated, compress --encrypt --ec 4+2 (1 MiB units), the
# set intact, 5 rounds; every output compared with the source.
set -euo pipefail
old=$1 new=$2 s=/dev/shm/ecrev
rm -rf $s; mkdir -p $s
while [ "$(stat -c %s $s/S 2>/dev/null || echo 0)" -lt $((256 << 20)) ]; do cat data/sample/protein.fasta >> $s/S; done
truncate -s $((256 << 20)) $s/S
$new keygen -o $s/key 2>/dev/null
$new compress $s/S --encrypt --key-file $s/key --ec 4+2 -o $s/set > /dev/null
t() { local a=$EPOCHREALTIME; "$@" > /dev/null; awk -v a=$a -v b=$EPOCHREALTIME 'BEGIN { printf "%.3f", b - a }'; }
for r in 1 2 3 4 5; do for b in old new; do bin=$([ $b = old ] && echo $old || echo $new)
  rm -f $s/out; secs=$(t $bin decompress --ec $s/set --key-file $s/key -o $s/out)
  cmp -s $s/S $s/out || echo "WRONG OUTPUT ($b, $r)"
  echo "$b ($r): $secs s"
done; done
rm -rf $s
