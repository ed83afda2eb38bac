#!/usr/bin/env bash
# bench/serve-connections.sh - many connections (issue 21's event loop): GETs from wrk with N busy
# keep-alive connections, and with 16 busy ones while M idle connections stay open (opened first;
# half of them send half a request head and stop, as slowloris clients do), for nginx (sendfile on,
# one worker, worker_connections 16384) and one or more peerpath builds in one or more modes, side
# by side in one run: each round runs every load on every server in turn (so two builds are
# compared within the same stretch of a noisy machine).
#
# Usage: bench/serve-connections.sh [--peerpath BIN[=LABEL]]... [--modes zerocopy] [--rounds 3]
#            [--seconds 5] [--objects small] [--busy "16 256 1024"] [--idle 2000] [--out FILE]
#
# Objects: small (4 KiB) and large (1 MiB) files on /dev/shm. --idle 0 leaves the idle load out.
# Columns: requests/s answered 200 (wrk's rate less its non-2xx answers), the answers that were
# not 200 plus wrk's socket errors (an older peerpath, a thread per connection, refused connections
# past 256 with 503), the server's threads in the middle of the run (/proc/PID/status), and its CPU
# time per request (user + system over the run / requests). Medians over the rounds. Measured on
# this host; client and servers share its cores.
set -euo pipefail
argv=("$@")
cd "$(dirname "$0")/.."
bins=() modes=zerocopy objects=small rounds=3 seconds=5 busy="16 256 1024" idle=2000 out=""
while [ $# -gt 0 ]; do
    case $1 in
        --peerpath) bins+=("$2"); shift 2 ;; --rounds) rounds=$2; shift 2 ;; --seconds) seconds=$2; shift 2 ;;
        --busy) busy=$2; shift 2 ;; --idle) idle=$2; shift 2 ;; --out) out=$2; shift 2 ;;
        --modes) modes=$2; shift 2 ;; --objects) objects=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v wrk >/dev/null && command -v nginx >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk nginx >/dev/null
if [ ${#bins[@]} -eq 0 ]; then
    cargo build --release --locked -q -p peerpath-cli
    bins=("$PWD/target/release/peerpath=this tree")
fi
ulimit -n "$(ulimit -Hn)"
tmp=$(mktemp -d /dev/shm/bench-conns.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/root" "$tmp/nginx/logs"
chmod 755 "$tmp" "$tmp/root"  # nginx's worker runs as www-data
head -c 4096 /dev/urandom > "$tmp/root/small"
head -c $((1 << 20)) /dev/urandom > "$tmp/root/large"
cat > "$tmp/nginx/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 65536;
daemon off;
error_log $tmp/nginx/logs/error.log;
pid $tmp/nginx/nginx.pid;
events { worker_connections 16384; }
http { sendfile on; tcp_nopush on; access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:18290; root $tmp/root; } }
CONF
nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" & pids+=($!)
sleep 0.5
servers=("nginx sendfile:18290:$(pgrep -P "${pids[0]}" | head -1)")
port=18291
for b in "${bins[@]}"; do
    bin=${b%%=*} label=${b#*=}
    [ "$label" = "$b" ] && label=$bin
    for m in $modes; do
        "$bin" serve "$tmp/root" --listen "127.0.0.1:$port" --mode "$m" 2>/dev/null >/dev/null & pids+=($!)
        servers+=("peerpath $m, $label:$port:$!")
        port=$((port + 1))
    done
done
sleep 1
# Holds M connections open: half idle, half with half a request head sent; until killed.
cat > "$tmp/hold.py" <<'PY'
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
held = []
for k in range(n):
    try:
        s = socket.create_connection(("127.0.0.1", port))
    except OSError:
        break
    if k % 2:
        s.sendall(b"GET /small HTTP/1.1\r\nHost: sl")
    held.append(s)
print(len(held), flush=True)
time.sleep(3600)
PY
loads=()
for o in $objects; do
    size=$([ "$o" = small ] && echo "4 KiB" || echo "1 MiB")
    for n in $busy; do loads+=("$size, $n busy:$n:0:$o"); done
    [ "$idle" -gt 0 ] && loads+=("$size, 16 busy + $idle idle:16:$idle:$o")
done
for ((r = 0; r < rounds; r++)); do
    for l in "${loads[@]}"; do
        IFS=: read -r lname conns nidle obj <<< "$l"
        for s in "${servers[@]}"; do
            IFS=: read -r sname sport spid <<< "$s"
            key=$(echo "$lname.$sname" | tr -c 'A-Za-z0-9.\n' _)
            hold=""
            if [ "$nidle" -gt 0 ]; then
                python3 "$tmp/hold.py" "$sport" "$nidle" > "$tmp/held" & hold=$!
                for _ in $(seq 100); do [ -s "$tmp/held" ] && break; sleep 0.1; done
            fi
            t0=$(awk '{print $14 + $15}' "/proc/$spid/stat")
            (sleep "$(echo "$seconds / 2" | bc -l)"; awk '/^Threads:/ {print $2}' "/proc/$spid/status" >> "$tmp/thr.$key") &
            wrk -t2 -c"$conns" -d"${seconds}s" "http://127.0.0.1:$sport/$obj" > "$tmp/wrk.txt" 2>&1 || true
            t1=$(awk '{print $14 + $15}' "/proc/$spid/stat")
            [ -n "$hold" ] && { kill "$hold"; wait "$hold" 2>/dev/null || true; rm -f "$tmp/held"; }
            python3 - "$tmp/wrk.txt" "$t0" "$t1" "$(getconf CLK_TCK)" >> "$tmp/res.$key" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", t).group(1)) if re.search(r"(\d+) requests in", t) else 0
rps = float(re.search(r"Requests/sec:\s*([\d.]+)", t).group(1)) if "Requests/sec" in t else 0.0
bad = int(re.search(r"Non-2xx or 3xx responses: (\d+)", t).group(1)) if "Non-2xx" in t else 0
m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
errs = sum(int(x) for x in m.groups()) if m else 0
cpu = (int(sys.argv[3]) - int(sys.argv[2])) / int(sys.argv[4])
print(f"{rps * (n - bad) / n if n else 0:.0f} {bad + errs} {cpu * 1e6 / n if n else 0:.1f}")
PY
        done
    done
done
med() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) {print "-"; exit} m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.0f", m}'; }
medf() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) {print "-"; exit} m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.1f", m}'; }
{
echo "# peerpath serve with many connections, beside nginx, $(date -u +%F)"
echo
echo "Machine: $(uname -n), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(uname -r); $(nginx -v 2>&1); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)."
echo "Command: \`bench/serve-connections.sh ${argv[*]}\`: wrk -t2 -c<busy> -d${seconds}s over loopback, medians of $rounds rounds; idle connections held by a Python process (half of them with half a request head sent). Measured on this host."
for b in "${bins[@]}"; do echo "peerpath ${b#*=}: ${b%%=*}"; done
echo
echo "| load | server | 200 answers/s | other answers + socket errors | server threads | server CPU us per request |"
echo "|---|---|---|---|---|---|"
for l in "${loads[@]}"; do
    IFS=: read -r lname _ _ _ <<< "$l"
    for s in "${servers[@]}"; do
        IFS=: read -r sname _ _ <<< "$s"
        key=$(echo "$lname.$sname" | tr -c 'A-Za-z0-9.\n' _)
        echo "| $lname | $sname | $(awk '{print $1}' "$tmp/res.$key" | med) | $(awk '{print $2}' "$tmp/res.$key" | med) | $(med < "$tmp/thr.$key") | $(awk '{print $3}' "$tmp/res.$key" | medf) |"
    done
done
} > "$tmp/table.md"
cat "$tmp/table.md"
if [ -n "$out" ]; then mkdir -p "$(dirname "$out")"; cp "$tmp/table.md" "$out"; fi
