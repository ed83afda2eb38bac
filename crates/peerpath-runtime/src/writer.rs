use crate::buf::{BufferCache, JobBuf};
use crate::error::{JobError, Result};
use crate::token::Token;
use peerpath_io::{Inherited, IoEngine, IoOp, OpenedFile, Temporary};
use peerpath_mem::{align_up, AlignedBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{CpuRole, Ledger, Location, Mover, Purpose};
use serde::Serialize;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes per write of packed output (a multiple of the O_DIRECT alignment).
pub const STAGING_BYTES: usize = 4 << 20;

/// Bytes written between background data syncs of a target.
pub const WRITE_BEHIND_BYTES: u64 = 16 << 20;

/// Write-behind: written data is made durable in the background while the
/// job goes on, so the sync before the rename finds little left to do
/// (docs/tuning.md#write-behind).
///
/// A sync runs on its own thread against its own open file description of
/// the temporary file: a write-back error it consumes is still reported to
/// the writer's own description (errors are tracked per description), so
/// the final sync never misses one.
struct WriteBehind {
    every_bytes: u64,
    since: u64,
    /// A separate description, opened at the first sync.
    file: Option<Arc<std::fs::File>>,
    busy: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Duration>>,
    stats: DurabilityReport,
}

/// How a target was made durable: data syncs in the background while it
/// was written, and the final sync (after truncating to its length).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DurabilityReport {
    /// False with `--no-sync`: no data or directory sync was asked for.
    pub synced: bool,
    pub background_syncs: u32,
    pub background_sync_s: f64,
    pub final_sync_s: f64,
}

impl WriteBehind {
    fn new(every_bytes: u64) -> Self {
        let stats = DurabilityReport { synced: true, ..DurabilityReport::default() };
        WriteBehind { every_bytes, since: 0, file: None, busy: Arc::new(AtomicBool::new(false)), thread: None, stats }
    }

    /// Counts written bytes; starts a background data sync every
    /// `every_bytes` unless one is still running.
    fn written(&mut self, n: u64, path: &std::path::Path) {
        self.since += n;
        if self.since < self.every_bytes || self.busy.load(Ordering::Acquire) {
            return;
        }
        self.reap();
        if self.file.is_none() {
            match std::fs::File::open(path) {
                Ok(f) => self.file = Some(Arc::new(f)),
                Err(_) => {
                    // Not worth failing for: the final sync does it all.
                    self.every_bytes = u64::MAX;
                    return;
                }
            }
        }
        let file = self.file.clone().expect("opened above");
        let busy = self.busy.clone();
        busy.store(true, Ordering::Release);
        self.since = 0;
        let spawned = std::thread::Builder::new().name("peerpath-sync".into()).spawn(move || {
            let t = Instant::now();
            let _ = file.sync_data(); // an error is seen again by the final sync
            busy.store(false, Ordering::Release);
            t.elapsed()
        });
        match spawned {
            Ok(h) => self.thread = Some(h),
            Err(_) => self.busy.store(false, Ordering::Release),
        }
    }

    /// Waits for the sync in flight, if any, and counts it.
    fn reap(&mut self) {
        if let Some(h) = self.thread.take() {
            if let Ok(took) = h.join() {
                self.stats.background_syncs += 1;
                self.stats.background_sync_s += took.as_secs_f64();
            }
        }
    }
}

/// Writes a target in order. Output arrives as variable-length pieces;
/// O_DIRECT wants aligned offsets and lengths, so pieces are packed into
/// aligned staging buffers (a CPU copy, recorded in the ledger), full
/// buffers are written, and the last one is padded and the file truncated
/// to its exact length at the end. A piece that is itself aligned, at an
/// aligned position, is written as is (no copy).
pub struct TargetWriter {
    pub target: OpenedFile,
    pub final_path: PathBuf,
    sequential: bool,
    /// How a file target is put in place (`None`: standard output or a pipe).
    placing: Option<Placing>,
    staging: Option<AlignedBuf>,
    /// File offset where the current staging buffer starts.
    staging_offset: u64,
    /// Bytes accepted so far (the file's final length).
    pub logical_len: u64,
    pub writes_in_flight: usize,
    pub bytes_written: u64,
    /// A failed write to a stream already said how much reached it (`io_error`).
    stream_failure_said: AtomicBool,
    target_location: Location,
    via: crate::Via,
    behind: WriteBehind,
    /// Encrypting (`compress --encrypt`): the output is sealed in blocks as it
    /// arrives, each written at its place in a peerpath-enc/1 file, the header last.
    sealer: Option<peerpath_func::crypt::StreamSealer>,
}

/// What putting a file target in place needs.
struct Placing {
    temporary: Temporary,
    /// `--force`: an existing target is replaced (atomically).
    replace: bool,
    /// The source's mode and times, given to the output before it appears.
    inherit: Inherited,
}

impl TargetWriter {
    /// A writer to a temporary file that [`TargetWriter::put_in_place`] publishes as `final_path`.
    pub fn to_file(target: OpenedFile, temporary: Temporary, final_path: PathBuf, replace: bool, inherit: Inherited) -> Self {
        let mut w = TargetWriter::new(target, final_path, false);
        w.placing = Some(Placing { temporary, replace, inherit });
        w
    }

    /// A writer to standard output or a pipe, in order.
    pub fn to_stream(target: OpenedFile, final_path: PathBuf) -> Self {
        TargetWriter::new(target, final_path, true)
    }

    fn new(target: OpenedFile, final_path: PathBuf, sequential: bool) -> Self {
        let target_location = Location::storage(&final_path);
        let via = crate::Via::of(&target);
        TargetWriter {
            target,
            final_path,
            sequential,
            placing: None,
            staging: None,
            staging_offset: 0,
            logical_len: 0,
            writes_in_flight: 0,
            bytes_written: 0,
            stream_failure_said: AtomicBool::new(false),
            target_location,
            via,
            behind: WriteBehind::new(if sequential { u64::MAX } else { WRITE_BEHIND_BYTES }),
            sealer: None,
        }
    }

    /// Seals everything written from now on into a peerpath-enc/1 file (a
    /// file target without O_DIRECT: sealed blocks sit at unaligned offsets).
    pub fn encrypt_with(&mut self, sealer: peerpath_func::crypt::StreamSealer) {
        assert!(!self.sequential && !self.target.direct && self.logical_len == 0, "encryption starts a buffered file target");
        self.sealer = Some(sealer);
    }

    /// Whether the output is being encrypted.
    pub fn encrypting(&self) -> bool {
        self.sealer.is_some()
    }

    /// Background data syncs every `bytes` written instead of
    /// [`WRITE_BEHIND_BYTES`] (`u64::MAX`: none).
    #[cfg(test)]
    pub fn set_write_behind_bytes(&mut self, bytes: u64) {
        self.behind.every_bytes = bytes;
    }

    /// No background syncs and no sync before the rename (`--no-sync`).
    pub fn skip_syncs(&mut self) {
        self.behind.every_bytes = u64::MAX;
        self.behind.stats.synced = false;
    }

    /// Counts bytes a completed write put in the file.
    pub fn note_written(&mut self, n: u64) {
        self.bytes_written += n;
        self.behind.written(n, &self.target.path);
    }

    /// Where the target is, as the ledger names it.
    pub fn target_location(&self) -> &Location {
        &self.target_location
    }

    /// How the target's bytes leave the job's buffers (decided once, at open).
    pub fn via(&self) -> crate::Via {
        self.via
    }

    fn offset(&self, at: u64) -> Option<u64> {
        (!self.sequential).then_some(at)
    }

    fn submit(&mut self, engine: &mut dyn IoEngine<JobBuf>, buf: JobBuf, at: u64, len: usize, token: Token, ledger: &Ledger) -> Result<()> {
        let fd = self.target.file.as_raw_fd();
        crate::record_write(ledger, &self.target_location, self.via, buf.domain(), len as u64);
        let offset = self.offset(at);
        engine.submit(IoOp::Write, fd, offset, len, buf, token.raw()).map_err(|(_, e)| self.io_error(e))?;
        self.writes_in_flight += 1;
        Ok(())
    }

    pub fn io_error(&self, source: std::io::Error) -> JobError {
        let source = if self.placing.is_none() {
            // Standard output keeps what reached it: say how much did (the
            // completed writes, and the part of the failed one that went out).
            let (partly, cause) = peerpath_io::PartlyWritten::split(source);
            self.stream_failure_said.store(true, Ordering::Relaxed);
            std::io::Error::new(cause.kind(), format!("{cause}, after {} bytes had been written to it (they stay there)", self.bytes_written + partly as u64))
        } else {
            source
        };
        JobError::TargetIo { path: self.final_path.clone(), source }
    }

    /// [`TargetWriter::io_error`] for the final sync of standard output on a file or a block
    /// device: every write had succeeded, but a sync that fails (EIO at writeback) may have
    /// lost some of their bytes, which do not "stay there".
    fn sync_error(&self, source: std::io::Error) -> JobError {
        self.stream_failure_said.store(true, Ordering::Relaxed);
        let source = std::io::Error::new(source.kind(), format!("{source}, at the final sync of the {} bytes written to it: they were written, but the sync failed, so they may not all have reached the device", self.bytes_written));
        JobError::TargetIo { path: self.final_path.clone(), source }
    }

    /// Appends bytes by copying them into staging, writing full staging buffers.
    pub fn push(&mut self, data: &[u8], engine: &mut dyn IoEngine<JobBuf>, cache: &mut BufferCache, token: Token, ledger: &Ledger, source_domain: &peerpath_mem::MemoryDomain) -> Result<()> {
        self.copy_in(data, engine, cache, token, ledger, source_domain, Purpose::PackForDirectIo)
    }

    /// [`TargetWriter::push`] for bytes of the format the host makes (a
    /// stream's end marker): booked as metadata, not as payload.
    pub fn push_metadata(&mut self, data: &[u8], engine: &mut dyn IoEngine<JobBuf>, cache: &mut BufferCache, token: Token, ledger: &Ledger) -> Result<()> {
        self.copy_in(data, engine, cache, token, ledger, &peerpath_mem::MemoryDomain::host_unplaced(), Purpose::Metadata)
    }

    /// Copies `data` into staging, booked as `purpose` (or as encryption's, sealing).
    #[allow(clippy::too_many_arguments)]
    fn copy_in(&mut self, data: &[u8], engine: &mut dyn IoEngine<JobBuf>, cache: &mut BufferCache, token: Token, ledger: &Ledger, source_domain: &peerpath_mem::MemoryDomain, purpose: Purpose) -> Result<()> {
        let mut rest = data;
        while !rest.is_empty() {
            if self.staging.is_none() {
                self.staging_offset = self.logical_len;
            }
            // Sealing: one block of plaintext per staging buffer, with room for its tag.
            let (fill, room_for_tag, purpose) = match &self.sealer {
                Some(s) => (s.block_bytes(), peerpath_func::crypt::TAG_BYTES, Purpose::Encrypt),
                None => (STAGING_BYTES, 0, purpose),
            };
            if self.staging.is_none() {
                self.staging = Some(cache.get(fill + room_for_tag)?);
            }
            let staging = self.staging.as_mut().expect("just given one");
            let used = staging.len();
            let room = fill.min(staging.capacity()) - used;
            let n = room.min(rest.len());
            staging.set_len(used + n);
            staging[used..used + n].copy_from_slice(&rest[..n]);
            ledger.record_copy(
                Location::memory(source_domain),
                Location::memory(staging.domain()),
                Mover::Cpu { role: CpuRole::Orchestration },
                purpose,
                n as u64,
            );
            rest = &rest[n..];
            self.logical_len += n as u64;
            if staging.len() == fill.min(staging.capacity()) {
                self.flush_staging(engine, token, ledger)?;
            }
        }
        Ok(())
    }

    /// Appends an owned buffer: written as is when aligned, else packed.
    pub fn push_owned(&mut self, buf: AlignedBuf, engine: &mut dyn IoEngine<JobBuf>, cache: &mut BufferCache, token: Token, ledger: &Ledger) -> Result<()> {
        let aligned = self.sealer.is_none()
            && self.staging.is_none()
            && self.logical_len.is_multiple_of(DIRECT_IO_ALIGN_BYTES as u64)
            && buf.len().is_multiple_of(DIRECT_IO_ALIGN_BYTES)
            && !buf.is_empty();
        if aligned || (self.sealer.is_none() && !self.target.direct && !buf.is_empty() && self.staging.is_none()) {
            let len = buf.len();
            let at = self.logical_len;
            self.logical_len += len as u64;
            return self.submit(engine, JobBuf::Owned(buf), at, len, token, ledger);
        }
        let domain = buf.domain().clone();
        let r = self.push(&buf, engine, cache, token, ledger, &domain);
        cache.put(buf);
        r
    }

    fn flush_staging(&mut self, engine: &mut dyn IoEngine<JobBuf>, token: Token, ledger: &Ledger) -> Result<()> {
        if let Some(sealer) = self.sealer.as_mut() {
            // Seal the block in place, then write it where its index puts it.
            let Some(mut block) = self.staging.take() else { return Ok(()) };
            let n = block.len();
            block.set_len(n + peerpath_func::crypt::TAG_BYTES);
            let at = sealer.seal_next(&mut block);
            let host = Location::memory(block.domain());
            ledger.record(host.clone(), host, Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Encrypt, n as u64, block.len() as u64);
            let len = block.len();
            return self.submit(engine, JobBuf::Owned(block), at, len, token, ledger);
        }
        let Some(mut staging) = self.staging.take() else { return Ok(()) };
        let len = staging.len();
        if len == 0 {
            return Ok(());
        }
        let at = self.staging_offset;
        // O_DIRECT: pad the final, partial buffer; the file is truncated later.
        let write_len = if self.target.direct { align_up(len, DIRECT_IO_ALIGN_BYTES) } else { len };
        if write_len > len {
            staging.set_len(write_len);
            staging[len..write_len].fill(0);
        }
        self.submit(engine, JobBuf::Owned(staging), at, write_len, token, ledger)
    }

    /// Counts `n` bytes that compute workers stored straight into the
    /// target's mapped pages (a memory file system's file), next in order.
    pub fn mapped_written(&mut self, n: u64, ledger: &Ledger) {
        assert!(self.staging.is_none(), "mapped output after staged writes");
        self.logical_len += n;
        self.bytes_written += n;
        let page_cache = Location::memory(&peerpath_mem::MemoryDomain::host_unplaced());
        // Each fresh page is zeroed by the kernel when a worker faults it in,
        // then decoded into (the function's own entry). The pages are the
        // memory file itself: nothing moves them to storage (no DMA).
        ledger.record(page_cache.clone(), page_cache, Mover::Cpu { role: CpuRole::Compute }, Purpose::ZeroPages, 0, n);
    }

    /// Called for each completed write of this target.
    pub fn on_write_complete(&mut self, result: std::io::Result<usize>, buf: JobBuf, cache: &mut BufferCache) -> Result<()> {
        self.writes_in_flight -= 1;
        let expected = buf.len();
        if let JobBuf::Owned(b) = buf {
            cache.put(b);
        }
        match result {
            Ok(n) if n == expected => {
                self.note_written(n as u64);
                Ok(())
            }
            Ok(n) => Err(self.io_error(std::io::Error::other(format!("short write: {n} of {expected} bytes")))),
            Err(e) => Err(self.io_error(e)),
        }
    }

    /// Writes what is left in staging. Then, once no writes are in flight, `finalize` and `rename_into_place`.
    pub fn finish(&mut self, engine: &mut dyn IoEngine<JobBuf>, token: Token, ledger: &Ledger) -> Result<()> {
        if self.sealer.is_none() {
            return self.flush_staging(engine, token, ledger);
        }
        // The last block: the short one in staging, or an empty one where the
        // stream is empty (a stream that ended on a block boundary has none).
        if self.staging.is_none() && self.logical_len == 0 {
            self.staging = Some(AlignedBuf::try_new(peerpath_func::crypt::TAG_BYTES).map_err(crate::buf::out_of_memory)?);
        }
        self.flush_staging(engine, token, ledger)?;
        let header = self.sealer.as_ref().expect("checked").header();
        let mut buf = AlignedBuf::try_new(header.len()).map_err(crate::buf::out_of_memory)?;
        buf.set_len(header.len());
        buf.copy_from_slice(&header);
        ledger.record_copy(Location::memory(buf.domain()), Location::memory(buf.domain()), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Metadata, header.len() as u64);
        self.submit(engine, JobBuf::Owned(buf), 0, header.len(), token, ledger)
    }

    /// The file's final length: what was accepted, or (encrypting) the
    /// sealed file's.
    pub fn file_len(&self) -> u64 {
        self.sealer.as_ref().map_or(self.logical_len, |s| s.file_bytes())
    }

    /// Truncates to the exact length, gives it the source's mode and times,
    /// and syncs unless told not to (not yet visible). Standard output that
    /// is a file or a block device is synced too: a write the kernel fails
    /// only at writeback (EIO) fails the job, not a job said to succeed.
    pub fn finalize(&mut self) -> Result<()> {
        assert_eq!(self.writes_in_flight, 0, "finalize with writes in flight");
        let Some(placing) = &self.placing else {
            let file = &self.target.file;
            let syncable = file.metadata().is_ok_and(|m| m.is_file() || std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()));
            if self.behind.stats.synced && syncable {
                match file.sync_data() {
                    // A file system that takes no sync (EINVAL, ENOTSUP) lost nothing by it.
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOTSUP)) => {}
                    r => r.map_err(|e| self.sync_error(e))?,
                }
            }
            return Ok(());
        };
        self.behind.reap();
        let t = Instant::now();
        let file = &self.target.file;
        file.set_len(self.file_len()).map_err(|e| self.io_error(e))?;
        placing.inherit.apply(file).map_err(|e| self.io_error(e))?;
        if self.behind.stats.synced {
            file.sync_all().map_err(|e| self.io_error(e))?;
            self.behind.stats.final_sync_s = t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// Puts a finalized output in place under its final name: never over
    /// an existing file (not even one that appeared since the job started)
    /// unless told to replace. Returns whether a new name was made (not
    /// replaced), so a job that fails later can take its outputs back: a new
    /// name is also on the signal list from the same step (a signal before the
    /// job's last output is in place removes it too) until the caller calls
    /// [`peerpath_io::settled`] with it. The caller then syncs the directories
    /// ([`sync_directories`]), once for all its outputs. On failure the
    /// temporary file is removed.
    pub fn put_in_place(self) -> Result<bool> {
        let Some(placing) = &self.placing else { return Ok(false) };
        // A new name, also with --force: on the signal list (and taken back on a later failure).
        let published = match peerpath_io::publish_provisional(&self.target.file, &placing.temporary, &self.final_path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && placing.replace => {
                peerpath_io::publish(&self.target.file, &placing.temporary, &self.final_path, true).map(|()| false)
            }
            r => r.map(|()| true),
        };
        match published {
            Ok(new_name) => Ok(new_name),
            Err(e) => {
                peerpath_io::discard(&placing.temporary);
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    Err(JobError::TargetExists { path: self.final_path.clone() })
                } else {
                    Err(self.io_error(e))
                }
            }
        }
    }

    /// How the output was made durable, where it was (not standard output).
    pub fn durability_report(&self) -> Option<DurabilityReport> {
        (!self.sequential).then(|| self.behind.stats.clone())
    }

    /// Writes to a pipe or standard output (in order, no renaming).
    pub fn is_sequential(&self) -> bool {
        self.sequential
    }

    /// Goes on at `len` bytes: what was written before (by a device) stays.
    /// `len` is aligned when the target takes O_DIRECT.
    pub fn resume_at(&mut self, len: u64) {
        assert!(self.staging.is_none() && self.writes_in_flight == 0, "resume_at on a busy writer");
        self.logical_len = len;
        self.staging_offset = len;
    }

    /// Goes on at `len` after a device wrote the target's first `len` bytes
    /// (its writes all completed). O_DIRECT writes whole aligned extents, so
    /// the device's bytes of the last partial one, from `len` rounded down to
    /// the alignment, are read back from the target and written again with
    /// what follows (at most 4 KiB: the page cache's copy, in the ledger).
    pub fn resume_after_device(&mut self, len: u64, ledger: &Ledger) -> Result<()> {
        self.resume_at(len);
        let from = len - len % DIRECT_IO_ALIGN_BYTES as u64;
        if !self.target.direct || from == len {
            return Ok(());
        }
        let n = (len - from) as usize;
        let mut staging = AlignedBuf::try_new(STAGING_BYTES).map_err(crate::buf::out_of_memory)?;
        staging.set_len(n);
        // The target is open for writing only: read it through a second open
        // file description of the same file (it may have no name yet).
        let fd = self.target.file.as_raw_fd();
        std::fs::File::open(format!("/proc/self/fd/{fd}"))
            .and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut staging[..n], from))
            .map_err(|e| self.io_error(std::io::Error::new(e.kind(), format!("reading back the {n} bytes a failed device wrote before byte {len}, to go on after them: {e}"))))?;
        let kernel = Location::memory(&peerpath_mem::MemoryDomain::host_unplaced());
        ledger.record_copy(self.target_location.clone(), kernel.clone(), Mover::Dma { engine: "storage controller".into() }, Purpose::PackForDirectIo, n as u64);
        ledger.record_copy(kernel, Location::memory(staging.domain()), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::PackForDirectIo, n as u64);
        self.staging = Some(staging);
        self.staging_offset = from;
        Ok(())
    }

    /// Removes the partial output (on any failure). What went to standard
    /// output or a pipe cannot be taken back: how much did is said (the
    /// reader got a stream cut short, and the error alone does not say so).
    pub fn abandon(mut self) {
        self.behind.reap();
        match &self.placing {
            Some(p) => peerpath_io::discard(&p.temporary),
            // A write that failed said it already (and a reader gone, EPIPE, is not to be talked about).
            None if self.bytes_written > 0 && !self.stream_failure_said.load(Ordering::Relaxed) => {
                let to = if crate::job::is_std_stream(&self.final_path) { "standard output".to_string() } else { crate::report::Quoted(&self.final_path).to_string() };
                // Not eprintln!: it panics where standard error is closed.
                let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("peerpath: {} bytes had reached {to} before the job failed: they stay there (a stream cannot be taken back)\n", self.bytes_written));
            }
            None => {}
        }
    }
}

/// Syncs each directory the renamed `targets` are in, once: the renames
/// become durable (each sync is a journal commit and a cache flush).
pub fn sync_directories<'a>(targets: impl IntoIterator<Item = &'a std::path::Path>) {
    let mut done: Vec<PathBuf> = Vec::new();
    for t in targets {
        let dir = match t.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if done.contains(&dir) {
            continue;
        }
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        done.push(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use peerpath_io::{Completion, SyncEngine, Waker};

    /// Writes `data` through a writer in pieces, finalizes and renames it.
    fn write_all(dir: &std::path::Path, data: &[u8], behind_bytes: u64) -> (PathBuf, DurabilityReport) {
        let final_path = dir.join("out.bin");
        let (target, temporary) = peerpath_io::create_temporary(&final_path, true).unwrap();
        let mut w = TargetWriter::to_file(target, temporary, final_path.clone(), false, Inherited::default());
        w.set_write_behind_bytes(behind_bytes);
        let mut engine = SyncEngine::<JobBuf>::new();
        let (mut cache, ledger, waker) = (BufferCache::new(4), Ledger::new(), Waker::new().unwrap());
        let host = peerpath_mem::MemoryDomain::host_unplaced();
        let mut done: Vec<Completion<JobBuf>> = Vec::new();
        let mut drain = |w: &mut TargetWriter, engine: &mut SyncEngine<JobBuf>, cache: &mut BufferCache| {
            while engine.in_flight() > 0 {
                engine.wait(&mut done, &waker).unwrap();
                for c in done.drain(..) {
                    w.on_write_complete(c.result, c.buf, cache).unwrap();
                }
            }
        };
        for piece in data.chunks(300_001) {
            w.push(piece, &mut engine, &mut cache, Token::write(1), &ledger, &host).unwrap();
            drain(&mut w, &mut engine, &mut cache);
        }
        w.finish(&mut engine, Token::write(1), &ledger).unwrap();
        drain(&mut w, &mut engine, &mut cache);
        w.finalize().unwrap();
        let report = w.durability_report().expect("a file target");
        assert!(w.put_in_place().unwrap(), "a new name");
        sync_directories([final_path.as_path()]);
        (final_path, report)
    }

    /// Standard output on a file whose final sync fails (a writeback EIO): the bytes written are
    /// not said to stay there. One whose file system takes no sync (procfs's: EINVAL) lost
    /// nothing by it: no error.
    #[test]
    fn a_failed_final_sync_of_standard_output_does_not_say_its_bytes_stay() {
        let file = std::fs::OpenOptions::new().write(true).open("/proc/self/comm").unwrap();
        let target = OpenedFile { file, path: PathBuf::from("-"), kind: peerpath_io::SourceKind::Stream, direct: false, direct_refused: None };
        let mut w = TargetWriter::to_stream(target, PathBuf::from("-"));
        w.note_written(5);
        let e = w.sync_error(std::io::Error::from_raw_os_error(libc::EIO)).to_string();
        assert!(e.contains("at the final sync of the 5 bytes written to it") && e.contains("may not all have reached the device"), "{e}");
        assert!(!e.contains("they stay there"), "{e}");
        if w.target.file.sync_data().is_err_and(|e| e.raw_os_error() == Some(libc::EINVAL)) {
            w.finalize().expect("a file that takes no sync is no failure");
        }
    }

    #[test]
    fn write_behind_syncs_in_the_background_and_the_output_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(20u32 << 20) + 12345).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let (path, report) = write_all(dir.path(), &data, 4 << 20);
        assert_eq!(std::fs::read(&path).unwrap(), data, "the target holds exactly the bytes pushed");
        // 20 MiB in 4 MiB writes, a sync every 4 MiB unless one still runs: at least one ran.
        assert!(report.background_syncs >= 1, "{report:?}");
        assert!(report.background_syncs <= 5, "{report:?}");
    }

    #[test]
    fn without_write_behind_only_the_final_sync_runs() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![7u8; (9 << 20) + 1];
        let (path, report) = write_all(dir.path(), &data, u64::MAX);
        assert_eq!(std::fs::read(&path).unwrap(), data);
        assert_eq!(report.background_syncs, 0);
    }
}
