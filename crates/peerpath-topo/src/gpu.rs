//! How storage reaches a GPU's memory, and why: straight (GPUDirect Storage through
//! NVIDIA's `nvidia-fs`, or the kernel's P2PDMA where the GPU's memory is a provider) or
//! staged through pinned host memory, which is what peerpath's GPU device does otherwise.
//!
//! The kernel's P2PDMA verdicts (`verdict.rs`) are about providers with `p2pmem/`; NVIDIA's
//! driver does not register GPU memory there, so a GPU needs its own answer.

use serde::Serialize;

use crate::bdf::Bdf;
use crate::model::{Bar, DeviceKind, IommuStatus, PciDevice, Topology};
use crate::verdict::Severity;

/// What one reason is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum GpuReason {
    /// The kernel's P2PDMA can target the GPU's memory (it has published `p2pmem/`).
    P2pProvider { size_bytes: u64 },
    /// No `p2pmem/` under the GPU: the kernel's P2PDMA cannot target its memory.
    NotAP2pProvider { vendor_driver: bool },
    /// `nvidia_fs` is loaded: cuFile can DMA between storage and GPU memory.
    NvidiaFsLoaded,
    /// `nvidia_fs` is not loaded: cuFile runs in compatibility mode (through host memory).
    NoNvidiaFs,
    /// The sysfs read has no `module/` directory (or the topology came from a file).
    ModulesUnknown,
    /// The IOMMU translates DMA addresses: GPUDirect Storage asks for it off or in pass-through.
    IommuTranslates { domain: Option<String> },
    /// The kernel is built without `CONFIG_PCI_P2PDMA` (`source` says how that is known): no
    /// memory can be a P2PDMA provider, and GPUDirect Storage's P2PDMA mode cannot run.
    KernelWithoutP2pdma { release: Option<String>, source: String },
    /// The kernel has P2PDMA: GPUDirect Storage's P2PDMA mode (kernel 6.2 or later, NVIDIA's open
    /// kernel modules) may open a direct path without nvidia-fs; only cuFile can tell.
    /// `new_enough`: the release is 6.2 or later (`None`: the release is unknown).
    KernelHasP2pdma { release: Option<String>, new_enough: Option<bool> },
    /// Whether the kernel has P2PDMA is unknown.
    KernelP2pdmaUnknown { why: String },
}

impl GpuReason {
    /// The reason's name, as the JSON's `reason` carries it (`no_nvidia_fs`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            GpuReason::P2pProvider { .. } => "p2p_provider",
            GpuReason::NotAP2pProvider { .. } => "not_a_p2p_provider",
            GpuReason::NvidiaFsLoaded => "nvidia_fs_loaded",
            GpuReason::NoNvidiaFs => "no_nvidia_fs",
            GpuReason::ModulesUnknown => "modules_unknown",
            GpuReason::IommuTranslates { .. } => "iommu_translates",
            GpuReason::KernelWithoutP2pdma { .. } => "kernel_without_p2pdma",
            GpuReason::KernelHasP2pdma { .. } => "kernel_has_p2pdma",
            GpuReason::KernelP2pdmaUnknown { .. } => "kernel_p2pdma_unknown",
        }
    }

    /// A short code for table cells (`peerpath plan`'s staged legs): `p2p`, `mem` (not a P2PDMA
    /// provider), `gds`, `nvfs` (no nvidia-fs), `nvfs?` (unknown), `iommu`, `kernel` (no P2PDMA
    /// in the kernel), `kp2p` (P2PDMA in the kernel, unused), `kernel?` (unknown).
    pub fn short(&self) -> &'static str {
        match self {
            GpuReason::P2pProvider { .. } => "p2p",
            GpuReason::NotAP2pProvider { .. } => "mem",
            GpuReason::NvidiaFsLoaded => "gds",
            GpuReason::NoNvidiaFs => "nvfs",
            GpuReason::ModulesUnknown => "nvfs?",
            GpuReason::IommuTranslates { .. } => "iommu",
            GpuReason::KernelWithoutP2pdma { .. } => "kernel",
            GpuReason::KernelHasP2pdma { .. } => "kp2p",
            GpuReason::KernelP2pdmaUnknown { .. } => "kernel?",
        }
    }

    pub fn severity(&self) -> Severity {
        match self {
            GpuReason::P2pProvider { .. } | GpuReason::NvidiaFsLoaded => Severity::Info,
            GpuReason::NotAP2pProvider { .. } => Severity::Info,
            GpuReason::NoNvidiaFs | GpuReason::KernelWithoutP2pdma { .. } | GpuReason::KernelHasP2pdma { new_enough: Some(false), .. } => Severity::Blocks,
            GpuReason::ModulesUnknown | GpuReason::IommuTranslates { .. } => Severity::Caveat,
            GpuReason::KernelHasP2pdma { .. } | GpuReason::KernelP2pdmaUnknown { .. } => Severity::Caveat,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            GpuReason::P2pProvider { size_bytes } => format!(
                "its memory is a P2PDMA provider ({} in p2pmem/): the kernel's P2PDMA can move storage straight into it",
                peerpath_metrics::human_bytes(*size_bytes)
            ),
            GpuReason::NotAP2pProvider { vendor_driver: true } => {
                "its memory is not a P2PDMA provider (no p2pmem/: NVIDIA's driver does not register GPU memory with the kernel's P2PDMA); a direct path needs GPUDirect Storage".into()
            }
            GpuReason::NotAP2pProvider { vendor_driver: false } => {
                "its memory is not a P2PDMA provider (no p2pmem/): storage cannot DMA into it".into()
            }
            GpuReason::NvidiaFsLoaded => "nvidia-fs (GPUDirect Storage's kernel module) is loaded: cuFile can DMA between storage and GPU memory".into(),
            GpuReason::NoNvidiaFs => {
                "nvidia-fs (GPUDirect Storage's kernel module) is not loaded: cuFile runs in compatibility mode, every byte through host memory".into()
            }
            GpuReason::ModulesUnknown => "whether nvidia-fs is loaded is unknown (no module/ directory was read)".into(),
            GpuReason::IommuTranslates { domain } => format!(
                "the IOMMU is on{}: NVIDIA's GPUDirect Storage guide asks for it off or in pass-through",
                domain.as_ref().map(|d| format!(" (default domain {d})")).unwrap_or_default()
            ),
            GpuReason::KernelWithoutP2pdma { release, source } => format!(
                "the kernel{} is built without P2PDMA (CONFIG_PCI_P2PDMA not set, read in {source}): no memory can be a P2PDMA provider, and GPUDirect Storage's P2PDMA mode cannot run",
                release.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            GpuReason::KernelHasP2pdma { release, new_enough: Some(true) } => format!(
                "the kernel{} has P2PDMA: GPUDirect Storage's P2PDMA mode (NVIDIA's open kernel modules, a static BAR1) may reach GPU memory without nvidia-fs; `gdscheck -p` says whether it does",
                release.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            GpuReason::KernelHasP2pdma { release, new_enough: Some(false) } => format!(
                "the kernel{} has P2PDMA, but GPUDirect Storage's P2PDMA mode needs 6.2 or later",
                release.as_ref().map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            GpuReason::KernelHasP2pdma { new_enough: None, .. } => {
                "the kernel has P2PDMA (its release unknown): if it is 6.2 or later, GPUDirect Storage's P2PDMA mode (NVIDIA's open kernel modules, a static BAR1) may reach GPU memory without nvidia-fs; `gdscheck -p` says whether it does".into()
            }
            GpuReason::KernelP2pdmaUnknown { why } => format!("whether the kernel has P2PDMA (CONFIG_PCI_P2PDMA) is unknown: {why}"),
        }
    }

    pub fn remedy(&self) -> Option<String> {
        match self {
            GpuReason::NoNvidiaFs => Some(
                "install GPUDirect Storage (the nvidia-gds package from NVIDIA's CUDA repository), `modprobe nvidia-fs`, check with `gdscheck -p`; or, on a kernel 6.2+ with CONFIG_PCI_P2PDMA and NVIDIA's open kernel modules, GPUDirect Storage's P2PDMA mode needs no nvidia-fs".into(),
            ),
            GpuReason::KernelWithoutP2pdma { .. } => Some("a kernel built with CONFIG_PCI_P2PDMA=y (6.2 or later for GPUDirect Storage's P2PDMA mode), or nvidia-fs".into()),
            GpuReason::IommuTranslates { .. } => Some("boot with iommu=pt (or intel_iommu=off / amd_iommu=off)".into()),
            GpuReason::ModulesUnknown => Some("read a live /sys (or a fixture with its module/ directory)".into()),
            _ => None,
        }
    }
}

/// One reason in words, as the JSON carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuReasonText {
    #[serde(flatten)]
    pub reason: GpuReason,
    pub severity: Severity,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

/// How storage reaches one GPU's memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuMemoryPath {
    pub gpu: Bdf,
    /// `gpu0`, `gpu1`, ...: its place among the GPUs in PCI address order (see [`gpu_name`]).
    pub name: String,
    /// The window the CPU and peers have onto GPU memory (see [`aperture`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aperture_bytes: Option<u64>,
    /// The number its driver calls it by (NVIDIA's "BAR1").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aperture_bar: Option<usize>,
    /// Storage can DMA into GPU memory without host memory.
    pub direct: bool,
    pub reasons: Vec<GpuReasonText>,
}

impl GpuMemoryPath {
    /// One line: the GPU's path and the reasons that decide it.
    pub fn describe(&self) -> String {
        let how = if self.direct { "straight into GPU memory" } else { "staged through pinned host memory" };
        let why: Vec<String> = self.reasons.iter().map(|r| r.text.clone()).collect();
        format!("storage -> GPU memory: {how} ({})", why.join("; "))
    }
}

const NVIDIA: u16 = 0x10de;

/// The GPUs of `topo`, in PCI address order.
pub fn gpus(topo: &Topology) -> impl Iterator<Item = &PciDevice> {
    topo.devices.iter().filter(|d| d.kind == DeviceKind::Gpu)
}

/// `gpu<N>` for the GPU at `bdf`: the N-th GPU in PCI address order, as the runtime names the GPU
/// device it opens (`gpu{ordinal}`). CUDA numbers GPUs fastest first unless
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID`; with one GPU, or GPUs of one model, the orders agree.
/// `None` when `bdf` is not a GPU.
pub fn gpu_name(topo: &Topology, bdf: Bdf) -> Option<String> {
    gpus(topo).position(|d| d.bdf == bdf).map(|i| format!("gpu{i}"))
}

/// The GPU called `name` (`gpu0`: see [`gpu_name`]).
pub fn gpu_by_name(topo: &Topology, name: &str) -> Option<Bdf> {
    let n: usize = name.strip_prefix("gpu")?.parse().ok()?;
    if name != format!("gpu{n}") {
        return None; // gpu00, gpu+1
    }
    gpus(topo).nth(n).map(|d| d.bdf)
}

fn text(reason: GpuReason) -> GpuReasonText {
    GpuReasonText { severity: reason.severity(), text: reason.describe(), remedy: reason.remedy(), reason }
}

/// The path into one GPU's memory.
pub fn memory_path(topo: &Topology, d: &PciDevice) -> GpuMemoryPath {
    let mut reasons = Vec::new();
    let mut direct = false;
    match d.p2pmem {
        Some(p) if p.published => {
            direct = true;
            reasons.push(GpuReason::P2pProvider { size_bytes: p.size_bytes });
        }
        _ => reasons.push(GpuReason::NotAP2pProvider { vendor_driver: d.vendor == NVIDIA }),
    }
    if d.vendor == NVIDIA && !direct {
        match topo.gpu_modules {
            Some(m) if m.nvidia_fs => {
                direct = true;
                reasons.push(GpuReason::NvidiaFsLoaded);
            }
            Some(_) => reasons.push(GpuReason::NoNvidiaFs),
            None => reasons.push(GpuReason::ModulesUnknown),
        }
        if !direct {
            reasons.push(kernel_reason(topo));
        }
        if direct && topo.iommu.status == IommuStatus::On && topo.iommu.default_domain.as_deref() != Some("identity") {
            reasons.push(GpuReason::IommuTranslates { domain: topo.iommu.default_domain.clone() });
        }
    }
    let window = aperture(d);
    GpuMemoryPath {
        gpu: d.bdf,
        name: gpu_name(topo, d.bdf).unwrap_or_else(|| d.bdf.to_string()),
        aperture_bytes: window.map(|(_, b)| b.size),
        aperture_bar: window.map(|(i, _)| i),
        direct,
        reasons: reasons.into_iter().map(text).collect(),
    }
}

/// A GPU's window onto its memory, with the number its driver gives it: on an NVIDIA GPU BAR1,
/// found as its driver finds it (register 1 after a 32-bit BAR0, register 2 after a 64-bit BAR0,
/// which takes registers 0 and 1); on another the largest memory BAR, numbered among the memory
/// BARs in use. `None` where there is no such BAR.
///
/// A memory BAR in register 1 is BAR1 whatever BAR0's flags say: it proves BAR0 32-bit. A
/// topology file exported before BARs carried `mem32` reads every BAR as 64-bit (an A100's BAR0
/// too); only where register 1 is empty does BAR0's width decide.
pub fn aperture(d: &PciDevice) -> Option<(usize, Bar)> {
    if d.vendor == NVIDIA {
        let memory_bar = |register| d.bars.iter().find(|b| b.index == register && b.size > 0);
        let bar0_is_64_bit = d.bars.iter().any(|b| b.index == 0 && !b.mem32);
        let bar1 = memory_bar(1).or_else(|| if bar0_is_64_bit { memory_bar(2) } else { None });
        return bar1.map(|b| (1, *b));
    }
    d.bars.iter().copied().enumerate().filter(|(_, b)| b.size > 0).max_by_key(|(_, b)| b.size)
}

/// What the kernel's P2PDMA means for a GPU without a direct path.
fn kernel_reason(topo: &Topology) -> GpuReason {
    match &topo.kernel {
        Some(k) => match k.p2pdma {
            Some(false) => GpuReason::KernelWithoutP2pdma { release: k.release.clone(), source: k.p2pdma_source.clone().unwrap_or_default() },
            Some(true) => GpuReason::KernelHasP2pdma { release: k.release.clone(), new_enough: k.version().map(|v| v >= (6, 2)) },
            None => GpuReason::KernelP2pdmaUnknown { why: k.p2pdma_source.clone().unwrap_or_else(|| "nothing said".into()) },
        },
        None => GpuReason::KernelP2pdmaUnknown { why: "no kernel config or symbol list was read (a topology file, or a sysfs capture without them)".into() },
    }
}

/// Every GPU's path, in address order.
pub fn memory_paths(topo: &Topology) -> Vec<GpuMemoryPath> {
    gpus(topo).map(|d| memory_path(topo, d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GpuModules, P2pProvider};

    fn gpu_topology(modules: Option<GpuModules>) -> Topology {
        let mut t = Topology::empty();
        let mut d = PciDevice::new("0000:00:06.0".parse().unwrap(), NVIDIA, 0x2330, 0x030200);
        d.kind = DeviceKind::Gpu;
        d.bars = vec![
            Bar { index: 0, start: 0x1020_0200_0000, size: 16 << 20, mem32: false },
            Bar { index: 2, start: 0x1000_0000_0000, size: 128 << 30, mem32: false },
            Bar { index: 4, start: 0x1020_0000_0000, size: 32 << 20, mem32: false },
        ];
        t.devices.push(d);
        t.gpu_modules = modules;
        t
    }

    #[test]
    fn an_nvidia_gpu_without_nvidia_fs_is_staged_and_says_why() {
        let t = gpu_topology(Some(GpuModules { nvidia: true, nvidia_fs: false, nvidia_peermem: false }));
        let p = &memory_paths(&t)[0];
        assert!(!p.direct);
        assert_eq!((p.aperture_bar, p.aperture_bytes), (Some(1), Some(128 << 30)));
        assert!(p.reasons.iter().any(|r| r.reason == GpuReason::NoNvidiaFs && r.severity == Severity::Blocks && r.remedy.is_some()));
        assert!(p.describe().starts_with("storage -> GPU memory: staged through pinned host memory"), "{}", p.describe());
        assert_eq!(p.name, "gpu0");
    }

    #[test]
    fn gpus_are_named_in_pci_address_order_and_codes_are_the_json_tags() {
        let mut t = gpu_topology(None);
        let mut d = t.devices[0].clone();
        d.bdf = "0000:00:05.0".parse().unwrap();
        t.devices.insert(0, d);
        let (a, b): (Bdf, Bdf) = ("0000:00:05.0".parse().unwrap(), "0000:00:06.0".parse().unwrap());
        assert_eq!((gpu_name(&t, a).as_deref(), gpu_name(&t, b).as_deref()), (Some("gpu0"), Some("gpu1")));
        assert_eq!((gpu_by_name(&t, "gpu0"), gpu_by_name(&t, "gpu1")), (Some(a), Some(b)));
        for bad in ["gpu2", "gpu01", "gpu", "gpu-1", "cpu0"] {
            assert_eq!(gpu_by_name(&t, bad), None, "{bad}");
        }
        for r in [
            GpuReason::P2pProvider { size_bytes: 1 },
            GpuReason::NotAP2pProvider { vendor_driver: true },
            GpuReason::NvidiaFsLoaded,
            GpuReason::NoNvidiaFs,
            GpuReason::ModulesUnknown,
            GpuReason::IommuTranslates { domain: None },
            GpuReason::KernelWithoutP2pdma { release: None, source: String::new() },
            GpuReason::KernelHasP2pdma { release: None, new_enough: Some(true) },
            GpuReason::KernelP2pdmaUnknown { why: String::new() },
        ] {
            assert_eq!(serde_json::to_value(&r).unwrap()["reason"], r.code());
        }
    }

    #[test]
    fn nvidia_fs_makes_the_path_direct_and_a_translating_iommu_is_a_caveat() {
        let mut t = gpu_topology(Some(GpuModules { nvidia: true, nvidia_fs: true, nvidia_peermem: false }));
        assert!(memory_paths(&t)[0].direct);
        t.iommu.status = IommuStatus::On;
        t.iommu.default_domain = Some("DMA".into());
        let p = &memory_paths(&t)[0];
        assert!(p.direct);
        assert!(p.reasons.iter().any(|r| matches!(r.reason, GpuReason::IommuTranslates { .. }) && r.severity == Severity::Caveat));
        t.iommu.default_domain = Some("identity".into());
        assert!(!memory_paths(&t)[0].reasons.iter().any(|r| matches!(r.reason, GpuReason::IommuTranslates { .. })));
    }

    #[test]
    fn the_kernels_p2pdma_is_a_reason_where_nothing_else_opens_a_direct_path() {
        use crate::kernel::KernelInfo;
        let reason = |t: &Topology| memory_paths(t)[0].reasons.iter().find(|r| r.reason.code().starts_with("kernel")).map(|r| (r.reason.clone(), r.severity));
        let mut t = gpu_topology(Some(GpuModules { nvidia: true, nvidia_fs: false, nvidia_peermem: false }));
        assert!(matches!(reason(&t), Some((GpuReason::KernelP2pdmaUnknown { .. }, Severity::Caveat))));
        let k = |release: &str, p2pdma| Some(KernelInfo { release: Some(release.into()), p2pdma, p2pdma_source: Some("/boot/config-x".into()) });
        t.kernel = k("6.18.0", Some(false));
        let p = &memory_paths(&t)[0];
        assert!(!p.direct);
        let r = p.reasons.iter().find(|r| matches!(r.reason, GpuReason::KernelWithoutP2pdma { .. })).expect("the kernel's reason");
        assert_eq!(r.severity, Severity::Blocks);
        assert!(r.text.contains("(6.18.0) is built without P2PDMA (CONFIG_PCI_P2PDMA not set, read in /boot/config-x)"), "{}", r.text);
        t.kernel = k("6.8.0-50-generic", Some(true));
        assert!(matches!(reason(&t), Some((GpuReason::KernelHasP2pdma { new_enough: Some(true), .. }, Severity::Caveat))));
        t.kernel = k("5.15.0", Some(true));
        let p = &memory_paths(&t)[0];
        assert!(p.reasons.iter().any(|r| r.text.contains("needs 6.2 or later") && r.severity == Severity::Blocks), "{p:?}");
        t.kernel.as_mut().unwrap().release = None;
        let p = &memory_paths(&t)[0];
        assert!(p.reasons.iter().any(|r| r.text.contains("its release unknown") && r.severity == Severity::Caveat), "{p:?}");
        // With nvidia-fs the path is direct and the kernel's P2PDMA does not matter.
        t.gpu_modules = Some(GpuModules { nvidia: true, nvidia_fs: true, nvidia_peermem: false });
        t.kernel = k("6.18.0", Some(false));
        assert_eq!(reason(&t), None);
    }

    #[test]
    fn unknown_modules_are_not_a_direct_path_and_a_p2p_provider_is() {
        let t = gpu_topology(None);
        let p = &memory_paths(&t)[0];
        assert!(!p.direct);
        assert!(p.reasons.iter().any(|r| r.reason == GpuReason::ModulesUnknown));
        let mut t = gpu_topology(None);
        t.devices[0].p2pmem = Some(P2pProvider { size_bytes: 1 << 30, available_bytes: 1 << 30, published: true, allocate: true });
        let p = &memory_paths(&t)[0];
        assert!(p.direct);
        assert!(matches!(p.reasons[0].reason, GpuReason::P2pProvider { .. }));
    }
}
