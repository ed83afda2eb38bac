//! An output file on a memory file system, mapped so that compute workers
//! write their results straight into its pages.
//!
//! Writes to one tmpfs file are serialised by its inode lock (one thread's
//! copy at a time, whoever issues them); stores through a shared mapping
//! are not: each worker fills its own pages, and nothing is copied
//! afterwards. The orchestrator grows the file's size (`ftruncate`); the
//! pages of each range exist before a worker stores into it, so a full file
//! system is an `ENOSPC` error from a system call, never a `SIGBUS` from a
//! store. Who allocates them ([`Allocation`]): an allocator thread running
//! ahead of the workers (`fallocate`, one thread: on the lent 16-core
//! machine it filled 384 MiB of one tmpfs file in 0.041 s, while 16 threads
//! allocating their own ranges of that file contend on its page-cache lock
//! and spent 0.4-0.5 s more CPU than decoding alone:
//! bench/results/2026-11-27-gpu-machine-1), or each worker for its own range
//! (`MADV_POPULATE_WRITE`).

use std::io;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex};

/// Who allocates a range's pages before a worker stores into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// An allocator thread, in order, ahead of the workers (`fallocate`).
    AheadOnOneThread,
    /// Each worker its own range (`MADV_POPULATE_WRITE`, `fallocate` where
    /// that fails).
    ByEachWriter,
}

/// Pieces the allocator thread allocates at a time: a worker waits for its
/// range's piece, not for everything grown.
const ALLOCATOR_STEP_BYTES: usize = 8 << 20;

/// What the allocator thread has done, and what it is asked to do.
#[derive(Default)]
struct Progress {
    /// Bytes from offset 0 allocated.
    allocated: usize,
    /// The file's grown size: allocate up to here.
    wanted: usize,
    /// Why allocating at `allocated` failed (an OS error: the pages from
    /// there on do not exist).
    failed: Option<i32>,
    /// The mapping is being dropped: the thread ends.
    stop: bool,
}

struct Allocator {
    progress: Mutex<Progress>,
    /// Signalled when `allocated`, `failed`, `wanted` or `stop` change.
    changed: Condvar,
}

impl Allocator {
    fn run(&self, fd: libc::c_int) {
        let mut p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if p.stop || p.failed.is_some() {
                return;
            }
            if p.allocated >= p.wanted {
                p = self.changed.wait(p).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            let (at, len) = (p.allocated, (p.wanted - p.allocated).min(ALLOCATOR_STEP_BYTES));
            drop(p);
            // SAFETY: fallocate on the mapping's own descriptor, within the
            // file's grown size (mode 0: allocates; the size is already past).
            let rc = unsafe { libc::fallocate(fd, 0, at as libc::off_t, len as libc::off_t) };
            let errno = if rc == 0 { 0 } else { io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) };
            p = self.progress.lock().unwrap_or_else(|e| e.into_inner());
            if errno == 0 {
                p.allocated = at + len;
            } else {
                p.failed = Some(errno);
            }
            self.changed.notify_all();
        }
    }
}

/// A shared, writable mapping of a file, reserved larger than the file will
/// grow (the address space only: pages exist where the file was extended).
pub struct FileMapping {
    ptr: NonNull<u8>,
    reserved: usize,
    file: std::fs::File,
    /// The file's size as grown (`grow_to`), from offset 0.
    len: std::sync::atomic::AtomicUsize,
    /// Held across a growth's read, `ftruncate` and store: two at once could
    /// leave the file shorter than ranges already written (a SIGBUS).
    growing: std::sync::Mutex<()>,
    /// With [`Allocation::AheadOnOneThread`], the allocator thread.
    allocator: Option<(Arc<Allocator>, std::thread::JoinHandle<()>)>,
}

// SAFETY: the mapping is plain shared memory; callers write disjoint ranges
// (see `range`), and the struct itself only holds the address and sizes.
unsafe impl Send for FileMapping {}
// SAFETY: as above; `len` is atomic, and growing the file is serialised (`growing`).
unsafe impl Sync for FileMapping {}

impl FileMapping {
    /// Maps `reserved` bytes of `file` (open for reading and writing: a
    /// shared writable mapping needs both), shared and writable. Nothing is
    /// allocated yet; `allocation` says who will.
    pub fn new(file: std::fs::File, reserved: usize, allocation: Allocation) -> io::Result<FileMapping> {
        if reserved == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "an empty mapping"));
        }
        // SAFETY: a new mapping chosen by the kernel (no address given), of a
        // file we own; MAP_NORESERVE: address space only.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserved,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p as *mut u8).ok_or_else(|| io::Error::other("mmap returned a null address"))?;
        let mut m = FileMapping { ptr, reserved, file, len: std::sync::atomic::AtomicUsize::new(0), growing: std::sync::Mutex::new(()), allocator: None };
        if allocation == Allocation::AheadOnOneThread {
            let a = Arc::new(Allocator { progress: Mutex::default(), changed: Condvar::new() });
            let (a2, fd) = (a.clone(), m.file.as_raw_fd());
            let handle = std::thread::Builder::new().name("peerpath-alloc".into()).spawn(move || a2.run(fd))?;
            m.allocator = Some((a, handle));
        }
        Ok(m)
    }

    /// Who allocates the pages.
    pub fn allocation(&self) -> Allocation {
        if self.allocator.is_some() {
            Allocation::AheadOnOneThread
        } else {
            Allocation::ByEachWriter
        }
    }

    /// Grows the file to `end` bytes (its size only: `ftruncate`, no page
    /// allocated, so the caller's thread does no zeroing). The allocator
    /// thread, or the thread that writes a range, then makes its pages exist
    /// ([`FileMapping::allocate`]). Never shrinks it, from any number of threads.
    pub fn grow_to(&self, end: usize) -> io::Result<()> {
        let _one_at_a_time = self.growing.lock().unwrap_or_else(|e| e.into_inner());
        let len = self.len.load(std::sync::atomic::Ordering::Acquire);
        if end <= len {
            return Ok(());
        }
        if end > self.reserved {
            return Err(io::Error::other(format!("the output grew past the {} bytes mapped for it", self.reserved)));
        }
        self.file.set_len(end as u64)?;
        self.len.store(end, std::sync::atomic::Ordering::Release);
        if let Some((a, _)) = &self.allocator {
            a.progress.lock().unwrap_or_else(|e| e.into_inner()).wanted = end;
            a.changed.notify_all();
        }
        Ok(())
    }

    /// Makes the pages of `[offset, offset + len)` (within the grown file)
    /// exist before a store reaches them: waits for the allocator thread to
    /// pass the range, or allocates them on the calling thread. A full file
    /// system is an error here (`ENOSPC`), never a `SIGBUS` in a store. On
    /// the calling thread:
    /// `MADV_POPULATE_WRITE` reports a failed fault as `EFAULT`, and
    /// `fallocate` on the range then says why. Kernels without
    /// `MADV_POPULATE_WRITE` (before 5.14, or built without madvise)
    /// allocate with `fallocate` alone.
    pub fn allocate(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = offset.checked_add(len).filter(|&e| e <= self.len()).ok_or_else(|| io::Error::other("a range past the grown file"))?;
        let start = crate::align_down(offset, crate::DIRECT_IO_ALIGN_BYTES);
        if end == start {
            return Ok(());
        }
        if let Some((a, _)) = &self.allocator {
            let mut p = a.progress.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if p.allocated >= end {
                    drop(p);
                    // The pages exist: mapping them in one call costs less
                    // than a fault per page in the stores (where it fails,
                    // the stores fault them in; none can be missing).
                    // SAFETY: start..end lies in our mapping and the file
                    // (checked); populating changes no byte.
                    unsafe { libc::madvise(self.ptr.as_ptr().add(start) as *mut libc::c_void, end - start, libc::MADV_POPULATE_WRITE) };
                    return Ok(());
                }
                if let Some(errno) = p.failed {
                    return Err(io::Error::from_raw_os_error(errno));
                }
                p = a.changed.wait(p).unwrap_or_else(|e| e.into_inner());
            }
        }
        // SAFETY: start..end lies in our mapping and the file (checked);
        // populating allocates pages without changing a byte.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().add(start) as *mut libc::c_void, end - start, libc::MADV_POPULATE_WRITE) };
        if rc == 0 {
            return Ok(());
        }
        // EFAULT: a page could not be allocated (fallocate says why); EINVAL:
        // no MADV_POPULATE_WRITE (before 5.14); ENOSYS: no madvise at all
        // (CONFIG_ADVISE_SYSCALLS off, as in the VM's kernel). Whatever it
        // was, fallocate on the range allocates the pages or gives the reason.
        // SAFETY: fallocate on our descriptor within the file's size (mode 0
        // allocates the blocks; the size is already past `end`).
        let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, start as libc::off_t, (end - start) as libc::off_t) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether the file system supports `fallocate` (tmpfs does, ramfs does
    /// not): allocates one byte of an empty file and truncates it back.
    pub fn probe_fallocate(&self) -> io::Result<()> {
        assert_eq!(self.len(), 0, "probe an empty mapping");
        // SAFETY: fallocate on our descriptor, then truncating back to 0.
        let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, 0, 1) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        self.file.set_len(0)
    }

    /// Bytes of the file made to exist.
    pub fn len(&self) -> usize {
        self.len.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes `[offset, offset + len)` of the file, to be written by one
    /// thread.
    ///
    /// # Safety
    /// The range must lie within the grown file and have been allocated
    /// (`allocate`: else a store past a full file system is a `SIGBUS`), and
    /// no other slice of an overlapping range may be alive at the same time.
    #[allow(clippy::mut_from_ref)] // disjoint ranges of shared memory, as documented
    pub unsafe fn range(&self, offset: usize, len: usize) -> &mut [u8] {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len()), "a range past the extended file");
        // SAFETY: within the mapping and the file (asserted); exclusive per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(offset), len) }
    }
}

impl Drop for FileMapping {
    fn drop(&mut self) {
        if let Some((a, handle)) = self.allocator.take() {
            a.progress.lock().unwrap_or_else(|e| e.into_inner()).stop = true;
            a.changed.notify_all();
            let _ = handle.join();
        }
        // SAFETY: our own mapping, unmapped once; no slice outlives `self`
        // (they borrow it).
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.reserved) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_land_in_the_file_and_extending_past_the_reservation_is_an_error() {
        for allocation in [Allocation::ByEachWriter, Allocation::AheadOnOneThread] {
            stores_land_in_the_file(allocation);
        }
    }

    fn stores_land_in_the_file(allocation: Allocation) {
        let dir = tempfile::tempdir_in("/dev/shm").or_else(|_| tempfile::tempdir()).unwrap();
        let path = dir.path().join("out");
        let f = std::fs::OpenOptions::new().create(true).read(true).write(true).truncate(true).open(&path).unwrap();
        let m = FileMapping::new(f, 1 << 20, allocation).unwrap();
        assert_eq!(m.allocation(), allocation);
        m.grow_to(10_000).unwrap();
        m.allocate(0, 5000).unwrap();
        m.allocate(5000, 5000).unwrap();
        assert!(m.allocate(5000, 5001).is_err(), "past the grown size");
        // SAFETY: two disjoint ranges within the grown, allocated file.
        let (a, b) = unsafe { (m.range(0, 5000), m.range(5000, 5000)) };
        a.fill(b'a');
        b.fill(b'b');
        assert!(m.grow_to((1 << 20) + 1).is_err());
        drop(m);
        let got = std::fs::read(&path).unwrap();
        assert_eq!(got.len(), 10_000);
        assert!(got[..5000].iter().all(|&x| x == b'a') && got[5000..].iter().all(|&x| x == b'b'));
    }
}
