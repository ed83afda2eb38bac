//! What NVIDIA's cuFile (GPUDirect Storage's library) says about this machine: whether its
//! driver opens, and whether it moves NVMe data straight into GPU memory or runs in
//! "compatibility mode" (POSIX reads into host memory, then a copy), which is what peerpath's
//! GPU device does anyway. peerpath does not read or write through cuFile yet; `gpu probe`
//! reports this so a user knows whether a direct path exists to be had.
//!
//! cuFile is loaded at run time (a handful of C functions; no maintained Rust binding exposes
//! them), from `$PEERPATH_CUFILE`, the loader's path (`libcufile.so.0`), or a CUDA installation's
//! `lib64`. The struct below mirrors `CUfileDrvProps_t` of `cufile.h` (GDS 1.x, CUDA 11.4-13).

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
    let mut tried = Vec::new();
    for path in candidates(explicit) {
        // SAFETY: loading a shared library runs its initialisers; cuFile's set up its own state
        // (it loads libcuda itself when its driver is opened).
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => {
                let report = probe_library(&lib, path.display().to_string());
                // Kept loaded for the life of the process: its driver may leave threads behind
                // after closing, and unloading code they run would crash the process.
                std::mem::forget(lib);
                return report;
            }
            Err(e) => tried.push(format!("{}: {e}", path.display())),
        }
    }
    CufileReport::not_found(&tried)
}

fn probe_library(lib: &libloading::Library, library: String) -> CufileReport {
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
    if let Some(close) = close {
        // SAFETY: closes the driver opened above; nothing of it is used after.
        unsafe { close() };
    }
    if st.err != 0 {
        return failed(format!("cuFileDriverGetProperties failed (cuFile error {}): {}", st.err, error_text(st.err)));
    }
    CufileReport::from_props(library, version, &p)
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
