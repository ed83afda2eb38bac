use crate::buf::{BufferCache, JobBuf};
use crate::error::{JobError, Result};
use peerpath_io::{IoEngine, IoOp, OpenedFile};
use peerpath_mem::{align_up, AlignedBuf, DIRECT_IO_ALIGN_BYTES};
use peerpath_metrics::{CpuRole, Ledger, Location, Mover, Purpose};
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Bytes per write of packed output (a multiple of the O_DIRECT alignment).
pub const STAGING_BYTES: usize = 4 << 20;

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
    staging: Option<AlignedBuf>,
    /// File offset where the current staging buffer starts.
    staging_offset: u64,
    /// Bytes accepted so far (the file's final length).
    pub logical_len: u64,
    pub writes_in_flight: usize,
    pub bytes_written: u64,
    target_location: Location,
}

impl TargetWriter {
    pub fn new(target: OpenedFile, final_path: PathBuf, sequential: bool) -> Self {
        let target_location = Location::storage(final_path.display().to_string());
        TargetWriter {
            target,
            final_path,
            sequential,
            staging: None,
            staging_offset: 0,
            logical_len: 0,
            writes_in_flight: 0,
            bytes_written: 0,
            target_location,
        }
    }

    fn offset(&self, at: u64) -> Option<u64> {
        (!self.sequential).then_some(at)
    }

    fn submit(&mut self, engine: &mut dyn IoEngine<JobBuf>, buf: JobBuf, at: u64, len: usize, token: u64, ledger: &Ledger) -> Result<()> {
        let fd = self.target.file.as_raw_fd();
        crate::record_write(ledger, &self.target_location, self.target.direct, buf.domain(), len as u64);
        let offset = self.offset(at);
        engine.submit(IoOp::Write, fd, offset, len, buf, token).map_err(|(_, e)| self.io_error(e))?;
        self.writes_in_flight += 1;
        Ok(())
    }

    pub fn io_error(&self, source: std::io::Error) -> JobError {
        JobError::TargetIo { path: self.final_path.clone(), source }
    }

    /// Appends bytes by copying them into staging, writing full staging buffers.
    pub fn push(&mut self, data: &[u8], engine: &mut dyn IoEngine<JobBuf>, cache: &mut BufferCache, token: u64, ledger: &Ledger, source_domain: &peerpath_mem::MemoryDomain) -> Result<()> {
        let mut rest = data;
        while !rest.is_empty() {
            if self.staging.is_none() {
                self.staging_offset = self.logical_len;
            }
            let staging = self.staging.get_or_insert_with(|| cache.get(STAGING_BYTES));
            let used = staging.len();
            let room = staging.capacity() - used;
            let n = room.min(rest.len());
            staging.set_len(used + n);
            staging[used..used + n].copy_from_slice(&rest[..n]);
            ledger.record_copy(
                Location::memory(source_domain),
                Location::memory(staging.domain()),
                Mover::Cpu { role: CpuRole::Orchestration },
                Purpose::PackForDirectIo,
                n as u64,
            );
            rest = &rest[n..];
            self.logical_len += n as u64;
            if staging.len() == staging.capacity() {
                self.flush_staging(engine, token, ledger)?;
            }
        }
        Ok(())
    }

    /// Appends an owned buffer: written as is when aligned, else packed.
    pub fn push_owned(&mut self, buf: AlignedBuf, engine: &mut dyn IoEngine<JobBuf>, cache: &mut BufferCache, token: u64, ledger: &Ledger) -> Result<()> {
        let aligned = self.staging.is_none()
            && self.logical_len.is_multiple_of(DIRECT_IO_ALIGN_BYTES as u64)
            && buf.len().is_multiple_of(DIRECT_IO_ALIGN_BYTES)
            && !buf.is_empty();
        if aligned || (!self.target.direct && !buf.is_empty() && self.staging.is_none()) {
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

    fn flush_staging(&mut self, engine: &mut dyn IoEngine<JobBuf>, token: u64, ledger: &Ledger) -> Result<()> {
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

    /// Called for each completed write of this target.
    pub fn on_write_complete(&mut self, result: std::io::Result<usize>, buf: JobBuf, cache: &mut BufferCache) -> Result<()> {
        self.writes_in_flight -= 1;
        let expected = buf.len();
        if let JobBuf::Owned(b) = buf {
            cache.put(b);
        }
        match result {
            Ok(n) if n == expected => {
                self.bytes_written += n as u64;
                Ok(())
            }
            Ok(n) => Err(self.io_error(std::io::Error::other(format!("short write: {n} of {expected} bytes")))),
            Err(e) => Err(self.io_error(e)),
        }
    }

    /// Writes what is left in staging. Then, once no writes are in flight, `finalize` and `rename_into_place`.
    pub fn finish(&mut self, engine: &mut dyn IoEngine<JobBuf>, token: u64, ledger: &Ledger) -> Result<()> {
        self.flush_staging(engine, token, ledger)
    }

    /// Truncates to the exact length and syncs (not yet visible).
    pub fn finalize(&mut self) -> Result<()> {
        assert_eq!(self.writes_in_flight, 0, "finalize with writes in flight");
        if self.sequential {
            return Ok(());
        }
        let file = &self.target.file;
        file.set_len(self.logical_len).map_err(|e| self.io_error(e))?;
        file.sync_all().map_err(|e| self.io_error(e))
    }

    /// Puts a finalized output in place (renames over the final name and
    /// syncs the directory).
    pub fn rename_into_place(self) -> Result<()> {
        if self.sequential {
            return Ok(());
        }
        std::fs::rename(&self.target.path, &self.final_path).map_err(|e| self.io_error(e))?;
        if let Some(dir) = self.final_path.parent() {
            let dir = if dir.as_os_str().is_empty() { std::path::Path::new(".") } else { dir };
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
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

    /// Removes the partial output (on any failure).
    pub fn abandon(self) {
        if !self.sequential {
            let _ = std::fs::remove_file(&self.target.path);
        }
    }
}
