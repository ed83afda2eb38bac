#!/usr/bin/env bash
# Build the test VM's initramfs (gzip'd newc cpio):
#   /init                  vm/guest-init.sh
#   /bin/busybox + links   busybox-static (Debian)
#   /bin/peerpath          a static peerpath (glibc, +crt-static), built here
#   /bin/p2ptest           vm/p2ptest.c, static (the kernel's own answer, no peerpath code)
#   /bin/capture-sysfs     vm/capture-sysfs.sh
#   /data/sample/          the bundled sample data (data/sample)
#   /boot/config           the cached kernel's .config (vm/build-kernel.sh), renamed
#                          /boot/config-$(uname -r) at boot as distributions ship it, so
#                          `peerpath topo` reads CONFIG_PCI_P2PDMA as on a real host
#
# Usage: vm/build-initramfs.sh [OUTPUT]   (default: target/vm/initramfs.cpio.gz)
# Environment: CARGO_TARGET_DIR (honoured), PEERPATH_VM_PEERPATH=FILE (use this
# static binary instead of building one), PEERPATH_VM_CARGO_JOBS (cargo -j, default 1).
# Prints the output path as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${1:-$repo/target/vm/initramfs.cpio.gz}
log() { echo "build-initramfs: $*" >&2; }
die() { echo "build-initramfs: ERROR: $*" >&2; exit 1; }

busybox=/bin/busybox
is_static() { ! readelf -l "$1" 2>/dev/null | grep -q 'Requesting program interpreter' && ! readelf -d "$1" 2>/dev/null | grep -q '(NEEDED)'; }
command -v readelf > /dev/null || die "readelf missing (binutils; vm/build-kernel.sh --deps-only)"
[ -x "$busybox" ] && is_static "$busybox" \
    || die "$busybox is missing or not static: install busybox-static (vm/build-kernel.sh --deps-only)"
command -v cpio > /dev/null || die "cpio missing (vm/build-kernel.sh --deps-only)"

# 1. The static peerpath.
target=x86_64-unknown-linux-gnu
tdir=${CARGO_TARGET_DIR:-$repo/target}
if [ -n "${PEERPATH_VM_PEERPATH:-}" ]; then
    pp=$PEERPATH_VM_PEERPATH
else
    log "cargo build --release --target $target -p peerpath-cli (static, nice 19)"
    (cd "$repo" && RUSTFLAGS="-C target-feature=+crt-static" nice -n 19 \
        cargo build -q -j"${PEERPATH_VM_CARGO_JOBS:-1}" --release --locked --target "$target" -p peerpath-cli) \
        || die "static build of peerpath failed"
    pp=$tdir/$target/release/peerpath
fi
[ -x "$pp" ] || die "no peerpath binary at $pp"
# Static means: no program interpreter, no needed shared libraries.
if ! is_static "$pp"; then
    readelf -d "$pp" | grep NEEDED >&2 || true
    die "$pp is dynamically linked"
fi

# 2. The kernel probe program.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,data,etc}
gcc -O2 -Wall -static -o "$root/bin/p2ptest" "$here/p2ptest.c" || die "cannot build p2ptest (needs gcc and libc6-dev)"

# 3. The tree.
cp "$busybox" "$root/bin/busybox"
# Applet links (/bin/sh first of all: /init's interpreter) made here, not at boot.
for app in $("$busybox" --list); do
    [ -e "$root/bin/$app" ] || ln -s busybox "$root/bin/$app"
done
cp "$pp" "$root/bin/peerpath"
strip "$root/bin/peerpath" 2>/dev/null || true
install -m 0755 "$here/guest-init.sh" "$root/init"
install -m 0755 "$here/capture-sysfs.sh" "$root/bin/capture-sysfs"
cp -r "$repo/data/sample" "$root/data/sample"
if kernel=$("$here/build-kernel.sh" --print-path 2>/dev/null) && [ -f "$(dirname "$kernel")/config" ]; then
    mkdir -p "$root/boot"
    cp "$(dirname "$kernel")/config" "$root/boot/config"
else
    log "no cached kernel config: the guest has no /boot/config-<release> (peerpath topo will say CONFIG_PCI_P2PDMA is unknown)"
fi
mkdir -p "$(dirname "$out")"
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) > "$work/initramfs.cpio"
gzip -9 -n < "$work/initramfs.cpio" > "$out.tmp"
mv "$out.tmp" "$out"
log "$(du -h "$out" | cut -f1) $out (peerpath $(du -h "$root/bin/peerpath" | cut -f1), static)"
echo "$out"
