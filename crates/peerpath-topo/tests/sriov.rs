//! SR-IOV: a host with hundreds of virtual functions (fixtures/sriov-host). The matrix showed
//! one row and column per function, 131 x 131 cells here; now each virtual function is shown
//! in its physical function's row and column (`Vfs::Folded`), and every cell of the full matrix
//! (`Vfs::Each`) is still what the folded one says it is.

mod common;

use std::collections::BTreeMap;

use common::{bdf, load};
use peerpath_topo::fixture;
use peerpath_topo::{AcsState, Bdf, Matrix, P2pPath, P2pProvider, Reason, Topology, Vfs};

/// The physical function whose row and column stand for `b` in `folded`, or `b` itself.
fn rep(folded: &Matrix, b: Bdf) -> Bdf {
    folded.folded.iter().find(|(_, g)| g.vfs.contains(&b)).map_or(b, |(pf, _)| *pf)
}

fn cell(m: &Matrix, r: Bdf, c: Bdf) -> &P2pPath {
    let ri = m.rows.iter().position(|x| *x == r).unwrap_or_else(|| panic!("row {r}"));
    let ci = m.columns.iter().position(|x| *x == c).unwrap_or_else(|| panic!("column {c}"));
    &m.cells[ri][ci]
}

/// Every cell of the matrix of every function is what the folded matrix says for that pair:
/// its representatives' cell, or within a group the group's own answers.
fn assert_folding_is_exact(t: &Topology) -> (Matrix, Matrix) {
    let each = t.matrix_of(Vfs::Each).unwrap();
    let folded = t.matrix().unwrap();
    assert!(each.folded.is_empty());
    let groups: BTreeMap<Bdf, _> = folded.folded.clone().into_iter().collect();
    for (ri, r) in each.rows.iter().enumerate() {
        for (ci, c) in each.columns.iter().enumerate() {
            let (rr, rc) = (rep(&folded, *r), rep(&folded, *c));
            let expected = if r != c && rr == rc {
                let g = &groups[&rr];
                let within = if *r == rr || *c == rr { &g.vf_and_pf } else { &g.vf_and_vf };
                within.clone().unwrap_or_else(|| panic!("no answer within the group of {rr} for {r} {c}"))
            } else {
                cell(&folded, rr, rc).clone()
            };
            assert_eq!(each.cells[ri][ci], expected, "{r} -> {c} (shown as {rr} -> {rc})");
        }
    }
    (each, folded)
}

#[test]
fn the_sysfs_tree_has_128_virtual_functions_of_three_physical_functions() {
    let (_dir, t) = load(&fixture::sriov_host());
    let mut by_pf: BTreeMap<Bdf, usize> = BTreeMap::new();
    for d in &t.devices {
        if let Some(pf) = d.physfn {
            *by_pf.entry(pf).or_default() += 1;
        }
    }
    let expected: BTreeMap<Bdf, usize> = [(bdf(&t, "nic0"), 48), (bdf(&t, "nic1"), 48), (bdf(&t, "ssd0"), 32)].into_iter().collect();
    assert_eq!(by_pf, expected);
    // The full model keeps every function: JSON and the topology file.
    let json: serde_json::Value = serde_json::from_str(&t.to_json_string().unwrap()).unwrap();
    let devices = json["device"].as_array().unwrap();
    assert_eq!(devices.len(), t.devices.len());
    assert_eq!(devices.iter().filter(|d| d.get("physfn").is_some()).count(), 128);
    assert_eq!(Topology::from_toml_str(&t.to_toml_string().unwrap()).unwrap(), t);
}

#[test]
fn the_matrix_has_one_row_and_column_per_physical_function() {
    let (_dir, t) = load(&fixture::sriov_host());
    let (each, folded) = assert_folding_is_exact(&t);
    assert!(folded.topology_only);
    assert_eq!(each.columns.len(), 3 + 128);
    let pfs = vec![bdf(&t, "nic0"), bdf(&t, "nic1"), bdf(&t, "ssd0")];
    assert_eq!((&folded.rows, &folded.columns), (&pfs, &pfs));
    assert_eq!(folded.folded.keys().copied().collect::<Vec<_>>(), pfs);
    assert_eq!(folded.folded.values().map(|g| g.vfs.len()).collect::<Vec<_>>(), vec![48, 48, 32]);

    let text = t.render_matrix().unwrap();
    let header = text.lines().find(|l| l.trim_start().starts_with("[1]")).expect("the column header");
    assert_eq!(header.split_whitespace().count(), 3, "{text}");
    assert!(text.contains("nic0 (0000:01:00.0)  NIC  node 0  + 48 VFs"), "{text}");
    assert!(text.contains("ssd0 (0000:02:00.0)  NVMe SSD  node 0  + 32 VFs"), "{text}");
    // Within a group, what no cell shows: the root port's ACS redirect sends a VF's DMA to its
    // PF or to another VF through the root complex.
    assert!(text.contains("[ 1] 48 VFs 0000:01:00.2-0000:01:06.1: a VF and its PF H2, two of its VFs H2"), "{text}");
    assert!(text.contains("[ 3] 32 VFs 0000:02:00.1-0000:02:04.0: a VF and its PF H2, two of its VFs H2"), "{text}");
    // One row and column per function when asked.
    let all = t.render_matrix_of(Vfs::Each).unwrap();
    let header = all.lines().find(|l| l.trim_start().starts_with("[1]")).expect("the column header");
    assert_eq!(header.split_whitespace().count(), 131);
    assert!(!all.contains("SR-IOV"), "{all}");
}

#[test]
fn a_virtual_functions_verdict_is_its_physical_functions() {
    let (_dir, t) = load(&fixture::sriov_host());
    let (vf, other_vf, ssd_vf) = ("0000:01:00.2", "0000:01:06.1", "0000:02:00.1");
    let k = t.verdict(vf, other_vf).unwrap().kernel.unwrap();
    assert_eq!(k.path, P2pPath::ThroughHostBridge { distance: 2 });
    assert_eq!(k.acs_redirect, vec!["0000:00:01.1".parse::<Bdf>().unwrap()]);
    for (a, b) in [(vf, "ssd0"), ("nic0", ssd_vf), (vf, ssd_vf)] {
        assert_eq!(t.verdict(a, b).unwrap().kernel.unwrap().path, P2pPath::ThroughHostBridge { distance: 4 }, "{a} {b}");
    }
    let v = t.verdict(vf, ssd_vf).unwrap();
    assert!(matches!(v.path, P2pPath::NotSupported { reason: Reason::NoP2pMemory { .. } }), "{:?}", v.path);
}

/// With P2P memory on a physical function, rows are providers; a virtual function the verdicts
/// can tell from its PF (P2P memory of its own, ACS redirect of its own) keeps its own row or
/// column, and every cell still matches the full matrix.
#[test]
fn virtual_functions_unlike_their_pf_keep_their_own_row_or_column() {
    let (_dir, mut t) = load(&fixture::sriov_host());
    let memory = P2pProvider { size_bytes: 64 << 20, available_bytes: 64 << 20, published: true, allocate: true };
    let (nic0, ssd0) = (bdf(&t, "nic0"), bdf(&t, "ssd0"));
    let vf_with_memory: Bdf = "0000:02:00.5".parse().unwrap();
    let vf_with_acs: Bdf = "0000:01:00.7".parse().unwrap();
    for d in &mut t.devices {
        if d.bdf == nic0 || d.bdf == vf_with_memory {
            d.p2pmem = Some(memory);
        }
        if d.bdf == vf_with_acs {
            d.acs = AcsState::Control { ctrl: fixture::ACS_CTRL_IOMMU };
        }
    }
    let (_, folded) = assert_folding_is_exact(&t);
    assert!(!folded.topology_only);
    assert_eq!(folded.rows, vec![nic0, vf_with_memory]);
    assert_eq!(folded.columns, vec![nic0, bdf(&t, "nic1"), vf_with_acs, ssd0, vf_with_memory]);
    let counts: Vec<usize> = folded.folded.values().map(|g| g.vfs.len()).collect();
    assert_eq!(counts, vec![47, 48, 31]);
    // nic0 is a row: a VF of its own reaches its memory; no provider among the VFs of the others.
    let g = &folded.folded[&nic0];
    assert_eq!((&g.vf_and_pf, &g.vf_and_vf), (&Some(P2pPath::ThroughHostBridge { distance: 2 }), &None));
    assert_eq!((&folded.folded[&ssd0].vf_and_pf, &folded.folded[&ssd0].vf_and_vf), (&None, &None));
    let text = t.render_matrix().unwrap();
    assert!(text.contains("[ 4] 31 VFs 0000:02:00.1-0000:02:00.4 0000:02:00.6-0000:02:04.0\n"), "{text}");
}
