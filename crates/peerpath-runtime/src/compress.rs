//! The compression job: sources -> aligned reads -> compute workers ->
//! ordered, packed, aligned writes -> targets renamed into place.
//!
//! One orchestration thread (the caller's) runs one I/O engine for every
//! source and target of the job, so several files are compressed at once
//! (the case study read 12 sources and wrote 6 targets). Bounded: a fixed
//! pool of read buffers, and at most that many blocks anywhere in the
//! pipeline.

use crate::buf::{BufferCache, JobBuf};
use crate::devices::{Compute, DeviceMemoryFrom, DeviceSet};
use crate::offload::{DeviceStream, Handover, OnDevices, Outcome, Params};
use crate::token::Token;
use crate::error::{JobError, Result};
use crate::job::{check_sources_are_not_targets, check_target, is_std_stream, open_source_checked, open_target, put_all_in_place, set_engine, CommonOptions};
use crate::report::{DeviceReport, Fallback, FileReport, JobReport, JobSummary, MemoryReport, Operation};
use crate::workers::WorkerPool;
use crate::writer::TargetWriter;
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, BGZF_EOF_BLOCK, BGZF_MAX_INPUT_BYTES};
use peerpath_io::{choose_engine, Completion, IoEngine, IoOp, IoPath, OpenedFile, SourceKind, Waker};
use peerpath_mem::{align_up, AlignedBuf, BufferPool, PooledBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{thread_cpu_now, CpuAccount, CpuRole, Ledger, Location, Mover, Purpose};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone)]
pub struct CompressOptions {
    pub common: CommonOptions,
    pub level: Level,
    pub format: Format,
    /// Uncompressed bytes per member (gzip format; BGZF uses 0xff00).
    pub block_size: usize,
    /// Where members are compressed.
    pub compute: Compute,
    /// Fail instead of running on the CPU when a device cannot do the work.
    pub no_fallback: bool,
    /// Check every member of each output before it is put in place.
    pub verify: bool,
}

pub const DEFAULT_BLOCK_BYTES: usize = 1 << 20;
/// Reads through device memory: at least 1 MiB (device memory is small).
const DEVICE_READ_BYTES: usize = 1 << 20;
/// Reads on the CPU path: one transparent huge page, so a read buffer is
/// one TLB entry; not bigger, as every buffer is memory the job touches
/// once (docs/tuning.md#cpu-read-size).
const CPU_READ_BYTES: usize = 2 << 20;
const CPU_READ_POOL_BYTES: usize = 64 << 20;
const MAX_READ_BYTES: usize = 64 << 20;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Bytes per read: a whole number of members, aligned for O_DIRECT, at least
/// `min_bytes`; and whether such a size exists at most 64 MiB (odd block
/// sizes: no, then reads go through the page cache).
pub fn read_chunk_bytes(member_bytes: usize, min_bytes: usize) -> (usize, bool) {
    let lcm = member_bytes / gcd(member_bytes, DIRECT_IO_ALIGN_BYTES) * DIRECT_IO_ALIGN_BYTES;
    if lcm <= MAX_READ_BYTES {
        (lcm * min_bytes.div_ceil(lcm).max(1), true)
    } else {
        (member_bytes * min_bytes.div_ceil(member_bytes).max(1), false)
    }
}

struct Done {
    stream: usize,
    seq: u64,
    input: PooledBuf,
    output: AlignedBuf,
    members: u64,
}

/// One source and its target, as the CPU pass sees them; a device's
/// outcome is applied by [`Stream::finished_on_device`] or [`Stream::resume_on_cpu`].
struct Stream {
    source: OpenedFile,
    /// How the source's bytes arrive (for the ledger).
    source_via: crate::Via,
    source_name: String,
    size: Option<u64>,
    sequential_read: bool,
    read_path: IoPath,
    next_read_offset: u64,
    next_seq: u64,
    reads_in_flight: usize,
    /// No more reads to issue.
    read_done: bool,
    /// Number of chunks, once reading is done.
    chunks: Option<u64>,
    next_write_seq: u64,
    ready: BTreeMap<u64, (AlignedBuf, u64)>,
    writer: Option<TargetWriter>,
    write_path: IoPath,
    writer_finished: bool,
    bytes_in: u64,
    members: u64,
    /// Source offset of chunk 0 of this pass (the CPU going on after a device).
    first_offset: u64,
    /// Output bytes of the first chunk already written by a device.
    skip_out: u64,
    /// Which device served it (index into the job's devices).
    device: Option<usize>,
    members_on_device: u64,
}

impl Stream {
    fn can_read(&self, qd_per_stream: usize) -> bool {
        !self.read_done && self.reads_in_flight < if self.sequential_read { 1 } else { qd_per_stream }
    }
    fn finished(&self) -> bool {
        self.writer_finished && self.writer.as_ref().is_none_or(|w| w.writes_in_flight == 0)
    }
    /// Its device wrote every output byte.
    fn finished_on_device(&mut self, members: u64) {
        self.writer_finished = true;
        self.members = members;
        self.members_on_device = members;
        self.bytes_in = self.size.unwrap_or(0);
    }

    /// Its device failed: the CPU pass reads and compresses it again from
    /// the block `h` names, skipping the output the device already sent.
    fn resume_on_cpu(&mut self, h: &Handover, chunk_bytes: usize) {
        let size = self.size.expect("streams on devices have a size");
        self.first_offset = h.chunk * chunk_bytes as u64;
        self.next_read_offset = self.first_offset;
        self.next_seq = 0;
        self.skip_out = h.skip_bytes;
        self.read_done = self.first_offset >= size && size > 0;
        self.chunks = self.read_done.then_some(0);
        self.writer_finished = false;
        self.bytes_in = self.first_offset;
        self.members = h.members_before;
        self.members_on_device = h.members_before;
        self.writer.as_mut().expect("writer open").resume_at(h.written);
    }

    /// Where the stream stands, for an error that must say it.
    fn state(&self) -> String {
        format!(
            "{}: read to byte {} of {}, {} reads in flight, chunks {}, next to write {}, {} waiting, writer {}",
            self.source_name,
            self.next_read_offset,
            self.size.map_or("unknown".into(), |n| n.to_string()),
            self.reads_in_flight,
            self.chunks.map_or("unknown".into(), |n| n.to_string()),
            self.next_write_seq,
            self.ready.len(),
            match &self.writer {
                Some(w) if self.writer_finished => format!("finished, {} writes in flight", w.writes_in_flight),
                Some(w) => format!("open, {} writes in flight", w.writes_in_flight),
                None => "closed".into(),
            }
        )
    }
}

/// A job loop about to wait with nothing in flight would wait forever: a
/// bug, turned into an error that says where the job stood.
fn stalled(job: &str, streams: Vec<String>, in_pipeline: usize, slots: usize) -> JobError {
    JobError::Internal(format!("{job} stalled with no I/O and no work in flight ({in_pipeline} of {slots} chunks in the pipeline): {}", streams.join("; ")))
}

/// Compresses each source into its target. On failure every partial target
/// is removed and no source is touched.
pub fn compress(pairs: &[(PathBuf, PathBuf)], opts: &CompressOptions) -> Result<JobReport> {
    let devices = match &opts.compute {
        Compute::Cpu => None,
        Compute::Emulated(spec) => Some(DeviceSet::emulated(spec, opts.no_fallback)),
    };
    compress_on(pairs, opts, devices)
}

/// [`compress`], with streams placed on `devices` where they can go.
pub(crate) fn compress_on(pairs: &[(PathBuf, PathBuf)], opts: &CompressOptions, devices: Option<DeviceSet>) -> Result<JobReport> {
    let start = Instant::now();
    let member_bytes = match opts.format {
        Format::Gzip => opts.block_size,
        Format::Bgzf => BGZF_MAX_INPUT_BYTES,
    };
    if member_bytes == 0 || member_bytes > peerpath_func::MAX_MEMBER_UNCOMPRESSED_BYTES {
        return Err(JobError::Usage(format!(
            "block size must be between 1 byte and {} bytes",
            peerpath_func::MAX_MEMBER_UNCOMPRESSED_BYTES
        )));
    }
    let (chunk_bytes, chunk_aligned) = read_chunk_bytes(member_bytes, DEVICE_READ_BYTES);
    let mut fallbacks = Vec::new();
    for (s, t) in pairs {
        check_target(s, t, opts.common.force)?;
    }
    check_sources_are_not_targets(pairs)?;
    let mut streams: Vec<Stream> = Vec::new();
    let abandon = |streams: &mut Vec<Stream>| {
        for s in streams.iter_mut() {
            if let Some(w) = s.writer.take() {
                w.abandon();
            }
        }
    };
    for (source, target) in pairs {
        let want_direct = opts.common.direct && chunk_aligned;
        let src = match open_source_checked(source, want_direct) {
            Ok(s) => s,
            Err(e) => {
                abandon(&mut streams);
                return Err(e);
            }
        };
        let mut refused = src.direct_refused.clone();
        if opts.common.direct && !chunk_aligned {
            refused = Some(format!("block size {member_bytes} B cannot be grouped into aligned reads of at most 64 MiB"));
        }
        let (writer, write_path) = match open_target(target, &opts.common, &src) {
            Ok(w) => w,
            Err(e) => {
                abandon(&mut streams);
                return Err(e);
            }
        };
        let sequential_read = src.kind == SourceKind::Stream;
        streams.push(Stream {
            source_name: source.display().to_string(),
            size: src.kind.size_bytes(),
            read_path: IoPath { engine: peerpath_io::EngineKind::IoUring, direct: src.direct, fallback_reason: refused },
            source_via: crate::Via::of(&src),
            source: src,
            sequential_read,
            next_read_offset: 0,
            next_seq: 0,
            reads_in_flight: 0,
            read_done: false,
            chunks: None,
            next_write_seq: 0,
            ready: BTreeMap::new(),
            writer: Some(writer),
            write_path,
            writer_finished: false,
            bytes_in: 0,
            members: 0,
            first_offset: 0,
            skip_out: 0,
            device: None,
            members_on_device: 0,
        });
    }
    let cpu = CpuAccount::start();
    let orchestration_start = thread_cpu_now();
    let ledger = Ledger::new();
    let outcome = run_job(&mut streams, opts, devices, member_bytes, chunk_bytes, chunk_aligned, &ledger, &cpu, &mut fallbacks);
    cpu.charge_thread(CpuRole::Orchestration, orchestration_start);
    let ran = match outcome {
        Ok(r) => r,
        Err(e) => {
            abandon(&mut streams);
            return Err(e);
        }
    };
    // Make every target durable (and checked, with --verify), then put them
    // all in place: a failure before the last rename keeps none.
    let mut verify_wall = None;
    for i in 0..streams.len() {
        let checked = {
            let w = streams[i].writer.as_mut().expect("writer present");
            let t = Instant::now();
            let r = w.finalize().and_then(|()| if opts.verify { verify_output(w) } else { Ok(()) });
            if opts.verify {
                *verify_wall.get_or_insert(std::time::Duration::ZERO) += t.elapsed();
            }
            r
        };
        if let Err(e) = checked {
            abandon(&mut streams);
            return Err(e);
        }
    }
    let mut files = Vec::new();
    let mut writers = Vec::new();
    for s in streams.iter_mut() {
        let w = s.writer.take().expect("writer present");
        files.push(FileReport {
            source: s.source_name.clone(),
            target: Some(w.final_path.display().to_string()),
            bytes_in: s.bytes_in,
            bytes_out: w.logical_len,
            members: s.members,
            read_path: s.read_path.clone(),
            write_path: Some(s.write_path.clone()),
            decode_mode: None,
            device: s.device.map(|d| ran.devices[d].name.clone()),
            members_on_device: s.device.map(|_| s.members_on_device),
            durability: w.durability_report(),
        });
        writers.push(w);
    }
    put_all_in_place(writers, opts.common.durable)?;
    let offloaded = !ran.devices.is_empty();
    let job = JobSummary {
        operation: Operation::Compress,
        engine: ran.engine,
        format: match opts.format {
            Format::Gzip => "gzip (multi-member, 'PP' size subfield)".into(),
            Format::Bgzf => "BGZF (htslib)".into(),
        },
        level: Some(opts.level.get()),
        block_size_bytes: Some(member_bytes),
        threads: ran.threads,
        queue_depth: opts.common.queue_depth.max(1),
        files,
        fallbacks,
        wall: start.elapsed(),
        cpu,
        ledger: ledger.summary(),
        memory: ran.memory,
    };
    let mut report = if offloaded { JobReport::measured_emulated(job) } else { JobReport::measured_host(job) };
    report.devices = ran.devices;
    report.placement = ran.placement;
    report.placement_explain = ran.placement_explain;
    report.offload_transfers_cpu_s = ran.offload_transfers_cpu_s;
    report.verified_s = verify_wall.map(|t| t.as_secs_f64());
    Ok(report)
}

/// Checks every member of a finished (not yet renamed) output.
fn verify_output(w: &TargetWriter) -> Result<()> {
    let opts = crate::DecompressOptions { common: CommonOptions { progress: None, force: false, ..CommonOptions::default() } };
    crate::decompress::verify(std::slice::from_ref(&w.target.path), &opts).map(|_| ()).map_err(|e| {
        let detail = match e {
            JobError::Corrupt { member, offset, detail, .. } | JobError::Truncated { member, offset, detail, .. } => {
                format!("member {member} at byte {offset}: {detail}")
            }
            other => other.to_string(),
        };
        JobError::Verify { path: w.final_path.clone(), detail }
    })
}

/// What the job's passes ran on, for the report.
struct Ran {
    engine: String,
    threads: usize,
    memory: MemoryReport,
    devices: Vec<DeviceReport>,
    placement: Vec<String>,
    placement_explain: Option<String>,
    offload_transfers_cpu_s: Option<f64>,
}

/// Whether a stream can go through device memory: O_DIRECT both ways and a
/// known size. Otherwise, why not.
fn offload_refusal(s: &Stream, chunk_aligned: bool) -> Option<String> {
    let w = s.writer.as_ref().expect("writer open");
    if s.sequential_read || w.is_sequential() {
        Some("pipes and standard streams cannot move data by DMA into device memory".into())
    } else if !chunk_aligned {
        Some("the block size cannot be grouped into aligned reads".into())
    } else if !s.source.direct {
        Some(format!("the source refused O_DIRECT ({}), and device memory is only reached by DMA", s.source.direct_refused.as_deref().unwrap_or("no reason given")))
    } else if !w.target.direct {
        Some(format!("the target refused O_DIRECT ({}), and device memory is only reached by DMA", w.target.direct_refused.as_deref().unwrap_or("no reason given")))
    } else if s.size.is_none() {
        Some("the source's size is unknown".into())
    } else {
        None
    }
}

#[allow(clippy::too_many_arguments)]
fn run_job(
    streams: &mut [Stream],
    opts: &CompressOptions,
    devices: Option<DeviceSet>,
    member_bytes: usize,
    chunk_bytes: usize,
    chunk_aligned: bool,
    ledger: &Ledger,
    cpu: &CpuAccount,
    fallbacks: &mut Vec<Fallback>,
) -> Result<Ran> {
    let qd = opts.common.queue_depth.max(1);
    let mut engine_text = format!("host CPU, {} (level {})", opts.level.library(), opts.level.get());
    let mut threads = opts.common.threads.max(1);
    let mut placement = Placement::default();
    let mut on_devices = None;
    if let Some(set) = devices {
        placement = place(streams, &set.memory_from, chunk_aligned, opts.no_fallback, fallbacks)?;
        if !placement.on_device.is_empty() {
            let params = Params { member_bytes, chunk_bytes, level: opts.level, format: opts.format, queue_depth: qd as usize };
            let sizes: Vec<Option<u64>> = placement.on_device.iter().map(|&i| streams[i].size).collect();
            let started = (set.start)(&sizes, &params, fallbacks)?;
            if !started.is_empty() {
                let ran = run_on_devices(streams, &placement.on_device, started, &params, opts, ledger, fallbacks)?;
                let library = format!("{} (level {})", opts.level.library(), opts.level.get());
                engine_text = crate::devices::describe(set.what, set.workers, ran.reports.len(), &library);
                threads = set.workers;
                on_devices = Some(ran);
            }
        }
    }
    let (device_reports, offload_fixed, offload_transfers_cpu_s) = match on_devices {
        Some(r) => (r.reports, r.fixed_buffers, Some(r.transfers_cpu_s)),
        None => (Vec::new(), None, None),
    };
    // The CPU pass: every stream no device finished.
    let mut memory = MemoryReport { fixed_buffers: offload_fixed, ..Default::default() };
    if streams.iter().any(|s| !s.finished()) {
        let any_pipe = streams.iter().any(|s| !s.finished() && (s.sequential_read || s.writer.as_ref().is_some_and(|w| is_std_stream(&w.final_path))));
        let (mut engine, engine_note) = choose_engine::<JobBuf>(qd * streams.len().max(1) as u32 + 4, opts.common.sync_io || any_pipe);
        let engine_note = if any_pipe && !opts.common.sync_io { Some("pipes need ordered reads and writes; using read/write".into()) } else { engine_note };
        if let Some(n) = &engine_note {
            fallbacks.push(Fallback::IoEngine { device_memory: false, why: n.clone() });
        }
        for s in streams.iter_mut().filter(|s| s.device.is_none()) {
            set_engine(&mut s.read_path, engine.kind(), &engine_note);
            set_engine(&mut s.write_path, engine.kind(), &engine_note);
            if let Some(r) = &s.read_path.fallback_reason {
                if s.read_path.engine == peerpath_io::EngineKind::IoUring || !s.read_path.direct {
                    fallbacks.push(Fallback::ReadsNotDirect { source: s.source_name.clone(), why: r.clone() });
                }
            }
            if let (false, Some(r)) = (s.write_path.direct, &s.write_path.fallback_reason) {
                fallbacks.push(Fallback::WritesNotDirect { target: s.writer.as_ref().expect("open").final_path.display().to_string(), why: r.clone() });
            }
        }
        let mut result = run(streams, engine.as_mut(), opts, member_bytes, chunk_bytes, ledger, cpu);
        if let Ok(m) = &mut result {
            m.fixed_buffers = memory.fixed_buffers.take();
            m.add_engine(engine.as_ref());
        }
        drop(engine); // all I/O is done (or, on error, waited for)
        memory = result?;
        if !device_reports.is_empty() {
            engine_text += &format!("; the host CPU ({} threads, {}) for what the devices did not do", opts.common.threads.max(1), opts.level.library());
        }
    }
    Ok(Ran { engine: engine_text, threads, memory, devices: device_reports, placement: placement.lines, placement_explain: placement.explain, offload_transfers_cpu_s })
}

/// Which streams go to devices, and what the report says of the choice.
#[derive(Default)]
struct Placement {
    /// Streams (indices into the job's) placed on a device.
    on_device: Vec<usize>,
    /// With P2P device memory: one line per stream, for the report.
    lines: Vec<String>,
    /// The planner's explanation of every decision.
    explain: Option<String>,
}

/// Places on a device every stream that can move its bytes by DMA (and,
/// with P2P memory, whose legs the topology says reach it peer to peer);
/// the others stay on the CPU, said in `fallbacks` (or the job fails, with
/// `no_fallback`).
fn place(streams: &[Stream], memory_from: &DeviceMemoryFrom, chunk_aligned: bool, no_fallback: bool, fallbacks: &mut Vec<Fallback>) -> Result<Placement> {
    let mut eligible = Vec::new();
    for (i, s) in streams.iter().enumerate() {
        match offload_refusal(s, chunk_aligned) {
            None => eligible.push(i),
            Some(why) if no_fallback => {
                return Err(JobError::Device { detail: format!("{}: cannot offload: {why} (--no-fallback)", s.source_name) });
            }
            Some(why) => fallbacks.push(Fallback::HostCpuNotDevice { source: s.source_name.clone(), why }),
        }
    }
    match memory_from {
        DeviceMemoryFrom::P2p { sysfs, bdf } => {
            let routed = p2p_routes(streams, &eligible, sysfs, bdf, no_fallback, fallbacks)?;
            Ok(Placement { on_device: routed.kept, lines: routed.placement, explain: routed.explain })
        }
        DeviceMemoryFrom::Shm => Ok(Placement { on_device: eligible, ..Default::default() }),
    }
}

/// Runs the streams `on_device` on `devices` and applies each outcome to
/// its stream: finished, or handed over to the CPU pass.
fn run_on_devices(
    streams: &mut [Stream],
    on_device: &[usize],
    devices: Vec<crate::devices::JobDevice>,
    params: &Params,
    opts: &CompressOptions,
    ledger: &Ledger,
    fallbacks: &mut Vec<Fallback>,
) -> Result<OnDevices> {
    let total: Option<u64> = streams.iter().map(|s| s.size).sum();
    let progress = opts.common.progress.clone();
    let mut report_progress = |done: u64| {
        if let Some(p) = &progress {
            p(done, total);
        }
    };
    let mut device_streams: Vec<DeviceStream> = streams
        .iter_mut()
        .enumerate()
        .filter(|(i, _)| on_device.contains(i))
        .map(|(_, s)| DeviceStream {
            source: &s.source,
            name: &s.source_name,
            size: s.size.expect("streams on devices have a size"),
            writer: s.writer.as_mut().expect("writer open"),
        })
        .collect();
    let ran = crate::offload::run_on_devices(&mut device_streams, devices, params, opts.common.sync_io, opts.no_fallback, ledger, &mut report_progress, fallbacks)?;
    drop(device_streams);
    for (k, &i) in on_device.iter().enumerate() {
        let s = &mut streams[i];
        s.device = Some(ran.device_of[k]);
        s.read_path.engine = ran.engine;
        s.write_path.engine = ran.engine;
        match &ran.outcomes[k] {
            Outcome::Finished { members } => s.finished_on_device(*members),
            Outcome::HandOver(h) => s.resume_on_cpu(h, params.chunk_bytes),
        }
    }
    Ok(ran)
}

/// What the topology says of the streams of a job with P2P device memory.
struct P2pRoutes {
    /// The eligible streams that stay on the device.
    kept: Vec<usize>,
    /// One line per stream, for the report.
    placement: Vec<String>,
    /// The planner's explanation of every decision.
    explain: Option<String>,
}

/// Keeps the eligible streams whose source and target the topology says
/// reach the P2P memory of `provider` peer to peer; the others go to the CPU
/// (said in `fallbacks`), or fail the job with `no_fallback`.
fn p2p_routes(
    streams: &[Stream],
    eligible: &[usize],
    sysfs: &Path,
    provider: &str,
    no_fallback: bool,
    fallbacks: &mut Vec<Fallback>,
) -> Result<P2pRoutes> {
    use crate::placement::Route;
    let pairs: Vec<(PathBuf, PathBuf)> = eligible
        .iter()
        .map(|&i| (streams[i].source.path.clone(), streams[i].writer.as_ref().expect("writer open").target.path.clone()))
        .collect();
    let (mut kept, mut placement) = (Vec::new(), Vec::new());
    let (routes, explain) = crate::placement::routes(sysfs, provider, &pairs);
    let explain = explain.map(|e| {
        format!("{e}\nThis job: the emulated device has no host bounce buffers: a stream with a leg that is not peer to peer runs on the host CPU instead (its placement line says so).\n")
    });
    for (&i, route) in eligible.iter().zip(routes) {
        let name = &streams[i].source_name;
        match route {
            Route::P2p { what } => {
                placement.push(format!("{name}: peer to peer: {what}"));
                kept.push(i);
            }
            Route::Unchecked { why } => {
                placement.push(format!("{name}: P2P path not checked ({why}); the kernel decides at the first transfer (a refusal retires the device and the CPU finishes, said so)"));
                kept.push(i);
            }
            Route::Refused { why } if no_fallback => {
                return Err(JobError::Device { detail: format!("{name}: cannot offload: {why} (--no-fallback)") });
            }
            Route::Refused { why } => {
                placement.push(format!("{name}: host CPU: {why}"));
                fallbacks.push(Fallback::HostCpuNotDevice { source: name.clone(), why });
            }
        }
    }
    Ok(P2pRoutes { kept, placement, explain })
}

/// The CPU pass over every stream not finished yet (all of them, or those
/// a device handed over: they start at `first_offset`).
fn run(
    streams: &mut [Stream],
    engine: &mut dyn IoEngine<JobBuf>,
    opts: &CompressOptions,
    member_bytes: usize,
    mut chunk_bytes: usize,
    ledger: &Ledger,
    cpu: &CpuAccount,
) -> Result<MemoryReport> {
    let waker = Waker::new().map_err(|e| JobError::Internal(format!("eventfd: {e}")))?;
    let threads = opts.common.threads.max(1);
    let mut workers: WorkerPool<Done> = WorkerPool::new(threads, waker.clone(), cpu.clone());
    let qd = opts.common.queue_depth.max(1) as usize;
    // Chunks in the pipeline (being read, compressed, or waiting their turn
    // to be written): two per worker and one read ahead; more only buffers
    // (docs/tuning.md#pipeline-slots).
    let slots = (threads * 2 + 1).max(streams.len() * 2);
    // `chunk_bytes` is the device path's; the CPU reads 2 MiB chunks while
    // the pool stays within 64 MiB or (2T + 1) x 2 MiB, else 1 MiB.
    if slots * CPU_READ_BYTES <= CPU_READ_POOL_BYTES.max((threads * 2 + 1) * CPU_READ_BYTES) {
        chunk_bytes = read_chunk_bytes(member_bytes, CPU_READ_BYTES).0.max(chunk_bytes);
    }
    let pool = BufferPool::new(slots, chunk_bytes);
    let out_bytes = chunk_bytes.div_ceil(member_bytes) * member_bound_bytes(member_bytes);
    let mut cache = BufferCache::new(slots * 2 + 4);
    let total_known: Option<u64> = streams.iter().map(|s| s.size).sum();
    let (format, level) = (opts.format, opts.level);
    let mut in_pipeline = 0usize;
    let mut done_bytes = 0u64;
    let mut completions: Vec<Completion<JobBuf>> = Vec::new();

    let dispatch = |workers: &mut WorkerPool<Done>, cache: &mut BufferCache, stream: usize, seq: u64, input: PooledBuf| {
        let mut output = cache.get(out_bytes);
        workers.submit(move |local| {
            let enc = local.encoder(level);
            let spare = output.spare_mut();
            let mut pos = 0;
            let mut members = 0;
            if input.is_empty() {
                pos += encode_member(enc, format, &[], &mut spare[pos..]);
                members += 1;
            }
            for piece in input.chunks(member_bytes) {
                pos += encode_member(enc, format, piece, &mut spare[pos..]);
                members += 1;
            }
            output.set_len(pos);
            Done { stream, seq, input, output, members }
        });
    };

    // Empty regular files still get one (empty) member.
    for (i, s) in streams.iter_mut().enumerate() {
        if s.size == Some(0) && !s.finished() {
            s.read_done = true;
            s.chunks = Some(1);
            s.next_seq = 1;
            in_pipeline += 1;
            dispatch(&mut workers, &mut cache, i, 0, pool.get());
        }
    }

    // One read a pass where a read blocks (a blocking engine, or a buffer's
    // first use, which faults its pages in): the chunk just read reaches a
    // worker first (docs/tuning.md#one-read-a-pass).
    let blocking = engine.kind() == peerpath_io::EngineKind::Syscalls;
    for s in streams.iter() {
        crate::job::copy_memory_files_on_kernel_workers(engine, &s.source, s.writer.as_ref());
    }
    loop {
        // 1. Compressed chunks back from the workers, written in order.
        for d in workers.try_results() {
            ledger.record(
                Location::memory(d.input.domain()),
                Location::memory(d.output.domain()),
                Mover::Cpu { role: CpuRole::Compute },
                Purpose::Function,
                d.input.len() as u64,
                d.output.len() as u64,
            );
            done_bytes += d.input.len() as u64;
            drop(d.input); // back to the pool: another read may start
            streams[d.stream].ready.insert(d.seq, (d.output, d.members));
        }
        for (i, s) in streams.iter_mut().enumerate() {
            while let Some((out, members)) = s.ready.remove(&s.next_write_seq) {
                let w = s.writer.as_mut().expect("writer open");
                if s.skip_out > 0 {
                    // A device wrote the start of this chunk's output already.
                    let skip = s.skip_out as usize;
                    s.skip_out = 0;
                    let domain = out.domain().clone();
                    w.push(&out[skip..], engine, &mut cache, Token::write(i), ledger, &domain)?;
                    cache.put(out);
                } else {
                    // Packed into aligned staging for O_DIRECT; written as is otherwise.
                    w.push_owned(out, engine, &mut cache, Token::write(i), ledger)?;
                }
                s.members += members;
                s.next_write_seq += 1;
                in_pipeline -= 1;
            }
            if !s.writer_finished && s.chunks == Some(s.next_write_seq) {
                let w = s.writer.as_mut().expect("writer open");
                if format == Format::Bgzf {
                    let host = peerpath_mem::MemoryDomain::host_unplaced();
                    w.push(&BGZF_EOF_BLOCK, engine, &mut cache, Token::write(i), ledger, &host)?;
                }
                w.finish(engine, Token::write(i), ledger)?;
                s.writer_finished = true;
            }
        }
        // 2. Keep reads going, round robin, within the pipeline bound.
        let mut progressed = true;
        let mut pass_over = false;
        while progressed && in_pipeline < slots && !pass_over {
            progressed = false;
            for (i, s) in streams.iter_mut().enumerate() {
                if in_pipeline >= slots || !s.can_read(qd) || pass_over {
                    continue;
                }
                let Some(buf) = pool.try_get() else { break };
                pass_over = blocking || buf.first_use();
                let offset = s.next_read_offset;
                let mut len = chunk_bytes;
                if let Some(size) = s.size {
                    let remaining = (size - offset) as usize;
                    len = len.min(if s.source.direct { align_up(remaining, DIRECT_IO_ALIGN_BYTES) } else { remaining });
                }
                let token = Token::Read { stream: i, seq: s.next_seq }.raw();
                let fd = s.source.file.as_raw_fd();
                let at = (!s.sequential_read).then_some(offset);
                engine
                    .submit(IoOp::Read, fd, at, len, JobBuf::Pooled(buf), token)
                    .map_err(|(_, e)| JobError::SourceIo { path: s.source.path.clone(), detail: e.to_string() })?;
                s.reads_in_flight += 1;
                s.next_seq += 1;
                s.next_read_offset += chunk_bytes as u64;
                in_pipeline += 1;
                progressed = true;
                if s.size.is_some_and(|size| s.next_read_offset >= size) {
                    s.read_done = true;
                    s.chunks = Some(s.next_seq);
                }
            }
        }

        if let Some(p) = &opts.common.progress {
            p(done_bytes, total_known);
        }
        if streams.iter().all(|s| s.finished()) {
            break;
        }
        // Results are taken before reads are issued, so every buffer they
        // free is read into before the wait; with nothing in flight a wait
        // could never end (it did, on input that compresses to nothing).
        if engine.in_flight() == 0 && workers.in_flight() == 0 {
            return Err(stalled("compress", streams.iter().map(Stream::state).collect(), in_pipeline, slots));
        }

        // 3. Sleep until I/O completes or a worker finishes.
        completions.clear();
        engine.wait(&mut completions, &waker).map_err(|e| JobError::Internal(format!("I/O wait failed: {e}")))?;
        for c in completions.drain(..) {
            let (stream, seq) = match Token::of(c.op, c.token) {
                Token::Write { stream, .. } => {
                    streams[stream].writer.as_mut().expect("writer open").on_write_complete(c.result, c.buf, &mut cache)?;
                    continue;
                }
                Token::Read { stream, seq } => (stream, seq),
            };
            let s = &mut streams[stream];
            s.reads_in_flight -= 1;
            let offset = s.first_offset + seq * chunk_bytes as u64;
            let n = crate::job::check_read(&s.source.path, c.result, offset, chunk_bytes, s.size)?;
            let JobBuf::Pooled(mut buf) = c.buf else { unreachable!("reads use pool buffers") };
            buf.set_len(n);
            s.bytes_in += n as u64;
            crate::record_read(ledger, &s.source_name, s.source_via, buf.domain(), n as u64);
            if n < chunk_bytes && s.size.is_none() {
                s.read_done = true; // a stream ended
                if n == 0 && seq > 0 {
                    s.chunks = Some(seq);
                    in_pipeline -= 1;
                    continue;
                }
                s.chunks = Some(seq + 1);
            }
            dispatch(&mut workers, &mut cache, stream, seq, buf);
        }
    }
    drop(workers); // joins the workers, which charge their CPU time
    Ok(MemoryReport::new(&pool.stats(), cache.peak_allocated_bytes))
}
