//! `peerpath gpu probe` where the GPU, CUDA's driver or nvCOMP is missing (as on the machines
//! the tests run on): each thing missing, and each library named that does not load, is said
//! on one line with what to do (exit 15, the same reason in the `gpu-unavailable` JSON), never
//! a crash. Where a GPU and nvCOMP are here, the probe runs instead and these tests skip.

mod common;

use common::*;
use std::path::Path;

/// `gpu probe` with `args` and `env`; `None` (said) where the probe ran: a GPU is here.
fn unavailable(args: &[&std::ffi::OsStr], env: &[(&str, &Path)]) -> Option<(Out, serde_json::Value)> {
    let mut c = pp(["gpu", "probe", "--bytes", "1M", "--repeat", "1", "--json"]);
    c.args(args).env_remove("PEERPATH_NVCOMP").env_remove("PEERPATH_CUFILE");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = run(&mut c);
    if o.code() == Some(0) {
        eprintln!("SKIPPED: the probe ran: a GPU and nvCOMP are here");
        return None;
    }
    assert_eq!(o.code(), Some(15), "{}", o.describe());
    assert!(!o.stderr.contains("panicked"), "{}", o.describe());
    assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
    let v = o.json();
    assert_eq!((v["schema"].as_str(), v["available"].as_bool()), (Some("peerpath/gpu-unavailable/1"), Some(false)), "{v}");
    assert_eq!(o.stderr.trim_end(), format!("peerpath: error: GPU unavailable: {}", v["reason"].as_str().unwrap()), "the JSON says the same");
    Some((o, v))
}

/// A --nvcomp or $PEERPATH_NVCOMP that names no nvCOMP library is said, and why, even where
/// there is no GPU (it was never asked: "no CUDA driver" alone); a missing driver says how to
/// get one.
#[test]
fn a_named_nvcomp_that_does_not_load_is_said_with_why() {
    let d = scratch();
    let text = d.path().join("libnvcomp.so.6");
    std::fs::write(&text, "not a library\n".repeat(10)).unwrap();
    // A real library of this machine, marked as another's (the loader calls it "No such file").
    let mut arm = std::fs::read("/proc/self/exe").unwrap();
    arm[18..20].copy_from_slice(&if std::env::consts::ARCH == "aarch64" { 62u16 } else { 183u16 }.to_le_bytes());
    let arm_lib = d.path().join("arm.so");
    std::fs::write(&arm_lib, arm).unwrap();
    let missing = d.path().join("missing.so");
    for (lib, why) in [
        (missing.as_path(), "No such file or directory"),
        (d.path(), "a directory, not a shared library"),
        (text.as_path(), "not a shared library (no ELF header"),
        (arm_lib.as_path(), "library, not one for this"),
        (Path::new("/bin/true"), "/bin/true"),
    ] {
        for (args, env, how) in [(vec![os("--nvcomp"), os(lib)], vec![], "--nvcomp"), (vec![], vec![("PEERPATH_NVCOMP", lib)], "$PEERPATH_NVCOMP")] {
            let argv: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            let Some((o, v)) = unavailable(&argv, &env) else { return };
            for needle in [&format!("nvCOMP not loaded from {how} ("), why, "pip install nvidia-libnvcomp-cu13"] {
                assert!(o.stderr.contains(needle), "{needle:?} not in {}", o.stderr);
            }
            if v["stage"] == "gpu" {
                assert!(o.stderr.contains("install NVIDIA's GPU driver"), "{}", o.stderr);
            }
        }
    }
    // A --cufile that names no library is said too, where the probe never reaches cuFile.
    let Some((o, _)) = unavailable(&[os("--cufile").as_os_str(), d.path().as_os_str()], &[]) else { return };
    assert!(o.stderr.contains("cuFile not loaded from --cufile (") && o.stderr.contains("a directory"), "{}", o.stderr);
}

/// A library named libcuda.so.1 on the loader's path that is not CUDA's driver crashed the
/// probe (cudarc's loader panicked, exit 101); it is said as a reason, exit 15.
#[test]
fn a_libcuda_that_is_not_the_driver_is_said_not_a_crash() {
    let Some(libz) = ["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib/aarch64-linux-gnu/libz.so.1", "/usr/lib64/libz.so.1"].iter().map(Path::new).find(|p| p.exists()) else {
        eprintln!("SKIPPED: no libz.so.1 to stand in for libcuda.so.1");
        return;
    };
    let d = scratch();
    std::fs::copy(libz, d.path().join("libcuda.so.1")).unwrap();
    let Some((o, v)) = unavailable(&[], &[("LD_LIBRARY_PATH", d.path())]) else { return };
    assert_eq!(v["stage"], "gpu", "{v}");
    assert!(o.stderr.contains("CUDA's driver library is not usable") && o.stderr.contains("install NVIDIA's GPU driver"), "{}", o.stderr);
}

/// An --input that cannot be read is said first (exit 3), not hidden behind "GPU unavailable".
#[test]
fn an_unreadable_input_is_said_before_the_gpu() {
    let d = scratch();
    let empty = d.path().join("empty");
    std::fs::write(&empty, "").unwrap();
    for (input, why) in [(d.path().join("missing"), "No such file"), (d.path().to_path_buf(), "Is a directory"), (empty, "it is empty")] {
        let o = run(&mut pp(args!["gpu", "probe", "--input", &input])).fails(3, &["--input", why]);
        assert!(!o.stderr.contains("GPU unavailable"), "{}", o.stderr);
    }
}

/// An option out of its range or naming no directory is a usage error (exit 2), said before
/// the GPU is asked: --algorithm 9 (nvCOMP has 0 to 5) waited for a GPU to fail.
#[test]
fn options_out_of_range_are_usage_errors_before_the_gpu() {
    let d = scratch();
    for args in [&["gpu", "probe", "--algorithm", "0,9"][..], &["gpu", "--algorithm=-1", "probe"]] {
        // clap's own words (its "error:", not peerpath's).
        let o = run(&mut pp(args));
        assert_eq!(o.code(), Some(2), "{}", o.describe());
        assert!(o.stderr.contains("for '--algorithm <ALGORITHM>'") && o.stderr.contains("is not in 0..=5"), "{}", o.describe());
    }
    let file = d.path().join("f");
    std::fs::write(&file, "x").unwrap();
    for dir in [d.path().join("missing"), file] {
        let o = run(&mut pp(args!["gpu", "probe", "--mapped-at", &dir])).fails(2, &["--mapped-at", "not a directory"]);
        assert!(!o.stderr.contains("GPU unavailable"), "{}", o.stderr);
    }
}
