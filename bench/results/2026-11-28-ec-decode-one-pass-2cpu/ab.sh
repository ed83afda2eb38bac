#!/usr/bin/env bash
# ec decode, two builds interleaved: RS(4,2), 1 MiB units, 256 MiB of random bytes in /dev/shm;
# the set intact, then shards 0 and 1 (data) lost; 5 rounds each; every output compared; cp beside.
set -euo pipefail
old=$1 new=$2 s=/dev/shm/ecdab
rm -rf $s; mkdir -p $s; head -c $((256<<20)) /dev/urandom > $s/in
$new ec encode $s/in -k 4 -m 2 --unit 1048576 -o $s/set > /dev/null
t() { local a=$EPOCHREALTIME; "$@" > /dev/null; awk -v a=$a -v b=$EPOCHREALTIME 'BEGIN { printf "%.3f", b - a }'; }
for state in intact "2 data shards lost"; do
  [ "$state" = intact ] || rm $s/set/shard-000 $s/set/shard-001
  for r in 1 2 3 4 5; do for b in old new; do bin=$([ $b = old ] && echo $old || echo $new)
    rm -f $s/out; secs=$(t $bin ec decode $s/set -o $s/out)
    cmp -s $s/in $s/out || echo "WRONG OUTPUT ($b, $r)"
    echo "$state, $b ($r): $secs s"
  done; rm -f $s/cp; echo "$state, cp ($r): $(t cp $s/in $s/cp) s"; done
done
rm -rf $s
