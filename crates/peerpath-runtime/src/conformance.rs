//! The devices' conformance suite: every device runs through the job's real
//! executor (placement, reads into its memory, commands, packing, tails,
//! writes, handover) and must give the CPU oracle's bytes, keep payload out
//! of host memory, and hand its streams to the CPU when it fails.
//!
//! Here: the CPU device in a mapped region, bare and behind the faulty
//! wrapper. The emulated CSP runs the same executor from the CLI's tests
//! (`peerpath-cli/tests/offload.rs`), which have its `peerpath` binary.

use crate::compress::{compress, compress_on, CompressOptions};
use crate::devices::{DeviceMemoryFrom, DeviceSet, JobDevice};
use crate::job::CommonOptions;
use crate::report::{Fallback, JobReport};
use crate::Compute;
use peerpath_device::{CpuDevice, CpuDeviceConfig, Device, DeviceMemory, FaultConfig, FaultyDevice};
use peerpath_func::{Format, Level};
use peerpath_mem::{MappedRegion, MemoryDomain};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const DEVICE_MEMORY_BYTES: usize = 96 << 20;
/// The host window of a staged device: room for a few reads and writes.
const WINDOW_BYTES: usize = 24 << 20;

/// A directory on a file system that takes O_DIRECT for writes (devices
/// are reached by DMA only): the temporary directory unless it is memory.
fn scratch() -> tempfile::TempDir {
    let tmp = std::env::temp_dir();
    let on_memory = std::fs::File::open(&tmp).map(|f| peerpath_mem::on_memory_file_system(std::os::fd::AsRawFd::as_raw_fd(&f))).unwrap_or(true);
    let base = if on_memory { PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")) } else { tmp };
    tempfile::Builder::new().prefix("pp-conformance").tempdir_in(base).expect("scratch directory")
}

/// How a test device's memory is reached.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reach {
    /// All of it by DMA: a shared-memory region (as the emulated CSP's, or a CMB).
    Mapped,
    /// Its own memory the engine cannot reach, and a host window (as a GPU's
    /// without GPUDirect Storage): every byte is staged through the window.
    Staged,
    /// Staged, its own memory in the GPU domain: a stand-in for a GPU (the
    /// CPU device computes; the ledger books its stagings as a GPU's).
    StagedAsGpu,
    /// Staged, but the device reads sources into its own memory and writes
    /// targets from it itself (as a GPU with GPUDirect Storage): no payload
    /// passes the window.
    StagedWithStorageIo,
    /// As `StagedWithStorageIo`, and files of a memory file system too (as a GPU that maps
    /// and registers them: its copy engine reads and writes their pages).
    StagedWithMemoryFiles,
}

/// CPU devices (the executor reaches device memory by DMA only),
/// optionally faulty.
fn cpu_devices(dir: &Path, faults: Option<FaultConfig>) -> DeviceSet<'static> {
    devices_with(dir, faults, Reach::Mapped, false)
}

/// `whole_chunks`: the devices ask for one compress command per chunk (as a GPU does).
fn devices_with(dir: &Path, faults: Option<FaultConfig>, reach: Reach, whole_chunks: bool) -> DeviceSet<'static> {
    let dir = dir.to_path_buf();
    DeviceSet {
        memory_from: DeviceMemoryFrom::Shm,
        host_window: reach != Reach::Mapped,
        workers: 2,
        chunk_bytes: 1 << 20,
        what: "CPU device, {workers} each, {library}",
        provenance: crate::report::Provenance::MeasuredEmulated,
        start: Box::new(move |sizes, _params, _fallbacks| {
            let mut devices = Vec::new();
            for d in 0..sizes.len().min(2) {
                let name = format!("cpu{d}");
                let memory = match reach {
                    Reach::Mapped => {
                        let path = dir.join(format!("{name}.mem"));
                        let region = MappedRegion::create_shared(&path, DEVICE_MEMORY_BYTES, &name).expect("device memory");
                        std::fs::remove_file(&path).expect("the mapping outlives its file");
                        DeviceMemory::region(Arc::new(region))
                    }
                    Reach::Staged | Reach::StagedAsGpu | Reach::StagedWithStorageIo | Reach::StagedWithMemoryFiles => {
                        let window = MappedRegion::host(WINDOW_BYTES).expect("host window");
                        let domain = if reach == Reach::StagedAsGpu { MemoryDomain::Gpu { device: name.clone() } } else { MemoryDomain::Emulated { device: name.clone() } };
                        DeviceMemory::staged(DEVICE_MEMORY_BYTES, domain, Arc::new(window))
                    }
                };
                let config = CpuDeviceConfig {
                    name: name.clone(),
                    memory_bytes: 0,
                    workers: 2,
                    queue_depth: 32,
                    whole_chunk_commands: whole_chunks,
                    storage_io: matches!(reach, Reach::StagedWithStorageIo | Reach::StagedWithMemoryFiles),
                    memory_files: reach == Reach::StagedWithMemoryFiles,
                };
                let cpu = CpuDevice::with_memory(config, memory).expect("CPU device");
                let device: Box<dyn Device> = match &faults {
                    Some(f) => Box::new(FaultyDevice::new(cpu, f.clone())),
                    None => Box::new(cpu),
                };
                devices.push(JobDevice::new(device, "CPU device (conformance)".into()));
            }
            Ok(devices)
        }),
    }
}

fn options(format: Format, block_size: usize) -> CompressOptions {
    CompressOptions {
        common: CommonOptions { threads: 2, durable: false, force: true, ..CommonOptions::default() },
        level: Level::new(1).expect("level 1"),
        format,
        block_size,
        compute: Compute::Cpu,
        no_fallback: false,
        verify: false,
        encrypt: None,
    }
}

/// Compresses `sources` on the CPU (the oracle) and through `devices`;
/// returns the device job's report after checking its outputs are the
/// oracle's bytes.
fn against_oracle(dir: &Path, sources: &[PathBuf], opts: &CompressOptions, devices: DeviceSet) -> JobReport {
    let pairs = |tag: &str| -> Vec<(PathBuf, PathBuf)> {
        sources.iter().map(|s| (s.clone(), dir.join(format!("{}.{tag}.gz", s.file_name().unwrap().to_string_lossy())))).collect()
    };
    let (oracle, device) = (pairs("cpu"), pairs("dev"));
    compress(&oracle, opts).expect("the CPU oracle compresses");
    let report = compress_on(&device, opts, Some(devices)).expect("the device job compresses");
    for ((_, want), (src, got)) in oracle.iter().zip(&device) {
        let (want, got) = (std::fs::read(want).unwrap(), std::fs::read(got).unwrap());
        if want != got {
            let at = want.iter().zip(&got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
            panic!("{}: device output ({} bytes) differs from the oracle's ({} bytes) from byte {at}", src.display(), got.len(), want.len());
        }
    }
    report
}

/// A scratch directory in /dev/shm (a memory file system), where there is one.
fn shm_scratch() -> Option<tempfile::TempDir> {
    tempfile::Builder::new().prefix("pp-conformance-shm").tempdir_in("/dev/shm").ok()
}

/// Bytes the ledger booked for `purpose` from a location `from` accepts to one `to` accepts.
fn booked(report: &JobReport, purpose: peerpath_metrics::Purpose, from: impl Fn(&peerpath_metrics::Location) -> bool, to: impl Fn(&peerpath_metrics::Location) -> bool) -> u64 {
    report.ledger.entries.iter().filter(|e| e.purpose == purpose && from(&e.source) && to(&e.target)).map(|e| e.bytes_written).sum()
}

fn in_device_memory(l: &peerpath_metrics::Location) -> bool {
    matches!(l, peerpath_metrics::Location::Memory { domain: MemoryDomain::Emulated { .. } })
}

fn in_host_memory(l: &peerpath_metrics::Location) -> bool {
    matches!(l, peerpath_metrics::Location::Memory { domain } if domain.is_host())
}

/// A crash of the devices after each of `afters` submissions: the CPU takes their streams
/// over (the oracle's bytes, checked by `against_oracle`), said in the fallbacks.
fn crashes_hand_over(dir: &Path, srcs: &[PathBuf], reach: Reach, afters: &[u64]) {
    for &after in afters {
        let mut faults = FaultConfig::seeded(after);
        faults.crash_after_submissions = Some(after);
        let report = against_oracle(dir, srcs, &options(Format::Gzip, 256 << 10), devices_with(dir, Some(faults), reach, true));
        assert!(report.fallbacks.iter().any(|f| matches!(f, Fallback::DeviceFailed { .. })), "crash after {after}: {:?}", report.fallbacks);
    }
}

/// Failed completions (an injected error status, as nvCOMP's or a CUDA error) while the
/// devices' own writes of the targets are in flight: the executor retires the device, which
/// has not failed by itself; its queued writes end, then the CPU goes on (the oracle's bytes).
fn errors_hand_over(dir: &Path, srcs: &[PathBuf], reach: Reach) {
    let mut retired = 0;
    for seed in 1..=8 {
        let mut faults = FaultConfig::seeded(seed);
        faults.error_probability = 0.2;
        let report = against_oracle(dir, srcs, &options(Format::Gzip, 256 << 10), devices_with(dir, Some(faults), reach, true));
        let failed = report.devices.iter().filter(|d| d.failure.is_some()).count();
        let handed = report.fallbacks.iter().filter(|f| matches!(f, Fallback::DeviceFailed { .. })).count();
        assert!(handed >= failed, "seed {seed}: each retired device's streams handed over, said so: {:?}", report.fallbacks);
        retired += failed;
    }
    assert!(retired >= 8, "injected errors retired devices ({retired} of 16)");
}

fn sources(dir: &Path, sizes: &[usize]) -> Vec<PathBuf> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let p = dir.join(format!("s{i}-{n}"));
            std::fs::write(&p, peerpath_func::sample::protein_like(n, i as u64 + 1)).unwrap();
            p
        })
        .collect()
}

#[test]
fn the_cpu_device_through_the_executor_gives_the_oracle_s_bytes() {
    let dir = scratch();
    // Empty, one byte, around a page, several blocks and a tail, two devices.
    let srcs = sources(dir.path(), &[0, 1, 4097, (3 << 20) + 5, (5 << 20) - 4096]);
    for (format, block) in [(Format::Gzip, 1 << 20), (Format::Gzip, 64 << 10), (Format::Bgzf, 0)] {
        let report = against_oracle(dir.path(), &srcs, &options(format, block), cpu_devices(dir.path(), None));
        assert_eq!(report.devices.len(), 2, "{format:?}: two devices ran");
        assert!(report.fallbacks.is_empty(), "{format:?}: no fallback: {:?}", report.fallbacks);
        assert!(report.files.iter().all(|f| f.device.is_some() && f.members_on_device == Some(f.members)), "{format:?}: every member on a device");
        assert_eq!(report.ledger.host_memory_payload_bytes, 0, "{format:?}: no payload through host memory");
        let commands: u64 = report.devices.iter().flat_map(|d| d.commands.values()).sum();
        assert!(commands > 0, "{format:?}: the devices counted their commands");
    }
}

#[test]
fn a_device_that_fails_hands_its_streams_to_the_cpu_and_the_bytes_do_not_change() {
    let dir = scratch();
    // Outputs of several 4 MiB staging extents, so a crash can come after some were written.
    let srcs = sources(dir.path(), &[(24 << 20) + 123, 20 << 20]);
    let mut kept_some = false;
    // Crashes early (nothing written yet), and after some output was written.
    for after in [1, 60, 100] {
        let mut faults = FaultConfig::seeded(after);
        faults.crash_after_submissions = Some(after);
        let report = against_oracle(dir.path(), &srcs, &options(Format::Gzip, 256 << 10), cpu_devices(dir.path(), Some(faults)));
        assert!(report.devices.iter().all(|d| d.failure.is_some()), "crash after {after}: both devices failed: {:?}", report.devices);
        let handed: Vec<&Fallback> = report.fallbacks.iter().filter(|f| matches!(f, Fallback::DeviceFailed { .. })).collect();
        assert_eq!(handed.len(), 2, "crash after {after}: both streams handed over, said so: {:?}", report.fallbacks);
        for f in &report.files {
            assert!(f.members_on_device.unwrap() < f.members, "crash after {after}: the CPU made the rest of {}", f.source);
        }
        kept_some |= handed.iter().any(|f| matches!(f, Fallback::DeviceFailed { kept, .. } if *kept > 0));
    }
    assert!(kept_some, "some crash came after output was written: the CPU went on mid-stream, skipping what the device had sent");
    // Errors in completions: the stream goes on from the first byte not on its way.
    let mut faults = FaultConfig::seeded(7);
    faults.error_probability = 0.05;
    let report = against_oracle(dir.path(), &srcs, &options(Format::Bgzf, 0), cpu_devices(dir.path(), Some(faults)));
    assert!(report.devices.iter().any(|d| d.failure.is_some()), "an injected error retires its device");
}

/// A job with streams on the CPU and on devices runs them in one loop: a
/// target on a memory file system takes no O_DIRECT, so its stream stays
/// on the CPU (said so) while the others run on the devices.
#[test]
fn streams_on_the_cpu_and_on_devices_run_in_one_job() {
    let shm = Path::new("/dev/shm");
    let on_memory = std::fs::File::open(shm).is_ok_and(|f| peerpath_mem::on_memory_file_system(std::os::fd::AsRawFd::as_raw_fd(&f)));
    if !on_memory {
        eprintln!("SKIPPED: /dev/shm is not a memory file system here");
        return;
    }
    let dir = scratch();
    let memory_dir = tempfile::Builder::new().prefix("pp-conformance").tempdir_in(shm).unwrap();
    let srcs = sources(dir.path(), &[(3 << 20) + 7, 2 << 20, 5 << 20]);
    let opts = options(Format::Gzip, 1 << 20);
    let target = |i: usize, tag: &str| if i == 1 { memory_dir.path().join(format!("{i}.{tag}.gz")) } else { dir.path().join(format!("{i}.{tag}.gz")) };
    let pairs = |tag: &str| -> Vec<(PathBuf, PathBuf)> { srcs.iter().enumerate().map(|(i, s)| (s.clone(), target(i, tag))).collect() };
    compress(&pairs("cpu"), &opts).unwrap();
    let report = compress_on(&pairs("dev"), &opts, Some(cpu_devices(dir.path(), None))).unwrap();
    for i in 0..srcs.len() {
        assert_eq!(std::fs::read(target(i, "cpu")).unwrap(), std::fs::read(target(i, "dev")).unwrap(), "stream {i}: the oracle's bytes");
    }
    let placed: Vec<bool> = report.files.iter().map(|f| f.device.is_some()).collect();
    assert_eq!(placed, [true, false, true], "the memory-file-system target stays on the CPU");
    assert!(report.fallbacks.iter().any(|f| matches!(f, Fallback::HostCpuNotDevice { .. })), "said so: {:?}", report.fallbacks);
    assert!(report.engine.contains("for what the devices did not do"), "{}", report.engine);
}

/// A device whose memory the I/O engine cannot reach (a GPU's, without
/// GPUDirect Storage) gets every byte through its host window: reads land
/// there, the device copies them in, computes in its own memory, and
/// copies packed output out for the writes. Same bytes as the oracle; the
/// ledger shows the staging; a failure mid-job still hands over cleanly.
#[test]
fn a_device_with_memory_the_engine_cannot_reach_is_staged_through_its_window() {
    let dir = scratch();
    let srcs = sources(dir.path(), &[0, 4097, (9 << 20) + 5, 12 << 20]);
    for (format, block) in [(Format::Gzip, 1 << 20), (Format::Bgzf, 0)] {
        let report = against_oracle(dir.path(), &srcs, &options(format, block), devices_with(dir.path(), None, Reach::Staged, false));
        assert!(report.fallbacks.is_empty(), "{format:?}: {:?}", report.fallbacks);
        assert!(report.files.iter().all(|f| f.device.is_some() && f.members_on_device == Some(f.members)), "{format:?}: all on devices");
        let staged: u64 = report.ledger.entries.iter().filter(|e| e.purpose == peerpath_metrics::Purpose::Stage).map(|e| e.bytes_read).sum();
        let input: u64 = report.files.iter().map(|f| f.bytes_in).sum();
        let output: u64 = report.files.iter().map(|f| f.bytes_out).sum();
        assert!(staged >= input + output, "{format:?}: every input byte staged in and every output byte out ({staged} < {input} + {output})");
        assert!(report.ledger.host_memory_payload_bytes > 0, "{format:?}: the window is host memory, and the ledger says so");
        assert!(report.ledger.entries.iter().filter(|e| e.purpose == peerpath_metrics::Purpose::Stage).all(|e| matches!(&e.mover, peerpath_metrics::Mover::Device { .. })), "{format:?}: a CPU device's workers stage: {:?}", report.ledger.entries);
    }
    // Staged into GPU memory: the GPU's copy engines move the bytes (DMA), not the CPU.
    let report = against_oracle(dir.path(), &srcs, &options(Format::Gzip, 1 << 20), devices_with(dir.path(), None, Reach::StagedAsGpu, false));
    let stages: Vec<_> = report.ledger.entries.iter().filter(|e| e.purpose == peerpath_metrics::Purpose::Stage).collect();
    assert!(!stages.is_empty() && stages.iter().all(|e| matches!(&e.mover, peerpath_metrics::Mover::Dma { engine } if engine.ends_with("copy engine"))), "{:?}", report.ledger.entries);
    let mut faults = FaultConfig::seeded(3);
    faults.crash_after_submissions = Some(40);
    let report = against_oracle(dir.path(), &srcs, &options(Format::Gzip, 256 << 10), devices_with(dir.path(), Some(faults), Reach::Staged, false));
    assert!(report.fallbacks.iter().any(|f| matches!(f, Fallback::DeviceFailed { .. })), "{:?}", report.fallbacks);
}

/// Files on a memory file system refuse O_DIRECT (or peerpath declines it
/// for targets there): a device reached only by DMA cannot serve them (the
/// CPU does, said in the fallbacks), but one staged through a host window
/// can: the kernel copies between the page cache and the window, and the
/// ledger says so (a CPU copy, not a DMA).
#[test]
fn files_in_memory_go_through_a_staged_device_s_window_by_the_kernel_s_copy() {
    let Ok(dir) = tempfile::Builder::new().prefix("pp-conformance-shm").tempdir_in("/dev/shm") else {
        eprintln!("SKIPPED: no /dev/shm to put the files in");
        return;
    };
    let srcs = sources(dir.path(), &[4097, (3 << 20) + 5]);
    let opts = options(Format::Gzip, 1 << 20);
    let report = against_oracle(dir.path(), &srcs, &opts, devices_with(dir.path(), None, Reach::Staged, true));
    assert!(report.fallbacks.is_empty(), "{:?}", report.fallbacks);
    assert!(report.files.iter().all(|f| f.device.is_some() && f.members_on_device == Some(f.members)), "all on devices: {:?}", report.files);
    let kernel_copies: u64 = report
        .ledger
        .entries
        .iter()
        .filter(|e| matches!(e.purpose, peerpath_metrics::Purpose::WriteTarget) && matches!(e.mover, peerpath_metrics::Mover::Cpu { .. }))
        .map(|e| e.bytes_read)
        .sum();
    let output: u64 = report.files.iter().map(|f| f.bytes_out).sum();
    assert!(kernel_copies >= output, "the target's bytes are the kernel's copy from the window ({kernel_copies} < {output}): {:?}", report.ledger.entries);
    // A device reached by DMA only does not take them: the CPU does, and says why.
    let report = against_oracle(dir.path(), &srcs, &opts, devices_with(dir.path(), None, Reach::Mapped, true));
    assert!(report.files.iter().all(|f| f.device.is_none()), "{:?}", report.files);
    assert!(report.fallbacks.iter().any(|f| matches!(f, Fallback::HostCpuNotDevice { why, .. } if why.contains("O_DIRECT"))), "{:?}", report.fallbacks);
}

/// A device that takes one command per chunk (its members back to back,
/// as a GPU batches them) gives the same bytes, in mapped and in staged
/// memory, with chunks of one member or several (`--gpu-chunk`), and still
/// hands over cleanly when it fails.
#[test]
fn whole_chunk_commands_give_the_oracle_s_bytes() {
    let dir = scratch();
    let srcs = sources(dir.path(), &[0, 1, 4097, (9 << 20) + 5, 12 << 20]);
    for reach in [Reach::Mapped, Reach::Staged] {
        for (format, block, chunk) in [(Format::Gzip, 1 << 20, 1 << 20), (Format::Gzip, 1 << 20, 4 << 20), (Format::Gzip, 64 << 10, 1 << 20), (Format::Bgzf, 0, 1 << 20)] {
            let mut devices = devices_with(dir.path(), None, reach, true);
            devices.chunk_bytes = chunk;
            let report = against_oracle(dir.path(), &srcs, &options(format, block), devices);
            assert!(report.fallbacks.is_empty(), "{reach:?} {format:?}: {:?}", report.fallbacks);
            let chunks: u64 = report.devices.iter().filter_map(|d| d.commands.get("GzipCompressChunk")).sum();
            assert!(chunks > 0 && report.devices.iter().all(|d| !d.commands.contains_key("GzipCompressMember")), "{reach:?} {format:?}: {:?}", report.devices);
        }
        let mut faults = FaultConfig::seeded(5);
        faults.crash_after_submissions = Some(12);
        let report = against_oracle(dir.path(), &srcs, &options(Format::Gzip, 256 << 10), devices_with(dir.path(), Some(faults), reach, true));
        assert!(report.fallbacks.iter().any(|f| matches!(f, Fallback::DeviceFailed { .. })), "{reach:?}: {:?}", report.fallbacks);
    }
}

/// A device whose members are sound but not the oracle's bytes (a GPU's:
/// nvCOMP is not ISA-L) fails mid-stream, after some of its output was
/// written: the CPU goes on from the start of a block the device packed
/// (its members end there), never at a byte offset inside the device's
/// output, and the file decodes to its source. Mapped and staged memory,
/// member and chunk commands, several crash points.
#[test]
fn a_device_whose_bytes_differ_from_the_oracle_s_hands_over_at_a_member_boundary() {
    let dir = scratch();
    let srcs = sources(dir.path(), &[(24 << 20) + 123, 20 << 20]);
    let opts = options(Format::Gzip, 256 << 10);
    let (mut kept_some, mut read_backs) = (false, 0);
    for (reach, whole_chunks) in [(Reach::Mapped, false), (Reach::Staged, true), (Reach::StagedWithStorageIo, true)] {
        for after in [1, 20, 40, 60] {
            let mut faults = FaultConfig::seeded(after);
            faults.crash_after_submissions = Some(after);
            faults.compress_level = Some(Level::new(3).unwrap());
            let pairs: Vec<(PathBuf, PathBuf)> = srcs.iter().map(|s| (s.clone(), dir.path().join(format!("{}.other.gz", s.file_name().unwrap().to_string_lossy())))).collect();
            let report = compress_on(&pairs, &opts, Some(devices_with(dir.path(), Some(faults), reach, whole_chunks))).expect("the device job compresses");
            let handed: Vec<&Fallback> = report.fallbacks.iter().filter(|f| matches!(f, Fallback::DeviceFailed { .. })).collect();
            assert!(!handed.is_empty(), "{reach:?} crash after {after}: handed over: {:?}", report.fallbacks);
            kept_some |= handed.iter().any(|f| matches!(f, Fallback::DeviceFailed { kept, .. } if *kept > 0));
            // The device's bytes of a partial extent were read back to be written again with the CPU's.
            let unaligned = handed.iter().filter(|f| matches!(f, Fallback::DeviceFailed { kept, .. } if kept % 4096 != 0)).count();
            let read_back = report.ledger.entries.iter().filter(|e| e.purpose == peerpath_metrics::Purpose::PackForDirectIo && matches!(e.source, peerpath_metrics::Location::Storage { .. })).map(|e| e.operations).sum::<u64>();
            assert_eq!(read_back, unaligned as u64, "{reach:?} crash after {after}: {:?} {:?}", report.fallbacks, report.ledger.entries);
            read_backs += read_back;
            for (src, gz) in &pairs {
                let back = dir.path().join("back");
                let dopts = crate::decompress::DecompressOptions { common: CommonOptions { threads: 2, durable: false, force: true, ..CommonOptions::default() }, ..Default::default() };
                let r = crate::decompress::decompress(&[(gz.clone(), back.clone())], &dopts).unwrap_or_else(|e| panic!("{reach:?} crash after {after}: {} does not decode: {e}", gz.display()));
                assert!(r.files.iter().all(|f| matches!(f.decode_mode, Some(crate::report::DecodeMode::Parallel { .. }))), "{reach:?} crash after {after}: every member carries its sizes: {:?}", r.files);
                assert!(std::fs::read(&back).unwrap() == std::fs::read(src).unwrap(), "{reach:?} crash after {after}: {} decodes to its source", gz.display());
            }
        }
    }
    assert!(kept_some && read_backs > 0, "some crash came after the device's output was written, within an extent: the CPU went on after it ({read_backs} read back)");
}

/// A device that reads and writes storage itself (as a GPU with GPUDirect
/// Storage does, `Function::StorageRead` and `StorageWrite`): no payload
/// passes the host window; the same bytes as the oracle; a failure mid-job
/// (reads and writes in flight on the device) hands over cleanly once the
/// device has settled; files it cannot take so (not O_DIRECT) go through the
/// window, and the report says which and why.
#[test]
fn a_device_with_storage_io_takes_sources_and_targets_straight_to_and_from_its_memory() {
    let dir = scratch();
    let srcs = sources(dir.path(), &[0, 4097, (9 << 20) + 5, 12 << 20]);
    let input: u64 = srcs.iter().map(|s| std::fs::metadata(s).unwrap().len()).sum();
    for (format, block, whole_chunks) in [(Format::Gzip, 1 << 20, false), (Format::Gzip, 64 << 10, true), (Format::Bgzf, 0, true)] {
        let report = against_oracle(dir.path(), &srcs, &options(format, block), devices_with(dir.path(), None, Reach::StagedWithStorageIo, whole_chunks));
        assert!(report.fallbacks.is_empty(), "{format:?}: {:?}", report.fallbacks);
        assert!(report.files.iter().all(|f| f.device.is_some() && f.members_on_device == Some(f.members)), "{format:?}: all on devices");
        let entries = &report.ledger.entries;
        let read_into_device = booked(&report, peerpath_metrics::Purpose::ReadSource, |_| true, in_device_memory);
        assert_eq!(read_into_device, input, "{format:?}: every source byte read straight into device memory: {entries:?}");
        assert!(entries.iter().all(|e| e.purpose != peerpath_metrics::Purpose::Stage), "{format:?}: nothing staged: {entries:?}");
        let written_from_device = booked(&report, peerpath_metrics::Purpose::WriteTarget, in_device_memory, |_| true);
        let output: u64 = report.files.iter().map(|f| f.bytes_out).sum();
        assert!(written_from_device >= output && written_from_device < output + 4 * 4096, "{format:?}: every output byte written from device memory ({written_from_device} against {output})");
        // (Each stream's end marker is copied in from the window, host memory: metadata.)
        assert_eq!(report.ledger.host_memory_payload_bytes, 0, "{format:?}: no payload in host memory");
        assert!(report.ledger.host_memory_metadata_bytes >= (format.end_marker().len() * srcs.len()) as u64, "{format:?}: the end markers are metadata");
        let io = report.devices.iter().filter_map(|d| d.storage_io.as_deref()).collect::<Vec<_>>();
        assert_eq!(io.len(), 2, "{format:?}: {io:?}");
        assert!(io.iter().all(|r| r.starts_with("its own reads of 2 of 2 sources into its memory and writes of 2 of 2 targets from it") && r.contains("pread and pwrite by the CPU device's workers")), "{format:?}: {io:?}");
        assert!(report.render().contains("    storage     its own reads of 2 of 2"), "{}", report.render());
        assert!(report.engine.starts_with("2 CPU devices, 2 worker threads each, "), "{format:?}: {}", report.engine);
    }
    crashes_hand_over(dir.path(), &srcs, Reach::StagedWithStorageIo, &[3, 30]);
    errors_hand_over(dir.path(), &srcs, Reach::StagedWithStorageIo);
    // In memory (no O_DIRECT): through the window, said so.
    let Some(shm) = shm_scratch() else {
        eprintln!("SKIPPED (the memory half): no /dev/shm");
        return;
    };
    let srcs = sources(shm.path(), &[(3 << 20) + 5]);
    let report = against_oracle(shm.path(), &srcs, &options(Format::Gzip, 1 << 20), devices_with(shm.path(), None, Reach::StagedWithStorageIo, true));
    let io = report.devices.iter().filter_map(|d| d.storage_io.as_deref()).collect::<Vec<_>>();
    assert!(io.iter().any(|r| r.starts_with("its own reads of 0 of 1 source into its memory and writes of 0 of 1 target") && r.contains("through the host window instead") && r.contains("not read with O_DIRECT") && r.contains("not written with O_DIRECT")), "{io:?}");
}

/// The files a device does not read or write itself are named in its note as the reports quote
/// names: a newline in one was printed as it is, and split the report's line.
#[test]
fn the_files_a_device_does_not_reach_itself_are_named_quoted() {
    let Some(shm) = shm_scratch() else {
        eprintln!("SKIPPED: no /dev/shm");
        return;
    };
    let src = shm.path().join("a\nb");
    std::fs::write(&src, peerpath_func::sample::protein_like(1 << 20, 3)).unwrap();
    let report = against_oracle(shm.path(), &[src], &options(Format::Gzip, 1 << 20), devices_with(shm.path(), None, Reach::StagedWithStorageIo, true));
    let io = report.devices.iter().filter_map(|d| d.storage_io.as_deref()).collect::<Vec<_>>();
    let quoted = |r: &str| r.contains("$'\\n''b': not read with O_DIRECT") && r.contains("$'\\n''b.dev.gz': not written with O_DIRECT") && !r.contains('\n');
    assert!(io.iter().any(|r| quoted(r)), "{io:?}");
}

/// A device that also takes files of a memory file system (as a GPU that maps and registers
/// them, its copy engine reading and writing their pages): sources and targets in tmpfs are
/// read into and written from its memory by the device, none staged through the window; the
/// oracle's bytes; the ledger books the file's pages as host memory the device moved (no
/// storage, no CPU copy of the job's); a crash mid-job hands over to the CPU cleanly.
#[test]
fn a_device_that_takes_memory_files_reads_and_writes_their_pages_itself() {
    let Some(shm) = shm_scratch() else {
        eprintln!("SKIPPED: no /dev/shm");
        return;
    };
    let srcs = sources(shm.path(), &[0, 4097, (5 << 20) + 5, 3 << 20]);
    let input: u64 = srcs.iter().map(|s| std::fs::metadata(s).unwrap().len()).sum();
    for (format, block, whole_chunks) in [(Format::Gzip, 1 << 20, true), (Format::Gzip, 64 << 10, false), (Format::Bgzf, 0, true)] {
        let report = against_oracle(shm.path(), &srcs, &options(format, block), devices_with(shm.path(), None, Reach::StagedWithMemoryFiles, whole_chunks));
        assert!(report.fallbacks.is_empty(), "{format:?}: {:?}", report.fallbacks);
        assert!(report.files.iter().all(|f| f.device.is_some() && f.members_on_device == Some(f.members)), "{format:?}: all on devices");
        let entries = &report.ledger.entries;
        let read = booked(&report, peerpath_metrics::Purpose::ReadSource, in_host_memory, in_device_memory);
        assert_eq!(read, input, "{format:?}: every source byte moved from the file's pages into device memory by the device: {entries:?}");
        let written = booked(&report, peerpath_metrics::Purpose::WriteTarget, in_device_memory, in_host_memory);
        let output: u64 = report.files.iter().map(|f| f.bytes_out).sum();
        assert!(written >= output && written < output + 4 * 4096, "{format:?}: every output byte written from device memory ({written} against {output})");
        assert!(entries.iter().all(|e| e.purpose != peerpath_metrics::Purpose::Stage), "{format:?}: nothing staged through the window: {entries:?}");
        assert!(entries.iter().all(|e| !matches!(e.source, peerpath_metrics::Location::Storage { .. }) && !matches!(e.target, peerpath_metrics::Location::Storage { .. })), "{format:?}: no storage on either side: {entries:?}");
        assert!(entries.iter().all(|e| !matches!(e.mover, peerpath_metrics::Mover::Cpu { .. }) || e.purpose == peerpath_metrics::Purpose::Metadata), "{format:?}: no CPU copy of payload by the job: {entries:?}");
        let io = report.devices.iter().filter_map(|d| d.storage_io.as_deref()).collect::<Vec<_>>();
        assert_eq!(io.len(), 2, "{format:?}: {io:?}");
        assert!(io.iter().all(|r| r.starts_with("its own reads of 2 of 2 sources into its memory and writes of 2 of 2 targets from it") && r.contains("4 files on a memory file system among them: pread and pwrite") && !r.contains("instead")), "{format:?}: {io:?}");
    }
    crashes_hand_over(shm.path(), &srcs, Reach::StagedWithMemoryFiles, &[3, 11]);
    errors_hand_over(shm.path(), &srcs, Reach::StagedWithMemoryFiles);
    // Sources in memory, targets on storage (O_DIRECT): each side booked as what it is.
    let disk = scratch();
    let report = against_oracle(disk.path(), &srcs, &options(Format::Gzip, 1 << 20), devices_with(disk.path(), None, Reach::StagedWithMemoryFiles, true));
    let entries = &report.ledger.entries;
    let from_pages = booked(&report, peerpath_metrics::Purpose::ReadSource, in_host_memory, |_| true);
    assert_eq!(from_pages, input, "every source byte from the files' pages: {entries:?}");
    let to_storage = booked(&report, peerpath_metrics::Purpose::WriteTarget, |_| true, |l| matches!(l, peerpath_metrics::Location::Storage { .. }));
    let output: u64 = report.files.iter().map(|f| f.bytes_out).sum();
    assert!(to_storage >= output && to_storage < output + 4 * 4096, "every output byte to storage ({to_storage} against {output}): {entries:?}");
    let io = report.devices.iter().filter_map(|d| d.storage_io.as_deref()).collect::<Vec<_>>();
    assert!(io.iter().all(|r| r.contains("2 files on a memory file system among them")), "{io:?}");
}
