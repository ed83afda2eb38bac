//! `peerpath sim`'s inputs on arbitrary text: the first byte picks a device
//! catalog (`--catalog`, seeded with the shipped `sim/catalog.toml`), or a
//! job, its numbers and a what-if sweep, one line each (`--job`; `--ratio`,
//! `--csps`, `--ssds`, `--queue-depth` and `--threads`, `-` for none;
//! `--vary`). A catalog or an error, never a panic; every figure of a
//! catalog read is finite and not negative, its PCI ids can match, its CMB rates
//! are finite and at least 1 kB/s, and the epyc case study (a
//! fixture of peerpath-topo) simulates with it, a result or an error. A job
//! and a sweep parsed run on that machine with the shipped catalog, a result
//! or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_sim::sweep::{self, Vary};
use peerpath_sim::{simulate, Catalog, Job, JobKind, Machine, SimOptions};
use peerpath_topo::Topology;
use std::sync::OnceLock;

fn machine() -> &'static (Topology, Catalog) {
    static M: OnceLock<(Topology, Catalog)> = OnceLock::new();
    M.get_or_init(|| (Topology::from_toml_str(include_str!("../../crates/peerpath-topo/fixtures/epyc-case-study/topology.toml")).expect("the fixture reads"), Catalog::default_catalog()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let (topo, shipped) = machine();
    let opts = SimOptions::default();
    if mode % 2 == 0 {
        let Ok(cat) = Catalog::from_toml_str(text) else { return };
        for (path, f) in cat.figures() {
            if let Some(v) = f.known() {
                assert!(v.is_finite() && v >= 0.0, "{path}: {v}");
            }
        }
        // What a catalog read promises too: every PCI id can match (vvvv:dddd in hex), and
        // every CSP's CMB rate, where known, is finite and at least 1 kB/s.
        let ids = cat.ssds.iter().map(|d| &d.pci_ids).chain(cat.csps.iter().map(|d| &d.pci_ids)).chain(cat.nics.iter().map(|d| &d.pci_ids)).chain(cat.gpus.iter().map(|d| &d.pci_ids)).chain(cat.switches.iter().map(|d| &d.pci_ids));
        for id in ids.flatten() {
            let hex4 = |s: &str| s.len() == 4 && s.bytes().all(|b| b.is_ascii_hexdigit());
            assert!(id.split_once(':').is_some_and(|(v, d)| hex4(v) && hex4(d)), "{id}");
        }
        for c in &cat.csps {
            if let Some((bw, _)) = c.cmb_bandwidth() {
                assert!(bw.is_finite() && bw >= 1e3, "{}: {bw}", c.name);
            }
        }
        if let Ok(m) = Machine::new(topo.clone(), &cat, None) {
            for kind in [JobKind::CompressP2p, JobKind::CompressCpu, JobKind::Send] {
                if let Ok(r) = simulate(&m, &Job::new(kind), &opts) {
                    let _ = (r.render(), r.to_json());
                }
            }
        }
        return;
    }
    let mut lines = text.lines();
    let Ok(mut job) = Job::parse(lines.next().unwrap_or("")) else { return };
    // The knobs the CLI sets from its options (--ratio, --csps, --ssds, --queue-depth, --threads), one line.
    let mut knobs = lines.next().unwrap_or("").split_whitespace();
    let mut knob = || knobs.next().filter(|k| *k != "-");
    job.ratio = knob().and_then(|k| k.parse().ok());
    job.csps = knob().and_then(|k| k.parse().ok());
    job.ssds = knob().and_then(|k| k.parse().ok());
    job.queue_depth = knob().and_then(|k| k.parse().ok()).unwrap_or(job.queue_depth);
    job.threads = knob().and_then(|k| k.parse().ok());
    if job.check().is_err() {
        return;
    }
    let m = Machine::new(topo.clone(), shipped, None).expect("the fixture and the shipped catalog make a machine");
    if let Ok(r) = simulate(&m, &job, &opts) {
        let _ = (r.render(), r.to_json());
    }
    if let Some(Ok(vary)) = lines.next().map(Vary::parse) {
        if vary.values.len() <= 3 {
            if let Ok(sw) = sweep::sweep(topo, shipped, None, &job, &vary, &opts) {
                let _ = (sw.render(), sw.to_json(), peerpath_sim::svg::render(&sw));
            }
        }
    }
});
