//! A device's own statistics: commands, errors, bytes and busy time per
//! function, plus entries refused before they named a function.

use crate::exec::Outcome;
use crate::function::FunctionKind;
use crate::request::Status;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters for one function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FunctionStats {
    pub function: Option<FunctionKind>,
    /// Commands completed (successfully or not).
    pub commands: u64,
    /// Commands completed with an error status.
    pub errors: u64,
    /// Input bytes of successful commands.
    pub input_bytes: u64,
    /// Output bytes of successful commands.
    pub output_bytes: u64,
    /// Time spent running commands, summed over the device's workers.
    pub busy_ns: u64,
}

/// What a device says about the work it has done since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceStats {
    /// One entry per function, in opcode order.
    pub functions: Vec<FunctionStats>,
    /// Entries refused before they named a function (unknown opcode,
    /// malformed entry).
    pub rejected_entries: u64,
    /// Time since the device started.
    pub uptime_ns: u64,
}

impl DeviceStats {
    /// The sum over all functions.
    pub fn total(&self) -> FunctionStats {
        self.functions.iter().fold(FunctionStats::default(), |a, f| FunctionStats {
            function: None,
            commands: a.commands + f.commands,
            errors: a.errors + f.errors,
            input_bytes: a.input_bytes + f.input_bytes,
            output_bytes: a.output_bytes + f.output_bytes,
            busy_ns: a.busy_ns + f.busy_ns,
        })
    }

    pub fn function(&self, kind: FunctionKind) -> FunctionStats {
        self.functions.iter().find(|f| f.function == Some(kind)).copied().unwrap_or_default()
    }
}

#[derive(Default)]
struct Counters {
    commands: AtomicU64,
    errors: AtomicU64,
    input_bytes: AtomicU64,
    output_bytes: AtomicU64,
    busy_ns: AtomicU64,
}

/// Shared counters that worker threads add to.
pub struct StatsCounters {
    per_kind: Vec<Counters>,
    rejected: AtomicU64,
    started: std::time::Instant,
}

impl Default for StatsCounters {
    fn default() -> Self {
        StatsCounters {
            per_kind: FunctionKind::ALL.iter().map(|_| Counters::default()).collect(),
            rejected: AtomicU64::new(0),
            started: std::time::Instant::now(),
        }
    }
}

impl StatsCounters {
    pub(crate) fn record(&self, kind: FunctionKind, input_bytes: u64, outcome: &Outcome) {
        self.add(kind, input_bytes, outcome.status, outcome.output_bytes, outcome.busy_ns);
    }

    /// One command of `kind` completed with `status` after `busy_ns` of the
    /// device's time (a device outside this crate, e.g. the GPU, counts here).
    pub fn add(&self, kind: FunctionKind, input_bytes: u64, status: Status, output_bytes: u64, busy_ns: u64) {
        let c = &self.per_kind[kind.index()];
        c.commands.fetch_add(1, Ordering::Relaxed);
        c.busy_ns.fetch_add(busy_ns, Ordering::Relaxed);
        if status == Status::Success {
            c.input_bytes.fetch_add(input_bytes, Ordering::Relaxed);
            c.output_bytes.fetch_add(output_bytes, Ordering::Relaxed);
        } else {
            c.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn record_rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> DeviceStats {
        DeviceStats {
            functions: FunctionKind::ALL
                .iter()
                .zip(&self.per_kind)
                .map(|(k, c)| FunctionStats {
                    function: Some(*k),
                    commands: c.commands.load(Ordering::Relaxed),
                    errors: c.errors.load(Ordering::Relaxed),
                    input_bytes: c.input_bytes.load(Ordering::Relaxed),
                    output_bytes: c.output_bytes.load(Ordering::Relaxed),
                    busy_ns: c.busy_ns.load(Ordering::Relaxed),
                })
                .collect(),
            rejected_entries: self.rejected.load(Ordering::Relaxed),
            uptime_ns: self.started.elapsed().as_nanos().min(u64::MAX as u128) as u64,
        }
    }
}
