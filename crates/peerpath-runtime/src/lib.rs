//! Jobs (layer 2): compress, decompress and verify, each an orchestration
//! thread driving one I/O engine plus a pool of compute workers, and the
//! report every job produces.

mod buf;
pub mod cancel;
pub mod compress;
mod cpu_pass;
pub mod daemon_proto;
#[cfg(test)]
mod conformance;
pub mod decompress;
mod devices;
mod executor;
mod gpu_decode;
pub mod error;
pub mod iobench;
pub mod job;
pub mod offload;
mod placement;
pub mod report;
mod stream;
mod token;
mod workers;
mod writer;
pub use writer::DurabilityReport;

pub use compress::{compress, CompressOptions, DEFAULT_BLOCK_BYTES};
pub use devices::{keep_devices_across_jobs, Compute, DeviceMemoryFrom, EmulatedSpec, GpuSpec};
pub use decompress::{decompress, verify, verify_each, DecompressOptions};
pub use gpu_decode::GpuDecodeSpec;
pub use error::{JobError, Result};
pub use job::{plan_targets, CommonOptions, Progress};
pub use report::{FailedFile, JobReport, Provenance};

use peerpath_mem::MemoryDomain;
use peerpath_metrics::{CpuRole, Ledger, Location, Mover, Purpose};
use std::path::Path;

/// How a file's bytes reach the job's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// O_DIRECT: the storage controller's DMA, straight to or from the buffer.
    Direct,
    /// Through the page cache: a DMA to or from the cache, and the kernel's
    /// CPU copy between the cache and the buffer.
    PageCache,
    /// A pipe, socket or character device, or a file of a memory file
    /// system (tmpfs, ramfs: its pages are host memory, and O_DIRECT there
    /// is a CPU copy too): the kernel's CPU copy between its memory and our
    /// buffers; no storage and no DMA on this side.
    Pipe,
}

impl Via {
    pub(crate) fn of(f: &peerpath_io::OpenedFile) -> Via {
        if f.in_memory() {
            Via::Pipe
        } else if f.direct {
            Via::Direct
        } else if f.reaches_storage() {
            Via::PageCache
        } else {
            Via::Pipe
        }
    }
}

/// Records a read of `bytes` from `source` into a buffer in `domain`.
pub(crate) fn record_read(ledger: &Ledger, source: &Path, via: Via, domain: &MemoryDomain, bytes: u64) {
    record_read_by(ledger, source, via, domain, bytes, CpuRole::Orchestration);
}

/// As [`record_read`], the kernel's copy charged to threads of `role` (the
/// compute workers, where they read their own chunks).
pub(crate) fn record_read_by(ledger: &Ledger, source: &Path, via: Via, domain: &MemoryDomain, bytes: u64, role: CpuRole) {
    let dma = Mover::Dma { engine: "storage controller".into() };
    let kernel = Location::memory(&MemoryDomain::host_unplaced());
    let copy = Mover::Cpu { role };
    match via {
        Via::Direct => ledger.record_copy(Location::storage(source), Location::memory(domain), dma, Purpose::ReadSource, bytes),
        Via::PageCache => {
            ledger.record_copy(Location::storage(source), kernel.clone(), dma, Purpose::ReadSource, bytes);
            ledger.record_copy(kernel, Location::memory(domain), copy, Purpose::ReadSource, bytes);
        }
        Via::Pipe => ledger.record_copy(kernel, Location::memory(domain), copy, Purpose::ReadSource, bytes),
    }
}

/// Records a write of `bytes` from a buffer in `domain` to `target`.
pub(crate) fn record_write(ledger: &Ledger, target: &Location, via: Via, domain: &MemoryDomain, bytes: u64) {
    let dma = Mover::Dma { engine: "storage controller".into() };
    let kernel = Location::memory(&MemoryDomain::host_unplaced());
    let copy = Mover::Cpu { role: CpuRole::Orchestration };
    match via {
        Via::Direct => ledger.record_copy(Location::memory(domain), target.clone(), dma, Purpose::WriteTarget, bytes),
        Via::PageCache => {
            ledger.record_copy(Location::memory(domain), kernel.clone(), copy, Purpose::WriteTarget, bytes);
            ledger.record_copy(kernel, target.clone(), dma, Purpose::WriteTarget, bytes);
        }
        Via::Pipe => ledger.record_copy(Location::memory(domain), kernel, copy, Purpose::WriteTarget, bytes),
    }
}
