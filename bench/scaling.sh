#!/usr/bin/env bash
# bench/scaling.sh - thread scaling of peerpath compress/decompress against pigz and igzip,
# in memory (input and every output on a tmpfs), plus optional file-to-file rows on a disk.
#
# Usage: bench/scaling.sh [--peerpath PATH] [--input FILE | --slice FILE.xz [--repeat N]]
#                         [--scratch DIR] [--threads "1 2 4 8 16"] [--runs N] [--quick]
#                         [--debs DIR] [--out DIR] [--label NAME] [--disk DIR]
#                         [--disk-size SIZE] [--deadline S]
#
#   --peerpath PATH   peerpath binary (default target/release/peerpath); required
#   --input FILE      uncompressed input, copied (untimed) into the scratch dir
#                     (default data/corpus/metastudent_MFO_goasp.fasta)
#   --slice FILE.xz   build the input instead from an xz-compressed slice, repeated
#                     --repeat N times (default 1) in the scratch dir; a FILE.sha256 next to
#                     it (sha256sum format, FILE = the name without .xz) is checked if present
#   --scratch DIR     where input and outputs live during the run (default /dev/shm/ppscale,
#                     a tmpfs: every measurement is memory to memory); a private
#                     sub-directory is made there and removed at the end
#   --threads LIST    thread counts, e.g. "1 2 4 8 16" (default: powers of two below nproc,
#                     then nproc)
#   --runs N          timed runs per cell (default 3); the report gives the median and min
#   --quick           1 run only for the slow single-thread peers (pigz and igzip cells at
#                     1 thread, and igzip -d and pigz -d, which inflate on one thread at any T)
#   --debs DIR        unpack every *.deb in DIR (dpkg -x, or a python fallback) into a
#                     private prefix and use the pigz and igzip found there (with the
#                     prefix's libraries on LD_LIBRARY_PATH for those two only), in
#                     preference to any installed ones; e.g. Debian 12's pigz, zlib1g,
#                     isal, libisal2 from `apt-get download pigz zlib1g isal libisal2`
#   --out DIR         where results go (default bench/results/<date>-<label>-scaling/):
#                     scaling.md, scaling.json, scaling.svg, runs.tsv, meta.tsv,
#                     checks.tsv, peerpath-json/ (every peerpath --json report)
#   --label NAME      machine kind for the title and default --out (default <hostname>-<nproc>cpu)
#   --disk DIR        also measure on a real disk: `peerpath bench-io` in DIR (O_DIRECT
#                     sequential read/write, 1M and 4M blocks, queue depth 4 and 16), then
#                     peerpath compress and decompress file to file with input and output in
#                     DIR at the largest thread count, synced (default) and --no-sync; a
#                     private sub-directory of DIR is used and removed at the end
#   --disk-size SIZE  file size for bench-io (default 1G)
#   --deadline S      after S seconds of measuring, the remaining cells get 1 run each
#                     (default 0: no deadline)
#
# What is timed: each command alone, wall clock from bash's $EPOCHREALTIME before the
# command to after it (no shell start-up inside the interval), the command's output
# removed beforehand (untimed) so every run writes a new file. pigz and igzip write
# through a shell redirect (`-c IN > OUT`); peerpath writes OUT itself with --no-sync
# (no fsync, like the others) in memory. CPU seconds per run are the children's
# user+system time of this shell (/proc/self/stat, clock ticks). Correctness, untimed:
# every compressed output is decompressed and compared with the input, every
# decompressed output is compared with the input (cmp). A tool that fails its
# start-up check (e.g. pigz aborting on a foreign zlib) is skipped and the report says why.
# The report is rewritten after each phase, so a run cut short still leaves one.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
ORIG_CMDLINE=$(printf '%q ' "$0" "$@")
ORIG_CMDLINE=${ORIG_CMDLINE% }

# Messages go to the stderr the script started with (fd LOGFD), also from a trap that runs
# while a measured command's stderr is redirected.
exec {LOGFD}>&2
log() { printf '[scaling] %s\n' "$*" >&"$LOGFD"; }
die() {
    printf '\n[scaling] ERROR: %s\n\n' "$*" >&"$LOGFD"
    exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

pp=$REPO_ROOT/target/release/peerpath
input=""
slice=""
repeat=1
scratch_parent=/dev/shm/ppscale
threads=""
runs=3
quick=0
debs=""
out=""
label=""
disk=""
disk_size=1G
deadline=0
while [ $# -gt 0 ]; do
    case $1 in
        --peerpath) pp=${2:?--peerpath needs a value}; shift ;;
        --input) input=${2:?--input needs a value}; shift ;;
        --slice) slice=${2:?--slice needs a value}; shift ;;
        --repeat) repeat=${2:?--repeat needs a value}; shift ;;
        --scratch) scratch_parent=${2:?--scratch needs a value}; shift ;;
        --threads) threads=${2:?--threads needs a value}; shift ;;
        --runs) runs=${2:?--runs needs a value}; shift ;;
        --quick) quick=1 ;;
        --debs) debs=${2:?--debs needs a value}; shift ;;
        --out) out=${2:?--out needs a value}; shift ;;
        --label) label=${2:?--label needs a value}; shift ;;
        --disk) disk=${2:?--disk needs a value}; shift ;;
        --disk-size) disk_size=${2:?--disk-size needs a value}; shift ;;
        --deadline) deadline=${2:?--deadline needs a value}; shift ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done

export LC_ALL=C
is_uint() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
is_uint "$runs" && [ "$runs" -ge 1 ] || die "--runs must be a positive integer, got '$runs'"
is_uint "$repeat" && [ "$repeat" -ge 1 ] || die "--repeat must be a positive integer, got '$repeat'"
is_uint "$deadline" || die "--deadline must be a whole number of seconds, got '$deadline'"
[ -z "$input" ] || [ -z "$slice" ] || die "give --input or --slice, not both"
[ -n "$input" ] || [ -n "$slice" ] || input=$REPO_ROOT/data/corpus/metastudent_MFO_goasp.fasta
[ -z "$input" ] || [ -f "$input" ] || die "input '$input' not found (scripts/fetch-corpus.sh makes the default one)"
[ -z "$slice" ] || [ -f "$slice" ] || die "slice '$slice' not found"
command -v python3 >/dev/null 2>&1 || die "python3 is needed (for the report)"
abspath() { printf '%s/%s' "$(cd -- "$(dirname -- "$1")" && pwd)" "$(basename -- "$1")"; }

nproc=$(nproc)
if [ -z "$threads" ]; then
    t=1
    while [ "$t" -lt "$nproc" ]; do threads+="$t "; t=$((t * 2)); done
    threads+=$nproc
fi
threads=$(printf '%s\n' $threads | sort -n -u | tr '\n' ' ')
threads=${threads% }
for t in $threads; do is_uint "$t" && [ "$t" -ge 1 ] || die "--threads: '$t' is not a positive integer"; done
tmax=${threads##* }
label=${label:-$(hostname -s 2>/dev/null || hostname)-${nproc}cpu}
label=${label//[^A-Za-z0-9._-]/_}
out=${out:-$REPO_ROOT/bench/results/$(date +%Y-%m-%d)-$label-scaling}
mkdir -p -- "$out"
out=$(cd -- "$out" && pwd)

# Clock: bash 5's $EPOCHREALTIME (no fork); else date(1).
if [ -n "${EPOCHREALTIME:-}" ]; then
    now_us() { NOW_US=${EPOCHREALTIME/[.,]/}; }
    clock_src='bash $EPOCHREALTIME'
else
    now_us() { NOW_US=$(date +%s%6N); }
    clock_src='date +%s%6N'
fi
# Children's CPU time of this shell (fields 16, 17 of /proc/$$/stat: cutime, cstime).
clk_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
child_ticks() {
    local stat rest
    read -r stat </proc/$$/stat
    rest=${stat##*) }
    # shellcheck disable=SC2086
    set -- $rest
    CHILD_TICKS=$((${14} + ${15}))
}
fmt_us() { printf '%d.%06d' $(($1 / 1000000)) $(($1 % 1000000)); }
now_us
T_START=$NOW_US

# --- scratch ---------------------------------------------------------------------------

made_parent=0
[ -d "$scratch_parent" ] || { mkdir -p -- "$scratch_parent" && made_parent=1; }
S=$(mktemp -d "$scratch_parent/run.XXXXXX")
D="" # private dir under --disk
report_done=0
cleanup() {
    local rc=$?
    set +e
    if [ "$report_done" -eq 0 ] && [ -s "${RUNS:-/nonexistent}" ]; then
        log "run cut short (exit $rc): writing the partial report"
        make_report partial
    fi
    rm -rf -- "$S"
    [ -z "$D" ] || rm -rf -- "$D"
    [ "$made_parent" -eq 0 ] || rmdir -- "$scratch_parent" 2>/dev/null
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- tools -----------------------------------------------------------------------------

[ -x "$pp" ] || die "peerpath binary '$pp' not found or not executable (cargo build --release -p peerpath-cli)"
pp=$(abspath "$pp")
pp_version=$("$pp" --version 2>&1 | head -n1) || die "'$pp --version' failed: $pp_version"
log "peerpath: $pp ($pp_version)"

DEB_LD="" # LD_LIBRARY_PATH for the unpacked pigz/igzip only
deb_note=""
if [ -n "$debs" ]; then
    [ -d "$debs" ] || die "--debs '$debs' is not a directory"
    debs=$(cd -- "$debs" && pwd)
    prefix=$S/debroot
    mkdir -p -- "$prefix"
    n=0
    for deb in "$debs"/*.deb; do
        [ -f "$deb" ] || continue
        if command -v dpkg-deb >/dev/null 2>&1; then
            dpkg-deb -x "$deb" "$prefix" || die "dpkg-deb -x $deb failed"
            how="dpkg-deb -x"
        else
            python3 "$SCRIPT_DIR/scaling_report.py" extract-deb "$deb" "$prefix" || die "could not unpack $deb"
            how="python (ar + tar)"
        fi
        deb_note+="$(basename -- "$deb") "
        n=$((n + 1))
    done
    [ "$n" -gt 0 ] || die "--debs '$debs' holds no .deb files"
    deb_note="${deb_note% } (unpacked with $how)"
    for d in "$prefix"/usr/lib/x86_64-linux-gnu "$prefix"/lib/x86_64-linux-gnu "$prefix"/usr/lib "$prefix"/lib \
        "$prefix"/usr/lib/*-linux-gnu "$prefix"/lib/*-linux-gnu; do
        [ -d "$d" ] || continue
        case ":$DEB_LD:" in *":$d:"*) continue ;; esac
        compgen -G "$d/*.so*" >/dev/null && DEB_LD+="${DEB_LD:+:}$d"
    done
    export PATH="$prefix/usr/bin:$prefix/bin:$PATH"
    log "unpacked $n .deb file(s) from $debs into $prefix; libraries for pigz/igzip: ${DEB_LD:-none}"
fi
tool_ld=${DEB_LD:-${LD_LIBRARY_PATH:-}}
# Run a peer with the unpacked libraries (only these two processes see them: python3 and
# peerpath keep the system's own zlib).
pigz_() { LD_LIBRARY_PATH=$tool_ld "$PIGZ" "$@"; }
igzip_() { LD_LIBRARY_PATH=$tool_ld "$IGZIP" "$@"; }

PIGZ=$(command -v pigz || true)
IGZIP=$(command -v igzip || true)
have_pigz=0
have_igzip=0
pigz_status="not found"
igzip_status="not found"
probe=$S/probe.txt
printf 'peerpath scaling probe %s\n' "$(seq 1 2000 | tr '\n' ' ')" >"$probe"
if [ -n "$PIGZ" ]; then
    : >"$S/probe.err"
    if v=$(pigz_ --version 2>&1) && pigz_ -1 -p 2 -c "$probe" 2>"$S/probe.err" | pigz_ -d -c 2>>"$S/probe.err" | cmp -s - "$probe"; then
        have_pigz=1
        pigz_status="$PIGZ ($v)"
    else
        pigz_status="$PIGZ FAILED its start-up check (skipped): $(cat "$S/probe.err" - <<<"${v:-}" | tr '\n\t' '  ' | cut -c1-300)"
    fi
fi
if [ -n "$IGZIP" ]; then
    : >"$S/probe.err"
    if v=$(igzip_ -V 2>&1) && igzip_ -1 -T 2 -c "$probe" 2>"$S/probe.err" | igzip_ -d -c 2>>"$S/probe.err" | cmp -s - "$probe"; then
        have_igzip=1
        igzip_status="$IGZIP ($v)"
    else
        igzip_status="$IGZIP FAILED its start-up check (skipped): $(cat "$S/probe.err" - <<<"${v:-}" | tr '\n\t' '  ' | cut -c1-300)"
    fi
fi
lib_of() { # binary soname-pattern -> the library ldd resolves for it
    command -v ldd >/dev/null 2>&1 || { echo "?"; return; }
    LD_LIBRARY_PATH=$tool_ld ldd "$1" 2>/dev/null | awk -v p="$2" '$1 ~ p { print $3; exit }'
}
[ "$have_pigz" -eq 0 ] || pigz_status+=", libz: $(lib_of "$PIGZ" '^libz')"
[ "$have_igzip" -eq 0 ] || igzip_status+=", libisal: $(lib_of "$IGZIP" '^libisal')"
log "pigz:  $pigz_status"
log "igzip: $igzip_status"

# Round-trip checker for compressed outputs: igzip -d, else pigz -d, else gzip -d.
if [ "$have_igzip" -eq 1 ]; then
    checker() { igzip_ -d -c "$1"; }
    checker_name="igzip -d"
elif [ "$have_pigz" -eq 1 ]; then
    checker() { pigz_ -d -c "$1"; }
    checker_name="pigz -d"
elif command -v gzip >/dev/null 2>&1; then
    checker() { gzip -d -c "$1"; }
    checker_name="gzip -d"
else
    checker() { python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), sys.stdout.buffer, 1 << 20)' "$1"; }
    checker_name="python3 gzip"
fi

# --- input -----------------------------------------------------------------------------

IN=$S/input
if [ -n "$slice" ]; then
    slice=$(abspath "$slice")
    log "building the input: $slice decompressed, repeated $repeat times ..."
    if command -v xz >/dev/null 2>&1; then
        xz -d -c -- "$slice" >"$S/slice"
    else
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"), 1 << 20)' "$slice" "$S/slice"
    fi
    slice_base=$(basename -- "${slice%.xz}")
    slice_sums=${slice%.xz}.sha256
    slice_note="$(stat -c %s -- "$S/slice") bytes"
    if [ -f "$slice_sums" ]; then
        want=$(awk -v n="$slice_base" '$2 == n || $2 == "*" n { print $1; exit }' "$slice_sums")
        got=$(sha256sum -- "$S/slice" | awk '{ print $1 }')
        [ -z "$want" ] || [ "$want" = "$got" ] || die "the slice decompressed to sha256 $got, $slice_sums says $want"
        [ -z "$want" ] || slice_note+=", sha256 $got matches $(basename -- "$slice_sums")"
    fi
    : >"$IN"
    for _ in $(seq 1 "$repeat"); do cat -- "$S/slice" >>"$IN"; done
    rm -f -- "$S/slice"
    input_desc="$(basename -- "$slice") ($slice_note) repeated $repeat times"
else
    input=$(abspath "$input")
    log "copying the input $input into $S ..."
    cp -- "$input" "$IN"
    input_desc=$input
fi
in_bytes=$(stat -c %s -- "$IN")
in_sha=$(sha256sum -- "$IN" | awk '{ print $1 }')
avail_kb=$(df -Pk -- "$S" | awk 'NR == 2 { print $4 }')
need_kb=$((in_bytes * 3 / 1024))
[ "$avail_kb" -ge "$need_kb" ] || die "scratch $S has ${avail_kb} KiB free after the input, need about ${need_kb} KiB more"
log "input: $input_desc -> $in_bytes bytes, sha256 $in_sha"

# --- results files ---------------------------------------------------------------------

RUNS=$out/runs.tsv
CHECKS=$out/checks.tsv
META=$out/meta.tsv
PPJ=$out/peerpath-json
rm -rf -- "$PPJ"
mkdir -p -- "$PPJ"
printf 'phase\top\ttool\tthreads\trun\tseconds\tcpu_s\trc\tout_bytes\tjson\n' >"$RUNS"
printf 'phase\top\ttool\tthreads\tresult\tdetail\n' >"$CHECKS"

fs_of() { df -PT -- "$1" | awk 'NR == 2 { print $2 " on " $1 " (mounted at " $7 ")" }'; }
mount_opts() { awk -v m="$(df -P -- "$1" | awk 'NR == 2 { print $6 }')" '$2 == m { o = $4 } END { print o }' /proc/mounts; }
{
    printf 'cmdline\t%s\n' "$ORIG_CMDLINE"
    printf 'cwd\t%s\n' "$([ "$PWD" = "$REPO_ROOT" ] && echo "the repository root" || echo "$PWD")"
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    printf 'hostname\t%s\n' "$(hostname)"
    printf 'label\t%s\n' "$label"
    printf 'nproc\t%s\n' "$nproc"
    printf 'cpu\t%s\n' "$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    printf 'cpu_logical\t%s\n' "$(grep -c '^processor' /proc/cpuinfo)"
    printf 'cpu_cores\t%s\n' "$(awk -F': *' '/^physical id/ { p = $2 } /^core id/ { c[p " " $2] = 1 } END { n = 0; for (k in c) n++; print n }' /proc/cpuinfo)"
    printf 'cpu_sockets\t%s\n' "$(awk -F': *' '/^physical id/ { s[$2] = 1 } END { n = 0; for (k in s) n++; print n }' /proc/cpuinfo)"
    printf 'cpu_flags\t%s\n' "$(awk -F': *' '/^flags/ { n = split($2, f, " "); for (i = 1; i <= n; i++) if (f[i] ~ /^(avx2|avx512f|avx512bw|vpclmulqdq|pclmulqdq|sha_ni|hypervisor)$/) o = o (o == "" ? "" : " ") f[i]; print o; exit }' /proc/cpuinfo)"
    printf 'cgroup_cpu_max\t%s\n' "$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo '?')"
    printf 'affinity\t%s\n' "$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)"
    printf 'loadavg_start\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'kernel\t%s\n' "$(uname -srm)"
    # shellcheck disable=SC1091
    printf 'os\t%s\n' "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
    printf 'mem\t%s\n' "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    printf 'scratch\t%s\n' "$S"
    printf 'scratch_fs\t%s, options %s\n' "$(fs_of "$S")" "$(mount_opts "$S")"
    printf 'input_desc\t%s\n' "$input_desc"
    printf 'input_bytes\t%s\n' "$in_bytes"
    printf 'input_sha256\t%s\n' "$in_sha"
    printf 'threads\t%s\n' "$threads"
    printf 'runs\t%s\n' "$runs"
    printf 'quick\t%s\n' "$quick"
    printf 'deadline_s\t%s\n' "$deadline"
    printf 'clock\t%s\n' "$clock_src"
    printf 'clk_tck\t%s\n' "$clk_tck"
    printf 'peerpath\t%s\n' "$pp"
    printf 'ver_peerpath\t%s\n' "$pp_version"
    printf 'pigz\t%s\n' "$pigz_status"
    printf 'igzip\t%s\n' "$igzip_status"
    printf 'have_pigz\t%s\n' "$have_pigz"
    printf 'have_igzip\t%s\n' "$have_igzip"
    printf 'debs\t%s\n' "${deb_note:-none (tools from PATH)}"
    printf 'checker\t%s\n' "$checker_name"
    printf 'disk\t%s\n' "${disk:-}"
} >"$META"

make_report() { # [partial]
    python3 "$SCRIPT_DIR/scaling_report.py" report --out "$out" ${1:+--partial} >&"$LOGFD" 2>&"$LOGFD" ||
        log "WARNING: the report script failed"
}

# --- measuring -------------------------------------------------------------------------

ERR=$S/stderr.txt
# measure PHASE OP TOOL T RUN OUTFILE JSONFILE -- command...: times the command, records a row.
measure() {
    local phase=$1 op=$2 tool=$3 t=$4 run=$5 outf=$6 json=$7 t0 c0 us cpu rc ob
    shift 8
    rm -f -- "$outf"
    child_ticks
    c0=$CHILD_TICKS
    now_us
    t0=$NOW_US
    if "$@" 2>"$ERR"; then rc=0; else rc=$?; fi
    now_us
    us=$((NOW_US - t0))
    child_ticks
    cpu=$(((CHILD_TICKS - c0) * 100 / clk_tck)) # centiseconds
    ob=$(stat -c %s -- "$outf" 2>/dev/null || echo 0)
    LAST_S=$(fmt_us "$us")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%d.%02d\t%s\t%s\t%s\n' "$phase" "$op" "$tool" "$t" "$run" "$LAST_S" \
        $((cpu / 100)) $((cpu % 100)) "$rc" "$ob" "${json#"$out"/}" >>"$RUNS"
    local gbs
    gbs=$(awk -v b="$in_bytes" -v u="$us" 'BEGIN { printf "%.2f", (u > 0 ? b / u / 1000 : 0) }')
    if [ "$rc" -eq 0 ]; then
        log "$phase $op $tool T=$t run $run: ${LAST_S%???} s, $gbs GB/s, cpu $((cpu / 100)).$(printf '%02d' $((cpu % 100))) s"
    else
        log "$phase $op $tool T=$t run $run: FAILED (exit $rc): $(tail -c 400 "$ERR" | tr '\n' ' ')"
    fi
    return "$rc"
}
# A cell's check: its command failed (FAILED non-empty), or its output is checked
# (compressed outputs are decompressed first).
check_cell() { # PHASE OP TOOL T FAILED FILE
    if [ -n "$5" ]; then
        printf '%s\t%s\t%s\t%s\tFAILED\tthe command failed\n' "$1" "$2" "$3" "$4" >>"$CHECKS"
    elif [ "$2" = compress ]; then
        check "$1" "$2" "$3" "$4" c "$6"
    else
        check "$1" "$2" "$3" "$4" d "$6"
    fi
}

check() { # PHASE OP TOOL T KIND FILE  (KIND c: decompress and compare; d: compare)
    local res detail
    if [ ! -s "$6" ]; then
        res=FAILED detail="no output"
    elif [ "$5" = c ]; then
        if checker "$6" 2>/dev/null | cmp -s - "$IN"; then res=ok detail="$checker_name | cmp"; else res=FAILED detail="$checker_name | cmp differs or failed"; fi
    else
        if cmp -s -- "$6" "$IN"; then res=ok detail="cmp"; else res=FAILED detail="cmp: differs from the input"; fi
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$res" "$detail" >>"$CHECKS"
    [ "$res" = ok ] || log "CHECK FAILED: $1 $2 $3 T=$4: $detail"
}
past_deadline() {
    [ "$deadline" -gt 0 ] || return 1
    now_us
    [ $(((NOW_US - T_START) / 1000000)) -ge "$deadline" ]
}
runs_for() { # TOOL OP T -> number of runs for this cell
    local n=$runs
    if [ "$quick" -eq 1 ] && [ "$1" != peerpath ] && { [ "$3" -eq 1 ] || [ "$2" = decompress ]; }; then n=1; fi
    if past_deadline; then n=1; fi
    echo "$n"
}

tools_c=(peerpath)
tools_d=(peerpath)
[ "$have_pigz" -eq 0 ] || { tools_c+=(pigz); tools_d+=(pigz); }
[ "$have_igzip" -eq 0 ] || { tools_c+=(igzip); tools_d+=(igzip); }

# One command per tool and op. $1 = threads, $2 = output, $3 = json.
cmd_compress_peerpath() { "$pp" compress --level 1 --threads "$1" --no-sync --force "$IN" -o "$2" --json >"$3"; }
cmd_compress_pigz() { pigz_ -1 -p "$1" -c "$IN" >"$2"; }
cmd_compress_igzip() { igzip_ -1 -T "$1" -c "$IN" >"$2"; }
cmd_decompress_peerpath() { "$pp" decompress --threads "$1" --no-sync --force "$REF" -o "$2" --json >"$3"; }
cmd_decompress_pigz() { pigz_ -d -p "$1" -c "$REF" >"$2"; }
cmd_decompress_igzip() { igzip_ -d -c "$REF" >"$2"; }

REF=$S/ref.gz
log "warm-up (untimed): each compressor once at T=$tmax; peerpath's output is the decompression input"
"$pp" compress --level 1 --threads "$tmax" --no-sync --force "$IN" -o "$REF" --quiet ||
    die "peerpath compress failed on the input (warm-up)"
[ "$have_pigz" -eq 0 ] || pigz_ -1 -p "$tmax" -c "$IN" >/dev/null || log "WARNING: pigz warm-up failed"
[ "$have_igzip" -eq 0 ] || igzip_ -1 -T "$tmax" -c "$IN" >/dev/null || log "WARNING: igzip warm-up failed"
check mem reference peerpath "$tmax" c "$REF"
grep -q $'\treference\tpeerpath\t[0-9]*\tok' "$CHECKS" || die "peerpath's output does not decompress to the input"

phase_loop() { # OP: every thread count, rounds of every tool (a failed cell is not run again)
    local op=$1 t r tool n outf json maxr
    local -n tools=tools_${op:0:1}
    declare -A failed=()
    for t in $threads; do
        maxr=0
        declare -A nruns=()
        for tool in "${tools[@]}"; do
            n=$(runs_for "$tool" "$op" "$t")
            nruns[$tool]=$n
            [ "$n" -le "$maxr" ] || maxr=$n
        done
        for r in $(seq 1 "$maxr"); do
            for tool in "${tools[@]}"; do
                [ "$r" -le "${nruns[$tool]}" ] || continue
                [ -z "${failed[$tool/$t]:-}" ] || continue
                outf=$S/$op-$tool.out
                json=/dev/null
                [ "$tool" != peerpath ] || json=$PPJ/mem-$op-T$t-r$r.json
                measure mem "$op" "$tool" "$t" "$r" "$outf" "$json" -- "cmd_${op}_$tool" "$t" "$outf" "$json" ||
                    failed[$tool/$t]=1
            done
        done
        for tool in "${tools[@]}"; do
            check_cell mem "$op" "$tool" "$t" "${failed[$tool/$t]:-}" "$S/$op-$tool.out"
            rm -f -- "$S/$op-$tool.out"
        done
        unset nruns
    done
}

log "compression in memory: threads $threads; tools ${tools_c[*]}; $runs run(s) per cell"
phase_loop compress
make_report
log "decompression in memory (of peerpath's -T$tmax output): threads $threads; tools ${tools_d[*]}"
phase_loop decompress
make_report

# --- disk ------------------------------------------------------------------------------

drop_caches() { # echo 3 > drop_caches when allowed; says what happened
    sync
    if { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
        DROP="dropped (sync; echo 3 > /proc/sys/vm/drop_caches)"
    else
        DROP="not possible (writing /proc/sys/vm/drop_caches was refused); peerpath reads with O_DIRECT anyway"
    fi
}
if [ -n "$disk" ]; then
    mkdir -p -- "$disk"
    disk=$(cd -- "$disk" && pwd)
    D=$(mktemp -d "$disk/ppscale.XXXXXX")
    printf 'disk_fs\t%s, options %s\n' "$(fs_of "$D")" "$(mount_opts "$D")" >>"$META"
    printf 'disk_dev\t%s\n' "$(findmnt -no SOURCE,FSTYPE -T "$D" 2>/dev/null | head -n1 || echo '?')" >>"$META"
    dkb=$(df -Pk -- "$D" | awk 'NR == 2 { print $4 }')
    if [ "$dkb" -lt $((in_bytes * 4 / 1024 + 1100000)) ]; then
        log "WARNING: $D has only ${dkb} KiB free: disk rows skipped"
        printf 'disk_skipped\t%s\n' "only ${dkb} KiB free" >>"$META"
    else
        log "disk: peerpath bench-io in $D (size $disk_size) ..."
        if "$pp" bench-io --file "$D/bench-io.dat" --size "$disk_size" --sweep-bs 1M,4M --sweep-qd 4,16 \
            --rw both --random skip --runtime-s 1 --json >"$out/disk-bench-io.json" 2>"$ERR"; then
            log "disk: bench-io done"
        else
            log "WARNING: bench-io failed: $(tail -c 400 "$ERR" | tr '\n' ' ')"
            rm -f -- "$out/disk-bench-io.json"
        fi
        rm -f -- "$D/bench-io.dat"
        cp -- "$IN" "$D/input"
        drop_caches
        printf 'disk_drop_caches\t%s\n' "$DROP" >>"$META"
        log "disk: page cache drop before each run: $DROP"
        DIN=$D/input
        DREF=$D/input.gz
        cmd_dcompress() { "$pp" compress --level 1 --threads "$tmax" --force "$DIN" -o "$2" --json >"$3"; }
        cmd_dcompress_nosync() { "$pp" compress --level 1 --threads "$tmax" --no-sync --force "$DIN" -o "$2" --json >"$3"; }
        cmd_ddecompress() { "$pp" decompress --threads "$tmax" --force "$DREF" -o "$2" --json >"$3"; }
        cmd_ddecompress_nosync() { "$pp" decompress --threads "$tmax" --no-sync --force "$DREF" -o "$2" --json >"$3"; }
        declare -A dfailed=()
        for op in compress decompress; do
            n=$(runs_for peerpath "$op" "$tmax")
            for r in $(seq 1 "$n"); do
                for v in peerpath peerpath-nosync; do
                    [ -z "${dfailed[$op/$v]:-}" ] || continue
                    fn=cmd_d$op
                    [ "$v" = peerpath ] || fn=${fn}_nosync
                    outf=$D/$op-$v.out
                    [ "$op" = compress ] || outf=$D/$op-$v.restored
                    rm -f -- "$outf"
                    drop_caches
                    measure disk "$op" "$v" "$tmax" "$r" "$outf" "$PPJ/disk-$op-$v-r$r.json" -- \
                        "$fn" "$tmax" "$outf" "$PPJ/disk-$op-$v-r$r.json" || dfailed[$op/$v]=1
                done
            done
            for v in peerpath peerpath-nosync; do
                outf=$D/$op-$v.out
                [ "$op" = compress ] || outf=$D/$op-$v.restored
                check_cell disk "$op" "$v" "$tmax" "${dfailed[$op/$v]:-}" "$outf"
            done
            if [ "$op" = compress ]; then
                # The decompression input: the synced compression's output (kept), else made now.
                if [ -s "$D/compress-peerpath.out" ] && [ -z "${dfailed[compress/peerpath]:-}" ]; then
                    mv -f -- "$D/compress-peerpath.out" "$DREF"
                else
                    cp -- "$REF" "$DREF"
                fi
                rm -f -- "$D"/compress-*.out
                sync
            else
                rm -f -- "$D"/decompress-*.restored
            fi
        done
    fi
    rm -rf -- "$D"
    D=""
fi

now_us
printf 'elapsed_s\t%s\n' "$(fmt_us $((NOW_US - T_START)))" >>"$META"
printf 'loadavg_end\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$META"
make_report
report_done=1
log "done in $(fmt_us $((NOW_US - T_START))) s; results in $out (scaling.md, scaling.json, scaling.svg)"
if grep -q $'\tFAILED\t' "$CHECKS"; then
    die "some outputs failed their check: see $CHECKS"
fi
