#!/usr/bin/env bash
# bench/serve.sh - peerpath serve (host and zerocopy modes) beside nginx (sendfile on) for HTTP and
# memcached for the key-value protocol, the same client for each (issue 21).
#
# Usage: bench/serve.sh [--rounds 3] [--seconds 5] [--connections 16] [--out FILE]
#
# Objects: 4 KiB and 1 MiB files in a scratch directory on /dev/shm (page cache; the payload
# path, not the disk, is measured). Client: wrk (Debian), one thread, N keep-alive connections,
# on the same machine over loopback. Each round runs every server x object once, in order, so a
# slow stretch falls on all rows; the table gives medians of requests/s and MB/s. peerpath runs in
# host, zerocopy and devmem modes (devmem: payloads sent by an emulated NIC process from its memory,
# each client connection with its own channel to the NIC, many descriptors in flight). nginx 1.22
# (Debian) runs with one worker, sendfile on, access log off. Key-value: memcached 1.6 (Debian,
# objects loaded with memccp) and peerpath serve --memcached, loaded by `peerpath bench-kv`
# (N connections, get of one key, the whole answer read before the next). Installs wrk, nginx,
# memcached and libmemcached-tools with apt-get if missing. Measured on this host; client and
# server share its cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 seconds=5 conns=16 out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --seconds) seconds=$2; shift 2 ;; --connections) conns=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null && command -v nginx >/dev/null && command -v memcached >/dev/null && command -v memccp >/dev/null \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx memcached libmemcached-tools >/dev/null
cargo build --release --locked -q -p peerpath-cli
pp=$PWD/target/release/peerpath
tmp=$(mktemp -d /dev/shm/bench-serve.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root" "$tmp/nginx/logs"
chmod 755 "$tmp" "$tmp/root"  # nginx's worker runs as www-data
head -c 4096 /dev/urandom > "$tmp/root/small"
head -c $((1 << 20)) /dev/urandom > "$tmp/root/large"
cat > "$tmp/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
error_log $tmp/nginx/logs/error.log;
pid $tmp/nginx/nginx.pid;
events { worker_connections 1024; }
http { sendfile on; tcp_nopush on; access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:18190; root $tmp/root; } }
CONF
nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" & pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18191 --memcached 127.0.0.1:18193 --mode host 2>/dev/null > "$tmp/host.report" & pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18192 --memcached 127.0.0.1:18194 --mode zerocopy 2>/dev/null > "$tmp/zc.report" & pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18196 --memcached 127.0.0.1:18197 --mode devmem 2>/dev/null > "$tmp/dm.report" & pids+=($!)
memcached -u "$(id -un)" -l 127.0.0.1 -p 18195 -m 64 -I 2m & pids+=($!)
sleep 1
(cd "$tmp/root" && memccp --servers=127.0.0.1:18195 small large)
servers=("nginx sendfile:18190" "peerpath host:18191" "peerpath zerocopy:18192" "peerpath devmem:18196")
kv=("memcached:18195" "peerpath host:18193" "peerpath zerocopy:18194" "peerpath devmem:18197")
for ((r = 0; r < rounds; r++)); do
    for obj in small large; do
        for s in "${servers[@]}"; do
            name=${s%%:*} port=${s##*:}
            wrk -t1 -c"$conns" -d"${seconds}s" "http://127.0.0.1:$port/$obj" > "$tmp/wrk.txt"
            rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk.txt")
            mbs=$(awk '/^Transfer\/sec/ {v=$2; if (v ~ /GB/) {sub(/GB/,"",v); v*=1024} else if (v ~ /KB/) {sub(/KB/,"",v); v/=1024} else sub(/MB/,"",v); print v*1.048576}' "$tmp/wrk.txt")
            grep -q "Non-2xx" "$tmp/wrk.txt" && { echo "CHECK FAILED: $name $obj answered errors" >&2; exit 1; }
            echo "$rps" >> "$tmp/rps.$obj.${name// /_}"
            echo "$mbs" >> "$tmp/mbs.$obj.${name// /_}"
        done
        for s in "${kv[@]}"; do
            name=${s%%:*} port=${s##*:}
            line=$("$pp" bench-kv --server "127.0.0.1:$port" --key "$obj" -c "$conns" --seconds "$seconds")
            echo "$line" | sed 's/.*: \([0-9]*\) requests\/s, \([0-9.]*\) MB\/s.*/\1/' >> "$tmp/kvrps.$obj.${name// /_}"
            echo "$line" | sed 's/.*requests\/s, \([0-9.]*\) MB\/s.*/\1/' >> "$tmp/kvmbs.$obj.${name// /_}"
        done
    done
done
median() { sort -g "$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f", m}'; }
{
echo "# peerpath serve beside nginx, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r); $(nginx -v 2>&1); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)."
echo "Command: \`bench/serve.sh --rounds $rounds --seconds $seconds --connections $conns\`: wrk -t1 -c$conns -d${seconds}s over loopback, medians of $rounds rounds; client and servers share the machine. Measured on this host."
echo
echo "| protocol | object | server | requests/s | MB/s |"
echo "|---|---|---|---|---|"
for obj in small large; do
    for s in "${servers[@]}"; do
        name=${s%%:*}
        echo "| HTTP (wrk) | $([ $obj = small ] && echo 4 KiB || echo 1 MiB) | $name | $(median "$tmp/rps.$obj.${name// /_}") | $(median "$tmp/mbs.$obj.${name// /_}") |"
    done
done
for obj in small large; do
    for s in "${kv[@]}"; do
        name=${s%%:*}
        echo "| memcached get (bench-kv) | $([ $obj = small ] && echo 4 KiB || echo 1 MiB) | $name | $(median "$tmp/kvrps.$obj.${name// /_}") | $(median "$tmp/kvmbs.$obj.${name// /_}") |"
    done
done
} | tee ${out:+"$out"}
