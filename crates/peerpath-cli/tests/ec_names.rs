//! `peerpath ec` and names: a name with a newline stays on its message's line and one that is
//! not UTF-8 keeps its bytes (quoted as GNU `ls` quotes them; `target_bytes` in JSON, the
//! source's `source_name_bytes` in the manifest), and the directories ec writes in are held
//! as compress holds its output directory, so that another job that made one and fails does
//! not remove it under ec.

mod common;

use common::*;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// JSON's byte list of a name, as the `*_bytes` fields hold it.
fn byte_list(name: &[u8]) -> serde_json::Value {
    name.iter().map(|&b| serde_json::Value::from(b)).collect()
}

/// A command's standard error (or output) is one line.
#[track_caller]
fn one_line(text: &str, o: &Out) {
    assert_eq!(text.lines().count(), 1, "a name split the line:\n{}", o.describe());
}

/// `src` (40,000 bytes here: 5 stripes) as a set of RS(2, 1) in units of 4K at `set`, run in `d`.
fn encode(d: &Path, src: &Path, set: &OsStr, extra: &[&OsStr]) -> Out {
    let mut a = args!["ec", "encode", src, "-k", "2", "-m", "1", "--unit", "4K", "-o", set];
    a.extend(extra.iter().map(OsString::from));
    run(pp(a).current_dir(d)).ok()
}

/// The set's name has a newline and a byte that is not UTF-8: encode's, verify's and repair's
/// lines, and decode's error, name it on their one line, as `ls` quotes it. (It split the
/// line, and the byte read U+FFFD.)
#[test]
fn ec_messages_name_a_set_on_one_line_with_its_bytes() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), random_bytes(40_000, 5)).unwrap();
    // Named relative to the scratch directory: its name as given is what messages say.
    let (name, quoted) = (OsStr::from_bytes(b"set\n\xfe"), r"'set'$'\n\376'");
    let o = encode(d, Path::new("src"), name, &[]);
    one_line(&o.stdout_str(), &o);
    assert!(o.stdout_str().starts_with(&format!("{quoted}: 5 stripes of RS(2, 1)")), "{}", o.describe());
    let o = run(pp(args!["ec", "verify", name]).current_dir(d)).ok();
    assert_eq!(o.stdout_str(), format!("{quoted}: all 3 shards intact (5 stripes)\n"), "{}", o.describe());
    std::fs::remove_file(d.join(name).join("shard-000")).unwrap();
    let o = run(pp(args!["ec", "repair", name]).current_dir(d)).ok();
    one_line(&o.stdout_str(), &o);
    assert!(o.stdout_str().starts_with(&format!("{quoted}: rebuilt shard-000 in ")), "{}", o.describe());
    // The set's files are never ec decode's output: the set named in one line.
    let o = run(pp(args!["ec", "decode", name, "-o", d.join(name).join("manifest.json"), "--force"]).current_dir(d)).fails(5, &[&format!("a file of the set {quoted}")]);
    one_line(&o.stderr, &o);
}

/// JSON keeps the set's name's bytes (`target_bytes`, as the job report's), and the manifest
/// the source's (`source_name_bytes`): two sources whose names read the same as text made
/// manifests that named them alike.
#[test]
fn ec_json_and_the_manifest_keep_the_bytes_of_names() {
    let dir = scratch();
    let d = dir.path();
    let sets = [(b"src\xff".as_slice(), b"set\xff".as_slice()), (b"src\xfe", b"set\xfe")];
    for (src, set) in sets {
        std::fs::write(d.join(OsStr::from_bytes(src)), random_bytes(40_000, 5)).unwrap();
        let v = encode(d, Path::new(OsStr::from_bytes(src)), OsStr::from_bytes(set), &[OsStr::new("--json")]).json();
        assert_eq!((&v["target"], &v["target_bytes"]), (&"set\u{fffd}".into(), &byte_list(set)), "{v}");
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join(OsStr::from_bytes(set)).join("manifest.json")).unwrap()).unwrap();
        assert_eq!((&m["source"], &m["source_name_bytes"]), (&"src\u{fffd}".into(), &byte_list(src)), "{m}");
    }
    let (set, bytes) = (OsStr::from_bytes(sets[0].1), byte_list(sets[0].1));
    assert_eq!(run(pp(args!["ec", "verify", set, "--json"]).current_dir(d)).ok().json()["target_bytes"], bytes);
    std::fs::remove_file(d.join(set).join("shard-002")).unwrap();
    let v = run(pp(args!["ec", "repair", set, "--json"]).current_dir(d)).ok().json();
    assert_eq!((&v["target_bytes"], &v["shards_written"]), (&bytes, &serde_json::json!(["shard-002"])), "{v}");
}

/// Placed shards, named after a set whose name has a newline, are named on one line in
/// verify's and repair's words; a shard directory whose path is not UTF-8 with its bytes.
#[test]
fn ec_messages_name_placed_shards_and_shard_directories_on_one_line() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), random_bytes(40_000, 5)).unwrap();
    let drives: Vec<_> = (0..3).map(|i| d.join(format!("drive{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let placed: Vec<OsString> = drives.iter().flat_map(|p| args!["--shard-dir", p]).collect();
    let placed: Vec<&OsStr> = placed.iter().map(OsString::as_os_str).collect();
    encode(d, Path::new("src"), OsStr::new("p\nq"), &placed);
    let shard = format!("'{}/p'$'\\n''q.shard-001'", drives[1].display());
    std::fs::remove_file(drives[1].join("p\nq.shard-001")).unwrap();
    let o = run(pp(args!["ec", "verify", "p\nq"]).current_dir(d)).fails(6, &[&format!("missing or corrupt units in {shard}: repairable")]);
    one_line(&o.stderr, &o);
    let o = run(pp(args!["ec", "repair", "p\nq"]).current_dir(d)).ok();
    one_line(&o.stdout_str(), &o);
    assert!(o.stdout_str().contains(&format!(": rebuilt {shard} in ")), "{}", o.describe());
    let bad = d.join(OsStr::from_bytes(b"bad\xff"));
    std::fs::create_dir(&bad).unwrap();
    let mut a = args!["ec", "encode", "src", "-k", "2", "-m", "1", "--unit", "4K", "-o", "never"];
    drives.iter().take(2).chain([&bad]).for_each(|p| a.extend(args!["--shard-dir", p]));
    let o = run(pp(a).current_dir(d)).fails(2, &[&format!("its path '{}/bad'$'\\377' is not UTF-8", d.canonicalize().unwrap().display())]);
    assert!(!o.stderr.contains('\u{fffd}'), "{}", o.describe());
}

/// Whether process `pid` holds a flock on the file whose inode is `ino` (/proc/locks; a
/// waiter's line, "->", is not a holder's).
fn holds_lock(pid: u32, ino: u64) -> bool {
    let (pid, ino) = (pid.to_string(), ino.to_string());
    std::fs::read_to_string("/proc/locks").unwrap_or_default().lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&"FLOCK") && f.get(4) == Some(&pid.as_str()) && f.get(5).and_then(|d| d.rsplit(':').next()) == Some(ino.as_str())
    })
}

/// Whether process `pid` waits in a write to its standard error (/proc/PID/syscall).
fn writing_stderr(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall")).is_ok_and(|s| s.starts_with(&format!("{} 0x2 ", libc::SYS_write)))
}

/// Runs the ec command `job`, which writes in `out` but does not make it, while another job
/// that made `out` (`decompress FIFO -o out/`) fails: whether `out` was still there once the
/// other job had ended, and how `job` ended. `job` is held at its first line on standard
/// error, a pipe kept full until the other job has failed: with `--engine gpu --gpu 99` it
/// says it falls back to the host CPU before it writes anything. Deterministic: the other
/// job's source is a FIFO this test feeds.
fn beside_a_failing_job(d: &Path, out: &Path, job: Vec<OsString>) -> (bool, Out) {
    let fifo = d.join("not-gzip.gz");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut other = pp(args!["decompress", &fifo, "-o", format!("{}/", out.display()), "-q"]).stderr(std::process::Stdio::null()).spawn().unwrap();
    let to_other = loop {
        use std::os::unix::fs::OpenOptionsExt;
        match std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo) {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                assert!(other.try_wait().unwrap().is_none(), "the other job ended before it opened its source");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => panic!("{}: {e}", fifo.display()),
        }
    };
    assert!(out.is_dir(), "the other job made {}", out.display());
    // A pipe full to its last byte, then blocking again: the job's first write to it waits.
    let (mut from_job, to_job) = std::io::pipe().unwrap();
    rustix::fs::fcntl_setfl(&to_job, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut junk = 0;
    for chunk in [4096, 1] {
        while (&to_job).write(&vec![b'.'; chunk]).is_ok() {
            junk += chunk;
        }
    }
    rustix::fs::fcntl_setfl(&to_job, rustix::fs::OFlags::empty()).unwrap();
    let what = format!("{job:?}");
    let mut child = pp(job).stdout(std::process::Stdio::piped()).stderr(to_job).spawn().unwrap();
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(out).unwrap());
    let start = std::time::Instant::now();
    while !writing_stderr(child.id()) && !holds_lock(child.id(), ino) && child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < HANG_DEADLINE, "{what} neither wrote to standard error nor held {}", out.display());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    (&to_other).write_all(b"not gzip").unwrap();
    drop(to_other);
    assert_eq!(wait_deadline(&mut other, HANG_DEADLINE, "the failing job").code(), Some(8));
    let stayed = out.is_dir();
    let mut said = Vec::new();
    from_job.read_to_end(&mut said).unwrap();
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    let status = wait_deadline(&mut child, HANG_DEADLINE, &what);
    std::fs::remove_file(&fifo).unwrap();
    (stayed, Out { status, stdout, stderr: String::from_utf8_lossy(&said[junk..]).into_owned(), what })
}

/// `--engine gpu --gpu 99`: a fallback to the host CPU, said on standard error first.
fn with_fallback(mut job: Vec<OsString>) -> Vec<OsString> {
    job.extend(args!["--engine", "gpu", "--gpu", "99"]);
    job
}

/// 6 stripes (and 100 bytes) of RS(2, 1) in units of 4K.
fn source(d: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let data = random_bytes(3 * 2 * 4096 + 100, 9);
    std::fs::write(d.join("src"), &data).unwrap();
    (d.join("src"), data)
}

/// ec encode -o DIR/SET holds DIR: another job that made it (`-o DIR/`) and failed while the
/// shards had no name yet (O_TMPFILE, so it looked empty) removed it, and encode failed, exit 11.
#[test]
fn ec_encode_holds_the_directory_it_makes_the_set_in() {
    let dir = scratch();
    let d = dir.path();
    let (src, _) = source(d);
    let out = d.join("out");
    let (stayed, o) = beside_a_failing_job(d, &out, with_fallback(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", out.join("set")]));
    assert!(stayed && o.status.success(), "the directory it writes in stayed: {stayed}\n{}", o.describe());
    assert!(o.stderr.contains("FALLBACK"), "{}", o.describe());
    run(&mut pp(args!["ec", "verify", out.join("set")])).ok();
}

/// ec decode -o DIR/FILE holds DIR, as decompress does.
#[test]
fn ec_decode_holds_the_directory_it_restores_in() {
    let dir = scratch();
    let d = dir.path();
    let (src, data) = source(d);
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", d.join("set")])).ok();
    let back = d.join("back");
    let (stayed, o) = beside_a_failing_job(d, &back, with_fallback(args!["ec", "decode", d.join("set"), "-o", back.join("src")]));
    assert!(stayed && o.status.success(), "the directory it writes in stayed: {stayed}\n{}", o.describe());
    assert_file_eq(&back.join("src"), &data, "decoded");
}

/// ec repair holds the directories it rebuilds shards in: here a placed shard's, a drive
/// replaced by a directory that another job made (and, failing, removed).
#[test]
fn ec_repair_holds_the_directories_it_rebuilds_shards_in() {
    let dir = scratch();
    let d = dir.path();
    let (src, _) = source(d);
    let drives: Vec<_> = (0..3).map(|i| d.join(format!("drive{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let mut encode = args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", d.join("placed")];
    drives.iter().for_each(|p| encode.extend(args!["--shard-dir", p]));
    run(&mut pp(&encode)).ok();
    let before = std::fs::read(drives[1].join("placed.shard-001")).unwrap();
    std::fs::remove_dir_all(&drives[1]).unwrap();
    let (stayed, o) = beside_a_failing_job(d, &drives[1], with_fallback(args!["ec", "repair", d.join("placed")]));
    assert!(stayed && o.status.success(), "the directory it writes in stayed: {stayed}\n{}", o.describe());
    assert_file_eq(&drives[1].join("placed.shard-001"), &before, "the rebuilt shard");
    run(&mut pp(args!["ec", "verify", d.join("placed")])).ok();
}
