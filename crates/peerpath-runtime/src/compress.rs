//! The compression job: sources -> aligned reads -> compute workers ->
//! ordered, packed, aligned writes -> targets renamed into place.
//!
//! One orchestration thread (the caller's) runs one I/O engine for every
//! source and target of the job, so several files are compressed at once
//! (the case study read 12 sources and wrote 6 targets). Bounded: a fixed
//! pool of read buffers, and at most that many blocks anywhere in the
//! pipeline.

use crate::buf::JobBuf;
use crate::cpu_pass::CpuParams;
use crate::devices::{Compute, DeviceMemoryFrom, DeviceSet};
use crate::error::{JobError, Result};
use crate::executor::Executor;
use crate::job::{check_sources_are_not_targets, check_target, is_std_stream, open_source_checked, open_target, put_all_in_place, set_engine, CommonOptions, Writes};
use crate::offload::{DeviceSide, Params};
use crate::report::{DeviceReport, Fallback, FileReport, JobReport, JobSummary, MemoryReport, Operation, Quoted};
use crate::stream::{CpuState, Stream};
use crate::writer::TargetWriter;
use peerpath_func::{Format, Level, BGZF_MAX_INPUT_BYTES};
use peerpath_io::{choose_engine, IoPath, SourceKind, Waker};
use peerpath_mem::DIRECT_IO_ALIGN_BYTES;
use peerpath_metrics::{thread_cpu_now, CpuAccount, CpuRole, Ledger};
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
    /// Encrypt each output as it is written (peerpath-enc/1, AES-256-GCM):
    /// the key and the plaintext bytes per block.
    pub encrypt: Option<(std::sync::Arc<peerpath_func::crypt::Key>, u32)>,
}

pub const DEFAULT_BLOCK_BYTES: usize = 1 << 20;
const MAX_READ_BYTES: usize = 64 << 20;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Why a block size keeps reads from O_DIRECT and streams from devices (said after the size).
const UNALIGNED_BLOCKS: &str = "cannot be grouped into aligned reads of at most 64 MiB (any multiple of 4 KiB up to 64 MiB can)";

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

/// Compresses each source into its target. On failure every partial target
/// is removed and no source is touched.
pub fn compress(pairs: &[(PathBuf, PathBuf)], opts: &CompressOptions) -> Result<JobReport> {
    let devices = match &opts.compute {
        Compute::Cpu => None,
        Compute::Emulated(spec) => Some(DeviceSet::emulated(spec, opts.no_fallback)),
        Compute::Gpu(spec) => Some(DeviceSet::gpu(spec, opts.no_fallback)),
    };
    // A job cancelled from outside ends with that, whatever its transfers then said.
    compress_on(pairs, opts, devices).map_err(crate::cancel::or_cancelled)
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
            "block size must be between 1 byte and {} ({} bytes)",
            peerpath_metrics::human_bytes(peerpath_func::MAX_MEMBER_UNCOMPRESSED_BYTES as u64),
            peerpath_func::MAX_MEMBER_UNCOMPRESSED_BYTES
        )));
    }
    // Reads through device memory: at least what the devices ask for (1 MiB: device memory is small).
    let (chunk_bytes, chunk_aligned) = read_chunk_bytes(member_bytes, devices.as_ref().map_or(1 << 20, |d| d.chunk_bytes));
    let mut fallbacks = Vec::new();
    for (s, t) in pairs {
        check_target(s, t, opts.common.force, Writes::FileOrStdout)?;
    }
    if opts.verify && pairs.iter().any(|(_, t)| is_std_stream(t)) {
        // Read back, "-" would be standard input.
        return Err(JobError::Usage("--verify reads each output back before it is put in place, and standard output cannot be read back: give --output FILE or DIR (or check the stream with `peerpath verify -` where it goes)".into()));
    }
    check_sources_are_not_targets(pairs)?;
    crate::job::make_room(pairs.len(), true, devices.is_some())?;
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
            refused = Some(format!("block size {member_bytes} B {UNALIGNED_BLOCKS}"));
        }
        let opened = match &opts.encrypt {
            // Sealed blocks sit at unaligned offsets (72 + i x (block + 16)): written buffered.
            Some((key, block)) => {
                let common = CommonOptions { direct: false, ..opts.common.clone() };
                open_target(target, &common, &src).and_then(|(mut w, mut p)| {
                    let sealer = peerpath_func::crypt::StreamSealer::new(key, *block).map_err(JobError::Internal)?;
                    w.encrypt_with(sealer);
                    p.direct = false;
                    p.fallback_reason = Some("encrypted (peerpath-enc/1): sealed blocks sit at unaligned offsets, 72 + i x (block + 16)".into());
                    Ok((w, p))
                })
            }
            None => open_target(target, &opts.common, &src),
        };
        let (writer, write_path) = match opened {
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
            stamp: peerpath_io::Stamp::of_file(&src.file),
            read_path: IoPath { engine: peerpath_io::EngineKind::IoUring, direct: src.direct, fallback_reason: refused },
            source_via: crate::Via::of(&src),
            source: src,
            sequential_read,
            writer: Some(writer),
            write_path,
            bytes_in: 0,
            members: 0,
            on_cpu: true,
            device: None,
            members_on_device: 0,
            cpu: CpuState::default(),
        });
        let s = streams.last_mut().expect("just pushed");
        s.cpu.worker_reads = crate::cpu_pass::worker_reads(s);
    }
    let cpu = CpuAccount::start();
    let orchestration_start = thread_cpu_now();
    let ledger = Ledger::new();
    let outcome = run_job(&mut streams, opts, devices, member_bytes, chunk_bytes, chunk_aligned, &ledger, &cpu, &mut fallbacks);
    cpu.charge_thread(CpuRole::Orchestration, orchestration_start);
    let ran = match outcome.and_then(|r| sources_unchanged(&streams).map(|()| r)) {
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
            source_bytes: crate::report::name_bytes(&s.source.path),
            target: Some(w.final_path.display().to_string()),
            target_bytes: crate::report::name_bytes(&w.final_path),
            bytes_in: s.bytes_in,
            bytes_out: w.file_len(),
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
        format: {
            let f = match opts.format {
                Format::Gzip => crate::decompress::PEERPATH_FORMAT.to_string(),
                Format::Bgzf => crate::decompress::BGZF_FORMAT.to_string(),
            };
            match &opts.encrypt {
                Some((_, block)) => format!("{f}, encrypted: peerpath-enc/1 (AES-256-GCM, {} blocks)", peerpath_metrics::human_bytes(*block as u64)),
                None => f,
            }
        },
        level: Some(opts.level.get()),
        block_size_bytes: Some(member_bytes),
        threads: ran.threads,
        queue_depth: ran.queue_depth,
        files,
        fallbacks,
        wall: start.elapsed(),
        cpu,
        ledger: ledger.summary(),
        memory: ran.memory,
    };
    let mut report = match ran.provenance {
        Some(p) if offloaded => JobReport::measured(job, p),
        _ => JobReport::measured_host(job),
    };
    report.devices = ran.devices;
    report.placement = ran.placement;
    report.placement_explain = ran.placement_explain;
    report.offload_transfers_cpu_s = ran.offload_transfers_cpu_s;
    report.pipeline = ran.pipeline;
    report.verified_s = verify_wall.map(|t| t.as_secs_f64());
    Ok(report)
}

/// Refuses outputs of sources that grew while they were read (appended to:
/// the output would end where the source did when opened, and say nothing),
/// or were written in place (the output would mix old and new bytes, a state
/// the file never had, and verify); a source that shrank failed its read already.
fn sources_unchanged(streams: &[Stream]) -> Result<()> {
    for s in streams {
        let SourceKind::Regular { size_bytes } = s.source.kind else { continue };
        let meta = s.source.file.metadata().map_err(|e| JobError::SourceIo { path: s.source.path.clone(), detail: e.to_string() })?;
        let now = meta.len();
        if now > size_bytes {
            return Err(JobError::SourceIo { path: s.source.path.clone(), detail: format!("the source grew while being read ({size_bytes} bytes when opened, {now} now): its output would lack the end; nothing was kept") });
        }
        if let Some(what) = s.stamp.and_then(|before| before.changes(&peerpath_io::Stamp::of(&meta))) {
            return Err(JobError::SourceIo { path: s.source.path.clone(), detail: format!("the source changed while being read ({what}): its output could mix old and new bytes; nothing was kept (compress it again once nothing writes it)") });
        }
    }
    Ok(())
}

/// Checks every member of a finished (not yet renamed) output.
fn verify_output(w: &TargetWriter) -> Result<()> {
    let opts = crate::DecompressOptions { common: CommonOptions { progress: None, force: false, ..CommonOptions::default() }, ..Default::default() };
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
    /// What the figures are when devices did the work.
    provenance: Option<crate::report::Provenance>,
    /// Where the CPU pass's time went.
    pipeline: Option<peerpath_metrics::PipelineReport>,
    /// The queue depth it ran with.
    queue_depth: u32,
}

/// Whether a stream can go through device memory: O_DIRECT both ways (or,
/// for a device staged through a host window, page-cache I/O where O_DIRECT
/// is refused: the kernel's copy into that window is what a memory file
/// system costs any reader) and a known size. Otherwise, why not.
fn offload_refusal(s: &Stream, chunk_aligned: bool, host_window: bool) -> Option<String> {
    let w = s.writer.as_ref().expect("writer open");
    if s.sequential_read || w.is_sequential() {
        Some("pipes and standard streams cannot move data by DMA into device memory".into())
    } else if !chunk_aligned {
        Some(format!("the block size {UNALIGNED_BLOCKS}"))
    } else if !s.source.direct && !host_window {
        Some(format!("the source refused O_DIRECT ({}), and device memory is only reached by DMA", s.source.direct_refused.as_deref().unwrap_or("no reason given")))
    } else if w.encrypting() {
        Some("the output is encrypted: compress -> encrypt in device memory is not built yet, so the host CPU compresses and seals it".into())
    } else if !w.target.direct && !host_window {
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
    let mut qd = opts.common.queue_depth.max(1);
    let mut placement = Placement::default();
    let mut started = Vec::new();
    let mut params = Params { member_bytes, chunk_bytes, level: opts.level, format: opts.format, queue_depth: qd as usize };
    let mut device_text = None;
    if let Some(set) = devices {
        placement = place(streams, &set, chunk_aligned, opts.no_fallback, fallbacks)?;
        if !placement.on_device.is_empty() {
            let sizes: Vec<Option<u64>> = placement.on_device.iter().map(|&i| streams[i].size).collect();
            started = (set.start)(&sizes, &params, fallbacks)?;
            device_text = Some((set.what, set.workers, set.provenance));
        }
    }
    // No GPU: the host CPU's queue depth, not the one chosen to fill a GPU.
    if let (true, Compute::Gpu(spec)) = (started.is_empty(), &opts.compute) {
        qd = spec.cpu_queue_depth.map_or(qd, |q| q.max(1));
        params.queue_depth = qd as usize;
    }
    let on_device: &[usize] = if started.is_empty() { &[] } else { &placement.on_device };
    for (i, s) in streams.iter_mut().enumerate() {
        s.on_cpu = !on_device.contains(&i);
    }
    // One engine for every stream: read/write where a pipe needs ordered I/O.
    let any_pipe = streams.iter().any(|s| s.sequential_read || s.writer.as_ref().is_some_and(|w| is_std_stream(&w.final_path)));
    let entries = qd * streams.len() as u32 + 4 + qd * on_device.len() as u32 * 2 + 4;
    let (mut engine, engine_note) = choose_engine::<JobBuf>(entries, opts.common.sync_io || any_pipe);
    let engine_note = if any_pipe && !opts.common.sync_io { Some("pipes need ordered reads and writes; using read/write".into()) } else { engine_note };
    if let Some(n) = &engine_note {
        fallbacks.push(Fallback::IoEngine { why: n.clone() });
    }
    for (i, s) in streams.iter_mut().enumerate() {
        set_engine(&mut s.read_path, engine.kind(), &engine_note);
        set_engine(&mut s.write_path, engine.kind(), &engine_note);
        if on_device.contains(&i) {
            continue;
        }
        if let Some(r) = &s.read_path.fallback_reason {
            if s.read_path.engine == peerpath_io::EngineKind::IoUring || !s.read_path.direct {
                fallbacks.push(Fallback::ReadsNotDirect { source: s.source.path.clone(), why: r.clone() });
            }
        }
        if let (false, Some(r)) = (s.write_path.direct, &s.write_path.fallback_reason) {
            fallbacks.push(Fallback::WritesNotDirect { target: s.writer.as_ref().expect("open").final_path.clone(), why: r.clone() });
        }
        if s.cpu.worker_reads {
            s.read_path.engine = peerpath_io::EngineKind::Syscalls;
            let why = s.read_path.fallback_reason.take().unwrap_or_else(|| "a memory file system".into());
            s.read_path.fallback_reason = Some(format!("{why}; each compute worker reads its own chunks (pread), not io_uring's kernel workers"));
        }
    }
    let waker = Waker::new().map_err(|e| JobError::Internal(format!("eventfd: {e}")))?;
    let device_side = match started.is_empty() {
        true => None,
        false => Some(DeviceSide::new(streams, on_device, started, params, engine.as_mut(), ledger, &waker)?),
    };
    let total: Option<u64> = streams.iter().map(|s| s.size).sum();
    let progress = opts.common.progress.clone();
    let mut report_progress = |done: u64| {
        if let Some(p) = &progress {
            p(done, total);
        }
    };
    let cpu_params = CpuParams { threads: opts.common.threads.max(1), queue_depth: qd as usize, member_bytes, device_chunk_bytes: chunk_bytes, format: opts.format, level: opts.level };
    let executor = Executor { streams, engine: engine.as_mut(), ledger, cpu, cpu_params, no_fallback: opts.no_fallback, progress: &mut report_progress };
    let result = executor.run(&waker, device_side, fallbacks);
    let ran = result?; // (on error the engine, dropped here, waits for its I/O)
    let cpu_ran = ran.cpu_memory.is_some();
    let mut memory = ran.cpu_memory.unwrap_or_default();
    memory.add_engine(engine.as_ref());
    fallbacks.extend(engine.done_by_syscalls().map(|why| Fallback::IoEngine { why }));
    cpu.sample_io_workers();
    drop(engine); // all I/O is done
    let library = format!("{} (level {})", opts.level.library(), opts.level.get());
    let provenance = device_text.map(|t| t.2);
    let (engine_text, threads, devices, transfers) = match (ran.devices, device_text) {
        (Some(d), Some((what, workers, _))) => {
            for &(i, k) in &d.device_of {
                streams[i].device = Some(k);
            }
            let mut text = crate::devices::describe(what, workers, d.reports.len(), &library);
            if cpu_ran {
                text += &format!("; the host CPU ({} threads, {}) for what the devices did not do", opts.common.threads.max(1), opts.level.library());
            }
            (text, workers, d.reports, Some(d.transfers_cpu_s))
        }
        _ => (format!("host CPU, {library}"), opts.common.threads.max(1), Vec::new(), None),
    };
    Ok(Ran { engine: engine_text, threads, memory, devices, placement: placement.lines, placement_explain: placement.explain, offload_transfers_cpu_s: transfers, provenance, pipeline: ran.pipeline, queue_depth: qd })
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
fn place(streams: &[Stream], set: &DeviceSet, chunk_aligned: bool, no_fallback: bool, fallbacks: &mut Vec<Fallback>) -> Result<Placement> {
    let mut eligible = Vec::new();
    for (i, s) in streams.iter().enumerate() {
        match offload_refusal(s, chunk_aligned, set.host_window) {
            None => eligible.push(i),
            Some(why) if no_fallback => {
                return Err(JobError::Device { detail: format!("{}: cannot offload: {why} (--no-fallback)", Quoted(&s.source.path)) });
            }
            Some(why) => fallbacks.push(Fallback::HostCpuNotDevice { source: s.source.path.clone(), why }),
        }
    }
    match &set.memory_from {
        DeviceMemoryFrom::P2p { sysfs, bdf } => {
            let routed = p2p_routes(streams, &eligible, sysfs, bdf, no_fallback, fallbacks)?;
            Ok(Placement { on_device: routed.kept, lines: routed.placement, explain: routed.explain })
        }
        DeviceMemoryFrom::Shm => Ok(Placement { on_device: eligible, ..Default::default() }),
    }
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
        let name = Quoted(&streams[i].source.path);
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
                fallbacks.push(Fallback::HostCpuNotDevice { source: streams[i].source.path.clone(), why });
            }
        }
    }
    Ok(P2pRoutes { kept, placement, explain })
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_whole_members_aligned_for_o_direct() {
        assert_eq!(read_chunk_bytes(1 << 20, 2 << 20), (2 << 20, true));
        assert_eq!(read_chunk_bytes(64 << 10, 1 << 20), (1 << 20, true));
        // BGZF's 0xff00-byte members: 16 of them make an aligned read (0xff000).
        let (n, aligned) = read_chunk_bytes(0xff00, 1 << 20);
        assert!(aligned && n % 0xff00 == 0 && n % DIRECT_IO_ALIGN_BYTES == 0 && n >= 1 << 20, "{n}");
        // An odd block size has no aligned multiple within 64 MiB: reads go through the page cache.
        let (n, aligned) = read_chunk_bytes(1_000_003, 1 << 20);
        assert!(!aligned && n % 1_000_003 == 0 && n >= 1 << 20);
    }
}
