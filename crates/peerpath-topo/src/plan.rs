//! The placement planner: which compute device serves which sources and targets, and how each
//! byte gets there (peer-to-peer, through a host bounce buffer, or on the CPU), with every
//! decision explained in words.
//!
//! A job is a list of *streams*: one source (read from) paired with one target (written to),
//! both named as [`Topology::resolve`] takes them (`0000:41:00.0`, `ssd3`, `nvme3`, `nvme3n1`,
//! `md0`). A compute device (a CSP with published P2P memory) reads the source into its memory
//! and writes the result from its memory to the target; each of those two *legs* is either
//! peer-to-peer (the kernel verdict of [`crate::verdict::verdict`] for the device's memory and
//! the endpoint says so) or bounced through a host buffer on the endpoint's NUMA node (with the
//! verdict's reason). The host CPU is always available and takes a stream that no device can
//! reach peer-to-peer on either leg.
//!
//! A GPU (named `gpu0`, `gpu1`, ... in PCI address order, as the runtime names it) is a compute
//! device too. Its report carries what `peerpath topo` shows (model, BAR1, link) and its
//! memory-path verdict ([`crate::gpu`]). Where its memory is a published P2PDMA provider it is
//! planned as a CSP is; otherwise both its legs are *staged* through pinned host memory
//! ([`Leg::Staged`], with the verdict's deciding reason; also where nvidia-fs is loaded: only
//! cuFile, asked when the GPU opens, confirms the direct path, which the plan cannot). A staged GPU takes streams only when named:
//! in auto mode it is listed, not used, since the CPU path touches host memory no more.
//!
//! ```text
//!   1. devices   auto: every CSP and GPU, by address; or the named ones. Usable: published P2P
//!                memory with free space (else: the verdict's reason, e.g. CMB not published);
//!                a GPU without it: staged, usable when named.
//!   2. pairing   (unless the request pairs them) each source, in order, writes to the target
//!                with the best stream cost (below), then the nearer one (same node, same
//!                socket), then the one with fewer sources so far, then the first listed.
//!   3. streams   each stream, in order, goes to the device with the lowest cost:
//!                  a. fewest legs through host memory (0, then 1; 2 = CPU path instead,
//!                     except a named staged GPU: after every P2P option, before the CPU)
//!                  b. smallest P2P distance (read + write; the kernel's distance)
//!                  c. fewest legs whose endpoint is on another NUMA node than the device
//!                and among those equally near (the balance step):
//!                  d. below its fair share (streams of its class / devices in the class)
//!                  e. already serving this target, then this source (keeps groups small)
//!                  f. fewest streams so far, then the first listed.
//! ```
//!
//! P2P across sockets never happens: the verdict refuses it (`Reason::CrossSocket`), so such a
//! leg is bounced through a buffer on the endpoint's node. Same input, same plan: everything is
//! ordered by the request and by PCI address, never by hash order.

use peerpath_metrics::count;
use std::collections::HashMap;
use std::rc::Rc;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bdf::Bdf;
use crate::error::{Result, TopoError};
use crate::gpu::{self, GpuMemoryPath, GpuReason};
use crate::model::{device_name, vendor_name, DeviceKind, PciDevice, Topology};
use peerpath_metrics::human_bytes;
use crate::verdict::{self, KernelMaps, P2pPath, Reason, Severity};

/// Which compute devices the planner may use. The host CPU is always available.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceSelection {
    /// Every CSP and GPU in the topology (by PCI address); CSPs without usable P2P
    /// memory, and GPUs (their legs are staged), are listed with the reason and not used.
    #[default]
    Auto,
    /// These devices (labels, PCI addresses, controllers), in this order of preference among
    /// equals. Empty: the CPU only.
    Named(Vec<String>),
}

impl DeviceSelection {
    /// Parses the CLI form: `auto`, or a comma-separated list (`csp0,csp1`); `cpu` (the host,
    /// always available) is accepted and dropped, so `cpu` alone plans the CPU path. A list
    /// that names nothing (`""`, `,`) is refused: it meant the CPU alone, said nowhere. So is a
    /// device named twice (`csp0,csp0`): the planner used it once, and the slip that wrote it
    /// (`csp0,csp1` meant) went unsaid.
    pub fn parse(s: &str) -> std::result::Result<DeviceSelection, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(DeviceSelection::Auto);
        }
        let names: Vec<&str> = s.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        if names.is_empty() {
            return Err("it names no device: give `auto`, `cpu` (the host only) or device names separated by commas (csp0,gpu0)".to_string());
        }
        let devices: Vec<String> = names
            .into_iter()
            .filter(|n| !n.eq_ignore_ascii_case("cpu") && !n.eq_ignore_ascii_case("host"))
            .map(String::from)
            .collect();
        if let Some((_, twice)) = devices.iter().enumerate().find(|(i, n)| devices[..*i].contains(n)) {
            return Err(format!("it names {twice} twice: name each device once"));
        }
        Ok(DeviceSelection::Named(devices))
    }
}

/// What a job asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRequest {
    /// Devices read from (a name may repeat: several files on one SSD are several streams).
    pub sources: Vec<String>,
    /// Devices written to.
    pub targets: Vec<String>,
    #[serde(default)]
    pub devices: DeviceSelection,
    /// Which source writes to which target, as (source index, target index); each source at
    /// most once and every source in some pair. Empty: the planner pairs them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<(usize, usize)>,
}

impl PlanRequest {
    /// Sources and targets, devices chosen automatically, pairing left to the planner.
    pub fn new<S: Into<String>, T: Into<String>>(
        sources: impl IntoIterator<Item = S>,
        targets: impl IntoIterator<Item = T>,
    ) -> PlanRequest {
        PlanRequest {
            sources: sources.into_iter().map(Into::into).collect(),
            targets: targets.into_iter().map(Into::into).collect(),
            devices: DeviceSelection::Auto,
            pairs: Vec::new(),
        }
    }

    /// Uses these devices only.
    pub fn with_devices(mut self, devices: DeviceSelection) -> PlanRequest {
        self.devices = devices;
        self
    }

    /// Fixes which source writes to which target (indices into `sources` and `targets`).
    pub fn with_pairs(mut self, pairs: Vec<(usize, usize)>) -> PlanRequest {
        self.pairs = pairs;
        self
    }
}

/// A source or target as the planner sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// As given in the request.
    pub name: String,
    /// The PCI functions behind it (several for md, dm and multipath heads).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci: Vec<Bdf>,
    /// Its NUMA node, when its functions agree on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    /// What it is: `NVMe SSD`, `md RAID`, `NVMe multipath head`, ...
    pub what: String,
}

impl Place {
    fn describe(&self) -> String {
        let mut s = self.name.clone();
        let mut extra = Vec::new();
        if let [one] = self.pci.as_slice() {
            if one.to_string() != self.name {
                extra.push(one.to_string());
            }
        }
        extra.push(self.what.clone());
        extra.push(node_words(self.node));
        let _ = write!(s, " ({})", extra.join(", "));
        s
    }
}

/// A reason in words, as the verdict gave it (kept as text so plans round-trip through JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Why {
    /// The verdict's short code (`acs`, `hb`, `blk`, `numa`, `mem`, ...).
    pub code: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

impl From<&Reason> for Why {
    fn from(r: &Reason) -> Why {
        Why {
            code: r.code().to_string(),
            text: r.describe(),
            remedy: r.remedy(),
        }
    }
}

/// How one leg of a stream (source -> memory, or memory -> target) moves its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "path", rename_all = "snake_case")]
pub enum Leg {
    /// Peer-to-peer below a common switch.
    BusAddress { distance: u32 },
    /// Peer-to-peer through the root complex.
    ThroughHostBridge { distance: u32 },
    /// Through a host bounce buffer on `node`, because P2P is refused for `why`.
    Bounce {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
        why: Why,
    },
    /// The CPU path: a host buffer on `node`.
    Host {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
    },
    /// A GPU's leg: through its pinned host window on `node`, because storage does not DMA into
    /// its memory for `why` (its memory-path verdict, or peerpath not driving cuFile).
    Staged {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
        why: Why,
    },
}

impl Leg {
    pub fn is_p2p(&self) -> bool {
        matches!(self, Leg::BusAddress { .. } | Leg::ThroughHostBridge { .. })
    }

    pub fn distance(&self) -> Option<u32> {
        match self {
            Leg::BusAddress { distance } | Leg::ThroughHostBridge { distance } => Some(*distance),
            _ => None,
        }
    }

    /// A table cell: `P2P bus 4`, `P2P host bridge 4`, `bounce node 0 (acs)`, `host node 0`.
    pub fn short(&self) -> String {
        match self {
            Leg::BusAddress { distance } => format!("P2P bus {distance}"),
            Leg::ThroughHostBridge { distance } => format!("P2P host bridge {distance}"),
            Leg::Bounce { node, why } => format!("bounce {} ({})", node_short(*node), why.code),
            Leg::Host { node } => format!("host {}", node_short(*node)),
            Leg::Staged { node, why } => format!("staged {} ({})", node_short(*node), why.code),
        }
    }

    fn words(&self) -> String {
        match self {
            Leg::BusAddress { distance } => {
                format!("peer-to-peer below a common switch (bus address), distance {distance}")
            }
            Leg::ThroughHostBridge { distance } => {
                format!("peer-to-peer through the host bridge (root complex), distance {distance}")
            }
            Leg::Bounce { node, why } => {
                let mut s = format!("through a host bounce buffer on {}, because P2P is refused: {}", node_words(*node), why.text);
                if let Some(r) = &why.remedy {
                    let _ = write!(s, " (to get P2P: {r})");
                }
                s
            }
            Leg::Host { node } => format!("host memory on {}", node_words(*node)),
            Leg::Staged { node, why } => {
                let mut s = format!("staged through pinned host memory on {} (host memory is touched): {}", node_words(*node), why.text);
                if let Some(r) = &why.remedy {
                    let _ = write!(s, " (remedy: {r})");
                }
                s
            }
        }
    }
}

/// Who runs a stream's function.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Executor {
    /// A compute device: its memory holds the data.
    Device {
        name: String,
        bdf: Bdf,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
    },
    /// The host CPU, on the cores of `node`.
    Cpu {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<u32>,
    },
}

impl Executor {
    pub fn name(&self) -> String {
        match self {
            Executor::Device { name, .. } => name.clone(),
            Executor::Cpu { node } => format!("cpu ({})", node_short(*node)),
        }
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self, Executor::Cpu { .. })
    }
}

/// One source paired with one target, and who serves it how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stream {
    /// Position in [`Plan::streams`] (the order of the sources in the request).
    pub index: usize,
    pub source_index: usize,
    pub target_index: usize,
    pub source: String,
    pub target: String,
    pub executor: Executor,
    /// Source -> memory (device memory, or host memory on the CPU path).
    pub read: Leg,
    /// Memory -> target.
    pub write: Leg,
    /// Index of this stream's decision in [`Plan::decisions`].
    pub decision: usize,
}

impl Stream {
    /// Legs that move payload through host memory (bounce buffers or the CPU path).
    pub fn host_legs(&self) -> usize {
        [&self.read, &self.write].iter().filter(|l| !l.is_p2p()).count()
    }
}

/// What one executor serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub executor: Executor,
    /// Distinct source names, in stream order.
    pub sources: Vec<String>,
    /// Distinct target names, in stream order.
    pub targets: Vec<String>,
    /// Indices into [`Plan::streams`].
    pub streams: Vec<usize>,
    /// Legs that go peer-to-peer, and legs through host memory.
    pub p2p_legs: usize,
    pub host_legs: usize,
}

/// A compute device the planner looked at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceReport {
    pub name: String,
    pub bdf: Bdf,
    pub kind: DeviceKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    /// Registered P2P memory and its free part, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_memory_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_available_bytes: Option<u64>,
    pub usable: bool,
    /// Why it is usable (its memory) or not (the provider-side reason).
    pub why: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
    /// Streams it serves.
    pub streams: usize,
    /// For a GPU: what `peerpath topo` shows of it and how storage reaches its memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuReport>,
}

/// How the plan moves a GPU's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuDataPath {
    /// Peer-to-peer with its published P2P memory (the kernel's P2PDMA), leg by leg as for a CSP.
    P2p,
    /// Through pinned host memory: storage -> host memory -> GPU memory, and back.
    Staged,
}

/// One reason of a GPU's memory-path verdict, as `peerpath topo` gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuWhy {
    /// The reason's name (`not_a_p2p_provider`, `no_nvidia_fs`, `modules_unknown`, ...).
    pub reason: String,
    pub severity: Severity,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

/// A GPU the planner looked at: what `peerpath topo` shows of it, its memory-path verdict, and
/// how the plan moves its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuReport {
    /// Vendor and device: `NVIDIA 10de:2330`.
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The window the CPU and peers have onto its memory (NVIDIA's BAR1, found as its driver
    /// finds it: `gpu::aperture`) and the number its driver calls it by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aperture_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aperture_bar: Option<usize>,
    /// The link as trained: lanes, PCIe generation, rate per lane (`32.0 GT/s`), and in words
    /// (`x16 Gen5 32.0 GT/s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_width: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_generation: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_speed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// The memory-path verdict (`peerpath topo`'s `gpu_memory`): storage can DMA straight into
    /// its memory.
    pub direct: bool,
    /// That verdict in one line.
    pub verdict: String,
    pub reasons: Vec<GpuWhy>,
    /// How the plan moves its streams' bytes, and why.
    pub data_path: GpuDataPath,
    pub data_path_why: String,
}

impl GpuReport {
    fn new(d: &PciDevice, path: &GpuMemoryPath, staged: Option<&Why>) -> GpuReport {
        let link = d.link.as_ref();
        let (data_path, data_path_why) = match staged {
            None => (
                GpuDataPath::P2p,
                "peer-to-peer with its published P2P memory (the kernel's P2PDMA), each leg as its verdict says".to_string(),
            ),
            Some(w) => (
                GpuDataPath::Staged,
                format!(
                    "staged through pinned host memory: storage -> host memory -> GPU memory and back, so host memory is touched on both legs, {}",
                    staged_because(path, w)
                ),
            ),
        };
        GpuReport {
            model: format!(
                "{}{} {:04x}:{:04x}",
                vendor_name(d.vendor),
                device_name(d.vendor, d.device).map(|n| format!(" {n}")).unwrap_or_default(),
                d.vendor,
                d.device
            ),
            driver: d.driver.clone(),
            aperture_bytes: path.aperture_bytes,
            aperture_bar: path.aperture_bar,
            link_width: link.and_then(|l| l.current_width),
            link_generation: link.and_then(|l| l.current_speed.generation()),
            link_speed: link.and_then(|l| l.current_speed.mt_per_s.map(|_| l.current_speed.to_string())),
            link: link.map(|l| l.describe()),
            direct: path.direct,
            verdict: path.describe(),
            reasons: path
                .reasons
                .iter()
                .map(|r| GpuWhy { reason: r.reason.code().to_string(), severity: r.severity, text: r.text.clone(), remedy: r.remedy.clone() })
                .collect(),
            data_path,
            data_path_why,
        }
    }

    /// `NVIDIA 10de:2330 [nvidia], BAR1 128 GiB, x16 Gen5 32.0 GT/s`
    pub fn describe(&self) -> String {
        let mut s = self.model.clone();
        if let Some(d) = &self.driver {
            let _ = write!(s, " [{d}]");
        }
        match (self.aperture_bar, self.aperture_bytes) {
            (Some(i), Some(b)) => {
                let _ = write!(s, ", BAR{i} {}", human_bytes(b));
            }
            _ => s.push_str(", no memory BAR read"),
        }
        match &self.link {
            Some(l) => {
                let _ = write!(s, ", {l}");
            }
            None => s.push_str(", link unknown"),
        }
        s
    }
}

/// Why a GPU is staged, in a clause: its memory-path verdict when that decides it (printed
/// beside it), else the reason that overrides a direct path.
fn staged_because(path: &GpuMemoryPath, why: &Why) -> String {
    if path.direct || why.text.starts_with("its P2P memory") {
        format!("because {}", why.text)
    } else {
        "as its memory-path verdict says".to_string()
    }
}

/// Why a GPU's legs are staged: the deciding reason of its memory-path verdict (the most severe),
/// with every reason in words; or, where the verdict says storage could DMA straight into it,
/// that only cuFile (GPUDirect Storage), asked when the GPU opens, confirms that path.
fn staged_why(path: &GpuMemoryPath, blocked: Option<&Reason>) -> Why {
    if let Some(r) = blocked {
        return Why {
            code: r.code().to_string(),
            text: format!("its P2P memory cannot be used: {}", r.describe()),
            remedy: r.remedy(),
        };
    }
    if path.direct {
        let gds = path.reasons.iter().any(|r| r.reason == GpuReason::NvidiaFsLoaded);
        return Why {
            code: "cufile".into(),
            text: if gds {
                "nvidia-fs is loaded, so GPUDirect Storage could DMA straight into its memory: the GPU reads and writes through cuFile where cuFile confirms it when the GPU opens (--gpu-io auto), which this plan cannot ask; planned staged".into()
            } else {
                "storage could DMA straight into its memory, but peerpath's GPU device stages through its pinned window".into()
            },
            remedy: None,
        };
    }
    let deciding = path.reasons.iter().min_by_key(|r| r.severity);
    let texts: Vec<&str> = path.reasons.iter().map(|r| r.text.as_str()).collect();
    Why {
        code: deciding.map_or("mem", |r| r.reason.short()).to_string(),
        text: format!("storage cannot DMA into its memory: {}", texts.join("; ")),
        remedy: path.reasons.iter().find_map(|r| r.remedy.clone()),
    }
}

/// What a decision was about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Whether a device can be used at all.
    Device,
    /// Which target a source writes to.
    Pairing,
    /// Which executor serves a stream, and how its legs go.
    Stream,
    /// A usable device that got no stream, or a target no source writes to.
    Idle,
}

/// An option that was not taken, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejected {
    pub option: String,
    pub why: String,
}

/// One decision and its explanation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub kind: DecisionKind,
    /// What was decided about: `ssd0 -> ssd6`, `csp3`, ...
    pub subject: String,
    /// What was chosen: a device, a target, `used`, `not used`, `idle`.
    pub choice: String,
    /// Why, one sentence per line.
    pub why: Vec<String>,
    /// The options not taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
}

/// The planner's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub request: PlanRequest,
    pub sources: Vec<Place>,
    pub targets: Vec<Place>,
    /// Every compute device considered (the CPU is not listed: it is always there).
    pub devices: Vec<DeviceReport>,
    /// Devices in the order of [`Plan::devices`], then the CPU by NUMA node.
    pub groups: Vec<Group>,
    pub streams: Vec<Stream>,
    /// Device, pairing, stream and idle decisions, in that order.
    pub decisions: Vec<Decision>,
    /// One line: how many streams on how many devices, how many legs through host memory.
    pub summary: String,
}

/// Plans `request` on `topo`. Errors: an unknown name, a block device named as a compute
/// device, no sources or targets, bad pairs.
pub fn plan(topo: &Topology, request: &PlanRequest) -> Result<Plan> {
    Planner::new(topo, request, true)?.run()
}

/// The streams of [`plan()`] (the same executors and legs, and `decision` the same index into
/// its decisions), without writing out why each option was or was not taken: for callers that
/// plan many times and read only the streams (the simulator).
pub fn streams(topo: &Topology, request: &PlanRequest) -> Result<Vec<Stream>> {
    Ok(Planner::new(topo, request, false)?.run()?.streams)
}

impl Topology {
    /// The placement plan for a job (see [`plan()`]).
    pub fn plan(&self, request: &PlanRequest) -> Result<Plan> {
        plan(self, request)
    }
}

// ---------------------------------------------------------------------------------------------

fn node_words(node: Option<u32>) -> String {
    match node {
        Some(n) => format!("NUMA node {n}"),
        None => "an unknown NUMA node".to_string(),
    }
}

fn node_short(node: Option<u32>) -> String {
    match node {
        Some(n) => format!("node {n}"),
        None => "node ?".to_string(),
    }
}

fn list(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// 0: same node (or unknown), 1: same socket (or socket unknown), 2: different sockets.
fn locality(topo: &Topology, a: Option<u32>, b: Option<u32>) -> u8 {
    match (a, b) {
        (Some(a), Some(b)) if a == b => 0,
        (Some(a), Some(b)) => match (topo.socket_of_node(a), topo.socket_of_node(b)) {
            (Some(x), Some(y)) if x != y => 2,
            _ => 1,
        },
        _ => 0,
    }
}

struct Cand {
    report: DeviceReport,
    /// A GPU whose legs go through pinned host memory, and why.
    staged: Option<Why>,
}

/// One leg evaluated against one device.
#[derive(Clone)]
struct LegEval {
    leg: Leg,
    /// Caveats and reroutes worth saying even when P2P works (ACS forced by the IOMMU, ...).
    notes: Vec<String>,
}

/// A stream on one device.
#[derive(Clone)]
struct Opt {
    cand: usize,
    read: Rc<LegEval>,
    write: Rc<LegEval>,
    host_legs: u8,
    distance: u32,
    mismatch: u8,
    /// A GPU staging both legs through pinned host memory (named as a compute device).
    staged: bool,
}

impl Opt {
    /// The "how near" part of the cost: host legs (0, 1; 2 for a staged GPU), distance, nodes.
    fn primary(&self) -> (u8, u32, u8) {
        (self.host_legs, self.distance, self.mismatch)
    }

    /// A device may take the stream: at least one leg peer-to-peer, or a GPU that stages both
    /// (it computes; a CSP bouncing both legs would only add copies to the CPU path).
    fn eligible(&self) -> bool {
        self.host_legs < 2 || self.staged
    }
}

/// The CPU path's cost: after every eligible device.
const CPU_PRIMARY: (u8, u32, u8) = (3, 0, 0);

struct Planner<'a> {
    topo: &'a Topology,
    request: &'a PlanRequest,
    sources: Vec<Place>,
    targets: Vec<Place>,
    /// Each endpoint once (a name may be a source and a target), and where each source and
    /// target is among them.
    ends: Vec<Place>,
    source_end: Vec<usize>,
    target_end: Vec<usize>,
    cands: Vec<Cand>,
    /// (candidate, endpoint) -> leg.
    legs: HashMap<(usize, usize), Rc<LegEval>>,
    /// Each function's way up to its root bus, walked once for all the legs' verdicts.
    maps: KernelMaps<'a>,
    decisions: Vec<Decision>,
    /// Whether decisions say why (their `why` and `rejected`); without, they only count.
    explain: bool,
}

impl<'a> Planner<'a> {
    fn new(topo: &'a Topology, request: &'a PlanRequest, explain: bool) -> Result<Planner<'a>> {
        if request.sources.is_empty() {
            return Err(TopoError::Invalid("a plan needs at least one source".into()));
        }
        if request.targets.is_empty() {
            return Err(TopoError::Invalid("a plan needs at least one target".into()));
        }
        let sources = request.sources.iter().map(|n| place(topo, n)).collect::<Result<Vec<_>>>()?;
        let targets = request.targets.iter().map(|n| place(topo, n)).collect::<Result<Vec<_>>>()?;
        if !request.pairs.is_empty() {
            let mut seen = vec![false; sources.len()];
            for &(s, t) in &request.pairs {
                if s >= sources.len() || t >= targets.len() {
                    return Err(TopoError::Invalid(format!(
                        "pair ({s}, {t}) is out of range: {}, {}",
                        count(sources.len(), "source"),
                        count(targets.len(), "target")
                    )));
                }
                if std::mem::replace(&mut seen[s], true) {
                    return Err(TopoError::Invalid(format!("source #{s} ({}) is in two pairs", sources[s].name)));
                }
            }
            if let Some(s) = seen.iter().position(|x| !x) {
                return Err(TopoError::Invalid(format!("source #{s} ({}) is in no pair", sources[s].name)));
            }
        }
        let mut ends: Vec<Place> = Vec::new();
        let mut end_of = |p: &Place| match ends.iter().position(|e| e.name == p.name) {
            Some(i) => i,
            None => {
                ends.push(p.clone());
                ends.len() - 1
            }
        };
        let source_end = sources.iter().map(&mut end_of).collect();
        let target_end = targets.iter().map(&mut end_of).collect();
        let mut p = Planner {
            topo,
            request,
            sources,
            targets,
            ends,
            source_end,
            target_end,
            cands: Vec::new(),
            legs: HashMap::new(),
            maps: KernelMaps::new(topo),
            decisions: Vec::new(),
            explain,
        };
        p.select_devices()?;
        Ok(p)
    }

    fn usable(&self) -> impl Iterator<Item = usize> + '_ {
        self.cands.iter().enumerate().filter(|(_, c)| c.report.usable).map(|(i, _)| i)
    }

    fn select_devices(&mut self) -> Result<()> {
        let topo = self.topo;
        let (bdfs, explicit): (Vec<Bdf>, bool) = match &self.request.devices {
            DeviceSelection::Auto => (
                topo.devices
                    .iter()
                    .filter(|d| matches!(d.kind, DeviceKind::Csp | DeviceKind::Gpu))
                    .map(|d| d.bdf)
                    .collect(),
                false,
            ),
            DeviceSelection::Named(names) => {
                let mut v: Vec<Bdf> = Vec::new();
                for n in names {
                    let b = compute_device_bdf(topo, n)?;
                    // Two names of one device (`csp0` and its address) were used once, unsaid;
                    // `v` holds one address per name so far, so `j` indexes `names` too.
                    if let Some(j) = v.iter().position(|x| *x == b) {
                        return Err(TopoError::WrongRole(format!("the devices name {b} twice ({} and {n}): name each device once", names[j])));
                    }
                    v.push(b);
                }
                (v, true)
            }
        };
        for b in bdfs {
            let d = topo.device(b).ok_or_else(|| TopoError::UnknownDevice { name: b.to_string() })?;
            let name = d
                .label
                .clone()
                .or_else(|| topo.nvme_for_pci(b).map(|c| c.name.clone()))
                .or_else(|| gpu::gpu_name(topo, b))
                .unwrap_or_else(|| b.to_string());
            let node = topo.numa_node_of(b);
            let socket = node.and_then(|n| topo.socket_of_node(n));
            // The provider-side reasons are those of the device's memory with itself.
            let v = verdict::verdict_with(&mut self.maps, &b.to_string(), &b.to_string())?;
            let blocking = v
                .reasons
                .iter()
                .find(|r| r.severity() == Severity::Blocks || matches!(r, Reason::ProviderExhausted { .. }));
            let mut why_lines = Vec::new();
            // A GPU's legs are staged through its pinned window: peerpath's GPU device
            // reads and writes no P2PDMA memory yet, even where the GPU publishes some.
            let gpu_path = (d.kind == DeviceKind::Gpu).then(|| gpu::memory_path(topo, d));
            let staged = gpu_path.as_ref().map(|p| match (blocking, d.p2pmem) {
                (None, Some(_)) => Why {
                    code: "p2pmem".into(),
                    text: "its memory is a P2PDMA provider, but peerpath's GPU device does not read or write P2PDMA memory yet: it stages through its pinned window".into(),
                    remedy: None,
                },
                _ => staged_why(p, blocking.filter(|_| d.p2pmem.is_some())),
            });
            let gpu_report = gpu_path.as_ref().map(|p| GpuReport::new(d, p, staged.as_ref()));
            if let (Some(g), Some(p)) = (&gpu_report, &gpu_path) {
                why_lines.push(format!("a GPU: {}, on {}", g.describe(), node_words(node)));
                why_lines.push(format!("memory-path verdict: {}", p.describe()));
            }
            let because = |w: &Why| staged_because(gpu_path.as_ref().expect("a GPU"), w);
            let (usable, why, remedy) = match (blocking, d.p2pmem, &staged) {
                (_, _, Some(w)) if explicit => (
                    true,
                    format!("a GPU named as a compute device: its streams are staged through pinned host memory on both legs, {}", because(w)),
                    w.remedy.clone(),
                ),
                (_, _, Some(w)) => (
                    false,
                    format!(
                        "a GPU: its streams would be staged through pinned host memory on both legs, {}; not placed automatically, since the CPU path touches host memory no more: name it (--devices {name}) to compute on it",
                        because(w)
                    ),
                    w.remedy.clone(),
                ),
                (Some(r), _, None) => (false, r.describe(), r.remedy()),
                (None, None, None) => (false, format!("{b} has no P2P memory"), None),
                (None, Some(p), None) => {
                    let mut w = format!(
                        "{} of published P2P memory ({} free) on {}",
                        human_bytes(p.size_bytes),
                        human_bytes(p.available_bytes),
                        node_words(node)
                    );
                    if let Some(s) = socket {
                        let _ = write!(w, " (socket {s})");
                    }
                    if !matches!(d.kind, DeviceKind::Csp | DeviceKind::Gpu) {
                        let _ = write!(w, "; it is a {}, not a CSP, but was named as a compute device", d.kind.short());
                    }
                    (true, w, None)
                }
            };
            why_lines.push(why.clone());
            if let Some(r) = &remedy {
                why_lines.push(format!("remedy: {r}"));
            }
            if !explicit && usable {
                why_lines.push(if d.kind == DeviceKind::Gpu {
                    "found automatically: a GPU whose memory is a P2PDMA provider".to_string()
                } else {
                    "found automatically: a CSP (computational storage processor)".to_string()
                });
            }
            self.decisions.push(Decision {
                kind: DecisionKind::Device,
                subject: format!("{name} ({b})"),
                choice: if usable { "usable".into() } else { "not used".into() },
                why: why_lines,
                rejected: Vec::new(),
            });
            self.cands.push(Cand {
                report: DeviceReport {
                    name,
                    bdf: b,
                    kind: d.kind,
                    node,
                    socket,
                    p2p_memory_bytes: d.p2pmem.map(|p| p.size_bytes),
                    p2p_available_bytes: d.p2pmem.map(|p| p.available_bytes),
                    usable,
                    why,
                    remedy,
                    streams: 0,
                    gpu: gpu_report,
                },
                staged,
            });
        }
        if self.usable().next().is_none() {
            let why = self.no_device_words();
            self.decisions.push(Decision {
                kind: DecisionKind::Device,
                subject: "compute devices".into(),
                choice: "CPU only".into(),
                why: vec![why],
                rejected: Vec::new(),
            });
        }
        Ok(())
    }

    /// Why there is no usable device, in words.
    fn no_device_words(&self) -> String {
        let topo = self.topo;
        let published: Vec<String> = topo
            .devices
            .iter()
            .filter(|d| d.p2pmem.is_some_and(|p| p.published))
            .map(|d| d.display_name())
            .collect();
        let memory = if published.is_empty() {
            "no device in this topology has published P2P memory".to_string()
        } else {
            format!("P2P memory is published by {} (not compute devices)", list(&published))
        };
        match &self.request.devices {
            DeviceSelection::Named(n) if n.is_empty() => {
                "no compute device was requested (CPU only): every stream runs on the host CPU".to_string()
            }
            DeviceSelection::Named(_) => format!(
                "none of the named devices has usable P2P memory (see each one above); {memory}: every stream runs on the host CPU"
            ),
            DeviceSelection::Auto if self.cands.is_empty() => format!(
                "no compute device: this topology has no CSP, and {memory}: every stream runs on the host CPU (to offload: a CSP whose P2P memory is published, e.g. a CMB of 2 MiB or more with RDS and WDS, on a kernel with CONFIG_PCI_P2PDMA)"
            ),
            DeviceSelection::Auto => {
                let gpus: Vec<String> = self.cands.iter().filter(|c| c.staged.is_some()).map(|c| c.report.name.clone()).collect();
                let csps = self.cands.iter().filter(|c| c.report.kind == DeviceKind::Csp).count();
                let csp_words = if csps == 0 { "this topology has no CSP".to_string() } else { "no CSP has usable P2P memory (see each one above)".to_string() };
                if gpus.is_empty() {
                    format!("{csp_words}; {memory}: every stream runs on the host CPU")
                } else {
                    format!(
                        "{csp_words}; {memory}; {} {} would stage every byte through pinned host memory, so {} not placed automatically (name one with --devices): every stream runs on the host CPU",
                        if gpus.len() == 1 { "the GPU" } else { "the GPUs" },
                        list(&gpus),
                        if gpus.len() == 1 { "it is" } else { "they are" }
                    )
                }
            }
        }
    }

    fn leg(&mut self, cand: usize, end: usize) -> Result<Rc<LegEval>> {
        let key = (cand, end);
        if let Some(l) = self.legs.get(&key) {
            return Ok(Rc::clone(l));
        }
        let place = &self.ends[end];
        if let Some(why) = &self.cands[cand].staged {
            let l = Rc::new(LegEval {
                leg: Leg::Staged { node: self.cands[cand].report.node.or(place.node), why: why.clone() },
                notes: Vec::new(),
            });
            self.legs.insert(key, Rc::clone(&l));
            return Ok(l);
        }
        let c = &self.cands[cand].report;
        let v = verdict::verdict_with(&mut self.maps, &c.bdf.to_string(), &place.name)?;
        let notes: Vec<String> = v
            .reasons
            .iter()
            .filter(|r| matches!(r.severity(), Severity::Reroutes | Severity::Caveat))
            .map(|r| match r.remedy() {
                Some(fix) => format!("{} (remedy: {fix})", r.describe()),
                None => r.describe(),
            })
            .collect();
        let leg = match &v.path {
            P2pPath::BusAddress { distance } => Leg::BusAddress { distance: *distance },
            P2pPath::ThroughHostBridge { distance } => Leg::ThroughHostBridge { distance: *distance },
            P2pPath::NotSupported { reason } => Leg::Bounce {
                node: place.node.or(c.node),
                why: Why::from(reason),
            },
        };
        let l = Rc::new(LegEval {
            leg,
            notes: if v.path.is_supported() { notes } else { Vec::new() },
        });
        self.legs.insert(key, Rc::clone(&l));
        Ok(l)
    }

    fn option(&mut self, cand: usize, s: usize, t: usize) -> Result<Opt> {
        let read = self.leg(cand, self.source_end[s])?;
        let write = self.leg(cand, self.target_end[t])?;
        let host_legs = [&read, &write].iter().filter(|l| !l.leg.is_p2p()).count() as u8;
        let distance = read.leg.distance().unwrap_or(0) + write.leg.distance().unwrap_or(0);
        let dn = self.cands[cand].report.node;
        let mismatch = [self.sources[s].node, self.targets[t].node]
            .iter()
            .filter(|n| matches!((n, dn), (Some(a), Some(b)) if *a != b))
            .count() as u8;
        Ok(Opt {
            cand,
            read,
            write,
            host_legs,
            distance,
            mismatch,
            staged: self.cands[cand].staged.is_some(),
        })
    }

    /// Every usable device's option for (s, t), in candidate order.
    fn options(&mut self, s: usize, t: usize) -> Result<Vec<Opt>> {
        let usable: Vec<usize> = self.usable().collect();
        usable.into_iter().map(|c| self.option(c, s, t)).collect()
    }

    fn best_primary(opts: &[Opt]) -> (u8, u32, u8) {
        opts.iter()
            .filter(|o| o.eligible())
            .map(Opt::primary)
            .min()
            .unwrap_or(CPU_PRIMARY)
    }

    fn cost_words(&self, opts: &[Opt], primary: (u8, u32, u8)) -> String {
        let names: Vec<String> = opts
            .iter()
            .filter(|o| o.eligible() && o.primary() == primary)
            .map(|o| self.cands[o.cand].report.name.clone())
            .collect();
        let (who, reach) = if names.len() == 1 { ("device", "reaches") } else { ("devices", "reach") };
        match primary.0 {
            0 => format!("{} can reach both peer-to-peer, total distance {}", list(&names), primary.1),
            1 => format!(
                "no device reaches both peer-to-peer: the nearest {who} ({}) {reach} one of them (distance {}), the other leg needs a host bounce buffer",
                list(&names),
                primary.1
            ),
            2 => format!(
                "no device reaches either of them peer-to-peer; the nearest GPU{} ({}) {} named to compute: {} through pinned host memory on both legs",
                if names.len() == 1 { "" } else { "s" },
                list(&names),
                if names.len() == 1 { "was" } else { "were" },
                if names.len() == 1 { "staged" } else { "each staged" }
            ),
            _ if opts.is_empty() => "there is no usable compute device: the CPU path".to_string(),
            _ => "no device reaches either of them peer-to-peer: the CPU path".to_string(),
        }
    }

    /// Step 2: which target each source writes to.
    fn pair(&mut self) -> Result<Vec<(usize, usize)>> {
        if !self.request.pairs.is_empty() {
            let mut pairs = self.request.pairs.clone();
            pairs.sort_by_key(|&(s, _)| s);
            return Ok(pairs);
        }
        let mut load = vec![0usize; self.targets.len()];
        let mut pairs = Vec::new();
        for s in 0..self.sources.len() {
            let mut keyed = Vec::new();
            for (t, &tl) in load.iter().enumerate() {
                let opts = self.options(s, t)?;
                let primary = Self::best_primary(&opts);
                let loc = locality(self.topo, self.sources[s].node, self.targets[t].node);
                keyed.push(((primary, loc, tl, t), opts));
            }
            let best = keyed.iter().map(|(k, _)| *k).min().expect("at least one target");
            let t = best.3;
            load[t] += 1;
            pairs.push((s, t));
            let (src, tgt) = (&self.sources[s], &self.targets[t]);
            let mut why = vec![
                format!("{}: {}", tgt.name, self.cost_words(&keyed[t].1, best.0)),
                match best.1 {
                    0 if src.node.is_some() && tgt.node.is_some() => {
                        format!("{} is on the source's NUMA node ({})", tgt.name, node_words(tgt.node))
                    }
                    0 => format!("the NUMA node of {} or {} is unknown", src.name, tgt.name),
                    1 => format!("{} is on another NUMA node of the source's socket", tgt.name),
                    _ => format!("{} is on another socket than the source: no target on the source's socket does better", tgt.name),
                },
            ];
            let ties: Vec<String> = keyed
                .iter()
                .filter(|(k, _)| (k.0, k.1) == (best.0, best.1))
                .map(|(k, _)| self.targets[k.3].name.clone())
                .collect();
            if ties.len() > 1 {
                why.push(format!(
                    "balance: {} are equally near; {} had the fewest sources so far ({})",
                    list(&ties),
                    tgt.name,
                    best.2
                ));
            }
            let rejected = keyed
                .iter()
                .filter(|(k, _)| k.3 != t)
                .map(|(k, opts)| Rejected {
                    option: self.targets[k.3].name.clone(),
                    why: self.target_why_not(best, *k, opts),
                })
                .collect();
            self.decisions.push(Decision {
                kind: DecisionKind::Pairing,
                subject: format!("source {}", src.name),
                choice: tgt.name.clone(),
                why,
                rejected,
            });
        }
        Ok(pairs)
    }

    #[allow(clippy::type_complexity)]
    fn target_why_not(
        &self,
        chosen: ((u8, u32, u8), u8, usize, usize),
        other: ((u8, u32, u8), u8, usize, usize),
        opts: &[Opt],
    ) -> String {
        let (cp, op) = (chosen.0, other.0);
        if op.0 > cp.0 {
            if other.1 == 2 && op.0 == 1 {
                return "on another socket than the source, and P2P never crosses sockets: one leg would need a host bounce buffer".to_string();
            }
            return self.cost_words(opts, op);
        }
        if op.1 > cp.1 {
            return format!("farther: total distance {} against {}", op.1, cp.1);
        }
        if op.2 > cp.2 {
            return "its nearest device is on another NUMA node than the source or target".to_string();
        }
        if other.1 > chosen.1 {
            return match other.1 {
                1 => "on another NUMA node than the source".to_string(),
                _ => "on another socket than the source".to_string(),
            };
        }
        if other.2 > chosen.2 {
            return format!("equally near, but already had {} against {}", count(other.2, "source"), chosen.2);
        }
        format!("equally near and equally loaded; {} is listed first", self.targets[chosen.3].name)
    }

    /// Step 3: which executor serves each stream.
    fn assign(&mut self, pairs: &[(usize, usize)]) -> Result<Vec<Stream>> {
        // Options and fair shares.
        let mut all: Vec<Vec<Opt>> = Vec::new();
        let mut share = vec![0f64; self.cands.len()];
        for &(s, t) in pairs {
            let opts = self.options(s, t)?;
            let best = Self::best_primary(&opts);
            if best != CPU_PRIMARY {
                let set: Vec<usize> = opts.iter().filter(|o| o.eligible() && o.primary() == best).map(|o| o.cand).collect();
                for c in &set {
                    share[*c] += 1.0 / set.len() as f64;
                }
            }
            all.push(opts);
        }
        let cap: Vec<usize> = share.iter().map(|x| (x - 1e-9).ceil().max(0.0) as usize).collect();
        let mut load = vec![0usize; self.cands.len()];
        let mut serves_t: Vec<Vec<String>> = vec![Vec::new(); self.cands.len()];
        let mut serves_s: Vec<Vec<String>> = vec![Vec::new(); self.cands.len()];
        let mut streams = Vec::new();
        for (i, (&(s, t), opts)) in pairs.iter().zip(all).enumerate() {
            let src = self.sources[s].clone();
            let tgt = self.targets[t].clone();
            let key = |o: &Opt| {
                (
                    o.primary(),
                    load[o.cand] >= cap[o.cand],
                    !serves_t[o.cand].contains(&tgt.name),
                    !serves_s[o.cand].contains(&src.name),
                    load[o.cand],
                    o.cand,
                )
            };
            let chosen = opts.iter().filter(|o| o.eligible()).min_by_key(|o| key(o)).cloned();
            let subject = format!("{} -> {}", src.name, tgt.name);
            let decision = self.decisions.len();
            let stream = match chosen {
                Some(o) => {
                    let c = self.cands[o.cand].report.clone();
                    // Why, and the options not taken (which say why not): only when asked.
                    let (mut why, mut rejected) = (Vec::new(), Vec::new());
                    if self.explain {
                        why = vec![
                            format!("read {}: {}", src.describe(), o.read.leg.words()),
                            format!("write {}: {}", tgt.describe(), o.write.leg.words()),
                        ];
                        for n in o.read.notes.iter().chain(&o.write.notes) {
                            if !why.iter().any(|w| w.ends_with(n.as_str())) {
                                why.push(format!("note: {n}"));
                            }
                        }
                        why.push(match o.mismatch {
                            0 if c.node.is_some() && src.node.is_some() && tgt.node.is_some() => {
                                format!("{} is on {}, the node of the source and the target", c.name, node_words(c.node))
                            }
                            0 => format!("{} is on {}; the node of the source or target is unknown", c.name, node_words(c.node)),
                            _ => format!("{} is on {}; {} {} another NUMA node of the same socket", c.name, node_words(c.node), count(o.mismatch, "leg"), if o.mismatch == 1 { "reaches" } else { "reach" }),
                        });
                        let ties: Vec<&Opt> = opts.iter().filter(|x| x.eligible() && x.primary() == o.primary()).collect();
                        if ties.len() > 1 {
                            let names: Vec<String> = ties.iter().map(|x| self.cands[x.cand].report.name.clone()).collect();
                            let mut b = format!(
                                "balance: {} are equally near; {} had {}, its fair share is {}",
                                list(&names),
                                c.name,
                                count(load[o.cand], "stream"),
                                cap[o.cand]
                            );
                            if serves_t[o.cand].contains(&tgt.name) {
                                let _ = write!(b, ", and it already writes {} (a target stays with one device)", tgt.name);
                            } else if serves_s[o.cand].contains(&src.name) {
                                let _ = write!(b, ", and it already reads {}", src.name);
                            }
                            why.push(b);
                        }
                        let ck = key(&o);
                        for x in &opts {
                            if x.cand == o.cand {
                                continue;
                            }
                            rejected.push(Rejected {
                                option: self.cands[x.cand].report.name.clone(),
                                why: self.device_why_not(x, &o, key(x), ck, &src, &tgt, load[x.cand], cap[x.cand]),
                            });
                        }
                        for c2 in self.cands.iter().filter(|c| !c.report.usable) {
                            rejected.push(Rejected {
                                option: c2.report.name.clone(),
                                why: format!("not usable: {}", c2.report.why),
                            });
                        }
                        rejected.push(Rejected {
                            option: "host CPU".into(),
                            why: if o.staged {
                                format!("{} was named to compute: the CPU path is only for streams that no named device takes", c.name)
                            } else {
                                "the CPU path is only for streams that no device reaches peer-to-peer on either leg".into()
                            },
                        });
                    }
                    self.decisions.push(Decision {
                        kind: DecisionKind::Stream,
                        subject,
                        choice: c.name.clone(),
                        why,
                        rejected,
                    });
                    load[o.cand] += 1;
                    if !serves_t[o.cand].contains(&tgt.name) {
                        serves_t[o.cand].push(tgt.name.clone());
                    }
                    if !serves_s[o.cand].contains(&src.name) {
                        serves_s[o.cand].push(src.name.clone());
                    }
                    Stream {
                        index: i,
                        source_index: s,
                        target_index: t,
                        source: src.name.clone(),
                        target: tgt.name.clone(),
                        executor: Executor::Device {
                            name: c.name.clone(),
                            bdf: c.bdf,
                            node: c.node,
                        },
                        read: o.read.leg.clone(),
                        write: o.write.leg.clone(),
                        decision,
                    }
                }
                None => {
                    let node = src.node.or(tgt.node);
                    let mut why = Vec::new();
                    if opts.is_empty() {
                        why.push(self.no_device_words());
                    } else {
                        why.push(format!(
                            "no device reaches {} or {} peer-to-peer: a device would move every byte through host memory on both legs, the CPU path moves it through host memory once",
                            src.name, tgt.name
                        ));
                    }
                    why.push(format!(
                        "compute on the cores of {} (the source's node); read buffers on {}, write buffers on {} (the target's node)",
                        node_words(node),
                        node_words(src.node),
                        node_words(tgt.node)
                    ));
                    let mut rejected = Vec::new();
                    if self.explain {
                        for x in &opts {
                            rejected.push(Rejected {
                                option: self.cands[x.cand].report.name.clone(),
                                why: neither(&src, &tgt, x),
                            });
                        }
                        for c2 in self.cands.iter().filter(|c| !c.report.usable) {
                            rejected.push(Rejected {
                                option: c2.report.name.clone(),
                                why: format!("not usable: {}", c2.report.why),
                            });
                        }
                    }
                    self.decisions.push(Decision {
                        kind: DecisionKind::Stream,
                        subject,
                        choice: "host CPU".into(),
                        why,
                        rejected,
                    });
                    Stream {
                        index: i,
                        source_index: s,
                        target_index: t,
                        source: src.name.clone(),
                        target: tgt.name.clone(),
                        executor: Executor::Cpu { node },
                        read: Leg::Host { node: src.node },
                        write: Leg::Host { node: tgt.node },
                        decision,
                    }
                }
            };
            streams.push(stream);
        }
        for (c, l) in load.iter().enumerate() {
            self.cands[c].report.streams = *l;
        }
        Ok(streams)
    }

    #[allow(clippy::too_many_arguments)]
    fn device_why_not<K: Ord>(
        &self,
        x: &Opt,
        chosen: &Opt,
        xk: (K, bool, bool, bool, usize, usize),
        ck: (K, bool, bool, bool, usize, usize),
        src: &Place,
        tgt: &Place,
        load: usize,
        cap: usize,
    ) -> String {
        let cn = &self.cands[chosen.cand].report.name;
        if !x.eligible() {
            return neither(src, tgt, x);
        }
        if x.staged && !chosen.staged {
            return format!(
                "it stages both legs through pinned host memory ({}); {cn} reaches at least one of them peer-to-peer",
                refusal(&x.read.leg)
            );
        }
        if x.host_legs > chosen.host_legs {
            let (which, leg) = if x.read.leg.is_p2p() { (format!("write {}", tgt.name), &x.write.leg) } else { (format!("read {}", src.name), &x.read.leg) };
            return format!("{which} would need a host bounce buffer: {}", refusal(leg));
        }
        if x.distance > chosen.distance {
            return format!("farther: total distance {} against {} for {cn}", x.distance, chosen.distance);
        }
        if x.mismatch > chosen.mismatch {
            return format!(
                "on {}, another NUMA node than {} of the stream's endpoints",
                node_words(self.cands[x.cand].report.node),
                x.mismatch
            );
        }
        if xk.1 && !ck.1 {
            return format!("equally near, but it already has its fair share ({})", count(cap, "stream"));
        }
        if xk.2 && !ck.2 {
            return format!("equally near, but {cn} already writes {} (a target stays with one device)", tgt.name);
        }
        if xk.3 && !ck.3 {
            return format!("equally near, but {cn} already reads {}", src.name);
        }
        if xk.4 > ck.4 {
            return format!("equally near, but it already has {} against {}", count(load, "stream"), ck.4);
        }
        format!("equally near and equally loaded; {cn} is listed first")
    }

    fn run(mut self) -> Result<Plan> {
        let pairs = self.pair()?;
        let streams = self.assign(&pairs)?;
        // Groups: devices in candidate order, then the CPU by node.
        let mut groups: Vec<Group> = Vec::new();
        let mut order: Vec<Executor> = self
            .cands
            .iter()
            .filter(|c| c.report.streams > 0)
            .map(|c| Executor::Device {
                name: c.report.name.clone(),
                bdf: c.report.bdf,
                node: c.report.node,
            })
            .collect();
        let mut cpu: Vec<Option<u32>> = streams
            .iter()
            .filter_map(|s| match s.executor {
                Executor::Cpu { node } => Some(node),
                _ => None,
            })
            .collect();
        cpu.sort_by_key(|n| (n.is_none(), *n));
        cpu.dedup();
        order.extend(cpu.into_iter().map(|node| Executor::Cpu { node }));
        for e in order {
            let mut g = Group {
                executor: e.clone(),
                sources: Vec::new(),
                targets: Vec::new(),
                streams: Vec::new(),
                p2p_legs: 0,
                host_legs: 0,
            };
            for s in streams.iter().filter(|s| s.executor == e) {
                if !g.sources.contains(&s.source) {
                    g.sources.push(s.source.clone());
                }
                if !g.targets.contains(&s.target) {
                    g.targets.push(s.target.clone());
                }
                g.streams.push(s.index);
                g.host_legs += s.host_legs();
                g.p2p_legs += 2 - s.host_legs();
            }
            groups.push(g);
        }
        // Idle devices and unused targets.
        for c in self.cands.iter().filter(|c| c.report.usable && c.report.streams == 0) {
            let ci = self.cands.iter().position(|x| x.report.bdf == c.report.bdf).expect("candidate");
            // Its legs evaluated so far, by endpoint name.
            let mut legs: Vec<(&str, &LegEval)> = self
                .legs
                .iter()
                .filter(|((cand, _), _)| *cand == ci)
                .map(|((_, e), l)| (self.ends[*e].name.as_str(), &**l))
                .collect();
            legs.sort_by_key(|(n, _)| *n);
            let reachable = legs.iter().any(|(_, l)| l.leg.is_p2p());
            // Who took the streams: another staged device (a second GPU named too) or devices
            // that reach an endpoint peer-to-peer.
            let taken_by_staged = streams.iter().any(|s| {
                matches!(&s.executor, Executor::Device { bdf, .. } if self.cands.iter().any(|x| x.report.bdf == *bdf && x.staged.is_some()))
            });
            let why = if c.staged.is_some() && taken_by_staged {
                "other named devices took every stream (it would stage both legs through pinned host memory too)".to_string()
            } else if c.staged.is_some() {
                "devices that reach a source or target peer-to-peer took every stream (it would stage both legs through pinned host memory)".to_string()
            } else if reachable {
                "equally near or nearer devices took every stream it could serve".to_string()
            } else {
                let first = legs
                    .first()
                    .map(|(n, l)| format!(" (e.g. {n}: {})", refusal(&l.leg)))
                    .unwrap_or_default();
                format!("no source or target reaches it peer-to-peer{first}")
            };
            self.decisions.push(Decision {
                kind: DecisionKind::Idle,
                subject: c.report.name.clone(),
                choice: "idle".into(),
                why: vec![why],
                rejected: Vec::new(),
            });
        }
        for (t, tgt) in self.targets.iter().enumerate() {
            if !pairs.iter().any(|&(_, pt)| pt == t) {
                let why = if self.request.pairs.is_empty() {
                    "every source found a nearer or less loaded target".to_string()
                } else {
                    "no pair in the request names it".to_string()
                };
                self.decisions.push(Decision {
                    kind: DecisionKind::Idle,
                    subject: format!("target {}", tgt.name),
                    choice: "unused".into(),
                    why: vec![why],
                    rejected: Vec::new(),
                });
            }
        }
        let devices_used = groups.iter().filter(|g| !g.executor.is_cpu()).count();
        let cpu_streams = streams.iter().filter(|s| s.executor.is_cpu()).count();
        let device_legs = || streams.iter().filter(|s| !s.executor.is_cpu()).flat_map(|s| [&s.read, &s.write]);
        let staged = device_legs().filter(|l| matches!(l, Leg::Staged { .. })).count();
        let bounced = device_legs().filter(|l| !l.is_p2p()).count() - staged;
        let staged_words = if staged > 0 { format!(", {staged} staged through pinned host memory") } else { String::new() };
        let summary = format!(
            "{}: {} on {} ({} through a host bounce buffer{staged_words}), {} on the host CPU",
            count(streams.len(), "stream"),
            streams.len() - cpu_streams,
            count(devices_used, "device"),
            count(bounced, "leg"),
            cpu_streams
        );
        Ok(Plan {
            request: self.request.clone(),
            sources: self.sources,
            targets: self.targets,
            devices: self.cands.into_iter().map(|c| c.report).collect(),
            groups,
            streams,
            decisions: self.decisions,
            summary,
        })
    }
}

/// Why neither leg of a stream goes peer-to-peer with a device (one sentence when both legs
/// are refused for the same reason).
fn neither(src: &Place, tgt: &Place, x: &Opt) -> String {
    let (r, w) = (refusal(&x.read.leg), refusal(&x.write.leg));
    if r == w {
        format!("neither leg can go peer-to-peer (read {}, write {}): {r}", src.name, tgt.name)
    } else {
        format!("neither leg can go peer-to-peer: read {}: {r}; write {}: {w}", src.name, tgt.name)
    }
}

/// The refusal in a bounced leg, or the leg's words.
fn refusal(leg: &Leg) -> String {
    match leg {
        Leg::Bounce { why, .. } | Leg::Staged { why, .. } => why.text.clone(),
        other => other.words(),
    }
}

fn place(topo: &Topology, name: &str) -> Result<Place> {
    let ep = topo.resolve(name)?;
    // Not even a host buffer reaches a disk user space cannot open.
    if let Some(r) = ep.block.as_ref().and_then(|b| crate::verdict::hidden_path(topo, b)) {
        return Err(TopoError::WrongRole(format!("{}; {}", r.describe(), r.remedy().unwrap_or_default())));
    }
    let nodes: Vec<Option<u32>> = ep.pci.iter().map(|b| topo.numa_node_of(*b)).collect();
    let node = match nodes.first() {
        Some(Some(n)) if nodes.iter().all(|x| *x == Some(*n)) => Some(*n),
        _ => None,
    };
    let what = match (&ep.block, ep.pci.first().and_then(|b| topo.device(*b))) {
        (Some(b), _) if ep.partition_of.is_some() => format!("partition of {} ({})", b.name, b.kind.short()),
        (Some(b), _) => b.kind.short().to_string(),
        // Sources and targets are storage the job reads and writes. A bridge holds no data (a
        // host bridge or a switch port named by mistake); nor, to the plan, does a GPU (it
        // computes: `--devices`) or a NIC: each was planned as a disk on the CPU path.
        (None, Some(d)) if matches!(d.kind, DeviceKind::Bridge | DeviceKind::Gpu | DeviceKind::Nic) => {
            let role = if d.role == crate::PortRole::Auto || d.kind != DeviceKind::Bridge { d.kind.short() } else { d.role.short() };
            let gpu = crate::gpu::gpu_name(topo, d.bdf).map(|g| format!("; to compute on it, name it in --devices ({g})")).unwrap_or_default();
            return Err(TopoError::WrongRole(format!(
                "{name} is a {role} ({}, class {:#08x}), not storage: name an SSD, an NVMe controller or a block device{gpu}",
                d.bdf, d.class
            )));
        }
        (None, Some(d)) => d.kind.short().to_string(),
        (None, None) => "not a PCI device".to_string(),
    };
    Ok(Place {
        name: name.to_string(),
        pci: ep.pci,
        node,
        socket: node.and_then(|n| topo.socket_of_node(n)),
        what,
    })
}

fn compute_device_bdf(topo: &Topology, name: &str) -> Result<Bdf> {
    let ep = topo.resolve(name)?;
    if let Some(b) = &ep.block {
        return Err(TopoError::WrongRole(format!(
            "{name} is a block device ({}), not a compute device; name a CSP by label, PCI address or controller",
            b.kind.short()
        )));
    }
    match ep.pci.as_slice() {
        [one] => Ok(*one),
        [] => Err(TopoError::WrongRole(format!("{name} is not a PCI device and cannot be a compute device"))),
        _ => Err(TopoError::WrongRole(format!("{name} spans several PCI functions; name one"))),
    }
}

impl Plan {
    /// The group served by the executor called `name` (`csp0`, `cpu (node 0)`).
    pub fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.executor.name() == name)
    }

    /// The plan as pretty JSON.
    pub fn to_json_string(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// The groups and streams as tables (what `peerpath plan` prints).
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.summary);
        out.push('\n');
        let mut rows = vec![vec![
            "executor".to_string(),
            "address".to_string(),
            "node".to_string(),
            "sources".to_string(),
            "targets".to_string(),
            "streams".to_string(),
            "P2P legs".to_string(),
            "host legs".to_string(),
        ]];
        for g in &self.groups {
            let (addr, node) = match &g.executor {
                Executor::Device { bdf, node, .. } => (bdf.to_string(), *node),
                Executor::Cpu { node } => ("-".to_string(), *node),
            };
            rows.push(vec![
                g.executor.name(),
                addr,
                node.map(|n| n.to_string()).unwrap_or_else(|| "?".into()),
                g.sources.join(", "),
                g.targets.join(", "),
                g.streams.len().to_string(),
                g.p2p_legs.to_string(),
                g.host_legs.to_string(),
            ]);
        }
        table(&mut out, &rows);
        out.push('\n');
        let mut rows = vec![vec![
            "#".to_string(),
            "source".to_string(),
            "target".to_string(),
            "executor".to_string(),
            "read".to_string(),
            "write".to_string(),
        ]];
        for s in &self.streams {
            rows.push(vec![
                s.index.to_string(),
                s.source.clone(),
                s.target.clone(),
                s.executor.name(),
                s.read.short(),
                s.write.short(),
            ]);
        }
        table(&mut out, &rows);
        let gpus: Vec<(&DeviceReport, &GpuReport)> = self.devices.iter().filter_map(|d| d.gpu.as_ref().map(|g| (d, g))).collect();
        if !gpus.is_empty() {
            out.push('\n');
            for (d, g) in gpus {
                let node = d.node.map_or_else(|| "node ?".to_string(), |n| format!("node {n}"));
                let _ = writeln!(out, "GPU {} ({}): {}, {node}", d.name, d.bdf, g.describe());
                let _ = writeln!(out, "  {}", g.verdict);
                for r in g.reasons.iter().filter_map(|r| r.remedy.as_ref()) {
                    let _ = writeln!(out, "  remedy: {r}");
                }
                let legs: usize = self
                    .streams
                    .iter()
                    .filter(|s| matches!(&s.executor, Executor::Device { bdf, .. } if *bdf == d.bdf))
                    .map(|s| [&s.read, &s.write].iter().filter(|l| matches!(l, Leg::Staged { .. })).count())
                    .sum();
                let used = match (d.usable, d.streams) {
                    (false, _) => "not used".to_string(),
                    (true, 0) => "usable, idle".to_string(),
                    (true, n) if legs > 0 => format!("{}, {} through pinned host memory", count(n, "stream"), count(legs, "leg")),
                    (true, n) => count(n, "stream"),
                };
                    let _ = writeln!(out, "  data path: {} [{used}]", g.data_path_why);
            }
        }
        let unusable: Vec<&DeviceReport> = self.devices.iter().filter(|d| !d.usable).collect();
        if !unusable.is_empty() {
            out.push('\n');
            for d in unusable {
                let _ = writeln!(out, "not used: {} ({}): {}", d.name, d.bdf, d.why);
            }
        }
        let notes: Vec<&Decision> = self.decisions.iter().filter(|d| d.kind == DecisionKind::Idle).collect();
        if !notes.is_empty() {
            out.push('\n');
            for d in notes {
                let _ = writeln!(out, "{}: {}: {}", d.subject, d.choice, d.why.join("; "));
            }
        }
        out.push_str(
            "\nP2P bus n: below a common switch, distance n.  P2P host bridge n: through the root complex.\n\
             bounce node n (why): through a host buffer on NUMA node n.  host node n: the CPU path.  --explain says why.\n",
        );
        if self.streams.iter().any(|s| matches!(s.read, Leg::Staged { .. }) || matches!(s.write, Leg::Staged { .. })) {
            out.push_str(
                "staged node n (why): a GPU's leg through its pinned host memory on NUMA node n (no direct DMA into its memory: see its GPU line).\n",
            );
        }
        out
    }

    /// Every decision with its reasons: why each device, target and executor, and why not the
    /// others.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Placement plan: {}", self.summary);
        let sections = [
            (DecisionKind::Device, "Compute devices (the host CPU is always available)"),
            (DecisionKind::Pairing, "Pairing: which target each source writes to"),
            (DecisionKind::Stream, "Streams: who serves each, and how the bytes move"),
            (DecisionKind::Idle, "Idle devices and unused targets"),
        ];
        for (kind, title) in sections {
            let ds: Vec<&Decision> = self.decisions.iter().filter(|d| d.kind == kind).collect();
            if kind == DecisionKind::Pairing && !self.request.pairs.is_empty() {
                let _ = writeln!(out, "\nPairing: given by the request ({}).", count(self.request.pairs.len(), "pair"));
                continue;
            }
            if ds.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n{title}:");
            for d in ds {
                let _ = writeln!(out, "  {}: {}", d.subject, d.choice);
                for w in &d.why {
                    let _ = writeln!(out, "    - {w}");
                }
                for r in &d.rejected {
                    let _ = writeln!(out, "    not {}: {}", r.option, r.why);
                }
            }
        }
        out
    }
}

fn table(out: &mut String, rows: &[Vec<String>]) {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == cols {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_selection_parses() {
        assert_eq!(DeviceSelection::parse("auto"), Ok(DeviceSelection::Auto));
        assert_eq!(DeviceSelection::parse(" AUTO "), Ok(DeviceSelection::Auto));
        assert_eq!(
            DeviceSelection::parse("csp0, csp1,,cpu"),
            Ok(DeviceSelection::Named(vec!["csp0".into(), "csp1".into()]))
        );
        assert_eq!(DeviceSelection::parse("cpu"), Ok(DeviceSelection::Named(vec![])));
        assert!(DeviceSelection::parse("csp0, csp1,csp0").is_err_and(|e| e.contains("names csp0 twice")));
        for nothing in ["", " ", ",", " , "] {
            assert!(DeviceSelection::parse(nothing).is_err_and(|e| e.contains("`auto`, `cpu`")), "{nothing:?}");
        }
    }

    #[test]
    fn lists_read_naturally() {
        assert_eq!(list(&[]), "");
        assert_eq!(list(&["a".into()]), "a");
        assert_eq!(list(&["a".into(), "b".into(), "c".into()]), "a, b and c");
    }

    #[test]
    fn empty_requests_are_refused() {
        let t = Topology::empty();
        assert!(matches!(plan(&t, &PlanRequest::default()), Err(TopoError::Invalid(_))));
        let r = PlanRequest::new(["nvme0n1"], Vec::<String>::new());
        assert!(matches!(plan(&t, &r), Err(TopoError::Invalid(_))));
        let r = PlanRequest::new(["nvme0n1"], ["nvme1n1"]);
        assert!(matches!(plan(&t, &r), Err(TopoError::UnknownDevice { .. })));
    }
}
