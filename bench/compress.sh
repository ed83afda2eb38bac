#!/usr/bin/env bash
# bench/compress.sh - peerpath compress/decompress vs gzip, pigz, igzip, zstd.
#
# Usage: bench/compress.sh [--runs N] [--input FILE] [--peerpath PATH]
#                          [--label NAME] [--scratch DIR] [--fsync-others]
#                          [--no-peerpath] [--no-install]
#
#   --runs N         timed runs per command, interleaved in N rounds (default 5; 1 warm-up
#                    run of each command is added before the first round)
#   --input FILE     uncompressed input (default data/corpus/metastudent_MFO_goasp.fasta,
#                    made by scripts/fetch-corpus.sh)
#   --peerpath PATH  peerpath binary (default target/release/peerpath); if it does
#                    not exist, peerpath is skipped and the report says so
#   --label NAME     machine kind for the result file name (default <hostname>-<nproc>cpu)
#   --scratch DIR    where outputs go (default: a temp dir next to the input, so on
#                    the same filesystem); removed at the end
#   --fsync-others   append `sync OUT` (fsync of the output file) to every non-peerpath
#                    command, so that all tools pay for durable output like peerpath
#   --no-peerpath    skip peerpath even if the binary exists
#   --no-install     do not apt-get install missing tools; fail instead
#
# Writes bench/results/<date>-<label>.md (and the raw hyperfine JSON next to it
# as <same name>.compress.json / .decompress.json). Paths in the options are
# relative to the current directory; defaults are relative to the repository.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
ORIG_CMDLINE=$(printf '%q ' "$0" "$@")
ORIG_CMDLINE=${ORIG_CMDLINE% }

log() { printf '[bench] %s\n' "$*" >&2; }
die() {
    printf '\n[bench] ERROR: %s\n\n' "$*" >&2
    exit 1
}
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }

runs=5
input=$REPO_ROOT/data/corpus/metastudent_MFO_goasp.fasta
pp=$REPO_ROOT/target/release/peerpath
label=""
scratch_parent=""
fsync_others=0
use_pp=1
install=1
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=${2:?--runs needs a value}; shift ;;
        --input) input=${2:?--input needs a value}; shift ;;
        --peerpath) pp=${2:?--peerpath needs a value}; shift ;;
        --label) label=${2:?--label needs a value}; shift ;;
        --scratch) scratch_parent=${2:?--scratch needs a value}; shift ;;
        --fsync-others) fsync_others=1 ;;
        --no-peerpath) use_pp=0 ;;
        --no-install) install=0 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
    shift
done
case $runs in '' | *[!0-9]* | 0) die "--runs must be a positive integer, got '$runs'" ;; esac
[ -f "$input" ] || die "input '$input' not found (run scripts/fetch-corpus.sh, or pass --input FILE)"
input=$(cd -- "$(dirname -- "$input")" && pwd)/$(basename -- "$input")

export LC_ALL=C
nproc=$(nproc)
label=${label:-$(hostname -s 2>/dev/null || hostname)-${nproc}cpu}
label=${label//[^A-Za-z0-9._-]/_}

# --- tools ----------------------------------------------------------------------

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

missing_pkgs=()
need() { command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2"); }
need gzip gzip
need pigz pigz
need igzip isal
need zstd zstd
need hyperfine hyperfine
need python3 python3
need cmp diffutils
if [ ${#missing_pkgs[@]} -gt 0 ]; then
    [ "$install" -eq 1 ] || die "missing tools (Debian packages: ${missing_pkgs[*]}); --no-install was given"
    log "installing missing Debian packages: ${missing_pkgs[*]}"
    if ! apt-cache show "${missing_pkgs[@]}" >/dev/null 2>&1; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing_pkgs[@]}" >&2
fi

pp_status=""
if [ "$use_pp" -eq 0 ]; then
    pp_status="skipped (--no-peerpath)"
elif [ ! -x "$pp" ]; then
    use_pp=0
    pp_status="skipped: binary '$pp' not found (build it with 'cargo build --release')"
else
    pp=$(cd -- "$(dirname -- "$pp")" && pwd)/$(basename -- "$pp")
    pp_status="$pp"
fi
[ "$use_pp" -eq 1 ] || log "peerpath $pp_status"

# --- scratch dir (same filesystem as the input by default) --------------------------

if [ -z "$scratch_parent" ]; then
    scratch_parent=$(dirname -- "$input")
    [ -w "$scratch_parent" ] || scratch_parent=$REPO_ROOT/target
fi
mkdir -p -- "$scratch_parent"
S=$(mktemp -d "$scratch_parent/.bench-scratch.XXXXXX")
M="" # the same job in memory: input and output on tmpfs (/dev/shm), when it has room
cleanup() { rm -rf -- "$S"; [ -z "$M" ] || rm -rf -- "$M"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

avail_kb=$(df -Pk -- "$S" | awk 'NR == 2 { print $4 }')
in_bytes=$(stat -c %s -- "$input")
need_kb=$((in_bytes * 14 / 1024)) # every output is kept until it is checked
[ "$avail_kb" -ge "$need_kb" ] || die "scratch dir $S has ${avail_kb} KiB free, need about ${need_kb} KiB (14x the input)"

# --- commands ------------------------------------------------------------------------
# Each row: name <TAB> kind (c|d) <TAB> output file <TAB> shell command.
# Compression outputs are distinct files so that their sizes can be read afterwards;
# decompression outputs are distinct files compared with the input afterwards.

q() { printf '%q' "$1"; }
IN=$(q "$input")
SQ=$(q "$S")
PPQ=$(q "$pp")
N=$nproc

spec=$S/commands.tsv
: >"$spec"
add() { # name kind outfile command
    local cmd=$4
    if [ "$fsync_others" -eq 1 ] && [[ $1 != peerpath* ]] && [ "$3" != /dev/null ]; then
        cmd="$cmd && sync $(q "$3")"
    fi
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$cmd" >>"$spec"
}

add "gzip -1" c "$S/gzip1.gz" "gzip -1 -c $IN > $SQ/gzip1.gz"
add "pigz -1 -p1" c "$S/pigz1_p1.gz" "pigz -1 -p1 -c $IN > $SQ/pigz1_p1.gz"
add "pigz -1 -p$N" c "$S/pigz1_pN.gz" "pigz -1 -p$N -c $IN > $SQ/pigz1_pN.gz"
add "igzip -1 -T1" c "$S/igzip1_T1.gz" "igzip -1 -T1 -c $IN > $SQ/igzip1_T1.gz"
add "igzip -1 -T$N" c "$S/igzip1_TN.gz" "igzip -1 -T$N -c $IN > $SQ/igzip1_TN.gz"
add "zstd -1 -T1" c "$S/zstd1_T1.zst" "zstd -q -1 -T1 -c $IN > $SQ/zstd1_T1.zst"
add "zstd -1 -T$N" c "$S/zstd1_TN.zst" "zstd -q -1 -T$N -c $IN > $SQ/zstd1_TN.zst"
if [ "$use_pp" -eq 1 ]; then
    add "peerpath --threads 1" c "$S/pp_t1.gz" "$PPQ compress --level 1 --threads 1 --force $IN --output $SQ/pp_t1.gz"
    add "peerpath --threads $N" c "$S/pp_tN.gz" "$PPQ compress --level 1 --threads $N --force $IN --output $SQ/pp_tN.gz"
    # The issue's overlap target: file to file with O_DIRECT against the same job with the
    # input and output already in memory (tmpfs; a copy of the input made once, untimed).
    shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
    if [ -n "$shm_kb" ] && [ "$shm_kb" -ge $((in_bytes * 2 / 1024)) ] && M=$(mktemp -d /dev/shm/.bench-mem.XXXXXX); then
        cp -- "$input" "$M/in"
        MQ=$(q "$M")
        add "peerpath --threads $N, in memory" c "$M/pp_mem.gz" "$PPQ compress --level 1 --threads $N --force $MQ/in --output $MQ/pp_mem.gz"
    else
        M=""
        log "no room on /dev/shm for a copy of the input: the in-memory row is skipped"
    fi
fi
# Durable output for everyone: the multi-threaded rows again, then `sync OUT` (timed), so they
# pay for durable output as peerpath does (--fsync-others does this to every row instead).
if [ "$fsync_others" -eq 0 ]; then
    add "igzip -1 -T$N + sync" c "$S/igzip1_TN_sync.gz" "igzip -1 -T$N -c $IN > $SQ/igzip1_TN_sync.gz && sync $SQ/igzip1_TN_sync.gz"
    add "pigz -1 -p$N + sync" c "$S/pigz1_pN_sync.gz" "pigz -1 -p$N -c $IN > $SQ/pigz1_pN_sync.gz && sync $SQ/pigz1_pN_sync.gz"
    # And the other way round: peerpath leaving its output unsynced, as the others do.
    if [ "$use_pp" -eq 1 ]; then
        add "peerpath --threads $N --no-sync" c "$S/pp_tN_nosync.gz" "$PPQ compress --level 1 --threads $N --no-sync --force $IN --output $SQ/pp_tN_nosync.gz"
    fi
fi
# Compressing alone: the multi-threaded rows again with the output discarded, so the disk's
# write speed (and peerpath's fsync) is out of the comparison. Not checked here: the rows
# above run the same commands on the same input and are.
add "igzip -1 -T$N > /dev/null" c /dev/null "igzip -1 -T$N -c $IN > /dev/null"
add "pigz -1 -p$N > /dev/null" c /dev/null "pigz -1 -p$N -c $IN > /dev/null"
if [ "$use_pp" -eq 1 ]; then
    add "peerpath --threads $N > /dev/null" c /dev/null "$PPQ compress --level 1 --threads $N $IN --output - > /dev/null"
fi
# Decompression: gzip/pigz/igzip all read the igzip -1 -T1 output; peerpath reads its own
# (multi-member, with size subfields) output of the all-cores run.
add "gzip -d" d "$S/d_gzip.out" "gzip -d -c $SQ/igzip1_T1.gz > $SQ/d_gzip.out"
add "pigz -d" d "$S/d_pigz.out" "pigz -d -c $SQ/igzip1_T1.gz > $SQ/d_pigz.out"
add "igzip -d" d "$S/d_igzip.out" "igzip -d -c $SQ/igzip1_T1.gz > $SQ/d_igzip.out"
if [ "$use_pp" -eq 1 ]; then
    add "peerpath decompress --threads 1" d "$S/d_pp_t1.out" "$PPQ decompress --threads 1 --force $SQ/pp_tN.gz --output $SQ/d_pp_t1.out"
    add "peerpath decompress --threads $N" d "$S/d_pp_tN.out" "$PPQ decompress --threads $N --force $SQ/pp_tN.gz --output $SQ/d_pp_tN.out"
fi
if [ "$fsync_others" -eq 0 ]; then
    add "igzip -d + sync" d "$S/d_igzip_sync.out" "igzip -d -c $SQ/igzip1_T1.gz > $SQ/d_igzip_sync.out && sync $SQ/d_igzip_sync.out"
    if [ "$use_pp" -eq 1 ]; then
        add "peerpath decompress --threads $N --no-sync" d "$S/d_pp_tN_nosync.out" "$PPQ decompress --threads $N --no-sync --force $SQ/pp_tN.gz --output $SQ/d_pp_tN_nosync.out"
    fi
fi
# Decoding alone: the same decoders with the output discarded, so the disk's write speed
# (and peerpath's fsync) is out of the comparison. Not checked here: the rows above run the
# same decoders on the same input and are.
add "igzip -d > /dev/null" d /dev/null "igzip -d -c $SQ/igzip1_T1.gz > /dev/null"
if [ "$use_pp" -eq 1 ]; then
    add "peerpath decompress --threads $N > /dev/null" d /dev/null "$PPQ decompress --threads $N $SQ/pp_tN.gz --output - > /dev/null"
fi

# --- machine and versions ---------------------------------------------------------------

in_sha=$(sha256sum -- "$input" | awk '{ print $1 }')
corpus_note=""
sums=$REPO_ROOT/data/corpus.sha256
if [ -f "$sums" ]; then
    match=$(awk -v h="$in_sha" '$1 == h { print $2; exit }' "$sums")
    if [ -n "$match" ]; then
        corpus_note="matches \`${match#\*}\` in data/corpus.sha256"
    else
        corpus_note="not a file listed in data/corpus.sha256"
    fi
fi

pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }
meta=$S/meta.tsv
{
    printf 'cmdline\t%s\n' "$ORIG_CMDLINE"
    if [ "$PWD" = "$REPO_ROOT" ]; then
        printf 'cwd\t%s\n' "the repository root"
    else
        printf 'cwd\t%s\n' "$PWD"
    fi
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    printf 'hostname\t%s\n' "$(hostname)"
    printf 'label\t%s\n' "$label"
    printf 'nproc\t%s\n' "$nproc"
    printf 'cpu\t%s\n' "$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
    printf 'kernel\t%s\n' "$(uname -srm)"
    # shellcheck disable=SC1091
    printf 'os\t%s\n' "$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}")"
    printf 'mem\t%s\n' "$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    printf 'fs\t%s\n' "$(df -PT -- "$S" | awk 'NR == 2 { print $2 " on " $1 " (mounted at " $7 ")" }')"
    printf 'input\t%s\n' "$input"
    printf 'input_bytes\t%s\n' "$in_bytes"
    printf 'input_sha256\t%s\n' "$in_sha"
    printf 'corpus_note\t%s\n' "$corpus_note"
    printf 'runs\t%s\n' "$runs"
    printf 'fsync_others\t%s\n' "$fsync_others"
    printf 'peerpath\t%s\n' "$pp_status"
    printf 'ver_gzip\t%s (Debian gzip %s)\n' "$(gzip --version | head -n1)" "$(pkgver gzip)"
    printf 'ver_pigz\t%s (Debian pigz %s)\n' "$(pigz --version 2>&1 | head -n1)" "$(pkgver pigz)"
    printf 'ver_igzip\t%s (Debian isal %s, libisal2 %s)\n' "$(igzip -V 2>&1 | head -n1)" "$(pkgver isal)" "$(pkgver libisal2)"
    printf 'ver_zstd\t%s (Debian zstd %s)\n' "$(zstd --version | head -n1 | tr -d '*' | sed 's/^ *//; s/ *$//')" "$(pkgver zstd)"
    printf 'ver_hyperfine\t%s (Debian hyperfine %s)\n' "$(hyperfine --version | head -n1)" "$(pkgver hyperfine)"
    if [ "$use_pp" -eq 1 ]; then
        printf 'ver_peerpath\t%s\n' "$("$pp" --version 2>&1 | head -n1 || echo '? (--version failed)')"
    fi
} >"$meta"

# --- run -----------------------------------------------------------------------------------

mkdir -p -- "$REPO_ROOT/bench/results"
base=$REPO_ROOT/bench/results/$(date +%Y-%m-%d)-$label
if [ -e "$base.md" ]; then
    i=2
    while [ -e "$base-$i.md" ]; do i=$((i + 1)); done
    base=$base-$i
fi

# Interleaved rounds: each round runs every command of a kind once (hyperfine --runs 1,
# the first round after one warm-up run of each), so a slow stretch of a shared machine
# hits every command alike instead of a few commands' blocks of runs. The rounds' JSON
# files are merged into one in hyperfine's schema, with times in round order (the report
# pairs run i of two commands).
# Before every run (untimed): the command's output from the previous run is removed, then
# `sync`. Every tool writes a new file, as a user's first run would: replacing a file costs
# freeing its blocks (`>` truncates, a rename drops the old inode; on a file system mounted
# with `discard` that is a synchronous discard, ~60 ms per 100 MB on the 2-core VM), and
# that cost fell on whichever tool overwrote the biggest old output.
run_hyperfine() { # kind json
    local name kind out cmd round
    local args=(--runs 1 --style basic) prepares=() names=()
    while IFS=$'\t' read -r name kind out cmd; do
        [ "$kind" = "$1" ] || continue
        if [ "$out" = /dev/null ]; then
            prepares+=(--prepare sync)
        else
            prepares+=(--prepare "rm -f $(q "$out") && sync")
        fi
        names+=(--command-name "$name" "$cmd")
    done <"$spec"
    args+=("${prepares[@]}" "${names[@]}")
    for round in $(seq 1 "$runs"); do
        log "round $round of $runs (hyperfine --runs 1, every command once) ..."
        if [ "$round" -eq 1 ]; then
            hyperfine --warmup 1 --export-json "$2.round$round" "${args[@]}" >&2
        else
            hyperfine --export-json "$2.round$round" "${args[@]}" >&2
        fi
    done
    python3 "$SCRIPT_DIR/compress_report.py" --merge "$2" "$runs"
}

log "input $input ($in_bytes bytes, sha256 $in_sha)"
log "scratch $S; results -> ${base#"$REPO_ROOT"/}.md"
log "compression: $(grep -c $'\tc\t' "$spec") commands x ($runs runs + 1 warm-up)"
run_hyperfine c "$S/compress.json"
log "decompression: $(grep -c $'\td\t' "$spec") commands x ($runs runs + 1 warm-up)"
run_hyperfine d "$S/decompress.json"

# --- check outputs (untimed) ------------------------------------------------------------------

log "checking outputs ..."
check=$S/check.tsv
: >"$check"
while IFS=$'\t' read -r name kind out cmd; do
    if [ "$out" = /dev/null ]; then
        printf '%s\t0\t%s\t%s\n' "$name" "discarded" "$cmd" >>"$check"
        continue
    fi
    [ -f "$out" ] || die "$name produced no output file $out"
    size=$(stat -c %s -- "$out")
    if [ "$kind" = c ]; then
        case $out in
            *.zst) dec=(zstd -q -d -c -- "$out") ;;
            *) dec=(gzip -d -c -- "$out") ;;
        esac
        if "${dec[@]}" | cmp -s - "$input"; then ok=ok; else ok=FAILED; fi
    else
        if cmp -s -- "$out" "$input"; then ok=ok; else ok=FAILED; fi
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$size" "$ok" "$cmd" >>"$check"
    [ "$ok" = ok ] || log "OUTPUT CHECK FAILED for $name ($out)"
done <"$spec"

cp -- "$S/compress.json" "$base.compress.json"
cp -- "$S/decompress.json" "$base.decompress.json"
python3 "$SCRIPT_DIR/compress_report.py" "$meta" "$check" "$S/compress.json" "$S/decompress.json" \
    "$(basename -- "$base")" >"$base.md"
sed -i "s#$S#\$SCRATCH#g" "$base.md" "$base.compress.json" "$base.decompress.json"
log "wrote ${base#"$REPO_ROOT"/}.md (+ .compress.json, .decompress.json)"
cat -- "$base.md"
if grep -q $'\tFAILED\t' "$check"; then
    die "some outputs did not round-trip; see the 'check' column in ${base#"$REPO_ROOT"/}.md"
fi
