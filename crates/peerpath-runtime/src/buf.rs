use peerpath_io::IoBuf;
use peerpath_mem::{AlignedBuf, MemoryDomain, PooledBuf, RegionBuf};

/// A buffer an I/O engine of a job carries: host memory on loan from a
/// fixed pool or owned (from a [`BufferCache`]), or a range of a device's
/// memory (the device side of the compress executor).
pub enum JobBuf {
    Pooled(PooledBuf),
    Owned(AlignedBuf),
    Region(RegionBuf),
}

impl JobBuf {
    /// Bytes it holds (what a write sends).
    pub fn len(&self) -> usize {
        match self {
            JobBuf::Pooled(b) => b.len(),
            JobBuf::Owned(b) => b.len(),
            JobBuf::Region(b) => b.len(),
        }
    }

    pub fn domain(&self) -> &MemoryDomain {
        match self {
            JobBuf::Pooled(b) => b.domain(),
            JobBuf::Owned(b) => b.domain(),
            JobBuf::Region(b) => b.domain(),
        }
    }
}

// SAFETY: each variant is one of the buffers above, whose own impls hold the contract.
unsafe impl IoBuf for JobBuf {
    fn io_ptr(&mut self) -> *mut u8 {
        match self {
            JobBuf::Pooled(b) => b.as_mut_ptr(),
            JobBuf::Owned(b) => b.as_mut_ptr(),
            JobBuf::Region(b) => b.io_ptr(),
        }
    }
    fn io_capacity(&self) -> usize {
        match self {
            JobBuf::Pooled(b) => b.capacity(),
            JobBuf::Owned(b) => b.capacity(),
            JobBuf::Region(b) => b.io_capacity(),
        }
    }
    fn needs_direct_io(&self) -> bool {
        match self {
            JobBuf::Region(b) => b.needs_direct_io(),
            _ => false,
        }
    }
    fn fixed_span(&self) -> Option<peerpath_io::FixedSpan> {
        match self {
            JobBuf::Pooled(b) => b.fixed_span(),
            JobBuf::Owned(_) => None,
            JobBuf::Region(b) => b.fixed_span(),
        }
    }
}

/// Memory a job needs that cannot be mapped ([`AlignedBuf::try_new`],
/// [`peerpath_mem::BufferPool::try_new`]: their error says how much), as the job's error.
pub(crate) fn out_of_memory(e: std::io::Error) -> crate::error::JobError {
    crate::error::JobError::OutOfMemory(e.to_string())
}

/// Reuses owned buffers of varying sizes (allocating and zeroing a fresh
/// MiB per block would add page faults and memory traffic the ledger does
/// not see). Keeps at most `keep` buffers; reports the peak it held.
pub struct BufferCache {
    free: Vec<AlignedBuf>,
    keep: usize,
    pub allocated_bytes: usize,
    pub peak_allocated_bytes: usize,
}

impl BufferCache {
    pub fn new(keep: usize) -> Self {
        BufferCache { free: Vec::new(), keep, allocated_bytes: 0, peak_allocated_bytes: 0 }
    }

    /// A buffer of at least `min_capacity` bytes; memory that cannot be mapped is the job's error.
    pub fn get(&mut self, min_capacity: usize) -> crate::error::Result<AlignedBuf> {
        // Best fit: the smallest buffer that is big enough, so fewer are
        // allocated (docs/tuning.md#buffer-cache).
        let fit = self.free.iter().enumerate().filter(|(_, b)| b.capacity() >= min_capacity).min_by_key(|(_, b)| b.capacity()).map(|(i, _)| i);
        if let Some(i) = fit {
            let mut b = self.free.swap_remove(i);
            b.set_len(0);
            return Ok(b);
        }
        let b = AlignedBuf::try_new(min_capacity).map_err(out_of_memory)?;
        self.allocated_bytes += b.capacity();
        self.peak_allocated_bytes = self.peak_allocated_bytes.max(self.allocated_bytes);
        Ok(b)
    }

    pub fn put(&mut self, buf: AlignedBuf) {
        if self.free.len() < self.keep {
            self.free.push(buf);
        } else {
            self.allocated_bytes -= buf.capacity();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_hands_out_the_smallest_buffer_that_fits() {
        let mut cache = BufferCache::new(4);
        let (big, small) = (AlignedBuf::new(4 << 20), AlignedBuf::new(1 << 20));
        let (big_cap, small_cap) = (big.capacity(), small.capacity());
        cache.put(big);
        cache.put(small);
        assert_eq!(cache.get(4096).unwrap().capacity(), small_cap, "a small request takes the small buffer");
        assert_eq!(cache.get(4096).unwrap().capacity(), big_cap, "then the big one, being all that is left");
        let before = cache.allocated_bytes;
        let fresh = cache.get(8 << 20).unwrap();
        assert!(fresh.capacity() >= 8 << 20);
        assert_eq!(cache.allocated_bytes, before + fresh.capacity(), "nothing big enough: a new buffer, counted");
    }
}
