//! No option is silently ignored: one that `compress`, `decompress`, `verify` or `peerpath gzip`
//! accepts but would not use with the engine or mode given is a usage error naming it, the
//! engine or mode, and what takes it (each of these ran, the option doing nothing).

mod common;

use common::*;

#[test]
fn options_the_engine_or_mode_would_not_use_are_refused() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), mixed_data(100_000, 3)).unwrap();
    run(&mut pp(args!["compress", "-q", d.join("src"), "-o", d.join("src.gz")])).ok();
    run(&mut pp(args!["compress", "-q", d.join("src"), "--ec", "2+1", "--ec-unit", "4K", "-o", d.join("set")])).ok();
    let shm = format!("shm:{}", d.display());
    let out = d.join("out");
    let compress = |extra: &[&str]| {
        let mut a = args!["compress", d.join("src"), "-o", &out];
        a.extend(extra.iter().map(os));
        a
    };
    let ec = |extra: &[&str]| {
        let mut a = args!["compress", d.join("src"), "--ec", "2+1", "--ec-unit", "4K", "-o", &out];
        a.extend(extra.iter().map(os));
        a
    };
    let decompress = |extra: &[&str]| {
        let mut a = args!["decompress", d.join("src.gz"), "-o", &out];
        a.extend(extra.iter().map(os));
        a
    };
    let decompress_ec = |extra: &[&str]| {
        let mut a = args!["decompress", "--ec", d.join("set"), "-o", &out];
        a.extend(extra.iter().map(os));
        a
    };
    let verify = |extra: &[&str]| {
        let mut a = args!["verify", d.join("src.gz")];
        a.extend(extra.iter().map(os));
        a
    };
    let cases: Vec<(Vec<std::ffi::OsString>, i32, Vec<&str>)> = vec![
        // compress: an emulated CSP's options where a GPU or the host CPU compresses.
        (compress(&["--engine", "gpu", "--device-workers", "2"]), 2, vec!["--device-workers with --engine gpu", "give --engine emulated or auto"]),
        (compress(&["--engine", "gpu", "--devices", "2"]), 2, vec!["--devices with --engine gpu"]),
        (compress(&["--device-memory-from", &shm]), 2, vec!["--device-memory-from with --engine cpu", "--engine cpu compresses on the host CPU"]),
        (compress(&["--engine", "cpu", "--device-memory-from", "shm"]), 2, vec!["--device-memory-from with --engine cpu"]),
        (compress(&["--engine", "gpu", "--device-memory-from", &shm]), 2, vec!["--device-memory-from with --engine gpu"]),
        // compress: a GPU's options where emulated CSPs or the host CPU compress.
        (compress(&["--engine", "emulated", "--gpu-streams", "2"]), 2, vec!["--gpu-streams with --engine emulated", "give --engine gpu or auto"]),
        (compress(&["--engine", "emulated", "--gpu-algorithm", "1"]), 2, vec!["--gpu-algorithm with --engine emulated"]),
        (compress(&["--engine", "emulated", "--nvcomp", "/x.so"]), 2, vec!["--nvcomp with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu", "1"]), 2, vec!["--gpu with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu-batch", "1M"]), 2, vec!["--gpu-batch with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu-chunk", "1M"]), 2, vec!["--gpu-chunk with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu-window", "64M"]), 2, vec!["--gpu-window with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu-staging", "device"]), 2, vec!["--gpu-staging with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu-io", "staged"]), 2, vec!["--gpu-io with --engine emulated"]),
        (compress(&["--engine", "emulated", "--gpu-memory-files", "mapped"]), 2, vec!["--gpu-memory-files with --engine emulated"]),
        (compress(&["--engine", "cpu", "--gpu-chunk", "1M"]), 2, vec!["--gpu-chunk with --engine cpu", "give --engine gpu or auto"]),
        (compress(&["--gpu-staging", "device"]), 2, vec!["--gpu-staging with --engine cpu"]),
        (compress(&["--gpu-io", "cufile"]), 2, vec!["--gpu-io with --engine cpu"]),
        (compress(&["--gpu", "1"]), 2, vec!["--gpu with --engine cpu"]),
        (compress(&["--gpu-batch-wait", "3"]), 2, vec!["--gpu-batch-wait with --engine cpu"]),
        // compress: each given at its default value, which the engine would ignore as well.
        (compress(&["--engine", "cpu", "--gpu", "0"]), 2, vec!["--gpu with --engine cpu"]),
        (compress(&["--gpu-streams", "1"]), 2, vec!["--gpu-streams with --engine cpu"]),
        (compress(&["--engine", "emulated", "--gpu-io", "auto"]), 2, vec!["--gpu-io with --engine emulated"]),
        (compress(&["--gpu-batch", "0"]), 2, vec!["--gpu-batch with --engine cpu"]),
        (compress(&["--gpu-staging", "commands"]), 2, vec!["--gpu-staging with --engine cpu"]),
        (compress(&["--engine", "emulated", "--gpu-memory-files", "staged"]), 2, vec!["--gpu-memory-files with --engine emulated"]),
        (compress(&["--engine", "cpu", "--devices", "1"]), 2, vec!["--devices with --engine cpu"]),
        (compress(&["--engine", "gpu", "--devices", "1"]), 2, vec!["--devices with --engine gpu"]),
        // compress: options of a mode not asked for.
        (compress(&["--engine", "emulated", "--sysfs", "/sys"]), 2, vec!["--sysfs", "--device-memory-from p2p:BDF"]),
        (compress(&["--engine", "gpu", "--gpu-map-granule", "1M"]), 2, vec!["--gpu-map-granule", "--gpu-memory-files mapped"]),
        (compress(&["--engine", "gpu", "--gpu-batch-wait", "3"]), 2, vec!["--gpu-batch-wait", "give --gpu-batch"]),
        // compress --ec: the chain sets up its one device itself.
        (ec(&["--engine", "emulated", "--gpu-chunk", "1M"]), 2, vec!["--gpu-chunk with --ec --engine emulated", "give --engine gpu,"]),
        (ec(&["--engine", "gpu", "--gpu-window", "64M"]), 2, vec!["--gpu-window with --ec --engine gpu"]),
        (ec(&["--engine", "gpu", "--gpu-streams", "2"]), 2, vec!["--gpu-streams with --ec --engine gpu"]),
        (ec(&["--engine", "gpu", "--device-memory-from", "shm"]), 2, vec!["--device-memory-from with --ec --engine gpu"]),
        (ec(&["--engine", "emulated", "--device-memory-from", "shm"]), 2, vec!["--device-memory-from with --ec"]),
        (ec(&["--gpu", "1"]), 2, vec!["--gpu with --ec --engine cpu"]),
        (ec(&["--gpu", "0"]), 2, vec!["--gpu with --ec --engine cpu"]),
        (ec(&["--engine", "gpu", "--gpu-streams", "1"]), 2, vec!["--gpu-streams with --ec --engine gpu"]),
        (ec(&["--engine", "emulated", "--devices", "1"]), 2, vec!["--devices with --ec", "the chain runs on one device"]),
        // compress --ec and decompress --ec: I/O options neither chain takes.
        (ec(&["--queue-depth", "4"]), 2, vec!["--queue-depth with --ec", "-T"]),
        (ec(&["--engine", "emulated", "--no-sync"]), 2, vec!["--no-sync with --ec", "always syncs"]),
        (decompress_ec(&["--queue-depth", "4"]), 2, vec!["--queue-depth with --ec"]),
        (decompress_ec(&["--engine", "emulated", "--no-sync"]), 2, vec!["--no-sync with --ec"]),
        // decompress and verify: a GPU's options where the host CPU or an emulated CSP decodes.
        (decompress(&["--gpu-batch", "8M"]), 2, vec!["--gpu-batch with --engine cpu", "--engine cpu decodes on the host CPU", "give --engine gpu"]),
        (decompress(&["--nvcomp", "/x.so"]), 2, vec!["--nvcomp with --engine cpu"]),
        (decompress(&["--gpu", "1"]), 2, vec!["--gpu with --engine cpu"]),
        (decompress_ec(&["--gpu", "1"]), 2, vec!["--gpu with --ec --engine cpu"]),
        (decompress_ec(&["--engine", "emulated", "--gpu-batch", "8M"]), 2, vec!["--gpu-batch with --ec --engine emulated"]),
        (decompress_ec(&["--engine", "gpu", "--gpu-batch", "8M"]), 2, vec!["--gpu-batch with --ec --engine gpu"]),
        (verify(&["--gpu-batch", "8M"]), 2, vec!["--gpu-batch with --engine cpu"]),
        (verify(&["--gpu", "1"]), 2, vec!["--gpu with --engine cpu"]),
        (verify(&["--nvcomp", "/x.so"]), 2, vec!["--nvcomp with --engine cpu"]),
        (decompress(&["--gpu", "0"]), 2, vec!["--gpu with --engine cpu"]),
        (decompress_ec(&["--engine", "emulated", "--gpu", "0"]), 2, vec!["--gpu with --ec --engine emulated"]),
        (verify(&["--engine", "cpu", "--gpu", "0"]), 2, vec!["--gpu with --engine cpu"]),
        // peerpath gzip: peerpath's own options where they do nothing (gzip's usage error is 1).
        (args!["gzip", "--allow-no-end-member", "-c", d.join("src")], 1, vec!["--allow-no-end-member", "-d, -t or -l"]),
        (args!["gzip", "-l", "--report", d.join("src.gz")], 1, vec!["--report with -l", "--json"]),
    ];
    for (args, code, needles) in cases {
        let o = run(&mut pp(&args));
        assert!(o.code() == Some(code) && needles.iter().all(|n| o.stderr.contains(n)), "{args:?}: {}", o.describe());
        assert!(o.stdout.is_empty(), "{args:?} wrote: {}", o.describe());
        assert_dir_holds(d, &["set", "src", "src.gz"]);
    }
    // `--engine auto` may pick any device: the options of each are taken there.
    run(&mut pp(compress(&["--engine", "auto", "--gpu-streams", "2", "--device-workers", "1", "-q"]))).ok();
    assert!(out.is_file());
    // A GPU's options at their default values are taken where a GPU may run (without one here,
    // the host CPU does the work, said).
    let gpu_defaults = ["--gpu", "0", "--gpu-streams", "1", "--gpu-io", "auto", "--gpu-batch", "0", "--gpu-staging", "commands", "--gpu-memory-files", "staged", "-q", "-f"];
    run(&mut pp(compress(&[&["--engine", "auto", "--devices", "1"][..], &gpu_defaults].concat()))).ok();
    run(&mut pp(compress(&[&["--engine", "gpu"][..], &gpu_defaults].concat()))).ok();
    run(&mut pp(decompress(&["--engine", "gpu", "--gpu", "0", "-q", "-f"]))).ok();
    run(&mut pp(verify(&["--engine", "gpu", "--gpu", "0", "-q"]))).ok();
}

/// `--gpu N` of encrypt, decrypt, ec, dedup store and scan where no GPU runs is a usage error,
/// `--gpu 0` too: it was taken, and ignored, as the value --gpu has when it is not given.
#[test]
fn gpu_at_its_default_is_refused_where_no_gpu_runs() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), b">a\nKLVK\n>b\nKK\n").unwrap();
    run(&mut pp(args!["keygen", "-o", d.join("key")])).ok();
    run(&mut pp(args!["encrypt", "-q", d.join("src"), "--key-file", d.join("key"), "-o", d.join("src.ppenc")])).ok();
    run(&mut pp(args!["ec", "encode", "-q", d.join("src"), "-k", "2", "-m", "1", "-o", d.join("set")])).ok();
    let key = d.join("key");
    let out = d.join("out");
    let cases = [
        args!["encrypt", d.join("src"), "--key-file", &key, "-o", &out, "--gpu", "0"],
        args!["encrypt", d.join("src"), "--key-file", &key, "-o", &out, "--engine", "emulated", "--gpu", "0"],
        args!["decrypt", d.join("src.ppenc"), "--key-file", &key, "-o", &out, "--gpu", "0"],
        args!["ec", "encode", d.join("src"), "-k", "2", "-m", "1", "-o", &out, "--gpu", "0"],
        args!["ec", "verify", d.join("set"), "--engine", "emulated", "--gpu", "0"],
        args!["ec", "decode", d.join("set"), "-o", &out, "--gpu", "0"],
        args!["dedup", "store", d.join("src"), "-s", &out, "--gpu", "0"],
        args!["scan", d.join("src"), "--motif", "K", "-c", "--gpu", "0"],
    ];
    for a in cases {
        let o = run(&mut pp(&a));
        assert!(o.code() == Some(2) && o.stderr.contains("--gpu needs --engine gpu") && o.stdout.is_empty(), "{a:?}: {}", o.describe());
        assert_dir_holds(d, &["key", "set", "src", "src.ppenc"]);
    }
    // With --engine gpu it is taken (the host CPU does the work where there is no GPU, said).
    run(&mut pp(args!["encrypt", "-q", d.join("src"), "--key-file", &key, "-o", &out, "--engine", "gpu", "--gpu", "0"])).ok();
    run(&mut pp(args!["scan", d.join("src"), "--motif", "K", "-c", "--engine", "gpu", "--gpu", "0"])).ok();
}

/// The chains take --no-direct (a device then reads through the page cache) and --verbose (how
/// the source or shards were read, on stderr, as a plain compress says it); both did nothing.
#[test]
fn chains_take_no_direct_and_verbose() {
    let dir = scratch();
    let d = dir.path();
    let data = mixed_data(300_000, 5);
    std::fs::write(d.join("src"), &data).unwrap();
    for engine in ["cpu", "emulated"] {
        let (set, out) = (d.join(format!("set-{engine}")), d.join(format!("out-{engine}")));
        let o = run(&mut pp(args!["compress", "-q", "-v", "--no-direct", "--engine", engine, d.join("src"), "--ec", "2+1", "--ec-unit", "4K", "-o", &set]));
        assert!(o.code() == Some(0) && o.stderr.contains("src: read via pread/pwrite (buffered)"), "{engine}: {}", o.describe());
        let o = run(&mut pp(args!["decompress", "-q", "-v", "--no-direct", "--engine", engine, "--ec", &set, "-o", &out]));
        assert!(o.code() == Some(0) && o.stderr.contains(&format!("set-{engine}: shards read via pread/pwrite (buffered)")), "{engine}: {}", o.describe());
        assert_eq!(std::fs::read(&out).unwrap(), data);
    }
}

/// A --gpu-batch-wait out of range is a usage error, not a panic (a negative or NaN one was made
/// a Duration before it was checked: exit 101).
#[test]
fn a_gpu_batch_wait_out_of_range_is_a_usage_error() {
    let dir = scratch();
    std::fs::write(dir.path().join("src"), mixed_data(10_000, 4)).unwrap();
    for wait in ["-1", "NaN", "1001"] {
        run(&mut pp(args!["compress", dir.path().join("src"), "-o", dir.path().join("out"), "--engine", "gpu", "--gpu-batch", "1M", &format!("--gpu-batch-wait={wait}")])).fails(2, &["--gpu-batch-wait", "give 0 to 1000 milliseconds"]);
        assert!(!dir.path().join("out").exists());
    }
}
