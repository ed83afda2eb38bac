//! The kernel's P2PDMA verdict, re-implemented from the model, and peerpath's own conclusion
//! with reasons in words and remedies.
//!
//! [`kernel_map`] follows `calc_map_type_and_dist()` in `drivers/pci/p2pdma.c` step by step:
//!
//! ```text
//!                 [host bridge pci0000:00]            <- allow-list / AMD Zen decides here
//!                    |                 |
//!               root port A       root port B         distance counts functions walked:
//!                    |                 |                provider, its bridges, ... up to the
//!            switch upstream port   SSD 3              first common upstream bridge, and the
//!              |            |                          same on the client side.
//!      downstream 1   downstream 2   <- ACS RR/CR/EC here turns a switch-local path into one
//!          |              |             through the host bridge
//!        CSP 0          SSD 1        CSP0 <-> SSD1: BUS_ADDR, distance 4
//!                                    CSP0 <-> SSD3: no common bridge: THRU_HOST_BRIDGE if
//!                                                  allowed, else NOT_SUPPORTED
//! ```
//!
//! [`verdict`] adds what the kernel checks elsewhere (the block layer's P2P queue feature, the
//! provider's published memory, CMB registration) and peerpath's placement rule (no P2P across
//! sockets).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use serde::Serialize;

use crate::allowlist;
use crate::bdf::Bdf;
use crate::cmb::CmbFault;
use crate::error::{Result, TopoError};
use crate::model::*;

/// The kernel's answer for one provider/client pair (`enum pci_p2pdma_map_type`), and
/// peerpath's conclusion when it is not the kernel's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "path", rename_all = "snake_case")]
pub enum P2pPath {
    /// `PCI_P2PDMA_MAP_BUS_ADDR`: TLPs stay below a common switch; bus addresses.
    BusAddress { distance: u32 },
    /// `PCI_P2PDMA_MAP_THRU_HOST_BRIDGE`: TLPs go up to the root complex and back down.
    ThroughHostBridge { distance: u32 },
    /// `PCI_P2PDMA_MAP_NOT_SUPPORTED`, or peerpath refuses for the given reason.
    NotSupported { reason: Reason },
}

impl P2pPath {
    pub fn is_supported(&self) -> bool {
        !matches!(self, P2pPath::NotSupported { .. })
    }

    pub fn distance(&self) -> Option<u32> {
        match self {
            P2pPath::BusAddress { distance } | P2pPath::ThroughHostBridge { distance } => Some(*distance),
            P2pPath::NotSupported { .. } => None,
        }
    }

    /// A matrix cell: `B4`, `H6`, `--`.
    pub fn short(&self) -> String {
        match self {
            P2pPath::BusAddress { distance } => format!("B{distance}"),
            P2pPath::ThroughHostBridge { distance } => format!("H{distance}"),
            P2pPath::NotSupported { reason } => format!("x{}", reason.code()),
        }
    }
}

impl fmt::Display for P2pPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            P2pPath::BusAddress { distance } => write!(f, "bus address (below a common switch), distance {distance}"),
            P2pPath::ThroughHostBridge { distance } => write!(f, "through the host bridge, distance {distance}"),
            P2pPath::NotSupported { reason } => write!(f, "not supported: {}", reason.describe()),
        }
    }
}

/// A host bridge as the allow-list sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HostBridgeId {
    /// `pci0000:00`
    pub name: String,
    /// The function compared with the allow-list, with its ids; `None` if the first function
    /// on the root bus is neither 00.0 nor a root port.
    pub device: Option<(Bdf, u16, u16)>,
    /// The allow-list family it matched, if any.
    pub allow_listed: Option<&'static str>,
    pub same_host_bridge_only: bool,
}

impl fmt::Display for HostBridgeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.device {
            Some((bdf, v, d)) => write!(f, "{} ({bdf} {v:04x}:{d:04x})", self.name),
            None => write!(f, "{} (no 00.0 function or root port first on the root bus)", self.name),
        }
    }
}

/// Why the ACS bits on a path are set, as far as we can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AcsCause {
    /// An IOMMU driver is active: the kernel enabled ACS on every capable bridge.
    Iommu,
    /// Firmware or a kernel parameter (`pci=config_acs=`) set them.
    FirmwareOrBootParameter,
    /// Not read (config space not readable) but assumed set because the IOMMU is on.
    AssumedFromIommu,
}

/// One reason, in a form that renders to words and a remedy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Reason {
    /// ACS redirect (RR/CR/EC) on bridges between the two: TLPs go to the root complex.
    AcsRedirect { bridges: Vec<Bdf>, cause: AcsCause },
    /// No common switch (or ACS sent it up) and the root complex may not route P2P:
    /// host bridge not on the allow-list and the CPU not AMD Zen.
    HostBridgeNotAllowed {
        provider_host_bridge: HostBridgeId,
        client_host_bridge: HostBridgeId,
        cpu: String,
    },
    /// The client is a block device whose queue lacks the P2P feature (md, dm, multipath head).
    StackedBlockDevice { device: String, kind: BlockKind, members: Vec<String> },
    /// The client is a hidden per-path disk (`nvmeXcYnZ`) of a multipath namespace: user space
    /// cannot open it, so no I/O of ours reaches it. `head` is its multipath head, where listed.
    HiddenNamespacePath { device: String, head: Option<String> },
    /// The client is not a PCI device (virtual, fabrics).
    NotPci { device: String },
    /// The provider has no P2P memory at all.
    NoP2pMemory { device: Bdf, detail: String },
    /// The provider is an NVMe controller whose CMB the driver did not register.
    CmbNotRegistered { device: Bdf, controller: String, problem: String, fault: CmbFault },
    /// The provider's CMB is registered but not published: CMBSZ lacks RDS and/or WDS.
    CmbNotPublished { device: Bdf, controller: String, missing: Vec<String> },
    /// The provider's memory (not a CMB) is registered but not published.
    ProviderNotPublished { device: Bdf },
    /// The provider has no free P2P memory left.
    ProviderExhausted { device: Bdf, size_bytes: u64 },
    /// The two devices hang off different CPU sockets (peerpath never plans P2P across them).
    CrossSocket { provider_node: u32, client_node: u32, provider_socket: u32, client_socket: u32 },
    /// Different NUMA nodes on one socket, or sockets unknown.
    DifferentNumaNodes { provider_node: u32, client_node: u32 },
    /// On a machine of several sockets (or of several NUMA nodes, sockets unknown), the path
    /// crosses host bridges and the socket of these devices' host bridges is not known (`why`):
    /// it may cross sockets.
    SocketUnknown { devices: Vec<Bdf>, sockets: Option<u32>, why: String },
    /// The kernel the topology was read on has no P2PDMA: the verdict is what one with it would
    /// answer; on that kernel, P2P fails.
    KernelWithoutP2pdma { release: String, source: String },
    /// ACS on these functions could not be read; the verdict assumes no redirect, and, where
    /// the IOMMU's state is not known either (`iommu_unknown`, a file without `[iommu]`), no
    /// active IOMMU. `not_in_file`: a topology file gives no `acs` for some of them.
    AcsUnknown { devices: Vec<Bdf>, why: String, not_in_file: bool, iommu_unknown: bool },
    /// The CPU is AMD Zen, so the kernel allows P2P through the root complex without the allow-list.
    CpuAllowsRootComplex { cpu: String },
    /// The host bridge is on the allow-list.
    HostBridgeAllowListed { host_bridge: HostBridgeId },
    /// The IOMMU is on: THRU_HOST_BRIDGE pages are mapped through it (IOVA), kernel 6.0+.
    IommuMapsP2p { units: Vec<String> },
    /// An emulated device: functional only (QEMU bounces peer DMA).
    Emulated { devices: Vec<Bdf> },
}

/// How much a reason matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// P2P will fail.
    Blocks,
    /// P2P works, but through the root complex instead of below a switch.
    Reroutes,
    /// Worth knowing; the verdict may be wrong or slow because of it.
    Caveat,
    /// Explains the verdict.
    Info,
}

impl Reason {
    /// A short code for matrix cells.
    pub fn code(&self) -> &'static str {
        match self {
            Reason::AcsRedirect { .. } => "acs",
            Reason::HostBridgeNotAllowed { .. } => "hb",
            Reason::StackedBlockDevice { .. } => "blk",
            Reason::HiddenNamespacePath { .. } => "hid",
            Reason::NotPci { .. } => "pci",
            Reason::NoP2pMemory { .. } => "mem",
            Reason::CmbNotRegistered { .. } => "cmb",
            Reason::CmbNotPublished { .. } => "pub",
            Reason::ProviderNotPublished { .. } => "pub",
            Reason::ProviderExhausted { .. } => "full",
            Reason::CrossSocket { .. } => "numa",
            Reason::DifferentNumaNodes { .. } => "node",
            Reason::SocketUnknown { .. } => "numa?",
            Reason::AcsUnknown { .. } => "acs?",
            Reason::KernelWithoutP2pdma { .. } => "kernel",
            Reason::CpuAllowsRootComplex { .. } => "zen",
            Reason::HostBridgeAllowListed { .. } => "list",
            Reason::IommuMapsP2p { .. } => "iommu",
            Reason::Emulated { .. } => "emu",
        }
    }

    /// What happens, in words.
    pub fn describe(&self) -> String {
        match self {
            Reason::AcsRedirect { bridges, cause } => {
                let list = join_bdfs(bridges);
                match cause {
                    AcsCause::Iommu => format!(
                        "the IOMMU is on, so the kernel enabled ACS redirect (RR/CR) on {list}: P2P TLPs are sent up to the root complex instead of across the switch"
                    ),
                    AcsCause::AssumedFromIommu => format!(
                        "the IOMMU is on and ACS could not be read on {list}; the kernel enables ACS redirect when an IOMMU is active, so P2P TLPs are assumed to go up to the root complex"
                    ),
                    AcsCause::FirmwareOrBootParameter => format!(
                        "ACS redirect (RR/CR/EC) is set on {list}: P2P TLPs are sent up to the root complex instead of across the switch"
                    ),
                }
            }
            Reason::HostBridgeNotAllowed {
                provider_host_bridge,
                client_host_bridge,
                cpu,
            } => {
                let same = provider_host_bridge.name == client_host_bridge.name;
                let hb = if same {
                    format!("host bridge {provider_host_bridge}")
                } else {
                    format!("host bridges {provider_host_bridge} and {client_host_bridge}")
                };
                let why = if same {
                    "is not on the kernel's P2PDMA allow-list".to_string()
                } else if provider_host_bridge.allow_listed.is_some()
                    && client_host_bridge.allow_listed.is_some()
                    && (provider_host_bridge.same_host_bridge_only || client_host_bridge.same_host_bridge_only)
                {
                    "are allow-listed only for P2P within one host bridge".to_string()
                } else {
                    "are not both on the kernel's P2PDMA allow-list".to_string()
                };
                format!(
                    "the path must cross the root complex, and {hb} {why}; the CPU ({cpu}) is not AMD Zen or newer, so the kernel refuses (\"do not share an upstream bridge or whitelisted host bridge\")"
                )
            }
            Reason::StackedBlockDevice { device, kind, members } => {
                let m = if members.is_empty() {
                    String::new()
                } else {
                    format!(" over {}", members.join(", "))
                };
                format!(
                    "{device} is an {}{m}; its queue does not advertise P2P (BLK_FEAT_PCI_P2PDMA is not inherited), so O_DIRECT I/O with P2P pages fails with EREMOTEIO (121, Remote I/O error)",
                    kind.short()
                )
            }
            Reason::HiddenNamespacePath { device, head } => format!(
                "{device} is one controller's path to {}: the nvme driver adds it hidden (GENHD_FL_HIDDEN), with no /dev node, so user space cannot open it; its I/O goes through the multipath head",
                match head {
                    Some(h) => format!("multipath namespace {h}"),
                    None => "a multipath namespace".to_string(),
                }
            ),
            Reason::NotPci { device } => format!(
                "{device} is not backed by a PCI function (virtual or fabrics device): the kernel cannot do P2P DMA with it"
            ),
            Reason::NoP2pMemory { device, detail } => {
                format!("{device} exposes no P2P memory (no p2pmem/ directory): {detail}")
            }
            Reason::CmbNotRegistered {
                device,
                controller,
                problem,
                ..
            } => format!("{controller} ({device}) has a CMB but the nvme driver did not register it as P2P memory: {problem}"),
            Reason::CmbNotPublished {
                device,
                controller,
                missing,
            } => format!(
                "the CMB of {controller} ({device}) is registered but not published: CMBSZ lacks {} (nvme publishes only with both RDS and WDS). In-kernel users (nvmet) will not find it, and the controller may reject data pointers into its own CMB; a user-space mmap of p2pmem/allocate still succeeds",
                missing.join(" and ")
            ),
            Reason::ProviderNotPublished { device } => format!(
                "{device} registered P2P memory but did not publish it: it is reserved for its own driver"
            ),
            Reason::ProviderExhausted { device, size_bytes } => format!(
                "{device} has no free P2P memory ({} registered, 0 available): allocations fail with ENOMEM",
                peerpath_metrics::human_bytes(*size_bytes)
            ),
            Reason::CrossSocket {
                provider_node,
                client_node,
                provider_socket,
                client_socket,
            } => format!(
                "the devices are on different sockets (NUMA node {provider_node} on socket {provider_socket}, node {client_node} on socket {client_socket}): the kernel would route it through both root complexes and the inter-socket link; peerpath never plans P2P across sockets"
            ),
            Reason::DifferentNumaNodes {
                provider_node,
                client_node,
            } => format!("the devices are on different NUMA nodes ({provider_node} and {client_node})"),
            Reason::SocketUnknown { devices, sockets, why } => format!(
                "the path crosses host bridges on a machine of {}, and the socket of {} is not known ({why}): it may cross sockets, which peerpath never plans",
                match sockets {
                    Some(s) => format!("{s} sockets"),
                    None => "several NUMA nodes and an unknown number of sockets".to_string(),
                },
                join_bdfs(devices)
            ),
            Reason::KernelWithoutP2pdma { release, source } => format!(
                "the kernel this machine runs ({release}) has no P2PDMA (CONFIG_PCI_P2PDMA not set, {source}): this verdict is what a kernel with it would answer; on this one no device registers P2P memory, and P2P fails"
            ),
            Reason::AcsUnknown { devices, why, iommu_unknown, .. } => format!(
                "ACS could not be read on {} ({why}); the verdict assumes no ACS redirect there{}",
                join_bdfs(devices),
                if *iommu_unknown {
                    ", and no active IOMMU (its state is not known either): with an IOMMU on, the kernel enables ACS redirect and this path would go through the root complex"
                } else {
                    ""
                }
            ),
            Reason::CpuAllowsRootComplex { cpu } => format!(
                "the path goes through the root complex, which the kernel allows because the CPU ({cpu}) is AMD Zen or newer (cpu_supports_p2pdma)"
            ),
            Reason::HostBridgeAllowListed { host_bridge } => format!(
                "the path goes through the root complex, which the kernel allows because host bridge {host_bridge} is on its allow-list ({})",
                host_bridge.allow_listed.unwrap_or("?")
            ),
            Reason::IommuMapsP2p { units } => format!(
                "the IOMMU is on ({}): P2P through the host bridge is mapped through it (IOVA, kernel 6.0+)",
                units.join(", ")
            ),
            Reason::Emulated { devices } => format!(
                "{} emulated: the virtual machine monitor (e.g. QEMU) carries peer DMA through its own buffers, so this path is functional but not fast",
                if devices.len() == 1 {
                    format!("{} is", devices[0])
                } else {
                    format!("{} are", join_bdfs(devices))
                }
            ),
        }
    }

    /// What to change, or `None` when nothing needs changing.
    pub fn remedy(&self) -> Option<String> {
        match self {
            Reason::AcsRedirect { bridges, cause } => {
                let param = disable_acs_redir_param(bridges);
                Some(match cause {
                    AcsCause::Iommu | AcsCause::AssumedFromIommu => format!(
                        "boot with `{param}` to clear ACS redirect on these bridges (the IOMMU stays on, but their devices share an IOMMU group), or turn the IOMMU off (intel_iommu=off / amd_iommu=off); `iommu=pt` does not help, ACS stays on"
                    ),
                    AcsCause::FirmwareOrBootParameter => format!(
                        "boot with `{param}` (or turn ACS off for these ports in the firmware setup)"
                    ),
                })
            }
            Reason::HostBridgeNotAllowed { .. } => Some(
                "put both devices below one PCIe switch (with ACS redirect off), or use a platform whose host bridge is on the allow-list (see peerpath_topo::allowlist) or an AMD Zen CPU; otherwise use a host bounce buffer".to_string(),
            ),
            Reason::StackedBlockDevice { kind, members, .. } => Some(match kind {
                BlockKind::NvmeMultipathHead => format!(
                    "boot with nvme_core.multipath=N so each controller exposes its own namespace{}, or use NVMe passthrough on the per-controller char device (/dev/ngXnY, untested)",
                    if members.is_empty() { String::new() } else { format!(" (today's paths: {})", members.join(", ")) }
                ),
                _ => format!(
                    "do P2P I/O to the member devices directly{} and do the striping/mapping in peerpath, or use a host bounce buffer",
                    if members.is_empty() { String::new() } else { format!(" ({})", members.join(", ")) }
                ),
            }),
            Reason::HiddenNamespacePath { head, .. } => Some(format!(
                "name the head {} instead (its queue does not advertise P2P: its I/O goes through a host buffer), or boot with nvme_core.multipath=N so each controller exposes its own namespace (nvmeXnY) that can do P2P",
                head.as_deref().unwrap_or("nvmeXnY")
            )),
            Reason::NotPci { .. } => Some("use a host bounce buffer for this device".to_string()),
            Reason::NoP2pMemory { .. } => Some(
                "pick a provider with P2P memory (an NVMe CMB of 2 MiB or more with RDS and WDS, or a device whose driver registers a BAR); the kernel needs CONFIG_PCI_P2PDMA".to_string(),
            ),
            Reason::CmbNotRegistered { fault, .. } => Some(match fault {
                CmbFault::Alignment => "use a controller whose CMB size and BAR start are 2 MiB aligned (QEMU: cmb_size_mb >= 2)".to_string(),
                CmbFault::Registers => "the controller's CMBSZ/CMBLOC are not usable (firmware): pick another provider, or use a host bounce buffer".to_string(),
                CmbFault::BarAbsent => "check the controller's CMBLOC and what dmesg says about assigning the BAR it names (`no space`, `failed to assign`: the firmware's above-4G decoding, `pci=realloc`), or pick another provider".to_string(),
                CmbFault::KernelWithoutP2pdma => "boot a kernel built with CONFIG_PCI_P2PDMA=y (vm/ builds one: docs/vm.md)".to_string(),
                CmbFault::Unexplained => "check that the nvme driver is bound to this controller and what dmesg says about its CMB, and that the kernel (4.20+) has CONFIG_PCI_P2PDMA=y".to_string(),
            }),
            Reason::CmbNotPublished { .. } => Some(
                "use a provider whose CMBSZ has both RDS and WDS (a CSP or CMB-capable SSD), or a host bounce buffer".to_string(),
            ),
            Reason::ProviderNotPublished { .. } => Some("pick a provider that publishes its memory".to_string()),
            Reason::ProviderExhausted { .. } => Some(
                "free allocations (munmap), or boot with nvme.use_cmb_sqes=0 if the driver's queues took the CMB".to_string(),
            ),
            Reason::CrossSocket { .. } => Some(
                "pair the device with a provider on its own socket, or stage through a host buffer on the target's NUMA node".to_string(),
            ),
            Reason::SocketUnknown { .. } => Some(
                "pair devices below one host bridge, or give each device's node and each node's socket in a topology file (`peerpath topo --export FILE`, set `numa_node` on the devices or host bridges and `socket` on the numa_node entries, then `--file FILE`)".to_string(),
            ),
            Reason::KernelWithoutP2pdma { .. } => Some(
                "boot a kernel built with CONFIG_PCI_P2PDMA=y (vm/ builds one: docs/vm.md)".to_string(),
            ),
            Reason::AcsUnknown { not_in_file, iommu_unknown, .. } => {
                let acs = if *not_in_file {
                    "give their ACS in the topology file: `acs = { state = \"absent\" }`, or `acs = { state = \"control\", ctrl = \"0x..\" }` with the control register `lspci -vvv` shows (ACSCtl, as root on the machine)"
                } else {
                    "run as root (config space beyond 64 bytes needs CAP_SYS_ADMIN) or check `lspci -vvv` ACSCtl"
                };
                let iommu = if *iommu_unknown { "; and state the IOMMU in the topology file (`[iommu]` with `status = \"on\"` or `\"off\"`)" } else { "" };
                Some(format!("{acs}{iommu}"))
            }
            _ => None,
        }
    }

    pub fn severity(&self) -> Severity {
        match self {
            Reason::AcsRedirect { .. } => Severity::Reroutes,
            Reason::HostBridgeNotAllowed { .. }
            | Reason::StackedBlockDevice { .. }
            | Reason::HiddenNamespacePath { .. }
            | Reason::NotPci { .. }
            | Reason::NoP2pMemory { .. }
            | Reason::CmbNotRegistered { .. }
            | Reason::CmbNotPublished { .. }
            | Reason::ProviderNotPublished { .. }
            | Reason::CrossSocket { .. }
            | Reason::SocketUnknown { .. } => Severity::Blocks,
            Reason::ProviderExhausted { .. }
            | Reason::DifferentNumaNodes { .. }
            | Reason::AcsUnknown { .. }
            | Reason::KernelWithoutP2pdma { .. } => {
                Severity::Caveat
            }
            Reason::CpuAllowsRootComplex { .. }
            | Reason::HostBridgeAllowListed { .. }
            | Reason::IommuMapsP2p { .. }
            | Reason::Emulated { .. } => Severity::Info,
        }
    }
}

fn join_bdfs(v: &[Bdf]) -> String {
    v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
}

/// The boot parameter that clears ACS redirect on `bridges`, as the kernel prints it.
pub fn disable_acs_redir_param(bridges: &[Bdf]) -> String {
    format!(
        "pci=disable_acs_redir={}",
        bridges.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(";")
    )
}

/// The topology part of the verdict: exactly what `calc_map_type_and_dist()` computes, plus
/// what it looked at.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelMap {
    pub provider: Bdf,
    pub client: Bdf,
    /// The kernel's map type and distance.
    pub path: P2pPath,
    /// The distance the kernel computes (also for NOT_SUPPORTED).
    pub distance: u32,
    /// The first common upstream function, if any.
    pub common_upstream: Option<Bdf>,
    /// The functions walked from the provider up to (including) the common upstream bridge,
    /// then down to the client (the TLP route when it stays below a switch).
    pub route: Vec<Bdf>,
    /// Functions on the checked path with ACS redirect set, in the kernel's order.
    pub acs_redirect: Vec<Bdf>,
    /// Functions on the checked path whose ACS could not be read.
    pub acs_unknown: Vec<Bdf>,
    /// Whether unknown ACS on bridges was counted as redirect (IOMMU on).
    pub acs_unknown_assumed_redirect: bool,
    pub provider_host_bridge: HostBridgeId,
    pub client_host_bridge: HostBridgeId,
    /// `cpu_supports_p2pdma()`.
    pub cpu_allows_root_complex: bool,
}

fn host_bridge_id(topo: &Topology, name: &str) -> HostBridgeId {
    let dev = topo.host_bridge_device(name);
    let entry = dev.and_then(|d| allowlist::lookup(d.vendor, d.device));
    HostBridgeId {
        name: name.to_string(),
        device: dev.map(|d| (d.bdf, d.vendor, d.device)),
        allow_listed: entry.map(|e| e.family),
        same_host_bridge_only: entry.is_some_and(|e| e.same_host_bridge_only),
    }
}

/// `host_bridge_whitelist()`.
fn host_bridges_allowed(a: &HostBridgeId, b: &HostBridgeId) -> bool {
    let ok = |h: &HostBridgeId, same: bool| h.allow_listed.is_some() && (same || !h.same_host_bridge_only);
    if a.name == b.name {
        ok(a, true)
    } else {
        ok(a, false) && ok(b, false)
    }
}

/// What a kernel map needs of one function alone: the functions from it up to its root bus,
/// and its host bridge as the allow-list sees it.
struct Side<'a> {
    chain: Vec<&'a PciDevice>,
    host_bridge: HostBridgeId,
}

/// Kernel maps of one topology, with each function's [`Side`] worked out once however many
/// pairs it is in: a matrix asks for every pair, and walking both chains and scanning the root
/// bus again for each pair made `topo` on a machine of 1,800 functions take half a minute.
pub(crate) struct KernelMaps<'a> {
    topo: &'a Topology,
    sides: HashMap<Bdf, Side<'a>>,
}

impl<'a> KernelMaps<'a> {
    pub(crate) fn new(topo: &'a Topology) -> Self {
        KernelMaps { topo, sides: HashMap::new() }
    }

    fn add_side(&mut self, bdf: Bdf) -> Result<()> {
        if self.sides.contains_key(&bdf) {
            return Ok(());
        }
        let topo = self.topo;
        if topo.device(bdf).is_none() {
            return Err(TopoError::UnknownDevice { name: bdf.to_string() });
        }
        let chain: Vec<&PciDevice> = topo.upstream_chain(bdf).into_iter().filter_map(|b| topo.device(b)).collect();
        let root = chain.last().map_or(bdf, |d| d.bdf);
        let host_bridge = host_bridge_id(topo, &root.root_bus_name());
        self.sides.insert(bdf, Side { chain, host_bridge });
        Ok(())
    }

    /// [`kernel_map`] of `provider` and `client`.
    pub(crate) fn map(&mut self, provider: Bdf, client: Bdf) -> Result<KernelMap> {
        self.add_side(provider)?;
        self.add_side(client)?;
        Ok(map_sides(self.topo, provider, &self.sides[&provider], client, &self.sides[&client]))
    }
}

/// Re-implements `calc_map_type_and_dist(provider, client)` on the model.
///
/// ACS that could not be read counts as redirect when the IOMMU is on (the kernel then enables
/// it on every capable bridge), and as no redirect otherwise; either way it is listed in
/// `acs_unknown`.
pub fn kernel_map(topo: &Topology, provider: Bdf, client: Bdf) -> Result<KernelMap> {
    KernelMaps::new(topo).map(provider, client)
}

fn map_sides(topo: &Topology, provider: Bdf, a: &Side, client: Bdf, b: &Side) -> KernelMap {
    let iommu_on = topo.iommu.status == IommuStatus::On;
    let (a_chain, b_chain) = (&a.chain, &b.chain);
    let mut acs_redirect = Vec::new();
    let mut acs_unknown = Vec::new();
    // Unreadable ACS on a bridge counts as redirect when the IOMMU is on (the kernel enables it
    // on every capable bridge); on an endpoint, or with the IOMMU off, as clear.
    let check = |d: &PciDevice, redirect: &mut Vec<Bdf>, unknown: &mut Vec<Bdf>| match d.acs.redirects() {
        Some(true) => redirect.push(d.bdf),
        None => {
            unknown.push(d.bdf);
            if iommu_on && d.role.is_bridge() {
                redirect.push(d.bdf);
            }
        }
        Some(false) => {}
    };
    let mut found: Option<(usize, usize)> = None;
    let mut dist_b = 0usize;
    for (ia, ad) in a_chain.iter().enumerate() {
        check(ad, &mut acs_redirect, &mut acs_unknown);
        if let Some(ib) = b_chain.iter().position(|bd| bd.bdf == ad.bdf) {
            found = Some((ia, ib));
            break;
        }
        dist_b = b_chain.len();
    }
    let provider_host_bridge = a.host_bridge.clone();
    let client_host_bridge = b.host_bridge.clone();
    let cpu_ok = allowlist::cpu_supports_p2pdma(&topo.cpu);
    let (distance, common_upstream, route, acs_redirects) = match found {
        Some((ia, ib)) => {
            // check_b_path_acs: the client's chain below the common ancestor.
            for bd in &b_chain[..ib] {
                check(bd, &mut acs_redirect, &mut acs_unknown);
            }
            let mut route: Vec<Bdf> = a_chain[..=ia].iter().map(|d| d.bdf).collect();
            route.extend(b_chain[..ib].iter().rev().map(|d| d.bdf));
            ((ia + ib) as u32, Some(a_chain[ia].bdf), route, !acs_redirect.is_empty())
        }
        None => {
            let mut route: Vec<Bdf> = a_chain.iter().map(|d| d.bdf).collect();
            route.extend(b_chain.iter().rev().map(|d| d.bdf));
            // The kernel reports ACS only when a common bridge exists.
            acs_redirect.clear();
            ((a_chain.len() + dist_b) as u32, None, route, false)
        }
    };
    let path = if common_upstream.is_some() && !acs_redirects {
        P2pPath::BusAddress { distance }
    } else if cpu_ok || host_bridges_allowed(&provider_host_bridge, &client_host_bridge) {
        P2pPath::ThroughHostBridge { distance }
    } else {
        P2pPath::NotSupported {
            reason: Reason::HostBridgeNotAllowed {
                provider_host_bridge: provider_host_bridge.clone(),
                client_host_bridge: client_host_bridge.clone(),
                cpu: topo.cpu.to_string(),
            },
        }
    };
    KernelMap {
        provider,
        client,
        path,
        distance,
        common_upstream,
        route,
        acs_redirect,
        acs_unknown,
        acs_unknown_assumed_redirect: iommu_on,
        provider_host_bridge,
        client_host_bridge,
        cpu_allows_root_complex: cpu_ok,
    }
}

/// The full answer for one provider and one client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The provider as named by the caller, and its PCI function.
    pub provider_name: String,
    pub provider: Bdf,
    /// The client as named by the caller.
    pub client_name: String,
    /// The kernel's topology answer; `None` when the client is not a PCI device.
    pub kernel: Option<KernelMap>,
    /// peerpath's conclusion: the kernel's, unless something else blocks the path.
    pub path: P2pPath,
    /// Every reason found, most severe first (in JSON each with its `text`,
    /// `remedy` and `severity`, as the text form says them).
    #[serde(serialize_with = "reasons_in_words")]
    pub reasons: Vec<Reason>,
}

/// Each reason as its fields plus the words the text form prints: what
/// it means (`text`), what to change (`remedy`, null when nothing), and
/// how much it matters (`severity`).
fn reasons_in_words<S: serde::Serializer>(reasons: &[Reason], s: S) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::{Error as _, SerializeSeq};
    let mut seq = s.serialize_seq(Some(reasons.len()))?;
    for r in reasons {
        let mut v = serde_json::to_value(r).map_err(S::Error::custom)?;
        if let Some(m) = v.as_object_mut() {
            m.insert("text".into(), r.describe().into());
            m.insert("remedy".into(), r.remedy().into());
            m.insert("severity".into(), serde_json::to_value(r.severity()).map_err(S::Error::custom)?);
        }
        seq.serialize_element(&v)?;
    }
    seq.end()
}

impl Verdict {
    pub fn is_supported(&self) -> bool {
        self.path.is_supported()
    }

    /// The reasons that block the path.
    pub fn blocking(&self) -> impl Iterator<Item = &Reason> {
        self.reasons.iter().filter(|r| r.severity() == Severity::Blocks)
    }
}

fn provider_bdf(topo: &Topology, name: &str) -> Result<Bdf> {
    let ep = topo.resolve(name)?;
    if let Some(b) = &ep.block {
        if b.kind.rejects_p2p() || b.pci.len() != 1 {
            return Err(TopoError::Invalid(format!(
                "{name} is a {} and cannot be a P2P memory provider; name a PCI function or NVMe controller",
                b.kind.short()
            )));
        }
    }
    match ep.pci.as_slice() {
        [one] => Ok(*one),
        [] => Err(TopoError::Invalid(format!("{name} is not backed by a PCI function and cannot provide P2P memory"))),
        _ => Err(TopoError::Invalid(format!("{name} spans several PCI functions; name one"))),
    }
}

/// Provider-side reasons: does `provider` have usable P2P memory?
fn provider_reasons(topo: &Topology, provider: Bdf) -> Vec<Reason> {
    let mut out = Vec::new();
    let Some(dev) = topo.device(provider) else { return out };
    let ctrl = topo.nvme_for_pci(provider);
    match (&dev.p2pmem, ctrl.and_then(|c| c.cmb.map(|cmb| (c, cmb)))) {
        (None, Some((c, cmb))) => {
            // BARs read (`resource`) but none at CMBLOC's index: that BAR has zero length. None
            // read at all (a file without `bars`): unknown, judged on the size alone.
            let bar = match dev.bars.iter().find(|b| b.index == cmb.bar()) {
                Some(b) => Some((b.start, b.size)),
                None if !dev.bars.is_empty() => Some((0, 0)),
                None => None,
            };
            let looks = if bar.is_some() { "size and BAR start 2 MiB aligned" } else { "size 2 MiB aligned; the BAR's address was not read" };
            let (fault, problem) = cmb
                .registration_problem(bar.map(|b| b.0), bar.map(|b| b.1))
                .unwrap_or_else(|| match topo.kernel.as_ref().map(|k| (k, k.p2pdma)) {
                    Some((k, Some(false))) => (
                        CmbFault::KernelWithoutP2pdma,
                        format!(
                            "the CMB looks registrable ({looks}), but the kernel{} is built without CONFIG_PCI_P2PDMA ({})",
                            k.release.as_ref().map(|r| format!(" {r}")).unwrap_or_default(),
                            k.p2pdma_source.as_deref().unwrap_or("its config")
                        ),
                    ),
                    Some((_, Some(true))) => (CmbFault::Unexplained, format!("the CMB looks registrable ({looks}) and the kernel has CONFIG_PCI_P2PDMA: is the nvme driver new enough (4.20+) and did it load on this controller?")),
                    _ => (CmbFault::Unexplained, format!("the CMB looks registrable ({looks}); is the kernel built with CONFIG_PCI_P2PDMA (4.20+)?")),
                });
            out.push(Reason::CmbNotRegistered {
                device: provider,
                controller: c.name.clone(),
                problem,
                fault,
            });
        }
        (None, None) => out.push(Reason::NoP2pMemory {
            device: provider,
            detail: match ctrl {
                Some(c) => format!("{} has no controller memory buffer (CMBSZ is 0)", c.name),
                None => "no driver registered P2P memory for it".to_string(),
            },
        }),
        (Some(p), cmb) => {
            if !p.published {
                match cmb {
                    Some((c, cmb)) if !cmb.publishable() => out.push(Reason::CmbNotPublished {
                        device: provider,
                        controller: c.name.clone(),
                        missing: cmb.missing_for_publish().into_iter().map(String::from).collect(),
                    }),
                    _ => out.push(Reason::ProviderNotPublished { device: provider }),
                }
            }
            if p.available_bytes == 0 {
                out.push(Reason::ProviderExhausted {
                    device: provider,
                    size_bytes: p.size_bytes,
                });
            }
        }
    }
    out
}

/// peerpath's verdict for P2P DMA between the memory of `provider` and the device `client`.
///
/// Both are names as [`Topology::resolve`] takes them: `0000:41:00.0`, `csp0` (a label),
/// `nvme3`, `nvme3n1`, `md0`. The provider must be one PCI function.
pub fn verdict(topo: &Topology, provider: &str, client: &str) -> Result<Verdict> {
    verdict_with(&mut KernelMaps::new(topo), provider, client)
}

/// [`verdict`], with the kernel map from `maps`.
pub(crate) fn verdict_with(maps: &mut KernelMaps, provider: &str, client: &str) -> Result<Verdict> {
    let topo = maps.topo;
    let p = provider_bdf(topo, provider)?;
    let client_ep = topo.resolve(client)?;
    let mut reasons: Vec<Reason> = Vec::new();

    // Client: a block device whose queue rejects P2P pages, or no PCI function at all.
    if let Some(b) = &client_ep.block {
        reasons.extend(hidden_path(topo, b));
        let stacked = stacked_kind(topo, b);
        if let Some(kind_dev) = stacked {
            reasons.push(Reason::StackedBlockDevice {
                device: kind_dev.name.clone(),
                kind: kind_dev.kind,
                members: kind_dev.members.clone(),
            });
        }
    }
    if client_ep.pci.is_empty() {
        reasons.push(Reason::NotPci {
            device: client.to_string(),
        });
    }
    reasons.extend(provider_reasons(topo, p));

    // Topology: the kernel's map for the (first) PCI function behind the client.
    let kernel = match client_ep.pci.first() {
        Some(c) => Some(maps.map(p, *c)?),
        None => None,
    };
    if let Some(k) = &kernel {
        if !k.acs_redirect.is_empty() {
            let cause = if topo.iommu.status == IommuStatus::On {
                if k.acs_redirect.iter().all(|b| k.acs_unknown.contains(b)) {
                    AcsCause::AssumedFromIommu
                } else {
                    AcsCause::Iommu
                }
            } else {
                AcsCause::FirmwareOrBootParameter
            };
            reasons.push(Reason::AcsRedirect {
                bridges: k.acs_redirect.clone(),
                cause,
            });
        }
        match &k.path {
            P2pPath::NotSupported { reason } => reasons.push(reason.clone()),
            P2pPath::ThroughHostBridge { .. } => {
                if k.cpu_allows_root_complex {
                    reasons.push(Reason::CpuAllowsRootComplex {
                        cpu: topo.cpu.to_string(),
                    });
                } else {
                    reasons.push(Reason::HostBridgeAllowListed {
                        host_bridge: k.provider_host_bridge.clone(),
                    });
                }
                if topo.iommu.status == IommuStatus::On {
                    reasons.push(Reason::IommuMapsP2p {
                        units: topo.iommu.units.clone(),
                    });
                }
            }
            P2pPath::BusAddress { .. } => {}
        }
        let unknown_not_assumed: Vec<Bdf> = k
            .acs_unknown
            .iter()
            .filter(|b| !k.acs_redirect.contains(b))
            .copied()
            .collect();
        if !unknown_not_assumed.is_empty() && k.common_upstream.is_some() {
            let why = topo
                .device(unknown_not_assumed[0])
                .map(|d| match &d.acs {
                    crate::pcicfg::AcsState::Unknown { reason } => reason.clone(),
                    _ => String::new(),
                })
                .unwrap_or_default();
            // A topology file that leaves `acs` out gets the default state; its remedy is the file.
            let not_in_file = unknown_not_assumed.iter().any(|b| topo.device(*b).is_some_and(|d| d.acs == crate::pcicfg::AcsState::default()));
            reasons.push(Reason::AcsUnknown {
                devices: unknown_not_assumed,
                why,
                not_in_file,
                iommu_unknown: topo.iommu.status == IommuStatus::Unknown,
            });
        }
        // NUMA and sockets. The socket rule is peerpath's (the kernel never looks at NUMA): a
        // path through root complexes on two sockets crosses the inter-socket link. So a path's
        // sockets are its host bridges': below one host bridge it never leaves the socket,
        // whatever a function's numa_node says, and a function whose numa_node contradicts
        // the others below its host bridge leaves that bridge's socket unknown.
        let (pn, cn) = (topo.numa_node_of(p), topo.numa_node_of(k.client));
        let (hp, hc) = (topo.host_bridge_of(p), topo.host_bridge_of(k.client));
        let sockets = topo.socket_count();
        let mut refused = false;
        if hp != hc && sockets != Some(1) {
            match (topo.socket_of_host_bridge(&hp), topo.socket_of_host_bridge(&hc)) {
                (Ok((provider_node, provider_socket)), Ok((client_node, client_socket))) => {
                    if provider_socket != client_socket {
                        reasons.push(Reason::CrossSocket { provider_node, client_node, provider_socket, client_socket });
                        refused = true;
                    }
                }
                (ps, cs) => {
                    let unknown = [(p, ps), (k.client, cs)].into_iter().filter_map(|(b, s)| s.err().map(|why| (b, why)));
                    let (devices, why): (Vec<Bdf>, Vec<String>) = unknown.unzip();
                    reasons.push(Reason::SocketUnknown { devices, sockets, why: why.join("; ") });
                    refused = true;
                }
            }
        }
        if let (Some(pn), Some(cn), false) = (pn, cn, refused) {
            if pn != cn {
                reasons.push(Reason::DifferentNumaNodes { provider_node: pn, client_node: cn });
            }
        }
        if let Some(k) = topo.kernel.as_ref().filter(|k| k.p2pdma == Some(false)) {
            reasons.push(Reason::KernelWithoutP2pdma {
                release: k.release.clone().unwrap_or_else(|| "release unknown".into()),
                source: k.p2pdma_source.clone().unwrap_or_default(),
            });
        }
        let emulated: Vec<Bdf> = [p, k.client]
            .into_iter()
            .filter(|b| topo.device(*b).is_some_and(|d| d.emulated))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !emulated.is_empty() {
            reasons.push(Reason::Emulated { devices: emulated });
        }
    }
    reasons.sort_by_key(|r| r.severity());
    let path = match reasons.iter().find(|r| r.severity() == Severity::Blocks) {
        Some(first) => {
            // Where ACS redirect caused the refusal, it is the reason to fix first.
            let primary = match (first, reasons.iter().find(|r| matches!(r, Reason::AcsRedirect { .. }))) {
                (Reason::HostBridgeNotAllowed { .. }, Some(acs)) => acs.clone(),
                _ => first.clone(),
            };
            P2pPath::NotSupported { reason: primary }
        }
        None => kernel
            .as_ref()
            .map(|k| k.path.clone())
            .unwrap_or(P2pPath::NotSupported {
                reason: Reason::NotPci {
                    device: client.to_string(),
                },
            }),
    };
    Ok(Verdict {
        provider_name: provider.to_string(),
        provider: p,
        client_name: client.to_string(),
        kernel,
        path,
        reasons,
    })
}

/// Why `b` cannot be an endpoint at all: a hidden per-path disk (`nvmeXcYnZ`), which the nvme
/// driver adds with GENHD_FL_HIDDEN (`nvme_alloc_ns()`), so the block layer registers no device
/// node for it.
pub(crate) fn hidden_path(topo: &Topology, b: &BlockDevice) -> Option<Reason> {
    (b.kind == BlockKind::NvmeNamespacePath).then(|| Reason::HiddenNamespacePath {
        device: b.name.clone(),
        head: topo
            .block_devices
            .iter()
            .find(|h| h.kind == BlockKind::NvmeMultipathHead && h.members.contains(&b.name))
            .map(|h| h.name.clone()),
    })
}

/// The stacked block device (itself, or the disk a partition belongs to) that rejects P2P.
fn stacked_kind<'a>(topo: &'a Topology, b: &'a BlockDevice) -> Option<&'a BlockDevice> {
    let mut cur = b;
    for _ in 0..16 {
        if cur.kind.rejects_p2p() {
            return Some(cur);
        }
        let parent = cur.members.first().and_then(|m| topo.block_devices.iter().find(|x| &x.name == m));
        match (cur.kind, parent) {
            (BlockKind::Other, Some(p)) => cur = p,
            _ => return None,
        }
    }
    None
}

/// The answer for one provider and a set of clients (`pci_p2pdma_distance_many()`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManyVerdict {
    pub provider: Bdf,
    pub clients: Vec<Verdict>,
    /// Sum of the distances; `None` if any client is not supported (the kernel's -1).
    pub total_distance: Option<u32>,
}

/// `pci_p2pdma_distance_many()` with peerpath's reasons per client.
pub fn verdict_many(topo: &Topology, provider: &str, clients: &[&str]) -> Result<ManyVerdict> {
    let p = provider_bdf(topo, provider)?;
    let mut maps = KernelMaps::new(topo);
    let mut out = Vec::new();
    for c in clients {
        out.push(verdict_with(&mut maps, provider, c)?);
    }
    let total_distance = if out.is_empty() {
        None
    } else {
        out.iter().map(|v| v.path.distance()).sum::<Option<u32>>()
    };
    Ok(ManyVerdict {
        provider: p,
        clients: out,
        total_distance,
    })
}

/// `pci_p2pmem_find_many()`: the providers with published memory nearest to all `clients`,
/// all those at the minimum total distance (the kernel picks one of them at random).
pub fn find_providers(topo: &Topology, clients: &[&str]) -> Result<Vec<(Bdf, u32)>> {
    let mut best: Vec<(Bdf, u32)> = Vec::new();
    for d in topo.devices.iter().filter(|d| d.p2pmem.is_some_and(|p| p.published)) {
        let name = d.bdf.to_string();
        let m = verdict_many(topo, &name, clients)?;
        if let Some(total) = m.total_distance {
            match best.first() {
                Some((_, b)) if total > *b => {}
                Some((_, b)) if total == *b => best.push((d.bdf, total)),
                _ => best = vec![(d.bdf, total)],
            }
        }
    }
    Ok(best)
}

/// A P2P matrix: one row per provider (or per device that matters when there is none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub rows: Vec<Bdf>,
    pub columns: Vec<Bdf>,
    /// `cells[row][col]`
    pub cells: Vec<Vec<P2pPath>>,
    /// True when no device has P2P memory and cells show the kernel's topology answer only.
    pub topology_only: bool,
    /// SR-IOV virtual functions shown in their physical function's row and column
    /// ([`Vfs::Folded`]), by physical function. Empty with [`Vfs::Each`].
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub folded: BTreeMap<Bdf, FoldedVfs>,
}

/// How a matrix shows SR-IOV virtual functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vfs {
    /// In their physical function's row and column: a virtual function's path is its physical
    /// function's (the kernel walks up from a VF's PF), so its cells are the PF's. A VF the
    /// verdict could tell from its PF (P2P memory of its own, another ACS state, NUMA node or
    /// emulation) keeps its own row and column.
    Folded,
    /// One row and column per function (hundreds on a host with SR-IOV enabled).
    Each,
}

/// The virtual functions a physical function's row and column stand for, and what the matrix
/// cannot show in a cell: the answers within the group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FoldedVfs {
    /// In address order.
    pub vfs: Vec<Bdf>,
    /// A virtual function and its physical function (the PF's memory, or with no provider the
    /// kernel's answer); `None` when the PF is no row (not a provider).
    pub vf_and_pf: Option<P2pPath>,
    /// Two of its virtual functions (the kernel's answer, with no provider); `None` otherwise
    /// and with one VF.
    pub vf_and_vf: Option<P2pPath>,
}

/// The physical function that stands for the virtual function `d` ([`Vfs::Folded`]: in a matrix
/// its row and column, in the tree and the picture its line), if the verdicts cannot tell `d`
/// from it: its chain above itself is its PF's ([`Topology::upstream_chain`]), and of the
/// function itself a verdict reads its P2P memory, ACS, NUMA node and emulation.
pub(crate) fn folds_into(topo: &Topology, d: &PciDevice) -> Option<Bdf> {
    let pf = topo.device(d.physfn?)?;
    let alike = d.p2pmem.is_none()
        && d.acs.redirects() == pf.acs.redirects()
        && d.emulated == pf.emulated
        && topo.numa_node_of(d.bdf) == topo.numa_node_of(pf.bdf);
    alike.then_some(pf.bdf)
}

/// Computes the matrix of the devices that matter, virtual functions as `vfs` says.
pub fn matrix(topo: &Topology, vfs: Vfs) -> Result<Matrix> {
    let mut columns: Vec<Bdf> = topo.devices_that_matter().iter().map(|d| d.bdf).collect();
    let mut folded: BTreeMap<Bdf, FoldedVfs> = BTreeMap::new();
    if vfs == Vfs::Folded {
        let shown: HashSet<Bdf> = columns.iter().copied().collect();
        for d in topo.devices_that_matter() {
            if let Some(pf) = folds_into(topo, d).filter(|pf| shown.contains(pf)) {
                folded.entry(pf).or_insert_with(|| FoldedVfs { vfs: Vec::new(), vf_and_pf: None, vf_and_vf: None }).vfs.push(d.bdf);
            }
        }
        let hidden: HashSet<Bdf> = folded.values().flat_map(|g| g.vfs.iter().copied()).collect();
        columns.retain(|b| !hidden.contains(b));
    }
    let providers: Vec<Bdf> = topo.devices.iter().filter(|d| d.p2pmem.is_some()).map(|d| d.bdf).collect();
    let topology_only = providers.is_empty();
    let rows = if topology_only { columns.clone() } else { providers };
    let mut maps = KernelMaps::new(topo);
    let cell = |maps: &mut KernelMaps, r: Bdf, c: Bdf| -> Result<P2pPath> {
        Ok(if topology_only { maps.map(r, c)?.path } else { verdict_with(maps, &r.to_string(), &c.to_string())?.path })
    };
    let mut cells = Vec::new();
    for r in &rows {
        let mut row = Vec::new();
        for c in &columns {
            row.push(cell(&mut maps, *r, *c)?);
        }
        cells.push(row);
    }
    for (pf, g) in folded.iter_mut() {
        if rows.contains(pf) {
            g.vf_and_pf = Some(cell(&mut maps, *pf, g.vfs[0])?);
        }
        if let (true, [a, b, ..]) = (topology_only, g.vfs.as_slice()) {
            g.vf_and_vf = Some(cell(&mut maps, *a, *b)?);
        }
    }
    Ok(Matrix {
        rows,
        columns,
        cells,
        topology_only,
        folded,
    })
}
