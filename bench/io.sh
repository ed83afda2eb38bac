#!/usr/bin/env bash
# bench/io.sh - peerpath bench-io against fio: O_DIRECT sequential sweeps and
# 4 KiB random latency, same file, same block size, same queue depth.
#
# Usage: bench/io.sh [--file PATH] [--size 1G] [--label NAME] [--peerpath PATH]
#                    [--runtime-s N] [--lat-runtime-s N] [--repeats N]
#                    [--sweep-bs LIST] [--sweep-qd LIST] [--memory host|shm]
#                    [--keep-file]
#
#   --file PATH        the file both tools use (default /var/tmp/peerpath-io-bench.dat);
#                      laid out with random data (O_DIRECT) if shorter than --size,
#                      removed at the end unless --keep-file or it existed before
#   --size S           bytes of the file used (default 1G; K, M, G suffixes)
#   --label NAME       machine kind for the result file name (default <hostname>-<nproc>cpu)
#   --peerpath PATH    peerpath binary (default target/release/peerpath)
#   --runtime-s N      time limit per point of the side-by-side sweep (default 1); a
#                      sequential point also stops after one pass over the file
#                      (fio: size= + runtime=); the picture's sweep uses half of it
#   --lat-runtime-s N  time of each 4 KiB random latency run (default 3)
#   --repeats N        interleaved peerpath/fio runs of each target point (default 7;
#                      which tool goes first alternates)
#   --sweep-bs LIST    block sizes of the sweep (default 4K,16K,64K,256K,1M,4M,16M)
#   --sweep-qd LIST    queue depths of the sweep (default 1,4,16)
#   --memory M         peerpath's buffers: host (default) or shm (emulated device memory)
#   --keep-file        do not remove the file at the end
#
# Writes bench/results/<date>-io-<label>.md (commands, machine, tables, the
# issue's targets as ratios), <same>.svg (peerpath's sweep) and <same>.json
# (every number both tools reported).
#
# fio runs with: --ioengine=io_uring --direct=1 --bs --iodepth --size --runtime
# --norandommap --randrepeat=0 --lat_percentiles=1 (latency = submit to
# completion, what peerpath measures), one job, no fixed buffers (peerpath never
# registers buffers: P2P memory cannot be).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
ORIG_CMDLINE=$(printf '%q ' "$0" "$@")
ORIG_CMDLINE=${ORIG_CMDLINE% }

log() { printf '[io] %s\n' "$*" >&2; }
die() {
    printf '\n[io] ERROR: %s\n\n' "$*" >&2
    exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

file=/var/tmp/peerpath-io-bench.dat
size=1G
label=""
pp=$REPO_ROOT/target/release/peerpath
runtime=1
lat_runtime=3
repeats=7
sweep_bs=4K,16K,64K,256K,1M,4M,16M
sweep_qd=1,4,16
memory=host
keep=0
while [ $# -gt 0 ]; do
    case $1 in
        --file) file=${2:?--file needs a value}; shift ;;
        --size) size=${2:?--size needs a value}; shift ;;
        --label) label=${2:?--label needs a value}; shift ;;
        --peerpath) pp=${2:?--peerpath needs a value}; shift ;;
        --runtime-s) runtime=${2:?--runtime-s needs a value}; shift ;;
        --lat-runtime-s) lat_runtime=${2:?--lat-runtime-s needs a value}; shift ;;
        --repeats) repeats=${2:?--repeats needs a value}; shift ;;
        --sweep-bs) sweep_bs=${2:?--sweep-bs needs a value}; shift ;;
        --sweep-qd) sweep_qd=${2:?--sweep-qd needs a value}; shift ;;
        --memory) memory=${2:?--memory needs a value}; shift ;;
        --keep-file) keep=1 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

command -v fio >/dev/null || die "fio is not installed (Debian: apt-get install fio)"
command -v python3 >/dev/null || die "python3 is needed to write the report"
[ -x "$pp" ] || die "no peerpath binary at $pp (cargo build --release, or --peerpath PATH)"
case $memory in host | shm) ;; *) die "--memory must be host or shm" ;; esac

to_bytes() {
    local s=$1 n u
    n=${s%%[!0-9]*}
    u=${s#"$n"}
    [ -n "$n" ] || die "'$s' is not a size"
    case ${u^^} in
        "" | B) echo "$n" ;;
        K | KB | KIB) echo $((n << 10)) ;;
        M | MB | MIB) echo $((n << 20)) ;;
        G | GB | GIB) echo $((n << 30)) ;;
        *) die "unknown size unit in '$s'" ;;
    esac
}
size_bytes=$(to_bytes "$size")
nproc=$(nproc)
label=${label:-$(hostname -s 2>/dev/null || hostname)-${nproc}cpu}
date=$(date +%F)
results=$REPO_ROOT/bench/results
mkdir -p "$results"
base=$results/$date-io-$label
work=$(mktemp -d "${TMPDIR:-/tmp}/peerpath-io.XXXXXX")

existed=0
[ -e "$file" ] && existed=1
cleanup() {
    rm -rf -- "$work"
    if [ "$keep" = 0 ] && [ "$existed" = 0 ]; then rm -f -- "$file"; fi
}
trap cleanup EXIT

# Lay the file out with real data: reads of unwritten (fallocated) extents
# never reach the device and would measure nothing.
cur=0
[ -f "$file" ] && cur=$(stat -c %s -- "$file")
laid_out=0
if [ "$cur" -lt "$size_bytes" ]; then
    log "laying out $file: $size_bytes bytes of random data (O_DIRECT)"
    dd if=/dev/urandom of="$file" bs=1M count=$(((size_bytes + (1 << 20) - 1) >> 20)) oflag=direct conv=notrunc,fsync status=none
    laid_out=1
fi

# Every command run, in order, for the report.
: >"$work/commands.txt"
run_pp() { # name args...
    local name=$1
    shift
    printf '%s\n' "$(printf '%q ' "$pp" bench-io "$@")" >>"$work/commands.txt"
    "$pp" bench-io "$@" --json >"$work/$name.json"
}
run_fio() { # name rw bs qd runtime
    local name=$1 rw=$2 bs=$3 qd=$4 rt=$5
    local cmd=(fio --name=pp-compare --filename="$file" --size="$size_bytes" --rw="$rw" --bs="$bs" --iodepth="$qd"
        --ioengine=io_uring --direct=1 --runtime="$rt" --norandommap --randrepeat=0
        --lat_percentiles=1 --percentile_list=50:99:99.9 --output-format=json --output="$work/$name.json")
    printf '%s\n' "$(printf '%q ' "${cmd[@]}")" >>"$work/commands.txt"
    "${cmd[@]}" >/dev/null
}

start=$(date +%s)
svg_runtime=$(python3 -c "print(max(0.1, $runtime / 2))")
log "peerpath sweep for the picture: bs $sweep_bs x qd $sweep_qd, read and write, $svg_runtime s or one pass per point"
run_pp pp-sweep --file "$file" --size "$size_bytes" --sweep-bs "$sweep_bs" --sweep-qd "$sweep_qd" \
    --rw both --random skip --runtime-s "$svg_runtime" --memory "$memory" --svg "$base.svg"

log "side by side: every point, peerpath then fio, $runtime s or one pass each"
for rw in read write; do
    for bs in ${sweep_bs//,/ }; do
        for qd in ${sweep_qd//,/ }; do
            run_pp "pp-point-$rw-$bs-$qd" --file "$file" --size "$size_bytes" --sweep-bs "$bs" --sweep-qd "$qd" \
                --rw "$rw" --random skip --runtime-s "$runtime" --memory "$memory"
            run_fio "fio-point-$rw-$bs-$qd" "$rw" "$bs" "$qd" "$runtime"
        done
    done
done

log "targets: bs=1M qd=16 read and write, $repeats interleaved runs each"
# Which tool goes first alternates from run to run: a sequential write leaves the
# VM host's cache dirty, which the next writer of the same blocks finds (a run
# with peerpath always first measured its writes 0.91x fio's).
for i in $(seq 1 "$repeats"); do
    for rw in read write; do
        pp_target() {
            run_pp "pp-target-$rw-$i" --file "$file" --size "$size_bytes" --sweep-bs 1M --sweep-qd 16 --rw "$rw" \
                --random skip --runtime-s 30 --memory "$memory"
        }
        if [ $((i % 2)) -eq 1 ]; then
            pp_target
            run_fio "fio-target-$rw-$i" "$rw" 1M 16 30
        else
            run_fio "fio-target-$rw-$i" "$rw" 1M 16 30
            pp_target
        fi
    done
done

log "targets: 4 KiB random read and write latency at qd 1, $lat_runtime s, $repeats interleaved runs each"
for i in $(seq 1 "$repeats"); do
    for rw in read write; do
        pp_rand() {
            run_pp "pp-rand-$rw-$i" --file "$file" --size "$size_bytes" --rw "$rw" --random only \
                --runtime-s "$lat_runtime" --memory "$memory"
        }
        if [ $((i % 2)) -eq 1 ]; then
            pp_rand
            run_fio "fio-rand-$rw-$i" "rand$rw" 4K 1 "$lat_runtime"
        else
            run_fio "fio-rand-$rw-$i" "rand$rw" 4K 1 "$lat_runtime"
            pp_rand
        fi
    done
done
end=$(date +%s)

# Machine facts.
{
    printf 'nproc\t%s\n' "$nproc"
    printf 'cpu\t%s\n' "$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    printf 'kernel\t%s\n' "$(uname -srm)"
    printf 'memory\t%s\n' "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    printf 'filesystem\t%s\n' "$(df -PT -- "$file" | awk 'NR == 2 { print $2 " on " $1 " (mounted at " $7 ")" }')"
    printf 'fio\t%s\n' "$(fio --version)"
    printf 'peerpath\t%s\n' "$("$pp" --version)"
    printf 'wall_s\t%s\n' "$((end - start))"
    printf 'laid_out\t%s\n' "$laid_out"
} >"$work/machine.tsv"

python3 - "$work" "$base" "$ORIG_CMDLINE" "$file" "$size_bytes" "$repeats" "$runtime" "$lat_runtime" "$memory" "$sweep_bs" "$sweep_qd" <<'PY'
import json, os, statistics, sys

work, base, cmdline, path, size_bytes, repeats, runtime, lat_runtime, memory, sweep_bs, sweep_qd = sys.argv[1:]
size_bytes, repeats = int(size_bytes), int(repeats)

def load(name):
    with open(os.path.join(work, name + ".json")) as f:
        return json.load(f)

def fio_point(name):
    d = load(name)
    job = d["jobs"][0]
    side = job["read"] if job["read"]["total_ios"] > 0 else job["write"]
    lat = side["lat_ns"]
    pct = lat.get("percentile", {})
    return {
        "gb_per_s": side["bw_bytes"] / 1e9,
        "iops": side["iops"],
        "bytes": side["io_bytes"],
        "ops": side["total_ios"],
        "p50_us": pct.get("50.000000", 0) / 1e3,
        "p99_us": pct.get("99.000000", 0) / 1e3,
        "p99_9_us": pct.get("99.900000", 0) / 1e3,
        "mean_us": lat["mean"] / 1e3,
    }

def pp_point(p):
    l = p["latency"]
    return {
        "gb_per_s": p["throughput_gb_per_s"], "iops": p["iops"], "bytes": p["bytes"], "ops": p["ops"],
        "p50_us": l["p50_us"], "p99_us": l["p99_us"], "p99_9_us": l["p99_9_us"], "mean_us": l["mean_us"],
        # What ran: the asked queue depth capped at the blocks the file holds (absent before 2026-12-04).
        "qd_in_flight": p.get("queue_depth_in_flight", p["queue_depth"]),
    }

def size_of(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)

def human(b):
    for u, sh in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << sh and b % (1 << sh) == 0:
            return f"{b >> sh}{u}"
    return str(b)

machine = dict(line.rstrip("\n").split("\t", 1) for line in open(os.path.join(work, "machine.tsv")))
commands = open(os.path.join(work, "commands.txt")).read().splitlines()

sweep = load("pp-sweep")
rows = []
for rw in ("read", "write"):
    for bs_s in sweep_bs.split(","):
        for qd_s in sweep_qd.split(","):
            p = load(f"pp-point-{rw}-{bs_s}-{qd_s}")["points"][0]
            f = fio_point(f"fio-point-{rw}-{bs_s}-{qd_s}")
            rows.append({"rw": rw, "bs": p["block_size_bytes"], "qd": p["queue_depth"], "peerpath": pp_point(p), "fio": f})

def med(xs):
    return statistics.median(xs)

targets = {}
for rw in ("read", "write"):
    pp_runs = [pp_point(load(f"pp-target-{rw}-{i}")["points"][0]) for i in range(1, repeats + 1)]
    fio_runs = [fio_point(f"fio-target-{rw}-{i}") for i in range(1, repeats + 1)]
    targets[f"seq_{rw}_1M_qd16"] = {"peerpath": pp_runs, "fio": fio_runs}
for rw in ("read", "write"):
    pp_runs = [pp_point(load(f"pp-rand-{rw}-{i}")["points"][0]) for i in range(1, repeats + 1)]
    fio_runs = [fio_point(f"fio-rand-{rw}-{i}") for i in range(1, repeats + 1)]
    targets[f"rand_{rw}_4K_qd1"] = {"peerpath": pp_runs, "fio": fio_runs}

out = []
w = out.append
w(f"# I/O sweep: peerpath bench-io vs fio ({os.path.basename(base)})")
w("")
w(f"All numbers **measured on this machine** ({machine['nproc']} vCPU VM), {sweep['memory_text']}.")
w("peerpath and fio use the same file, block size and queue depth, io_uring, O_DIRECT, one thread, no registered buffers.")
w("")
w("## Machine")
w("")
w("| | |")
w("|---|---|")
for k in ("nproc", "cpu", "kernel", "memory", "filesystem", "fio", "peerpath"):
    w(f"| {k} | {machine[k]} |")
w(f"| file | `{path}`, {human(size_bytes)} used, {'laid out by this run with random data (dd oflag=direct)' if machine['laid_out'] == '1' else 'existing'} |")
w(f"| wall time of the whole run | {machine['wall_s']} s |")
w("")
w("## Command")
w("")
w("```")
w(cmdline)
w("```")
w("")

def ratio(a, b):
    return a / b if b else float("nan")

w("## The issue's targets")
w("")
w(f"Medians of {repeats} interleaved runs each (peerpath then fio in odd runs, fio then peerpath in even ones); \"met\" compares the medians. The paired column is the median of run i of peerpath over run i of fio (neighbours in time, so slow drift of the VM's disk cancels). A sequential run stops after one pass over the {human(size_bytes)} file (both tools).")
w("")
w("| point | metric | peerpath | fio | peerpath / fio | median of paired ratios | target | met |")
w("|---|---|---:|---:|---:|---:|---|---|")
verdicts = []
for rw in ("read", "write"):
    t = targets[f"seq_{rw}_1M_qd16"]
    a, b = med([x["gb_per_s"] for x in t["peerpath"]]), med([x["gb_per_s"] for x in t["fio"]])
    r = ratio(a, b)
    paired = med([ratio(x["gb_per_s"], y["gb_per_s"]) for x, y in zip(t["peerpath"], t["fio"])])
    ok = r >= 0.95
    verdicts.append((f"seq {rw} 1M qd16 throughput", ok, r))
    w(f"| seq {rw}, bs=1M, qd=16 | GB/s | {a:.3f} | {b:.3f} | {r:.3f} | {paired:.3f} | >= 0.95 | {'yes' if ok else 'NO'} |")
for rw in ("read", "write"):
    t = targets[f"rand_{rw}_4K_qd1"]
    for key, name in (("p50_us", "p50"), ("p99_us", "p99"), ("p99_9_us", "p99.9")):
        a, b = med([x[key] for x in t["peerpath"]]), med([x[key] for x in t["fio"]])
        r = ratio(a, b)
        paired = med([ratio(x[key], y[key]) for x, y in zip(t["peerpath"], t["fio"])])
        ok = abs(r - 1) <= 0.10
        verdicts.append((f"rand {rw} 4K {name}", ok, r))
        w(f"| rand {rw}, bs=4K, qd=1 | latency {name} (us) | {a:.1f} | {b:.1f} | {r:.3f} | {paired:.3f} | within 10 % | {'yes' if ok else 'NO'} |")
w("")
met = sum(1 for _, ok, _ in verdicts if ok)
w(f"**{met} of {len(verdicts)} target rows met.** " + ("All targets met." if met == len(verdicts) else "Not met: " + ", ".join(f"{n} ({r:.3f})" for n, ok, r in verdicts if not ok) + "."))
w("")
w("Every run of the target points:")
w("")
w("| point | tool | " + " | ".join(f"run {i}" for i in range(1, repeats + 1)) + " |")
w("|---|---|" + "---:|" * repeats)
for name, t in targets.items():
    key = "gb_per_s" if name.startswith("seq") else "p50_us"
    unit = "GB/s" if key == "gb_per_s" else "p50 us"
    for tool in ("peerpath", "fio"):
        vals = " | ".join(f"{x[key]:.3f}" if key == "gb_per_s" else f"{x[key]:.1f} (p99 {x['p99_us']:.0f}, p99.9 {x['p99_9_us']:.0f})" for x in t[tool])
        w(f"| {name} ({unit}) | {tool} | {vals} |")
w("")
w("## Sweep, side by side")
w("")
w(f"One run per point and tool, interleaved (peerpath, then fio, point by point): {runtime} s or one pass per point.")
w(f"Picture of a separate peerpath sweep ({sweep['runtime_per_point_s']} s or one pass per point, run first): [{os.path.basename(base)}.svg]({os.path.basename(base)}.svg).")
w("")
w("| rw | bs | qd | peerpath GB/s | fio GB/s | ratio | peerpath p50 / p99 / p99.9 us | fio p50 / p99 / p99.9 us |")
w("|---|---:|---:|---:|---:|---:|---|---|")
for r in rows:
    a, b = r["peerpath"], r["fio"]
    qd = r["qd"] if a["qd_in_flight"] == r["qd"] else f"{r['qd']} ({a['qd_in_flight']} in flight)"
    w(f"| {r['rw']} | {human(r['bs'])} | {qd} | {a['gb_per_s']:.3f} | {b['gb_per_s']:.3f} | {ratio(a['gb_per_s'], b['gb_per_s']):.2f} | "
      f"{a['p50_us']:.0f} / {a['p99_us']:.0f} / {a['p99_9_us']:.0f} | {b['p50_us']:.0f} / {b['p99_us']:.0f} / {b['p99_9_us']:.0f} |")
w("")
w("## Notes")
w("")
w("- Latency is from submission to completion as each tool sees it (peerpath: submit call to reaped completion; fio: `lat`, with `--lat_percentiles=1`). peerpath's percentiles come from a histogram with < 0.8 % bucket error, fio's from one with ~1.6 %.")
w("- peerpath does one untimed transfer per buffer before timing each point (the first DMA into fresh pages faults them in); fio fills its buffers before starting.")
w("- Random offsets are new in every run for both tools (fio `--randrepeat=0`; peerpath draws a fresh seed unless given `--seed`, and prints it). Until 2026-11-23 peerpath repeated one seed, so each of its runs rewrote the blocks its last run had written: on this VM that alone made its 4 KiB random writes ~10 % slower at p50 than with fresh offsets (5 paired runs against fio in between), which is where its write-latency rows had missed.")
spread = []
for name in ("seq_read_1M_qd16", "seq_write_1M_qd16"):
    xs = [x["gb_per_s"] for x in targets[name]["fio"]]
    spread.append(f"{name}: {min(xs):.2f}-{max(xs):.2f} GB/s")
for name in ("rand_read_4K_qd1", "rand_write_4K_qd1"):
    xs = [x["p99_us"] for x in targets[name]["fio"]]
    spread.append(f"{name} p99: {min(xs):.0f}-{max(xs):.0f} us")
w("- This is a shared VM on a virtio disk: fio alone, repeating the same target point, ranged " + "; ".join(spread) + ". A 5 % (throughput) or 10 % (latency) target is inside that noise, so a row can pass or fail by chance; compare ratios within this file, not absolute numbers across files.")
w("- Buffers: " + sweep["memory_text"] + ". Writes carry: " + sweep["write_payload"] + "; fio writes its own pseudo-random buffers.")
for n in sweep.get("notes", []):
    w(f"- peerpath: {n}")
w("")
w("## Exact commands, in the order they ran")
w("")
w("```")
out.extend(commands)
w("```")
w("")
with open(base + ".md", "w") as f:
    f.write("\n".join(out))
with open(base + ".json", "w") as f:
    json.dump({"machine": machine, "command": cmdline, "sweep_peerpath": sweep, "sweep": rows, "targets": targets,
               "verdicts": [{"row": n, "met": ok, "ratio": r} for n, ok, r in verdicts]}, f, indent=1)
print(base + ".md")
PY
log "wrote $base.md, $base.svg and $base.json"
