//! What-if: vary one parameter of a machine and a job, and see where the bottleneck moves.
//!
//! - `csp=A..B`, `ssd=A..B`: use that many CSPs / SSDs; beyond what the machine has, more are
//!   added by cloning the existing ones (round robin), each on a new port beside its template's
//!   (a new root port on the same root complex, or a new downstream port on the same switch),
//!   so the P2P verdicts of the clones are those of their templates.
//! - `gen=A..B`: every PCIe link trained at that generation (widths kept).
//! - `mps=128,256,512`: the platform's Max_Payload_Size.
//!
//! [`plan`] adds CSPs (or SSDs) until a job reaches a target throughput.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;

use serde::Serialize;

use peerpath_topo::bdf::parse_root_bus_name;
use peerpath_topo::{Bdf, LinkSpeed, Topology};

use crate::catalog::{Catalog, Figure};
use crate::engine::{simulate, SimOptions};
use crate::job::Job;
use crate::machine::Machine;
use crate::pcie::TlpModel;
use crate::report::{count, SimReport};
use crate::SimError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Param {
    Csp,
    Ssd,
    Gen,
    Mps,
}

impl Param {
    pub fn name(self) -> &'static str {
        match self {
            Param::Csp => "csp",
            Param::Ssd => "ssd",
            Param::Gen => "gen",
            Param::Mps => "mps",
        }
    }
}

/// The most steps a sweep takes (a range `A..B` with `B - A` at most this; a list of at most
/// one more value).
pub const MAX_STEPS: u32 = 256;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Vary {
    pub param: Param,
    pub values: Vec<u32>,
}

impl Vary {
    /// `csp=1..12`, `ssd=3,6,9`, `gen=3..5`, `mps=128,256,512`.
    pub fn parse(s: &str) -> Result<Vary, SimError> {
        let (k, v) = s.split_once('=').ok_or_else(|| SimError::Vary(format!("'{s}': expected NAME=A..B or NAME=A,B,C")))?;
        let param = match k.trim() {
            "csp" | "csps" => Param::Csp,
            "ssd" | "ssds" => Param::Ssd,
            "gen" | "link" | "link-gen" => Param::Gen,
            "mps" => Param::Mps,
            other => return Err(SimError::Vary(format!("unknown parameter '{other}' (csp, ssd, gen, mps)"))),
        };
        let num = |x: &str| x.trim().parse::<u32>().map_err(|_| SimError::Vary(format!("'{x}' is not a number in '{s}'")));
        let mut values: Vec<u32> = if let Some((a, b)) = v.split_once("..") {
            let (a, b) = (num(a)?, num(b.trim_start_matches('='))?);
            if a > b || b - a > MAX_STEPS {
                return Err(SimError::Vary(format!("'{s}': range must go up, at most {MAX_STEPS} steps")));
            }
            (a..=b).collect()
        } else {
            v.split(',').map(num).collect::<Result<_, _>>()?
        };
        // Each value once, in increasing order: the table, its "<- moves" and the plot's axis
        // follow the parameter (a list in another order drew its line back and forth).
        values.sort_unstable();
        values.dedup();
        if values.len() > MAX_STEPS as usize + 1 {
            return Err(SimError::Vary(format!("'{s}': at most {} values ({MAX_STEPS} steps)", MAX_STEPS + 1)));
        }
        match param {
            Param::Gen if values.iter().any(|g| !(1..=7).contains(g)) => return Err(SimError::Vary("gen: 1 to 7".into())),
            Param::Mps if values.iter().any(|m| ![128, 256, 512, 1024, 2048, 4096].contains(m)) => {
                return Err(SimError::Vary("mps: 128, 256, 512, 1024, 2048 or 4096".into()))
            }
            Param::Csp | Param::Ssd if values.contains(&0) => return Err(SimError::Vary("counts start at 1".into())),
            _ => {}
        }
        Ok(Vary { param, values })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub value: u32,
    pub throughput_gbit_per_s: f64,
    pub host_cpu_share: f64,
    pub host_memory_gbit_per_s: f64,
    pub bottleneck: String,
    /// The bottleneck changed at this point (not the first).
    pub bottleneck_moved: bool,
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Sweep {
    pub label: &'static str,
    pub machine: String,
    pub job: String,
    pub param: Param,
    pub points: Vec<Point>,
    /// Values at which the job cannot run (compress-p2p with one SSD), and why; the sweep goes on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub value: u32,
    pub why: String,
}

fn gts_of_gen(g: u32) -> f64 {
    match g {
        1 => 2.5,
        2 => 5.0,
        3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        6 => 64.0,
        _ => 128.0,
    }
}

/// Adds a device like `template` (same kind, link, NUMA node) on a new port beside the
/// template's port; returns the new device's address.
pub fn add_like(topo: &mut Topology, template: Bdf, label: &str) -> Result<Bdf, SimError> {
    let t = topo.device(template).cloned().ok_or_else(|| SimError::Vary(format!("{template}: no such device")))?;
    let port_bdf = t.upstream.ok_or_else(|| SimError::Vary(format!("{template} sits on a root bus: cannot add a sibling")))?;
    let port = topo.device(port_bdf).cloned().ok_or_else(|| SimError::Vary(format!("{port_bdf}: missing")))?;
    let domain = port_bdf.domain;
    let in_domain = || topo.devices.iter().map(|x| x.bdf).filter(|b| b.domain == domain);
    let slot = (0..32u8)
        .flat_map(|d| (0..8u8).map(move |f| (d, f)))
        // 00.0 on a root bus is the host bridge's place
        .filter(|&(d, f)| (d, f) != (0, 0) || port.upstream.is_some())
        .find(|&(d, f)| !in_domain().any(|b| (b.bus, b.device, b.function) == (port_bdf.bus, d, f)));
    let (d, f) = slot.ok_or_else(|| SimError::Vary(format!("bus {:02x} is full", port_bdf.bus)))?;
    // A bus of its own: the one past the highest in use, then the free ones below it (the clones
    // of a machine whose buses reach ff ran out at its highest). A bus is taken when a function
    // sits on it or a host bridge's root bus has its number. Bus numbers say nothing else here:
    // the host bridge above a function is found by its upstream bridges, so the clone's verdicts
    // stay those of its template whatever its number.
    let mut taken = [false; 256];
    for b in in_domain().map(|b| b.bus).chain(topo.host_bridges.iter().filter_map(|h| parse_root_bus_name(&h.name)).filter(|&(dom, _)| dom == domain).map(|(_, b)| b)) {
        taken[b as usize] = true;
    }
    let above = taken.iter().rposition(|&t| t).map_or(0, |b| b + 1);
    let bus = (above..256).chain(0..above).find(|&b| !taken[b]).ok_or_else(|| {
        SimError::Vary(format!("PCI domain {domain:04x} has no free bus number left: all 256 are in use, and each clone takes one"))
    })? as u8;
    let new_port = Bdf::new(port_bdf.domain, port_bdf.bus, d, f).expect("valid slot");
    let new_dev = Bdf::new(port_bdf.domain, bus, 0, 0).expect("valid");
    let mut p = port.clone();
    p.bdf = new_port;
    p.label = None;
    let mut e = t.clone();
    e.bdf = new_dev;
    e.upstream = Some(new_port);
    e.label = Some(label.to_string());
    topo.devices.push(p);
    topo.devices.push(e);
    if let Some(c) = topo.nvme_for_pci(template).cloned() {
        let n = (0..).map(|i| format!("nvme{i}")).find(|n| !topo.nvme_controllers.iter().any(|c| &c.name == n)).expect("unbounded");
        let mut c = c;
        c.namespaces = vec![format!("{n}n1")];
        c.name = n;
        c.pci = Some(new_dev);
        c.subsystem = None;
        topo.nvme_controllers.push(c);
    }
    topo.devices.sort_by_key(|x| x.bdf);
    Ok(new_dev)
}

fn grow(topo: &mut Topology, catalog: &Catalog, csp: bool, want: usize) -> Result<(), SimError> {
    let m = Machine::new(topo.clone(), catalog, None)?;
    let have: Vec<usize> = if csp { m.csps() } else { m.ssds() };
    if have.is_empty() {
        return Err(SimError::Vary(format!("the machine has no {} to clone (read one that has: --file TOPOLOGY.toml, e.g. crates/peerpath-topo/fixtures/epyc-case-study/topology.toml, or --sysfs ROOT)", if csp { "CSP" } else { "SSD" })));
    }
    let templates: Vec<Bdf> = have.iter().filter_map(|&i| m.nodes[i].bdf).collect();
    let prefix = if csp { "csp" } else { "ssd" };
    let mut next = have.len();
    let mut i = 0;
    while next < want {
        let mut label = format!("{prefix}{next}");
        while m.nodes.iter().any(|n| n.name == label) {
            label.push('+');
        }
        add_like(topo, templates[i % templates.len()], &label).map_err(|e| match e {
            SimError::Vary(why) => SimError::Vary(format!("{why}; at most {next} {prefix}s fit on this machine")),
            e => e,
        })?;
        next += 1;
        i += 1;
    }
    Ok(())
}

/// The machine and job for one value of the varied parameter.
pub fn apply(topo: &Topology, catalog: &Catalog, platform: Option<&str>, job: &Job, param: Param, value: u32) -> Result<(Machine, Job), SimError> {
    let mut topo = topo.clone();
    let mut job = job.clone();
    match param {
        Param::Csp => {
            grow(&mut topo, catalog, true, value as usize)?;
            job.csps = Some(value as usize);
        }
        Param::Ssd => {
            grow(&mut topo, catalog, false, value as usize)?;
            job.ssds = Some(value as usize);
        }
        Param::Gen => {
            let s = LinkSpeed::from_gts(gts_of_gen(value));
            for d in &mut topo.devices {
                if let Some(l) = &mut d.link {
                    l.current_speed = s;
                    l.max_speed = s;
                }
            }
        }
        Param::Mps => {}
    }
    let mut m = Machine::new(topo, catalog, platform)?;
    if param == Param::Mps {
        m.platform.max_payload_bytes = Figure::assumed(value as f64, "what-if: --vary mps");
        m.tlp = TlpModel::from_catalog(catalog, &m.platform);
    }
    Ok((m, job))
}

/// Refuses to count what the job does not (`plan --add csp` or `--vary csp` of a job that
/// uses no CSP, or one CSP's memory, gave the same figures at every count, and plan proposed
/// them all the same), and a count that `--csps`/`--ssds` also sets (the sweep's won without a
/// word).
fn counted(job: &Job, param: Param) -> Result<(), SimError> {
    let (uses, given) = match param {
        // read-cmb and write-cmb use the memory of one CSP, whatever the count.
        Param::Csp => (job.counts_csps(), job.csps),
        Param::Ssd => (job.counts_ssds(), job.ssds),
        Param::Gen | Param::Mps => return Ok(()),
    };
    let what = param.name();
    if !uses {
        let why = match param {
            Param::Csp => "uses no CSP (or one CSP's memory, whatever the count), so the number of CSPs cannot change it: count SSDs (--add ssd, --vary ssd=A..B), or use compress-p2p",
            _ => "uses no SSD, so the number of SSDs cannot change it",
        };
        return Err(SimError::Vary(format!("{}: this job {why}", job.describe())));
    }
    if given.is_some() {
        return Err(SimError::Vary(format!("--{what}s and a count of {what}s to sweep or plan both say how many {what}s: give one")));
    }
    Ok(())
}

/// Runs the sweep.
pub fn sweep(topo: &Topology, catalog: &Catalog, platform: Option<&str>, job: &Job, vary: &Vary, opts: &SimOptions) -> Result<Sweep, SimError> {
    counted(job, vary.param)?;
    let mut points: Vec<Point> = Vec::new();
    let mut machine = String::new();
    let mut skipped = Vec::new();
    let mut first_error = None;
    for &v in &vary.values {
        // Clones take new bus numbers: the larger counts may not fit (a plan stops there), and
        // the values that do still run (one that did not failed the whole sweep).
        let (m, j) = match apply(topo, catalog, platform, job, vary.param, v) {
            Err(SimError::Vary(why)) if matches!(vary.param, Param::Csp | Param::Ssd) => {
                skipped.push(Skipped { value: v, why: format!("{v} {}s do not fit: {why}", vary.param.name()) });
                first_error.get_or_insert(SimError::Vary(why));
                continue;
            }
            r => r?,
        };
        machine = m.description.clone();
        let r: SimReport = match simulate(&m, &j, opts) {
            Ok(r) => r,
            Err(SimError::Job(why)) => {
                skipped.push(Skipped { value: v, why: why.clone() });
                first_error.get_or_insert(SimError::Job(why));
                continue;
            }
            Err(e) => return Err(e),
        };
        let short = r.bottleneck.rsplit_once(" at ").map(|(a, _)| a.to_string()).unwrap_or_else(|| r.bottleneck.clone());
        let moved = points.last().is_some_and(|p: &Point| {
            let prev = p.bottleneck.rsplit_once(" at ").map(|(a, _)| a).unwrap_or(&p.bottleneck);
            kind_of(prev) != kind_of(&short)
        });
        points.push(Point {
            value: v,
            throughput_gbit_per_s: r.throughput_gbit_per_s,
            host_cpu_share: r.host_cpu_share,
            host_memory_gbit_per_s: r.host_memory_gbit_per_s,
            bottleneck: r.bottleneck.clone(),
            bottleneck_moved: moved,
            notes: r.notes.clone(),
        });
    }
    if points.is_empty() {
        return Err(first_error.expect("a value failed"));
    }
    Ok(Sweep { label: crate::LABEL, machine, job: job.describe(), param: vary.param, points, skipped })
}

/// What kind of resource a bottleneck is, without the device's name ("PCIe link x4",
/// "flash writes", "CMB memory", "CPU cores", "host memory"): a move between two CSPs' links
/// is not a move.
pub fn kind_of(bottleneck: &str) -> String {
    if let Some(rest) = bottleneck.strip_prefix("PCIe link ") {
        // "ssd0 -> 0000:02:00.0 (x4 Gen3 8.0 GT/s)": the width says which kind of link it is;
        // the generation may be what was varied.
        let width = rest.rsplit_once('(').and_then(|(_, l)| l.split_whitespace().next()).unwrap_or("");
        return format!("PCIe link {width}");
    }
    for k in ["flash reads", "flash writes", "CMB memory", "CPU cores", "host memory"] {
        if bottleneck.starts_with(k) {
            return k.to_string();
        }
    }
    bottleneck.split(" of ").next().unwrap_or(bottleneck).to_string()
}

impl Sweep {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("serializes")
    }

    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "peerpath sim: {} varied ({})", self.param.name(), self.label);
        let _ = writeln!(s, "machine: {}", self.machine);
        let _ = writeln!(s, "job:     {}", self.job);
        let _ = writeln!(s, "{:>5} {:>12} {:>9} {:>12}  bottleneck", self.param.name(), "Gb/s", "host CPU", "memory Gb/s");
        for p in &self.points {
            let mark = if p.bottleneck_moved { "  <- moves" } else { "" };
            let _ = writeln!(
                s,
                "{:>5} {:>12} {:>8}% {:>12}  {}{mark}",
                p.value,
                figure(p.throughput_gbit_per_s, 1),
                figure(p.host_cpu_share * 100.0, 1),
                figure(p.host_memory_gbit_per_s, 2),
                p.bottleneck
            );
        }
        for k in &self.skipped {
            let _ = writeln!(s, "{:>5} skipped: {}", k.value, k.why);
        }
        // Each point's notes, once (they were in the JSON only: an engine "unknown (unlimited)"
        // makes every figure above an upper bound); one said of many devices alike, once for all
        // of them ("csp0..csp19: ...", not twenty lines).
        let mut said = BTreeSet::new();
        let mut alike: Vec<(&str, Vec<&str>)> = Vec::new();
        for n in self.points.iter().flat_map(|p| &p.notes).filter(|n| said.insert(n.as_str())) {
            let (who, what) = match n.split_once(": ") {
                Some((who, what)) if !who.contains(' ') => (who, what),
                _ => ("", n.as_str()),
            };
            match alike.iter_mut().find(|(w, _)| *w == what) {
                Some((_, whos)) => whos.push(who),
                None => alike.push((what, vec![who])),
            }
        }
        for (what, whos) in alike {
            let _ = match devices(&whos) {
                Some(whos) => writeln!(s, "note: {whos}: {what}"),
                None => writeln!(s, "note: {what}"),
            };
        }
        s
    }
}

/// Device names as one: "csp0..csp19" where they are one prefix and consecutive numbers,
/// else each, comma-separated; None for no name.
fn devices(names: &[&str]) -> Option<String> {
    let named: Vec<&str> = names.iter().copied().filter(|n| !n.is_empty()).collect();
    // A number as written (csp01 is not csp1: a range would name devices that are not there).
    let split = |n: &str| n.find(|c: char| c.is_ascii_digit()).and_then(|i| n[i..].parse::<u64>().ok().filter(|k| k.to_string() == n[i..]).map(|k| (n[..i].to_string(), k)));
    let parts: Option<Vec<(String, u64)>> = named.iter().map(|n| split(n)).collect();
    match (named.len(), parts) {
        (0, _) => None,
        (1, _) => Some(named[0].to_string()),
        (_, Some(p)) if p.iter().all(|(pre, _)| *pre == p[0].0) && p.windows(2).all(|w| w[1].1 == w[0].1 + 1) => {
            Some(format!("{}{}..{}{}", p[0].0, p[0].1, p[0].0, p[p.len() - 1].1))
        }
        _ => Some(named.join(", ")),
    }
}

/// The result of [`plan`].
#[derive(Clone, Debug, Serialize)]
pub struct Proposal {
    pub label: &'static str,
    pub target_gbit_per_s: f64,
    pub param: Param,
    /// The smallest count that reaches the target, if any up to the limit.
    pub count: Option<u32>,
    pub throughput_gbit_per_s: f64,
    pub bottleneck: String,
    pub groups: Vec<String>,
    pub why: String,
}

/// How many devices [`plan`] may try: as many steps as a sweep takes, and a PCI domain has no
/// more bus numbers for clones. 0 has no meaning (it was read as 1).
pub const PLAN_LIMIT: RangeInclusive<u32> = 1..=256;

/// Adds CSPs (`Param::Csp`) or SSDs (`Param::Ssd`) one at a time until `job` reaches
/// `target_gbit_per_s` (finite and above 0: NaN and infinity were "not reachable") or `limit`
/// devices (in [`PLAN_LIMIT`]); proposes the count and the grouping.
#[allow(clippy::too_many_arguments)]
pub fn plan(topo: &Topology, catalog: &Catalog, platform: Option<&str>, job: &Job, param: Param, target_gbit_per_s: f64, limit: u32, opts: &SimOptions) -> Result<Proposal, SimError> {
    if !(target_gbit_per_s.is_finite() && target_gbit_per_s > 0.0) {
        return Err(SimError::Vary(format!("target {target_gbit_per_s} Gb/s: a throughput above 0")));
    }
    if !PLAN_LIMIT.contains(&limit) {
        return Err(SimError::Vary(format!("limit {limit}: from {} to {} devices", PLAN_LIMIT.start(), PLAN_LIMIT.end())));
    }
    counted(job, param)?;
    // Every count up to the limit: a flat stretch need not be the end (on a two-socket machine
    // the second socket's SSDs help only once there are enough of them to form a group).
    let mut best: Option<(u32, SimReport)> = None;
    let mut too_few = None;
    let mut tried = limit;
    let mut full = String::new();
    for n in 1..=limit {
        // Clones take new bus numbers: a topology may run out of them before the limit.
        let (m, j) = match apply(topo, catalog, platform, job, param, n) {
            Err(SimError::Vary(e)) if best.is_some() => {
                tried = n - 1;
                full = format!("; {n} do not fit: {e}");
                break;
            }
            r => r?,
        };
        // The first counts may be too few for the job to run at all (compress-p2p needs two
        // SSDs, a source and a target): the plan starts where it can.
        let r = match simulate(&m, &j, opts) {
            Err(e @ SimError::Job(_)) if best.is_none() => {
                too_few = Some(e);
                continue;
            }
            r => r?,
        };
        if r.throughput_gbit_per_s >= target_gbit_per_s {
            return Ok(Proposal {
                label: crate::LABEL,
                target_gbit_per_s,
                param,
                count: Some(n),
                throughput_gbit_per_s: r.throughput_gbit_per_s,
                bottleneck: r.bottleneck,
                groups: r.plan,
                why: format!("{} reach {} Gb/s (simulated)", count(n, param.name()), gbit(target_gbit_per_s)),
            });
        }
        // The smallest count that reaches the most.
        if best.as_ref().is_none_or(|(_, b)| r.throughput_gbit_per_s > b.throughput_gbit_per_s * 1.0001) {
            best = Some((n, r));
        }
    }
    let Some((n, r)) = best else { return Err(too_few.expect("a point failed or ran")) };
    Ok(Proposal {
        label: crate::LABEL,
        target_gbit_per_s,
        param,
        count: None,
        throughput_gbit_per_s: r.throughput_gbit_per_s,
        why: format!(
            "up to {tried} {}s ({}) the most is {:.1} Gb/s, first at {n}, limited by {}",
            param.name(),
            if full.is_empty() { "--limit".to_string() } else { format!("--limit {limit}{full}") },
            r.throughput_gbit_per_s,
            r.bottleneck
        ),
        bottleneck: r.bottleneck,
        groups: r.plan,
    })
}

/// A throughput in Gb/s as the plan prints it: one decimal, or 4 significant digits below
/// 0.1 Gb/s (a target of 0.01 was "0.0").
pub fn gbit(x: f64) -> String {
    figure(x, 1)
}

/// A figure of a sweep's table and plot: `decimals` decimals, or 4 significant digits where
/// those decimals would not show it (a non-zero figure is never printed "0.0").
pub fn figure(x: f64, decimals: usize) -> String {
    if x == 0.0 || x.abs() >= 10f64.powi(-(decimals as i32)) { format!("{x:.decimals$}") } else { format!("{x:.3e}") }
}

impl Proposal {
    pub fn render(&self) -> String {
        let mut s = format!("peerpath sim plan ({}): target {} Gb/s\n", self.label, gbit(self.target_gbit_per_s));
        match self.count {
            Some(n) => s.push_str(&format!("proposal: {}, {:.1} Gb/s, bottleneck {}\n", count(n, self.param.name()), self.throughput_gbit_per_s, self.bottleneck)),
            None => s.push_str(&format!("not reachable: {}\n", self.why)),
        }
        for g in &self.groups {
            s.push_str(&format!("  {g}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::devices;

    #[test]
    fn devices_alike_are_named_as_a_range_only_where_they_are_one() {
        assert_eq!(devices(&["csp0", "csp1", "csp2"]).as_deref(), Some("csp0..csp2"));
        assert_eq!(devices(&["csp0", "csp2"]).as_deref(), Some("csp0, csp2"));
        assert_eq!(devices(&["csp0", "ssd1"]).as_deref(), Some("csp0, ssd1"));
        assert_eq!(devices(&["gpu0"]).as_deref(), Some("gpu0"));
        assert_eq!(devices(&["csp01", "csp02"]).as_deref(), Some("csp01, csp02"));
        assert_eq!(devices(&[""]), None);
    }
}
