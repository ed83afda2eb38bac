//! `peerpath ec`: erasure coding of plain files (issue 19, first part).
//! `encode` splits a source into stripes of `k` units, adds `m` parity
//! units per stripe (Reed-Solomon over GF(2^8), ISA-L: `peerpath_func::ec`)
//! and writes one shard file per unit column plus a manifest (JSON: the
//! code, sizes and a CRC-32 of every unit); `verify` checks every unit;
//! `repair` rebuilds up to `m` missing or corrupt shards per stripe in
//! place, atomically; `decode` restores the source byte for byte from
//! whatever `k` units of each stripe survive. More than `m` losses in a
//! stripe is an error that names the stripes, and nothing is written.
//!
//! Files are read and written with plain calls (pread/pwrite). `encode`,
//! `verify` and `repair` take whole stripes on `-T` threads, each holding
//! cache-sized slices of its stripe's units (a survey: one piece of at most
//! 1 MiB); `decode` too, each thread holding a whole stripe (k units, and
//! the parity it needs where a unit is lost); the stream readers of the
//! chain read one stripe at a time. Every output appears atomically or not
//! at all.

use clap::{Args, Subcommand};
use peerpath_func::ec::RsCode;
use peerpath_func::ec_manifest::{self, copy_name, placed_name, set_name_ok, shard_name, MANIFEST, MAX_MANIFEST_BYTES, MAX_UNIT_BYTES};
use crate::{device_job, ec_device};
use peerpath_io::{OutputDir, ScratchDir, Temporary};
use peerpath_runtime::report::{count, name_bytes, quoted_exact, quoted_name, Quoted, ShellWord};
use peerpath_runtime::JobError;
use serde::Serialize;
use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Args)]
pub struct EcArgs {
    #[command(subcommand)]
    command: EcCommand,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EcEngine {
    Cpu,
    Emulated,
    /// peerpath's Reed-Solomon and CRC-32 kernels on a GPU.
    Gpu,
}

#[derive(Subcommand)]
enum EcCommand {
    /// Split SOURCE into K data and M parity shards in DIR (a new directory), with a manifest.
    Encode {
        /// The file (or block device) to encode.
        source: PathBuf,
        /// Data shards (K).
        #[arg(long = "data", short = 'k')]
        data: usize,
        /// Parity shards (M): any M shards may be lost.
        #[arg(long = "parity", short = 'm')]
        parity: usize,
        /// The directory to create.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Bytes per unit (a shard's part of one stripe; K, M suffixes).
        #[arg(long, default_value = "1M", value_parser = crate::parse_size)]
        unit: usize,
        /// Put shard i in the i-th of these directories, one per drive (RAID-style): give
        /// K + M of them; each shard is named after the set (DIR's name).shard-NNN, and DIR
        /// holds the manifest. Repeat the option, in shard order.
        #[arg(value_hint = clap::ValueHint::DirPath, long = "shard-dir", value_name = "SHARD_DIR")]
        shard_dirs: Vec<PathBuf>,
        #[command(flatten)]
        device: DeviceArgs,
        /// Worker threads on the CPU, each coding whole stripes [default: all cores].
        #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: Option<u16>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Print nothing but errors (fallbacks still go to standard error).
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// Check every unit of every shard against the manifest's CRC-32s.
    Verify {
        /// The set's directory, or a copy of its manifest (SET.manifest.json beside a placed shard).
        #[arg(value_hint = clap::ValueHint::DirPath)]
        dir: PathBuf,
        #[command(flatten)]
        device: DeviceArgs,
        /// Threads reading and checking stripes [default: all cores].
        #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: Option<u16>,
        /// Print the verdict as JSON (an `ec-verify`; exit 6 still when anything is damaged).
        #[arg(long)]
        json: bool,
        /// Print nothing but errors (damage is one: exit 6; fallbacks still go to standard error).
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// Rebuild missing or corrupt shards in place (at most M per stripe).
    Repair {
        /// The set's directory, or a copy of its manifest (SET.manifest.json beside a placed shard).
        #[arg(value_hint = clap::ValueHint::DirPath)]
        dir: PathBuf,
        #[command(flatten)]
        device: DeviceArgs,
        /// Threads checking and rebuilding stripes [default: all cores].
        #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: Option<u16>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Print nothing but errors (fallbacks still go to standard error).
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// Restore the source from the shards that survive.
    Decode {
        /// The set's directory, or a copy of its manifest (SET.manifest.json beside a placed shard).
        #[arg(value_hint = clap::ValueHint::DirPath)]
        dir: PathBuf,
        /// Threads reading, checking (and rebuilding) stripes on the CPU [default: all cores].
        #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: Option<u16>,
        /// The file to restore the source into (new unless --force).
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Replace an existing output.
        #[arg(short, long)]
        force: bool,
        #[command(flatten)]
        device: DeviceArgs,
        /// Print nothing but errors (fallbacks still go to standard error).
        #[arg(short, long)]
        quiet: bool,
    },
}

/// Where a command's work runs.
#[derive(Args, Clone)]
struct DeviceArgs {
    /// Where the work runs: cpu (this process), emulated (an emulated CSP: units go
    /// between the files and its memory, and are coded and checked there), or gpu (units
    /// staged through a pinned host window into GPU memory, coded and checked there by
    /// peerpath's kernels; needs a CUDA driver, not nvCOMP). On a device, encode takes
    /// --unit a multiple of 4K.
    #[arg(long, value_enum, default_value = "cpu")]
    engine: EcEngine,
    /// With --engine emulated or gpu: fail (exit 15) instead of working on the CPU when the
    /// device cannot start or fails (nothing is kept).
    #[arg(long)]
    no_fallback: bool,
    /// With --engine gpu: which GPU [default: 0].
    #[arg(long)]
    gpu: Option<usize>,
    /// Testing aid, with --engine emulated: inject seeded device faults, e.g. "seed=7,crash-after=40" (verify, repair and decode also take "corrupt=0.01"; encode cannot check the parity it would corrupt).
    #[arg(long, value_parser = crate::parse_faults)]
    inject_faults: Option<peerpath_device::FaultConfig>,
    /// With --engine emulated or gpu: a device with commands in flight and none completing for
    /// this long (seconds) is declared hung and the host CPU does the work (or exit 15 with
    /// --no-fallback) [default: 10 for an emulated CSP, 30 for a GPU].
    #[arg(long, value_parser = crate::parse_device_timeout)]
    device_timeout: Option<std::time::Duration>,
}

impl DeviceArgs {
    fn check(&self) -> Result<(), JobError> {
        if self.inject_faults.is_some() && self.engine != EcEngine::Emulated {
            return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
        }
        if self.gpu.is_some() && self.engine != EcEngine::Gpu {
            return Err(JobError::Usage("--gpu needs --engine gpu".into()));
        }
        if self.device_timeout.is_some() && self.engine == EcEngine::Cpu {
            return Err(crate::device_timeout_without_a_device());
        }
        Ok(())
    }

    /// The device failed (or did not start) for `why`: an error with
    /// --no-fallback; else said (`then`: what happens instead) and kept for
    /// the report.
    fn fall_back(&self, why: String, then: &str, fallback: &mut Option<String>) -> Result<(), JobError> {
        if self.no_fallback {
            return Err(JobError::Device { detail: format!("{why} (--no-fallback: nothing was kept)") });
        }
        eprintln!("peerpath: FALLBACK: {why}{then}");
        *fallback = Some(why);
        Ok(())
    }

    /// The device for the set `dir` (an emulated CSP or a GPU), where asked and where it
    /// starts; a set of units below [`ec_device::MIN_SET_UNIT_BYTES`] is refused (exit 2).
    fn set_device(&self, (dir, m): (&Path, &Manifest), fallback: &mut Option<String>) -> Result<Option<ec_device::SetDevice>, JobError> {
        let (k, p, unit, _, _) = m.shape();
        if self.engine != EcEngine::Cpu && unit < ec_device::MIN_SET_UNIT_BYTES {
            return Err(JobError::Usage(format!(
                "{}: the set's units are {}, and --engine emulated or gpu takes sets of units of at least {} (a device command per unit: smaller ones only add commands); give --engine cpu",
                Quoted(dir),
                peerpath_metrics::human_bytes(unit as u64),
                peerpath_metrics::human_bytes(ec_device::MIN_SET_UNIT_BYTES as u64)
            )));
        }
        let started = match self.engine {
            EcEngine::Cpu => return Ok(None),
            EcEngine::Emulated => ec_device::start_set(k, p, unit, self.inject_faults.clone(), self.device_timeout),
            EcEngine::Gpu => ec_device::start_set_gpu(self.gpu.unwrap_or(0), k, p, unit, self.device_timeout),
        };
        match started {
            Ok(d) => Ok(Some(d)),
            Err(why) => self.fall_back(why, ": the work runs on the host CPU", fallback).map(|()| None),
        }
    }

    /// The device asked for, in the reports' words.
    fn words(&self) -> DeviceWords {
        match self.engine {
            EcEngine::Gpu => DeviceWords { device: "1 GPU", coder: "peerpath's Reed-Solomon and CRC-32 kernels", memory: "its memory (through its pinned host window)", provenance: "measured on a real accelerator (GPU)" },
            EcEngine::Cpu | EcEngine::Emulated => DeviceWords { device: "1 emulated CSP", coder: "ISA-L inside the device process", memory: "its memory", provenance: "measured on emulated devices" },
        }
    }
}

/// How a report names the device that did a set's work.
struct DeviceWords {
    device: &'static str,
    /// What computed there.
    coder: &'static str,
    /// Where units went, e.g. "its memory".
    memory: &'static str,
    provenance: &'static str,
}

/// The manifest a command names: DIR's, or a manifest file itself (a
/// placed set's copy, `SET.manifest.json`, when DIR is gone).
fn manifest_file(set: &Path) -> PathBuf {
    if set.is_file() {
        set.to_path_buf()
    } else {
        set.join(MANIFEST)
    }
}

/// The directory a command's set lives in (where unplaced shards are).
fn set_dir(set: &Path) -> &Path {
    match set.parent() {
        Some(p) if set.is_file() => p,
        _ => set,
    }
}

/// Bytes a shard holds of each stripe unless asked otherwise (`compress --ec-unit`; `ec encode
/// --unit`'s default says the same, "1M").
pub(crate) const DEFAULT_UNIT_BYTES: usize = 1 << 20;

/// A set's manifest ([`ec_manifest::Manifest`]: parsed and checked there, with all that is
/// said of it without the file system) and where its files lie on this one.
#[derive(Debug)]
pub(crate) struct Manifest(ec_manifest::Manifest);

impl std::ops::Deref for Manifest {
    type Target = ec_manifest::Manifest;
    fn deref(&self) -> &ec_manifest::Manifest {
        &self.0
    }
}

pub fn main(a: EcArgs) -> ExitCode {
    let r = match a.command {
        EcCommand::Encode { source, data, parity, output, unit, shard_dirs, device, threads, json, quiet } => {
            device.check().and_then(|()| encode(&source, (data, parity, unit), (&output, &shard_dirs), &device, threads_or_cores(threads))).map(|r| r.print(json, quiet))
        }
        EcCommand::Verify { dir, device, threads, json, quiet } => device.check().and_then(|()| verify(&dir, &device, threads_or_cores(threads), (json, quiet))),
        EcCommand::Repair { dir, device, threads, json, quiet } => device.check().and_then(|()| repair(&dir, &device, threads_or_cores(threads))).map(|r| r.print(json, quiet)),
        EcCommand::Decode { dir, threads, output, force, device, quiet } => device.check().and_then(|()| decode(&dir, &output, force, &device, threads_or_cores(threads), quiet)),
    };
    crate::exit_code(r)
}

/// `-T`, or every core the process may use.
fn threads_or_cores(threads: Option<u16>) -> usize {
    threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize)
}

/// What `ec encode` or `ec repair` did; figures measured on this host's CPU.
#[derive(Serialize)]
struct EcReport {
    operation: &'static str,
    target: String,
    /// `target`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    target_bytes: Option<Vec<u8>>,
    code: String,
    unit_bytes: usize,
    stripes: u64,
    /// Shards written (all for encode, the rebuilt ones for repair).
    shards_written: Vec<String>,
    /// Copies of the manifest a repair wrote back beside placed shards (missing or different ones).
    manifests_written: Vec<String>,
    /// Where the coding ran and how the payload moved.
    engine: String,
    /// Host threads that coded (1 for repair, and where a device coded).
    threads: usize,
    /// Why the device asked for did not do the work (the CPU did), if so.
    fallback: Option<String>,
    seconds: f64,
    /// Seconds inside ISA-L's ec_encode_data (encoding or rebuilding), summed over the threads
    /// (on a device: its workers' time in the coding function, from its statistics).
    coding_seconds: f64,
    /// Bytes the coding read and wrote (ISA-L's erasure_code_perf counts
    /// encode as (k + m) units per stripe, a rebuild as (k + lost)) per
    /// coding second (so per core): the figure to set beside ISA-L's own benchmark.
    coding_gb_per_s: f64,
    /// What `coding_gb_per_s` is per: "a core" (a host thread or an emulated device's
    /// worker), or a GPU's commands from launch to completion.
    coding_per: &'static str,
    provenance: &'static str,
}

impl EcReport {
    fn new(operation: &'static str, target: &Path, m: &Manifest, shards: Vec<String>, started: Instant, coding: Duration, coded_bytes: u64) -> EcReport {
        let coding_seconds = coding.as_secs_f64();
        EcReport {
            operation,
            target: target.to_string_lossy().into_owned(),
            target_bytes: name_bytes(target),
            code: format!("RS({}, {})", m.data_shards, m.parity_shards),
            unit_bytes: m.unit_bytes,
            stripes: m.stripes,
            shards_written: shards,
            manifests_written: Vec::new(),
            engine: "host CPU (this process): ISA-L".into(),
            threads: 1,
            fallback: None,
            seconds: started.elapsed().as_secs_f64(),
            coding_seconds,
            coding_gb_per_s: coded_bytes as f64 / coding_seconds.max(1e-9) / 1e9,
            coding_per: "a core, by ISA-L's count",
            provenance: "measured on this host's CPU",
        }
    }

    /// As JSON, nothing (`quiet`: the fallback, if any, was said on standard error when it
    /// happened), or in words.
    fn print(&self, json: bool, quiet: bool) {
        if json {
            println!("{}", crate::jsonout::stamped("ec-report", self));
            return;
        }
        if quiet {
            return;
        }
        let target = quoted_exact(&self.target, self.target_bytes.as_deref());
        if self.operation == "repair" && self.shards_written.is_empty() && self.manifests_written.is_empty() {
            // A whole set: "nothing to repair (checked ...)", its engine's words.
            println!("{target}: {}", self.engine);
            return;
        }
        let what = match self.operation {
            "encode" => format!("{} of {} x {} bytes into {}", count(self.stripes, "stripe"), self.code, self.unit_bytes, count(self.shards_written.len(), "shard")),
            _ => {
                let mut done = Vec::new();
                if !self.shards_written.is_empty() {
                    done.push(format!("rebuilt {}", quoted_list(&self.shards_written)));
                }
                if !self.manifests_written.is_empty() {
                    done.push(format!("wrote back the manifest's copies {}", quoted_list(&self.manifests_written)));
                }
                done.join("; ")
            }
        };
        if let Some(why) = &self.fallback {
            println!("{target}: FALLBACK to the host CPU: {why}");
        }
        println!("{target}: {what} in {:.3} s; coding {:.2} GB/s {} ({}); {}", self.seconds, self.coding_gb_per_s, self.coding_per, self.provenance, self.engine);
    }
}

/// Names in a message (the manifest's shards and copies), each quoted ([`quoted_name`]).
fn quoted_list(names: &[String]) -> String {
    names.iter().map(|n| quoted_name(n)).collect::<Vec<_>>().join(", ")
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> JobError + '_ {
    move |source| JobError::TargetIo { path: path.to_path_buf(), source }
}

/// Puts a file restored from the set in `dir` in place at `output`, as
/// private as the set (the manifest keeps the source's mode).
pub(crate) fn put_restored_in_place(file: &File, temporary: &Temporary, output: &Path, dir: &Path, force: bool) -> Result<(), JobError> {
    let set = std::fs::metadata(manifest_file(dir)).ok();
    peerpath_io::Inherited::mode_of(set.as_ref()).apply(file).map_err(io(output))?;
    crate::put_in_place(file, temporary, output, force)
}

fn corrupt(path: &Path, detail: String) -> JobError {
    JobError::Damaged { path: path.to_path_buf(), detail }
}

/// Where a new set's shards go when each has a directory of its own
/// (`--shard-dir`, one per drive): shard i in `dirs[i]` as `SET.shard-NNN`.
#[derive(Clone)]
pub(crate) struct Placement {
    dirs: Vec<PathBuf>,
    /// The directories as the user gave them (relative ones relative): what errors name.
    given: Vec<PathBuf>,
    set: String,
}

impl Placement {
    /// The directories `--shard-dir` names for the set `dir` of `n` shards
    /// that survives `m` lost, checked (`n` distinct existing directories,
    /// their paths UTF-8, no shard of this set there yet) and made absolute;
    /// a warning where two share a file system (losing it loses both).
    /// `None` where none were given.
    pub(crate) fn check(given: &[PathBuf], n: usize, m: usize, dir: &Path) -> Result<Option<Placement>, JobError> {
        use std::os::unix::fs::MetadataExt;
        if given.is_empty() {
            return Ok(None);
        }
        if given.len() != n {
            return Err(JobError::Usage(format!("--shard-dir: give one directory per shard, {n} (K + M), not {}", given.len())));
        }
        let set = dir.file_name().and_then(|s| s.to_str()).filter(|s| set_name_ok(s)).ok_or_else(|| JobError::Usage(format!("{}: with --shard-dir the set's directory names its shards: give it a UTF-8 name not starting with '.'", Quoted(dir))))?;
        let mut dirs = Vec::with_capacity(n);
        let mut devices: Vec<(u64, Vec<String>)> = Vec::new();
        for (i, d) in given.iter().enumerate() {
            let abs = std::fs::canonicalize(d).map_err(|source| match source.kind() {
                std::io::ErrorKind::NotFound => JobError::TargetIo {
                    path: d.clone(),
                    source: std::io::Error::new(source.kind(), "no such directory: each --shard-dir must exist (peerpath does not make a drive's directory)"),
                },
                _ => JobError::TargetIo { path: d.clone(), source },
            })?;
            let meta = std::fs::metadata(&abs).map_err(|source| JobError::TargetIo { path: d.clone(), source })?;
            let fault = if !meta.is_dir() {
                Some("not a directory".to_string())
            } else if abs.to_str().is_none() {
                Some(format!("its path {} is not UTF-8 (the manifest names it as text)", Quoted(&abs)))
            } else {
                dirs.iter().position(|x| *x == abs).map(|j| format!("given twice: it is also shard {j}'s directory, {}", Quoted(&given[j])))
            };
            if let Some(fault) = fault {
                return Err(JobError::Usage(format!("--shard-dir {}: {fault}", Quoted(d))));
            }
            for name in [placed_name(set, i), copy_name(set)] {
                match std::fs::symlink_metadata(abs.join(&name)) {
                    Ok(_) => return Err(JobError::TargetKept { path: d.join(name), why: PLACED_KEPT.into() }),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    // A name too long for the file system, say: before any work, not after it.
                    Err(source) => return Err(JobError::TargetIo { path: d.join(name), source }),
                }
            }
            match devices.iter_mut().find(|(dev, _)| *dev == meta.dev()) {
                Some((_, on)) => on.push(Quoted(d).to_string()),
                None => devices.push((meta.dev(), vec![Quoted(d).to_string()])),
            }
            dirs.push(abs);
        }
        for (_, on) in devices.iter().filter(|(_, on)| on.len() > 1) {
            let verdict = if on.len() > m { format!("more than the {m} the code survives") } else { format!("the code survives {m}") };
            eprintln!("peerpath: warning: shard directories {} are on one file system: losing it loses {} shards ({verdict})", on.join(", "), on.len());
        }
        Ok(Some(Placement { dirs, given: given.to_vec(), set: set.to_string() }))
    }
}

/// Where the `n` shards of the new set `dir` are made (as temporaries, in
/// the directory they will be linked into): beside `dir`, or placed.
pub(crate) fn shard_targets(dir: &Path, placement: Option<&Placement>, n: usize) -> Vec<PathBuf> {
    match placement {
        Some(p) => p.dirs.iter().enumerate().map(|(i, d)| d.join(placed_name(&p.set, i))).collect(),
        None => (0..n).map(|i| dir.with_file_name(shard_name(i))).collect(),
    }
}

/// Where each shard of the new set `dir` lies once the set is in place:
/// what an error writing a shard names (its temporary has no name, and
/// the drive that filled up is the one to say).
pub(crate) fn shard_paths(dir: &Path, placement: Option<&Placement>, n: usize) -> Vec<PathBuf> {
    match placement {
        Some(p) => p.given.iter().enumerate().map(|(i, d)| d.join(placed_name(&p.set, i))).collect(),
        None => (0..n).map(|i| dir.join(shard_name(i))).collect(),
    }
}

/// Holds the directories the shards and the manifest of the new set `dir` are written in,
/// while they are: beside `dir`, and those of `placement` ([`hold_dirs`]).
pub(crate) fn hold_set_dirs(dir: &Path, placement: Option<&Placement>) -> Vec<OutputDir> {
    hold_dirs(std::iter::once(peerpath_io::parent_dir(dir)).chain(placement.into_iter().flat_map(|p| p.dirs.iter().cloned())))
}

/// Holds each of `dirs`, directories a command writes in, while it does ([`OutputDir::hold`],
/// as compress and decompress hold theirs): another job that made one and fails does not
/// remove it under this one (what this one writes there has no name until it is put in
/// place, so the directory can look empty).
fn hold_dirs(dirs: impl IntoIterator<Item = PathBuf>) -> Vec<OutputDir> {
    let mut dirs: Vec<PathBuf> = dirs.into_iter().collect();
    dirs.sort();
    dirs.dedup();
    dirs.iter().map(|d| OutputDir::hold(d)).collect()
}

/// A new set's directory `dir` must not exist: the source itself is named as such (exit 5),
/// anything else as a directory that is never replaced or merged into (exit 4).
/// Its parent must exist: the set's directory is made in one, and the error names the missing
/// directory (not a shard inside the set that could not be made).
pub(crate) fn check_new_set_dir(dir: &Path, source: Option<&Path>) -> Result<(), JobError> {
    let Ok(found) = std::fs::symlink_metadata(dir) else {
        let parent = peerpath_io::parent_dir(dir);
        if std::fs::symlink_metadata(&parent).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            let why = "no such directory: the set's directory is made in an existing one (peerpath makes no parent directories)";
            return Err(JobError::TargetIo { path: parent, source: std::io::Error::new(std::io::ErrorKind::NotFound, why) });
        }
        return Ok(());
    };
    use std::os::unix::fs::MetadataExt;
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    if source.is_some_and(|s| id(s).is_some() && id(s) == id(dir)) {
        return Err(JobError::SameFile { path: dir.to_path_buf() });
    }
    if !found.is_dir() {
        return Err(JobError::TargetKept { path: dir.to_path_buf(), why: "it is a file, not a directory: the set is made as a new directory there, never over an existing name".into() });
    }
    Err(JobError::TargetDirExists { path: dir.to_path_buf() })
}

fn encode(source: &Path, (k, m, unit): (usize, usize, usize), (dir, placed): (&Path, &[PathBuf]), e: &DeviceArgs, threads: usize) -> Result<EcReport, JobError> {
    let started = Instant::now();
    let mut coding = Duration::ZERO;
    let code = RsCode::new(k, m).map_err(JobError::Usage)?;
    check_unit(k, m, unit, "--unit")?;
    check_new_set_dir(dir, Some(source))?;
    let placement = Placement::check(placed, k + m, m, dir)?;
    let _held = hold_set_dirs(dir, placement.as_ref());
    if e.engine != EcEngine::Cpu && !unit.is_multiple_of(4096) {
        return Err(JobError::Usage("the devices move whole 4 KiB blocks by DMA: --unit must be a multiple of 4K with --engine emulated or gpu".into()));
    }
    if e.inject_faults.as_ref().is_some_and(|f| f.corrupt_probability > 0.0) {
        // The manifest's checksums are the device's own: nothing would catch a flipped parity byte.
        return Err(JobError::Usage("ec encode cannot check the device's parity: --inject-faults takes no corrupt= with it".into()));
    }
    let (mut device, mut fallback) = (None, None);
    let started_device = match e.engine {
        EcEngine::Cpu => None,
        EcEngine::Emulated => Some(ec_device::start(k, m, unit, e.inject_faults.clone(), e.device_timeout)),
        EcEngine::Gpu => Some(ec_device::start_gpu(e.gpu.unwrap_or(0), k, m, unit, e.device_timeout)),
    };
    match started_device {
        Some(Ok(d)) => device = Some(d),
        Some(Err(why)) => e.fall_back(why, ": erasure coding on the host CPU instead", &mut fallback)?,
        None => {}
    }
    // O_DIRECT only for the device's reads (DMA into its memory); the CPU path reads into its own buffers.
    // The source's stamp before it is read: a change while it is read is refused.
    let stamp = std::fs::metadata(source).ok().filter(std::fs::Metadata::is_file).map(|m| peerpath_io::Stamp::of(&m));
    let open = |direct: bool| -> Result<(File, u64), JobError> {
        crate::refuse_stream_source(source, "ec encode reads its source by offset (a file or a block device)")?;
        let src = peerpath_io::open_source(source, direct).map_err(|e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e })?;
        match src.kind {
            peerpath_io::SourceKind::Regular { size_bytes } | peerpath_io::SourceKind::BlockDevice { size_bytes } => {
                check_stripes(k + m, size_bytes.div_ceil((k * unit) as u64), source)?;
                Ok((src.file, size_bytes))
            }
            peerpath_io::SourceKind::Stream => Err(JobError::Usage(format!("{} is not a regular file: ec encode reads its source by offset (a file or a block device)", Quoted(source)))),
        }
    };
    // Shards are written as unnamed files (nothing survives a killed
    // process), linked into a scratch directory beside DIR at the end, and
    // the directory is renamed into place (never over an existing name).
    let n = k + m;
    let names = shard_targets(dir, placement.as_ref(), n);
    let paths = shard_paths(dir, placement.as_ref(), n);
    let discard_all = |files: &[(File, Temporary)]| files.iter().for_each(|(_, t)| peerpath_io::discard(t));
    let mut crcs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut path = None;
    let mut coded_on_device = None;
    if let Some(dev) = device.as_mut() {
        let (src, size) = open(true)?;
        let files = create_temporaries(&names, &paths, true)?;
        let targets: Vec<&File> = files.iter().map(|(f, _)| f).collect();
        match ec_device::encode(dev.as_mut(), (&src, source), size, k, m, unit, (&targets, &paths)) {
            Ok(pass) => {
                (crcs, coding, path) = (pass.crcs, pass.coding, Some(pass.path));
                coded_on_device = Some((src, size, files));
            }
            Err(crate::chain_device::Stop::Job(err)) => {
                discard_all(&files);
                return Err(err);
            }
            Err(crate::chain_device::Stop::Device(why) | crate::chain_device::Stop::Verdict(why)) => {
                discard_all(&files);
                e.fall_back(why, "; the set is encoded on the host CPU from the start (nothing the device wrote was kept)", &mut fallback)?;
                device = None;
            }
        }
    }
    let (src, size, files) = match coded_on_device {
        Some(done) => done,
        None => {
            let (src, size) = open(false)?;
            let files = create_temporaries(&names, &paths, false)?;
            // A stripe goes in slices of all its units that fit in a core's cache
            // together, so ISA-L codes data the read has just brought in (whole
            // 1 MiB units gave 75 % of erasure_code_perf's warm rate; bench/ec.sh).
            let slice = encode_slice_bytes(n, unit);
            let stripes = size.div_ceil((k * unit) as u64).max(1);
            // Each worker reads, codes and writes whole stripes at their own offsets.
            let slices = || (0..n).map(|_| zeroed(slice, "a slice of a unit being coded", EACH_THREAD)).collect::<Result<Vec<_>, _>>();
            let done = for_each_stripe(threads, stripes, || Ok((slices()?, Vec::new(), Duration::ZERO)), |(units, mine, coded), s| {
                let crcs = encode_stripe(&code, s, (k, unit), (&src, size), &files, units, coded).map_err(|e| match e {
                    StripeError::Source(e) => JobError::SourceIo { path: source.to_path_buf(), detail: e.to_string() },
                    StripeError::Target(i, e) => io(&paths[i])(e),
                })?;
                mine.push((s, crcs));
                Ok(())
            });
            let done = match done {
                Ok(d) => d,
                Err(err) => {
                    discard_all(&files);
                    return Err(err);
                }
            };
            coding = done.iter().map(|d| d.2).sum();
            let mut per_stripe: Vec<(u64, Vec<u32>)> = done.into_iter().flat_map(|d| d.1).collect();
            per_stripe.sort_unstable_by_key(|(s, _)| *s);
            for (_, c) in per_stripe {
                crcs.iter_mut().zip(c).for_each(|(all, x)| all.push(x));
            }
            (src, size, files)
        }
    };
    if let Err(err) = crate::source_size_unchanged(&src, source, size, stamp) {
        discard_all(&files);
        return Err(err);
    }
    // Shards and manifest are as private as the source (gzip's rule for outputs).
    let mode = peerpath_io::Inherited::mode_of(src.metadata().ok().as_ref());
    let stripes = size.div_ceil((k * unit) as u64).max(1);
    let workers = stripe_threads(threads, stripes);
    let mut manifest = Manifest::new(source.file_name().unwrap_or(source.as_os_str()), size, (k, m, unit), stripes, crcs);
    manifest.place(placement.as_ref());
    publish(dir, files, &manifest, &mode)?;
    let coded = stripes * (n * unit) as u64;
    let mut report = EcReport::new("encode", dir, &manifest, (0..n).map(|i| manifest.shard_label(i)).collect(), started, coding, coded);
    if device.is_none() {
        report.threads = workers;
        report.engine = format!("host CPU (this process, {}): ISA-L", count(report.threads, "thread"));
    }
    if let (Some(path), Some(dev)) = (path, device.as_ref()) {
        let w = e.words();
        report.engine = format!("{} ({}, {}): {path}", w.device, dev.name(), w.coder);
        if let Some(what) = dev.description() {
            report.engine += &format!("; the device: {what}");
        }
        report.provenance = w.provenance;
        if e.engine == EcEngine::Gpu {
            report.coding_per = GPU_CODING;
        }
    }
    report.fallback = fallback;
    Ok(report)
}

/// Why a stripe could not be encoded: reading the source, or writing a shard.
enum StripeError {
    Source(std::io::Error),
    /// Writing shard `.0`.
    Target(usize, std::io::Error),
}

/// Encodes stripe `s` (k units of `unit` bytes from `src`, zero past its
/// end) in slices of `units`' length, writing every unit at its offset in
/// its shard; the units' CRC-32s. `coding` gains the time inside ISA-L.
fn encode_stripe(code: &RsCode, s: u64, (k, unit): (usize, usize), (src, size): (&File, u64), files: &[(File, Temporary)], units: &mut [Vec<u8>], coding: &mut Duration) -> Result<Vec<u32>, StripeError> {
    use std::os::unix::fs::FileExt;
    let slice = units[0].len();
    let mut hashers = vec![crc32fast::Hasher::new(); units.len()];
    for start in (0..unit).step_by(slice) {
        let len = slice.min(unit - start);
        for (i, d) in units.iter_mut().take(k).enumerate() {
            let at = (s * k as u64 + i as u64) * unit as u64 + start as u64;
            read_at_up_to(src, &mut d[..len], at, size).map_err(StripeError::Source)?;
        }
        let (data, parity) = units.split_at_mut(k);
        let d: Vec<&[u8]> = data.iter().map(|u| &u[..len]).collect();
        let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|u| &mut u[..len]).collect();
        let t = Instant::now();
        code.encode(&d, &mut p);
        *coding += t.elapsed();
        for (i, u) in units.iter().enumerate() {
            hashers[i].update(&u[..len]);
            files[i].0.write_all_at(&u[..len], s * unit as u64 + start as u64).map_err(|e| StripeError::Target(i, e))?;
        }
    }
    Ok(hashers.into_iter().map(crc32fast::Hasher::finalize).collect())
}

impl Manifest {
    /// A new set's manifest, naming the source (or stream) `source` by its exact bytes.
    pub(crate) fn new(source: impl AsRef<OsStr>, source_bytes: u64, shape: (usize, usize, usize), stripes: u64, crcs: Vec<Vec<u32>>) -> Manifest {
        let mut m = ec_manifest::Manifest::new(String::new(), source_bytes, shape, stripes, crcs);
        m.name_source(source.as_ref().as_bytes());
        Manifest(m)
    }

    /// Where shard `i` of the set `set` (a directory, or its manifest
    /// file) lies: in the set's directory, or in the directory the
    /// manifest names for it (checked when it was loaded).
    pub(crate) fn shard_path(&self, set: &Path, i: usize) -> PathBuf {
        self.shard_path_in(set_dir(set), i)
    }

    /// The copies missing, or whose text is not this manifest's.
    fn stale_copies(&self) -> Vec<PathBuf> {
        let text = self.text();
        self.copies().into_iter().filter(|p| read_manifest_file(p, text.len() as u64).map_or(true, |t| t != text.as_bytes())).collect()
    }

    /// Names each shard where `placement` puts it (nothing without one).
    pub(crate) fn place(&mut self, placement: Option<&Placement>) {
        let Some(p) = placement else { return };
        let dirs: Vec<&str> = p.dirs.iter().map(|d| d.to_str().expect("checked to be UTF-8")).collect();
        self.0.place_shards(&p.set, &dirs);
    }
}

/// Puts the shards (`files`, unnamed temporaries) and the manifest in
/// place as the new directory `dir`, or nothing (the temporaries are
/// discarded on an error). Shards placed in directories of their own
/// (`--shard-dir`) are linked there first, each with a copy of the
/// manifest beside it (so that the set outlives DIR's drive), then the
/// directory with the manifest appears: a set without its manifest is no
/// set, and the files already linked are removed if a later step fails.
pub(crate) fn publish(dir: &Path, mut files: Vec<(File, Temporary)>, manifest: &Manifest, mode: &peerpath_io::Inherited) -> Result<(), JobError> {
    let n = files.len();
    let text = manifest.text();
    let copies = manifest.copies();
    let mut linked: Vec<PathBuf> = Vec::new();
    // What each file will be, in `files`' order, for errors: the shard or copy on a full drive
    // is named, not the set.
    let shown: Vec<PathBuf> = (0..n).map(|i| manifest.shard_path(dir, i)).chain(copies.iter().cloned()).chain([dir.join(MANIFEST)]).collect();
    let mut at = dir.to_path_buf();
    let published = (|| -> std::io::Result<()> {
        for target in copies.iter().chain([&dir.with_file_name(MANIFEST)]) {
            at = shown[files.len()].clone();
            files.push(peerpath_io::create_temporary(target, false).map(|(opened, t)| (opened.file, t))?);
            files.last_mut().expect("just pushed").0.write_all(text.as_bytes())?;
        }
        for (i, (f, _)) in files.iter().enumerate() {
            at = shown[i].clone();
            mode.apply(f)?;
            f.sync_all()?;
        }
        at = dir.to_path_buf();
        // Everything is durable before the directory exists: the window in
        // which SIGKILL could leave it is a few links and a rename long
        // (and the next run beside it removes what a dead process left).
        let scratch = ScratchDir::beside(dir)?;
        for (i, (f, temp)) in files.iter().enumerate() {
            let path = match i {
                i if i == n + copies.len() => scratch.path().join(MANIFEST),
                i if i >= n => copies[i - n].clone(),
                i if manifest.placed() => manifest.shard_path(dir, i),
                i => scratch.path().join(shard_name(i)),
            };
            if i < n + copies.len() && manifest.placed() {
                // In other directories than the set's: removed by a signal until the set is whole.
                peerpath_io::publish_provisional(f, temp, &path)?;
                linked.push(path);
            } else {
                peerpath_io::publish(f, temp, &path, false)?;
            }
        }
        let mut dirs: Vec<&Path> = linked.iter().filter_map(|p| p.parent()).collect();
        dirs.sort_unstable();
        dirs.dedup();
        for d in dirs {
            File::open(d)?.sync_all()?;
        }
        scratch.publish(dir)
    })();
    if let Err(e) = published {
        files.iter().for_each(|(_, t)| peerpath_io::discard(t));
        linked.iter().for_each(|p| drop(std::fs::remove_file(p)));
        peerpath_io::settled(&linked);
        let kept = |path: PathBuf| JobError::TargetKept { path, why: PLACED_KEPT.into() };
        return Err(match e.kind() {
            std::io::ErrorKind::AlreadyExists if linked.len() < n && manifest.placed() => kept(manifest.shard_path(dir, linked.len())),
            std::io::ErrorKind::AlreadyExists if linked.len() < n + copies.len() && manifest.placed() => kept(copies[linked.len() - n].clone()),
            std::io::ErrorKind::AlreadyExists => JobError::TargetDirExists { path: dir.to_path_buf() },
            _ => io(&at)(e),
        });
    }
    peerpath_io::settled(&linked);
    Ok(())
}

/// Why a placed shard or manifest copy in the way is not replaced.
const PLACED_KEPT: &str = "a set's shards and manifest copies never replace a file, even with --force (remove it if a run that was killed left it)";

/// Erasure-codes a stream whose length is known only at its end (the
/// compress chain's output): stripes of `k` units in order, each coded and
/// written to the shards as it fills; the first stripe is kept until
/// [`StreamEncoder::finish`], so that bytes known last (an encrypted
/// file's header) can be put at the stream's start. Memory: two stripes
/// and one stripe's parity.
pub(crate) struct StreamEncoder {
    code: RsCode,
    k: usize,
    unit: usize,
    files: Vec<(File, Temporary)>,
    /// Where each shard will lie (for errors).
    paths: Vec<PathBuf>,
    dir: PathBuf,
    placement: Option<Placement>,
    first: Vec<u8>,
    stripe: Vec<u8>,
    /// Bytes in the stripe being filled (`first` while `stripes` is 0).
    fill: usize,
    /// Stripes already full.
    stripes: u64,
    parity: Vec<Vec<u8>>,
    /// Per shard, the CRC-32s of stripes 1, 2, ... (stripe 0's at the end).
    crcs: Vec<Vec<u32>>,
    pub coding: Duration,
    pub len: u64,
    /// The directories written in ([`hold_set_dirs`]).
    _held: Vec<OutputDir>,
}

impl StreamEncoder {
    /// Shards for `dir` (a new directory), as unnamed temporaries beside it
    /// or in the directories of `placement`.
    pub(crate) fn new(dir: &Path, k: usize, m: usize, unit: usize, placement: Option<Placement>) -> Result<StreamEncoder, JobError> {
        let code = RsCode::new(k, m).map_err(JobError::Usage)?;
        check_unit(k, m, unit, "--ec-unit")?;
        check_new_set_dir(dir, None)?;
        let _held = hold_set_dirs(dir, placement.as_ref());
        let fewer = "the chain holds two stripes and a stripe's parity: give a smaller --ec-unit or fewer data shards";
        let first = zeroed(k * unit, "the chain's first stripe", fewer)?;
        let stripe = zeroed(k * unit, "the chain's stripe being filled", fewer)?;
        let parity = (0..m).map(|_| zeroed(unit, "a parity unit", fewer)).collect::<Result<Vec<_>, _>>()?;
        let paths = shard_paths(dir, placement.as_ref(), k + m);
        let files = create_temporaries(&shard_targets(dir, placement.as_ref(), k + m), &paths, false)?;
        Ok(StreamEncoder { code, k, unit, files, paths, dir: dir.to_path_buf(), placement, first, stripe, fill: 0, stripes: 0, parity, crcs: vec![Vec::new(); k + m], coding: Duration::ZERO, len: 0, _held })
    }

    /// Appends bytes to the stream.
    pub(crate) fn put(&mut self, mut data: &[u8]) -> Result<(), JobError> {
        let stripe_bytes = self.k * self.unit;
        while !data.is_empty() {
            if self.fill == 0 {
                // A stripe begun: the set grows to `stripes + 1`.
                check_stripes(self.files.len(), self.stripes + 1, &self.dir)?;
            }
            let buf = if self.stripes == 0 { &mut self.first } else { &mut self.stripe };
            let n = data.len().min(stripe_bytes - self.fill);
            buf[self.fill..self.fill + n].copy_from_slice(&data[..n]);
            (self.fill, data, self.len) = (self.fill + n, &data[n..], self.len + n as u64);
            if self.fill == stripe_bytes {
                if self.stripes > 0 {
                    let s = self.stripes;
                    let crcs = self.code_and_write(s, false)?;
                    self.crcs.iter_mut().zip(crcs).for_each(|(c, x)| c.push(x));
                }
                self.stripes += 1;
                self.fill = 0;
            }
        }
        Ok(())
    }

    /// Codes stripe `s` (`first` or the current one, zero-padded past
    /// `fill` when it is the last) and writes its units; their CRC-32s.
    fn code_and_write(&mut self, s: u64, first: bool) -> Result<Vec<u32>, JobError> {
        let buf = if first { &self.first } else { &self.stripe };
        let data: Vec<&[u8]> = buf.chunks(self.unit).collect();
        let mut parity: Vec<&mut [u8]> = self.parity.iter_mut().map(Vec::as_mut_slice).collect();
        let t = Instant::now();
        self.code.encode(&data, &mut parity);
        self.coding += t.elapsed();
        let mut crcs = Vec::with_capacity(self.files.len());
        for (i, u) in data.iter().copied().chain(self.parity.iter().map(Vec::as_slice)).enumerate() {
            crcs.push(crc32fast::hash(u));
            std::os::unix::fs::FileExt::write_all_at(&self.files[i].0, u, s * self.unit as u64).map_err(io(&self.paths[i]))?;
        }
        Ok(crcs)
    }

    /// Codes what is left, with `head` written over the stream's first
    /// bytes; the shards and a manifest naming `source` become `dir`.
    pub(crate) fn finish(mut self, head: &[u8], source: impl AsRef<OsStr>, mode: &peerpath_io::Inherited) -> Result<(u64, Duration), JobError> {
        assert!(head.len() as u64 <= self.len.min(self.unit as u64 * self.k as u64), "the head lies in the first stripe");
        let done = (|| -> Result<u64, JobError> {
            if self.stripes > 0 && self.fill > 0 {
                self.stripe[self.fill..].fill(0);
                let crcs = self.code_and_write(self.stripes, false)?;
                self.crcs.iter_mut().zip(crcs).for_each(|(c, x)| c.push(x));
            }
            let stripes = if self.fill > 0 || self.stripes == 0 { self.stripes + 1 } else { self.stripes };
            if self.stripes == 0 {
                self.first[self.fill..].fill(0);
            }
            self.first[..head.len()].copy_from_slice(head);
            let crcs = self.code_and_write(0, true)?;
            self.crcs.iter_mut().zip(crcs).for_each(|(c, x)| c.insert(0, x));
            Ok(stripes)
        })();
        let stripes = match done {
            Ok(s) => s,
            Err(e) => {
                self.files.iter().for_each(|(_, t)| peerpath_io::discard(t));
                return Err(e);
            }
        };
        let m = self.parity.len();
        let mut manifest = Manifest::new(source, self.len, (self.k, m, self.unit), stripes, std::mem::take(&mut self.crcs));
        manifest.place(self.placement.as_ref());
        publish(&self.dir, self.files, &manifest, mode)?;
        Ok((stripes, self.coding))
    }

    /// Removes the shards made so far (the chain failed).
    pub(crate) fn discard(self) {
        self.files.iter().for_each(|(_, t)| peerpath_io::discard(t));
    }
}

/// A new set's code: units of 1 byte to 256 MiB, and stripes this machine could decode
/// ([`decode_bytes`]: at most half its memory, the share other commands size their buffers
/// by), so that no set is made that `decode` here could only abort on. `option`: the option
/// that gave the unit, as the user typed it (`--unit`, `--ec-unit`).
pub(crate) fn check_unit(k: usize, m: usize, unit: usize, option: &str) -> Result<(), JobError> {
    if unit == 0 || unit > MAX_UNIT_BYTES {
        return Err(JobError::Usage(format!("{option} must be 1 byte to 256 MiB")));
    }
    let need = decode_bytes(k, m, unit);
    if let Some(total) = crate::machine_memory_bytes().filter(|&t| need > t as u64 / 2) {
        return Err(JobError::Usage(format!(
            "a stripe of {k} units of {unit} bytes cannot be decoded on this machine: decoding holds {} per thread (the stripe, and {m} parity and {m} rebuilt units where units are lost), more than half of its memory ({}); give a smaller {option} or fewer data shards",
            peerpath_metrics::human_bytes(need),
            peerpath_metrics::human_bytes(total as u64)
        )));
    }
    Ok(())
}

/// A set of `n` shards in `stripes` stripes (of the source, or stream, `what`), refused (exit 2)
/// where its manifest could be bigger than the commands read ([`ec_manifest::max_stripes`]).
pub(crate) fn check_stripes(n: usize, stripes: u64, what: &Path) -> Result<(), JobError> {
    let most = ec_manifest::max_stripes(n);
    if stripes <= most {
        return Ok(());
    }
    Err(JobError::Usage(format!(
        "{}: {stripes} stripes of {n} shards are more than a manifest holds ({most} stripes, a checksum each per shard, in at most {}): give a larger unit or fewer shards",
        Quoted(what),
        peerpath_metrics::human_bytes(MAX_MANIFEST_BYTES)
    )))
}

/// The memory one thread of `decode` (or the reverse chain) holds at most for a set of `k` +
/// `m` units of `unit` bytes: the stripe's k data units, and where units are lost up to `m`
/// parity units read and `m` units rebuilt.
fn decode_bytes(k: usize, m: usize, unit: usize) -> u64 {
    (k as u64 + 2 * m as u64) * unit as u64
}

/// `bytes` zeroed bytes for `what`, or the error that says the memory is lacking (exit 1; the
/// allocator's abort, SIGABRT, said nothing). `fewer`: how to do with less.
fn zeroed(bytes: usize, what: &str, fewer: &str) -> Result<Vec<u8>, JobError> {
    let mut v = Vec::new();
    grow(&mut v, bytes, what, fewer)?;
    Ok(v)
}

/// Grows `buf` to `len` zeroed bytes (where shorter), fallibly ([`zeroed`]).
fn grow(buf: &mut Vec<u8>, len: usize, what: &str, fewer: &str) -> Result<(), JobError> {
    if let Some(more) = len.checked_sub(buf.len()).filter(|&n| n > 0) {
        buf.try_reserve_exact(more).map_err(|_| JobError::OutOfMemory(format!("out of memory: {what} needs {} ({len} bytes), which could not be allocated (the machine's memory, or the address-space limit: ulimit -v); {fewer}", peerpath_metrics::human_bytes(len as u64))))?;
        buf.resize(len, 0);
    }
    Ok(())
}

/// How a reader of a set does with less memory.
const ONE_STRIPE: &str = "a reader holds a stripe (K units, and up to 2M more where units are lost): give ec decode fewer threads (-T), raise the limit, or encode with a smaller unit (--unit; compress: --ec-unit)";

/// How a job whose threads each hold slices of units (a few hundred KiB) does with less memory.
const EACH_THREAD: &str = "each thread holds its own: give fewer threads (-T), or raise the limit";

/// One temporary file per target (unnamed where the file system allows);
/// on an error, those already made are discarded.
/// The error names the target whose temporary could not be made (a read-only or full
/// drive of its own, with `--shard-dir`), not the set.
/// The shards' temporaries, in the directories of `targets` ([`shard_targets`]); an error
/// names the shard where it would lie once in place (`paths`, [`shard_paths`]): the set's
/// directory is not made yet, and a name beside it (`x/shard-000`) is no file of the user's.
pub(crate) fn create_temporaries(targets: &[PathBuf], paths: &[PathBuf], direct: bool) -> Result<Vec<(File, Temporary)>, JobError> {
    let mut made = Vec::with_capacity(targets.len());
    for (t, path) in targets.iter().zip(paths) {
        match peerpath_io::create_temporary(t, direct) {
            Ok((opened, temp)) => made.push((opened.file, temp)),
            Err(source) => {
                made.iter().for_each(|(_, t)| peerpath_io::discard(t));
                return Err(JobError::TargetIo { path: path.clone(), source });
            }
        }
    }
    Ok(made)
}

/// Bytes of each unit coded at a time: `n` slices fit in 512 KiB (a core's
/// L2 with room to spare), a multiple of 4 KiB, at most the unit.
fn encode_slice_bytes(n: usize, unit: usize) -> usize {
    peerpath_func::ec::coding_slice_bytes(n).min(unit)
}

/// Reads `buf.len()` bytes at `at`, or up to the end of the file (`size`
/// bytes when opened) with the rest zeroed (the last stripe's padding). A
/// source that ends before `size` (it shrank) is an error, not zeros.
fn read_at_up_to(f: &File, buf: &mut [u8], at: u64, size: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let want = size.saturating_sub(at).min(buf.len() as u64) as usize;
    let mut n = 0;
    while n < want {
        match f.read_at(&mut buf[n..want], at + n as u64)? {
            0 => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("the source shrank while it was read: it ended at byte {}, {size} bytes when opened; nothing was kept", at + n as u64))),
            r => n += r,
        }
    }
    buf[n..].fill(0);
    Ok(())
}

pub(crate) fn load(dir: &Path) -> Result<(Manifest, RsCode), JobError> {
    let path = manifest_file(dir);
    // One too big to be a manifest is a damaged one (exit 6), as bytes that are not text are.
    let bytes = read_manifest_file(&path, MAX_MANIFEST_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => corrupt(&path, e.to_string()),
        _ => JobError::SourceUnreadable { path: path.clone(), source: e },
    })?;
    // Bytes that are not text are a damaged manifest (exit 6), not an unreadable one.
    ec_manifest::parse_bytes(&bytes).map(|(m, code)| (Manifest(m), code)).map_err(|e| corrupt(&path, e))
}

/// A manifest file's bytes (the set's, or a copy beside a placed shard), where it is a regular
/// file of at most `limit` bytes (a bigger one is FileTooLarge, never read); no more is read than
/// it held when opened. Anything else in its place (a FIFO, whose open waits for a writer for
/// ever, a device, a directory) is refused by its metadata, never opened; one put there since is
/// opened without waiting and refused by its open file's ([`peerpath_topo::open_regular`]).
fn read_manifest_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let size = |m: std::fs::Metadata| match m.len() {
        _ if !m.is_file() => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")),
        len if len > limit => Err(std::io::Error::new(std::io::ErrorKind::FileTooLarge, format!("{len} bytes, more than a manifest holds ({}): not read", peerpath_metrics::human_bytes(limit)))),
        len => Ok(len),
    };
    size(std::fs::metadata(path)?)?;
    let f = peerpath_topo::open_regular(path)?;
    let len = size(f.metadata()?)?;
    let mut bytes = Vec::new();
    f.take(len).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A manifest's text, checked ([`ec_manifest::parse`]).
fn parse_manifest(text: &str) -> Result<(Manifest, RsCode), String> {
    ec_manifest::parse(text).map(|(m, code)| (Manifest(m), code))
}

/// Whether unit `i` of stripe `s` is there whole and its CRC-32 matches the
/// manifest, read in pieces of `buf`'s length (so a check holds one piece,
/// whatever the unit size).
fn unit_checks_out(m: &Manifest, files: &[Option<File>], i: usize, s: u64, buf: &mut [u8]) -> bool {
    use std::os::unix::fs::FileExt;
    let Some(f) = files[i].as_ref() else { return false };
    let mut h = crc32fast::Hasher::new();
    let piece_bytes = buf.len();
    for at in (0..m.unit_bytes).step_by(piece_bytes) {
        let piece = &mut buf[..piece_bytes.min(m.unit_bytes - at)];
        if f.read_exact_at(piece, s * m.unit_bytes as u64 + at as u64).is_err() {
            return false;
        }
        h.update(piece);
    }
    h.finalize() == m.shards[i].crc32[s as usize]
}

fn open_shards(dir: &Path, m: &Manifest) -> Vec<Option<File>> {
    (0..m.shards.len()).map(|i| shard_file(&m.shard_path(dir, i)).and_then(|p| open_shard(p, false))).collect()
}

/// `path` where it is a regular file: anything else in a shard's place (a FIFO, whose open
/// would wait for a writer for ever, a directory, a device) is a missing shard, never opened.
pub(crate) fn shard_file(path: &Path) -> Option<&Path> {
    std::fs::metadata(path).is_ok_and(|m| m.is_file()).then_some(path)
}

/// A shard's file ([`shard_file`]) opened to read: one swapped for a FIFO since it was looked
/// at is opened without waiting for a writer and refused by its open file's type
/// ([`peerpath_topo::open_regular`]), a missing shard. Reads then wait as usual (O_NONBLOCK
/// off), with O_DIRECT where `direct` and the file system takes it.
pub(crate) fn open_shard(path: &Path, direct: bool) -> Option<File> {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let f = peerpath_topo::open_regular(path).ok()?;
    let flags = fcntl_getfl(&f).ok()? - OFlags::NONBLOCK;
    if !(direct && fcntl_setfl(&f, flags | OFlags::DIRECT).is_ok()) {
        fcntl_setfl(&f, flags).ok()?;
    }
    Some(f)
}

/// Per stripe, which shards are bad. Stripes are checked on `threads`
/// threads, each holding one 1 MiB piece at a time (the error: memory refused it).
fn survey(dir: &Path, m: &Manifest, threads: usize) -> Result<Vec<Vec<usize>>, JobError> {
    let files = open_shards(dir, m);
    let checked = for_each_stripe(threads, m.stripes, || Ok((zeroed(m.unit_bytes.min(1 << 20), "a piece of a unit being checked", EACH_THREAD)?, Vec::new())), |(buf, mine), s| {
        mine.push((s, (0..m.shards.len()).filter(|&i| !unit_checks_out(m, &files, i, s, buf)).collect::<Vec<usize>>()));
        Ok(())
    })?;
    let mut bad = vec![Vec::new(); m.stripes as usize];
    checked.into_iter().flat_map(|c| c.1).for_each(|(s, b)| bad[s as usize] = b);
    Ok(bad)
}

/// Shards whose files hold bytes past the set's last stripe (appended to
/// since they were written): all their units may check out, but a shard is
/// its units and nothing more, so `verify` names them and `repair` rewrites
/// them to their length.
fn overlong_shards(dir: &Path, m: &Manifest) -> Vec<usize> {
    let bytes = m.stripes * m.unit_bytes as u64;
    (0..m.shards.len()).filter(|&i| std::fs::metadata(m.shard_path(dir, i)).is_ok_and(|f| f.is_file() && f.len() > bytes)).collect()
}

/// The stripes with more bad units than the code can rebuild.
fn lost_stripes(m: &Manifest, bad: &[Vec<usize>]) -> Vec<u64> {
    (0..m.stripes).filter(|&s| bad[s as usize].len() > m.parity_shards).collect()
}

/// `stripes` (ascending) as runs of consecutive stripes, each `[first, last]`.
fn stripe_ranges(stripes: &[u64]) -> Vec<[u64; 2]> {
    let mut ranges: Vec<[u64; 2]> = Vec::new();
    for &s in stripes {
        match ranges.last_mut() {
            Some(r) if r[1] + 1 == s => r[1] = s,
            _ => ranges.push([s, s]),
        }
    }
    ranges
}

/// The runs of stripes a message names before it gives only their count.
const RANGES_SAID: usize = 8;

/// `stripes` (ascending) in a message: the first [`RANGES_SAID`] runs and how
/// many stripes in all, "stripes 0-4095 (4096 stripes)", however many there are (listing
/// every one made a line as long as the set is large).
fn stripes_words(stripes: &[u64]) -> String {
    let ranges = stripe_ranges(stripes);
    let mut said: Vec<String> = ranges.iter().take(RANGES_SAID).map(|&[a, b]| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    match (stripes.len(), ranges.len()) {
        (1, _) => format!("stripe {}", stripes[0]),
        (n, r) if r > RANGES_SAID => {
            said.push("...".into());
            format!("stripes {} ({n} stripes in {r} runs)", said.join(", "))
        }
        (n, _) => format!("stripes {} ({n} stripes)", said.join(", ")),
    }
}

/// What a GPU's coding rate is over.
const GPU_CODING: &str = "on the GPU, by ISA-L's count over its coding commands' time, launch to completion";

/// Where a set's units were checked, and how they moved, in words, with
/// what this process copied to or from the device's memory (measured).
fn checked_on_device(w: &DeviceWords, copied: u64, payload: u64) -> String {
    let copies = crate::device_job::host_copies(copied, "each stripe's unit indices", payload);
    format!("checked on {}, every unit read into {} and its CRC-32 computed there ({}; {copies})", w.device, w.memory, w.provenance)
}

/// Per stripe, which shards are bad, and where they were checked: on
/// `device` where there is one and it does not fail (else the CPU does it
/// and `fallback` says why), on `threads` CPU threads otherwise.
fn survey_on(device: &mut Option<ec_device::SetDevice>, (dir, m): (&Path, &Manifest), threads: usize, e: &DeviceArgs, fallback: &mut Option<String>) -> Result<(Vec<Vec<usize>>, String), JobError> {
    if let Some((dev, l)) = device.as_mut() {
        let before = dev.memory().host_copied_bytes();
        match ec_device::survey(dev.as_mut(), l, m, &ec_device::open_shards(dir, m)) {
            Ok(bad) => {
                let checked = checked_on_device(&e.words(), dev.memory().host_copied_bytes() - before, m.stripes * (m.unit_bytes * m.shards.len()) as u64);
                return Ok((bad, checked + &dev.description().map(|d| format!("; the device: {d}")).unwrap_or_default()));
            }
            Err(why) => {
                *device = None;
                e.fall_back(why, ": the set is checked on the host CPU", fallback)?;
            }
        }
    }
    Ok((survey(dir, m, threads)?, "checked on the host CPU".into()))
}

/// The threads a job over `stripes` stripes runs on: `threads`, at most one
/// per stripe (and 1024).
fn stripe_threads(threads: usize, stripes: u64) -> usize {
    threads.clamp(1, stripes.clamp(1, 1024) as usize)
}

/// Runs `each(state, s)` for every stripe `s` on `threads` threads (see
/// [`stripe_threads`]), which take stripes in turn, each thread with its own
/// state from `init` (whose failure, its buffers refused, is one too). The
/// first failure (lowest stripe) stops the others and is the error; else the
/// threads' states.
fn for_each_stripe<S: Send>(threads: usize, stripes: u64, init: impl Fn() -> Result<S, JobError> + Sync, each: impl Fn(&mut S, u64) -> Result<(), JobError> + Sync) -> Result<Vec<S>, JobError> {
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let states = std::sync::Mutex::new(Vec::new());
    crate::crypt::run_workers(stripe_threads(threads, stripes), || {
        let mut state = init().inspect_err(|_| stop.store(true, Ordering::Relaxed)).map_err(|e| (next.load(Ordering::Relaxed), e))?;
        let ran = loop {
            let s = next.fetch_add(1, Ordering::Relaxed);
            if s >= stripes || stop.load(Ordering::Relaxed) {
                break Ok(());
            }
            if let Err(e) = each(&mut state, s) {
                stop.store(true, Ordering::Relaxed);
                break Err((s, e));
            }
        };
        states.lock().expect("no worker panics holding it").push(state);
        ran
    })?;
    Ok(states.into_inner().expect("no worker panics holding it"))
}

/// What `ec verify` found.
#[derive(Serialize)]
struct VerifyReport {
    target: String,
    /// `target`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    target_bytes: Option<Vec<u8>>,
    code: String,
    stripes: u64,
    shards: usize,
    /// Whether every unit and every copy of the manifest checks out.
    intact: bool,
    /// Shards with a missing or corrupt unit, and per such shard its bad stripes.
    damaged_shards: Vec<DamagedShard>,
    /// Stripes that lost more units than the code rebuilds.
    lost_stripes: Vec<u64>,
    /// The same as runs of consecutive stripes, `[first, last]` each: as many as there are
    /// runs, where the list above is as long as the damage.
    lost_stripe_ranges: Vec<[u64; 2]>,
    /// Copies of the manifest beside placed shards that are missing or differ from it.
    stale_manifest_copies: Vec<String>,
    /// Shards whose files go on past the set's last stripe.
    overlong_shards: Vec<String>,
    /// Directories of placed shards that are gone: a shard is rebuilt only in its own directory.
    missing_shard_dirs: Vec<String>,
    /// Whether `ec repair` can make the set whole.
    repairable: bool,
    /// How the manifest itself is found damaged (its length past the data the last stripe
    /// holds, copies that hold another valid manifest); `ec repair` refuses such a set.
    manifest_damage: Option<String>,
    /// Where the units were checked.
    checked: String,
    fallback: Option<String>,
    seconds: f64,
    provenance: &'static str,
}

/// An `ec-verify`'s code where the manifest could not be read to say it.
const UNKNOWN_CODE: &str = "unknown";

/// The directories of the placed shards among `shards` that are gone (no directory there):
/// their shards cannot be rebuilt in place until it exists again.
fn gone_shard_dirs(m: &Manifest, shards: &[usize]) -> Vec<PathBuf> {
    let mut gone: Vec<PathBuf> = shards.iter().filter_map(|&i| m.shards[i].dir.as_ref()).map(PathBuf::from).filter(|d| !std::fs::metadata(d).is_ok_and(|d| d.is_dir())).collect();
    gone.sort();
    gone.dedup();
    gone
}

/// Those of `shards` whose place holds a directory: a rebuilt shard is renamed into its place,
/// which a directory refuses (a FIFO, a link or a device there is replaced).
fn shards_in_the_way(dir: &Path, m: &Manifest, shards: &[usize]) -> Vec<usize> {
    shards.iter().copied().filter(|&i| std::fs::symlink_metadata(m.shard_path(dir, i)).is_ok_and(|md| md.is_dir())).collect()
}

#[derive(Serialize)]
struct DamagedShard {
    shard: String,
    bad_stripes: Vec<u64>,
    /// The same as runs, `[first, last]` each (a lost shard: one run, however large the set).
    bad_stripe_ranges: Vec<[u64; 2]>,
}

fn verify(dir: &Path, e: &DeviceArgs, threads: usize, (json, quiet): (bool, bool)) -> Result<(), JobError> {
    let started = Instant::now();
    let (m, code) = match load(dir) {
        Ok(loaded) => loaded,
        // A manifest that is no manifest is damage like any other: reported for monitoring too.
        Err(JobError::Damaged { path, detail }) if json => {
            let report = VerifyReport {
                target: dir.to_string_lossy().into_owned(),
                target_bytes: name_bytes(dir),
                code: UNKNOWN_CODE.into(),
                stripes: 0,
                shards: 0,
                intact: false,
                damaged_shards: Vec::new(),
                lost_stripes: Vec::new(),
                lost_stripe_ranges: Vec::new(),
                stale_manifest_copies: Vec::new(),
                overlong_shards: Vec::new(),
                missing_shard_dirs: Vec::new(),
                repairable: false,
                manifest_damage: Some(format!("{}: {detail}", Quoted(&path))),
                checked: "nothing: the manifest cannot be read".into(),
                fallback: None,
                seconds: started.elapsed().as_secs_f64(),
                provenance: "measured on this host's CPU",
            };
            println!("{}", crate::jsonout::stamped("ec-verify", &report));
            return Err(JobError::Damaged { path, detail });
        }
        Err(e) => return Err(e),
    };
    let mut fallback = None;
    let mut device = e.set_device((dir, &m), &mut fallback)?;
    let (bad, checked) = survey_on(&mut device, (dir, &m), threads, e, &mut fallback)?;
    let lost = lost_stripes(&m, &bad);
    let damaged: Vec<usize> = (0..m.shards.len()).filter(|i| bad.iter().any(|b| b.contains(i))).collect();
    let (manifest_damage, rebuilt_disagree) = match manifest_damage(dir, (&m, &code), bad.last().filter(|_| lost.is_empty()))? {
        None if lost.is_empty() && !damaged.is_empty() => {
            let disagree = rebuilt_units_disagree(dir, (&m, &code), &bad)?;
            let found = disagree.is_some();
            (disagree, found)
        }
        found => (found, false),
    };
    let stale = m.stale_copies();
    let overlong = overlong_shards(dir, &m);
    let gone = gone_shard_dirs(&m, &damaged);
    let in_the_way = shards_in_the_way(dir, &m, &damaged);
    let report = VerifyReport {
        target: dir.to_string_lossy().into_owned(),
        target_bytes: name_bytes(dir),
        code: format!("RS({}, {})", m.data_shards, m.parity_shards),
        stripes: m.stripes,
        shards: m.shards.len(),
        intact: damaged.is_empty() && stale.is_empty() && overlong.is_empty() && manifest_damage.is_none(),
        damaged_shards: damaged
            .iter()
            .map(|&i| {
                let bad_stripes: Vec<u64> = (0..m.stripes).filter(|&s| bad[s as usize].contains(&i)).collect();
                DamagedShard { shard: m.shard_label(i), bad_stripe_ranges: stripe_ranges(&bad_stripes), bad_stripes }
            })
            .collect(),
        lost_stripe_ranges: stripe_ranges(&lost),
        lost_stripes: lost.clone(),
        stale_manifest_copies: stale.iter().map(|p| p.display().to_string()).collect(),
        overlong_shards: overlong.iter().map(|&i| m.shard_label(i)).collect(),
        missing_shard_dirs: gone.iter().map(|d| d.display().to_string()).collect(),
        repairable: lost.is_empty() && manifest_damage.is_none() && gone.is_empty() && in_the_way.is_empty(),
        manifest_damage: manifest_damage.clone(),
        checked: checked.to_string(),
        fallback,
        seconds: started.elapsed().as_secs_f64(),
        provenance: if device.is_some() { e.words().provenance } else { "measured on this host's CPU" },
    };
    if json {
        println!("{}", crate::jsonout::stamped("ec-verify", &report));
    } else if device.is_some() && !quiet {
        println!("{}: {checked}", Quoted(dir));
    }
    if report.intact {
        if !json && !quiet {
            let copies = if m.copies().is_empty() { String::new() } else { format!(", and {} copies of the manifest", m.copies().len()) };
            println!("{}: all {} intact ({}){copies}", Quoted(dir), count(m.shards.len(), "shard"), count(m.stripes, "stripe"));
        }
        return Ok(());
    }
    let mut found = Vec::new();
    if let Some(d) = &manifest_damage {
        found.push(d.clone());
    }
    if !damaged.is_empty() {
        found.push(format!("missing or corrupt units in {}", quoted_list(&report.damaged_shards.iter().map(|d| d.shard.clone()).collect::<Vec<_>>())));
    }
    if !stale.is_empty() {
        found.push(format!("copies of the manifest missing or different in {}", quoted_list(&report.stale_manifest_copies)));
    }
    if !overlong.is_empty() {
        found.push(format!("bytes past the set's last stripe in {}", quoted_list(&report.overlong_shards)));
    }
    if !gone.is_empty() {
        found.push(format!("shard directories gone: {}", quoted_list(&report.missing_shard_dirs)));
    }
    let verdict = match (&manifest_damage, lost.is_empty()) {
        (Some(_), _) if rebuilt_disagree => "NOT repairable by ec repair".to_string(),
        (Some(_), _) => "NOT repairable by ec repair: the manifest is damaged".to_string(),
        (None, true) if !gone.is_empty() => format!("NOT repairable in place until {} {} again (mount the replacement drive there, or make the directory), then `peerpath ec repair {}`", quoted_list(&report.missing_shard_dirs), if report.missing_shard_dirs.len() == 1 { "exists" } else { "exist" }, ShellWord(dir)),
        (None, true) if !in_the_way.is_empty() => format!("NOT repairable in place while a directory lies where {} should be: move it away, then `peerpath ec repair {}`", quoted_list(&in_the_way.iter().map(|&i| m.shard_label(i)).collect::<Vec<_>>()), ShellWord(dir)),
        (None, true) => format!("repairable (`peerpath ec repair {}`)", ShellWord(dir)),
        (None, false) => format!("NOT repairable: {} lost more than {}", stripes_words(&lost), count(m.parity_shards, "shard")),
    };
    Err(corrupt(dir, format!("{}: {verdict}", found.join("; "))))
}

/// `ec repair`'s rebuild of each bad unit (`bad`: per stripe), run dry on
/// the host CPU (nothing written): where a unit rebuilt from units that
/// check out does not match the manifest's CRC-32 either, repair refuses the
/// set, so verify must not call it repairable. Said as the damage found.
fn rebuilt_units_disagree(dir: &Path, (m, code): (&Manifest, &RsCode), bad: &[Vec<usize>]) -> Result<Option<String>, JobError> {
    let files = open_shards(dir, m);
    let mut dry = Rebuilder::default();
    for s in (0..m.stripes).filter(|&s| !bad[s as usize].is_empty()) {
        if let Some(i) = dry.stripe(dir, (m, code), &files, &[], (s, &bad[s as usize]), None)?.rebuilt_wrong {
            return Ok(Some(format!("{}'s unit of stripe {s}, rebuilt from units that check out, does not match the manifest's CRC-32 either: the manifest's checksum is wrong, or more units are than their checksums show", quoted_name(&m.shard_label(i)))));
        }
    }
    Ok(None)
}

/// How the manifest itself is damaged, where it is: its length leaves data in the last
/// stripe's padding (checked where `last` gives that stripe's bad units, [`padding_damage`]),
/// or no fewer copies of it beside placed shards hold another valid manifest than hold this
/// one (which is right is not for `ec repair` to guess; a copy outvoted is written back).
fn manifest_damage(dir: &Path, (m, code): (&Manifest, &RsCode), last: Option<&Vec<usize>>) -> Result<Option<String>, JobError> {
    if let Some(bad) = last {
        if let Some(d) = padding_damage(dir, (m, code), bad)? {
            return Ok(Some(d));
        }
    }
    Ok(outvoted(dir, m))
}

/// Where the last stripe holds data past the source's end (its padding is the encoder's
/// zeros), the damage, said. The stripe (`bad`: its bad units, rebuilt as `repair` would) is
/// read in slices of its units, as repair reads it: whatever the unit, this holds a cache's
/// worth, not the stripe (512 MiB of RS(8, 4) with 64 MiB units). A unit rebuilt wrong says
/// nothing of the padding: [`rebuilt_units_disagree`] and `repair` find it as such.
fn padding_damage(dir: &Path, (m, code): (&Manifest, &RsCode), bad: &Vec<usize>) -> Result<Option<String>, JobError> {
    let s = m.stripes - 1;
    let start = s * (m.data_shards * m.unit_bytes) as u64;
    let zeros_from = m.source_bytes.saturating_sub(start) as usize;
    let found = Rebuilder::default().stripe(dir, (m, code), &open_shards(dir, m), &[], (s, bad), Some(zeros_from))?;
    Ok(found.data_past_the_end.filter(|_| found.rebuilt_wrong.is_none()).map(|at| m.data_in_padding(start + at as u64)))
}

/// Where no fewer copies of the manifest beside placed shards hold another valid manifest
/// than hold `m` (read from `dir`), the damage, said; `verify` and `repair` call such a
/// manifest damaged, and `decode` and `decompress --ec` refuse to restore from it.
fn outvoted(dir: &Path, m: &Manifest) -> Option<String> {
    let text = m.text();
    let copies = m.copies();
    let held: Vec<Option<String>> = copies.iter().map(|p| read_manifest_file(p, MAX_MANIFEST_BYTES).ok().and_then(|b| String::from_utf8(b).ok()).and_then(|t| parse_manifest(&t).ok()).map(|(c, _)| c.text())).collect();
    // This manifest's own file is one vote where it is not one of the copies (DIR/manifest.json).
    let own = !copies.iter().any(|p| same_file(p, &manifest_file(dir)));
    let agree = held.iter().filter(|t| t.as_deref() == Some(text.as_str())).count() + usize::from(own);
    let other: Vec<String> = copies.iter().zip(&held).filter(|(_, t)| t.as_ref().is_some_and(|t| *t != text)).map(|(p, _)| Quoted(p).to_string()).collect();
    (!other.is_empty() && other.len() >= agree).then(|| format!("as many copies of the manifest or more hold another valid manifest than {own} does: {} (check each with `peerpath ec verify COPY`; nothing is chosen between them: where a copy checks and {own} does not, put that copy in its place, `cp COPY {own_word}`, then `peerpath ec repair {}` rewrites the others)", other.join(", "), ShellWord(dir), own = Quoted(&manifest_file(dir)), own_word = ShellWord(&manifest_file(dir))))
}

/// Whether `a` and `b` name one file (both there).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    matches!((std::fs::metadata(a), std::fs::metadata(b)), (Ok(x), Ok(y)) if (x.dev(), x.ino()) == (y.dev(), y.ino()))
}

/// A unit that checked out in the survey and no longer does.
pub(crate) fn changed(dir: &Path, m: &Manifest, shard: usize, stripe: u64) -> JobError {
    corrupt(dir, format!("{} changed while it was read (stripe {stripe}): nothing was written", quoted_name(&m.shard_label(shard))))
}

/// A unit rebuilt from survivors that all checked out, whose CRC-32 is still
/// not the manifest's: the manifest's checksum is wrong, or more units are
/// than their checksums show. Nothing is written from it.
fn rebuilt_wrong(dir: &Path, m: &Manifest, shard: usize, stripe: u64) -> JobError {
    corrupt(dir, format!("{}'s unit of stripe {stripe}, rebuilt from units that check out, does not match the manifest's CRC-32: the manifest is damaged, or more units are wrong than their checksums show; nothing was written", quoted_name(&m.shard_label(shard))))
}

pub(crate) fn unrecoverable(dir: &Path, m: &Manifest, lost: &[u64]) -> JobError {
    let (their, they) = if lost.len() == 1 { ("its", "it") } else { ("their", "they") };
    corrupt(dir, format!("{} lost more than {} of {their} {} shards: {they} cannot be rebuilt (nothing was written)", stripes_words(lost), m.parity_shards, m.shards.len()))
}

/// Rebuilds what is damaged; when nothing was, the line that says so.
/// What `ec repair` did (a whole set: a report that wrote nothing).
fn repair(dir: &Path, e: &DeviceArgs, threads: usize) -> Result<EcReport, JobError> {
    let started = Instant::now();
    let (m, code) = load(dir)?;
    // Where rebuilt shards and copies of the manifest are written.
    let _held = hold_dirs(std::iter::once(set_dir(dir).to_path_buf()).chain(m.shards.iter().filter_map(|s| s.dir.as_ref().map(PathBuf::from))));
    let mut fallback = None;
    let mut device = e.set_device((dir, &m), &mut fallback)?;
    let (bad, checked) = survey_on(&mut device, (dir, &m), threads, e, &mut fallback)?;
    let lost = lost_stripes(&m, &bad);
    if !lost.is_empty() {
        return Err(unrecoverable(dir, &m, &lost));
    }
    // A damaged manifest is never written over its copies, nor used to rebuild shards.
    if let Some(d) = manifest_damage(dir, (&m, &code), bad.last())? {
        return Err(corrupt(dir, format!("{d}: nothing was repaired or written")));
    }
    // An overlong shard is rewritten as a damaged one is, its units copied.
    let overlong = overlong_shards(dir, &m);
    let damaged: Vec<usize> = (0..m.shards.len()).filter(|i| bad.iter().any(|b| b.contains(i)) || overlong.contains(i)).collect();
    if let Some((i, gone)) = damaged.iter().find_map(|&i| gone_shard_dirs(&m, &[i]).pop().map(|d| (i, d))) {
        let why = format!("its directory {} is gone: mount the replacement drive there (or make the directory), then repair again; nothing was repaired", Quoted(&gone));
        return Err(JobError::TargetIo { path: m.shard_path(dir, i), source: std::io::Error::new(std::io::ErrorKind::NotFound, why) });
    }
    if let Some(&i) = shards_in_the_way(dir, &m, &damaged).first() {
        let why = "a directory lies in its place: move it away, then repair again; nothing was repaired";
        return Err(JobError::TargetIo { path: m.shard_path(dir, i), source: std::io::Error::new(std::io::ErrorKind::IsADirectory, why) });
    }
    let stale = m.stale_copies();
    let mut report = if damaged.is_empty() {
        let mut r = EcReport::new("repair", dir, &m, Vec::new(), started, Duration::ZERO, 0);
        r.engine = if stale.is_empty() { format!("nothing to repair ({checked})") } else { format!("no shard to rebuild ({checked})") };
        if device.is_some() {
            // The check ran on the device (it said "measured on this host's CPU", ISA-L's count).
            r.provenance = e.words().provenance;
            if e.engine == EcEngine::Gpu {
                r.coding_per = GPU_CODING;
            }
        }
        r
    } else {
        rebuild(dir, (&m, &code), (&bad, &damaged), (&mut device, &mut fallback), e, threads, started)?
    };
    report.fallback = fallback;
    report.manifests_written = restore_copies(dir, &m, &stale)?;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Rewrites the copies of the manifest in `stale` with its text (each to a
/// temporary file renamed over the old one, as private as the set); their paths.
fn restore_copies(dir: &Path, m: &Manifest, stale: &[PathBuf]) -> Result<Vec<String>, JobError> {
    let mode = peerpath_io::Inherited::mode_of(std::fs::metadata(manifest_file(dir)).ok().as_ref());
    let text = m.text();
    for p in stale {
        let (mut t, temporary) = peerpath_io::create_temporary(p, false).map_err(io(p))?;
        let written = t.file.write_all(text.as_bytes()).and_then(|()| mode.apply(&t.file)).and_then(|()| t.file.sync_all()).and_then(|()| peerpath_io::publish(&t.file, &temporary, p, true));
        if let Err(e) = written {
            peerpath_io::discard(&temporary);
            return Err(io(p)(e));
        }
        if let Some(parent) = p.parent() {
            File::open(parent).and_then(|d| d.sync_all()).map_err(io(parent))?;
        }
    }
    Ok(stale.iter().map(|p| p.display().to_string()).collect())
}

/// Rebuilds the `damaged` shards (`bad`: per stripe, its bad units) on the
/// set's device where there is one and it does not fail, else on `threads`
/// CPU threads; the report (its fallback, if any, in `fallback`).
fn rebuild(dir: &Path, (m, code): (&Manifest, &RsCode), (bad, damaged): (&[Vec<usize>], &[usize]), (device, fallback): (&mut Option<ec_device::SetDevice>, &mut Option<String>), e: &DeviceArgs, threads: usize, started: Instant) -> Result<EcReport, JobError> {
    let names: Vec<String> = damaged.iter().map(|&i| m.shard_label(i)).collect();
    // Each damaged shard is rewritten whole into a temporary file (unnamed
    // where the file system allows), then renamed over the old one.
    let targets: Vec<PathBuf> = damaged.iter().map(|&i| m.shard_path(dir, i)).collect();
    let new_shards = |direct: bool| -> Result<Vec<(usize, File, Temporary)>, JobError> {
        // A shard's directory may be gone with its drive, or read-only: the error names that shard.
        Ok(damaged.iter().zip(create_temporaries(&targets, &targets, direct)?).map(|(&i, (f, t))| (i, f, t)).collect())
    };
    if let Some((dev, l)) = device.as_mut() {
        // Written from the device's memory by DMA where the unit size allows it.
        let outs = new_shards(m.unit_bytes.is_multiple_of(4096))?;
        let shards = ec_device::open_shards(dir, m);
        let to: Vec<(usize, &File)> = outs.iter().map(|(i, f, _)| (*i, f)).collect();
        let before = dev.memory().host_copied_bytes();
        let done = match ec_device::repair(dev.as_mut(), l, (dir, m), &shards, bad, &to) {
            Ok(pass) => put_shards_in_place(dir, m, &outs).map(|()| Some(pass)),
            Err(crate::chain_device::Stop::Job(err)) => Err(err),
            Err(crate::chain_device::Stop::Device(why) | crate::chain_device::Stop::Verdict(why)) => {
                outs.iter().for_each(|(_, _, t)| peerpath_io::discard(t));
                e.fall_back(why, "; the set is repaired on the host CPU from the start (nothing the device wrote was kept)", fallback).map(|()| None)
            }
        };
        match done {
            Ok(Some(pass)) => {
                let mut report = EcReport::new("repair", dir, m, names, started, pass.coding, pass.coded);
                let direct = device_job::moved(shards.iter().flatten().any(device_job::is_direct));
                let w = e.words();
                report.engine = format!(
                    "{} ({}, {}): units read {direct} into {} ({}) and checked there against the manifest's CRC-32s, {} rebuilt there and checked again, shards written {} from it; {}",
                    w.device,
                    dev.name(),
                    w.coder,
                    w.memory,
                    peerpath_metrics::human_bytes(pass.read_bytes),
                    count(pass.rebuilt, "unit"),
                    device_job::moved(outs.iter().all(|(_, f, _)| device_job::is_direct(f))),
                    device_job::host_copies(dev.memory().host_copied_bytes() - before, "each stripe's unit indices", pass.read_bytes),
                );
                if let Some(stages) = device_job::stages(dev.as_mut()) {
                    report.engine += &format!("; on the device: {stages}");
                }
                if let Some(what) = dev.description() {
                    report.engine += &format!("; the device: {what}");
                }
                report.provenance = w.provenance;
                if e.engine == EcEngine::Gpu {
                    report.coding_per = GPU_CODING;
                }
                return Ok(report);
            }
            Ok(None) => {}
            Err(err) => {
                outs.iter().for_each(|(_, _, t)| peerpath_io::discard(t));
                return Err(err);
            }
        }
    }
    let files = open_shards(dir, m);
    let outs = new_shards(false)?;
    // Workers take whole stripes in turn; on a failure nothing is kept.
    let workers = stripe_threads(threads, m.stripes);
    let rebuilt = for_each_stripe(workers, m.stripes, || Ok(Rebuilder::default()), |r, s| match r.stripe(dir, (m, code), &files, &outs, (s, &bad[s as usize]), None)?.rebuilt_wrong {
        Some(i) => Err(rebuilt_wrong(dir, m, i, s)),
        None => Ok(()),
    })
    .and_then(|rebuilders| put_shards_in_place(dir, m, &outs).map(|()| rebuilders));
    let rebuilders = match rebuilt {
        Ok(r) => r,
        Err(e) => {
            outs.iter().for_each(|(_, _, t)| peerpath_io::discard(t));
            return Err(e);
        }
    };
    let (coding, coded) = (rebuilders.iter().map(|r| r.coding).sum(), rebuilders.iter().map(|r| r.coded).sum());
    let mut report = EcReport::new("repair", dir, m, names, started, coding, coded);
    report.threads = workers;
    report.engine = format!("host CPU (this process, {}): ISA-L", count(workers, "thread"));
    Ok(report)
}

/// Renames the rebuilt shards `outs` over the old ones, each as private as
/// the set (the manifest's mode) and durable first; then their directories.
fn put_shards_in_place(dir: &Path, m: &Manifest, outs: &[(usize, File, Temporary)]) -> Result<(), JobError> {
    let mode = peerpath_io::Inherited::mode_of(std::fs::metadata(manifest_file(dir)).ok().as_ref());
    let mut dirs = vec![set_dir(dir).to_path_buf()];
    for (i, out, temp) in outs {
        let path = m.shard_path(dir, *i);
        mode.apply(out).map_err(io(&path))?;
        out.sync_all().map_err(io(&path))?;
        peerpath_io::publish(out, temp, &path, true).map_err(io(&path))?;
        dirs.extend(path.parent().map(Path::to_path_buf));
    }
    dirs.sort();
    dirs.dedup();
    dirs.iter().try_for_each(|d| File::open(d).and_then(|f| f.sync_all()).map_err(io(d)))
}

/// One repair worker's buffers, decoders and time.
#[derive(Default)]
struct Rebuilder {
    /// Per shard, the slice of its unit being read.
    bufs: Vec<Vec<u8>>,
    rebuilt: Vec<Vec<u8>>,
    /// One decoder per set of lost shards (the survivors follow from it).
    decoders: std::collections::HashMap<Vec<usize>, peerpath_func::ec::Decoder>,
    coding: Duration,
    coded: u64,
}

/// What [`Rebuilder::stripe`] found wrong in a stripe.
struct StripeFound {
    /// The first rebuilt unit's shard that does not match the manifest's CRC-32 ([`rebuilt_wrong`]).
    rebuilt_wrong: Option<usize>,
    /// Where asked, the first byte (of the stripe) from there on that is not zero.
    data_past_the_end: Option<usize>,
}

impl Rebuilder {
    /// Reads, checks and rebuilds stripe `s` (whose bad units are `missing`),
    /// writing each rewritten shard's unit at its offset. The stripe goes in
    /// slices of its units that fit in a core's cache together, so the coding
    /// works on bytes the read has just brought in (whole 1 MiB units, read
    /// and checked first, coded at 84 % of ISA-L's warm rate:
    /// bench/results/2026-11-28-ec-repair-fused-2cpu). A unit's CRC-32 is
    /// complete only at the stripe's end; one that no longer matches (it
    /// changed since the survey) fails the repair. With no `outs`, a dry
    /// run (`ec verify`'s). With `zeros_from`, the stripe's data from that
    /// byte on (the last stripe's padding) is looked at too.
    fn stripe(&mut self, dir: &Path, (m, code): (&Manifest, &RsCode), files: &[Option<File>], outs: &[(usize, File, Temporary)], (s, missing): (u64, &Vec<usize>), zeros_from: Option<usize>) -> Result<StripeFound, JobError> {
        use std::os::unix::fs::FileExt;
        let (n, k, unit) = (m.shards.len(), m.data_shards, m.unit_bytes);
        self.bufs.resize_with(n, Vec::new);
        self.rebuilt.resize_with(m.parity_shards, Vec::new);
        // The first k good units (every good data unit among them), and the good units of shards being rewritten.
        let survivors: Vec<usize> = (0..n).filter(|i| !missing.contains(i)).take(k).collect();
        let mut read: Vec<usize> = survivors.iter().copied().chain(outs.iter().map(|o| o.0).filter(|i| !missing.contains(i))).collect();
        read.sort_unstable();
        read.dedup();
        if !missing.is_empty() && !self.decoders.contains_key(missing) {
            let t = Instant::now();
            let d = code.decoder(&survivors, missing).map_err(|e| corrupt(dir, e))?;
            self.coding += t.elapsed();
            self.decoders.insert(missing.clone(), d);
        }
        let decoder = self.decoders.get(missing);
        let slice = encode_slice_bytes(read.len() + missing.len(), unit);
        let mut hashers = vec![crc32fast::Hasher::new(); n];
        let mut data_past_the_end: Option<usize> = None;
        for start in (0..unit).step_by(slice) {
            let len = slice.min(unit - start);
            let at = s * unit as u64 + start as u64;
            for &i in &read {
                let b = &mut self.bufs[i];
                grow(b, len, "a slice of a unit being checked", EACH_THREAD)?;
                let f = files[i].as_ref().ok_or_else(|| changed(dir, m, i, s))?;
                f.read_exact_at(&mut b[..len], at).map_err(|_| changed(dir, m, i, s))?;
                hashers[i].update(&b[..len]);
            }
            if let Some(d) = decoder {
                for r in &mut self.rebuilt {
                    grow(r, len, "a slice of a unit being rebuilt", EACH_THREAD)?;
                }
                let inputs: Vec<&[u8]> = survivors.iter().map(|&i| &self.bufs[i][..len]).collect();
                let mut o: Vec<&mut [u8]> = self.rebuilt.iter_mut().take(missing.len()).map(|r| &mut r[..len]).collect();
                let t = Instant::now();
                d.decode(&inputs, &mut o);
                self.coding += t.elapsed();
                self.coded += ((k + missing.len()) * len) as u64;
                for (r, &i) in self.rebuilt.iter().zip(missing) {
                    hashers[i].update(&r[..len]);
                }
            }
            // Unit i's slice, as read or as rebuilt.
            let slice_of = |i: usize| match missing.iter().position(|&j| j == i) {
                Some(p) => &self.rebuilt[p][..len],
                None => &self.bufs[i][..len],
            };
            if let Some(from) = zeros_from {
                for i in 0..k {
                    let here = i * unit + start;
                    let skip = from.saturating_sub(here).min(len);
                    if let Some(z) = slice_of(i)[skip..].iter().position(|&b| b != 0) {
                        data_past_the_end = Some(data_past_the_end.map_or(here + skip + z, |d| d.min(here + skip + z)));
                    }
                }
            }
            for (i, out, _) in outs {
                out.write_all_at(slice_of(*i), at).map_err(io(&m.shard_path(dir, *i)))?;
            }
        }
        let wrong = |i: &&usize| hashers[**i].clone().finalize() != m.shards[**i].crc32[s as usize];
        if let Some(&i) = read.iter().find(wrong) {
            return Err(changed(dir, m, i, s));
        }
        Ok(StripeFound { rebuilt_wrong: missing.iter().find(wrong).copied(), data_past_the_end })
    }
}

fn decode(dir: &Path, output: &Path, force: bool, e: &DeviceArgs, threads: usize, quiet: bool) -> Result<(), JobError> {
    if peerpath_runtime::job::is_std_stream(output) {
        // As decompress --ec: a file named "-" was made.
        return Err(JobError::Usage("ec decode writes a file, whole or not at all: give -o FILE, not standard output".into()));
    }
    let _held = OutputDir::hold_parent_of(output);
    let set = OpenSet::open(dir)?;
    set.refuse_as_target(output)?;
    peerpath_runtime::job::check_new_target(output, force, peerpath_runtime::job::Writes::FileOnly)?;
    let mut fallback = None;
    let mut device = e.set_device((dir, &set.m), &mut fallback)?;
    if let Some((dev, l)) = device.as_mut() {
        let started = Instant::now();
        let before = dev.memory().host_copied_bytes();
        let (t, temporary) = peerpath_io::create_temporary(output, false).map_err(io(output))?;
        let files = ec_device::open_shards(dir, &set.m);
        let done = match ec_device::decode(dev.as_mut(), l, &set.m, &files, &t.file, output) {
            Ok(Ok(pass)) => put_restored_in_place(&t.file, &temporary, output, dir, force).map(|()| Some(pass)),
            // Every lost stripe named, as `ec verify` and `ec repair` name them (the device surveys).
            Ok(Err(s)) => Err(match ec_device::survey(dev.as_mut(), l, &set.m, &files) {
                Ok(bad) => {
                    // (The survey's verdicts and the pass's may differ: a shard changed between them.)
                    let mut lost = lost_stripes(&set.m, &bad);
                    if lost.is_empty() {
                        lost.push(s);
                    }
                    unrecoverable(dir, &set.m, &lost)
                }
                Err(_) => set.lost(s),
            }),
            Err(crate::chain_device::Stop::Job(err)) => Err(err),
            Err(crate::chain_device::Stop::Device(why) | crate::chain_device::Stop::Verdict(why)) => {
                peerpath_io::discard(&temporary);
                e.fall_back(why, "; the set is decoded on the host CPU from the start (nothing the device wrote was kept)", &mut fallback).map(|()| None)
            }
        };
        match done {
            Ok(Some(_)) if quiet => return Ok(()),
            Ok(Some(pass)) => {
                let secs = started.elapsed().as_secs_f64();
                let w = e.words();
                println!(
                    "{} -> {}: {} restored in {secs:.3} s, {:.2} GB/s ({}: {}, units read {} into {} ({}) and checked there against the manifest's CRC-32s, {} rebuilt there and checked again, the data written from it by kernel copies; {})",
                    Quoted(dir),
                    Quoted(output),
                    peerpath_metrics::human_bytes(set.m.source_bytes),
                    set.m.source_bytes as f64 / secs.max(1e-9) / 1e9,
                    w.provenance,
                    w.device,
                    device_job::moved(files.iter().flatten().any(device_job::is_direct)),
                    w.memory,
                    peerpath_metrics::human_bytes(pass.read_bytes),
                    count(pass.rebuilt, "unit"),
                    device_job::host_copies(dev.memory().host_copied_bytes() - before, "each stripe's unit indices", pass.read_bytes),
                );
                if let Some(stages) = device_job::stages(dev.as_mut()) {
                    println!("stages on the device ({}): {stages}", w.provenance);
                }
                if let Some(what) = dev.description() {
                    println!("the device: {what}");
                }
                return Ok(());
            }
            Ok(None) => {}
            Err(err) => {
                peerpath_io::discard(&temporary);
                return Err(err);
            }
        }
    }
    // Workers take whole stripes in turn and write each at its offset.
    let (k, p, unit, stripes, size) = set.m.shape();
    let stripes_held = stripe_buffers(threads, stripes, (k, p, unit))?;
    let workers = stripes_held.len();
    let stripes_held = std::sync::Mutex::new(stripes_held);
    let (t, temporary) = peerpath_io::create_temporary(output, false).map_err(io(output))?;
    let lost = AtomicU64::new(u64::MAX);
    let take = || stripes_held.lock().expect("no worker panics holding it").pop().expect("a stripe buffer per worker");
    let written = for_each_stripe(workers, stripes, || Ok((take(), StripeBufs::default())), |(buf, b), s| {
        use std::os::unix::fs::FileExt;
        if !set.read_stripe(s, buf, b)? {
            // Stops the other threads; replaced below by the error that names every lost stripe.
            lost.fetch_min(s, Ordering::Relaxed);
            return Err(JobError::Usage(String::new()));
        }
        let at = s * (k * unit) as u64;
        let len = (size - at).min((k * unit) as u64) as usize;
        t.file.write_all_at(&buf[..len], at).map_err(io(output))
    })
    .map_err(|e| match lost.load(Ordering::Relaxed) {
        u64::MAX => e,
        s => set.lost(s),
    })
    .and_then(|_| put_restored_in_place(&t.file, &temporary, output, dir, force));
    if let Err(e) = written {
        peerpath_io::discard(&temporary);
        return Err(e);
    }
    Ok(())
}

/// One stripe buffer (k units) per decoding thread: `threads` at most (one per stripe), as
/// many as half this machine's memory holds at [`decode_bytes`] each, and as many as can be
/// allocated (where one more could not be, one fewer is kept as room for the rest of the job:
/// the parity and rebuilt units of a stripe that lost units). At least one, or the error.
fn stripe_buffers(threads: usize, stripes: u64, (k, m, unit): (usize, usize, usize)) -> Result<Vec<Vec<u8>>, JobError> {
    let fit = crate::machine_memory_bytes().map_or(usize::MAX, |t| (t as u64 / 2 / decode_bytes(k, m, unit)).max(1) as usize);
    let wanted = stripe_threads(threads.min(fit), stripes);
    let mut held = Vec::with_capacity(wanted);
    // Only the first stripe's failure is an error, and one is the least decode holds.
    while held.len() < wanted {
        match zeroed(k * unit, &format!("a stripe ({k} units of {unit} bytes) to decode"), ONE_STRIPE) {
            Ok(b) => held.push(b),
            Err(e) if held.is_empty() => return Err(e),
            Err(_) => {
                if held.len() > 1 {
                    held.pop();
                }
                break;
            }
        }
    }
    Ok(held)
}

/// A set opened for reading: its manifest (checked), code and shard
/// files (the shards are checked as they are read).
pub(crate) struct OpenSet {
    dir: PathBuf,
    m: Manifest,
    code: RsCode,
    files: Vec<Option<File>>,
}

/// One reader's buffers for stripes that must be rebuilt.
#[derive(Default)]
struct StripeBufs {
    /// Parity units, read where a data unit must be rebuilt.
    parity: Vec<Vec<u8>>,
    rebuilt: Vec<Vec<u8>>,
    /// One decoder per (survivors, lost) pattern met so far.
    decoders: std::collections::HashMap<(Vec<usize>, Vec<usize>), peerpath_func::ec::Decoder>,
    /// Data units rebuilt from parity so far.
    rebuilt_units: u64,
}

impl OpenSet {
    /// Opens a set to restore from: one whose manifest the copies beside its placed shards
    /// outvote (as `ec verify` calls it damaged) is refused (exit 6), not trusted.
    pub(crate) fn open(dir: &Path) -> Result<OpenSet, JobError> {
        let (m, code) = load(dir)?;
        if let Some(damage) = outvoted(dir, &m) {
            return Err(corrupt(dir, format!("the manifest is damaged: {damage}; nothing was written")));
        }
        let files = open_shards(dir, &m);
        Ok(OpenSet { dir: dir.to_path_buf(), m, code, files })
    }

    /// Refuses `output` as a target where it is one of the set's files: its
    /// manifest, a shard or a copy of the manifest (exit 5, even with --force).
    /// A target that is not a regular file (a FIFO, `/dev/stdout` of a pipe, a directory) is
    /// refused first, by its metadata (exit 2, as `check_new_target` says it): nothing here may
    /// open one, as the open of a FIFO waits for a writer for ever and a read of `/dev/stdout`
    /// of a pipe reads this process's own output.
    pub(crate) fn refuse_as_target(&self, output: &Path) -> Result<(), JobError> {
        peerpath_runtime::job::check_new_target(output, true, peerpath_runtime::job::Writes::FileOnly)?;
        let mut files = vec![manifest_file(&self.dir), set_dir(&self.dir).join(MANIFEST)];
        files.extend((0..self.m.shards.len()).map(|i| self.m.shard_path(&self.dir, i)));
        files.extend(self.m.copies());
        let what = format!("a file of the set {}", Quoted(&self.dir));
        crate::refuse_part_of_source(output, &files, &[], &what)?;
        // Read through a copy, the set's own directory is not known: a file that holds this
        // set's manifest (DIR/manifest.json) is one of its files all the same. Only a file of
        // about a manifest's size is read to tell (not a large output being replaced).
        let text = self.m.text();
        if holds_text(output, &text) {
            return Err(JobError::PartOfSource { path: output.to_path_buf(), what: format!("{what} (it holds the set's manifest)") });
        }
        Ok(())
    }

    /// Reads unit `i` of stripe `s` into `buf`: whether it is there whole and checks out.
    fn read_unit(&self, i: usize, s: u64, buf: &mut [u8]) -> bool {
        self.files[i].as_ref().is_some_and(|f| {
            std::os::unix::fs::FileExt::read_exact_at(f, buf, s * self.m.unit_bytes as u64).is_ok() && crc32fast::hash(buf) == self.m.shards[i].crc32[s as usize]
        })
    }

    /// Reads stripe `s`'s k data units into `out` (k units long), each
    /// checked; where one is missing or bad, parity units are read in order
    /// until k check out and the lost ones rebuilt. False if fewer than k
    /// units of the stripe survive.
    fn read_stripe(&self, s: u64, out: &mut [u8], b: &mut StripeBufs) -> Result<bool, JobError> {
        let (k, unit) = (self.m.data_shards, self.m.unit_bytes);
        let good: Vec<bool> = out.chunks_mut(unit).enumerate().map(|(i, u)| self.read_unit(i, s, u)).collect();
        let missing: Vec<usize> = (0..k).filter(|&i| !good[i]).collect();
        if missing.is_empty() {
            return self.check_padding(s, out).map(|()| true);
        }
        let n = self.m.shards.len();
        b.parity.resize_with(n - k, Vec::new);
        let mut survivors: Vec<usize> = (0..k).filter(|&i| good[i]).collect();
        for p in k..n {
            if survivors.len() == k {
                break;
            }
            let mut buf = std::mem::take(&mut b.parity[p - k]);
            grow(&mut buf, unit, "a parity unit read to rebuild a lost one", ONE_STRIPE)?;
            if self.read_unit(p, s, &mut buf) {
                survivors.push(p);
            }
            b.parity[p - k] = buf;
        }
        if survivors.len() < k {
            return Ok(false);
        }
        let key = (survivors, missing);
        if !b.decoders.contains_key(&key) {
            let d = self.code.decoder(&key.0, &key.1).map_err(|e| corrupt(&self.dir, e))?;
            b.decoders.insert(key.clone(), d);
        }
        let (survivors, missing) = &key;
        b.rebuilt.resize_with(missing.len(), Vec::new);
        for r in &mut b.rebuilt {
            grow(r, unit, "a rebuilt unit", ONE_STRIPE)?;
        }
        let inputs: Vec<&[u8]> = survivors.iter().map(|&i| if i < k { &out[i * unit..(i + 1) * unit] } else { b.parity[i - k].as_slice() }).collect();
        let mut o: Vec<&mut [u8]> = b.rebuilt.iter_mut().map(Vec::as_mut_slice).collect();
        b.decoders[&key].decode(&inputs, &mut o);
        for (r, &i) in b.rebuilt.iter().zip(missing) {
            if crc32fast::hash(r) != self.m.shards[i].crc32[s as usize] {
                return Err(rebuilt_wrong(&self.dir, &self.m, i, s));
            }
            out[i * unit..(i + 1) * unit].copy_from_slice(r);
        }
        b.rebuilt_units += missing.len() as u64;
        self.check_padding(s, out).map(|()| true)
    }

    /// The last stripe's bytes past the source's end are the encoder's zeros
    /// ([`ec_manifest::Manifest::data_in_padding_at`]).
    fn check_padding(&self, s: u64, stripe: &[u8]) -> Result<(), JobError> {
        match self.m.data_in_padding_at(s, stripe) {
            None => Ok(()),
            Some(at) => Err(corrupt(&self.dir, format!("{}; nothing was written", self.m.data_in_padding(at)))),
        }
    }

    /// The error for a set whose stripe `s` lost more than the code
    /// rebuilds: every such stripe of the set named, as `ec verify` and
    /// `ec repair` name them.
    fn lost(&self, s: u64) -> JobError {
        let mut lost = match survey(&self.dir, &self.m, threads_or_cores(None)) {
            Ok(bad) => lost_stripes(&self.m, &bad),
            Err(e) => return e,
        };
        if lost.is_empty() {
            lost.push(s);
        }
        unrecoverable(&self.dir, &self.m, &lost)
    }
}

/// Whether `path` is a regular file of about a manifest's size that holds a manifest whose
/// text is `text` ([`read_manifest_file`]: a FIFO or a device is never read).
fn holds_text(path: &Path, text: &str) -> bool {
    read_manifest_file(path, 2 * text.len() as u64 + 4096).is_ok_and(|b| std::str::from_utf8(&b).is_ok_and(|t| parse_manifest(t).is_ok_and(|(m, _)| m.text() == text)))
}

/// The stream a shard set holds, stripe by stripe, in one pass
/// ([`OpenSet::read_stripe`]: parity is read only where a data unit is
/// missing or corrupt). A stripe that lost more than the code can rebuild
/// ends the stream with an error naming every such stripe of the set.
pub(crate) struct ShardReader {
    set: OpenSet,
    bufs: StripeBufs,
    next: u64,
    left: u64,
}

impl ShardReader {
    /// Opens a set (its manifest checked; the shards are checked as they are read).
    pub(crate) fn open(dir: &Path) -> Result<ShardReader, JobError> {
        let set = OpenSet::open(dir)?;
        let left = set.m.source_bytes;
        Ok(ShardReader { set, bufs: StripeBufs::default(), next: 0, left })
    }

    /// The stream's length.
    pub(crate) fn stream_bytes(&self) -> u64 {
        self.set.m.source_bytes
    }

    /// Data units rebuilt from parity in the stripes read so far.
    pub(crate) fn units_rebuilt(&self) -> u64 {
        self.bufs.rebuilt_units
    }

    /// Puts the next stripe's data (up to the stream's end) in `out`; false after the last.
    pub(crate) fn next_stripe(&mut self, out: &mut Vec<u8>) -> Result<bool, JobError> {
        out.clear();
        if self.next == self.set.m.stripes {
            return Ok(false);
        }
        let s = self.next;
        grow(out, self.set.m.data_shards * self.set.m.unit_bytes, "a stripe", ONE_STRIPE)?;
        if !self.set.read_stripe(s, out, &mut self.bufs)? {
            return Err(self.set.lost(s));
        }
        let n = (self.left as usize).min(out.len());
        out.truncate(n);
        self.left -= n as u64;
        self.next += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn on_cpu() -> DeviceArgs {
        DeviceArgs { engine: EcEngine::Cpu, no_fallback: false, gpu: None, inject_faults: None, device_timeout: None }
    }

    /// A source that ends before its size at open (it shrank while the set
    /// was encoded) is an error, never zeros in the set; one that grew or
    /// shrank is refused before the set is kept (both were exit 0).
    #[test]
    fn a_source_that_changed_size_while_it_was_encoded_is_an_error_not_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("src");
        std::fs::write(&path, vec![7u8; 10_000]).unwrap();
        let f = File::open(&path).unwrap();
        let mut buf = vec![1u8; 4096];
        // The last unit: 10,000 bytes, as at open: the rest is padding.
        read_at_up_to(&f, &mut buf, 8192, 10_000).unwrap();
        assert!(buf[..1808].iter().all(|&b| b == 7) && buf[1808..].iter().all(|&b| b == 0));
        // 12,000 bytes at open, 10,000 now.
        let e = read_at_up_to(&f, &mut buf, 8192, 12_000).unwrap_err();
        assert!(e.to_string().contains("shrank") && e.to_string().contains("ended at byte 10000"), "{e}");
        let e = read_at_up_to(&f, &mut buf, 12_288, 16_000).unwrap_err();
        assert!(e.to_string().contains("shrank"), "{e}");
        crate::source_size_unchanged(&f, &path, 10_000, None).unwrap();
        for (at_open, how) in [(9_000, "grew"), (12_000, "shrank")] {
            let e = crate::source_size_unchanged(&f, &path, at_open, None).unwrap_err();
            assert_eq!(e.exit_code(), 12);
            assert!(e.to_string().contains(how) && e.to_string().contains(&format!("{at_open} bytes when opened, 10000 now")), "{e}");
        }
    }

    /// A shard swapped for a FIFO after [`shard_file`] looked at it: its open does not wait
    /// for a writer (`File::open` and `open_source` did, for ever) but finds no regular file,
    /// a missing shard; a regular one is opened with reads that wait (O_NONBLOCK off).
    #[test]
    fn a_shard_swapped_for_a_fifo_is_opened_without_waiting_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (fifo, file) = (dir.path().join("shard-000"), dir.path().join("shard-001"));
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        std::fs::write(&file, [7u8; 4096]).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p = fifo.clone();
        // On its own thread: an open that waits for a writer fails the test at the deadline.
        std::thread::spawn(move || tx.send([false, true].map(|direct| open_shard(&p, direct).is_none())).unwrap());
        let refused = rx.recv_timeout(Duration::from_secs(60)).expect("the open of a FIFO waited for a writer");
        assert_eq!(refused, [true, true], "a FIFO opened as a shard");
        for direct in [false, true] {
            let f = open_shard(&file, direct).expect("a regular shard refused");
            assert!(!rustix::fs::fcntl_getfl(&f).unwrap().contains(rustix::fs::OFlags::NONBLOCK), "O_NONBLOCK left on");
        }
    }

    /// Stripes in messages: one named alone, runs as ranges, and past the eighth run only
    /// the count.
    #[test]
    fn stripes_are_said_as_runs_and_a_count() {
        assert_eq!(stripes_words(&[3]), "stripe 3");
        assert_eq!(stripes_words(&[0, 1, 2, 3]), "stripes 0-3 (4 stripes)");
        assert_eq!(stripes_words(&[0, 2, 3, 9]), "stripes 0, 2-3, 9 (4 stripes)");
        let runs: Vec<u64> = (0..9).map(|r| r * 10).chain([81]).collect();
        assert_eq!(stripes_words(&runs), "stripes 0, 10, 20, 30, 40, 50, 60, 70, ... (10 stripes in 9 runs)");
        assert_eq!(stripe_ranges(&runs).last(), Some(&[80, 81]));
        assert_eq!(stripe_ranges(&(0..4096).collect::<Vec<u64>>()), vec![[0, 4095]]);
        assert_eq!(stripes_words(&(0..4096).collect::<Vec<u64>>()), "stripes 0-4095 (4096 stripes)");
    }

    /// A stream coded as it arrives, with its head written last, decodes to
    /// exactly that stream, at and around every stripe boundary, also with
    /// `m` shards lost.
    #[test]
    fn a_stream_with_its_head_patched_last_decodes_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let (k, m, unit) = (3, 2, 4096);
        let stripe = k * unit;
        for len in [0, 1, 71, 72, 100, stripe - 1, stripe, stripe + 1, 2 * stripe, 5 * stripe + 17] {
            let mut data: Vec<u8> = (0..len).map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[3]).collect();
            let head = [0xab_u8; 72];
            let head = &head[..len.min(72)];
            let out = dir.path().join(format!("s{len}"));
            let mut e = StreamEncoder::new(&out, k, m, unit, None).unwrap();
            // Uneven pieces, the head's bytes zero until the end.
            let mut at = 0;
            let mut piece = 1;
            while at < len {
                let n = piece.min(len - at);
                let bytes: Vec<u8> = data[at..at + n].iter().enumerate().map(|(i, &b)| if at + i < head.len() { 0 } else { b }).collect();
                e.put(&bytes).unwrap();
                at += n;
                piece = piece * 3 + 1;
            }
            let mode = peerpath_io::Inherited::mode_of(None);
            let (stripes, _) = e.finish(head, "s", &mode).unwrap();
            assert_eq!(stripes, (len as u64).div_ceil(stripe as u64).max(1), "{len} bytes");
            data[..head.len()].copy_from_slice(head);
            let back = dir.path().join(format!("b{len}"));
            decode(&out, &back, false, &on_cpu(), 2, true).unwrap();
            assert!(std::fs::read(&back).unwrap() == data, "{len} bytes");
            for lost in [0, 4] {
                std::fs::remove_file(out.join(shard_name(lost))).unwrap();
            }
            decode(&out, &back, true, &on_cpu(), 2, true).unwrap();
            assert!(std::fs::read(&back).unwrap() == data, "{len} bytes, two shards lost");
        }
    }

    proptest! {
        /// Fuzzing the shards: bytes flipped, units cut off and shards deleted
        /// anywhere give back the stream exactly where no stripe lost more than
        /// `m` units, and otherwise the unrecoverable error naming exactly the
        /// stripes that did, with nothing kept; repair agrees.
        #[test]
        fn damaged_shards_decode_exactly_or_fail_naming_the_lost_stripes(
            len in 0usize..40_000,
            damage in proptest::collection::vec((0usize..5, 0usize..40_000, 1u8..=255, 0u8..8), 0..6),
        ) {
            let (k, m, unit) = (3usize, 2usize, 4096usize);
            let dir = tempfile::tempdir().unwrap();
            let data: Vec<u8> = (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[2]).collect();
            let set = dir.path().join("set");
            let mut e = StreamEncoder::new(&set, k, m, unit, None).unwrap();
            e.put(&data).unwrap();
            let (stripes, _) = e.finish(&[], "s", &peerpath_io::Inherited::mode_of(None)).unwrap();
            // Which units each damage hits: a flipped byte (kind 0-5), a shard cut short (6), deleted (7).
            let mut hit = vec![std::collections::BTreeSet::new(); stripes as usize];
            let mut flipped = std::collections::HashSet::new();
            for &(shard, at, xor, kind) in &damage {
                let path = set.join(shard_name(shard));
                let Ok(mut bytes) = std::fs::read(&path) else { continue };
                // (A byte flipped twice might be put back: each is flipped once.)
                if bytes.is_empty() || (kind < 6 && !flipped.insert((shard, at % bytes.len()))) {
                    continue;
                }
                let at = at % bytes.len();
                match kind {
                    6 => bytes.truncate(at),
                    7 => {
                        std::fs::remove_file(&path).unwrap();
                        (0..stripes as usize).for_each(|s| { hit[s].insert(shard); });
                        continue;
                    }
                    _ => bytes[at] ^= xor,
                }
                std::fs::write(&path, &bytes).unwrap();
                let from = at / unit;
                let to = if kind == 6 { stripes as usize } else { from + 1 };
                (from..to).for_each(|s| { hit[s].insert(shard); });
            }
            let lost: Vec<u64> = (0..stripes).filter(|&s| hit[s as usize].len() > m).collect();
            let back = dir.path().join("back");
            let decoded = decode(&set, &back, false, &on_cpu(), 2, true);
            if lost.is_empty() {
                prop_assert!(decoded.is_ok(), "{:?}", decoded.err().map(|e| e.to_string()));
                prop_assert!(std::fs::read(&back).unwrap() == data);
                prop_assert!(repair(&set, &on_cpu(), 2).is_ok());
                std::fs::remove_file(&back).unwrap();
                decode(&set, &back, false, &on_cpu(), 2, true).unwrap();
                prop_assert!(std::fs::read(&back).unwrap() == data, "after repair");
                prop_assert!(survey(&set, &load(&set).unwrap().0, 2).unwrap().iter().all(Vec::is_empty), "repair left damage");
            } else {
                let text = decoded.err().map(|e| e.to_string()).unwrap_or_default();
                prop_assert!(text.contains(&format!("{} lost more than", stripes_words(&lost))), "{text}");
                prop_assert!(!back.exists(), "a failed decode kept its target");
                let before: Vec<Option<Vec<u8>>> = (0..k + m).map(|i| std::fs::read(set.join(shard_name(i))).ok()).collect();
                prop_assert!(repair(&set, &on_cpu(), 2).is_err());
                let after: Vec<Option<Vec<u8>>> = (0..k + m).map(|i| std::fs::read(set.join(shard_name(i))).ok()).collect();
                prop_assert!(before == after, "a failed repair changed the shards");
            }
        }
    }
}
