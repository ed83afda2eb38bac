#!/usr/bin/env python3
"""Checks what one guest reported (results.txt from vm/run.sh) against the
kernel's own answer and the topology's [[expect]] entries.

    check.py TOPOLOGY RUN_DIR [--peerpath HOST_BINARY]

Reads RUN_DIR/results.txt, writes RUN_DIR/report.json and RUN_DIR/sysfs/ (the
guest's trimmed sysfs, unpacked), prints one line per check and a closing
'N passed, N failed' line. Exit status 0 when nothing failed.

The kernel's answer for a provider/client pair is p2ptest's probe (an O_DIRECT
read from the client namespace into the provider's p2pmem/allocate mapping,
and a write back out of it): success means the kernel mapped it (BUS_ADDR or
THRU_HOST_BRIDGE); EREMOTEIO plus the dmesg line "cannot be used for
peer-to-peer DMA" means NOT_SUPPORTED. peerpath's verdict (`topo --explain
--json`) must agree with it, and with the map type and distance in the
topology file (user space cannot see BUS_ADDR vs THRU_HOST_BRIDGE, so that
part is checked against the file).
"""
import argparse
import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import topology  # noqa: E402

LABEL = "VM (QEMU TCG): function, not speed"
BEGIN = re.compile(r"^===PEERPATH-BEGIN (.+)===$")
END = re.compile(r"^===PEERPATH-END (.+) rc=(\d+)===$")


def sections(text):
    """name -> (rc, body)."""
    out = {}
    name, body = None, []
    for line in text.replace("\r", "").split("\n"):
        m = BEGIN.match(line)
        if m and name is None:
            name, body = m.group(1), []
            continue
        m = END.match(line)
        if m and name is not None and m.group(1) == name:
            out[name] = (int(m.group(2)), "\n".join(body))
            name = None
            continue
        if name is not None:
            body.append(line)
    return out


class Checks:
    def __init__(self):
        self.items = []

    def check(self, ok, what, detail=""):
        self.items.append({"ok": bool(ok), "check": what, "detail": detail})
        print(f"{'PASS' if ok else 'FAIL'}  {what}" + (f"  [{detail}]" if detail else ""))
        return ok

    def note(self, what):
        self.items.append({"ok": None, "check": what, "detail": ""})
        print(f"NOTE  {what}")

    @property
    def passed(self):
        return sum(1 for i in self.items if i["ok"] is True)

    @property
    def failed(self):
        return sum(1 for i in self.items if i["ok"] is False)


def parse_inventory(body):
    pci, nvme = {}, {}
    for line in body.splitlines():
        f = line.split()
        if not f:
            continue
        kv = dict(x.split("=", 1) for x in f[2:] if "=" in x)
        if f[0] == "pci":
            pci[f[1]] = kv
        elif f[0] == "nvme":
            kv["name"] = f[1]
            kv["namespaces"] = [n for n in kv.get("namespaces", "").split(",") if n]
            nvme[kv["serial"]] = kv
    return pci, nvme


def json_of(sec, key):
    if key not in sec:
        return None
    body = sec[key][1].strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        # One JSON object per line (p2ptest) or pretty JSON (peerpath).
        for line in body.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    pass
    return None


def path_kind(p):
    """peerpath's P2pPath JSON -> (kind, distance)."""
    if not isinstance(p, dict):
        return None, None
    kind = p.get("path")
    return {"bus_address": "bus_address", "through_host_bridge": "through_host_bridge",
            "not_supported": "not_supported"}.get(kind, kind), p.get("distance")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("topology")
    ap.add_argument("run_dir")
    ap.add_argument("--peerpath", help="a peerpath binary to run on the captured sysfs on the host")
    o = ap.parse_args()
    topo = topology.load(o.topology)
    text = open(os.path.join(o.run_dir, "results.txt"), encoding="utf-8", errors="replace").read()
    sec = sections(text)
    c = Checks()
    report = {"topology": topo["name"], "figures": LABEL, "pairs": [], "failures_provoked": []}
    print(f"== {topo['name']}: {topo.get('description', '')}")
    print(f"== every figure below: {LABEL}")

    c.check("===PEERPATH-DONE===" in text, "guest ran to the end")
    meta = sec.get("meta", (1, ""))[1]
    for line in meta.splitlines():
        if line.startswith(("kernel:", "vendor_id", "cpu family", "model name", "peerpath:")):
            print(f"      guest {line.strip()}")
    report["guest"] = meta
    pci, nvme = parse_inventory(sec.get("inventory", (1, ""))[1])
    c.check(all(s["serial"] in nvme for s in topo.get("nvme", [])),
            "every NVMe of the topology found in the guest",
            ", ".join(f"{s}={v['name']}@{v['pci']}" for s, v in sorted(nvme.items())))
    dmesg_boot = sec.get("dmesg-boot", (1, ""))[1]

    # The P2P providers: every NVMe with a CMB.
    for n in topo.get("nvme", []):
        if not n.get("cmb_size_mb") or n["serial"] not in nvme:
            continue
        bdf = nvme[n["serial"]]["pci"]
        p = pci.get(bdf, {})
        size = int(n["cmb_size_mb"]) << 20
        c.check(p.get("p2pmem.size") == str(size), f"{n['serial']} ({bdf}) p2pmem/size = {size}",
                f"guest: {p.get('p2pmem.size')}")
        avail = int(p.get("p2pmem.available", "-1"))
        c.check(0 < avail <= size, f"{n['serial']} p2pmem/available in (0, size]",
                f"guest: {avail} (the nvme driver keeps its I/O submission queues in the CMB)")
        c.check(p.get("p2pmem.published") == "1", f"{n['serial']} p2pmem/published = 1",
                f"guest: {p.get('p2pmem.published')}")
        c.check(p.get("p2pmem.allocate") == "yes", f"{n['serial']} p2pmem/allocate exists")
        lines = [l for l in dmesg_boot.splitlines() if bdf in l and "added peer-to-peer DMA memory" in l]
        c.check(bool(lines), f"dmesg: {bdf} added peer-to-peer DMA memory", lines[0].strip() if lines else "")
        report.setdefault("providers", []).append({"serial": n["serial"], "pci": bdf, "size": size,
                                                   "available": avail, "published": p.get("p2pmem.published"),
                                                   "dmesg": lines})

    c.check(sec.get("topo", (1,))[0] == 0, "peerpath topo ran on the guest's sysfs")
    c.check(sec.get("topo-json", (1,))[0] == 0 and json_of(sec, "topo-json") is not None,
            "peerpath topo --json ran and printed JSON")
    kernel = (json_of(sec, "topo-json") or {}).get("kernel") or {}
    c.check(kernel.get("p2pdma") is True, "peerpath topo reads CONFIG_PCI_P2PDMA=y on the guest's kernel",
            f"guest: {kernel}")

    # Pairs: expectation, kernel's answer, peerpath's verdict.
    for e in topo.get("expect", []):
        prov, cli = nvme.get(e["provider"]), nvme.get(e["client"])
        if not prov or not cli or not cli["namespaces"]:
            c.check(False, f"pair {e['provider']} -> {e['client']}: devices present")
            continue
        pb, ns = prov["pci"], cli["namespaces"][0]
        tag = f"{e['provider']}({pb}) -> {e['client']}({ns})"
        probe = json_of(sec, f"kprobe {pb} {ns}")
        pdmesg = sec.get(f"kprobe-dmesg {pb} {ns}", (1, ""))[1]
        verdict = json_of(sec, f"verdict {pb} {ns}")
        explain = sec.get(f"explain {pb} {ns}", (1, ""))[1]
        if probe is None or verdict is None:
            c.check(False, f"{tag}: probe and verdict present")
            continue
        steps = probe.get("steps", [])
        errs = sorted({s.get("errno_name") or "ok" for s in steps})
        kernel_ok = bool(probe.get("ok"))
        warned = [l.strip() for l in pdmesg.splitlines() if "cannot be used for peer-to-peer DMA" in l]
        kernel_says = "supported" if kernel_ok else (
            "not_supported" if errs == ["EREMOTEIO"] else "error(" + ",".join(errs) + ")")
        pp_kind, pp_dist = path_kind(verdict.get("path"))
        km = verdict.get("kernel") or {}
        km_kind, km_dist = path_kind(km.get("path"))
        exp = e["kernel"]
        exp_supported = exp != "not_supported"
        print(f"---- {tag}")
        print(f"      expected: {exp}" + (f", distance {e['distance']}" if "distance" in e else ""))
        print(f"      kernel:   probe read/write {', '.join(s['op'] + '=' + (s.get('errno_name') or 'ok') for s in steps)}"
              + (f"; dmesg: {warned[0]}" if warned else "; dmesg: (nothing)"))
        print(f"      peerpath: {pp_kind}" + (f", distance {pp_dist}" if pp_dist is not None else "")
              + f" (kernel model {km_kind}, distance {km.get('distance')})")
        c.check(kernel_ok == exp_supported and (exp_supported or kernel_says == "not_supported"),
                f"{tag}: the kernel answers as the topology says ({exp})", kernel_says)
        if not exp_supported:
            c.check(bool(warned) and pb in warned[0],
                    f"{tag}: dmesg names the provider in 'cannot be used for peer-to-peer DMA'")
        else:
            c.check(not warned, f"{tag}: no P2PDMA warning in dmesg")
        c.check((pp_kind != "not_supported") == kernel_ok,
                f"{tag}: peerpath's verdict agrees with the kernel (supported or not)",
                f"peerpath {pp_kind}, kernel {kernel_says}")
        c.check(km_kind == exp, f"{tag}: peerpath's kernel map type is {exp}", f"{km_kind}")
        if "distance" in e:
            c.check(km.get("distance") == e["distance"], f"{tag}: peerpath's kernel distance is {e['distance']}",
                    f"{km.get('distance')}")
        pprobe = json_of(sec, f"peerpath-probe {pb} {ns}")
        if pprobe is not None:
            prov_j = (pprobe.get("providers") or [{}])[0]
            rd = prov_j.get("read") or {}
            print(f"      peerpath probe: passed={pprobe.get('passed')} exit={pprobe.get('exit_code')} "
                  f"read ok={rd.get('ok')} errno={rd.get('errno')}: {rd.get('detail', '')[:160]}")
            c.check(bool(pprobe.get("passed")) == kernel_ok and bool(rd.get("ok")) == kernel_ok,
                    f"{tag}: peerpath probe agrees with the kernel", f"probe passed={pprobe.get('passed')}, kernel {kernel_says}")
            if not kernel_ok:
                c.check(rd.get("errno") == 121, f"{tag}: peerpath probe reports EREMOTEIO (121)", f"errno {rd.get('errno')}")
        report["pairs"].append({"provider": e["provider"], "provider_pci": pb, "client": e["client"],
                                "client_namespace": ns, "expected": exp, "expected_distance": e.get("distance"),
                                "kernel_probe": probe, "kernel_dmesg": warned, "kernel_says": kernel_says,
                                "peerpath_path": verdict.get("path"), "peerpath_kernel_map": km.get("path"),
                                "peerpath_kernel_distance": km.get("distance"),
                                "peerpath_reasons": [r.get("reason") for r in verdict.get("reasons", [])],
                                "peerpath_explain": explain, "peerpath_probe": pprobe})

    # The data path end to end, and the failures provoked on purpose.
    for key in sorted(k for k in sec if k.startswith("copy ")):
        j = json_of(sec, key) or {}
        secs = sum(s.get("elapsed_s", 0) for s in j.get("steps", [])[1:3])
        c.check(j.get("ok") and j.get("data_matches"),
                f"{key}: SRC -> P2P memory -> DST with O_DIRECT, data verified",
                f"{j.get('bytes')} bytes, {', '.join(s['op'] + '=' + (s.get('errno_name') or 'ok') for s in j.get('steps', []))}; "
                f"P2P legs {secs:.3f} s ({LABEL})")
        report.setdefault("copies", []).append(j)
    for key in sorted(k for k in sec if k.startswith("buffered ")):
        j = json_of(sec, key) or {}
        st = (j.get("steps") or [{}])[0]
        c.note(f"{key}: buffered read into P2P memory: {'accepted by the kernel (CPU copy through the mapping)' if j.get('ok') else 'failed: ' + str(st.get('errno_name'))}"
               " -> peerpath refuses it itself (the pp-buffered check)")
        report["failures_provoked"].append({"case": "buffered I/O into P2P memory", "result": j})
    # The compress job with the CMB as the device memory.
    keys = [k for k in sec if k.startswith("compress-p2p ")]
    if not keys:
        c.check(False, "compress with P2P device memory ran in the guest (see the console for why it was skipped)")
    for key in keys:
        _, pb, src_ns, dst_ns = key.split()
        rc, body = sec[key]
        j = json_of(sec, key) or {}
        dev = (j.get("devices") or [{}])[0]
        led = j.get("ledger") or {}
        f = (j.get("files") or [{}])[0]
        print(f"---- {key}: {dev.get('kind', '(no device)')}")
        for line in sec.get("compress-p2p-stderr", (0, ""))[1].strip().splitlines():
            print(f"      stderr: {line}")
        for fb in j.get("fallbacks") or []:
            print(f"      fallback: {fb}")
        c.check(rc == 0 and bool(j), f"{key}: peerpath compress --engine emulated --device-memory-from p2p:{pb} ran",
                (body.strip().splitlines() or [""])[-1][:200] if rc else f"{f.get('bytes_in')} -> {f.get('bytes_out')} bytes")
        c.check(f"p2p memory of {pb}" in dev.get("kind", "") and "NOT on sysfs" not in dev.get("kind", ""),
                f"{key}: the device computed in the CMB (P2P memory from p2pmem/allocate, on sysfs)", dev.get("kind", ""))
        c.check(led.get("host_memory_payload_bytes") == 0 and not j.get("fallbacks"),
                f"{key}: no payload byte through host memory, no fallback",
                f"payload {led.get('host_memory_payload_bytes')}, fallbacks {j.get('fallbacks')}")
        ios = [f.get("read_path") or {}, f.get("write_path") or {}]
        c.check(all(p.get("direct") and p.get("engine") == "io_uring" for p in ios),
                f"{key}: {src_ns} -> CMB -> {dst_ns} with io_uring and O_DIRECT", json.dumps(ios)[:200])
        def moved(purpose, src, dst):
            return sum(e.get("bytes_written", 0) or e.get("bytes_read", 0) for e in led.get("entries", [])
                       if e.get("purpose") == purpose and (e.get("source") or {}).get("kind") == src[0]
                       and (e.get("target") or {}).get("kind") == dst[0]
                       and ((e.get(src[1]) or {}).get("domain") or {}).get("kind") == "p2p")
        rd = moved("read_source", ("storage", "target"), ("memory", "target"))
        wr = moved("write_target", ("memory", "source"), ("storage", "source"))
        c.check(rd > 0 and wr > 0, f"{key}: the ledger has storage -> P2P memory (DMA) and P2P memory -> storage (DMA)",
                f"read {rd} B, written {wr} B ({LABEL})")
        pl = j.get("placement") or []
        c.check(len(pl) == 1 and "peer to peer: read" in pl[0] and "P2P bus" in pl[0],
                f"{key}: the placement (topology planner) routes both legs peer to peer", pl[0] if pl else "(none)")
        report.setdefault("compress_p2p", []).append(j)
    # The same job from the drive on the other root port: routed as the kernel would.
    rp_expect = next((e for e in topo.get("expect", []) if e.get("provider") == "cmb0" and e.get("client") == "rp0"), None)
    for key in [k for k in sec if k.startswith("compress-p2p-rp ")]:
        rc, body = sec[key]
        j = json_of(sec, key) or {}
        pl = (j.get("placement") or [""])[0]
        fbs = j.get("fallbacks") or []
        members_on_dev = sum(d.get("members", 0) for d in j.get("devices") or [])
        print(f"---- {key}: placement: {pl}")
        if rp_expect is None:
            c.note(f"{key}: the topology file has no [[expect]] for cmb0 -> rp0; not checked")
            continue
        if rp_expect["kernel"] == "not_supported":
            c.check(rc == 0 and pl.startswith("/mnt/rp/protein.fasta: host CPU: no peer-to-peer path") and "allow-list" in pl
                    and any("no peer-to-peer path" in f for f in fbs) and members_on_dev == 0,
                    f"{key}: a source the kernel cannot reach from the CMB runs on the host CPU, and the report says why (before any transfer)",
                    pl[:220])
        else:
            c.check(rc == 0 and "peer to peer: read" in pl and "P2P host bridge" in pl and not fbs and members_on_dev > 0,
                    f"{key}: a source reachable through the host bridge ({rp_expect['kernel']}) runs on the device",
                    pl[:220])
        report.setdefault("compress_p2p", []).append(j)
    if "compress-p2p-rp-explain" in sec:
        rc, body = sec["compress-p2p-rp-explain"]
        c.check(rc == 0 and "Placement plan" in body, "compress --explain prints the planner's decisions for the job",
                next((l.strip() for l in body.splitlines() if "read nvme" in l), "")[:200])
    if "compress-p2p-rp-roundtrip" in sec:
        rc, body = sec["compress-p2p-rp-roundtrip"]
        c.check(rc == 0 and "restored = source" in body, "compress-p2p-rp: its output restores the source", body.strip()[-120:])
    for key, needle, what in (("compress-p2p-verify", None, "peerpath verify of the output (every member's CRC-32 and length)"),
                              ("compress-p2p-roundtrip", "restored = source", "decompressed output = the source file"),
                              ("compress-p2p-vs-cpu", "byte-identical to the CPU path", "output byte-identical to the CPU path's (the oracle)")):
        if key in sec:
            rc, body = sec[key]
            c.check(rc == 0 and (needle is None or needle in body), f"{key}: {what}", (body.strip().splitlines() or [""])[-1][:200])
    # peerpath's own I/O into P2P memory: the sweep where the kernel accepted the pair,
    # EREMOTEIO explained where it did not, and its own refusal of buffered I/O.
    for key in sorted(k for k in sec if k.startswith("pp-bench-io ")):
        _, pb, ns = key.split()
        rc, body = sec[key]
        kernel_ok = bool((json_of(sec, f"kprobe {pb} {ns}") or {}).get("ok"))
        if kernel_ok:
            j = json_of(sec, key) or {}
            pts = j.get("points") or []
            moved = sum(p.get("bytes", 0) for p in pts)
            best = max((p.get("throughput_gb_per_s", 0) for p in pts), default=0)
            c.check(rc == 0 and pts and all(p.get("bytes", 0) > 0 for p in pts)
                    and "p2p" in json.dumps(j.get("memory_domain")) and (j.get("io_path") or {}).get("direct"),
                    f"{key}: peerpath bench-io reads with O_DIRECT into P2P memory from p2pmem/allocate",
                    f"{len(pts)} points, {moved} bytes, best {best:.3f} GB/s ({LABEL})")
            c.check(any("QEMU" in n for n in j.get("notes", [])),
                    f"{key}: the report labels its figures as a QEMU device's (function, not speed)")
            report.setdefault("peerpath_bench_io", []).append(j)
        else:
            c.check(rc != 0 and ("Remote I/O" in body or "EREMOTEIO" in body),
                    f"{key}: peerpath bench-io into P2P memory fails with the kernel's EREMOTEIO",
                    body.strip().splitlines()[-1][:200] if body.strip() else "")
            report["failures_provoked"].append({"case": "peerpath bench-io, pair the kernel refuses", "output": body[-2000:]})
    for key in sorted(k for k in sec if k.startswith("pp-bench-io-own-qd4 ") ):
        rc, body = sec[key]
        dm = sec.get(key.replace("pp-bench-io-own-qd4 ", "pp-bench-io-own-qd4-dmesg "), (0, ""))[1]
        why = [l.strip() for l in dm.splitlines() if "I/O Error" in l or "I/O error" in l][:2]
        c.note(f"{key}: reads at depth 4 from the CMB's own drive into its CMB: "
               + ("worked" if rc == 0 else f"failed ({(body.strip().splitlines() or [''])[-1][:120]}); kernel: {' | '.join(why) or '(no dmesg line)'}")
               + " -- QEMU 7.2's NVMe refuses merged multi-segment requests whose data is in its own CMB (sc 0x12)")
        report["failures_provoked"].append({"case": "own-CMB reads at depth 4 (QEMU)", "rc": rc, "output": body[-1000:], "dmesg": why})
    for key in sorted(k for k in sec if k.startswith("pp-buffered ")):
        rc, body = sec[key]
        c.check(rc != 0 and ("memory file system" in body or "buffered I/O into" in body),
                f"{key}: peerpath refuses I/O between tmpfs and P2P memory (the kernel would copy with the CPU)",
                body.strip().splitlines()[-1][:200] if body.strip() else "")
        report["failures_provoked"].append({"case": "peerpath: buffered I/O into P2P memory", "output": body[-2000:]})
    for key in sorted(k for k in sec if k.startswith("toolarge ")):
        j = json_of(sec, key) or {}
        c.check(j.get("errno_name") == "ENOMEM",
                f"{key}: mmap of p2pmem/allocate larger than 'available' fails with ENOMEM",
                f"asked {j.get('bytes')}, available {j.get('available')}: {j.get('errno_name') or 'mapped!'}")
        report["failures_provoked"].append({"case": "allocation larger than available", "result": j})
    for key in sorted(k for k in sec if k.startswith("private ")):
        j = json_of(sec, key) or {}
        c.check(j.get("errno_name") == "EINVAL", f"{key}: MAP_PRIVATE mapping of p2pmem/allocate fails with EINVAL",
                j.get("errno_name") or "mapped!")
        report["failures_provoked"].append({"case": "private mapping", "result": j})
    for key in sorted(k for k in sec if k.startswith("p2pmem-after ")):
        bdf = key.split()[1]
        after = dict(x.split("=", 1) for x in sec[key][1].split() if "=" in x)
        before = pci.get(bdf, {}).get("p2pmem.available")
        c.check(after.get("available") == before,
                f"{key}: every allocation went back to the pool (munmap)",
                f"available before the tests {before}, after {after.get('available')}")
    if not any(k.startswith("peerpath-probe ") for k in sec):
        c.note("this peerpath has no `probe` command: the kernel's answer came from vm/p2ptest.c only")

    # The captured sysfs: unpack, and check peerpath reads it as it read the live tree.
    cap = sec.get("sysfs-capture")
    if cap and cap[0] == 0:
        dest = os.path.join(o.run_dir, "sysfs")
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        data = base64.b64decode("".join(l.strip() for l in cap[1].splitlines() if not l.startswith("capture-sysfs:")))
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
            tf.extractall(dest, filter="tar") if hasattr(tarfile, "data_filter") else tf.extractall(dest)
        nfiles = sum(len(f) for _, _, f in os.walk(os.path.join(dest, "sys")))
        c.check(os.path.isdir(os.path.join(dest, "sys", "bus", "pci", "devices")),
                "guest sysfs captured (trimmed to what peerpath-topo reads)", f"{nfiles} entries in {dest}/sys")
        if o.peerpath:
            live = json_of(sec, "topo-json")
            r = subprocess.run([o.peerpath, "topo", "--sysfs", os.path.join(dest, "sys"), "--json"],
                               capture_output=True, text=True)
            try:
                offline = json.loads(r.stdout)
            except json.JSONDecodeError:
                offline = None
            if isinstance(live, dict) and isinstance(offline, dict):
                live.pop("source", None)
                offline.pop("source", None)
                # The kernel's answer names the file it came from, under the capture offline.
                for t in (live, offline):
                    if isinstance(t.get("kernel"), dict):
                        t["kernel"].pop("p2pdma_source", None)
            c.check(offline is not None and offline == live,
                    "peerpath on the captured tree (host) gives the same model as on the live guest sysfs",
                    r.stderr.strip()[:200])
    else:
        c.check(False, "guest sysfs captured")

    report["checks"] = c.items
    with open(os.path.join(o.run_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"{topo['name']}: {c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
