//! Files of a memory file system (tmpfs, ramfs) that a DMA engine reads
//! and writes straight from and to their pages (`--gpu-memory-files
//! mapped`): the GPU device's own `StorageRead`/`StorageWrite` of them.
//! Their pages are host memory already, so the kernel's copies through a
//! pinned window (a CPU copy each way) can go: each file is mapped shared,
//! a granule at a time, and each granule pinned for the engine when first
//! used. `crate::mapped`'s probe measures whether and how fast CUDA does
//! this on a machine; here is what a job does, with the pinning behind
//! [`Pinner`] so that the file handling (granules, extending a target, short
//! reads, errors) is tested without a GPU.

use crate::mapped::{Mapping, Registered};
use cudarc::driver::{sys, CudaContext};
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Bytes of a file mapped and pinned at once, on first use: pinning is
/// paid a granule at a time by the I/O thread that first needs it (several
/// threads pin different granules at once), not up front for a whole file.
pub const GRANULE_BYTES: u64 = 64 << 20;

/// A file's first granule, where the granule is larger: granules then double
/// (1, 1, 2, 4, ... MiB) up to the granule's size, so that a small output
/// holds (in tmpfs and pinned) about its own size, not a whole granule, and
/// a large one pins a few more, smaller granules first.
const FIRST_GRANULE_BYTES: u64 = 1 << 20;

/// Where a file's granules lie: `first` bytes, then each as long as all
/// before it, until that is `most` or more; from there, `most` each.
#[derive(Clone, Copy, Debug)]
struct Granules {
    first: u64,
    most: u64,
    /// Where the first granule of `most` bytes starts, and its index.
    steady_at: u64,
    steady_index: u64,
}

impl Granules {
    fn new(most: u64) -> Granules {
        let first = FIRST_GRANULE_BYTES.min(most);
        let (mut steady_at, mut steady_index) = (first, 1);
        while steady_at < most {
            steady_at *= 2;
            steady_index += 1;
        }
        Granules { first, most, steady_at, steady_index }
    }

    /// The granule holding byte `at`.
    fn index(&self, at: u64) -> u64 {
        if at >= self.steady_at {
            self.steady_index + (at - self.steady_at) / self.most
        } else if at < self.first {
            0
        } else {
            u64::from((at / self.first).ilog2()) + 1
        }
    }

    /// Granule `g`'s first byte and length.
    fn span(&self, g: u64) -> (u64, u64) {
        match g {
            0 => (0, self.first),
            g if g >= self.steady_index => (self.steady_at + (g - self.steady_index) * self.most, self.most),
            g => {
                let start = self.first << (g - 1);
                (start, start)
            }
        }
    }
}

/// Pins host memory for a DMA engine; what it gives back unpins when dropped.
pub(crate) trait Pinner: Send + Sync {
    fn pin(&self, ptr: *mut u8, len: usize, read_only: bool) -> Result<Box<dyn Send + Sync>, String>;
}

/// CUDA's pinning (`cuMemHostRegister`, read-only where asked), with the
/// context current on whichever thread pins or unpins.
pub(crate) struct CudaPinner(pub Arc<CudaContext>);

struct CudaPin {
    // Dropped first: unregistered while `ctx` still holds the context.
    _registered: Registered,
    ctx: Arc<CudaContext>,
}

// SAFETY: a registration of an address range of this process, which CUDA
// lets any thread with its context current release (`Drop` makes it so).
unsafe impl Send for CudaPin {}
// SAFETY: shared references do nothing with it.
unsafe impl Sync for CudaPin {}

impl Drop for CudaPin {
    /// The registration is released after this, with the context current.
    fn drop(&mut self) {
        let _ = crate::make_current(&self.ctx);
    }
}

impl Pinner for CudaPinner {
    fn pin(&self, ptr: *mut u8, len: usize, read_only: bool) -> Result<Box<dyn Send + Sync>, String> {
        crate::make_current(&self.0)?;
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | if read_only { sys::CU_MEMHOSTREGISTER_READ_ONLY } else { 0 };
        let (registered, _) = Registered::new(ptr as *mut c_void, len, flags)?;
        Ok(Box::new(CudaPin { _registered: registered, ctx: self.0.clone() }))
    }
}

/// What pinning files' granules took over a job (the GPU device's profile).
#[derive(Default)]
pub(crate) struct PinStats {
    pub granules: AtomicU64,
    pub bytes: AtomicU64,
    pub ns: AtomicU64,
}

/// A granule of a file: mapped shared and pinned (fields drop in order:
/// unpinned, then unmapped).
struct Granule {
    _pin: Box<dyn Send + Sync>,
    map: Mapping,
}

// SAFETY: a granule is an address range of this process's mapping of a
// file and its pinning; nothing in it is tied to a thread. Threads only read
// its address, and copies into or out of it are the file's bytes, ordered by
// the executor (one command per range at a time).
unsafe impl Send for Granule {}
// SAFETY: as for Send: shared references only read the address.
unsafe impl Sync for Granule {}

type Slot = Arc<OnceLock<Result<Granule, String>>>;

/// A file of a memory file system a DMA engine reads or writes directly.
/// Mapped shared in granules, each pinned when first used (read-only where
/// the file was opened for reading only: a source) and kept until the file
/// is let go (the job's end): a source's pages stay pinned that long, a
/// target's too. A target is extended to the end of each granule it writes
/// before mapping it; its writer truncates it to its length at the end, as
/// it does after O_DIRECT's padded last write.
pub(crate) struct MappedFile {
    file: std::fs::File,
    writable: bool,
    layout: Granules,
    granules: Mutex<HashMap<u64, Slot>>,
    /// Extending a target: one at a time (a later, smaller extension must not shorten it).
    growing: Mutex<()>,
    pinner: Arc<dyn Pinner>,
    pins: Arc<PinStats>,
}

impl MappedFile {
    /// Holds `file` for mapping in granules of `granule` bytes (a multiple
    /// of the page size): read-only where it is open for reading only, else
    /// reopened for reading and writing (mapping it shared and writable
    /// needs both; a job's target is open for writing only).
    pub fn open(file: &std::fs::File, granule: u64, pinner: Arc<dyn Pinner>, pins: Arc<PinStats>) -> Result<MappedFile, String> {
        assert!(granule > 0 && granule.is_multiple_of(4096), "granules of whole pages");
        // SAFETY: reads the descriptor's status flags; no memory is passed.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(format!("fcntl: {}", std::io::Error::last_os_error()));
        }
        let writable = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let file = if writable {
            std::fs::OpenOptions::new().read(true).write(true).open(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|e| format!("reopening the target to map it: {e}"))?
        } else {
            file.try_clone().map_err(|e| format!("cannot hold the file: {e}"))?
        };
        Ok(MappedFile { file, writable, layout: Granules::new(granule), granules: Mutex::default(), growing: Mutex::default(), pinner, pins })
    }

    /// Whether its mapping can be pinned at all, asked before any command needs it (a file
    /// refused then goes through the window, and the device still computes): a source's
    /// first granule, pinned for the reads to come; a target's first page, pinned and let go
    /// (an empty target is given that page for the trial, and its length back after).
    pub fn check(&self) -> Result<(), String> {
        let size = self.len()?;
        if !self.writable {
            if size == 0 {
                return Ok(());
            }
            return self.slot(0).get_or_init(|| self.map_granule(0, size)).as_ref().map(|_| ()).map_err(|e| e.clone());
        }
        if size == 0 {
            self.file.set_len(4096).map_err(|e| format!("sizing the target for a trial: {e}"))?;
        }
        let trial = Mapping::at(&self.file, 0, 4096, true).and_then(|map| {
            self.pinner.pin(map.ptr as *mut u8, 4096, false).map(drop).map_err(|e| format!("pinning the target's first page (mapped shared): {e}"))
        });
        if size == 0 {
            self.file.set_len(0).map_err(|e| format!("the target's length back after the trial: {e}"))?;
        }
        trial
    }

    /// Hands `copy(host address, offset in the transfer, bytes)` each
    /// granule's piece of up to `len` bytes of the file at `offset` (fewer at
    /// its end), then calls `wait` (which must return only once every piece
    /// is copied): the bytes read. The addresses are pinned file memory,
    /// valid while `self` lives.
    pub fn read(&self, offset: u64, len: usize, mut copy: impl FnMut(*const u8, usize, usize) -> Result<(), String>, wait: impl FnMut() -> Result<(), String>) -> Result<usize, String> {
        let size = self.len()?;
        let n = (len as u64).min(size.saturating_sub(offset)) as usize;
        self.pieces(offset, n, size, |host, at, piece| copy(host, at, piece), wait)?;
        Ok(n)
    }

    /// As [`MappedFile::read`], the other way: `len` bytes into the file
    /// at `offset`, extending it first where it is shorter than the end of
    /// the granule the write ends in (nothing for none).
    pub fn write(&self, offset: u64, len: usize, copy: impl FnMut(*mut u8, usize, usize) -> Result<(), String>, wait: impl FnMut() -> Result<(), String>) -> Result<usize, String> {
        if !self.writable {
            return Err("the file is open for reading only".into());
        }
        if len == 0 {
            return Ok(0);
        }
        let (last, last_len) = self.layout.span(self.layout.index(offset + len as u64 - 1));
        let wanted = last + last_len;
        {
            let _one = self.growing.lock().unwrap_or_else(|e| e.into_inner());
            if self.len()? < wanted {
                self.file.set_len(wanted).map_err(|e| format!("extending the target to {wanted} bytes: {e}"))?;
            }
        }
        self.pieces(offset, len, wanted, copy, wait)?;
        Ok(len)
    }

    fn len(&self) -> Result<u64, String> {
        Ok(self.file.metadata().map_err(|e| format!("fstat: {e}"))?.len())
    }

    /// Hands `copy` each granule's piece of `offset..offset + len` (the file
    /// `size` bytes long), mapping and pinning granules on first use, then
    /// `wait`s, also when a piece fails (the pieces already on their way end
    /// before the command does: a failed write must not land in a target
    /// after the CPU took it over).
    fn pieces(&self, offset: u64, len: usize, size: u64, mut copy: impl FnMut(*mut u8, usize, usize) -> Result<(), String>, mut wait: impl FnMut() -> Result<(), String>) -> Result<(), String> {
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let g = self.layout.index(at);
            let slot = self.slot(g);
            let piece = match slot.get_or_init(|| self.map_granule(g, size)) {
                Err(e) => Err(e.clone()),
                Ok(granule) => {
                    let within = (at - self.layout.span(g).0) as usize;
                    if within >= granule.map.len {
                        Err(format!("byte {at} is past the file's mapped part (the file was shorter when that part was mapped)"))
                    } else {
                        let piece = (len - done).min(granule.map.len - within);
                        // SAFETY: `within` lies in the granule's mapping (checked above).
                        let host = unsafe { (granule.map.ptr as *mut u8).add(within) };
                        copy(host, done, piece).map(|()| piece).map_err(|e| format!("{e} (byte {at} of the file)"))
                    }
                }
            };
            match piece {
                Ok(piece) => done += piece,
                Err(e) => {
                    let _ = wait();
                    return Err(e);
                }
            }
        }
        wait()
    }

    /// Granule `g`'s slot (made empty if new): its first user maps and pins it, others
    /// asking for it meanwhile wait for that.
    fn slot(&self, g: u64) -> Slot {
        self.granules.lock().unwrap_or_else(|e| e.into_inner()).entry(g).or_default().clone()
    }

    fn map_granule(&self, g: u64, size: u64) -> Result<Granule, String> {
        let (start, most) = self.layout.span(g);
        let len = (size.min(start + most).saturating_sub(start)).next_multiple_of(4096) as usize;
        if len == 0 {
            return Err(format!("byte {start} is past the end of the file ({size} bytes)"));
        }
        let map = Mapping::at(&self.file, start, len, self.writable)?;
        let t = Instant::now();
        let pin = self.pinner.pin(map.ptr as *mut u8, len, !self.writable).map_err(|e| {
            format!("pinning {} KiB of the file at byte {start} ({}): {e}", len >> 10, if self.writable { "mapped shared" } else { "mapped read-only" })
        })?;
        self.pins.granules.fetch_add(1, Ordering::Relaxed);
        self.pins.bytes.fetch_add(len as u64, Ordering::Relaxed);
        self.pins.ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(Granule { _pin: pin, map })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::AtomicUsize;

    const G: u64 = 64 << 10;

    /// Pins nothing; counts what it was asked, and refuses from its `refuse_from`th pin on.
    #[derive(Default)]
    struct Fake {
        pins: AtomicUsize,
        read_only: Mutex<Vec<bool>>,
        refuse_from: Option<usize>,
    }

    impl Pinner for Fake {
        fn pin(&self, _ptr: *mut u8, _len: usize, read_only: bool) -> Result<Box<dyn Send + Sync>, String> {
            let n = self.pins.fetch_add(1, Ordering::SeqCst);
            if self.refuse_from.is_some_and(|r| n >= r) {
                return Err("refused (the test's pinner)".into());
            }
            self.read_only.lock().unwrap().push(read_only);
            Ok(Box::new(()))
        }
    }

    fn shm() -> Option<tempfile::TempDir> {
        tempfile::tempdir_in("/dev/shm").map_err(|e| eprintln!("SKIPPED: no /dev/shm ({e})")).ok()
    }

    fn bytes(n: usize, seed: u32) -> Vec<u8> {
        (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) ^ seed).to_le_bytes()[1]).collect()
    }

    /// A job's target: unnamed and open for writing only.
    fn target(dir: &std::path::Path) -> std::fs::File {
        std::fs::OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir).unwrap()
    }

    fn read_back(f: &std::fs::File) -> Vec<u8> {
        std::fs::read(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap()
    }

    /// Reads copy the file's bytes a granule's piece at a time, across granules and short at
    /// the end; the source is pinned read-only, each granule once, the first at the check.
    #[test]
    fn a_source_is_read_in_granules_and_short_at_its_end() {
        let Some(dir) = shm() else { return };
        let size = 3 * G as usize + 5000;
        let data = bytes(size, 7);
        std::fs::write(dir.path().join("s"), &data).unwrap();
        let src = std::fs::File::open(dir.path().join("s")).unwrap();
        let (fake, stats) = (Arc::new(Fake::default()), Arc::new(PinStats::default()));
        let m = MappedFile::open(&src, G, fake.clone(), stats.clone()).unwrap();
        m.check().unwrap();
        assert_eq!(fake.pins.load(Ordering::SeqCst), 1, "the check pins the first granule");
        let g = G as usize;
        for (offset, len, want) in [(0usize, g / 2, g / 2), (g - 4096, 8192, 8192), (g / 2, 2 * g, 2 * g), (3 * g, 8192, 5000), (3 * g + 8192, 4096, 0)] {
            let (mut got, mut waits) = (vec![0u8; len], 0);
            let n = m
                .read(
                    offset as u64,
                    len,
                    |host, at, piece| {
                        // SAFETY: the mapping's pinned range, `piece` bytes long, as `read` promises.
                        got[at..at + piece].copy_from_slice(unsafe { std::slice::from_raw_parts(host, piece) });
                        Ok(())
                    },
                    || {
                        waits += 1;
                        Ok(())
                    },
                )
                .unwrap();
            assert_eq!((n, waits), (want, 1), "read of {len} at {offset}");
            assert!(got[..n] == data[offset.min(size)..(offset + n).min(size)], "read of {len} at {offset}: the file's bytes");
        }
        assert_eq!(fake.pins.load(Ordering::SeqCst), 4, "granules 0 to 3, each once");
        assert!(fake.read_only.lock().unwrap().iter().all(|&r| r), "a source is pinned read-only");
        assert_eq!((stats.granules.load(Ordering::SeqCst), stats.bytes.load(Ordering::SeqCst)), (4, 3 * G + 8192), "the last granule: its pages up to the end");
        assert!(m.write(0, 4096, |_, _, _| Ok(()), || Ok(())).unwrap_err().contains("reading only"));
    }

    /// A write-only, unnamed target: the check leaves it empty; writes from several threads,
    /// last granule first, extend it (never shorten it) and land where they say; truncated to
    /// its length as its writer does, it holds exactly what was written.
    #[test]
    fn a_target_is_extended_written_and_then_cut_to_its_length_by_its_writer() {
        let Some(dir) = shm() else { return };
        let dst = target(dir.path());
        let fake = Arc::new(Fake::default());
        let m = Arc::new(MappedFile::open(&dst, G, fake.clone(), Arc::default()).unwrap());
        m.check().unwrap();
        assert_eq!(dst.metadata().unwrap().len(), 0, "the trial gives the empty target its length back");
        let size = 4 * G as usize + 12_345;
        let data = bytes(size, 3);
        let pieces: Vec<(usize, usize)> = (0..size).step_by(40_960).map(|at| (at, 40_960.min(size - at))).rev().collect();
        std::thread::scope(|s| {
            for chunk in pieces.chunks(pieces.len().div_ceil(4)) {
                let (m, data) = (m.clone(), &data);
                s.spawn(move || {
                    for &(at, len) in chunk {
                        let n = m
                            .write(
                                at as u64,
                                len,
                                |host, done, piece| {
                                    // SAFETY: the mapping's pinned range, `piece` bytes long, as `write` promises.
                                    unsafe { std::ptr::copy_nonoverlapping(data[at + done..].as_ptr(), host, piece) };
                                    Ok(())
                                },
                                || Ok(()),
                            )
                            .unwrap();
                        assert_eq!(n, len);
                    }
                });
            }
        });
        assert_eq!(dst.metadata().unwrap().len(), 5 * G, "extended to the end of the last granule written");
        assert!(fake.read_only.lock().unwrap().iter().all(|&r| !r), "a target is pinned writable");
        drop(m);
        dst.set_len(size as u64).unwrap();
        assert!(read_back(&dst) == data, "the target holds what was written");
    }

    /// Granules double from the first (1 MiB) to the granule asked for, then stay that long:
    /// every byte lies in exactly one, and they follow each other without a gap.
    #[test]
    fn granules_double_up_to_the_size_asked_then_stay_it() {
        const M: u64 = 1 << 20;
        let g = Granules::new(64 * M);
        let spans: Vec<(u64, u64)> = (0..10).map(|i| g.span(i)).collect();
        assert_eq!(spans, [(0, M), (M, M), (2 * M, 2 * M), (4 * M, 4 * M), (8 * M, 8 * M), (16 * M, 16 * M), (32 * M, 32 * M), (64 * M, 64 * M), (128 * M, 64 * M), (192 * M, 64 * M)]);
        for most in [4096, 64 << 10, M, 3 * M, 5 * M + 4096, 64 * M, 1 << 36] {
            let g = Granules::new(most);
            let mut at = 0;
            for i in 0..40 {
                let (start, len) = g.span(i);
                assert_eq!(start, at, "granule {i} of {most} starts where the one before ends");
                assert!(len > 0 && len <= most && len.is_multiple_of(4096), "granule {i} of {most}: {len} bytes");
                for b in [start, start + 1, start + len / 2, start + len - 1] {
                    assert_eq!(g.index(b), i, "byte {b} with granules of {most}");
                }
                at = start + len;
            }
            assert_eq!(g.span(g.index(1 << 40)).1, most, "far in, granules are as long as asked");
        }
    }

    /// A small output pins about its size: with 64 MiB granules, a write of 100 KiB extends
    /// the target to 1 MiB and pins that; a write at 40 MiB pins the granule of 32-64 MiB.
    #[test]
    fn a_small_target_pins_a_small_first_granule() {
        let Some(dir) = shm() else { return };
        let dst = target(dir.path());
        let stats = Arc::new(PinStats::default());
        let m = MappedFile::open(&dst, 64 << 20, Arc::new(Fake::default()), stats.clone()).unwrap();
        let data = bytes(100 << 10, 5);
        let copy = |host: *mut u8, done: usize, piece: usize| {
            // SAFETY: the mapping's pinned range, `piece` bytes long, as `write` promises.
            unsafe { std::ptr::copy_nonoverlapping(data[done..].as_ptr(), host, piece) };
            Ok(())
        };
        assert_eq!(m.write(0, data.len(), copy, || Ok(())).unwrap(), data.len());
        assert_eq!(dst.metadata().unwrap().len(), 1 << 20, "extended to its first granule's end");
        assert_eq!((stats.granules.load(Ordering::SeqCst), stats.bytes.load(Ordering::SeqCst)), (1, 1 << 20));
        assert_eq!(m.write(40 << 20, data.len(), copy, || Ok(())).unwrap(), data.len());
        assert_eq!(dst.metadata().unwrap().len(), 64 << 20);
        assert_eq!((stats.granules.load(Ordering::SeqCst), stats.bytes.load(Ordering::SeqCst)), (2, 33 << 20));
        assert_eq!(m.write(1 << 20, 0, copy, || Ok(())).unwrap(), 0, "nothing written for nothing");
        drop(m);
        let back = read_back(&dst);
        assert!(back[..data.len()] == data[..] && back[40 << 20..(40 << 20) + data.len()] == data[..]);
    }

    /// A pinner that refuses: the check says so (a target's length is given back); a later
    /// granule refused fails its command with the reason, after waiting for the pieces
    /// already handed over, and stays refused.
    #[test]
    fn a_refused_pin_is_an_error_that_names_it() {
        let Some(dir) = shm() else { return };
        std::fs::write(dir.path().join("s"), bytes(2 * G as usize, 1)).unwrap();
        let src = std::fs::File::open(dir.path().join("s")).unwrap();
        let refuse_all = Arc::new(Fake { refuse_from: Some(0), ..Fake::default() });
        let e = MappedFile::open(&src, G, refuse_all.clone(), Arc::default()).unwrap().check().unwrap_err();
        assert!(e.contains("pinning 64 KiB of the file at byte 0 (mapped read-only): refused"), "{e}");
        let dst = target(dir.path());
        let e = MappedFile::open(&dst, G, refuse_all, Arc::default()).unwrap().check().unwrap_err();
        assert!(e.contains("the target's first page") && e.contains("refused"), "{e}");
        assert_eq!(dst.metadata().unwrap().len(), 0, "the trial gives the empty target its length back");
        let m = MappedFile::open(&src, G, Arc::new(Fake { refuse_from: Some(1), ..Fake::default() }), Arc::default()).unwrap();
        m.check().unwrap();
        for _ in 0..2 {
            let (mut copies, mut waits) = (0, 0);
            let e = m
                .read(
                    G - 4096,
                    8192,
                    |_, _, _| {
                        copies += 1;
                        Ok(())
                    },
                    || {
                        waits += 1;
                        Ok(())
                    },
                )
                .unwrap_err();
            assert!(e.contains(&format!("at byte {G}")) && e.contains("refused"), "{e}");
            assert_eq!((copies, waits), (1, 1), "the first granule's piece handed over, then waited for");
        }
        let e = m.read(0, 4096, |_, _, _| Err("the engine said no".into()), || Ok(())).unwrap_err();
        assert_eq!(e, "the engine said no (byte 0 of the file)");
    }
}
