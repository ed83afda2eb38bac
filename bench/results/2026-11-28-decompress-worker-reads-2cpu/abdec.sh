#!/usr/bin/env bash
# Decompression in memory (tmpfs in and out, --no-sync), the workers' own reads against io_uring's, interleaved.
set -euo pipefail
B=${B:-target/release/peerpath}; dd=/dev/shm/ppwr; o=${O:-/tmp/abdec}; mkdir -p "$dd" "$o"
cp data/corpus/metastudent_MFO_goasp.fasta "$dd/in"
$B compress -T 2 -q -f --no-sync "$dd/in" -o "$dd/in.gz"
cl() { python3 -c "import json,sys;r=json.load(open(sys.argv[1]));p=r['pipeline'];c=[x for x in r['cpu']['roles'] if x['role'].startswith('compute')];o=[x for x in r['cpu']['roles'] if x['role'].startswith('orch')];print('| %s | %.3f | %.2f | %.0f%% | %s | %s | %.2f |' % (sys.argv[2], r['wall_s'], r['bytes_out']/r['wall_s']/1e9, 100*p['worker_busy_share'], ' '.join('%.2f' % (x['user_s']+x['system_s']) for x in c) or '-', ' '.join('%.3f' % (x['user_s']+x['system_s']) for x in o) or '-', r['cpu']['total_user_s']+r['cpu']['total_system_s']))" "$1" "$2"; }
echo "| run | wall s | GB/s of output | workers busy | compute CPU s | orchestrator CPU s | host CPU s |"
echo "|---|---|---|---|---|---|---|"
for r in 1 2 3 4 5; do for t in 1 2; do for w in 1 0; do
  PEERPATH_WORKER_READS=$w $B decompress -T "$t" -f --no-sync "$dd/in.gz" -o "$dd/back" --json > "$o/d.json" 2>&1
  cmp -s "$dd/back" "$dd/in" || echo "WRONG OUTPUT -T $t w$w ($r)"; rm -f "$dd/back"
  cl "$o/d.json" "-T $t, $([ "$w" = 1 ] && echo 'workers read' || echo 'io_uring reads') ($r)"
done; done; done
rm -rf "$dd"
