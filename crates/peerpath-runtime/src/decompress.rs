//! Decompression and verification.
//!
//! Files whose members declare their sizes (peerpath's 'PP' subfield,
//! BGZF's 'BC') are split into members without inflating and decoded on
//! all cores; a member that lies inside one read buffer is decoded in place
//! (no copy). Any other valid gzip falls back to the one-thread streaming
//! decoder from the first member without sizes, and the report says so.

use crate::buf::{BufferCache, JobBuf};
use crate::job::{open_source_checked, open_target, set_engine};
use crate::error::{JobError, Result};
use crate::job::{check_sources_are_not_targets, check_target, put_all_in_place, CommonOptions, Writes};
use crate::token::Token;
use crate::report::{name_bytes, Checked, DecodeMode, Quoted, Fallback, FileReport, JobReport, JobSummary, MemoryReport, Operation};
use crate::gpu_decode::{GpuDecoder, OnGpu};
use crate::workers::WorkerPool;
use crate::writer::TargetWriter;
use peerpath_func::gzip::declared_output_bytes;
use peerpath_func::crypt::FileCipher;
use peerpath_func::{decode_member, DeclaredSizes, HeaderError, MemberError, MemberHeader, StreamDecoder, StreamError};
use peerpath_io::{choose_engine, Completion, EngineKind, IoEngine, IoOp, IoPath, SourceKind, Waker};
use peerpath_mem::{AlignedBuf, BufferPool, FileMapping, MemoryDomain, PooledBuf};
use peerpath_metrics::{thread_cpu_now, CpuAccount, CpuRole, Ledger, Location, Mover, Purpose};
use std::collections::{BTreeMap, VecDeque};
use std::io::{Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Default)]
pub struct DecompressOptions {
    pub common: CommonOptions,
    /// The key for encrypted sources (peerpath-enc/1, as `compress --encrypt` writes them).
    pub key: Option<Arc<peerpath_func::crypt::Key>>,
    /// Decode on a GPU (`None`: the host CPU).
    pub gpu: Option<crate::gpu_decode::GpuDecodeSpec>,
    /// A file whose last member is peerpath's without the end member after
    /// it decodes without an error (a file written before peerpath wrote end
    /// members; a cut at a member's end goes unnoticed).
    pub allow_missing_end_member: bool,
}

const READ_BYTES: usize = 4 << 20;
const WINDOW_BUFFERS: usize = 16;
const HEADER_PEEK_BYTES: usize = 1024;

/// The member bytes a task decodes: in place in a read buffer, a copy, or
/// a range of what the task reads itself (its batch's [`WorkerRead`]).
enum MemberBytes {
    InPlace(Arc<PooledBuf>, std::ops::Range<usize>),
    Copied(Vec<u8>),
    InRead(std::ops::Range<usize>),
}

impl MemberBytes {
    /// The bytes, where `read` is what the task read for its batch.
    fn bytes<'a>(&'a self, read: &'a [u8]) -> &'a [u8] {
        match self {
            MemberBytes::InPlace(b, r) => &b[r.clone()],
            MemberBytes::Copied(v) => v,
            MemberBytes::InRead(r) => &read[r.clone()],
        }
    }
}

/// Where a batch's task reads its members itself: one `pread` of its
/// member bytes from `offset` of the source (`size` bytes when opened).
#[derive(Clone)]
struct WorkerRead {
    file: Arc<std::fs::File>,
    offset: u64,
    size: u64,
}

/// A batch of consecutive members, decoded by one task into one contiguous
/// output buffer: decompressed blocks land back to back, so the writer gets
/// ~4 MiB aligned pieces it writes in place (one large write instead of
/// several small ones, and no packing copy).
struct Batch {
    first_index: u64,
    members: Vec<(MemberHeader, MemberBytes, u64, usize)>,
    member_bytes: usize,
    out_bytes: usize,
    /// Where the task reads its members itself.
    read_from: Option<WorkerRead>,
}

const BATCH_OUTPUT_BYTES: usize = 4 << 20;
/// Declared output bytes allowed in flight (decoding or awaiting their
/// turn), so sizes that claim the maximum cannot exhaust memory: 64 MiB,
/// or two batches per worker and two awaiting their write where that is
/// more (a fixed 64 MiB left 16 workers one batch each, idle between them).
fn max_outstanding_output_bytes(threads: usize, batch_bytes: usize) -> usize {
    (64 << 20).max((threads * 2 + 2) * batch_bytes)
}

impl Batch {
    fn new(first_index: u64) -> Self {
        Batch { first_index, members: Vec::new(), member_bytes: 0, out_bytes: 0, read_from: None }
    }
}

/// Where a batch decodes to: a buffer the writer then writes, or its range
/// of the mapped target (a memory file system's file: nothing to write).
enum Output {
    Buf(AlignedBuf),
    Mapped { map: Arc<FileMapping>, at: usize, len: usize },
}

impl Output {
    fn len(&self) -> usize {
        match self {
            Output::Buf(b) => b.len(),
            Output::Mapped { len, .. } => *len,
        }
    }
}

struct Decoded {
    first_index: u64,
    count: u64,
    member_bytes: usize,
    declared_out_bytes: usize,
    /// What of it the GPU decoded.
    on_gpu: OnGpu,
    /// On failure: what failed, at which member's index.
    result: std::result::Result<Output, (BatchFailure, u64, Output)>,
    /// What the task read itself: the buffer, where from, and the read's result.
    read: Option<(AlignedBuf, WorkerRead, std::io::Result<usize>)>,
}

enum BatchFailure {
    /// A member (at this offset in the source) does not decode; the members before it in
    /// the batch decoded into this many bytes.
    Member(MemberError, u64, usize),
    /// The mapped target's range could not be allocated (a full file system).
    Target(std::io::Error),
    /// The GPU did not decode (with `--no-fallback`).
    Device(String),
    /// The task's read of its members failed or came short (`Decoded::read` says how).
    Read,
}

/// Shared by every file of a job.
struct Ctx<'a> {
    engine: &'a mut dyn IoEngine<JobBuf>,
    workers: WorkerPool<Decoded>,
    waker: Waker,
    ledger: Ledger,
    cache: BufferCache,
    pool: BufferPool,
    common: &'a CommonOptions,
    done_bytes: u64,
    /// The orchestrator's waits and the queues' occupancy.
    clock: peerpath_metrics::PipelineClock,
    key: Option<Arc<peerpath_func::crypt::Key>>,
    /// Decompressed bytes per batch: 4 MiB on the CPU, the GPU's batch with one.
    batch_bytes: usize,
    gpu: Option<Arc<GpuDecoder>>,
    /// Whether a file of peerpath's members must end with its end member.
    end_member_required: bool,
}

fn member_error(path: &Path, member: u64, offset: u64, e: MemberError) -> JobError {
    let path = path.to_path_buf();
    match e {
        MemberError::Header(HeaderError::NotGzip(a, b)) if member == 0 => {
            // "PP": how an encrypted file begins (PPENCv1), which is opened only by name.
            let encrypted = if (a, b) == (b'P', Some(b'P')) { " (an encrypted file, peerpath-enc/1, starts so: give it by name, not on standard input, where its blocks cannot be read by position)" } else { "" };
            JobError::NotGzip { path, detail: format!("starts with {}, not 1f 8b{encrypted}", peerpath_func::gzip::first_bytes(a, b)) }
        }
        MemberError::Header(HeaderError::NotGzip(..)) => JobError::TrailingGarbage { path, offset },
        MemberError::Header(HeaderError::Truncated { .. }) | MemberError::Truncated { .. } | MemberError::CutShort { .. } => {
            JobError::Truncated { path, member, offset, detail: e.to_string() }
        }
        other => JobError::Corrupt { path, member, offset, detail: other.to_string() },
    }
}

/// A gzip stream's failure as the job error (and exit code) decompress gives it.
pub fn stream_error(path: &Path, e: StreamError) -> JobError {
    match e {
        StreamError::Member { member, offset, error } => member_error(path, member, offset, error),
        StreamError::Empty => JobError::EmptyArchive { path: path.to_path_buf() },
        StreamError::TrailingGarbage { offset } => JobError::TrailingGarbage { path: path.to_path_buf(), offset },
        e @ StreamError::ZeroTail { .. } => JobError::ZeroTail { path: path.to_path_buf(), detail: e.to_string() },
        StreamError::NoEndMember { offset } => no_end_member(path, offset),
        StreamError::NotPeerpathAfterPeerpath { member, offset } => not_peerpath_after_peerpath(path, member, offset),
        StreamError::Io(e) => JobError::SourceIo { path: path.to_path_buf(), detail: e.to_string() },
    }
}

/// What every missing-end-member error adds: how to read a file written before end members.
pub const ALLOW_NO_END_MEMBER_HINT: &str = "(a file written before peerpath ended files with it, 2026-12-03, is read whole with --allow-no-end-member: decompress, verify, scan, gzip)";

/// A file of peerpath's members that ends at byte `offset` without the end
/// member peerpath writes after the last: cut at a member's end (exit 7).
fn no_end_member(path: &Path, offset: u64) -> JobError {
    let e = StreamError::NoEndMember { offset };
    JobError::TruncatedFile { path: path.to_path_buf(), detail: format!("{e} {ALLOW_NO_END_MEMBER_HINT}") }
}

/// A member that is not peerpath's right after one of peerpath's that wants
/// its end member: the file is damaged there (exit 6), not cut at its end.
fn not_peerpath_after_peerpath(path: &Path, member: u64, offset: u64) -> JobError {
    JobError::Corrupt { path: path.to_path_buf(), member, offset, detail: format!("{} {ALLOW_NO_END_MEMBER_HINT}", peerpath_func::gzip::NOT_PEERPATH_AFTER_PEERPATH) }
}

/// Decompresses each source into its target.
pub fn decompress(pairs: &[(PathBuf, PathBuf)], opts: &DecompressOptions) -> Result<JobReport> {
    for (s, t) in pairs {
        check_target(s, t, opts.common.force, Writes::FileOrStdout)?;
    }
    check_sources_are_not_targets(pairs)?;
    crate::job::make_room_for_files(pairs.len(), true)?;
    let items: Vec<(PathBuf, Option<PathBuf>)> = pairs.iter().map(|(s, t)| (s.clone(), Some(t.clone()))).collect();
    run_job(Operation::Decompress, &items, opts, false).map(|(report, _)| report)
}

/// Checks every member of each source (CRC-32 and length) without writing;
/// the first bad source ends the job with its error.
pub fn verify(sources: &[PathBuf], opts: &DecompressOptions) -> Result<JobReport> {
    let (report, mut failed) = verify_each(sources, opts)?;
    match failed.is_empty() {
        true => Ok(report),
        false => Err(failed.remove(0)),
    }
}

/// Checks every source, as `gzip -t` does: a bad one (damaged, truncated,
/// not gzip, unreadable, a wrong key) is named in the report's `failed`, and
/// its error returned in order, and the job goes on with the next. What
/// concerns the job itself (a device, a cancel, an internal error) ends it.
pub fn verify_each(sources: &[PathBuf], opts: &DecompressOptions) -> Result<(JobReport, Vec<JobError>)> {
    crate::job::make_room_for_files(sources.len(), false)?;
    let items: Vec<(PathBuf, Option<PathBuf>)> = sources.iter().map(|s| (s.clone(), None)).collect();
    run_job(Operation::Verify, &items, opts, true)
}

/// A failure that belongs to one source alone: the next can still be checked.
fn source_failure(e: &JobError) -> bool {
    matches!(
        e,
        // Of one source (an encrypted one without a key, say): the job's own usage errors are
        // found before its first file.
        JobError::Usage(_)
            | JobError::SourceUnreadable { .. }
            | JobError::Corrupt { .. }
            | JobError::Damaged { .. }
            | JobError::Truncated { .. }
            | JobError::TruncatedFile { .. }
            | JobError::NotGzip { .. }
            | JobError::TrailingGarbage { .. }
            | JobError::ZeroTail { .. }
            | JobError::EmptyArchive { .. }
            | JobError::SourceIo { .. }
            | JobError::WrongKey { .. }
    )
}

/// `keep_going`: a source's own failure is kept, and the job goes on (verify).
fn run_job(operation: Operation, items: &[(PathBuf, Option<PathBuf>)], opts: &DecompressOptions, keep_going: bool) -> Result<(JobReport, Vec<JobError>)> {
    let clocks = (Instant::now(), CpuAccount::start(), thread_cpu_now());
    let mut fallbacks = Vec::new();
    let mut on_cpu = None;
    let gpu = match &opts.gpu {
        None => None,
        Some(spec) => match GpuDecoder::open(spec, opts.common.threads.max(1)) {
            Ok(g) => Some(Arc::new(g)),
            Err(why) if spec.no_fallback => return Err(JobError::Device { detail: format!("GPU unavailable: {why} (--no-fallback)") }),
            Err(why) => {
                fallbacks.push(Fallback::DeviceNotStarted { device: format!("GPU {}", spec.ordinal), why });
                // The CPU decodes on the threads it would have had without a GPU.
                on_cpu = spec.cpu_threads.map(|threads| DecompressOptions { common: CommonOptions { threads, ..opts.common.clone() }, gpu: None, ..opts.clone() });
                None
            }
        },
    };
    run_job_on(operation, items, on_cpu.as_ref().unwrap_or(opts), gpu, fallbacks, clocks, keep_going)
}

/// Runs the job, with `gpu` (opened, or a test's stand-in) decoding its
/// batches; `clocks` started before the GPU was opened (wall, CPU, this thread's CPU).
fn run_job_on(
    operation: Operation,
    items: &[(PathBuf, Option<PathBuf>)],
    opts: &DecompressOptions,
    gpu: Option<Arc<GpuDecoder>>,
    mut fallbacks: Vec<Fallback>,
    clocks: (Instant, CpuAccount, peerpath_metrics::CpuTime),
    keep_going: bool,
) -> Result<(JobReport, Vec<JobError>)> {
    let (start, cpu, orchestration_start) = clocks;
    let pipes = items.iter().any(|(s, t)| crate::job::is_std_stream(s) || t.as_deref().is_some_and(crate::job::is_std_stream));
    let qd = opts.common.queue_depth.max(1);
    let (mut engine, note) = choose_engine::<JobBuf>(qd + 8, opts.common.sync_io || pipes);
    let note = if pipes && !opts.common.sync_io { Some("pipes need ordered reads and writes; using read/write".into()) } else { note };
    fallbacks.extend(note.iter().map(|n| Fallback::IoEngine { why: n.clone() }));
    let waker = Waker::new().map_err(|e| JobError::Internal(format!("eventfd: {e}")))?;
    let threads = opts.common.threads.max(1);
    let batch_bytes = match (&gpu, &opts.gpu) {
        (Some(_), Some(spec)) => spec.batch_bytes.max(BATCH_OUTPUT_BYTES),
        _ => BATCH_OUTPUT_BYTES,
    };
    // Read buffers: the read-ahead (a buffer per worker) plus what the
    // tasks in flight hold (up to two batches per worker, each keeping
    // its members' buffers): 16 (64 MiB) up to 6 threads, 2 per thread
    // + 4 above (16 threads: 36, 144 MiB). docs/tuning.md#decompress-read-ahead.
    // With a GPU, whose batches are large: enough for a batch per worker
    // and one being split, at one compressed byte per decompressed byte at most
    // (docs/gpu-nvcomp.md, section 9). Memory that cannot be mapped is the job's error.
    let pool = BufferPool::try_new(
        WINDOW_BUFFERS.max(qd as usize + 2).max(2 * threads + 4).max(if gpu.is_some() { (threads + 1) * batch_bytes.div_ceil(READ_BYTES) } else { 0 }),
        READ_BYTES,
    )
    .map_err(crate::buf::out_of_memory)?;
    let mut ctx = Ctx {
        engine: engine.as_mut(),
        workers: WorkerPool::new(threads, waker.clone(), cpu.clone())?,
        waker,
        ledger: Ledger::new(),
        cache: BufferCache::new(threads * 4 + 8),
        pool,
        common: &opts.common,
        done_bytes: 0,
        clock: peerpath_metrics::PipelineClock::default(),
        key: opts.key.clone(),
        batch_bytes,
        gpu: gpu.clone(),
        end_member_required: !opts.allow_missing_end_member,
    };
    let _woken = crate::cancel::wake_on_cancel(&ctx.waker);
    let mut files = Vec::new();
    // Finished targets wait here, durable but under their temporary names,
    // until every file has succeeded: like compress, a failure keeps none.
    let mut finished: Vec<TargetWriter> = Vec::new();
    let abandon_all = |finished: Vec<TargetWriter>| finished.into_iter().for_each(TargetWriter::abandon);
    let mut failed = Vec::new();
    // What the files are, each named once, in the order first met.
    let mut formats: Vec<&'static str> = Vec::new();
    for (source, target) in items {
        // A job cancelled from outside ends with that, whatever its transfers then said.
        let done = run_file(&mut ctx, source, target.as_ref()).map_err(|f| FileFailure { error: crate::cancel::or_cancelled(f.error), ..*f });
        let (mut f, writer, worker_reads, format) = match done {
            Ok(done) => done,
            // Nothing of the file still in flight (run_file drained it): the next can start.
            Err(bad) if keep_going && source_failure(&bad.error) && ctx.engine.in_flight() == 0 && ctx.workers.in_flight() == 0 => {
                if let Some(m) = bad.decode_mode.as_ref().filter(|m| m.is_streaming()) {
                    fallbacks.push(Fallback::StreamingDecode { source: source.clone(), mode: m.clone() });
                }
                failed.push((source.clone(), bad));
                continue;
            }
            Err(FileFailure { error: e, .. }) => {
                abandon_all(finished);
                // The sources found bad before the job itself failed are said (their report
                // will not be printed).
                failed.iter().for_each(|(_, bad): &(PathBuf, FileFailure)| {
                    let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("peerpath: error: {}\n", bad.error));
                });
                return Err(e);
            }
        };
        finished.extend(writer);
        if !formats.contains(&format) {
            formats.push(format);
        }
        if !worker_reads {
            set_engine(&mut f.read_path, ctx.engine.kind(), &note);
        }
        if let Some(w) = f.write_path.as_mut() {
            set_engine(w, ctx.engine.kind(), &note);
        }
        if let Some(r) = &f.read_path.fallback_reason {
            if !f.read_path.direct {
                fallbacks.push(Fallback::ReadsNotDirect { source: source.clone(), why: r.clone() });
            }
        }
        if let Some(w) = &f.write_path {
            if let (false, Some(r)) = (w.direct, &w.fallback_reason) {
                fallbacks.push(Fallback::WritesNotDirect { target: target.clone().unwrap_or_else(|| "-".into()), why: r.clone() });
            }
        }
        if let Some(m) = f.decode_mode.as_ref().filter(|m| m.is_streaming()) {
            fallbacks.push(Fallback::StreamingDecode { source: source.clone(), mode: m.clone() });
        }
        files.push(f);
    }
    put_all_in_place(finished, opts.common.durable)?;
    cpu.charge_thread(CpuRole::Orchestration, orchestration_start);
    let pool_stats = ctx.pool.stats();
    let peak = ctx.cache.peak_allocated_bytes;
    let ledger = ctx.ledger.clone();
    let times = ctx.workers.times.clone();
    drop(ctx.workers); // joins the workers
    drop(ctx.gpu.take()); // the decoder is the job's alone again (kept after it, in a job server)
    let pipeline = ctx.clock.report(threads, &times);
    let mut memory = MemoryReport::new(&pool_stats, peak);
    memory.add_engine(engine.as_ref());
    fallbacks.extend(engine.done_by_syscalls().map(|why| Fallback::IoEngine { why }));
    cpu.sample_io_workers();
    drop(engine);
    let wall = start.elapsed();
    if let Some(g) = &gpu {
        fallbacks.extend(g.fallbacks());
    }
    let summary = JobSummary {
        operation,
        engine: match &gpu {
            Some(g) => format!("GPU {}: {}; CPU (ISA-L inflate) for what the GPU did not decode", g.name, g.description()),
            None => "host CPU, ISA-L inflate".into(),
        },
        // (No file decoded: gzip, what the job reads.)
        format: if formats.is_empty() { format_of(None).into() } else { formats.join(" + ") },
        level: None,
        block_size_bytes: None,
        threads,
        queue_depth: qd,
        files,
        fallbacks,
        wall,
        cpu,
        ledger: ledger.summary(),
        memory,
    };
    let mut report = match &gpu {
        Some(g) => {
            let mut r = JobReport::measured(summary, crate::report::Provenance::MeasuredDevice);
            r.devices.push(g.report());
            r
        }
        None => JobReport::measured_host(summary),
    };
    report.pipeline = Some(pipeline);
    report.failed = failed
        .iter_mut()
        .map(|(source, bad): &mut (PathBuf, FileFailure)| crate::report::FailedFile {
            source: source.display().to_string(),
            source_bytes: name_bytes(source),
            exit_code: bad.error.exit_code(),
            error: bad.error.to_string(),
            checked: bad.checked.take(),
            decode_mode: bad.decode_mode.take(),
        })
        .collect();
    if let Some(g) = gpu.and_then(|g| Arc::try_unwrap(g).ok()) {
        g.give_back();
    }
    Ok((report, failed.into_iter().map(|(_, bad)| bad.error).collect()))
}

/// Contiguous read buffers covering [start, end) of the file.
struct Window {
    chunks: VecDeque<(u64, Arc<PooledBuf>)>,
    end: u64,
}

impl Window {
    /// The member [pos, pos+len) in place if one buffer holds it.
    fn in_place(&self, pos: u64, len: usize) -> Option<MemberBytes> {
        self.chunks.iter().find_map(|(off, b)| {
            let end = off + b.len() as u64;
            (pos >= *off && pos + len as u64 <= end).then(|| {
                let s = (pos - off) as usize;
                MemberBytes::InPlace(b.clone(), s..s + len)
            })
        })
    }
    fn copy(&self, pos: u64, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        for (off, b) in &self.chunks {
            let end = off + b.len() as u64;
            if end <= pos || v.len() == len {
                continue;
            }
            let s = (pos + v.len() as u64 - off) as usize;
            let take = (b.len() - s).min(len - v.len());
            v.extend_from_slice(&b[s..s + take]);
        }
        v
    }
    /// Drops buffers wholly before `pos`.
    fn release_before(&mut self, pos: u64) {
        while let Some((off, b)) = self.chunks.front() {
            if off + b.len() as u64 <= pos {
                self.chunks.pop_front();
            } else {
                break;
            }
        }
    }
}

struct FileState<'p> {
    path: &'p Path,
    writer: Option<TargetWriter>,
    /// Index of the next member to write.
    next_write: u64,
    /// Decoded batches by first member index: (output, members, declared bytes).
    ready: BTreeMap<u64, (Output, u64, usize)>,
    /// The target mapped, where it is a file on a memory file system: the
    /// workers decode into its pages (`map_target`); each batch takes the
    /// next range past what the mapping has made exist.
    mapped: Option<Arc<FileMapping>>,
    outstanding_out_bytes: usize,
    first_error: Option<(u64, JobError)>,
    bytes_out: u64,
    members: u64,
    /// Compressed bytes the streaming decoder read (a source of unknown size, standard input,
    /// has no other count of them).
    streamed_in: u64,
    /// How the source's bytes arrive (for the ledger).
    via: crate::Via,
    /// Reads of this file in flight, and completed reads not yet in the
    /// window (they may complete out of order). Reads still in flight when
    /// decoding switches to streaming complete into `arrived` and are dropped.
    reads_in_flight: usize,
    arrived: BTreeMap<u64, PooledBuf>,
    /// An encrypted source: its cipher (reads are its sealed blocks, opened
    /// as they arrive).
    cipher: Option<Arc<FileCipher>>,
    /// Where the file lacked its end member, read as `--allow-no-end-member` lets it.
    missing_end: Option<u64>,
    /// Whether its last member is BGZF's with data, no end-of-file block after it.
    bgzf_unended: bool,
    /// The workers read their members themselves ([`split_for_reading_workers`]).
    worker_reads: bool,
    /// What its first member says the file is ([`format_of`]).
    format: Option<&'static str>,
    /// The batch whose member failed first: that member's index, the batch's first, and
    /// the bytes the members before it in the batch decoded into (checked, not written).
    failed_batch: Option<(u64, u64, u64)>,
    /// Of `bytes_out`, what the streaming decoder gave of a member it then found bad.
    streamed_unchecked: u64,
    /// How the streaming decoder took over, once it has.
    streaming: Option<DecodeMode>,
}

impl FileState<'_> {
    /// Plaintext bytes per read: a sealed block, or `READ_BYTES`.
    fn unit(&self) -> usize {
        self.cipher.as_ref().map_or(READ_BYTES, |c| c.layout().block_bytes as usize)
    }

    /// Where the `seq`th read starts in the file (a sealed block's offset, or `seq` units in).
    fn read_offset(&self, seq: u64) -> u64 {
        self.cipher.as_ref().map_or(seq * READ_BYTES as u64, |c| c.layout().sealed_offset(seq))
    }

    /// The split reached a member (`next`, the `index`th, at `pos`) or, with
    /// `None`, the file's end, after one that wanted an end member
    /// (`wants_end`): where `next` is not one of peerpath's members (and at
    /// the end), the end member is missing: an error (the file damaged
    /// there, or cut at its end), or (allowed) noted for a warning.
    fn end_member_check(&mut self, wants_end: bool, next: Option<&MemberHeader>, (index, pos): (u64, u64), required: bool) -> Option<JobError> {
        if !wants_end || next.is_some_and(MemberHeader::continues_a_peerpath_stream) {
            return None;
        }
        if required {
            return Some(match next {
                Some(_) => not_peerpath_after_peerpath(self.path, index, pos),
                None => no_end_member(self.path, pos),
            });
        }
        self.missing_end.get_or_insert(pos);
        None
    }

    /// The members checked in order from the file's start, and their output bytes: those
    /// written in order, and those of the failed batch before its bad member where every
    /// batch before it was written.
    fn checked(&self) -> (u64, u64) {
        let (members, out) = (self.members, self.bytes_out - self.streamed_unchecked);
        match self.failed_batch {
            Some((index, first, before)) if first == self.next_write => (members + index - first, out + before),
            _ => (members, out),
        }
    }

    fn fail(&mut self, index: u64, e: JobError) {
        if self.first_error.as_ref().is_none_or(|(i, _)| index < *i) {
            self.first_error = Some((index, e));
        }
    }
}

/// What the reports call peerpath's own format (compress writes it), and BGZF.
pub(crate) const PEERPATH_FORMAT: &str = "gzip (multi-member, 'PP' size subfield)";
pub(crate) const BGZF_FORMAT: &str = "BGZF (htslib)";

/// The format a file's first member names by its size subfield (what the report says):
/// peerpath's ('PP', as `compress` writes), BGZF's ('BC', as `bgzip` and `compress --format bgzf`
/// write), or none (plain gzip; also a header too long to read, which neither writes).
fn format_of(first: Option<DeclaredSizes>) -> &'static str {
    match first {
        Some(DeclaredSizes::Peerpath { .. }) => PEERPATH_FORMAT,
        Some(DeclaredSizes::Bgzf { .. }) => BGZF_FORMAT,
        None => "gzip",
    }
}

/// A reader that keeps the first bytes it reads: where decoding streams from a file's start,
/// its first member's header, which names the format.
struct KeepsFirst<R> {
    inner: R,
    first: Vec<u8>,
}

impl<R: std::io::Read> std::io::Read for KeepsFirst<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let keep = n.min(HEADER_PEEK_BYTES.saturating_sub(self.first.len()));
        self.first.extend_from_slice(&buf[..keep]);
        Ok(n)
    }
}

/// Decodes one file. On success its target (if any) is durable under its
/// temporary name; the caller puts it in place. Also: whether the workers read
/// the source themselves (its read path says so already), and its format.
fn run_file(ctx: &mut Ctx, source: &PathBuf, target: Option<&PathBuf>) -> std::result::Result<(FileReport, Option<TargetWriter>, bool, &'static str), Box<FileFailure>> {
    let cipher = open_cipher(source, ctx.key.as_deref())?;
    // Sealed blocks sit at unaligned offsets: an encrypted source is read through the page cache.
    let src = open_source_checked(source, ctx.common.direct && cipher.is_none())?;
    let mut read_path = IoPath { engine: ctx.engine.kind(), direct: src.direct, fallback_reason: src.direct_refused.clone() };
    if cipher.is_some() {
        read_path.fallback_reason = Some("encrypted (peerpath-enc/1): sealed blocks sit at unaligned offsets; each is authenticated and decrypted as it arrives".into());
    }
    let (writer, write_path) = match target {
        Some(t) => {
            let (w, p) = open_target(t, ctx.common, &src)?;
            (Some(w), Some(p))
        }
        None => (None, None),
    };
    crate::job::copy_memory_files_on_kernel_workers(ctx.engine, &src, writer.as_ref());
    // A plain file of a memory file system, of a known size, decoded on the
    // CPU by workers that take every core: each worker reads its batch's
    // members (with a core left, io_uring's kernel workers copy beside
    // them; docs/tuning.md#worker-reads).
    let every_core = ctx.workers.threads() >= std::thread::available_parallelism().map_or(1, |n| n.get());
    let worker_reads = cipher.is_none()
        && ctx.gpu.is_none()
        && src.kind.size_bytes().is_some()
        && src.in_memory()
        && crate::cpu_pass::worker_reads_setting().unwrap_or(every_core);
    if worker_reads {
        read_path.engine = EngineKind::Syscalls;
        let why = read_path.fallback_reason.take().unwrap_or_else(|| "a memory file system".into());
        read_path.fallback_reason = Some(format!("{why}; each worker reads its own members (pread), the orchestrator only their headers"));
    }
    let wanted = mapping_wanted(ctx.workers.threads(), ctx.gpu.is_some());
    let mapped = writer.as_ref().filter(|_| wanted.is_ok()).and_then(|w| map_target(w, &src, ctx.workers.threads()));
    let mut write_path = write_path;
    if let (Some(p), Some(m)) = (write_path.as_mut(), &mapped) {
        let who = match m.allocation() {
            peerpath_mem::Allocation::AheadOnOneThread => "one thread allocates the pages ahead of them",
            peerpath_mem::Allocation::ByEachWriter => "each allocates its own pages",
        };
        p.fallback_reason = Some(format!("a memory file system: the workers decode straight into the file's mapped pages (no write, no copy; {who})"));
    }
    if let (Some(p), Some(w), None) = (write_path.as_mut(), writer.as_ref(), &mapped) {
        if let (false, true, Err(why)) = (w.is_sequential(), w.target.in_memory(), &wanted) {
            let before = p.fallback_reason.take().unwrap_or_else(|| "a memory file system".into());
            p.fallback_reason = Some(format!("{before}; written by one thread, not mapped: {why}"));
        }
    }
    let mut st = FileState {
        path: source,
        writer,
        next_write: 0,
        ready: BTreeMap::new(),
        mapped,
        outstanding_out_bytes: 0,
        first_error: None,
        bytes_out: 0,
        members: 0,
        streamed_in: 0,
        via: crate::Via::of(&src),
        reads_in_flight: 0,
        arrived: BTreeMap::new(),
        cipher,
        worker_reads,
        missing_end: None,
        bgzf_unended: false,
        format: None,
        failed_batch: None,
        streamed_unchecked: 0,
        streaming: None,
    };
    let result = decode_file(ctx, &src, &mut st);
    // Drain: every task and write in flight finishes before we decide.
    let drained = drain(ctx, &mut st);
    let outcome = match (result, drained) {
        (Ok(mode), Ok(())) => Ok(mode),
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
    };
    // `Ok(None)`: decoding stopped at the member error kept in `first_error`.
    let outcome = match (outcome, st.first_error.take()) {
        (_, Some((_, e))) => Err(e),
        (Ok(Some(mode)), None) => Ok(mode),
        (Ok(None), None) => Err(JobError::Internal(format!("{}: decoding stopped without an error", Quoted(source)))),
        (Err(e), None) => Err(e),
    };
    let bytes_in = match src.kind {
        SourceKind::Regular { size_bytes } | SourceKind::BlockDevice { size_bytes } => size_bytes,
        SourceKind::Stream => st.streamed_in,
    };
    match outcome {
        Ok(mode) => {
            if st.bgzf_unended {
                eprintln!("peerpath: warning: {}: a BGZF file without its end-of-file marker: every member checks, but it may be truncated (at a member's end)", Quoted(source));
            }
            if let Some(at) = st.missing_end {
                eprintln!("peerpath: warning: {}: no end member after the member that ends at byte {at}: read as --allow-no-end-member asks (a cut at a member's end there goes unnoticed)", Quoted(source));
            }
            let target_name = st.writer.as_ref().map(|w| w.final_path.display().to_string());
            let mut writer = st.writer.take();
            if let Some(w) = writer.as_mut() {
                if let Err(e) = w.finalize() {
                    writer.take().expect("just checked").abandon();
                    return Err(e.into());
                }
            }
            let report = FileReport {
                source: source.display().to_string(),
                source_bytes: name_bytes(source),
                target: target_name,
                target_bytes: writer.as_ref().and_then(|w| name_bytes(&w.final_path)),
                bytes_in,
                bytes_out: st.bytes_out,
                members: st.members,
                read_path,
                write_path,
                decode_mode: Some(mode),
                device: None,
                members_on_device: None,
                durability: writer.as_ref().and_then(|w| w.durability_report()),
            };
            Ok((report, writer, st.worker_reads, st.format.unwrap_or_else(|| format_of(None))))
        }
        Err(error) => {
            if let Some(w) = st.writer.take() {
                w.abandon();
            }
            let (members, bytes_out) = st.checked();
            let bytes_in = checked_in(&error, members, st.cipher.is_some());
            Err(Box::new(FileFailure { error, checked: Some(Checked { members, bytes_in, bytes_out }), decode_mode: st.streaming }))
        }
    }
}

/// The compressed bytes of a failed file's `members` checked members: where the error
/// names the member right after them, the offset it starts at (members follow each other
/// from byte 0). Otherwise (an I/O error, a file cut at a member's end) where the last
/// checked member ended is not kept, so it is left out; and so for an encrypted file, whose
/// offsets are of its plaintext, not of the file.
fn checked_in(error: &JobError, members: u64, encrypted: bool) -> Option<u64> {
    match error {
        JobError::Corrupt { member, offset, .. } | JobError::Truncated { member, offset, .. } if *member == members && !encrypted => Some(*offset),
        _ => None,
    }
}

/// A file's failure, with what it had checked before it (the report's [`crate::report::FailedFile`]).
struct FileFailure {
    error: JobError,
    /// `None`: it failed before decoding began.
    checked: Option<Checked>,
    /// How the streaming decoder took over, where it had.
    decode_mode: Option<DecodeMode>,
}

impl From<JobError> for Box<FileFailure> {
    fn from(error: JobError) -> Self {
        Box::new(FileFailure { error, checked: None, decode_mode: None })
    }
}

/// What keeps decoding from doing more while the orchestrator waits.
fn held_by(ctx: &Ctx, st: &FileState) -> &'static str {
    let writes = st.writer.as_ref().map_or(0, |w| w.writes_in_flight);
    if ctx.workers.in_flight() >= ctx.workers.threads() {
        "workers all busy"
    } else if st.outstanding_out_bytes >= max_outstanding_output_bytes(ctx.workers.threads(), ctx.batch_bytes) {
        "output bound (decoded batches waiting to be written)"
    } else if st.reads_in_flight > 0 {
        "reads (workers short of input)"
    } else if writes > 0 {
        "writes"
    } else {
        "other"
    }
}

/// Waits for I/O or worker results and handles them; the wait is charged to
/// what held the orchestrator (`why`, or what `held_by` finds).
fn pump(ctx: &mut Ctx, st: &mut FileState, why: Option<&'static str>) -> Result<()> {
    crate::cancel::check()?;
    if ctx.engine.in_flight() == 0 && ctx.workers.in_flight() == 0 {
        // Nothing could end the wait: a bug, said as an error, not a hang.
        return Err(JobError::Internal(format!(
            "decompress stalled with no I/O and no work in flight: {}: member {} next to write, {} batches waiting, {} reads arrived out of order, {} free read buffers",
            Quoted(st.path),
            st.next_write,
            st.ready.len(),
            st.arrived.len(),
            ctx.pool.free_count()
        )));
    }
    let mut completions: Vec<Completion<JobBuf>> = Vec::new();
    let why = why.unwrap_or_else(|| held_by(ctx, st));
    ctx.clock.observe(peerpath_metrics::InFlight {
        tasks: ctx.workers.in_flight(),
        reads: st.reads_in_flight,
        writes: st.writer.as_ref().map_or(0, |w| w.writes_in_flight),
    });
    let waiting = Instant::now();
    ctx.engine.wait(&mut completions, &ctx.waker).map_err(|e| JobError::Internal(format!("I/O wait failed: {e}")))?;
    ctx.clock.waited(why, waiting.elapsed());
    let t = Instant::now();
    for c in completions {
        let Token::Read { seq, .. } = Token::of(c.op, c.token) else {
            let w = st.writer.as_mut().expect("writes only with a writer");
            if let Err(e) = w.on_write_complete(c.result, c.buf, &mut ctx.cache) {
                st.fail(0, e);
            }
            continue;
        };
        st.reads_in_flight -= 1;
        let JobBuf::Pooled(mut buf) = c.buf else { unreachable!("reads use pool buffers") };
        match c.result {
            Ok(n) => {
                buf.set_len(n);
                crate::record_read(&ctx.ledger, st.path, st.via, buf.domain(), n as u64);
                if let Some(c) = &st.cipher {
                    // Authenticate and decrypt the block in place before any byte of it is used.
                    let host = Location::memory(buf.domain());
                    if let Err(e) = c.open_block(seq, &mut buf) {
                        st.fail(0, JobError::Damaged { path: st.path.to_path_buf(), detail: e.to_string() });
                        continue;
                    }
                    ctx.ledger.record(host.clone(), host, Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Decrypt, n as u64, (n - peerpath_func::crypt::TAG_BYTES) as u64);
                    buf.set_len(n - peerpath_func::crypt::TAG_BYTES);
                }
                st.arrived.insert(seq * st.unit() as u64, buf);
            }
            Err(e) => st.fail(0, crate::job::read_error(st.path, &e, st.read_offset(seq), st.unit())),
        }
    }
    for d in ctx.workers.try_results()? {
        ctx.members_done(st, d);
    }
    let written = write_ready(ctx, st);
    ctx.clock.spent("handling completions", t.elapsed());
    written
}

impl Ctx<'_> {
    fn members_done(&mut self, st: &mut FileState, mut d: Decoded) {
        if let Some((buf, from, result)) = d.read.take() {
            self.cache.put(buf);
            match crate::job::check_read(st.path, result, from.offset, d.member_bytes, Some(from.size)) {
                // The kernel's copy out of the memory file's pages, on the worker.
                Ok(n) => crate::record_read_by(&self.ledger, st.path, st.via, &MemoryDomain::host_unplaced(), n as u64, CpuRole::Compute),
                Err(e) => {
                    let (Ok(out) | Err((_, _, out))) = d.result;
                    if let Output::Buf(b) = out {
                        self.cache.put(b);
                    }
                    st.outstanding_out_bytes -= d.declared_out_bytes;
                    st.fail(d.first_index, e);
                    return;
                }
            }
        }
        match d.result {
            Ok(out) => {
                // Decoded into host memory: a buffer, or the target's pages in the page cache.
                let host = MemoryDomain::host_unplaced();
                let domain = match &out {
                    Output::Buf(b) => b.domain(),
                    Output::Mapped { .. } => &host,
                };
                let g = d.on_gpu;
                if let (true, Some(gpu)) = (g.members > 0, &self.gpu) {
                    // Gathered into the pinned buffer, there and back by the
                    // copy engine, decoded in GPU memory, copied out by the worker.
                    let (hl, gl) = (Location::memory(&host), Location::memory(&MemoryDomain::Gpu { device: gpu.name.clone() }));
                    let copy_engine = Mover::Dma { engine: format!("{} copy engine", gpu.name) };
                    let worker = Mover::Cpu { role: CpuRole::Compute };
                    self.ledger.record_copy(hl.clone(), hl.clone(), worker.clone(), Purpose::Stage, g.in_bytes);
                    self.ledger.record_copy(hl.clone(), gl.clone(), copy_engine.clone(), Purpose::Stage, g.in_bytes);
                    self.ledger.record(gl.clone(), gl.clone(), Mover::Device { name: gpu.name.clone() }, Purpose::Function, g.in_bytes, g.out_bytes);
                    self.ledger.record_copy(gl, hl.clone(), copy_engine, Purpose::Stage, g.out_bytes);
                    self.ledger.record_copy(hl, Location::memory(domain), worker, Purpose::Stage, g.out_bytes);
                }
                if (d.member_bytes as u64) > g.in_bytes {
                    self.ledger.record(
                        Location::memory(domain),
                        Location::memory(domain),
                        Mover::Cpu { role: CpuRole::Compute },
                        Purpose::Function,
                        d.member_bytes as u64 - g.in_bytes,
                        out.len() as u64 - g.out_bytes,
                    );
                }
                st.ready.insert(d.first_index, (out, d.count, d.declared_out_bytes));
            }
            Err((e, index, out)) => {
                if let Output::Buf(b) = out {
                    self.cache.put(b);
                }
                st.outstanding_out_bytes -= d.declared_out_bytes;
                let e = match e {
                    BatchFailure::Member(e, offset, before) => {
                        if st.failed_batch.is_none_or(|(i, ..)| index < i) {
                            st.failed_batch = Some((index, d.first_index, before as u64));
                        }
                        member_error(st.path, index, offset, e)
                    }
                    BatchFailure::Target(e) => st.writer.as_ref().expect("a mapped target has a writer").io_error(e),
                    BatchFailure::Device(detail) => JobError::Device { detail },
                    BatchFailure::Read => JobError::Internal(format!("{}: a worker's read failed, and its result said it did not", Quoted(st.path))),
                };
                st.fail(index, e);
            }
        }
    }

    /// Hands a batch to a worker.
    fn submit_batch(&mut self, st: &mut FileState, batch: Batch) {
        if batch.members.is_empty() {
            return;
        }
        let mut out = match &st.mapped {
            Some(map) => {
                let at = map.len();
                // Only the size here (cheap); the worker allocates its range
                // before storing (a full file system is its error, not a
                // SIGBUS), so page allocation and zeroing run on every core.
                let t = Instant::now();
                let grown = map.grow_to(at + batch.out_bytes);
                self.clock.spent("growing the target", t.elapsed());
                if let Err(e) = grown {
                    let e = st.writer.as_ref().expect("a mapped target has a writer").io_error(e);
                    st.fail(batch.first_index, e);
                    return;
                }
                Output::Mapped { map: map.clone(), at, len: batch.out_bytes }
            }
            None => match self.cache.get(batch.out_bytes.max(1)) {
                Ok(b) => Output::Buf(b),
                Err(e) => return st.fail(batch.first_index, e),
            },
        };
        // Memory that cannot be mapped fails the file (and the job), as a target's growth does.
        let mut read_buf = match batch.read_from.is_some().then(|| self.cache.get(batch.member_bytes.max(1))).transpose() {
            Ok(b) => b,
            Err(e) => {
                if let Output::Buf(b) = out {
                    self.cache.put(b);
                }
                return st.fail(batch.first_index, e);
            }
        };
        st.outstanding_out_bytes += batch.out_bytes;
        let gpu = self.gpu.clone();
        self.workers.submit(move |_| {
            let Batch { first_index, members, member_bytes, out_bytes, read_from } = batch;
            // The members' bytes, where this task reads them itself.
            let read = match (read_from, read_buf.as_mut()) {
                (Some(from), Some(buf)) => {
                    let r = peerpath_io::pread_full(from.file.as_raw_fd(), &mut buf.spare_mut()[..member_bytes], from.offset);
                    buf.set_len(*r.as_ref().unwrap_or(&0));
                    Some((from, r))
                }
                _ => None,
            };
            let decoded = if read.as_ref().is_some_and(|(_, r)| r.as_ref().ok() != Some(&member_bytes)) {
                Err((BatchFailure::Read, first_index))
            } else {
                let read_bytes: &[u8] = read_buf.as_deref().unwrap_or(&[]);
                match &mut out {
                    Output::Buf(b) => decode_batch(gpu.as_deref(), first_index, &members, read_bytes, &mut b.spare_mut()[..out_bytes]),
                    Output::Mapped { map, at, len } => match map.allocate(*at, *len) {
                        Err(e) => Err((BatchFailure::Target(e), first_index)),
                        // SAFETY: the range was grown above, allocated just now,
                        // and is this batch's alone (each batch gets the next
                        // `out_bytes` of the file).
                        Ok(()) => decode_batch(gpu.as_deref(), first_index, &members, read_bytes, &mut unsafe { map.range(*at, *len) }[..out_bytes]),
                    },
                }
            };
            // On success a member fills exactly its declared bytes
            // (`decode_member` checks, as the GPU's check does), so a batch fills its range.
            let (result, on_gpu) = match decoded {
                Ok(on_gpu) => {
                    if let Output::Buf(b) = &mut out {
                        b.set_len(out_bytes);
                    }
                    (Ok(out), on_gpu)
                }
                Err((failure, index)) => (Err((failure, index, out)), OnGpu::default()),
            };
            let read = read.map(|(from, r)| (read_buf.expect("a buffer for the read"), from, r));
            Decoded { first_index, count: members.len() as u64, member_bytes, declared_out_bytes: out_bytes, on_gpu, result, read }
        });
    }
}

type BatchMember = (MemberHeader, MemberBytes, u64, usize);

/// Decodes a batch's members back to back into `dst` (their declared
/// sizes): on the GPU where there is one (each member it did not decode is
/// decoded on the CPU, which names a bad member's error), else on the CPU.
fn decode_batch(gpu: Option<&GpuDecoder>, first_index: u64, members: &[BatchMember], read: &[u8], dst: &mut [u8]) -> std::result::Result<OnGpu, (BatchFailure, u64)> {
    let on_cpu = |k: usize, (header, bytes, offset, _): &BatchMember, out: &mut [u8]| {
        // The bytes of the members before it, summed only for a failure (not per member).
        decode_member(header, bytes.bytes(read), out).map(|_| ()).map_err(|e| (BatchFailure::Member(e, *offset, members[..k].iter().map(|m| m.3).sum()), first_index + k as u64))
    };
    if let Some(g) = gpu {
        if !g.usable() {
            g.after_failure(members.len() as u64);
        } else {
            // Empty members (nothing to launch for) stay on the CPU.
            let view: Vec<peerpath_gpu::Member> = members.iter().filter(|m| m.3 > 0).map(|(_, b, _, n)| peerpath_gpu::Member { bytes: b.bytes(read), out_len: *n }).collect();
            match g.inflater.decode(&view, dst) {
                Ok(verdicts) => {
                    let mut verdicts = verdicts.into_iter();
                    let (mut pos, mut on_gpu) = (0, OnGpu::default());
                    for (k, m) in members.iter().enumerate() {
                        let out_len = m.3;
                        match (out_len, if out_len > 0 { verdicts.next().expect("a verdict per member sent") } else { None }) {
                            (0, _) => on_cpu(k, m, &mut dst[pos..pos])?,
                            (_, None) => {
                                on_gpu.members += 1;
                                on_gpu.in_bytes += m.1.bytes(read).len() as u64;
                                on_gpu.out_bytes += out_len as u64;
                            }
                            (_, Some(why)) => {
                                on_cpu(k, m, &mut dst[pos..pos + out_len])?;
                                g.redone(first_index + k as u64, why).map_err(|e| (BatchFailure::Device(e), first_index + k as u64))?;
                            }
                        }
                        pos += out_len;
                    }
                    g.decoded(&on_gpu);
                    return Ok(on_gpu);
                }
                Err(why) => g.failed(why, members.len() as u64).map_err(|e| (BatchFailure::Device(e), first_index))?,
            }
        }
    }
    let mut pos = 0;
    for (k, m) in members.iter().enumerate() {
        on_cpu(k, m, &mut dst[pos..pos + m.3])?;
        pos += m.3;
    }
    Ok(OnGpu::default())
}

fn write_ready(ctx: &mut Ctx, st: &mut FileState) -> Result<()> {
    while let Some((out, count, declared)) = st.ready.remove(&st.next_write) {
        st.next_write += count;
        st.members += count;
        st.outstanding_out_bytes -= declared;
        st.bytes_out += out.len() as u64;
        ctx.done_bytes += out.len() as u64;
        match (st.writer.as_mut(), out) {
            (Some(w), Output::Buf(b)) if st.first_error.is_none() => w.push_owned(b, ctx.engine, &mut ctx.cache, Token::write(0), &ctx.ledger)?,
            (_, Output::Buf(b)) => ctx.cache.put(b),
            (Some(w), Output::Mapped { len, .. }) => w.mapped_written(len as u64, &ctx.ledger),
            (None, Output::Mapped { .. }) => unreachable!("a mapped output has a writer"),
        }
    }
    if let Some(p) = &ctx.common.progress {
        p(ctx.done_bytes, None);
    }
    Ok(())
}

fn drain(ctx: &mut Ctx, st: &mut FileState) -> Result<()> {
    while let Some(d) = ctx.workers.recv()? {
        ctx.members_done(st, d);
        write_ready(ctx, st)?;
    }
    if let Some(w) = st.writer.as_mut() {
        if st.first_error.is_none() {
            w.finish(ctx.engine, Token::write(0), &ctx.ledger)?;
        }
    }
    while ctx.engine.in_flight() > 0 {
        pump(ctx, st, Some("writes and the last batches"))?;
    }
    st.arrived.clear();
    Ok(())
}

/// Decodes one file, parallel while members declare their sizes. Returns
/// how it decoded, for the report.
fn decode_file(ctx: &mut Ctx, src: &peerpath_io::OpenedFile, st: &mut FileState) -> Result<Option<DecodeMode>> {
    let Some(file_size) = src.kind.size_bytes() else {
        let reader = src.file.try_clone().map_err(|e| JobError::SourceIo { path: st.path.to_path_buf(), detail: e.to_string() })?;
        // A pipe may be idle for ever: its reads end when the job is cancelled (a job server's).
        return stream_from(ctx, st, (peerpath_io::stop::StoppableRead(reader), false), (0, None), 0, DecodeMode::StreamingPipe);
    };
    if st.worker_reads {
        return split_for_reading_workers(ctx, src, st, file_size);
    }
    // Offsets below are the plaintext's: the file's, or (encrypted) what its blocks hold.
    let size = st.cipher.as_ref().map_or(file_size, |c| c.layout().plaintext_bytes);
    let unit = st.unit();
    let fd = src.file.as_raw_fd();
    let mut window = Window { chunks: VecDeque::new(), end: 0 };
    let mut next_read = 0u64;
    let (mut pos, mut index) = (0u64, 0u64);
    // Two batches per worker keep every worker busy while the next is
    // split; more only holds more output memory (each fresh page is a
    // fault and a zeroing the kernel does on the job's behalf).
    let max_tasks = ctx.workers.threads() * 2 + 1;
    // Reads run this far ahead of the splitting position (or further, to
    // the end of a member waiting for its bytes), at most a queue depth at
    // a time: enough to keep the workers fed, without touching the whole
    // window (docs/tuning.md#decompress-read-ahead).
    let qd = ctx.common.queue_depth.max(1) as usize;
    let read_ahead_bytes = (READ_BYTES * ctx.workers.threads().max(2)) as u64;
    let mut need_until = 0u64;
    let blocking = ctx.engine.kind() == EngineKind::Syscalls;
    let mut batch = Batch::new(0);
    // Whether the last member split wants an end member after it.
    let mut wants_end = false;
    let mut bgzf_unended = false;
    loop {
        if st.first_error.is_some() {
            return Ok(None);
        }
        // Reads, in order, as buffers allow; one a pass where a read blocks
        // (docs/tuning.md#one-read-a-pass).
        let mut pass_over = false;
        let t = Instant::now();
        while next_read < size
            && !pass_over
            && st.reads_in_flight < qd
            && next_read < (pos + read_ahead_bytes).max(need_until)
        {
            let Some(buf) = ctx.pool.try_get() else { break };
            pass_over = blocking || buf.first_use();
            let seq = next_read / unit as u64;
            let (at, len) = match &st.cipher {
                Some(c) => (st.read_offset(seq), c.layout().plain_len(seq) + peerpath_func::crypt::TAG_BYTES),
                None => (st.read_offset(seq), READ_BYTES.min(peerpath_mem::align_up((size - next_read) as usize, peerpath_mem::DIRECT_IO_ALIGN_BYTES))),
            };
            ctx.engine
                .submit(IoOp::Read, fd, Some(at), len, JobBuf::Pooled(buf), Token::Read { stream: 0, seq }.raw())
                .map_err(|(_, e)| JobError::SourceIo { path: st.path.to_path_buf(), detail: e.to_string() })?;
            st.reads_in_flight += 1;
            next_read += unit as u64;
        }
        ctx.clock.spent("submitting reads", t.elapsed());
        let t = Instant::now();
        while let Some(buf) = st.arrived.remove(&window.end) {
            crate::job::check_read(st.path, Ok(buf.len()), window.end, unit, Some(size))?;
            window.end += buf.len() as u64;
            window.chunks.push_back((window.end - buf.len() as u64, Arc::new(buf)));
        }
        // Members, as far as the window reaches.
        let mut blocked = false;
        let writes_in_flight = |st: &FileState| st.writer.as_ref().map_or(0, |w| w.writes_in_flight);
        while !blocked
            && ctx.workers.in_flight() < max_tasks
            && st.outstanding_out_bytes < max_outstanding_output_bytes(ctx.workers.threads(), ctx.batch_bytes)
            && writes_in_flight(st) < max_tasks
        {
            let avail = window.end - pos;
            let at_eof = window.end == size;
            if avail == 0 {
                if at_eof {
                    if index == 0 {
                        return Err(JobError::EmptyArchive { path: st.path.to_path_buf() });
                    }
                    if let Some(e) = st.end_member_check(wants_end, None, (index, pos), ctx.end_member_required) {
                        return fail_at(ctx, st, batch, index, e);
                    }
                    st.bgzf_unended = bgzf_unended;
                    ctx.submit_batch(st, batch);
                    return Ok(Some(DecodeMode::Parallel { members: index, threads: ctx.workers.threads() }));
                }
                blocked = true;
                continue;
            }
            let head = window.copy(pos, (avail as usize).min(HEADER_PEEK_BYTES));
            let (header, member_bytes) = match member_at(st.path, &head, head.len() < avail as usize || !at_eof, index, pos) {
                AtHeader::Member(h, n) => (h, n),
                AtHeader::Stream(why) => {
                    ctx.submit_batch(st, batch);
                    return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, why);
                }
                AtHeader::Fail(e) => return fail_at(ctx, st, batch, index, e),
            };
            st.format.get_or_insert(format_of(header.sizes));
            if let Some(e) = st.end_member_check(wants_end, Some(&header), (index, pos), ctx.end_member_required) {
                return fail_at(ctx, st, batch, index, e);
            }
            if member_bytes as u64 > avail {
                if at_eof {
                    ctx.submit_batch(st, batch);
                    return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, PAST_THE_END);
                }
                // No free buffer and no read on its way: where members on
                // their way to the workers hold buffers (each task keeps its
                // members' read buffers until it has decoded them), they come
                // back as the tasks end: wait for them. Only a window that
                // nothing will free is too small for this member.
                let starved = ctx.pool.free_count() == 0 && st.reads_in_flight == 0;
                let held_by_tasks = ctx.workers.in_flight() > 0 || !batch.members.is_empty();
                if starved && held_by_tasks && member_bytes <= unit * (WINDOW_BUFFERS - 2) {
                    ctx.submit_batch(st, std::mem::replace(&mut batch, Batch::new(index)));
                    need_until = pos + member_bytes as u64;
                    blocked = true;
                    continue;
                }
                if starved || member_bytes > unit * (WINDOW_BUFFERS - 2) {
                    ctx.submit_batch(st, batch);
                    return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, "a member larger than the read window");
                }
                need_until = pos + member_bytes as u64;
                blocked = true;
                continue;
            }
            let bytes = window.in_place(pos, member_bytes).unwrap_or_else(|| {
                let v = window.copy(pos, member_bytes);
                let host = Location::memory(&MemoryDomain::host_unplaced());
                ctx.ledger.record_copy(host.clone(), host, Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Reassemble, v.len() as u64);
                MemberBytes::Copied(v)
            });
            let out_len = match declared_output_bytes(&header, bytes.bytes(&[])) {
                Ok(n) => n,
                Err(MemberError::SizesDisagree { .. }) => {
                    ctx.submit_batch(st, batch);
                    return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, SIZES_DISAGREE);
                }
                Err(e) => return fail_at(ctx, st, batch, index, member_error(st.path, index, pos, e)),
            };
            wants_end = header.wants_an_end_member();
            bgzf_unended = header.wants_a_bgzf_eof_block();
            batch.members.push((header, bytes, pos, out_len));
            batch.member_bytes += member_bytes;
            batch.out_bytes += out_len;
            pos += member_bytes as u64;
            index += 1;
            if batch.out_bytes >= ctx.batch_bytes {
                ctx.submit_batch(st, std::mem::replace(&mut batch, Batch::new(index)));
            }
            window.release_before(pos);
        }
        // Waiting for data: do not let workers idle on a half-full batch.
        if blocked && ctx.workers.in_flight() < ctx.workers.threads() {
            ctx.submit_batch(st, std::mem::replace(&mut batch, Batch::new(index)));
        }
        ctx.clock.spent("splitting members into batches", t.elapsed());
        pump(ctx, st, None)?;
    }
}

/// [`decode_file`] for a plain file of a memory file system (`size` bytes
/// when opened): the orchestrator reads only each member's header and its
/// trailer's size (one `pread` a member: this member's trailer and the next
/// one's header), each worker reads its batch's members itself. A read of
/// such a file is the kernel's copy out of its pages on whichever thread
/// asks; through the I/O engine all of them ran on io_uring's kernel
/// workers, which wait for a core where there are as many workers as cores
/// (docs/tuning.md#worker-reads). Same errors and the same member checks
/// as the window's path; nothing here is copied twice.
fn split_for_reading_workers(ctx: &mut Ctx, src: &peerpath_io::OpenedFile, st: &mut FileState, size: u64) -> Result<Option<DecodeMode>> {
    let file = Arc::new(src.file.try_clone().map_err(|e| JobError::SourceIo { path: st.path.to_path_buf(), detail: e.to_string() })?);
    let fd = file.as_raw_fd();
    // The bytes at `at`, at most `len` of them: the orchestrator's small
    // reads, checked as every read is (a shrunk or grown source is an error).
    let peek = |at: u64, len: usize| -> Result<Vec<u8>> {
        let mut v = vec![0u8; len.min(size.saturating_sub(at) as usize + 1)];
        let n = crate::job::check_read(st.path, peerpath_io::pread_full(fd, &mut v, at), at, len, Some(size))?;
        v.truncate(n);
        Ok(v)
    };
    let batch_from = |index: u64, offset: u64| Batch { read_from: Some(WorkerRead { file: file.clone(), offset, size }), ..Batch::new(index) };
    let (mut pos, mut index) = (0u64, 0u64);
    // What lies at `pos`: the next member's header, or the end.
    let mut head = peek(0, HEADER_PEEK_BYTES)?;
    let max_tasks = ctx.workers.threads() * 2 + 1;
    let mut batch = batch_from(0, 0);
    let mut wants_end = false;
    let mut bgzf_unended = false;
    loop {
        if st.first_error.is_some() {
            return Ok(None);
        }
        let t = Instant::now();
        let writes_in_flight = |st: &FileState| st.writer.as_ref().map_or(0, |w| w.writes_in_flight);
        while ctx.workers.in_flight() < max_tasks
            && st.outstanding_out_bytes < max_outstanding_output_bytes(ctx.workers.threads(), ctx.batch_bytes)
            && writes_in_flight(st) < max_tasks
        {
            let avail = size - pos;
            if avail == 0 {
                if index == 0 {
                    return Err(JobError::EmptyArchive { path: st.path.to_path_buf() });
                }
                if let Some(e) = st.end_member_check(wants_end, None, (index, pos), ctx.end_member_required) {
                    return fail_at(ctx, st, batch, index, e);
                }
                st.bgzf_unended = bgzf_unended;
                ctx.submit_batch(st, batch);
                return Ok(Some(DecodeMode::Parallel { members: index, threads: ctx.workers.threads() }));
            }
            let (header, member_bytes) = match member_at(st.path, &head, (head.len() as u64) < avail, index, pos) {
                AtHeader::Member(h, n) => (h, n),
                AtHeader::Stream(why) => {
                    ctx.submit_batch(st, batch);
                    return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, why);
                }
                AtHeader::Fail(e) => return fail_at(ctx, st, batch, index, e),
            };
            st.format.get_or_insert(format_of(header.sizes));
            if let Some(e) = st.end_member_check(wants_end, Some(&header), (index, pos), ctx.end_member_required) {
                return fail_at(ctx, st, batch, index, e);
            }
            if member_bytes as u64 > avail {
                ctx.submit_batch(st, batch);
                return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, PAST_THE_END);
            }
            if member_bytes > READ_BYTES * (WINDOW_BUFFERS - 2) {
                ctx.submit_batch(st, batch);
                return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, "a member larger than the read window");
            }
            // This member's trailer (its last 8 bytes) and what follows it, in one read.
            let whole = member_bytes >= header.header_bytes + 8;
            let next = if whole { peek(pos + member_bytes as u64 - 8, 8 + HEADER_PEEK_BYTES)? } else { Vec::new() };
            let out_len = match peerpath_func::gzip::declared_output_bytes_from(&header, avail.min(usize::MAX as u64) as usize, |_| u32::from_le_bytes(next[4..8].try_into().expect("4 bytes"))) {
                Ok(n) => n,
                Err(MemberError::SizesDisagree { .. }) => {
                    ctx.submit_batch(st, batch);
                    return switch_to_stream(ctx, st, src, (pos, wants_end.then_some(pos)), index, SIZES_DISAGREE);
                }
                Err(e) => return fail_at(ctx, st, batch, index, member_error(st.path, index, pos, e)),
            };
            let at = batch.member_bytes;
            wants_end = header.wants_an_end_member();
            bgzf_unended = header.wants_a_bgzf_eof_block();
            batch.members.push((header, MemberBytes::InRead(at..at + member_bytes), pos, out_len));
            batch.member_bytes += member_bytes;
            batch.out_bytes += out_len;
            pos += member_bytes as u64;
            index += 1;
            head = next[8..].to_vec();
            if batch.out_bytes >= ctx.batch_bytes {
                ctx.submit_batch(st, std::mem::replace(&mut batch, batch_from(index, pos)));
            }
        }
        ctx.clock.spent("splitting members into batches", t.elapsed());
        pump(ctx, st, None)?;
    }
}

/// Decompressed output reaches in at most 1032 bytes per compressed byte
/// (deflate's largest expansion): the mapping reserves that much address
/// space (not memory), up to this much.
const MAX_MAPPED_BYTES: u64 = 1 << 46;

/// Workers from which a memory file system's target is mapped by default.
/// Written, the target costs one copy, on one thread at a time (the file's
/// inode lock); mapped, it costs a page fault and an unmapping per 4 KiB page
/// on the workers instead, but in parallel. Below this one writing thread
/// keeps up and writing is faster: on the 2-core VM (384 MiB, 5 runs each)
/// written 0.81 s at -T 1 and 0.51 s at -T 2, mapped 0.97 and 0.60 s, with
/// less CPU too (perf: populating and unmapping the pages took 18 % of the
/// mapped job's CPU); on the lent 16-core machine at -T 16 mapped 0.140-0.154
/// s, written 0.188-0.210 s (one thread's copy, about 2 GB/s, bounds it);
/// at -T 8 mapped 0.178-0.215 s, about what one writing thread allows
/// (bench/results/2026-12-02-decompress-mapped-2cpu, 2026-11-26-gpu-machine-4).
const MAPPED_MIN_WORKERS: usize = 8;

/// Whether the target of `workers` workers is mapped where it can be, or why
/// not: `PEERPATH_MAPPED_OUTPUT=1` always, `=0` (or the older
/// `PEERPATH_NO_MAPPED_OUTPUT=1`) never, else from [`MAPPED_MIN_WORKERS`] on,
/// or always on a GPU (its lanes copy each batch out of pinned memory: into
/// the target, not into a buffer a writing thread copies again).
fn mapping_wanted(workers: usize, gpu: bool) -> std::result::Result<(), String> {
    match std::env::var("PEERPATH_MAPPED_OUTPUT").as_deref() {
        Ok("1") => return Ok(()),
        Ok("0") => return Err("PEERPATH_MAPPED_OUTPUT=0".into()),
        _ => {}
    }
    if std::env::var_os("PEERPATH_NO_MAPPED_OUTPUT").is_some_and(|v| v != "0") {
        return Err("PEERPATH_NO_MAPPED_OUTPUT=1".into());
    }
    if workers < MAPPED_MIN_WORKERS && !gpu {
        return Err(format!("{}, which one writing thread keeps up with (mapped from {MAPPED_MIN_WORKERS}; docs/tuning.md#mapped-output)", crate::report::count(workers, "worker")));
    }
    Ok(())
}

/// Maps the target (where [`mapping_wanted`] says so) where it is a file
/// on a memory file system and the source's size bounds the output: the
/// workers then decode straight into its pages, in parallel, where writes
/// to one tmpfs file are one thread's copy at a time (its inode lock). Its
/// pages are allocated ahead of the workers by one thread where a core is
/// left for it (fewer workers than cores), else by each worker for its own range: on the lent 16-core machine, ahead was 13 % faster at 1
/// and 2 workers, even at 4 to 15, and up to 60 % slower at 16 (the workers
/// waited for an allocator that had no core; bench/results/2026-11-27-gpu-machine-2).
/// `PEERPATH_MAPPED_ALLOCATION=ahead|each` chooses (for A/B measurements,
/// docs/tuning.md#mapped-output).
fn map_target(w: &TargetWriter, src: &peerpath_io::OpenedFile, workers: usize) -> Option<Arc<FileMapping>> {
    if w.is_sequential() || !w.target.in_memory() {
        return None;
    }
    let reserve = src.kind.size_bytes()?.checked_mul(1032)?.checked_add(64 << 20)?;
    if reserve > MAX_MAPPED_BYTES {
        return None;
    }
    // A shared writable mapping needs the file open for reading too: the
    // same file, opened again through its descriptor (named or not).
    let fd = w.target.file.as_raw_fd();
    let file = std::fs::OpenOptions::new().read(true).write(true).open(format!("/proc/self/fd/{fd}")).ok()?;
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let allocation = match std::env::var("PEERPATH_MAPPED_ALLOCATION").as_deref() {
        Ok("each") => peerpath_mem::Allocation::ByEachWriter,
        Ok("ahead") => peerpath_mem::Allocation::AheadOnOneThread,
        _ if workers < cores => peerpath_mem::Allocation::AheadOnOneThread,
        _ => peerpath_mem::Allocation::ByEachWriter,
    };
    let map = FileMapping::new(file, reserve as usize, allocation).ok()?;
    // Only where the file system reserves space up front (tmpfs; not ramfs):
    // a store must never be the first to learn that memory ran out.
    map.probe_fallocate().ok()?;
    Some(Arc::new(map))
}

/// An encrypted source's cipher (its header read, the key checked, its
/// length checked against the header), or `None` for a plain one. An
/// encrypted source without a key, or with the wrong one, is the job's error.
fn open_cipher(source: &Path, key: Option<&peerpath_func::crypt::Key>) -> Result<Option<Arc<FileCipher>>> {
    use peerpath_func::crypt::{CryptError, HEADER_BYTES, MAGIC};
    // Only a regular file is looked into here: opening a FIFO twice (here, then to decode it)
    // lost what its writer had written and closed, and the second open waited for ever.
    if crate::job::is_std_stream(source) || !std::fs::metadata(source).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let Ok(f) = std::fs::File::open(source) else { return Ok(None) }; // opening it later says why
    let mut header = [0u8; HEADER_BYTES];
    let n = std::os::unix::fs::FileExt::read_at(&f, &mut header, 0).unwrap_or(0);
    if n < MAGIC.len() || &header[..MAGIC.len()] != MAGIC {
        return Ok(None);
    }
    let Some(key) = key else {
        return Err(JobError::Usage(format!("{}: encrypted (peerpath-enc/1): give its key (--key-file FILE, --key-env VAR or $PEERPATH_KEY)", Quoted(source))));
    };
    let crypt_error = |e: CryptError| JobError::from_crypt(source, e);
    let cipher = FileCipher::open(key, &header[..n]).map_err(crypt_error)?;
    let len = f.metadata().map_err(|e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e })?.len();
    cipher.check_length(len).map_err(crypt_error)?;
    if cipher.layout().block_bytes as usize + peerpath_func::crypt::TAG_BYTES > READ_BYTES {
        return Err(JobError::Usage(format!("{}: its blocks are over {} MiB: decrypt it first (peerpath decrypt), then decompress", Quoted(source), READ_BYTES >> 20)));
    }
    Ok(Some(Arc::new(cipher)))
}

/// What the member header at the splitting position says to do.
enum AtHeader {
    /// A member that declares its sizes: the header and its bytes.
    Member(MemberHeader, usize),
    /// Decode the rest streaming, for this reason.
    Stream(&'static str),
    Fail(JobError),
}

/// Why a member whose declared size runs past the end of the file is read by
/// the streaming decoder: the file was cut inside it (truncated, exit 7), or
/// its size field lies and the member ends sooner (corrupt, exit 6, as from a
/// pipe); only inflating it tells which.
const PAST_THE_END: &str = "a member that declares more bytes than the file holds";

/// Why a member whose 'PP' uncompressed size is not the ISIZE where its member
/// size puts the trailer is read by the streaming decoder: either field may
/// lie (a member size a byte off reads ISIZE from the wrong bytes), or the
/// trailer; only inflating it tells which, and the error names that one.
const SIZES_DISAGREE: &str = "a member whose size field disagrees with its trailer";

/// Reads the header of member `index` at `pos` from `head` (the bytes
/// there, as far as the reader peeks; `more`: the file goes on past them).
fn member_at(path: &Path, head: &[u8], more: bool, index: u64, pos: u64) -> AtHeader {
    match MemberHeader::parse(head) {
        Ok(h) => match h.sizes {
            Some(sizes) => {
                let n = sizes.member_bytes();
                AtHeader::Member(h, n)
            }
            None if index == 0 => AtHeader::Stream("members do not declare their sizes (not made by peerpath or bgzip)"),
            None => AtHeader::Stream("a member without a size field"),
        },
        // A long name or comment: let the streaming decoder read it.
        Err(HeaderError::Truncated { .. }) if more => AtHeader::Stream("a header longer than the parallel reader peeks"),
        Err(HeaderError::NotGzip(..)) if index > 0 => AtHeader::Stream("data after the last member"),
        Err(e) => AtHeader::Fail(member_error(path, index, pos, e.into())),
    }
}

/// A member-level error found while splitting: members before it still get
/// decoded (so the report names the first bad member), then the file fails.
fn fail_at(ctx: &mut Ctx, st: &mut FileState, batch: Batch, index: u64, error: JobError) -> Result<Option<DecodeMode>> {
    ctx.submit_batch(st, batch);
    st.fail(index, error);
    Ok(None)
}

/// Decodes the rest of the file from `pos` on one thread; `unended`: where the member before
/// `pos` ended, if it wanted an end member after it.
fn switch_to_stream(ctx: &mut Ctx, st: &mut FileState, src: &peerpath_io::OpenedFile, (pos, unended): (u64, Option<u64>), index: u64, why: &'static str) -> Result<Option<DecodeMode>> {
    // Finish what the parallel part started, in order, first.
    while let Some(d) = ctx.workers.recv()? {
        ctx.members_done(st, d);
    }
    write_ready(ctx, st)?;
    if st.first_error.is_some() {
        return Ok(None);
    }
    // The file opened (not its name, which may hold another by now), without O_DIRECT:
    // the streaming decoder reads what it needs, unaligned.
    let opened = format!("/proc/self/fd/{}", src.file.as_raw_fd());
    let mut reader = std::fs::File::open(&opened).map_err(|e| JobError::SourceUnreadable { path: src.path.clone(), source: e })?;
    let mode = if index == 0 { DecodeMode::Streaming { why } } else { DecodeMode::ParallelThenStreaming { members: index, from: pos, why } };
    let file = matches!(src.kind, peerpath_io::SourceKind::Regular { .. });
    let decoded = match &st.cipher {
        Some(c) => {
            let plain = peerpath_func::crypt::BlockReader::new(reader, c.clone(), pos).map_err(|e| JobError::Damaged { path: st.path.to_path_buf(), detail: e.to_string() })?;
            stream_from(ctx, st, (plain, file), (pos, unended), index, mode)
        }
        None => {
            reader.seek(SeekFrom::Start(pos)).map_err(|e| JobError::SourceIo { path: st.path.to_path_buf(), detail: e.to_string() })?;
            stream_from(ctx, st, (reader, file), (pos, unended), index, mode)
        }
    };
    // Read to its end, a file that shrank ends early (cleanly, at a member's end) and
    // one that grew gives more: either way, not the file that was opened.
    // (A file's: a block device's metadata says 0 bytes.)
    if let peerpath_io::SourceKind::Regular { size_bytes: size } = src.kind {
        let now = src.file.metadata().map_err(|e| JobError::SourceIo { path: st.path.to_path_buf(), detail: e.to_string() })?.len();
        if now != size {
            let how = if now > size { "grew" } else { "shrank" };
            return Err(JobError::SourceIo { path: st.path.to_path_buf(), detail: format!("the source {how} while being read ({size} bytes when opened, {now} now)") });
        }
    }
    decoded
}

/// `file`: the source is a file (not a block device or a pipe), whose end a crash could
/// have zeroed: more zeros after its last member than padding leaves are an error.
fn stream_from(ctx: &mut Ctx, st: &mut FileState, (reader, file): (impl std::io::Read, bool), (pos, unended): (u64, Option<u64>), index: u64, mode: DecodeMode) -> Result<Option<DecodeMode>> {
    let path = st.path.to_path_buf();
    let host = MemoryDomain::host_unplaced();
    let mut reader = KeepsFirst { inner: reader, first: Vec::new() };
    st.streaming = Some(mode.clone());
    let out_before = st.bytes_out;
    let mut decoder = StreamDecoder::new(&mut reader, pos, index).after_member_wanting_an_end(unended);
    if !file {
        decoder = decoder.any_zero_padding();
    }
    if !ctx.end_member_required {
        decoder = decoder.allow_missing_end_member();
    }
    let mut sink_error: Option<JobError> = None;
    let mut inflated = 0u64;
    let result = decoder.run(index == 0, |data| {
        if let Err(e) = crate::cancel::check() {
            sink_error = Some(e);
            return Err(std::io::Error::other("cancelled"));
        }
        inflated += data.len() as u64;
        st.bytes_out += data.len() as u64;
        if let Some(w) = st.writer.as_mut() {
            let r = w.push(data, ctx.engine, &mut ctx.cache, Token::write(0), &ctx.ledger, &host);
            if let Err(e) = r {
                sink_error = Some(e);
                return Err(std::io::Error::other("write failed"));
            }
            while ctx.engine.in_flight() > 2 {
                if let Err(e) = pump(ctx, st, Some("writes (streaming decode)")) {
                    sink_error = Some(e);
                    return Err(std::io::Error::other("write failed"));
                }
            }
        }
        Ok(())
    });
    // Its output of a member it did not finish checking counts in none of the checked figures.
    st.members = decoder.members;
    st.streamed_unchecked = st.bytes_out - out_before - decoder.bytes_out;
    if let Some(e) = sink_error {
        return Err(e);
    }
    // The streaming decoder's input is read with plain reads; count it. It inflates on this,
    // the orchestrating thread (the compute workers wait), all it read into all it gave.
    let compressed = decoder.bytes_in;
    ctx.ledger.record(Location::memory(&host), Location::memory(&host), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Function, compressed, inflated);
    let via = if st.via == crate::Via::Pipe { crate::Via::Pipe } else { crate::Via::PageCache };
    crate::record_read(&ctx.ledger, &path, via, &host, compressed);
    st.streamed_in = compressed;
    st.missing_end = st.missing_end.or(decoder.missing_end_member());
    st.bgzf_unended = decoder.ends_bgzf_without_eof();
    result.map_err(|e| stream_error(&path, e))?;
    // From the file's start (a pipe, or a first member without a size field): the first bytes read.
    if st.format.is_none() {
        st.format = Some(format_of(MemberHeader::parse(&reader.first).ok().and_then(|h| h.sizes)));
    }
    Ok(Some(mode))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_decode::{BatchInflater, GpuDecodeSpec};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A FIFO is not opened to look for an encryption header: the source was opened twice (this
    /// look, then to decode it), and data its writer had written and closed on before the first
    /// close was lost, the second open waiting for a writer for ever. Here: no writer at all,
    /// which the first open waited for.
    #[test]
    fn a_fifo_is_not_opened_to_look_for_an_encryption_header() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let looked_at = fifo.clone();
        std::thread::spawn(move || tx.send(open_cipher(&looked_at, None).map(|c| c.is_none())));
        let answer = rx.recv_timeout(std::time::Duration::from_secs(20));
        if answer.is_err() {
            // Let the thread's open return before the directory goes.
            drop(std::fs::OpenOptions::new().write(true).open(&fifo));
        }
        assert!(matches!(answer, Ok(Ok(true))), "open_cipher waited on the FIFO, or looked into it: {answer:?}");
    }

    /// A stand-in for the GPU that decodes on the CPU, and can be told to
    /// get members wrong (every `wrong_every`th, its output scribbled over)
    /// or to fail outright on its `fail_on`th batch.
    #[derive(Default)]
    struct StandIn {
        batches: AtomicUsize,
        members: AtomicUsize,
        wrong_every: Option<usize>,
        fail_on: Option<usize>,
    }

    impl BatchInflater for StandIn {
        fn decode(&self, members: &[peerpath_gpu::Member], dst: &mut [u8]) -> std::result::Result<Vec<Option<String>>, String> {
            if Some(self.batches.fetch_add(1, Ordering::SeqCst)) == self.fail_on {
                dst.fill(0xaa);
                return Err("simulated: CUDA_ERROR_ILLEGAL_ADDRESS".into());
            }
            let mut pos = 0;
            let mut verdicts = Vec::new();
            for m in members {
                let out = &mut dst[pos..pos + m.out_len];
                pos += m.out_len;
                let k = self.members.fetch_add(1, Ordering::SeqCst) + 1;
                let decoded = MemberHeader::parse(m.bytes).map_err(MemberError::from).and_then(|h| decode_member(&h, m.bytes, out));
                verdicts.push(match decoded {
                    Err(e) => Some(e.to_string()),
                    Ok(_) if self.wrong_every.is_some_and(|n| k.is_multiple_of(n)) => {
                        out.fill(0x55);
                        Some("simulated: CRC-32 0x00000000 on the GPU where the trailer says otherwise".into())
                    }
                    Ok(_) => None,
                });
            }
            Ok(verdicts)
        }
        fn description(&self) -> String {
            "a stand-in for the GPU (decodes on the CPU)".into()
        }
        fn profile(&self) -> String {
            format!("{} batches", self.batches.load(Ordering::SeqCst))
        }
    }

    /// 12 MiB of protein-like text as 12 peerpath members of 1 MiB (and an
    /// empty one), with member `corrupt` (if any) damaged mid-way.
    fn source(dir: &Path, corrupt: Option<usize>) -> (PathBuf, Vec<u8>) {
        let data = peerpath_func::sample::protein_like(12 << 20, 3);
        let mut enc = peerpath_func::MemberEncoder::new(peerpath_func::Level::new(1).expect("level"));
        let mut file = Vec::new();
        for (k, block) in data.chunks(1 << 20).chain(std::iter::once(&[][..])).enumerate() {
            let mut out = vec![0u8; peerpath_func::member_bound_bytes(block.len())];
            let n = peerpath_func::encode_member(&mut enc, peerpath_func::Format::Gzip, block, &mut out);
            if corrupt == Some(k) {
                out[n / 2] ^= 0x5a;
            }
            file.extend_from_slice(&out[..n]);
        }
        let path = dir.join("in.gz");
        std::fs::write(&path, file).expect("write source");
        (path, data)
    }

    fn run_with(stand_in: StandIn, no_fallback: bool, corrupt: Option<usize>) -> (Result<JobReport>, Vec<u8>, PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (src, data) = source(dir.path(), corrupt);
        let target = dir.path().join("out");
        let spec = GpuDecodeSpec { batch_bytes: 4 << 20, no_fallback, ..Default::default() };
        let opts = DecompressOptions {
            common: CommonOptions { threads: 2, durable: false, progress: None, ..CommonOptions::default() },
            gpu: Some(spec),
            ..Default::default()
        };
        let gpu = Arc::new(GpuDecoder::with(Box::new(stand_in), "gpu0".into(), no_fallback));
        let r = run_job_on(Operation::Decompress, &[(src, Some(target.clone()))], &opts, Some(gpu), Vec::new(), (Instant::now(), CpuAccount::start(), thread_cpu_now()), false).map(|(r, _)| r);
        (r, data, target, dir)
    }

    #[test]
    fn members_the_gpu_gets_wrong_are_decoded_on_the_cpu_and_reported() {
        let (r, data, target, _dir) = run_with(StandIn { wrong_every: Some(3), ..Default::default() }, false, None);
        let r = r.expect("the CPU decodes what the GPU got wrong");
        assert_eq!(std::fs::read(&target).expect("target"), data, "every byte right");
        assert!(matches!(r.provenance, crate::report::Provenance::MeasuredDevice));
        let text: Vec<String> = r.fallbacks.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|f| f.starts_with("gpu0: the GPU's output did not check (first: member ") && f.ends_with("the host CPU decoded 4 members in its place")), "{text:?}");
        assert_eq!(r.devices[0].members, 8, "12 members decoded, 4 of them redone on the CPU (the empty one never goes to the GPU)");
    }

    /// In a job server the decoder goes back to be kept once the job is over (the workers'
    /// hold on it ended), unless the GPU was retired.
    #[test]
    fn a_decoder_is_kept_after_its_job_unless_it_was_retired() {
        for (stand_in, kept) in [(StandIn::default(), true), (StandIn { fail_on: Some(1), ..Default::default() }, false)] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (src, data) = source(dir.path(), None);
            let target = dir.path().join("out");
            let opts = DecompressOptions { common: CommonOptions { threads: 2, durable: false, ..CommonOptions::default() }, gpu: Some(GpuDecodeSpec { batch_bytes: 4 << 20, ..Default::default() }), ..Default::default() };
            let gpu = Arc::new(GpuDecoder::with(Box::new(stand_in), "gpu0".into(), false).kept_as("the test's"));
            run_job_on(Operation::Decompress, &[(src, Some(target.clone()))], &opts, Some(gpu), Vec::new(), (Instant::now(), CpuAccount::start(), thread_cpu_now()), false).expect("decoded");
            assert_eq!(std::fs::read(&target).expect("target"), data);
            assert_eq!(GpuDecoder::take_kept(), kept.then(|| ("the test's".to_string(), 1)));
        }
    }

    #[test]
    fn a_gpu_that_fails_is_retired_and_the_cpu_decodes_the_rest() {
        let (r, data, target, _dir) = run_with(StandIn { fail_on: Some(1), ..Default::default() }, false, None);
        let r = r.expect("the CPU takes over");
        assert_eq!(std::fs::read(&target).expect("target"), data);
        let text: Vec<String> = r.fallbacks.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|f| f.contains("gpu0: failed and was retired: simulated: CUDA_ERROR_ILLEGAL_ADDRESS")), "{text:?}");
        assert_eq!(r.devices[0].failure.as_deref(), Some("simulated: CUDA_ERROR_ILLEGAL_ADDRESS"));
    }

    #[test]
    fn with_no_fallback_a_gpu_fault_is_exit_15_and_keeps_nothing() {
        for stand_in in [StandIn { wrong_every: Some(5), ..Default::default() }, StandIn { fail_on: Some(0), ..Default::default() }] {
            let (r, _, target, _dir) = run_with(stand_in, true, None);
            let e = r.expect_err("an error");
            assert_eq!(e.exit_code(), 15, "{e}");
            assert!(e.to_string().contains("--no-fallback"), "{e}");
            assert!(!target.exists(), "nothing kept");
        }
    }

    #[test]
    fn a_corrupt_member_is_the_cpu_s_error_on_the_gpu_path_too() {
        let (gpu, _, target, _dir) = run_with(StandIn::default(), false, Some(5));
        let e = gpu.expect_err("corrupt");
        assert!(!target.exists(), "nothing kept");
        assert!(matches!(e, JobError::Corrupt { member: 5, .. }), "{e:?}");
        // The same words as without a GPU.
        let dir = tempfile::tempdir().expect("tempdir");
        let (src, _) = source(dir.path(), Some(5));
        let opts = DecompressOptions { common: CommonOptions { threads: 2, durable: false, ..CommonOptions::default() }, ..Default::default() };
        let cpu = decompress(&[(src, dir.path().join("out"))], &opts).expect_err("corrupt");
        let strip = |e: &JobError| e.to_string().split_once(": member").map(|(_, rest)| rest.to_string());
        assert_eq!(strip(&e), strip(&cpu));
    }

    /// Bounded memory: declared output in flight grows with the workers, from 64 MiB.
    #[test]
    fn output_in_flight_is_bounded_and_grows_with_the_workers() {
        let b = BATCH_OUTPUT_BYTES;
        assert_eq!(max_outstanding_output_bytes(1, b), 64 << 20);
        assert_eq!(max_outstanding_output_bytes(2, b), 64 << 20);
        assert_eq!(max_outstanding_output_bytes(16, b), 34 * b);
        assert!(max_outstanding_output_bytes(64, b) > max_outstanding_output_bytes(16, b));
        assert_eq!(max_outstanding_output_bytes(4, 32 << 20), 10 * (32 << 20), "a GPU's batches");
    }
}
