//! Fuzz-style: random bytes in sysfs files, config space, cpulists, link speeds and topology
//! files never panic; they give a model or an error.

use std::fs;
use std::path::PathBuf;

use peerpath_topo::{fixture, pcicfg, sysfs, Cmb, LinkSpeed, Topology};
use proptest::prelude::*;

/// The files of one function, one controller and the machine that the reader parses.
fn targets(root: &std::path::Path) -> Vec<PathBuf> {
    let dev = fs::canonicalize(root.join("bus/pci/devices/0000:03:00.0")).unwrap();
    let dsp = fs::canonicalize(root.join("bus/pci/devices/0000:02:03.0")).unwrap();
    let ctrl = fs::canonicalize(root.join("class/nvme/nvme0")).unwrap();
    let mut v: Vec<PathBuf> = [
        "vendor", "device", "class", "numa_node", "local_cpulist", "current_link_speed", "max_link_speed",
        "current_link_width", "max_link_width", "label", "config", "resource", "p2pmem/size",
        "p2pmem/available", "p2pmem/published",
    ]
    .iter()
    .map(|f| dev.join(f))
    .collect();
    v.push(dsp.join("config"));
    for f in ["cmbsz", "cmbloc", "model", "serial", "transport"] {
        v.push(ctrl.join(f));
    }
    v.push(root.join("devices/system/cpu/modalias"));
    v.push(root.join("devices/system/cpu/cpu0/topology/physical_package_id"));
    v.push(root.join("devices/system/node/node0/cpulist"));
    v
}

fn text_or_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        "[0-9a-fx\\- ,.\n]{0,40}".prop_map(|s| s.into_bytes()),
        "(0x)?[0-9a-f]{1,20}\n?".prop_map(|s| s.into_bytes()),
        Just(b"-1\n".to_vec()),
        Just(b"0-4294967295\n".to_vec()),
        Just(b"18446744073709551615\n".to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn garbage_in_any_sysfs_file_never_panics(which in 0usize..64, content in text_or_bytes()) {
        let dir = tempfile::tempdir().unwrap();
        fixture::intel_switch_acs().write(dir.path()).unwrap();
        let files = targets(dir.path());
        let f = &files[which % files.len()];
        fs::write(f, &content).unwrap();
        if let Ok(t) = Topology::from_sysfs(dir.path()) {
            // Whatever was read must render and answer without panicking.
            let _ = t.render_tree();
            let _ = t.render_matrix();
            let _ = t.verdict("0000:03:00.0", "0000:06:00.0");
            let _ = t.render_svg();
        }
    }

    #[test]
    fn garbage_config_space_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..4200)) {
        let _ = pcicfg::acs_state(&bytes);
        let _ = pcicfg::pcie_type(&bytes);
        let _ = pcicfg::find_ext_cap(&bytes, pcicfg::EXT_CAP_ID_ACS);
    }

    #[test]
    fn garbage_registers_and_strings_never_panic(sz in any::<u32>(), loc in any::<u32>(), s in ".{0,40}") {
        let c = Cmb { cmbsz: sz, cmbloc: loc };
        let _ = c.size_bytes();
        let _ = c.registration_problem(Some(u64::from(loc) << 20), Some(u64::from(sz)));
        let _ = LinkSpeed::parse(&s);
        let _ = sysfs::parse_cpulist(&s);
        let _ = sysfs::parse_cpu_modalias(&s);
        let _ = s.parse::<peerpath_topo::Bdf>();
        let _ = Topology::from_toml_str(&s);
    }

    #[test]
    fn garbage_topology_files_never_panic(s in "[\\[\\]a-z_=\" 0-9:.\n{},]{0,200}") {
        let _ = Topology::from_toml_str(&s);
    }
}
