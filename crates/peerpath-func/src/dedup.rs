//! Content-defined chunking and fingerprints (the CPU oracle of the
//! deduplication function): FastCDC (2020, normalised, the `fastcdc`
//! crate) cuts a stream where its content says, so an insertion moves only
//! the chunks around it; each chunk is named by its BLAKE3 (or SHA-256)
//! digest.

use std::io::Read;

/// Chunk sizes in bytes: FastCDC cuts no chunk shorter than `min` (but the
/// last) nor longer than `max`, and aims at `avg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkParams {
    pub min: usize,
    pub avg: usize,
    pub max: usize,
}

impl Default for ChunkParams {
    /// 16 KiB / 64 KiB / 256 KiB (the sizes restic and FastCDC's paper use around 8-64 KiB).
    fn default() -> Self {
        ChunkParams { min: 16 << 10, avg: 64 << 10, max: 256 << 10 }
    }
}

impl ChunkParams {
    /// Checks the sizes against what FastCDC takes (min 64 B-1 MiB, avg 256 B-4 MiB, max 1 KiB-16 MiB, min <= avg <= max,
    /// each even: the crate asserts that in debug builds and cuts outside its contract without).
    pub fn new(min: usize, avg: usize, max: usize) -> Result<ChunkParams, String> {
        use fastcdc::v2020::{AVERAGE_MAX, AVERAGE_MIN, MAXIMUM_MAX, MAXIMUM_MIN, MINIMUM_MAX, MINIMUM_MIN};
        let ok = (MINIMUM_MIN..=MINIMUM_MAX).contains(&min) && (AVERAGE_MIN..=AVERAGE_MAX).contains(&avg) && (MAXIMUM_MIN..=MAXIMUM_MAX).contains(&max) && min <= avg && avg <= max;
        if ok && [min, avg, max].iter().all(|n| n % 2 == 0) {
            Ok(ChunkParams { min, avg, max })
        } else {
            Err(format!(
                "chunk sizes min {min}, avg {avg}, max {max}: need {MINIMUM_MIN} <= min <= {MINIMUM_MAX}, {AVERAGE_MIN} <= avg <= {AVERAGE_MAX}, {MAXIMUM_MIN} <= max <= {MAXIMUM_MAX}, min <= avg <= max, each even"
            ))
        }
    }
}

/// How chunks are named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fingerprint {
    Blake3,
    Sha256,
}

impl Fingerprint {
    pub fn name(self) -> &'static str {
        match self {
            Fingerprint::Blake3 => "blake3",
            Fingerprint::Sha256 => "sha256",
        }
    }

    pub fn parse(s: &str) -> Option<Fingerprint> {
        match s {
            "blake3" => Some(Fingerprint::Blake3),
            "sha256" => Some(Fingerprint::Sha256),
            _ => None,
        }
    }

    /// The 32-byte digest of `data`.
    pub fn digest(self, data: &[u8]) -> [u8; 32] {
        match self {
            Fingerprint::Blake3 => *blake3::hash(data).as_bytes(),
            Fingerprint::Sha256 => aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data).as_ref().try_into().expect("32 bytes"),
        }
    }
}

/// One chunk of a stream: where it starts, its bytes and its digest.
#[derive(Debug)]
pub struct Chunk {
    pub offset: u64,
    pub digest: [u8; 32],
    /// Found from the chunk before's [`Successor`] (hashed, not cut).
    pub predicted: bool,
    /// The chunk's bytes: `block[range]` (a block of the source shared by its chunks).
    block: std::sync::Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
}

impl Chunk {
    pub fn data(&self) -> &[u8] {
        &self.block[self.range.clone()]
    }
}

/// The chunks of `source`, in order, each with its digest.
pub fn chunks<R: Read>(source: R, p: ChunkParams, fp: Fingerprint) -> impl Iterator<Item = std::io::Result<Chunk>> {
    fastcdc::v2020::StreamCDC::new(source, p.min, p.avg, p.max).map(move |c| match c {
        Ok(c) => Ok(Chunk { offset: c.offset, digest: fp.digest(&c.data), predicted: false, range: 0..c.data.len(), block: std::sync::Arc::new(c.data) }),
        Err(fastcdc::v2020::Error::IoError(e)) => Err(e),
        Err(e) => Err(std::io::Error::other(e.to_string())),
    })
}

/// What followed a chunk where a store saw it (RapidCDC's next-chunk hint, Ni et
/// al., SoCC 2019): the next chunk's digest and length, and the byte after
/// that chunk (the first of the one after it: the byte whose hash made FastCDC
/// cut there). Only chunks cut by their content or at `max` are successors, not
/// the last of a file (cut by its end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Successor {
    pub digest: [u8; 32],
    pub len: usize,
    pub after: u8,
}

/// Where [`chunks_parallel`] asks what followed a chunk before (a store's index).
pub trait Successors: Send + Sync {
    fn successor(&self, digest: &[u8; 32]) -> Option<Successor>;
    /// What followed a chunk just cut (hints that learn keep it; a store's do not).
    fn learn(&self, _digest: [u8; 32], _next: Successor) {}
}

/// The chunk at `at` of `data`, found from the chunk before's successor `s`
/// without cutting: taken only where FastCDC would cut it there too. A cut
/// depends on the bytes from the chunk's start to the byte after it (the cut
/// is where that byte's gear hash first passes the mask: the stricter one up to
/// `avg` from the chunk's start, or up to the data's end where that is nearer,
/// which cannot move a cut with two bytes after it), and on the data going on
/// past that byte: the crate tests bytes
/// in pairs, so where the data ends just after an even-length chunk's next
/// byte, that byte is never tested and the chunk takes it. So `s` holds where
/// two bytes or more follow it (in this block: the stream has at least as
/// many), its bytes are the successor's (the digest), and so is the byte after
/// it (unless it was cut at `max`, which depends on no byte after it). Its
/// digest is the price of a wrong guess (an edit), as RapidCDC's checked
/// fast-forward pays.
fn predicted(data: &[u8], at: usize, s: Successor, p: ChunkParams, fp: Fingerprint) -> Option<Successor> {
    let fits = (p.min..=p.max).contains(&s.len) && data.len() >= at + s.len + 2;
    (fits && (s.len == p.max || data[at + s.len] == s.after) && fp.digest(&data[at..at + s.len]) == s.digest).then_some(s)
}

/// The hints [`chunks_parallel`] cuts with: what followed each chunk earlier
/// in the same stream (learned by the cutting threads as they cut, [`chain`]),
/// then the caller's. A stream that repeats itself (an archive of several versions of
/// a tree, an image with copies of a file, the corpus followed by an edited
/// copy of itself) is then hashed more than cut where it repeats, even with
/// nothing stored before. What is learned is exact, as a store's successors
/// are: a successor's length is FastCDC's cut from the successor's start,
/// whatever came before it (so a thread's chain learns before it meets the
/// stream's too), and it is checked where taken ([`predicted`]).
/// Bounded: at most [`LEARNED_MAX`] successors, forgotten all at once when full.
struct Learned {
    caller: Option<std::sync::Arc<dyn Successors>>,
    seen: std::sync::Mutex<std::collections::HashMap<[u8; 32], Successor>>,
}

/// Successors [`Learned`] holds at most: about 80 bytes each, 21 MB in all;
/// 16 GiB of a stream at the default 64 KiB average, 2 GiB at 8 KiB.
const LEARNED_MAX: usize = 1 << 18;

impl Successors for Learned {
    fn successor(&self, digest: &[u8; 32]) -> Option<Successor> {
        let here = self.seen.lock().unwrap_or_else(|p| p.into_inner()).get(digest).copied();
        here.or_else(|| self.caller.as_ref()?.successor(digest))
    }

    fn learn(&self, digest: [u8; 32], next: Successor) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() >= LEARNED_MAX && !seen.contains_key(&digest) {
            seen.clear();
        }
        seen.insert(digest, next);
    }
}

/// [`chunks`] of a file on `threads` threads: the same chunks in the same
/// order, cut and hashed in parallel. With `hints`, a chunk whose successor
/// the hints know and that holds here is taken without cutting ([`Successor`]):
/// a stream much like one stored before is then hashed more than cut; so is
/// a stream where it repeats its own earlier chunks ([`Learned`]).
///
/// FastCDC is serial (each cut depends on where the chunk began), but a
/// chunk's end depends only on the bytes from its start, and two chains of
/// cuts begun at different places meet within a few chunks and then agree.
/// So the file is read in blocks of up to `threads` segments (a thread of
/// its own reads the next block, a segment per thread by `pread`, and puts
/// the last `max` bytes of the one before in front of it), and every
/// segment is a job for a pool of `threads` cutting threads: cut from a
/// little before the segment ([`lead_in`]; the first segment of a block
/// from the bytes put in front) to the first cut past it, hashing the
/// chunks that start in it while they are in the cache. A joining thread
/// then checks the joins in order: where the stream's chain of cuts
/// (exact, from where the block before left off) reaches a segment's cut,
/// it takes that segment's chunks; where it does not, the chunk is cut
/// again there, one at a time, until it does (where chains never meet, as
/// in a long run of one byte, that walks the whole segment: in a run, by
/// counting ([`Cuts`])). The chunk reaching a block's end is the next
/// block's first: its bytes are already there. No block waits for the one
/// before to be joined, so the pool cuts the next block while the slowest
/// segment of this one is finished (before, each block was a barrier: on
/// two cores, two cutting threads were slower than one).
///
/// Memory: blocks of `threads` x [`segment_len`] bytes (at most 32 MiB, or
/// `threads` segments of 4 of the largest chunks) plus `max`; chunks share
/// their block, and a block is read into again once its chunks are dropped.
/// About five blocks are alive at a time: one being read, two being cut,
/// one on its way to the caller, the caller's. Threads are capped so that
/// each has at least 1 MiB and 4 of the largest chunks
/// ([`cutting_threads`]). A source that is neither a regular file nor a
/// block device (a pipe) is read in order. A regular file of one segment
/// or less is read and cut on the calling thread: no thread is started
/// for it (a store of many small files spent most of its time starting
/// threads and handing each file between them).
///
/// A thread that cannot start (the thread limit) ends the chunks with an
/// error holding a [`CannotStartThread`] (`std::io::Error::get_ref`), not one
/// of reading the source.
pub fn chunks_parallel(file: std::fs::File, p: ChunkParams, fp: Fingerprint, threads: usize, hints: Option<std::sync::Arc<dyn Successors>>) -> impl Iterator<Item = std::io::Result<Chunk>> {
    let threads = cutting_threads(p, threads);
    let seg = segment_len(p, threads);
    let learned = std::sync::Arc::new(Learned { caller: hints, seen: std::sync::Mutex::default() });
    let (mut block, mut failed, mut rx) = match cut_small(&file, p, fp, seg, &learned) {
        Some(Ok(chunks)) => (chunks.into_iter(), None, None),
        Some(Err(e)) => (Vec::new().into_iter(), Some(e), None),
        None => {
            let (rx, failed) = start_cutting(file, p, fp, threads, seg, learned);
            (Vec::new().into_iter(), failed, Some(rx))
        }
    };
    std::iter::from_fn(move || loop {
        if let Some(c) = block.next() {
            return Some(Ok(c));
        }
        if let Some(e) = failed.take() {
            rx = None;
            return Some(Err(e));
        }
        match rx.as_ref()?.recv().ok()? {
            Ok(v) => block = v.into_iter(),
            Err(e) => {
                rx = None;
                return Some(Err(e));
            }
        }
    })
}

/// The chunks of `file` where it is a regular file of at most `seg` bytes, read and cut on this
/// thread (`None` otherwise: a larger file, one that grew as it was read, a pipe).
fn cut_small(file: &std::fs::File, p: ChunkParams, fp: Fingerprint, seg: usize, hints: &Learned) -> Option<std::io::Result<Vec<Chunk>>> {
    let len = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()).filter(|&l| l <= seg as u64)?;
    // A byte more than its size: a file that grew meanwhile is read as a large one.
    let mut buf = vec![0u8; len as usize + 1];
    let n = match read_block(file, true, 0, &mut buf, len as usize + 1) {
        Ok(n) if n as u64 > len => return None,
        Ok(n) => n,
        Err(e) => return Some(Err(e)),
    };
    buf.truncate(n);
    let (cuts, _) = cut_block_from(&buf, 0, 0, p, fp, true, 1, seg, Some(hints));
    let block = std::sync::Arc::new(buf);
    Some(Ok(cuts.into_iter().map(|(o, l, digest, predicted)| Chunk { offset: o as u64, digest, predicted, block: block.clone(), range: o..o + l }).collect()))
}

/// [`chunks_parallel`]'s threads, started: what they cut, a block's chunks at a time, and why a
/// thread could not start (those started before it see their channels close and end).
fn start_cutting(file: std::fs::File, p: ChunkParams, fp: Fingerprint, threads: usize, seg: usize, learned: std::sync::Arc<Learned>) -> (std::sync::mpsc::Receiver<std::io::Result<Vec<Chunk>>>, Option<std::io::Error>) {
    use std::sync::{mpsc, Arc, Mutex};
    let (head, block) = (p.max, threads * seg);
    // Blocks whose chunks have all been dropped are read into again.
    let spent: Arc<Mutex<Vec<Arc<Vec<u8>>>>> = Arc::default();
    let (read_tx, read_rx) = mpsc::sync_channel::<std::io::Result<ReadBlock>>(0);
    let reuse = spent.clone();
    let mut failed = None;
    let read = std::thread::Builder::new()
        .name("peerpath-cdc-read".into())
        .spawn(move || {
            let positional = file.metadata().is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.is_file() || m.file_type().is_block_device()
            });
            // The last `head` bytes read (fewer at the start of the file).
            let (mut at, mut tail) = (0u64, Vec::with_capacity(head));
            loop {
                let free = {
                    let mut spent = reuse.lock().expect("the spent blocks' lock");
                    let i = spent.iter().position(|b| Arc::strong_count(b) == 1);
                    i.and_then(|i| Arc::try_unwrap(spent.swap_remove(i)).ok())
                };
                let mut buf = free.unwrap_or_else(|| vec![0u8; head + block]);
                let start = head - tail.len();
                buf[start..head].copy_from_slice(&tail);
                let read = read_block(&file, positional, at, &mut buf[head..], seg).map(|n| {
                    let keep = (head - start + n).min(head);
                    tail.clear();
                    tail.extend_from_slice(&buf[head + n - keep..head + n]);
                    ReadBlock { buf, start, before: head - start, len: head - start + n, at_end: n < block }
                });
                let end = read.as_ref().map_or(true, |r| r.at_end);
                if read_tx.send(read).is_err() || end {
                    return;
                }
                at += block as u64;
            }
        });
    failed = failed.or(read.err());
    // The pool: each job is a segment of a block, answered on its own channel.
    type Job = (Arc<Vec<u8>>, std::ops::Range<usize>, Segment, bool, mpsc::SyncSender<Chain>);
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    for _ in 0..threads {
        if failed.is_some() {
            break;
        }
        let (jobs, hints) = (job_rx.clone(), learned.clone());
        let cut = std::thread::Builder::new()
            .name("peerpath-cdc-cut".into())
            .spawn(move || loop {
                let next = jobs.lock().expect("the jobs' lock").recv();
                let Ok((buf, range, s, at_end, reply)) = next else { return };
                let _ = reply.send(chain(&buf[range], s, p, fp, at_end, Some(hints.as_ref())));
            });
        failed = failed.or(cut.err());
    }
    let (tx, rx) = mpsc::sync_channel::<std::io::Result<Vec<Chunk>>>(1);
    // Nothing more starts after a failure: the channels the joining thread would
    // have taken close as this returns, and the threads started end.
    if failed.is_none() {
        failed = std::thread::Builder::new()
            .name("peerpath-cdc".into())
            .spawn(move || {
                let mut pending = std::collections::VecDeque::new();
                let (mut failed, mut read_all) = (None, false);
                // Where the stream's next chunk begins in the next block's bytes, and in the file.
                let (mut entry, mut stream_at) = (0usize, 0u64);
                loop {
                    // Two blocks are being cut at a time.
                    while !read_all && pending.len() < 2 {
                        match read_rx.recv() {
                            Ok(Ok(r)) => {
                                let buf = Arc::new(r.buf);
                                let range = r.start..r.start + r.len;
                                let replies: Vec<_> = segments(r.len, r.before, p, threads, seg)
                                    .into_iter()
                                    .map(|s| {
                                        let (reply, answer) = mpsc::sync_channel(1);
                                        let _ = job_tx.send((buf.clone(), range.clone(), s, r.at_end, reply));
                                        (s, answer)
                                    })
                                    .collect();
                                read_all = r.at_end;
                                pending.push_back((buf, range, r.at_end, replies));
                            }
                            Ok(Err(e)) => (failed, read_all) = (Some(e), true),
                            Err(_) => (failed, read_all) = (Some(std::io::Error::other("the reading thread stopped")), true),
                        }
                    }
                    let Some((buf, range, at_end, replies)) = pending.pop_front() else {
                        if let Some(e) = failed {
                            let _ = tx.send(Err(e));
                        }
                        return;
                    };
                    let Ok(chains) = replies.iter().map(|(s, answer)| answer.recv().map(|c| (*s, c))).collect::<Result<Vec<_>, _>>() else {
                        let _ = tx.send(Err(std::io::Error::other("a cutting thread stopped")));
                        return;
                    };
                    let data = &buf[range.clone()];
                    let (cuts, _) = join(data, entry, &chains, p, fp, at_end);
                    let used = cuts.last().map_or(entry, |c| c.0 + c.1);
                    let chunks = cuts.into_iter().map(|(o, l, digest, predicted)| Chunk { offset: stream_at + (o - entry) as u64, digest, predicted, block: buf.clone(), range: range.start + o..range.start + o + l }).collect();
                    stream_at += (used - entry) as u64;
                    // The next block begins with this one's last `head` bytes (or all of it).
                    entry = used - (data.len() - data.len().min(head));
                    spent.lock().expect("the spent blocks' lock").push(buf);
                    if tx.send(Ok(chunks)).is_err() || at_end {
                        return;
                    }
                }
            })
            .err();
    }
    (rx, failed.map(|e| cannot_start_thread(&e)))
}

/// Why [`chunks_parallel`] could not go on: a thread it needs could not start (not an error of
/// reading the source).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CannotStartThread(String);

/// A thread that could not start, said as such: EAGAIN is the process's or
/// the user's thread limit (`ulimit -u`, a cgroup's `pids.max`), or no memory
/// for the thread's stack (`ulimit -v`).
fn cannot_start_thread(e: &std::io::Error) -> std::io::Error {
    // EAGAIN, as the standard library names it.
    let hint = if e.kind() == std::io::ErrorKind::WouldBlock { " (the process or user thread limit, or no memory for its stack?)" } else { "" };
    std::io::Error::new(e.kind(), CannotStartThread(format!("cannot start a thread: {e}{hint}")))
}

/// A block as read: `buf[start..start + len]` are its bytes, of which
/// the first `before` are the end of the block before (up to `max` of them).
struct ReadBlock {
    buf: Vec<u8>,
    start: usize,
    before: usize,
    len: usize,
    at_end: bool,
}

/// A block stays within this (see [`chunks_parallel`]).
const BLOCK_BYTES: usize = 32 << 20;

/// How many threads [`chunks_parallel`] uses when asked for `asked`: at
/// least one, and few enough that each has 1 MiB and 4 of the largest chunks.
pub fn cutting_threads(p: ChunkParams, asked: usize) -> usize {
    asked.clamp(1, (BLOCK_BYTES / (1 << 20).max(4 * p.max)).max(1))
}

/// Bytes of a block each of `threads` thread cuts: 4 MiB, less where the
/// block would pass [`BLOCK_BYTES`], but at least 1 MiB and 4 of the
/// largest chunks.
fn segment_len(p: ChunkParams, threads: usize) -> usize {
    (BLOCK_BYTES / threads.max(1)).clamp(1 << 20, 4 << 20).max(4 * p.max)
}

/// How far before its segment a thread begins to cut, so that its chain
/// has most likely met the stream's by the segment's start (measured on
/// random and protein data at the default sizes: met after 110 KiB in half
/// the cases, 370 KiB in 99 %).
fn lead_in(p: ChunkParams) -> usize {
    4 * p.avg
}

/// Fills `buf` from the file at `at`, a segment per thread by `pread`
/// (or in order, for a pipe), and returns how many bytes are there: fewer
/// than `buf.len()` only at the end of the file.
fn read_block(file: &std::fs::File, positional: bool, at: u64, buf: &mut [u8], seg: usize) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    fn fill(mut part: &mut [u8], mut read: impl FnMut(&mut [u8], u64) -> std::io::Result<usize>) -> std::io::Result<usize> {
        let mut got = 0;
        while !part.is_empty() {
            match read(part, got as u64) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    part = &mut part[n..];
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }
    if !positional {
        return fill(buf, |b, _| (&*file).read(b));
    }
    // The first part is read on this thread, the others on a thread each. A part whose thread
    // cannot start fails the block (with that), once the others are read.
    let got: Vec<std::io::Result<usize>> = std::thread::scope(|s| {
        let mut parts = buf.chunks_mut(seg).enumerate().map(|(k, part)| (at + (k * seg) as u64, part));
        let first = parts.next();
        let others: Vec<_> = parts.map(|(from, part)| std::thread::Builder::new().name("peerpath-cdc-pread".into()).spawn_scoped(s, move || fill(part, |b, off| file.read_at(b, from + off)))).collect();
        let first = first.map(|(from, part)| fill(part, |b, off| file.read_at(b, from + off)));
        first.into_iter().chain(others.into_iter().map(|h| h.map_err(|e| cannot_start_thread(&e)).and_then(|h| h.join().expect("a reading thread does not panic")))).collect()
    });
    let mut total = 0;
    for n in got {
        let n = n?;
        total += n;
        if n < seg {
            // The end of the file: what a later segment holds (a file growing under
            // us) is left out, and the caller's size check says so.
            return Ok(total);
        }
    }
    Ok(total)
}

/// The chunks of a block with their digests, as (offset, length, digest):
/// [`cut_points`]' chunks, cut on this thread, runs of one byte counted
/// rather than cut and hashed once (see [`Cuts`]).
pub fn chunk_digests(data: &[u8], p: ChunkParams, fp: Fingerprint, at_end: bool) -> Vec<(usize, usize, [u8; 32])> {
    cut_block(data, p, fp, at_end, 1, usize::MAX).0.into_iter().map(|(o, l, d, _)| (o, l, d)).collect()
}

/// A chunk of a block: offset, length, digest, and whether it was predicted (not cut).
type Cut = (usize, usize, [u8; 32], bool);

/// The stream's chunks of `data` (which begins at a chunk boundary) as
/// (offset, length, digest), cut on up to `threads` threads in segments of
/// `seg` bytes (see [`chunks_parallel`]), and how many chunks had to be cut
/// again at the joins. Without `at_end` the chunk reaching the end of
/// `data` is left out.
fn cut_block(data: &[u8], p: ChunkParams, fp: Fingerprint, at_end: bool, threads: usize, seg: usize) -> (Vec<Cut>, usize) {
    cut_block_from(data, 0, 0, p, fp, at_end, threads, seg, None)
}

/// [`cut_block`] of a block whose first `before` bytes end the block
/// before it, the stream's chain entering at `entry` (at most `before`).
#[allow(clippy::too_many_arguments)]
fn cut_block_from(data: &[u8], before: usize, entry: usize, p: ChunkParams, fp: Fingerprint, at_end: bool, threads: usize, seg: usize, hints: Option<&dyn Successors>) -> (Vec<Cut>, usize) {
    let segs = segments(data.len(), before, p, threads, seg);
    let chains: Vec<(Segment, Chain)> = match segs[..] {
        [g] => vec![(g, chain(data, g, p, fp, at_end, hints))],
        // A segment whose thread cannot start (the thread limit) is cut on this one.
        _ => std::thread::scope(|s| {
            let cut: Vec<_> = segs.iter().map(|&g| (g, std::thread::Builder::new().name("peerpath-cdc-cut".into()).spawn_scoped(s, move || chain(data, g, p, fp, at_end, hints)).ok())).collect();
            cut.into_iter().map(|(g, h)| (g, h.map_or_else(|| chain(data, g, p, fp, at_end, hints), |h| h.join().expect("a cutting thread does not panic")))).collect()
        }),
    };
    join(data, entry, &chains, p, fp, at_end)
}

/// A part of a block that one thread cuts: chunks from `begin`, hashed from
/// `from` (the segment's own bytes), up to the first that starts at or past `stop`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    begin: usize,
    from: usize,
    stop: usize,
}

/// A thread's chain of cuts: (offset, length, digest, predicted) where the
/// digest is there for chunks at or past their segment's `from`.
type Chain = Vec<(usize, usize, Option<[u8; 32]>, bool)>;

/// The segments of a block of `len` bytes whose first `before` bytes end
/// the block before it: up to `threads` of the new bytes, at least `seg`
/// each; each begins [`lead_in`] before its own bytes, the first at the
/// block's start (the stream's chain enters within the bytes before).
fn segments(len: usize, before: usize, p: ChunkParams, threads: usize, seg: usize) -> Vec<Segment> {
    let new = len - before;
    let parts = (new / seg).clamp(1, threads.max(1));
    let from = |k: usize| before + k * (new / parts);
    (0..parts)
        .map(|k| Segment {
            begin: if k == 0 { 0 } else { from(k).saturating_sub(lead_in(p)) },
            from: from(k),
            stop: if k + 1 == parts { usize::MAX } else { from(k + 1) },
        })
        .collect()
}

/// The chunks one thread cuts in `data` for segment `s` (see [`Segment`]),
/// each hashed chunk's successor taken from `hints` where it holds.
/// Without `at_end` the chunk reaching the end of `data` is left out.
fn chain(data: &[u8], s: Segment, p: ChunkParams, fp: Fingerprint, at_end: bool, hints: Option<&dyn Successors>) -> Chain {
    let (mut v, mut last): (Chain, _) = (Vec::new(), None);
    let mut cuts = Cuts::new(data, s.begin, p);
    loop {
        if let (Some(h), Some(&(o, l, Some(d), _))) = (hints, v.last()) {
            let at = o + l;
            // A run of one byte (a chunk like the one before it, or one followed by itself)
            // is counted by `Cuts`, cheaper still: no hint is asked or taken there.
            let run = v.len() > 1 && v[v.len() - 2].2 == Some(d);
            let room = at < s.stop && data.len() >= at + p.min + 2 && !run;
            if let Some(n) = room.then(|| h.successor(&d)).flatten().filter(|n| n.digest != d).and_then(|n| predicted(data, at, n, p, fp)) {
                v.push((at, n.len, Some(n.digest), true));
                learn(&v, data, hints);
                cuts = Cuts::new(data, at + n.len, p);
                continue;
            }
        }
        let Some((o, l, repeat)) = cuts.next() else { break };
        if o >= s.stop || (!at_end && o + l == data.len()) {
            break;
        }
        v.push((o, l, (o >= s.from).then(|| digest_of(data, (o, l, repeat), fp, &mut last)), false));
        learn(&v, data, hints);
    }
    v
}

/// Tells `hints` what followed the chunk before the last two of `v`: the
/// one after it, and the first byte of the last (so no chunk is a successor
/// before another follows it: the last of a stream, cut by its end, never is).
fn learn(v: &Chain, data: &[u8], hints: Option<&dyn Successors>) {
    if let (Some(h), [.., (_, _, Some(a), _), (_, l, Some(b), _), (o, ..)]) = (hints, v.as_slice()) {
        if a != b {
            h.learn(*a, Successor { digest: *b, len: *l, after: data[*o] });
        }
    }
}

/// The stream's chunks of `data` from `entry` (a chunk boundary), from the
/// segments' chains in order: where the stream's chain reaches a cut of a
/// segment's, that segment's chunks from it; elsewhere cut again here, one
/// at a time. Also how many chunks were cut again.
fn join(data: &[u8], entry: usize, chains: &[(Segment, Chain)], p: ChunkParams, fp: Fingerprint, at_end: bool) -> (Vec<Cut>, usize) {
    let (mut out, mut pos, mut recut) = (Vec::new(), entry, 0usize);
    let (mut walk, mut last): (Option<Cuts>, _) = (None, None);
    'segments: for (s, ch) in chains {
        while pos < s.stop {
            if let Ok(i) = ch.binary_search_by_key(&pos, |c| c.0) {
                // The stream's chain meets this thread's here: from now on they
                // agree. Chunks before the segment's own bytes (in the bytes of
                // the block before) are hashed here.
                out.extend(ch[i..].iter().map(|&(o, l, d, predicted)| (o, l, d.unwrap_or_else(|| fp.digest(&data[o..o + l])), predicted)));
                pos = ch.last().map_or(pos, |c| c.0 + c.1);
                if pos < s.stop {
                    break 'segments; // the thread stopped at the block's end
                }
                walk = None;
                continue 'segments;
            }
            // Not met yet: the stream's next chunk, cut here.
            let Some((o, l, repeat)) = walk.get_or_insert_with(|| Cuts::new(data, pos, p)).next() else { break 'segments };
            if !at_end && o + l == data.len() {
                break 'segments;
            }
            out.push((o, l, digest_of(data, (o, l, repeat), fp, &mut last), false));
            recut += 1;
            pos += l;
        }
    }
    (out, recut)
}

/// The digest of `data[o..o + l]`, or the last one's where the chunk
/// repeats the one before it (and that one was hashed here: `last` holds
/// its end and digest).
fn digest_of(data: &[u8], (o, l, repeat): (usize, usize, bool), fp: Fingerprint, last: &mut Option<(usize, [u8; 32])>) -> [u8; 32] {
    let d = match *last {
        Some((end, d)) if repeat && end == o => d,
        _ => fp.digest(&data[o..o + l]),
    };
    *last = Some((o + l, d));
    d
}

/// How many bytes at the start of `d` equal its first (compared 4 KiB at a
/// time: the slice comparison is the C library's vectorised `bcmp`).
fn run_len(d: &[u8]) -> usize {
    let Some(&b) = d.first() else { return 0 };
    let same = [b; 4096];
    let mut n = 0;
    for piece in d.chunks(same.len()) {
        if piece != &same[..piece.len()] {
            return n + piece.iter().position(|&x| x != b).expect("a piece that differs has a byte that does");
        }
        n += piece.len();
    }
    n
}

/// FastCDC's chunks of `data` from `begin`, as (offset, length, repeat):
/// the `fastcdc` crate's cuts, one by one, except in a run of one byte.
/// There every chunk is cut alike (a cut depends only on the bytes from the
/// chunk's start up to it, and on how much follows, which is checked), so
/// once a chunk and the byte after it lie in the run, the chunks after it
/// that do too are counted instead of cut, and marked `repeat` (the same
/// bytes as the chunk before). Long runs of zeros (sparse files, disk
/// images) are thus cut at memory speed, and their chunks hashed once.
struct Cuts<'a> {
    data: &'a [u8],
    pos: usize,
    p: ChunkParams,
    /// In a run: the chunks' length and how many more to count.
    run: (usize, usize),
}

impl<'a> Cuts<'a> {
    fn new(data: &'a [u8], begin: usize, p: ChunkParams) -> Cuts<'a> {
        Cuts { data, pos: begin, p, run: (0, 0) }
    }
}

impl Iterator for Cuts<'_> {
    type Item = (usize, usize, bool);

    fn next(&mut self) -> Option<(usize, usize, bool)> {
        let (o, max) = (self.pos, self.p.max);
        if self.run.1 > 0 {
            self.run.1 -= 1;
            self.pos += self.run.0;
            return Some((o, self.run.0, true));
        }
        let l = fastcdc::v2020::FastCDC::new(&self.data[o..], self.p.min, self.p.avg, max).next()?.length;
        self.pos += l;
        // The bytes this cut looked at: up to and with the byte after a cut
        // found, or `max` of them; the same cut from another start needs
        // those bytes and `max` bytes ahead (so the crate saw as much).
        let looked = if l < max { l + 1 } else { max };
        let d = &self.data[o..];
        if d.len() >= looked + max && d[0] == d[l / 2] && d[0] == d[looked - 1] && run_len(&d[..looked]) == looked {
            let run_end = o + run_len(d);
            let room = run_end.min(self.data.len() + looked - max);
            // Chunks from o + l, o + 2l, ... for as long as each one's bytes fit in `room`.
            self.run = (l, (room - o - looked) / l);
        }
        Some((o, l, false))
    }
}

/// What a device needs to cut as [`cut_points`] does (the `fastcdc` crate's
/// v2020 cutter, normalization level 1): the gear table, and the stricter
/// and looser masks for `p`'s average size (`MASKS[bits +- 1]`, bits the
/// rounded base-2 logarithm of the average, as the crate picks them).
pub fn gear_and_masks(p: ChunkParams) -> (&'static [u64], u64, u64) {
    let gear = match fastcdc::v2020::get_gear_with_seed(0).0 {
        std::borrow::Cow::Borrowed(g) => g,
        std::borrow::Cow::Owned(_) => unreachable!("seed 0 borrows the crate's own table"),
    };
    let bits = (p.avg as f64).log2().round() as usize;
    (gear, fastcdc::v2020::MASKS[bits + 1], fastcdc::v2020::MASKS[bits - 1])
}

/// The chunk boundaries of a block, as (offset, length). Without `at_end`
/// the last chunk is left out: more data after the block could move its
/// end, so it must start the next block (the carry). Chunking a stream in
/// blocks this way gives exactly [`chunks`]'s boundaries.
pub fn cut_points(data: &[u8], p: ChunkParams, at_end: bool) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = fastcdc::v2020::FastCDC::new(data, p.min, p.avg, p.max).map(|c| (c.offset, c.length)).collect();
    if !at_end {
        v.pop();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::protein_like as data;

    #[test]
    fn chunk_sizes_must_be_even_as_fastcdc_requires() {
        // fuzz/regressions/dedup_chunks/odd-min-size: an odd size panicked in debug builds.
        for (min, avg, max) in [(65, 1024, 4096), (64, 1025, 4096), (64, 1024, 4097)] {
            let e = ChunkParams::new(min, avg, max).unwrap_err();
            assert!(e.contains("each even"), "{e}");
        }
        assert!(ChunkParams::new(66, 1026, 4098).is_ok());
    }

    #[test]
    fn chunks_cover_the_stream_within_their_bounds() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(1 << 20, 3);
        let cs: Vec<Chunk> = chunks(&d[..], p, Fingerprint::Blake3).collect::<Result<_, _>>().unwrap();
        let mut at = 0u64;
        for (i, c) in cs.iter().enumerate() {
            assert_eq!(c.offset, at);
            assert!(c.data().len() <= p.max && (c.data().len() >= p.min || i == cs.len() - 1));
            assert_eq!(c.digest, *blake3::hash(c.data()).as_bytes());
            at += c.data().len() as u64;
        }
        assert_eq!(at, d.len() as u64);
        assert!(cs.len() > 100, "{} chunks", cs.len());
        assert_eq!(chunks(&[][..], p, Fingerprint::Blake3).count(), 0, "an empty stream has no chunks");
    }

    /// The property deduplication rests on: an insertion changes only the chunks near it.
    #[test]
    fn an_insertion_changes_only_the_chunks_around_it() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(1 << 20, 5);
        let mut edited = d.clone();
        edited.splice(500_000..500_000, b"an insertion of a few bytes".iter().copied());
        let names = |v: &[u8]| chunks(v, p, Fingerprint::Sha256).map(|c| c.unwrap().digest).collect::<std::collections::HashSet<_>>();
        let (a, b) = (names(&d), names(&edited));
        let shared = a.intersection(&b).count();
        assert!(shared + 4 >= a.len(), "{shared} of {} chunks shared", a.len());
    }

    fn summary(c: Chunk) -> (u64, usize, [u8; 32]) {
        assert_eq!(c.digest, *blake3::hash(c.data()).as_bytes(), "the digest is the chunk's");
        (c.offset, c.data().len(), c.digest)
    }

    fn oracle(d: &[u8], p: ChunkParams) -> Vec<(u64, usize, [u8; 32])> {
        chunks(d, p, Fingerprint::Blake3).map(|c| summary(c.unwrap())).collect()
    }

    /// Random bytes with runs of one byte (where chains of cuts begun at
    /// different places never meet) and repeats.
    fn mixed(bytes: usize, seed: u64) -> Vec<u8> {
        let mut d = data(bytes, seed);
        let mut x = seed | 1;
        let mut at = 0;
        while at < bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x as usize % 300_000).min(bytes - at);
            match x % 3 {
                0 => d[at..at + len].fill((x >> 8) as u8),
                1 if at >= len => d.copy_within(at - len..at, at),
                _ => {}
            }
            at += len + (x >> 20) as usize % 500_000;
        }
        d
    }

    /// A file cut on several threads gives the stream's chunks, in order:
    /// joins between segments met within the lead-in, joins where they are
    /// not (runs of one byte), files of a block or less, a pipe.
    #[test]
    fn parallel_chunks_are_the_streams() {
        use std::io::{Seek, Write};
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let cases = [data(11 << 20, 11), vec![0u8; 9 << 20], mixed(13 << 20, 3), data(300_000, 4), Vec::new()];
        for d in &cases {
            let want = oracle(d, p);
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(d).unwrap();
            for threads in [1, 2, 3, 5] {
                f.rewind().unwrap();
                let got: Vec<_> = chunks_parallel(f.try_clone().unwrap(), p, Fingerprint::Blake3, threads, None).map(|c| summary(c.unwrap())).collect();
                assert!(got == want, "{} bytes on {threads} threads: {} chunks, want {}", d.len(), got.len(), want.len());
            }
        }
        let d = &cases[2];
        let path = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(path.path(), d).unwrap();
        let mut cat = std::process::Command::new("cat").arg(path.path()).stdout(std::process::Stdio::piped()).spawn().unwrap();
        let pipe = std::fs::File::from(std::os::fd::OwnedFd::from(cat.stdout.take().unwrap()));
        let got: Vec<_> = chunks_parallel(pipe, p, Fingerprint::Blake3, 3, None).map(|c| summary(c.unwrap())).collect();
        assert!(got == oracle(d, p), "read from a pipe");
        cat.wait().unwrap();
    }

    /// A source that fails gives the error, last.
    #[test]
    fn a_failing_source_ends_the_parallel_chunks_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let got: Vec<std::io::Result<Chunk>> = chunks_parallel(std::fs::File::open(dir.path()).unwrap(), ChunkParams::default(), Fingerprint::Sha256, 2, None).collect();
        assert_eq!(got.len(), 1);
        assert!(got[0].as_ref().is_err_and(|e| e.raw_os_error() == Some(21)), "EISDIR: {:?}", got[0].as_ref().err());
    }

    proptest::proptest! {
        /// Any bytes, any segment and thread count: the blocks' chunks are the stream's.
        #[test]
        fn blocks_cut_on_threads_are_the_streams(
            parts in proptest::collection::vec((0u8..3, 1usize..6000, proptest::num::u8::ANY), 0..40),
            seed in 1u64..1000,
            segs in 1usize..4,
            threads in 1usize..6,
            at_end: bool,
        ) {
            let p = ChunkParams::new(64, 256, 1024).unwrap();
            let mut d = data(0, 0);
            for (kind, len, b) in parts {
                match kind {
                    0 => d.extend(data(len, seed + len as u64)),
                    1 => d.extend(std::iter::repeat_n(b, len)),
                    _ => { let from = d.len().saturating_sub(len); d.extend_from_within(from..); }
                }
            }
            let want: Vec<(u64, usize, [u8; 32])> = cut_points(&d, p, at_end).into_iter().map(|(o, l)| (o as u64, l, *blake3::hash(&d[o..o + l]).as_bytes())).collect();
            let (got, _) = cut_block(&d, p, Fingerprint::Blake3, at_end, threads, segs * 4 * p.max);
            proptest::prop_assert_eq!(got.into_iter().map(|(o, l, d, _)| (o as u64, l, d)).collect::<Vec<_>>(), want.clone());
            let one = chunk_digests(&d, p, Fingerprint::Blake3, at_end);
            proptest::prop_assert_eq!(one.into_iter().map(|(o, l, d)| (o as u64, l, d)).collect::<Vec<_>>(), want.clone());
            // Learning as they cut (as `chunks_parallel`'s threads do), the repeats
            // found from what the stream cut before: the same chunks.
            let learned = Learned { caller: None, seen: Default::default() };
            let (got, _) = cut_block_from(&d, 0, 0, p, Fingerprint::Blake3, at_end, threads, segs * 4 * p.max, Some(&learned));
            proptest::prop_assert_eq!(got.into_iter().map(|(o, l, d, _)| (o as u64, l, d)).collect::<Vec<_>>(), want.clone());
            // A block that begins with up to `max` bytes of the one before,
            // the stream entering at one of its cuts there: the stream's
            // chunks from that cut on.
            let before = (seed as usize * 7919 % (p.max + 1)).min(d.len());
            let entry = want.iter().map(|c| c.0 as usize).chain([0]).filter(|&o| o <= before && before - o <= p.max).max().unwrap_or(0);
            if before - entry <= p.max {
                let (got, _) = cut_block_from(&d, before, entry, p, Fingerprint::Blake3, at_end, threads, segs * 4 * p.max, None);
                let from_entry: Vec<_> = want.iter().filter(|c| c.0 as usize >= entry).cloned().collect();
                proptest::prop_assert_eq!(got.into_iter().map(|(o, l, d, _)| (o as u64, l, d)).collect::<Vec<_>>(), from_entry);
            }
        }

        /// A stream edited from one whose chunks' successors are known (inserted,
        /// deleted and changed bytes, runs, repeats): with the hints, its chunks are
        /// still exactly FastCDC's, on any threads and segments, and where little
        /// changed most are found from the hints rather than cut.
        #[test]
        fn chunks_found_from_successors_are_the_streams(
            parts in proptest::collection::vec((0u8..3, 1usize..6000, proptest::num::u8::ANY), 1..30),
            edits in proptest::collection::vec((0u8..4, proptest::num::usize::ANY, 1usize..300, proptest::num::u8::ANY), 0..6),
            seed in 1u64..1000,
            segs in 1usize..4,
            threads in 1usize..6,
            at_end: bool,
        ) {
            let p = ChunkParams::new(64, 256, 1024).unwrap();
            let mut old = Vec::new();
            for (kind, len, b) in parts {
                match kind {
                    0 => old.extend(data(len, seed + len as u64)),
                    1 => old.extend(std::iter::repeat_n(b, len)),
                    _ => { let from = old.len().saturating_sub(len); old.extend_from_within(from..); }
                }
            }
            let hints = successors_of(&old, p);
            let mut new = old.clone();
            for (kind, at, len, b) in edits {
                let at = at % (new.len() + 1);
                let end = (at + len).min(new.len());
                match kind {
                    0 => { new.splice(at..at, std::iter::repeat_n(b, len)); }
                    1 => { new.drain(at..end); }
                    2 => new[at..end].iter_mut().for_each(|x| *x ^= b | 1),
                    _ => { let copy = new[at..end].to_vec(); new.extend(copy); }
                }
            }
            let want: Vec<(usize, usize, [u8; 32])> = cut_points(&new, p, at_end).into_iter().map(|(o, l)| (o, l, *blake3::hash(&new[o..o + l]).as_bytes())).collect();
            let (got, _) = cut_block_from(&new, 0, 0, p, Fingerprint::Blake3, at_end, threads, segs * 4 * p.max, Some(&hints));
            proptest::prop_assert_eq!(got.iter().map(|&(o, l, d, _)| (o, l, d)).collect::<Vec<_>>(), want);
            let distinct = got.iter().map(|c| c.2).collect::<std::collections::HashSet<_>>().len() == got.len();
            if new == old && distinct && segs * 4 * p.max >= new.len() {
                // One segment, no edit, no chunk twice (a chunk's hint is what followed it
                // last): every chunk found from the one before but the first, and but
                // those fewer than two bytes from the end (`predicted`: the stream's last,
                // and the one before it where the last is one byte long).
                let found = got.iter().filter(|c| c.3).count();
                let findable = got.iter().skip(1).filter(|c| c.0 + c.1 + 2 <= new.len()).count();
                proptest::prop_assert!(found >= findable, "{found} of {} found, {findable} could be: {:?}", got.len(), got.iter().map(|c| (c.0, c.1, c.3)).collect::<Vec<_>>());
            }
        }
    }

    /// The successors of a stream's chunks as a store keeps them: each chunk's next, but the last.
    struct Known(std::collections::HashMap<[u8; 32], Successor>);

    impl Successors for Known {
        fn successor(&self, digest: &[u8; 32]) -> Option<Successor> {
            self.0.get(digest).copied()
        }
    }

    fn successors_of(d: &[u8], p: ChunkParams) -> Known {
        let cuts = cut_points(d, p, true);
        let digest = |(o, l): (usize, usize)| *blake3::hash(&d[o..o + l]).as_bytes();
        Known(cuts.windows(3).map(|w| (digest(w[0]), Successor { digest: digest(w[1]), len: w[1].1, after: d[w[2].0] })).collect())
    }

    /// A chunk whose bytes are the known successor's but whose next byte is not
    /// is found only where FastCDC cuts there too; a file stored before gives
    /// its own chunks again, found, on the threads of [`chunks_parallel`].
    #[test]
    fn a_successor_is_taken_only_where_fastcdc_cuts_alike() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let old = data(3 << 20, 21);
        let hints = std::sync::Arc::new(successors_of(&old, p));
        let cuts = cut_points(&old, p, true);
        // Every chunk's next byte changed in turn (a few of them): each edit is the stream's.
        for &(o, l) in cuts.iter().skip(5).step_by(97).take(8) {
            for b in [0u8, 0x55, 0xff] {
                let mut new = old.clone();
                new[o + l] = b;
                let (got, _) = cut_block(&new, p, Fingerprint::Blake3, true, 1, usize::MAX);
                let (with, _) = cut_block_from(&new, 0, 0, p, Fingerprint::Blake3, true, 1, usize::MAX, Some(hints.as_ref()));
                assert_eq!(with.iter().map(|c| (c.0, c.1, c.2)).collect::<Vec<_>>(), got.iter().map(|c| (c.0, c.1, c.2)).collect::<Vec<_>>(), "the byte after the chunk at {o} set to {b:#x}");
            }
        }
        // The data ending one byte after a chunk: with an even length, the crate (testing
        // bytes in pairs) never looks at that byte's hash, and the chunk takes it too.
        // Two bytes after: the chunk is the stream's and found.
        let even: Vec<_> = cuts.iter().skip(1).filter(|c| c.1 % 2 == 0).take(4).collect();
        assert!(!even.is_empty());
        let cut = |v: &[Cut]| v.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>();
        for &&(o, l) in &even {
            for more in [1, 2] {
                let new = &old[..o + l + more];
                let (got, _) = cut_block(new, p, Fingerprint::Blake3, true, 1, usize::MAX);
                assert_eq!(got.last().map(|c| (c.0, c.1)), Some(if more == 1 { (o, l + 1) } else { (o + l, 2) }), "the crate's cut at the end");
                let (with, _) = cut_block_from(new, 0, 0, p, Fingerprint::Blake3, true, 1, usize::MAX, Some(hints.as_ref()));
                assert_eq!(cut(&with), cut(&got), "the data ending {more} byte(s) after the chunk at {o}");
                assert_eq!(with.iter().find(|c| c.0 == o).map(|c| c.3), Some(more == 2), "found where two bytes follow");
            }
        }
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&old).unwrap();
        let hints: std::sync::Arc<dyn Successors> = hints;
        for threads in [1, 3] {
            let f = f.try_clone().unwrap();
            let got: Vec<Chunk> = chunks_parallel(f, p, Fingerprint::Blake3, threads, Some(hints.clone())).map(Result::unwrap).collect();
            assert_eq!(got.iter().map(|c| (c.offset as usize, c.data().len())).collect::<Vec<_>>(), cuts);
            let found = got.iter().filter(|c| c.predicted).count();
            assert!(found * 10 >= got.len() * 9, "{threads} thread(s): {found} of {} found from their successors", got.len());
        }
    }

    /// A stream that repeats itself far enough back (an edited copy, a copy
    /// after a run of one byte, a slice again) is found from its own earlier
    /// chunks, with nothing stored before, and its chunks are still exactly
    /// the crate's on any threads; a stream that never repeats finds none.
    #[test]
    fn a_stream_that_repeats_itself_is_found_from_its_own_chunks() {
        use std::io::Write;
        let p = ChunkParams::new(64, 256, 1024).unwrap();
        let first = data(3 << 20, 31);
        let mut d = first.clone();
        d.extend(std::iter::repeat_n(0u8, 200_000));
        let mut edited = first.clone();
        edited[1_000_000] ^= 0x20;
        edited.splice(2_000_000..2_000_000, *b"an insertion");
        edited.drain(2_500_000..2_500_300);
        d.extend(&edited);
        d.extend_from_slice(&first[700_000..1_900_000]);
        let repeats = 3 << 20;
        let new = data(4 << 20, 32);
        for (name, bytes) in [("repeating", &d), ("new", &new)] {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(bytes).unwrap();
            let want: Vec<(usize, usize, [u8; 32])> = cut_points(bytes, p, true).into_iter().map(|(o, l)| (o, l, *blake3::hash(&bytes[o..o + l]).as_bytes())).collect();
            for threads in [1, 2, 3] {
                let got: Vec<Chunk> = chunks_parallel(f.try_clone().unwrap(), p, Fingerprint::Blake3, threads, None).map(Result::unwrap).collect();
                assert_eq!(got.iter().map(|c| (c.offset as usize, c.data().len(), c.digest)).collect::<Vec<_>>(), want, "{name}, {threads} thread(s)");
                let found = got.iter().filter(|c| c.predicted).count();
                if name == "new" {
                    assert_eq!(found, 0, "{threads} thread(s)");
                } else if threads == 1 {
                    // One thread learns each chunk as it cuts it: all found but the
                    // chunks around the edits and the slice's first ones.
                    let after = got.iter().filter(|c| c.offset as usize >= repeats + 200_000).count();
                    assert!(found * 10 >= after * 9, "{found} of {after} chunks found past the first copy");
                }
            }
        }
    }

    /// Runs of each byte value, ending at, just before and just after a
    /// multiple of the run's chunk length, then other bytes: the counted
    /// chunks are the crate's cuts, and only they are marked as repeats.
    #[test]
    fn runs_of_one_byte_are_cut_as_the_crate_cuts_them() {
        let p = ChunkParams::new(64, 256, 1024).unwrap();
        let mut short = 0;
        for b in 0..=255u8 {
            let l = fastcdc::v2020::FastCDC::new(&[b; 4096], p.min, p.avg, p.max).next().unwrap().length;
            short += usize::from(l < p.max);
            for n in (10 * l - 3..=10 * l + 3).chain([l + p.max, 3 * p.max]) {
                let mut d = vec![b; n];
                d.extend(data(3000, n as u64).iter().map(|x| x ^ b ^ 0x55));
                let crate_cuts: Vec<(usize, usize)> = fastcdc::v2020::FastCDC::new(&d, p.min, p.avg, p.max).map(|c| (c.offset, c.length)).collect();
                let ours: Vec<(usize, usize, bool)> = Cuts::new(&d, 0, p).collect();
                assert_eq!(ours.iter().map(|&(o, l, _)| (o, l)).collect::<Vec<_>>(), crate_cuts, "a run of {n} bytes {b:#x}");
                for w in ours.windows(2) {
                    assert!(!w[1].2 || d[w[0].0..w[0].0 + w[0].1] == d[w[1].0..w[1].0 + w[1].1], "a repeat has the bytes of the chunk before it");
                }
                assert!(ours.iter().filter(|c| c.2).count() + 3 >= n / l, "a run of {n} bytes {b:#x} is counted, not cut");
            }
        }
        assert!(short > 5, "runs cut before max: {short} of 256 byte values");
    }

    /// On data with content, threads' chains meet the stream's within the
    /// lead-in: no chunk is cut twice.
    #[test]
    fn chains_meet_within_the_lead_in() {
        let p = ChunkParams::default();
        let mut x = 7u64;
        let random: Vec<u8> = (0..40 << 20).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x >> 32) as u8 }).collect();
        for d in [data(40 << 20, 9), random] {
            let (got, recut) = cut_block(&d, p, Fingerprint::Blake3, true, 8, 4 << 20);
            assert_eq!(got.len(), oracle(&d, p).len());
            assert_eq!(recut, 0, "chunks cut again at the joins");
        }
        let zeros = vec![0u8; (40 << 20) + 8 * 1000 + 24];
        let (_, recut) = cut_block(&zeros, p, Fingerprint::Blake3, true, 8, 4 << 20);
        assert!(recut > 100, "runs of one byte are cut again: {recut}");
    }

    /// Blocks cut with a carry give the stream's chunks exactly.
    #[test]
    fn blocks_with_a_carry_give_the_streams_chunks() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let d = data(700_000, 8);
        let stream: Vec<(u64, usize)> = chunks(&d[..], p, Fingerprint::Blake3).map(|c| c.map(|c| (c.offset, c.data().len())).unwrap()).collect();
        for block in [20_000usize, 65_536, 100_003] {
            let (mut got, mut start, mut at) = (Vec::new(), 0usize, 0usize);
            loop {
                at = (at + block).min(d.len());
                let end = at == d.len();
                for (o, l) in cut_points(&d[start..at], p, end) {
                    got.push(((start + o) as u64, l));
                }
                start = got.last().map_or(0, |&(o, l)| o as usize + l);
                if end {
                    break;
                }
            }
            assert_eq!(got, stream, "blocks of {block}");
        }
    }

    #[test]
    fn sizes_outside_fastcdc_ranges_are_refused_and_digests_are_the_standard_ones() {
        assert!(ChunkParams::new(16, 4096, 16384).is_err());
        assert!(ChunkParams::new(8192, 4096, 16384).unwrap_err().contains("min <= avg"));
        // FIPS 180-2's "abc" and BLAKE3's empty-input digest.
        assert_eq!(Fingerprint::Sha256.digest(b"abc")[..4], [0xba, 0x78, 0x16, 0xbf]);
        assert_eq!(Fingerprint::Blake3.digest(b"")[..4], [0xaf, 0x13, 0x49, 0xb9]);
    }
}
