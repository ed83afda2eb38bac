//! `peerpath`: the command line. Parses what the user typed, turns it into
//! job options, runs the job, prints the report. Errors exit with the code
//! of their class (see README).

/// `eprintln!` that never panics. std's panics (exit 101) where standard error cannot be
/// written (its reader gone: `peerpath ... 2>&1 >/dev/null | true`), and the exit code that
/// says what failed is lost with it; a message nobody can read is dropped instead. Defined
/// before the modules, it is the `eprintln!` of the whole crate (textual scope).
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod chain;
mod chain_device;
mod csp;
mod daemon;
mod demo;
mod device_job;
mod crypt;
mod crypt_device;
mod dedup;
mod dedup_device;
mod ec;
mod ec_device;
mod gpu;
mod gz;
mod jsonout;
mod iobench;
mod plan;
mod probe;
mod scan;
mod scan_device;
mod serve;
mod sim;
mod table1;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use peerpath_func::{Format, Level};
use peerpath_runtime::report::Quoted;
use peerpath_runtime::{CommonOptions, CompressOptions, DecompressOptions, JobError, JobReport, Progress, DEFAULT_BLOCK_BYTES};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(name = "peerpath", version, about = "Peer-to-peer computational storage: move data SSD -> device memory -> function -> SSD, and measure every byte")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Compress files or block devices into gzip (multi-member) or BGZF.
    Compress(CompressArgs),
    /// Restore the input of gzip files (parallel for peerpath and BGZF files).
    Decompress(DecompressArgs),
    /// Check every member (CRC-32 and length) of gzip files without writing anything.
    Verify(VerifyArgs),
    /// Run the main job on the bundled sample: compress, verify, decompress, compare.
    Demo(DemoArgs),
    /// Show the PCIe topology and whether P2P DMA works between devices, and why.
    Topo(TopoArgs),
    /// Plan which compute device serves which sources and targets (P2P, host bounce buffer or CPU), and why.
    Plan(plan::PlanArgs),
    /// Run jobs (compress, decompress, verify) for clients that set PEERPATH_DAEMON, keeping the devices they open (GPUs, emulated CSPs) across them.
    Daemon(daemon::DaemonArgs),
    /// Run an emulated computational storage processor (CSP) by hand, or ask a running one what it is and did.
    Csp(csp::CspArgs),
    /// P2P pre-flight: find P2P memory providers, map 4 KiB of each, read 4 KiB into it with O_DIRECT.
    Probe(probe::ProbeArgs),
    /// Sweep O_DIRECT I/O over block sizes and queue depths into host or device memory (GB/s, IOPS, latency).
    BenchIo(iobench::BenchIoArgs),
    /// Simulate a job on a topology (simulated figures): reproduce the seeds, what-if sweeps, plan.
    Sim(sim::SimArgs),
    /// Table 1 on this machine: compress on the host CPU, then on 1..N emulated CSPs; throughput, host CPU, memory traffic.
    BenchOffload(table1::BenchOffloadArgs),
    /// The GPU as a compute peer: can it compress for peerpath here (CUDA, nvCOMP), and how fast?
    Gpu(gpu::GpuArgs),
    /// gzip's and pigz's command line (-c -d -k -f -t -l -r -n -1..-9 -p N -S -v -q); also the program named `ppgz`.
    Gzip(GzipArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) made from this command line.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), made from this command line: `peerpath man | man -l -`;
    /// `peerpath man compress`, `peerpath man ec encode`: a command's own page (its options).
    Man {
        /// The command whose page to print [default: peerpath's].
        command: Vec<String>,
        /// Write every page instead (peerpath.1, peerpath-compress.1, peerpath-ec-encode.1, ...)
        /// into this directory, each replaced whole (`make install` does).
        #[arg(value_hint = clap::ValueHint::DirPath, long, conflicts_with = "command")]
        dir: Option<PathBuf>,
    },
    /// Erasure coding of files: encode into K data + M parity shards, verify, repair, decode (Reed-Solomon, ISA-L).
    Ec(ec::EcArgs),
    /// Encrypt a file: AES-256-GCM per block, authenticated (format peerpath-enc/1).
    Encrypt(crypt::CryptArgs),
    /// Decrypt and authenticate a peerpath-enc file; nothing is written unless every block checks.
    Decrypt(crypt::CryptArgs),
    /// Make a new random 256-bit key file (mode 0600) for encrypt and decrypt.
    Keygen(crypt::KeygenArgs),
    /// Deduplicating store: content-defined chunks (FastCDC), BLAKE3 fingerprints, SQLite index.
    Dedup(dedup::DedupArgs),
    /// Filter FASTA/FASTQ/line records (gzip or plain) by motif, length or id; print them, a count or a histogram.
    Scan(scan::ScanArgs),
    /// Serve the files under a directory over HTTP/1.1 and memcached's protocol (host or zero-copy payloads).
    Serve(serve::ServeArgs),
    /// Load a memcached-protocol server with gets of one key (for memcached and peerpath serve alike).
    BenchKv(serve::BenchKvArgs),
    /// The emulated NIC process `serve --mode devmem` starts (not for direct use).
    #[command(hide = true)]
    NicServe(serve::NicServeArgs),
}

/// `peerpath gzip ARGS...`: parsed by gzip's grammar (`peerpath gzip --help`).
#[derive(Args)]
#[command(disable_help_flag = true, after_long_help = gz::USAGE)]
struct GzipArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<std::ffi::OsString>,
}

#[derive(Args)]
struct TopoArgs {
    /// Read this sysfs root (a real /sys or a fixture tree).
    #[arg(value_hint = clap::ValueHint::DirPath, long, default_value = "/sys", conflicts_with = "file")]
    sysfs: PathBuf,
    /// Read a topology file (TOML) instead of sysfs.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Explain the verdict for one pair: PROVIDER (the memory's owner) and CLIENT.
    #[arg(long, num_args = 2, value_names = ["PROVIDER", "CLIENT"])]
    explain: Option<Vec<String>>,
    /// Print JSON (the model, or the verdict with --explain).
    #[arg(long)]
    json: bool,
    /// Write the model to this topology file (TOML).
    #[arg(long)]
    export: Option<PathBuf>,
    /// Write a picture of the tree (SVG), P2P groups coloured.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Replace an existing --export or --svg file.
    #[arg(long, short)]
    force: bool,
    /// One line of the tree, box of the picture, and row and column of the P2P matrix per SR-IOV
    /// virtual function (by default the VFs the verdict cannot tell from their physical
    /// function are shown in the PF's).
    #[arg(long)]
    vfs: bool,
}

/// Writes a small output whole or not at all, never over an existing file
/// unless `replace`: the same rules as every job's targets (exit 4 for an
/// existing file, 11 for a failed write).
fn write_output(path: &Path, bytes: &[u8], replace: bool) -> Result<(), JobError> {
    write_outputs(&[(path, bytes)], replace)
}

/// What [`write_outputs`] asks of an output's name before anything is written.
pub(crate) fn check_output(p: &Path, replace: bool) -> Result<(), JobError> {
    if peerpath_runtime::job::is_std_stream(p) {
        return Err(JobError::Usage(format!("{} is a file, made whole or not at all: give it a name, not -", Quoted(p))));
    }
    match std::fs::metadata(p) {
        // As a write into a directory fails (exit 11: the file cannot be written there).
        Ok(m) if m.is_dir() => Err(JobError::TargetIo { path: p.to_path_buf(), source: std::io::Error::from_raw_os_error(libc::EISDIR) }),
        // A device node or FIFO would be replaced by the rename.
        Ok(m) if !m.is_file() => Err(JobError::Usage(format!("{} is not a regular file: name a file", Quoted(p)))),
        _ if !replace && std::fs::symlink_metadata(p).is_ok() => Err(JobError::TargetExists { path: p.to_path_buf() }),
        _ => Ok(()),
    }
}

/// Several files made whole, put in place together or none: each is checked
/// (not two at one name; an existing one only with `replace`) and written to
/// a temporary before any is put in place; one that then fails to go in
/// place takes back those put in place before it that were new.
fn write_outputs(outputs: &[(&Path, &[u8])], replace: bool) -> Result<(), JobError> {
    use std::io::Write;
    let places: Vec<_> = outputs.iter().map(|(p, _)| peerpath_runtime::job::place_of(p)).collect();
    if let Some((p, _)) = outputs.iter().enumerate().find(|(i, _)| places[..*i].contains(&places[*i])).map(|(_, o)| o) {
        return Err(JobError::Usage(format!("{} is named for two outputs", Quoted(p))));
    }
    for (p, _) in outputs {
        check_output(p, replace)?;
    }
    let mut made: Vec<(std::fs::File, peerpath_io::Temporary)> = Vec::new();
    let discard_all = |made: &[(std::fs::File, peerpath_io::Temporary)]| made.iter().for_each(|(_, t)| peerpath_io::discard(t));
    for (p, text) in outputs {
        let io = |source| JobError::TargetIo { path: p.to_path_buf(), source };
        let written = peerpath_io::create_temporary(p, false).map_err(io).and_then(|(mut t, temporary)| {
            let w = t.file.write_all(text).and_then(|()| peerpath_io::Inherited::default().apply(&t.file)).map_err(io);
            made.push((t.file, temporary));
            w
        });
        if let Err(err) = written {
            discard_all(&made);
            return Err(err);
        }
    }
    let mut placed: Vec<&Path> = Vec::new();
    for ((p, _), (file, temporary)) in outputs.iter().zip(&made) {
        let new = std::fs::symlink_metadata(p).is_err();
        if let Err(err) = put_in_place(file, temporary, p, replace) {
            discard_all(&made);
            placed.iter().for_each(|q| drop(std::fs::remove_file(q)));
            return Err(err);
        }
        if new {
            placed.push(p);
        }
    }
    Ok(())
}

/// Syncs a finished temporary file and puts it in place as `path`, never
/// over an existing file unless `replace`: an existing target is exit 4,
/// any other failure exit 11. On an error the caller discards the temporary.
pub(crate) fn put_in_place(file: &std::fs::File, temporary: &peerpath_io::Temporary, path: &Path, replace: bool) -> Result<(), JobError> {
    file.sync_all().and_then(|()| peerpath_io::publish(file, temporary, path, replace)).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => JobError::TargetExists { path: path.to_path_buf() },
        _ => JobError::TargetIo { path: path.to_path_buf(), source: e },
    })
}

/// Refuses a source that is a pipe, socket or character device before
/// opening it (opening a FIFO waits for a writer) for jobs that read their
/// source by offset: `why` says so. Anything else is left to the open.
pub(crate) fn refuse_stream_source(source: &Path, why: &str) -> Result<(), JobError> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(source) {
        Ok(m) if m.file_type().is_fifo() || m.file_type().is_socket() || m.file_type().is_char_device() => {
            Err(JobError::Usage(format!("{} is not a regular file: {why}", Quoted(source))))
        }
        _ => Ok(()),
    }
}

/// The job's failure (exit 12) when `file`, the regular file `path` that
/// had `size` bytes when opened, no longer has them once it has been read:
/// it grew (its new bytes are not in the output) or shrank while it was
/// read, or (`before`: its stamp when opened) was written in place. What every
/// offset-reading job checks before it keeps an output.
pub(crate) fn source_size_unchanged(file: &std::fs::File, path: &Path, size: u64, before: Option<peerpath_io::Stamp>) -> Result<(), JobError> {
    let meta = file.metadata().map_err(|e| JobError::SourceIo { path: path.to_path_buf(), detail: e.to_string() })?;
    if meta.is_file() && meta.len() != size {
        let how = if meta.len() > size { "grew" } else { "shrank" };
        return Err(JobError::SourceIo { path: path.to_path_buf(), detail: format!("the source {how} while it was read ({size} bytes when opened, {} now); nothing was kept", meta.len()) });
    }
    // Written in place, same size: what was read may mix old and new bytes (it was kept, exit 0).
    if let Some(what) = before.and_then(|b| b.changes(&peerpath_io::Stamp::of(&meta))) {
        return Err(JobError::SourceIo { path: path.to_path_buf(), detail: format!("the source changed while it was read ({what}): what was read may mix old and new bytes; nothing was kept (run it again once nothing writes it)") });
    }
    Ok(())
}

/// Opens a source to read it as a stream (a FIFO waits for its writer, as
/// it must): what cannot be opened, and a directory, is exit 3, in the
/// words the other commands use.
pub(crate) fn open_file_source(path: &Path) -> Result<std::fs::File, JobError> {
    let unreadable = |source| JobError::SourceUnreadable { path: path.to_path_buf(), source };
    let f = std::fs::File::open(path).map_err(unreadable)?;
    if f.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(unreadable(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a directory")));
    }
    Ok(f)
}

/// Refuses a file of a file system whose sizes are not what its files hold (a kernel file of
/// /proc or /sys: `peerpath_io::sizeless`) to a command that reads its source by its size: it
/// encrypted nothing of /proc/cpuinfo, exit 0.
pub(crate) fn refuse_a_sizeless_file(f: &std::fs::File, meta: &std::fs::Metadata, path: &Path, command: &str) -> Result<(), JobError> {
    if !meta.is_file() || !peerpath_io::sizeless(f) {
        return Ok(());
    }
    Err(JobError::Usage(format!(
        "{}: its size says {} bytes, which is not what it holds (a kernel file, as in /proc or /sys): {command} reads a file by its size; copy it first (cat {} > FILE)",
        Quoted(path),
        meta.len(),
        Quoted(path)
    )))
}

/// Standard output, unbuffered (a duplicate of descriptor 1), counting the bytes its writes
/// took: a write that fails says exactly how many went out before it (they cannot be taken
/// back). The count is shared, for a writer wrapped in a buffer.
pub(crate) struct Counted {
    out: std::fs::File,
    count: std::rc::Rc<std::cell::Cell<u64>>,
}

impl Counted {
    pub(crate) fn stdout() -> std::io::Result<Counted> {
        let out = std::fs::File::from(std::os::fd::AsFd::as_fd(&std::io::stdout()).try_clone_to_owned()?);
        Ok(Counted { out, count: Default::default() })
    }

    /// The count, kept when the writer goes into a buffer.
    pub(crate) fn count(&self) -> std::rc::Rc<std::cell::Cell<u64>> {
        self.count.clone()
    }

    /// `e`, saying how many bytes had gone out before it.
    pub(crate) fn after(&self, e: std::io::Error) -> std::io::Error {
        after_written(e, self.count.get())
    }
}

/// A write error on standard output, with the bytes that went out before it.
pub(crate) fn after_written(e: std::io::Error, n: u64) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{e}, after {n} bytes had been written to it (they stay there)"))
}

impl std::io::Write for Counted {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(b)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Refuses `output` where it is one of `files` (by path, or the same file
/// under another name) or lies in one of `dirs`: a file restored from a set
/// or a store never replaces one of the files it is read from, even with
/// `--force` (exit 5). `what` says what they are ("a file of the set DIR").
pub(crate) fn refuse_part_of_source(output: &Path, files: &[PathBuf], dirs: &[&Path], what: &str) -> Result<(), JobError> {
    use std::os::unix::fs::MetadataExt;
    if peerpath_runtime::job::is_std_stream(output) {
        return Ok(());
    }
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let (at, same) = (created_at(output), id(output));
    let hit = files.iter().any(|f| created_at(f) == at || (same.is_some() && id(f) == same)) || dirs.iter().any(|d| std::fs::canonicalize(d).is_ok_and(|d| at.starts_with(d)));
    if hit {
        return Err(JobError::PartOfSource { path: output.to_path_buf(), what: what.to_string() });
    }
    Ok(())
}

/// The path a file made as `p` gets: its directory resolved (symbolic
/// links, `..`), its name as given.
fn created_at(p: &Path) -> PathBuf {
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match (std::fs::canonicalize(dir), p.file_name()) {
        (Ok(d), Some(name)) => d.join(name),
        _ => p.to_path_buf(),
    }
}

/// A sysfs tree that cannot be read, named as the option that gave it (`--sysfs`, of `topo`,
/// `plan`, `probe`, `bench-io` and the jobs' `--device-memory-from p2p:BDF`); where the root
/// itself is the trouble (not there, no `bus/pci/devices` in it), with what was expected there.
pub(crate) fn sysfs_error(root: &Path, e: peerpath_topo::TopoError) -> String {
    use peerpath_topo::TopoError;
    const EXPECTED: &str = "give a sysfs root, a directory holding bus/pci/devices (/sys, or a fixture tree)";
    match e {
        TopoError::Io { path, source } if path == root => format!("--sysfs {}: cannot read it: {source}; {EXPECTED}", Quoted(root)),
        TopoError::NotSysfs { what, .. } => format!("--sysfs {} is not a sysfs root: {what}; {EXPECTED}", Quoted(root)),
        e => format!("--sysfs {}: {e}", Quoted(root)),
    }
}

/// The `bus/pci/devices` directory of the sysfs root `root`, where `p2p:BDF` memory is looked
/// for, or why `root` is not a sysfs root, as [`sysfs_error`] says it (a root that was not there
/// was said as a function that is no P2P memory provider, or a device that did not start).
pub(crate) fn p2p_devices_dir(root: &Path) -> Result<PathBuf, String> {
    use peerpath_topo::TopoError;
    std::fs::metadata(root).map_err(|source| sysfs_error(root, TopoError::Io { path: root.to_path_buf(), source }))?;
    let devices = root.join("bus/pci/devices");
    if !devices.is_dir() {
        return Err(sysfs_error(root, TopoError::NotSysfs { path: root.to_path_buf(), what: format!("{} is not a directory", Quoted(&devices)) }));
    }
    Ok(devices)
}

/// `peerpath topo`. Topology errors (a malformed sysfs or topology file, an
/// unknown device name) exit with code 13, a `--file` that cannot be read 3 (as a
/// source); its outputs fail as any job's do.
fn topo(a: TopoArgs) -> Result<(), JobError> {
    use peerpath_topo::{TopoError, Topology};
    let e = |e: TopoError| match e {
        TopoError::FileUnreadable { path, source } => JobError::SourceUnreadable { path, source },
        e => JobError::Topology(e.to_string()),
    };
    let t = match &a.file {
        Some(f) => Topology::from_toml_file(f).map_err(e)?,
        None => Topology::from_sysfs(&a.sysfs).map_err(|e| JobError::Topology(sysfs_error(&a.sysfs, e)))?,
    };
    let export = a.export.as_ref().map(|p| t.to_toml_string().map(|text| (p, text))).transpose().map_err(e)?;
    let vfs = if a.vfs { peerpath_topo::Vfs::Each } else { peerpath_topo::Vfs::Folded };
    let svg = a.svg.as_ref().map(|p| t.render_svg_of(vfs).map(|text| (p, text))).transpose().map_err(e)?;
    let outputs: Vec<(&Path, &[u8])> = export.iter().chain(&svg).map(|(p, text)| (p.as_path(), text.as_bytes())).collect();
    // What is printed is made first: a pair that names no device (or a matrix that cannot be
    // drawn) fails the job before any output is written (all or nothing).
    let text = match (&a.explain, a.json) {
        (Some(pair), true) => format!("{}\n", jsonout::stamped("p2p-verdict", &t.verdict(&pair[0], &pair[1]).map_err(e)?)),
        (Some(pair), false) => t.explain(&pair[0], &pair[1]).map_err(e)?,
        (None, true) => format!("{}\n", jsonout::stamped_text("topology", &t.to_json_string().map_err(e)?)),
        (None, false) => format!("{}\n{}", t.render_tree_of(vfs), t.render_matrix_of(vfs).map_err(e)?),
    };
    write_outputs(&outputs, a.force)?;
    print!("{text}");
    Ok(())
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    /// Multi-member gzip with a size subfield per member (readable by gzip, pigz, zcat).
    Gzip,
    /// BGZF (htslib/bgzip): 64 KiB members and an EOF marker.
    Bgzf,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum IoArg {
    /// io_uring, falling back to plain syscalls if the kernel refuses it.
    Auto,
    /// pread/pwrite only.
    Sync,
}

#[derive(Args)]
struct CommonArgs {
    /// Compute worker threads, 1 to 1024 [default: all cores].
    #[arg(long, short = 'T', value_parser = parse_threads)]
    threads: Option<usize>,
    /// Most reads in flight per source (reads run only as far ahead of the
    /// workers as keeps them busy; buffers beyond that are never touched)
    /// [default: 8, or the thread count where that is more; 128 with --engine gpu].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    queue_depth: Option<u32>,
    /// Do not use O_DIRECT (go through the page cache).
    #[arg(long)]
    no_direct: bool,
    /// I/O engine.
    #[arg(long, value_enum, default_value_t = IoArg::Auto)]
    io: IoArg,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print no report.
    #[arg(long, short)]
    quiet: bool,
    /// Say which path every file took, and every fallback, on stderr as it happens.
    #[arg(long, short)]
    verbose: bool,
}

/// How targets are written (compress and decompress).
#[derive(Args)]
struct TargetArgs {
    /// Overwrite existing targets (and, for compress -o -, write even to a terminal).
    #[arg(long, short)]
    force: bool,
    /// Do not sync outputs (as gzip, pigz and igzip leave theirs): each still
    /// appears whole, by rename, but a crash or power loss can lose what the
    /// page cache or the drive's cache holds [default: data synced before the
    /// rename, directory after].
    #[arg(long)]
    no_sync: bool,
}

#[derive(Args)]
struct CompressArgs {
    /// Files or block devices to compress ("-" for standard input).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// Target file (one source) or directory (one .gz per source) ["-": standard output; default: SOURCE.gz].
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Keep the sources: always so (peerpath never removes a source); taken as gzip's -k is.
    #[arg(long, short = 'k')]
    _keep: bool,
    /// Compression level: 0-3 use ISA-L igzip (fastest deflate on x86), 4-12 use libdeflate.
    #[arg(long, short, default_value_t = 1)]
    level: u32,
    /// Uncompressed bytes per gzip member (K, M, G suffixes; 1 byte to 256M) [default: 1M]. BGZF
    /// always uses 65280 (its format's limit), so it is not given with --format bgzf.
    #[arg(long, value_parser = parse_size)]
    block_size: Option<usize>,
    /// Output layout.
    #[arg(long, value_enum, default_value_t = FormatArg::Gzip)]
    format: FormatArg,
    #[command(flatten)]
    target: TargetArgs,
    /// Where members are compressed: the host CPU, emulated CSP devices (each a process owning its
    /// device memory; data goes SSD -> device memory -> device -> SSD by O_DIRECT), or auto (real
    /// CSPs where the topology has them, else the host CPU).
    #[arg(long, value_enum, default_value_t = EngineArg::Cpu)]
    engine: EngineArg,
    /// Emulated devices to start, 1 to 1024 (each serves its own group of sources and targets) [default: 1].
    #[arg(long, value_parser = parse_threads, help_heading = "Devices")]
    devices: Option<usize>,
    /// Memory of each emulated device (K, M, G suffixes), at least 4M; memory from "shm" is at most
    /// this machine's memory [default: 512M, the seed's CMB; half the machine's memory where that is less].
    /// With --engine gpu: the GPU memory the job computes in [default: 4G].
    #[arg(long, value_parser = parse_device_memory, help_heading = "Devices")]
    device_memory: Option<usize>,
    /// Where each emulated device's memory comes from: "shm" (a shared-memory file the device
    /// makes in /dev/shm), "shm:DIR" (the same file in DIR: a tmpfs mounted with
    /// huge=within_size gives it 2 MiB pages, which the device computes faster out of), or
    /// "p2p:BDF" (the P2P memory of a PCI function, e.g. an NVMe CMB, from p2pmem/allocate: SSDs
    /// DMA into it peer to peer; --device-memory is capped at what it has) [default: shm].
    #[arg(long, value_parser = parse_memory_from, help_heading = "Devices")]
    device_memory_from: Option<MemoryFrom>,
    /// sysfs root for --device-memory-from p2p:BDF [default: /sys].
    #[arg(value_hint = clap::ValueHint::DirPath, long, help_heading = "Devices")]
    sysfs: Option<PathBuf>,
    /// Worker threads of each emulated device, 1 to 1024 [default: all cores].
    #[arg(long, value_parser = parse_workers, help_heading = "Devices")]
    device_workers: Option<u32>,
    /// Fail (exit 15, nothing kept) instead of letting the host CPU do what a device could not.
    #[arg(long, help_heading = "Devices")]
    no_fallback: bool,
    /// With --engine gpu: which GPU [default: 0].
    #[arg(long, help_heading = "Devices")]
    gpu: Option<usize>,
    /// With --engine gpu: nvCOMP's library [default: $PEERPATH_NVCOMP, the loader's path, then Python's nvidia-libnvcomp wheel].
    #[arg(long, help_heading = "Devices")]
    nvcomp: Option<PathBuf>,
    /// With --engine gpu: nvCOMP's gzip algorithm, 0 to 5 [default: from --level: 0 gives 0 (entropy coding only, the fastest), 1-12 give 2 (the smallest output measured, smaller than igzip -1's); docs/gpu-nvcomp.md].
    #[arg(long, value_parser = clap::value_parser!(i32).range(0..=5), help_heading = "Devices")]
    gpu_algorithm: Option<i32>,
    /// With --engine gpu: CUDA streams, one host thread each, whose batches overlap (copies, kernels, packing); more than 1 measured slower so far (bench/results/2026-11-26-gpu-machine-3) [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64), help_heading = "Devices")]
    gpu_streams: Option<u32>,
    /// With --engine gpu: who moves each chunk between the pinned host window and GPU memory: `commands` (copy commands from the host, three round trips a chunk: measured) or `device` (the GPU device itself, one round trip a chunk: measured no faster, bench/results/2026-11-26-gpu-machine-5) [default: commands].
    #[arg(long, value_enum, help_heading = "Devices")]
    gpu_staging: Option<GpuStagingArg>,
    /// With --engine gpu: how sources reach GPU memory and outputs leave it: `auto` (the GPU reads
    /// and writes them itself through cuFile, GPUDirect Storage, where cuFile reports a direct path
    /// from NVMe; staged through the pinned window otherwise, and the report says why), `staged`
    /// (always through the window), or `cufile` (through cuFile even in its compatibility mode,
    /// where it bounces every byte through host memory itself; for testing the path). cuFile: $PEERPATH_CUFILE, the loader's path, or a CUDA installation's lib64 [default: auto].
    #[arg(long, value_enum, help_heading = "Devices")]
    gpu_io: Option<GpuIoArg>,
    /// With --engine gpu: sources and targets on a memory file system (tmpfs, /dev/shm): `staged`
    /// (the kernel copies them to and from the pinned window: a CPU copy each way), or `mapped`
    /// (mapped and registered with CUDA, up to 64 MiB at a time: the GPU's copy engine reads and writes
    /// their pages, no CPU copy; not yet measured on a GPU: `peerpath gpu probe --mapped-at DIR`
    /// checks that this machine's driver pins them, docs/gpu-nvcomp.md) [default: staged].
    #[arg(long, value_enum, help_heading = "Devices")]
    gpu_memory_files: Option<GpuMemoryFilesArg>,
    /// With --gpu-memory-files mapped: bytes of a file mapped and registered at once, as first
    /// used (K, M, G suffixes; 64K to 64G, whole pages): pinning is paid a granule at a time. A
    /// file's first granules are smaller (1 MiB, 1, 2, 4, ... doubling up to this size), so a
    /// small output holds about its own size pinned, not a whole granule [default: 64M].
    #[arg(long, value_parser = parse_size, help_heading = "Devices")]
    gpu_map_granule: Option<usize>,
    /// With --engine gpu: uncompressed bytes per read and per compress command (K, M, G suffixes;
    /// rounded up to whole members of --block-size): a command's members go into one nvCOMP launch
    /// (16M: 0.99-1.07 s for 1.5 GiB against 1.20-1.27 with 1M, bench/results/2026-11-26-gpu-machine-8) [default: 16M].
    #[arg(long, value_parser = parse_size, help_heading = "Devices")]
    gpu_chunk: Option<usize>,
    /// With --engine gpu: pinned host memory the GPU's chunks are staged through (K, M, G suffixes;
    /// 128M: 0.86-1.06 s for 1.5 GiB against 1.10-1.36 with 512M, whose pinning alone took
    /// 0.08-0.19 s, and 64M gave smaller nvCOMP launches: bench/results/2026-11-27-gpu-machine-2) [default: 128M].
    #[arg(long, value_parser = parse_size, help_heading = "Devices")]
    gpu_window: Option<usize>,
    /// With --engine gpu: input a worker waits to gather into one nvCOMP launch (K, M, G
    /// suffixes; 0: what is queued); it starts sooner when the queue depth is all in the GPU or
    /// --gpu-batch-wait has passed. Waiting measured slower so far (bench/results/2026-11-26-gpu-machine-6) [default: 0].
    #[arg(long, value_parser = parse_size, help_heading = "Devices")]
    gpu_batch: Option<usize>,
    /// With --gpu-batch: the longest a worker waits for its batch to fill, in milliseconds [default: 2].
    #[arg(long, help_heading = "Devices")]
    gpu_batch_wait: Option<f64>,
    /// Check every member of each output (CRC-32 and length) before it is put in place (exit 16 if bad).
    #[arg(long)]
    verify: bool,
    /// Encrypt each output as it is written: peerpath-enc/1 (AES-256-GCM, docs/encryption-format.md),
    /// target SOURCE.gz.ppenc; `peerpath decrypt` gives back the .gz. Key: --key-file, --key-env or $PEERPATH_KEY.
    #[arg(long, help_heading = "Encryption")]
    encrypt: bool,
    #[command(flatten)]
    key: crypt::KeyArgs,
    /// With --encrypt: compressed bytes per sealed block (K, M suffixes; at most 1G) [default: 1M].
    #[arg(long, value_parser = parse_size, help_heading = "Encryption")]
    encrypt_block_size: Option<usize>,
    /// Erasure-code the output (compressed, and encrypted with --encrypt) into K data and M parity
    /// shards in one pass: --output is then a new directory of shards and a manifest, as
    /// `peerpath ec encode` makes (`ec decode` gives back the .gz or .gz.ppenc). One regular file;
    /// the host CPU, or with --engine emulated an emulated CSP, with --engine gpu a GPU (every stage
    /// in the device's memory).
    #[arg(long, value_name = "K+M", value_parser = parse_ec, help_heading = "Erasure coding")]
    ec: Option<(usize, usize)>,
    /// With --ec: bytes per unit (a shard's part of one stripe; K, M suffixes) [default: 1M].
    #[arg(long, value_parser = parse_size, help_heading = "Erasure coding")]
    ec_unit: Option<usize>,
    /// With --ec: put shard i in the i-th of these directories, one per drive (K + M of them, in
    /// shard order), as `peerpath ec encode --shard-dir` does.
    #[arg(value_hint = clap::ValueHint::DirPath, long = "shard-dir", value_name = "SHARD_DIR", help_heading = "Erasure coding")]
    shard_dirs: Vec<PathBuf>,
    /// After the report, why each stream went where it went: with --device-memory-from p2p:BDF,
    /// the topology planner's verdict for every leg between the files' drives and that memory.
    #[arg(long)]
    explain: bool,
    /// A device with commands in flight and none completing for this long (seconds) is declared
    /// hung: it fails, and the CPU goes on (or exit 15 with --no-fallback) [default: 10 for
    /// emulated devices, 30 for a GPU, whose single batches are bigger].
    #[arg(long, value_parser = parse_device_timeout, help_heading = "Devices")]
    device_timeout: Option<std::time::Duration>,
    /// Testing aid: inject seeded device faults, e.g. "seed=7,error=0.01,crash-after=40"; keys: seed,
    /// error, corrupt (probabilities), latency (0-2ms), crash-after, hang-after, duplicate-after.
    #[arg(long, value_parser = parse_faults, help_heading = "Devices")]
    inject_faults: Option<peerpath_device::FaultConfig>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum GpuIoArg {
    Auto,
    Staged,
    Cufile,
}

impl From<GpuIoArg> for peerpath_gpu::GpuIo {
    fn from(a: GpuIoArg) -> Self {
        match a {
            GpuIoArg::Auto => peerpath_gpu::GpuIo::Auto(None),
            GpuIoArg::Staged => peerpath_gpu::GpuIo::Staged,
            GpuIoArg::Cufile => peerpath_gpu::GpuIo::Cufile(None),
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum GpuMemoryFilesArg {
    Staged,
    Mapped,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
enum GpuStagingArg {
    Commands,
    Device,
}

impl From<GpuStagingArg> for peerpath_gpu::Staging {
    fn from(a: GpuStagingArg) -> Self {
        match a {
            GpuStagingArg::Commands => peerpath_gpu::Staging::Commands,
            GpuStagingArg::Device => peerpath_gpu::Staging::Device,
        }
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum EngineArg {
    /// Host CPU worker threads (--threads).
    Cpu,
    /// Emulated CSP device processes (--devices, --device-memory, --device-workers).
    Emulated,
    /// The GPU (CUDA and nvCOMP, found at run time; --gpu, --nvcomp, --gpu-algorithm, --device-memory).
    Gpu,
    /// Real CSPs found in /sys where there are any, else the host CPU.
    Auto,
}

/// Where an emulated device's memory comes from (--device-memory-from).
#[derive(Clone, Debug)]
enum MemoryFrom {
    Shm(Option<PathBuf>),
    P2p(String),
}

fn parse_memory_from(v: &str) -> Result<MemoryFrom, String> {
    match v.split_once(':') {
        None if v == "shm" => Ok(MemoryFrom::Shm(None)),
        Some(("shm", dir)) if Path::new(dir).is_dir() => Ok(MemoryFrom::Shm(Some(PathBuf::from(dir)))),
        Some(("shm", dir)) => Err(format!("'{v}': {dir} is not a directory")),
        Some(("p2p", bdf)) if !bdf.is_empty() && !bdf.contains('/') => Ok(MemoryFrom::P2p(bdf.to_string())),
        _ => Err(format!("'{v}': expected shm, shm:DIR or p2p:BDF (a PCI function with p2pmem, e.g. p2p:0000:03:00.0)")),
    }
}

/// "seed=7,error=0.01,corrupt=0.01,latency=0-2ms,crash-after=40".
fn parse_faults(spec: &str) -> Result<peerpath_device::FaultConfig, String> {
    let mut f = peerpath_device::FaultConfig::seeded(0);
    let ms = |v: &str| -> Result<std::time::Duration, String> {
        // A delay: 0 to a minute (NaN or infinity panicked in Duration).
        let n = v.trim_end_matches("ms").parse::<f64>().ok().filter(|n| (0.0..=60_000.0).contains(n)).ok_or_else(|| format!("bad latency {v:?} (milliseconds from 0 to 60000, e.g. 2ms)"))?;
        Ok(std::time::Duration::from_secs_f64(n / 1000.0))
    };
    // Counts of commands: the fault comes after that many (0 never came, silently).
    let count = |k: &str, v: &str| -> Result<u64, String> { v.parse::<u64>().ok().filter(|&n| n >= 1).ok_or_else(|| format!("bad count {v:?} for {k} (1 or more commands)")) };
    let p = |v: &str| -> Result<f64, String> {
        v.parse::<f64>().ok().filter(|x| (0.0..=1.0).contains(x)).ok_or_else(|| format!("bad probability {v:?} (0 to 1)"))
    };
    for item in spec.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| format!("{item:?}: expected key=value"))?;
        match k {
            "seed" => f.seed = v.parse().map_err(|_| format!("bad seed {v:?}"))?,
            "error" => f.error_probability = p(v)?,
            "corrupt" => f.corrupt_probability = p(v)?,
            "latency" => {
                let (a, b) = v.split_once('-').unwrap_or((v, v));
                let (a, b) = (ms(a)?, ms(b)?);
                if a > b {
                    return Err(format!("latency {v:?}: the range goes from the shorter delay to the longer"));
                }
                f.latency = Some((a, b));
            }
            "crash-after" => f.crash_after_submissions = Some(count(k, v)?),
            "hang-after" => f.hang_after_submissions = Some(count(k, v)?),
            "duplicate-after" => f.duplicate_completion_after = Some(count(k, v)?),
            _ => return Err(format!("unknown fault {k:?} (seed, error, corrupt, latency, crash-after, hang-after, duplicate-after)")),
        }
    }
    Ok(f)
}

#[derive(Args)]
struct DecompressArgs {
    /// gzip files to restore ("-" for standard input).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// Target file (one source) or directory ["-": standard output; default: SOURCE without .gz].
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Keep the sources: always so (peerpath never removes a source); taken as gzip's -k is.
    #[arg(long, short = 'k')]
    _keep: bool,
    #[command(flatten)]
    target: TargetArgs,
    /// For encrypted sources (SOURCE.gz.ppenc, from `compress --encrypt`): their key.
    #[command(flatten)]
    key: crypt::KeyArgs,
    /// The source is a shard directory (from `compress --ec` or `ec encode` of a .gz or .gz.ppenc):
    /// its stream is rebuilt from the shards that survive, opened and inflated in one pass into
    /// --output (on -T threads of the host CPU, or in an emulated CSP's memory with --engine
    /// emulated, in GPU memory with --engine gpu).
    #[arg(long)]
    ec: bool,
    #[command(flatten)]
    decode: DecodeEngineArgs,
    /// Testing aid (with --ec --engine emulated): inject seeded device faults, as compress's option does.
    #[arg(long, value_parser = parse_faults, help_heading = "Devices")]
    inject_faults: Option<peerpath_device::FaultConfig>,
    #[command(flatten)]
    common: CommonArgs,
}

/// Where decompress and verify decode members.
#[derive(Args)]
struct DecodeEngineArgs {
    /// Where members are decoded: the host CPU (ISA-L), or a GPU (nvCOMP's batched gzip
    /// decompressor, CRC-32 checked on the GPU; files whose members declare no sizes are
    /// decoded on the CPU, streaming, as with `cpu`; with `decompress --ec`, every stage of the
    /// reverse chain in GPU memory, as with `emulated`), or (with `decompress --ec` only so far)
    /// an emulated CSP: units checked and rebuilt, blocks opened and members decoded in its memory.
    #[arg(long, value_enum, default_value_t = DecodeEngineArg::Cpu)]
    engine: DecodeEngineArg,
    /// With --engine gpu: which GPU [default: 0].
    #[arg(long, help_heading = "Devices")]
    gpu: Option<usize>,
    /// With --engine gpu: nvCOMP's library [default: $PEERPATH_NVCOMP, the loader's path, then Python's nvidia-libnvcomp wheel].
    #[arg(long, help_heading = "Devices")]
    nvcomp: Option<PathBuf>,
    /// With --engine gpu: decompressed bytes per nvCOMP launch (K, M, G suffixes; at least 4M).
    /// Each worker thread drives its own launches on its own CUDA stream; with --engine gpu, -T
    /// defaults to 4 (measured best with 96M batches: bench/results/2026-11-26-gpu-machine-7) [default: 96M].
    #[arg(long, value_parser = parse_size, help_heading = "Devices")]
    gpu_batch: Option<usize>,
    /// Fail (exit 15, nothing kept) instead of letting the host CPU decode what the device could not.
    #[arg(long, help_heading = "Devices")]
    no_fallback: bool,
    /// With --engine gpu or emulated: a device with work in flight and none of it finishing for
    /// this long (seconds) is declared hung: it is retired and the host CPU goes on (or exit 15
    /// with --no-fallback) [default: 30 for a GPU, 10 for an emulated CSP].
    #[arg(long, value_parser = parse_device_timeout, help_heading = "Devices")]
    device_timeout: Option<std::time::Duration>,
    /// Read a file of peerpath's members that lacks the end member after its last one, as
    /// files written before 2026-12-03 do, without an error (exit 7 otherwise: such a file was
    /// cut at a member's end, and that cut then goes unnoticed).
    #[arg(long)]
    allow_no_end_member: bool,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum DecodeEngineArg {
    Cpu,
    Gpu,
    Emulated,
}

/// verify's `--device-timeout` ([`VerifyArgs`]): a GPU's only.
const VERIFY_DEVICE_TIMEOUT_HELP: &str = "With --engine gpu: a GPU with work in flight and none of it finishing for this long \
    (seconds) is declared hung: it is retired and the host CPU goes on (or exit 15 with --no-fallback) [default: 30]";

/// verify's `--engine` ([`VerifyArgs`]).
const VERIFY_ENGINE_HELP: &str = "Where members are decoded: the host CPU (ISA-L), or a GPU (nvCOMP's batched gzip \
    decompressor, CRC-32 checked on the GPU; files whose members declare no sizes are decoded on the CPU, streaming, as \
    with `cpu`)";

/// The values of verify's `--engine`: [`DecodeEngineArg`]'s but `emulated`.
fn verify_engine() -> impl clap::builder::TypedValueParser<Value = DecodeEngineArg> {
    use clap::builder::TypedValueParser;
    let values = [DecodeEngineArg::Cpu, DecodeEngineArg::Gpu].map(|v| v.to_possible_value().expect("no value is skipped"));
    clap::builder::PossibleValuesParser::new(values).map(|name| DecodeEngineArg::from_str(&name, false).expect("one of the values above"))
}

/// Worker threads (CUDA streams) of a GPU decode where -T is not given.
const GPU_DECODE_THREADS: usize = 4;

impl DecodeEngineArgs {
    fn spec(&self) -> Option<peerpath_runtime::GpuDecodeSpec> {
        (self.engine == DecodeEngineArg::Gpu).then(|| {
            let defaults = peerpath_runtime::GpuDecodeSpec::default();
            peerpath_runtime::GpuDecodeSpec {
                ordinal: self.gpu.unwrap_or(0),
                nvcomp: self.nvcomp.clone(),
                batch_bytes: self.gpu_batch.unwrap_or(defaults.batch_bytes),
                no_fallback: self.no_fallback,
                timeout: self.device_timeout.unwrap_or(defaults.timeout),
                cpu_threads: None,
            }
        })
    }

    /// Options that set up a device the engine does not run on are a usage error, not ignored;
    /// `devices`: the command's engines that take `--device-timeout`; `engines`: the command's
    /// engines ([`DECODE_ENGINES`]'s first two, or all three with `decompress --ec`); `mode`:
    /// " --ec" or "".
    fn check(&self, devices: &str, engines: &[Engine], mode: &str) -> Result<(), JobError> {
        if self.device_timeout.is_some() && self.engine == DecodeEngineArg::Cpu {
            return Err(JobError::Usage(format!("--device-timeout times devices: give it with --engine {devices}")));
        }
        let given = [(self.gpu.is_some(), "--gpu", SetsUp::Gpu), (self.nvcomp.is_some(), "--nvcomp", SetsUp::Gpu), (self.gpu_batch.is_some(), "--gpu-batch", SetsUp::Gpu)];
        refuse_untaken(&given, &engine_name(self.engine), mode, "decodes", engines)?;
        if mode == " --ec" && self.engine == DecodeEngineArg::Gpu && self.gpu_batch.is_some() {
            return Err(JobError::Usage("--gpu-batch with --ec --engine gpu: the chain sizes its GPU's launches to what it holds (its members in flight): drop it".into()));
        }
        Ok(())
    }

    /// The job's options, with the GPU's default thread count where -T was not given.
    fn options(&self, mut common: peerpath_runtime::job::CommonOptions, threads_given: bool, key: Option<std::sync::Arc<peerpath_func::crypt::Key>>) -> Result<DecompressOptions, JobError> {
        if self.engine == DecodeEngineArg::Emulated {
            return Err(JobError::Usage("--engine emulated decodes shard sets only so far (decompress --ec); give --engine cpu or gpu".into()));
        }
        let mut gpu = self.spec();
        if let (Some(spec), false) = (gpu.as_mut(), threads_given) {
            // Where the GPU does not start, the CPU gets the usual default (all cores).
            spec.cpu_threads = Some(common.threads);
            common.threads = GPU_DECODE_THREADS;
        }
        Ok(DecompressOptions { common, key, gpu, allow_missing_end_member: self.allow_no_end_member })
    }
}

/// verify decodes on the host CPU or a GPU: not on an emulated CSP, which decodes shard sets only
/// (`decompress --ec`), so its `--engine` neither offers nor takes `emulated`, and its
/// `--device-timeout` times a GPU only.
#[derive(Args)]
#[command(mut_arg("engine", |a| a.value_parser(verify_engine()).help(VERIFY_ENGINE_HELP).long_help(None::<&str>)))]
#[command(mut_arg("device_timeout", |a| a.help(VERIFY_DEVICE_TIMEOUT_HELP).long_help(None::<&str>)))]
struct VerifyArgs {
    /// gzip files to check (encrypted ones too, with their key).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    #[command(flatten)]
    key: crypt::KeyArgs,
    #[command(flatten)]
    decode: DecodeEngineArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct DemoArgs {
    /// Keep the demo's files in this directory (default: a temporary directory, removed afterwards).
    #[arg(value_hint = clap::ValueHint::DirPath, long)]
    workdir: Option<PathBuf>,
    /// Replace the demo's files where the work directory holds them already.
    #[arg(long, short = 'f')]
    force: bool,
    /// Print the four jobs' reports as JSON, one a line (JSON Lines).
    #[arg(long)]
    json: bool,
    /// Compute worker threads, 1 to 1024 [default: all cores].
    #[arg(long, short = 'T', value_parser = parse_threads)]
    threads: Option<usize>,
}

/// The most worker threads (or devices) one job starts.
const MAX_THREADS: usize = 1024;

/// Parses a thread or device count: 0 and absurd counts are usage errors
/// (as pigz refuses `-p 0`), not silently 1 or a failed thread spawn.
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(n) => Err(format!("{n} is not between 1 and {MAX_THREADS}")),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}

fn parse_workers(s: &str) -> Result<u32, String> {
    parse_threads(s).map(|n| n as u32)
}


/// The least device memory a job can use: a read of 1 MiB, its output and staging.
const MIN_DEVICE_MEMORY_BYTES: usize = 4 << 20;

/// The default memory of an emulated device: the seed's 512 MiB CMB.
const DEFAULT_DEVICE_MEMORY_BYTES: usize = 512 << 20;

/// Parses `--device-memory`: at least 4 MiB. The upper bound depends on where the memory comes
/// from (host memory or a PCI function's P2P memory), so `device_memory_bytes` checks it.
fn parse_device_memory(s: &str) -> Result<usize, String> {
    let n = parse_size(s)?;
    if n < MIN_DEVICE_MEMORY_BYTES {
        return Err(format!("{s} is less than the {} MiB a device needs", MIN_DEVICE_MEMORY_BYTES >> 20));
    }
    Ok(n)
}

/// This machine's memory (MemTotal), if /proc/meminfo says.
fn machine_memory_bytes() -> Option<usize> {
    std::fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok()))
        .map(|kib| kib << 10)
}

/// Each emulated device's memory. Memory from "shm" is a file in host memory: asked for, it may
/// not exceed the machine's memory (a usage error); by default it is 512 MiB or half the machine's
/// memory, whichever is less. P2P memory is capped at what the PCI function has, when the device starts.
fn device_memory_bytes(asked: Option<usize>, from: &MemoryFrom) -> Result<usize, JobError> {
    let total = match from {
        MemoryFrom::Shm(_) => machine_memory_bytes(),
        MemoryFrom::P2p(_) => None,
    };
    match (asked, total) {
        (Some(n), Some(t)) if n > t => Err(JobError::Usage(format!(
            "--device-memory {} MiB is more than this machine's memory ({} MiB)",
            n >> 20,
            t >> 20
        ))),
        (Some(n), _) => Ok(n),
        (None, Some(t)) => Ok(DEFAULT_DEVICE_MEMORY_BYTES.min(t / 2).max(MIN_DEVICE_MEMORY_BYTES)),
        (None, None) => Ok(DEFAULT_DEVICE_MEMORY_BYTES),
    }
}

/// Parses "65536", "64K", "1M", "1MiB", "2G".
/// `K+M`: data and parity shards.
fn parse_ec(s: &str) -> Result<(usize, usize), String> {
    let (k, m) = s.split_once('+').ok_or_else(|| format!("{s}: give data+parity shards, e.g. 4+2"))?;
    let n = |x: &str| x.trim().parse::<usize>().map_err(|_| format!("{s}: give data+parity shards, e.g. 4+2"));
    let (k, m) = (n(k)?, n(m)?);
    peerpath_func::ec::RsCode::new(k, m)?;
    Ok((k, m))
}

fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: usize = num.parse().map_err(|_| format!("'{s}' is not a size (try 65536, 64K or 1M)"))?;
    let mult: usize = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => return Err(format!("unknown size unit '{other}' (use K, M or G)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))
}

fn progress_bar(common: &CommonArgs, to_stdout: bool) -> (Option<Progress>, Option<ProgressBar>) {
    if common.quiet || common.json || !std::io::stderr().is_terminal() {
        return (None, None);
    }
    let _ = to_stdout;
    // Bytes and a rate until the job knows its total (a pipe, a decompression's output never
    // does): a bar of 0 bytes said "4.71 MiB/0 B".
    let bar = ProgressBar::new(0);
    bar.set_style(ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bytes} {binary_bytes_per_sec}").expect("valid template"));
    let b = bar.clone();
    let sized = std::sync::atomic::AtomicBool::new(false);
    let cb: Progress = Arc::new(move |done, total| {
        if let Some(t) = total {
            if !sized.swap(true, std::sync::atomic::Ordering::Relaxed) {
                b.set_style(
                    ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}").expect("valid template"),
                );
            }
            b.set_length(t);
        }
        b.set_position(done);
    });
    (Some(cb), Some(bar))
}

fn common_options(a: &CommonArgs, force: bool, durable: bool, progress: Option<Progress>) -> CommonOptions {
    let mut c = CommonOptions::default();
    if let Some(t) = a.threads {
        c.threads = t;
    }
    c.queue_depth = a.queue_depth.unwrap_or(c.queue_depth.max(c.threads as u32));
    c.direct = !a.no_direct;
    c.sync_io = a.io == IoArg::Sync;
    c.force = force;
    c.durable = durable;
    c.progress = progress;
    c
}

fn emit(report: &JobReport, common: &CommonArgs, data_on_stdout: bool) {
    if common.verbose {
        for f in &report.files {
            let source = peerpath_runtime::report::quoted_exact(&f.source, f.source_bytes.as_deref());
            eprintln!("peerpath: {source}: read via {}", f.read_path);
            if let Some(m) = &f.decode_mode {
                eprintln!("peerpath: {source}: {m}");
            }
        }
        for f in &report.fallbacks {
            eprintln!("peerpath: fallback: {f}");
        }
    }
    // Work that left a device for the host CPU is never silent, wherever the report goes (none
    // with -q; `> report.txt`, `--json > r.json`): said on stderr, as ec, encrypt, scan and dedup
    // say theirs, once (`--verbose` said every fallback above, I/O notes too; a report on stderr,
    // with the data on stdout, says it). The job server's is said already, by the client.
    // (With the report on a terminal, where standard error is too as a rule, it is said there.)
    if !common.verbose && (common.quiet || !(data_on_stdout || std::io::IsTerminal::is_terminal(&std::io::stdout()))) {
        for f in report.fallbacks.iter().filter(|f| f.moves_work_to_the_host_cpu()) {
            eprintln!("peerpath: FALLBACK: {f}");
        }
    }
    if common.quiet {
        return;
    }
    // A job the daemon ran says so, and one it was asked to run and did not.
    let with_runner;
    let report = match (daemon::runner(), daemon::not_in_daemon()) {
        (None, None) => report,
        (runner, not_in_daemon) => {
            let fallbacks = report.fallbacks.iter().cloned().chain(not_in_daemon.map(|why| peerpath_runtime::report::Fallback::NotInDaemon { why })).collect();
            with_runner = JobReport { runner, fallbacks, ..report.clone() };
            &with_runner
        }
    };
    let text = if common.json { jsonout::stamped("job-report", report) } else { report.render() };
    if data_on_stdout {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
}

/// The I/O options of a plain compress or decompress that neither chain (`--ec`) takes: a
/// usage error, not ignored (`--io sync` is what it does, `--no-direct` it takes, `--verbose` it says).
fn refuse_unused_chain_options(common: &CommonArgs, target: &TargetArgs) -> Result<(), JobError> {
    let refused = [
        (common.queue_depth.is_some(), "--queue-depth with --ec", "the chain keeps a few blocks a worker in flight, sized by its workers (-T): drop it"),
        (target.no_sync, "--no-sync with --ec", "the chain always syncs what it writes before it is put in place: drop it"),
    ];
    match refused.iter().find(|(given, ..)| *given) {
        Some((_, option, why)) => Err(JobError::Usage(format!("{option}: {why}"))),
        None => Ok(()),
    }
}

/// `compress --ec K+M`: the chain (one regular file, into a new directory, on the host CPU).
fn compress_ec(a: &CompressArgs, level: Level, encrypt: Option<(std::sync::Arc<peerpath_func::crypt::Key>, u32)>, (data, parity): (usize, usize)) -> Result<(), JobError> {
    let (source, dir) = match (a.sources.as_slice(), a.output.as_deref()) {
        ([s], Some(d)) if s.as_os_str() != "-" && d.as_os_str() != "-" => (s, d),
        _ => return Err(JobError::Usage("--ec takes one source file and --output DIR (a new directory for the shards)".into())),
    };
    if !matches!(a.engine, EngineArg::Cpu | EngineArg::Emulated | EngineArg::Gpu) {
        return Err(JobError::Usage("--ec runs on the host CPU, an emulated CSP or a GPU (--engine cpu, emulated or gpu)".into()));
    }
    if a.verify || a.explain {
        return Err(JobError::Usage("--ec does not take --verify or --explain yet (check the result with `peerpath ec verify DIR`)".into()));
    }
    // Options of the devices a plain compress starts that the chain's one device cannot take:
    // a usage error, not ignored (--device-workers sets the emulated device's workers; those of a
    // GPU are refused with the others, by refuse_unused_compress_options).
    let refused = [
        (a.devices.is_some(), "--devices with --ec", "the chain runs on one device: drop it"),
        (a.device_memory.is_some(), "--device-memory with --ec", "the chain sizes its device's memory to what it holds (its blocks in flight, two stripes and their parity): drop it"),
        (a.device_memory_from.is_some(), "--device-memory-from with --ec", "the chain's emulated device places its memory itself (in /dev/shm where it fits, else the temporary directory): drop it"),
    ];
    if let Some((_, option, why)) = refused.iter().find(|(given, ..)| *given) {
        return Err(JobError::Usage(format!("{option}: {why}")));
    }
    refuse_unused_chain_options(&a.common, &a.target)?;
    // The source named as the target is that (exit 5), with --force too.
    let fresh = ec::check_new_set_dir(dir, Some(source));
    if let Err(e @ JobError::SameFile { .. }) = fresh {
        return Err(e);
    }
    if a.target.force && fresh.is_err() {
        // (Where there is nothing to replace, --force asks nothing: the set is made.)
        return Err(JobError::Usage("--ec makes a new directory and never replaces one, even with --force: remove it first, or name another".into()));
    }
    fresh?;
    let unit = a.ec_unit.unwrap_or(ec::DEFAULT_UNIT_BYTES);
    let header = peerpath_func::crypt::HEADER_BYTES;
    if encrypt.is_some() && data * unit < header {
        return Err(JobError::Usage(format!("with --encrypt the first stripe holds the {header}-byte header: --ec-unit must be at least {} bytes with {data} data shards", header.div_ceil(data))));
    }
    let threads = a.common.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let format = match a.format {
        FormatArg::Gzip => Format::Gzip,
        FormatArg::Bgzf => Format::Bgzf,
    };
    let block_size = if format == Format::Bgzf { peerpath_func::BGZF_MAX_INPUT_BYTES } else { a.block_size.unwrap_or(DEFAULT_BLOCK_BYTES) };
    let placement = ec::Placement::check(&a.shard_dirs, data + parity, parity, dir)?;
    let device_workers = a.device_workers.map(|w| w as usize);
    let opts = chain::ChainOptions { level, format, block_size, threads, device_workers, encrypt, data, parity, unit, placement, direct: !a.common.no_direct };
    let mut fallbacks = Vec::new();
    if a.engine != EngineArg::Cpu {
        if a.inject_faults.as_ref().is_some_and(|f| f.corrupt_probability > 0.0) {
            return Err(JobError::Usage("--ec cannot check the device's output yet: --inject-faults takes no corrupt= with it".into()));
        }
        if a.inject_faults.is_some() && a.engine != EngineArg::Emulated {
            return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
        }
        let started = match a.engine {
            EngineArg::Gpu => chain_device::start_gpu(&opts, a.gpu.unwrap_or(0), a.nvcomp.clone(), gpu_algorithm(a), a.device_timeout),
            _ => chain_device::start(&opts, a.inject_faults.clone(), a.device_timeout),
        };
        let (why, then) = match started {
            Ok(mut dev) => match chain_device::compress_ec(dev.as_mut(), source, dir, &opts) {
                Ok(report) => {
                    report.print(a.common.json, a.common.quiet, a.common.verbose);
                    return Ok(());
                }
                Err(chain_device::Stop::Job(e)) => return Err(e),
                // The device held the first stripe and the blocks being filled: nothing it did is kept.
                Err(chain_device::Stop::Device(why) | chain_device::Stop::Verdict(why)) => (why, "; the chain restarts on the host CPU from the first byte"),
            },
            Err(why) => (why, ": the chain runs on the host CPU"),
        };
        if a.no_fallback {
            return Err(JobError::Device { detail: format!("{why} (--no-fallback: nothing was kept)") });
        }
        eprintln!("peerpath: FALLBACK: {why}{then}");
        fallbacks.push(format!("{why}{then}"));
    } else if a.inject_faults.is_some() {
        return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
    }
    let mut report = chain::compress_ec(source, dir, &opts)?;
    report.run.fallbacks = fallbacks;
    report.print(a.common.json, a.common.quiet, a.common.verbose);
    Ok(())
}

/// `--encrypt`: the key and block size, or why not.
fn compress_encryption(a: &CompressArgs) -> Result<Option<(std::sync::Arc<peerpath_func::crypt::Key>, u32)>, JobError> {
    if !a.encrypt {
        if a.key.given() || a.encrypt_block_size.is_some() {
            // Ignoring them would write a plain output where one asked for a sealed one.
            return Err(JobError::Usage("--key-file, --key-env and --encrypt-block-size go with --encrypt: give it, or drop them".into()));
        }
        return Ok(None);
    }
    let block = a.encrypt_block_size.unwrap_or(crypt::DEFAULT_BLOCK_BYTES);
    if a.verify {
        return Err(JobError::Usage("--verify cannot read an encrypted output yet: check it with `peerpath decrypt` and `peerpath verify`".into()));
    }
    if block == 0 || block > peerpath_func::crypt::MAX_BLOCK_BYTES as usize {
        return Err(JobError::Usage(format!("--encrypt-block-size must be 1 byte to {} MiB", peerpath_func::crypt::MAX_BLOCK_BYTES >> 20)));
    }
    Ok(Some((std::sync::Arc::new(crypt::load_key(&a.key, crypt::KeyUse::Writes)?), block as u32)))
}

/// `SOURCE.gz.ppenc`: what `compress --encrypt` names its output.
fn encrypted_compressed_name(source: &Path) -> Result<PathBuf, JobError> {
    let mut s = compressed_name(source)?.into_os_string();
    s.push(".");
    s.push(crypt::SUFFIX);
    Ok(PathBuf::from(s))
}

fn compressed_name(source: &Path) -> Result<PathBuf, JobError> {
    let mut s = source.as_os_str().to_owned();
    s.push(".gz");
    Ok(PathBuf::from(s))
}

/// The target of decompressing `source`: its name without the gzip suffix,
/// byte for byte (names need not be UTF-8).
fn decompressed_name(source: &Path) -> Result<PathBuf, JobError> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let name = source.as_os_str().as_bytes();
    // SOURCE.gz.ppenc (compress --encrypt) restores to SOURCE.
    let name = name.strip_suffix(b".ppenc").filter(|n| n.ends_with(b".gz")).unwrap_or(name);
    // In any case, as gzip -d takes them (X.GZ, Y.Tgz).
    for (suffix, replacement) in [(&b".gz"[..], &b""[..]), (b".bgz", b""), (b".gzip", b""), (b".tgz", b".tar")] {
        let Some(at) = name.len().checked_sub(suffix.len()) else { continue };
        let stem = &name[..at];
        if name[at..].eq_ignore_ascii_case(suffix) && !stem.is_empty() && !stem.ends_with(b"/") {
            return Ok(PathBuf::from(std::ffi::OsString::from_vec([stem, replacement].concat())));
        }
    }
    Err(JobError::Usage(format!("{}: unknown suffix (not .gz, .bgz, .gzip, .tgz or .gz.ppenc, in any case), so its output has no name: decompress it alone with --output FILE, or rename it", Quoted(source))))
}

/// `--device-timeout` given where the host CPU does the work: nothing there to time out.
pub(crate) fn device_timeout_without_a_device() -> JobError {
    JobError::Usage("--device-timeout times devices: give it with --engine emulated or gpu".into())
}

/// `--device-timeout`: seconds, 0.05 to 3600.
fn parse_device_timeout(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(t) if (0.05..=3600.0).contains(&t) => Ok(std::time::Duration::from_secs_f64(t)),
        _ => Err(format!("{s}: give seconds, 0.05 to 3600")),
    }
}

/// nvCOMP's algorithm for a GPU compression: `--gpu-algorithm`, or `--level`'s.
fn gpu_algorithm(a: &CompressArgs) -> i32 {
    a.gpu_algorithm.unwrap_or_else(|| peerpath_gpu::algorithm_for_level(a.level))
}

/// What an option of compress, decompress or verify sets up, and so the engines that take it.
#[derive(Clone, Copy, PartialEq)]
enum SetsUp {
    /// Emulated CSPs (--devices, --device-workers, --device-memory-from).
    Emulated,
    /// A GPU (--gpu, --nvcomp, --gpu-*).
    Gpu,
    /// Either (--device-memory).
    Devices,
}

impl SetsUp {
    fn what(self) -> &'static str {
        match self {
            SetsUp::Emulated => "emulated CSPs",
            SetsUp::Gpu => "a GPU",
            SetsUp::Devices => "devices",
        }
    }
}

/// A value of a command's `--engine`: its name, what it runs on, and what it takes.
struct Engine {
    name: &'static str,
    on: &'static str,
    takes: &'static [SetsUp],
}

/// compress's engines; `auto` last (it may pick any device, so it takes every device's options;
/// `--ec` does not run on it).
const COMPRESS_ENGINES: [Engine; 4] = [
    Engine { name: "cpu", on: "the host CPU", takes: &[] },
    Engine { name: "emulated", on: "emulated CSPs", takes: &[SetsUp::Emulated, SetsUp::Devices] },
    Engine { name: "gpu", on: "a GPU", takes: &[SetsUp::Gpu, SetsUp::Devices] },
    Engine { name: "auto", on: "what it finds", takes: &[SetsUp::Emulated, SetsUp::Gpu, SetsUp::Devices] },
];

/// decompress's and verify's engines; `emulated` last (`decompress --ec` only).
const DECODE_ENGINES: [Engine; 3] = [
    Engine { name: "cpu", on: "the host CPU", takes: &[] },
    Engine { name: "gpu", on: "a GPU", takes: &[SetsUp::Gpu, SetsUp::Devices] },
    Engine { name: "emulated", on: "an emulated CSP", takes: &[SetsUp::Emulated, SetsUp::Devices] },
];

/// The name `--engine` takes for `v`.
fn engine_name(v: impl ValueEnum) -> String {
    v.to_possible_value().expect("no value is skipped").get_name().to_string()
}

/// The first option of `given` (given, its name, what it sets up) that the engine named
/// `engine` (one of `engines`, the command's in this `mode`, " --ec" or "") does not take, as a
/// usage error: it would be ignored. `verb`: what the command does there ("compresses").
fn refuse_untaken(given: &[(bool, &str, SetsUp)], engine: &str, mode: &str, verb: &str, engines: &[Engine]) -> Result<(), JobError> {
    let Some(e) = engines.iter().find(|e| e.name == engine) else { return Ok(()) };
    let Some((_, option, sets_up)) = given.iter().find(|(g, _, s)| *g && !e.takes.contains(s)) else { return Ok(()) };
    let others: Vec<&str> = engines.iter().filter(|o| o.takes.contains(sets_up)).map(|o| o.name).collect();
    let others = match others.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => unreachable!("every option is taken by some engine"),
    };
    Err(JobError::Usage(format!("{option} with{mode} --engine {engine}: it sets up {}, and --engine {engine} {verb} on {}: give --engine {others}, or drop it", sets_up.what(), e.on)))
}

/// compress's options that no engine given would use: a usage error naming the option, not
/// ignored (that of `--device-timeout` and `--inject-faults` are said where they are used).
fn refuse_unused_compress_options(a: &CompressArgs) -> Result<(), JobError> {
    if matches!(a.device_memory_from, Some(MemoryFrom::P2p(_))) && a.engine != EngineArg::Emulated {
        return Err(JobError::Usage("--device-memory-from p2p:BDF is the memory of emulated devices: use it with --engine emulated".into()));
    }
    let given = [
        (a.devices.is_some(), "--devices", SetsUp::Emulated),
        (a.device_memory.is_some(), "--device-memory", SetsUp::Devices),
        (a.device_memory_from.is_some(), "--device-memory-from", SetsUp::Emulated),
        (a.device_workers.is_some(), "--device-workers", SetsUp::Emulated),
        (a.gpu.is_some(), "--gpu", SetsUp::Gpu),
        (a.nvcomp.is_some(), "--nvcomp", SetsUp::Gpu),
        (a.gpu_algorithm.is_some(), "--gpu-algorithm", SetsUp::Gpu),
        (a.gpu_streams.is_some(), "--gpu-streams", SetsUp::Gpu),
        (a.gpu_staging.is_some(), "--gpu-staging", SetsUp::Gpu),
        (a.gpu_io.is_some(), "--gpu-io", SetsUp::Gpu),
        (a.gpu_memory_files.is_some(), "--gpu-memory-files", SetsUp::Gpu),
        (a.gpu_map_granule.is_some(), "--gpu-map-granule", SetsUp::Gpu),
        (a.gpu_chunk.is_some(), "--gpu-chunk", SetsUp::Gpu),
        (a.gpu_window.is_some(), "--gpu-window", SetsUp::Gpu),
        (a.gpu_batch.is_some(), "--gpu-batch", SetsUp::Gpu),
        (a.gpu_batch_wait.is_some(), "--gpu-batch-wait", SetsUp::Gpu),
    ];
    let (mode, engines) = if a.ec.is_some() { (" --ec", &COMPRESS_ENGINES[..3]) } else { ("", &COMPRESS_ENGINES[..]) };
    refuse_untaken(&given, &engine_name(a.engine), mode, "compresses", engines)?;
    if a.ec.is_some() && a.engine == EngineArg::Gpu {
        // The chain's GPU takes --gpu, --nvcomp and --gpu-algorithm; the rest set up the job's GPU.
        const CHAIN_GPU_TAKES: [&str; 3] = ["--gpu", "--nvcomp", "--gpu-algorithm"];
        if let Some((_, option, _)) = given.iter().find(|(g, name, s)| *g && *s == SetsUp::Gpu && !CHAIN_GPU_TAKES.contains(name)) {
            return Err(JobError::Usage(format!("{option} with --ec --engine gpu: the chain sets its GPU up itself (staged through its own memory, sized to what it holds): drop it")));
        }
    }
    let refused = [
        (a.sysfs.is_some() && !matches!(a.device_memory_from, Some(MemoryFrom::P2p(_))), "--sysfs is where --device-memory-from p2p:BDF is looked for: give that, or drop it"),
        (a.gpu_map_granule.is_some() && a.gpu_memory_files != Some(GpuMemoryFilesArg::Mapped), "--gpu-map-granule sizes what --gpu-memory-files mapped maps: give that, or drop it"),
        (a.gpu_batch_wait.is_some() && a.gpu_batch.unwrap_or(0) == 0, "--gpu-batch-wait is how long a worker waits to gather --gpu-batch, and with none given it waits for nothing: give --gpu-batch SIZE, or drop it"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, why)) => Err(JobError::Usage(why.to_string())),
        None => Ok(()),
    }
}

/// Where `compress` runs its function, and why the host CPU where `--engine auto` found no
/// device (a fallback the report says).
fn compute_choice(a: &CompressArgs) -> Result<(peerpath_runtime::Compute, Option<String>), JobError> {
    if a.inject_faults.is_some() && a.engine != EngineArg::Emulated {
        // Faults are injected into the emulated devices' queues; nowhere else would they be, silently.
        return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
    }
    let memory_from = a.device_memory_from.clone().unwrap_or(MemoryFrom::Shm(None));
    let sysfs = a.sysfs.clone().unwrap_or_else(|| PathBuf::from("/sys"));
    let memory_bytes = device_memory_bytes(a.device_memory, &memory_from)?;
    let emulated = || {
        let mut spec = peerpath_runtime::EmulatedSpec::new();
        spec.devices = a.devices.unwrap_or(1);
        spec.memory_bytes = memory_bytes;
        if let Some(w) = a.device_workers {
            spec.workers = w;
        }
        spec.faults = a.inject_faults.clone();
        if let Some(t) = a.device_timeout {
            spec.command_timeout = t;
        }
        match &memory_from {
            MemoryFrom::P2p(bdf) => spec.memory_from = peerpath_runtime::DeviceMemoryFrom::P2p { sysfs: sysfs.clone(), bdf: bdf.clone() },
            MemoryFrom::Shm(dir) => spec.memory_dir = dir.clone(),
        }
        peerpath_runtime::Compute::Emulated(Box::new(spec))
    };
    if matches!(memory_from, MemoryFrom::P2p(_)) {
        // A root that is not sysfs is the user's to fix (exit 13, as topo's): its devices did not
        // start, said as a fallback that named no option, and the job ran on the host CPU.
        p2p_devices_dir(&sysfs).map_err(JobError::Topology)?;
    }
    Ok(match a.engine {
        EngineArg::Cpu => (peerpath_runtime::Compute::Cpu, None),
        EngineArg::Emulated => (emulated(), None),
        EngineArg::Gpu => {
            let defaults = peerpath_runtime::GpuSpec::default();
            // Checked before it is made a Duration: a negative or NaN one panicked there.
            if let Some(ms) = a.gpu_batch_wait.filter(|ms| !(0.0..=1000.0).contains(ms)) {
                return Err(JobError::Usage(format!("--gpu-batch-wait {ms}: give 0 to 1000 milliseconds")));
            }
            let wait = a.gpu_batch_wait.map_or(defaults.gather.wait, |ms| std::time::Duration::from_secs_f64(ms / 1e3));
            let granule = a.gpu_map_granule.unwrap_or(peerpath_gpu::MAP_GRANULE_BYTES as usize);
            let map_memory_files = (a.gpu_memory_files == Some(GpuMemoryFilesArg::Mapped)).then_some(granule as u64);
            let staging = a.gpu_staging.unwrap_or(GpuStagingArg::Commands);
            if map_memory_files.is_some() && staging == GpuStagingArg::Device {
                return Err(JobError::Usage("--gpu-memory-files mapped: the GPU reads files into GPU memory of its own, which --gpu-staging device does not keep (use --gpu-staging commands)".into()));
            }
            if !(64 << 10..=64 << 30).contains(&granule) || !granule.is_multiple_of(4096) {
                return Err(JobError::Usage(format!("--gpu-map-granule {granule}: give 64K to 64G, a multiple of 4K")));
            }
            let gather = peerpath_gpu::Gather { bytes: a.gpu_batch.unwrap_or(0) as u64, wait };
            let mut spec = peerpath_runtime::GpuSpec {
                ordinal: a.gpu.unwrap_or(defaults.ordinal),
                algorithm: gpu_algorithm(a),
                nvcomp: a.nvcomp.clone(),
                streams: a.gpu_streams.map_or(defaults.streams, |s| s as usize),
                staging: staging.into(),
                io: match (a.gpu_io.unwrap_or(GpuIoArg::Auto), staging) {
                    // The device's own staging has no GPU memory apart from the window to read into.
                    (GpuIoArg::Auto, GpuStagingArg::Device) => peerpath_gpu::GpuIo::Staged,
                    (io, _) => io.into(),
                },
                window_bytes: a.gpu_window.unwrap_or(defaults.window_bytes),
                map_memory_files,
                gather,
                chunk_bytes: a.gpu_chunk.unwrap_or(defaults.chunk_bytes).max(1),
                ..defaults
            };
            if let Some(t) = a.device_timeout {
                spec.command_timeout = t;
            }
            if let Some(m) = a.device_memory {
                spec.memory_bytes = m;
            }
            (peerpath_runtime::Compute::Gpu(Box::new(spec)), None)
        }
        EngineArg::Auto => {
            // No driver for real CSP hardware exists yet: say so rather than guess.
            let csps = peerpath_topo::Topology::from_sysfs(Path::new("/sys"))
                .map(|t| t.devices.iter().filter(|d| d.kind == peerpath_topo::DeviceKind::Csp).count())
                .unwrap_or(0);
            let why = if csps == 0 {
                "no computational storage device in /sys".to_string()
            } else {
                format!("{} in /sys, but peerpath has no driver for real CSPs yet", peerpath_runtime::report::count(csps, "computational storage device"))
            };
            if a.no_fallback {
                return Err(JobError::Device { detail: format!("--engine auto: {why} (--no-fallback)") });
            }
            (peerpath_runtime::Compute::Cpu, Some(why))
        }
    })
}

fn run(cli: Cli) -> Result<(), JobError> {
    match cli.command {
        Command::Compress(a) => {
            if a.device_timeout.is_some() && a.engine == EngineArg::Cpu {
                return Err(crate::device_timeout_without_a_device());
            }
            refuse_unused_compress_options(&a)?;
            if let (FormatArg::Bgzf, Some(b)) = (a.format, a.block_size) {
                // Ignored, it left members of 65280 bytes where other sizes were asked for.
                return Err(JobError::Usage(format!("--block-size {b}: BGZF's blocks are always 65280 bytes (its format's limit): drop --block-size, or give --format gzip")));
            }
            let level = Level::new(a.level).map_err(JobError::Usage)?;
            let encrypt = compress_encryption(&a)?;
            if let Some((data, parity)) = a.ec {
                return compress_ec(&a, level, encrypt, (data, parity));
            }
            if !a.shard_dirs.is_empty() {
                return Err(JobError::Usage("--shard-dir places the shards of --ec K+M: give --ec".into()));
            }
            if a.ec_unit.is_some() {
                return Err(JobError::Usage("--ec-unit goes with --ec K+M: give --ec".into()));
            }
            let name = if encrypt.is_some() { encrypted_compressed_name } else { compressed_name };
            let (targets, made) = peerpath_runtime::plan_targets(&a.sources, a.output.as_deref(), name)?;
            a.key.refuse_as_target(targets.iter().map(PathBuf::as_path))?;
            let to_stdout = targets.iter().any(|t| t.as_os_str() == "-");
            if to_stdout && !a.target.force && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                // As gzip: binary on a terminal is never what was meant.
                return Err(JobError::Usage("compressed data is not written to a terminal: redirect standard output, or give --force".into()));
            }
            if to_stdout && encrypt.is_some() {
                return Err(JobError::Usage("--encrypt writes a file (its header, which holds the length, is written last): give --output FILE or DIR, not standard output".into()));
            }
            let (progress, bar) = progress_bar(&a.common, to_stdout);
            let mut common = common_options(&a.common, a.target.force, !a.target.no_sync, progress);
            let (mut compute, auto_on_cpu) = compute_choice(&a)?;
            if let (peerpath_runtime::Compute::Gpu(spec), None) = (&mut compute, a.common.queue_depth) {
                // A GPU is filled by big batches: each stream keeps 128 chunks in flight
                // (64: 1.31-1.37 GB/s, 128: 1.45-1.52, 256: 1.49-1.52 on 1.5 GiB in memory,
                // bench/results/2026-11-26-gpu-machine-4). Where the GPU does not start, the
                // CPU gets its usual depth.
                spec.cpu_queue_depth = Some(common.queue_depth);
                common.queue_depth = common.queue_depth.max(128);
            }
            let opts = CompressOptions {
                common,
                level,
                format: match a.format {
                    FormatArg::Gzip => Format::Gzip,
                    FormatArg::Bgzf => Format::Bgzf,
                },
                block_size: a.block_size.unwrap_or(DEFAULT_BLOCK_BYTES),
                compute,
                no_fallback: a.no_fallback,
                verify: a.verify,
                encrypt,
            };
            let pairs: Vec<(PathBuf, PathBuf)> = a.sources.iter().cloned().zip(targets).collect();
            let r = peerpath_runtime::compress(&pairs, &opts);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            let mut report = r?;
            made.keep();
            report.fallbacks.extend(auto_on_cpu.map(|why| peerpath_runtime::report::Fallback::AutoOnHostCpu { why }));
            emit(&report, &a.common, to_stdout);
            if a.explain {
                let text = match (&report.placement_explain, &opts.compute) {
                    (Some(t), _) => t.clone(),
                    (None, peerpath_runtime::Compute::Emulated(spec)) if spec.memory_from != peerpath_runtime::DeviceMemoryFrom::Shm => {
                        format!("Placement: not planned:\n{}\n", report.placement.join("\n"))
                    }
                    (None, peerpath_runtime::Compute::Emulated(_)) => "Placement: the emulated devices' memory is a shared-memory file, not on PCIe: every stream that can do O_DIRECT both ways runs on a device (the others on the CPU, in the fallbacks above).\n".into(),
                    (None, peerpath_runtime::Compute::Cpu) => "Placement: --engine cpu: every stream on the host CPU.\n".into(),
                    (None, peerpath_runtime::Compute::Gpu(_)) => "Placement: --engine gpu: every stream runs on the GPU, staged through its pinned host window (O_DIRECT where its files take it, else the kernel's copy through the page cache; no GPUDirect Storage path is driven yet); pipes and streams of unknown size on the CPU, in the fallbacks above.\n".into(),
                };
                if to_stdout { eprint!("{text}") } else { print!("{text}") }
            }
        }
        Command::Decompress(a) => {
            match a.ec {
                true => a.decode.check("gpu or emulated", &DECODE_ENGINES, " --ec")?,
                false => a.decode.check("gpu or emulated", &DECODE_ENGINES[..2], "")?,
            }
            if a.inject_faults.is_some() && !(a.ec && a.decode.engine == DecodeEngineArg::Emulated) {
                return Err(JobError::Usage("--inject-faults needs --ec --engine emulated".into()));
            }
            if a.ec {
                refuse_unused_chain_options(&a.common, &a.target)?;
                let (dir, output) = match (a.sources.as_slice(), a.output.as_deref()) {
                    ([d], Some(o)) if o.as_os_str() != "-" => (d, o),
                    _ => return Err(JobError::Usage("--ec takes one shard directory and --output FILE".into())),
                };
                ec::OpenSet::open(dir)?.refuse_as_target(output)?;
                a.key.refuse_as_target([output])?;
                // Before any work, on either engine (a directory was found only at the end).
                peerpath_runtime::job::check_new_target(output, a.target.force, peerpath_runtime::job::Writes::FileOnly)?;
                let key = crypt::optional_key(&a.key)?;
                let threads = a.common.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                let mut fallbacks = Vec::new();
                if a.decode.engine != DecodeEngineArg::Cpu {
                    let (set, _) = ec::load(dir)?;
                    let (k, m, unit, _, _) = set.shape();
                    // A GPU runs one stream: members in flight past a few only cost memory (each
                    // slot is 128 MiB of GPU memory and as much pinned), so at most 8.
                    let workers = if a.decode.engine == DecodeEngineArg::Gpu { threads.min(8) } else { threads };
                    let started = match a.decode.engine {
                        DecodeEngineArg::Gpu => chain_device::start_decode_gpu(k, m, unit, workers, a.decode.gpu.unwrap_or(0), a.decode.nvcomp.clone(), a.decode.device_timeout),
                        _ => chain_device::start_decode(k, m, unit, workers, a.inject_faults.clone(), a.decode.device_timeout),
                    };
                    let (why, then) = match started {
                        Ok(mut dev) => match chain_device::decompress_ec(dev.as_mut(), dir, output, key.clone(), a.target.force, workers, !a.decode.allow_no_end_member, !a.common.no_direct) {
                            Ok(report) => {
                                report.print(a.common.json, a.common.quiet, a.common.verbose);
                                return Ok(());
                            }
                            Err(chain_device::Stop::Job(e)) => return Err(e),
                            Err(chain_device::Stop::Device(why)) => (why, "; the set is decoded on the host CPU from the start (nothing the device wrote is kept)"),
                            Err(chain_device::Stop::Verdict(why)) if a.decode.no_fallback => {
                                return Err(JobError::Damaged { path: dir.to_path_buf(), detail: format!("{why} (the device's verdict: --no-fallback leaves the host CPU no part, so it was not checked there); nothing was kept") });
                            }
                            Err(chain_device::Stop::Verdict(why)) => (format!("the device says {why}"), "; the set is decoded on the host CPU from the start to check it (nothing the device wrote is kept)"),
                        },
                        Err(why) => (why, ": the set is decoded on the host CPU"),
                    };
                    if a.decode.no_fallback {
                        return Err(JobError::Device { detail: format!("{why} (--no-fallback: nothing was kept)") });
                    }
                    eprintln!("peerpath: FALLBACK: {why}{then}");
                    fallbacks.push(format!("{why}{then}"));
                }
                let mut report = chain::decompress_ec(dir, output, key, a.target.force, threads, !a.decode.allow_no_end_member)?;
                report.run.fallbacks = fallbacks;
                report.print(a.common.json, a.common.quiet, a.common.verbose);
                return Ok(());
            }
            let (targets, made) = peerpath_runtime::plan_targets(&a.sources, a.output.as_deref(), decompressed_name)?;
            a.key.refuse_as_target(targets.iter().map(PathBuf::as_path))?;
            let to_stdout = targets.iter().any(|t| t.as_os_str() == "-");
            let (progress, bar) = progress_bar(&a.common, to_stdout);
            let opts = a.decode.options(common_options(&a.common, a.target.force, !a.target.no_sync, progress), a.common.threads.is_some(), crypt::optional_key(&a.key)?)?;
            let pairs: Vec<(PathBuf, PathBuf)> = a.sources.iter().cloned().zip(targets).collect();
            let r = peerpath_runtime::decompress(&pairs, &opts);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            emit(&r?, &a.common, to_stdout);
            made.keep();
        }
        Command::Verify(a) => {
            a.decode.check("gpu", &DECODE_ENGINES[..2], "")?;
            let (progress, bar) = progress_bar(&a.common, false);
            let opts = a.decode.options(common_options(&a.common, false, true, progress), a.common.threads.is_some(), crypt::optional_key(&a.key)?)?;
            let r = peerpath_runtime::verify_each(&a.sources, &opts);
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            // As `gzip -t`: every source checked, each bad one named (in the
            // report too); the last error is printed last and gives the exit code.
            let (report, mut failed) = r?;
            emit(&report, &a.common, false);
            if let Some(last) = failed.pop() {
                failed.iter().for_each(|e| eprintln!("peerpath: error: {e}"));
                return Err(last);
            }
            if !a.common.quiet && !a.common.json {
                println!("OK: {}, {}, all CRC-32 and lengths match", peerpath_runtime::report::count(report.files.len(), "file"), peerpath_runtime::report::count(report.files.iter().map(|f| f.members).sum::<u64>(), "member"));
            }
        }
        Command::Demo(a) => demo::run(a.workdir, a.force, a.json, a.threads)?,
        Command::Topo(_) => unreachable!("handled in main"),
        Command::Plan(_) => unreachable!("handled in main"),
        Command::Csp(_) => unreachable!("handled in main"),
        Command::Probe(_) | Command::BenchIo(_) | Command::Sim(_) | Command::BenchOffload(_) | Command::Gpu(_) | Command::Gzip(_) | Command::Completions { .. } | Command::Man { .. } | Command::Ec(_) | Command::Encrypt(_) | Command::Decrypt(_) | Command::Keygen(_) | Command::Dedup(_) | Command::Scan(_) | Command::Serve(_) | Command::BenchKv(_) | Command::NicServe(_) | Command::Daemon(_) => {
            unreachable!("handled in main")
        }
    }
    Ok(())
}

/// A terminating signal (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM,
/// SIGUSR1, SIGUSR2) removes the named temporary files of the outputs in progress before the process
/// dies of it (an unnamed `O_TMPFILE` output needs nothing: it vanishes
/// with the process, SIGKILL included). The handler only queues the signal;
/// this thread does the removing, then lets the signal's default action
/// end the process, so the exit status still says which signal it was.
/// A signal ignored when peerpath started (`nohup`, a script's background
/// job) stays ignored. SIGXFSZ (a write past `ulimit -f`) is ignored: the
/// write fails with EFBIG, which is exit 11 with the reason and nothing
/// kept, where the signal killed the process with no word.
///
/// A signal that comes once the job's outputs are complete and in place ends
/// the process all the same, as it ends cp, mv and gzip (its status says the
/// signal, so a shell loop stops at ^C), and they stay: that is said on
/// standard error first, naming them, since the status alone says nothing of them;
/// so are the existing targets `--force` replaced, also where the signal came earlier
/// ([`left_at_signal_note`]).
fn remove_temporaries_on_signals() {
    use signal_hook::consts::{SIGALRM, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    // SAFETY: sets one signal's disposition to SIG_IGN before any other thread runs.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let caught: Vec<i32> = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2].into_iter().filter(|&s| !peerpath_io::signal_ignored(s)).collect();
    let Ok(mut signals) = signal_hook::iterator::Signals::new(caught) else { return };
    let _ = std::thread::Builder::new().name("peerpath-signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            let (kept, replaced) = peerpath_runtime::job::left_at_signal();
            let name = signal_hook::low_level::signal_name(sig).map_or_else(|| format!("signal {sig}"), str::to_string);
            // The job server's log says it stops, and the job it cuts off: that job's outputs are
            // its client's to speak of.
            if JOBS_IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
                daemon::stopped_by_signal(&name);
            } else if let Some(note) = left_at_signal_note(&name, &kept, &replaced) {
                // Not eprintln!: it panics where standard error is closed.
                let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("{note}\n"));
            }
            // Last, once it is said: what is in flight can no longer lay out a file given empty.
            peerpath_io::empty_laid_out_files_before_exit();
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
}

/// What a process dying of signal `name` says of the outputs that stay: those its jobs
/// committed (the first few named), and every existing target `--force` replaced, which keeps
/// its new output also where the signal came before its job's last output was in place (those
/// under new names are removed then): the old file is gone, and nothing else would say so.
/// `None` where nothing stays.
fn left_at_signal_note(name: &str, kept: &peerpath_io::Committed, replaced: &[PathBuf]) -> Option<String> {
    use peerpath_runtime::job::{kept_after_replacing, replaced_files};
    let names = |paths: &[PathBuf]| paths.iter().map(|p| Quoted(p).to_string()).collect::<Vec<_>>().join(", ");
    Some(match (kept.outputs, replaced.is_empty()) {
        (0, true) => return None,
        (0, false) => format!("peerpath: {name} came before the outputs were all in place: {}", kept_after_replacing(replaced)),
        (n, _) => {
            let more = match n.saturating_sub(kept.first.len()) {
                0 => String::new(),
                more => format!(" and {more} more"),
            };
            let said = match n {
                1 => format!("{} was complete and in place: it stays", names(&kept.first)),
                n => format!("{n} outputs were complete and in place: they stay ({}{more})", names(&kept.first)),
            };
            let replaced_said = if replaced.is_empty() { String::new() } else { format!("; --force replaced {}", replaced_files(replaced)) };
            format!("peerpath: {name} came once {said}{replaced_said}")
        }
    })
}

/// Standard output that cannot be written (a full disk, a closed pipe)
/// makes `println!` panic; every report and listing prints with it. This
/// hook turns that panic into what the exit-code table says: exit 11 with
/// the reason (a broken pipe: quiet, 141, as a program killed by SIGPIPE,
/// which this process ignores so that its sockets do not kill it), named
/// temporaries removed first. Every other panic keeps the default hook.
fn exit_on_unwritable_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let Some(why) = stdout_failure(info.payload()) else {
            default(info);
            // The process ends with this panic (exit 101): the named temporaries of its outputs go
            // first (they stayed). Only the main thread's (a worker's panic reaches it when
            // joined, or is caught), and not the job server's; not the `_before_exit` form,
            // which keeps the registry locked for the unwinding drops that still use it.
            if !JOBS_IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed) && std::thread::current().name() == Some("main") {
                peerpath_io::remove_named_temporaries();
            }
            return;
        };
        if JOBS_IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
            return; // the daemon's job: unwinds to its catch, which says it (`unwritable_stdout_code`)
        }
        peerpath_io::remove_named_temporaries_before_exit();
        let code = unwritable_stdout_code(why);
        peerpath_io::empty_laid_out_files_before_exit();
        std::process::exit(code.into());
    }));
}

/// Set by the job server, whose jobs run in its process with their
/// client's streams: a job that cannot print ends that job, not the server.
pub(crate) static JOBS_IN_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The reason, where `payload` is the panic of a print to standard output that failed.
pub(crate) fn stdout_failure(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    let message = payload.downcast_ref::<String>().map(String::as_str).or_else(|| payload.downcast_ref::<&str>().copied())?;
    message.strip_prefix("failed printing to stdout: ")
}

/// The exit code for standard output that failed with `why`, said on
/// standard error (a broken pipe quietly).
pub(crate) fn unwritable_stdout_code(why: &str) -> u8 {
    if why.starts_with("Broken pipe") {
        return 141;
    }
    // The job server's own standard output is not its jobs' (they write their clients').
    let why = STDOUT_UNUSABLE.get().copied().filter(|_| !JOBS_IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed)).unwrap_or(why);
    eprintln!("peerpath: error: cannot write standard output: {why}");
    11
}

/// Standard streams that were closed when the process started (bit n: descriptor n), seen
/// before Rust's runtime opens /dev/null in their place (which it does so that no file opened
/// later takes descriptor 1 and receives the reports), and which then would swallow every byte.
static CLOSED_AT_START: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

extern "C" fn note_closed_standard_streams() {
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) only reads the descriptor's flags; no memory is passed.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            CLOSED_AT_START.fetch_or(1 << fd, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

// Run by the loader before `main` and before Rust's runtime sanitises descriptors 0-2: the
// only moment a closed standard output can be told from /dev/null. (A constructor is a few
// lines; the `ctor` crate would be a dependency for them.)
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STANDARD_STREAMS: extern "C" fn() = note_closed_standard_streams;

/// Why standard output cannot take bytes, where it cannot (closed, `>&-`, or open only for
/// reading, `1<file`): set once at start, said by every failure to write it.
static STDOUT_UNUSABLE: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
/// Why standard input gives no bytes, where it was closed (`<&-`; the runtime's /dev/null
/// would read as an empty input, and `gzip <&- > x.gz` make an empty archive, exit 0).
static STDIN_CLOSED: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Standard output that cannot take bytes is made to refuse them loudly. Both kinds write with
/// EBADF, which Rust's `println!` takes for success (a report would vanish, exit 0) and so would
/// the data of `-o -` through /dev/null; descriptor 1 becomes an epoll instance, which every
/// write(2) refuses (EINVAL), so a report fails as a full disk does (exit 11) and so does data,
/// both saying why.
fn refuse_writes_to_unusable_stdout() {
    let closed_at_start = CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed);
    // Standard input closed: reads fail the same way (EINVAL), said as such.
    if closed_at_start & 1 != 0 {
        if let Ok(refuses) = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC) {
            if rustix::stdio::dup2_stdin(&refuses).is_ok() {
                let _ = STDIN_CLOSED.set("it was closed when peerpath started (<&-)");
            }
        }
    }
    let closed = closed_at_start & 2 != 0;
    let read_only = || rustix::fs::fcntl_getfl(std::io::stdout()).is_ok_and(|f| f & rustix::fs::OFlags::ACCMODE == rustix::fs::OFlags::RDONLY);
    let why = if closed {
        "it was closed when peerpath started (>&-)"
    } else if read_only() {
        "it is open only for reading"
    } else {
        return;
    };
    let refuses = match rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC) {
        Ok(fd) => fd,
        Err(_) => return,
    };
    if rustix::stdio::dup2_stdout(&refuses).is_ok() {
        let _ = STDOUT_UNUSABLE.set(why);
    }
}

/// Why a standard stream this process was given cannot be used, where one cannot: a job with
/// such streams runs here (where it fails saying so), not in a job server, which would get an
/// epoll instance for a stream.
pub(crate) fn unusable_standard_stream() -> Option<&'static str> {
    STDOUT_UNUSABLE.get().or(STDIN_CLOSED.get()).copied()
}

/// A file's name in a JSON report: its string, as `Path::display` writes it (U+FFFD for bytes that
/// are not UTF-8); the text reports print it with [`Quoted`].
pub(crate) fn serialize_name<S: serde::Serializer>(name: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&name.display())
}

/// A job's error in words: a write to standard output that it refuses says why (see
/// [`refuse_writes_to_unusable_stdout`]) rather than the kernel's EINVAL.
pub(crate) fn job_error_text(e: &JobError) -> String {
    if JOBS_IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        return e.to_string(); // the job server's own streams are not its jobs'
    }
    match (e, STDOUT_UNUSABLE.get(), STDIN_CLOSED.get()) {
        (JobError::TargetIo { path, .. }, Some(why), _) if peerpath_runtime::job::is_std_stream(path) => format!("cannot write standard output: {why}"),
        (JobError::SourceIo { path, .. } | JobError::SourceUnreadable { path, .. }, _, Some(why)) if peerpath_runtime::job::is_std_stream(path) => {
            format!("cannot read standard input: {why}")
        }
        _ => e.to_string(),
    }
}

/// Writes `bytes` to standard output, with the exit codes of
/// [`exit_on_unwritable_stdout`].
fn print_whole(bytes: &[u8]) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().write_all(bytes).and_then(|()| std::io::stdout().flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => ExitCode::from(unwritable_stdout_code(&e.to_string())),
    }
}

fn main() -> ExitCode {
    exit_on_unwritable_stdout();
    refuse_writes_to_unusable_stdout();
    // gzip's grammar is not clap's: `peerpath gzip ...` and `ppgz ...` go to it before clap.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let gzip_args = if argv.first().and_then(|a| Path::new(a).file_name()).is_some_and(|n| n == "ppgz") {
        Some(&argv[1..])
    } else if argv.get(1).is_some_and(|a| a == "gzip") {
        Some(&argv[2..])
    } else {
        None
    };
    if let Some(args) = gzip_args {
        remove_temporaries_on_signals();
        peerpath_runtime::job::name_replaced_targets();
        return gz::main(args);
    }
    let cli = Cli::parse();
    // A job server's client: the job runs in the daemon, or here with the reason said.
    if let Some(socket) = std::env::var_os(daemon::ENV).filter(|s| !s.is_empty()) {
        let no_fallback = match &cli.command {
            Command::Compress(a) => a.no_fallback,
            Command::Decompress(a) => a.decode.no_fallback,
            Command::Verify(a) => a.decode.no_fallback,
            _ => false,
        };
        let socket = Path::new(&socket);
        let code = match daemon::runs_in_daemon(&cli.command) {
            Some(Ok(())) => match unusable_standard_stream() {
                // The job runs here, where a write to that stream fails saying why.
                Some(why) => daemon::not_here(socket, &format!("a standard stream of this process cannot be used ({why})"), no_fallback),
                None => daemon::forward(socket, no_fallback),
            },
            Some(Err(why)) => daemon::not_here(socket, why, no_fallback),
            None => None,
        };
        if let Some(code) = code {
            return code;
        }
    }
    // Every command but `csp serve`, `serve` and `bench-kv` (which handle
    // their own signals; they write no files), before any of them runs: one
    // that writes must not be able to skip it.
    if !matches!(cli.command, Command::Csp(_) | Command::Serve(_) | Command::BenchKv(_)) {
        remove_temporaries_on_signals();
    }
    // Not a job server's: it runs for long, and its signal names no outputs.
    if !matches!(cli.command, Command::Daemon(_)) {
        peerpath_runtime::job::name_replaced_targets();
    }
    if let Command::Plan(a) = cli.command {
        return plan::main(a);
    }
    if let Command::Csp(a) = cli.command {
        return csp::main(a);
    }
    if let Command::Daemon(a) = cli.command {
        return daemon::main(a);
    }
    if let Command::Probe(a) = cli.command {
        return probe::main(a);
    }
    if let Command::BenchIo(a) = cli.command {
        return iobench::main(a);
    }
    if let Command::Sim(a) = cli.command {
        return sim::run(a);
    }
    if let Command::BenchOffload(a) = cli.command {
        return table1::main(a);
    }
    if let Command::Gpu(a) = cli.command {
        return gpu::main(a);
    }
    if let Command::Completions { shell } = cli.command {
        // Made in memory first: clap_complete panics on a failed write.
        let mut script = Vec::new();
        // Hidden commands (peerpath's own, such as nic-serve) are not offered: clap_complete
        // would (clap-rs/clap#1335), so the script is made from the visible ones alone.
        let root = <Cli as clap::CommandFactory>::command();
        let visible: Vec<clap::Command> = root.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
        let mut shown = clap::Command::new("peerpath").version(env!("CARGO_PKG_VERSION")).args(root.get_arguments().filter(|a| !a.is_hide_set()).cloned()).subcommands(visible);
        clap_complete::generate(shell, &mut shown, "peerpath", &mut script);
        return print_whole(&script);
    }
    if let Command::Ec(a) = cli.command {
        return ec::main(a);
    }
    match cli.command {
        Command::Encrypt(a) => return crypt::encrypt(a),
        Command::Decrypt(a) => return crypt::decrypt(a),
        Command::Keygen(a) => return crypt::keygen(a),
        Command::Dedup(a) => return dedup::main(a),
        Command::Scan(a) => return scan::main(a),
        Command::Serve(a) => return serve::main(a),
        Command::BenchKv(a) => return serve::bench_kv(a),
        Command::NicServe(a) => return serve::nic_serve(a),
        _ => {}
    }
    if let Command::Man { command, dir } = cli.command {
        return man(&command, dir.as_deref());
    }
    if let Command::Topo(a) = cli.command {
        return exit_code(topo(a));
    }
    exit_code(run(cli))
}

/// `peerpath man`: the page of peerpath or of the command `path` names, or every page into `dir`.
fn man(path: &[String], dir: Option<&Path>) -> ExitCode {
    let mut root = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    root.build(); // subcommands take their full names: peerpath-ec-encode
    let render = |cmd: &clap::Command| {
        let mut page = Vec::new();
        // The source line names peerpath and its version (a subcommand has none of its own).
        clap_mangen::Man::new(cmd.clone()).source(format!("peerpath {}", env!("CARGO_PKG_VERSION"))).render(&mut page).expect("writing to memory does not fail");
        roff_fixed(page)
    };
    if let Some(dir) = dir {
        fn every(cmd: &clap::Command, out: &mut Vec<clap::Command>) {
            out.push(cmd.clone());
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                every(sub, out);
            }
        }
        let mut cmds = Vec::new();
        every(&root, &mut cmds);
        let written = std::fs::create_dir_all(dir).map_err(|source| JobError::TargetIo { path: dir.to_path_buf(), source });
        let written = written.and_then(|()| cmds.iter().try_for_each(|c| write_output(&dir.join(format!("{}.1", c.get_display_name().unwrap_or(c.get_name()))), &render(c), true)));
        return exit_code(written);
    }
    let mut cmd = &root;
    for name in path {
        match cmd.find_subcommand(name) {
            Some(sub) => cmd = sub,
            None => {
                let known: Vec<&str> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| s.get_name()).collect();
                return exit_code(Err(JobError::Usage(format!("man {}: no such command (it has: {})", path.join(" "), known.join(", ")))));
            }
        }
    }
    print_whole(&render(cmd))
}

/// A rendered page as it should print: hyphenation off (`.nh` after `.TH`: an option name split
/// at a line's end, `--de-` / `vice-memory-from`, cannot be typed as shown), and the EXTRA
/// section (a command's own text after its options, such as `peerpath gzip`'s table of gzip's
/// options) set as written, not refilled into one paragraph (`.nf`).
fn roff_fixed(page: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8(page).expect("clap_mangen writes UTF-8");
    let mut out = String::with_capacity(text.len() + 16);
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with(".TH ") {
            out.push_str(".nh\n");
        }
        if line == ".SH EXTRA" {
            out.push_str(".nf\n");
        }
    }
    out.into_bytes()
}

/// A command's result as the process's exit: the error on standard error and its code.
pub(crate) fn exit_code(r: Result<(), JobError>) -> ExitCode {
    ExitCode::from(say_error(r))
}

/// Whether `e` is `-o -` into a pipe whose reader has gone (`| head`):
/// exit 141, quietly, as gzip killed by SIGPIPE.
pub(crate) fn reader_gone(e: &JobError) -> bool {
    matches!(e, JobError::TargetIo { path, source } if peerpath_runtime::job::is_std_stream(path) && source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A command's exit code, its error said on standard error.
pub(crate) fn say_error(r: Result<(), JobError>) -> u8 {
    match r {
        Ok(()) => 0,
        Err(e) if reader_gone(&e) => 141,
        Err(e) => {
            eprintln!("peerpath: error: {}", job_error_text(&e));
            e.exit_code() as u8
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("M").is_err());
    }

    /// The bound on device memory is the machine's only where the memory is the machine's: P2P
    /// memory (a CMB) may be asked for in any size on a small machine (the VM has 493 MiB), and
    /// the default fits a machine smaller than 512 MiB.
    #[test]
    fn device_memory_is_bounded_by_the_machine_only_when_it_is_host_memory() {
        let total = machine_memory_bytes().expect("/proc/meminfo has MemTotal");
        let shm = MemoryFrom::Shm(None);
        let p2p = MemoryFrom::P2p("0000:03:00.0".into());
        let huge = total * 2;
        assert!(matches!(device_memory_bytes(Some(huge), &shm), Err(JobError::Usage(_))));
        assert_eq!(device_memory_bytes(Some(huge), &p2p).unwrap(), huge);
        assert_eq!(device_memory_bytes(None, &p2p).unwrap(), DEFAULT_DEVICE_MEMORY_BYTES);
        let default = device_memory_bytes(None, &shm).unwrap();
        assert!(default <= DEFAULT_DEVICE_MEMORY_BYTES && default <= total / 2 + MIN_DEVICE_MEMORY_BYTES);
        assert!(parse_device_memory("3M").is_err());
        assert_eq!(parse_device_memory("1000000G"), Ok(1_000_000 << 30));
    }

    #[test]
    fn device_timeouts_are_seconds_within_bounds() {
        assert_eq!(parse_device_timeout("0.5"), Ok(std::time::Duration::from_millis(500)));
        assert_eq!(parse_device_timeout("30"), Ok(std::time::Duration::from_secs(30)));
        for bad in ["0", "0.01", "3601", "-1", "NaN", "inf", "10s", ""] {
            assert!(parse_device_timeout(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn decompressed_names_strip_known_suffixes() {
        assert_eq!(decompressed_name(Path::new("a/b.fa.gz")).unwrap(), PathBuf::from("a/b.fa"));
        assert_eq!(decompressed_name(Path::new("x.tgz")).unwrap(), PathBuf::from("x.tar"));
        assert!(decompressed_name(Path::new("x.txt")).is_err());
        assert!(decompressed_name(Path::new(".gz")).is_err());
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"caf\xe9\xff\xfe.fa.gz"));
        assert_eq!(decompressed_name(odd).unwrap().as_os_str().as_bytes(), b"caf\xe9\xff\xfe.fa", "not UTF-8: kept byte for byte");
    }

    /// A signal's note names every existing target `--force` replaced, quoted as the reports quote
    /// names, past the first few outputs it names, and also where the signal came before the job's
    /// last output was in place (those under new names removed): it said nothing of them, and a
    /// name with a newline split its line.
    #[test]
    fn a_signals_note_names_every_target_force_replaced() {
        let p = PathBuf::from;
        let kept = peerpath_io::Committed { outputs: 5, first: vec![p("a.gz"), p("b.gz"), p("c.gz")] };
        assert_eq!(
            left_at_signal_note("SIGTERM", &kept, &[p("b.gz"), p("d\ne.gz")]).unwrap(),
            "peerpath: SIGTERM came once 5 outputs were complete and in place: they stay (a.gz, b.gz, c.gz and 2 more); --force replaced 2 existing files: b.gz, 'd'$'\\n''e.gz'"
        );
        let one = peerpath_io::Committed { outputs: 1, first: vec![p("x.gz")] };
        assert_eq!(left_at_signal_note("SIGINT", &one, &[]).unwrap(), "peerpath: SIGINT came once x.gz was complete and in place: it stays");
        assert_eq!(left_at_signal_note("SIGINT", &one, &[p("x.gz")]).unwrap(), "peerpath: SIGINT came once x.gz was complete and in place: it stays; --force replaced the existing file x.gz");
        let none = peerpath_io::Committed::default();
        assert_eq!(left_at_signal_note("SIGINT", &none, &[]), None);
        assert_eq!(
            left_at_signal_note("SIGTERM", &none, &[p("x.gz")]).unwrap(),
            "peerpath: SIGTERM came before the outputs were all in place: the outputs under new names were removed, but --force had already replaced the existing file x.gz, and it keeps its new output"
        );
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
