//! I/O sweeps (the seeds' `dd` sweeps, `nvme-cli` latency and fio runs):
//! sequential O_DIRECT reads and writes over a range of transfer sizes and
//! queue depths, and 4 KiB random read and write latency at depth 1, through
//! the project's I/O engine with a fixed set of buffers in host memory or in
//! device memory.
//!
//! The core is [`run_point`]: one (pattern, block size, queue depth) against
//! any [`IoEngine`] with any [`IoBuf`], timed by any [`BenchClock`], so a
//! simulated engine and clock can drive the same loop later. [`run_io_bench`]
//! is the sweep on a real file: it lays the file out if needed, makes the
//! buffers (host: [`AlignedBuf`]; device: [`RegionBuf`] from a shm region or
//! from P2P memory), runs every point on a fresh io_uring, and returns an
//! [`IoBenchReport`] (text, JSON, SVG).
//!
//! How a point runs (the same rules as fio's `size=`/`runtime=` without
//! `time_based`, so the two compare):
//!
//! ```text
//!   warm-up: each of the qd buffers does one transfer (not counted: first
//!            DMA into fresh pages faults them in)
//!   timed:   keep qd requests in flight; sequential offsets run 0, bs, 2bs, ...
//!            over the file's first `span` bytes; random offsets are uniform,
//!            bs-aligned; stop submitting at `max_bytes` or at the deadline
//!            (but not before the first submit), drain, and time from the
//!            first submit to the last completion.
//!   latency: submit -> completion seen by the loop, per request, into a
//!            log-linear histogram (< 0.8 % bucket error, fixed size).
//! ```

use crate::report::{count, Provenance, Quoted};
use peerpath_io::{Completion, EngineKind, IoBuf, IoEngine, IoOp, IoPath, SyncEngine, UringEngine, Waker};
use peerpath_mem::{align_up, AlignedBuf, MappedRegion, MemoryDomain, RegionAllocator, RegionError, DIRECT_IO_ALIGN_BYTES};
use serde::Serialize;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Deepest queue a sweep accepts (bounded: the ring and the buffers are
/// sized from it).
pub const MAX_QUEUE_DEPTH: u32 = 1024;

/// Block size of the random latency points.
pub const RANDOM_BLOCK_BYTES: usize = 4096;

/// What a point does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    SequentialRead,
    SequentialWrite,
    RandomRead,
    RandomWrite,
}

impl Pattern {
    pub fn op(self) -> IoOp {
        match self {
            Pattern::SequentialRead | Pattern::RandomRead => IoOp::Read,
            Pattern::SequentialWrite | Pattern::RandomWrite => IoOp::Write,
        }
    }
    pub fn is_random(self) -> bool {
        matches!(self, Pattern::RandomRead | Pattern::RandomWrite)
    }
    /// fio's `rw=` for the same pattern.
    pub fn fio_name(self) -> &'static str {
        match self {
            Pattern::SequentialRead => "read",
            Pattern::SequentialWrite => "write",
            Pattern::RandomRead => "randread",
            Pattern::RandomWrite => "randwrite",
        }
    }
    pub fn describe(self) -> &'static str {
        match self {
            Pattern::SequentialRead => "seq read",
            Pattern::SequentialWrite => "seq write",
            Pattern::RandomRead => "rand read",
            Pattern::RandomWrite => "rand write",
        }
    }
}

/// Where time comes from: the monotonic clock, or a simulator's.
pub trait BenchClock {
    fn now_ns(&self) -> u64;
}

/// The host's monotonic clock.
pub struct MonotonicClock {
    start: Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        MonotonicClock { start: Instant::now() }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl BenchClock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

const SUB_BUCKET_BITS: u32 = 7;
const SUB_BUCKETS: usize = 1 << SUB_BUCKET_BITS;
const HISTOGRAM_BUCKETS: usize = (64 - SUB_BUCKET_BITS as usize + 1) * SUB_BUCKETS;

/// A latency histogram of fixed size: values below 128 ns exactly, above
/// that 128 buckets per power of two (relative error below 0.8 %, like
/// fio's 64 per power of two at 1.6 %). Percentiles report the bucket's
/// midpoint, clamped to the exact minimum and maximum.
#[derive(Clone)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram { counts: vec![0; HISTOGRAM_BUCKETS], count: 0, sum_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }

    fn bucket_of(ns: u64) -> usize {
        if ns < SUB_BUCKETS as u64 {
            return ns as usize;
        }
        let msb = 63 - ns.leading_zeros(); // >= 7
        let shift = msb - SUB_BUCKET_BITS;
        let group = (msb - SUB_BUCKET_BITS + 1) as usize;
        group * SUB_BUCKETS + ((ns >> shift) as usize - SUB_BUCKETS)
    }

    /// The midpoint of a bucket's range.
    fn value_of(bucket: usize) -> u64 {
        let group = bucket / SUB_BUCKETS;
        let sub = (bucket % SUB_BUCKETS) as u64;
        if group == 0 {
            return sub;
        }
        let shift = group as u32 - 1;
        let low = (SUB_BUCKETS as u64 + sub) << shift;
        low + ((1u64 << shift) >> 1)
    }

    pub fn record(&mut self, ns: u64) {
        self.counts[Self::bucket_of(ns)] += 1;
        self.count += 1;
        self.sum_ns += ns as u128;
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest recorded value such that at least `percent` % of the
    /// values are at or below it (bucket resolution). 0 when empty.
    pub fn percentile_ns(&self, percent: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((percent / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0u64;
        for (bucket, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value_of(bucket).clamp(self.min_ns, self.max_ns);
            }
        }
        self.max_ns
    }

    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1e3;
        if self.count == 0 {
            return LatencySummary::default();
        }
        LatencySummary {
            min_us: us(self.min_ns),
            mean_us: self.sum_ns as f64 / self.count as f64 / 1e3,
            p50_us: us(self.percentile_ns(50.0)),
            p99_us: us(self.percentile_ns(99.0)),
            p99_9_us: us(self.percentile_ns(99.9)),
            max_us: us(self.max_ns),
        }
    }
}

/// Latency of the requests of one point, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p99_9_us: f64,
    pub max_us: f64,
}

/// One point to measure.
#[derive(Clone, Debug)]
pub struct PointSpec {
    pub pattern: Pattern,
    pub block_size_bytes: usize,
    /// The queue depth asked for (the sweep's axis).
    pub queue_depth: u32,
    /// Requests in flight at once, each with a buffer of its own: the queue depth, or fewer where
    /// the span holds fewer blocks (more could never be in flight).
    pub queue_depth_in_flight: u32,
    /// Offsets stay in `[0, span_bytes)`; a multiple of the block size.
    pub span_bytes: u64,
    /// Stop submitting after this many bytes (a sequential point does one
    /// pass over the span when this equals it).
    pub max_bytes: u64,
    /// Stop submitting after this long.
    pub runtime_ns: u64,
    /// Seed of the random offsets.
    pub seed: u64,
    /// Do one untimed transfer per buffer first.
    pub warm_up: bool,
}

/// Why a point stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `max_bytes` done (for sequential points: one pass over the file).
    Bytes,
    /// The runtime ran out.
    Time,
}

/// What one point measured.
#[derive(Clone, Debug, Serialize)]
pub struct PointResult {
    pub pattern: Pattern,
    pub block_size_bytes: usize,
    /// The queue depth asked for.
    pub queue_depth: u32,
    /// The requests that were in flight at most (and the buffers made): less than `queue_depth`
    /// where the file holds fewer blocks.
    pub queue_depth_in_flight: u32,
    pub ops: u64,
    pub bytes: u64,
    pub elapsed_s: f64,
    /// Decimal GB (1e9 bytes) per second.
    pub throughput_gb_per_s: f64,
    pub iops: f64,
    pub latency: LatencySummary,
    pub stopped_by: StopReason,
}

/// An I/O error during a point, with where it happened.
#[derive(Debug, thiserror::Error)]
#[error("{pattern} of {len} bytes at offset {offset}: {source}", pattern = pattern.describe())]
pub struct PointError {
    pub pattern: Pattern,
    pub offset: u64,
    pub len: usize,
    #[source]
    pub source: io::Error,
}

/// splitmix64: small, seeded, good enough for offsets.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

struct Offsets {
    pattern: Pattern,
    block: u64,
    blocks: u64,
    next_block: u64,
    rng: Rng,
}

impl Offsets {
    fn next(&mut self) -> u64 {
        let b = if self.pattern.is_random() {
            self.rng.next() % self.blocks
        } else {
            let b = self.next_block;
            self.next_block = (self.next_block + 1) % self.blocks;
            b
        };
        b * self.block
    }
}

/// Runs one point: `buffers` (exactly `queue_depth_in_flight` of them, each holding at
/// least a block) go round through `engine` against `fd`. The buffers come
/// back with the result; on an I/O error the in-flight requests are drained
/// first.
pub fn run_point<B: IoBuf>(
    engine: &mut dyn IoEngine<B>,
    waker: &Waker,
    clock: &dyn BenchClock,
    fd: RawFd,
    spec: &PointSpec,
    buffers: Vec<B>,
) -> (Vec<B>, Result<PointResult, PointError>) {
    let bs = spec.block_size_bytes;
    assert!(bs > 0 && spec.queue_depth_in_flight > 0, "a point needs a block size and a queue depth");
    assert_eq!(buffers.len(), spec.queue_depth_in_flight as usize, "one buffer per request in flight");
    assert!(buffers.iter().all(|b| b.io_capacity() >= bs), "every buffer holds a block");
    assert!(spec.span_bytes >= bs as u64 && spec.span_bytes / bs as u64 * bs as u64 == spec.span_bytes, "the span is whole blocks");
    assert_eq!(engine.in_flight(), 0, "a point starts on an idle engine");

    let op = spec.pattern.op();
    let mut offsets = Offsets {
        pattern: spec.pattern,
        block: bs as u64,
        blocks: spec.span_bytes / bs as u64,
        next_block: 0,
        rng: Rng(spec.seed),
    };
    let qd = spec.queue_depth_in_flight as usize;
    let mut spare: Vec<B> = Vec::with_capacity(qd);
    let mut completions: Vec<Completion<B>> = Vec::with_capacity(qd);
    let mut submitted_at_ns = vec![0u64; qd];
    let mut offset_of = vec![0u64; qd];
    let mut first_error: Option<PointError> = None;

    // Puts buffer `token` in flight at `offset`; on a submission error the
    // buffer comes back into `spare`.
    let submit = |engine: &mut dyn IoEngine<B>, buf: B, token: usize, offset: u64, spare: &mut Vec<B>| -> Result<(), PointError> {
        engine.submit(op, fd, Some(offset), bs, buf, token as u64).map_err(|(buf, source)| {
            spare.push(buf);
            PointError { pattern: spec.pattern, offset, len: bs, source }
        })
    };
    let check = |c: &Completion<B>, offset: u64| -> Result<usize, PointError> {
        let source = match &c.result {
            Ok(n) if *n == bs => return Ok(*n),
            Ok(n) => io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("short transfer: {n} of {bs} bytes (is the file shorter than the span?)"),
            ),
            Err(e) => match e.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(e.kind(), e.to_string()),
            },
        };
        Err(PointError { pattern: spec.pattern, offset, len: bs, source })
    };

    // Hands every buffer back, draining what is in flight.
    let drain = |engine: &mut dyn IoEngine<B>, spare: &mut Vec<B>, completions: &mut Vec<Completion<B>>| {
        while engine.in_flight() > 0 {
            if engine.wait(completions, waker).is_err() {
                break;
            }
            spare.extend(completions.drain(..).map(|c| c.buf));
        }
    };

    // Warm-up: one untimed transfer per buffer.
    let mut buffers = buffers;
    if spec.warm_up {
        for (token, buf) in buffers.drain(..).enumerate() {
            let offset = offsets.next();
            offset_of[token] = offset;
            if let Err(e) = submit(engine, buf, token, offset, &mut spare) {
                first_error.get_or_insert(e);
            }
        }
        while engine.in_flight() > 0 {
            if let Err(source) = engine.wait(&mut completions, waker) {
                first_error.get_or_insert(PointError { pattern: spec.pattern, offset: 0, len: bs, source });
                break;
            }
            for c in completions.drain(..) {
                if let Err(e) = check(&c, offset_of[c.token as usize]) {
                    first_error.get_or_insert(e);
                }
                spare.push(c.buf);
            }
        }
        if let Some(e) = first_error {
            drain(engine, &mut spare, &mut completions);
            return (spare, Err(e));
        }
        // Restart the sequence so the timed pass covers the span once.
        offsets.next_block = 0;
        buffers = std::mem::take(&mut spare);
    }

    let mut histogram = LatencyHistogram::new();
    let mut ops = 0u64;
    let mut bytes = 0u64;
    let mut bytes_submitted = 0u64;
    let start_ns = clock.now_ns();
    let deadline_ns = start_ns.saturating_add(spec.runtime_ns);
    let mut stopped_by = None;
    let mut idle: Vec<(usize, B)> = buffers.into_iter().enumerate().collect();
    let mut last_ns = start_ns;

    loop {
        // Keep every idle buffer busy unless we are done submitting.
        while let Some((token, buf)) = idle.pop() {
            if stopped_by.is_none() {
                if bytes_submitted >= spec.max_bytes {
                    stopped_by = Some(StopReason::Bytes);
                } else if bytes_submitted > 0 && clock.now_ns() >= deadline_ns {
                    // (At least one request: a point preempted past its
                    // deadline before the first submit still measures one.)
                    stopped_by = Some(StopReason::Time);
                }
            }
            if stopped_by.is_some() || first_error.is_some() {
                spare.push(buf);
                continue;
            }
            let offset = offsets.next();
            offset_of[token] = offset;
            submitted_at_ns[token] = clock.now_ns();
            match submit(engine, buf, token, offset, &mut spare) {
                Ok(()) => bytes_submitted += bs as u64,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if engine.in_flight() == 0 {
            break;
        }
        if let Err(source) = engine.wait(&mut completions, waker) {
            first_error.get_or_insert(PointError { pattern: spec.pattern, offset: 0, len: bs, source });
            drain(engine, &mut spare, &mut completions);
            break;
        }
        let now_ns = clock.now_ns();
        last_ns = now_ns;
        for c in completions.drain(..) {
            let token = c.token as usize;
            match check(&c, offset_of[token]) {
                Ok(n) => {
                    histogram.record(now_ns.saturating_sub(submitted_at_ns[token]));
                    ops += 1;
                    bytes += n as u64;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
            idle.push((token, c.buf));
        }
    }
    spare.extend(idle.into_iter().map(|(_, b)| b));
    if let Some(e) = first_error {
        return (spare, Err(e));
    }
    let elapsed_s = (last_ns.saturating_sub(start_ns)) as f64 / 1e9;
    let secs = elapsed_s.max(1e-9);
    let result = PointResult {
        pattern: spec.pattern,
        block_size_bytes: bs,
        queue_depth: spec.queue_depth,
        queue_depth_in_flight: spec.queue_depth_in_flight,
        ops,
        bytes,
        elapsed_s,
        throughput_gb_per_s: bytes as f64 / secs / 1e9,
        iops: ops as f64 / secs,
        latency: histogram.summary(),
        stopped_by: stopped_by.unwrap_or(StopReason::Bytes),
    };
    (spare, Ok(result))
}

/// Where the sweep's buffers live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BenchMemory {
    /// Aligned anonymous host memory ([`AlignedBuf`]).
    Host,
    /// A shared-memory region standing in for an emulated device's memory:
    /// a file in `dir` (normally `/dev/shm`), unlinked once mapped.
    Shm { dir: PathBuf },
    /// P2P memory of the PCI function at `device_dir`
    /// (`/sys/bus/pci/devices/<BDF>`), through `p2pmem/allocate`.
    P2p { device_dir: PathBuf },
}

/// The sweep to run.
#[derive(Clone, Debug)]
pub struct IoBenchOptions {
    pub file: PathBuf,
    /// Bytes of the file the sweep uses; the file is laid out to this size
    /// first if it is shorter.
    pub file_size_bytes: u64,
    pub block_sizes_bytes: Vec<usize>,
    pub queue_depths: Vec<u32>,
    /// Sequential patterns to sweep (reads, writes or both).
    pub sequential: Vec<Pattern>,
    /// Random patterns at 4 KiB, queue depth 1.
    pub random: Vec<Pattern>,
    pub memory: BenchMemory,
    /// Time limit of each point (it also stops after one pass over the file).
    pub runtime_per_point: Duration,
    /// pread/pwrite instead of io_uring (requests then do not overlap).
    pub sync_io: bool,
    /// Seed of the random offsets.
    pub seed: u64,
}

/// A seed that differs from run to run (fio's `randrepeat=0`): a random
/// pattern that repeats its offsets rewrites, run after run, the blocks the
/// last run left in the disk's (or a VM host's) cache.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 40)
}

impl IoBenchOptions {
    /// The issue's sweep: 4 KiB..16 MiB, depths 1, 4, 16, reads and writes,
    /// random 4 KiB reads and writes, host memory, 1 s per point, offsets
    /// from a fresh seed.
    pub fn new(file: PathBuf, file_size_bytes: u64) -> Self {
        IoBenchOptions {
            file,
            file_size_bytes,
            block_sizes_bytes: (12..=24).map(|s| 1usize << s).collect(),
            queue_depths: vec![1, 4, 16],
            sequential: vec![Pattern::SequentialRead, Pattern::SequentialWrite],
            random: vec![Pattern::RandomRead, Pattern::RandomWrite],
            memory: BenchMemory::Host,
            runtime_per_point: Duration::from_secs(1),
            sync_io: false,
            seed: fresh_seed(),
        }
    }
}

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum IoBenchError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot {operation} {path}: {source}")]
    File { operation: &'static str, path: PathBuf, source: io::Error },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: PointError },
    #[error("{0}")]
    Memory(#[from] RegionError),
}

/// The whole sweep's results.
#[derive(Clone, Debug, Serialize)]
pub struct IoBenchReport {
    pub provenance: Provenance,
    pub provenance_text: String,
    pub file: String,
    pub file_kind: String,
    pub file_size_bytes: u64,
    /// Bytes written to lay the file out before the sweep (0 if it was long enough).
    pub laid_out_bytes: u64,
    pub io_path: IoPath,
    pub memory_domain: MemoryDomain,
    pub memory_text: String,
    /// What writes carry.
    pub write_payload: String,
    pub runtime_per_point_s: f64,
    /// Seed of the random offsets (`--seed` repeats them).
    pub seed: u64,
    pub points: Vec<PointResult>,
    pub notes: Vec<String>,
}

const LAYOUT_CHUNK_BYTES: usize = 1 << 20;

fn fill_pattern(buf: &mut AlignedBuf, seed: u64) {
    let mut rng = Rng(seed);
    for chunk in buf.spare_mut().chunks_mut(8) {
        let v = rng.next().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

fn validate(o: &IoBenchOptions) -> Result<(), IoBenchError> {
    let usage = |m: String| Err(IoBenchError::Usage(m));
    if o.sequential.iter().any(|p| p.is_random()) || o.random.iter().any(|p| !p.is_random()) {
        return usage("sequential and random patterns are mixed up (a bug in the caller)".into());
    }
    if o.sequential.is_empty() && o.random.is_empty() {
        return usage("nothing to measure: no sequential or random pattern chosen".into());
    }
    if !o.sequential.is_empty() && (o.block_sizes_bytes.is_empty() || o.queue_depths.is_empty()) {
        return usage("the sweep needs at least one block size and one queue depth".into());
    }
    for &bs in &o.block_sizes_bytes {
        if bs == 0 || bs % DIRECT_IO_ALIGN_BYTES != 0 {
            return usage(format!("block size {bs} is not a multiple of {DIRECT_IO_ALIGN_BYTES} bytes (O_DIRECT needs whole pages)"));
        }
    }
    for &qd in &o.queue_depths {
        if qd == 0 || qd > MAX_QUEUE_DEPTH {
            return usage(format!("queue depth {qd} is outside 1..={MAX_QUEUE_DEPTH}"));
        }
    }
    if o.file_size_bytes < DIRECT_IO_ALIGN_BYTES as u64 || o.file_size_bytes != align_up(o.file_size_bytes as usize, DIRECT_IO_ALIGN_BYTES) as u64 {
        return usage(format!("file size {} must be a non-zero multiple of {DIRECT_IO_ALIGN_BYTES} bytes", o.file_size_bytes));
    }
    if o.runtime_per_point.is_zero() {
        return usage("the runtime per point must be more than zero".into());
    }
    let (points, notes) = plan_points(o, o.file_size_bytes);
    if points.is_empty() {
        return usage(format!("nothing to measure: {}", notes.join("; ")));
    }
    // A point's buffers (requests in flight x block size) are allocated and touched whole.
    // SAFETY: sysconf only reads system configuration.
    let memory = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES).max(0) as u64 * libc::sysconf(libc::_SC_PAGESIZE).max(0) as u64 };
    if let Some(p) = points.iter().max_by_key(|p| p.block_size_bytes as u64 * u64::from(p.queue_depth_in_flight)) {
        let bytes = p.block_size_bytes as u64 * u64::from(p.queue_depth_in_flight);
        if memory > 0 && bytes > memory / 2 {
            return usage(format!("queue depth {} x {} blocks is {} of buffers, more than half this machine's {:.1} GiB of memory: sweep smaller blocks or depths", p.queue_depth_in_flight, human_size(p.block_size_bytes as u64), human_size(bytes), memory as f64 / (1u64 << 30) as f64));
        }
    }
    Ok(())
}

/// Where the first hole of a file lies before byte `end`, if it has one there (SEEK_HOLE; a
/// file system without it reports none, as Linux's fallback places the only hole at the end).
fn first_hole(fd: RawFd, end: u64) -> Option<u64> {
    // SAFETY: lseek on a descriptor we own; it reads and writes no memory (the offset it moves
    // is put back by the next point's positioned I/O, which never uses it).
    let at = unsafe { libc::lseek(fd, 0, libc::SEEK_HOLE) };
    u64::try_from(at).ok().filter(|&h| h < end)
}

/// The kind of a file the sweep made.
const CREATED: &str = "regular file (created)";

struct OpenedBenchFile {
    file: File,
    kind: String,
    size_bytes: u64,
    direct: bool,
    direct_refused: Option<String>,
}

fn open_bench_file(o: &IoBenchOptions, writes: bool) -> Result<OpenedBenchFile, IoBenchError> {
    let path = &o.file;
    let file_err = |operation, source| IoBenchError::File { operation, path: path.clone(), source };
    let meta = std::fs::metadata(path);
    let (is_block, exists) = match &meta {
        Ok(m) if m.file_type().is_block_device() => (true, true),
        Ok(m) if m.is_file() => (false, true),
        Ok(_) => return Err(IoBenchError::Usage(format!("{}: not a regular file or block device", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (false, false),
        Err(e) => return Err(file_err("stat", io::Error::new(e.kind(), e.to_string()))),
    };
    if is_block && writes {
        return Err(IoBenchError::Usage(format!(
            "{} is a block device: write sweeps would destroy its data; sweep reads only (--rw read), or give a file on its file system",
            path.display()
        )));
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    let empty = meta.as_ref().is_ok_and(|m| m.is_file() && m.len() == 0);
    if !is_block && (writes || !exists || empty) {
        // Written by the sweep, or laid out because it is new or empty (an empty file opened
        // for reading only failed at its layout: "Bad file descriptor").
        opts.write(true).create(true);
    }
    let mut direct_opts = opts.clone();
    direct_opts.custom_flags(libc::O_DIRECT);
    let (file, direct, direct_refused) = match direct_opts.open(path) {
        Ok(f) => (f, true, None),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let f = opts.open(path).map_err(|e| file_err("open", e))?;
            (f, false, Some(format!("the file system refused O_DIRECT ({e}); these numbers measure the page cache, not the device")))
        }
        Err(e) => return Err(file_err("open", e)),
    };
    let size_bytes = if is_block {
        use std::io::Seek;
        (&file).seek(io::SeekFrom::End(0)).map_err(|e| file_err("size", e))?
    } else {
        file.metadata().map_err(|e| file_err("stat", e))?.len()
    };
    let kind = if is_block { "block device" } else if exists { "regular file" } else { CREATED };
    Ok(OpenedBenchFile { file, kind: kind.into(), size_bytes, direct, direct_refused })
}

/// What a loop device's figures measure, where `meta` is one (its `loop/` directory in sysfs):
/// without direct I/O it reads and writes its backing file through the page cache, so its
/// figures are memory copies, not the disk under that file (they read 2.5 GB/s where the disk
/// reads 1.4, with no word).
fn loop_device_note(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dir = PathBuf::from(format!("/sys/dev/block/{}:{}/loop", libc::major(meta.rdev()), libc::minor(meta.rdev())));
    let backing = std::fs::read_to_string(dir.join("backing_file")).ok()?;
    let backing = backing.trim_end_matches('\n');
    Some(match std::fs::read_to_string(dir.join("dio")).is_ok_and(|d| d.trim() == "1") {
        true => format!("{} is a loop device over {} with direct I/O: its figures are those of that file's file system, through the loop driver", Quoted(path), Quoted(Path::new(backing))),
        false => format!(
            "{} is a loop device over {} without direct I/O (its loop/dio is 0): its reads and writes go through the page cache of that file, so these figures measure memory, not the disk under it (`losetup --direct-io=on` passes them through)",
            Quoted(path),
            Quoted(Path::new(backing))
        ),
    })
}

/// Writes `[from, to)` of the file with pattern data (host buffers).
fn lay_out(fd: RawFd, path: &Path, from: u64, to: u64, sync_io: bool) -> Result<u64, IoBenchError> {
    let depth = 4u32;
    let buffers: Vec<AlignedBuf> = (0..depth)
        .map(|i| {
            let mut b = AlignedBuf::new(LAYOUT_CHUNK_BYTES);
            fill_pattern(&mut b, 0x1a40 + i as u64);
            b
        })
        .collect();
    let waker = Waker::new().map_err(|e| IoBenchError::File { operation: "create an eventfd for", path: path.to_path_buf(), source: e })?;
    let (mut engine, _) = make_engine::<AlignedBuf>(depth, sync_io);
    let mut free = buffers;
    let mut out = Vec::new();
    let mut offset = from;
    let err = |offset, source| IoBenchError::Io { path: path.to_path_buf(), source: PointError { pattern: Pattern::SequentialWrite, offset, len: LAYOUT_CHUNK_BYTES, source } };
    let mut failure = None;
    loop {
        while failure.is_none() && offset < to {
            let Some(buf) = free.pop() else { break };
            let len = (to - offset).min(LAYOUT_CHUNK_BYTES as u64) as usize;
            if let Err((buf, e)) = engine.submit(IoOp::Write, fd, Some(offset), len, buf, offset) {
                free.push(buf);
                failure = Some(err(offset, e));
                break;
            }
            offset += len as u64;
        }
        if engine.in_flight() == 0 {
            break;
        }
        if let Err(e) = engine.wait(&mut out, &waker) {
            failure.get_or_insert(err(offset, e));
            break;
        }
        for c in out.drain(..) {
            if let Err(e) = c.result {
                failure.get_or_insert(err(c.token, e));
            }
            free.push(c.buf);
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(to - from),
    }
}

fn make_engine<B: IoBuf>(queue_depth: u32, sync_io: bool) -> (Box<dyn IoEngine<B>>, Option<String>) {
    if sync_io {
        return (Box::new(SyncEngine::new()), Some("plain syscalls requested (--io sync): requests do not overlap, queue depth has no effect".into()));
    }
    match UringEngine::new(queue_depth) {
        Ok(e) => (Box::new(e), None),
        Err(e) => (Box::new(SyncEngine::new()), Some(format!("io_uring unavailable ({e}); using pread/pwrite: requests do not overlap, queue depth has no effect"))),
    }
}

/// The points of a sweep, in the order they run: sequential reads, then
/// sequential writes (over every block size, then depth), then random.
pub fn plan_points(o: &IoBenchOptions, span_bytes: u64) -> (Vec<PointSpec>, Vec<String>) {
    let mut points = Vec::new();
    let mut notes = Vec::new();
    let runtime_ns = o.runtime_per_point.as_nanos().min(u64::MAX as u128) as u64;
    for &pattern in &o.sequential {
        for &bs in &o.block_sizes_bytes {
            let span = span_bytes / bs as u64 * bs as u64;
            if span == 0 {
                notes.push(format!("{} at {} skipped: larger than the {span_bytes}-byte file", pattern.describe(), human_size(bs as u64)));
                continue;
            }
            for &qd in &o.queue_depths {
                // More requests than the file has blocks: the queue never fills, and buffers
                // (and ring entries) past those blocks would never be used, only allocated.
                let blocks = span / bs as u64;
                let in_flight = u32::try_from(blocks).unwrap_or(u32::MAX).min(qd);
                if in_flight < qd {
                    notes.push(format!("{} at {} x queue depth {qd}: the {span_bytes}-byte file holds {}, so the queue depth was capped at {in_flight} (qd {qd}* below: {in_flight} in flight at most, {} made) and the point's figures come from {}", pattern.describe(), human_size(bs as u64), count(blocks, "such block"), count(in_flight, "buffer"), count(blocks, "transfer")));
                }
                points.push(PointSpec { pattern, block_size_bytes: bs, queue_depth: qd, queue_depth_in_flight: in_flight, span_bytes: span, max_bytes: span, runtime_ns, seed: o.seed, warm_up: true });
            }
        }
    }
    for &pattern in &o.random {
        let span = span_bytes / RANDOM_BLOCK_BYTES as u64 * RANDOM_BLOCK_BYTES as u64;
        points.push(PointSpec { pattern, block_size_bytes: RANDOM_BLOCK_BYTES, queue_depth: 1, queue_depth_in_flight: 1, span_bytes: span, max_bytes: span, runtime_ns, seed: o.seed, warm_up: true });
    }
    (points, notes)
}

/// Runs every point with buffers from `make_buffers(block_bytes, count)`.
fn sweep<B: IoBuf>(
    o: &IoBenchOptions,
    fd: RawFd,
    points: &[PointSpec],
    make_buffers: &mut dyn FnMut(usize, usize) -> Vec<B>,
    on_point: &mut dyn FnMut(&PointResult),
    notes: &mut Vec<String>,
) -> Result<(Vec<PointResult>, EngineKind), IoBenchError> {
    let waker = Waker::new().map_err(|e| IoBenchError::File { operation: "create an eventfd for", path: o.file.clone(), source: e })?;
    let clock = MonotonicClock::new();
    let mut results = Vec::with_capacity(points.len());
    let mut kind = if o.sync_io { EngineKind::Syscalls } else { EngineKind::IoUring };
    for spec in points {
        let (mut engine, fallback) = make_engine::<B>(spec.queue_depth_in_flight, o.sync_io);
        if let Some(f) = fallback {
            if !notes.contains(&f) {
                notes.push(f);
            }
        }
        kind = engine.kind();
        let buffers = make_buffers(spec.block_size_bytes, spec.queue_depth_in_flight as usize);
        let (buffers, result) = run_point(engine.as_mut(), &waker, &clock, fd, spec, buffers);
        drop(engine);
        drop(buffers);
        let r = result.map_err(|source| IoBenchError::Io { path: o.file.clone(), source })?;
        on_point(&r);
        results.push(r);
    }
    Ok((results, kind))
}

/// Runs the sweep described by `o`, calling `on_point` after each point.
pub fn run_io_bench(o: &IoBenchOptions, on_point: &mut dyn FnMut(&PointResult)) -> Result<IoBenchReport, IoBenchError> {
    validate(o)?;
    let writes = o.sequential.iter().chain(&o.random).any(|p| p.op() == IoOp::Write);
    let opened = open_bench_file(o, writes)?;
    // A file the sweep made is kept for the next sweep, unless the sweep failed (a full disk).
    let created = opened.kind == CREATED;
    // Interrupted (SIGINT while it is laid out), it goes too: a part of it was refused by
    // the next sweep ("holds fewer bytes than asked for").
    if created {
        peerpath_io::remove_on_signal(o.file.clone());
    }
    // An empty file given to lay out is empty again after a failure (the room it took given
    // back), and after a signal (SIGINT while it is laid out left it full size).
    let given_empty = !created && opened.kind == "regular file" && opened.size_bytes == 0;
    if given_empty {
        peerpath_io::empty_on_signal(o.file.clone());
    }
    let swept = sweep_file(o, opened, on_point);
    if created && swept.is_err() {
        let _ = std::fs::remove_file(&o.file);
    }
    if given_empty && swept.is_err() {
        let _ = OpenOptions::new().write(true).open(&o.file).and_then(|f| f.set_len(0));
    }
    // Done with it (a signal meanwhile found it as the sweep left it, or as its failure does).
    if created || given_empty {
        peerpath_io::keep_on_signal(&o.file);
    }
    swept
}

fn sweep_file(o: &IoBenchOptions, opened: OpenedBenchFile, on_point: &mut dyn FnMut(&PointResult)) -> Result<IoBenchReport, IoBenchError> {
    let mut notes = Vec::new();
    if let BenchMemory::P2p { .. } = o.memory {
        if !opened.direct {
            // The page cache would copy with CPU loads and stores through the
            // BAR mapping: slow on x86, may corrupt or crash elsewhere.
            return Err(IoBenchError::Usage(format!(
                "{}: the file system refuses O_DIRECT, and buffered I/O into P2P memory is refused (the page cache would copy to and from the device's BAR with the CPU); put the file on a file system that takes O_DIRECT",
                o.file.display()
            )));
        }
    }
    if let Some(r) = &opened.direct_refused {
        notes.push(r.clone());
    }
    if opened.kind == "block device" {
        notes.extend(opened.file.metadata().ok().and_then(|m| loop_device_note(&o.file, &m)));
    }
    // O_DIRECT on tmpfs (Linux 6.6 on) is a copy between memory pages: no device is measured.
    if opened.kind != "block device" && peerpath_mem::on_memory_file_system(opened.file.as_raw_fd()) {
        notes.push(format!("{} is on a memory file system (tmpfs or ramfs): its reads and writes are copies between memory pages, so these figures measure memory, not a storage device", o.file.display()));
    }
    let fd = opened.file.as_raw_fd();
    let mut laid_out_bytes = 0;
    if opened.size_bytes < o.file_size_bytes {
        if opened.kind == "block device" {
            // A size to give, as for a file (the default 1G was refused with none).
            return Err(IoBenchError::Usage(format!(
                "{} holds {} bytes, less than the {} asked for (--size): give --size {} or less",
                o.file.display(),
                opened.size_bytes,
                o.file_size_bytes,
                peerpath_mem::align_down(opened.size_bytes as usize, DIRECT_IO_ALIGN_BYTES)
            )));
        }
        if opened.size_bytes > 0 {
            // It may be data: never extended (an unaligned end would not
            // take O_DIRECT writes either).
            // A size to give only where one fits (under 4 KiB none does: --size 0 is refused).
            let fits = peerpath_mem::align_down(opened.size_bytes as usize, DIRECT_IO_ALIGN_BYTES);
            let give = if fits > 0 { format!("give --size {fits} or less, or a new file") } else { "it is smaller than one 4 KiB block: give a new file".to_string() };
            return Err(IoBenchError::Usage(format!(
                "{} holds {} bytes, less than the {} asked for (--size); peerpath lays out only new or empty files and does not extend an existing one: {give}",
                o.file.display(),
                opened.size_bytes,
                o.file_size_bytes,
            )));
        }
        // The room first, as fio does: a --size past the free space fails here at once, not
        // after filling the file system for everyone (a file system without fallocate is
        // laid out as before).
        // SAFETY: fallocate on a descriptor we own, within the file's range; it writes no memory.
        if unsafe { libc::fallocate(fd, 0, 0, o.file_size_bytes as libc::off_t) } != 0 {
            let e = io::Error::last_os_error();
            if !matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)) {
                return Err(IoBenchError::File { operation: "make room for", path: o.file.clone(), source: e });
            }
        }
        laid_out_bytes = lay_out(fd, &o.file, opened.size_bytes, o.file_size_bytes, o.sync_io)?;
        let how = if opened.direct { "O_DIRECT writes" } else { "buffered writes: O_DIRECT was refused" };
        notes.push(format!("laid out {} of the file first (pattern data, {how}) so every point reads written blocks", human_size(laid_out_bytes)));
    }
    // Asked for, but said: the data that was there is gone (the report said nothing of it).
    let writes = o.sequential.iter().chain(&o.random).any(|p| p.op() == IoOp::Write);
    if writes && opened.kind == "regular file" && opened.size_bytes > 0 {
        notes.push(format!("{} held data: the write points overwrote its first {} (writes were asked for)", Quoted(&o.file), human_size(o.file_size_bytes)));
    }
    let reads = o.sequential.iter().chain(&o.random).any(|p| p.op() == IoOp::Read);
    if reads && opened.kind != "block device" {
        if let Some(hole) = first_hole(fd, o.file_size_bytes) {
            notes.push(format!("{} has a hole (it is sparse) at byte {hole}, within the {} used: a read of a hole touches no device (the file system hands back zeros), so read figures over it measure no storage; give a file whose blocks are written (a new file is laid out first)", o.file.display(), human_size(o.file_size_bytes)));
        }
    }
    let (points, mut plan_notes) = plan_points(o, o.file_size_bytes);
    notes.append(&mut plan_notes);
    let region_bytes = points.iter().map(|p| align_up(p.block_size_bytes, DIRECT_IO_ALIGN_BYTES) * p.queue_depth_in_flight as usize).max().unwrap_or(DIRECT_IO_ALIGN_BYTES);

    let (results, kind, domain, memory_text, write_payload) = match &o.memory {
        BenchMemory::Host => {
            let mut seed = 0u64;
            let mut make = |bs: usize, count: usize| -> Vec<AlignedBuf> {
                (0..count)
                    .map(|_| {
                        let mut b = AlignedBuf::new(bs);
                        // Touches every page too, so first DMA does not fault.
                        seed += 1;
                        fill_pattern(&mut b, seed);
                        b
                    })
                    .collect()
            };
            let domain = {
                // A touched buffer: its node is where the sweep's buffers come from.
                let mut b = AlignedBuf::new(DIRECT_IO_ALIGN_BYTES);
                fill_pattern(&mut b, 0);
                b.domain().clone()
            };
            let (r, k) = sweep(o, fd, &points, &mut make, on_point, &mut notes)?;
            let text = format!("{domain}: a fixed set of aligned buffers per point (requests in flight x block size)");
            (r, k, domain, text, "pseudo-random pattern (filled once per point, outside the timing)".to_string())
        }
        BenchMemory::Shm { dir } => {
            let path = dir.join(format!("peerpath-iobench-{}-{}", std::process::id(), clock_nanos()));
            // Made resident first, while it has a name: a file system without room for it is an
            // error here, not a "Bad address" on the first DMA into it.
            let region = MappedRegion::create_shared(&path, region_bytes, "shm").and_then(|r| match r.populate(0, r.len()) {
                // Linux before 5.14 has no MADV_POPULATE_WRITE: pages come on first touch.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(r),
                Ok(_) => Ok(r),
                // What a first touch would meet as SIGBUS (EFAULT on DMA): no room for the pages.
                Err(e) => Err(RegionError::Io { operation: "make resident (is its file system full?)", path: path.clone(), source: e, hint: "" }),
            });
            // The mapping outlives the name; nothing is left behind on exit.
            let _ = std::fs::remove_file(&path);
            let region = Arc::new(region?);
            let allocator = RegionAllocator::new(region.clone());
            let mut make = |bs: usize, count: usize| (0..count).map(|_| allocator.alloc(bs)).collect();
            let (r, k) = sweep(o, fd, &points, &mut make, on_point, &mut notes)?;
            // Where its pages are: a memory file system's (as /dev/shm), or a file system's page cache.
            let pages = match File::open(dir).is_ok_and(|d| peerpath_mem::on_memory_file_system(d.as_raw_fd())) {
                true => format!("host pages of a memory file system, {}", dir.display()),
                false => format!("page-cache pages of a file in {} (not a memory file system: the kernel may write them back to its disk)", dir.display()),
            };
            let text = format!(
                "{}: a {} shm region standing in for an emulated device's memory (host never touches the payload; DMA goes to and from {pages}, so this is not hardware device memory)",
                region.domain(),
                human_size(region.len() as u64)
            );
            (r, k, region.domain().clone(), text, "whatever the device region holds (zeros: the host never writes device memory)".to_string())
        }
        BenchMemory::P2p { device_dir } => {
            let region = Arc::new(MappedRegion::map_p2pmem(device_dir, region_bytes)?);
            let allocator = RegionAllocator::new(region.clone());
            let mut make = |bs: usize, count: usize| (0..count).map(|_| allocator.alloc(bs)).collect();
            let (r, k) = sweep(o, fd, &points, &mut make, on_point, &mut notes)?;
            let info = region.p2p_info().cloned();
            if let Some(i) = &info {
                if !i.allocate_on_sysfs {
                    notes.push(format!("{} is not on sysfs (a fixture?): these buffers are host memory standing in for it, not P2P memory", region.path().display()));
                }
            }
            // QEMU's PCI vendor id (Red Hat, 0x1b36): its emulated devices move
            // peer DMA through bounce buffers in software.
            if std::fs::read_to_string(device_dir.join("vendor")).is_ok_and(|v| v.trim() == "0x1b36") {
                notes.push("the P2P memory belongs to a QEMU-emulated device (PCI vendor 0x1b36): QEMU moves peer DMA through bounce buffers, so these figures are VM (QEMU) figures: function, not speed".into());
            }
            let text = format!("{}: {} mapped from {}", region.domain(), human_size(region.len() as u64), region.path().display());
            (r, k, region.domain().clone(), text, "whatever the P2P memory holds (the host never writes device memory)".to_string())
        }
    };
    let io_path = IoPath {
        engine: kind,
        direct: opened.direct,
        fallback_reason: match (kind, &opened.direct_refused) {
            (EngineKind::Syscalls, _) => notes.iter().find(|n| n.contains("pread/pwrite")).cloned(),
            (_, Some(r)) => Some(r.clone()),
            _ => None,
        },
    };
    // Buffers in a shm region: the figures are the emulation's, as compress's with emulated devices.
    let (provenance, provenance_text) = match domain {
        MemoryDomain::Emulated { .. } => (Provenance::MeasuredEmulated, "measured on this machine with emulated device memory (not hardware device memory)"),
        _ => (Provenance::MeasuredHost, "measured on this machine"),
    };
    Ok(IoBenchReport {
        provenance,
        provenance_text: provenance_text.into(),
        file: o.file.display().to_string(),
        file_kind: opened.kind,
        file_size_bytes: o.file_size_bytes,
        laid_out_bytes,
        io_path,
        memory_domain: domain,
        memory_text,
        write_payload,
        runtime_per_point_s: o.runtime_per_point.as_secs_f64(),
        seed: o.seed,
        points: results,
        notes,
    })
}

fn clock_nanos() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
}

/// `4K`, `1M`, `16M`, `1G`, or bytes.
pub fn human_size(bytes: u64) -> String {
    for (unit, shift) in [("G", 30), ("M", 20), ("K", 10)] {
        if bytes >= 1 << shift && (bytes >> shift) << shift == bytes {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

impl IoBenchReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    /// The human-readable table.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "peerpath bench-io — {}", self.provenance_text);
        let _ = writeln!(s, "  file          {} ({}, {} used)", self.file, self.file_kind, human_size(self.file_size_bytes));
        let _ = writeln!(s, "  I/O path      {}", self.io_path);
        let _ = writeln!(s, "  buffers       {}", self.memory_text);
        if self.points.iter().any(|p| p.pattern.op() == IoOp::Write) {
            let _ = writeln!(s, "  writes carry  {}", self.write_payload);
        }
        let _ = writeln!(s, "  per point     at most {} s or one pass over the file, after one untimed transfer per buffer", self.runtime_per_point_s);
        if self.points.iter().any(|p| p.pattern.is_random()) {
            let _ = writeln!(s, "  offsets       random, seed {} (--seed {} repeats them)", self.seed, self.seed);
        }
        // Not twice: what the I/O path's line already says in brackets.
        for n in self.notes.iter().filter(|n| self.io_path.fallback_reason.as_ref() != Some(*n)) {
            let _ = writeln!(s, "  note          {n}");
        }
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "  {:<10} {:>5} {:>5} {:>9} {:>10} {:>10} {:>10} {:>10} {:>9} {:>6}",
            "pattern", "bs", "qd", "GB/s", "IOPS", "p50 us", "p99 us", "p99.9 us", "ops", "stop"
        );
        for p in &self.points {
            let _ = writeln!(
                s,
                "  {:<10} {:>5} {:>5} {:>9.3} {:>10.0} {:>10.1} {:>10.1} {:>10.1} {:>9} {:>6}",
                p.pattern.describe(),
                human_size(p.block_size_bytes as u64),
                // Capped (the file holds fewer blocks): a note says at what.
                format!("{}{}", p.queue_depth, if p.queue_depth_in_flight < p.queue_depth { "*" } else { "" }),
                p.throughput_gb_per_s,
                p.iops,
                p.latency.p50_us,
                p.latency.p99_us,
                p.latency.p99_9_us,
                p.ops,
                match p.stopped_by {
                    StopReason::Bytes => "pass",
                    StopReason::Time => "time",
                }
            );
        }
        s
    }

    /// A picture of the sequential sweep: GB/s over block size, one panel
    /// per direction, one line per queue depth.
    pub fn render_svg(&self) -> String {
        render_svg(self)
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const PALETTE: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

fn render_svg(r: &IoBenchReport) -> String {
    let panels: Vec<Pattern> = [Pattern::SequentialRead, Pattern::SequentialWrite]
        .into_iter()
        .filter(|p| r.points.iter().any(|x| x.pattern == *p))
        .collect();
    let (panel_w, panel_h, margin_l, margin_t, margin_b, gap) = (420.0f64, 280.0f64, 60.0f64, 70.0f64, 80.0f64, 70.0f64);
    let width = margin_l + panels.len().max(1) as f64 * (panel_w + gap) + 20.0;
    let height = margin_t + panel_h + margin_b;
    let mut s = String::new();
    let _ = writeln!(s, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#);
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(s, r#"<text x="{margin_l}" y="22" font-size="15" font-weight="bold">peerpath bench-io: sequential O_DIRECT throughput ({})</text>"#, xml_escape(&r.provenance_text));
    let _ = writeln!(s, r#"<text x="{margin_l}" y="42">{} — {} — {}</text>"#, xml_escape(&r.file), xml_escape(&r.io_path.to_string()), xml_escape(&r.memory_domain.to_string()));

    let block_sizes: Vec<usize> = {
        let mut v: Vec<usize> = r.points.iter().filter(|p| !p.pattern.is_random()).map(|p| p.block_size_bytes).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let depths: Vec<u32> = {
        let mut v: Vec<u32> = r.points.iter().filter(|p| !p.pattern.is_random()).map(|p| p.queue_depth).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let max_gbps = r.points.iter().filter(|p| !p.pattern.is_random()).map(|p| p.throughput_gb_per_s).fold(0.0f64, f64::max);
    let y_top = nice_ceiling(max_gbps.max(1e-3));
    let (lo, hi) = match (block_sizes.first(), block_sizes.last()) {
        (Some(&a), Some(&b)) => ((a as f64).log2(), (b as f64).log2()),
        _ => (12.0, 24.0),
    };
    let span = (hi - lo).max(1.0);

    for (i, pattern) in panels.iter().enumerate() {
        let x0 = margin_l + i as f64 * (panel_w + gap);
        let y0 = margin_t;
        let px = |bs: usize| x0 + ((bs as f64).log2() - lo) / span * panel_w;
        let py = |g: f64| y0 + panel_h - g / y_top * panel_h;
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" font-weight="bold">{}</text>"#, x0, y0 - 10.0, pattern.describe());
        let _ = writeln!(s, r##"<rect x="{x0:.1}" y="{y0:.1}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#888"/>"##);
        for k in 0..=4 {
            let g = y_top * k as f64 / 4.0;
            let y = py(g);
            let _ = writeln!(s, r##"<line x1="{x0:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/>"##, x0 + panel_w);
            let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, x0 - 6.0, y + 4.0, trim_float(g));
        }
        for &bs in &block_sizes {
            let x = px(bs);
            let _ = writeln!(s, r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888"/>"##, y0 + panel_h, y0 + panel_h + 4.0);
            let _ = writeln!(s, r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text>"#, y0 + panel_h + 16.0, human_size(bs as u64));
        }
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">block size</text>"#, x0 + panel_w / 2.0, y0 + panel_h + 34.0);
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">GB/s</text>"#, x0 - 42.0, y0 + panel_h / 2.0, x0 - 42.0, y0 + panel_h / 2.0);
        for (j, &qd) in depths.iter().enumerate() {
            let color = PALETTE[j % PALETTE.len()];
            let pts: Vec<(f64, f64)> = block_sizes
                .iter()
                .filter_map(|&bs| r.points.iter().find(|p| p.pattern == *pattern && p.block_size_bytes == bs && p.queue_depth == qd))
                .map(|p| (px(p.block_size_bytes), py(p.throughput_gb_per_s)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let line: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(s, r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#, line.join(" "));
            for (x, y) in &pts {
                let _ = writeln!(s, r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}"/>"#);
            }
        }
    }
    // Legend and the random-latency line under the panels.
    let ly = margin_t + panel_h + 56.0;
    let mut lx = margin_l;
    for (j, &qd) in depths.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        let _ = writeln!(s, r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="3"/>"#, ly - 4.0, lx + 18.0, ly - 4.0);
        let _ = writeln!(s, r#"<text x="{:.1}" y="{ly:.1}">qd {qd}</text>"#, lx + 24.0);
        lx += 80.0;
    }
    let random: Vec<String> = r
        .points
        .iter()
        .filter(|p| p.pattern.is_random())
        .map(|p| format!("{} 4K qd1: p50 {:.0} us, p99 {:.0} us, p99.9 {:.0} us", p.pattern.describe(), p.latency.p50_us, p.latency.p99_us, p.latency.p99_9_us))
        .collect();
    if !random.is_empty() {
        let _ = writeln!(s, r#"<text x="{lx:.1}" y="{ly:.1}">{}</text>"#, xml_escape(&random.join("; ")));
    }
    s.push_str("</svg>\n");
    s
}

/// 1, 2 or 5 times a power of ten, at or above `v`.
fn nice_ceiling(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles_are_ordered_and_close() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        let p50 = h.percentile_ns(50.0);
        let p99 = h.percentile_ns(99.0);
        let p999 = h.percentile_ns(99.9);
        assert!(p50 <= p99 && p99 <= p999 && p999 <= 1_000_000);
        for (got, want) in [(p50, 500_000.0), (p99, 990_000.0), (p999, 999_000.0)] {
            assert!((got as f64 - want).abs() / want < 0.008, "{got} vs {want}");
        }
        assert_eq!(h.percentile_ns(100.0), 1_000_000);
        assert_eq!(h.percentile_ns(0.0), 10);
        let s = h.summary();
        assert!((s.mean_us - 500.005).abs() < 1e-6);
    }

    #[test]
    fn histogram_buckets_cover_every_value_in_order() {
        let mut last = 0;
        for ns in (0..20u32).flat_map(|s| [1u64 << s, (1u64 << s) + 1, (3u64 << s) / 2]).chain([u64::MAX]) {
            let b = LatencyHistogram::bucket_of(ns);
            assert!(b < HISTOGRAM_BUCKETS);
            assert!(b >= last || ns < 4, "bucket order at {ns}");
            last = b;
            let mid = LatencyHistogram::value_of(b);
            assert!((mid as f64 - ns as f64).abs() <= ns as f64 / 128.0 + 1.0, "{ns} -> {mid}");
        }
        let empty = LatencyHistogram::new();
        assert_eq!(empty.percentile_ns(99.0), 0);
        assert_eq!(empty.summary(), LatencySummary::default());
    }

    #[test]
    fn sizes_print_short() {
        assert_eq!(human_size(4096), "4K");
        assert_eq!(human_size(16 << 20), "16M");
        assert_eq!(human_size(1 << 30), "1G");
        assert_eq!(human_size(1000), "1000B");
    }

    #[test]
    fn plans_skip_blocks_larger_than_the_file() {
        let mut o = IoBenchOptions::new("x".into(), 64 << 10);
        o.block_sizes_bytes = vec![4096, 1 << 20];
        o.queue_depths = vec![1, 2];
        let (points, notes) = plan_points(&o, 64 << 10);
        assert_eq!(points.len(), 2 * 2 + 2, "two depths at 4K for read and write, plus two random");
        assert_eq!(notes.len(), 2);
        assert!(notes[0].contains("1M skipped"));
    }

    #[test]
    fn plans_cap_the_queue_depth_at_the_blocks_the_file_holds() {
        let mut o = IoBenchOptions::new("x".into(), 128 << 10);
        o.block_sizes_bytes = vec![4096, 64 << 10];
        o.queue_depths = vec![1, 4];
        o.sequential = vec![Pattern::SequentialRead];
        o.random = Vec::new();
        let (points, notes) = plan_points(&o, 128 << 10);
        let depths: Vec<(usize, u32, u32)> = points.iter().map(|p| (p.block_size_bytes, p.queue_depth, p.queue_depth_in_flight)).collect();
        assert_eq!(depths, [(4096, 1, 1), (4096, 4, 4), (64 << 10, 1, 1), (64 << 10, 4, 2)], "two 64K blocks: two in flight at most");
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("64K x queue depth 4") && notes[0].contains("capped at 2"), "{notes:?}");
    }

    #[test]
    fn bad_options_are_usage_errors() {
        let mut o = IoBenchOptions::new("/nonexistent/x".into(), 1 << 20);
        o.block_sizes_bytes = vec![1000];
        assert!(matches!(run_io_bench(&o, &mut |_| {}), Err(IoBenchError::Usage(m)) if m.contains("multiple of 4096")));
        let mut o = IoBenchOptions::new("/nonexistent/x".into(), 1 << 20);
        o.queue_depths = vec![0];
        assert!(matches!(run_io_bench(&o, &mut |_| {}), Err(IoBenchError::Usage(_))));
        let o = IoBenchOptions::new("/nonexistent/x".into(), 1000);
        assert!(matches!(run_io_bench(&o, &mut |_| {}), Err(IoBenchError::Usage(_))));
    }

    fn small_sweep(dir: &Path, memory: BenchMemory, sync_io: bool) -> IoBenchReport {
        let mut o = IoBenchOptions::new(dir.join("bench.dat"), 256 << 10);
        o.block_sizes_bytes = vec![4 << 10, 16 << 10, 64 << 10];
        o.queue_depths = vec![1, 4];
        o.runtime_per_point = Duration::from_millis(150);
        o.memory = memory;
        o.sync_io = sync_io;
        let mut seen = 0;
        let r = run_io_bench(&o, &mut |_| seen += 1).expect("sweep runs");
        assert_eq!(seen, r.points.len(), "on_point is called once per point");
        r
    }

    fn check_consistent(r: &IoBenchReport) {
        // 3 sizes x 2 depths x (read, write) + random read and write.
        assert_eq!(r.points.len(), 3 * 2 * 2 + 2);
        assert!(r.provenance_text.starts_with("measured on this machine"), "{}", r.provenance_text);
        for p in &r.points {
            assert!(p.ops > 0, "{p:?}");
            assert_eq!(p.bytes, p.ops * p.block_size_bytes as u64, "bytes = ops x bs: {p:?}");
            assert!(p.elapsed_s > 0.0);
            let (gb, iops) = (p.bytes as f64 / p.elapsed_s / 1e9, p.ops as f64 / p.elapsed_s);
            assert!((p.throughput_gb_per_s - gb).abs() <= 1e-9 * gb.max(1.0) && (p.iops - iops).abs() <= 1e-6 * iops, "{p:?}");
            let l = &p.latency;
            assert!(l.min_us <= l.p50_us && l.p50_us <= l.p99_us && l.p99_us <= l.p99_9_us && l.p99_9_us <= l.max_us, "percentiles ordered: {l:?}");
            assert!(l.min_us > 0.0 && l.mean_us >= l.min_us && l.mean_us <= l.max_us);
            if p.stopped_by == StopReason::Bytes {
                assert_eq!(p.bytes, 256 << 10, "one pass over the file: {p:?}");
            }
            if p.pattern.is_random() {
                assert_eq!((p.block_size_bytes, p.queue_depth), (4096, 1));
            }
        }
        let svg = r.render_svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 4, "two panels, two depths");
        let text = r.render();
        assert!(text.contains("measured on this machine") && text.contains("seq write") && text.contains("rand read"));
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["points"].as_array().unwrap().len(), r.points.len());
    }

    #[test]
    fn small_sweep_in_host_memory_is_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let r = small_sweep(dir.path(), BenchMemory::Host, false);
        check_consistent(&r);
        assert!(r.memory_domain.is_host());
        assert_eq!(r.laid_out_bytes, 256 << 10, "a new file is laid out first");
        assert_eq!(std::fs::metadata(dir.path().join("bench.dat")).unwrap().len(), 256 << 10);
        // A second run finds the file long enough.
        let again = small_sweep(dir.path(), BenchMemory::Host, false);
        assert_eq!(again.laid_out_bytes, 0);
    }

    #[test]
    fn an_existing_shorter_file_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.txt");
        let data = b"not a multiple of 4096 bytes of somebody's data\n".repeat(1000);
        std::fs::write(&path, &data).unwrap();
        let mut o = IoBenchOptions::new(path.clone(), 1 << 20);
        o.sequential = vec![Pattern::SequentialRead];
        o.random = vec![];
        let e = run_io_bench(&o, &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("does not extend an existing one") && e.contains("--size 45056"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), data, "the file was modified");
    }

    /// A file with holes gives read figures of zeros the file system makes up, not of storage:
    /// the report says so (it printed them as measured with no word); a written file has no such
    /// note, and a sweep without writes says nothing of what writes carry.
    #[test]
    fn a_sparse_file_is_said_to_measure_no_storage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse");
        std::fs::File::create(&path).unwrap().set_len(1 << 20).unwrap();
        let mut o = IoBenchOptions::new(path.clone(), 1 << 20);
        o.sequential = vec![Pattern::SequentialRead];
        o.random = vec![];
        o.block_sizes_bytes = vec![64 << 10];
        o.queue_depths = vec![1];
        o.runtime_per_point = Duration::from_millis(50);
        let r = run_io_bench(&o, &mut |_| {}).unwrap();
        assert!(r.notes.iter().any(|n| n.contains("has a hole (it is sparse) at byte 0")), "{:?}", r.notes);
        assert!(!r.render().contains("writes carry"), "{}", r.render());
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let r = run_io_bench(&o, &mut |_| {}).unwrap();
        assert!(!r.notes.iter().any(|n| n.contains("sparse")), "{:?}", r.notes);
        assert_eq!(std::fs::read(&path).unwrap(), vec![7u8; 1 << 20], "a read sweep wrote the file");
    }

    #[test]
    fn small_sweep_in_a_shm_region_is_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let shm = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        let r = small_sweep(dir.path(), BenchMemory::Shm { dir: shm.clone() }, false);
        check_consistent(&r);
        assert_eq!(r.memory_domain, MemoryDomain::Emulated { device: "shm".into() });
        assert!(matches!(r.provenance, Provenance::MeasuredEmulated), "the figures are the emulation's: {}", r.provenance_text);
        let leftovers = std::fs::read_dir(&shm).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with(&format!("peerpath-iobench-{}-", std::process::id()))).count();
        assert_eq!(leftovers, 0, "the shm file is unlinked once mapped");
    }

    #[test]
    fn small_sweep_with_plain_syscalls_is_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let r = small_sweep(dir.path(), BenchMemory::Host, true);
        check_consistent(&r);
        assert_eq!(r.io_path.engine, EngineKind::Syscalls);
        assert!(r.notes.iter().any(|n| n.contains("queue depth has no effect")));
    }

    #[test]
    fn p2p_memory_that_does_not_exist_is_a_memory_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = IoBenchOptions::new(dir.path().join("f"), 64 << 10);
        o.block_sizes_bytes = vec![4096];
        o.queue_depths = vec![1];
        o.memory = BenchMemory::P2p { device_dir: dir.path().join("0000:00:00.0") };
        let e = run_io_bench(&o, &mut |_| {}).unwrap_err();
        assert!(matches!(e, IoBenchError::Memory(RegionError::NotAProvider { .. })), "{e:?}");
    }

    #[test]
    fn block_devices_are_not_written() {
        let Some(dev) = ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0"].into_iter().map(PathBuf::from).find(|p| p.exists()) else {
            eprintln!("skipped: no block device node to point at");
            return;
        };
        let o = IoBenchOptions::new(dev, 1 << 20);
        let e = run_io_bench(&o, &mut |_| {}).unwrap_err();
        assert!(matches!(&e, IoBenchError::Usage(m) if m.contains("destroy its data")) || matches!(e, IoBenchError::File { .. }), "{e:?}");
    }

    #[test]
    fn the_point_loop_runs_on_a_fake_clock_and_engine() {
        // The same loop a simulator would drive: a sync engine on /dev/zero-like
        // file and a clock that advances 1 us per call.
        struct Ticks(std::cell::Cell<u64>);
        impl BenchClock for Ticks {
            fn now_ns(&self) -> u64 {
                let t = self.0.get() + 1000;
                self.0.set(t);
                t
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 64 << 10]).unwrap();
        let f = File::open(&path).unwrap();
        let mut engine = SyncEngine::<AlignedBuf>::new();
        let waker = Waker::new().unwrap();
        let spec = PointSpec { pattern: Pattern::SequentialRead, block_size_bytes: 4096, queue_depth: 2, queue_depth_in_flight: 2, span_bytes: 64 << 10, max_bytes: 64 << 10, runtime_ns: u64::MAX, seed: 1, warm_up: false };
        let bufs = vec![AlignedBuf::new(4096), AlignedBuf::new(4096)];
        let (bufs, r) = run_point(&mut engine, &waker, &Ticks(std::cell::Cell::new(0)), f.as_raw_fd(), &spec, bufs);
        let r = r.unwrap();
        assert_eq!(bufs.len(), 2, "buffers come back");
        assert_eq!((r.ops, r.bytes, r.stopped_by), (16, 64 << 10, StopReason::Bytes));
        assert!(r.latency.p50_us >= 1.0);
    }
}
