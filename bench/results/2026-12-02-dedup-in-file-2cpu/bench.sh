#!/bin/bash
# Interleaved rounds: each file into a new store, base build then new build, wall seconds.
rounds=$1; shift
new=/work/main/target/release/peerpath base=/tmp/peerpath-base
for r in $(seq 1 $rounds); do
  for spec in "$@"; do f=${spec%:*} t=${spec#*:}
    for name in base new; do bin=${!name}
      rm -rf st; s=$(date +%s%N); $bin dedup store $f -s st -T $t --json > o.json; e=$(date +%s%N)
      found=$(python3 -c "import json; print(json.load(open('o.json'))['files'][0].get('found_chunks',0))")
      ratio=$($bin dedup stats -s st | grep -o 'ratio: [0-9.]*')
      echo "$f T$t $name $(( (e - s) / 1000000 )) ms found=$found $ratio"
    done
  done
done
