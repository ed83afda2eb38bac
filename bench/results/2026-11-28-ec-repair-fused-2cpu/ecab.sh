#!/usr/bin/env bash
# ec repair coding rate, two builds interleaved: RS(4,2), 1 MiB units, 256 MiB random, shards 0 and 5 lost.
set -euo pipefail
old=$1 new=$2 s=/dev/shm/ecab
rm -rf $s; mkdir -p $s; head -c $((256<<20)) /dev/urandom > $s/in
$new ec encode $s/in -k 4 -m 2 --unit 1048576 -o $s/set > /dev/null; cp $s/set/shard-000 $s/orig0
for r in 1 2 3 4 5; do for b in old new; do bin=$([ $b = old ] && echo $old || echo $new)
  rm $s/set/shard-000 $s/set/shard-005; $bin ec repair $s/set --json > $s/r.json
  cmp -s $s/orig0 $s/set/shard-000 || echo "WRONG REPAIR ($b, $r)"
  echo "$b ($r): $(python3 -c "import json;r=json.load(open('$s/r.json'));print('coding %.2f GB/s, whole run %.3f s' % (r['coding_gb_per_s'], r['seconds']))")"
done; done
rm -rf $s
