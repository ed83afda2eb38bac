//! Jobs (layer 2): compress, decompress and verify, each an orchestration
//! thread driving one I/O engine plus a pool of compute workers, and the
//! report every job produces.

mod buf;
pub mod compress;
pub mod decompress;
pub mod error;
pub mod iobench;
pub mod job;
pub mod offload;
mod placement;
pub mod report;
mod workers;
mod writer;
pub use writer::DurabilityReport;

pub use compress::{compress, CompressOptions, Compute, DeviceMemoryFrom, EmulatedSpec, DEFAULT_BLOCK_BYTES};
pub use decompress::{decompress, verify, DecompressOptions};
pub use error::{JobError, Result};
pub use job::{plan_targets, CommonOptions, Progress};
pub use report::{JobReport, Provenance};

use peerpath_mem::MemoryDomain;
use peerpath_metrics::{CpuRole, Ledger, Location, Mover, Purpose};

/// Records a read of `bytes` from `source` into a buffer in `domain`: one
/// DMA with O_DIRECT; through the page cache, a DMA into the cache and the
/// kernel's CPU copy out of it.
pub(crate) fn record_read(ledger: &Ledger, source: &str, direct: bool, domain: &MemoryDomain, bytes: u64) {
    let dma = Mover::Dma { engine: "storage controller".into() };
    if direct {
        ledger.record_copy(Location::storage(source), Location::memory(domain), dma, Purpose::ReadSource, bytes);
    } else {
        let cache = Location::memory(&MemoryDomain::host_unplaced());
        ledger.record_copy(Location::storage(source), cache.clone(), dma, Purpose::ReadSource, bytes);
        ledger.record_copy(cache, Location::memory(domain), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::ReadSource, bytes);
    }
}

/// Records a write of `bytes` from a buffer in `domain` to `target`: one DMA
/// with O_DIRECT; through the page cache, the kernel's CPU copy into the
/// cache and the writeback DMA out of it.
pub(crate) fn record_write(ledger: &Ledger, target: &Location, direct: bool, domain: &MemoryDomain, bytes: u64) {
    let dma = Mover::Dma { engine: "storage controller".into() };
    if direct {
        ledger.record_copy(Location::memory(domain), target.clone(), dma, Purpose::WriteTarget, bytes);
    } else {
        let cache = Location::memory(&MemoryDomain::host_unplaced());
        ledger.record_copy(Location::memory(domain), cache.clone(), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::WriteTarget, bytes);
        ledger.record_copy(cache, target.clone(), dma, Purpose::WriteTarget, bytes);
    }
}
