//! `peerpath scan`: the same records and counts as seqkit and grep on the
//! same files, gzip input included; bad input is a clear error and the
//! output appears whole or not at all.

mod common;

use common::*;

fn scan(args: &[&std::ffi::OsStr]) -> Out {
    let mut a = vec![std::ffi::OsString::from("scan")];
    a.extend(args.iter().map(|s| s.to_os_string()));
    run(&mut pp(a)).ok()
}

/// FASTA headers (and sequences, joined) of a FASTA text, for comparing
/// outputs whose line wrapping differs.
fn records(fasta: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for line in fasta.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if line[0] == b'>' {
            v.push((line.to_vec(), Vec::new()));
        } else if let Some(last) = v.last_mut() {
            last.1.extend_from_slice(line);
        }
    }
    v
}

#[test]
fn matches_are_those_of_seqkit_and_grep() {
    let s = sample_path();
    let o = |x: &str| std::ffi::OsString::from(x);
    let count = |args: &[std::ffi::OsString]| -> u64 {
        let mut a: Vec<&std::ffi::OsStr> = args.iter().map(|x| x.as_os_str()).collect();
        a.push(std::ffi::OsStr::new("-c"));
        scan(&a).stdout_str().trim().parse().unwrap()
    };
    let motif = [o("--motif"), o("KL[VI]{2}"), s.clone().into_os_string()];
    let n = count(&motif);
    assert!(n > 50, "{n}");
    let dir = scratch();
    let gz = dir.path().join("s.fa.gz");
    run(&mut pp(args!["compress", &s, "-o", &gz, "-q"])).ok();
    assert_eq!(count(&[o("--motif"), o("KL[VI]{2}"), gz.clone().into_os_string(), o("-T"), o("3")]), n, "gzip input gives the same count");
    let out = scan(&[o("--motif").as_os_str(), o("KL[VI]{2}").as_os_str(), s.as_os_str(), o("-q").as_os_str()]).stdout;
    assert_eq!(records(&out).len() as u64, n);
    let Some(tools) = tools_or_skip("scan vs seqkit", &["seqkit", "grep"]) else { return };
    let (seqkit, grep) = (&tools[0], &tools[1]);
    let sk = |args: &[&str]| {
        let mut a: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        a.push(s.as_os_str());
        sys(seqkit, &a, None)
    };
    assert_eq!(records(&out), records(&sk(&["grep", "-s", "-r", "-P", "-p", "KL[VI]{2}"])), "the same records as seqkit grep -s -r -P");
    let long = scan(&[o("--min-length").as_os_str(), o("500").as_os_str(), s.as_os_str(), o("-q").as_os_str()]).stdout;
    assert_eq!(records(&long), records(&sk(&["seq", "-m", "500"])), "the same records as seqkit seq -m");
    let ids = scan(&[o("--id-prefix").as_os_str(), o("B0").as_os_str(), s.as_os_str(), o("-q").as_os_str()]).stdout;
    assert_eq!(records(&ids), records(&sk(&["grep", "-r", "-p", "^B0"])), "the same records as seqkit grep -r -p ^B0");
    // Blank lines before the first header (files concatenated): still FASTA, as seqkit reads it.
    let blank_first = dir.path().join("blank-first.fa");
    std::fs::write(&blank_first, [&b"\n\r\n\n"[..], &std::fs::read(&s).unwrap()].concat()).unwrap();
    let got = scan(&[o("--motif").as_os_str(), o("KL[VI]{2}").as_os_str(), blank_first.as_os_str(), o("-q").as_os_str()]).stdout;
    assert_eq!(records(&got), records(&out), "the blank lines do not make it a file of lines");
    let emulated = run(&mut pp(args!["scan", &blank_first, "--motif", "KL[VI]{2}", "-c", "-q", "--engine", "emulated", "--no-fallback"])).ok();
    assert_eq!(emulated.stdout_str().trim(), n.to_string(), "the device's count too");
    // Lines: grep -c -E.
    let lines = dir.path().join("lines.txt");
    let text: Vec<u8> = records(&std::fs::read(&s).unwrap()).into_iter().flat_map(|(_, mut q)| {
        q.push(b'\n');
        q
    }).collect();
    std::fs::write(&lines, &text).unwrap();
    let want: u64 = String::from_utf8(sys(grep, &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("-E"), std::ffi::OsStr::new("KL[VI]{2}"), lines.as_os_str()], None)).unwrap().trim().parse().unwrap();
    assert_eq!(count(&[o("--motif"), o("KL[VI]{2}"), lines.into_os_string()]), want, "the same count as grep -c -E");
    assert_eq!(want, n, "one line per sequence: the same count as the FASTA");
}

#[test]
fn fastq_histograms_outputs_and_errors() {
    let dir = scratch();
    let d = dir.path();
    let fq = d.join("r.fq");
    let mut text = String::new();
    for i in 0..1000 {
        let seq: String = (0..(i % 150 + 1)).map(|j| b"ACGT"[(i * 7 + j * 3) % 4] as char).collect();
        text.push_str(&format!("@read{i} x\n{seq}\n+\n{}\n", "I".repeat(seq.len())));
    }
    std::fs::write(&fq, &text).unwrap();
    let o = run(&mut pp(args!["scan", &fq, "--min-length", "100", "--histogram", "-q"])).ok();
    let total: u64 = o.stdout_str().lines().map(|l| l.split('\t').nth(1).unwrap().parse::<u64>().unwrap()).sum();
    let want = (0..1000).filter(|i| i % 150 + 1 >= 100).count() as u64;
    assert_eq!(total, want, "{}", o.stdout_str());
    assert!(o.stdout_str().contains("64-127\t") && o.stdout_str().contains("128-255\t"));
    // -o appears whole, never over an existing file without --force, with its source's permissions (it was 0600).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fq, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = d.join("long.fq");
    run(&mut pp(args!["scan", &fq, "--min-length", "100", "-o", &out, "-q"])).ok();
    assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o640);
    let kept = std::fs::read_to_string(&out).unwrap();
    assert_eq!(kept.lines().count() as u64, 4 * want);
    run(&mut pp(args!["scan", &fq, "--min-length", "1", "-o", &out])).fails(4, &["exists"]);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), kept);
    // Bad input.
    run(&mut pp(args!["scan", &fq])).fails(2, &["at least one of"]);
    run(&mut pp(args!["scan", &fq, "--motif", "(unclosed"])).fails(2, &["--motif"]);
    run(&mut pp(args!["scan", d.join("missing"), "--motif", "A"])).fails(3, &["missing"]);
    let gz = d.join("r.fq.gz");
    run(&mut pp(args!["compress", &fq, "-o", &gz, "-q"])).ok();
    let mut bad = std::fs::read(&gz).unwrap();
    let n = bad.len();
    bad.truncate(n - 9);
    let cut = d.join("cut.fq.gz");
    std::fs::write(&cut, &bad).unwrap();
    let out2 = d.join("cut.out");
    run(&mut pp(args!["scan", &cut, "--motif", "ACG", "-o", &out2])).fails(7, &["cut.fq.gz", "truncated"]);
    assert!(!out2.exists(), "nothing written from a damaged input");
    assert_dir_holds(d, &["cut.fq.gz", "long.fq", "r.fq", "r.fq.gz"]);
}

/// `--engine emulated`: an emulated CSP counts plain files in its own
/// memory (records cut by its 4 MiB blocks carried by the device); counts
/// and histograms equal the CPU's; gzip input is a said fallback, refused
/// with --no-fallback; printing records on the device is refused.
#[test]
fn an_emulated_csp_counts_what_the_cpu_counts() {
    let dir = scratch();
    let d = dir.path();
    // About 10 MiB of FASTA with records of every length up to 20 KB: many cross a block end.
    let text = mixed_data(10 << 20, 21);
    let mut fasta = Vec::new();
    let mut at = 0usize;
    let mut i = 0usize;
    while at < text.len() {
        let len = (i * 7919) % 20_000;
        let seq: Vec<u8> = text[at..(at + len).min(text.len())].iter().map(|b| b"ACDEFGHIKLMNPQRSTVWY"[(*b % 20) as usize]).collect();
        fasta.extend_from_slice(format!(">r{i} len {len}\n").as_bytes());
        for line in seq.chunks(60) {
            fasta.extend_from_slice(line);
            fasta.push(b'\n');
        }
        at += len.max(1);
        i += 1;
    }
    let src = d.join("big.fa");
    std::fs::write(&src, &fasta).unwrap();
    for args in [args!["--motif", "KL[VI]{2}", "-c"], args!["--min-length", "9000", "--histogram"], args!["--motif", "w{3}", "-i", "-c"]] {
        let mut cpu = args!["scan", &src, "-q"];
        cpu.extend(args.clone());
        let mut emu = cpu.clone();
        emu.extend(args!["--engine", "emulated", "--no-fallback"]);
        let (a, b) = (run(&mut pp(cpu)).ok(), run(&mut pp(emu)).ok());
        assert_eq!(a.stdout_str(), b.stdout_str(), "{args:?}");
        assert!(!a.stdout_str().trim().is_empty());
    }
    let o = run(&mut pp(args!["scan", &src, "--motif", "KLV", "-c", "--engine", "emulated"])).ok();
    assert!(o.stderr.contains(" blocks, 544 bytes of results each"), "{}", o.stderr);
    let (copied, payload) = host_copies(&o.stderr);
    assert_eq!(payload, fasta.len() as u64, "{}", o.stderr);
    assert!(copied > 3 && copied < 8 * 544, "the motif, a byte and each block's counters: {}", o.stderr);
    let gz = d.join("big.fa.gz");
    run(&mut pp(args!["compress", &src, "-o", &gz, "-q"])).ok();
    let o = run(&mut pp(args!["scan", &gz, "--motif", "KLV", "-c", "--engine", "emulated"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("gzip"), "{}", o.stderr);
    run(&mut pp(args!["scan", &gz, "--motif", "KLV", "-c", "--engine", "emulated", "--no-fallback"])).fails(15, &["gzip", "--no-fallback"]);
    run(&mut pp(args!["scan", &src, "--motif", "KLV", "--engine", "emulated"])).fails(2, &["--count or --histogram"]);
    // --id-prefix stays on the CPU, said (as usage.md says; it was a usage error), or exit 15.
    let o = run(&mut pp(args!["scan", &src, "--id-prefix", "r1", "-c", "--engine", "emulated"])).ok();
    assert_eq!(o.stdout_str(), run(&mut pp(args!["scan", &src, "--id-prefix", "r1", "-c"])).ok().stdout_str());
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("--id-prefix is not a device filter"), "{}", o.stderr);
    run(&mut pp(args!["scan", &src, "--id-prefix", "r1", "-c", "--engine", "emulated", "--no-fallback"])).fails(15, &["--id-prefix"]);
    // Lines have no id: refused, where the count was 0 whatever the lines.
    std::fs::write(d.join("lines.txt"), b"r1 a\nr1 b\n").unwrap();
    run(&mut pp(args!["scan", d.join("lines.txt"), "--id-prefix", "r1", "-c"])).fails(2, &["read as lines, which have no id"]);
    // A record longer than the device carries across blocks (9 MiB on one line, a
    // chromosome unwrapped): the file is counted on the CPU, said; an error only with --no-fallback.
    let long = d.join("long.txt");
    let mut text = vec![b'A'; 9 << 20];
    text.extend_from_slice(b"\nshort\n");
    std::fs::write(&long, &text).unwrap();
    let o = run(&mut pp(args!["scan", &long, "--min-length", "1", "-c", "--engine", "emulated"])).ok();
    assert_eq!(o.stdout_str(), run(&mut pp(args!["scan", &long, "--min-length", "1", "-c"])).ok().stdout_str());
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("to carry"), "{}", o.stderr);
    run(&mut pp(args!["scan", &long, "--min-length", "1", "-c", "--engine", "emulated", "--no-fallback"])).fails(15, &["to carry", "--no-fallback"]);
}

/// `--engine gpu`: a GPU counts plain files in its memory with peerpath's
/// scan kernels, as the CPU counts (FASTQ and lines too); without a GPU, or
/// with a motif its DFA cannot walk (a Unicode word boundary), the CPU
/// counts, said with the reason, and --no-fallback makes either exit 15.
#[test]
fn scan_on_a_gpu_counts_what_the_cpu_counts_or_falls_back_saying_why() {
    let dir = scratch();
    let d = dir.path();
    let fa = d.join("s.fa");
    std::fs::write(&fa, sample()).unwrap();
    let fq = d.join("r.fq");
    std::fs::write(&fq, (0..60_000).flat_map(|i| format!("@r{i}\n{}\n+\n{}\n", &"ACGTTGCAAC"[i % 5..], "I".repeat(10 - i % 5)).into_bytes()).collect::<Vec<u8>>()).unwrap();
    let mut gpu_ran = false;
    for (f, args) in [(&fa, args!["--motif", "KL[VI]{2}", "-c"]), (&fa, args!["--min-length", "300", "--histogram"]), (&fq, args!["--motif", "^gt+g", "-i", "--histogram"]), (&fq, args!["--motif", "AC$", "-c", "--format", "lines"])] {
        let mut cpu = args!["scan", f];
        cpu.extend(args.clone());
        let mut gpu = cpu.clone();
        gpu.extend(args!["--engine", "gpu"]);
        let (a, b) = (run(&mut pp(cpu)).ok(), run(&mut pp(gpu)).ok());
        assert_eq!(a.stdout_str(), b.stdout_str(), "{args:?}");
        assert!(!a.stdout_str().trim().is_empty() && a.stdout_str().trim() != "0", "a weak case: {args:?}");
        if b.stderr.contains("FALLBACK") {
            assert!(b.stderr.contains("FALLBACK: GPU 0 unavailable: ") && b.stderr.contains("scanning on the host CPU"), "{}", b.stderr);
        } else {
            gpu_ran = true;
            assert!(b.stderr.contains("on 1 GPU (GPU 0") && host_copies(&b.stderr).0 < 64 << 10 && b.stderr.contains("measured on a real accelerator (GPU)"), "{}", b.stderr);
        }
    }
    if gpu_ran {
        eprintln!("a GPU counted the files");
    } else {
        eprintln!("SKIPPED the GPU's own runs (no GPU here): the CPU counted, said");
        run(&mut pp(args!["scan", &fa, "--motif", "KLV", "-c", "--engine", "gpu", "--no-fallback"])).fails(15, &["GPU 0 unavailable", "--no-fallback"]);
    }
    // A motif the GPU's DFA cannot walk: said before any GPU is asked.
    let o = run(&mut pp(args!["scan", &fa, "--motif", "\\bK", "-c", "--engine", "gpu"])).ok();
    assert!(o.stderr.contains("FALLBACK: the motif cannot run on the GPU") && o.stderr.contains("Unicode word boundar"), "{}", o.stderr);
    assert_eq!(o.stdout_str(), run(&mut pp(args!["scan", &fa, "--motif", "\\bK", "-c"])).ok().stdout_str());
    run(&mut pp(args!["scan", &fa, "--motif", "\\bK", "-c", "--engine", "gpu", "--no-fallback"])).fails(15, &["the motif cannot run on the GPU", "--no-fallback"]);
    run(&mut pp(args!["scan", &fa, "--motif", "K", "--engine", "gpu"])).fails(2, &["--engine gpu returns only counts"]);
    run(&mut pp(args!["scan", &fa, "--motif", "K", "-c", "--gpu", "1"])).fails(2, &["--gpu needs --engine gpu"]);
}

/// A device that stops answering is declared hung after `--device-timeout`
/// and the CPU counts the rest: the CPU's counts. The option is a device's:
/// a usage error on the CPU (for `dedup store` too).
#[test]
fn a_device_that_hangs_is_timed_out_and_the_cpu_counts() {
    let dir = scratch();
    let d = dir.path();
    let files: Vec<_> = (0..3)
        .map(|i| {
            let f = d.join(format!("part{i}.fa"));
            std::fs::write(&f, &sample()[..300_000 + i * 1000]).unwrap();
            f
        })
        .collect();
    let mut cpu = args!["scan", "--motif", "KL[VI]", "-c"];
    cpu.extend(files.iter().map(|f| f.as_os_str().to_os_string()));
    let want = run(&mut pp(cpu.clone())).ok().stdout_str();
    let mut emu = cpu.clone();
    emu.extend(args!["--engine", "emulated", "--inject-faults", "seed=3,hang-after=1", "--device-timeout", "0.5"]);
    let started = std::time::Instant::now();
    let o = run(&mut pp(emu)).ok();
    assert_eq!(o.stdout_str(), want);
    assert!(o.stderr.contains("timed out"), "{}", o.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(9), "a hang of 0.5 s, not 10 s: {:?}", started.elapsed());
    let mut bad = cpu.clone();
    bad.extend(args!["--device-timeout", "1"]);
    run(&mut pp(bad)).fails(2, &["--device-timeout", "--engine emulated or gpu"]);
    run(&mut pp(args!["dedup", "store", &files[0], "-s", d.join("st"), "--device-timeout", "1"])).fails(2, &["--device-timeout", "--engine emulated or gpu"]);
    assert!(!d.join("st").exists(), "no store made");
}

/// A device that dies during a file: that file is counted on the CPU, said
/// with the reason, and so are the files after it, said once, without
/// asking the dead device again; the counts are the CPU's. Injected faults
/// need the emulated engine, and corrupt= is refused (counts cannot be checked).
#[test]
fn a_device_that_dies_hands_this_file_and_the_rest_to_the_cpu_said_once() {
    let dir = scratch();
    let d = dir.path();
    let sample = sample();
    let files: Vec<_> = (0..4)
        .map(|i| {
            let f = d.join(format!("part{i}.fa"));
            // Whole records: cut at a header.
            let from = sample[i * 100_000..].iter().position(|&b| b == b'>').unwrap() + i * 100_000;
            let to = sample[from + 90_000..].iter().position(|&b| b == b'>').unwrap() + from + 90_000;
            std::fs::write(&f, &sample[from..to]).unwrap();
            f
        })
        .collect();
    let mut cpu = args!["scan", "--motif", "KL[VI]", "-c"];
    cpu.extend(files.iter().map(|f| f.as_os_str().to_os_string()));
    let want = run(&mut pp(cpu.clone())).ok().stdout_str();
    let mut emu = cpu.clone();
    // One command a file (each is one block): the device is killed right after the
    // second file's command is queued, which it may still answer (then the third fails).
    emu.extend(args!["--engine", "emulated", "--inject-faults", "seed=3,crash-after=2"]);
    let o = run(&mut pp(emu.clone())).ok();
    assert_eq!(o.stdout_str(), want);
    let failed = (1..=2).find(|i| o.stderr.contains(&format!("part{i}.fa: the device could not count it"))).unwrap_or_else(|| panic!("{}", o.stderr));
    let rest = match failed {
        1 => format!("has failed: the 2 files after {} are scanned on the host CPU", files[1].display()),
        _ => format!("has failed: the 1 file after {} is scanned on the host CPU", files[2].display()),
    };
    assert!(o.stderr.contains(&rest), "{rest}: {}", o.stderr);
    assert_eq!(o.stderr.matches("could not count").count(), 1, "the dead device is not asked again: {}", o.stderr);
    assert!(o.stderr.contains("files on the emulated CSP and on this host's CPU"), "{}", o.stderr);
    emu.push("--no-fallback".into());
    // The same race: file 1 or file 2 is the one the dead device could not count.
    let o = run(&mut pp(emu)).fails(15, &["the device could not count it", "--no-fallback"]);
    assert!(o.stderr.contains("part1.fa: the device") || o.stderr.contains("part2.fa: the device"), "{}", o.stderr);
    let mut bad = cpu.clone();
    bad.extend(args!["--inject-faults", "seed=3,crash-after=2"]);
    run(&mut pp(bad)).fails(2, &["--engine emulated"]);
    let mut bad = cpu.clone();
    bad.extend(args!["--engine", "emulated", "--inject-faults", "seed=3,corrupt=0.5"]);
    run(&mut pp(bad)).fails(2, &["corrupt="]);
}

/// FASTQ: the reads `seqkit` keeps (plain and gzip input), and records
/// that are not FASTQ named on the CPU and refused on an emulated CSP,
/// exit 6, where `seqkit` also refuses them; blank lines after the last
/// record are none, for both.
#[test]
fn fastq_reads_are_those_of_seqkit_and_malformed_ones_are_named() {
    let dir = scratch();
    let d = dir.path();
    let fq = d.join("r.fq");
    let mut text = String::new();
    for i in 0..3000 {
        let seq: String = random_bytes(i % 97 + 3, i as u64 + 1).iter().map(|b| b"ACGT"[usize::from(b % 4)] as char).collect();
        text.push_str(&format!("@read{i} lane {}\n{seq}\n+\n{}\n", i % 4, "F".repeat(seq.len())));
    }
    text.push_str("\n\n");
    std::fs::write(&fq, &text).unwrap();
    let gz = d.join("r.fq.gz");
    run(&mut pp(args!["compress", &fq, "-o", &gz, "-q"])).ok();
    // The reads' ids kept by a filter, in order.
    let ids = |fastq: &[u8]| -> Vec<String> { String::from_utf8_lossy(fastq).lines().step_by(4).map(|l| l.split(' ').next().unwrap().to_string()).collect() };
    let ours = |args: &[&str], path: &std::path::Path| {
        let mut a = vec!["scan".to_string(), path.display().to_string(), "-q".into()];
        a.extend(args.iter().map(|s| s.to_string()));
        ids(&run(&mut pp(a)).ok().stdout)
    };
    let motif = ours(&["--motif", "GT[AC]{2}T"], &fq);
    assert!(motif.len() > 100 && motif.len() < 2900, "{}", motif.len());
    assert_eq!(ours(&["--motif", "GT[AC]{2}T"], &gz), motif, "gzip input keeps the same reads");
    for engine in ["cpu", "emulated"] {
        let o = run(&mut pp(args!["scan", &fq, "--motif", "GT[AC]{2}T", "-c", "-q", "--engine", engine])).ok();
        assert_eq!(o.stdout_str().trim(), motif.len().to_string(), "{engine}");
    }
    if let Some(tools) = tools_or_skip("scan of FASTQ vs seqkit", &["seqkit"]) {
        let sk = |args: &[&str], path: &std::path::Path| {
            let mut a: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
            a.push(path.as_os_str());
            ids(&sys(&tools[0], &a, None))
        };
        for path in [&fq, &gz] {
            assert_eq!(motif, sk(&["grep", "-s", "-r", "-P", "-p", "GT[AC]{2}T"], path), "seqkit grep -s -r -P on {}", path.display());
            assert_eq!(ours(&["--min-length", "60"], path), sk(&["seq", "-m", "60"], path), "seqkit seq -m");
            assert_eq!(ours(&["--id-prefix", "read12"], path), sk(&["grep", "-r", "-p", "^read12"], path), "seqkit grep -r -p ^read12");
        }
    }
    // Not FASTQ: a quality line cut short in the middle of the file, a missing '+', a read
    // cut short at the end, a blank line between reads.
    let good = text.trim_end().to_string() + "\n";
    let at = good.find("@read1500 ").unwrap();
    let cases = [
        ("quality", good.replacen("@read1500 lane 0\n", "@read1500 lane 0\nAC\n+\nF\n@read1500b\n", 1), at, "its quality line is not as long as its sequence"),
        ("plus", good.replacen("\n+\n", "\n-\n", 1), 0, "its third line does not start with '+'"),
        ("cut", good.clone() + "@read3000\nACGT\n", good.len(), "the data ends before its fourth line"),
        ("blank", good.replacen("@read1500 ", "\n@read1500 ", 1), at, "its first line does not start with '@'"),
        // Past the device's first 4 MiB block: the offset is the file's, not the block's.
        ("late", good.repeat(13) + "@late\nACGT\n+\nF\n" + &good, 13 * good.len(), "its quality line is not as long as its sequence"),
    ];
    for (name, data, offset, why) in cases {
        let bad = d.join(format!("{name}.fq"));
        std::fs::write(&bad, &data).unwrap();
        let out = d.join(format!("{name}.out"));
        run(&mut pp(args!["scan", &bad, "--motif", "ACG", "-o", &out])).fails(6, &[&format!("not FASTQ: the record at byte {offset} is malformed: {why}")]);
        // The device names the same record (its fault record), in the file's bytes.
        run(&mut pp(args!["scan", &bad, "--motif", "ACG", "-c", "--engine", "emulated", "--no-fallback"])).fails(6, &[&format!("not FASTQ: the record at byte {offset} is malformed: {why} (found by the device, confirmed on the host)")]);
        assert!(!out.exists(), "{name}: nothing written");
    }
}

/// The summary line's three counts: matched, records, matched bases.
fn summary_counts(stderr: &str) -> (u64, u64, u64) {
    let line = stderr.lines().find(|l| l.starts_with("scan: ") && l.contains(" matched (")).unwrap_or_else(|| panic!("no summary in: {stderr}"));
    let words: Vec<&str> = line.split([' ', '(']).filter(|w| !w.is_empty()).collect();
    let n = |i: usize| words[i].parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
    (n(1), n(3), n(6))
}

/// `--json` (a `scan-report`): the counts, the histogram and where each file
/// ran as the text says them (and grep -c on lines, as the count), with
/// the device pass's measured host copies; the matching records and the
/// report never share standard output.
#[test]
fn json_reports_say_what_the_text_says() {
    let dir = scratch();
    let d = dir.path();
    let fa = d.join("s.fa");
    std::fs::write(&fa, sample()).unwrap();
    // Counts, against the text's count and summary.
    let text = run(&mut pp(args!["scan", &fa, "--motif", "KL[VI]{2}", "-c"])).ok();
    let j = run(&mut pp(args!["scan", &fa, "--motif", "KL[VI]{2}", "-c", "--json"])).ok();
    assert!(!j.stderr.contains("scan: "), "the report is the JSON, not the summary too: {}", j.stderr);
    let v = j.json();
    let count: u64 = text.stdout_str().trim().parse().unwrap();
    let (matched, of, bases) = summary_counts(&text.stderr);
    assert_eq!(matched, count);
    assert!(count > 50 && of > count, "a weak case: {count} of {of}");
    assert_eq!((v["matched"].as_u64(), v["records"].as_u64(), v["matched_bases"].as_u64()), (Some(count), Some(of), Some(bases)), "{v}");
    let f = &v["files"][0];
    assert_eq!((f["matched"].as_u64(), f["records"].as_u64(), f["bytes"].as_u64()), (Some(count), Some(of), Some(sample().len() as u64)), "{v}");
    assert_eq!((f["format"].as_str(), f["engine"].as_str(), v["engine"].as_str(), v["printed"].as_str()), (Some("fasta"), Some("cpu"), Some("cpu"), Some("count")), "{v}");
    assert_eq!((v["filter"]["motif"].as_str(), v["filter"]["ignore_case"].as_bool(), v["histogram"].is_null(), v["provenance"].as_str()), (Some("KL[VI]{2}"), Some(false), true, Some("measured on this host's CPU")), "{v}");
    assert_eq!(v["fallbacks"], serde_json::json!([]));
    // One sequence a line: the JSON's count is grep -c -E's.
    let lines = d.join("lines.txt");
    let seqs: Vec<u8> = records(sample()).into_iter().flat_map(|(_, mut q)| {
        q.push(b'\n');
        q
    }).collect();
    std::fs::write(&lines, &seqs).unwrap();
    let v = run(&mut pp(args!["scan", &lines, "--motif", "KL[VI]{2}", "-c", "--json"])).ok().json();
    assert_eq!((v["matched"].as_u64(), v["files"][0]["format"].as_str()), (Some(count), Some("lines")), "{v}");
    if let Some(grep) = tools_or_skip("scan --json vs grep -c", &["grep"]) {
        let want: u64 = String::from_utf8(sys(&grep[0], &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new("-E"), std::ffi::OsStr::new("KL[VI]{2}"), lines.as_os_str()], None)).unwrap().trim().parse().unwrap();
        assert_eq!(v["matched"].as_u64(), Some(want), "grep -c -E's count");
    }
    // The histogram: the text's bins, as numbers.
    let text = run(&mut pp(args!["scan", &fa, "--min-length", "100", "--histogram"])).ok().stdout_str();
    let v = run(&mut pp(args!["scan", &fa, "--min-length", "100", "--histogram", "--json"])).ok().json();
    let bins: Vec<String> = v["histogram"].as_array().unwrap().iter().map(|b| format!("{}-{}\t{}", b["from"], b["to"], b["records"])).collect();
    assert_eq!(bins, text.lines().collect::<Vec<_>>());
    assert!(bins.len() > 3, "{text}");
    assert_eq!(v["histogram"].as_array().unwrap().iter().map(|b| b["records"].as_u64().unwrap()).sum::<u64>(), v["matched"].as_u64().unwrap());
    // Records to a file, the report to standard output.
    let recs = d.join("recs.fa");
    let o = run(&mut pp(args!["scan", &fa, "--motif", "KL[VI]{2}", "-o", &recs, "--json"])).ok();
    let v = o.json();
    assert_eq!(records(&std::fs::read(&recs).unwrap()).len() as u64, count);
    assert_eq!((v["matched"].as_u64(), v["printed"].as_str(), v["output"].as_str()), (Some(count), Some("records"), recs.to_str()), "{v}");
    // Records would go to standard output: refused before anything is read or written.
    let o = run(&mut pp(args!["scan", &fa, "--motif", "K", "--json"])).fails(2, &["--json", "-o FILE", "--count"]);
    assert!(o.stdout.is_empty());
    let o = run(&mut pp(args!["scan", &fa, "--motif", "K", "--json", "-o", "-"])).fails(2, &["--json"]);
    assert!(o.stdout.is_empty());
    // Counts print no records: -o with them is refused, not ignored, and no file appears.
    let unused = d.join("unused.out");
    for flag in ["-c", "--histogram"] {
        run(&mut pp(args!["scan", &fa, "--motif", "K", flag, "-o", &unused])).fails(2, &["--output"]);
        assert!(!unused.exists(), "{flag}");
    }
    // An emulated CSP, and a gzip file it hands to the CPU: the pass and the fallback.
    let gz = d.join("s.fa.gz");
    run(&mut pp(args!["compress", &fa, "-o", &gz, "-q"])).ok();
    let on = args!["scan", &fa, &gz, "--motif", "KLV", "-c", "--engine", "emulated"];
    let text = run(&mut pp(on.clone())).ok();
    let mut with_json = on.clone();
    with_json.push("--json".into());
    let o = run(&mut pp(with_json)).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("gzip"), "fallbacks are still said on standard error: {}", o.stderr);
    let v = o.json();
    let (dev, cpu) = (&v["files"][0], &v["files"][1]);
    let pass = &dev["device_pass"];
    assert_eq!((dev["engine"].as_str(), pass["device"].as_str(), pass["staged"].as_bool()), (Some("emulated"), Some("1 emulated CSP"), Some(false)), "{v}");
    let blocks = pass["blocks"].as_u64().unwrap();
    assert_eq!(blocks, (sample().len() as u64).div_ceil(4 << 20));
    // Measured: the motif, the format's first byte and each block's counters, and nothing else.
    assert_eq!(pass["host_copies"]["bytes"].as_u64(), Some(3 + 1 + 544 * blocks), "{v}");
    assert_eq!(pass["host_copies"]["payload_bytes"].as_u64(), Some(sample().len() as u64));
    assert_eq!(host_copies(&text.stderr), (3 + 1 + 544 * blocks, sample().len() as u64), "the text's figures: {}", text.stderr);
    assert_eq!((cpu["engine"].as_str(), cpu["device_pass"].is_null()), (Some("cpu"), true), "{v}");
    let fallbacks = v["fallbacks"].as_array().unwrap();
    assert!(fallbacks.len() == 1 && fallbacks[0].as_str().unwrap().contains("gzip input") && fallbacks[0].as_str().unwrap().contains("s.fa.gz"), "{v}");
    let per_file: Vec<String> = text.stdout_str().lines().map(|l| l.rsplit('\t').next().unwrap().to_string()).collect();
    assert_eq!(per_file, vec![dev["matched"].to_string(), cpu["matched"].to_string()], "the text's per-file counts");
    assert_eq!(dev["matched"], cpu["matched"], "the device counts what the CPU counts");
    assert_eq!((v["device_files"].as_u64(), v["cpu_files"].as_u64(), v["device"].as_str()), (Some(1), Some(1), Some("the emulated CSP")), "{v}");
    assert_eq!(v["provenance"].as_str(), Some("measured: files on the emulated CSP and on this host's CPU"));
}

/// A file that shrinks while scanned gave counts of no state it was ever in: exit 12 on the
/// CPU and on a device, or (done before the cut) the whole file's count.
#[test]
fn a_file_that_shrinks_while_scanned_is_exit_12() {
    let dir = scratch();
    let src = dir.path().join("s.fa");
    let whole: Vec<u8> = sample().repeat(24);
    let count = |o: &Out| o.stdout_str().trim().to_string();
    let full = count(&run(&mut pp(args!["scan", "-q", "--count", "--min-length", "1", sample_path()])).ok());
    let full: u64 = full.parse::<u64>().unwrap() * 24;
    let mut cut = 0;
    for engine in ["cpu", "emulated"] {
        for delay_ms in [0u64, 10, 40, 120] {
            std::fs::write(&src, &whole).unwrap();
            let child = pp(args!["scan", "-q", "--count", "--min-length", "1", "--engine", engine, &src]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
            wait_until_open(child.id(), &src);
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
            std::fs::OpenOptions::new().write(true).open(&src).unwrap().set_len(whole.len() as u64 / 2).unwrap();
            let o = child.wait_with_output().unwrap();
            let o = Out { status: o.status, stdout: o.stdout, stderr: String::from_utf8_lossy(&o.stderr).into_owned(), what: format!("scan --engine {engine}") };
            match o.code() {
                Some(0) => assert_eq!(count(&o), full.to_string(), "{engine} after {delay_ms} ms: exit 0 with another count"),
                Some(12) => {
                    assert!(o.stderr.contains("shrank while being read"), "{}", o.describe());
                    cut += 1;
                }
                _ => panic!("{engine} after {delay_ms} ms: {}", o.describe()),
            }
        }
    }
    if cut == 0 {
        eprintln!("note: every scan finished before its file was cut: nothing shown on this machine");
    }
}

/// Records to a full standard output: exit 11, saying exactly how many bytes went out (they
/// stay there), as compress and decompress say it.
#[test]
fn records_to_a_full_standard_output_say_how_many_bytes_went_out() {
    let test = "records_to_a_full_standard_output_say_how_many_bytes_went_out";
    let Some(fs) = TmpfsMount::new(test, "256k") else { return };
    let out = fs.dir.join("out");
    let o = pp(args!["scan", "--min-length", "1", sample_path(), "-o", "-", "-q"]).stdout(std::fs::File::create(&out).unwrap()).output().unwrap();
    let o = Out { status: o.status, stdout: Vec::new(), stderr: String::from_utf8_lossy(&o.stderr).into_owned(), what: "scan -o - > full".into() };
    let went = std::fs::metadata(&out).unwrap().len();
    let o = o.fails(11, &["No space left"]);
    assert!(went > 0 && o.stderr.contains(&format!("after {went} bytes had been written")), "{went} bytes are there: {}", o.stderr);
}

/// A record with no end in sight (a stream of zeros, one endless line) grew in memory until the
/// process aborted (exit 134) or the machine ran out: it stops at --max-record (default half the
/// machine's memory), exit 12, naming where the record starts; plain, gzip and a pipe alike.
#[test]
fn a_record_longer_than_max_record_stops_the_scan_with_exit_12() {
    let dir = scratch();
    let long = dir.path().join("long");
    let mut data = b">r1\nACGT\n>r2\n".to_vec();
    data.extend(std::iter::repeat_n(b'A', 3 << 20));
    std::fs::write(&long, &data).unwrap();
    run(&mut pp(args!["scan", &long, "--count", "--motif", "C", "--max-record", "1M"])).fails(12, &["from byte 9 has no end within", "--max-record"]);
    let gz = dir.path().join("long.gz");
    run(&mut pp(args!["compress", "-q", &long, "-o", &gz])).ok();
    run(&mut pp(args!["scan", &gz, "--count", "--motif", "C", "--max-record", "1M"])).fails(12, &["from byte 9 has no end within", "of its decompressed data"]);
    let zeros = pp(args!["scan", "-", "--count", "--motif", "A", "--max-record", "2M", "--format", "lines"]).stdin(std::fs::File::open("/dev/zero").unwrap()).output().unwrap();
    assert_eq!(zeros.status.code(), Some(12), "{}", String::from_utf8_lossy(&zeros.stderr));
    let zero = run(&mut pp(args!["scan", &long, "--count", "--motif", "C", "--max-record", "0"]));
    assert!(zero.code() == Some(2) && zero.stderr.contains("at least 1 byte"), "{}", zero.describe());
    // Under the bound, the same file is counted.
    let o = run(&mut pp(args!["scan", &long, "--count", "--motif", "C", "--max-record", "4M"])).ok();
    assert!(o.stdout_str().starts_with('1'), "{}", o.stdout_str());
}

/// The defect: --max-record was held only to the part of a record still waiting for its end
/// after each 1 MiB read, so a long record that ended within a read was counted (`--max-record
/// 1K` counted a 3000-base record in the middle of a file, exit 0) and whether the scan stopped
/// depended on where the reads split the file. A record over the limit stops the scan wherever it
/// lies (at the start, within a read, across a read's end, at the very end without its line
/// break), exit 12 naming the byte it starts at; plain, gzip and standard input; FASTA, FASTQ and
/// lines. One at the limit (its bytes, not the line break that ends it) is counted. The devices,
/// which say nothing of records' lengths, leave a limit below what they may count to the CPU.
#[test]
fn a_record_over_max_record_stops_the_scan_wherever_it_lies() {
    let dir = scratch();
    let d = dir.path();
    // About 3 MiB of 14-byte records (three reads), one of 3006 bytes among them.
    let short = ">s\nACGTACGTCC\n";
    let long = format!(">long\n{}\n", "A".repeat(3000));
    let limit = long.len() - 1;
    let n = (3 << 20) / short.len();
    let places = [("start", 0), ("middle", (3 << 19) / short.len()), ("across a read's end", ((1 << 20) - 1000) / short.len()), ("end", n)];
    let mut files = Vec::new();
    for (name, before) in places {
        let mut data = short.repeat(before).into_bytes();
        let at = data.len();
        data.extend_from_slice(long.as_bytes());
        data.extend_from_slice(short.repeat(n - before).as_bytes());
        if before == n {
            data.pop(); // no line break after it
        }
        if name == "across a read's end" {
            assert!(at < 1 << 20 && at + long.len() > 1 << 20);
        }
        let path = d.join(format!("{}.fa", name.replace(' ', "-")));
        std::fs::write(&path, &data).unwrap();
        files.push((name, path, at));
    }
    let over = format!("{}", limit - 1);
    for (name, path, at) in &files {
        let from = format!("the record (or line) from byte {at} ");
        run(&mut pp(args!["scan", path, "--motif", "A{3000}", "--count", "--max-record", &over])).fails(12, &[&from, "--max-record"]);
        run(&mut pp(args!["scan", path, "--motif", "A{3000}", "--count", "--max-record", "1K"])).fails(12, &[&from, "--max-record"]);
        let o = run(&mut pp(args!["scan", path, "--motif", "A{3000}", "--count", "-q", "--max-record", limit.to_string()])).ok();
        assert_eq!(o.stdout_str().trim(), "1", "{name}: the record at the limit is counted");
        let stdin = pp(args!["scan", "-", "--motif", "A{3000}", "--count", "--max-record", "1K"]).stdin(std::fs::File::open(path).unwrap()).output().unwrap();
        assert_eq!(stdin.status.code(), Some(12), "{name}, standard input: {}", String::from_utf8_lossy(&stdin.stderr));
        assert!(String::from_utf8_lossy(&stdin.stderr).contains(&from), "{name}: {}", String::from_utf8_lossy(&stdin.stderr));
        let gz = path.with_extension("fa.gz");
        run(&mut pp(args!["compress", "-q", path, "-o", &gz])).ok();
        run(&mut pp(args!["scan", &gz, "--motif", "A{3000}", "--count", "--max-record", "1K"])).fails(12, &[&from, "of its decompressed data", "--max-record"]);
        // Records printed: stopped too, nothing of -o left.
        let out = d.join("out.fa");
        run(&mut pp(args!["scan", path, "--motif", "A{3000}", "-o", &out, "--max-record", "1K"])).fails(12, &[&from]);
        assert!(!out.exists(), "{name}: -o appears whole or not at all");
    }
    // FASTQ and lines, the long record in the middle of a read.
    let (read, line) = ("@r\nACGT\n+\nIIII\n".repeat(50_000), "ACGT\n".repeat(100_000));
    let fastq = [&read, &*format!("@long\n{}\n+\n{}\n", "A".repeat(3000), "I".repeat(3000)), &read].concat();
    let lines = [&line, &*format!("{}\n", "A".repeat(3000)), &line].concat();
    for (file, text, at) in [("m.fq", &fastq, read.len()), ("m.txt", &lines, line.len())] {
        let path = d.join(file);
        std::fs::write(&path, text).unwrap();
        run(&mut pp(args!["scan", &path, "--motif", "A{3000}", "--count", "--max-record", "1K"])).fails(12, &[&format!("from byte {at} is "), "bytes long"]);
        let o = run(&mut pp(args!["scan", &path, "--motif", "A{3000}", "--count", "-q", "--max-record", "8K"])).ok();
        assert_eq!(o.stdout_str().trim(), "1", "{file}");
    }
    // On a device: a limit below the records it may count goes to the CPU (said), which stops at
    // the record; --no-fallback refuses; a limit it cannot pass (8M) stays on it.
    let (_, middle, at) = &files[1];
    let o = run(&mut pp(args!["scan", middle, "--motif", "A{3000}", "--count", "--max-record", "1K", "--engine", "emulated"]));
    let o = o.fails(12, &[&format!("from byte {at} "), "--max-record"]);
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("--max-record 1024 is below"), "{}", o.stderr);
    run(&mut pp(args!["scan", middle, "--motif", "A{3000}", "--count", "--max-record", "1K", "--engine", "emulated", "--no-fallback"])).fails(15, &["--max-record"]);
    let o = run(&mut pp(args!["scan", middle, "--motif", "A{3000}", "--count", "--max-record", "8M", "--engine", "emulated", "--no-fallback"])).ok();
    assert!(o.stdout_str().starts_with("1\n") && o.stderr.contains("emulated CSP"), "{}", o.describe());
}

/// A file of /proc says it holds 0 bytes: it is scanned to its end, as a pipe is (it was said
/// to have grown while read, "0 bytes when opened, 0 now", exit 12).
#[test]
fn a_proc_file_is_scanned_to_its_end() {
    let src = std::path::Path::new("/proc/version");
    let Ok(text) = std::fs::read_to_string(src) else {
        eprintln!("SKIPPED: no /proc/version here");
        return;
    };
    let lines = text.lines().count();
    let o = run(&mut pp(args!["scan", src, "--format", "lines", "--motif", ".", "--count", "--json"])).ok();
    let j = o.json();
    assert_eq!(j["matched"].as_u64(), Some(lines as u64), "{j}");
}

/// An encrypted file (peerpath-enc/1, as `compress --encrypt` writes it) or another
/// compressor's (zstd, xz, bzip2) was read as lines: a motif matched nothing, or binary
/// noise, and the scan said so with exit 0. Each is refused, saying what it is and what
/// to do, from a file, from standard input and with a device engine alike; nothing is
/// written. A line that only begins like bzip2's magic is still a line.
#[test]
fn encrypted_or_foreign_compressed_input_is_refused_not_read_as_lines() {
    let dir = scratch();
    let d = dir.path();
    let fa = d.join("s.fa");
    std::fs::write(&fa, ">a\nACGTACGT\n>b\nACGT\n").unwrap();
    let key = d.join("k.key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let sealed = d.join("s.fa.gz.ppenc");
    run(&mut pp(args!["compress", &fa, "--encrypt", "--key-file", &key, "-o", &sealed, "-q"])).ok();
    let foreign = [
        ("s.fa.zst", [&[0x28u8, 0xb5, 0x2f, 0xfd][..], b"\x04\x00ACGT\n"].concat(), "zstd"),
        ("s.fa.xz", [&[0xfdu8, b'7', b'z', b'X', b'Z', 0][..], b"\x00\x04ACGT\n"].concat(), "xz"),
        ("s.fa.bz2", [&b"BZh9"[..], &[0x31, 0x41, 0x59, 0x26, 0x53, 0x59], b"ACGT\n"].concat(), "bzip2"),
    ];
    let mut refused = vec![(sealed.clone(), "encrypted (peerpath-enc/1)")];
    for (name, bytes, what) in &foreign {
        std::fs::write(d.join(name), bytes).unwrap();
        refused.push((d.join(name), what));
    }
    let out = d.join("out.fa");
    for (f, what) in &refused {
        let name = f.file_name().unwrap().to_str().unwrap();
        run(&mut pp(args!["scan", f, "--motif", "ACGT", "-c"])).fails(2, &[name, what]);
        run(&mut pp(args!["scan", &fa, f, "--motif", "ACGT", "-o", &out])).fails(2, &[name, what]);
        assert!(!out.exists(), "{name}: nothing written");
        run(&mut pp(args!["scan", f, "--motif", "ACGT", "-c", "--engine", "emulated"])).fails(2, &[name, what]);
        let piped = run_full(&mut pp(args!["scan", "-", "--motif", "ACGT", "-c"]), Some(std::fs::read(f).unwrap()), std::time::Duration::from_secs(60));
        piped.fails(2, &["-", what]);
    }
    // The hint runs as printed: decompress for compress --encrypt's output, decrypt for
    // encrypt's (it said `decompress FILE.gz.ppenc` of both, its placeholder for the name).
    run(&mut pp(args!["scan", &sealed, "--motif", "ACGT", "-c"])).fails(2, &[&format!("`peerpath decompress {} --key-file KEY -o - | peerpath scan - ...`", sealed.display())]);
    let plain_sealed = d.join("my s.ppenc");
    run(&mut pp(args!["encrypt", &fa, "--key-file", &key, "-o", &plain_sealed])).ok();
    run(&mut pp(args!["scan", &plain_sealed, "--motif", "ACGT", "-c"])).fails(2, &[&format!("`peerpath decrypt '{}' --key-file KEY -o PLAIN`, then `peerpath scan PLAIN ...`", plain_sealed.display())]);
    run(&mut pp(args!["scan", d.join("s.fa.xz"), "--motif", "ACGT", "-c"])).fails(2, &[&format!("`xz -dc {} | peerpath scan - ...`", d.join("s.fa.xz").display())]);
    let line = d.join("bz.txt");
    std::fs::write(&line, "BZh9 is a line\nACGT\n").unwrap();
    assert_eq!(run(&mut pp(args!["scan", &line, "--motif", "ACGT", "-c", "-q"])).ok().stdout_str().trim(), "1");
}

/// A file that starts with a UTF-8 byte order mark (EF BB BF, as some editors and Windows tools
/// write): read as the same file without it, as seqkit reads it (it was read as lines: the
/// format was told from the mark's first byte, and no FASTA or FASTQ record matched), plain
/// or gzip, on the CPU and on an emulated CSP. A malformed record is named by its offset in the
/// file, mark included, on both.
#[test]
fn a_byte_order_mark_at_the_start_is_no_part_of_the_records() {
    let dir = scratch();
    let d = dir.path();
    let fastq: String = (0..200).map(|i| format!("@read{i} x\n{}\n+\n{}\n", &"ACGTTGCA"[..i % 8 + 1], "F".repeat(i % 8 + 1))).collect();
    let bom = b"\xEF\xBB\xBF";
    for (name, data, format) in [("s.fa", sample().to_vec(), "fasta"), ("r.fq", fastq.into_bytes(), "fastq")] {
        let (plain, marked) = (d.join(name), d.join(format!("bom-{name}")));
        std::fs::write(&plain, &data).unwrap();
        std::fs::write(&marked, [bom.as_slice(), &data].concat()).unwrap();
        let marked_gz = d.join(format!("bom-{name}.gz"));
        run(&mut pp(args!["compress", &marked, "-o", &marked_gz, "-q"])).ok();
        let report = |path: &std::path::Path, engine: &str| run(&mut pp(args!["scan", path, "--motif", "GT", "-c", "--json", "--engine", engine])).ok().json();
        let want = report(&plain, "cpu");
        assert!(want["matched"].as_u64().unwrap() > 10, "a weak case: {want}");
        for (path, engine) in [(&marked, "cpu"), (&marked_gz, "cpu"), (&marked, "emulated")] {
            let got = report(path, engine);
            let f = &got["files"][0];
            assert_eq!((f["format"].as_str(), f["engine"].as_str()), (Some(format), Some(engine)), "{}: {got}", path.display());
            assert_eq!((&got["records"], &got["matched"], &got["matched_bases"], f["bytes"].as_u64()), (&want["records"], &want["matched"], &want["matched_bases"], Some(data.len() as u64 + 3)), "{}: {got}", path.display());
        }
        // The records written are the file's without the mark.
        let (a, b) = (d.join("a.out"), d.join("b.out"));
        run(&mut pp(args!["scan", &plain, "--motif", "GT", "-o", &a, "-f"])).ok();
        run(&mut pp(args!["scan", &marked_gz, "--motif", "GT", "-o", &b, "-f"])).ok();
        assert_file_eq(&b, &std::fs::read(&a).unwrap(), "the records of the marked file");
        if let Some(tools) = tools_or_skip("scan of a marked file vs seqkit", &["seqkit"]) {
            let ids = |out: &[u8]| String::from_utf8_lossy(out).lines().filter(|l| l.starts_with(['>', '@'])).count() as u64;
            let n = ids(&sys(&tools[0], &[std::ffi::OsStr::new("grep"), std::ffi::OsStr::new("-s"), std::ffi::OsStr::new("-P"), std::ffi::OsStr::new("-p"), std::ffi::OsStr::new("GT"), marked.as_os_str()], None));
            assert_eq!(Some(n), want["matched"].as_u64(), "seqkit grep -s -P on the marked {name}");
        }
    }
    // A malformed read after the mark: named at its byte in the file.
    let bad = d.join("bad.fq");
    std::fs::write(&bad, [bom.as_slice(), b"@a\nACGT\n+\nFFFF\n@b\nAC\n+\nF\n"].concat()).unwrap();
    run(&mut pp(args!["scan", &bad, "--motif", "A", "-c"])).fails(6, &["the record at byte 18 is malformed: its quality line"]);
    run(&mut pp(args!["scan", &bad, "--motif", "A", "-c", "--engine", "emulated", "--no-fallback"])).fails(6, &["the record at byte 18 is malformed: its quality line", "confirmed on the host"]);
}

/// An empty file, and one of only a UTF-8 byte order mark: no records, and the same format on
/// an emulated CSP as on the CPU (none, unless given): the device told "lines" from no byte.
#[test]
fn an_empty_or_mark_only_file_is_reported_alike_on_the_cpu_and_a_device() {
    let dir = scratch();
    let d = dir.path();
    let (empty, mark) = (d.join("empty"), d.join("mark"));
    std::fs::write(&empty, b"").unwrap();
    std::fs::write(&mark, b"\xef\xbb\xbf").unwrap();
    for (path, len) in [(&empty, 0), (&mark, 3)] {
        for (given, format) in [(None, None), (Some("fastq"), Some("fastq"))] {
            let report = |engine: &str| {
                let mut a = args!["scan", path, "--motif", "A", "-c", "--json", "--engine", engine];
                a.extend(given.map(|g| args!["--format", g]).unwrap_or_default());
                run(&mut pp(a)).ok().json()
            };
            let (cpu, emulated) = (report("cpu"), report("emulated"));
            let (a, b) = (&cpu["files"][0], &emulated["files"][0]);
            assert_eq!((a["format"].as_str(), a["records"].as_u64(), a["bytes"].as_u64()), (format, Some(0), Some(len)), "{}: {cpu}", path.display());
            assert_eq!(b["engine"].as_str(), Some("emulated"), "counted on the device: {emulated}");
            for k in ["format", "records", "matched", "matched_bases", "bytes"] {
                assert_eq!(a[k], b[k], "{} ({given:?}): {k}: cpu {cpu}, emulated {emulated}", path.display());
            }
            for k in ["records", "matched", "matched_bases", "histogram", "bytes"] {
                assert_eq!(cpu[k], emulated[k], "{} ({given:?}): {k}", path.display());
            }
        }
    }
}

/// The summary counts in words: one record, one file, one thread, one base are
/// singular (report::count), not "record(s)".
#[test]
fn the_summary_says_one_record_and_many_records() {
    let dir = scratch();
    let fa = dir.path().join("one.fa");
    std::fs::write(&fa, b">r1\nA\n>r2\nCC\n").unwrap();
    let o = run(&mut pp(args!["scan", &fa, "--motif", "^A$", "-c", "-T", "1"])).ok();
    assert!(o.stderr.contains("scan: 1 of 2 records matched (1 base); "), "{}", o.stderr);
    assert!(o.stderr.contains("scan: 1 file on 1 filter thread of the host CPU"), "{}", o.stderr);
    let o = run(&mut pp(args!["scan", &fa, &fa, "--min-length", "1", "-c", "-T", "2"])).ok();
    assert!(o.stderr.contains("scan: 4 of 4 records matched (6 bases); "), "{}", o.stderr);
    assert!(o.stderr.contains("scan: 2 files on 2 filter threads of the host CPU"), "{}", o.stderr);
    assert!(!o.stderr.contains("(s)"), "{}", o.stderr);
}

/// A motif that is no regular expression is one line naming it and why (the regex
/// crate's own message is the pattern, a caret and the reason on three lines); an
/// id prefix with white space, which no id (the header's first word) can start with,
/// is refused rather than matching nothing, as `seqkit grep -r -p '^r1 desc'` does.
#[test]
fn a_bad_motif_or_an_id_prefix_with_a_space_is_a_one_line_usage_error() {
    let dir = scratch();
    let fa = dir.path().join("a.fa");
    std::fs::write(&fa, b">r1 desc\nACGT\n").unwrap();
    // Its kind and where it lies (regex_syntax's); one too large to compile says what to do.
    for (motif, why) in [
        ("(AC", "not a regular expression: unclosed group (at character 1)"),
        ("x{2,1}", "not a regular expression: invalid repetition count range, the start must be <= the end (at character 2)"),
        ("A[z-a]", "not a regular expression: invalid character class range, the start must be <= the end (at character 3)"),
        ("\\p{NoSuchClass}", "not a regular expression: Unicode property not found (at character 1)"),
        ("\\w{1000}", "too large to compile (more than the regex engine's 10485760 bytes): use fewer or smaller counted repetitions"),
    ] {
        let o = run(&mut pp(args!["scan", &fa, "--motif", motif, "-c"])).fails(2, &[&format!("--motif '{motif}': {why}")]);
        assert_eq!(o.stderr.trim_end().lines().count(), 1, "{}", o.stderr);
    }
    for prefix in ["r1 desc", "r1\t"] {
        let o = run(&mut pp(args!["scan", &fa, "--id-prefix", prefix, "-c"])).fails(2, &["--id-prefix", "first word", "no white space"]);
        assert!(o.stdout.is_empty(), "{}", o.describe());
    }
    assert_eq!(run(&mut pp(args!["scan", &fa, "--id-prefix", "r1", "-c", "-q"])).ok().stdout_str(), "1\n");
}

/// Several files: a missing one or a directory among them stops the scan before
/// any is read (exit 3, naming it), as seqkit does; not after the files before
/// it were scanned and their counts or records printed.
#[test]
fn a_missing_file_or_directory_among_several_stops_the_scan_before_any_is_read() {
    let dir = scratch();
    let fa = dir.path().join("a.fa");
    std::fs::write(&fa, b">r1\nACGT\n").unwrap();
    let missing = dir.path().join("missing.fa");
    for (bad, why) in [(missing.as_path(), "No such file"), (dir.path(), "is a directory")] {
        for extra in [&["-c"][..], &[][..]] {
            let mut a = args!["scan", &fa, bad, &fa, "--motif", "ACGT"];
            a.extend(extra.iter().map(std::ffi::OsString::from));
            let o = run(&mut pp(a)).fails(3, &[&bad.display().to_string(), why]);
            assert!(o.stdout.is_empty(), "nothing printed: {}", o.describe());
        }
    }
    // A FIFO among them is not opened to check it (its writer would see no reader): read once.
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, b">r2\nACGTACGT\n>r3\nT\n").unwrap())
    };
    let o = run(&mut pp(args!["scan", &fa, &fifo, "--motif", "ACGT", "-c", "-q"])).ok();
    writer.join().unwrap();
    assert_eq!(o.stdout_str(), format!("{}\t1\n{}\t1\n", fa.display(), fifo.display()));
}

/// Standard input named twice: the second `-` read an empty stream and counted 0 records of
/// it, silently; it is refused as a source named twice is elsewhere.
#[test]
fn standard_input_named_twice_is_refused() {
    let o = run_full(&mut pp(args!["scan", "-", "-", "--min-length", "1", "-c"]), Some(b">a\nACGT\n".to_vec()), DEADLINE).fails(2, &["named twice", "standard input"]);
    assert!(o.stdout.is_empty(), "{}", o.describe());
    // Once is read as before.
    let o = run_full(&mut pp(args!["scan", "-", "--min-length", "1", "-c", "-q"]), Some(b">a\nACGT\n".to_vec()), DEADLINE).ok();
    assert_eq!(o.stdout_str().trim(), "1");
}
