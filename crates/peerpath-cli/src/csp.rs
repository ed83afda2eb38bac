//! `peerpath csp`: run an emulated computational storage processor (CSP)
//! by hand, and ask a running one what it is and what it has done.
//!
//! `peerpath csp serve` is also what the runtime starts as a child process
//! (`peerpath_device::EmulatedCsp::spawn` runs this binary with
//! `csp serve ...`), so the flags here must read what
//! `ServeOptions::to_args` writes.

use clap::{Args, Subcommand};
use peerpath_device::emulated::{default_dir, serve, ConnectOptions, CspError, ServeOptions, READY_LINE_PREFIX};
use peerpath_device::{DeviceStats, EmulatedCsp, Identify};
use peerpath_mem::RegionError;
use std::io::Write;
use std::path::{Path, PathBuf};
use peerpath_runtime::report::{shell_word, Quoted, ShellWord};
use std::process::ExitCode;

#[derive(Args)]
pub struct CspArgs {
    #[command(subcommand)]
    command: CspCommand,
}

#[derive(Subcommand)]
enum CspCommand {
    /// Run an emulated CSP in this process until SIGTERM or Ctrl-C: its memory and queue pairs live in
    /// shared-memory files (owner-only, removed when it stops); hosts connect to it by name.
    Serve(ServeArgs),
    /// Ask a running CSP what it is: functions, memory, queue limits.
    Identify(QueryArgs),
    /// A running CSP's own statistics: commands, errors, bytes and busy time per function.
    Stats(QueryArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// The device's name (1-32 letters, digits, '-' or '_'); hosts connect by it.
    #[arg(long)]
    name: String,
    /// Device memory (K, M, G suffixes).
    #[arg(long, default_value = "512M", value_parser = crate::parse_size)]
    memory: usize,
    /// Queue pairs: each connected host handle claims one.
    #[arg(long, default_value_t = 4)]
    queues: u32,
    /// Entries per submission and completion queue (2-4096).
    #[arg(long, default_value_t = 128)]
    queue_depth: u32,
    /// Worker threads running functions [default: all cores].
    #[arg(long)]
    workers: Option<u32>,
    /// Directory of the device's files [default: /dev/shm].
    #[arg(value_hint = clap::ValueHint::DirPath, long)]
    dir: Option<PathBuf>,
    /// Make this much of the device memory resident before taking connections
    /// (K, M, G suffixes; 0: pages are allocated on first touch, by whoever
    /// touches them). The device pays for allocating and zeroing them, as a
    /// real device's memory exists from power-on; a full file system is found
    /// here instead of mid-job.
    #[arg(long, default_value = "0", value_parser = crate::parse_size)]
    populate: usize,
    /// Exit when this process exits (set by the runtime when it starts the device).
    #[arg(long, hide = true)]
    parent_pid: Option<u32>,
    /// Testing aid (a misbehaving device): post the Nth completion of a queue pair twice.
    #[arg(long, hide = true)]
    duplicate_completion_after: Option<u64>,
}

#[derive(Args)]
struct QueryArgs {
    /// The device's name.
    #[arg(long)]
    name: String,
    /// Directory of the device's files [default: /dev/shm].
    #[arg(value_hint = clap::ValueHint::DirPath, long)]
    dir: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for the device's answers before saying it gave none (its process stopped
    /// or hung), 1 to 3600.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    timeout: u64,
}

/// Runs `peerpath csp ...`. Bad names or options exit with 2, a name
/// taken with 4, files that do not fit their file system or may not be made there with 11, anything
/// else that fails with 1.
pub fn main(a: CspArgs) -> ExitCode {
    // A device a job started: its failure is the job's to handle (it falls back and says why);
    // said as the device's, not as the command's error.
    let of_job = match &a.command {
        CspCommand::Serve(s) => s.parent_pid,
        _ => None,
    };
    let result = match a.command {
        CspCommand::Serve(s) => run_serve(s),
        CspCommand::Identify(q) => query(q, |d, json| {
            let id = d.identify()?;
            Ok(render_identify(d, &id, json))
        }),
        CspCommand::Stats(q) => query(q, |d, json| {
            let s = d.device_stats()?;
            Ok(if json { crate::jsonout::stamped("csp-stats", &with_provenance(&s)) } else { render_stats(&s) })
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match (&e, of_job) {
                (_, Some(job)) => eprintln!("peerpath: emulated device (started by process {job}): {e}"),
                // The hint names the directory too, so that it runs as printed.
                (CspError::Connect { name, socket, source }, None) => eprintln!(
                    "peerpath: error: cannot connect to {}: {source} (is `peerpath csp serve --name={} --dir {}` running?)",
                    Quoted(socket),
                    shell_word(name.as_bytes()),
                    ShellWord(socket.parent().unwrap_or(Path::new(".")))
                ),
                (_, None) => eprintln!("peerpath: error: {e}"),
            }
            match e {
                CspError::BadName { .. } | CspError::BadOption(_) => ExitCode::from(2),
                // No device answers at that name (usage.md: a source missing or unreadable).
                CspError::Connect { .. } => ExitCode::from(3),
                // The name is taken (a live device, or a file it would replace): as a target that exists.
                CspError::AlreadyRunning { .. } => ExitCode::from(4),
                CspError::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => ExitCode::from(4),
                // Its files do not fit their file system (a full tmpfs, found making room for the
                // queues or populating the memory), or may not be made there (a read-only --dir, one
                // not ours to write in): as a target that cannot be written.
                CspError::Io { source, .. } | CspError::Region(RegionError::Io { source, .. }) if no_room(&source) => ExitCode::from(11),
                CspError::Io { operation: "create", source, .. } if not_writable(&source) => ExitCode::from(11),
                // A device that gives no answer (stopped, hung): it could not do its work, and
                // identify and stats have no CPU to fall back to (usage.md: 15).
                CspError::Io { source, .. } if source.kind() == std::io::ErrorKind::TimedOut => ExitCode::from(15),
                // One that took the queue pair, then failed the command (no completion within
                // --timeout, lost, a malformed completion): the same.
                CspError::Device(_) => ExitCode::from(15),
                _ => ExitCode::from(1),
            }
        }
    }
}

fn no_room(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::StorageFull || e.raw_os_error() == Some(libc::EDQUOT)
}

/// Files that may not be made in --dir: ENOENT too, where --dir was found a directory first
/// (one that takes no new files, /proc).
fn not_writable(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EROFS | libc::EACCES | libc::EPERM | libc::ENOENT))
}

fn run_serve(s: ServeArgs) -> Result<(), CspError> {
    // Its memory is a file of a memory file system: more than the machine has is found by the
    // kernel's out-of-memory killer, mid-run or while populating (a tmpfs may be sized past RAM).
    if let Some(total) = crate::machine_memory_bytes().filter(|&t| s.memory > t) {
        return Err(CspError::BadOption(format!("--memory {} MiB is more than this machine's memory ({} MiB)", s.memory >> 20, total >> 20)));
    }
    // Device memory is mapped in pages (the functions' own devices ask for as little as 100K).
    if s.memory < 4096 {
        return Err(CspError::BadOption(format!("--memory {} bytes: give at least 4K (a page)", s.memory)));
    }
    if s.populate > s.memory {
        return Err(CspError::BadOption(format!("--populate {} MiB is more than the device's --memory {} MiB", s.populate >> 20, s.memory >> 20)));
    }
    let mut o = ServeOptions::new(&s.name);
    o.memory_bytes = s.memory;
    o.queues = s.queues;
    o.queue_depth = s.queue_depth;
    if let Some(w) = s.workers {
        o.workers = w;
    }
    if let Some(d) = s.dir {
        o.dir = d;
    }
    o.parent_pid = s.parent_pid;
    o.duplicate_completion_after = s.duplicate_completion_after;
    o.populate_bytes = s.populate;
    serve(&o, |paths, id| {
        // Device memory is whole pages: a size that is not is rounded up, and said so.
        let rounded = if id.memory_bytes == s.memory as u64 { String::new() } else { format!(": --memory {} bytes rounded up to whole pages", s.memory) };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{READY_LINE_PREFIX} {} ({} of device memory{rounded}, {} queue pairs of {} entries, {} workers) at {}",
            id.name,
            memory_size(id.memory_bytes),
            id.queue_count,
            id.queue_depth,
            id.workers,
            paths.socket.display()
        );
        let _ = out.flush();
    })
}

/// A device's memory as its ready line and `csp identify` say it: whole MiB, else KiB (it is
/// whole pages): `--memory 100K` was "0 MiB", `--memory 1536K` "1 MiB".
fn memory_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

fn query(q: QueryArgs, answer: impl FnOnce(&mut EmulatedCsp, bool) -> Result<String, CspError>) -> Result<(), CspError> {
    let mut o = ConnectOptions::new(&q.name);
    o.dir = q.dir.unwrap_or_else(default_dir);
    o.command_timeout = std::time::Duration::from_secs(q.timeout);
    o.claim_wait = o.command_timeout;
    let mut device = EmulatedCsp::connect(&o)?;
    println!("{}", answer(&mut device, q.json)?);
    Ok(())
}

/// What every `csp identify` and `csp stats` says of the device (no figure of it is a hardware one).
const EMULATED: &str = "an emulated CSP: a host process whose functions run on host cores, in shared memory standing in for device memory";

/// `value` as JSON with `provenance` added ([`EMULATED`]).
fn with_provenance(value: &impl serde::Serialize) -> serde_json::Value {
    let mut v = serde_json::to_value(value).expect("outputs serialise");
    if let Some(m) = v.as_object_mut() {
        m.insert("provenance".into(), EMULATED.into());
    }
    v
}

fn render_identify(device: &EmulatedCsp, id: &Identify, json: bool) -> String {
    if json {
        return crate::jsonout::stamped("csp-identify", &with_provenance(id));
    }
    let functions: Vec<&str> = id.functions.iter().map(|k| k.name()).collect();
    let p = device.paths();
    format!(
        "{}: pid {}, {} of device memory, {} queue pairs of {} entries, {} workers, up to {} input ranges per command\n\
         functions: {}\n\
         files: {} {} {}\n\
         {EMULATED}",
        id.name,
        id.pid,
        memory_size(id.memory_bytes),
        id.queue_count,
        id.queue_depth,
        id.workers,
        id.max_input_ranges,
        functions.join(", "),
        p.memory.display(),
        p.queues.display(),
        p.socket.display()
    )
}

fn render_stats(s: &DeviceStats) -> String {
    let mut t = format!("{:<24} {:>10} {:>8} {:>16} {:>16} {:>12}\n", "function", "commands", "errors", "input bytes", "output bytes", "busy ms");
    let total = s.total();
    for f in s.functions.iter().chain(std::iter::once(&total)) {
        let name = f.function.map(|k| k.name()).unwrap_or("total");
        t.push_str(&format!(
            "{:<24} {:>10} {:>8} {:>16} {:>16} {:>12.1}\n",
            name,
            f.commands,
            f.errors,
            f.input_bytes,
            f.output_bytes,
            f.busy_ns as f64 / 1e6
        ));
    }
    t.push_str(&format!("entries refused before naming a function: {}; up {:.1} s\nmeasured on {EMULATED}", s.rejected_entries, s.uptime_ns as f64 / 1e9));
    t
}
