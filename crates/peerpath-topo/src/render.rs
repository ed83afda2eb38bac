//! Renderings of a topology: an annotated tree (like `lspci -t`), a P2P matrix, an explanation
//! of one pair, JSON, and an SVG picture with the P2P groups coloured. All return `String`.

use peerpath_metrics::count;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use crate::allowlist;
use crate::bdf::Bdf;
use crate::error::Result;
use crate::model::*;
use crate::pcicfg::AcsState;
use crate::verdict::{self, P2pPath, Reason, Severity, Vfs};

use peerpath_metrics::human_bytes;

fn short_bdf(topo: &Topology, b: Bdf) -> String {
    // Omit the domain when every device is in domain 0, as lspci does.
    if topo.devices.iter().all(|d| d.bdf.domain == 0) {
        format!("{:02x}:{:02x}.{:x}", b.bus, b.device, b.function)
    } else {
        b.to_string()
    }
}

fn name_of(topo: &Topology, b: Bdf) -> String {
    match topo.device(b).and_then(|d| d.label.clone()) {
        Some(l) => format!("{l} ({b})"),
        None => b.to_string(),
    }
}

fn cpu_line(topo: &Topology) -> String {
    let verdict = if allowlist::cpu_supports_p2pdma(&topo.cpu) {
        "AMD Zen or newer: the kernel allows P2P through the root complex"
    } else if topo.cpu.vendor == CpuVendor::Unknown {
        "vendor unknown: P2P through the root complex depends on the host bridge allow-list"
    } else {
        "not AMD Zen: P2P through the root complex needs an allow-listed host bridge"
    };
    let sockets = match (topo.cpu.sockets, topo.socket_count()) {
        (None, None) => ", sockets unknown",
        _ => "",
    };
    format!("CPU: {}{sockets} ({verdict})", topo.cpu)
}

fn iommu_line(topo: &Topology) -> String {
    match topo.iommu.status {
        IommuStatus::On => format!(
            "IOMMU: on ({}{}) - the kernel enables ACS redirect on capable bridges",
            topo.iommu.units.join(", "),
            topo.iommu
                .default_domain
                .as_ref()
                .map(|d| format!(", default domain {d}"))
                .unwrap_or_default()
        ),
        IommuStatus::Off => "IOMMU: off".to_string(),
        IommuStatus::Unknown => format!(
            "IOMMU: unknown{}",
            topo.iommu.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
        ),
    }
}

fn device_line(topo: &Topology, d: &PciDevice) -> String {
    let mut parts: Vec<String> = Vec::new();
    let what = match d.role {
        PortRole::Endpoint | PortRole::IntegratedEndpoint => d.kind.short().to_string(),
        r => r.short().to_string(),
    };
    parts.push(short_bdf(topo, d.bdf));
    parts.push(what);
    if let Some(l) = &d.label {
        parts.push(format!("\"{l}\""));
    }
    parts.push(format!(
        "{}{} {:04x}:{:04x}",
        vendor_name(d.vendor),
        device_name(d.vendor, d.device).map(|n| format!(" {n}")).unwrap_or_default(),
        d.vendor,
        d.device
    ));
    if let Some(drv) = &d.driver {
        parts.push(format!("[{drv}]"));
    }
    if let Some(l) = &d.link {
        parts.push(l.describe());
    }
    if let Some(n) = d.numa_node {
        parts.push(format!("node {n}"));
    }
    if let (DeviceKind::Gpu, Some((i, bar))) = (d.kind, crate::gpu::aperture(d)) {
        parts.push(format!("BAR{i} {}", human_bytes(bar.size)));
    }
    if let AcsState::Control { .. } = d.acs {
        if d.acs.redirects() == Some(true) {
            parts.push(format!("ACS redirect ({})", d.acs.describe()));
        }
    }
    if let Some(c) = topo.nvme_for_pci(d.bdf) {
        let mut s = c.name.clone();
        if let Some(m) = &c.model {
            s.push_str(&format!(" \"{m}\""));
        }
        if let Some(cmb) = c.cmb {
            let size = cmb.size_bytes().map(human_bytes).unwrap_or_else(|| "?".into());
            s.push_str(&format!(" CMB {size} ({})", cmb.flags_text()));
        }
        if !c.namespaces.is_empty() {
            s.push_str(&format!(" -> {}", c.namespaces.join(" ")));
        }
        parts.push(s);
    }
    if let Some(p) = &d.p2pmem {
        parts.push(format!(
            "p2pmem {} free of {}{}",
            human_bytes(p.available_bytes),
            human_bytes(p.size_bytes),
            if p.published { ", published" } else { ", NOT published" }
        ));
    }
    let blocks: Vec<&str> = topo
        .block_devices
        .iter()
        .filter(|b| b.pci == vec![d.bdf] && !matches!(b.kind, BlockKind::NvmeNamespace | BlockKind::NvmeNamespacePath | BlockKind::Partition))
        .map(|b| b.name.as_str())
        .collect();
    if !blocks.is_empty() {
        parts.push(format!("block {}", blocks.join(" ")));
    }
    if d.emulated {
        parts.push("emulated".to_string());
    }
    parts.join("  ")
}

/// The tree's edges, gathered in one pass (a walk that scanned every device for each one's
/// children took seconds on thousands of functions).
struct Children<'a> {
    topo: &'a Topology,
    below: BTreeMap<Bdf, Vec<&'a PciDevice>>,
    /// SR-IOV virtual functions drawn as one line under their physical function, by PF, in
    /// address order ([`Vfs::Folded`]: those the verdicts cannot tell from their PF, as in the
    /// matrix, and with nothing below them).
    folded: BTreeMap<Bdf, Vec<&'a PciDevice>>,
    /// Each folded virtual function's physical function.
    pf_of: HashMap<Bdf, Bdf>,
}

impl<'a> Children<'a> {
    fn new(topo: &'a Topology, vfs: Vfs) -> Self {
        let mut below: BTreeMap<Bdf, Vec<&PciDevice>> = BTreeMap::new();
        for d in &topo.devices {
            if let Some(up) = d.upstream {
                below.entry(up).or_default().push(d);
            }
        }
        let mut folded: BTreeMap<Bdf, Vec<&PciDevice>> = BTreeMap::new();
        let mut pf_of = HashMap::new();
        if vfs == Vfs::Folded {
            for d in &topo.devices {
                if let Some(pf) = verdict::folds_into(topo, d).filter(|_| !below.contains_key(&d.bdf)) {
                    folded.entry(pf).or_default().push(d);
                    pf_of.insert(d.bdf, pf);
                }
            }
        }
        Children { topo, below, folded, pf_of }
    }

    /// The devices whose upstream is `parent`, by address; with `None`, those on root bus `hb`.
    /// Folded virtual functions are left out (their PF's line stands for them).
    fn of(&self, parent: Option<Bdf>, hb: &str) -> Vec<&'a PciDevice> {
        let mut kids = match parent {
            Some(b) => self.below.get(&b).cloned().unwrap_or_default(),
            None => self.topo.root_bus_devices(hb),
        };
        kids.retain(|d| !self.pf_of.contains_key(&d.bdf));
        kids
    }
}

/// `48 VFs`.
fn vf_count(n: usize) -> String {
    format!("{n} VF{}", if n == 1 { "" } else { "s" })
}

/// The distinct values in `items`, in order, with how many of each when they differ:
/// `mlx5_core`, or `mlx5_core 40, vfio-pci 8`.
fn tally(items: impl Iterator<Item = String>) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for it in items {
        match seen.iter_mut().find(|(s, _)| *s == it) {
            Some((_, n)) => *n += 1,
            None => seen.push((it, 1)),
        }
    }
    match seen.as_slice() {
        [(one, _)] => one.clone(),
        many => many.iter().map(|(s, n)| format!("{s} {n}")).collect::<Vec<_>>().join(", "),
    }
}

/// The tree's line for the virtual functions folded under their physical function:
/// `+ 48 VFs 01:00.2-01:06.1  NIC  Mellanox 15b3:101e  [mlx5_core]`.
fn folded_line(topo: &Topology, vfs: &[&PciDevice]) -> String {
    let bdfs: Vec<Bdf> = vfs.iter().map(|d| d.bdf).collect();
    let ids = tally(vfs.iter().map(|d| {
        format!(
            "{}  {}{} {:04x}:{:04x}",
            d.kind.short(),
            vendor_name(d.vendor),
            device_name(d.vendor, d.device).map(|n| format!(" {n}")).unwrap_or_default(),
            d.vendor,
            d.device
        )
    }));
    let drivers = match vfs.iter().all(|d| d.driver.is_none()) {
        true => String::new(),
        false => format!("  [{}]", tally(vfs.iter().map(|d| d.driver.clone().unwrap_or_else(|| "no driver".into())))),
    };
    format!("+ {} {}  {ids}{drivers}", vf_count(vfs.len()), join_bdfs_ranges(&bdfs, |b| short_bdf(topo, *b)))
}

fn tree_children(topo: &Topology, tree: &Children, parent: Option<Bdf>, hb: &str, prefix: &str, out: &mut String, depth: usize) {
    if depth > topo.devices.len() {
        return;
    }
    let kids = tree.of(parent, hb);
    let fold = parent.and_then(|pf| tree.folded.get(&pf));
    for (i, d) in kids.iter().enumerate() {
        let last = i + 1 == kids.len() && fold.is_none();
        let _ = writeln!(out, "{prefix}{}{}", if last { "└── " } else { "├── " }, device_line(topo, d));
        let next = format!("{prefix}{}", if last { "    " } else { "│   " });
        tree_children(topo, tree, Some(d.bdf), hb, &next, out, depth + 1);
    }
    if let Some(vfs) = fold {
        let _ = writeln!(out, "{prefix}└── {}", folded_line(topo, vfs));
    }
}

/// The tree, like `lspci -t` but one function per line, annotated with kinds, links, NUMA
/// nodes, ACS redirect, NVMe controllers and CMBs, P2P providers and block devices; SR-IOV
/// virtual functions folded into one line under their physical function ([`Vfs::Folded`]).
pub fn render_tree(topo: &Topology) -> String {
    render_tree_of(topo, Vfs::Folded)
}

/// The tree, SR-IOV virtual functions as `vfs` says: with [`Vfs::Folded`], those the verdicts
/// cannot tell from their physical function (as in the matrix) are one line under it, with their
/// count, addresses, ids and drivers; with [`Vfs::Each`], one line each.
pub fn render_tree_of(topo: &Topology, vfs: Vfs) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Topology{}{}",
        topo.description.as_ref().map(|d| format!(": {d}")).unwrap_or_default(),
        topo.source.as_ref().map(|s| format!(" [{s}]")).unwrap_or_default()
    );
    let _ = writeln!(out, "{}", cpu_line(topo));
    let _ = writeln!(out, "{}", iommu_line(topo));
    if let Some(k) = &topo.kernel {
        let _ = writeln!(out, "{}", k.describe());
    }
    for n in &topo.numa_nodes {
        let _ = writeln!(
            out,
            "NUMA node {}: CPUs {}{}",
            n.id,
            n.cpulist.as_deref().unwrap_or("?"),
            n.socket.map(|s| format!(", socket {s}")).unwrap_or_default()
        );
    }
    for l in &topo.dropped_labels {
        let on: Vec<String> = l.devices.iter().map(|b| short_bdf(topo, *b)).collect();
        let _ = writeln!(out, "Label \"{}\" of {} dropped: {}", l.label, on.join(" and "), l.why);
    }
    let unknown_acs: Vec<&PciDevice> = topo
        .devices
        .iter()
        .filter(|d| d.role.is_bridge() && matches!(d.acs, AcsState::Unknown { .. }))
        .collect();
    if let Some(first) = unknown_acs.first() {
        let _ = writeln!(
            out,
            "ACS: unknown on {}: {}",
            count(unknown_acs.len(), "bridge"),
            first.acs.describe()
        );
    }
    let providers = topo.devices.iter().filter(|d| d.p2pmem.is_some()).count();
    let _ = writeln!(
        out,
        "P2P providers: {}",
        if providers == 0 {
            "none (no PCI function has a p2pmem/ directory)".to_string()
        } else {
            providers.to_string()
        }
    );
    for p in crate::gpu::memory_paths(topo) {
        let _ = writeln!(out, "GPU {} ({}): {}", p.name, short_bdf(topo, p.gpu), p.describe());
        for remedy in p.reasons.iter().filter_map(|r| r.remedy.as_ref()) {
            let _ = writeln!(out, "  remedy: {remedy}");
        }
    }
    let tree = Children::new(topo, vfs);
    for hb in &topo.host_bridges {
        let id = topo.host_bridge_device(&hb.name);
        let allow = match id {
            Some(d) => match allowlist::lookup(d.vendor, d.device) {
                Some(e) => format!("on the allow-list ({})", e.family),
                None => format!("{:04x}:{:04x} not on the allow-list", d.vendor, d.device),
            },
            None => "no host bridge function to match the allow-list".to_string(),
        };
        let _ = writeln!(
            out,
            "\n{}{}{}  [{allow}]",
            hb.name,
            hb.label.as_ref().map(|l| format!(" \"{l}\"")).unwrap_or_default(),
            hb.numa_node.map(|n| format!("  node {n}")).unwrap_or_default()
        );
        tree_children(topo, &tree, None, &hb.name, "", &mut out, 0);
    }
    let stacked: Vec<&BlockDevice> = topo.block_devices.iter().filter(|b| b.kind.rejects_p2p()).collect();
    if !stacked.is_empty() {
        let _ = writeln!(out, "\nBlock devices that reject P2P pages (EREMOTEIO):");
        for b in stacked {
            let _ = writeln!(
                out,
                "  {}  {}{}  over {}",
                b.name,
                b.kind.short(),
                b.detail.as_ref().map(|d| format!(" ({d})")).unwrap_or_default(),
                if b.members.is_empty() { "?".to_string() } else { b.members.join(" ") }
            );
        }
    }
    out
}

/// The P2P matrix as a table: rows are providers (or every device that matters when there is
/// no provider, then showing the kernel's topology answer only), columns the devices that matter;
/// SR-IOV virtual functions as `vfs` says.
pub fn render_matrix(topo: &Topology, vfs: Vfs) -> Result<String> {
    let m = verdict::matrix(topo, vfs)?;
    let mut out = String::new();
    if m.columns.is_empty() {
        out.push_str("No devices that matter (NVMe SSD, CSP, GPU, NIC or P2P provider) in this topology.\n");
        return Ok(out);
    }
    if m.topology_only {
        out.push_str(
            "No P2P providers: each cell shows what the kernel would answer if the row device exposed P2P memory.\n",
        );
    } else {
        out.push_str("Rows: P2P memory providers. Columns: devices doing DMA to/from that memory.\n");
    }
    let mut index: BTreeMap<Bdf, usize> = BTreeMap::new();
    let mut all: Vec<Bdf> = m.columns.clone();
    for r in &m.rows {
        if !all.contains(r) {
            all.push(*r);
        }
    }
    for (i, b) in all.iter().enumerate() {
        index.insert(*b, i + 1);
        let d = topo.device(*b);
        let _ = writeln!(
            out,
            "  [{:>2}] {}  {}{}{}",
            i + 1,
            name_of(topo, *b),
            d.map(|d| d.kind.short()).unwrap_or("?"),
            d.and_then(|d| d.numa_node).map(|n| format!("  node {n}")).unwrap_or_default(),
            m.folded.get(b).map(|g| format!("  + {}", vf_count(g.vfs.len()))).unwrap_or_default()
        );
    }
    let width = m
        .cells
        .iter()
        .flatten()
        .map(|c| c.short().len())
        .max()
        .unwrap_or(2)
        .max(4);
    let _ = write!(out, "\n{:>6}", "");
    for c in &m.columns {
        let _ = write!(out, " {:>width$}", format!("[{}]", index[c]));
    }
    out.push('\n');
    for (ri, r) in m.rows.iter().enumerate() {
        let _ = write!(out, "{:>6}", format!("[{}]", index[r]));
        for cell in &m.cells[ri] {
            let _ = write!(out, " {:>width$}", cell.short());
        }
        out.push('\n');
    }
    if !m.folded.is_empty() {
        out.push_str("\nSR-IOV: a virtual function's path is its physical function's, so it is shown in its PF's row and column.\n");
        for (pf, g) in &m.folded {
            let within: Vec<String> = [("a VF and its PF", &g.vf_and_pf), ("two of its VFs", &g.vf_and_vf)]
                .into_iter()
                .filter_map(|(what, cell)| cell.as_ref().map(|c| format!("{what} {}", c.short())))
                .collect();
            let _ = writeln!(
                out,
                "  [{:>2}] {} {}{}",
                index[pf],
                vf_count(g.vfs.len()),
                join_bdfs_ranges(&g.vfs, Bdf::to_string),
                if within.is_empty() { String::new() } else { format!(": {}", within.join(", ")) }
            );
        }
    }
    out.push_str(
        "\nB<n>: bus address below a common switch, distance n.  H<n>: through the host bridge, distance n.\n\
         x<why>: not supported: acs = ACS redirect and root complex refuses, hb = host bridge not allow-listed and CPU not AMD Zen,\n\
         numa = different sockets, mem = no P2P memory, cmb = CMB not registered, pub = not published, blk = md/dm/multipath, pci = not PCI.\n",
    );
    Ok(out)
}

/// Sorted addresses as runs of consecutive functions (`0000:01:00.2-0000:01:06.1`), each
/// address written by `show`: a physical function's virtual functions are usually one run.
fn join_bdfs_ranges(bdfs: &[Bdf], show: impl Fn(&Bdf) -> String) -> String {
    let mut runs: Vec<(Bdf, Bdf)> = Vec::new();
    for b in bdfs {
        match runs.last_mut() {
            Some((_, last)) if (last.domain, last.bus, last.devfn().checked_add(1)) == (b.domain, b.bus, Some(b.devfn())) => *last = *b,
            _ => runs.push((*b, *b)),
        }
    }
    let words: Vec<String> = runs.iter().map(|(a, z)| if a == z { show(a) } else { format!("{}-{}", show(a), show(z)) }).collect();
    words.join(" ")
}

/// A plain-words explanation of P2P between the memory of `provider` and the device `client`.
pub fn explain(topo: &Topology, provider: &str, client: &str) -> Result<String> {
    let v = verdict::verdict(topo, provider, client)?;
    let mut out = String::new();
    let client_desc = match &v.kernel {
        Some(k) => name_of(topo, k.client),
        None => client.to_string(),
    };
    // A partition is its disk's endpoint: say so, or the disk's function looks like a mix-up.
    let client_named = match topo.resolve(client)?.partition_of {
        Some(disk) => format!("{client} (a partition of {disk})"),
        None => client.to_string(),
    };
    // Each as the user named it, and what that is where the name is not in it (`nvme0 = csp0
    // (0000:03:00.0)`), but not twice (`ssd0 (0000:04:00.0)` for 0000:04:00.0).
    let as_named = |given: &str, named: &str, desc: &str| {
        if desc.split([' ', '(', ')']).any(|w| w == given) { desc.to_string() } else { format!("{named} = {desc}") }
    };
    let _ = writeln!(
        out,
        "P2P between the memory of {} and {}",
        as_named(provider, provider, &name_of(topo, v.provider)),
        as_named(client, &client_named, &client_desc)
    );
    match &v.path {
        P2pPath::NotSupported { reason } => {
            let _ = writeln!(out, "Verdict: NOT SUPPORTED: {}", reason.describe());
        }
        supported => {
            let _ = writeln!(out, "Verdict: SUPPORTED: {supported}");
        }
    }
    if let Some(k) = &v.kernel {
        let kernel_word = match &k.path {
            P2pPath::BusAddress { distance } => format!("PCI_P2PDMA_MAP_BUS_ADDR, distance {distance}"),
            P2pPath::ThroughHostBridge { distance } => format!("PCI_P2PDMA_MAP_THRU_HOST_BRIDGE, distance {distance}"),
            P2pPath::NotSupported { .. } => format!("PCI_P2PDMA_MAP_NOT_SUPPORTED (distance {})", k.distance),
        };
        let _ = writeln!(out, "Kernel (calc_map_type_and_dist): {kernel_word}");
        let route: Vec<String> = k
            .route
            .iter()
            .map(|b| {
                let d = topo.device(*b);
                let role = d.map(|d| match d.role {
                    PortRole::Endpoint | PortRole::IntegratedEndpoint => d.kind.short(),
                    r => r.short(),
                });
                format!("{} ({})", short_bdf(topo, *b), role.unwrap_or("?"))
            })
            .collect();
        match k.common_upstream {
            Some(c) => {
                let _ = writeln!(out, "Common upstream bridge: {}", name_of(topo, c));
                let _ = writeln!(out, "Route: {}", route.join(" -> "));
            }
            None => {
                let _ = writeln!(
                    out,
                    "No common upstream bridge: provider under {}, client under {}",
                    k.provider_host_bridge, k.client_host_bridge
                );
                let n = topo.upstream_chain(k.provider).len();
                let _ = writeln!(
                    out,
                    "Route: {} -> [root complex] -> {}",
                    route[..n].join(" -> "),
                    route[n..].join(" -> ")
                );
            }
        }
    }
    if !v.reasons.is_empty() {
        out.push_str("Reasons:\n");
        for r in &v.reasons {
            let tag = match r.severity() {
                Severity::Blocks => "blocks",
                Severity::Reroutes => "reroutes",
                Severity::Caveat => "caveat",
                Severity::Info => "info",
            };
            let _ = writeln!(out, "  - [{tag}] {}", r.describe());
            if let Some(fix) = r.remedy() {
                let _ = writeln!(out, "    remedy: {fix}");
            }
        }
    }
    Ok(out)
}

/// The model as pretty JSON.
/// With GPUs, `gpu_memory` says how storage reaches each one's memory (derived, not part of
/// the topology file).
pub fn render_json(topo: &Topology) -> Result<String> {
    let paths = crate::gpu::memory_paths(topo);
    if paths.is_empty() {
        return Ok(serde_json::to_string_pretty(topo)?);
    }
    let mut v = serde_json::to_value(topo)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("gpu_memory".into(), serde_json::to_value(paths)?);
    }
    Ok(serde_json::to_string_pretty(&v)?)
}

// ---------------------------------------------------------------------------------------------
// SVG.

const PALETTE: [&str; 10] = [
    "#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69", "#fccde5", "#ffffb3", "#bc80bd", "#ccebc5",
];

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// P2P groups: devices that matter, joined when P2P between them is supported by topology,
/// provider memory aside (bus address or through the host bridge, same socket). Each group is
/// listed with whether all its pairs stay below a switch.
pub fn p2p_groups(topo: &Topology) -> Result<Vec<(Vec<Bdf>, bool)>> {
    let devs: Vec<Bdf> = topo.devices_that_matter().iter().map(|d| d.bdf).collect();
    let mut parent: Vec<usize> = (0..devs.len()).collect();
    fn find(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    let socket = |b: Bdf| {
        topo.device(b)
            .and_then(|d| d.numa_node)
            .and_then(|n| topo.socket_of_node(n))
    };
    let mut all_bus: BTreeMap<(usize, usize), bool> = BTreeMap::new();
    let mut maps = verdict::KernelMaps::new(topo);
    for i in 0..devs.len() {
        for j in (i + 1)..devs.len() {
            let k = maps.map(devs[i], devs[j])?;
            let cross = matches!((socket(devs[i]), socket(devs[j])), (Some(a), Some(b)) if a != b);
            if k.path.is_supported() && !cross {
                let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                parent[a] = b;
            }
            all_bus.insert((i, j), matches!(k.path, P2pPath::BusAddress { .. }));
        }
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..devs.len() {
        let r = find(&mut parent, i);
        groups.entry(r).or_default().push(i);
    }
    let mut out: Vec<(Vec<Bdf>, bool)> = groups
        .into_values()
        .filter(|g| g.len() > 1)
        .map(|g| {
            let bus = g
                .iter()
                .enumerate()
                .all(|(x, &i)| g[x + 1..].iter().all(|&j| all_bus.get(&(i.min(j), i.max(j))).copied().unwrap_or(false)));
            (g.into_iter().map(|i| devs[i]).collect(), bus)
        })
        .collect();
    out.sort();
    Ok(out)
}

fn svg_title(topo: &Topology) -> String {
    format!(
        "{}  |  {}  |  {}",
        topo.description.clone().unwrap_or_else(|| "PCIe topology".into()),
        topo.cpu,
        match topo.iommu.status {
            IommuStatus::On => "IOMMU on",
            IommuStatus::Off => "IOMMU off",
            IommuStatus::Unknown => "IOMMU unknown",
        }
    )
}

fn title_chars(topo: &Topology) -> usize {
    svg_title(topo).chars().count()
}

/// An SVG picture of the tree: one row per function, indented by depth, P2P groups coloured,
/// bridges with ACS redirect outlined red, P2P providers marked; SR-IOV virtual functions
/// folded into one row under their physical function ([`Vfs::Folded`]).
pub fn render_svg(topo: &Topology) -> Result<String> {
    render_svg_of(topo, Vfs::Folded)
}

/// The SVG picture, SR-IOV virtual functions as `vfs` says (as in [`render_tree_of`]); the
/// legend names a physical function with its folded virtual functions as `nic0 + 48 VFs`.
pub fn render_svg_of(topo: &Topology, vfs: Vfs) -> Result<String> {
    let groups = p2p_groups(topo)?;
    let mut colour: BTreeMap<Bdf, &str> = BTreeMap::new();
    for (i, (g, _)) in groups.iter().enumerate() {
        for b in g {
            colour.insert(*b, PALETTE[i % PALETTE.len()]);
        }
    }
    // Layout: (label, depth, bdf or host bridge). A row of folded virtual functions has its
    // first one's address, and takes its colour and outline.
    struct Row {
        depth: usize,
        text: String,
        bdf: Option<Bdf>,
    }
    let mut rows: Vec<Row> = Vec::new();
    fn walk(topo: &Topology, tree: &Children, parent: Option<Bdf>, hb: &str, depth: usize, rows: &mut Vec<Row>) {
        if depth > topo.devices.len() + 1 {
            return;
        }
        for d in tree.of(parent, hb) {
            let what = match d.role {
                PortRole::Endpoint | PortRole::IntegratedEndpoint => d.kind.short(),
                r => r.short(),
            };
            let mut text = format!("{} {}", d.bdf, what);
            if let Some(l) = &d.label {
                text.push_str(&format!(" {l}"));
            }
            if let Some(l) = &d.link {
                text.push_str(&format!("  {}", l.describe()));
            }
            if let Some(n) = d.numa_node {
                text.push_str(&format!("  node {n}"));
            }
            if let Some(p) = &d.p2pmem {
                text.push_str(&format!("  P2P {}", human_bytes(p.size_bytes)));
            }
            if d.acs.redirects() == Some(true) {
                text.push_str("  ACS redirect");
            }
            rows.push(Row {
                depth,
                text,
                bdf: Some(d.bdf),
            });
            walk(topo, tree, Some(d.bdf), hb, depth + 1, rows);
            if let Some(vfs) = tree.folded.get(&d.bdf) {
                let bdfs: Vec<Bdf> = vfs.iter().map(|v| v.bdf).collect();
                rows.push(Row {
                    depth: depth + 1,
                    text: format!("+ {} {}", vf_count(vfs.len()), join_bdfs_ranges(&bdfs, Bdf::to_string)),
                    bdf: Some(bdfs[0]),
                });
            }
        }
    }
    let tree = Children::new(topo, vfs);
    for hb in &topo.host_bridges {
        rows.push(Row {
            depth: 0,
            text: format!(
                "{}{}",
                hb.name,
                hb.numa_node.map(|n| format!("  node {n}")).unwrap_or_default()
            ),
            bdf: None,
        });
        walk(topo, &tree, None, &hb.name, 1, &mut rows);
    }
    let row_h = 22usize;
    let indent = 24usize;
    let max_depth = rows.iter().map(|r| r.depth).max().unwrap_or(0);
    let max_text = rows.iter().map(|r| r.text.chars().count()).max().unwrap_or(10);
    let box_w = max_text * 15 / 2 + 16;
    let legend_rows = groups.len() + 3;
    let width = (20 + max_depth * indent + box_w + 20).max(title_chars(topo) * 7 + 30);
    let height = 40 + rows.len() * row_h + legend_rows * row_h + 20;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let title = svg_title(topo);
    let _ = writeln!(s, r#"<text x="10" y="20" font-weight="bold">{}</text>"#, xml_escape(&title));
    let mut last_at_depth: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        let y = 40 + i * row_h;
        let x = 10 + r.depth * indent;
        // Connector from the parent row.
        if r.depth > 0 {
            if let Some(&py) = last_at_depth.get(&(r.depth - 1)) {
                let px = 10 + (r.depth - 1) * indent + 8;
                let _ = writeln!(
                    s,
                    r##"<path d="M{px} {} V{} H{x}" fill="none" stroke="#888"/>"##,
                    py + row_h - 4,
                    y + row_h / 2 - 2
                );
            }
        }
        last_at_depth.insert(r.depth, y);
        last_at_depth.retain(|d, _| *d <= r.depth);
        let dev = r.bdf.and_then(|b| topo.device(b));
        let fill = match r.bdf {
            None => "#dddddd",
            Some(b) => colour.get(&b).copied().unwrap_or(if dev.is_some_and(|d| d.role.is_bridge()) {
                "#f4f4f4"
            } else {
                "#ffffff"
            }),
        };
        let acs = dev.is_some_and(|d| d.acs.redirects() == Some(true));
        let stroke = if acs { "#d00000" } else { "#555555" };
        let sw = if acs { 2 } else { 1 };
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{y}" width="{box_w}" height="{}" rx="3" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"/>"#,
            row_h - 4
        );
        let _ = writeln!(s, r#"<text x="{}" y="{}">{}</text>"#, x + 6, y + 13, xml_escape(&r.text));
    }
    let mut y = 40 + rows.len() * row_h + row_h;
    let _ = writeln!(s, r#"<text x="10" y="{y}" font-weight="bold">P2P groups (supported by topology, same socket):</text>"#);
    if groups.is_empty() {
        y += row_h;
        let _ = writeln!(s, r#"<text x="10" y="{y}">none: no two devices that matter can do P2P with each other</text>"#);
    }
    for (i, (g, bus)) in groups.iter().enumerate() {
        y += row_h;
        let _ = writeln!(
            s,
            r##"<rect x="10" y="{}" width="14" height="14" fill="{}" stroke="#555"/>"##,
            y - 11,
            PALETTE[i % PALETTE.len()]
        );
        // A physical function stands for its folded virtual functions of the group.
        let members: HashSet<&Bdf> = g.iter().collect();
        let mut stood_for: BTreeMap<Bdf, usize> = BTreeMap::new();
        for pf in g.iter().filter_map(|b| tree.pf_of.get(b)).filter(|pf| members.contains(pf)) {
            *stood_for.entry(*pf).or_default() += 1;
        }
        let names: Vec<String> = g
            .iter()
            .filter(|b| !tree.pf_of.get(b).is_some_and(|pf| stood_for.contains_key(pf)))
            .map(|b| {
                let name = topo.device(*b).and_then(|d| d.label.clone()).unwrap_or(b.to_string());
                match stood_for.get(b) {
                    Some(n) => format!("{name} + {}", vf_count(*n)),
                    None => name,
                }
            })
            .collect();
        let shown = if names.len() > 8 {
            format!("{} ... ({} devices)", names[..8].join(", "), g.len())
        } else {
            names.join(", ")
        };
        let _ = writeln!(
            s,
            r#"<text x="30" y="{y}">{} - {}</text>"#,
            if *bus { "bus address (below a switch)" } else { "through the host bridge" },
            xml_escape(&shown)
        );
    }
    y += row_h;
    let _ = writeln!(s, r##"<text x="10" y="{y}" fill="#d00000">red outline: ACS redirect set on this bridge</text>"##);
    s.push_str("</svg>\n");
    Ok(s)
}

/// Why a pair is what it is, in one line per reason (for logs and reports).
pub fn reasons_text(reasons: &[Reason]) -> String {
    reasons.iter().map(|r| format!("- {}", r.describe())).collect::<Vec<_>>().join("\n")
}

impl Topology {
    /// The tree, SR-IOV virtual functions as `vfs` says ([`render_tree_of`]).
    pub fn render_tree_of(&self, vfs: Vfs) -> String {
        render_tree_of(self, vfs)
    }

    /// The SVG picture, SR-IOV virtual functions as `vfs` says ([`render_svg_of`]).
    pub fn render_svg_of(&self, vfs: Vfs) -> Result<String> {
        render_svg_of(self, vfs)
    }
}
