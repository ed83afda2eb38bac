//! Jobs: what moves where, as flows whose every byte loads links, devices, memory and cores.
//!
//! A flow's rate is counted in *input* bytes per second (uncompressed bytes for compression);
//! each load is "units of the resource per input byte":
//!
//! ```text
//!  compress-p2p, one flow per source SSD s in a group (CSP c, destination SSD d), ratio r:
//!    flash reads of s 1 | links s -> c: posted writes | CMB memory of c: 1 in + 1 engine read
//!    + 1/r engine write + 1/r out | engines of c 1 | links c -> d: DMA read of 1/r
//!    | flash writes of d 1/r | CPU cores: orchestration | host memory: NVMe queue entries only
//!  compress-cpu, one flow per source SSD s on socket k (destination d on the same socket):
//!    flash reads of s 1 | links s -> root: posted writes | host memory of k: 1 DMA in
//!    + 1 compression read + 1/r compression write + 1/r DMA out | CPU cores of k: 1/rate
//!    | links root -> d: DMA read of 1/r | flash writes of d 1/r
//!  read / write: an SSD reading into (writing from) host memory or a CSP's CMB.
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use serde::Serialize;

use crate::machine::{Dir, Machine, ResKey, Resource, Route};
use crate::pcie::{WireCost, FIRST_FLIT_GEN};
use crate::report::count;
use crate::SimError;

/// The compression ratios (input / output) a job may be given. Every function the catalog
/// names writes deflate: incompressible data grows by well under 1% (stored blocks), so a ratio
/// below 0.5 describes no compressor, and 1032 is deflate's own maximum (a 258-byte match in
/// 2 bits). NaN, 0, negative and infinite ratios made a throughput of 0 and a job of a year.
pub const RATIO: RangeInclusive<f64> = 0.5..=1032.0;

/// Chunks in flight per flow: an NVMe I/O queue holds at most 65536 entries (MQES is 16 bits,
/// zero-based). The chunk latency's quantiles cost time in proportion to it.
pub const QUEUE_DEPTH: RangeInclusive<u32> = 1..=65536;

/// Compute threads: Linux configures at most 8192 CPUs (NR_CPUS with MAXSMP).
pub const THREADS: RangeInclusive<usize> = 1..=8192;

/// Where a read lands or a write comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Memory {
    Host,
    /// The CMB of this CSP (a label or address); `None`: the first CSP.
    Cmb(Option<String>),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobKind {
    /// Compression on CSPs, data moved by P2P DMA: sources -> CMB -> engine -> CMB -> target.
    CompressP2p,
    /// Compression on the host CPU: sources -> host memory -> cores -> host memory -> targets.
    CompressCpu,
    /// SSDs read sequentially into memory (fio `rw=read`).
    Read { into: Memory },
    /// SSDs write sequentially from memory (fio `rw=write`).
    Write { from: Memory },
    /// SSDs read into host memory and the NICs send it (a file server): each SSD's flow goes
    /// out through a NIC of its socket when there is one (round robin).
    Send,
    /// The same data mover with its payloads in NIC memory (seed 002's nicmem, `peerpath serve
    /// --mode devmem`): SSDs write each object into the memory of a NIC of their socket by
    /// P2P DMA, the host builds only headers (`header_bytes` per object of `chunk_bytes`), and
    /// the NIC sends header + payload.
    SendNicmem,
    /// Compression of a file in memory (tmpfs) into memory, as the scaling and GPU benchmarks
    /// measure it: no storage; the kernel's copies out of and into the page cache load host
    /// memory. On the CPU with `threads` workers, or on a GPU (staged through pinned host
    /// memory: the copy engines move the data over the GPU's link).
    CompressMemory { on: Compute },
}

/// Where the function runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Compute {
    Cpu,
    /// This GPU (a label or address); `None`: the first GPU.
    Gpu(Option<String>),
}

/// A job: the kind and its knobs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Job {
    pub kind: JobKind,
    /// Function name as the catalog has it (`compress-zlib-1`).
    pub function: String,
    /// Compression ratio (input / output); `None`: the catalog's figure.
    pub ratio: Option<f64>,
    /// Use at most this many SSDs / CSPs (in address order, spread over sockets as they come).
    pub ssds: Option<usize>,
    pub csps: Option<usize>,
    /// Source SSDs per CSP (seed 003: two sources and one target per CSP).
    pub sources_per_csp: usize,
    /// Input bytes per source SSD.
    pub bytes_per_source: f64,
    /// Bytes per NVMe command (for the NVMe queue entries in host memory).
    pub chunk_bytes: f64,
    /// Chunks each flow keeps in flight (peerpath's default queue depth is 8): with the flow's
    /// rate, how long a chunk takes through it (the report's chunk latency).
    pub queue_depth: u32,
    /// Compute threads of a CPU job (`--threads`): at most this many cores compute. `None`:
    /// every core of the socket.
    pub threads: Option<usize>,
    /// Response header bytes the host builds per object (`send-nicmem`).
    pub header_bytes: f64,
}

impl Job {
    pub fn new(kind: JobKind) -> Job {
        Job {
            kind,
            function: "compress-zlib-1".into(),
            ratio: None,
            ssds: None,
            csps: None,
            sources_per_csp: 2,
            bytes_per_source: 64e9,
            chunk_bytes: 1048576.0,
            queue_depth: 8,
            threads: None,
            // An HTTP/1.1 200 response header as `peerpath serve` writes it is ~150-250 bytes.
            header_bytes: 256.0,
        }
    }

    /// Parses `compress-p2p`, `compress-cpu`, `compress-memory`, `compress-memory-gpu[:GPU]`,
    /// `read`, `read-cmb[:CSP]`, `write`, `write-cmb[:CSP]`, `send`. The memory jobs default to
    /// peerpath's own functions (`compress-peerpath-1` on the CPU, `compress-nvcomp-gzip-2` on
    /// a GPU: the default `--engine gpu` algorithm).
    pub fn parse(s: &str) -> Result<Job, SimError> {
        let (head, arg) = match s.split_once(':') {
            Some((h, a)) => (h, Some(a.to_string())),
            None => (s, None),
        };
        let kind = match head {
            "compress-p2p" => JobKind::CompressP2p,
            "compress-cpu" => JobKind::CompressCpu,
            "read" => JobKind::Read { into: Memory::Host },
            "write" => JobKind::Write { from: Memory::Host },
            "read-cmb" => JobKind::Read { into: Memory::Cmb(arg) },
            "write-cmb" => JobKind::Write { from: Memory::Cmb(arg) },
            "send" => JobKind::Send,
            "send-nicmem" => JobKind::SendNicmem,
            "compress-memory" => JobKind::CompressMemory { on: Compute::Cpu },
            "compress-memory-gpu" => JobKind::CompressMemory { on: Compute::Gpu(arg) },
            other => {
                return Err(SimError::Job(format!(
                    "unknown job '{other}' (compress-p2p, compress-cpu, compress-memory, compress-memory-gpu[:GPU], read, write, read-cmb[:CSP], write-cmb[:CSP], send, send-nicmem)"
                )))
            }
        };
        let mut job = Job::new(kind);
        match &job.kind {
            JobKind::CompressMemory { on: Compute::Cpu } => job.function = "compress-peerpath-1".into(),
            JobKind::CompressMemory { on: Compute::Gpu(_) } => job.function = "compress-nvcomp-gzip-2".into(),
            _ => {}
        }
        Ok(job)
    }

    /// Refuses knobs that describe no job: a ratio, queue depth or thread count outside
    /// [`RATIO`], [`QUEUE_DEPTH`], [`THREADS`], and 0 CSPs or SSDs (which read as "the
    /// machine has none"), and knobs the job has no use for.
    pub fn check(&self) -> Result<(), SimError> {
        let bad = |what: String| Err(SimError::Job(what));
        if let Some(r) = self.ratio.filter(|r| !RATIO.contains(r)) {
            return bad(format!("compression ratio {r}: from {} to {} (input / output)", RATIO.start(), RATIO.end()));
        }
        if !QUEUE_DEPTH.contains(&self.queue_depth) {
            return bad(format!("queue depth {}: from {} to {} (an NVMe queue's most entries)", self.queue_depth, QUEUE_DEPTH.start(), QUEUE_DEPTH.end()));
        }
        if let Some(t) = self.threads.filter(|t| !THREADS.contains(t)) {
            return bad(format!("threads {t}: from {} to {}", THREADS.start(), THREADS.end()));
        }
        if self.csps == Some(0) || self.ssds == Some(0) {
            return bad("use at least 1 CSP and 1 SSD".into());
        }
        // A knob the job has no use for was taken and ignored (`read --ratio 3`), or applied
        // to what it does not name (`compress-p2p --threads 1` capped the orchestration).
        if self.ratio.is_some() && !self.compresses() {
            return bad(format!("a compression ratio for a job that compresses nothing ({})", self.describe()));
        }
        let on_cores = matches!(self.kind, JobKind::CompressCpu | JobKind::CompressMemory { on: Compute::Cpu });
        if self.threads.is_some() && !on_cores {
            return bad(format!("compute threads for a job that computes nothing on the host CPU ({}): --threads is for compress-cpu and compress-memory", self.describe()));
        }
        // `read --csps 4` ran the same read as without it.
        if let Some(n) = self.csps.filter(|_| !self.counts_csps()) {
            return bad(format!("--csps {n} for a job whose CSP count cannot change it ({}): --csps is for compress-p2p", self.describe()));
        }
        if let Some(n) = self.ssds.filter(|_| !self.counts_ssds()) {
            return bad(format!("--ssds {n} for a job that uses no SSD ({})", self.describe()));
        }
        Ok(())
    }

    /// Whether the number of CSPs changes the job: only compress-p2p runs on several
    /// (`read-cmb` and `write-cmb` use one CSP's memory, whatever the count).
    pub fn counts_csps(&self) -> bool {
        self.kind == JobKind::CompressP2p
    }

    /// Whether the number of SSDs changes the job: all but the memory-to-memory ones.
    pub fn counts_ssds(&self) -> bool {
        !matches!(self.kind, JobKind::CompressMemory { .. })
    }

    /// Whether the job runs a function (compresses): the others only move bytes, and take no
    /// `--function` or `--ratio`.
    pub fn compresses(&self) -> bool {
        matches!(self.kind, JobKind::CompressP2p | JobKind::CompressCpu | JobKind::CompressMemory { .. })
    }

    pub fn describe(&self) -> String {
        match &self.kind {
            JobKind::CompressP2p => format!("{} on CSPs over P2P DMA ({} sources + 1 target per CSP)", self.function, self.sources_per_csp),
            JobKind::CompressCpu => format!(
                "{} on the host CPU{} (SSD -> host memory -> cores -> host memory -> SSD)",
                self.function,
                self.threads.map(|t| format!(" with {}", count(t, "compute thread"))).unwrap_or_default()
            ),
            JobKind::Read { into: Memory::Host } => "sequential reads from SSDs into host memory".into(),
            JobKind::Read { into: Memory::Cmb(c) } => format!("sequential reads from SSDs into the CMB of {}", c.as_deref().unwrap_or("the first CSP")),
            JobKind::Write { from: Memory::Host } => "sequential writes to SSDs from host memory".into(),
            JobKind::Write { from: Memory::Cmb(c) } => format!("sequential writes to SSDs from the CMB of {}", c.as_deref().unwrap_or("the first CSP")),
            JobKind::Send => "SSDs read into host memory, NICs send it (SSD -> host memory -> NIC)".into(),
            JobKind::SendNicmem => format!(
                "SSDs write objects into NIC memory by P2P DMA, the host builds {} B headers per {} KiB object, NICs send both (SSD -> NIC memory -> wire)",
                self.header_bytes,
                self.chunk_bytes / 1024.0
            ),
            JobKind::CompressMemory { on: Compute::Cpu } => format!(
                "{} on the host CPU{}, a file in memory to memory (tmpfs -> cores -> tmpfs)",
                self.function,
                self.threads.map(|t| format!(" with {}", count(t, "compute thread"))).unwrap_or_default()
            ),
            JobKind::CompressMemory { on: Compute::Gpu(g) } => format!(
                "{} on {}, a file in memory to memory (tmpfs -> pinned host memory -> GPU -> pinned host memory -> tmpfs)",
                self.function,
                g.as_deref().unwrap_or("the first GPU")
            ),
        }
    }
}

/// One flow: its loads per input byte and its size.
#[derive(Clone, Debug, Serialize)]
pub struct Flow {
    pub name: String,
    pub loads: Vec<(ResKey, f64)>,
    pub bytes: f64,
    /// Host memory bytes per input byte, by purpose (a subset of `loads`, for the report).
    pub memory: Vec<(String, f64)>,
    /// Where the flow's CPU time goes, core-seconds per input byte, by role.
    pub cpu: Vec<(String, f64)>,
    /// Switches crossed by the flow's data (for latency).
    pub route_switches: usize,
}

/// A planned job: flows, the resources they use, and the plan in words.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub flows: Vec<Flow>,
    pub resources: BTreeMap<ResKey, Resource>,
    pub groups: Vec<String>,
    pub notes: Vec<String>,
    /// Calibrated figures the result depends on.
    pub calibrations: Vec<String>,
    /// Figures this job needs that the catalog lacks, each with what it leaves out.
    pub unknowns: Vec<String>,
}

struct Builder<'m> {
    machine: &'m Machine,
    loads: Vec<(ResKey, f64)>,
    memory: Vec<(String, f64)>,
    cpu: Vec<(String, f64)>,
    switches: usize,
}

impl<'m> Builder<'m> {
    fn new(m: &'m Machine) -> Self {
        Builder { machine: m, loads: Vec::new(), memory: Vec::new(), cpu: Vec::new(), switches: 0 }
    }
    fn load(&mut self, k: ResKey, x: f64) {
        if x == 0.0 {
            return;
        }
        match self.loads.iter_mut().find(|(kk, _)| *kk == k) {
            Some((_, v)) => *v += x,
            None => self.loads.push((k, x)),
        }
    }
    fn transfer(&mut self, route: &Route, cost: WireCost, scale: f64) {
        for &(n, dir) in &route.hops {
            let rev = if dir == Dir::Up { Dir::Down } else { Dir::Up };
            let flit = self.machine.nodes[n].link.and_then(|l| l.current_speed.generation()).is_some_and(|g| g >= FIRST_FLIT_GEN);
            let (data, reverse) = cost.on(flit);
            self.load(ResKey::Link(n, dir), data * scale);
            self.load(ResKey::Link(n, rev), reverse * scale);
        }
        self.switches = self.switches.max(route.switches.len());
    }
    fn host_memory(&mut self, socket: u32, purpose: &str, x: f64) {
        self.load(ResKey::HostMemory(socket), x);
        self.memory.push((purpose.to_string(), x));
    }
    fn cores(&mut self, socket: u32, role: &str, core_s_per_byte: f64) {
        self.load(ResKey::CpuCores(socket), core_s_per_byte);
        self.cpu.push((role.to_string(), core_s_per_byte));
    }
    fn flow(self, name: String, bytes: f64) -> Flow {
        Flow { name, loads: self.loads, bytes, memory: self.memory, cpu: self.cpu, route_switches: self.switches }
    }
}

impl Job {
    fn ratio_value(&self, m: &Machine) -> f64 {
        self.ratio.or(m.catalog.data.compress_ratio_zlib_1.value).unwrap_or(1.0).max(1e-6)
    }

    /// The CSP whose memory the SSDs read into or write from (the first one unless named):
    /// a device without P2P memory (a host bridge, an SSD without a CMB) is refused.
    fn pick_csp(&self, m: &Machine, name: &Option<String>) -> Result<usize, SimError> {
        let csps = m.csps();
        let c = match name {
            Some(n) => m.find(n)?,
            None => return csps.first().copied().ok_or_else(|| SimError::Job("the machine has no CSP".into())),
        };
        if !csps.contains(&c) {
            let names: Vec<&str> = csps.iter().map(|&i| m.nodes[i].name.as_str()).collect();
            return Err(SimError::Job(format!(
                "{} is not a CSP (no P2P memory to read into or write from); the machine's CSPs: {}",
                m.nodes[c].name,
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )));
        }
        Ok(c)
    }

    /// Where a memory job's SSDs read into or write from: host memory (`None`), or a CSP's,
    /// `ssds` then cut to those that reach it ([`Job::reaching`]).
    fn memory_of(&self, m: &Machine, mem: &Memory, ssds: &mut Vec<usize>, notes: &mut Vec<String>) -> Result<Option<usize>, SimError> {
        let Memory::Cmb(name) = mem else { return Ok(None) };
        let c = self.pick_csp(m, name)?;
        *ssds = self.reaching(m, c, ssds, notes)?;
        Ok(Some(c))
    }

    /// The SSDs that reach CSP `c`'s memory by P2P (the verdict real runs get); the others are
    /// left out, each said in `notes` with the verdict's reason. None is an error.
    fn reaching(&self, m: &Machine, c: usize, ssds: &[usize], notes: &mut Vec<String>) -> Result<Vec<usize>, SimError> {
        let name = |i: usize| m.topo_name(i).unwrap_or_else(|| m.nodes[i].name.clone());
        let (mut reach, mut refused) = (Vec::new(), BTreeMap::<String, Vec<&str>>::new());
        for &s in ssds.iter().filter(|&&s| s != c) {
            match m.topology.verdict(&name(c), &name(s))?.path {
                peerpath_topo::P2pPath::NotSupported { reason } => refused.entry(reason.describe()).or_default().push(&m.nodes[s].name),
                _ => reach.push(s),
            }
        }
        for (why, left) in refused {
            notes.push(format!("{} left out: no P2P with {} ({why})", left.join(", "), m.nodes[c].name));
        }
        if reach.is_empty() {
            return Err(SimError::Job(format!("no SSD reaches the memory of {} by P2P (the notes say why for each)", m.nodes[c].name)));
        }
        Ok(reach)
    }

    /// Plans the job on machine `m`: groups SSDs with CSPs (compress-p2p: only pairs whose P2P
    /// verdict is supported), builds the flows and collects the resources they touch.
    pub fn plan(&self, m: &Machine) -> Result<Plan, SimError> {
        self.check()?;
        let mut flows = Vec::new();
        let mut groups = Vec::new();
        let mut notes = Vec::new();
        let mut calibrations = Vec::new();
        let mut unknowns = Vec::new();
        let mut ssds = m.ssds();
        if self.kind == JobKind::CompressP2p {
            ssds = self.p2p_order(m, ssds);
        }
        if let Some(n) = self.ssds {
            ssds.truncate(n);
        }
        // `--csps`/`--ssds` are "at most": past what the machine has, the run uses what there
        // is, while a sweep to the same count clones more. Said, so the two do not disagree
        // unsaid.
        for (asked, have, what) in [(self.csps, m.csps().len(), "CSP"), (self.ssds, m.ssds().len(), "SSD")] {
            if let Some(n) = asked.filter(|&n| n > have) {
                notes.push(format!("{have} of the {n} {what}s asked for exist on this machine{}; --vary {}={n} clones more", m.left_out_note(), what.to_lowercase()));
            }
        }
        let r = self.ratio_value(m);
        let tlp = m.tlp;
        match &self.kind {
            JobKind::CompressP2p => {
                let mut csps = m.csps();
                if let Some(n) = self.csps {
                    csps.truncate(n);
                }
                if csps.is_empty() {
                    return Err(SimError::Job("compress-p2p needs a CSP; the machine has none".into()));
                }
                self.known_function("CSP", m.catalog.csps.iter().flat_map(|c| c.functions.keys()))?;
                let orch = orchestration(m, &mut calibrations, &mut unknowns);
                // Sources and targets as a job would name them, on SSDs that reach the CSP by
                // P2P (the others cannot serve its streams): for each CSP (in address order)
                // the least read SSDs as its sources, then the least written one that is not
                // among them as its target, or the least written of all if that is fewer
                // (its sources then chosen from the rest). When CSPs outnumber the SSDs / 3 an
                // SSD serves several streams, as several files on one SSD would; a CSP that
                // reaches fewer than two SSDs stays idle. Then the same planner as real runs
                // (`peerpath_topo::plan`) gives each stream its CSP: nearest by P2P distance,
                // same NUMA node, never P2P where the kernel would refuse.
                let name = |i: usize| m.topo_name(i).unwrap_or_else(|| m.nodes[i].name.clone());
                let (mut reads, mut writes) = (vec![0usize; m.nodes.len()], vec![0usize; m.nodes.len()]);
                let (mut sources, mut targets, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
                for &c in &csps {
                    let ssd_names: Vec<String> = ssds.iter().map(|&s| name(s)).collect();
                    let ssd_names: Vec<&str> = ssd_names.iter().map(String::as_str).collect();
                    let verdicts = m.topology.verdict_many(&name(c), &ssd_names)?.clients;
                    let reach: Vec<usize> = ssds.iter().zip(&verdicts).filter(|(_, v)| v.is_supported()).map(|(&s, _)| s).collect();
                    if reach.len() < 2 {
                        continue;
                    }
                    let want = self.sources_per_csp.min(reach.len() - 1);
                    let pick_sources = |but: &[usize], reads: &[usize], writes: &[usize]| -> Vec<usize> {
                        let mut cands: Vec<usize> = reach.iter().copied().filter(|s| !but.contains(s)).collect();
                        cands.sort_by_key(|&s| (reads[s], reads[s] + writes[s], s));
                        cands.truncate(want);
                        cands
                    };
                    let least_written = |but: &[usize]| reach.iter().copied().filter(|s| !but.contains(s)).min_by_key(|&s| (writes[s], reads[s] + writes[s], s));
                    let mut srcs = pick_sources(&[], &reads, &writes);
                    let mut d = least_written(&srcs).expect("two SSDs reach the CSP");
                    let any = least_written(&[]).expect("two SSDs reach the CSP");
                    if writes[any] < writes[d] {
                        d = any;
                        srcs = pick_sources(&[d], &reads, &writes);
                    }
                    writes[d] += 1;
                    targets.push(d);
                    for s in srcs {
                        reads[s] += 1;
                        pairs.push((sources.len(), targets.len() - 1));
                        sources.push(s);
                    }
                }
                if sources.is_empty() {
                    let why = match ssds.len() {
                        n @ 0..=1 => format!("the job has {n} SSD{}", match self.ssds { Some(k) if k <= n => format!(" (--ssds {k})"), _ => " the catalog knows".into() }),
                        n => format!("no CSP reaches two of the job's {n} SSDs by P2P"),
                    };
                    return Err(SimError::Job(format!("compress-p2p needs two SSDs that reach one CSP by P2P (a source and a target); {why}{}", m.left_out_note())));
                }
                let request = peerpath_topo::PlanRequest::new(sources.iter().map(|&i| name(i)), targets.iter().map(|&i| name(i)))
                    .with_devices(peerpath_topo::DeviceSelection::Named(csps.iter().map(|&c| name(c)).collect()))
                    .with_pairs(pairs);
                let placed = peerpath_topo::plan::streams(&m.topology, &request).map_err(|e| SimError::Job(format!("placement: {e}")))?;
                // Per SSD, the CSPs that read it and those that write it.
                let mut users = BTreeMap::<usize, (Vec<usize>, Vec<usize>)>::new();
                for &c in &csps {
                    let streams: Vec<&peerpath_topo::plan::Stream> = placed
                        .iter()
                        .filter(|st| matches!(&st.executor, peerpath_topo::plan::Executor::Device { bdf, .. } if m.nodes[c].bdf == Some(*bdf)))
                        .filter(|st| st.read.is_p2p() && st.write.is_p2p())
                        .collect();
                    if streams.is_empty() {
                        notes.push(format!("{} idle: the planner gave it no stream it reaches by P2P", m.nodes[c].name));
                        continue;
                    }
                    let srcs: Vec<usize> = streams.iter().map(|st| sources[st.source_index]).collect();
                    let mut tgts: Vec<usize> = streams.iter().map(|st| targets[st.target_index]).collect();
                    tgts.dedup();
                    for &s in &srcs {
                        users.entry(s).or_default().0.push(c);
                    }
                    for &d in &tgts {
                        users.entry(d).or_default().1.push(c);
                    }
                    groups.push(format!(
                        "{}: sources {} -> target {} ({})",
                        m.nodes[c].name,
                        srcs.iter().map(|&s| m.nodes[s].name.as_str()).collect::<Vec<_>>().join(", "),
                        tgts.iter().map(|&d| m.nodes[d].name.as_str()).collect::<Vec<_>>().join(", "),
                        m.topology.verdict(&name(c), &name(tgts[0]))?.path
                    ));
                    if m.engine_resource(c, &self.function).is_none() {
                        notes.push(format!("{}: {} engine throughput unknown (unlimited)", m.nodes[c].name, self.function));
                    }
                    for st in streams {
                        let (s, d) = (sources[st.source_index], targets[st.target_index]);
                        let mut b = Builder::new(m);
                        b.load(ResKey::FlashRead(s), 1.0);
                        b.transfer(&m.route(s, c), tlp.posted_write(), 1.0);
                        b.load(ResKey::CmbMemory(c), 2.0 + 2.0 / r);
                        b.load(ResKey::Engine(c), 1.0);
                        b.transfer(&m.route(c, d), tlp.dma_read(), 1.0 / r);
                        b.load(ResKey::FlashWrite(d), 1.0 / r);
                        let socket = m.nodes[c].socket;
                        if let Some(v) = orch {
                            b.cores(socket, "orchestration", v / 1e9);
                        }
                        // Submission (64 B) and completion (16 B) entries of the read, compress and
                        // write commands live in host memory.
                        let per_cmd = 80.0 / self.chunk_bytes;
                        b.host_memory(socket, "NVMe submission/completion entries", per_cmd * (2.0 + 1.0 / r));
                        flows.push(b.flow(format!("{} -> {} -> {}", m.nodes[s].name, m.nodes[c].name, m.nodes[d].name), self.bytes_per_source));
                    }
                }
                // Several CSPs' streams on one SSD (more CSPs than SSDs / 3): said, since each
                // group above reads as if its SSDs were its own. The SSD's flash and link are one
                // resource in the simulation, shared by all its streams.
                let shared: Vec<_> = users.iter().filter(|(_, (r, w))| r.len() + w.len() > 1).collect();
                for &(&d, (readers, writers)) in &shared {
                    let names = |v: &[usize]| v.iter().map(|&c| m.nodes[c].name.as_str()).collect::<Vec<_>>().join(", ");
                    let roles: Vec<String> = [("source of", readers), ("target of", writers)]
                        .iter()
                        .filter(|(_, v)| !v.is_empty())
                        .map(|(what, v)| format!("{what} {}", names(v)))
                        .collect();
                    groups.push(format!("{} shared: {}", m.nodes[d].name, roles.join("; ")));
                }
                if !shared.is_empty() {
                    groups.push(format!(
                        "{} shared by several CSPs: each one's flash and PCIe link serve all its streams, and the simulated rate includes that sharing",
                        count(shared.len(), "SSD")
                    ));
                }
            }
            JobKind::CompressCpu => {
                let rate = self.cpu_rate(m, &mut calibrations)?;
                // Per socket: two thirds of the SSDs are sources, one third targets (as in seed 003).
                for socket in 0..m.sockets {
                    let on: Vec<usize> = ssds.iter().copied().filter(|&s| m.nodes[s].socket == socket).collect();
                    if on.is_empty() {
                        continue;
                    }
                    let n_targets = (on.len() / (self.sources_per_csp + 1)).max(1).min(on.len());
                    let n_sources = on.len() - n_targets;
                    let (sources, targets) = on.split_at(n_sources.max(1).min(on.len()));
                    let targets: Vec<usize> = if targets.is_empty() { sources.to_vec() } else { targets.to_vec() };
                    groups.push(format!(
                        "socket {socket}: sources {} -> targets {}",
                        sources.iter().map(|&s| m.nodes[s].name.as_str()).collect::<Vec<_>>().join(", "),
                        targets.iter().map(|&s| m.nodes[s].name.as_str()).collect::<Vec<_>>().join(", ")
                    ));
                    for (i, &s) in sources.iter().enumerate() {
                        let d = targets[i % targets.len()];
                        let mut b = Builder::new(m);
                        b.load(ResKey::FlashRead(s), 1.0);
                        b.transfer(&m.route_to_memory(s, socket), tlp.posted_write(), 1.0);
                        b.host_memory(socket, "DMA from source SSDs", 1.0);
                        b.host_memory(socket, "compression reads its input", 1.0);
                        b.host_memory(socket, "compression writes its output", 1.0 / r);
                        b.cores(socket, "compute", 1.0 / rate);
                        let rc = m.root_of(d);
                        b.transfer(&m.route(rc, d), tlp.dma_read(), 1.0 / r);
                        b.host_memory(socket, "DMA to target SSDs", 1.0 / r);
                        b.load(ResKey::FlashWrite(d), 1.0 / r);
                        flows.push(b.flow(format!("{} -> cores of socket {socket} -> {}", m.nodes[s].name, m.nodes[d].name), self.bytes_per_source));
                    }
                }
            }
            JobKind::Read { into } => {
                let place = self.memory_of(m, into, &mut ssds, &mut notes)?;
                let orch = place.and_then(|_| orchestration(m, &mut calibrations, &mut unknowns));
                for &s in &ssds {
                    let mut b = Builder::new(m);
                    b.load(ResKey::FlashRead(s), 1.0);
                    match place {
                        None => {
                            let socket = m.nodes[s].socket;
                            b.transfer(&m.route_to_memory(s, socket), tlp.posted_write(), 1.0);
                            b.host_memory(socket, "DMA from SSDs", 1.0);
                        }
                        Some(c) => {
                            b.transfer(&m.route(s, c), tlp.posted_write(), 1.0);
                            b.load(ResKey::CmbMemory(c), 1.0);
                            if let Some(v) = orch {
                                b.cores(m.nodes[c].socket, "orchestration", v / 1e9);
                            }
                        }
                    }
                    let to = place.map(|c| m.nodes[c].name.clone()).unwrap_or_else(|| "host memory".into());
                    flows.push(b.flow(format!("{} -> {to}", m.nodes[s].name), self.bytes_per_source));
                }
                groups.push(format!("{} reading", count(flows.len(), "SSD")));
            }
            JobKind::Write { from } => {
                let place = self.memory_of(m, from, &mut ssds, &mut notes)?;
                let orch = place.and_then(|_| orchestration(m, &mut calibrations, &mut unknowns));
                for &s in &ssds {
                    let mut b = Builder::new(m);
                    match place {
                        None => {
                            let socket = m.nodes[s].socket;
                            b.transfer(&m.route(m.root_of(s), s), tlp.dma_read(), 1.0);
                            b.host_memory(socket, "DMA to SSDs", 1.0);
                        }
                        Some(c) => {
                            b.transfer(&m.route(c, s), tlp.dma_read(), 1.0);
                            b.load(ResKey::CmbMemory(c), 1.0);
                            if let Some(v) = orch {
                                b.cores(m.nodes[c].socket, "orchestration", v / 1e9);
                            }
                        }
                    }
                    b.load(ResKey::FlashWrite(s), 1.0);
                    let from = place.map(|c| m.nodes[c].name.clone()).unwrap_or_else(|| "host memory".into());
                    flows.push(b.flow(format!("{from} -> {}", m.nodes[s].name), self.bytes_per_source));
                }
                groups.push(format!("{} writing", count(flows.len(), "SSD")));
            }
            JobKind::Send | JobKind::SendNicmem => {
                let nicmem = self.kind == JobKind::SendNicmem;
                let nics = m.nics();
                if nics.is_empty() {
                    return Err(SimError::Job("send needs a NIC; the machine has none".into()));
                }
                if nicmem {
                    notes.push("NIC memory is assumed to be a P2P target (the seed's proposal; no shipping NIC publishes it as p2pmem): SSD -> NIC legs follow the PCIe tree, and its bandwidth is not modelled (no published figure)".into());
                }
                let mut next = vec![0usize; m.sockets as usize + 1];
                for &s in &ssds {
                    let socket = m.nodes[s].socket;
                    let local: Vec<usize> = nics.iter().copied().filter(|&n| m.nodes[n].socket == socket).collect();
                    let pool = if local.is_empty() { &nics } else { &local };
                    let slot = (socket as usize).min(next.len() - 1);
                    let n = pool[next[slot] % pool.len()];
                    next[slot] += 1;
                    let mut b = Builder::new(m);
                    b.load(ResKey::FlashRead(s), 1.0);
                    if nicmem {
                        // Payload: SSD -> NIC memory, peer to peer. Headers: built in host
                        // memory, read by the NIC with the descriptor.
                        let h = self.header_bytes / self.chunk_bytes.max(1.0);
                        b.transfer(&m.route(s, n), tlp.posted_write(), 1.0);
                        b.host_memory(m.nodes[n].socket, "headers built by the host", h);
                        b.host_memory(m.nodes[n].socket, "NICs read headers", h);
                        b.transfer(&m.route(m.root_of(n), n), tlp.dma_read(), h);
                        b.load(ResKey::NicSend(n), 1.0 + h);
                        flows.push(b.flow(format!("{} -> memory of {} -> wire", m.nodes[s].name, m.nodes[n].name), self.bytes_per_source));
                    } else {
                        b.transfer(&m.route_to_memory(s, socket), tlp.posted_write(), 1.0);
                        b.host_memory(socket, "DMA from SSDs", 1.0);
                        b.transfer(&m.route(m.root_of(n), n), tlp.dma_read(), 1.0);
                        b.host_memory(m.nodes[n].socket, "DMA to NICs", 1.0);
                        b.load(ResKey::NicSend(n), 1.0);
                        flows.push(b.flow(format!("{} -> host memory -> {}", m.nodes[s].name, m.nodes[n].name), self.bytes_per_source));
                    }
                }
                groups.push(format!("{} sending through {}", count(flows.len(), "SSD"), count(nics.len(), "NIC")));
            }
            // One flow, no storage: below.
            JobKind::CompressMemory { .. } => {}
        }
        if let JobKind::CompressMemory { on } = &self.kind {
            flows.push(self.memory_flow(m, on, r, &mut notes, &mut calibrations, &mut unknowns)?);
            groups.push(flows[0].name.clone());
        }
        if flows.is_empty() {
            return Err(SimError::Job(format!("{}: nothing to do on this machine ({} SSDs in the catalog{})", self.describe(), ssds.len(), m.left_out_note())));
        }
        let mut resources = BTreeMap::new();
        for f in &flows {
            for (k, _) in &f.loads {
                if resources.contains_key(k) {
                    continue;
                }
                let res = match k {
                    ResKey::Engine(n) => m.engine_resource(*n, &self.function),
                    _ => m.resource(*k),
                };
                if let Some(res) = res {
                    resources.insert(*k, res);
                }
            }
        }
        if let Some(t) = self.threads {
            for (k, res) in resources.iter_mut() {
                if let ResKey::CpuCores(_) = k {
                    if (t as f64) < res.capacity {
                        res.name = format!("{} ({t} of its {} used: --threads {t})", res.name, res.capacity);
                        res.capacity = t as f64;
                    }
                }
            }
            // `--threads` counts the cores of every socket together: with compute on more
            // than one socket, all of them share `t` (each socket had `t` of its own, so
            // `--threads 3` ran 6 cores on two sockets).
            let on_sockets: BTreeSet<ResKey> = flows.iter().flat_map(|f| f.loads.iter().map(|(k, _)| *k)).filter(|k| matches!(k, ResKey::CpuCores(_))).collect();
            if on_sockets.len() > 1 {
                for f in &mut flows {
                    let cores: f64 = f.loads.iter().filter(|(k, _)| on_sockets.contains(k)).map(|(_, a)| a).sum();
                    if cores > 0.0 {
                        f.loads.push((ResKey::Threads, cores));
                    }
                }
                let name = format!("compute threads of all sockets (--threads {t})");
                resources.insert(ResKey::Threads, Resource { key: ResKey::Threads, name, capacity: t as f64, unit: "cores" });
            }
        }
        Ok(Plan { flows, resources, groups, notes, calibrations, unknowns })
    }

    /// The order in which compress-p2p takes the machine's SSDs (`--ssds N`: the first N): a
    /// group of sources + target at a time, from each socket in turn in proportion to the CSPs
    /// it has (address order within a socket), so that N SSDs feed as many CSPs as they can;
    /// SSDs on a socket without CSPs come last. On one socket: address order.
    fn p2p_order(&self, m: &Machine, ssds: Vec<usize>) -> Vec<usize> {
        let mut csps = m.csps();
        if let Some(n) = self.csps {
            csps.truncate(n);
        }
        let group = self.sources_per_csp + 1;
        let mut rank = BTreeMap::<u32, usize>::new();
        let mut keyed: Vec<(f64, u32, usize, usize)> = ssds
            .into_iter()
            .map(|s| {
                let socket = m.nodes[s].socket;
                let r = rank.entry(socket).or_default();
                let k = csps.iter().filter(|&&c| m.nodes[c].socket == socket).count();
                let turn = if k == 0 { f64::INFINITY } else { (*r / group + 1) as f64 / k as f64 };
                *r += 1;
                (turn, socket, *r, s)
            })
            .collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        keyed.into_iter().map(|k| k.3).collect()
    }

    /// The platform's per-core rate of the job's function (a calibrated one is listed).
    fn cpu_rate(&self, m: &Machine, calibrations: &mut Vec<String>) -> Result<f64, SimError> {
        let f = m.platform.functions.get(&self.function).ok_or_else(|| {
            let known: Vec<&str> = m.platform.functions.keys().map(String::as_str).collect();
            let has = if known.is_empty() { "it has none: its cores are not modelled".to_string() } else { format!("it has {}: give one with --function, or --platform one that has this rate", known.join(", ")) };
            SimError::Job(format!("platform {} has no per-core rate for {} ({has})", m.platform.name, self.function))
        })?;
        let rate = f.value.ok_or_else(|| SimError::Job(format!("{}: rate unknown", self.function)))?;
        if f.is_calibration() {
            calibrations.push(format!("{} per core on {}: {} B/s ({})", self.function, m.platform.name, rate, f.source));
        }
        Ok(rate)
    }

    /// Refuses a function that no catalog entry of the devices that would run it names
    /// (`names`): a typo became an engine of unknown, so unlimited, throughput. A function an
    /// entry names without a figure stays allowed, and the report says it is unlimited.
    fn known_function<'c>(&self, devices: &str, names: impl Iterator<Item = &'c String>) -> Result<(), SimError> {
        let known: BTreeSet<&str> = names.map(String::as_str).collect();
        if known.contains(self.function.as_str()) {
            return Ok(());
        }
        let known = if known.is_empty() { "none".to_string() } else { known.into_iter().collect::<Vec<_>>().join(", ") };
        Err(SimError::Job(format!("unknown function '{}': no {devices} in the catalog has it (known: {known})", self.function)))
    }

    /// The one flow of a memory-to-memory compression (socket 0: where the benchmarks ran).
    fn memory_flow(&self, m: &Machine, on: &Compute, r: f64, notes: &mut Vec<String>, calibrations: &mut Vec<String>, unknowns: &mut Vec<String>) -> Result<Flow, SimError> {
        let socket = 0;
        let mut b = Builder::new(m);
        b.host_memory(socket, "the kernel copies the input out of the page cache (read + write)", 2.0);
        b.host_memory(socket, "the kernel copies the output into the page cache (read + write)", 2.0 / r);
        notes.push("the kernel's copies out of and into tmpfs load host memory but are not charged to cores (no measured per-byte cost)".into());
        match on {
            Compute::Cpu => {
                let rate = self.cpu_rate(m, calibrations)?;
                let known = m.platform.cores_per_socket.value;
                // One socket computes: threads on another would read and write the file across
                // the fabric between sockets, which has no figure. On a machine of several,
                // more threads than it has cores ran on its cores alone under a job line that
                // named them all (where another socket's cores would have taken them); on one
                // socket they share its cores, as compress-cpu's do.
                if let Some((t, c)) = self.threads.zip(known).filter(|&(t, c)| m.sockets > 1 && t as f64 > c) {
                    return Err(SimError::Job(format!(
                        "--threads {t}: compress-memory computes on one socket of the {} (socket {socket}, with its file's memory; the fabric to another socket has no figure), and {} has {c} cores per socket: give at most {c}",
                        m.sockets, m.platform.name
                    )));
                }
                let cores = known.unwrap_or(1.0);
                let busy = self.threads.map(|t| (t as f64).min(cores)).unwrap_or(cores);
                let share = match m.platform.core_contention.get(&self.function) {
                    Some(c) => {
                        let s = c.at(busy);
                        notes.push(format!("{busy} busy cores each run at {:.0}% of one alone ({}: {})", s * 100.0, self.function, c.source));
                        s
                    }
                    None => {
                        notes.push(format!("no measured contention for {} on {}: every core at the 1-core rate", self.function, m.platform.name));
                        1.0
                    }
                };
                b.host_memory(socket, "compression reads its input", 1.0);
                b.host_memory(socket, "compression writes its output", 1.0 / r);
                b.cores(socket, "compute", 1.0 / (rate * share));
                Ok(b.flow(format!("memory -> {} of socket {socket} -> memory", count(busy, "core")), self.bytes_per_source))
            }
            Compute::Gpu(name) => {
                let g = match name {
                    Some(n) => m.find(n)?,
                    None => m.gpus().first().copied().ok_or_else(|| SimError::Job("the machine has no GPU the catalog knows".into()))?,
                };
                self.known_function("GPU", m.catalog.gpus.iter().flat_map(|g| g.functions.keys()))?;
                if m.engine_resource(g, &self.function).is_none() {
                    notes.push(format!("{}: {} kernel throughput unknown (unlimited)", m.nodes[g].name, self.function));
                }
                let tlp = m.tlp;
                let rc = m.root_of(g);
                // The copy engines read the input from pinned host memory and write the output
                // back: the GPU's link carries DMA reads one way, posted writes the other.
                b.host_memory(socket, "the GPU's copy engines read the input (host -> GPU)", 1.0);
                b.transfer(&m.route(rc, g), tlp.dma_read(), 1.0);
                b.load(ResKey::GpuMemory(g), 2.0 + 2.0 / r);
                b.load(ResKey::Engine(g), 1.0);
                b.transfer(&m.route(g, rc), tlp.posted_write(), 1.0 / r);
                b.host_memory(socket, "the GPU's copy engines write the output (GPU -> host)", 1.0 / r);
                if let Some(v) = orchestration(m, calibrations, unknowns) {
                    b.cores(socket, "orchestration", v / 1e9);
                }
                Ok(b.flow(format!("memory -> {} -> memory", m.nodes[g].name), self.bytes_per_source))
            }
        }
    }
}

/// The platform's host CPU per GB a P2P or device job orchestrates (core-seconds per GB): a
/// calibrated one is listed; a missing one is said under unknowns, since the host CPU the
/// report shows then leaves the orchestration out (it read "0.00 cores" as if measured).
fn orchestration(m: &Machine, calibrations: &mut Vec<String>, unknowns: &mut Vec<String>) -> Option<f64> {
    let f = m.platform.orchestration_core_s_per_gb.as_ref();
    match f.and_then(|f| f.value) {
        Some(v) => {
            let f = f.expect("has a value");
            let line = format!("host CPU per GB orchestrated: {v} ({})", f.source);
            if f.is_calibration() && !calibrations.contains(&line) {
                calibrations.push(line);
            }
            Some(v)
        }
        None => {
            let why = f.map(|f| f.note.clone().unwrap_or_else(|| f.source.clone())).unwrap_or_else(|| "the catalog has no orchestration_core_s_per_gb for it".into());
            let line = format!("host CPU orchestrating the job on {}: {why}; the host CPU shown leaves it out", m.platform.name);
            if !unknowns.contains(&line) {
                unknowns.push(line);
            }
            None
        }
    }
}
