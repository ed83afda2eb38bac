#!/usr/bin/env bash
# bench/gpu-pack.sh - builds .gpu/, the folder bench/gpu-machine.sh needs on the lent GPU machine.
#
# Usage (repository root): bench/gpu-pack.sh [--no-gputests] [--no-b3sum]
#
# The lent machine has no Rust, no package registry and no network, so everything a run there
# needs is built here and carried (the device tool's `carry: [".gpu"]`, 64 MiB at most). Makes:
#   .gpu/peerpath.xz         this checkout's release build, stripped (xz: under the carry limit)
#   .gpu/gputests.xz         the peerpath-gpu crate's test binary (its GPU tests run there)
#   .gpu/b3sum               b3sum from crates.io (cargo install), for the dedup step's baseline
#   .gpu/slice.fa.xz         the first 48 MiB of the corpus FASTA, cut after a newline, xz -9;
#   .gpu/slice.fa.sha256     its SHA-256 (scripts/fetch-corpus.sh builds the corpus if missing)
#   .gpu/libnvcomp.so.6.xz   from PyPI's nvidia-libnvcomp-cu13 wheel (pip download, version below)
#   .gpu/*.deb               Debian 12's pigz, zlib1g, isal, libisal2 (apt-get download): the
#                            machine has neither pigz nor igzip, and pigz needs Debian's own zlib
# adds .gpu to .git/info/exclude, and fails if the folder would pass the carry limit. Files that
# are there and current are kept (the binaries are always rebuilt: they must be this checkout's).
# Then, with the device tool: run `bench/gpu-machine.sh STEP...` carrying [".gpu"].
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
say() { printf '[gpu-pack] %s\n' "$*" >&2; }
fail() { say "ERROR: $*"; exit 2; }
nvcomp_version=6.0.0.12
slice_sha256=4e3b0ee001d4a085cd13521d64cce3156becee6c982763185520222ca76e4f3c
gputests=1 b3=1
while [ $# -gt 0 ]; do
    case $1 in
        --no-gputests) gputests=0 ;;
        --no-b3sum) b3=0 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
g=.gpu
mkdir -p "$g"
t=$(mktemp -d)
trap 'rm -rf -- "$t"' EXIT
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname -- "$exclude")"
grep -qx '\.gpu' "$exclude" 2>/dev/null || echo '.gpu' >> "$exclude"
[ -z "$(git status --porcelain -- "$g")" ] || fail "git does not ignore $g"

# shellcheck source=/dev/null
source scripts/install-deps.sh > /dev/null
say "release build of $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
cargo build --release --locked -q -p peerpath-cli
strip -o "$g/peerpath" target/release/peerpath
xz -T0 -6 -c "$g/peerpath" > "$g/peerpath.xz.new" && mv "$g/peerpath.xz.new" "$g/peerpath.xz"
rm -f "$g/peerpath"
if [ "$gputests" = 1 ]; then
    exe=$(cargo test --release --locked -q -p peerpath-gpu --lib --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["executable"])' | tail -1)
    [ -x "$exe" ] || fail "no test binary for peerpath-gpu"
    strip -o "$g/gputests" "$exe"
    xz -T0 -6 -c "$g/gputests" > "$g/gputests.xz.new" && mv "$g/gputests.xz.new" "$g/gputests.xz"
    rm -f "$g/gputests"
else
    rm -f "$g/gputests.xz"
fi
if [ "$b3" = 1 ]; then
    command -v b3sum > /dev/null || cargo install b3sum --locked -q
    cp "$(command -v b3sum)" "$g/b3sum"
else
    rm -f "$g/b3sum"
fi

if [ ! -s "$g/slice.fa.xz" ] || [ ! -s "$g/slice.fa.sha256" ]; then
    fasta=data/corpus/metastudent_MFO_goasp.fasta
    [ -s "$fasta" ] || { say "building the corpus (scripts/fetch-corpus.sh)"; scripts/fetch-corpus.sh; }
    # 48 MiB, then back to the last newline.
    head -c $((48 << 20)) "$fasta" > "$t/slice.full"
    python3 - "$t/slice.full" "$t/slice.fa" << 'EOF'
import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d[: d.rindex(b"\n") + 1])
EOF
    (cd "$t" && sha256sum slice.fa) > "$g/slice.fa.sha256.new"
    # The slice every lent-machine run so far measured (the 384 MiB input, x 8: 58ead6f9...).
    grep -q "^$slice_sha256 " "$g/slice.fa.sha256.new" || fail "the slice is not the one earlier runs used (sha256 $(cut -d' ' -f1 "$g/slice.fa.sha256.new"), want $slice_sha256)"
    xz -9 -T0 -c "$t/slice.fa" > "$g/slice.fa.xz.new"
    mv "$g/slice.fa.xz.new" "$g/slice.fa.xz" && mv "$g/slice.fa.sha256.new" "$g/slice.fa.sha256"
fi

if [ ! -s "$g/libnvcomp.so.6.xz" ]; then
    say "nvCOMP $nvcomp_version from PyPI"
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
        --python-version 3.11 -d "$t" "nvidia-libnvcomp-cu13==$nvcomp_version"
    python3 - "$t" << 'EOF'
import glob, sys, zipfile
d = sys.argv[1]
(w,) = glob.glob(d + "/*.whl")
z = zipfile.ZipFile(w)
(name,) = [n for n in z.namelist() if n.endswith("/lib64/libnvcomp.so.6")]
open(d + "/libnvcomp.so.6", "wb").write(z.read(name))
EOF
    xz -T0 -6 -c "$t/libnvcomp.so.6" > "$g/libnvcomp.so.6.xz.new" && mv "$g/libnvcomp.so.6.xz.new" "$g/libnvcomp.so.6.xz"
fi

for p in pigz zlib1g isal libisal2; do
    if ! compgen -G "$g/${p}_*.deb" > /dev/null; then
        out=$(cd "$g" && apt-get download -q "$p" 2>&1) || fail "apt-get download $p: $out"
    fi
    compgen -G "$g/${p}_*.deb" > /dev/null || fail "apt-get download $p left no .deb"
done

total=$(du -cb "$g"/* | tail -1 | cut -f1)
[ "$total" -lt $((64 << 20)) ] || fail "$g holds $total bytes, over the device tool's 64 MiB carry limit"
say "ready: $g, $total bytes:"
ls -l "$g" >&2
