//! Reading a sysfs tree: files -> records ([`read_records`]), then records -> model
//! ([`derive`]). The root is a parameter, so fake trees (see [`crate::fixture`]) test it.
//!
//! What is read (all relative to the root, normally `/sys`):
//! - `bus/pci/devices/<BDF>`: symlinks into `devices/pciDDDD:BB/.../<BDF>`; the parent directory
//!   of the real path is the upstream bridge (or the root bus). Files: `vendor`, `device`,
//!   `class` (required), `numa_node`, `local_cpulist`, `*_link_speed`, `*_link_width`, `label`,
//!   `driver` (link), `physfn` (link), `config` (binary), `resource`, `p2pmem/{size,available,published,allocate}`.
//! - `class/nvme/*`, `class/nvme-subsystem/*`: controllers, CMB registers, subsystems, heads.
//! - `class/block/*`: namespaces, partitions (in their disk's directory), md/dm stacks (`slaves/`), multipath heads.
//! - `devices/system/cpu/modalias`, `cpu*/topology/physical_package_id`, `devices/system/node/node*/cpulist`.
//! - `class/iommu/*`, `kernel/iommu_groups/*/type`.
//!
//! A required file that is missing or malformed is an error naming it; an optional one that is
//! missing is `None` (rendered "unknown"); one that is present but malformed is an error.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::bdf::{parse_root_bus_name, Bdf};
use crate::cmb::Cmb;
use crate::error::{Result, TopoError};
use crate::model::*;
use crate::pcicfg::{self, AcsState, PcieType};

/// No sysfs attribute is larger than a page; config space is 4 KiB. Anything bigger is garbage.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// No real PCIe hierarchy is deeper than this (bus numbers alone limit it to 256).
pub const MAX_TREE_DEPTH: usize = 256;
/// Cap on CPU ids expanded from a cpulist, so a garbage `0-4294967295` cannot exhaust memory.
const MAX_CPUS: usize = 65_536;

/// Where the parent of a PCI function is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParentRef {
    /// The function sits on a root bus (`pciDDDD:BB`).
    RootBus(String),
    /// The function sits below this bridge.
    Bridge(Bdf),
}

/// One PCI function as read from its sysfs directory, before interpretation.
#[derive(Clone, Debug, PartialEq)]
pub struct PciRecord {
    pub bdf: Bdf,
    /// The real (symlink-resolved) directory.
    pub real_path: PathBuf,
    pub parent: ParentRef,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
    pub numa_node: Option<i32>,
    pub local_cpulist: Option<String>,
    pub current_link_speed: Option<LinkSpeed>,
    pub max_link_speed: Option<LinkSpeed>,
    pub current_link_width: Option<u8>,
    pub max_link_width: Option<u8>,
    pub label: Option<String>,
    pub driver: Option<String>,
    pub physfn: Option<Bdf>,
    /// Config space bytes, or why they could not be read.
    pub config: std::result::Result<Vec<u8>, String>,
    pub bars: Vec<Bar>,
    pub p2pmem: Option<P2pProvider>,
}

/// An NVMe controller as read.
#[derive(Clone, Debug, PartialEq)]
pub struct NvmeRecord {
    pub name: String,
    pub real_path: PathBuf,
    pub pci: Option<Bdf>,
    pub transport: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub cmbsz: Option<u32>,
    pub cmbloc: Option<u32>,
    pub namespaces: Vec<String>,
}

/// A block device as read.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockRecord {
    pub name: String,
    pub real_path: PathBuf,
    pub is_partition: bool,
    pub has_md: bool,
    pub has_dm: bool,
    pub detail: Option<String>,
    pub slaves: Vec<String>,
    /// Nearest PCI function among the real path's ancestors.
    pub pci: Option<Bdf>,
}

/// Everything read from one sysfs root.
#[derive(Clone, Debug, PartialEq)]
pub struct SysfsRecords {
    pub root: PathBuf,
    pub pci: Vec<PciRecord>,
    pub nvme: Vec<NvmeRecord>,
    /// subsystem name -> controller names
    pub nvme_subsystems: BTreeMap<String, Vec<String>>,
    pub block: Vec<BlockRecord>,
    pub cpu: Cpu,
    pub numa_nodes: Vec<NumaNode>,
    pub iommu: Iommu,
    pub gpu_modules: Option<GpuModules>,
    pub kernel: Option<crate::kernel::KernelInfo>,
}

// ---------------------------------------------------------------------------------------------
// Small readers.

/// An attribute's bytes: a regular file (a FIFO or device planted in a tree
/// is refused, never waited on) of at most [`MAX_FILE_BYTES`]; a larger one is a damaged
/// file, not one to judge by its first 64 KiB (a line cut there, or config space that is not).
fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let f = crate::open_regular(path).map_err(|e| TopoError::io(path, e))?;
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| TopoError::io(path, e))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(TopoError::parse(path, "at most 64 KiB (no sysfs attribute is larger)", b"a larger file"));
    }
    Ok(buf)
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = read_bytes(path)?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => Err(TopoError::parse(path, "text", e.as_bytes())),
    }
}

/// `None` if the file does not exist.
fn read_opt_text(path: &Path) -> Result<Option<String>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TopoError::io(path, e)),
        Ok(_) => read_text(path).map(Some),
    }
}

fn parse_hex_prefixed(path: &Path, text: &str, max: u64, expected: &'static str) -> Result<u64> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .ok_or_else(|| TopoError::parse(path, expected, text.as_bytes()))?;
    if digits.is_empty() || digits.len() > 16 {
        return Err(TopoError::parse(path, expected, text.as_bytes()));
    }
    let v = u64::from_str_radix(digits, 16).map_err(|_| TopoError::parse(path, expected, text.as_bytes()))?;
    if v > max {
        return Err(TopoError::parse(path, expected, text.as_bytes()));
    }
    Ok(v)
}

/// A hex id as the kernel writes it, `0x` and exactly `digits` digits (`0x%04x`, `0x%06x`): a
/// shorter one (`0x01` for a class) is a damaged file, not a device of another kind.
fn read_hex(path: &Path, digits: usize, expected: &'static str) -> Result<u64> {
    let t = read_text(path)?;
    if t.trim().len() != 2 + digits {
        return Err(TopoError::parse(path, expected, t.as_bytes()));
    }
    parse_hex_prefixed(path, &t, u64::MAX >> (64 - 4 * digits), expected)
}

fn parse_dec<T: std::str::FromStr>(path: &Path, text: &str, expected: &'static str) -> Result<T> {
    text.trim()
        .parse::<T>()
        .map_err(|_| TopoError::parse(path, expected, text.as_bytes()))
}

fn read_opt_dec<T: std::str::FromStr>(path: &Path, expected: &'static str) -> Result<Option<T>> {
    match read_opt_text(path)? {
        None => Ok(None),
        Some(t) => parse_dec(path, &t, expected).map(Some),
    }
}

fn list_dir(path: &Path) -> Result<Vec<String>> {
    let rd = fs::read_dir(path).map_err(|e| TopoError::io(path, e))?;
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| TopoError::io(path, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort_by_key(|a| natural_key(a));
    Ok(names)
}

fn list_dir_opt(path: &Path) -> Result<Option<Vec<String>>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(TopoError::io(path, e)),
        Ok(_) => list_dir(path).map(Some),
    }
}

/// Resolves a symlink (or path) to its real location inside `root_real`, with precise errors
/// for dangling links, loops and escapes.
fn resolve_inside(path: &Path, root_real: &Path) -> Result<PathBuf> {
    match fs::canonicalize(path) {
        Ok(real) => {
            if !real.starts_with(root_real) {
                return Err(TopoError::BadLink {
                    path: path.to_path_buf(),
                    what: format!("resolves to {}, outside the sysfs root {}", real.display(), root_real.display()),
                });
            }
            Ok(real)
        }
        Err(e) => {
            if e.raw_os_error() == Some(40) {
                // ELOOP
                return Err(TopoError::BadLink {
                    path: path.to_path_buf(),
                    what: "symlink loop (too many levels of symbolic links)".to_string(),
                });
            }
            if e.kind() == std::io::ErrorKind::NotFound {
                if let Ok(target) = fs::read_link(path) {
                    return Err(TopoError::DanglingSymlink {
                        path: path.to_path_buf(),
                        target,
                    });
                }
            }
            Err(TopoError::io(path, e))
        }
    }
}

/// The driver a `driver` link names (`../../../bus/pci/drivers/nvme` -> `nvme`), `None` if
/// absent. The kernel's link always ends in `drivers/NAME`; any other target (a link to itself,
/// `driver -> driver`) is a damaged tree, not a driver called by its last component.
fn driver_name(path: &Path) -> Result<Option<String>> {
    let target = match fs::read_link(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return Err(TopoError::parse(path, "a symlink", b"(a regular file)"));
        }
        Err(e) => return Err(TopoError::io(path, e)),
    };
    let mut parts = target.components().rev();
    match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(name)), Some(std::path::Component::Normal(dir))) if dir == "drivers" => {
            Ok(Some(name.to_string_lossy().into_owned()))
        }
        _ => Err(TopoError::BadLink {
            path: path.to_path_buf(),
            what: format!("points to {}, not to a driver (the kernel's link ends in drivers/NAME)", target.display()),
        }),
    }
}

fn nearest_bdf_ancestor(path: &Path, stop: &Path) -> Option<Bdf> {
    let mut cur = path;
    for _ in 0..MAX_TREE_DEPTH {
        if cur == stop {
            return None;
        }
        if let Some(b) = cur.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<Bdf>().ok()) {
            return Some(b);
        }
        cur = cur.parent()?;
    }
    None
}

/// `current_link_speed` or `max_link_speed`: a PCIe rate as the kernel writes it
/// (`pci_speed_string()`: `8.0 GT/s PCIe`; before 5.7 `8 GT/s`), or unknown (`Unknown`; before
/// 5.7 `Unknown speed`), the kernel's word for a link that is down or a port that reports no
/// rate. Any other rate is a damaged file, not a figure to compute bandwidth with.
fn read_link_speed(path: &Path) -> Result<Option<LinkSpeed>> {
    let Some(text) = read_opt_text(path)? else { return Ok(None) };
    let t = text.trim();
    let speed = if t == "Unknown speed" { Some(LinkSpeed::UNKNOWN) } else { LinkSpeed::parse(t) };
    speed
        .filter(|s| s.mt_per_s.is_none_or(|mt| LinkSpeed::PCIE_RATES_MT.contains(&mt)))
        .map(Some)
        .ok_or_else(|| TopoError::parse(path, "a PCIe link speed (2.5, 5.0, 8.0, 16.0, 32.0, 64.0 or 128.0 GT/s PCIe) or Unknown", text.as_bytes()))
}

/// `current_link_width` or `max_link_width`: the lanes as the kernel writes them, the Link
/// Status or Capabilities register's field in decimal. A value in `unknown` is the kernel's
/// "none": 0 for a link that is down (or a port that reports no width), 255
/// (`PCIE_LNK_WIDTH_UNKNOWN`) where a function has no Link Capabilities. Any other value than a
/// PCIe width is a damaged file, not a figure to compute bandwidth with.
fn read_link_width(path: &Path, unknown: &[u8], expected: &'static str) -> Result<Option<u8>> {
    match read_opt_dec::<u8>(path, expected)? {
        Some(w) if unknown.contains(&w) => Ok(None),
        Some(w) if !Link::PCIE_WIDTHS.contains(&w) => Err(TopoError::parse(path, expected, w.to_string().as_bytes())),
        w => Ok(w),
    }
}

/// Expands a cpulist (`0-3,8,10-11`) with bounds; `None` if malformed.
pub fn parse_cpulist(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let t = s.trim();
    if t.is_empty() {
        return Some(out);
    }
    for part in t.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let v = part.trim().parse::<u32>().ok()?;
                (v, v)
            }
        };
        if b < a || (b - a) as usize >= MAX_CPUS || out.len() + ((b - a) as usize) >= MAX_CPUS {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// PCI.

fn read_pci_function(entry: &Path, name: &str, root_real: &Path) -> Result<PciRecord> {
    let bdf: Bdf = name
        .parse()
        .map_err(|_| TopoError::parse(entry, "a directory entry named DDDD:BB:DD.F", name.as_bytes()))?;
    let real = resolve_inside(entry, root_real)?;
    if real.file_name().and_then(|n| n.to_str()) != Some(name) {
        return Err(TopoError::BadLink {
            path: entry.to_path_buf(),
            what: format!("points to {}, whose name is not {name}", real.display()),
        });
    }
    if !real.is_dir() {
        return Err(TopoError::BadLink {
            path: entry.to_path_buf(),
            what: format!("points to {}, which is not a directory", real.display()),
        });
    }
    // Parent: walk up the real path to the first bridge function or root bus.
    let mut parent = None;
    let mut cur = real.parent();
    for _ in 0..MAX_TREE_DEPTH {
        let Some(p) = cur else { break };
        if p == root_real {
            break;
        }
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if let Ok(b) = n.parse::<Bdf>() {
            parent = Some(ParentRef::Bridge(b));
            break;
        }
        if parse_root_bus_name(n).is_some() {
            parent = Some(ParentRef::RootBus(n.to_string()));
            break;
        }
        cur = p.parent();
    }
    let parent = parent.ok_or_else(|| TopoError::ParentLoop {
        device: bdf.to_string(),
        path: real.clone(),
        limit: MAX_TREE_DEPTH,
    })?;

    let vendor = read_hex(&real.join("vendor"), 4, "a vendor id like 0x8086")? as u16;
    let device = read_hex(&real.join("device"), 4, "a device id like 0x1234")? as u16;
    let class = read_hex(&real.join("class"), 6, "a class code like 0x010802")? as u32;
    let numa_node = read_opt_dec::<i32>(&real.join("numa_node"), "a NUMA node number or -1")?;
    if numa_node.is_some_and(|n| n < -1) {
        return Err(TopoError::parse(real.join("numa_node"), "a NUMA node number or -1", numa_node.unwrap_or_default().to_string().as_bytes()));
    }
    let local_cpulist = match read_opt_text(&real.join("local_cpulist"))? {
        None => None,
        Some(t) => {
            if parse_cpulist(&t).is_none() {
                return Err(TopoError::parse(real.join("local_cpulist"), "a CPU list like 0-7,16-23", t.as_bytes()));
            }
            Some(t.trim().to_string())
        }
    };
    let current_link_speed = read_link_speed(&real.join("current_link_speed"))?;
    let max_link_speed = read_link_speed(&real.join("max_link_speed"))?;
    let current_link_width = read_link_width(&real.join("current_link_width"), &[0], "a PCIe link width (1, 2, 4, 8, 12, 16 or 32; 0 where the link is down)")?;
    let max_link_width = read_link_width(&real.join("max_link_width"), &[0, 255], "a PCIe link width (1, 2, 4, 8, 12, 16 or 32; 0 or 255 where the port reports none)")?;
    let label = read_opt_text(&real.join("label"))?
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let driver = driver_name(&real.join("driver"))?;
    let physfn = match fs::symlink_metadata(real.join("physfn")) {
        Ok(_) => {
            let p = resolve_inside(&real.join("physfn"), root_real)?;
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let pf = n.parse::<Bdf>().map_err(|_| {
                TopoError::parse(real.join("physfn"), "a link to a PCI function", n.as_bytes())
            })?;
            if pf == bdf {
                return Err(TopoError::BadLink { path: real.join("physfn"), what: "points to its own function: a virtual function's physfn is another function".to_string() });
            }
            Some(pf)
        }
        Err(_) => None,
    };
    let config_path = real.join("config");
    let config = match read_bytes(&config_path) {
        Ok(b) => Ok(b),
        Err(TopoError::Io { source, .. }) => Err(format!("{}: {source}", config_path.display())),
        Err(e) => Err(e.to_string()),
    };
    let bars = match read_opt_text(&real.join("resource"))? {
        None => Vec::new(),
        Some(t) => parse_resource(&real.join("resource"), &t)?,
    };
    let p2p_dir = real.join("p2pmem");
    // The kernel's p2pmem is an attribute group (a directory); a file there is a damaged tree,
    // not a device that provides no P2P memory.
    if std::fs::symlink_metadata(&p2p_dir).is_ok_and(|m| !m.is_dir()) {
        return Err(TopoError::parse(&p2p_dir, "a directory (the kernel's p2pmem attribute group)", b"not a directory"));
    }
    let p2pmem = if p2p_dir.is_dir() {
        let size_bytes = parse_dec::<u64>(&p2p_dir.join("size"), &read_text(&p2p_dir.join("size"))?, "a byte count")?;
        let available_bytes = parse_dec::<u64>(
            &p2p_dir.join("available"),
            &read_text(&p2p_dir.join("available"))?,
            "a byte count",
        )?;
        let published_text = read_text(&p2p_dir.join("published"))?;
        let published = match published_text.trim() {
            "0" => false,
            "1" => true,
            _ => {
                return Err(TopoError::parse(p2p_dir.join("published"), "0 or 1", published_text.as_bytes()));
            }
        };
        if available_bytes > size_bytes {
            return Err(TopoError::parse(
                p2p_dir.join("available"),
                "a byte count no larger than p2pmem/size",
                available_bytes.to_string().as_bytes(),
            ));
        }
        Some(P2pProvider {
            size_bytes,
            available_bytes,
            published,
            allocate: p2p_dir.join("allocate").exists(),
        })
    } else {
        None
    };
    Ok(PciRecord {
        bdf,
        real_path: real,
        parent,
        vendor,
        device,
        class,
        numa_node,
        local_cpulist,
        current_link_speed,
        max_link_speed,
        current_link_width,
        max_link_width,
        label,
        driver,
        physfn,
        config,
        bars,
        p2pmem,
    })
}

/// Resource flags (include/linux/ioport.h): what a BAR decodes, and a memory BAR's width.
const IORESOURCE_IO: u64 = 0x100;
pub(crate) const IORESOURCE_MEM: u64 = 0x200;
pub(crate) const IORESOURCE_MEM_64: u64 = 0x10_0000;

/// Parses the `resource` file: one `start end flags` line (hex) per resource; BARs are lines 0-5.
/// The model keeps the memory BARs, each with its width (a 64-bit BAR takes two registers, and
/// the kernel lists the second as zeros); an I/O BAR is no window onto memory.
fn parse_resource(path: &Path, text: &str) -> Result<Vec<Bar>> {
    let mut bars = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 3 {
            return Err(TopoError::parse(path, "lines of three hex numbers (start end flags)", line.as_bytes()));
        }
        let start = parse_hex_prefixed(path, fields[0], u64::MAX, "a hex address")?;
        let end = parse_hex_prefixed(path, fields[1], u64::MAX, "a hex address")?;
        let flags = parse_hex_prefixed(path, fields[2], u64::MAX, "hex flags")?;
        if i < 6 && (start != 0 || end != 0) {
            if end < start {
                return Err(TopoError::parse(path, "end >= start", line.as_bytes()));
            }
            let size = (end - start)
                .checked_add(1)
                .ok_or_else(|| TopoError::parse(path, "a BAR smaller than 2^64 bytes (end - start + 1 in 64 bits)", line.as_bytes()))?;
            if flags & IORESOURCE_IO != 0 {
                continue;
            }
            if flags & IORESOURCE_MEM == 0 {
                return Err(TopoError::parse(path, "a BAR's flags with I/O (0x100) or memory (0x200) set", line.as_bytes()));
            }
            bars.push(Bar { index: i as u8, start, size, mem32: flags & IORESOURCE_MEM_64 == 0 });
        }
    }
    Ok(bars)
}

// ---------------------------------------------------------------------------------------------
// NVMe, block, CPU, NUMA, IOMMU.

fn is_nvme_ns_name(n: &str) -> bool {
    // nvmeXnY or nvmeXcYnZ
    let Some(rest) = n.strip_prefix("nvme") else { return false };
    let mut parts = rest.split(['c', 'n']);
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let first = parts.next().unwrap_or("");
    let others: Vec<&str> = parts.collect();
    all_digits(first) && (others.len() == 1 || others.len() == 2) && others.iter().all(|s| all_digits(s))
}

fn is_nvme_path_name(n: &str) -> bool {
    is_nvme_ns_name(n) && n["nvme".len()..].contains('c')
}

/// Controllers, and subsystem name -> controller names.
type NvmeRead = (Vec<NvmeRecord>, BTreeMap<String, Vec<String>>);

fn read_nvme(root: &Path, root_real: &Path, pci: &BTreeSet<Bdf>) -> Result<NvmeRead> {
    let mut out = Vec::new();
    let class_dir = root.join("class/nvme");
    for name in list_dir_opt(&class_dir)?.unwrap_or_default() {
        let entry = class_dir.join(&name);
        let real = resolve_inside(&entry, root_real)?;
        let pci_fn = match fs::symlink_metadata(real.join("device")) {
            Ok(_) => {
                let dev = resolve_inside(&real.join("device"), root_real)?;
                dev.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<Bdf>().ok())
                    .filter(|b| pci.contains(b))
            }
            Err(_) => None,
        };
        let trimmed = |f: &str| -> Result<Option<String>> {
            Ok(read_opt_text(&real.join(f))?.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
        };
        let mut namespaces: Vec<String> = list_dir(&real)?
            .into_iter()
            .filter(|n| is_nvme_ns_name(n) && real.join(n).is_dir())
            .collect();
        namespaces.sort_by_key(|a| natural_key(a));
        out.push(NvmeRecord {
            name: name.clone(),
            pci: pci_fn,
            transport: trimmed("transport")?,
            model: trimmed("model")?,
            serial: trimmed("serial")?,
            cmbsz: read_opt_dec::<u32>(&real.join("cmbsz"), "CMBSZ as a decimal number")?,
            cmbloc: read_opt_dec::<u32>(&real.join("cmbloc"), "CMBLOC as a decimal number")?,
            namespaces,
            real_path: real,
        });
    }
    let mut subsystems = BTreeMap::new();
    let sub_dir = root.join("class/nvme-subsystem");
    for sname in list_dir_opt(&sub_dir)?.unwrap_or_default() {
        let sreal = resolve_inside(&sub_dir.join(&sname), root_real)?;
        let mut ctrls = Vec::new();
        for n in list_dir(&sreal)? {
            let p = sreal.join(&n);
            let is_link = fs::symlink_metadata(&p).map(|m| m.file_type().is_symlink()).unwrap_or(false);
            if is_link && n.starts_with("nvme") && n[4..].bytes().all(|b| b.is_ascii_digit()) && n.len() > 4 {
                ctrls.push(n);
            }
        }
        subsystems.insert(sname, ctrls);
    }
    Ok((out, subsystems))
}

fn read_block(root: &Path, root_real: &Path) -> Result<Vec<BlockRecord>> {
    let mut out = Vec::new();
    let class_dir = root.join("class/block");
    let devices_dir = root_real.join("devices");
    for name in list_dir_opt(&class_dir)?.unwrap_or_default() {
        let entry = class_dir.join(&name);
        let real = resolve_inside(&entry, root_real)?;
        let is_partition = real.join("partition").exists();
        let has_md = real.join("md").is_dir();
        let has_dm = real.join("dm").is_dir();
        let detail = if has_dm {
            read_opt_text(&real.join("dm/name"))?.map(|s| s.trim().to_string())
        } else if has_md {
            read_opt_text(&real.join("md/level"))?.map(|s| s.trim().to_string())
        } else {
            None
        };
        let slaves = list_dir_opt(&real.join("slaves"))?.unwrap_or_default();
        let pci = nearest_bdf_ancestor(&real, &devices_dir);
        out.push(BlockRecord {
            name,
            real_path: real,
            is_partition,
            has_md,
            has_dm,
            detail,
            slaves,
            pci,
        });
    }
    Ok(out)
}

/// Parses `/sys/devices/system/cpu/modalias`: `cpu:type:x86,ven0002fam0019mod0001:feature:...`.
pub fn parse_cpu_modalias(text: &str) -> Option<Cpu> {
    let t = text.trim();
    let rest = t.strip_prefix("cpu:type:")?;
    let typ = rest.split(":feature:").next()?;
    let mut cpu = Cpu::default();
    if let Some(x86) = typ.strip_prefix("x86,") {
        cpu.arch = "x86".to_string();
        let ven = x86.strip_prefix("ven")?;
        let (ven, rest) = (ven.get(..4)?, ven.get(4..)?);
        let fam = rest.strip_prefix("fam")?;
        let (fam, rest) = (fam.get(..4)?, fam.get(4..)?);
        let model = rest.strip_prefix("mod")?.get(..4)?;
        cpu.vendor = CpuVendor::from_x86_code(u32::from_str_radix(ven, 16).ok()?);
        cpu.family = Some(u32::from_str_radix(fam, 16).ok()?);
        cpu.model = Some(u32::from_str_radix(model, 16).ok()?);
    } else {
        if typ.is_empty() || !typ.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return None;
        }
        cpu.arch = typ.to_string();
        cpu.vendor = if typ.starts_with("aarch64") || typ.starts_with("arm") {
            CpuVendor::Arm
        } else {
            CpuVendor::Unknown
        };
    }
    Some(cpu)
}

fn read_cpu_and_numa(root_real: &Path) -> Result<(Cpu, Vec<NumaNode>)> {
    let cpu_dir = root_real.join("devices/system/cpu");
    let mut cpu = match read_opt_text(&cpu_dir.join("modalias"))? {
        None => Cpu::default(),
        Some(t) => parse_cpu_modalias(&t).ok_or_else(|| {
            TopoError::parse(cpu_dir.join("modalias"), "cpu:type:<arch>[,venXXXXfamXXXXmodXXXX]:feature:...", t.as_bytes())
        })?,
    };
    let mut package_of: BTreeMap<u32, u32> = BTreeMap::new();
    for n in list_dir_opt(&cpu_dir)?.unwrap_or_default() {
        let Some(id) = n.strip_prefix("cpu").and_then(|s| s.parse::<u32>().ok()) else { continue };
        let p = cpu_dir.join(&n).join("topology/physical_package_id");
        if let Some(pkg) = read_opt_dec::<i64>(&p, "a package number")? {
            if pkg >= 0 {
                package_of.insert(id, pkg as u32);
            }
        }
    }
    let sockets: BTreeSet<u32> = package_of.values().copied().collect();
    if !sockets.is_empty() {
        cpu.sockets = Some(sockets.len() as u32);
    }
    let node_dir = root_real.join("devices/system/node");
    let mut nodes = Vec::new();
    for n in list_dir_opt(&node_dir)?.unwrap_or_default() {
        let Some(id) = n.strip_prefix("node").and_then(|s| s.parse::<u32>().ok()) else { continue };
        let cl_path = node_dir.join(&n).join("cpulist");
        let cpulist = read_opt_text(&cl_path)?.map(|s| s.trim().to_string());
        let mut socket = None;
        if let Some(cl) = &cpulist {
            let cpus = parse_cpulist(cl).ok_or_else(|| TopoError::parse(&cl_path, "a CPU list like 0-7,16-23", cl.as_bytes()))?;
            let pk: BTreeSet<u32> = cpus.iter().filter_map(|c| package_of.get(c).copied()).collect();
            if pk.len() == 1 {
                socket = pk.into_iter().next();
            }
        }
        nodes.push(NumaNode {
            id,
            cpulist: cpulist.filter(|s| !s.is_empty()),
            socket,
        });
    }
    Ok((cpu, nodes))
}

/// What `kernel/iommu_groups/N/type` holds (`iommu_group_show_type()`); `DMA-FQ` since 5.15.
const IOMMU_DOMAIN_TYPES: [&str; 6] = ["blocked", "identity", "unmanaged", "DMA", "DMA-FQ", "unknown"];

fn read_iommu(root_real: &Path) -> Result<Iommu> {
    let class = root_real.join("class/iommu");
    let Some(units) = list_dir_opt(&class)? else {
        // The kernel registers the iommu class whenever it is built with IOMMU support
        // (CONFIG_IOMMU_API); without it no IOMMU driver can be active.
        return Ok(Iommu {
            status: IommuStatus::Off,
            units: Vec::new(),
            default_domain: None,
            note: None,
        });
    };
    let mut domains = BTreeSet::new();
    let groups = root_real.join("kernel/iommu_groups");
    for g in list_dir_opt(&groups)?.unwrap_or_default() {
        let path = groups.join(&g).join("type");
        if let Some(t) = read_opt_text(&path)? {
            if !IOMMU_DOMAIN_TYPES.contains(&t.trim()) {
                return Err(TopoError::parse(path, "an IOMMU domain type (blocked, identity, unmanaged, DMA, DMA-FQ or unknown)", t.as_bytes()));
            }
            domains.insert(t.trim().to_string());
        }
    }
    Ok(Iommu {
        status: if units.is_empty() { IommuStatus::Off } else { IommuStatus::On },
        default_domain: if domains.len() == 1 { domains.into_iter().next() } else { None },
        units,
        note: None,
    })
}

/// `module/{nvidia,nvidia_fs,nvidia_peermem}`: loaded modules (and built-ins with parameters)
/// have a directory there. No `module/` at all (a fixture that did not copy it): unknown.
fn read_gpu_modules(root_real: &Path) -> Result<Option<GpuModules>> {
    let Some(loaded) = list_dir_opt(&root_real.join("module"))? else { return Ok(None) };
    let has = |name: &str| loaded.iter().any(|m| m == name);
    Ok(Some(GpuModules { nvidia: has("nvidia"), nvidia_fs: has("nvidia_fs"), nvidia_peermem: has("nvidia_peermem") }))
}

// ---------------------------------------------------------------------------------------------
// Public entry points.

/// Reads every record under `root` (normally `/sys`). Files -> records; no interpretation.
pub fn read_records(root: &Path) -> Result<SysfsRecords> {
    let root_real = fs::canonicalize(root).map_err(|e| TopoError::io(root, e))?;
    let pci_dir = root_real.join("bus/pci/devices");
    if !pci_dir.is_dir() {
        return Err(TopoError::NotSysfs {
            path: root.to_path_buf(),
            what: format!("{} is not a directory", pci_dir.display()),
        });
    }
    let mut pci = Vec::new();
    for name in list_dir(&pci_dir)? {
        pci.push(read_pci_function(&pci_dir.join(&name), &name, &root_real)?);
    }
    pci.sort_by_key(|r| r.bdf);
    let known: BTreeMap<Bdf, u32> = pci.iter().map(|r| (r.bdf, r.class)).collect();
    for r in &pci {
        if let ParentRef::Bridge(b) = r.parent {
            match known.get(&b) {
                None => {
                    return Err(TopoError::BadLink {
                        path: r.real_path.clone(),
                        what: format!("parent directory {b} is not listed in {}", pci_dir.display()),
                    });
                }
                // sysfs nests a function only under the bridge above its bus; a device's other
                // functions are its siblings, never below it.
                Some(&class) if is_endpoint_class(class) => {
                    return Err(TopoError::BadLink {
                        path: r.real_path.clone(),
                        what: format!("parent directory {b} is an endpoint (class {class:#08x}), not a bridge"),
                    });
                }
                Some(_) => {}
            }
        }
    }
    let known: BTreeSet<Bdf> = known.into_keys().collect();
    // A physical function has no physfn of its own: a link back (PF and VF naming each other)
    // or onward is a damaged tree.
    let physfn: BTreeMap<Bdf, Bdf> = pci.iter().filter_map(|r| Some((r.bdf, r.physfn?))).collect();
    for r in &pci {
        if let Some((pf, pp)) = r.physfn.and_then(|pf| Some((pf, *physfn.get(&pf)?))) {
            return Err(TopoError::BadLink {
                path: r.real_path.join("physfn"),
                what: format!("points to {pf}, which is itself a virtual function (its physfn is {pp}){}", if pp == r.bdf { ": a loop" } else { "" }),
            });
        }
    }
    let (nvme, nvme_subsystems) = read_nvme(&root_real, &root_real, &known)?;
    let block = read_block(&root_real, &root_real)?;
    let (cpu, numa_nodes) = read_cpu_and_numa(&root_real)?;
    let iommu = read_iommu(&root_real)?;
    let gpu_modules = read_gpu_modules(&root_real)?;
    let kernel = crate::kernel::system_root(&root_real).and_then(|r| crate::kernel::read(&r));
    Ok(SysfsRecords {
        root: root.to_path_buf(),
        pci,
        nvme,
        nvme_subsystems,
        block,
        cpu,
        numa_nodes,
        iommu,
        gpu_modules,
        kernel,
    })
}

/// Records -> model: upstream bridges from the real paths, port roles from config space (or the
/// tree), ACS from config space, kinds from class codes, stacked block devices resolved.
pub fn derive(records: &SysfsRecords) -> Result<Topology> {
    let mut topo = Topology::empty();
    topo.source = Some(format!("sysfs:{}", records.root.display()));
    topo.cpu = records.cpu.clone();
    topo.iommu = records.iommu.clone();
    topo.kernel = records.kernel.clone();
    topo.numa_nodes = records.numa_nodes.clone();
    // A firmware label on more than one function (every port of a card "Onboard LAN") names
    // none of them: they keep their addresses as names, and the machine can be read.
    let mut labels: BTreeMap<&str, Vec<Bdf>> = BTreeMap::new();
    records.pci.iter().filter_map(|r| Some((r.label.as_deref()?, r.bdf))).for_each(|(l, b)| labels.entry(l).or_default().push(b));
    for (label, devices) in labels.iter().filter(|(_, on)| on.len() > 1) {
        topo.dropped_labels.push(DroppedLabel { label: label.to_string(), devices: devices.clone(), why: "it is on more than one function".to_string() });
    }
    for r in &records.pci {
        let mut d = PciDevice::new(r.bdf, r.vendor, r.device, r.class);
        d.upstream = match &r.parent {
            ParentRef::Bridge(b) => Some(*b),
            ParentRef::RootBus(_) => None,
        };
        if let ParentRef::RootBus(name) = &r.parent {
            // A function on a root bus must carry that bus's number.
            if *name != r.bdf.root_bus_name() {
                return Err(TopoError::BadLink {
                    path: r.real_path.clone(),
                    what: format!("function {} sits directly under root bus {name}", r.bdf),
                });
            }
        }
        d.label = r.label.clone().filter(|l| labels.get(l.as_str()).is_some_and(|on| on.len() == 1));
        d.driver = r.driver.clone();
        d.numa_node = r.numa_node.and_then(|n| u32::try_from(n).ok());
        // A node the machine does not have (where its nodes are known) is a damaged file: taken
        // as is, it would pass two devices on different sockets as one socket's.
        if let Some(n) = d.numa_node.filter(|n| !records.numa_nodes.is_empty() && !records.numa_nodes.iter().any(|node| node.id == *n)) {
            return Err(TopoError::parse(r.real_path.join("numa_node"), "a NUMA node of this machine (node/nodeN) or -1", n.to_string().as_bytes()));
        }
        d.local_cpus = r.local_cpulist.clone();
        d.physfn = r.physfn;
        d.bars = r.bars.clone();
        d.p2pmem = r.p2pmem;
        if r.current_link_speed.is_some() || r.current_link_width.is_some() || r.max_link_speed.is_some() {
            d.link = Some(Link {
                current_speed: r.current_link_speed.unwrap_or(LinkSpeed::UNKNOWN),
                max_speed: r.max_link_speed.unwrap_or(LinkSpeed::UNKNOWN),
                current_width: r.current_link_width,
                max_width: r.max_link_width,
            });
        }
        match &r.config {
            Ok(cfg) => {
                d.acs = pcicfg::acs_state(cfg);
                d.role = match pcicfg::pcie_type(cfg) {
                    Some(PcieType::RootPort) => PortRole::RootPort,
                    Some(PcieType::SwitchUpstream) => PortRole::SwitchUpstream,
                    Some(PcieType::SwitchDownstream) => PortRole::SwitchDownstream,
                    Some(PcieType::PcieToPciBridge) | Some(PcieType::PciToPcieBridge) => PortRole::PcieToPciBridge,
                    Some(PcieType::RootComplexIntegrated) => PortRole::IntegratedEndpoint,
                    Some(PcieType::Endpoint) | Some(PcieType::LegacyEndpoint) if !d.is_bridge_class() => {
                        if d.class >> 8 == 0x0600 {
                            PortRole::HostBridge
                        } else {
                            PortRole::Endpoint
                        }
                    }
                    _ => PortRole::Auto,
                };
            }
            Err(why) => {
                d.acs = AcsState::Unknown {
                    reason: format!("config space not readable: {why}"),
                };
            }
        }
        topo.devices.push(d);
    }
    // Host bridges, with the NUMA node of their functions when they agree.
    let mut hb_nodes: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let parents: BTreeMap<Bdf, &ParentRef> = records.pci.iter().map(|r| (r.bdf, &r.parent)).collect();
    for r in &records.pci {
        let chain_root = root_of(&parents, r.bdf);
        let e = hb_nodes.entry(chain_root).or_default();
        if let Some(n) = r.numa_node.and_then(|n| u32::try_from(n).ok()) {
            e.insert(n);
        }
    }
    for (name, nodes) in hb_nodes {
        topo.host_bridges.push(HostBridge {
            name,
            numa_node: if nodes.len() == 1 { nodes.into_iter().next() } else { None },
            label: None,
        });
    }
    // NVMe controllers.
    for n in &records.nvme {
        let cmb = match (n.cmbsz, n.cmbloc) {
            (Some(sz), loc) if sz != 0 => Some(Cmb {
                cmbsz: sz,
                cmbloc: loc.unwrap_or(0),
            }),
            _ => None,
        };
        let subsystem = records
            .nvme_subsystems
            .iter()
            .find(|(_, ctrls)| ctrls.contains(&n.name))
            .map(|(s, _)| s.clone());
        topo.nvme_controllers.push(NvmeController {
            name: n.name.clone(),
            pci: n.pci,
            transport: n.transport.clone().unwrap_or_else(|| "unknown".to_string()),
            model: n.model.clone(),
            serial: n.serial.clone(),
            subsystem,
            cmb,
            namespaces: n.namespaces.clone(),
        });
    }
    // Block devices. A partition sits in its disk's directory (`nvme1n1/nvme1n1p1/partition`):
    // it is kept as a partition of that disk, and a stacked device on a partition names the disk.
    let names: BTreeSet<&str> = records.block.iter().filter(|b| !b.is_partition).map(|b| b.name.as_str()).collect();
    let partition_parent: BTreeMap<&str, String> = records
        .block
        .iter()
        .filter(|b| b.is_partition)
        .filter_map(|b| {
            let parent = b.real_path.parent()?.file_name()?.to_str()?.to_string();
            Some((b.name.as_str(), parent))
        })
        .collect();
    let mut blocks = Vec::new();
    for b in records.block.iter().filter(|b| !b.is_partition) {
        let in_subsys = b
            .real_path
            .components()
            .any(|c| c.as_os_str() == "nvme-subsystem");
        let kind = if b.has_md {
            BlockKind::Md
        } else if b.has_dm {
            BlockKind::Dm
        } else if is_nvme_path_name(&b.name) {
            BlockKind::NvmeNamespacePath
        } else if is_nvme_ns_name(&b.name) && in_subsys {
            BlockKind::NvmeMultipathHead
        } else if is_nvme_ns_name(&b.name) {
            BlockKind::NvmeNamespace
        } else if b.real_path.components().any(|c| c.as_os_str().to_string_lossy().starts_with("virtio")) {
            BlockKind::Virtio
        } else {
            BlockKind::Other
        };
        let mut members: Vec<String> = b
            .slaves
            .iter()
            .map(|s| partition_parent.get(s.as_str()).cloned().unwrap_or_else(|| s.clone()))
            .filter(|s| names.contains(s.as_str()))
            .collect();
        if kind == BlockKind::NvmeMultipathHead {
            // nvme<subsys>n<nsid> has paths nvme<subsys>c<ctrl>n<nsid>.
            if let Some((sub, nsid)) = b.name["nvme".len()..].split_once('n') {
                for other in &names {
                    if let Some(rest) = other.strip_prefix(&format!("nvme{sub}c")) {
                        if rest.split_once('n').map(|(_, ns)| ns) == Some(nsid) {
                            members.push(other.to_string());
                        }
                    }
                }
            }
        }
        members.sort_by_key(|a| natural_key(a));
        members.dedup();
        blocks.push(BlockDevice {
            name: b.name.clone(),
            kind,
            pci: b.pci.into_iter().collect(),
            members,
            detail: b.detail.clone(),
        });
    }
    for b in records.block.iter().filter(|b| b.is_partition) {
        let Some(disk) = partition_parent.get(b.name.as_str()).filter(|d| names.contains(d.as_str())) else {
            return Err(TopoError::BadLink {
                path: b.real_path.clone(),
                what: "a partition (it has a `partition` file) whose parent directory is no disk listed in class/block".to_string(),
            });
        };
        blocks.push(BlockDevice {
            name: b.name.clone(),
            kind: BlockKind::Partition,
            pci: b.pci.into_iter().collect(),
            members: vec![disk.clone()],
            detail: None,
        });
    }
    if let Some(cycle) = member_loop(&blocks) {
        let path = records.block.iter().find(|b| b.name == cycle[0]).map(|b| b.real_path.join("slaves")).unwrap_or_default();
        return Err(TopoError::BadLink { path, what: format!("stacked block devices loop: {}", cycle.join(" -> ")) });
    }
    // Stacked devices carry their members' PCI functions (bounded passes for nested stacks).
    for _ in 0..8 {
        let snapshot: BTreeMap<String, Vec<Bdf>> = blocks.iter().map(|b| (b.name.clone(), b.pci.clone())).collect();
        let mut changed = false;
        for b in blocks.iter_mut() {
            for m in b.members.clone() {
                for p in snapshot.get(&m).cloned().unwrap_or_default() {
                    if !b.pci.contains(&p) {
                        b.pci.push(p);
                        changed = true;
                    }
                }
            }
            b.pci.sort();
        }
        if !changed {
            break;
        }
    }
    topo.block_devices = blocks;
    topo.normalize()?;
    // A firmware label that is also a kernel name of something else (`nvme3n1` on a CSP while
    // nvme3n1 is another drive) would pass one device as the other: the kernel's names win,
    // and the label is dropped, which `topo` says.
    let shadowing: Vec<(usize, String)> = topo
        .devices
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, topo.label_shadows(d.label.as_deref()?, d.bdf)?)))
        .collect();
    for (i, what) in shadowing {
        let d = &mut topo.devices[i];
        if let Some(label) = d.label.take() {
            topo.dropped_labels.push(DroppedLabel { label, devices: vec![d.bdf], why: format!("it is {what}") });
        }
    }
    // Which GPU modules are loaded matters only where there is a GPU: elsewhere the model
    // (and a topology file exported from it) leaves it out.
    if topo.devices.iter().any(|d| d.kind == DeviceKind::Gpu) {
        topo.gpu_modules = records.gpu_modules;
    }
    Ok(topo)
}

/// The root bus above `bdf`, walking `parents` (each function's parent).
fn root_of(parents: &BTreeMap<Bdf, &ParentRef>, bdf: Bdf) -> String {
    let mut cur = bdf;
    for _ in 0..=parents.len() {
        match parents.get(&cur) {
            Some(ParentRef::Bridge(b)) => cur = *b,
            Some(ParentRef::RootBus(name)) => return name.clone(),
            None => break,
        }
    }
    cur.root_bus_name()
}

/// Reads and derives in one step.
pub fn read_topology(root: &Path) -> Result<Topology> {
    derive(&read_records(root)?)
}
