//! `peerpath sim`: reproduce, a plain run, a sweep with its SVG, plan, and refusals.

mod common;
use common::{assert_dir_holds, TmpfsMount};

use std::path::{Path, PathBuf};
use std::process::Command;

fn peerpath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_peerpath"))
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures").join(name).join("topology.toml")
}

#[test]
fn reproduce_prints_published_and_simulated_side_by_side() {
    let out = peerpath().args(["sim", "reproduce"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("simulated") && text.contains("159 Gb/s") && text.contains("NOT reproduced"), "{text}");
    let out = peerpath().args(["sim", "reproduce", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["label"], "simulated");
}

#[test]
fn a_run_a_sweep_and_a_plan() {
    let f = fixture("epyc-case-study");
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--job", "compress-p2p", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["label"], "simulated");
    assert!(v["bottleneck"].as_str().unwrap().contains("at 100%"));

    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("csp.svg");
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--vary", "csp=1..20", "--svg"]).arg(&svg).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().contains("<- moves"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    let out = peerpath().args(["sim", "plan", "--file"]).arg(&f).args(["--target", "100"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("proposal: 4 csps, "));
    // --vary and --svg were taken and ignored by plan (no plot written): refused.
    let plot = dir.path().join("plan.svg");
    let out = peerpath().args(["sim", "plan", "--file"]).arg(&f).args(["--target", "100", "--vary", "gen=5..5", "--svg"]).arg(&plot).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no --vary or --svg"));
    assert!(!plot.exists());
}

#[test]
fn refusals_have_their_exit_codes() {
    let f = fixture("fpga-cascade");
    // No CSP on the cascade: the job cannot run (usage class, 2).
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--job", "compress-p2p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CSP"));
    // A file the user names that cannot be read is a missing source (3); one that is read
    // and malformed is a topology error (13).
    let out = peerpath().args(["sim", "--file", "/nonexistent.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let out = peerpath().args(["sim", "--file", "/"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bad.path(), "this is not TOML {{{").unwrap();
    let out = peerpath().args(["sim", "--file"]).arg(bad.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(13), "{}", String::from_utf8_lossy(&out.stderr));
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--vary", "volts=1..2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Too few SSDs because the catalog lacks the machine's: said which.
    let out = peerpath().args(["sim", "--file"]).arg(fixture("intel-switch-acs")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SSD 8086:0a54 not in the catalog"), "{}", String::from_utf8_lossy(&out.stderr));
    // A catalog or platform the user names that cannot be used is theirs to fix (2), not an
    // internal error (1); a catalog file that cannot be read is a missing source (3).
    for (bad, code) in [(&["--platform", "nope"][..], 2), (&["--catalog", bad.path().to_str().unwrap()][..], 2), (&["--catalog", "/nonexistent.toml"][..], 3)] {
        let out = peerpath().args(["sim", "--file"]).arg(&f).args(bad).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(bad[1]), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn chunk_latency_is_littles_law_on_the_slowest_flow_with_labelled_percentiles() {
    let f = fixture("epyc-case-study");
    let run = |qd: &str| -> serde_json::Value {
        let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--queue-depth", qd, "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for qd in [1u32, 8, 32] {
        let v = run(&qd.to_string());
        let l = &v["chunk_latency"];
        let slowest = v["flows"].as_array().unwrap().iter().map(|f| f["bytes_per_s"].as_f64().unwrap()).fold(f64::INFINITY, f64::min);
        let mean = l["mean_us"].as_f64().unwrap();
        let want = qd as f64 * l["chunk_bytes"].as_f64().unwrap() / slowest * 1e6;
        assert!((mean - want).abs() / want < 1e-9, "qd {qd}: {mean} vs {want}");
        let (p50, p99, p999) = (l["p50_us"].as_f64().unwrap(), l["p99_us"].as_f64().unwrap(), l["p999_us"].as_f64().unwrap());
        assert!(p50 < mean && mean < p99 && p99 < p999, "qd {qd}: {l}");
        assert!(l["assumption"].as_str().unwrap().contains("exponential"), "{l}");
    }
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--queue-depth", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

fn sim(args: &[&str]) -> std::process::Output {
    peerpath().arg("sim").args(args).output().unwrap()
}

fn refused(out: &std::process::Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "{needle}: {err}");
}

/// A ratio that describes no compressor (NaN, 0, tiny, negative, infinite: a throughput of 0 and
/// a job of a year), a queue depth beyond NVMe's 65536 (it ran for minutes), 0 threads or
/// devices are usage errors, each range said in --help.
#[test]
fn numbers_out_of_range_are_usage_errors_with_their_ranges_in_help() {
    let f = fixture("epyc-case-study");
    let f = f.to_str().unwrap();
    for r in ["NaN", "0", "1e-300", "-1", "inf", "0.49", "1033"] {
        refused(&sim(&["--file", f, &format!("--ratio={r}")]), "from 0.5 to 1032");
    }
    for qd in ["65537", "10000000"] {
        refused(&sim(&["--file", f, "--queue-depth", qd]), "from 1 to 65536");
    }
    for t in ["0", "8193"] {
        refused(&sim(&["--file", f, "--job", "compress-cpu", "--threads", t]), "from 1 to 8192");
    }
    refused(&sim(&["--file", f, "--csps", "0"]), "at least 1");
    refused(&sim(&["--file", f, "--ssds", "0"]), "at least 1");
    // Said before the topology is read.
    refused(&sim(&["--file", "/nonexistent.toml", "--ratio", "NaN"]), "ratio");
    for ok in [["--ratio", "0.5"], ["--ratio", "1032"], ["--queue-depth", "65536"]] {
        let out = sim(&["--file", f, ok[0], ok[1]]);
        assert!(out.status.success(), "{ok:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let help = String::from_utf8(sim(&["--help"]).stdout).unwrap();
    for range in ["0.5 to 1032", "1 to 65536", "1 to 8192", "1 or more"] {
        assert!(help.contains(range), "{range}: {help}");
    }
    let help = String::from_utf8(sim(&["plan", "--help"]).stdout).unwrap();
    assert!(help.contains("1 to 256") && help.contains("above 0"), "{help}");
}

/// `sim plan` read a NaN or infinite target as "not reachable" (exit 0) and --limit 0 as 1.
#[test]
fn a_plan_needs_a_finite_target_and_a_limit_of_one_or_more() {
    let f = fixture("epyc-case-study");
    let f = f.to_str().unwrap();
    for t in ["NaN", "inf", "0", "-5"] {
        refused(&sim(&["plan", "--file", f, &format!("--target={t}")]), "above 0");
    }
    for l in ["0", "257"] {
        refused(&sim(&["plan", "--file", f, "--target", "100", "--limit", l]), "from 1 to 256");
    }
    // CSPs proposed for a job that uses none (they changed nothing); SSDs are planned.
    for job in ["read", "compress-cpu", "write"] {
        refused(&sim(&["plan", "--file", f, "--target", "30", "--job", job]), "uses no CSP");
    }
    let o = sim(&["plan", "--file", f, "--target", "30", "--job", "read", "--add", "ssd"]);
    // One of a thing is said so ("1 ssd(s)", "1 SSD(s) reading").
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("proposal: 1 ssd, ") && text.contains("\n  1 SSD reading\n"), "{text}");
}

/// A mistyped function became an engine of unlimited throughput (exit 0); it is refused with the
/// functions the catalog knows, for a CSP, a GPU and a CPU job alike.
#[test]
fn an_unknown_function_is_refused_naming_the_known_ones() {
    let f = fixture("epyc-case-study");
    let f = f.to_str().unwrap();
    refused(&sim(&["--file", f, "--function", "nope"]), "compress-zlib-1");
    refused(&sim(&["--file", f, "--job", "compress-cpu", "--function", "nope"]), "compress-zlib-1");
    let g = fixture("h100-gpu-host");
    refused(&sim(&["--file", g.to_str().unwrap(), "--job", "compress-memory-gpu", "--function", "nope"]), "compress-nvcomp-gzip-2");
    // SSDs the catalog does not know are left out, and a job with none left says so (it said
    // "0 SSDs" of a machine with four); a platform whose cores are not modelled says that.
    let q = fixture("qemu-switch-cmb");
    refused(&sim(&["--file", q.to_str().unwrap(), "--job", "read"]), "nvme0: SSD 1b36:0010 not in the catalog: left out of the jobs");
    refused(&sim(&["--file", fixture("fpga-cascade").to_str().unwrap(), "--job", "compress-cpu"]), "it has none: its cores are not modelled");
}

/// A sweep's plot that cannot be written is exit 11 (as `topo --svg`; it was 2, a usage error),
/// and nothing is left behind: a missing directory, a directory as the target, a full disk.
#[test]
fn a_plot_that_cannot_be_written_is_exit_11_and_leaves_nothing() {
    let f = fixture("epyc-case-study");
    let dir = tempfile::tempdir().unwrap();
    let write = |svg: &Path| sim(&["--file", f.to_str().unwrap(), "--vary", "csp=1..4", "--svg", svg.to_str().unwrap()]);
    let cannot = |out: std::process::Output, svg: &Path| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(11), "{err}");
        assert!(err.contains("cannot write") && err.contains(&*svg.to_string_lossy()), "{err}");
    };
    let missing = dir.path().join("missing").join("x.svg");
    cannot(write(&missing), &missing);
    let target = dir.path().join("plot.svg");
    std::fs::create_dir(&target).unwrap();
    cannot(write(&target), &target);
    assert!(target.is_dir());
    assert_dir_holds(dir.path(), &["plot.svg"]);
    assert_dir_holds(&target, &[]);
    let Some(fs) = TmpfsMount::new("a_plot_that_cannot_be_written_is_exit_11", "4k") else { return };
    let svg = fs.dir.join("x.svg");
    std::fs::write(&svg, b"old picture").unwrap();
    cannot(write(&svg), &svg);
    assert_eq!(std::fs::read(&svg).unwrap(), b"old picture");
    assert_dir_holds(&fs.dir, &["x.svg"]);
}

/// An error said where standard error's reader has gone (`2>&1 >/dev/null | true`): the exit
/// code still says what failed (it was a panic, exit 101).
#[test]
fn an_error_with_nobody_reading_standard_error_keeps_its_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("w.toml");
    std::fs::write(&bad, "schema_version = \"one\"\n").unwrap();
    let mut child = peerpath().args(["sim", "--file"]).arg(&bad).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    drop(child.stderr.take()); // the reader goes before anything is written
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(13), "{status:?}");
}
