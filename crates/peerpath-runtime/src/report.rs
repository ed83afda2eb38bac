//! The job report: one structure, printed as a table or as JSON. A leaf of
//! the runtime: the jobs fill it, nothing here knows how they run.

use peerpath_io::IoPath;
use peerpath_metrics::{human_bytes_exact, CpuSummary, LedgerSummary};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The exact bytes of a file's name that is not UTF-8, for the reports' `*_bytes` fields: the
/// name's string has U+FFFD in their place, which loses them (two names can read the same).
pub fn name_bytes(path: &Path) -> Option<Vec<u8>> {
    path.to_str().is_none().then(|| path.as_os_str().as_bytes().to_vec())
}

/// A file's name as the text reports print it: unchanged, unless it holds a control character
/// (a newline in it would split the report's line) or begins as a quoted name does (`'`, `$'`);
/// then shell-quoted, as GNU `ls` quotes (its `shell-escape` style): `'a'$'\n''b'`, which a shell
/// reads back as the name. JSON needs none of this: its strings escape every control character.
pub fn quoted_name(name: &str) -> Cow<'_, str> {
    quoted_bytes(name.as_bytes())
}

/// [`quoted_name`] of a name's exact bytes: those that are not UTF-8 are quoted too (`$'\377'`).
pub fn quoted_bytes(name: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(name) {
        Ok(s) if !s.contains(char::is_control) && !s.starts_with('\'') && !s.starts_with("$'") => return Cow::Borrowed(s),
        _ => {}
    }
    let mut q = Quoting { text: String::with_capacity(name.len() + 8), open: Quotes::None };
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' => q.put(Quotes::None, "\\'"),
                '\n' => q.put(Quotes::Escapes, "\\n"),
                '\t' => q.put(Quotes::Escapes, "\\t"),
                '\r' => q.put(Quotes::Escapes, "\\r"),
                c if c.is_control() => c.encode_utf8(&mut [0; 4]).bytes().for_each(|b| q.put(Quotes::Escapes, format_args!("\\{b:03o}"))),
                c => q.put(Quotes::Plain, c),
            }
        }
        chunk.invalid().iter().for_each(|b| q.put(Quotes::Escapes, format_args!("\\{b:03o}")));
    }
    q.put(Quotes::None, "");
    Cow::Owned(q.text)
}

pub use peerpath_metrics::count;

/// A path as the text reports and messages print it: [`quoted_bytes`] of its exact bytes, so a
/// name with a newline stays on its line and one that is not UTF-8 keeps its bytes (`$'\377'`).
/// Plain names print as `Path::display` prints them.
pub struct Quoted<'a>(pub &'a Path);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&quoted_bytes(self.0.as_os_str().as_bytes()))
    }
}

/// An argument as a command line that a reader pastes into a shell prints it (a hint such as
/// "`peerpath ec repair DIR`", a job in the daemon's log): one word that `sh`/`bash` reads back
/// as exactly these bytes. Quoted as names are ([`quoted_bytes`]: a newline stays on its line,
/// bytes that are not UTF-8 are written in `$'...'` with octal escapes, `$'\377'`, as GNU `ls`
/// writes them and as bash, zsh and ksh read them), and in `'...'` where it is empty or holds a
/// space or a character a shell reads apart or expands (`$`, `` ` ``, `*`, quotes, ...), which
/// [`quoted_bytes`] leaves as they are: a message may print `my file`, a command may not.
pub fn shell_word(arg: &[u8]) -> Cow<'_, str> {
    match quoted_bytes(arg) {
        Cow::Borrowed(s) if s.is_empty() || s.contains(|c: char| c.is_whitespace() || "\"#$&'()*;<>?[\\]^`{|}~!".contains(c)) => Cow::Owned(format!("'{}'", s.replace('\'', r"'\''"))),
        quoted => quoted,
    }
}

/// A path as a printed command line holds it: [`shell_word`] of its exact bytes, after `./`
/// where it starts with `-` (which the command would read as an option). Messages that are not
/// commands print names with [`Quoted`], which leaves spaces and `$` as they are.
pub struct ShellWord<'a>(pub &'a Path);

impl fmt::Display for ShellWord<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0.as_os_str().as_bytes();
        match bytes.first() {
            Some(b'-') => f.pad(&shell_word(&[b"./", bytes].concat())),
            _ => f.pad(&shell_word(bytes)),
        }
    }
}

/// A name as the text reports print it, from its exact bytes where the report keeps them.
pub fn quoted_exact<'a>(name: &'a str, exact: Option<&'a [u8]>) -> Cow<'a, str> {
    quoted_bytes(exact.unwrap_or(name.as_bytes()))
}

/// The quotes open in a [`quoted_name`]: none, `'...'` or `$'...'`.
#[derive(PartialEq)]
enum Quotes {
    None,
    Plain,
    Escapes,
}

struct Quoting {
    text: String,
    open: Quotes,
}

impl Quoting {
    /// `piece`, inside the quotes it needs (closing those open before).
    fn put(&mut self, quotes: Quotes, piece: impl fmt::Display) {
        if quotes != self.open {
            if self.open != Quotes::None {
                self.text.push('\'');
            }
            self.text.push_str(match quotes {
                Quotes::None => "",
                Quotes::Plain => "'",
                Quotes::Escapes => "$'",
            });
            self.open = quotes;
        }
        let _ = write!(self.text, "{piece}");
    }
}

/// What a job did.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Compress,
    Decompress,
    Verify,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Compress => "compress",
            Operation::Decompress => "decompress",
            Operation::Verify => "verify",
        })
    }
}

/// How a file's members were decoded (serialised as its text).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(into = "String")]
pub enum DecodeMode {
    /// Every member declared its size: split without inflating, decoded on `threads`.
    Parallel { members: u64, threads: usize },
    /// A pipe: read in order, decoded on one thread.
    StreamingPipe,
    /// On one thread from the start, and why.
    Streaming { why: &'static str },
    /// In parallel for `members`, then on one thread from byte `from`, and why.
    ParallelThenStreaming { members: u64, from: u64, why: &'static str },
}

impl DecodeMode {
    /// Whether one thread decoded the whole file (listed as a fallback; a
    /// file that switched midway says so in its decode line).
    pub fn is_streaming(&self) -> bool {
        matches!(self, DecodeMode::StreamingPipe | DecodeMode::Streaming { .. })
    }
}

impl fmt::Display for DecodeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeMode::Parallel { members, threads } => write!(f, "parallel: {} with declared sizes, on {}", count(*members, "member"), count(*threads, "thread")),
            DecodeMode::StreamingPipe => f.write_str("streaming: the source is a pipe"),
            DecodeMode::Streaming { why } => write!(f, "streaming on one thread: {why}"),
            DecodeMode::ParallelThenStreaming { members, from, why } => {
                write!(f, "parallel for {}, then streaming on one thread from byte {from}: {why}", count(*members, "member"))
            }
        }
    }
}

impl From<DecodeMode> for String {
    fn from(m: DecodeMode) -> String {
        m.to_string()
    }
}

/// A fallback the job took, with its reason: never silent. Reports print
/// (and serialise) each as one line of text, naming its file by its exact bytes ([`Quoted`]);
/// JSON adds them where they are not UTF-8 ([`JobReport::fallbacks`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "String")]
pub enum Fallback {
    /// The I/O engine is not the one asked for.
    IoEngine { why: String },
    /// A source read without O_DIRECT.
    ReadsNotDirect { source: PathBuf, why: String },
    /// A target written without O_DIRECT.
    WritesNotDirect { target: PathBuf, why: String },
    /// A source compressed on the host CPU instead of a device, before any device ran it.
    HostCpuNotDevice { source: PathBuf, why: String },
    /// Fewer devices than asked for.
    FewerDevices { asked: usize, started: usize },
    /// A device that did not start; its sources ran on the host CPU.
    DeviceNotStarted { device: String, why: String },
    /// A device that failed mid-job; the host CPU compressed the source from `from` on
    /// (`kept`: output bytes from the device that were kept).
    DeviceFailed { source: PathBuf, device: String, why: String, from: u64, kept: u64 },
    /// Members decoded on one thread.
    StreamingDecode { source: PathBuf, mode: DecodeMode },
    /// Members a device was to decode that the host CPU decoded.
    DecodedOnCpu { device: String, why: String, members: u64 },
    /// The job server asked for (`PEERPATH_DAEMON`) did not run the job: this process did.
    NotInDaemon { why: String },
    /// `--engine auto` found no device to drive: every source ran on the host CPU.
    AutoOnHostCpu { why: String },
}

impl Fallback {
    /// The file it names, if it names one.
    fn file(&self) -> Option<&Path> {
        match self {
            Fallback::ReadsNotDirect { source, .. } | Fallback::HostCpuNotDevice { source, .. } | Fallback::DeviceFailed { source, .. } | Fallback::StreamingDecode { source, .. } => {
                Some(source)
            }
            Fallback::WritesNotDirect { target, .. } => Some(target),
            _ => None,
        }
    }

    /// Whether work a device (or the job server) was to do fell to this process's host CPU, as
    /// opposed to a note on how bytes moved (no O_DIRECT on tmpfs, plain syscalls for a pipe) or
    /// on one-thread decoding: what `-q` still says on stderr.
    pub fn moves_work_to_the_host_cpu(&self) -> bool {
        matches!(
            self,
            // Not FewerDevices: every source still has a device (one each), no work moved.
            Fallback::HostCpuNotDevice { .. }
                | Fallback::DeviceNotStarted { .. }
                | Fallback::DeviceFailed { .. }
                | Fallback::DecodedOnCpu { .. }
                | Fallback::AutoOnHostCpu { .. }
        )
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fallback::IoEngine { why } => write!(f, "I/O engine: {why}"),
            Fallback::ReadsNotDirect { source, why } => write!(f, "{}: reads without O_DIRECT: {why}", Quoted(source)),
            Fallback::WritesNotDirect { target, why } => write!(f, "{}: writes without O_DIRECT: {why}", Quoted(target)),
            Fallback::HostCpuNotDevice { source, why } => write!(f, "{}: compressed on the host CPU, not on a device: {why}", Quoted(source)),
            Fallback::FewerDevices { asked, started } => write!(f, "devices: {asked} asked for, {started} started (one per source at most: every source has one, no work moved to the host CPU)"),
            Fallback::DeviceNotStarted { device, why } => write!(f, "{device} did not start ({why}); its sources ran on the host CPU"),
            Fallback::DeviceFailed { source, device, why, from, kept } => {
                write!(f, "{}: device {device} failed ({why}); ", Quoted(source))?;
                if *kept == 0 {
                    f.write_str("the host CPU compressed all of it")
                } else {
                    write!(f, "the host CPU compressed it from source byte {from} on ({kept} output bytes from the device were kept)")
                }
            }
            Fallback::StreamingDecode { source, mode } => write!(f, "{}: {mode}", Quoted(source)),
            Fallback::DecodedOnCpu { device, why, members } => write!(f, "{device}: {why}; the host CPU decoded {} in its place", count(*members, "member")),
            Fallback::NotInDaemon { why } => write!(f, "{why}; the job ran in this process"),
            Fallback::AutoOnHostCpu { why } => write!(f, "--engine auto: {why}; every source ran on the host CPU"),
        }
    }
}

impl From<Fallback> for String {
    fn from(f: Fallback) -> String {
        f.to_string()
    }
}

/// What the report says about one device of the job.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    pub name: String,
    /// What it is: an emulated CSP process, with its pid.
    pub kind: String,
    pub memory_bytes: usize,
    /// The sources it served.
    pub sources: Vec<String>,
    /// Where some source's name is not UTF-8: for each of `sources` in turn, its exact bytes
    /// ([`name_bytes`]), or null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sources_bytes: Option<Vec<Option<Vec<u8>>>>,
    /// Members it compressed that went into the output.
    pub members: u64,
    /// Commands it completed, by function.
    pub commands: BTreeMap<String, u64>,
    /// Bytes read plus written in its memory (ledger).
    pub memory_traffic_bytes: u64,
    /// CPU time of the device process (an emulated device runs on host
    /// cores: this is not offloaded work and is never counted as saved).
    pub process_cpu_s: Option<f64>,
    /// CPU time the device process spent starting, before the job drove it:
    /// mostly making `populated_bytes` of its memory resident (allocating
    /// and zeroing pages the host would otherwise fault in when it
    /// registers them). Work on host cores for this job, like `process_cpu_s`.
    pub start_cpu_s: Option<f64>,
    /// Bytes of its memory resident when it had started (its memory file's
    /// allocated blocks), before the host touched any.
    pub populated_bytes: usize,
    /// Time its workers spent running this job's commands (its statistics).
    pub busy_s: Option<f64>,
    /// `busy_s` over its workers' time while the job drove it (from the
    /// first transfer to the last completion), where it says how many.
    pub utilisation_pct: Option<f64>,
    /// Of its memory (shared memory: not P2P memory), what the host's
    /// mapping has resident and how much of that is in 2 MiB pages.
    pub memory_resident_bytes: Option<u64>,
    pub memory_huge_page_bytes: Option<u64>,
    /// Why it was retired mid-job, if it was.
    pub failure: Option<String>,
    /// The device's own account of where its time went, where it keeps one.
    pub profile: Option<String>,
    /// A device that moves storage to and from its memory itself (GPUDirect
    /// Storage): which sources it read and targets it wrote so, how, and why
    /// not the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_io: Option<String>,
    /// Where its memory, not the device, limited the blocks in flight: how many it held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks_in_flight: Option<String>,
}

/// Where a figure comes from. Every report says it.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Measured on this machine, with real files and the host CPU.
    MeasuredHost,
    /// Measured on this machine, with emulated devices doing the work.
    MeasuredEmulated,
    /// Measured on this machine, with a real accelerator (a GPU) doing the work.
    MeasuredDevice,
    /// Predicted by the simulator.
    Simulated,
}

impl Provenance {
    pub fn describe(&self) -> &'static str {
        match self {
            Provenance::MeasuredHost => "measured on this machine (real files, host CPU; no offload device)",
            Provenance::MeasuredEmulated => "measured on this machine with emulated devices (not hardware speed)",
            Provenance::MeasuredDevice => "measured on this machine with a real accelerator (GPU) doing the work",
            Provenance::Simulated => "simulated (a model, not a measurement)",
        }
    }
}

/// A source `verify` found bad; the job went on with the others (as `gzip -t`).
#[derive(Clone, Debug, Serialize)]
pub struct FailedFile {
    pub source: String,
    /// `source`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_bytes: Option<Vec<u8>>,
    /// The exit code this failure alone gives (docs/usage.md#exit-codes).
    pub exit_code: i32,
    pub error: String,
    /// What was checked before the error, in order from the file's start (absent where
    /// the file failed before decoding began).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<Checked>,
    /// How it was being decoded when it failed, where not in parallel throughout (a
    /// one-thread decode is also listed in the job's fallbacks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_mode: Option<DecodeMode>,
}

/// The members of a failed file before its error: every one decoded and its CRC-32 and
/// length checked.
#[derive(Clone, Debug, Serialize)]
pub struct Checked {
    pub members: u64,
    /// The compressed bytes they take, from the file's start; absent where not known
    /// exactly (see `decompress::checked_in`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_in: Option<u64>,
    /// Their uncompressed bytes.
    pub bytes_out: u64,
}

impl fmt::Display for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes_in = self.bytes_in.map(|n| format!("{} in, ", human_bytes_exact(n))).unwrap_or_default();
        write!(f, "the {} before it ({bytes_in}{} out) checked", count(self.members, "member"), human_bytes_exact(self.bytes_out))
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct FileReport {
    pub source: String,
    /// `source`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_bytes: Option<Vec<u8>>,
    pub target: Option<String>,
    /// `target`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_bytes: Option<Vec<u8>>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// compress: the members it wrote with data, not the end marker after them (itself a
    /// member); decompress and verify: every member read, end markers too.
    pub members: u64,
    pub read_path: IoPath,
    pub write_path: Option<IoPath>,
    /// How members were decoded (decompress/verify): parallel or streaming, and why.
    pub decode_mode: Option<DecodeMode>,
    /// The device that compressed it (offload path).
    pub device: Option<String>,
    /// Of `members`, how many that device made (the rest: the host CPU).
    pub members_on_device: Option<u64>,
    /// How the target was made durable before it was put in place (`None`:
    /// standard output, a pipe, or nothing written).
    pub durability: Option<crate::writer::DurabilityReport>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryReport {
    /// Fixed pool of aligned read buffers.
    pub read_pool_bytes: usize,
    pub read_pool_buffers: usize,
    /// Most pool buffers in use at once: only these were ever touched.
    pub read_pool_peak_buffers: usize,
    /// Peak of owned buffers (compressed output, staging for O_DIRECT).
    pub peak_owned_buffer_bytes: usize,
    /// What the io_uring engines registered with the kernel once (`None`:
    /// no io_uring engine ran).
    pub fixed_buffers: Option<peerpath_io::FixedBufferStats>,
}

impl MemoryReport {
    /// A read pool's figures and the peak of owned buffers.
    pub(crate) fn new(pool: &peerpath_mem::PoolStats, peak_owned_buffer_bytes: usize) -> Self {
        MemoryReport {
            read_pool_bytes: pool.total_bytes,
            read_pool_buffers: pool.buffer_count,
            read_pool_peak_buffers: pool.peak_in_use,
            peak_owned_buffer_bytes,
            fixed_buffers: None,
        }
    }

    /// Counts an engine's fixed buffers in.
    pub(crate) fn add_engine<B: peerpath_io::IoBuf>(&mut self, engine: &dyn peerpath_io::IoEngine<B>) {
        if let Some(f) = engine.fixed_buffers() {
            self.fixed_buffers.get_or_insert_with(Default::default).merge(&f);
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    pub operation: Operation,
    pub provenance: Provenance,
    pub provenance_text: String,
    /// The compute engine (device and library).
    pub engine: String,
    /// Which process ran the job where it was not the command's own: the
    /// job server (`peerpath daemon`), with what it keeps open across jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    pub format: String,
    pub level: Option<u32>,
    pub block_size_bytes: Option<usize>,
    pub threads: usize,
    pub queue_depth: u32,
    pub files: Vec<FileReport>,
    /// `verify`: the sources that failed, each with its error (absent when none did;
    /// `files` holds the ones that passed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedFile>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Uncompressed / compressed.
    pub ratio: f64,
    pub wall_s: f64,
    /// Uncompressed bytes per second, decimal.
    pub throughput_gb_per_s: f64,
    pub throughput_gbit_per_s: f64,
    pub cpu: CpuSummary,
    pub ledger: LedgerSummary,
    /// Host memory traffic divided by the uncompressed bytes.
    pub host_memory_traffic_per_input_byte: f64,
    pub host_memory_traffic_gbit_per_s: f64,
    pub memory: MemoryReport,
    /// Every fallback taken, with its reason. Never silent. JSON adds `fallback_name_bytes`
    /// where a fallback names a file whose name is not UTF-8 ([`fallbacks_json`]).
    #[serde(flatten, serialize_with = "fallbacks_json")]
    pub fallbacks: Vec<Fallback>,
    /// The compute devices of the job (offload path).
    pub devices: Vec<DeviceReport>,
    /// With P2P device memory: how each stream's legs reach it (the
    /// topology planner's verdicts), one line per stream.
    pub placement: Vec<String>,
    /// The planner's explanation of every placement decision (`compress --explain` prints it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_explain: Option<String>,
    /// Seconds spent checking every output member before it was put in
    /// place (`--verify`), included in `wall_s`.
    pub verified_s: Option<f64>,
    /// Offload path: the orchestration thread's CPU while transfers and
    /// device commands were in flight (the steady state; the rest of its
    /// CPU is starting and stopping devices and registering their memory).
    pub offload_transfers_cpu_s: Option<f64>,
    /// Where the host CPU pass's time went: workers busy or waiting for work,
    /// what held the orchestrator, queues' occupancy (`None`: no CPU pass).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<peerpath_metrics::PipelineReport>,
}

/// A job report's `fallbacks` in JSON: their lines, and where one names a file whose name is not
/// UTF-8, `fallback_name_bytes`: for each fallback in turn, those bytes ([`name_bytes`]), or null.
fn fallbacks_json<S: serde::Serializer>(fallbacks: &[Fallback], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let bytes: Vec<Option<Vec<u8>>> = fallbacks.iter().map(|f| f.file().and_then(name_bytes)).collect();
    let mut map = s.serialize_map(None)?;
    map.serialize_entry("fallbacks", fallbacks)?;
    if bytes.iter().any(Option::is_some) {
        map.serialize_entry("fallback_name_bytes", &bytes)?;
    }
    map.end()
}

/// What a job knows about itself; the figures are derived from it.
pub struct JobSummary {
    pub operation: Operation,
    pub engine: String,
    pub format: String,
    pub level: Option<u32>,
    pub block_size_bytes: Option<usize>,
    pub threads: usize,
    pub queue_depth: u32,
    pub files: Vec<FileReport>,
    pub fallbacks: Vec<Fallback>,
    /// From the job's start until its targets are durable and in place.
    pub wall: std::time::Duration,
    pub cpu: peerpath_metrics::CpuAccount,
    pub ledger: LedgerSummary,
    pub memory: MemoryReport,
}

impl JobReport {
    /// A report of a job measured on this host. Bytes in and out are summed
    /// over the files; the uncompressed side is the input when compressing
    /// and the output otherwise.
    pub fn measured_host(j: JobSummary) -> JobReport {
        Self::measured(j, Provenance::MeasuredHost)
    }

    /// A report of a job whose functions ran on emulated devices.
    pub fn measured_emulated(j: JobSummary) -> JobReport {
        Self::measured(j, Provenance::MeasuredEmulated)
    }

    /// A report of a job measured on this machine, as `provenance` says.
    pub fn measured(j: JobSummary, provenance: Provenance) -> JobReport {
        let bytes_in = j.files.iter().map(|f| f.bytes_in).sum();
        let bytes_out = j.files.iter().map(|f| f.bytes_out).sum();
        let mut r = JobReport {
            operation: j.operation,
            provenance,
            provenance_text: provenance.describe().into(),
            engine: j.engine,
            runner: None,
            format: j.format,
            level: j.level,
            block_size_bytes: j.block_size_bytes,
            threads: j.threads,
            queue_depth: j.queue_depth,
            files: j.files,
            failed: Vec::new(),
            bytes_in,
            bytes_out,
            ratio: 0.0,
            wall_s: j.wall.as_secs_f64(),
            throughput_gb_per_s: 0.0,
            throughput_gbit_per_s: 0.0,
            cpu: j.cpu.summary(j.wall),
            ledger: j.ledger,
            host_memory_traffic_per_input_byte: 0.0,
            host_memory_traffic_gbit_per_s: 0.0,
            memory: j.memory,
            fallbacks: j.fallbacks,
            devices: Vec::new(),
            verified_s: None,
            placement: Vec::new(),
            placement_explain: None,
            offload_transfers_cpu_s: None,
            pipeline: None,
        };
        let uncompressed = if j.operation == Operation::Compress { bytes_in } else { bytes_out };
        r.finish_figures(uncompressed);
        r
    }

    /// Fills the derived fields.
    fn finish_figures(&mut self, uncompressed_bytes: u64) {
        self.ratio = if self.bytes_out == 0 || self.bytes_in == 0 {
            0.0
        } else if self.operation == Operation::Compress {
            self.bytes_in as f64 / self.bytes_out as f64
        } else {
            self.bytes_out as f64 / self.bytes_in as f64
        };
        let wall = self.wall_s.max(1e-9);
        self.throughput_gb_per_s = uncompressed_bytes as f64 / wall / 1e9;
        self.throughput_gbit_per_s = self.throughput_gb_per_s * 8.0;
        let traffic = self.ledger.host_memory_traffic_bytes as f64;
        self.host_memory_traffic_per_input_byte = if uncompressed_bytes == 0 { 0.0 } else { traffic / uncompressed_bytes as f64 };
        self.host_memory_traffic_gbit_per_s = traffic * 8.0 / wall / 1e9;
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    /// The human-readable table.
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.render_job(&mut s);
        self.render_files(&mut s);
        for f in &self.failed {
            // The error names its file: quoted where the report quotes it (a job error quotes it
            // already; a message built with `Path::display` does not).
            let error = match quoted_exact(&f.source, f.source_bytes.as_deref()) {
                Cow::Owned(quoted) if !f.error.contains(&quoted) => Cow::Owned(f.error.replace(&f.source, &quoted)),
                _ => Cow::Borrowed(&f.error),
            };
            // Said where members were checked: "the 0 members before it" of a file that failed at its start says nothing.
            let checked = f.checked.as_ref().filter(|c| c.members > 0).map(|c| format!("; {c}")).unwrap_or_default();
            let mode = f.decode_mode.as_ref().map(|m| format!("; decoding: {m}")).unwrap_or_default();
            let _ = writeln!(s, "  FAILED        {error}{checked}{mode} (exit {})", f.exit_code);
        }
        self.render_figures(&mut s);
        self.render_ledger(&mut s);
        for d in &self.devices {
            render_device(&mut s, d);
        }
        if let Some(v) = self.verified_s {
            let _ = writeln!(s, "  verified      every member of every output, before it was put in place ({v:.3} s, host CPU)");
        }
        self.render_memory(&mut s);
        if let Some(p) = &self.pipeline {
            let _ = writeln!(s, "  pipeline      {}", p.render());
        }
        for p in &self.placement {
            let _ = writeln!(s, "  placement     {p}");
        }
        if self.fallbacks.is_empty() {
            let _ = writeln!(s, "  fallbacks     none{}", if self.failed.is_empty() { "" } else { " (in the files that passed)" });
        } else {
            for f in &self.fallbacks {
                let _ = writeln!(s, "  FALLBACK      {f}");
            }
        }
        s
    }

    /// What ran: the operation, engine, format and threads.
    fn render_job(&self, s: &mut String) {
        let _ = writeln!(s, "peerpath {} — {}", self.operation, self.provenance_text);
        let _ = writeln!(s, "  engine        {}", self.engine);
        if let Some(r) = &self.runner {
            let _ = writeln!(s, "  runner        {r}");
        }
        let mut fmt = format!("  format        {}", self.format);
        if let Some(l) = self.level {
            fmt += &format!(", level {l}");
        }
        if let Some(b) = self.block_size_bytes {
            fmt += &format!(", block {}", human_bytes_exact(b as u64));
        }
        let _ = writeln!(s, "{fmt}");
        if self.devices.is_empty() {
            let _ = writeln!(s, "  threads       {} compute + 1 I/O orchestration, queue depth {}", self.threads, self.queue_depth);
        } else if self.provenance == Provenance::MeasuredDevice {
            let _ = writeln!(
                s,
                "  threads       {} driving {}, a CUDA stream each, + 1 host I/O orchestration, queue depth {}",
                count(self.threads, "host worker"),
                count(self.devices.len(), "GPU"),
                self.queue_depth
            );
        } else {
            let _ = writeln!(
                s,
                "  threads       {} x {} in the device processes + 1 host I/O orchestration, queue depth {}",
                count(self.devices.len(), "device"),
                count(self.threads, "worker"),
                self.queue_depth
            );
        }
    }

    /// Each file: its paths, decode mode, bytes and durability.
    fn render_files(&self, s: &mut String) {
        for f in &self.files {
            let target = f.target.as_deref().map_or(Cow::Borrowed("(nothing written)"), |t| quoted_exact(t, f.target_bytes.as_deref()));
            let _ = writeln!(s, "  file          {} -> {target}", quoted_exact(&f.source, f.source_bytes.as_deref()));
            let _ = writeln!(s, "    read        {}", f.read_path);
            if let Some(w) = &f.write_path {
                let _ = writeln!(s, "    write       {w}");
            }
            if let Some(m) = &f.decode_mode {
                let _ = writeln!(s, "    decode      {m}");
            }
            // Counted as `decompress` counts the file's members: compress's `members` (as its JSON
            // has them) leave out the end marker written after them, a member too.
            let members = match self.operation {
                Operation::Compress => format!("{} + the end marker: {} written", count(f.members, "member"), count(f.members + 1, "member")),
                Operation::Decompress | Operation::Verify => format!("{} read", count(f.members, "member")),
            };
            let _ = writeln!(s, "    bytes       {} in, {} out, {members}", f.bytes_in, f.bytes_out);
            match &f.durability {
                Some(d) if d.synced => {
                    let _ = writeln!(
                        s,
                        "    synced      {} in the background while writing ({:.3} s), then {:.3} s for the last before the rename",
                        count(d.background_syncs, "data sync"), d.background_sync_s, d.final_sync_s
                    );
                }
                Some(_) => {
                    let _ = writeln!(s, "    synced      no (--no-sync): renamed into place whole, but a crash or power loss can still lose what the page cache or the drive's cache holds");
                }
                None => {}
            }
        }
    }

    /// Bytes, ratio, time, throughput and host CPU by role.
    fn render_figures(&self, s: &mut String) {
        // `verify`: what the sources that failed held before their failure is in none of the
        // figures (they count the files that passed), and the error says where each failed.
        let passed_only = match self.failed.len() {
            0 => String::new(),
            n => format!(" (counting the {} that passed, not the {} that failed)", count(self.files.len(), "file"), count(n, "file")),
        };
        let _ = writeln!(s, "  bytes in      {}{passed_only}", human_bytes_exact(self.bytes_in));
        let _ = writeln!(s, "  bytes out     {}{passed_only}", human_bytes_exact(self.bytes_out));
        let _ = writeln!(s, "  ratio         {:.3}", self.ratio);
        let _ = writeln!(s, "  wall time     {:.3} s", self.wall_s);
        let _ = writeln!(s, "  throughput    {:.3} GB/s = {:.2} Gb/s (uncompressed bytes)", self.throughput_gb_per_s, self.throughput_gbit_per_s);
        let c = &self.cpu;
        let _ = writeln!(
            s,
            "  host CPU      {:.2} s user + {:.2} s system = {:.1}% of {}",
            c.total_user_s,
            c.total_system_s,
            c.total_utilisation_pct,
            count(c.cores, "core")
        );
        for r in &c.roles {
            let _ = writeln!(
                s,
                "    {:<20} {:>2} {:<7}  {:.2} s user + {:.2} s system = {:.1}%",
                r.role.to_string(),
                r.threads,
                if r.threads == 1 { "thread" } else { "threads" },
                r.user_s,
                r.system_s,
                r.utilisation_pct
            );
        }
        if let Some(t) = self.offload_transfers_cpu_s {
            let registering = self.memory.fixed_buffers.as_ref().map_or(0.0, |f| f.registration_cpu_s);
            // Per byte of input only where there is enough of it: a job's fixed costs over a
            // few bytes gave millions of cores per GB/s.
            let per = if self.bytes_in >= 1 << 20 { format!("{:.3} cores per GB/s of input", t / (self.bytes_in as f64 / 1e9)) } else { "too little input for a rate".into() };
            let _ = writeln!(s, "      of which {t:.3} s while transfers and commands were in flight ({per}), {registering:.3} s registering device memory (once per job)");
        }
        match c.io_workers_s {
            Some(io) => {
                let _ = writeln!(s, "    {:<20} {:.2} s (main thread, kernel I/O workers; io_uring's workers {:.2} s)", "other", c.other_s, io);
            }
            None => {
                let _ = writeln!(s, "    {:<20} {:.2} s (main thread, kernel I/O workers)", "other", c.other_s);
            }
        }
    }

    /// Host memory traffic and the ledger's entries.
    fn render_ledger(&self, s: &mut String) {
        let l = &self.ledger;
        let _ = writeln!(
            s,
            "  host memory   {} moved = {:.2}x the uncompressed bytes, {:.2} Gb/s (DMA {}, CPU {})",
            human_bytes_exact(l.host_memory_traffic_bytes),
            self.host_memory_traffic_per_input_byte,
            self.host_memory_traffic_gbit_per_s,
            human_bytes_exact(l.host_memory_dma_bytes),
            human_bytes_exact(l.host_memory_cpu_bytes)
        );
        let _ = writeln!(s, "  ledger (source -> target, mover, purpose: bytes read / written)");
        let at = |l: &peerpath_metrics::Location| match l {
            peerpath_metrics::Location::Storage { name } => format!("storage {}", quoted_bytes(name.as_bytes())),
            memory => memory.to_string(),
        };
        for e in &l.entries {
            let _ = writeln!(
                s,
                "    {} -> {}, {}, {}: {} / {} in {}",
                at(&e.source),
                at(&e.target),
                e.mover,
                e.purpose,
                e.bytes_read,
                e.bytes_written,
                count(e.operations, "op")
            );
        }
        if !self.devices.is_empty() {
            let stand_in = |loc: &peerpath_metrics::Location| matches!(loc, peerpath_metrics::Location::Memory { domain } if domain.is_fixture_stand_in());
            let _ = writeln!(
                s,
                "  payload       {} of payload through host memory, {} of metadata{}",
                human_bytes_exact(l.host_memory_payload_bytes),
                human_bytes_exact(l.host_memory_metadata_bytes),
                if l.entries.iter().any(|e| stand_in(&e.source) || stand_in(&e.target)) {
                    " (the p2p memory above is a fixture's stand-in, itself host memory: the P2P path exercised, not P2P memory measured)"
                } else {
                    ""
                }
            );
        }
    }

    /// Read pool, owned buffers and what io_uring registered.
    fn render_memory(&self, s: &mut String) {
        let m = &self.memory;
        // (Nothing to say when devices did all the work in their own memory.)
        if m.read_pool_buffers > 0 && m.read_pool_peak_buffers == 0 {
            // (The workers read into their own buffers, or nothing was read: the pool's
            // mapping was never touched, so it took address space, not memory.)
            let _ = writeln!(
                s,
                "  buffers       read pool not used ({} x {} mapped, never touched); peak other buffers {}",
                m.read_pool_buffers,
                human_bytes_exact((m.read_pool_bytes / m.read_pool_buffers) as u64),
                human_bytes_exact(m.peak_owned_buffer_bytes as u64)
            );
        } else if m.read_pool_buffers > 0 || m.peak_owned_buffer_bytes > 0 {
            let _ = writeln!(
                s,
                "  buffers       read pool {} x {} = {} (at most {} in use at once); peak other buffers {}",
                m.read_pool_buffers,
                human_bytes_exact((m.read_pool_bytes / m.read_pool_buffers.max(1)) as u64),
                human_bytes_exact(m.read_pool_bytes as u64),
                m.read_pool_peak_buffers,
                human_bytes_exact(m.peak_owned_buffer_bytes as u64)
            );
        }
        if m.fixed_buffers.as_ref().is_some_and(|f| f.registered_bytes == 0 && f.refused.is_none() && f.fixed_transfers + f.other_transfers == 0) {
            let _ = writeln!(s, "  registered    nothing with io_uring: no transfer went through it");
        } else if let Some(f) = m.fixed_buffers.as_ref().filter(|f| f.registered_bytes == 0 && f.refused.is_none()) {
            let _ = writeln!(
                s,
                "  registered    nothing with io_uring: the {} moved memory that is never registered (P2P memory, one-off buffers)",
                count(f.other_transfers, "transfer")
            );
        } else if let Some(f) = &m.fixed_buffers {
            let _ = write!(
                s,
                "  registered    {} with io_uring once (fixed buffers), {} of {} used them; registering took {:.3} s of CPU",
                human_bytes_exact(f.registered_bytes),
                f.fixed_transfers,
                count(f.fixed_transfers + f.other_transfers, "transfer"),
                f.registration_cpu_s
            );
            match &f.refused {
                Some(why) => {
                    let _ = writeln!(s, "; NOT for the rest: {why}");
                }
                None => s.push('\n'),
            }
        }
    }
}

/// One device: what it is, what it did, its memory, CPU and failure.
fn render_device(s: &mut String, d: &DeviceReport) {
    if d.memory_bytes > 0 {
        let _ = writeln!(s, "  device        {}: {}, {} of memory", d.name, d.kind, human_bytes_exact(d.memory_bytes as u64));
    } else {
        let _ = writeln!(s, "  device        {}: {}", d.name, d.kind);
    }
    if !d.sources.is_empty() {
        let exact = |i: usize| d.sources_bytes.as_ref().and_then(|b| b.get(i)?.as_deref());
        let _ = writeln!(s, "    serves      {}", d.sources.iter().enumerate().map(|(i, n)| quoted_exact(n, exact(i))).collect::<Vec<_>>().join(", "));
    }
    let commands: Vec<String> = d.commands.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(s, "    did         {}; commands: {}", count(d.members, "member"), if commands.is_empty() { "unknown".into() } else { commands.join(", ") });
    if d.memory_traffic_bytes > 0 || d.memory_bytes > 0 {
        let _ = writeln!(s, "    memory      {} read + written in device memory", human_bytes_exact(d.memory_traffic_bytes));
    }
    if let (Some(rss), Some(huge)) = (d.memory_resident_bytes, d.memory_huge_page_bytes) {
        let why = if huge == 0 {
            " (4 KiB pages: the file system holding it gives no huge pages; a tmpfs mounted with huge=within_size does, see --device-memory-from shm:DIR)"
        } else {
            ""
        };
        let _ = writeln!(s, "    pages       {} of it in use, {} of that in 2 MiB pages{why}", human_bytes_exact(rss), human_bytes_exact(huge));
    }
    if let Some(c) = d.process_cpu_s {
        let start = match d.start_cpu_s {
            Some(st) if d.populated_bytes > 0 => format!(", and {st:.3} s starting (making {} of its memory resident)", human_bytes_exact(d.populated_bytes as u64)),
            Some(st) => format!(", and {st:.3} s starting"),
            None => String::new(),
        };
        let _ = writeln!(s, "    device CPU  {c:.2} s on host cores{start} (the emulation's own work: not offloaded, not counted as saved)");
    }
    if let Some(b) = d.busy_s {
        let of = d.utilisation_pct.map_or(String::new(), |u| format!(" = {u:.0}% of its workers' time while the job drove it"));
        let _ = writeln!(s, "    busy        {b:.2} s running commands{of}");
    }
    if let Some(p) = &d.profile {
        let _ = writeln!(s, "    profile     {p}");
    }
    if let Some(r) = &d.storage_io {
        let _ = writeln!(s, "    storage     {r}");
    }
    if let Some(b) = &d.blocks_in_flight {
        let _ = writeln!(s, "    in flight   {b}");
    }
    if let Some(f) = &d.failure {
        let _ = writeln!(s, "    FAILED      {f}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command line's words: quoted for a shell wherever one would read the name apart or
    /// expand it, and each read back by bash as the name's exact bytes.
    #[test]
    fn shell_words_read_back_as_the_names() {
        for plain in ["a.fa", "dir/set-1.gz", "-", "é", "a=b,c%d:e@f+g"] {
            assert!(matches!(shell_word(plain.as_bytes()), Cow::Borrowed(n) if n == plain), "{plain:?}");
        }
        let names: [(&[u8], &str); 11] = [
            (b"my set", "'my set'"),
            (b"a$HOME", "'a$HOME'"),
            (b"`id`", "'`id`'"),
            (b"*", "'*'"),
            (b"it's", r"'it'\''s'"),
            (b"say \"hi\"", r#"'say "hi"'"#),
            (b"'a'", r"\''a'\'"),
            (b"", "''"),
            (b"a b\nc$", r"'a b'$'\n''c$'"),
            (b"a\xff b", r"'a'$'\377'' b'"),
            (b"~x!", "'~x!'"),
        ];
        for (name, word) in names {
            assert_eq!(shell_word(name), word, "{}", String::from_utf8_lossy(name));
        }
        assert_eq!(ShellWord(Path::new(std::ffi::OsStr::from_bytes(b"a b\xfe"))).to_string(), r"'a b'$'\376'");
        // A path the command would read as an option is given as ./ one.
        assert_eq!(ShellWord(Path::new("-x set")).to_string(), "'./-x set'");
        assert_eq!(ShellWord(Path::new("-")).to_string(), "./-");
        assert_eq!(ShellWord(Path::new("/-x")).to_string(), "/-x");
        let line = names.iter().map(|(_, w)| *w).collect::<Vec<_>>().join(" ");
        let out = std::process::Command::new("bash").arg("-c").arg(format!("printf '%s\\0' {line}")).output().expect("bash runs");
        let read: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
        assert_eq!(read[..read.len() - 1], names.map(|(n, _)| n), "bash read {line} as {:?}", String::from_utf8_lossy(&out.stdout));
    }

    /// Names print as they are, unless a control character (or a leading quote) would make the
    /// line ambiguous: then shell-quoted, as GNU `ls --quoting-style=shell-escape` does.
    #[test]
    fn names_with_control_characters_are_shell_quoted() {
        for plain in ["a.fa", "dir/my file.fa.gz", "it's.fa", "é—\u{fffd}.gz", "-", "a$'b"] {
            assert!(matches!(quoted_name(plain), Cow::Borrowed(n) if n == plain), "{plain:?}");
        }
        for (name, quoted) in [
            ("a\nb", r"'a'$'\n''b'"),
            ("\nb", r"$'\n''b'"),
            ("a\n\t\r", r"'a'$'\n\t\r'"),
            ("x\u{1b}[31m\u{7f}", r"'x'$'\033''[31m'$'\177'"),
            ("c1\u{85}", r"'c1'$'\302\205'"),
            ("'a'", r"\''a'\'"),
            ("$'x'", r"'$'\''x'\'"),
            ("it's\n", r"'it'\''s'$'\n'"),
        ] {
            assert_eq!(quoted_name(name), quoted, "{name:?}");
        }
        assert_eq!(quoted_bytes(b"a\xffb\n\xfe"), r"'a'$'\377''b'$'\n\376'");
        assert_eq!(quoted_bytes("é".as_bytes()), "é");
        assert_eq!(name_bytes(Path::new(std::ffi::OsStr::from_bytes(b"a\xffb"))), Some(b"a\xffb".to_vec()));
        assert_eq!(name_bytes(Path::new("é\nb")), None);
        let f = Fallback::ReadsNotDirect { source: "a\nb".into(), why: "tmpfs".into() };
        assert_eq!(f.to_string(), r"'a'$'\n''b': reads without O_DIRECT: tmpfs");
        let f = Fallback::StreamingDecode { source: Path::new(std::ffi::OsStr::from_bytes(b"a\xffb.gz")).into(), mode: DecodeMode::StreamingPipe };
        assert_eq!(f.to_string(), r"'a'$'\377''b.gz': streaming: the source is a pipe");
    }

    /// Typed fallbacks and decode modes print (and serialise) as the lines the report always had.
    #[test]
    fn fallbacks_and_decode_modes_read_as_before() {
        let failed = |kept| Fallback::DeviceFailed { source: "a.fa".into(), device: "csp0".into(), why: "timed out".into(), from: 1 << 20, kept };
        assert_eq!(failed(0).to_string(), "a.fa: device csp0 failed (timed out); the host CPU compressed all of it");
        assert_eq!(
            failed(4096).to_string(),
            "a.fa: device csp0 failed (timed out); the host CPU compressed it from source byte 1048576 on (4096 output bytes from the device were kept)"
        );
        assert_eq!(Fallback::IoEngine { why: "no io_uring".into() }.to_string(), "I/O engine: no io_uring");
        assert_eq!(Fallback::DeviceNotStarted { device: "GPU 0".into(), why: "no CUDA driver".into() }.to_string(), "GPU 0 did not start (no CUDA driver); its sources ran on the host CPU");
        let mode = DecodeMode::ParallelThenStreaming { members: 3, from: 99, why: "a member without a size field" };
        assert_eq!(mode.to_string(), "parallel for 3 members, then streaming on one thread from byte 99: a member without a size field");
        assert!(!mode.is_streaming() && DecodeMode::StreamingPipe.is_streaming());
        let json = serde_json::to_value(Fallback::StreamingDecode { source: "x.gz".into(), mode: DecodeMode::StreamingPipe }).unwrap();
        assert_eq!(json, "x.gz: streaming: the source is a pipe");
        assert_eq!(serde_json::to_value(Operation::Verify).unwrap(), "verify");
        assert_eq!(Operation::Compress.to_string(), "compress");
    }
}
