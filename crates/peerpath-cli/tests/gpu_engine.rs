//! `--engine gpu` where the GPU cannot be used: every problem found is said, in the report's
//! FALLBACK line and on standard error, or as the `--no-fallback` error (exit 15, nothing
//! written), as `gpu probe` says them. A --nvcomp (or $PEERPATH_NVCOMP) or $PEERPATH_CUFILE
//! that names no library was hidden behind "no CUDA driver" on a machine without a GPU; with
//! a GPU, the library named is the reason. Either way these tests run.

mod common;

use common::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A text file named as nvCOMP, and a real library of this machine marked as another's (the
/// loader calls that "No such file or directory"), each with the words that say why.
fn bad_libraries(dir: &Path) -> [(PathBuf, &'static str); 2] {
    let text = dir.join("libnvcomp.so.6");
    std::fs::write(&text, "not a library\n".repeat(10)).unwrap();
    let mut other = std::fs::read("/proc/self/exe").unwrap();
    other[18..20].copy_from_slice(&if std::env::consts::ARCH == "aarch64" { 62u16 } else { 183u16 }.to_le_bytes());
    let other_lib = dir.join("other-machine.so");
    std::fs::write(&other_lib, other).unwrap();
    [(text, "not a shared library (no ELF header"), (other_lib, "library, not one for this")]
}

/// `compress --engine gpu` with `extra` arguments and `env`, SRC to OUT in `d`.
fn compress(d: &Path, extra: &[OsString], env: &[(&str, &Path)]) -> Out {
    let mut c = pp(args!["compress", "--engine", "gpu", d.join("src"), "-o", d.join("out.gz")]);
    c.args(extra).env_remove("PEERPATH_NVCOMP").env_remove("PEERPATH_CUFILE");
    for (k, v) in env {
        c.env(k, v);
    }
    run(&mut c)
}

/// A --nvcomp or $PEERPATH_NVCOMP naming no nvCOMP library is said in the FALLBACK line and on
/// standard error (the CPU made the output), and as the --no-fallback error (nothing written).
#[test]
fn compress_on_a_gpu_says_a_named_nvcomp_that_does_not_load() {
    let d = scratch();
    std::fs::write(d.path().join("src"), mixed_data(300_000, 5)).unwrap();
    let libs = scratch();
    for (lib, why) in bad_libraries(libs.path()) {
        for (extra, env, how) in [(args!["--nvcomp", &lib], vec![], "--nvcomp"), (vec![], vec![("PEERPATH_NVCOMP", lib.as_path())], "$PEERPATH_NVCOMP")] {
            let said = format!("nvCOMP not loaded from {how} ({}: ", lib.display());
            let o = compress(d.path(), &extra, &env).ok();
            let fallback = o.stdout_str().lines().find(|l| l.trim_start().starts_with("FALLBACK")).map(str::to_string);
            let fallback = fallback.unwrap_or_else(|| panic!("no FALLBACK line:\n{}", o.describe()));
            let warned = o.stderr.lines().find(|l| l.starts_with("peerpath: FALLBACK: ")).unwrap_or_else(|| panic!("no FALLBACK on standard error:\n{}", o.describe()));
            for line in [fallback.as_str(), warned] {
                assert!(line.contains(&said) && line.contains(why), "{said:?}, {why:?} not in {line}");
            }
            assert_eq!(fallback.trim_start().trim_start_matches("FALLBACK").trim_start(), warned.trim_start_matches("peerpath: FALLBACK: "), "the same reason");
            std::fs::remove_file(d.path().join("out.gz")).unwrap();

            let mut nofb = extra.clone();
            nofb.push("--no-fallback".into());
            compress(d.path(), &nofb, &env).fails(15, &[&said, why, "(--no-fallback)"]);
            assert_dir_holds(d.path(), &["src"]);
        }
    }
}

/// A $PEERPATH_CUFILE naming no library is said where the GPU cannot open (cuFile was never
/// asked): `--gpu-io cufile --no-fallback` said "no CUDA driver" alone.
#[test]
fn compress_on_a_gpu_says_a_named_cufile_that_does_not_load() {
    let d = scratch();
    std::fs::write(d.path().join("src"), mixed_data(100_000, 6)).unwrap();
    let libs = scratch();
    let o = compress(d.path(), &args!["--gpu-io", "cufile", "--no-fallback"], &[("PEERPATH_CUFILE", libs.path())]);
    o.fails(15, &[&libs.path().display().to_string(), "a directory, not a shared library"]);
    assert_dir_holds(d.path(), &["src"]);
}

/// decompress and verify --engine gpu say a --nvcomp that does not load too, with the GPU's
/// reason where there is one (they said "no CUDA driver" alone); --no-fallback writes nothing.
#[test]
fn decompress_and_verify_on_a_gpu_say_a_named_nvcomp_that_does_not_load() {
    let d = scratch();
    std::fs::write(d.path().join("src"), mixed_data(300_000, 7)).unwrap();
    run(&mut pp(args!["compress", d.path().join("src"), "-o", d.path().join("x.gz")])).ok();
    let libs = scratch();
    for (lib, why) in bad_libraries(libs.path()) {
        let said = format!("nvCOMP not loaded from --nvcomp ({}: ", lib.display());
        for verb in ["decompress", "verify"] {
            let mut a = args![verb, "--engine", "gpu", "--nvcomp", &lib, d.path().join("x.gz")];
            if verb == "decompress" {
                a.extend(args!["-o", d.path().join("y")]);
            }
            let o = run(pp(a.clone()).env_remove("PEERPATH_NVCOMP")).ok();
            let warned = o.stderr.lines().find(|l| l.starts_with("peerpath: FALLBACK: ")).unwrap_or_else(|| panic!("no FALLBACK on standard error:\n{}", o.describe()));
            assert!(warned.contains(&said) && warned.contains(why), "{said:?}, {why:?} not in {warned}");
            let _ = std::fs::remove_file(d.path().join("y"));
            a.push("--no-fallback".into());
            run(pp(a).env_remove("PEERPATH_NVCOMP")).fails(15, &[&said, why]);
            assert_dir_holds(d.path(), &["src", "x.gz"]);
        }
    }
}
