//! The device side: the process that owns the emulated CSP's memory and
//! queues, checks every entry, and runs functions on its worker threads.
//!
//! ```text
//!  main thread                       dispatcher (one per claimed queue pair)      workers (N)
//!  poll: signals, parent,            sleeps on the SQ eventfd; reads entries      run the function
//!        listener, host sockets      from SQ head to tail; decodes and checks     (exec::run), release
//!  accept -> claim a queue pair,     them; refuses bad ones with an error         the ranges, post the
//!        reset it, send eventfds     completion; claims ranges, hands the rest    completion, wake the
//!  host socket closed -> stop its    to the workers                               host if it sleeps
//!        dispatcher, drain, reset
//!  stop (signal, parent gone) ->
//!        stop every dispatcher,
//!        drain, reset nothing
//! ```
//!
//! A queue pair is zeroed only when no host polls it: when a host claims it
//! and once its host has gone. A device that stops leaves the queue pairs of
//! hosts still attached as they are: a zeroed completion queue would show a
//! host that expects phase 0 (after an odd number of wraps) entries that
//! look like completions (command 0, success, 0 bytes). Those hosts see the
//! connection hang up, and the header says why (state stopping, the signal).

use super::layout::{
    self, decode_sqe, encode_cqe, encode_identify, encode_stats, header, Command, CqeFields, Geometry, Identify, QUEUE_MAGIC,
    QUEUE_VERSION, STATE_READY, STATE_STARTING, STATE_STOPPING,
};
use super::name_lock::NameLock;
use super::shared::{QueueFile, QueuePair};
use super::{CspError, CspPaths, CLAIM_ANY, CLAIM_MAGIC, CLAIM_NO_FREE_QUEUE, CLAIM_OK, CLAIM_BAD_REQUEST};
use crate::exec::{self, Encoders, Outcome};
use crate::function::FunctionSet;
use crate::memory::{DeviceMemory, RangeTable};
use crate::request::{Request, Status, MAX_INPUT_RANGES};
use crate::stats::StatsCounters;
use crate::sys::{self, poll_fds, EventFd};
use crossbeam_channel::{Receiver, Sender};
use peerpath_mem::MappedRegion;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The line the device prints on standard output once it takes
/// connections (what [`super::EmulatedCsp::spawn`] waits for).
pub const READY_LINE_PREFIX: &str = "peerpath csp ready:";
/// The line a device started by a host (`--parent-pid`) prints on the same
/// channel instead when it cannot start, with the reason, so that the host
/// can say why (its standard error may go nowhere a user reads).
pub const FAILED_LINE_PREFIX: &str = "peerpath csp failed:";

/// How to run an emulated CSP (`peerpath csp serve`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// 1-32 letters, digits, '-' or '_'; names the files in `dir`.
    pub name: String,
    /// Where the memory, queue and socket files go (default /dev/shm).
    pub dir: PathBuf,
    /// Device memory (rounded up to 4 KiB).
    pub memory_bytes: usize,
    /// Queue pairs (one per connected host handle), 1-64.
    pub queues: u32,
    /// Entries per submission and completion queue, 2-4096.
    pub queue_depth: u32,
    /// Worker threads running functions.
    pub workers: u32,
    /// Exit when this process exits (set by `spawn`).
    pub parent_pid: Option<u32>,
    /// Testing aid, a misbehaving device: after posting this many
    /// completions on a queue pair, post the last one a second time (a
    /// duplicate completion, which the host must catch).
    pub duplicate_completion_after: Option<u64>,
    /// Bytes at the start of its memory to make resident before it takes
    /// connections (clamped to the memory; 0: pages come on first touch).
    /// A real device's memory exists from power-on; a shared-memory file's
    /// pages are allocated and zeroed by whoever touches them first, which
    /// would otherwise be the host pinning them for io_uring (on the 2-core
    /// VM ~2 ms of host CPU per MiB). The runtime asks for what its job
    /// registers ahead; the device spends that time (its process CPU).
    pub populate_bytes: usize,
}

/// /dev/shm where it exists, else the temporary directory.
pub fn default_dir() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

impl ServeOptions {
    /// The defaults: 512 MiB (the seed's CMB), 4 queue pairs of 128
    /// entries, one worker per core, in /dev/shm.
    pub fn new(name: &str) -> ServeOptions {
        ServeOptions {
            name: name.to_string(),
            dir: default_dir(),
            memory_bytes: 512 << 20,
            queues: 4,
            queue_depth: 128,
            workers: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
            parent_pid: None,
            duplicate_completion_after: None,
            populate_bytes: 0,
        }
    }

    /// The command-line form (what [`ServeOptions::parse_args`] reads).
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec![
            "--name".into(),
            self.name.clone(),
            "--dir".into(),
            self.dir.to_string_lossy().into_owned(),
            "--memory".into(),
            self.memory_bytes.to_string(),
            "--queues".into(),
            self.queues.to_string(),
            "--queue-depth".into(),
            self.queue_depth.to_string(),
            "--workers".into(),
            self.workers.to_string(),
        ];
        if let Some(p) = self.parent_pid {
            a.extend(["--parent-pid".into(), p.to_string()]);
        }
        if let Some(n) = self.duplicate_completion_after {
            a.extend(["--duplicate-completion-after".into(), n.to_string()]);
        }
        if self.populate_bytes > 0 {
            a.extend(["--populate".into(), self.populate_bytes.to_string()]);
        }
        a
    }

    /// Reads `--name N [--dir D] [--memory BYTES] [--queues N]
    /// [--queue-depth N] [--workers N] [--parent-pid PID]
    /// [--duplicate-completion-after N] [--populate BYTES]` (plain numbers;
    /// the `peerpath` CLI takes sizes with units).
    pub fn parse_args(args: &[String]) -> Result<ServeOptions, String> {
        let mut o = ServeOptions::new("");
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--name" => o.name = value.clone(),
                "--dir" => o.dir = PathBuf::from(value),
                "--memory" => o.memory_bytes = number(flag, value, usize::MAX)?,
                "--queues" => o.queues = number(flag, value, u32::MAX)?,
                "--queue-depth" => o.queue_depth = number(flag, value, u32::MAX)?,
                "--workers" => o.workers = number(flag, value, u32::MAX)?,
                "--parent-pid" => o.parent_pid = Some(number(flag, value, u32::MAX)?),
                "--duplicate-completion-after" => o.duplicate_completion_after = Some(number(flag, value, u64::MAX)?),
                "--populate" => o.populate_bytes = number(flag, value, usize::MAX)?,
                other => return Err(format!("unknown option {other}")),
            }
        }
        if o.name.is_empty() {
            return Err("--name is required".into());
        }
        Ok(o)
    }

    fn geometry(&self) -> Geometry {
        Geometry { queue_count: self.queues, queue_depth: self.queue_depth }
    }

    fn check(&self) -> Result<(), CspError> {
        let bad = |s: String| Err(CspError::BadOption(s));
        if !self.geometry().is_valid() {
            return bad(format!(
                "--queues {} --queue-depth {}: use --queues 1-{} and --queue-depth {}-{}",
                self.queues,
                self.queue_depth,
                layout::MAX_QUEUES,
                layout::MIN_QUEUE_DEPTH,
                layout::MAX_QUEUE_DEPTH
            ));
        }
        if self.memory_bytes == 0 {
            return bad("--memory 0: a device needs memory".into());
        }
        if !(1..=1024).contains(&self.workers) {
            return bad(format!("--workers {}: use 1-1024", self.workers));
        }
        // Said here, where it is known which: a file made in a directory that takes none (/proc)
        // fails with ENOENT as one made in a missing directory does.
        match std::fs::metadata(&self.dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return bad(format!("--dir {}: not a directory", self.dir.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return bad(format!("--dir {}: no such directory (it must exist)", self.dir.display())),
            Err(e) => return Err(CspError::Io { operation: "read", path: self.dir.clone(), source: e }),
        }
        Ok(())
    }
}

/// `value` of `flag` as a number of the option's type, whose largest value
/// is `max`: a value beyond it is refused, never cut to its low bits
/// (`--queues 4294967297` is not 1 queue pair).
fn number<T>(flag: &str, value: &str, max: T) -> Result<T, String>
where
    T: std::str::FromStr<Err = std::num::ParseIntError> + std::fmt::Display,
{
    value.parse::<T>().map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => format!("{flag}: {value} is too large (at most {max})"),
        _ => format!("{flag}: '{value}' is not a number"),
    })
}

/// What every thread of the device shares.
struct Core {
    memory: DeviceMemory,
    stats: StatsCounters,
    ranges: Mutex<RangeTable>,
    next_claim: AtomicU64,
    identify: Identify,
    duplicate_completion_after: Option<u64>,
}

/// Where the device writes its next completion.
struct CqWriter {
    tail: u32,
    phase: bool,
}

/// A queue pair claimed by one host connection.
struct Session {
    index: u32,
    qp: QueuePair,
    sq_efd: EventFd,
    cq_efd: EventFd,
    active: AtomicBool,
    in_flight: AtomicUsize,
    cq: Mutex<CqWriter>,
    sq_head: AtomicU32,
    /// Completions posted, and after how many to post one twice (testing).
    posted: AtomicU64,
    duplicate_after: Option<u64>,
}

struct Connection {
    session: Arc<Session>,
    sock: UnixStream,
    dispatcher: Option<JoinHandle<()>>,
}

struct Job {
    session: Arc<Session>,
    cid: u16,
    request: Request,
    claim: u64,
}

/// Runs an emulated CSP until SIGTERM, SIGINT or SIGHUP (or the death of
/// `parent_pid`), then removes its files. A signal that was ignored when it
/// started (`nohup`, `trap '' INT`, a script's background job) stays
/// ignored, except SIGTERM from the host that started it (`parent_pid`),
/// which is how that host stops it. `on_ready` runs once the device
/// takes connections (the CLI prints [`READY_LINE_PREFIX`] there). A device
/// started by a host (`parent_pid`) that fails prints [`FAILED_LINE_PREFIX`]
/// and the reason on standard output, where the host reads.
///
/// Call it from a process of its own (it sets the umask to 077 and blocks
/// the termination signals in the calling thread to read them from a
/// signalfd), before any other thread starts.
pub fn serve(options: &ServeOptions, on_ready: impl FnOnce(&CspPaths, &Identify)) -> Result<(), CspError> {
    let served = serve_with_memory(options, None, on_ready);
    if let (Err(e), Some(_)) = (&served, options.parent_pid) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{FAILED_LINE_PREFIX} {e}");
        let _ = out.flush();
    }
    served
}

/// [`serve`], with device memory the caller mapped (`None`: a shm file
/// of `memory_bytes` in `dir`, which hosts map). P2P memory cannot be
/// shared through a file (each mmap of `p2pmem/allocate` is a new
/// allocation): the host maps it and forks the device, which inherits the
/// mapping ([`crate::emulated::EmulatedCsp::fork_with_memory`]).
pub(crate) fn serve_with_memory(
    options: &ServeOptions,
    memory: Option<Arc<MappedRegion>>,
    on_ready: impl FnOnce(&CspPaths, &Identify),
) -> Result<(), CspError> {
    options.check()?;
    let paths = CspPaths::new(&options.dir, &options.name)?;
    sys::set_umask(0o077);
    let signals = StopSignals::take(options.parent_pid)
        .map_err(|source| CspError::Io { operation: "block signals for", path: paths.socket.clone(), source })?;
    // The name first, before any file is made or replaced: a second device started at once
    // under it stops here, and touches nothing of this one's.
    let mut name_lock = take_name(&paths)?;
    clear_stale(&paths)?;
    // Its files are removed (then the lock released) when the server ends, however it ends.
    name_lock.own_files();

    let geometry = options.geometry();
    let memory_region = match memory {
        Some(m) => m,
        None => {
            let m = Arc::new(MappedRegion::create_shared(&paths.memory, options.memory_bytes, &options.name)?);
            populate(&m, options.populate_bytes, options.workers)
                .map_err(|source| CspError::Io { operation: "make resident (populate)", path: paths.memory.clone(), source })?;
            m
        }
    };
    let queue_region = Arc::new(MappedRegion::create_shared(&paths.queues, geometry.total_bytes(), &options.name)?);
    // Its pages are touched at once (the header): room for them is asked first, so that a
    // full file system (the memory file took the rest) is an error, not SIGBUS.
    reserve(&paths.queues, queue_region.len())?;
    let qfile = Arc::new(QueueFile::new(queue_region));
    write_header(&qfile, geometry, memory_region.len() as u64);

    let listener = UnixListener::bind(&paths.socket)
        .map_err(|source| CspError::Io { operation: "listen on", path: paths.socket.clone(), source })?;
    std::fs::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|source| CspError::Io { operation: "restrict", path: paths.socket.clone(), source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| CspError::Io { operation: "configure", path: paths.socket.clone(), source })?;
    let parent = options.parent_pid.map(|pid| (pid, sys::pidfd_open(pid).ok()));
    if let Some((pid, _)) = parent {
        if sys::parent_pid() != pid {
            return Ok(()); // the parent is already gone
        }
    }

    let identify = Identify {
        name: options.name.clone(),
        version: QUEUE_VERSION,
        pid: std::process::id(),
        memory_bytes: memory_region.len() as u64,
        queue_count: options.queues,
        queue_depth: options.queue_depth,
        max_input_ranges: MAX_INPUT_RANGES as u32,
        workers: options.workers,
        functions: FunctionSet::all(),
    };
    let core = Arc::new(Core {
        memory: DeviceMemory::region(memory_region),
        stats: StatsCounters::default(),
        ranges: Mutex::new(RangeTable::default()),
        next_claim: AtomicU64::new(0),
        identify: identify.clone(),
        duplicate_completion_after: options.duplicate_completion_after,
    });
    let (job_tx, job_rx) = crossbeam_channel::bounded::<Job>((options.queues * options.queue_depth) as usize);
    let mut workers = Vec::new();
    for i in 0..options.workers {
        let (core, rx) = (core.clone(), job_rx.clone());
        let w = std::thread::Builder::new()
            .name(format!("{}-worker-{i}", options.name))
            .spawn(move || worker(&core, &rx))
            .map_err(|source| CspError::Io { operation: "start workers for", path: paths.socket.clone(), source })?;
        workers.push(w);
    }
    drop(job_rx);
    qfile.u32_at(header::STATE).store(STATE_READY, Ordering::Release);
    on_ready(&paths, &identify);

    // main_loop says STATE_STOPPING in the header before it stops the queue pairs.
    let result = main_loop(&MainLoop { listener: &listener, signals: &signals, parent, qfile: &qfile, geometry, core: &core, jobs: &job_tx });
    drop(job_tx);
    for w in workers {
        let _ = w.join();
    }
    result
}

/// Makes the first `bytes` of the device's memory resident, split over up to
/// `threads` threads (as many as the device has workers, which are idle
/// before it starts): its pages are allocated and zeroed here, once, by the
/// device. Pieces are whole 2 MiB pages, so each huge page is one thread's.
/// Has the file system give `path` its `len` bytes now (`fallocate`).
fn reserve(path: &std::path::Path, len: usize) -> Result<(), CspError> {
    use std::os::fd::AsRawFd;
    let io = |source| CspError::Io { operation: "make room for", path: path.to_path_buf(), source };
    let f = std::fs::OpenOptions::new().write(true).open(path).map_err(io)?;
    // SAFETY: fallocate on a descriptor we own; no memory is passed.
    match unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) } {
        0 => Ok(()),
        _ => match std::io::Error::last_os_error() {
            // A file system without fallocate: the pages come on first touch, as before.
            e if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(()),
            e => Err(io(e)),
        },
    }
}

fn populate(memory: &MappedRegion, bytes: usize, threads: u32) -> std::io::Result<()> {
    const PIECE: usize = 2 << 20;
    let bytes = bytes.min(memory.len());
    if bytes == 0 {
        return Ok(());
    }
    let pieces = bytes.div_ceil(PIECE);
    let threads = (threads.max(1) as usize).min(pieces);
    let per_thread = pieces.div_ceil(threads) * PIECE;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || memory.populate(t * per_thread, per_thread.min(bytes.saturating_sub(t * per_thread)))))
            .collect();
        handles.into_iter().try_for_each(|h| match h.join().expect("populating thread panicked") {
            // Linux before 5.14 has no MADV_POPULATE_WRITE: pages come on
            // first touch, as without the option.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            // What a first touch would have met as SIGBUS: no room for the
            // pages (a full tmpfs). Found here, before any job uses them.
            Err(e) if e.raw_os_error() == Some(libc::EFAULT) => Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!("no room for {} MiB of device memory in its file system (is it full, or smaller than the memory?)", bytes.div_ceil(1 << 20)),
            )),
            other => other.map(drop),
        })
    })
}

/// Removes the files of a device that died without cleaning up (SIGKILL). Called with the
/// name's lock held, so no live device of this build owns them.
fn clear_stale(paths: &CspPaths) -> Result<(), CspError> {
    // One that answers anyway is a device that takes no lock (an older peerpath).
    if paths.socket.exists() && UnixStream::connect(&paths.socket).is_ok() {
        return Err(CspError::AlreadyRunning { path: paths.socket.clone() });
    }
    // Only what a device makes is removed: a socket, owner-only regular files, a queue file that
    // starts with its magic (or with nothing yet: killed before it wrote its header). Anything
    // else under those names (a user's file that happens to be called so) is not ours.
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    for (p, what) in [(&paths.socket, "a socket"), (&paths.memory, "a memory file"), (&paths.queues, "a queue file")] {
        let Ok(meta) = std::fs::symlink_metadata(p) else { continue };
        let left_by_device = if p == &paths.socket {
            meta.file_type().is_socket()
        } else {
            meta.is_file() && meta.permissions().mode() & 0o077 == 0 && (p != &paths.queues || starts_as_queue_file(p))
        };
        if !left_by_device {
            let source = std::io::Error::new(std::io::ErrorKind::AlreadyExists, format!("it exists and is not {what} a device left: remove it, or give another --name or --dir"));
            return Err(CspError::Io { operation: "replace", path: p.clone(), source });
        }
    }
    paths.remove_all();
    Ok(())
}

/// The name's lock ([`NameLock::try_take`]), or [`CspError::AlreadyRunning`] where another
/// process holds it. A device killed a moment ago may still hold it while its threads exit (the
/// lock goes with the last of them): where no device answers on the name's socket, the lock is
/// tried again for up to a second before the name is said taken.
fn take_name(paths: &CspPaths) -> Result<NameLock, CspError> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(lock) = NameLock::try_take(paths)? {
            return Ok(lock);
        }
        if Instant::now() >= deadline || UnixStream::connect(&paths.socket).is_ok() {
            return Err(CspError::AlreadyRunning { path: paths.lock.clone() });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether the file at `p` begins as a device's queue file does: with [`QUEUE_MAGIC`], or with
/// zeros or less than a word (its device died before it wrote the header).
fn starts_as_queue_file(p: &std::path::Path) -> bool {
    let mut word = [0u8; 8];
    match std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut word)) {
        Ok(()) => word == QUEUE_MAGIC.to_le_bytes() || word == [0; 8],
        Err(e) => e.kind() == io::ErrorKind::UnexpectedEof,
    }
}

fn write_header(q: &QueueFile, g: Geometry, memory_bytes: u64) {
    q.u64_at(header::MAGIC).store(QUEUE_MAGIC, Ordering::Relaxed);
    q.u32_at(header::VERSION).store(QUEUE_VERSION, Ordering::Relaxed);
    q.u32_at(header::STATE).store(STATE_STARTING, Ordering::Relaxed);
    q.u32_at(header::QUEUE_COUNT).store(g.queue_count, Ordering::Relaxed);
    q.u32_at(header::QUEUE_DEPTH).store(g.queue_depth, Ordering::Relaxed);
    q.u32_at(header::SQE_BYTES).store(layout::SQE_BYTES as u32, Ordering::Relaxed);
    q.u32_at(header::CQE_BYTES).store(layout::CQE_BYTES as u32, Ordering::Relaxed);
    q.u64_at(header::QUEUE_STRIDE).store(g.queue_stride() as u64, Ordering::Relaxed);
    q.u64_at(header::MEMORY_BYTES).store(memory_bytes, Ordering::Relaxed);
    q.u32_at(header::SERVER_PID).store(std::process::id(), Ordering::Relaxed);
}

/// The signals that stop the device, read from a signalfd.
struct StopSignals {
    fd: OwnedFd,
    /// Taken only from this process (the host that started the device):
    /// SIGTERM when it was ignored at start.
    parent: Option<u32>,
    parent_only: Vec<libc::c_int>,
}

impl StopSignals {
    const ALL: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

    /// Blocks, into a signalfd, those of SIGTERM, SIGINT and SIGHUP that
    /// were not ignored at start: a blocked signal is never discarded, so
    /// one taken there would stop the device however it was ignored.
    /// SIGTERM ignored at start is taken all the same when a host started
    /// the device (`parent`): its host stops it with SIGTERM, and the device
    /// acts on it from that host alone.
    fn take(parent: Option<u32>) -> std::io::Result<StopSignals> {
        let ignored: Vec<libc::c_int> = StopSignals::ALL.into_iter().filter(|&s| sys::signal_ignored(s)).collect();
        let parent_only: Vec<libc::c_int> = ignored.iter().copied().filter(|&s| s == libc::SIGTERM && parent.is_some()).collect();
        let taken: Vec<libc::c_int> = StopSignals::ALL.into_iter().filter(|s| !ignored.contains(s) || parent_only.contains(s)).collect();
        Ok(StopSignals { fd: sys::block_into_signalfd(&taken)?, parent, parent_only })
    }

    /// The first signal waiting that stops the device, if any (the others
    /// are dropped: sent by someone else than the host, where it was ignored).
    fn read(&self) -> Option<libc::c_int> {
        sys::read_signals(&self.fd)
            .into_iter()
            .find(|i| !self.parent_only.contains(&i.signal) || Some(i.sender) == self.parent)
            .map(|i| i.signal)
    }
}

struct MainLoop<'a> {
    listener: &'a UnixListener,
    signals: &'a StopSignals,
    parent: Option<(u32, Option<OwnedFd>)>,
    qfile: &'a Arc<QueueFile>,
    geometry: Geometry,
    core: &'a Arc<Core>,
    jobs: &'a Sender<Job>,
}

fn main_loop(m: &MainLoop) -> Result<(), CspError> {
    let mut conns: Vec<Connection> = Vec::new();
    let mut in_use = vec![false; m.geometry.queue_count as usize];
    let mut stop_signal = 0u32;
    let result = loop {
        let mut fds = vec![(m.signals.fd.as_raw_fd(), libc::POLLIN), (m.listener.as_raw_fd(), libc::POLLIN)];
        let parent_fd = m.parent.as_ref().and_then(|(_, fd)| fd.as_ref().map(|f| f.as_raw_fd()));
        fds.push((parent_fd.unwrap_or(-1), libc::POLLIN)); // poll ignores -1
        let first_conn = fds.len();
        fds.extend(conns.iter().map(|c| (c.sock.as_raw_fd(), libc::POLLIN)));
        // Without a pidfd, look at the parent once a second.
        let timeout = match m.parent {
            Some((_, None)) => Some(Duration::from_secs(1)),
            _ => None,
        };
        let ev = match poll_fds(&fds, timeout) {
            Ok(ev) => ev,
            Err(source) => break Err(CspError::Io { operation: "wait on", path: PathBuf::from("the device's descriptors"), source }),
        };
        if ev[0] != 0 {
            if let Some(signal) = m.signals.read() {
                stop_signal = signal as u32;
                break Ok(()); // SIGTERM, SIGINT or SIGHUP
            }
        }
        if ev[2] != 0 {
            break Ok(()); // the parent exited
        }
        if let Some((pid, None)) = m.parent {
            if sys::parent_pid() != pid {
                break Ok(());
            }
        }
        for i in (0..conns.len()).rev() {
            if ev[first_conn + i] != 0 && !drain_connection(&conns[i].sock) {
                let c = conns.swap_remove(i);
                let index = c.session.index as usize;
                in_use[index] = teardown(c, true).is_some();
            }
        }
        if ev[1] != 0 {
            while let Ok((sock, _)) = m.listener.accept() {
                if let Some(c) = claim(m, sock, &mut in_use) {
                    conns.push(c);
                }
            }
        }
    };
    // Said before the queue pairs stop, for the hosts still attached: they
    // find it when the connection hangs up (`EmulatedCsp`'s report).
    m.qfile.u32_at(header::STOP_SIGNAL).store(stop_signal, Ordering::Relaxed);
    m.qfile.u32_at(header::STATE).store(STATE_STOPPING, Ordering::Release);
    for c in conns {
        // Not zeroed: their hosts may still poll them (see the module docs).
        teardown(c, false);
    }
    result
}

/// Reads and drops whatever a host sent after its claim; false once the
/// host has closed the connection.
fn drain_connection(sock: &UnixStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match (&*sock).read(&mut buf) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
}

fn reply(sock: &UnixStream, status: u32, index: u32, fds: &[i32]) -> io::Result<()> {
    let mut msg = [0u8; 16];
    msg[0..4].copy_from_slice(&CLAIM_MAGIC.to_le_bytes());
    msg[4..8].copy_from_slice(&status.to_le_bytes());
    msg[8..12].copy_from_slice(&index.to_le_bytes());
    sys::send_with_fds(sock, &msg, fds)
}

/// Handles a host's claim for a queue pair: picks one, resets it, starts its
/// dispatcher, and sends the two eventfds.
fn claim(m: &MainLoop, sock: UnixStream, in_use: &mut [bool]) -> Option<Connection> {
    let _ = sock.set_nonblocking(false);
    let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
    let mut msg = [0u8; 8];
    if (&sock).read_exact(&mut msg).is_err() {
        return None; // a probe (connect and close), or a silent client
    }
    let magic = u32::from_le_bytes(msg[0..4].try_into().expect("4 bytes"));
    let wanted = u32::from_le_bytes(msg[4..8].try_into().expect("4 bytes"));
    if magic != CLAIM_MAGIC {
        let _ = reply(&sock, CLAIM_BAD_REQUEST, 0, &[]);
        return None;
    }
    let index = if wanted == CLAIM_ANY {
        in_use.iter().position(|u| !u)
    } else {
        in_use.get(wanted as usize).and_then(|u| (!u).then_some(wanted as usize))
    };
    let Some(index) = index else {
        let _ = reply(&sock, CLAIM_NO_FREE_QUEUE, 0, &[]);
        return None;
    };
    let (Ok(sq_efd), Ok(cq_efd)) = (EventFd::new(), EventFd::new()) else {
        let _ = reply(&sock, CLAIM_NO_FREE_QUEUE, 0, &[]);
        return None;
    };
    let qp = QueuePair::new(m.qfile.clone(), m.geometry, index as u32);
    qp.reset();
    let session = Arc::new(Session {
        index: index as u32,
        qp,
        sq_efd,
        cq_efd,
        active: AtomicBool::new(true),
        in_flight: AtomicUsize::new(0),
        cq: Mutex::new(CqWriter { tail: 0, phase: true }),
        sq_head: AtomicU32::new(0),
        posted: AtomicU64::new(0),
        duplicate_after: m.core.duplicate_completion_after,
    });
    let (s, core, jobs) = (session.clone(), m.core.clone(), m.jobs.clone());
    let dispatcher = std::thread::Builder::new().name(format!("queue-{index}")).spawn(move || dispatch(&s, &core, &jobs)).ok()?;
    let conn = Connection { session: session.clone(), sock, dispatcher: Some(dispatcher) };
    if reply(&conn.sock, CLAIM_OK, index as u32, &[session.sq_efd.raw(), session.cq_efd.raw()]).is_err()
        || conn.sock.set_nonblocking(true).is_err()
    {
        conn.session.active.store(false, Ordering::SeqCst);
        teardown(conn, true);
        return None;
    }
    conn.dispatcher.as_ref()?;
    in_use[index] = true;
    Some(conn)
}

/// Stops a queue pair: stops its dispatcher, lets its commands drain
/// (workers skip those not started), and, with `reset` (its host has gone),
/// zeroes it for the next host. Without `reset` (the device stops while its
/// host may still poll it) it is left as it is: zeroed, its completion
/// queue could show that host completions nobody posted. Returns the index
/// if the queue pair could not be drained (it then stays claimed).
fn teardown(mut c: Connection, reset: bool) -> Option<u32> {
    let s = &c.session;
    s.active.store(false, Ordering::SeqCst);
    s.sq_efd.signal();
    if let Some(d) = c.dispatcher.take() {
        let _ = d.join();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.in_flight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if s.in_flight.load(Ordering::Acquire) > 0 {
        eprintln!("peerpath csp: queue pair {} did not drain; it stays out of use", s.index);
        return Some(s.index);
    }
    if reset {
        s.qp.reset();
    }
    None
}

/// One queue pair's dispatcher (see the module docs).
fn dispatch(s: &Arc<Session>, core: &Core, jobs: &Sender<Job>) {
    let qp = &s.qp;
    let depth = qp.depth();
    let mut head = 0u32;
    while s.active.load(Ordering::Acquire) {
        let tail = qp.sq_tail().load(Ordering::Acquire);
        if tail >= depth {
            // The host wrote a doorbell value that cannot be: stop taking
            // entries from this queue (the host times out, or reconnects).
            eprintln!("peerpath csp: queue pair {}: SQ tail doorbell {tail} outside 0-{}; queue stopped", s.index, depth - 1);
            s.active.store(false, Ordering::SeqCst);
            break;
        }
        if tail != head {
            while head != tail && s.active.load(Ordering::Acquire) {
                let entry = qp.read_sqe(head);
                head = (head + 1) % depth;
                s.sq_head.store(head, Ordering::Relaxed);
                qp.sq_head().store(head, Ordering::Release);
                handle_entry(s, core, jobs, &entry);
            }
            continue;
        }
        // Nothing to do: ask to be woken, check once more, sleep.
        qp.sq_need_wake().store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if qp.sq_tail().load(Ordering::SeqCst) != head || !s.active.load(Ordering::SeqCst) {
            qp.sq_need_wake().store(0, Ordering::SeqCst);
            continue;
        }
        let _ = poll_fds(&[(s.sq_efd.raw(), libc::POLLIN)], None);
        s.sq_efd.drain();
        qp.sq_need_wake().store(0, Ordering::SeqCst);
    }
}

fn handle_entry(s: &Arc<Session>, core: &Core, jobs: &Sender<Job>, entry: &layout::Sqe) {
    let (cid, decoded) = decode_sqe(entry);
    match decoded {
        Err(status) => {
            core.stats.record_rejected();
            post(s, cid, &Outcome::failed(status));
        }
        Ok(Command::Identify) => {
            let words = encode_identify(&core.identify);
            s.qp.write_data(&words);
            post(s, cid, &Outcome { output_bytes: words.len() as u64 * 8, ..Outcome::failed(Status::Success) });
        }
        Ok(Command::GetStats) => {
            let words = encode_stats(&core.stats.snapshot());
            s.qp.write_data(&words);
            post(s, cid, &Outcome { output_bytes: words.len() as u64 * 8, ..Outcome::failed(Status::Success) });
        }
        Ok(Command::Io(request)) => {
            let kind = request.function.kind();
            let claim = core.next_claim.fetch_add(1, Ordering::Relaxed);
            let checked = exec::check(&request, core.memory.len() as u64, core.identify.functions)
                .and_then(|()| core.ranges.lock().expect("range table lock").claim(claim, &request));
            if let Err(status) = checked {
                let outcome = Outcome::failed(status);
                core.stats.record(kind, 0, &outcome);
                post(s, cid, &outcome);
                return;
            }
            s.in_flight.fetch_add(1, Ordering::AcqRel);
            // Never full for long: hosts keep at most depth-1 commands per queue.
            if let Err(e) = jobs.send(Job { session: s.clone(), cid, request, claim }) {
                // Workers gone: the device is stopping.
                let job = e.into_inner();
                core.ranges.lock().expect("range table lock").release(job.claim);
                post(s, cid, &Outcome::failed(Status::Aborted));
                s.in_flight.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

fn worker(core: &Core, jobs: &Receiver<Job>) {
    let mut encoders = Encoders::default();
    for job in jobs {
        let s = &job.session;
        let kind = job.request.function.kind();
        if s.active.load(Ordering::Acquire) {
            // SAFETY: the dispatcher checked the request against this memory
            // and claimed its ranges in the device's range table; they are
            // released below, after the function has finished.
            let outcome = unsafe { exec::run(&core.memory, &job.request, &mut encoders) };
            core.stats.record(kind, job.request.input_bytes(), &outcome);
            core.ranges.lock().expect("range table lock").release(job.claim);
            post(s, job.cid, &outcome);
        } else {
            core.ranges.lock().expect("range table lock").release(job.claim);
        }
        s.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Posts a completion: waits for room (only a misbehaving host leaves
/// none), writes the entry with the current phase, and wakes the host if
/// it asked to be woken.
fn post(s: &Session, cid: u16, o: &Outcome) {
    post_once(s, cid, o);
    let posted = s.posted.fetch_add(1, Ordering::Relaxed) + 1;
    if s.duplicate_after == Some(posted) {
        post_once(s, cid, o); // the testing fault: the same completion again
    }
}

fn post_once(s: &Session, cid: u16, o: &Outcome) {
    let qp = &s.qp;
    let depth = qp.depth();
    let mut cq = s.cq.lock().expect("completion queue lock");
    loop {
        if !s.active.load(Ordering::Acquire) {
            return;
        }
        let head = qp.cq_head().load(Ordering::Acquire);
        if head >= depth {
            eprintln!("peerpath csp: queue pair {}: CQ head doorbell {head} outside 0-{}; queue stopped", s.index, depth - 1);
            s.active.store(false, Ordering::SeqCst);
            return;
        }
        if (cq.tail + 1) % depth != head {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let entry = encode_cqe(&CqeFields {
        output_bytes: o.output_bytes,
        input_crc32: o.input_crc32,
        device_time_us: o.device_time_us,
        sq_head: s.sq_head.load(Ordering::Relaxed) as u16,
        cid,
        status_code: o.status.code(),
        phase: cq.phase,
    });
    qp.write_cqe(cq.tail, &entry);
    cq.tail += 1;
    if cq.tail == depth {
        cq.tail = 0;
        cq.phase = !cq.phase;
    }
    drop(cq);
    fence(Ordering::SeqCst);
    if qp.cq_need_wake().load(Ordering::SeqCst) == 1 && qp.cq_need_wake().swap(0, Ordering::SeqCst) == 1 {
        s.cq_efd.signal();
    }
}

#[cfg(test)]
mod tests {
    use super::ServeOptions;

    fn parse(flag: &str, value: &str) -> Result<ServeOptions, String> {
        ServeOptions::parse_args(&["--name".into(), "a".into(), flag.into(), value.into()])
    }

    #[test]
    fn numbers_beyond_their_type_are_refused_not_truncated() {
        for flag in ["--queues", "--queue-depth", "--workers", "--parent-pid"] {
            let e = parse(flag, "4294967297").expect_err(flag);
            assert_eq!(e, format!("{flag}: 4294967297 is too large (at most 4294967295)"));
            assert!(parse(flag, "4294967295").is_ok(), "{flag}: the largest u32 is its type's");
        }
        for flag in ["--memory", "--populate", "--duplicate-completion-after"] {
            let e = parse(flag, "18446744073709551616").expect_err(flag);
            assert!(e.starts_with(&format!("{flag}: 18446744073709551616 is too large (at most ")), "{e}");
        }
        assert_eq!(parse("--queues", "4").unwrap().queues, 4);
        assert_eq!(parse("--queues", "-1").unwrap_err(), "--queues: '-1' is not a number");
        assert_eq!(parse("--workers", "x").unwrap_err(), "--workers: 'x' is not a number");
    }
}
