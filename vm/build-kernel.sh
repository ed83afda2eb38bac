#!/usr/bin/env bash
# Build the peerpath VM kernel (x86_64 bzImage with CONFIG_PCI_P2PDMA=y) from
# Debian's linux-source-6.12 package and the committed fragment vm/kernel.config,
# and cache it outside the repository:
#
#   ${PEERPATH_VM_CACHE:-$HOME/.cache/peerpath/vm}/<package version>-<sha256 of fragment, 16 hex>/bzImage
#
# Skips the build when that file exists. Prints the bzImage path as its last
# line of standard output. Options:
#   --deps-only   install the apt packages and exit
#   --print-path  print the cache path (no install, no build) and exit 0
#                 (exit 1 when the kernel is not cached yet)
# Environment: PEERPATH_VM_CACHE (cache root), PEERPATH_VM_JOBS (make -j,
# default nproc), PEERPATH_VM_NO_APT=1 (never call apt-get).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache_root=${PEERPATH_VM_CACHE:-$HOME/.cache/peerpath/vm}
fragment=$here/kernel.config
src_pkg=linux-source-6.12

log() { echo "build-kernel: $*" >&2; }
die() { echo "build-kernel: ERROR: $*" >&2; exit 1; }

need_pkgs=(build-essential bc bison flex libelf-dev libssl-dev cpio xz-utils
           kmod python3 qemu-system-x86 busybox-static e2fsprogs "$src_pkg")

install_deps() {
    local missing=()
    for p in "${need_pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then return 0; fi
    [ "${PEERPATH_VM_NO_APT:-0}" = 1 ] && die "missing packages and PEERPATH_VM_NO_APT=1: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    log "installing: ${missing[*]}"
    $sudo apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}

pkg_version() {
    # The version of the source package, e.g. 6.12.48-1~bpo12+1 -> used as is
    # (with '~' and '+' kept: they are valid in file names).
    dpkg-query -W -f='${Version}' "$src_pkg" 2>/dev/null
}

cache_dir() {
    local ver sha
    ver=$(pkg_version) || return 1
    [ -n "$ver" ] || return 1
    sha=$(sha256sum "$fragment" | cut -c1-16)
    echo "$cache_root/$ver-$sha"
}

case "${1:-}" in
    --deps-only) install_deps; exit 0 ;;
    --print-path)
        d=$(cache_dir) || exit 1
        [ -f "$d/bzImage" ] && { echo "$d/bzImage"; exit 0; }
        exit 1 ;;
    "") ;;
    *) die "unknown option $1" ;;
esac

install_deps
dir=$(cache_dir) || die "$src_pkg is not installed"
if [ -f "$dir/bzImage" ]; then
    log "cached: $dir/bzImage"
    echo "$dir/bzImage"
    exit 0
fi

tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -1)
[ -n "$tarball" ] || die "no /usr/src/linux-source-6.12.tar.* (is $src_pkg installed?)"
mkdir -p "$dir"
work=$dir/build
rm -rf "$work"
mkdir -p "$work"
log "unpacking $tarball into $work"
tar -xaf "$tarball" -C "$work"
ksrc=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -d "$ksrc" ] || die "unpack gave no directory"

jobs=${PEERPATH_VM_JOBS:-$(nproc)}
start=$(date +%s)
cd "$ksrc"
log "make tinyconfig"
nice -n 19 make -s ARCH=x86_64 tinyconfig >&2
log "merging $fragment"
# merge_config.sh -m: merge only, then olddefconfig fills in dependencies.
KCONFIG_CONFIG=.config nice -n 19 scripts/kconfig/merge_config.sh -m -O . .config "$fragment" >&2
nice -n 19 make -s ARCH=x86_64 olddefconfig >&2

# Every option of the fragment must have survived; PCI_P2PDMA above all.
grep -q '^CONFIG_PCI_P2PDMA=y$' .config || die "CONFIG_PCI_P2PDMA=y did not survive olddefconfig (check its dependencies: ZONE_DEVICE, 64BIT)"
lost=0
while IFS= read -r line; do
    case "$line" in CONFIG_*=*) ;; *) continue ;; esac
    if ! grep -qx "$line" .config; then
        log "warning: fragment line not in final .config: $line ($(grep "^${line%%=*}[= ]" .config || echo unset))"
        lost=$((lost + 1))
    fi
done < "$fragment"
log "$lost fragment line(s) did not survive (warnings above)"

log "make -j$jobs bzImage (nice 19); log: $dir/make.log"
if ! nice -n 19 make -j"$jobs" ARCH=x86_64 bzImage > "$dir/make.log" 2>&1; then
    tail -40 "$dir/make.log" >&2
    die "kernel build failed (full log: $dir/make.log)"
fi
end=$(date +%s)
cp arch/x86/boot/bzImage "$dir/bzImage.tmp"
cp .config "$dir/config"
echo "$((end - start))" > "$dir/build-seconds"
mv "$dir/bzImage.tmp" "$dir/bzImage"
log "built in $((end - start)) s: $dir/bzImage"
# The source tree is large (~1.5 GB built); keep only the result.
cd "$dir"
rm -rf "$work"
echo "$dir/bzImage"
