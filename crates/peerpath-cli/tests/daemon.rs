//! The job server (`peerpath daemon`) and its clients (`PEERPATH_DAEMON`):
//! jobs run in the daemon with the client's directory, streams, umask and
//! exit code; a daemon that cannot run a job is said and the job runs in the
//! client (or fails with --no-fallback); a client that goes away cancels its
//! job and nothing of it is kept.

mod common;

use common::*;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A daemon for one test, stopped when dropped.
struct Daemon {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

impl Daemon {
    fn start(dir: &Path) -> Daemon {
        Daemon::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Daemon {
        private(dir);
        let socket = dir.join("daemon.sock");
        let mut c = pp(args!["daemon", "--socket", &socket]);
        c.args(extra);
        Daemon::spawn(c, socket, dir.join("daemon.log"))
    }

    /// Starts `c` (a daemon that will listen on `socket`), its standard error to `log`; SIGINT
    /// stops it even when the test run has it ignored.
    fn spawn(mut c: Command, socket: PathBuf, log: PathBuf) -> Daemon {
        let child = signals_at_default(&mut c).stdin(Stdio::null()).stdout(Stdio::null()).stderr(std::fs::File::create(&log).expect("the daemon's log")).spawn().expect("start the daemon");
        let d = Daemon { child, socket, log };
        d.wait_for_log("listening on", 1);
        d
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log holds `text` `times` times.
    #[track_caller]
    fn wait_for_log(&self, text: &str, times: usize) {
        let start = Instant::now();
        while self.log().matches(text).count() < times {
            assert!(start.elapsed() < HANG_DEADLINE, "the daemon's log never said {text:?} {times} time(s):\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A client command: `peerpath ARGS` run in `dir` with PEERPATH_DAEMON set.
    fn client<I: IntoIterator<Item = std::ffi::OsString>>(&self, dir: &Path, args: I) -> Command {
        let mut c = pp(args);
        c.current_dir(dir).env("PEERPATH_DAEMON", &self.socket);
        c
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // A test that failed shows how the daemon saw it (and whether it was still there).
        if std::thread::panicking() {
            let state = match self.child.try_wait() {
                Ok(Some(st)) => format!("it had ended: {st}"),
                _ => "it was still running".into(),
            };
            eprintln!("the daemon's log ({state}):\n{}", self.log());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Makes `dir` one no other user can reach (mode 0700), as a daemon's socket's directory must be.
fn private(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
}

const RUNNER: &str = "runner        peerpath daemon (pid ";

#[test]
fn jobs_run_in_the_daemon_with_the_clients_directory_streams_umask_and_exit_code() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("in.fa"), sample()).unwrap();

    // Relative paths are the client's: the job ran in its directory.
    let out = run(&mut d.client(&work, args!["compress", "in.fa", "-o", "via.gz"])).ok();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(RUNNER), "the report says the daemon ran it:\n{text}");
    // Its job number is the one its log gives it.
    assert!(text.contains(&format!("{RUNNER}{}), as job 1 in its log; ", d.child.id())), "{text}");
    d.wait_for_log("job 1: exit 0", 1);
    run(pp(args!["compress", "-q", "in.fa", "-o", "local.gz"]).current_dir(&work)).ok();
    assert_file_eq(&work.join("via.gz"), &std::fs::read(work.join("local.gz")).unwrap(), "the daemon's output is the CPU's own");
    let report = run(&mut d.client(&work, args!["verify", "--json", "via.gz"])).ok().json();
    assert!(report["runner"].as_str().is_some_and(|r| r.starts_with("peerpath daemon (pid ")), "{report}");

    // Standard output and input are the client's.
    let out = run(&mut d.client(&work, args!["decompress", "-q", "via.gz", "-o", "-"])).ok();
    assert_bytes_eq(&out.stdout, sample(), "decompressed to the client's standard output");
    let piped = run_full(&mut d.client(&work, args!["decompress", "-q", "-", "-o", "-"]), Some(std::fs::read(work.join("via.gz")).unwrap()), DEADLINE).ok();
    assert_bytes_eq(&piped.stdout, sample(), "decompressed from the client's standard input");
    // A client whose standard output is a pipe nobody reads: that job ends with 141, the daemon goes on.
    for args in [args!["verify", "via.gz"], args!["decompress", "-q", "via.gz", "-o", "-"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let closed = d.client(&work, args.clone()).stdout(writer).stderr(Stdio::piped()).output().unwrap();
        assert_eq!(closed.status.code(), Some(141), "{args:?}: {}", String::from_utf8_lossy(&closed.stderr));
        assert!(!String::from_utf8_lossy(&closed.stderr).contains("panicked"), "{}", String::from_utf8_lossy(&closed.stderr));
    }
    run(&mut d.client(&work, args!["verify", "via.gz"])).ok();

    // The client's umask applies to what the job creates (from a pipe: a file's
    // output takes its source's mode, as gzip's does).
    let sh = |umask: &str, target: &str| {
        let mut c = Command::new("sh");
        c.arg("-c").arg(format!("umask {umask}; exec \"$0\" compress -q - -o {target} < in.fa")).arg(bin()).current_dir(&work).env("PEERPATH_DAEMON", &d.socket);
        run(&mut c).ok();
        std::fs::metadata(work.join(target)).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(sh("077", "private.gz"), 0o600);
    assert_eq!(sh("022", "shared.gz"), 0o644);

    // A failing job's error and exit code reach the client, as when it runs on its own.
    let mut damaged = std::fs::read(work.join("via.gz")).unwrap();
    let n = damaged.len();
    damaged[n - 5] ^= 0xff; // the first member's ISIZE
    std::fs::write(work.join("damaged.gz"), &damaged).unwrap();
    let there = run(&mut d.client(&work, args!["verify", "damaged.gz"]));
    let here = run(pp(args!["verify", "damaged.gz"]).current_dir(&work));
    assert_eq!(there.status.code(), here.status.code(), "{}\n{}", there.describe(), here.describe());
    assert_ne!(here.status.code(), Some(0));
    let error_line = |s: &str| s.lines().find(|l| l.starts_with("peerpath: error:")).map(str::to_string);
    assert!(error_line(&there.stderr).is_some());
    assert_eq!(error_line(&there.stderr), error_line(&here.stderr));

    // Two clients at once: the daemon runs one job after the other, both whole.
    let spawn = |target: &str| {
        d.client(&work, args!["compress", "-q", "in.fa", "-o", target]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let (mut a, mut b) = (spawn("a.gz"), spawn("b.gz"));
    assert!(wait_deadline(&mut a, DEADLINE, "client a").success());
    assert!(wait_deadline(&mut b, DEADLINE, "client b").success());
    for t in ["a.gz", "b.gz"] {
        assert_file_eq(&work.join(t), &std::fs::read(work.join("local.gz")).unwrap(), t);
    }
    let log = d.log();
    assert_eq!(log.matches("started:").count(), log.matches(": exit ").count(), "{log}");
    assert!(log.contains("compress -q in.fa -o a.gz") && log.contains("compress -q in.fa -o b.gz"), "{log}");
    assert_dir_holds(&work, &["a.gz", "b.gz", "damaged.gz", "in.fa", "local.gz", "private.gz", "shared.gz", "via.gz"]);
}

#[test]
fn a_daemon_that_cannot_run_the_job_is_said_and_the_job_runs_here_or_fails_with_no_fallback() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    let local = compress_bytes(dir.path(), "local.fa", sample(), &[]);
    let here = |out: &Out, why: &str| {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.stderr.contains("peerpath: FALLBACK: PEERPATH_DAEMON=") && out.stderr.contains(why) && out.stderr.contains("the job runs in this process"), "{}", out.describe());
        assert!(!text.contains(RUNNER), "ran here, not in the daemon:\n{text}");
        assert!(text.contains("FALLBACK      PEERPATH_DAEMON=") && text.contains("; the job ran in this process"), "the report lists it with the others:\n{text}");
    };
    type Setup<'a> = Box<dyn Fn(&mut Command) + 'a>;
    let cases: [(&str, Setup); 3] = [
        ("cannot reach the daemon", Box::new(|c: &mut Command| {
            c.env("PEERPATH_DAEMON", dir.path().join("no-daemon.sock"));
        })),
        ("the daemon refused the job: PEERPATH_WORKER_READS is \"0\" here and unset in the daemon", Box::new(|c: &mut Command| {
            c.env("PEERPATH_WORKER_READS", "0");
        })),
        ("another build of peerpath", Box::new(|_: &mut Command| {})),
    ];
    // Another build: a copy of the binary is another file.
    let copy = dir.path().join("peerpath-copy");
    std::fs::copy(bin(), &copy).unwrap();
    for (k, (why, set)) in cases.iter().enumerate() {
        let target = format!("out{k}.gz");
        let mut c = if why.contains("another build") { Command::new(&copy) } else { pp(args![]) };
        c.args(args!["compress", "in.fa", "-o", &target]).current_dir(dir.path()).env("PEERPATH_DAEMON", &d.socket);
        set(&mut c);
        here(&run(&mut c).ok(), why);
        assert_file_eq(&dir.path().join(&target), &local, "the job ran here");
        // With --no-fallback it is an error (exit 18) and nothing is written.
        let mut c = if why.contains("another build") { Command::new(&copy) } else { pp(args![]) };
        c.args(args!["compress", "--no-fallback", "in.fa", "-o", "never.gz"]).current_dir(dir.path()).env("PEERPATH_DAEMON", &d.socket);
        set(&mut c);
        let out = run(&mut c);
        assert_eq!(out.status.code(), Some(18), "{}", out.describe());
        assert!(out.stderr.contains(why) && out.stderr.contains("(--no-fallback)"), "{}", out.describe());
        assert!(!dir.path().join("never.gz").exists());
    }
    // A job the daemon does not run (the --ec chain) is said too.
    let out = run(pp(args!["decompress", "--ec", "no-such-dir", "-o", "x"]).current_dir(dir.path()).env("PEERPATH_DAEMON", &d.socket));
    assert!(out.stderr.contains("FALLBACK: PEERPATH_DAEMON=") && out.stderr.contains("does not run the --ec chain; the job runs in this process"), "{}", out.describe());
    let out = run(pp(args!["decompress", "--ec", "--no-fallback", "no-such-dir", "-o", "x"]).current_dir(dir.path()).env("PEERPATH_DAEMON", &d.socket));
    assert_eq!(out.status.code(), Some(18), "{}", out.describe());
    let log = d.log();
    assert_eq!(log.matches(" refused: ").count(), 4, "{log}");
    assert!(!log.contains("started:"), "{log}");
    // A key in the environment is compared, never shown (in the client's words or the daemon's
    // log); so is a variable --key-env names, which the job reads: it ran here, not failed there.
    let secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
    for (var, extra) in [("PEERPATH_KEY", &[][..]), ("MYKEY", &["--key-env", "MYKEY"][..])] {
        let target = format!("{var}.ppenc");
        let mut c = pp(args!["compress", "--encrypt", "in.fa", "-o", &target]);
        c.args(extra).current_dir(dir.path()).env("PEERPATH_DAEMON", &d.socket).env(var, secret);
        let out = run(&mut c).ok();
        here(&out, &format!("{var} is set (a key's value is not shown) here and unset in the daemon"));
        assert!(!out.stderr.contains(secret) && !String::from_utf8_lossy(&out.stdout).contains(secret), "{}", out.describe());
        assert!(dir.path().join(&target).exists());
    }
    assert!(!d.log().contains(secret), "the key is in the daemon's log");
}

/// A daemon stopped by SIGTERM or ^C removes its socket (a stale one is
/// replaced at the next start, but a listing should not show it).
#[test]
fn a_daemon_stopped_by_a_signal_removes_its_socket() {
    let dir = scratch();
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let mut d = Daemon::start(dir.path());
        assert!(d.socket.exists());
        // SAFETY: a signal to our own test's daemon, which is running.
        assert_eq!(unsafe { libc::kill(d.child.id() as i32, signal) }, 0);
        let status = d.child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status).map_or(status.code(), |s| Some(128 + s)), Some(128 + signal), "{status:?}");
        assert!(!d.socket.exists(), "signal {signal}: the socket is left: {:?}", names_in(dir.path()));
        let name = if signal == libc::SIGTERM { "SIGTERM" } else { "SIGINT" };
        assert_eq!(d.log().lines().last(), Some(format!("peerpath daemon: stopped by {name} (no job running)").as_str()), "{}", d.log());
    }
}

/// A daemon stopped by a signal in the middle of a job says so in its log, naming the signal and
/// the job it cut off, whose output is not put in place (its log ended at "job 1: started"); its
/// socket goes, it dies of the signal, and the job's client fails (exit 18).
#[test]
fn a_daemon_stopped_by_a_signal_says_in_its_log_which_job_it_cut_off() {
    let dir = scratch();
    let mut d = Daemon::start(dir.path());
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // A job that runs until its input ends: the signal comes while it runs.
    let mut client = d.client(&work, args!["compress", "-", "-o", "piped.gz"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start the client");
    let mut source = client.stdin.take().unwrap();
    source.write_all(&random_bytes(64 << 10, 5)).unwrap();
    d.wait_for_log("job 1: started", 1);
    // SAFETY: a signal to our own test's daemon, which is running.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) }, 0);
    let status = d.child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM), "{status:?}");
    drop(source);
    let code = wait_deadline(&mut client, DEADLINE, "the client").code();
    let mut said = String::new();
    std::io::Read::read_to_string(&mut client.stderr.take().unwrap(), &mut said).unwrap();
    assert_eq!(code, Some(18), "{said}");
    assert!(!d.socket.exists(), "the socket is left: {:?}", names_in(dir.path()));
    assert_dir_holds(&work, &[]);
    let log = d.log();
    let last = log.lines().last().unwrap_or_default();
    assert_eq!(last, "peerpath daemon: stopped by SIGTERM: job 1 cut off, its outputs in progress not put in place (its client fails, exit 18)", "{log}");
}

/// A signal that came once a job had ended (its outputs in place or gone), while the daemon still
/// told its client (here its error, on a standard error no one reads, full), was said as a job
/// cut off, "its outputs in progress not put in place". It is now said as a job that had ended.
#[test]
fn a_signal_after_a_jobs_end_does_not_say_it_cut_the_job_off() {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    if std::fs::read_to_string("/proc/self/syscall").is_err() {
        eprintln!("SKIPPED a_signal_after_a_jobs_end_does_not_say_it_cut_the_job_off: no /proc/PID/syscall to see the daemon wait");
        return;
    }
    let dir = scratch();
    let mut d = Daemon::start(dir.path());
    // A pipe that holds no more: the job's error, said once it has ended, waits on it.
    let (mut reader, mut writer) = std::io::pipe().unwrap();
    // SAFETY: fcntl(2) on a descriptor this test holds open, setting and clearing O_NONBLOCK.
    unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    while writer.write(&[b'x'; 4096]).is_ok() {}
    // SAFETY: as above.
    unsafe { libc::fcntl(writer.as_raw_fd(), libc::F_SETFL, 0) };
    let mut c = d.client(dir.path(), args!["verify", "missing.gz"]);
    let mut client = c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(writer).spawn().expect("start the client");
    drop(c);
    // The daemon's thread that says the error writes to its client's standard error (fd 2), blocked.
    let writing = [libc::SYS_write, libc::SYS_writev].map(|n| format!("{n} 0x2 "));
    let start = Instant::now();
    while !std::fs::read_dir(format!("/proc/{}/task", d.child.id())).unwrap().flatten().any(|t| std::fs::read_to_string(t.path().join("syscall")).is_ok_and(|s| writing.iter().any(|w| s.starts_with(w.as_str())))) {
        assert!(start.elapsed() < HANG_DEADLINE, "the daemon never wrote to its client's standard error:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to our own test's daemon, which is running.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) }, 0);
    d.child.wait().unwrap();
    let mut said = Vec::new();
    reader.read_to_end(&mut said).unwrap();
    assert_eq!(wait_deadline(&mut client, DEADLINE, "the client").code(), Some(18));
    let log = d.log();
    let last = log.lines().last().unwrap_or_default();
    assert_eq!(last, "peerpath daemon: stopped by SIGTERM: job 1 had ended, its outputs as it left them; its client, unless already told its exit code, fails (exit 18)", "{log}");
}

/// The log says whose each job is and where it runs (its relative paths are that directory's):
/// the client's pid and user, and its working directory, quoted as names are elsewhere (a newline
/// in it stays on the line).
#[test]
fn the_log_names_each_jobs_client_and_its_directory() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let work = dir.path().join("a\nb");
    std::fs::create_dir(&work).unwrap();
    let mut client = d.client(&work, args!["verify", "x.gz"]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start the client");
    let pid = client.id();
    assert_ne!(wait_deadline(&mut client, DEADLINE, "the client").code(), Some(0), "x.gz does not exist");
    d.wait_for_log("job 1: exit ", 1);
    // SAFETY: geteuid(2) only reads this process's effective user id.
    let uid = unsafe { libc::geteuid() };
    let said = format!("peerpath daemon: job 1: started: verify x.gz (client pid {pid}, uid {uid}, in '{}/a'$'\\n''b')\n", dir.path().display());
    assert!(d.log().contains(&said), "{said}{}", d.log());
}

/// The socket's name is resolved where the daemon started: a relative one was
/// removed in the directory of the client whose job ran when the signal came
/// (a file of the client's), and the daemon's own was left. A daemon whose
/// socket was removed by hand and bound again by another does not remove that one.
#[test]
fn a_daemon_stopped_by_a_signal_removes_its_own_socket_and_nothing_else() {
    let dir = scratch();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir(&home).unwrap();
    private(&home);
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("d.sock"), b"the client's own file").unwrap();
    let log = dir.path().join("daemon.log");
    let mut c = pp(args!["daemon", "--socket", "d.sock"]);
    c.current_dir(&home).stdin(Stdio::null()).stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap());
    let mut d = Daemon { child: c.spawn().expect("start the daemon"), socket: home.join("d.sock"), log };
    d.wait_for_log("listening on", 1);
    // A job that runs in `work` until its input ends: it holds the daemon there.
    let mut client = d.client(&work, args!["compress", "-", "-o", "piped.gz"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start the client");
    let mut source = client.stdin.take().unwrap();
    source.write_all(&random_bytes(64 << 10, 3)).unwrap();
    d.wait_for_log("job 1: started", 1);
    // SAFETY: a signal to our own test's daemon, which is running.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGTERM) }, 0);
    d.child.wait().unwrap();
    drop(source);
    let _ = client.wait();
    assert_eq!(std::fs::read(work.join("d.sock")).unwrap(), b"the client's own file");
    assert!(!home.join("d.sock").exists(), "the daemon's socket is left: {:?}", names_in(&home));

    let old = Daemon::start(dir.path());
    std::fs::remove_file(&old.socket).unwrap();
    let new = Daemon::start(dir.path());
    let mut old = old;
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(old.child.id() as i32, libc::SIGTERM) }, 0);
    old.child.wait().unwrap();
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    let o = run(&mut new.client(dir.path(), args!["compress", "in.fa", "--no-fallback"])).ok();
    assert!(String::from_utf8_lossy(&o.stdout).contains(RUNNER), "the new daemon is still reached");
}

#[test]
fn a_client_that_goes_away_cancels_its_job_and_nothing_is_kept() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    // The client's stderr, which the daemon holds while it runs the job.
    let elsewhere = scratch();
    let client_stderr = elsewhere.path().join("client.err");
    let mut client = d
        .client(dir.path(), args!["compress", "-", "-o", "piped.gz"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&client_stderr).unwrap())
        .spawn()
        .expect("start the client");
    // A source that keeps coming, slowly, from a pipe the test holds open.
    let mut source = client.stdin.take().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let chunk = random_bytes(64 << 10, 7);
            let start = Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && start.elapsed() < HANG_DEADLINE {
                if source.write_all(&chunk).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    d.wait_for_log("job 1: started: compress - -o piped.gz", 1);
    std::thread::sleep(Duration::from_millis(300));
    client.kill().unwrap();
    let _ = client.wait();
    d.wait_for_log("job 1: exit 130", 1);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_dir_holds(dir.path(), &["daemon.log", "daemon.sock"]);
    // The job's end is the log's: nothing written to the stderr of a client that is gone.
    assert!(d.log().contains("job 1: cancelled: its client went away (not said to the client: it went away)"), "{}", d.log());
    assert_eq!(std::fs::read_to_string(&client_stderr).unwrap(), "", "the gone client's stderr");

    // The daemon goes on with the next client.
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    run(&mut d.client(dir.path(), args!["compress", "-q", "in.fa"])).ok();
    assert_file_eq(&dir.path().join("in.fa.gz"), &compress_bytes(dir.path(), "again.fa", sample(), &[]), "the next job");
}

/// A job blocked on its client's pipes (a source that sends nothing, an output nobody
/// reads), whose client then goes away, ends at once: the daemon runs one job at a time,
/// so it would otherwise hold every later client until the pipe's other end moved.
#[test]
fn a_client_that_goes_away_while_its_job_waits_on_an_idle_pipe_cancels_it() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    run(&mut d.client(dir.path(), args!["compress", "-q", "in.fa", "-o", "in.gz"])).ok();
    let jobs: [(&[&str], bool); 3] = [
        (&["compress", "-", "-o", "idle.gz"], true),
        (&["decompress", "-", "-o", "idle.out"], true),
        (&["decompress", "in.gz", "-o", "-"], false),
    ];
    for (k, (job, reads)) in jobs.into_iter().enumerate() {
        // The test holds the pipe's other end and neither writes nor reads it.
        let (pipe_in, pipe_out) = std::io::pipe().unwrap();
        let mut c = d.client(dir.path(), job.iter().map(std::ffi::OsString::from));
        let held = if reads {
            c.stdin(pipe_in).stdout(Stdio::null());
            Box::new(pipe_out) as Box<dyn std::any::Any>
        } else {
            c.stdin(Stdio::null()).stdout(pipe_out);
            Box::new(pipe_in)
        };
        let mut client = c.stderr(Stdio::null()).spawn().expect("start the client");
        let n = k + 2;
        d.wait_for_log(&format!("job {n}: started: {}", job.join(" ")), 1);
        std::thread::sleep(Duration::from_millis(300));
        client.kill().unwrap();
        let _ = client.wait();
        d.wait_for_log(&format!("job {n}: exit 130"), 1);
        drop(held);
    }
    assert_dir_holds(dir.path(), &["daemon.log", "daemon.sock", "in.fa", "in.gz"]);
    // The daemon goes on with the next client.
    let o = run(&mut d.client(dir.path(), args!["decompress", "-q", "in.gz", "-o", "-"])).ok();
    assert_bytes_eq(&o.stdout, sample(), "the next job");
}

#[test]
fn the_daemon_keeps_emulated_devices_across_jobs_and_replaces_one_that_died() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    let cpu = compress_bytes(dir.path(), "cpu.fa", sample(), &[]);
    let job = |k: usize, extra: &[&str]| -> serde_json::Value {
        let target = format!("e{k}.gz");
        let mut a = args!["compress", "--engine", "emulated", "--json", "in.fa", "-o", &target];
        a.extend(extra.iter().map(std::ffi::OsString::from));
        let r = run(&mut d.client(dir.path(), a)).ok().json();
        assert_file_eq(&dir.path().join(&target), &cpu, "the emulated device's output is the CPU's");
        assert!(r["fallbacks"].as_array().unwrap().is_empty(), "{r}");
        r
    };
    let kind = |r: &serde_json::Value| r["devices"][0]["kind"].as_str().unwrap().to_string();
    let pid = |r: &serde_json::Value| -> i32 {
        let k = kind(r);
        let at = k.find("(pid ").unwrap_or_else(|| panic!("no pid in {k}")) + 5;
        k[at..].split(')').next().unwrap().parse().unwrap()
    };
    let (first, second) = (job(1, &[]), job(2, &[]));
    assert!(!kind(&first).contains("kept open"), "{}", kind(&first));
    assert!(kind(&second).starts_with("kept open across jobs (this is its job 2); emulated CSP process"), "{}", kind(&second));
    assert_eq!(pid(&first), pid(&second), "the same device process");
    assert_eq!(first["devices"][0]["commands"], second["devices"][0]["commands"], "each job counts its own commands");
    assert!(second["devices"][0]["start_cpu_s"].is_null(), "a kept device spent nothing starting for this job: {}", second["devices"][0]);

    // A kept device that dies between jobs is replaced; the new one is kept in turn.
    // SAFETY: a signal to a process id of our own test's device.
    assert_eq!(unsafe { libc::kill(pid(&second), libc::SIGKILL) }, 0);
    // Until it has ended (the daemon's child, maybe not yet reaped): its
    // descriptors are closed then, so the daemon can see that it died.
    wait_until_ended(pid(&second), "the device killed with SIGKILL");
    let third = job(3, &[]);
    assert_ne!(pid(&third), pid(&second));
    assert!(!kind(&third).contains("kept open"), "{}", kind(&third));
    let fourth = job(4, &[]);
    assert_eq!(pid(&fourth), pid(&third));
    // A job with injected faults gets a device of its own, never kept.
    let faulty = job(5, &["--inject-faults", "seed=3,latency=0-1ms"]);
    assert_ne!(pid(&faulty), pid(&fourth));
    assert_eq!(pid(&job(6, &[])), pid(&fourth));
    // The host's own timeout is no reason for another device (each one kept a device, and
    // its half GiB of tmpfs, without end).
    assert_eq!(pid(&job(7, &["--device-timeout", "21"])), pid(&fourth));
    // Other options make another device, which is then kept in place of the first: it is closed.
    let other = pid(&job(8, &["--device-workers", "1"]));
    assert_ne!(other, pid(&fourth));
    wait_until_ended(pid(&fourth), "the device of other options, no longer kept,");
    assert_eq!(pid(&job(9, &["--device-workers", "1"])), other);
}

/// Clients that connect and send nothing hold a thread each only up to a
/// bound (64 requests read at once): the connections past it are refused at
/// once with the reason, a client among them runs its job itself (said), and
/// once the idle ones go, jobs run in the daemon again.
#[test]
fn idle_connections_past_the_bound_are_refused_at_once_not_a_thread_each() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::net::UnixStream;
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), &sample()[..100_000]).unwrap();
    let threads = || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", d.child.id())).unwrap();
        status.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse::<usize>().unwrap()
    };
    let before = threads();
    let idle: Vec<UnixStream> = (0..64).map(|_| UnixStream::connect(&d.socket).unwrap()).collect();
    // The daemon reads the 64 requests on threads of their own (sent nothing yet).
    let start = Instant::now();
    while threads() < before + 64 {
        assert!(start.elapsed() < HANG_DEADLINE, "the daemon has {} threads, {before} before", threads());
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..20 {
        let late = UnixStream::connect(&d.socket).unwrap();
        late.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut line = String::new();
        BufReader::new(&late).read_line(&mut line).unwrap();
        assert!(line.contains("Refused") && line.contains("64 connections are already sending their requests"), "{line}");
    }
    assert!(threads() <= before + 64, "{} threads for 84 connections ({before} before)", threads());
    let out = run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "here.gz"])).ok();
    assert!(out.stderr.contains("FALLBACK: PEERPATH_DAEMON=") && out.stderr.contains("64 connections are already sending"), "{}", out.describe());
    assert!(!String::from_utf8_lossy(&out.stdout).contains(RUNNER));
    drop(idle);
    let start = Instant::now();
    loop {
        let out = run(&mut d.client(dir.path(), args!["compress", "in.fa", "-f", "-o", "there.gz"])).ok();
        if String::from_utf8_lossy(&out.stdout).contains(RUNNER) {
            break;
        }
        assert!(start.elapsed() < HANG_DEADLINE, "jobs never ran in the daemon again: {}", out.describe());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read(dir.path().join("here.gz")).unwrap(), std::fs::read(dir.path().join("there.gz")).unwrap());
}

/// A pipeline of two clients (`decompress -o - | compress -`): the second job's standard
/// input is the first's output. Queued behind it, the daemon held the pipe's read end where
/// no one read it, and both waited for ever (and every later client behind them). A job
/// whose standard input or output is a pipe is now refused while another runs or waits, and
/// runs in its client, said so.
#[test]
fn a_pipeline_of_clients_finishes_and_the_daemon_goes_on() {
    let dir = scratch();
    let d = dir.path();
    let daemon = Daemon::start(d);
    let data = mixed_data(24 << 20, 3);
    std::fs::write(d.join("a"), &data).unwrap();
    run(&mut pp(args!["compress", d.join("a"), "-o", d.join("a.gz"), "-q"])).ok();
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg("\"$0\" decompress a.gz -o - -q | \"$0\" compress - -l 6 -o b.gz -q")
        .arg(bin())
        .current_dir(d)
        .env("PEERPATH_DAEMON", &daemon.socket);
    let o = run(&mut sh);
    assert!(o.status.success(), "{}\n{}", o.stderr, daemon.log());
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("a pipe"), "the job that ran here says why: {}", o.stderr);
    run(&mut pp(args!["decompress", d.join("b.gz"), "-o", d.join("b"), "-q"])).ok();
    assert_file_eq(&d.join("b"), &data, "through the pipeline");
    // The daemon still takes jobs.
    run(&mut daemon.client(d, args!["verify", "b.gz", "-q"])).ok();
    assert!(daemon.log().contains("job 2: exit 0"), "{}", daemon.log());
}

/// A client told its job ended sends its next one at once (a script's next line). The daemon was
/// free again only after it had said the end (logged it, told the client, closed its streams): a
/// job whose standard input or output is a pipe, sent in between, was refused as if a job ran
/// ("another job runs or waits here"), said as a fallback, exit 18 with --no-fallback (seen as
/// a_client_that_goes_away_while_its_job_waits_on_an_idle_pipe_cancels_it failing now and then,
/// a job refused just after the last one's 'exit' line). Here that instant is widened: the daemon
/// runs under strace, each of its close(2)s held 200 ms on its way back, so the order of its
/// steps decides, not the machine's speed.
#[test]
fn a_job_sent_as_the_last_one_ends_is_not_refused() {
    let test = "a_job_sent_as_the_last_one_ends_is_not_refused";
    let Some(tools) = tools_or_skip(test, &["strace"]) else { return };
    // -D: the daemon is the process the test starts (and kills), its tracer a grandchild.
    let strace = |c: &mut Command| {
        c.args(["-D", "-f", "-qq", "-o", "/dev/null", "-e", "trace=close", "-e", "inject=close:delay_exit=200000"]);
    };
    let mut probe = Command::new(&tools[0]);
    strace(&mut probe);
    let probe = run(probe.arg("true"));
    if !probe.status.success() {
        eprintln!("SKIPPED {test}: strace cannot trace here: {}", probe.stderr.trim());
        return;
    }
    let dir = scratch();
    let d = dir.path();
    private(d);
    let socket = d.join("daemon.sock");
    let mut c = Command::new(&tools[0]);
    strace(&mut c);
    c.arg(bin()).arg("daemon").arg("--socket").arg(&socket);
    let daemon = Daemon::spawn(c, socket, d.join("daemon.log"));
    std::fs::write(d.join("in.fa"), sample()).unwrap();
    run(&mut pp(args!["compress", d.join("in.fa"), "-o", d.join("in.gz"), "-q"])).ok();
    // A job whose client's streams are files: the test goes on once that client has exited.
    let (code, _, err) = run_to_files(daemon.client(d, args!["verify", "in.gz", "-q", "--no-fallback"]), d, "first");
    assert_eq!(code, Some(0), "{err}");
    // At once, one whose standard output and error are pipes (the test reads them).
    run(&mut daemon.client(d, args!["verify", "in.gz", "--no-fallback"])).ok();
    assert!(daemon.log().contains("job 2: exit 0") && !daemon.log().contains("refused"), "{}", daemon.log());
}

/// Each line of the daemon's log is one write(2): `writeln!` wrote its pieces apart ("peerpath
/// daemon: job ", "1", ": exit ", ...), so lines of threads logging at once could interleave
/// mid-line.
#[test]
fn each_line_of_the_daemons_log_is_written_whole() {
    let test = "each_line_of_the_daemons_log_is_written_whole";
    let Some(tools) = tools_or_skip(test, &["strace"]) else { return };
    let dir = scratch();
    let d = dir.path();
    private(d);
    let trace = d.join("writes.txt");
    let mut probe = Command::new(&tools[0]);
    let probe = run(probe.args(["-qq", "-o", "/dev/null", "true"]));
    if !probe.status.success() {
        eprintln!("SKIPPED {test}: strace cannot trace here: {}", probe.stderr.trim());
        return;
    }
    let socket = d.join("daemon.sock");
    let mut c = Command::new(&tools[0]);
    c.args(["-D", "-f", "-qq", "-s", "4096", "-e", "trace=write", "-o"]).arg(&trace).arg(bin()).arg("daemon").arg("--socket").arg(&socket);
    let daemon = Daemon::spawn(c, socket, d.join("daemon.log"));
    std::fs::write(d.join("in.fa"), &sample()[..100_000]).unwrap();
    run(&mut pp(args!["compress", d.join("in.fa"), "-o", d.join("in.gz"), "-q"])).ok();
    run(&mut daemon.client(d, args!["verify", "in.gz", "--no-fallback"])).ok();
    assert!(daemon.log().contains("job 1: exit 0"), "{}", daemon.log());
    drop(daemon);
    let writes = std::fs::read_to_string(&trace).unwrap();
    let pieces: Vec<&str> = writes.lines().filter(|l| l.contains("write(") && l.contains("\"peerpath daemon")).collect();
    assert!(pieces.len() >= 3, "the log's writes were traced:\n{writes}");
    for w in pieces {
        assert!(w.contains("\\n\", "), "a log line written in pieces: {w}");
    }
}

/// A client whose standard output and error are files (not the pipes `run` reads, which a
/// job queued behind another may not have), as a person's terminal would be: its exit code,
/// output and error once it has exited.
fn run_to_files(mut c: Command, dir: &Path, tag: &str) -> (Option<i32>, String, String) {
    let (out, err) = (dir.join(format!("{tag}.out")), dir.join(format!("{tag}.err")));
    let mut child = c.stdin(Stdio::null()).stdout(std::fs::File::create(&out).unwrap()).stderr(std::fs::File::create(&err).unwrap()).spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < HANG_DEADLINE, "{tag}: the client never ended");
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let r = (status.code(), read(&out), read(&err));
    std::fs::remove_file(out).unwrap();
    std::fs::remove_file(err).unwrap();
    r
}

/// A job stalled on a pipe no one reads (`decompress -o - | less`, left open) held every later
/// client, silent: a job that has waited `--max-wait` behind it is refused and runs in its
/// client, said (exit 18 with --no-fallback).
#[test]
fn a_job_waits_at_most_max_wait_behind_one_stalled_on_a_pipe() {
    let dir = scratch();
    let d = Daemon::start_with(dir.path(), &["--max-wait", "1"]);
    std::fs::write(dir.path().join("a"), mixed_data(8 << 20, 5)).unwrap();
    run(&mut pp(args!["compress", dir.path().join("a"), "-o", dir.path().join("a.gz"), "-q"])).ok();
    // The test holds the read end of the job's output and never reads it.
    let (held, pipe_out) = std::io::pipe().unwrap();
    let mut stalled = d.client(dir.path(), args!["decompress", "a.gz", "-o", "-", "-q"]).stdin(Stdio::null()).stdout(pipe_out).stderr(Stdio::null()).spawn().unwrap();
    d.wait_for_log("job 1: started: decompress a.gz -o -", 1);
    let (code, _, err) = run_to_files(d.client(dir.path(), args!["verify", "a.gz", "-q"]), dir.path(), "late");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("FALLBACK: PEERPATH_DAEMON=") && err.contains("(--max-wait) behind job 1"), "{err}\n{}", d.log());
    let (code, _, err) = run_to_files(d.client(dir.path(), args!["verify", "a.gz", "-q", "--no-fallback"]), dir.path(), "strict");
    assert_eq!(code, Some(18), "{err}");
    assert!(err.contains("--max-wait"), "{err}");
    assert!(!d.log().contains("job 2"), "a refused job never starts: {}", d.log());
    drop(held);
    let _ = stalled.wait();
    // The daemon takes the next job.
    let (code, out, err) = run_to_files(d.client(dir.path(), args!["verify", "a.gz"]), dir.path(), "next");
    assert!(code == Some(0) && out.contains(RUNNER), "{out}{err}");
    d.wait_for_log("job 2: exit 0", 1);
}

/// A daemon that takes the connection and says nothing (stopped, SIGSTOP) held its clients for
/// ever: a client gives it up after its first answer's time and runs the job itself, said; the
/// daemon, once it goes on, does not run the job its client gave up.
#[test]
fn a_stopped_daemon_is_given_up_and_does_not_run_the_job_later() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "in.gz", "-q"])).ok();
    // SAFETY: kill(2) with the pid of the child this test started.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGSTOP) }, 0);
    // Pipes, read to their end: the client's standard streams go to the daemon only when it asks
    // for them, so a stopped daemon holds none (a pipe's reader would wait with it).
    let o = run_full(&mut d.client(dir.path(), args!["verify", "in.gz", "-q"]), None, HANG_DEADLINE);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(d.child.id() as i32, libc::SIGCONT) }, 0);
    let o = o.ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("did not answer within 10 s"), "{}", o.describe());
    // The next client's job runs in the daemon, as job 2: the one given up was not run.
    let out = run(&mut d.client(dir.path(), args!["verify", "in.gz"])).ok();
    assert!(String::from_utf8_lossy(&out.stdout).contains(RUNNER), "{}", out.describe());
    d.wait_for_log("job 2: exit 0", 1);
    assert!(!d.log().contains("job 3") && d.log().matches("started: verify").count() == 1, "{}", d.log());
}

/// A connection that trickles its request in (a byte a second) held a reading slot for as long
/// as it went on: the whole request has 10 s.
#[test]
fn a_request_sent_a_byte_at_a_time_is_cut_off_after_10_s() {
    use std::os::unix::net::UnixStream;
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let mut c = UnixStream::connect(&d.socket).unwrap();
    c.write_all(&1000u32.to_le_bytes()).unwrap();
    let start = Instant::now();
    while c.write_all(b" ").is_ok() {
        assert!(start.elapsed() < HANG_DEADLINE, "the daemon still reads the trickle: {}", d.log());
        std::thread::sleep(Duration::from_millis(500));
    }
    d.wait_for_log("a connection refused: no whole request within 10 s", 1);
}

/// Daemons started at once on one stale socket: one listens, the others are refused (two used
/// to stay up, one unreachable, its SIGTERM removing the other's socket).
#[test]
fn daemons_started_at_once_on_one_socket_leave_one() {
    let dir = scratch();
    private(dir.path());
    let socket = dir.path().join("d.sock");
    // A stale socket: bound, its listener gone.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let mut daemons: Vec<Child> = (0..4)
        .map(|_| pp(args!["daemon", "--socket", &socket]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap())
        .collect();
    // Three are refused and exit; one stays.
    let start = Instant::now();
    let mut refused = 0;
    while refused < 3 {
        assert!(start.elapsed() < HANG_DEADLINE, "{refused} daemons refused");
        std::thread::sleep(Duration::from_millis(50));
        let mut k = 0;
        while k < daemons.len() {
            if let Some(status) = daemons[k].try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(daemons[k].stderr.as_mut().unwrap(), &mut err).unwrap();
                assert_eq!(status.code(), Some(2), "{err}");
                assert!(err.contains("already listens on"), "{err}");
                let _ = daemons.remove(k).wait(); // exited (try_wait said so): reaped already
                refused += 1;
            } else {
                k += 1;
            }
        }
    }
    assert_eq!(daemons.len(), 1);
    std::thread::sleep(Duration::from_millis(200));
    assert!(daemons[0].try_wait().unwrap().is_none(), "the one left stays up");
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    let o = run(pp(args!["compress", "in.fa", "-o", "in.gz"]).current_dir(dir.path()).env("PEERPATH_DAEMON", &socket)).ok();
    assert!(String::from_utf8_lossy(&o.stdout).contains(RUNNER), "{}", o.describe());
    let _ = daemons[0].kill();
    let _ = daemons[0].wait();
}

/// A client started with its standard output closed (`>&-`) holds an epoll instance there (so
/// that writes fail rather than vanish): handed to the daemon, the job waited for ever on it.
/// Such a job runs in its client, said, and fails there saying why.
#[test]
fn a_client_with_a_closed_standard_stream_runs_its_job_itself() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "in.gz", "-q"])).ok();
    let mut sh = Command::new("sh");
    sh.arg("-c").arg("exec \"$0\" \"$@\" >&-").arg(bin()).args(["decompress", "in.gz", "-o", "-", "-q"]).current_dir(dir.path()).env("PEERPATH_DAEMON", &d.socket);
    let o = run_full(&mut sh, None, HANG_DEADLINE);
    assert_eq!(o.code(), Some(11), "{}", o.describe());
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("cannot write standard output: it was closed"), "{}", o.describe());
    assert!(!d.log().contains("job 2"), "{}", d.log());
}

/// Whether this test runs as root (which alone can run a process of another user here).
fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// setpriv, to run processes as nobody (uid and gid 65534), where this test can: it runs as root,
/// setpriv is there and nobody can run the binary. `None`, saying why, elsewhere.
fn setpriv_for_nobody(test: &str) -> Option<PathBuf> {
    if !root() {
        eprintln!("SKIPPED {test}: only root can run a process of another user (setpriv)");
        return None;
    }
    let Some(setpriv) = tool("setpriv") else {
        eprintln!("SKIPPED {test}: there is no setpriv to run a process as nobody");
        return None;
    };
    if !as_nobody(&setpriv).arg(bin()).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED {test}: nobody cannot run {} (a parent directory closed to other users?)", bin());
        return None;
    }
    // Nor reach the scratch directories (some kernels let a closed parent be passed to run a
    // file, not to open one: gVisor under a /root of mode 0700).
    let tmp = env!("CARGO_TARGET_TMPDIR");
    if !as_nobody(&setpriv).args(["test", "-x", tmp]).status().is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED {test}: nobody cannot reach {tmp} (a parent directory closed to other users?)");
        return None;
    }
    Some(setpriv)
}

/// `peerpath` run as nobody, through `setpriv`.
fn as_nobody(setpriv: &Path) -> Command {
    let mut c = Command::new(setpriv);
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
    c
}

/// A scratch directory that nobody may pass through (not list), for a directory of nobody's in it.
fn passable_scratch() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}

/// A directory `name` in `dir` that belongs to nobody, mode 0700.
fn nobodys_directory(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    d
}

/// The daemon listened on an abstract socket name (to claim a path while it bound), which any user
/// could bind first, and anywhere it was told: in a directory another user can write, theirs could
/// be there first. Its socket's directory must now be its user's alone (owned, mode 0700); one
/// that is not, or that another user made at the default place first, is refused, saying why.
/// Without --socket it listens in TMPDIR/peerpath-UID (or $XDG_RUNTIME_DIR), made mode 0700.
#[test]
fn the_socket_lies_in_a_directory_no_other_user_can_reach() {
    let dir = scratch();
    let d = dir.path();
    let refused = |c: &mut Command, why: &str| {
        let o = run_full(c, None, HANG_DEADLINE);
        assert_eq!(o.code(), Some(2), "{}", o.describe());
        assert!(o.stderr.starts_with("peerpath: error: daemon: ") && o.stderr.contains(why) && o.stderr.lines().count() == 1, "{}", o.describe());
    };
    let open = d.join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    refused(&mut pp(args!["daemon", "--socket", open.join("d.sock")]), &format!("{} has mode 0755: other users can reach it", open.display()));
    assert!(!open.join("d.sock").exists());

    // Without --socket: TMPDIR/peerpath-UID, unless another took that name first.
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let private = tmp.join(format!("peerpath-{uid}"));
    let default = |c: &mut Command| {
        c.env("TMPDIR", &tmp).env_remove("XDG_RUNTIME_DIR");
    };
    std::os::unix::fs::symlink(&open, &private).unwrap();
    let mut c = pp(args!["daemon"]);
    default(&mut c);
    refused(&mut c, &format!("{} is not a directory (a symbolic link, or a file)", private.display()));
    std::fs::remove_file(&private).unwrap();
    if !root() {
        eprintln!("SKIPPED the_socket_lies_in_a_directory_no_other_user_can_reach, in part: only root can make a directory of another user's");
    } else {
        nobodys_directory(&tmp, &format!("peerpath-{uid}"));
        let mut c = pp(args!["daemon"]);
        default(&mut c);
        refused(&mut c, &format!("{} belongs to user 65534, not to this user (0)", private.display()));
        std::fs::remove_dir(&private).unwrap();
    }
    let mut c = pp(args!["daemon"]);
    default(&mut c);
    let socket = private.join("peerpath-daemon.sock");
    let daemon = Daemon::spawn(c, socket.clone(), d.join("daemon.log"));
    assert!(daemon.log().contains(&format!("listening on {} (clients: PEERPATH_DAEMON={})", socket.display(), socket.display())), "{}", daemon.log());
    assert_eq!(std::fs::metadata(&private).unwrap().permissions().mode() & 0o7777, 0o700);
    std::fs::write(d.join("in.fa"), sample()).unwrap();
    let mut c = daemon.client(d, args!["compress", "in.fa", "--no-fallback"]);
    default(&mut c);
    let o = run(&mut c).ok();
    assert!(String::from_utf8_lossy(&o.stdout).contains(RUNNER), "{}", o.describe());
}

/// A client handed its job (command line, environment with a key, standard streams) to whatever
/// listened at PEERPATH_DAEMON: a socket another user put there got them. It now hands it only to a
/// daemon of its own user, and runs the job itself otherwise, saying why (exit 18 with
/// --no-fallback). Root's connections were taken by a daemon of another user past SO_PEERCRED (to
/// be refused later, their user ids differing): they are now refused there, as any other user's.
#[test]
fn a_client_hands_its_job_only_to_a_daemon_of_its_own_user() {
    let test = "a_client_hands_its_job_only_to_a_daemon_of_its_own_user";
    let Some(setpriv) = setpriv_for_nobody(test) else { return };
    let dir = passable_scratch();
    let d = dir.path();
    let theirs = nobodys_directory(d, "theirs");
    let mut nobody = as_nobody(&setpriv);
    nobody.arg(bin()).args(["daemon", "--socket"]).arg(theirs.join("d.sock"));
    let daemon = Daemon::spawn(nobody, theirs.join("d.sock"), d.join("daemon.log"));
    std::fs::write(d.join("in.fa"), sample()).unwrap();
    let key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let o = run(daemon.client(d, args!["compress", "in.fa", "-o", "here.gz"]).env("PEERPATH_KEY", key)).ok();
    assert!(o.stderr.contains("the socket is held by user 65534, not this user (0)") && o.stderr.contains("the job runs in this process"), "{}", o.describe());
    assert!(!String::from_utf8_lossy(&o.stdout).contains(RUNNER));
    assert!(d.join("here.gz").exists());
    let o = run(daemon.client(d, args!["compress", "in.fa", "-o", "never.gz", "--no-fallback"]).env("PEERPATH_KEY", key));
    assert_eq!(o.code(), Some(18), "{}", o.describe());
    assert!(o.stderr.contains("held by user 65534") && o.stderr.contains("(--no-fallback)"), "{}", o.describe());
    assert!(!d.join("never.gz").exists());
    // Root, at the daemon's end: refused on SO_PEERCRED, before its request is read.
    let mut conn = std::os::unix::net::UnixStream::connect(&daemon.socket).unwrap();
    let _ = conn.write_all(&2u32.to_le_bytes());
    let _ = conn.write_all(b"{}");
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut conn, &mut answer);
    assert!(answer.contains("user 0 is not the daemon's user (65534)"), "{answer}");
    daemon.wait_for_log("a connection refused: user 0 is not the daemon's user (65534)", 1);
    let log = daemon.log();
    assert!(!log.contains("job 1") && !log.contains("not a request") && !log.contains(key), "no request reached the daemon:\n{log}");
    assert_eq!(std::fs::metadata(&daemon.socket).unwrap().permissions().mode() & 0o777, 0o600);
}

/// A client of another user cannot reach the daemon's socket (its directory and mode keep it out);
/// where it can (here opened to all on purpose), a client of root's daemon handed it its job, which
/// the daemon refused: the client now hands no job to root's daemon (SO_PEERCRED), saying why.
#[test]
fn a_client_of_another_user_hands_no_job_to_roots_daemon() {
    let test = "a_client_of_another_user_hands_no_job_to_roots_daemon";
    let Some(setpriv) = setpriv_for_nobody(test) else { return };
    let dir = scratch();
    let daemon = Daemon::start(dir.path());
    let client = || {
        let mut c = as_nobody(&setpriv);
        c.arg(bin()).args(["verify", "x.gz", "--no-fallback"]).current_dir("/").env("PEERPATH_DAEMON", &daemon.socket);
        c
    };
    let o = run(&mut client());
    assert_eq!(o.code(), Some(18), "{}", o.describe());
    assert!(o.stderr.contains("cannot reach the daemon: Permission denied"), "the socket's directory keeps nobody out: {}", o.describe());
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&daemon.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = run(&mut client());
    assert_eq!(o.code(), Some(18), "{}", o.describe());
    assert!(o.stderr.contains("the socket is held by user 0, not this user (65534): not a daemon of this user's") && o.stderr.contains("(--no-fallback)"), "{}", o.describe());
    // The daemon, for its part, refused the connection (SO_PEERCRED) and saw no request.
    daemon.wait_for_log("a connection refused: user 65534 is not the daemon's user (0)", 1);
    assert!(!daemon.log().contains("job 1"), "{}", daemon.log());
}

/// What a client sends is untrusted input (any process of the daemon's user): a length past the
/// bound, or bytes that are not a request, were dropped with the connection, said only in the
/// daemon's log (its client then said "the connection closed"). They are refused to the client
/// too, before anything is sized by the length, and the daemon goes on.
#[test]
fn a_length_past_the_bound_or_bytes_that_are_not_a_request_are_refused_to_the_client() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::net::UnixStream;
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), &sample()[..100_000]).unwrap();
    let cases: [(&[u8], &str); 4] = [
        (&u32::MAX.to_le_bytes(), "a request of 4294967295 bytes (at most 1048576"),
        (&((1u32 << 20) + 1).to_le_bytes(), "a request of 1048577 bytes (at most 1048576"),
        (b"\x05\0\0\0hello", "not a request: "),
        (b"\x02\0\0\0{}", "not a request: missing field"),
    ];
    for (k, (sent, why)) in cases.iter().enumerate() {
        let c = UnixStream::connect(&d.socket).unwrap();
        c.set_read_timeout(Some(HANG_DEADLINE)).unwrap();
        (&c).write_all(sent).unwrap();
        let mut line = String::new();
        BufReader::new(&c).read_line(&mut line).unwrap();
        assert!(line.starts_with("{\"Refused\"") && line.contains(why), "{sent:?}: {line:?}");
        d.wait_for_log("a connection refused: ", k + 1);
    }
    let out = run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "in.fa.gz"])).ok();
    assert!(String::from_utf8_lossy(&out.stdout).contains(RUNNER), "{}", out.describe());
}

/// A client that sends part of its request and waits, or goes away in the middle of it, holds
/// only its own reading thread (for at most 10 s): the daemon does not exit, and other clients'
/// jobs run meanwhile.
#[test]
fn a_truncated_request_or_one_cut_mid_way_holds_no_other_client() {
    use std::os::unix::net::UnixStream;
    let dir = scratch();
    let d = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), &sample()[..100_000]).unwrap();
    let mut waiting = UnixStream::connect(&d.socket).unwrap();
    waiting.write_all(b"\x00\x00\x10\x00{\"exe\":").unwrap();
    let out = run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "a.gz"])).ok();
    assert!(String::from_utf8_lossy(&out.stdout).contains(RUNNER), "{}", out.describe());
    for cut in [&b"\x00\x00"[..], b"\x00\x00\x10\x00{\"exe\":"] {
        let mut gone = UnixStream::connect(&d.socket).unwrap();
        gone.write_all(cut).unwrap();
        drop(gone);
    }
    d.wait_for_log("a connection refused: the client closed before its whole request", 2);
    // Its end: gone, or past its 10 s on a slow machine.
    drop(waiting);
    d.wait_for_log("a connection refused: ", 3);
    let out = run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "b.gz"])).ok();
    assert!(String::from_utf8_lossy(&out.stdout).contains(RUNNER), "{}", out.describe());
    assert_eq!(std::fs::read(dir.path().join("a.gz")).unwrap(), std::fs::read(dir.path().join("b.gz")).unwrap());
}

/// A command line longer than the daemon takes (a request past 1 MiB: `compress` of many files)
/// was sent anyway, the daemon closed the connection on it, and the client said only "the
/// connection closed". The client says why, and does not send it. One of 400 KB of text is sent:
/// its arguments are strings, a byte a byte (they were arrays of numbers, 3.7 bytes a letter, and
/// a command line past 280 KB did not fit).
#[test]
fn a_command_line_too_long_for_the_daemon_is_said_by_its_client() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let long: Vec<String> = (0..11).map(|i| format!("{i:02}{}", "a".repeat(100_000))).collect();
    let mut c = d.client(dir.path(), args!["verify", "--no-fallback"]);
    c.args(&long[..4]);
    let out = run(&mut c);
    assert_ne!(out.status.code(), Some(0), "{}", out.describe());
    assert!(!out.stderr.contains("does not take this job"), "{}", out.describe());
    d.wait_for_log("job 1: exit ", 1);
    assert!(d.log().contains("job 1: started: verify --no-fallback 00aaa"), "{}", d.log());
    let mut c = d.client(dir.path(), args!["verify", "--no-fallback"]);
    c.args(&long);
    let out = run(&mut c);
    assert_eq!(out.status.code(), Some(18), "{}", out.describe());
    assert!(out.stderr.contains("the daemon does not take this job: a request of ") && out.stderr.contains("bytes (at most 1048576"), "{}", out.describe());
    assert!(!d.log().contains("a connection") && !d.log().contains("job 2"), "the request was sent: {}", d.log());
}

/// Names in the client's and the daemon's messages are quoted as elsewhere: a newline in a
/// socket's name, or in an argument of a job's command line, split the message's line.
#[test]
fn names_in_the_daemons_and_its_clients_messages_are_quoted() {
    let dir = scratch();
    let out = run(pp(args!["verify", "--no-fallback", "x.gz"]).current_dir(dir.path()).env("PEERPATH_DAEMON", dir.path().join("no\ndaemon.sock")));
    assert_eq!(out.status.code(), Some(18), "{}", out.describe());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.describe());
    assert!(out.stderr.contains("no'$'\\n''daemon.sock': cannot reach the daemon"), "{}", out.describe());
    private(dir.path());
    let socket = dir.path().join("d\naemon.sock");
    let d = Daemon::spawn(pp(args!["daemon", "--socket", &socket]), socket, dir.path().join("daemon.log"));
    assert!(d.log().contains("d'$'\\n''aemon.sock' (clients: PEERPATH_DAEMON='"), "{}", d.log());
    let out = run(&mut d.client(dir.path(), args!["verify", "a\nb.gz"]));
    assert_ne!(out.status.code(), Some(0), "{}", out.describe());
    d.wait_for_log("job 1: exit ", 1);
    assert!(d.log().contains("started: verify 'a'$'\\n''b.gz' (client pid "), "{}", d.log());
}

/// Sends a request (any: the daemon queues a job before it looks at it) and `fd` as the
/// client's three standard streams, as a client does; returns the connection and the daemon's
/// answer to it.
fn queue_raw(socket: &Path, fd: &std::fs::File) -> (std::os::unix::net::UnixStream, String) {
    send_raw(socket, fd, 3)
}

/// A request's JSON with these arguments and variables (JSON array items).
fn raw_request(argv: &str, env: &str) -> Vec<u8> {
    format!(r#"{{"exe":{{"dev":0,"ino":0,"size":0,"mtime_ns":0}},"argv":[{argv}],"cwd":[],"umask":0,"env":[{env}]}}"#).into_bytes()
}

/// Connects to the daemon at `socket` and sends a request of `body` (its length first); returns
/// the connection, its reader and the daemon's first answer.
fn request_raw(socket: &Path, body: &[u8]) -> (std::os::unix::net::UnixStream, String) {
    use std::io::{BufRead, BufReader};
    let c = std::os::unix::net::UnixStream::connect(socket).unwrap();
    c.set_read_timeout(Some(HANG_DEADLINE)).unwrap();
    (&c).write_all(&(body.len() as u32).to_le_bytes()).unwrap();
    (&c).write_all(body).unwrap();
    let mut line = String::new();
    // The daemon says nothing more before the client's next step: nothing is left in the reader.
    BufReader::new(&c).read_line(&mut line).unwrap();
    (c, line)
}

/// [`queue_raw`] with `fd` sent `count` times as the client's standard streams (3).
fn send_raw(socket: &Path, fd: &std::fs::File, count: usize) -> (std::os::unix::net::UnixStream, String) {
    use std::io::{BufRead, BufReader};
    use std::os::fd::AsRawFd;
    let (c, line) = request_raw(socket, &raw_request("", ""));
    assert_eq!(line, "\"Descriptors\"\n");
    let mut reader = BufReader::new(&c);
    let mut line = String::new();
    let fds = vec![fd.as_raw_fd(); count];
    let fds = &fds[..];
    assert!((1..=12).contains(&count));
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut control = [0u64; 8];
    // SAFETY: the control buffer (64 bytes, 8-aligned) holds one header with up to 12
    // descriptors (CMSG_SPACE(48) = 64); the message points at `iov` and `control`, which outlive
    // sendmsg.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32) as _;
        let h = libc::CMSG_FIRSTHDR(&msg);
        (*h).cmsg_level = libc::SOL_SOCKET;
        (*h).cmsg_type = libc::SCM_RIGHTS;
        (*h).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(h).cast(), fds.len());
        libc::sendmsg(c.as_raw_fd(), &msg, 0)
    };
    assert_eq!(sent, 1, "{}", std::io::Error::last_os_error());
    line.clear();
    reader.read_line(&mut line).unwrap();
    (c, line)
}

/// Jobs queued behind a running one were kept however many came, each with its request and
/// four descriptors: a client (or a runaway script) that queued thousands and never said go held
/// every later client for 10 s each (hours), and the daemon's memory and descriptors grew until
/// it could accept no connection. At most 64 wait; past that a job is refused at once and runs
/// in its client, said (exit 18 with --no-fallback); the daemon goes on.
#[test]
fn at_most_64_jobs_wait_and_more_are_refused_at_once() {
    let dir = scratch();
    let d = Daemon::start_with(dir.path(), &["--max-wait", "0"]);
    std::fs::write(dir.path().join("a"), mixed_data(8 << 20, 5)).unwrap();
    run(&mut pp(args!["compress", dir.path().join("a"), "-o", dir.path().join("a.gz"), "-q"])).ok();
    // The running job: its output a pipe the test holds and never reads.
    let (held, pipe_out) = std::io::pipe().unwrap();
    let mut stalled = d.client(dir.path(), args!["decompress", "a.gz", "-o", "-", "-q"]).stdin(Stdio::null()).stdout(pipe_out).stderr(Stdio::null()).spawn().unwrap();
    d.wait_for_log("job 1: started: decompress a.gz -o -", 1);
    let streams = std::fs::File::create(dir.path().join("streams")).unwrap();
    let mut waiting = Vec::new();
    for k in 0..64 {
        let (c, line) = queue_raw(&d.socket, &streams);
        assert_eq!(line, format!("{{\"Queued\":{{\"ahead\":{}}}}}\n", k + 1));
        waiting.push(c);
    }
    let (_c, line) = queue_raw(&d.socket, &streams);
    assert!(line.starts_with("{\"Refused\"") && line.contains("64 jobs already wait here"), "{line}");
    let (code, _, err) = run_to_files(d.client(dir.path(), args!["verify", "a.gz", "-q", "--no-fallback"]), dir.path(), "strict");
    assert_eq!(code, Some(18), "{err}");
    assert!(err.contains("the daemon refused the job: 64 jobs already wait here"), "{err}");
    // The waiting clients go away, the running job's reader too: the daemon takes the next job.
    drop(waiting);
    drop(held);
    let _ = stalled.wait();
    let (code, out, err) = run_to_files(d.client(dir.path(), args!["verify", "a.gz"]), dir.path(), "next");
    assert!(code == Some(0) && out.contains(RUNNER), "{out}{err}");
}

/// A request's arguments and variables were a vector each (24 bytes, and an allocation): a 1 MiB
/// request of empty arguments decoded to 10 MiB, of short variables to 14 MiB, held while its
/// client sent its streams (or did not: 10 s), and with 64 requests read at once and 64 waiting
/// a daemon could be made to hold near 2 GiB. They are one buffer now, no longer than the request:
/// 8 such requests held at once add to the daemon's peak memory about their own bytes, not ten
/// times them.
#[test]
fn requests_of_many_empty_arguments_or_short_variables_take_about_their_bytes() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let peak_kib = || -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", d.child.id())).unwrap();
        status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().strip_suffix(" kB")?.parse().ok()).unwrap()
    };
    // As many items as a 1 MiB request holds.
    let fill = |item: &dyn Fn(usize) -> String| {
        let mut items = Vec::new();
        let mut len = raw_request("", "").len();
        loop {
            let next = item(items.len());
            len += next.len() + 1;
            if len > 1 << 20 {
                return items.join(",");
            }
            items.push(next);
        }
    };
    let (args, env) = (raw_request(&fill(&|_| "[]".into()), ""), raw_request("", &fill(&|i| format!("\"{i:x}=\""))));
    let before = peak_kib();
    let held: Vec<_> = (0..8)
        .map(|k| {
            let (c, line) = request_raw(&d.socket, if k % 2 == 0 { &args } else { &env });
            assert_eq!(line, "\"Descriptors\"\n", "request {k}");
            c
        })
        .collect();
    let grown = peak_kib() - before;
    assert!(grown < 8 * 3 * 1024, "8 requests of 1 MiB took {grown} KiB");
    drop(held);
    d.wait_for_log("a connection refused: ", 8);
}

/// A client that sent more descriptors than its three standard streams (or fewer) was refused
/// only in the daemon's log: the client read a closed connection. It is told why, and none of the
/// descriptors stays open in the daemon; the daemon goes on.
#[test]
fn a_client_that_sends_other_than_three_descriptors_is_told_and_none_are_kept() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let open = || std::fs::read_dir(format!("/proc/{}/fd", d.child.id())).unwrap().count();
    let before = open();
    let streams = std::fs::File::create(dir.path().join("streams")).unwrap();
    for (k, (count, why)) in [(4, "4 descriptors with the request"), (12, "more than "), (2, "2 descriptors with the request")].into_iter().enumerate() {
        let (_c, line) = send_raw(&d.socket, &streams, count);
        assert!(line.starts_with("{\"Refused\"") && line.contains(why) && line.contains("its standard input, output and error: 3"), "{count}: {line:?}");
        d.wait_for_log("a connection refused: ", k + 1);
    }
    let start = Instant::now();
    while open() != before {
        assert!(start.elapsed() < HANG_DEADLINE, "{} descriptors open in the daemon, {before} before", open());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(dir.path().join("in.fa"), &sample()[..100_000]).unwrap();
    let out = run(&mut d.client(dir.path(), args!["compress", "in.fa", "-o", "in.fa.gz"])).ok();
    assert!(String::from_utf8_lossy(&out.stdout).contains(RUNNER), "{}", out.describe());
}

/// The log quoted each argument as names are, which leaves spaces as they are: `verify 'a b.gz'`
/// read `verify a b.gz`, two arguments. One with a space or a character a shell reads apart is
/// quoted as GNU `ls` quotes such names.
#[test]
fn an_argument_with_a_space_reads_as_one_in_the_daemons_log() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let out = run(&mut d.client(dir.path(), args!["verify", "a b.gz", "it's;.gz", "plain.gz"]));
    assert_ne!(out.status.code(), Some(0), "{}", out.describe());
    d.wait_for_log("job 1: exit ", 1);
    assert!(d.log().contains(r"job 1: started: verify 'a b.gz' 'it'\''s;.gz' plain.gz"), "{}", d.log());
}

/// A job ran with the daemon's permissions and in its view of the files, whatever its client's: a
/// root client without capabilities read through it a file it could not read itself, one with
/// another group than the daemon's had that group's files reached by the daemon's groups, and one
/// in another mount namespace had its relative path name another file. A client whose groups,
/// capabilities, mount namespace or root directory are not the daemon's is now refused, said, and
/// runs its job itself (exit 18 with --no-fallback).
#[test]
fn a_client_with_other_permissions_or_another_view_of_the_files_than_the_daemons_is_refused() {
    let test = "a_client_with_other_permissions_or_another_view_of_the_files_than_the_daemons_is_refused";
    let Some(setpriv) = setpriv_for_nobody(test) else { return };
    let dir = scratch();
    let d = dir.path();
    std::fs::create_dir(d.join("sd")).unwrap();
    let daemon = Daemon::start(&d.join("sd"));
    // Nobody's, mode 0600: root reads it only with its capabilities.
    let secret = d.join("secret.fa");
    std::fs::write(&secret, sample()).unwrap();
    std::os::unix::fs::chown(&secret, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let client = |prefix: &[&str], target: &str| {
        let mut c = Command::new(prefix[0]);
        c.args(&prefix[1..]).arg(bin()).args(["compress", "-q", "secret.fa", "-o", target, "--no-fallback"]).current_dir(d).env("PEERPATH_DAEMON", &daemon.socket);
        run(&mut c)
    };
    let setpriv = setpriv.to_str().unwrap();
    for (prefix, what) in [(&[setpriv, "--inh-caps=-all", "--bounding-set=-all"][..], "effective capabilities"), (&[setpriv, "--groups=5"][..], "supplementary groups")] {
        let o = client(prefix, "stolen.gz");
        assert_eq!(o.code(), Some(18), "{}", o.describe());
        assert!(o.stderr.contains(&format!("the daemon refused the job: the client and the daemon differ in their {what} (the client's: ")) && o.stderr.contains("(--no-fallback)"), "{}", o.describe());
        assert!(!d.join("stolen.gz").exists(), "{}", o.describe());
    }
    // In its own mount namespace, secret.fa is another file for the client (here mounted over it).
    if let Some(unshare) = tool("unshare") {
        let other = d.join("other.fa");
        std::fs::write(&other, b">x\nACGT\n").unwrap();
        let mut c = Command::new(unshare);
        c.args(["-m", "--propagation", "private", "sh", "-c", "mount --bind other.fa secret.fa && exec \"$0\" compress -q secret.fa -o mine.gz --no-fallback"]).arg(bin()).current_dir(d).env("PEERPATH_DAEMON", &daemon.socket);
        let o = run(&mut c);
        if o.stderr.contains("mount:") || o.stderr.contains("unshare:") {
            eprintln!("SKIPPED {test}, in part: no mount namespace here: {}", o.stderr.trim());
        } else {
            assert_eq!(o.code(), Some(18), "{}", o.describe());
            assert!(o.stderr.contains("differ in their mount namespace"), "{}", o.describe());
            assert!(!d.join("mine.gz").exists());
        }
    }
    assert!(!daemon.log().contains("started:"), "{}", daemon.log());
    // The daemon's own user with its permissions is served.
    let o = client(&["env"], "mine.gz");
    assert_eq!(o.code(), Some(0), "{}", o.describe());
}

/// A socket whose path is longer than a socket address holds (sun_path, 108 bytes) was bound by the
/// daemon (through its directory's descriptor), which said it listened there, while no client could
/// reach it ("path must be shorter than SUN_LEN"): every job ran in its client. Clients now reach
/// it the daemon's way, through the directory's descriptor.
#[test]
fn a_socket_past_108_bytes_is_reached_by_its_clients() {
    let dir = scratch();
    let deep = dir.path().join("d".repeat(120));
    std::fs::create_dir(&deep).unwrap();
    let daemon = Daemon::start(&deep);
    assert!(daemon.socket.as_os_str().len() > 108);
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    let o = run(&mut daemon.client(dir.path(), args!["compress", "in.fa", "--no-fallback"])).ok();
    assert!(String::from_utf8_lossy(&o.stdout).contains(RUNNER), "{}", o.describe());
    daemon.wait_for_log(": exit 0 after", 1);
}

/// A client whose daemon is gone, its socket left (killed with SIGKILL), said only "Connection
/// refused (os error 111)". It now says no daemon listens there, and how to start one in its place.
#[test]
fn a_client_of_a_daemon_that_is_gone_says_no_daemon_listens_and_how_to_start_one() {
    let dir = scratch();
    let mut daemon = Daemon::start(dir.path());
    std::fs::write(dir.path().join("in.fa"), sample()).unwrap();
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    assert!(daemon.socket.exists(), "a killed daemon leaves its socket");
    let o = run(&mut daemon.client(dir.path(), args!["compress", "in.fa", "--no-fallback"]));
    assert_eq!(o.code(), Some(18), "{}", o.describe());
    let hint = format!("cannot reach the daemon: no daemon listens on the socket (one that ended left it; `peerpath daemon --socket {}` replaces it) (--no-fallback)", daemon.socket.display());
    assert!(o.stderr.contains(&hint), "{}", o.describe());
    assert!(!dir.path().join("in.fa.gz").exists());
}

/// The daemon compared the client's ids with its own through /proc/PID, PID the connecting
/// process's, read once the request was in: a client that handed its socket to another process and
/// ended had its pid's next owner checked in its place. Here (a pid namespace of the test's own, so
/// that pids are given out in order) a client with other supplementary groups than the daemon's
/// connects, ends, and a process with the daemon's own ids takes its pid before the request is
/// sent: the daemon asked for the job's streams. The client's process is now held from the
/// connection (SO_PEERPIDFD), and one that ended is refused.
#[test]
fn a_client_whose_process_ended_is_refused_whoever_has_its_pid_now() {
    use peerpath_runtime::daemon_proto::{self as proto, ExeId, Request};
    let test = "a_client_whose_process_ended_is_refused_whoever_has_its_pid_now";
    if !root() {
        eprintln!("SKIPPED {test}: only root makes a pid namespace and chooses the next pid (ns_last_pid)");
        return;
    }
    let Some([unshare, python]) = tools_or_skip(test, &["unshare", "python3"]).map(|t| <[PathBuf; 2]>::try_from(t).unwrap()) else { return };
    // The check stands on SO_PEERPIDFD (Linux 6.5 and later): without it the daemon cannot tell.
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    let (mut fd, mut len) = (-1 as libc::c_int, std::mem::size_of::<libc::c_int>() as libc::socklen_t);
    // SAFETY: getsockopt writes one c_int into `fd` and its length into `len`, both live across it.
    let r = unsafe { libc::getsockopt(std::os::fd::AsRawFd::as_raw_fd(&a), libc::SOL_SOCKET, libc::SO_PEERPIDFD, (&raw mut fd).cast(), &mut len) };
    if r != 0 {
        eprintln!("SKIPPED {test}: this kernel has no SO_PEERPIDFD (Linux before 6.5): {}", std::io::Error::last_os_error());
        return;
    }
    // SAFETY: the call succeeded: `fd` is a descriptor of ours, closed here.
    unsafe { libc::close(fd) };
    let dir = scratch();
    private(dir.path());
    let request = Request {
        exe: ExeId::of_this_process().unwrap(),
        argv: proto::ByteStrings::new(["peerpath", "verify", "x.gz"]).unwrap(),
        cwd: b"/".to_vec(),
        umask: 0o022,
        env: proto::variables(&Default::default()).unwrap(),
    };
    std::fs::write(dir.path().join("request"), proto::encode_request(&request).unwrap()).unwrap();
    // Python, pid 1 of the namespace: starts the daemon, then the client A, which connects and
    // hands the socket to its child B; A ends and is reaped; `sleep` is given A's pid; B sends the
    // request and prints the daemon's answer.
    let script = r#"
import os, socket, subprocess, sys, time
bin, d = sys.argv[1:3]
sock, log = d + "/d.sock", d + "/daemon.log"
daemon = subprocess.Popen([bin, "daemon", "--socket", sock], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
def logged(text):
    while text not in open(log).read():
        time.sleep(0.02)
logged("listening on")
# One connection refused (not a request), so that the daemon's threads are all up.
s = socket.socket(socket.AF_UNIX); s.connect(sock); s.sendall(b"\x02\x00\x00\x00{}"); s.recv(4096); s.close()
logged("a connection refused")
tasks = lambda: len(os.listdir("/proc/%d/task" % daemon.pid))
base = tasks()
r, w = os.pipe()
a = os.fork()
if a == 0:
    os.setgroups([5])
    s = socket.socket(socket.AF_UNIX); s.connect(sock)
    if os.fork() == 0:
        os.close(w); os.read(r, 1)
        s.sendall(open(d + "/request", "rb").read())
        sys.stdout.write(s.makefile().readline()); sys.stdout.flush()
        os._exit(0)
    os._exit(0)
os.close(r)
os.waitpid(a, 0)
# The daemon's thread reading A's request has its id: no pid is taken between these lines.
while tasks() <= base:
    time.sleep(0.02)
open("/proc/sys/kernel/ns_last_pid", "w").write(str(a - 1))
z = subprocess.Popen(["sleep", "60"])
print("reused" if z.pid == a else "not reused: %d for %d" % (z.pid, a), flush=True)
os.write(w, b"x")
os.wait()
z.kill(); daemon.kill()
"#;
    let mut c = Command::new(unshare);
    c.args(["--pid", "--fork", "--mount-proc"]).arg(python).args(["-c", script]).arg(bin()).arg(dir.path());
    let o = run_full(&mut c, None, HANG_DEADLINE);
    if o.stderr.contains("unshare:") {
        eprintln!("SKIPPED {test}: no pid namespace here: {}", o.stderr.trim());
        return;
    }
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
    assert!(out.starts_with("reused\n"), "{}\n{log}", o.describe());
    assert!(out.contains("\"Refused\"") && out.contains("ended before its permissions were checked: its pid may be another process's now"), "{}\n{log}", o.describe());
    assert!(log.contains("a connection refused: the client's process (pid "), "{log}");
}

/// A second daemon on a socket one listens on checks by connecting and closing: the first's
/// log said "a connection refused: the client closed before its whole request" of it. A
/// connection that sends nothing is no refused client; one cut short still is.
#[test]
fn a_second_daemons_check_leaves_no_line_in_the_firsts_log() {
    let dir = scratch();
    let d = Daemon::start(dir.path());
    let o = run(&mut pp(args!["daemon", "--socket", &d.socket]));
    o.fails(2, &["already listens on"]);
    // One that sends part of a request and closes is said, after the probe would have been.
    let mut c = std::os::unix::net::UnixStream::connect(&d.socket).unwrap();
    std::io::Write::write_all(&mut c, &[0x10, 0, 0, 0, 1]).unwrap();
    drop(c);
    d.wait_for_log("a connection refused", 1);
    std::thread::sleep(Duration::from_millis(100));
    let log = d.log();
    assert_eq!(log.matches("a connection refused").count(), 1, "{log}");
    assert!(log.contains("a connection refused: the client closed before its whole request"), "{log}");
}
