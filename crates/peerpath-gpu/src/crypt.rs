//! peerpath's own AES-256-GCM kernels (`kernels/crypt.cu`): the GPU
//! device's `Function::AeadSealBlock` and `AeadOpenBlock`, the blocks of a
//! `peerpath-enc/1` file sealed and opened in GPU memory. No library does
//! AES-GCM on a GPU. The binary carries the kernels as PTX
//! (`kernels/crypt.ptx`, `scripts/gpu-kernels.sh`); the same source is built
//! for the host (`build.rs`), and the tests below check it against aws-lc's
//! AES-256-GCM (the CPU oracle, `peerpath_func::crypt`) byte for byte.
//!
//! The host side is metadata only: each command's addresses, length, index
//! and where its material lies ([`GcmPlan`]), and the AES tables. The key
//! material stays in GPU memory: the kernels expand it there, and the
//! commands' state (round keys included) is zeroed on the GPU after each
//! batch.

use crate::kernels::{launch, Module};
use cudarc::driver::{CudaSlice, CudaStream};
use std::ffi::c_void;
use std::sync::Arc;

/// The kernels' PTX (`scripts/gpu-kernels.sh`; its first line names the source's SHA-256).
pub(crate) const PTX: &str = include_str!("../kernels/crypt.ptx");

/// Words of a command's state (`PP_GCM_WORDS` in crypt.cu).
const GCM_WORDS: usize = 128;
/// Bytes of a command one thread encrypts and hashes (`PP_GCM_SEGMENT_BLOCKS` 16-byte blocks).
const SEGMENT_BYTES: u64 = 64 * 16;

/// AES's four round tables (the S-box and MixColumns folded), as `crypt.cu`
/// reads them: table t at `[256 t ..]` maps a byte at row t of a column to
/// the column's new value, a word whose low byte is row 0. The S-box is
/// computed (multiplicative inverse in GF(2^8), then the affine map), not
/// typed in; the tests check it against FIPS 197's values.
pub(crate) fn aes_tables() -> Vec<u32> {
    let mut sbox = [0u8; 256];
    // p runs over GF(2^8)'s non-zero elements as powers of 3, q over their inverses.
    let (mut p, mut q) = (1u8, 1u8);
    loop {
        p ^= (p << 1) ^ if p & 0x80 != 0 { 0x1B } else { 0 };
        q ^= q << 1;
        q ^= q << 2;
        q ^= q << 4;
        if q & 0x80 != 0 {
            q ^= 0x09;
        }
        sbox[p as usize] = 0x63 ^ q ^ q.rotate_left(1) ^ q.rotate_left(2) ^ q.rotate_left(3) ^ q.rotate_left(4);
        if p == 1 {
            break;
        }
    }
    sbox[0] = 0x63;
    let mut t = vec![0u32; 1024];
    for (x, &s) in sbox.iter().enumerate() {
        let s2 = (s << 1) ^ if s & 0x80 != 0 { 0x1B } else { 0 };
        // A byte at row 0 gives the column (2s, s, s, 3s); row t the same rotated down t rows.
        let w = u32::from(s2) | u32::from(s) << 8 | u32::from(s) << 16 | u32::from(s2 ^ s) << 24;
        for r in 0..4 {
            t[256 * r + x] = w.rotate_left(8 * r as u32);
        }
    }
    t
}

/// A batch's seal and open commands, as the kernels read them.
#[derive(Default)]
pub(crate) struct GcmPlan {
    /// [`GCM_WORDS`] per command: the host writes its first eight, the kernels the rest.
    pub states: Vec<u64>,
    /// Command c's segments are `starts[c] .. starts[c + 1]`.
    pub starts: Vec<u32>,
}

impl GcmPlan {
    /// Adds a command sealing (or opening) `len` payload bytes at device
    /// address `src` into `dst`, block `index` of the file whose material
    /// (block key, then file id) is at `material`; returns its number, or
    /// `None` (the plan unchanged) if the batch's segments would pass 32 bits.
    pub fn add(&mut self, (src, dst, len): (u64, u64, u64), open: bool, material: u64, index: u64) -> Option<usize> {
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let last = *self.starts.last().expect("pushed above");
        let end = u32::try_from(len.div_ceil(SEGMENT_BYTES)).ok().and_then(|n| last.checked_add(n))?;
        let mut st = [0u64; GCM_WORDS];
        (st[0], st[1], st[2], st[3], st[4], st[5]) = (src, dst, len, u64::from(open), material, index);
        let mut prefix = [0u8; 16];
        prefix[..peerpath_func::crypt::FORMAT.len()].copy_from_slice(peerpath_func::crypt::FORMAT);
        st[6] = u64::from_le_bytes(prefix[..8].try_into().expect("8 bytes"));
        st[7] = u64::from_le_bytes(prefix[8..].try_into().expect("8 bytes"));
        self.states.extend_from_slice(&st);
        self.starts.push(end);
        Some(self.len() - 1)
    }

    pub fn len(&self) -> usize {
        self.states.len() / GCM_WORDS
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    pub fn segments(&self) -> u32 {
        self.starts.last().copied().unwrap_or(0)
    }
}

/// The AES-GCM kernels and their tables in one context.
pub(crate) struct Crypt {
    module: Module,
    /// [`aes_tables`] in GPU memory.
    tables: CudaSlice<u32>,
}

impl Crypt {
    /// Loads the kernels into `stream`'s context (current on this thread).
    pub fn open(stream: &Arc<CudaStream>) -> Result<Crypt, String> {
        let module = Module::load(stream, PTX, &["pp_gcm_prepare", "pp_gcm_segments", "pp_gcm_finish"])?;
        let tables = stream.clone_htod(&aes_tables()).map_err(|e| format!("CUDA: {e}"))?;
        Ok(Crypt { module, tables })
    }

    /// Queues a plan's three launches: each command's preparation, its
    /// segments, its tag (written, or compared into `ok`: a word per command).
    ///
    /// # Safety
    /// `states` holds the plan's states and `starts` its segment starts, in
    /// GPU memory of this context; `ok` has a word per command; every
    /// command's addresses name GPU memory as the plan says (source and
    /// material readable, the output's payload and tag writable, not
    /// overlapping the source); none freed or reused before the stream has
    /// run the kernels.
    pub unsafe fn run(&self, stream: &CudaStream, (states, n): (u64, u32), (starts, segments): (u64, u32), ok: u64) -> Result<(), String> {
        if n == 0 {
            return Ok(());
        }
        let table = crate::device::ptr(&self.tables, stream);
        let (mut s, mut n, mut st, mut t, mut o) = (states, n, starts, table, ok);
        let mut prepare = [&mut s as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void, &mut t as *mut u64 as *mut c_void];
        // SAFETY: the kernel's three parameters, in order and of its types; the memory as promised.
        unsafe { launch(self.module.function(0), u64::from(n), stream, &mut prepare) }?;
        if segments > 0 {
            let mut params = [&mut s as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void, &mut st as *mut u64 as *mut c_void, &mut t as *mut u64 as *mut c_void];
            // SAFETY: as above, four parameters.
            unsafe { launch(self.module.function(1), u64::from(segments), stream, &mut params) }?;
        }
        let mut finish = [&mut s as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void, &mut o as *mut u64 as *mut c_void];
        // SAFETY: as above, three parameters.
        unsafe { launch(self.module.function(2), u64::from(n), stream, &mut finish) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::tests::bytes;
    use peerpath_func::crypt::{open_block_with, seal_block_with, DEVICE_KEY_BYTES, TAG_BYTES};

    extern "C" {
        fn pp_shim_gcm_prepare(grid: u32, block: u32, states: *mut u64, n: u32, te: *const u32);
        fn pp_shim_gcm_segments(grid: u32, block: u32, states: *mut u64, n: u32, starts: *const u32, te: *const u32);
        fn pp_shim_gcm_finish(grid: u32, block: u32, states: *const u64, n: u32, ok: *mut u32);
    }

    /// Runs a plan's three kernels on the host with `grid` blocks of 8 threads; per command, its `ok`.
    fn run(plan: &mut GcmPlan, grid: u32) -> Vec<u32> {
        let te = aes_tables();
        let n = plan.len() as u32;
        let mut ok = vec![7u32; plan.len()];
        // SAFETY: the plan's states and starts, the tables, a word per command; every
        // address in the states names a live buffer of the test, as the plan says.
        unsafe {
            pp_shim_gcm_prepare(grid, 8, plan.states.as_mut_ptr(), n, te.as_ptr());
            pp_shim_gcm_segments(grid, 8, plan.states.as_mut_ptr(), n, plan.starts.as_ptr(), te.as_ptr());
            pp_shim_gcm_finish(grid, 8, plan.states.as_ptr(), n, ok.as_mut_ptr());
        }
        ok
    }

    fn material(seed: u64) -> Vec<u8> {
        bytes(DEVICE_KEY_BYTES, seed)
    }

    /// Payload lengths: empty, partial blocks, a segment's edges, several segments, odd tails.
    const LENGTHS: [usize; 12] = [0, 1, 15, 16, 17, 100, 1023, 1024, 1025, 2048, 65_536 + 5, 300_001];

    #[test]
    fn aes_tables_hold_fips_197s_sbox() {
        let t = aes_tables();
        let s = |x: usize| (t[x] >> 8) & 0xFF;
        // FIPS 197, figure 7.
        assert_eq!([s(0x00), s(0x01), s(0x53), s(0xFF), s(0x10)], [0x63, 0x7C, 0xED, 0x16, 0xCA]);
        // Table 0 for S = 0x63: (2S, S, S, 3S) = (0xC6, 0x63, 0x63, 0xA5).
        assert_eq!(t[0], 0xA563_63C6);
        for x in 0..256 {
            assert_eq!(t[256 + x], t[x].rotate_left(8));
            assert_eq!(t[768 + x], t[x].rotate_left(24));
        }
    }

    #[test]
    fn the_gcm_kernels_seal_as_aws_lc_does() {
        // Every length, in one batch, at aligned and odd addresses, several files and indices.
        let mut sources = Vec::new();
        let mut outputs = Vec::new();
        let mut materials = Vec::new();
        let mut want = Vec::new();
        for (i, &len) in LENGTHS.iter().enumerate() {
            let skew = i % 3;
            let index = [0u64, 1, 7, 1 << 40][i % 4];
            let m = material(i as u64 % 3 + 1);
            let mut src = vec![0u8; len + skew];
            src[skew..].copy_from_slice(&bytes(len, 100 + i as u64));
            let mut sealed = src[skew..].to_vec();
            sealed.resize(len + TAG_BYTES, 0);
            seal_block_with(&m, index, &mut sealed).expect("aws-lc seals");
            want.push(sealed);
            sources.push((src, skew, index));
            outputs.push(vec![0xA5u8; len + TAG_BYTES + 2]);
            materials.push(m);
        }
        for grid in [1, 3, 64] {
            let mut plan = GcmPlan::default();
            for (((src, skew, index), out), m) in sources.iter().zip(&mut outputs).zip(&materials) {
                let len = src.len() - skew;
                plan.add((src.as_ptr() as u64 + *skew as u64, out.as_mut_ptr() as u64 + 1, len as u64), false, m.as_ptr() as u64, *index).unwrap();
            }
            assert!(run(&mut plan, grid).iter().all(|&ok| ok == 1));
            for (i, (out, want)) in outputs.iter().zip(&want).enumerate() {
                assert!(out[1..1 + want.len()] == want[..], "length {} (grid {grid}): the GPU's sealed block differs from aws-lc's", LENGTHS[i]);
                assert_eq!((out[0], out[want.len() + 1]), (0xA5, 0xA5), "length {}: bytes written outside the output", LENGTHS[i]);
            }
        }
    }

    #[test]
    fn the_gcm_kernels_open_what_aws_lc_sealed_and_refuse_what_is_not_authentic() {
        let m = material(9);
        let other_file = {
            let mut o = m.clone();
            o[DEVICE_KEY_BYTES - 1] ^= 1;
            o
        };
        for &len in &LENGTHS {
            let plain = bytes(len, len as u64);
            let mut sealed = plain.clone();
            sealed.resize(len + TAG_BYTES, 0);
            seal_block_with(&m, 5, &mut sealed).unwrap();
            let mut check = sealed.clone();
            assert!(open_block_with(&m, 5, &mut check).is_some());
            // The block as sealed, then: a ciphertext byte flipped, a tag byte flipped, another
            // position, another file's material.
            let mut flipped = sealed.clone();
            flipped[len / 2] ^= if len > 0 { 0x40 } else { 0 };
            let mut bad_tag = sealed.clone();
            bad_tag[len + 3] ^= 1;
            let cases: Vec<(Vec<u8>, u64, &[u8], bool)> = vec![(sealed.clone(), 5, &m, true), (flipped, 5, &m, len == 0), (bad_tag, 5, &m, false), (sealed.clone(), 6, &m, false), (sealed.clone(), 5, &other_file, false)];
            let mut outs: Vec<Vec<u8>> = cases.iter().map(|_| vec![0u8; len]).collect();
            let mut plan = GcmPlan::default();
            for ((input, index, material, _), out) in cases.iter().zip(&mut outs) {
                plan.add((input.as_ptr() as u64, out.as_mut_ptr() as u64, len as u64), true, material.as_ptr() as u64, *index).unwrap();
            }
            let ok = run(&mut plan, 5);
            for (c, ((_, _, _, authentic), got)) in cases.iter().zip(&ok).enumerate() {
                assert_eq!(*got == 1, *authentic, "length {len} case {c}");
            }
            assert!(outs[0] == plain, "length {len}: the opened block is not the plaintext");
        }
    }

    #[test]
    fn the_ptx_is_compiled_from_this_source() {
        crate::kernels::tests::ptx_is_compiled_from(PTX, include_bytes!("../kernels/crypt.cu"), "crypt", &["pp_gcm_prepare", "pp_gcm_segments", "pp_gcm_finish"]);
    }

    #[test]
    fn a_plan_cuts_commands_into_1_kib_segments() {
        let mut plan = GcmPlan::default();
        assert_eq!(plan.segments(), 0);
        for len in [0, 1, 1024, 1025, 0, 3 << 20] {
            plan.add((0, 0, len), false, 0, 0).unwrap();
        }
        assert_eq!(plan.starts, [0, 0, 1, 2, 4, 4, 3076]);
        assert_eq!(plan.len(), 6);
        // Past 2^32 segments: refused, the plan as it was.
        assert_eq!(plan.add((0, 0, 1 << 52), false, 0, 0), None);
        assert_eq!((plan.len(), plan.starts.len(), plan.segments()), (6, 7, 3076));
        assert_eq!(&plan.states[GCM_WORDS * 2..GCM_WORDS * 2 + 3], &[0, 0, 1024]);
        assert_eq!(plan.states[6].to_le_bytes(), *b"peerpath");
    }
}
