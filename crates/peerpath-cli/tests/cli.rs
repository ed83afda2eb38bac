//! The command as a user drives it: several sources into a directory, the
//! JSON report and its byte ledger, standard input and output, the demo.

mod common;

use common::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn several_sources_into_a_directory_give_one_gz_each() {
    let dir = scratch();
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("a.fa", sample().to_vec()),
        ("b.bin", mixed_data(1_000_003, 2)),
        ("c.empty", Vec::new()),
        ("d.one", b"x".to_vec()),
    ];
    let mut srcs = Vec::new();
    for (name, data) in &inputs {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        srcs.push(p);
    }
    // The directory does not exist yet ("dir/"): it is created.
    let out = dir.path().join("packed");
    let mut a = args!["compress"];
    a.extend(srcs.iter().map(|p| p.as_os_str().to_owned()));
    a.extend(args!["-o", format!("{}/", out.display()), "--json", "--block-size", "256K"]);
    let report = run(&mut pp(a)).ok().json();
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), inputs.len());
    assert_dir_holds(&out, &["a.fa.gz", "b.bin.gz", "c.empty.gz", "d.one.gz"]);
    let gzip = tool("gzip");
    for ((name, data), f) in inputs.iter().zip(files) {
        let gz = out.join(format!("{name}.gz"));
        assert!(f["target"].as_str().unwrap().ends_with(&format!("{name}.gz")), "report target {}", f["target"]);
        assert_eq!(f["bytes_in"].as_u64(), Some(data.len() as u64), "{name}: bytes_in");
        assert_eq!(f["bytes_out"].as_u64(), Some(std::fs::metadata(&gz).unwrap().len()), "{name}: bytes_out");
        if let Some(g) = &gzip {
            assert_bytes_eq(&sys(g, &[OsStr::new("-dc"), gz.as_os_str()], None), data, &format!("gzip -d {name}.gz"));
        }
    }
    let total: u64 = inputs.iter().map(|(_, d)| d.len() as u64).sum();
    assert_eq!(report["bytes_in"].as_u64(), Some(total));

    // And back: several .gz into another directory, in one job.
    let back = dir.path().join("restored");
    std::fs::create_dir(&back).unwrap();
    let mut d = args!["decompress"];
    d.extend(inputs.iter().map(|(n, _)| out.join(format!("{n}.gz")).into_os_string()));
    d.extend(args!["-o", &back, "-q"]);
    run(&mut pp(d)).ok();
    for (name, data) in &inputs {
        assert_file_eq(&back.join(name), data, &format!("restored {name}"));
    }
    // One source into an existing directory lands inside it.
    run(&mut pp(args!["compress", &srcs[3], "-o", &back, "-q"])).ok();
    assert!(back.join("d.one.gz").is_file());
    for (p, (_, data)) in srcs.iter().zip(&inputs) {
        assert_file_eq(p, data, "a source after compressing");
    }
}

fn entries<'a>(report: &'a Value, purpose: &str) -> Vec<&'a Value> {
    report["ledger"]["entries"].as_array().expect("ledger entries").iter().filter(|e| e["purpose"] == purpose).collect()
}

fn is_host_memory(loc: &Value) -> bool {
    loc["kind"] == "memory" && loc["domain"]["kind"] == "host"
}

/// What every report must say, whatever the job.
/// Where the CPU pass's time went: the workers' busy and idle time, the
/// orchestrator's waits by cause (summing to its total, within its span), and
/// occupancies no larger than what can be in flight.
fn check_pipeline(r: &Value, what: &str) {
    let p = &r["pipeline"];
    let threads = r["threads"].as_u64().unwrap();
    assert_eq!(p["worker_threads"].as_u64(), Some(threads), "{what}: {p}");
    let f = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{what}: pipeline.{k} missing: {p}"));
    let (busy, idle) = (f("worker_busy_s"), f("worker_idle_s"));
    assert!(busy > 0.0 && idle >= 0.0, "{what}: {p}");
    assert!((f("worker_busy_share") - busy / (busy + idle)).abs() < 1e-9, "{what}: {p}");
    let waits: f64 = p["waits"].as_array().unwrap().iter().map(|w| w["seconds"].as_f64().unwrap()).sum();
    assert!((waits - f("orchestrator_wait_s")).abs() < 1e-9, "{what}: {p}");
    assert!(f("orchestrator_wait_s") <= f("orchestrator_span_s") + 1e-6 && f("orchestrator_span_s") <= r["wall_s"].as_f64().unwrap() + 1e-6, "{what}: {p}");
    // Workers cannot be busy longer than they existed.
    assert!(busy <= threads as f64 * f("orchestrator_span_s") * 1.05 + 0.05, "{what}: {p}");
    for k in ["mean_tasks_in_flight", "mean_reads_in_flight", "mean_writes_in_flight"] {
        assert!(f(k) >= 0.0, "{what}: {k}");
    }
}

fn check_common(r: &Value, what: &str) {
    assert_eq!(r["provenance"], "measured_host", "{what}");
    for key in ["bytes_in", "bytes_out", "wall_s", "ratio", "throughput_gb_per_s", "throughput_gbit_per_s"] {
        assert!(r[key].is_number(), "{what}: {key} missing: {r}");
    }
    let roles: Vec<&str> = r["cpu"]["roles"].as_array().unwrap().iter().map(|x| x["role"].as_str().unwrap()).collect();
    assert!(roles.contains(&"orchestration") && roles.contains(&"compute"), "{what}: CPU roles {roles:?}");
    for role in r["cpu"]["roles"].as_array().unwrap() {
        assert!(role["user_s"].as_f64().unwrap() >= 0.0 && role["system_s"].as_f64().unwrap() >= 0.0);
    }
    assert!(r["cpu"]["cores"].as_u64().unwrap() >= 1);
    for f in r["files"].as_array().unwrap() {
        assert!(f["read_path"]["engine"].is_string() && f["read_path"]["direct"].is_boolean(), "{what}: read_path {}", f["read_path"]);
    }
    assert!(r["fallbacks"].is_array());
    assert!(r["memory"]["read_pool_bytes"].as_u64().unwrap() > 0);
    check_pipeline(r, what);
    // The ledger's totals are its entries, summed.
    let l = &r["ledger"];
    let (mut traffic, mut dma, mut cpu) = (0u64, 0u64, 0u64);
    for e in l["entries"].as_array().unwrap() {
        let mut n = 0;
        if is_host_memory(&e["source"]) {
            n += e["bytes_read"].as_u64().unwrap();
        }
        if is_host_memory(&e["target"]) {
            n += e["bytes_written"].as_u64().unwrap();
        }
        traffic += n;
        if e["mover"]["kind"] == "dma" {
            dma += n;
        } else {
            cpu += n;
        }
    }
    assert!(traffic > 0, "{what}: no host memory traffic");
    assert_eq!(l["host_memory_traffic_bytes"].as_u64(), Some(traffic), "{what}: traffic is the sum of the entries");
    assert_eq!(l["host_memory_dma_bytes"].as_u64(), Some(dma), "{what}: DMA share");
    assert_eq!(l["host_memory_cpu_bytes"].as_u64(), Some(cpu), "{what}: CPU share");
}

/// Reads of the source: one DMA with O_DIRECT; through the page cache, a
/// DMA into the cache and a CPU copy out of it. Each moves `bytes`.
fn check_reads(r: &Value, source: &str, bytes: u64, direct: bool, what: &str) {
    let reads = entries(r, "read_source");
    let dma: Vec<_> = reads.iter().filter(|e| e["mover"]["kind"] == "dma").collect();
    let cpu: Vec<_> = reads.iter().filter(|e| e["mover"]["kind"] == "cpu").collect();
    assert_eq!(dma.len(), 1, "{what}: one DMA read entry: {reads:?}");
    assert_eq!(dma[0]["source"]["name"], source, "{what}");
    assert_eq!(dma[0]["bytes_read"].as_u64(), Some(bytes), "{what}: DMA read bytes");
    assert_eq!(dma[0]["bytes_written"].as_u64(), Some(bytes), "{what}: DMA read bytes");
    if direct {
        assert!(cpu.is_empty(), "{what}: O_DIRECT reads involve no CPU copy: {cpu:?}");
    } else {
        assert_eq!(cpu.len(), 1, "{what}: page-cache reads have a CPU copy: {reads:?}");
        assert_eq!(cpu[0]["bytes_read"].as_u64(), Some(bytes), "{what}: page cache copy");
    }
}

/// A file target is synced (data before the rename) unless `--no-sync` said not to.
fn check_durability(file: &Value, synced: bool, what: &str) {
    let d = &file["durability"];
    assert_eq!(d["synced"].as_bool(), Some(synced), "{what}: {d}");
    if !synced {
        assert_eq!(d["background_syncs"].as_u64(), Some(0), "{what}: {d}");
        assert_eq!(d["final_sync_s"].as_f64(), Some(0.0), "{what}: {d}");
    }
}

#[test]
fn json_report_parses_and_its_ledger_is_consistent_for_compress() {
    let dir = scratch();
    let src = dir.path().join("protein.fasta");
    std::fs::write(&src, sample()).unwrap();
    for (i, extra) in [vec![], vec!["--no-direct"], vec!["--io", "sync"], vec!["--no-sync"]].into_iter().enumerate() {
        let what = format!("compress {extra:?}");
        let gz = dir.path().join(format!("p{i}.gz"));
        let mut a = args!["compress", &src, "-o", &gz, "--json", "-T", "2"];
        a.extend(extra.iter().map(std::ffi::OsString::from));
        let r = run(&mut pp(a)).ok().json();
        check_common(&r, &what);
        let (bytes_in, bytes_out) = (r["bytes_in"].as_u64().unwrap(), r["bytes_out"].as_u64().unwrap());
        assert_eq!(bytes_in, sample().len() as u64, "{what}");
        assert_eq!(bytes_out, std::fs::metadata(&gz).unwrap().len(), "{what}");
        let ratio = r["ratio"].as_f64().unwrap();
        assert!((ratio - bytes_in as f64 / bytes_out as f64).abs() < 1e-9, "{what}: ratio {ratio}");
        assert_eq!(r["operation"], "compress");
        let roles = r["cpu"]["roles"].as_array().unwrap();
        let compute = roles.iter().find(|x| x["role"] == "compute").unwrap();
        assert_eq!(compute["threads"].as_u64(), Some(2), "{what}: -T 2 compute workers");
        let f = &r["files"][0];
        check_durability(f, !extra.contains(&"--no-sync"), &what);
        let read_direct = f["read_path"]["direct"].as_bool().unwrap();
        let write_direct = f["write_path"]["direct"].as_bool().unwrap();
        if extra.is_empty() && !read_direct {
            eprintln!("note: {what}: this file system refused O_DIRECT ({}); checked the page-cache ledger instead", f["read_path"]["fallback_reason"]);
        }
        check_reads(&r, src.to_str().unwrap(), bytes_in, read_direct, &what);
        // The compression itself read the input and wrote the output.
        let func = entries(&r, "function");
        assert_eq!(func.len(), 1, "{what}: {func:?}");
        assert_eq!(func[0]["mover"]["role"], "compute");
        assert_eq!(func[0]["bytes_read"].as_u64(), Some(bytes_in), "{what}: function bytes_read");
        // All but the end member (34 bytes the orchestrator adds after the last member).
        assert_eq!(func[0]["bytes_written"].as_u64(), Some(bytes_out - 34), "{what}: function bytes_written");
        // Packing into aligned extents copies the output once, for O_DIRECT
        // only; buffered writes go out as they are.
        let pack = entries(&r, "pack_for_direct_io");
        let packed: u64 = pack.iter().map(|e| e["bytes_read"].as_u64().unwrap()).sum();
        assert_eq!(packed, if write_direct { bytes_out - 34 } else { 0 }, "{what}: packing");
        // The target's DMA: the output, its last buffer padded to 4 KiB with
        // O_DIRECT; through the page cache, a CPU copy into it, then the DMA.
        let writes = entries(&r, "write_target");
        let dma: Vec<_> = writes.iter().filter(|e| e["mover"]["kind"] == "dma").collect();
        let cpu: Vec<_> = writes.iter().filter(|e| e["mover"]["kind"] == "cpu").collect();
        assert_eq!(dma.len(), 1, "{what}: {writes:?}");
        assert_eq!(dma[0]["target"]["name"], gz.to_str().unwrap());
        let expected_write = if write_direct { bytes_out.div_ceil(4096) * 4096 } else { bytes_out };
        assert_eq!(dma[0]["bytes_written"].as_u64(), Some(expected_write), "{what}: write DMA");
        if write_direct {
            assert!(cpu.is_empty(), "{what}: O_DIRECT writes involve no CPU copy: {cpu:?}");
        } else {
            assert_eq!(cpu.len(), 1, "{what}: page-cache writes have a CPU copy: {writes:?}");
            assert_eq!(cpu[0]["bytes_written"].as_u64(), Some(bytes_out), "{what}: page cache copy");
        }
        let per_byte = r["host_memory_traffic_per_input_byte"].as_f64().unwrap();
        let traffic = r["ledger"]["host_memory_traffic_bytes"].as_u64().unwrap();
        assert!((per_byte - traffic as f64 / bytes_in as f64).abs() < 1e-9, "{what}: traffic per byte");
    }
}

#[test]
fn json_report_ledger_is_consistent_for_decompress_and_verify() {
    let dir = scratch();
    let src = dir.path().join("protein.fasta");
    std::fs::write(&src, sample()).unwrap();
    let gz = dir.path().join("protein.fasta.gz");
    run(&mut pp(args!["compress", &src, "-q", "--block-size", "256K"])).ok();
    let gz_len = std::fs::metadata(&gz).unwrap().len();
    for (i, extra) in [vec![], vec!["--no-direct"], vec!["--io", "sync"], vec!["--no-sync"]].into_iter().enumerate() {
        let what = format!("decompress {extra:?}");
        let back = dir.path().join(format!("back{i}"));
        let mut a = args!["decompress", &gz, "-o", &back, "--json", "-T", "2"];
        a.extend(extra.iter().map(std::ffi::OsString::from));
        let r = run(&mut pp(a)).ok().json();
        check_common(&r, &what);
        assert_eq!(r["bytes_in"].as_u64(), Some(gz_len), "{what}");
        assert_eq!(r["bytes_out"].as_u64(), Some(sample().len() as u64), "{what}");
        let f = &r["files"][0];
        check_durability(f, !extra.contains(&"--no-sync"), &what);
        check_reads(&r, gz.to_str().unwrap(), gz_len, f["read_path"]["direct"].as_bool().unwrap(), &what);
        let func = entries(&r, "function");
        assert_eq!(func.iter().map(|e| e["bytes_read"].as_u64().unwrap()).sum::<u64>(), gz_len, "{what}: function input");
        assert_eq!(func.iter().map(|e| e["bytes_written"].as_u64().unwrap()).sum::<u64>(), sample().len() as u64, "{what}: function output");
        assert!(f["decode_mode"].as_str().unwrap().starts_with("parallel"), "{what}: {}", f["decode_mode"]);
        assert_file_eq(&back, sample(), &what);

        let mut v = args!["verify", &gz, "--json"];
        v.extend(extra.iter().filter(|x| **x != "--no-sync").map(std::ffi::OsString::from));
        let r = run(&mut pp(v)).ok().json();
        check_common(&r, &format!("verify {extra:?}"));
        assert_eq!(r["operation"], "verify");
        assert!(entries(&r, "write_target").is_empty(), "verify writes nothing");
        assert_eq!(r["files"][0]["target"], Value::Null);
    }
    // A file without size fields (gzip's), decoded streaming on the orchestrating thread: the
    // function takes all of the file (it was booked as taking nothing) and is that thread's.
    let Some(gzip) = tool("gzip") else {
        eprintln!("SKIPPED (streaming part): gzip is not installed");
        return;
    };
    let plain = dir.path().join("plain.gz");
    let made = Command::new(gzip).arg("-c").arg(&src).output().unwrap();
    std::fs::write(&plain, &made.stdout).unwrap();
    for op in ["verify", "decompress"] {
        let mut a = args![op, &plain, "--json", "-T", "2"];
        if op == "decompress" {
            a.extend(args!["-o", dir.path().join("plain.back")]);
        }
        let r = run(&mut pp(a)).ok().json();
        assert!(r["files"][0]["decode_mode"].as_str().unwrap().starts_with("streaming"), "{op}: {}", r["files"][0]["decode_mode"]);
        let func = entries(&r, "function");
        assert_eq!(func.iter().map(|e| e["bytes_read"].as_u64().unwrap()).sum::<u64>(), made.stdout.len() as u64, "{op}: function input");
        assert_eq!(func.iter().map(|e| e["bytes_written"].as_u64().unwrap()).sum::<u64>(), sample().len() as u64, "{op}: function output");
        assert!(func.iter().all(|e| e["mover"]["role"] == "orchestration"), "{op}: {func:?}");
    }
}

/// `--verify` reads each output back; standard output cannot be: "-" would be read as standard
/// input (it checked whatever came in there: false passes, false failures, or a wait on a terminal).
#[test]
fn verify_with_standard_output_is_a_usage_error_before_anything_is_written() {
    let dir = scratch();
    let src = dir.path().join("in.fa");
    std::fs::write(&src, sample()).unwrap();
    let good = compress_bytes(dir.path(), "good.fa", sample(), &[]);
    let o = run_full(&mut pp(args!["compress", &src, "-o", "-", "--verify"]), Some(good), DEADLINE).fails(2, &["--verify", "standard output"]);
    assert!(o.stdout.is_empty(), "nothing written: {} bytes", o.stdout.len());
    assert_dir_holds(dir.path(), &["good.fa", "good.fa.gz", "in.fa"]);
}

/// `cat FILE | peerpath compress - -o - | gzip -d`, with the processes
/// joined by real pipes.
#[test]
fn stdin_to_stdout_round_trips_through_gzip_and_reports_the_pipe_fallback() {
    let data = mixed_data(5_000_000, 21);
    let mut c = Command::new(bin());
    c.args(["compress", "-", "-o", "-", "--verbose", "-T", "2"]);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut packer = c.spawn().expect("start peerpath");
    let gzip = tool("gzip");
    let mut unpack = match &gzip {
        Some(g) => {
            let mut d = Command::new(g);
            d.arg("-d");
            d
        }
        None => {
            eprintln!("note: gzip not installed; restoring with `peerpath decompress - -o -` instead");
            let mut d = Command::new(bin());
            d.args(["decompress", "-", "-o", "-", "-q"]);
            d
        }
    };
    let mut unpacker = unpack
    .stdin(packer.stdout.take().unwrap())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start the decompressor");
    let mut w = packer.stdin.take().unwrap();
    let feed = data.clone();
    let writer = std::thread::spawn(move || {
        w.write_all(&feed).expect("feed peerpath's stdin");
    });
    let err = {
        let mut e = packer.stderr.take().unwrap();
        std::thread::spawn(move || {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut e, &mut s).unwrap();
            s
        })
    };
    let restored = {
        let mut o = unpacker.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut o, &mut v).unwrap();
            v
        })
    };
    let st1 = wait_deadline(&mut packer, DEADLINE, "peerpath compress - -o -");
    let st2 = wait_deadline(&mut unpacker, DEADLINE, "gzip -d");
    writer.join().unwrap();
    let stderr = err.join().unwrap();
    assert!(st1.success(), "peerpath failed: {stderr}");
    assert!(st2.success(), "the decompressor failed");
    assert_bytes_eq(&restored.join().unwrap(), &data, "cat | peerpath compress - -o - | gzip -d");
    // The report goes to stderr (stdout holds the data) and names the fallback.
    assert!(stderr.contains("fallback: I/O engine: pipes need ordered reads and writes"), "{stderr}");
    assert!(stderr.contains("-: read via") && stderr.contains("standard input"), "{stderr}");
    assert!(stderr.contains("peerpath compress") && stderr.contains("FALLBACK"), "the report should be on stderr: {stderr}");

    // And decompress from a pipe to a pipe: streaming, and --verbose says so.
    let dir = scratch();
    let packed = compress_bytes(dir.path(), "d", &data, &["--block-size", "64K"]);
    let out = run_full(&mut pp(args!["decompress", "-", "-o", "-", "--verbose"]), Some(packed.clone()), DEADLINE).ok();
    assert_bytes_eq(&out.stdout, &data, "peerpath decompress - -o -");
    assert!(out.stderr.contains("streaming: the source is a pipe"), "{}", out.stderr);
    // Its report counts the compressed bytes it read (standard input has no size to take them from).
    let out = run_full(&mut pp(args!["decompress", "-", "-o", "-", "--json"]), Some(packed.clone()), DEADLINE).ok();
    let r: Value = serde_json::from_str(&out.stderr).expect("JSON report on stderr");
    assert_eq!((r["bytes_in"].as_u64(), r["files"][0]["bytes_in"].as_u64()), (Some(packed.len() as u64), Some(packed.len() as u64)), "{r}");
    // A file to stdout, stdin to a file.
    let out = run(&mut pp(args!["decompress", dir.path().join("d.gz"), "-o", "-", "-q"])).ok();
    assert_bytes_eq(&out.stdout, &data, "file to stdout");
    let t = dir.path().join("from-stdin.gz");
    run_full(&mut pp(args!["compress", "-", "-o", &t, "-q"]), Some(data.clone()), DEADLINE).ok();
    let back = dir.path().join("from-stdin");
    run(&mut pp(args!["decompress", &t, "-q"])).ok();
    assert_file_eq(&back, &data, "stdin to a file");
}

/// Pipes are not storage: reading standard input from a pipe and writing
/// standard output to one is the kernel's CPU copy between its buffers and
/// ours, with no storage DMA in the ledger; a regular file behind standard
/// output does reach storage.
#[test]
fn the_ledger_of_pipe_to_pipe_jobs_has_no_storage_transfers() {
    let data = sample().to_vec();
    let storage = |r: &Value| -> Vec<Value> {
        r["ledger"]["entries"].as_array().unwrap().iter().filter(|e| e["source"]["kind"] == "storage" || e["target"]["kind"] == "storage").cloned().collect()
    };
    // compress - -o - with both ends pipes: the JSON report goes to stderr.
    let out = run_full(&mut pp(args!["compress", "-", "-o", "-", "--json", "-T", "2"]), Some(data.clone()), DEADLINE).ok();
    let r: Value = serde_json::from_str(&out.stderr).expect("JSON report on stderr");
    assert!(storage(&r).is_empty(), "pipes only, yet storage in the ledger: {:?}", storage(&r));
    for purpose in ["read_source", "write_target"] {
        let e = entries(&r, purpose);
        assert_eq!(e.len(), 1, "{purpose}: {e:?}");
        assert_eq!(e[0]["mover"]["kind"], "cpu", "{purpose}: {e:?}");
        assert!(is_host_memory(&e[0]["source"]) && is_host_memory(&e[0]["target"]), "{purpose}: {e:?}");
    }
    assert_eq!(entries(&r, "read_source")[0]["bytes_read"].as_u64(), Some(data.len() as u64));
    assert_eq!(entries(&r, "write_target")[0]["bytes_written"].as_u64(), Some(out.stdout.len() as u64));
    // The same output to a regular file through standard output: storage, by DMA.
    let dir = scratch();
    let gz = dir.path().join("redirected.gz");
    let mut c = pp(args!["compress", "-", "-o", "-", "--json", "-T", "2"]);
    c.stdin(Stdio::piped()).stdout(std::fs::File::create(&gz).unwrap()).stderr(Stdio::piped());
    let mut child = c.spawn().expect("start peerpath");
    let mut w = child.stdin.take().unwrap();
    let feed = std::thread::spawn(move || w.write_all(&data).expect("feed stdin"));
    let out = child.wait_with_output().expect("peerpath runs");
    feed.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stderr).expect("JSON report on stderr");
    let to_storage: Vec<Value> = storage(&r).into_iter().filter(|e| e["target"]["kind"] == "storage").collect();
    assert_eq!(to_storage.len(), 1, "{to_storage:?}");
    assert_eq!(to_storage[0]["mover"]["kind"], "dma");
    assert_eq!(to_storage[0]["bytes_written"].as_u64(), Some(std::fs::metadata(&gz).unwrap().len()));
}

#[test]
fn demo_with_two_threads_round_trips_the_bundled_sample() {
    let out = run(&mut pp(["demo", "--threads", "2"])).ok();
    let s = out.stdout_str();
    assert!(s.contains("round trip OK"), "demo output:\n{s}");
    assert!(s.contains(&format!("{} bytes restored", sample().len())), "demo output:\n{s}");
    assert!(s.contains("offload OK: the device's output is byte-identical to the CPU's"), "demo output:\n{s}");
    assert!(s.contains("payload through host memory: 0 bytes"), "demo output:\n{s}");
    for title in ["== compress (host CPU", "== compress (emulated CSP device", "== verify ==", "== decompress =="] {
        assert!(s.contains(title), "demo output lacks {title}:\n{s}");
    }
    // --workdir keeps the files, and --json prints four parseable reports.
    let dir = scratch();
    let wd = dir.path().join("demo");
    let out = run(&mut pp(args!["demo", "--threads", "2", "--workdir", &wd, "--json"])).ok();
    // JSON Lines: each line one report (they were pretty-printed back to back: no document).
    let reports: Vec<Value> = out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).expect("a JSON report a line")).collect();
    assert_eq!(reports.iter().map(|r| r["operation"].as_str().unwrap()).collect::<Vec<_>>(), ["compress", "compress", "verify", "decompress"]);
    assert_eq!(reports[1]["provenance"], "measured_emulated", "fallbacks {}", reports[1]["fallbacks"]);
    assert_eq!(reports[1]["ledger"]["host_memory_payload_bytes"], 0, "fallbacks {}, devices {}", reports[1]["fallbacks"], reports[1]["devices"]);
    assert_file_eq(&wd.join("protein.restored.fasta"), sample(), "demo workdir");
    assert!(wd.join("protein.fasta.gz").is_file());
    assert_file_eq(&wd.join("protein.fasta.offload.gz"), &std::fs::read(wd.join("protein.fasta.gz")).unwrap(), "offload output");
    // A work directory's files are replaced only with --force.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("protein.fasta"), b"MINE").unwrap();
    run(&mut pp(args!["demo", "--threads", "2", "--workdir", &mine])).fails(4, &["protein.fasta", "--force"]);
    assert_eq!(std::fs::read(mine.join("protein.fasta")).unwrap(), b"MINE");
    assert_dir_holds(&mine, &["protein.fasta"]);
    // A file named as the work directory: said so, and the file is untouched.
    let file = mine.join("protein.fasta");
    run(&mut pp(args!["demo", "--threads", "2", "--workdir", &file, "-f"])).fails(11, &["names a file, not a directory"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"MINE");
    run(&mut pp(args!["demo", "--threads", "2", "--workdir", &wd, "-f"])).ok();
    assert_file_eq(&wd.join("protein.restored.fasta"), sample(), "demo workdir, again");
}

/// A demo that cannot finish (its directory fills up) keeps nothing: not
/// the files it made, nor the directory.
#[test]
fn a_demo_that_fails_leaves_nothing_behind() {
    let Some(fs) = TmpfsMount::new("a_demo_that_fails_leaves_nothing_behind", "7m") else { return };
    let wd = fs.dir.join("wd");
    run(&mut pp(args!["demo", "--threads", "2", "--workdir", &wd])).fails(11, &["No space left"]);
    assert!(!wd.exists(), "the work directory it made is gone: {:?}", names_in(&wd));
    assert_dir_holds(&fs.dir, &[]);
}

/// `peerpath gpu probe` says plainly why a GPU cannot be used here (no
/// driver, no nvCOMP: exit 15), and never panics; where a GPU and nvCOMP
/// are present it compresses a sample and checks every member on the CPU.
#[test]
fn the_gpu_probe_says_why_it_cannot_run_or_checks_every_member() {
    let o = run(&mut pp(["gpu", "probe", "--bytes", "4M", "--algorithm", "1", "--repeat", "1"]));
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    match o.code() {
        Some(0) => {
            eprintln!("a GPU and nvCOMP are present: the probe ran");
            let stdout = String::from_utf8_lossy(&o.stdout);
            assert!(stdout.contains("4 members checked on the CPU"), "{stdout}");
        }
        Some(15) => {
            eprintln!("SKIPPED (no GPU here): {}", o.stderr.trim());
            assert!(o.stderr.contains("GPU unavailable: "), "{}", o.stderr);
        }
        other => panic!("exit {other:?}: {}", o.stderr),
    }
    let o = run(&mut pp(["gpu", "probe", "--nvcomp", "/no/such/libnvcomp.so.6", "--bytes", "1M"]));
    assert_eq!(o.code(), Some(15), "{}", o.stderr);
    // A sample larger than the machine could hold is refused before anything is made (it aborted).
    run(&mut pp(["gpu", "probe", "--bytes", "1000000G"])).fails(2, &["--bytes", "machine's memory"]);
    assert!(o.stderr.contains("GPU unavailable: "), "{}", o.stderr);
}

/// `--engine auto` where no device can be driven (peerpath has no driver for real CSPs): the
/// host CPU compresses, and the report's fallbacks say so (it was a stderr line only, and the
/// report said "fallbacks none"); -q still says it; --no-fallback makes it exit 15.
#[test]
fn engine_auto_on_the_host_cpu_is_a_fallback_in_the_report() {
    let dir = scratch();
    let src = dir.path().join("s.fa");
    std::fs::write(&src, b"ACDEFGHIKLMNPQRSTVWY\n".repeat(5_000)).unwrap();
    let out = dir.path().join("s.fa.gz");
    let j = run(&mut pp(args!["compress", &src, "-o", &out, "--engine", "auto", "--json"])).ok().json();
    let fallbacks = j["fallbacks"].to_string();
    assert!(fallbacks.contains("--engine auto: ") && fallbacks.contains("every source ran on the host CPU"), "{fallbacks}");
    let o = run(&mut pp(args!["compress", &src, "-f", "-o", &out, "--engine", "auto", "-q"])).ok();
    assert!(o.stderr.contains("FALLBACK: --engine auto: "), "{}", o.stderr);
    assert_eq!(o.stderr.lines().count(), 1, "said once: {}", o.stderr);
    run(&mut pp(args!["compress", &src, "-f", "-o", dir.path().join("strict.gz"), "--engine", "auto", "--no-fallback"])).fails(15, &["--engine auto", "--no-fallback"]);
    assert!(!dir.path().join("strict.gz").exists());
}

/// `--engine gpu` keeps 128 chunks in flight to fill a GPU, but where the GPU does not start
/// the host CPU runs the job at its own usual queue depth (it kept the GPU's 128, and the
/// report said so); a depth given with `--queue-depth` is the job's either way.
#[test]
fn a_gpu_that_does_not_start_leaves_the_cpu_its_own_queue_depth() {
    let dir = scratch();
    let src = dir.path().join("s.fa");
    std::fs::write(&src, &sample()[..1 << 20]).unwrap();
    let out = dir.path().join("s.fa.gz");
    let depth = |extra: &[&str]| {
        let mut a = args!["compress", &src, "-f", "-o", &out, "-T", "2", "--json"];
        a.extend(extra.iter().map(std::ffi::OsString::from));
        let j = run(&mut pp(a)).ok().json();
        (j["queue_depth"].as_u64().unwrap(), j["fallbacks"].to_string().contains("GPU 0 did not start"))
    };
    let (cpu, _) = depth(&["--engine", "cpu"]);
    let (gpu, fell_back) = depth(&["--engine", "gpu"]);
    if fell_back {
        assert_eq!(gpu, cpu, "the host CPU ran the job: its own queue depth");
    } else {
        assert_eq!(gpu, cpu.max(128), "the GPU ran the job: its queue depth");
    }
    assert_eq!(depth(&["--engine", "gpu", "--queue-depth", "24"]).0, 24, "the depth given");
    assert_eq!(depth(&["--engine", "cpu", "--queue-depth", "24"]).0, 24, "the depth given");
}

/// `compress` and `decompress --engine gpu` where no GPU can be used: the
/// CPU does the work, and the fallbacks say why; with --no-fallback, exit 15
/// and nothing kept.
#[test]
fn compress_and_decompress_on_a_gpu_that_is_not_there_fall_back_with_the_reason_or_fail_when_told() {
    let dir = scratch();
    let src = dir.path().join("s.fa");
    std::fs::write(&src, b"ACDEFGHIKLMNPQRSTVWY\n".repeat(50_000)).unwrap();
    let probe = run(&mut pp(["gpu", "probe", "--bytes", "1M", "--algorithm", "2", "--repeat", "1"]));
    if probe.code() == Some(0) {
        eprintln!("SKIPPED: a GPU is present here; this test is about machines without one");
        return;
    }
    let out = dir.path().join("s.fa.gz");
    let o = run(&mut pp(args!["compress", &src, "-o", &out, "--engine", "gpu", "--json"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    let j = o.json();
    let fallbacks = j["fallbacks"].to_string();
    assert!(fallbacks.contains("GPU 0 did not start"), "{fallbacks}");
    assert_eq!(j["provenance"], "measured_host");
    let back = run(&mut pp(args!["decompress", &out, "-o", "-"]));
    assert_eq!(back.stdout, std::fs::read(&src).unwrap());
    std::fs::remove_file(&out).unwrap();
    let o = run(&mut pp(args!["compress", &src, "-o", &out, "--engine", "gpu", "--no-fallback"]));
    assert_eq!(o.code(), Some(15), "{}", o.stderr);
    assert!(o.stderr.contains("GPU unavailable"), "{}", o.stderr);
    assert!(!out.exists(), "nothing kept");
    // The device's own staging and several streams: the same fallback, the same bytes.
    let o = run(&mut pp(args!["compress", &src, "-o", &out, "--engine", "gpu", "--gpu-staging", "device", "--gpu-streams", "2", "--json"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    assert!(o.json()["fallbacks"].to_string().contains("GPU 0 did not start"), "{}", o.stderr);
    assert_eq!(run(&mut pp(args!["decompress", &out, "-o", "-"])).stdout, std::fs::read(&src).unwrap());
    // Its own storage reads asked for (cuFile): the same.
    let o = run(&mut pp(args!["compress", &src, "-f", "-o", &out, "--engine", "gpu", "--gpu-io", "cufile", "--json"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    assert!(o.json()["fallbacks"].to_string().contains("GPU 0 did not start"), "{}", o.stderr);
    // Memory files mapped for its copy engine asked for: the same.
    let o = run(&mut pp(args!["compress", &src, "-f", "-o", &out, "--engine", "gpu", "--gpu-memory-files", "mapped", "--json"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    assert!(o.json()["fallbacks"].to_string().contains("GPU 0 did not start"), "{}", o.stderr);
    for bad in [["--gpu-io", "nvme"], ["--gpu-staging", "nowhere"], ["--gpu-streams", "0"], ["--gpu-batch-wait", "-1"], ["--gpu-chunk", "1Q"], ["--gpu-algorithm", "6"], ["--inject-faults", "seed=1,error=0.5"], ["--gpu-memory-files", "pinned"], ["--gpu-map-granule", "1000"], ["--gpu-map-granule", "4K"]] {
        let o = run(&mut pp(args!["compress", &src, "-f", "-o", &out, "--engine", "gpu", bad[0], bad[1]]));
        assert_eq!(o.code(), Some(2), "{bad:?}: {}", o.stderr);
    }
    run(&mut pp(args!["compress", &src, "-f", "-o", &out, "--engine", "gpu", "--gpu-memory-files", "mapped", "--gpu-staging", "device"])).fails(2, &["--gpu-memory-files mapped", "--gpu-staging commands"]);
    // Decompression and verification on a GPU that is not there: the CPU
    // decodes, said so; with --no-fallback, exit 15 and nothing kept.
    let back = dir.path().join("back.fa");
    let o = run(&mut pp(args!["decompress", &out, "-o", &back, "--engine", "gpu", "--json"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    let j = o.json();
    assert!(j["fallbacks"].to_string().contains("GPU 0 did not start"), "{}", o.stdout_str());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    assert_eq!(j["threads"], cores, "without its GPU the job decodes on every core, not on the GPU's 4 workers");
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap());
    std::fs::remove_file(&back).unwrap();
    let o = run(&mut pp(args!["decompress", &out, "-o", &back, "--engine", "gpu", "--no-fallback"]));
    assert_eq!(o.code(), Some(15), "{}", o.stderr);
    assert!(o.stderr.contains("GPU unavailable") && !back.exists(), "{}", o.stderr);
    let o = run(&mut pp(args!["verify", &out, "--engine", "gpu", "--no-fallback"]));
    assert_eq!(o.code(), Some(15), "{}", o.stderr);
    let o = run(&mut pp(args!["verify", &out, "--engine", "gpu"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    let text = o.stdout_str();
    assert!(text.contains("FALLBACK") && text.contains("OK: 1 file, "), "{text}");
}

/// Shell completions and the man page come from the command line itself
/// (what `make install` installs).
#[test]
fn completions_and_the_man_page_are_generated_from_the_cli() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&mut pp(["completions", shell]));
        assert_eq!(o.code(), Some(0), "{shell}: {}", o.stderr);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("compress") && text.contains("decompress") && text.contains("--engine"), "{shell}: {text:.300}");
    }
    let o = run(&mut pp(["man"]));
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH peerpath"), "{page:.300}");
    assert!(page.contains("compress"), "{page:.300}");
    // Each command's own page, with its options (the main page named pages it could not make).
    let o = run(&mut pp(["man", "ec", "encode"]));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.contains(".TH peerpath-ec-encode") && page.contains("\\-\\-parity"), "{page:.600}");
    // Its source is peerpath and its version (a subcommand has no version of its own).
    assert!(page.contains(&format!(".TH peerpath-ec-encode 1  \"peerpath {}\"", env!("CARGO_PKG_VERSION"))), "{page:.300}");
    run(&mut pp(["man", "nope"])).fails(2, &["man nope: no such command", "compress"]);
    let dir = scratch();
    let pages = dir.path().join("man1");
    run(&mut pp(args!["man", "--dir", &pages])).ok();
    for name in ["peerpath.1", "peerpath-compress.1", "peerpath-ec-encode.1", "peerpath-dedup-store.1"] {
        let text = std::fs::read_to_string(pages.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(text.contains(".TH peerpath"), "{name}");
    }
    assert_eq!(run(&mut pp(["completions", "no-such-shell"])).code(), Some(2));
}

/// Standard output that cannot be written is exit 11 with the reason (a full
/// disk), or a quiet 141 (a closed pipe, as a program killed by SIGPIPE);
/// never a panic, whichever command prints.
#[test]
fn an_unwritable_standard_output_is_exit_11_or_141_never_a_panic() {
    let topology = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/qemu-switch-cmb/topology.toml");
    let topology = topology.to_str().unwrap();
    for args in [&["topo", "--file", topology][..], &["sim", "reproduce"], &["completions", "bash"], &["man"]] {
        let full = std::process::Command::new(bin()).args(args).stdout(std::fs::File::create("/dev/full").unwrap()).output().unwrap();
        let err = String::from_utf8_lossy(&full.stderr);
        assert_eq!(full.status.code(), Some(11), "{args:?} > /dev/full: {err}");
        assert!(err.contains("No space left") && !err.contains("panicked"), "{args:?}: {err}");
        // The pipe's reader is gone before the command starts: its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let closed = std::process::Command::new(bin()).args(args).stdout(writer).output().unwrap();
        assert_eq!(closed.status.code(), Some(141), "{args:?} | (closed): {}", String::from_utf8_lossy(&closed.stderr));
        assert!(!String::from_utf8_lossy(&closed.stderr).contains("panicked"), "{args:?}");
    }
    // The data itself (`-o -`, the gzip front end's -c): a closed pipe is a quiet 141 too.
    let dir = scratch();
    let gz = dir.path().join("s.gz");
    run(&mut pp(args!["compress", sample_path(), "-o", &gz, "-q"])).ok();
    for args in [args!["decompress", &gz, "-o", "-", "-q"], args!["gzip", "-dc", &gz], args!["gzip", "-c", sample_path()]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let closed = std::process::Command::new(bin()).args(&args).stdout(writer).output().unwrap();
        assert_eq!(closed.status.code(), Some(141), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&closed.stderr), "", "{args:?}");
    }
    // Standard output closed (`>&-`) or open only for reading (`1<file`): not a sink that takes
    // everything (what the runtime's /dev/null and EBADF would make it), but 11 with the reason,
    // for a report and for data alike; with -q nothing is printed, so nothing fails.
    let report_only = args!["verify", &gz];
    let quiet = args!["verify", &gz, "-q"];
    for (args, code) in [(&report_only, 11), (&args!["decompress", &gz, "-o", "-", "-q"], 11), (&args!["gzip", "-c", sample_path()], 1), (&quiet, 0)] {
        let closed = std::process::Command::new("sh").arg("-c").arg("exec \"$0\" \"$@\" >&-").arg(bin()).args(args).output().unwrap();
        let read_only = std::process::Command::new(bin()).args(args).stdout(std::fs::File::open(&gz).unwrap()).output().unwrap();
        for (o, why) in [(closed, "it was closed when peerpath started"), (read_only, "it is open only for reading")] {
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
            assert!(code == 0 || err.contains(&format!("cannot write standard output: {why}")), "{args:?}: {err}");
        }
    }
    // Standard input closed (`<&-`): not an empty input (an empty archive, exit 0) but an error.
    let out = dir.path().join("from-closed.gz");
    for (args, code) in [(args!["compress", "-", "-o", &out, "-q"], 12), (args!["gzip"], 1), (args!["gzip", "-d"], 1)] {
        let o = std::process::Command::new("sh").arg("-c").arg("exec \"$0\" \"$@\" <&- >/dev/null").arg(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains("cannot read standard input: it was closed when peerpath started"), "{args:?}: {err}");
    }
    assert!(!out.exists());
}

/// Compressing a file of a memory file system: each compute worker reads its
/// own chunks (the kernel's copy, on the worker), said in the report; the
/// output is the same as with the I/O engine's reads (`PEERPATH_WORKER_READS=0`),
/// and decompresses to the source; several sources, one of them empty.
#[test]
fn a_memory_file_systems_source_is_read_by_the_compute_workers() {
    let test = "a_memory_file_systems_source_is_read_by_the_compute_workers";
    let Some(fs) = TmpfsMount::new(test, "64m") else { return };
    let data = mixed_data(5_000_123, 23);
    let src = fs.dir.join("x");
    std::fs::write(&src, &data).unwrap();
    let empty = fs.dir.join("e");
    std::fs::write(&empty, b"").unwrap();
    let out = scratch();
    let gz = |name: &str| out.path().join(name);
    let read_line = |r: &Value| r["files"][0]["read_path"]["fallback_reason"].as_str().unwrap_or("").to_string();
    let r = run(&mut pp(args!["compress", &src, "-o", gz("w.gz"), "-T", "2", "--block-size", "64K", "--json"])).ok().json();
    assert!(read_line(&r).contains("each compute worker reads its own chunks"), "{}", read_line(&r));
    check_pipeline(&r, "worker reads");
    // The ledger: a memory file's bytes are host memory, read by the kernel's CPU copy (no
    // storage, no DMA), here on the compute workers.
    let reads: Vec<&Value> = r["ledger"]["entries"].as_array().unwrap().iter().filter(|e| e["purpose"] == "read_source").collect();
    assert!(!reads.is_empty() && reads.iter().all(|e| e["mover"]["kind"] == "cpu" && e["mover"]["role"] == "compute"), "{reads:?}");
    let r = run(pp(args!["compress", &src, "-o", gz("e.gz"), "-T", "2", "--block-size", "64K", "--json"]).env("PEERPATH_WORKER_READS", "0")).ok().json();
    assert!(!read_line(&r).contains("compute worker"), "{}", read_line(&r));
    assert_file_eq(&gz("w.gz"), &std::fs::read(gz("e.gz")).unwrap(), "worker reads against engine reads");
    run(&mut pp(args!["decompress", gz("w.gz"), "-o", gz("w"), "-q"])).ok();
    assert_file_eq(&gz("w"), &data, "round trip");
    // Two sources at once, one empty: each its own target, exact.
    run(&mut pp(args!["compress", &src, &empty, "-o", out.path(), "-T", "3", "-q", "-f"])).ok();
    run(&mut pp(args!["decompress", gz("x.gz"), gz("e.gz"), "-o", out.path(), "-q", "-f"])).ok();
    assert_file_eq(&gz("x"), &data, "first of two");
    assert_file_eq(&gz("e"), b"", "the empty one");
    drop(fs);
}

/// Decompressing a file of a memory file system: each worker reads its own
/// members (the orchestrator reads only headers and trailers), said in the
/// report and the ledger; the output, and every failure (truncated, a
/// damaged member, data after the last member, members without sizes, an
/// empty file), is what the I/O engine's reads give (`PEERPATH_WORKER_READS=0`).
#[test]
fn a_memory_file_systems_gzip_is_read_by_the_decoding_workers() {
    let test = "a_memory_file_systems_gzip_is_read_by_the_decoding_workers";
    let Some(fs) = TmpfsMount::new(test, "64m") else { return };
    let out = scratch();
    let data = mixed_data(5_000_123, 29);
    let plain = out.path().join("plain");
    std::fs::write(&plain, &data).unwrap();
    let gz = fs.dir.join("x.gz");
    run(&mut pp(args!["compress", &plain, "-o", &gz, "--block-size", "64K", "-q"])).ok();
    let read_line = |r: &Value| r["files"][0]["read_path"]["fallback_reason"].as_str().unwrap_or("").to_string();
    let r = run(pp(args!["decompress", &gz, "-o", out.path().join("w"), "-T", "2", "--json"]).env("PEERPATH_WORKER_READS", "1")).ok().json();
    assert!(read_line(&r).contains("each worker reads its own members"), "{}", read_line(&r));
    assert_eq!(r["files"][0]["read_path"]["engine"], "syscalls", "{}", r["files"][0]["read_path"]);
    check_pipeline(&r, "worker reads");
    let reads: Vec<&Value> = r["ledger"]["entries"].as_array().unwrap().iter().filter(|e| e["purpose"] == "read_source").collect();
    assert!(!reads.is_empty() && reads.iter().all(|e| e["mover"]["kind"] == "cpu" && e["mover"]["role"] == "compute"), "{reads:?}");
    assert_eq!(reads.iter().map(|e| e["bytes_read"].as_u64().unwrap()).sum::<u64>(), std::fs::metadata(&gz).unwrap().len(), "every byte read once");
    assert!(r["ledger"]["entries"].as_array().unwrap().iter().all(|e| e["purpose"] != "reassemble"), "no member copied together: {}", r["ledger"]);
    assert_file_eq(&out.path().join("w"), &data, "worker reads");
    assert_eq!(r["memory"]["read_pool_peak_buffers"], 0, "the read pool is not used: {}", r["memory"]);
    let text = run(pp(args!["decompress", &gz, "-o", out.path().join("t"), "-T", "2"]).env("PEERPATH_WORKER_READS", "1")).ok();
    assert!(text.stdout_str().contains("read pool not used"), "{}", text.describe());
    let r = run(pp(args!["decompress", &gz, "-o", out.path().join("e"), "-T", "2", "--json"]).env("PEERPATH_WORKER_READS", "0")).ok().json();
    assert!(!read_line(&r).contains("own members"), "{}", read_line(&r));
    assert_file_eq(&out.path().join("e"), &data, "engine reads");
    run(pp(args!["verify", &gz, "-T", "3", "-q"]).env("PEERPATH_WORKER_READS", "1")).ok();
    // By default only where the workers take every core (else io_uring's workers copy beside them).
    let cores = std::thread::available_parallelism().unwrap().get();
    let r = run(&mut pp(args!["decompress", &gz, "-o", out.path().join("d"), "-T", cores.to_string(), "--json"])).ok().json();
    assert!(read_line(&r).contains("each worker reads its own members"), "at -T {cores}: {}", read_line(&r));
    if cores > 1 {
        let r = run(&mut pp(args!["decompress", &gz, "-o", out.path().join("d1"), "-T", "1", "--json"])).ok().json();
        assert!(!read_line(&r).contains("own members"), "at -T 1 of {cores} cores: {}", read_line(&r));
    }

    // Each damaged source fails, or decodes, exactly as with the engine's reads; nothing is kept on failure.
    let bytes = std::fs::read(&gz).unwrap();
    let mid = bytes.len() / 2;
    let mut flipped = bytes.clone();
    flipped[mid] ^= 0x55;
    let mut garbage = bytes.clone();
    garbage.extend_from_slice(b"not gzip at all");
    // gzip's own output: members without size fields (decoded streaming).
    let plain_gzip = run(Command::new("gzip").args(["-1", "-c"]).arg(&plain)).ok().stdout;
    // With the exit status each must give (the flipped byte: any failure).
    let cases: [(&str, Vec<u8>, Option<i32>); 6] = [
        ("truncated", bytes[..bytes.len() - 100].to_vec(), Some(7)),
        ("cut in the middle", bytes[..mid].to_vec(), Some(7)),
        ("a flipped byte", flipped, None),
        ("data after the last member", garbage, Some(9)),
        ("members without sizes", plain_gzip, Some(0)),
        ("empty", Vec::new(), Some(10)),
    ];
    for (what, content, want) in cases {
        let src = fs.dir.join("bad.gz");
        std::fs::write(&src, &content).unwrap();
        let mut results = Vec::new();
        for workers_read in ["1", "0"] {
            let target = out.path().join(format!("bad-{workers_read}"));
            let o = run(pp(args!["decompress", &src, "-o", &target, "-T", "2", "-q"]).env("PEERPATH_WORKER_READS", workers_read));
            assert!(!o.stderr.contains("panicked"), "{what}: {}", o.describe());
            let kept = std::fs::read(&target).ok();
            let _ = std::fs::remove_file(&target);
            assert!(o.status.success() || kept.is_none(), "{what}: a failed job kept its target");
            results.push((o.code(), o.stderr.replace(&format!("bad-{workers_read}"), "bad-N"), kept));
        }
        assert_eq!(results[0], results[1], "{what}: worker reads against engine reads");
        match want {
            Some(0) => assert_eq!(results[0].2.as_deref(), Some(&data[..]), "{what}: decoded"),
            Some(code) => assert_eq!(results[0].0, Some(code), "{what}: {}", results[0].1),
            None => assert!(results[0].0.is_some_and(|c| c != 0), "{what}: {}", results[0].1),
        }
    }
    drop(fs);
}

/// Decompressing into a memory file system: with 8 workers or more (or
/// `PEERPATH_MAPPED_OUTPUT=1`) the workers decode straight into the target's
/// mapped pages (no write copy in the ledger, the kernel's zeroing of fresh
/// pages instead), the bytes are exact, a corrupt member keeps nothing;
/// with fewer, or `PEERPATH_NO_MAPPED_OUTPUT=1`, it is written, and the
/// report says why.
#[test]
fn decompressing_into_a_memory_file_system_decodes_into_the_mapped_target() {
    let test = "decompressing_into_a_memory_file_system_decodes_into_the_mapped_target";
    let Some(fs) = TmpfsMount::new(test, "64m") else { return };
    let dir = scratch();
    let data = mixed_data(6_000_000, 17);
    let src = dir.path().join("x");
    std::fs::write(&src, &data).unwrap();
    let gz = dir.path().join("x.gz");
    run(&mut pp(args!["compress", &src, "-o", &gz, "--block-size", "64K", "-q"])).ok();
    let purposes = |r: &Value| -> Vec<(String, String, u64)> {
        r["ledger"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["purpose"].as_str().unwrap().to_string(), e["mover"]["kind"].as_str().unwrap().to_string(), e["bytes_written"].as_u64().unwrap()))
            .collect()
    };
    let target = fs.dir.join("x");
    let r = run(pp(args!["decompress", &gz, "-o", &target, "-T", "2", "--json"]).env("PEERPATH_MAPPED_OUTPUT", "1")).ok().json();
    assert_file_eq(&target, &data, "decoded into the mapped target");
    let why = r["files"][0]["write_path"]["fallback_reason"].as_str().unwrap();
    assert!(why.contains("mapped pages"), "{why}");
    let p = purposes(&r);
    assert!(p.contains(&("zero_pages".into(), "cpu".into(), data.len() as u64)), "{p:?}");
    assert!(!p.iter().any(|(what, mover, _)| what == "write_target" && mover == "cpu"), "no write copy: {p:?}");
    assert!(!p.iter().any(|(what, mover, _)| what == "write_target" && mover == "dma"), "a memory file's pages go to no storage: {p:?}");
    check_pipeline(&r, "mapped decompress");
    // Its pages allocated by one thread ahead of the workers (1 worker: a core is left
    // for it), or by each worker (as many workers as cores, or asked for); same bytes.
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    for (threads, allocation, who) in [
        ("1", None, if cores > 1 { "one thread allocates the pages ahead" } else { "each allocates its own pages" }),
        (&*cores.to_string(), None, "each allocates its own pages"),
        ("3", Some("ahead"), "one thread allocates the pages ahead"),
        ("1", Some("each"), "each allocates its own pages"),
    ] {
        std::fs::remove_file(&target).unwrap();
        let mut c = pp(args!["decompress", &gz, "-o", &target, "-T", threads, "--json"]);
        c.env("PEERPATH_MAPPED_OUTPUT", "1");
        if let Some(a) = allocation {
            c.env("PEERPATH_MAPPED_ALLOCATION", a);
        }
        let r = run(&mut c).ok().json();
        assert_file_eq(&target, &data, who);
        let why = r["files"][0]["write_path"]["fallback_reason"].as_str().unwrap();
        assert!(why.contains(who), "-T {threads} {allocation:?}: {why}");
    }
    // The written path, asked for, and by default with fewer than 8 workers (and
    // mapped from 8): same bytes, a write copy, and why.
    for (threads, env, mapped, why) in [
        ("2", Some(("PEERPATH_NO_MAPPED_OUTPUT", "1")), false, "PEERPATH_NO_MAPPED_OUTPUT=1"),
        ("2", Some(("PEERPATH_MAPPED_OUTPUT", "0")), false, "PEERPATH_MAPPED_OUTPUT=0"),
        ("2", None, false, "2 workers, which one writing thread keeps up with"),
        ("8", None, true, "mapped pages"),
    ] {
        std::fs::remove_file(&target).unwrap();
        let mut c = pp(args!["decompress", &gz, "-o", &target, "-T", threads, "--json"]);
        c.env_remove("PEERPATH_MAPPED_OUTPUT").env_remove("PEERPATH_NO_MAPPED_OUTPUT");
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let r = run(&mut c).ok().json();
        assert_file_eq(&target, &data, why);
        assert_eq!(purposes(&r).iter().any(|(what, mover, _)| what == "write_target" && mover == "cpu"), !mapped, "-T {threads} {env:?}");
        let reason = r["files"][0]["write_path"]["fallback_reason"].as_str().unwrap();
        assert!(reason.contains(why), "-T {threads} {env:?}: {reason}");
    }
    std::fs::remove_file(&target).unwrap();
    // Members with sizes, then a member without (gzip's): mapped, then written, in order.
    if let Some(gzip) = tool("gzip") {
        let tail = sample()[..200_000].to_vec();
        let mut mixed = std::fs::read(&gz).unwrap();
        mixed.extend(sys(&gzip, &[OsStr::new("-c")], Some(tail.clone())));
        let mixed_gz = dir.path().join("mixed.gz");
        std::fs::write(&mixed_gz, &mixed).unwrap();
        let r = run(pp(args!["decompress", &mixed_gz, "-o", &target, "--json"]).env("PEERPATH_MAPPED_OUTPUT", "1")).ok().json();
        assert_file_eq(&target, &[data.clone(), tail].concat(), "parallel into the mapping, then streaming writes");
        assert!(r["files"][0]["decode_mode"].to_string().contains("streaming"), "{}", r["files"][0]["decode_mode"]);
        std::fs::remove_file(&target).unwrap();
    }
    // A corrupt member in the middle: the error names it and nothing is kept.
    let mut bad = std::fs::read(&gz).unwrap();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    let bad_gz = dir.path().join("bad.gz");
    std::fs::write(&bad_gz, &bad).unwrap();
    let out = run(&mut pp(args!["decompress", &bad_gz, "-o", &target, "-T", "2"]));
    assert!(matches!(out.code(), Some(6) | Some(7)), "corrupt input: {}", out.stderr);
    assert!(out.stderr.contains("member"), "{}", out.stderr);
    assert_dir_holds(&fs.dir, &[]);
    drop(fs);
}

/// On a GPU (skipped, saying so, where there is none): `compress --engine
/// gpu` writes members that the CPU decodes to the source with matching
/// CRC-32s and sizes (`verify`, then `decompress`, and `gzip -t` where
/// there is gzip); `--level` chooses nvCOMP's algorithm (0 gives 0, 1 and
/// above 2), `--gpu-algorithm` overrides it, and the report names the one
/// used; the default output is no larger than ISA-L level 1's (`igzip -1`).
#[test]
fn compress_on_a_gpu_gives_members_the_cpu_decodes_and_the_level_picks_the_algorithm() {
    let probe = run(&mut pp(["gpu", "probe", "--bytes", "1M", "--algorithm", "2", "--repeat", "1"]));
    if probe.code() != Some(0) {
        eprintln!("SKIPPED (no GPU here): {}", probe.stderr.lines().last().unwrap_or_default());
        return;
    }
    let dir = scratch();
    let d = dir.path();
    let src = d.join("p.fa");
    let text = peerpath_func::sample::protein_like(24 << 20, 3);
    std::fs::write(&src, &text).unwrap();
    let cpu = d.join("cpu.gz");
    run(&mut pp(args!["compress", &src, "-o", &cpu, "-l", "1", "-q"])).ok();
    for (args, algorithm) in [(vec![], 2), (vec!["-l", "0"], 0), (vec!["-l", "9"], 2), (vec!["-l", "0", "--gpu-algorithm", "1"], 1)] {
        let out = d.join(format!("gpu{algorithm}.gz"));
        let mut c = pp(args!["compress", &src, "-o", &out, "--engine", "gpu", "--no-fallback", "--json", "-f"]);
        c.args(&args);
        let j = run(&mut c).ok().json();
        assert_eq!(j["provenance"], "measured_device", "{args:?}");
        assert!(j["devices"][0]["kind"].as_str().unwrap().contains(&format!("gzip algorithm {algorithm},")), "{args:?}: {}", j["devices"][0]["kind"]);
        run(&mut pp(args!["verify", &out])).ok();
        assert_eq!(run(&mut pp(args!["decompress", &out, "-o", "-"])).ok().stdout, text, "{args:?}");
        if let Some(gzip) = tools_or_skip("gzip -t of the GPU's output", &["gzip"]) {
            sys(&gzip[0], &[std::ffi::OsStr::new("-t"), out.as_os_str()], None);
        }
        if args.is_empty() {
            let (gpu_bytes, cpu_bytes) = (std::fs::metadata(&out).unwrap().len(), std::fs::metadata(&cpu).unwrap().len());
            assert!(gpu_bytes <= cpu_bytes, "the default level on the GPU ({gpu_bytes} bytes) is no larger than ISA-L level 1's ({cpu_bytes})");
        }
    }
}

/// Many files at once: read a few at a time (the read pool does not grow with the count) and
/// held open within the open-file limit, raised towards the hard limit where the soft one is
/// too small (it failed at the 508th of 600 under `ulimit -Sn 1024`); a limit that cannot fit
/// is a usage error before anything is made. `--output DIR/` made for a job that fails is
/// removed again, and a file there is not taken for a directory.
#[test]
fn many_files_at_once_fit_the_open_file_limit_and_a_failed_job_leaves_no_directory() {
    let dir = scratch();
    let d = dir.path();
    let input = d.join("in");
    std::fs::create_dir(&input).unwrap();
    let n = 150;
    let mut sources = Vec::new();
    for i in 0..n {
        let p = input.join(format!("f{i:03}"));
        std::fs::write(&p, random_bytes(i * 97 % 5000, i as u64)).unwrap();
        sources.push(p);
    }
    let limited = |limit: &str, args: Vec<std::ffi::OsString>| {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg(format!("ulimit {limit} 64 && exec \"$0\" \"$@\"")).arg(bin()).args(args);
        c
    };
    let mut a = args!["compress", "--json", "-T", "2", "-o", d.join("gz/")];
    a.extend(sources.iter().map(|s| s.clone().into_os_string()));
    let report = run(&mut limited("-Sn", a)).ok().stdout_str();
    let json: serde_json::Value = serde_json::from_str(&report).unwrap();
    let pool = json["memory"]["read_pool_buffers"].as_u64().unwrap();
    assert!(pool <= 6, "the read pool does not grow with the file count (2 per worker and 2 more): {pool} buffers");
    let gz: Vec<std::ffi::OsString> = sources.iter().map(|s| d.join("gz").join(format!("{}.gz", s.file_name().unwrap().to_str().unwrap())).into_os_string()).collect();
    let mut v = args!["verify", "-q"];
    v.extend(gz.iter().cloned());
    run(&mut limited("-Sn", v)).ok();
    let mut x = args!["decompress", "-q", "-o", d.join("back/")];
    x.extend(gz.iter().cloned());
    run(&mut limited("-Sn", x)).ok();
    for s in &sources {
        assert_file_eq(&d.join("back").join(s.file_name().unwrap()), &std::fs::read(s).unwrap(), "round trip");
    }
    // A hard limit too small: refused before anything is made.
    let mut a = args!["compress", "-q", "-o", d.join("nowhere/deep/")];
    a.extend(sources.iter().map(|s| s.clone().into_os_string()));
    run(&mut limited("-n", a)).fails(2, &["150 files at once need about", "raise `ulimit -n`"]);
    assert!(!d.join("nowhere").exists(), "nothing made");
    // A few files fit a small hard limit (a flat 256 descriptors refused even one file).
    let mut a = args!["compress", "-q", "-o", d.join("few/")];
    a.extend(sources[..4].iter().map(|s| s.clone().into_os_string()));
    run(&mut limited("-n", a)).ok();
    let mut a = args!["compress", "-q", "-o", d.join("few-emulated/"), "--engine", "emulated", "--devices", "4", "--device-memory", "32M", "--no-fallback"];
    a.extend(sources[..4].iter().map(|s| s.clone().into_os_string()));
    run(&mut limited("-n", a)).ok();
    run(&mut limited("-n", args!["verify", "-q", &gz[0]])).ok();
    // A job that fails (a missing source) removes the directories it made for its outputs.
    run(&mut pp(args!["compress", &sources[0], d.join("missing"), "-o", d.join("made/deeper/")])).fails(3, &["missing"]);
    assert!(!d.join("made").exists(), "the directories made for the outputs are gone");
    std::fs::write(d.join("afile"), b"").unwrap();
    run(&mut pp(args!["compress", &sources[0], &sources[1], "-o", d.join("afile")])).fails(2, &["afile is not a directory"]);
}

/// A file of /proc says it holds 0 bytes: it is compressed to its end, as a pipe is (it gave
/// an empty .gz, exit 0).
#[test]
fn a_proc_file_is_read_to_its_end_not_to_its_size() {
    let src = std::path::Path::new("/proc/version");
    let Ok(want) = std::fs::read(src) else {
        eprintln!("SKIPPED: no /proc/version here");
        return;
    };
    assert_eq!(std::fs::metadata(src).unwrap().len(), 0, "procfs says 0 bytes");
    let dir = scratch();
    let gz = dir.path().join("v.gz");
    let o = run(&mut pp(args!["compress", src, "-o", &gz])).ok();
    assert!(o.stdout_str().contains("read to its end"), "{}", o.stdout_str());
    let back = dir.path().join("v");
    run(&mut pp(args!["decompress", &gz, "-o", &back])).ok();
    assert_file_eq(&back, &want, "all of /proc/version");
}

/// A BGZF file cut at a member's end checks member by member, but lacks htslib's end-of-file
/// marker: verify and decompress say so (as `bgzip -t` does), where they said OK alone.
#[test]
fn a_bgzf_file_without_its_end_marker_is_said_to_be_maybe_truncated() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, mixed_data(300_000, 5)).unwrap();
    let bgz = d.join("s.gz");
    run(&mut pp(args!["compress", &src, "--format", "bgzf", "-o", &bgz, "-q"])).ok();
    let o = run(&mut pp(args!["verify", &bgz])).ok();
    assert!(!o.stderr.contains("end-of-file marker"), "a whole file: no word: {}", o.stderr);
    let whole = std::fs::read(&bgz).unwrap();
    std::fs::write(&bgz, &whole[..whole.len() - 28]).unwrap();
    for cmd in [args!["verify", &bgz], args!["decompress", &bgz, "-o", d.join("back")]] {
        let o = run(&mut pp(cmd)).ok();
        assert!(o.stderr.contains("a BGZF file without its end-of-file marker") && o.stderr.contains("may be truncated"), "{}", o.stderr);
    }
}

/// A write past `ulimit -f` (SIGXFSZ, which killed the process with no word, leaving a named
/// temporary behind) is exit 11 with the reason, and nothing is kept.
#[test]
fn a_file_size_limit_is_a_write_error_not_a_silent_death() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(3 << 20, 6)).unwrap();
    for named in ["0", "1"] {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg("ulimit -f 1000 && exec \"$0\" \"$@\"").arg(bin()).args(args!["compress", &src, "-o", d.join("s.gz")]).env("PEERPATH_NAMED_TEMPORARIES", named);
        run(&mut c).fails(11, &["File too large"]);
        assert_dir_holds(d, &["s"]);
    }
}

/// A command path ("", "ec", "ec encode") with the options its `--help` lists
/// (long and one-letter short ones) and its subcommands.
struct Help {
    options: std::collections::BTreeSet<String>,
    subcommands: Vec<String>,
}

/// Every command and subcommand of `peerpath --help`, recursively, by path.
fn command_tree(path: &[String], tree: &mut std::collections::BTreeMap<String, Help>) {
    let o = run(&mut pp(path.iter().map(String::as_str).chain(["--help"]))).ok();
    let text = o.stdout_str();
    let (mut options, mut subcommands, mut in_commands) = (std::collections::BTreeSet::new(), Vec::new(), false);
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        in_commands = (in_commands && !line.is_empty()) || line == "Commands:";
        if in_commands && indent == 2 && !trimmed.starts_with("help ") {
            subcommands.extend(trimmed.split_whitespace().next().map(String::from));
        } else if (2..=6).contains(&indent) && trimmed.starts_with('-') {
            // "-o, --output <OUTPUT>  Target..." (gzip's own: "-n, -N, -T, --no-name, ...").
            let head = trimmed.split("  ").next().unwrap_or_default();
            options.extend(head.split([',', ' ']).filter(|w| w.starts_with('-') && w.len() > 1).map(String::from));
        }
    }
    for sub in &subcommands {
        command_tree(&[path, std::slice::from_ref(sub)].concat(), tree);
    }
    tree.insert(path.join(" "), Help { options, subcommands });
}

/// The command paths a command line in the docs names: "peerpath ec encode ...",
/// "PEERPATH_DAEMON=P peerpath compress|decompress|verify ...", `csp serve|identify|stats`
/// (the word "peerpath" optional, as prose writes `ec encode --shard-dir`).
fn documented_paths(text: &str, tree: &std::collections::BTreeMap<String, Help>) -> Vec<String> {
    let mut words = text.split_whitespace().skip_while(|w| w.contains('=') && !w.starts_with('-'));
    let mut first = words.next().unwrap_or_default();
    if first == "peerpath" {
        first = words.next().unwrap_or_default();
    }
    let bases: Vec<&str> = first.split('|').collect();
    if !bases.iter().all(|b| tree.contains_key(*b)) {
        return Vec::new();
    }
    let second: Vec<&str> = words.next().unwrap_or_default().split('|').collect();
    let mut paths = Vec::new();
    for base in bases {
        if second.iter().all(|s| tree[base].subcommands.iter().any(|c| c == s)) {
            paths.extend(second.iter().map(|s| format!("{base} {s}")));
        } else {
            paths.push(base.to_string());
        }
    }
    paths
}

/// The options a command line in the docs shows: `--name` and one-letter `-x`
/// (not bundles such as gzip's `-dcf`, nor `-` alone).
fn shown_options(text: &str) -> Vec<String> {
    let option = regex::Regex::new(r"(?:^|[\s\[(|])(--?[A-Za-z][A-Za-z0-9-]*)").unwrap();
    option.captures_iter(text).map(|c| c[1].to_string()).filter(|o| o.starts_with("--") || o.len() == 2).collect()
}

/// The command line's descriptions agree: every option that docs/usage.md's synopsis
/// lines and its prose's command spans (`peerpath ec encode ... --unit 1M`, `dedup store
/// --compress LEVEL`), and README.md's quick start, show for a command is one its
/// `--help` lists; every command has a synopsis line or span of its own in
/// docs/usage.md; and `man --dir` writes a page for every command with every option
/// of its `--help`.
#[test]
fn the_docs_and_man_pages_show_every_command_and_only_options_it_takes() {
    let mut tree = std::collections::BTreeMap::new();
    command_tree(&[], &mut tree);
    assert!(tree.contains_key("ec encode") && tree["compress"].options.contains("--engine"), "{:?}", tree.keys());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let (usage, readme) = (read("docs/usage.md"), read("README.md"));
    // A line's command, without its comment (" # ...").
    let comment = regex::Regex::new(r"\s#\s").unwrap();
    let code = |l: &str| comment.split(l).next().unwrap_or_default().to_string();
    let is_command_line = |l: &str| l.split_whitespace().take(2).any(|w| w == "peerpath") && !documented_paths(l, &tree).is_empty();
    // (where, command line): usage.md's synopses with their continuation lines...
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut prose = String::new();
    let mut continued = false; // the line before was a synopsis line (or its continuation)
    for (n, line) in usage.lines().enumerate() {
        if continued && line.starts_with("        [") {
            lines.last_mut().unwrap().1 += &code(line);
        } else if line.starts_with("    ") && !line.starts_with("     ") && is_command_line(line) {
            lines.push((format!("docs/usage.md:{}", n + 1), code(line)));
            continued = true;
        } else {
            continued = false;
            prose += line;
            prose.push('\n');
        }
    }
    // ... README's quick start (`keygen -o KEY; peerpath encrypt ...`: each command) ...
    let quick_start = readme.split("## Quick start").nth(1).and_then(|s| s.split("\n## ").next()).expect("README.md has a Quick start");
    for (n, line) in quick_start.lines().enumerate() {
        for part in line.split("; ").filter(|p| p.starts_with("    ") || p.starts_with("peerpath")).filter(|p| is_command_line(p)) {
            lines.push((format!("README.md, quick start line {}", n + 1), code(part)));
        }
    }
    let mut wrong = Vec::new();
    let mut documented = std::collections::BTreeSet::new();
    let mut check = |place: &str, text: &str, paths: Vec<String>| {
        for path in &paths {
            for o in shown_options(text).into_iter().filter(|o| !tree[path].options.contains(o)) {
                wrong.push(format!("{place}: `peerpath {path}` has no {o} (its --help lists {:?}): {}", tree[path].options, text.trim()));
            }
        }
        if place.starts_with("docs/usage.md") {
            documented.extend(paths);
        }
    };
    for (place, code) in &lines {
        // "sim reproduce | --vary csp=1..12 ... | plan --target T": alternatives of the first
        // word's command (` | ` outside brackets), each a subcommand of it or its own options.
        let (mut depth, mut start, mut segments) = (0i32, 0, Vec::new());
        for (i, c) in code.char_indices() {
            depth += match c {
                '[' => 1,
                ']' => -1,
                _ => 0,
            };
            if depth == 0 && code[i..].starts_with(" | ") {
                segments.push(&code[start..i]);
                start = i + 3;
            }
        }
        segments.push(&code[start..]);
        let paths = documented_paths(segments[0], &tree);
        let base = paths[0].split(' ').next().unwrap().to_string();
        check(place, segments[0], paths);
        for segment in &segments[1..] {
            let sub = segment.split_whitespace().next().unwrap_or_default();
            let paths = match tree[&base].subcommands.iter().any(|c| c == sub) {
                true => vec![format!("{base} {sub}")],
                false => vec![base.clone()],
            };
            check(place, segment, paths);
        }
    }
    // ... and the prose's spans that are command lines (a span may cross a line break).
    for span in regex::Regex::new(r"`([^`]+)`").unwrap().captures_iter(&prose) {
        let text = span[1].split_whitespace().collect::<Vec<_>>().join(" ");
        let paths = documented_paths(&text, &tree);
        if !paths.is_empty() {
            check("docs/usage.md prose", &text, paths);
        }
    }
    assert!(wrong.is_empty(), "the docs show options their commands do not take:\n{}", wrong.join("\n"));
    // (A group of subcommands with no options of its own, `ec`, is its subcommands.)
    let group = |h: &Help| !h.subcommands.is_empty() && h.options.iter().all(|o| o == "-h" || o == "--help");
    let undocumented: Vec<&String> = tree.iter().filter(|(p, h)| !p.is_empty() && !group(h) && !documented.contains(*p)).map(|(p, _)| p).collect();
    assert!(undocumented.is_empty(), "commands docs/usage.md shows in no synopsis line or `peerpath ...` span: {undocumented:?}");
    // The man pages: one a command, every option of its --help on it.
    let dir = scratch();
    run(&mut pp(args!["man", "--dir", dir.path()])).ok();
    for (path, help) in &tree {
        let name = format!("{}.1", ["peerpath", path].join(" ").trim().replace(' ', "-"));
        let page = std::fs::read_to_string(dir.path().join(&name)).unwrap_or_else(|e| panic!("man --dir wrote no {name}: {e}"));
        for o in help.options.iter().filter(|o| o.starts_with("--")) {
            assert!(page.contains(&o.replace('-', "\\-")), "{name} lacks {o}, which `peerpath {path} --help` lists");
        }
    }
}

/// verify decodes on the host CPU or a GPU, not on an emulated CSP (only `decompress --ec` does):
/// its `--engine` offered `emulated` (`[possible values: cpu, gpu, emulated]`, with the help of
/// decompress's) and refused it only once run. Now neither offered nor taken: exit 2, naming the
/// values it takes; decompress still takes it.
#[test]
fn verify_offers_and_takes_only_the_engines_it_decodes_on() {
    let dir = scratch();
    compress_bytes(dir.path(), "s", b"some data\n", &[]);
    let o = run(&mut pp(args!["verify", "--engine", "emulated", dir.path().join("s.gz")]));
    let refused = o.stderr.contains("invalid value 'emulated' for '--engine <ENGINE>'") && o.stderr.contains("[possible values: cpu, gpu]\n");
    assert!(o.code() == Some(2) && refused, "clap's usage error: {}", o.describe());
    let help = run(&mut pp(args!["verify", "--help"])).ok().stdout_str();
    let engine = help.split("--engine <ENGINE>").nth(1).and_then(|h| h.split("[default: cpu]").next()).expect("verify --help shows --engine");
    assert!(!engine.contains("emulated"), "{engine}");
    assert!(help.contains("[possible values: cpu, gpu]\n"), "{help}");
    let decompress = run(&mut pp(args!["decompress", "--help"])).ok().stdout_str();
    assert!(decompress.contains("[possible values: cpu, gpu, emulated]"), "{decompress}");
}

/// The jobs' messages name files as the reports do (quoted as GNU ls quotes): a newline in a name split the
/// line, and a byte that is not UTF-8 was printed as U+FFFD. The checks of targets (one name
/// for two, an `--output` that is not a directory), a source's warning, and the placement of
/// streams on P2P memory.
#[test]
fn the_jobs_messages_quote_the_names_they_give() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let d = dir.path();
    let at = d.display();
    let odd = |name: &[u8]| d.join(OsStr::from_bytes(name));
    // Two sources, one target name (with a newline).
    let (x, y) = (d.join("x"), d.join("y"));
    for sub in [&x, &y] {
        std::fs::create_dir(sub).unwrap();
        std::fs::write(sub.join("a\nb"), b"data\n").unwrap();
    }
    let o = run(&mut pp(args!["compress", x.join("a\nb"), y.join("a\nb"), "-o", d.join("out/")])).fails(2, &[]);
    assert!(o.stderr.contains(&format!("two sources would both write '{at}/out/a'$'\\n''b.gz'\n")), "{}", o.stderr);
    // An --output for several sources that is a file (not UTF-8).
    std::fs::write(odd(b"file\xff"), b"").unwrap();
    let o = run(&mut pp(args!["compress", x.join("a\nb"), y.join("a\nb"), "-o", odd(b"file\xff")])).fails(2, &[]);
    assert!(o.stderr.contains(&format!("'{at}/file'$'\\377' is not a directory: several sources need --output DIR\n")), "{}", o.stderr);
    // A BGZF file without its end-of-file marker: the warning (not UTF-8).
    let src = d.join("s");
    std::fs::write(&src, mixed_data(300_000, 5)).unwrap();
    let bgz = odd(b"s\xff.gz");
    run(&mut pp(args!["compress", &src, "--format", "bgzf", "-o", &bgz, "-q"])).ok();
    let whole = std::fs::read(&bgz).unwrap();
    std::fs::write(&bgz, &whole[..whole.len() - 28]).unwrap();
    let o = run(&mut pp(args!["verify", &bgz, "-q"])).ok();
    assert!(o.stderr.contains(&format!("peerpath: warning: '{at}/s'$'\\377''.gz': a BGZF file without its end-of-file marker")), "{}", o.stderr);
    // Streams on P2P memory (a fake provider: see tests/offload.rs): the placement of a source
    // the fake sysfs cannot place names it, and why (its device, which sysfs does not list).
    let p2pmem = d.join("sys/bus/pci/devices/0000:03:00.0/p2pmem");
    std::fs::create_dir_all(&p2pmem).unwrap();
    for (name, value) in [("size", "67108864"), ("available", "50331648"), ("published", "1")] {
        std::fs::write(p2pmem.join(name), format!("{value}\n")).unwrap();
    }
    std::fs::File::create(p2pmem.join("allocate")).unwrap().set_len(64 << 20).unwrap();
    let r = run(&mut pp(args![
        "compress", x.join("a\nb"), "-o", d.join("p2p.gz"), "--engine", "emulated", "--device-memory", "64M", "--device-workers", "1",
        "--device-memory-from", "p2p:0000:03:00.0", "--sysfs", d.join("sys"), "--json"
    ]))
    .ok()
    .json();
    let placement: Vec<&str> = r["placement"].as_array().expect("a placement").iter().filter_map(|p| p.as_str()).collect();
    let source = format!("'{at}/x/a'$'\\n''b'");
    assert!(
        placement.iter().any(|p| p.starts_with(&format!("{source}: P2P path not checked ({source} is on device ")) && p.contains(&format!(", which {at}/sys/dev/block/")) && !p.contains('\n')),
        "{placement:?}"
    );
}

/// A signal that ends a job once its outputs are in place names, on standard error, every
/// existing target `--force` replaced, quoted: it named the first three outputs only ("and 2
/// more"), so which existing files were overwritten could not be told (and a name with a
/// newline split its line). No race: standard output is a full pipe that nobody reads, so the
/// job, its outputs in place, waits to print its report until the signal comes.
#[test]
fn a_signal_after_force_replaced_targets_names_every_one() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch();
    let d = dir.path();
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let names = ["a", "b", "c", "d\ne", "f"];
    let mut a = args!["compress"];
    for (i, n) in names.iter().enumerate() {
        std::fs::write(d.join(n), mixed_data(64 << 10, i as u64)).unwrap();
        std::fs::write(out.join(format!("{n}.gz")), b"old").unwrap();
        a.push(d.join(n).into());
    }
    a.extend(args!["-o", format!("{}/", out.display()), "--force", "-T", "2"]);
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds`, owned from here on.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) }, 0);
    // SAFETY: both are open and owned by nothing else.
    let (read_end, write_end) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let mut full = std::fs::File::from(write_end);
    for chunk in [4096, 1] {
        while full.write(&vec![0; chunk]).is_ok() {}
    }
    // SAFETY: fcntl on a descriptor this test owns: blocking again, so the job's writes wait.
    assert_eq!(unsafe { libc::fcntl(full.as_raw_fd(), libc::F_SETFL, 0) }, 0);
    let mut child = pp(a).stdout(Stdio::from(full)).stderr(Stdio::piped()).spawn().unwrap();
    let replaced = |n: &str| std::fs::read(out.join(format!("{n}.gz"))).is_ok_and(|b| b != b"old");
    let start = std::time::Instant::now();
    while !names.iter().all(|n| replaced(n)) {
        assert!(child.try_wait().unwrap().is_none(), "the job ended before its outputs were all in place");
        assert!(start.elapsed() < DEADLINE, "the outputs were not put in place");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // SAFETY: kill(2) takes plain integers: our own (unreaped) child's pid and a signal number.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_deadline(&mut child, DEADLINE, "a job signalled with its outputs in place");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    drop(read_end);
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}: {said}");
    let quoted: Vec<String> = names.iter().map(|n| format!("{}/{}.gz", out.display(), n.replace('\n', "'$'\\n''"))).collect();
    // A name with a newline is quoted whole: 'DIR/d'$'\n''e.gz'.
    let quoted: Vec<String> = quoted.into_iter().map(|q| if q.contains('$') { format!("'{q}'") } else { q }).collect();
    let note = said.lines().find(|l| l.starts_with("peerpath: SIGTERM came ")).unwrap_or_else(|| panic!("no word of the outputs: {said:?}"));
    assert!(note.contains(&format!("replaced 5 existing files: {}", quoted.join(", "))), "{note}");
    for n in names {
        run(&mut pp(args!["verify", out.join(format!("{n}.gz")), "-q"])).ok();
    }
}

/// A job that fails putting its outputs in place after `--force` replaced an existing target
/// names it, quoted: the replaced file keeps its new output (the old one cannot be given back),
/// and the error said only why the last failed, so the user believed nothing had changed. No
/// race: the second source is a FIFO, and its target is made a directory while the job waits
/// for the FIFO's data, after every target was checked.
#[test]
fn a_job_that_fails_after_force_replaced_a_target_names_it() {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = scratch();
    let d = dir.path();
    let (out, fifo) = (d.join("out"), d.join("b"));
    std::fs::create_dir(&out).unwrap();
    std::fs::write(d.join("a"), mixed_data(64 << 10, 1)).unwrap();
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (a_gz, b_gz) = (out.join("a.gz"), out.join("b.gz"));
    std::fs::write(&a_gz, b"old").unwrap();
    std::fs::write(&b_gz, b"old").unwrap();
    let mut cmd = pp(args!["compress", d.join("a"), &fifo, "-o", &out, "--force", "-T", "2"]);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // Opened for writing without waiting: it fails (ENXIO) until the job has the FIFO open.
    let mut writer = loop {
        match std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo) {
            Ok(w) => break w,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                assert!(child.try_wait().unwrap().is_none(), "the job ended before it opened the FIFO");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => panic!("open the FIFO: {e}"),
        }
    };
    // A directory that is not empty: the output is never renamed over it (EISDIR).
    std::fs::remove_file(&b_gz).unwrap();
    std::fs::create_dir(&b_gz).unwrap();
    std::fs::write(b_gz.join("kept"), b"").unwrap();
    writer.write_all(b"fifo data").unwrap();
    drop(writer);
    let status = wait_deadline(&mut child, DEADLINE, "a job whose second target became a directory");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    assert_eq!(status.code(), Some(11), "{said}");
    let error = said.lines().find(|l| l.starts_with("peerpath: error: ")).unwrap_or_else(|| panic!("no error: {said:?}"));
    assert!(error.starts_with(&format!("peerpath: error: cannot write {}: ", b_gz.display())), "{error}");
    assert!(error.ends_with(&format!("--force had already replaced the existing file {}, and it keeps its new output", a_gz.display())), "{error}");
    // As said: a.gz is the new output, b.gz the directory, and nothing else is left.
    run(&mut pp(args!["verify", &a_gz, "-q"])).ok();
    assert_dir_holds(&out, &["a.gz", "b.gz"]);
    assert_eq!(names_in(&b_gz), ["kept"]);
}

/// verify decodes on the CPU or a GPU only: its `--device-timeout` help and the error where it
/// is given without a GPU say `--engine gpu` (they said "gpu or emulated", an engine verify
/// refuses); decompress, which takes emulated with --ec, still says both.
#[test]
fn verifys_device_timeout_speaks_of_a_gpu_only() {
    let help = run(&mut pp(args!["verify", "--help"])).ok().stdout_str();
    let lines: Vec<&str> = help.lines().collect();
    let at = lines.iter().position(|l| l.trim_start().starts_with("--device-timeout")).unwrap_or_else(|| panic!("no --device-timeout in:\n{help}"));
    let section = lines[at + 1..].iter().take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('-')).copied().collect::<Vec<_>>().join(" ");
    assert!(section.trim_start().starts_with("With --engine gpu: a GPU with work in flight"), "{section}");
    assert!(!section.contains("emulated"), "{section}");
    let dir = scratch();
    let gz = dir.path().join("x.gz");
    std::fs::write(dir.path().join("x"), b"x").unwrap();
    run(&mut pp(args!["compress", dir.path().join("x"), "-q"])).ok();
    let o = run(&mut pp(args!["verify", &gz, "--device-timeout", "1"])).fails(2, &["--device-timeout times devices: give it with --engine gpu"]);
    assert!(!o.stderr.contains("emulated"), "{}", o.stderr);
    run(&mut pp(args!["decompress", &gz, "-o", dir.path().join("y"), "--device-timeout", "1"])).fails(2, &["give it with --engine gpu or emulated"]);
}

/// The files `topo --export`/`--svg` write (and `sim`, `bench io`, `man` through the same
/// `write_outputs`) are named in their errors as the jobs name files: quoted, a newline kept on
/// the error's line, a byte that is not UTF-8 kept as its octal escape.
#[test]
fn written_outputs_errors_quote_their_names() {
    use std::os::unix::ffi::OsStrExt;
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/qemu-switch-cmb/topology.toml");
    let dir = scratch();
    let at = dir.path().display();
    // A directory that does not exist, with a newline in its name: exit 11, one line.
    let missing = dir.path().join("no\ndir");
    let o = run(&mut pp(args!["topo", "--file", &file, "--svg", missing.join("t.svg")])).fails(11, &[]);
    assert_eq!(o.stderr.lines().collect::<Vec<_>>(), [format!(r"peerpath: error: cannot write '{at}/no'$'\n''dir/t.svg': No such file or directory (os error 2)")], "{}", o.stderr);
    let o = run(&mut pp(args!["topo", "--file", &file, "--export", missing.join(OsStr::from_bytes(b"t\xff.toml"))])).fails(11, &[]);
    assert!(o.stderr.starts_with(&format!(r"peerpath: error: cannot write '{at}/no'$'\n''dir/t'$'\377''.toml': ")), "{}", o.stderr);
    // An existing one without --force, and one name for both.
    let there = dir.path().join("a\nb.svg");
    std::fs::write(&there, b"").unwrap();
    run(&mut pp(args!["topo", "--file", &file, "--svg", &there])).fails(4, &[&format!(r"target '{at}/a'$'\n''b.svg' exists")]);
    run(&mut pp(args!["topo", "--file", &file, "--svg", &there, "--export", &there, "--force"])).fails(2, &[&format!(r"'{at}/a'$'\n''b.svg' is named for two outputs")]);
    assert_eq!(std::fs::read(&there).unwrap(), b"");
}

/// A fallback names its file by the file's exact bytes: the text report quotes them (`$'\377'`),
/// and JSON gives them in `fallback_name_bytes` where a name is not UTF-8 (both read U+FFFD: two
/// names differing in one byte were the same in the report).
#[test]
fn fallbacks_name_their_files_exactly() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let at = dir.path().display();
    // One gzip member, a stored block, with no size field (as gzip makes them): decoded streaming.
    let data = b"no size field\n";
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1];
    gz.extend((data.len() as u16).to_le_bytes());
    gz.extend((!(data.len() as u16)).to_le_bytes());
    gz.extend(data);
    gz.extend(crc32(data).to_le_bytes());
    gz.extend((data.len() as u32).to_le_bytes());
    let names: [&[u8]; 3] = [b"a\xffb.gz", b"a\xfeb.gz", b"c.gz"];
    let paths: Vec<_> = names.iter().map(|n| dir.path().join(OsStr::from_bytes(n))).collect();
    paths.iter().for_each(|p| std::fs::write(p, &gz).unwrap());
    let r = run(&mut pp(args!["verify", &paths[0], &paths[1], &paths[2], "--json"])).ok().json();
    let lines: Vec<&str> = r["fallbacks"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    let why = ": streaming on one thread: members do not declare their sizes";
    assert_eq!(lines.len(), 3, "{lines:?}");
    for (line, name) in lines.iter().zip([format!(r"'{at}/a'$'\377''b.gz'"), format!(r"'{at}/a'$'\376''b.gz'"), format!("{at}/c.gz")]) {
        assert!(line.starts_with(&format!("{name}{why}")), "{line}");
    }
    let bytes = |n: &[u8]| Value::from(dir.path().join(OsStr::from_bytes(n)).as_os_str().as_bytes().to_vec());
    assert_eq!(r["fallback_name_bytes"], Value::Array(vec![bytes(names[0]), bytes(names[1]), Value::Null]), "{r}");
    // None there where every name is UTF-8.
    let r = run(&mut pp(args!["verify", &paths[2], "--json"])).ok().json();
    assert!(r.get("fallback_name_bytes").is_none() && r["fallbacks"].as_array().unwrap().len() == 1, "{r}");
    // The text report.
    let text = run(&mut pp(args!["verify", &paths[1]])).ok().stdout_str();
    assert!(text.contains(&format!(r"  FALLBACK      '{at}/a'$'\376''b.gz'{why}")), "{text}");
}
