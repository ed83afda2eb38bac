//! Compute devices (layer 2): where functions run, on ranges of the
//! device's own memory.
//!
//! - [`Device`]: the trait every device implements (what it supports, its
//!   memory, submit, poll, wait), SPDK accel-module style.
//! - [`Function`]: the closed set of functions, numbered like opcodes.
//! - [`Request`] / [`Completion`]: typed commands over [`DeviceRange`]s
//!   (offsets in device memory, never host pointers); a completion carries
//!   its status, output length and the CRC-32 of the input read.
//! - [`CpuDevice`]: every function on host memory with `peerpath-func`,
//!   the oracle every other device is compared with byte for byte.
//! - [`EmulatedCsp`]: a computational storage processor in another
//!   process, with its memory in a shared-memory file and NVMe-style queue
//!   pairs (`docs/queue-format.md`); `peerpath csp serve` runs one by hand.
//! - [`FaultyDevice`]: wraps any device and injects seeded faults (errors,
//!   corrupted output, latency, crash).
//!
//! See `README.md` in this crate for how a job drives a device.

mod cpu;
mod device;
pub mod emulated;
mod exec;
mod faulty;
mod function;
mod memory;
mod request;
mod stats;
mod sys;
mod watch;

pub use cpu::{CpuDevice, CpuDeviceConfig};
pub use device::{register_in, run_to_completion, threads_ended, RETIRED, Crash, Device, StorageIo};
pub use emulated::{ConnectOptions, CspError, CspPaths, EmulatedCsp, Identify, ServeOptions, SpawnOptions};
pub use faulty::{FaultConfig, FaultEvent, FaultKind, FaultyDevice};
pub use function::{parse_scan_fault_record, scan_fault_record, Function, FunctionKind, FunctionSet, CHUNK_ENTRY_BYTES, SCAN_FAULT_BYTES, SCAN_RESULT_BYTES, STORAGE_ALIGN_BYTES};
pub use exec::{check as check_request, chunk_bound_bytes};
pub use memory::DeviceMemory;
pub use request::{Completion, DeviceError, DeviceRange, FailureKind, Request, Status, Submit, MAX_INPUT_RANGES};
pub use stats::{DeviceStats, FunctionStats, StatsCounters};
pub use sys::{poll_fds, EventFd};
pub use watch::Watcher;
