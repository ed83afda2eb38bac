//! NVMe Controller Memory Buffer registers (`include/linux/nvme.h`) and the rules the Linux
//! nvme-pci driver applies before it registers and publishes a CMB as P2P memory
//! (`nvme_map_cmb()` in `drivers/nvme/host/pci.c`).

use serde::{Deserialize, Serialize};

/// `memremap_compat_align()` default: a CMB whose size or BAR start is not aligned to this
/// is silently not registered.
pub const CMB_REQUIRED_ALIGN_BYTES: u64 = 2 * 1024 * 1024;

/// CMBSZ bits.
pub const CMBSZ_SQS: u32 = 1 << 0;
pub const CMBSZ_CQS: u32 = 1 << 1;
pub const CMBSZ_LISTS: u32 = 1 << 2;
pub const CMBSZ_RDS: u32 = 1 << 3;
pub const CMBSZ_WDS: u32 = 1 << 4;

/// Why the nvme driver did not register a CMB as P2P memory: what the registers and the BAR
/// show (`Registers`, `BarAbsent`, `Alignment`), or, where they show nothing wrong, what the
/// verdict concludes from the kernel (`KernelWithoutP2pdma`, `Unexplained`). The remedy follows
/// from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CmbFault {
    /// CMBSZ/CMBLOC themselves: a reserved size unit, a size of 0, an offset past the BAR.
    Registers,
    /// CMBLOC names a BAR of zero length (`resource` lists it as zeros).
    BarAbsent,
    /// The size (clamped to the BAR) or the BAR's start is not 2 MiB aligned.
    Alignment,
    /// The CMB looks registrable, but the kernel is built without `CONFIG_PCI_P2PDMA`.
    KernelWithoutP2pdma,
    /// The CMB looks registrable and nothing read says why it is not registered.
    Unexplained,
}

/// The two raw registers as `/sys/class/nvme/nvmeX/{cmbloc,cmbsz}` print them (decimal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cmb {
    /// CMBSZ (offset 0x3c): SQS b0, CQS b1, LISTS b2, RDS b3, WDS b4, SZU 11:8, SZ 31:12.
    #[serde(with = "crate::hexnum::u32_hex")]
    pub cmbsz: u32,
    /// CMBLOC (offset 0x38): BIR 2:0, OFST 31:12 (in SZU units).
    #[serde(with = "crate::hexnum::u32_hex")]
    pub cmbloc: u32,
}

impl Cmb {
    /// Encodes registers for a CMB of `size_bytes` (rounded down to the unit) at offset 0 of
    /// `bar`, with the given support bits (`CMBSZ_*`). Picks the largest unit that divides the size.
    pub fn encode(size_bytes: u64, bar: u8, flags: u32) -> Cmb {
        let mut szu = 0u32;
        while szu < 6 {
            let next_unit = 4096u64 << (4 * (szu + 1));
            if !size_bytes.is_multiple_of(next_unit) || size_bytes / next_unit == 0 {
                break;
            }
            szu += 1;
        }
        let unit = 4096u64 << (4 * szu);
        let sz = (size_bytes / unit).min(0xf_ffff) as u32;
        Cmb {
            cmbsz: (sz << 12) | (szu << 8) | (flags & 0x1f),
            cmbloc: (bar as u32) & 0x7,
        }
    }

    /// Size unit in bytes: 4 KiB * 16^SZU; `None` for reserved SZU values (> 6).
    pub fn unit_bytes(&self) -> Option<u64> {
        let szu = (self.cmbsz >> 8) & 0xf;
        if szu > 6 {
            None
        } else {
            Some(4096u64 << (4 * szu))
        }
    }

    /// The size the controller advertises, `None` if SZU is reserved.
    pub fn size_bytes(&self) -> Option<u64> {
        Some(((self.cmbsz >> 12) as u64) * self.unit_bytes()?)
    }

    /// Offset within the BAR.
    pub fn offset_bytes(&self) -> Option<u64> {
        Some(((self.cmbloc >> 12) as u64) * self.unit_bytes()?)
    }

    /// The BAR indicator (BIR).
    pub fn bar(&self) -> u8 {
        (self.cmbloc & 0x7) as u8
    }

    pub fn sqs(&self) -> bool {
        self.cmbsz & CMBSZ_SQS != 0
    }
    pub fn cqs(&self) -> bool {
        self.cmbsz & CMBSZ_CQS != 0
    }
    pub fn lists(&self) -> bool {
        self.cmbsz & CMBSZ_LISTS != 0
    }
    pub fn rds(&self) -> bool {
        self.cmbsz & CMBSZ_RDS != 0
    }
    pub fn wds(&self) -> bool {
        self.cmbsz & CMBSZ_WDS != 0
    }

    /// The driver publishes the CMB only if both RDS and WDS are set.
    pub fn publishable(&self) -> bool {
        self.rds() && self.wds()
    }

    /// The support bits in words, e.g. `SQS LISTS RDS WDS`.
    pub fn flags_text(&self) -> String {
        let names = [
            (CMBSZ_SQS, "SQS"),
            (CMBSZ_CQS, "CQS"),
            (CMBSZ_LISTS, "LISTS"),
            (CMBSZ_RDS, "RDS"),
            (CMBSZ_WDS, "WDS"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(b, _)| self.cmbsz & b != 0)
            .map(|(_, n)| *n)
            .collect();
        if set.is_empty() {
            "none".to_string()
        } else {
            set.join(" ")
        }
    }

    /// The missing bits that stop publication, e.g. `["RDS", "WDS"]`.
    pub fn missing_for_publish(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if !self.rds() {
            v.push("RDS");
        }
        if !self.wds() {
            v.push("WDS");
        }
        v
    }

    /// Why `nvme_map_cmb()` would not register this CMB, given the BAR's start and size when
    /// known (a size of 0: the BAR does not exist). `None` means it would register it (or we
    /// cannot tell).
    pub fn registration_problem(&self, bar_start: Option<u64>, bar_size: Option<u64>) -> Option<(CmbFault, String)> {
        let Some(mut size) = self.size_bytes() else {
            return Some((CmbFault::Registers, format!("CMBSZ {:#x} has a reserved size unit (SZU > 6)", self.cmbsz)));
        };
        if size == 0 {
            return Some((CmbFault::Registers, "CMBSZ.SZ is 0: no CMB".to_string()));
        }
        let offset = self.offset_bytes().unwrap_or(0);
        if let Some(bar_size) = bar_size {
            // nvme_map_cmb() clamps the size to the BAR's length, 0 here, and
            // pci_p2pdma_add_resource() refuses an offset at or past the BAR's end.
            if bar_size == 0 {
                return Some((
                    CmbFault::BarAbsent,
                    format!(
                        "BAR {} absent (zero length in `resource`), yet CMBLOC puts the CMB there; nvme_map_cmb clamps the CMB to the BAR's length and pci_p2pdma_add_resource refuses it",
                        self.bar()
                    ),
                ));
            }
            if offset >= bar_size {
                return Some((
                    CmbFault::Registers,
                    format!("CMB offset {offset:#x} lies beyond BAR {} ({bar_size:#x} bytes)", self.bar()),
                ));
            }
            size = size.min(bar_size - offset);
        }
        if size % CMB_REQUIRED_ALIGN_BYTES != 0 {
            return Some((
                CmbFault::Alignment,
                format!(
                    "CMB size {} is not a multiple of 2 MiB (memremap_compat_align); the driver skips it silently",
                    peerpath_metrics::human_bytes(size)
                ),
            ));
        }
        if let Some(start) = bar_start {
            if start % CMB_REQUIRED_ALIGN_BYTES != 0 {
                return Some((
                    CmbFault::Alignment,
                    format!("BAR {} starts at {start:#x}, not 2 MiB aligned; the driver skips the CMB silently", self.bar()),
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode() {
        let c = Cmb::encode(512 << 20, 2, CMBSZ_RDS | CMBSZ_WDS | CMBSZ_SQS);
        assert_eq!(c.size_bytes(), Some(512 << 20));
        assert_eq!(c.bar(), 2);
        assert!(c.publishable() && c.sqs() && !c.cqs());
        assert_eq!(c.flags_text(), "SQS RDS WDS");
        let small = Cmb::encode(1 << 20, 2, CMBSZ_RDS | CMBSZ_WDS);
        assert_eq!(small.size_bytes(), Some(1 << 20));
        assert!(small.registration_problem(Some(0x1000_0000), Some(1 << 20)).is_some());
        assert!(c.registration_problem(Some(0x4000_0000), Some(1 << 30)).is_none());
        assert!(c.registration_problem(Some(0x4010_0000), Some(1 << 30)).is_some());
        assert_eq!(c.registration_problem(Some(0), Some(0)).map(|p| p.0), Some(CmbFault::BarAbsent));
        let nowds = Cmb::encode(64 << 20, 2, CMBSZ_SQS | CMBSZ_CQS);
        assert_eq!(nowds.missing_for_publish(), vec!["RDS", "WDS"]);
    }

    #[test]
    fn reserved_unit_is_not_a_panic() {
        let c = Cmb {
            cmbsz: 0xffff_ffff,
            cmbloc: 0xffff_ffff,
        };
        assert_eq!(c.size_bytes(), None);
        assert!(c.registration_problem(None, None).is_some());
    }
}
