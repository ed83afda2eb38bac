//! peerpath's own deduplication kernels (`kernels/dedup.cu`): the GPU
//! device's `Function::ChunkFingerprint`, FastCDC's chunk boundaries and each
//! chunk's BLAKE3 digest computed in GPU memory; only the boundaries and the
//! digests are written to the command's output. No library does either on a
//! GPU. The binary carries the kernels as PTX (`kernels/dedup.ptx`,
//! `scripts/gpu-kernels.sh`); the same source is built for the host
//! (`build.rs`), and the tests below check it against the CPU oracle
//! (`peerpath_func::dedup::chunk_digests`: the fastcdc and blake3 crates).
//!
//! The host side is metadata only: each command's addresses, sizes and masks
//! ([`CdcPlan`]), and the gear table.

use crate::kernels::{launch, Module};
use cudarc::driver::{CudaSlice, CudaStream};
use peerpath_func::dedup::{gear_and_masks, ChunkParams};
use std::ffi::c_void;
use std::sync::Arc;

/// The kernels' PTX (`scripts/gpu-kernels.sh`; its first line names the source's SHA-256).
pub(crate) const PTX: &str = include_str!("../kernels/dedup.ptx");

/// Words of a command (`PP_CDC_WORDS` in dedup.cu).
const CDC_WORDS: usize = 16;

/// A batch's fingerprint commands, as the kernels read them.
#[derive(Default)]
pub(crate) struct CdcPlan {
    /// [`CDC_WORDS`] per command.
    pub cmds: Vec<u64>,
    /// Command c's bitmap words are `words[c] .. words[c + 1]` (32 positions a word).
    pub words: Vec<u32>,
    /// Command c's possible chunks (a digest thread each) are `slots[c] .. slots[c + 1]`.
    pub slots: Vec<u32>,
}

impl CdcPlan {
    /// Adds a command cutting `len` bytes at device address `data` with
    /// `p`, its count, consumed bytes and entries written at `out` (which
    /// has room for `len / p.min + 1` entries); `None` (the plan unchanged)
    /// if the batch's bitmap words or digest threads would pass 32 bits.
    pub fn add(&mut self, (data, len): (u64, u64), p: ChunkParams, out: u64, at_end: bool) -> Option<()> {
        if self.words.is_empty() {
            self.words.push(0);
            self.slots.push(0);
        }
        let (_, mask_s, mask_l) = gear_and_masks(p);
        let first_word = *self.words.last().expect("pushed above");
        let last_slot = *self.slots.last().expect("pushed above");
        let after = |last: u32, n: u64| u32::try_from(n).ok().and_then(|n| last.checked_add(n));
        let (words, slots) = (after(first_word, len.div_ceil(32))?, after(last_slot, len / p.min as u64 + 1)?);
        let mut c = [0u64; CDC_WORDS];
        c[..10].copy_from_slice(&[data, len, p.min as u64, p.avg as u64, p.max as u64, mask_s, mask_l, out, u64::from(at_end), u64::from(first_word)]);
        self.cmds.extend_from_slice(&c);
        self.words.push(words);
        self.slots.push(slots);
        Some(())
    }

    pub fn len(&self) -> usize {
        self.cmds.len() / CDC_WORDS
    }

    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Bitmap words over all commands.
    pub fn bitmap_words(&self) -> u32 {
        self.words.last().copied().unwrap_or(0)
    }

    /// Digest threads over all commands.
    pub fn slot_count(&self) -> u32 {
        self.slots.last().copied().unwrap_or(0)
    }
}

/// The dedup kernels and the gear table in one context.
pub(crate) struct Cdc {
    module: Module,
    /// FastCDC's gear table in GPU memory.
    gear: CudaSlice<u64>,
}

impl Cdc {
    /// Loads the kernels into `stream`'s context (current on this thread).
    pub fn open(stream: &Arc<CudaStream>) -> Result<Cdc, String> {
        let module = Module::load(stream, PTX, &["pp_cdc_bits", "pp_cdc_walk", "pp_blake3_chunks"])?;
        let gear = stream.clone_htod(gear_and_masks(ChunkParams::default()).0).map_err(|e| format!("CUDA: {e}"))?;
        Ok(Cdc { module, gear })
    }

    /// Queues a plan's three launches: the bitmaps, each command's walk, the digests.
    ///
    /// # Safety
    /// `cmds`, `words` and `slots` hold the plan's in GPU memory of this
    /// context, `bits` two bitmaps of [`CdcPlan::bitmap_words`] words each
    /// (the first, then the second); every command's input and output name
    /// GPU memory as the plan says (the output with room for its entries,
    /// not overlapping the input); none freed or reused before the stream
    /// has run the kernels.
    pub unsafe fn run(&self, stream: &CudaStream, plan: &CdcPlan, (cmds, words, slots): (u64, u64, u64), bits: u64) -> Result<(), String> {
        let n = u32::try_from(plan.len()).map_err(|_| "more than 2^32 commands in a batch".to_string())?;
        if n == 0 {
            return Ok(());
        }
        let gear = crate::device::ptr(&self.gear, stream);
        let (mut c, mut n, mut w, mut g, mut s) = (cmds, n, words, gear, slots);
        let (mut bs, mut bl) = (bits, bits + 4 * u64::from(plan.bitmap_words()));
        let p = |x: &mut u64| x as *mut u64 as *mut c_void;
        if plan.bitmap_words() > 0 {
            let mut params = [p(&mut c), &mut n as *mut u32 as *mut c_void, p(&mut w), p(&mut g), p(&mut bs), p(&mut bl)];
            // SAFETY: the kernel's six parameters, in order and of its types; the memory as promised.
            unsafe { launch(self.module.function(0), u64::from(plan.bitmap_words()), stream, &mut params) }?;
        }
        let mut params = [p(&mut c), &mut n as *mut u32 as *mut c_void, p(&mut g), p(&mut bs), p(&mut bl)];
        // SAFETY: as above, five parameters.
        unsafe { launch(self.module.function(1), u64::from(n), stream, &mut params) }?;
        let mut params = [p(&mut c), &mut n as *mut u32 as *mut c_void, p(&mut s)];
        // SAFETY: as above, three parameters.
        unsafe { launch(self.module.function(2), u64::from(plan.slot_count()), stream, &mut params) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::tests::bytes;
    use peerpath_func::dedup::{chunk_digests, Fingerprint};

    extern "C" {
        fn pp_shim_cdc_bits(grid: u32, block: u32, cmds: *const u64, n: u32, words: *const u32, gear: *const u64, bits_s: *mut u32, bits_l: *mut u32);
        fn pp_shim_cdc_walk(grid: u32, block: u32, cmds: *const u64, n: u32, gear: *const u64, bits_s: *const u32, bits_l: *const u32);
        fn pp_shim_blake3_chunks(grid: u32, block: u32, cmds: *const u64, n: u32, slots: *const u32);
    }

    /// The kernels on the host over `inputs` (each with its sizes and at_end): per command, its
    /// entries as the CPU device writes them (offset, length, digest), and the consumed bytes.
    #[allow(clippy::type_complexity)]
    fn run(inputs: &[(&[u8], ChunkParams, bool)], grid: u32) -> Vec<(Vec<(usize, usize, [u8; 32])>, u64)> {
        let mut outs: Vec<Vec<u8>> = inputs.iter().map(|(d, p, _)| vec![0xEEu8; 16 + 48 * (d.len() / p.min + 1)]).collect();
        let mut plan = CdcPlan::default();
        for ((d, p, at_end), out) in inputs.iter().zip(&mut outs) {
            plan.add((d.as_ptr() as u64, d.len() as u64), *p, out.as_mut_ptr() as u64, *at_end).unwrap();
        }
        let (gear, _, _) = gear_and_masks(ChunkParams::default());
        let w = plan.bitmap_words() as usize;
        let (mut bs, mut bl) = (vec![0u32; w.max(1)], vec![0u32; w.max(1)]);
        let n = plan.len() as u32;
        // SAFETY: the plan's arrays and bitmaps as the kernels read and write them; every address
        // in the plan names a live buffer of this test, each output with room for its entries.
        unsafe {
            pp_shim_cdc_bits(grid, 8, plan.cmds.as_ptr(), n, plan.words.as_ptr(), gear.as_ptr(), bs.as_mut_ptr(), bl.as_mut_ptr());
            pp_shim_cdc_walk(grid, 8, plan.cmds.as_ptr(), n, gear.as_ptr(), bs.as_ptr(), bl.as_ptr());
            pp_shim_blake3_chunks(grid, 8, plan.cmds.as_ptr(), n, plan.slots.as_ptr());
        }
        outs.iter()
            .map(|o| {
                let word = |at: usize| u64::from_le_bytes(o[at..at + 8].try_into().unwrap());
                let entries = (0..word(0) as usize).map(|i| (word(16 + 48 * i) as usize, word(24 + 48 * i) as usize, o[32 + 48 * i..64 + 48 * i].try_into().unwrap())).collect();
                (entries, word(8))
            })
            .collect()
    }

    #[test]
    fn the_dedup_kernels_cut_and_hash_as_the_cpu_oracle_does() {
        let small = ChunkParams::new(1024, 4096, 16384).unwrap();
        let default = ChunkParams::default();
        // The average at the minimum, and just past it: where the mask changes at or within the
        // 63 positions hashed exactly after the minimum.
        let (flat, near) = (ChunkParams::new(256, 256, 1024).unwrap(), ChunkParams::new(256, 288, 2048).unwrap());
        // Random bytes, text-like bytes, a run of zeros in the middle (chunks of max), edges.
        let random = bytes(1_000_003, 7);
        let mut text: Vec<u8> = b"ACDEFGHIKLMNPQRSTVWY\n".iter().cycle().take(300_000).copied().collect();
        for (i, b) in bytes(300_000, 3).iter().enumerate().filter(|(i, _)| i % 97 == 0) {
            text[i] = *b;
        }
        let mut runs = bytes(200_000, 5);
        runs.extend(vec![0u8; 150_001]);
        runs.extend(bytes(90_000, 6));
        let cases: Vec<(&[u8], ChunkParams)> = vec![(&random, default), (&random, small), (&text, small), (&runs, small), (&runs, default), (&random[..1024], small), (&random[..1025], small), (&random[..17_000], small), (&[], small), (&random[..64 * 1024 + 1], default), (&random, flat), (&random, near), (&text, near)];
        for at_end in [true, false] {
            let inputs: Vec<(&[u8], ChunkParams, bool)> = cases.iter().map(|&(d, p)| (d, p, at_end)).collect();
            for grid in [1, 7, 300] {
                for (i, ((d, p, _), (got, consumed))) in inputs.iter().zip(run(&inputs, grid)).enumerate() {
                    let want = chunk_digests(d, *p, Fingerprint::Blake3, at_end);
                    assert!(got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| g == w), "case {i} at_end {at_end} grid {grid}: {} chunks against the oracle's {}; first differing: {:?}", got.len(), want.len(), got.iter().zip(&want).position(|(g, w)| g != w));
                    assert_eq!(consumed, want.last().map_or(0, |&(o, l, _)| (o + l) as u64), "case {i}: consumed");
                }
            }
        }
    }

    #[test]
    fn a_plan_refuses_a_batch_past_32_bits() {
        let p = ChunkParams::default();
        let mut plan = CdcPlan::default();
        plan.add((0, 1 << 30), p, 0, true).unwrap();
        assert_eq!(plan.add((0, 1 << 40), p, 0, true), None);
        assert_eq!((plan.len(), plan.words.len(), plan.bitmap_words(), plan.slot_count()), (1, 2, 1 << 25, (1 << 30) / (16 << 10) + 1));
    }

    #[test]
    fn the_ptx_is_compiled_from_this_source() {
        crate::kernels::tests::ptx_is_compiled_from(PTX, include_bytes!("../kernels/dedup.cu"), "dedup", &["pp_cdc_bits", "pp_cdc_walk", "pp_blake3_chunks"]);
    }
}
