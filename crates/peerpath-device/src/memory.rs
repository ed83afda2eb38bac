//! A device's memory, addressed by offset, and the table of ranges that
//! commands in flight are using.

use crate::request::{DeviceRange, Request, Status};
use peerpath_mem::{AlignedBuf, MappedRegion, MemoryDomain};
use std::ptr::NonNull;
use std::sync::Arc;

/// The memory a device computes in. Requests name ranges of it by offset.
///
/// - The CPU device's memory is host memory (anonymous, page-aligned).
/// - The emulated CSP's memory is a shared-memory file that the device
///   process created and the host maps ([`MappedRegion::open_shared`]).
/// - A real device's would be its P2P memory ([`MappedRegion::map_p2pmem`]).
///
/// How bytes get in and out is the memory's business: storage DMAs payload
/// into and out of a mapped region ([`DeviceMemory::mapped_region`], for a
/// [`peerpath_mem::RegionAllocator`] and the I/O engine, O_DIRECT); the host
/// CPU places metadata with [`DeviceMemory::host_write`] (the BGZF end
/// marker: 28 bytes, in the ledger as metadata). [`DeviceMemory::host_read`]
/// is for tests, diagnostics and fault injection: the offload path never
/// touches payload from the host.
pub struct DeviceMemory {
    base: NonNull<u8>,
    len: usize,
    backing: Backing,
    /// Bytes [`DeviceMemory::host_read`] and [`DeviceMemory::host_write`]
    /// have copied: what this process's CPU moved in or out (reports give
    /// it, measured, beside the payload the device moved).
    host_copied: std::sync::atomic::AtomicU64,
}

enum Backing {
    Host(AlignedBuf),
    Region(Arc<MappedRegion>),
    /// Memory the I/O engine cannot reach (`own`, offsets `[0, own)`), and
    /// a host window it can (offsets `[own, own + window)`): storage DMAs
    /// into the window and the device copies between it and its memory.
    /// `own` is `None` where the host cannot address it (GPU memory).
    Staged { own: Option<AlignedBuf>, own_len: usize, domain: MemoryDomain, window: Arc<MappedRegion> },
}

// SAFETY: DeviceMemory only holds the address of a mapping it keeps alive
// (an AlignedBuf or an Arc<MappedRegion>, both Send); all byte access goes
// through unsafe functions whose callers guarantee exclusive ranges.
unsafe impl Send for DeviceMemory {}
// SAFETY: as above; shared references expose only the address and length.
unsafe impl Sync for DeviceMemory {}

impl DeviceMemory {
    /// `bytes` (rounded up to a page) of zeroed host memory.
    pub fn host(bytes: usize) -> DeviceMemory {
        let mut buf = AlignedBuf::new(bytes);
        let len = buf.capacity();
        let base = NonNull::new(buf.as_mut_ptr()).expect("an allocation is never null");
        DeviceMemory { base, len, backing: Backing::Host(buf), host_copied: Default::default() }
    }

    /// Memory of `own_bytes` (rounded up to a page) that the I/O engine
    /// cannot reach, in `domain`, and a host `window` it can: offsets
    /// `[0, own)` are the device's own, `[own, own + window)` the window's.
    /// (Its own memory is host memory here, computed in by the CPU device:
    /// a device like a GPU keeps its own memory where the host cannot map it.)
    pub fn staged(own_bytes: usize, domain: MemoryDomain, window: Arc<MappedRegion>) -> DeviceMemory {
        let mut own = AlignedBuf::new(own_bytes);
        let own_len = own.capacity();
        let base = NonNull::new(own.as_mut_ptr()).expect("an allocation is never null");
        DeviceMemory { base, len: own_len + window.len(), backing: Backing::Staged { own: Some(own), own_len, domain, window }, host_copied: Default::default() }
    }

    /// Staged memory whose own part (`own_bytes`, a whole number of pages)
    /// the host cannot address at all (GPU memory): only the window has host
    /// addresses; the device resolves its own offsets itself.
    pub fn foreign(own_bytes: usize, domain: MemoryDomain, window: Arc<MappedRegion>) -> DeviceMemory {
        let base = NonNull::new(window.as_ptr()).expect("a mapping is never null");
        DeviceMemory { base, len: own_bytes + window.len(), backing: Backing::Staged { own: None, own_len: own_bytes, domain, window }, host_copied: Default::default() }
    }

    /// A mapped region (emulated device memory or P2P memory).
    pub fn region(region: Arc<MappedRegion>) -> DeviceMemory {
        let base = NonNull::new(region.as_ptr()).expect("a mapping is never null");
        DeviceMemory { base, len: region.len(), backing: Backing::Region(region), host_copied: Default::default() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the device computes (for a staged memory: its own part).
    pub fn domain(&self) -> &MemoryDomain {
        match &self.backing {
            Backing::Host(b) => b.domain(),
            Backing::Region(r) => r.domain(),
            Backing::Staged { domain, .. } => domain,
        }
    }

    /// The mapped region that is all of this memory (`None` for host
    /// memory and for staged memory).
    pub fn mapped_region(&self) -> Option<&Arc<MappedRegion>> {
        match &self.backing {
            Backing::Region(r) => Some(r),
            Backing::Host(_) | Backing::Staged { .. } => None,
        }
    }

    /// The part of this memory the I/O engine reaches by DMA: a mapped
    /// region and the offset where it starts (0: all of the memory). `None`
    /// for plain host memory (not registered as a device's memory).
    pub fn dma_window(&self) -> Option<(u64, &Arc<MappedRegion>)> {
        match &self.backing {
            Backing::Host(_) => None,
            Backing::Region(r) => Some((0, r)),
            Backing::Staged { own_len, window, .. } => Some((*own_len as u64, window)),
        }
    }

    /// The address of `range`, for an I/O engine to hand to the kernel
    /// (O_DIRECT into or out of device memory). `None` if the range does
    /// not lie inside this memory (or straddles a staged memory's own part
    /// and its window).
    pub fn io_ptr(&self, range: DeviceRange) -> Option<*mut u8> {
        if !range.fits(self.len as u64) {
            return None;
        }
        if let Backing::Staged { own, own_len, window, .. } = &self.backing {
            let own_len = *own_len as u64;
            let end = range.offset + range.len;
            return if end <= own_len {
                // Memory the host cannot address has no pointer to give.
                own.as_ref()?;
                // SAFETY: offset <= own's length (checked), inside its mapping.
                Some(unsafe { self.base.as_ptr().add(range.offset as usize) })
            } else if range.offset >= own_len {
                // SAFETY: offset - own_len <= the window's length (the range
                // fits the whole memory), inside the window's mapping.
                Some(unsafe { window.as_ptr().add((range.offset - own_len) as usize) })
            } else {
                None
            };
        }
        // SAFETY: offset <= len (checked above), so the result stays inside
        // (or one past the end of) the mapping.
        Some(unsafe { self.base.as_ptr().add(range.offset as usize) })
    }

    /// Copies `data` into device memory at `offset`, from the host (a CPU
    /// store through the mapping): metadata, tests and fault injection.
    /// Panics if the range does not fit.
    ///
    /// # Safety
    /// No command in flight may read or write these bytes, and no other
    /// thread may access them during the call.
    pub unsafe fn host_write(&self, offset: u64, data: &[u8]) {
        let range = DeviceRange::new(offset, data.len() as u64);
        let dst = self.io_ptr(range).unwrap_or_else(|| panic!("host_write {range} outside {} bytes", self.len));
        // SAFETY: dst..dst+len lies in the mapping (io_ptr checked); the
        // caller guarantees nobody else touches it; `data` is host memory
        // that cannot overlap device memory we own.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        self.host_copied.fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Copies bytes of device memory at `offset` into `out`, to the host.
    /// Panics if the range does not fit.
    ///
    /// # Safety
    /// No command in flight may write these bytes during the call.
    pub unsafe fn host_read(&self, offset: u64, out: &mut [u8]) {
        let range = DeviceRange::new(offset, out.len() as u64);
        let src = self.io_ptr(range).unwrap_or_else(|| panic!("host_read {range} outside {} bytes", self.len));
        // SAFETY: as in host_write, for reading.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
        self.host_copied.fetch_add(out.len() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Bytes this process's CPU has copied in or out of this memory
    /// ([`DeviceMemory::host_read`], [`DeviceMemory::host_write`]) since it was made.
    pub fn host_copied_bytes(&self) -> u64 {
        self.host_copied.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The bytes of an input range.
    ///
    /// # Safety
    /// The range fits (checked by the caller) and nothing writes it while
    /// the slice lives.
    pub(crate) unsafe fn input(&self, range: DeviceRange) -> &[u8] {
        let ptr = self.io_ptr(range).expect("requests are checked against the memory");
        // SAFETY: the caller guarantees the range fits (io_ptr found it in
        // one mapping) and is not written while the slice lives.
        unsafe { std::slice::from_raw_parts(ptr, range.len as usize) }
    }

    /// The bytes of an output range.
    ///
    /// # Safety
    /// The range fits and nothing else reads or writes it while the slice
    /// lives (the [`RangeTable`] guarantees this for commands).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn output(&self, range: DeviceRange) -> &mut [u8] {
        let ptr = self.io_ptr(range).expect("requests are checked against the memory");
        // SAFETY: the caller guarantees the range fits (io_ptr found it in
        // one mapping) and is exclusive.
        unsafe { std::slice::from_raw_parts_mut(ptr, range.len as usize) }
    }
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMemory").field("len", &self.len).field("domain", self.domain()).finish()
    }
}

/// The ranges that commands in flight read and write. A command may run
/// only if what it writes is used by nobody in flight and what it reads is
/// written by nobody in flight: that is what makes a device's slices of its
/// memory exclusive (and the `unsafe` in [`DeviceMemory`] sound).
#[derive(Default, Debug)]
pub(crate) struct RangeTable {
    entries: Vec<Claim>,
}

#[derive(Debug)]
struct Claim {
    id: u64,
    reads: Vec<DeviceRange>,
    write: DeviceRange,
}

impl RangeTable {
    /// Claims the ranges of `request` under `id`, or says why not
    /// ([`Status::RangeConflict`]).
    pub(crate) fn claim(&mut self, id: u64, request: &Request) -> Result<(), Status> {
        let write = request.output;
        for c in &self.entries {
            let write_clash = c.reads.iter().chain(std::iter::once(&c.write)).any(|r| r.overlaps(&write));
            let read_clash = request.inputs.iter().any(|r| r.overlaps(&c.write));
            if write_clash || read_clash {
                return Err(Status::RangeConflict);
            }
        }
        self.entries.push(Claim { id, reads: request.inputs.clone(), write });
        Ok(())
    }

    pub(crate) fn release(&mut self, id: u64) {
        if let Some(i) = self.entries.iter().position(|c| c.id == id) {
            self.entries.swap_remove(i);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_memory_is_page_sized_and_bounded() {
        let m = DeviceMemory::host(5000);
        assert_eq!(m.len(), 8192);
        assert!(m.domain().is_host());
        assert!(m.mapped_region().is_none());
        assert!(m.io_ptr(DeviceRange::new(8192, 0)).is_some());
        assert!(m.io_ptr(DeviceRange::new(8192, 1)).is_none());
        assert!(m.io_ptr(DeviceRange::new(u64::MAX, 2)).is_none());
        // SAFETY: nothing else uses this memory.
        unsafe {
            m.host_write(100, b"abc");
            let mut out = [0u8; 3];
            m.host_read(100, &mut out);
            assert_eq!(&out, b"abc");
        }
    }

    #[test]
    fn claims_exclude_writers_from_everything_and_readers_from_writers() {
        let mut t = RangeTable::default();
        let r = |o, l| DeviceRange::new(o, l);
        t.claim(1, &Request::copy(0, &[r(0, 100)], r(100, 100))).unwrap();
        // Reading what 1 reads is fine.
        t.claim(2, &Request::crc32(0, &[r(50, 10)])).unwrap();
        // Reading what 1 writes is not; writing what 1 reads is not.
        assert_eq!(t.claim(3, &Request::crc32(0, &[r(150, 10)])), Err(Status::RangeConflict));
        assert_eq!(t.claim(3, &Request::fill(0, 0, r(99, 2))), Err(Status::RangeConflict));
        assert_eq!(t.len(), 2);
        t.release(1);
        t.claim(3, &Request::fill(0, 0, r(100, 100))).unwrap();
        assert_eq!(t.claim(4, &Request::fill(0, 0, r(55, 1))), Err(Status::RangeConflict), "2 still reads 50..60");
    }
}
