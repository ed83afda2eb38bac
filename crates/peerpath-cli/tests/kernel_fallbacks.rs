//! The fallbacks the kernel forces, provoked for real rather than by flags:
//! io_uring refused by a seccomp filter, and a file system (ramfs) that
//! refuses O_DIRECT. Each must still produce correct output and say, in the
//! report, which path ran and why.

mod common;

use common::*;
use std::os::unix::process::CommandExt;

/// Installs, in the child before exec, a seccomp filter that makes
/// io_uring_setup fail with EPERM (what a container runtime's default
/// profile or `kernel.io_uring_disabled` does).
#[cfg(target_arch = "x86_64")]
fn deny_io_uring(cmd: &mut std::process::Command) {
    // SAFETY: pre_exec runs in the forked child before exec; it only calls
    // prctl with a filter that lives on this stack frame until the call returns.
    unsafe {
        cmd.pre_exec(|| {
            const BPF_LD_W_ABS: u16 = 0x20;
            const BPF_JEQ_K: u16 = 0x15;
            const BPF_RET_K: u16 = 0x06;
            const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
            const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
            let filter = [
                libc::sock_filter { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: 0 }, // seccomp_data.nr
                libc::sock_filter { code: BPF_JEQ_K, jt: 0, jf: 1, k: libc::SYS_io_uring_setup as u32 },
                libc::sock_filter { code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ERRNO | libc::EPERM as u32 },
                libc::sock_filter { code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW },
            ];
            let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut libc::sock_filter };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn io_uring_refused_by_seccomp_falls_back_to_syscalls_and_says_why() {
    let dir = scratch();
    let src = dir.path().join("protein.fasta");
    std::fs::write(&src, sample()).unwrap();
    let gz = dir.path().join("protein.fasta.gz");
    let mut cmd = pp(args!["compress", &src, "-o", &gz, "--json"]);
    deny_io_uring(&mut cmd);
    let r = run(&mut cmd).ok().json();
    let f = &r["files"][0];
    assert_eq!(f["read_path"]["engine"], "syscalls", "{f}");
    assert_eq!(f["write_path"]["engine"], "syscalls", "{f}");
    let fallbacks = r["fallbacks"].as_array().unwrap();
    assert!(
        fallbacks.iter().any(|x| x.as_str().unwrap().contains("io_uring unavailable") && x.as_str().unwrap().contains("not permitted")),
        "the report names the refusal: {fallbacks:?}"
    );
    // The job itself is unaffected: same bytes back.
    let back = dir.path().join("back");
    let mut cmd = pp(args!["decompress", &gz, "-o", &back, "-q"]);
    deny_io_uring(&mut cmd);
    run(&mut cmd).ok();
    assert_file_eq(&back, sample(), "round trip without io_uring");
}

#[test]
fn ramfs_refuses_o_direct_and_the_report_says_so() {
    let Some(fs) = TmpfsMount::mount("ramfs_refuses_o_direct_and_the_report_says_so", "ramfs", "mode=755") else { return };
    let src = fs.dir.join("protein.fasta");
    std::fs::write(&src, sample()).unwrap();
    let gz = fs.dir.join("protein.fasta.gz");
    let r = run(&mut pp(args!["compress", &src, "-o", &gz, "--json"])).ok().json();
    let f = &r["files"][0];
    assert_eq!(f["read_path"]["direct"], false, "{f}");
    assert_eq!(f["write_path"]["direct"], false, "{f}");
    assert!(f["read_path"]["fallback_reason"].as_str().unwrap().contains("refused O_DIRECT"), "{f}");
    assert!(f["write_path"]["fallback_reason"].as_str().unwrap().contains("refused O_DIRECT"), "{f}");
    let fallbacks = r["fallbacks"].as_array().unwrap();
    assert!(fallbacks.iter().any(|x| x.as_str().unwrap().contains("reads without O_DIRECT")), "{fallbacks:?}");
    assert!(fallbacks.iter().any(|x| x.as_str().unwrap().contains("writes without O_DIRECT")), "{fallbacks:?}");
    let back = fs.dir.join("back");
    run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, sample(), "round trip through the page cache");
    assert_dir_holds(&fs.dir, &["back", "protein.fasta", "protein.fasta.gz"]);
}

/// The `peerpath: FALLBACK:` lines of a run's standard error.
fn fallbacks_said(o: &Out) -> Vec<&str> {
    o.stderr.lines().filter(|l| l.starts_with("peerpath: FALLBACK: ")).collect()
}

/// Work a device was to do that fell to the host CPU is said on standard error, whatever becomes
/// of the report: compress, decompress and verify said it only in the report on standard output
/// (which a user redirects: `> report.txt`, `--json > r.json`) unless -q, where ec, encrypt,
/// scan and dedup always say theirs on stderr. Once: `--verbose` says it on its own, not twice.
#[test]
fn a_fallback_to_the_host_cpu_is_said_on_stderr_with_the_report_on_stdout() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s.fa");
    std::fs::write(&src, sample()).unwrap();
    // An emulated device that dies at once, on any machine; the report (JSON here) unchanged.
    let o = run(&mut pp(args!["compress", &src, "-o", d.join("e.gz"), "--engine", "emulated", "--device-memory", "64M", "--inject-faults", "crash-after=1", "--json"])).ok();
    let said = fallbacks_said(&o);
    assert!(said.len() == 1 && said[0].contains("failed (") && said[0].contains("the host CPU compressed"), "{}", o.stderr);
    let reported = o.json()["fallbacks"].to_string();
    assert!(reported.contains(&said[0]["peerpath: FALLBACK: ".len()..]), "the report says the same: {reported}\n{}", o.stderr);
    let o = run(&mut pp(args!["compress", &src, "-o", d.join("v.gz"), "--engine", "emulated", "--device-memory", "64M", "--inject-faults", "crash-after=1", "-v"])).ok();
    assert!(fallbacks_said(&o).is_empty(), "--verbose says it once: {}", o.stderr);
    assert_eq!(o.stderr.lines().filter(|l| l.starts_with("peerpath: fallback: ") && l.contains("the host CPU compressed")).count(), 1, "{}", o.stderr);
    // --engine gpu where the GPU cannot start (no CUDA here): compress, decompress and verify.
    if run(&mut pp(["gpu", "probe", "--bytes", "1M", "--algorithm", "2", "--repeat", "1"])).code() == Some(0) {
        eprintln!("SKIPPED (the --engine gpu part): a GPU is present here");
        return;
    }
    let gz = d.join("g.gz");
    for cmd in [args!["compress", &src, "--engine", "gpu", "-o", &gz], args!["decompress", &gz, "--engine", "gpu", "-o", d.join("back")], args!["verify", &gz, "--engine", "gpu", "--json"]] {
        let o = run(&mut pp(cmd)).ok();
        let said = fallbacks_said(&o);
        assert!(said.len() == 1 && said[0].contains("GPU 0 did not start (") && said[0].contains("host CPU"), "{}", o.stderr);
        assert!(o.stdout_str().contains("did not start"), "the report still says it: {}", o.stdout_str());
    }
    assert_file_eq(&d.join("back"), sample(), "the host CPU's work");
}
