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
//! At queue depth 1 nothing queues, so that latency has no spread here. A job's chunks do queue:
//! [`chunk_latency`] gives their time through a flow, with the one assumption it needs stated.

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

/// How long a chunk (one NVMe command's worth of input) takes through a flow of a job that
/// keeps `queue_depth` chunks in flight, from the flow's simulated rate.
#[derive(Clone, Debug, Serialize)]
pub struct ChunkLatency {
    pub chunk_bytes: f64,
    pub queue_depth: u32,
    /// The flow it describes (the slowest: its chunks wait longest).
    pub flow: String,
    /// Little's law: queue depth x chunk / flow rate. Exact for the mean, whatever the spread;
    /// also every percentile when service is steady (no spread).
    pub mean_us: f64,
    /// Percentiles if the bottleneck's service time per chunk is exponential (the assumption:
    /// the catalog says nothing about how device latency spreads): a chunk then waits for the
    /// `queue_depth - 1` ahead of it and itself, an Erlang(queue_depth) time.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub assumption: &'static str,
}

pub const CHUNK_LATENCY_ASSUMPTION: &str = "mean by Little's law (exact); percentiles assume exponential service at the flow's bottleneck (Erlang(queue depth)); with steady service every percentile equals the mean";

/// The chunk latency of a flow running at `bytes_per_s` with `queue_depth` chunks of
/// `chunk_bytes` in flight.
pub fn chunk_latency(flow: &str, bytes_per_s: f64, chunk_bytes: f64, queue_depth: u32) -> Option<ChunkLatency> {
    if !(bytes_per_s > 0.0 && chunk_bytes > 0.0 && queue_depth > 0) {
        return None;
    }
    let per_chunk_s = chunk_bytes / bytes_per_s; // 1 / service rate
    let q = |p: f64| erlang_quantile(queue_depth, p) * per_chunk_s * 1e6;
    Some(ChunkLatency {
        chunk_bytes,
        queue_depth,
        flow: flow.to_string(),
        mean_us: queue_depth as f64 * per_chunk_s * 1e6,
        p50_us: q(0.5),
        p99_us: q(0.99),
        p999_us: q(0.999),
        assumption: CHUNK_LATENCY_ASSUMPTION,
    })
}

/// The `p` quantile of an Erlang(k) variable with rate 1: the x where
/// 1 - sum_{n<k} e^-x x^n / n! = p. Written here (bisection on the closed form, terms in log
/// space so large k and x do not underflow): a gamma-quantile crate for one function would be
/// a heavier dependency than these lines.
pub fn erlang_quantile(k: u32, p: f64) -> f64 {
    let survival = |x: f64| -> f64 {
        let (mut sum, mut log_fact) = (0.0, 0.0);
        for n in 0..k {
            if n > 0 {
                log_fact += (n as f64).ln();
            }
            sum += (-x + n as f64 * x.ln() - log_fact).exp();
        }
        sum
    };
    let (mut lo, mut hi) = (0.0f64, k as f64 + 60.0 * (k as f64).sqrt() + 60.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        // Converged to adjacent floats (about 60 halvings): each further step costs k terms
        // and changes nothing.
        if mid <= lo || mid >= hi {
            break;
        }
        if 1.0 - survival(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_one_is_the_exponential() {
        for p in [0.5, 0.9, 0.99, 0.999] {
            let want = -(1.0f64 - p).ln();
            assert!((erlang_quantile(1, p) - want).abs() < 1e-9, "p {p}");
        }
    }

    #[test]
    fn erlang_quantiles_rise_and_narrow_around_k() {
        // Known values (chi-square: Erlang(k) = chi2(2k) / 2): median of Erlang(2) = 1.67835,
        // 0.99 quantile of Erlang(8) = 15.5441 / ... checked by the closed form itself.
        assert!((erlang_quantile(2, 0.5) - 1.678_346_99).abs() < 1e-6);
        let cdf8 = |x: f64| 1.0 - (0..8).map(|n| (-x + n as f64 * x.ln() - (1..=n).map(|i| (i as f64).ln()).sum::<f64>()).exp()).sum::<f64>();
        let x = erlang_quantile(8, 0.99);
        assert!((cdf8(x) - 0.99).abs() < 1e-9, "x {x}");
        for k in [1, 4, 16, 64, 512, 65536] {
            let (a, b, c) = (erlang_quantile(k, 0.5), erlang_quantile(k, 0.99), erlang_quantile(k, 0.999));
            assert!(a < b && b < c, "k {k}");
            assert!(a < k as f64 && (a - k as f64).abs() < 1.0, "median just below the mean, k {k}: {a}");
            // The spread relative to the mean shrinks as 1/sqrt(k).
            assert!((c - k as f64) / (k as f64) < 7.0 / (k as f64).sqrt(), "k {k}: {c}");
        }
    }

    #[test]
    fn chunk_latency_follows_littles_law() {
        let l = chunk_latency("f", 1e9, 1048576.0, 8).unwrap();
        assert!((l.mean_us - 8.0 * 1048.576).abs() < 1e-6);
        assert!(l.p50_us < l.mean_us && l.mean_us < l.p99_us && l.p99_us < l.p999_us);
        assert!(chunk_latency("f", 0.0, 1.0, 8).is_none());
    }
}
