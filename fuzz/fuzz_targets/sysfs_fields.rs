//! The sysfs attribute parsers, on arbitrary text and bytes, without the
//! files around them: PCI addresses and root bus names, link speeds,
//! cpulists, the CPU modalias, config space (the PCIe capability, ACS) and
//! an NVMe controller's CMB registers. Never a panic, nothing allocated
//! beyond the cpulist's cap, and what has a printed form parses back from
//! it to the same value (a topology file stores them printed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_topo::bdf::parse_root_bus_name;
use peerpath_topo::{pcicfg, sysfs, Bdf, Cmb, DeviceSelection, LinkSpeed};

fuzz_target!(|data: &[u8]| {
    let _ = pcicfg::acs_state(data);
    let _ = pcicfg::pcie_type(data);
    if let Some(at) = pcicfg::find_ext_cap(data, pcicfg::EXT_CAP_ID_ACS) {
        assert!((0x100..data.len()).contains(&at));
    }
    if let Some(words) = data.first_chunk::<8>() {
        let c = Cmb { cmbsz: u32::from_le_bytes(words[..4].try_into().expect("4 bytes")), cmbloc: u32::from_le_bytes(words[4..].try_into().expect("4 bytes")) };
        let (size, offset) = (c.size_bytes(), c.offset_bytes());
        let _ = (c.bar(), c.flags_text(), c.publishable(), c.missing_for_publish());
        let _ = c.registration_problem(offset, size);
        let _ = c.registration_problem(Some(u64::MAX - 1), Some(u64::MAX));
    }
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(b) = s.parse::<Bdf>() {
        assert_eq!(b.to_string().parse::<Bdf>(), Ok(b), "{s:?}");
        assert_eq!(parse_root_bus_name(&b.root_bus_name()), Some((b.domain, b.bus)));
    }
    if let Some((domain, bus)) = parse_root_bus_name(s) {
        let b = Bdf::new(domain, bus, 0, 0).expect("device 0, function 0");
        assert_eq!(parse_root_bus_name(&b.root_bus_name()), Some((domain, bus)), "{s:?}");
    }
    if let Some(l) = LinkSpeed::parse(s) {
        assert_eq!(LinkSpeed::parse(&l.to_string()), Some(l), "{s:?} prints as {l}");
        let _ = (l.generation(), l.lane_bytes_per_s());
    }
    if let Some(cpus) = sysfs::parse_cpulist(s) {
        assert!(cpus.len() <= 65_536, "{} CPUs from {} bytes", cpus.len(), s.len());
    }
    if let Some(cpu) = sysfs::parse_cpu_modalias(s) {
        let _ = cpu.to_string();
        let _ = peerpath_topo::allowlist::cpu_supports_p2pdma(&cpu);
    }
    let _ = DeviceSelection::parse(s);
});
