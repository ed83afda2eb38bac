//! `peerpath daemon`: a job server that keeps devices open across jobs, and
//! its client (a command run with `PEERPATH_DAEMON=SOCKET`).
//!
//! Why: a process that opens a GPU pays for its CUDA context every time
//! (0.20-0.37 s on the lent H100 machine, and 0.10-0.18 s more to close it at
//! exit), while 2x the CPU's 16 cores on 384 MiB leaves about 0.1 s for the
//! whole job (issue 17; docs/daemon.md). The daemon opens the GPU once
//! (`--gpu N` holds its primary context) and runs `compress`, `decompress`
//! and `verify` for its clients in its own process, one job at a time, so a
//! job's device opens on a context that is already there.
//!
//! The client sends its command line, working directory, umask, the
//! environment variables jobs read (`PEERPATH_*`, `TMPDIR`) and its standard
//! input, output and error (as descriptors, `SCM_RIGHTS`) over a Unix socket
//! that only the daemon's user may use; the job reads and writes through them
//! as if it ran in the client, and the client exits with the job's code.
//! Each side checks the other's user (SO_PEERCRED): the daemon takes jobs of its
//! own user only, a client hands its job only to a daemon of its own user (a job
//! runs with exactly its client's permissions); and the socket lies in a directory no other user can reach, so
//! none can put a socket of theirs at its name first. A job runs with the daemon's permissions
//! and view of the files: a client whose groups, capabilities, mount namespace or root are not
//! the daemon's is refused.
//! A client that goes away (killed, Ctrl-C) cancels its job: the job ends as
//! a failed job does, its outputs not put in place.
//!
//! The daemon's log (its standard error) says each job's start, with its client (pid, user and
//! directory: its relative paths are that directory's), and its end; a signal that stops the
//! daemon (SIGTERM, ^C) is its last line, with the job it cut off ([`stopped_by_signal`]).
//!
//! No silent fallback: a daemon that cannot be reached, runs another build of
//! peerpath, or has another environment than the client's is said on stderr
//! and the job runs in the client's process, or, with `--no-fallback`, is an
//! error (exit 18).

use crate::{Cli, Command};
use peerpath_runtime::daemon_proto::{self as proto, ExeId, Reply, Request, GO};
use peerpath_runtime::report::{shell_word, Quoted, ShellWord};
use clap::{Args, Parser};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The environment variable that names the daemon's socket for a client.
pub const ENV: &str = "PEERPATH_DAEMON";
/// The client's exit code when the daemon was asked for and could not run
/// the job (`--no-fallback`), or ended before the job did.
pub const EXIT_DAEMON: u8 = 18;
/// Connections whose requests are read at once (a thread each, for at most
/// [`REQUEST_TIME`]); more are refused at once (their clients run the job themselves).
const MAX_READING: usize = 64;
/// Jobs that wait their turn at once; more are refused at once (their clients run the job
/// themselves). Each holds its request and four descriptors (the connection, the client's
/// streams): with [`MAX_READING`], 512 at most, within the usual limit of 1024.
const MAX_WAITING: usize = 64;
/// The time a connection has to send its whole request (however it trickles it in).
const REQUEST_TIME: Duration = Duration::from_secs(10);
/// The time a client waits for the daemon's first answers (`Descriptors`, then `Queued`, or a
/// refusal), which the daemon gives as soon as it has read the request: a daemon that says
/// nothing for that long is stopped (SIGSTOP) or wedged, and the client runs the job itself
/// (said), its standard streams still its own (they are sent only when the daemon asks).
const FIRST_ANSWER_TIME: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct DaemonArgs {
    /// The Unix socket to listen on (made with mode 0600; clients name it in PEERPATH_DAEMON), in a
    /// directory of this user's that no other user can reach (mode 0700) [default:
    /// $XDG_RUNTIME_DIR/peerpath-daemon.sock, or TMPDIR/peerpath-UID/peerpath-daemon.sock (TMPDIR
    /// or /tmp), that directory made mode 0700 where it is missing].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Open GPU N at start and keep its CUDA context for the daemon's life (jobs with
    /// `--engine gpu --gpu N` then open on it); without it the first GPU job opens it. Either
    /// way the devices jobs end well with (GPUs, emulated CSPs) are kept for the next jobs.
    #[arg(long, value_name = "N")]
    gpu: Option<usize>,
    /// A job that has waited this long behind one whose standard input or output is a pipe,
    /// socket or terminal (it may be stalled on a pipe no one reads) is refused: its client runs
    /// it itself, said (exit 18 with `--no-fallback`). 0: jobs wait as long as it takes.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    max_wait: u64,
}

/// The variables a job reads from its environment: the client's must be the daemon's.
fn job_environment() -> BTreeMap<String, Vec<u8>> {
    std::env::vars_os()
        .filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            ((k.starts_with("PEERPATH_") && k != ENV) || k == "TMPDIR").then(|| (k, v.into_vec()))
        })
        .collect()
}

/// [`job_environment`] and the variables a job's command line names for its key
/// (`--key-env VAR`): the job reads them too.
fn client_environment(argv: &[OsString]) -> BTreeMap<String, Vec<u8>> {
    let mut env = job_environment();
    let named = argv.windows(2).filter(|w| w[0] == "--key-env").map(|w| w[1].clone());
    let inline = argv.iter().filter_map(|a| a.to_str()?.strip_prefix("--key-env=").map(OsString::from));
    for k in named.chain(inline).filter_map(|k| k.into_string().ok()) {
        if let Some(v) = std::env::var_os(&k) {
            env.insert(k, v.into_vec());
        } else {
            env.remove(&k);
        }
    }
    env
}

/// The daemon's side of a comparison: its [`job_environment`], and its values of the other
/// variables the client sent (those its command line names).
fn daemon_environment(own: &BTreeMap<String, Vec<u8>>, client: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    let mut env = own.clone();
    for k in client.keys().filter(|k| !own.contains_key(*k) && !k.starts_with("PEERPATH_") && *k != "TMPDIR") {
        if let Some(v) = std::env::var_os(k) {
            env.insert(k.clone(), v.into_vec());
        }
    }
    env
}

/// Whether a variable's value may be shown: peerpath's settings and TMPDIR, not a key
/// (`PEERPATH_KEY`, or a variable `--key-env` names), which is never logged or printed.
fn value_shown(k: &str) -> bool {
    k == "TMPDIR" || (k.starts_with("PEERPATH_") && !k.contains("KEY"))
}

/// Why the environments differ, or `None`.
fn environment_difference(client: &BTreeMap<String, Vec<u8>>, daemon: &BTreeMap<String, Vec<u8>>) -> Option<String> {
    let keys: std::collections::BTreeSet<&String> = client.keys().chain(daemon.keys()).collect();
    let k = keys.into_iter().find(|k| client.get(*k) != daemon.get(*k))?;
    let show = |v: Option<&Vec<u8>>, other_set: bool| match v {
        None => "unset".to_string(),
        Some(v) if value_shown(k) => format!("{:?}", String::from_utf8_lossy(v)),
        Some(_) if other_set => "set to another value (a key's value is not shown)".to_string(),
        Some(_) => "set (a key's value is not shown)".to_string(),
    };
    Some(format!(
        "{k} is {} here and {} in the daemon (jobs run with the daemon's environment: restart it with this one, or run without {ENV})",
        show(client.get(k), false),
        show(daemon.get(k), client.contains_key(k))
    ))
}

/// The process's umask, read without changing it (`/proc/self/status`, Linux 4.7 and later).
fn current_umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|v| u32::from_str_radix(v.trim(), 8).ok()).unwrap_or(0o022)
}

// ----------------------------------------------------------------------------------------------
// The client.

/// Whether the daemon runs this command: `None` for commands that are not
/// jobs (no daemon concerns them), `Err` for jobs it does not run: the
/// erasure-coded chain (`--ec`), which opens no device the daemon keeps.
pub fn runs_in_daemon(command: &Command) -> Option<Result<(), &'static str>> {
    let chain = Err("the daemon does not run the --ec chain");
    match command {
        Command::Compress(a) => Some(if a.ec.is_none() { Ok(()) } else { chain }),
        Command::Decompress(a) => Some(if !a.ec { Ok(()) } else { chain }),
        Command::Verify(_) => Some(Ok(())),
        _ => None,
    }
}

/// A job the daemon at `socket` cannot run, and why, said on stderr: the
/// caller runs it (`None`), or, with `no_fallback`, exits with this.
pub fn not_here(socket: &Path, why: &str, no_fallback: bool) -> Option<ExitCode> {
    if no_fallback {
        eprintln!("peerpath: error: {ENV}={}: {why} (--no-fallback)", Quoted(socket));
        return Some(ExitCode::from(EXIT_DAEMON));
    }
    eprintln!("peerpath: FALLBACK: {ENV}={}: {why}; the job runs in this process", Quoted(socket));
    *NOT_HERE.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{ENV}={}: {why}", Quoted(socket)));
    None
}

/// Why the daemon asked for did not run this process's job, for its report.
static NOT_HERE: Mutex<Option<String>> = Mutex::new(None);

/// The daemon asked for did not run the job (it runs here): why, for the report's fallbacks.
pub fn not_in_daemon() -> Option<String> {
    NOT_HERE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Runs the command line in the daemon at `socket`. `None`: it could not,
/// said on stderr, and the caller runs the job itself.
pub fn forward(socket: &Path, no_fallback: bool) -> Option<ExitCode> {
    let not_here = |why: String| not_here(socket, &why, no_fallback);
    let request = match client_request() {
        Ok(r) => r,
        Err(e) => return not_here(format!("cannot describe this process to the daemon: {e}")),
    };
    // A request the daemon would not take is not sent (it would close the connection on it).
    let message = match proto::encode_request(&request) {
        Ok(m) => m,
        Err(why) => return not_here(format!("the daemon does not take this job: {why}")),
    };
    let conn = match connect(socket) {
        Ok(c) => c,
        // A socket with no one at it: its daemon ended (killed, its machine restarted) and left it.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            return not_here(format!("cannot reach the daemon: no daemon listens on the socket (one that ended left it; `peerpath daemon --socket {}` replaces it)", ShellWord(socket)))
        }
        Err(e) => return not_here(format!("cannot reach the daemon: {e}")),
    };
    // Whoever listens there gets the job's command line, environment (a key too) and standard
    // streams: only a daemon of this user's, never a socket another user (root too) put there.
    match rustix::net::sockopt::socket_peercred(&conn) {
        Ok(peer) if peer.uid == rustix::process::geteuid() => {}
        Ok(peer) => return not_here(format!("the socket is held by user {}, not this user ({}): not a daemon of this user's, so the job, its streams and its environment are not handed to it", peer.uid.as_raw(), rustix::process::geteuid().as_raw())),
        Err(e) => return not_here(format!("cannot tell whose the daemon is (SO_PEERCRED): {e}")),
    }
    // A stopped daemon whose socket buffer is full would hold the request's send for ever.
    let _ = conn.set_write_timeout(Some(FIRST_ANSWER_TIME));
    if let Err(e) = (&conn).write_all(&message) {
        // A daemon that refuses a connection at once (too many at a time) may close it
        // before the request is all sent: its reason is still there to read.
        let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
        let mut line = String::new();
        if BufReader::new(&conn).read_line(&mut line).is_ok() {
            if let Ok(Reply::Refused { why }) = proto::decode_reply(line.trim_end_matches('\n')) {
                return not_here(format!("the daemon refused the job: {why}"));
            }
        }
        return not_here(format!("cannot hand the job to the daemon: {e}"));
    }
    // Until the job starts, the client wakes each second: a daemon that has not queued the job
    // within FIRST_ANSWER_TIME is given up (the daemon runs a job only on its client's go,
    // which a client that gave up never sends), and a job that waits behind another is said
    // where a person watches.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
    let sent = Instant::now();
    let mut lines = BufReader::new(&conn).lines();
    let (mut answered, mut queued, mut started, mut said_waiting) = (false, false, false, false);
    let mut ahead = 0;
    loop {
        let reply = match lines.next() {
            Some(Ok(line)) => proto::decode_reply(&line),
            Some(Err(e)) if !started && matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if !queued && sent.elapsed() >= FIRST_ANSWER_TIME {
                    drop(lines);
                    drop(conn);
                    return not_here(format!("the daemon took the connection but did not answer within {} s (stopped, or wedged)", FIRST_ANSWER_TIME.as_secs()));
                }
                if ahead > 0 && !said_waiting && std::io::stderr().is_terminal() {
                    eprintln!("peerpath: waiting for the daemon at {}: it runs one job at a time", Quoted(socket));
                    said_waiting = true;
                }
                continue;
            }
            Some(Err(e)) => Err(e.to_string()),
            None => Err("the connection closed".into()),
        };
        match reply {
            Ok(Reply::Descriptors) if !started && !answered => {
                answered = true;
                if let Err(e) = send_descriptors(&conn) {
                    return not_here(format!("cannot hand the daemon this process's standard streams: {e}"));
                }
            }
            Ok(Reply::Queued { ahead: n }) if !started => (queued, ahead) = (true, n),
            Ok(Reply::Started { .. }) if !started => {
                // The go: from here the job is the daemon's (it runs only with it).
                if let Err(e) = (&conn).write_all(&[GO]) {
                    return not_here(format!("the daemon did not take the job: {e}"));
                }
                started = true;
                let _ = conn.set_read_timeout(None);
            }
            Ok(Reply::Exit { code }) => return Some(ExitCode::from(code)),
            Ok(Reply::Refused { why }) if !started => return not_here(format!("the daemon refused the job: {why}")),
            Err(why) if !started => return not_here(format!("the daemon did not take the job: {why}")),
            Ok(Reply::Refused { why }) | Err(why) => why_ended(&why),
            Ok(Reply::Queued { .. } | Reply::Descriptors | Reply::Started { .. }) => why_ended("the daemon's answers are out of order"),
        }
    }
}

/// Connects to the daemon's socket. A path longer than a socket address holds (sun_path, 108
/// bytes), which the daemon binds through its directory's descriptor ([`listen`]), is reached the
/// same way: through `/proc/self/fd/N/NAME`, N the directory's.
fn connect(socket: &Path) -> std::io::Result<UnixStream> {
    match UnixStream::connect(socket) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            let (Some(dir), Some(name)) = (socket.parent(), socket.file_name()) else { return Err(e) };
            use rustix::fs::{Mode, OFlags};
            let dir = rustix::fs::open(dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
            UnixStream::connect(Path::new(&format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir))).join(name))
        }
        r => r,
    }
}

/// The daemon ended, or spoke nonsense, in the middle of the job: the
/// job's outputs in progress were not put in place (its temporaries go with
/// the daemon's signal handler, or with the process); the client fails.
fn why_ended(why: &str) -> ! {
    // What the job had written to a stream (standard output) cannot be taken back, nor counted here.
    eprintln!("peerpath: error: the daemon ended before the job did ({why}); outputs in progress were not put in place, and what the job wrote to standard output, if anything, stays there (see the daemon's log)");
    std::process::exit(EXIT_DAEMON as i32);
}

fn client_request() -> std::io::Result<Request> {
    let argv: Vec<OsString> = std::env::args_os().collect();
    Ok(Request {
        exe: ExeId::of_this_process()?,
        argv: proto::ByteStrings::new(argv.iter().map(|a| a.as_bytes())).map_err(std::io::Error::other)?,
        cwd: std::env::current_dir()?.into_os_string().into_vec(),
        umask: current_umask(),
        env: proto::variables(&client_environment(&argv)).map_err(std::io::Error::other)?,
    })
}

/// This process's standard input, output and error, with one byte, once the daemon asks
/// for them ([`Reply::Descriptors`]).
fn send_descriptors(conn: &UnixStream) -> std::io::Result<()> {
    let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
    let fds = [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    match rustix::net::sendmsg(conn, &[std::io::IoSlice::new(&[0u8])], &mut control, SendFlags::NOSIGNAL)? {
        1 => Ok(()),
        _ => Err(std::io::Error::other("the descriptors were not sent")),
    }
}

// ----------------------------------------------------------------------------------------------
// The daemon.

/// A request taken from a client, with its descriptors.
struct Incoming {
    conn: UnixStream,
    /// The client's process and user (SO_PEERCRED), for the log.
    peer: rustix::net::UCred,
    request: Request,
    /// The client's standard input, output and error.
    stdio: [OwnedFd; 3],
}

/// What the daemon holds across jobs, for the reports.
static RUNNER: Mutex<Option<String>> = Mutex::new(None);

/// Said in the report of a job the daemon runs (`None` elsewhere).
pub fn runner() -> Option<String> {
    RUNNER.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The daemon's log (its standard error when it started), for [`stopped_by_signal`].
static LOG: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
/// The number of the job that runs, 0 while none does: the one a signal cuts off; with [`ENDED`]
/// once the job has ended and until its client is told its exit code.
static RUNNING: AtomicU64 = AtomicU64::new(0);
/// In [`RUNNING`]: its job has ended (its outputs in place or gone), its client maybe not yet told.
const ENDED: u64 = 1 << 63;

/// Says in the daemon's log that signal `name` stops it, and which job it cuts off (or that the
/// job had ended, its client maybe not yet told its exit code): the signal
/// thread calls it once the temporaries are removed (their registry then stays locked, so no
/// output of the job is put in place after) and before the process dies of the signal. The
/// job's client says only that the daemon ended (exit 18).
pub fn stopped_by_signal(name: &str) {
    let Some(log) = LOG.get() else { return };
    match RUNNING.load(Ordering::SeqCst) {
        0 => say(log, format_args!("peerpath daemon: stopped by {name} (no job running)")),
        job if job & ENDED != 0 => say(log, format_args!("peerpath daemon: stopped by {name}: job {} had ended, its outputs as it left them; its client, unless already told its exit code, fails (exit {EXIT_DAEMON})", job & !ENDED)),
        job => say(log, format_args!("peerpath daemon: stopped by {name}: job {job} cut off, its outputs in progress not put in place (its client fails, exit {EXIT_DAEMON})")),
    }
}

pub fn main(a: DaemonArgs) -> ExitCode {
    let log = match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) => {
            eprintln!("peerpath: error: daemon: cannot keep its standard error: {e}");
            return ExitCode::from(1);
        }
    };
    let exe = match ExeId::of_this_process() {
        Ok(id) => id,
        Err(e) => {
            eprintln!("peerpath: error: daemon: /proc/self/exe: {e}");
            return ExitCode::from(1);
        }
    };
    crate::JOBS_IN_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Ok(l) = log.try_clone() {
        let _ = LOG.set(l);
    }
    let named = match a.socket.clone().map_or_else(default_socket, Ok) {
        Ok(p) => p,
        Err(why) => {
            eprintln!("peerpath: error: daemon: {why}");
            return ExitCode::from(2);
        }
    };
    // Absolute: jobs run in their clients' directories, where a relative name is another file.
    let socket = match std::path::absolute(&named) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("peerpath: error: daemon: {}: {e}", Quoted(&named));
            return ExitCode::from(2);
        }
    };
    let listener = match listen(&socket) {
        // A daemon stopped by a signal (SIGTERM, ^C) removes its socket.
        Ok(l) => {
            peerpath_io::remove_on_signal(socket.clone());
            l
        }
        Err(why) => {
            eprintln!("peerpath: error: daemon: {why}");
            return ExitCode::from(2);
        }
    };
    // The GPU held for the daemon's life: its primary context stays active,
    // so each job's `GpuDevice::open` retains it instead of creating it.
    let (_gpu, held) = match a.gpu {
        None => (None, "no GPU context held (no --gpu)".to_string()),
        Some(n) => {
            let t = Instant::now();
            match peerpath_gpu::Gpu::open(n) {
                Ok(g) => {
                    let held = format!("GPU {n} ({}) held open since the daemon started (its CUDA context took {:.3} s then)", g.info.name, t.elapsed().as_secs_f64());
                    (Some(g), held)
                }
                Err(why) => {
                    let _ = std::fs::remove_file(&socket);
                    eprintln!("peerpath: error: daemon: --gpu {n}: {why}");
                    return ExitCode::from(15); // a device that cannot be used, as elsewhere
                }
            }
        }
    };
    // Each job's devices (the GPU's memory and window, emulated CSPs) serve the next jobs that ask for the same.
    match log.try_clone() {
        Ok(l) => peerpath_runtime::keep_devices_across_jobs(Some(l.into())),
        Err(e) => {
            eprintln!("peerpath: error: daemon: cannot share its log with its devices: {e}");
            return ExitCode::from(1);
        }
    }
    let held = format!("{held}; devices kept open across jobs that ask for the same");
    say(&log, format_args!("peerpath daemon (pid {}): listening on {} (clients: {ENV}={}); {held}", std::process::id(), Quoted(&socket), Quoted(&socket)));
    let queue = Arc::new(Queue::default());
    let accept_log = log.try_clone().ok();
    let reading = Arc::new(AtomicUsize::new(0));
    if a.max_wait > 0 {
        let (queue, log) = (Arc::clone(&queue), log.try_clone().ok());
        let max_wait = Duration::from_secs(a.max_wait);
        std::thread::Builder::new().name("peerpath-daemon-waits".into()).spawn(move || queue.refuse_long_waits(max_wait, log)).expect("a thread starts");
    }
    let admitted = Arc::clone(&queue);
    std::thread::Builder::new()
        .name("peerpath-daemon-accept".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else {
                    // Out of descriptors, say: not a loop that spins while they are.
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let log = accept_log.as_ref().and_then(|l| l.try_clone().ok());
                // At most MAX_READING requests read at once (a thread each, for up to
                // 10 s): connections past that are refused at once, not a thread each.
                if reading.fetch_add(1, Ordering::AcqRel) >= MAX_READING {
                    reading.fetch_sub(1, Ordering::AcqRel);
                    let why = format!("{MAX_READING} connections are already sending their requests");
                    let _ = conn.set_write_timeout(Some(Duration::from_secs(1)));
                    let _ = reply(&conn, &Reply::Refused { why: why.clone() });
                    if let Some(l) = log {
                        say(l, format_args!("peerpath daemon: a connection refused: {why}"));
                    }
                    continue;
                }
                let (mine, admitted) = (Arc::clone(&reading), Arc::clone(&admitted));
                // One thread per connection reads its request: a client that sends nothing holds only itself.
                let spawned = std::thread::Builder::new().name("peerpath-daemon-request".into()).spawn(move || {
                    let taken = take_request(conn);
                    mine.fetch_sub(1, Ordering::AcqRel);
                    match taken {
                        Ok(incoming) => {
                            let mut q = admitted.lock();
                            let ahead = q.waiting.len() + usize::from(q.running.is_some());
                            let why = if q.waiting.len() >= MAX_WAITING {
                                Some(format!("{MAX_WAITING} jobs already wait here"))
                            } else if ahead > 0 && piped(&incoming.stdio) {
                                Some("another job runs or waits here, and this job's standard input or output is a pipe, which may be that job's (a pipeline of the daemon's clients would wait on each other for ever)".to_string())
                            } else {
                                None
                            };
                            if let Some(why) = why {
                                let _ = reply(&incoming.conn, &Reply::Refused { why: why.clone() });
                                if let Some(l) = log {
                                    say(l, format_args!("peerpath daemon: a job refused: {why}"));
                                }
                                return;
                            }
                            // Answered at once, whatever runs: the client knows the daemon is alive.
                            if reply(&incoming.conn, &Reply::Queued { ahead }).is_ok() {
                                q.waiting.push_back((incoming, Instant::now()));
                                admitted.ready.notify_one();
                            }
                        }
                        Err(why) => {
                            if let Some(l) = log.filter(|_| !why.is_empty()) {
                                say(l, format_args!("peerpath daemon: a connection refused: {why}"));
                            }
                        }
                    }
                });
                if spawned.is_err() {
                    // No thread (the connection went with the closure): count it out.
                    reading.fetch_sub(1, Ordering::AcqRel);
                }
            }
        })
        .expect("a thread starts");
    let env = job_environment();
    let mut jobs = 0u64;
    loop {
        jobs += 1;
        let incoming = queue.next(jobs);
        run_one(incoming, jobs, exe, &env, &held, &log, &queue);
    }
}

/// The job that runs: its number, command line, start, and whether it may wait on another
/// process for ever (its standard input or output a pipe, socket or terminal).
#[derive(Clone)]
struct Running {
    job: u64,
    shown: String,
    since: Instant,
    may_stall: bool,
}

/// The jobs taken and not yet finished: the one running (its number, command line and start),
/// and those waiting their turn (each with when it was queued).
#[derive(Default)]
struct Jobs {
    running: Option<Running>,
    waiting: std::collections::VecDeque<(Incoming, Instant)>,
}

#[derive(Default)]
struct Queue {
    jobs: Mutex<Jobs>,
    ready: std::sync::Condvar,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Jobs> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next job to run, waiting for one; it is the running job `job` from the moment it
    /// leaves the queue (under the same lock: a piped job arriving then is not queued behind it
    /// unseen).
    fn next(&self, job: u64) -> Incoming {
        let mut q = self.lock();
        loop {
            if let Some((incoming, _)) = q.waiting.pop_front() {
                let may_stall = piped(&incoming.stdio) || incoming.stdio[..2].iter().any(rustix::termios::isatty);
                q.running = Some(Running { job, shown: shown_argv(&incoming.request.argv), since: Instant::now(), may_stall });
                return incoming;
            }
            q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Refuses, each second, the jobs that have waited `max_wait` or longer behind one whose
    /// standard input or output is a pipe, socket or terminal: it may be stalled on a pipe no one reads (`decompress -o - | less`, left open), and every later
    /// client would wait with it, saying nothing. Taken out of the queue under its lock, a
    /// refused job can no longer be started: its client runs it itself.
    fn refuse_long_waits(&self, max_wait: Duration, log: Option<std::fs::File>) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let mut q = self.lock();
            // Only a job that may wait on another process for ever holds the queue for ever; one
            // reading and writing files ends, however long it takes.
            let Some(Running { job, shown, since, may_stall: true }) = q.running.clone() else { continue };
            let (late, keep): (Vec<_>, Vec<_>) = q.waiting.drain(..).partition(|(_, queued)| queued.elapsed() >= max_wait);
            q.waiting.extend(keep);
            drop(q);
            for (incoming, _) in late {
                let why = format!("it waited {} s (--max-wait) behind job {job}, which has run for {:.0} s: {shown}", max_wait.as_secs(), since.elapsed().as_secs_f64());
                if let Some(l) = log.as_ref() {
                    say(l, format_args!("peerpath daemon: a job refused: {why}: {}", shown_argv(&incoming.request.argv)));
                }
                let _ = reply(&incoming.conn, &Reply::Refused { why });
            }
        }
    }
}

/// A job's command line as the log shows it (its arguments after `peerpath`), each a word a
/// shell reads back as that argument ([`shell_word`]).
fn shown_argv(argv: &proto::ByteStrings) -> String {
    argv.iter().skip(1).map(shell_word).collect::<Vec<_>>().join(" ")
}

/// Whether a client's standard input or output is a pipe or a socket: its job may read
/// what another job writes (`a | b`, both the daemon's clients), so it must not wait
/// behind one, holding the pipe's other end where no one reads it.
fn piped(stdio: &[OwnedFd; 3]) -> bool {
    stdio[..2].iter().any(|fd| rustix::fs::fstat(fd).is_ok_and(|st| matches!(rustix::fs::FileType::from_raw_mode(st.st_mode), rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket)))
}

/// Where the daemon listens without `--socket`: in `$XDG_RUNTIME_DIR` (the user's own, made mode
/// 0700 by the login manager), else in `peerpath-UID` in the temporary directory (`TMPDIR`, or
/// /tmp), made mode 0700 where it is missing. Either is checked as any directory of a socket is
/// ([`private_directory`]): one another user made first is refused, not used.
fn default_socket() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            let d = std::env::temp_dir().join(format!("peerpath-{}", rustix::process::geteuid().as_raw()));
            match std::fs::DirBuilder::new().mode(0o700).create(&d) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(format!("cannot make {}: {e}", Quoted(&d))),
                _ => d,
            }
        }
    };
    Ok(dir.join("peerpath-daemon.sock"))
}

/// Opens the directory that holds the socket, checked: a directory (not a symbolic link) owned by
/// this user, with no permission for group or others. Anywhere else another user could put a
/// socket of theirs at the name before the daemon (squat it: clients would reach theirs), or hold
/// the directory's lock ([`listen`]) so that no daemon starts.
fn private_directory(dir: &Path) -> Result<OwnedFd, String> {
    use rustix::fs::{Mode, OFlags};
    let fix = "give --socket in a directory of yours that no other user can reach (mode 0700)";
    let fd = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
        rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => format!("{} is not a directory (a symbolic link, or a file): {fix}", Quoted(dir)),
        e => format!("cannot open the socket's directory {}: {e}", Quoted(dir)),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("{}: {e}", Quoted(dir)))?;
    let me = rustix::process::geteuid();
    if st.st_uid != me.as_raw() {
        return Err(format!("{} belongs to user {}, not to this user ({}): another user could put a socket of theirs there; {fix}", Quoted(dir), st.st_uid, me.as_raw()));
    }
    let mode = st.st_mode & 0o7777;
    if mode & 0o077 != 0 {
        return Err(format!("{} has mode {mode:04o}: other users can reach it; chmod 700 it, or {fix}", Quoted(dir)));
    }
    Ok(fd)
}

/// Binds the socket in its directory, which must be this user's alone ([`private_directory`]): a
/// stale socket there (no daemon answers it) is replaced; a live one is an error. All of it goes
/// through the directory's descriptor (`/proc/self/fd/N/NAME`): the socket is made in the
/// directory checked, whatever is renamed meanwhile.
///
/// The check, the removal and the bind are one step for one daemon at a time: each holds an
/// exclusive lock on the directory (flock, released when the descriptor closes or the process
/// ends, no file left) while it does them, and no other user can open the directory to take it.
/// Two daemons started at once cannot both find the path stale, the second unlinking the first's
/// new socket (two daemons up, one that no client can reach, whose SIGTERM would remove the
/// other's socket): the second finds the first listening.
fn listen(socket: &Path) -> Result<UnixListener, String> {
    let (Some(dir), Some(name)) = (socket.parent(), socket.file_name()) else {
        return Err(format!("{} names no file in a directory", Quoted(socket)));
    };
    let dir_fd = private_directory(dir)?;
    let inside = PathBuf::from(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dir_fd))).join(name);
    // Another daemon's lock lasts the few system calls of its `listen`.
    let start = Instant::now();
    loop {
        match rustix::fs::flock(&dir_fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) if start.elapsed() < Duration::from_secs(10) => std::thread::sleep(Duration::from_millis(5)),
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(format!("another daemon has been starting in {} for 10 s", Quoted(dir))),
            Err(e) => return Err(format!("cannot lock {}: {e}", Quoted(dir))),
        }
    }
    if let Ok(m) = std::fs::symlink_metadata(&inside) {
        use std::os::unix::fs::FileTypeExt;
        if !m.file_type().is_socket() {
            return Err(format!("{} exists and is not a socket", Quoted(socket)));
        }
        if UnixStream::connect(&inside).is_ok() {
            return Err(format!("a daemon already listens on {}", Quoted(socket)));
        }
        std::fs::remove_file(&inside).map_err(|e| format!("cannot remove the stale socket {}: {e}", Quoted(socket)))?;
    }
    // Made with no permission for others from the start (the umask), then 0600.
    let before = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(&inside);
    rustix::process::umask(before);
    let listener = bound.map_err(|e| format!("cannot listen on {}: {e}", Quoted(socket)))?;
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o600)).map_err(|e| format!("{}: {e}", Quoted(socket)))?;
    Ok(listener)
}

/// Reads a client's request and descriptors; only the daemon's own user may ask (a job writes
/// files as the daemon's user; [`access_view`] then compares all of the client's ids with its).
fn take_request(conn: UnixStream) -> Result<Incoming, String> {
    let peer = rustix::net::sockopt::socket_peercred(&conn).map_err(|e| format!("SO_PEERCRED: {e}"))?;
    if peer.uid != rustix::process::geteuid() {
        let why = format!("user {} is not the daemon's user ({})", peer.uid.as_raw(), rustix::process::geteuid().as_raw());
        let _ = reply(&conn, &Reply::Refused { why: why.clone() });
        return Err(why);
    }
    // Err(()): the client's process had ended (and was reaped) when it was asked for: said once
    // its request is read (a probe that sends nothing is left out of the log).
    let pidfd = peer_pidfd(&conn).map_err(|e| format!("SO_PEERPIDFD: {e}"))?;
    let deadline = Instant::now() + REQUEST_TIME;
    let late = || format!("no whole request within {} s", REQUEST_TIME.as_secs());
    // A request this daemon does not take (too long, or not one) is refused to the client too,
    // which then says why (it closed the connection, saying nothing).
    let refuse = |why: String| {
        let _ = reply(&conn, &Reply::Refused { why: why.clone() });
        why
    };
    let mut prefix = [0u8; 4];
    // A connection closed with nothing sent is a probe (a second daemon checking whether one
    // listens here): `Err("")`, which the log leaves out.
    read_by(&conn, &mut prefix, deadline).map_err(|e| e.unwrap_or_else(late))?;
    let request = {
        let mut body = vec![0u8; proto::request_length(prefix).map_err(refuse)?];
        read_by(&conn, &mut body, deadline).map_err(|e| match e {
            Some(why) if why.is_empty() => CLOSED_EARLY.to_string(),
            e => e.unwrap_or_else(late),
        })?;
        proto::decode_request(&body).map_err(refuse)?
    };
    // The job runs with the daemon's permissions and sees its files: a client whose differ could
    // reach through it what it cannot itself (a root client without capabilities, a client with
    // fewer groups), or name other files than its own paths do (another mount namespace, a chroot).
    let client = access_view(&PathBuf::from(format!("/proc/{}", peer.pid.as_raw_nonzero())));
    // Read up to REQUEST_TIME after the connection, /proc/PID is the client's only while it lives:
    // one that handed its socket to a child and ended may have its pid reused by another process.
    let ended = match &pidfd {
        Ok(Some(fd)) => process_ended(fd),
        Ok(None) => false,
        Err(()) => true,
    };
    if ended {
        return Err(refuse(format!("the client's process (pid {}) ended before its permissions were checked: its pid may be another process's now", peer.pid.as_raw_nonzero())));
    }
    match (client, access_view(Path::new("/proc/self"))) {
        (Ok(c), Ok(d)) => {
            if let Some(((what, c), (_, d))) = c.into_iter().zip(d).find(|(c, d)| c != d) {
                let none = |v: String| if v.is_empty() { "none".to_string() } else { v };
                return Err(refuse(format!("the client and the daemon differ in their {what} (the client's: {}; the daemon's: {}): here the job would reach other files than its client can", none(c), none(d))));
            }
        }
        (Err(e), _) | (_, Err(e)) => return Err(refuse(format!("cannot compare the client's permissions and files with the daemon's (/proc): {e}"))),
    }
    // The descriptors are asked for once the request is read: a client whose daemon never
    // reads it (stopped) gives it up holding its own standard streams, which would otherwise
    // wait in the daemon's socket (a pipe's reader downstream waiting for its end).
    reply(&conn, &Reply::Descriptors).map_err(|e| format!("the client went away: {e}"))?;
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    conn.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        // EINTR with no signal, as in [`client_says_go`]: the same wait again, to the same deadline.
        match rustix::net::recvmsg(&conn, &mut [std::io::IoSliceMut::new(&mut byte)], &mut control, RecvFlags::CMSG_CLOEXEC) {
            Ok(got) => break got,
            Err(rustix::io::Errno::INTR) if Instant::now() < deadline => {
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                conn.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => return Err(format!("no standard streams within {} s of the request", REQUEST_TIME.as_secs())),
            Err(e) => return Err(format!("recvmsg: {e}")),
        }
    };
    let mut fds: Vec<OwnedFd> = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(r) = m {
            fds.extend(r);
        }
    }
    if got.bytes != 1 {
        return Err("the client closed before sending its standard streams".into());
    }
    // Descriptors past the control buffer's room (3, and its padding) were closed by the kernel
    // (MSG_CTRUNC); those taken close here, with `fds`.
    let sent = if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) { format!("more than {}", fds.len()) } else { fds.len().to_string() };
    let stdio: [OwnedFd; 3] = fds.try_into().map_err(|_| refuse(format!("{sent} descriptors with the request (its standard input, output and error: 3)")))?;
    conn.set_read_timeout(None).map_err(|e| e.to_string())?;
    Ok(Incoming { conn, peer, request, stdio })
}

/// What decides which files the process at `proc` (`/proc/PID`) may read and write and what its
/// paths name: its user and group ids (real, effective, saved, file system), supplementary groups
/// and effective capabilities, its mount namespace and its root directory, each named and shown.
fn access_view(proc: &Path) -> std::io::Result<[(&'static str, String); 6]> {
    use std::os::unix::fs::MetadataExt;
    let status = std::fs::read_to_string(proc.join("status"))?;
    let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map_or(String::new(), |v| v.split_whitespace().collect::<Vec<_>>().join(" "));
    let root = std::fs::metadata(proc.join("root"))?;
    Ok([
        ("user ids", field("Uid:")),
        ("group ids", field("Gid:")),
        ("supplementary groups", field("Groups:")),
        ("effective capabilities", field("CapEff:")),
        ("mount namespace", std::fs::read_link(proc.join("ns/mnt"))?.display().to_string()),
        ("root directory", format!("device {} inode {}", root.dev(), root.ino())),
    ])
}

/// The process at the other end of `conn` when it connected, as a pidfd (SO_PEERPIDFD, Linux 6.5
/// and later), for [`process_ended`]. `None` where the kernel has none: there a client that ends
/// after handing its socket to another process leaves a pid that may be reused before
/// [`access_view`] reads it (within [`REQUEST_TIME`]), and that process's ids are compared.
fn peer_pidfd(conn: &UnixStream) -> std::io::Result<Result<Option<OwnedFd>, ()>> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut fd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes (one c_int) into `fd`, which lives across the
    // call, and its length into `len`; `conn` is an open socket.
    let r = unsafe { libc::getsockopt(conn.as_raw_fd(), libc::SOL_SOCKET, libc::SO_PEERPIDFD, (&raw mut fd).cast(), &mut len) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        // EINVAL or ESRCH: the peer's process has ended and been reaped (kernels before 6.16 give
        // no pidfd of such a process).
        return match e.raw_os_error() {
            Some(libc::ENOPROTOOPT) => Ok(Ok(None)),
            Some(libc::EINVAL | libc::ESRCH) => Ok(Err(())),
            _ => Err(e),
        };
    }
    // SAFETY: the call succeeded: `fd` is a new descriptor (close-on-exec), this process's alone.
    Ok(Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) })))
}

/// Whether the process `pidfd` refers to has ended (its pidfd is readable then).
fn process_ended(pidfd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    matches!(rustix::event::poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })), Ok(n) if n > 0)
}

const CLOSED_EARLY: &str = "the client closed before its whole request";

/// Fills `buf` from `conn` by `deadline`: a client that trickles its request in holds its
/// reading thread no longer than one that sends nothing. `Err(None)`: the deadline passed.
fn read_by(conn: &UnixStream, mut buf: &mut [u8], deadline: Instant) -> Result<(), Option<String>> {
    let whole = buf.len();
    while !buf.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(None);
        }
        conn.set_read_timeout(Some(left)).map_err(|e| Some(e.to_string()))?;
        match (&*conn).read(buf) {
            // Nothing of it sent: "" (see `take_request`).
            Ok(0) if buf.len() == whole => return Err(Some(String::new())),
            Ok(0) => return Err(Some(CLOSED_EARLY.into())),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
            Err(e) => return Err(Some(format!("the request was cut short: {e}"))),
        }
    }
    Ok(())
}

fn reply(conn: &UnixStream, r: &Reply) -> std::io::Result<()> {
    (&*conn).write_all(&proto::encode_reply(r))
}

/// Whether the client has gone (it sends nothing after its request: any
/// readable byte is its end), waiting at most `wait`, or until `stop` is readable.
fn client_gone(conn: &UnixStream, stop: Option<&UnixStream>, wait: Duration) -> bool {
    let mut fds = vec![PollFd::new(conn, PollFlags::IN | PollFlags::RDHUP)];
    if let Some(s) = stop {
        fds.push(PollFd::new(s, PollFlags::IN));
    }
    let timeout = Timespec { tv_sec: wait.as_secs() as _, tv_nsec: wait.subsec_nanos() as _ };
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(0) | Err(_) => false,
        Ok(_) => !fds[0].revents().is_empty(),
    }
}

/// Tells the client its job `job` starts and waits (at most [`FIRST_ANSWER_TIME`]) for its go,
/// the byte [`GO`].
fn client_says_go(conn: &UnixStream, job: u64) -> Result<(), String> {
    reply(conn, &Reply::Started { job }).map_err(|e| format!("telling it the job starts: {e}"))?;
    let deadline = Instant::now() + FIRST_ANSWER_TIME;
    let mut b = [0u8; 1];
    // The wait can end early with EINTR while no signal is sent to this process (seen under
    // load, the kernel's signal tracing showing none): a read with a timeout (SO_RCVTIMEO) is
    // never restarted, and the thread may be woken for task work (io_uring's) or resumed after a
    // stop. The job was then refused and its client's go met a closed socket. Only the deadline
    // ends the wait.
    let got = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Err(format!("no go within {} s", FIRST_ANSWER_TIME.as_secs()));
        }
        conn.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
        match (&*conn).read(&mut b) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => break r.map_err(|e| format!("waiting for its go: {e}")),
        }
    };
    match got? {
        1 if b[0] == GO => conn.set_read_timeout(None).map_err(|e| e.to_string()),
        0 => Err("it closed the connection".into()),
        _ => Err(format!("it sent {:?}, not the go", b[0] as char)),
    }
}

/// Writes one line of the daemon's log in one write(2): `writeln!` on a file writes each piece
/// apart, so lines of threads writing at once (request threads, the wait limit's, the jobs')
/// interleaved mid-line.
fn say(mut log: impl Write, line: std::fmt::Arguments) {
    let _ = log.write_all(format!("{line}\n").as_bytes());
}

/// Runs one client's job in this process, its standard streams and
/// directory in place of the daemon's while it runs; `queue`'s running job until it ends.
fn run_one(incoming: Incoming, job: u64, exe: ExeId, env: &BTreeMap<String, Vec<u8>>, held: &str, log: &std::fs::File, queue: &Queue) {
    let Incoming { conn, peer, request, stdio } = incoming;
    let shown = shown_argv(&request.argv);
    let argv: Vec<OsString> = request.argv.iter().map(|a| OsString::from_vec(a.to_vec())).collect();
    let client_env = request.environment();
    // The job's end: the daemon is free before it is said (logged, told its client). A client
    // told its job ended sends its next one at once (a script's next line), and one whose standard
    // input or output is a pipe is refused while a job runs: freed after, it was refused for a
    // job that had ended (said as a fallback, exit 18 with --no-fallback).
    let end = |line: String, last: Option<Reply>| {
        queue.lock().running = None;
        say(log, format_args!("peerpath daemon: job {job}{line}: {shown}"));
        if let Some(r) = last {
            let _ = reply(&conn, &r);
        }
    };
    let refuse = |why: String| end(format!(" refused: {why}"), Some(Reply::Refused { why }));
    if client_gone(&conn, None, Duration::ZERO) {
        return end(" not run: its client went away while it waited".into(), None);
    }
    if request.exe != exe {
        return refuse("it runs another build of peerpath than this command (restart it)".into());
    }
    if let Some(why) = environment_difference(&client_env, &daemon_environment(env, &client_env)) {
        return refuse(why);
    }
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) if runs_in_daemon(&c.command) == Some(Ok(())) => c,
        Ok(_) => return refuse("the daemon runs compress, decompress and verify (without --ec)".into()),
        Err(e) => return refuse(format!("its command line does not parse here: {}", e.kind())),
    };
    let cwd = PathBuf::from(OsString::from_vec(request.cwd));
    // Relative paths are the client's directory's: the log says whose job it is and where it runs.
    let client = format!("client pid {}, uid {}, in {}", peer.pid.as_raw_nonzero(), peer.uid.as_raw(), Quoted(&cwd));
    let daemon_cwd = std::env::current_dir().ok();
    if let Err(e) = std::env::set_current_dir(&cwd) {
        return refuse(format!("cannot enter the client's directory {}: {e}", Quoted(&cwd)));
    }
    let saved = match Stdio::redirect(&stdio) {
        Ok(s) => s,
        Err(e) => {
            if let Some(d) = &daemon_cwd {
                let _ = std::env::set_current_dir(d);
            }
            return refuse(format!("cannot take the client's standard streams: {e}"));
        }
    };
    let umask = rustix::process::umask(rustix::fs::Mode::from_bits_truncate(request.umask));
    // The job runs only once its client, told it starts, says go: a client that gave the daemon
    // up (no answer for FIRST_ANSWER_TIME) and runs the job itself never says it, so a job is
    // never run both here and there.
    if let Err(why) = client_says_go(&conn, job) {
        rustix::process::umask(umask);
        let restored = saved.restore();
        if let Some(d) = &daemon_cwd {
            let _ = std::env::set_current_dir(d);
        }
        end(format!(" not run: its client did not confirm it (it went away, or gave the daemon up: {why})"), None);
        if let Err(e) = restored {
            say(log, format_args!("peerpath daemon: cannot restore its standard streams: {e}; stopping"));
            std::process::exit(1);
        }
        return;
    }
    say(log, format_args!("peerpath daemon: job {job}: started: {shown} ({client})"));
    RUNNING.store(job, Ordering::SeqCst);
    *RUNNER.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("peerpath daemon (pid {}), as job {job} in its log; {held}", std::process::id()));
    peerpath_runtime::cancel::clear();
    let started = Instant::now();
    // The watcher: a client that goes away cancels its job; the job's end
    // (`done` closed) ends the watch.
    let (done, watch_done) = match UnixStream::pair() {
        Ok(p) => (Some(p.0), Some(p.1)),
        Err(_) => (None, None),
    };
    // Set when the client went away: its job's error is then the log's alone (its stderr,
    // still held here, would get a line after its process ended, on a shell's prompt).
    let client_went_away = std::sync::atomic::AtomicBool::new(false);
    let code = std::thread::scope(|s| {
        let conn = &conn;
        let went_away = &client_went_away;
        if let Some(watch_done) = watch_done {
            s.spawn(move || {
                let mut stop = [0u8; 1];
                loop {
                    if client_gone(conn, Some(&watch_done), Duration::from_secs(1)) {
                        went_away.store(true, std::sync::atomic::Ordering::SeqCst);
                        peerpath_runtime::cancel::cancel("its client went away");
                        return;
                    }
                    // The job ended: its end of the pair closed (reads 0) or wrote.
                    let _ = watch_done.set_nonblocking(true);
                    if !matches!((&watch_done).read(&mut stop), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
                        return;
                    }
                }
            });
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::run(cli)));
        // Its outputs are in place or gone: a signal from now on cuts off no job (said so).
        RUNNING.store(job | ENDED, Ordering::SeqCst);
        drop(done);
        match r {
            Ok(Err(e)) if client_went_away.load(std::sync::atomic::Ordering::SeqCst) => {
                say(log, format_args!("peerpath daemon: job {job}: {} (not said to the client: it went away)", crate::job_error_text(&e)));
                e.exit_code() as u8
            }
            Ok(r) => crate::say_error(r),
            Err(panic) => match crate::stdout_failure(&*panic) {
                // The client's standard output cannot be written: that job's end, said as elsewhere.
                Some(why) => crate::unwritable_stdout_code(why),
                None => {
                    eprintln!("peerpath: error: internal error: the job panicked in the daemon (the daemon goes on)");
                    1
                }
            },
        }
    });
    *RUNNER.lock().unwrap_or_else(|p| p.into_inner()) = None;
    rustix::process::umask(umask);
    let restored = saved.restore();
    if let Some(d) = &daemon_cwd {
        let _ = std::env::set_current_dir(d);
    }
    // Its copies of the client's streams closed first: a reader of its output has its end when its client has.
    drop(stdio);
    let exited = format!(": exit {code} after {:.3} s", started.elapsed().as_secs_f64());
    if let Err(e) = restored {
        // The daemon's own streams are gone: it cannot go on as itself.
        end(exited, None);
        say(log, format_args!("peerpath daemon: cannot restore its standard streams: {e}; stopping"));
        let _ = reply(&conn, &Reply::Exit { code });
        std::process::exit(1);
    }
    end(exited, Some(Reply::Exit { code }));
    RUNNING.store(0, Ordering::SeqCst);
}

/// The daemon's standard streams, kept while a job has the client's in their place.
struct Stdio([OwnedFd; 3]);

impl Stdio {
    fn redirect(client: &[OwnedFd; 3]) -> std::io::Result<Stdio> {
        let keep = |fd: std::os::fd::BorrowedFd| rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(std::io::Error::from);
        let saved = Stdio([keep(std::io::stdin().as_fd())?, keep(std::io::stdout().as_fd())?, keep(std::io::stderr().as_fd())?]);
        if let Err(e) = saved.install(client) {
            // Some of the three may be the client's already: the daemon's back.
            saved.install(&saved.0)?;
            return Err(e);
        }
        Ok(saved)
    }

    fn install(&self, fds: &[OwnedFd; 3]) -> std::io::Result<()> {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        rustix::stdio::dup2_stdin(&fds[0])?;
        rustix::stdio::dup2_stdout(&fds[1])?;
        rustix::stdio::dup2_stderr(&fds[2])?;
        Ok(())
    }

    fn restore(self) -> std::io::Result<()> {
        self.install(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_differ_by_the_first_variable_that_does() {
        let a: BTreeMap<String, Vec<u8>> = [("PEERPATH_WORKER_READS".to_string(), b"0".to_vec())].into();
        let b = BTreeMap::new();
        assert_eq!(environment_difference(&a, &a), None);
        let why = environment_difference(&a, &b).unwrap();
        assert!(why.starts_with("PEERPATH_WORKER_READS is \"0\" here and unset in the daemon"), "{why}");
        let why = environment_difference(&b, &a).unwrap();
        assert!(why.starts_with("PEERPATH_WORKER_READS is unset here and \"0\" in the daemon"), "{why}");
        // A key's value is never shown: PEERPATH_KEY's, or a variable --key-env names.
        let secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        for k in ["PEERPATH_KEY", "MYKEY"] {
            let with: BTreeMap<String, Vec<u8>> = [(k.to_string(), secret.as_bytes().to_vec())].into();
            let other: BTreeMap<String, Vec<u8>> = [(k.to_string(), b"ff".to_vec())].into();
            for why in [environment_difference(&with, &b).unwrap(), environment_difference(&b, &with).unwrap(), environment_difference(&with, &other).unwrap()] {
                assert!(why.starts_with(&format!("{k} is ")) && !why.contains(secret) && !why.contains("\"ff\""), "{why}");
            }
        }
        assert!(environment_difference(&with_key(), &b).unwrap().contains("set (a key's value is not shown) here and unset"));
    }

    /// A wait for the client's go that is interrupted (EINTR: here the process is stopped and
    /// continued, as a shell's ^Z and fg do) goes on waiting: it refused the job, and the client's
    /// go met a closed socket (seen under load with no signal at all).
    #[test]
    fn the_wait_for_the_go_outlasts_an_interruption() {
        let (daemon_end, client_end) = UnixStream::pair().unwrap();
        let pid = std::process::id();
        let client = std::thread::spawn(move || {
            let mut line = String::new();
            BufReader::new(&client_end).read_line(&mut line).unwrap();
            assert!(line.contains("Started"), "{line}");
            std::thread::sleep(Duration::from_millis(200));
            // Another process stops this one and continues it while the daemon's side waits.
            let st = std::process::Command::new("sh").arg("-c").arg(format!("kill -STOP {pid}; sleep 0.2; kill -CONT {pid}")).status().unwrap();
            assert!(st.success());
            std::thread::sleep(Duration::from_millis(200));
            (&client_end).write_all(&[GO]).unwrap();
        });
        assert_eq!(client_says_go(&daemon_end, 7), Ok(()));
        client.join().unwrap();
    }

    /// Each argument in the log is a word a shell reads back as that argument: `a b` read as two.
    #[test]
    fn arguments_in_the_log_read_back_in_a_shell_as_themselves() {
        let args: [&[u8]; 10] = [b"plain.gz", b"a b", b"", b"it's", b"$HOME", b"--key-env=K", b"a\nb", b"\xff c", b"'x", b"*;|&<>"];
        let shown = shown_argv(&proto::ByteStrings::new([&b"peerpath"[..]].into_iter().chain(args)).unwrap());
        assert!(shown.starts_with(r"plain.gz 'a b' '' 'it'\''s' '$HOME' --key-env=K "), "{shown}");
        let out = std::process::Command::new("bash").arg("-c").arg(format!("printf '%s\\0' {shown}")).output().unwrap();
        assert_eq!(out.stdout, proto::ByteStrings::new(args).unwrap().as_bytes(), "{shown}");
    }

    fn with_key() -> BTreeMap<String, Vec<u8>> {
        [("PEERPATH_KEY".to_string(), b"abcd".to_vec())].into()
    }

    #[test]
    fn the_umask_is_read_without_being_changed() {
        let m = current_umask();
        assert!(m <= 0o777);
        assert_eq!(current_umask(), m);
    }
}
