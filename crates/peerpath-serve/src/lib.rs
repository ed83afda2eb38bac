//! The data mover (seed 002's second type): a server that maps a key to
//! stored data and sends it, looking at headers only. `serve` answers
//! HTTP/1.1 (GET, HEAD, one byte range, conditional requests against an
//! ETag and Last-Modified) and the memcached text protocol
//! (`get`/`gets`) for the files under a directory, moving each payload in
//! one of the ways the seed compares:
//!
//! - [`Mode::Host`]: the classic server: read into this process's memory,
//!   then send (every payload byte crosses host memory twice); objects are
//!   kept there once read, as a key-value store keeps its values
//!   ([`hostcache`]; then a hit is one copy, the send's);
//! - [`Mode::ZeroCopy`]: `sendfile(2)`: the kernel sends from the page
//!   cache; this process never holds the payload.
//! - [`Mode::SendZc`]: the file mapped, and sent from the mapping with
//!   io_uring's `SEND_ZC`, whose notifications say whether the kernel copied
//!   the payload after all (on loopback it always does); counted in the report.
//!
//! - [`Mode::DevMem`]: payloads placed in an emulated NIC's memory and sent
//!   by it ([`nic`]); this process builds headers only.
//!
//! Connections are served by an event loop ([`event`]): idle ones wait in
//! epoll, a bounded pool of workers answers requests, and responses a
//! client is slow to take wait in epoll too ([`out`]). Requests are parsed
//! with `httparse`; paths are resolved under the root and refused if they
//! leave it (`..`, symlinks out); header floods, slow clients (a request
//! head must arrive whole within the read timeout of its first byte) and
//! ranges past the end get their HTTP answers. A memcached data block is
//! read as it comes, the connection waiting in epoll between its pieces
//! like an idle one, and must be whole by a deadline of its own
//! ([`memcached::Block`]). Every request's latency and bytes are counted
//! for the report once its response is sent whole; one cut short (the
//! client gone, a send failed, in devmem mode the NIC's) is counted as
//! aborted instead, its latency not among the percentiles.

mod event;
mod hostcache;
mod http;
pub mod load;
mod memcached;
pub mod nic;
mod lru;
mod out;
mod resolve;
mod stats;

pub use resolve::{resolve, Resolved, Root};
pub use stats::{Report, Stats};

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How payload bytes move from storage to the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `pread` into a buffer of this process (kept in the host memory
    /// cache if there is one), then `write`.
    Host,
    /// `sendfile(2)` from the file to the socket.
    ZeroCopy,
    /// The file mapped, then io_uring `SEND_ZC` from the mapping, the
    /// kernel reporting whether it copied.
    SendZc,
    /// Payloads placed in an emulated NIC's memory and sent by it; this
    /// process builds headers and hands over descriptors.
    DevMem,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Host => "host",
            Mode::ZeroCopy => "zerocopy",
            Mode::SendZc => "send-zc",
            Mode::DevMem => "devmem",
        }
    }
}

/// What to serve and for how long.
#[derive(Clone, Debug)]
pub struct Config {
    /// The directory served (canonical).
    pub root: PathBuf,
    pub http: Option<SocketAddr>,
    pub memcached: Option<SocketAddr>,
    pub mode: Mode,
    /// Stop after this many requests (all protocols; a refused connection's answer is not one), if set.
    pub max_requests: Option<u64>,
    /// Stop after this long, if set.
    pub duration: Option<Duration>,
    /// A client that sends nothing for this long is disconnected (slow clients).
    pub read_timeout: Duration,
    /// Request headers (HTTP) or a command line (memcached) longer than this are refused.
    pub max_header_bytes: usize,
    /// Connections open at once; more are refused (HTTP 503 / memcached
    /// SERVER_ERROR). Idle ones cost no thread (see [`event`]).
    pub max_connections: usize,
    /// Worker threads answering requests, started as needed up to this many.
    pub workers: usize,
    /// Host: memory for the host memory cache of whole objects (0: none;
    /// objects over half of it are read per request).
    pub host_cache_bytes: u64,
    /// DevMem: the emulated NIC's program and arguments, and its memory.
    pub nic_program: Option<(PathBuf, Vec<String>)>,
    pub nic_memory_bytes: u64,
    /// DevMem: objects larger than this are never placed in the NIC's
    /// memory (sent from the host; at most half of the memory).
    pub nic_max_object_bytes: u64,
    /// memcached `set`: `None` refuses it (read-only, the default); `Some(n)`
    /// stores objects of up to `n` bytes as files directly under the root.
    pub max_set_bytes: Option<u64>,
}

impl Config {
    pub fn new(root: PathBuf) -> Config {
        Config {
            root,
            http: None,
            memcached: None,
            mode: Mode::ZeroCopy,
            max_requests: None,
            duration: None,
            read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 << 10,
            max_connections: 4096,
            workers: 64,
            host_cache_bytes: 256 << 20,
            nic_program: None,
            nic_memory_bytes: 256 << 20,
            nic_max_object_bytes: 128 << 20,
            max_set_bytes: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Usage(String),
}

/// What a running server shares with its connections.
pub(crate) struct Shared {
    pub config: Config,
    /// `config.root`, opened once.
    pub root: Root,
    pub stats: Stats,
    /// Requests counted toward `max_requests` (those of refused connections are not).
    budget_spent: AtomicU64,
    pub stop: Arc<AtomicBool>,
    /// Connections open now (refused ones too, until they are closed: the
    /// limit counts descriptors), those of them served (not refused), and
    /// the most served at once.
    pub connections: AtomicUsize,
    pub served_connections: AtomicUsize,
    pub peak_connections: AtomicUsize,
    /// Set while connections wait for a worker and none is idle: lingering
    /// workers hand their connection back (an eventfd, see [`event`]).
    pub pressure: std::fs::File,
    /// Every worker the limit allows is started: from then on a lingering
    /// worker watches `pressure` (before, a new worker takes a new job).
    pub pool_full: AtomicBool,
    /// The last error accept(2) gave (out of descriptors), if any.
    pub accept_error: std::sync::Mutex<Option<String>>,
    /// Host: the host memory cache, if any.
    pub host_cache: Option<hostcache::HostCache>,
    /// DevMem: the NIC (each connection has its own channel to it).
    pub nic: Option<nic::Nic>,
    /// Set when the NIC is gone: the host path serves from then on.
    pub nic_gone: AtomicBool,
    /// Why the NIC stopped being used, if it did.
    pub nic_fallback: std::sync::Mutex<Option<String>>,
    /// SendZc: payload bytes the kernel's notifications said it copied after all.
    pub zc_copied_bytes: std::sync::atomic::AtomicU64,
    /// When the server started listening, and what memcached's `stats` says ([`memcached`]).
    pub started: Instant,
    pub counters: stats::Counters,
}

impl Shared {
    /// Counts a request sent whole (`from_host`: its payload bytes read from
    /// host memory); asks the server to stop when the budget is spent
    /// (`refused`: a refused connection's answer, which spends none of it).
    /// Returns where its latency is ([`Stats::record`]).
    pub fn done(&self, latency: Duration, payload: u64, copied: u64, from_host: u64, status: u16, refused: bool) -> usize {
        let latency_at = self.stats.record(latency, payload, copied, from_host, status);
        self.spent(refused);
        latency_at
    }

    /// Counts a request whose response was not sent whole (the client went
    /// away, a send failed): aborted, not under its status (`refused`: as for [`Shared::done`]).
    pub fn aborted(&self, refused: bool) {
        self.stats.record_aborted();
        self.spent(refused);
    }

    /// A request is counted: asks the server to stop when the budget is spent. A refused
    /// connection's answer (`refused`: 503, SERVER_ERROR) spends none of it: a burst of
    /// refused clients ended the server before it had served what it was asked to.
    fn spent(&self, refused: bool) {
        if refused {
            return;
        }
        let n = self.budget_spent.fetch_add(1, Ordering::Relaxed) + 1;
        if self.config.max_requests.is_some_and(|m| n >= m) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Binds the listeners (so a caller knows the ports at once), then serves
/// until the request or time budget is spent; returns the report.
pub struct Server {
    shared: Arc<Shared>,
    http: Option<TcpListener>,
    memcached: Option<TcpListener>,
    epoll: std::os::fd::OwnedFd,
}

impl Server {
    pub fn bind(config: Config) -> Result<Server, ServeError> {
        if config.http.is_none() && config.memcached.is_none() {
            return Err(ServeError::Usage("nothing to listen on".into()));
        }
        if config.workers == 0 || config.max_connections == 0 {
            return Err(ServeError::Usage("workers and the connection limit must be at least 1".into()));
        }
        // Before the NIC is started, so that it inherits the limit too.
        open_files_for(&config)?;
        let listen = |a: Option<SocketAddr>| -> Result<Option<TcpListener>, ServeError> {
            a.map(|addr| {
                let l = TcpListener::bind(addr).map_err(|source| ServeError::Listen { addr, source })?;
                l.set_nonblocking(true).map_err(|source| ServeError::Listen { addr, source })?;
                Ok(l)
            })
            .transpose()
        };
        let (http, memcached) = (listen(config.http)?, listen(config.memcached)?);
        let root = Root::open(&config.root).map_err(|e| ServeError::Usage(format!("{}: {e}", config.root.display())))?;
        let (nic, nic_fallback) = match (&config.mode, &config.nic_program) {
            (Mode::DevMem, Some((program, args))) => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                match nic::Nic::start(program, &args, config.nic_memory_bytes, config.nic_max_object_bytes) {
                    Ok(n) => (Some(n), None),
                    // As when the NIC dies later: the host path serves, and the report says why.
                    Err(why) => (None, Some(why)),
                }
            }
            (Mode::DevMem, None) => return Err(ServeError::Usage("devmem mode needs the emulated NIC's program".into())),
            _ => (None, None),
        };
        if config.mode == Mode::SendZc {
            // Refused here, before any client: never a silent sendfile instead.
            peerpath_io::send_zc_supported().map_err(|e| ServeError::Usage(format!("send-zc mode: {e}")))?;
        }
        let sys = |what: &str, e: rustix::io::Errno| ServeError::Usage(format!("{what}: {e}"));
        let epoll = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC).map_err(|e| sys("epoll_create", e))?;
        event::watch_listeners(&epoll, [http.as_ref(), memcached.as_ref()]).map_err(|e| ServeError::Usage(format!("epoll_ctl: {e}")))?;
        let pressure = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK).map_err(|e| sys("eventfd", e))?;
        let host_cache = (config.mode == Mode::Host && config.host_cache_bytes > 0).then(|| hostcache::HostCache::new(config.host_cache_bytes));
        let shared = Arc::new(Shared {
            host_cache,
            config,
            root,
            stats: Stats::new(),
            budget_spent: AtomicU64::new(0),
            stop: Arc::new(AtomicBool::new(false)),
            connections: AtomicUsize::new(0),
            served_connections: AtomicUsize::new(0),
            peak_connections: AtomicUsize::new(0),
            pressure: std::fs::File::from(pressure),
            pool_full: AtomicBool::new(false),
            accept_error: Default::default(),
            nic,
            nic_gone: AtomicBool::new(false),
            nic_fallback: std::sync::Mutex::new(nic_fallback),
            zc_copied_bytes: Default::default(),
            started: Instant::now(),
            counters: Default::default(),
        });
        Ok(Server { shared, http, memcached, epoll })
    }

    /// Setting this flag stops the server (its report is then returned by
    /// [`Server::run`]): what SIGINT and SIGTERM do to `peerpath serve`.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.shared.stop.clone()
    }

    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn memcached_addr(&self) -> Option<SocketAddr> {
        self.memcached.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Serves until stopped; connections still open then are closed.
    pub fn run(self) -> Report {
        let started = Instant::now();
        let cpu_start = stats::process_cpu();
        let shared = self.shared;
        // Devmem: the emulated NIC, which sends the payloads, is a process
        // of its own: its CPU is not in this process's, and is read apart.
        let nic_cpu_start = shared.nic.as_ref().and_then(nic::Nic::process_cpu);
        let listeners = [(self.http.as_ref(), Proto::Http), (self.memcached.as_ref(), Proto::Memcached)];
        let workers = event::run(&shared, &self.epoll, listeners, started);
        let nic_cpu = shared.nic.as_ref().and_then(|n| Some(n.process_cpu()?.saturating_sub(nic_cpu_start?)));
        let mut report = shared.stats.report(&shared.config, started.elapsed(), stats::process_cpu().saturating_sub(cpu_start));
        if let Some(n) = &shared.nic {
            report.nic = Some(n.counts());
            report.with_emulated_nic(nic_cpu);
        }
        report.host_cache = shared.host_cache.as_ref().map(hostcache::HostCache::counts);
        report.nic_fallback = shared.nic_fallback.lock().unwrap_or_else(|e| e.into_inner()).clone();
        report.connections = stats::Connections {
            peak: shared.peak_connections.load(Ordering::Relaxed) as u64,
            limit: shared.config.max_connections as u64,
            workers: workers as u64,
            worker_limit: shared.config.workers as u64,
            accept_error: shared.accept_error.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        };
        if shared.config.mode == Mode::SendZc {
            // Every payload byte of this mode went by SEND_ZC.
            report.send_zc = Some(stats::SendZcCounts { bytes: report.payload_bytes, kernel_copied_bytes: shared.zc_copied_bytes.load(Ordering::Relaxed) });
        }
        report
    }

    /// The emulated NIC's process id, in devmem mode.
    pub fn nic_process_id(&self) -> Option<u32> {
        self.shared.nic.as_ref().map(|n| n.process_id())
    }

    /// Devmem: why the NIC is not used (it did not start), if so; the host path serves.
    pub fn nic_fallback(&self) -> Option<String> {
        self.shared.nic_fallback.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Makes room for the connection limit in this process's open-file limit
/// (raising its soft limit towards the hard one, as nginx's
/// `worker_rlimit_nofile` does): a connection holds its socket and, in
/// devmem mode, a channel to the NIC, in send-zc mode its ring, and when
/// `set` is taken, the temporary file of a value on its way (it waits in
/// epoll with the connection); 64 more for the rest. A limit that cannot
/// fit is a usage error that says how many files it needs.
fn open_files_for(config: &Config) -> Result<(), ServeError> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let per_conn = if matches!(config.mode, Mode::DevMem | Mode::SendZc) { 2 } else { 1 } + u64::from(config.max_set_bytes.is_some());
    let need = (config.max_connections as u64).saturating_mul(per_conn).saturating_add(64);
    let limit = getrlimit(Resource::Nofile);
    let have = limit.current.unwrap_or(u64::MAX);
    if have >= need {
        return Ok(());
    }
    let can = limit.maximum.unwrap_or(u64::MAX);
    if can >= need && setrlimit(Resource::Nofile, Rlimit { current: Some(need), maximum: limit.maximum }).is_ok() {
        return Ok(());
    }
    Err(ServeError::Usage(format!(
        "--max-connections {} needs about {need} open files; this process may open {have} (hard limit {can}): lower --max-connections or raise `ulimit -n`",
        config.max_connections
    )))
}

#[derive(Clone, Copy)]
pub(crate) enum Proto {
    Http,
    Memcached,
}

/// What a worker does with a connection once it has answered what there was.
pub(crate) enum Next {
    /// Nothing more to read for now: the reactor waits for its next request.
    Park,
    /// The client takes no more output for now: the reactor waits until it can.
    Write,
    Close,
}

/// A client connection: its socket, what it has sent of its next request,
/// and its payload paths' state (the channel to the NIC). This process
/// writes its own bytes on the socket only through `Write`, which first
/// waits for every response the NIC still owes on it, so none overtakes
/// them. It moves between the reactor and the workers ([`event`]).
pub(crate) struct Conn<'a> {
    pub shared: &'a Shared,
    pub stream: TcpStream,
    proto: Proto,
    /// Over the connection limit: answered with a refusal and closed.
    over: bool,
    /// Bytes read of requests not answered yet.
    pub pending: Vec<u8>,
    /// When the first byte of `pending`'s request came.
    head_since: Instant,
    /// When the client last sent anything (or connected).
    quiet_since: Instant,
    nic: Option<nic::Channel>,
    /// SendZc: this connection's ring. Its own, not its worker's: a client
    /// that stops acknowledging keeps its sends' notifications owed, and
    /// they must not hold back other clients' sends.
    zc: Option<peerpath_io::ZcSender<Mapping>>,
    /// Host mode's buffer for large payloads: the serving worker's, lent
    /// while it serves this connection (thousands of idle connections hold none).
    host_buf: Option<peerpath_mem::AlignedBuf>,
    /// What is still to be sent (see [`out`]), when it last made progress
    /// (or was queued), and whether the connection closes once it is sent.
    out: out::Out,
    sent_at: Instant,
    close_after: bool,
    /// A response handed to the NIC failed: the connection must close.
    broken: bool,
    /// A send of this process failed (or a response could not be made after
    /// its header was due): what is not sent yet is counted as aborted.
    failed: bool,
    /// Requests answered on this connection (their Done made): the next
    /// one's number, which tags its descriptors to the NIC.
    requests: u64,
    /// The first request counted as aborted at once (the NIC had failed):
    /// it and those after are not counted again when the NIC's answers say
    /// their descriptors failed too.
    aborted_from: Option<u64>,
    /// Just answered: the next request is rarely there yet, so the worker
    /// waits for it (poll) before the first read, saving a read that
    /// finds nothing.
    wait_first: bool,
    /// memcached: the data block being read (a `set`'s value, a refused
    /// write's block), kept here while the connection waits in epoll for
    /// more of it, so a client that sends it slowly holds no worker.
    pub block: Option<memcached::Block>,
}

impl<'a> Conn<'a> {
    /// A connection just accepted (counted; over the limit if there are too many).
    pub(crate) fn new(shared: &'a Shared, stream: TcpStream, proto: Proto) -> Conn<'a> {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_nodelay(true);
        // A lingering worker's read waits at most this long (see `read_more`), so a
        // stopping server is noticed; the client's own timeout is counted across them.
        let _ = stream.set_read_timeout(Some(event::TICK));
        // A send waits at most PATIENCE, then the connection waits in epoll
        // for the client ([`out`]). In devmem mode the NIC sends on this
        // socket too (the same socket, passed to it), with the write
        // timeout as its own patience.
        let patience = if shared.config.mode == Mode::DevMem { shared.config.read_timeout } else { out::PATIENCE };
        let _ = stream.set_write_timeout(Some(patience));
        let over = shared.connections.fetch_add(1, Ordering::Relaxed) + 1 > shared.config.max_connections;
        shared.counters.total_connections.fetch_add(1, Ordering::Relaxed);
        if over {
            shared.counters.rejected_connections.fetch_add(1, Ordering::Relaxed);
        } else {
            // The peak is of connections served: a refused one is answered and closed, never served.
            let served = shared.served_connections.fetch_add(1, Ordering::Relaxed) + 1;
            shared.peak_connections.fetch_max(served, Ordering::Relaxed);
        }
        let now = Instant::now();
        Conn { shared, stream, proto, over, pending: Vec::new(), head_since: now, quiet_since: now, nic: None, zc: None, host_buf: None, out: Default::default(), sent_at: now, close_after: false, broken: false, failed: false, requests: 0, aborted_from: None, wait_first: false, block: None }
    }

    /// Sends what a slow client did not take yet, then answers what it
    /// has sent, as long as it keeps sending.
    pub(crate) fn serve(&mut self) -> Next {
        if !self.out.is_empty() {
            match self.send_turn() {
                out::Flushed::Empty => {}
                out::Flushed::Blocked if Instant::now() < self.deadline() => return Next::Write,
                _ => {
                    self.drop_output();
                    return Next::Close;
                }
            }
        }
        if self.close_after {
            return Next::Close;
        }
        let next = match self.proto {
            Proto::Http => http::serve(self),
            Proto::Memcached => memcached::serve(self),
        };
        if self.out.is_empty() {
            return next;
        }
        // A response the client has not taken yet (an answer written just
        // before a close, too): sent as it can take it, closed after if asked.
        match self.send_turn() {
            out::Flushed::Empty => next,
            out::Flushed::Blocked => {
                self.close_after |= matches!(next, Next::Close);
                Next::Write
            }
            out::Flushed::Failed => Next::Close,
        }
    }

    /// Bytes the client sent.
    fn received(&mut self, bytes: &[u8]) {
        let now = Instant::now();
        if self.pending.is_empty() {
            self.head_since = now;
        }
        self.pending.extend_from_slice(bytes);
        self.shared.counters.bytes_read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.quiet_since = now;
    }

    /// Takes the first `n` bytes of `pending` (a whole request).
    pub(crate) fn take_request(&mut self, n: usize) -> Vec<u8> {
        self.pending.drain(..n).collect()
    }

    /// A request is answered: the client's time (idle, or for a request
    /// it pipelined behind it) counts from now, not from before a long
    /// response.
    pub(crate) fn answered(&mut self) {
        let now = Instant::now();
        self.quiet_since = now;
        self.head_since = now;
        self.wait_first = true;
    }

    /// When the reactor must hand this parked connection to a worker even
    /// if the client does nothing: the read timeout after its last byte
    /// (idle), or after the first byte of a request still incomplete; with
    /// output queued, the write timeout (the same) after the client last
    /// took some. A memcached data block must also be whole by its own
    /// deadline ([`memcached::Block`]): a client that keeps it coming a byte
    /// at a time is not kept for ever.
    pub(crate) fn deadline(&self) -> Instant {
        let timeout = self.shared.config.read_timeout;
        if let Some(block) = self.block.as_ref().filter(|_| self.out.is_empty()) {
            return block.deadline.min(self.quiet_since + timeout);
        }
        if !self.out.is_empty() {
            return self.sent_at + timeout;
        }
        let since = if self.pending.is_empty() { self.quiet_since } else { self.head_since };
        // Devmem: the NIC sends the payloads, after the request is answered
        // here. While it still sends one, the client is not idle (it is
        // taking a response; the NIC's send gives up by itself after the
        // write timeout without progress); once it has sent them all, the
        // client's time counts from then. It counted from the hand-over: a
        // response that took longer than the read timeout to send closed its
        // keep-alive connection.
        match self.nic.as_ref().map(nic::Channel::idle_since) {
            Some(None) => Instant::now() + timeout,
            Some(Some(sent)) => since.max(sent) + timeout,
            None => since + timeout,
        }
    }

    /// Whether the reactor waits for this connection to be writable (output
    /// queued) rather than readable.
    pub(crate) fn wants_to_write(&self) -> bool {
        !self.out.is_empty()
    }

    /// Takes the NIC's answers already there (never waits); false if a
    /// response failed and the connection must close.
    pub fn poll_nic(&mut self) -> bool {
        match self.nic.as_ref().map(nic::Channel::poll) {
            Some(Err(miss)) => self.nic_failed(miss),
            _ => !self.broken,
        }
    }

    /// Waits for every response the NIC owes on this connection; false if
    /// one failed and the connection must close.
    fn settle_nic(&mut self) -> bool {
        match self.nic.as_ref().map(nic::Channel::settle) {
            Some(Err(miss)) => self.nic_failed(miss),
            _ => !self.broken,
        }
    }

    /// A response handed to the NIC failed: its bytes were not delivered,
    /// and the requests it answered, counted as sent, are counted as aborted
    /// instead, their latencies withdrawn from the percentiles (those of the
    /// request being answered are not counted yet: it is aborted, the
    /// connection being broken); if the NIC is gone, the host path serves
    /// from now on (said in the report).
    fn nic_failed(&mut self, miss: nic::NicMiss) -> bool {
        if let Some(ch) = &self.nic {
            let (mut bytes, mut responses, mut last) = (0, Vec::new(), None);
            for h in ch.take_failed().into_iter().filter(|h| h.request < self.aborted_from.unwrap_or(self.requests)) {
                bytes += h.payload;
                // A memcached get's several values are one request.
                if last != Some(h.request) {
                    responses.push((h.status, h.latency_at));
                    last = Some(h.request);
                }
            }
            self.shared.stats.not_delivered(bytes, &responses);
        }
        if !self.broken {
            self.broken = true;
            if let nic::NicMiss::Gone(why) = miss {
                nic_gone(self.shared, why);
            }
        }
        false
    }
}

/// The NIC is gone: the host path serves from now on, and the report says why (the first reason).
fn nic_gone(shared: &Shared, why: String) {
    if !shared.nic_gone.swap(true, Ordering::Relaxed) {
        *shared.nic_fallback.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
    }
}

/// This process's own bytes on the connection (protocol lines, headers
/// without a payload): queued after what is queued, sent at the end of the
/// request ([`out`]).
impl std::io::Write for Conn<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.settle_nic() {
            return Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "a response the NIC owed on this connection failed"));
        }
        self.queue_bytes(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        // Every answer counted before the report is made (those not sent as answered with nothing).
        self.drop_output();
        self.settle_nic();
        if let Some(mut z) = self.zc.take() {
            let _ = z.settle(Duration::from_secs(1));
            self.shared.zc_copied_bytes.fetch_add(z.settled().copied_bytes, Ordering::Relaxed);
        }
        self.shared.connections.fetch_sub(1, Ordering::Relaxed);
        if !self.over {
            self.shared.served_connections.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// How reading a request head ended: its length in `Conn::pending`; too
/// long; the client closed (or the server stops); the client took too long;
/// or nothing more came while the worker lingered (park the connection).
pub(crate) enum ReadHead {
    Ready(usize),
    TooLong,
    Closed,
    TimedOut,
    Park,
}

/// Reads into `conn.pending` until `done(pending)` says a whole request is
/// there (returning its length), the limit is passed, the client closes,
/// takes too long ([`Conn::deadline`]), or sends nothing more while this
/// worker lingers ([`event::LINGER`]; at once when other connections wait
/// for a worker).
pub(crate) fn read_head(conn: &mut Conn, done: impl Fn(&[u8]) -> Option<usize>) -> ReadHead {
    let linger_until = Instant::now() + event::LINGER;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(n) = done(&conn.pending) {
            return ReadHead::Ready(n);
        }
        if conn.pending.len() > conn.shared.config.max_header_bytes {
            return ReadHead::TooLong;
        }
        match read_more(conn, linger_until, &mut chunk) {
            More::Got => {}
            More::Park => return ReadHead::Park,
            More::TimedOut => return ReadHead::TimedOut,
            More::Closed => return ReadHead::Closed,
        }
    }
}

/// How waiting for more of a request ended (see [`read_more`]).
pub(crate) enum More {
    /// Bytes came: they are at the end of `Conn::pending`.
    Got,
    /// Nothing came while the worker lingered: park the connection.
    Park,
    /// [`Conn::deadline`] passed.
    TimedOut,
    /// The client closed (or the server stops, or the NIC failed a response).
    Closed,
}

/// Waits for the client's next bytes (received through `chunk` into
/// `conn.pending`), until [`Conn::deadline`], or while this worker lingers,
/// until `linger_until` (at once when other connections wait for a worker).
pub(crate) fn read_more(conn: &mut Conn, linger_until: Instant, chunk: &mut [u8]) -> More {
    use rustix::event::{PollFd, PollFlags};
    let shared = conn.shared;
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return More::Closed;
        }
        let got = if std::mem::take(&mut conn.wait_first) && conn.pending.is_empty() { Err(rustix::io::Errno::AGAIN) } else { rustix::net::recv(&conn.stream, &mut *chunk, rustix::net::RecvFlags::DONTWAIT) };
        match got {
            Ok((0, _)) => return More::Closed,
            Ok((n, _)) => {
                conn.received(&chunk[..n]);
                return More::Got;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => {
                let now = Instant::now();
                let deadline = conn.deadline();
                if now >= deadline {
                    return More::TimedOut;
                }
                if now >= linger_until {
                    return More::Park;
                }
                if !shared.pool_full.load(Ordering::Relaxed) {
                    // No connection can be kept waiting for a worker (the pool
                    // still grows): wait in the read itself, one system call a
                    // request (the socket's receive timeout is a tick).
                    match rustix::net::recv(&conn.stream, &mut *chunk, rustix::net::RecvFlags::empty()) {
                        Ok((0, _)) => return More::Closed,
                        Ok((n, _)) => {
                            conn.received(&chunk[..n]);
                            return More::Got;
                        }
                        // A quiet tick: see below for the NIC.
                        Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) if !conn.poll_nic() => return More::Closed,
                        Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
                        Err(_) => return More::Closed,
                    }
                    continue;
                }
                let wait = (linger_until - now).min(deadline - now).min(event::TICK);
                let mut fds = [PollFd::new(&conn.stream, PollFlags::IN | PollFlags::RDHUP), PollFd::new(&shared.pressure, PollFlags::IN)];
                let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: wait.as_nanos() as _ };
                let ready = rustix::event::poll(&mut fds, Some(&timeout));
                // Others wait for a worker: this connection waits in epoll instead.
                let park = fds[1].revents().contains(PollFlags::IN) && fds[0].revents().is_empty();
                match ready {
                    // A response the NIC could not finish ends the connection now,
                    // not at the client's next request (looked at once a quiet tick,
                    // not once a request: it is a receive on the NIC's channel; a
                    // parked connection's, the reactor looks at).
                    Ok(0) if !conn.poll_nic() => return More::Closed,
                    Ok(_) if park => return More::Park,
                    _ => {}
                }
            }
            Err(_) => return More::Closed,
        }
    }
}

/// How a response went out: payload bytes sent, bytes this process copied,
/// payload bytes read from host memory, and whether the connection must close.
pub(crate) struct Sent {
    pub payload: u64,
    pub copied: u64,
    pub from_host: u64,
    pub close: bool,
}

/// Sends `header`, `len` bytes of `found` from `offset`, then `trailer`, a
/// response (or part of one) with `status`: by the NIC in devmem mode
/// (falling back to the host path, said in the report, when it cannot),
/// else as the mode says. Host and zerocopy responses are queued ([`out`])
/// and sent as the client takes them. One that fails (`close`) makes its
/// request aborted ([`Conn::request_done`]).
pub(crate) fn respond(conn: &mut Conn, status: u16, header: &[u8], found: Resolved, offset: u64, len: u64, trailer: &[u8]) -> Sent {
    let sent = respond_by(conn, status, header, found, offset, len, trailer);
    conn.failed |= sent.close;
    sent
}

fn respond_by(conn: &mut Conn, status: u16, header: &[u8], found: Resolved, offset: u64, len: u64, trailer: &[u8]) -> Sent {
    use out::Chunk;
    use std::os::fd::AsRawFd;
    const CLOSED: Sent = Sent { payload: 0, copied: 0, from_host: 0, close: true };
    let shared = conn.shared;
    let mut mode = shared.config.mode;
    if mode == Mode::DevMem {
        let nic = shared.nic.as_ref().filter(|_| !shared.nic_gone.load(Ordering::Relaxed));
        // The NIC writes on the client's socket itself: what this process queued goes first.
        if nic.is_some() && !conn.drain(None) {
            return CLOSED;
        }
        // A connection that never handed the NIC a response owes nothing from it.
        let first = conn.nic.is_none();
        match nic.map(|n| n.send(&mut conn.nic, conn.stream.as_raw_fd(), header, trailer, &found, offset, len, (conn.requests, status))) {
            Some(Ok(n)) => return Sent { payload: n, copied: 0, from_host: 0, close: false },
            // The NIC died while idle, found by this connection's first response, no byte of
            // which reached the client: the host path sends it, and all after it (it was lost:
            // an empty reply, counted as served).
            Some(Err(nic::NicMiss::Gone(why))) if first => {
                conn.nic = None;
                nic_gone(shared, why);
                mode = Mode::ZeroCopy;
            }
            Some(Err(miss @ (nic::NicMiss::ClientFailed | nic::NicMiss::Gone(_)))) => {
                conn.nic_failed(miss);
                return CLOSED;
            }
            Some(Err(nic::NicMiss::TooLarge | nic::NicMiss::NotPlaced(_))) | None => {
                // The host sends this one: after what the NIC still owes.
                if !conn.settle_nic() {
                    return CLOSED;
                }
                mode = Mode::ZeroCopy;
            }
        }
    }
    if mode == Mode::SendZc {
        // SEND_ZC's sends wait in this worker (bounded by the write timeout).
        // MSG_MORE: the header waits for the payload's first segment.
        let zc_more = if trailer.is_empty() { 0 } else { libc::MSG_MORE };
        let zc = match conn.zc.take() {
            Some(z) => Ok(z),
            None => peerpath_io::ZcSender::new(),
        };
        let sent = zc.and_then(|mut z| {
            let r = if conn.send_now(header, libc::MSG_MORE) { send_zc(&mut z, &found.file, offset, len, &conn.stream, zc_more, shared.config.read_timeout) } else { Err(std::io::ErrorKind::BrokenPipe.into()) };
            if let Ok(n) = r {
                shared.counters.bytes_written.fetch_add(n, Ordering::Relaxed);
            }
            conn.zc = Some(z);
            r
        });
        return match sent {
            Ok(n) if conn.send_now(trailer, 0) => Sent { payload: n, copied: 0, from_host: n, close: false },
            // Headers are out: the only honest end is to close the connection.
            _ => CLOSED,
        };
    }
    let was_empty = conn.out.is_empty();
    let copied = if mode == Mode::Host { len } else { 0 };
    let object = match shared.host_cache.as_ref().filter(|_| mode == Mode::Host) {
        Some(cache) => match cache.object(&found) {
            Ok(o) => o,
            Err(_) => return CLOSED,
        },
        None => None,
    };
    if let Some(object) = object {
        // Header, payload and trailer go out in one sendmsg, from this process's memory.
        let Some((a, b)) = usize::try_from(offset).ok().zip(usize::try_from(offset + len).ok()).filter(|&(_, b)| b <= object.len()) else { return CLOSED };
        conn.queue_bytes(header);
        conn.queue(Chunk::Object(object, a, b));
        conn.queue_bytes(trailer);
    } else if mode == Mode::Host && len <= SMALL_PAYLOAD_BYTES {
        // A small payload goes out with its header and trailer in one send.
        match host_small(header, &found.file, offset, len, trailer) {
            Ok(bytes) => conn.queue_bytes(&bytes),
            Err(_) => return CLOSED,
        }
    } else {
        conn.queue_bytes(header);
        if len > 0 {
            conn.queue(if mode == Mode::Host { Chunk::Read(found.file, offset, len) } else { Chunk::Sendfile(found.file, offset, len) });
        }
        conn.queue_bytes(trailer);
    }
    if !conn.send_queued(was_empty) {
        return CLOSED;
    }
    Sent { payload: len, copied, from_host: len, close: false }
}

/// A read-only shared mapping of part of a file, unmapped when dropped
/// (by the SEND_ZC ring, once the kernel's notification says it no longer
/// reads it). This process never reads through it.
pub(crate) struct Mapping {
    base: *mut libc::c_void,
    map_len: usize,
    /// Where the wanted bytes start in the mapping, and how many.
    skip: usize,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `file` from `offset` (`len` > 0).
    fn new(file: &std::fs::File, offset: u64, len: u64) -> std::io::Result<Mapping> {
        use std::os::fd::AsRawFd;
        let page = 4096u64;
        let start = offset / page * page;
        let too_large = || std::io::Error::other("a range larger than the address space");
        let map_len = usize::try_from(offset - start + len).map_err(|_| too_large())?;
        // SAFETY: a new read-only shared mapping (at an address the kernel
        // picks) of a file we hold, unmapped in Drop; this process never
        // dereferences it (the kernel reads it for the send).
        let base = unsafe { libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), start as libc::off_t) };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping { base, map_len, skip: (offset - start) as usize, len: len as usize })
    }
}

// SAFETY: the mapping belongs to this value alone (made in `new`, unmapped
// in Drop) and this process never reads through it; moving it to another
// thread (a connection served by another worker) changes nothing of that.
unsafe impl Send for Mapping {}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the range lies within the live mapping; only the kernel reads it.
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.skip), self.len) }
    }
}

// SAFETY: the bytes are the mapping's, which this value owns and unmaps only when dropped; the
// address does not move with the value, and nothing writes through it.
unsafe impl peerpath_io::ZcBuf for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once; dropped only once the kernel is done with it.
        unsafe { libc::munmap(self.base, self.map_len) };
    }
}

/// SendZc: maps `len` bytes of `file` from `offset` (this process never
/// reads them) and sends them with io_uring's `SEND_ZC` (`flags`: e.g.
/// MSG_MORE when a trailer follows); the mapping is kept until the kernel's
/// notification. A file that shrank under the mapping is the kernel's
/// EFAULT, not a signal: only the kernel touches the pages. A client that
/// takes nothing for `timeout` (the write timeout) ends the send: TimedOut.
fn send_zc(z: &mut peerpath_io::ZcSender<Mapping>, file: &std::fs::File, offset: u64, len: u64, stream: &TcpStream, flags: i32, timeout: Duration) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    if len == 0 {
        return Ok(0);
    }
    z.send(stream.as_raw_fd(), Mapping::new(file, offset, len)?, flags, timeout)
}

/// Host mode's buffer for larger payloads (read into it, then written), per connection.
const HOST_BUFFER_BYTES: usize = 256 << 10;

/// Payloads up to this size are sent with their header in one write in host mode.
const SMALL_PAYLOAD_BYTES: u64 = 64 << 10;

/// Host mode, a small payload: the header, the payload read after it and
/// the trailer, in one buffer.
fn host_small(header: &[u8], file: &std::fs::File, offset: u64, len: u64, trailer: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = Vec::with_capacity(header.len() + len as usize + trailer.len());
    buf.extend_from_slice(header);
    buf.resize(header.len() + len as usize, 0);
    file.read_exact_at(&mut buf[header.len()..], offset).map_err(|e| if e.kind() == std::io::ErrorKind::UnexpectedEof { out::shrank() } else { e })?;
    buf.extend_from_slice(trailer);
    Ok(buf)
}

/// Where host mode puts payload bytes in its page-aligned buffers: this far
/// into a page, so that the kernel's copies into them (from the page cache,
/// at offset 0 of a page) and out of them (into a socket buffer, where the
/// payload follows the response's header) never have their destination just
/// ahead of their source modulo 4 KiB. Measured (2026-11-27, this VM's AMD
/// EPYC, 1 MiB memcached gets of one cached object): with the payload at
/// offset 0 a response took 40-90 % longer when its header was under 48
/// bytes (the payload then lands 20-47 bytes past where it is read from,
/// modulo 4 KiB: the CPU's 4K aliasing in `rep movsb`) than with a header of
/// 48-200 bytes; a malloc'd buffer starting 16 bytes into its page made the
/// reads as slow. Here the distance is 2048 bytes past or behind, whatever
/// the header's length up to 2 KiB.
pub(crate) const PAYLOAD_SKEW: usize = 2048;

/// Host mode's buffer for payloads read per request (the worker's, lent
/// to each connection it serves; a fresh 256 KiB one per response is an
/// mmap, 64 page faults and a munmap each time): page-aligned, payloads
/// at [`PAYLOAD_SKEW`] in it.
pub(crate) fn host_buffer() -> peerpath_mem::AlignedBuf {
    let mut b = peerpath_mem::AlignedBuf::new(PAYLOAD_SKEW + HOST_BUFFER_BYTES);
    b.set_len(PAYLOAD_SKEW + HOST_BUFFER_BYTES);
    b
}
