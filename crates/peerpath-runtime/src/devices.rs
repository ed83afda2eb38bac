//! The devices a job runs its function on: what to start ([`Compute`],
//! [`EmulatedSpec`]), starting emulated CSPs, and what the report says of
//! each device. The executor (`offload.rs`) drives any [`Device`]; nothing
//! here is on its path.

use crate::error::{JobError, Result};
use crate::offload::{max_inputs, usual_peak_bytes, Params};
use crate::report::{count, DeviceReport, Fallback, Quoted};
use peerpath_device::{Device, DeviceStats};
use peerpath_mem::{align_down, free_bytes};
use peerpath_metrics::{process_cpu, LedgerSummary};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a compression job runs its function.
#[derive(Clone, Debug)]
pub enum Compute {
    /// Host CPU worker threads (`--threads`), data in host memory.
    Cpu,
    /// Emulated CSP processes started for the job, each serving its own
    /// group of sources and targets.
    Emulated(Box<EmulatedSpec>),
    /// A GPU (CUDA and nvCOMP, loaded at run time), its memory staged
    /// through a pinned host window.
    Gpu(Box<GpuSpec>),
}

/// How to open the GPU device of a job.
#[derive(Clone, Debug)]
pub struct GpuSpec {
    /// Which GPU.
    pub ordinal: usize,
    /// GPU memory the job computes in.
    pub memory_bytes: usize,
    /// Pinned host memory storage DMAs into and out of.
    pub window_bytes: usize,
    /// nvCOMP gzip algorithm (0 fastest .. 5 best ratio); 2 by default: a
    /// better ratio than ISA-L's level 1 at about the same speed as 1.
    pub algorithm: i32,
    /// nvCOMP's library (`None`: $PEERPATH_NVCOMP, the loader's path, Python's wheel).
    pub nvcomp: Option<PathBuf>,
    /// Commands in flight at most (batches are what fill a GPU).
    pub queue_depth: usize,
    /// CUDA streams (one worker thread each) whose batches overlap.
    pub streams: usize,
    /// Who stages chunks between the pinned window and GPU memory.
    pub staging: peerpath_gpu::Staging,
    /// How big a batch (one nvCOMP launch) a worker waits for.
    pub gather: peerpath_gpu::Gather,
    /// Uncompressed bytes per read and per compress command (its members in one launch).
    pub chunk_bytes: usize,
    /// Whether the GPU reads sources and writes targets itself, through
    /// cuFile (where cuFile reports a direct path, by default).
    pub io: peerpath_gpu::GpuIo,
    /// Whether the GPU's copy engine reads sources and writes targets of a memory file system
    /// itself, mapped and registered with CUDA this many bytes at a time
    /// (`--gpu-memory-files mapped`, `--gpu-map-granule`); `None`: staged through the window.
    pub map_memory_files: Option<u64>,
    /// Commands in flight and none completing for this long: the GPU hangs, and fails.
    pub command_timeout: Duration,
    /// The job's queue depth where the GPU does not start, where it is not the job's own
    /// (which is then the GPU's: `--queue-depth` not given): the host CPU's usual one.
    pub cpu_queue_depth: Option<u32>,
}

impl Default for GpuSpec {
    fn default() -> Self {
        GpuSpec { ordinal: 0, memory_bytes: 4 << 30, window_bytes: 128 << 20, algorithm: 2, nvcomp: None, queue_depth: 256, streams: 1, staging: peerpath_gpu::Staging::Commands, gather: peerpath_gpu::Gather::default(), chunk_bytes: 16 << 20, io: peerpath_gpu::GpuIo::Auto(None), map_memory_files: None, command_timeout: peerpath_gpu::DEFAULT_COMMAND_TIMEOUT, cpu_queue_depth: None }
    }
}

/// How to start the emulated devices of a job.
#[derive(Clone, Debug)]
pub struct EmulatedSpec {
    /// Devices, at most one per source.
    pub devices: usize,
    pub memory_bytes: usize,
    /// Worker threads per device.
    pub workers: u32,
    /// The program that serves a device (`None`: this executable, `csp serve`).
    pub program: Option<PathBuf>,
    /// Seeded faults to inject (testing aid).
    pub faults: Option<peerpath_device::FaultConfig>,
    /// A device with commands in flight and none completing for this long is hung.
    pub command_timeout: Duration,
    /// Where each device's memory comes from.
    pub memory_from: DeviceMemoryFrom,
    /// With shared memory: the directory its file goes in (`None`:
    /// /dev/shm, or the temporary directory where /dev/shm is too small).
    /// A tmpfs mounted with `huge=within_size` gives it 2 MiB pages.
    pub memory_dir: Option<PathBuf>,
}

/// Where an emulated device's memory comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceMemoryFrom {
    /// A shared-memory file the device creates and the host maps.
    Shm,
    /// P2P memory of the PCI function `bdf` (`<sysfs>/bus/pci/devices/<bdf>/p2pmem/allocate`,
    /// e.g. an NVMe CMB): mapped by the host, inherited by the device (a
    /// fork), so SSDs DMA into it peer to peer. `memory_bytes` is capped at
    /// what the provider has available. Streams the topology under `sysfs`
    /// says cannot reach it peer to peer run on the CPU, said so.
    P2p { sysfs: PathBuf, bdf: String },
}

impl DeviceMemoryFrom {
    /// The provider's sysfs directory, for P2P memory.
    pub fn p2p_device_dir(&self) -> Option<PathBuf> {
        match self {
            DeviceMemoryFrom::Shm => None,
            DeviceMemoryFrom::P2p { sysfs, bdf } => Some(sysfs.join("bus/pci/devices").join(bdf)),
        }
    }
}

impl EmulatedSpec {
    /// One device with the seed's 512 MiB of memory and one worker per core.
    pub fn new() -> EmulatedSpec {
        EmulatedSpec {
            devices: 1,
            memory_bytes: 512 << 20,
            workers: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
            program: None,
            faults: None,
            command_timeout: Duration::from_secs(10),
            memory_from: DeviceMemoryFrom::Shm,
            memory_dir: None,
        }
    }

    /// Where a device of this spec with shared memory puts its memory file:
    /// sets `dir` (a device's `ServeOptions::dir`) as this spec's devices
    /// get it (`memory_dir`, else /dev/shm where it has room, else the
    /// temporary directory) and says where, in words for a report. As for
    /// them, the files that dead jobs' devices left where it may go are
    /// removed first (see [`EmulatedSpec::job_device_name`]). For devices
    /// started outside a job (the CLI's device jobs).
    pub fn place_shared_memory(&self, dir: &mut PathBuf) -> String {
        sweep_and_place_shared_memory(self, dir)
    }

    /// The name of a device this process starts for a job, `pp<pid>-<tag><n>`
    /// (`tag`: lowercase letters, what the device is for: `csp` for
    /// compress's, `enc`, `ec`, ...; `n` counts the devices this process
    /// has started): the name by which a later job knows its files
    /// (`peerpath-csp-pp<pid>-<tag><n>.*`) as a job's device whose host
    /// is gone once this process is, and removes them.
    pub fn job_device_name(tag: &str) -> String {
        debug_assert!(!tag.is_empty() && tag.bytes().all(|b| b.is_ascii_lowercase()), "a job device's tag is lowercase letters: {tag:?}");
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        format!("pp{}-{tag}{}", std::process::id(), STARTED.fetch_add(1, Ordering::Relaxed))
    }
}

impl Default for EmulatedSpec {
    fn default() -> Self {
        Self::new()
    }
}

/// The devices a job may place streams on: started only once the job knows
/// which streams go to them (and how big those are).
pub(crate) struct DeviceSet<'a> {
    /// Where their memory comes from (P2P memory: the topology decides
    /// which streams may use it).
    pub memory_from: DeviceMemoryFrom,
    /// Whether storage I/O lands in a host window the device copies from
    /// (a GPU's pinned window): then page-cache I/O is allowed where a file
    /// refuses O_DIRECT (a memory file system), recorded as the kernel's copy.
    pub host_window: bool,
    /// Worker threads in each, and where they run, for the report.
    pub workers: usize,
    /// The report's words for them ([`describe`]): one device's noun, then after ", " what it
    /// runs, with `{workers}` (counted worker threads) and `{library}`.
    pub what: &'static str,
    /// What the job's figures are when these devices did the work.
    pub provenance: crate::report::Provenance,
    /// Uncompressed bytes per read and per compress command (a whole number
    /// of members; at least this much): 1 MiB, more for a GPU (`--gpu-chunk`).
    pub chunk_bytes: usize,
    /// Starts devices for streams of these sizes.
    #[allow(clippy::type_complexity)]
    pub start: Box<dyn FnOnce(&[Option<u64>], &Params, &mut Vec<Fallback>) -> Result<Vec<JobDevice>> + 'a>,
}

impl<'a> DeviceSet<'a> {
    /// The emulated CSPs `spec` describes.
    pub fn emulated(spec: &'a EmulatedSpec, no_fallback: bool) -> DeviceSet<'a> {
        DeviceSet {
            memory_from: spec.memory_from.clone(),
            host_window: false,
            workers: spec.workers.max(1) as usize,
            chunk_bytes: 1 << 20,
            what: "emulated CSP device, {workers} each, {library} inside the device process",
            provenance: crate::report::Provenance::MeasuredEmulated,
            start: Box::new(move |sizes, params, fallbacks| start_emulated(spec, sizes, params, no_fallback, fallbacks)),
        }
    }

    /// The GPU `spec` describes: one device for every placed stream. A GPU
    /// that cannot be opened (no driver, no nvCOMP, no memory) is a fallback
    /// with its reason, or the job's failure with `no_fallback`.
    pub fn gpu(spec: &'a GpuSpec, no_fallback: bool) -> DeviceSet<'a> {
        DeviceSet {
            memory_from: DeviceMemoryFrom::Shm,
            host_window: true,
            workers: spec.streams.max(1),
            chunk_bytes: spec.chunk_bytes,
            what: "GPU device, nvCOMP batched gzip (peerpath's members; {library} asked: the device names the nvCOMP algorithm used for it)",
            provenance: crate::report::Provenance::MeasuredDevice,
            start: Box::new(move |_sizes, _params, fallbacks| {
                // `--gpu-io auto` asks cuFile only where a direct path can exist at all.
                let (io, not_asked) = match &spec.io {
                    peerpath_gpu::GpuIo::Auto(_) => match cufile_worth_asking(Path::new("/sys")) {
                        Ok(()) => (spec.io.clone(), None),
                        Err(why) => (peerpath_gpu::GpuIo::Staged, Some(why)),
                    },
                    r => (r.clone(), None),
                };
                let config = peerpath_gpu::GpuDeviceConfig {
                    name: format!("gpu{}", spec.ordinal),
                    ordinal: spec.ordinal,
                    own_bytes: spec.memory_bytes,
                    window_bytes: spec.window_bytes,
                    algorithm: spec.algorithm,
                    queue_depth: spec.queue_depth,
                    nvcomp: spec.nvcomp.clone(),
                    compress: true,
                    coding: false,
                    crypt: false,
                    dedup: false,
                    scan: false,
                    inflate: false,
                    streams: spec.streams,
                    staging: spec.staging,
                    gather: spec.gather,
                    io,
                    map_memory_files: spec.map_memory_files,
                    command_timeout: spec.command_timeout,
                };
                // The host's command timeout is not the device's: a kept GPU takes the job's.
                let key = format!("{:?}", peerpath_gpu::GpuDeviceConfig { command_timeout: Duration::ZERO, ..config.clone() });
                if let Some(mut kept) = take_kept(&key) {
                    kept.device.set_command_timeout(spec.command_timeout);
                    return Ok(vec![kept]);
                }
                match peerpath_gpu::GpuDevice::open(&config) {
                    Ok(d) => {
                        let mut kind = format!("{}; {}", d.description, gpu_storage_path(Path::new("/sys"), &d.pci_address, d.storage_io().is_some()));
                        if let Some(why) = not_asked {
                            kind += &format!(" (--gpu-io auto did not ask cuFile: {why})");
                        }
                        Ok(vec![JobDevice::new(Box::new(d), kind).kept_as(Some(key))])
                    }
                    Err(why) if no_fallback => Err(JobError::Device { detail: format!("GPU unavailable: {why} (--no-fallback)") }),
                    Err(why) => {
                        fallbacks.push(Fallback::DeviceNotStarted { device: format!("GPU {}", spec.ordinal), why });
                        Ok(Vec::new())
                    }
                }
            }),
        }
    }
}

/// Whether cuFile can find a direct path into GPU memory on this machine at all, as sysfs and
/// the kernel's config say without loading it (its opening takes time, and it writes its log
/// where the job runs): not without nvidia-fs and with a kernel built without P2PDMA. Where the
/// topology cannot say, cuFile is asked.
fn cufile_worth_asking(sysfs: &Path) -> std::result::Result<(), String> {
    let Ok(topo) = peerpath_topo::Topology::from_sysfs(sysfs) else { return Ok(()) };
    let nvidia_fs = topo.gpu_modules.map(|m| m.nvidia_fs);
    match (nvidia_fs, topo.kernel.as_ref().and_then(|k| k.p2pdma.map(|p| (p, k.release.clone())))) {
        (Some(false), Some((false, release))) => Err(format!("nvidia-fs is not loaded and the kernel ({}) is built without P2PDMA: no direct path for it to find", release.as_deref().unwrap_or("release unknown"))),
        _ => Ok(()),
    }
}

/// How storage reaches the GPU at `pci` (`0000:00:06.0`), as the topology read from `sysfs`
/// says, for the report; where a direct path exists but the device does not read its sources
/// itself (`reads_itself`: `--gpu-io`, cuFile's answer), it says it stages all the same.
fn gpu_storage_path(sysfs: &Path, pci: &str, reads_itself: bool) -> String {
    let topo = match peerpath_topo::Topology::from_sysfs(sysfs) {
        Ok(t) => t,
        Err(e) => return format!("storage -> GPU memory: staged through pinned host memory (the topology could not be read: {e})"),
    };
    match topo.devices.iter().find(|d| d.bdf.to_string() == pci) {
        Some(d) => {
            let p = peerpath_topo::gpu::memory_path(&topo, d);
            if p.direct && !reads_itself {
                format!("{}; the device stages through its pinned host window all the same (--gpu-io, or cuFile's answer, in its description)", p.describe())
            } else {
                p.describe()
            }
        }
        None => format!("storage -> GPU memory: staged through pinned host memory (no PCI function {pci} in {})", sysfs.display()),
    }
}

/// The report's engine line for `n` devices of a set (`what`: its noun counted, its
/// `{workers}` and `{library}` filled in): "1 GPU device, ...", "2 CPU devices, 1 worker thread
/// each, ...".
pub(crate) fn describe(what: &str, workers: usize, n: usize, library: &str) -> String {
    let (noun, runs) = what.split_once(", ").expect("a device set's words name one device, then what it runs");
    format!("{}, {}", count(n, noun), runs.replace("{workers}", &count(workers, "worker thread")).replace("{library}", library))
}

/// A device the job drives, and what its report is measured from.
pub(crate) struct JobDevice {
    pub device: Box<dyn Device>,
    /// The streams (indices into the executor's streams) it serves.
    pub streams: Vec<usize>,
    /// What it is, in words, for the report (as it was opened: the report adds, for a kept
    /// device, the jobs it served).
    pub kind: String,
    /// Its process's CPU time and its statistics when the job started with
    /// it, where it says (the report counts from there).
    cpu_at_start: Option<Duration>,
    stats_at_start: Option<DeviceStats>,
    /// Bytes of its memory that were resident when it had started.
    populated_bytes: usize,
    /// What it is kept as across jobs, where it may be ([`keep_devices_across_jobs`]),
    /// and how many jobs it served before this one.
    keep: Option<String>,
    jobs_before: u64,
    /// The job ended with it working: it may serve the next.
    pub healthy: bool,
}

impl JobDevice {
    /// A started device, with what it has spent so far.
    pub fn new(mut device: Box<dyn Device>, kind: String) -> JobDevice {
        let cpu_at_start = device.process_id().and_then(process_cpu);
        let stats_at_start = device.stats();
        // What the device made resident (a file on a disk, or P2P memory: none).
        let populated_bytes = device.memory().mapped_region().and_then(|r| r.allocated_bytes()).unwrap_or(0) as usize;
        JobDevice { device, streams: Vec::new(), kind, cpu_at_start, stats_at_start, populated_bytes, keep: None, jobs_before: 0, healthy: false }
    }

    /// A device to keep, as `key`, when the process keeps devices and the job ends with it working.
    fn kept_as(mut self, key: Option<String>) -> JobDevice {
        self.keep = key.filter(|_| keeping());
        self
    }

    /// The report's entry: `sources` it served, `members` of theirs it
    /// made, its `failure`, and the time the job drove it (`drive_s`).
    pub fn report(&mut self, sources: Vec<String>, members: u64, failure: Option<String>, drive_s: f64, ledger: &LedgerSummary) -> DeviceReport {
        let stats = if failure.is_none() { self.device.stats() } else { None };
        // A device kept from earlier jobs counts from this job's start.
        let before = |kind| self.stats_at_start.as_ref().map_or(0, |st| st.function(kind).commands);
        let mut commands = BTreeMap::new();
        for f in stats.iter().flat_map(|st| &st.functions) {
            if let Some(kind) = f.function {
                let n = f.commands.saturating_sub(before(kind));
                if n > 0 {
                    commands.insert(format!("{kind:?}"), n);
                }
            }
        }
        let process_cpu_s = match (self.cpu_at_start, self.device.process_id().and_then(process_cpu)) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64()),
            _ => None,
        };
        // Busy: time the device's workers spent running this job's commands;
        // utilisation: of its workers' time while the job drove it.
        let busy_s = match (&self.stats_at_start, &stats) {
            (Some(a), Some(st)) => Some(st.total().busy_ns.saturating_sub(a.total().busy_ns) as f64 / 1e9),
            _ => None,
        };
        let utilisation_pct = busy_s.zip(self.device.parallelism()).map(|(b, p)| 100.0 * b / (p as f64 * drive_s.max(1e-9)));
        let memory = self.device.memory();
        let pages = memory.mapped_region().filter(|r| r.p2p_info().is_none()).and_then(|r| r.huge_page_use());
        DeviceReport {
            name: self.device.name().to_string(),
            kind: match self.jobs_before {
                0 => self.kind.clone(),
                n => format!("kept open across jobs (this is its job {}); {}", n + 1, self.kind),
            },
            memory_bytes: memory.len(),
            sources,
            sources_bytes: None,
            members,
            commands,
            memory_traffic_bytes: ledger.device_memory_bytes.get(&memory.domain().to_string()).copied().unwrap_or(0),
            process_cpu_s,
            // A device started for this job: all it has spent is its start
            // (one kept from earlier jobs spent it then).
            start_cpu_s: self.cpu_at_start.filter(|_| self.jobs_before == 0).map(|c| c.as_secs_f64()),
            populated_bytes: self.populated_bytes,
            busy_s,
            utilisation_pct,
            memory_resident_bytes: pages.map(|p| p.0),
            memory_huge_page_bytes: pages.map(|p| p.1),
            failure,
            profile: self.device.profile(),
            storage_io: None,
            blocks_in_flight: None,
        }
    }
}

/// Whether this process keeps the devices of a job that ended well for its
/// next jobs (the job server does: a GPU's context, pinned window and
/// memory, an emulated CSP's process, are then opened once).
static KEEP: AtomicBool = AtomicBool::new(false);
/// The devices kept, each with what it was opened as (its key) and its description.
static KEPT: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
/// Where device processes that may be kept write their messages: they
/// outlive the job, so not its standard error.
static KEPT_LOG: Mutex<Option<Arc<std::os::fd::OwnedFd>>> = Mutex::new(None);

struct Kept {
    key: String,
    device: Box<dyn Device>,
    kind: String,
    jobs: u64,
}

/// Keeps the devices of this process's jobs for its next jobs, device
/// processes writing their messages to `log` (`None`: stops keeping, and
/// closes what is kept).
pub fn keep_devices_across_jobs(log: Option<std::os::fd::OwnedFd>) {
    KEEP.store(log.is_some(), Ordering::Release);
    if log.is_none() {
        KEPT.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
    *KEPT_LOG.lock().unwrap_or_else(|p| p.into_inner()) = log.map(Arc::new);
}

/// Whether this process keeps devices across jobs (a job server).
pub(crate) fn keeping() -> bool {
    KEEP.load(Ordering::Acquire)
}

/// A kept device opened as `key`, with its description and the jobs it
/// served, if one is kept and still there (one whose process ended since is
/// dropped).
fn take_kept(key: &str) -> Option<JobDevice> {
    if !keeping() {
        return None;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    while let Some(at) = kept.iter().position(|k| k.key == key) {
        let k = kept.swap_remove(at);
        if k.device.hangup_fd().is_some_and(readable_now) {
            continue; // it died between jobs: dropped, a new one is opened
        }
        let mut device = k.device;
        device.reset_profile();
        let mut jd = JobDevice::new(device, k.kind);
        jd.keep = Some(k.key);
        jd.jobs_before = k.jobs;
        return Some(jd);
    }
    None
}

/// The job is over: a device that may be kept, ended well and has nothing
/// in flight waits for the next job; any other closes here. Only the last
/// job's devices are kept: devices opened with other options close when
/// these are kept (each holds its memory, a GPU's or half a GiB of tmpfs;
/// a job server that ran jobs with many settings held them all).
pub(crate) fn give_back(jd: JobDevice) {
    let JobDevice { device, keep, healthy, kind, jobs_before, .. } = jd;
    if let (Some(key), true, 0) = (keep, healthy && keeping(), device.in_flight()) {
        let others: Vec<Kept> = {
            let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
            let (same, others) = std::mem::take(&mut *kept).into_iter().partition(|k| k.key == key);
            *kept = same;
            kept.push(Kept { key, device, kind, jobs: jobs_before + 1 });
            others
        };
        drop(others); // closed outside the lock: a device process is waited for
    }
}

/// Whether `fd` is readable at once (a device's hang-up descriptor: it is gone).
fn readable_now(fd: std::os::fd::RawFd) -> bool {
    peerpath_device::poll_fds(&[(fd, libc::POLLIN)], Some(Duration::ZERO)).is_ok_and(|ev| ev[0] != 0)
}

/// Starts the emulated devices of a job for streams of these `sizes`
/// (device k will serve streams k, k + n, ...: its memory is made resident
/// for them). A device that does not start is a fallback (its streams go to
/// the others, or to the CPU), or the job's failure with `no_fallback`.
pub(crate) fn start_emulated(spec: &EmulatedSpec, sizes: &[Option<u64>], params: &Params, no_fallback: bool, fallbacks: &mut Vec<Fallback>) -> Result<Vec<JobDevice>> {
    use peerpath_device::{emulated::ServeOptions, EmulatedCsp, FaultyDevice, SpawnOptions};
    let count = spec.devices.clamp(1, sizes.len().max(1));
    if count < spec.devices {
        fallbacks.push(Fallback::FewerDevices { asked: spec.devices, started: count });
    }
    let mut devices = Vec::new();
    // Devices without faults in shared memory may be kept across jobs (P2P
    // memory is the topology's: mapped for each job).
    // The host's command timeout is not the device's: a kept device takes the job's.
    let key = (spec.faults.is_none() && spec.memory_from == DeviceMemoryFrom::Shm)
        .then(|| format!("emulated {} MiB, {} workers, {:?}, {:?}", spec.memory_bytes >> 20, spec.workers, spec.program, spec.memory_dir));
    for d in 0..count {
        if let Some(mut kept) = key.as_deref().and_then(take_kept) {
            kept.device.set_command_timeout(spec.command_timeout);
            devices.push(kept);
            continue;
        }
        // Named in the order this process starts them (a kept device keeps its name).
        let name = EmulatedSpec::job_device_name("csp");
        let mut serve = ServeOptions::new(&name);
        serve.memory_bytes = spec.memory_bytes;
        serve.workers = spec.workers.max(1);
        serve.duplicate_completion_after = spec.faults.as_ref().and_then(|f| f.duplicate_completion_after);
        let group: Vec<Option<u64>> = sizes.iter().skip(d).step_by(count).copied().collect();
        serve.populate_bytes = usual_peak_bytes(&group, max_inputs(Some(serve.workers as usize), group.len(), params), params).min(serve.memory_bytes);
        let mut so = SpawnOptions::new(serve);
        so.program = spec.program.clone();
        so.command_timeout = spec.command_timeout;
        if key.is_some() {
            so.stderr = KEPT_LOG.lock().unwrap_or_else(|p| p.into_inner()).clone();
        }
        let (started, memory_at) = match &spec.memory_from {
            DeviceMemoryFrom::Shm => {
                let memory_at = sweep_and_place_shared_memory(spec, &mut so.serve.dir);
                (EmulatedCsp::spawn(&so).map_err(|e| e.to_string()), memory_at)
            }
            from @ DeviceMemoryFrom::P2p { sysfs, bdf } => match from.p2p_device_dir().filter(|d| d.exists()) {
                // Said by the options that name it (it read "<root>/bus/pci/devices/<bdf>/p2pmem/available: No such file").
                None => (Err(format!("--device-memory-from p2p:{bdf}: no such PCI function under --sysfs {}", Quoted(sysfs))), String::new()),
                Some(device_dir) => match map_p2p_memory(&device_dir, spec.memory_bytes) {
                    Ok((region, memory_at)) => (EmulatedCsp::fork_with_memory(&so, region).map_err(|e| e.to_string()), memory_at),
                    Err(e) => (Err(e), String::new()),
                },
            },
        };
        let device: Box<dyn Device> = match started {
            Ok(emu) => match &spec.faults {
                Some(f) => Box::new(FaultyDevice::new(emu, f.clone())),
                None => Box::new(emu),
            },
            Err(e) if no_fallback => return Err(JobError::Device { detail: format!("emulated device {d} did not start: {e} (--no-fallback)") }),
            Err(why) => {
                fallbacks.push(Fallback::DeviceNotStarted { device: format!("emulated device {d}"), why });
                continue;
            }
        };
        let kind = match device.process_id() {
            Some(pid) => format!("emulated CSP process (pid {pid}), {} workers, {memory_at}", spec.workers.max(1)),
            None => "emulated CSP".into(),
        };
        devices.push(JobDevice::new(device, kind).kept_as(key.clone()));
    }
    Ok(devices)
}

/// [`place_shared_memory`], with the files of dead jobs' devices removed
/// first from every directory it may pick (`memory_dir`; else `dir`, /dev/shm,
/// and the temporary directory), before the room there is counted (a dead
/// job's file takes it): a job killed while its device's memory was in the
/// temporary directory leaves its files there, whichever the next one picks.
fn sweep_and_place_shared_memory(spec: &EmulatedSpec, dir: &mut PathBuf) -> String {
    match &spec.memory_dir {
        Some(d) => remove_dead_jobs_devices(d),
        None => {
            let tmp = std::env::temp_dir();
            remove_dead_jobs_devices(dir);
            if tmp != *dir {
                remove_dead_jobs_devices(&tmp);
            }
        }
    }
    place_shared_memory(spec, dir)
}

/// Removes the files of emulated devices that jobs started (named
/// `peerpath-csp-pp<host pid>-<tag><n>`, [`EmulatedSpec::job_device_name`]:
/// compress's `csp`, the CLI's device jobs' `enc`, `ec`, `scan`, ...) whose host process is gone: a job
/// killed with its process group (SIGKILL reaches the device too, as
/// `timeout -s KILL` or a cgroup's kill sends it) leaves its device's
/// memory file, half a GiB of tmpfs, which nothing else would remove.
/// Devices started by hand (`csp serve --name`) are not touched.
fn remove_dead_jobs_devices(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(host) = name.to_str().and_then(jobs_device_host) else { continue };
        let gone = host_gone(host);
        // A device whose socket still answers is alive whatever its name says (started by
        // hand under such a name, or a job's in another PID namespace sharing this directory).
        let stem = name.to_str().and_then(|n| n.rsplit_once('.')).map_or("", |(stem, _)| stem);
        // Nor is one that holds its name's lock (it has taken the name and not yet bound its
        // socket): only the holder removes a device's files.
        let lock_held = || {
            std::fs::File::open(dir.join(format!("{stem}.lock"))).is_ok_and(|f| {
                // SAFETY: flock on a descriptor we own, released when it closes here.
                unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX | libc::LOCK_NB) != 0 }
            })
        };
        if gone && std::os::unix::net::UnixStream::connect(dir.join(format!("{stem}.sock"))).is_err() && !lock_held() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Whether process `pid` (not this one) is gone: there is none, or it has ended and waits only to
/// be reaped (a zombie whose every thread has exited: a job killed with its parent, as `timeout -s
/// KILL` kills itself with its group, is reparented, and init may reap it only later).
fn host_gone(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    // SAFETY: kill with signal 0 only asks whether the process exists.
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
        field("State:").is_some_and(|s| s.starts_with('Z')) && field("Threads:") == Some("1")
    })
}

/// What the CLI's device jobs named their devices before they were named as compress's
/// are: `<tag><pid>` (`enc12345`), one device per process.
const OLD_JOB_DEVICE_TAGS: [&str; 7] = ["chain", "unchain", "enc", "dd", "ec", "ecset", "scan"];

/// The host process of a job's device file `peerpath-csp-pp<pid>-<tag><n>.<mem|queues|sock|lock>`
/// (`tag` lowercase letters, `pid` and `n` digits: [`EmulatedSpec::job_device_name`]), or
/// `peerpath-csp-<tag><pid>.<...>`, as a device job of an older peerpath named its device
/// (`tag` one of [`OLD_JOB_DEVICE_TAGS`]: another name of that form is one given by hand).
fn jobs_device_host(file: &str) -> Option<u32> {
    let rest = file.strip_prefix("peerpath-csp-")?;
    let (device, ext) = rest.split_once('.')?;
    fn split(s: &str) -> Option<(&str, &str)> {
        s.find(|c: char| c.is_ascii_digit()).map(|at| s.split_at(at))
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let letters = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase());
    let pid = match device.strip_prefix("pp").and_then(|r| r.split_once('-')) {
        Some((pid, named)) => split(named).filter(|(tag, n)| letters(tag) && digits(n)).map(|_| pid),
        None => split(device).filter(|(tag, _)| OLD_JOB_DEVICE_TAGS.contains(tag)).map(|(_, pid)| pid),
    }?;
    // A process id: not 0 (to kill(), this process group) nor past pid_t (a group, or all).
    let host = pid.parse().ok().filter(|&p: &u32| p > 0 && p <= libc::pid_t::MAX as u32);
    (digits(pid) && ["mem", "queues", "sock", "lock"].contains(&ext)).then_some(host)?
}

/// Picks the directory of a device's shared-memory file and says where it
/// went. /dev/shm is often small (containers: 64 MiB); the device's memory
/// is backed at start, so it goes where it fits. Where it went is part of
/// what the device is (its report says so), not a fallback: the data path
/// is the same.
fn place_shared_memory(spec: &EmulatedSpec, dir: &mut PathBuf) -> String {
    if let Some(d) = &spec.memory_dir {
        *dir = d.clone();
    }
    if spec.memory_dir.is_none() && free_bytes(dir).is_some_and(|free| free < spec.memory_bytes as u64 + (16 << 20)) {
        let tmp = std::env::temp_dir();
        let said = format!("memory in a file in {} ({} had less than {} MiB free)", tmp.display(), dir.display(), (spec.memory_bytes >> 20) + 16);
        *dir = tmp;
        return said;
    }
    format!("memory in {}", dir.display())
}

/// Maps P2P memory for one device: what was asked for, capped at what the
/// provider has available (in whole MiB). Returns the region and where it is, in words.
fn map_p2p_memory(device_dir: &Path, asked: usize) -> std::result::Result<(Arc<peerpath_mem::MappedRegion>, String), String> {
    let path = device_dir.join("p2pmem/available");
    let available = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let available: usize = available.trim().parse().map_err(|_| format!("{}: not a number: {}", path.display(), available.trim()))?;
    let bytes = asked.min(align_down(available, 1 << 20));
    if bytes == 0 {
        return Err(format!("{} has {available} bytes of P2P memory available, less than 1 MiB", device_dir.display()));
    }
    let region = peerpath_mem::MappedRegion::map_p2pmem(device_dir, bytes).map_err(|e| e.to_string())?;
    let capped = if bytes < asked { format!(", capped at the {available} bytes available") } else { String::new() };
    let fixture = match region.p2p_info() {
        Some(i) if !i.allocate_on_sysfs => "; NOT on sysfs (a fixture?): a plain file mapping, not P2P memory",
        _ => "",
    };
    let text = format!("memory: {} MiB of {} (p2pmem/allocate{capped}{fixture}), shared with the device by fork", region.len() >> 20, region.domain());
    Ok((Arc::new(region), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine line counts the devices and their worker threads: "1 ... device", not
    /// "1 ... device(s)".
    #[test]
    fn the_engine_line_counts_devices_and_worker_threads() {
        let spec = EmulatedSpec::new();
        let set = DeviceSet::emulated(&spec, false);
        assert_eq!(describe(set.what, 1, 1, "zlib"), "1 emulated CSP device, 1 worker thread each, zlib inside the device process");
        assert_eq!(describe(set.what, 4, 2, "zlib"), "2 emulated CSP devices, 4 worker threads each, zlib inside the device process");
    }

    /// The names in `dir`, sorted.
    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    /// Files of a job's device whose host is gone are removed; those of a live host (this
    /// process), of devices started by hand, and other files are not.
    #[test]
    fn devices_of_dead_jobs_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        // A pid past the kernel's limit (pid_max is at most 2^22) is no process.
        let (dead, me) = (1u32 << 23, std::process::id());
        let names = [
            format!("peerpath-csp-pp{dead}-csp0.mem"),
            format!("peerpath-csp-pp{dead}-csp12.queues"),
            format!("peerpath-csp-pp{dead}-csp0.sock"),
            format!("peerpath-csp-pp{dead}-csp0.lock"),
            format!("peerpath-csp-pp{me}-csp0.mem"),
            "peerpath-csp-mine.mem".into(),
            format!("peerpath-csp-pp{dead}-csp0.mem.bak"),
            format!("other-pp{dead}-csp0.mem"),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        // One that answers on its socket is alive, whatever its name says (`csp serve --name`,
        // or a job in another PID namespace).
        let live = [format!("peerpath-csp-pp{dead}-csp7.mem"), format!("peerpath-csp-pp{dead}-csp7.sock")];
        std::fs::write(dir.path().join(&live[0]), b"x").unwrap();
        let _answers = std::os::unix::net::UnixListener::bind(dir.path().join(&live[1])).unwrap();
        // One that holds its name's lock is alive too (it took the name, its socket is not bound yet).
        let taking = [format!("peerpath-csp-pp{dead}-csp8.mem"), format!("peerpath-csp-pp{dead}-csp8.lock")];
        for n in &taking {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        let held = std::fs::File::open(dir.path().join(&taking[1])).unwrap();
        // SAFETY: flock on a descriptor this test owns, released when it closes.
        assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) }, 0);
        remove_dead_jobs_devices(dir.path());
        let left = names_in(dir.path());
        let mut want = names[4..].to_vec();
        want.extend(live);
        want.extend(taking);
        want.sort();
        assert_eq!(left, want);
        assert_eq!(jobs_device_host("peerpath-csp-pp42-csp3.sock"), Some(42));
        assert_eq!(jobs_device_host("peerpath-csp-pp-csp3.sock"), None);
    }

    /// The CLI's device jobs name their devices as compress does, with their own tags
    /// (`pp<pid>-enc<n>`, `pp<pid>-ecset<n>`, ...): a dead host's are removed where a device
    /// is placed; a live host's, one answering on its socket, and any name not of that form
    /// (one started by hand, `csp serve --name enc<digits>`) are kept.
    #[test]
    fn device_jobs_devices_of_dead_hosts_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let (dead, me) = (1u32 << 23, std::process::id());
        let swept = [
            format!("peerpath-csp-pp{dead}-enc0.mem"),
            format!("peerpath-csp-pp{dead}-enc0.queues"),
            format!("peerpath-csp-pp{dead}-enc0.sock"),
            format!("peerpath-csp-pp{dead}-enc0.lock"),
            format!("peerpath-csp-pp{dead}-ecset3.mem"),
            format!("peerpath-csp-pp{dead}-unchain12.queues"),
            format!("peerpath-csp-pp{dead}-dd1.lock"),
        ];
        let kept = [
            format!("peerpath-csp-pp{me}-enc0.mem"),
            format!("peerpath-csp-{}.mem", EmulatedSpec::job_device_name("scan")),
            // Started by hand: any name not `pp<digits>-<lowercase letters><digits>` (nor
            // an older device job's, below).
            format!("peerpath-csp-mine{dead}.mem"),
            format!("peerpath-csp-pp{dead}-Enc0.mem"),
            format!("peerpath-csp-pp{dead}-enc.mem"),
            format!("peerpath-csp-pp{dead}-0.mem"),
            format!("peerpath-csp-pp{dead}-enc0x.mem"),
            format!("peerpath-csp-pp{dead}-enc-1.mem"),
            format!("peerpath-csp-pp{dead}-enc_1.mem"),
            format!("peerpath-csp-pp{dead}x-enc0.mem"),
            format!("peerpath-csp-pp{dead}-enc0.mem.bak"),
            format!("peerpath-csp-pp{dead}-enc0.log"),
        ];
        for n in swept.iter().chain(&kept) {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        // Alive whatever its name says: it answers on its socket.
        let live = [format!("peerpath-csp-pp{dead}-scan1.mem"), format!("peerpath-csp-pp{dead}-scan1.sock")];
        std::fs::write(dir.path().join(&live[0]), b"x").unwrap();
        let _answers = std::os::unix::net::UnixListener::bind(dir.path().join(&live[1])).unwrap();
        // Swept where a device job's memory goes, as compress's devices sweep theirs.
        let spec = EmulatedSpec { memory_dir: Some(dir.path().to_path_buf()), memory_bytes: 1 << 20, ..EmulatedSpec::new() };
        let mut at = std::path::PathBuf::from("/nonexistent");
        spec.place_shared_memory(&mut at);
        assert_eq!(at, dir.path());
        let left = names_in(dir.path());
        let mut want = kept.to_vec();
        want.extend(live);
        want.sort();
        assert_eq!(left, want);
        // A host that has ended but is not yet reaped (a zombie) is gone: its device's files go.
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let zombie = ended.id();
        let start = std::time::Instant::now();
        while !std::fs::read_to_string(format!("/proc/{zombie}/status")).unwrap().lines().any(|l| l.starts_with("State:") && l.contains('Z')) {
            assert!(start.elapsed() < Duration::from_secs(20), "`true` has not ended in 20 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        let of_zombie = [format!("peerpath-csp-pp{zombie}-dd0.mem"), format!("peerpath-csp-pp{zombie}-dd0.lock")];
        for n in &of_zombie {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        assert!(host_gone(zombie) && !host_gone(me) && !host_gone(1));
        spec.place_shared_memory(&mut at);
        ended.wait().unwrap();
        let left = names_in(dir.path());
        assert_eq!(left, want, "a zombie host's device files are swept");
        let name = EmulatedSpec::job_device_name("ecset");
        assert!(name.starts_with(&format!("pp{me}-ecset")), "{name}");
        assert_eq!(jobs_device_host(&format!("peerpath-csp-{name}.queues")), Some(me));
        assert_eq!(jobs_device_host("peerpath-csp-pp42-unchain0.lock"), Some(42));
        assert_eq!(jobs_device_host("peerpath-csp-pp99999999999-enc0.mem"), None);
        assert_eq!(jobs_device_host("peerpath-csp-pp4294967295-enc0.mem"), None, "kill(-1, 0) is every process");
        assert_eq!(jobs_device_host("peerpath-csp-pp0-enc0.mem"), None, "kill(0, 0) is this process group");
    }

    /// Device jobs of an older peerpath named their devices `<tag><pid>` (`enc12345`): where
    /// that process is gone, its files are swept too; a live process's, one answering on its
    /// socket, other tags and other kinds of file are kept.
    #[test]
    fn older_device_jobs_devices_of_dead_hosts_leave_no_files() {
        let dir = tempfile::tempdir().unwrap();
        let (dead, me) = (1u32 << 23, std::process::id());
        let mut swept: Vec<String> = ["mem", "queues", "sock", "lock"].iter().map(|ext| format!("peerpath-csp-enc{dead}.{ext}")).collect();
        swept.extend(OLD_JOB_DEVICE_TAGS.iter().map(|tag| format!("peerpath-csp-{tag}{dead}.mem")));
        let kept = [
            format!("peerpath-csp-enc{me}.mem"),
            format!("peerpath-csp-ec{me}.queues"),
            format!("peerpath-csp-csp{dead}.mem"),
            format!("peerpath-csp-gpu{dead}.mem"),
            format!("peerpath-csp-Enc{dead}.mem"),
            format!("peerpath-csp-enc{dead}x.mem"),
            format!("peerpath-csp-enc{dead}.mem.bak"),
            format!("peerpath-csp-enc{dead}.log"),
            "peerpath-csp-enc.mem".to_string(),
            "peerpath-csp-enc0.mem".to_string(),
            format!("peerpath-csp-enc{}.mem", u64::from(u32::MAX) + 1),
            format!("other-enc{dead}.mem"),
        ];
        for n in swept.iter().chain(&kept) {
            std::fs::write(dir.path().join(n), b"x").unwrap();
        }
        let live = [format!("peerpath-csp-scan{dead}.mem"), format!("peerpath-csp-scan{dead}.sock")];
        std::fs::write(dir.path().join(&live[0]), b"x").unwrap();
        let _answers = std::os::unix::net::UnixListener::bind(dir.path().join(&live[1])).unwrap();
        remove_dead_jobs_devices(dir.path());
        let left = names_in(dir.path());
        let mut want = kept.to_vec();
        want.extend(live);
        want.sort();
        assert_eq!(left, want);
        assert_eq!(jobs_device_host("peerpath-csp-ecset42.lock"), Some(42));
        assert_eq!(jobs_device_host("peerpath-csp-unchain42.sock"), Some(42));
        assert_eq!(jobs_device_host("peerpath-csp-dd0.mem"), None, "kill(0, 0) is this process group");
    }

    #[test]
    fn the_gpu_report_says_how_storage_reaches_its_memory_from_the_topology() {
        // The GPU machine's sysfs, kept as the tarball it came in (git drops its empty directories).
        let dir = tempfile::tempdir().unwrap();
        let tgz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/h100-gpu-host/sysfs.tgz");
        assert!(std::process::Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(dir.path()).status().unwrap().success());
        let fixture = dir.path().join("sys");
        let words = gpu_storage_path(&fixture, "0000:00:06.0", false);
        assert!(words.starts_with("storage -> GPU memory: staged through pinned host memory ("), "{words}");
        assert!(words.contains("not a P2PDMA provider") && words.contains("nvidia-fs"), "{words}");
        let words = gpu_storage_path(&fixture, "0000:00:07.0", false);
        assert!(words.contains("no PCI function 0000:00:07.0"), "{words}");
        // `--gpu-io auto` leaves cuFile alone where it cannot find a direct path: nvidia-fs not
        // loaded (module/ lists nvidia alone) and a kernel built without P2PDMA.
        assert_eq!(cufile_worth_asking(&fixture), Ok(()), "the capture says nothing of its kernel: ask cuFile");
        std::fs::create_dir_all(fixture.join("module/nvidia")).unwrap();
        assert_eq!(cufile_worth_asking(&fixture), Ok(()), "no nvidia-fs, but the kernel unknown: ask cuFile");
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(dir.path().join("boot")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/osrelease"), "6.18.0-test\n").unwrap();
        std::fs::write(dir.path().join("boot/config-6.18.0-test"), "CONFIG_PCI=y\n# CONFIG_PCI_P2PDMA is not set\n").unwrap();
        let why = cufile_worth_asking(&fixture).unwrap_err();
        assert!(why.contains("nvidia-fs is not loaded") && why.contains("6.18.0-test"), "{why}");
        std::fs::write(dir.path().join("boot/config-6.18.0-test"), "CONFIG_PCI=y\nCONFIG_PCI_P2PDMA=y\n").unwrap();
        assert_eq!(cufile_worth_asking(&fixture), Ok(()), "GDS's P2PDMA mode may work: ask cuFile");
        assert_eq!(cufile_worth_asking(Path::new("/nonexistent-sysfs")), Ok(()), "no topology: ask cuFile");
        let words = gpu_storage_path(Path::new("/nonexistent-sysfs"), "0000:00:06.0", false);
        assert!(words.contains("the topology could not be read"), "{words}");
    }
}
