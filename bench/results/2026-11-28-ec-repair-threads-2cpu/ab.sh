#!/usr/bin/env bash
# ec verify and ec repair, the one-thread build (OLD) beside the threaded one (NEW) at -T 1 and 2:
# RS(4,2), 1 MiB units, 256 MiB of random bytes in /dev/shm, shards 0 and 5 lost; 5 interleaved
# rounds; every repaired set compared with the original.
set -euo pipefail
old=$1 new=$2 s=/dev/shm/ecrep
rm -rf $s; mkdir -p $s; head -c $((256<<20)) /dev/urandom > $s/in
$new ec encode $s/in -k 4 -m 2 --unit 1048576 -o $s/ref > /dev/null
t() { local a=$EPOCHREALTIME; "$@" > /dev/null 2>&1 || true; awk -v a=$a -v b=$EPOCHREALTIME 'BEGIN { printf "%.3f", b - a }'; }
for r in 1 2 3 4 5; do
  for b in "old" "new -T 1" "new -T 2"; do
    case $b in old) bin=$old; opt="" ;; *) bin=$new; opt=${b#new } ;; esac
    rm -rf $s/set; cp -r $s/ref $s/set; rm $s/set/shard-000 $s/set/shard-005
    v=$(t $bin ec verify $s/set $opt)
    rp=$(t $bin ec repair $s/set $opt)
    diff -rq $s/ref $s/set > /dev/null || echo "REPAIR DIFFERS ($b, $r)"
    echo "$b ($r): verify $v s, repair $rp s"
  done
done
rm -rf $s
