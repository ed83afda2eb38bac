//! Decoding PCI configuration space, as read from `/sys/bus/pci/devices/<BDF>/config`:
//! the PCIe capability (port type) and the ACS extended capability (control register).
//!
//! sysfs returns 64 bytes to an unprivileged reader, 256 bytes for a conventional PCI device and
//! 4096 bytes (extended config space) to a reader with CAP_SYS_ADMIN on a PCIe device
//! (`pci_read_config`, `drivers/pci/pci-sysfs.c`). Every walk here is bounded and bounds-checked:
//! the bytes may be garbage.

use serde::{Deserialize, Serialize};

/// PCI capability id of the PCI Express capability.
const CAP_ID_PCIE: u8 = 0x10;
/// Extended capability id of Access Control Services.
pub const EXT_CAP_ID_ACS: u16 = 0x000d;
/// ACS control register offset within the ACS capability.
pub const ACS_CTRL_OFFSET: usize = 6;

/// ACS control bits (`include/uapi/linux/pci_regs.h`).
pub const ACS_SV: u16 = 0x0001;
pub const ACS_TB: u16 = 0x0002;
pub const ACS_RR: u16 = 0x0004;
pub const ACS_CR: u16 = 0x0008;
pub const ACS_UF: u16 = 0x0010;
pub const ACS_EC: u16 = 0x0020;
pub const ACS_DT: u16 = 0x0040;
/// The bits that make the kernel's `pci_bridge_has_acs_redir()` true.
pub const ACS_REDIRECT_MASK: u16 = ACS_RR | ACS_CR | ACS_EC;

/// What the PCIe capability says a function is (PCI_EXP_FLAGS_TYPE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcieType {
    Endpoint,
    LegacyEndpoint,
    RootPort,
    SwitchUpstream,
    SwitchDownstream,
    PcieToPciBridge,
    PciToPcieBridge,
    RootComplexIntegrated,
    RootComplexEventCollector,
    Other(u8),
}

impl PcieType {
    fn from_flags(flags: u16) -> PcieType {
        match ((flags >> 4) & 0xf) as u8 {
            0 => PcieType::Endpoint,
            1 => PcieType::LegacyEndpoint,
            4 => PcieType::RootPort,
            5 => PcieType::SwitchUpstream,
            6 => PcieType::SwitchDownstream,
            7 => PcieType::PcieToPciBridge,
            8 => PcieType::PciToPcieBridge,
            9 => PcieType::RootComplexIntegrated,
            10 => PcieType::RootComplexEventCollector,
            n => PcieType::Other(n),
        }
    }
}

/// The ACS state of one function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AcsState {
    /// Not readable: config space beyond 256 bytes needs CAP_SYS_ADMIN, or the file is absent.
    Unknown { reason: String },
    /// Config space was read and has no ACS capability: nothing to redirect.
    Absent,
    /// The ACS control register.
    Control {
        #[serde(with = "crate::hexnum::u16_hex")]
        ctrl: u16,
    },
}

impl Default for AcsState {
    fn default() -> Self {
        AcsState::Unknown {
            reason: "not given in the topology file".to_string(),
        }
    }
}

impl AcsState {
    /// `Some(true)` if RR, CR or EC is set (the kernel then routes P2P TLPs to the root
    /// complex), `Some(false)` if known clear or absent, `None` if unknown.
    pub fn redirects(&self) -> Option<bool> {
        match self {
            AcsState::Unknown { .. } => None,
            AcsState::Absent => Some(false),
            AcsState::Control { ctrl } => Some(ctrl & ACS_REDIRECT_MASK != 0),
        }
    }

    /// The set control bits in words, e.g. `SV RR CR UF`.
    pub fn describe(&self) -> String {
        match self {
            AcsState::Unknown { reason } => format!("unknown ({reason})"),
            AcsState::Absent => "no ACS capability".to_string(),
            AcsState::Control { ctrl } => {
                let names = [
                    (ACS_SV, "SV"),
                    (ACS_TB, "TB"),
                    (ACS_RR, "RR"),
                    (ACS_CR, "CR"),
                    (ACS_UF, "UF"),
                    (ACS_EC, "EC"),
                    (ACS_DT, "DT"),
                ];
                let set: Vec<&str> = names
                    .iter()
                    .filter(|(bit, _)| ctrl & bit != 0)
                    .map(|(_, n)| *n)
                    .collect();
                if set.is_empty() {
                    "ACSCtl all clear".to_string()
                } else {
                    format!("ACSCtl {}", set.join(" "))
                }
            }
        }
    }
}

fn read_u16(cfg: &[u8], off: usize) -> Option<u16> {
    let b = cfg.get(off..off.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

fn read_u32(cfg: &[u8], off: usize) -> Option<u32> {
    let b = cfg.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Walks the conventional capability list (at most 48 entries) for the PCIe capability.
pub fn pcie_type(cfg: &[u8]) -> Option<PcieType> {
    // Status register bit 4: capability list present.
    let status = read_u16(cfg, 0x06)?;
    if status & 0x0010 == 0 {
        return None;
    }
    let mut pos = (*cfg.get(0x34)? & 0xfc) as usize;
    for _ in 0..48 {
        if pos < 0x40 {
            return None;
        }
        let id = *cfg.get(pos)?;
        if id == CAP_ID_PCIE {
            return Some(PcieType::from_flags(read_u16(cfg, pos + 2)?));
        }
        pos = (*cfg.get(pos + 1)? & 0xfc) as usize;
    }
    None
}

/// Finds an extended capability (at most 256 entries walked, offsets >= 0x100 only).
pub fn find_ext_cap(cfg: &[u8], id: u16) -> Option<usize> {
    let mut pos = 0x100usize;
    for _ in 0..256 {
        let header = read_u32(cfg, pos)?;
        if header == 0 || header == 0xffff_ffff {
            return None;
        }
        if (header & 0xffff) as u16 == id {
            return Some(pos);
        }
        let next = ((header >> 20) & 0xffc) as usize;
        if next < 0x100 {
            return None;
        }
        pos = next;
    }
    None
}

/// Reads the ACS state from config space bytes, saying why when it cannot.
pub fn acs_state(cfg: &[u8]) -> AcsState {
    if cfg.len() <= 64 {
        return AcsState::Unknown {
            reason: format!(
                "only {} bytes of config space readable; ACS needs the extended config space (run as root / CAP_SYS_ADMIN, or see `lspci -vvv` ACSCtl)",
                cfg.len()
            ),
        };
    }
    if cfg.len() <= 256 {
        // 256 bytes: a conventional PCI function, or PCIe without extended config access.
        return if pcie_type(cfg).is_some() {
            AcsState::Unknown {
                reason: "PCIe function but the extended config space (beyond 256 bytes) is not readable".to_string(),
            }
        } else {
            AcsState::Absent
        };
    }
    match find_ext_cap(cfg, EXT_CAP_ID_ACS) {
        Some(pos) => match read_u16(cfg, pos + ACS_CTRL_OFFSET) {
            Some(ctrl) => AcsState::Control { ctrl },
            None => AcsState::Unknown {
                reason: "ACS capability truncated".to_string(),
            },
        },
        None => AcsState::Absent,
    }
}

/// Builds config space bytes for a fake device (used by the fixture builder and tests):
/// vendor/device/class, optionally a PCIe capability of the given type and an ACS capability.
pub fn synth_config(
    vendor: u16,
    device: u16,
    class: u32,
    header_type_bridge: bool,
    pcie: Option<u8>,
    acs_ctrl: Option<u16>,
) -> Vec<u8> {
    let len = if pcie.is_some() { 4096 } else { 256 };
    let mut c = vec![0u8; len];
    c[0..2].copy_from_slice(&vendor.to_le_bytes());
    c[2..4].copy_from_slice(&device.to_le_bytes());
    c[0x09] = (class & 0xff) as u8;
    c[0x0a] = ((class >> 8) & 0xff) as u8;
    c[0x0b] = ((class >> 16) & 0xff) as u8;
    c[0x0e] = if header_type_bridge { 0x01 } else { 0x00 };
    if let Some(t) = pcie {
        c[0x06] = 0x10; // capability list present
        c[0x34] = 0x40;
        c[0x40] = CAP_ID_PCIE;
        c[0x41] = 0x00; // end of list
        let flags: u16 = 0x0002 | ((t as u16 & 0xf) << 4);
        c[0x42..0x44].copy_from_slice(&flags.to_le_bytes());
        if let Some(ctrl) = acs_ctrl {
            // ACS at 0x100, version 1, no next capability.
            let header: u32 = EXT_CAP_ID_ACS as u32 | (1 << 16);
            c[0x100..0x104].copy_from_slice(&header.to_le_bytes());
            let cap: u16 = ACS_SV | ACS_TB | ACS_RR | ACS_CR | ACS_UF | ACS_EC;
            c[0x104..0x106].copy_from_slice(&cap.to_le_bytes());
            c[0x106..0x108].copy_from_slice(&ctrl.to_le_bytes());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_synthesized_acs() {
        let cfg = synth_config(0x10b5, 0x8747, 0x060400, true, Some(6), Some(ACS_SV | ACS_RR | ACS_CR));
        assert_eq!(pcie_type(&cfg), Some(PcieType::SwitchDownstream));
        let acs = acs_state(&cfg);
        assert_eq!(acs.redirects(), Some(true));
        assert_eq!(acs.describe(), "ACSCtl SV RR CR");
        let clear = synth_config(0x10b5, 0x8747, 0x060400, true, Some(6), Some(0));
        assert_eq!(acs_state(&clear).redirects(), Some(false));
        let none = synth_config(0x10b5, 0x8747, 0x060400, true, Some(6), None);
        assert_eq!(acs_state(&none), AcsState::Absent);
    }

    #[test]
    fn short_config_is_unknown() {
        let cfg = synth_config(0x8086, 0x1234, 0x060400, true, Some(4), Some(ACS_RR));
        assert!(matches!(acs_state(&cfg[..64]), AcsState::Unknown { .. }));
        assert!(matches!(acs_state(&cfg[..256]), AcsState::Unknown { .. }));
        let conventional = synth_config(0x1af4, 0x1042, 0x018000, false, None, None);
        assert_eq!(acs_state(&conventional), AcsState::Absent);
    }

    #[test]
    fn loops_in_capability_lists_terminate() {
        let mut cfg = vec![0u8; 4096];
        cfg[0x06] = 0x10;
        cfg[0x34] = 0x40;
        cfg[0x40] = 0x05;
        cfg[0x41] = 0x40; // points to itself
        assert_eq!(pcie_type(&cfg), None);
        // Extended capability pointing to itself.
        let header: u32 = 0x0001 | (0x100 << 20);
        cfg[0x100..0x104].copy_from_slice(&header.to_le_bytes());
        assert_eq!(find_ext_cap(&cfg, EXT_CAP_ID_ACS), None);
    }
}
