//! `peerpath compress SOURCE --ec K+M [--encrypt] -o DIR` (issue 19,
//! chains): compress -> encrypt -> erasure code in one pass over the source,
//! and `peerpath decompress --ec DIR -o FILE`, the reverse. The source is
//! read in blocks on one thread, compressed into members on `-T` workers,
//! and the members are sealed into `peerpath-enc/1` blocks and cut into
//! stripes, coded and written to the shards, in order on a sink thread
//! (`ec::StreamEncoder`); the stages overlap. No intermediate file exists:
//! what `ec decode` gives back is the very file `compress --encrypt` would
//! have written (the same members; a fresh file id, so other ciphertext).
//!
//! With `--engine emulated` the same chain runs in an emulated CSP's
//! memory instead (`chain_device`), with the same output.

use crate::ec::{ShardReader, StreamEncoder};
use peerpath_func::crypt::{BlockReader, FileCipher, InOrder, Key, StreamSealer, HEADER_BYTES, MAGIC, TAG_BYTES};
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, MemberEncoder, StreamDecoder};
use peerpath_runtime::report::{count, name_bytes, Quoted, ShellWord};
use peerpath_runtime::JobError;
use serde::Serialize;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct ChainOptions {
    pub level: Level,
    pub format: Format,
    /// Uncompressed bytes per member.
    pub block_size: usize,
    pub threads: usize,
    /// An emulated device's workers (`--device-workers`): `None` takes them from `threads`.
    pub device_workers: Option<usize>,
    pub encrypt: Option<(Arc<Key>, u32)>,
    pub data: usize,
    pub parity: usize,
    pub unit: usize,
    /// Each shard in a directory of its own (`--shard-dir`), if asked.
    pub placement: Option<crate::ec::Placement>,
    /// A device reads the source with O_DIRECT where its file system takes it (false:
    /// `--no-direct`); the host CPU's chain always reads it through the page cache.
    pub direct: bool,
}

/// What `compress --ec` did, on the host CPU or a device: its text report
/// is rendered from it, `--json` prints it (a `chain-report`). Nothing of the
/// key, or derived from it, is here.
#[derive(Serialize)]
pub(crate) struct ChainReport {
    #[serde(serialize_with = "crate::serialize_name")]
    source: PathBuf,
    /// `source`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]; `source_bytes` is its size).
    #[serde(skip_serializing_if = "Option::is_none")]
    source_name_bytes: Option<Vec<u8>>,
    /// The set's directory, and where each shard lies (placed with --shard-dir, or in it).
    #[serde(serialize_with = "crate::serialize_name")]
    target: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_name_bytes: Option<Vec<u8>>,
    shards: Vec<String>,
    /// Each shard's exact bytes, where a shard's name is not UTF-8 (the set's is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    shards_name_bytes: Option<Vec<Vec<u8>>>,
    source_bytes: u64,
    /// Members made, their bytes, their format ("gzip", "bgzf"), the uncompressed bytes per member,
    /// the level asked for (null where nvCOMP compressed: its algorithm came from it) and the compressor.
    members: u64,
    compressed_bytes: u64,
    format: &'static str,
    block_bytes: usize,
    level: Option<u32>,
    compressor: &'static str,
    /// Whether the members were sealed (--encrypt), and how.
    encrypted: bool,
    encryption: Option<Encryption>,
    /// The erasure code: "RS(k, m)", its shape, the stripes written.
    code: String,
    data_shards: usize,
    parity_shards: usize,
    unit_bytes: usize,
    stripes: u64,
    /// The file the set holds (what `ec decode` gives back, `decompress --ec` decodes) and its length.
    #[serde(serialize_with = "crate::serialize_name")]
    stream_name: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_name_bytes: Option<Vec<u8>>,
    stream_bytes: u64,
    seconds: f64,
    source_gb_per_s: f64,
    #[serde(flatten)]
    pub run: ChainRun,
}

/// Where a chain (or its reverse) ran and what it moved: what both reports
/// say alike (their JSON has these fields at its end).
#[derive(Serialize)]
pub(crate) struct ChainRun {
    /// Where it ran: "cpu", "emulated" or "gpu"; the host threads (-T: the host's compress or
    /// inflate threads, or the device's slots asked for); the device.
    engine: &'static str,
    threads: usize,
    device: Option<ChainDevice>,
    /// Each stage's figures: on the host CPU (measured by this process), or on the device (its own statistics; null if it keeps none).
    host_stages: Option<Vec<HostStage>>,
    device_stages: Option<Vec<crate::device_job::DeviceStage>>,
    /// Where the bytes went: payload through each memory.
    ledger: Vec<Moved>,
    /// Why the device asked for did not run it (the host CPU did, from the start).
    pub fallbacks: Vec<String>,
    provenance: &'static str,
}

impl ChainRun {
    /// How the source or shards were read (pread into the host's or device's memory), for `--verbose`.
    fn read_path(&self) -> peerpath_io::IoPath {
        peerpath_io::IoPath { engine: peerpath_io::EngineKind::Syscalls, direct: self.device.as_ref().is_some_and(|d| d.read_by_dma), fallback_reason: None }
    }

    /// On this host's CPU, on `threads` threads: its stages measured by this process.
    pub(crate) fn on_host(threads: usize, stages: Vec<HostStage>, ledger: Vec<Moved>) -> ChainRun {
        ChainRun { engine: "cpu", threads, device: None, host_stages: Some(stages), device_stages: None, ledger, fallbacks: Vec::new(), provenance: "measured on this host's CPU" }
    }

    /// On `device` (the engine `engine`), its stages from its own statistics (`None`: it keeps none).
    pub(crate) fn on_device(engine: &'static str, threads: usize, device: ChainDevice, stages: Option<Vec<crate::device_job::DeviceStage>>, ledger: Vec<Moved>, provenance: &'static str) -> ChainRun {
        ChainRun { engine, threads, device: Some(device), host_stages: None, device_stages: stages, ledger, fallbacks: Vec::new(), provenance }
    }
}

#[derive(Serialize)]
struct Encryption {
    format: &'static str,
    /// Plaintext bytes per sealed block, and the blocks sealed.
    block_bytes: u64,
    blocks: u64,
}

/// The device a chain (or its reverse) ran on.
#[derive(Serialize)]
pub(crate) struct ChainDevice {
    pub name: String,
    /// What the device says of itself (a GPU: its model, memory, nvCOMP).
    pub description: Option<String>,
    /// A GPU (staged through its pinned host window), else an emulated CSP.
    pub gpu: bool,
    /// The emulated CSP's workers (null on a GPU), the blocks (or members) in flight at most, the commands run.
    pub workers: Option<usize>,
    pub in_flight: usize,
    pub commands: u64,
    /// Shards or source read by DMA (O_DIRECT), else by the kernel's copies.
    pub read_by_dma: bool,
    /// What this process copied to or from the device's memory (measured): metadata only.
    pub host_copies: crate::device_job::HostCopies,
}

/// A stage of a chain on the host CPU: its seconds (summed over its
/// threads), the bytes its rate is of, and that rate (per thread where it had several; none
/// where the stage took under a microsecond: a rate of nothing, or millions of GB/s).
#[derive(Serialize)]
pub(crate) struct HostStage {
    pub stage: &'static str,
    pub seconds: f64,
    pub threads: usize,
    pub bytes: u64,
    pub gb_per_s: Option<f64>,
}

impl HostStage {
    pub fn new(stage: &'static str, seconds: f64, threads: usize, bytes: u64) -> HostStage {
        HostStage { stage, seconds, threads, bytes, gb_per_s: (seconds >= 1e-6).then(|| bytes as f64 / seconds / 1e9) }
    }

    /// Its rate as "1.23 GB/s", or "no rate".
    fn rate(&self) -> String {
        self.gb_per_s.map_or_else(|| "no rate".into(), |r| format!("{r:.2} GB/s"))
    }
}

/// Payload bytes that went through a memory: "host" (this process's) or "device".
#[derive(Serialize)]
pub(crate) struct Moved {
    pub memory: &'static str,
    pub what: &'static str,
    pub bytes: u64,
}

/// Prints a chain's report: JSON, nothing (`-q`), or its text.
pub(crate) fn print<R: Serialize>(kind: &str, report: &R, text: impl FnOnce(&R) -> String, json: bool, quiet: bool) {
    if json {
        println!("{}", crate::jsonout::stamped(kind, report));
    } else if !quiet {
        print!("{}", text(report));
    }
}

impl ChainReport {
    /// With `verbose`, first says on stderr how the source was read, as compress's `--verbose` does.
    pub(crate) fn print(&self, json: bool, quiet: bool, verbose: bool) {
        if verbose {
            eprintln!("peerpath: {}: read via {}", Quoted(&self.source), self.run.read_path());
        }
        print("chain-report", self, ChainReport::render, json, quiet);
    }

    fn render(&self) -> String {
        let h = peerpath_metrics::human_bytes;
        let n = self.data_shards + self.parity_shards;
        let shard_bytes = self.stripes * (n * self.unit_bytes) as u64;
        let stage = |name: &str| self.run.host_stages.iter().flatten().find(|s| s.stage == name);
        let mut t = String::new();
        match &self.run.device {
            None => {
                let coding = stage("erasure code").map_or_else(|| "no rate".into(), HostStage::rate);
                t += &format!(
                    "{}: {} -> {}, {} compressed (level {}){} -> RS({}, {}): {} of {} x {} bytes in {n} shards, {} in {}; {:.3} s, {:.2} GB/s of source, coding {coding} (measured on this host's CPU: compress, {}erasure code all ran on {})\n",
                    Quoted(&self.source),
                    h(self.source_bytes),
                    count(self.members, "member"),
                    h(self.compressed_bytes),
                    self.level.unwrap_or(0),
                    self.encryption.as_ref().map_or(String::new(), |e| format!(" -> encrypted, peerpath-enc/1 (AES-256-GCM, {} of {})", count(e.blocks, "block"), h(e.block_bytes))),
                    self.data_shards,
                    self.parity_shards,
                    count(self.stripes, "stripe"),
                    self.data_shards,
                    self.unit_bytes,
                    h(shard_bytes),
                    Quoted(&self.target),
                    self.seconds,
                    self.source_gb_per_s,
                    if self.encrypted { "encrypt, " } else { "" },
                    count(self.run.threads, "host thread"),
                );
                let part = |name: &str, f: &dyn Fn(&HostStage) -> String| stage(name).map_or(String::new(), f);
                t += &format!(
                    "stages on this host's CPU (measured): {}{}{}{}; bytes through this process's memory: {}\n",
                    part("read", &|s| format!("read {:.3} s", s.seconds)),
                    part("compress", &|s| format!("; compress {:.3} s summed over {} ({} a thread)", s.seconds, count(s.threads, "thread"), s.rate())),
                    part("seal", &|s| format!("; seal {:.3} s ({})", s.seconds, s.rate())),
                    part("erasure code", &|s| format!("; erasure code {:.3} s ({})", s.seconds, s.rate())),
                    self.run.ledger.iter().map(|m| format!("{} of {}", h(m.bytes), m.what)).collect::<Vec<_>>().join(", "),
                );
            }
            Some(d) => {
                let moved = crate::device_job::moved(d.read_by_dma);
                let copies = d.host_copies.text();
                let (compressed, how) = if d.gpu {
                    (
                        "compressed by nvCOMP".to_string(),
                        format!("every stage on 1 GPU, up to {} in flight, {}; the block read {moved} into its pinned host window and copied to GPU memory by the device, each unit copied back to the window and written from it by kernel copies; {copies} (storage DMAs into and out of the pinned window; the GPU's copy engines move them to and from its memory)", count(d.in_flight, "block"), count(d.commands, "command")),
                    )
                } else {
                    (
                        format!("compressed (level {})", self.level.unwrap_or(0)),
                        format!("every stage on 1 emulated CSP, {}, up to {} in flight, {}; the block read {moved} into its memory, shards written from it by kernel copies; {copies}", count(d.workers.unwrap_or(0), "worker"), count(d.in_flight, "block"), count(d.commands, "command")),
                    )
                };
                t += &format!(
                    "{}: {} -> {}, {} {compressed}{} -> RS({}, {}): {} in {n} shards, in {}; {:.3} s, {:.2} GB/s of source ({}: {how})\n",
                    Quoted(&self.source),
                    h(self.source_bytes),
                    count(self.members, "member"),
                    h(self.compressed_bytes),
                    if self.encrypted { " -> encrypted on the device (peerpath-enc/1)" } else { "" },
                    self.data_shards,
                    self.parity_shards,
                    count(self.stripes, "stripe"),
                    Quoted(&self.target),
                    self.seconds,
                    self.source_gb_per_s,
                    self.run.provenance,
                );
                if let Some(desc) = &d.description {
                    t += &format!("the device: {desc}\n");
                }
                if let Some(stages) = &self.run.device_stages {
                    let bytes: Vec<String> = self.run.ledger.iter().map(|m| format!("{} of {}", h(m.bytes), m.what)).collect();
                    t += &format!("stages on the device ({}): {}; bytes: {}\n", self.run.provenance, crate::device_job::render_stages(stages), bytes.join(", "));
                }
            }
        }
        let (target, word) = (Quoted(&self.target), ShellWord(&self.target));
        let key = if self.encrypted { " --key-file KEY" } else { "" };
        t += &format!(
            "{target}: `peerpath ec decode {word} -o FILE` gives back the {}-byte {} it holds; `peerpath decompress --ec {word}{key} -o FILE` the {}-byte {}\n",
            self.stream_bytes,
            Quoted(&self.stream_name),
            self.source_bytes,
            Quoted(&self.source)
        );
        t
    }
}

/// The parts of a chain's report every engine fills alike.
pub(crate) struct ChainFacts<'a> {
    pub source: &'a Path,
    pub dir: &'a Path,
    pub source_bytes: u64,
    pub members: u64,
    pub compressed_bytes: u64,
    /// Sealed blocks (with --encrypt).
    pub sealed_blocks: Option<u64>,
    pub stripes: u64,
    pub stream_name: PathBuf,
    pub stream_bytes: u64,
    pub seconds: f64,
}

impl ChainReport {
    /// The report of a chain with options `o`; the caller fills in where it ran.
    pub(crate) fn new(f: ChainFacts, o: &ChainOptions, run: ChainRun) -> ChainReport {
        let gpu = run.device.as_ref().is_some_and(|d| d.gpu);
        let shards = crate::ec::shard_paths(f.dir, o.placement.as_ref(), o.data + o.parity);
        ChainReport {
            source: f.source.to_path_buf(),
            source_name_bytes: name_bytes(f.source),
            target: f.dir.to_path_buf(),
            target_name_bytes: name_bytes(f.dir),
            shards: shards.iter().map(|p| p.display().to_string()).collect(),
            shards_name_bytes: shards.iter().any(|p| p.to_str().is_none()).then(|| shards.iter().map(|p| p.as_os_str().as_encoded_bytes().to_vec()).collect()),
            source_bytes: f.source_bytes,
            members: f.members,
            compressed_bytes: f.compressed_bytes,
            format: if o.format == Format::Bgzf { "bgzf" } else { "gzip" },
            block_bytes: o.block_size,
            level: (!gpu).then(|| o.level.get()),
            compressor: if gpu { "nvCOMP" } else { o.level.library() },
            encrypted: o.encrypt.is_some(),
            encryption: o.encrypt.as_ref().map(|(_, b)| Encryption { format: "peerpath-enc/1 (AES-256-GCM)", block_bytes: *b as u64, blocks: f.sealed_blocks.unwrap_or(0) }),
            code: format!("RS({}, {})", o.data, o.parity),
            data_shards: o.data,
            parity_shards: o.parity,
            unit_bytes: o.unit,
            stripes: f.stripes,
            stream_name_bytes: name_bytes(&f.stream_name),
            stream_name: f.stream_name,
            stream_bytes: f.stream_bytes,
            seconds: f.seconds,
            source_gb_per_s: f.source_bytes as f64 / f.seconds.max(1e-9) / 1e9,
            run,
        }
    }
}

/// What `decompress --ec` did, on the host CPU or a device: its text report
/// is rendered from it, `--json` prints it (a `reverse-chain-report`).
#[derive(Serialize)]
pub(crate) struct ReverseChainReport {
    /// The set read, and the file written.
    #[serde(serialize_with = "crate::serialize_name")]
    set: PathBuf,
    /// `set`'s and `output`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]; `output_bytes` is its size).
    #[serde(skip_serializing_if = "Option::is_none")]
    set_name_bytes: Option<Vec<u8>>,
    #[serde(serialize_with = "crate::serialize_name")]
    output: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_name_bytes: Option<Vec<u8>>,
    /// The file the set holds (its bytes), and whether it is encrypted (peerpath-enc/1: each block authenticated and decrypted as it arrived).
    stream_bytes: u64,
    encrypted: bool,
    output_bytes: u64,
    /// Members decoded (counted on a device; null on the host CPU, which does not count them), and units rebuilt from parity.
    members: Option<u64>,
    units_rebuilt: Option<u64>,
    seconds: f64,
    output_gb_per_s: f64,
    #[serde(flatten)]
    pub run: ChainRun,
}

impl ReverseChainReport {
    /// With `verbose`, first says on stderr how the shards were read, as decompress's `--verbose` does.
    pub(crate) fn print(&self, json: bool, quiet: bool, verbose: bool) {
        if verbose {
            eprintln!("peerpath: {}: shards read via {}", Quoted(&self.set), self.run.read_path());
        }
        print("reverse-chain-report", self, ReverseChainReport::render, json, quiet);
    }

    fn render(&self) -> String {
        let h = peerpath_metrics::human_bytes;
        let bytes: Vec<String> = self.run.ledger.iter().map(|m| format!("{} of {}", h(m.bytes), m.what)).collect();
        let mut t = String::new();
        match &self.run.device {
            None => {
                let stage = |name: &str| self.run.host_stages.iter().flatten().find(|s| s.stage == name);
                t += &format!(
                    "{} -> {}: {} from the shards{}{}, inflated to {} on {} (the shards read and blocks opened on one); {:.3} s, {:.2} GB/s out (measured on this host's CPU)\n",
                    Quoted(&self.set),
                    Quoted(&self.output),
                    h(self.stream_bytes),
                    self.rebuilt("on the host CPU"),
                    if self.encrypted { ", each block authenticated and decrypted as it arrived" } else { "" },
                    h(self.output_bytes),
                    count(self.run.threads, "host thread"),
                    self.seconds,
                    self.output_gb_per_s,
                );
                let secs = |name: &str| stage(name).map_or(0.0, |s| s.seconds);
                let inflate = stage("inflate");
                t += &format!(
                    "stages on this host's CPU (measured): stripes read and checked (units rebuilt where lost) {:.3} s{}, on the reader thread; inflate {:.3} s summed over {} ({} out a thread); write {:.3} s; bytes through this process's memory: {}\n",
                    secs("read"),
                    stage("open").map_or(String::new(), |s| format!(", blocks opened {:.3} s", s.seconds)),
                    secs("inflate"),
                    count(inflate.map_or(0, |s| s.threads), "thread"),
                    inflate.map_or_else(|| "no rate".into(), HostStage::rate),
                    secs("write"),
                    self.run.ledger.iter().map(|m| if m.what == "output written" { format!("{} written", h(m.bytes)) } else { format!("{} of {}", h(m.bytes), m.what) }).collect::<Vec<_>>().join(", "),
                );
            }
            Some(d) => {
                let moved = crate::device_job::moved(d.read_by_dma);
                let copies = d.host_copies.text();
                let how = if d.gpu {
                    format!("every stage on 1 GPU, up to {} in flight, {}; units read {moved} into its pinned host window and copied to GPU memory by the device, checked there against the manifest's CRC-32s, each member's output copied back to the window and written from it by kernel copies; {copies} (storage DMAs into and out of the pinned window; the GPU's copy engines move them to and from its memory)", count(d.in_flight, "member"), count(d.commands, "command"))
                } else {
                    format!("every stage on 1 emulated CSP, {}, up to {} in flight, {}; units read {moved} into its memory, checked there against the manifest's CRC-32s, the output written from it by kernel copies; {copies}", count(d.workers.unwrap_or(0), "worker"), count(d.in_flight, "member"), count(d.commands, "command"))
                };
                t += &format!(
                    "{} -> {}: {} from the shards{}{}, {} inflated to {}; {:.3} s, {:.2} GB/s out ({}: {how})\n",
                    Quoted(&self.set),
                    Quoted(&self.output),
                    h(self.stream_bytes),
                    self.rebuilt("on the device"),
                    if self.encrypted { ", each block authenticated and decrypted there" } else { "" },
                    count(self.members.unwrap_or(0), "member"),
                    h(self.output_bytes),
                    self.seconds,
                    self.output_gb_per_s,
                    self.run.provenance,
                );
                if let Some(desc) = &d.description {
                    t += &format!("the device: {desc}\n");
                }
                if let Some(stages) = &self.run.device_stages {
                    t += &format!("stages on the device ({}): {}; bytes: {}\n", self.run.provenance, crate::device_job::render_stages(stages), bytes.join(", "));
                }
            }
        }
        t
    }

    /// ", N units rebuilt WHERE", where units were rebuilt from parity.
    fn rebuilt(&self, place: &str) -> String {
        match self.units_rebuilt {
            Some(n) if n > 0 => format!(", {} rebuilt {place}", count(n, "unit")),
            _ => String::new(),
        }
    }
}

/// The parts of a reverse chain's report every engine fills alike.
pub(crate) struct ReverseFacts<'a> {
    pub dir: &'a Path,
    pub output: &'a Path,
    pub stream_bytes: u64,
    pub encrypted: bool,
    pub output_bytes: u64,
    pub members: Option<u64>,
    pub units_rebuilt: Option<u64>,
    pub seconds: f64,
}

impl ReverseChainReport {
    pub(crate) fn new(f: ReverseFacts, run: ChainRun) -> ReverseChainReport {
        ReverseChainReport {
            set: f.dir.to_path_buf(),
            set_name_bytes: name_bytes(f.dir),
            output: f.output.to_path_buf(),
            output_name_bytes: name_bytes(f.output),
            stream_bytes: f.stream_bytes,
            encrypted: f.encrypted,
            output_bytes: f.output_bytes,
            members: f.members,
            units_rebuilt: f.units_rebuilt,
            seconds: f.seconds,
            output_gb_per_s: f.output_bytes as f64 / f.seconds.max(1e-9) / 1e9,
            run,
        }
    }
}

/// What went where, for the report.
struct Counts {
    members: u64,
    compressed: u64,
    /// Time reading the source (the reader thread) and compressing (summed over the workers).
    reading: Duration,
    compressing: Duration,
}

/// The sealing stage: compressed bytes in, sealed blocks out to the shards.
struct Sealing {
    sealer: StreamSealer,
    /// The block being filled, with room for its tag.
    block: Vec<u8>,
    /// Time sealing blocks.
    sealing: Duration,
}

/// The name of the file a set made of `source` holds (its manifest's), byte for byte: the
/// source's name and `suffix` (a name that is not UTF-8 was made lossy, and two could read the same).
pub(crate) fn stream_name(source: &Path, suffix: &str) -> PathBuf {
    let mut name = source.file_name().map_or_else(|| "source".into(), std::ffi::OsStr::to_os_string);
    name.push(suffix);
    PathBuf::from(name)
}

pub(crate) fn compress_ec(source: &Path, dir: &Path, o: &ChainOptions) -> Result<ChainReport, JobError> {
    let started = Instant::now();
    let unreadable = |e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e };
    // Before opening it: a FIFO's open waits for a writer.
    crate::refuse_stream_source(source, "--ec takes a regular file")?;
    let mut src = std::fs::File::open(source).map_err(unreadable)?;
    let meta = src.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(JobError::Usage(format!("{}: --ec takes a regular file", Quoted(source))));
    }
    // A kernel file's size (0 in /proc) is not what it holds: the set would mix the two.
    crate::refuse_a_sizeless_file(&src, &meta, source, "compress --ec")?;
    let mode = peerpath_io::Inherited::mode_of(Some(&meta));
    // StreamEncoder holds the directories it writes in ([`crate::ec::hold_set_dirs`]).
    let mut shards = StreamEncoder::new(dir, o.data, o.parity, o.unit, o.placement.clone())?;
    let sealing = match &o.encrypt {
        Some((key, block)) => Some(Sealing { sealer: StreamSealer::new(key, *block).map_err(JobError::Usage)?, block: Vec::with_capacity(*block as usize + TAG_BYTES), sealing: Duration::ZERO }),
        None => None,
    };
    if sealing.is_some() {
        // The header holds the length: written over these bytes at the end.
        if let Err(e) = shards.put(&[0u8; HEADER_BYTES]) {
            shards.discard();
            return Err(e);
        }
    }
    let (ran, mut shards, mut sealing) = pipeline(&mut src, source, o, shards, sealing);
    let ran = ran.and_then(|(mut counts, read)| {
        // The end marker (peerpath's end member, BGZF's end-of-file block), as `compress` ends its files.
        let marker = o.format.end_marker();
        counts.compressed += marker.len() as u64;
        feed(&mut shards, &mut sealing.as_mut(), marker)?;
        Ok((counts, read))
    });
    let (counts, read) = match ran {
        Ok(r) => r,
        Err(e) => {
            shards.discard();
            return Err(e);
        }
    };
    if read != meta.len() {
        shards.discard();
        return Err(JobError::SourceIo { path: source.to_path_buf(), detail: format!("read {read} bytes of a {}-byte file: it changed while it was compressed; nothing was kept", meta.len()) });
    }
    // Written in place, same size: the set would mix old and new bytes (it was kept, exit 0).
    if let Err(e) = crate::source_size_unchanged(&src, source, meta.len(), Some(peerpath_io::Stamp::of(&meta))) {
        shards.discard();
        return Err(e);
    }
    let (head, name, sealed) = match sealing {
        Some(mut s) => {
            // The last block is the short one; a stream that ended on a block
            // boundary has none (an empty stream is one empty block).
            if !s.block.is_empty() || s.sealer.blocks() == 0 {
                let n = s.block.len();
                s.block.resize(n + TAG_BYTES, 0);
                let t = Instant::now();
                s.sealer.seal_next(&mut s.block);
                s.sealing += t.elapsed();
                if let Err(e) = shards.put(&s.block) {
                    shards.discard();
                    return Err(e);
                }
            }
            (s.sealer.header().to_vec(), stream_name(source, ".gz.ppenc"), Some((s.sealer.blocks(), s.sealer.block_bytes(), s.sealing)))
        }
        None => (Vec::new(), stream_name(source, ".gz"), None),
    };
    let stream_bytes = shards.len;
    let (stripes, coding) = shards.finish(&head, name.clone(), &mode)?;
    let n = o.data + o.parity;
    let shard_bytes = stripes * (n * o.unit) as u64;
    let facts = ChainFacts { source, dir, source_bytes: read, members: counts.members, compressed_bytes: counts.compressed, sealed_blocks: sealed.map(|(b, _, _)| b), stripes, stream_name: name, stream_bytes, seconds: started.elapsed().as_secs_f64() };
    let ledger = vec![Moved { memory: "host", what: "source read", bytes: read }, Moved { memory: "host", what: "members", bytes: counts.compressed }, Moved { memory: "host", what: "shards written", bytes: shard_bytes }];
    let mut stages = vec![HostStage::new("read", counts.reading.as_secs_f64(), 1, read), HostStage::new("compress", counts.compressing.as_secs_f64(), o.threads, read)];
    if let Some((_, _, t)) = sealed {
        stages.push(HostStage::new("seal", t.as_secs_f64(), 1, counts.compressed));
    }
    stages.push(HostStage::new("erasure code", coding.as_secs_f64(), 1, shard_bytes));
    Ok(ChainReport::new(facts, o, ChainRun::on_host(o.threads, stages, ledger)))
}

/// Compressed bytes to the next stage: sealed first with `--encrypt`.
fn feed(shards: &mut StreamEncoder, sealing: &mut Option<&mut Sealing>, data: &[u8]) -> Result<(), JobError> {
    match sealing {
        Some(s) => seal_into(s, data, shards),
        None => shards.put(data),
    }
}

/// Adds compressed bytes to the block being sealed; full blocks are sealed
/// and go to the shards.
fn seal_into(s: &mut Sealing, mut data: &[u8], shards: &mut StreamEncoder) -> Result<(), JobError> {
    let block = s.sealer.block_bytes();
    while !data.is_empty() {
        let n = data.len().min(block - s.block.len());
        s.block.extend_from_slice(&data[..n]);
        data = &data[n..];
        if s.block.len() == block {
            s.block.resize(block + TAG_BYTES, 0);
            let t = Instant::now();
            s.sealer.seal_next(&mut s.block);
            s.sealing += t.elapsed();
            shards.put(&s.block)?;
            s.block.clear();
        }
    }
    Ok(())
}

/// The source read in blocks on this thread, compressed on `o.threads`
/// workers, and sealed and coded in order on a sink thread, all stages
/// overlapped (at most two blocks a worker in flight). Gives back the
/// stages' state for the end of the stream.
fn pipeline(src: &mut std::fs::File, source: &Path, o: &ChainOptions, mut shards: StreamEncoder, mut sealing: Option<Sealing>) -> (Result<(Counts, u64), JobError>, StreamEncoder, Option<Sealing>) {
    use std::sync::mpsc::sync_channel;
    let in_flight = 2 * o.threads;
    let (work_tx, work_rx) = sync_channel::<(u64, Vec<u8>)>(in_flight);
    // The workers own the work queue's receiver, so that when they have all stopped (the sink
    // failed: a shard target full) the reader's send fails instead of waiting for ever on a
    // full queue that no one empties.
    let work_rx = std::sync::Arc::new(std::sync::Mutex::new(work_rx));
    let (done_tx, done_rx) = sync_channel::<(u64, Vec<u8>)>(in_flight);
    // Buffers go round (blocks: reader -> worker -> reader; members: worker
    // -> sink -> worker) rather than being allocated and faulted in afresh.
    let (spare_blocks, spare_members) = (std::sync::Mutex::new(Vec::<Vec<u8>>::new()), std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let take = |pool: &std::sync::Mutex<Vec<Vec<u8>>>| pool.lock().expect("a buffer pool's lock").pop().unwrap_or_default();
    let give = |pool: &std::sync::Mutex<Vec<Vec<u8>>>, b: Vec<u8>| pool.lock().expect("a buffer pool's lock").push(b);
    let compressing_ns = std::sync::atomic::AtomicU64::new(0);
    let mut reading = Duration::ZERO;
    let (read, counts) = std::thread::scope(|scope| {
        for _ in 0..o.threads {
            let (work_rx, done_tx) = (std::sync::Arc::clone(&work_rx), done_tx.clone());
            let (spare_blocks, spare_members) = (&spare_blocks, &spare_members);
            let (level, format, compressing_ns) = (o.level, o.format, &compressing_ns);
            scope.spawn(move || {
                let mut encoder = MemberEncoder::new(level);
                loop {
                    let next = work_rx.lock().expect("the work queue's lock").recv();
                    let Ok((seq, block)) = next else { return };
                    let mut out = take(spare_members);
                    out.resize(member_bound_bytes(block.len()), 0);
                    let t = Instant::now();
                    let n = encode_member(&mut encoder, format, &block, &mut out);
                    compressing_ns.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                    out.truncate(n);
                    give(spare_blocks, block);
                    if done_tx.send((seq, out)).is_err() {
                        return; // the sink failed
                    }
                }
            });
        }
        drop(done_tx);
        drop(work_rx);
        let (shards, sealing, spare_members_sink) = (&mut shards, &mut sealing, &spare_members);
        let sink = scope.spawn(move || -> Result<Counts, JobError> {
            let mut counts = Counts { members: 0, compressed: 0, reading: Duration::ZERO, compressing: Duration::ZERO };
            let mut pending = std::collections::BTreeMap::new();
            for (seq, member) in done_rx {
                pending.insert(seq, member);
                while let Some(member) = pending.remove(&counts.members) {
                    counts.members += 1;
                    counts.compressed += member.len() as u64;
                    feed(shards, &mut sealing.as_mut(), &member)?;
                    give(spare_members_sink, member);
                }
            }
            Ok(counts)
        });
        let read = (|| -> Result<u64, JobError> {
            let mut read = 0u64;
            for seq in 0u64.. {
                let mut b = take(&spare_blocks);
                b.clear();
                let t = Instant::now();
                (&mut *src).take(o.block_size as u64).read_to_end(&mut b).map_err(|e| JobError::SourceIo { path: source.to_path_buf(), detail: e.to_string() })?;
                reading += t.elapsed();
                read += b.len() as u64;
                // An empty source is one empty member, as `compress` makes it.
                let last = b.len() < o.block_size;
                if b.is_empty() && seq > 0 {
                    break;
                }
                if work_tx.send((seq, b)).is_err() || last {
                    break; // the workers stopped: the sink says why
                }
            }
            Ok(read)
        })();
        drop(work_tx);
        (read, sink.join().expect("the sink thread panicked"))
    });
    let ran = match (counts, read) {
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(c), Ok(r)) => Ok((Counts { reading, compressing: Duration::from_nanos(compressing_ns.into_inner()), ..c }, r)),
    };
    (ran, shards, sealing)
}

/// The shard set's stream as a `Read`; a shard error is kept to be
/// reported as itself (the reader above it sees an I/O error).
struct ShardStream {
    shards: ShardReader,
    buf: Vec<u8>,
    at: usize,
    failed: std::rc::Rc<std::cell::RefCell<Option<JobError>>>,
    /// Time reading stripes (and rebuilding units).
    reading: std::rc::Rc<std::cell::Cell<Duration>>,
}

impl Read for ShardStream {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            self.at = 0;
            let t = Instant::now();
            let next = self.shards.next_stripe(&mut self.buf);
            self.reading.set(self.reading.get() + t.elapsed());
            match next {
                Ok(_) => {}
                Err(e) => {
                    let text = e.to_string();
                    *self.failed.borrow_mut() = Some(e);
                    return Err(std::io::Error::other(text));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `peerpath decompress DIR --ec`: the reverse of `compress --ec` in one
/// pass: the stripes are read (units rebuilt where shards are missing or
/// corrupt), sealed blocks opened as they arrive (a `.gz.ppenc` set), and
/// the members inflated into OUTPUT (on `threads` workers where they
/// declare their sizes, as peerpath's do), which appears whole or not at
/// all. A set holding any other file is refused.
/// `end_member_required`: as [`peerpath_func::StreamDecoder::allow_missing_end_member`] says, when false.
pub(crate) fn decompress_ec(dir: &Path, output: &Path, key: Option<Arc<Key>>, force: bool, threads: usize, end_member_required: bool) -> Result<ReverseChainReport, JobError> {
    let started = Instant::now();
    let shards = ShardReader::open(dir)?;
    let set_bytes = shards.stream_bytes();
    let failed = std::rc::Rc::new(std::cell::RefCell::new(None));
    let reading = std::rc::Rc::new(std::cell::Cell::new(Duration::ZERO));
    let mut stream = std::io::BufReader::with_capacity(1 << 20, ShardStream { shards, buf: Vec::new(), at: 0, failed: failed.clone(), reading: reading.clone() });
    let shard_error = |e: std::io::Error| failed.borrow_mut().take().unwrap_or_else(|| JobError::Damaged { path: dir.to_path_buf(), detail: e.to_string() });
    let first = std::io::BufRead::fill_buf(&mut stream).map_err(shard_error)?;
    let cipher = if first.starts_with(MAGIC) {
        let Some(key) = key else {
            return Err(JobError::Usage(format!("{}: holds an encrypted file (peerpath-enc/1): give its key (--key-file FILE, --key-env VAR or $PEERPATH_KEY)", Quoted(dir))));
        };
        let mut header = [0u8; HEADER_BYTES];
        stream.read_exact(&mut header).map_err(shard_error)?;
        let cipher = FileCipher::open(&key, &header).map_err(|e| JobError::from_crypt(dir, e))?;
        cipher.check_length(set_bytes).map_err(|e| JobError::from_crypt(dir, e))?;
        Some(Arc::new(cipher))
    } else {
        None
    };
    let _held = peerpath_io::OutputDir::hold_parent_of(output);
    let (mut t, temporary) = peerpath_io::create_temporary(output, false).map_err(|source| JobError::TargetIo { path: output.to_path_buf(), source })?;
    let (mut produced, mut writing, mut input, mut inflating) = (0u64, Duration::ZERO, Duration::ZERO, Duration::ZERO);
    // Where the stream lacked its end member, read as --allow-no-end-member lets it.
    let mut missing_end = None;
    let written = (|| -> Result<(), JobError> {
        // A failed write is the target's error (a full disk: exit 11), not a read's.
        let mut write_failed = None;
        let sink = |d: &[u8]| {
            produced += d.len() as u64;
            let at = Instant::now();
            let w = t.file.write_all(d);
            writing += at.elapsed();
            if let Err(e) = &w {
                write_failed = Some(e.raw_os_error().map_or_else(|| std::io::Error::new(e.kind(), e.to_string()), std::io::Error::from_raw_os_error));
            }
            w
        };
        let decoded = match &cipher {
            Some(c) => {
                let plain = BlockReader::new(InOrder(&mut stream), c.clone(), 0).map_err(shard_error)?;
                let mut d = StreamDecoder::new(Timed(plain, &mut input), 0, 0);
                if !end_member_required {
                    d = d.allow_missing_end_member();
                }
                let r = d.run_parallel(threads, true, sink);
                (inflating, missing_end) = (d.inflating, d.missing_end_member());
                r
            }
            None => {
                let mut d = StreamDecoder::new(Timed(&mut stream, &mut input), 0, 0);
                if !end_member_required {
                    d = d.allow_missing_end_member();
                }
                let r = d.run_parallel(threads, true, sink);
                (inflating, missing_end) = (d.inflating, d.missing_end_member());
                r
            }
        };
        if let (Err(_), Some(source)) = (&decoded, write_failed) {
            return Err(JobError::TargetIo { path: output.to_path_buf(), source });
        }
        if let Err(e) = decoded {
            // A shard that failed mid-way is named as such, not as bad gzip;
            // a block that fails authentication as such, not as a read error.
            return Err(failed.borrow_mut().take().unwrap_or_else(|| match e {
                peerpath_func::StreamError::Io(io) if io.get_ref().is_some_and(|r| r.is::<peerpath_func::crypt::CryptError>()) => {
                    let crypt = io.into_inner().and_then(|r| r.downcast::<peerpath_func::crypt::CryptError>().ok()).expect("checked above");
                    JobError::from_crypt(dir, *crypt)
                }
                e => peerpath_runtime::decompress::stream_error(dir, e),
            }));
        }
        crate::ec::put_restored_in_place(&t.file, &temporary, output, dir, force)
    })();
    if let Err(e) = written {
        peerpath_io::discard(&temporary);
        return Err(e);
    }
    if let Some(at) = missing_end {
        eprintln!("peerpath: warning: {}: no end member after the member that ends at byte {at} of its stream: read as --allow-no-end-member asks (a cut at a member's end there goes unnoticed)", Quoted(dir));
    }
    let reading = reading.get();
    let units_rebuilt = Some(stream.get_ref().shards.units_rebuilt());
    let facts = ReverseFacts { dir, output, stream_bytes: set_bytes, encrypted: cipher.is_some(), output_bytes: produced, members: None, units_rebuilt, seconds: started.elapsed().as_secs_f64() };
    let mut stages = vec![HostStage::new("read", reading.as_secs_f64(), 1, set_bytes)];
    if cipher.is_some() {
        stages.push(HostStage::new("open", input.saturating_sub(reading).as_secs_f64(), 1, set_bytes));
    }
    stages.push(HostStage::new("inflate", inflating.as_secs_f64(), threads, produced));
    stages.push(HostStage::new("write", writing.as_secs_f64(), 1, produced));
    let ledger = vec![Moved { memory: "host", what: "stream from the shards", bytes: set_bytes }, Moved { memory: "host", what: "output written", bytes: produced }];
    Ok(ReverseChainReport::new(facts, ChainRun::on_host(threads, stages, ledger)))
}

/// A reader that adds the time spent in its reads to a clock.
struct Timed<'a, R>(R, &'a mut Duration);

impl<R: Read> Read for Timed<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let t = Instant::now();
        let n = self.0.read(buf);
        *self.1 += t.elapsed();
        n
    }
}
