//! Measurement: an exact byte ledger of every data movement, and host CPU
//! time per thread role from the kernel's per-thread accounting.

mod cpu;
mod ledger;
pub mod pipeline;
pub mod units;

pub use cpu::{process_cpu, thread_cpu_now, CpuAccount, CpuRole, CpuSummary, CpuTime, RoleCpu};
pub use ledger::{Ledger, LedgerEntry, LedgerSummary, Location, Mover, Purpose};
pub use pipeline::{InFlight, PipelineClock, PipelineReport, WorkerTimes};
pub use units::{count, human_bytes, human_bytes_exact};
