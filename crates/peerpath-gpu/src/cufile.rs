//! What NVIDIA's cuFile (GPUDirect Storage's library) says about this machine: whether its
//! driver opens, and whether it moves NVMe data straight into GPU memory or runs in
//! "compatibility mode" (POSIX reads into host memory, then a copy), which is what peerpath's
//! GPU device does anyway with its pinned window ([`probe`], which `gpu probe` reports); and
//! reads through it ([`Cufile`]): files registered, read into GPU memory by `cuFileRead`, which
//! the GPU device uses for `Function::StorageRead` (`--gpu-io`).
//!
//! cuFile is loaded at run time (a handful of C functions; no maintained Rust binding exposes
//! them), from `$PEERPATH_CUFILE`, the loader's path (`libcufile.so.0`), or a CUDA installation's
//! `lib64`. The struct below mirrors `CUfileDrvProps_t` of `cufile.h` (GDS 1.x, CUDA 11.4-13).

use std::ffi::c_void;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Where cuFile is looked for first.
pub const ENV: &str = "PEERPATH_CUFILE";
const SONAME: &str = "libcufile.so.0";

/// `CUfileError_t`: cuFile's code (0 success; 5000 + n errors) and the CUDA driver's result.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CuFileError {
    err: i32,
    cu_err: i32,
}

/// `CUfileDrvProps_t.nvfs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct NvfsProps {
    major_version: u32,
    minor_version: u32,
    poll_thresh_size: usize,
    max_direct_io_size: usize,
    dstatusflags: u32,
    dcontrolflags: u32,
}

/// `CUfileDrvProps_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct DrvProps {
    nvfs: NvfsProps,
    fflags: u32,
    max_device_cache_size: u32,
    per_buffer_cache_size: u32,
    max_device_pinned_mem_size: u32,
    max_batch_io_size: u32,
    max_batch_io_timeout_msecs: u32,
}

/// Bits of `dstatusflags` (`CUfileDriverStatusFlags_t`): the targets the driver reaches directly.
const NVME_SUPPORTED: u32 = 4;
const NVMEOF_SUPPORTED: u32 = 5;
/// Bit of `dcontrolflags` (`CUfileDriverControlFlags_t`).
const ALLOW_COMPAT_MODE: u32 = 1;

/// `CUfileDescr_t`'s handle union.
#[repr(C)]
#[derive(Clone, Copy)]
union DescrHandle {
    fd: i32,
    handle: *mut c_void,
}

/// `CUfileDescr_t`.
#[repr(C)]
struct Descr {
    kind: i32,
    handle: DescrHandle,
    fs_ops: *const c_void,
}

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`.
const HANDLE_TYPE_OPAQUE_FD: i32 = 1;

type HandleRegister = unsafe extern "C" fn(*mut *mut c_void, *mut Descr) -> CuFileError;
type HandleDeregister = unsafe extern "C" fn(*mut c_void);
type Read = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, i64, i64) -> isize;
type Write = unsafe extern "C" fn(*mut c_void, *const c_void, usize, i64, i64) -> isize;
type BufRegister = unsafe extern "C" fn(*const c_void, usize, i32) -> CuFileError;
type BufDeregister = unsafe extern "C" fn(*const c_void) -> CuFileError;
type DriverOpen = unsafe extern "C" fn() -> CuFileError;
type DriverClose = unsafe extern "C" fn() -> CuFileError;
type GetProperties = unsafe extern "C" fn(*mut DrvProps) -> CuFileError;
type GetVersion = unsafe extern "C" fn(*mut i32) -> CuFileError;

/// cuFile's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CufileReport {
    /// `not_found`, `open_failed`, `compatibility` or `direct`.
    pub state: &'static str,
    /// The library that answered (absent when none loaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// `cuFileGetVersion` (e.g. 1150 for 1.15), where the library has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// nvidia-fs's version as the driver reports it (`0.0`: not in use).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvidia_fs_version: Option<String>,
    /// NVMe (local) and NVMe-oF read straight into GPU memory.
    pub nvme_direct: bool,
    pub nvmeof_direct: bool,
    /// Compatibility mode allowed by its configuration (`allow_compat_mode`).
    pub compat_mode_allowed: bool,
    /// One line in words.
    pub detail: String,
}

impl CufileReport {
    fn not_found(tried: &[String]) -> CufileReport {
        CufileReport {
            state: "not_found",
            library: None,
            version: None,
            nvidia_fs_version: None,
            nvme_direct: false,
            nvmeof_direct: false,
            compat_mode_allowed: false,
            detail: format!(
                "cuFile (GPUDirect Storage) not found (tried {}): storage reaches GPU memory through host memory; install the nvidia-gds package or set {ENV}=/path/to/{SONAME}",
                tried.join("; ")
            ),
        }
    }

    /// From the driver's properties.
    fn from_props(library: String, version: Option<i32>, p: &DrvProps) -> CufileReport {
        let bit = |flags: u32, b: u32| flags & (1 << b) != 0;
        let nvme = bit(p.nvfs.dstatusflags, NVME_SUPPORTED);
        let nvmeof = bit(p.nvfs.dstatusflags, NVMEOF_SUPPORTED);
        let nvfs = format!("{}.{}", p.nvfs.major_version, p.nvfs.minor_version);
        let nvfs_loaded = p.nvfs.major_version != 0 || p.nvfs.minor_version != 0;
        let direct = nvme || nvmeof;
        let detail = if direct {
            format!(
                "cuFile's driver reaches GPU memory directly from {}{}",
                [(nvme, "NVMe"), (nvmeof, "NVMe-oF")].iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect::<Vec<_>>().join(" and "),
                if nvfs_loaded { format!(" (nvidia-fs {nvfs})") } else { " (the kernel's P2PDMA: no nvidia-fs)".to_string() }
            )
        } else {
            format!(
                "cuFile's driver opens but reaches no NVMe directly{}: it runs in compatibility mode, every byte through host memory, as peerpath's staged path does",
                if nvfs_loaded { format!(" (nvidia-fs {nvfs} is loaded)") } else { " (no nvidia-fs, no P2PDMA path)".to_string() }
            )
        };
        CufileReport {
            state: if direct { "direct" } else { "compatibility" },
            library: Some(library),
            version,
            nvidia_fs_version: Some(nvfs),
            nvme_direct: nvme,
            nvmeof_direct: nvmeof,
            compat_mode_allowed: bit(p.nvfs.dcontrolflags, ALLOW_COMPAT_MODE),
            detail,
        }
    }
}

/// Where cuFile is looked for: `explicit` (or `$PEERPATH_CUFILE`) alone, else the soname on the
/// loader's path, then CUDA installations' `lib64` (newest version first by name).
fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit.map(Path::to_path_buf).or_else(|| std::env::var_os(ENV).map(PathBuf::from)) {
        return vec![p];
    }
    let mut out = vec![PathBuf::from(SONAME), PathBuf::from("/usr/local/cuda/lib64").join(SONAME)];
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let mut cudas: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cuda-"))).collect();
        crate::nvcomp::newest_first(&mut cudas);
        out.extend(cudas.into_iter().map(|c| c.join("lib64").join(SONAME)));
    }
    out
}

/// Loads cuFile, opens its driver, reads its properties and closes it again. Never fails: what
/// could not be done is the report's state and detail.
pub fn probe(explicit: Option<&Path>) -> CufileReport {
    match load(explicit) {
        Ok((lib, library)) => probe_library(lib, library, true),
        Err(report) => report,
    }
}

/// The first candidate that loads. Kept loaded for the life of the process: its driver may
/// leave threads behind after closing, and unloading code they run would crash the process.
fn load(explicit: Option<&Path>) -> Result<(&'static libloading::Library, String), CufileReport> {
    let mut tried = Vec::new();
    for path in candidates(explicit) {
        // cuFile's initialisers set up its own state (it loads libcuda itself when its driver is
        // opened).
        match crate::open_library(&path) {
            Ok(lib) => return Ok((Box::leak(Box::new(lib)), path.display().to_string())),
            Err(why) => tried.push(why),
        }
    }
    Err(CufileReport::not_found(&tried))
}

/// Where `explicit` (said as `--cufile`) or `$PEERPATH_CUFILE` names a library that does not
/// load, why not: said beside the reason a GPU cannot be used, where cuFile was never asked.
pub fn named_not_loading(explicit: Option<&Path>) -> Option<String> {
    let (path, how) = match explicit {
        Some(p) => (p.to_path_buf(), "--cufile"),
        None => (PathBuf::from(std::env::var_os(ENV)?), "$PEERPATH_CUFILE"),
    };
    crate::open_library(&path).err().map(|e| format!("cuFile not loaded from {how} ({e})"))
}

/// Opens the driver and reads its properties; closes it again when `close`.
fn probe_library(lib: &libloading::Library, library: String, close_after: bool) -> CufileReport {
    let failed = |detail: String| CufileReport {
        state: "open_failed",
        library: Some(library.clone()),
        version: None,
        nvidia_fs_version: None,
        nvme_direct: false,
        nvmeof_direct: false,
        compat_mode_allowed: false,
        detail,
    };
    let (Some(open), Some(props)) = (sym::<DriverOpen>(lib, b"cuFileDriverOpen\0"), sym::<GetProperties>(lib, b"cuFileDriverGetProperties\0")) else {
        return failed(format!("{library} has no cuFileDriverOpen/cuFileDriverGetProperties: not cuFile?"));
    };
    // cufile.h maps cuFileDriverClose to cuFileDriverClose_v2 in newer releases.
    let close = sym::<DriverClose>(lib, b"cuFileDriverClose_v2\0").or_else(|| sym::<DriverClose>(lib, b"cuFileDriverClose\0"));
    let version = sym::<GetVersion>(lib, b"cuFileGetVersion\0").and_then(|get| {
        let mut v = 0i32;
        // SAFETY: writes one int we own.
        (unsafe { get(&mut v) }.err == 0).then_some(v)
    });
    // SAFETY: no arguments; the driver sets up its own state (and a CUDA context if it needs one).
    let st = unsafe { open() };
    if st.err != 0 {
        return failed(format!("cuFileDriverOpen failed (cuFile error {}, CUDA result {}): {}", st.err, st.cu_err, error_text(st.err)));
    }
    // Room past the struct as mirrored, zeroed: a later cuFile whose CUfileDrvProps_t grows
    // writes there, not past our memory; the mirrored prefix is read.
    let mut room = [DrvProps::default(); 4];
    // SAFETY: writes one CUfileDrvProps_t (the mirrored 56 bytes in every release so far) into
    // 4 times that, all ours.
    let st = unsafe { props(room.as_mut_ptr()) };
    let p = room[0];
    if let Some(close) = close.filter(|_| close_after || st.err != 0) {
        // SAFETY: closes the driver opened above; nothing of it is used after.
        unsafe { close() };
    }
    if st.err != 0 {
        return failed(format!("cuFileDriverGetProperties failed (cuFile error {}): {}", st.err, error_text(st.err)));
    }
    CufileReport::from_props(library, version, &p)
}

/// cuFile open for reads into GPU memory: its driver open, files registered by descriptor
/// (`cuFileHandleRegister`), `cuFileRead` into device pointers. Shared by the GPU device's I/O
/// threads (cuFile's calls are thread-safe).
pub struct Cufile {
    /// What its driver said when opened (direct, or compatibility mode).
    pub report: CufileReport,
    register: HandleRegister,
    deregister: HandleDeregister,
    read: Read,
    write: Write,
    buf_register: Option<BufRegister>,
    buf_deregister: Option<BufDeregister>,
    close: Option<DriverClose>,
}

/// A file registered with cuFile (its `CUfileHandle_t`, as an address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHandle(usize);

impl Cufile {
    /// Loads cuFile (as [`probe`] looks for it) and keeps its driver open, or says why not:
    /// the report of a library that is not there or whose driver does not open.
    pub fn open(explicit: Option<&Path>) -> Result<Cufile, CufileReport> {
        let (lib, library) = load(explicit)?;
        let report = probe_library(lib, library.clone(), false);
        if report.state != "direct" && report.state != "compatibility" {
            return Err(report);
        }
        let close = sym::<DriverClose>(lib, b"cuFileDriverClose_v2\0").or_else(|| sym::<DriverClose>(lib, b"cuFileDriverClose\0")).map(|s| *s);
        let (Some(register), Some(deregister), Some(read), Some(write)) =
            (sym::<HandleRegister>(lib, b"cuFileHandleRegister\0"), sym::<HandleDeregister>(lib, b"cuFileHandleDeregister\0"), sym::<Read>(lib, b"cuFileRead\0"), sym::<Write>(lib, b"cuFileWrite\0"))
        else {
            if let Some(close) = close {
                // SAFETY: closes the driver `probe_library` left open; nothing of it is used after.
                unsafe { close() };
            }
            return Err(CufileReport { state: "open_failed", detail: format!("{library} has no cuFileHandleRegister, cuFileHandleDeregister, cuFileRead or cuFileWrite: not cuFile?"), ..report });
        };
        Ok(Cufile {
            register: *register,
            deregister: *deregister,
            read: *read,
            write: *write,
            buf_register: sym::<BufRegister>(lib, b"cuFileBufRegister\0").map(|s| *s),
            buf_deregister: sym::<BufDeregister>(lib, b"cuFileBufDeregister\0").map(|s| *s),
            close,
            report,
        })
    }

    /// Whether storage reaches GPU memory without passing host memory.
    pub fn direct(&self) -> bool {
        self.report.state == "direct"
    }

    /// Registers an open file (O_DIRECT for the direct path) for reads.
    pub fn register(&self, fd: RawFd) -> Result<FileHandle, String> {
        let mut descr = Descr { kind: HANDLE_TYPE_OPAQUE_FD, handle: DescrHandle { handle: std::ptr::null_mut() }, fs_ops: std::ptr::null() };
        descr.handle.fd = fd;
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: cuFile writes one handle into `handle` and reads the descriptor, both ours for
        // the call; the descriptor stays open for as long as it is registered (the caller's).
        let st = unsafe { (self.register)(&mut handle, &mut descr) };
        if st.err != 0 {
            return Err(format!("cuFileHandleRegister refused it (cuFile error {}, CUDA result {}): {}", st.err, st.cu_err, error_text(st.err)));
        }
        Ok(FileHandle(handle as usize))
    }

    /// Lets go of a registered file (no read of it in flight).
    pub fn deregister(&self, file: FileHandle) {
        // SAFETY: a handle `register` gave, deregistered once (the caller's contract).
        unsafe { (self.deregister)(file.0 as *mut c_void) };
    }

    /// Reads `len` bytes of `file` from `offset` into the device memory at `base + at`, until
    /// it is full or the file ends; the bytes read.
    ///
    /// # Safety
    /// `base` is a device allocation cuFile may write (GPU memory of the current context, or
    /// host memory for a stand-in) and `[at, at + len)` lies inside it, not used by anything
    /// else until this returns.
    pub unsafe fn read(&self, file: FileHandle, base: u64, at: u64, len: usize, offset: u64) -> Result<usize, String> {
        let mut done = 0usize;
        while done < len {
            // SAFETY: the caller's contract: the range is the caller's, in memory cuFile may write.
            let n = unsafe { (self.read)(file.0 as *mut c_void, base as *mut c_void, len - done, (offset + done as u64) as i64, (at + done as u64) as i64) };
            match n {
                0 => break,
                n if n > 0 => done += n as usize,
                -1 => return Err(format!("cuFileRead at byte {}: {}", offset + done as u64, std::io::Error::last_os_error())),
                n => return Err(format!("cuFileRead at byte {}: cuFile error {n}: {}", offset + done as u64, error_text(n as i32))),
            }
        }
        Ok(done)
    }

    /// Writes `len` bytes of the device memory at `base + at` to `file` at `offset`, all of them.
    ///
    /// # Safety
    /// `base` is a device allocation cuFile may read (as for [`Cufile::read`]) and `[at, at +
    /// len)` lies inside it, written by nothing until this returns.
    pub unsafe fn write(&self, file: FileHandle, base: u64, at: u64, len: usize, offset: u64) -> Result<usize, String> {
        let mut done = 0usize;
        while done < len {
            // SAFETY: the caller's contract: the range is the caller's, in memory cuFile may read.
            let n = unsafe { (self.write)(file.0 as *mut c_void, base as *const c_void, len - done, (offset + done as u64) as i64, (at + done as u64) as i64) };
            match n {
                n if n > 0 => done += n as usize,
                0 => return Err(format!("cuFileWrite at byte {} wrote nothing", offset + done as u64)),
                -1 => return Err(format!("cuFileWrite at byte {}: {}", offset + done as u64, std::io::Error::last_os_error())),
                n => return Err(format!("cuFileWrite at byte {}: cuFile error {n}: {}", offset + done as u64, error_text(n as i32))),
            }
        }
        Ok(done)
    }

    /// Registers device memory as a read target (cuFile then maps it once, not per read); where
    /// it refuses, reads still work through its own bounce buffers.
    pub fn register_buffer(&self, base: u64, len: usize) -> Result<(), String> {
        let Some(reg) = self.buf_register else { return Err("no cuFileBufRegister".into()) };
        // SAFETY: `base` is a device allocation of `len` bytes that outlives its registration
        // (the caller deregisters it before freeing it).
        let st = unsafe { reg(base as *const c_void, len, 0) };
        if st.err != 0 {
            return Err(format!("cuFileBufRegister (cuFile error {}): {}", st.err, error_text(st.err)));
        }
        Ok(())
    }

    /// Undoes [`Cufile::register_buffer`].
    pub fn deregister_buffer(&self, base: u64) {
        if let Some(dereg) = self.buf_deregister {
            // SAFETY: a buffer `register_buffer` registered, still allocated.
            unsafe { dereg(base as *const c_void) };
        }
    }
}

impl Drop for Cufile {
    fn drop(&mut self) {
        if let Some(close) = self.close {
            // SAFETY: closes the driver `open` opened; every file and buffer is deregistered and
            // no read is in flight (the GPU device's I/O threads ended first).
            unsafe { close() };
        }
    }
}

/// One of cuFile's functions, `T` its C signature as mirrored above.
fn sym<'l, T>(lib: &'l libloading::Library, name: &[u8]) -> Option<libloading::Symbol<'l, T>> {
    // SAFETY: every caller names a cuFile function whose C signature `T` mirrors (cufile.h);
    // the symbol borrows `lib`, so it cannot outlive the library.
    unsafe { lib.get::<T>(name) }.ok()
}

/// The first of `CUfileOpError`'s codes in words (cufile.h's `CUFILEOP_STATUS_ENTRIES`: 5000 + n;
/// its `IS_CUFILE_ERR` takes the absolute value, as here).
fn error_text(err: i32) -> &'static str {
    match err.unsigned_abs() {
        5001 => "the nvidia-fs driver is not loaded (CU_FILE_DRIVER_NOT_INITIALIZED)",
        5002 => "invalid property (CU_FILE_DRIVER_INVALID_PROPS)",
        5003 => "property range error (CU_FILE_DRIVER_UNSUPPORTED_LIMIT)",
        5004 => "nvidia-fs driver version mismatch (CU_FILE_DRIVER_VERSION_MISMATCH)",
        5005 => "nvidia-fs driver version read error (CU_FILE_DRIVER_VERSION_READ_ERROR)",
        5006 => "driver shutdown in progress (CU_FILE_DRIVER_CLOSING)",
        5007 => "GPUDirect Storage not supported on this platform (CU_FILE_PLATFORM_NOT_SUPPORTED)",
        5008 => "GPUDirect Storage not supported on this file (CU_FILE_IO_NOT_SUPPORTED)",
        5009 => "GPUDirect Storage not supported on this GPU (CU_FILE_DEVICE_NOT_SUPPORTED)",
        5010 => "nvidia-fs driver ioctl error (CU_FILE_NVFS_DRIVER_ERROR)",
        5011 => "CUDA driver API error (CU_FILE_CUDA_DRIVER_ERROR: see the CUDA result)",
        _ => "see cufile.h's CUfileOpError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The structs have cufile.h's layout (x86_64): 32 bytes of nvfs, 56 in all.
    #[test]
    fn the_structs_have_cufile_h_s_layout() {
        assert_eq!(std::mem::size_of::<NvfsProps>(), 32);
        assert_eq!(std::mem::offset_of!(NvfsProps, dstatusflags), 24);
        assert_eq!(std::mem::size_of::<DrvProps>(), 56);
        assert_eq!(std::mem::offset_of!(DrvProps, fflags), 32);
        assert_eq!(std::mem::size_of::<CuFileError>(), 8);
    }

    /// A cuFile named that is another machine's library is said as one (the loader's words were
    /// "No such file or directory" of a file that is there), and a directory named as one.
    #[test]
    fn a_named_cufile_that_does_not_load_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let mut other = std::fs::read("/proc/self/exe").unwrap();
        other[18..20].copy_from_slice(&if std::env::consts::ARCH == "aarch64" { 62u16 } else { 183u16 }.to_le_bytes());
        let lib = dir.path().join(SONAME);
        std::fs::write(&lib, other).unwrap();
        let r = probe(Some(&lib));
        assert_eq!(r.state, "not_found", "{r:?}");
        assert!(r.detail.contains("library, not one for this") && !r.detail.contains("No such file"), "{}", r.detail);
        let why = named_not_loading(Some(dir.path())).expect("a directory is no library");
        assert!(why.starts_with("cuFile not loaded from --cufile (") && why.contains("a directory, not a shared library"), "{why}");
        assert_eq!(named_not_loading(Some(Path::new("/bin/true"))).map(|w| w.contains("/bin/true")), Some(true));
    }

    /// A stand-in libcufile built from C here (the props struct as cufile.h declares it, filled
    /// as `CUFILE_STUB` says): the FFI reads what C wrote, and each state is worded.
    #[test]
    fn a_c_built_stand_in_is_read_as_cufile_reports_it() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("stub.c");
        std::fs::write(&src, STUB_C).unwrap();
        let build = |name: &str, defines: &[&str]| {
            let so = dir.path().join(name);
            let mut cc = std::process::Command::new("cc");
            cc.args(["-shared", "-fPIC", "-o"]).arg(&so).arg(&src);
            for d in defines {
                cc.arg(format!("-D{d}"));
            }
            match cc.status() {
                Ok(s) if s.success() => Some(so),
                _ => None,
            }
        };
        let Some(compat) = build("compat.so", &["NVFS_MAJOR=0", "NVFS_MINOR=0", "DSTATUS=0", "DCONTROL=2"]) else {
            eprintln!("SKIPPED: no C compiler (cc) to build the stand-in library");
            return;
        };
        let r = probe(Some(&compat));
        assert_eq!((r.state, r.nvme_direct, r.compat_mode_allowed, r.version), ("compatibility", false, true, Some(1150)), "{r:?}");
        assert!(r.detail.contains("compatibility mode") && r.detail.contains("no nvidia-fs"), "{}", r.detail);
        let gds = build("gds.so", &["NVFS_MAJOR=2", "NVFS_MINOR=17", "DSTATUS=(1<<4)", "DCONTROL=0"]).unwrap();
        let r = probe(Some(&gds));
        assert_eq!((r.state, r.nvme_direct, r.nvmeof_direct, r.nvidia_fs_version.as_deref()), ("direct", true, false, Some("2.17")), "{r:?}");
        assert!(r.detail.contains("directly from NVMe (nvidia-fs 2.17)"), "{}", r.detail);
        let p2p = build("p2p.so", &["NVFS_MAJOR=0", "NVFS_MINOR=0", "DSTATUS=(1<<4)|(1<<5)", "DCONTROL=0"]).unwrap();
        assert!(probe(Some(&p2p)).detail.contains("from NVMe and NVMe-oF (the kernel's P2PDMA: no nvidia-fs)"));
        let closed = build("closed.so", &["NVFS_MAJOR=0", "NVFS_MINOR=0", "DSTATUS=0", "DCONTROL=0", "OPEN_ERR=5001"]).unwrap();
        let r = probe(Some(&closed));
        assert_eq!(r.state, "open_failed");
        assert!(r.detail.contains("cuFile error 5001") && r.detail.contains("the nvidia-fs driver is not loaded"), "{}", r.detail);
        assert!(error_text(-5007).contains("CU_FILE_PLATFORM_NOT_SUPPORTED") && error_text(5011).contains("CUDA driver API error"));
        let r = probe(Some(Path::new("/no/such/libcufile.so.0")));
        assert_eq!(r.state, "not_found");
        assert!(r.detail.contains("install the nvidia-gds package") && r.detail.contains(ENV), "{}", r.detail);
    }

    /// Reads through the stand-in (its "device memory" is host memory): a registered file read
    /// at offsets into a buffer, on past short reads, short at the end of the file; a bad
    /// descriptor refused at registration; a read error worded with cuFile's code.
    #[test]
    fn reads_go_through_cufile_s_handles_into_device_memory() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("stub.c");
        std::fs::write(&src, STUB_C).unwrap();
        let so = dir.path().join("io.so");
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-DNVFS_MAJOR=0", "-DNVFS_MINOR=0", "-DDSTATUS=0", "-DDCONTROL=2", "-DREAD_ERR=20000", "-DWRITE_ERR=30000", "-o"])
            .arg(&so)
            .arg(&src)
            .status();
        if !built.is_ok_and(|s| s.success()) {
            eprintln!("SKIPPED: no C compiler (cc) to build the stand-in library");
            return;
        }
        let cf = Cufile::open(Some(&so)).unwrap_or_else(|r| panic!("{r:?}"));
        assert!(!cf.direct() && cf.report.state == "compatibility", "{:?}", cf.report);
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let path = dir.path().join("data");
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let h = cf.register(std::os::fd::AsRawFd::as_raw_fd(&file)).unwrap();
        let mut memory = vec![0u8; 16384];
        let base = memory.as_mut_ptr() as u64;
        // SAFETY: `memory` is ours, 16 KiB, and nothing else touches it during the reads.
        let n = unsafe { cf.read(h, base, 4096, 8192, 0) }.unwrap();
        assert_eq!(n, 8192, "past the stand-in's 3000-byte reads");
        assert!(memory[4096..4096 + 8192] == data[..8192]);
        // SAFETY: as above.
        let n = unsafe { cf.read(h, base, 0, 4096, 8192) }.unwrap();
        assert_eq!(n, data.len() - 8192, "short at the end of the file");
        assert!(memory[..n] == data[8192..]);
        cf.register_buffer(base, memory.len()).unwrap();
        cf.deregister_buffer(base);
        cf.deregister(h);
        assert!(cf.register(-1).unwrap_err().contains("CU_FILE_IO_NOT_SUPPORTED"));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![1u8; 24_000]).unwrap();
        let big = std::fs::File::open(&big).unwrap();
        let h = cf.register(std::os::fd::AsRawFd::as_raw_fd(&big)).unwrap();
        // SAFETY: as above.
        let e = unsafe { cf.read(h, base, 0, 8192, 16384) }.unwrap_err();
        assert!(e.contains("cuFile error -5011") && e.contains("CUDA driver API error"), "{e}");
        // Writes: device memory to the file, past the stand-in's short writes; a full disk worded.
        let out = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(dir.path().join("out")).unwrap();
        let h = cf.register(std::os::fd::AsRawFd::as_raw_fd(&out)).unwrap();
        // SAFETY: as above (the first 8 KiB of `memory` hold the file's bytes read above).
        let n = unsafe { cf.write(h, base, 0, 8192, 4096) }.unwrap();
        assert_eq!(n, 8192);
        let written = std::fs::read(dir.path().join("out")).unwrap();
        assert!(written[4096..] == memory[..8192] && written[..4096].iter().all(|&b| b == 0));
        // SAFETY: as above.
        let e = unsafe { cf.write(h, base, 0, 8192, 28_000) }.unwrap_err();
        assert!(e.contains("cuFileWrite at byte 31000") && e.contains("No space left"), "{e}");
        cf.deregister(h);
        let r = Cufile::open(Some(Path::new("/no/such/libcufile.so.0"))).err().unwrap();
        assert_eq!(r.state, "not_found");
        // A library that answers the probe but cannot read (an older or other cuFile): refused.
        let probe_only = dir.path().join("probe-only.so");
        assert!(std::process::Command::new("cc").args(["-shared", "-fPIC", "-DNVFS_MAJOR=0", "-DNVFS_MINOR=0", "-DDSTATUS=0", "-DDCONTROL=2", "-DNO_READS", "-o"]).arg(&probe_only).arg(&src).status().unwrap().success());
        let r = Cufile::open(Some(&probe_only)).err().unwrap();
        assert!(r.state == "open_failed" && r.detail.contains("no cuFileHandleRegister"), "{r:?}");
    }

    const STUB_C: &str = r#"
#include <stddef.h>
typedef struct { int err; int cu_err; } CUfileError_t;
typedef struct CUfileDrvProps {
    struct {
        unsigned int major_version;
        unsigned int minor_version;
        size_t poll_thresh_size;
        size_t max_direct_io_size;
        unsigned int dstatusflags;
        unsigned int dcontrolflags;
    } nvfs;
    unsigned int fflags;
    unsigned int max_device_cache_size;
    unsigned int per_buffer_cache_size;
    unsigned int max_device_pinned_mem_size;
    unsigned int max_batch_io_size;
    unsigned int max_batch_io_timeout_msecs;
} CUfileDrvProps_t;
#ifndef OPEN_ERR
#define OPEN_ERR 0
#endif
CUfileError_t cuFileDriverOpen(void) { CUfileError_t e = { OPEN_ERR, 0 }; return e; }
CUfileError_t cuFileDriverClose_v2(void) { CUfileError_t e = { 0, 0 }; return e; }
CUfileError_t cuFileGetVersion(int *v) { CUfileError_t e = { 0, 0 }; *v = 1150; return e; }
/* Reads: a handle is its descriptor + 1; the "device pointer" is host memory here. */
#ifndef NO_READS
#include <unistd.h>
#include <errno.h>
typedef struct { int type; union { int fd; void *handle; } handle; const void *fs_ops; } CUfileDescr_t;
int stub_buffers = 0;
CUfileError_t cuFileHandleRegister(void **fh, CUfileDescr_t *d) {
    CUfileError_t e = { 0, 0 };
    if (d->type != 1 || d->handle.fd < 0) { e.err = 5008; return e; }
    *fh = (void *)(long)(d->handle.fd + 1);
    return e;
}
void cuFileHandleDeregister(void *fh) { (void)fh; }
long cuFileRead(void *fh, void *base, size_t size, long off, long devoff) {
#ifdef READ_ERR
    if (off >= READ_ERR) return -5011;
#endif
    /* At most 3000 bytes a call: the caller must go on after a short read. */
    ssize_t n = pread((int)(long)fh - 1, (char *)base + devoff, size < 3000 ? size : 3000, off);
    return n;
}
long cuFileWrite(void *fh, const void *base, size_t size, long off, long devoff) {
#ifdef WRITE_ERR
    if (off >= WRITE_ERR) { errno = ENOSPC; return -1; }
#endif
    ssize_t n = pwrite((int)(long)fh - 1, (const char *)base + devoff, size < 3000 ? size : 3000, off);
    return n;
}
CUfileError_t cuFileBufRegister(const void *p, size_t n, int flags) { CUfileError_t e = { 0, 0 }; (void)p; (void)n; (void)flags; stub_buffers++; return e; }
CUfileError_t cuFileBufDeregister(const void *p) { CUfileError_t e = { 0, 0 }; (void)p; stub_buffers--; return e; }
#endif
CUfileError_t cuFileDriverGetProperties(CUfileDrvProps_t *p) {
    CUfileError_t e = { 0, 0 };
    p->nvfs.major_version = NVFS_MAJOR;
    p->nvfs.minor_version = NVFS_MINOR;
    p->nvfs.poll_thresh_size = 4;
    p->nvfs.max_direct_io_size = 16384;
    p->nvfs.dstatusflags = DSTATUS;
    p->nvfs.dcontrolflags = DCONTROL;
    p->fflags = 0xf;
    p->max_batch_io_timeout_msecs = 5;
    return e;
}
"#;
}
