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
use peerpath_func::scan::{whole_records, Filter, Found, Malformed, RecordFormat};
use peerpath_runtime::JobError;
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
    /// Record format [default: from the first byte: > FASTA, @ FASTQ, else lines].
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Write the matching records here (appears whole or not at all) instead of standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Replace an existing output.
    #[arg(short, long)]
    force: bool,
    /// Filter threads [default: all cores].
    #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// No summary on standard error.
    #[arg(short, long)]
    quiet: bool,
    /// Where the filter runs: cpu (this process); emulated (an emulated CSP counts plain
    /// files in its own memory; only counts and histograms come back: --count or --histogram);
    /// or gpu (the same on a GPU, with peerpath's scan kernels walking the motif as a DFA,
    /// through its pinned host window).
    #[arg(long, value_enum, default_value = "cpu")]
    engine: ScanEngine,
    /// With --engine emulated or gpu: fail (exit 15) instead of counting on the CPU when the device cannot.
    #[arg(long)]
    no_fallback: bool,
    /// With --engine gpu: which GPU.
    #[arg(long, default_value_t = 0)]
    gpu: usize,
    /// Testing aid, with --engine emulated: inject seeded device faults, e.g. "seed=7,crash-after=3,error=0.1" (no corrupt=: the device's counts cannot be checked).
    #[arg(long, value_parser = crate::parse_faults)]
    inject_faults: Option<peerpath_device::FaultConfig>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScanEngine {
    Cpu,
    Emulated,
    Gpu,
}

/// The `-o` target's temporary file, how it exists, and its final name.
type OutputFile = (File, peerpath_io::Temporary, PathBuf);

pub fn main(a: ScanArgs) -> ExitCode {
    crate::exit_code(run(a))
}

fn run(a: ScanArgs) -> Result<(), JobError> {
    if a.motif.is_none() && a.min_length.is_none() && a.id_prefix.is_none() {
        return Err(JobError::Usage("give at least one of --motif, --min-length, --id-prefix".into()));
    }
    let motif = match &a.motif {
        Some(m) => Some(regex::bytes::RegexBuilder::new(m).case_insensitive(a.ignore_case).build().map_err(|e| JobError::Usage(format!("--motif: {e}")))?),
        None => None,
    };
    let filter = Filter { motif, min_length: a.min_length, id_prefix: a.id_prefix.as_ref().map(|p| p.as_bytes().to_vec()) };
    let mut device = None;
    if a.inject_faults.is_some() && a.engine != ScanEngine::Emulated {
        return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
    }
    if a.inject_faults.as_ref().is_some_and(|f| f.corrupt_probability > 0.0) {
        return Err(JobError::Usage("scan cannot check the device's counts: --inject-faults takes no corrupt= with it".into()));
    }
    if a.gpu != 0 && a.engine != ScanEngine::Gpu {
        return Err(JobError::Usage("--gpu needs --engine gpu".into()));
    }
    if a.engine != ScanEngine::Cpu {
        let engine = if a.engine == ScanEngine::Gpu { "gpu" } else { "emulated" };
        if !a.count && !a.histogram {
            return Err(JobError::Usage(format!("--engine {engine} returns only counts: add --count or --histogram")));
        }
        if a.id_prefix.is_some() {
            return Err(JobError::Usage("--id-prefix is not a device filter yet: use --engine cpu".into()));
        }
        let started = match a.engine {
            ScanEngine::Gpu => scan_device::start_gpu(a.gpu, a.motif.as_deref(), a.ignore_case),
            _ => scan_device::start(a.inject_faults.clone()),
        };
        match started {
            Ok(d) => device = Some(d),
            Err(why) if a.no_fallback => return Err(JobError::Device { detail: format!("{why} (--no-fallback)") }),
            Err(why) => eprintln!("peerpath: FALLBACK: {why}: scanning on the host CPU"),
        }
    }
    let device_name = if a.engine == ScanEngine::Gpu { format!("GPU {}", a.gpu) } else { "the emulated CSP".to_string() };
    let threads = a.threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize);
    let records_out = !a.count && !a.histogram;
    let (mut sink, temp): (Box<dyn Write>, Option<OutputFile>) = match (&a.output, records_out) {
        (Some(o), true) if !peerpath_runtime::job::is_std_stream(o) => {
            for f in &a.files {
                peerpath_runtime::job::check_target(f, o, a.force)?;
            }
            let (t, temp) = peerpath_io::create_temporary(o, false).map_err(|e| JobError::TargetIo { path: o.clone(), source: e })?;
            let writer = t.file.try_clone().map_err(|e| JobError::TargetIo { path: o.clone(), source: e })?;
            (Box::new(std::io::BufWriter::with_capacity(1 << 20, writer)), Some((t.file, temp, o.clone())))
        }
        _ => (Box::new(std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock())), None),
    };
    let out_path = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let result = (|| -> Result<(), JobError> {
        let started = Instant::now();
        let (mut total, mut bytes) = (Found::default(), 0u64);
        let mut where_ran: Option<String> = None;
        let mut cpu_files = 0usize;
        let format = a.format.map(|f| match f {
            FormatArg::Fasta => RecordFormat::Fasta,
            FormatArg::Fastq => RecordFormat::Fastq,
            FormatArg::Lines => RecordFormat::Lines,
        });
        for (i, f) in a.files.iter().enumerate() {
            let on_device = match device.as_mut() {
                Some(dev) => device_scan(dev.as_mut(), f, format, &a)?,
                None => None,
            };
            // A device that failed takes no more commands: the files after this one
            // go to the CPU without asking it again (said once, here; why, above).
            if device.as_ref().is_some_and(|d| d.failure().is_some()) {
                device = None;
                if i + 1 < a.files.len() {
                    eprintln!("peerpath: FALLBACK: {device_name} has failed: the {} file(s) after {} are scanned on the host CPU", a.files.len() - i - 1, f.display());
                }
            }
            let (found, n) = match on_device {
                Some(d) => {
                    let (on, into, back, provenance) = if d.staged {
                        (format!("1 GPU ({device_name}, peerpath's scan kernels)"), "its pinned host window and copied to GPU memory by the device", " copied back", "measured on a real accelerator (GPU)")
                    } else {
                        ("1 emulated CSP".to_string(), "its memory", "", "measured on emulated devices")
                    };
                    let copies = crate::device_job::host_copies(d.host_copied, "the motif, the format's first byte and the counters", d.bytes);
                    where_ran = Some(format!("on {on}: {} read {} into {into}, {} block(s), {} bytes of results each{back}; {copies} ({provenance})", f.display(), crate::device_job::moved(d.direct), d.blocks, peerpath_device::SCAN_RESULT_BYTES));
                    (d.found, d.bytes)
                }
                None => {
                    cpu_files += 1;
                    scan_file(f, format, &filter, threads, records_out.then_some(&mut *sink as &mut dyn Write), &out_path)?
                }
            };
            if a.count {
                let line = if a.files.len() > 1 { format!("{}\t{}", f.display(), found.matched) } else { found.matched.to_string() };
                writeln!(sink, "{line}").map_err(|e| JobError::TargetIo { path: out_path.clone(), source: e })?;
            }
            total.add(&found);
            bytes += n;
        }
        if a.histogram {
            for (b, n) in total.histogram.iter().enumerate().filter(|(_, n)| **n > 0) {
                let (lo, hi) = (if b == 0 { 0 } else { 1u64 << b }, (1u64 << (b + 1)) - 1);
                writeln!(sink, "{lo}-{hi}\t{n}").map_err(|e| JobError::TargetIo { path: out_path.clone(), source: e })?;
            }
        }
        sink.flush().map_err(|e| JobError::TargetIo { path: out_path.clone(), source: e })?;
        if !a.quiet {
            let s = started.elapsed().as_secs_f64();
            let gpu = a.engine == ScanEngine::Gpu;
            let on = match (where_ran.is_some(), cpu_files, gpu) {
                (false, _, _) => "measured on this host's CPU",
                (true, 0, false) => "measured on emulated devices",
                (true, 0, true) => "measured on a real accelerator (GPU)",
                (true, _, false) => "measured: files on the emulated CSP and on this host's CPU",
                (true, _, true) => "measured: files on a real accelerator (GPU) and on this host's CPU",
            };
            eprintln!(
                "scan: {} of {} record(s) matched ({} bases); read {} in {s:.3} s, {:.2} GB/s ({on})",
                total.matched,
                total.records,
                total.matched_bases,
                peerpath_metrics::human_bytes(bytes),
                bytes as f64 / s.max(1e-9) / 1e9,
            );
            if cpu_files > 0 {
                eprintln!("scan: {cpu_files} file(s) on {threads} filter thread(s) of the host CPU");
            }
            if let Some(w) = &where_ran {
                eprintln!("scan: {w}");
            }
        }
        Ok(())
    })();
    drop(sink);
    match (result, temp) {
        (Err(e), Some((_, temp, _))) => {
            peerpath_io::discard(&temp);
            Err(e)
        }
        (Err(e), None) => Err(e),
        // The records keep their first source's permissions (as compress's output does), a new file's for standard input.
        (Ok(()), Some((file, temp, path))) => peerpath_io::Inherited::mode_of(a.files.first().filter(|f| !peerpath_runtime::job::is_std_stream(f)).and_then(|f| std::fs::metadata(f).ok()).as_ref())
            .apply(&file)
            .map_err(|e| JobError::TargetIo { path: path.clone(), source: e })
            .and_then(|()| crate::put_in_place(&file, &temp, &path, a.force))
            .inspect_err(|_| peerpath_io::discard(&temp)),
        (Ok(()), None) => Ok(()),
    }
}

/// Counts one file on the device, or `None` where the CPU must (gzip
/// input, standard input, not a regular file), said on standard error or
/// refused with --no-fallback.
fn device_scan(dev: &mut dyn Device, f: &Path, format: Option<RecordFormat>, a: &ScanArgs) -> Result<Option<scan_device::DeviceScan>, JobError> {
    let cpu = |why: String| {
        if a.no_fallback {
            Err(JobError::Device { detail: format!("{}: {why} (--no-fallback)", f.display()) })
        } else {
            eprintln!("peerpath: FALLBACK: {}: {why}: scanned on the host CPU", f.display());
            Ok(None)
        }
    };
    if peerpath_runtime::job::is_std_stream(f) {
        return cpu("standard input is not read into device memory".into());
    }
    let opened = peerpath_io::open_source(f, true).map_err(|e| JobError::SourceUnreadable { path: f.to_path_buf(), source: e })?;
    let mut magic = [0u8; 2];
    let gzip = std::os::unix::fs::FileExt::read_at(&File::open(f).map_err(|e| JobError::SourceUnreadable { path: f.to_path_buf(), source: e })?, &mut magic, 0).is_ok_and(|n| n == 2) && magic == [0x1f, 0x8b];
    if gzip {
        return cpu("gzip input is decoded on the host (the device does not inflate yet)".into());
    }
    if !matches!(opened.kind, peerpath_io::SourceKind::Regular { .. }) {
        return cpu("not a regular file".into());
    }
    // Nothing is printed for a file until the device has counted all of it, so a
    // device that fails (or a record longer than it carries) hands the whole file
    // to the CPU.
    match scan_device::scan(dev, (&opened.file, f), format, a.motif.as_deref().unwrap_or(""), a.ignore_case, a.min_length) {
        Ok(d) => Ok(Some(d)),
        Err(Stop::Job(e)) => Err(e),
        Err(Stop::Device(why)) => cpu(format!("the device could not count it ({why}); nothing was printed for it")),
    }
}

/// Filters one file: returns what was found and how many (decoded) bytes were read.
fn scan_file(path: &Path, format: Option<RecordFormat>, filter: &Filter, threads: usize, mut out: Option<&mut dyn Write>, out_path: &Path) -> Result<(Found, u64), JobError> {
    let mut input: Box<dyn Read + Send> = if peerpath_runtime::job::is_std_stream(path) { Box::new(std::io::stdin()) } else { Box::new(crate::open_file_source(path)?) };
    // Gzip or not, from the first two bytes (kept and replayed).
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match input.read(&mut magic[got..]).map_err(|e| JobError::SourceIo { path: path.to_path_buf(), detail: e.to_string() })? {
            0 => break,
            n => got += n,
        }
    }
    let gzip = got == 2 && magic == [0x1f, 0x8b];
    let input = std::io::Cursor::new(magic[..got].to_vec()).chain(input);
    let (block_tx, block_rx) = bounded::<Block>(threads * 2);
    let (found_tx, found_rx) = bounded::<(u64, Result<Found, Malformed>, Vec<u8>)>(threads * 2);
    let keep_records = out.is_some();
    std::thread::scope(|s| -> Result<(Found, u64), JobError> {
        let reader = s.spawn(move || read_blocks(input, gzip, format, path, block_tx));
        for _ in 0..threads {
            let (rx, tx) = (block_rx.clone(), found_tx.clone());
            s.spawn(move || {
                for b in rx {
                    let mut o = Vec::new();
                    // A malformed record is named by its offset in the (decoded) data.
                    let found = filter.block(&b.data, b.format, b.at_end, keep_records.then_some(&mut o)).map_err(|m| Malformed { offset: m.offset + b.offset as usize, ..m });
                    if tx.send((b.seq, found, o)).is_err() {
                        return;
                    }
                }
            });
        }
        drop((block_rx, found_tx));
        let (mut total, mut next, mut waiting) = (Found::default(), 0u64, BTreeMap::new());
        let (mut write_error, mut malformed) = (None, None);
        // A malformed record stops the job: the channel dropped at the break stops
        // the filter threads, and they the reader.
        'blocks: for (seq, found, o) in found_rx {
            waiting.insert(seq, (found, o));
            while let Some((found, o)) = waiting.remove(&next) {
                next += 1;
                let found = match found {
                    Ok(found) => found,
                    Err(m) => {
                        malformed = Some(m);
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
        if let Some(m) = malformed {
            let of = if gzip { " of its decompressed data" } else { "" };
            return Err(JobError::Damaged { path: path.to_path_buf(), detail: format!("not FASTQ: the record at byte {}{of} is malformed: {}", m.offset, m.fault.why()) });
        }
        let bytes = read?;
        match write_error {
            Some(e) => Err(JobError::TargetIo { path: out_path.to_path_buf(), source: e }),
            None => Ok((total, bytes)),
        }
    })
}

/// A block of whole records for the filter threads.
struct Block {
    seq: u64,
    /// Where it starts in the (decoded) data.
    offset: u64,
    data: Vec<u8>,
    format: RecordFormat,
    /// The data's last block.
    at_end: bool,
}

/// Reads (and decodes) `input`, sending blocks of whole records; returns the bytes read.
fn read_blocks(input: impl Read, gzip: bool, format: Option<RecordFormat>, path: &Path, tx: crossbeam_channel::Sender<Block>) -> Result<u64, JobError> {
    let mut pending: Vec<u8> = Vec::with_capacity(2 * BLOCK_BYTES);
    let mut fmt = format;
    let (mut seq, mut bytes, mut offset) = (0u64, 0u64, 0u64);
    let mut push = |data: &[u8], at_end: bool| {
        pending.extend_from_slice(data);
        bytes += data.len() as u64;
        while pending.len() >= BLOCK_BYTES || (at_end && !pending.is_empty()) {
            let f = *fmt.get_or_insert_with(|| RecordFormat::detect(&pending));
            let Some(cut) = whole_records(&pending, f, at_end).filter(|&c| c > 0) else { break };
            let rest = pending.split_off(cut);
            let data = std::mem::replace(&mut pending, rest);
            let len = data.len() as u64;
            if tx.send(Block { seq, offset, data, format: f, at_end: at_end && pending.is_empty() }).is_err() {
                return Err(std::io::Error::other("the filter threads stopped"));
            }
            (seq, offset) = (seq + 1, offset + len);
        }
        Ok(())
    };
    let io_error = |e: std::io::Error| JobError::SourceIo { path: path.to_path_buf(), detail: e.to_string() };
    if gzip {
        peerpath_func::StreamDecoder::new(input, 0, 0).run(true, |d| push(d, false)).map_err(|e| peerpath_runtime::decompress::stream_error(path, e))?;
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
    Ok(bytes)
}
