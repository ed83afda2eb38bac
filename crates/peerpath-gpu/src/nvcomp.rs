//! nvCOMP's batched gzip compressor and decompressor and its batched
//! CRC-32, loaded at run time (no Rust crate
//! exposes nvCOMP: this is the handful of C functions peerpath calls, as
//! declared by nvCOMP 6's headers; docs/gpu-nvcomp.md has them verbatim).

use std::ffi::{c_char, c_void, CStr};
use std::path::{Path, PathBuf};

/// `nvcompBatchedGzipCompressOpts_t` (64 bytes): `algorithm` 0 (entropy
/// coding only, fastest) to 5 (best ratio); the rest must be zero.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CompressOpts {
    pub algorithm: i32,
    reserved: [u8; 60],
}

impl CompressOpts {
    pub fn new(algorithm: i32) -> CompressOpts {
        CompressOpts { algorithm, reserved: [0; 60] }
    }
}

/// `nvcompBatchedGzipDecompressOpts_t` (64 bytes): backend 0 (nvCOMP
/// chooses; the H100 has no decompression engine), algorithm 0 (naive:
/// measured 5-15x faster than lookahead on the lent H100); the rest zero.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct DecompressOpts {
    backend: i32,
    algorithm: i32,
    sort_before_hw_decompress: i32,
    reserved: [u8; 52],
}

impl DecompressOpts {
    pub fn naive() -> DecompressOpts {
        DecompressOpts { backend: 0, algorithm: 0, sort_before_hw_decompress: 0, reserved: [0; 52] }
    }
}

/// `nvcompCRC32Spec_t` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct Crc32Spec {
    poly: u32,
    init: u32,
    ref_in: bool,
    ref_out: bool,
    xorout: u32,
    reserved: [u8; 16],
}

/// `nvcompCRC32KernelConf_t` (32 bytes): chosen by `nvcompBatchedCRC32GetHeuristicConf`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Crc32KernelConf {
    kernel_kind: i32,
    bytes_per_read: i32,
    blocks_per_msg: i32,
    reserved: [u8; 20],
}

/// `nvcompBatchedCRC32Opts_t` (128 bytes): gzip's CRC-32 (`nvcompCRC32`) and a kernel configuration.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Crc32Opts {
    spec: Crc32Spec,
    kernel_conf: Crc32KernelConf,
    reserved: [u8; 64],
}

impl Crc32Opts {
    /// gzip's (PKZIP's) CRC-32, as nvCOMP's `nvcompCRC32` constant.
    pub fn gzip(kernel_conf: Crc32KernelConf) -> Crc32Opts {
        Crc32Opts { spec: Crc32Spec { poly: 0x04C1_1DB7, init: 0xFFFF_FFFF, ref_in: true, ref_out: true, xorout: 0xFFFF_FFFF, reserved: [0; 16] }, kernel_conf, reserved: [0; 64] }
    }
}

/// `nvcompCRC32OnlySegment`: each chunk is a whole message.
const CRC32_ONLY_SEGMENT: i32 = 0;

#[repr(C)]
#[derive(Default)]
struct Properties {
    version: u32,
    cudart_version: u32,
}

/// `nvcompStatus_t`.
pub type Status = i32;
/// `cudaStream_t`, which is the driver API's `CUstream`.
pub type Stream = *mut c_void;

type GetProperties = unsafe extern "C" fn(*mut Properties) -> Status;
type StatusString = unsafe extern "C" fn(Status) -> *const c_char;
type CompressTempSize = unsafe extern "C" fn(usize, usize, CompressOpts, *mut usize, usize, Stream) -> Status;
type MaxOutputChunkSize = unsafe extern "C" fn(usize, CompressOpts, *mut usize) -> Status;
type CompressAsync = unsafe extern "C" fn(
    *const *const c_void,
    *const usize,
    usize,
    usize,
    *mut c_void,
    usize,
    *const *mut c_void,
    *mut usize,
    CompressOpts,
    *mut Status,
    Stream,
) -> Status;

type DecompressTempSize = unsafe extern "C" fn(usize, usize, DecompressOpts, *mut usize, usize, Stream) -> Status;
type DecompressAsync = unsafe extern "C" fn(
    *const *const c_void,
    *const usize,
    *const usize,
    *mut usize,
    usize,
    *mut c_void,
    usize,
    *const *mut c_void,
    DecompressOpts,
    *mut Status,
    Stream,
) -> Status;
type Crc32HeuristicConf = unsafe extern "C" fn(*const usize, usize, *mut Crc32KernelConf, usize, Stream) -> Status;
type Crc32Async = unsafe extern "C" fn(*const *const c_void, *const usize, usize, *mut u32, Crc32Opts, i32, *mut Status, Stream) -> Status;

/// The library, where it was found, and its functions.
pub struct Nvcomp {
    pub path: PathBuf,
    /// nvCOMP's version (e.g. 6000) and the CUDA runtime it was built with (e.g. 13040).
    pub version: u32,
    pub cudart_version: u32,
    status_string: StatusString,
    pub(crate) compress_temp_size: CompressTempSize,
    pub(crate) max_output_chunk_size: MaxOutputChunkSize,
    pub(crate) compress_async: CompressAsync,
    decompress_temp_size: DecompressTempSize,
    pub(crate) decompress_async: DecompressAsync,
    crc32_heuristic_conf: Crc32HeuristicConf,
    crc32_async: Crc32Async,
    // Last: the functions above point into it.
    _lib: libloading::Library,
}

/// Where nvCOMP is looked for, in order.
const ENV: &str = "PEERPATH_NVCOMP";
const SONAME: &str = "libnvcomp.so.6";

impl Nvcomp {
    /// Loads nvCOMP from `explicit` (or `$PEERPATH_NVCOMP`), else by its
    /// soname from the loader's path, else from a Python installation of
    /// the `nvidia-libnvcomp-cu13` (or -cu12) wheel. The error says what
    /// was tried and how to install it.
    pub fn load(explicit: Option<&Path>) -> Result<Nvcomp, String> {
        let from_env = std::env::var_os(ENV).map(PathBuf::from);
        // A library named (--nvcomp, or $PEERPATH_NVCOMP) is the only one tried: said as itself.
        let named = match (explicit, &from_env) {
            (Some(p), _) => Some((p.to_path_buf(), "--nvcomp")),
            (None, Some(p)) => Some((p.clone(), "$PEERPATH_NVCOMP")),
            (None, None) => None,
        };
        if let Some((path, how)) = named {
            return match crate::open_library(&path) {
                Ok(lib) => Self::resolve(lib, path),
                Err(why) => Err(format!("nvCOMP not loaded from {how} ({why}): name nvCOMP 6's {SONAME} (pip install nvidia-libnvcomp-cu13 puts it in site-packages/nvidia/libnvcomp/lib64), or leave {how} out to look for it")),
            };
        }
        let mut tried = Vec::new();
        for path in std::iter::once(PathBuf::from(SONAME)).chain(python_candidates()) {
            match crate::open_library(&path) {
                Ok(lib) => return Self::resolve(lib, path),
                Err(why) => tried.push(why),
            }
        }
        Err(format!(
            "nvCOMP not found (tried {}): pip install nvidia-libnvcomp-cu13, or set {ENV}=/path/to/{SONAME}",
            tried.join("; ")
        ))
    }

    fn resolve(lib: libloading::Library, path: PathBuf) -> Result<Nvcomp, String> {
        let missing = |name: &str, e: libloading::Error| format!("{}: not nvCOMP 6 (no {name}: {e}): name nvCOMP 6's {SONAME} (pip install nvidia-libnvcomp-cu13)", path.display());
        macro_rules! get {
            ($t:ty, $name:literal) => {
                // SAFETY: the symbol is nvCOMP 6's function of that name, whose
                // C signature `$t` mirrors (docs/gpu-nvcomp.md); the library
                // stays loaded as long as the struct that keeps the pointer.
                *unsafe { lib.get::<$t>(concat!($name, "\0").as_bytes()) }.map_err(|e| missing($name, e))?
            };
        }
        let get_properties = get!(GetProperties, "nvcompGetProperties");
        let status_string = get!(StatusString, "nvcompGetStatusString");
        let compress_temp_size = get!(CompressTempSize, "nvcompBatchedGzipCompressGetTempSize");
        let max_output_chunk_size = get!(MaxOutputChunkSize, "nvcompBatchedGzipCompressGetMaxOutputChunkSize");
        let compress_async = get!(CompressAsync, "nvcompBatchedGzipCompressAsync");
        let decompress_temp_size = get!(DecompressTempSize, "nvcompBatchedGzipDecompressGetTempSize");
        let decompress_async = get!(DecompressAsync, "nvcompBatchedGzipDecompressAsync");
        let crc32_heuristic_conf = get!(Crc32HeuristicConf, "nvcompBatchedCRC32GetHeuristicConf");
        let crc32_async = get!(Crc32Async, "nvcompBatchedCRC32Async");
        let mut props = Properties::default();
        // SAFETY: writes one Properties struct (8 bytes) we own; host only.
        let st = unsafe { get_properties(&mut props) };
        let n = Nvcomp {
            path,
            version: props.version,
            cudart_version: props.cudart_version,
            status_string,
            compress_temp_size,
            max_output_chunk_size,
            compress_async,
            decompress_temp_size,
            decompress_async,
            crc32_heuristic_conf,
            crc32_async,
            _lib: lib,
        };
        if st != 0 {
            return Err(format!("{}: nvcompGetProperties failed: {}", n.path.display(), n.describe(st)));
        }
        Ok(n)
    }

    /// A status in words.
    pub fn describe(&self, status: Status) -> String {
        // SAFETY: nvCOMP returns a static C string (or null) for any status value.
        let text = unsafe { (self.status_string)(status) };
        let text = if text.is_null() {
            "unknown".into()
        } else {
            // SAFETY: non-null, NUL-terminated and static (nvCOMP's table of messages).
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        format!("nvCOMP status {status} ({text})")
    }

    /// The largest compressed member of a chunk of `chunk_bytes`.
    pub fn max_output_chunk_bytes(&self, chunk_bytes: usize, opts: CompressOpts) -> Result<usize, String> {
        let mut n = 0usize;
        // SAFETY: a host-only query writing one size_t we own.
        let st = unsafe { (self.max_output_chunk_size)(chunk_bytes, opts, &mut n) };
        if st != 0 {
            return Err(format!("nvcompBatchedGzipCompressGetMaxOutputChunkSize: {}", self.describe(st)));
        }
        Ok(n)
    }

    /// Device scratch memory a compression of `chunks` chunks needs.
    pub fn compress_temp_bytes(&self, chunks: usize, chunk_bytes: usize, total_bytes: usize, opts: CompressOpts) -> Result<usize, String> {
        let mut n = 0usize;
        // SAFETY: a query writing one size_t we own; a null stream is the default stream.
        let st = unsafe { (self.compress_temp_size)(chunks, chunk_bytes, opts, &mut n, total_bytes, std::ptr::null_mut()) };
        if st != 0 {
            return Err(format!("nvcompBatchedGzipCompressGetTempSize: {}", self.describe(st)));
        }
        Ok(n)
    }
}

impl Nvcomp {
    /// Device scratch a decompression of `chunks` members needs (0 for the naive algorithm, measured).
    pub fn decompress_temp_bytes(&self, chunks: usize, max_out: usize, total_out: usize, opts: DecompressOpts) -> Result<usize, String> {
        let mut n = 0usize;
        // SAFETY: a query writing one size_t we own; a null stream is the default stream.
        let st = unsafe { (self.decompress_temp_size)(chunks, max_out, opts, &mut n, total_out, std::ptr::null_mut()) };
        if st != 0 {
            return Err(format!("nvcompBatchedGzipDecompressGetTempSize: {}", self.describe(st)));
        }
        Ok(n)
    }

    /// The CRC-32 kernel configuration nvCOMP's heuristic picks for
    /// `chunks` messages of at most `max_bytes` (host-synchronous; needs a GPU).
    pub fn crc32_conf(&self, chunks: usize, max_bytes: usize) -> Result<Crc32KernelConf, String> {
        let mut conf = Crc32KernelConf::default();
        // SAFETY: with the maximum given, nvCOMP reads no device array (null)
        // and writes one configuration struct we own.
        let st = unsafe { (self.crc32_heuristic_conf)(std::ptr::null(), chunks, &mut conf, max_bytes.max(1), std::ptr::null_mut()) };
        if st != 0 {
            return Err(format!("nvcompBatchedCRC32GetHeuristicConf: {}", self.describe(st)));
        }
        Ok(conf)
    }

    /// Queues the CRC-32 of `chunks` messages on `stream`.
    ///
    /// # Safety
    /// `ptrs` and `sizes` are device arrays of `chunks` entries naming device
    /// memory, `crcs` a device array of `chunks` u32, `statuses` one of
    /// `chunks` statuses; all outlive the stream's work.
    #[allow(clippy::too_many_arguments)] // nvcompBatchedCRC32Async's own arguments
    pub(crate) unsafe fn crc32_async(&self, ptrs: u64, sizes: u64, chunks: usize, crcs: u64, opts: Crc32Opts, statuses: u64, stream: Stream) -> Status {
        // SAFETY: as the caller promises.
        unsafe { (self.crc32_async)(ptrs as usize as *const *const c_void, sizes as usize as *const usize, chunks, crcs as usize as *mut u32, opts, CRC32_ONLY_SEGMENT, statuses as usize as *mut Status, stream) }
    }
}

/// Python installations of the nvCOMP wheel (see [`python_candidates_from`]).
fn python_candidates() -> Vec<PathBuf> {
    python_candidates_from(|name| std::env::var_os(name))
}

/// Where pip puts nvCOMP's wheel (`nvidia-libnvcomp-cu12` or `-cu13`:
/// `nvidia/libnvcomp/lib64`, or `lib`) under every Python's
/// `site-packages` or `dist-packages`: the active virtual environment's
/// (`$VIRTUAL_ENV`), conda's (`$CONDA_PREFIX`), pyenv's versions
/// (`$PYENV_ROOT`, else `~/.pyenv`), the user's (`~/.local/lib`) and the
/// system's (`/usr/local/lib`, `/usr/lib`, `/usr/lib64`), in that order;
/// `env` reads the environment.
fn python_candidates_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = env(var).filter(|p| !p.is_empty()) {
            roots.push(Path::new(&prefix).join("lib"));
        }
    }
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let pyenv = env("PYENV_ROOT").filter(|p| !p.is_empty()).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    if let Some(versions) = pyenv.map(|p| p.join("versions")).and_then(|v| std::fs::read_dir(v).ok()) {
        let mut each: Vec<PathBuf> = versions.flatten().map(|e| e.path()).collect();
        newest_first(&mut each);
        roots.extend(each.into_iter().map(|v| v.join("lib")));
    }
    roots.extend(home.map(|h| h.join(".local/lib")));
    roots.extend(["/usr/local/lib", "/usr/lib", "/usr/lib64"].map(PathBuf::from));
    let mut found = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        let mut pythons: Vec<PathBuf> = entries.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("python3")).map(|e| e.path()).collect();
        newest_first(&mut pythons);
        for python in pythons {
            for packages in ["site-packages", "dist-packages"] {
                for lib in ["lib64", "lib"] {
                    let p = python.join(packages).join("nvidia/libnvcomp").join(lib).join(SONAME);
                    if p.exists() && !found.contains(&p) {
                        found.push(p);
                    }
                }
            }
        }
    }
    found
}

/// Sorts `python3.9`, `python3.12`, `3.10.4`, ... by their numbers, newest first (as text,
/// 3.10 would come before 3.9).
pub(crate) fn newest_first(paths: &mut [PathBuf]) {
    let numbers = |p: &PathBuf| -> Vec<u64> {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect()
    };
    paths.sort_by(|a, b| numbers(b).cmp(&numbers(a)).then_with(|| a.cmp(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_structs_have_nvcomp_s_sizes() {
        assert_eq!(std::mem::size_of::<CompressOpts>(), 64);
        assert_eq!(std::mem::size_of::<DecompressOpts>(), 64);
        assert_eq!(std::mem::size_of::<Crc32Spec>(), 32);
        assert_eq!(std::mem::offset_of!(Crc32Spec, xorout), 12);
        assert_eq!(std::mem::size_of::<Crc32KernelConf>(), 32);
        assert_eq!(std::mem::size_of::<Crc32Opts>(), 128);
        assert_eq!(std::mem::offset_of!(Crc32Opts, kernel_conf), 32);
        assert_eq!(std::mem::size_of::<Properties>(), 8);
    }

    /// With nvCOMP's library at hand (`PEERPATH_NVCOMP_TEST=/path/to/libnvcomp.so.6`; the
    /// host-side queries need no GPU): it loads and answers as its headers say.
    #[test]
    fn nvcomp_loads_and_answers_host_queries_where_it_is_given() {
        let Some(path) = std::env::var_os("PEERPATH_NVCOMP_TEST") else {
            eprintln!("SKIPPED: set PEERPATH_NVCOMP_TEST to a libnvcomp.so.6 to run this test");
            return;
        };
        let nv = Nvcomp::load(Some(Path::new(&path))).expect("loads");
        assert!(nv.version >= 6000, "nvCOMP 6 or later: {}", nv.version);
        let out = nv.max_output_chunk_bytes(1 << 20, CompressOpts::new(1)).expect("max output");
        assert!(out > 1 << 20 && out < 3 << 20, "a 1 MiB chunk's bound: {out}");
        assert!(nv.describe(11).contains("11"), "{}", nv.describe(11));
    }

    /// The wheel is found in a virtual environment, conda, pyenv and the
    /// user's site-packages, in that order, under lib64 or lib.
    #[test]
    fn pip_s_wheel_is_found_wherever_python_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let put = |at: &str| {
            let p = d.join(at).join(SONAME);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"").unwrap();
            p
        };
        let venv = put("venv/lib/python3.12/site-packages/nvidia/libnvcomp/lib64");
        let conda = put("conda/lib/python3.11/site-packages/nvidia/libnvcomp/lib");
        let pyenv = put("home/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/libnvcomp/lib64");
        let user = put("home/.local/lib/python3.12/site-packages/nvidia/libnvcomp/lib64");
        put("home/.local/lib/python2.7/site-packages/nvidia/libnvcomp/lib64");
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| d.join(v).into_os_string())
        };
        let found = python_candidates_from(env(&[("VIRTUAL_ENV", "venv"), ("CONDA_PREFIX", "conda"), ("HOME", "home")]));
        assert_eq!(found.iter().filter(|p| p.starts_with(d)).collect::<Vec<_>>(), [&venv, &conda, &pyenv, &user]);
        let found = python_candidates_from(env(&[("HOME", "home"), ("PYENV_ROOT", "nowhere")]));
        assert_eq!(found.iter().filter(|p| p.starts_with(d)).collect::<Vec<_>>(), [&user], "pyenv's root as set, no environment");
        // Newer Pythons first, by number: 3.10 before 3.9 (as text it would be after), pyenv's too.
        let old = put("home/.local/lib/python3.9/site-packages/nvidia/libnvcomp/lib64");
        let new = put("home/.local/lib/python3.10/site-packages/nvidia/libnvcomp/lib64");
        let pyenv_new = put("home/.pyenv/versions/3.11.10/lib/python3.11/site-packages/nvidia/libnvcomp/lib64");
        let found = python_candidates_from(env(&[("HOME", "home")]));
        assert_eq!(found.iter().filter(|p| p.starts_with(d)).collect::<Vec<_>>(), [&pyenv_new, &pyenv, &user, &new, &old]);
    }

    #[test]
    fn a_missing_library_is_a_clear_error() {
        let e = Nvcomp::load(Some(Path::new("/no/such/libnvcomp.so.6"))).err().expect("not there");
        assert!(e.contains("nvCOMP not loaded from --nvcomp (/no/such/libnvcomp.so.6: No such file") && e.contains("pip install nvidia-libnvcomp-cu13"), "{e}");
    }
}
