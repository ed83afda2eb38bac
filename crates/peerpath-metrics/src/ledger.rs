use crate::CpuRole;
use peerpath_mem::MemoryDomain;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::sync::{Arc, Mutex};

/// One end of a data movement.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Location {
    /// A file or block device, named by its path byte for byte: two names
    /// that differ only in bytes that are not UTF-8 are two locations.
    Storage { name: OsString },
    /// A memory domain (host NUMA node, P2P memory, emulated device memory).
    Memory { domain: MemoryDomain },
}

/// JSON: `{"kind": "storage", "name": ...}` (with `name_bytes`, the name's
/// exact bytes, where it is not UTF-8: `name` then has U+FFFD in their
/// place, as the job report's `source_bytes`), or `{"kind": "memory", "domain": ...}`.
impl Serialize for Location {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match self {
            Location::Storage { name } => {
                map.serialize_entry("kind", "storage")?;
                map.serialize_entry("name", &name.to_string_lossy())?;
                if name.to_str().is_none() {
                    map.serialize_entry("name_bytes", name.as_bytes())?;
                }
            }
            Location::Memory { domain } => {
                map.serialize_entry("kind", "memory")?;
                map.serialize_entry("domain", domain)?;
            }
        }
        map.end()
    }
}

impl Location {
    pub fn storage(name: impl AsRef<OsStr>) -> Self {
        Location::Storage { name: name.as_ref().to_os_string() }
    }
    pub fn memory(domain: &MemoryDomain) -> Self {
        Location::Memory { domain: domain.clone() }
    }
    fn is_host_memory(&self) -> bool {
        matches!(self, Location::Memory { domain } if domain.is_host())
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Lossy: the reports print it quoted, from its bytes (peerpath-runtime's report.rs).
            Location::Storage { name } => write!(f, "storage {}", name.display()),
            Location::Memory { domain } => write!(f, "{domain}"),
        }
    }
}

/// Who moved the bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mover {
    /// A device's DMA engine (storage controller for file I/O).
    Dma { engine: String },
    /// Host CPU threads of a role.
    Cpu { role: CpuRole },
    /// A compute device, inside its own memory (a function, or a copy).
    Device { name: String },
}

impl fmt::Display for Mover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mover::Dma { engine } => write!(f, "DMA ({engine})"),
            Mover::Cpu { role } => write!(f, "CPU ({role})"),
            Mover::Device { name } => write!(f, "device {name}"),
        }
    }
}

/// Why the bytes moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    ReadSource,
    WriteTarget,
    /// A function (compress, decompress, verify) read its input and wrote its output.
    Function,
    /// A copy that packs variable-length output into aligned extents for O_DIRECT.
    PackForDirectIo,
    /// A copy that joins a member split across two read buffers.
    Reassemble,
    /// A copy of metadata (headers, queue entries).
    Metadata,
    /// A copy between a device's own memory and the host buffers storage
    /// DMAs into and out of (memory the I/O engine cannot reach).
    Stage,
    /// The kernel zeroing fresh pages a job's threads fault in (a mapped
    /// output on a memory file system): written, never read.
    ZeroPages,
    /// Sealing output blocks (AES-256-GCM): reads the plaintext, writes it
    /// encrypted with its tag.
    Encrypt,
    /// Opening sealed blocks: reads them with their tags, writes the plaintext.
    Decrypt,
}

impl fmt::Display for Purpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Purpose::ReadSource => "read source",
            Purpose::WriteTarget => "write target",
            Purpose::Function => "function",
            Purpose::PackForDirectIo => "pack for O_DIRECT",
            Purpose::Reassemble => "join split member",
            Purpose::Metadata => "metadata",
            Purpose::Stage => "stage through host memory",
            Purpose::ZeroPages => "kernel zeroes fresh pages",
            Purpose::Encrypt => "encrypt",
            Purpose::Decrypt => "decrypt",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    source: Location,
    target: Location,
    mover: Mover,
    purpose: Purpose,
}

#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    operations: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// The exact byte ledger. Cheap to clone (a shared handle); every thread
/// records into it. A movement reads `bytes_read` from its source and
/// writes `bytes_written` to its target: equal for DMA and copies, input
/// and output sizes for a function.
#[derive(Clone, Default)]
pub struct Ledger {
    entries: Arc<Mutex<BTreeMap<Key, Totals>>>,
}

/// One aggregated row of the ledger.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerEntry {
    pub source: Location,
    pub target: Location,
    pub mover: Mover,
    pub purpose: Purpose,
    pub operations: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// The ledger, summed.
#[derive(Clone, Debug, Serialize)]
pub struct LedgerSummary {
    pub entries: Vec<LedgerEntry>,
    /// Bytes read from plus bytes written to host memory, by anyone.
    pub host_memory_traffic_bytes: u64,
    /// Of which moved by DMA engines.
    pub host_memory_dma_bytes: u64,
    /// Of which moved by CPU threads.
    pub host_memory_cpu_bytes: u64,
    /// Host memory traffic carrying payload (everything but metadata).
    pub host_memory_payload_bytes: u64,
    /// Host memory traffic carrying metadata (markers, headers, entries).
    pub host_memory_metadata_bytes: u64,
    /// Bytes read plus written in each memory domain that is not host
    /// memory (device memory), by domain.
    pub device_memory_bytes: BTreeMap<String, u64>,
}

impl Ledger {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one movement.
    pub fn record(
        &self,
        source: Location,
        target: Location,
        mover: Mover,
        purpose: Purpose,
        bytes_read: u64,
        bytes_written: u64,
    ) {
        let key = Key { source, target, mover, purpose };
        let mut entries = self.entries.lock().expect("ledger lock poisoned");
        let t = entries.entry(key).or_default();
        t.operations += 1;
        t.bytes_read += bytes_read;
        t.bytes_written += bytes_written;
    }

    /// Records a copy (bytes read == bytes written).
    pub fn record_copy(&self, source: Location, target: Location, mover: Mover, purpose: Purpose, bytes: u64) {
        self.record(source, target, mover, purpose, bytes, bytes);
    }

    pub fn summary(&self) -> LedgerSummary {
        let entries = self.entries.lock().expect("ledger lock poisoned");
        let mut out = Vec::with_capacity(entries.len());
        let (mut dma, mut cpu, mut metadata) = (0u64, 0u64, 0u64);
        let mut device_memory: BTreeMap<String, u64> = BTreeMap::new();
        for (k, t) in entries.iter() {
            if let Location::Memory { domain } = &k.source {
                if !domain.is_host() {
                    *device_memory.entry(domain.to_string()).or_default() += t.bytes_read;
                }
            }
            if let Location::Memory { domain } = &k.target {
                if !domain.is_host() {
                    *device_memory.entry(domain.to_string()).or_default() += t.bytes_written;
                }
            }
            let mut host = 0;
            if k.source.is_host_memory() {
                host += t.bytes_read;
            }
            if k.target.is_host_memory() {
                host += t.bytes_written;
            }
            match k.mover {
                Mover::Dma { .. } | Mover::Device { .. } => dma += host,
                Mover::Cpu { .. } => cpu += host,
            }
            if k.purpose == Purpose::Metadata {
                metadata += host;
            }
            out.push(LedgerEntry {
                source: k.source.clone(),
                target: k.target.clone(),
                mover: k.mover.clone(),
                purpose: k.purpose,
                operations: t.operations,
                bytes_read: t.bytes_read,
                bytes_written: t.bytes_written,
            });
        }
        LedgerSummary {
            entries: out,
            host_memory_traffic_bytes: dma + cpu,
            host_memory_dma_bytes: dma,
            host_memory_cpu_bytes: cpu,
            host_memory_payload_bytes: dma + cpu - metadata,
            host_memory_metadata_bytes: metadata,
            device_memory_bytes: device_memory,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Location {
        Location::memory(&MemoryDomain::Host { numa_node: Some(0) })
    }

    #[test]
    fn host_traffic_counts_each_side_that_touches_host_memory() {
        let l = Ledger::new();
        let dma = Mover::Dma { engine: "storage".into() };
        let cpu = Mover::Cpu { role: CpuRole::Compute };
        l.record_copy(Location::storage("in"), host(), dma.clone(), Purpose::ReadSource, 100);
        l.record(host(), host(), cpu, Purpose::Function, 100, 50);
        l.record_copy(host(), Location::storage("out"), dma, Purpose::WriteTarget, 50);
        let s = l.summary();
        assert_eq!(s.host_memory_dma_bytes, 150);
        assert_eq!(s.host_memory_cpu_bytes, 150);
        assert_eq!(s.host_memory_traffic_bytes, 300);
        assert_eq!(s.entries.len(), 3);
    }

    #[test]
    fn device_memory_is_not_host_traffic() {
        let l = Ledger::new();
        let dev = Location::memory(&MemoryDomain::Emulated { device: "csp0".into() });
        l.record_copy(Location::storage("in"), dev.clone(), Mover::Dma { engine: "nvme".into() }, Purpose::ReadSource, 4096);
        l.record(dev.clone(), dev, Mover::Device { name: "csp0".into() }, Purpose::Function, 4096, 1000);
        let s = l.summary();
        assert_eq!(s.host_memory_traffic_bytes, 0);
        assert_eq!(s.device_memory_bytes.get("emulated device memory of csp0").copied(), Some(4096 + 4096 + 1000), "{:?}", s.device_memory_bytes);
    }

    #[test]
    fn metadata_is_counted_apart_from_payload() {
        let l = Ledger::new();
        let dev = Location::memory(&MemoryDomain::Emulated { device: "csp0".into() });
        l.record_copy(host(), dev, Mover::Cpu { role: CpuRole::Orchestration }, Purpose::Metadata, 28);
        l.record_copy(Location::storage("in"), host(), Mover::Dma { engine: "nvme".into() }, Purpose::ReadSource, 100);
        let s = l.summary();
        assert_eq!((s.host_memory_metadata_bytes, s.host_memory_payload_bytes), (28, 100));
    }

    #[test]
    fn storage_names_stay_exact_and_apart() {
        let l = Ledger::new();
        let dma = Mover::Dma { engine: "storage controller".into() };
        for (name, bytes) in [(b"a\xffb".as_slice(), 10), (b"a\xfeb", 20), (b"plain", 30)] {
            l.record_copy(Location::storage(OsStr::from_bytes(name)), host(), dma.clone(), Purpose::ReadSource, bytes);
        }
        let s = l.summary();
        let json: Vec<serde_json::Value> = s.entries.iter().map(|e| serde_json::to_value(&e.source).unwrap()).collect();
        assert_eq!(
            json,
            [
                serde_json::json!({"kind": "storage", "name": "a\u{fffd}b", "name_bytes": [97, 254, 98]}),
                serde_json::json!({"kind": "storage", "name": "a\u{fffd}b", "name_bytes": [97, 255, 98]}),
                serde_json::json!({"kind": "storage", "name": "plain"}),
            ]
        );
        assert_eq!(s.entries.iter().map(|e| e.bytes_read).collect::<Vec<_>>(), [20, 10, 30]);
        assert_eq!(serde_json::to_value(host()).unwrap(), serde_json::json!({"kind": "memory", "domain": {"kind": "host", "numa_node": 0}}));
    }

    #[test]
    fn repeated_movements_aggregate() {
        let l = Ledger::new();
        for _ in 0..3 {
            l.record_copy(host(), host(), Mover::Cpu { role: CpuRole::Orchestration }, Purpose::PackForDirectIo, 10);
        }
        let s = l.summary();
        assert_eq!(s.entries[0].operations, 3);
        assert_eq!(s.entries[0].bytes_read, 30);
    }
}
