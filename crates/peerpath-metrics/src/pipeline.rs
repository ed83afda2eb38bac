//! Where a pipelined job's time goes: its compute workers busy or waiting for
//! work, its orchestrator waiting for completions (and what held it), and how
//! full its queues were on average. What a many-core run needs to tell which
//! stage stops it from scaling.

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Time the worker threads of a pool spent running tasks and waiting for
/// one, summed over the threads (shared with them).
#[derive(Clone, Default)]
pub struct WorkerTimes {
    busy_ns: Arc<AtomicU64>,
    idle_ns: Arc<AtomicU64>,
}

impl WorkerTimes {
    pub fn add_busy(&self, d: Duration) {
        self.busy_ns.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
    pub fn add_idle(&self, d: Duration) {
        self.idle_ns.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
    pub fn busy(&self) -> Duration {
        Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed))
    }
    pub fn idle(&self) -> Duration {
        Duration::from_nanos(self.idle_ns.load(Ordering::Relaxed))
    }
}

/// What the orchestrator had in flight at a moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InFlight {
    pub tasks: usize,
    pub reads: usize,
    pub writes: usize,
}

/// The orchestrator's side: each wait for completions, charged to what held
/// it, and the queues' occupancy integrated over time.
pub struct PipelineClock {
    started: Instant,
    last: Instant,
    at_last: InFlight,
    integral: [f64; 3],
    waits: Vec<(&'static str, Duration)>,
    stages: Vec<(&'static str, Duration)>,
}

impl Default for PipelineClock {
    fn default() -> Self {
        PipelineClock::started_at(Instant::now())
    }
}

impl PipelineClock {
    fn started_at(t: Instant) -> Self {
        PipelineClock { started: t, last: t, at_last: InFlight::default(), integral: [0.0; 3], waits: Vec::new(), stages: Vec::new() }
    }

    /// What is in flight from now on (until the next call).
    pub fn observe(&mut self, now: InFlight) {
        self.observe_at(now, Instant::now());
    }

    /// What is in flight from `t` on (`t` not before the previous call's).
    fn observe_at(&mut self, now: InFlight, t: Instant) {
        let dt = t.duration_since(self.last).as_secs_f64();
        let was = self.at_last;
        for (acc, v) in self.integral.iter_mut().zip([was.tasks, was.reads, was.writes]) {
            *acc += v as f64 * dt;
        }
        self.last = t;
        self.at_last = now;
    }

    /// A wait that took `d`, held by `what` (e.g. "workers all busy").
    pub fn waited(&mut self, what: &'static str, d: Duration) {
        add(&mut self.waits, what, d);
    }

    /// Work the orchestrator did itself in `stage` (e.g. "growing the
    /// target"), timed by the caller: where its time went when it was not
    /// waiting, the stage that bounds a pipeline whose workers idle.
    pub fn spent(&mut self, stage: &'static str, d: Duration) {
        add(&mut self.stages, stage, d);
    }

    /// The report, with the workers' times.
    pub fn report(&mut self, threads: usize, workers: &WorkerTimes) -> PipelineReport {
        self.report_at(threads, workers, Instant::now())
    }

    /// The report for the span that ends at `t`.
    fn report_at(&mut self, threads: usize, workers: &WorkerTimes, t: Instant) -> PipelineReport {
        self.observe_at(self.at_last, t);
        let span = self.last.duration_since(self.started).as_secs_f64().max(f64::MIN_POSITIVE);
        let mut waits: Vec<WaitShare> = self.waits.iter().map(|(w, d)| WaitShare { held_by: (*w).to_string(), seconds: d.as_secs_f64() }).collect();
        waits.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        let mut stages: Vec<StageShare> = self.stages.iter().map(|(w, d)| StageShare { stage: (*w).to_string(), seconds: d.as_secs_f64() }).collect();
        stages.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        let (busy, idle) = (workers.busy().as_secs_f64(), workers.idle().as_secs_f64());
        PipelineReport {
            worker_threads: threads,
            worker_busy_s: busy,
            worker_idle_s: idle,
            worker_busy_share: if busy + idle > 0.0 { busy / (busy + idle) } else { 0.0 },
            // Folded from +0: an empty f64 sum is -0, which the report printed as "-0.000 s".
            orchestrator_wait_s: waits.iter().fold(0.0, |total, w| total + w.seconds),
            orchestrator_span_s: span,
            waits,
            orchestrator_stages: stages,
            mean_tasks_in_flight: self.integral[0] / span,
            mean_reads_in_flight: self.integral[1] / span,
            mean_writes_in_flight: self.integral[2] / span,
        }
    }
}

/// One cause of the orchestrator's waiting and the time it held it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct WaitShare {
    pub held_by: String,
    pub seconds: f64,
}

/// A stage of the orchestrator's own work and the time it took.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StageShare {
    pub stage: String,
    pub seconds: f64,
}

fn add(list: &mut Vec<(&'static str, Duration)>, what: &'static str, d: Duration) {
    match list.iter_mut().find(|(w, _)| *w == what) {
        Some((_, total)) => *total += d,
        None => list.push((what, d)),
    }
}

/// Where a pipelined job's time went (measured).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PipelineReport {
    pub worker_threads: usize,
    /// Summed over the workers: running tasks, and waiting for one.
    pub worker_busy_s: f64,
    pub worker_idle_s: f64,
    /// Busy / (busy + idle).
    pub worker_busy_share: f64,
    /// The orchestrator's waits for completions, in all and by what held it.
    pub orchestrator_wait_s: f64,
    pub orchestrator_span_s: f64,
    pub waits: Vec<WaitShare>,
    /// The orchestrator's own timed work by stage (the rest of its span
    /// outside waits is bookkeeping: splitting, submitting, reaping).
    pub orchestrator_stages: Vec<StageShare>,
    /// Time-weighted averages over the orchestrator's span.
    pub mean_tasks_in_flight: f64,
    pub mean_reads_in_flight: f64,
    pub mean_writes_in_flight: f64,
}

impl PipelineReport {
    /// One paragraph for the text report.
    pub fn render(&self) -> String {
        let waits: Vec<String> = self.waits.iter().map(|w| format!("{} {:.3} s", w.held_by, w.seconds)).collect();
        let stages: Vec<String> = self.orchestrator_stages.iter().map(|w| format!("{} {:.3} s", w.stage, w.seconds)).collect();
        format!(
            "workers ({}) busy {:.0}% of their time ({:.3} s), waiting for work {:.3} s; orchestrator waited {:.3} s of {:.3} s{}{}; in flight on average: {:.1} tasks, {:.1} reads, {:.1} writes",
            self.worker_threads,
            self.worker_busy_share * 100.0,
            self.worker_busy_s,
            self.worker_idle_s,
            self.orchestrator_wait_s,
            self.orchestrator_span_s,
            if waits.is_empty() { String::new() } else { format!(" ({})", waits.join(", ")) },
            if stages.is_empty() { String::new() } else { format!(", worked on {}", stages.join(", ")) },
            self.mean_tasks_in_flight,
            self.mean_reads_in_flight,
            self.mean_writes_in_flight
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancy_is_time_weighted_and_waits_add_up_by_cause() {
        // Timestamps given, not taken: 30 ms with 4 tasks and 2 reads, then
        // 40 ms with 1 write, after 10 ms with nothing in flight.
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut c = PipelineClock::started_at(t0);
        c.observe_at(InFlight { tasks: 4, reads: 2, writes: 0 }, ms(10));
        c.observe_at(InFlight { tasks: 0, reads: 0, writes: 1 }, ms(40));
        c.waited("workers all busy", Duration::from_millis(20));
        c.waited("waiting for reads", Duration::from_millis(5));
        c.waited("workers all busy", Duration::from_millis(10));
        c.spent("growing the target", Duration::from_millis(7));
        c.spent("growing the target", Duration::from_millis(1));
        let w = WorkerTimes::default();
        w.add_busy(Duration::from_millis(90));
        w.add_idle(Duration::from_millis(10));
        let r = c.report_at(2, &w, ms(80));
        // Over 80 ms: 4 tasks for 30 ms, 2 reads for 30 ms, 1 write for 40 ms.
        assert!((r.orchestrator_span_s - 0.08).abs() < 1e-9, "{r:?}");
        assert!((r.mean_tasks_in_flight - 1.5).abs() < 1e-9, "{r:?}");
        assert!((r.mean_reads_in_flight - 0.75).abs() < 1e-9, "{r:?}");
        assert!((r.mean_writes_in_flight - 0.5).abs() < 1e-9, "{r:?}");
        assert_eq!(r.waits[0], WaitShare { held_by: "workers all busy".into(), seconds: 0.03 });
        assert!((r.orchestrator_wait_s - 0.035).abs() < 1e-9);
        assert!((r.worker_busy_share - 0.9).abs() < 1e-9);
        assert_eq!(r.orchestrator_stages, vec![StageShare { stage: "growing the target".into(), seconds: 0.008 }]);
        assert!(r.render().contains("busy 90%") && r.render().contains("worked on growing the target 0.008 s"), "{}", r.render());
    }

    #[test]
    fn a_job_that_never_waited_waited_zero_not_minus_zero() {
        let t0 = Instant::now();
        let r = PipelineClock::started_at(t0).report_at(2, &WorkerTimes::default(), t0);
        assert!(r.orchestrator_wait_s == 0.0 && r.orchestrator_wait_s.is_sign_positive(), "{r:?}");
        assert!(r.render().contains("orchestrator waited 0.000 s"), "{}", r.render());
    }
}
