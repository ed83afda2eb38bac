//! A command stopped by a signal leaves what a failure of it leaves: a demo removes the files it
//! made (it left its sample and its complete `.gz`, "complete and in place: it stays"), and
//! bench-io empties again a file it was given empty to lay out (it stayed full size). Each test
//! starts the command, waits until it has begun (a file appears), signals it, and looks.

mod common;
use common::*;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

/// A pipe that is full (one page, written whole): a child whose standard output it is blocks
/// at its first write, where the test holds it. Returns the reading end too, kept open.
fn full_pipe() -> (std::io::PipeReader, std::io::PipeWriter) {
    let (r, mut w) = std::io::pipe().unwrap();
    // SAFETY: fcntl(2) on a pipe this test owns, with an integer argument.
    let size = unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert!(size > 0, "F_SETPIPE_SZ: {}", std::io::Error::last_os_error());
    w.write_all(&vec![b'x'; size as usize]).unwrap();
    (r, w)
}

/// Waits until `path` exists (the child has got that far), or the child ended, or a minute.
fn wait_for(path: &Path, child: &mut std::process::Child) {
    let start = Instant::now();
    while std::fs::symlink_metadata(path).is_err() {
        assert!(child.try_wait().unwrap().is_none(), "it ended before {} appeared", path.display());
        assert!(start.elapsed() < HANG_DEADLINE, "{} did not appear", path.display());
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Sends `sig` to `child` and waits for it to die of it; its standard error.
fn stop(mut child: std::process::Child, sig: i32) -> String {
    // SAFETY: kill(2) takes plain integers: our own child's pid and a signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let status = wait_deadline(&mut child, HANG_DEADLINE, "a stopped command");
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.signal().or(status.code().map(|c| c - 128)), Some(sig), "{status:?}: {stderr}");
    stderr
}

/// SIGTERM once the demo's sample is in place (the demo held at its first line of output): the
/// sample goes, and so does the work directory the demo made.
#[test]
fn a_demo_stopped_after_its_sample_removes_it_and_its_directory() {
    let dir = scratch();
    let work = dir.path().join("work");
    let (_r, w) = full_pipe();
    let mut child = pp(args!["demo", "--workdir", &work]).stdout(w).stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&work.join("protein.fasta"), &mut child);
    let stderr = stop(child, libc::SIGTERM);
    assert_dir_holds(dir.path(), &[]);
    assert!(!stderr.contains("stays"), "{stderr}");
}

/// SIGINT once the demo's `.gz` is complete and in place (held at its report): the files it made
/// go and are not said to stay; a file it replaced (`-f`), as a failing demo leaves it, and the
/// directory's other files stay.
#[test]
fn a_demo_stopped_after_a_complete_output_removes_the_files_it_made() {
    let dir = scratch();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("notes.txt"), b"the user's").unwrap();
    std::fs::write(work.join("protein.fasta"), b"an older sample").unwrap();
    let (_r, w) = full_pipe();
    let mut child = signals_at_default(&mut pp(args!["demo", "--workdir", &work, "--json", "-f"])).stdout(w).stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&work.join("protein.fasta.gz"), &mut child);
    let stderr = stop(child, libc::SIGINT);
    assert_dir_holds(&work, &["notes.txt", "protein.fasta"]);
    assert_eq!(std::fs::read(work.join("notes.txt")).unwrap(), b"the user's");
    assert!(!stderr.contains("protein.fasta.gz"), "the removed output is not said to stay: {stderr}");
}

/// Bytes process `pid` has had written to storage so far (`write_bytes` of /proc/PID/io; 0
/// where it cannot be read).
fn written_bytes(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// SIGINT while bench-io lays out a file given empty (its writes in flight, where the kernel
/// says how many bytes it wrote): it is empty again, as after a failure.
#[test]
fn bench_io_stopped_while_it_lays_out_an_empty_file_empties_it_again() {
    let dir = scratch();
    let file = dir.path().join("given.dat");
    std::fs::File::create(&file).unwrap();
    let mut child = signals_at_default(&mut pp(args!["bench-io", "--file", &file, "--size", "1G", "--random", "skip", "--runtime-s", "0.1"])).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    let io_counted = std::path::Path::new("/proc/self/io").exists();
    // Laid out: its size set, and bytes written (counted by the kernel, or blocks there: a
    // memory file system counts no write_bytes).
    let pid = child.id();
    let laid_out = |m: std::fs::Metadata| m.len() > 0 && (!io_counted || m.blocks() > 0 || written_bytes(pid) > 0);
    while !laid_out(std::fs::metadata(&file).unwrap()) {
        assert!(child.try_wait().unwrap().is_none(), "it ended before laying the file out");
        assert!(start.elapsed() < HANG_DEADLINE, "the file was not laid out");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let stderr = stop(child, libc::SIGINT);
    let m = std::fs::metadata(&file).unwrap();
    assert_eq!((m.len(), m.blocks()), (0, 0), "the file given empty is empty again: {stderr}");
}
