//! The CPU side of the compress executor: streams placed on the host CPU
//! (or handed over by a failed device) are read into a bounded pool of
//! aligned buffers, compressed into members by the worker threads, and
//! written in order through each target's writer.

use crate::buf::{BufferCache, JobBuf};
use crate::error::Result;
use crate::report::MemoryReport;
use crate::stream::Stream;
use crate::token::Token;
use crate::workers::WorkerPool;
use peerpath_func::{encode_member, member_bound_bytes, Format, Level};
use peerpath_io::{IoEngine, IoOp, Waker};
use peerpath_mem::{align_up, AlignedBuf, BufferPool, PooledBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{CpuAccount, CpuRole, Ledger, Location, Mover, Purpose};
use std::os::fd::AsRawFd;

/// Reads on the CPU path: one transparent huge page, so a read buffer is
/// one TLB entry; not bigger, as every buffer is memory the job touches
/// once (docs/tuning.md#cpu-read-size).
const CPU_READ_BYTES: usize = 2 << 20;
const CPU_READ_POOL_BYTES: usize = 64 << 20;

/// The CPU path's read size: [`CPU_READ_BYTES`], or `$PEERPATH_CPU_READ_BYTES`
/// (a power of two from 64 KiB to 64 MiB) for A/B runs (bench/disk-ab.sh).
fn cpu_read_bytes() -> usize {
    std::env::var("PEERPATH_CPU_READ_BYTES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| n.is_power_of_two() && (64 << 10..=64 << 20).contains(n))
        .unwrap_or(CPU_READ_BYTES)
}

/// What the CPU pass needs to know of the job.
pub(crate) struct CpuParams {
    pub threads: usize,
    pub queue_depth: usize,
    pub member_bytes: usize,
    /// The device path's read size: the CPU reads at least this much.
    pub device_chunk_bytes: usize,
    pub format: Format,
    pub level: Level,
}

/// Whether the compute workers read a stream's chunks themselves: where
/// its source is a file of a memory file system (a read is the kernel's
/// copy from its pages, on whichever thread asks) of a known size. The I/O
/// engine would run those copies on io_uring's kernel workers, which at as
/// many compute workers as cores wait for a core while the workers wait
/// for their input (bench/results/2026-11-27-scaling-16cpu: workers short
/// of input 0.052 s of 0.179 at 16 threads). `PEERPATH_WORKER_READS=0`
/// keeps the engine's reads (docs/tuning.md#worker-reads).
pub(crate) fn worker_reads(s: &Stream) -> bool {
    s.size.is_some() && !s.sequential_read && s.source.in_memory() && worker_reads_setting() != Some(false)
}

/// `PEERPATH_WORKER_READS`, for A/B runs: `0` leaves reads of memory files
/// to the I/O engine, `1` has the workers read them; otherwise `None`
/// (each job's own policy).
pub(crate) fn worker_reads_setting() -> Option<bool> {
    match std::env::var_os("PEERPATH_WORKER_READS")?.to_str()? {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// A chunk compressed by a worker.
struct Done {
    stream: usize,
    seq: u64,
    input: PooledBuf,
    output: AlignedBuf,
    members: u64,
    /// Where the worker read the chunk itself: what `pread` returned.
    read: Option<std::io::Result<usize>>,
}

pub(crate) struct CpuPass {
    workers: WorkerPool<Done>,
    pool: BufferPool,
    cache: BufferCache,
    /// Chunks anywhere in the pipeline, at most `slots`.
    in_pipeline: usize,
    slots: usize,
    /// Streams begun and not yet read to their end, at most this many.
    window: usize,
    chunk_bytes: usize,
    out_bytes: usize,
    member_bytes: usize,
    format: Format,
    level: Level,
    queue_depth: usize,
    /// One read a pass (see `issue_reads`).
    blocking: bool,
    pub done_bytes: u64,
}

impl CpuPass {
    /// Starts the workers and maps the read pool for a job of `stream_count`
    /// streams; memory that cannot be mapped, or a thread that cannot start,
    /// is the job's error.
    pub fn new(p: &CpuParams, stream_count: usize, blocking: bool, waker: Waker, cpu: CpuAccount) -> Result<CpuPass> {
        let threads = p.threads.max(1);
        // Streams read at once: a worker's worth and one, whatever the job's count (a
        // thousand files are read a few at a time, in the pool of a few).
        let window = stream_count.min(threads + 1);
        // Chunks in the pipeline (being read, compressed, or waiting their turn
        // to be written): two per worker and one read ahead; more only buffers
        // (docs/tuning.md#pipeline-slots); two for each stream being read, so
        // that each has one to read while another waits its turn to be written.
        let slots = (threads * 2 + 1).max(window * 2);
        // The CPU reads 2 MiB chunks while the pool stays within 64 MiB or
        // (2T + 1) x 2 MiB, else the device path's size.
        let mut chunk_bytes = p.device_chunk_bytes;
        let read_bytes = cpu_read_bytes();
        if slots * read_bytes <= CPU_READ_POOL_BYTES.max((threads * 2 + 1) * read_bytes) {
            chunk_bytes = crate::compress::read_chunk_bytes(p.member_bytes, read_bytes).0.max(chunk_bytes);
        }
        let pool = BufferPool::try_new(slots, chunk_bytes).map_err(crate::buf::out_of_memory)?;
        Ok(CpuPass {
            workers: WorkerPool::new(threads, waker, cpu)?,
            pool,
            cache: BufferCache::new(slots * 2 + 4),
            in_pipeline: 0,
            slots,
            window,
            chunk_bytes,
            out_bytes: chunk_bytes.div_ceil(p.member_bytes) * member_bound_bytes(p.member_bytes),
            member_bytes: p.member_bytes,
            format: p.format,
            level: p.level,
            queue_depth: p.queue_depth.max(1),
            blocking,
            done_bytes: 0,
        })
    }

    /// Tasks with the workers.
    pub fn in_flight(&self) -> usize {
        self.workers.in_flight()
    }

    /// What the CPU pass has in flight now.
    pub fn in_flight_now(&self, streams: &[Stream]) -> peerpath_metrics::InFlight {
        let on_cpu = || streams.iter().filter(|s| s.on_cpu);
        peerpath_metrics::InFlight {
            tasks: self.workers.in_flight(),
            reads: on_cpu().map(|s| s.cpu.reads_in_flight).sum(),
            writes: on_cpu().filter_map(|s| s.writer.as_ref()).map(|w| w.writes_in_flight).sum(),
        }
    }

    /// What keeps the CPU pass from doing more while the orchestrator waits:
    /// the workers (good: compute-bound), reads, the ordered writer, writes.
    /// `now`: what `in_flight_now` just said.
    pub fn held_by(&self, streams: &[Stream], now: peerpath_metrics::InFlight) -> &'static str {
        let all_read = streams.iter().filter(|s| s.on_cpu).all(|s| s.cpu.read_done);
        if now.tasks >= self.workers.threads() {
            "workers all busy"
        } else if now.reads > 0 && self.in_pipeline < self.slots {
            "reads (workers short of input)"
        } else if self.in_pipeline >= self.slots {
            "pipeline full (chunks waiting for the ordered writer)"
        } else if now.writes > 0 || all_read {
            "writes and the last chunks"
        } else {
            "other"
        }
    }

    /// Where the pipeline stands, for an error that must say it.
    pub fn state(&self) -> String {
        format!("{} of {} chunks in the pipeline", self.in_pipeline, self.slots)
    }

    /// A stream the CPU starts on: an empty source still gets one (empty)
    /// member, now where a buffer is free, else from [`CpuPass::issue_reads`].
    pub fn start_stream(&mut self, streams: &mut [Stream], i: usize) -> Result<()> {
        if self.in_pipeline < self.slots {
            self.start_empty(&mut streams[i], i)?;
        }
        Ok(())
    }

    /// An empty source's one member, given a free buffer: whether it began.
    fn start_empty(&mut self, s: &mut Stream, i: usize) -> Result<bool> {
        if s.size != Some(0) || s.cpu.read_done || s.finished() {
            return Ok(false);
        }
        let Some(buf) = self.pool.try_get() else { return Ok(false) };
        s.cpu.read_done = true;
        s.cpu.chunks = Some(1);
        s.cpu.next_seq = 1;
        self.in_pipeline += 1;
        self.dispatch(i, 0, buf)?;
        Ok(true)
    }

    fn dispatch(&mut self, stream: usize, seq: u64, input: PooledBuf) -> Result<()> {
        self.dispatch_reading(stream, seq, input, None)
    }

    /// A chunk to compress; with `read` (descriptor, offset, length) the
    /// worker reads it into `input` first.
    fn dispatch_reading(&mut self, stream: usize, seq: u64, mut input: PooledBuf, read: Option<(std::os::fd::RawFd, u64, usize)>) -> Result<()> {
        let mut output = self.cache.get(self.out_bytes)?;
        let (format, level, member_bytes) = (self.format, self.level, self.member_bytes);
        self.workers.submit(move |local| {
            let read = read.map(|(fd, offset, len)| {
                let r = peerpath_io::pread_full(fd, &mut input.spare_mut()[..len], offset);
                input.set_len(*r.as_ref().unwrap_or(&0));
                r
            });
            if matches!(read, Some(Err(_))) {
                return Done { stream, seq, input, output, members: 0, read };
            }
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
            Done { stream, seq, input, output, members, read }
        });
        Ok(())
    }

    /// Compressed chunks back from the workers, then every stream's chunks
    /// written in order (and each finished stream's writer finished).
    pub fn take_results(&mut self, streams: &mut [Stream], engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger) -> Result<()> {
        for d in self.workers.try_results()? {
            if let Some(read) = d.read {
                let s = &mut streams[d.stream];
                let offset = s.cpu.first_offset + d.seq * self.chunk_bytes as u64;
                let n = crate::job::check_read(&s.source.path, read, offset, self.chunk_bytes, s.size)?;
                s.bytes_in += n as u64;
                crate::record_read_by(ledger, &s.source.path, s.source_via, d.input.domain(), n as u64, CpuRole::Compute);
            }
            ledger.record(
                Location::memory(d.input.domain()),
                Location::memory(d.output.domain()),
                Mover::Cpu { role: CpuRole::Compute },
                Purpose::Function,
                d.input.len() as u64,
                d.output.len() as u64,
            );
            self.done_bytes += d.input.len() as u64;
            drop(d.input); // back to the pool: another read may start
            streams[d.stream].cpu.ready.insert(d.seq, (d.output, d.members));
        }
        for (i, s) in streams.iter_mut().enumerate().filter(|(_, s)| s.on_cpu) {
            self.write_ready(s, i, engine, ledger)?;
        }
        Ok(())
    }

    fn write_ready(&mut self, s: &mut Stream, i: usize, engine: &mut dyn IoEngine<JobBuf>, ledger: &Ledger) -> Result<()> {
        while let Some((out, members)) = s.cpu.ready.remove(&s.cpu.next_write_seq) {
            let w = s.writer.as_mut().expect("writer open");
            // Packed into aligned staging for O_DIRECT; written as is otherwise.
            w.push_owned(out, engine, &mut self.cache, Token::write(i), ledger)?;
            s.members += members;
            s.cpu.next_write_seq += 1;
            self.in_pipeline -= 1;
        }
        if !s.cpu.writer_finished && s.cpu.chunks == Some(s.cpu.next_write_seq) {
            let w = s.writer.as_mut().expect("writer open");
            // What ends the stream: peerpath's end member, BGZF's end-of-file block.
            w.push_metadata(self.format.end_marker(), engine, &mut self.cache, Token::write(i), ledger)?;
            w.finish(engine, Token::write(i), ledger)?;
            s.cpu.writer_finished = true;
        }
        Ok(())
    }

    /// Keeps reads going, round robin over the CPU's streams, within the
    /// pipeline bound; one read a pass where a read blocks (a blocking
    /// engine, or a buffer's first use, which faults its pages in): the chunk
    /// just read reaches a worker first (docs/tuning.md#one-read-a-pass).
    pub fn issue_reads(&mut self, streams: &mut [Stream], engine: &mut dyn IoEngine<JobBuf>) -> Result<()> {
        let mut progressed = true;
        let mut pass_over = false;
        // Streams begun and not read to their end; the next begins when one is (in order).
        let begun = |s: &Stream| s.on_cpu && s.cpu.next_seq > 0 && !s.cpu.read_done;
        let mut reading = streams.iter().filter(|s| begun(s)).count();
        while progressed && self.in_pipeline < self.slots && !pass_over {
            progressed = false;
            for (i, s) in streams.iter_mut().enumerate() {
                if !s.on_cpu || self.in_pipeline >= self.slots || !s.can_read(self.queue_depth) || pass_over {
                    continue;
                }
                if s.size == Some(0) {
                    progressed |= self.start_empty(s, i)?;
                    continue;
                }
                let new = s.cpu.next_seq == 0;
                if new && reading >= self.window {
                    continue;
                }
                let Some(buf) = self.pool.try_get() else { break };
                let offset = s.cpu.next_read_offset;
                let mut len = self.chunk_bytes;
                if let Some(size) = s.size {
                    let remaining = (size - offset) as usize;
                    len = len.min(if s.source.direct { align_up(remaining, DIRECT_IO_ALIGN_BYTES) } else { remaining });
                }
                if s.cpu.worker_reads {
                    // The worker reads it (nothing blocks here). The stream,
                    // and with it the descriptor, outlives the pass, whose
                    // workers are joined first.
                    let (seq, fd) = (s.cpu.next_seq, s.source.file.as_raw_fd());
                    self.dispatch_reading(i, seq, buf, Some((fd, offset, len)))?;
                } else {
                    pass_over = self.blocking || buf.first_use();
                    let token = Token::Read { stream: i, seq: s.cpu.next_seq }.raw();
                    let at = (!s.sequential_read).then_some(offset);
                    engine
                        .submit(IoOp::Read, s.source.file.as_raw_fd(), at, len, JobBuf::Pooled(buf), token)
                        .map_err(|(_, e)| crate::JobError::SourceIo { path: s.source.path.clone(), detail: e.to_string() })?;
                    s.cpu.reads_in_flight += 1;
                }
                s.cpu.next_seq += 1;
                s.cpu.next_read_offset += self.chunk_bytes as u64;
                self.in_pipeline += 1;
                progressed = true;
                if s.size.is_some_and(|size| s.cpu.next_read_offset >= size) {
                    s.cpu.read_done = true;
                    s.cpu.chunks = Some(s.cpu.next_seq);
                }
                match (new, begun(s)) {
                    (true, true) => reading += 1,
                    (false, false) => reading -= 1,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A read of stream `i` completed: its chunk goes to a worker.
    pub fn on_read(&mut self, s: &mut Stream, i: usize, seq: u64, result: std::io::Result<usize>, buf: JobBuf, ledger: &Ledger) -> Result<()> {
        s.cpu.reads_in_flight -= 1;
        let offset = s.cpu.first_offset + seq * self.chunk_bytes as u64;
        let n = crate::job::check_read(&s.source.path, result, offset, self.chunk_bytes, s.size)?;
        let JobBuf::Pooled(mut buf) = buf else { unreachable!("CPU reads use pool buffers") };
        buf.set_len(n);
        s.bytes_in += n as u64;
        crate::record_read(ledger, &s.source.path, s.source_via, buf.domain(), n as u64);
        if n < self.chunk_bytes && s.size.is_none() {
            s.cpu.read_done = true; // a stream ended
            if n == 0 && seq > 0 {
                s.cpu.chunks = Some(seq);
                self.in_pipeline -= 1;
                return Ok(());
            }
            s.cpu.chunks = Some(seq + 1);
        }
        self.dispatch(i, seq, buf)
    }

    /// A write of stream `s` completed.
    pub fn on_write(&mut self, s: &mut Stream, result: std::io::Result<usize>, buf: JobBuf) -> Result<()> {
        s.writer.as_mut().expect("writer open").on_write_complete(result, buf, &mut self.cache)
    }

    /// Joins the workers (which charge their CPU time) and says what memory
    /// the pass held and where its time went (`clock`: the orchestrator's).
    pub fn finish(self, clock: &mut peerpath_metrics::PipelineClock) -> (MemoryReport, peerpath_metrics::PipelineReport) {
        let threads = self.workers.threads();
        let times = self.workers.times.clone();
        drop(self.workers);
        (MemoryReport::new(&self.pool.stats(), self.cache.peak_allocated_bytes), clock.report(threads, &times))
    }
}
