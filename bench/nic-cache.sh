#!/usr/bin/env bash
# bench/nic-cache.sh - the devmem NIC memory's cache under a skewed load (issue 21): hit ratio,
# evictions, requests/s and host CPU per request of `peerpath serve --mode devmem` for working sets
# larger than the NIC's memory.
#
# Usage: bench/nic-cache.sh [--peerpath BIN[=LABEL]]... [--objects 400] [--object-size 262144]
#                           [--requests 20000] [--zipf 1.0] [--memory "16M 32M"] [--out FILE]
#
# Objects: N files of the object size on /dev/shm, each filled with its own byte. Client: one Python
# http.client keep-alive connection doing GETs of keys drawn from a Zipf distribution (exponent
# --zipf, fixed seed: every binary sees the same sequence), each answer checked (status, length,
# byte). Several --peerpath binaries (e.g. an older build) run the same sequence, for a side by side
# comparison of cache policies; by default this tree's release build. Measured on this host.
set -euo pipefail
argv=("$@")
cd "$(dirname "$0")/.."
bins=() objects=400 size=262144 requests=20000 zipf=1.0 memory="16M 32M" out=""
while [ $# -gt 0 ]; do
    case $1 in
        --peerpath) bins+=("$2"); shift 2 ;; --objects) objects=$2; shift 2 ;; --object-size) size=$2; shift 2 ;;
        --requests) requests=$2; shift 2 ;; --zipf) zipf=$2; shift 2 ;; --memory) memory=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
if [ ${#bins[@]} -eq 0 ]; then
    cargo build --release --locked -q -p peerpath-cli
    bins=("$PWD/target/release/peerpath=this tree")
fi
tmp=$(mktemp -d /dev/shm/bench-nic-cache.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
python3 - "$tmp/root" "$objects" "$size" <<'PY'
import os, sys
root, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(root)
for k in range(n):
    open(f"{root}/o{k}", "wb").write(bytes([k % 251]) * size)
PY
cat > "$tmp/client.py" <<'PY'
import http.client, random, sys
port, n, objs, s, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
random.seed(7)
keys = random.choices(range(objs), weights=[1 / (i + 1) ** s for i in range(objs)], k=n)
c = http.client.HTTPConnection("127.0.0.1", port)
for k in keys:
    c.request("GET", f"/o{k}")
    r = c.getresponse()
    b = r.read()
    if r.status != 200 or len(b) != size or b.count(bytes([k % 251])) != size:
        sys.exit(f"wrong answer for o{k}: {r.status}, {len(b)} bytes")
PY
table="| binary | NIC memory | hits | placed | evicted | hit ratio | requests/s | host CPU us/request |
|---|---|---|---|---|---|---|---|"
for b in "${bins[@]}"; do
    bin=${b%%=*} label=${b#*=}
    for mem in $memory; do
        port=$((20000 + RANDOM % 20000))
        "$bin" serve "$tmp/root" --listen 127.0.0.1:$port --mode devmem --nic-memory "$mem" --max-requests "$requests" --json > "$tmp/report.json" 2>"$tmp/err" &
        pid=$!
        for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break; sleep 0.1; done
        python3 "$tmp/client.py" "$port" "$requests" "$objects" "$zipf" "$size"
        wait "$pid"; pid=""
        row=$(python3 - "$tmp/report.json" "$label" "$mem" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); n = r["nic"]
asked = n["hits"] + n["misses"] + n["too_large"] + n["not_placed"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {n['hits']} | {n['misses']} | {n['evictions']} | {100 * n['hits'] / asked:.1f}% | {r['requests_per_s']:.0f} | {r['host_cpu_us_per_request']:.1f} |")
PY
)
        table+=$'\n'"$row"
        echo "$row" >&2
    done
done
report="# devmem NIC memory cache under a Zipf load

Produced by: \`bench/nic-cache.sh${argv[*]:+ $(printf '%q ' "${argv[@]}" | sed 's/ $//')}\`

Date: $(date -u '+%Y-%m-%d %H:%M:%S') UTC. $objects objects of $size bytes ($((objects * size >> 20)) MiB), $requests GETs drawn
from Zipf($zipf) with a fixed seed, one keep-alive connection (the client checks every answer); measured on
this host ($(nproc) cores). Hits: GETs whose object was already in the NIC's memory; placed: GETs that copied
it there first; evicted: objects dropped to make room. Requests/s are the one Python client's pace (it
checks every byte), not the server's capacity: compare them only within this table.

$table"
if [ -n "$out" ]; then echo "$report" > "$out"; else echo "$report"; fi
