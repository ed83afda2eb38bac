//! The placement planner's grouping on each committed fixture (read from its `sys/` tree and
//! from its topology file), determinism, and the JSON round trip.

use std::collections::BTreeSet;

use peerpath_topo::fixture;
use peerpath_topo::plan::{DecisionKind, Executor, Leg};
use peerpath_topo::{DeviceSelection, Plan, PlanRequest, TopoError, Topology};

/// The committed fixture `name`, read from its sysfs tree; its topology file must give the same
/// model as far as planning goes (checked by `same_plan_from_sysfs_and_file`).
fn sysfs(name: &str) -> Topology {
    Topology::from_sysfs(fixture::committed_fixtures_dir().join(name).join("sys"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn file(name: &str) -> Topology {
    Topology::from_toml_file(fixture::committed_fixtures_dir().join(name).join("topology.toml"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn names(v: impl IntoIterator<Item = impl ToString>) -> Vec<String> {
    v.into_iter().map(|x| x.to_string()).collect()
}

fn node_of(t: &Topology, label: &str) -> u32 {
    t.devices
        .iter()
        .find(|d| d.label.as_deref() == Some(label))
        .and_then(|d| d.numa_node)
        .unwrap_or_else(|| panic!("{label} has no node"))
}

/// The case study: 12 source SSDs and 6 target SSDs, split evenly over the two sockets.
fn case_study_request() -> PlanRequest {
    let sources = (0..6).chain(9..15).map(|i| format!("ssd{i}"));
    let targets = (6..9).chain(15..18).map(|i| format!("ssd{i}"));
    PlanRequest::new(sources, targets)
}

#[test]
fn epyc_case_study_each_csp_with_three_ssds_of_its_node() {
    let t = sysfs("epyc-case-study");
    let p = t.plan(&case_study_request()).unwrap();
    println!("{}\n{}", p.render_table(), p.explain());
    assert_eq!(p.streams.len(), 12);
    assert_eq!(p.groups.len(), 6, "{}", p.render_table());
    let mut seen_ssds = BTreeSet::new();
    for (i, g) in p.groups.iter().enumerate() {
        let csp = format!("csp{i}");
        assert_eq!(g.executor.name(), csp);
        assert_eq!(g.sources.len(), 2, "{csp}: {g:?}");
        assert_eq!(g.targets.len(), 1, "{csp}: {g:?}");
        assert_eq!(g.streams.len(), 2);
        assert_eq!((g.p2p_legs, g.host_legs), (4, 0));
        let node = node_of(&t, &csp);
        for ssd in g.sources.iter().chain(&g.targets) {
            assert_eq!(node_of(&t, ssd), node, "{csp} serves {ssd} of another node");
            assert!(seen_ssds.insert(ssd.clone()), "{ssd} in two groups");
        }
    }
    assert_eq!(seen_ssds.len(), 18);
    // Nothing crosses sockets, nothing bounces: every leg is P2P through the host bridge, 4.
    for s in &p.streams {
        let Executor::Device { node, .. } = &s.executor else { panic!("{s:?} on the CPU") };
        assert_eq!(Some(node_of(&t, &s.source)), *node);
        assert_eq!(Some(node_of(&t, &s.target)), *node);
        assert_eq!(s.read, Leg::ThroughHostBridge { distance: 4 });
        assert_eq!(s.write, Leg::ThroughHostBridge { distance: 4 });
    }
    // The exact grouping, as the README states it.
    let expect = [
        ("csp0", ["ssd0", "ssd3"], "ssd6"),
        ("csp1", ["ssd1", "ssd4"], "ssd7"),
        ("csp2", ["ssd2", "ssd5"], "ssd8"),
        ("csp3", ["ssd9", "ssd12"], "ssd15"),
        ("csp4", ["ssd10", "ssd13"], "ssd16"),
        ("csp5", ["ssd11", "ssd14"], "ssd17"),
    ];
    for (csp, srcs, tgt) in expect {
        let g = p.group(csp).unwrap();
        assert_eq!(g.sources, names(srcs), "{csp}");
        assert_eq!(g.targets, names([tgt]), "{csp}");
    }
    // Explanations: why this device, why not the others (distance, verdict reason, node).
    let text = p.explain();
    assert!(text.contains("not csp3: neither leg can go peer-to-peer"), "{text}");
    assert!(text.contains("different sockets"), "{text}");
    assert!(text.contains("equally near"), "{text}");
    assert!(text.contains("distance 4"), "{text}");
    assert!(text.contains("NUMA node 0"), "{text}");
    for d in &p.devices {
        assert!(d.usable && d.streams == 2, "{d:?}");
    }
}

#[test]
fn epyc_cross_socket_pair_bounces_on_the_targets_node() {
    // Asked to write a socket-0 SSD to a socket-1 SSD: P2P on one side only, never across.
    let t = sysfs("epyc-case-study");
    let p = t.plan(&PlanRequest::new(["ssd0"], ["ssd9"])).unwrap();
    let s = &p.streams[0];
    assert_eq!(s.host_legs(), 1, "{}", p.explain());
    let Executor::Device { node, name, .. } = &s.executor else { panic!() };
    assert_eq!(name, "csp0", "the first near device of the source's socket");
    assert_eq!(*node, Some(0));
    assert_eq!(s.read, Leg::ThroughHostBridge { distance: 4 });
    match &s.write {
        Leg::Bounce { node, why } => {
            assert_eq!(*node, Some(1), "bounce buffer on the target's node");
            assert_eq!(why.code, "numa");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn epyc_balances_one_target_over_equally_near_devices() {
    // Six sources, one target, three CSPs on the node: two streams each.
    let t = sysfs("epyc-case-study");
    let p = t.plan(&PlanRequest::new((0..6).map(|i| format!("ssd{i}")), ["ssd6"])).unwrap();
    let loads: Vec<usize> = p.groups.iter().map(|g| g.streams.len()).collect();
    assert_eq!(loads, vec![2, 2, 2], "{}", p.render_table());
    assert!(p.groups.iter().all(|g| g.targets == names(["ssd6"])));
    // Naming devices restricts the choice.
    let p = t
        .plan(&PlanRequest::new(["ssd0", "ssd1"], ["ssd6"]).with_devices(DeviceSelection::parse("csp2").unwrap()))
        .unwrap();
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].executor.name(), "csp2");
}

#[test]
fn intel_switch_acs_port_bounces_switch_siblings_go_p2p() {
    let t = sysfs("intel-switch-acs");
    let p = t.plan(&PlanRequest::new(["ssd0", "ssd2", "ssd4"], ["ssd1", "ssd3"])).unwrap();
    println!("{}\n{}", p.render_table(), p.explain());
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].executor.name(), "csp0");
    let by_source = |n: &str| p.streams.iter().find(|s| s.source == n).unwrap();
    // Below the switch, no ACS: bus address both ways.
    let s0 = by_source("ssd0");
    assert_eq!(s0.read, Leg::BusAddress { distance: 4 });
    assert!(matches!(s0.write, Leg::BusAddress { distance: 4 }));
    // Behind the ACS-redirect port: a host bounce buffer on node 0, with the boot parameter.
    let s2 = by_source("ssd2");
    match &s2.read {
        Leg::Bounce { node, why } => {
            assert_eq!(*node, Some(0));
            assert_eq!(why.code, "acs");
            assert!(why.text.contains("0000:02:03.0"), "{}", why.text);
            assert!(why.remedy.as_deref().unwrap().contains("pci=disable_acs_redir=0000:02:03.0"));
        }
        other => panic!("ssd2 read: {other:?}"),
    }
    assert!(s2.write.is_p2p());
    // On its own root port, the host bridge is not allow-listed: bounced too, with that reason.
    let s4 = by_source("ssd4");
    match &s4.read {
        Leg::Bounce { why, .. } => assert_eq!(why.code, "hb"),
        other => panic!("ssd4 read: {other:?}"),
    }
    let text = p.explain();
    assert!(text.contains("pci=disable_acs_redir=0000:02:03.0"), "{text}");
    assert!(text.contains("host bounce buffer on NUMA node 0"), "{text}");
    assert!(text.contains("allow-list"), "{text}");
    // Targets are shared out: ssd0 -> ssd1 (first), ssd2 -> ssd3 (fewer sources).
    assert_eq!(s0.target, "ssd1");
    assert_eq!(s2.target, "ssd3");
}

#[test]
fn fpga_cascade_no_p2p_memory_anywhere_is_all_cpu() {
    let t = sysfs("fpga-cascade");
    let p = t.plan(&PlanRequest::new(["ssd0", "ssd5", "ssd31"], ["ssd1", "ssd30"])).unwrap();
    println!("{}\n{}", p.render_table(), p.explain());
    assert!(p.devices.is_empty());
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].executor, Executor::Cpu { node: Some(0) });
    for s in &p.streams {
        assert_eq!(s.read, Leg::Host { node: Some(0) });
        assert_eq!(s.write, Leg::Host { node: Some(0) });
        let d = &p.decisions[s.decision];
        assert_eq!(d.choice, "host CPU");
        assert!(d.why[0].contains("no published P2P memory") || d.why[0].contains("has no CSP"), "{:?}", d.why);
    }
    let text = p.explain();
    assert!(text.contains("no device in this topology has published P2P memory"), "{text}");
    // Naming an SSD as the device: refused with the verdict's reason (no P2P memory).
    let p = t
        .plan(&PlanRequest::new(["ssd0"], ["ssd1"]).with_devices(DeviceSelection::parse("ssd2").unwrap()))
        .unwrap();
    assert!(!p.devices[0].usable);
    assert!(p.devices[0].why.contains("no P2P memory"), "{}", p.devices[0].why);
    assert!(p.streams[0].executor.is_cpu());
}

#[test]
fn iommu_multipath_stacked_targets_refused_with_the_block_layer_reason() {
    let t = sysfs("iommu-multipath");
    let p = t.plan(&PlanRequest::new(["nvme1n1", "nvme2n1"], ["md0", "nvme3n1"])).unwrap();
    println!("{}\n{}", p.render_table(), p.explain());
    assert_eq!(p.groups.len(), 1);
    assert_eq!(p.groups[0].executor.name(), "csp0");
    let mut targets = BTreeSet::new();
    for s in &p.streams {
        // Reading the switch siblings works (through the host bridge: the IOMMU forced ACS).
        assert_eq!(s.read, Leg::ThroughHostBridge { distance: 4 }, "{s:?}");
        match &s.write {
            Leg::Bounce { node, why } => {
                assert_eq!(*node, Some(0));
                assert_eq!(why.code, "blk");
                assert!(why.text.contains("EREMOTEIO"), "{}", why.text);
                let kind = if s.target == "md0" { "md RAID" } else { "NVMe multipath head" };
                assert!(why.text.contains(kind), "{}", why.text);
            }
            other => panic!("{} -> {}: {other:?}", s.source, s.target),
        }
        targets.insert(s.target.clone());
    }
    assert_eq!(targets.len(), 2, "each target gets one source");
    let text = p.explain();
    assert!(text.contains("nvme_core.multipath=N"), "{text}");
    assert!(text.contains("ACS redirect"), "{text}");
    // Both legs refused: the CPU path, saying why.
    let p = t.plan(&PlanRequest::new(["md0"], ["nvme3n1"])).unwrap();
    let s = &p.streams[0];
    assert_eq!(s.executor, Executor::Cpu { node: Some(0) });
    let d = &p.decisions[s.decision];
    assert!(d.rejected.iter().any(|r| r.option == "csp0" && r.why.contains("EREMOTEIO")), "{d:?}");
    // Devices whose CMB is not usable are named, with the verdict's reason.
    let p = t
        .plan(&PlanRequest::new(["ssd0"], ["ssd1"]).with_devices(DeviceSelection::parse("nvme5,nvme6,csp0").unwrap()))
        .unwrap();
    let why = |n: &str| p.devices.iter().find(|d| d.name == n).unwrap().why.clone();
    assert!(why("ssd-cmb-nords").contains("not published"), "{}", why("ssd-cmb-nords"));
    assert!(why("ssd-cmb-small").contains("did not register"), "{}", why("ssd-cmb-small"));
    assert_eq!(p.streams[0].executor.name(), "csp0");
}

#[test]
fn plans_are_deterministic_and_same_from_sysfs_and_file() {
    for (name, req) in [
        ("epyc-case-study", case_study_request()),
        ("intel-switch-acs", PlanRequest::new(["ssd0", "ssd2", "ssd4"], ["ssd1", "ssd3"])),
        ("fpga-cascade", PlanRequest::new(["ssd0", "ssd9"], ["ssd20"])),
        ("iommu-multipath", PlanRequest::new(["nvme1n1", "nvme2n1"], ["md0", "nvme3n1"])),
    ] {
        let a = sysfs(name).plan(&req).unwrap();
        let b = sysfs(name).plan(&req).unwrap();
        let c = file(name).plan(&req).unwrap();
        assert_eq!(a, b, "{name}");
        assert_eq!(a, c, "{name}: the topology file plans differently from the sysfs tree");
        assert_eq!(a.to_json_string().unwrap(), c.to_json_string().unwrap());
        assert_eq!(a.explain(), b.explain());
    }
}

#[test]
fn json_round_trip() {
    for (name, req) in [
        ("epyc-case-study", case_study_request()),
        ("intel-switch-acs", PlanRequest::new(["ssd0", "ssd2", "ssd4"], ["ssd1", "ssd3"])),
        ("fpga-cascade", PlanRequest::new(["ssd0"], ["ssd1"]).with_devices(DeviceSelection::parse("ssd2").unwrap())),
        ("iommu-multipath", PlanRequest::new(["md0", "nvme1n1"], ["nvme3n1"])),
    ] {
        let p = sysfs(name).plan(&req).unwrap();
        let json = p.to_json_string().unwrap();
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p, "{name}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(v["streams"][0]["read"]["path"].is_string());
        assert!(v["decisions"].as_array().unwrap().iter().all(|d| d["why"].as_array().is_some_and(|w| !w.is_empty())));
        let req_back: PlanRequest = serde_json::from_value(v["request"].clone()).unwrap();
        assert_eq!(req_back, req);
    }
}

#[test]
fn explicit_pairs_are_kept_and_checked() {
    let t = sysfs("epyc-case-study");
    // Two files on ssd0 (one stream each), both to ssd6; one from ssd1 to ssd7.
    let req = PlanRequest::new(["ssd0", "ssd0", "ssd1"], ["ssd6", "ssd7"]).with_pairs(vec![(0, 0), (1, 0), (2, 1)]);
    let p = t.plan(&req).unwrap();
    let pairs: Vec<(String, String)> = p.streams.iter().map(|s| (s.source.clone(), s.target.clone())).collect();
    assert_eq!(pairs, vec![("ssd0".into(), "ssd6".into()), ("ssd0".into(), "ssd6".into()), ("ssd1".into(), "ssd7".into())]);
    assert!(!p.decisions.iter().any(|d| d.kind == DecisionKind::Pairing));
    // ssd0 -> ssd6 twice: one device each (fair share 1 of 3 near devices), then ssd1 -> ssd7.
    assert_eq!(p.groups.len(), 3, "{}", p.render_table());
    for bad in [vec![(0, 0), (0, 1), (2, 1)], vec![(0, 0), (2, 1)], vec![(0, 5), (1, 0), (2, 0)]] {
        let r = req.clone().with_pairs(bad.clone());
        assert!(matches!(t.plan(&r), Err(TopoError::Invalid(_))), "{bad:?}");
    }
}

#[test]
fn unknown_names_and_block_devices_as_devices_are_errors() {
    let t = sysfs("iommu-multipath");
    assert!(matches!(t.plan(&PlanRequest::new(["nope"], ["ssd0"])), Err(TopoError::UnknownDevice { .. })));
    assert!(matches!(t.plan(&PlanRequest::new(["ssd0"], ["nope"])), Err(TopoError::UnknownDevice { .. })));
    let r = PlanRequest::new(["ssd0"], ["ssd1"]).with_devices(DeviceSelection::parse("md0").unwrap());
    assert!(matches!(t.plan(&r), Err(TopoError::WrongRole(_))));
    let r = PlanRequest::new(["ssd0"], ["ssd1"]).with_devices(DeviceSelection::parse("cpu").unwrap());
    let p = t.plan(&r).unwrap();
    assert!(p.streams[0].executor.is_cpu());
    assert!(p.explain().contains("CPU only"));
}

#[test]
fn idle_devices_and_unused_targets_are_explained() {
    let t = sysfs("epyc-case-study");
    // Socket 0 only, and one target more than the sources need.
    let p = t.plan(&PlanRequest::new(["ssd0", "ssd1"], ["ssd6", "ssd7", "ssd8"])).unwrap();
    assert_eq!(p.groups.len(), 2, "{}", p.render_table());
    let idle: Vec<&str> = p
        .decisions
        .iter()
        .filter(|d| d.kind == DecisionKind::Idle)
        .map(|d| d.subject.as_str())
        .collect();
    assert_eq!(idle, vec!["csp2", "csp3", "csp4", "csp5", "target ssd8"]);
    let why = |subject: &str| p.decisions.iter().find(|d| d.subject == subject).unwrap().why.join(" ");
    assert!(why("csp2").contains("equally near"), "{}", why("csp2"));
    assert!(why("csp3").contains("different sockets"), "{}", why("csp3"));
    assert!(why("target ssd8").contains("nearer or less loaded"), "{}", why("target ssd8"));
    let table = p.render_table();
    assert!(table.contains("target ssd8: unused"), "{table}");
    // Explicit pairs: the explanation says so.
    let p = t.plan(&PlanRequest::new(["ssd0"], ["ssd6"]).with_pairs(vec![(0, 0)])).unwrap();
    assert!(p.explain().contains("Pairing: given by the request (1 pair)"), "{}", p.explain());
}

/// A bridge holds no data: a host bridge or a switch port named as a source or target is
/// refused, saying what it is (it was planned as storage).
#[test]
fn a_bridge_is_no_storage() {
    let t = sysfs("intel-switch-acs");
    for (bridge, what) in [("0000:00:00.0", "host bridge"), ("0000:02:03.0", "switch downstream port")] {
        for req in [PlanRequest::new([bridge], ["ssd1"]), PlanRequest::new(["ssd0"], [bridge])] {
            let e = t.plan(&req).unwrap_err();
            assert!(matches!(&e, TopoError::WrongRole(m) if m.contains(what) && m.contains("not storage")), "{bridge}: {e}");
        }
    }
}
