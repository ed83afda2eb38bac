//! The GPU as a compute peer (issue 17). CUDA's driver is reached through
//! `cudarc` and nvCOMP through a small FFI, both loaded at run time: the
//! project builds, tests and runs on machines without either, and says why
//! the GPU cannot be used ([`Gpu::open`], [`Nvcomp::load`]).
//!
//! - [`GpuDevice`]: the GPU as a `Device` the compress job's executor
//!   drives (nvCOMP's batched gzip compressor; GPU memory beside a pinned
//!   host window storage DMAs into), and that runs peerpath's own kernels,
//!   each tested on the host against its CPU oracle: Reed-Solomon and CRC-32
//!   (`kernels.rs`), AES-256-GCM (`crypt.rs`), FastCDC and BLAKE3
//!   (`dedup.rs`), record scanning against a motif's DFA (`scan.rs`).
//! - [`Inflater`]: batches of gzip members decoded and their CRC-32 checked
//!   on the GPU, for `decompress`/`verify --engine gpu`.
//! - [`probe`]: nvCOMP's compressor on real data in GPU memory, every member
//!   checked on the CPU oracle (`peerpath gpu probe`).
//!
//! docs/gpu-nvcomp.md has the interfaces and what was measured.

pub mod cufile;
mod crypt;
mod dedup;
mod device;
mod inflate;
mod kernels;
mod mapped;
mod memfile;
/// Where `--gpu-memory-files mapped` maps and pins a file a granule at a time: the granule's default.
pub use memfile::GRANULE_BYTES as MAP_GRANULE_BYTES;
mod nvcomp;
pub mod scan;

pub use device::{Gather, GpuDevice, GpuDeviceConfig, GpuIo, Staging, DEFAULT_COMMAND_TIMEOUT};
pub use inflate::{Inflater, Member};
pub use mapped::{probe_mapped, MappedProbe};
pub use nvcomp::{CompressOpts, Nvcomp};

/// nvCOMP's batched gzip algorithm for a compression level (`--level`, 0
/// to 12, as the CPU's ISA-L and libdeflate take it): 0 (the CPU's fastest)
/// gives algorithm 0 (entropy coding only, the fastest: 82-84 GB/s of
/// kernel on the H100 and H200, ratio 1.69-1.80 on protein FASTA); 1 and
/// above give algorithm 2, the smallest output of the six measured (ratio
/// 1.95-1.99, against ISA-L level 1's 1.89-1.93 on the same data, so the
/// default level is no larger than `igzip -1`), at 6.8-11.4 GB/s of kernel
/// (algorithm 1: 8.7-11.4, ratio 1.87-1.91), while 4 and 5 were slower and larger (1.85;
/// `bench/results/2026-11-26-gpu-machine-*`, `2026-11-29-gpu-machine-3`).
/// nvCOMP has no setting that trades more time for a smaller output on
/// this data, so levels past 1 change nothing on a GPU (the report names
/// the algorithm; `--gpu-algorithm` chooses one outright).
pub fn algorithm_for_level(level: u32) -> i32 {
    if level == 0 {
        0
    } else {
        2
    }
}

use cudarc::driver::{sys, CudaContext, CudaStream, DevicePtr, DevicePtrMut};
use serde::Serialize;
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Makes `ctx` current on this thread with the driver's own call. cudarc's `bind_to_thread`
/// first hands back (and clears) an error that any thread's drop recorded in the context, and
/// then does not make it current: a drop that unpins, or a wait for copies into a file, must
/// not skip its work for an error that is another's.
pub(crate) fn make_current(ctx: &CudaContext) -> Result<(), String> {
    // SAFETY: `ctx` holds the context alive.
    unsafe { sys::cuCtxSetCurrent(ctx.cu_ctx()) }.result().map_err(|e| format!("CUDA: {e}"))
}

/// How a wait for the GPU ended, where it did not end done.
#[derive(Debug, PartialEq)]
pub(crate) enum Waited {
    /// The query failed (a CUDA error).
    Failed(String),
    /// Not done after this long.
    Hung(Duration),
}

/// Waits until `done` (a query of the GPU: an event's) says the work is
/// complete, or `timeout` has passed. Polled rather than blocked on (CUDA's
/// synchronisation has no deadline): spinning for the first 50 us (a batch
/// about to end), then sleeping from 20 us up to 200 us between queries,
/// which delays a batch of tens of milliseconds by under 1 %.
pub(crate) fn wait_until_done(mut done: impl FnMut() -> Result<bool, String>, timeout: Duration) -> Result<(), Waited> {
    let started = Instant::now();
    let mut nap = Duration::from_micros(20);
    loop {
        if done().map_err(Waited::Failed)? {
            return Ok(());
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return Err(Waited::Hung(waited));
        }
        if waited < Duration::from_micros(50) {
            std::hint::spin_loop();
        } else {
            std::thread::sleep(nap.min(timeout - waited));
            nap = (nap * 2).min(Duration::from_micros(200));
        }
    }
}

/// An opened GPU: its context (the device's primary context) and a stream.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub info: GpuInfo,
}

#[derive(Clone, Debug, Serialize)]
pub struct GpuInfo {
    pub ordinal: usize,
    pub name: String,
    pub memory_bytes: usize,
    /// CUDA driver version, e.g. 13000.
    pub driver_version: i32,
    pub compute_capability: (i32, i32),
    /// Its PCI address (`0000:00:06.0`), as the topology names it.
    pub pci_address: String,
    /// Whether host threads sleep while they wait for it (else they spin).
    pub blocking_sync: bool,
}

impl Gpu {
    /// Opens GPU `ordinal`, or says why it cannot (no driver, no device).
    pub fn open(ordinal: usize) -> Result<Gpu, String> {
        driver_loads()?;
        // Threads waiting for the GPU sleep instead of spinning (the driver's
        // default spins where there are more cores than GPUs: on the lent
        // machine a waiting worker thread burned a core, 1.4 cores per GB/s).
        // Set before the primary context is retained; best effort (a context
        // already active with other flags keeps them, said in `info`).
        // SAFETY: driver initialisation, a device handle written into a
        // local, and the primary context's flags; no memory is shared.
        let blocking_sync = unsafe {
            let mut dev = 0;
            sys::cuInit(0).result().is_ok()
                && sys::cuDeviceGet(&mut dev, ordinal as i32).result().is_ok()
                && sys::cuDevicePrimaryCtxSetFlags_v2(dev, sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC as u32).result().is_ok()
        };
        let ctx = CudaContext::new(ordinal).map_err(|e| format!("CUDA cannot open GPU {ordinal}: {e}"))?;
        let stream = ctx.new_stream().map_err(|e| format!("CUDA stream: {e}"))?;
        let name = ctx.name().map_err(|e| e.to_string())?;
        let mut driver_version = 0i32;
        // SAFETY: writes one int we own.
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result().map_err(|e| e.to_string())?;
        let mut memory_bytes = 0usize;
        // SAFETY: writes one size_t we own; the context was made current by CudaContext::new.
        unsafe { sys::cuDeviceTotalMem_v2(&mut memory_bytes, ctx.cu_device()) }.result().map_err(|e| e.to_string())?;
        let attr = |a| ctx.attribute(a).map_err(|e| e.to_string());
        let compute_capability = (
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        let pci_address = format!(
            "{:04x}:{:02x}:{:02x}.0",
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        Ok(Gpu { ctx, stream, info: GpuInfo { ordinal, name, memory_bytes, driver_version, compute_capability, pci_address, blocking_sync } })
    }
}

/// Whether CUDA's driver library is there and has every function cudarc binds. cudarc's loader
/// panics on a library of that name that lacks one (another library named libcuda.so.1, a
/// driver older than CUDA 13): that panic is caught, kept off standard error (a hook installed
/// once passes every other thread's panics, and this one's outside the check, to the one
/// before it), and said as the reason.
fn driver_loads() -> Result<(), String> {
    // Checked once: cudarc keeps the library it loaded (or its failure) for the process, and a
    // second check could find it poisoned, or another panic hook set since.
    static CHECKED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    CHECKED.get_or_init(check_driver).clone()
}

fn check_driver() -> Result<(), String> {
    thread_local!(static CHECKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CHECKING.get() {
                previous(info)
            }
        }));
    });
    CHECKING.set(true);
    // SAFETY: only loads libcuda and looks its functions up (cudarc's loader); no call into it.
    let present = std::panic::catch_unwind(|| unsafe { sys::is_culib_present() });
    CHECKING.set(false);
    match present {
        Ok(true) => Ok(()),
        Ok(false) => Err("no CUDA driver: libcuda.so.1 is not installed or not on the loader's path: install NVIDIA's GPU driver (580 or later, for CUDA 13), or add the directory that holds its libcuda.so.1 to LD_LIBRARY_PATH".into()),
        Err(panic) => {
            let why = panic.downcast_ref::<String>().map(String::as_str).or_else(|| panic.downcast_ref::<&str>().copied()).unwrap_or("a function is missing");
            Err(format!("CUDA's driver library is not usable ({why}): not NVIDIA's driver, or one older than CUDA 13: install NVIDIA's GPU driver 580 or later"))
        }
    }
}

/// The GPU opened and nvCOMP loaded where it was asked (`nv`: `Ok(None)` where not), or every
/// problem found, joined by "; and" as `gpu probe` says them: nvCOMP is loaded even where the
/// GPU cannot open (loading it needs none), so a wrong `--nvcomp` or `$PEERPATH_NVCOMP` is not
/// hidden behind "no CUDA driver"; where cuFile is asked (`cufile`: its library as [`GpuIo`]
/// names it) one named that does not load is said too, as it is never reached.
pub fn gpu_and_nvcomp(gpu: Result<Gpu, String>, nv: Result<Option<Nvcomp>, String>, cufile: Option<Option<&Path>>) -> Result<(Gpu, Option<Nvcomp>), String> {
    match (gpu, nv) {
        (Ok(gpu), Ok(nv)) => Ok((gpu, nv)),
        (gpu, nv) => Err([gpu.err(), nv.err(), cufile.and_then(cufile::named_not_loading)].into_iter().flatten().collect::<Vec<_>>().join("; and ")),
    }
}

/// Opens the shared library `path` (a bare name is looked for on the loader's path), or says
/// why not in words of the file itself where the loader's are unclear: a missing file, a
/// directory, no ELF header (text), a library for another machine (the loader says "No such
/// file or directory" of one that is there), and an empty name (the loader gives the program
/// itself).
pub fn open_library(path: &Path) -> Result<libloading::Library, String> {
    if path.as_os_str().is_empty() {
        return Err("an empty name is no library".into());
    }
    // SAFETY: loading a shared library runs its initialisers; the libraries named for peerpath
    // (nvCOMP, cuFile) only set up their own state.
    let loader = match unsafe { libloading::Library::new(path) } {
        Ok(lib) => return Ok(lib),
        Err(e) => e.to_string(),
    };
    let shown = path.display();
    if !std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).contains(&b'/') {
        return Err(loader);
    }
    let mut head = [0u8; 20];
    let read = std::fs::File::open(path).and_then(|f| std::io::Read::read(&mut std::io::Read::take(f, 20), &mut head));
    match (std::fs::metadata(path), read) {
        (Err(e), _) => Err(format!("{shown}: {e}")),
        (Ok(m), _) if m.is_dir() => Err(format!("{shown}: a directory, not a shared library: name the library file in it")),
        (_, Err(e)) => Err(format!("{shown}: {e}")),
        (_, Ok(n)) if n < head.len() || !head.starts_with(b"\x7fELF") => Err(format!("{shown}: not a shared library (no ELF header: text, or other data)")),
        _ => {
            let machine = if head[5] == 2 { u16::from_be_bytes([head[18], head[19]]) } else { u16::from_le_bytes([head[18], head[19]]) };
            let bits = if head[4] == 1 { 32 } else { 64 };
            let name = match machine {
                3 => "x86",
                62 => "x86_64",
                40 => "arm",
                183 => "aarch64",
                21 => "powerpc64",
                243 if head[4] == 2 => "riscv64",
                243 => "riscv32",
                _ => "",
            };
            let here = std::env::consts::ARCH;
            if name != here || bits != usize::BITS {
                let name = if name.is_empty() { format!("ELF machine {machine}") } else { name.to_string() };
                Err(format!("{shown}: a {bits}-bit {name} library, not one for this {}-bit {here} machine", usize::BITS))
            } else {
                Err(loader)
            }
        }
    }
}

/// What one compression of the probe measured.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeRun {
    pub algorithm: i32,
    pub chunks: usize,
    pub input_bytes: usize,
    pub output_bytes: usize,
    pub ratio: f64,
    /// From the launch to the stream's completion (host clock), best of the runs.
    pub kernel_s: f64,
    pub kernel_gb_per_s: f64,
    /// Members rewrapped with peerpath's header and decoded by the CPU oracle
    /// to exactly their chunk (CRC-32 and length checked).
    pub members_verified: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    /// Every figure here is measured on this machine's GPU.
    pub provenance: &'static str,
    pub gpu: GpuInfo,
    pub nvcomp_path: String,
    pub nvcomp_version: u32,
    pub nvcomp_cudart_version: u32,
    pub chunk_bytes: usize,
    /// Host -> GPU copy of the input (pageable memory), GB/s.
    pub h2d_gb_per_s: f64,
    pub runs: Vec<ProbeRun>,
    /// What cuFile (GPUDirect Storage) says: a direct path from storage, or compatibility mode.
    pub cufile: cufile::CufileReport,
    /// Copies between GPU memory and registered mappings of files in a directory (`--mapped-at`).
    pub mapped: Option<MappedProbe>,
}

/// Compresses `data` in chunks of `chunk_bytes` with nvCOMP's batched gzip
/// compressor on the GPU, once per algorithm (best of `repeat` timed runs),
/// copies the members back and checks each on the CPU: rewrapped as
/// peerpath members (the 'PP' size subfield), they decode to exactly their
/// chunk. Any mismatch is an error.
#[allow(clippy::too_many_arguments)]
pub fn probe(gpu: &Gpu, nv: &Nvcomp, data: &[u8], chunk_bytes: usize, algorithms: &[i32], repeat: usize, cufile_at: Option<&std::path::Path>, mapped_at: Option<&std::path::Path>) -> Result<ProbeReport, String> {
    let cuda = |what: &str, e: cudarc::driver::DriverError| format!("CUDA {what}: {e}");
    let stream = &gpu.stream;
    gpu.ctx.bind_to_thread().map_err(|e| cuda("bind", e))?;
    let chunks = data.len().div_ceil(chunk_bytes).max(1);
    let padded = chunks * chunk_bytes;
    // SAFETY: device memory of `padded` bytes; fully written by the copy below before use.
    let mut d_in = unsafe { stream.alloc::<u8>(padded) }.map_err(|e| cuda("alloc", e))?;
    let t = Instant::now();
    stream.memcpy_htod(data, &mut d_in).map_err(|e| cuda("copy in", e))?;
    stream.synchronize().map_err(|e| cuda("sync", e))?;
    let h2d_gb_per_s = data.len() as f64 / t.elapsed().as_secs_f64().max(1e-9) / 1e9;
    let sizes: Vec<usize> = (0..chunks).map(|i| chunk_bytes.min(data.len() - (i * chunk_bytes).min(data.len()))).collect();
    let mut runs = Vec::new();
    for &algorithm in algorithms {
        let opts = CompressOpts::new(algorithm);
        // Output slots at multiples of 8 bytes (nvCOMP's compression alignment).
        let slot = nv.max_output_chunk_bytes(chunk_bytes, opts)?.next_multiple_of(8);
        let temp_bytes = nv.compress_temp_bytes(chunks, chunk_bytes, data.len(), opts)?;
        // SAFETY: output slots nvCOMP writes before anything reads them.
        let mut d_out = unsafe { stream.alloc::<u8>(chunks * slot) }.map_err(|e| cuda("alloc", e))?;
        // SAFETY: nvCOMP's scratch memory: only nvCOMP reads what it wrote there.
        let mut d_temp = unsafe { stream.alloc::<u8>(temp_bytes.max(1)) }.map_err(|e| cuda("alloc", e))?;
        let (in_base, out_base) = {
            let (a, _ga) = d_in.device_ptr(stream);
            let (b, _gb) = d_out.device_ptr_mut(stream);
            (a, b)
        };
        let in_ptrs: Vec<u64> = (0..chunks).map(|i| in_base + (i * chunk_bytes) as u64).collect();
        let out_ptrs: Vec<u64> = (0..chunks).map(|i| out_base + (i * slot) as u64).collect();
        let d_in_ptrs = stream.clone_htod(&in_ptrs).map_err(|e| cuda("copy", e))?;
        let d_out_ptrs = stream.clone_htod(&out_ptrs).map_err(|e| cuda("copy", e))?;
        let d_in_sizes = stream.clone_htod(&sizes).map_err(|e| cuda("copy", e))?;
        let mut d_out_sizes = stream.alloc_zeros::<usize>(chunks).map_err(|e| cuda("alloc", e))?;
        let mut d_status = stream.alloc_zeros::<i32>(chunks).map_err(|e| cuda("alloc", e))?;
        let mut best = f64::INFINITY;
        for _ in 0..repeat.max(1) {
            stream.synchronize().map_err(|e| cuda("sync", e))?;
            let t = Instant::now();
            let st = {
                let (ip, _g1) = d_in_ptrs.device_ptr(stream);
                let (isz, _g2) = d_in_sizes.device_ptr(stream);
                let (tp, _g3) = d_temp.device_ptr_mut(stream);
                let (op, _g4) = d_out_ptrs.device_ptr(stream);
                let (osz, _g5) = d_out_sizes.device_ptr_mut(stream);
                let (sp, _g6) = d_status.device_ptr_mut(stream);
                // SAFETY: every pointer is device memory of the sizes nvCOMP asks
                // for (pointer and size arrays of `chunks` entries, slots of
                // `slot` bytes at 8-byte multiples, `temp_bytes` of scratch);
                // the stream is ours and the buffers outlive its completion.
                unsafe {
                    (nv.compress_async)(
                        ip as usize as *const *const c_void,
                        isz as usize as *const usize,
                        chunk_bytes,
                        chunks,
                        tp as usize as *mut c_void,
                        temp_bytes,
                        op as usize as *const *mut c_void,
                        osz as usize as *mut usize,
                        opts,
                        sp as usize as *mut i32,
                        stream.cu_stream() as *mut c_void,
                    )
                }
            };
            if st != 0 {
                return Err(format!("nvcompBatchedGzipCompressAsync (algorithm {algorithm}): {}", nv.describe(st)));
            }
            stream.synchronize().map_err(|e| cuda("compress", e))?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        let out_sizes: Vec<usize> = stream.clone_dtoh(&d_out_sizes).map_err(|e| cuda("copy out", e))?;
        let statuses: Vec<i32> = stream.clone_dtoh(&d_status).map_err(|e| cuda("copy out", e))?;
        if let Some((i, &s)) = statuses.iter().enumerate().find(|(_, &s)| s != 0) {
            return Err(format!("algorithm {algorithm}: chunk {i}: {}", nv.describe(s)));
        }
        let out: Vec<u8> = stream.clone_dtoh(&d_out).map_err(|e| cuda("copy out", e))?;
        let verified = verify(data, chunk_bytes, &out, slot, &out_sizes).map_err(|e| format!("algorithm {algorithm}: {e}"))?;
        let output_bytes: usize = out_sizes.iter().map(|n| n - 10 + peerpath_func::PEERPATH_HEADER_BYTES).sum();
        runs.push(ProbeRun {
            algorithm,
            chunks,
            input_bytes: data.len(),
            output_bytes,
            ratio: data.len() as f64 / output_bytes.max(1) as f64,
            kernel_s: best,
            kernel_gb_per_s: data.len() as f64 / best.max(1e-9) / 1e9,
            members_verified: verified,
        });
    }
    Ok(ProbeReport {
        provenance: "measured on this machine's GPU (nvCOMP kernels; copies in and out not included in kernel_s)",
        gpu: gpu.info.clone(),
        nvcomp_path: nv.path.display().to_string(),
        nvcomp_version: nv.version,
        nvcomp_cudart_version: nv.cudart_version,
        chunk_bytes,
        h2d_gb_per_s,
        runs,
        cufile: cufile::probe(cufile_at),
        mapped: mapped_at.map(|dir| mapped::probe_mapped(gpu, data, dir)),
    })
}

/// Rewraps each member nvCOMP made (plain 10-byte header) with peerpath's
/// header and decodes it with the CPU oracle: it must give exactly its chunk.
fn verify(data: &[u8], chunk_bytes: usize, out: &[u8], slot: usize, sizes: &[usize]) -> Result<usize, String> {
    let mut decoded = vec![0u8; chunk_bytes];
    for (i, &n) in sizes.iter().enumerate() {
        let chunk = &data[(i * chunk_bytes).min(data.len())..((i + 1) * chunk_bytes).min(data.len())];
        let member = out.get(i * slot..i * slot + n).ok_or(format!("chunk {i}: member of {n} bytes beyond its slot"))?;
        let body = peerpath_func::plain_member_body(member).ok_or(format!("chunk {i}: not a plain gzip member"))?;
        let total = peerpath_func::PEERPATH_HEADER_BYTES + body.len();
        let mut pp = peerpath_func::peerpath_header(0, total as u32, chunk.len() as u32).to_vec();
        pp.extend_from_slice(body);
        let header = peerpath_func::MemberHeader::parse(&pp).map_err(|e| format!("chunk {i}: {e:?}"))?;
        let got = peerpath_func::decode_member(&header, &pp, &mut decoded).map_err(|e| format!("chunk {i}: {e}"))?;
        if decoded[..got] != *chunk {
            return Err(format!("chunk {i}: decoded {got} bytes that differ from its {} input bytes", chunk.len()));
        }
    }
    Ok(sizes.len())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wait_ends_done_failed_or_hung() {
        use super::{wait_until_done, Waited};
        use std::time::{Duration, Instant};
        // Done on the fourth query, however long the timeout.
        let mut queries = 0;
        assert_eq!(
            wait_until_done(
                || {
                    queries += 1;
                    Ok(queries == 4)
                },
                Duration::from_secs(3600)
            ),
            Ok(())
        );
        assert_eq!(queries, 4);
        // A failed query ends the wait with its error.
        assert_eq!(wait_until_done(|| Err("CUDA: an illegal address".into()), Duration::from_secs(3600)), Err(Waited::Failed("CUDA: an illegal address".into())));
        // Never done: hung once the timeout has passed, and not long after.
        let started = Instant::now();
        let r = wait_until_done(|| Ok(false), Duration::from_millis(30));
        let took = started.elapsed();
        match r {
            Err(Waited::Hung(after)) => assert!(after >= Duration::from_millis(30) && after <= took, "{after:?} {took:?}"),
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    /// Level 0 (the fastest asked) gets nvCOMP's fastest algorithm; every
    /// other level its smallest output measured.
    #[test]
    fn levels_pick_nvcomp_algorithms() {
        let picked: Vec<i32> = (0..=12).map(super::algorithm_for_level).collect();
        assert_eq!(picked, [0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
    }
}
