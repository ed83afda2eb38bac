//! Typed, atomic access to the queue file that the device process and the
//! host both map. Every word that both sides touch is an atomic: entries
//! are copied word by word, doorbells are loads and stores with
//! acquire/release ordering (see `docs/queue-format.md`, "Ordering").

use super::layout::{self, header, Cqe, Geometry, Sqe, CQE_BYTES, PAGE_BYTES, QP_DATA, QP_DOORBELLS, QP_SQ, SQE_BYTES};
use peerpath_mem::MappedRegion;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// The mapped queue file.
pub(crate) struct QueueFile {
    region: Arc<MappedRegion>,
}

impl QueueFile {
    pub(crate) fn new(region: Arc<MappedRegion>) -> QueueFile {
        QueueFile { region }
    }

    pub(crate) fn len(&self) -> usize {
        self.region.len()
    }

    pub(crate) fn u64_at(&self, offset: usize) -> &AtomicU64 {
        assert!(offset & 7 == 0 && offset + 8 <= self.region.len(), "u64 at {offset} outside the queue file");
        // SAFETY: the offset is 8-aligned inside a page-aligned mapping that
        // lives as long as self; AtomicU64 has the size and alignment of u64,
        // and every access to shared words goes through atomics.
        unsafe { &*(self.region.as_ptr().add(offset) as *const AtomicU64) }
    }

    pub(crate) fn u32_at(&self, offset: usize) -> &AtomicU32 {
        assert!(offset & 3 == 0 && offset + 4 <= self.region.len(), "u32 at {offset} outside the queue file");
        // SAFETY: as in u64_at, for a 4-aligned u32.
        unsafe { &*(self.region.as_ptr().add(offset) as *const AtomicU32) }
    }

    /// The geometry the header declares.
    pub(crate) fn geometry(&self) -> Geometry {
        Geometry {
            queue_count: self.u32_at(header::QUEUE_COUNT).load(Ordering::Acquire),
            queue_depth: self.u32_at(header::QUEUE_DEPTH).load(Ordering::Acquire),
        }
    }

    /// Zeroes `len` bytes from `offset` (8-aligned, whole words).
    pub(crate) fn zero(&self, offset: usize, len: usize) {
        for o in (offset..offset + len).step_by(8) {
            self.u64_at(o).store(0, Ordering::Relaxed);
        }
    }
}

/// One queue pair inside the queue file.
#[derive(Clone)]
pub(crate) struct QueuePair {
    file: Arc<QueueFile>,
    base: usize,
    depth: u32,
    cq_offset: usize,
    stride: usize,
}

impl QueuePair {
    pub(crate) fn new(file: Arc<QueueFile>, geometry: Geometry, index: u32) -> QueuePair {
        assert!(index < geometry.queue_count);
        assert!(geometry.total_bytes() <= file.len(), "queue file shorter than its geometry");
        QueuePair {
            base: geometry.queue_base(index),
            depth: geometry.queue_depth,
            cq_offset: geometry.cq_offset(),
            stride: geometry.queue_stride(),
            file,
        }
    }

    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// The queue file this queue pair lies in (its header).
    pub(crate) fn file(&self) -> &QueueFile {
        &self.file
    }

    pub(crate) fn doorbell(&self, which: usize) -> &AtomicU32 {
        self.file.u32_at(self.base + QP_DOORBELLS + which)
    }

    pub(crate) fn sq_tail(&self) -> &AtomicU32 {
        self.doorbell(layout::doorbell::SQ_TAIL)
    }
    pub(crate) fn sq_head(&self) -> &AtomicU32 {
        self.doorbell(layout::doorbell::SQ_HEAD)
    }
    pub(crate) fn cq_head(&self) -> &AtomicU32 {
        self.doorbell(layout::doorbell::CQ_HEAD)
    }
    pub(crate) fn sq_need_wake(&self) -> &AtomicU32 {
        self.doorbell(layout::doorbell::SQ_NEED_WAKE)
    }
    pub(crate) fn cq_need_wake(&self) -> &AtomicU32 {
        self.doorbell(layout::doorbell::CQ_NEED_WAKE)
    }

    fn sqe_word(&self, slot: u32, i: usize) -> &AtomicU64 {
        assert!(slot < self.depth);
        self.file.u64_at(self.base + QP_SQ + slot as usize * SQE_BYTES + i * 8)
    }

    fn cqe_word(&self, slot: u32, i: usize) -> &AtomicU64 {
        assert!(slot < self.depth);
        self.file.u64_at(self.base + self.cq_offset + slot as usize * CQE_BYTES + i * 8)
    }

    /// Host: writes an entry (published by the SQ tail store that follows).
    pub(crate) fn write_sqe(&self, slot: u32, e: &Sqe) {
        for (i, w) in e.iter().enumerate() {
            self.sqe_word(slot, i).store(*w, Ordering::Relaxed);
        }
    }

    /// Device: copies an entry out (after an acquire load of the SQ tail).
    pub(crate) fn read_sqe(&self, slot: u32) -> Sqe {
        std::array::from_fn(|i| self.sqe_word(slot, i).load(Ordering::Relaxed))
    }

    /// Device: writes a completion, word 3 (command id, status, phase)
    /// last with release ordering, so a host that sees the new phase sees
    /// the whole entry.
    pub(crate) fn write_cqe(&self, slot: u32, e: &Cqe) {
        for (i, w) in e.iter().enumerate().take(3) {
            self.cqe_word(slot, i).store(*w, Ordering::Relaxed);
        }
        self.cqe_word(slot, 3).store(e[3], Ordering::Release);
    }

    /// Host: word 3 of a completion slot (acquire).
    pub(crate) fn cqe_status_word(&self, slot: u32) -> u64 {
        self.cqe_word(slot, 3).load(Ordering::Acquire)
    }

    /// Host: the whole completion, after [`QueuePair::cqe_status_word`]
    /// showed the expected phase.
    pub(crate) fn read_cqe(&self, slot: u32, word3: u64) -> Cqe {
        [
            self.cqe_word(slot, 0).load(Ordering::Relaxed),
            self.cqe_word(slot, 1).load(Ordering::Relaxed),
            self.cqe_word(slot, 2).load(Ordering::Relaxed),
            word3,
        ]
    }

    /// Device: writes the data page (identify, stats) before the completion.
    pub(crate) fn write_data(&self, words: &[u64]) {
        assert!(words.len() * 8 <= PAGE_BYTES);
        for (i, w) in words.iter().enumerate() {
            self.file.u64_at(self.base + QP_DATA + i * 8).store(*w, Ordering::Relaxed);
        }
    }

    /// Host: reads `n` words of the data page (after the completion).
    pub(crate) fn read_data(&self, n: usize) -> Vec<u64> {
        assert!(n * 8 <= PAGE_BYTES);
        (0..n).map(|i| self.file.u64_at(self.base + QP_DATA + i * 8).load(Ordering::Relaxed)).collect()
    }

    /// Device: zeroes the whole queue pair (doorbells, data, SQ, CQ) for a
    /// new owner. Nobody may be using it: a host still polling would take
    /// a zeroed completion as new once it expects phase 0.
    pub(crate) fn reset(&self) {
        self.file.zero(self.base, self.stride);
    }
}
