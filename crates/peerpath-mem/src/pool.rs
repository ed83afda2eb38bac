use crate::{align_up, host_numa_node_of, MemoryDomain, DIRECT_IO_ALIGN_BYTES};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// A buffer of anonymous, page-aligned memory (so aligned for O_DIRECT),
/// with a capacity fixed at allocation and a length (`len`) of valid bytes.
///
/// It is mapped with `mmap` rather than taken from the allocator: an
/// aligned zeroed allocation is `posix_memalign` plus a `memset` in user
/// space, then page faults again in whoever writes it; fresh anonymous
/// pages come zeroed from the kernel, once, on first touch.
/// Buffers this large or larger ask for transparent huge pages.
const HUGE_PAGE_BYTES: usize = 2 << 20;

pub struct AlignedBuf {
    ptr: NonNull<u8>,
    capacity_bytes: usize,
    len: usize,
    /// Found on first ask once the memory is touched (see [`AlignedBuf::domain`]).
    domain: OnceLock<MemoryDomain>,
}

// SAFETY: AlignedBuf owns its allocation exclusively (like Vec<u8>); moving
// it to another thread moves that ownership.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared references only allow reads of the owned bytes.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `capacity_bytes` (rounded up to the alignment) of zeroed,
    /// aligned host memory. Panics where the memory cannot be mapped: a
    /// job's buffers, sized by its options, come from [`AlignedBuf::try_new`].
    pub fn new(capacity_bytes: usize) -> Self {
        Self::try_new(capacity_bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`AlignedBuf::new`], or an error that says how much could not be
    /// mapped (ENOMEM: out of memory, or over the address-space limit, `ulimit -v`).
    pub fn try_new(capacity_bytes: usize) -> std::io::Result<Self> {
        Self::map(capacity_bytes).map_err(|e| out_of_memory(&format!("a buffer of {}", size_words(align_up(capacity_bytes.max(1), DIRECT_IO_ALIGN_BYTES))), e))
    }

    /// The mapping itself; its error is the system call's.
    fn map(capacity_bytes: usize) -> std::io::Result<Self> {
        let capacity_bytes = align_up(capacity_bytes.max(1), DIRECT_IO_ALIGN_BYTES);
        // SAFETY: an anonymous private mapping of a non-zero length at an
        // address of the kernel's choosing touches no existing memory.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                capacity_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(raw as *mut u8).expect("mmap never returns null on success");
        if capacity_bytes >= HUGE_PAGE_BYTES {
            // SAFETY: advice on a mapping we own; it changes how the kernel
            // backs it (2 MiB pages where it can: a 4 MiB I/O buffer takes 2
            // page faults instead of 1,024), never its contents. Failure
            // (THP disabled) leaves ordinary pages, which is fine.
            unsafe { libc::madvise(raw, capacity_bytes, libc::MADV_HUGEPAGE) };
        }
        // The pages stay untouched until the buffer is used: a pool or cache
        // sized for the worst case costs page faults and zeroing only for
        // the buffers a job actually uses.
        Ok(AlignedBuf { ptr, capacity_bytes, len: 0, domain: OnceLock::new() })
    }

    pub fn capacity(&self) -> usize {
        self.capacity_bytes
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Where the buffer's memory lives: the NUMA node of its first page, as
    /// the kernel placed it on first touch. On a one-node machine that is
    /// node 0 without asking; otherwise the kernel is asked once the first
    /// page is resident, and until then the node is unknown (asking earlier
    /// would fault the page in, or report the shared zero page's node).
    pub fn domain(&self) -> &MemoryDomain {
        static UNKNOWN: MemoryDomain = MemoryDomain::Host { numa_node: None };
        if let Some(d) = self.domain.get() {
            return d;
        }
        if let Some(node) = crate::domain::single_numa_node() {
            return self.domain.get_or_init(|| MemoryDomain::Host { numa_node: Some(node) });
        }
        if !self.first_page_resident() {
            return &UNKNOWN;
        }
        // SAFETY: ptr is valid for capacity_bytes >= 1 bytes owned by self;
        // the first page is resident, so this reads a real byte.
        let first = unsafe { &*self.ptr.as_ptr() };
        self.domain.get_or_init(|| MemoryDomain::Host { numa_node: host_numa_node_of(first) })
    }

    fn first_page_resident(&self) -> bool {
        let mut vec = [0u8; 1];
        // SAFETY: mincore reads the page table for one page of a mapping we
        // own (ptr is page-aligned) and writes one byte into `vec`.
        let rc = unsafe { libc::mincore(self.ptr.as_ptr() as *mut libc::c_void, 1, vec.as_mut_ptr()) };
        rc == 0 && vec[0] & 1 == 1
    }

    /// Sets the number of valid bytes. Panics if beyond capacity (a bug).
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.capacity_bytes, "set_len {len} beyond capacity {}", self.capacity_bytes);
        self.len = len;
    }

    /// The whole capacity as a mutable slice (for reads and encoders).
    pub fn spare_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for capacity_bytes initialised (zero-filled) bytes,
        // and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.capacity_bytes) }
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes are initialised and owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for Deref, with exclusive access through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr and capacity_bytes are exactly the mapping made in `new`,
        // and no reference into it outlives self.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.capacity_bytes) };
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("capacity", &self.capacity_bytes)
            .field("domain", &self.domain)
            .finish()
    }
}

/// A mapping of `what` that failed with `e`, said as what it is (of the
/// kind `e` has: a caller can still tell it is out of memory).
fn out_of_memory(what: &str, e: std::io::Error) -> std::io::Error {
    let hint = if e.raw_os_error() == Some(libc::ENOMEM) { " (the machine's memory, or the address-space limit: ulimit -v?)" } else { "" };
    std::io::Error::new(e.kind(), format!("out of memory: cannot map {what}: {e}{hint}"))
}

/// `bytes` in KiB or MiB where whole.
fn size_words(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b % 1024 == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// The pool's idle buffers, and how many threads wait for one (a returned
/// buffer wakes someone only if someone waits: a condvar notify is a futex
/// system call even when no one does).
struct Free {
    buffers: Vec<AlignedBuf>,
    waiters: usize,
    /// Most buffers ever out at once: buffers go back on top of the stack
    /// and come from there, so this is also how many were ever touched.
    peak_in_use: usize,
}

impl Free {
    /// A buffer, and whether this is its first use (it was never handed
    /// out: its pages are not faulted in yet).
    fn take(&mut self, count: usize) -> Option<(AlignedBuf, bool)> {
        let mut buf = self.buffers.pop()?;
        buf.set_len(0);
        let in_use = count - self.buffers.len();
        let first_use = in_use > self.peak_in_use;
        self.peak_in_use = self.peak_in_use.max(in_use);
        Some((buf, first_use))
    }
}

struct PoolInner {
    free: Mutex<Free>,
    available: Condvar,
    buffer_bytes: usize,
    count: usize,
}

/// A fixed set of equal, aligned buffers. `get` blocks while all are in use
/// (back-pressure); a [`PooledBuf`] returns itself to the pool when dropped.
#[derive(Clone)]
pub struct BufferPool {
    inner: Arc<PoolInner>,
}

/// What a pool holds, for the report.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PoolStats {
    pub buffer_count: usize,
    pub buffer_bytes: usize,
    pub total_bytes: usize,
    /// Most buffers in use at once (the others were never touched).
    pub peak_in_use: usize,
}

impl BufferPool {
    /// `count` buffers of `buffer_bytes` each; panics where they cannot be
    /// mapped (a job's pool comes from [`BufferPool::try_new`]).
    pub fn new(count: usize, buffer_bytes: usize) -> Self {
        Self::try_new(count, buffer_bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`BufferPool::new`], or an error that says how much memory the pool
    /// needed where it cannot be mapped (the buffers mapped are unmapped).
    pub fn try_new(count: usize, buffer_bytes: usize) -> std::io::Result<Self> {
        assert!(count > 0, "a buffer pool needs at least one buffer");
        // Those mapped before one fails are unmapped as the vector is dropped.
        let free = (0..count).map(|_| AlignedBuf::map(buffer_bytes)).collect::<std::io::Result<Vec<AlignedBuf>>>().map_err(|e| {
            let each = align_up(buffer_bytes.max(1), DIRECT_IO_ALIGN_BYTES);
            out_of_memory(&format!("a pool of {count} buffers of {} ({})", size_words(each), size_words(count.saturating_mul(each))), e)
        })?;
        let buffer_bytes = free[0].capacity();
        Ok(BufferPool {
            inner: Arc::new(PoolInner {
                free: Mutex::new(Free { buffers: free, waiters: 0, peak_in_use: 0 }),
                available: Condvar::new(),
                buffer_bytes,
                count,
            }),
        })
    }

    /// Takes a buffer, waiting for one to be returned if none is free.
    pub fn get(&self) -> PooledBuf {
        let mut free = self.inner.free.lock().expect("pool lock poisoned");
        loop {
            if let Some((buf, first_use)) = free.take(self.inner.count) {
                return PooledBuf { buf: Some(buf), pool: self.inner.clone(), first_use };
            }
            free.waiters += 1;
            free = self.inner.available.wait(free).expect("pool lock poisoned");
            free.waiters -= 1;
        }
    }

    /// Takes a buffer if one is free, without waiting.
    pub fn try_get(&self) -> Option<PooledBuf> {
        let mut free = self.inner.free.lock().expect("pool lock poisoned");
        free.take(self.inner.count).map(|(buf, first_use)| PooledBuf { buf: Some(buf), pool: self.inner.clone(), first_use })
    }

    pub fn free_count(&self) -> usize {
        self.inner.free.lock().expect("pool lock poisoned").buffers.len()
    }

    pub fn stats(&self) -> PoolStats {
        let peak_in_use = self.inner.free.lock().expect("pool lock poisoned").peak_in_use;
        PoolStats {
            peak_in_use,
            buffer_count: self.inner.count,
            buffer_bytes: self.inner.buffer_bytes,
            total_bytes: self.inner.count * self.inner.buffer_bytes,
        }
    }
}

/// A buffer on loan from a [`BufferPool`].
pub struct PooledBuf {
    buf: Option<AlignedBuf>,
    pool: Arc<PoolInner>,
    first_use: bool,
}

impl Deref for PooledBuf {
    type Target = AlignedBuf;
    fn deref(&self) -> &AlignedBuf {
        self.buf.as_ref().expect("buffer present until drop")
    }
}

impl DerefMut for PooledBuf {
    fn deref_mut(&mut self) -> &mut AlignedBuf {
        self.buf.as_mut().expect("buffer present until drop")
    }
}

impl PooledBuf {
    /// A handle that keeps every buffer of this buffer's pool mapped (the
    /// pool never unmaps a buffer while it lives), for an I/O engine that
    /// registers pool buffers with the kernel once and reuses them.
    pub fn pool_keep_alive(&self) -> Arc<dyn std::any::Any + Send + Sync> {
        self.pool.clone()
    }

    /// Whether this loan is the buffer's first: its pages are faulted in
    /// (allocated and zeroed by the kernel) by whoever touches it first,
    /// or pins it for I/O.
    pub fn first_use(&self) -> bool {
        self.first_use
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            let mut free = self.pool.free.lock().expect("pool lock poisoned");
            free.buffers.push(buf);
            if free.waiters > 0 {
                self.pool.available.notify_one();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_zeroed() {
        let mut b = AlignedBuf::new(5000);
        assert_eq!(b.as_ptr() as usize % DIRECT_IO_ALIGN_BYTES, 0);
        assert_eq!(b.capacity(), 8192);
        assert!(b.spare_mut().iter().all(|&x| x == 0));
        assert!(b.domain().is_host());
    }

    #[test]
    fn pool_recycles_and_blocks_when_empty() {
        let pool = BufferPool::new(2, 4096);
        let a = pool.get();
        let _b = pool.get();
        assert!(pool.try_get().is_none());
        let pool2 = pool.clone();
        let waiter = std::thread::spawn(move || pool2.get().capacity());
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(a);
        assert_eq!(waiter.join().unwrap(), 4096);
        assert_eq!(pool.free_count(), 1);
        assert_eq!(pool.stats().total_bytes, 8192);
        assert_eq!(pool.stats().peak_in_use, 2);
    }

    #[test]
    fn pages_are_touched_only_when_used() {
        let mut b = AlignedBuf::new(4 << 20);
        assert!(!b.first_page_resident(), "a new buffer's pages are not faulted in");
        b.spare_mut()[0] = 1;
        assert!(b.first_page_resident());
        assert!(b.domain().is_host());
    }

    #[test]
    fn a_stack_of_buffers_touches_only_its_peak() {
        let pool = BufferPool::new(8, 4096);
        for _ in 0..10 {
            let a = pool.get();
            let b = pool.try_get().unwrap();
            drop((a, b));
        }
        assert_eq!(pool.stats().peak_in_use, 2);
        let untouched = pool.inner.free.lock().unwrap().buffers[..6].iter().filter(|b| !b.first_page_resident()).count();
        assert_eq!(untouched, 6, "the bottom six buffers were never handed out");
        let (a, b) = (pool.get(), pool.get());
        assert!(!a.first_use() && !b.first_use(), "the two on top were used before");
        let c = pool.get();
        assert!(c.first_use(), "the third is a first use");
        drop((a, b, c));
        assert!(!pool.get().first_use(), "and the next loan of any is not");
    }

    #[test]
    fn a_mapping_the_system_refuses_is_an_error_that_says_so() {
        // More than any address space holds: mmap fails with ENOMEM.
        let e = AlignedBuf::try_new(usize::MAX / 2).expect_err("no such mapping");
        assert_eq!(e.raw_os_error(), None, "the error says what it was mapping");
        let text = e.to_string();
        assert!(text.starts_with("out of memory: cannot map a buffer of ") && text.contains("ulimit -v"), "{text}");
        let Err(e) = BufferPool::try_new(3, 1 << 62) else { panic!("no such pool") };
        assert!(e.to_string().starts_with("out of memory: cannot map a pool of 3 buffers of "), "{e}");
        assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory, "{e}");
        assert!(BufferPool::try_new(2, 4096).is_ok());
    }

    #[test]
    #[should_panic(expected = "beyond capacity")]
    fn set_len_beyond_capacity_is_a_bug() {
        AlignedBuf::new(4096).set_len(4097);
    }
}
