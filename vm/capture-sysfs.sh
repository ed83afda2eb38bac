#!/bin/sh
# capture-sysfs DEST: copies the part of /sys that peerpath-topo reads
# (crates/peerpath-topo/src/sysfs.rs) into DEST/sys, keeping the directory
# layout and the symlinks exactly as the kernel has them (relative targets).
# Runs inside the test VM (busybox sh). Binary attributes are copied as bytes;
# p2pmem/allocate (mmap only) becomes an empty placeholder file.
set -u
dest=${1:?usage: capture-sysfs DEST}
root=$dest/sys
mkdir -p "$root"

# copy FILE: the file's content, if readable.
copy() {
    [ -f "$1" ] || return 0
    mkdir -p "$root$(dirname "${1#/sys}")"
    cat "$1" > "$root${1#/sys}" 2>/dev/null || rm -f "$root${1#/sys}"
}
# link PATH: the symlink as is (relative target kept).
link() {
    [ -L "$1" ] || return 0
    mkdir -p "$root$(dirname "${1#/sys}")"
    ln -sfn "$(readlink "$1")" "$root${1#/sys}"
}
# dir PATH: an (empty) directory, for directories whose existence is read.
dir() {
    [ -d "$1" ] && mkdir -p "$root${1#/sys}"
    return 0
}

# PCI functions.
for e in /sys/bus/pci/devices/*; do
    link "$e"
    d=$(readlink -f "$e")
    dir "$d"
    for f in vendor device class numa_node local_cpulist current_link_speed max_link_speed \
             current_link_width max_link_width label resource config; do
        copy "$d/$f"
    done
    link "$d/driver"
    link "$d/physfn"
    if [ -d "$d/p2pmem" ]; then
        for f in size available published; do copy "$d/p2pmem/$f"; done
        [ -e "$d/p2pmem/allocate" ] && : > "$root${d#/sys}/p2pmem/allocate"
    fi
done

# NVMe controllers and subsystems.
for e in /sys/class/nvme/*; do
    [ -e "$e" ] || continue
    link "$e"
    d=$(readlink -f "$e")
    dir "$d"
    for f in transport model serial cmbsz cmbloc; do copy "$d/$f"; done
    link "$d/device"
    for ns in "$d"/nvme*; do
        [ -d "$ns" ] && dir "$ns"
    done
done
for e in /sys/class/nvme-subsystem/*; do
    [ -e "$e" ] || continue
    link "$e"
    d=$(readlink -f "$e")
    dir "$d"
    for c in "$d"/nvme*; do link "$c"; done
done

# Block devices.
for e in /sys/class/block/*; do
    [ -e "$e" ] || continue
    link "$e"
    d=$(readlink -f "$e")
    dir "$d"
    copy "$d/partition"
    [ -d "$d/md" ] && copy "$d/md/level"
    [ -d "$d/dm" ] && copy "$d/dm/name"
    if [ -d "$d/slaves" ]; then
        dir "$d/slaves"
        for s in "$d"/slaves/*; do link "$s"; done
    fi
done

# CPU, NUMA, IOMMU.
copy /sys/devices/system/cpu/modalias
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    copy "$c/topology/physical_package_id"
done
for n in /sys/devices/system/node/node[0-9]*; do
    [ -d "$n" ] && copy "$n/cpulist"
done
if [ -d /sys/class/iommu ]; then
    dir /sys/class/iommu
    for u in /sys/class/iommu/*; do link "$u"; done
    for g in /sys/kernel/iommu_groups/*; do copy "$g/type"; done
fi
# Beside sys/: what peerpath-topo's kernel.rs reads for CONFIG_PCI_P2PDMA (the release, the
# config where the system ships it; else the symbol lines that answer, not all of kallsyms).
release=$(cat /proc/sys/kernel/osrelease 2>/dev/null || true)
if [ -n "$release" ]; then
    mkdir -p "$dest/proc/sys/kernel"
    echo "$release" > "$dest/proc/sys/kernel/osrelease"
    if [ -f "/boot/config-$release" ]; then
        mkdir -p "$dest/boot"
        cp "/boot/config-$release" "$dest/boot/config-$release"
    elif [ -r /proc/kallsyms ]; then
        # The first symbol (so the list is not empty) and P2PDMA's, if the kernel has them.
        { head -n 1 /proc/kallsyms; grep -E ' (pci_p2pdma_add_resource|pci_p2pmem_find_many)$' /proc/kallsyms || true; } > "$dest/proc/kallsyms.tmp" 2>/dev/null \
            && mv "$dest/proc/kallsyms.tmp" "$dest/proc/kallsyms" || rm -f "$dest/proc/kallsyms.tmp"
    fi
fi
echo "capture-sysfs: $(find "$root" -type f | wc -l) files, $(find "$root" -type l | wc -l) links" >&2
