//! Round trips through the real binary: compress, verify, decompress, and
//! compare byte for byte, at the sizes where block and alignment arithmetic
//! goes wrong, over every I/O path and both formats.

mod common;

use common::*;
use serde_json::Value;
use std::ffi::OsString;

const BLOCK: usize = 64 << 10;
const BGZF_BLOCK: usize = 0xff00;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Io {
    /// The default: io_uring with O_DIRECT.
    UringDirect,
    /// `--io sync`: pread/pwrite (still O_DIRECT).
    Sync,
    /// `--no-direct`: io_uring through the page cache.
    NoDirect,
    /// Both.
    SyncNoDirect,
}

impl Io {
    fn args(self) -> Vec<&'static str> {
        match self {
            Io::UringDirect => vec![],
            Io::Sync => vec!["--io", "sync"],
            Io::NoDirect => vec!["--no-direct"],
            Io::SyncNoDirect => vec!["--io", "sync", "--no-direct"],
        }
    }
}

fn sizes(block: usize) -> Vec<usize> {
    vec![0, 1, block - 1, block, block + 1, 4095, 4096, 4097, 1_000_003, (4 << 20) + 12_345]
}

/// Checks that the reported I/O path is the one asked for, and that any
/// other path is a reported fallback (never silent).
fn check_path(report: &Value, key: &str, io: Io, what: &str) {
    let fallbacks: Vec<String> = report["fallbacks"].as_array().expect("fallbacks").iter().map(|f| f.as_str().unwrap().to_string()).collect();
    for f in report["files"].as_array().expect("files") {
        let p = &f[key];
        let engine = p["engine"].as_str().expect("engine");
        let direct = p["direct"].as_bool().expect("direct");
        let reason = p["fallback_reason"].as_str().unwrap_or("");
        match io {
            Io::Sync | Io::SyncNoDirect => assert_eq!(engine, "syscalls", "{what}: --io sync must use plain syscalls"),
            Io::UringDirect | Io::NoDirect => {
                if engine != "io_uring" {
                    assert!(
                        fallbacks.iter().any(|f| f.contains("io_uring unavailable")),
                        "{what}: {key} ran on {engine} without a reported fallback: {fallbacks:?}"
                    );
                    eprintln!("note: {what}: io_uring is unavailable here; only the fallback path was tested");
                }
            }
        }
        match io {
            Io::NoDirect | Io::SyncNoDirect => {
                assert!(!direct, "{what}: --no-direct but {key} used O_DIRECT");
                assert!(reason.contains("--no-direct"), "{what}: {key} fallback reason {reason:?}");
            }
            Io::UringDirect | Io::Sync => {
                // O_DIRECT unless the file system refused it, and then it says so.
                assert!(direct || reason.contains("refused"), "{what}: {key} without O_DIRECT and no reason: {p}");
                if !direct {
                    assert!(fallbacks.iter().any(|f| f.contains("without O_DIRECT")), "{what}: silent O_DIRECT fallback: {fallbacks:?}");
                }
            }
        }
    }
}

fn round_trip_sizes(format: &str, io: Io) {
    let dir = scratch();
    let block = if format == "bgzf" { BGZF_BLOCK } else { BLOCK };
    for (i, size) in sizes(block).into_iter().enumerate() {
        let what = format!("{format}, {io:?}, {size} bytes");
        let data = mixed_data(size, i as u64 + 11);
        let src = dir.path().join(format!("in-{size}"));
        let gz = dir.path().join(format!("in-{size}.gz"));
        let back = dir.path().join(format!("back-{size}"));
        std::fs::write(&src, &data).unwrap();

        let mut a = args!["compress", &src, "-o", &gz, "--format", format, "--json", "-T", "2"];
        if format == "gzip" {
            a.extend(args!["--block-size", "64K"]);
        }
        a.extend(io.args().into_iter().map(OsString::from));
        let report = run(&mut pp(a)).ok().json();
        let packed = std::fs::read(&gz).unwrap();
        assert_eq!(report["bytes_in"].as_u64(), Some(size as u64), "{what}: bytes_in");
        assert_eq!(report["bytes_out"].as_u64(), Some(packed.len() as u64), "{what}: bytes_out");
        check_path(&report, "read_path", io, &what);
        check_path(&report, "write_path", io, &what);

        // The layout: one member per block (an empty member for no input),
        // plus the end marker: BGZF's EOF block, peerpath's end member.
        let data_members = size.div_ceil(block).max(1);
        assert_eq!(report["files"][0]["members"].as_u64(), Some(data_members as u64), "{what}: members in the report");
        let walked = members(&packed);
        assert_eq!(walked.len(), data_members + 1, "{what}: members in the file");
        if format == "bgzf" {
            assert!(walked.iter().all(|m| m.len <= 65536), "{what}: a BGZF member above 64 KiB");
            assert_eq!(&packed[packed.len() - 28..], &peerpath_func::BGZF_EOF_BLOCK[..], "{what}: BGZF must end with the EOF marker block");
        } else {
            assert_eq!(&packed[packed.len() - 34..], &peerpath_func::PEERPATH_END_MEMBER[..], "{what}: peerpath's end member must end the file");
        }

        let mut v = args!["verify", &gz];
        v.extend(io.args().into_iter().map(OsString::from));
        let out = run(&mut pp(v)).ok();
        assert!(out.stdout_str().contains("all CRC-32 and lengths match"), "{what}: verify says {}", out.stdout_str());

        let mut d = args!["decompress", &gz, "-o", &back, "--json", "-T", "2"];
        d.extend(io.args().into_iter().map(OsString::from));
        let dreport = run(&mut pp(d)).ok().json();
        assert_file_eq(&back, &data, &format!("{what}: restored bytes"));
        assert_eq!(dreport["bytes_out"].as_u64(), Some(size as u64), "{what}: decompress bytes_out");
        let mode = dreport["files"][0]["decode_mode"].as_str().unwrap_or("");
        assert!(mode.starts_with("parallel"), "{what}: peerpath files decode in parallel, got {mode:?}");
        check_path(&dreport, "read_path", io, &format!("{what} (decompress)"));
        check_path(&dreport, "write_path", io, &format!("{what} (decompress)"));

        assert_file_eq(&src, &data, &format!("{what}: the source must be unchanged"));
    }
    let names = names_in(dir.path());
    assert!(!names.iter().any(|n| n.contains(".peerpath-tmp.")), "temporary files left: {names:?}");
}

#[test]
fn gzip_round_trips_at_block_edges_over_io_uring_with_o_direct() {
    round_trip_sizes("gzip", Io::UringDirect);
}

#[test]
fn gzip_round_trips_at_block_edges_over_sync_io() {
    round_trip_sizes("gzip", Io::Sync);
}

#[test]
fn gzip_round_trips_at_block_edges_without_o_direct() {
    round_trip_sizes("gzip", Io::NoDirect);
}

#[test]
fn gzip_round_trips_at_block_edges_over_sync_io_without_o_direct() {
    round_trip_sizes("gzip", Io::SyncNoDirect);
}

#[test]
fn bgzf_round_trips_at_block_edges_over_io_uring_with_o_direct() {
    round_trip_sizes("bgzf", Io::UringDirect);
}

#[test]
fn bgzf_round_trips_at_block_edges_over_sync_io() {
    round_trip_sizes("bgzf", Io::Sync);
}

#[test]
fn bgzf_round_trips_at_block_edges_without_o_direct() {
    round_trip_sizes("bgzf", Io::NoDirect);
}

#[test]
fn every_level_round_trips_on_both_libraries() {
    let dir = scratch();
    let data = mixed_data(1_000_003, 5);
    let src = dir.path().join("src");
    std::fs::write(&src, &data).unwrap();
    for level in [0, 1, 2, 3, 4, 6, 9, 12] {
        let gz = dir.path().join(format!("l{level}.gz"));
        let back = dir.path().join(format!("l{level}"));
        let report = run(&mut pp(args!["compress", &src, "-o", &gz, "-l", level.to_string(), "--block-size", "256K", "--json"])).ok().json();
        let engine = report["engine"].as_str().unwrap();
        let lib = if level <= 3 { "ISA-L" } else { "libdeflate" };
        assert!(engine.contains(lib), "level {level} should use {lib}, report says {engine}");
        run(&mut pp(args!["verify", &gz, "-q"])).ok();
        run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
        assert_file_eq(&back, &data, &format!("level {level}"));
    }
    run(&mut pp(args!["compress", &src, "-o", dir.path().join("x.gz"), "-l", "13"])).fails(2, &["13"]);
}

/// The CPU path is the oracle later devices are compared with: its bytes
/// must not depend on the I/O path or the number of workers.
#[test]
fn compressed_bytes_are_identical_across_io_paths_and_thread_counts() {
    let dir = scratch();
    let data = mixed_data(3_000_017, 9);
    let src = dir.path().join("src");
    std::fs::write(&src, &data).unwrap();
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for (i, extra) in [vec![], vec!["--io", "sync"], vec!["--no-direct"], vec!["-T", "1"], vec!["-T", "3", "--queue-depth", "1"]].into_iter().enumerate() {
        let gz = dir.path().join(format!("{i}.gz"));
        let mut a = args!["compress", &src, "-o", &gz, "-q", "--block-size", "128K"];
        a.extend(extra.iter().map(OsString::from));
        run(&mut pp(a)).ok();
        outputs.push((format!("{extra:?}"), std::fs::read(&gz).unwrap()));
    }
    for (name, bytes) in &outputs[1..] {
        assert!(bytes == &outputs[0].1, "output with {name} differs from the default ({} vs {} bytes)", bytes.len(), outputs[0].1.len());
    }
}

/// A block size that no aligned read of at most 64 MiB holds a whole
/// number of: reads fall back to the page cache, and the report says why.
#[test]
fn odd_block_size_falls_back_to_buffered_reads_and_round_trips() {
    let dir = scratch();
    let data = mixed_data(2_500_000, 3);
    let src = dir.path().join("src");
    let gz = dir.path().join("src.gz");
    let back = dir.path().join("back");
    std::fs::write(&src, &data).unwrap();
    let report = run(&mut pp(args!["compress", &src, "-o", &gz, "--block-size", "1000003", "--json"])).ok().json();
    assert_eq!(report["files"][0]["members"].as_u64(), Some(3));
    assert_eq!(report["files"][0]["read_path"]["direct"].as_bool(), Some(false));
    let fb = report["fallbacks"].to_string();
    assert!(fb.contains("block size 1000003"), "the fallback must be reported: {fb}");
    run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, &data, "odd block size");
    run(&mut pp(args!["compress", &src, "-o", dir.path().join("zero.gz"), "--block-size", "0"])).fails(2, &["block size"]);
}

/// The bundled sample at the default block size (1 MiB), the case the
/// demo and the benchmark run.
#[test]
fn bundled_sample_round_trips_at_the_default_block_size() {
    let dir = scratch();
    let gz = dir.path().join("protein.fasta.gz");
    let back = dir.path().join("protein.fasta");
    let report = run(&mut pp(args!["compress", sample_path(), "-o", &gz, "--json"])).ok().json();
    assert_eq!(report["bytes_in"].as_u64(), Some(sample().len() as u64));
    assert_eq!(report["block_size_bytes"].as_u64(), Some(1 << 20));
    let ratio = report["ratio"].as_f64().unwrap();
    assert!(ratio > 1.5, "protein FASTA compresses well, ratio {ratio}");
    run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, sample(), "bundled sample");
    assert_eq!(std::fs::read(sample_path()).unwrap(), sample(), "the bundled sample must be unchanged");
}

/// Members larger than the parallel reader's window (56 MiB) are decoded
/// by the streaming decoder, which still checks their declared sizes.
#[test]
fn members_larger_than_the_read_window_stream_and_round_trip() {
    let dir = scratch();
    let data = random_bytes((64 << 20) + 12_345, 64); // stored: members of ~64 MiB
    let src = dir.path().join("big");
    let gz = dir.path().join("big.gz");
    let back = dir.path().join("back");
    std::fs::write(&src, &data).unwrap();
    run(&mut pp(args!["compress", &src, "-o", &gz, "--block-size", "64M", "-q"])).ok();
    let out = run(&mut pp(args!["verify", &gz, "--verbose", "-q"])).ok();
    assert!(out.stderr.contains("a member larger than the read window"), "{}", out.stderr);
    run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, &data, "64 MiB members");
}

/// A block device (a loop device over an image): read from storage by DMA (/dev is a
/// devtmpfs, and its nodes were taken for files in memory: read by CPU copies, booked so, and
/// staged through host memory on a device), its output as private as its node; without
/// --output, refused rather than made as /dev/loopN.gz.
#[test]
fn a_block_device_is_read_from_storage_and_its_output_is_as_private_as_it() {
    let dir = scratch();
    let d = dir.path();
    let image = d.join("img");
    let bytes: Vec<u8> = sample().iter().copied().cycle().take(3 << 20).collect();
    std::fs::write(&image, &bytes).unwrap();
    let Some(dev) = Loop::attach("a_block_device_is_read_from_storage_and_its_output_is_as_private_as_it", &image) else { return };
    let mode = |p: &std::path::Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777;
    let dev_mode = mode(std::path::Path::new(&dev.0));
    run(&mut pp(args!["compress", &dev.0])).fails(2, &["is a block device", "--output"]);
    assert!(!std::path::Path::new(&format!("{}.gz", dev.0)).exists(), "nothing made in /dev");
    for engine in ["cpu", "emulated"] {
        let out = d.join(format!("{engine}.gz"));
        let r: Value = run(&mut pp(args!["compress", &dev.0, "-o", &out, "-T", "2", "--engine", engine, "--json"])).ok().json();
        assert_eq!(r["fallbacks"], serde_json::json!([]), "{engine}: {r}");
        let from_storage = r["ledger"]["entries"].as_array().unwrap().iter().any(|e| e["purpose"] == "read_source" && e["source"]["kind"] == "storage" && e["mover"]["kind"] == "dma");
        assert!(from_storage, "{engine}: the device read by DMA: {}", r["ledger"]);
        if engine == "emulated" {
            assert_eq!(r["ledger"]["host_memory_payload_bytes"], 0, "{engine}: {}", r["ledger"]);
        }
        assert_eq!(mode(&out), dev_mode, "{engine}: the output as private as the device");
        let back = d.join(format!("{engine}.back"));
        run(&mut pp(args!["decompress", &out, "-o", &back])).ok();
        assert_file_eq(&back, &bytes, engine);
    }
    // A block device larger than the gzip stream written to it (`gzip -c f > /dev/sdX`): the
    // zeros after it are the device's, not an end lost to a crash (that is a file's).
    let stream = std::fs::read(d.join("cpu.gz")).unwrap();
    let mut image_bytes = stream.clone();
    image_bytes.resize(4 << 20, 0);
    let holder = d.join("holds-a-stream");
    std::fs::write(&holder, &image_bytes).unwrap();
    let dev2 = Loop::attach("a_block_device_is_read_from_storage_and_its_output_is_as_private_as_it", &holder).expect("a second loop device");
    let back = d.join("from-device.back");
    run(&mut pp(args!["decompress", &dev2.0, "-o", &back])).ok();
    assert_file_eq(&back, &bytes, "a stream read from a block device padded with zeros");
    run(&mut pp(args!["verify", &holder])).fails(9, &["zero bytes after the last member"]);
}

/// io_uring requests the kernel cancels (ECANCELED: no io-wq worker thread could start, at the
/// user's thread limit or a cgroup's pids.max) are done by pread/pwrite instead: the output is
/// exact, and the report says some I/O went by plain syscalls and why (it said io_uring
/// alone). Provoked for real: the job runs as nobody with just the threads it starts itself,
/// writing to a memory file system, whose writes go to io-wq's workers.
#[test]
fn transfers_the_kernel_cancelled_are_done_by_syscalls_and_the_report_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let test = "transfers_the_kernel_cancelled_are_done_by_syscalls_and_the_report_says_so";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return eprintln!("SKIPPED {test}: only root can run the job as nobody (a user's own thread limit counts all its processes)");
    }
    let Some(tools) = tools_or_skip(test, &["setpriv", "bash"]) else { return };
    // io-wq's workers are threads of the process, held to its user's limit, since Linux 5.12.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut version = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    if (version.next().unwrap_or(0), version.next().unwrap_or(0)) < (5, 12) {
        return eprintln!("SKIPPED {test}: Linux {} runs io_uring's workers apart from the process", release.trim());
    }
    let shm_is_tmpfs = std::fs::read_to_string("/proc/mounts").unwrap_or_default().lines().any(|l| l.split(' ').skip(1).take(2).eq(["/dev/shm", "tmpfs"]));
    let dir = match tempfile::Builder::new().prefix("peerpath-cancelled").tempdir_in("/dev/shm") {
        Ok(d) if shm_is_tmpfs => d,
        _ => return eprintln!("SKIPPED {test}: no tmpfs at /dev/shm"),
    };
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let src = dir.path().join("src");
    std::fs::write(&src, &sample()[..1 << 20]).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o644)).unwrap();
    let as_nobody = |script: &str| {
        let mut c = std::process::Command::new(&tools[0]);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&tools[1]).args(["-c", script, bin()]).current_dir(dir.path());
        c
    };
    if !as_nobody("test -x \"$0\" && test -w .").status().is_ok_and(|s| s.success()) {
        return eprintln!("SKIPPED {test}: nobody cannot run {} (a parent directory closed to other users?)", bin());
    }
    // The fewest threads the job runs with: none left for an io-wq worker.
    for threads in 1..=8 {
        let _ = std::fs::remove_file(dir.path().join("src.gz"));
        let mut c = as_nobody(&format!("ulimit -u {threads} && exec \"$0\" compress src -T 1 --json"));
        let o = run(&mut c);
        if !o.status.success() {
            assert!(o.stderr.contains("cannot start a thread"), "{threads} threads: {}", o.stderr);
            continue;
        }
        let r: Value = o.json();
        let fallbacks = r["fallbacks"].to_string();
        assert!(fallbacks.contains("cancelled by the kernel") && fallbacks.contains("done by pread/pwrite"), "{threads} threads: {fallbacks}");
        let back = run(&mut pp(args!["decompress", dir.path().join("src.gz"), "-o", "-", "-q"])).ok().stdout;
        assert_bytes_eq(&back, &sample()[..1 << 20], "the output written by syscalls");
        return;
    }
    panic!("the job never ran with up to 8 threads");
}

/// Several sources into an `-o DIR/` that is a symbolic link: through a link to a directory,
/// the outputs land there and round trip; a link that leads nowhere (to a name not there, or
/// round in a loop) is said to be one, naming where it leads, and nothing is made (it said
/// "cannot write out/: File exists (os error 17)", mkdir's word for the link itself).
#[test]
fn several_sources_into_a_directory_through_a_symbolic_link() {
    let dir = scratch();
    let d = dir.path();
    for n in ["a", "b", "c"] {
        std::fs::write(d.join(n), format!("{n}\n").repeat(1000)).unwrap();
    }
    std::fs::create_dir(d.join("real")).unwrap();
    std::os::unix::fs::symlink("real", d.join("out")).unwrap();
    run(pp(["compress", "-q", "a", "b", "c", "-o", "out/"]).current_dir(d)).ok();
    run(pp(["decompress", "-q", "real/a.gz", "real/b.gz", "real/c.gz", "-o", "back/"]).current_dir(d)).ok();
    for n in ["a", "b", "c"] {
        assert_file_eq(&d.join("back").join(n), format!("{n}\n").repeat(1000).as_bytes(), n);
    }
    std::os::unix::fs::symlink("nowhere", d.join("gone")).unwrap();
    std::os::unix::fs::symlink("loop2", d.join("loop1")).unwrap();
    std::os::unix::fs::symlink("loop1", d.join("loop2")).unwrap();
    for (link, to) in [("gone/", "nowhere"), ("gone", "nowhere"), ("loop1/", "loop2")] {
        let out = run(pp(["compress", "-q", "a", "b", "-o", link]).current_dir(d)).fails(11, &[&format!("cannot write {link}: a symbolic link to {to} that leads to no directory (")]);
        assert!(!d.join("nowhere").exists() && std::fs::read_link(d.join("gone")).is_ok(), "nothing made:\n{}", out.describe());
    }
    run(pp(["decompress", "-q", "real/a.gz", "real/b.gz", "-o", "gone/"]).current_dir(d)).fails(11, &["cannot write gone/: a symbolic link to nowhere"]);
}

/// gzip's -k/--keep is taken (sources are always kept): it was refused with the tip "a similar
/// argument exists: '--key-env'".
#[test]
fn keep_is_taken_as_gzip_takes_it() {
    let d = scratch();
    let src = d.path().join("k");
    std::fs::write(&src, mixed_data(70_000, 3)).unwrap();
    run(&mut pp(args!["compress", "-k", &src])).ok();
    std::fs::rename(&src, d.path().join("orig")).unwrap();
    run(&mut pp(args!["decompress", "--keep", d.path().join("k.gz")])).ok();
    assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(d.path().join("orig")).unwrap());
    assert!(d.path().join("k.gz").exists(), "the source is kept");
}
