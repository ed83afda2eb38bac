//! Shared helpers for the integration tests.
#![allow(dead_code)]

use peerpath_topo::fixture::FakeSysfs;
use peerpath_topo::{Bdf, Topology};

/// Writes `spec` to a temporary directory and reads it back.
pub fn load(spec: &FakeSysfs) -> (tempfile::TempDir, Topology) {
    let dir = tempfile::tempdir().expect("tempdir");
    spec.write(dir.path()).expect("writing the fake sysfs tree");
    let topo = Topology::from_sysfs(dir.path()).expect("reading the fake sysfs tree");
    (dir, topo)
}

/// The PCI address of the function labelled `label`.
pub fn bdf(topo: &Topology, label: &str) -> Bdf {
    topo.devices
        .iter()
        .find(|d| d.label.as_deref() == Some(label))
        .unwrap_or_else(|| panic!("no device labelled {label}"))
        .bdf
}
