//! The host side: an [`EmulatedCsp`] is one claimed queue pair of a device
//! process, plus the host's mapping of that device's memory.

use super::layout::{
    self, cqe_phase, decode_cqe, decode_identify, decode_sqe, decode_stats, encode_admin, encode_sqe, header, set_sqe_cid, Command as Entry, Geometry,
    Identify, Sqe,
    OPCODE_GET_STATS, OPCODE_IDENTIFY, QUEUE_MAGIC, QUEUE_VERSION, STATE_READY, STATE_STOPPING,
};
use super::name_lock::remove_files_left;
use super::server::{default_dir, serve_with_memory, ServeOptions, FAILED_LINE_PREFIX, READY_LINE_PREFIX};
use super::shared::{QueueFile, QueuePair};
use super::{CspError, CspPaths, CLAIM_ANY, CLAIM_MAGIC, CLAIM_NO_FREE_QUEUE, CLAIM_OK};
use crate::device::{Crash, Device};
use crate::function::{Function, FunctionSet};
use crate::memory::DeviceMemory;
use crate::request::{Completion, DeviceError, DeviceRange, FailureKind, Request, Status, Submit, MAX_INPUT_RANGES};
use crate::stats::DeviceStats;
use crate::sys::{self, peer_closed, poll_fds, EventFd};
use peerpath_mem::MappedRegion;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often an idle `poll` looks at the connection for a dead device.
const LIVENESS_CHECK_INTERVAL: Duration = Duration::from_millis(20);
/// The most of a gap between two looks at the device that counts as its
/// silence: past it, the host was not looking (stopped by Ctrl-Z or
/// SIGSTOP, with the device in its process group; starved; busy
/// elsewhere), and the device cannot be blamed for that time.
const UNWATCHED_GAP: Duration = Duration::from_secs(1);
/// The most a lost device's process is waited for, once its connection
/// has hung up, to say how it ended (a process that closed its connection
/// but runs on is reported as such after it).
const LOST_EXIT_WAIT: Duration = Duration::from_secs(1);

/// How to start a device process ([`EmulatedCsp::spawn`]).
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    pub serve: ServeOptions,
    /// The program to run: default, this program (`std::env::current_exe`,
    /// the `peerpath` binary).
    pub program: Option<PathBuf>,
    /// Arguments before the serve options: default `csp serve`.
    pub program_args: Vec<String>,
    /// How long the device may take to say it is ready.
    pub start_timeout: Duration,
    /// Commands in flight with none completing for this long: the device
    /// is declared hung ([`FailureKind::Timeout`]).
    pub command_timeout: Duration,
    /// Where the device's own messages go (`None`: this process's standard
    /// error). A device that outlives the job that started it (a job
    /// server's) must not hold that job's standard error open.
    pub stderr: Option<Arc<OwnedFd>>,
}

/// What a device process is given of this process's environment: where its temporary files go,
/// how it reports a panic, and peerpath's own settings, never a key (`PEERPATH_KEY`, or whatever
/// variable `--key-env` names: a device is given per-file block keys by command, never the
/// master key, and anything in its environment is readable in /proc/PID/environ for its life).
fn device_environment(vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vars.filter(|(k, _)| given_to_device(k.as_bytes())).collect()
}

/// Whether a device process has this variable of its host's environment ([`device_environment`]).
fn given_to_device(name: &[u8]) -> bool {
    matches!(name, b"PATH" | b"TMPDIR" | b"RUST_BACKTRACE" | b"RUST_LIB_BACKTRACE") || (name.starts_with(b"PEERPATH_") && !name.windows(3).any(|w| w == b"KEY"))
}

/// A forked device ([`EmulatedCsp::fork_with_memory`]: no exec, so no [`device_environment`])
/// keeps of its host's environment what an exec'd one is given: the others are removed, and
/// their `NAME=value` strings in the block exec put on the stack (what /proc/PID/environ shows
/// for the process's whole life, whatever is unset since; glibc's first environment points
/// there) are overwritten with zeros. That block is the child's own copy-on-write page: the
/// host's is untouched. Run on the child's only thread before it starts any, it is not
/// async-signal-safe (it allocates, and unsetenv takes glibc's lock and std's): it relies, as
/// the whole child does, on [`EmulatedCsp::fork_with_memory`]'s rule that no other thread of
/// the host held a lock at the fork.
fn forget_host_environment() -> Result<(), String> {
    let removed: Vec<std::ffi::OsString> = std::env::vars_os().map(|(k, _)| k).filter(|k| !given_to_device(k.as_bytes())).collect();
    for k in &removed {
        // The child's only thread: no other reads the environment while it changes.
        std::env::remove_var(k);
    }
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(|e| format!("cannot read /proc/self/stat: {e}"))?;
    let Some((start, end)) = exec_environment_block(&stat) else {
        return Err("/proc/self/stat gives no environment block (fields 50 and 51, env_start and env_end)".into());
    };
    // SAFETY: [start, end) is this process's environment block as the kernel reports it:
    // mapped and writable (the top of the main thread's stack), and referenced now only by
    // glibc's environment for the variables kept, whose bytes are not written. This is the
    // child's only thread, so nothing reads it meanwhile.
    let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    for var in block.split_mut(|b| *b == 0) {
        let name = var.split(|b| *b == b'=').next().unwrap_or_default();
        if !var.is_empty() && !given_to_device(name) {
            // Volatile: nothing reads these bytes again, and the writes must not be dropped for it.
            var.iter_mut().for_each(|b| {
                // SAFETY: `b` is a byte of the block above, a valid `&mut u8`.
                unsafe { std::ptr::write_volatile(b, 0) }
            });
        }
    }
    Ok(())
}

/// `env_start` and `env_end` (fields 50 and 51, Linux 3.5 and later) of a /proc/PID/stat line.
fn exec_environment_block(stat: &str) -> Option<(usize, usize)> {
    // The name in parentheses (field 2) may hold spaces and parentheses: fields count from after its last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_ascii_whitespace().skip(50 - 3);
    let start: usize = fields.next()?.parse().ok()?;
    let end: usize = fields.next()?.parse().ok()?;
    (start != 0 && end > start).then_some((start, end))
}

impl SpawnOptions {
    pub fn new(serve: ServeOptions) -> SpawnOptions {
        SpawnOptions {
            serve,
            program: None,
            program_args: vec!["csp".into(), "serve".into()],
            start_timeout: Duration::from_secs(10),
            command_timeout: Duration::from_secs(10),
            stderr: None,
        }
    }
}

/// How to reach a device started by hand ([`EmulatedCsp::connect`]).
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    pub name: String,
    pub dir: PathBuf,
    /// A queue pair by index; `None` takes any free one.
    pub queue: Option<u32>,
    pub command_timeout: Duration,
    /// How long the device has to answer the claim of a queue pair (a stopped or hung one is
    /// said so after it): `csp identify`/`stats --timeout`; 10 s otherwise, whatever a job's
    /// command timeout (a device just started may take longer than a short one to answer).
    pub claim_wait: Duration,
}

impl ConnectOptions {
    pub fn new(name: &str) -> ConnectOptions {
        ConnectOptions { name: name.to_string(), dir: default_dir(), queue: None, command_timeout: Duration::from_secs(10), claim_wait: CLAIM_WAIT }
    }
}

/// [`ConnectOptions::claim_wait`]'s default.
pub const CLAIM_WAIT: Duration = Duration::from_secs(10);

/// What a command id is used for.
enum Slot {
    Io(Request),
    Admin,
}

/// One queue pair of an emulated CSP, as a [`Device`].
///
/// Each handle claims its own queue pair; open several (several
/// [`EmulatedCsp::connect`]s) to drive one device from several threads.
/// The handle that spawned the device stops it when dropped.
pub struct EmulatedCsp {
    name: String,
    paths: CspPaths,
    /// `None` only inside `Drop`, which unmaps it before stopping the device.
    memory: Option<DeviceMemory>,
    qp: QueuePair,
    queue_index: u32,
    socket: UnixStream,
    sq_efd: EventFd,
    cq_efd: EventFd,
    sq_tail: u32,
    cq_head: u32,
    phase: bool,
    slots: Vec<Option<Slot>>,
    /// Free command ids, reused oldest first: a late duplicate completion
    /// then finds its id free (caught as malformed) rather than taken by a
    /// new command.
    free: VecDeque<u16>,
    in_flight: usize,
    admin_done: Option<(u16, Status, u64)>,
    pending: VecDeque<Completion>,
    last_progress: Instant,
    /// When the host last looked at the device (see [`UNWATCHED_GAP`]).
    looked_at: Instant,
    last_liveness_check: Instant,
    command_timeout: Duration,
    failed: Option<DeviceError>,
    child: Option<DeviceProcess>,
    identify: Identify,
}

impl EmulatedCsp {
    /// Starts a device process (`<program> csp serve ...`, by default this
    /// very binary) and connects to it. The device exits with this process.
    pub fn spawn(options: &SpawnOptions) -> Result<EmulatedCsp, CspError> {
        let program = match &options.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .map_err(|source| CspError::Spawn { program: PathBuf::from("(current executable)"), source })?,
        };
        let mut serve = options.serve.clone();
        serve.parent_pid = Some(std::process::id());
        let name = serve.name.clone();
        let paths = CspPaths::new(&serve.dir, &name)?;
        let stderr = match &options.stderr {
            Some(fd) => Stdio::from(fd.try_clone().map_err(|source| CspError::Spawn { program: program.clone(), source })?),
            None => Stdio::inherit(),
        };
        let mut child = Command::new(&program)
            .args(&options.program_args)
            .args(serve.to_args())
            .env_clear()
            .envs(device_environment(std::env::vars_os()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|source| CspError::Spawn { program: program.clone(), source })?;
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut process = DeviceProcess::Spawned(child);
        start(&mut process, &mut stdout, &paths, &name, options.start_timeout)?;
        EmulatedCsp::connect_started(options, &serve.dir, &name, process, None)
    }

    /// Starts a device whose memory the caller mapped (P2P memory from
    /// `p2pmem/allocate`): a fork of this process, which inherits the
    /// mapping and runs the device there without exec (each mmap of
    /// `allocate` is a new allocation, so the memory cannot be shared
    /// through a file as the shm memory is). `options.program` is not
    /// used. Call it before this process starts threads that hold locks
    /// (the child runs the device on the forking thread alone). The child
    /// keeps of the environment what [`EmulatedCsp::spawn`] gives a device
    /// (no key: `forget_host_environment`), but the rest of this process's
    /// memory as it is now is its too: call it before loading a key.
    pub fn fork_with_memory(options: &SpawnOptions, memory: Arc<MappedRegion>) -> Result<EmulatedCsp, CspError> {
        let mut serve = options.serve.clone();
        serve.parent_pid = Some(std::process::id());
        serve.memory_bytes = memory.len();
        let name = serve.name.clone();
        let paths = CspPaths::new(&serve.dir, &name)?;
        let spawn_err = |source| CspError::Spawn { program: PathBuf::from("(fork of this process)"), source };
        let (ready_r, ready_w) = sys::pipe().map_err(spawn_err)?;
        // SAFETY: fork has no memory-safety preconditions; the child below
        // only runs the device (no exec, no return into the caller's code)
        // and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(spawn_err(std::io::Error::last_os_error()));
        }
        if pid == 0 {
            drop(ready_r);
            let code = run_forked_device(&serve, memory, ready_w);
            // SAFETY: ends the child without running the parent's exit
            // handlers or destructors (they are the parent's business).
            unsafe { libc::_exit(code) };
        }
        drop(ready_w);
        let mut process = DeviceProcess::Forked { pid: pid as u32, status: None };
        let mut ready = std::fs::File::from(ready_r);
        start(&mut process, &mut ready, &paths, &name, options.start_timeout)?;
        EmulatedCsp::connect_started(options, &serve.dir, &name, process, Some(memory))
    }

    fn connect_started(
        options: &SpawnOptions,
        dir: &Path,
        name: &str,
        process: DeviceProcess,
        memory: Option<Arc<MappedRegion>>,
    ) -> Result<EmulatedCsp, CspError> {
        let connect = ConnectOptions { name: name.to_string(), dir: dir.to_path_buf(), queue: None, command_timeout: options.command_timeout, claim_wait: CLAIM_WAIT };
        match EmulatedCsp::connect_with(&connect, Some(process), memory) {
            Ok(d) => Ok(d),
            Err((e, child)) => {
                if let Some(mut c) = child {
                    let _ = sys::kill(c.id(), libc::SIGTERM);
                    let _ = c.wait();
                }
                Err(e)
            }
        }
    }

    /// Connects to a device started by hand (`peerpath csp serve --name N`),
    /// claiming a queue pair.
    pub fn connect(options: &ConnectOptions) -> Result<EmulatedCsp, CspError> {
        EmulatedCsp::connect_with(options, None, None).map_err(|(e, _)| e)
    }

    /// `memory`: the device's memory as this process already maps it (a
    /// forked device); `None` maps the device's memory file.
    fn connect_with(
        o: &ConnectOptions,
        child: Option<DeviceProcess>,
        memory: Option<Arc<MappedRegion>>,
    ) -> Result<EmulatedCsp, (CspError, Option<DeviceProcess>)> {
        let paths = match CspPaths::new(&o.dir, &o.name) {
            Ok(p) => p,
            Err(e) => return Err((e, child)),
        };
        let claimed = claim(&paths, &o.name, o.queue, o.claim_wait);
        let (socket, index, sq_efd, cq_efd) = match claimed {
            Ok(c) => c,
            Err(e) => return Err((e, child)),
        };
        let mapped = (|| {
            let qregion = Arc::new(MappedRegion::open_shared(&paths.queues, &o.name)?);
            let qfile = Arc::new(QueueFile::new(qregion));
            let geometry = check_header(&qfile, &paths.queues)?;
            let memory = match memory {
                Some(m) => m,
                None => Arc::new(MappedRegion::open_shared(&paths.memory, &o.name)?),
            };
            let memory_bytes = qfile.u64_at(header::MEMORY_BYTES).load(Ordering::Relaxed);
            if memory.len() as u64 != memory_bytes {
                return Err(CspError::BadQueueFile {
                    path: paths.memory.clone(),
                    detail: format!("memory file holds {} bytes, the header says {memory_bytes}", memory.len()),
                });
            }
            if index >= geometry.queue_count {
                return Err(CspError::BadQueueFile { path: paths.queues.clone(), detail: format!("queue pair {index} granted, only {} exist", geometry.queue_count) });
            }
            Ok((QueuePair::new(qfile, geometry, index), geometry, memory))
        })();
        let (qp, geometry, memory) = match mapped {
            Ok(m) => m,
            Err(e) => return Err((e, child)),
        };
        let depth = geometry.queue_depth;
        let now = Instant::now();
        let mut device = EmulatedCsp {
            name: o.name.clone(),
            paths,
            memory: Some(DeviceMemory::region(memory)),
            qp,
            queue_index: index,
            socket,
            sq_efd,
            cq_efd,
            sq_tail: 0,
            cq_head: 0,
            phase: true,
            slots: (0..depth).map(|_| None).collect(),
            // One slot short of the depth: the SQ and the CQ can never fill.
            free: (0..depth as u16 - 1).collect(),
            in_flight: 0,
            admin_done: None,
            pending: VecDeque::new(),
            last_progress: now,
            looked_at: now,
            last_liveness_check: now,
            command_timeout: o.command_timeout,
            failed: None,
            child,
            identify: Identify {
                name: o.name.clone(),
                version: QUEUE_VERSION,
                pid: 0,
                memory_bytes: 0,
                queue_count: geometry.queue_count,
                queue_depth: depth,
                max_input_ranges: MAX_INPUT_RANGES as u32,
                workers: 0,
                functions: FunctionSet::EMPTY,
            },
        };
        match device.identify() {
            Ok(id) => {
                device.identify = id;
                Ok(device)
            }
            Err(e) => {
                let child = device.child.take();
                Err((CspError::Device(e), child))
            }
        }
    }

    /// Asks the device what it is (the identify command).
    pub fn identify(&mut self) -> Result<Identify, DeviceError> {
        let (status, bytes) = self.admin(OPCODE_IDENTIFY)?;
        let words = self.qp.read_data(10);
        match (status, decode_identify(&words)) {
            (Status::Success, Some(id)) if bytes == 80 => Ok(id),
            (status, _) => Err(self.fail(FailureKind::MalformedCompletion, format!("identify answered {status} with {bytes} bytes of unreadable data"))),
        }
    }

    /// The device's own statistics (the get-stats command).
    pub fn device_stats(&mut self) -> Result<DeviceStats, DeviceError> {
        let (status, bytes) = self.admin(OPCODE_GET_STATS)?;
        let words = self.qp.read_data(layout::stats_words(crate::function::FunctionKind::ALL.len()));
        match (status, decode_stats(&words)) {
            (Status::Success, Some(s)) if bytes as usize == layout::stats_words(s.functions.len()) * 8 => Ok(s),
            (status, _) => Err(self.fail(FailureKind::MalformedCompletion, format!("get stats answered {status} with {bytes} bytes of unreadable data"))),
        }
    }

    /// What identify said when the handle connected.
    pub fn identity(&self) -> &Identify {
        &self.identify
    }

    /// The device's files.
    pub fn paths(&self) -> &CspPaths {
        &self.paths
    }

    /// The queue pair this handle drives.
    pub fn queue_index(&self) -> u32 {
        self.queue_index
    }

    /// The device process.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(self.identify.pid)
    }

    /// A descriptor that becomes readable (hang-up) when the device process
    /// dies or closes the connection: arm it next to [`Device::wake_fd`] so
    /// that an event loop also wakes for a dead device.
    pub fn failure_fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }

    /// Puts a raw 64-byte entry on the queue (its command id is replaced by
    /// a free one): for conformance tests of malformed entries. Its
    /// completion comes back with the request the entry encodes, or, for an
    /// entry that encodes none, a placeholder copy with the entry's output
    /// range; either carries `tag`.
    pub fn submit_raw(&mut self, tag: u64, mut entry: Sqe) -> Submit {
        let placeholder = match decode_sqe(&entry).1 {
            Ok(Entry::Io(r)) => Request { tag, ..r },
            _ => Request { tag, function: Function::Copy, inputs: Vec::new(), output: DeviceRange::new(entry[2], entry[3]) },
        };
        if let Some(f) = &self.failed {
            return Submit::Refused(placeholder, f.clone());
        }
        let Some(cid) = self.free.pop_front() else {
            return Submit::Busy(placeholder);
        };
        set_sqe_cid(&mut entry, cid);
        self.push_entry(cid, &entry, Slot::Io(placeholder));
        Submit::Queued
    }

    /// Stops a device this handle spawned (SIGTERM, then waits for it to
    /// remove its files) and returns how it exited; for a device started by
    /// hand, just disconnects.
    pub fn shutdown(mut self) -> Result<Option<std::process::ExitStatus>, CspError> {
        let Some(mut child) = self.child.take() else {
            return Ok(None);
        };
        stop_child(&mut child, &self.paths).map(Some).map_err(|source| CspError::Io { operation: "stop the device process for", path: self.paths.socket.clone(), source })
    }

    fn push_entry(&mut self, cid: u16, entry: &Sqe, slot: Slot) {
        let depth = self.qp.depth();
        self.qp.write_sqe(self.sq_tail, entry);
        self.sq_tail = (self.sq_tail + 1) % depth;
        self.qp.sq_tail().store(self.sq_tail, Ordering::Release);
        fence(Ordering::SeqCst);
        let need = self.qp.sq_need_wake();
        if need.load(Ordering::SeqCst) == 1 && need.swap(0, Ordering::SeqCst) == 1 {
            self.sq_efd.signal();
        }
        if self.in_flight == 0 {
            self.last_progress = Instant::now();
        }
        self.slots[cid as usize] = Some(slot);
        self.in_flight += 1;
    }

    /// Marks the device failed; returns the error with every request in
    /// flight (in command id order), once.
    fn fail(&mut self, kind: FailureKind, detail: String) -> DeviceError {
        let in_flight = self
            .slots
            .iter_mut()
            .filter_map(|s| match s.take() {
                Some(Slot::Io(r)) => Some(r),
                _ => None,
            })
            .collect();
        self.in_flight = 0;
        self.free.clear();
        let e = DeviceError { device: self.name.clone(), kind, detail, in_flight };
        self.failed = Some(e.without_requests());
        e
    }

    fn lost(&mut self) -> DeviceError {
        // A device that stops (not one killed) says so in the header first.
        let file = self.qp.file();
        let stopped = (file.u32_at(header::STATE).load(Ordering::Acquire) == STATE_STOPPING)
            .then(|| file.u32_at(header::STOP_SIGNAL).load(Ordering::Relaxed));
        // A killed process's connection hangs up as its files close, a moment before it can be
        // waited for: that moment is waited out (bounded), so that the report says how it died.
        let wait = if stopped.is_none() { LOST_EXIT_WAIT } else { Duration::ZERO };
        let exited = self.child.as_mut().and_then(|c| c.exit_status_within(wait));
        let detail = match (stopped, exited) {
            (Some(signal), Some(status)) => format!("the device stopped{} and its process exited ({status})", stop_reason(signal)),
            (Some(signal), None) => format!("the device stopped{} and closed its connection", stop_reason(signal)),
            (None, Some(status)) => format!("the device process exited ({status})"),
            (None, None) => "the device closed its connection (its process died or stopped)".to_string(),
        };
        self.fail(FailureKind::Lost, detail)
    }

    /// Takes every completion the device has posted; checks each one.
    fn reap(&mut self, out: &mut Vec<Completion>) -> Result<usize, DeviceError> {
        let depth = self.qp.depth();
        let mut n = 0;
        let mut progressed = false;
        loop {
            let word3 = self.qp.cqe_status_word(self.cq_head);
            if cqe_phase(word3) != self.phase {
                break;
            }
            let f = decode_cqe(&self.qp.read_cqe(self.cq_head, word3));
            self.cq_head += 1;
            if self.cq_head == depth {
                self.cq_head = 0;
                self.phase = !self.phase;
            }
            self.qp.cq_head().store(self.cq_head, Ordering::Release);
            progressed = true;
            let Some(status) = Status::from_code(f.status_code) else {
                return Err(self.fail(FailureKind::MalformedCompletion, format!("completion for command {} with unknown status code {}", f.cid, f.status_code)));
            };
            let Some(slot) = self.slots.get_mut(f.cid as usize).and_then(Option::take) else {
                return Err(self.fail(
                    FailureKind::MalformedCompletion,
                    format!("completion for command id {}, which is not in flight (a duplicate or corrupt completion)", f.cid),
                ));
            };
            self.free.push_back(f.cid);
            self.in_flight -= 1;
            match slot {
                Slot::Admin => self.admin_done = Some((f.cid, status, f.output_bytes)),
                Slot::Io(request) => {
                    if f.output_bytes > request.output.len || (!status.is_success() && f.output_bytes != 0) {
                        let detail = format!(
                            "completion for command {} says {status} with {} output bytes, for an output range of {}",
                            f.cid, f.output_bytes, request.output.len
                        );
                        let mut e = self.fail(FailureKind::MalformedCompletion, detail);
                        e.in_flight.push(request);
                        self.failed = Some(e.without_requests());
                        return Err(e);
                    }
                    out.push(Completion {
                        request,
                        status,
                        output_bytes: f.output_bytes,
                        input_crc32: f.input_crc32,
                        device_time_us: f.device_time_us,
                    });
                    n += 1;
                }
            }
        }
        if progressed {
            self.last_progress = Instant::now();
        }
        Ok(n)
    }

    /// The host looks at the device now, the last look `expected` ago at
    /// most (a sleep that long): time past that, and past [`UNWATCHED_GAP`],
    /// the host was not running or not looking, and the device's silence
    /// does not count it (the command timeout is of the device's time).
    fn look(&mut self, expected: Duration) -> Instant {
        let now = Instant::now();
        let unwatched = now.duration_since(self.looked_at).saturating_sub(expected.max(UNWATCHED_GAP));
        if !unwatched.is_zero() {
            self.last_progress = (self.last_progress + unwatched).min(now);
        }
        self.looked_at = now;
        now
    }

    /// Is the device alive, and is it making progress? Called when a poll
    /// found nothing.
    fn check_health(&mut self) -> Result<(), DeviceError> {
        let now = self.look(Duration::ZERO);
        if now.duration_since(self.last_liveness_check) >= LIVENESS_CHECK_INTERVAL {
            self.last_liveness_check = now;
            if peer_closed(&self.socket) {
                return Err(self.lost_after_final_reap());
            }
        }
        if self.in_flight > 0 && now.duration_since(self.last_progress) > self.command_timeout {
            let detail = format!(
                "no command completed for {} ms (commands in flight: {})",
                now.duration_since(self.last_progress).as_millis(),
                self.in_flight
            );
            return Err(self.fail(FailureKind::Timeout, detail));
        }
        Ok(())
    }

    /// The device is gone: keep what it completed before it went (for the
    /// next polls), and report the rest lost.
    fn lost_after_final_reap(&mut self) -> DeviceError {
        let mut last = Vec::new();
        if let Err(e) = self.reap(&mut last) {
            self.pending.extend(last);
            return e;
        }
        self.pending.extend(last);
        self.lost()
    }

    /// Sets the CQ need-wake word; false if a completion is already there.
    fn arm_cq(&mut self) -> bool {
        let need = self.qp.cq_need_wake();
        need.store(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if cqe_phase(self.qp.cqe_status_word(self.cq_head)) == self.phase {
            need.store(0, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Sleeps until the device posts a completion, dies, or `timeout`.
    fn sleep_on_cq(&mut self, timeout: Duration) -> Result<(), DeviceError> {
        if !self.arm_cq() {
            return Ok(());
        }
        self.look(Duration::ZERO);
        let to_hang = self.command_timeout.saturating_sub(self.last_progress.elapsed()) + Duration::from_millis(1);
        let fds = [(self.cq_efd.raw(), libc::POLLIN), (self.socket.as_raw_fd(), libc::POLLIN)];
        let sleep = timeout.min(to_hang);
        let ev = poll_fds(&fds, Some(sleep));
        self.look(sleep);
        self.qp.cq_need_wake().store(0, Ordering::SeqCst);
        self.cq_efd.drain();
        let ev = ev.map_err(|e| self.fail(FailureKind::Lost, format!("cannot wait for completions: {e}")))?;
        if ev[1] != 0 && peer_closed(&self.socket) {
            return Err(self.lost_after_final_reap());
        }
        if self.in_flight > 0 && self.last_progress.elapsed() > self.command_timeout {
            let mut last = Vec::new();
            let n = self.reap(&mut last)?;
            self.pending.extend(last);
            if n == 0 {
                self.check_health()?;
            }
        }
        Ok(())
    }

    /// Runs an admin command and waits for it (I/O completions that arrive
    /// meanwhile are kept for the next poll).
    fn admin(&mut self, opcode: u8) -> Result<(Status, u64), DeviceError> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        let cid = loop {
            if let Some(cid) = self.free.pop_front() {
                break cid;
            }
            self.reap_into_pending()?;
            if self.free.is_empty() {
                self.check_health()?;
                self.sleep_on_cq(self.command_timeout)?;
            }
        };
        self.push_entry(cid, &encode_admin(cid, opcode), Slot::Admin);
        loop {
            self.reap_into_pending()?;
            if let Some((done_cid, status, bytes)) = self.admin_done.take() {
                if done_cid == cid {
                    return Ok((status, bytes));
                }
            }
            self.check_health()?;
            self.sleep_on_cq(self.command_timeout)?;
        }
    }

    fn reap_into_pending(&mut self) -> Result<(), DeviceError> {
        let mut got = Vec::new();
        let r = self.reap(&mut got);
        self.pending.extend(got);
        r.map(|_| ())
    }
}

impl Device for EmulatedCsp {
    fn failure(&self) -> Option<&DeviceError> {
        self.failed.as_ref()
    }

    fn set_command_timeout(&mut self, timeout: Duration) {
        self.command_timeout = timeout;
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn functions(&self) -> FunctionSet {
        self.identify.functions
    }

    fn memory(&self) -> &DeviceMemory {
        self.memory.as_ref().expect("device memory stays mapped until the handle is dropped")
    }

    fn queue_depth(&self) -> usize {
        self.qp.depth() as usize - 1
    }

    fn in_flight(&self) -> usize {
        self.in_flight + self.pending.len()
    }

    fn submit(&mut self, request: Request) -> Submit {
        if let Some(f) = &self.failed {
            return Submit::Refused(request, f.clone());
        }
        if request.inputs.len() > MAX_INPUT_RANGES {
            // Cannot be written as an entry: refused here, as the device would.
            self.pending.push_back(Completion { request, status: Status::InvalidField, output_bytes: 0, input_crc32: 0, device_time_us: 0 });
            return Submit::Queued;
        }
        let Some(cid) = self.free.pop_front() else {
            return Submit::Busy(request);
        };
        let entry = encode_sqe(cid, &request);
        self.push_entry(cid, &entry, Slot::Io(request));
        Submit::Queued
    }

    fn poll(&mut self, completions: &mut Vec<Completion>) -> Result<usize, DeviceError> {
        let mut n = 0;
        while let Some(c) = self.pending.pop_front() {
            completions.push(c);
            n += 1;
        }
        if let Some(f) = &self.failed {
            return if n > 0 { Ok(n) } else { Err(f.clone()) };
        }
        n += self.reap(completions)?;
        if n == 0 && self.in_flight > 0 {
            let health = self.check_health();
            // What a dying device completed before it went comes first.
            n += self.pending.len();
            completions.extend(self.pending.drain(..));
            health?;
        }
        Ok(n)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), DeviceError> {
        if let Some(f) = &self.failed {
            return if self.pending.is_empty() { Err(f.clone()) } else { Ok(()) };
        }
        if !self.pending.is_empty() || self.in_flight == 0 {
            return Ok(());
        }
        self.sleep_on_cq(timeout)
    }

    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.cq_efd.raw())
    }

    fn arm_wake(&mut self) -> bool {
        if self.failed.is_some() || !self.pending.is_empty() {
            return false;
        }
        self.arm_cq()
    }

    fn hangup_fd(&self) -> Option<RawFd> {
        Some(self.failure_fd())
    }

    fn process_id(&self) -> Option<u32> {
        Some(self.pid())
    }

    fn parallelism(&self) -> Option<usize> {
        (self.identify.workers > 0).then_some(self.identify.workers as usize)
    }

    /// What the device said it takes (its queue entries hold a fixed number of ranges).
    fn max_input_ranges(&self) -> usize {
        self.identify.max_input_ranges.max(1) as usize
    }

    fn stats(&mut self) -> Option<DeviceStats> {
        self.device_stats().ok()
    }
}

impl Crash for EmulatedCsp {
    /// SIGKILLs the device process (a crash mid-job); the host side finds
    /// out through its ordinary checks (the connection hangs up).
    fn crash(&mut self) {
        match &mut self.child {
            Some(c) => {
                let _ = c.kill();
            }
            None => {
                let _ = sys::kill(self.identify.pid, libc::SIGKILL);
            }
        }
    }

    /// SIGSTOPs the device process: alive, answering nothing.
    fn freeze(&mut self) {
        let _ = sys::kill(self.pid(), libc::SIGSTOP);
    }
}

impl Drop for EmulatedCsp {
    fn drop(&mut self) {
        // The host's view of the device memory goes first: the device owns
        // the memory, and when its process then exits it is the last user,
        // so giving the pages back is its work (its CPU, in its report),
        // as it would be a real device's business, not the host's.
        drop(self.memory.take());
        if let Some(mut child) = self.child.take() {
            let _ = stop_child(&mut child, &self.paths);
        }
    }
}

/// The device process a handle started: by exec ([`EmulatedCsp::spawn`])
/// or by fork ([`EmulatedCsp::fork_with_memory`]).
enum DeviceProcess {
    Spawned(Child),
    Forked { pid: u32, status: Option<ExitStatus> },
}

impl DeviceProcess {
    fn id(&self) -> u32 {
        match self {
            DeviceProcess::Spawned(c) => c.id(),
            DeviceProcess::Forked { pid, .. } => *pid,
        }
    }

    fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        match self {
            DeviceProcess::Spawned(c) => c.try_wait(),
            DeviceProcess::Forked { pid, status } => {
                if status.is_none() {
                    *status = sys::wait_pid(*pid, false)?;
                }
                Ok(*status)
            }
        }
    }

    /// Its exit status, waiting up to `timeout` for the process to end
    /// (`None`: it still runs, or it cannot be waited for).
    fn exit_status_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.try_wait().ok().flatten() {
            return Some(status);
        }
        if !timeout.is_zero() {
            // A pidfd is readable once the process has exited.
            let pidfd = sys::pidfd_open(self.id()).ok()?;
            poll_fds(&[(pidfd.as_raw_fd(), libc::POLLIN)], Some(timeout)).ok()?;
        }
        self.try_wait().ok().flatten()
    }

    fn kill(&mut self) -> std::io::Result<()> {
        match self {
            DeviceProcess::Spawned(c) => c.kill(),
            DeviceProcess::Forked { status: Some(_), .. } => Ok(()),
            DeviceProcess::Forked { pid, .. } => sys::kill(*pid, libc::SIGKILL),
        }
    }

    fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            DeviceProcess::Spawned(c) => c.wait(),
            DeviceProcess::Forked { pid, status } => {
                if status.is_none() {
                    *status = sys::wait_pid(*pid, true)?;
                }
                Ok(status.expect("a blocking wait returns a status"))
            }
        }
    }
}

/// The forked child's whole life: the device on `memory`, the ready line
/// on `ready`, the exit code (0, 1 for an error, 101 for a panic).
fn run_forked_device(serve: &ServeOptions, memory: Arc<MappedRegion>, ready: std::os::fd::OwnedFd) -> i32 {
    let mut ready = std::fs::File::from(ready);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        forget_host_environment().map_err(|e| format!("its host's environment (a key may be there) could not be cleared from it: {e}"))?;
        serve_with_memory(serve, Some(memory), |paths, id| {
            // Straight to the pipe: the parent's stdout lock may have been
            // held by another thread at fork time.
            let _ = writeln!(ready, "{READY_LINE_PREFIX} {} ({} bytes of caller-mapped memory) at {}", id.name, id.memory_bytes, paths.socket.display());
        })
        .map_err(|e| e.to_string())
    }));
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            sys::write_stderr(&format!("peerpath: emulated device {}: {e}\n", serve.name));
            let _ = writeln!(ready, "{FAILED_LINE_PREFIX} {e}");
            1
        }
        Err(_) => 101,
    }
}

/// SIGTERM, up to 5 s for the device to clean up, then SIGKILL. A device
/// that did not remove its files (killed) has them removed here, unless
/// another device has taken the name since.
fn stop_child(child: &mut DeviceProcess, paths: &CspPaths) -> std::io::Result<ExitStatus> {
    if let Some(status) = child.try_wait()? {
        remove_files_left(paths);
        return Ok(status);
    }
    let _ = sys::kill(child.id(), libc::SIGTERM);
    // A stopped (frozen) device handles SIGTERM only once it runs again.
    let _ = sys::kill(child.id(), libc::SIGCONT);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    remove_files_left(paths);
    Ok(status)
}

/// Waits for the device's ready line; stops it if it does not come in time.
fn start(process: &mut DeviceProcess, ready: &mut (impl Read + AsRawFd), paths: &CspPaths, name: &str, timeout: Duration) -> Result<(), CspError> {
    let result = wait_ready(process, ready, name, timeout);
    match &result {
        Err(CspError::StartTimeout { .. }) => {
            let _ = process.kill();
            let _ = process.wait();
            remove_files_left(paths); // the child's, if it got far enough to make them
        }
        // Ended (waited for): one killed by a signal (SIGBUS) left its files. One that
        // exited removed what it made itself, and the files may be another device's (a
        // name that is taken).
        Err(CspError::ExitedEarly { .. }) if process.try_wait().ok().flatten().is_some_and(|st| std::os::unix::process::ExitStatusExt::signal(&st).is_some()) => remove_files_left(paths),
        _ => {}
    }
    result
}

/// Waits for the ready line on `stdout` (the child's standard output, or
/// the forked device's pipe).
fn wait_ready(child: &mut DeviceProcess, stdout: &mut (impl Read + AsRawFd), name: &str, timeout: Duration) -> Result<(), CspError> {
    let start = Instant::now();
    let mut line = Vec::new();
    let mut why = None;
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Err(CspError::StartTimeout { name: name.to_string(), waited_ms: start.elapsed().as_millis() as u64 });
        }
        let ev = poll_fds(&[(stdout.as_raw_fd(), libc::POLLIN)], Some(left)).unwrap_or_default();
        if ev.first().copied().unwrap_or(0) == 0 {
            continue;
        }
        let mut buf = [0u8; 512];
        let n = stdout.read(&mut buf).unwrap_or(0);
        if n == 0 {
            let status = child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            let why = why.unwrap_or_else(|| "it gave no reason here; its error, if any, is on standard error above".into());
            return Err(CspError::ExitedEarly { name: name.to_string(), status, why });
        }
        line.extend_from_slice(&buf[..n]);
        while let Some(end) = line.iter().position(|b| *b == b'\n') {
            if line[..end].starts_with(READY_LINE_PREFIX.as_bytes()) {
                return Ok(());
            }
            if let Some(reason) = line[..end].strip_prefix(FAILED_LINE_PREFIX.as_bytes()) {
                why = Some(String::from_utf8_lossy(reason).trim().to_string());
            }
            line.drain(..=end);
        }
    }
}

/// Connects to the device's socket and claims a queue pair; returns the
/// socket, the queue pair's index and its SQ and CQ eventfds. A device that does not answer
/// within `wait` (the options' `claim_wait`) is said to be stopped or hung.
fn claim(paths: &CspPaths, name: &str, queue: Option<u32>, wait: Duration) -> Result<(UnixStream, u32, EventFd, EventFd), CspError> {
    let connect_err = |source| CspError::Connect { name: name.to_string(), socket: paths.socket.clone(), source };
    let io_err = |source| CspError::Io { operation: "claim a queue pair on", path: paths.socket.clone(), source };
    let mut sock = UnixStream::connect(&paths.socket).map_err(connect_err)?;
    sock.set_read_timeout(Some(wait)).map_err(io_err)?;
    let mut msg = [0u8; 8];
    msg[0..4].copy_from_slice(&CLAIM_MAGIC.to_le_bytes());
    msg[4..8].copy_from_slice(&queue.unwrap_or(CLAIM_ANY).to_le_bytes());
    sock.write_all(&msg).map_err(io_err)?;
    let mut answer = [0u8; 16];
    let fds = sys::recv_with_fds(&sock, &mut answer, 2).map_err(|e| match e.kind() {
        // The read timed out (it said "Resource temporarily unavailable"): a device that takes
        // connections but does not answer them.
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io_err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the device gave no answer within {} s (is its process stopped, or hung?)", wait.as_secs_f64()),
        )),
        _ => io_err(e),
    })?;
    let word = |i: usize| u32::from_le_bytes(answer[i * 4..i * 4 + 4].try_into().expect("4 bytes"));
    let refused = |reason: String| CspError::Refused { name: name.to_string(), reason };
    if word(0) != CLAIM_MAGIC {
        return Err(refused("the socket answered something that is not a peerpath CSP".into()));
    }
    match word(1) {
        CLAIM_OK => {}
        CLAIM_NO_FREE_QUEUE => {
            return Err(refused(match queue {
                Some(q) => format!("queue pair {q} is taken or does not exist"),
                None => "every queue pair is taken (start it with more --queues)".into(),
            }))
        }
        other => return Err(refused(format!("claim refused with status {other}"))),
    }
    let mut fds = fds.into_iter();
    let (Some(sq), Some(cq)) = (fds.next(), fds.next()) else {
        return Err(refused("the reply carried no eventfds".into()));
    };
    sock.set_read_timeout(None).map_err(io_err)?;
    Ok((sock, word(2), EventFd::from_owned(sq), EventFd::from_owned(cq)))
}

/// " on SIGTERM" for the signal a device said it stopped on (0: none, it
/// stopped for another reason: the process that started it exited).
fn stop_reason(signal: u32) -> String {
    let name = match signal as libc::c_int {
        0 => return String::new(),
        libc::SIGTERM => "SIGTERM".to_string(),
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGHUP => "SIGHUP".to_string(),
        other => format!("signal {other}"),
    };
    format!(" on {name}")
}

/// Checks the queue file's header; returns its geometry.
fn check_header(q: &QueueFile, path: &Path) -> Result<Geometry, CspError> {
    let bad = |detail: String| Err(CspError::BadQueueFile { path: path.to_path_buf(), detail });
    if q.len() < layout::HEADER_BYTES {
        return bad(format!("{} bytes, shorter than its header", q.len()));
    }
    let magic = q.u64_at(header::MAGIC).load(Ordering::Acquire);
    if magic != QUEUE_MAGIC {
        return bad(format!("magic {magic:#018x}, expected {QUEUE_MAGIC:#018x}"));
    }
    let version = q.u32_at(header::VERSION).load(Ordering::Acquire);
    if version != QUEUE_VERSION {
        return bad(format!("layout version {version}, this build reads {QUEUE_VERSION}"));
    }
    if q.u32_at(header::STATE).load(Ordering::Acquire) != STATE_READY {
        return bad("the device is not ready (starting or stopping)".into());
    }
    let sqe = q.u32_at(header::SQE_BYTES).load(Ordering::Relaxed) as usize;
    let cqe = q.u32_at(header::CQE_BYTES).load(Ordering::Relaxed) as usize;
    if (sqe, cqe) != (layout::SQE_BYTES, layout::CQE_BYTES) {
        return bad(format!("entries of {sqe} and {cqe} bytes, expected {} and {}", layout::SQE_BYTES, layout::CQE_BYTES));
    }
    let g = q.geometry();
    if !g.is_valid() {
        return bad(format!("{} queue pairs of depth {}", g.queue_count, g.queue_depth));
    }
    let stride = q.u64_at(header::QUEUE_STRIDE).load(Ordering::Relaxed);
    if stride != g.queue_stride() as u64 || q.len() < g.total_bytes() {
        return bad(format!("queue stride {stride} or file length {} does not match the geometry", q.len()));
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::device_environment;
    use std::ffi::OsString;

    /// A device process gets no key from its host's environment (it inherited PEERPATH_KEY and
    /// the variable --key-env named: readable in /proc/PID/environ), and keeps what it needs.
    #[test]
    fn a_device_is_given_no_key_of_its_hosts_environment() {
        let host = ["PEERPATH_KEY", "MY_SECRET", "PEERPATH_KEYS", "HOME", "PATH", "TMPDIR", "RUST_BACKTRACE", "PEERPATH_NAMED_TEMPORARIES", "PEERPATH_TEST_PACK_BYTES"];
        let given: Vec<String> = device_environment(host.iter().map(|k| (OsString::from(k), OsString::from("x")))).into_iter().map(|(k, _)| k.into_string().unwrap()).collect();
        assert_eq!(given, ["PATH", "TMPDIR", "RUST_BACKTRACE", "PEERPATH_NAMED_TEMPORARIES", "PEERPATH_TEST_PACK_BYTES"]);
    }
}
