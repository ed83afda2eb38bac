//! Latency of one 4 KiB command at queue depth 1: the SSD's own latency plus the switches the
//! command's TLPs cross on its critical path.
//!
//! ```text
//!   read:  doorbell (down) | SQE fetch (up) + completion (down) | NAND | data (up) | CQE (up) | MSI (up)
//!          -> 6 crossings of every switch between the root port and the SSD
//!   write: as a read, with the data fetched by a read request (up) and its completion (down)
//!          -> 7 crossings
//! ```
//!
//! Queueing is not modelled (queue depth 1), so there is no spread: percentiles would be made
//! up, and the report gives none.

use serde::Serialize;

use crate::machine::{Machine, NodeKind};
use crate::SimError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Read,
    Write,
}

#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub label: &'static str,
    pub device: String,
    pub op: Op,
    /// The SSD's 4 KiB QD1 latency from the catalog; `None` when unknown.
    pub device_us: Option<f64>,
    pub switches: usize,
    pub crossings_per_switch: f64,
    pub fabric_us: f64,
    pub total_us: Option<f64>,
}

/// The 4 KiB QD1 latency of `ssd` to host memory.
pub fn command_latency(m: &Machine, ssd: usize, op: Op) -> Result<Latency, SimError> {
    let spec = match &m.nodes[ssd].kind {
        NodeKind::Ssd(s) => s,
        _ => return Err(SimError::Job(format!("{} is not an SSD in the catalog", m.nodes[ssd].name))),
    };
    let route = m.route(m.root_of(ssd), ssd);
    let crossings = match op {
        Op::Read => m.catalog.nvme.read_crossings.value.unwrap_or(6.0),
        Op::Write => m.catalog.nvme.write_crossings.value.unwrap_or(7.0),
    };
    let mut fabric_ns = 0.0;
    for &sw in &route.switches {
        if let NodeKind::Port { switch_crossing_ns, .. } = &m.nodes[sw].kind {
            fabric_ns += crossings * switch_crossing_ns.unwrap_or(0.0);
        }
    }
    let device_us = match op {
        Op::Read => spec.read_4k_latency_us.value,
        Op::Write => spec.write_4k_latency_us.value,
    };
    let fabric_us = fabric_ns / 1000.0;
    Ok(Latency {
        label: crate::LABEL,
        device: m.nodes[ssd].name.clone(),
        op,
        device_us,
        switches: route.switches.len(),
        crossings_per_switch: crossings,
        fabric_us,
        total_us: device_us.map(|d| d + fabric_us),
    })
}

/// Synchronous transfers of `transfer_bytes` at queue depth 1 (`dd` with O_DIRECT): each takes
/// the command latency plus the bytes at the path's streaming rate.
pub fn qd1_throughput(command_us: f64, streaming_bytes_per_s: f64, transfer_bytes: f64) -> f64 {
    transfer_bytes / (command_us * 1e-6 + transfer_bytes / streaming_bytes_per_s)
}
