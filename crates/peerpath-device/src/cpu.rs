//! The CPU device: every function, on host memory, on its own worker
//! threads, with `peerpath-func` (the oracle). Hardware is always optional.

use crate::device::{Crash, Device, RETIRED};
use crate::exec::{self, Encoders, Outcome};
use crate::function::FunctionSet;
use crate::memory::{DeviceMemory, RangeTable};
use crate::request::{Completion, DeviceError, FailureKind, Request, Submit};
use crate::stats::{DeviceStats, StatsCounters};
use crate::sys::{poll_fds, EventFd};
use crossbeam_channel::{Receiver, Sender};
use std::collections::{HashMap, VecDeque};
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How to build a [`CpuDevice`].
#[derive(Clone, Debug)]
pub struct CpuDeviceConfig {
    pub name: String,
    /// Host memory the device's ranges address (rounded up to a page).
    pub memory_bytes: usize,
    /// Worker threads; 0 runs every request inside `submit` (deterministic,
    /// for tests and single-threaded callers).
    pub workers: usize,
    /// Requests in flight at most; `submit` answers Busy beyond.
    pub queue_depth: usize,
    /// Ask the host for one command per chunk (as a batching device does).
    pub whole_chunk_commands: bool,
    /// Read and write registered files itself ([`crate::Function::StorageRead`] and `StorageWrite`,
    /// `pread` by its workers), as a GPU with GPUDirect Storage does.
    pub storage_io: bool,
    /// With `storage_io`: files of a memory file system too (its workers' `pread` and `pwrite`
    /// copy the pages; [`crate::StorageIo::memory_files`]).
    pub memory_files: bool,
}

impl CpuDeviceConfig {
    /// `memory_bytes` of memory, one worker per core, depth 64.
    pub fn new(memory_bytes: usize) -> CpuDeviceConfig {
        CpuDeviceConfig {
            name: "cpu".into(),
            memory_bytes,
            workers: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            queue_depth: 64,
            whole_chunk_commands: false,
            storage_io: false,
            memory_files: false,
        }
    }
}

struct Job {
    id: u64,
    request: Request,
}

struct Done {
    id: u64,
    outcome: Outcome,
}

/// Shared between the device and its workers.
struct Shared {
    memory: DeviceMemory,
    stats: StatsCounters,
    /// Files registered for storage reads (their numbers index it).
    files: std::sync::RwLock<Vec<Option<std::fs::File>>>,
    wake: EventFd,
    /// Set by the host before it sleeps on `wake`; a worker that finds it
    /// set clears it and signals (so busy hosts get no wake-ups).
    sleeping: AtomicBool,
}

/// The CPU device (see the module docs).
pub struct CpuDevice {
    name: String,
    whole_chunks: bool,
    storage_io: Option<crate::StorageIo>,
    shared: Arc<Shared>,
    depth: usize,
    ranges: RangeTable,
    in_flight: HashMap<u64, Request>,
    next_id: u64,
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    ready: VecDeque<Completion>,
    workers: Vec<JoinHandle<()>>,
    inline: Option<Encoders>,
    failed: Option<DeviceError>,
    /// A failure found outside poll and wait (a crash), with its requests,
    /// for the next poll or wait to return.
    unreported: Option<DeviceError>,
    /// The claims of the commands in flight when it failed: its workers may
    /// still run them (they finish what was queued), so the ranges stay
    /// claimed until the workers have ended ([`Device::settle`]).
    claims_of_failed: Vec<u64>,
}

impl CpuDevice {
    pub fn new(config: CpuDeviceConfig) -> std::io::Result<CpuDevice> {
        let memory = DeviceMemory::host(config.memory_bytes);
        Self::with_memory(config, memory)
    }

    /// A CPU device computing in `memory` (`config.memory_bytes` is not
    /// used): a mapped region makes it reachable by the I/O engine, so the
    /// job's device executor can drive it like any other device.
    pub fn with_memory(config: CpuDeviceConfig, memory: DeviceMemory) -> std::io::Result<CpuDevice> {
        assert!(config.queue_depth > 0, "a device takes at least one request");
        let shared = Arc::new(Shared {
            memory,
            stats: StatsCounters::default(),
            files: Default::default(),
            wake: EventFd::new()?,
            sleeping: AtomicBool::new(false),
        });
        let (job_tx, job_rx) = crossbeam_channel::bounded::<Job>(config.queue_depth);
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<Done>();
        let mut workers = Vec::new();
        for i in 0..config.workers {
            let (rx, tx, shared) = (job_rx.clone(), done_tx.clone(), shared.clone());
            let handle = std::thread::Builder::new()
                .name(format!("{}-worker-{i}", config.name))
                .spawn(move || worker(&shared, &rx, &tx))?;
            workers.push(handle);
        }
        Ok(CpuDevice {
            whole_chunks: config.whole_chunk_commands,
            storage_io: config.storage_io.then(|| crate::StorageIo {
                direct: true,
                writes: true,
                what: "pread and pwrite by the CPU device's workers".into(),
                memory_files: config.memory_files.then(|| "pread and pwrite by the CPU device's workers (a CPU copy from and to the file's pages)".into()),
            }),
            name: config.name,
            shared,
            depth: config.queue_depth,
            ranges: RangeTable::default(),
            in_flight: HashMap::new(),
            next_id: 0,
            jobs: if config.workers > 0 { Some(job_tx) } else { None },
            done: done_rx,
            ready: VecDeque::new(),
            workers,
            inline: if config.workers == 0 { Some(Encoders::default()) } else { None },
            failed: None,
            unreported: None,
            claims_of_failed: Vec::new(),
        })
    }

    /// The device's statistics (also through [`Device::stats`]).
    pub fn device_stats(&self) -> DeviceStats {
        self.shared.stats.snapshot()
    }

    fn complete(&mut self, request: Request, outcome: Outcome) -> Completion {
        Completion {
            request,
            status: outcome.status,
            output_bytes: outcome.output_bytes,
            input_crc32: outcome.input_crc32,
            device_time_us: outcome.device_time_us,
        }
    }

    fn fail(&mut self, kind: FailureKind, detail: String) -> DeviceError {
        self.jobs = None; // workers finish what they hold, then exit
        let mut in_flight: Vec<(u64, Request)> = self.in_flight.drain().collect();
        in_flight.sort_by_key(|(id, _)| *id);
        // Released once no worker can be writing them (settle); a device without workers ran
        // everything inline, so nothing is running now.
        match self.workers.is_empty() {
            true => in_flight.iter().for_each(|(id, _)| self.ranges.release(*id)),
            false => self.claims_of_failed.extend(in_flight.iter().map(|(id, _)| *id)),
        }
        let e = DeviceError { device: self.name.clone(), kind, detail, in_flight: in_flight.into_iter().map(|(_, r)| r).collect() };
        self.failed = Some(e.without_requests());
        e
    }
}

impl Shared {
    /// Runs a checked, claimed request: a storage read with its file, anything else on memory.
    ///
    /// # Safety
    /// As [`exec::run`].
    unsafe fn run(&self, request: &Request, encoders: &mut Encoders) -> Outcome {
        match request.function {
            crate::Function::StorageRead { file, .. } | crate::Function::StorageWrite { file, .. } => {
                let files = self.files.read().unwrap_or_else(|e| e.into_inner());
                // SAFETY: the caller's contract, as for exec::run.
                unsafe { exec::storage_io(&self.memory, request, files.get(file as usize).and_then(Option::as_ref)) }
            }
            // SAFETY: the caller's contract.
            _ => unsafe { exec::run(&self.memory, request, encoders) },
        }
    }
}

fn worker(shared: &Shared, jobs: &Receiver<Job>, done: &Sender<Done>) {
    let mut encoders = Encoders::default();
    for job in jobs {
        // SAFETY: the device checked the request against this memory and
        // claimed its ranges before sending it; they stay claimed until the
        // host has taken the completion.
        let outcome = unsafe { shared.run(&job.request, &mut encoders) };
        shared.stats.record(job.request.function.kind(), job.request.input_bytes(), &outcome);
        if done.send(Done { id: job.id, outcome }).is_err() {
            return; // the device is gone
        }
        fence(Ordering::SeqCst);
        if shared.sleeping.swap(false, Ordering::SeqCst) {
            shared.wake.signal();
        }
    }
}

impl Device for CpuDevice {
    fn failure(&self) -> Option<&DeviceError> {
        self.failed.as_ref()
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn functions(&self) -> FunctionSet {
        match self.storage_io {
            Some(_) => FunctionSet::all().with(crate::FunctionKind::StorageRead).with(crate::FunctionKind::StorageWrite),
            None => FunctionSet::all(),
        }
    }

    fn storage_io(&self) -> Option<&crate::StorageIo> {
        self.storage_io.as_ref()
    }

    fn register_file(&mut self, file: &std::fs::File) -> Result<u8, String> {
        if self.storage_io.is_none() {
            return Err(format!("device {} does not reach storage itself", self.name));
        }
        let file = file.try_clone().map_err(|e| format!("cannot hold the file: {e}"))?;
        crate::register_in(&mut self.shared.files.write().unwrap_or_else(|e| e.into_inner()), file)
    }

    /// Its workers run what was queued before it failed (a crash stops
    /// taking commands, not the ones taken), then end: settled once they have. A device its
    /// host retired (a command's failed completion) fails here, so its queue closes too.
    fn settle(&mut self, timeout: Duration) -> bool {
        if self.failed.is_none() {
            self.fail(FailureKind::Lost, RETIRED.into());
        }
        let ended = self.jobs.is_none() && crate::threads_ended(&self.workers, timeout);
        if ended {
            for id in std::mem::take(&mut self.claims_of_failed) {
                self.ranges.release(id);
            }
        }
        ended
    }

    fn unregister_file(&mut self, file: u8) {
        if let Some(slot) = self.shared.files.write().unwrap_or_else(|e| e.into_inner()).get_mut(file as usize) {
            *slot = None;
        }
    }

    fn memory(&self) -> &DeviceMemory {
        &self.shared.memory
    }

    fn queue_depth(&self) -> usize {
        self.depth
    }

    fn parallelism(&self) -> Option<usize> {
        Some(self.workers.len().max(1))
    }

    fn whole_chunk_commands(&self) -> bool {
        self.whole_chunks
    }

    fn in_flight(&self) -> usize {
        self.in_flight.len() + self.ready.len()
    }

    fn submit(&mut self, request: Request) -> Submit {
        if let Some(f) = &self.failed {
            return Submit::Refused(request, f.clone());
        }
        if self.in_flight.len() >= self.depth {
            return Submit::Busy(request);
        }
        let id = self.next_id;
        self.next_id += 1;
        let memory = &self.shared.memory;
        // A range must lie in one part of a staged memory (its own, or its window).
        let one_part = || match request.inputs.iter().chain(std::iter::once(&request.output)).all(|r| memory.io_ptr(*r).is_some()) {
            true => Ok(()),
            false => Err(crate::request::Status::OutOfRange),
        };
        let checked = exec::check(&request, memory.len() as u64, self.functions())
            .and_then(|()| one_part())
            .and_then(|()| self.ranges.claim(id, &request));
        if let Err(status) = checked {
            let outcome = Outcome::failed(status);
            self.shared.stats.record(request.function.kind(), 0, &outcome);
            let c = self.complete(request, outcome);
            self.ready.push_back(c);
            return Submit::Queued;
        }
        if let Some(encoders) = &mut self.inline {
            // SAFETY: checked against this memory and claimed just above.
            let outcome = unsafe { self.shared.run(&request, encoders) };
            self.shared.stats.record(request.function.kind(), request.input_bytes(), &outcome);
            self.ranges.release(id);
            let c = self.complete(request, outcome);
            self.ready.push_back(c);
            return Submit::Queued;
        }
        let jobs = self.jobs.as_ref().expect("workers run while the device has not failed");
        if jobs.send(Job { id, request: request.clone() }).is_err() {
            self.ranges.release(id);
            let e = self.fail(FailureKind::Lost, "its worker threads are gone".into());
            return Submit::Refused(request, e);
        }
        self.in_flight.insert(id, request);
        Submit::Queued
    }

    fn poll(&mut self, completions: &mut Vec<Completion>) -> Result<usize, DeviceError> {
        if let Some(e) = self.unreported.take() {
            return Err(e);
        }
        let mut n = 0;
        while let Some(c) = self.ready.pop_front() {
            completions.push(c);
            n += 1;
        }
        if let Some(f) = &self.failed {
            return if n > 0 { Ok(n) } else { Err(f.clone()) };
        }
        while let Ok(done) = self.done.try_recv() {
            self.ranges.release(done.id);
            let request = self.in_flight.remove(&done.id).expect("a completion for a request in flight");
            let c = self.complete(request, done.outcome);
            completions.push(c);
            n += 1;
        }
        Ok(n)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), DeviceError> {
        if let Some(e) = self.unreported.take() {
            return Err(e);
        }
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        if self.in_flight.is_empty() || !self.arm_wake() {
            return Ok(());
        }
        let waited = poll_fds(&[(self.shared.wake.raw(), libc::POLLIN)], Some(timeout));
        self.shared.sleeping.store(false, Ordering::SeqCst);
        self.shared.wake.drain();
        waited.map(|_| ()).map_err(|e| self.fail(FailureKind::Lost, format!("cannot wait for completions: {e}")))
    }

    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.shared.wake.raw())
    }

    fn arm_wake(&mut self) -> bool {
        self.shared.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !self.ready.is_empty() || !self.done.is_empty() || self.failed.is_some() {
            self.shared.sleeping.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }

    fn stats(&mut self) -> Option<DeviceStats> {
        Some(self.device_stats())
    }
}

impl Crash for CpuDevice {
    /// Stops the device as a crash would: completions not yet taken are
    /// lost, and the next poll or wait reports the device lost with the
    /// requests that were in flight.
    fn crash(&mut self) {
        if self.failed.is_none() {
            let untaken: Vec<Request> = self.ready.drain(..).map(|c| c.request).collect();
            let mut e = self.fail(FailureKind::Lost, "crashed (simulated)".into());
            e.in_flight.extend(untaken);
            self.unreported = Some(e);
        }
    }
}

impl Drop for CpuDevice {
    fn drop(&mut self) {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
