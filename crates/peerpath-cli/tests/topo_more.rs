//! `peerpath topo` on a host with SR-IOV enabled (fixtures/sriov-host: 3 physical functions,
//! 128 virtual functions). The P2P matrix was one row and column per function, 131 x 131
//! cells and 100 KB of text; each virtual function is now shown in its physical function's row
//! and column (its path is its PF's), with the count and the answers within the group.

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn sriov_host() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/sriov-host/sys")
}

#[test]
fn topo_shows_virtual_functions_in_their_physical_functions_row_and_column() {
    let out = run(&mut pp(args!["topo", "--sysfs", sriov_host()])).ok();
    let text = out.stdout_str();
    let matrix = &text[text.find("No P2P providers").expect("the matrix")..];
    let header = matrix.lines().find(|l| l.trim_start().starts_with("[1]")).expect("the column header");
    assert_eq!(header.split_whitespace().count(), 3, "{matrix}");
    let rows: Vec<&str> = matrix.lines().filter(|l| l.starts_with("   [")).collect();
    assert_eq!(rows, ["   [1]   B0   H2   H4", "   [2]   H2   B0   H4", "   [3]   H4   H4   B0"], "{matrix}");
    for line in [
        "[ 1] nic0 (0000:01:00.0)  NIC  node 0  + 48 VFs",
        "[ 2] nic1 (0000:01:00.1)  NIC  node 0  + 48 VFs",
        "[ 3] ssd0 (0000:02:00.0)  NVMe SSD  node 0  + 32 VFs",
        "[ 2] 48 VFs 0000:01:06.2-0000:01:0c.1: a VF and its PF H2, two of its VFs H2",
    ] {
        assert!(matrix.contains(line), "{line}\n{matrix}");
    }
}

/// Folding is the matrix's: a virtual function is still named on its own, and the model in JSON
/// keeps every function with its physical function.
#[test]
fn topo_explains_a_virtual_function_and_keeps_every_function_in_json() {
    let out = run(&mut pp(args!["topo", "--sysfs", sriov_host(), "--explain", "0000:01:00.2", "0000:02:04.0"])).ok();
    let text = out.stdout_str();
    assert!(text.contains("PCI_P2PDMA_MAP_THRU_HOST_BRIDGE, distance 4"), "{text}");
    let out = run(&mut pp(args!["topo", "--sysfs", sriov_host(), "--json"])).ok();
    let v = out.json();
    let devices = v["device"].as_array().expect("devices");
    assert_eq!(devices.len(), 134);
    assert_eq!(devices.iter().filter(|d| d["physfn"] == "0000:02:00.0").count(), 32);
}

/// `--vfs`: every virtual function its own row and column again (3 PFs + 128 VFs).
#[test]
fn topo_vfs_gives_every_virtual_function_its_own_row_and_column() {
    let out = run(&mut pp(args!["topo", "--sysfs", sriov_host(), "--vfs"])).ok();
    let text = out.stdout_str();
    let matrix = &text[text.find("No P2P providers").expect("the matrix")..];
    let header = matrix.lines().find(|l| l.trim_start().starts_with("[1]")).expect("the column header");
    assert_eq!(header.split_whitespace().count(), 131, "{header}");
    assert!(!matrix.contains("+ 48 VFs"), "{matrix}");
}

/// The tree and the picture of `topo`, from its output and the `--svg` file.
fn tree_and_svg(extra: &[&str]) -> (Vec<String>, String) {
    let dir = scratch();
    let svg = dir.path().join("t.svg");
    let out = run(&mut pp(args!["topo", "--sysfs", sriov_host(), "--svg", &svg].into_iter().chain(extra.iter().map(os)))).ok();
    let text = out.stdout_str();
    let tree = &text[..text.find("No P2P providers").expect("the matrix")];
    let lines = tree.lines().filter(|l| l.contains("── ")).map(str::to_string).collect();
    (lines, std::fs::read_to_string(&svg).expect("the picture"))
}

/// The tree and the `--svg` picture drew every function, 134 lines and boxes; like the matrix,
/// they now show a physical function's virtual functions as one line under it.
#[test]
fn topo_folds_virtual_functions_in_the_tree_and_the_svg() {
    let (lines, svg) = tree_and_svg(&[]);
    assert_eq!(lines.len(), 6 + 3, "{lines:#?}");
    assert_eq!(lines[3], "│   │   └── + 48 VFs 01:00.2-01:06.1  NIC  Mellanox 15b3:101e  [mlx5_core]", "{lines:#?}");
    assert_eq!(lines[8], "        └── + 32 VFs 02:00.1-02:04.0  NVMe SSD  Samsung 144d:a824", "{lines:#?}");
    // Background, host bridge, 6 functions, 3 folded rows, the legend's swatch.
    assert_eq!(svg.matches("<rect ").count(), 11 + 1, "{svg}");
    assert!(svg.contains(">+ 48 VFs 0000:01:06.2-0000:01:0c.1</text>"), "{svg}");
    assert!(svg.contains(" - nic0 + 48 VFs, nic1 + 48 VFs, ssd0 + 32 VFs</text>"), "{svg}");
}

/// `--vfs` draws every function in the tree and the picture too.
#[test]
fn topo_vfs_draws_every_virtual_function_in_the_tree_and_the_svg() {
    let (lines, svg) = tree_and_svg(&["--vfs"]);
    assert_eq!(lines.len(), 134, "{lines:#?}");
    assert!(lines.iter().all(|l| !l.contains(" VFs ")), "{lines:#?}");
    assert_eq!(svg.matches("<rect ").count(), 2 + 134 + 1, "{svg}");
    assert!(svg.contains("(131 devices)</text>"), "{svg}");
}

/// A `--sysfs` root that is not one is said naming the option and what was expected, by every
/// command that takes one (as `probe` does): `topo`, `plan`, `bench-io --memory p2p:BDF` and
/// `compress --device-memory-from p2p:BDF` said "cannot read /nonexist" or "p2pmem does not
/// exist: this PCI function is not a P2P memory provider" (exit 14), or ran the job on the host
/// CPU (a fallback naming neither option). A function not under a root is named too.
#[test]
fn every_sysfs_option_names_itself_when_its_root_is_not_one() {
    let dir = scratch();
    let d = dir.path();
    let missing = d.join("no such root");
    let src = d.join("s.fa");
    std::fs::write(&src, sample()).unwrap();
    let bench = |root: &Path, bdf: &str| args!["bench-io", "--file", &src, "--size", "1M", "--rw", "read", "--memory", format!("p2p:{bdf}"), "--sysfs", root];
    let commands = [
        args!["topo", "--sysfs", &missing],
        args!["topo", "--sysfs", &missing, "--json"],
        args!["plan", "--sysfs", &missing, "--source", "ssd0", "--target", "ssd1"],
        args!["probe", "--sysfs", &missing],
        bench(&missing, "0000:03:00.0"),
        args!["compress", &src, "-o", d.join("x.gz"), "--engine", "emulated", "--device-memory-from", "p2p:0000:03:00.0", "--sysfs", &missing],
    ];
    let named = format!("--sysfs {}: cannot read it: No such file or directory", missing.display());
    for cmd in commands {
        run(&mut pp(cmd)).fails(13, &[&named, "give a sysfs root, a directory holding bus/pci/devices"]);
    }
    // A directory that is not a sysfs root: said so.
    run(&mut pp(args!["topo", "--sysfs", d])).fails(13, &[&format!("--sysfs {} is not a sysfs root: ", d.display()), "bus/pci/devices is not a directory"]);
    // A root, but no such function under it: the option and the root named (it was "p2pmem does
    // not exist: this PCI function is not a P2P memory provider", exit 14).
    run(&mut pp(bench(&sriov_host(), "0000:09:00.0"))).fails(13, &["--memory p2p:0000:09:00.0: no such PCI function under --sysfs "]);
    assert!(!d.join("x.gz").exists(), "nothing kept");
}

/// `--explain` names each device as it was given and what that is, once: the provider by its
/// controller was shown as its label alone, and a client by its address twice.
#[test]
fn topo_explain_names_each_device_as_given_and_once() {
    let sys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/intel-switch-acs/sys");
    for (provider, client, first) in [
        ("nvme0", "nvme1n1", "P2P between the memory of nvme0 = csp0 (0000:03:00.0) and nvme1n1 = ssd0 (0000:04:00.0)"),
        ("csp0", "ssd0", "P2P between the memory of csp0 (0000:03:00.0) and ssd0 (0000:04:00.0)"),
        ("0000:03:00.0", "0000:04:00.0", "P2P between the memory of csp0 (0000:03:00.0) and ssd0 (0000:04:00.0)"),
    ] {
        let out = run(&mut pp(args!["topo", "--sysfs", &sys, "--explain", provider, client])).ok();
        assert_eq!(out.stdout_str().lines().next(), Some(first));
    }
}

/// The H100 host's capture with a `driver` link that loops to itself (was shown as
/// `[driver]`) or a BAR whose size overflows 64 bits (was 2^64 - 1 bytes): malformed, the file
/// named, exit 13, for `topo` and `plan` alike.
#[test]
fn a_looping_driver_link_or_an_overflowing_bar_is_malformed_and_named() {
    let dir = scratch();
    let tgz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/h100-gpu-host/sysfs.tgz");
    assert!(std::process::Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(dir.path()).status().unwrap().success());
    let sys = dir.path().join("sys");
    let gpu = sys.join("devices/pci0000:00/0000:00:06.0");
    let topo_and_plan = || [args!["topo", "--sysfs", &sys], args!["plan", "--sysfs", &sys, "--source", "vda", "--target", "vdb"]];
    std::fs::remove_file(gpu.join("driver")).unwrap();
    std::os::unix::fs::symlink("driver", gpu.join("driver")).unwrap();
    for cmd in topo_and_plan() {
        run(&mut pp(cmd)).fails(13, &[&format!("{}: points to driver, not to a driver", gpu.join("driver").display())]);
    }
    std::fs::remove_file(gpu.join("driver")).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/nvidia", gpu.join("driver")).unwrap();
    let resource = std::fs::read_to_string(gpu.join("resource")).unwrap();
    let rest: String = resource.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(gpu.join("resource"), format!("0x0000000000000000 0xffffffffffffffff 0x0000000000040200\n{rest}")).unwrap();
    for cmd in topo_and_plan() {
        run(&mut pp(cmd)).fails(13, &[&format!("malformed {}: expected a BAR smaller than 2^64 bytes", gpu.join("resource").display())]);
    }
}
