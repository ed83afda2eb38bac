//! The device executor of the compression job: SSD -> device memory ->
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
//! into device memory are the format's end marker (peerpath's 34-byte end
//! member, BGZF's 28-byte end-of-file block: metadata, counted as such).
//!
//! The device side of the compress executor (`executor.rs` runs it beside
//! the CPU's, in one loop on one I/O engine): it drives any [`Device`],
//! asking the device how many input ranges a command may gather
//! ([`Device::max_input_ranges`]) and its memory how the engine reaches it.
//!
//! Failure: a device that fails (an error status, a malformed completion,
//! no answer, death) is retired for the rest of the job. Each of its
//! streams ends with [`Outcome::HandOver`] at the start of the block holding
//! the first byte not yet on its way to the target: that block's members are
//! the device's up to there, and the CPU reads and compresses the block
//! again and writes from there on. The CPU never splices its output into
//! the middle of a block the device packed: a device's members need not be
//! the CPU's bytes (a GPU's nvCOMP members are not ISA-L's), only members
//! that decode to the same data. With `--no-fallback` the job fails instead
//! and leaves no output.

use crate::buf::JobBuf;
use crate::devices::JobDevice;
use crate::error::{JobError, Result};
use crate::report::{count, name_bytes, DeviceReport, Fallback, Quoted};
use crate::token::Token;
use crate::writer::{TargetWriter, STAGING_BYTES};
use peerpath_device::{chunk_bound_bytes, Completion, Device, DeviceRange, Function, Request, Status, StorageIo, Submit, Watcher};
use peerpath_func::gzip::END_MARKER_MAX_BYTES;
use peerpath_func::{member_bound_bytes, Format, Level};
use peerpath_io::{IoEngine, IoOp, OpenedFile, Waker};
use peerpath_mem::{align_down, align_up, RangeAllocator, RangeBuf, RegionAllocator, RegionBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{CpuRole, CpuTime, Ledger, Location, Mover, Purpose};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

/// Staging ranges per stream: one filling, one or two being written.
const STAGINGS_PER_STREAM: usize = 3;

/// What the device side needs of a stream: a source of known size (device
/// memory is reached by DMA, so both files take O_DIRECT) and its target.
pub(crate) trait DeviceStream {
    fn source(&self) -> &OpenedFile;
    /// How the source's bytes reach the job's buffers (decided once, at open).
    fn source_via(&self) -> crate::Via;
    fn name(&self) -> &str;
    fn size(&self) -> u64;
    fn writer(&mut self) -> &mut TargetWriter;
    fn target(&self) -> &TargetWriter;
}

/// How long a failed device that was writing the target itself is given to
/// stop (the writes it was given run or are dropped) before the CPU may
/// take the target over.
const SETTLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How a stream left the devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Every output byte was written from device memory (the last extent
    /// padded; the writer knows the exact length).
    Finished { members: u64 },
    /// Its device failed: the CPU goes on from here.
    HandOver(Handover),
}

/// Where a stream goes on after its device failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handover {
    /// The first block the CPU reads and compresses.
    pub chunk: u64,
    /// Where its output starts: the device's output before it is kept (the
    /// CPU writes from here, over what the device wrote of this block).
    pub written: u64,
    /// Members entirely before `chunk`.
    pub members_before: u64,
}

impl Outcome {
    /// Members of the stream's output the device made.
    pub fn members_on_device(&self) -> u64 {
        match self {
            Outcome::Finished { members } => *members,
            Outcome::HandOver(h) => h.members_before,
        }
    }
}

/// What the devices did, for the job and its report.
pub(crate) struct OnDevices {
    /// Per device stream (in the job's order): its device's index in `reports`.
    pub device_of: Vec<(usize, usize)>,
    pub reports: Vec<DeviceReport>,
    /// Orchestration CPU while transfers and commands were in flight.
    pub transfers_cpu_s: f64,
}

/// A range of a device's memory the executor holds: in the part the I/O
/// engine reaches by DMA (`Window`), or in the device's own memory, which
/// only its commands reach (`Own`, staged memory).
enum Place {
    Window(RegionBuf),
    Own(RangeBuf),
}

impl Place {
    /// Its offset in the device's address space (the window starts at `window_at`).
    fn at(&self, window_at: usize) -> usize {
        match self {
            Place::Window(b) => window_at + b.offset(),
            Place::Own(b) => b.offset(),
        }
    }
    fn set_len(&mut self, n: usize) {
        match self {
            Place::Window(b) => b.set_len(n),
            Place::Own(b) => b.set_len(n),
        }
    }
}

struct Chunk {
    /// Its input range: `None` while storage reads into it (direct), or
    /// reserved in the device's own memory while the read lands in `bounce`.
    input: Option<Place>,
    /// Staged memory: the window range the read landed in, until the device
    /// has copied it in.
    bounce: Option<RegionBuf>,
    output: Place,
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
    buf: Option<Place>,
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
    /// Staged memory: a chunk read into the window, copied into the device's own memory.
    StageIn { stream: usize, seq: u64, bytes: u64 },
    /// Staged memory: a sealed staging range copied out to the window for its write.
    StageOut { stream: usize, staging: u32, bytes: u64 },
    /// A device that reads storage itself: a chunk read into its own memory.
    Load { stream: usize, seq: u64, bytes: u64 },
    /// A device that writes storage itself: a sealed staging range written
    /// from its own memory to the target at `at`.
    Store { stream: usize, staging: u32, at: u64, bytes: u64 },
}

/// Staged memory: a sealed staging range on its way out through the
/// window, written (in order) once the device has copied it there.
struct StagedOut {
    staging: u32,
    /// The window range (none when there is nothing to write).
    bounce: Option<RegionBuf>,
    write_len: usize,
    aligned: usize,
    last: bool,
    copied: bool,
}

#[derive(Default)]
struct OStream {
    dev: usize,
    /// Its number with a device that reads it itself (`Device::register_file`), and where
    /// those reads come from, as the ledger names it (storage, or a memory file's pages).
    src_file: Option<u8>,
    source_location: Option<Location>,
    /// Such reads in flight (the device's commands, not the engine's).
    loads: usize,
    /// The target's number with a device that writes it itself, and where
    /// it is, as the ledger names it.
    dst_file: Option<u8>,
    target_location: Option<Location>,
    /// Its writes in flight: offset -> bytes (the device's commands).
    stores: BTreeMap<u64, u64>,
    /// Bytes its writes completed since the writer last heard of them.
    device_written: u64,
    /// Reads: the next one's source offset and number, and whether all are issued.
    next_read_offset: u64,
    next_seq: u64,
    read_done: bool,
    /// Number of chunks, once reading is done.
    chunk_count: Option<u64>,
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
    free_stagings: Vec<Place>,
    stagings: HashMap<u32, Staging>,
    /// Staged memory: staging ranges being copied out, in order.
    staged_out: VecDeque<StagedOut>,
    filling: Option<u32>,
    next_staging: u32,
    eof_packed: bool,
    /// The last staging range's write is submitted: no device work left.
    final_written: bool,
    /// Set when the stream leaves the executor.
    outcome: Option<Outcome>,
}

impl OStream {
    /// Every output byte was written from device memory: the writer's
    /// length is what was packed (the last extent was padded).
    fn finish(&mut self, s: &mut impl DeviceStream, member_bytes: usize) -> Outcome {
        s.writer().resume_at(self.packed_bytes);
        // Members in the source (not counting the end marker).
        let outcome = Outcome::Finished { members: s.size().div_ceil(member_bytes as u64).max(1) };
        self.outcome = Some(outcome.clone());
        outcome
    }
}

struct DevState {
    failure: Option<String>,
    backlog: VecDeque<Request>,
    ops: HashMap<u64, Op>,
    next_tag: u64,
    /// The part of its memory the I/O engine reaches, and where it starts.
    window: RegionAllocator,
    window_at: usize,
    /// Staged memory: its own memory, where it computes.
    own: Option<RangeAllocator>,
    /// Where the format's end marker sits (in the window).
    eof: Option<RegionBuf>,
    /// Input ranges one copy command may gather (the device says).
    max_input_ranges: usize,
    /// One compress command per chunk rather than per member (the device says).
    whole_chunks: bool,
    /// Staged memory: the device reads storage into its own memory itself
    /// (its sources registered with it), and how.
    storage_io: Option<StorageIo>,
    /// What its own reads did for the report: sources read that way, and
    /// why others were not.
    io_note: Option<String>,
    /// A read waited for memory (not for the device or the queue), and the
    /// most blocks its streams had being read or compressed at once: the
    /// report says when its memory, not the device, set that.
    short_of_memory: bool,
    peak_inputs: usize,
}

impl DevState {
    /// A range to compute in: the device's own memory where it has one
    /// apart from the window, else the window.
    fn alloc(&self, len: usize) -> Option<Place> {
        match &self.own {
            Some(own) => own.try_alloc(len).map(Place::Own),
            None => self.window.try_alloc(len).map(Place::Window),
        }
    }
    fn range(&self, p: &Place, len: u64) -> DeviceRange {
        DeviceRange::new(p.at(self.window_at) as u64, len)
    }
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
/// end marker, and the unaligned tail.
fn staging_capacity(params: &Params) -> usize {
    STAGING_BYTES + out_chunk_bytes(params) + END_MARKER_MAX_BYTES + DIRECT_IO_ALIGN_BYTES
}

/// Chunks a stream may have being read or compressed: two per command the
/// device runs at once (one running, one queued), shared by its `streams`,
/// plus two reads ahead per stream; at most two queue depths. Compressed
/// chunks waiting to be packed do not count (a slow write must not starve
/// the device), up to two queue depths in all. More inputs only hold device
/// memory (docs/tuning.md#device-inputs).
pub(crate) fn max_inputs(parallelism: Option<usize>, streams: usize, params: &Params) -> usize {
    match parallelism {
        Some(p) => (2 * p).div_ceil(streams.max(1)) + 2,
        None => 2 * params.queue_depth,
    }
    .clamp(2, 2 * params.queue_depth.max(1))
}

/// What a device's streams (of these source sizes) usually hold of its memory
/// at their peak, in whole 2 MiB pages: the end marker, the
/// stagings, and per stream `max_inputs` chunks, input and output, plus two
/// outputs waiting to be packed, or as many as a small source has. The job
/// registers this much with io_uring ahead of the first transfer, and asks an
/// emulated device to make it resident when it starts.
pub(crate) fn usual_peak_bytes(sizes: &[Option<u64>], max_inputs: usize, params: &Params) -> usize {
    let stagings = sizes.len() * STAGINGS_PER_STREAM * align_up(staging_capacity(params), 4096);
    let chunks: usize = sizes
        .iter()
        .map(|size| size.map_or(1, |n| n.div_ceil(params.chunk_bytes as u64).max(1) as usize).min(max_inputs + 2))
        .sum();
    let per_chunk = align_up(params.chunk_bytes, 4096) + align_up(out_chunk_bytes(params), 4096);
    align_up(align_up(END_MARKER_MAX_BYTES, 4096) + stagings + chunks * per_chunk, 2 << 20)
}

/// The device side of one job: its devices, their memory carved into each
/// stream's chunks and staging ranges, and each stream's progress.
pub(crate) struct DeviceSide {
    devices: Vec<JobDevice>,
    devs: Vec<DevState>,
    /// Per stream of the job (`None`: not on a device).
    os: Vec<Option<OStream>>,
    /// The job's streams on devices, in order.
    order: Vec<usize>,
    params: Params,
    staging_capacity: usize,
    pub done_bytes: u64,
    watched: Vec<RawFd>,
    watchers: Vec<Watcher>,
    /// The orchestrating thread's CPU and the wall clock when the devices
    /// started driving, and what they were when the last stream ended.
    driving: (CpuTime, Instant),
    ended: Option<(f64, f64)>,
}

impl DeviceSide {
    /// Places stream `on_device[k]` on device `k % n`, carves each device's
    /// memory into its streams' staging ranges (and the end marker),
    /// registers what they usually use with the engine, and starts watching
    /// the devices (their completion signal in the engine where it can,
    /// docs/tuning.md#device-wakeups; a watcher for the rest: a death, a
    /// tick for command timeouts).
    pub fn new(
        streams: &[impl DeviceStream],
        on_device: &[usize],
        mut devices: Vec<JobDevice>,
        params: Params,
        engine: &mut dyn IoEngine<JobBuf>,
        ledger: &Ledger,
        waker: &Waker,
    ) -> Result<DeviceSide> {
        let n = devices.len();
        for (k, &i) in on_device.iter().enumerate() {
            devices[k % n].streams.push(i);
        }
        let staging_capacity = staging_capacity(&params);
        let mut os: Vec<Option<OStream>> = (0..streams.len()).map(|_| None).collect();
        let mut devs = Vec::new();
        for (d, jd) in devices.iter_mut().enumerate() {
            let mut dev = device_memory(jd, &params)?;
            let max_inputs = max_inputs(jd.device.parallelism(), jd.streams.len(), &params);
            let (mut refused, mut refused_writes) = (Vec::new(), Vec::new());
            for &i in &jd.streams {
                let s = &streams[i];
                let mut o = OStream { dev: d, max_inputs, chunk_starts: vec![0], ..Default::default() };
                for _ in 0..STAGINGS_PER_STREAM {
                    o.free_stagings.push(dev.alloc(staging_capacity).expect("memory was checked"));
                }
                if let Some(how) = &dev.storage_io {
                    // Its own reads take O_DIRECT files (GPUDirect Storage does), and memory
                    // files where it says it takes those.
                    let (registered, in_memory) = match own_io_of(s.source(), s.source_via(), how) {
                        Ok(in_memory) => (jd.device.register_file(&s.source().file), in_memory),
                        Err(why) => (Err(format!("not read with O_DIRECT ({why})")), false),
                    };
                    match registered {
                        Ok(file) => (o.src_file, o.source_location) = (Some(file), Some(if in_memory { file_pages() } else { Location::storage(&s.source().path) })),
                        Err(why) => refused.push(format!("{}: {why}", Quoted(&s.source().path))),
                    }
                }
                if let Some(how) = dev.storage_io.as_ref().filter(|h| h.writes) {
                    // And its own writes, of the same kinds of target.
                    let w = s.target();
                    let (registered, in_memory) = match own_io_of(&w.target, w.via(), how) {
                        Ok(in_memory) => (jd.device.register_file(&w.target.file), in_memory),
                        Err(why) => (Err(format!("not written with O_DIRECT ({why})")), false),
                    };
                    match registered {
                        Ok(file) => (o.dst_file, o.target_location) = (Some(file), Some(if in_memory { file_pages() } else { w.target_location().clone() })),
                        Err(why) => refused_writes.push(format!("{}: {why}", Quoted(&w.final_path))),
                    }
                }
                os[i] = Some(o);
            }
            if let Some(how) = &dev.storage_io {
                let n = jd.streams.len();
                let mut note = format!("its own reads of {} of {} into its memory", n - refused.len(), count(n, "source"));
                if how.writes {
                    note += &format!(" and writes of {} of {} from it", n - refused_writes.len(), count(n, "target"));
                }
                note += &format!(": {}", how.what);
                let in_memory = jd.streams.iter().filter_map(|&i| os[i].as_ref()).flat_map(|o| [&o.source_location, &o.target_location]).filter(|l| matches!(l, Some(Location::Memory { .. }))).count();
                if let (Some(what), true) = (&how.memory_files, in_memory > 0) {
                    note += &format!("; {} on a memory file system among them: {what}", count(in_memory, "file"));
                }
                if !refused.is_empty() || !refused_writes.is_empty() {
                    note += &format!("; through the host window instead: {}", refused.iter().chain(&refused_writes).cloned().collect::<Vec<_>>().join("; "));
                }
                dev.io_note = Some(note);
            }
            // First-fit keeps the ranges in use at the start of the region;
            // anything beyond the usual peak is registered when first used.
            let sizes: Vec<Option<u64>> = jd.streams.iter().map(|&i| Some(streams[i].size())).collect();
            if let Some(span) = peerpath_io::region_fixed_span(dev.window.region()) {
                engine.register_ahead(span, usual_peak_bytes(&sizes, max_inputs, &params));
            }
            dev.eof = Some(place_end_marker(jd, &dev, params.format, ledger));
            devs.push(dev);
        }
        let (mut watched, mut watchers) = (Vec::new(), Vec::new());
        for jd in &devices {
            let in_engine = jd.device.wake_fd().is_some_and(|fd| engine.watch_eventfd(fd));
            if in_engine {
                watched.extend(jd.device.wake_fd());
            }
            let w = waker.clone();
            watchers.push(Watcher::start(jd.device.as_ref(), !in_engine, move || w.wake()).map_err(|e| JobError::Internal(format!("device watcher: {e}")))?);
        }
        let mut order = on_device.to_vec();
        order.sort_unstable();
        let mut side = DeviceSide {
            devices,
            devs,
            os,
            order,
            params,
            staging_capacity,
            done_bytes: 0,
            watched,
            watchers,
            driving: (peerpath_metrics::thread_cpu_now(), Instant::now()),
            ended: None,
        };
        side.start_empty_sources(streams);
        Ok(side)
    }

    /// Streams still on a device.
    pub fn active(&self) -> bool {
        self.ended.is_none()
    }

    /// Commands queued or in flight on devices that have not failed.
    pub fn commands_pending(&self) -> usize {
        self.devices.iter().zip(&self.devs).filter(|(_, d)| d.failure.is_none()).map(|(jd, d)| jd.device.in_flight() + d.backlog.len()).sum()
    }

    /// One turn: reads into device memory, device completions, packing and
    /// writes, and streams of failed devices handed over once their I/O is
    /// quiet. Returns the streams that ended in this turn.
    pub fn step(&mut self, streams: &mut [impl DeviceStream], engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger) -> Result<Vec<(usize, Outcome)>> {
        if self.ended.is_some() {
            return Ok(Vec::new());
        }
        self.issue_reads(streams, engine)?;
        self.poll_devices(ledger);
        let mut ended = self.pack_and_write(streams, engine, ledger)?;
        // The completions just taken freed device memory (a compressed block's
        // input, a packed block's output): read into it now. Where memory holds
        // one block at a time nothing else may be in flight, and the job would
        // sleep until the watcher's tick (200 ms) before reading the next.
        self.issue_reads(streams, engine)?;
        ended.extend(self.hand_over_quiesced(streams)?);
        if self.order.iter().all(|&i| self.os[i].as_ref().is_some_and(|o| o.outcome.is_some())) {
            let (cpu, wall) = &self.driving;
            self.ended = Some((peerpath_metrics::thread_cpu_now().minus(cpu).total_s(), wall.elapsed().as_secs_f64()));
        }
        Ok(ended)
    }

    /// Empty sources: one empty member, made by the device.
    fn start_empty_sources(&mut self, streams: &[impl DeviceStream]) {
        for &i in &self.order {
            if streams[i].size() != 0 {
                continue;
            }
            let o = self.os[i].as_mut().expect("on a device");
            let dev = &mut self.devs[o.dev];
            let Some(input) = dev.alloc(0) else { continue };
            let output = dev.alloc(member_bound_bytes(0)).expect("memory was checked");
            o.read_done = true;
            o.chunk_count = Some(1);
            o.next_seq = 1;
            start_chunk(dev, o, i, 0, input, output, 0, &self.params);
        }
    }

    /// Reads into device memory, while it has room (back-pressure).
    fn issue_reads(&mut self, streams: &[impl DeviceStream], engine: &mut dyn IoEngine<JobBuf>) -> Result<()> {
        let params = &self.params;
        let member_bound = member_bound_bytes(params.member_bytes);
        for &i in &self.order {
            let o = self.os[i].as_mut().expect("on a device");
            let s = &streams[i];
            let dev = &mut self.devs[o.dev];
            while o.outcome.is_none() && dev.failure.is_none() && !o.read_done && o.reads_in_flight + o.loads < params.queue_depth
                && o.chunks.len() < 2 * params.queue_depth
                && o.chunks.values().filter(|c| c.holds_input()).count() < o.max_inputs
            {
                let offset = o.next_read_offset;
                let len = params.chunk_bytes.min(align_up((s.size() - offset) as usize, DIRECT_IO_ALIGN_BYTES));
                // Where the read lands: the device's own memory, read by the device itself; else
                // the window (the input range itself, or, staged, a range the device copies in).
                let (read_into, input) = match (o.src_file, &dev.own) {
                    (Some(_), Some(own)) => match own.try_alloc(len) {
                        Some(r) => (None, Some(Place::Own(r))),
                        None => {
                            dev.short_of_memory = true;
                            break;
                        }
                    },
                    _ => {
                        let Some(read_into) = dev.window.try_alloc(len) else {
                            dev.short_of_memory = true;
                            break;
                        };
                        let input = match &dev.own {
                            Some(own) => match own.try_alloc(len) {
                                Some(r) => Some(Place::Own(r)),
                                None => {
                                    dev.short_of_memory = true;
                                    break;
                                }
                            },
                            None => None,
                        };
                        (Some(read_into), input)
                    }
                };
                let bound = len.div_ceil(params.member_bytes) * member_bound;
                let Some(output) = dev.alloc(bound.max(member_bound_bytes(0))) else {
                    dev.short_of_memory = true;
                    break;
                };
                let seq = o.next_seq;
                let own_range = input.as_ref().map(|p| dev.range(p, len as u64));
                o.chunks.insert(seq, Chunk { input, bounce: None, output, lens: Vec::new(), outstanding: 0, copies: 0 });
                match read_into {
                    Some(read_into) => {
                        let token = Token::Read { stream: i, seq }.raw();
                        engine
                            .submit(IoOp::Read, s.source().file.as_raw_fd(), Some(offset), len, JobBuf::Region(read_into), token)
                            .map_err(|(_, e)| JobError::SourceIo { path: s.source().path.clone(), detail: e.to_string() })?;
                        o.reads_in_flight += 1;
                    }
                    None => {
                        let (file, to) = (o.src_file.expect("the device reads only registered sources"), own_range.expect("into its own memory"));
                        let tag = next_tag(dev);
                        dev.ops.insert(tag, Op::Load { stream: i, seq, bytes: (s.size() - offset).min(params.chunk_bytes as u64) });
                        dev.backlog.push_back(Request { tag, function: Function::StorageRead { file, offset }, inputs: Vec::new(), output: to });
                        o.loads += 1;
                    }
                }
                o.next_seq += 1;
                o.next_read_offset += params.chunk_bytes as u64;
                if o.next_read_offset >= s.size() {
                    o.read_done = true;
                    o.chunk_count = Some(o.next_seq);
                }
            }
        }
        // Chunks start only here: the most holding an input at once is seen here.
        for (d, jd) in self.devices.iter().enumerate() {
            let now: usize = jd.streams.iter().filter_map(|&i| self.os[i].as_ref()).map(|o| o.chunks.values().filter(|c| c.holds_input()).count()).sum();
            self.devs[d].peak_inputs = self.devs[d].peak_inputs.max(now);
        }
        Ok(())
    }

    /// Device completions; a bad one retires its device.
    fn poll_devices(&mut self, ledger: &Ledger) {
        let mut done: Vec<Completion> = Vec::new();
        for (d, jd) in self.devices.iter_mut().enumerate() {
            let dev = &mut self.devs[d];
            if dev.failure.is_some() {
                continue;
            }
            flush_backlog(jd.device.as_mut(), dev);
            let polled = jd.device.poll(&mut done);
            for c in done.drain(..) {
                if let Err(why) = on_device_completion(c, jd.device.as_ref(), dev, &mut self.os, &self.params, ledger, &mut self.done_bytes) {
                    fail_device(dev, why);
                    break;
                }
            }
            if let Err(e) = polled {
                fail_device(dev, e.to_string());
            }
        }
    }

    /// Packs complete chunks in order; seals and writes staging ranges.
    fn pack_and_write(&mut self, streams: &mut [impl DeviceStream], engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger) -> Result<Vec<(usize, Outcome)>> {
        let mut ended = Vec::new();
        for &i in &self.order {
            let o = self.os[i].as_mut().expect("on a device");
            let dev = &mut self.devs[o.dev];
            if dev.failure.is_some() || o.outcome.is_some() {
                continue;
            }
            pack_ready(o, i, dev, &self.params, self.staging_capacity);
            write_sealed(streams[i].writer(), o, i, dev, engine, ledger)?;
            write_staged_out(streams[i].writer(), o, i, engine, ledger)?;
            if o.device_written > 0 {
                streams[i].writer().note_written(std::mem::take(&mut o.device_written));
            }
            if o.final_written && o.writes_in_flight == 0 && o.stores.is_empty() {
                ended.push((i, o.finish(&mut streams[i], self.params.member_bytes)));
            }
        }
        Ok(ended)
    }

    /// Streams of failed devices: once their I/O is quiet, hand them over.
    fn hand_over_quiesced(&mut self, streams: &mut [impl DeviceStream]) -> Result<Vec<(usize, Outcome)>> {
        let chunk_members = (self.params.chunk_bytes / self.params.member_bytes) as u64;
        let mut ended = Vec::new();
        for &i in &self.order {
            let o = self.os[i].as_mut().expect("on a device");
            if o.outcome.is_some() || self.devs[o.dev].failure.is_none() || o.reads_in_flight > 0 || o.writes_in_flight > 0 {
                continue;
            }
            if let Some(&first) = o.stores.keys().next() {
                // It was writing the target itself when it failed: the CPU takes the target only
                // once the device can write no more, and goes on from before the first write
                // not known to be done (those done past it are written again, the same way).
                let device = &mut self.devices[o.dev].device;
                if !device.settle(SETTLE_TIMEOUT) {
                    return Err(JobError::Device {
                        detail: format!("device {} failed with {} of its own writes to {} in flight and did not stop within {} s: nothing was kept", device.name(), o.stores.len(), Quoted(&streams[i].target().final_path), SETTLE_TIMEOUT.as_secs()),
                    });
                }
                o.written = o.written.min(first);
                o.final_written = false;
                o.stores.clear();
            }
            if o.device_written > 0 {
                streams[i].writer().note_written(std::mem::take(&mut o.device_written));
            }
            if o.final_written {
                // Everything was already on its way: nothing to redo.
                ended.push((i, o.finish(&mut streams[i], self.params.member_bytes)));
                continue;
            }
            let h = handover_point(&o.chunk_starts, o.written, o.next_pack_seq, chunk_members);
            o.chunks.clear();
            o.stagings.clear();
            o.free_stagings.clear();
            o.staged_out.clear();
            o.outcome = Some(Outcome::HandOver(h.clone()));
            ended.push((i, Outcome::HandOver(h)));
        }
        Ok(ended)
    }

    /// Sends work queued since the last poll; whether the job may sleep (not
    /// when completions or a failure are already waiting).
    pub fn flush_before_sleep(&mut self) -> bool {
        let mut sleep = true;
        for (d, jd) in self.devices.iter_mut().enumerate() {
            let dev = &mut self.devs[d];
            if dev.failure.is_some() {
                continue;
            }
            flush_backlog(jd.device.as_mut(), dev);
            if dev.failure.is_some() || (jd.device.in_flight() > 0 && !jd.device.arm_wake() && jd.device.wake_fd().is_some()) {
                sleep = false;
            }
        }
        sleep
    }

    /// A write from a staging range of stream `i` completed: the range is free.
    pub fn on_write(&mut self, streams: &mut [impl DeviceStream], i: usize, id: u32, result: std::io::Result<usize>, buf: RegionBuf) -> Result<()> {
        let o = self.os[i].as_mut().expect("on a device");
        let staged = self.devs[o.dev].own.is_some();
        o.writes_in_flight -= 1;
        let w = streams[i].writer();
        let expected = buf.len();
        match result {
            Ok(n) if n == expected => w.note_written(n as u64),
            Ok(n) => return Err(w.io_error(std::io::Error::other(format!("short write: {n} of {expected} bytes")))),
            Err(e) => return Err(w.io_error(e)),
        }
        if !staged {
            release_reader(o, id, Some(Place::Window(buf)));
        } // (staged: the window range goes back; its staging range was released when copied out)
        Ok(())
    }

    /// A read of stream `i` into device memory completed: its chunk starts.
    pub fn on_read(&mut self, streams: &[impl DeviceStream], i: usize, seq: u64, result: std::io::Result<usize>, buf: RegionBuf, ledger: &Ledger) -> Result<()> {
        let o = self.os[i].as_mut().expect("on a device");
        o.reads_in_flight -= 1;
        let s = &streams[i];
        let offset = seq * self.params.chunk_bytes as u64;
        let n = crate::job::check_read(&s.source().path, result, offset, self.params.chunk_bytes, Some(s.size()))?;
        crate::record_read(ledger, &s.source().path, s.source_via(), buf.domain(), n as u64);
        let dev = &mut self.devs[o.dev];
        if dev.failure.is_some() {
            o.chunks.remove(&seq);
            return Ok(()); // dropped: the CPU will read it again
        }
        let mut read = buf;
        read.set_len(n);
        let chunk = o.chunks.get_mut(&seq).expect("chunk");
        if let Some(input) = &chunk.input {
            // Staged memory: the device copies the read in before it compresses.
            let (from, to) = (DeviceRange::new((dev.window_at + read.offset()) as u64, n as u64), dev.range(input, n as u64));
            chunk.bounce = Some(read);
            let tag = next_tag(dev);
            dev.ops.insert(tag, Op::StageIn { stream: i, seq, bytes: n as u64 });
            dev.backlog.push_back(Request::copy(tag, &[from], to));
            return Ok(());
        }
        let output = o.chunks.remove(&seq).expect("chunk").output;
        start_chunk(dev, o, i, seq, Place::Window(read), output, n, &self.params);
        Ok(())
    }

    /// Stops watching the devices and says what they did: each device's
    /// report, and each failure in `fallbacks` (or the job's failure, with
    /// `no_fallback`). Call once every stream has ended.
    pub fn finish(mut self, streams: &[impl DeviceStream], engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger, no_fallback: bool, fallbacks: &mut Vec<Fallback>) -> Result<OnDevices> {
        self.stop_watching(engine);
        let (transfers_cpu_s, drive_s) = self.ended.expect("every device stream ended");
        let summary = ledger.summary();
        let mut reports = Vec::new();
        let mut device_of = Vec::new();
        for (d, jd) in self.devices.iter_mut().enumerate() {
            let name = jd.device.name().to_string();
            let failure = self.devs[d].failure.clone();
            let outcome = |i: usize| self.os[i].as_ref().and_then(|o| o.outcome.clone()).expect("ended");
            if let Some(why) = &failure {
                if no_fallback {
                    return Err(no_fallback_error(&name, why));
                }
                for &i in &jd.streams {
                    if let Outcome::HandOver(h) = outcome(i) {
                        fallbacks.push(Fallback::DeviceFailed {
                            source: streams[i].source().path.clone(),
                            device: name.clone(),
                            why: why.clone(),
                            from: h.chunk * self.params.chunk_bytes as u64,
                            kept: h.written,
                        });
                    }
                }
            }
            device_of.extend(jd.streams.iter().map(|&i| (i, d)));
            let sources = jd.streams.iter().map(|&i| streams[i].name().to_string()).collect();
            let members = jd.streams.iter().map(|&i| outcome(i).members_on_device()).sum();
            let mut report = jd.report(sources, members, failure.clone(), drive_s, &summary);
            let exact: Vec<_> = jd.streams.iter().map(|&i| name_bytes(&streams[i].source().path)).collect();
            report.sources_bytes = exact.iter().any(Option::is_some).then_some(exact);
            report.storage_io = self.devs[d].io_note.clone();
            let limit = jd.streams.iter().filter_map(|&i| self.os[i].as_ref()).map(|o| o.max_inputs).sum();
            report.blocks_in_flight = memory_bound_note(&self.devs[d], limit, self.params.chunk_bytes);
            reports.push(report);
            jd.healthy = failure.is_none();
        }
        device_of.sort_unstable();
        for jd in self.devices.drain(..) {
            crate::devices::give_back(jd);
        }
        Ok(OnDevices { device_of, reports, transfers_cpu_s })
    }

    /// The failure of the job when a device failed under `--no-fallback`.
    pub fn failure_error(&self, stream: usize) -> Option<JobError> {
        let o = self.os[stream].as_ref()?;
        let why = self.devs[o.dev].failure.as_ref()?;
        Some(no_fallback_error(self.devices[o.dev].device.name(), why))
    }

    fn stop_watching(&mut self, engine: &mut dyn IoEngine<JobBuf>) {
        // Files registered for the devices' own reads: none is in flight now
        // (every stream ended), or the job is failing. A failed device keeps
        // them until it goes (a hung one may still be reading).
        for o in self.os.iter().flatten() {
            if self.devs[o.dev].failure.is_none() {
                for file in o.src_file.iter().chain(&o.dst_file) {
                    self.devices[o.dev].device.unregister_file(*file);
                }
            }
        }
        self.watchers.clear();
        for fd in self.watched.drain(..) {
            engine.unwatch_eventfd(fd);
        }
    }

    /// Stops watching the devices when the job fails (before the engine goes).
    pub fn abandon(mut self, engine: &mut dyn IoEngine<JobBuf>) {
        self.stop_watching(engine);
    }
}

/// Where a device's memory, not the device, held back its blocks in flight
/// (`limit`: what its streams would have taken), the report says so.
fn memory_bound_note(dev: &DevState, limit: usize, chunk_bytes: usize) -> Option<String> {
    (dev.short_of_memory && dev.peak_inputs < limit).then(|| {
        format!(
            "device memory holds {} of {} KiB in flight at a time (read or compressed; its streams take up to {limit}): more memory, more overlap",
            count(dev.peak_inputs, "block"),
            chunk_bytes >> 10
        )
    })
}

fn no_fallback_error(device: &str, why: &str) -> JobError {
    JobError::Device { detail: format!("device {device} failed: {why} (--no-fallback: nothing was kept)") }
}

/// How the executor reaches a device's memory: its DMA window (all of it,
/// for host-mapped or P2P memory) and, for staged memory, its own part;
/// checked to hold its streams' staging ranges and a chunk.
fn device_memory(jd: &JobDevice, params: &Params) -> Result<DevState> {
    let name = jd.device.name();
    let memory = jd.device.memory();
    let (window_at, region) = memory
        .dma_window()
        .ok_or_else(|| JobError::Usage(format!("device {name} has no memory the I/O engine can reach")))?;
    let window = RegionAllocator::new(region.clone());
    let own = (window_at > 0).then(|| RangeAllocator::new(window_at as usize));
    let stagings = jd.streams.len() * STAGINGS_PER_STREAM * align_up(staging_capacity(params), 4096);
    let compute = stagings + params.chunk_bytes + out_chunk_bytes(params) + 8192;
    // Staged: the window holds a read and a staging range on its way out.
    let (compute_has, window_needs) = match &own {
        Some(own) => (own.available(), params.chunk_bytes + staging_capacity(params) + 8192),
        None => (window.available(), compute),
    };
    if compute_has < compute || window.available() < window_needs {
        return Err(JobError::Usage(format!(
            "device {name} has {} MiB of memory; {} of {} KiB blocks need at least {} MiB (give the device more memory, or fewer sources per device)",
            compute_has.min(window.available()) >> 20,
            count(jd.streams.len(), "stream"),
            params.chunk_bytes >> 10,
            compute.max(window_needs).div_ceil(1 << 20)
        )));
    }
    Ok(DevState {
        failure: None,
        backlog: VecDeque::new(),
        ops: HashMap::new(),
        next_tag: 1,
        window,
        window_at: window_at as usize,
        own,
        eof: None,
        max_input_ranges: jd.device.max_input_ranges().max(1),
        whole_chunks: jd.device.whole_chunk_commands(),
        storage_io: if window_at > 0 { jd.device.storage_io().cloned() } else { None },
        io_note: None,
        short_of_memory: false,
        peak_inputs: 0,
    })
}

/// Puts the format's end marker (peerpath's end member, BGZF's end-of-file
/// block) in device memory, where packing copies it after each stream's
/// last member: 34 or 28 bytes of metadata the host writes through the
/// memory's own path (counted in the ledger as such).
fn place_end_marker(jd: &JobDevice, dev: &DevState, format: Format, ledger: &Ledger) -> RegionBuf {
    let marker = format.end_marker();
    let buf = dev.window.try_alloc(marker.len()).expect("memory was checked");
    // SAFETY: the range was just allocated: no command uses it, and no
    // other thread touches device memory through this handle.
    unsafe { jd.device.memory().host_write((dev.window_at + buf.offset()) as u64, marker) };
    let host = peerpath_mem::MemoryDomain::host_unplaced();
    ledger.record_copy(Location::memory(&host), Location::memory(buf.domain()), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Metadata, marker.len() as u64);
    buf
}

/// A chunk read into device memory: one compress command per member.
#[allow(clippy::too_many_arguments)]
fn start_chunk(dev: &mut DevState, o: &mut OStream, stream: usize, seq: u64, input: Place, output: Place, n: usize, params: &Params) {
    if dev.whole_chunks {
        // One command: the device writes the chunk's members back to back.
        let tag = next_tag(dev);
        let in_range = DeviceRange::new(input.at(dev.window_at) as u64, n as u64);
        let out_range = DeviceRange::new(output.at(dev.window_at) as u64, chunk_bound_bytes(n, params.member_bytes) as u64);
        dev.ops.insert(tag, Op::Compress { stream, seq, member: 0 });
        dev.backlog.push_back(Request::compress_chunk(tag, params.level, params.format, params.member_bytes as u32, in_range, out_range));
        o.chunks.insert(seq, Chunk { input: Some(input), bounce: None, output, lens: vec![None], outstanding: 1, copies: 0 });
        return;
    }
    let member_bound = member_bound_bytes(params.member_bytes);
    let members = n.div_ceil(params.member_bytes).max(1);
    for m in 0..members {
        let start = m * params.member_bytes;
        let len = params.member_bytes.min(n - start.min(n));
        let tag = next_tag(dev);
        let in_range = DeviceRange::new((input.at(dev.window_at) + start) as u64, len as u64);
        let out_range = DeviceRange::new((output.at(dev.window_at) + m * member_bound) as u64, member_bound_bytes(len) as u64);
        dev.ops.insert(tag, Op::Compress { stream, seq, member: m });
        dev.backlog.push_back(Request::compress(tag, params.level, params.format, in_range, out_range));
    }
    o.chunks.insert(seq, Chunk { input: Some(input), bounce: None, output, lens: vec![None; members], outstanding: members, copies: 0 });
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
    device: &dyn Device,
    dev: &mut DevState,
    os: &mut [Option<OStream>],
    params: &Params,
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
    let name = device.name().to_string();
    let domain = device.memory().domain().clone();
    let here = Location::memory(&domain);
    let window = Location::memory(dev.window.region().domain());
    // Between a GPU's memory and its pinned window the GPU's copy engines move the
    // bytes (DMA); a staged CPU device (the conformance suite's) copies with its workers.
    let stager = match &domain {
        peerpath_mem::MemoryDomain::Gpu { .. } => Mover::Dma { engine: format!("{name} copy engine") },
        _ => Mover::Device { name: name.clone() },
    };
    let mover = Mover::Device { name };
    match op {
        Op::Compress { stream, seq, member } => {
            let input = c.request.input_bytes();
            let bound = match c.request.function {
                Function::GzipCompressChunk { member_bytes, .. } => chunk_bound_bytes(input as usize, member_bytes as usize),
                _ => member_bound_bytes(input as usize),
            } as u64;
            if c.output_bytes < 18 || c.output_bytes > bound {
                return Err(format!("completed member {member} of block {seq} with {} bytes, outside 18..={bound}", c.output_bytes));
            }
            ledger.record(here.clone(), here, mover, Purpose::Function, input, c.output_bytes);
            *done_bytes += input;
            let o = os[stream].as_mut().expect("on a device");
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
            // The end marker (seq u64::MAX) comes from the window: metadata the host put there.
            let (from, purpose) = if seq == u64::MAX { (window, Purpose::Metadata) } else { (here.clone(), Purpose::PackForDirectIo) };
            ledger.record_copy(from, here, mover, purpose, bytes);
            let o = os[stream].as_mut().expect("on a device");
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
            let o = os[stream].as_mut().expect("on a device");
            o.stagings.get_mut(&to).expect("staging").copies -= 1;
            release_reader(o, from, None);
        }
        Op::StageIn { stream, seq, bytes } => {
            if c.output_bytes != bytes {
                return Err(format!("copied in {} bytes of {bytes} of block {seq}", c.output_bytes));
            }
            ledger.record_copy(window, here, stager, Purpose::Stage, bytes);
            let o = os[stream].as_mut().expect("on a device");
            let chunk = o.chunks.remove(&seq).expect("chunk being copied in");
            let input = chunk.input.expect("staged chunks hold their input range");
            start_chunk(dev, o, stream, seq, input, chunk.output, bytes as usize, params);
        }
        Op::Load { stream, seq, bytes } => {
            if c.output_bytes != bytes {
                return Err(format!("read {} bytes of block {seq} from storage, not its {bytes}", c.output_bytes));
            }
            let o = os[stream].as_mut().expect("on a device");
            o.loads -= 1;
            record_device_io(ledger, dev, (o.source_location.clone().expect("a registered source"), here), true, stager, bytes);
            let chunk = o.chunks.remove(&seq).expect("chunk being read");
            let input = chunk.input.expect("read into its input range");
            start_chunk(dev, o, stream, seq, input, chunk.output, bytes as usize, params);
        }
        Op::Store { stream, staging, at, bytes } => {
            if c.output_bytes != bytes {
                return Err(format!("wrote {} bytes of {bytes} at byte {at} of the target", c.output_bytes));
            }
            let o = os[stream].as_mut().expect("on a device");
            o.stores.remove(&at);
            o.device_written += bytes;
            record_device_io(ledger, dev, (here, o.target_location.clone().expect("a registered target")), false, stager, bytes);
            release_reader(o, staging, None);
        }
        Op::StageOut { stream, staging, bytes } => {
            if c.output_bytes != bytes {
                return Err(format!("copied out {} bytes of {bytes} for writing", c.output_bytes));
            }
            ledger.record_copy(here, window, stager, Purpose::Stage, bytes);
            let o = os[stream].as_mut().expect("on a device");
            o.staged_out.iter_mut().find(|x| x.staging == staging).expect("staging being copied out").copied = true;
            release_reader(o, staging, None);
        }
    }
    Ok(())
}

/// Whether a device that moves storage itself (`how`) may be given `file`, opened `via`:
/// O_DIRECT files (`Ok(false)`), and regular files of a memory file system where it takes
/// those (`Ok(true)`); otherwise why not, in words.
fn own_io_of(file: &OpenedFile, via: crate::Via, how: &StorageIo) -> std::result::Result<bool, &'static str> {
    match via {
        crate::Via::Direct => Ok(false),
        _ if file.in_memory() && file.reaches_storage() => match how.memory_files {
            Some(_) => Ok(true),
            None => Err("a memory file system"),
        },
        _ => Err("a pipe, or a file read through the page cache"),
    }
}

/// Where a memory file's bytes are, as the ledger names them: its pages, host memory.
fn file_pages() -> Location {
    Location::memory(&peerpath_mem::MemoryDomain::host_unplaced())
}

/// Books a device's own transfer, `from` -> `to` (`reading`: a source into its memory; else
/// its memory to a target), whose file end is storage or a memory file's pages. The pages
/// the device moves itself (its `stager`); storage, one DMA where its path is direct, else
/// through host memory on its way (cuFile's compatibility mode: its bounce buffers, DMA on
/// the storage side, the device's copy on the other).
fn record_device_io(ledger: &Ledger, dev: &DevState, (from, to): (Location, Location), reading: bool, stager: Mover, bytes: u64) {
    let purpose = if reading { Purpose::ReadSource } else { Purpose::WriteTarget };
    if !matches!(if reading { &from } else { &to }, Location::Storage { .. }) {
        ledger.record_copy(from, to, stager, purpose, bytes);
        return;
    }
    let direct = dev.storage_io.as_ref().expect("only devices with storage I/O move storage").direct;
    let storage = Mover::Dma { engine: "storage controller".into() };
    if direct {
        ledger.record_copy(from, to, storage, purpose, bytes);
        return;
    }
    let host = Location::memory(&peerpath_mem::MemoryDomain::host_unplaced());
    let (first, second) = if reading { ((storage, purpose), (stager, Purpose::Stage)) } else { ((stager, Purpose::Stage), (storage, purpose)) };
    ledger.record_copy(from, host.clone(), first.0, first.1, bytes);
    ledger.record_copy(host, to, second.0, second.1, bytes);
}

fn describe(op: &Op) -> String {
    match op {
        Op::Compress { seq, member, .. } => format!("compressing member {member} of block {seq}"),
        Op::Pack { seq, .. } => format!("packing block {seq}"),
        Op::Tail { .. } => "carrying an unaligned tail".into(),
        Op::StageIn { seq, .. } => format!("copying block {seq} in from the host window"),
        Op::StageOut { .. } => "copying packed output out to the host window".into(),
        Op::Load { seq, .. } => format!("reading block {seq} from storage"),
        Op::Store { at, .. } => format!("writing the target at byte {at}"),
    }
}

/// Packs every chunk whose members are all compressed, in order.
fn pack_ready(o: &mut OStream, stream: usize, dev: &mut DevState, params: &Params, staging_capacity: usize) {
    loop {
        let all_packed = o.chunk_count == Some(o.next_pack_seq);
        if all_packed && o.eof_packed {
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
                let new_id = new_staging(o, next, tail, dev.window_at);
                let st = o.stagings.get_mut(&id).expect("staging");
                st.sealed = true;
                if tail > 0 {
                    st.tail_to = Some(new_id);
                    o.stagings.get_mut(&new_id).expect("staging").copies += 1; // the tail, once it can go
                }
            }
        } else {
            let Some(buf) = o.free_stagings.pop() else { return };
            new_staging(o, buf, 0, dev.window_at);
        }
        let id = o.filling.expect("a staging range is filling");
        let st_offset = o.stagings[&id].offset;
        let mut at = o.stagings[&id].filled;
        if all_packed {
            // The end marker after the last member.
            let eof_at = (dev.window_at + dev.eof.as_ref().expect("every job places the end marker").offset()) as u64;
            let len = params.format.end_marker().len() as u64;
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
            .map(|(m, l)| DeviceRange::new((chunk.output.at(dev.window_at) + m * member_bound) as u64, u64::from(l.expect("compressed"))))
            .collect();
        for gather in ranges.chunks(dev.max_input_ranges) {
            let bytes: u64 = gather.iter().map(|r| r.len).sum();
            let tag = next_tag(dev);
            dev.ops.insert(tag, Op::Pack { stream, seq, staging: id, bytes });
            dev.backlog.push_back(Request::copy(tag, gather, DeviceRange::new((st_offset + at) as u64, bytes)));
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

fn new_staging(o: &mut OStream, buf: Place, reserved: usize, window_at: usize) -> u32 {
    let id = o.next_staging;
    o.next_staging += 1;
    let offset = buf.at(window_at);
    o.stagings.insert(id, Staging { buf: Some(buf), offset, filled: reserved, copies: 0, sealed: false, last: false, tail_to: None, written: false, readers: 0 });
    o.filling = Some(id);
    id
}

/// Writes sealed staging ranges whose copies are done, in order, and sends
/// their unaligned tails on.
fn write_sealed(w: &mut TargetWriter, o: &mut OStream, stream: usize, dev: &mut DevState, engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger) -> Result<()> {
    let mut ids: Vec<u32> = o.stagings.iter().filter(|(_, st)| st.sealed && !st.written).map(|(&id, _)| id).collect();
    ids.sort_unstable();
    for id in ids {
        let st = o.stagings.get_mut(&id).expect("staging");
        if st.copies > 0 {
            return Ok(()); // in order: a later range never goes before this one
        }
        let aligned = align_down(st.filled, DIRECT_IO_ALIGN_BYTES);
        let write_len = if st.last { align_up(st.filled, DIRECT_IO_ALIGN_BYTES) } else { aligned };
        let (offset, filled, tail_to, last) = (st.offset, st.filled, st.tail_to, st.last);
        if let (Some(file), Some(_)) = (o.dst_file, &dev.own) {
            // The device writes the range to the target itself, from its own memory.
            st.written = true;
            if write_len > 0 {
                let (tag, at) = (next_tag(dev), o.written);
                dev.ops.insert(tag, Op::Store { stream, staging: id, at, bytes: write_len as u64 });
                let from = DeviceRange::new(offset as u64, write_len as u64);
                dev.backlog.push_back(Request { tag, function: Function::StorageWrite { file, offset: at }, inputs: vec![from], output: DeviceRange::new(0, 0) });
                st.readers += 1;
                o.stores.insert(at, write_len as u64);
            }
            o.written += aligned as u64;
            o.final_written |= last;
        } else if dev.own.is_some() {
            // Staged memory: the device copies the range out to the window;
            // `write_staged_out` writes it, in order, once it is there.
            let bounce = match write_len {
                0 => None,
                n => match dev.window.try_alloc(n) {
                    Some(b) => Some(b),
                    None => return Ok(()), // the window is full: later
                },
            };
            st.written = true;
            if let Some(b) = &bounce {
                st.readers += 1;
                let tag = next_tag(dev);
                dev.ops.insert(tag, Op::StageOut { stream, staging: id, bytes: write_len as u64 });
                let to = DeviceRange::new((dev.window_at + b.offset()) as u64, write_len as u64);
                dev.backlog.push_back(Request::copy(tag, &[DeviceRange::new(offset as u64, write_len as u64)], to));
            }
            o.staged_out.push_back(StagedOut { staging: id, bounce, write_len, aligned, last, copied: write_len == 0 });
        } else {
            st.written = true;
            let Some(Place::Window(mut buf)) = st.buf.take() else { unreachable!("an unwritten staging range holds its window range") };
            if write_len > 0 {
                buf.set_len(write_len);
                crate::record_write(ledger, w.target_location(), w.via(), buf.domain(), write_len as u64);
                let token = Token::Write { stream, id }.raw();
                engine
                    .submit(IoOp::Write, w.target.file.as_raw_fd(), Some(o.written), write_len, JobBuf::Region(buf), token)
                    .map_err(|(_, e)| w.io_error(e))?;
                st.readers += 1;
                o.writes_in_flight += 1;
            } else {
                st.buf = Some(Place::Window(buf));
            }
            o.written += aligned as u64;
            o.final_written |= last;
        }
        if let Some(to) = tail_to {
            let to_offset = o.stagings[&to].offset;
            let tail = (filled - aligned) as u64;
            let tag = next_tag(dev);
            dev.ops.insert(tag, Op::Tail { stream, from: id, to });
            dev.backlog.push_back(Request::copy(tag, &[DeviceRange::new((offset + aligned) as u64, tail)], DeviceRange::new(to_offset as u64, tail)));
            o.stagings.get_mut(&id).expect("staging").readers += 1;
        }
        if o.stagings[&id].readers == 0 {
            recycle(o, id);
        }
    }
    Ok(())
}

/// Staged memory: writes the staging ranges copied out to the window, in
/// order (what is written stays a prefix of the output, for a handover).
fn write_staged_out(w: &mut TargetWriter, o: &mut OStream, stream: usize, engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger) -> Result<()> {
    while o.staged_out.front().is_some_and(|x| x.copied) {
        let x = o.staged_out.pop_front().expect("checked");
        if let Some(mut b) = x.bounce {
            b.set_len(x.write_len);
            crate::record_write(ledger, w.target_location(), w.via(), b.domain(), x.write_len as u64);
            let token = Token::Write { stream, id: x.staging }.raw();
            engine
                .submit(IoOp::Write, w.target.file.as_raw_fd(), Some(o.written), x.write_len, JobBuf::Region(b), token)
                .map_err(|(_, e)| w.io_error(e))?;
            o.writes_in_flight += 1;
        }
        o.written += x.aligned as u64;
        o.final_written |= x.last;
    }
    Ok(())
}

/// One operation reading a sealed staging range is done (its write, which
/// hands the buffer back, or its tail copy).
fn release_reader(o: &mut OStream, id: u32, buf: Option<Place>) {
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

/// Where the CPU takes over a stream of a failed device: the start of the
/// block holding the first output byte not yet submitted for writing
/// (`written`), given where each packed chunk's output starts
/// (`chunk_starts[0]` = 0, then one entry per packed chunk: where the next
/// one starts) and the next chunk to pack.
fn handover_point(chunk_starts: &[u64], written: u64, next_pack_seq: u64, chunk_members: u64) -> Handover {
    let chunk = chunk_starts.iter().rposition(|&p| p <= written).expect("chunk 0 starts at 0") as u64;
    let chunk = chunk.min(next_pack_seq);
    Handover { chunk, written: chunk_starts[chunk as usize], members_before: chunk * chunk_members }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_takes_over_at_the_start_of_the_block_holding_the_first_byte_not_on_its_way() {
        // Three chunks packed, of 100, 50 and 70 output bytes; 4 members per chunk.
        let starts = [0, 100, 150, 220];
        let h = |written| handover_point(&starts, written, 3, 4);
        assert_eq!(h(0), Handover { chunk: 0, written: 0, members_before: 0 });
        // Within a block: its start, never a byte inside the device's members.
        assert_eq!(h(99), Handover { chunk: 0, written: 0, members_before: 0 });
        assert_eq!(h(100), Handover { chunk: 1, written: 100, members_before: 4 });
        assert_eq!(h(160), Handover { chunk: 2, written: 150, members_before: 8 });
        // Everything packed was written: the next chunk.
        assert_eq!(h(220), Handover { chunk: 3, written: 220, members_before: 12 });
        // Not past the next chunk to pack, whatever was written.
        assert_eq!(handover_point(&starts, 220, 2, 4), Handover { chunk: 2, written: 150, members_before: 8 });
    }

    #[test]
    fn inputs_in_flight_follow_the_device_s_parallelism_within_two_queue_depths() {
        let params = Params { member_bytes: 1 << 20, chunk_bytes: 1 << 20, level: Level::new(1).unwrap(), format: Format::Gzip, queue_depth: 8 };
        assert_eq!(max_inputs(Some(2), 1, &params), 6);
        assert_eq!(max_inputs(Some(2), 4, &params), 3);
        assert_eq!(max_inputs(Some(64), 1, &params), 16, "at most two queue depths");
        assert_eq!(max_inputs(None, 1, &params), 16);
        // The usual peak: whole 2 MiB pages, growing with streams and chunks.
        let one = usual_peak_bytes(&[Some(8 << 20)], 6, &params);
        let two = usual_peak_bytes(&[Some(8 << 20), Some(8 << 20)], 6, &params);
        assert!(one.is_multiple_of(2 << 20) && two > one);
        assert!(usual_peak_bytes(&[Some(1)], 6, &params) < one, "a small source holds fewer chunks");
    }
}
