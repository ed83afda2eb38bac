#!/usr/bin/env bash
# ec encode, the one-thread build (OLD) beside the threaded one (NEW) at -T 1 and -T 2:
# RS(4,2), 1 MiB units, 256 MiB of random bytes in /dev/shm, 5 interleaved rounds; every set
# compared with the first (shards and manifest); cp of the source beside.
set -euo pipefail
old=$1 new=$2 s=/dev/shm/ecenc
rm -rf $s; mkdir -p $s; head -c $((256<<20)) /dev/urandom > $s/in
$old ec encode $s/in -k 4 -m 2 --unit 1048576 -o $s/ref > /dev/null
field() { python3 -c "import json,sys; r=json.load(sys.stdin); print('%.3f s, coding %.1f GB/s a core' % (r['seconds'], r['coding_gb_per_s']))"; }
for r in 1 2 3 4 5; do
  for b in "old" "new -T 1" "new -T 2"; do
    rm -rf $s/set
    case $b in old) $old ec encode $s/in -k 4 -m 2 --unit 1048576 -o $s/set --json > $s/r.json ;;
               *) $new ec encode $s/in -k 4 -m 2 --unit 1048576 -o $s/set ${b#new } --json > $s/r.json ;; esac
    diff -rq $s/ref $s/set > /dev/null || echo "SET DIFFERS ($b, $r)"
    echo "$b ($r): $(field < $s/r.json)"
  done
  rm -f $s/cp; a=$EPOCHREALTIME; cp $s/in $s/cp; echo "cp ($r): $(awk -v a=$a -v b=$EPOCHREALTIME 'BEGIN { printf "%.3f s", b - a }')"
done
rm -rf $s
