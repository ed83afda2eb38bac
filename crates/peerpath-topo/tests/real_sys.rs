//! This machine's own /sys: it must read without error and be described truthfully.

use std::path::Path;

use peerpath_topo::Topology;

#[test]
fn reads_this_machines_sysfs() {
    if !Path::new("/sys/bus/pci").is_dir() {
        eprintln!("skipped: /sys/bus/pci is absent on this machine (no PCI bus or no sysfs)");
        return;
    }
    let topo = Topology::from_sysfs("/sys").expect("reading the real /sys");
    let listed = std::fs::read_dir("/sys/bus/pci/devices").unwrap().count();
    assert_eq!(topo.devices.len(), listed, "every function in /sys/bus/pci/devices is in the model");
    // Providers exactly where the kernel shows p2pmem directories.
    for d in &topo.devices {
        let has_dir = Path::new("/sys/bus/pci/devices").join(d.bdf.to_string()).join("p2pmem").is_dir();
        assert_eq!(d.p2pmem.is_some(), has_dir, "{}", d.bdf);
        let vendor = std::fs::read_to_string(Path::new("/sys/bus/pci/devices").join(d.bdf.to_string()).join("vendor")).unwrap();
        assert_eq!(format!("{:#06x}", d.vendor), vendor.trim());
    }
    let tree = topo.render_tree();
    let matrix = topo.render_matrix().unwrap();
    let svg = topo.render_svg().unwrap();
    assert!(svg.starts_with("<svg"));
    if topo.devices.iter().all(|d| d.p2pmem.is_none()) {
        assert!(tree.contains("P2P providers: none"));
    }
    // The export reads back as the same model.
    let back = Topology::from_toml_str(&topo.to_toml_string().unwrap()).unwrap();
    assert_eq!(back, topo);
    println!("{tree}\n{matrix}");
}
