//! `peerpath plan` as a user runs it: the tables, --explain, --json, and exit code 13 for
//! topology errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures").join(name)
}

fn plan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_peerpath")).arg("plan").args(args).output().expect("runs peerpath")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn case_study_grouping_from_the_committed_tree() {
    let sys = fixture("epyc-case-study/sys");
    let out = plan(&[
        "--sysfs",
        sys.to_str().unwrap(),
        "--source",
        "ssd0,ssd1,ssd2,ssd3,ssd4,ssd5,ssd9,ssd10,ssd11,ssd12,ssd13,ssd14",
        "--target",
        "ssd6",
        "ssd7",
        "ssd8",
        "ssd15",
        "ssd16",
        "ssd17",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("12 stream(s): 12 on 6 device(s) (0 leg(s) through a host bounce buffer), 0 on the host CPU"), "{stdout}");
    for (csp, srcs, tgt) in [("csp0", "ssd0, ssd3", "ssd6"), ("csp5", "ssd11, ssd14", "ssd17")] {
        let row = stdout.lines().find(|l| l.starts_with(&format!("{csp} "))).unwrap_or_else(|| panic!("{stdout}"));
        assert!(row.contains(srcs) && row.contains(tgt), "{row}");
    }
}

#[test]
fn explain_from_a_topology_file_and_json() {
    let toml = fixture("intel-switch-acs/topology.toml");
    let out = plan(&["--file", toml.to_str().unwrap(), "--source", "ssd0", "ssd2", "--target", "ssd1", "--explain"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("bounce node 0 (acs)"), "{stdout}");
    assert!(stdout.contains("Streams: who serves each"), "{stdout}");
    assert!(stdout.contains("pci=disable_acs_redir=0000:02:03.0"), "{stdout}");

    let out = plan(&["--file", toml.to_str().unwrap(), "--source", "ssd0", "--target", "ssd1", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["groups"][0]["executor"]["name"], "csp0");
    assert_eq!(v["streams"][0]["read"]["path"], "bus_address");
}

#[test]
fn topology_errors_exit_13_usage_errors_exit_2() {
    let sys = fixture("fpga-cascade/sys");
    let out = plan(&["--sysfs", sys.to_str().unwrap(), "--source", "ssd99", "--target", "ssd1"]);
    assert_eq!(out.status.code(), Some(13));
    assert!(text(&out.stderr).contains("ssd99"), "{}", text(&out.stderr));
    let out = plan(&["--sysfs", sys.to_str().unwrap(), "--source", "ssd0", "--target", "ssd1", "--devices", "md9"]);
    assert_eq!(out.status.code(), Some(13));
    let out = plan(&["--sysfs", "/nonexistent-sysfs-root", "--source", "a", "--target", "b"]);
    assert_eq!(out.status.code(), Some(13));
    let out = plan(&["--source", "ssd0"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `topo --explain ... --json` carries each reason's words and its remedy,
/// so a script can tell a user what to change (here: the kernel parameter
/// that clears ACS redirect on the bridge above ssd2).
#[test]
fn explain_json_carries_each_reason_s_text_and_remedy() {
    let toml = fixture("intel-switch-acs/topology.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_peerpath"))
        .args(["topo", "--file", toml.to_str().unwrap(), "--explain", "csp0", "ssd2", "--json"])
        .output()
        .expect("runs peerpath");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let reasons = v["reasons"].as_array().expect("reasons");
    let acs = reasons.iter().find(|r| r["reason"] == "acs_redirect").expect("the ACS reason");
    assert!(acs["text"].as_str().is_some_and(|t| t.contains("0000:02:03.0")), "{acs}");
    assert!(acs["remedy"].as_str().is_some_and(|t| t.contains("pci=disable_acs_redir=0000:02:03.0")), "{acs}");
    assert!(acs["severity"].is_string(), "{acs}");
}
