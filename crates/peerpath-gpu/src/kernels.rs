//! peerpath's own GPU kernels (`kernels/coding.cu`): Reed-Solomon coding
//! over GF(2^8) and CRC-32, the erasure-coding functions of the GPU device
//! (`Function::EcEncode`, `EcReconstruct`, `Crc32`). No library does these
//! on a GPU: nvCOMP compresses, and its CRC-32 entry point refused every
//! configuration tried on the lent H100 (docs/gpu-machine.md).
//!
//! The binary carries the kernels as PTX (`kernels/coding.ptx`, made by
//! `scripts/gpu-kernels.sh` with NVRTC; the driver compiles it for the GPU
//! when the device opens). The same source is built for the host too
//! (`build.rs`, `kernels/shim.c`), and the tests below run it against the
//! CPU oracles (ISA-L's coding, crc32fast) here, where there is no GPU.
//!
//! The host side is metadata only: each coefficient's 8 powers (a code's
//! matrix rows, or the rows a lost shard has over the survivors: `powers`),
//! the segments a CRC-32 command is cut into (`CrcPlan`) and the joining of
//! the segments' CRC-32s (four bytes each) into each command's.

use cudarc::driver::{sys, CudaContext, CudaStream};
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// The kernels' PTX (`scripts/gpu-kernels.sh`; its first line names the source's SHA-256).
pub(crate) const PTX: &str = include_str!("../kernels/coding.ptx");

/// Bytes of a CRC-32 command one GPU thread checksums. A thread's CRC-32 is
/// a chain of dependent table lookups, so the kernel's rate is its number of
/// threads: with 16 KiB segments (64 threads a 1 MiB unit) it checked 2.3
/// GB/s on the lent H200 (bench/results/2026-11-29-gpu-machine-4), the
/// slowest stage of a GPU decode. Joining the segments on the host costs
/// four table lookups each ([`CrcPlan::join`]), so they can be small.
pub(crate) const CRC_SEGMENT_BYTES: u64 = 1 << 10;

/// Threads per block of every launch.
const BLOCK: u32 = 256;
/// The most blocks a launch asks for: the kernels stride over the rest.
const MAX_BLOCKS: u64 = 4096;

/// Each coefficient's products with 2^0 .. 2^7 in GF(2^8) (ISA-L's
/// polynomial, 0x11D), each repeated in the 4 bytes of a word: what
/// `pp_gf_matmul_*` multiply with (`coefficients`: rows x k, row-major).
pub(crate) fn powers(coefficients: &[u8]) -> Vec<u32> {
    let mut out = Vec::with_capacity(coefficients.len() * 8);
    for &c in coefficients {
        let mut p = c;
        for _ in 0..8 {
            out.push(u32::from(p) * 0x0101_0101);
            // p * 2 in GF(2^8): shift, reduce by the polynomial when x^8 falls out.
            p = (p << 1) ^ if p & 0x80 != 0 { 0x1D } else { 0 };
        }
    }
    out
}

/// The slicing-by-4 table of gzip's CRC-32 (reflected 0xEDB88320): table k
/// at `[k * 256 ..]` advances a byte through k more zero bytes.
pub(crate) fn crc_table() -> Vec<u32> {
    let mut t = vec![0u32; 4 * 256];
    for i in 0..256u32 {
        let mut c = i;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        t[i as usize] = c;
    }
    for k in 1..4 {
        for i in 0..256 {
            let prev = t[(k - 1) * 256 + i];
            t[k * 256 + i] = (prev >> 8) ^ t[(prev & 0xFF) as usize];
        }
    }
    t
}

/// CRC-32 commands cut into segments, one GPU thread each.
#[derive(Default)]
pub(crate) struct CrcPlan {
    /// Each segment's address and length (what `pp_crc32_segments` reads).
    pub segments: Vec<u64>,
    /// Per command: its first segment and how many.
    commands: Vec<(usize, usize)>,
}

impl CrcPlan {
    /// Adds a command over `ranges` (addresses and lengths, in order);
    /// returns its number in the plan.
    pub fn add(&mut self, ranges: impl IntoIterator<Item = (u64, u64)>) -> usize {
        let first = self.segments.len() / 2;
        for (at, len) in ranges {
            let mut off = 0;
            while off < len {
                let n = CRC_SEGMENT_BYTES.min(len - off);
                self.segments.extend_from_slice(&[at + off, n]);
                off += n;
            }
        }
        self.commands.push((first, self.segments.len() / 2 - first));
        self.commands.len() - 1
    }

    pub fn segment_count(&self) -> usize {
        self.segments.len() / 2
    }

    /// Command `c`'s CRC-32 from its segments' (`crcs`, one per segment):
    /// the CRC-32 of A then B is A's moved past B's length, XOR B's. Moving
    /// past a whole segment is a linear map of 32 bits, applied with four
    /// table lookups ([`shift_table`]); a shorter segment (a range's last)
    /// takes crc32fast's `combine`.
    pub fn join(&self, c: usize, crcs: &[u32]) -> u32 {
        let (first, n) = self.commands[c];
        let t = shift_table();
        let mut crc = 0u32;
        for (&next, segment) in crcs[first..first + n].iter().zip(self.segments[2 * first..].chunks(2)) {
            crc = if segment[1] == CRC_SEGMENT_BYTES {
                t[0][(crc & 0xFF) as usize] ^ t[1][((crc >> 8) & 0xFF) as usize] ^ t[2][((crc >> 16) & 0xFF) as usize] ^ t[3][(crc >> 24) as usize] ^ next
            } else {
                let mut h = crc32fast::Hasher::new_with_initial(crc);
                h.combine(&crc32fast::Hasher::new_with_initial_len(next, segment[1]));
                h.finalize()
            };
        }
        crc
    }
}

/// The map that moves a CRC-32 past [`CRC_SEGMENT_BYTES`] more bytes
/// (crc32fast's `combine` with a zero CRC after it), by byte of the value:
/// `t[b][v]` is the map of `v << 8b` (the map is linear, so a value's image
/// is the XOR of its bytes').
fn shift_table() -> &'static [[u32; 256]; 4] {
    static TABLE: std::sync::OnceLock<Box<[[u32; 256]; 4]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([[0u32; 256]; 4]);
        for (b, row) in t.iter_mut().enumerate() {
            for (v, out) in row.iter_mut().enumerate() {
                let mut h = crc32fast::Hasher::new_with_initial((v as u32) << (8 * b));
                h.combine(&crc32fast::Hasher::new_with_initial_len(0, CRC_SEGMENT_BYTES));
                *out = h.finalize();
            }
        }
        t
    })
}

/// The kernels loaded into a context.
pub(crate) struct Kernels {
    module: Module,
}

impl Kernels {
    /// Loads the PTX into `stream`'s context (current on this thread; the
    /// driver compiles it for this GPU), or says why it cannot.
    pub fn load(stream: &Arc<CudaStream>) -> Result<Kernels, String> {
        Ok(Kernels { module: Module::load(stream, PTX, &["pp_gf_matmul_words", "pp_gf_matmul_bytes", "pp_crc32_segments"])? })
    }

    /// Queues `out` (rows units) = the coefficients whose powers are at
    /// `pw` times `input` (k units of `unit` bytes), all device addresses.
    ///
    /// # Safety
    /// The addresses are device memory of this context: `input` k x `unit`
    /// bytes, `out` rows x `unit` bytes not overlapping it, `pw` rows x k x 8
    /// words; none freed or reused before the stream has run the kernel.
    pub unsafe fn gf_matmul(&self, stream: &CudaStream, (input, unit, k): (u64, u64, u32), (out, rows): (u64, u32), pw: u64) -> Result<(), String> {
        if unit == 0 || rows == 0 {
            return Ok(());
        }
        let aligned = input % 4 == 0 && out % 4 == 0 && unit % 4 == 0;
        let (f, threads) = if aligned { (self.module.function(0), unit / 4) } else { (self.module.function(1), unit) };
        let (mut a0, mut a1, mut a2, mut a3, mut a4, mut a5) = (input, unit, k, out, rows, pw);
        let mut params = [&mut a0 as *mut u64 as *mut c_void, &mut a1 as *mut u64 as *mut c_void, &mut a2 as *mut u32 as *mut c_void, &mut a3 as *mut u64 as *mut c_void, &mut a4 as *mut u32 as *mut c_void, &mut a5 as *mut u64 as *mut c_void];
        // SAFETY: the kernel's six parameters, in order and of its types; the
        // memory they address is as the caller promises.
        unsafe { launch(f, threads, stream, &mut params) }
    }

    /// Queues the CRC-32 of each of `n` segments (addresses and lengths at
    /// `segments`) into the words at `crcs`; `table` is [`crc_table`]'s.
    ///
    /// # Safety
    /// The addresses are device memory of this context: `segments` 2 x `n`
    /// u64s naming device memory, `table` 1024 words, `crcs` `n` words; none
    /// freed or reused before the stream has run the kernel.
    pub unsafe fn crc32_segments(&self, stream: &CudaStream, segments: u64, n: u32, table: u64, crcs: u64) -> Result<(), String> {
        if n == 0 {
            return Ok(());
        }
        let (mut a0, mut a1, mut a2, mut a3) = (segments, n, table, crcs);
        let mut params = [&mut a0 as *mut u64 as *mut c_void, &mut a1 as *mut u32 as *mut c_void, &mut a2 as *mut u64 as *mut c_void, &mut a3 as *mut u64 as *mut c_void];
        // SAFETY: the kernel's four parameters, in order and of its types; the
        // memory they address is as the caller promises.
        unsafe { launch(self.module.function(2), u64::from(n), stream, &mut params) }
    }
}

/// A PTX module loaded into a context and the kernels asked of it;
/// unloaded when dropped (when the last worker lets go of it, whichever
/// thread that is).
pub(crate) struct Module {
    ctx: Arc<CudaContext>,
    module: sys::CUmodule,
    functions: Vec<sys::CUfunction>,
}

// SAFETY: a module and its functions are handles the driver lets any thread
// use once the context is current (each worker binds it before it launches).
unsafe impl Send for Module {}
// SAFETY: as above; launching does not change the handles.
unsafe impl Sync for Module {}

impl Module {
    /// Loads a PTX image into `stream`'s context (current on this thread;
    /// the driver compiles it for this GPU) and finds the kernels `names` in
    /// it; or says why it cannot (a driver older than the PTX: the JIT
    /// compiler's log is in the reason).
    pub fn load(stream: &Arc<CudaStream>, ptx: &str, names: &[&str]) -> Result<Module, String> {
        let ptx = CString::new(ptx).expect("PTX text has no NUL");
        let mut module = std::ptr::null_mut();
        // The JIT compiler's error log, for the reason when the driver refuses the PTX.
        let mut log = vec![0u8; 4096];
        let mut options = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        // SAFETY: `ptx` is a NUL-terminated PTX image and `log` a buffer of the size given,
        // both read or written during the call only; the module handle is written into a local.
        let loaded = unsafe { sys::cuModuleLoadDataEx(&mut module, ptx.as_ptr() as *const c_void, options.len() as u32, options.as_mut_ptr(), values.as_mut_ptr()) }.result();
        if let Err(e) = loaded {
            let log = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(log.len())]).trim().to_string();
            return Err(format!("the CUDA driver cannot load peerpath's kernels (PTX ISA 9.0: a driver of CUDA 13.0 or later): {e}{}", if log.is_empty() { String::new() } else { format!(": {log}") }));
        }
        // From here on, dropping `m` unloads the module.
        let mut m = Module { ctx: stream.context().clone(), module, functions: Vec::with_capacity(names.len()) };
        for name in names {
            let c = CString::new(*name).expect("a kernel name");
            let mut f = std::ptr::null_mut();
            // SAFETY: a module loaded above; the function handle is written into a local.
            unsafe { sys::cuModuleGetFunction(&mut f, m.module, c.as_ptr()) }.result().map_err(|e| format!("kernel {name}: {e}"))?;
            m.functions.push(f);
        }
        Ok(m)
    }

    /// Kernel `i` of the names it was loaded with.
    pub fn function(&self, i: usize) -> sys::CUfunction {
        self.functions[i]
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if crate::make_current(&self.ctx).is_ok() {
            // SAFETY: every worker synchronised its stream after its last launch and let go
            // of this (the last reference is being dropped): no kernel of the module runs.
            unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// Launches `f` with enough blocks of [`BLOCK`] threads for `threads` (at
/// most [`MAX_BLOCKS`]: the kernels stride over the rest) on `stream`.
///
/// # Safety
/// `params` point at the kernel's parameters, in order and of its types.
pub(crate) unsafe fn launch(f: sys::CUfunction, threads: u64, stream: &CudaStream, params: &mut [*mut c_void]) -> Result<(), String> {
    let blocks = threads.div_ceil(u64::from(BLOCK)).clamp(1, MAX_BLOCKS) as u32;
    // SAFETY: as the caller promises; the parameter values are read during the call.
    unsafe { sys::cuLaunchKernel(f, blocks, 1, 1, BLOCK, 1, 1, 0, stream.cu_stream(), params.as_mut_ptr(), std::ptr::null_mut()) }.result().map_err(|e| format!("CUDA launch: {e}"))
}

/// The coding kernels and their constant table in one context.
pub(crate) struct Coding {
    pub kernels: Kernels,
    /// [`crc_table`] in GPU memory.
    pub crc_table: cudarc::driver::CudaSlice<u32>,
}

impl Coding {
    /// Loads the kernels into `stream`'s context (current on this thread).
    pub fn open(stream: &Arc<CudaStream>) -> Result<Coding, String> {
        let kernels = Kernels::load(stream)?;
        let crc_table = stream.clone_htod(&crc_table()).map_err(|e| format!("CUDA: {e}"))?;
        Ok(Coding { kernels, crc_table })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use peerpath_func::ec::RsCode;

    extern "C" {
        fn pp_shim_gf_matmul_words(grid: u32, block: u32, input: *const u8, unit: u64, k: u32, out: *mut u8, rows: u32, pw: *const u32);
        fn pp_shim_gf_matmul_bytes(grid: u32, block: u32, input: *const u8, unit: u64, k: u32, out: *mut u8, rows: u32, pw: *const u32);
        fn pp_shim_crc32_segments(grid: u32, block: u32, segs: *const u64, n: u32, table: *const u32, crcs: *mut u32);
    }

    /// The kernel on the host: `rows` x `unit` bytes from k units.
    fn matmul(words: bool, grid: u32, input: &[u8], unit: usize, k: usize, coefficients: &[u8]) -> Vec<u8> {
        let rows = coefficients.len() / k;
        let mut out = vec![0xA5u8; rows * unit];
        let pw = powers(coefficients);
        assert_eq!(input.len(), k * unit);
        let f = if words { pp_shim_gf_matmul_words } else { pp_shim_gf_matmul_bytes };
        // SAFETY: k units in, rows units out, rows x k x 8 powers: what the kernel reads and writes.
        unsafe { f(grid, 32, input.as_ptr(), unit as u64, k as u32, out.as_mut_ptr(), rows as u32, pw.as_ptr()) };
        out
    }

    /// `n` pseudo-random bytes (xorshift) from `seed`.
    pub(crate) fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    /// The oracle's set: `data`'s k units of `unit` bytes, then ISA-L's m parity units.
    pub(crate) fn shards(code: &RsCode, data: &[u8], unit: usize) -> Vec<Vec<u8>> {
        let mut shards: Vec<Vec<u8>> = data.chunks(unit).map(|c| c.to_vec()).collect();
        let mut parity = vec![vec![0u8; unit]; code.parity_shards()];
        {
            let d: Vec<&[u8]> = shards.iter().map(|s| s.as_slice()).collect();
            let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|p| p.as_mut_slice()).collect();
            code.encode(&d, &mut p);
        }
        shards.extend(parity);
        shards
    }

    /// Fails unless `ptx`'s first line names `source`'s SHA-256 and it has each of `kernels`.
    pub(crate) fn ptx_is_compiled_from(ptx: &str, source: &[u8], name: &str, kernels: &[&str]) {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, source);
        let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let first = ptx.lines().next().unwrap_or_default();
        assert!(first.contains(&format!("kernels/{name}.cu (sha256 {hex})")), "kernels/{name}.ptx was not compiled from this kernels/{name}.cu (sha256 {hex}): run scripts/gpu-kernels.sh\nits first line: {first}");
        for k in kernels {
            assert!(ptx.contains(&format!(".visible .entry {k}(")), "kernels/{name}.ptx has no kernel {k}");
        }
    }

    #[test]
    fn the_ptx_is_compiled_from_this_source() {
        ptx_is_compiled_from(PTX, include_bytes!("../kernels/coding.cu"), "coding", &["pp_gf_matmul_words", "pp_gf_matmul_bytes", "pp_crc32_segments"]);
    }

    #[test]
    fn the_coding_kernel_is_isa_ls_encoding_byte_for_byte() {
        // Shapes: units of every alignment, one byte, grids smaller and larger than the work.
        for (k, m, unit, grid) in [(4, 2, 4096, 3), (4, 2, 1000, 2), (1, 1, 1, 1), (10, 4, 4100, 64), (3, 3, 77, 1), (16, 4, 64, 5), (6, 3, 12, 1000)] {
            let code = RsCode::new(k, m).unwrap();
            let input = bytes(k * unit, (k * 1000 + unit) as u64);
            let want = shards(&code, &input, unit)[k..].concat();
            for words in [false, true] {
                if words && unit % 4 != 0 {
                    continue;
                }
                assert_eq!(matmul(words, grid, &input, unit, k, code.parity_rows()), want, "RS({k},{m}) unit {unit} words {words}");
            }
        }
    }

    #[test]
    fn the_coding_kernel_rebuilds_lost_shards_as_isa_l_does() {
        let (k, m, unit) = (6, 3, 4096 + 8);
        let code = RsCode::new(k, m).unwrap();
        let shards = shards(&code, &bytes(k * unit, 9), unit);
        // Lose a data shard and a parity shard, and then three data shards.
        for (survivors, lost) in [(vec![0, 2, 3, 4, 5, 6], vec![1, 7]), (vec![3, 4, 5, 6, 7, 8], vec![0, 1, 2])] {
            let decoder = code.decoder(&survivors, &lost).unwrap();
            let input: Vec<u8> = survivors.iter().flat_map(|&i| shards[i].clone()).collect();
            for words in [false, true] {
                let got = matmul(words, 7, &input, unit, k, decoder.coefficients());
                for (n, &i) in lost.iter().enumerate() {
                    assert!(got[n * unit..(n + 1) * unit] == shards[i][..], "shard {i} rebuilt (words {words})");
                }
            }
        }
    }

    #[test]
    fn the_crc_kernel_and_the_join_give_gzips_crc32() {
        let data = bytes(300_000, 5);
        // Commands over one range, several ranges, odd offsets and lengths, an empty one.
        let commands: Vec<Vec<(usize, usize)>> = vec![vec![(0, 300_000)], vec![(1, 3), (10, 16384), (17000, 40001)], vec![(5, 0)], vec![(3, 16385)], vec![]];
        let mut plan = CrcPlan::default();
        for c in &commands {
            plan.add(c.iter().map(|&(at, len)| (data.as_ptr() as u64 + at as u64, len as u64)));
        }
        let table = crc_table();
        let mut crcs = vec![0u32; plan.segment_count()];
        for grid in [1, 3, 50] {
            // SAFETY: the segments name bytes of `data`, which lives across the call; `crcs` has one word per segment.
            unsafe { pp_shim_crc32_segments(grid, 8, plan.segments.as_ptr(), plan.segment_count() as u32, table.as_ptr(), crcs.as_mut_ptr()) };
            for (c, ranges) in commands.iter().enumerate() {
                let mut h = crc32fast::Hasher::new();
                for &(at, len) in ranges {
                    h.update(&data[at..at + len]);
                }
                assert_eq!(plan.join(c, &crcs), h.finalize(), "command {c} grid {grid}");
            }
        }
        assert_eq!(plan.segment_count(), 293 + (1 + 16 + 40) + 17, "300000 / 1 KiB: 293 segments; then 1, 16 and 40; none; 17; none");
    }

    #[test]
    fn powers_are_products_with_powers_of_two() {
        // 0x80 * 2 = 0x100 -> reduced by 0x11D: 0x1D.
        let p = powers(&[0x80, 1, 0]);
        assert_eq!(p[0] & 0xFF, 0x80);
        assert_eq!(p[1], 0x1D1D_1D1D);
        assert_eq!(p[8..16].iter().map(|w| w & 0xFF).collect::<Vec<_>>(), [1, 2, 4, 8, 16, 32, 64, 128]);
        assert!(p[16..].iter().all(|&w| w == 0));
    }
}
