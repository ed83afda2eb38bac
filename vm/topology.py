#!/usr/bin/env python3
"""Turns a QEMU topology file (vm/topologies/*.toml) into a qemu-system-x86_64
command line, or prints its expectations.

    topology.py argv TOPO --kernel K --initrd I --disks DIR --console F --results F [--append TEXT]
        one argument per line (the command line), after creating the raw disk
        images in DIR with truncate
    topology.py json TOPO
        the parsed topology as JSON (the harness reads [[expect]] from it)
    topology.py check TOPO
        validate only (unique ids, unique chassis/slot pairs, known ports)

The file format is documented in vm/README.md. Only the Python standard
library is used (tomllib, Python 3.11+).
"""
import argparse
import json
import os
import subprocess
import sys
import tomllib

KINDS = {"bus_address", "through_host_bridge", "not_supported"}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TopologyError(Exception):
    pass


def load(path):
    with open(path, "rb") as f:
        try:
            t = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise TopologyError(f"{path}: {e}") from None
    validate(t, path)
    return t


def validate(t, path):
    def need(obj, key, what):
        if key not in obj:
            raise TopologyError(f"{path}: {what} lacks '{key}'")
        return obj[key]

    need(t, "name", "the file")
    ports = {}  # id -> kind
    chassis_slots = set()

    def add_port(pid, kind, chassis, slot):
        if pid in ports:
            raise TopologyError(f"{path}: port id '{pid}' used twice")
        if (chassis, slot) in chassis_slots:
            raise TopologyError(f"{path}: (chassis {chassis}, slot {slot}) used twice; QEMU needs them unique")
        ports[pid] = kind
        chassis_slots.add((chassis, slot))

    for rp in t.get("root_port", []):
        add_port(need(rp, "id", "a [[root_port]]"), "root_port", need(rp, "chassis", "a [[root_port]]"),
                 need(rp, "slot", "a [[root_port]]"))
    for sw in t.get("switch", []):
        sid = need(sw, "id", "a [[switch]]")
        rp = need(sw, "root_port", f"switch {sid}")
        if ports.get(rp) != "root_port":
            raise TopologyError(f"{path}: switch {sid} sits on '{rp}', which is not a [[root_port]]")
        if sid in ports:
            raise TopologyError(f"{path}: id '{sid}' used twice")
        ports[sid] = "switch_upstream"
        for dp in need(sw, "downstream", f"switch {sid}"):
            add_port(need(dp, "id", f"a downstream port of {sid}"), "downstream", need(dp, "chassis", "a downstream port"),
                     need(dp, "slot", "a downstream port"))
    used = set()
    serials = set()
    for n in t.get("nvme", []):
        serial = need(n, "serial", "an [[nvme]]")
        port = need(n, "port", f"nvme {serial}")
        if serial in serials:
            raise TopologyError(f"{path}: nvme serial '{serial}' used twice")
        serials.add(serial)
        if ports.get(port) not in ("root_port", "downstream"):
            raise TopologyError(f"{path}: nvme {serial} is on '{port}', which is not a root or downstream port")
        if port in used:
            raise TopologyError(f"{path}: port '{port}' holds two devices (PCIe ports have one slot)")
        used.add(port)
        fs = n.get("filesystem")
        if fs is not None:
            if fs.get("type") != "ext2":
                raise TopologyError(f"{path}: nvme {serial}: filesystem type must be \"ext2\" (the guest kernel has ext2 only)")
            c = fs.get("contents")
            if c is not None and not os.path.isdir(os.path.join(REPO, c)):
                raise TopologyError(f"{path}: nvme {serial}: filesystem contents '{c}' is not a directory of the repository")
        if "cmb_size_mb" in n and int(n["cmb_size_mb"]) % 2:
            raise TopologyError(f"{path}: nvme {serial}: cmb_size_mb must be a multiple of 2 (Linux maps only 2 MiB-aligned CMBs)")
    for e in t.get("expect", []):
        for k in ("provider", "client"):
            if need(e, k, "an [[expect]]") not in serials:
                raise TopologyError(f"{path}: [[expect]] names unknown nvme serial '{e[k]}'")
        if need(e, "kernel", "an [[expect]]") not in KINDS:
            raise TopologyError(f"{path}: [[expect]] kernel must be one of {sorted(KINDS)}")


def argv(t, kernel, initrd, disks, console, results, append_extra=""):
    a = ["qemu-system-x86_64",
         "-machine", "q35", "-accel", "tcg",
         "-cpu", t.get("cpu", "qemu64"),
         "-m", str(t.get("memory", "512M")),
         "-smp", str(t.get("smp", 1)),
         # No default NIC, VGA or drives: the PCI tree is what the file says.
         "-nodefaults", "-nographic", "-no-reboot",
         "-monitor", "none",
         # ttyS0: the kernel console (and the guest's progress lines);
         # ttyS1: the results, free of kernel messages.
         "-serial", f"file:{console}",
         "-serial", f"file:{results}",
         "-kernel", kernel, "-initrd", initrd,
         "-append", " ".join(filter(None, [
             "console=ttyS0", "panic=-1", "loglevel=7",
             f"peerpath.topology={t['name']}", t.get("append", ""), append_extra]))]
    for rp in t.get("root_port", []):
        a += ["-device", f"pcie-root-port,id={rp['id']},chassis={rp['chassis']},slot={rp['slot']}"]
    for sw in t.get("switch", []):
        a += ["-device", f"x3130-upstream,id={sw['id']},bus={sw['root_port']}"]
        for dp in sw["downstream"]:
            a += ["-device", f"xio3130-downstream,id={dp['id']},bus={sw['id']},chassis={dp['chassis']},slot={dp['slot']}"]
    os.makedirs(disks, exist_ok=True)
    for n in t.get("nvme", []):
        img = os.path.join(disks, f"{n['serial']}.raw")
        # Fresh sparse raw images every boot.
        subprocess.run(["truncate", "-s", "0", img], check=True)
        subprocess.run(["truncate", "-s", str(n.get("size", "64M")), img], check=True)
        fs = n.get("filesystem")
        if fs is not None:
            # An ext2 file system (4 KiB blocks), filled from a directory of the repository.
            mk = ["mke2fs", "-q", "-F", "-t", "ext2", "-b", "4096", "-L", n["serial"]]
            if fs.get("contents"):
                mk += ["-d", os.path.join(REPO, fs["contents"])]
            subprocess.run(mk + [img], check=True)
        drive = f"d-{n['serial']}"
        a += ["-drive", f"file={img},if=none,id={drive},format=raw"]
        dev = f"nvme,serial={n['serial']},drive={drive},bus={n['port']}"
        if n.get("cmb_size_mb"):
            dev += f",cmb_size_mb={int(n['cmb_size_mb'])}"
        for k, v in n.get("properties", {}).items():
            dev += f",{k}={v}"
        a += ["-device", dev]
    return a


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["argv", "json", "check"])
    p.add_argument("topology")
    p.add_argument("--kernel")
    p.add_argument("--initrd")
    p.add_argument("--disks")
    p.add_argument("--console")
    p.add_argument("--results")
    p.add_argument("--append", default="")
    o = p.parse_args()
    try:
        t = load(o.topology)
    except (TopologyError, OSError) as e:
        print(f"topology: {e}", file=sys.stderr)
        return 2
    if o.what == "check":
        return 0
    if o.what == "json":
        print(json.dumps(t, indent=1))
        return 0
    for k in ("kernel", "initrd", "disks", "console", "results"):
        if not getattr(o, k):
            print(f"topology: argv needs --{k}", file=sys.stderr)
            return 2
    print("\n".join(argv(t, o.kernel, o.initrd, o.disks, o.console, o.results, o.append)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
