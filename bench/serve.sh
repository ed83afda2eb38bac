#!/usr/bin/env bash
# bench/serve.sh - peerpath serve (host with and without its memory cache, zerocopy, send-zc and devmem modes) beside nginx (sendfile on, and
# off: read into its buffers and written, the peer of peerpath's host mode) for HTTP and
# memcached for the key-value protocol, the same client for each (issue 21).
#
# Usage: [PEERPATH_BIN=path] bench/serve.sh [--rounds 3] [--seconds 5] [--connections 16] [--wrk-threads 1] [--out FILE]
#
# Objects: 4 KiB and 1 MiB files in a scratch directory on /dev/shm (page cache; the payload
# path, not the disk, is measured). Client: wrk (Debian), one thread (--wrk-threads), N keep-alive connections,
# on the same machine over loopback. Each round runs every server x object once, in order, so a
# slow stretch falls on all rows; the table gives medians of requests/s and MB/s. peerpath runs in
# host mode (objects kept in its memory once read, the default; and "no cache": read for each
# request, --host-cache 0), zerocopy, send-zc and devmem modes (devmem: payloads sent by an emulated NIC process from its memory,
# each client connection with its own channel to the NIC, many descriptors in flight). nginx 1.22
# (Debian) runs with one worker, access log off, one server with sendfile on and one with it off. Key-value: memcached 1.6 (Debian,
# objects loaded with memccp) and peerpath serve --memcached, loaded by `peerpath bench-kv`
# (N connections, get of one key, the whole answer read before the next). Installs wrk, nginx,
# memcached and libmemcached-tools with apt-get if missing. Measured on this host; client and
# server share its cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 seconds=5 conns=16 wrk_threads=1 out=""
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;; --seconds) seconds=$2; shift 2 ;; --connections) conns=$2; shift 2 ;; --wrk-threads) wrk_threads=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null && command -v nginx >/dev/null && command -v memcached >/dev/null && command -v memccp >/dev/null \
    || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx memcached libmemcached-tools >/dev/null
# PEERPATH_BIN: another build's binary (an earlier commit's, to compare); else this tree's, built.
if [ -n "${PEERPATH_BIN:-}" ]; then pp=$PEERPATH_BIN; else cargo build --release --locked -q -p peerpath-cli; pp=$PWD/target/release/peerpath; fi
tmp=$(mktemp -d /dev/shm/bench-serve.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
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
  server { listen 127.0.0.1:18190; root $tmp/root; }
  server { listen 127.0.0.1:18189; root $tmp/root; sendfile off; } }
CONF
nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" & pids+=($!)
pp_pids=()
"$pp" serve "$tmp/root" --listen 127.0.0.1:18191 --memcached 127.0.0.1:18193 --mode host --json 2>/dev/null > "$tmp/host.report" & pids+=($!); pp_pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18200 --memcached 127.0.0.1:18201 --mode host --host-cache 0 --json 2>/dev/null > "$tmp/host-nocache.report" & pids+=($!); pp_pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18192 --memcached 127.0.0.1:18194 --mode zerocopy --json 2>/dev/null > "$tmp/zerocopy.report" & pids+=($!); pp_pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18196 --memcached 127.0.0.1:18197 --mode devmem --json 2>/dev/null > "$tmp/devmem.report" & pids+=($!); pp_pids+=($!)
"$pp" serve "$tmp/root" --listen 127.0.0.1:18198 --memcached 127.0.0.1:18199 --mode send-zc --json 2>/dev/null > "$tmp/send-zc.report" & pids+=($!); pp_pids+=($!)
memcached -u "$(id -un)" -l 127.0.0.1 -p 18195 -m 64 -I 2m & pids+=($!)
sleep 1
(cd "$tmp/root" && memccp --servers=127.0.0.1:18195 small large)
# CPU ticks (user + system, all threads) of a peerpath server, to charge each run its CPU.
# nginx's worker (the master, daemon off, only supervises) and memcached are charged the same way.
nginx_worker=$(pgrep -P "${pids[0]}" | head -1)
declare -A pid_of=(["peerpath host"]=${pp_pids[0]} ["peerpath host no cache"]=${pp_pids[1]} ["peerpath zerocopy"]=${pp_pids[2]} ["peerpath devmem"]=${pp_pids[3]} ["peerpath send-zc"]=${pp_pids[4]} ["nginx sendfile"]=$nginx_worker ["nginx sendfile off"]=$nginx_worker ["memcached"]=${pids[6]})
ticks() { [ -n "${pid_of[$1]:-}" ] && awk '{print $14 + $15}' "/proc/${pid_of[$1]}/stat" || echo 0; }
hz=$(getconf CLK_TCK)
servers=("nginx sendfile:18190" "nginx sendfile off:18189" "peerpath host:18191" "peerpath host no cache:18200" "peerpath zerocopy:18192" "peerpath send-zc:18198" "peerpath devmem:18196")
kv=("memcached:18195" "peerpath host:18193" "peerpath host no cache:18201" "peerpath zerocopy:18194" "peerpath send-zc:18199" "peerpath devmem:18197")
for ((r = 0; r < rounds; r++)); do
    for obj in small large; do
        for s in "${servers[@]}"; do
            name=${s%%:*} port=${s##*:}
            t0=$(ticks "$name")
            wrk -t"$wrk_threads" -c"$conns" -d"${seconds}s" "http://127.0.0.1:$port/$obj" > "$tmp/wrk.txt"
            t1=$(ticks "$name")
            n=$(awk '/requests in/ {print $1}' "$tmp/wrk.txt")
            awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f\n", (n > 0) ? (b - a) / hz * 1e6 / n : 0 }' >> "$tmp/cpu.$obj.${name// /_}"
            rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk.txt")
            mbs=$(awk '/^Transfer\/sec/ {v=$2; if (v ~ /GB/) {sub(/GB/,"",v); v*=1024} else if (v ~ /KB/) {sub(/KB/,"",v); v/=1024} else sub(/MB/,"",v); print v*1.048576}' "$tmp/wrk.txt")
            grep -q "Non-2xx" "$tmp/wrk.txt" && { echo "CHECK FAILED: $name $obj answered errors" >&2; exit 1; }
            echo "$rps" >> "$tmp/rps.$obj.${name// /_}"
            echo "$mbs" >> "$tmp/mbs.$obj.${name// /_}"
        done
        for s in "${kv[@]}"; do
            name=${s%%:*} port=${s##*:}
            t0=$(ticks "$name")
            line=$("$pp" bench-kv --server "127.0.0.1:$port" --key "$obj" -c "$conns" --seconds "$seconds")
            t1=$(ticks "$name")
            n=$(echo "$line" | sed 's/.*: \([0-9]*\) requests in .*/\1/')
            awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f\n", (n > 0) ? (b - a) / hz * 1e6 / n : 0 }' >> "$tmp/kvcpu.$obj.${name// /_}"
            echo "$line" | sed 's/.*: \([0-9]*\) requests\/s, \([0-9.]*\) MB\/s.*/\1/' >> "$tmp/kvrps.$obj.${name// /_}"
            echo "$line" | sed 's/.*requests\/s, \([0-9.]*\) MB\/s.*/\1/' >> "$tmp/kvmbs.$obj.${name// /_}"
        done
    done
done
# The servers' own reports (SIGTERM: each prints it and exits): host CPU and memory per request,
# over everything it served in the run (HTTP and memcached, both objects).
kill -TERM "${pp_pids[@]}" 2>/dev/null
for p in "${pp_pids[@]}"; do wait "$p" 2>/dev/null; done
median() { sort -g "$1" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f", m}'; }
{
echo "# peerpath serve beside nginx, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r); $(nginx -v 2>&1); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)."
echo "Binary: $pp ($("$pp" --version 2>/dev/null | head -1))."
echo "Command: \`bench/serve.sh --rounds $rounds --seconds $seconds --connections $conns --wrk-threads $wrk_threads\`: wrk -t$wrk_threads -c$conns -d${seconds}s over loopback, medians of $rounds rounds; client and servers share the machine. Measured on this host. Server CPU per request: the server process's user + system time over the client's run (/proc/PID/stat; nginx: its one worker) over the client's request count; devmem's emulated NIC is a process of its own, not counted (it stands for the NIC)."
echo
echo "| protocol | object | server | requests/s | MB/s | server CPU us per request |"
echo "|---|---|---|---|---|---|"
for obj in small large; do
    for s in "${servers[@]}"; do
        name=${s%%:*}
        cpu=-; [ -n "${pid_of[$name]:-}" ] && cpu=$(sort -g "$tmp/cpu.$obj.${name// /_}" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.1f", m}')
        echo "| HTTP (wrk) | $([ $obj = small ] && echo 4 KiB || echo 1 MiB) | $name | $(median "$tmp/rps.$obj.${name// /_}") | $(median "$tmp/mbs.$obj.${name// /_}") | $cpu |"
    done
done
for obj in small large; do
    for s in "${kv[@]}"; do
        name=${s%%:*}
        cpu=$(sort -g "$tmp/kvcpu.$obj.${name// /_}" | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.1f", m}')
        echo "| memcached get (bench-kv) | $([ $obj = small ] && echo 4 KiB || echo 1 MiB) | $name | $(median "$tmp/kvrps.$obj.${name// /_}") | $(median "$tmp/kvmbs.$obj.${name// /_}") | $cpu |"
    done
done
echo
echo "peerpath's own reports over the whole run (every object and protocol; host CPU is the serve process's, not the emulated NIC's):"
echo
echo "| mode | requests | host CPU us per request | payload bytes through its memory per request | payload bytes sent from host memory per request | cache (host or NIC memory) hits / misses / evictions | SEND_ZC: bytes the kernel copied after all |"
echo "|---|---|---|---|---|---|---|"
for m in host host-nocache zerocopy send-zc devmem; do
    python3 - "$tmp/$m.report" "$m" <<'PY' || echo "| $m | report missing |"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print(f"| {sys.argv[2]} | no report |||||")
    sys.exit(0)
n = r.get("nic") or r.get("host_cache") or {}
nic = f"{n.get('hits', 0)} / {n.get('misses', 0)} / {n.get('evictions', 0)}" if n else "-"
z = r.get("send_zc")
zc = f"{z['kernel_copied_bytes']} of {z['bytes']}" if z else "-"
print(f"| {sys.argv[2]} | {r['requests']} | {r['host_cpu_us_per_request']:.1f} | {r['host_memory_payload_bytes_per_request']:.0f} | {r['payload_bytes_from_host_memory_per_request']:.0f} | {nic} | {zc} |")
PY
done
} | tee ${out:+"$out"}
