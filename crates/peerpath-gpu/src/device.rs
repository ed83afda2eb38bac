//! The GPU as a [`Device`] the job executor drives: its own memory is GPU
//! memory (the host cannot address it) beside a pinned host window that
//! storage DMAs into (`DeviceMemory::foreign`); the executor stages every
//! byte through the window (GPUDirect Storage would make the window
//! unnecessary: not on machines without P2PDMA or nvidia-fs).
//!
//! `streams` worker threads (1 by default) share the CUDA context, each with
//! its own CUDA stream and scratch. A worker takes the requests queued since
//! its last turn (its share of them, with several) as one batch: copies
//! (host window <-> GPU memory, GPU <-> GPU) on the copy engines, and all
//! compress requests in one nvCOMP launch. The executor orders dependent
//! commands by their completions, so batches on different streams never
//! touch the same range; on the lent H100 several streams were slower
//! (smaller batches, more launches: bench/results/2026-11-26-gpu-machine-3).
//! nvCOMP's members (plain gzip: CRC-32 and size computed on the GPU) are
//! rewrapped on the GPU with peerpath's header (the 'PP' size subfield), so
//! `peerpath decompress` stays parallel on its output.

use crate::kernels::{Coding, CrcPlan};
use crate::crypt::{Crypt, GcmPlan};
use crate::dedup::{Cdc, CdcPlan};
use crate::nvcomp::{CompressOpts, DecompressOpts, Nvcomp};
use crate::scan::{Dfa, DfaAt, MotifError, Scan, ScanPlan, SCAN_STRIDE, SCAN_SUMS};
use cudarc::driver::{sys, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use peerpath_device::{Completion, Device, DeviceError, DeviceMemory, DeviceRange, DeviceStats, EventFd, FailureKind, Function, FunctionKind, FunctionSet, Request, StatsCounters, Status, Submit, SCAN_RESULT_BYTES};
use peerpath_func::crypt::TAG_BYTES;
use peerpath_func::{Format, PEERPATH_HEADER_BYTES};
use peerpath_mem::{MappedRegion, MemoryDomain};
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Motifs a worker keeps compiled (the oldest past these are let go at the next batch).
const MOTIFS_KEPT: usize = 8;

/// A member's first bytes read to find its header (peerpath's and BGZF's
/// take a few dozen); a longer header is read again, up to the CPU's limit
/// (`peerpath_func::gzip::MAX_HEADER_BYTES`).
const MEMBER_HEAD_BYTES: usize = 512;

/// A member to decode: where it is and how long, where its output goes,
/// what its header and trailer declare, and its output's CRC-32 command in
/// the batch's plan.
struct Inflate {
    input: u64,
    len: usize,
    output: u64,
    declared: usize,
    crc: u32,
    isize: u32,
    /// The CRC-32 commands of its output and of the member itself (the completion's input CRC-32).
    crc_at: usize,
    input_crc_at: usize,
}

/// How to open a GPU device.
#[derive(Clone, Debug)]
pub struct GpuDeviceConfig {
    pub name: String,
    pub ordinal: usize,
    /// GPU memory the executor computes in (rounded to pages).
    pub own_bytes: usize,
    /// Pinned host memory storage DMAs into and out of.
    pub window_bytes: usize,
    /// nvCOMP gzip algorithm (0 fastest .. 5 best ratio).
    pub algorithm: i32,
    pub queue_depth: usize,
    pub nvcomp: Option<std::path::PathBuf>,
    /// Gzip compression with nvCOMP (loaded only then).
    pub compress: bool,
    /// Erasure coding and CRC-32 with peerpath's own kernels
    /// (`kernels/coding.cu`; loaded only then).
    pub coding: bool,
    /// Sealing and opening `peerpath-enc/1` blocks (AES-256-GCM) with
    /// peerpath's own kernels (`kernels/crypt.cu`; loaded only then).
    pub crypt: bool,
    /// FastCDC chunk boundaries and BLAKE3 digests with peerpath's own
    /// kernels (`kernels/dedup.cu`; loaded only then).
    pub dedup: bool,
    /// Counting records that match a motif (`ScanCount`) with peerpath's
    /// own kernels (`kernels/scan.cu`; loaded only then).
    pub scan: bool,
    /// Decompressing gzip members that carry their sizes
    /// (`GzipDecompressMember`) with nvCOMP's batched decompressor, each
    /// output's CRC-32 and length checked against its trailer with
    /// peerpath's CRC-32 kernel (loads nvCOMP and the coding kernels).
    pub inflate: bool,
    /// Worker threads, each with its own CUDA stream: one batch's copies,
    /// kernel and packing overlap the others' (1: one batch at a time).
    pub streams: usize,
    /// Who moves a chunk between the host window and GPU memory.
    pub staging: Staging,
    /// How a worker gathers its batch (one nvCOMP launch).
    pub gather: Gather,
    /// Whether it reads and writes storage itself, through cuFile.
    pub io: GpuIo,
    /// Whether it reads and writes files of a memory file system (tmpfs) itself: mapped and
    /// registered with CUDA this many bytes at a time (`crate::memfile::GRANULE_BYTES` by
    /// default), its copy engine moves their pages (no CPU copy); `None`: they are staged
    /// through the window like any file (`--gpu-memory-files`, `--gpu-map-granule`).
    pub map_memory_files: Option<u64>,
    /// Commands in flight and none completing for this long: the GPU hangs, and fails
    /// ([`DEFAULT_COMMAND_TIMEOUT`] unless set; `--device-timeout`).
    pub command_timeout: Duration,
}

/// Whether the GPU reads and writes storage itself, through cuFile (GPUDirect
/// Storage), for `Function::StorageRead` and `StorageWrite` (`--gpu-io`); the
/// library is `None` for cuFile's usual places ([`crate::cufile::Cufile::open`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GpuIo {
    /// Never: the executor stages every byte through the pinned window.
    #[default]
    Staged,
    /// Where cuFile reports a direct path (nvidia-fs, or the kernel's
    /// P2PDMA); staged otherwise, and the description says why.
    Auto(Option<std::path::PathBuf>),
    /// Through cuFile whatever its mode: in compatibility mode cuFile moves
    /// the bytes through its own host buffers (the ledger says so). Where
    /// cuFile does not open, the GPU does not either, with the reason.
    Cufile(Option<std::path::PathBuf>),
}

impl GpuDeviceConfig {
    /// GPU `ordinal` as a staged device with no function yet (set the ones
    /// wanted): `bytes` of GPU memory and as many of pinned host window, room
    /// for `queue_depth` commands, one stream, copy-command staging.
    pub fn staged(ordinal: usize, bytes: usize, queue_depth: usize) -> GpuDeviceConfig {
        GpuDeviceConfig {
            name: format!("gpu{ordinal}"),
            ordinal,
            own_bytes: bytes,
            window_bytes: bytes,
            algorithm: 0,
            queue_depth,
            nvcomp: None,
            compress: false,
            coding: false,
            crypt: false,
            dedup: false,
            scan: false,
            inflate: false,
            streams: 1,
            staging: Staging::Commands,
            gather: Gather::default(),
            io: GpuIo::Staged,
            map_memory_files: None,
            command_timeout: DEFAULT_COMMAND_TIMEOUT,
        }
    }
}

/// How a worker gathers a batch. nvCOMP's batched kernel is only fast on
/// big batches (on the lent H100, algorithm 2: 8 members of 1 MiB in one
/// launch 1.5 GB/s, 32 4.9, 128 7.6, 384 7.6), so a worker may wait after
/// the first command for more, up to `bytes` of input, until the queue
/// depth is all in the device (nothing more can come), or `wait` after the
/// first. Off by default (`bytes` 0: a batch is what is queued): waiting
/// did not make the batches bigger, it made the job slower (1.09-1.11 s
/// without, 1.66-1.68 s with 64 MiB and 2 ms, on 1.5 GiB:
/// bench/results/2026-11-26-gpu-machine-6): the executor does not have more
/// chunks ready while the GPU works.
#[derive(Clone, Copy, Debug)]
pub struct Gather {
    pub bytes: u64,
    pub wait: Duration,
}

impl Default for Gather {
    fn default() -> Self {
        Gather { bytes: 0, wait: Duration::from_millis(2) }
    }
}

/// Who moves data between the pinned host window and GPU memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Staging {
    /// The executor, with copy commands: a chunk is three commands (copy in,
    /// compress, copy out), each a round trip (measured on the lent H100).
    #[default]
    Commands,
    /// The device: its memory, as the executor sees it, is the window; each
    /// compress command's chunk is copied in, compressed, packed and copied
    /// back to its output range within one batch (one round trip a chunk;
    /// measured no faster than `Commands` on the lent H100:
    /// bench/results/2026-11-26-gpu-machine-5).
    Device,
}

struct Job {
    id: u64,
    request: Request,
}

struct Done {
    id: u64,
    status: Status,
    output_bytes: u64,
    /// The CRC-32 of the input: a `Crc32` command's result, and a decoding
    /// or scan command's, as the CPU device gives it (0 for the others).
    crc32: u32,
    device_time_us: u32,
}

/// Where the workers' time went, added up over the job (nanoseconds).
/// GPU figures come from CUDA events recorded on each batch's stream.
#[derive(Default)]
struct Profile {
    /// Device staging: "copies" are the copies in, "packing" includes the copies out.
    staged_by_device: bool,
    batches: AtomicU64,
    commands: AtomicU64,
    largest_batch: AtomicU64,
    members: AtomicU64,
    member_bytes: AtomicU64,
    /// On the GPU: the batch's copies (copy engines), then from after them
    /// to the end of nvCOMP's kernel, then the packing of members.
    copies_ns: AtomicU64,
    kernel_ns: AtomicU64,
    packing_ns: AtomicU64,
    /// On the host: batches from the first command taken to the stream's
    /// completion, and waits for work.
    batch_ns: AtomicU64,
    idle_ns: AtomicU64,
    /// The worker threads' own CPU time (user + system), batches and waits.
    host_cpu_ns: AtomicU64,
}

impl Profile {
    /// Zero again: the next job's own figures (a device kept across jobs).
    fn reset(&self) {
        for a in [&self.batches, &self.commands, &self.largest_batch, &self.members, &self.member_bytes, &self.copies_ns, &self.kernel_ns, &self.packing_ns, &self.batch_ns, &self.idle_ns, &self.host_cpu_ns] {
            a.store(0, Ordering::Relaxed);
        }
    }

    fn render(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let s = |a: &AtomicU64| g(a) as f64 / 1e9;
        let batches = g(&self.batches);
        let kernel = s(&self.kernel_ns);
        format!(
            "{batches} batches, {:.1} commands each on average (largest {}); on the GPU: {} {:.3} s, nvCOMP compression {:.3} s for {} members ({:.2} GB/s while it ran), {} {:.3} s; worker threads: {:.3} s in batches, {:.3} s waiting for work, {:.3} s of CPU",
            g(&self.commands) as f64 / batches.max(1) as f64,
            g(&self.largest_batch),
            if self.staged_by_device { "copies in" } else { "copies, fills, nvCOMP decoding and peerpath's kernels" },
            s(&self.copies_ns),
            kernel,
            g(&self.members),
            if kernel > 0.0 { g(&self.member_bytes) as f64 / kernel / 1e9 } else { 0.0 },
            if self.staged_by_device { "packing and copies out" } else { "packing" },
            s(&self.packing_ns),
            s(&self.batch_ns),
            s(&self.idle_ns),
            s(&self.host_cpu_ns),
        )
    }
}

/// What the worker needs to turn offsets into addresses.
#[derive(Clone, Copy)]
struct Layout {
    own_base: u64,
    own_len: u64,
    window_host: usize,
    window_len: u64,
}

pub struct GpuDevice {
    name: String,
    functions: FunctionSet,
    memory: DeviceMemory,
    depth: usize,
    /// Commands submitted, not completed, and when each went in.
    in_flight: HashMap<u64, (Request, Instant)>,
    /// It stopped answering (nothing completed in `command_timeout`): its threads may never
    /// return, so it is not waited for when dropped (they are left to the process's end).
    hung: bool,
    command_timeout: Duration,
    /// The last completion, or the submission that found it idle: with commands in
    /// flight, nothing completing since then for `command_timeout` is a hung GPU.
    progress: Instant,
    next_id: u64,
    jobs: Option<crossbeam_channel::Sender<Job>>,
    done: crossbeam_channel::Receiver<Result<Done, String>>,
    ready: VecDeque<Completion>,
    wake: Arc<EventFd>,
    sleeping: Arc<AtomicBool>,
    workers: Vec<std::thread::JoinHandle<()>>,
    failed: Option<DeviceError>,
    stats: Arc<StatsCounters>,
    profile: Arc<Profile>,
    /// Commands submitted and not yet completed (the workers' gathering watches it).
    in_device: Arc<AtomicUsize>,
    /// What it is, for the report.
    pub description: String,
    /// Its PCI address, for the topology's answer on how storage reaches it.
    pub pci_address: String,
    /// Its own storage reads (cuFile), where it does them, and their threads.
    io: Option<Arc<Io>>,
    io_jobs: Option<crossbeam_channel::Sender<Job>>,
    io_threads: Vec<std::thread::JoinHandle<()>>,
}

/// Commands in flight and none completing for this long is a hung GPU (a kernel or copy that
/// never ends, a stuck read): the device fails with `FailureKind::Timeout` and the host goes on
/// without it. The default of [`GpuDeviceConfig::command_timeout`]; the longest batches measured
/// took under a second (a queue depth of 16 MiB chunks), the slowest algorithm (5, 0.8 GB/s)
/// would take 5 s over 4 GiB of GPU memory at once.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// I/O threads cuFile's blocking reads and writes run on: as many in flight
/// at once (a storage queue's worth).
const IO_THREADS: usize = 4;

/// The GPU's own storage reads and writes: cuFile's (where it is used), its copy engine's of
/// files of a memory file system (where they are mapped), the files registered, and what
/// the reads did. Dropped after its threads end: deregisters the files and the GPU memory,
/// then closes cuFile's driver, while that memory lives.
struct Io {
    cufile: Option<crate::cufile::Cufile>,
    storage: peerpath_device::StorageIo,
    /// Each file shared with the I/O thread using it, which holds no lock while it copies (a
    /// hung copy would hold off `unregister_file`, and so the host).
    files: std::sync::RwLock<Vec<Option<Arc<IoFile>>>>,
    /// Pinning memory files' granules, over the job, and their size.
    pins: Arc<crate::memfile::PinStats>,
    map_granule: u64,
    /// The GPU memory the reads land in, registered with cuFile where it took it.
    shared: Arc<Shared>,
    own_base: u64,
    own_len: u64,
    buffer_registered: bool,
    reads_done: AtomicU64,
    bytes: AtomicU64,
    busy_ns: AtomicU64,
    errors: AtomicU64,
    last_error: std::sync::Mutex<Option<String>>,
}

/// A file registered for the GPU's own reads or writes.
enum IoFile {
    /// Through cuFile: its handle, and the descriptor it was registered with (held open while it is).
    Cufile { handle: crate::cufile::FileHandle, _file: std::fs::File },
    /// A file of a memory file system, mapped: the copy engine moves its pages.
    Mapped(crate::memfile::MappedFile),
}

impl Io {
    /// Reads or writes one command's range: its status and bytes. `stream`: the I/O
    /// thread's own CUDA stream, for mapped files' copies.
    fn run(&self, r: &Request, stream: Result<&cudarc::driver::CudaStream, &String>) -> (Status, u64) {
        let (Function::StorageRead { file, .. } | Function::StorageWrite { file, .. }) = r.function else { return (Status::InvalidField, 0) };
        let f = self.files.read().unwrap_or_else(|e| e.into_inner()).get(file as usize).and_then(Option::clone);
        let Some(f) = f else {
            return self.failed(format!("no file registered as {file}"));
        };
        // Both arms: the device checked the range lies in its own GPU memory (`own_base`,
        // `own_len` long), and the executor gives it to this command alone until it completes.
        let done = match &*f {
            IoFile::Cufile { handle, .. } => {
                let cufile = self.cufile.as_ref().expect("cuFile handles come from cuFile");
                // SAFETY: as said above.
                unsafe {
                    match r.function {
                        Function::StorageRead { offset, .. } => cufile.read(*handle, self.own_base, r.output.offset, r.output.len as usize, offset),
                        Function::StorageWrite { offset, .. } => cufile.write(*handle, self.own_base, r.inputs[0].offset, r.inputs[0].len as usize, offset),
                        _ => unreachable!("matched above"),
                    }
                }
            }
            IoFile::Mapped(m) => match stream {
                Err(e) => Err(format!("no CUDA stream on the I/O thread: {e}")),
                Ok(stream) => {
                    let cu = stream.cu_stream();
                    // The driver's own wait (cudarc's may return another thread's error unwaited,
                    // and copies would then land after the CPU took the file over); the thread
                    // made the context current when it began.
                    // SAFETY: the thread's own stream, alive while `stream` is.
                    let wait = || unsafe { sys::cuStreamSynchronize(cu) }.result().map_err(|e| format!("CUDA: waiting for the file's copy: {e}"));
                    let failed = |what: &str, n: usize, e: cudarc::driver::DriverError| format!("CUDA copy of {n} bytes {what}: {e}");
                    match r.function {
                        Function::StorageRead { offset, .. } => {
                            let to = self.own_base + r.output.offset;
                            let copy = |host: *const u8, at: usize, n: usize| {
                                // SAFETY: as said above for the GPU side; `host..host + n` is the
                                // file's pinned pages, mapped while `m` lives (past the wait).
                                unsafe { sys::cuMemcpyHtoDAsync_v2(to + at as u64, host as *const c_void, n, cu) }.result().map_err(|e| failed("into GPU memory", n, e))
                            };
                            m.read(offset, r.output.len as usize, copy, wait)
                        }
                        Function::StorageWrite { offset, .. } => {
                            let from = self.own_base + r.inputs[0].offset;
                            let copy = |host: *mut u8, at: usize, n: usize| {
                                // SAFETY: as for the read, the other way.
                                unsafe { sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, from + at as u64, n, cu) }.result().map_err(|e| failed("out of GPU memory", n, e))
                            };
                            m.write(offset, r.inputs[0].len as usize, copy, wait)
                        }
                        _ => unreachable!("matched above"),
                    }
                }
            },
        };
        match done {
            Ok(n) => (Status::Success, n as u64),
            Err(e) => self.failed(e),
        }
    }

    /// Lets go of a registered file: a cuFile handle is deregistered, a mapped file unregisters
    /// its granules as it drops. One an I/O thread still holds (a hung copy) is left to it.
    fn let_go(&self, f: Arc<IoFile>) {
        if let (Ok(IoFile::Cufile { handle, .. }), Some(cufile)) = (Arc::try_unwrap(f), &self.cufile) {
            cufile.deregister(handle);
        }
    }

    fn failed(&self, why: String) -> (Status, u64) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        (Status::StorageError, 0)
    }

    fn render(&self) -> String {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut s = format!("; its own storage reads and writes: {} ({} MiB, {:.3} s of I/O time over its {IO_THREADS} I/O threads)", g(&self.reads_done), g(&self.bytes) >> 20, g(&self.busy_ns) as f64 / 1e9);
        if g(&self.pins.granules) > 0 {
            s += &format!(", {} MiB of memory files pinned for the copy engine in {}, {:.3} s of it pinning", g(&self.pins.bytes) >> 20, peerpath_metrics::count(g(&self.pins.granules), "granule"), g(&self.pins.ns) as f64 / 1e9);
        }
        if g(&self.errors) > 0 {
            s += &format!(", {} failed (the last: {})", g(&self.errors), self.last_error.lock().unwrap_or_else(|e| e.into_inner()).as_deref().unwrap_or("?"));
        }
        s
    }

    fn reset(&self) {
        for a in [&self.reads_done, &self.bytes, &self.busy_ns, &self.errors, &self.pins.granules, &self.pins.bytes, &self.pins.ns] {
            a.store(0, Ordering::Relaxed);
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        let files = std::mem::take(self.files.get_mut().unwrap_or_else(|e| e.into_inner()));
        for f in files.into_iter().flatten() {
            self.let_go(f);
        }
        if let (true, Some(cufile)) = (self.buffer_registered, &self.cufile) {
            cufile.deregister_buffer(self.own_base);
        }
    }
}

/// An I/O thread: cuFile reads and writes of the commands it takes, completed like the workers' batches.
fn io_run(io: &Io, jobs: &crossbeam_channel::Receiver<Job>, done: &crossbeam_channel::Sender<Result<Done, String>>, wake: &EventFd, sleeping: &AtomicBool) {
    let bound = crate::make_current(&io.shared.ctx);
    // Mapped files' copies go on a stream of the thread's own (the default stream would wait for the workers').
    let stream = match &bound {
        Ok(()) if io.storage.memory_files.is_some() => io.shared.ctx.new_stream().map_err(|e| e.to_string()),
        _ => Err("not needed".to_string()),
    };
    for job in jobs {
        let t = Instant::now();
        let (status, n) = match &bound {
            Ok(()) => io.run(&job.request, stream.as_deref()),
            Err(e) => io.failed(format!("CUDA context on an I/O thread: {e}")),
        };
        let ns = t.elapsed().as_nanos() as u64;
        io.reads_done.fetch_add(1, Ordering::Relaxed);
        io.bytes.fetch_add(n, Ordering::Relaxed);
        io.busy_ns.fetch_add(ns, Ordering::Relaxed);
        io.shared.stats.add(job.request.function.kind(), job.request.input_bytes(), status, n, ns);
        let us = (ns / 1000).min(u32::MAX as u64) as u32;
        if done.send(Ok(Done { id: job.id, status, output_bytes: n, crc32: 0, device_time_us: us })).is_err() {
            return;
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        if sleeping.swap(false, Ordering::SeqCst) {
            wake.signal();
        }
    }
}

impl GpuDevice {
    /// Opens the GPU and nvCOMP, allocates its memory and pins its window,
    /// or says why it cannot.
    pub fn open(config: &GpuDeviceConfig) -> Result<GpuDevice, String> {
        if !config.compress && !config.coding && !config.crypt && !config.dedup && !config.scan && !config.inflate {
            return Err("a GPU device with no function asked of it (neither compression, decompression, coding, encryption, deduplication nor scanning)".into());
        }
        if (config.coding || config.crypt || config.dedup || config.scan || config.inflate) && config.staging == Staging::Device {
            return Err("peerpath's kernels run with copy-command staging (Staging::Commands), not with the device's own".into());
        }
        let started = Instant::now();
        let cufile = match &config.io {
            GpuIo::Staged => None,
            GpuIo::Auto(library) | GpuIo::Cufile(library) => Some(library.as_deref()),
        };
        let gpu = crate::Gpu::open(config.ordinal);
        let context_s = started.elapsed().as_secs_f64();
        let nv = (config.compress || config.inflate).then(|| Nvcomp::load(config.nvcomp.as_deref())).transpose();
        let (gpu, nv) = crate::gpu_and_nvcomp(gpu, nv, cufile)?;
        let nv = nv.map(Arc::new);
        if let (Some(nv), true) = (&nv, config.inflate) {
            // Decoding keeps no scratch: nvCOMP's naive gzip decompressor was measured to need none.
            let temp = nv.decompress_temp_bytes(64, 1 << 20, 64 << 20, DecompressOpts::naive())?;
            if temp != 0 {
                return Err(format!("nvCOMP's naive gzip decompressor asks for {temp} bytes of scratch (this nvCOMP is newer than the one peerpath was measured with)"));
            }
        }
        let nvcomp_s = started.elapsed().as_secs_f64() - context_s;
        // Decoding checks each member's CRC-32 with the coding kernels' CRC-32.
        let coding = if config.coding || config.inflate {
            gpu.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
            Some(Arc::new(Coding::open(&gpu.stream)?))
        } else {
            None
        };
        let crypt = if config.crypt {
            gpu.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
            Some(Arc::new(Crypt::open(&gpu.stream)?))
        } else {
            None
        };
        let cdc = if config.dedup {
            gpu.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
            Some(Arc::new(Cdc::open(&gpu.stream)?))
        } else {
            None
        };
        let scan = if config.scan {
            gpu.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
            Some(Arc::new(Scan::open(&gpu.stream)?))
        } else {
            None
        };
        let kernels_s = started.elapsed().as_secs_f64() - context_s - nvcomp_s;
        // Device staging computes in scratch it grows per batch: the executor addresses the window only.
        let own_bytes = match config.staging {
            Staging::Commands => config.own_bytes.next_multiple_of(peerpath_mem::REGION_PAGE_BYTES),
            Staging::Device => peerpath_mem::REGION_PAGE_BYTES,
        };
        let pinning = Instant::now();
        let window = Arc::new(MappedRegion::host(config.window_bytes).map_err(|e| e.to_string())?);
        gpu.ctx.bind_to_thread().map_err(|e| format!("CUDA: {e}"))?;
        // SAFETY: pins the window's pages (a mapping that lives as long as
        // `window`, which the device keeps) for the copy engines; unpinned
        // when `Shared` drops (the last worker ends).
        unsafe { sys::cuMemHostRegister_v2(window.as_ptr() as *mut c_void, window.len(), sys::CU_MEMHOSTREGISTER_PORTABLE) }
            .result()
            .map_err(|e| format!("CUDA cannot pin {} MiB of host memory: {e}", window.len() >> 20))?;
        let pinning_s = pinning.elapsed().as_secs_f64();
        // SAFETY: device memory the executor's commands write before anything reads it.
        let own = match unsafe { gpu.stream.alloc::<u8>(own_bytes) } {
            Ok(own) => own,
            Err(e) => {
                // SAFETY: pinned just above; nothing uses it yet.
                unsafe { sys::cuMemHostUnregister(window.as_ptr() as *mut c_void) };
                return Err(format!("CUDA cannot allocate {} MiB of GPU memory: {e}", own_bytes >> 20));
            }
        };
        // From here on, dropping `shared` (any error below) unpins the window.
        let shared = Arc::new(Shared { own, window: window.clone(), ctx: gpu.ctx.clone(), stats: Arc::default(), profile: Arc::new(Profile { staged_by_device: config.staging == Staging::Device, ..Default::default() }) });
        let own_base = {
            let (p, _g) = shared.own.device_ptr(&gpu.stream);
            p
        };
        // The allocation is ordered on this stream; every worker's stream uses it.
        gpu.stream.synchronize().map_err(|e| format!("CUDA: {e}"))?;
        // Offsets: [0, own) GPU memory, then the window; with device staging the window alone.
        let own_len = if config.staging == Staging::Device { 0 } else { own_bytes as u64 };
        let layout = Layout { own_base, own_len, window_host: window.as_ptr() as usize, window_len: window.len() as u64 };
        let forced = matches!(config.io, GpuIo::Cufile(_));
        if config.staging == Staging::Device && (config.io != GpuIo::Staged || config.map_memory_files.is_some()) {
            return Err("its own storage reads (--gpu-io, --gpu-memory-files mapped) need copy-command staging: GPU memory of its own beside the window".into());
        }
        let cufile_started = Instant::now();
        let (cufile, mut reads_words) = match &config.io {
            GpuIo::Staged => (None, String::new()),
            GpuIo::Auto(library) | GpuIo::Cufile(library) => match crate::cufile::Cufile::open(library.as_deref()) {
                Err(report) if forced => return Err(format!("--gpu-io cufile: {}", report.detail)),
                Err(report) => (None, format!("; storage reads staged through the window: {}", report.detail)),
                Ok(cf) if !cf.direct() && !forced => (
                    None,
                    format!("; storage reads staged through the window: {} (asked in {:.3} s; --gpu-io cufile reads through cuFile anyway)", cf.report.detail, cufile_started.elapsed().as_secs_f64()),
                ),
                Ok(cf) => (Some(cf), String::new()),
            },
        };
        let io = if cufile.is_some() || config.map_memory_files.is_some() {
            let (buffer_registered, what) = match &cufile {
                Some(cf) => {
                    let registered = cf.register_buffer(own_base, own_bytes);
                    let what = format!(
                        "cuFile{} ({}; opened in {:.3} s){}",
                        cf.report.version.map_or(String::new(), |v| format!(" {}.{}", v / 1000, v % 1000 / 10)),
                        cf.report.detail,
                        cufile_started.elapsed().as_secs_f64(),
                        match &registered {
                            Ok(()) => ", its GPU memory registered with cuFile".to_string(),
                            Err(e) => format!(", its GPU memory not registered ({e}): cuFile's own buffers"),
                        }
                    );
                    (registered.is_ok(), what)
                }
                None => (false, "no cuFile (O_DIRECT files are staged through the window)".to_string()),
            };
            let map_granule = config.map_memory_files.map(|g| g.max(4096).next_multiple_of(4096));
            let memory_files = map_granule.map(|g| {
                format!("mapped and registered with CUDA {} KiB at a time as first used (read-only for a source): the GPU's copy engine reads and writes the file's pages, no CPU copy", g >> 10)
            });
            reads_words = format!("{reads_words}; storage reads by the GPU itself: {what}");
            if let Some(m) = &memory_files {
                reads_words += &format!("; files of a memory file system {m}");
            }
            Some(Arc::new(Io {
                storage: peerpath_device::StorageIo { direct: cufile.as_ref().is_some_and(|c| c.direct()), writes: true, what, memory_files },
                cufile,
                files: Default::default(),
                pins: Arc::default(),
                map_granule: map_granule.unwrap_or(crate::memfile::GRANULE_BYTES),
                shared: shared.clone(),
                own_base,
                own_len: own_bytes as u64,
                buffer_registered,
                reads_done: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                busy_ns: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                last_error: Default::default(),
            }))
        } else {
            None
        };
        let mut parts = Vec::new();
        if let (Some(nv), true) = (&nv, config.compress) {
            parts.push(format!("nvCOMP {} gzip algorithm {}", nv.version, config.algorithm));
        }
        if let (Some(nv), true) = (&nv, config.inflate) {
            parts.push(format!("nvCOMP {} gzip decompression (naive) with peerpath's CRC-32 check", nv.version));
        }
        if config.coding {
            parts.push("peerpath's Reed-Solomon and CRC-32 kernels".to_string());
        }
        if crypt.is_some() {
            parts.push("peerpath's AES-256-GCM kernels".to_string());
        }
        if cdc.is_some() {
            parts.push("peerpath's FastCDC and BLAKE3 kernels".to_string());
        }
        if scan.is_some() {
            parts.push("peerpath's record-scanning kernels (motifs as DFAs)".to_string());
        }
        let functions = parts.join(" and ");
        let description = format!(
            "{} (GPU {}, CUDA driver {}), {functions}, {} MiB of GPU memory and a {} MiB pinned host window; opened in {:.3} s (CUDA context {:.3}, loading nvCOMP {:.3}, loading peerpath's kernels {:.3}, mapping and pinning the window {:.3}, the rest {:.3})",
            gpu.info.name,
            config.ordinal,
            gpu.info.driver_version,
            own_bytes >> 20,
            window.len() >> 20,
            started.elapsed().as_secs_f64(),
            context_s,
            nvcomp_s,
            kernels_s,
            pinning_s,
            started.elapsed().as_secs_f64() - context_s - nvcomp_s - kernels_s - pinning_s,
        );
        let pci_address = gpu.info.pci_address.clone();
        let memory = match config.staging {
            Staging::Commands => DeviceMemory::foreign(own_bytes, MemoryDomain::Gpu { device: config.name.clone() }, window.clone()),
            // Host memory as the executor and the ledger see it (pinned); the
            // device's own copies to and from GPU memory are in its profile.
            Staging::Device => DeviceMemory::region(window.clone()),
        };
        let wake = Arc::new(EventFd::new().map_err(|e| e.to_string())?);
        let sleeping = Arc::new(AtomicBool::new(false));
        let description = format!(
            "{description}, {}, {}, {}, waiting threads {}",
            peerpath_metrics::count(config.streams.max(1), "CUDA stream"),
            match config.gather.bytes {
                0 => "a batch is what is queued".to_string(),
                b => format!("batches gathered up to {} MiB of input or {:.1} ms", b >> 20, config.gather.wait.as_secs_f64() * 1e3),
            },
            match config.staging {
                Staging::Commands => "staged by copy commands",
                Staging::Device => "each chunk staged by the device itself (its memory as the host sees it is the window)",
            },
            if gpu.info.blocking_sync { "sleep (blocking sync)" } else { "spin (the driver's default: blocking sync could not be set)" }
        ) + &reads_words;
        let (job_tx, job_rx) = crossbeam_channel::unbounded::<Job>();
        let (done_tx, done_rx) = crossbeam_channel::unbounded();
        let streams = config.streams.max(1);
        if streams > 1 {
            // cudarc records and waits on events for each buffer used on
            // several streams; the executor orders dependent commands by
            // their completions, and each batch synchronises its stream.
            // SAFETY: no buffer is shared between the workers' streams but
            // `own`, whose ranges the executor gives one command at a time.
            unsafe { gpu.ctx.disable_event_tracking() };
        }
        let in_device = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::with_capacity(streams);
        for k in 0..streams {
            let stream = if k == 0 { gpu.stream.clone() } else { gpu.ctx.new_stream().map_err(|e| format!("CUDA stream: {e}"))? };
            let mut worker = Worker {
                stream,
                nv: nv.clone(),
                coding: coding.clone(),
                crypt: crypt.clone(),
                cdc: cdc.clone(),
                scan: scan.clone(),
                motifs: Vec::new(),
                compress: config.compress,
                inflate: config.inflate,
                ec: config.coding,
                codes: HashMap::new(),
                shared: shared.clone(),
                layout,
                opts: CompressOpts::new(config.algorithm),
                scratch: Scratch::default(),
                streams,
                staging: config.staging,
                gather: config.gather,
                in_device: in_device.clone(),
                depth: config.queue_depth.max(1),
            };
            let (jobs, done, w, s) = (job_rx.clone(), done_tx.clone(), wake.clone(), sleeping.clone());
            let handle = std::thread::Builder::new()
                .name(format!("{}-stream{k}", config.name))
                .spawn(move || worker.run(&jobs, &done, &w, &s))
                .map_err(|e| e.to_string())?;
            workers.push(handle);
        }
        let mut functions = FunctionSet::EMPTY.with(FunctionKind::Copy);
        if config.staging == Staging::Commands {
            functions = functions.with(FunctionKind::Fill);
        }
        if config.compress {
            functions = functions.with(FunctionKind::GzipCompressMember).with(FunctionKind::GzipCompressChunk);
        }
        if config.inflate {
            functions = functions.with(FunctionKind::GzipDecompressMember);
        }
        if config.coding {
            functions = functions.with(FunctionKind::EcEncode).with(FunctionKind::EcReconstruct).with(FunctionKind::Crc32);
        }
        if crypt.is_some() {
            functions = functions.with(FunctionKind::AeadSealBlock).with(FunctionKind::AeadOpenBlock);
        }
        if cdc.is_some() {
            functions = functions.with(FunctionKind::ChunkFingerprint);
        }
        if scan.is_some() {
            functions = functions.with(FunctionKind::ScanCount);
        }
        let (io_jobs, mut io_threads) = (io.as_ref().map(|_| crossbeam_channel::unbounded::<Job>()), Vec::new());
        if let (Some(io), Some((_, rx))) = (&io, &io_jobs) {
            functions = functions.with(FunctionKind::StorageRead).with(FunctionKind::StorageWrite);
            for k in 0..IO_THREADS {
                let (io, rx, done, w, s) = (io.clone(), rx.clone(), done_tx.clone(), wake.clone(), sleeping.clone());
                let handle = std::thread::Builder::new().name(format!("{}-io{k}", config.name)).spawn(move || io_run(&io, &rx, &done, &w, &s)).map_err(|e| e.to_string())?;
                io_threads.push(handle);
            }
        }
        Ok(GpuDevice {
            name: config.name.clone(),
            functions,
            memory,
            depth: config.queue_depth.max(1),
            in_flight: HashMap::new(),
            hung: false,
            command_timeout: config.command_timeout.max(Duration::from_millis(1)),
            progress: Instant::now(),
            next_id: 0,
            jobs: Some(job_tx),
            done: done_rx,
            ready: VecDeque::new(),
            wake,
            sleeping,
            workers,
            failed: None,
            stats: shared.stats.clone(),
            profile: shared.profile.clone(),
            in_device,
            description,
            pci_address,
            io,
            io_jobs: io_jobs.map(|(tx, _)| tx),
            io_threads,
        })
    }

    /// Counts a command as in flight (an idle device's clock starts now).
    fn count_in_flight(&mut self, id: u64, request: Request) {
        if self.in_flight.is_empty() {
            self.progress = Instant::now();
        }
        self.in_flight.insert(id, (request, Instant::now()));
    }

    fn fail(&mut self, detail: String) -> DeviceError {
        self.jobs = None;
        self.io_jobs = None;
        let mut in_flight: Vec<(u64, (Request, Instant))> = self.in_flight.drain().collect();
        in_flight.sort_by_key(|(id, _)| *id);
        let kind = if self.hung { FailureKind::Timeout } else { FailureKind::Lost };
        let e = DeviceError { device: self.name.clone(), kind, detail, in_flight: in_flight.into_iter().map(|(_, (r, _))| r).collect() };
        self.failed = Some(e.without_requests());
        e
    }
}

impl Drop for GpuDevice {
    fn drop(&mut self) {
        self.jobs = None; // the workers end when the queue is closed and empty
        self.io_jobs = None;
        if self.hung {
            // A thread stuck in CUDA or cuFile may never return: left to the process's end (it
            // holds what it uses), so that the host's fallback is not stuck behind it. So are
            // the files and memory registered for its I/O (a copy may still be under way).
            self.workers.clear();
            self.io_threads.clear();
            std::mem::forget(self.io.take());
        }
        for w in self.workers.drain(..).chain(self.io_threads.drain(..)) {
            let _ = w.join();
        }
        // Its files and memory deregistered, cuFile closed, before the GPU memory goes.
        self.io = None;
    }
}

impl Device for GpuDevice {
    fn failure(&self) -> Option<&DeviceError> {
        self.failed.as_ref()
    }

    fn name(&self) -> &str {
        &self.name
    }
    fn functions(&self) -> FunctionSet {
        self.functions
    }
    fn memory(&self) -> &DeviceMemory {
        &self.memory
    }
    fn queue_depth(&self) -> usize {
        self.depth
    }
    /// Batches fill the GPU: let the host keep many chunks in flight.
    fn parallelism(&self) -> Option<usize> {
        Some(self.depth / 2)
    }
    fn max_input_ranges(&self) -> usize {
        peerpath_device::MAX_INPUT_RANGES
    }
    /// A chunk per command: its members go into the same nvCOMP launch.
    fn whole_chunk_commands(&self) -> bool {
        true
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
        if let Function::StorageRead { .. } | Function::StorageWrite { .. } = request.function {
            // Its own I/O threads read and write: its own GPU memory only.
            let own_len = self.io.as_ref().map_or(0, |io| io.own_len);
            let checked = peerpath_device::check_request(&request, own_len, self.functions);
            let (Ok(()), Some(jobs)) = (checked, &self.io_jobs) else {
                let status = checked.err().unwrap_or(Status::Unsupported);
                self.ready.push_back(Completion { request, status, output_bytes: 0, input_crc32: 0, device_time_us: 0 });
                return Submit::Queued;
            };
            if jobs.send(Job { id, request: request.clone() }).is_err() {
                let e = self.fail("its I/O threads are gone".into());
                return Submit::Refused(request, e);
            }
            self.count_in_flight(id, request);
            return Submit::Queued;
        }
        let Some(jobs) = &self.jobs else { return Submit::Busy(request) };
        self.in_device.fetch_add(1, Ordering::AcqRel);
        if jobs.send(Job { id, request: request.clone() }).is_err() {
            let e = self.fail("its worker thread is gone".into());
            return Submit::Refused(request, e);
        }
        self.count_in_flight(id, request);
        Submit::Queued
    }
    fn poll(&mut self, completions: &mut Vec<Completion>) -> Result<usize, DeviceError> {
        let mut n = 0;
        while let Some(c) = self.ready.pop_front() {
            completions.push(c);
            n += 1;
        }
        if let Some(f) = &self.failed {
            return if n > 0 { Ok(n) } else { Err(f.clone()) };
        }
        while let Ok(done) = self.done.try_recv() {
            match done {
                Ok(d) => {
                    let (request, _) = self.in_flight.remove(&d.id).expect("a completion for a request in flight");
                    self.progress = Instant::now();
                    let output_bytes = if d.status == Status::Success { d.output_bytes } else { 0 };
                    completions.push(Completion { request, status: d.status, output_bytes, input_crc32: d.crc32, device_time_us: d.device_time_us });
                    n += 1;
                }
                Err(why) => return Err(self.fail(why)),
            }
        }
        // Only when nothing came in: a device that answers is not hung (and a poll that
        // finds completions, the busy case, scans nothing).
        if n == 0 && !self.in_flight.is_empty() && self.progress.elapsed() >= self.command_timeout {
            let (request, since) = self.in_flight.values().min_by_key(|(_, t)| *t).expect("commands in flight");
            let what = format!("{}, {:.1} s in flight, the oldest of {}", request.function, since.elapsed().as_secs_f64(), self.in_flight.len());
            self.hung = true;
            return Err(self.fail(format!("no completion in {:.1} s ({what}): the GPU hangs (a kernel, copy or read that does not end)", self.command_timeout.as_secs_f64())));
        }
        Ok(n)
    }
    fn wait(&mut self, timeout: Duration) -> Result<(), DeviceError> {
        if let Some(f) = &self.failed {
            return Err(f.clone());
        }
        if self.in_flight.is_empty() || !self.arm_wake() {
            return Ok(());
        }
        // Back in time for poll to find the device past its timeout.
        let timeout = timeout.min(self.command_timeout.saturating_sub(self.progress.elapsed()) + Duration::from_millis(1));
        let _ = peerpath_device::poll_fds(&[(self.wake.raw(), libc::POLLIN)], Some(timeout));
        self.sleeping.store(false, Ordering::SeqCst);
        self.wake.drain();
        Ok(())
    }
    fn wake_fd(&self) -> Option<RawFd> {
        Some(self.wake.raw())
    }
    fn stats(&mut self) -> Option<DeviceStats> {
        Some(self.stats.snapshot())
    }
    fn profile(&mut self) -> Option<String> {
        Some(self.profile.render() + &self.io.as_ref().map_or(String::new(), |io| io.render()))
    }
    fn set_command_timeout(&mut self, timeout: Duration) {
        self.command_timeout = timeout.max(Duration::from_millis(1));
    }
    fn reset_profile(&mut self) {
        self.profile.reset();
        if let Some(io) = &self.io {
            io.reset();
        }
    }
    fn storage_io(&self) -> Option<&peerpath_device::StorageIo> {
        self.io.as_ref().map(|io| &io.storage)
    }
    fn register_file(&mut self, file: &std::fs::File) -> Result<u8, String> {
        let Some(io) = &self.io else { return Err(format!("device {} does not reach storage itself (--gpu-io)", self.name)) };
        let fd = std::os::fd::AsRawFd::as_raw_fd(file);
        if io.storage.memory_files.is_some() && peerpath_mem::on_memory_file_system(fd) {
            let pinner = Arc::new(crate::memfile::CudaPinner(io.shared.ctx.clone()));
            let mapped = crate::memfile::MappedFile::open(file, io.map_granule, pinner, io.pins.clone())?;
            mapped.check()?;
            return peerpath_device::register_in(&mut io.files.write().unwrap_or_else(|e| e.into_inner()), Arc::new(IoFile::Mapped(mapped)));
        }
        let Some(cufile) = &io.cufile else { return Err("no cuFile (--gpu-io): the GPU reads only files of a memory file system itself".into()) };
        let file = file.try_clone().map_err(|e| format!("cannot hold the file: {e}"))?;
        let handle = cufile.register(fd)?;
        peerpath_device::register_in(&mut io.files.write().unwrap_or_else(|e| e.into_inner()), Arc::new(IoFile::Cufile { handle, _file: file })).inspect_err(|_| cufile.deregister(handle))
    }
    /// Its I/O threads end once the queue closed at its failure is empty: settled then (a
    /// thread stuck in cuFile never is). A GPU its host retired (a command's failed
    /// completion) fails here, so its queues close too.
    fn settle(&mut self, timeout: Duration) -> bool {
        if self.failed.is_none() {
            self.fail(peerpath_device::RETIRED.into());
        }
        self.io_jobs.is_none() && peerpath_device::threads_ended(&self.io_threads, timeout)
    }
    fn unregister_file(&mut self, file: u8) {
        if let Some(io) = &self.io {
            let taken = io.files.write().unwrap_or_else(|e| e.into_inner()).get_mut(file as usize).and_then(Option::take);
            if let Some(f) = taken {
                io.let_go(f);
            }
        }
    }
    fn description(&self) -> Option<&str> {
        Some(&self.description)
    }
    fn arm_wake(&mut self) -> bool {
        self.sleeping.store(true, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        if !self.ready.is_empty() || !self.done.is_empty() || self.failed.is_some() {
            self.sleeping.store(false, Ordering::SeqCst);
            return false;
        }
        true
    }
}

/// Device scratch that grows with the batches.
#[derive(Default)]
struct Scratch {
    temp: Option<CudaSlice<u8>>,
    slots: Option<CudaSlice<u8>>,
    headers: Option<CudaSlice<u8>>,
    /// Device staging: the batch's inputs, and its packed outputs.
    inputs: Option<CudaSlice<u8>>,
    outputs: Option<CudaSlice<u8>>,
}

/// What the workers share; the last one to end unpins the window (no copy
/// is in flight then: each synchronised its stream after its last batch).
struct Shared {
    /// The GPU memory the executor's offsets address (`layout.own_base`).
    own: CudaSlice<u8>,
    window: Arc<MappedRegion>,
    ctx: Arc<cudarc::driver::CudaContext>,
    stats: Arc<StatsCounters>,
    profile: Arc<Profile>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if crate::make_current(&self.ctx).is_ok() {
            // SAFETY: the window was pinned by `open`; every worker has
            // synchronised its stream and ended, so no copy uses it.
            unsafe { sys::cuMemHostUnregister(self.window.as_ptr() as *mut c_void) };
        }
    }
}

struct Worker {
    stream: Arc<CudaStream>,
    nv: Option<Arc<Nvcomp>>,
    /// The coding kernels, where asked for.
    coding: Option<Arc<Coding>>,
    /// The AES-GCM kernels, where asked for.
    crypt: Option<Arc<Crypt>>,
    /// The FastCDC and BLAKE3 kernels, where asked for.
    cdc: Option<Arc<Cdc>>,
    /// The scan kernels, where asked for.
    scan: Option<Arc<Scan>>,
    /// Motifs seen lately (text, case folding) and their tables in GPU
    /// memory, or the status a command with them gets.
    #[allow(clippy::type_complexity)]
    motifs: Vec<(Vec<u8>, bool, Result<(CudaSlice<u8>, DfaAt), Status>)>,
    /// Whether it compresses members (nvCOMP), and decodes them.
    compress: bool,
    inflate: bool,
    /// Whether it erasure-codes and checksums (the coding kernels are loaded for decoding too).
    ec: bool,
    /// Codes used so far, and their parity rows' powers in GPU memory.
    codes: HashMap<(u8, u8), (peerpath_func::ec::RsCode, CudaSlice<u32>)>,
    shared: Arc<Shared>,
    layout: Layout,
    opts: CompressOpts,
    scratch: Scratch,
    /// How many workers share the queue (a batch takes its share of it).
    streams: usize,
    staging: Staging,
    gather: Gather,
    /// Commands submitted and not yet completed, and the most there can be.
    in_device: Arc<AtomicUsize>,
    depth: usize,
}

impl Worker {
    fn run(&mut self, jobs: &crossbeam_channel::Receiver<Job>, done: &crossbeam_channel::Sender<Result<Done, String>>, wake: &EventFd, sleeping: &AtomicBool) {
        if let Err(e) = self.shared.ctx.bind_to_thread() {
            let _ = done.send(Err(format!("CUDA: {e}")));
            return;
        }
        let events = match self.new_events() {
            Ok(e) => e,
            Err(e) => {
                let _ = done.send(Err(e));
                return;
            }
        };
        let profile = self.shared.profile.clone();
        let mut cpu_before = thread_cpu_ns();
        loop {
            let waited = Instant::now();
            let Ok(first) = jobs.recv() else { break };
            profile.idle_ns.fetch_add(waited.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let batch = self.gather(first, jobs);
            let t = Instant::now();
            let results = self.batch(&batch, &events);
            let elapsed = t.elapsed();
            let us = elapsed.as_micros().min(u32::MAX as u128) as u32;
            profile.batches.fetch_add(1, Ordering::Relaxed);
            profile.commands.fetch_add(batch.len() as u64, Ordering::Relaxed);
            profile.largest_batch.fetch_max(batch.len() as u64, Ordering::Relaxed);
            profile.batch_ns.fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
            match results {
                Ok(outs) => {
                    // Each command's share of the batch's time is its busy time.
                    let share = elapsed.as_nanos() as u64 / batch.len() as u64;
                    for (job, (status, output_bytes, crc32)) in batch.iter().zip(outs) {
                        let input: u64 = job.request.inputs.iter().map(|r| r.len).sum();
                        self.shared.stats.add(job.request.function.kind(), input, status, output_bytes, share);
                        self.in_device.fetch_sub(1, Ordering::AcqRel);
                        let _ = done.send(Ok(Done { id: job.id, status, output_bytes, crc32, device_time_us: us }));
                    }
                }
                Err(why) => {
                    // Whatever the batch queued before it failed finishes before the
                    // worker lets go of the memory and kernels it uses (best effort).
                    let _ = self.stream.synchronize();
                    let _ = done.send(Err(why));
                    break;
                }
            }
            let cpu_now = thread_cpu_ns();
            profile.host_cpu_ns.fetch_add(cpu_now.saturating_sub(cpu_before), Ordering::Relaxed);
            cpu_before = cpu_now;
            std::sync::atomic::fence(Ordering::SeqCst);
            if sleeping.swap(false, Ordering::SeqCst) {
                wake.signal();
            }
        }
    }

    /// The batch that starts with `first`: its share of what is queued (so
    /// that the other streams get work too), then what arrives until it
    /// holds `gather.bytes` of input, the whole queue depth is in the device,
    /// or `gather.wait` has passed.
    fn gather(&self, first: Job, jobs: &crossbeam_channel::Receiver<Job>) -> Vec<Job> {
        let input = |j: &Job| j.request.inputs.iter().map(|r| r.len).sum::<u64>();
        let share = (jobs.len() + 1).div_ceil(self.streams);
        let mut bytes = input(&first);
        let mut batch = vec![first];
        for j in jobs.try_iter().take(share - 1) {
            bytes += input(&j);
            batch.push(j);
        }
        let deadline = Instant::now() + self.gather.wait;
        while bytes < self.gather.bytes && self.in_device.load(Ordering::Acquire) < self.depth {
            match jobs.recv_deadline(deadline) {
                Ok(j) => {
                    bytes += input(&j);
                    batch.push(j);
                }
                Err(_) => break,
            }
        }
        batch
    }

    /// Four timing events, recorded on this worker's stream around each
    /// batch's copies, kernel and packing.
    fn new_events(&self) -> Result<[cudarc::driver::CudaEvent; 4], String> {
        let ev = || self.shared.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(|e| format!("CUDA event: {e}"));
        Ok([ev()?, ev()?, ev()?, ev()?])
    }

    /// Runs one batch; per request its status, output bytes and CRC-32 (a
    /// `Crc32` command's). An error is the device's failure (CUDA or nvCOMP
    /// refused the whole batch).
    fn batch(&mut self, batch: &[Job], events: &[cudarc::driver::CudaEvent; 4]) -> Result<Vec<(Status, u64, u32)>, String> {
        if self.staging == Staging::Device {
            return Ok(self.batch_in_window(batch, events)?.into_iter().map(|(s, n)| (s, n, 0)).collect());
        }
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        events[0].record(&self.stream).map_err(cuda)?;
        let mut out = vec![(Status::Success, 0u64, 0u32); batch.len()];
        let mut pieces = Vec::new();
        let mut outputs = Vec::new();
        // The batch's CRC-32 commands, checksummed in one launch; device
        // memory its coding launches read, kept until the synchronisation.
        let mut crcs = CrcPlan::default();
        let mut crc_jobs = Vec::new();
        let mut keep = Vec::new();
        // Its seal and open commands, in three launches for all.
        let mut gcm = GcmPlan::default();
        let mut gcm_jobs = Vec::new();
        // Its fingerprint commands, in three launches for all.
        let mut cdc = CdcPlan::default();
        let mut cdc_jobs = Vec::new();
        // Its scan commands, in four launches for all; tables of motifs of earlier batches
        // are let go here, never while this batch's kernels may read them.
        let mut scans = ScanPlan::default();
        let mut scan_jobs = Vec::new();
        // Its members to decode, in one nvCOMP launch; their outputs' CRC-32 with the CRC-32 commands'.
        let mut inflates: Vec<(usize, Inflate)> = Vec::new();
        if self.motifs.len() > MOTIFS_KEPT {
            self.motifs.drain(..self.motifs.len() - MOTIFS_KEPT);
        }
        for (k, job) in batch.iter().enumerate() {
            let r = &job.request;
            if matches!(r.function, Function::Copy) {
                (out[k].0, out[k].1) = self.copy(r)?;
                continue;
            }
            if matches!(r.function, Function::ChunkFingerprint { .. }) {
                match self.fingerprint(r, &mut cdc) {
                    Ok(at) => cdc_jobs.push((k, at)),
                    Err(status) => out[k].0 = status,
                }
                continue;
            }
            if let Function::Fill { byte } = r.function {
                (out[k].0, out[k].1) = self.fill(r, byte)?;
                continue;
            }
            if matches!(r.function, Function::ScanCount { .. }) {
                match self.scan_command(r, &mut scans)? {
                    // The records' CRC-32, for the completion (as the CPU device gives it).
                    Ok(records) => scan_jobs.push((k, crcs.add(std::iter::once((records, r.inputs[0].len))))),
                    Err(status) => out[k].0 = status,
                }
                continue;
            }
            if matches!(r.function, Function::AeadSealBlock { .. } | Function::AeadOpenBlock { .. }) {
                match self.aead(r, &mut gcm) {
                    Ok(c) => gcm_jobs.push((k, c)),
                    Err(status) => out[k].0 = status,
                }
                continue;
            }
            if matches!(r.function, Function::EcEncode { .. } | Function::EcReconstruct { .. } | Function::Crc32) {
                match self.code(r, &mut crcs, &mut keep)? {
                    Ok(Some(c)) => crc_jobs.push((k, c)),
                    Ok(None) => out[k].1 = coded_bytes(r),
                    Err(status) => out[k].0 = status,
                }
                continue;
            }
            if matches!(r.function, Function::GzipDecompressMember) {
                match self.inflate_command(r)? {
                    Ok(m) => inflates.push((k, m)),
                    Err(status) => out[k].0 = status,
                }
                continue;
            }
            let (Some(member_bytes), true) = (member_bytes(r), self.nv.is_some() && self.compress) else {
                out[k].0 = Status::Unsupported;
                continue;
            };
            // The CPU device's checks (sizes, bounds, overlap; members of at least a byte).
            let all = FunctionSet::EMPTY.with(FunctionKind::GzipCompressMember).with(FunctionKind::GzipCompressChunk);
            if let Err(status) = peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, all) {
                out[k].0 = status;
                continue;
            }
            let (Some(input), Some(output)) = (self.own_ptr(r.inputs[0]), self.own_ptr(r.output)) else {
                out[k].0 = Status::OutOfRange;
                continue;
            };
            // Its members, compressed in one launch with everyone else's.
            split_members(k, input, r.inputs[0].len, member_bytes, &mut pieces);
            outputs.push((k, output, r.output.len));
        }
        let inflated = self.inflate(&mut inflates, &mut crcs)?;
        let segment_crcs = self.crc32(&crcs)?;
        let sealed = self.gcm(&gcm)?;
        let cut = self.cdc(&cdc)?;
        let counted = self.scan(&scans)?;
        events[1].record(&self.stream).map_err(cuda)?;
        if !pieces.is_empty() {
            for (k, (status, n)) in self.compress(&pieces, &outputs, &events[2])? {
                (out[k].0, out[k].1) = (status, n);
            }
            events[3].record(&self.stream).map_err(cuda)?;
        }
        self.stream.synchronize().map_err(cuda)?;
        drop(keep);
        // Each scan command's last word names its first malformed FASTQ record, if any.
        let scan_faults = match counted {
            Some((_, _, _, sums)) => self.stream.clone_dtoh(&sums).map_err(cuda)?.iter().skip(SCAN_SUMS).step_by(SCAN_STRIDE).map(|&w| crate::scan::fastq_fault(w).is_some()).collect(),
            None => Vec::new(),
        };
        let segment_crcs = match segment_crcs {
            Some((segments, d)) => {
                drop(segments);
                self.stream.clone_dtoh(&d).map_err(cuda)?
            }
            None => Vec::new(),
        };
        for (k, c) in crc_jobs {
            out[k].2 = crcs.join(c, &segment_crcs);
        }
        for ((k, c), malformed) in scan_jobs.into_iter().zip(scan_faults) {
            // Records that are not FASTQ: the data's fault, as on the CPU device.
            (out[k].0, out[k].1, out[k].2) = if malformed { (Status::CorruptInput, 0, 0) } else { (out[k].0, SCAN_RESULT_BYTES as u64, crcs.join(c, &segment_crcs)) };
        }
        let (actual, status) = match inflated {
            Some((keep, actual, status)) => {
                drop(keep);
                (self.stream.clone_dtoh(&actual).map_err(cuda)?, self.stream.clone_dtoh(&status).map_err(cuda)?)
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut decoded = 0;
        for (k, m) in &inflates {
            out[*k].2 = crcs.join(m.input_crc_at, &segment_crcs);
            if m.declared == 0 {
                continue; // checked on the host when queued
            }
            // Checked, not trusted: nvCOMP's status, the length the member declares (and its
            // trailer's), and the CRC-32 of what it wrote against the trailer's.
            let j = decoded;
            decoded += 1;
            let good = status[j] == 0 && actual[j] == m.declared && actual[j] as u32 == m.isize && crcs.join(m.crc_at, &segment_crcs) == m.crc;
            (out[*k].0, out[*k].1) = if good { (Status::Success, m.declared as u64) } else { (Status::CorruptInput, 0) };
        }
        if let Some(keep) = cut {
            drop(keep);
            // Each command's chunk count (8 bytes of metadata), for its output bytes.
            let mut counts = vec![[0u8; 8]; cdc_jobs.len()];
            for ((_, at), count) in cdc_jobs.iter().zip(&mut counts) {
                // SAFETY: the first 8 bytes of the command's output in GPU memory (checked: room
                // for its entries), written by the walk kernel the stream has run, into `counts`,
                // which lives until the synchronisation below.
                unsafe { sys::cuMemcpyDtoHAsync_v2(count.as_mut_ptr() as *mut c_void, *at, 8, self.stream.cu_stream()) }.result().map_err(cuda)?;
            }
            self.stream.synchronize().map_err(cuda)?;
            for ((k, _), count) in cdc_jobs.iter().zip(&counts) {
                out[*k].1 = 16 + u64::from_le_bytes(*count) * peerpath_device::CHUNK_ENTRY_BYTES as u64;
            }
        }
        if let Some((states, starts, ok)) = sealed {
            drop((states, starts));
            let ok = self.stream.clone_dtoh(&ok).map_err(cuda)?;
            let mut refused = false;
            for (k, c) in gcm_jobs {
                let r = &batch[k].request;
                let n = r.inputs[0].len;
                if ok[c] == 1 {
                    out[k].1 = if matches!(r.function, Function::AeadOpenBlock { .. }) { n - TAG_BYTES as u64 } else { n + TAG_BYTES as u64 };
                    continue;
                }
                // Not authentic: nothing of what was decrypted stays in the output (as on the CPU).
                out[k].0 = Status::CorruptInput;
                let at = self.own_ptr(r.output).expect("checked when queued");
                // SAFETY: the command's output range in GPU memory (checked: at least n bytes);
                // the stream has run its kernels.
                unsafe { sys::cuMemsetD8Async(at, 0, n as usize, self.stream.cu_stream()) }.result().map_err(cuda)?;
                refused = true;
            }
            if refused {
                self.stream.synchronize().map_err(cuda)?;
            }
        }
        self.account(events, !pieces.is_empty(), &pieces)?;
        Ok(out)
    }

    /// Queues an erasure-coding or CRC-32 command (its checks are the CPU
    /// device's, and its ranges must lie in GPU memory): a coding command's
    /// kernel on this worker's stream, a CRC-32 command's segments into
    /// `crcs` (returns its number there). `keep` holds device memory the
    /// kernels read until the batch is synchronised. The outer error is the
    /// device's failure; the inner a status for this command alone.
    fn code(&mut self, r: &Request, crcs: &mut CrcPlan, keep: &mut Vec<CudaSlice<u32>>) -> Result<Result<Option<usize>, Status>, String> {
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let (Some(coding), true) = (self.coding.clone(), self.ec) else { return Ok(Err(Status::Unsupported)) };
        let all = FunctionSet::EMPTY.with(FunctionKind::EcEncode).with(FunctionKind::EcReconstruct).with(FunctionKind::Crc32);
        if let Err(status) = peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, all) {
            return Ok(Err(status));
        }
        let output = if r.output.len == 0 { Some(self.layout.own_base) } else { self.own_ptr(r.output) };
        let inputs: Option<Vec<u64>> = r.inputs.iter().map(|&i| self.own_ptr(i)).collect();
        let (Some(output), Some(inputs)) = (output, inputs) else { return Ok(Err(Status::OutOfRange)) };
        let shape_ok = match r.function {
            Function::EcEncode { data, parity } => data > 0 && parity > 0 && usize::from(data) + usize::from(parity) <= peerpath_func::ec::MAX_SHARDS,
            Function::EcReconstruct { data, parity, wanted } => data > 0 && parity > 0 && usize::from(data) + usize::from(parity) <= peerpath_func::ec::MAX_SHARDS && wanted > 0 && wanted <= parity,
            _ => true,
        };
        if !shape_ok {
            return Ok(Err(Status::InvalidField));
        }
        let stream = self.stream.clone();
        match r.function {
            Function::Crc32 => Ok(Ok(Some(crcs.add(inputs.iter().zip(&r.inputs).map(|(&at, i)| (at, i.len)))))),
            Function::EcEncode { data, parity } => {
                let unit = r.inputs[0].len / u64::from(data);
                let (_, pw) = self.code_for(data, parity)?;
                let pw = ptr(pw, &stream);
                // SAFETY: k units at `inputs[0]` and m units at `output`, both in the GPU
                // memory this command was given (checked: in range, not overlapping, the
                // output large enough); the powers are the code's, cached by this worker.
                unsafe { coding.kernels.gf_matmul(&stream, (inputs[0], unit, u32::from(data)), (output, u32::from(parity)), pw) }?;
                Ok(Ok(None))
            }
            Function::EcReconstruct { data, parity, wanted } => {
                let (k, n) = (usize::from(data), usize::from(data) + usize::from(parity));
                // The index bytes (metadata, at most 255 + 255 of them) come to the host,
                // which inverts the survivors' rows, as the CPU device does.
                let mut indices = vec![0u8; r.inputs[1].len as usize];
                // SAFETY: the command's index range in GPU memory (checked) into a host
                // buffer of its length; synchronised before the buffer is read.
                unsafe { sys::cuMemcpyDtoHAsync_v2(indices.as_mut_ptr() as *mut c_void, inputs[1], indices.len(), stream.cu_stream()) }.result().map_err(cuda)?;
                stream.synchronize().map_err(cuda)?;
                let mut seen = [false; 256];
                if indices.iter().any(|&i| usize::from(i) >= n || std::mem::replace(&mut seen[usize::from(i)], true)) {
                    return Ok(Err(Status::InvalidField));
                }
                let survivors: Vec<usize> = indices[..k].iter().map(|&i| usize::from(i)).collect();
                let lost: Vec<usize> = indices[k..].iter().map(|&i| usize::from(i)).collect();
                let (code, _) = self.code_for(data, parity)?;
                let Ok(decoder) = code.decoder(&survivors, &lost) else { return Ok(Err(Status::InvalidField)) };
                let pw = stream.clone_htod(&crate::kernels::powers(decoder.coefficients())).map_err(cuda)?;
                let unit = r.inputs[0].len / u64::from(data);
                // SAFETY: k survivors at `inputs[0]` and `wanted` units at `output`, in the
                // GPU memory this command was given (checked as for encoding); `pw` holds
                // wanted x k x 8 words and is kept until the batch is synchronised.
                unsafe { coding.kernels.gf_matmul(&stream, (inputs[0], unit, u32::from(data)), (output, u32::from(wanted)), ptr(&pw, &stream)) }?;
                keep.push(pw);
                Ok(Ok(None))
            }
            _ => Ok(Err(Status::Unsupported)),
        }
    }

    /// Checks a fingerprint command (the CPU device's checks, its ranges in
    /// GPU memory, sizes FastCDC takes, BLAKE3: SHA-256 is the CPU's) and adds
    /// it to `plan`; returns its output's address, or the status it gets.
    fn fingerprint(&self, r: &Request, plan: &mut CdcPlan) -> Result<u64, Status> {
        let Function::ChunkFingerprint { min_kib, avg_kib, max_kib, sha256, at_end } = r.function else { return Err(Status::Unsupported) };
        if self.cdc.is_none() || sha256 {
            return Err(Status::Unsupported);
        }
        peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, FunctionSet::EMPTY.with(FunctionKind::ChunkFingerprint))?;
        let p = peerpath_func::dedup::ChunkParams::new(min_kib as usize * 1024, avg_kib as usize * 1024, max_kib as usize * 1024).map_err(|_| Status::InvalidField)?;
        let (Some(input), Some(output)) = (self.own_ptr(r.inputs[0]), self.own_ptr(r.output)) else { return Err(Status::OutOfRange) };
        // A batch whose bitmap words or digest threads would pass 32 bits refuses the rest.
        plan.add((input, r.inputs[0].len), p, output, at_end).ok_or(Status::InputTooLarge)?;
        Ok(output)
    }

    /// Queues the batch's fingerprint commands (three launches); returns the
    /// device memory they use, to keep until the stream is synchronised.
    fn cdc(&mut self, plan: &CdcPlan) -> Result<Option<[CudaSlice<u8>; 4]>, String> {
        let (Some(cdc), false) = (self.cdc.clone(), plan.is_empty()) else { return Ok(None) };
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let bytes = |v: &[u8]| stream.clone_htod(v).map_err(cuda);
        let as_bytes = |w: &[u64]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let as_bytes32 = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let cmds = bytes(&as_bytes(&plan.cmds))?;
        let words = bytes(&as_bytes32(&plan.words))?;
        let slots = bytes(&as_bytes32(&plan.slots))?;
        // SAFETY: the two bitmaps, written by the first kernel before anything reads them.
        let bits = unsafe { stream.alloc::<u8>(8 * (plan.bitmap_words() as usize).max(1)) }.map_err(cuda)?;
        // SAFETY: the plan's arrays and the bitmaps in GPU memory, kept until the batch is
        // synchronised; every command was checked by `fingerprint` (input and output in GPU
        // memory, the output with room for its entries, not overlapping the input).
        unsafe { cdc.run(&stream, plan, (ptr(&cmds, &stream), ptr(&words, &stream), ptr(&slots, &stream)), ptr(&bits, &stream)) }?;
        Ok(Some([cmds, words, slots, bits]))
    }

    /// Checks a member to decode (the CPU device's checks: its header, that
    /// it is as long as its size field says, that the output has room for
    /// what it declares; its ranges in GPU memory). Its header and trailer
    /// (metadata) come to the host to be read. The outer error is the
    /// device's failure; the inner the status this command gets.
    fn inflate_command(&mut self, r: &Request) -> Result<Result<Inflate, Status>, String> {
        if self.nv.is_none() || !self.inflate {
            return Ok(Err(Status::Unsupported));
        }
        if let Err(status) = peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, FunctionSet::EMPTY.with(FunctionKind::GzipDecompressMember)) {
            return Ok(Err(status));
        }
        let (Some(input), Some(output)) = (self.own_ptr(r.inputs[0]), self.own_ptr(r.output)) else { return Ok(Err(Status::OutOfRange)) };
        let len = r.inputs[0].len as usize;
        if len < 18 {
            return Ok(Err(Status::CorruptInput));
        }
        // Ranges of the member, copied to the host together and waited for once.
        let fetch = |ranges: &[(u64, usize)]| -> Result<Vec<Vec<u8>>, String> {
            let mut bufs: Vec<Vec<u8>> = ranges.iter().map(|&(_, n)| vec![0u8; n]).collect();
            for (b, &(at, n)) in bufs.iter_mut().zip(ranges) {
                // SAFETY: `n` bytes of the member's range in GPU memory (checked) into a host
                // buffer of that length; synchronised below, before any buffer is read.
                unsafe { sys::cuMemcpyDtoHAsync_v2(b.as_mut_ptr() as *mut c_void, at, n, self.stream.cu_stream()) }.result().map_err(|e| format!("CUDA: {e}"))?;
            }
            self.stream.synchronize().map_err(|e| format!("CUDA: {e}"))?;
            Ok(bufs)
        };
        let [trailer, mut head]: [Vec<u8>; 2] = fetch(&[(input + len as u64 - 8, 8), (input, len.min(MEMBER_HEAD_BYTES))])?.try_into().expect("two ranges");
        if matches!(peerpath_func::MemberHeader::parse(&head), Err(peerpath_func::HeaderError::Truncated { .. })) && len > head.len() {
            // A long name or extra field: read as much as a header can hold.
            head = fetch(&[(input, len.min(peerpath_func::gzip::MAX_HEADER_BYTES))])?.remove(0);
        }
        let Ok(header) = peerpath_func::MemberHeader::parse(&head) else { return Ok(Err(Status::CorruptInput)) };
        if header.sizes.map(|s| s.member_bytes()) != Some(len) {
            return Ok(Err(Status::CorruptInput));
        }
        let word = |at: usize| u32::from_le_bytes(trailer[at..at + 4].try_into().expect("4 bytes"));
        let Ok(declared) = peerpath_func::gzip::declared_output_bytes_from(&header, len, |_| word(4)) else { return Ok(Err(Status::CorruptInput)) };
        if r.output.len < declared as u64 {
            return Ok(Err(Status::OutputTooSmall));
        }
        if declared == 0 {
            // An empty block's member (nothing for nvCOMP to write): all of it is in `head`, and
            // the CPU decodes it, as strictly as the CPU device does.
            let whole = if head.len() < len { fetch(&[(input, len)])?.remove(0) } else { head };
            return Ok(match peerpath_func::decode_member(&header, &whole, &mut []) {
                Ok(0) => Ok(Inflate { input, len, output, declared, crc: 0, isize: 0, crc_at: usize::MAX, input_crc_at: 0 }),
                _ => Err(Status::CorruptInput),
            });
        }
        Ok(Ok(Inflate { input, len, output, declared, crc: word(0), isize: word(4), crc_at: 0, input_crc_at: 0 }))
    }

    /// Queues the batch's members in one nvCOMP launch and their outputs'
    /// CRC-32 in `crcs` (launched after it); returns the device memory the
    /// launch uses (keep it until the stream is synchronised) and where
    /// each member's decoded length and status will be (read after that).
    #[allow(clippy::type_complexity)]
    fn inflate(&mut self, members: &mut [(usize, Inflate)], crcs: &mut CrcPlan) -> Result<Option<([CudaSlice<u64>; 4], CudaSlice<usize>, CudaSlice<i32>)>, String> {
        for (_, m) in members.iter_mut() {
            m.input_crc_at = crcs.add(std::iter::once((m.input, m.len as u64)));
        }
        let decode: Vec<&Inflate> = members.iter().map(|(_, m)| m).filter(|m| m.declared > 0).collect();
        let (Some(nv), false) = (self.nv.clone(), decode.is_empty()) else { return Ok(None) };
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let n = decode.len();
        let column = |f: &dyn Fn(&Inflate) -> u64| stream.clone_htod(&decode.iter().map(|m| f(m)).collect::<Vec<u64>>()).map_err(cuda);
        let (in_ptrs, in_sizes, out_caps, out_ptrs) = (column(&|m| m.input)?, column(&|m| m.len as u64)?, column(&|m| m.declared as u64)?, column(&|m| m.output)?);
        let actual = stream.alloc_zeros::<usize>(n).map_err(cuda)?;
        let status = stream.alloc_zeros::<i32>(n).map_err(cuda)?;
        let p = |s: &CudaSlice<u64>| ptr(s, &stream);
        // SAFETY: device arrays of `n` entries: each input pointer names its member in GPU memory
        // (checked), each output pointer room for the `declared` bytes its capacity says
        // (checked); the naive algorithm takes no scratch (checked when opened); all kept until
        // the batch is synchronised. (usize is u64 here: the arrays are nvCOMP's size_t.)
        let st = unsafe {
            (nv.decompress_async)(
                p(&in_ptrs) as usize as *const *const c_void,
                p(&in_sizes) as usize as *const usize,
                p(&out_caps) as usize as *const usize,
                ptr(&actual, &stream) as usize as *mut usize,
                n,
                std::ptr::null_mut(),
                0,
                p(&out_ptrs) as usize as *const *mut c_void,
                DecompressOpts::naive(),
                ptr(&status, &stream) as usize as *mut i32,
                stream.cu_stream() as *mut c_void,
            )
        };
        if st != 0 {
            return Err(format!("nvcompBatchedGzipDecompressAsync: {}", nv.describe(st)));
        }
        for (_, m) in members.iter_mut().filter(|(_, m)| m.declared > 0) {
            m.crc_at = crcs.add(std::iter::once((m.output, m.declared as u64)));
        }
        Ok(Some(([in_ptrs, in_sizes, out_caps, out_ptrs], actual, status)))
    }

    /// Checks a scan command (the CPU device's checks, its ranges in GPU
    /// memory, its motif one the kernels can walk) and adds it to `plan`.
    /// The motif's text (metadata, at most 64 KiB) comes to the host, which
    /// compiles it (once per motif: kept in `motifs`). The outer error is the
    /// device's failure; the inner the status this command gets.
    /// Returns the records' address.
    fn scan_command(&mut self, r: &Request, plan: &mut ScanPlan) -> Result<Result<u64, Status>, String> {
        let Function::ScanCount { format, ignore_case, at_end, min_length } = r.function else { return Ok(Err(Status::Unsupported)) };
        if self.scan.is_none() {
            return Ok(Err(Status::Unsupported));
        }
        if let Err(status) = peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, FunctionSet::EMPTY.with(FunctionKind::ScanCount)) {
            return Ok(Err(status));
        }
        if format > 2 {
            return Ok(Err(Status::InvalidField));
        }
        let (Some(records), Some(output)) = (self.own_ptr(r.inputs[0]), self.own_ptr(r.output)) else { return Ok(Err(Status::OutOfRange)) };
        let dfa = if r.inputs[1].len == 0 {
            None
        } else {
            let Some(at) = self.own_ptr(r.inputs[1]) else { return Ok(Err(Status::OutOfRange)) };
            let mut text = vec![0u8; r.inputs[1].len as usize];
            // SAFETY: the command's motif range in GPU memory (checked) into a host buffer of its
            // length; synchronised before the buffer is read.
            unsafe { sys::cuMemcpyDtoHAsync_v2(text.as_mut_ptr() as *mut c_void, at, text.len(), self.stream.cu_stream()) }.result().map_err(|e| format!("CUDA: {e}"))?;
            self.stream.synchronize().map_err(|e| format!("CUDA: {e}"))?;
            match self.motif(text, ignore_case)? {
                Ok(dfa) => Some(dfa),
                Err(status) => return Ok(Err(status)),
            }
        };
        // A batch whose segments would pass 32 bits refuses the rest.
        Ok(plan.add((records, r.inputs[0].len), (format, at_end, min_length), dfa, output, crate::scan::SEGMENT_BYTES).map(|()| records).ok_or(Status::InputTooLarge))
    }

    /// The table of `text` in GPU memory (made and kept on first use), or
    /// the status its commands get: `InvalidField` for what is not a
    /// pattern (as on the CPU), `Unsupported` for a pattern no table here
    /// walks (the caller's CPU counts it).
    fn motif(&mut self, text: Vec<u8>, ignore_case: bool) -> Result<Result<DfaAt, Status>, String> {
        if let Some((_, _, known)) = self.motifs.iter().find(|(t, i, _)| *t == text && *i == ignore_case) {
            return Ok(known.as_ref().map(|(_, at)| *at).map_err(|s| *s));
        }
        let made = match std::str::from_utf8(&text).map_err(|_| Status::InvalidField).and_then(|m| {
            Dfa::new(m, ignore_case).map_err(|e| match e {
                MotifError::Invalid(_) => Status::InvalidField,
                MotifError::NotForGpu(_) => Status::Unsupported,
            })
        }) {
            Ok(dfa) => {
                let (image, at) = dfa.image();
                let table = self.stream.clone_htod(&image).map_err(|e| format!("CUDA: {e}"))?;
                let base = ptr(&table, &self.stream);
                Ok((table, at.at(base)))
            }
            Err(status) => Err(status),
        };
        let answer = made.as_ref().map(|(_, at)| *at).map_err(|s| *s);
        self.motifs.push((text, ignore_case, made));
        Ok(answer)
    }

    /// Queues the batch's scan commands (four launches); returns the device
    /// memory they use, to keep until the stream is synchronised.
    #[allow(clippy::type_complexity)]
    fn scan(&mut self, plan: &ScanPlan) -> Result<Option<(CudaSlice<u64>, CudaSlice<u32>, CudaSlice<u64>, CudaSlice<u64>)>, String> {
        let (Some(scan), false) = (self.scan.clone(), plan.is_empty()) else { return Ok(None) };
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let cmds = stream.clone_htod(&plan.cmds).map_err(cuda)?;
        let segs = stream.clone_htod(&plan.segs).map_err(cuda)?;
        let lines = stream.alloc_zeros::<u64>((plan.segments() as usize).max(1)).map_err(cuda)?;
        let sums = stream.alloc_zeros::<u64>(SCAN_STRIDE * plan.len()).map_err(cuda)?;
        // SAFETY: the plan's commands (written by the kernels too) and segments, a line word per
        // segment and zeroed counters per command, kept until the batch is synchronised; every
        // command was checked by `scan_command` (records, motif and output in GPU memory, the
        // output large enough, no overlap; the tables kept in `motifs` until a later batch).
        unsafe { scan.run(&stream, plan, (ptr(&cmds, &stream), ptr(&segs, &stream)), ptr(&lines, &stream), ptr(&sums, &stream)) }?;
        Ok(Some((cmds, segs, lines, sums)))
    }

    /// Queues the filling of a command's output range (GPU memory) with `byte`.
    fn fill(&self, r: &Request, byte: u8) -> Result<(Status, u64), String> {
        if let Err(status) = peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, FunctionSet::EMPTY.with(FunctionKind::Fill)) {
            return Ok((status, 0));
        }
        let Some(at) = self.own_ptr(r.output) else { return Ok((Status::OutOfRange, 0)) };
        // SAFETY: the command's output range in GPU memory (checked), which the executor
        // gives this command alone until it completes (after the batch's synchronisation).
        unsafe { sys::cuMemsetD8Async(at, byte, r.output.len as usize, self.stream.cu_stream()) }.result().map_err(|e| format!("CUDA: {e}"))?;
        Ok((Status::Success, r.output.len))
    }

    /// Checks a seal or open command (the CPU device's checks, its ranges in
    /// GPU memory) and adds it to `plan`; returns its number there, or the
    /// status it gets.
    fn aead(&self, r: &Request, plan: &mut GcmPlan) -> Result<usize, Status> {
        if self.crypt.is_none() {
            return Err(Status::Unsupported);
        }
        let all = FunctionSet::EMPTY.with(FunctionKind::AeadSealBlock).with(FunctionKind::AeadOpenBlock);
        peerpath_device::check_request(r, self.layout.own_len + self.layout.window_len, all)?;
        let (Some(input), Some(material), Some(output)) = (self.own_ptr(r.inputs[0]), self.own_ptr(r.inputs[1]), self.own_ptr(r.output)) else { return Err(Status::OutOfRange) };
        match r.function {
            // The header's tag has this index; no block does (the CPU's check).
            Function::AeadSealBlock { index } | Function::AeadOpenBlock { index } if index == u64::MAX => Err(Status::InvalidField),
            // A batch whose segments would pass 32 bits (terabytes of blocks) refuses the rest.
            Function::AeadSealBlock { index } => plan.add((input, output, r.inputs[0].len), false, material, index).ok_or(Status::InputTooLarge),
            Function::AeadOpenBlock { index } => plan.add((input, output, r.inputs[0].len - TAG_BYTES as u64), true, material, index).ok_or(Status::InputTooLarge),
            _ => Err(Status::Unsupported),
        }
    }

    /// Queues the batch's seal and open commands (three launches) and the
    /// zeroing of their state (it holds round keys) after them; returns the
    /// state and segment starts (keep them until the stream is synchronised)
    /// and where each command's verdict will be (read after that).
    #[allow(clippy::type_complexity)]
    fn gcm(&mut self, plan: &GcmPlan) -> Result<Option<(CudaSlice<u64>, CudaSlice<u32>, CudaSlice<u32>)>, String> {
        let (Some(crypt), false) = (self.crypt.clone(), plan.is_empty()) else { return Ok(None) };
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let states = stream.clone_htod(&plan.states).map_err(cuda)?;
        let starts = stream.clone_htod(&plan.starts).map_err(cuda)?;
        let ok = stream.alloc_zeros::<u32>(plan.len()).map_err(cuda)?;
        let n = u32::try_from(plan.len()).map_err(|_| "more than 2^32 commands in a batch".to_string())?;
        // SAFETY: the plan's states and starts, a verdict word per command; every command was
        // checked by `aead` (source, material and output in GPU memory, the output large
        // enough, no overlap); all three kept until the batch is synchronised.
        let ran = unsafe { crypt.run(&stream, (ptr(&states, &stream), n), (ptr(&starts, &stream), plan.segments()), ptr(&ok, &stream)) };
        // The states hold round keys: zeroed whether or not every launch was queued.
        // SAFETY: the states' bytes, after the kernels that read them (stream order).
        let zeroed = unsafe { sys::cuMemsetD8Async(ptr(&states, &stream), 0, plan.states.len() * 8, stream.cu_stream()) }.result().map_err(cuda);
        ran?;
        zeroed?;
        Ok(Some((states, starts, ok)))
    }

    /// The code with `k` data and `m` parity shards, and its parity rows'
    /// powers in GPU memory (made once per worker).
    fn code_for(&mut self, k: u8, m: u8) -> Result<&(peerpath_func::ec::RsCode, CudaSlice<u32>), String> {
        if !self.codes.contains_key(&(k, m)) {
            let code = peerpath_func::ec::RsCode::new(usize::from(k), usize::from(m))?;
            let pw = self.stream.clone_htod(&crate::kernels::powers(code.parity_rows())).map_err(|e| format!("CUDA: {e}"))?;
            self.codes.insert((k, m), (code, pw));
        }
        Ok(&self.codes[&(k, m)])
    }

    /// Queues the CRC-32 of every segment of `plan` in one launch; returns
    /// the segment list the kernel reads (keep it until the stream is
    /// synchronised) and where the CRC-32s will be (read after that).
    #[allow(clippy::type_complexity)]
    fn crc32(&mut self, plan: &CrcPlan) -> Result<Option<(CudaSlice<u64>, CudaSlice<u32>)>, String> {
        let (Some(coding), n) = (self.coding.clone(), plan.segment_count()) else { return Ok(None) };
        if n == 0 {
            return Ok(None);
        }
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let segments = stream.clone_htod(&plan.segments).map_err(cuda)?;
        let out = stream.alloc_zeros::<u32>(n).map_err(cuda)?;
        let (seg_ptr, _g1) = segments.device_ptr(&stream);
        // SAFETY: `segments` holds n (address, length) pairs naming GPU memory of
        // CRC-32 commands of this batch (checked by `code`), the table is
        // `crc_table`'s, `out` has n words; both are returned, kept until the
        // batch is synchronised and `out` read after it.
        unsafe { coding.kernels.crc32_segments(&stream, seg_ptr, n as u32, ptr(&coding.crc_table, &stream), ptr(&out, &stream)) }?;
        drop(_g1);
        Ok(Some((segments, out)))
    }

    /// Adds a synchronised batch's GPU times to the profile: its copies
    /// (events 0 to 1), and where `timed` (events 2 and 3 recorded) the
    /// kernel (1 to 2) and the packing (2 to 3); and the members it compressed.
    fn account(&self, events: &[cudarc::driver::CudaEvent; 4], timed: bool, pieces: &[Piece]) -> Result<(), String> {
        let ms = |a: &cudarc::driver::CudaEvent, b: &cudarc::driver::CudaEvent| a.elapsed_ms(b).map(|m| (m as f64 * 1e6) as u64).map_err(|e| format!("CUDA: {e}"));
        let p = &self.shared.profile;
        p.copies_ns.fetch_add(ms(&events[0], &events[1])?, Ordering::Relaxed);
        if timed {
            p.kernel_ns.fetch_add(ms(&events[1], &events[2])?, Ordering::Relaxed);
            p.packing_ns.fetch_add(ms(&events[2], &events[3])?, Ordering::Relaxed);
        }
        if !pieces.is_empty() {
            p.members.fetch_add(pieces.len() as u64, Ordering::Relaxed);
            p.member_bytes.fetch_add(pieces.iter().map(|x| x.len).sum::<u64>(), Ordering::Relaxed);
        }
        Ok(())
    }

    /// Device staging: every range is in the window. Copies and each compress
    /// command's input go to GPU scratch (copy engine), the compress commands
    /// run in one nvCOMP launch and are packed there, and everything goes
    /// back to its output range in the window (copy engine): one batch, one
    /// round trip per chunk.
    fn batch_in_window(&mut self, batch: &[Job], events: &[cudarc::driver::CudaEvent; 4]) -> Result<Vec<(Status, u64)>, String> {
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let cu = stream.cu_stream();
        events[0].record(&stream).map_err(cuda)?;
        let mut out = vec![(Status::Success, 0u64); batch.len()];
        // Where each command's input goes in the input scratch, and its output in the output scratch.
        let align = |n: u64| n.next_multiple_of(256);
        let (mut in_total, mut out_total) = (0u64, 0u64);
        let mut plan = Vec::with_capacity(batch.len());
        for (k, job) in batch.iter().enumerate() {
            let r = &job.request;
            let supported = matches!(r.function, Function::Copy) || (r.inputs.len() == 1 && member_bytes(r).is_some() && self.nv.is_some() && self.compress);
            let in_window = r.inputs.iter().all(|&i| self.window_ptr(i).is_some()) && self.window_ptr(r.output).is_some();
            if !supported || !in_window {
                out[k].0 = if supported { Status::OutOfRange } else { Status::Unsupported };
                plan.push(None);
                continue;
            }
            let len: u64 = r.inputs.iter().map(|i| i.len).sum();
            plan.push(Some((in_total, out_total)));
            in_total += align(len.max(1));
            if !matches!(r.function, Function::Copy) {
                out_total += align(r.output.len.max(1));
            }
        }
        let d_in = ptr(grow(&mut self.scratch.inputs, in_total.max(1) as usize, &stream)?, &stream);
        let d_out = ptr(grow(&mut self.scratch.outputs, out_total.max(1) as usize, &stream)?, &stream);
        // In: every input range to its place in the input scratch.
        for (job, p) in batch.iter().zip(&plan) {
            let Some((at, _)) = *p else { continue };
            let mut off = at;
            for &i in &job.request.inputs {
                let host = self.window_ptr(i).expect("checked above");
                // SAFETY: a pinned window range the executor gave this command
                // (checked to lie in the window) to scratch we own, sized above.
                unsafe { sys::cuMemcpyHtoDAsync_v2(d_in + off, host as *const c_void, i.len as usize, cu) }.result().map_err(cuda)?;
                off += i.len;
            }
        }
        events[1].record(&stream).map_err(cuda)?;
        // Compress: members of every compress command in one launch, packed in the output scratch.
        let mut pieces = Vec::new();
        let mut outputs = Vec::new();
        for (k, (job, p)) in batch.iter().zip(&plan).enumerate() {
            let (Some((at, out_at)), r) = (*p, &job.request) else { continue };
            let Some(member_bytes) = member_bytes(r) else { continue };
            split_members(k, d_in + at, r.inputs[0].len, member_bytes, &mut pieces);
            outputs.push((k, d_out + out_at, r.output.len));
        }
        if !pieces.is_empty() {
            for (k, result) in self.compress(&pieces, &outputs, &events[2])? {
                out[k] = result;
            }
        } else {
            events[2].record(&stream).map_err(cuda)?;
        }
        // Out: copies from the input scratch, compressed output from the output scratch.
        for (k, (job, p)) in batch.iter().zip(&plan).enumerate() {
            let (Some((at, out_at)), r) = (*p, &job.request) else { continue };
            let (from, len) = match r.function {
                Function::Copy => {
                    let len: u64 = r.inputs.iter().map(|i| i.len).sum();
                    if r.output.len < len {
                        out[k] = (Status::OutputTooSmall, 0);
                        continue;
                    }
                    out[k] = (Status::Success, len);
                    (d_in + at, len)
                }
                _ if out[k].0 == Status::Success => (d_out + out_at, out[k].1),
                _ => continue,
            };
            if len == 0 {
                continue;
            }
            let host = self.window_ptr(DeviceRange::new(r.output.offset, len)).expect("checked above");
            // SAFETY: scratch we own to the command's output range in the
            // pinned window (checked above; `len` fits it: the packing checked
            // each output's capacity, a copy's here).
            unsafe { sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, from, len as usize, cu) }.result().map_err(cuda)?;
        }
        events[3].record(&stream).map_err(cuda)?;
        stream.synchronize().map_err(cuda)?;
        self.account(events, true, &pieces)?;
        Ok(out)
    }

    /// A device address for a range in GPU memory (`None`: not all in it).
    fn own_ptr(&self, r: DeviceRange) -> Option<u64> {
        (r.offset + r.len <= self.layout.own_len).then_some(self.layout.own_base + r.offset)
    }

    /// A host address for a range of the window.
    fn window_ptr(&self, r: DeviceRange) -> Option<usize> {
        let l = &self.layout;
        (r.offset >= l.own_len && r.offset + r.len <= l.own_len + l.window_len).then(|| l.window_host + (r.offset - l.own_len) as usize)
    }

    /// Gathers the inputs into the output on the copy engines.
    fn copy(&self, r: &Request) -> Result<(Status, u64), String> {
        let total: u64 = r.inputs.iter().map(|i| i.len).sum();
        if r.output.len < total {
            return Ok((Status::OutputTooSmall, 0));
        }
        let stream = self.stream.cu_stream();
        let mut at = 0u64;
        for &i in &r.inputs {
            let to = DeviceRange::new(r.output.offset + at, i.len);
            // In each arm both ranges lie in memory this device owns (checked
            // by own_ptr/window_ptr), the window is pinned, and the executor
            // gives a command exclusive use of its ranges until it completes
            // (after the batch's synchronisation).
            let res = match (self.own_ptr(i), self.window_ptr(i), self.own_ptr(to), self.window_ptr(to)) {
                // SAFETY: as above (GPU memory to GPU memory).
                (Some(s), _, Some(d), _) => unsafe { sys::cuMemcpyDtoDAsync_v2(d, s, i.len as usize, stream) },
                // SAFETY: as above (the pinned window to GPU memory).
                (_, Some(s), Some(d), _) => unsafe { sys::cuMemcpyHtoDAsync_v2(d, s as *const c_void, i.len as usize, stream) },
                // SAFETY: as above (GPU memory to the pinned window).
                (Some(s), _, _, Some(d)) => unsafe { sys::cuMemcpyDtoHAsync_v2(d as *mut c_void, s, i.len as usize, stream) },
                _ => return Ok((Status::OutOfRange, 0)),
            };
            res.result().map_err(|e| format!("CUDA copy: {e}"))?;
            at += i.len;
        }
        Ok((Status::Success, total))
    }

    /// Compresses every piece in one nvCOMP launch, then writes each job's
    /// members (peerpath's header, nvCOMP's deflate data and trailer) back to
    /// back at the start of its output range (`outputs`: job, address,
    /// capacity), on the GPU. Returns each job's status and output bytes.
    fn compress(&mut self, items: &[Piece], outputs: &[(usize, u64, u64)], kernel_done: &cudarc::driver::CudaEvent) -> Result<Vec<JobResult>, String> {
        let cuda = |e: cudarc::driver::DriverError| format!("CUDA: {e}");
        let stream = self.stream.clone();
        let n = items.len();
        let nv = self.nv.clone().ok_or("a compress command on a GPU device opened without nvCOMP")?;
        let max_chunk = items.iter().map(|x| x.len as usize).max().unwrap_or(0).max(1);
        let total: usize = items.iter().map(|x| x.len as usize).sum();
        let slot = nv.max_output_chunk_bytes(max_chunk, self.opts)?.next_multiple_of(8);
        let temp_bytes = nv.compress_temp_bytes(n, max_chunk, total.max(1), self.opts)?;
        let temp = grow(&mut self.scratch.temp, temp_bytes.max(1), &stream)?;
        let slots = grow(&mut self.scratch.slots, n * slot, &stream)?;
        let temp_ptr = ptr(temp, &stream);
        let slots_ptr = ptr(slots, &stream);
        let in_ptrs: Vec<u64> = items.iter().map(|x| x.input).collect();
        let in_sizes: Vec<usize> = items.iter().map(|x| x.len as usize).collect();
        let out_ptrs: Vec<u64> = (0..n).map(|k| slots_ptr + (k * slot) as u64).collect();
        let d_in_ptrs = stream.clone_htod(&in_ptrs).map_err(cuda)?;
        let d_in_sizes = stream.clone_htod(&in_sizes).map_err(cuda)?;
        let d_out_ptrs = stream.clone_htod(&out_ptrs).map_err(cuda)?;
        let mut d_out_sizes = stream.alloc_zeros::<usize>(n).map_err(cuda)?;
        let mut d_status = stream.alloc_zeros::<i32>(n).map_err(cuda)?;
        let st = {
            let (ip, _g1) = d_in_ptrs.device_ptr(&stream);
            let (isz, _g2) = d_in_sizes.device_ptr(&stream);
            let (op, _g3) = d_out_ptrs.device_ptr(&stream);
            let (osz, _g4) = d_out_sizes.device_ptr_mut(&stream);
            let (sp, _g5) = d_status.device_ptr_mut(&stream);
            // SAFETY: every pointer is device memory of the sizes nvCOMP asks
            // for (arrays of `n` entries, slots of `slot` bytes at multiples
            // of 8, `temp_bytes` of scratch, inputs inside the GPU memory the
            // executor gave these commands); all outlive the synchronisation below.
            unsafe {
                (nv.compress_async)(
                    ip as usize as *const *const c_void,
                    isz as usize as *const usize,
                    max_chunk,
                    n,
                    temp_ptr as usize as *mut c_void,
                    temp_bytes.max(1),
                    op as usize as *const *mut c_void,
                    osz as usize as *mut usize,
                    self.opts,
                    sp as usize as *mut i32,
                    stream.cu_stream() as *mut c_void,
                )
            }
        };
        if st != 0 {
            return Err(format!("nvcompBatchedGzipCompressAsync: {}", nv.describe(st)));
        }
        kernel_done.record(&stream).map_err(cuda)?;
        let sizes: Vec<usize> = stream.clone_dtoh(&d_out_sizes).map_err(cuda)?;
        let statuses: Vec<i32> = stream.clone_dtoh(&d_status).map_err(cuda)?;
        // Each job's members in order: where each goes, and its header (made
        // on the host: metadata), then all headers copied over at once.
        let mut state: HashMap<usize, (u64, u64, u64, Status)> = outputs.iter().map(|&(k, ptr, cap)| (k, (ptr, cap, 0, Status::Success))).collect();
        let mut headers = vec![0u8; n * PEERPATH_HEADER_BYTES];
        let mut places = vec![None; n];
        for (p, x) in items.iter().enumerate() {
            let (ptr, cap, at, status) = state.get_mut(&x.job).expect("every piece has its job's output");
            if *status != Status::Success {
                continue;
            }
            if statuses[p] != 0 || sizes[p] < 18 {
                *status = Status::Internal;
                continue;
            }
            let member = (PEERPATH_HEADER_BYTES + sizes[p] - 10) as u64;
            if *at + member > *cap {
                *status = Status::OutputTooSmall;
                continue;
            }
            headers[p * PEERPATH_HEADER_BYTES..(p + 1) * PEERPATH_HEADER_BYTES].copy_from_slice(&peerpath_func::peerpath_header(0, member as u32, x.len as u32));
            places[p] = Some(*ptr + *at);
            *at += member;
        }
        let hdr = grow(&mut self.scratch.headers, headers.len(), &stream)?;
        let hdr_ptr = ptr(hdr, &stream);
        // SAFETY: `headers` is host memory that outlives the synchronisation
        // below (a pageable copy is staged by the driver before it returns).
        unsafe { sys::cuMemcpyHtoDAsync_v2(hdr_ptr, headers.as_ptr() as *const c_void, headers.len(), stream.cu_stream()) }.result().map_err(cuda)?;
        for (p, place) in places.iter().enumerate() {
            let Some(to) = *place else { continue };
            let body = sizes[p] - 10;
            // SAFETY: both copies stay inside device memory this batch owns:
            // the header and slot scratch, and the job's output range
            // (checked to hold its members above).
            unsafe {
                sys::cuMemcpyDtoDAsync_v2(to, hdr_ptr + (p * PEERPATH_HEADER_BYTES) as u64, PEERPATH_HEADER_BYTES, stream.cu_stream()).result().map_err(cuda)?;
                sys::cuMemcpyDtoDAsync_v2(to + PEERPATH_HEADER_BYTES as u64, out_ptrs[p] + 10, body, stream.cu_stream()).result().map_err(cuda)?;
            }
        }
        let results = state.into_iter().map(|(k, (_, _, at, status))| (k, (status, if status == Status::Success { at } else { 0 }))).collect();
        stream.synchronize().map_err(cuda)?;
        Ok(results)
    }
}

/// A job's index in its batch, its status and its output bytes.
type JobResult = (usize, (Status, u64));

/// The calling thread's CPU time so far (user + system), nanoseconds.
fn thread_cpu_ns() -> u64 {
    (peerpath_metrics::thread_cpu_now().total_s() * 1e9) as u64
}

/// A block of a compress command's input: one member.
struct Piece {
    job: usize,
    input: u64,
    len: u64,
}

/// Bytes per member of a gzip compress command (its whole input for
/// `GzipCompressMember`); `None` for anything else.
fn member_bytes(r: &Request) -> Option<u64> {
    match r.function {
        Function::GzipCompressMember { format: Format::Gzip, .. } => Some(r.inputs[0].len.max(1)),
        Function::GzipCompressChunk { format: Format::Gzip, member_bytes, .. } => Some(u64::from(member_bytes)),
        _ => None,
    }
}

/// Job `job`'s input of `n` bytes at device address `input`, as members of
/// `member_bytes` (at least one, for an empty input).
fn split_members(job: usize, input: u64, n: u64, member_bytes: u64, pieces: &mut Vec<Piece>) {
    let mut at = 0;
    loop {
        let len = member_bytes.min(n - at);
        pieces.push(Piece { job, input: input + at, len });
        at += len;
        if at >= n {
            break;
        }
    }
}

/// A scratch buffer of at least `bytes` (grown, never shrunk).
pub(crate) fn grow<'a>(slot: &'a mut Option<CudaSlice<u8>>, bytes: usize, stream: &Arc<CudaStream>) -> Result<&'a CudaSlice<u8>, String> {
    if slot.as_ref().is_none_or(|s| s.len() < bytes) {
        *slot = None;
        // SAFETY: scratch memory written (by nvCOMP or a copy) before it is read.
        *slot = Some(unsafe { stream.alloc::<u8>(bytes) }.map_err(|e| format!("CUDA cannot allocate {} MiB of scratch: {e}", bytes >> 20))?);
    }
    Ok(slot.as_ref().expect("just made"))
}

/// A buffer's device address.
pub(crate) fn ptr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (p, _g) = s.device_ptr(stream);
    p
}

/// The bytes a coding command writes: m (or `wanted`) units.
fn coded_bytes(r: &Request) -> u64 {
    match r.function {
        Function::EcEncode { data, parity } => r.inputs[0].len / u64::from(data) * u64::from(parity),
        Function::EcReconstruct { data, wanted, .. } => r.inputs[0].len / u64::from(data) * u64::from(wanted),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_says_where_the_batches_time_went() {
        let p = Profile::default();
        p.batches.store(4, Ordering::Relaxed);
        p.commands.store(10, Ordering::Relaxed);
        p.largest_batch.store(5, Ordering::Relaxed);
        p.members.store(8, Ordering::Relaxed);
        p.member_bytes.store(8 << 20, Ordering::Relaxed);
        p.kernel_ns.store(2_000_000, Ordering::Relaxed);
        p.copies_ns.store(500_000, Ordering::Relaxed);
        let text = p.render();
        assert!(text.starts_with("4 batches, 2.5 commands each on average (largest 5)"), "{text}");
        assert!(text.contains("copies, fills, nvCOMP decoding and peerpath's kernels 0.001 s, nvCOMP compression 0.002 s for 8 members (4.19 GB/s while it ran)"), "{text}");
        assert!(Profile::default().render().contains("(0.00 GB/s while it ran)"), "no division by zero");
    }

    /// On a GPU: the coding functions give the CPU oracle's bytes (ISA-L's
    /// parity and rebuilt shards, crc32fast's CRC-32s) through real commands
    /// (copies between the pinned window and GPU memory, the kernels), and
    /// refuse what the CPU device refuses. Elsewhere: skipped, saying why.
    /// `--gpu-memory-files mapped`: a source in /dev/shm read into GPU memory and a target
    /// (write-only, unnamed, as a job's is) written from it by the copy engine, across a
    /// granule's end and up to the source's end (short there); the target holds exactly the
    /// source's bytes where written; pinned granules in the profile.
    #[test]
    fn memory_files_are_read_and_written_by_the_copy_engine_on_a_gpu() {
        use std::os::unix::fs::OpenOptionsExt;
        let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
            eprintln!("SKIPPED: no /dev/shm");
            return;
        };
        let mut config = GpuDeviceConfig::staged(0, 8 << 20, 32);
        config.coding = true;
        config.map_memory_files = Some(crate::memfile::GRANULE_BYTES);
        let mut dev = match GpuDevice::open(&config) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        let io = dev.storage_io().cloned().expect("its own I/O, for memory files");
        assert!(io.memory_files.as_deref().is_some_and(|m| m.contains("copy engine")) && !io.direct, "{io:?}");
        let g = crate::memfile::GRANULE_BYTES as usize;
        let size = g + 10_000;
        let data = crate::kernels::tests::bytes(size, 5);
        let src_path = shm.path().join("source");
        std::fs::write(&src_path, &data).unwrap();
        let src = std::fs::File::open(&src_path).unwrap();
        let dst = std::fs::OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(shm.path()).unwrap();
        let (s, d) = (dev.register_file(&src).expect("the source mapped"), dev.register_file(&dst).expect("the target mapped"));
        // (file offset, length): the start, across the granule's end, the short last read.
        let ranges = [(0usize, 1usize << 20), (g - (1 << 20), 2 << 20), (g, 12_288)];
        for (tag, &(at, len)) in ranges.iter().enumerate() {
            let into = DeviceRange::new(0, len as u64);
            let done = peerpath_device::run_to_completion(&mut dev, vec![Request { tag: tag as u64, function: Function::StorageRead { file: s, offset: at as u64 }, inputs: Vec::new(), output: into }], Duration::from_secs(60)).expect("the GPU answers");
            let want = len.min(size - at);
            assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, want as u64), "read of {len} at {at}");
            let done = peerpath_device::run_to_completion(&mut dev, vec![Request { tag: 9, function: Function::StorageWrite { file: d, offset: at as u64 }, inputs: vec![into], output: DeviceRange::new(0, 0) }], Duration::from_secs(60)).expect("the GPU answers");
            assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, len as u64), "write of {len} at {at}");
        }
        let profile = dev.profile().unwrap_or_default();
        assert!(profile.contains(" granule"), "{profile}");
        dev.unregister_file(s);
        dev.unregister_file(d);
        dst.set_len(size as u64).unwrap(); // as the job's writer does at the end
        let written = std::fs::read(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&dst))).unwrap();
        for &(at, len) in &ranges {
            let end = (at + len).min(size);
            assert!(written[at..end] == data[at..end], "the target's bytes {at}..{end} are the source's");
        }
        drop(dev);
        assert_eq!(std::fs::read(&src_path).unwrap(), data, "the source is untouched");
    }

    #[test]
    fn the_coding_functions_give_the_cpu_oracles_bytes_on_a_gpu() {
        use peerpath_func::ec::RsCode;
        let (k, m, unit) = (6usize, 3usize, (1usize << 20) + 4);
        let stripe = (k + m) * unit;
        let config = GpuDeviceConfig { name: "gpu0".into(), ordinal: 0, own_bytes: 4 * stripe, window_bytes: 4 * stripe, algorithm: 0, queue_depth: 32, nvcomp: None, compress: false, coding: true, crypt: false, dedup: false, scan: false, inflate: false, streams: 1, staging: Staging::Commands, gather: Gather::default(), io: GpuIo::Staged, map_memory_files: None, command_timeout: DEFAULT_COMMAND_TIMEOUT };
        let mut dev = match GpuDevice::open(&config) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        assert!(dev.functions().contains(FunctionKind::EcEncode) && !dev.functions().contains(FunctionKind::GzipCompressChunk), "coding only, no nvCOMP");
        let own = dev.memory().dma_window().expect("a staged memory").0;
        let window = |at: u64, len: usize| DeviceRange::new(own + at, len as u64);
        let own_at = |at: usize, len: usize| DeviceRange::new(at as u64, len as u64);
        let data = crate::kernels::tests::bytes(k * unit, 11);
        let base = dev.memory().io_ptr(window(0, 4 * stripe)).expect("the window") as usize;
        // The host address of a window range (the test's own writes and reads).
        let host = |r: DeviceRange| (base + (r.offset - own) as usize) as *mut u8;
        // SAFETY: the window's first k units, which no command uses yet.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host(window(0, k * unit)), k * unit) };
        let run = |dev: &mut GpuDevice, r: Vec<Request>| {
            let mut done = peerpath_device::run_to_completion(dev, r, Duration::from_secs(60)).expect("the GPU answers");
            done.sort_by_key(|c| c.tag());
            done
        };
        // In, encode, check every unit, out.
        run(&mut dev, vec![Request::copy(0, &[window(0, k * unit)], own_at(0, k * unit))]);
        let done = run(&mut dev, vec![Request::ec_encode(0, k as u8, m as u8, own_at(0, k * unit), own_at(k * unit, m * unit))]);
        assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, (m * unit) as u64));
        let mut commands: Vec<Request> = (0..k + m).map(|i| Request::crc32(i as u64, &[own_at(i * unit, unit)])).collect();
        // One command over two ranges, at odd offsets: the CRC-32 of their bytes in order.
        commands.push(Request::crc32(100, &[own_at(3, 5000), own_at(unit + 1, 70_001)]));
        commands.push(Request::copy(101, &[own_at(k * unit, m * unit)], window((k * unit) as u64, m * unit)));
        let done = run(&mut dev, commands);
        let shards = crate::kernels::tests::shards(&RsCode::new(k, m).unwrap(), &data, unit);
        for i in 0..k + m {
            assert_eq!((done[i].status, done[i].input_crc32), (Status::Success, crc32fast::hash(&shards[i])), "unit {i}'s CRC-32");
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&data[3..5003]);
        h.update(&data[unit + 1..unit + 70_002]);
        assert_eq!(done[k + m].input_crc32, h.finalize(), "two ranges");
        // SAFETY: the window's parity units, written by the copy that completed.
        let got = unsafe { std::slice::from_raw_parts(host(window((k * unit) as u64, m * unit)), m * unit) };
        for i in 0..m {
            assert!(got[i * unit..(i + 1) * unit] == shards[k + i][..], "parity {i} is ISA-L's");
        }
        // Rebuild two data shards and a parity shard from the other six, with the index list in GPU memory.
        let survivors = [0u8, 2, 3, 5, 6, 8];
        let lost = [1u8, 4, 7];
        let gathered: Vec<u8> = survivors.iter().flat_map(|&i| shards[i as usize].clone()).collect();
        let indices: Vec<u8> = survivors.iter().chain(&lost).copied().collect();
        let at = 2 * stripe;
        // SAFETY: window ranges past everything used above, which no command uses.
        unsafe {
            std::ptr::copy_nonoverlapping(gathered.as_ptr(), host(window(at as u64, k * unit)), k * unit);
            std::ptr::copy_nonoverlapping(indices.as_ptr(), host(window((at + k * unit) as u64, indices.len())), indices.len());
        }
        run(&mut dev, vec![Request::copy(0, &[window(at as u64, k * unit + indices.len())], own_at(at, k * unit + indices.len()))]);
        let rebuild = |tag, idx: DeviceRange| Request { tag, function: Function::EcReconstruct { data: k as u8, parity: m as u8, wanted: lost.len() as u8 }, inputs: vec![own_at(at, k * unit), idx], output: own_at(0, lost.len() * unit) };
        let done = run(&mut dev, vec![rebuild(0, own_at(at + k * unit, indices.len()))]);
        assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, (lost.len() * unit) as u64));
        run(&mut dev, vec![Request::copy(0, &[own_at(0, lost.len() * unit)], window(0, lost.len() * unit))]);
        // SAFETY: the window's first units, written by the copy that completed.
        let got = unsafe { std::slice::from_raw_parts(host(window(0, lost.len() * unit)), lost.len() * unit) };
        for (n, &i) in lost.iter().enumerate() {
            assert!(got[n * unit..(n + 1) * unit] == shards[i as usize][..], "shard {i} rebuilt");
        }
        // Units of an odd length at an odd offset (the byte-wise kernel): the first 3 x 1001
        // bytes of the data, RS(3,2), against ISA-L.
        let (k3, m3, u3) = (3usize, 2usize, 1001usize);
        let want = crate::kernels::tests::shards(&RsCode::new(k3, m3).unwrap(), &data[..k3 * u3], u3)[k3..].concat();
        // SAFETY: the window's first bytes (the rebuilt shards, read above), which no command uses now.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host(window(0, k3 * u3)), k3 * u3) };
        run(&mut dev, vec![Request::copy(0, &[window(0, k3 * u3)], own_at(1, k3 * u3))]);
        let out = own_at(at + 1, m3 * u3);
        let done = run(&mut dev, vec![Request::ec_encode(0, k3 as u8, m3 as u8, own_at(1, k3 * u3), out)]);
        assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, (m3 * u3) as u64));
        run(&mut dev, vec![Request::copy(0, &[out], window(0, m3 * u3))]);
        // SAFETY: the window's first bytes, written by the copy that completed.
        let got = unsafe { std::slice::from_raw_parts(host(window(0, m3 * u3)), m3 * u3) };
        assert!(got == want, "odd units: ISA-L's parity");
        // Refused as the CPU device refuses: a repeated index, a unit length k does not divide, a range in the window.
        // SAFETY: a window byte no command uses.
        unsafe { *host(window(0, 1)) = 0 };
        run(&mut dev, vec![Request::copy(0, &[window(0, 1)], own_at(at + k * unit + 1, 1))]);
        let done = run(&mut dev, vec![rebuild(0, own_at(at + k * unit, indices.len())), Request::ec_encode(1, k as u8, m as u8, own_at(0, k * unit + 1), own_at(k * unit + 8, m * unit + 8)), Request::crc32(2, &[window(0, 4096)])]);
        assert_eq!(done.iter().map(|c| c.status).collect::<Vec<_>>(), [Status::InvalidField, Status::InvalidField, Status::OutOfRange]);
        eprintln!("ran on {}", dev.description);
    }

    #[test]
    fn the_aead_functions_give_aws_lcs_bytes_on_a_gpu() {
        use peerpath_func::crypt::{seal_block_with, DEVICE_KEY_BYTES};
        let room = (4usize << 20) + 4096;
        let config = GpuDeviceConfig { name: "gpu0".into(), ordinal: 0, own_bytes: 16 * room, window_bytes: 16 * room, algorithm: 0, queue_depth: 32, nvcomp: None, compress: false, coding: false, crypt: true, dedup: false, scan: false, inflate: false, streams: 1, staging: Staging::Commands, gather: Gather::default(), io: GpuIo::Staged, map_memory_files: None, command_timeout: DEFAULT_COMMAND_TIMEOUT };
        let mut dev = match GpuDevice::open(&config) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        assert!(dev.functions().contains(FunctionKind::AeadOpenBlock) && !dev.functions().contains(FunctionKind::EcEncode), "encryption only");
        let own = dev.memory().dma_window().expect("a staged memory").0;
        let window = |at: usize, len: usize| DeviceRange::new(own + at as u64, len as u64);
        let own_at = |at: usize, len: usize| DeviceRange::new(at as u64, len as u64);
        let base = dev.memory().io_ptr(window(0, 16 * room)).expect("the window") as usize;
        let host = |r: DeviceRange| (base + (r.offset - own) as usize) as *mut u8;
        let run = |dev: &mut GpuDevice, r: Vec<Request>| {
            let mut done = peerpath_device::run_to_completion(dev, r, Duration::from_secs(60)).expect("the GPU answers");
            done.sort_by_key(|c| c.tag());
            done
        };
        // Block i's plaintext in slot 2i, its sealed form in slot 2i + 1 (at an odd offset for the
        // third), the material at the end.
        let lengths = [0usize, 17, 1 << 20, (4 << 20) - 3];
        let material = crate::kernels::tests::bytes(DEVICE_KEY_BYTES, 3);
        let key_at = 15 * room;
        let blocks: Vec<Vec<u8>> = lengths.iter().enumerate().map(|(i, &n)| crate::kernels::tests::bytes(n, 40 + i as u64)).collect();
        // SAFETY: window ranges no command uses yet.
        unsafe {
            std::ptr::copy_nonoverlapping(material.as_ptr(), host(window(key_at, DEVICE_KEY_BYTES)), DEVICE_KEY_BYTES);
            for (i, b) in blocks.iter().enumerate() {
                std::ptr::copy_nonoverlapping(b.as_ptr(), host(window(2 * i * room, b.len())), b.len());
            }
        }
        let mut copies: Vec<Request> = blocks.iter().enumerate().map(|(i, b)| Request::copy(i as u64, &[window(2 * i * room, b.len().max(1))], own_at(2 * i * room, b.len().max(1)))).collect();
        copies.push(Request::copy(9, &[window(key_at, DEVICE_KEY_BYTES)], own_at(key_at, DEVICE_KEY_BYTES)));
        run(&mut dev, copies);
        let key = own_at(key_at, DEVICE_KEY_BYTES);
        let sealed_at = |i: usize| (2 * i + 1) * room + usize::from(i == 2);
        let index = |i: usize| [0u64, 1, 1 << 33, 7][i];
        let seals = (0..4).map(|i| Request { tag: i as u64, function: Function::AeadSealBlock { index: index(i) }, inputs: vec![own_at(2 * i * room, lengths[i]), key], output: own_at(sealed_at(i), lengths[i] + TAG_BYTES) }).collect();
        let done = run(&mut dev, seals);
        for (i, c) in done.iter().enumerate() {
            assert_eq!((c.status, c.output_bytes), (Status::Success, (lengths[i] + TAG_BYTES) as u64), "seal {i}");
        }
        run(&mut dev, (0..4).map(|i| Request::copy(i as u64, &[own_at(sealed_at(i), lengths[i] + TAG_BYTES)], window(sealed_at(i), lengths[i] + TAG_BYTES))).collect());
        for (i, b) in blocks.iter().enumerate() {
            let mut want = b.clone();
            want.resize(b.len() + TAG_BYTES, 0);
            seal_block_with(&material, index(i), &mut want).unwrap();
            // SAFETY: the window's copy of the sealed block, written by the copy that completed.
            let got = unsafe { std::slice::from_raw_parts(host(window(sealed_at(i), want.len())), want.len()) };
            assert!(got == &want[..], "block {i} ({} bytes): the GPU's sealed bytes are aws-lc's", b.len());
        }
        // Open them all back into the plaintext slots (zeroed first), the third with a flipped byte.
        // SAFETY: the window's plaintext slots and a sealed byte, which no command uses now.
        unsafe {
            for (i, b) in blocks.iter().enumerate() {
                std::ptr::write_bytes(host(window(2 * i * room, b.len() + TAG_BYTES)), 0, b.len() + TAG_BYTES);
            }
            *host(window(sealed_at(2) + 1000, 1)) ^= 0x20;
        }
        run(&mut dev, (0..4).map(|i| Request::copy(i as u64, &[window(2 * i * room, lengths[i] + TAG_BYTES)], own_at(2 * i * room, lengths[i] + TAG_BYTES))).collect());
        run(&mut dev, vec![Request::copy(0, &[window(sealed_at(2) + 1000, 1)], own_at(sealed_at(2) + 1000, 1))]);
        let opens = (0..4).map(|i| Request { tag: i as u64, function: Function::AeadOpenBlock { index: index(i) }, inputs: vec![own_at(sealed_at(i), lengths[i] + TAG_BYTES), key], output: own_at(2 * i * room, lengths[i] + TAG_BYTES) }).collect();
        let done = run(&mut dev, opens);
        assert_eq!(done.iter().map(|c| (c.status, c.output_bytes)).collect::<Vec<_>>(), [(Status::Success, 0), (Status::Success, 17), (Status::CorruptInput, 0), (Status::Success, lengths[3] as u64)]);
        run(&mut dev, (0..4).map(|i| Request::copy(i as u64, &[own_at(2 * i * room, lengths[i] + TAG_BYTES)], window(2 * i * room, lengths[i] + TAG_BYTES))).collect());
        for (i, b) in blocks.iter().enumerate() {
            // SAFETY: the window's plaintext slot, written by the copy that completed.
            let got = unsafe { std::slice::from_raw_parts(host(window(2 * i * room, b.len())), b.len()) };
            if i == 2 {
                assert!(got.iter().all(|&x| x == 0), "nothing of a block that is not authentic is left in the output");
            } else {
                assert!(got == &b[..], "block {i} opened");
            }
        }
        // A fill in GPU memory.
        let done = run(&mut dev, vec![Request::fill(0, 0x5A, own_at(2 * room + 3, 5000))]);
        assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, 5000));
        run(&mut dev, vec![Request::copy(0, &[own_at(2 * room, 5008)], window(2 * room, 5008))]);
        // SAFETY: the window's copy, written by the copy that completed.
        let got = unsafe { std::slice::from_raw_parts(host(window(2 * room, 5008)), 5008) };
        assert!(got[3..5003].iter().all(|&x| x == 0x5A) && got[..3] == blocks[1][..3], "filled exactly the range");
        // Refused as the CPU device refuses: the header's index, material of the wrong length, a range in the window.
        let seal = |tag, index, key: DeviceRange, input: DeviceRange| Request { tag, function: Function::AeadSealBlock { index }, inputs: vec![input, key], output: own_at(sealed_at(1), 17 + TAG_BYTES) };
        let done = run(&mut dev, vec![seal(0, u64::MAX, key, own_at(2 * room, 17)), seal(1, 1, own_at(key_at, 32), own_at(2 * room, 17)), seal(2, 1, key, window(2 * room, 17))]);
        assert_eq!(done.iter().map(|c| c.status).collect::<Vec<_>>(), [Status::InvalidField, Status::InvalidField, Status::OutOfRange]);
        eprintln!("ran on {}", dev.description);
    }

    #[test]
    fn the_fingerprint_function_gives_the_cpu_oracles_chunks_on_a_gpu() {
        use peerpath_func::dedup::{chunk_digests, ChunkParams, Fingerprint};
        let room = 8usize << 20;
        let config = GpuDeviceConfig { name: "gpu0".into(), ordinal: 0, own_bytes: 4 * room, window_bytes: 4 * room, algorithm: 0, queue_depth: 32, nvcomp: None, compress: false, coding: false, crypt: false, dedup: true, scan: false, inflate: false, streams: 1, staging: Staging::Commands, gather: Gather::default(), io: GpuIo::Staged, map_memory_files: None, command_timeout: DEFAULT_COMMAND_TIMEOUT };
        let mut dev = match GpuDevice::open(&config) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        assert!(dev.functions().contains(FunctionKind::ChunkFingerprint) && !dev.functions().contains(FunctionKind::EcEncode), "dedup only");
        let own = dev.memory().dma_window().expect("a staged memory").0;
        let window = |at: usize, len: usize| DeviceRange::new(own + at as u64, len as u64);
        let own_at = |at: usize, len: usize| DeviceRange::new(at as u64, len as u64);
        let base = dev.memory().io_ptr(window(0, 4 * room)).expect("the window") as usize;
        let host = |r: DeviceRange| (base + (r.offset - own) as usize) as *mut u8;
        let run = |dev: &mut GpuDevice, r: Vec<Request>| {
            let mut done = peerpath_device::run_to_completion(dev, r, Duration::from_secs(60)).expect("the GPU answers");
            done.sort_by_key(|c| c.tag());
            done
        };
        // 6 MiB of random bytes with a run of zeros, in GPU memory at an odd offset.
        let mut data = crate::kernels::tests::bytes(4 << 20, 21);
        data.extend(vec![0u8; 1 << 20]);
        data.extend(crate::kernels::tests::bytes((1 << 20) + 7, 22));
        // SAFETY: a window range no command uses yet.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host(window(1, data.len())), data.len()) };
        run(&mut dev, vec![Request::copy(0, &[window(1, data.len())], own_at(1, data.len()))]);
        let sizes = [(16u16, 64u16, 256u16, true), (4, 16, 64, false), (16, 64, 256, false)];
        let out_at = |i: usize| room + i * room;
        let commands = sizes.iter().enumerate().map(|(i, &(min_kib, avg_kib, max_kib, at_end))| Request { tag: i as u64, function: Function::ChunkFingerprint { min_kib, avg_kib, max_kib, sha256: false, at_end }, inputs: vec![own_at(1, data.len())], output: own_at(out_at(i), room) }).collect();
        let done = run(&mut dev, commands);
        for (i, &(min_kib, avg_kib, max_kib, at_end)) in sizes.iter().enumerate() {
            let want = chunk_digests(&data, ChunkParams::new(min_kib as usize * 1024, avg_kib as usize * 1024, max_kib as usize * 1024).unwrap(), Fingerprint::Blake3, at_end);
            let bytes = 16 + want.len() * peerpath_device::CHUNK_ENTRY_BYTES;
            assert_eq!((done[i].status, done[i].output_bytes), (Status::Success, bytes as u64), "command {i}");
            run(&mut dev, vec![Request::copy(0, &[own_at(out_at(i), bytes)], window(out_at(i), bytes))]);
            // SAFETY: the window's copy of the output, written by the copy that completed.
            let got = unsafe { std::slice::from_raw_parts(host(window(out_at(i), bytes)), bytes) };
            let word = |at: usize| u64::from_le_bytes(got[at..at + 8].try_into().unwrap());
            assert_eq!(word(0), want.len() as u64);
            for (k, (o, l, d)) in want.iter().enumerate() {
                let e = 16 + k * peerpath_device::CHUNK_ENTRY_BYTES;
                assert!(word(e) == *o as u64 && word(e + 8) == *l as u64 && got[e + 16..e + 48] == d[..], "command {i} chunk {k}");
            }
        }
        // SHA-256 is the CPU's: refused, as is a range in the window.
        let sha = Request { tag: 0, function: Function::ChunkFingerprint { min_kib: 16, avg_kib: 64, max_kib: 256, sha256: true, at_end: true }, inputs: vec![own_at(1, 1 << 20)], output: own_at(room, room) };
        let window_input = Request { tag: 1, function: Function::ChunkFingerprint { min_kib: 16, avg_kib: 64, max_kib: 256, sha256: false, at_end: true }, inputs: vec![window(1, 1 << 20)], output: own_at(room, room) };
        let done = run(&mut dev, vec![sha, window_input]);
        assert_eq!(done.iter().map(|c| c.status).collect::<Vec<_>>(), [Status::Unsupported, Status::OutOfRange]);
        eprintln!("ran on {}", dev.description);
    }

    /// `member` (peerpath's, with its size field) with a zero byte between its
    /// deflate data and its trailer, and its size field raised to cover it.
    fn padded(member: &[u8]) -> Vec<u8> {
        let mut m = member.to_vec();
        m.insert(m.len() - 8, 0);
        let Some(peerpath_func::DeclaredSizes::Peerpath { member_bytes, .. }) = peerpath_func::MemberHeader::parse(&m).unwrap().sizes else { panic!("peerpath's size field") };
        let field = m.windows(4).position(|w| w == member_bytes.to_le_bytes()).expect("the size field's member length");
        m[field..field + 4].copy_from_slice(&(member_bytes + 1).to_le_bytes());
        m
    }

    /// The padded member is well formed but for the byte before its trailer:
    /// its header says its length, its trailer its CRC-32 and size, and the
    /// CPU device refuses it (`CorruptInput`) for that byte alone, which the
    /// GPU's test expects too.
    #[test]
    fn a_member_padded_before_its_trailer_is_corrupt_on_the_cpu_device() {
        let block = peerpath_func::sample::protein_like(100_000, 2);
        let mut out = vec![0u8; peerpath_func::member_bound_bytes(block.len())];
        let n = peerpath_func::encode_member(&mut peerpath_func::MemberEncoder::new(peerpath_func::Level::new(1).unwrap()), peerpath_func::Format::Gzip, &block, &mut out);
        let m = padded(&out[..n]);
        let header = peerpath_func::MemberHeader::parse(&m).unwrap();
        assert_eq!((header.sizes.unwrap().member_bytes(), peerpath_func::gzip::declared_output_bytes(&header, &m).unwrap()), (m.len(), block.len()));
        assert_eq!(m[m.len() - 8..m.len() - 4], peerpath_func::crc32(&block).to_le_bytes());
        let mut cpu = peerpath_device::CpuDevice::new(peerpath_device::CpuDeviceConfig::new(1 << 20)).expect("a CPU device");
        // SAFETY: the CPU device's memory, which no command uses yet.
        unsafe { cpu.memory().host_write(0, &m) };
        let decode = |input: &[u8]| Request { tag: 0, function: Function::GzipDecompressMember, inputs: vec![DeviceRange::new(0, input.len() as u64)], output: DeviceRange::new(512 << 10, 512 << 10) };
        let c = peerpath_device::run_to_completion(&mut cpu, vec![decode(&m)], Duration::from_secs(60)).unwrap();
        assert_eq!(c[0].status, Status::CorruptInput);
        // SAFETY: as above.
        unsafe { cpu.memory().host_write(0, &out[..n]) };
        let c = peerpath_device::run_to_completion(&mut cpu, vec![decode(&out[..n])], Duration::from_secs(60)).unwrap();
        assert_eq!((c[0].status, c[0].output_bytes), (Status::Success, block.len() as u64), "unpadded, it decodes");
    }

    /// On a GPU with nvCOMP: GzipDecompressMember decodes peerpath's members
    /// (and a BGZF one) in GPU memory to exactly their blocks, in one batch;
    /// a corrupt deflate byte, a wrong CRC-32 in a trailer and a size field
    /// that lies are `CorruptInput`, an output too small `OutputTooSmall`,
    /// as on the CPU device. Elsewhere: skipped, saying why.
    #[test]
    fn the_decompress_function_gives_the_cpu_oracles_bytes_on_a_gpu() {
        use peerpath_func::{encode_member, member_bound_bytes, Level, MemberEncoder};
        let room = 4usize << 20;
        let mut dev = match GpuDevice::open(&GpuDeviceConfig { inflate: true, ..GpuDeviceConfig::staged(0, 22 * room, 32) }) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU or nvCOMP here): {why}");
                return;
            }
        };
        assert!(dev.functions().contains(FunctionKind::GzipDecompressMember) && !dev.functions().contains(FunctionKind::GzipCompressMember) && !dev.functions().contains(FunctionKind::EcEncode), "decoding only");
        let own = dev.memory().dma_window().expect("a staged memory").0;
        let window = |at: usize, len: usize| DeviceRange::new(own + at as u64, len as u64);
        let own_at = |at: usize, len: usize| DeviceRange::new(at as u64, len as u64);
        let base = dev.memory().io_ptr(window(0, 22 * room)).expect("the window") as usize;
        let host = |r: DeviceRange| (base + (r.offset - own) as usize) as *mut u8;
        let run = |dev: &mut GpuDevice, r: Vec<Request>| {
            let mut done = peerpath_device::run_to_completion(dev, r, Duration::from_secs(60)).expect("the GPU answers");
            done.sort_by_key(|c| c.tag());
            done
        };
        let data = peerpath_func::sample::protein_like(3 << 20, 8);
        let blocks: Vec<&[u8]> = vec![&data[..1 << 20], &data[1 << 20..(2 << 20) + 77], &b""[..], &data[(2 << 20) + 77..], &data[..5]];
        let mut enc = MemberEncoder::new(Level::new(1).unwrap());
        let mut members: Vec<Vec<u8>> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut out = vec![0u8; member_bound_bytes(b.len())];
                let format = if i == 4 { peerpath_func::Format::Bgzf } else { peerpath_func::Format::Gzip };
                let n = encode_member(&mut enc, format, b, &mut out);
                out.truncate(n);
                out
            })
            .collect();
        // Four broken copies of member 1: a corrupt deflate byte, a wrong CRC-32, a size field
        // one short, and a byte between the deflate data and the trailer (the size field raised
        // to cover it: the CPU refuses the member, as the deflate data ends before its trailer).
        let mut bad = vec![members[1].clone(), members[1].clone(), members[1].clone(), members[1].clone()];
        let mid = bad[0].len() / 2;
        bad[0][mid] ^= 0x55;
        let l = bad[1].len();
        bad[1][l - 8] ^= 1;
        bad[2].pop();
        bad[3] = padded(&bad[3]);
        members.extend(bad);
        // Each member at an odd offset in GPU memory, its output room after it.
        let at = |i: usize| 2 * i * room + 3;
        for (i, m) in members.iter().enumerate() {
            // SAFETY: a window range no command uses yet.
            unsafe { std::ptr::copy_nonoverlapping(m.as_ptr(), host(window(at(i), m.len())), m.len()) };
            run(&mut dev, vec![Request::copy(0, &[window(at(i), m.len())], own_at(at(i), m.len()))]);
        }
        let decode = |i: usize, out: usize| Request { tag: i as u64, function: Function::GzipDecompressMember, inputs: vec![own_at(at(i), members[i].len())], output: own_at(at(i) + room, out) };
        let mut commands: Vec<Request> = (0..members.len()).map(|i| decode(i, room)).collect();
        commands.push(Request { tag: members.len() as u64, ..decode(0, (1 << 20) - 1) });
        let done = run(&mut dev, commands);
        let statuses: Vec<Status> = done.iter().map(|c| c.status).collect();
        assert_eq!(statuses, [vec![Status::Success; 5], vec![Status::CorruptInput; 4], vec![Status::OutputTooSmall]].concat());
        for (i, b) in blocks.iter().enumerate() {
            assert_eq!(done[i].output_bytes, b.len() as u64, "member {i}");
            run(&mut dev, vec![Request::copy(0, &[own_at(at(i) + room, b.len())], window(at(i) + room, b.len()))]);
            // SAFETY: the window's copy of the output, written by the copy that completed.
            let got = unsafe { std::slice::from_raw_parts(host(window(at(i) + room, b.len())), b.len()) };
            assert!(got == *b, "member {i} decoded to other bytes");
        }
        eprintln!("ran on {}", dev.description);
    }

    /// On a GPU: ScanCount gives the CPU device's counters for FASTA, FASTQ
    /// and lines, with and without a motif, at an odd offset, in one batch;
    /// a motif no table walks and a broken one get the statuses the CLI
    /// falls back on. Elsewhere: skipped, saying why.
    #[test]
    fn the_scan_function_gives_the_cpu_oracles_counts_on_a_gpu() {
        use peerpath_device::{CpuDevice, SCAN_RESULT_BYTES};
        let room = 8usize << 20;
        let mut dev = match GpuDevice::open(&GpuDeviceConfig { scan: true, ..GpuDeviceConfig::staged(0, 4 * room, 32) }) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                return;
            }
        };
        assert!(dev.functions().contains(FunctionKind::ScanCount) && !dev.functions().contains(FunctionKind::EcEncode), "scan only");
        let own = dev.memory().dma_window().expect("a staged memory").0;
        let window = |at: usize, len: usize| DeviceRange::new(own + at as u64, len as u64);
        let own_at = |at: usize, len: usize| DeviceRange::new(at as u64, len as u64);
        let base = dev.memory().io_ptr(window(0, 4 * room)).expect("the window") as usize;
        let host = |r: DeviceRange| (base + (r.offset - own) as usize) as *mut u8;
        let run = |dev: &mut dyn Device, r: Vec<Request>| {
            let mut done = peerpath_device::run_to_completion(dev, r, Duration::from_secs(60)).expect("the device answers");
            done.sort_by_key(|c| c.tag());
            done
        };
        // Protein FASTA (6 MiB), FASTQ and log lines, each cut short of its end; the motifs.
        let protein = peerpath_func::sample::protein_like(6 << 20, 5);
        let mut fasta = Vec::new();
        for (i, line) in protein.split_inclusive(|&b| b == b'\n').enumerate() {
            if i % 9 == 0 {
                fasta.extend_from_slice(format!(">sp|P{i} protein\n").as_bytes());
            }
            fasta.extend_from_slice(line);
        }
        let fastq: Vec<u8> = (0..20_000).flat_map(|i| format!("@r{i}\n{}\n+\n{}\n", "ACGTTGCA".repeat(1 + i % 17), "I".repeat(8 * (1 + i % 17))).into_bytes()).collect();
        let lines: Vec<u8> = (0..50_000).flat_map(|i| format!("{} request {i}\r\n", if i % 7 == 0 { "ERROR" } else { "info" }).into_bytes()).collect();
        let mut at = 1;
        let mut place = |data: &[u8]| {
            let r = own_at(at, data.len() - 3);
            // SAFETY: a window range no command uses yet (the data laid out back to back).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host(window(at, data.len())), data.len()) };
            at += data.len();
            r
        };
        let (fa, fq, ln) = (place(&fasta), place(&fastq), place(&lines));
        let motifs = [&b"K[LV]{2}"[..], b"CAACGTTGCAACGTTGCA$", b"^error", b"", b"\\bK", b"K("];
        let motif_at: Vec<DeviceRange> = motifs.iter().map(|m| place(&[*m, &b"..."[..]].concat())).collect();
        run(&mut dev, vec![Request::copy(0, &[window(1, at - 1)], own_at(1, at - 1))]);
        let result_at = |i: usize| 3 * room + 1 + i * 1024;
        let commands: Vec<Request> = [(fa, 0u8, 0usize, false, true, 50u32), (fq, 1, 1, false, false, 0), (ln, 2, 2, true, false, 0), (fa, 0, 3, false, false, 100), (ln, 2, 3, false, true, 0), (fa, 0, 4, false, true, 0), (fq, 1, 5, false, true, 0), (fq, 1, 1, false, true, 0)]
            .iter()
            .enumerate()
            .map(|(i, &(records, format, m, ignore_case, at_end, min_length))| Request::scan_count(i as u64, Function::ScanCount { format, ignore_case, at_end, min_length }, records, motif_at[m], own_at(result_at(i), SCAN_RESULT_BYTES)))
            .collect();
        let done = run(&mut dev, commands.clone());
        assert_eq!(done.iter().map(|c| c.status).collect::<Vec<_>>()[5..], [Status::Unsupported, Status::InvalidField, Status::CorruptInput], "a Unicode word boundary: no table; a broken motif; FASTQ whose last record is cut short, at the end");
        // The CPU device on the same bytes and commands.
        let mut cpu = CpuDevice::new(peerpath_device::CpuDeviceConfig::new(4 * room)).expect("a CPU device");
        // SAFETY: the CPU device's memory, which no command uses yet.
        unsafe { cpu.memory().host_write(1, std::slice::from_raw_parts(host(window(1, at - 1)), at - 1)) };
        let want = run(&mut cpu, commands[..5].to_vec());
        assert_eq!(run(&mut cpu, commands[7..].to_vec())[0].status, Status::CorruptInput, "the CPU device's answer to the cut-short record");
        run(&mut dev, vec![Request::copy(0, &[own_at(result_at(0), 5 * 1024)], window(result_at(0), 5 * 1024))]);
        for (i, w) in want.iter().enumerate() {
            assert_eq!((done[i].status, done[i].output_bytes), (w.status, w.output_bytes), "command {i}");
            let mut cpu_out = vec![0u8; SCAN_RESULT_BYTES];
            // SAFETY: the CPU device's output range, written by the command that completed.
            unsafe { cpu.memory().host_read(result_at(i) as u64, &mut cpu_out) };
            // SAFETY: the window's copy of the GPU's outputs, written by the copy that completed.
            let got = unsafe { std::slice::from_raw_parts(host(window(result_at(i), SCAN_RESULT_BYTES)), SCAN_RESULT_BYTES) };
            assert!(got == &cpu_out[..], "command {i}: the GPU's counters differ from the CPU device's");
            assert!(u64::from_le_bytes(got[8..16].try_into().unwrap()) > 0, "command {i} matched nothing: a weak test");
        }
        eprintln!("ran on {}", dev.description);
    }

    /// The GPU reads a file into its own memory and writes one from it itself
    /// through cuFile (`--gpu-io cufile`: in compatibility mode too, where no
    /// direct path exists): the bytes in GPU memory are the file's, the last
    /// read short at its end, and the file written holds them; an unknown file
    /// number and unaligned reads are refused.
    #[test]
    fn the_gpu_reads_and_writes_registered_files_through_cufile() {
        let room = 8usize << 20;
        let config = GpuDeviceConfig { coding: true, io: GpuIo::Cufile(None), ..GpuDeviceConfig::staged(0, 2 * room, 16) };
        let mut dev = match GpuDevice::open(&config) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("SKIPPED (no GPU, or no cuFile, here): {why}");
                return;
            }
        };
        let reads = dev.storage_io().expect("it reads storage itself").clone();
        assert!(dev.functions().contains(FunctionKind::StorageRead) && reads.what.starts_with("cuFile"), "{reads:?}");
        assert!(dev.description().unwrap().contains("storage reads by the GPU itself: cuFile"), "{}", dev.description().unwrap());
        let data = crate::kernels::tests::bytes((5 << 20) + 123, 5);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("source");
        std::fs::write(&path, &data).unwrap();
        let f = dev.register_file(&std::fs::File::open(&path).unwrap()).unwrap();
        let own = dev.memory().dma_window().expect("a staged memory").0;
        let base = dev.memory().io_ptr(DeviceRange::new(own, room as u64)).expect("the window") as usize;
        let read = |tag, offset: u64, at: u64, len: u64| Request { tag, function: Function::StorageRead { file: f, offset }, inputs: Vec::new(), output: DeviceRange::new(at, len) };
        let run = |dev: &mut GpuDevice, r: Vec<Request>| {
            let mut done = peerpath_device::run_to_completion(dev, r, Duration::from_secs(60)).expect("the GPU answers");
            done.sort_by_key(|c| c.tag());
            done
        };
        let done = run(&mut dev, vec![read(0, 0, 0, 4 << 20), read(1, 4 << 20, 4 << 20, 4 << 20)]);
        assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, 4 << 20));
        assert_eq!((done[1].status, done[1].output_bytes), (Status::Success, (data.len() - (4 << 20)) as u64), "short at the end");
        let done = run(&mut dev, vec![Request::copy(2, &[DeviceRange::new(0, data.len() as u64)], DeviceRange::new(own, data.len() as u64))]);
        assert_eq!(done[0].status, Status::Success);
        // SAFETY: the window's first bytes, written by the copy that completed.
        let got = unsafe { std::slice::from_raw_parts(base as *const u8, data.len()) };
        assert!(got == &data[..], "GPU memory holds the file's bytes");
        let bad = |tag, function, at, len| Request { tag, function, inputs: Vec::new(), output: DeviceRange::new(at, len) };
        let done = run(&mut dev, vec![
            bad(3, Function::StorageRead { file: f + 1, offset: 0 }, 0, 4096),
            bad(4, Function::StorageRead { file: f, offset: 100 }, 0, 4096),
            bad(5, Function::StorageRead { file: f, offset: 0 }, own, 4096),
        ]);
        assert_eq!(done.iter().map(|c| c.status).collect::<Vec<_>>(), [Status::StorageError, Status::InvalidField, Status::OutOfRange], "unknown file, unaligned, outside GPU memory");
        dev.unregister_file(f);
        // Written back from GPU memory to another file, through cuFile.
        let out_path = dir.path().join("written");
        let out = std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&out_path).unwrap();
        let w = dev.register_file(&out).unwrap();
        let write = Request { tag: 6, function: Function::StorageWrite { file: w, offset: 4096 }, inputs: vec![DeviceRange::new(0, 4 << 20)], output: DeviceRange::new(0, 0) };
        let done = run(&mut dev, vec![write]);
        assert_eq!((done[0].status, done[0].output_bytes), (Status::Success, 4 << 20));
        let written = std::fs::read(&out_path).unwrap();
        assert!(written.len() == 4096 + (4 << 20) && written[4096..] == data[..4 << 20], "the file holds GPU memory's bytes");
        dev.unregister_file(w);
        assert!(dev.profile().unwrap().contains("its own storage reads and writes: 4"), "{}", dev.profile().unwrap());
    }

    /// An nvCOMP and a cuFile named that do not load are said beside the GPU's own reason (on a
    /// machine without one: "no CUDA driver" alone hid them), each with why.
    #[test]
    fn opening_says_every_library_named_that_does_not_load() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("libnvcomp.so.6");
        std::fs::write(&text, "not a library\n".repeat(4)).unwrap();
        let config = GpuDeviceConfig { compress: true, nvcomp: Some(text), io: GpuIo::Cufile(Some(dir.path().to_path_buf())), ..GpuDeviceConfig::staged(0, 64 << 20, 16) };
        let why = GpuDevice::open(&config).err().expect("no nvCOMP in a text file");
        for needle in ["nvCOMP not loaded from --nvcomp (", "not a shared library (no ELF header", "; and cuFile not loaded from --cufile (", "a directory, not a shared library"] {
            assert!(why.contains(needle), "{needle:?} not in {why}");
        }
    }

    #[test]
    fn opening_a_gpu_where_there_is_none_says_why() {
        let config = GpuDeviceConfig { name: "gpu0".into(), ordinal: 0, own_bytes: 64 << 20, window_bytes: 16 << 20, algorithm: 2, queue_depth: 64, nvcomp: None, compress: true, coding: false, crypt: false, dedup: false, scan: false, inflate: false, streams: 2, staging: Staging::Device, gather: Gather::default(), io: GpuIo::Staged, map_memory_files: None, command_timeout: DEFAULT_COMMAND_TIMEOUT };
        match GpuDevice::open(&config) {
            Ok(d) => eprintln!("a GPU is present: {}", d.description),
            Err(why) => {
                eprintln!("SKIPPED (no GPU here): {why}");
                assert!(!why.is_empty());
            }
        }
    }
}
