//! Generated sample data for probes and tests.

/// Protein-like text: 20 amino-acid letters in lines of 60, drawn from a
/// seeded generator (compresses about as protein FASTA does, and differs
/// in every block, so members are not repeats of each other).
pub fn protein_like(bytes: usize, seed: u64) -> Vec<u8> {
    let letters = b"ACDEFGHIKLMNPQRSTVWY";
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..bytes)
        .map(|i| {
            if i % 61 == 60 {
                return b'\n';
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            letters[(x % 11 + (x >> 40) % 9) as usize]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn samples_are_lines_of_letters_and_differ_by_seed() {
        let a = super::protein_like(1000, 1);
        assert_eq!(a.len(), 1000);
        assert_eq!(a[60], b'\n');
        assert!(a.iter().all(|&c| c == b'\n' || c.is_ascii_uppercase()));
        assert_ne!(a, super::protein_like(1000, 2));
        assert_eq!(a, super::protein_like(1000, 1));
    }
}
