#!/usr/bin/env python3
"""Report of bench/scaling.sh: scaling.json, scaling.md and scaling.svg from its raw files.

Usage: scaling_report.py report --out DIR [--partial]
           reads DIR/meta.tsv, DIR/runs.tsv, DIR/checks.tsv, DIR/peerpath-json/*.json and
           DIR/disk-bench-io.json (if there); writes DIR/scaling.{json,md,svg}
       scaling_report.py extract-deb FILE.deb DEST
           unpacks a .deb's data archive into DEST (what `dpkg-deb -x` does), for machines
           without dpkg
(called by bench/scaling.sh; standard library only).
"""
import io
import json
import math
import os
import statistics
import sys
import tarfile

TOOLS = ("peerpath", "pigz", "igzip")
COLORS = {"peerpath": "#1f77b4", "pigz": "#d62728", "igzip": "#2ca02c"}


# --- .deb without dpkg ------------------------------------------------------------------

def extract_deb(deb, dest):
    """A .deb is an ar archive: debian-binary, control.tar.*, data.tar.* ."""
    with open(deb, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise SystemExit(f"{deb}: not an ar archive")
        while True:
            hdr = f.read(60)
            if len(hdr) < 60:
                raise SystemExit(f"{deb}: no data.tar member")
            name = hdr[:16].decode().strip().rstrip("/")
            size = int(hdr[48:58].decode().strip())
            body = f.read(size)
            if size % 2:
                f.read(1)
            if name.startswith("data.tar"):
                if name.endswith(".zst"):
                    raise SystemExit(f"{deb}: {name} is zstd-compressed; python cannot read it")
                os.makedirs(dest, exist_ok=True)
                with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
                    if hasattr(tarfile, "data_filter"):  # Python 3.12+: say so, no warning
                        tar.extractall(dest, filter="fully_trusted")
                    else:
                        tar.extractall(dest)
                return


# --- reading ------------------------------------------------------------------------------

def read_tsv(path, header=True):
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if header and lines:
        keys = lines[0].split("\t")
        for line in lines[1:]:
            vals = line.split("\t")
            rows.append(dict(zip(keys, vals + [""] * (len(keys) - len(vals)))))
    return rows


def read_meta(path):
    meta = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if "\t" in line:
                k, v = line.split("\t", 1)
                meta[k] = v
    return meta


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cells_from(runs, checks, out_dir, in_bytes):
    cells = {}
    for r in runs:
        key = (r["phase"], r["op"], r["tool"], int(r["threads"]))
        c = cells.setdefault(key, {"phase": key[0], "op": key[1], "tool": key[2], "threads": key[3],
                                   "runs": []})
        c["runs"].append({"run": int(r["run"]), "seconds": float(r["seconds"]), "cpu_s": float(r["cpu_s"]),
                          "rc": int(r["rc"]), "out_bytes": int(r["out_bytes"] or 0), "json": r["json"]})
    for ch in checks:
        key = (ch["phase"], ch["op"], ch["tool"], int(ch["threads"]))
        if key in cells:
            cells[key]["check"] = ch["result"]
            cells[key]["check_detail"] = ch["detail"]
    for c in cells.values():
        ok = [x for x in c["runs"] if x["rc"] == 0]
        c["failed_runs"] = len(c["runs"]) - len(ok)
        c.setdefault("check", "not checked")
        if not ok:
            c["median_s"] = None
            continue
        t = [x["seconds"] for x in ok]
        c["median_s"] = statistics.median(t)
        c["min_s"] = min(t)
        c["max_s"] = max(t)
        c["n"] = len(t)
        c["gb_per_s_median"] = in_bytes / c["median_s"] / 1e9
        c["gb_per_s_best"] = in_bytes / c["min_s"] / 1e9
        c["cpu_s_median"] = statistics.median(x["cpu_s"] for x in ok)
        if c["op"] == "compress":
            c["out_bytes"] = ok[-1]["out_bytes"]
            c["ratio"] = in_bytes / c["out_bytes"] if c["out_bytes"] else None
        # the run whose time is nearest the median (the median itself for odd counts)
        med = min(ok, key=lambda x: (abs(x["seconds"] - c["median_s"]), x["run"]))
        c["median_run"] = med["run"]
        if med["json"] not in ("", "/dev/null"):
            c["peerpath_report"] = load_json(os.path.join(out_dir, med["json"]))
    return cells


# --- formatting ---------------------------------------------------------------------------

def label(op, tool, t=None):
    T = " T" if t is None else str(t)
    return {
        ("compress", "peerpath"): f"peerpath compress -l1 -T{T}",
        ("compress", "pigz"): f"pigz -1 -p{T}",
        ("compress", "igzip"): f"igzip -1 -T{T}",
        ("decompress", "peerpath"): f"peerpath decompress -T{T}",
        ("decompress", "pigz"): f"pigz -d -p{T}",
        ("decompress", "igzip"): "igzip -d (1 thread)",
        ("compress", "peerpath-nosync"): f"peerpath compress -l1 -T{T} --no-sync",
        ("decompress", "peerpath-nosync"): f"peerpath decompress -T{T} --no-sync",
    }.get((op, tool), f"{tool} {op}")


def s3(x):
    return "-" if x is None else f"{x:.3f}"


def role_cpu(report, name):
    for r in (report.get("cpu") or {}).get("roles", []):
        if r.get("role") == name:
            return r
    return None


def io_path(report):
    if not report or not report.get("files"):
        return "?"
    f = report["files"][0]

    def one(p):
        if not p:
            return "?"
        s = p.get("engine", "?") + (" O_DIRECT" if p.get("direct") else " buffered")
        if p.get("fallback_reason"):
            s += f" ({p['fallback_reason']})"
        return s
    return f"read {one(f.get('read_path'))}, write {one(f.get('write_path'))}"


# --- SVG ----------------------------------------------------------------------------------

def nice_max(v):
    if v <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * e >= v:
            return m * e
    return 10 * e


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(cells, meta, threads):
    W, H = 1100, 470
    pw, ph = 440, 300
    tmax = max(threads)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="60" y="22" font-size="15" font-weight="bold">Thread scaling in memory (tmpfs): '
           f'throughput of uncompressed bytes, GB/s (median of runs)</text>',
           f'<text x="60" y="42">{esc(meta.get("cpu", "?"))}, nproc {esc(meta.get("nproc", "?"))}, '
           f'{esc(meta.get("kernel", "?"))}; input {int(meta.get("input_bytes", 0)) / 2**20:.0f} MiB; '
           f'dashed grey: peerpath\'s 1-thread rate x threads</text>']
    for k, op in enumerate(("compress", "decompress")):
        x0, y0 = 70 + k * (pw + 110), 80
        series = {}
        for tool in TOOLS:
            pts = [(t, cells[("mem", op, tool, t)]["gb_per_s_median"]) for t in threads
                   if ("mem", op, tool, t) in cells and cells[("mem", op, tool, t)].get("median_s")]
            if pts:
                series[tool] = pts
        obs = max([v for pts in series.values() for _, v in pts] or [1.0])
        base = dict(series.get("peerpath", [])).get(1)
        ideal_top = base * tmax if base else 0
        ymax = nice_max(max(obs, min(ideal_top, 2 * obs)) * 1.05)

        def X(t):
            return x0 + (t / tmax) * pw

        def Y(v):
            return y0 + ph - (v / ymax) * ph
        title = "compression (level 1)" if op == "compress" else "decompression (of peerpath's output)"
        out.append(f'<text x="{x0}" y="{y0 - 12}" font-weight="bold">{title}</text>')
        out.append(f'<clipPath id="c{k}"><rect x="{x0}" y="{y0}" width="{pw}" height="{ph}"/></clipPath>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        for i in range(5):
            v = ymax * i / 4
            y = Y(v)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + pw}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>')
        for t in threads:
            x = X(t)
            out.append(f'<line x1="{x:.1f}" y1="{y0 + ph}" x2="{x:.1f}" y2="{y0 + ph + 4}" stroke="#888"/>')
            out.append(f'<text x="{x:.1f}" y="{y0 + ph + 17}" text-anchor="middle">{t}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 36}" text-anchor="middle">threads (-T / -p)</text>')
        out.append(f'<text x="{x0 - 44}" y="{y0 + ph / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 {x0 - 44} {y0 + ph / 2})">GB/s</text>')
        if base:
            out.append(f'<line x1="{X(1):.1f}" y1="{Y(base):.1f}" x2="{X(tmax):.1f}" y2="{Y(ideal_top):.1f}" '
                       f'stroke="#999" stroke-dasharray="6,4" clip-path="url(#c{k})"/>')
        ly = y0 + 16
        for tool, pts in series.items():
            c = COLORS[tool]
            path = " ".join(f"{'M' if i == 0 else 'L'}{X(t):.1f},{Y(v):.1f}" for i, (t, v) in enumerate(pts))
            out.append(f'<path d="{path}" fill="none" stroke="{c}" stroke-width="2" clip-path="url(#c{k})"/>')
            for t, v in pts:
                out.append(f'<circle cx="{X(t):.1f}" cy="{Y(v):.1f}" r="3.5" fill="{c}"><title>'
                           f'{esc(label(op, tool, t))}: {v:.2f} GB/s</title></circle>')
            out.append(f'<line x1="{x0 + 10}" y1="{ly - 4}" x2="{x0 + 34}" y2="{ly - 4}" stroke="{c}" stroke-width="2"/>')
            out.append(f'<text x="{x0 + 40}" y="{ly}">{esc(label(op, tool))}</text>')
            ly += 16
        if base:
            out.append(f'<line x1="{x0 + 10}" y1="{ly - 4}" x2="{x0 + 34}" y2="{ly - 4}" stroke="#999" stroke-dasharray="6,4"/>')
            out.append(f'<text x="{x0 + 40}" y="{ly}">ideal: peerpath T=1 x threads</text>')
    out.append(f'<text x="60" y="{H - 12}" font-size="10" fill="#555">bench/scaling.sh, {esc(meta.get("date", ""))}; '
               f'igzip -T is capped at 8 threads by igzip itself; igzip -d is single-threaded</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --- markdown -----------------------------------------------------------------------------

def markdown(cells, meta, threads, checks, bench_io, partial):
    in_bytes = int(meta["input_bytes"])
    L = []
    w = L.append
    title = f"Thread scaling {meta.get('label', '?')}"
    w(f"# {title}" + (" (PARTIAL: the run was cut short)" if partial else ""))
    w("")
    w(f"Produced by (run in {meta.get('cwd', '?')}):")
    w("")
    w("```sh")
    w(meta.get("cmdline", "?"))
    w("```")
    w("")
    took = f"{float(meta['elapsed_s']):.0f} s" if meta.get("elapsed_s") else "? s (cut short)"
    w(f"Date: {meta.get('date', '?')}; took {took}. Input and every output on "
      f"`{meta.get('scratch_fs', '?')}`, so every row is memory to memory. {meta.get('runs')} timed run(s) per "
      f"cell{' (--quick: 1 for the single-thread peers)' if meta.get('quick') == '1' else ''}, tools interleaved "
      f"within a thread count; each run writes a new file (the previous output removed first, untimed). "
      f"Seconds: wall clock of the command alone ({meta.get('clock', '?')}); GB/s = uncompressed bytes / "
      f"median seconds / 10^9, for compression and decompression alike.")
    w("")
    w("## Results in memory: median seconds and GB/s")
    w("")
    w("| operation | " + " | ".join(f"T={t}" for t in threads) + " |")
    w("|---|" + "---|" * len(threads))

    def cell(op, tool, t):
        c = cells.get(("mem", op, tool, t))
        if not c:
            return "-"
        if c.get("median_s") is None:
            return "**failed**"
        bad = "" if c.get("check") == "ok" else f" **{c.get('check')}**"
        return f"{c['median_s']:.3f} s, {c['gb_per_s_median']:.2f} GB/s{bad}"

    def med(op, tool, t):
        c = cells.get(("mem", op, tool, t))
        return c.get("median_s") if c else None

    for op in ("compress", "decompress"):
        for tool in TOOLS:
            if any(("mem", op, tool, t) in cells for t in threads):
                w(f"| `{label(op, tool)}` | " + " | ".join(cell(op, tool, t) for t in threads) + " |")
        base = med(op, "peerpath", 1)
        if base:
            sp = [(base / med(op, "peerpath", t)) if med(op, "peerpath", t) else None for t in threads]
            w(f"| peerpath {op}: speed-up vs its T=1 | " +
              " | ".join("-" if x is None else f"{x:.2f}x" for x in sp) + " |")
            w(f"| peerpath {op}: parallel efficiency (speed-up / T) | " +
              " | ".join("-" if x is None else f"{x / t:.0%}" for x, t in zip(sp, threads)) + " |")
        for other in ("igzip", "pigz"):
            if any(("mem", op, other, t) in cells for t in threads):
                vals = []
                for t in threads:
                    a, b = med(op, "peerpath", t), med(op, other, t)
                    vals.append(f"{b / a:.2f}x" if a and b else "-")
                w(f"| peerpath {op} throughput / `{label(op, other)}` | " + " | ".join(vals) + " |")
    w("")
    if any(("mem", "compress", "igzip", t) in cells for t in threads if t > 8):
        w("`igzip -T` above 8 runs 8 threads: igzip's command line caps it (`MAX_THREADS 8` in ISA-L's "
          "`programs/igzip_cli.c`; T threads there = the main thread + T-1 compressing workers). "
          "`igzip -d` is single-threaded at every T (run at each T for noise, same command). "
          "`pigz -d` inflates on one thread whatever `-p` says (plus read, write and check threads).")
    else:
        w("`igzip -d` is single-threaded at every T (run at each T for noise, same command). `pigz -d` "
          "inflates on one thread whatever `-p` says (plus read, write and check threads). igzip's "
          "command line caps `-T` at 8.")
    w("")

    # per-role CPU of peerpath
    w("## peerpath's own report at each T (the median run's `--json`)")
    w("")
    w("CPU seconds are user + system from the kernel's per-thread accounting, as peerpath reports "
      "them; busy cores = CPU seconds / peerpath's wall seconds.")
    w("")
    w("| operation | T | wall s (own) | GB/s (own) | orchestration: threads, CPU s, busy cores | "
      "compute: threads, CPU s, busy cores | other CPU s | total CPU s | CPU s per GB | machine busy | I/O path |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for op in ("compress", "decompress"):
        for t in threads:
            c = cells.get(("mem", op, "peerpath", t))
            rep = c.get("peerpath_report") if c else None
            if not rep or not rep.get("cpu"):
                continue
            cpu = rep["cpu"]
            wall = rep.get("wall_s") or cpu.get("wall_s") or 0

            def rc(name):
                r = role_cpu(rep, name)
                if not r:
                    return "-"
                s = r["user_s"] + r["system_s"]
                return f"{r['threads']}, {s:.3f}, {s / wall:.2f}" if wall else f"{r['threads']}, {s:.3f}, -"
            tot = cpu.get("total_user_s", 0) + cpu.get("total_system_s", 0)
            gb = (rep.get("bytes_in") if op == "compress" else rep.get("bytes_out")) or in_bytes
            w(f"| {op} | {t} | {wall:.3f} | {rep.get('throughput_gb_per_s', 0):.2f} | {rc('orchestration')} | "
              f"{rc('compute')} | {cpu.get('other_s', 0):.3f} | {tot:.3f} | {tot / (gb / 1e9):.2f} | "
              f"{cpu.get('total_utilisation_pct', 0):.0f}% of {cpu.get('cores', '?')} | {io_path(rep)} |")
    w("")

    # where the pipeline's time went (the report's `pipeline`: workers busy or waiting for
    # work, what held the orchestrator, queue occupancy)
    w("## Where peerpath's pipeline time went (the median run's `pipeline`)")
    w("")
    w("Workers: time running tasks / waiting for one, summed over the workers. Orchestrator: its "
      "waits for completions, by what held it (\"workers all busy\" is compute-bound, the rest "
      "are stages that starve the workers). In flight: time-weighted means.")
    w("")
    w("| operation | T | workers busy | worker idle s | orchestrator waited s | held by (s) | tasks | reads | writes |")
    w("|---|---|---|---|---|---|---|---|---|")
    for op in ("compress", "decompress"):
        for t in threads:
            c = cells.get(("mem", op, "peerpath", t))
            rep = c.get("peerpath_report") if c else None
            p = (rep or {}).get("pipeline")
            if not p:
                continue
            held = ", ".join(f"{x['held_by']} {x['seconds']:.3f}" for x in p.get("waits", []))
            w(f"| {op} | {t} | {p['worker_busy_share'] * 100:.0f}% ({p['worker_busy_s']:.3f} s) | {p['worker_idle_s']:.3f} | "
              f"{p['orchestrator_wait_s']:.3f} of {p['orchestrator_span_s']:.3f} | {held} | {p['mean_tasks_in_flight']:.1f} | "
              f"{p['mean_reads_in_flight']:.1f} | {p['mean_writes_in_flight']:.1f} |")
    w("")

    # every cell in detail
    w("## Every cell")
    w("")
    w("| where | T | command | runs (s) | median s | min s | max s | GB/s median | GB/s best | CPU s (median) | "
      "busy cores | compressed bytes | ratio | check |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    order = sorted(cells.values(), key=lambda c: (c["phase"] != "mem", c["op"] != "compress",
                                                    c["tool"], c["threads"]))
    for c in order:
        name = label(c["op"], c["tool"], c["threads"])
        where = "memory" if c["phase"] == "mem" else "disk"
        runs = ", ".join(f"{x['seconds']:.3f}" if x["rc"] == 0 else f"exit {x['rc']}" for x in c["runs"])
        if c.get("median_s") is None:
            w(f"| {where} | {c['threads']} | `{name}` | {runs} | - | - | - | - | - | - | - | - | - | {c.get('check')} |")
            continue
        size = f"{c['out_bytes']:,} | {c['ratio']:.3f}" if c.get("ratio") else "- | -"
        w(f"| {where} | {c['threads']} | `{name}` | {runs} | {s3(c['median_s'])} | {s3(c['min_s'])} | {s3(c['max_s'])} | "
          f"{c['gb_per_s_median']:.2f} | {c['gb_per_s_best']:.2f} | {c['cpu_s_median']:.2f} | "
          f"{c['cpu_s_median'] / c['median_s']:.2f} | {size} | {c.get('check')} |")
    w("")
    w("CPU s: user + system time of the command and its threads, from the shell's children "
      f"accounting (/proc/self/stat, {meta.get('clk_tck', '?')} ticks per second). "
      f"Check: compressed outputs decompressed with `{meta.get('checker', '?')}` and compared with the "
      "input, decompressed outputs compared with the input (`cmp`), the last run of each cell.")
    w("")

    # disk
    if meta.get("disk"):
        w(f"## On a disk: `{meta['disk']}`")
        w("")
        w(f"File system: {meta.get('disk_fs', '?')} ({meta.get('disk_dev', '?')}). "
          f"Page cache before each run: {meta.get('disk_drop_caches', '?')}.")
        if meta.get("disk_skipped"):
            w(f"Skipped: {meta['disk_skipped']}.")
        w("")
        if bench_io:
            w(f"`peerpath bench-io` ({bench_io.get('io_path', {}).get('engine', '?')}, "
              f"{'O_DIRECT' if bench_io.get('io_path', {}).get('direct') else 'buffered'}, "
              f"{bench_io.get('laid_out_bytes', 0) / 2**30:.2f} GiB file, {bench_io.get('memory_text', '')}):")
            w("")
            w("| pattern | block | queue depth | GB/s | p50 latency us |")
            w("|---|---|---|---|---|")
            for p in bench_io.get("points", []):
                qd, run = p.get("queue_depth"), p.get("queue_depth_in_flight", p.get("queue_depth"))
                w(f"| {p.get('pattern')} | {p.get('block_size_bytes', 0) // 1024} KiB | {qd if run == qd else f'{qd} ({run} in flight)'} | "
                  f"{p.get('throughput_gb_per_s', 0):.2f} | {p.get('latency', {}).get('p50_us', 0):.0f} |")
            w("")
        drows = [c for c in order if c["phase"] == "disk"]
        if drows:
            w("peerpath file to file, input and output in that directory (compression reads the input, "
              "decompression reads the synced compression's output):")
            w("")
            w("| command | median s | min s | GB/s median | / same T in memory | I/O path | check |")
            w("|---|---|---|---|---|---|---|")
            for c in drows:
                if c.get("median_s") is None:
                    w(f"| `{label(c['op'], c['tool'], c['threads'])}` | failed | - | - | - | - | {c.get('check')} |")
                    continue
                m = cells.get(("mem", c["op"], "peerpath", c["threads"]))
                rel = f"{m['median_s'] / c['median_s']:.0%}" if m and m.get("median_s") else "-"
                w(f"| `{label(c['op'], c['tool'], c['threads'])}` | {s3(c['median_s'])} | {s3(c['min_s'])} | "
                  f"{c['gb_per_s_median']:.2f} | {rel} | {io_path(c.get('peerpath_report'))} | {c.get('check')} |")
            w("")
            w("Synced rows: peerpath's default (output synced, then renamed into place); `--no-sync` rows leave "
              "the output unsynced, like pigz and igzip. The in-memory column compares with the "
              "`--no-sync` in-memory run at the same T.")
            w("")

    # machine and tools
    w("## Machine and tools")
    w("")
    w("| item | value |")
    w("|---|---|")
    for k, name in (("hostname", "host"), ("label", "label"), ("nproc", "CPUs (nproc)"),
                    ("cpu", "CPU model (/proc/cpuinfo)"),
                    ("cpu_cores", "physical cores (unique physical id/core id)"),
                    ("cpu_sockets", "sockets"), ("cpu_flags", "relevant CPU flags"),
                    ("affinity", "CPUs allowed"), ("cgroup_cpu_max", "cgroup cpu.max"),
                    ("loadavg_start", "load average at start"), ("loadavg_end", "load average at end"),
                    ("kernel", "kernel"), ("os", "OS"), ("mem", "memory"),
                    ("scratch_fs", "scratch file system"), ("disk_fs", "disk file system"),
                    ("ver_peerpath", "peerpath"), ("peerpath", "peerpath binary"),
                    ("pigz", "pigz"), ("igzip", "igzip"), ("debs", "packages from --debs"),
                    ("checker", "round-trip checker")):
        if meta.get(k):
            w(f"| {name} | {esc(meta[k]).replace('|', '/')} |")
    w("")
    w(f"Input: {meta.get('input_desc', '?')}: {in_bytes:,} bytes ({in_bytes / 2**20:.0f} MiB), SHA-256 "
      f"`{meta.get('input_sha256', '?')}`.")
    w("")
    w("Commands (IN, OUT and X.gz in the scratch dir; X.gz = peerpath's own output at "
      f"T={max(threads)}, made once, untimed; processes not pinned):")
    w("")
    w("```sh")
    w("peerpath compress --level 1 --threads T --no-sync --force IN -o OUT.gz --json > report.json")
    w("pigz -1 -p T -c IN > OUT.gz")
    w("igzip -1 -T T -c IN > OUT.gz")
    w("peerpath decompress --threads T --no-sync --force X.gz -o OUT --json > report.json")
    w("pigz -d -p T -c X.gz > OUT")
    w("igzip -d -c X.gz > OUT")
    w("```")
    w("")
    failed = [c for c in checks if c["result"] != "ok"]
    if failed:
        w("**Failed checks:** " + "; ".join(f"{c['phase']} {c['op']} {c['tool']} T={c['threads']}: {c['detail']}"
                                          for c in failed))
        w("")
    return "\n".join(L) + "\n"


def report(out_dir, partial):
    meta = read_meta(os.path.join(out_dir, "meta.tsv"))
    runs = read_tsv(os.path.join(out_dir, "runs.tsv"))
    checks = read_tsv(os.path.join(out_dir, "checks.tsv"))
    in_bytes = int(meta["input_bytes"])
    threads = [int(t) for t in meta["threads"].split()]
    cells = cells_from(runs, checks, out_dir, in_bytes)
    bench_io = load_json(os.path.join(out_dir, "disk-bench-io.json"))
    doc = {
        "schema": "peerpath-scaling/1",
        "partial": partial,
        "meta": meta,
        "machine": {k: meta.get(k) for k in ("hostname", "nproc", "cpu", "cpu_cores", "cpu_sockets", "cpu_flags",
                                             "affinity", "cgroup_cpu_max", "kernel", "os", "mem", "scratch_fs",
                                             "disk_fs", "disk_dev")},
        "input": {"desc": meta.get("input_desc"), "bytes": in_bytes, "sha256": meta.get("input_sha256")},
        "threads": threads,
        "runs": [{**r, "threads": int(r["threads"]), "run": int(r["run"]), "seconds": float(r["seconds"]),
                  "cpu_s": float(r["cpu_s"]), "rc": int(r["rc"]), "out_bytes": int(r["out_bytes"] or 0)}
                 for r in runs],
        "checks": checks,
        "cells": sorted(cells.values(), key=lambda c: (c["phase"], c["op"], c["tool"], c["threads"])),
        "disk_bench_io": bench_io,
    }
    with open(os.path.join(out_dir, "scaling.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(out_dir, "scaling.md"), "w", encoding="utf-8") as f:
        f.write(markdown(cells, meta, threads, checks, bench_io, partial))
    with open(os.path.join(out_dir, "scaling.svg"), "w", encoding="utf-8") as f:
        f.write(svg(cells, meta, threads))
    print(f"[scaling] report: {os.path.join(out_dir, 'scaling.md')} (+ .json, .svg)"
          + (" PARTIAL" if partial else ""), file=sys.stderr)


def main():
    a = sys.argv[1:]
    if a[:1] == ["extract-deb"] and len(a) == 3:
        extract_deb(a[1], a[2])
    elif a[:1] == ["report"] and len(a) >= 3 and a[1] == "--out":
        report(a[2], "--partial" in a[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
