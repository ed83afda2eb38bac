#!/usr/bin/env bash
# bench/gpu-machine.sh - everything one use of the lent GPU machine measures, in one call.
#
# Usage (repository root): bench/gpu-machine.sh [STEP...]
#   steps (default: sweep gpu scaling)
#     sweep    bench/gpu-sweep.sh: --engine gpu in memory over CUDA streams x queue depth, on the
#              slice x 32 (1.5 GiB), beside the CPU on every core ($PP_SWEEP_CONFIGS, else the
#              script's default; $PP_SWEEP_ROUNDS rounds, default 2). The next run to make:
#              PP_SWEEP_CONFIGS="1:128:commands:::1M 1:128 1:64" (1 MiB chunks against the
#              default 16 MiB; the report's device `profile` line says where the batches' time went)
#     decompress  decompression of the slice x 8 into tmpfs at every core (mapped target and
#              written, 5 interleaved runs each), 8 threads and 1 thread; each run's wall time
#              and decode mode from its report
#     gpudecompress  decompress --engine gpu (its defaults) against the CPU on every core, 1 MiB
#              and 64 KiB members of the slice x 8 into tmpfs, 5 interleaved rounds; verify on the GPU;
#              a corrupt member on the GPU and the CPU; the peerpath-gpu crate's tests where
#              .gpu/gputests(.xz) is carried
#     ceilings what holds decompression at every core: decompress into tmpfs against verify (no
#              output) at 1/4/8/16 threads, interleaved, and the kernel's rate of filling one tmpfs
#              file from k processes (fallocate, dd) against k files
#     workerreads  compression, then decompression, in memory, the workers reading their own
#              chunks (members) against io_uring's reads, at 1/8/15/16 threads, interleaved
#     fixed    the GPU job's fixed costs: 4 MiB on the GPU, default GPU memory against 512M, the
#              report's wall and the opening's parts against the process's wall
#     allocation  decompression into one tmpfs file: mapped, its pages allocated ahead by one
#              thread or by each worker, against written (one thread's copy), at 1/2/4/8/15/16
#              threads, interleaved (the default maps from 8 workers: this checks where)
#     ec       erasure coding in memory: ec encode RS(4,2) at -T 1/2/4/8/16, repair (every core)
#              and decode (intact, two shards lost; one reading thread), cp beside; 3 interleaved rounds, every set
#              and every decode checked
#     gpuec    ec encode --engine gpu (peerpath's Reed-Solomon and CRC-32 kernels, no nvCOMP) of the
#              slice x 8 in memory, RS(4,2) and RS(10,4) with 1 MiB units, beside the CPU at -T 1 and
#              every core, then verify, decode and repair of the set with 2 shards lost on the GPU and
#              every core; 3 interleaved rounds, every set and decode compared with the CPU's; the
#              peerpath-gpu crate's coding tests (kernels against ISA-L and crc32fast) where
#              gputests is carried
#     gpucrypt encrypt and decrypt --engine gpu (peerpath's AES-256-GCM kernels) of the slice x 8 in
#              memory, 1 MiB blocks, beside the CPU (aws-lc) at -T 1 and every core; 3 interleaved
#              rounds, every GPU file opened on the CPU and every decryption compared with the
#              source; then the chain (compress --ec 4+2 --encrypt) on the GPU against every core,
#              every set restored, and the reverse chain (decompress --ec, a shard lost) on the GPU against
#              every core; the peerpath-gpu crate's AES-GCM, dedup and member-decoding tests where gputests
#              is carried
#     gpuscan  scan --engine gpu (peerpath's scan kernels: the motif as a DFA) of the slice x 8 in
#              memory: FASTA records against a motif, a length histogram, and lines against a motif
#              (grep -cE beside), against the CPU at -T 1 and every core; 3 interleaved rounds, every
#              count compared with the CPU's; the peerpath-gpu crate's scan tests where gputests is carried
#     dedup    dedup store in memory at -T 1/2/4/8/15/16 and --engine gpu (every store's chunks checked
#              against -T 1's),
#              b3sum on 1 and all threads where .gpu/b3sum is carried; 3 interleaved rounds
#     disk     bench/disk-ab.sh: the root disk's O_DIRECT rates (bench-io) and peerpath file to file
#              at every core, 2/4/8 MiB reads, 3 interleaved rounds
#     gpu      bench/gpu.sh: the probe, then gpu/cpu/pigz/igzip on the slice x 8 (384 MiB), disk to
#              disk, tmpfs to disk and in memory, 3 runs each
#     mapped   compress --engine gpu in memory with --gpu-memory-files mapped (the copy engine reads
#              and writes the tmpfs files' pages) against staged and the CPU on every core, in a
#              process of its own and through the job server (and there with 16M and 512M granules
#              beside the default 64M: --gpu-map-granule; and 64 KiB members, then both outputs
#              decompressed on the GPU and every core), 5 interleaved rounds; the probe of
#              /dev/shm first and the gpu crate's mapped-file test; every output checked
#     daemon   the GPU kept open by a job server (peerpath daemon --gpu 0): 384 MiB in memory,
#              compress and decompress on the GPU through the daemon against a process of its
#              own and the CPU on every core, and 4 MiB (the fixed cost), 5 interleaved rounds,
#              each row the client process's wall; outputs checked; the daemon's reports kept
#     gpuio    compress --engine gpu of the slice x 8 from the root disk (O_DIRECT) to it, the GPU
#              reading its sources and writing its targets itself through cuFile (--gpu-io cufile: in compatibility mode
#              there, the path and not a saving) against the window (--gpu-io staged) and the CPU
#              on every core; 3 interleaved rounds, every output decoded and compared; each run's
#              storage line and device profile kept; the peerpath-gpu crate's cuFile tests where
#              gputests is carried
#     scaling  bench/gpu-machine-scaling.sh without disk rows (PP_SCALING_QUICK=1), the mapped
#              output A/B and the machine's ceiling
#
# Needs the carried, git-ignored folder .gpu/, which bench/gpu-pack.sh builds in one command:
# peerpath (or peerpath.xz), slice.fa.xz, libnvcomp.so.6.xz, the .deb files (gputests.xz, b3sum). Everything it writes goes to
# $OUT/<step>/, and at the end into one archive, $OUT/gpu-machine.tgz (the device tool brings
# back at most 8 files), beside $OUT/summary.md (the main tables).
set -uo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/gpu-machine-out}
steps=${*:-sweep gpu scaling}
mkdir -p "$OUT"
t0=$EPOCHREALTIME
say() { printf '[gpu-machine %6.1f s] %s\n' "$(awk -v a="$EPOCHREALTIME" -v b="$t0" 'BEGIN { print a - b }')" "$*" >&2; }
[ -x .gpu/peerpath ] || { xz -dc .gpu/peerpath.xz > .gpu/peerpath && chmod +x .gpu/peerpath; } || { say "no .gpu/peerpath"; exit 2; }
[ -f .gpu/gputests.xz ] && { xz -dc .gpu/gputests.xz > .gpu/gputests && chmod +x .gpu/gputests; }
mkdir -p /dev/shm/nv
[ -s /dev/shm/nv/libnvcomp.so.6 ] || xz -dc .gpu/libnvcomp.so.6.xz > /dev/shm/nv/libnvcomp.so.6
export PEERPATH_NVCOMP=/dev/shm/nv/libnvcomp.so.6
in=/var/tmp/ppin; mkdir -p "$in"
xz -dc .gpu/slice.fa.xz > "$in/slice"
for _ in 1 2 3 4 5 6 7 8; do cat "$in/slice"; done > "$in/x8"
say "$(.gpu/peerpath --version); $(nproc) CPUs; $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader 2>&1 | head -1); steps: $steps"
cl() { # json label table: one run's row (wall, GB/s of output, workers busy, compute CPU, host CPU)
    python3 -c "import json,sys;r=json.load(open(sys.argv[1]));p=r['pipeline'];c=[x for x in r['cpu']['roles'] if x['role'].startswith('compute')];print('| %s | %.3f | %.2f | %.0f%% | %s | %.0f%% |' % (sys.argv[2], r['wall_s'], r['bytes_out']/r['wall_s']/1e9, 100*p['worker_busy_share'], ' '.join('%.2f' % (x['user_s']+x['system_s']) for x in c) or '-', r['cpu']['total_utilisation_pct']))" "$1" "$2" >> "$3" \
        || echo "| $2 | FAILED: $(head -c 300 "$1" | tr '\n' ' ') |" >> "$3"
}
daemon_up() { # socket log: `peerpath daemon --gpu 0` on the socket, its pid in $dpid once it listens
    chmod 700 "$(dirname "$1")" # the daemon takes a socket only in a directory no other user can reach
    .gpu/peerpath daemon --socket "$1" --gpu 0 2> "$2" &
    dpid=$!
    for _ in $(seq 100); do [ -S "$1" ] && break; sleep 0.1; done
}
timed_job() { # dir socket label daemon(0/1) args...: one job with --json, in a process of its own or
    # through the daemon on the socket; its report in dir/r.json (kept as dir/<label>.json), its
    # standard error in dir/r.err, the client process's wall in $pw
    local o=$1 sock=$2 label=$3 via=$4; shift 4
    local t=$EPOCHREALTIME
    if [ "$via" = 1 ]; then PEERPATH_DAEMON=$sock timeout 120 .gpu/peerpath "$@" --json > "$o/r.json" 2> "$o/r.err"; else timeout 120 .gpu/peerpath "$@" --json > "$o/r.json" 2> "$o/r.err"; fi
    pw=$(awk -v a="$EPOCHREALTIME" -v b="$t" 'BEGIN { print a - b }')
    cp "$o/r.json" "$o/$(echo "$label" | tr -c 'a-zA-Z0-9' _).json"
}
for step in $steps; do
    mkdir -p "$OUT/$step"
    case $step in
        sweep)
            for _ in 1 2 3 4; do cat "$in/x8"; done > "$in/x32"
            bench/gpu-sweep.sh --input "$in/x32" --peerpath .gpu/peerpath --rounds "${PP_SWEEP_ROUNDS:-2}" --out "$OUT/sweep" \
                ${PP_SWEEP_CONFIGS:+--configs "$PP_SWEEP_CONFIGS"} ${PP_SWEEP_NO_GZIP_T:+--no-gzip-t} > "$OUT/sweep/log" 2>&1
            rm -f "$in/x32" ;;
        gpu)
            bench/gpu.sh --input "$in/x8" --peerpath .gpu/peerpath --runs 3 --debs .gpu --out "$OUT/gpu" > "$OUT/gpu/log" 2>&1 ;;
        decompress)
            dd=/dev/shm/ppdec; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; n=$(nproc)
            .gpu/peerpath compress -T "$n" -q -f --no-sync "$dd/in" -o "$dd/in.gz"
            one() { # label VAR=VALUE threads
                local label=$1
                env "$2" .gpu/peerpath decompress -T "$3" -f --no-sync "$dd/in.gz" -o "$dd/out" --json > "$OUT/decompress/r.json" 2>&1
                cmp -s "$dd/out" "$dd/in" && ok=ok || ok="WRONG OUTPUT"
                python3 -c "import json,sys;r=json.load(open(sys.argv[1]));p=r['pipeline'];print('| %s | %.3f | %s | %s | %.3f of %.3f | %s |' % (sys.argv[2], r['wall_s'], r['files'][0]['decode_mode'], '%.0f%%' % (100*p['worker_busy_share']), p['orchestrator_wait_s'], p['orchestrator_span_s'], sys.argv[3]))" "$OUT/decompress/r.json" "$label" "$ok" >> "$OUT/decompress/decompress.md" \
                    || echo "| $label | FAILED: $(head -c 200 "$OUT/decompress/r.json") |" >> "$OUT/decompress/decompress.md"
                rm -f "$dd/out"
            }
            { echo "decompress of 384 MiB (slice x 8, peerpath -T $n output) into tmpfs, --no-sync; interleaved"; echo
              echo "| run | wall s | decode mode | workers busy | orchestrator waited s | check |"; echo "|---|---|---|---|---|---|"; } > "$OUT/decompress/decompress.md"
            for r in 1 2 3 4 5; do
                one "-T $n mapped ($r)" PP_X=1 "$n"
                one "-T $n written ($r)" PEERPATH_NO_MAPPED_OUTPUT=1 "$n"
                one "-T 8 mapped ($r)" PP_X=1 8
            done
            for r in 1 2; do one "-T 1 mapped ($r)" PP_X=1 1; done
            rm -rf "$dd" ;;
        gpudecompress)
            # decompress --engine gpu against the CPU on every core, 1 MiB and 64 KiB members, into tmpfs.
            dd=/dev/shm/ppgdec; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; n=$(nproc); o=$OUT/gpudecompress
            .gpu/peerpath compress -T "$n" -q -f --no-sync "$dd/in" -o "$dd/in.gz"
            .gpu/peerpath compress -T "$n" -q -f --no-sync --block-size 64K "$dd/in" -o "$dd/in64k.gz"
            [ -x .gpu/gputests ] && { PEERPATH_NVCOMP_TEST=$PEERPATH_NVCOMP .gpu/gputests --test-threads 1 --nocapture > "$o/gputests.txt" 2>&1; echo "gpu crate tests: exit $?" >> "$o/gputests.txt"; }
            gd() { # label file args...
                local label=$1 f=$2; shift 2
                timeout 60 .gpu/peerpath decompress -f --no-sync "$@" "$dd/$f" -o "$dd/out" --json > "$o/r.json" 2>&1
                cmp -s "$dd/out" "$dd/in" && ok=ok || ok="WRONG OUTPUT"
                python3 -c "import json,sys,re;r=json.load(open(sys.argv[1]));p=r['pipeline'];d=(r.get('devices') or [{}])[0];print('| %s | %.3f | %.2f | %.1f | %s | %s | %s |' % (sys.argv[2], r['wall_s'], r['bytes_out']/r['wall_s']/1e9, r['cpu']['total_utilisation_pct'], '; '.join(map(str,r['fallbacks']))[:160] or 'none', sys.argv[3], (d.get('profile') or '-')[:400]))" "$o/r.json" "$label" "$ok" >> "$o/gpudecompress.md" \
                    || echo "| $label | FAILED: $(head -c 300 "$o/r.json" | tr '\n' ' ') |" >> "$o/gpudecompress.md"
                cp "$o/r.json" "$o/$(echo "$label" | tr -c 'a-zA-Z0-9' _).json"; rm -f "$dd/out"
            }
            { echo "decompress of 384 MiB (slice x 8, peerpath -T $n output, 1 MiB and 64 KiB members) into tmpfs, --no-sync"; echo
              echo "| run | wall s | GB/s | host CPU % of all cores | fallbacks | check | GPU profile |"; echo "|---|---|---|---|---|---|---|"; } > "$o/gpudecompress.md"
            for r in 1 2 3 4 5; do
                gd "cpu -T $n, 1 MiB ($r)" in.gz -T "$n"
                gd "gpu (defaults: -T 4, 96M batches), 1 MiB ($r)" in.gz --engine gpu --no-fallback
                gd "cpu -T $n, 64 KiB ($r)" in64k.gz -T "$n"
                gd "gpu (defaults: -T 4, 96M batches), 64 KiB ($r)" in64k.gz --engine gpu --no-fallback
            done
            timeout 60 .gpu/peerpath verify --engine gpu --no-fallback -T 2 --gpu-batch 192M "$dd/in.gz" > "$o/verify.txt" 2>&1; echo "verify exit $?" >> "$o/verify.txt"
            # A corrupt member: the same error as on the CPU, nothing kept.
            cp "$dd/in.gz" "$dd/bad.gz"; printf '\x55' | dd of="$dd/bad.gz" bs=1 seek=$((100 << 20)) conv=notrunc 2>/dev/null
            .gpu/peerpath decompress --engine gpu -T 2 --gpu-batch 192M -f "$dd/bad.gz" -o "$dd/bad" > "$o/corrupt.txt" 2>&1; echo "gpu exit $?" >> "$o/corrupt.txt"
            .gpu/peerpath decompress -T 8 -f "$dd/bad.gz" -o "$dd/bad" >> "$o/corrupt.txt" 2>&1; echo "cpu exit $?" >> "$o/corrupt.txt"; ls "$dd" >> "$o/corrupt.txt"
            rm -rf "$dd" ;;
        ceilings)
            # Issue 18: what holds decompression at 16 threads. Decoding alone (verify: nothing
            # written) against decoding into one tmpfs file (mapped target), at 1/4/8/16 threads,
            # interleaved; then the kernel's own rate of filling tmpfs from k threads: k
            # fallocate or dd processes on disjoint ranges of ONE file against k separate files.
            dd=/dev/shm/ppceil; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; n=$(nproc); o=$OUT/ceilings
            .gpu/peerpath compress -T "$n" -q -f --no-sync "$dd/in" -o "$dd/in.gz"
            size=$(stat -c %s "$dd/in")
            { echo "decompress (mapped tmpfs target) against verify (no output), 384 MiB (slice x 8, -T $n output), interleaved"; echo
              echo "| run | wall s | GB/s of output | workers busy | compute CPU s | host CPU % of all cores |"; echo "|---|---|---|---|---|---|"; } > "$o/ceilings.md"
            for r in 1 2 3; do
                for t in 1 4 8 16; do
                    [ "$t" = 1 ] && [ "$r" = 3 ] && continue
                    .gpu/peerpath decompress -T "$t" -f --no-sync "$dd/in.gz" -o "$dd/out" --json > "$o/d.json" 2>&1
                    cmp -s "$dd/out" "$dd/in" || echo "WRONG OUTPUT -T $t" >> "$o/ceilings.md"; rm -f "$dd/out"
                    cl "$o/d.json" "decompress -T $t ($r)" "$o/ceilings.md"; cp "$o/d.json" "$o/d-T$t-r$r.json"
                    .gpu/peerpath verify -T "$t" "$dd/in.gz" --json > "$o/v.json" 2>&1
                    cl "$o/v.json" "verify -T $t ($r)" "$o/ceilings.md"; cp "$o/v.json" "$o/v-T$t-r$r.json"
                done
            done
            { echo; echo "filling tmpfs with 384 MiB from k processes (disjoint 384/k MiB ranges): seconds, best of 3"; echo
              echo "| k | fallocate, one file | fallocate, k files | dd from /dev/zero, one file | dd, k files |"; echo "|---|---|---|---|---|"; } >> "$o/ceilings.md"
            fill() { # k how(fallocate|dd) one(1|0): best of 3 seconds
                local k=$1 how=$2 one=$3 best=99 per=$((384 / $1))
                for _ in 1 2 3; do
                    rm -f "$dd"/fill*; local t=$EPOCHREALTIME
                    for ((j = 0; j < k; j++)); do
                        local f=$dd/fill; [ "$one" = 1 ] || f=$dd/fill$j
                        local off=0; [ "$one" = 1 ] && off=$((j * per))
                        if [ "$how" = fallocate ]; then fallocate -o "${off}MiB" -l "${per}MiB" "$f" &
                        else dd if=/dev/zero of="$f" bs=1M count="$per" seek="$off" conv=notrunc status=none & fi
                    done
                    wait
                    best=$(awk -v a="$EPOCHREALTIME" -v b="$t" -v c="$best" 'BEGIN { d = a - b; print (d < c ? d : c) }')
                done
                rm -f "$dd"/fill*; printf '%.3f' "$best"
            }
            for k in 1 4 8 16; do
                echo "| $k | $(fill "$k" fallocate 1) | $(fill "$k" fallocate 0) | $(fill "$k" dd 1) | $(fill "$k" dd 0) |" >> "$o/ceilings.md"
            done
            rm -rf "$dd" ;;
        fixed)
            # The GPU job's fixed costs: 4 MiB compressed on the GPU (nothing to overlap them
            # with), 5 runs each with the default GPU memory and with 512M: the report's wall
            # and the device's opening (with its parts) against the whole process's wall.
            dd=/dev/shm/ppfixed; mkdir -p "$dd"; head -c 4M "$in/slice" > "$dd/in"; o=$OUT/fixed
            { echo "GPU compress of 4 MiB in memory: fixed costs (process wall - report wall: starting, and closing the GPU after the report's clock stops)"; echo
              echo "| run | report wall s | process wall s | device | "; echo "|---|---|---|---|"; } > "$o/fixed.md"
            for r in 1 2 3 4 5; do
                for mem in 4G 512M; do
                    t=$EPOCHREALTIME
                    .gpu/peerpath compress --engine gpu --no-fallback --no-sync -f --device-memory "$mem" "$dd/in" -o "$dd/out.gz" --json > "$o/r.json" 2>&1
                    pw=$(awk -v a="$EPOCHREALTIME" -v b="$t" 'BEGIN { print a - b }')
                    python3 -c "import json,sys,re;r=json.load(open(sys.argv[1]));k=r['devices'][0]['kind'];m=re.search(r'opened in .*?\)',k);print('| --device-memory %s (%s) | %.3f | %.3f | %s |' % (sys.argv[2], sys.argv[3], r['wall_s'], float(sys.argv[4]), m.group(0) if m else k[:200]))" "$o/r.json" "$mem" "$r" "$pw" >> "$o/fixed.md" \
                        || echo "| $mem ($r) | FAILED: $(head -c 300 "$o/r.json" | tr '\n' ' ') |" >> "$o/fixed.md"
                done
            done
            t=$EPOCHREALTIME; .gpu/peerpath compress -T "$(nproc)" --no-sync -f "$dd/in" -o "$dd/c.gz" -q; echo "CPU, same 4 MiB: process wall $(awk -v a="$EPOCHREALTIME" -v b="$t" 'BEGIN { print a - b }') s" >> "$o/fixed.md"
            rm -rf "$dd" ;;
        daemon)
            # The job server: the same jobs in a fresh process and through a daemon that holds the
            # GPU (its context from start, its device's memory and window from the first job on).
            dd=/dev/shm/ppdaemon; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; head -c 4M "$in/slice" > "$dd/small"; n=$(nproc); o=$OUT/daemon
            daemon_up "$dd/sock" "$o/daemon.log"
            .gpu/peerpath compress -T "$n" -q -f --no-sync "$dd/in" -o "$dd/in.gz"
            { echo "peerpath jobs on the GPU through a job server (peerpath daemon --gpu 0) against a process of their own, and the CPU on all $n cores; in memory (tmpfs in and out, --no-sync); wall = the client process's, start to exit"; echo
              echo "| run | process wall s | GB/s (uncompressed) | report wall s | device |"; echo "|---|---|---|---|---|"; } > "$o/daemon.md"
            dj() { # label daemon(0/1) args...
                local label=$1
                timed_job "$o" "$dd/sock" "$@"
                python3 -c "import json,sys;r=json.load(open(sys.argv[1]));d=(r.get('devices') or [{}])[0];u=max(r['bytes_in'],r['bytes_out']);print('| %s | %.3f | %.2f | %.3f | %s |' % (sys.argv[2], float(sys.argv[3]), u/float(sys.argv[3])/1e9, r['wall_s'], (d.get('kind') or r.get('runner') or '-')[:220]))" "$o/r.json" "$label" "$pw" >> "$o/daemon.md" \
                    || echo "| $label | FAILED: $(head -c 300 "$o/r.err" | tr '\n' ' ') |" >> "$o/daemon.md"
            }
            for r in 1 2 3 4 5; do
                dj "compress gpu, own process ($r)" 0 compress --engine gpu --no-fallback --no-sync -f "$dd/in" -o "$dd/g.gz"
                dj "compress gpu, daemon ($r)" 1 compress --engine gpu --no-fallback --no-sync -f "$dd/in" -o "$dd/gd.gz"
                dj "compress cpu -T $n ($r)" 0 compress -T "$n" --no-sync -f "$dd/in" -o "$dd/c.gz"
                dj "compress 4 MiB gpu, own process ($r)" 0 compress --engine gpu --no-fallback --no-sync -f "$dd/small" -o "$dd/s.gz"
                dj "compress 4 MiB gpu, daemon ($r)" 1 compress --engine gpu --no-fallback --no-sync -f "$dd/small" -o "$dd/sd.gz"
                dj "decompress gpu, own process ($r)" 0 decompress --engine gpu --no-fallback --no-sync -f "$dd/in.gz" -o "$dd/out"
                dj "decompress gpu, daemon ($r)" 1 decompress --engine gpu --no-fallback --no-sync -f "$dd/in.gz" -o "$dd/outd"
                dj "decompress cpu -T $n ($r)" 0 decompress -T "$n" --no-sync -f "$dd/in.gz" -o "$dd/outc"
            done
            for f in g gd; do .gpu/peerpath decompress -q -o - "$dd/$f.gz" | cmp -s - "$dd/in" && echo "$f.gz: round trip ok" || echo "$f.gz: CHECK FAILED"; done >> "$o/daemon.md"
            for f in out outd; do cmp -s "$dd/$f" "$dd/in" && echo "$f: equal to the input" || echo "$f: CHECK FAILED"; done >> "$o/daemon.md"
            kill "$dpid"; wait "$dpid" 2>/dev/null; rm -rf "$dd" ;;
        mapped)
            # Issue 17's in-memory target: --gpu-memory-files mapped (the copy engine reads and
            # writes the tmpfs files' pages, mapped and registered) against staged (the kernel
            # copies them through the pinned window) and the CPU on every core, 384 MiB, in a
            # process of its own and through the job server (no CUDA context to open); the probe
            # of the same files first, and the gpu crate's mapped-file test.
            dd=/dev/shm/ppmapped; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; n=$(nproc); o=$OUT/mapped
            timeout 120 .gpu/peerpath gpu probe --input "$dd/in" --bytes 384M --chunk 1M --algorithm 2 --repeat 2 --mapped-at /dev/shm --json > "$o/probe.json" 2>&1
            python3 -c "import json,sys;m=json.load(open(sys.argv[1])).get('mapped') or {};print('probe: ' + ', '.join('%s %s' % kv for kv in m.items()))" "$o/probe.json" > "$o/mapped.md" 2>&1 || echo "probe: FAILED: $(head -c 300 "$o/probe.json")" > "$o/mapped.md"
            [ -x .gpu/gputests ] && { .gpu/gputests --test-threads 1 --nocapture memory_files > "$o/gputests.txt" 2>&1; echo "exit $?" >> "$o/gputests.txt"; }
            # A test that skipped passes: say so here (no GPU context, or an older driver's PTX).
            grep -h "SKIPPED" "$o/gputests.txt" 2>/dev/null | sed 's/^/gputests: /' >> "$o/mapped.md"
            df -h /dev/shm | tail -1 | sed 's/^/\/dev\/shm: /' >> "$o/mapped.md"
            daemon_up "$dd/sock" "$o/daemon.log"
            { echo; echo "compress 384 MiB in memory (tmpfs in and out, --no-sync); wall = the client process's"; echo
              echo "| run | process wall s | GB/s (uncompressed) | report wall s | host CPU s (user+sys) | host memory bytes (CPU / DMA) | storage line | device profile |"; echo "|---|---|---|---|---|---|---|---|"; } >> "$o/mapped.md"
            mj() { # label daemon(0/1) args...
                local label=$1
                timed_job "$o" "$dd/sock" "$@"
                python3 -c "import json,sys;r=json.load(open(sys.argv[1]));d=(r.get('devices') or [{}])[0];c=r['cpu'];l=r['ledger'];print('| %s | %.3f | %.2f | %.3f | %.3f | %.0f / %.0f MB | %s | %s |' % (sys.argv[2], float(sys.argv[3]), max(r['bytes_in'],r['bytes_out'])/float(sys.argv[3])/1e9, r['wall_s'], c['total_user_s']+c['total_system_s'], l['host_memory_cpu_bytes']/1e6, l['host_memory_dma_bytes']/1e6, (d.get('storage_io') or '-')[:300], (d.get('profile') or '-')[:400]))" "$o/r.json" "$label" "$pw" >> "$o/mapped.md" \
                    || echo "| $label | FAILED: $(head -c 300 "$o/r.err" | tr '\n' ' ') |" >> "$o/mapped.md"
            }
            for r in 1 2 3 4 5; do
                mj "cpu -T $n ($r)" 0 compress -T "$n" --no-sync -f "$dd/in" -o "$dd/c.gz"
                mj "gpu staged, own process ($r)" 0 compress --engine gpu --no-fallback --no-sync -f "$dd/in" -o "$dd/gs.gz"
                mj "gpu mapped, own process ($r)" 0 compress --engine gpu --gpu-memory-files mapped --no-fallback --no-sync -f "$dd/in" -o "$dd/gm.gz"
                mj "gpu staged, daemon ($r)" 1 compress --engine gpu --no-fallback --no-sync -f "$dd/in" -o "$dd/gsd.gz"
                mj "gpu mapped, daemon ($r)" 1 compress --engine gpu --gpu-memory-files mapped --no-fallback --no-sync -f "$dd/in" -o "$dd/gmd.gz"
                for gr in 16M 512M; do
                    mj "gpu mapped, $gr granules, daemon ($r)" 1 compress --engine gpu --gpu-memory-files mapped --gpu-map-granule "$gr" --no-fallback --no-sync -f "$dd/in" -o "$dd/gmd$gr.gz"
                done
                # 64 KiB members (nvCOMP's decoder is 3x faster on them, section 9): what they cost
                # the GPU's compression, and what they give its decompression against every core.
                mj "gpu mapped, 64K members, daemon ($r)" 1 compress --engine gpu --gpu-memory-files mapped --block-size 64K --no-fallback --no-sync -f "$dd/in" -o "$dd/gmd64K.gz"
                for f in gmd gmd64K; do
                    mj "decompress $f.gz gpu, daemon ($r)" 1 decompress --engine gpu --no-fallback --no-sync -f "$dd/$f.gz" -o "$dd/out-g"
                    mj "decompress $f.gz cpu -T $n ($r)" 0 decompress -T "$n" --no-sync -f "$dd/$f.gz" -o "$dd/out-c"
                done
            done
            for f in out-g out-c; do cmp -s "$dd/$f" "$dd/in" && echo "$f: equal to the input" || echo "$f: CHECK FAILED"; done >> "$o/mapped.md"
            for f in c gs gm gsd gmd gmd16M gmd512M gmd64K; do .gpu/peerpath decompress -q -o - "$dd/$f.gz" | cmp -s - "$dd/in" && gzip -t "$dd/$f.gz" && echo "$f.gz: round trip and gzip -t ok" || echo "$f.gz: CHECK FAILED"; done >> "$o/mapped.md"
            cmp -s "$dd/gs.gz" "$dd/gm.gz" && echo "gs.gz and gm.gz: the same bytes" >> "$o/mapped.md" || echo "gs.gz and gm.gz differ" >> "$o/mapped.md"
            kill "$dpid"; wait "$dpid" 2>/dev/null; rm -rf "$dd" ;;
        workerreads)
            # Compression in memory: each compute worker reading its own chunks (the default for
            # a memory file system's source) against io_uring's reads (PEERPATH_WORKER_READS=0),
            # 1/8/15/16 threads, interleaved rounds; outputs compared.
            dd=/dev/shm/ppwr; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; o=$OUT/workerreads
            { echo "compress of 384 MiB (slice x 8) in memory (tmpfs in and out, --no-sync): the workers' own reads against io_uring's; interleaved"; echo
              echo "| run | wall s | GB/s | workers busy | compute CPU s | host CPU % of all cores |"; echo "|---|---|---|---|---|---|"; } > "$o/workerreads.md"
            for r in 1 2 3 4; do
                for t in 1 8 15 16; do
                    [ "$t" = 1 ] && [ "$r" -gt 2 ] && continue
                    for w in 1 0; do
                        PEERPATH_WORKER_READS=$w .gpu/peerpath compress -T "$t" -f --no-sync "$dd/in" -o "$dd/out$w.gz" --json > "$o/c.json" 2>&1
                        python3 -c "import json,sys;r=json.load(open(sys.argv[1]));r['bytes_out']=r['bytes_in'];json.dump(r,open(sys.argv[1],'w'))" "$o/c.json" 2>/dev/null
                        cl "$o/c.json" "-T $t, $([ "$w" = 1 ] && echo 'workers read' || echo 'io_uring reads') ($r)" "$o/workerreads.md"; cp "$o/c.json" "$o/c-T$t-w$w-r$r.json"
                    done
                    cmp -s "$dd/out1.gz" "$dd/out0.gz" || echo "OUTPUTS DIFFER -T $t ($r)" >> "$o/workerreads.md"
                done
            done
            .gpu/peerpath decompress -q -f --no-sync "$dd/out1.gz" -o "$dd/back" && cmp -s "$dd/back" "$dd/in" && echo "round trip ok" >> "$o/workerreads.md"
            # Decompression of that output the same way (the workers read their batches'
            # members; the orchestrator only headers), into tmpfs (mapped target), interleaved.
            { echo; echo "decompress of that output in memory (tmpfs in and out, --no-sync): the workers' own reads against io_uring's; interleaved"; echo
              echo "| run | wall s | GB/s of output | workers busy | compute CPU s | host CPU % of all cores |"; echo "|---|---|---|---|---|---|"; } >> "$o/workerreads.md"
            for r in 1 2 3 4; do
                for t in 1 8 15 16; do
                    [ "$t" = 1 ] && [ "$r" -gt 2 ] && continue
                    for w in 1 0; do
                        PEERPATH_WORKER_READS=$w .gpu/peerpath decompress -T "$t" -f --no-sync "$dd/out1.gz" -o "$dd/back" --json > "$o/d.json" 2>&1
                        cmp -s "$dd/back" "$dd/in" || echo "WRONG OUTPUT -T $t w$w ($r)" >> "$o/workerreads.md"; rm -f "$dd/back"
                        cl "$o/d.json" "-T $t, $([ "$w" = 1 ] && echo 'workers read' || echo 'io_uring reads') ($r)" "$o/workerreads.md"; cp "$o/d.json" "$o/d-T$t-w$w-r$r.json"
                    done
                done
            done
            rm -rf "$dd" ;;
        allocation)
            # Decompression into one tmpfs file: mapped (PEERPATH_MAPPED_OUTPUT=1), its pages
            # allocated ahead by one thread or by each worker (PEERPATH_MAPPED_ALLOCATION), against
            # written (PEERPATH_MAPPED_OUTPUT=0), 1..16 threads and 15 (one core left to the
            # orchestrator), interleaved rounds. The default maps from 8 workers on.
            dd=/dev/shm/ppalloc; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; n=$(nproc); o=$OUT/allocation
            .gpu/peerpath compress -T "$n" -q -f --no-sync "$dd/in" -o "$dd/in.gz"
            { echo "decompress of 384 MiB (slice x 8, -T $n output) into tmpfs: the target mapped (pages allocated ahead by one thread, or by each worker) or written; interleaved"; echo
              echo "| run | wall s | GB/s of output | workers busy | compute CPU s | host CPU % of all cores |"; echo "|---|---|---|---|---|---|"; } > "$o/allocation.md"
            for r in 1 2 3; do
                for t in 1 2 4 8 15 16; do
                    [ "$t" = 1 ] && [ "$r" = 3 ] && continue
                    for m in ahead each written; do
                        mapped=1; [ "$m" = written ] && mapped=0
                        PEERPATH_MAPPED_OUTPUT=$mapped PEERPATH_MAPPED_ALLOCATION=$m .gpu/peerpath decompress -T "$t" -f --no-sync "$dd/in.gz" -o "$dd/out" --json > "$o/d.json" 2>&1
                        cmp -s "$dd/out" "$dd/in" || echo "WRONG OUTPUT -T $t $m" >> "$o/allocation.md"; rm -f "$dd/out"
                        cl "$o/d.json" "-T $t, $m ($r)" "$o/allocation.md"; cp "$o/d.json" "$o/d-T$t-$m-r$r.json"
                    done
                done
            done
            rm -rf "$dd" ;;
        ec)
            # Erasure coding in memory on many cores: ec encode RS(4,2) with 1 MiB units of the
            # slice x 8 at -T 1/2/4/8/16 (coding rate a core and wall), ec repair of two lost
            # shards (every core), ec decode of the intact and the damaged set, cp beside; decode
            # and repair of the damaged set on an emulated CSP too; 3 interleaved rounds; every
            # set compared with -T 1's, every decode with the source.
            dd=/dev/shm/ppec; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; o=$OUT/ec; size=$(stat -c %s "$dd/in")
            ej() { python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print('| %s | %.3f | %.2f | %.1f |' % (sys.argv[2], r['seconds'], int(sys.argv[3])/r['seconds']/1e9, r['coding_gb_per_s']))" "$1" "$2" "$size" >> "$o/ec.md" || echo "| $2 | FAILED |" >> "$o/ec.md"; }
            wall() { local a=$EPOCHREALTIME; "$@" > /dev/null 2>&1; local rc=$?; echo "| $label | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') | - |" >> "$o/ec.md"; return $rc; }
            { echo "ec of the slice x 8 ($size bytes) in memory, RS(4,2), 1 MiB units; 3 interleaved rounds"; echo
              echo "| run | wall s | GB/s of source | coding GB/s a core |"; echo "|---|---|---|---|"; } > "$o/ec.md"
            .gpu/peerpath ec encode "$dd/in" -k 4 -m 2 -T 1 -o "$dd/ref" > /dev/null
            for r in 1 2 3; do
                for t in 1 2 4 8 16; do
                    rm -rf "$dd/set"; .gpu/peerpath ec encode "$dd/in" -k 4 -m 2 -T "$t" -o "$dd/set" --json > "$o/e.json" 2>&1
                    ej "$o/e.json" "encode -T $t ($r)"; diff -rq "$dd/ref" "$dd/set" > /dev/null || echo "SET DIFFERS -T $t ($r)" >> "$o/ec.md"
                done
                rm -f "$dd/back"; label="decode, intact ($r)"; wall .gpu/peerpath ec decode "$dd/set" -o "$dd/back"; cmp -s "$dd/back" "$dd/in" || echo "WRONG DECODE ($r)" >> "$o/ec.md"
                rm "$dd/set/shard-000" "$dd/set/shard-005"
                rm -f "$dd/back"; label="decode, shards 0 and 5 lost ($r)"; wall .gpu/peerpath ec decode "$dd/set" -o "$dd/back"; cmp -s "$dd/back" "$dd/in" || echo "WRONG DECODE, 2 lost ($r)" >> "$o/ec.md"
                # The same on an emulated CSP (measured on emulated devices: its process shares the cores).
                rm -f "$dd/back"; label="decode --engine emulated, 2 lost ($r)"; wall .gpu/peerpath ec decode "$dd/set" -o "$dd/back" --engine emulated --no-fallback; cmp -s "$dd/back" "$dd/in" || echo "WRONG EMULATED DECODE, 2 lost ($r)" >> "$o/ec.md"
                rm -rf "$dd/emu"; cp -r "$dd/set" "$dd/emu"
                .gpu/peerpath ec repair "$dd/emu" --engine emulated --no-fallback --json > "$o/r.json" 2>&1; ej "$o/r.json" "repair --engine emulated, 2 lost ($r)"
                diff -rq "$dd/ref" "$dd/emu" > /dev/null || echo "EMULATED REPAIR DIFFERS ($r)" >> "$o/ec.md"
                .gpu/peerpath ec repair "$dd/set" --json > "$o/r.json" 2>&1; ej "$o/r.json" "repair, 2 lost ($r)"
                diff -rq "$dd/ref" "$dd/set" > /dev/null || echo "REPAIR DIFFERS ($r)" >> "$o/ec.md"
                rm -f "$dd/cp"; label="cp ($r)"; wall cp "$dd/in" "$dd/cp"
            done
            rm -rf "$dd" ;;
        gpuec)
            # ec encode on the GPU against the CPU, in memory; every set compared with the CPU's.
            dd=/dev/shm/ppgpuec; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; o=$OUT/gpuec; size=$(stat -c %s "$dd/in")
            [ -x .gpu/gputests ] && { timeout 300 .gpu/gputests --test-threads 1 --nocapture coding > "$o/gputests.txt" 2>&1; echo "gputests exit $?" >> "$o/gputests.txt"; }
            ej() { python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print('| %s | %.3f | %.2f | %.1f | %s |' % (sys.argv[2], r['seconds'], int(sys.argv[3])/r['seconds']/1e9, r['coding_gb_per_s'], 'FALLBACK: '+r['fallback'] if r.get('fallback') else ''))" "$1" "$2" "$size" >> "$o/gpuec.md" || echo "| $2 | FAILED: $(head -c 300 "$1" | tr '\n' ' ') |" >> "$o/gpuec.md"; }
            { echo "ec encode of the slice x 8 ($size bytes) in memory, 1 MiB units, on the GPU and the CPU; 3 interleaved rounds"; echo
              echo "| run | wall s (report) | GB/s of source | coding GB/s (a core, or on the GPU) | fallback |"; echo "|---|---|---|---|---|"; } > "$o/gpuec.md"
            for code in "4 2" "10 4"; do
                set -- $code; kk=$1; mm=$2
                rm -rf "$dd/ref"; .gpu/peerpath ec encode "$dd/in" -k "$kk" -m "$mm" -T 1 -o "$dd/ref" > /dev/null
                for r in 1 2 3; do
                    for e in "gpu" "cpu -T 1" "cpu -T $(nproc)"; do
                        rm -rf "$dd/set"; /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KB" -o "$o/time.txt" .gpu/peerpath ec encode "$dd/in" -k "$kk" -m "$mm" -o "$dd/set" --engine $e --json > "$o/e.json" 2> "$o/e.err"
                        ej "$o/e.json" "RS($kk,$mm) --engine $e ($r); process $(cat "$o/time.txt")"
                        diff -rq "$dd/ref" "$dd/set" > /dev/null || echo "SET DIFFERS: RS($kk,$mm) --engine $e ($r)" >> "$o/gpuec.md"
                        [ "$e" = gpu ] && [ "$r" = 1 ] && { cp "$o/e.json" "$o/gpu-$kk-$mm.json"; cat "$o/e.err" >> "$o/gpu-stderr.txt"; }
                    done
                    # The set's check, repair (shards 0 and the last lost) and restore, GPU against every core.
                    for e in "gpu" "cpu -T $(nproc)"; do
                        rm -rf "$dd/dmg"; cp -r "$dd/ref" "$dd/dmg"; rm "$dd/dmg/shard-000" "$dd/dmg/shard-$(printf %03d $((kk + mm - 1)))"
                        label="RS($kk,$mm) verify --engine $e, 2 lost ($r)"; a=$EPOCHREALTIME; .gpu/peerpath ec verify "$dd/dmg" --engine $e > "$o/v.txt" 2>&1; rc=$?
                        echo "| $label; exit $rc | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') | - | $(grep -o 'FALLBACK.*' "$o/v.txt" | head -1) |" >> "$o/gpuec.md"
                        rm -f "$dd/back"; label="RS($kk,$mm) decode --engine $e, 2 lost ($r)"; a=$EPOCHREALTIME; .gpu/peerpath ec decode "$dd/dmg" -o "$dd/back" --engine $e > "$o/v.txt" 2>&1; rc=$?
                        echo "| $label; exit $rc | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') | - | $(grep -o 'FALLBACK.*' "$o/v.txt" | head -1) |" >> "$o/gpuec.md"
                        cmp -s "$dd/back" "$dd/in" || echo "WRONG DECODE: RS($kk,$mm) --engine $e ($r)" >> "$o/gpuec.md"
                        .gpu/peerpath ec repair "$dd/dmg" --engine $e --json > "$o/e.json" 2> "$o/e.err"; ej "$o/e.json" "RS($kk,$mm) repair --engine $e, 2 lost ($r)"
                        diff -rq "$dd/ref" "$dd/dmg" > /dev/null || echo "REPAIR DIFFERS: RS($kk,$mm) --engine $e ($r)" >> "$o/gpuec.md"
                    done
                done
            done
            rm -f "$o/e.json" "$o/e.err" "$o/time.txt" "$o/v.txt"
            rm -rf "$dd" ;;
        gpucrypt)
            # encrypt and decrypt on the GPU against the CPU, in memory; every file checked.
            dd=/dev/shm/ppgpucrypt; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; o=$OUT/gpucrypt; size=$(stat -c %s "$dd/in")
            [ -x .gpu/gputests ] && { timeout 300 .gpu/gputests --test-threads 1 --nocapture aead gcm fingerprint dedup decompress_function > "$o/gputests.txt" 2>&1; echo "gputests exit $?" >> "$o/gputests.txt"; }
            .gpu/peerpath keygen -o "$dd/key" > /dev/null 2>&1
            cj() { python3 -c "import json,sys;r=json.load(open(sys.argv[1]));print('| %s | %.3f | %.2f | %.2f | %s |' % (sys.argv[2], r['seconds'], r['plaintext_gb_per_s'], r['cipher_gb_per_s_per_core'], 'FALLBACK: '+r['fallback'] if r.get('fallback') else ''))" "$1" "$2" >> "$o/gpucrypt.md" || echo "| $2 | FAILED: $(head -c 300 "$1" | tr '\n' ' ') |" >> "$o/gpucrypt.md"; }
            { echo "encrypt and decrypt of the slice x 8 ($size bytes) in memory, 1 MiB blocks, on the GPU and the CPU; 3 interleaved rounds"; echo
              echo "| run | wall s (report) | GB/s of plaintext | cipher GB/s (a core, or the GPU's busy time) | fallback |"; echo "|---|---|---|---|---|"; } > "$o/gpucrypt.md"
            for r in 1 2 3; do
                for e in "gpu" "cpu -T 1" "cpu -T $(nproc)"; do
                    rm -f "$dd/enc"; /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KB" -o "$o/time.txt" .gpu/peerpath encrypt "$dd/in" -o "$dd/enc" --key-file "$dd/key" --engine $e --json > "$o/e.json" 2> "$o/e.err"
                    cj "$o/e.json" "encrypt --engine $e ($r); process $(cat "$o/time.txt")"
                    [ "$e" = gpu ] && [ "$r" = 1 ] && { cp "$o/e.json" "$o/gpu-encrypt.json"; cat "$o/e.err" >> "$o/gpu-stderr.txt"; }
                    # Every file opens on the CPU to the source (aws-lc authenticates each block).
                    rm -f "$dd/chk"; .gpu/peerpath decrypt "$dd/enc" -o "$dd/chk" --key-file "$dd/key" -q && cmp -s "$dd/chk" "$dd/in" || echo "WRONG FILE: encrypt --engine $e ($r)" >> "$o/gpucrypt.md"
                    rm -f "$dd/back"; /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KB" -o "$o/time.txt" .gpu/peerpath decrypt "$dd/enc" -o "$dd/back" --key-file "$dd/key" --engine $e --json > "$o/e.json" 2> "$o/e.err"
                    cj "$o/e.json" "decrypt --engine $e ($r); process $(cat "$o/time.txt")"
                    [ "$e" = gpu ] && [ "$r" = 1 ] && { cp "$o/e.json" "$o/gpu-decrypt.json"; cat "$o/e.err" >> "$o/gpu-stderr.txt"; }
                    cmp -s "$dd/back" "$dd/in" || echo "WRONG DECRYPT: --engine $e ($r)" >> "$o/gpucrypt.md"
                done
            done
            # The chain: compress -> encrypt -> RS(4,2) in one pass, on the GPU and on every core; every set restored.
            { echo; echo "compress --ec 4+2 --encrypt of the same file in memory (1 MiB blocks and units), the GPU's chain against the CPU's; 3 interleaved rounds"; echo
              echo "| run | wall s (process) | GB/s of source | fallback |"; echo "|---|---|---|---|"; } >> "$o/gpucrypt.md"
            for r in 1 2 3; do
                for e in "gpu" "cpu -T $(nproc)"; do
                    rm -rf "$dd/set"; a=$EPOCHREALTIME
                    .gpu/peerpath compress "$dd/in" --ec 4+2 --ec-unit 1M --encrypt --key-file "$dd/key" -o "$dd/set" --engine $e > "$o/c.out" 2> "$o/c.err"; rc=$?
                    echo "| chain --engine $e ($r); exit $rc | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') | $(grep -o 'FALLBACK.*' "$o/c.err" | head -1) |" >> "$o/gpucrypt.md"
                    [ "$e" = gpu ] && [ "$r" = 1 ] && cat "$o/c.out" "$o/c.err" > "$o/gpu-chain.txt"
                    rm -f "$dd/back"; .gpu/peerpath decompress --ec "$dd/set" --key-file "$dd/key" -o "$dd/back" -q && cmp -s "$dd/back" "$dd/in" || echo "WRONG CHAIN: --engine $e ($r)" >> "$o/gpucrypt.md"
                done
            done
            # The reverse chain (RS(4,2) checked and rebuilt, blocks opened, members decoded) on the GPU and
            # every core, one data shard deleted so a unit is rebuilt in every stripe; every output compared.
            { echo; echo "decompress --ec of that set with shard 1 deleted, the GPU's reverse chain against the CPU's; 3 interleaved rounds"; echo
              echo "| run | wall s (process) | GB/s of output | fallback |"; echo "|---|---|---|---|"; } >> "$o/gpucrypt.md"
            rm -f "$dd/set/shard-001"; ls "$dd/set" > "$o/set-files.txt"
            for r in 1 2 3; do
                for e in "gpu" "cpu -T $(nproc)"; do
                    rm -f "$dd/back"; a=$EPOCHREALTIME
                    .gpu/peerpath decompress --ec "$dd/set" --key-file "$dd/key" -o "$dd/back" --engine $e > "$o/c.out" 2> "$o/c.err"; rc=$?
                    echo "| reverse chain --engine $e ($r); exit $rc | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') | $(grep -o 'FALLBACK.*' "$o/c.err" | head -1 | cut -c1-200) |" >> "$o/gpucrypt.md"
                    [ "$e" = gpu ] && [ "$r" = 1 ] && cat "$o/c.out" "$o/c.err" > "$o/gpu-reverse-chain.txt"
                    cmp -s "$dd/back" "$dd/in" || echo "WRONG REVERSE CHAIN: --engine $e ($r)" >> "$o/gpucrypt.md"
                done
            done
            rm -f "$o/c.out" "$o/c.err"
            # A flipped byte: refused on the GPU, the block named.
            python3 -c "import sys;f=open(sys.argv[1],'r+b');f.seek(72+5*(1048576+16)+99);b=f.read(1);f.seek(-1,1);f.write(bytes([b[0]^1]))" "$dd/enc"
            .gpu/peerpath decrypt "$dd/enc" -o "$dd/never" --key-file "$dd/key" --engine gpu > "$o/tamper.txt" 2>&1; echo "exit $?" >> "$o/tamper.txt"
            rm -f "$o/e.json" "$o/e.err" "$o/time.txt"
            rm -rf "$dd" ;;
        gpuscan)
            # scan on the GPU against the CPU (and grep -cE for lines), in memory; every count checked.
            dd=/dev/shm/ppgpuscan; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; o=$OUT/gpuscan; size=$(stat -c %s "$dd/in")
            [ -x .gpu/gputests ] && { timeout 300 .gpu/gputests --test-threads 1 --nocapture scan > "$o/gputests.txt" 2>&1; echo "gputests exit $?" >> "$o/gputests.txt"; }
            { echo "scan of the slice x 8 ($size bytes of protein FASTA) in memory, on the GPU and the CPU; 3 interleaved rounds; wall of the process"; echo
              echo "| run | wall s | GB/s | answer | fallback |"; echo "|---|---|---|---|---|"; } > "$o/gpuscan.md"
            sw() { # label want-file command...: one row, the answer checked against want-file (written when absent)
                local label=$1 want=$2; shift 2; local a=$EPOCHREALTIME
                "$@" > "$o/s.out" 2> "$o/s.err"; local rc=$?
                local ok=same; if [ -f "$want" ]; then cmp -s "$o/s.out" "$want" || ok="DIFFERS: $(head -c 80 "$o/s.out" | tr '\n' ' ')"; else cp "$o/s.out" "$want"; ok="reference"; fi
                echo "| $label; exit $rc | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') | $ok | $(grep -o 'FALLBACK.*' "$o/s.err" | head -1 | cut -c1-160) |" >> "$o/gpuscan.md"
            }
            n=$(nproc)
            for r in 1 2 3; do
                for q in "fasta:--motif:KL[VI]{2}:-c" "hist:--min-length:300:--histogram" "lines:--motif:W[^C]{3}CW:-c"; do
                    IFS=: read -r name opt val out <<< "$q"
                    fmt=(); [ "$name" = lines ] && fmt=(--format lines)
                    sw "scan $name -T $n ($r)" "$o/want-$name" .gpu/peerpath scan "$dd/in" "${fmt[@]}" "$opt" "$val" "$out" -T "$n"
                    sw "scan $name --engine gpu ($r)" "$o/want-$name" .gpu/peerpath scan "$dd/in" "${fmt[@]}" "$opt" "$val" "$out" --engine gpu
                    [ "$r" = 1 ] && cp "$o/s.err" "$o/gpu-$name.txt"
                    sw "scan $name -T 1 ($r)" "$o/want-$name" .gpu/peerpath scan "$dd/in" "${fmt[@]}" "$opt" "$val" "$out" -T 1
                    [ "$name" = lines ] && sw "grep -cE ($r)" "$o/want-$name" grep -cE "$val" "$dd/in"
                done
            done
            rm -f "$o/s.out" "$o/s.err"
            rm -rf "$dd" ;;
        dedup)
            # dedup store of the slice x 8 in memory into a new store at -T 1/2/4/8/15/16 (wall and
            # GB/s; the chunks must not depend on the thread count: every store's stats equal -T 1's,
            # and one restore is compared), beside b3sum on 1 and all threads where .gpu/b3sum is
            # carried; 3 interleaved rounds.
            dd=/dev/shm/ppdedup; mkdir -p "$dd"; cp "$in/x8" "$dd/in"; o=$OUT/dedup; size=$(stat -c %s "$dd/in")
            wall() { local a=$EPOCHREALTIME; "$@" > /dev/null 2>&1; local rc=$?; echo "| $label | $(awk -v a="$a" -v b="$EPOCHREALTIME" -v s="$size" 'BEGIN { printf "%.3f | %.2f", b - a, s / (b - a) / 1e9 }') |" >> "$o/dedup.md"; return $rc; }
            { echo "dedup store of the slice x 8 ($size bytes) in memory, default chunk sizes; 3 interleaved rounds"; echo
              echo "| run | wall s | GB/s |"; echo "|---|---|---|"; } > "$o/dedup.md"
            .gpu/peerpath dedup store "$dd/in" -s "$dd/ref" -T 1 > /dev/null; .gpu/peerpath dedup stats -s "$dd/ref" | tail -n +2 > "$o/stats-ref.txt"
            for r in 1 2 3; do
                for t in 1 2 4 8 15 16; do
                    rm -rf "$dd/st"; label="dedup store -T $t ($r)"; wall .gpu/peerpath dedup store "$dd/in" -s "$dd/st" -T "$t"
                    .gpu/peerpath dedup stats -s "$dd/st" | tail -n +2 | cmp -s - "$o/stats-ref.txt" || echo "STORE DIFFERS -T $t ($r)" >> "$o/dedup.md"
                done
                # On the GPU (peerpath's FastCDC and BLAKE3 kernels): the same store, its pack byte for byte.
                rm -rf "$dd/st"; label="dedup store --engine gpu ($r)"; wall .gpu/peerpath dedup store "$dd/in" -s "$dd/st" --engine gpu
                .gpu/peerpath dedup stats -s "$dd/st" | tail -n +2 | cmp -s - "$o/stats-ref.txt" && cmp -s "$dd/st/packs/pack-000000" "$dd/ref/packs/pack-000000" || echo "STORE DIFFERS --engine gpu ($r)" >> "$o/dedup.md"
                [ "$r" = 1 ] && { rm -rf "$dd/st"; .gpu/peerpath dedup store "$dd/in" -s "$dd/st" --engine gpu > "$o/store-gpu.txt" 2>&1; }
                if [ -x .gpu/b3sum ]; then
                    label="b3sum --num-threads 1 ($r)"; wall .gpu/b3sum --num-threads 1 "$dd/in"
                    label="b3sum ($r)"; wall .gpu/b3sum "$dd/in"
                fi
            done
            .gpu/peerpath dedup store "$dd/in" -s "$dd/st" -f > "$o/store-default.txt" 2>&1
            .gpu/peerpath dedup restore "$dd/in" -s "$dd/st" -o "$dd/back" && cmp -s "$dd/back" "$dd/in" || echo "WRONG RESTORE" >> "$o/dedup.md"
            rm -rf "$dd" ;;
        disk)
            bench/disk-ab.sh --peerpath .gpu/peerpath --input "$in/x8" --dir /var/tmp/ppdiskab --runs 3 --out "$OUT/disk" > "$OUT/disk/log" 2>&1 ;;
        gpuio)
            dd=/var/tmp/ppgpuio; mkdir -p "$dd"; o=$OUT/gpuio; size=$(stat -c %s "$in/x8"); n=$(nproc)
            [ -x .gpu/gputests ] && { timeout 300 .gpu/gputests --test-threads 1 --nocapture cufile > "$o/gputests.txt" 2>&1; echo "gputests exit $?" >> "$o/gputests.txt"; }
            { echo "compress of the slice x 8 ($size bytes) from $in to the same disk (O_DIRECT both ways); 3 interleaved rounds; --no-sync"; echo
              echo "| run | wall s (report) | GB/s | output | storage | fallbacks |"; echo "|---|---|---|---|---|---|"; } > "$o/gpuio.md"
            for r in 1 2 3; do
                for e in "gpu --gpu-io staged" "gpu --gpu-io cufile" "cpu -T $n"; do
                    timeout 120 .gpu/peerpath compress "$in/x8" -o "$dd/out.gz" -f --no-sync --engine $e --json > "$o/r.json" 2> "$o/r.err"; rc=$?
                    .gpu/peerpath decompress "$dd/out.gz" -o - 2>/dev/null | cmp -s - "$in/x8" && ok=ok || ok="WRONG OUTPUT"
                    python3 -c "import json,sys;r=json.load(open(sys.argv[1]));d=(r.get('devices') or [{}])[0];print('| %s | %.3f | %.2f | %s | %s | %s |' % (sys.argv[2], r['wall_s'], r['bytes_in']/r['wall_s']/1e9, sys.argv[3], (d.get('storage_io') or '-')[:300], '; '.join(map(str,r['fallbacks']))[:200] or 'none'))" "$o/r.json" "--engine $e ($r); exit $rc" "$ok" >> "$o/gpuio.md" \
                        || echo "| --engine $e ($r) | FAILED: exit $rc, $(head -c 300 "$o/r.err" | tr '\n' ' ') |" >> "$o/gpuio.md"
                    [ "$r" = 1 ] && cp "$o/r.json" "$o/report-${e// /_}.json"
                done
            done
            rm -f "$o/r.json" "$o/r.err"; rm -rf "$dd" ;;
        scaling)
            OUT=$OUT/scaling PP_SCALING_DISK= PP_SCALING_QUICK=1 PP_SCALING_DEADLINE=120 bench/gpu-machine-scaling.sh > "$OUT/scaling/log" 2>&1 ;;
        *) say "unknown step $step"; continue ;;
    esac
    say "$step: exit $?"
done
{
    for f in "$OUT/mapped/mapped.md" "$OUT/mapped/gputests.txt" "$OUT/daemon/daemon.md" "$OUT/workerreads/workerreads.md" "$OUT/ec/ec.md" "$OUT/gpuec/gpuec.md" "$OUT/gpuec/gputests.txt" "$OUT/gpucrypt/gpucrypt.md" "$OUT/gpucrypt/gputests.txt" "$OUT/gpucrypt/tamper.txt" "$OUT/gpuscan/gpuscan.md" "$OUT/gpuscan/gputests.txt" "$OUT/gpuio/gpuio.md" "$OUT/gpuio/gputests.txt" "$OUT/dedup/dedup.md" "$OUT/fixed/fixed.md" "$OUT/allocation/allocation.md" "$OUT/ceilings/ceilings.md" "$OUT/sweep/sweep.md" "$OUT/gpudecompress/gpudecompress.md" "$OUT/gpudecompress/gputests.txt" "$OUT/gpudecompress/verify.txt" "$OUT/gpudecompress/corrupt.txt" "$OUT/disk/disk-ab.md" "$OUT/decompress/decompress.md" "$OUT/gpu/gpu.md" "$OUT/scaling/ceiling.txt" "$OUT/scaling/mapped-ab.txt"; do
        [ -f "$f" ] && { cat "$f"; echo; }
    done
    [ -f "$OUT/scaling/scaling.md" ] && sed -n '/^## Results in memory/,/^## peerpath/{/^## peerpath/d;p}' "$OUT/scaling/scaling.md"
    [ -f "$OUT/scaling/scaling.md" ] && sed -n '/^## Where peerpath/,/^## /p' "$OUT/scaling/scaling.md"
} > "$OUT/summary.md"
(cd "$OUT" && tar czf gpu-machine.tgz --exclude=gpu-machine.tgz --exclude=summary.md -- * && find . -mindepth 1 -maxdepth 1 ! -name gpu-machine.tgz ! -name summary.md -exec rm -rf -- {} +)
rm -rf "$in"
say "done: $OUT/summary.md, $OUT/gpu-machine.tgz"
cat "$OUT/summary.md"
