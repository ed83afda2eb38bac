//! Can the GPU's copy engine move a file on a memory file system (tmpfs)
//! without a CPU copy? (`peerpath gpu probe --mapped-at DIR`.)
//!
//! In memory, the GPU job's host CPU work is two kernel copies: each block
//! read from the source's page cache into the pinned window, each member
//! written from the window into the target's (docs/gpu-nvcomp.md, section
//! 9: the GPU busy less than half the job). Where the source and target are
//! tmpfs files, their pages are host memory already: mapped and registered
//! with CUDA (`cuMemHostRegister`; read-only for a source, which may be
//! opened for reading only), the copy engine could read and write them
//! directly. Whether the driver pins a shared file mapping, how long pinning
//! takes, and how fast the copies run are measured by the probe: each step's
//! figure, or the error CUDA or the kernel gave. [`MappedFile`] is the job's
//! side of it (`--gpu-memory-files mapped`): the GPU device's own storage
//! reads and writes of such files.

use crate::Gpu;
use cudarc::driver::{sys, CudaContext, DevicePtr};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// What the mapped-file probe measured (every figure on this machine's GPU).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MappedProbe {
    pub dir: String,
    /// Whether `dir` is on a memory file system (the case this is for).
    pub memory_file_system: bool,
    pub bytes: usize,
    /// The reference: pinned anonymous memory (the window's path) to the GPU, GB/s (best of 3).
    pub pinned_h2d_gb_per_s: Option<f64>,
    /// The source: the file mapped read-only and registered read-only.
    pub source_register_s: Option<f64>,
    pub source_h2d_gb_per_s: Option<f64>,
    /// The GPU's copy of the source equals the file's bytes.
    pub source_bytes_match: Option<bool>,
    /// The target: a new file of the same size mapped shared and registered (pinning allocates its pages).
    pub target_register_s: Option<f64>,
    pub target_d2h_gb_per_s: Option<f64>,
    /// The file, read back after the mapping is gone, holds exactly the bytes copied.
    pub target_bytes_match: Option<bool>,
    /// The first step that failed, and why (later steps are then not run).
    pub error: Option<String>,
}

/// A file's mapping, unmapped on drop.
struct Mapping {
    ptr: *mut c_void,
    len: usize,
}

impl Mapping {
    fn new(file: &std::fs::File, len: usize, writable: bool) -> Result<Mapping, String> {
        Mapping::at(file, 0, len, writable)
    }

    /// `len` bytes of `file` from `offset` (a multiple of the page size).
    fn at(file: &std::fs::File, offset: u64, len: usize, writable: bool) -> Result<Mapping, String> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a new shared mapping of our own descriptor at an address of
        // the kernel's choosing; `offset..offset + len` is within the file
        // (rounded up to its last page).
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, file.as_raw_fd(), offset as libc::off_t) };
        if ptr == libc::MAP_FAILED {
            return Err(format!("mmap: {}", std::io::Error::last_os_error()));
        }
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping `new` made; unregistered from CUDA before it goes.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// Host memory registered with CUDA, unregistered on drop (before its mapping goes).
struct Registered(*mut c_void);

impl Registered {
    /// Registers `len` bytes at `ptr` with `flags`; how long pinning took.
    fn new(ptr: *mut c_void, len: usize, flags: u32) -> Result<(Registered, f64), String> {
        let t = Instant::now();
        // SAFETY: `ptr..ptr + len` is a live mapping the caller owns and keeps until this is dropped.
        unsafe { sys::cuMemHostRegister_v2(ptr, len, flags) }.result().map_err(|e| format!("cuMemHostRegister: {e}"))?;
        Ok((Registered(ptr), t.elapsed().as_secs_f64()))
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; every copy from or into it has been synchronised.
        unsafe { sys::cuMemHostUnregister(self.0) };
    }
}

/// Files the probe made, removed when it ends however it ends.
struct Scratch(Vec<std::path::PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Measures, on `gpu`, copies of `data` between GPU memory and files in
/// `dir` mapped and registered with CUDA (see the module's doc). Never
/// fails as a whole: the report says which step failed and why.
pub fn probe_mapped(gpu: &Gpu, data: &[u8], dir: &Path) -> MappedProbe {
    let mut r = MappedProbe { dir: dir.display().to_string(), bytes: data.len(), ..Default::default() };
    if let Err(e) = run(gpu, data, dir, &mut r) {
        r.error = Some(e);
    }
    r
}

fn run(gpu: &Gpu, data: &[u8], dir: &Path, r: &mut MappedProbe) -> Result<(), String> {
    if data.is_empty() {
        return Err("no data".into());
    }
    let cuda = |what: &str, e: cudarc::driver::DriverError| format!("CUDA {what}: {e}");
    gpu.ctx.bind_to_thread().map_err(|e| cuda("bind", e))?;
    let stream = &gpu.stream;
    let cu = stream.cu_stream();
    let len = data.len();
    let mapped_len = len.next_multiple_of(4096);
    // SAFETY: device memory of `len` bytes, written by the copies below before it is read.
    let d_buf = unsafe { stream.alloc::<u8>(len) }.map_err(|e| cuda("alloc", e))?;
    let (dev, _guard) = d_buf.device_ptr(stream);
    // Best of 3 of a copy (enqueued by `copy`) to completion.
    let best_of_3 = |copy: &dyn Fn() -> sys::CUresult| -> Result<f64, String> {
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            copy().result().map_err(|e| cuda("copy", e))?;
            stream.synchronize().map_err(|e| cuda("sync", e))?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(len as f64 / best.max(1e-9) / 1e9)
    };

    // The reference: the window's path.
    let window = peerpath_mem::MappedRegion::host(len).map_err(|e| e.to_string())?;
    // SAFETY: the region holds at least `len` bytes and nothing else uses it yet.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), window.as_ptr(), len) };
    {
        let (_pinned, _) = Registered::new(window.as_ptr() as *mut c_void, window.len(), sys::CU_MEMHOSTREGISTER_PORTABLE)?;
        // SAFETY: registered host memory of `len` bytes to device memory of as many.
        r.pinned_h2d_gb_per_s = Some(best_of_3(&|| unsafe { sys::cuMemcpyHtoDAsync_v2(dev, window.as_ptr() as *const c_void, len, cu) })?);
    }
    drop(window);

    let tag = format!("{}.{}", std::process::id(), gpu.info.ordinal);
    let mut scratch = Scratch(Vec::new());
    let source = dir.join(format!(".peerpath-gpu-probe-source.{tag}"));
    scratch.0.push(source.clone());
    std::fs::write(&source, data).map_err(|e| format!("writing {}: {e}", source.display()))?;
    let file = std::fs::File::open(&source).map_err(|e| format!("opening {}: {e}", source.display()))?;
    r.memory_file_system = peerpath_mem::on_memory_file_system(file.as_raw_fd());
    let map = Mapping::new(&file, mapped_len, false)?;
    {
        let (_reg, took) = Registered::new(map.ptr, map.len, sys::CU_MEMHOSTREGISTER_READ_ONLY | sys::CU_MEMHOSTREGISTER_PORTABLE).map_err(|e| format!("the source, mapped read-only: {e}"))?;
        r.source_register_s = Some(took);
        // SAFETY: the registered mapping holds `len` bytes of the file; device memory as many.
        r.source_h2d_gb_per_s = Some(best_of_3(&|| unsafe { sys::cuMemcpyHtoDAsync_v2(dev, map.ptr as *const c_void, len, cu) })?);
        let back: Vec<u8> = stream.clone_dtoh(&d_buf).map_err(|e| cuda("copy back", e))?;
        r.source_bytes_match = Some(back == data);
    }
    drop(map);

    // The target: a new file, as a compressed output would be; the GPU holds `data` now.
    let target = dir.join(format!(".peerpath-gpu-probe-target.{tag}"));
    scratch.0.push(target.clone());
    let out = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&target).map_err(|e| format!("creating {}: {e}", target.display()))?;
    out.set_len(len as u64).map_err(|e| format!("sizing {}: {e}", target.display()))?;
    let map = Mapping::new(&out, mapped_len, true)?;
    {
        let (_reg, took) = Registered::new(map.ptr, map.len, sys::CU_MEMHOSTREGISTER_PORTABLE).map_err(|e| format!("the target, mapped shared: {e}"))?;
        r.target_register_s = Some(took);
        // SAFETY: device memory of `len` bytes into the registered mapping of the file's `len` bytes.
        r.target_d2h_gb_per_s = Some(best_of_3(&|| unsafe { sys::cuMemcpyDtoHAsync_v2(map.ptr, dev, len, cu) })?);
    }
    drop(map);
    drop(out);
    let written = std::fs::read(&target).map_err(|e| format!("reading {} back: {e}", target.display()))?;
    r.target_bytes_match = Some(written == data);
    Ok(())
}

/// Bytes of a file mapped and registered at once, on first use: pinning is
/// paid a granule at a time by the I/O thread that first needs it (several
/// threads pin different granules at once), not up front for a whole file.
pub(crate) const GRANULE_BYTES: u64 = 64 << 20;

/// What pinning files' granules took over a job (the GPU device's profile).
#[derive(Default)]
pub(crate) struct PinStats {
    pub granules: AtomicU64,
    pub bytes: AtomicU64,
    pub ns: AtomicU64,
}

/// A granule of a file: mapped shared and registered with CUDA (fields drop
/// in order: unregistered, then unmapped).
struct Granule {
    _registered: Registered,
    map: Mapping,
}

// SAFETY: a granule is an address range of this process's mapping of a
// file and CUDA's registration of it; nothing in it is tied to a thread.
// Threads only read its address, and copies into or out of it are the
// file's bytes, ordered by the executor (one command per range at a time).
unsafe impl Send for Granule {}
// SAFETY: as for Send: shared references only read the address.
unsafe impl Sync for Granule {}

type Slot = Arc<OnceLock<Result<Granule, String>>>;

/// A file of a memory file system the GPU's copy engine reads or writes
/// directly (the GPU device's own `StorageRead`/`StorageWrite` of it): its
/// pages are host memory already. Mapped shared in granules of
/// [`GRANULE_BYTES`], each registered with CUDA when first used (read-only
/// where the file was opened for reading only: a source) and kept until the
/// file is let go (the job's end): a source's pages stay pinned for that
/// long, a target's too. A target is extended to the end of each granule it
/// writes before mapping it (its writer truncates it to its length at the
/// end, as it does after O_DIRECT's padded last write).
pub(crate) struct MappedFile {
    file: std::fs::File,
    writable: bool,
    granules: Mutex<HashMap<u64, Slot>>,
    /// Extending a target: one at a time (a later, smaller extension must not shorten it).
    growing: Mutex<()>,
    ctx: Arc<CudaContext>,
    pins: Arc<PinStats>,
}

impl MappedFile {
    /// Holds `file` for mapping: read-only where it is open for reading
    /// only, else reopened for reading and writing (mapping it shared and
    /// writable needs both; a target is opened for writing only).
    pub fn open(file: &std::fs::File, ctx: Arc<CudaContext>, pins: Arc<PinStats>) -> Result<MappedFile, String> {
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
        Ok(MappedFile { file, writable, granules: Mutex::default(), growing: Mutex::default(), ctx, pins })
    }

    /// Whether CUDA pins this file's mapping at all, asked before any command needs it (a
    /// file it refuses then goes through the window, and the GPU still computes): a source's
    /// first granule, registered for the reads to come; a target's first page, registered and
    /// let go (an empty target is given that page for the trial, and its length back after).
    pub fn check(&self) -> Result<(), String> {
        let size = self.file.metadata().map_err(|e| format!("fstat: {e}"))?.len();
        if !self.writable {
            if size == 0 {
                return Ok(());
            }
            return self.slot(0).get_or_init(|| self.map_granule(0, size)).as_ref().map(|_| ()).map_err(|e| e.clone());
        }
        if size == 0 {
            self.file.set_len(4096).map_err(|e| format!("sizing the target for a trial: {e}"))?;
        }
        let trial = (|| {
            let map = Mapping::at(&self.file, 0, 4096, true)?;
            self.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
            let (registered, _) = Registered::new(map.ptr, 4096, sys::CU_MEMHOSTREGISTER_PORTABLE).map_err(|e| format!("pinning the target's first page (mapped shared): {e}"))?;
            drop(registered);
            drop(map);
            Ok(())
        })();
        if size == 0 {
            self.file.set_len(0).map_err(|e| format!("the target's length back after the trial: {e}"))?;
        }
        trial
    }

    /// Copies up to `len` bytes of the file at `offset` into GPU memory at
    /// `dst` on `stream`, and waits for the copy: the bytes copied (fewer at
    /// the end of the file).
    ///
    /// # Safety
    /// `dst..dst + len` is GPU memory no other command uses until this returns.
    pub unsafe fn read_into(&self, offset: u64, dst: sys::CUdeviceptr, len: usize, stream: &cudarc::driver::CudaStream) -> Result<usize, String> {
        let size = self.file.metadata().map_err(|e| format!("fstat: {e}"))?.len();
        let n = (len as u64).min(size.saturating_sub(offset)) as usize;
        // SAFETY: the caller's contract for `dst`; `host` is a registered range of the file's
        // mapping, within its size, kept while the copy runs (`self` is borrowed until the wait).
        unsafe { self.copy(offset, n, size, stream, |host, at, piece| sys::cuMemcpyHtoDAsync_v2(dst + at as u64, host, piece, stream.cu_stream())) }?;
        Ok(n)
    }

    /// Copies `len` bytes of GPU memory at `src` into the file at `offset`
    /// on `stream` (extending the file first where it is shorter), and
    /// waits for the copy.
    ///
    /// # Safety
    /// `src..src + len` is GPU memory that nothing writes until this returns.
    pub unsafe fn write_from(&self, offset: u64, src: sys::CUdeviceptr, len: usize, stream: &cudarc::driver::CudaStream) -> Result<usize, String> {
        if !self.writable {
            return Err("the file is open for reading only".into());
        }
        let end = offset + len as u64;
        {
            let _one = self.growing.lock().unwrap_or_else(|e| e.into_inner());
            let size = self.file.metadata().map_err(|e| format!("fstat: {e}"))?.len();
            let wanted = end.next_multiple_of(GRANULE_BYTES);
            if size < wanted {
                self.file.set_len(wanted).map_err(|e| format!("extending the target to {wanted} bytes: {e}"))?;
            }
        }
        let size = end.next_multiple_of(GRANULE_BYTES);
        // SAFETY: as in `read_into`, the other way.
        unsafe { self.copy(offset, len, size, stream, |host, at, piece| sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, src + at as u64, piece, stream.cu_stream())) }?;
        Ok(len)
    }

    /// Enqueues `enqueue(host address, offset in the transfer, bytes)` for
    /// each granule's piece of `offset..offset + len` (the file `size` bytes
    /// long), registering granules on first use, then waits for `stream`.
    ///
    /// # Safety
    /// `enqueue`'s copies must be valid for the GPU side of every piece.
    unsafe fn copy(&self, offset: u64, len: usize, size: u64, stream: &cudarc::driver::CudaStream, enqueue: impl Fn(*const c_void, usize, usize) -> sys::CUresult) -> Result<(), String> {
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let g = at / GRANULE_BYTES;
            let slot = self.slot(g);
            let granule = match slot.get_or_init(|| self.map_granule(g, size)) {
                Ok(granule) => granule,
                Err(e) => {
                    let _ = stream.synchronize(); // as below
                    return Err(e.clone());
                }
            };
            let within = (at - g * GRANULE_BYTES) as usize;
            if within >= granule.map.len {
                let _ = stream.synchronize(); // as below
                return Err(format!("byte {at} is past the file's mapped part (a file that was shorter when first mapped)"));
            }
            let piece = (len - done).min(granule.map.len - within);
            // SAFETY: `within..within + piece` lies in the granule's mapping (registered).
            let host = unsafe { (granule.map.ptr as *const u8).add(within) } as *const c_void;
            if let Err(e) = enqueue(host, done, piece).result() {
                // The pieces already enqueued end before the command does (a failed write must
                // not land in the target after the CPU took it over).
                let _ = stream.synchronize();
                return Err(format!("CUDA copy of {piece} bytes at byte {at} of the file: {e}"));
            }
            done += piece;
        }
        stream.synchronize().map_err(|e| format!("CUDA: waiting for the file's copy: {e}"))
    }

    /// Granule `g`'s slot (made empty if new): its first user maps and registers it, others
    /// asking for it meanwhile wait for that.
    fn slot(&self, g: u64) -> Slot {
        self.granules.lock().unwrap_or_else(|e| e.into_inner()).entry(g).or_default().clone()
    }

    fn map_granule(&self, g: u64, size: u64) -> Result<Granule, String> {
        let start = g * GRANULE_BYTES;
        let len = (size.min(start + GRANULE_BYTES) - start).next_multiple_of(4096) as usize;
        if len == 0 {
            return Err(format!("byte {start} is past the end of the file ({size} bytes)"));
        }
        let map = Mapping::at(&self.file, start, len, self.writable)?;
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | if self.writable { 0 } else { sys::CU_MEMHOSTREGISTER_READ_ONLY };
        self.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
        let (registered, took) = Registered::new(map.ptr, len, flags).map_err(|e| format!("pinning {} MiB of the file at byte {start} ({}): {e}", len >> 20, if self.writable { "mapped shared" } else { "mapped read-only" }))?;
        self.pins.granules.fetch_add(1, Ordering::Relaxed);
        self.pins.bytes.fetch_add(len as u64, Ordering::Relaxed);
        self.pins.ns.fetch_add((took * 1e9) as u64, Ordering::Relaxed);
        Ok(Granule { _registered: registered, map })
    }
}

impl Drop for MappedFile {
    /// Its granules are unregistered (then unmapped) after this, with the context current on
    /// whichever thread lets the file go.
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
    }
}
