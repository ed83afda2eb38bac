//! Fuzz-style: random bytes in sysfs files, config space, cpulists, link speeds and topology
//! files never panic; they give a model or an error.

use std::fs;
use std::path::PathBuf;

use peerpath_topo::model::Bar;
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

    /// Garbage in the files beside sysfs that say whether the kernel has P2PDMA (the release, the
    /// config, the symbol list): never a panic, never an error that stops discovery, and `p2pdma`
    /// is `Some(true)` only where one of them says so.
    #[test]
    fn garbage_beside_sysfs_never_stops_discovery(which in 0usize..3, content in text_or_bytes(), config_line in "(# )?CONFIG_PCI_P2PDMA( is not set|=[ymn]?)") {
        let dir = tempfile::tempdir().unwrap();
        let sys = dir.path().join("sys");
        // No provider: the files alone answer (a registered one outweighs a config without P2PDMA).
        let mut spec = fixture::intel_switch_acs();
        spec.functions.iter_mut().for_each(|f| f.p2pmem = None);
        spec.write(&sys).unwrap();
        fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        fs::create_dir_all(dir.path().join("boot")).unwrap();
        fs::write(dir.path().join("proc/sys/kernel/osrelease"), "6.9.0\n").unwrap();
        let config = dir.path().join("boot/config-6.9.0");
        let mut text = content.clone();
        text.extend_from_slice(b"\n");
        text.extend_from_slice(config_line.as_bytes());
        text.push(b'\n');
        match which {
            0 => fs::write(&config, &text).unwrap(),
            1 => fs::write(dir.path().join("proc/kallsyms"), &content).unwrap(),
            _ => fs::write(dir.path().join("proc/sys/kernel/osrelease"), &content).unwrap(),
        }
        let t = Topology::from_sysfs(&sys).expect("garbage beside sysfs never stops discovery");
        let k = t.kernel.expect("some kernel answer");
        let says_y = |b: &[u8]| String::from_utf8_lossy(b).lines().map(str::trim).any(|l| l == "CONFIG_PCI_P2PDMA=y")
            || String::from_utf8_lossy(b).lines().any(|l| l.split_whitespace().nth(2).is_some_and(|n| n == "pci_p2pdma_add_resource" || n == "pci_p2pmem_find_many"));
        if k.p2pdma == Some(true) {
            prop_assert!(match which { 0 => says_y(&text), 1 => says_y(&content), _ => false }, "{k:?}");
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

/// The function whose `resource` and `driver` the properties below replace.
const FUNCTION: &str = "0000:03:00.0";

/// A `resource` line's numbers: zeros, the edges of 64 bits, a window, anything.
fn resource_line() -> impl Strategy<Value = (u64, u64, u64)> {
    let address = || prop_oneof![Just(0u64), Just(u64::MAX), 0xf000_0000u64..0xf100_0000, any::<u64>()];
    // Flags: memory (32- and 64-bit, prefetchable), I/O, neither, anything.
    let flags = prop_oneof![Just(0x0004_0200u64), Just(0x0014_220cu64), Just(0x0004_0101u64), Just(0u64), any::<u64>()];
    (address(), address(), flags)
}

/// A `driver` link's target and the driver it names: the kernel's
/// `.../drivers/NAME` (relative or absolute), or one that names none.
fn driver_target() -> impl Strategy<Value = (String, Option<String>)> {
    let up = "(\\.\\./){0,4}(bus/pci/)?";
    let name = "[a-zA-Z0-9_-]{1,12}";
    prop_oneof![
        (up, name).prop_map(|(up, n)| (format!("{up}drivers/{n}"), Some(n))),
        name.prop_map(|n| (format!("/sys/bus/pci/drivers/{n}"), Some(n))),
        name.prop_map(|n| (n, None)),
        up.prop_map(|up| (format!("{up}drivers"), None)),
        (up, name).prop_map(|(up, n)| (format!("{up}drivers/{n}/.."), None)),
        up.prop_map(|up| (format!("{up}drivers/.."), None)),
        (up, "[a-z]{1,8}", name).prop_filter("not drivers", |(_, d, _)| d != "drivers").prop_map(|(up, d, n)| (format!("{up}{d}/{n}"), None)),
        Just(("/".to_string(), None)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// A `resource` file of any numbers, as the kernel prints them: the
    /// memory BARs of lines 0-5 (each its size and width), I/O BARs and
    /// empty lines left out, lines past 5 ignored; a BAR that ends before it
    /// starts, spans 2^64 bytes or is neither I/O nor memory is an error
    /// naming the file. A model read exports and reads back with its BARs.
    #[test]
    fn any_resource_numbers_give_the_memory_bars_or_an_error(lines in proptest::collection::vec(resource_line(), 0..10)) {
        let dir = tempfile::tempdir().unwrap();
        fixture::intel_switch_acs().write(dir.path()).unwrap();
        let text: String = lines.iter().map(|(s, e, f)| format!("0x{s:016x} 0x{e:016x} 0x{f:016x}\n")).collect();
        fs::write(dir.path().join("bus/pci/devices").join(FUNCTION).join("resource"), &text).unwrap();
        let bad = lines.iter().take(6).any(|&(s, e, f)| (s, e) != (0, 0) && (e < s || (s, e) == (0, u64::MAX) || f & 0x300 == 0));
        let bars: Vec<Bar> = lines
            .iter()
            .take(6)
            .enumerate()
            .filter(|&(_, &(s, e, f))| (s, e) != (0, 0) && f & 0x100 == 0)
            .map(|(i, &(s, e, f))| Bar { index: i as u8, start: s, size: e.wrapping_sub(s).wrapping_add(1), mem32: f & 0x10_0000 == 0 })
            .collect();
        match Topology::from_sysfs(dir.path()) {
            Ok(t) => {
                prop_assert!(!bad, "{text}");
                let d = t.device(FUNCTION.parse().unwrap()).unwrap();
                prop_assert_eq!(&d.bars, &bars, "{}", text);
                let back = Topology::from_toml_str(&t.to_toml_string().unwrap()).unwrap();
                prop_assert_eq!(&back.device(FUNCTION.parse().unwrap()).unwrap().bars, &bars);
            }
            Err(e) => {
                prop_assert!(bad, "{text}: {e}");
                prop_assert!(e.to_string().contains("resource"), "{e}");
            }
        }
    }

    /// A `driver` link to anything: the kernel's `drivers/NAME` names the
    /// driver, whatever comes before it; any other target is an error that
    /// names the link and where it points.
    #[test]
    fn a_driver_link_names_its_driver_or_is_an_error((target, driver) in driver_target()) {
        let dir = tempfile::tempdir().unwrap();
        fixture::intel_switch_acs().write(dir.path()).unwrap();
        let link = fs::canonicalize(dir.path().join("bus/pci/devices").join(FUNCTION)).unwrap().join("driver");
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        match (Topology::from_sysfs(dir.path()), driver) {
            (Ok(t), Some(name)) => prop_assert_eq!(t.device(FUNCTION.parse().unwrap()).unwrap().driver.as_deref(), Some(name.as_str())),
            (Err(e), None) => {
                let why = e.to_string();
                prop_assert!(why.contains("driver") && why.contains(&target), "{target}: {why}");
            }
            (other, driver) => prop_assert!(false, "{target} (driver {driver:?}): {other:?}"),
        }
    }
}
