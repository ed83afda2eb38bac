//! Defects found by adversarial use (issue 15): input that compresses to
//! almost nothing, signals mid-job, targets that appear or are shared,
//! names that are not UTF-8, private sources. Each test failed before its fix.

mod common;
use common::*;
use std::path::Path;

/// A sparse file of zeros: every chunk compresses to ~1 KiB, so no write is
/// in flight for most of the job. The job loop waited on I/O with nothing
/// in flight and hung (every run on the 2-core VM, 128 MiB).
#[test]
fn zero_filled_input_compresses_without_hanging_in_every_mode() {
    let dir = scratch();
    let src = dir.path().join("zeros.img");
    std::fs::File::create(&src).unwrap().set_len(128 << 20).unwrap();
    let modes: [&[&str]; 7] = [&[], &["--io", "sync"], &["--no-sync"], &["-T", "1"], &["--format", "bgzf"], &["--block-size", "64K"], &["--no-direct"]];
    for (k, extra) in modes.iter().enumerate() {
        let gz = dir.path().join(format!("zeros.{k}.gz"));
        let mut args = args!["compress", &src, "-o", &gz, "-q"];
        args.extend(extra.iter().map(std::ffi::OsString::from));
        run_full(&mut pp(args), None, HANG_DEADLINE).ok();
        let back = dir.path().join(format!("zeros.{k}.back"));
        run_full(&mut pp(args!["decompress", &gz, "-o", &back, "-q"]), None, HANG_DEADLINE).ok();
        let got = std::fs::read(&back).unwrap();
        assert_eq!(got.len(), 128 << 20, "{extra:?}: round trip length");
        assert!(got.iter().all(|&b| b == 0), "{extra:?}: round trip holds only zeros");
        std::fs::remove_file(&back).unwrap();
        assert_no_temporaries(dir.path());
    }
}

fn assert_no_temporaries(dir: &Path) {
    let names = names_in(dir);
    assert!(!names.iter().any(|n| n.contains(".peerpath-tmp.")), "temporary files left: {names:?}");
}
