//! The kernel's host-bridge allow-list for P2P through the root complex, and its CPU check.
//!
//! Taken from `pci_p2pdma_whitelist[]` and `cpu_supports_p2pdma()` in `drivers/pci/p2pdma.c`
//! (pci.git, 2025/2026). The kernel matches the *host bridge device*: the first device on the
//! root bus, if it is devfn 00.0 or a Root Port. AMD's old host bridge ids (0x1450, 0x15d0,
//! 0x1630) were removed from the table when the CPU-family check replaced them.

use crate::model::{Cpu, CpuVendor};

pub const PCI_VENDOR_ID_INTEL: u16 = 0x8086;
pub const PCI_VENDOR_ID_GOOGLE: u16 = 0x1ae0;
pub const PCI_VENDOR_ID_NVIDIA: u16 = 0x10de;
pub const PCI_VENDOR_ID_ZHAOXIN: u16 = 0x1d17;

/// Which device ids of a vendor an entry matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceMatch {
    Id(u16),
    /// `PCI_ANY_ID`
    Any,
}

/// One row of the allow-list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllowListEntry {
    pub vendor: u16,
    pub device: DeviceMatch,
    /// `REQ_SAME_HOST_BRIDGE`: P2P is allowed only when both devices hang off this one host
    /// bridge, not between two host bridges of this kind.
    pub same_host_bridge_only: bool,
    /// The hardware family, as the kernel's comment names it.
    pub family: &'static str,
}

const fn entry(vendor: u16, device: u16, same: bool, family: &'static str) -> AllowListEntry {
    AllowListEntry {
        vendor,
        device: DeviceMatch::Id(device),
        same_host_bridge_only: same,
        family,
    }
}

/// The allow-list, in the kernel's order (the first vendor/device match decides).
pub const HOST_BRIDGE_ALLOW_LIST: &[AllowListEntry] = &[
    // Intel Xeon E5/Core i7 (Sandy Bridge-EP/E): only within one host bridge.
    entry(PCI_VENDOR_ID_INTEL, 0x3c00, true, "Intel Xeon E5/Core i7 (Sandy Bridge-E)"),
    entry(PCI_VENDOR_ID_INTEL, 0x3c01, true, "Intel Xeon E5/Core i7 (Sandy Bridge-E)"),
    // Intel Xeon E7 v3/Xeon E5 v3/Core i7 (Haswell-E): only within one host bridge.
    entry(PCI_VENDOR_ID_INTEL, 0x2f00, true, "Intel Xeon E7 v3/E5 v3/Core i7 (Haswell-E)"),
    entry(PCI_VENDOR_ID_INTEL, 0x2f01, true, "Intel Xeon E7 v3/E5 v3/Core i7 (Haswell-E)"),
    // Intel Skylake-E (Xeon Scalable) root ports and host bridge; also Ice Lake (0x09a2).
    entry(PCI_VENDOR_ID_INTEL, 0x2030, false, "Intel Skylake-E root port"),
    entry(PCI_VENDOR_ID_INTEL, 0x2031, false, "Intel Skylake-E root port"),
    entry(PCI_VENDOR_ID_INTEL, 0x2032, false, "Intel Skylake-E root port"),
    entry(PCI_VENDOR_ID_INTEL, 0x2033, false, "Intel Skylake-E root port"),
    entry(PCI_VENDOR_ID_INTEL, 0x2020, false, "Intel Skylake-E host bridge"),
    entry(PCI_VENDOR_ID_INTEL, 0x09a2, false, "Intel Ice Lake/Sapphire Rapids host bridge"),
    // Intel data accelerators that sit on their own root bus (Sapphire Rapids and later).
    entry(PCI_VENDOR_ID_INTEL, 0x0b25, false, "Intel DSA (Sapphire Rapids)"),
    entry(PCI_VENDOR_ID_INTEL, 0x0cfe, false, "Intel IAX (Sapphire Rapids)"),
    entry(PCI_VENDOR_ID_INTEL, 0x11fb, false, "Intel DSA (Granite Rapids-D)"),
    entry(PCI_VENDOR_ID_INTEL, 0x1212, false, "Intel DSA (Diamond Rapids)"),
    entry(PCI_VENDOR_ID_INTEL, 0x1216, false, "Intel IAA (Diamond Rapids)"),
    entry(PCI_VENDOR_ID_INTEL, 0x4940, false, "Intel QAT 4xxx"),
    entry(PCI_VENDOR_ID_INTEL, 0x4942, false, "Intel QAT 401xx"),
    entry(PCI_VENDOR_ID_INTEL, 0x4944, false, "Intel QAT 402xx"),
    entry(PCI_VENDOR_ID_INTEL, 0x4946, false, "Intel QAT 420xx"),
    entry(PCI_VENDOR_ID_INTEL, 0x4948, false, "Intel QAT 6xxx"),
    // Google SoCs: any device.
    AllowListEntry {
        vendor: PCI_VENDOR_ID_GOOGLE,
        device: DeviceMatch::Any,
        same_host_bridge_only: false,
        family: "Google SoCs",
    },
    // NVIDIA CPUs (Grace).
    entry(PCI_VENDOR_ID_NVIDIA, 0x2f95, false, "NVIDIA CPU (Grace)"),
    entry(PCI_VENDOR_ID_NVIDIA, 0x2f96, false, "NVIDIA CPU (Grace)"),
    entry(PCI_VENDOR_ID_NVIDIA, 0x2f97, false, "NVIDIA CPU (Grace)"),
    entry(PCI_VENDOR_ID_NVIDIA, 0x2f98, false, "NVIDIA CPU (Grace)"),
    // Zhaoxin KX-6000/KH-40000/KX-6000G/KX-7000/KH-50000.
    entry(PCI_VENDOR_ID_ZHAOXIN, 0x1003, true, "Zhaoxin KX-6000/KH-40000"),
    entry(PCI_VENDOR_ID_ZHAOXIN, 0x1005, true, "Zhaoxin KX-6000G/KX-7000"),
    entry(PCI_VENDOR_ID_ZHAOXIN, 0x1006, true, "Zhaoxin KX-6000G/KX-7000"),
    entry(PCI_VENDOR_ID_ZHAOXIN, 0x1007, true, "Zhaoxin KX-6000G/KX-7000"),
    entry(PCI_VENDOR_ID_ZHAOXIN, 0x1008, false, "Zhaoxin KH-50000"),
];

/// The first allow-list row matching a host bridge device, as the kernel's loop finds it.
pub fn lookup(vendor: u16, device: u16) -> Option<&'static AllowListEntry> {
    HOST_BRIDGE_ALLOW_LIST.iter().find(|e| {
        e.vendor == vendor
            && match e.device {
                DeviceMatch::Any => true,
                DeviceMatch::Id(id) => id == device,
            }
    })
}

/// `cpu_supports_p2pdma()`: x86 AMD with family >= 0x17 (Zen or newer).
pub fn cpu_supports_p2pdma(cpu: &Cpu) -> bool {
    cpu.arch == "x86" && cpu.vendor == CpuVendor::Amd && cpu.family.is_some_and(|f| f >= 0x17)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lookups() {
        assert!(lookup(0x8086, 0x2020).is_some());
        assert!(lookup(0x8086, 0x3c00).unwrap().same_host_bridge_only);
        assert!(lookup(0x1ae0, 0x1234).is_some());
        assert!(lookup(0x8086, 0x6f00).is_none());
        assert!(lookup(0x1022, 0x1480).is_none());
    }
}
