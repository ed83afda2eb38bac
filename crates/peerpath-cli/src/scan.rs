//! `peerpath scan`: keep the records of FASTA, FASTQ or line files (gzip
//! or plain) that match a motif, a minimum length and an id prefix; print
//! them, or only their count or length histogram (issue 19, analytics;
//! the CPU path: `peerpath_func::scan` is its oracle).
//!
//! A reader thread decodes (gzip members with ISA-L) and cuts the stream
//! into blocks of whole records; worker threads filter blocks; the main
//! thread puts results back in order and writes them. Memory is bounded:
//! at most two blocks in flight per worker.

use clap::{Args, ValueEnum};
use crossbeam_channel::bounded;
use crate::scan_device;
use peerpath_device::Device;
use crate::chain_device::Stop;
use peerpath_func::scan::{BlockCutter, CutBlock, Filter, Found, Malformed, RecordFormat, RecordTooLong, Refused, TooLongWhy};
use peerpath_runtime::report::{count, name_bytes, shell_word, Quoted, ShellWord};
use peerpath_runtime::JobError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Records per block are cut near this many bytes.
const BLOCK_BYTES: usize = 4 << 20;

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Fasta,
    Fastq,
    Lines,
}

#[derive(Args)]
pub struct ScanArgs {
    /// Files to read (gzip or plain; `-` is standard input).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Keep records whose sequence (FASTA/FASTQ, line breaks removed) or line matches this regular expression.
    #[arg(long)]
    motif: Option<String>,
    /// The motif ignores case.
    #[arg(short = 'i', long)]
    ignore_case: bool,
    /// Keep records whose sequence (or line) has at least N bytes.
    #[arg(long, value_name = "N")]
    min_length: Option<usize>,
    /// Keep records whose id (the header's first word, without > or @) starts with P.
    #[arg(long, value_name = "P")]
    id_prefix: Option<String>,
    /// Print only the number of matching records (per file when there are several).
    #[arg(short = 'c', long, conflicts_with = "histogram")]
    count: bool,
    /// Print only the matching records' sequence lengths, in power-of-two bins.
    #[arg(long)]
    histogram: bool,
    /// Record format [default: from the first byte that is not white space: > FASTA, @ FASTQ, else lines].
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Write the matching records here (appears whole or not at all) instead of standard output.
    /// Not with --count or --histogram, which print no records (refused rather than ignored).
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Replace an existing output.
    #[arg(short, long)]
    force: bool,
    /// Filter threads [default: all cores].
    #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// The longest record (or line) waited for, K/M/G suffixes: its bytes (header and line breaks
    /// counted, not the line break that ends it); one longer, wherever it lies, stops the scan
    /// (exit 12, saying where it starts) [default: half of this machine's memory, at most 16G].
    /// With --engine emulated or gpu, below 8M: the files are scanned on the host CPU (said).
    #[arg(long, value_name = "SIZE", value_parser = positive_size)]
    max_record: Option<usize>,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
    /// Print the report as JSON on standard output (a `scan-report`: the counts, the histogram,
    /// where each file ran) instead of the counts or histogram and the summary; records must then
    /// go to a file (-o FILE), or be counted (--count, --histogram).
    #[arg(long)]
    json: bool,
    /// Where the filter runs: cpu (this process); emulated (an emulated CSP counts plain
    /// files in its own memory; only counts and histograms come back: --count or --histogram);
    /// or gpu (the same on a GPU, with peerpath's scan kernels walking the motif as a DFA,
    /// through its pinned host window).
    #[arg(long, value_enum, default_value = "cpu")]
    engine: ScanEngine,
    /// With --engine emulated or gpu: fail (exit 15) instead of counting on the CPU when the device cannot start or fails.
    #[arg(long)]
    no_fallback: bool,
    /// With --engine gpu: which GPU [default: 0].
    #[arg(long)]
    gpu: Option<usize>,
    /// Testing aid, with --engine emulated: inject seeded device faults, e.g. "seed=7,crash-after=3,error=0.1" (no corrupt=: the device's counts cannot be checked).
    #[arg(long, value_parser = crate::parse_faults)]
    inject_faults: Option<peerpath_device::FaultConfig>,
    /// With --engine emulated or gpu: a device with commands in flight and none completing for
    /// this long (seconds) is declared hung and the host CPU does the work (or exit 15 with
    /// --no-fallback) [default: 10 for an emulated CSP, 30 for a GPU].
    #[arg(long, value_parser = crate::parse_device_timeout)]
    device_timeout: Option<std::time::Duration>,
    /// Read gzip input of peerpath's members without its end member (written before 2026-12-03);
    /// else such a file is exit 7: it was cut at a member's end.
    #[arg(long)]
    allow_no_end_member: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScanEngine {
    Cpu,
    Emulated,
    Gpu,
}

/// Bytes of a file's start that tell what it holds (bzip2's magic is the longest).
const HEAD_BYTES: usize = 10;

/// Refuses data whose first bytes (`head`, fewer where the file is shorter) say it is
/// encrypted (peerpath-enc/1) or another compressor's (zstd, xz, bzip2): read as lines,
/// a motif would match nothing, or binary noise, and the scan say so with exit 0.
fn refuse_unreadable(path: &Path, head: &[u8]) -> Result<(), JobError> {
    // The file as its hints name it: a shell word, so that they run as printed (standard input: FILE).
    let word = || if peerpath_runtime::job::is_std_stream(path) { "FILE".to_string() } else { ShellWord(path).to_string() };
    if head.starts_with(peerpath_func::crypt::MAGIC) {
        // What decodes it: decompress for compress --encrypt's output (it streams to a pipe),
        // decrypt for encrypt's (into a file: it writes nothing before every block checks).
        use std::os::unix::ffi::OsStrExt;
        let word = word();
        let how = if path.as_os_str().as_bytes().ends_with(b".gz.ppenc") {
            format!("`peerpath decompress {word} --key-file KEY -o - | peerpath scan - ...`")
        } else {
            format!("`peerpath decrypt {word} --key-file KEY -o PLAIN`, then `peerpath scan PLAIN ...`; or, made by compress --encrypt, `peerpath decompress {word} --key-file KEY -o - | peerpath scan - ...`")
        };
        return Err(JobError::Usage(format!("{}: encrypted (peerpath-enc/1): scan reads gzip or plain records; decrypt it first: {how}", Quoted(path))));
    }
    // "BZh", the block size, then a block's magic (or the end-of-stream one for an empty stream).
    let bzip2 = head.len() == HEAD_BYTES
        && head.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&head[3])
        && [[0x31, 0x41, 0x59, 0x26, 0x53, 0x59], [0x17, 0x72, 0x45, 0x38, 0x50, 0x90]].iter().any(|m| head[4..] == m[..]);
    let (what, decode) = if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        ("zstd", "zstd -dc")
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        ("xz", "xz -dc")
    } else if bzip2 {
        ("bzip2", "bzip2 -dc")
    } else {
        return Ok(());
    };
    Err(JobError::Usage(format!("{}: compressed with {what}: scan decodes gzip only; decode it first (`{decode} {} | peerpath scan - ...`)", Quoted(path), word())))
}

/// A motif the regex crate refuses, said on one line: parsed first with `regex_syntax` (as the
/// regex crate parses it), whose error has a kind and a position, not a drawing of the pattern.
fn bad_motif(motif: &str, ignore_case: bool, e: &regex::Error) -> JobError {
    let quoted = shell_word(motif.as_bytes());
    let parsed = regex_syntax::ParserBuilder::new().utf8(false).case_insensitive(ignore_case).build().parse(motif);
    let why = match (parsed, e) {
        (Err(p), _) => {
            let (kind, at) = match &p {
                regex_syntax::Error::Parse(e) => (e.kind().to_string(), e.span().start.offset),
                regex_syntax::Error::Translate(e) => (e.kind().to_string(), e.span().start.offset),
                e => (e.to_string(), 0),
            };
            format!("not a regular expression: {kind} (at character {})", motif[..at].chars().count() + 1)
        }
        (Ok(_), regex::Error::CompiledTooBig(limit)) => format!(
            "too large to compile (more than the regex engine's {limit} bytes): use fewer or smaller counted repetitions ({{N}}), or ASCII classes ([0-9A-Za-z_] for \\w, or (?-u:\\w)), which compile smaller than Unicode ones"
        ),
        (Ok(_), e) => format!("not a regular expression: {}", e.to_string().lines().find(|l| !l.trim().is_empty()).unwrap_or_default()),
    };
    JobError::Usage(format!("--motif {quoted}: {why}"))
}

/// The `-o` target's temporary file, how it exists, and its final name.
type OutputFile = (File, peerpath_io::Temporary, PathBuf);

/// A size of at least one byte (a record of none would stop every scan at its first byte).
fn positive_size(s: &str) -> Result<usize, String> {
    crate::parse_size(s).and_then(|n| if n == 0 { Err("at least 1 byte".into()) } else { Ok(n) })
}

pub fn main(a: ScanArgs) -> ExitCode {
    crate::exit_code(run(a))
}

/// What a scan did, for its summary (standard error) or `--json`: the
/// filter, each file's counts and where it was scanned, the totals. The
/// text is rendered from it.
#[derive(Serialize)]
struct ScanReport {
    /// Each file in the order given.
    files: Vec<FileReport>,
    filter: FilterReport,
    /// What the run wrote: "count", "histogram", or "records" (to `output`).
    printed: &'static str,
    /// Where the matching records went (`-o FILE`), when they were written.
    output: Option<String>,
    /// `output`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    output_bytes: Option<Vec<u8>>,
    records: u64,
    matched: u64,
    /// Sequence bytes of the matching records.
    matched_bases: u64,
    /// With --histogram: matching records by sequence length, the bins that hold any.
    histogram: Option<Vec<Bin>>,
    /// Bytes read (decompressed, for gzip input), over all files.
    bytes: u64,
    seconds: f64,
    gb_per_s: f64,
    /// The engine asked for (--engine), and the device it named where it is not cpu.
    engine: &'static str,
    device: Option<String>,
    /// Filter threads on the host CPU, and how many files ran there and on the device.
    threads: usize,
    cpu_files: usize,
    device_files: usize,
    /// Why files the device was asked to scan were scanned on the host CPU.
    fallbacks: Vec<String>,
    provenance: &'static str,
}

#[derive(Serialize)]
struct FilterReport {
    motif: Option<String>,
    ignore_case: bool,
    min_length: Option<usize>,
    id_prefix: Option<String>,
    /// --format, or null: told from each file's first byte.
    format: Option<&'static str>,
}

#[derive(Serialize)]
struct FileReport {
    #[serde(serialize_with = "crate::serialize_name")]
    path: PathBuf,
    /// `path`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    path_bytes: Option<Vec<u8>>,
    /// The record format it was read as (null: an empty file).
    format: Option<&'static str>,
    records: u64,
    matched: u64,
    matched_bases: u64,
    bytes: u64,
    /// Where it was scanned: "cpu", "emulated" or "gpu".
    engine: &'static str,
    /// How the device scanned it (null on the CPU).
    device_pass: Option<DevicePass>,
}

/// One file's pass on a device.
#[derive(Serialize)]
struct DevicePass {
    /// "1 emulated CSP", or "1 GPU (GPU N, peerpath's scan kernels)".
    device: String,
    /// Read into a pinned host window and copied to the device's own memory by the device (a GPU).
    staged: bool,
    /// Read by DMA (O_DIRECT), else by the kernel's copies.
    read_by_dma: bool,
    blocks: u64,
    result_bytes_per_block: usize,
    host_copies: crate::device_job::HostCopies,
    provenance: &'static str,
}

/// Matching records whose sequence length is in `from..=to`.
#[derive(Serialize)]
struct Bin {
    from: u64,
    to: u64,
    records: u64,
}

fn format_name(f: RecordFormat) -> &'static str {
    match f {
        RecordFormat::Fasta => "fasta",
        RecordFormat::Fastq => "fastq",
        RecordFormat::Lines => "lines",
    }
}

impl ScanReport {
    /// The summary lines on standard error.
    fn render(&self) -> String {
        let mut t = format!(
            "scan: {} of {} matched ({}); read {} in {:.3} s, {:.2} GB/s ({})\n",
            self.matched,
            count(self.records, "record"),
            count(self.matched_bases, "base"),
            peerpath_metrics::human_bytes(self.bytes),
            self.seconds,
            self.gb_per_s,
            self.provenance,
        );
        if self.cpu_files > 0 {
            t += &format!("scan: {} on {} of the host CPU\n", count(self.cpu_files, "file"), count(self.threads, "filter thread"));
        }
        for (f, d) in self.files.iter().filter_map(|f| f.device_pass.as_ref().map(|d| (f, d))) {
            let (into, back) = if d.staged { ("its pinned host window and copied to GPU memory by the device", " copied back") } else { ("its memory", "") };
            t += &format!(
                "scan: on {}: {} read {} into {into}, {}, {} bytes of results each{back}; {} ({})\n",
                d.device,
                Quoted(&f.path),
                crate::device_job::moved(d.read_by_dma),
                count(d.blocks, "block"),
                d.result_bytes_per_block,
                d.host_copies.text(),
                d.provenance
            );
        }
        t
    }
}

/// Says a fallback on standard error and keeps it for the report.
fn fallback(fallbacks: &mut Vec<String>, why: String) {
    eprintln!("peerpath: FALLBACK: {why}");
    fallbacks.push(why);
}

fn run(a: ScanArgs) -> Result<(), JobError> {
    if a.motif.is_none() && a.min_length.is_none() && a.id_prefix.is_none() {
        return Err(JobError::Usage("give at least one of --motif, --min-length, --id-prefix".into()));
    }
    let records_out = !a.count && !a.histogram;
    if !records_out && a.output.is_some() {
        return Err(JobError::Usage("--output takes the matching records, and --count or --histogram prints no records: drop one (the counts go to standard output, or into the --json report)".into()));
    }
    if a.json && records_out && a.output.as_deref().is_none_or(peerpath_runtime::job::is_std_stream) {
        return Err(JobError::Usage("--json prints the report on standard output, where the matching records would go: write them to a file (-o FILE), or count them (--count, --histogram)".into()));
    }
    let motif = match &a.motif {
        Some(m) => Some(regex::bytes::RegexBuilder::new(m).case_insensitive(a.ignore_case).build().map_err(|e| bad_motif(m, a.ignore_case, &e))?),
        None => None,
    };
    if let Some(p) = a.id_prefix.as_deref().filter(|p| p.bytes().any(|b| b.is_ascii_whitespace())) {
        // An id is the header's first word: a prefix with white space in it matched nothing, and said nothing.
        return Err(JobError::Usage(format!("--id-prefix {}: an id is the header's first word, which has no white space: no record can match", shell_word(p.as_bytes()))));
    }
    // Standard input is read once: a second `-` found it empty and counted 0 records of it.
    if a.files.iter().filter(|f| peerpath_runtime::job::is_std_stream(f)).nth(1).is_some() {
        return Err(JobError::Usage("- (standard input) is named twice: it is read once".into()));
    }
    // A missing or unreadable source (a directory) among several stops the scan before any is
    // read, as seqkit's does: not after the files before it were scanned and printed. A file
    // other than a regular one (a FIFO) is not opened twice: its writer could see no reader.
    for f in a.files.iter().filter(|f| !peerpath_runtime::job::is_std_stream(f)) {
        let m = std::fs::metadata(f).map_err(|e| JobError::SourceUnreadable { path: f.clone(), source: e })?;
        if m.is_file() || m.is_dir() {
            crate::open_file_source(f)?;
        }
    }
    let filter = Filter { motif, min_length: a.min_length, id_prefix: a.id_prefix.as_ref().map(|p| p.as_bytes().to_vec()) };
    let mut device = None;
    let mut fallbacks = Vec::new();
    if a.inject_faults.is_some() && a.engine != ScanEngine::Emulated {
        return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
    }
    if a.inject_faults.as_ref().is_some_and(|f| f.corrupt_probability > 0.0) {
        return Err(JobError::Usage("scan cannot check the device's counts: --inject-faults takes no corrupt= with it".into()));
    }
    if a.gpu.is_some() && a.engine != ScanEngine::Gpu {
        return Err(JobError::Usage("--gpu needs --engine gpu".into()));
    }
    if a.device_timeout.is_some() && a.engine == ScanEngine::Cpu {
        return Err(crate::device_timeout_without_a_device());
    }
    let engine = match a.engine {
        ScanEngine::Cpu => "cpu",
        ScanEngine::Emulated => "emulated",
        ScanEngine::Gpu => "gpu",
    };
    // A record's end is waited for in memory: at most half of it (a stream of zeros, a file of
    // one endless line, stops with an error, not when the machine has no memory left).
    let max_record = a.max_record.unwrap_or_else(|| crate::machine_memory_bytes().map_or(16 << 30, |t| (t / 2).min(16 << 30)));
    if a.engine != ScanEngine::Cpu {
        if records_out {
            return Err(JobError::Usage(format!("--engine {engine} returns only counts: add --count or --histogram")));
        }
        // The devices' filters take a motif and a length: an id prefix stays on the CPU, said
        // as a fallback (as usage.md has it; it was a usage error).
        let started = match a.engine {
            _ if a.id_prefix.is_some() => Err("--id-prefix is not a device filter".to_string()),
            // The devices count records of up to LONGEST_RECORD bytes and say nothing of their
            // lengths: a lower --max-record is held to on the CPU (a longer record the device
            // cannot count, and the CPU it falls back to stops at it).
            _ if max_record < scan_device::LONGEST_RECORD => {
                Err(format!("--max-record {max_record} is below the {} bytes a record may have on the device, which does not check records' lengths", scan_device::LONGEST_RECORD))
            }
            ScanEngine::Gpu => scan_device::start_gpu(a.gpu.unwrap_or(0), a.motif.as_deref(), a.ignore_case, a.device_timeout),
            _ => scan_device::start(a.inject_faults.clone(), a.device_timeout),
        };
        match started {
            Ok(d) => device = Some(d),
            Err(why) if a.no_fallback => return Err(JobError::Device { detail: format!("{why} (--no-fallback)") }),
            Err(why) => fallback(&mut fallbacks, format!("{why}: scanning on the host CPU")),
        }
    }
    let device_name = if a.engine == ScanEngine::Gpu { format!("GPU {}", a.gpu.unwrap_or(0)) } else { "the emulated CSP".to_string() };
    let threads = a.threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize);
    // Bytes that reached standard output, for an error that ends the job part way.
    let mut written = None;
    // As `plan_targets` holds it: the records have no name until they are in place, so another
    // job that made the directory and fails would find it empty and remove it under this one.
    let _held = a.output.as_deref().filter(|o| records_out && !peerpath_runtime::job::is_std_stream(o)).map(peerpath_io::OutputDir::hold_parent_of);
    let (mut sink, temp): (Box<dyn Write>, Option<OutputFile>) = match (&a.output, records_out) {
        (Some(o), true) if !peerpath_runtime::job::is_std_stream(o) => {
            for f in &a.files {
                peerpath_runtime::job::check_target(f, o, a.force, peerpath_runtime::job::Writes::FileOrStdout)?;
            }
            let (t, temp) = peerpath_io::create_temporary(o, false).map_err(|e| JobError::TargetIo { path: o.clone(), source: e })?;
            let writer = t.file.try_clone().map_err(|e| JobError::TargetIo { path: o.clone(), source: e })?;
            (Box::new(std::io::BufWriter::with_capacity(1 << 20, writer)), Some((t.file, temp, o.clone())))
        }
        _ => {
            let out = crate::Counted::stdout().map_err(|e| JobError::TargetIo { path: PathBuf::from("-"), source: e })?;
            written = Some(out.count());
            (Box::new(std::io::BufWriter::with_capacity(1 << 20, out)), None)
        }
    };
    let out_path = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let result = (|| -> Result<ScanReport, JobError> {
        let started = Instant::now();
        let (mut total, mut bytes) = (Found::default(), 0u64);
        let mut files = Vec::with_capacity(a.files.len());
        let format = a.format.map(|f| match f {
            FormatArg::Fasta => RecordFormat::Fasta,
            FormatArg::Fastq => RecordFormat::Fastq,
            FormatArg::Lines => RecordFormat::Lines,
        });
        for (i, f) in a.files.iter().enumerate() {
            let on_device = match device.as_mut() {
                Some(dev) => device_scan(dev.as_mut(), f, format, &a, &mut fallbacks)?,
                None => None,
            };
            // A device that failed takes no more commands: the files after this one
            // go to the CPU without asking it again (said once, here; why, above).
            if device.as_ref().is_some_and(|d| d.failure().is_some()) {
                device = None;
                if i + 1 < a.files.len() {
                    fallback(&mut fallbacks, format!("{device_name} has failed: the {} after {} {} scanned on the host CPU", count(a.files.len() - i - 1, "file"), Quoted(f), if i + 2 == a.files.len() { "is" } else { "are" }));
                }
            }
            let (found, n, fmt, pass) = match on_device {
                Some(d) => {
                    let (on, provenance) = if d.staged {
                        (format!("1 GPU ({device_name}, peerpath's scan kernels)"), "measured on a real accelerator (GPU)")
                    } else {
                        ("1 emulated CSP".to_string(), "measured on emulated devices")
                    };
                    let host_copies = crate::device_job::HostCopies { bytes: d.host_copied, of: "the motif, the format's first byte (more where the file starts with blank lines) and the counters".into(), payload_bytes: d.bytes };
                    let pass = DevicePass { device: on, staged: d.staged, read_by_dma: d.direct, blocks: d.blocks, result_bytes_per_block: peerpath_device::SCAN_RESULT_BYTES, host_copies, provenance };
                    (d.found, d.bytes, d.format, Some(pass))
                }
                None => {
                    let (found, n, fmt) = scan_file(f, (format, a.allow_no_end_member, max_record), &filter, threads, records_out.then_some(&mut *sink as &mut dyn Write), &out_path)?;
                    (found, n, fmt, None)
                }
            };
            if a.id_prefix.is_some() && fmt == Some(RecordFormat::Lines) {
                // A line has no id: the filter matched nothing, and said nothing.
                return Err(JobError::Usage(format!("{}: read as lines, which have no id: --id-prefix filters FASTA and FASTQ records (--format fasta|fastq if it is one)", Quoted(f))));
            }
            if a.count && !a.json {
                let line = if a.files.len() > 1 { format!("{}\t{}", Quoted(f), found.matched) } else { found.matched.to_string() };
                writeln!(sink, "{line}").map_err(|e| JobError::TargetIo { path: out_path.clone(), source: e })?;
            }
            total.add(&found);
            bytes += n;
            files.push(FileReport {
                path: f.clone(),
                path_bytes: name_bytes(f),
                format: fmt.map(format_name),
                records: found.records,
                matched: found.matched,
                matched_bases: found.matched_bases,
                bytes: n,
                engine: if pass.is_some() { engine } else { "cpu" },
                device_pass: pass,
            });
        }
        let histogram: Option<Vec<Bin>> = a.histogram.then(|| {
            total.histogram.iter().enumerate().filter(|(_, n)| **n > 0).map(|(b, &n)| Bin { from: if b == 0 { 0 } else { 1u64 << b }, to: (1u64 << (b + 1)) - 1, records: n }).collect()
        });
        if !a.json {
            for b in histogram.iter().flatten() {
                writeln!(sink, "{}-{}\t{}", b.from, b.to, b.records).map_err(|e| JobError::TargetIo { path: out_path.clone(), source: e })?;
            }
        }
        sink.flush().map_err(|e| JobError::TargetIo { path: out_path.clone(), source: e })?;
        let seconds = started.elapsed().as_secs_f64();
        let device_files = files.iter().filter(|f| f.device_pass.is_some()).count();
        let cpu_files = files.len() - device_files;
        let gpu = a.engine == ScanEngine::Gpu;
        Ok(ScanReport {
            filter: FilterReport { motif: a.motif.clone(), ignore_case: a.ignore_case, min_length: a.min_length, id_prefix: a.id_prefix.clone(), format: format.map(format_name) },
            printed: if a.count {
                "count"
            } else if a.histogram {
                "histogram"
            } else {
                "records"
            },
            output: temp.as_ref().map(|(_, _, p)| p.display().to_string()),
            output_bytes: temp.as_ref().and_then(|(_, _, p)| name_bytes(p)),
            records: total.records,
            matched: total.matched,
            matched_bases: total.matched_bases,
            histogram,
            bytes,
            seconds,
            gb_per_s: bytes as f64 / seconds.max(1e-9) / 1e9,
            engine,
            device: (a.engine != ScanEngine::Cpu).then(|| device_name.clone()),
            threads,
            cpu_files,
            device_files,
            fallbacks: std::mem::take(&mut fallbacks),
            provenance: match (device_files > 0, cpu_files, gpu) {
                (false, _, _) => "measured on this host's CPU",
                (true, 0, false) => "measured on emulated devices",
                (true, 0, true) => "measured on a real accelerator (GPU)",
                (true, _, false) => "measured: files on the emulated CSP and on this host's CPU",
                (true, _, true) => "measured: files on a real accelerator (GPU) and on this host's CPU",
            },
            files,
        })
    })();
    drop(sink);
    let report = match (result, temp) {
        (Err(e), Some((_, temp, _))) => {
            peerpath_io::discard(&temp);
            return Err(e);
        }
        (Err(JobError::TargetIo { path, source }), None) if written.is_some() => {
            return Err(JobError::TargetIo { path, source: crate::after_written(source, written.map_or(0, |w| w.get())) });
        }
        (Err(e), None) => return Err(e),
        // The records keep their first source's permissions (as compress's output does), a new file's for standard input.
        (Ok(report), Some((file, temp, path))) => peerpath_io::Inherited::mode_of(a.files.first().filter(|f| !peerpath_runtime::job::is_std_stream(f)).and_then(|f| std::fs::metadata(f).ok()).as_ref())
            .apply(&file)
            .map_err(|e| JobError::TargetIo { path: path.clone(), source: e })
            .and_then(|()| crate::put_in_place(&file, &temp, &path, a.force))
            .inspect_err(|_| peerpath_io::discard(&temp))
            .map(|()| report)?,
        (Ok(report), None) => report,
    };
    if a.json {
        println!("{}", crate::jsonout::stamped("scan-report", &report));
    } else if !a.quiet {
        eprint!("{}", report.render());
    }
    Ok(())
}

/// Counts one file on the device, or `None` where the CPU must (gzip
/// input, standard input, not a regular file), said on standard error or
/// refused with --no-fallback.
fn device_scan(dev: &mut dyn Device, f: &Path, format: Option<RecordFormat>, a: &ScanArgs, fallbacks: &mut Vec<String>) -> Result<Option<scan_device::DeviceScan>, JobError> {
    let mut cpu = |why: String| {
        if a.no_fallback {
            Err(JobError::Device { detail: format!("{}: {why} (--no-fallback)", Quoted(f)) })
        } else {
            fallback(fallbacks, format!("{}: {why}: scanned on the host CPU", Quoted(f)));
            Ok(None)
        }
    };
    if peerpath_runtime::job::is_std_stream(f) {
        return cpu("standard input is not read into device memory".into());
    }
    let opened = peerpath_io::open_source(f, true).map_err(|e| JobError::SourceUnreadable { path: f.to_path_buf(), source: e })?;
    let mut head = [0u8; HEAD_BYTES];
    let got = std::os::unix::fs::FileExt::read_at(&File::open(f).map_err(|e| JobError::SourceUnreadable { path: f.to_path_buf(), source: e })?, &mut head, 0).unwrap_or(0);
    refuse_unreadable(f, &head[..got])?;
    if head[..got].starts_with(&[0x1f, 0x8b]) {
        return cpu("gzip input is decoded on the host (the device does not inflate yet)".into());
    }
    if !matches!(opened.kind, peerpath_io::SourceKind::Regular { .. }) {
        return cpu("not a regular file".into());
    }
    // Nothing is printed for a file until the device has counted all of it, so a
    // device that fails (or a record longer than it carries) hands the whole file
    // to the CPU.
    match scan_device::scan(dev, (&opened.file, f, peerpath_func::scan::byte_order_mark(&head[..got])), format, a.motif.as_deref().unwrap_or(""), a.ignore_case, a.min_length) {
        Ok(d) => kept_its_size(f, &opened.file, opened.kind.size_bytes().unwrap_or(d.bytes), Some(d.bytes)).map(|()| Some(d)),
        Err(Stop::Job(e)) => Err(e),
        Err(Stop::Device(why) | Stop::Verdict(why)) => cpu(format!("the device could not count it ({why}); nothing was printed for it")),
    }
}

/// A file that shrank or grew while read (`read` bytes of it, where all are read as they
/// are) gave records of no state it was ever in: the job's error (exit 12).
fn kept_its_size(path: &Path, f: &File, size: u64, read: Option<u64>) -> Result<(), JobError> {
    let now = f.metadata().map_or(size, |m| m.len());
    let read = read.unwrap_or(size);
    if now == size && read == size {
        return Ok(());
    }
    let how = if now > size || read > size { "grew" } else { "shrank" };
    Err(JobError::SourceIo { path: path.to_path_buf(), detail: format!("the source {how} while being read ({size} bytes when opened, {now} now)") })
}

/// Filters one file: returns what was found, how many (decoded) bytes were
/// read, and the format they were read as (`None`: no bytes to tell it by).
/// `allow_no_end_member`: gzip input without its end member is read as it is.
fn scan_file(path: &Path, (format, allow_no_end_member, max_record): (Option<RecordFormat>, bool, usize), filter: &Filter, threads: usize, mut out: Option<&mut dyn Write>, out_path: &Path) -> Result<(Found, u64, Option<RecordFormat>), JobError> {
    // A file's size when opened, and the file, to tell at the end whether it changed while read.
    let mut opened: Option<(std::fs::File, u64)> = None;
    let mut input: Box<dyn Read + Send> = if peerpath_runtime::job::is_std_stream(path) {
        Box::new(std::io::stdin())
    } else {
        let f = crate::open_file_source(path)?;
        // A file of /proc says 0 bytes: it is read to its end, as a pipe is (it was said to
        // have grown while read, exit 12).
        if let Some(m) = f.metadata().ok().filter(|m| m.is_file() && !peerpath_io::sizeless(&f)) {
            opened = f.try_clone().ok().map(|c| (c, m.len()));
        }
        Box::new(f)
    };
    // Gzip or not (or data no record format describes), from the first bytes (kept and replayed).
    let mut head = [0u8; HEAD_BYTES];
    let mut got = 0;
    while got < HEAD_BYTES {
        match input.read(&mut head[got..]).map_err(|e| JobError::SourceIo { path: path.to_path_buf(), detail: e.to_string() })? {
            0 => break,
            n => got += n,
        }
    }
    refuse_unreadable(path, &head[..got])?;
    let gzip = head[..got].starts_with(&[0x1f, 0x8b]);
    let input = std::io::Cursor::new(head[..got].to_vec()).chain(input);
    let (block_tx, block_rx) = bounded::<Block>(threads * 2);
    let (found_tx, found_rx) = bounded::<(u64, Result<Found, Refused>, Vec<u8>)>(threads * 2);
    let keep_records = out.is_some();
    std::thread::scope(|s| -> Result<(Found, u64, Option<RecordFormat>), JobError> {
        let file = opened.is_some();
        let reader = s.spawn(move || read_blocks(input, (gzip, file, allow_no_end_member), (format, max_record), path, block_tx));
        for _ in 0..threads {
            let (rx, tx) = (block_rx.clone(), found_tx.clone());
            s.spawn(move || {
                for Block { seq, cut: b } in rx {
                    let mut o = Vec::new();
                    // A malformed record, or one longer than --max-record (checked here, where
                    // the records are split: the reader's cutter stops only at one whose end has
                    // not come), is named by its offset in the (decoded) data.
                    let found = filter.block_within(&b.data, b.format, b.at_end, keep_records.then_some(&mut o), max_record).map_err(|r| match r {
                        Refused::Malformed(m) => Refused::Malformed(Malformed { offset: m.offset + b.offset as usize, ..m }),
                        Refused::TooLong { offset, len } => Refused::TooLong { offset: offset + b.offset as usize, len },
                    });
                    if tx.send((seq, found, o)).is_err() {
                        return;
                    }
                }
            });
        }
        drop((block_rx, found_tx));
        let (mut total, mut next, mut waiting) = (Found::default(), 0u64, BTreeMap::new());
        let (mut write_error, mut refused) = (None, None);
        // A malformed or too long record stops the job: the channel dropped at the break
        // stops the filter threads, and they the reader.
        'blocks: for (seq, found, o) in found_rx {
            waiting.insert(seq, (found, o));
            while let Some((found, o)) = waiting.remove(&next) {
                next += 1;
                let found = match found {
                    Ok(found) => found,
                    Err(r) => {
                        refused = Some(r);
                        break 'blocks;
                    }
                };
                total.add(&found);
                if let (Some(w), None) = (out.as_deref_mut(), &write_error) {
                    if let Err(e) = w.write_all(&o) {
                        write_error = Some(e);
                    }
                }
            }
        }
        let read = reader.join().expect("the scan reader does not panic");
        let of = if gzip { " of its decompressed data" } else { "" };
        match refused {
            Some(Refused::Malformed(m)) => {
                return Err(JobError::Damaged { path: path.to_path_buf(), detail: format!("not FASTQ: the record at byte {}{of} is malformed: {}", m.offset, m.fault.why()) });
            }
            // As the reader says a record whose end did not come within the limit (exit 12).
            Some(Refused::TooLong { offset, len }) => {
                let t = RecordTooLong { offset: offset as u64, waiting: len as u64, ended: true, why: TooLongWhy::Limit(max_record as u64) };
                return Err(JobError::SourceIo { path: path.to_path_buf(), detail: format!("{t}{of}") });
            }
            None => {}
        }
        let (bytes, format) = read?;
        if let Some((f, size)) = &opened {
            kept_its_size(path, f, *size, (!gzip).then_some(bytes))?;
        }
        match write_error {
            Some(e) => Err(JobError::TargetIo { path: out_path.to_path_buf(), source: e }),
            None => Ok((total, bytes, format)),
        }
    })
}

/// A block of whole records for the filter threads, and its place among them.
struct Block {
    seq: u64,
    cut: CutBlock,
}

/// Reads (and decodes) `input`, sending blocks of whole records; returns the
/// bytes read and the format (given, or told from the first byte; `None`: no bytes).
/// `file`: a file, whose end a crash could have zeroed (gzip input: more zeros after its last
/// member than padding leaves are an error; any, from a pipe).
fn read_blocks(
    input: impl Read,
    (gzip, file, allow_no_end_member): (bool, bool, bool),
    (format, max_record): (Option<RecordFormat>, usize),
    path: &Path,
    tx: crossbeam_channel::Sender<Block>,
) -> Result<(u64, Option<RecordFormat>), JobError> {
    let mut cutter = BlockCutter::new(format, BLOCK_BYTES).max_record(max_record);
    let (mut seq, mut bytes) = (0u64, 0u64);
    // A record too long to wait for stops the reading (the decoder too): said as itself.
    let too_long = std::cell::Cell::new(None);
    let mut push = |data: &[u8], at_end: bool| {
        bytes += data.len() as u64;
        cutter.push(data, at_end, |cut| {
            tx.send(Block { seq, cut }).map_err(|_| std::io::Error::other("the filter threads stopped"))?;
            seq += 1;
            Ok::<(), std::io::Error>(())
        })?;
        match cutter.too_long() {
            Some(t) => {
                too_long.set(Some(t));
                Err(std::io::Error::other(t.to_string()))
            }
            None => Ok(()),
        }
    };
    let io_error = |e: std::io::Error| JobError::SourceIo { path: path.to_path_buf(), detail: too_long.get().map_or_else(|| e.to_string(), |t| t.to_string()) };
    if gzip {
        let decoder = peerpath_func::StreamDecoder::new(input, 0, 0);
        let decoder = if file { decoder } else { decoder.any_zero_padding() };
        let mut decoder = if allow_no_end_member { decoder.allow_missing_end_member() } else { decoder };
        let ran = decoder.run(true, |d| push(d, false));
        if let Some(t) = too_long.get() {
            let of = " of its decompressed data";
            return Err(JobError::SourceIo { path: path.to_path_buf(), detail: format!("{t}{of}") });
        }
        ran.map_err(|e| peerpath_runtime::decompress::stream_error(path, e))?;
    } else {
        let mut input = input;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => push(&buf[..n], false).map_err(io_error)?,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        }
    }
    push(&[], true).map_err(io_error)?;
    Ok((bytes, cutter.format()))
}
