//! `peerpath csp`: the runtime's way of starting a device (`EmulatedCsp::spawn`
//! runs this binary with `csp serve` and `ServeOptions::to_args`) must be
//! what the CLI reads; identify and stats answer by name.

mod common;

use common::names_in;
use peerpath_device::emulated::{ServeOptions, SpawnOptions};
use peerpath_device::{run_to_completion, DeviceRange, EmulatedCsp, Request, Status};
use std::io::{BufRead, BufReader, Read};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PEERPATH: &str = env!("CARGO_BIN_EXE_peerpath");

#[test]
fn the_cli_serves_what_spawn_asks_for_and_answers_identify_and_stats() {
    let name = format!("cli{}", std::process::id());
    let mut serve = ServeOptions::new(&name);
    serve.memory_bytes = 16 << 20;
    serve.queues = 2;
    serve.workers = 1;
    let mut o = SpawnOptions::new(serve);
    o.program = Some(PEERPATH.into()); // what current_exe() is inside `peerpath`
    let mut csp = EmulatedCsp::spawn(&o).expect("peerpath csp serve starts from spawn's arguments");
    assert_eq!(csp.identity().memory_bytes, 16 << 20);
    let done = run_to_completion(&mut csp, [Request::fill(1, 7, DeviceRange::new(0, 4096))], Duration::from_secs(30)).unwrap();
    assert_eq!(done[0].status, Status::Success);

    let out = Command::new(PEERPATH).args(["csp", "identify", "--name", &name]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("16 MiB of device memory") && text.contains("gzip compress member"), "{text}");
    assert!(text.contains("an emulated CSP: a host process"), "what the device is, said: {text}");

    let out = Command::new(PEERPATH).args(["csp", "stats", "--name", &name, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fill = stats["functions"].as_array().unwrap().iter().find(|f| f["function"] == "fill").unwrap().clone();
    assert_eq!((fill["commands"].as_u64(), fill["output_bytes"].as_u64()), (Some(1), Some(4096)));
    assert!(stats["provenance"].as_str().is_some_and(|p| p.starts_with("an emulated CSP")), "{stats}");

    // The name is taken while it runs: exit 4, as a target that exists.
    let out = Command::new(PEERPATH).args(["csp", "serve", "--name", &name]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already running"));

    let paths = csp.paths().clone();
    assert!(csp.shutdown().unwrap().unwrap().success());
    assert!(paths.all().iter().all(|p| !p.exists()));
}

#[test]
fn csp_errors_exit_with_their_codes() {
    let out = Command::new(PEERPATH).args(["csp", "identify", "--name", "nobody-here-42"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "no device there: a source missing, not an internal error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `peerpath csp serve --name=nobody-here-42 --dir "), "{}", String::from_utf8_lossy(&out.stderr));
    // The hint runs as printed: it names the directory asked, quoted for the shell.
    let dir = tempfile::Builder::new().prefix("csp dir ").tempdir().unwrap();
    let out = Command::new(PEERPATH).args(["csp", "stats", "--name", "nobody-here-42", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let hint = format!("is `peerpath csp serve --name=nobody-here-42 --dir '{}'` running?", dir.path().display());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&hint), "{hint}\n{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "no/slashes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // What stands where a device's socket goes is removed only if a device left it (a socket).
    let dir = tempfile::tempdir().unwrap();
    for make in [|p: &std::path::Path| std::fs::write(p, b"mine").unwrap(), |p: &std::path::Path| std::fs::create_dir(p).unwrap()] {
        let socket = dir.path().join("peerpath-csp-x.sock");
        make(&socket);
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "x", "--dir"]).arg(dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "a name taken, as a target that exists (it was 1, an internal error)");
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a socket a device left"), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(socket.exists(), "left as it was");
        let _ = std::fs::remove_file(&socket).or_else(|_| std::fs::remove_dir(&socket));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing else made");
    }
}

/// A numeric option out of range is named in the error, as the user typed it: it said
/// "0 workers: use 1-1024" and "0 queue pairs of 128 entries: use ...".
#[test]
fn numbers_out_of_range_name_their_option() {
    let dir = tempfile::tempdir().unwrap();
    for (option, value, said) in [
        ("--workers", "0", "--workers 0: use 1-1024"),
        ("--workers", "1025", "--workers 1025: use 1-1024"),
        ("--queues", "0", "--queues 0 --queue-depth 128: use --queues 1-"),
        ("--queue-depth", "1", "--queues 4 --queue-depth 1: use --queues 1-"),
    ] {
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "n", "--memory", "1M", option, value, "--dir"]).arg(dir.path()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option} {value}: {err}");
        assert!(err.contains(said), "{option} {value}: {err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing made");
}

/// `csp serve` children, stopped (SIGTERM, then SIGKILL after a minute) however the test ends.
struct Serves(Vec<Child>);

impl Serves {
    fn start(n: usize, name: &str, dir: &Path, extra: &[&str]) -> Serves {
        let mut serves = Serves(Vec::new());
        for _ in 0..n {
            let child = Command::new(PEERPATH)
                .args(["csp", "serve", "--name", name, "--memory", "4M", "--queues", "1", "--workers", "1", "--dir"])
                .arg(dir)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start csp serve");
            serves.0.push(child);
        }
        serves
    }

    /// The first line serve `i` prints: its ready line, or "" once it exits without one.
    /// Waits for either, not for a time.
    fn first_line(&mut self, i: usize) -> String {
        let out = self.0[i].stdout.take().expect("read once");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        // Generous: only a serve that hangs before it is ready (or exits) trips it.
        rx.recv_timeout(Duration::from_secs(600)).expect("csp serve neither got ready nor exited in 10 minutes")
    }

    /// Serve `i`'s exit status and standard error, once it has ended.
    fn ended(&mut self, i: usize) -> (ExitStatus, String) {
        let mut err = String::new();
        let _ = self.0[i].stderr.take().expect("read once").read_to_string(&mut err);
        (self.0[i].wait().unwrap(), err)
    }

    fn pid(&self, i: usize) -> u32 {
        self.0[i].id()
    }

    /// SIGTERM to serve `i`; its exit status.
    fn stop(&mut self, i: usize) -> ExitStatus {
        stop(&mut self.0[i])
    }
}

fn stop(c: &mut Child) -> ExitStatus {
    if let Ok(Some(status)) = c.try_wait() {
        return status;
    }
    // SAFETY: kill(2) with our own child's pid, not yet waited for.
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = c.try_wait() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    c.wait().unwrap()
}

impl Drop for Serves {
    fn drop(&mut self) {
        for c in &mut self.0 {
            stop(c);
        }
    }
}

/// The device's memory, queue and socket files, and its name's lock.
fn device_files(dir: &Path, name: &str) -> Vec<PathBuf> {
    ["mem", "queues", "sock", "lock"].iter().map(|ext| dir.join(format!("peerpath-csp-{name}.{ext}"))).collect()
}

/// `csp identify` of `name` in `dir`: the pid that answered, or why none did.
fn identify_pid(dir: &Path, name: &str) -> Result<u32, String> {
    let out = Command::new(PEERPATH).args(["csp", "identify", "--json", "--name", name, "--dir"]).arg(dir).output().unwrap();
    if !out.status.success() {
        return Err(format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    let id: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    Ok(id["pid"].as_u64().expect("identify says its pid") as u32)
}

#[test]
fn serves_started_at_once_under_one_name_leave_one_device_and_its_files_alone() {
    // Names used to be taken by looking for a live socket: two serves started together both
    // found none and both ran, or the loser failed (exit 1) and removed the winner's files on
    // its way out. About one round in twelve; these rounds find it nearly always.
    const ROUNDS: usize = 30;
    const AT_ONCE: usize = 3;
    let dir = common::scratch();
    for round in 0..ROUNDS {
        let name = format!("race{round}");
        let mut serves = Serves::start(AT_ONCE, &name, dir.path(), &[]);
        let lines: Vec<String> = (0..AT_ONCE).map(|i| serves.first_line(i)).collect();
        let ready: Vec<usize> = (0..AT_ONCE).filter(|&i| lines[i].starts_with("peerpath csp ready:")).collect();
        let losers: Vec<(usize, ExitStatus, String)> = (0..AT_ONCE)
            .filter(|i| !ready.contains(i))
            .map(|i| {
                let (status, err) = serves.ended(i);
                (i, status, err)
            })
            .collect();
        assert_eq!(ready.len(), 1, "round {round}: exactly one device runs: ready lines {lines:?}, the others {losers:?}");
        for (i, status, err) in &losers {
            assert_eq!(status.code(), Some(4), "round {round}: serve {i} exits as a name taken: {err}");
            assert!(err.contains("already running"), "round {round}: serve {i}: {err}");
        }
        let winner = ready[0];
        assert_eq!(identify_pid(dir.path(), &name), Ok(serves.pid(winner)), "round {round}: the device that said it was ready answers");
        for f in &device_files(dir.path(), &name)[..3] {
            assert!(f.exists(), "round {round}: the running device's {} was removed", f.display());
        }
        assert!(serves.stop(winner).success(), "round {round}: the device stops cleanly on SIGTERM");
        assert_eq!(names_in(dir.path()), Vec::<String>::new(), "round {round}: it removes its files, its lock too");
    }
}

#[test]
fn a_serve_that_finds_the_name_locked_exits_4_and_touches_nothing() {
    // A device taking the name holds its lock before it makes any file: one started now
    // must neither take those files for a dead device's nor remove them.
    let dir = common::scratch();
    let files = device_files(dir.path(), "held");
    let lock = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&files[3]).unwrap();
    // SAFETY: flock on a descriptor this test owns, released when it closes.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    std::fs::write(&files[0], b"the other device's memory").unwrap();
    std::fs::write(&files[1], b"the other device's queues").unwrap();
    let mut serves = Serves::start(1, "held", dir.path(), &[]);
    assert_eq!(serves.first_line(0), "", "it does not get ready");
    let (status, err) = serves.ended(0);
    assert_eq!(status.code(), Some(4), "{err}");
    assert!(err.contains("already running") && err.contains("peerpath-csp-held.lock"), "{err}");
    assert_eq!(std::fs::read(&files[0]).unwrap(), b"the other device's memory");
    assert_eq!(std::fs::read(&files[1]).unwrap(), b"the other device's queues");
    assert!(!files[2].exists() && files[3].exists());
    drop(lock);
    // A lock file that is not one (a symbolic link, a file with data) is left as it is.
    let target = dir.path().join("target");
    std::fs::write(&target, b"mine").unwrap();
    std::fs::remove_file(&files[3]).unwrap();
    for make in [|p: &Path, t: &Path| std::os::unix::fs::symlink(t, p).unwrap(), |p: &Path, _: &Path| std::fs::write(p, b"data").unwrap()] {
        make(&files[3], &target);
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "held", "--dir"]).arg(dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a lock file a device left"), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(std::fs::read(&target).unwrap(), b"mine");
        assert_eq!(std::fs::read(&files[0]).unwrap(), b"the other device's memory");
        std::fs::remove_file(&files[3]).unwrap();
    }
}

#[test]
fn a_killed_devices_files_are_replaced_by_the_next_serve_and_its_host_leaves_them_to_it() {
    let dir = common::scratch();
    // By hand: SIGKILL leaves every file, the lock too; the next serve of the name replaces them.
    let mut first = Serves::start(1, "stale", dir.path(), &[]);
    assert!(first.first_line(0).starts_with("peerpath csp ready:"));
    let _ = first.0[0].kill();
    first.0[0].wait().unwrap();
    let files = device_files(dir.path(), "stale");
    assert!(files[..3].iter().all(|f| f.exists()), "SIGKILL leaves them: {:?}", names_in(dir.path()));
    let mut second = Serves::start(1, "stale", dir.path(), &[]);
    assert!(second.first_line(0).starts_with("peerpath csp ready:"), "{:?}", second.ended(0));
    assert_eq!(identify_pid(dir.path(), "stale"), Ok(second.pid(0)));
    assert!(second.stop(0).success());
    assert_eq!(names_in(dir.path()), Vec::<String>::new());

    // Started by a host: once its device is killed and another has taken the name, the host
    // removes nothing of the new device's when it lets go of the dead one.
    let mut serve = ServeOptions::new("hosted");
    serve.memory_bytes = 4 << 20;
    serve.queues = 1;
    serve.workers = 1;
    serve.dir = dir.path().to_path_buf();
    let mut o = SpawnOptions::new(serve);
    o.program = Some(PEERPATH.into());
    let csp = EmulatedCsp::spawn(&o).expect("peerpath csp serve starts");
    // SAFETY: kill(2) with the pid of this test's own device process.
    assert_eq!(unsafe { libc::kill(csp.pid() as libc::pid_t, libc::SIGKILL) }, 0);
    // Dead once a zombie (its descriptors, its lock with them, are closed by then); the host
    // reaps it only when dropped.
    let stat = format!("/proc/{}/stat", csp.pid());
    let deadline = Instant::now() + Duration::from_secs(600);
    while std::fs::read_to_string(&stat).is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))) {
        assert!(Instant::now() < deadline, "the killed device did not die in 10 minutes");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut by_hand = Serves::start(1, "hosted", dir.path(), &[]);
    assert!(by_hand.first_line(0).starts_with("peerpath csp ready:"), "{:?}", by_hand.ended(0));
    drop(csp);
    assert_eq!(identify_pid(dir.path(), "hosted"), Ok(by_hand.pid(0)), "the new device is untouched");
    assert!(device_files(dir.path(), "hosted")[..3].iter().all(|f| f.exists()), "{:?}", names_in(dir.path()));
    assert!(by_hand.stop(0).success());
    assert_eq!(names_in(dir.path()), Vec::<String>::new());
}

#[test]
fn a_dir_that_is_not_one_is_a_usage_error_and_a_full_one_is_no_room() {
    let dir = common::scratch();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    for (bad, said) in [(Path::new("/nonexistent-peerpath-dir"), "no such directory"), (&file, "not a directory")] {
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "d", "--memory", "4M", "--dir"]).arg(bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "a bad --dir is a usage error: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("--dir {}: {said}", bad.display())), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // A directory that takes no new files (creating one in /proc is ENOENT, as in a missing
    // directory): it was "not a directory (it must exist)", a usage error. As a read-only one: 11.
    if Path::new("/proc/self").exists() {
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "d", "--memory", "4M", "--dir", "/proc"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(11), "{err}");
        assert!(err.contains("cannot create /proc/peerpath-csp-d.lock: No such file or directory") && !err.contains("not a directory"), "{err}");
    }
    let test = "a_dir_that_is_not_one_is_a_usage_error_and_a_full_one_is_no_room";
    let Some(fs) = common::TmpfsMount::new(test, "8m") else { return };
    // Populating more than the file system holds; then memory that fills it, leaving no room
    // for the queues.
    for (memory, populate) in [("16M", "16M"), ("8M", "8M")] {
        let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "full", "--memory", memory, "--populate", populate, "--dir"]).arg(&fs.dir).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(11), "--memory {memory} --populate {populate}: no room is exit 11: {err}");
        assert!(err.contains("no room") || err.contains("No space left"), "{err}");
        assert_eq!(names_in(&fs.dir), Vec::<String>::new(), "a device that did not start leaves no files");
    }
}

#[test]
fn files_under_a_devices_names_that_no_device_left_are_left_as_they_are() {
    // A free name used to mean "a dead device's files": any regular file called
    // peerpath-csp-NAME.queues or .mem was removed and replaced, a user's data too.
    use std::os::unix::fs::PermissionsExt;
    let dir = common::scratch();
    let files = device_files(dir.path(), "mine");
    let owner_only = std::fs::Permissions::from_mode(0o600);
    // (file, contents, owner-only): a queue file without the queue magic, a file anyone may read.
    for (file, contents, private) in [(&files[1], &b"not a queue file, but mine"[..], true), (&files[0], &b"my notes"[..], false), (&files[1], &[0u8; 16][..], false)] {
        std::fs::write(file, contents).unwrap();
        if private {
            std::fs::set_permissions(file, owner_only.clone()).unwrap();
        }
        let mut serves = Serves::start(1, "mine", dir.path(), &[]);
        assert_eq!(serves.first_line(0), "", "it does not get ready");
        let (status, err) = serves.ended(0);
        assert_eq!(status.code(), Some(4), "{err}");
        assert!(err.contains(&file.display().to_string()) && err.contains("a device left"), "{err}");
        assert_eq!(std::fs::read(file).unwrap(), contents, "left as it was");
        std::fs::remove_file(file).unwrap();
        assert_eq!(names_in(dir.path()), Vec::<String>::new(), "nothing else made or left");
    }
}

#[test]
fn memory_that_is_not_whole_mib_is_said_in_kib() {
    let dir = common::scratch();
    // It said "0 MiB" and "1 MiB".
    // A size that is not whole pages is rounded up, and said so (it was said as 8 KiB alone).
    let rounded = ": --memory 5000 bytes rounded up to whole pages";
    for (memory, said, note) in [("100K", "100 KiB", ""), ("1536K", "1536 KiB", ""), ("2M", "2 MiB", ""), ("5000", "8 KiB", rounded), ("8K", "8 KiB", "")] {
        let child = Command::new(PEERPATH)
            .args(["csp", "serve", "--name", "small", "--memory", memory, "--queues", "1", "--workers", "1", "--dir"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut serves = Serves(vec![child]);
        let ready = serves.first_line(0);
        assert!(ready.contains(&format!("({said} of device memory{note}, ")), "--memory {memory}: {ready}");
        let out = Command::new(PEERPATH).args(["csp", "identify", "--name", "small", "--dir"]).arg(dir.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!(", {said} of device memory,")), "--memory {memory}: {text}");
        assert!(serves.stop(0).success());
    }
}

#[test]
fn a_dir_the_device_may_not_write_in_is_exit_11_not_an_internal_error() {
    let test = "a_dir_the_device_may_not_write_in_is_exit_11_not_an_internal_error";
    let Some(fs) = common::TmpfsMount::mount(test, "tmpfs", "size=1m,ro") else { return };
    let out = Command::new(PEERPATH).args(["csp", "serve", "--name", "ro", "--memory", "1M", "--dir"]).arg(&fs.dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "a target that cannot be written (it was 1): {err}");
    assert!(err.contains(&fs.dir.join("peerpath-csp-ro.lock").display().to_string()) && err.contains("Read-only file system"), "{err}");
}

#[test]
fn a_device_that_takes_connections_but_does_not_answer_is_said_so() {
    let dir = common::scratch();
    let mut serves = Serves::start(1, "stopped", dir.path(), &[]);
    assert!(serves.first_line(0).starts_with("peerpath csp ready:"));
    // SAFETY: kill(2) with this test's own child's pid (continued below, then stopped by Drop).
    assert_eq!(unsafe { libc::kill(serves.pid(0) as libc::pid_t, libc::SIGSTOP) }, 0);
    // --timeout 1: the wait was a fixed 10 s, which this test paid.
    let out = Command::new(PEERPATH).args(["csp", "stats", "--name", "stopped", "--timeout", "1", "--dir"]).arg(dir.path()).output().unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(serves.pid(0) as libc::pid_t, libc::SIGCONT) }, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(15), "a device that could not do its work, with no CPU to fall back to: {err}");
    // It said "Resource temporarily unavailable (os error 11)".
    assert!(err.contains("peerpath-csp-stopped.sock: the device gave no answer within 1 s (is its process stopped, or hung?)"), "{err}");
    assert!(serves.stop(0).success());
    assert_eq!(names_in(dir.path()), Vec::<String>::new());
}
