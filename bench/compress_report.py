#!/usr/bin/env python3
"""Turn bench/compress.sh's hyperfine JSON into the markdown report.

Usage: compress_report.py META.tsv CHECK.tsv COMPRESS.json DECOMPRESS.json TITLE
       compress_report.py --merge OUT.json ROUNDS   (merges OUT.json.round1..ROUNDS)
(called by bench/compress.sh; standard library only).
"""
import json
import statistics
import sys


def merge(out_path, rounds):
    """One hyperfine JSON from `rounds` files of one run per command each:
    times in round order, statistics recomputed, CPU times averaged."""
    per_round = []
    for i in range(1, rounds + 1):
        with open(f"{out_path}.round{i}", encoding="utf-8") as f:
            per_round.append(json.load(f)["results"])
    merged = []
    for k, first in enumerate(per_round[0]):
        rs = [results[k] for results in per_round]
        assert all(r["command"] == first["command"] for r in rs), "rounds ran different commands"
        times = [t for r in rs for t in r["times"]]
        merged.append({
            "command": first["command"],
            "mean": statistics.fmean(times),
            "stddev": statistics.stdev(times) if len(times) > 1 else None,
            "median": statistics.median(times),
            "user": statistics.fmean(r["user"] for r in rs),
            "system": statistics.fmean(r["system"] for r in rs),
            "min": min(times),
            "max": max(times),
            "times": times,
            "exit_codes": [c for r in rs for c in r.get("exit_codes", [])],
            "rounds": rounds,
        })
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"results": merged, "interleaved_rounds": rounds}, f, indent=2)


def paired(a, b):
    """Median over rounds of a's time over b's time in the same round."""
    return statistics.median(x / y for x, y in zip(a["times"], b["times"]))


def read_tsv(path, ncols):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append(line.split("\t", ncols - 1))
    return rows


def load_results(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    out = {}
    for r in data["results"]:
        out[r["command"]] = r  # hyperfine stores the --command-name here
    return out


def cpu(r):
    # hyperfine reports mean user and system CPU time (shell startup included)
    return f"{r['user'] + r['system']:.2f}"


def fmt_s(x):
    return f"{x:.3f}"


def main():
    if sys.argv[1] == "--merge":
        merge(sys.argv[2], int(sys.argv[3]))
        return
    meta_path, check_path, cjson, djson, title = sys.argv[1:6]
    meta = dict(read_tsv(meta_path, 2))
    checks = {name: (int(size), ok, cmd) for name, size, ok, cmd in read_tsv(check_path, 4)}
    comp = load_results(cjson)
    decomp = load_results(djson)
    n = int(meta["nproc"])
    in_bytes = int(meta["input_bytes"])
    pp_ran = f"peerpath --threads {n}" in comp

    def mbps(name, table):
        return in_bytes / table[name]["median"] / 1e6

    L = []
    w = L.append
    w(f"# Compression benchmark {title}")
    w("")
    w(f"Produced by (run in {meta['cwd']}):")
    w("")
    w("```sh")
    w(meta["cmdline"])
    w("```")
    w("")
    w(f"Date: {meta['date']}. Each command: 1 warm-up run, then {meta['runs']} timed runs with "
      f"hyperfine, interleaved: {meta['runs']} rounds, each running every command once in turn, so a "
      f"slow stretch of the machine falls on all commands alike; before every run (untimed, "
      f"`--prepare`) the command's previous output is removed and `sync` runs, so every run writes a new file. Times are wall-clock seconds; "
      f"MB/s = uncompressed bytes / median time / 10^6 (decimal), for compression and "
      f"decompression alike; ratio = input bytes / compressed bytes. Ratios between tools below are "
      f"computed from medians of this one run; the paired column is the median over rounds of "
      f"the two commands' ratio within a round.")
    w("")
    w("## Machine")
    w("")
    w("| item | value |")
    w("|---|---|")
    w(f"| host (label) | {meta['hostname']} ({meta['label']}) |")
    w(f"| CPUs (nproc) | {meta['nproc']} |")
    w(f"| CPU model (/proc/cpuinfo) | {meta['cpu']} |")
    w(f"| kernel | {meta['kernel']} |")
    w(f"| OS | {meta['os']} |")
    w(f"| memory | {meta['mem']} |")
    w(f"| scratch filesystem | {meta['fs']} |")
    w("")
    w("## Tools")
    w("")
    w("| tool | version |")
    w("|---|---|")
    for key in ("gzip", "pigz", "igzip", "zstd", "hyperfine"):
        w(f"| {key} | {meta['ver_' + key]} |")
    if pp_ran:
        w(f"| peerpath | {meta.get('ver_peerpath', '?')} (`{meta['peerpath']}`) |")
    else:
        w(f"| peerpath | **{meta['peerpath']}** |")
    w("")
    w("## Input")
    w("")
    note = f" ({meta['corpus_note']})" if meta.get("corpus_note") else ""
    w(f"`{meta['input']}`: {in_bytes:,} bytes ({in_bytes / 1e6:.1f} MB), "
      f"SHA-256 `{meta['input_sha256']}`{note}. Read from the page cache "
      f"(warm after the warm-up run).")
    w("")
    w("## Compression (level 1)")
    w("")
    w("| command | median s | min s | max s | MB/s (median) | CPU s (user+sys, mean) | compressed bytes | ratio | round trip |")
    w("|---|---|---|---|---|---|---|---|---|")
    for name, r in comp.items():
        size, ok, _ = checks[name]
        sizes = f"{size:,} | {in_bytes / size:.3f}" if ok != "discarded" else "- | -"
        w(f"| `{name}` | {fmt_s(r['median'])} | {fmt_s(r['min'])} | {fmt_s(r['max'])} | "
          f"{mbps(name, comp):.1f} | {cpu(r)} | {sizes} | {ok} |")
    w("")
    w("## Decompression")
    w("")
    w("gzip, pigz and igzip decompress the `igzip -1 -T1` output (single member); peerpath "
      f"decompresses its own `--threads {n}` output (multi-member with size subfields).")
    w("")
    w("| command | median s | min s | max s | MB/s (median, uncompressed) | CPU s (user+sys, mean) | output = input |")
    w("|---|---|---|---|---|---|---|")
    for name, r in decomp.items():
        _, ok, _ = checks[name]
        w(f"| `{name}` | {fmt_s(r['median'])} | {fmt_s(r['min'])} | {fmt_s(r['max'])} | "
          f"{mbps(name, decomp):.1f} | {cpu(r)} | {ok} |")
    w("")
    w(f"## Targets of issue #2 (ratios of medians, this run, N = {n})")
    w("")
    w("| target | measured (ratio of medians) | median of paired ratios | goal | met |")
    w("|---|---|---|---|---|")

    def row(label, value, goal, met, pair="-"):
        w(f"| {label} | {value} | {pair} | {goal} | {met} |")

    ppc = f"peerpath --threads {n}"
    ppd = f"peerpath decompress --threads {n}"
    if pp_ran:
        t_pp = comp[ppc]["median"]
        def speedup(table, other, ours):
            return table[other]["median"] / table[ours]["median"], f"{paired(table[other], table[ours]):.2f}x"

        x, p = speedup(comp, f"igzip -1 -T{n}", ppc)
        row(f"compression throughput, file to file, peerpath (N={n}) / `igzip -1 -T{n}`", f"{x:.2f}x", ">= 1.6x",
            "yes" if x >= 1.6 else "**no**", p)
        x, p = speedup(comp, f"pigz -1 -p{n}", ppc)
        row(f"compression throughput, file to file, peerpath (N={n}) / `pigz -1 -p{n}`", f"{x:.2f}x", ">= 4x",
            "yes" if x >= 4.0 else "**no**", p)
        if f"igzip -1 -T{n} + sync" in comp:
            x, p = speedup(comp, f"igzip -1 -T{n} + sync", ppc)
            row(f"compression throughput, file to file, every output durable, peerpath (N={n}) / `igzip -1 -T{n}` + `sync OUT`",
                f"{x:.2f}x", ">= 1.6x", "yes" if x >= 1.6 else "**no**", p)
            x, p = speedup(comp, f"pigz -1 -p{n} + sync", ppc)
            row(f"compression throughput, file to file, every output durable, peerpath (N={n}) / `pigz -1 -p{n}` + `sync OUT`",
                f"{x:.2f}x", ">= 4x", "yes" if x >= 4.0 else "**no**", p)
        if f"{ppc} --no-sync" in comp:
            for other, goal in ((f"igzip -1 -T{n}", 1.6), (f"pigz -1 -p{n}", 4.0)):
                x, p = speedup(comp, other, f"{ppc} --no-sync")
                row(f"compression throughput, file to file, no output synced, peerpath (N={n}) `--no-sync` / `{other}`",
                    f"{x:.2f}x", f">= {goal:g}x", "yes" if x >= goal else "**no**", p)
        if f"{ppc}, in memory" in comp:
            for ours, what in ((ppc, "output synced"), (f"{ppc} --no-sync", "`--no-sync`")):
                if ours in comp:
                    x, p = speedup(comp, ours, f"{ppc}, in memory")
                    row(f"compression throughput, file to file with O_DIRECT ({what}) / the same job in memory (tmpfs), peerpath (N={n})",
                        f"{1 / x:.0%}", ">= 90%", "yes" if 1 / x >= 0.9 else "**no**",
                        f"{1 / float(p.rstrip('x')):.0%}")
        x, p = speedup(comp, f"igzip -1 -T{n} > /dev/null", f"{ppc} > /dev/null")
        row(f"compression throughput, compressing only (output to /dev/null), peerpath (N={n}) / `igzip -1 -T{n}`",
            f"{x:.2f}x", ">= 1.6x", "yes" if x >= 1.6 else "**no**", p)
        x, p = speedup(comp, f"pigz -1 -p{n} > /dev/null", f"{ppc} > /dev/null")
        row(f"compression throughput, compressing only (output to /dev/null), peerpath (N={n}) / `pigz -1 -p{n}`",
            f"{x:.2f}x", ">= 4x", "yes" if x >= 4.0 else "**no**", p)
        s_pp = checks[ppc][0]
        s_ig = checks["igzip -1 -T1"][0]
        d = (s_pp / s_ig - 1) * 100
        row(f"compressed size, peerpath (N={n}) vs `igzip -1` ({s_pp:,} vs {s_ig:,} B)", f"{d:+.2f}%",
            "<= +3%", "yes" if d <= 3.0 else "**no**")
        x, p = speedup(decomp, "igzip -d", ppd)
        row(f"decompression throughput, file to file, peerpath (N={n}, output synced) / `igzip -d` "
            f"(1 thread, output left in the page cache{', then synced' if meta['fsync_others'] == '1' else ''})",
            f"{x:.2f}x", ">= 1.7x", "yes" if x >= 1.7 else "**no**", p)
        if "igzip -d + sync" in decomp:
            x, p = speedup(decomp, "igzip -d + sync", ppd)
            row(f"decompression throughput, file to file, every output durable, peerpath (N={n}) / `igzip -d` (1 thread) + `sync OUT`",
                f"{x:.2f}x", ">= 1.7x", "yes" if x >= 1.7 else "**no**", p)
        if f"{ppd} --no-sync" in decomp:
            x, p = speedup(decomp, "igzip -d", f"{ppd} --no-sync")
            row(f"decompression throughput, file to file, no output synced, peerpath (N={n}) `--no-sync` / `igzip -d` (1 thread)",
                f"{x:.2f}x", ">= 1.7x", "yes" if x >= 1.7 else "**no**", p)
        x, p = speedup(decomp, "igzip -d > /dev/null", f"{ppd} > /dev/null")
        row(f"decompression throughput, decoding only (output to /dev/null), peerpath (N={n}) / `igzip -d` (1 thread)",
            f"{x:.2f}x", ">= 1.7x", "yes" if x >= 1.7 else "**no**", p)
    else:
        for label, goal in (
            (f"compression throughput, file to file, peerpath (N={n}) / `igzip -1 -T{n}`", ">= 1.6x"),
            (f"compression throughput, file to file, peerpath (N={n}) / `pigz -1 -p{n}`", ">= 4x"),
            (f"compression throughput, compressing only, peerpath (N={n}) / `igzip -1 -T{n}`", ">= 1.6x"),
            (f"compression throughput, compressing only, peerpath (N={n}) / `pigz -1 -p{n}`", ">= 4x"),
            ("compressed size, peerpath vs `igzip -1`", "<= +3%"),
            (f"decompression throughput, file to file, peerpath (N={n}) / `igzip -d` (1 thread)", ">= 1.7x"),
            (f"decompression throughput, decoding only, peerpath (N={n}) / `igzip -d` (1 thread)", ">= 1.7x"),
        ):
            row(label, "n/a (peerpath skipped)", goal, "n/a")
    w("")
    w("For reference, same run: "
      f"`igzip -1 -T{n}` / `pigz -1 -p{n}` = "
      f"{comp[f'pigz -1 -p{n}']['median'] / comp[f'igzip -1 -T{n}']['median']:.2f}x; "
      f"`igzip -1 -T{n}` / `igzip -1 -T1` = "
      f"{comp['igzip -1 -T1']['median'] / comp[f'igzip -1 -T{n}']['median']:.2f}x; "
      f"`pigz -1 -p{n}` / `pigz -1 -p1` = "
      f"{comp['pigz -1 -p1']['median'] / comp[f'pigz -1 -p{n}']['median']:.2f}x; "
      f"`igzip -d` / `gzip -d` = {decomp['gzip -d']['median'] / decomp['igzip -d']['median']:.2f}x.")
    w("")
    w("## What each command does")
    w("")
    w("All commands read the same input file and write a regular file in the same scratch "
      "directory (`$SCRATCH`, a temporary directory next to the input, removed afterwards), "
      "except the rows marked `> /dev/null`, which measure compressing or decoding alone "
      "(their output is discarded, so it is not checked there; the rows above them run the "
      "same decoders on the same input and are checked), and the row marked `in memory`, which "
      "reads a copy of the input on tmpfs (/dev/shm, made once, untimed) and writes its output "
      "there (the issue's overlap target compares it with the file-to-file row). The tools other than peerpath write through a shell "
      "redirect and leave the data in the page cache"
      + (", followed by `sync OUT` (fsync of that file, timed)" if meta["fsync_others"] == "1" else
         " (no fsync; run with `--fsync-others` to make them fsync the output too)")
      + (". The rows marked `+ sync` run the same commands followed by `sync OUT` (timed), so that "
         "they pay for durable output as peerpath does" if meta["fsync_others"] != "1" else "")
      + ". peerpath writes the target itself (by its design in issue #2: temporary name, "
        "sync, rename), so its time includes making the output durable; the rows marked `--no-sync` "
        "skip its syncs (still writing a temporary file and renaming it), leaving the output "
        "unsynced as the other tools' plain rows do. `gzip`, `igzip -T1`, "
        "`zstd -T1` and `pigz -p1` compress on one thread (zstd -T1 may add an I/O thread); "
        "`pigz -d` inflates on one thread plus helper threads for reading, writing and the "
        "check value. Processes are not pinned to CPUs. The round-trip column decompresses "
        "each output (gzip -d or zstd -d, untimed) and compares it with the input.")
    w("")
    w("```sh")
    for name in list(comp) + list(decomp):
        w(checks[name][2])
    w("```")
    w("")
    if not pp_ran:
        w(f"**peerpath was not measured**: {meta['peerpath']}.")
        w("")
    sys.stdout.write("\n".join(L))


if __name__ == "__main__":
    main()
