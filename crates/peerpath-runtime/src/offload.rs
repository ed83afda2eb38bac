//! The offload path of the compression job: SSD -> device memory ->
//! device function -> device memory -> SSD, with the host orchestrating.
//!
//! Per block: the source is read by O_DIRECT straight into a range of the
//! device's memory; the device compresses each member into another range
//! (the complete gzip member: header, deflate data, trailer); the device
//! then packs the members back to back into a staging range of its memory
//! (a copy inside device memory, in the ledger as such); the host writes
//! aligned extents of the staging range to the target by O_DIRECT and has
//! the device carry the unaligned tail over into the next staging range;
//! the last extent is padded and the file truncated to its exact length.
//! The host never reads or writes payload bytes: the only bytes it puts
//! into device memory are the 28 bytes of the BGZF end-of-file marker
//! (metadata, counted as such).
//!
//! Failure: a device that fails (an error status, a malformed completion,
//! no answer, death) is retired for the rest of the job. Each of its
//! streams is handed over to the CPU path at the first byte that is not
//! yet on its way to the target: the block holding that byte is read and
//! compressed again on the CPU (output is deterministic, so the bytes are
//! the ones the device would have made) and the job goes on from there.
//! With `--no-fallback` the job fails instead and leaves no output.

use crate::compress::Stream;
use crate::error::{JobError, Result};
use peerpath_device::{Completion, Device, DeviceRange, Request, Status, Submit, Watcher};
use peerpath_func::{member_bound_bytes, Format, Level, BGZF_EOF_BLOCK};
use peerpath_io::{IoEngine, IoOp, Waker};
use peerpath_mem::{align_down, align_up, RegionAllocator, RegionBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{CpuRole, Ledger, Location, Mover, Purpose};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::AsRawFd;

/// Packed output is written in extents of at least this many bytes.
pub const STAGING_BYTES: usize = 4 << 20;
/// Staging ranges per stream: one filling, one or two being written.
const STAGINGS_PER_STREAM: usize = 3;
const WRITE_BIT: u64 = 1 << 63;

/// What the report says about one device of the job.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceReport {
    pub name: String,
    /// What it is: an emulated CSP process, with its pid.
    pub kind: String,
    pub memory_bytes: usize,
    /// The sources it served.
    pub sources: Vec<String>,
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
}

/// Where a stream goes on after its device failed.
pub(crate) struct Handover {
    /// The first block the CPU reads and compresses.
    pub chunk: u64,
    /// Bytes of that block's output already on their way to the target.
    pub skip_bytes: u64,
    /// Output bytes submitted for writing (aligned).
    pub written: u64,
    /// Members entirely before `chunk`.
    pub members_before: u64,
}

pub(crate) struct OffloadDevice {
    pub device: Box<dyn Device>,
    /// The streams (indices into the job's streams) this device serves.
    pub streams: Vec<usize>,
    pub kind: String,
    /// Its process's CPU time and its workers' busy time when the job
    /// started with it, where it says (the report counts from there).
    pub cpu_at_start: Option<std::time::Duration>,
    pub busy_ns_at_start: Option<u64>,
    /// Bytes of its memory that were resident when it had started.
    pub populated_bytes: usize,
}

struct Chunk {
    input: Option<RegionBuf>,
    output: RegionBuf,
    /// Member lengths as completions come in.
    lens: Vec<Option<u32>>,
    outstanding: usize,
    /// Pack copies in flight; the output range is freed at 0.
    copies: usize,
}

impl Chunk {
    /// Being read, or being compressed: its input range is in use.
    fn holds_input(&self) -> bool {
        self.lens.is_empty() || self.outstanding > 0
    }
}

struct Staging {
    /// `None` while the I/O engine holds it for the write.
    buf: Option<RegionBuf>,
    offset: usize,
    filled: usize,
    /// Copies into this range in flight.
    copies: usize,
    sealed: bool,
    last: bool,
    /// Where the unaligned tail goes (a staging id), once sealed.
    tail_to: Option<u32>,
    written: bool,
    /// Operations reading it after the seal (write, tail copy).
    readers: usize,
}

enum Op {
    Compress { stream: usize, seq: u64, member: usize },
    Pack { stream: usize, seq: u64, staging: u32, bytes: u64 },
    Tail { stream: usize, from: u32, to: u32 },
}

#[derive(Default)]
struct OStream {
    dev: usize,
    /// Chunks this stream may have being read or compressed at once.
    max_inputs: usize,
    reads_in_flight: usize,
    writes_in_flight: usize,
    chunks: BTreeMap<u64, Chunk>,
    next_pack_seq: u64,
    /// Output offset where each packed chunk starts (index: chunk seq),
    /// plus where the next one will.
    chunk_starts: Vec<u64>,
    packed_bytes: u64,
    /// Output bytes submitted for writing (aligned while not finished).
    written: u64,
    free_stagings: Vec<RegionBuf>,
    stagings: HashMap<u32, Staging>,
    filling: Option<u32>,
    next_staging: u32,
    eof_packed: bool,
    /// The last staging range's write is submitted: no device work left.
    final_written: bool,
    done: bool,
    handover: Option<Handover>,
}

struct DevState {
    failure: Option<String>,
    backlog: VecDeque<Request>,
    ops: HashMap<u64, Op>,
    next_tag: u64,
    alloc: RegionAllocator,
    /// Where the BGZF end-of-file marker sits in device memory.
    eof: Option<RegionBuf>,
}

pub(crate) struct Params {
    pub member_bytes: usize,
    pub chunk_bytes: usize,
    pub level: Level,
    pub format: Format,
    pub queue_depth: usize,
}

/// Device memory for the output of one chunk (its members' bound).
fn out_chunk_bytes(params: &Params) -> usize {
    params.chunk_bytes.div_ceil(params.member_bytes) * member_bound_bytes(params.member_bytes)
}

/// One staging range: packed output, one chunk's worth carried over, the
/// BGZF end-of-file block, and the unaligned tail.
fn staging_capacity(params: &Params) -> usize {
    STAGING_BYTES + out_chunk_bytes(params) + BGZF_EOF_BLOCK.len() + DIRECT_IO_ALIGN_BYTES
}

/// Chunks a stream may have being read or compressed: two per command the
/// device runs at once (one running, one queued), shared by its `streams`,
/// plus two reads ahead per stream; at most two queue depths. Compressed
/// chunks waiting to be packed do not count (a slow write must not starve
/// the device), up to two queue depths in all. More inputs only hold device
/// memory (registered and faulted in): on the 2-core VM, 16 chunks a stream
/// instead of 4 registered 96 MiB instead of 56 for the corpus, at ~1 ms of
/// host CPU per MiB of 4 KiB pages.
fn max_inputs(parallelism: Option<usize>, streams: usize, params: &Params) -> usize {
    match parallelism {
        Some(p) => (2 * p).div_ceil(streams.max(1)) + 2,
        None => 2 * params.queue_depth,
    }
    .clamp(2, 2 * params.queue_depth.max(1))
}

/// What a device's streams (of these source sizes) usually hold of its memory
/// at their peak, in whole 2 MiB pages: the BGZF end-of-file block, the
/// stagings, and per stream `max_inputs` chunks, input and output, plus two
/// outputs waiting to be packed, or as many as a small source has. The job
/// registers this much with io_uring ahead of the first transfer, and asks an
/// emulated device to make it resident when it starts.
fn usual_peak_bytes(sizes: &[Option<u64>], max_inputs: usize, params: &Params) -> usize {
    let stagings = sizes.len() * STAGINGS_PER_STREAM * align_up(staging_capacity(params), 4096);
    let chunks: usize = sizes
        .iter()
        .map(|size| size.map_or(1, |n| n.div_ceil(params.chunk_bytes as u64).max(1) as usize).min(max_inputs + 2))
        .sum();
    let per_chunk = align_up(params.chunk_bytes, 4096) + align_up(out_chunk_bytes(params), 4096);
    align_up(align_up(BGZF_EOF_BLOCK.len(), 4096) + stagings + chunks * per_chunk, 2 << 20)
}

/// Runs every stream of `devices` to completion on its device, or to the
/// point where it must go on on the CPU (`Stream::handover`).
pub(crate) fn run(
    streams: &mut [Stream],
    devices: &mut [OffloadDevice],
    engine: &mut dyn IoEngine<RegionBuf>,
    params: &Params,
    ledger: &Ledger,
    progress: &mut dyn FnMut(u64),
) -> Result<Driven> {
    let waker = Waker::new().map_err(|e| JobError::Internal(format!("eventfd: {e}")))?;
    let out_chunk_bytes = out_chunk_bytes(params);
    let staging_capacity = staging_capacity(params);
    let mut os: HashMap<usize, OStream> = HashMap::new();
    let mut devs: Vec<DevState> = Vec::new();
    for (d, od) in devices.iter_mut().enumerate() {
        let name = od.device.name().to_string();
        let region = od.device.memory().mapped_region().cloned().ok_or_else(|| {
            JobError::Usage(format!("device {name} has no mapped memory for the I/O engine to reach"))
        })?;
        let alloc = RegionAllocator::new(region);
        let stagings = od.streams.len() * STAGINGS_PER_STREAM * align_up(staging_capacity, 4096);
        let needed = stagings + params.chunk_bytes + out_chunk_bytes + 8192;
        if alloc.available() < needed {
            return Err(JobError::Usage(format!(
                "device {name} has {} MiB of memory; {} stream(s) of {} KiB blocks need at least {} MiB (give the device more memory, or fewer sources per device)",
                alloc.available() >> 20,
                od.streams.len(),
                params.chunk_bytes >> 10,
                needed.div_ceil(1 << 20)
            )));
        }
        let eof = if params.format == Format::Bgzf {
            let buf = alloc.try_alloc(BGZF_EOF_BLOCK.len()).expect("checked above");
            // SAFETY: the range was just allocated: no command uses it, and
            // no other thread touches device memory through this handle.
            unsafe { od.device.memory().host_write(buf.offset() as u64, &BGZF_EOF_BLOCK) };
            let host = peerpath_mem::MemoryDomain::host_unplaced();
            ledger.record_copy(
                Location::memory(&host),
                Location::memory(buf.domain()),
                Mover::Cpu { role: CpuRole::Orchestration },
                Purpose::Metadata,
                BGZF_EOF_BLOCK.len() as u64,
            );
            Some(buf)
        } else {
            None
        };
        let max_inputs = max_inputs(od.device.parallelism(), od.streams.len(), params);
        for &i in &od.streams {
            let mut o = OStream { dev: d, max_inputs, chunk_starts: vec![0], ..Default::default() };
            for _ in 0..STAGINGS_PER_STREAM {
                o.free_stagings.push(alloc.try_alloc(staging_capacity).expect("checked above"));
            }
            os.insert(i, o);
        }
        // First-fit keeps the ranges in use at the start of the region;
        // anything beyond the usual peak is registered when first used.
        let sizes: Vec<Option<u64>> = od.streams.iter().map(|&i| streams[i].size).collect();
        if let Some(span) = peerpath_io::region_fixed_span(alloc.region()) {
            engine.register_ahead(span, usual_peak_bytes(&sizes, max_inputs, params));
        }
        devs.push(DevState { failure: None, backlog: VecDeque::new(), ops: HashMap::new(), next_tag: 1, alloc, eof });
    }
    // The engine's wait also ends on a device's completion signal where it
    // can watch it (io_uring); watchers relay the rest (a device's death, a
    // periodic tick for command timeouts, and completions otherwise). A
    // relay costs a thread's wake-up per signal: on the 2-core VM the
    // watcher thread took ~0.7 % of a one-device job's CPU samples.
    let mut watched = Vec::new();
    let mut watchers = Vec::new();
    for od in devices.iter() {
        let in_engine = od.device.wake_fd().is_some_and(|fd| engine.watch_eventfd(fd));
        if in_engine {
            watched.extend(od.device.wake_fd());
        }
        let w = waker.clone();
        watchers.push(Watcher::start(od.device.as_ref(), !in_engine, move || w.wake()).map_err(|e| JobError::Internal(format!("device watcher: {e}")))?);
    }
    let driving = peerpath_metrics::thread_cpu_now();
    let drive_start = std::time::Instant::now();
    let result = drive(streams, devices, &mut devs, &mut os, engine, params, ledger, &waker, staging_capacity, progress);
    let transfers_cpu_s = peerpath_metrics::thread_cpu_now().minus(&driving).total_s();
    let drive_s = drive_start.elapsed().as_secs_f64();
    drop(watchers);
    for fd in watched {
        engine.unwatch_eventfd(fd);
    }
    result?;
    for (i, o) in os {
        let s = &mut streams[i];
        s.members_on_device = s.members;
        s.handover = o.handover;
    }
    Ok(Driven { failures: devs.into_iter().map(|d| d.failure).collect(), transfers_cpu_s, drive_s })
}

/// How `run` ended: each device's failure, if any, and the orchestrating
/// thread's CPU time while transfers and commands were in flight (after
/// the devices were up and their memory registered).
pub(crate) struct Driven {
    pub failures: Vec<Option<String>>,
    pub transfers_cpu_s: f64,
    /// Wall time from the first transfer to the last completion.
    pub drive_s: f64,
}

#[allow(clippy::too_many_arguments)]
fn drive(
    streams: &mut [Stream],
    devices: &mut [OffloadDevice],
    devs: &mut [DevState],
    os: &mut HashMap<usize, OStream>,
    engine: &mut dyn IoEngine<RegionBuf>,
    params: &Params,
    ledger: &Ledger,
    waker: &Waker,
    staging_capacity: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    let member_bound = member_bound_bytes(params.member_bytes);
    let chunk_members = params.chunk_bytes / params.member_bytes;
    let mut order: Vec<usize> = os.keys().copied().collect();
    order.sort_unstable();
    let mut completions = Vec::new();
    let mut device_done: Vec<Completion> = Vec::new();
    let mut done_bytes = 0u64;

    // Empty sources: one empty member, made by the device.
    for &i in &order {
        if streams[i].size == Some(0) {
            let o = os.get_mut(&i).expect("stream");
            let Some(input) = devs[o.dev].alloc.try_alloc(0) else { continue };
            let output = devs[o.dev].alloc.try_alloc(member_bound_bytes(0)).expect("memory was checked");
            streams[i].read_done = true;
            streams[i].chunks = Some(1);
            streams[i].next_seq = 1;
            start_chunk(&mut devs[o.dev], o, i, 0, input, output, 0, params, member_bound);
        }
    }

    loop {
        // 1. Reads into device memory, while it has room (back-pressure).
        for &i in &order {
            let o = os.get_mut(&i).expect("stream");
            let s = &mut streams[i];
            let dev = &mut devs[o.dev];
            while dev.failure.is_none() && !s.read_done && o.reads_in_flight < params.queue_depth
                && o.chunks.len() < 2 * params.queue_depth
                && o.chunks.values().filter(|c| c.holds_input()).count() < o.max_inputs
            {
                let size = s.size.expect("offloaded sources have a size");
                let offset = s.next_read_offset;
                let len = params.chunk_bytes.min(align_up((size - offset) as usize, DIRECT_IO_ALIGN_BYTES));
                let Some(input) = dev.alloc.try_alloc(len) else { break };
                let bound = len.div_ceil(params.member_bytes) * member_bound;
                let Some(output) = dev.alloc.try_alloc(bound.max(member_bound_bytes(0))) else { break };
                let token = ((i as u64) << 32) | s.next_seq;
                o.chunks.insert(s.next_seq, Chunk { input: None, output, lens: Vec::new(), outstanding: 0, copies: 0 });
                engine
                    .submit(IoOp::Read, s.source.file.as_raw_fd(), Some(offset), len, input, token)
                    .map_err(|(_, e)| JobError::SourceIo { path: s.source.path.clone(), detail: e.to_string() })?;
                o.reads_in_flight += 1;
                s.next_seq += 1;
                s.next_read_offset += params.chunk_bytes as u64;
                if s.next_read_offset >= size {
                    s.read_done = true;
                    s.chunks = Some(s.next_seq);
                }
            }
        }

        // 2. Device completions.
        for (d, od) in devices.iter_mut().enumerate() {
            let dev = &mut devs[d];
            if dev.failure.is_some() {
                continue;
            }
            flush_backlog(od.device.as_mut(), dev);
            device_done.clear();
            let polled = od.device.poll(&mut device_done);
            for c in device_done.drain(..) {
                if let Err(why) = on_device_completion(c, od, dev, os, ledger, &mut done_bytes) {
                    fail_device(dev, why);
                    break;
                }
            }
            if let Err(e) = polled {
                fail_device(dev, e.to_string());
            }
        }

        // 3. Pack complete chunks in order; seal and write staging ranges.
        for &i in &order {
            let o = os.get_mut(&i).expect("stream");
            let dev = &mut devs[o.dev];
            if dev.failure.is_some() || o.done {
                continue;
            }
            let s = &mut streams[i];
            pack_ready(s, o, i, dev, params, staging_capacity);
            write_sealed(s, o, i, dev, engine, ledger)?;
            if o.final_written && o.writes_in_flight == 0 {
                finish_stream(s, o, params.member_bytes);
            }
        }

        // 4. Streams of failed devices: quiesce their I/O, then hand over.
        for &i in &order {
            let o = os.get_mut(&i).expect("stream");
            if o.done || devs[o.dev].failure.is_none() || o.reads_in_flight > 0 || o.writes_in_flight > 0 {
                continue;
            }
            let s = &mut streams[i];
            if o.final_written {
                // Everything was already on its way: nothing to redo.
                finish_stream(s, o, params.member_bytes);
                continue;
            }
            let h = handover_point(o, chunk_members as u64);
            o.chunks.clear();
            o.stagings.clear();
            o.free_stagings.clear();
            o.done = true;
            s.bytes_in = h.chunk * params.chunk_bytes as u64;
            s.members = h.members_before;
            o.handover = Some(h);
        }

        progress(done_bytes);
        if order.iter().all(|i| os[i].done) {
            return Ok(());
        }

        // 5. Sleep until I/O completes or a device signals (its watcher).
        let mut sleep = true;
        for (d, od) in devices.iter_mut().enumerate() {
            let dev = &mut devs[d];
            if dev.failure.is_some() {
                continue;
            }
            // Work queued since the poll above goes out before we sleep.
            flush_backlog(od.device.as_mut(), dev);
            if dev.failure.is_some() || (od.device.in_flight() > 0 && !od.device.arm_wake() && od.device.wake_fd().is_some()) {
                sleep = false; // completions (or a failure) are waiting
            }
        }
        if !sleep {
            continue;
        }
        completions.clear();
        engine.wait(&mut completions, waker).map_err(|e| JobError::Internal(format!("I/O wait failed: {e}")))?;
        for c in completions.drain(..) {
            if c.op == IoOp::Write {
                let i = ((c.token & !WRITE_BIT) >> 32) as usize;
                let id = (c.token & 0xffff_ffff) as u32;
                let o = os.get_mut(&i).expect("stream");
                o.writes_in_flight -= 1;
                let w = streams[i].writer.as_mut().expect("writer open");
                let expected = c.buf.len();
                match c.result {
                    Ok(n) if n == expected => w.note_written(n as u64),
                    Ok(n) => return Err(w.io_error(std::io::Error::other(format!("short write: {n} of {expected} bytes")))),
                    Err(e) => return Err(w.io_error(e)),
                }
                release_reader(o, id, Some(c.buf));
                continue;
            }
            let i = (c.token >> 32) as usize;
            let seq = c.token & 0xffff_ffff;
            let o = os.get_mut(&i).expect("stream");
            o.reads_in_flight -= 1;
            let s = &mut streams[i];
            let n = c.result.map_err(|e| JobError::SourceIo { path: s.source.path.clone(), detail: e.to_string() })?;
            let offset = seq * params.chunk_bytes as u64;
            let size = s.size.expect("sized");
            let expected = (size - offset).min(params.chunk_bytes as u64) as usize;
            if n != expected {
                return Err(JobError::SourceIo {
                    path: s.source.path.clone(),
                    detail: crate::job::changed_size(n, expected, offset, size),
                });
            }
            crate::record_read(ledger, &s.source_name, crate::Via::Direct, c.buf.domain(), n as u64);
            let dev = &mut devs[o.dev];
            if dev.failure.is_some() {
                o.chunks.remove(&seq);
                continue; // dropped: the CPU will read it again
            }
            let mut input = c.buf;
            input.set_len(n);
            let output = o.chunks.remove(&seq).expect("chunk").output;
            start_chunk(dev, o, i, seq, input, output, n, params, member_bound);
        }
    }
}

/// A stream whose every output byte was written from device memory: the
/// writer's length is what was packed (the last extent was padded).
fn finish_stream(s: &mut Stream, o: &mut OStream, member_bytes: usize) {
    let size = s.size.unwrap_or(0);
    o.done = true;
    s.writer_finished = true;
    s.writer.as_mut().expect("writer open").resume_at(o.packed_bytes);
    // Members in the source (not counting a BGZF end marker).
    s.members = size.div_ceil(member_bytes as u64).max(1);
    s.bytes_in = size;
}

#[allow(clippy::too_many_arguments)]
fn start_chunk(dev: &mut DevState, o: &mut OStream, stream: usize, seq: u64, input: RegionBuf, output: RegionBuf, n: usize, params: &Params, member_bound: usize) {
    let members = n.div_ceil(params.member_bytes).max(1);
    for m in 0..members {
        let start = m * params.member_bytes;
        let len = params.member_bytes.min(n - start.min(n));
        let tag = dev.next_tag;
        dev.next_tag += 1;
        let in_range = DeviceRange::new((input.offset() + start) as u64, len as u64);
        let out_range = DeviceRange::new((output.offset() + m * member_bound) as u64, member_bound_bytes(len) as u64);
        dev.ops.insert(tag, Op::Compress { stream, seq, member: m });
        dev.backlog.push_back(Request::compress(tag, params.level, params.format, in_range, out_range));
    }
    o.chunks.insert(seq, Chunk { input: Some(input), output, lens: vec![None; members], outstanding: members, copies: 0 });
}

fn flush_backlog(device: &mut dyn Device, dev: &mut DevState) {
    while let Some(r) = dev.backlog.pop_front() {
        match device.submit(r) {
            Submit::Queued => {}
            Submit::Busy(r) => {
                dev.backlog.push_front(r);
                return;
            }
            Submit::Refused(r, e) => {
                dev.backlog.push_front(r);
                fail_device(dev, format!("refused a command: {e}"));
                return;
            }
        }
    }
}

fn fail_device(dev: &mut DevState, why: String) {
    if dev.failure.is_none() {
        dev.failure = Some(why);
    }
    dev.backlog.clear();
    dev.ops.clear();
}

/// Checks one completion and moves its stream on. An error is a reason to
/// retire the device.
fn on_device_completion(
    c: Completion,
    od: &OffloadDevice,
    dev: &mut DevState,
    os: &mut HashMap<usize, OStream>,
    ledger: &Ledger,
    done_bytes: &mut u64,
) -> std::result::Result<(), String> {
    let tag = c.request.tag;
    let Some(op) = dev.ops.remove(&tag) else {
        return Err(format!("completion for tag {tag}, which the job did not submit or already saw"));
    };
    if c.status != Status::Success {
        return Err(format!("answered {} for {}", c.status, describe(&op)));
    }
    let name = od.device.name().to_string();
    let domain = od.device.memory().domain().clone();
    let here = Location::memory(&domain);
    let mover = Mover::Device { name };
    match op {
        Op::Compress { stream, seq, member } => {
            let input = c.request.input_bytes();
            let bound = member_bound_bytes(input as usize) as u64;
            if c.output_bytes < 18 || c.output_bytes > bound {
                return Err(format!("completed member {member} of block {seq} with {} bytes, outside 18..={bound}", c.output_bytes));
            }
            ledger.record(here.clone(), here, mover, Purpose::Function, input, c.output_bytes);
            *done_bytes += input;
            let o = os.get_mut(&stream).expect("stream");
            let chunk = o.chunks.get_mut(&seq).expect("chunk in flight");
            chunk.lens[member] = Some(c.output_bytes as u32);
            chunk.outstanding -= 1;
            if chunk.outstanding == 0 {
                chunk.input = None; // free the input range
            }
        }
        Op::Pack { stream, seq, staging, bytes } => {
            if c.output_bytes != bytes {
                return Err(format!("copied {} bytes of {bytes} into the output stream", c.output_bytes));
            }
            ledger.record_copy(here.clone(), here, mover, Purpose::PackForDirectIo, bytes);
            let o = os.get_mut(&stream).expect("stream");
            if seq != u64::MAX {
                let chunk = o.chunks.get_mut(&seq).expect("chunk being packed");
                chunk.copies -= 1;
                if chunk.copies == 0 {
                    o.chunks.remove(&seq);
                }
            }
            o.stagings.get_mut(&staging).expect("staging").copies -= 1;
        }
        Op::Tail { stream, from, to } => {
            ledger.record_copy(here.clone(), here, mover, Purpose::PackForDirectIo, c.output_bytes);
            let o = os.get_mut(&stream).expect("stream");
            o.stagings.get_mut(&to).expect("staging").copies -= 1;
            release_reader(o, from, None);
        }
    }
    Ok(())
}

fn describe(op: &Op) -> String {
    match op {
        Op::Compress { seq, member, .. } => format!("compressing member {member} of block {seq}"),
        Op::Pack { seq, .. } => format!("packing block {seq}"),
        Op::Tail { .. } => "carrying an unaligned tail".into(),
    }
}

/// Packs every chunk whose members are all compressed, in order.
fn pack_ready(s: &mut Stream, o: &mut OStream, stream: usize, dev: &mut DevState, params: &Params, staging_capacity: usize) {
    loop {
        let all_packed = s.chunks == Some(o.next_pack_seq);
        if all_packed && (params.format != Format::Bgzf || o.eof_packed) {
            // Seal the last staging range (once).
            if let Some(id) = o.filling {
                let st = o.stagings.get_mut(&id).expect("staging");
                if !st.sealed {
                    st.sealed = true;
                    st.last = true;
                    o.filling = None;
                }
            }
            return;
        }
        let ready = all_packed || o.chunks.get(&o.next_pack_seq).is_some_and(|c| c.outstanding == 0 && c.input.is_none() && c.copies == 0 && !c.lens.is_empty());
        if !ready {
            return;
        }
        // A staging range to pack into, sealing a full one first.
        if let Some(id) = o.filling {
            if o.stagings[&id].filled >= STAGING_BYTES {
                let Some(next) = o.free_stagings.pop() else { return };
                let tail = {
                    let st = o.stagings.get_mut(&id).expect("staging");
                    st.filled - align_down(st.filled, DIRECT_IO_ALIGN_BYTES)
                };
                let new_id = new_staging(o, next, tail);
                let st = o.stagings.get_mut(&id).expect("staging");
                st.sealed = true;
                if tail > 0 {
                    st.tail_to = Some(new_id);
                    o.stagings.get_mut(&new_id).expect("staging").copies += 1; // the tail, once it can go
                }
            }
        } else {
            let Some(buf) = o.free_stagings.pop() else { return };
            new_staging(o, buf, 0);
        }
        let id = o.filling.expect("a staging range is filling");
        let st_offset = o.stagings[&id].offset;
        let mut at = o.stagings[&id].filled;
        if all_packed {
            // BGZF: the end-of-file marker after the last member.
            let eof_at = dev.eof.as_ref().expect("BGZF jobs place the marker").offset() as u64;
            let len = BGZF_EOF_BLOCK.len() as u64;
            let tag = next_tag(dev);
            dev.ops.insert(tag, Op::Pack { stream, seq: u64::MAX, staging: id, bytes: len });
            dev.backlog.push_back(Request::copy(tag, &[DeviceRange::new(eof_at, len)], DeviceRange::new((st_offset + at) as u64, len)));
            let st = o.stagings.get_mut(&id).expect("staging");
            st.copies += 1;
            st.filled += len as usize;
            o.packed_bytes += len;
            o.eof_packed = true;
            continue;
        }
        let seq = o.next_pack_seq;
        let chunk = o.chunks.get_mut(&seq).expect("ready chunk");
        let member_bound = member_bound_bytes(params.member_bytes);
        let ranges: Vec<DeviceRange> = chunk
            .lens
            .iter()
            .enumerate()
            .map(|(m, l)| DeviceRange::new((chunk.output.offset() + m * member_bound) as u64, u64::from(l.expect("compressed"))))
            .collect();
        for pair in ranges.chunks(2) {
            let bytes: u64 = pair.iter().map(|r| r.len).sum();
            let tag = next_tag(dev);
            dev.ops.insert(tag, Op::Pack { stream, seq, staging: id, bytes });
            dev.backlog.push_back(Request::copy(tag, pair, DeviceRange::new((st_offset + at) as u64, bytes)));
            at += bytes as usize;
            chunk.copies += 1;
        }
        debug_assert!(at <= staging_capacity, "staging overflow");
        let chunk_bytes_out = (at - o.stagings[&id].filled) as u64;
        let st = o.stagings.get_mut(&id).expect("staging");
        st.copies += chunk.copies;
        st.filled = at;
        o.packed_bytes += chunk_bytes_out;
        o.next_pack_seq += 1;
        o.chunk_starts.push(o.packed_bytes);
    }
}

fn next_tag(dev: &mut DevState) -> u64 {
    let t = dev.next_tag;
    dev.next_tag += 1;
    t
}

fn new_staging(o: &mut OStream, buf: RegionBuf, reserved: usize) -> u32 {
    let id = o.next_staging;
    o.next_staging += 1;
    let offset = buf.offset();
    o.stagings.insert(id, Staging { buf: Some(buf), offset, filled: reserved, copies: 0, sealed: false, last: false, tail_to: None, written: false, readers: 0 });
    o.filling = Some(id);
    id
}

/// Writes sealed staging ranges whose copies are done, in order, and sends
/// their unaligned tails on.
fn write_sealed(s: &mut Stream, o: &mut OStream, stream: usize, dev: &mut DevState, engine: &mut dyn IoEngine<RegionBuf>, ledger: &Ledger) -> Result<()> {
    let mut ids: Vec<u32> = o.stagings.iter().filter(|(_, st)| st.sealed && !st.written).map(|(&id, _)| id).collect();
    ids.sort_unstable();
    for id in ids {
        let st = o.stagings.get_mut(&id).expect("staging");
        if st.copies > 0 {
            return Ok(()); // in order: a later range never goes before this one
        }
        let w = s.writer.as_mut().expect("writer open");
        let aligned = align_down(st.filled, DIRECT_IO_ALIGN_BYTES);
        let write_len = if st.last { align_up(st.filled, DIRECT_IO_ALIGN_BYTES) } else { aligned };
        st.written = true;
        let mut buf = st.buf.take().expect("an unwritten staging range holds its buffer");
        let (offset, filled, tail_to) = (st.offset, st.filled, st.tail_to);
        if write_len > 0 {
            buf.set_len(write_len);
            crate::record_write(ledger, w.target_location(), crate::Via::Direct, buf.domain(), write_len as u64);
            let token = WRITE_BIT | ((stream as u64) << 32) | u64::from(id);
            engine
                .submit(IoOp::Write, w.target.file.as_raw_fd(), Some(o.written), write_len, buf, token)
                .map_err(|(_, e)| w.io_error(e))?;
            st.readers += 1;
            o.writes_in_flight += 1;
        } else {
            st.buf = Some(buf);
        }
        o.written += aligned as u64;
        if let Some(to) = tail_to {
            let to_offset = o.stagings[&to].offset;
            let tail = (filled - aligned) as u64;
            let tag = next_tag(dev);
            dev.ops.insert(tag, Op::Tail { stream, from: id, to });
            dev.backlog.push_back(Request::copy(tag, &[DeviceRange::new((offset + aligned) as u64, tail)], DeviceRange::new(to_offset as u64, tail)));
            o.stagings.get_mut(&id).expect("staging").readers += 1;
        }
        if o.stagings[&id].last {
            o.final_written = true;
        }
        if o.stagings[&id].readers == 0 {
            recycle(o, id);
        }
    }
    Ok(())
}

/// One operation reading a sealed staging range is done (its write, which
/// hands the buffer back, or its tail copy).
fn release_reader(o: &mut OStream, id: u32, buf: Option<RegionBuf>) {
    let st = o.stagings.get_mut(&id).expect("staging being read");
    if let Some(b) = buf {
        st.buf = Some(b);
    }
    st.readers -= 1;
    if st.readers == 0 {
        recycle(o, id);
    }
}

/// A staging range nobody reads any more goes back to the stream's pool.
fn recycle(o: &mut OStream, id: u32) {
    let st = o.stagings.remove(&id).expect("staging");
    let mut buf = st.buf.expect("the write handed the buffer back");
    buf.set_len(0);
    o.free_stagings.push(buf);
}

/// Where the CPU takes over a stream of a failed device: the block holding
/// the first output byte not yet submitted for writing.
fn handover_point(o: &OStream, chunk_members: u64) -> Handover {
    let w = o.written;
    let chunk = o.chunk_starts.iter().rposition(|&p| p <= w).expect("chunk 0 starts at 0") as u64;
    let chunk = chunk.min(o.next_pack_seq);
    Handover { chunk, skip_bytes: w - o.chunk_starts[chunk as usize], written: w, members_before: chunk * chunk_members }
}

/// Free bytes of the file system holding `dir`.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: c is a valid C string and st a buffer statvfs fills.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    // SAFETY: statvfs returned 0, so it filled the struct.
    (rc == 0).then(|| unsafe { st.assume_init() }).map(|st| st.f_bavail * st.f_frsize)
}

/// CPU time (user + system) of a process so far, from /proc.
fn process_cpu(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (utime, stime): (u64, u64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    // SAFETY: sysconf takes a plain integer.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| std::time::Duration::from_secs_f64((utime + stime) as f64 / hz as f64))
}

/// Maps P2P memory for one device: what was asked for, capped at what the
/// provider has available (in whole MiB). Returns the region and where it is, in words.
fn map_p2p_memory(device_dir: &std::path::Path, asked: usize) -> std::result::Result<(std::sync::Arc<peerpath_mem::MappedRegion>, String), String> {
    let available = std::fs::read_to_string(device_dir.join("p2pmem/available"))
        .map_err(|e| format!("{}: {e}", device_dir.join("p2pmem/available").display()))?;
    let available: usize = available.trim().parse().map_err(|_| format!("{}: not a number: {}", device_dir.join("p2pmem/available").display(), available.trim()))?;
    let bytes = asked.min(align_down(available, 1 << 20));
    if bytes == 0 {
        return Err(format!("{} has {available} bytes of P2P memory available, less than 1 MiB", device_dir.display()));
    }
    let region = peerpath_mem::MappedRegion::map_p2pmem(device_dir, bytes).map_err(|e| e.to_string())?;
    let capped = if bytes < asked { format!(", capped at the {available} bytes available") } else { String::new() };
    let fixture = match region.p2p_info() {
        Some(i) if !i.allocate_on_sysfs => "; NOT on sysfs (a fixture?): a plain file mapping, not P2P memory",
        _ => "",
    };
    let text = format!(
        "memory: {} MiB of {} (p2pmem/allocate{capped}{fixture}), shared with the device by fork",
        region.len() >> 20,
        region.domain()
    );
    Ok((std::sync::Arc::new(region), text))
}

/// Starts the emulated devices of a job, runs the eligible streams on them,
/// and prepares any stream a failed device leaves for the CPU pass.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_emulated(
    streams: &mut [Stream],
    eligible: &[usize],
    spec: &crate::compress::EmulatedSpec,
    opts: &crate::compress::CompressOptions,
    member_bytes: usize,
    chunk_bytes: usize,
    ledger: &Ledger,
    fallbacks: &mut Vec<String>,
) -> Result<crate::compress::OffloadRan> {
    use peerpath_device::{emulated::ServeOptions, EmulatedCsp, FaultyDevice, SpawnOptions};
    let count = spec.devices.clamp(1, eligible.len());
    if count < spec.devices {
        fallbacks.push(format!("devices: {} asked for, {count} started (one per source at most)", spec.devices));
    }
    let qd = opts.common.queue_depth.max(1);
    let params = Params { member_bytes, chunk_bytes, level: opts.level, format: opts.format, queue_depth: qd as usize };
    let mut devices: Vec<OffloadDevice> = Vec::new();
    for d in 0..count {
        let name = format!("pp{}-csp{d}", std::process::id());
        let mut serve = ServeOptions::new(&name);
        serve.memory_bytes = spec.memory_bytes;
        serve.workers = spec.workers.max(1);
        serve.duplicate_completion_after = spec.faults.as_ref().and_then(|f| f.duplicate_completion_after);
        // The memory this device's streams will use (the groups below, if
        // every device starts): resident before the job registers it.
        let sizes: Vec<Option<u64>> = eligible.iter().skip(d).step_by(count).map(|&i| streams[i].size).collect();
        serve.populate_bytes = usual_peak_bytes(&sizes, max_inputs(Some(serve.workers as usize), sizes.len(), &params), &params).min(serve.memory_bytes);
        let mut so = SpawnOptions::new(serve);
        so.program = spec.program.clone();
        so.command_timeout = spec.command_timeout;
        let (started, memory_at) = match &spec.memory_from {
            crate::compress::DeviceMemoryFrom::Shm => {
                // /dev/shm is often small (containers: 64 MiB); the device's memory
                // is backed at start, so put it where it fits. Where it went is part
                // of what the device is (its report says so), not a fallback: the
                // data path is the same.
                if let Some(dir) = &spec.memory_dir {
                    so.serve.dir = dir.clone();
                }
                let mut memory_at = format!("memory in {}", so.serve.dir.display());
                if spec.memory_dir.is_none() && free_bytes(&so.serve.dir).is_some_and(|free| free < spec.memory_bytes as u64 + (16 << 20)) {
                    let tmp = std::env::temp_dir();
                    memory_at = format!(
                        "memory in a file in {} ({} had less than {} MiB free)",
                        tmp.display(),
                        so.serve.dir.display(),
                        (spec.memory_bytes >> 20) + 16
                    );
                    so.serve.dir = tmp;
                }
                (EmulatedCsp::spawn(&so).map_err(|e| e.to_string()), memory_at)
            }
            from @ crate::compress::DeviceMemoryFrom::P2p { .. } => {
                match map_p2p_memory(&from.p2p_device_dir().expect("P2P"), spec.memory_bytes) {
                    Ok((region, memory_at)) => (EmulatedCsp::fork_with_memory(&so, region).map_err(|e| e.to_string()), memory_at),
                    Err(e) => (Err(e), String::new()),
                }
            }
        };
        let mut device: Box<dyn Device> = match started {
            Ok(emu) => match &spec.faults {
                Some(f) => Box::new(FaultyDevice::new(emu, f.clone())),
                None => Box::new(emu),
            },
            Err(e) if opts.no_fallback => return Err(JobError::Device { detail: format!("emulated device {d} did not start: {e} (--no-fallback)") }),
            Err(e) => {
                fallbacks.push(format!("emulated device {d} did not start ({e}); its sources ran on the host CPU"));
                continue;
            }
        };
        let cpu_at_start = device.process_id().and_then(process_cpu);
        let busy_ns_at_start = device.stats().map(|s| s.total().busy_ns);
        let kind = match device.process_id() {
            Some(pid) => format!("emulated CSP process (pid {pid}), {} workers, {memory_at}", spec.workers.max(1)),
            None => "emulated CSP".into(),
        };
        // What the device made resident (a file on a disk, or P2P memory: none).
        let populated_bytes = device.memory().mapped_region().and_then(|r| r.allocated_bytes()).unwrap_or(0) as usize;
        devices.push(OffloadDevice { device, streams: Vec::new(), kind, cpu_at_start, busy_ns_at_start, populated_bytes });
    }
    if devices.is_empty() {
        return Ok(crate::compress::OffloadRan::none());
    }
    // Groups: device k serves sources k, k + n, k + 2n, ...
    let n = devices.len();
    for (k, &i) in eligible.iter().enumerate() {
        devices[k % n].streams.push(i);
        streams[i].device = Some(k % n);
    }
    let (mut engine, note) = peerpath_io::choose_engine::<RegionBuf>(qd * eligible.len() as u32 * 2 + 8, opts.common.sync_io);
    if let Some(note) = &note {
        fallbacks.push(format!("I/O engine for device memory: {note}"));
    }
    for &i in eligible {
        let s = &mut streams[i];
        s.read_path.engine = engine.kind();
        s.write_path.engine = engine.kind();
    }
    let total: Option<u64> = streams.iter().map(|s| s.size).sum();
    let progress = opts.common.progress.clone();
    let mut report_progress = |done: u64| {
        if let Some(p) = &progress {
            p(done, total);
        }
    };
    let result = run(streams, &mut devices, engine.as_mut(), &params, ledger, &mut report_progress);
    let fixed_buffers = engine.fixed_buffers();
    drop(engine); // every transfer into or out of device memory has finished
    let Driven { failures, transfers_cpu_s, drive_s } = result?;
    let summary = ledger.summary();
    let mut reports = Vec::new();
    for (d, od) in devices.iter_mut().enumerate() {
        let stats = if failures[d].is_none() { od.device.stats() } else { None };
        let mut commands = BTreeMap::new();
        if let Some(st) = &stats {
            for f in &st.functions {
                if let (Some(kind), true) = (f.function, f.commands > 0) {
                    commands.insert(format!("{kind:?}"), f.commands);
                }
            }
        }
        let cpu_s = match (od.cpu_at_start, od.device.process_id().and_then(process_cpu)) {
            (Some(a), Some(b)) => Some((b.saturating_sub(a)).as_secs_f64()),
            _ => None,
        };
        // Busy: time the device's workers spent running this job's commands;
        // utilisation: of its workers' time while the job drove it.
        let busy_s = match (od.busy_ns_at_start, &stats) {
            (Some(a), Some(st)) => Some(st.total().busy_ns.saturating_sub(a) as f64 / 1e9),
            _ => None,
        };
        let utilisation_pct = busy_s.zip(od.device.parallelism()).map(|(b, p)| 100.0 * b / (p as f64 * drive_s.max(1e-9)));
        let pages = od.device.memory().mapped_region().filter(|r| r.p2p_info().is_none()).and_then(|r| r.huge_page_use());
        let domain = od.device.memory().domain().to_string();
        let name = od.device.name().to_string();
        let sources: Vec<String> = od.streams.iter().map(|&i| streams[i].source_name.clone()).collect();
        let members = od.streams.iter().map(|&i| streams[i].members_on_device).sum();
        if let Some(why) = &failures[d] {
            if opts.no_fallback {
                return Err(JobError::Device { detail: format!("device {name} failed: {why} (--no-fallback: nothing was kept)") });
            }
            for &i in &od.streams {
                if let Some(h) = &streams[i].handover {
                    let from = h.chunk * chunk_bytes as u64;
                    let rest = if h.written == 0 {
                        "the host CPU compressed all of it".to_string()
                    } else {
                        format!("the host CPU compressed it from source byte {from} on ({} output bytes from the device were kept)", h.written)
                    };
                    fallbacks.push(format!("{}: device {name} failed ({why}); {rest}", streams[i].source_name));
                }
            }
        }
        reports.push(DeviceReport {
            name,
            kind: od.kind.clone(),
            memory_bytes: od.device.memory().len(),
            sources,
            members,
            commands,
            memory_traffic_bytes: summary.device_memory_bytes.get(&domain).copied().unwrap_or(0),
            process_cpu_s: cpu_s,
            // A device started for this job: all it has spent is its start.
            start_cpu_s: od.cpu_at_start.map(|c| c.as_secs_f64()),
            populated_bytes: od.populated_bytes,
            busy_s,
            utilisation_pct,
            memory_resident_bytes: pages.map(|p| p.0),
            memory_huge_page_bytes: pages.map(|p| p.1),
            failure: failures[d].clone(),
        });
    }
    // Streams handed over go on in the CPU pass.
    for &i in eligible {
        let s = &mut streams[i];
        let Some(h) = &s.handover else { continue };
        let size = s.size.expect("sized");
        s.first_offset = h.chunk * chunk_bytes as u64;
        s.next_read_offset = s.first_offset;
        s.next_seq = 0;
        s.skip_out = h.skip_bytes;
        s.read_done = s.first_offset >= size && size > 0;
        s.chunks = s.read_done.then_some(0);
        s.writer_finished = false;
        s.writer.as_mut().expect("writer open").resume_at(h.written);
    }
    let threads = spec.workers.max(1) as usize;
    Ok(crate::compress::OffloadRan {
        engine: format!(
            "{} emulated CSP device(s), {} worker thread(s) each, {} (level {}) inside the device process",
            reports.len(),
            threads,
            opts.level.library(),
            opts.level.get()
        ),
        threads,
        devices: reports,
        fixed_buffers,
        transfers_cpu_s: Some(transfers_cpu_s),
    })
}
