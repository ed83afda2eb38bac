//! Memory domains and aligned buffers: layer 0 of peerpath.
//!
//! Every buffer knows the memory domain it lives in (host memory on a NUMA
//! node, P2P memory on a PCIe device, or emulated device memory), so the
//! byte ledger can say where each transfer went. Buffers are aligned for
//! O_DIRECT and recycled through a bounded [`BufferPool`]: the pool is
//! fixed at start, and a job that runs out waits instead of allocating.

mod domain;
mod mapped_file;
mod pool;
mod region;

pub use domain::{host_numa_node_of, MemoryDomain};
pub use mapped_file::{Allocation, FileMapping};
pub use pool::{AlignedBuf, BufferPool, PoolStats, PooledBuf};
pub use region::{file_system_type, free_bytes, on_memory_file_system, MappedRegion, P2pMemInfo, RangeAllocator, RangeBuf, RegionAllocator, RegionBuf, RegionError, MEMORY_FILE_SYSTEMS, REGION_PAGE_BYTES};

/// The alignment peerpath uses for every I/O buffer and every O_DIRECT
/// offset and length: the page size, which covers the logical block size
/// of every device we meet (512 B or 4 KiB).
pub const DIRECT_IO_ALIGN_BYTES: usize = 4096;

/// Rounds `value` up to the next multiple of `align` (a power of two).
pub const fn align_up(value: usize, align: usize) -> usize {
    debug_assert!(align.is_power_of_two());
    (value + align - 1) & !(align - 1)
}

/// Rounds `value` down to a multiple of `align` (a power of two).
pub const fn align_down(value: usize, align: usize) -> usize {
    debug_assert!(align.is_power_of_two());
    value & !(align - 1)
}
