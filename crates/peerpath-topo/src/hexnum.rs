//! Serde helpers: PCI ids and registers are written as hex strings (`"0x1de5"`) in topology
//! files, and read from hex strings, decimal strings or plain TOML integers (`0x1de5` is a valid
//! TOML integer too), so hand-written files can use whichever is natural.

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;
use std::fmt;

struct HexVisitor {
    max: u64,
}

impl Visitor<'_> for HexVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an integer or a hex string like \"0x1de5\" (at most {:#x})", self.max)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if v > self.max {
            return Err(E::custom(format!("{v:#x} is larger than {:#x}", self.max)));
        }
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        if v < 0 {
            return Err(E::custom(format!("{v} is negative")));
        }
        self.visit_u64(v as u64)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        let t = v.trim();
        let parsed = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            u64::from_str_radix(h, 16)
        } else {
            t.parse::<u64>()
        };
        let n = parsed.map_err(|_| E::custom(format!("{v:?} is not a number")))?;
        self.visit_u64(n)
    }
}

fn de_bounded<'de, D: Deserializer<'de>>(d: D, max: u64) -> Result<u64, D::Error> {
    d.deserialize_any(HexVisitor { max })
}

pub mod u16_hex {
    use super::*;
    pub fn serialize<S: Serializer>(v: &u16, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#06x}"))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
        de_bounded(d, u16::MAX as u64).map(|v| v as u16)
    }
}

pub mod u32_hex {
    use super::*;
    pub fn serialize<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        de_bounded(d, u32::MAX as u64).map(|v| v as u32)
    }
}

/// Class codes: six hex digits (`0x010802`).
pub mod class_hex {
    use super::*;
    pub fn serialize<S: Serializer>(v: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#08x}"))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        de_bounded(d, 0xff_ffff).map(|v| v as u32)
    }
}

pub mod u64_hex {
    use super::*;
    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        de_bounded(d, u64::MAX)
    }
}
