//! PCI addresses: `DDDD:BB:DD.F` (domain, bus, device, function).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A PCI function address as sysfs names it, e.g. `0000:01:00.0`.
///
/// The domain is 32 bits wide because Intel VMD domains have five hex digits (`10000:00:00.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Bdf {
    pub domain: u32,
    pub bus: u8,
    /// 0..=31
    pub device: u8,
    /// 0..=7
    pub function: u8,
}

impl Bdf {
    /// Builds an address; `device` must be < 32 and `function` < 8.
    pub fn new(domain: u32, bus: u8, device: u8, function: u8) -> Option<Bdf> {
        if device < 32 && function < 8 {
            Some(Bdf {
                domain,
                bus,
                device,
                function,
            })
        } else {
            None
        }
    }

    /// `devfn` as the kernel packs it: device << 3 | function.
    pub fn devfn(&self) -> u8 {
        (self.device << 3) | self.function
    }

    /// The name of the root bus this address would sit on if it were on a root bus
    /// (`pci0000:00` for `0000:00:01.0`).
    pub fn root_bus_name(&self) -> String {
        format!("pci{:04x}:{:02x}", self.domain, self.bus)
    }
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.domain, self.bus, self.device, self.function
        )
    }
}

/// Why a string is not a PCI address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a PCI address (DDDD:BB:DD.F, e.g. 0000:01:00.0)")]
pub struct BdfParseError {
    pub input: String,
}

impl FromStr for Bdf {
    type Err = BdfParseError;

    /// Accepts `DDDD:BB:DD.F` (4 or more domain digits) and the short `BB:DD.F` (domain 0).
    fn from_str(s: &str) -> Result<Bdf, BdfParseError> {
        let err = || BdfParseError {
            input: s.chars().take(64).collect(),
        };
        let (rest, function) = s.rsplit_once('.').ok_or_else(err)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [d, b, dev] if d.len() >= 4 && d.len() <= 8 => (*d, *b, *dev),
            [b, dev] => ("0000", *b, *dev),
            _ => return Err(err()),
        };
        let hex_ok = |t: &str, len: usize| t.len() == len && t.bytes().all(|c| c.is_ascii_hexdigit());
        if !domain.bytes().all(|c| c.is_ascii_hexdigit())
            || !hex_ok(bus, 2)
            || !hex_ok(device, 2)
            || !hex_ok(function, 1)
        {
            return Err(err());
        }
        let domain = u32::from_str_radix(domain, 16).map_err(|_| err())?;
        let bus = u8::from_str_radix(bus, 16).map_err(|_| err())?;
        let device = u8::from_str_radix(device, 16).map_err(|_| err())?;
        let function = u8::from_str_radix(function, 16).map_err(|_| err())?;
        Bdf::new(domain, bus, device, function).ok_or_else(err)
    }
}

impl TryFrom<String> for Bdf {
    type Error = BdfParseError;
    fn try_from(s: String) -> Result<Bdf, BdfParseError> {
        s.parse()
    }
}

impl From<Bdf> for String {
    fn from(b: Bdf) -> String {
        b.to_string()
    }
}

/// Parses a root bus directory name such as `pci0000:00` into (domain, bus).
pub fn parse_root_bus_name(name: &str) -> Option<(u32, u8)> {
    let rest = name.strip_prefix("pci")?;
    let (domain, bus) = rest.split_once(':')?;
    if domain.len() < 4
        || domain.len() > 8
        || bus.len() != 2
        || !domain.bytes().all(|c| c.is_ascii_hexdigit())
        || !bus.bytes().all(|c| c.is_ascii_hexdigit())
    {
        return None;
    }
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u8::from_str_radix(bus, 16).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let b: Bdf = "0000:01:00.0".parse().unwrap();
        assert_eq!(b, Bdf::new(0, 1, 0, 0).unwrap());
        assert_eq!(b.to_string(), "0000:01:00.0");
        let v: Bdf = "10000:e1:1f.7".parse().unwrap();
        assert_eq!(v.to_string(), "10000:e1:1f.7");
        assert_eq!(v.devfn(), (0x1f << 3) | 7);
        assert_eq!("3b:00.1".parse::<Bdf>().unwrap().to_string(), "0000:3b:00.1");
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "0000:01:00", "0000:01:20.0", "0000:01:00.8", "zz:00.0", "0000:1:00.0", "0:01:00.0"] {
            assert!(s.parse::<Bdf>().is_err(), "{s}");
        }
    }

    #[test]
    fn root_bus_names() {
        assert_eq!(parse_root_bus_name("pci0000:00"), Some((0, 0)));
        assert_eq!(parse_root_bus_name("pci0001:c0"), Some((1, 0xc0)));
        assert_eq!(parse_root_bus_name("pcie"), None);
        assert_eq!(parse_root_bus_name("pci_bus"), None);
    }
}
