//! `peerpath compress SOURCE --ec K+M [--encrypt] -o DIR` (issue 19,
//! chains): compress -> encrypt -> erasure code in one pass over the source,
//! and `peerpath decompress --ec DIR -o FILE`, the reverse. The source is
//! read in blocks on one thread, compressed into members on `-T` workers,
//! and the members are sealed into `peerpath-enc/1` blocks and cut into
//! stripes, coded and written to the shards, in order on a sink thread
//! (`ec::StreamEncoder`); the stages overlap. No intermediate file exists:
//! what `ec decode` gives back is the very file `compress --encrypt` would
//! have written (the same members; a fresh file id, so other ciphertext).
//!
//! With `--engine emulated` the same chain runs in an emulated CSP's
//! memory instead (`chain_device`), with the same output.

use crate::ec::{ShardReader, StreamEncoder};
use peerpath_func::crypt::{BlockReader, FileCipher, InOrder, Key, StreamSealer, HEADER_BYTES, MAGIC, TAG_BYTES};
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, MemberEncoder, StreamDecoder, BGZF_EOF_BLOCK};
use peerpath_runtime::JobError;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct ChainOptions {
    pub level: Level,
    pub format: Format,
    /// Uncompressed bytes per member.
    pub block_size: usize,
    pub threads: usize,
    pub encrypt: Option<(Arc<Key>, u32)>,
    pub data: usize,
    pub parity: usize,
    pub unit: usize,
    /// Each shard in a directory of its own (`--shard-dir`), if asked.
    pub placement: Option<crate::ec::Placement>,
    /// `-q`: no report.
    pub quiet: bool,
}

/// What went where, for the report.
struct Counts {
    members: u64,
    compressed: u64,
    /// Time reading the source (the reader thread) and compressing (summed over the workers).
    reading: Duration,
    compressing: Duration,
}

/// The sealing stage: compressed bytes in, sealed blocks out to the shards.
struct Sealing {
    sealer: StreamSealer,
    /// The block being filled, with room for its tag.
    block: Vec<u8>,
    /// Time sealing blocks.
    sealing: Duration,
}

pub(crate) fn compress_ec(source: &Path, dir: &Path, o: &ChainOptions) -> Result<(), JobError> {
    let started = Instant::now();
    let unreadable = |e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e };
    let mut src = std::fs::File::open(source).map_err(unreadable)?;
    let meta = src.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(JobError::Usage(format!("{}: --ec takes a regular file", source.display())));
    }
    let mode = peerpath_io::Inherited::mode_of(Some(&meta));
    let mut shards = StreamEncoder::new(dir, o.data, o.parity, o.unit, o.placement.clone())?;
    let sealing = match &o.encrypt {
        Some((key, block)) => Some(Sealing { sealer: StreamSealer::new(key, *block).map_err(JobError::Usage)?, block: Vec::with_capacity(*block as usize + TAG_BYTES), sealing: Duration::ZERO }),
        None => None,
    };
    if sealing.is_some() {
        // The header holds the length: written over these bytes at the end.
        if let Err(e) = shards.put(&[0u8; HEADER_BYTES]) {
            shards.discard();
            return Err(e);
        }
    }
    let (ran, mut shards, mut sealing) = pipeline(&mut src, source, o, shards, sealing);
    let ran = ran.and_then(|(mut counts, read)| {
        if o.format == Format::Bgzf {
            // BGZF's end-of-file marker, as `compress` ends its files.
            counts.compressed += BGZF_EOF_BLOCK.len() as u64;
            feed(&mut shards, &mut sealing.as_mut(), &BGZF_EOF_BLOCK)?;
        }
        Ok((counts, read))
    });
    let (counts, read) = match ran {
        Ok(r) => r,
        Err(e) => {
            shards.discard();
            return Err(e);
        }
    };
    if read != meta.len() {
        shards.discard();
        return Err(JobError::SourceIo { path: source.to_path_buf(), detail: format!("read {read} bytes of a {}-byte file: it changed while it was compressed; nothing was kept", meta.len()) });
    }
    let name = source.file_name().map_or_else(|| "source".into(), |n| n.to_string_lossy().into_owned());
    let (head, name, sealed) = match sealing {
        Some(mut s) => {
            // The last block is the short one; a stream that ended on a block
            // boundary has none (an empty stream is one empty block).
            if !s.block.is_empty() || s.sealer.blocks() == 0 {
                let n = s.block.len();
                s.block.resize(n + TAG_BYTES, 0);
                let t = Instant::now();
                s.sealer.seal_next(&mut s.block);
                s.sealing += t.elapsed();
                if let Err(e) = shards.put(&s.block) {
                    shards.discard();
                    return Err(e);
                }
            }
            (s.sealer.header().to_vec(), format!("{name}.gz.ppenc"), Some((s.sealer.blocks(), s.sealer.block_bytes(), s.sealing)))
        }
        None => (Vec::new(), format!("{name}.gz"), None),
    };
    let stream_bytes = shards.len;
    let (stripes, coding) = shards.finish(&head, name.clone(), &mode)?;
    if o.quiet {
        return Ok(());
    }
    let secs = started.elapsed().as_secs_f64();
    let n = o.data + o.parity;
    println!(
        "{}: {} -> {} members, {} compressed (level {}){} -> RS({}, {}): {stripes} stripe(s) of {} x {} bytes in {n} shards, {} in {}; {:.3} s, {:.2} GB/s of source, coding {:.2} GB/s (measured on this host's CPU: compress, {}erasure code all ran on {} host thread(s))",
        source.display(),
        peerpath_metrics::human_bytes(read),
        counts.members,
        peerpath_metrics::human_bytes(counts.compressed),
        o.level.get(),
        sealed.map_or(String::new(), |(blocks, b, _)| format!(" -> encrypted, peerpath-enc/1 (AES-256-GCM, {blocks} block(s) of {})", peerpath_metrics::human_bytes(b as u64))),
        o.data,
        o.parity,
        o.data,
        o.unit,
        peerpath_metrics::human_bytes(stripes * (n * o.unit) as u64),
        dir.display(),
        secs,
        read as f64 / secs.max(1e-9) / 1e9,
        stripes as f64 * (n * o.unit) as f64 / coding.as_secs_f64().max(1e-9) / 1e9,
        if sealed.is_some() { "encrypt, " } else { "" },
        o.threads,
    );
    let rate = |bytes: u64, t: Duration| bytes as f64 / t.as_secs_f64().max(1e-9) / 1e9;
    println!(
        "stages on this host's CPU (measured): read {:.3} s; compress {:.3} s on {} thread(s) ({:.2} GB/s a thread){}; erasure code {:.3} s ({:.2} GB/s); bytes through this process's memory: {} of source read, {} of members, {} of shards written",
        counts.reading.as_secs_f64(),
        counts.compressing.as_secs_f64(),
        o.threads,
        rate(read, counts.compressing),
        sealed.map_or(String::new(), |(_, _, t)| format!("; seal {:.3} s ({:.2} GB/s)", t.as_secs_f64(), rate(counts.compressed, t))),
        coding.as_secs_f64(),
        rate(stripes * (n * o.unit) as u64, coding),
        peerpath_metrics::human_bytes(read),
        peerpath_metrics::human_bytes(counts.compressed),
        peerpath_metrics::human_bytes(stripes * (n * o.unit) as u64),
    );
    println!("{}: `peerpath decompress --ec {} -o FILE` (or `ec decode`) gives back the {stream_bytes}-byte {name}", dir.display(), dir.display());
    Ok(())
}

/// Compressed bytes to the next stage: sealed first with `--encrypt`.
fn feed(shards: &mut StreamEncoder, sealing: &mut Option<&mut Sealing>, data: &[u8]) -> Result<(), JobError> {
    match sealing {
        Some(s) => seal_into(s, data, shards),
        None => shards.put(data),
    }
}

/// Adds compressed bytes to the block being sealed; full blocks are sealed
/// and go to the shards.
fn seal_into(s: &mut Sealing, mut data: &[u8], shards: &mut StreamEncoder) -> Result<(), JobError> {
    let block = s.sealer.block_bytes();
    while !data.is_empty() {
        let n = data.len().min(block - s.block.len());
        s.block.extend_from_slice(&data[..n]);
        data = &data[n..];
        if s.block.len() == block {
            s.block.resize(block + TAG_BYTES, 0);
            let t = Instant::now();
            s.sealer.seal_next(&mut s.block);
            s.sealing += t.elapsed();
            shards.put(&s.block)?;
            s.block.clear();
        }
    }
    Ok(())
}

/// The source read in blocks on this thread, compressed on `o.threads`
/// workers, and sealed and coded in order on a sink thread, all stages
/// overlapped (at most two blocks a worker in flight). Gives back the
/// stages' state for the end of the stream.
fn pipeline(src: &mut std::fs::File, source: &Path, o: &ChainOptions, mut shards: StreamEncoder, mut sealing: Option<Sealing>) -> (Result<(Counts, u64), JobError>, StreamEncoder, Option<Sealing>) {
    use std::sync::mpsc::sync_channel;
    let in_flight = 2 * o.threads;
    let (work_tx, work_rx) = sync_channel::<(u64, Vec<u8>)>(in_flight);
    let work_rx = std::sync::Mutex::new(work_rx);
    let (done_tx, done_rx) = sync_channel::<(u64, Vec<u8>)>(in_flight);
    // Buffers go round (blocks: reader -> worker -> reader; members: worker
    // -> sink -> worker) rather than being allocated and faulted in afresh.
    let (spare_blocks, spare_members) = (std::sync::Mutex::new(Vec::<Vec<u8>>::new()), std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let take = |pool: &std::sync::Mutex<Vec<Vec<u8>>>| pool.lock().expect("a buffer pool's lock").pop().unwrap_or_default();
    let give = |pool: &std::sync::Mutex<Vec<Vec<u8>>>, b: Vec<u8>| pool.lock().expect("a buffer pool's lock").push(b);
    let compressing_ns = std::sync::atomic::AtomicU64::new(0);
    let mut reading = Duration::ZERO;
    let (read, counts) = std::thread::scope(|scope| {
        for _ in 0..o.threads {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            let (spare_blocks, spare_members) = (&spare_blocks, &spare_members);
            let (level, format, compressing_ns) = (o.level, o.format, &compressing_ns);
            scope.spawn(move || {
                let mut encoder = MemberEncoder::new(level);
                loop {
                    let next = work_rx.lock().expect("the work queue's lock").recv();
                    let Ok((seq, block)) = next else { return };
                    let mut out = take(spare_members);
                    out.resize(member_bound_bytes(block.len()), 0);
                    let t = Instant::now();
                    let n = encode_member(&mut encoder, format, &block, &mut out);
                    compressing_ns.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                    out.truncate(n);
                    give(spare_blocks, block);
                    if done_tx.send((seq, out)).is_err() {
                        return; // the sink failed
                    }
                }
            });
        }
        drop(done_tx);
        let (shards, sealing, spare_members_sink) = (&mut shards, &mut sealing, &spare_members);
        let sink = scope.spawn(move || -> Result<Counts, JobError> {
            let mut counts = Counts { members: 0, compressed: 0, reading: Duration::ZERO, compressing: Duration::ZERO };
            let mut pending = std::collections::BTreeMap::new();
            for (seq, member) in done_rx {
                pending.insert(seq, member);
                while let Some(member) = pending.remove(&counts.members) {
                    counts.members += 1;
                    counts.compressed += member.len() as u64;
                    feed(shards, &mut sealing.as_mut(), &member)?;
                    give(spare_members_sink, member);
                }
            }
            Ok(counts)
        });
        let read = (|| -> Result<u64, JobError> {
            let mut read = 0u64;
            for seq in 0u64.. {
                let mut b = take(&spare_blocks);
                b.clear();
                let t = Instant::now();
                (&mut *src).take(o.block_size as u64).read_to_end(&mut b).map_err(|e| JobError::SourceIo { path: source.to_path_buf(), detail: e.to_string() })?;
                reading += t.elapsed();
                read += b.len() as u64;
                // An empty source is one empty member, as `compress` makes it.
                let last = b.len() < o.block_size;
                if b.is_empty() && seq > 0 {
                    break;
                }
                if work_tx.send((seq, b)).is_err() || last {
                    break; // the workers stopped: the sink says why
                }
            }
            Ok(read)
        })();
        drop(work_tx);
        (read, sink.join().expect("the sink thread panicked"))
    });
    let ran = match (counts, read) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(c), Ok(r)) => Ok((Counts { reading, compressing: Duration::from_nanos(compressing_ns.into_inner()), ..c }, r)),
    };
    (ran, shards, sealing)
}

/// The shard set's stream as a `Read`; a shard error is kept to be
/// reported as itself (the reader above it sees an I/O error).
struct ShardStream {
    shards: ShardReader,
    buf: Vec<u8>,
    at: usize,
    failed: std::rc::Rc<std::cell::RefCell<Option<JobError>>>,
    /// Time reading stripes (and rebuilding units).
    reading: std::rc::Rc<std::cell::Cell<Duration>>,
}

impl Read for ShardStream {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            self.at = 0;
            let t = Instant::now();
            let next = self.shards.next_stripe(&mut self.buf);
            self.reading.set(self.reading.get() + t.elapsed());
            match next {
                Ok(_) => {}
                Err(e) => {
                    let text = e.to_string();
                    *self.failed.borrow_mut() = Some(e);
                    return Err(std::io::Error::other(text));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `peerpath decompress DIR --ec`: the reverse of `compress --ec` in one
/// pass: the stripes are read (units rebuilt where shards are missing or
/// corrupt), sealed blocks opened as they arrive (a `.gz.ppenc` set), and
/// the members inflated into OUTPUT (on `threads` workers where they
/// declare their sizes, as peerpath's do), which appears whole or not at
/// all. A set holding any other file is refused.
pub(crate) fn decompress_ec(dir: &Path, output: &Path, key: Option<Arc<Key>>, force: bool, threads: usize, quiet: bool) -> Result<(), JobError> {
    let started = Instant::now();
    let shards = ShardReader::open(dir)?;
    let set_bytes = shards.stream_bytes();
    let failed = std::rc::Rc::new(std::cell::RefCell::new(None));
    let reading = std::rc::Rc::new(std::cell::Cell::new(Duration::ZERO));
    let mut stream = std::io::BufReader::with_capacity(1 << 20, ShardStream { shards, buf: Vec::new(), at: 0, failed: failed.clone(), reading: reading.clone() });
    let shard_error = |e: std::io::Error| failed.borrow_mut().take().unwrap_or_else(|| JobError::Damaged { path: dir.to_path_buf(), detail: e.to_string() });
    let first = std::io::BufRead::fill_buf(&mut stream).map_err(shard_error)?;
    let cipher = if first.starts_with(MAGIC) {
        let Some(key) = key else {
            return Err(JobError::Usage(format!("{}: holds an encrypted file (peerpath-enc/1): give its key (--key-file FILE, --key-env VAR or $PEERPATH_KEY)", dir.display())));
        };
        let mut header = [0u8; HEADER_BYTES];
        stream.read_exact(&mut header).map_err(shard_error)?;
        let cipher = FileCipher::open(&key, &header).map_err(|e| JobError::from_crypt(dir, e))?;
        cipher.check_length(set_bytes).map_err(|e| JobError::from_crypt(dir, e))?;
        Some(Arc::new(cipher))
    } else {
        None
    };
    let (mut t, temporary) = peerpath_io::create_temporary(output, false).map_err(|source| JobError::TargetIo { path: output.to_path_buf(), source })?;
    let (mut produced, mut writing, mut input, mut inflating) = (0u64, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let written = (|| -> Result<(), JobError> {
        // A failed write is the target's error (a full disk: exit 11), not a read's.
        let mut write_failed = None;
        let sink = |d: &[u8]| {
            produced += d.len() as u64;
            let at = Instant::now();
            let w = t.file.write_all(d);
            writing += at.elapsed();
            if let Err(e) = &w {
                write_failed = Some(e.raw_os_error().map_or_else(|| std::io::Error::new(e.kind(), e.to_string()), std::io::Error::from_raw_os_error));
            }
            w
        };
        let decoded = match &cipher {
            Some(c) => {
                let plain = BlockReader::new(InOrder(&mut stream), c.clone(), 0).map_err(shard_error)?;
                let mut d = StreamDecoder::new(Timed(plain, &mut input), 0, 0);
                let r = d.run_parallel(threads, true, sink);
                inflating = d.inflating;
                r
            }
            None => {
                let mut d = StreamDecoder::new(Timed(&mut stream, &mut input), 0, 0);
                let r = d.run_parallel(threads, true, sink);
                inflating = d.inflating;
                r
            }
        };
        if let (Err(_), Some(source)) = (&decoded, write_failed) {
            return Err(JobError::TargetIo { path: output.to_path_buf(), source });
        }
        if let Err(e) = decoded {
            // A shard that failed mid-way is named as such, not as bad gzip;
            // a block that fails authentication as such, not as a read error.
            return Err(failed.borrow_mut().take().unwrap_or_else(|| match e {
                peerpath_func::StreamError::Io(io) if io.get_ref().is_some_and(|r| r.is::<peerpath_func::crypt::CryptError>()) => {
                    let crypt = io.into_inner().and_then(|r| r.downcast::<peerpath_func::crypt::CryptError>().ok()).expect("checked above");
                    JobError::from_crypt(dir, *crypt)
                }
                e => peerpath_runtime::decompress::stream_error(dir, e),
            }));
        }
        crate::ec::put_restored_in_place(&t.file, &temporary, output, dir, force)
    })();
    if let Err(e) = written {
        peerpath_io::discard(&temporary);
        return Err(e);
    }
    if quiet {
        return Ok(());
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} -> {}: {} from the shards{}, inflated to {} on {threads} host thread(s) (the shards read and blocks opened on one); {:.3} s, {:.2} GB/s out (measured on this host's CPU)",
        dir.display(),
        output.display(),
        peerpath_metrics::human_bytes(set_bytes),
        if cipher.is_some() { ", each block authenticated and decrypted as it arrived" } else { "" },
        peerpath_metrics::human_bytes(produced),
        secs,
        produced as f64 / secs.max(1e-9) / 1e9
    );
    let reading = reading.get();
    println!(
        "stages on this host's CPU (measured): stripes read and checked (units rebuilt where lost) {:.3} s{}, on the reader thread; inflate {:.3} s summed over {threads} thread(s) ({:.2} GB/s out a thread); write {:.3} s; bytes through this process's memory: {} of stream from the shards, {} written",
        reading.as_secs_f64(),
        if cipher.is_some() { format!(", blocks opened {:.3} s", input.saturating_sub(reading).as_secs_f64()) } else { String::new() },
        inflating.as_secs_f64(),
        produced as f64 / inflating.as_secs_f64().max(1e-9) / 1e9,
        writing.as_secs_f64(),
        peerpath_metrics::human_bytes(set_bytes),
        peerpath_metrics::human_bytes(produced),
    );
    Ok(())
}

/// A reader that adds the time spent in its reads to a clock.
struct Timed<'a, R>(R, &'a mut Duration);

impl<R: Read> Read for Timed<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let t = Instant::now();
        let n = self.0.read(buf);
        *self.1 += t.elapsed();
        n
    }
}
