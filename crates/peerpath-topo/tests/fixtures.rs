//! The verdicts each fixture's README states, checked against the builder's trees read back
//! through the sysfs reader.

mod common;

use common::{bdf, load};
use peerpath_topo::fixture;
use peerpath_topo::verdict::AcsCause;
use peerpath_topo::{AcsState, BlockKind, P2pPath, Reason, Topology};

fn has(reasons: &[Reason], pred: impl Fn(&Reason) -> bool) -> bool {
    reasons.iter().any(pred)
}

#[test]
fn epyc_case_study_verdicts() {
    let (_dir, t) = load(&fixture::epyc_case_study());
    let csps: Vec<String> = (0..6).map(|i| format!("csp{i}")).collect();
    let ssds: Vec<String> = (0..18).map(|i| format!("ssd{i}")).collect();
    assert_eq!(t.devices.iter().filter(|d| d.p2pmem.is_some()).count(), 6);
    assert_eq!(t.host_bridges.len(), 8);
    let socket = |label: &str| t.device(bdf(&t, label)).unwrap().numa_node.unwrap();
    for c in &csps {
        for s in &ssds {
            let v = t.verdict(c, s).unwrap();
            let k = v.kernel.as_ref().unwrap();
            assert_eq!(k.path, P2pPath::ThroughHostBridge { distance: 4 }, "{c} {s}");
            assert!(k.common_upstream.is_none());
            if socket(c) == socket(s) {
                assert_eq!(v.path, P2pPath::ThroughHostBridge { distance: 4 }, "{c} {s}");
                assert!(has(&v.reasons, |r| matches!(r, Reason::CpuAllowsRootComplex { .. })));
            } else {
                assert!(
                    matches!(&v.path, P2pPath::NotSupported { reason: Reason::CrossSocket { provider_socket, client_socket, .. } } if provider_socket != client_socket),
                    "{c} {s}: {:?}",
                    v.path
                );
            }
        }
        assert_eq!(t.verdict(c, c).unwrap().path, P2pPath::BusAddress { distance: 0 });
    }
    // Nine SSDs per socket, three CSPs per socket: each CSP can serve every SSD of its node.
    for s in &ssds {
        let near = t.find_providers(&[s.as_str()]).unwrap();
        assert_eq!(near.len(), 3, "{s}");
        assert!(near.iter().all(|(b, d)| *d == 4 && t.device(*b).unwrap().numa_node == Some(socket(s))));
    }
    let v = t.verdict("ssd0", "ssd1").unwrap();
    assert!(matches!(v.path, P2pPath::NotSupported { reason: Reason::NoP2pMemory { .. } }));
    // Groups in the picture: one per socket.
    let groups = peerpath_topo::render::p2p_groups(&t).unwrap();
    assert_eq!(groups.len(), 2);
    assert!(groups.iter().all(|(g, bus)| g.len() == 12 && !bus));
}

/// Firmware that gives no NUMA node (`numa_node` -1) on a machine of two sockets: a device's
/// node is its host bridge's where the other functions there give theirs; where none does, a
/// path across host bridges may cross sockets, so it is refused, and said why.
#[test]
fn epyc_without_numa_nodes_never_plans_across_sockets() {
    let (dir, _) = load(&fixture::epyc_case_study());
    let nodes = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
        let out = std::process::Command::new("find").arg(dir).args(["-name", "numa_node", "-path", "*/pci*"]).output().unwrap();
        String::from_utf8(out.stdout).unwrap().lines().map(Into::into).collect()
    };
    let all = nodes(dir.path());
    assert!(all.len() > 20, "{all:?}");
    // One device without a node: its host bridge's functions say node 1.
    let t = Topology::from_sysfs(dir.path()).unwrap();
    let csp3 = bdf(&t, "csp3");
    let of_csp3 = all.iter().find(|p| p.to_string_lossy().contains(&format!("/{csp3}/"))).unwrap();
    std::fs::write(of_csp3, "-1\n").unwrap();
    let t = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(t.device(csp3).unwrap().numa_node, None);
    assert_eq!(t.numa_node_of(csp3), Some(1));
    assert!(matches!(t.verdict("csp3", "ssd0").unwrap().path, P2pPath::NotSupported { reason: Reason::CrossSocket { .. } }));
    assert_eq!(t.verdict("csp3", "ssd9").unwrap().path, P2pPath::ThroughHostBridge { distance: 4 });

    // No device with a node.
    all.iter().for_each(|p| std::fs::write(p, "-1\n").unwrap());
    let t = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(t.socket_count(), Some(2));
    for (c, s) in [("csp3", "ssd0"), ("csp0", "ssd9"), ("csp3", "ssd17")] {
        let v = t.verdict(c, s).unwrap();
        let P2pPath::NotSupported { reason: r @ Reason::SocketUnknown { sockets: Some(2), .. } } = &v.path else { panic!("{c} {s}: {:?}", v.path) };
        assert!(r.describe().contains("numa_node -1") && r.remedy().unwrap().contains("--export"), "{}", r.describe());
    }
    // Below one host bridge, the path never leaves the socket.
    let csp0 = bdf(&t, "csp0");
    let same: Vec<String> = (0..18).map(|i| format!("ssd{i}")).filter(|s| t.host_bridge_of(bdf(&t, s)) == t.host_bridge_of(csp0)).collect();
    assert!(!same.is_empty());
    for s in &same {
        assert!(!matches!(t.verdict("csp0", s).unwrap().path, P2pPath::NotSupported { .. }), "csp0 {s}");
    }
}

/// CPUs that give no package (`physical_package_id`) on a machine of two NUMA nodes: the
/// sockets are unknown, not one, and a path across host bridges on different nodes is refused
/// (`numa?`), never passed as one socket's.
#[test]
fn epyc_without_cpu_packages_has_sockets_unknown() {
    let (dir, _) = load(&fixture::epyc_case_study());
    let cpus = dir.path().join("devices/system/cpu");
    let mut removed = 0;
    for e in std::fs::read_dir(&cpus).unwrap().flatten() {
        let f = e.path().join("topology/physical_package_id");
        if f.exists() {
            std::fs::remove_file(f).unwrap();
            removed += 1;
        }
    }
    assert!(removed > 1);
    let t = Topology::from_sysfs(dir.path()).unwrap();
    assert_eq!(t.socket_count(), None);
    assert!(t.render_tree().contains("sockets unknown"), "{}", t.render_tree());
    for (c, s) in [("csp3", "ssd0"), ("csp0", "ssd9")] {
        let v = t.verdict(c, s).unwrap();
        let P2pPath::NotSupported { reason: r @ Reason::SocketUnknown { sockets: None, .. } } = &v.path else { panic!("{c} {s}: {:?}", v.path) };
        assert!(r.describe().contains("physical_package_id") && r.code() == "numa?", "{}", r.describe());
    }
    assert_eq!(t.verdict("csp3", "ssd9").unwrap().path, P2pPath::ThroughHostBridge { distance: 4 });
}

/// A function whose numa_node contradicts the other functions below its host bridge: the path
/// below that bridge never leaves its socket (csp3 -> ssd9 stays supported), and one across
/// bridges from it has an unknown socket, said so (it was passed as node 0's, and the other
/// refused as crossing sockets).
#[test]
fn a_numa_node_contradicting_its_host_bridge_leaves_the_socket_unknown() {
    let (dir, t) = load(&fixture::epyc_case_study());
    let csp3 = bdf(&t, "csp3");
    assert_eq!(t.numa_node_of(csp3), Some(1));
    std::fs::write(std::fs::canonicalize(dir.path().join("bus/pci/devices").join(csp3.to_string())).unwrap().join("numa_node"), "0\n").unwrap();
    let t = Topology::from_sysfs(dir.path()).unwrap();
    let v = t.verdict("csp3", "ssd9").unwrap();
    assert_eq!(v.path, P2pPath::ThroughHostBridge { distance: 4 }, "{:?}", v.reasons);
    let v = t.verdict("csp3", "ssd0").unwrap();
    let P2pPath::NotSupported { reason: r @ Reason::SocketUnknown { .. } } = &v.path else { panic!("{:?}", v.path) };
    assert!(r.describe().contains("disagree on their NUMA node") && r.describe().contains(&csp3.to_string()), "{}", r.describe());
    // The other host bridges still know their sockets.
    let other = (9..18).map(|i| format!("ssd{i}")).find(|s| t.host_bridge_of(bdf(&t, s)) != t.host_bridge_of(csp3)).unwrap();
    assert!(matches!(t.verdict("csp0", &other).unwrap().path, P2pPath::NotSupported { reason: Reason::CrossSocket { .. } }), "csp0 {other}");
}

#[test]
fn intel_switch_acs_verdicts() {
    let (_dir, t) = load(&fixture::intel_switch_acs());
    for ssd in ["ssd0", "ssd1", "ssd3"] {
        let v = t.verdict("csp0", ssd).unwrap();
        assert_eq!(v.path, P2pPath::BusAddress { distance: 4 }, "{ssd}");
        assert_eq!(v.kernel.unwrap().common_upstream, Some("0000:01:00.0".parse().unwrap()));
    }
    let v = t.verdict("csp0", "ssd2").unwrap();
    match &v.path {
        P2pPath::NotSupported {
            reason: r @ Reason::AcsRedirect { bridges, cause },
        } => {
            assert_eq!(bridges, &vec!["0000:02:03.0".parse().unwrap()]);
            assert_eq!(*cause, AcsCause::FirmwareOrBootParameter);
            assert!(r.remedy().unwrap().contains("pci=disable_acs_redir=0000:02:03.0"));
        }
        other => panic!("csp0 -> ssd2: {other:?}"),
    }
    assert!(matches!(v.kernel.as_ref().unwrap().path, P2pPath::NotSupported { .. }));
    assert!(has(&v.reasons, |r| matches!(r, Reason::HostBridgeNotAllowed { .. })));
    let text = t.explain("csp0", "ssd2").unwrap();
    assert!(text.contains("pci=disable_acs_redir=0000:02:03.0"), "{text}");
    assert!(text.contains("NOT SUPPORTED"));

    for other in ["ssd4", "nic0"] {
        let v = t.verdict("csp0", other).unwrap();
        assert!(
            matches!(&v.path, P2pPath::NotSupported { reason: Reason::HostBridgeNotAllowed { provider_host_bridge, .. } } if provider_host_bridge.device.map(|d| (d.1, d.2)) == Some((0x8086, 0x6f00))),
            "{other}: {:?}",
            v.path
        );
    }
    assert_eq!(t.kernel_map(bdf(&t, "csp0"), bdf(&t, "ssd4")).unwrap().distance, 6);

    // Applying the remedy in the model turns it into a switch-local path.
    let mut fixed = t.clone();
    let port = "0000:02:03.0".parse().unwrap();
    fixed.devices.iter_mut().find(|d| d.bdf == port).unwrap().acs = AcsState::Control { ctrl: 0x11 };
    assert_eq!(fixed.verdict("csp0", "ssd2").unwrap().path, P2pPath::BusAddress { distance: 4 });
}

#[test]
fn fpga_cascade_verdicts() {
    let (_dir, t) = load(&fixture::fpga_cascade());
    let ssds: Vec<_> = (0..32).map(|i| bdf(&t, &format!("ssd{i}"))).collect();
    assert_eq!(ssds.len(), 32);
    assert!(t.devices.iter().all(|d| d.p2pmem.is_none()));
    assert!(t.host_bridge_device("pci0000:00").is_some());
    assert!(peerpath_topo::allowlist::lookup(0x10ee, 0xd021).is_none());
    for (i, a) in ssds.iter().enumerate() {
        for (j, b) in ssds.iter().enumerate() {
            let k = t.kernel_map(*a, *b).unwrap();
            let expected = if i == j { 0 } else { 4 + 2 * (i / 4).abs_diff(j / 4) as u32 };
            assert_eq!(k.path, P2pPath::BusAddress { distance: expected }, "ssd{i} ssd{j}");
        }
    }
    // No SSD has a CMB: every pair is refused for want of P2P memory, not for topology.
    let v = t.verdict("ssd0", "ssd31").unwrap();
    assert!(matches!(v.path, P2pPath::NotSupported { reason: Reason::NoP2pMemory { .. } }));
    assert!(t.matrix().unwrap().topology_only);
    assert_eq!(t.upstream_chain(ssds[31]).len(), 18);
    // Were ssd0 a provider, the deepest SSD would still be reached below the switches.
    let mut with_cmb = t.clone();
    with_cmb.devices.iter_mut().find(|d| d.bdf == ssds[0]).unwrap().p2pmem = Some(peerpath_topo::P2pProvider {
        size_bytes: 64 << 20,
        available_bytes: 64 << 20,
        published: true,
        allocate: true,
    });
    assert_eq!(with_cmb.verdict("ssd0", "ssd31").unwrap().path, P2pPath::BusAddress { distance: 18 });
}

#[test]
fn iommu_multipath_verdicts() {
    let (_dir, t) = load(&fixture::iommu_multipath());
    for client in ["ssd0", "nvme1", "nvme1n1", "0000:1b:00.0"] {
        let v = t.verdict("csp0", client).unwrap();
        assert_eq!(v.path, P2pPath::ThroughHostBridge { distance: 4 }, "{client}");
        let acs = v.reasons.iter().find(|r| matches!(r, Reason::AcsRedirect { .. })).unwrap();
        match acs {
            Reason::AcsRedirect { bridges, cause } => {
                assert_eq!(*cause, AcsCause::Iommu);
                let b: Vec<String> = bridges.iter().map(|b| b.to_string()).collect();
                assert_eq!(b, vec!["0000:19:00.0", "0000:19:01.0"]);
            }
            _ => unreachable!(),
        }
        assert!(acs.remedy().unwrap().contains("pci=disable_acs_redir=0000:19:00.0;0000:19:01.0"));
        assert!(has(&v.reasons, |r| matches!(r, Reason::HostBridgeAllowListed { .. })));
    }
    let v = t.verdict("csp0", "md0").unwrap();
    assert!(matches!(
        &v.path,
        P2pPath::NotSupported { reason: Reason::StackedBlockDevice { kind: BlockKind::Md, members, .. } } if members == &vec!["nvme1n1".to_string(), "nvme2n1".to_string()]
    ));
    let v = t.verdict("csp0", "/dev/nvme3n1").unwrap();
    assert!(matches!(
        &v.path,
        P2pPath::NotSupported { reason: Reason::StackedBlockDevice { kind: BlockKind::NvmeMultipathHead, members, .. } } if members == &vec!["nvme3c3n1".to_string(), "nvme3c4n1".to_string()]
    ));
    assert!(t.explain("csp0", "nvme3n1").unwrap().contains("EREMOTEIO"));
    // The controllers behind the head are fine as PCI functions: different host bridges, both allow-listed.
    assert_eq!(t.verdict("csp0", "nvme3").unwrap().path, P2pPath::ThroughHostBridge { distance: 6 });
    assert_eq!(t.verdict("csp0", "dual-b").unwrap().path, P2pPath::ThroughHostBridge { distance: 6 });
    let v = t.verdict("nvme5", "ssd0").unwrap();
    assert!(matches!(
        &v.path,
        P2pPath::NotSupported { reason: Reason::CmbNotPublished { missing, .. } } if missing == &vec!["RDS".to_string(), "WDS".to_string()]
    ));
    let v = t.verdict("nvme6", "ssd0").unwrap();
    assert!(matches!(&v.path, P2pPath::NotSupported { reason: Reason::CmbNotRegistered { problem, .. } } if problem.contains("2 MiB")));
    assert!(t.verdict("md0", "ssd0").is_err());
    let many = t.verdict_many("csp0", &["ssd0", "ssd1"]).unwrap();
    assert_eq!(many.total_distance, Some(8));
    let many = t.verdict_many("csp0", &["ssd0", "md0"]).unwrap();
    assert_eq!(many.total_distance, None);
}

#[test]
fn unreadable_acs_is_unknown_and_said_so() {
    let mut spec = fixture::intel_switch_acs();
    for f in &mut spec.functions {
        f.config_len = Some(64);
    }
    let (_dir, t) = load(&spec);
    assert!(t.devices.iter().all(|d| matches!(d.acs, AcsState::Unknown { .. })));
    let v = t.verdict("csp0", "ssd2").unwrap();
    assert_eq!(v.path, P2pPath::BusAddress { distance: 4 });
    assert!(has(&v.reasons, |r| matches!(r, Reason::AcsUnknown { .. })));
    assert!(t.render_tree().contains("ACS: unknown on"));
    // With the IOMMU on, unreadable ACS is assumed set (the kernel enables it).
    let mut on = spec.clone();
    on.iommu_units = Some(vec!["dmar0".into()]);
    let (_dir2, t2) = load(&on);
    let v = t2.verdict("csp0", "ssd0").unwrap();
    assert!(has(&v.reasons, |r| matches!(r, Reason::AcsRedirect { cause: AcsCause::AssumedFromIommu, .. })));
}

#[test]
fn renderings_of_every_fixture() {
    for spec in fixture::all() {
        let (_dir, t) = load(&spec);
        let tree = t.render_tree();
        assert!(tree.contains("pci0000:00"), "{}", spec.name);
        let m = t.render_matrix().unwrap();
        assert!(m.contains("[1]"));
        let svg = t.render_svg().unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let json: serde_json::Value = serde_json::from_str(&t.to_json_string().unwrap()).unwrap();
        assert_eq!(json["device"].as_array().unwrap().len(), t.devices.len());
        let back = Topology::from_toml_str(&t.to_toml_string().unwrap()).unwrap();
        assert_eq!(back, t, "{}", spec.name);
    }
}

/// A CSP whose CMB could be registered but has no `p2pmem/`: the verdict asks about the kernel's
/// P2PDMA while it is unknown, and names the kernel and the file that said so when it is known.
#[test]
fn a_registrable_cmb_without_p2pmem_names_the_kernels_p2pdma_where_known() {
    let (_dir, mut t) = load(&fixture::intel_switch_acs());
    let csp = t.resolve("csp0").unwrap().pci[0];
    t.devices.iter_mut().find(|d| d.bdf == csp).unwrap().p2pmem = None;
    let problem = |t: &Topology| match t.verdict("csp0", "ssd0").unwrap().path {
        P2pPath::NotSupported { reason: Reason::CmbNotRegistered { problem, .. } } => problem,
        other => panic!("{other:?}"),
    };
    assert!(problem(&t).contains("is the kernel built with CONFIG_PCI_P2PDMA"), "{}", problem(&t));
    t.kernel = Some(peerpath_topo::kernel::KernelInfo { release: Some("6.18.0".into()), p2pdma: Some(false), p2pdma_source: Some("/proc/kallsyms".into()) });
    assert!(problem(&t).contains("but the kernel 6.18.0 is built without CONFIG_PCI_P2PDMA (/proc/kallsyms)"), "{}", problem(&t));
    t.kernel.as_mut().unwrap().p2pdma = Some(true);
    assert!(problem(&t).contains("the kernel has CONFIG_PCI_P2PDMA: is the nvme driver"), "{}", problem(&t));
}

/// Read on a kernel without P2PDMA, a verdict is still what a kernel with it would answer (the
/// path), and says that this one would fail (a caveat, with the remedy); so do the plan's legs.
#[test]
fn a_kernel_without_p2pdma_is_said_in_every_verdict() {
    let (_dir, mut t) = load(&fixture::epyc_case_study());
    let before = t.verdict("csp0", "ssd0").unwrap();
    assert!(!before.reasons.iter().any(|r| matches!(r, Reason::KernelWithoutP2pdma { .. })));
    t.kernel = Some(peerpath_topo::kernel::KernelInfo { release: Some("6.1.0-test".into()), p2pdma: Some(false), p2pdma_source: Some("/boot/config-6.1.0-test".into()) });
    let v = t.verdict("csp0", "ssd0").unwrap();
    assert_eq!(v.path, before.path, "the kernel's answer where it had P2PDMA");
    let r = v.reasons.iter().find(|r| matches!(r, Reason::KernelWithoutP2pdma { .. })).expect("the kernel said");
    assert_eq!(r.severity(), peerpath_topo::Severity::Caveat);
    assert!(r.describe().contains("6.1.0-test") && r.describe().contains("P2P fails"), "{}", r.describe());
    assert!(r.remedy().unwrap().contains("CONFIG_PCI_P2PDMA=y"));
    let p = t.plan(&peerpath_topo::PlanRequest::new(["ssd0"], ["ssd1"])).unwrap();
    assert!(p.explain().contains("no P2PDMA"), "{}", p.explain());
}

/// A hidden per-path disk (`nvme3c3n1`, GENHD_FL_HIDDEN: no /dev node) is no endpoint: the
/// verdict refuses it, naming its head and the boot parameter, and a plan naming it is refused.
#[test]
fn a_hidden_multipath_path_disk_is_refused_as_an_endpoint() {
    let (_dir, t) = load(&fixture::iommu_multipath());
    let v = t.verdict("csp0", "nvme3c3n1").unwrap();
    let P2pPath::NotSupported { reason } = &v.path else { panic!("{:?}", v.path) };
    assert_eq!(reason, &Reason::HiddenNamespacePath { device: "nvme3c3n1".into(), head: Some("nvme3n1".into()) });
    assert!(reason.describe().contains("GENHD_FL_HIDDEN") && reason.describe().contains("cannot open"), "{}", reason.describe());
    let remedy = reason.remedy().unwrap();
    assert!(remedy.contains("nvme3n1") && remedy.contains("nvme_core.multipath=N"), "{remedy}");
    let e = t.plan(&peerpath_topo::PlanRequest::new(["nvme1n1"], ["nvme3c3n1"])).unwrap_err();
    assert!(matches!(&e, peerpath_topo::TopoError::WrongRole(m) if m.starts_with("nvme3c3n1 is one controller's path to multipath namespace nvme3n1") && m.contains("name the head nvme3n1")), "{e}");
}

/// A CMB in a BAR that `resource` lists as zeros: nvme_map_cmb clamps it to nothing, so the
/// reason is the absent BAR, and the remedy is not about alignment.
#[test]
fn a_cmb_in_an_absent_bar_says_the_bar_is_absent() {
    let mut spec = fixture::intel_switch_acs();
    let ssd0: peerpath_topo::Bdf = "0000:04:00.0".parse().unwrap();
    // 64 MiB (1 MiB units) with RDS and WDS, on BAR 2, which the SSD does not have.
    spec.nvme.iter_mut().find(|n| n.pci == ssd0).unwrap().cmb = Some(peerpath_topo::Cmb { cmbsz: 262680, cmbloc: 2 });
    let (_dir, t) = load(&spec);
    assert!(!t.device(ssd0).unwrap().bars.is_empty(), "BAR 0 was read");
    let v = t.verdict("ssd0", "csp0").unwrap();
    let P2pPath::NotSupported { reason } = &v.path else { panic!("{:?}", v.path) };
    let Reason::CmbNotRegistered { problem, fault, .. } = reason else { panic!("{reason:?}") };
    assert_eq!(*fault, peerpath_topo::cmb::CmbFault::BarAbsent);
    assert!(problem.contains("BAR 2 absent (zero length"), "{problem}");
    let remedy = reason.remedy().unwrap();
    assert!(!remedy.contains("aligned") && remedy.contains("CMBLOC"), "{remedy}");
}

/// A `p2pmem/` directory is P2PDMA's own: a config that says it is not set is contradicted, and
/// the provider is trusted (no "no device registers P2P memory" caveat).
#[test]
fn a_registered_provider_outweighs_a_config_without_p2pdma() {
    let dir = tempfile::tempdir().unwrap();
    fixture::intel_switch_acs().write(&dir.path().join("sys")).unwrap();
    std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
    std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), "6.18.0-pp\n").unwrap();
    std::fs::create_dir_all(dir.path().join("boot")).unwrap();
    std::fs::write(dir.path().join("boot/config-6.18.0-pp"), "CONFIG_PCI=y\n# CONFIG_PCI_P2PDMA is not set\n").unwrap();
    let t = Topology::from_sysfs(dir.path().join("sys")).unwrap();
    let k = t.kernel.as_ref().unwrap();
    assert_eq!(k.p2pdma, Some(true), "{k:?}");
    let said = k.p2pdma_source.as_deref().unwrap();
    assert!(said.contains("0000:03:00.0 has registered P2P memory") && said.contains("/boot/config-6.18.0-pp") && said.contains("contradicts"), "{said}");
    let v = t.verdict("csp0", "ssd0").unwrap();
    assert!(!has(&v.reasons, |r| matches!(r, Reason::KernelWithoutP2pdma { .. })), "{:?}", v.reasons);
    assert_eq!(v.path, P2pPath::BusAddress { distance: 4 });
    // Without a provider the config is believed.
    let mut spec = fixture::intel_switch_acs();
    spec.functions.iter_mut().for_each(|f| f.p2pmem = None);
    std::fs::remove_dir_all(dir.path().join("sys")).unwrap();
    spec.write(&dir.path().join("sys")).unwrap();
    let t = Topology::from_sysfs(dir.path().join("sys")).unwrap();
    assert_eq!(t.kernel.as_ref().unwrap().p2pdma, Some(false));
}

/// A partition (a directory in its disk's with a `partition` file, as sysfs lays it out) is
/// named as its disk's endpoint, and said to be a partition of it.
#[test]
fn a_partition_resolves_to_its_disk() {
    let dir = tempfile::tempdir().unwrap();
    fixture::intel_switch_acs().write(dir.path()).unwrap();
    let disk = std::fs::canonicalize(dir.path().join("class/block/nvme1n1")).unwrap();
    let part = disk.join("nvme1n1p1");
    std::fs::create_dir_all(&part).unwrap();
    for (f, v) in [("partition", "1\n"), ("start", "2048\n"), ("size", "7501474480\n")] {
        std::fs::write(part.join(f), v).unwrap();
    }
    fixture::symlink(&dir.path().join("class/block/nvme1n1p1"), &part).unwrap();
    let t = Topology::from_sysfs(dir.path()).unwrap();
    let ep = t.resolve("/dev/nvme1n1p1").unwrap();
    let whole = t.resolve("nvme1n1").unwrap();
    assert_eq!((ep.pci, ep.block, ep.partition_of.as_deref()), (whole.pci, whole.block, Some("nvme1n1")));
    assert!(t.explain("csp0", "nvme1n1p1").unwrap().contains("nvme1n1p1 (a partition of nvme1n1) = ssd0 (0000:04:00.0)"));
    assert_eq!(t.verdict("csp0", "nvme1n1p1").unwrap().path, P2pPath::BusAddress { distance: 4 });
    let p = t.plan(&peerpath_topo::PlanRequest::new(["nvme1n1p1"], ["ssd1"])).unwrap();
    assert!(p.explain().contains("read nvme1n1p1 (0000:04:00.0, partition of nvme1n1 (NVMe namespace), NUMA node 0): peer-to-peer"), "{}", p.explain());
    // The model keeps it, and a topology file exported from it reads back the same.
    assert!(t.block_devices.iter().any(|b| b.name == "nvme1n1p1" && b.kind == BlockKind::Partition && b.members == ["nvme1n1"]));
    assert_eq!(Topology::from_toml_str(&t.to_toml_string().unwrap()).unwrap(), t);
}
