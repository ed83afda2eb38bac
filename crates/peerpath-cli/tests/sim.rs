//! `peerpath sim`: reproduce, a plain run, a sweep with its SVG, plan, and refusals.

use std::path::PathBuf;
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
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--vary", "csp=1..8", "--svg"]).arg(&svg).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8(out.stdout).unwrap().contains("<- moves"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    let out = peerpath().args(["sim", "plan", "--file"]).arg(&f).args(["--target", "100"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("proposal: 4 csp(s)"));
}

#[test]
fn refusals_have_their_exit_codes() {
    let f = fixture("fpga-cascade");
    // No CSP on the cascade: the job cannot run (usage class, 2).
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--job", "compress-p2p"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CSP"));
    let out = peerpath().args(["sim", "--file", "/nonexistent.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(13));
    let out = peerpath().args(["sim", "--file"]).arg(&f).args(["--vary", "volts=1..2"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
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
