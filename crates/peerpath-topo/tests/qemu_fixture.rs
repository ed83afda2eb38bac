//! The one fixture a real kernel wrote: Linux 6.12 with CONFIG_PCI_P2PDMA in
//! the QEMU VM (vm/, docs/vm.md). The verdicts below are the ones the kernel
//! itself gave in that VM (transfers succeeded, or failed with EREMOTEIO);
//! see fixtures/qemu-switch-cmb/README.md.

use peerpath_topo::{P2pPath, Reason, Topology};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qemu-switch-cmb")
}

const PROVIDER: &str = "0000:03:00.0";

#[test]
fn intel_guest_verdicts_match_what_the_kernel_did() {
    let t = Topology::from_sysfs(fixture().join("sys")).unwrap();
    assert_eq!(t.verdict(PROVIDER, "nvme0n1").unwrap().path, P2pPath::BusAddress { distance: 0 });
    for client in ["nvme1n1", "nvme2n1"] {
        assert_eq!(t.verdict(PROVIDER, client).unwrap().path, P2pPath::BusAddress { distance: 4 }, "{client}");
    }
    // The kernel answered EREMOTEIO for this pair in the VM.
    let v = t.verdict(PROVIDER, "nvme3n1").unwrap();
    assert!(matches!(v.path, P2pPath::NotSupported { reason: Reason::HostBridgeNotAllowed { .. } }), "{:?}", v.path);
    let k = v.kernel.as_ref().expect("the kernel's own map");
    assert!(matches!(k.path, P2pPath::NotSupported { .. }), "{k:?}");
    assert_eq!(k.distance, 6);
}

#[test]
fn the_cmb_is_a_published_provider_with_rds_and_wds() {
    let t = Topology::from_sysfs(fixture().join("sys")).unwrap();
    let dev = t.devices.iter().find(|d| d.bdf.to_string() == PROVIDER).expect("the CMB's controller");
    let p = dev.p2pmem.as_ref().expect("p2pmem/ read");
    assert_eq!((p.size_bytes, p.available_bytes, p.published), (67_108_864, 67_043_328, true));
    let ctrl = t.nvme_controllers.iter().find(|c| c.pci.map(|b| b.to_string()).as_deref() == Some(PROVIDER)).unwrap();
    let cmb = ctrl.cmb.as_ref().expect("CMBSZ read");
    assert!(cmb.rds() && cmb.wds());
}

#[test]
fn with_the_zen_guests_cpu_the_other_root_port_is_through_the_host_bridge() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("sys");
    let status = std::process::Command::new("cp").arg("-a").arg(fixture().join("sys")).arg(&copy).status().unwrap();
    assert!(status.success(), "cp -a the fixture tree");
    std::fs::copy(fixture().join("zen-cpu-modalias"), copy.join("devices/system/cpu/modalias")).unwrap();
    let t = Topology::from_sysfs(&copy).unwrap();
    // In the Zen VM the kernel accepted this pair and a 4 MiB copy matched.
    assert_eq!(t.verdict(PROVIDER, "nvme3n1").unwrap().path, P2pPath::ThroughHostBridge { distance: 6 });
}

#[test]
fn the_committed_topology_file_is_the_tree_read_back() {
    let mut from_sys = Topology::from_sysfs(fixture().join("sys")).unwrap();
    let mut from_file = Topology::from_toml_file(fixture().join("topology.toml")).unwrap();
    from_sys.source = None;
    from_file.source = None;
    assert_eq!(from_sys, from_file);
}
