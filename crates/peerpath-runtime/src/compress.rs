//! The compression job: sources -> aligned reads -> compute workers ->
//! ordered, packed, aligned writes -> targets renamed into place.
//!
//! One orchestration thread (the caller's) runs one I/O engine for every
//! source and target of the job, so several files are compressed at once
//! (the case study read 12 sources and wrote 6 targets). Bounded: a fixed
//! pool of read buffers, and at most that many blocks anywhere in the
//! pipeline.

use crate::buf::{BufferCache, JobBuf};
use crate::error::{JobError, Result};
use crate::job::{check_target, is_std_stream, open_source_checked, open_target, set_engine, CommonOptions};
use crate::report::{FileReport, JobReport, JobSummary, MemoryReport};
use crate::workers::WorkerPool;
use crate::writer::TargetWriter;
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, BGZF_EOF_BLOCK, BGZF_MAX_INPUT_BYTES};
use peerpath_io::{choose_engine, Completion, IoEngine, IoOp, IoPath, OpenedFile, SourceKind, Waker};
use peerpath_mem::{align_up, AlignedBuf, BufferPool, PooledBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{thread_cpu_now, CpuAccount, CpuRole, Ledger, Location, Mover, Purpose};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Clone)]
pub struct CompressOptions {
    pub common: CommonOptions,
    pub level: Level,
    pub format: Format,
    /// Uncompressed bytes per member (gzip format; BGZF uses 0xff00).
    pub block_size: usize,
}

pub const DEFAULT_BLOCK_BYTES: usize = 1 << 20;
const MIN_READ_BYTES: usize = 1 << 20;
const MAX_READ_BYTES: usize = 64 << 20;
const WRITE_BIT: u64 = 1 << 63;

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Bytes per read: a whole number of members, aligned for O_DIRECT, at least
/// 1 MiB. `None` when no such size is at most 64 MiB (odd block sizes):
/// then reads go through the page cache.
pub fn read_chunk_bytes(member_bytes: usize) -> (usize, bool) {
    let lcm = member_bytes / gcd(member_bytes, DIRECT_IO_ALIGN_BYTES) * DIRECT_IO_ALIGN_BYTES;
    if lcm <= MAX_READ_BYTES {
        (lcm * MIN_READ_BYTES.div_ceil(lcm).max(1), true)
    } else {
        (member_bytes * MIN_READ_BYTES.div_ceil(member_bytes).max(1), false)
    }
}

struct Done {
    stream: usize,
    seq: u64,
    input: PooledBuf,
    output: AlignedBuf,
    members: u64,
}

struct Stream {
    source: OpenedFile,
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
}

impl Stream {
    fn can_read(&self, qd_per_stream: usize) -> bool {
        !self.read_done && self.reads_in_flight < if self.sequential_read { 1 } else { qd_per_stream }
    }
    fn finished(&self) -> bool {
        self.writer_finished && self.writer.as_ref().is_none_or(|w| w.writes_in_flight == 0)
    }
}

/// Compresses each source into its target. On failure every partial target
/// is removed and no source is touched.
pub fn compress(pairs: &[(PathBuf, PathBuf)], opts: &CompressOptions) -> Result<JobReport> {
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
    let (chunk_bytes, chunk_aligned) = read_chunk_bytes(member_bytes);
    let mut fallbacks = Vec::new();
    for (s, t) in pairs {
        check_target(s, t, opts.common.force)?;
    }
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
        let (writer, write_path) = match open_target(target, opts.common.direct) {
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
        });
    }
    let any_pipe = streams.iter().any(|s| s.sequential_read || s.writer.as_ref().is_some_and(|w| is_std_stream(&w.final_path)));
    let qd = opts.common.queue_depth.max(1);
    let (mut engine, engine_note) = choose_engine::<JobBuf>(qd * pairs.len().max(1) as u32 + 4, opts.common.sync_io || any_pipe);
    let engine_note = if any_pipe && !opts.common.sync_io { Some("pipes need ordered reads and writes; using read/write".into()) } else { engine_note };
    if let Some(n) = &engine_note {
        fallbacks.push(format!("I/O engine: {n}"));
    }
    for s in streams.iter_mut() {
        set_engine(&mut s.read_path, engine.kind(), &engine_note);
        set_engine(&mut s.write_path, engine.kind(), &engine_note);
        if let Some(r) = &s.read_path.fallback_reason {
            if s.read_path.engine == peerpath_io::EngineKind::IoUring || !s.read_path.direct {
                fallbacks.push(format!("{}: reads without O_DIRECT: {r}", s.source_name));
            }
        }
        if let (false, Some(r)) = (s.write_path.direct, &s.write_path.fallback_reason) {
            fallbacks.push(format!("{}: writes without O_DIRECT: {r}", s.writer.as_ref().expect("open").final_path.display()));
        }
    }
    let result = run(&mut streams, engine.as_mut(), opts, member_bytes, chunk_bytes);
    drop(engine); // all I/O is done (or, on error, waited for)
    let mut job = match result {
        Ok(job) => job,
        Err(e) => {
            abandon(&mut streams);
            return Err(e);
        }
    };
    // Make the targets durable and visible.
    for s in streams.iter_mut() {
        let w = s.writer.take().expect("writer present");
        let target = w.final_path.display().to_string();
        let bytes_out = w.logical_len;
        if let Err(e) = w.complete() {
            abandon(&mut streams);
            return Err(e);
        }
        job.files.push(FileReport {
            source: s.source_name.clone(),
            target: Some(target),
            bytes_in: s.bytes_in,
            bytes_out,
            members: s.members,
            read_path: s.read_path.clone(),
            write_path: Some(s.write_path.clone()),
            decode_mode: None,
        });
    }
    job.fallbacks = fallbacks;
    job.wall = start.elapsed();
    Ok(JobReport::measured_host(job))
}

fn run(streams: &mut [Stream], engine: &mut dyn IoEngine<JobBuf>, opts: &CompressOptions, member_bytes: usize, chunk_bytes: usize) -> Result<JobSummary> {
    let cpu = CpuAccount::start();
    let orchestration_start = thread_cpu_now();
    let ledger = Ledger::new();
    let waker = Waker::new().map_err(|e| JobError::Internal(format!("eventfd: {e}")))?;
    let threads = opts.common.threads.max(1);
    let mut workers: WorkerPool<Done> = WorkerPool::new(threads, waker.clone(), cpu.clone());
    let qd = opts.common.queue_depth.max(1) as usize;
    let slots = (threads * 2 + qd).max(streams.len() * 2);
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
        if s.size == Some(0) {
            s.read_done = true;
            s.chunks = Some(1);
            s.next_seq = 1;
            in_pipeline += 1;
            dispatch(&mut workers, &mut cache, i, 0, pool.get());
        }
    }

    loop {
        // 1. Keep reads going, round robin, within the pipeline bound.
        let mut progressed = true;
        while progressed && in_pipeline < slots {
            progressed = false;
            for (i, s) in streams.iter_mut().enumerate() {
                if in_pipeline >= slots || !s.can_read(qd) {
                    continue;
                }
                let Some(buf) = pool.try_get() else { break };
                let offset = s.next_read_offset;
                let mut len = chunk_bytes;
                if let Some(size) = s.size {
                    let remaining = (size - offset) as usize;
                    len = len.min(if s.source.direct { align_up(remaining, DIRECT_IO_ALIGN_BYTES) } else { remaining });
                }
                let token = ((i as u64) << 32) | s.next_seq;
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

        // 2. Compressed chunks back from the workers, written in order.
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
                // Packed into aligned staging for O_DIRECT; written as is otherwise.
                w.push_owned(out, engine, &mut cache, WRITE_BIT | i as u64, &ledger)?;
                s.members += members;
                s.next_write_seq += 1;
                in_pipeline -= 1;
            }
            if !s.writer_finished && s.chunks == Some(s.next_write_seq) {
                let w = s.writer.as_mut().expect("writer open");
                if format == Format::Bgzf {
                    let host = peerpath_mem::MemoryDomain::Host { numa_node: None };
                    w.push(&BGZF_EOF_BLOCK, engine, &mut cache, WRITE_BIT | i as u64, &ledger, &host)?;
                }
                w.finish(engine, WRITE_BIT | i as u64, &ledger)?;
                s.writer_finished = true;
            }
        }
        if let Some(p) = &opts.common.progress {
            p(done_bytes, total_known);
        }
        if streams.iter().all(|s| s.finished()) {
            break;
        }

        // 3. Sleep until I/O completes or a worker finishes.
        completions.clear();
        engine.wait(&mut completions, &waker).map_err(|e| JobError::Internal(format!("I/O wait failed: {e}")))?;
        for c in completions.drain(..) {
            let stream = if c.op == IoOp::Write { (c.token & !WRITE_BIT) as usize } else { (c.token >> 32) as usize };
            let s = &mut streams[stream];
            if c.op == IoOp::Write {
                s.writer.as_mut().expect("writer open").on_write_complete(c.result, c.buf, &mut cache)?;
                continue;
            }
            s.reads_in_flight -= 1;
            let seq = c.token & 0xffff_ffff;
            let n = c.result.map_err(|e| JobError::SourceIo { path: s.source.path.clone(), detail: e.to_string() })?;
            let JobBuf::Pooled(mut buf) = c.buf else { unreachable!("reads use pool buffers") };
            let offset = seq * chunk_bytes as u64;
            if let Some(size) = s.size {
                let expected = (size - offset).min(chunk_bytes as u64) as usize;
                if n != expected {
                    return Err(JobError::SourceIo {
                        path: s.source.path.clone(),
                        detail: format!("read {n} bytes at offset {offset}, expected {expected}: did the source shrink while being read?"),
                    });
                }
            }
            buf.set_len(n);
            s.bytes_in += n as u64;
            crate::record_read(&ledger, &s.source_name, s.source.direct, buf.domain(), n as u64);
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
    cpu.charge_thread(CpuRole::Orchestration, orchestration_start);
    drop(workers); // joins the workers, which charge their CPU time
    let pool_stats = pool.stats();
    Ok(JobSummary {
        operation: "compress",
        engine: format!("host CPU, {} (level {})", level.library(), level.get()),
        format: match format {
            Format::Gzip => "gzip (multi-member, 'PP' size subfield)".into(),
            Format::Bgzf => "BGZF (htslib)".into(),
        },
        level: Some(level.get()),
        block_size_bytes: Some(member_bytes),
        threads,
        queue_depth: qd as u32,
        files: Vec::new(),
        fallbacks: Vec::new(),
        wall: std::time::Duration::ZERO, // set by the caller once the targets are in place
        cpu,
        ledger: ledger.summary(),
        memory: MemoryReport {
            read_pool_bytes: pool_stats.total_bytes,
            read_pool_buffers: pool_stats.buffer_count,
            peak_owned_buffer_bytes: cache.peak_allocated_bytes,
        },
    })
}
