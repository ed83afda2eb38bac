use serde::Serialize;
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

/// A buffer an engine can read into or write from. Implemented by the
/// memory layer's buffers; the engine never looks at the bytes.
///
/// # Safety
/// The engine hands `io_ptr()..io_ptr() + io_capacity()` to the kernel and
/// then moves the buffer (into its table of requests in flight) until the
/// transfer completes. An implementation must keep those bytes at that
/// address, valid and used by nothing else, for as long as the value lives:
/// they may not be stored inline in the value (it moves), nor be freed,
/// swapped or reached by another owner while the buffer exists.
pub unsafe trait IoBuf: Send + 'static {
    /// Start of the buffer.
    fn io_ptr(&mut self) -> *mut u8;
    /// Bytes the buffer can hold.
    fn io_capacity(&self) -> usize;
    /// Whether only O_DIRECT transfers may touch it (P2P memory: buffered
    /// I/O would have the CPU copy the payload through the device's BAR).
    fn needs_direct_io(&self) -> bool {
        false
    }
    /// The long-lived mapping this buffer lies in, if the engine may
    /// register it with the kernel once and reuse it (io_uring fixed
    /// buffers: the pages are pinned at registration instead of at every
    /// transfer). `None` for memory that may be unmapped while the engine
    /// lives, and for P2P memory.
    fn fixed_span(&self) -> Option<FixedSpan> {
        None
    }
}

/// A mapping an engine may register whole or by prefix: `base..base + len`,
/// kept mapped by `owner` for as long as the engine holds it, so the
/// address cannot be reused by another mapping while it is registered.
pub struct FixedSpan {
    pub base: *const u8,
    pub len: usize,
    pub owner: Arc<dyn std::any::Any + Send + Sync>,
}

/// What an engine did with fixed (registered) buffers, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FixedBufferStats {
    /// Bytes of memory registered (a mapping's overlapping prefixes count
    /// once: its longest).
    pub registered_bytes: u64,
    /// Transfers that used a registered buffer.
    pub fixed_transfers: u64,
    /// Transfers that did not (buffers without a span, or after a refusal).
    pub other_transfers: u64,
    /// CPU time (user + system, of the thread that registered) spent
    /// registering: pinning pages, and faulting in those never touched.
    pub registration_cpu_s: f64,
    /// Why registration was refused or is unavailable, if it was.
    pub refused: Option<String>,
}

impl FixedBufferStats {
    /// Adds another engine's figures (the first refusal is kept).
    pub fn merge(&mut self, other: &FixedBufferStats) {
        self.registered_bytes += other.registered_bytes;
        self.fixed_transfers += other.fixed_transfers;
        self.other_transfers += other.other_transfers;
        self.registration_cpu_s += other.registration_cpu_s;
        if self.refused.is_none() {
            self.refused.clone_from(&other.refused);
        }
    }
}

/// Refuses a transfer into or out of a buffer that needs O_DIRECT on a file
/// descriptor opened without it. The kernel would accept it (a buffered
/// read into P2P memory succeeds: the page cache copies with the CPU), so
/// the engine refuses it itself.
pub(crate) fn check_direct_io<B: IoBuf>(fd: RawFd, buf: &B) -> io::Result<()> {
    if !buf.needs_direct_io() {
        return Ok(());
    }
    // SAFETY: F_GETFL reads the open file description's flags; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_DIRECT == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing buffered I/O into or out of P2P memory: without O_DIRECT the page cache would copy \
             the payload with the CPU through the device's BAR mapping (slow, and not peer to peer); \
             open the file with O_DIRECT on a file system or block device that does DMA",
        ));
    }
    // A block device's node lives on devtmpfs (a tmpfs): its statfs says
    // nothing about where its data goes. Only regular files are checked.
    // SAFETY: stat is plain integers, for which all zero bytes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes one stat struct, which we own, for an fd we were given.
    let is_regular = unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG;
    if is_regular && peerpath_mem::on_memory_file_system(fd) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing I/O between a memory file system (tmpfs or ramfs) and P2P memory: they take O_DIRECT \
             (tmpfs since Linux 6.6) but copy with the CPU, there is no DMA to go peer to peer; \
             use a file on a block device",
        ));
    }
    Ok(())
}


// SAFETY: an AlignedBuf owns its heap allocation, which never moves or is shared.
unsafe impl IoBuf for peerpath_mem::AlignedBuf {
    fn io_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    fn io_capacity(&self) -> usize {
        self.capacity()
    }
}

// SAFETY: a PooledBuf owns one of the pool's heap buffers until it is dropped, when the buffer
// goes back to the pool (not before: the pool hands it out again only then).
unsafe impl IoBuf for peerpath_mem::PooledBuf {
    fn io_ptr(&mut self) -> *mut u8 {
        self.as_mut_ptr()
    }
    fn io_capacity(&self) -> usize {
        self.capacity()
    }
    fn fixed_span(&self) -> Option<FixedSpan> {
        Some(FixedSpan { base: self.as_ptr(), len: self.capacity(), owner: self.pool_keep_alive() })
    }
}

/// Device memory (P2P or emulated): the engine hands the range's address to
/// the kernel for DMA and never touches the bytes.
// SAFETY: a RegionBuf is a claim on a range of a mapping it keeps mapped; the range is the
// claim's alone until it is dropped (the region's allocator gives it out again only then).
unsafe impl IoBuf for peerpath_mem::RegionBuf {
    fn io_ptr(&mut self) -> *mut u8 {
        peerpath_mem::RegionBuf::io_ptr(self)
    }
    fn io_capacity(&self) -> usize {
        self.capacity()
    }
    fn needs_direct_io(&self) -> bool {
        matches!(self.domain(), peerpath_mem::MemoryDomain::P2p { .. })
    }
    fn fixed_span(&self) -> Option<FixedSpan> {
        region_fixed_span(self.region())
    }
}

/// A device-memory region as a fixed span: all of it, kept mapped by the
/// region itself. `None` for P2P memory: registration pins pages with
/// FOLL_LONGTERM, which the kernel refuses for ZONE_DEVICE (P2PDMA) pages;
/// those take the per-transfer FOLL_PCI_P2PDMA path of O_DIRECT.
pub fn region_fixed_span(region: &Arc<peerpath_mem::MappedRegion>) -> Option<FixedSpan> {
    if matches!(region.domain(), peerpath_mem::MemoryDomain::P2p { .. }) {
        return None;
    }
    Some(FixedSpan { base: region.as_ptr(), len: region.len(), owner: region.clone() })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    Read,
    Write,
}

/// A finished request: the buffer comes back whatever happened.
#[derive(Debug)]
pub struct Completion<B> {
    pub token: u64,
    pub op: IoOp,
    pub buf: B,
    /// Bytes transferred. A read shorter than asked means end of file.
    pub result: io::Result<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    IoUring,
    Syscalls,
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Syscalls => "pread/pwrite",
        })
    }
}

/// The I/O path one file took, for the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IoPath {
    pub engine: EngineKind,
    pub direct: bool,
    /// Why this is not io_uring + O_DIRECT, if it is not.
    pub fallback_reason: Option<String>,
}

impl fmt::Display for IoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.engine, if self.direct { "+ O_DIRECT" } else { "(buffered)" })?;
        if let Some(r) = &self.fallback_reason {
            write!(f, " [{r}]")?;
        }
        Ok(())
    }
}

/// An I/O engine: a fixed-depth queue of reads and writes.
pub trait IoEngine<B: IoBuf>: Send {
    fn kind(&self) -> EngineKind;

    /// Queues a request for `len` bytes at `offset` (`None`: the file's
    /// current position, for pipes). `len` must fit in the buffer. The
    /// engine retries short transfers itself; a read completes short only
    /// at end of file. On a submission error the buffer comes back.
    fn submit(&mut self, op: IoOp, fd: RawFd, offset: Option<u64>, len: usize, buf: B, token: u64)
        -> Result<(), (B, io::Error)>;

    /// Requests submitted and not yet returned by `wait`.
    fn in_flight(&self) -> usize;

    /// Blocks until at least one request completes or `waker` fires, and
    /// appends what completed to `out`.
    fn wait(&mut self, out: &mut Vec<Completion<B>>, waker: &crate::Waker) -> io::Result<()>;

    /// Makes [`IoEngine::wait`] also return when the eventfd `fd` is
    /// signalled, and consume the signal (read its counter), from now until
    /// [`IoEngine::unwatch_eventfd`]: one sleep covers storage, workers and
    /// devices, with no thread in between to relay a device's signal.
    /// Returns false when this engine cannot (the caller then relays it).
    fn watch_eventfd(&mut self, _fd: RawFd) -> bool {
        false
    }

    /// Stops watching `fd` (call before it is closed).
    fn unwatch_eventfd(&mut self, _fd: RawFd) {}

    /// Runs the requests on `fd` on the kernel's I/O worker threads rather
    /// than in the submitting thread. For files whose I/O is a CPU copy
    /// (memory file systems): io_uring completes such a read or write
    /// inline, so one orchestrating thread would do every copy of the job
    /// itself; on its workers, reads run in parallel and writes beside the
    /// orchestrator. A no-op for engines that have no such workers.
    fn copy_on_kernel_workers(&mut self, _fd: RawFd) {}

    /// Registers the first `bytes` of `span` now (fixed buffers), so the
    /// pages are pinned, and faulted in if new, at setup rather than in the
    /// middle of the transfers. A no-op for engines without fixed buffers;
    /// a refusal is kept in [`IoEngine::fixed_buffers`].
    fn register_ahead(&mut self, _span: FixedSpan, _bytes: usize) {}

    /// Its use of fixed (registered) buffers; `None` for an engine that has
    /// no such thing (plain syscalls).
    fn fixed_buffers(&self) -> Option<FixedBufferStats> {
        None
    }

    /// Why some of its transfers were done by plain syscalls after all, where
    /// any were (requests the kernel cancelled), for the report; `None` where
    /// every one went as its [`IoEngine::kind`] says.
    fn done_by_syscalls(&self) -> Option<String> {
        None
    }
}

/// A write without an offset (to a pipe or standard output) that failed
/// after some of its bytes went out: those cannot be taken back, so the
/// engines say how many (`io::Error::get_ref` downcasts to this; the
/// error's kind is the cause's). Positional writes fail whole.
#[derive(Debug)]
pub struct PartlyWritten {
    pub done: usize,
    pub cause: std::io::Error,
}

impl std::fmt::Display for PartlyWritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.cause.fmt(f)
    }
}

impl std::error::Error for PartlyWritten {}

impl PartlyWritten {
    /// `cause`, or the same wrapped with `done` where a sequential write got that far.
    pub(crate) fn wrap(cause: std::io::Error, op: IoOp, offset: Option<u64>, done: usize) -> std::io::Error {
        if op == IoOp::Write && offset.is_none() && done > 0 {
            std::io::Error::new(cause.kind(), PartlyWritten { done, cause })
        } else {
            cause
        }
    }

    /// The bytes of a failed sequential write that went out, and its cause as the OS gave it.
    pub fn split(e: std::io::Error) -> (usize, std::io::Error) {
        match e.get_ref().and_then(|r| r.downcast_ref::<PartlyWritten>()) {
            Some(_) => {
                let p = *e.into_inner().expect("checked").downcast::<PartlyWritten>().expect("checked");
                (p.done, p.cause)
            }
            None => (0, e),
        }
    }
}
