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
//! figure, or the error CUDA or the kernel gave. `crate::memfile` is the
//! job's side of it (`--gpu-memory-files mapped`): the GPU device's own
//! storage reads and writes of such files.

use crate::Gpu;
use cudarc::driver::{sys, DevicePtr};
use serde::Serialize;
use std::ffi::c_void;
use std::os::fd::AsRawFd;
use std::path::Path;
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
pub(crate) struct Mapping {
    pub ptr: *mut c_void,
    pub len: usize,
}

impl Mapping {
    fn new(file: &std::fs::File, len: usize, writable: bool) -> Result<Mapping, String> {
        Mapping::at(file, 0, len, writable)
    }

    /// `len` bytes of `file` from `offset` (a multiple of the page size).
    pub(crate) fn at(file: &std::fs::File, offset: u64, len: usize, writable: bool) -> Result<Mapping, String> {
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
pub(crate) struct Registered(*mut c_void);

impl Registered {
    /// Registers `len` bytes at `ptr` with `flags`; how long pinning took.
    pub(crate) fn new(ptr: *mut c_void, len: usize, flags: u32) -> Result<(Registered, f64), String> {
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
