//! A faulty device: wraps any device and injects seeded, reproducible
//! faults (SPDK's `error` accel module, TigerBeetle-style seeds).
//!
//! Faults are drawn per accepted submission, in submission order, from a
//! SplitMix64 stream seeded by [`FaultConfig::seed`]: the same seed and
//! the same sequence of requests give the same faults, whatever the
//! timing of the device underneath.

use crate::device::{Crash, Device};
use crate::function::FunctionSet;
use crate::memory::DeviceMemory;
use crate::request::{Completion, DeviceError, Request, Status, Submit};
use crate::stats::DeviceStats;
use serde::Serialize;
use std::collections::HashMap;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Which faults to inject, and the seed they are drawn from.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    pub seed: u64,
    /// Probability that a completion's status becomes
    /// [`Status::InjectedFault`] (its output length 0).
    pub error_probability: f64,
    /// Probability that one byte of a successful command's output is
    /// flipped in device memory after the device wrote it (the completion
    /// still says success: what a verifying host must catch).
    pub corrupt_probability: f64,
    /// Extra latency per completion, uniform in `[min, max]`.
    pub latency: Option<(Duration, Duration)>,
    /// Crash the device right after this many accepted submissions (the
    /// last one is still in flight when it crashes). For the emulated CSP
    /// a crash is SIGKILL of its process.
    pub crash_after_submissions: Option<u64>,
    /// Freeze the device (it stops answering, alive) right after this many
    /// accepted submissions. For the emulated CSP: SIGSTOP.
    pub hang_after_submissions: Option<u64>,
    /// The device itself posts its Nth completion twice (a duplicate, which
    /// the host must catch as malformed). Not done by this wrapper: the
    /// emulated CSP does it (`ServeOptions::duplicate_completion_after`),
    /// set by whoever starts the device from this config.
    pub duplicate_completion_after: Option<u64>,
    /// Not a fault: compress commands run at this level instead of the one
    /// asked, so the output is sound gzip but not the oracle's bytes (as a
    /// GPU's nvCOMP members are not ISA-L's): what a host must not splice
    /// with the CPU's output at a byte offset when the device fails.
    pub compress_level: Option<peerpath_func::Level>,
}

impl FaultConfig {
    /// No faults yet; add them with the fields.
    pub fn seeded(seed: u64) -> FaultConfig {
        FaultConfig {
            seed,
            error_probability: 0.0,
            corrupt_probability: 0.0,
            latency: None,
            crash_after_submissions: None,
            hang_after_submissions: None,
            duplicate_completion_after: None,
            compress_level: None,
        }
    }
}

/// One injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum FaultKind {
    /// The completion's status was replaced by [`Status::InjectedFault`].
    Error,
    /// The output byte at `offset` (in device memory) was XORed with `mask`.
    Corrupt { offset: u64, mask: u8 },
    /// The completion was held back this long.
    Latency { micros: u64 },
    /// The device was crashed after this submission.
    Crash,
    /// The device was frozen after this submission.
    Hang,
}

impl FaultKind {
    fn rank(&self) -> u8 {
        match self {
            FaultKind::Error => 0,
            FaultKind::Corrupt { .. } => 1,
            FaultKind::Latency { .. } => 2,
            FaultKind::Crash => 3,
            FaultKind::Hang => 4,
        }
    }
}

/// A fault and the submission (counted from 1) and tag it hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FaultEvent {
    pub submission: u64,
    pub tag: u64,
    #[serde(flatten)]
    pub fault: FaultKind,
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable, good enough.
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What will happen to one submission.
#[derive(Clone, Copy, Debug)]
struct Plan {
    error: bool,
    /// (position seed, XOR mask) when the output is to be corrupted.
    corrupt: Option<(u64, u8)>,
    latency: Duration,
}

struct Pending {
    tag: u64,
    submission: u64,
    plan: Plan,
}

/// Wraps a device and injects faults (see the module docs). The inner
/// device sees the wrapper's own sequence numbers as tags; callers see
/// their own.
pub struct FaultyDevice<D> {
    inner: D,
    config: FaultConfig,
    rng: SplitMix64,
    next_plan: Option<Plan>,
    submissions: u64,
    next_seq: u64,
    pending: HashMap<u64, Pending>,
    delayed: Vec<(Instant, Completion)>,
    events: Vec<FaultEvent>,
}

impl<D: Device + Crash> FaultyDevice<D> {
    pub fn new(inner: D, config: FaultConfig) -> FaultyDevice<D> {
        let rng = SplitMix64(config.seed);
        FaultyDevice {
            inner,
            config,
            rng,
            next_plan: None,
            submissions: 0,
            next_seq: 0,
            pending: HashMap::new(),
            delayed: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The faults injected so far, ordered by submission.
    pub fn events(&self) -> Vec<FaultEvent> {
        let mut e = self.events.clone();
        e.sort_by_key(|e| (e.submission, e.fault.rank()));
        e
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    fn draw(&mut self) -> Plan {
        // Always draw the same number of values, so that one fault's
        // presence never shifts the stream for the next submission.
        let error = self.rng.next_f64() < self.config.error_probability;
        let corrupt_hit = self.rng.next_f64() < self.config.corrupt_probability;
        let position = self.rng.next_u64();
        let mask = (self.rng.next_u64() % 255) as u8 + 1;
        let latency_draw = self.rng.next_u64();
        let latency = match self.config.latency {
            Some((min, max)) if max > min => {
                let span = (max - min).as_nanos() as u64;
                min + Duration::from_nanos(latency_draw % (span + 1))
            }
            Some((min, _)) => min,
            None => Duration::ZERO,
        };
        Plan { error, corrupt: corrupt_hit.then_some((position, mask)), latency }
    }

    /// Gives a request its caller's tag back; returns its pending entry.
    fn restore(&mut self, request: &mut Request) -> Option<Pending> {
        let p = self.pending.remove(&request.tag)?;
        request.tag = p.tag;
        Some(p)
    }

    /// Applies the plan to a completion from the inner device; returns the
    /// completion and how long to hold it.
    fn apply(&mut self, mut c: Completion) -> (Completion, Duration) {
        let Some(p) = self.restore(&mut c.request) else {
            return (c, Duration::ZERO);
        };
        if let Some((position, mask)) = p.plan.corrupt {
            if c.status == Status::Success && c.output_bytes > 0 {
                let offset = c.request.output.offset + position % c.output_bytes;
                let mut byte = [0u8];
                // SAFETY: the command has completed, so the device no longer
                // uses its output range, and its owner has not seen the
                // completion yet, so nobody else does either.
                unsafe {
                    self.inner.memory().host_read(offset, &mut byte);
                    self.inner.memory().host_write(offset, &[byte[0] ^ mask]);
                }
                self.events.push(FaultEvent { submission: p.submission, tag: p.tag, fault: FaultKind::Corrupt { offset, mask } });
            }
        }
        if p.plan.error {
            c.status = Status::InjectedFault;
            c.output_bytes = 0;
            self.events.push(FaultEvent { submission: p.submission, tag: p.tag, fault: FaultKind::Error });
        }
        if !p.plan.latency.is_zero() {
            let micros = p.plan.latency.as_micros() as u64;
            self.events.push(FaultEvent { submission: p.submission, tag: p.tag, fault: FaultKind::Latency { micros } });
        }
        (c, p.plan.latency)
    }

    /// A failure of the inner device, with the caller's tags, plus every
    /// completion still held back (a crashed device never posted them).
    fn translate(&mut self, mut e: DeviceError) -> DeviceError {
        let mut requests = std::mem::take(&mut e.in_flight);
        for r in &mut requests {
            self.restore(r);
        }
        requests.extend(self.delayed.drain(..).map(|(_, c)| c.request));
        e.in_flight = requests;
        e
    }

    fn release_due(&mut self, completions: &mut Vec<Completion>) -> usize {
        let now = Instant::now();
        let mut n = 0;
        let mut i = 0;
        while i < self.delayed.len() {
            if self.delayed[i].0 <= now {
                completions.push(self.delayed.remove(i).1);
                n += 1;
            } else {
                i += 1;
            }
        }
        n
    }
}

impl<D: Device + Crash> Device for FaultyDevice<D> {
    fn failure(&self) -> Option<&DeviceError> {
        self.inner.failure()
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn functions(&self) -> FunctionSet {
        self.inner.functions()
    }

    fn storage_io(&self) -> Option<&crate::StorageIo> {
        self.inner.storage_io()
    }

    fn register_file(&mut self, file: &std::fs::File) -> Result<u8, String> {
        self.inner.register_file(file)
    }

    fn unregister_file(&mut self, file: u8) {
        self.inner.unregister_file(file)
    }

    fn settle(&mut self, timeout: Duration) -> bool {
        self.inner.settle(timeout)
    }

    fn memory(&self) -> &DeviceMemory {
        self.inner.memory()
    }

    fn queue_depth(&self) -> usize {
        self.inner.queue_depth()
    }

    fn in_flight(&self) -> usize {
        self.inner.in_flight() + self.delayed.len()
    }

    fn submit(&mut self, mut request: Request) -> Submit {
        let plan = match self.next_plan.take() {
            Some(p) => p,
            None => self.draw(),
        };
        let tag = request.tag;
        let seq = self.next_seq;
        request.tag = seq;
        if let Some(other) = self.config.compress_level {
            match &mut request.function {
                crate::Function::GzipCompressMember { level, .. } | crate::Function::GzipCompressChunk { level, .. } => *level = other,
                _ => {}
            }
        }
        match self.inner.submit(request) {
            Submit::Queued => {
                self.next_seq += 1;
                self.submissions += 1;
                self.pending.insert(seq, Pending { tag, submission: self.submissions, plan });
                if self.config.crash_after_submissions == Some(self.submissions) {
                    self.events.push(FaultEvent { submission: self.submissions, tag, fault: FaultKind::Crash });
                    self.inner.crash();
                }
                if self.config.hang_after_submissions == Some(self.submissions) {
                    self.events.push(FaultEvent { submission: self.submissions, tag, fault: FaultKind::Hang });
                    self.inner.freeze();
                }
                Submit::Queued
            }
            Submit::Busy(mut r) => {
                r.tag = tag;
                self.next_plan = Some(plan); // the next accepted submission gets it
                Submit::Busy(r)
            }
            Submit::Refused(mut r, e) => {
                r.tag = tag;
                self.next_plan = Some(plan);
                Submit::Refused(r, e)
            }
        }
    }

    fn poll(&mut self, completions: &mut Vec<Completion>) -> Result<usize, DeviceError> {
        let mut fresh = Vec::new();
        let result = self.inner.poll(&mut fresh);
        let mut n = 0;
        for c in fresh {
            let (c, hold) = self.apply(c);
            if hold.is_zero() {
                completions.push(c);
                n += 1;
            } else {
                self.delayed.push((Instant::now() + hold, c));
            }
        }
        if let Err(e) = result {
            return Err(self.translate(e));
        }
        Ok(n + self.release_due(completions))
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), DeviceError> {
        let next_release = self.delayed.iter().map(|(t, _)| *t).min();
        let timeout = match next_release {
            Some(t) => timeout.min(t.saturating_duration_since(Instant::now())),
            None => timeout,
        };
        if self.inner.in_flight() > 0 {
            self.inner.wait(timeout).map_err(|e| self.translate(e))?;
        } else if next_release.is_some() {
            std::thread::sleep(timeout);
        }
        Ok(())
    }

    fn wake_fd(&self) -> Option<RawFd> {
        // Held completions have no descriptor to wake anyone.
        if self.config.latency.is_some() {
            None
        } else {
            self.inner.wake_fd()
        }
    }

    fn arm_wake(&mut self) -> bool {
        if self.config.latency.is_some() || !self.delayed.is_empty() {
            return false;
        }
        self.inner.arm_wake()
    }

    fn hangup_fd(&self) -> Option<RawFd> {
        self.inner.hangup_fd()
    }

    fn set_command_timeout(&mut self, timeout: std::time::Duration) {
        self.inner.set_command_timeout(timeout);
    }

    fn process_id(&self) -> Option<u32> {
        self.inner.process_id()
    }

    fn parallelism(&self) -> Option<usize> {
        self.inner.parallelism()
    }

    fn max_input_ranges(&self) -> usize {
        self.inner.max_input_ranges()
    }

    fn whole_chunk_commands(&self) -> bool {
        self.inner.whole_chunk_commands()
    }

    fn stats(&mut self) -> Option<DeviceStats> {
        self.inner.stats()
    }
}

impl<D: Device + Crash> Crash for FaultyDevice<D> {
    fn crash(&mut self) {
        self.inner.crash();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_deterministic_and_spread() {
        let mut a = SplitMix64(42);
        let mut b = SplitMix64(42);
        let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut c = SplitMix64(43);
        assert_ne!(xs[0], c.next_u64());
        let mean = (0..10_000).map(|_| a.next_f64()).sum::<f64>() / 10_000.0;
        assert!((0.45..0.55).contains(&mean), "{mean}");
    }
}
