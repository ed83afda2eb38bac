//! A machine as the simulator sees it: the PCIe tree of a [`Topology`] with a link on every
//! node, catalog entries on the devices, and the platform's CPU and memory.
//!
//! ```text
//!   root complex pci0000:00 (socket 0) ---- socket fabric ---- root complex pci0000:20 ...
//!        |                                       (unlimited: no published figure)
//!   root port 00:01.1 -- link of csp0 (up / down) -- csp0 [engine, CMB memory]
//!   root port 00:01.2 -- link of ssd0 (up / down) -- ssd0 [flash reads, flash writes]
//!        ...
//!   host memory of socket 0, CPU cores of socket 0
//! ```
//!
//! A node's link is the link between it and its parent; a root port's own `link` record
//! describes the same physical link as its child's and is not counted twice.

use std::fmt;

use peerpath_topo::{Bdf, DeviceKind, Link, PortRole, Topology};
use serde::Serialize;

use crate::catalog::{Catalog, CspSpec, GpuSpec, NicSpec, Platform, SsdSpec};
use crate::pcie::TlpModel;
use crate::SimError;

#[derive(Clone, Debug)]
pub enum NodeKind {
    RootComplex,
    /// A root port, switch port or other bridge; `switch_crossing_ns` on switch upstream ports.
    Port { role: PortRole, switch_crossing_ns: Option<f64>, switch_model: Option<String> },
    Ssd(Box<SsdSpec>),
    Csp(Box<CspSpec>),
    Nic(Box<NicSpec>),
    Gpu(Box<GpuSpec>),
    /// An SSD, CSP, NIC or GPU with no catalog entry, or any other function.
    Unknown { kind: DeviceKind },
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub bdf: Option<Bdf>,
    pub parent: Option<usize>,
    pub kind: NodeKind,
    pub link: Option<Link>,
    pub host_bridge: String,
    pub socket: u32,
}

impl Node {
    pub fn is_ssd(&self) -> bool {
        matches!(self.kind, NodeKind::Ssd(_))
    }
    pub fn is_csp(&self) -> bool {
        matches!(self.kind, NodeKind::Csp(_))
    }
}

/// Direction of data over a node's link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Dir {
    /// From the node toward its parent (the root complex).
    Up,
    /// From the parent into the node.
    Down,
}

/// Anything with a capacity that flows share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "resource", content = "of", rename_all = "snake_case")]
pub enum ResKey {
    Link(usize, Dir),
    HostMemory(u32),
    CpuCores(u32),
    FlashRead(usize),
    FlashWrite(usize),
    Engine(usize),
    CmbMemory(usize),
    /// Payload a NIC sends (all ports, one direction).
    NicSend(usize),
    /// A GPU's own memory (reads and writes share it).
    GpuMemory(usize),
    /// The cores a CPU job may compute on, all sockets together (`--threads`).
    Threads,
}

/// What a resource is, in words, and its capacity (bytes/s, or cores for CPU).
#[derive(Clone, Debug, Serialize)]
pub struct Resource {
    pub key: ResKey,
    pub name: String,
    pub capacity: f64,
    pub unit: &'static str,
}

/// Where bytes live: a device's own memory (CMB) or host memory of a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Device(usize),
    HostMemory(u32),
}

/// The way between two places.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Route {
    /// Links crossed, in order, with the direction the data moves.
    pub hops: Vec<(usize, Dir)>,
    /// Switch upstream ports crossed (one per switch).
    pub switches: Vec<usize>,
    /// Root complexes the data passes through (P2P without a common switch goes up and down).
    pub root_complexes: Vec<usize>,
    pub inter_socket: bool,
}

#[derive(Clone, Debug)]
pub struct Machine {
    pub description: String,
    pub topology: Topology,
    pub catalog: Catalog,
    pub platform: Platform,
    pub tlp: TlpModel,
    pub nodes: Vec<Node>,
    pub sockets: u32,
    /// Components with unknown figures (treated as unlimited), in words.
    pub unknowns: Vec<String>,
}

impl fmt::Display for Dir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dir::Up => "toward the root complex",
            Dir::Down => "toward the device",
        })
    }
}

impl Machine {
    /// Builds the machine; `platform` names a catalog platform, or `None` to match the CPU.
    pub fn new(topology: Topology, catalog: &Catalog, platform: Option<&str>) -> Result<Machine, SimError> {
        let (platform, matched) = match platform {
            Some(p) => (catalog.platform(p)?.clone(), true),
            None => {
                let (p, matched) = catalog.platform_for(&topology.cpu);
                (p.clone(), matched)
            }
        };
        let tlp = TlpModel::from_catalog(catalog, &platform);
        let sockets = platform.sockets.value.unwrap_or(1.0).max(1.0) as u32;
        let mut unknowns = Vec::new();
        if !matched {
            let names: Vec<&str> = catalog.platforms.iter().map(|p| p.name.as_str()).collect();
            unknowns.push(format!(
                "the CPU ({}) matches no platform of the catalog: its cores, sockets and memory are those of '{}' ({}); name one with --platform ({})",
                topology.cpu, platform.name, platform.description, names.join(", ")
            ));
        }
        let mut nodes: Vec<Node> = Vec::new();
        // Root complexes first, one per host bridge.
        let mut hbs: Vec<String> = topology.host_bridges.iter().map(|h| h.name.clone()).collect();
        for d in &topology.devices {
            let hb = topology.host_bridge_of(d.bdf);
            if !hbs.contains(&hb) {
                hbs.push(hb);
            }
        }
        hbs.sort();
        for hb in &hbs {
            let node = topology.host_bridges.iter().find(|h| &h.name == hb).and_then(|h| h.numa_node);
            let socket = node.and_then(|n| topology.socket_of_node(n)).unwrap_or(0).min(sockets - 1);
            nodes.push(Node {
                name: format!("root complex {hb}"),
                bdf: None,
                parent: None,
                kind: NodeKind::RootComplex,
                link: None,
                host_bridge: hb.clone(),
                socket,
            });
        }
        let mut index_of = std::collections::BTreeMap::new();
        for d in &topology.devices {
            index_of.insert(d.bdf, nodes.len() + index_of.len());
        }
        for d in &topology.devices {
            let hb = topology.host_bridge_of(d.bdf);
            let rc = hbs.iter().position(|h| *h == hb).unwrap_or(0);
            let parent = match d.upstream {
                Some(u) => index_of.get(&u).copied().or(Some(rc)),
                None => Some(rc),
            };
            let nvme = topology.nvme_for_pci(d.bdf);
            let model = nvme.and_then(|n| n.model.as_deref());
            let name = d.label.clone().or_else(|| nvme.map(|n| n.name.clone())).unwrap_or_else(|| d.bdf.to_string());
            let kind = match d.kind {
                DeviceKind::NvmeSsd => match catalog.ssd_for(d.vendor, d.device, model) {
                    Some(s) => NodeKind::Ssd(Box::new(s.clone())),
                    None => {
                        unknowns.push(format!("{name}: SSD {:04x}:{:04x} not in the catalog: left out of the jobs (add it to the catalog to simulate it)", d.vendor, d.device));
                        NodeKind::Unknown { kind: d.kind }
                    }
                },
                DeviceKind::Csp => match catalog.csp_for(d.vendor, d.device, model) {
                    Some(s) => NodeKind::Csp(Box::new(s.clone())),
                    None => {
                        unknowns.push(format!("{name}: CSP {:04x}:{:04x} not in the catalog: left out of the jobs (add it to the catalog to simulate it)", d.vendor, d.device));
                        NodeKind::Unknown { kind: d.kind }
                    }
                },
                DeviceKind::Gpu => match catalog.gpu_for(d.vendor, d.device) {
                    Some(s) => NodeKind::Gpu(Box::new(s.clone())),
                    None => {
                        unknowns.push(format!("{name}: GPU {:04x}:{:04x} not in the catalog: left out of the jobs (add it to the catalog to simulate it)", d.vendor, d.device));
                        NodeKind::Unknown { kind: d.kind }
                    }
                },
                DeviceKind::Nic => match catalog.nic_for(d.vendor, d.device) {
                    Some(s) => NodeKind::Nic(Box::new(s.clone())),
                    None => {
                        unknowns.push(format!("{name}: NIC {:04x}:{:04x} not in the catalog (unlimited)", d.vendor, d.device));
                        NodeKind::Unknown { kind: d.kind }
                    }
                },
                _ if d.role.is_bridge() => {
                    let sw = if d.role == PortRole::SwitchUpstream { catalog.switch_for(d.vendor, d.device) } else { None };
                    NodeKind::Port {
                        role: d.role,
                        switch_crossing_ns: sw.and_then(|s| s.crossing_latency_ns.value),
                        switch_model: sw.map(|s| s.name.clone()),
                    }
                }
                _ => NodeKind::Unknown { kind: d.kind },
            };
            // sysfs gives root ports and switch downstream ports the link *below* them (their
            // child's link); endpoints and switch upstream ports carry their link to the parent.
            let carries_link = match d.role {
                PortRole::RootPort | PortRole::SwitchDownstream => false,
                _ => !(d.upstream.is_none() && d.role.is_bridge()),
            };
            let link = d.link.filter(|_| carries_link);
            // A link a job crosses whose rate cannot be told (speed "Unknown", width 0) is no limit: said.
            let in_jobs = matches!(kind, NodeKind::Ssd(_) | NodeKind::Csp(_) | NodeKind::Gpu(_) | NodeKind::Nic(_)) || d.role == PortRole::SwitchUpstream;
            if let Some(l) = link.filter(|_| carries_link && in_jobs) {
                // The port above gives the link's other end (sysfs gives it the same link).
                let port = d.upstream.and_then(|u| topology.device(u)).and_then(|p| p.link.map(|l| (p.bdf, l)));
                link_plausible(&name, &l, port)?;
            }
            if carries_link && in_jobs && link.and_then(|l| l.bytes_per_s()).is_none() {
                let what = link.map_or_else(|| "no link status".to_string(), |l| l.describe());
                unknowns.push(format!("PCIe link of {name}: rate unknown ({what}): unlimited"));
            }
            let socket = nodes[rc].socket;
            nodes.push(Node { name, bdf: Some(d.bdf), parent, kind, link, host_bridge: hb, socket });
        }
        for n in &nodes {
            if let NodeKind::Csp(c) = &n.kind {
                if c.cmb_bandwidth().is_none() {
                    unknowns.push(format!("CMB memory of {}: bandwidth unknown (unlimited)", n.name));
                }
            }
        }
        if platform.memory_bytes_per_s_per_socket.value.is_none() {
            unknowns.push(format!("host memory ({}): bandwidth unknown (unlimited)", platform.name));
        }
        unknowns.push("root complexes and the socket fabric between them: no published bandwidth (unlimited)".into());
        Ok(Machine {
            // A real /sys has no description: an empty "machine:" line named nothing.
            description: topology.description.clone().filter(|d| !d.trim().is_empty()).unwrap_or_else(|| format!("unnamed ({} PCI devices, CPU {})", topology.devices.len(), topology.cpu)),
            topology,
            catalog: catalog.clone(),
            platform,
            tlp,
            nodes,
            sockets,
            unknowns,
        })
    }

    /// A node by label, controller name or address.
    pub fn find(&self, name: &str) -> Result<usize, SimError> {
        if let Some(i) = self.nodes.iter().position(|n| n.name == name) {
            return Ok(i);
        }
        let ep = self.topology.resolve(name)?;
        let bdf = *ep.pci.first().ok_or_else(|| SimError::Job(format!("{name}: no PCI function")))?;
        self.nodes
            .iter()
            .position(|n| n.bdf == Some(bdf))
            .ok_or_else(|| SimError::Job(format!("{name}: not in the machine")))
    }

    pub fn ssds(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].is_ssd()).collect()
    }

    pub fn csps(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].is_csp()).collect()
    }

    /// GPUs the catalog knows.
    pub fn gpus(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| matches!(self.nodes[i].kind, NodeKind::Gpu(_))).collect()
    }

    /// NICs, known to the catalog or not (an unknown one is unlimited).
    pub fn nics(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| matches!(self.nodes[i].kind, NodeKind::Nic(_) | NodeKind::Unknown { kind: DeviceKind::Nic }))
            .collect()
    }

    fn chain(&self, mut i: usize) -> Vec<usize> {
        let mut v = vec![i];
        for _ in 0..self.nodes.len() {
            match self.nodes[i].parent {
                Some(p) => {
                    v.push(p);
                    i = p;
                }
                None => break,
            }
        }
        v
    }

    fn is_switch_upstream(&self, i: usize) -> bool {
        matches!(self.nodes[i].kind, NodeKind::Port { role: PortRole::SwitchUpstream, .. })
    }

    /// The route data takes from node `from` to node `to`.
    pub fn route(&self, from: usize, to: usize) -> Route {
        let a = self.chain(from);
        let b = self.chain(to);
        let mut r = Route::default();
        let common = a.iter().position(|x| b.contains(x));
        let (a_len, b_len) = match common {
            Some(ia) => (ia, b.iter().position(|x| *x == a[ia]).unwrap_or(b.len())),
            None => (a.len() - 1, b.len() - 1),
        };
        for &n in &a[..a_len] {
            r.hops.push((n, Dir::Up));
        }
        for &n in a[..=a_len.min(a.len() - 1)].iter() {
            if self.is_switch_upstream(n) && !r.switches.contains(&n) {
                r.switches.push(n);
            }
        }
        match common {
            Some(ia) => {
                if matches!(self.nodes[a[ia]].kind, NodeKind::RootComplex) && a_len > 0 && b_len > 0 {
                    r.root_complexes.push(a[ia]);
                }
            }
            None => {
                let ra = *a.last().unwrap_or(&from);
                let rb = *b.last().unwrap_or(&to);
                r.root_complexes.push(ra);
                r.root_complexes.push(rb);
                r.inter_socket = self.nodes[ra].socket != self.nodes[rb].socket;
            }
        }
        for &n in b[..b_len].iter().rev() {
            if self.is_switch_upstream(n) && !r.switches.contains(&n) {
                r.switches.push(n);
            }
            r.hops.push((n, Dir::Down));
        }
        r.hops.retain(|(n, _)| self.nodes[*n].parent.is_some());
        r
    }

    /// The root complex above node `i`.
    pub fn root_of(&self, i: usize) -> usize {
        *self.chain(i).last().unwrap_or(&i)
    }

    /// The route from node `from` to host memory of `socket` (through `from`'s root complex).
    pub fn route_to_memory(&self, from: usize, socket: u32) -> Route {
        let rc = self.root_of(from);
        let mut r = self.route(from, rc);
        r.root_complexes.push(rc);
        r.inter_socket = self.nodes[rc].socket != socket;
        r
    }

    pub fn resource(&self, key: ResKey) -> Option<Resource> {
        let mk = |name: String, capacity: f64, unit| Some(Resource { key, name, capacity, unit });
        match key {
            ResKey::Link(n, dir) => {
                let node = &self.nodes[n];
                let link = node.link?;
                let bw = link.bytes_per_s()?;
                let parent = node.parent.map(|p| self.nodes[p].name.clone()).unwrap_or_default();
                let words = match dir {
                    Dir::Up => format!("PCIe link {} -> {} ({})", node.name, parent, link.describe()),
                    Dir::Down => format!("PCIe link {} -> {} ({})", parent, node.name, link.describe()),
                };
                mk(words, bw, "B/s")
            }
            ResKey::HostMemory(s) => {
                mk(format!("host memory of socket {s}"), self.platform.memory_bytes_per_s_per_socket.value?, "B/s")
            }
            ResKey::CpuCores(s) => mk(format!("CPU cores of socket {s}"), self.platform.cores_per_socket.value?, "cores"),
            ResKey::FlashRead(n) => match &self.nodes[n].kind {
                NodeKind::Ssd(s) => mk(format!("flash reads of {}", self.nodes[n].name), s.seq_read_bytes_per_s.value?, "B/s"),
                _ => None,
            },
            ResKey::FlashWrite(n) => match &self.nodes[n].kind {
                NodeKind::Ssd(s) => mk(format!("flash writes of {}", self.nodes[n].name), s.seq_write_bytes_per_s.value?, "B/s"),
                _ => None,
            },
            // Engines depend on the function: see `engine_resource`.
            ResKey::Engine(_) => None,
            ResKey::CmbMemory(n) => match &self.nodes[n].kind {
                NodeKind::Csp(c) => mk(format!("CMB memory of {}", self.nodes[n].name), c.cmb_bandwidth()?.0, "B/s"),
                _ => None,
            },
            ResKey::NicSend(n) => match &self.nodes[n].kind {
                NodeKind::Nic(c) => mk(format!("network ports of {} (payload)", self.nodes[n].name), c.payload_bytes_per_s()?, "B/s"),
                _ => None,
            },
            ResKey::GpuMemory(n) => match &self.nodes[n].kind {
                NodeKind::Gpu(g) => mk(format!("GPU memory of {}", self.nodes[n].name), g.memory_bytes_per_s.value?, "B/s"),
                _ => None,
            },
            // The job's, not the machine's: see `Job::plan`.
            ResKey::Threads => None,
        }
    }

    /// The engine capacity of a CSP or GPU for `function`, when the catalog knows it.
    pub fn engine_resource(&self, n: usize, function: &str) -> Option<Resource> {
        let v = match &self.nodes[n].kind {
            NodeKind::Csp(c) => c.functions.get(function)?.value?,
            NodeKind::Gpu(g) => g.functions.get(function)?.value?,
            _ => return None,
        };
        Some(Resource { key: ResKey::Engine(n), name: format!("{function} engines of {}", self.nodes[n].name), capacity: v, unit: "B/s" })
    }

    /// The devices the catalog lacks, left out of the jobs, as "; ..." for an error that
    /// found too few ("" where none was).
    pub fn left_out_note(&self) -> String {
        let left_out: Vec<&str> = self.unknowns.iter().filter(|u| u.contains("left out of the jobs")).map(String::as_str).collect();
        if left_out.is_empty() { String::new() } else { format!("; {}", left_out.join("; ")) }
    }

    /// The topology name of a node (for verdicts): its address.
    pub fn topo_name(&self, i: usize) -> Option<String> {
        self.nodes[i].bdf.map(|b| b.to_string())
    }
}

/// Refuses a link a job would cross that describes no trained PCIe link: width 0 or 0 GT/s
/// (the link is down: every flow through it got "no bandwidth at all", naming nothing), a
/// width PCIe does not have (x1, x2, x4, x8, x12, x16, x32) or above the port's maximum, and a
/// rate no generation signals at (2.5 to 128 GT/s: `LinkSpeed::PCIE_RATES_MT`), or a link
/// trained wider or faster than either end can (its own maximum, or the maximum of `port`, the
/// port above: an x32 CSP under an x4 root port was simulated at x32). Unknown figures stay
/// allowed: the report lists them as unlimited.
fn link_plausible(name: &str, l: &Link, port: Option<(Bdf, Link)>) -> Result<(), SimError> {
    let bad = |why: String| Err(SimError::Topology(peerpath_topo::TopoError::Invalid(format!("{name}: PCIe link {}: {why}", l.describe()))));
    if let Some(w) = l.current_width {
        if w == 0 {
            return bad("width 0: the link is down and carries nothing (leave the device out, or give its trained width)".into());
        }
        if !peerpath_topo::Link::PCIE_WIDTHS.contains(&w) {
            let widths: Vec<String> = peerpath_topo::Link::PCIE_WIDTHS.iter().map(|w| format!("x{w}")).collect();
            return bad(format!("x{w} is not a PCIe link width ({})", widths.join(", ")));
        }
    }
    if let Some(mt) = l.current_speed.mt_per_s {
        if mt == 0 {
            return bad("0 GT/s: the link is down and carries nothing (leave the device out, or give its trained speed)".into());
        }
        if !peerpath_topo::LinkSpeed::PCIE_RATES_MT.contains(&mt) {
            let rates: Vec<String> = peerpath_topo::LinkSpeed::PCIE_RATES_MT.iter().map(|&r| format!("{:.1}", r as f64 / 1000.0)).collect();
            return bad(format!("{} is not a PCIe signalling rate ({} GT/s)", l.current_speed, rates.join(", ")));
        }
    }
    let ends = std::iter::once(("its own maximum".to_string(), l.max_width, l.max_speed)).chain(port.map(|(bdf, p)| (format!("the maximum of its port {bdf}:"), p.max_width, p.max_speed)));
    for (end, max_width, max_speed) in ends {
        if let (Some(w), Some(max)) = (l.current_width, max_width.filter(|&m| m >= 1)) {
            if w > max {
                return bad(format!("trained at x{w}, wider than {end} x{max}"));
            }
        }
        if let (Some(mt), Some(max)) = (l.current_speed.mt_per_s, max_speed.mt_per_s) {
            if mt > max {
                return bad(format!("trained at {}, faster than {end} {max_speed}", l.current_speed));
            }
        }
    }
    Ok(())
}
