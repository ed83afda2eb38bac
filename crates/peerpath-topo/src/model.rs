//! The topology model: what a machine's PCIe tree, NVMe controllers and block devices look like,
//! independent of where the description came from (sysfs, a topology file, the fixture builder).
//!
//! Records reference each other by name (PCI address, controller name, block device name), never
//! by pointer, so the model serializes as it is. [`Topology::normalize`] checks the references
//! and fills in what can be derived (device kinds, port roles, host bridges).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bdf::{parse_root_bus_name, Bdf};
use crate::cmb::Cmb;
use crate::error::{Result, TopoError};
use crate::pcicfg::AcsState;

/// The topology file format version written by this crate.
pub const SCHEMA_VERSION: u32 = 1;

fn schema_version_default() -> u32 {
    SCHEMA_VERSION
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A whole machine (or an emulated one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Topology file format version ([`SCHEMA_VERSION`]).
    #[serde(default = "schema_version_default")]
    pub schema_version: u32,
    /// Free text: what this machine is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where this description came from, e.g. `sysfs:/sys` or `builder:epyc-case-study`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default)]
    pub cpu: Cpu,
    #[serde(default)]
    pub iommu: Iommu,
    #[serde(default, rename = "numa_node", skip_serializing_if = "Vec::is_empty")]
    pub numa_nodes: Vec<NumaNode>,
    #[serde(default, rename = "host_bridge", skip_serializing_if = "Vec::is_empty")]
    pub host_bridges: Vec<HostBridge>,
    /// Every PCI function, sorted by address ([`Topology::normalize`] sorts them; lookups by
    /// address rely on it).
    #[serde(default, rename = "device", skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<PciDevice>,
    #[serde(default, rename = "nvme", skip_serializing_if = "Vec::is_empty")]
    pub nvme_controllers: Vec<NvmeController>,
    #[serde(default, rename = "block", skip_serializing_if = "Vec::is_empty")]
    pub block_devices: Vec<BlockDevice>,
    /// Firmware labels that name no device (on more than one function, or equal to a kernel
    /// name of something else), kept so that the name is said to be ambiguous, not unknown.
    #[serde(default, rename = "dropped_label", skip_serializing_if = "Vec::is_empty")]
    pub dropped_labels: Vec<DroppedLabel>,
    /// The kernel modules that open direct paths into GPU memory, from sysfs's `module/`;
    /// `None` where it was not looked at (a topology file, a fixture without `module/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_modules: Option<GpuModules>,
    /// The running kernel's release and whether it has P2PDMA (`CONFIG_PCI_P2PDMA`), from the
    /// files beside sysfs (see [`crate::kernel`]); `None` where none was there to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<crate::kernel::KernelInfo>,
}

/// A firmware label that was dropped on reading, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedLabel {
    pub label: String,
    /// The functions firmware gave it to.
    pub devices: Vec<Bdf>,
    /// Why it names none of them, in words.
    pub why: String,
}

/// Kernel modules that decide how storage reaches a GPU's memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuModules {
    /// `nvidia` (the GPU driver).
    #[serde(default)]
    pub nvidia: bool,
    /// `nvidia_fs`: GPUDirect Storage's kernel module; without it cuFile runs in
    /// compatibility mode, through host memory.
    #[serde(default)]
    pub nvidia_fs: bool,
    /// `nvidia_peermem`: GPUDirect RDMA for NICs (not storage).
    #[serde(default)]
    pub nvidia_peermem: bool,
}

/// The boot CPU, as far as the P2P rules care.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// `x86`, `aarch64`, ... or `unknown`.
    pub arch: String,
    pub vendor: CpuVendor,
    /// x86 family (`cpu family` in /proc/cpuinfo), e.g. 0x17 for Zen/Zen 2, 0x19 for Zen 3/4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<u32>,
    /// Number of CPU packages, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sockets: Option<u32>,
}

impl Default for Cpu {
    fn default() -> Self {
        Cpu {
            arch: "unknown".to_string(),
            vendor: CpuVendor::Unknown,
            family: None,
            model: None,
            sockets: None,
        }
    }
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.arch, self.vendor)?;
        if let Some(fam) = self.family {
            write!(f, " family {fam:#x}")?;
            if let Some(zen) = zen_name(self) {
                write!(f, " ({zen})")?;
            }
        }
        if let Some(m) = self.model {
            write!(f, " model {m:#x}")?;
        }
        if let Some(s) = self.sockets {
            write!(f, ", {s} socket{}", if s == 1 { "" } else { "s" })?;
        }
        Ok(())
    }
}

fn zen_name(cpu: &Cpu) -> Option<&'static str> {
    if cpu.vendor != CpuVendor::Amd {
        return None;
    }
    match cpu.family? {
        0x17 => Some("Zen/Zen 2"),
        0x19 => Some("Zen 3/Zen 4"),
        0x1a => Some("Zen 5"),
        f if f < 0x17 => Some("pre-Zen"),
        _ => Some("Zen or newer"),
    }
}

/// CPU vendor, as the x86 modalias codes them (`X86_VENDOR_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuVendor {
    Intel,
    Amd,
    Hygon,
    Zhaoxin,
    Centaur,
    Arm,
    Other,
    Unknown,
}

impl CpuVendor {
    /// From the `ven` field of `/sys/devices/system/cpu/modalias` on x86.
    pub fn from_x86_code(code: u32) -> CpuVendor {
        match code {
            0 => CpuVendor::Intel,
            2 => CpuVendor::Amd,
            5 => CpuVendor::Centaur,
            9 => CpuVendor::Hygon,
            10 => CpuVendor::Zhaoxin,
            _ => CpuVendor::Other,
        }
    }
}

impl fmt::Display for CpuVendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            CpuVendor::Intel => "Intel",
            CpuVendor::Amd => "AMD",
            CpuVendor::Hygon => "Hygon",
            CpuVendor::Zhaoxin => "Zhaoxin",
            CpuVendor::Centaur => "Centaur",
            CpuVendor::Arm => "Arm",
            CpuVendor::Other => "other vendor",
            CpuVendor::Unknown => "unknown vendor",
        };
        f.write_str(s)
    }
}

/// Whether an IOMMU driver is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IommuStatus {
    On,
    Off,
    Unknown,
}

/// IOMMU state. An active IOMMU driver makes the kernel enable ACS redirect on every bridge
/// that supports it (`pci_request_acs()`), whatever its DMA domain type (even `iommu=pt`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Iommu {
    pub status: IommuStatus,
    /// IOMMU units (`/sys/class/iommu/*`: `dmar0`, `ivhd0`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub units: Vec<String>,
    /// Default DMA domain type of the IOMMU groups (`DMA`, `DMA-FQ`, `identity`), if uniform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_domain: Option<String>,
    /// Why the status is unknown, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Default for Iommu {
    fn default() -> Self {
        Iommu {
            status: IommuStatus::Unknown,
            units: Vec::new(),
            default_domain: None,
            note: Some("not given in the topology file".to_string()),
        }
    }
}

/// A NUMA node and the socket it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaNode {
    pub id: u32,
    /// CPU list as sysfs prints it (`0-31,64-95`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpulist: Option<String>,
    /// Physical package (socket) of the node's CPUs, when they agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
}

/// A host bridge (root complex): one PCI root bus, `pciDDDD:BB` in sysfs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostBridge {
    /// `pci0000:00`
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// What a PCI function is in the tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum PortRole {
    /// Derive from the class code and the position in the tree when loading.
    #[default]
    Auto,
    /// The host bridge function itself (class 0x0600, usually 00.0 on the root bus).
    HostBridge,
    RootPort,
    SwitchUpstream,
    SwitchDownstream,
    PcieToPciBridge,
    /// A bridge of another or unknown kind.
    Bridge,
    Endpoint,
    /// A root-complex integrated endpoint.
    IntegratedEndpoint,
}

impl PortRole {
    /// Bridges forward TLPs and are checked for ACS redirect.
    pub fn is_bridge(self) -> bool {
        matches!(
            self,
            PortRole::RootPort
                | PortRole::SwitchUpstream
                | PortRole::SwitchDownstream
                | PortRole::PcieToPciBridge
                | PortRole::Bridge
        )
    }

    pub fn short(self) -> &'static str {
        match self {
            PortRole::Auto => "?",
            PortRole::HostBridge => "host bridge",
            PortRole::RootPort => "root port",
            PortRole::SwitchUpstream => "switch upstream port",
            PortRole::SwitchDownstream => "switch downstream port",
            PortRole::PcieToPciBridge => "PCIe-to-PCI bridge",
            PortRole::Bridge => "bridge",
            PortRole::Endpoint => "endpoint",
            PortRole::IntegratedEndpoint => "integrated endpoint",
        }
    }
}

/// What an endpoint is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// Derive from the class code and vendor when loading.
    #[default]
    Auto,
    NvmeSsd,
    /// A computational storage processor/device (e.g. Eideticom NoLoad): NVMe class, own functions.
    Csp,
    Gpu,
    Nic,
    Bridge,
    Other,
}

impl DeviceKind {
    /// Derives the kind from the class code and vendor.
    pub fn classify(vendor: u16, class: u32) -> DeviceKind {
        let base = class >> 16;
        let sub = (class >> 8) & 0xff;
        match (base, sub) {
            (0x01, 0x08) if CSP_VENDORS.iter().any(|(v, _)| *v == vendor) => DeviceKind::Csp,
            (0x01, 0x08) => DeviceKind::NvmeSsd,
            (0x12, _) if CSP_VENDORS.iter().any(|(v, _)| *v == vendor) => DeviceKind::Csp,
            (0x03, _) => DeviceKind::Gpu,
            (0x02, _) => DeviceKind::Nic,
            (0x06, _) => DeviceKind::Bridge,
            _ => DeviceKind::Other,
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            DeviceKind::Auto => "?",
            DeviceKind::NvmeSsd => "NVMe SSD",
            DeviceKind::Csp => "CSP",
            DeviceKind::Gpu => "GPU",
            DeviceKind::Nic => "NIC",
            DeviceKind::Bridge => "bridge",
            DeviceKind::Other => "other",
        }
    }
}

/// Vendors whose NVMe-class functions are computational storage processors.
pub const CSP_VENDORS: &[(u16, &str)] = &[
    // Eideticom NoLoad: NVMe interface, accelerator namespaces, large CMB.
    (0x1de5, "Eideticom"),
];

/// PCI vendor names used in renderings (a short list; unknown vendors print as hex).
pub const VENDOR_NAMES: &[(u16, &str)] = &[
    (0x8086, "Intel"),
    (0x1022, "AMD"),
    (0x1af4, "Red Hat virtio"),
    (0x1b36, "Red Hat"),
    (0x144d, "Samsung"),
    (0x1de5, "Eideticom"),
    (0x10de, "NVIDIA"),
    (0x15b3, "Mellanox"),
    (0x11f8, "Microchip"),
    (0x10b5, "Broadcom/PLX"),
    (0x1000, "Broadcom/LSI"),
    (0x10ee, "Xilinx"),
    (0x1344, "Micron"),
    (0x1e0f, "Kioxia"),
    (0x15b7, "Sandisk/WD"),
    (0x025e, "Solidigm"),
    (0x1c5c, "SK hynix"),
    (0x1987, "Phison"),
    (0x1ae0, "Google"),
    (0x1d17, "Zhaoxin"),
];

/// Vendors whose devices are emulated (QEMU, virtio, bochs).
pub const EMULATED_VENDORS: &[u16] = &[0x1af4, 0x1b36, 0x1234];

/// A product name for the few devices worth naming: virtio (modern ids 0x1040 + virtio device
/// id, transitional 0x1000..0x103f) and QEMU's NVMe.
pub fn device_name(vendor: u16, device: u16) -> Option<&'static str> {
    match (vendor, device) {
        (0x1af4, 0x1000) | (0x1af4, 0x1041) => Some("virtio-net"),
        (0x1af4, 0x1001) | (0x1af4, 0x1042) => Some("virtio-blk"),
        (0x1af4, 0x1003) | (0x1af4, 0x1043) => Some("virtio-console"),
        (0x1af4, 0x1005) | (0x1af4, 0x1044) => Some("virtio-rng"),
        (0x1af4, 0x1002) | (0x1af4, 0x1045) => Some("virtio-balloon"),
        (0x1af4, 0x1004) | (0x1af4, 0x1048) => Some("virtio-scsi"),
        (0x1af4, 0x1049) => Some("virtio-9p"),
        (0x1af4, 0x1050) => Some("virtio-gpu"),
        (0x1af4, 0x1052) => Some("virtio-input"),
        (0x1af4, 0x1053) => Some("virtio-vsock"),
        (0x1af4, 0x105a) => Some("virtio-fs"),
        (0x1b36, 0x0010) => Some("QEMU NVMe"),
        (0x1de5, _) => Some("NoLoad CSP"),
        _ => None,
    }
}

/// A vendor's name, or its id in hex.
pub fn vendor_name(vendor: u16) -> String {
    VENDOR_NAMES
        .iter()
        .find(|(v, _)| *v == vendor)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| format!("{vendor:04x}"))
}

/// A PCIe link speed in MT/s per lane; `None` = sysfs said "Unknown" or the value is unusual.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(try_from = "String", into = "String")]
pub struct LinkSpeed {
    pub mt_per_s: Option<u32>,
}

impl LinkSpeed {
    pub const UNKNOWN: LinkSpeed = LinkSpeed { mt_per_s: None };
    /// The rates PCIe signals at, in MT/s per lane: generations 1 to 7.
    pub const PCIE_RATES_MT: [u32; 7] = [2500, 5000, 8000, 16000, 32000, 64000, 128000];

    pub fn from_gts(gts: f64) -> LinkSpeed {
        LinkSpeed {
            mt_per_s: Some((gts * 1000.0).round() as u32),
        }
    }

    /// Parses what `current_link_speed` prints: `8.0 GT/s PCIe`, `8 GT/s`, `2.5 GT/s`, `Unknown`.
    pub fn parse(s: &str) -> Option<LinkSpeed> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("unknown") {
            return Some(LinkSpeed::UNKNOWN);
        }
        let num = t.split_whitespace().next()?;
        let rest = t[num.len()..].trim_start();
        if !rest.starts_with("GT/s") {
            return None;
        }
        let v: f64 = num.parse().ok()?;
        if !(0.0..=1000.0).contains(&v) {
            return None;
        }
        Some(LinkSpeed::from_gts(v))
    }

    /// PCIe generation (1..7) for the standard rates.
    pub fn generation(&self) -> Option<u8> {
        let mt = self.mt_per_s?;
        Self::PCIE_RATES_MT.iter().position(|&r| r == mt).map(|i| i as u8 + 1)
    }

    /// Usable bytes per second per lane and direction after line encoding
    /// (8b/10b for Gen1/2, 128b/130b for Gen3-5, 242/256 FLIT for Gen6/7); no protocol overhead.
    pub fn lane_bytes_per_s(&self) -> Option<f64> {
        let mt = self.mt_per_s? as f64 * 1e6;
        let eff = match self.generation() {
            Some(1) | Some(2) => 0.8,
            Some(6) | Some(7) => 242.0 / 256.0,
            _ => 128.0 / 130.0,
        };
        Some(mt * eff / 8.0)
    }
}

impl fmt::Display for LinkSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mt_per_s {
            None => f.write_str("unknown"),
            // Every digit the MT/s count holds ("2.5", "8.0", "2.52"): a topology file's speed
            // reads back as the same speed (tenths only turned 2.52 GT/s into 2.5).
            Some(mt) => {
                let frac = format!("{:03}", mt % 1000);
                let frac = frac.trim_end_matches('0');
                write!(f, "{}.{} GT/s", mt / 1000, if frac.is_empty() { "0" } else { frac })
            }
        }
    }
}

impl TryFrom<String> for LinkSpeed {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<LinkSpeed, String> {
        LinkSpeed::parse(&s).ok_or_else(|| format!("{s:?} is not a link speed like \"8.0 GT/s\" or \"unknown\""))
    }
}

impl From<LinkSpeed> for String {
    fn from(l: LinkSpeed) -> String {
        l.to_string()
    }
}

/// A PCIe link (the link between this function and its upstream port).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub current_speed: LinkSpeed,
    pub max_speed: LinkSpeed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_width: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_width: Option<u8>,
}

impl Link {
    /// The lane counts a PCIe link trains at.
    pub const PCIE_WIDTHS: [u8; 7] = [1, 2, 4, 8, 12, 16, 32];

    pub fn new(speed_gts: f64, width: u8) -> Link {
        Link {
            current_speed: LinkSpeed::from_gts(speed_gts),
            max_speed: LinkSpeed::from_gts(speed_gts),
            current_width: Some(width),
            max_width: Some(width),
        }
    }

    /// Per-direction bytes/s of the link as trained.
    pub fn bytes_per_s(&self) -> Option<f64> {
        Some(self.current_speed.lane_bytes_per_s()? * self.current_width? as f64)
    }

    /// True when the link trained below its capability (speed or width).
    pub fn degraded(&self) -> bool {
        let speed = matches!((self.current_speed.mt_per_s, self.max_speed.mt_per_s), (Some(c), Some(m)) if c < m);
        let width = matches!((self.current_width, self.max_width), (Some(c), Some(m)) if c < m);
        speed || width
    }

    /// `x4 Gen3 8.0 GT/s` (and `(max x8 16.0 GT/s)` when degraded).
    pub fn describe(&self) -> String {
        let w = self.current_width.map(|w| format!("x{w}")).unwrap_or_else(|| "x?".into());
        let gen = self
            .current_speed
            .generation()
            .map(|g| format!(" Gen{g}"))
            .unwrap_or_default();
        let mut s = format!("{w}{gen} {}", self.current_speed);
        if self.degraded() {
            let mw = self.max_width.map(|w| format!("x{w}")).unwrap_or_else(|| "x?".into());
            s.push_str(&format!(" (capable of {mw} {})", self.max_speed));
        }
        s
    }
}

/// A memory BAR, from the `resource` file (I/O BARs are left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bar {
    /// The register (resource line) it starts at, 0-5.
    pub index: u8,
    #[serde(with = "crate::hexnum::u64_hex")]
    pub start: u64,
    #[serde(with = "crate::hexnum::u64_hex")]
    pub size: u64,
    /// A 32-bit BAR (flags without IORESOURCE_MEM_64): one register. A 64-bit one, the
    /// default (a topology file that does not say), takes this register and the next. Files
    /// exported before this field say it of no BAR: `gpu::aperture` trusts the registers'
    /// layout over it (a BAR in register 1 means BAR0 is 32-bit).
    #[serde(default, skip_serializing_if = "is_false")]
    pub mem32: bool,
}

/// A P2P memory provider: the `p2pmem/` directory of a PCI function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pProvider {
    /// `p2pmem/size`: all registered ranges.
    pub size_bytes: u64,
    /// `p2pmem/available`: free bytes (a sum, not the largest contiguous run).
    pub available_bytes: u64,
    /// `p2pmem/published`: only published memory is found by in-kernel users.
    pub published: bool,
    /// `p2pmem/allocate` exists (kernel 6.2+): user space can mmap it.
    #[serde(default)]
    pub allocate: bool,
}

/// One PCI function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PciDevice {
    pub bdf: Bdf,
    /// The upstream bridge; `None` on a root bus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Bdf>,
    #[serde(default)]
    pub role: PortRole,
    #[serde(default)]
    pub kind: DeviceKind,
    #[serde(with = "crate::hexnum::u16_hex")]
    pub vendor: u16,
    #[serde(with = "crate::hexnum::u16_hex")]
    pub device: u16,
    #[serde(with = "crate::hexnum::class_hex")]
    pub class: u32,
    /// A human name: a bay, a slot, a function ("bay 7", "csp0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// An emulated device (QEMU, virtio, the peerpath emulated CSP).
    #[serde(default, skip_serializing_if = "is_false")]
    pub emulated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
    /// `numa_node`; sysfs -1 (no affinity or unknown) is `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_cpus: Option<String>,
    #[serde(default)]
    pub acs: AcsState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2pmem: Option<P2pProvider>,
    /// For an SR-IOV virtual function: its physical function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physfn: Option<Bdf>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bars: Vec<Bar>,
}

impl PciDevice {
    /// A minimal record; every optional field empty, ACS unknown.
    pub fn new(bdf: Bdf, vendor: u16, device: u16, class: u32) -> PciDevice {
        PciDevice {
            bdf,
            upstream: None,
            role: PortRole::Auto,
            kind: DeviceKind::Auto,
            vendor,
            device,
            class,
            label: None,
            driver: None,
            emulated: EMULATED_VENDORS.contains(&vendor),
            link: None,
            numa_node: None,
            local_cpus: None,
            acs: AcsState::default(),
            p2pmem: None,
            physfn: None,
            bars: Vec::new(),
        }
    }

    pub fn is_bridge_class(&self) -> bool {
        self.class >> 8 == 0x0604 || self.class >> 8 == 0x0609
    }

    /// The class code says the function is certainly no bridge: a defined base class other
    /// than bridges (0x06). Unclassified (0x00) and unassigned (0xff) functions may be anything.
    pub fn is_endpoint_class(&self) -> bool {
        is_endpoint_class(self.class)
    }

    /// `label (bdf)` or just the address.
    pub fn display_name(&self) -> String {
        match &self.label {
            Some(l) => format!("{l} ({})", self.bdf),
            None => self.bdf.to_string(),
        }
    }
}

/// See [`PciDevice::is_endpoint_class`].
pub(crate) fn is_endpoint_class(class: u32) -> bool {
    matches!(class >> 16, 0x01..=0x05 | 0x07..=0x13)
}

/// An NVMe controller (`/sys/class/nvme/nvmeX`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmeController {
    /// `nvme0`
    pub name: String,
    /// The PCI function; `None` for fabrics controllers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci: Option<Bdf>,
    /// `pcie`, `tcp`, `rdma`, `fc`, `loop`.
    #[serde(default = "transport_default")]
    pub transport: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// `nvme-subsys0`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsystem: Option<String>,
    /// The CMB registers, when the controller has a CMB (CMBSZ != 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmb: Option<Cmb>,
    /// Block devices of this controller: `nvme0n1`, or the hidden per-path `nvme0c0n1` under a
    /// multipath head.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
}

fn transport_default() -> String {
    "pcie".to_string()
}

/// What a block device is, as far as P2P goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// `nvmeXnY` of one controller, no multipath head: the queue supports P2P.
    NvmeNamespace,
    /// `nvmeXcYnZ`: one path of a multipath namespace (hidden, no /dev node).
    NvmeNamespacePath,
    /// `nvmeXnY` on `nvme-subsysN`: the multipath head; lacks the P2P queue feature.
    NvmeMultipathHead,
    /// Linux software RAID; lacks the P2P queue feature.
    Md,
    /// Device mapper (LVM, dm-crypt, ...); lacks the P2P queue feature.
    Dm,
    Virtio,
    /// A partition (`nvme1n1p1`): its one member is its disk, whose queue and PCI functions it
    /// shares; a name resolves to the disk.
    Partition,
    Other,
}

impl BlockKind {
    /// The block layer answers EREMOTEIO for P2P pages on these (`BLK_FEAT_PCI_P2PDMA` is not
    /// inherited by stacking drivers).
    pub fn rejects_p2p(self) -> bool {
        matches!(self, BlockKind::NvmeMultipathHead | BlockKind::Md | BlockKind::Dm)
    }

    pub fn short(self) -> &'static str {
        match self {
            BlockKind::NvmeNamespace => "NVMe namespace",
            BlockKind::NvmeNamespacePath => "NVMe namespace path (hidden)",
            BlockKind::NvmeMultipathHead => "NVMe multipath head",
            BlockKind::Md => "md RAID",
            BlockKind::Dm => "device mapper",
            BlockKind::Virtio => "virtio block",
            BlockKind::Partition => "partition",
            BlockKind::Other => "block device",
        }
    }
}

/// A block device (`/sys/class/block/<name>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockDevice {
    pub name: String,
    pub kind: BlockKind,
    /// The PCI functions that carry its I/O (through members, for stacked devices).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci: Vec<Bdf>,
    /// Stacked devices: the member block devices (`slaves/`, or the paths of a multipath head).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Device-mapper name (`dm/name`) or md level, for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A name resolved against the model: the PCI function(s) behind it and, when it names a block
/// device, that device.
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// What the user typed.
    pub name: String,
    /// The PCI functions behind it (one for a function or controller; members' for md/dm/heads).
    pub pci: Vec<Bdf>,
    pub block: Option<BlockDevice>,
    pub controller: Option<String>,
    /// Where the name is a partition: its disk, which `pci`, `block` and `controller` describe.
    pub partition_of: Option<String>,
}

impl Topology {
    /// An empty topology (no devices), CPU and IOMMU unknown.
    pub fn empty() -> Topology {
        Topology {
            schema_version: SCHEMA_VERSION,
            description: None,
            source: None,
            cpu: Cpu::default(),
            iommu: Iommu::default(),
            numa_nodes: Vec::new(),
            host_bridges: Vec::new(),
            devices: Vec::new(),
            nvme_controllers: Vec::new(),
            block_devices: Vec::new(),
            dropped_labels: Vec::new(),
            gpu_modules: None,
            kernel: None,
        }
    }

    /// The function at `bdf` (a binary search: `devices` is sorted by address).
    pub fn device(&self, bdf: Bdf) -> Option<&PciDevice> {
        self.devices.binary_search_by_key(&bdf, |d| d.bdf).ok().map(|i| &self.devices[i])
    }

    /// `bdf` and then each upstream bridge up to the root bus (the kernel's
    /// `pci_upstream_bridge()` walk). Bounded by the number of devices.
    pub fn upstream_chain(&self, bdf: Bdf) -> Vec<Bdf> {
        let mut chain = vec![bdf];
        let mut cur = bdf;
        for _ in 0..=self.devices.len() {
            let next = self
                .device(cur)
                .and_then(|d| d.physfn.and_then(|pf| self.device(pf)).unwrap_or(d).upstream);
            match next {
                Some(up) if !chain.contains(&up) => {
                    chain.push(up);
                    cur = up;
                }
                _ => break,
            }
        }
        chain
    }

    /// The host bridge (`pciDDDD:BB`) above `bdf`.
    pub fn host_bridge_of(&self, bdf: Bdf) -> String {
        let chain = self.upstream_chain(bdf);
        chain.last().copied().unwrap_or(bdf).root_bus_name()
    }

    /// The devices on the root bus of host bridge `name`, by devfn: those of its bus number
    /// (a run of `devices`, which is sorted by address) that sit on no bridge.
    pub fn root_bus_devices(&self, name: &str) -> Vec<&PciDevice> {
        let Some((domain, bus)) = crate::bdf::parse_root_bus_name(name) else { return Vec::new() };
        let start = self.devices.partition_point(|d| (d.bdf.domain, d.bdf.bus) < (domain, bus));
        self.devices[start..]
            .iter()
            .take_while(|d| (d.bdf.domain, d.bdf.bus) == (domain, bus))
            .filter(|d| d.upstream.is_none())
            .collect()
    }

    /// The device the kernel compares with the allow-list for host bridge `name`
    /// (`pci_host_bridge_dev()`): the first device on the root bus if it is devfn 00.0 or a
    /// Root Port. sysfs does not show the kernel's list order; the lowest devfn stands in.
    pub fn host_bridge_device(&self, name: &str) -> Option<&PciDevice> {
        let first = *self.root_bus_devices(name).first()?;
        if first.bdf.devfn() == 0 || first.role == PortRole::RootPort {
            Some(first)
        } else {
            None
        }
    }

    /// The socket of a NUMA node, when known.
    pub fn socket_of_node(&self, node: u32) -> Option<u32> {
        self.numa_nodes.iter().find(|n| n.id == node).and_then(|n| n.socket)
    }

    /// The NUMA node of PCI function `bdf`: its own, or, where firmware gave it none (sysfs
    /// `numa_node` -1), its host bridge's (that of the functions below it, where they agree),
    /// or, on a machine of one NUMA node, that node (all its memory and CPUs are there).
    pub fn numa_node_of(&self, bdf: Bdf) -> Option<u32> {
        self.device(bdf).and_then(|d| d.numa_node).or_else(|| {
            let hb = self.host_bridge_of(bdf);
            self.host_bridges.iter().find(|h| h.name == hb).and_then(|h| h.numa_node)
        }).or(match self.numa_nodes.as_slice() {
            [only] => Some(only.id),
            _ => None,
        })
    }

    /// How many CPU sockets the machine has, as far as it says: its CPUs' packages, or its
    /// NUMA nodes' sockets; one on a machine of at most one NUMA node that says nothing; `None`
    /// (unknown) on one of several NUMA nodes whose CPUs give no package.
    pub fn socket_count(&self) -> Option<u32> {
        let of_nodes: HashSet<u32> = self.numa_nodes.iter().filter_map(|n| n.socket).collect();
        // Every function's node is looked at only where nothing else says (a verdict asks
        // this for every pair of a matrix).
        let nodes = || -> HashSet<u32> {
            self.numa_nodes
                .iter()
                .map(|n| n.id)
                .chain(self.devices.iter().filter_map(|d| d.numa_node))
                .chain(self.host_bridges.iter().filter_map(|h| h.numa_node))
                .collect()
        };
        match self.cpu.sockets {
            Some(s) => Some(s.max(of_nodes.len() as u32).max(1)),
            None if !self.numa_nodes.is_empty() && self.numa_nodes.iter().all(|n| n.socket.is_some()) => Some(of_nodes.len() as u32),
            None if nodes().len() <= 1 => Some(1),
            None => None,
        }
    }

    /// The socket of host bridge `hb`'s root complex, with the NUMA node that gives it: from
    /// the bridge's node, or, where it has none, from the nodes of the functions below it, which
    /// must agree on one socket. `Err` says why it is not known.
    pub fn socket_of_host_bridge(&self, hb: &str) -> std::result::Result<(u32, u32), String> {
        let mut nodes: BTreeMap<u32, Vec<Bdf>> = BTreeMap::new();
        match self.host_bridges.iter().find(|h| h.name == hb).and_then(|h| h.numa_node) {
            Some(n) => {
                nodes.insert(n, Vec::new());
            }
            None => {
                let up: BTreeMap<Bdf, Option<Bdf>> = self.devices.iter().map(|d| (d.bdf, d.upstream)).collect();
                for d in &self.devices {
                    let mut top = d.bdf;
                    for _ in 0..self.devices.len() {
                        match up.get(&top) {
                            Some(Some(u)) => top = *u,
                            _ => break,
                        }
                    }
                    if let (Some(n), true) = (d.numa_node, top.root_bus_name() == hb) {
                        nodes.entry(n).or_default().push(d.bdf);
                    }
                }
            }
        }
        let mut sockets: BTreeMap<u32, u32> = BTreeMap::new();
        for &n in nodes.keys() {
            let s = self.socket_of_node(n).ok_or_else(|| {
                format!("which socket NUMA node {n} (of host bridge {hb}) is on is not known (its CPUs give no physical_package_id)")
            })?;
            sockets.entry(s).or_insert(n);
        }
        match sockets.len() {
            0 => Err(format!("firmware gives no NUMA node (numa_node -1) for any function below host bridge {hb}")),
            1 => Ok(sockets.into_iter().next().map(|(s, n)| (n, s)).unwrap_or_default()),
            _ => {
                let said: Vec<String> = nodes
                    .iter()
                    .map(|(n, on)| {
                        let shown: Vec<String> = on.iter().take(3).map(|b| b.to_string()).collect();
                        format!("node {n}: {}{}", shown.join(", "), if on.len() > 3 { format!(" and {} more", on.len() - 3) } else { String::new() })
                    })
                    .collect();
                Err(format!("the functions below host bridge {hb} disagree on their NUMA node ({})", said.join("; ")))
            }
        }
    }

    /// The NVMe controller on PCI function `bdf`.
    pub fn nvme_for_pci(&self, bdf: Bdf) -> Option<&NvmeController> {
        self.nvme_controllers.iter().find(|c| c.pci == Some(bdf))
    }

    /// Endpoints worth a row in a P2P matrix: NVMe SSDs, CSPs, GPUs, NICs, other storage
    /// controllers (class 0x01), and every P2P provider.
    pub fn devices_that_matter(&self) -> Vec<&PciDevice> {
        self.devices
            .iter()
            .filter(|d| {
                d.p2pmem.is_some()
                    || matches!(
                        d.kind,
                        DeviceKind::NvmeSsd | DeviceKind::Csp | DeviceKind::Gpu | DeviceKind::Nic
                    )
                    || (d.class >> 16 == 0x01 && !d.role.is_bridge())
            })
            .collect()
    }

    /// Resolves what a user typed: a PCI address (`0000:01:00.0` or `01:00.0`), an NVMe
    /// controller (`nvme0`), a block device (`nvme0n1`, `/dev/md0`, `dm-0`), a GPU by the
    /// runtime's name (`gpu0`: the first GPU in PCI address order), or a label. The kernel's
    /// names come first: a label that is also one was refused (a file) or dropped (sysfs).
    pub fn resolve(&self, name: &str) -> Result<Endpoint> {
        let n = name.trim();
        let n = n.strip_prefix("/dev/").unwrap_or(n);
        if let Some((e, _)) = self.kernel_name(n) {
            return Ok(Endpoint { name: name.to_string(), ..e });
        }
        if n.parse::<Bdf>().is_err() {
            if let Some(d) = self.devices.iter().find(|d| d.label.as_deref() == Some(n)) {
                return Ok(Endpoint {
                    name: name.to_string(),
                    pci: vec![d.bdf],
                    block: None,
                    controller: self.nvme_for_pci(d.bdf).map(|c| c.name.clone()),
                    partition_of: None,
                });
            }
            if let Some(l) = self.dropped_labels.iter().find(|l| l.label == n) {
                let on: Vec<String> = l.devices.iter().map(|b| b.to_string()).collect();
                return Err(TopoError::AmbiguousName {
                    name: name.to_string(),
                    why: format!("firmware's label {n:?} on {} was dropped: {}", on.join(" and "), l.why),
                });
            }
        }
        Err(TopoError::UnknownDevice { name: name.to_string() })
    }

    /// What a kernel name (PCI address, NVMe controller, block device, `gpuN`) resolves to, and
    /// what it is in words.
    fn kernel_name(&self, n: &str) -> Option<(Endpoint, String)> {
        let endpoint = |pci: Vec<Bdf>, block: Option<BlockDevice>, controller: Option<String>| Endpoint { name: n.to_string(), pci, block, controller, partition_of: None };
        if let Ok(bdf) = n.parse::<Bdf>() {
            let d = self.device(bdf)?;
            return Some((endpoint(vec![bdf], None, self.nvme_for_pci(bdf).map(|c| c.name.clone())), format!("the address of PCI function {}", d.bdf)));
        }
        let on = |pci: &[Bdf]| if pci.is_empty() { String::new() } else { format!(" on {}", pci.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")) };
        if let Some(c) = self.nvme_controllers.iter().find(|c| c.name == n) {
            let pci: Vec<Bdf> = c.pci.into_iter().collect();
            let what = format!("the name of NVMe controller {n}{}", on(&pci));
            return Some((endpoint(pci, None, Some(c.name.clone())), what));
        }
        if let Some(b) = self.block_devices.iter().find(|b| b.name == n) {
            // A partition shares its disk's queue and PCI function: it is the disk's endpoint
            // (normalize checked that a partition names one disk).
            let disk = (b.kind == BlockKind::Partition).then(|| b.members.first().and_then(|m| self.block_devices.iter().find(|d| &d.name == m))).flatten();
            let (b, partition_of) = match disk {
                Some(d) => (d, Some(d.name.clone())),
                None => (b, None),
            };
            let controller = self
                .nvme_controllers
                .iter()
                .find(|c| c.namespaces.iter().any(|ns| ns == &b.name))
                .map(|c| c.name.clone());
            let what = match &partition_of {
                Some(d) => format!("the name of partition {n} of block device {d}{}", on(&b.pci)),
                None => format!("the name of block device {n}{}", on(&b.pci)),
            };
            return Some((Endpoint { partition_of, ..endpoint(b.pci.clone(), Some(b.clone()), controller) }, what));
        }
        // `gpu0`: the runtime's name for a GPU (the N-th in PCI address order).
        let bdf = crate::gpu::gpu_by_name(self, n)?;
        Some((endpoint(vec![bdf], None, None), format!("the runtime's name of GPU {bdf}")))
    }

    /// What the label of function `own` would shadow: a kernel name that names something else
    /// (`nvme3n1` on a CSP while the block device nvme3n1 is another drive). A label equal to
    /// its own function's names (its address, its controller) shadows nothing.
    pub(crate) fn label_shadows(&self, label: &str, own: Bdf) -> Option<String> {
        match self.kernel_name(label) {
            Some((e, what)) => (e.pci != [own] || e.block.as_ref().is_some_and(|b| b.kind.rejects_p2p())).then_some(what),
            // An address of no function here: looked up as an address, never as the label.
            None => label.parse::<Bdf>().ok().filter(|b| *b != own).map(|b| format!("the PCI address {b}")),
        }
    }

    /// A file's labels: one that is also a kernel name of something else would be looked up as
    /// that (the kernel's names come first) and never name its device.
    pub(crate) fn check_label_names(&self) -> Result<()> {
        for d in &self.devices {
            let Some(l) = &d.label else { continue };
            if let Some(what) = self.label_shadows(l, d.bdf) {
                return Err(TopoError::Invalid(format!("device {} has the label {l:?}, which is {what}: give it another label", d.bdf)));
            }
        }
        Ok(())
    }

    /// A file's NUMA references: a device or host bridge on a node the file does not list (where
    /// it lists any) is a typo. Not asked of sysfs, whose node list a partial tree may lack.
    pub(crate) fn check_numa_references(&self) -> Result<()> {
        if self.numa_nodes.is_empty() {
            return Ok(());
        }
        let nodes: HashSet<u32> = self.numa_nodes.iter().map(|n| n.id).collect();
        let named = self.devices.iter().filter_map(|d| d.numa_node.map(|n| (d.bdf.to_string(), n)));
        let named = named.chain(self.host_bridges.iter().filter_map(|h| h.numa_node.map(|n| (h.name.clone(), n))));
        for (what, node) in named {
            if !nodes.contains(&node) {
                let listed: Vec<String> = self.numa_nodes.iter().map(|n| n.id.to_string()).collect();
                return Err(TopoError::Invalid(format!("{what} is on NUMA node {node}, which is not in the topology (its nodes: {})", listed.join(", "))));
            }
        }
        Ok(())
    }

    /// Checks references and fills in derived fields: device kinds and port roles left as
    /// `auto`, missing host bridges, sort orders. Called by every constructor.
    pub fn normalize(&mut self) -> Result<()> {
        if self.schema_version > SCHEMA_VERSION {
            return Err(TopoError::Invalid(format!(
                "schema_version {} is newer than this peerpath understands ({SCHEMA_VERSION})",
                self.schema_version
            )));
        }
        self.devices.sort_by_key(|d| d.bdf);
        let mut seen = HashSet::new();
        for d in &self.devices {
            if !seen.insert(d.bdf) {
                return Err(TopoError::Invalid(format!("device {} is listed twice", d.bdf)));
            }
        }
        // Names a user gives on the command line name one thing each (one of two was picked).
        fn twice(what: &str, names: impl Iterator<Item = String>) -> Result<()> {
            let mut seen = HashSet::new();
            for n in names {
                if !seen.insert(n.clone()) {
                    return Err(TopoError::Invalid(format!("{what} {n:?} is given twice")));
                }
            }
            Ok(())
        }
        twice("the label", self.devices.iter().filter_map(|d| d.label.clone()).chain(self.host_bridges.iter().filter_map(|h| h.label.clone())))?;
        twice("NVMe controller", self.nvme_controllers.iter().map(|c| c.name.clone()))?;
        twice("block device", self.block_devices.iter().map(|b| b.name.clone()))?;
        twice("host bridge", self.host_bridges.iter().map(|h| h.name.clone()))?;
        twice("NUMA node", self.numa_nodes.iter().map(|n| n.id.to_string()))?;
        for d in &self.devices {
            if let Some(up) = d.upstream {
                if up == d.bdf {
                    return Err(TopoError::Invalid(format!("device {} is its own upstream bridge", d.bdf)));
                }
                match self.device(up) {
                    None => {
                        return Err(TopoError::Invalid(format!(
                            "device {} names upstream bridge {up}, which is not in the topology",
                            d.bdf
                        )));
                    }
                    // The kernel's upstream bridge is the bridge above the function's bus
                    // (`bus->self`): an endpoint has no bus below it.
                    Some(p) if p.is_endpoint_class() => {
                        return Err(TopoError::Invalid(format!(
                            "device {} names upstream bridge {up}, which is an endpoint (class {:#08x}), not a bridge",
                            d.bdf, p.class
                        )));
                    }
                    Some(_) => {}
                }
            }
            if let Some(m) = d.p2pmem.filter(|m| m.available_bytes > m.size_bytes) {
                return Err(TopoError::Invalid(format!(
                    "device {} has {} bytes of P2P memory available of {} registered (available is at most size)",
                    d.bdf, m.available_bytes, m.size_bytes
                )));
            }
            if let Some(pf) = d.physfn {
                // A physical function has no physfn: one that has (itself, or a VF naming
                // its own VF) is a loop or a chain no kernel makes.
                let pf_of_pf = match self.device(pf) {
                    None => {
                        return Err(TopoError::Invalid(format!(
                            "virtual function {} names physical function {pf}, which is not in the topology",
                            d.bdf
                        )));
                    }
                    Some(p) => p.physfn,
                };
                if pf == d.bdf {
                    return Err(TopoError::Invalid(format!("virtual function {} names itself as its physical function (physfn)", d.bdf)));
                }
                if let Some(pp) = pf_of_pf {
                    return Err(TopoError::Invalid(format!(
                        "virtual function {} names physical function {pf}, which is itself a virtual function (of {pp}){}",
                        d.bdf,
                        if pp == d.bdf { ": a loop" } else { "" }
                    )));
                }
            }
        }
        // Loops: every chain must reach a root bus within N steps.
        let index: BTreeMap<Bdf, Option<Bdf>> = self.devices.iter().map(|d| (d.bdf, d.upstream)).collect();
        let mut depth: BTreeMap<Bdf, usize> = BTreeMap::new();
        for d in &self.devices {
            let mut cur = d.bdf;
            let mut steps = 0usize;
            let mut path = vec![cur];
            while let Some(Some(up)) = index.get(&cur) {
                steps += 1;
                if steps > self.devices.len() {
                    let shown: Vec<String> = path.iter().take(8).map(|b| b.to_string()).collect();
                    return Err(TopoError::Invalid(format!(
                        "loop in upstream chain: {} -> ...",
                        shown.join(" -> ")
                    )));
                }
                cur = *up;
                path.push(cur);
            }
            depth.insert(d.bdf, steps);
        }
        // Kinds; emulated vendors are emulated whatever the file says.
        for d in &mut self.devices {
            d.emulated |= EMULATED_VENDORS.contains(&d.vendor);
            if d.kind == DeviceKind::Auto {
                d.kind = DeviceKind::classify(d.vendor, d.class);
            }
        }
        // Roles, parents before children.
        let mut order: Vec<usize> = (0..self.devices.len()).collect();
        order.sort_by_key(|&i| depth.get(&self.devices[i].bdf).copied().unwrap_or(0));
        for i in order {
            if self.devices[i].role != PortRole::Auto {
                continue;
            }
            let parent_role = self.devices[i]
                .upstream
                .and_then(|u| self.device(u))
                .map(|p| p.role);
            let d = &self.devices[i];
            let role = if d.class >> 8 == 0x0600 {
                PortRole::HostBridge
            } else if d.is_bridge_class() {
                match parent_role {
                    None => PortRole::RootPort,
                    Some(PortRole::RootPort) | Some(PortRole::SwitchDownstream) => PortRole::SwitchUpstream,
                    Some(PortRole::SwitchUpstream) => PortRole::SwitchDownstream,
                    Some(_) => PortRole::Bridge,
                }
            } else {
                PortRole::Endpoint
            };
            self.devices[i].role = role;
        }
        // Host bridges.
        let mut hbs: BTreeSet<String> = self.host_bridges.iter().map(|h| h.name.clone()).collect();
        for h in &self.host_bridges {
            if parse_root_bus_name(&h.name).is_none() {
                return Err(TopoError::Invalid(format!(
                    "host bridge name {:?} is not of the form pciDDDD:BB",
                    h.name
                )));
            }
        }
        let roots: Vec<(String, Option<u32>)> = self
            .devices
            .iter()
            .filter(|d| d.upstream.is_none())
            .map(|d| (d.bdf.root_bus_name(), d.numa_node))
            .collect();
        for (name, node) in roots {
            if hbs.insert(name.clone()) {
                self.host_bridges.push(HostBridge {
                    name,
                    numa_node: node,
                    label: None,
                });
            }
        }
        self.host_bridges.sort_by(|a, b| {
            parse_root_bus_name(&a.name).cmp(&parse_root_bus_name(&b.name))
        });
        // NVMe and block references.
        for c in &self.nvme_controllers {
            if let Some(p) = c.pci {
                if self.device(p).is_none() {
                    return Err(TopoError::Invalid(format!(
                        "NVMe controller {} names PCI function {p}, which is not in the topology",
                        c.name
                    )));
                }
            }
        }
        if let Some(cycle) = member_loop(&self.block_devices) {
            return Err(TopoError::Invalid(format!("loop in stacked block devices' members: {}", cycle.join(" -> "))));
        }
        let block_names: HashSet<&str> = self.block_devices.iter().map(|b| b.name.as_str()).collect();
        for b in &self.block_devices {
            for p in &b.pci {
                if self.device(*p).is_none() {
                    return Err(TopoError::Invalid(format!(
                        "block device {} names PCI function {p}, which is not in the topology",
                        b.name
                    )));
                }
            }
            for m in &b.members {
                if !block_names.contains(m.as_str()) {
                    return Err(TopoError::Invalid(format!(
                        "block device {} names member {m}, which is not in the topology",
                        b.name
                    )));
                }
            }
            // A partition is resolved to its disk: exactly one, and not a partition itself.
            if b.kind == BlockKind::Partition {
                let disk = match b.members.as_slice() {
                    [d] => self.block_devices.iter().find(|x| &x.name == d),
                    _ => None,
                };
                if disk.is_none_or(|d| d.kind == BlockKind::Partition) {
                    return Err(TopoError::Invalid(format!(
                        "partition {} must name its disk as its one member (members = [\"nvme0n1\"]), not {:?}",
                        b.name, b.members
                    )));
                }
            }
        }
        self.nvme_controllers.sort_by_key(|a| natural_key(&a.name));
        self.block_devices.sort_by_key(|a| natural_key(&a.name));
        self.numa_nodes.sort_by_key(|n| n.id);
        if let (Some(k), Some(provider)) = (self.kernel.as_mut(), self.devices.iter().find(|d| d.p2pmem.is_some())) {
            k.trust_registered_provider(provider.bdf);
        }
        Ok(())
    }
}

/// A loop among stacked block devices (`md0 -> md1 -> md0`, `md0 -> md0`), if any: a member is
/// a device below, so no device can be its own member, however far down.
pub(crate) fn member_loop(blocks: &[BlockDevice]) -> Option<Vec<String>> {
    fn walk<'a>(name: &'a str, members: &BTreeMap<&'a str, &'a [String]>, path: &mut Vec<&'a str>, done: &mut HashSet<&'a str>) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|n| *n == name) {
            return Some(path[i..].iter().chain([&name]).map(|n| n.to_string()).collect());
        }
        if !done.insert(name) {
            return None;
        }
        path.push(name);
        for m in members.get(name).copied().unwrap_or_default() {
            if let Some(cycle) = walk(m, members, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let members: BTreeMap<&str, &[String]> = blocks.iter().map(|b| (b.name.as_str(), b.members.as_slice())).collect();
    let mut done = HashSet::new();
    blocks.iter().find_map(|b| walk(&b.name, &members, &mut Vec::new(), &mut done))
}

/// Sort key that orders `nvme2` before `nvme10`.
pub(crate) fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else {
            if !num.is_empty() {
                out.push((std::mem::take(&mut text), num.parse().unwrap_or(u64::MAX)));
                num.clear();
            }
            text.push(c);
        }
    }
    out.push((text, if num.is_empty() { 0 } else { num.parse().unwrap_or(u64::MAX) }));
    out
}
