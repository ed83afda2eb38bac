//! Byte counts in words, for reports and renderings (one place, so every
//! report writes sizes alike).

const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/// `n` in its largest binary unit at least 1: the value and the unit's index.
fn scaled(n: u64, units: usize) -> (f64, usize) {
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < units - 1 {
        v /= 1024.0;
        u += 1;
    }
    (v, u)
}

/// `512 MiB`, `1.5 GiB`, `4 KiB`, `100 B`: whole numbers without a fraction.
pub fn human_bytes(n: u64) -> String {
    match scaled(n, UNITS.len()) {
        (_, 0) => format!("{n} B"),
        (v, u) if (v - v.round()).abs() < 0.005 => format!("{} {}", v.round() as u64, UNITS[u]),
        (v, u) => format!("{v:.1} {}", UNITS[u]),
    }
}

/// `1.50 MiB (1572864 B)`: two decimals and the exact count, for job reports.
pub fn human_bytes_exact(n: u64) -> String {
    match scaled(n, UNITS.len() - 1) {
        (_, 0) => format!("{n} B"),
        (v, u) => format!("{v:.2} {} ({n} B)", UNITS[u]),
    }
}

/// `n` and `what`, plural where `n` is not 1, as the text reports count: "1 thread", "2 threads".
/// Here, at the bottom of the layers, for every crate's messages.
pub fn count<N: Copy + PartialEq + From<u8> + std::fmt::Display>(n: N, what: &str) -> String {
    format!("{n} {what}{}", if n == N::from(1) { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_counted_in_the_singular() {
        assert_eq!(count(1u64, "thread"), "1 thread");
        assert_eq!(count(0usize, "member"), "0 members");
        assert_eq!(count(2u32, "CUDA stream"), "2 CUDA streams");
    }

    #[test]
    fn sizes_read_as_reports_print_them() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(512 << 20), "512 MiB");
        assert_eq!(human_bytes(1 << 60), "1024 PiB");
        assert_eq!(human_bytes_exact(1023), "1023 B");
        assert_eq!(human_bytes_exact(1_572_864), "1.50 MiB (1572864 B)");
        assert_eq!(human_bytes_exact(1 << 50), "1024.00 TiB (1125899906842624 B)");
    }
}
