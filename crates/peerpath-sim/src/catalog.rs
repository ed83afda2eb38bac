//! The device catalog (`sim/catalog.toml`): every number with its source.
//!
//! A [`Figure`] is a value (or an explicit unknown) plus where it comes from and what kind of
//! number it is. Unknown figures make the component unlimited in the model, and the report says
//! so. Calibrations (figures taken from a result the simulator also predicts) are marked, so the
//! reproduction can label the predictions that depend on them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::SimError;

/// The catalog shipped with peerpath (`sim/catalog.toml`).
/// The catalog format this peerpath reads (its `schema`).
pub const CATALOG_SCHEMA: u32 = 1;
pub const DEFAULT_CATALOG: &str = include_str!("../../../sim/catalog.toml");

/// What kind of number a figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    Datasheet,
    Spec,
    Seed,
    MeasuredHere,
    Derived,
    Assumption,
    Calibration,
    StandIn,
    /// Measured by this project on the GPU machine it is lent at times (a results folder in
    /// `bench/results/` is named).
    MeasuredLent,
}

/// One number and its provenance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// `None`: unknown (the component is unlimited in the model).
    #[serde(default)]
    pub value: Option<f64>,
    #[serde(default)]
    pub unit: String,
    pub kind: SourceKind,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Figure {
    pub fn known(&self) -> Option<f64> {
        self.value
    }
    pub fn is_calibration(&self) -> bool {
        self.kind == SourceKind::Calibration
    }
    /// A figure made up in code (tests, what-if edits), with its reason as the source.
    pub fn assumed(value: f64, why: &str) -> Figure {
        Figure { value: Some(value), unit: String::new(), kind: SourceKind::Assumption, source: why.to_string(), note: None }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pcie {
    pub framing_bytes: Figure,
    pub header_3dw_bytes: Figure,
    pub header_4dw_bytes: Figure,
    pub dllp_bytes: Figure,
    pub dllps_per_tlp: Figure,
    pub read_request_bytes: Figure,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuMatch {
    #[serde(default)]
    pub vendor: Option<String>,
    #[serde(default)]
    pub family: Option<u32>,
    #[serde(default)]
    pub model: Option<u32>,
    #[serde(default)]
    pub arch: Option<String>,
    #[serde(default)]
    pub sockets: Option<u32>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub match_cpu: Option<CpuMatch>,
    pub sockets: Figure,
    pub cores_per_socket: Figure,
    pub memory_bytes_per_s_per_socket: Figure,
    pub max_payload_bytes: Figure,
    pub addr64: Figure,
    #[serde(default)]
    pub orchestration_core_s_per_gb: Option<Figure>,
    /// Per-core rate of each function (`compress-zlib-1`, ...), bytes of input per second.
    #[serde(default)]
    pub functions: BTreeMap<String, Figure>,
    /// Per function: each core's rate, as a share of one core alone, with N cores busy at once
    /// (all-core clocks, shared caches and memory, a VM's vCPUs). Without it: 1 at any N.
    #[serde(default)]
    pub core_contention: BTreeMap<String, Curve>,
}

/// A measured curve: `points` are (x, y) pairs, sorted by x; read with linear interpolation
/// between them and the nearest end beyond them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Curve {
    pub points: Vec<[f64; 2]>,
    pub kind: SourceKind,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Curve {
    pub fn at(&self, x: f64) -> f64 {
        let p = &self.points;
        if x <= p[0][0] {
            return p[0][1];
        }
        for w in p.windows(2) {
            let ([x0, y0], [x1, y1]) = (w[0], w[1]);
            if x <= x1 {
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
            }
        }
        p[p.len() - 1][1]
    }
}

/// A GPU: its engines' rate per function (kernel time, data in GPU memory) and its memory.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub pci_ids: Vec<String>,
    /// Input bytes per second of each function's kernels, the whole GPU.
    #[serde(default)]
    pub functions: BTreeMap<String, Figure>,
    pub memory_bytes_per_s: Figure,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub pci_ids: Vec<String>,
    #[serde(default)]
    pub models: Vec<String>,
    pub seq_read_bytes_per_s: Figure,
    pub seq_write_bytes_per_s: Figure,
    #[serde(default)]
    pub seq_write_after_cache_bytes_per_s: Option<Figure>,
    pub read_4k_latency_us: Figure,
    pub write_4k_latency_us: Figure,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CspSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub pci_ids: Vec<String>,
    #[serde(default)]
    pub models: Vec<String>,
    /// Engine throughput per function (input bytes per second, all engines of the device).
    #[serde(default)]
    pub functions: BTreeMap<String, Figure>,
    /// The CMB's memory bandwidth given directly...
    #[serde(default)]
    pub cmb_memory_bytes_per_s: Option<Figure>,
    /// ... or from its DRAM banks (banks x data bits / 8 x MT/s x efficiency).
    #[serde(default)]
    pub cmb_banks: Option<Figure>,
    #[serde(default)]
    pub cmb_bank_data_bits: Option<Figure>,
    #[serde(default)]
    pub cmb_bank_mt_per_s: Option<Figure>,
    #[serde(default)]
    pub cmb_efficiency: Option<Figure>,
}

impl CspSpec {
    /// Bytes per second the CMB's memory moves (reads and writes share it), and how it was
    /// obtained; `None` when unknown.
    pub fn cmb_bandwidth(&self) -> Option<(f64, String)> {
        if let Some(v) = self.cmb_memory_bytes_per_s.as_ref().and_then(|f| f.value) {
            return Some((v, "catalog figure".into()));
        }
        let banks = self.cmb_banks.as_ref()?.value?;
        let bits = self.cmb_bank_data_bits.as_ref()?.value?;
        let mts = self.cmb_bank_mt_per_s.as_ref()?.value?;
        let eff = self.cmb_efficiency.as_ref().and_then(|f| f.value).unwrap_or(1.0);
        let bw = banks * bits / 8.0 * mts * 1e6 * eff;
        Some((bw, format!("{banks} DDR banks x {bits} bit x {mts} MT/s x efficiency {eff}")))
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub pci_ids: Vec<String>,
    pub crossing_latency_ns: Figure,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nvme {
    pub read_crossings: Figure,
    pub write_crossings: Figure,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Data {
    pub compress_ratio_zlib_1: Figure,
}

/// A network adapter: what its ports can carry.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NicSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub pci_ids: Vec<String>,
    #[serde(default)]
    pub models: Vec<String>,
    /// All ports together, one direction, in bits per second on the wire.
    pub line_rate_bits_per_s: Figure,
    /// Payload bytes per wire byte (headers, framing, gaps).
    pub payload_efficiency: Figure,
}

impl NicSpec {
    /// Payload bytes per second one direction, when both figures are known.
    pub fn payload_bytes_per_s(&self) -> Option<f64> {
        Some(self.line_rate_bits_per_s.value? / 8.0 * self.payload_efficiency.value?)
    }
}

/// The whole catalog.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    pub schema: u32,
    pub pcie: Pcie,
    #[serde(rename = "platform")]
    pub platforms: Vec<Platform>,
    #[serde(rename = "ssd", default)]
    pub ssds: Vec<SsdSpec>,
    #[serde(rename = "csp", default)]
    pub csps: Vec<CspSpec>,
    #[serde(rename = "switch", default)]
    pub switches: Vec<SwitchSpec>,
    #[serde(rename = "nic", default)]
    pub nics: Vec<NicSpec>,
    #[serde(rename = "gpu", default)]
    pub gpus: Vec<GpuSpec>,
    pub nvme: Nvme,
    pub data: Data,
}

fn id_matches(ids: &[String], vendor: u16, device: u16) -> bool {
    let want = format!("{vendor:04x}:{device:04x}");
    ids.iter().any(|i| i.eq_ignore_ascii_case(&want))
}

fn model_matches(models: &[String], model: Option<&str>) -> bool {
    match model {
        Some(m) => models.iter().any(|x| m.to_ascii_lowercase().contains(&x.to_ascii_lowercase())),
        None => false,
    }
}

/// Every figure of a catalog with its path, borrowed (`figures!(cat)`) or to change
/// (`figures!(cat, mut)`): one list, so a figure added is both checked and converted.
macro_rules! figures {
    ($cat:expr $(, $m:ident)?) => {{
        let mut v: Vec<(String, &$($m)? Figure)> = Vec::new();
        let p = &$($m)? $cat.pcie;
        for (n, f) in [
            ("framing_bytes", &$($m)? p.framing_bytes),
            ("header_3dw_bytes", &$($m)? p.header_3dw_bytes),
            ("header_4dw_bytes", &$($m)? p.header_4dw_bytes),
            ("dllp_bytes", &$($m)? p.dllp_bytes),
            ("dllps_per_tlp", &$($m)? p.dllps_per_tlp),
            ("read_request_bytes", &$($m)? p.read_request_bytes),
        ] {
            v.push((format!("pcie.{n}"), f));
        }
        for pl in &$($m)? $cat.platforms {
            for (n, f) in [
                ("sockets", &$($m)? pl.sockets),
                ("cores_per_socket", &$($m)? pl.cores_per_socket),
                ("memory_bytes_per_s_per_socket", &$($m)? pl.memory_bytes_per_s_per_socket),
                ("max_payload_bytes", &$($m)? pl.max_payload_bytes),
                ("addr64", &$($m)? pl.addr64),
            ] {
                v.push((format!("platform {}.{n}", pl.name), f));
            }
            if let Some(f) = &$($m)? pl.orchestration_core_s_per_gb {
                v.push((format!("platform {}.orchestration_core_s_per_gb", pl.name), f));
            }
            for (k, f) in &$($m)? pl.functions {
                v.push((format!("platform {}.functions.{k}", pl.name), f));
            }
        }
        for s in &$($m)? $cat.ssds {
            v.push((format!("ssd {}.seq_read_bytes_per_s", s.name), &$($m)? s.seq_read_bytes_per_s));
            v.push((format!("ssd {}.seq_write_bytes_per_s", s.name), &$($m)? s.seq_write_bytes_per_s));
            if let Some(f) = &$($m)? s.seq_write_after_cache_bytes_per_s {
                v.push((format!("ssd {}.seq_write_after_cache_bytes_per_s", s.name), f));
            }
            v.push((format!("ssd {}.read_4k_latency_us", s.name), &$($m)? s.read_4k_latency_us));
            v.push((format!("ssd {}.write_4k_latency_us", s.name), &$($m)? s.write_4k_latency_us));
        }
        for n in &$($m)? $cat.nics {
            v.push((format!("nic {}.line_rate_bits_per_s", n.name), &$($m)? n.line_rate_bits_per_s));
            v.push((format!("nic {}.payload_efficiency", n.name), &$($m)? n.payload_efficiency));
        }
        for c in &$($m)? $cat.csps {
            for (k, f) in &$($m)? c.functions {
                v.push((format!("csp {}.functions.{k}", c.name), f));
            }
            for (n, f) in [
                ("cmb_memory_bytes_per_s", &$($m)? c.cmb_memory_bytes_per_s),
                ("cmb_banks", &$($m)? c.cmb_banks),
                ("cmb_bank_data_bits", &$($m)? c.cmb_bank_data_bits),
                ("cmb_bank_mt_per_s", &$($m)? c.cmb_bank_mt_per_s),
                ("cmb_efficiency", &$($m)? c.cmb_efficiency),
            ] {
                if let Some(f) = f {
                    v.push((format!("csp {}.{n}", c.name), f));
                }
            }
        }
        for g in &$($m)? $cat.gpus {
            v.push((format!("gpu {}.memory_bytes_per_s", g.name), &$($m)? g.memory_bytes_per_s));
            for (k, f) in &$($m)? g.functions {
                v.push((format!("gpu {}.functions.{k}", g.name), f));
            }
        }
        for s in &$($m)? $cat.switches {
            v.push((format!("switch {}.crossing_latency_ns", s.name), &$($m)? s.crossing_latency_ns));
        }
        v.push(("nvme.read_crossings".into(), &$($m)? $cat.nvme.read_crossings));
        v.push(("nvme.write_crossings".into(), &$($m)? $cat.nvme.write_crossings));
        v.push(("data.compress_ratio_zlib_1".into(), &$($m)? $cat.data.compress_ratio_zlib_1));
        v
    }};
}

impl Catalog {
    pub fn default_catalog() -> Catalog {
        Catalog::from_toml_str(DEFAULT_CATALOG).expect("the shipped catalog parses (tested)")
    }

    pub fn from_toml_str(text: &str) -> Result<Catalog, SimError> {
        let mut c: Catalog = toml::from_str(text).map_err(|e| SimError::Catalog(e.to_string()))?;
        c.convert_units()?;
        c.check()?;
        Ok(c)
    }

    /// Every figure in the unit the model reads (B/s, b/s, us, ns, ...): a figure given in
    /// another unit of its kind (`6.5` `GB/s`, `1.2` `Gb/s` for a byte rate, `0.07` `ms`) is
    /// converted; one whose unit is not of its kind (`GB/s` for a latency, `ms` for a count) is
    /// refused by name. Without this the unit was read as a comment: 6.5 GB/s became 6.5 B/s.
    fn convert_units(&mut self) -> Result<(), SimError> {
        for (path, f) in self.figures_mut() {
            let (canonical, factor) = unit_factor(&path, f.unit.trim()).map_err(SimError::Catalog)?;
            if let Some(v) = f.value.as_mut() {
                *v *= factor;
            }
            if factor != 1.0 {
                f.unit = canonical.to_string();
            }
        }
        Ok(())
    }

    /// [`Catalog::figures`], to change them.
    fn figures_mut(&mut self) -> Vec<(String, &mut Figure)> {
        figures!(self, mut)
    }

    pub fn from_file(path: &Path) -> Result<Catalog, SimError> {
        let text = peerpath_topo::read_text_file(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => SimError::Catalog(format!("{}: {e}", path.display())),
            _ => SimError::Unreadable(format!("{}: {e}", path.display())),
        })?;
        Catalog::from_toml_str(&text).map_err(|e| match e {
            SimError::Catalog(why) => SimError::Catalog(format!("{}: {why}", path.display())),
            e => e,
        })
    }

    /// Every figure with its path, for checks and listings.
    pub fn figures(&self) -> Vec<(String, &Figure)> {
        figures!(self)
    }

    /// Every figure has a source; unknowns say why; values are finite and positive (addr64 may be 0).
    fn check(&self) -> Result<(), SimError> {
        for (path, f) in self.figures() {
            if f.source.trim().is_empty() {
                return Err(SimError::Catalog(format!("{path}: no source")));
            }
            match f.value {
                None if f.note.as_deref().unwrap_or("").is_empty() => {
                    return Err(SimError::Catalog(format!("{path}: unknown value without a note saying why")));
                }
                Some(x) if !x.is_finite() || x < 0.0 => {
                    return Err(SimError::Catalog(format!("{path}: {x} is not a usable value")));
                }
                // A rate or size of zero leaves the flows through it no bandwidth at all (addr64
                // is a yes or no, 0 or 1).
                Some(x) if x == 0.0 && !path.ends_with(".addr64") => {
                    return Err(SimError::Catalog(format!("{path}: 0 is not a usable value (a figure of zero gives the flows through it nothing); leave the value out, with a note, where it is unknown")));
                }
                _ => {}
            }
        }
        for (path, f) in self.figures() {
            let Some(x) = f.value else { continue };
            let field = path.rsplit('.').next().unwrap_or(&path);
            // A device slower than 1 kB/s is no device (1e-300 B/s gave "a flow got no bandwidth
            // at all", naming nothing).
            let rate = if field.ends_with("_bits_per_s") { x / 8.0 } else if path.contains(".functions.") || field.contains("_bytes_per_s") { x } else { f64::INFINITY };
            if rate < 1e3 {
                return Err(SimError::Catalog(format!("{path}: {x} {} is below 1 kB/s, no device's rate (is the unit right?)", f.unit)));
            }
            let refuse = |why: String| Err(SimError::Catalog(format!("{path}: {x} {why}")));
            match field {
                "cmb_efficiency" | "payload_efficiency" if x > 1.0 => return refuse("is above 1: a share of the peak, at most all of it".into()),
                "compress_ratio_zlib_1" if !crate::job::RATIO.contains(&x) => {
                    return refuse(format!("is not a compression ratio deflate can give (from {} to {}, as --ratio)", crate::job::RATIO.start(), crate::job::RATIO.end()))
                }
                "max_payload_bytes" if ![128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0].contains(&x) => {
                    return refuse("is not a PCIe Max_Payload_Size (128, 256, 512, 1024, 2048 or 4096 B)".into())
                }
                // 1e300 framing bytes per TLP printed 0.0 Gb/s and a job of 1e290 seconds.
                "read_request_bytes" if ![128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0].contains(&x) => {
                    return refuse("is not a PCIe Max_Read_Request_Size (128, 256, 512, 1024, 2048 or 4096 B)".into())
                }
                "framing_bytes" | "header_3dw_bytes" | "header_4dw_bytes" | "dllp_bytes" if x > 64.0 => {
                    return refuse("B is more than any PCIe TLP framing, header (4 dwords and 4 prefixes: 32 B) or DLLP (8 B) takes: at most 64".into())
                }
                // 1e12 crossings, or a switch crossing of 1e300 ns, gave seed 001's dd read 0.00 GB/s.
                "read_crossings" | "write_crossings" if x.fract() != 0.0 || x > 64.0 => {
                    return refuse("is not a whole number of PCIe crossings of one NVMe command (1 to 64)".into())
                }
                _ if (field.ends_with("_us") && x > 1e6) || (field.ends_with("_ns") && x > 1e9) => {
                    return refuse(format!("{} is more than 1 s, no SSD's 4 KiB access or switch crossing (is the unit right?)", f.unit))
                }
                _ => {}
            }
        }
        // Banks x bits x MT/s of finite figures can overflow (1e300 x 1e300 printed "inf GB/s").
        for c in &self.csps {
            if let Some((bw, how)) = c.cmb_bandwidth().filter(|(bw, _)| !bw.is_finite() || *bw < 1e3) {
                return Err(SimError::Catalog(format!("csp {}: its CMB memory ({how}) moves {bw} B/s, no device's rate (is a unit right?)", c.name)));
            }
        }
        // Entries are found by name (platforms) or by PCI id and model string (devices), first
        // match wins: a second entry with the same key was silently never used.
        let mut names = BTreeSet::new();
        for pl in &self.platforms {
            if !names.insert(pl.name.as_str()) {
                return Err(SimError::Catalog(format!("platform {}: a second [[platform]] with this name (names must be unique)", pl.name)));
            }
        }
        // (kind, [(name, PCI ids, models)]) per device list.
        type Keys<'a> = Vec<(&'a str, &'a [String], &'a [String])>;
        let kinds: [(&str, Keys); 5] = [
            ("ssd", self.ssds.iter().map(|d| (d.name.as_str(), &d.pci_ids[..], &d.models[..])).collect()),
            ("csp", self.csps.iter().map(|d| (d.name.as_str(), &d.pci_ids[..], &d.models[..])).collect()),
            ("nic", self.nics.iter().map(|d| (d.name.as_str(), &d.pci_ids[..], &d.models[..])).collect()),
            ("gpu", self.gpus.iter().map(|d| (d.name.as_str(), &d.pci_ids[..], &[][..])).collect()),
            ("switch", self.switches.iter().map(|d| (d.name.as_str(), &d.pci_ids[..], &[][..])).collect()),
        ];
        for (kind, entries) in &kinds {
            let (mut names, mut ids, mut models) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
            for &(name, pci_ids, mods) in entries {
                if names.insert(name, name).is_some() {
                    return Err(SimError::Catalog(format!("{kind} {name}: a second [[{kind}]] with this name (names must be unique)")));
                }
                // One PCI id may serve several models (matched by model string first); an entry
                // without models that repeats an id is never matched.
                for id in pci_ids {
                    // "144d-a824" or "144d:a82" was taken and never matched: the entry silently unused.
                    let hex4 = |h: &str| h.len() == 4 && h.bytes().all(|b| b.is_ascii_hexdigit());
                    if !id.split_once(':').is_some_and(|(v, d)| hex4(v) && hex4(d)) {
                        return Err(SimError::Catalog(format!("{kind} {name}.pci_ids: '{id}' is not a PCI vendor:device id (4 hex digits each, as `lspci -n` prints them: 144d:a824); it would never match")));
                    }
                    if let Some(first) = ids.insert(id.to_ascii_lowercase(), name).filter(|_| mods.is_empty()) {
                        return Err(SimError::Catalog(format!("{kind} {name}.pci_ids: {id} is already {kind} {first}'s and this entry names no models (the first entry would always win)")));
                    }
                }
                for m in mods {
                    if let Some(first) = models.insert(m.as_str(), name) {
                        return Err(SimError::Catalog(format!("{kind} {name}.models: '{m}' is already {kind} {first}'s (the first entry would always win)")));
                    }
                }
            }
        }
        for pl in &self.platforms {
            for (n, f) in [("sockets", &pl.sockets), ("cores_per_socket", &pl.cores_per_socket)] {
                if f.value.is_some_and(|x| x.fract() != 0.0 || x < 1.0) {
                    return Err(SimError::Catalog(format!("platform {}.{n}: {} is not a whole number of 1 or more", pl.name, f.value.unwrap_or(0.0))));
                }
            }
            for (k, c) in &pl.core_contention {
                let path = format!("platform {}.core_contention.{k}", pl.name);
                if c.source.trim().is_empty() {
                    return Err(SimError::Catalog(format!("{path}: no source")));
                }
                let ok = !c.points.is_empty()
                    && c.points.iter().all(|[x, y]| x.is_finite() && y.is_finite() && *x >= 1.0 && *y > 0.0)
                    && c.points.windows(2).all(|w| w[0][0] < w[1][0]);
                if !ok {
                    return Err(SimError::Catalog(format!("{path}: points must be (cores >= 1, share > 0) pairs in increasing order of cores")));
                }
            }
        }
        if self.platforms.is_empty() {
            return Err(SimError::Catalog("no [[platform]]".into()));
        }
        if self.schema != CATALOG_SCHEMA {
            return Err(SimError::Catalog(format!("schema {} is not the one this peerpath reads ({CATALOG_SCHEMA})", self.schema)));
        }
        Ok(())
    }

    pub fn platform(&self, name: &str) -> Result<&Platform, SimError> {
        self.platforms.iter().find(|p| p.name == name).ok_or_else(|| {
            SimError::Catalog(format!(
                "no platform '{name}' in the catalog (have: {})",
                self.platforms.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The platform whose `match_cpu` fits the topology's CPU best (most fields matched), else
    /// `measured-here`.
    /// The platform whose `match_cpu` fits `cpu` best, and whether one did (else
    /// `measured-here`, this project's development VM, or the first).
    pub fn platform_for(&self, cpu: &peerpath_topo::Cpu) -> (&Platform, bool) {
        let vendor = cpu.vendor.to_string().to_ascii_lowercase();
        let mut best: Option<(usize, &Platform)> = None;
        for p in &self.platforms {
            let Some(m) = &p.match_cpu else { continue };
            let mut score = 0;
            let mut ok = true;
            if let Some(v) = &m.vendor {
                if vendor == v.to_ascii_lowercase() { score += 1 } else { ok = false }
            }
            if let Some(f) = m.family {
                if cpu.family == Some(f) { score += 1 } else { ok = false }
            }
            if let Some(md) = m.model {
                if cpu.model == Some(md) { score += 1 } else { ok = false }
            }
            if let Some(n) = m.sockets {
                if cpu.sockets == Some(n) { score += 1 } else { ok = false }
            }
            if let Some(a) = &m.arch {
                if cpu.arch.eq_ignore_ascii_case(a) { score += 1 } else { ok = false }
            }
            if ok && score > 0 && best.map(|(s, _)| score > s).unwrap_or(true) {
                best = Some((score, p));
            }
        }
        match best {
            Some((_, p)) => (p, true),
            None => (self.platforms.iter().find(|p| p.name == "measured-here").unwrap_or(&self.platforms[0]), false),
        }
    }

    pub fn ssd_for(&self, vendor: u16, device: u16, model: Option<&str>) -> Option<&SsdSpec> {
        self.ssds
            .iter()
            .find(|s| model_matches(&s.models, model))
            .or_else(|| self.ssds.iter().find(|s| id_matches(&s.pci_ids, vendor, device)))
    }

    pub fn csp_for(&self, vendor: u16, device: u16, model: Option<&str>) -> Option<&CspSpec> {
        self.csps
            .iter()
            .find(|s| model_matches(&s.models, model))
            .or_else(|| self.csps.iter().find(|s| id_matches(&s.pci_ids, vendor, device)))
    }

    pub fn gpu_for(&self, vendor: u16, device: u16) -> Option<&GpuSpec> {
        self.gpus.iter().find(|s| id_matches(&s.pci_ids, vendor, device))
    }

    pub fn gpu(&self, name: &str) -> Result<&GpuSpec, SimError> {
        self.gpus.iter().find(|g| g.name == name).ok_or_else(|| SimError::Catalog(format!("no GPU '{name}' in the catalog")))
    }

    pub fn nic_for(&self, vendor: u16, device: u16) -> Option<&NicSpec> {
        self.nics.iter().find(|s| id_matches(&s.pci_ids, vendor, device))
    }

    pub fn switch_for(&self, vendor: u16, device: u16) -> Option<&SwitchSpec> {
        self.switches
            .iter()
            .find(|s| id_matches(&s.pci_ids, vendor, device))
            .or_else(|| self.switches.iter().find(|s| s.pci_ids.is_empty()))
    }
}

/// The unit the model reads a figure in (by its path in [`Catalog::figures`]) and the factor
/// that turns `unit` into it; "" is the model's unit. Rates convert between byte and bit units
/// (SI and binary prefixes), times between s, ms, us and ns; every other figure takes its own
/// unit only.
fn unit_factor(path: &str, unit: &str) -> Result<(&'static str, f64), String> {
    let field = path.rsplit('.').next().unwrap_or(path);
    let per_core = path.starts_with("platform ") && path.contains(".functions.");
    let function = path.contains(".functions.");
    let (canonical, family, own): (&'static str, &str, &[&str]) = if per_core {
        ("B/s per core", "rate", &["B/s per core"])
    } else if function || field.ends_with("_bytes_per_s") || field.ends_with("_bytes_per_s_per_socket") {
        ("B/s", "rate", &["B/s"])
    } else if field.ends_with("_bits_per_s") {
        ("b/s", "bits", &["b/s"])
    } else if field.ends_with("_us") {
        ("us", "time", &["us"])
    } else if field.ends_with("_ns") {
        ("ns", "time", &["ns"])
    } else if field == "max_payload_bytes" || field == "read_request_bytes" {
        ("B", "", &["B"])
    } else if field.ends_with("_bytes") {
        ("B", "", &["B", "B/TLP", "B/DLLP"])
    } else if field == "dllps_per_tlp" {
        ("DLLP/TLP", "", &["DLLP/TLP"])
    } else if field == "orchestration_core_s_per_gb" {
        ("core-s/GB", "", &["core-s/GB"])
    } else if field == "cmb_bank_data_bits" {
        ("bit", "", &["bit", "bits"])
    } else if field == "cmb_bank_mt_per_s" {
        ("MT/s", "", &["MT/s"])
    } else {
        ("", "", &[])
    };
    if unit.is_empty() || own.contains(&unit) {
        return Ok((canonical, 1.0));
    }
    // A byte rate in bytes per second; a bit rate in bits per second.
    let bytes_per_s = |u: &str| -> Option<f64> {
        let u = u.strip_suffix(" per core").filter(|_| per_core).unwrap_or(u);
        let (num, den) = u.split_once('/')?;
        if den != "s" {
            return None;
        }
        let (prefix, bits) = match num {
            n if n.ends_with("bit") => (&n[..n.len() - 3], true),
            n if n.ends_with('B') => (&n[..n.len() - 1], false),
            n if n.ends_with('b') => (&n[..n.len() - 1], true),
            _ => return None,
        };
        let scale = match prefix {
            "" => 1.0,
            "k" | "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            "T" => 1e12,
            "Ki" => 1024.0,
            "Mi" => 1024.0 * 1024.0,
            "Gi" => 1024.0 * 1024.0 * 1024.0,
            "Ti" => 1024.0f64.powi(4),
            _ => return None,
        };
        Some(if bits { scale / 8.0 } else { scale })
    };
    let seconds = |u: &str| -> Option<f64> {
        match u {
            "s" => Some(1.0),
            "ms" => Some(1e-3),
            "us" | "\u{b5}s" | "\u{3bc}s" => Some(1e-6),
            "ns" => Some(1e-9),
            _ => None,
        }
    };
    let factor = match family {
        "rate" => bytes_per_s(unit),
        "bits" => bytes_per_s(unit).map(|x| x * 8.0),
        "time" => seconds(unit).map(|x| x / seconds(canonical).expect("a time unit")),
        _ => None,
    };
    factor.map(|x| (canonical, x)).ok_or_else(|| {
        let takes = match family {
            "rate" | "bits" => format!("{canonical} or another rate: B/s, kB/s, MB/s, GB/s, MiB/s, GiB/s, b/s, Mb/s, Gb/s{}", if per_core { " (optionally \"per core\")" } else { "" }),
            "time" => format!("{canonical} or another time: s, ms, us, ns"),
            _ if own.is_empty() => "no unit (a count or a ratio)".to_string(),
            _ => format!("{} (or none)", own.join(" or ")),
        };
        format!("{path}: unit '{unit}' is not one this figure takes ({takes})")
    })
}
