//! Reed-Solomon erasure coding over GF(2^8) with ISA-L's erasure-code
//! routines (the CPU oracle of the erasure-coding function): `k` data
//! shards and `m` parity shards of equal length; any `k` of the `k + m`
//! restore the rest. The encoding matrix is ISA-L's Cauchy matrix (every
//! k x k submatrix invertible, so any k survivors decode).
//!
//! The FFI is the five functions of ISA-L's `erasure_code.h` peerpath uses:
//! the `isal-sys` crate binds only igzip, though the library it builds
//! (and links) has them.

use std::ffi::c_int;

extern "C" {
    fn gf_gen_cauchy1_matrix(a: *mut u8, m: c_int, k: c_int);
    fn gf_invert_matrix(input: *mut u8, output: *mut u8, n: c_int) -> c_int;
    fn gf_mul(a: u8, b: u8) -> u8;
    fn ec_init_tables(k: c_int, rows: c_int, a: *mut u8, gftbls: *mut u8);
    fn ec_encode_data(len: c_int, k: c_int, rows: c_int, gftbls: *mut u8, data: *mut *mut u8, coding: *mut *mut u8);
}

/// The most shards a code may have (ISA-L's tables and GF(2^8) allow 255).
pub const MAX_SHARDS: usize = 255;

/// A Reed-Solomon code with `k` data and `m` parity shards.
#[derive(Clone, Debug)]
pub struct RsCode {
    k: usize,
    m: usize,
    /// The (k + m) x k encoding matrix: identity on top, Cauchy rows below.
    matrix: Vec<u8>,
    /// ISA-L's expanded tables for the parity rows.
    parity_tables: Vec<u8>,
}

impl RsCode {
    /// A code of `k` >= 1 data and `m` >= 1 parity shards, k + m <= 255.
    pub fn new(k: usize, m: usize) -> Result<RsCode, String> {
        if k == 0 || m == 0 || k.checked_add(m).is_none_or(|n| n > MAX_SHARDS) {
            let shards = |n: usize, what: &str| format!("{n} {what} shard{}", if n == 1 { "" } else { "s" });
            return Err(format!("{} and {}: need at least 1 of each and at most {MAX_SHARDS} in all", shards(k, "data"), shards(m, "parity")));
        }
        let n = k + m;
        let mut matrix = vec![0u8; n * k];
        // SAFETY: ISA-L writes n x k bytes into `matrix`, which has them.
        unsafe { gf_gen_cauchy1_matrix(matrix.as_mut_ptr(), n as c_int, k as c_int) };
        let mut parity_tables = vec![0u8; 32 * k * m];
        // SAFETY: reads the m x k parity rows (inside `matrix`), writes 32 * k * m bytes of tables.
        unsafe { ec_init_tables(k as c_int, m as c_int, matrix[k * k..].as_mut_ptr(), parity_tables.as_mut_ptr()) };
        Ok(RsCode { k, m, matrix, parity_tables })
    }

    pub fn data_shards(&self) -> usize {
        self.k
    }
    pub fn parity_shards(&self) -> usize {
        self.m
    }

    /// The parity rows of the encoding matrix (m x k, row-major): parity
    /// shard r is the sum over j of `rows[r * k + j]` times data shard j in
    /// GF(2^8), for devices that code with their own kernels.
    pub fn parity_rows(&self) -> &[u8] {
        &self.matrix[self.k * self.k..]
    }

    /// Computes the `m` parity shards of `data` (`k` shards, all of one length).
    pub fn encode(&self, data: &[&[u8]], parity: &mut [&mut [u8]]) {
        assert_eq!(data.len(), self.k, "k data shards");
        assert_eq!(parity.len(), self.m, "m parity shards");
        let len = data[0].len();
        assert!(data.iter().all(|d| d.len() == len) && parity.iter().all(|p| p.len() == len), "shards of one length");
        assert!(len <= c_int::MAX as usize, "a shard over 2 GiB");
        let mut inputs: Vec<*mut u8> = data.iter().map(|d| d.as_ptr() as *mut u8).collect();
        let mut outputs: Vec<*mut u8> = parity.iter_mut().map(|p| p.as_mut_ptr()).collect();
        let mut tables = self.parity_tables.clone();
        // SAFETY: `inputs` are k readable shards and `outputs` m writable ones, each `len`
        // bytes (checked above); ISA-L only reads the inputs (the pointer type is not const
        // in its header) and writes the outputs; the tables are 32 * k * m bytes.
        unsafe { ec_encode_data(len as c_int, self.k as c_int, self.m as c_int, tables.as_mut_ptr(), inputs.as_mut_ptr(), outputs.as_mut_ptr()) };
    }

    /// Rebuilds the shards `missing` (indices 0..k+m) from `k` survivors
    /// (`survivors[i]` = (index, bytes), distinct, not missing) into `out`
    /// (one buffer per missing shard, in the order of `missing`).
    pub fn reconstruct(&self, survivors: &[(usize, &[u8])], missing: &[usize], out: &mut [&mut [u8]]) -> Result<(), String> {
        let k = self.k;
        if survivors.len() < k {
            return Err(format!("{} shards survive; {k} are needed", survivors.len()));
        }
        let survivors = &survivors[..k];
        let decoder = self.decoder(&survivors.iter().map(|s| s.0).collect::<Vec<_>>(), missing)?;
        decoder.decode(&survivors.iter().map(|s| s.1).collect::<Vec<_>>(), out);
        Ok(())
    }

    /// The decoder that rebuilds the shards `missing` (indices 0..k+m) from
    /// the first `k` of `survivors` (distinct indices, none missing): the
    /// matrix inversion and ISA-L's tables, made once for every stripe that
    /// lost the same shards.
    pub fn decoder(&self, survivors: &[usize], missing: &[usize]) -> Result<Decoder, String> {
        let (k, n) = (self.k, self.k + self.m);
        if survivors.len() < k {
            return Err(format!("{} shards survive; {k} are needed", survivors.len()));
        }
        let survivors = &survivors[..k];
        assert!(survivors.iter().chain(missing).all(|&i| i < n) && missing.len() <= self.m);
        // The k x k rows of the survivors, inverted: data = inverse x survivors.
        let mut b = Vec::with_capacity(k * k);
        for &i in survivors {
            b.extend_from_slice(&self.matrix[i * k..(i + 1) * k]);
        }
        let mut inverse = vec![0u8; k * k];
        // SAFETY: both buffers are k x k bytes.
        if unsafe { gf_invert_matrix(b.as_mut_ptr(), inverse.as_mut_ptr(), k as c_int) } != 0 {
            return Err("the surviving shards' rows are not invertible".into());
        }
        // Each missing shard's row over the survivors: a data shard's is its inverse row;
        // a parity shard's is its encoding row times the inverse.
        let mut rows = Vec::with_capacity(missing.len() * k);
        for &j in missing {
            if j < k {
                rows.extend_from_slice(&inverse[j * k..(j + 1) * k]);
            } else {
                let e = &self.matrix[j * k..(j + 1) * k];
                for c in 0..k {
                    // SAFETY: gf_mul is a pure function of two bytes.
                    rows.push((0..k).fold(0u8, |acc, t| acc ^ unsafe { gf_mul(e[t], inverse[t * k + c]) }));
                }
            }
        }
        let mut tables = vec![0u8; 32 * k * missing.len()];
        // SAFETY: `rows` holds missing.len() x k bytes; the tables 32 x k x missing.len().
        unsafe { ec_init_tables(k as c_int, missing.len() as c_int, rows.as_mut_ptr(), tables.as_mut_ptr()) };
        Ok(Decoder { k, rows: missing.len(), coefficients: rows, tables })
    }
}

/// Rebuilds a fixed set of lost shards from a fixed set of survivors
/// (`RsCode::decoder`).
#[derive(Clone, Debug)]
pub struct Decoder {
    k: usize,
    rows: usize,
    /// Each lost shard's row over the survivors (rows x k, row-major).
    coefficients: Vec<u8>,
    tables: Vec<u8>,
}

impl Decoder {
    /// Each lost shard's row over the survivors (lost x k, row-major, in the
    /// order they were named), for devices that code with their own kernels.
    pub fn coefficients(&self) -> &[u8] {
        &self.coefficients
    }

    /// Rebuilds the lost shards into `out` (in the order they were named)
    /// from the survivors' bytes (`k` of one length, in the order named).
    pub fn decode(&self, survivors: &[&[u8]], out: &mut [&mut [u8]]) {
        let len = survivors.first().map_or(0, |s| s.len());
        assert!(survivors.len() == self.k && out.len() == self.rows, "k survivors and one output per lost shard");
        assert!(survivors.iter().all(|s| s.len() == len) && out.iter().all(|o| o.len() == len), "shards of one length");
        if self.rows == 0 {
            return;
        }
        // Coded in slices whose inputs and outputs together fit a core's L2
        // (as `ec encode` codes its stripes): one pass over 1 MiB units ran at
        // 79 % of ISA-L's own decode benchmark (bench/results/2026-11-26-ec-2cpu).
        let slice = coding_slice_bytes(self.k + self.rows).min(len.max(1));
        let mut tables = self.tables.clone();
        for at in (0..len).step_by(slice) {
            let n = slice.min(len - at);
            let mut inputs: Vec<*mut u8> = survivors.iter().map(|s| s[at..].as_ptr() as *mut u8).collect();
            let mut outputs: Vec<*mut u8> = out.iter_mut().map(|o| o[at..].as_mut_ptr()).collect();
            // SAFETY: k readable survivors and `rows` writable outputs, each with at least
            // `n` bytes from these pointers (`at + n <= len`, lengths checked above); ISA-L
            // reads the inputs and writes the outputs only; the tables are 32 * k * rows bytes.
            unsafe { ec_encode_data(n as c_int, self.k as c_int, self.rows as c_int, tables.as_mut_ptr(), inputs.as_mut_ptr(), outputs.as_mut_ptr()) };
        }
    }
}

/// Bytes of each of `units` coded at a time so that they fit in 512 KiB (a
/// core's L2 with room to spare): a multiple of 4 KiB, at least 4 KiB.
pub fn coding_slice_bytes(units: usize) -> usize {
    ((512 << 10) / units.max(1) / 4096 * 4096).max(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shard counts whose sum does not fit are refused (k + m overflowed: a panic in debug
    /// builds, a capacity overflow in release; found through a manifest by fuzz/ec_manifest).
    #[test]
    fn shard_counts_whose_sum_overflows_are_refused() {
        assert!(RsCode::new(usize::MAX, 2).is_err());
        assert!(RsCode::new(2, usize::MAX).is_err());
        assert!(RsCode::new(4, 2).is_ok());
    }

    fn shards(k: usize, len: usize, seed: u64) -> Vec<Vec<u8>> {
        let mut x = seed | 1;
        (0..k)
            .map(|_| {
                (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect()
            })
            .collect()
    }

    /// Any m lost shards (data or parity) come back byte for byte from any k survivors.
    #[test]
    fn any_k_of_k_plus_m_restore_the_rest() {
        // One slice, and several with a short last one (4 KiB + 3 and 300,001 bytes; a
        // slice of RS(4,2) is 84 KiB).
        for (k, m, len) in [(1, 1, 4096 + 3), (4, 2, 4096 + 3), (4, 2, 300_001), (6, 3, 4096 + 3), (10, 4, 300_001)] {
            let code = RsCode::new(k, m).unwrap();
            let data = shards(k, len, (k * 31 + m) as u64);
            let mut parity = vec![vec![0u8; data[0].len()]; m];
            {
                let d: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
                let mut p: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
                code.encode(&d, &mut p);
            }
            let all: Vec<&Vec<u8>> = data.iter().chain(parity.iter()).collect();
            // Lose the first m, the last m, and every other shard up to m.
            let losses: Vec<Vec<usize>> = vec![(0..m).collect(), (k..k + m).collect(), (0..k + m).step_by(2).take(m).collect()];
            for lost in losses {
                let survivors: Vec<(usize, &[u8])> = (0..k + m).filter(|i| !lost.contains(i)).map(|i| (i, all[i].as_slice())).collect();
                let mut out = vec![vec![0u8; data[0].len()]; lost.len()];
                let mut o: Vec<&mut [u8]> = out.iter_mut().map(Vec::as_mut_slice).collect();
                code.reconstruct(&survivors, &lost, &mut o).unwrap();
                for (j, got) in lost.iter().zip(&out) {
                    assert_eq!(got, all[*j], "RS({k},{m}): shard {j} restored");
                }
            }
            // Too few survivors is an error, not a guess.
            let few: Vec<(usize, &[u8])> = (0..k - 1).map(|i| (i, all[i].as_slice())).collect();
            let mut out = [vec![0u8; data[0].len()]];
            let mut o: Vec<&mut [u8]> = out.iter_mut().map(Vec::as_mut_slice).collect();
            assert!(code.reconstruct(&few, &[k - 1], &mut o).is_err());
        }
        assert!(RsCode::new(0, 2).is_err() && RsCode::new(200, 56).is_err());
    }
}
