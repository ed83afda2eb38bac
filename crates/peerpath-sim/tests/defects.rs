//! Plans that search every count, groupings that never lose throughput to another SSD, catalog
//! units and bounds, links that carry nothing, figures the report must call unknown.

use peerpath_sim::engine::{simulate, SimOptions};
use peerpath_sim::job::{Job, JobKind, Memory};
use peerpath_sim::reproduce::{reproduce, EPYC_CASE_STUDY, SEED004_SR635};
use peerpath_sim::sweep::{plan, sweep, Param, Vary};
use peerpath_sim::{Catalog, Machine, SimError};
use peerpath_topo::Topology;

const CATALOG: &str = include_str!("../../../sim/catalog.toml");

fn exact() -> SimOptions {
    SimOptions { seed: 7, size_jitter: 0.0 }
}

fn epyc_topo() -> Topology {
    Topology::from_toml_str(EPYC_CASE_STUDY).unwrap()
}

#[test]
fn a_plan_searches_past_a_flat_stretch_to_the_limit() {
    // compress-cpu on the EPYC: SSDs 0-8 are all on socket 0 (22 Gb/s, its cores); the 10th is
    // the first on socket 1 and doubles it. The plan stopped at 3 and called 30 unreachable.
    let job = Job::new(JobKind::CompressCpu);
    let p = plan(&epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &job, Param::Ssd, 30.0, 256, &exact()).unwrap();
    assert_eq!(p.count, Some(10), "{}", p.render());
    assert!((p.throughput_gbit_per_s - 44.0).abs() < 0.1, "{}", p.render());
    // Out of reach: the most it found, where first, and up to how many it looked.
    let p = plan(&epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &job, Param::Ssd, 60.0, 24, &exact()).unwrap();
    assert_eq!(p.count, None);
    assert!(p.why.contains("up to 24 ssds") && p.why.contains("44.0 Gb/s, first at 10"), "{}", p.why);
    // A target of almost nothing prints as a number, not "0.0".
    let p = plan(&epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &Job::new(JobKind::CompressP2p), Param::Csp, 1e-300, 4, &exact()).unwrap();
    assert!(p.render().contains("target 1.000e-300 Gb/s"), "{}", p.render());
}

#[test]
fn adding_an_ssd_never_lowers_compress_p2p_and_groups_name_each_ssd_once_per_role() {
    let vary = Vary::parse("ssd=2..20").unwrap();
    let sw = sweep(&epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &Job::new(JobKind::CompressP2p), &vary, &exact()).unwrap();
    assert!(sw.skipped.is_empty(), "{}", sw.render());
    assert!(sw.points.windows(2).all(|w| w[1].throughput_gbit_per_s >= w[0].throughput_gbit_per_s * (1.0 - 1e-9)), "{}", sw.render());
    // Six SSDs already feed all six CSPs (three on each socket), at their links' rate.
    let six = sw.points.iter().find(|p| p.value == 6).unwrap();
    assert!((six.throughput_gbit_per_s - 163.7).abs() < 0.1, "{}", sw.render());
    let topo = epyc_topo();
    for n in [3, 11, 15] {
        let m = Machine::new(topo.clone(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s")).unwrap();
        let mut job = Job::new(JobKind::CompressP2p);
        job.ssds = Some(n);
        let r = simulate(&m, &job, &exact()).unwrap();
        // The CSPs' groups (the lines after them say which SSDs several CSPs share).
        for g in r.plan.iter().filter(|g| g.contains(" -> target ")) {
            let (srcs, rest) = g.split_once(" -> target ").unwrap();
            let srcs: Vec<&str> = srcs.split_once("sources ").unwrap().1.split(", ").collect();
            let mut dedup = srcs.clone();
            dedup.sort();
            dedup.dedup();
            assert_eq!(dedup.len(), srcs.len(), "--ssds {n}: {g}");
            assert!(!rest.split(" (").next().unwrap().contains(','), "--ssds {n}: one target per CSP: {g}");
        }
    }
}

#[test]
fn two_ssds_run_compress_p2p_and_one_is_refused_or_skipped_by_name() {
    let m = Machine::new(epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s")).unwrap();
    let mut job = Job::new(JobKind::CompressP2p);
    job.ssds = Some(2);
    let r = simulate(&m, &job, &exact()).unwrap();
    assert!(r.throughput_gbit_per_s > 27.0, "{}", r.render());
    job.ssds = Some(1);
    let e = simulate(&m, &job, &exact()).unwrap_err().to_string();
    assert!(e.contains("needs two SSDs") && e.contains("the job has 1 SSD (--ssds 1)") && !e.contains("catalog"), "{e}");
    let sw = sweep(&epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &Job::new(JobKind::CompressP2p), &Vary::parse("ssd=1..3").unwrap(), &exact()).unwrap();
    assert_eq!(sw.points.iter().map(|p| p.value).collect::<Vec<_>>(), vec![2, 3]);
    assert_eq!(sw.skipped.len(), 1);
    assert!(sw.render().contains("    1 skipped: compress-p2p needs two SSDs"), "{}", sw.render());
}

#[test]
fn catalog_units_are_converted_or_refused_by_field() {
    let pm9a3 = "seq_read_bytes_per_s = { value = 6.5e9, unit = \"B/s\"";
    assert!(CATALOG.contains(pm9a3));
    let with = |v: &str| Catalog::from_toml_str(&CATALOG.replace(pm9a3, &format!("seq_read_bytes_per_s = {{ {v}"))).map(|c| c.ssds.iter().find(|s| s.name.contains("pm9a3")).unwrap().seq_read_bytes_per_s.value.unwrap());
    for (v, want) in [("value = 6.5, unit = \"GB/s\"", 6.5e9), ("value = 6500, unit = \"MB/s\"", 6.5e9), ("value = 52, unit = \"Gb/s\"", 6.5e9), ("value = 1, unit = \"GiB/s\"", 1073741824.0)] {
        let got = with(v).unwrap();
        assert!((got - want).abs() < 1.0, "{v}: {got}");
    }
    for v in ["value = 6.5, unit = \"us\"", "value = 6.5, unit = \"furlongs\""] {
        let e = with(v).unwrap_err().to_string();
        assert!(e.contains("seq_read_bytes_per_s: unit"), "{e}");
    }
    // The seed-004 read then runs at the datasheet's rate, not 6.5 B/s.
    let cat = Catalog::from_toml_str(&CATALOG.replace(pm9a3, "seq_read_bytes_per_s = { value = 6.5, unit = \"GB/s\"")).unwrap();
    let m = Machine::new(Topology::from_toml_str(SEED004_SR635).unwrap(), &cat, None).unwrap();
    let r = simulate(&m, &Job::new(JobKind::Read { into: Memory::Host }), &exact()).unwrap();
    assert!((r.throughput_bytes_per_s - 26e9).abs() < 1e6, "{}", r.render());
}

#[test]
fn catalog_figures_looser_than_the_command_line_are_refused_by_name() {
    let refused = |from: &str, to: &str, says: &str| {
        assert!(CATALOG.contains(from), "{from}");
        let e = Catalog::from_toml_str(&CATALOG.replacen(from, to, 1)).unwrap_err();
        assert!(matches!(e, SimError::Catalog(_)), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    };
    refused("cmb_efficiency = { value = 1.0", "cmb_efficiency = { value = 2.0", "cmb_efficiency: 2 is above 1");
    refused("compress_ratio_zlib_1 = { value = 1.784", "compress_ratio_zlib_1 = { value = 0.4", "compress_ratio_zlib_1: 0.4 is not a compression ratio");
    refused("compress_ratio_zlib_1 = { value = 1.784", "compress_ratio_zlib_1 = { value = 1e9", "compress_ratio_zlib_1: 1000000000 is not a compression ratio");
    refused("max_payload_bytes = { value = 256", "max_payload_bytes = { value = 100", "max_payload_bytes: 100 is not a PCIe Max_Payload_Size");
    refused("framing_bytes = { value = 8,", "framing_bytes = { value = 100,", "framing_bytes: 100 B is more than any PCIe TLP framing");
    refused("read_request_bytes = { value = 512,", "read_request_bytes = { value = 3,", "read_request_bytes: 3 is not a PCIe Max_Read_Request_Size");
    refused("seq_read_bytes_per_s = { value = 6.5e9", "seq_read_bytes_per_s = { value = 1e-300", "seq_read_bytes_per_s: 0.000");
    let first = CATALOG.split("[[platform]]").nth(1).unwrap();
    let name = first.lines().find_map(|l| l.strip_prefix("name = ")).unwrap();
    let twice = format!("{CATALOG}\n[[platform]]{}", first.split("\n[[").next().unwrap());
    let e = Catalog::from_toml_str(&twice).unwrap_err().to_string();
    assert!(e.contains(&format!("platform {}: a second [[platform]]", name.trim_matches('"'))), "{e}");
    let ssd = CATALOG.split("[[ssd]]").nth(1).unwrap().split("\n[[").next().unwrap();
    let copy: String = ssd.lines().filter(|l| !l.starts_with("models")).map(|l| if l.starts_with("name = ") { "name = \"copy\"\n".to_string() } else { format!("{l}\n") }).collect();
    let e = Catalog::from_toml_str(&format!("{CATALOG}\n[[ssd]]{copy}")).unwrap_err().to_string();
    assert!(e.contains("ssd copy.pci_ids") && e.contains("the first entry would always win"), "{e}");
}

#[test]
fn a_link_that_carries_nothing_or_no_pcie_rate_is_refused_by_device() {
    let ssd0 = SEED004_SR635.find("label = \"ssd0\"").unwrap();
    let at = |from: &str, to: &str| {
        let i = ssd0 + SEED004_SR635[ssd0..].find(from).unwrap();
        let t = format!("{}{to}{}", &SEED004_SR635[..i], &SEED004_SR635[i + from.len()..]);
        Machine::new(Topology::from_toml_str(&t).unwrap(), &Catalog::default_catalog(), None).map(|_| ()).unwrap_err()
    };
    for (from, to, says) in [
        ("current_width = 4", "current_width = 0", "width 0: the link is down"),
        ("current_width = 4", "current_width = 3", "x3 is not a PCIe link width"),
        ("current_width = 4, max_width = 4", "current_width = 8, max_width = 4", "wider than its own maximum x4"),
        ("current_speed = \"16.0 GT/s\"", "current_speed = \"7.0 GT/s\"", "7.0 GT/s is not a PCIe signalling rate"),
        // Trained beyond what either end can: simulated at the impossible rate.
        ("current_speed = \"16.0 GT/s\"", "current_speed = \"32.0 GT/s\"", "trained at 32.0 GT/s, faster than its own maximum 16.0 GT/s"),
        ("current_width = 4, max_width = 4", "current_width = 8, max_width = 8", "trained at x8, wider than the maximum of its port 0000:00:03.1: x4"),
        ("current_speed = \"16.0 GT/s\", max_speed = \"16.0 GT/s\"", "current_speed = \"32.0 GT/s\", max_speed = \"32.0 GT/s\"", "faster than the maximum of its port 0000:00:03.1: 16.0 GT/s"),
    ] {
        let e = at(from, to);
        assert!(matches!(e, SimError::Topology(_)), "{e}");
        assert!(e.to_string().contains("ssd0: PCIe link") && e.to_string().contains(says), "{e}");
    }
    // PCIe 7's rate (128 GT/s), which the topology reader knows, is a rate (it was refused).
    let t = SEED004_SR635.replacen("current_speed = \"16.0 GT/s\"", "current_speed = \"128.0 GT/s\"", 1);
    assert!(t != SEED004_SR635);
    Machine::new(Topology::from_toml_str(&t).unwrap(), &Catalog::default_catalog(), None).unwrap();
}

#[test]
fn a_p2p_job_without_an_orchestration_figure_says_its_host_cpu_is_unknown() {
    let m = Machine::new(Topology::from_toml_str(SEED004_SR635).unwrap(), &Catalog::default_catalog(), None).unwrap();
    assert!(m.platform.orchestration_core_s_per_gb.is_none());
    for job in [Job::new(JobKind::CompressP2p), Job::new(JobKind::Write { from: Memory::Cmb(None) })] {
        let r = simulate(&m, &job, &exact()).unwrap();
        assert!(r.unknowns.iter().any(|u| u.starts_with("host CPU orchestrating the job on amd-epyc-7302p-1s")), "{}", r.render());
        assert!(r.render().contains("orchestration unknown"), "{}", r.render());
    }
    // Where the platform has one, it is counted and nothing is unknown about it.
    let e = Machine::new(epyc_topo(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s")).unwrap();
    let r = simulate(&e, &Job::new(JobKind::CompressP2p), &exact()).unwrap();
    assert!(r.host_cpu_cores_used > 0.0 && !r.unknowns.iter().any(|u| u.starts_with("host CPU")));
}

#[test]
fn a_published_range_is_compared_from_its_nearer_end() {
    let r = reproduce(&Catalog::default_catalog()).unwrap();
    let lat = r.rows.iter().find(|r| r.figure == "4 KiB read latency (card 0)").unwrap();
    assert_eq!((lat.published_low, lat.published), (70.0, 125.0));
    assert!((lat.error - (53.2 - 70.0) / 70.0).abs() < 0.01, "{}", lat.error);
    assert!(r.render().contains("-24%"), "{}", r.render());
    let single = r.rows.iter().find(|r| r.published_text == "3.3 GB/s").unwrap();
    assert_eq!(single.published_low, single.published);
}

#[test]
fn an_unknown_job_lists_every_job() {
    let e = Job::parse("nope").unwrap_err().to_string();
    assert!(e.contains("send-nicmem"), "{e}");
}

/// Clones took the bus past the highest in use, and the EPYC's reach ff (host bridge e0): at
/// 35 CSPs there was "no free bus number left" with 224 of the domain's 256 free. The clones
/// now take the free ones below too, each on a bus of its own under its template's root
/// complex; past the domain's 256 the error says how many fit and why.
#[test]
fn clones_take_every_free_bus_of_the_domain_and_say_the_limit_past_it() {
    let topo = epyc_topo();
    let cat = Catalog::default_catalog();
    let job = Job::new(JobKind::CompressP2p);
    let m0 = Machine::new(topo.clone(), &cat, None).unwrap();
    let originals: Vec<usize> = m0.csps();
    let used: std::collections::BTreeSet<u8> = topo.devices.iter().map(|d| d.bdf.bus).collect();
    let fit = originals.len() + 256 - used.len();
    let (m, _) = peerpath_sim::sweep::apply(&topo, &cat, None, &job, Param::Csp, fit as u32).unwrap();
    let csps = m.csps();
    assert_eq!(csps.len(), fit);
    m.topology.clone().normalize().unwrap();
    let buses: std::collections::BTreeSet<u8> = m.topology.devices.iter().map(|d| d.bdf.bus).collect();
    assert_eq!(buses.len(), 256, "every bus number in use once the domain is full");
    for &c in &csps {
        let n = &m.nodes[c];
        let k: usize = n.name.strip_prefix("csp").unwrap().parse().unwrap();
        let t = &m0.nodes[originals[k.checked_sub(originals.len()).map_or(k, |i| i % originals.len())]];
        // Each clone alone on its bus, under its template's root complex and socket.
        assert_eq!(m.topology.devices.iter().filter(|d| d.bdf.bus == n.bdf.unwrap().bus).count(), 1, "{}", n.name);
        assert_eq!((&n.host_bridge, n.socket), (&t.host_bridge, t.socket), "{} like {}", n.name, t.name);
    }
    let e = peerpath_sim::sweep::apply(&topo, &cat, None, &job, Param::Csp, fit as u32 + 1).unwrap_err().to_string();
    assert!(e.contains("no free bus number") && e.contains(&format!("at most {fit} csps fit")), "{e}");
}

#[test]
fn catalog_ids_counts_latencies_and_cmb_products_that_cannot_be_are_refused_by_name() {
    let refused = |from: &str, to: &str, says: &[&str]| {
        assert!(CATALOG.contains(from), "{from}");
        let e = Catalog::from_toml_str(&CATALOG.replacen(from, to, 1)).unwrap_err();
        assert!(matches!(e, SimError::Catalog(_)), "{e}");
        assert!(says.iter().all(|s| e.to_string().contains(s)), "{e}");
    };
    // A malformed PCI id was taken and never matched.
    refused("pci_ids = [\"144d:a824\"]", "pci_ids = [\"144d-a824\"]", &["ssd samsung-pm1733.pci_ids: '144d-a824' is not a PCI vendor:device id"]);
    refused("pci_ids = [\"144d:a824\"]", "pci_ids = [\"144d:a82\"]", &["'144d:a82' is not a PCI vendor:device id"]);
    // 1e12 crossings or a 1e300 ns switch crossing gave seed 001's dd read 0.00 GB/s.
    refused("read_crossings = { value = 6,", "read_crossings = { value = 1e12,", &["nvme.read_crossings: 1000000000000 is not a whole number of PCIe crossings"]);
    refused("write_crossings = { value = 7,", "write_crossings = { value = 6.5,", &["nvme.write_crossings: 6.5 is not a whole number"]);
    refused("crossing_latency_ns = { value = 100,", "crossing_latency_ns = { value = 2e9,", &["crossing_latency_ns: 2000000000 ns is more than 1 s"]);
    refused("value = 52.6, unit = \"us\"", "value = 2, unit = \"s\"", &["read_4k_latency_us: 2000000 us is more than 1 s"]);
    // Finite banks, bits and MT/s whose product is not: "peak at inf GB/s".
    refused("cmb_bank_mt_per_s = { value = 3200", "cmb_bank_mt_per_s = { value = 1e305", &["csp eideticom-noload-ia440i: its CMB memory", "no device's rate"]);
    refused("cmb_bank_mt_per_s = { value = 3200", "cmb_bank_mt_per_s = { value = 1e-9", &["csp eideticom-noload-ia440i: its CMB memory"]);
    // The shipped figures stay in bounds; a 1 s latency is the most taken.
    Catalog::from_toml_str(&CATALOG.replacen("value = 52.6, unit = \"us\"", "value = 1, unit = \"s\"", 1)).unwrap();
}

#[test]
fn a_sweep_table_says_the_notes_its_json_carries_once_each() {
    let sw = sweep(&epyc_topo(), &Catalog::default_catalog(), None, &Job::new(JobKind::CompressP2p), &Vary::parse("gen=3..4").unwrap(), &exact()).unwrap();
    let text = sw.render();
    let notes: Vec<&String> = sw.points.iter().flat_map(|p| &p.notes).collect();
    assert!(notes.iter().any(|n| n.contains("engine throughput unknown (unlimited)")), "{notes:?}");
    // Every note is said, once: one said of each CSP alike is one line naming them all.
    for n in &notes {
        let what = n.split_once(": ").map_or(n.as_str(), |(_, w)| w);
        assert_eq!(text.lines().filter(|l| l.starts_with("note: ") && l.ends_with(what)).count(), 1, "{n}\n{text}");
    }
    assert!(text.contains("note: csp0..csp5: compress-zlib-1 engine throughput unknown (unlimited)\n"), "{text}");
}
