//! The device trait: a small, fixed set of methods (SPDK accel-module
//! style). Everything else is a default method or a free function.

use crate::function::{Function, FunctionSet};
use crate::memory::DeviceMemory;
use crate::request::{Completion, DeviceError, Request, Submit};
use crate::stats::DeviceStats;
use peerpath_mem::MemoryDomain;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// A compute device: it runs [`Function`]s on ranges of its own memory.
///
/// The contract, paired on both sides:
/// - `submit` never blocks. It answers [`Submit::Queued`] (a completion
///   will come from `poll`), [`Submit::Busy`] (queue full: the request is
///   handed back; poll and retry) or [`Submit::Refused`] (the device has
///   failed: the request is handed back with the reason).
/// - Every queued request comes back exactly once: in a [`Completion`]
///   from `poll`, or inside the [`DeviceError`] that reports the device's
///   failure (its `in_flight`). The first error carries them; later calls
///   return the same failure without requests.
/// - Ranges are offsets in [`Device::memory`]. A device checks every range
///   and refuses what lies outside its memory or clashes with a command in
///   flight, with an error status in the completion; it never touches
///   memory outside its own.
/// - `poll` never blocks; `wait` blocks until a completion may be ready,
///   the device fails, or the timeout passes (spurious returns allowed).
pub trait Device: Send {
    /// The device's name, as reports show it.
    fn name(&self) -> &str;
    /// The functions it runs.
    fn functions(&self) -> FunctionSet;
    /// The memory its requests address.
    fn memory(&self) -> &DeviceMemory;
    /// The most requests it takes in flight at once.
    fn queue_depth(&self) -> usize;
    /// Requests queued and not yet completed.
    fn in_flight(&self) -> usize;
    /// Queues a request (never blocks).
    fn submit(&mut self, request: Request) -> Submit;
    /// Appends the completions that are ready to `completions` and returns
    /// how many (never blocks). On `Err`, completions pushed before the
    /// failure was found are in `completions` all the same.
    fn poll(&mut self, completions: &mut Vec<Completion>) -> Result<usize, DeviceError>;
    /// Blocks until `poll` may find something, the device fails, or
    /// `timeout` passes. Returns at once when nothing is in flight.
    fn wait(&mut self, timeout: Duration) -> Result<(), DeviceError>;

    /// Whether the device runs `function`.
    fn supports(&self, function: &Function) -> bool {
        self.functions().contains(function.kind())
    }
    /// The memory domains its requests may address (today: its own memory).
    fn memory_domains(&self) -> Vec<MemoryDomain> {
        vec![self.memory().domain().clone()]
    }
    /// Why the device stopped taking commands, once it has (it died, timed
    /// out, or answered what it must not): every later command is refused
    /// at once with it. A job that sees it sends the rest of its work to the
    /// CPU without asking the device again.
    fn failure(&self) -> Option<&DeviceError> {
        None
    }
    /// A descriptor that becomes readable when completions may be ready,
    /// once [`Device::arm_wake`] has returned true: for an event loop that
    /// sleeps on I/O and devices at once (arm a read of it in io_uring).
    /// Reading it (8 bytes) resets it.
    fn wake_fd(&self) -> Option<RawFd> {
        None
    }
    /// Asks the device to signal [`Device::wake_fd`] at its next
    /// completion. Returns false when there is no such descriptor or
    /// completions are already waiting (poll instead of sleeping).
    fn arm_wake(&mut self) -> bool {
        false
    }
    /// A descriptor that becomes readable when the device is gone (its
    /// process died or closed the connection), for the same event loop.
    fn hangup_fd(&self) -> Option<RawFd> {
        None
    }
    /// The process that runs the device's functions on host cores, when it
    /// is one (an emulated device): its CPU time is the device's, not the
    /// host's orchestration.
    fn process_id(&self) -> Option<u32> {
        None
    }
    /// The device's own statistics, where it keeps them.
    fn stats(&mut self) -> Option<DeviceStats> {
        None
    }
    /// Its own account of where its time went (batches, engines, kernels),
    /// in words for the report, where it keeps one.
    fn profile(&mut self) -> Option<String> {
        None
    }
    /// Starts its profile afresh: a device kept open across jobs reports each job's own.
    fn reset_profile(&mut self) {}
    /// How long the host waits, with commands in flight and none completing, before it
    /// declares the device hung (a host-side setting: a device kept open across jobs
    /// takes each job's own). Devices that have no such wait ignore it.
    fn set_command_timeout(&mut self, _timeout: std::time::Duration) {}
    /// What it is and how it was opened (e.g. a GPU's model, driver and the
    /// time its opening took, by part), in words for the report, where it says.
    fn description(&self) -> Option<&str> {
        None
    }
    /// How many commands it executes at once (engines, worker threads),
    /// where it says: a host keeps about twice that many in flight, and
    /// more only holds more device memory.
    fn parallelism(&self) -> Option<usize> {
        None
    }
    /// How many input ranges one command may gather (a copy packing
    /// several members into one range): the host builds commands to fit.
    fn max_input_ranges(&self) -> usize {
        crate::MAX_INPUT_RANGES
    }
    /// Whether the host should send one command per chunk
    /// ([`crate::Function::GzipCompressChunk`]: its members written back to
    /// back) rather than one per member: devices that batch (a GPU) do
    /// better with fewer, bigger commands.
    fn whole_chunk_commands(&self) -> bool {
        false
    }
    /// How the device moves storage to and from its own memory itself
    /// ([`Function::StorageRead`], and [`Function::StorageWrite`] where it
    /// writes too, for files registered with [`Device::register_file`]),
    /// where it does.
    fn storage_io(&self) -> Option<&StorageIo> {
        None
    }
    /// Registers an open file (O_DIRECT, or a file of a memory file system
    /// where [`StorageIo::memory_files`] says it takes those) for storage
    /// commands: its number in them, or why the device cannot take it.
    fn register_file(&mut self, file: &std::fs::File) -> Result<u8, String> {
        let _ = file;
        Err(format!("device {} does not reach storage itself", self.name()))
    }
    /// Lets go of a registered file (no command of it is in flight).
    fn unregister_file(&mut self, file: u8) {
        let _ = file;
    }
    /// After the device failed, or its host retired it (a command's completion failed, with
    /// the device itself still working): takes no more commands, waits, at most `timeout`,
    /// until nothing it was given can still reach storage (a storage write queued or running),
    /// and says whether that is so. A host hands a target the device wrote to another writer
    /// only then. Default: true (the device writes no storage).
    fn settle(&mut self, timeout: Duration) -> bool {
        let _ = timeout;
        true
    }
}

/// Why a device its host retired failed ([`Device::settle`]).
pub const RETIRED: &str = "retired by the host after a command failed";

/// Waits, at most `timeout`, until every one of `threads` has ended (polling: a thread stuck
/// in a call that never returns cannot be joined); whether they all did. For
/// [`Device::settle`], once a failed device's queue is closed.
pub fn threads_ended(threads: &[std::thread::JoinHandle<()>], timeout: Duration) -> bool {
    let started = Instant::now();
    while !threads.iter().all(|t| t.is_finished()) {
        if started.elapsed() >= timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Puts `file` in the first free slot of a device's table of registered files: its number
/// ([`Device::register_file`]), at most 256 of them.
pub fn register_in<T>(files: &mut Vec<Option<T>>, file: T) -> Result<u8, String> {
    let slot = match files.iter().position(Option::is_none) {
        Some(i) => i,
        None if files.len() <= u8::MAX as usize => {
            files.push(None);
            files.len() - 1
        }
        None => return Err("256 files are registered with the device already".into()),
    };
    files[slot] = Some(file);
    Ok(slot as u8)
}

/// How a device moves storage itself ([`Device::storage_io`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageIo {
    /// Storage DMAs straight into and out of the device's memory
    /// (GPUDirect Storage with nvidia-fs or P2PDMA); otherwise the bytes
    /// pass through host memory on their way (cuFile's compatibility mode:
    /// its own bounce buffers and a copy), and the ledger says so.
    pub direct: bool,
    /// It writes too ([`Function::StorageWrite`]), not only reads.
    pub writes: bool,
    /// What moves them, in words for the report ("cuFile ..., direct from NVMe").
    pub what: String,
    /// It also takes files of a memory file system (tmpfs), whose pages are
    /// host memory already, and moves their bytes itself: how, in words for
    /// the report (a GPU's copy engine reading and writing the pages, mapped
    /// and registered; the CPU device's `pread`). `None`: only O_DIRECT files
    /// ([`Device::register_file`] is then not asked for others).
    pub memory_files: Option<String>,
}

/// A device that can be made to fail on purpose, as a crash would: the
/// faulty-device wrapper's "crash" fault. The device must then report
/// [`crate::FailureKind::Lost`] through its ordinary detection paths.
pub trait Crash {
    fn crash(&mut self);
    /// Stops the device without killing it (it hangs: commands in flight
    /// never complete), for the "hang" fault. The host must find out by
    /// its command timeout. Default: nothing (the device cannot hang).
    fn freeze(&mut self) {}
}

/// Runs `requests` to completion on `device`: submits them (waiting while
/// it is busy) and collects every completion, in the order the device
/// finished them: one per request (and per command already in flight). If
/// nothing completes for `timeout` while some are outstanding, that is the
/// device's failure ([`FailureKind::Timeout`](crate::FailureKind)), never
/// a shorter list: a caller must not take a missing answer for a done one
/// (a device without a command timeout of its own, as a GPU, hangs so).
pub fn run_to_completion<D: Device + ?Sized>(
    device: &mut D,
    requests: impl IntoIterator<Item = Request>,
    timeout: Duration,
) -> Result<Vec<Completion>, DeviceError> {
    let mut done = Vec::new();
    let mut last_progress = Instant::now();
    let stalled = |device: &D, waiting: usize| DeviceError {
        device: device.name().to_string(),
        kind: crate::FailureKind::Timeout,
        detail: format!("no completion for {:.0} s (commands outstanding: {})", timeout.as_secs_f64(), device.in_flight() + waiting),
        in_flight: Vec::new(),
    };
    let mut step = |device: &mut D, done: &mut Vec<Completion>| -> Result<bool, DeviceError> {
        if device.poll(done)? > 0 {
            last_progress = Instant::now();
            return Ok(true);
        }
        let idle = last_progress.elapsed();
        if idle >= timeout {
            return Ok(false);
        }
        device.wait(timeout - idle)?;
        Ok(true)
    };
    let mut requests = requests.into_iter();
    let mut expected = device.in_flight();
    while let Some(mut request) = requests.next() {
        loop {
            match device.submit(request) {
                Submit::Queued => {
                    expected += 1;
                    break;
                }
                Submit::Busy(r) => {
                    request = r;
                    if !step(device, &mut done)? {
                        let waiting = 1 + requests.by_ref().count();
                        return Err(stalled(device, waiting));
                    }
                }
                Submit::Refused(_, e) => return Err(e),
            }
        }
    }
    while device.in_flight() > 0 {
        if !step(device, &mut done)? {
            return Err(stalled(device, 0));
        }
    }
    device.poll(&mut done)?;
    if done.len() < expected {
        return Err(DeviceError {
            device: device.name().to_string(),
            kind: crate::FailureKind::MalformedCompletion,
            detail: format!("answered {} of {expected} commands and has none in flight: the others were lost", done.len()),
            in_flight: Vec::new(),
        });
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::function::FunctionSet;
    use crate::request::DeviceRange;

    /// Takes commands and never answers them: holding them in flight (a hung GPU kernel), or
    /// forgetting them at once (not in flight either: a device that lost them).
    struct Silent {
        memory: DeviceMemory,
        forgets: bool,
        taken: usize,
    }

    impl Silent {
        fn new(forgets: bool) -> Silent {
            Silent { memory: DeviceMemory::host(4096), forgets, taken: 0 }
        }
    }

    impl Device for Silent {
        fn name(&self) -> &str {
            "silent"
        }
        fn functions(&self) -> FunctionSet {
            FunctionSet::all()
        }
        fn memory(&self) -> &DeviceMemory {
            &self.memory
        }
        fn queue_depth(&self) -> usize {
            1
        }
        fn in_flight(&self) -> usize {
            if self.forgets {
                0
            } else {
                self.taken
            }
        }
        fn submit(&mut self, request: Request) -> Submit {
            if self.in_flight() >= 1 {
                return Submit::Busy(request);
            }
            self.taken += 1;
            Submit::Queued
        }
        fn poll(&mut self, _completions: &mut Vec<Completion>) -> Result<usize, DeviceError> {
            Ok(0)
        }
        fn wait(&mut self, timeout: Duration) -> Result<(), DeviceError> {
            std::thread::sleep(timeout.min(Duration::from_millis(20)));
            Ok(())
        }
    }

    #[test]
    fn commands_lost_without_an_answer_are_the_device_s_failure() {
        let mut dev = Silent::new(true);
        let e = run_to_completion(&mut dev, [Request::crc32(1, &[DeviceRange::new(0, 8)])], Duration::from_secs(5)).unwrap_err();
        assert_eq!(e.kind, crate::FailureKind::MalformedCompletion);
        assert!(e.detail.contains("answered 0 of 1 commands"), "{}", e.detail);
        assert_eq!(dev.taken, 1);
    }

    /// A command that never completes is the device's timeout, not a shorter list of answers
    /// (the callers wrote stale device memory as if it were the command's output).
    #[test]
    fn commands_that_never_complete_are_a_timeout_not_fewer_answers() {
        let crc = |tag| Request::crc32(tag, &[DeviceRange::new(0, 8)]);
        for requests in [vec![crc(1)], vec![crc(1), crc(2), crc(3)]] {
            let n = requests.len();
            let mut dev = Silent::new(false);
            let e = run_to_completion(&mut dev, requests, Duration::from_millis(100)).unwrap_err();
            assert_eq!(e.kind, crate::FailureKind::Timeout);
            assert!(e.detail.ends_with(&format!("(commands outstanding: {n})")), "{}", e.detail);
        }
    }
}
