//! What a simulation says: throughput, host CPU, host memory traffic, the utilisation of every
//! link, device and memory, the bottleneck in words. Always labelled "simulated".

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{Allocation, SimOptions};
use crate::job::{Job, Plan};
use crate::machine::{Machine, ResKey};

#[derive(Clone, Debug, Serialize)]
pub struct Utilisation {
    pub resource: String,
    pub key: ResKey,
    pub used: f64,
    pub capacity: f64,
    pub unit: &'static str,
    pub share: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct FlowRate {
    pub flow: String,
    pub bytes_per_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    /// Always "simulated".
    pub label: &'static str,
    pub machine: String,
    pub platform: String,
    pub job: String,
    pub seed: u64,
    /// Steady state with every flow running: input bytes per second.
    pub throughput_bytes_per_s: f64,
    pub throughput_gbit_per_s: f64,
    /// Whole job, flow sizes jittered by the seed.
    pub job_seconds: f64,
    pub job_average_bytes_per_s: f64,
    pub host_cpu_cores_used: f64,
    pub host_cpu_cores: f64,
    pub host_cpu_share: f64,
    pub host_cpu_by_role: Vec<(String, f64)>,
    pub host_memory_bytes_per_s: f64,
    pub host_memory_gbit_per_s: f64,
    pub host_memory_by_purpose: Vec<(String, f64)>,
    /// Every resource with a known capacity, busiest first.
    pub utilisation: Vec<Utilisation>,
    /// "CMB memory of csp3 at 97%".
    pub bottleneck: String,
    pub bottleneck_share: f64,
    pub flows: Vec<FlowRate>,
    /// How long a chunk takes through the slowest flow (mean exact; percentiles under a stated
    /// assumption). `None` when no flow moves.
    pub chunk_latency: Option<crate::latency::ChunkLatency>,
    pub plan: Vec<String>,
    pub notes: Vec<String>,
    pub unknowns: Vec<String>,
    pub calibrations: Vec<String>,
}

pub(crate) fn build(
    m: &Machine,
    job: &Job,
    plan: &Plan,
    steady: &Allocation,
    job_seconds: f64,
    _phases: Vec<(f64, f64, f64)>,
    opts: &SimOptions,
) -> SimReport {
    let mut used: BTreeMap<ResKey, f64> = BTreeMap::new();
    let mut mem_purpose: Vec<(String, f64)> = Vec::new();
    let mut cpu_role: Vec<(String, f64)> = Vec::new();
    for (i, f) in plan.flows.iter().enumerate() {
        let x = steady.rates[i];
        for (k, a) in &f.loads {
            *used.entry(*k).or_insert(0.0) += a * x;
        }
        for (p, a) in &f.memory {
            match mem_purpose.iter_mut().find(|(q, _)| q == p) {
                Some((_, v)) => *v += a * x,
                None => mem_purpose.push((p.clone(), a * x)),
            }
        }
        for (p, a) in &f.cpu {
            match cpu_role.iter_mut().find(|(q, _)| q == p) {
                Some((_, v)) => *v += a * x,
                None => cpu_role.push((p.clone(), a * x)),
            }
        }
    }
    let mut util: Vec<Utilisation> = plan
        .resources
        .iter()
        .map(|(k, r)| {
            let u = used.get(k).copied().unwrap_or(0.0);
            Utilisation { resource: r.name.clone(), key: *k, used: u, capacity: r.capacity, unit: r.unit, share: u / r.capacity }
        })
        .collect();
    // Busiest first; among equals, the one that filled up first.
    let order = |k: &ResKey| steady.saturated.iter().position(|s| s == k).unwrap_or(usize::MAX);
    util.sort_by(|a, b| {
        let sa = (a.share * 1e6).round();
        let sb = (b.share * 1e6).round();
        sb.partial_cmp(&sa).unwrap_or(std::cmp::Ordering::Equal).then(order(&a.key).cmp(&order(&b.key))).then(a.key.cmp(&b.key))
    });
    let (bottleneck, share) = match util.first() {
        Some(u) => (format!("{} at {:.0}%", u.resource, u.share * 100.0), u.share),
        None => ("none known".into(), 0.0),
    };
    let throughput: f64 = steady.rates.iter().sum();
    let cores_total = m.platform.cores_per_socket.value.unwrap_or(0.0) * m.sockets as f64;
    let cores_used: f64 = (0..m.sockets).map(|s| used.get(&ResKey::CpuCores(s)).copied().unwrap_or(0.0)).sum();
    let memory: f64 = (0..m.sockets).map(|s| used.get(&ResKey::HostMemory(s)).copied().unwrap_or(0.0)).sum();
    let total_bytes: f64 = plan.flows.iter().map(|f| f.bytes).sum();
    SimReport {
        label: crate::LABEL,
        machine: m.description.clone(),
        platform: format!("{} ({})", m.platform.name, m.platform.description),
        job: job.describe(),
        seed: opts.seed,
        throughput_bytes_per_s: throughput,
        throughput_gbit_per_s: throughput * 8e-9,
        job_seconds,
        job_average_bytes_per_s: if job_seconds > 0.0 { total_bytes / job_seconds } else { 0.0 },
        host_cpu_cores_used: cores_used,
        host_cpu_cores: cores_total,
        host_cpu_share: if cores_total > 0.0 { cores_used / cores_total } else { 0.0 },
        host_cpu_by_role: cpu_role,
        host_memory_bytes_per_s: memory,
        host_memory_gbit_per_s: memory * 8e-9,
        host_memory_by_purpose: mem_purpose,
        utilisation: util,
        bottleneck,
        bottleneck_share: share,
        flows: plan.flows.iter().zip(&steady.rates).map(|(f, r)| FlowRate { flow: f.name.clone(), bytes_per_s: *r }).collect(),
        chunk_latency: plan
            .flows
            .iter()
            .zip(&steady.rates)
            .filter(|(_, r)| **r > 0.0)
            .min_by(|a, b| a.1.total_cmp(b.1))
            .and_then(|(f, r)| crate::latency::chunk_latency(&f.name, *r, job.chunk_bytes, job.queue_depth)),
        plan: plan.groups.clone(),
        notes: plan.notes.clone(),
        unknowns: plan.unknowns.iter().chain(&m.unknowns).cloned().collect(),
        calibrations: plan.calibrations.clone(),
    }
}

pub use peerpath_metrics::count;

/// Human units: 3.41 GB/s.
pub fn gbps(bytes_per_s: f64) -> String {
    format!("{:.2} GB/s", bytes_per_s / 1e9)
}

impl SimReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialize")
    }

    /// The text report.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "peerpath sim ({})", self.label);
        let _ = writeln!(s, "machine:    {}", self.machine);
        let _ = writeln!(s, "platform:   {}", self.platform);
        let _ = writeln!(s, "job:        {}", self.job);
        for g in &self.plan {
            let _ = writeln!(s, "  {g}");
        }
        let _ = writeln!(
            s,
            "throughput: {} ({:.1} Gb/s) [simulated]; whole job {:.1} s (seed {})",
            gbps(self.throughput_bytes_per_s),
            self.throughput_gbit_per_s,
            self.job_seconds,
            self.seed
        );
        let _ = writeln!(
            s,
            "host CPU:   {:.2} of {} cores ({:.1}%){}",
            self.host_cpu_cores_used,
            self.host_cpu_cores,
            self.host_cpu_share * 100.0,
            if self.unknowns.iter().any(|u| u.starts_with("host CPU orchestrating")) { "; orchestration unknown (below), not counted" } else { "" }
        );
        for (r, v) in &self.host_cpu_by_role {
            let _ = writeln!(s, "  {r}: {v:.2} cores");
        }
        let _ = writeln!(s, "host memory: {} ({:.1} Gb/s)", gbps(self.host_memory_bytes_per_s), self.host_memory_gbit_per_s);
        for (p, v) in &self.host_memory_by_purpose {
            let _ = writeln!(s, "  {p}: {}", gbps(*v));
        }
        let _ = writeln!(s, "bottleneck: {}", self.bottleneck);
        if let Some(l) = &self.chunk_latency {
            let _ = writeln!(
                s,
                "chunk latency: {} chunks of {:.0} KiB in flight, slowest flow {}: mean {:.0} us; p50 {:.0} / p99 {:.0} / p99.9 {:.0} us [simulated; {}]",
                l.queue_depth,
                l.chunk_bytes / 1024.0,
                l.flow,
                l.mean_us,
                l.p50_us,
                l.p99_us,
                l.p999_us,
                l.assumption
            );
        }
        let _ = writeln!(s, "utilisation (busiest first):");
        for u in self.utilisation.iter().take(12) {
            let (used, cap) = if u.unit == "cores" {
                (format!("{:.2}", u.used), format!("{:.0} cores", u.capacity))
            } else {
                (gbps(u.used), gbps(u.capacity))
            };
            let _ = writeln!(s, "  {:>5.1}%  {} ({used} of {cap})", u.share * 100.0, u.resource);
        }
        if self.utilisation.len() > 12 {
            let _ = writeln!(s, "  ... {} more (--json lists all)", self.utilisation.len() - 12);
        }
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        for c in &self.calibrations {
            let _ = writeln!(s, "calibrated: {c}");
        }
        for u in &self.unknowns {
            let _ = writeln!(s, "unknown: {u}");
        }
        s
    }
}
