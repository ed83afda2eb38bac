//! The published figures of the seeds, predicted from the catalog and the topology fixtures,
//! side by side (`peerpath sim reproduce`).
//!
//! Each row says whether the prediction is within 10% ("reproduced"), rests on a figure taken
//! from that very row ("calibrated", so not a prediction), misses ("not reproduced", with the
//! reason), or measures something the model does not have ("not comparable").

use std::fmt::Write as _;

use peerpath_topo::Topology;
use serde::Serialize;

use crate::catalog::Catalog;
use crate::engine::{simulate, SimOptions};
use crate::job::{Compute, Job, JobKind, Memory};
use crate::latency::{command_latency, qd1_throughput, Op};
use crate::machine::{Machine, NodeKind};
use crate::report::SimReport;
use crate::SimError;

/// The EPYC case-study fixture of peerpath-topo (seed 003).
pub const EPYC_CASE_STUDY: &str = include_str!("../../peerpath-topo/fixtures/epyc-case-study/topology.toml");
/// The FPGA cascade fixture of peerpath-topo (seed 001).
pub const FPGA_CASCADE: &str = include_str!("../../peerpath-topo/fixtures/fpga-cascade/topology.toml");
/// The GPU machine this project is lent at times (its real sysfs, exported).
pub const LENT_GPU_HOST: &str = include_str!("../../peerpath-topo/fixtures/h100-gpu-host/topology.toml");
/// Seed 002's experiment shape: a data mover (seed 004's server with a 200 Gb/s NIC).
pub const DATAMOVER_SR635: &str = include_str!("../machines/datamover-sr635-cx6dx.toml");
/// Seed 004's server, written for the simulator.
pub const SEED004_SR635: &str = include_str!("../machines/seed004-sr635.toml");

/// Relative error within which a figure counts as reproduced.
pub const TOLERANCE: f64 = 0.10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Reproduced,
    Calibrated,
    NotReproduced,
    NotComparable,
}

impl Status {
    pub fn words(self) -> &'static str {
        match self {
            Status::Reproduced => "reproduced",
            Status::Calibrated => "calibrated",
            Status::NotReproduced => "NOT reproduced",
            Status::NotComparable => "not comparable",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub seed: &'static str,
    pub figure: String,
    pub unit: &'static str,
    /// The published value (the upper end of a published range).
    pub published: f64,
    /// The lower end of a published range ("70-125 us": 70); `published` for a single value.
    pub published_low: f64,
    pub published_text: String,
    pub predicted: f64,
    /// How far the prediction is from the published figure, relative to it: from the nearer
    /// end of a range, 0 inside it (and when published is 0).
    pub error: f64,
    pub status: Status,
    pub bottleneck: String,
    pub why: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct DdPoint {
    pub transfer_bytes: f64,
    pub bytes_per_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Reproduction {
    pub label: &'static str,
    pub tolerance: f64,
    pub rows: Vec<Row>,
    /// Seed 001, one SSD, `dd` O_DIRECT reads at queue depth 1 by transfer size.
    pub dd_read_sweep: Vec<DdPoint>,
    /// Seed 001, 4 KiB read latency of the first SSD of each stacked card.
    pub latency_by_card_us: Vec<f64>,
}

fn rel(pred: f64, publ: f64) -> f64 {
    if publ == 0.0 {
        0.0
    } else {
        (pred - publ) / publ
    }
}

impl Row {
    /// A published range from `low` to `published`: the error from its nearer end, 0 inside.
    fn from(mut self, low: f64) -> Row {
        self.published_low = low;
        self.error = range_rel(self.predicted, low, self.published);
        self
    }
}

fn range_rel(pred: f64, low: f64, high: f64) -> f64 {
    if pred < low {
        rel(pred, low)
    } else if pred > high {
        rel(pred, high)
    } else {
        0.0
    }
}

fn status_for(pred: f64, publ: f64) -> Status {
    if rel(pred, publ).abs() <= TOLERANCE {
        Status::Reproduced
    } else {
        Status::NotReproduced
    }
}

#[allow(clippy::too_many_arguments)]
fn row(seed: &'static str, figure: impl Into<String>, unit: &'static str, published: f64, published_text: impl Into<String>, predicted: f64, status: Status, bottleneck: impl Into<String>, why: impl Into<String>) -> Row {
    Row {
        seed,
        figure: figure.into(),
        unit,
        published,
        published_low: published,
        published_text: published_text.into(),
        predicted,
        error: rel(predicted, published),
        status,
        bottleneck: bottleneck.into(),
        why: why.into(),
    }
}

fn run(m: &Machine, job: Job) -> Result<SimReport, SimError> {
    simulate(m, &job, &SimOptions { seed: 1, size_jitter: 0.0 })
}

fn memory_of(r: &SimReport, purposes: &[&str]) -> f64 {
    r.host_memory_by_purpose.iter().filter(|(p, _)| purposes.contains(&p.as_str())).map(|(_, v)| v).sum()
}

/// Seed 003, Table 1, on the EPYC case-study fixture.
pub fn seed003(cat: &Catalog) -> Result<Vec<Row>, SimError> {
    let topo = Topology::from_toml_str(EPYC_CASE_STUDY)?;
    let m = Machine::new(topo, cat, Some("amd-epyc-7501-2s"))?;
    let mut rows = Vec::new();
    // Software zlib, 18 SSDs, 64 cores.
    let r = run(&m, Job::new(JobKind::CompressCpu))?;
    rows.push(row("003", "software zlib: throughput", "Gb/s", 44.0, "44 Gb/s", r.throughput_gbit_per_s, Status::Calibrated, &r.bottleneck,
        "the EPYC 7501 per-core zlib-1 rate in the catalog is this row divided by 64 cores (no independent figure for that CPU and data); with the rate measured here (41 MB/s per core) the model gives 21 Gb/s"));
    let cpu = r.host_cpu_share * 100.0;
    rows.push(row("003", "software zlib: host CPU", "%", 100.0, "100%", cpu, status_for(cpu, 100.0), &r.bottleneck,
        "prediction: the cores are the first resource to fill (SSDs, links and memory have room)"));
    let mem_all = r.host_memory_gbit_per_s;
    let mem_in = memory_of(&r, &["DMA from source SSDs", "compression reads its input"]) * 8e-9;
    rows.push(row("003", "software zlib: host memory, every movement", "Gb/s", 88.0, "88 Gb/s (estimate)", mem_all, status_for(mem_all, 88.0), "",
        format!("the model counts DMA in (1x), compression reading it (1x), writing the output (1/r) and DMA out (1/r) = {:.0} Gb/s; the published figure is the authors' estimate (their footnote) and equals 2x throughput", mem_all)));
    rows.push(row("003", "software zlib: host memory, input side (DMA in + CPU read)", "Gb/s", 88.0, "88 Gb/s (estimate)", mem_in, status_for(mem_in, 88.0), "",
        "what the published estimate equals: each input byte written once by DMA and read once by the CPU; the compressed output is not in it. Depends on the calibrated throughput"));
    let published = [(1, 0.8, 27.0), (2, 1.6, 53.0), (3, 2.5, 81.0), (4, 3.2, 108.0), (5, 4.2, 135.0), (6, 5.0, 159.0)];
    for (k, cpu_pub, tput_pub) in published {
        let mut job = Job::new(JobKind::CompressP2p);
        job.csps = Some(k);
        let r = run(&m, job)?;
        let t = r.throughput_gbit_per_s;
        rows.push(row("003", format!("p2pdma {k} CSP / {} SSDs: throughput", 3 * k), "Gb/s", tput_pub, format!("{tput_pub} Gb/s"), t, status_for(t, tput_pub), &r.bottleneck,
            "prediction from the CSPs' x4 Gen3 links and TLP overhead (the NoLoad engine rate is unknown, so unlimited)"));
        let c = r.host_cpu_share * 100.0;
        let (st, why) = if k == 1 {
            (Status::Calibrated, "orchestration cost per GB is calibrated on this row")
        } else {
            (status_for(c, cpu_pub), "prediction: orchestration cost per GB (calibrated on the 1-CSP row) x predicted throughput")
        };
        rows.push(row("003", format!("p2pdma {k} CSP: host CPU"), "%", cpu_pub, format!("{cpu_pub}%"), c, st, "", why));
        let mem = r.host_memory_gbit_per_s;
        rows.push(row("003", format!("p2pdma {k} CSP: host memory"), "Gb/s", 0.0, "0 Gb/s", mem, if mem < 0.5 { Status::Reproduced } else { Status::NotReproduced }, "",
            "data moves SSD -> CMB -> SSD by P2P; host memory holds only NVMe queue entries (published in whole Gb/s: below 0.5 rounds to 0)"));
    }
    Ok(rows)
}

/// Seed 004: four PM9A3 SSDs DMA into and out of the NoLoad IA-440i's CMB.
pub fn seed004(cat: &Catalog) -> Result<Vec<Row>, SimError> {
    let topo = Topology::from_toml_str(SEED004_SR635)?;
    let m = Machine::new(topo, cat, Some("amd-epyc-7302p-1s"))?;
    let cmb = m.find("noload")?;
    let ddr = m.resource(crate::machine::ResKey::CmbMemory(cmb)).map(|r| r.capacity).unwrap_or(0.0);
    let mut rows = Vec::new();
    for (job, publ, fig, what) in [
        (JobKind::Read { into: Memory::Cmb(Some("noload".into())) }, 16.3, "4 SSDs write into the CMB (SSDs read)", "writes"),
        (JobKind::Write { from: Memory::Cmb(Some("noload".into())) }, 12.6, "4 SSDs read from the CMB (SSDs write)", "reads"),
    ] {
        let r = run(&m, Job::new(job))?;
        let g = r.throughput_bytes_per_s / 1e9;
        let st = status_for(g, publ);
        let why = format!(
            "the card's two DDR4-3200 x64 banks peak at {:.1} GB/s ({:.0}% used at the prediction); the published {publ} GB/s would need {:.0}% DDR4 efficiency for {what}, which no source gives. The model is limited by the SSDs' own datasheet rates instead",
            ddr / 1e9,
            100.0 * r.throughput_bytes_per_s / ddr.max(1.0),
            100.0 * publ * 1e9 / ddr.max(1.0)
        );
        rows.push(row("004", fig, "GB/s", publ, format!("{publ} GB/s (limited by DDR4)"), g, st, &r.bottleneck, why));
    }
    Ok(rows)
}

/// Seed 001's outputs: rows, the dd sweep, latency by card.
pub type Seed001 = (Vec<Row>, Vec<DdPoint>, Vec<f64>);

/// Seed 001 on the FPGA cascade fixture: rows, the dd sweep and latency by card.
pub fn seed001(cat: &Catalog) -> Result<Seed001, SimError> {
    let topo = Topology::from_toml_str(FPGA_CASCADE)?;
    let m = Machine::new(topo, cat, Some("zynq-us-plus-xdma"))?;
    let mut rows = Vec::new();
    let mut one = Job::new(JobKind::Read { into: Memory::Host });
    one.ssds = Some(1);
    let r1 = run(&m, one)?;
    let ssd0 = m.find("ssd0")?;
    let lat = command_latency(&m, ssd0, Op::Read)?;
    let cmd_us = lat.total_us.unwrap_or(0.0);
    let mut sweep = Vec::new();
    let mut bs = 4096.0;
    while bs <= 64.0 * 1048576.0 {
        sweep.push(DdPoint { transfer_bytes: bs, bytes_per_s: qd1_throughput(cmd_us, r1.throughput_bytes_per_s, bs) });
        bs *= 2.0;
    }
    let peak = sweep.last().map(|p| p.bytes_per_s).unwrap_or(0.0) / 1e9;
    rows.push(row("001", "1 SSD dd read, peak as transfer size grows", "GB/s", 3.3, "3.3 GB/s", peak, status_for(peak, 3.3), &r1.bottleneck,
        format!("dd at queue depth 1: each transfer pays {cmd_us:.1} us of command latency, then streams at {:.2} GB/s; shown at 64 MiB", r1.throughput_bytes_per_s / 1e9)));
    let mut w1 = Job::new(JobKind::Write { from: Memory::Host });
    w1.ssds = Some(1);
    let rw1 = run(&m, w1)?;
    let g = rw1.throughput_bytes_per_s / 1e9;
    rows.push(row("001", "1 SSD dd write, peak", "GB/s", 1.5, "1.0-1.5 GB/s", g, if range_rel(g, 1.0, 1.5).abs() <= TOLERANCE { Status::Reproduced } else { Status::NotReproduced }, &rw1.bottleneck,
        "the seed's SSDs are not named and differ ('every tested NVMe SSD has its own area of peak performance'); the fixture's 970 EVO Plus 1 TB writes 3.3 GB/s into its SLC buffer, 1.7 GB/s after it").from(1.0));
    for (kind, publ, fig) in [
        (JobKind::Read { into: Memory::Host }, 4.0, "4 SSDs on one card, read"),
        (JobKind::Write { from: Memory::Host }, 3.4, "4 SSDs on one card, write"),
    ] {
        let mut j = Job::new(kind);
        j.ssds = Some(4);
        let r = run(&m, j)?;
        let g = r.throughput_bytes_per_s / 1e9;
        rows.push(row("001", fig, "GB/s", publ, format!("{publ} GB/s"), g, status_for(g, publ), &r.bottleneck,
            "the x8 Gen3 up-link carries more; what holds the FPGA host to ~4 GB/s is not in the seed (a 128-bit AXI port into the Zynq's memory at 250 MHz would be exactly 4.0 GB/s, but the reference design's clocking is not published)"));
    }
    // Latency by stacked card: the first SSD of card k is ssd(4k).
    let mut by_card = Vec::new();
    for k in 0..8 {
        let Ok(n) = m.find(&format!("ssd{}", 4 * k)) else { break };
        by_card.push(command_latency(&m, n, Op::Read)?.total_us.unwrap_or(0.0));
    }
    let step = if by_card.len() > 1 { (by_card[by_card.len() - 1] - by_card[0]) / (by_card.len() - 1) as f64 } else { 0.0 };
    let st = if (1.0..=2.0).contains(&step) { Status::Reproduced } else { Status::NotReproduced };
    rows.push(row("001", "4 KiB latency added per stacked switch card", "us", 2.0, "1-2 us", step, st, "",
        format!("{} crossings per read x 100 ns per switch crossing (PEX 8747 cut-through figure standing in for the PM8532, whose own is not published); a card adds one switch. Reaching 1 us needs ~170 ns per crossing (narrow-port TDM delay, FMC connectors and retimers are not modelled)", lat.crossings_per_switch)).from(1.0));
    rows.push(row("001", "4 KiB read latency (card 0)", "us", 125.0, "70-125 us", by_card.first().copied().unwrap_or(0.0), Status::NotComparable, "",
        "the model has the SSD's datasheet QD1 latency (measured on a PC) plus the fabric; the published figure includes nvme-cli and the Zynq's Cortex-A53 Linux stack, for which no figure exists").from(70.0));
    Ok((rows, sweep, by_card))
}

/// Seed 002 (nicmem): a storage data mover at full load, payloads through host memory
/// (`send`) and in NIC memory (`send-nicmem`), on `machines/datamover-sr635-cx6dx.toml`. The
/// seed's figures are ratios from DPDK experiments on a machine it does not name; the rows say
/// which the model can compare and which it cannot.
pub fn seed002(cat: &Catalog) -> Result<Vec<Row>, SimError> {
    let topo = Topology::from_toml_str(DATAMOVER_SR635)?;
    let m = Machine::new(topo, cat, Some("amd-epyc-7302p-1s"))?;
    let host = run(&m, Job::new(JobKind::Send))?;
    let nicmem = run(&m, Job::new(JobKind::SendNicmem))?;
    let removed = 100.0 * (1.0 - nicmem.host_memory_bytes_per_s / host.host_memory_bytes_per_s);
    let mut rows = vec![row("002", "nicmem: host memory traffic of the data mover removed", "%", 100.0, "eliminated", removed, status_for(removed, 100.0), &nicmem.bottleneck,
        format!("payloads go SSD -> NIC memory; only headers (256 B per 1 MiB object) touch host memory: {:.2} Gb/s instead of {:.1} Gb/s at {:.0} Gb/s sent", nicmem.host_memory_gbit_per_s, host.host_memory_gbit_per_s, host.throughput_gbit_per_s))];
    // The same server with the memory bandwidth of this project's 2-core VM (13.3 GB/s): a
    // machine where host memory is the data mover's bottleneck, as in the seed's third figure.
    let mut slow = m.clone();
    slow.platform = cat.platform("measured-here")?.clone();
    let (h, n) = (run(&slow, Job::new(JobKind::Send))?, run(&slow, Job::new(JobKind::SendNicmem))?);
    rows.push(row("002", "memory-bound mover: throughput gained by nicmem", "x", 0.0, "(not published)", n.throughput_bytes_per_s / h.throughput_bytes_per_s, Status::NotComparable, &h.bottleneck,
        format!("with 13.3 GB/s of host memory (the VM's, as a what-if) the host path stops at {:.0} Gb/s ({}); nicmem reaches {:.0} Gb/s ({}). The seed's -15% comes from l3fwd, whose per-packet memory traffic (and DDIO's share of it) it does not publish", h.throughput_gbit_per_s, h.bottleneck, n.throughput_gbit_per_s, n.bottleneck)));
    rows.push(row("002", "PCIe toward the host full: latency x3", "x", 3.0, "3x", 0.0, Status::NotComparable, "",
        "the flow model caps a saturated link's throughput; it has no queueing, so it cannot grow latency past saturation (docs/simulator.md)"));
    rows.push(row("002", "memory bandwidth the bottleneck: -15% throughput, 10x latency", "x", 10.0, "10x latency", 0.0, Status::NotComparable, "",
        format!("as above; and on this server host memory (204.8 GB/s) carries the host path's {:.0} Gb/s at {:.0}% of its bandwidth: not a bottleneck here", host.host_memory_gbit_per_s, 100.0 * host.host_memory_bytes_per_s / 204.8e9)));
    Ok(rows)
}

/// Input bytes of the lent machine's benchmarks: the corpus's first 48 MiB, 8 times.
const LENT_INPUT_BYTES: f64 = 402_653_144.0;

/// peerpath's own figures measured on the lent GPU machine (issues 17 and 18), predicted from
/// the catalog's figures for that machine: the 1-thread rate, the machine's all-core ceiling
/// (independent processes), nvCOMP's kernel rates.
pub fn lent(cat: &Catalog) -> Result<Vec<Row>, SimError> {
    let topo = Topology::from_toml_str(LENT_GPU_HOST)?;
    let m = Machine::new(topo, cat, Some("lent-gpu-host-16c"))?;
    let mut rows = Vec::new();
    // The same machine without the contention curve: what cores alone would say.
    let mut plain = m.clone();
    plain.platform.core_contention.clear();
    // bench/results/2026-11-26-scaling-16cpu (run 1): peerpath compress -l1 -T T, tmpfs to tmpfs,
    // median of 3 seconds.
    for (t, secs) in [(1usize, 1.147), (2, 0.621), (4, 0.361), (8, 0.206), (16, 0.157)] {
        let measured = LENT_INPUT_BYTES / secs / 1e9;
        let mut job = Job::parse("compress-memory")?;
        job.threads = Some(t);
        job.ratio = Some(1.927);
        let r = run(&m, job.clone())?;
        let g = r.throughput_bytes_per_s / 1e9;
        let cores_only = run(&plain, job)?.throughput_bytes_per_s / 1e9;
        let (status, why) = if t == 1 {
            (Status::Calibrated, "the catalog's 1-thread rate is this very row".to_string())
        } else {
            let st = status_for(g, measured);
            let why = match st {
                Status::Reproduced => format!("{t} cores at the measured 1-thread rate, each slowed as {t} independent processes were (the machine's ceiling); cores alone would say {cores_only:.2} GB/s"),
                _ if g > measured => format!(
                    "the model has the machine's ceiling (independent processes) but not peerpath's own pipeline, which is what is left: at 16 threads its workers were busy 57% of the wall (c16.json; issue 18). Cores alone would say {cores_only:.2} GB/s"
                ),
                _ => format!(
                    "measured faster than the ceiling predicts: the ceiling and the 1-thread rate come from runs whose 1-thread times spread 1.12-1.46 s on that VM (±13%); cores alone would say {cores_only:.2} GB/s"
                ),
            };
            (st, why)
        };
        rows.push(row("lent", format!("peerpath compress -T {t}, tmpfs to tmpfs"), "GB/s", measured, format!("{measured:.2} GB/s"), g, status, &r.bottleneck, why));
    }
    // bench/results/2026-11-26-gpu-machine-3 (another start of that VM, the same day, whose
    // 1-thread runs took 1.64-1.89 s against 1.12-1.46 s): the same model from that run's own
    // figures, its 1-thread median and the ceiling measured in the same run (scaling/ceiling.txt:
    // k independent 1-thread compressions of 48 MiB, best of 3 walls 0.235 / 0.170 / 0.233 /
    // 0.232 / 0.285 s for k = 1 / 2 / 4 / 8 / 16).
    let mut again = m.clone();
    let f = "compress-peerpath-1";
    let t1 = 1.894;
    if let Some(rate) = again.platform.functions.get_mut(f) {
        rate.value = Some(LENT_INPUT_BYTES / t1);
    }
    if let Some(curve) = again.platform.core_contention.get_mut(f) {
        curve.points = [1.0, 2.0, 4.0, 8.0, 16.0].iter().zip([0.235, 0.170, 0.233, 0.232, 0.285]).map(|(&k, w)| [k, 0.235 / w]).collect();
    }
    for (t, secs) in [(2usize, 0.850), (4, 0.365), (8, 0.191), (16, 0.143)] {
        let measured = LENT_INPUT_BYTES / secs / 1e9;
        let mut job = Job::parse("compress-memory")?;
        job.threads = Some(t);
        job.ratio = Some(1.927);
        let r = run(&again, job)?;
        let g = r.throughput_bytes_per_s / 1e9;
        let st = status_for(g, measured);
        let why = match st {
            Status::Reproduced => format!("{t} cores at that run's 1-thread rate ({:.3} GB/s), each slowed as {t} independent processes were in the same run", LENT_INPUT_BYTES / t1 / 1e9),
            _ => "that run's 1-thread cell spread 1.64-1.89 s (its median, 1.89 s, is the rate the model starts from) and its ceiling measured 2 processes at once faster than one (0.170 s against 0.235 s): the VM's noise, about ±15 %, is larger than the 10 % this row asks. At 16 threads, where peerpath's pipeline accounting shows the workers busy 87 %, the model and the run agree".to_string(),
        };
        rows.push(row("lent", format!("peerpath compress -T {t}, tmpfs to tmpfs (gpu-machine-3)"), "GB/s", measured, format!("{measured:.2} GB/s"), g, st, &r.bottleneck, why));
    }
    // bench/results/2026-11-26-gpu-machine-8 (sweep.md): compress --engine gpu on the H100 itself,
    // 1.5 GiB from tmpfs to tmpfs, the defaults since (1 stream, queue depth 128, 16 MiB commands,
    // a 512 MiB window), past the device's opening: 2.16-2.22 GB/s (1 MiB commands, before:
    // 1.79-1.94, gpu-machine-4). The fixture's GPU is that H100.
    let mut job = Job::new(JobKind::CompressMemory { on: Compute::Gpu(None) });
    job.function = "compress-nvcomp-gzip-2".into();
    job.ratio = Some(1.990);
    let r = run(&m, job)?;
    let g = r.throughput_bytes_per_s / 1e9;
    rows.push(row("lent", "compress --engine gpu (H100), in memory, past its opening", "GB/s", 2.22, "2.16-2.22 GB/s".to_string(), g, status_for(g, 2.22), &r.bottleneck,
        "the model keeps nvCOMP's kernel busy; measured, the kernel ran 6.2-6.6 GB/s while it ran but the GPU was busy 0.35 s of the job's 0.95 s past opening and waited for work 0.17 s, while io_uring's workers spent 1.5 s of CPU copying the tmpfs reads and writes into and out of the pinned window (gpu-machine-8, -11): the executor's pipeline in front of the GPU, which the model does not have, is the limit"));
    // bench/results/2026-11-26-gpu-engine-h200 (summary-3.txt): compress --engine gpu, 1.6 GB
    // (in4.fa) from tmpfs to the disk, past the device's opening: 1.196 s - 0.219 s and
    // 1.211 s - 0.248 s. That machine had an H200 on the same kind of host (its sysfs was not
    // captured): the fixture's GPU takes the H200's catalog entry.
    let mut h200 = m.clone();
    let gpu = *h200.gpus().first().ok_or_else(|| SimError::Job("the lent machine's fixture has no GPU".into()))?;
    h200.nodes[gpu].kind = NodeKind::Gpu(Box::new(cat.gpu("nvidia-h200")?.clone()));
    let mut job = Job::new(JobKind::CompressMemory { on: Compute::Gpu(None) });
    job.function = "compress-nvcomp-gzip-2".into();
    job.ratio = Some(1.990);
    let r = run(&h200, job)?;
    let g = r.throughput_bytes_per_s / 1e9;
    let (lo, hi) = (4.0 * LENT_INPUT_BYTES / (1.196 - 0.219) / 1e9, 4.0 * LENT_INPUT_BYTES / (1.211 - 0.248) / 1e9);
    rows.push(row("lent", "compress --engine gpu (H200), past its opening", "GB/s", hi.max(lo), format!("{:.2}-{:.2} GB/s", lo.min(hi), hi.max(lo)), g, status_for(g, hi.max(lo)), &r.bottleneck,
        "the model overlaps copies, kernels and packing, so nvCOMP's kernel rate is the limit; the measured device runs one batch at a time on one stream and synchronises after each: its pipeline, not the GPU, is the limit (issue 17's target: 80% of the kernel figure). The output went to the virtio disk (writes 3.0 GB/s by bench-io), not a limit at this rate"));
    Ok(rows)
}

/// All seeds (001, 002, 003, 004), and the lent machine's own figures.
pub fn reproduce(cat: &Catalog) -> Result<Reproduction, SimError> {
    let mut rows = seed003(cat)?;
    rows.extend(seed004(cat)?);
    let (r1, sweep, by_card) = seed001(cat)?;
    rows.extend(r1);
    rows.extend(seed002(cat)?);
    rows.extend(lent(cat)?);
    Ok(Reproduction { label: crate::LABEL, tolerance: TOLERANCE, rows, dd_read_sweep: sweep, latency_by_card_us: by_card })
}

impl Reproduction {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("serializes")
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "peerpath sim reproduce: published figures vs the model's predictions ({}; tolerance {:.0}%)", self.label, self.tolerance * 100.0);
        let _ = writeln!(s, "(rows \"lent\": peerpath's own figures measured on the GPU machine this project is lent, bench/results/2026-11-26-*)");
        let _ = writeln!(s);
        let _ = writeln!(s, "seed  {:<58} {:>20} {:>12} {:>8}  status", "figure", "published", "simulated", "diff");
        for r in &self.rows {
            let unmodelled = r.status == Status::NotComparable && r.predicted == 0.0;
            let diff = if r.published == 0.0 || unmodelled { "-".to_string() } else { format!("{:+.0}%", r.error * 100.0) };
            let simulated = if unmodelled { "-".to_string() } else { format!("{:.2} {}", r.predicted, r.unit) };
            let _ = writeln!(
                s,
                "{:<5} {:<58} {:>20} {:>12} {:>8}  {}",
                r.seed,
                r.figure,
                r.published_text,
                simulated,
                diff,
                r.status.words()
            );
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "why, and the bottleneck the model names:");
        for r in &self.rows {
            let b = if r.bottleneck.is_empty() { String::new() } else { format!(" [bottleneck: {}]", r.bottleneck) };
            let _ = writeln!(s, "  {} {}: {}{}", r.seed, r.figure, r.why, b);
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "seed 001, one SSD, dd O_DIRECT reads at queue depth 1 (simulated):");
        for p in &self.dd_read_sweep {
            let kib = p.transfer_bytes / 1024.0;
            let size = if kib >= 1024.0 { format!("{} MiB", kib / 1024.0) } else { format!("{kib} KiB") };
            let _ = writeln!(s, "  {size:>8}  {:.2} GB/s", p.bytes_per_s / 1e9);
        }
        let _ = writeln!(s, "seed 001, 4 KiB read latency of the first SSD on each stacked card (simulated):");
        for (k, l) in self.latency_by_card_us.iter().enumerate() {
            let _ = writeln!(s, "  card {k}: {l:.2} us");
        }
        let n = |st: Status| self.rows.iter().filter(|r| r.status == st).count();
        let _ = writeln!(
            s,
            "\n{} reproduced, {} calibrated (not predictions), {} not reproduced, {} not comparable",
            n(Status::Reproduced),
            n(Status::Calibrated),
            n(Status::NotReproduced),
            n(Status::NotComparable)
        );
        s
    }
}
