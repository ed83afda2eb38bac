//! I/O engines (layer 1).
//!
//! Two engines implement one trait, [`IoEngine`]: [`UringEngine`] (io_uring)
//! and [`SyncEngine`] (pread/pwrite, or read/write for pipes). Buffers move
//! by ownership: an engine takes a buffer with each request and hands it
//! back in the [`Completion`], also on error. A [`Waker`] (an eventfd) lets
//! other threads interrupt [`IoEngine::wait`], so one orchestration thread
//! can sleep on I/O completions and worker results at the same time.
//!
//! Which engine and whether O_DIRECT ran is always reported ([`IoPath`]);
//! a fallback carries its reason. [`ZcSender`] sends from mapped memory with
//! io_uring's `SEND_ZC`, reporting whether the kernel copied after all.

mod engine;
mod file;
pub mod stop;
mod sync;
mod target;
mod uring;
mod waker;
mod zc;

pub use engine::{region_fixed_span, Completion, EngineKind, FixedBufferStats, FixedSpan, IoBuf, IoEngine, IoOp, IoPath, PartlyWritten};
pub use file::{open_source, sizeless, OpenedFile, SourceKind, Stamp};
pub use target::{committed, create_named, create_temporary, discard, empty_laid_out_files_before_exit, empty_on_signal, identity, parent_dir, publish, remove_named_temporaries, remove_named_temporaries_before_exit, publish_provisional, keep_on_signal, remove_on_signal, remove_on_signal_once_in_place, settled, Committed, OutputDir, signal_ignored, take_back, NAME_MAX_BYTES, Inherited, ScratchDir, Temporary, TEMPORARY_MARK};
pub use sync::{pread_full, SyncEngine};
pub use uring::UringEngine;
pub use waker::Waker;
pub use zc::{send_zc_supported, ZcBuf, ZcSender, ZcSent};

/// Picks the engine: io_uring unless `force_sync`, falling back to plain
/// syscalls (with the reason) where the kernel refuses io_uring
/// (seccomp, `kernel.io_uring_disabled`, old kernels).
pub fn choose_engine<B: IoBuf>(queue_depth: u32, force_sync: bool) -> (Box<dyn IoEngine<B>>, Option<String>) {
    if force_sync {
        return (Box::new(SyncEngine::new()), Some("plain syscalls requested (--io sync)".into()));
    }
    match UringEngine::new(queue_depth) {
        Ok(e) => (Box::new(e), None),
        Err(err) => (
            Box::new(SyncEngine::new()),
            Some(format!("io_uring unavailable ({err}); using pread/pwrite")),
        ),
    }
}
