//! peerpath-topo: the PCIe topology of a machine, and the Linux kernel's P2PDMA verdict for any
//! pair of its devices, with the reason in words and what to change.
//!
//! - [`Topology::from_sysfs`] reads a sysfs tree (root path is a parameter; `/sys` normally).
//!   Reading (files -> records, [`sysfs::read_records`]) is separate from deriving
//!   (records -> model, [`sysfs::derive`]) and from the verdicts (model -> answers).
//! - [`Topology::from_toml_str`] / [`Topology::to_toml_string`]: the same model as a hand-writable
//!   topology file.
//! - [`Topology::verdict`], [`Topology::verdict_many`]: the kernel's rules (`calc_map_type_and_dist`,
//!   the host-bridge allow-list, ACS) plus the block layer's and the provider's, and peerpath's
//!   no-P2P-across-sockets rule.
//! - [`Topology::render_tree`], [`Topology::render_matrix`], [`Topology::explain`],
//!   [`Topology::to_json_string`], [`Topology::render_svg`]: what `peerpath topo` prints.
//! - [`fixture`]: a builder of fake sysfs trees (real symlinks, nested device paths) and the
//!   canned machines of the seeds.

pub mod allowlist;
pub mod bdf;
pub mod cmb;
pub mod error;
pub mod fixture;
pub mod gpu;
mod hexnum;
pub mod kernel;
pub mod model;
pub mod pcicfg;
pub mod plan;
pub mod render;
pub mod sysfs;
pub mod verdict;

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest topology or catalog file read: a machine of thousands of
/// PCI functions takes a few MB; /dev/zero never ends.
pub const MAX_TEXT_FILE_BYTES: u64 = 64 << 20;

/// Opens `path` to read it, refusing anything but a regular file. The open
/// does not block (O_NONBLOCK): a FIFO planted where a file is read is
/// refused, not waited on. The type is checked on the opened descriptor.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let kind = f.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() { "is a directory" } else { "not a regular file" };
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, what));
    }
    Ok(f)
}

/// A text file read whole: a regular file of at most [`MAX_TEXT_FILE_BYTES`], UTF-8.
pub fn read_text_file(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    open_regular(path)?.take(MAX_TEXT_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_TEXT_FILE_BYTES {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("larger than {} MiB, more than any topology", MAX_TEXT_FILE_BYTES >> 20)));
    }
    Ok(text)
}

pub use bdf::Bdf;
pub use cmb::Cmb;
pub use error::{Result, TopoError};
pub use model::{
    BlockDevice, BlockKind, Cpu, CpuVendor, DeviceKind, DroppedLabel, Endpoint, GpuModules, HostBridge, Iommu, IommuStatus, Link, LinkSpeed,
    NumaNode, NvmeController, P2pProvider, PciDevice, PortRole, Topology,
};
pub use pcicfg::AcsState;
pub use plan::{plan, DeviceSelection, Plan, PlanRequest};
pub use verdict::{FoldedVfs, KernelMap, ManyVerdict, Matrix, P2pPath, Reason, Severity, Verdict, Vfs};

/// The default sysfs root.
pub const DEFAULT_SYSFS_ROOT: &str = "/sys";

impl Topology {
    /// Reads the machine described by the sysfs tree at `root` (normally `/sys`).
    pub fn from_sysfs(root: impl AsRef<Path>) -> Result<Topology> {
        sysfs::read_topology(root.as_ref())
    }

    /// Parses a topology file. Fields left out take their documented defaults; `kind` and `role`
    /// left out (or `auto`) are derived from class codes and the tree.
    pub fn from_toml_str(text: &str) -> Result<Topology> {
        let mut t: Topology = toml::from_str(text).map_err(|e| TopoError::TomlParse {
            path: None,
            source: Box::new(e),
        })?;
        t.normalize()?;
        t.check_numa_references()?;
        t.check_label_names()?;
        Ok(t)
    }

    /// Reads a topology file (a regular file of at most [`MAX_TEXT_FILE_BYTES`]).
    pub fn from_toml_file(path: impl AsRef<Path>) -> Result<Topology> {
        let path = path.as_ref();
        let text = read_text_file(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => TopoError::Io { path: path.to_path_buf(), source: e },
            _ => TopoError::FileUnreadable { path: path.to_path_buf(), source: e },
        })?;
        let mut t: Topology = toml::from_str(&text).map_err(|e| TopoError::TomlParse {
            path: Some(path.to_path_buf()),
            source: Box::new(e),
        })?;
        t.normalize()?;
        t.check_numa_references()?;
        t.check_label_names()?;
        Ok(t)
    }

    /// Writes the model as a topology file (what `peerpath topo --export` writes).
    pub fn to_toml_string(&self) -> Result<String> {
        let body = toml::to_string(self)?;
        Ok(format!(
            "# peerpath topology file (schema {}); see docs/topology.md\n{body}",
            model::SCHEMA_VERSION
        ))
    }

    /// The model as pretty JSON.
    pub fn to_json_string(&self) -> Result<String> {
        render::render_json(self)
    }

    /// peerpath's verdict for P2P between the memory of `provider` and the device `client`
    /// (names: `0000:41:00.0`, a label, `nvme3`, `nvme3n1`, `md0`).
    pub fn verdict(&self, provider: &str, client: &str) -> Result<Verdict> {
        verdict::verdict(self, provider, client)
    }

    /// The verdict for one provider and several clients (`pci_p2pdma_distance_many`).
    pub fn verdict_many(&self, provider: &str, clients: &[&str]) -> Result<ManyVerdict> {
        verdict::verdict_many(self, provider, clients)
    }

    /// The kernel's topology answer only (`calc_map_type_and_dist`) for two PCI functions.
    pub fn kernel_map(&self, provider: Bdf, client: Bdf) -> Result<KernelMap> {
        verdict::kernel_map(self, provider, client)
    }

    /// The providers with published memory nearest to all `clients` (`pci_p2pmem_find_many`).
    pub fn find_providers(&self, clients: &[&str]) -> Result<Vec<(Bdf, u32)>> {
        verdict::find_providers(self, clients)
    }

    /// The P2P matrix of the devices that matter, SR-IOV virtual functions in their physical
    /// function's row and column ([`Vfs::Folded`]).
    pub fn matrix(&self) -> Result<Matrix> {
        verdict::matrix(self, Vfs::Folded)
    }

    /// The P2P matrix of the devices that matter, SR-IOV virtual functions as `vfs` says.
    pub fn matrix_of(&self, vfs: Vfs) -> Result<Matrix> {
        verdict::matrix(self, vfs)
    }

    /// The annotated tree.
    /// How storage reaches each GPU's memory, and why.
    pub fn gpu_memory_paths(&self) -> Vec<gpu::GpuMemoryPath> {
        gpu::memory_paths(self)
    }

    pub fn render_tree(&self) -> String {
        render::render_tree(self)
    }

    /// The P2P matrix as a table, SR-IOV virtual functions in their physical function's row
    /// and column ([`Vfs::Folded`]).
    pub fn render_matrix(&self) -> Result<String> {
        render::render_matrix(self, Vfs::Folded)
    }

    /// The P2P matrix as a table, SR-IOV virtual functions as `vfs` says.
    pub fn render_matrix_of(&self, vfs: Vfs) -> Result<String> {
        render::render_matrix(self, vfs)
    }

    /// The explanation for one pair.
    pub fn explain(&self, provider: &str, client: &str) -> Result<String> {
        render::explain(self, provider, client)
    }

    /// The SVG picture.
    pub fn render_svg(&self) -> Result<String> {
        render::render_svg(self)
    }
}
