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
    assert!(stdout.contains("12 streams: 12 on 6 devices (0 legs through a host bounce buffer), 0 on the host CPU"), "{stdout}");
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
    // A topology file that cannot be read is a missing source (3), as in `topo` and `sim`.
    let out = plan(&["--file", "/nonexistent.toml", "--source", "a", "--target", "b"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("/nonexistent.toml"), "{}", text(&out.stderr));
}

/// `--devices ""` planned the CPU alone, as `cpu` does, without a word: a usage error now,
/// saying what the option takes; `cpu` still plans the CPU.
#[test]
fn an_empty_device_list_is_a_usage_error_saying_what_devices_takes() {
    let sys = fixture("fpga-cascade/sys");
    for devices in ["", " ", ",", " , "] {
        let out = plan(&["--sysfs", sys.to_str().unwrap(), "--source", "ssd0", "--target", "ssd1", "--devices", devices]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--devices {devices:?}: {stderr}");
        assert!(stderr.contains("--devices") && stderr.contains("it names no device") && stderr.contains("`auto`, `cpu`"), "{stderr}");
        assert!(out.stdout.is_empty(), "no plan: {}", text(&out.stdout));
    }
    let out = plan(&["--sysfs", sys.to_str().unwrap(), "--source", "ssd0", "--target", "ssd1", "--devices", "cpu"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 on the host CPU"), "{}", text(&out.stdout));
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

/// The GPU machine's sysfs (`fixtures/h100-gpu-host`, kept as the tarball it was captured in).
fn h100_sysfs() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let tgz = fixture("h100-gpu-host/sysfs.tgz");
    let ok = Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(dir.path()).status().unwrap().success();
    assert!(ok, "tar xzf {}", tgz.display());
    let sys = dir.path().join("sys").display().to_string();
    (dir, sys)
}

#[test]
fn the_h100_s_gpu_is_listed_with_bar1_link_and_verdict_and_named_it_takes_the_stream_staged() {
    let (_dir, sys) = h100_sysfs();
    let gpu_line = "GPU gpu0 (0000:00:06.0): NVIDIA 10de:2330 [nvidia], BAR1 128 GiB, x16 Gen5 32.0 GT/s";
    // auto: the GPU is shown, with its verdict, but the stream stays on the CPU
    let out = plan(&["--sysfs", &sys, "--source", "vda", "--target", "vdb"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains(gpu_line), "{stdout}");
    assert!(stdout.contains("storage -> GPU memory: staged through pinned host memory"), "{stdout}");
    assert!(stdout.contains("not used: gpu0 (0000:00:06.0)") && stdout.contains("--devices gpu0"), "{stdout}");
    assert!(stdout.contains("1 on the host CPU"), "{stdout}");
    // --devices gpu0 and --devices <its address>: the same plan, on the GPU, both legs staged
    let by_name = plan(&["--sysfs", &sys, "--source", "vda", "--target", "vdb", "--devices", "gpu0"]);
    let by_address = plan(&["--sysfs", &sys, "--source", "vda", "--target", "vdb", "--devices", "0000:00:06.0"]);
    assert!(by_name.status.success(), "{}", text(&by_name.stderr));
    assert_eq!(text(&by_name.stdout), text(&by_address.stdout));
    let stdout = text(&by_name.stdout);
    assert!(stdout.starts_with("1 stream: 1 on 1 device (0 legs through a host bounce buffer, 2 staged through pinned host memory), 0 on the host CPU"), "{stdout}");
    let group = stdout.lines().find(|l| l.starts_with("gpu0 ")).unwrap_or_else(|| panic!("{stdout}"));
    let cells: Vec<&str> = group.split_whitespace().collect();
    // one NUMA node (node0, CPUs 0-15): every device's numa_node -1 is that node
    assert_eq!(cells, ["gpu0", "0000:00:06.0", "0", "vda", "vdb", "1", "0", "2"], "{group}");
    let stream = stdout.lines().find(|l| l.starts_with("0 ")).unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(stream.matches("staged node 0 (nvfs?)").count(), 2, "{stream}");
    assert!(stdout.contains(gpu_line), "{stdout}");
    let out = plan(&["--sysfs", &sys, "--source", "vda", "--target", "vdb", "--devices", "gpu0", "--explain"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("vda -> vdb: gpu0"), "{stdout}");
    assert!(stdout.contains("staged through pinned host memory on NUMA node 0 (host memory is touched)"), "{stdout}");
    assert!(!stdout.contains("unknown NUMA node"), "{stdout}");
    // a GPU that is not there: a topology error
    let out = plan(&["--sysfs", &sys, "--source", "vda", "--target", "vdb", "--devices", "gpu1"]);
    assert_eq!(out.status.code(), Some(13));
    assert!(text(&out.stderr).contains("\"gpu1\""), "{}", text(&out.stderr));
}

#[test]
fn the_h100_s_gpu_in_plan_json_and_its_fields_documented_in_the_schema() {
    let (_dir, sys) = h100_sysfs();
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/plan.schema.json")).unwrap()).unwrap();
    let documented = |path: &[&str], v: &serde_json::Value| {
        let mut s = &schema;
        for p in path {
            s = if *p == "[]" { &s["items"] } else { &s["properties"][p] };
        }
        for k in v.as_object().expect("an object").keys() {
            assert!(s["properties"].get(k).is_some(), "plan.schema.json does not document {}.{k}", path.join("."));
        }
    };
    // topo --json's gpu_memory, documented in topology.schema.json as plan's GPU is in plan.schema.json
    let out = Command::new(env!("CARGO_BIN_EXE_peerpath")).args(["topo", "--sysfs", &sys, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let topo_schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/topology.schema.json")).unwrap()).unwrap();
    let m = &v["gpu_memory"][0];
    assert_eq!((&m["name"], &m["aperture_bytes"]), (&"gpu0".into(), &(128u64 << 30).into()), "{m}");
    let items = &topo_schema["properties"]["gpu_memory"]["items"];
    for (obj, s) in [(m, items), (&m["reasons"][0], &items["properties"]["reasons"]["items"])] {
        for k in obj.as_object().unwrap().keys() {
            assert!(s["properties"].get(k).is_some(), "topology.schema.json does not document gpu_memory's {k}");
        }
    }
    for devices in [None, Some("gpu0"), Some("0000:00:06.0")] {
        let mut args = vec!["--sysfs", sys.as_str(), "--source", "vda", "--target", "vdb", "--json"];
        args.extend(devices.iter().flat_map(|d| ["--devices", d]));
        let out = plan(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        let d = &v["devices"][0];
        assert_eq!((&d["name"], &d["bdf"], &d["kind"]), (&"gpu0".into(), &"0000:00:06.0".into(), &"gpu".into()), "{d}");
        let g = &d["gpu"];
        assert_eq!(g["aperture_bytes"], 128u64 << 30, "{g}");
        assert_eq!(g["aperture_bar"], 1, "{g}");
        assert_eq!((&g["link_width"], &g["link_generation"], &g["link_speed"]), (&16.into(), &5.into(), &"32.0 GT/s".into()), "{g}");
        assert_eq!(g["direct"], false);
        assert_eq!(g["data_path"], "staged");
        assert!(g["reasons"].as_array().unwrap().iter().any(|r| r["reason"] == "modules_unknown" && r["remedy"].is_string()), "{g}");
        documented(&["devices", "[]"], d);
        documented(&["devices", "[]", "gpu"], g);
        documented(&["devices", "[]", "gpu", "reasons", "[]"], &g["reasons"][1]);
        let s = &v["streams"][0];
        match devices {
            None => {
                assert_eq!(d["usable"], false);
                assert_eq!(s["executor"]["kind"], "cpu", "{s}");
                assert_eq!(s["read"]["path"], "host", "{s}");
            }
            Some(_) => {
                assert_eq!(d["usable"], true);
                assert_eq!(s["executor"]["name"], "gpu0", "{s}");
                for leg in ["read", "write"] {
                    assert_eq!(s[leg]["path"], "staged", "{s}");
                    assert_eq!(s[leg]["why"]["code"], "nvfs?", "{s}");
                    documented(&["streams", "[]", leg], &s[leg]);
                    documented(&["streams", "[]", leg, "why"], &s[leg]["why"]);
                }
                assert_eq!(v["groups"][0]["host_legs"], 2);
            }
        }
    }
}

/// `--devices csp0,csp0` planned on csp0 once, without a word (a slip for `csp0,csp1`): refused
/// as a usage error naming it (exit 2); two names of one device (its label and its address)
/// are refused by the planner, naming both (exit 13, as an unknown name is).
#[test]
fn a_device_named_twice_is_refused() {
    let f = fixture("epyc-case-study/topology.toml");
    let f = f.to_str().unwrap();
    let out = plan(&["--file", f, "--source", "ssd0", "--target", "ssd1", "--devices", "csp0,csp1,csp0"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}{}", text(&out.stdout));
    assert!(err.contains("names csp0 twice"), "{err}");
    let out = plan(&["--file", f, "--source", "ssd0", "--target", "ssd1", "--devices", "csp0,0000:01:00.0"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(13), "{err}{}", text(&out.stdout));
    assert!(err.contains("0000:01:00.0 twice (csp0 and 0000:01:00.0)"), "{err}");
    let out = plan(&["--file", f, "--source", "ssd0", "--target", "ssd1", "--devices", "csp0,cpu"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Sources and targets are storage the job reads and writes: the H100's GPU (by address or as
/// `gpu0`) and its NIC were accepted and planned as disks on the CPU path; now refused like a
/// bridge, in one line naming the device and its class, exit 13 (a device in the wrong role).
#[test]
fn a_gpu_or_a_nic_as_source_or_target_is_refused_like_a_bridge() {
    let (_dir, sys) = h100_sysfs();
    for (dev, what) in [("0000:00:06.0", "a GPU (0000:00:06.0, class 0x030200), not storage"), ("gpu0", "a GPU (0000:00:06.0, class 0x030200)"), ("0000:00:03.0", "a NIC (0000:00:03.0, class 0x020000), not storage"), ("0000:00:00.0", "a host bridge (0000:00:00.0, class 0x060000)")] {
        for args in [["--source", dev, "--target", "vdb"], ["--source", "vda", "--target", dev]] {
            let out = plan(&[&["--sysfs", sys.as_str()][..], &args[..]].concat());
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(13), "{dev}: {stderr}");
            assert!(out.stdout.is_empty(), "{dev}: no plan printed");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.starts_with(&format!("peerpath: error: {dev} is {what}")), "{stderr}");
        }
    }
    let out = plan(&["--sysfs", &sys, "--source", "gpu0", "--target", "vdb"]);
    assert!(text(&out.stderr).contains("to compute on it, name it in --devices (gpu0)"), "{}", text(&out.stderr));
}
