//! `peerpath serve DIR`: the data mover (issue 21, first part): HTTP/1.1
//! and memcached's text protocol over the files under DIR, payloads moved
//! by host copies or zero-copy, with a report of what it served.

use clap::{Args, ValueEnum};
use peerpath_runtime::report::{count, quoted_name, Quoted};
use peerpath_runtime::JobError;
use peerpath_serve::{Config, Mode, Server};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The most seconds `--duration` and `--read-timeout` take (about 31 years).
const MAX_SECONDS: f64 = 1e9;

/// The least NIC memory: two objects of one page each.
const MIN_NIC_MEMORY_BYTES: usize = 8 << 10;

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    /// Read into this process's memory (kept there, see --host-cache), then send (the classic server).
    Host,
    /// sendfile(2): the kernel sends from the page cache.
    Zerocopy,
    /// The file mapped and sent with io_uring SEND_ZC; the report says how much the kernel copied after all (all of it over loopback).
    #[value(name = "send-zc")]
    SendZc,
    /// Objects placed in an emulated NIC's memory, which sends them; this process builds headers only.
    Devmem,
}

#[derive(Args)]
pub struct ServeArgs {
    /// The directory whose files are served (keys and URL paths are names under it).
    #[arg(value_hint = clap::ValueHint::DirPath)]
    dir: PathBuf,
    /// HTTP address (loopback by default; port 0: any free port, printed); a host name
    /// (`localhost:8080`) is resolved, its first IPv4 address taken if it has one.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = socket_addr)]
    listen: SocketAddr,
    /// Also answer memcached's text protocol (get/gets) here (an address as --listen takes).
    #[arg(long, value_parser = socket_addr)]
    memcached: Option<SocketAddr>,
    /// Take memcached `set`: each object is stored as a file directly under DIR (the key its name),
    /// written to a temporary file as it arrives and renamed into place whole. Off: read-only.
    #[arg(long)]
    writable: bool,
    /// With --writable: the largest object `set` takes (K, M, G suffixes); larger ones are refused
    /// (SERVER_ERROR) and their data dropped.
    #[arg(long, default_value = "64M", value_parser = crate::parse_size, requires = "writable")]
    max_object: usize,
    /// How payloads move.
    #[arg(long, value_enum, default_value = "zerocopy")]
    mode: ModeArg,
    /// Stop after this many requests and print the report (connections refused at
    /// --max-connections are not counted toward it).
    #[arg(long)]
    max_requests: Option<u64>,
    /// Stop after this many seconds and print the report.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Disconnect a client that sends nothing for this many seconds, or whose request head
    /// is not whole this many seconds after its first byte (HTTP 408; slowloris clients).
    #[arg(long, value_name = "SECONDS", default_value = "10")]
    read_timeout: f64,
    /// Connections open at once; more are answered 503 (memcached: SERVER_ERROR) and closed.
    /// Idle connections wait in an event loop and hold no thread; the open-file limit is
    /// raised to fit (an error says so when it cannot be).
    #[arg(long, default_value = "4096", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
    /// Threads that answer requests (started as needed): a request in progress holds one, an
    /// idle connection none, nor does a client that reads its response slowly (it waits in the
    /// event loop; send-zc mode's sends excepted).
    #[arg(long, default_value = "64", value_parser = clap::value_parser!(u32).range(1..=4096))]
    workers: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// host: this process's memory for objects once read, a cache of whole objects (as memcached
    /// keeps its values), least recently used evicted first; objects over half of it are read per
    /// request. 0: every payload read from the file for each request [default: 256M].
    #[arg(long, value_parser = crate::parse_size)]
    host_cache: Option<usize>,
    /// devmem: the emulated NIC's memory (K, M, G suffixes), a cache of whole objects, least recently used evicted first.
    #[arg(long, default_value = "256M", value_parser = crate::parse_size)]
    nic_memory: usize,
    /// devmem: objects larger than this are never placed in the NIC's memory but sent from
    /// the host (so a few large objects do not evict many small hot ones) [default: half of --nic-memory].
    #[arg(long, value_parser = crate::parse_size)]
    nic_max_object: Option<usize>,
}

/// An address as `IP:PORT`, or `HOST:PORT` resolved (`localhost:8080` was refused): the
/// first IPv4 address the name has, else its first.
fn socket_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    use std::net::ToSocketAddrs;
    let all: Vec<SocketAddr> = s.to_socket_addrs().map_err(|e| format!("{s}: not an address (IP:PORT or HOST:PORT): {e}"))?.collect();
    all.iter().find(|a| a.is_ipv4()).or(all.first()).copied().ok_or_else(|| format!("{s}: the name has no address"))
}

/// `peerpath nic-serve SOCKET MEMORY BYTES`: the emulated NIC process (started by `serve --mode devmem`).
#[derive(Args)]
pub struct NicServeArgs {
    socket: PathBuf,
    memory: PathBuf,
    bytes: usize,
}

pub fn nic_serve(a: NicServeArgs) -> ExitCode {
    match peerpath_serve::nic::nic_main(&a.socket, &a.memory, a.bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peerpath nic-serve: {e}");
            ExitCode::from(1)
        }
    }
}

pub fn main(a: ServeArgs) -> ExitCode {
    crate::exit_code(run(a))
}

fn run(a: ServeArgs) -> Result<(), JobError> {
    let root = a.dir.canonicalize().map_err(|e| JobError::SourceUnreadable { path: a.dir.clone(), source: e })?;
    if !root.is_dir() {
        return Err(JobError::Usage(format!("{} is not a directory", Quoted(&a.dir))));
    }
    // Deadlines are instants this far from now, which must stay representable
    // (1e20 panicked): at most MAX_SECONDS.
    let seconds = |s: f64, what: &str| match Duration::try_from_secs_f64(s) {
        Ok(d) if !d.is_zero() && s <= MAX_SECONDS => Ok(d),
        _ => Err(JobError::Usage(format!("{what} must be a positive number of seconds, at most {MAX_SECONDS}"))),
    };
    let mut c = Config::new(root.clone());
    c.http = Some(a.listen);
    c.memcached = a.memcached;
    c.max_set_bytes = a.writable.then_some(a.max_object as u64);
    c.mode = match a.mode {
        ModeArg::Host => Mode::Host,
        ModeArg::Zerocopy => Mode::ZeroCopy,
        ModeArg::SendZc => Mode::SendZc,
        ModeArg::Devmem => Mode::DevMem,
    };
    if c.mode == Mode::DevMem {
        let exe = std::env::current_exe().map_err(|e| JobError::Internal(format!("this program's path: {e}")))?;
        c.nic_program = Some((exe, vec!["nic-serve".into()]));
        // Checked here, not left to the NIC process to fail on.
        if a.nic_memory < MIN_NIC_MEMORY_BYTES {
            return Err(JobError::Usage(format!("--nic-memory {} is less than {} bytes: a cache must hold two objects at least, each in a page of its own", a.nic_memory, MIN_NIC_MEMORY_BYTES)));
        }
        if let Some(total) = crate::machine_memory_bytes().filter(|&t| a.nic_memory > t) {
            return Err(JobError::Usage(format!("--nic-memory {} MiB is more than this machine's memory ({} MiB)", a.nic_memory >> 20, total >> 20)));
        }
        c.nic_memory_bytes = a.nic_memory as u64;
        c.nic_max_object_bytes = a.nic_max_object.map_or(c.nic_memory_bytes / 2, |m| m as u64);
        if c.nic_max_object_bytes > c.nic_memory_bytes / 2 {
            return Err(JobError::Usage(format!("--nic-max-object {} is over half of --nic-memory {}: a cache must hold two objects at least", a.nic_max_object.unwrap_or_default(), a.nic_memory)));
        }
    } else if a.nic_max_object.is_some() {
        return Err(JobError::Usage("--nic-max-object needs --mode devmem".into()));
    }
    match a.host_cache {
        Some(_) if c.mode != Mode::Host => return Err(JobError::Usage("--host-cache needs --mode host".into())),
        Some(b) => c.host_cache_bytes = b as u64,
        None => {}
    }
    if a.max_requests == Some(0) {
        return Err(JobError::Usage("--max-requests 0 would stop before the first request: give 1 or more".into()));
    }
    c.max_requests = a.max_requests;
    c.duration = a.duration.map(|d| seconds(d, "--duration")).transpose()?;
    c.read_timeout = seconds(a.read_timeout, "--read-timeout")?;
    c.max_connections = a.max_connections as usize;
    c.workers = a.workers as usize;
    let mode = c.mode.name();
    let host_cache = (c.mode == Mode::Host).then_some(c.host_cache_bytes);
    let server = Server::bind(c).map_err(|e| JobError::Usage(e.to_string()))?;
    if let Some(h) = server.http_addr() {
        eprintln!("peerpath serve: {} on http://{h}/ ({mode} mode; up to {} connections, {} worker threads)", Quoted(&root), a.max_connections, a.workers);
    }
    if let Some(why) = server.nic_fallback() {
        eprintln!("peerpath serve: FALLBACK: {why}: the host path (sendfile) serves every request");
    }
    if let Some(pid) = server.nic_process_id() {
        eprintln!(
            "peerpath serve: emulated NIC with {} of memory, objects up to {} placed in it (process {pid})",
            peerpath_metrics::human_bytes(a.nic_memory as u64),
            peerpath_metrics::human_bytes(a.nic_max_object.map_or(a.nic_memory as u64 / 2, |m| m as u64))
        );
    }
    if let Some(b) = host_cache.filter(|&b| b > 0) {
        eprintln!("peerpath serve: host memory cache of {}, objects up to {} kept in it", peerpath_metrics::human_bytes(b), peerpath_metrics::human_bytes(b / 2));
    }
    if let Some(m) = server.memcached_addr() {
        eprintln!("peerpath serve: memcached text protocol on {m}");
    }
    // SIGINT and SIGTERM stop serving and print the report (main leaves
    // `serve` out of the signal thread that ends the other commands).
    stop_on_signals(&server.stop_flag())?;
    let report = server.run();
    if a.json {
        println!("{}", crate::jsonout::stamped("serve-report", &report));
    } else {
        println!("{}", report.render());
    }
    Ok(())
}

/// `peerpath bench-kv`: a memcached-protocol load client, the same for every server.
#[derive(Args)]
pub struct BenchKvArgs {
    /// The server (memcached, or `peerpath serve --memcached`): an address, or HOST:PORT
    /// (`localhost:11211`) resolved as --listen is.
    #[arg(long, value_parser = socket_addr)]
    server: SocketAddr,
    /// The key to get (it must be there).
    #[arg(long)]
    key: String,
    /// Connections, one client thread each.
    #[arg(short = 'c', long, default_value = "16")]
    connections: usize,
    /// How long to run.
    #[arg(long, value_name = "SECONDS", default_value = "5")]
    seconds: f64,
}

/// SIGINT and SIGTERM (where not ignored) set `stop`; a second one, while the first is being
/// acted on, ends the process at once with 128 + the signal, as a shell reports it.
fn stop_on_signals(stop: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> Result<(), JobError> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM].into_iter().filter(|&s| !peerpath_io::signal_ignored(s)) {
        // Registered first, so it reads the flag before the first signal sets it.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, stop.clone()).map_err(|e| JobError::Internal(format!("signal handler: {e}")))?;
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| JobError::Internal(format!("signal handler: {e}")))?;
    }
    Ok(())
}

/// Why bench-kv did not measure: a job's error, or the server's failure, said with its exit
/// code: the server is not a file, and the file errors' wording ("cannot read source") was wrong.
enum KvFailure {
    Job(JobError),
    Server(u8, String),
}

impl From<JobError> for KvFailure {
    fn from(e: JobError) -> Self {
        KvFailure::Job(e)
    }
}

pub fn bench_kv(a: BenchKvArgs) -> ExitCode {
    let measured = (|| -> Result<(), KvFailure> {
        if !(a.seconds.is_finite() && a.seconds > 0.0) || a.connections == 0 || a.connections > 4096 {
            return Err(JobError::Usage("--seconds must be positive and --connections 1 to 4096".into()).into());
        }
        use peerpath_serve::load::LoadError;
        // SIGINT and SIGTERM end the run early with its report, as they end serve's (main
        // leaves bench-kv out of its signal thread too: they killed it with no word).
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        stop_on_signals(&stop)?;
        let server = a.server;
        // Exit codes as for a source that cannot be read (3) and an error reading one (12).
        let r = peerpath_serve::load::run(server, &a.key, a.connections, a.seconds, &stop).map_err(|e| match e {
            LoadError::BadKey => KvFailure::Job(JobError::Usage(format!("--key: {e}"))),
            LoadError::Unreachable(why) => KvFailure::Server(3, format!("cannot reach the server {server}: {why}")),
            LoadError::NoValue => KvFailure::Server(3, format!("the server {server} has no value for {}", quoted_name(&a.key))),
            LoadError::Broken(why) => KvFailure::Server(12, format!("the server {server} broke off: {why}")),
        })?;
        // Rates as serve's report prints them: one request in 2 s read "0 requests/s".
        let rate = peerpath_serve::Report::rate;
        println!(
            "{} get {}: {} in {:.2} s on {}: {} requests/s, {} MB/s; latency p50 {} us, p99 {} us, p99.9 {} us (measured on this host; client and server share it)",
            r.server,
            r.key,
            count(r.requests, "request"),
            r.seconds,
            count(r.connections, "connection"),
            rate(r.requests_per_s),
            rate(r.mb_per_s),
            r.p50_us,
            r.p99_us,
            r.p999_us
        );
        Ok(())
    })();
    match measured {
        Ok(()) => ExitCode::SUCCESS,
        Err(KvFailure::Job(e)) => crate::exit_code(Err(e)),
        Err(KvFailure::Server(code, why)) => {
            eprintln!("peerpath: error: {why}");
            ExitCode::from(code)
        }
    }
}
