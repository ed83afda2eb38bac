//! The engine: max-min fair sharing of every resource among the active flows, recomputed each
//! time a flow finishes (a flow-level discrete-event simulation).
//!
//! Progressive filling with per-flow coefficients: all unfrozen flows grow at the same rate
//! until some resource is full; the flows using it freeze; repeat. Deterministic: the only
//! randomness is an optional jitter of flow sizes drawn from `seed` (SplitMix64), which moves
//! the job's finishing time but not the steady-state figures.

use crate::job::{Job, Plan};
use crate::machine::{Machine, ResKey};
use crate::report::{self, SimReport};
use crate::SimError;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimOptions {
    pub seed: u64,
    /// Each flow's size is multiplied by 1 + U(-j, j).
    pub size_jitter: f64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions { seed: 1, size_jitter: 0.05 }
    }
}

/// SplitMix64: small, fast, and the same everywhere.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One allocation: the rate of every active flow and the order resources filled up in.
#[derive(Clone, Debug)]
pub struct Allocation {
    pub rates: Vec<f64>,
    /// Resources in the order they saturated, with the flows each froze.
    pub saturated: Vec<ResKey>,
}

/// Max-min fair rates for `active` flows of `plan` (inactive flows get 0); a run that
/// allocates again and again builds its `Shares` once.
pub fn allocate(plan: &Plan, active: &[bool]) -> Result<Allocation, SimError> {
    Shares::new(plan).allocate(active)
}

/// A plan's resources as dense indices, in `ResKey` order (the order each round visits them),
/// built once per run: each flow's positive loads on resources of known capacity, and the
/// flows each resource carries.
pub struct Shares<'p> {
    plan: &'p Plan,
    keys: Vec<ResKey>,
    capacity: Vec<f64>,
    loads: Vec<Vec<(usize, f64)>>,
    users: Vec<Vec<usize>>,
}

impl<'p> Shares<'p> {
    pub fn new(plan: &'p Plan) -> Self {
        let keys: Vec<ResKey> = plan.resources.keys().copied().collect();
        let capacity = plan.resources.values().map(|r| r.capacity).collect();
        let mut users = vec![Vec::new(); keys.len()];
        let mut loads = Vec::with_capacity(plan.flows.len());
        for (i, f) in plan.flows.iter().enumerate() {
            let mut mine = Vec::with_capacity(f.loads.len());
            for (k, a) in &f.loads {
                if let (Ok(r), true) = (keys.binary_search(k), *a > 0.0) {
                    mine.push((r, *a));
                    users[r].push(i);
                }
            }
            loads.push(mine);
        }
        Shares { plan, keys, capacity, loads, users }
    }

    /// Max-min fair rates for the `active` flows (inactive flows get 0).
    pub fn allocate(&self, active: &[bool]) -> Result<Allocation, SimError> {
        let n = self.loads.len();
        let kn = self.keys.len();
        let mut rates = vec![0.0; n];
        let mut frozen: Vec<bool> = active.iter().map(|a| !a).collect();
        // The unfrozen flows, in flow order: each round's sums add them in that order.
        let mut unfrozen: Vec<usize> = (0..n).filter(|&i| !frozen[i]).collect();
        let mut remaining = self.capacity.clone();
        let mut denom = vec![0.0; kn];
        let mut carried = vec![false; kn];
        let mut is_saturated = vec![false; kn];
        let mut saturated = Vec::new();
        for _round in 0..=(kn + n) {
            if unfrozen.is_empty() {
                break;
            }
            // Per resource: the sum of the unfrozen flows' coefficients.
            denom.fill(0.0);
            carried.fill(false);
            for &i in &unfrozen {
                for &(r, a) in &self.loads[i] {
                    denom[r] += a;
                    carried[r] = true;
                }
            }
            let mut step = f64::INFINITY;
            for r in (0..kn).filter(|&r| carried[r]) {
                let inc = remaining[r].max(0.0) / denom[r];
                if inc < step {
                    step = inc;
                }
            }
            if !step.is_finite() {
                let names: Vec<&str> = unfrozen.iter().map(|&i| self.plan.flows[i].name.as_str()).collect();
                return Err(SimError::Job(format!(
                    "nothing with a known capacity limits {} (every component on its path is unknown to the catalog)",
                    names.join(", ")
                )));
            }
            for &i in &unfrozen {
                rates[i] += step;
            }
            for r in (0..kn).filter(|&r| carried[r]) {
                remaining[r] -= step * denom[r];
                if remaining[r] <= self.capacity[r] * 1e-9 {
                    if !is_saturated[r] {
                        is_saturated[r] = true;
                        saturated.push(self.keys[r]);
                    }
                    for &i in &self.users[r] {
                        frozen[i] = true;
                    }
                }
            }
            unfrozen.retain(|&i| !frozen[i]);
        }
        Ok(Allocation { rates, saturated })
    }
}

/// Runs `job` on machine `m`: steady-state allocation, then the event loop to the end.
pub fn simulate(m: &Machine, job: &Job, opts: &SimOptions) -> Result<SimReport, SimError> {
    let mut plan = job.plan(m)?;
    let mut rng = SplitMix64(opts.seed);
    for f in &mut plan.flows {
        let u = rng.next_f64() * 2.0 - 1.0;
        f.bytes *= 1.0 + opts.size_jitter.clamp(0.0, 0.9) * u;
    }
    let n = plan.flows.len();
    let mut active = vec![true; n];
    let mut left: Vec<f64> = plan.flows.iter().map(|f| f.bytes).collect();
    let shares = Shares::new(&plan);
    let steady = shares.allocate(&active)?;
    let mut t = 0.0;
    let mut events = 0usize;
    let mut phases = Vec::new();
    while active.iter().any(|a| *a) && events <= n {
        let alloc = if events == 0 { steady.clone() } else { shares.allocate(&active)? };
        let mut dt = f64::INFINITY;
        for i in 0..n {
            if active[i] && alloc.rates[i] > 0.0 {
                dt = dt.min(left[i] / alloc.rates[i]);
            }
        }
        if !dt.is_finite() {
            return Err(SimError::Job("a flow got no bandwidth at all".into()));
        }
        for i in 0..n {
            if active[i] {
                left[i] -= alloc.rates[i] * dt;
                if left[i] <= plan.flows[i].bytes * 1e-9 {
                    active[i] = false;
                }
            }
        }
        phases.push((t, dt, alloc.rates.iter().sum::<f64>()));
        t += dt;
        events += 1;
    }
    Ok(report::build(m, job, &plan, &steady, t, phases, opts))
}
