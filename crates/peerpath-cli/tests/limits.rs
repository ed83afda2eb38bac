//! Running out of what the system lends a process: descriptors (`ulimit -n`),
//! address space (`ulimit -v`), threads (`ulimit -u`). Each is an error that
//! says so, with an exit code of docs/usage.md's table, never a panic (101) or
//! an abort, and nothing of the job is left behind.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// `peerpath ARGS` in `dir` under the shell's `ulimit LIMIT` (`-n 14`, `-v 50000`), soft
/// and hard (the job cannot raise it back); with `named`, its temporary files have names
/// (`PEERPATH_NAMED_TEMPORARIES`), so that one left behind shows.
fn limited(dir: &Path, limit: &str, named: bool, args: &[&str]) -> Out {
    let mut c = Command::new("sh");
    c.arg("-c").arg(format!("ulimit {limit} && exec \"$0\" \"$@\"")).arg(bin()).args(args).current_dir(dir);
    if named {
        c.env("PEERPATH_NAMED_TEMPORARIES", "1");
    }
    run(&mut c)
}

/// Neither a panic (101) nor a signal (an abort: a failed allocation).
#[track_caller]
fn no_panic(out: &Out) {
    assert!(out.code().is_some() && out.code() != Some(101) && !out.stderr.contains("panicked"), "a panic or a signal:\n{}", out.describe());
}

/// Names in `dir` that are a job's temporaries (files and scratch directories).
fn temporaries(dir: &Path) -> Vec<String> {
    names_in(dir).into_iter().filter(|n| n.contains(".peerpath-tmp.")).collect()
}

#[test]
fn ec_encode_out_of_descriptors_leaves_nothing_behind() {
    let dir = scratch();
    std::fs::write(dir.path().join("text.txt"), &sample()[..1 << 20]).unwrap();
    let set = dir.path().join("set");
    let (mut made, mut refused) = (0, 0);
    // From too few to open the shards, through the scratch directory's publishing
    // (14 on the machine the defect was found on), to enough.
    for n in 8..=28 {
        let out = limited(dir.path(), &format!("-n {n}"), false, &["ec", "encode", "-q", "-k4", "-m2", "-o", "set", "text.txt"]);
        no_panic(&out);
        if out.status.success() {
            made += 1;
            let mut want: Vec<String> = (0..6).map(|i| format!("shard-{i:03}")).collect();
            want.push("manifest.json".into());
            want.sort();
            assert_eq!(names_in(&set), want, "ulimit -n {n}: the set is whole:\n{}", out.describe());
            std::fs::remove_dir_all(&set).unwrap();
        } else {
            refused += 1;
            let out = out.fails(11, &["Too many open files"]);
            assert!(!set.exists(), "ulimit -n {n}: no set:\n{}", out.describe());
        }
        assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "ulimit -n {n}: nothing left behind");
    }
    assert!(made > 0 && refused > 0, "the limits tried span the job's need ({made} made, {refused} refused)");
}

#[test]
fn out_of_address_space_is_an_error_not_a_panic() {
    let dir = scratch();
    std::fs::write(dir.path().join("text.txt"), sample()).unwrap();
    pp(args!["compress", "-q", "text.txt"]).current_dir(dir.path()).status().map(|s| assert!(s.success())).unwrap();
    let jobs: [&[&str]; 3] = [&["verify", "-q", "text.txt.gz"], &["decompress", "-f", "-q", "text.txt.gz", "-o", "back.txt"], &["compress", "-f", "-q", "text.txt", "-o", "again.gz"]];
    let (mut ran, mut out_of_memory) = (0, 0);
    // KiB of address space: 50000 is where `verify` panicked mapping its read pool (64 MiB).
    for kib in [30_000, 40_000, 50_000, 65_000, 80_000, 100_000, 120_000, 150_000, 200_000, 300_000, 400_000] {
        for job in jobs {
            let out = limited(dir.path(), &format!("-v {kib}"), true, job);
            if out.stderr.contains("error while loading shared libraries") {
                continue; // too little for the program to start at all
            }
            no_panic(&out);
            let target = dir.path().join(if job[0] == "decompress" { "back.txt" } else { "again.gz" });
            if out.status.success() {
                ran += 1;
                let _ = std::fs::remove_file(&target);
            } else {
                // Its buffers, or a thread's stack (pthread_create says EAGAIN then, as at the thread limit).
                let out = out.fails(1, &[]);
                if out.stderr.contains("out of memory: cannot map ") {
                    out_of_memory += 1;
                    assert!(out.stderr.contains("ulimit -v"), "{}", out.describe());
                } else {
                    assert!(out.stderr.contains("cannot start a thread") && out.stderr.contains("memory for its stack"), "{}", out.describe());
                }
                assert!(!target.exists(), "ulimit -v {kib} {job:?}: no target:\n{}", out.describe());
            }
            assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "ulimit -v {kib} {job:?}: nothing left behind");
        }
    }
    assert!(out_of_memory > 0, "some limit tried was too little for a job's buffers");
    assert!(ran > 0, "some limit tried was enough");
}

/// `peerpath ARGS` run in `dir` where no new thread can start: the process's user may
/// have 1 process (bash's `ulimit -u 1`), which it has. Root is not held to that
/// limit: it runs the job as nobody (setpriv), in a directory nobody may write.
/// None, saying why, where that cannot be arranged.
fn without_threads(test: &str, dir: &Path, args: &[&str]) -> Option<Out> {
    let Some(bash) = tool("bash") else {
        eprintln!("SKIPPED {test}: no bash (for ulimit -u)");
        return None;
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = if root {
        let Some(setpriv) = tool("setpriv") else {
            eprintln!("SKIPPED {test}: root is not held to a thread limit, and there is no setpriv to run the job as nobody");
            return None;
        };
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        // Nobody must reach the binary and the directory (a checkout under /root is out of reach).
        let reach = Command::new(&setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bash)
            .args(["-c", "test -x \"$0\" && cd \"$1\" && test -w .", bin()])
            .arg(dir)
            .status();
        if !reach.is_ok_and(|s| s.success()) {
            eprintln!("SKIPPED {test}: nobody cannot reach {} or {} (a parent directory closed to other users?)", bin(), dir.display());
            return None;
        }
        let mut c = Command::new(setpriv);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(bash);
        c
    } else {
        Command::new(bash)
    };
    c.arg("-c").arg("ulimit -u 1 && exec \"$0\" \"$@\"").arg(bin()).args(args).current_dir(dir).env("PEERPATH_NAMED_TEMPORARIES", "1");
    let out = run(&mut c);
    if root && out.stderr.contains("setpriv:") {
        eprintln!("SKIPPED {test}: setpriv could not run the job as nobody: {}", out.stderr.trim());
        return None;
    }
    Some(out)
}

/// The source for the thread-limit tests, readable by nobody.
fn readable_sample(dir: &Path) {
    let src = dir.join("text.txt");
    std::fs::write(&src, &sample()[..1 << 20]).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o644)).unwrap();
}

#[test]
fn no_thread_for_compress_or_verify_is_an_error_that_says_so() {
    let test = "no_thread_for_compress_or_verify_is_an_error_that_says_so";
    let dir = scratch();
    readable_sample(dir.path());
    pp(args!["compress", "-q", "text.txt", "-o", "text.txt.gz"]).current_dir(dir.path()).status().map(|s| assert!(s.success())).unwrap();
    std::fs::set_permissions(dir.path().join("text.txt.gz"), std::fs::Permissions::from_mode(0o644)).unwrap();
    for job in [&["compress", "-q", "text.txt", "-o", "x.gz"][..], &["verify", "-q", "text.txt.gz"], &["decompress", "-q", "text.txt.gz", "-o", "back.txt"]] {
        let Some(out) = without_threads(test, dir.path(), job) else { return };
        no_panic(&out);
        let out = out.fails(1, &["cannot start a thread", "Resource temporarily unavailable", "thread limit"]);
        assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "{job:?}: nothing left behind:\n{}", out.describe());
        assert!(!dir.path().join("x.gz").exists() && !dir.path().join("back.txt").exists(), "{job:?}: no target");
    }
}

#[test]
fn no_thread_for_dedup_store_is_an_error_that_says_so() {
    let test = "no_thread_for_dedup_store_is_an_error_that_says_so";
    let dir = scratch();
    readable_sample(dir.path());
    // A file of 4 MiB or less is cut and fingerprinted on the reading thread: no thread to start.
    let Some(out) = without_threads(test, dir.path(), &["dedup", "store", "-q", "--store", "st", "text.txt"]) else { return };
    no_panic(&out);
    out.ok();
    // A larger one needs the chunker's threads: an internal error (exit 1) that says what to do,
    // not "error reading" (exit 12: it was).
    let big = dir.path().join("big.bin");
    std::fs::write(&big, mixed_data(8 << 20, 1)).unwrap();
    std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o644)).unwrap();
    let Some(out) = without_threads(test, dir.path(), &["dedup", "store", "-q", "--store", "st", "big.bin"]) else { return };
    no_panic(&out);
    let out = out.fails(1, &["cannot start a thread", "thread limit", "give fewer threads (-T)"]);
    assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "nothing left behind:\n{}", out.describe());
}

/// `ec encode` (and encrypt, decrypt: their workers) where no thread can start: their workers
/// take tasks in turn, so the main thread does the whole job (it panicked, exit 101, and left
/// the shards' named temporaries behind).
#[test]
fn no_thread_for_ec_encode_still_encodes_and_leaves_nothing() {
    let test = "no_thread_for_ec_encode_still_encodes_and_leaves_nothing";
    let dir = scratch();
    readable_sample(dir.path());
    let Some(out) = without_threads(test, dir.path(), &["ec", "encode", "-q", "-k2", "-m1", "-o", "ecd", "text.txt"]) else { return };
    no_panic(&out);
    let out = out.ok();
    assert_eq!(temporaries(dir.path()), Vec::<String>::new(), "nothing left behind:\n{}", out.describe());
    let back = dir.path().join("back");
    run(&mut pp(args!["ec", "decode", dir.path().join("ecd"), "-o", &back, "-q"])).ok();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(dir.path().join("text.txt")).unwrap());
}

/// `verify` reads its files one after another and writes none: 200 files are checked under a
/// hard `ulimit -n 64`, as `gzip -t` checks them (it refused, "200 files at once need about
/// 1032 open files", as if it held them all open), and a bad one among them is still named.
#[test]
fn verify_of_many_files_fits_a_small_descriptor_limit() {
    let dir = scratch();
    let names: Vec<String> = (0..200).map(|i| format!("f{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(dir.path().join(n), format!("file {i}\n").repeat(i + 1)).unwrap();
    }
    let mut a = vec!["compress", "-q", "-o", "gz/"];
    a.extend(names.iter().map(String::as_str));
    run(pp(a).current_dir(dir.path())).ok();
    let gz: Vec<String> = names.iter().map(|n| format!("gz/{n}.gz")).collect();
    let mut v = vec!["verify", "-q"];
    v.extend(gz.iter().map(String::as_str));
    let out = limited(dir.path(), "-n 64", false, &v);
    no_panic(&out);
    out.ok();
    std::fs::write(dir.path().join("gz/f7.gz"), b"not gzip").unwrap();
    limited(dir.path(), "-n 64", false, &v).fails(8, &["gz/f7.gz"]);
}

/// A job asks for the descriptors it holds: two a source for `compress` on the CPU (the source
/// and its unnamed output), one for `decompress`. 300 files fit a hard `ulimit -n 1024` both
/// ways (it asked for 7 a source, "300 files at once need about 2132 open files", and refused
/// them), and what does not fit is still refused before anything is made, saying how many would.
#[test]
fn many_files_ask_only_for_the_descriptors_they_hold() {
    let dir = scratch();
    let names: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(dir.path().join(n), format!("file {i}\n").repeat(i + 1)).unwrap();
    }
    let mut a = vec!["compress", "-q", "-o", "gz/"];
    a.extend(names.iter().map(String::as_str));
    let out = limited(dir.path(), "-n 1024", false, &a);
    no_panic(&out);
    out.ok();
    let gz: Vec<String> = names.iter().map(|n| format!("gz/{n}.gz")).collect();
    let mut d = vec!["decompress", "-q", "-o", "back/"];
    d.extend(gz.iter().map(String::as_str));
    limited(dir.path(), "-n 1024", false, &d).ok();
    for (i, n) in names.iter().enumerate() {
        assert_eq!(std::fs::read(dir.path().join("back").join(n)).unwrap(), format!("file {i}\n").repeat(i + 1).as_bytes(), "{n}");
    }
    let mut a = vec!["compress", "-q", "-o", "small/"];
    a.extend(names.iter().map(String::as_str));
    limited(dir.path(), "-n 256", false, &a).fails(2, &["300 files at once need about 632 open files", "raise `ulimit -n`, or give at most 112 files at a time"]);
    assert!(!dir.path().join("small").exists(), "nothing made");
}
