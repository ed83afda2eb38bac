//! peerpath-sim: a flow-level model of a machine's PCIe fabric, its devices, host memory and
//! CPU cores, built on the topology model of `peerpath-topo` (the same topology files and the
//! same P2P verdicts as real runs). Every output is labelled "simulated".
//!
//! - [`catalog`]: device figures, each with its source (`sim/catalog.toml`).
//! - [`pcie`]: bytes on the wire per payload byte (TLP and DLLP overhead).
//! - [`machine`]: the topology turned into nodes with links, devices with catalog entries, and
//!   routes between them.
//! - [`job`]: what moves: compression offloaded to CSPs over P2P, compression on the CPU,
//!   plain reads and writes; the planner that groups SSDs with CSPs.
//! - [`engine`]: max-min fair sharing of every link direction, device and memory among flows,
//!   recomputed when a flow finishes (deterministic; the seed only jitters flow sizes).
//! - [`report`]: throughput, host CPU, host memory traffic, utilisation of everything, the
//!   bottleneck in words, latency.
//! - [`reproduce`]: the published figures of seeds 001, 003 and 004, predicted side by side.
//! - [`sweep`]: what-if sweeps (`--vary csp=1..12`), tables and SVG plots; [`sweep::plan`].
//!
//! Design and trade-offs: `docs/simulator.md`.

pub mod catalog;
pub mod engine;
pub mod job;
pub mod latency;
pub mod machine;
pub mod pcie;
pub mod report;
pub mod reproduce;
pub mod svg;
pub mod sweep;

pub use catalog::{Catalog, Figure, SourceKind};
pub use engine::{simulate, SimOptions};
pub use job::{Job, JobKind};
pub use machine::Machine;
pub use report::SimReport;

/// Every output says where its figures come from.
pub const LABEL: &str = "simulated";

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("catalog: {0}")]
    Catalog(String),
    /// A catalog file the user named cannot be opened or read (missing, permission, a
    /// directory); one that is read but too large or not UTF-8 is [`SimError::Catalog`].
    #[error("cannot read {0}")]
    Unreadable(String),
    #[error(transparent)]
    Topology(#[from] peerpath_topo::TopoError),
    #[error("job: {0}")]
    Job(String),
    #[error("what-if: {0}")]
    Vary(String),
}
