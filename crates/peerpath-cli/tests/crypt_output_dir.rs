//! encrypt and decrypt, the chains (`compress --ec`, `decompress --ec`) and `scan -o` hold the
//! directory they write their output in while they do, as compress and decompress hold theirs
//! (`OutputDir`). Their output has no name until it is in place (O_TMPFILE), so a job that had
//! made that directory (`-o DIR/`) and failed found it empty and removed it: the other job then
//! failed (exit 11, "No such file or directory") or its output was lost.

mod common;

use common::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// Waits until `job` has a file open in `dir` (its output's temporary, unnamed), not `dir`
/// itself; panics where the job ends first.
fn wait_until_writing_in(job: &mut Child, dir: &Path, what: &str) {
    let (start, pid) = (std::time::Instant::now(), job.id());
    let writing = || {
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten();
        fds.filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|p| p != dir && p.starts_with(dir))
    };
    while !writing() {
        assert!(job.try_wait().unwrap().is_none(), "{what}: ended before it wrote in {}", dir.display());
        assert!(start.elapsed() < HANG_DEADLINE, "{what}: never wrote in {}", dir.display());
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

fn signal(job: &Child, sig: i32) {
    // SAFETY: kill(2) on this test's own child, which has not been waited for yet.
    assert_eq!(unsafe { libc::kill(job.id() as i32, sig) }, 0);
}

/// One job writes into `out`, which a failing job made (`decompress FIFO -o out/`); it is
/// stopped while its output has no name yet, and the other job fails meanwhile: `out` must
/// stay, and the job, continued, put its output (`output`) there. `stdin`: what the job reads
/// there, given once the other job has failed.
fn survives_a_failing_job_that_made_the_directory(d: &Path, job: Vec<OsString>, output: &Path, stdin: Option<&[u8]>) {
    use std::io::Write;
    let (out, fifo) = (d.join("out"), d.join("bad.gz"));
    let what = format!("{job:?}");
    if !fifo.exists() {
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    }
    // Read and written: the failing job's open of the FIFO does not wait for a writer.
    let to_failing = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    let mut failing = pp(args!["decompress", &fifo, "-o", format!("{}/", out.display()), "-q"]).stderr(Stdio::piped()).spawn().unwrap();
    wait_until_open(failing.id(), &fifo);
    assert!(out.is_dir(), "the failing job made {}", out.display());
    let mut writer = pp(job).stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stderr(Stdio::piped()).spawn().unwrap();
    wait_until_writing_in(&mut writer, &out, &what);
    signal(&writer, libc::SIGSTOP);
    assert!(!output.exists(), "{what}: done before it was stopped (a larger source would keep it longer)");
    (&to_failing).write_all(b"not gzip").unwrap();
    drop(to_failing);
    let failed = wait_deadline(&mut failing, HANG_DEADLINE, "the failing job");
    assert_eq!(failed.code(), Some(8), "the failing job");
    let kept = out.is_dir();
    signal(&writer, libc::SIGCONT);
    if let Some(data) = stdin {
        let mut input = writer.stdin.take().unwrap();
        input.write_all(data).unwrap();
    }
    let done = wait_deadline(&mut writer, HANG_DEADLINE, &what);
    let mut said = String::new();
    std::io::Read::read_to_string(writer.stderr.as_mut().unwrap(), &mut said).unwrap();
    assert!(kept, "{what}: the directory it wrote in was removed by the job that made it ({done}: {said})");
    assert!(done.success(), "{what}: {done}: {said}");
    assert!(output.is_file() || output.is_dir(), "{what}: no {}", output.display());
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn encrypt_and_decrypt_hold_the_directory_they_write_in() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    // Sparse: nothing to write, and a few tenths of a second to encrypt on one thread.
    let big = d.join("big");
    std::fs::File::create(&big).unwrap().set_len(256 << 20).unwrap();
    run(&mut pp(args!["encrypt", &big, "--key-file", &key, "-q"])).ok();
    let out = d.join("out");
    let jobs: [(Vec<OsString>, PathBuf); 3] = [
        (args!["encrypt", &big, "-o", out.join("big.ppenc"), "--key-file", &key, "-T", "1", "-q"], out.join("big.ppenc")),
        (args!["encrypt", &big, "-o", out.join("big.xts"), "--key-file", &key, "--mode", "xts", "-T", "1", "-q"], out.join("big.xts")),
        (args!["decrypt", d.join("big.ppenc"), "-o", out.join("big"), "--key-file", &key, "-T", "1", "-q"], out.join("big")),
    ];
    for (job, output) in jobs {
        survives_a_failing_job_that_made_the_directory(d, job, &output, None);
    }
}

#[test]
fn the_chains_hold_the_directories_they_write_in() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let big = d.join("big");
    std::fs::File::create(&big).unwrap().set_len(256 << 20).unwrap();
    run(&mut pp(args!["compress", &big, "--ec", "2+1", "--encrypt", "--key-file", &key, "-o", d.join("set"), "-q"])).ok();
    let out = d.join("out");
    let jobs: [(Vec<OsString>, PathBuf); 2] = [
        (args!["compress", &big, "--ec", "2+1", "--encrypt", "--key-file", &key, "-o", out.join("set"), "-T", "1", "-q"], out.join("set")),
        (args!["decompress", "--ec", d.join("set"), "--key-file", &key, "-o", out.join("big"), "-T", "1", "-q"], out.join("big")),
    ];
    for (job, output) in jobs {
        survives_a_failing_job_that_made_the_directory(d, job, &output, None);
    }
}

#[test]
fn scan_holds_the_directory_it_writes_its_records_in() {
    let dir = scratch();
    let d = dir.path();
    let out = d.join("out");
    // It reads standard input, given only once the other job has failed.
    let job = args!["scan", "-", "--motif", "AC", "-o", out.join("records"), "-q"];
    survives_a_failing_job_that_made_the_directory(d, job, &out.join("records"), Some(b">a\nACGT\n>b\nTTTT\n"));
}
