//! SR-IOV: a host with hundreds of virtual functions (fixtures/sriov-host). The matrix showed
//! one row and column per function, 131 x 131 cells here; now each virtual function is shown
//! in its physical function's row and column (`Vfs::Folded`), and every cell of the full matrix
//! (`Vfs::Each`) is still what the folded one says it is. The tree and the SVG picture fold
//! the same virtual functions into one line under their physical function.

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

/// The tree's lines for functions (and folded virtual functions), without the header.
fn tree_lines(tree: &str) -> Vec<&str> {
    tree.lines().filter(|l| l.contains("── ")).collect()
}

/// The tree drew one line per function, 134 here; now the virtual functions the matrix folds
/// are one line under their physical function (9 lines), and `Vfs::Each` draws them all again.
#[test]
fn the_tree_folds_virtual_functions_under_their_physical_function() {
    let (_dir, t) = load(&fixture::sriov_host());
    let tree = t.render_tree();
    assert_eq!(tree, t.render_tree_of(Vfs::Folded));
    let lines = tree_lines(&tree);
    assert_eq!(lines.len(), 6 + 3, "{tree}");
    let folded: Vec<&str> = lines.iter().map(|l| l.trim_start_matches(['│', '├', '└', '─', ' '])).filter(|l| l.starts_with('+')).collect();
    assert_eq!(
        folded,
        [
            "+ 48 VFs 01:00.2-01:06.1  NIC  Mellanox 15b3:101e  [mlx5_core]",
            "+ 48 VFs 01:06.2-01:0c.1  NIC  Mellanox 15b3:101e  [mlx5_core]",
            "+ 32 VFs 02:00.1-02:04.0  NVMe SSD  Samsung 144d:a824",
        ],
        "{tree}"
    );
    // Each under its physical function, the last of its children.
    let at = |s: &str| lines.iter().position(|l| l.contains(s)).unwrap_or_else(|| panic!("{s}\n{tree}"));
    assert_eq!((at("\"nic0\"") + 1, at("\"nic1\"") + 1, at("\"ssd0\"") + 1), (at("01:00.2-"), at("01:06.2-"), at("02:00.1-")));
    assert!(lines[at("01:00.2-")].starts_with("│   │   └── "), "{tree}");
    assert!(!tree.contains("01:00.3"), "{tree}");

    let all = t.render_tree_of(Vfs::Each);
    let lines = tree_lines(&all);
    assert_eq!(lines.len(), t.devices.len());
    assert_eq!(lines.iter().filter(|l| l.contains("Mellanox 15b3:101e  [mlx5_core]  node 0")).count(), 96, "{all}");
    assert!(!all.contains(" VFs "), "{all}");
}

/// A virtual function the verdicts tell from its physical function keeps its own line, as it
/// keeps its own row or column in the matrix; drivers that differ are counted.
#[test]
fn the_tree_keeps_virtual_functions_unlike_their_pf_on_their_own_lines() {
    let (_dir, mut t) = load(&fixture::sriov_host());
    let memory = P2pProvider { size_bytes: 64 << 20, available_bytes: 64 << 20, published: true, allocate: true };
    let vf_with_memory: Bdf = "0000:02:00.5".parse().unwrap();
    let vf_with_acs: Bdf = "0000:01:00.7".parse().unwrap();
    let nic1 = bdf(&t, "nic1");
    for d in &mut t.devices {
        if d.bdf == vf_with_memory {
            d.p2pmem = Some(memory);
        }
        if d.bdf == vf_with_acs {
            d.acs = AcsState::Control { ctrl: fixture::ACS_CTRL_IOMMU };
        }
        // 01:0b.0-01:0c.1, for guests.
        if d.physfn == Some(nic1) && d.bdf.device >= 0x0b {
            d.driver = Some("vfio-pci".into());
        }
    }
    let tree = t.render_tree();
    let lines = tree_lines(&tree);
    assert_eq!(lines.len(), 6 + 3 + 2, "{tree}");
    for line in [
        "01:00.7  NIC  Mellanox 15b3:101e  [mlx5_core]  node 0  ACS redirect (ACSCtl SV RR CR UF)",
        "02:00.5  NVMe SSD  Samsung 144d:a824  node 0  p2pmem 64 MiB free of 64 MiB, published",
        "+ 47 VFs 01:00.2-01:00.6 01:01.0-01:06.1  NIC  Mellanox 15b3:101e  [mlx5_core]",
        "+ 48 VFs 01:06.2-01:0c.1  NIC  Mellanox 15b3:101e  [mlx5_core 38, vfio-pci 10]",
        "+ 31 VFs 02:00.1-02:00.4 02:00.6-02:04.0  NVMe SSD  Samsung 144d:a824",
    ] {
        assert!(lines.iter().any(|l| l.ends_with(line)), "{line}\n{tree}");
    }
}

/// The picture drew a box per function (137 rectangles with the background, the host bridge and
/// the legend's swatch); now one per physical function's folded virtual functions, and the
/// legend names `nic0 + 48 VFs` instead of 131 addresses.
#[test]
fn the_svg_folds_virtual_functions_under_their_physical_function() {
    let (_dir, t) = load(&fixture::sriov_host());
    let count = |svg: &str, what: &str| svg.matches(what).count();
    let svg = t.render_svg().unwrap();
    assert_eq!(svg, t.render_svg_of(Vfs::Folded).unwrap());
    // Background, host bridge, 6 functions, 3 folded rows, 1 legend swatch; a connector each row.
    assert_eq!(count(&svg, "<rect "), 1 + 1 + 6 + 3 + 1, "{svg}");
    assert_eq!(count(&svg, "<path "), 6 + 3, "{svg}");
    assert_eq!(count(&svg, "<text "), 1 + 1 + 6 + 3 + 3, "{svg}");
    for text in [
        r#"<text x="88" y="141">+ 48 VFs 0000:01:00.2-0000:01:06.1</text>"#,
        r#"<text x="88" y="185">+ 48 VFs 0000:01:06.2-0000:01:0c.1</text>"#,
        "through the host bridge - nic0 + 48 VFs, nic1 + 48 VFs, ssd0 + 32 VFs</text>",
    ] {
        assert!(svg.contains(text), "{text}\n{svg}");
    }
    // A folded row takes its group's colour, as its physical function's row does.
    let fill = |row: &str| {
        let at = svg.find(row).unwrap_or_else(|| panic!("{row}"));
        let rect = &svg[svg[..at].rfind("<rect ").unwrap()..at];
        rect[rect.find("fill=").unwrap()..].split('"').nth(1).unwrap().to_string()
    };
    assert_eq!(fill("+ 48 VFs 0000:01:00.2"), fill("0000:01:00.0 NIC nic0"));

    let all = t.render_svg_of(Vfs::Each).unwrap();
    assert_eq!(count(&all, "<rect "), 1 + 1 + t.devices.len() + 1);
    assert!(all.contains("(131 devices)</text>"), "{all}");
    assert!(!all.contains(" VFs"), "{all}");
}

/// A virtual function with functions below it (a topology file can say so) keeps its line, or
/// they would be drawn nowhere.
#[test]
fn the_tree_keeps_a_virtual_function_with_functions_below_it() {
    let (_dir, mut t) = load(&fixture::sriov_host());
    let vf: Bdf = "0000:01:00.3".parse().unwrap();
    let ssd0 = bdf(&t, "ssd0");
    t.devices.iter_mut().find(|d| d.bdf == ssd0).unwrap().upstream = Some(vf);
    let tree = t.render_tree();
    let lines = tree_lines(&tree);
    let at = |s: &str| lines.iter().position(|l| l.contains(s)).unwrap_or_else(|| panic!("{s}\n{tree}"));
    assert!(lines[at("01:00.3  NIC  Mellanox 15b3:101e")].starts_with("│   └── "), "{tree}");
    assert_eq!(at("\"ssd0\""), at("01:00.3  NIC") + 1, "{tree}");
    assert!(tree.contains("+ 47 VFs 01:00.2 01:00.4-01:06.1  NIC"), "{tree}");
    let svg = t.render_svg().unwrap();
    assert!(svg.contains(">0000:01:00.3 NIC  node 0</text>") && svg.contains(">+ 47 VFs 0000:01:00.2 0000:01:00.4-0000:01:06.1</text>"), "{svg}");
}
