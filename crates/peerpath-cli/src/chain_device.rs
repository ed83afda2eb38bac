//! `peerpath compress SOURCE --ec K+M [--encrypt] --engine emulated -o DIR`:
//! the chain in an emulated CSP's memory. Each block of the source is read
//! by the kernel straight into the device's memory (O_DIRECT), compressed
//! there into a member (`GzipCompressMember`), gathered into the block being
//! sealed (`Copy`), sealed (`AeadSealBlock`, with the file's device
//! material), gathered into the stripe being filled (`Copy`), and each full
//! stripe is coded (`EcEncode`), checksummed unit by unit (`Crc32`) and
//! written to the shards from the device's memory. Only sizes, CRC-32s and
//! the 72-byte header (which the host makes: it holds the length) cross the
//! host process; the payload never does. The first stripe is kept in device
//! memory until the end, as on the CPU (`ec::StreamEncoder`). Blocks compress
//! on every device worker at once (a block slot per worker and one more, so
//! the host reads the next block while the device works); the rest of the
//! chain takes the members in order, a command at a time. A device that
//! fails stops the chain with nothing kept ([`Stop::Device`]): the caller
//! says so and runs the whole job on the CPU (or fails with --no-fallback).
//!
//! `--engine gpu` runs the same chain on a GPU ([`start_gpu`]: nvCOMP's
//! compressor, peerpath's AES-256-GCM and Reed-Solomon/CRC-32 kernels),
//! whose memory storage reaches only through a pinned host window: the
//! layout is there twice (`Layout::window_at`), each block is read into the
//! window's copy of its slot and copied to GPU memory by the device, every
//! stage runs in GPU memory, and each unit is copied back to the window to be
//! written; what the host writes (the material, the header) goes into the
//! window and is copied over the same way.
//!
//! The reverse (`decompress --ec DIR --engine emulated|gpu`, [`decompress_ec`])
//! runs the same way: on a GPU ([`start_decode_gpu`]) nvCOMP decodes the
//! members in GPU memory and peerpath's CRC-32, Reed-Solomon and AES-256-GCM
//! kernels check the units, rebuild the lost ones and open the blocks; each
//! unit is read into the window and copied to GPU memory, each member's
//! output copied back to the window to be written, and what the host reads
//! (headers) or writes (the material, the rebuild's indices) goes through the
//! window too.

use crate::chain::ChainOptions;
use crate::device_job;
use crate::ec::{self, Manifest};
use peerpath_device::{Device, DeviceRange, FaultConfig, Function, FunctionKind};
use peerpath_func::crypt::{device_key, StreamSealer, DEVICE_KEY_BYTES, HEADER_BYTES, MAGIC, TAG_BYTES};
use peerpath_func::gzip::END_MARKER_MAX_BYTES;
use peerpath_func::{member_bound_bytes, Format};
use peerpath_runtime::report::Quoted;
use peerpath_runtime::JobError;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a chain on the device stopped: a failure of the job's own (bad
/// input, a target that cannot be written: the CPU would fail the same way),
/// or of the device (it died, hung, answered an error, or cannot take the
/// set's sizes): then the CPU may do the whole job instead.
pub(crate) enum Stop {
    Job(JobError),
    Device(String),
    /// The device says the data is damaged: not taken at its word (a GPU's decoder may refuse
    /// sound input), the host CPU decodes the set again to check it, unless `--no-fallback`
    /// forbids the CPU any part, when the verdict stands, said to be the device's alone.
    Verdict(String),
}

impl From<String> for Stop {
    fn from(why: String) -> Stop {
        Stop::Device(why)
    }
}

impl From<&str> for Stop {
    fn from(why: &str) -> Stop {
        Stop::Device(why.into())
    }
}

impl From<JobError> for Stop {
    fn from(e: JobError) -> Stop {
        Stop::Job(e)
    }
}

const ALIGN: u64 = 4096;

/// Where everything lives in the device's memory.
struct Layout {
    /// Block slots: each a block read from the source, and its member.
    read: Vec<DeviceRange>,
    member: Vec<DeviceRange>,
    /// The plaintext block being sealed, and its sealed form.
    plain: DeviceRange,
    sealed: DeviceRange,
    /// The first stripe, the stripe being filled, the parity.
    first: DeviceRange,
    stripe: DeviceRange,
    parity: DeviceRange,
    material: DeviceRange,
    /// BGZF's end-of-file block, written by the host at the start (a constant, not payload).
    eof: DeviceRange,
    /// On a staged device (a GPU): where the window's copy of the layout
    /// starts, which storage and the host reach (0: the memory is all mapped).
    window_at: u64,
}

impl Layout {
    fn new(o: &ChainOptions) -> Layout {
        let slots = chain_slots(o);
        let mut at = 0u64;
        let mut next = |len: u64| {
            let r = DeviceRange::new(at, len);
            at += len.next_multiple_of(ALIGN).max(ALIGN);
            r
        };
        let block = o.encrypt.as_ref().map_or(0, |(_, b)| *b as u64);
        let stripe = (o.data * o.unit) as u64;
        Layout {
            read: (0..slots).map(|_| next(o.block_size as u64)).collect(),
            member: (0..slots).map(|_| next(member_bound_bytes(o.block_size) as u64)).collect(),
            plain: next(block),
            sealed: next(block + TAG_BYTES as u64),
            first: next(stripe),
            stripe: next(stripe),
            parity: next((o.parity * o.unit) as u64),
            material: next(DEVICE_KEY_BYTES as u64),
            eof: next(END_MARKER_MAX_BYTES as u64),
            window_at: 0,
        }
    }

    fn bytes(&self) -> usize {
        (self.eof.offset + ALIGN) as usize
    }

    /// Where storage and the host reach `r`: the window's copy on a staged device.
    fn io(&self, r: DeviceRange) -> DeviceRange {
        DeviceRange::new(self.window_at + r.offset, r.len)
    }
}

/// On a staged device (its window from `window_at`; 0: the memory is all
/// mapped), copies `r` from the window to the device's own memory (`in_`)
/// or back, and waits; nothing on a mapped one.
fn stage(dev: &mut dyn Device, commands: &mut device_job::Commands, window_at: u64, r: DeviceRange, in_: bool) -> Result<(), String> {
    if window_at == 0 || r.len == 0 {
        return Ok(());
    }
    let window = DeviceRange::new(window_at + r.offset, r.len);
    let (from, to) = if in_ { (window, r) } else { (r, window) };
    commands.run(dev, Function::Copy, vec![from], to).map(|_| ())
}

/// Writes `bytes` (metadata) at `at` in the device's memory: through the
/// window on a staged device.
fn host_put(dev: &mut dyn Device, commands: &mut device_job::Commands, window_at: u64, at: u64, bytes: &[u8]) -> Result<(), String> {
    if bytes.is_empty() {
        return Ok(());
    }
    let r = DeviceRange::new(at, bytes.len() as u64);
    // SAFETY: the range (or the window's copy of it) lies in the device's memory
    // (the callers' layouts); no command uses it now.
    unsafe { dev.memory().host_write(window_at + r.offset, bytes) };
    stage(dev, commands, window_at, r, true)
}

/// The device's workers for `-T threads`: a core each, at most 16.
fn device_workers(threads: usize) -> usize {
    threads.clamp(1, 16)
}

/// Buffer slots a chain keeps in flight (blocks compressing, members
/// inflating): one per device worker, and one more being read or gathered.
fn slots(threads: usize) -> usize {
    device_workers(threads) + 1
}

/// The compress chain's device workers: `--device-workers` as given, else from -T.
fn chain_workers(o: &ChainOptions) -> usize {
    o.device_workers.unwrap_or_else(|| device_workers(o.threads))
}

/// The compress chain's buffer slots ([`slots`]): one per worker, and one more.
fn chain_slots(o: &ChainOptions) -> usize {
    chain_workers(o) + 1
}

/// What every device needs of the chain's options.
fn check_options(o: &ChainOptions) -> Result<(), String> {
    if !(o.block_size as u64).is_multiple_of(ALIGN) {
        // BGZF's blocks are its own size, not an option given (--block-size is refused with it).
        let what = if o.format == Format::Bgzf { format!("BGZF's blocks ({} bytes of input each) are", o.block_size) } else { format!("--block-size {} is", o.block_size) };
        return Err(format!("the device reads whole 4 KiB pages by DMA: {what} not a multiple of 4K"));
    }
    if o.data + o.parity > u8::MAX as usize {
        return Err(format!("the device's command holds at most 255 shards, not {}", o.data + o.parity));
    }
    Ok(())
}

/// Opens GPU `ordinal` for the chain: nvCOMP's gzip compressor (`algorithm`),
/// peerpath's coding kernels, and its AES-256-GCM kernels when sealing; the
/// layout in its memory and again in its pinned host window. Or why not.
pub(crate) fn start_gpu(o: &ChainOptions, ordinal: usize, nvcomp: Option<std::path::PathBuf>, algorithm: i32, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    check_options(o)?;
    if o.format != Format::Gzip {
        return Err("the GPU compresses gzip members (nvCOMP), not BGZF".into());
    }
    let bytes = Layout::new(o).bytes();
    let config = peerpath_gpu::GpuDeviceConfig { algorithm, nvcomp, compress: true, coding: true, crypt: o.encrypt.is_some(), ..peerpath_gpu::GpuDeviceConfig::staged(ordinal, bytes, chain_slots(o) + 2) };
    device_job::open_gpu(device_job::timed(config, timeout))
}

/// Starts an emulated CSP with room for the chain, or says why it cannot run there.
pub(crate) fn start(o: &ChainOptions, faults: Option<FaultConfig>, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    check_options(o)?;
    let depth = (chain_slots(o) + 2) as u32;
    let dev = device_job::spawn("chain", Layout::new(o).bytes(), depth, chain_workers(o) as u32, FunctionKind::GzipCompressMember, timeout)?;
    for need in [FunctionKind::Copy, FunctionKind::EcEncode, FunctionKind::Crc32, FunctionKind::AeadSealBlock] {
        if !dev.functions().contains(need) {
            return Err(format!("the emulated CSP does not offer {}", need.name()));
        }
    }
    Ok(device_job::with_faults(dev, faults))
}

/// The chain's state on the host: fill levels, counters and the shards.
struct Chain<'a> {
    dev: &'a mut dyn Device,
    l: Layout,
    o: &'a ChainOptions,
    /// The set's directory (for errors).
    dir: &'a Path,
    files: Vec<(File, peerpath_io::Temporary)>,
    /// Where the shards go (for errors).
    names: Vec<std::path::PathBuf>,
    crcs: Vec<Vec<u32>>,
    sealer: Option<StreamSealer>,
    /// Bytes in the block being sealed, in the stripe being filled; full stripes.
    plain_fill: u64,
    stripe_fill: u64,
    stripes: u64,
    /// The stream's length so far, compressed bytes, members.
    len: u64,
    compressed: u64,
    members: u64,
    commands: device_job::Commands,
}

impl Chain<'_> {
    fn run(&mut self, function: Function, inputs: Vec<DeviceRange>, output: DeviceRange) -> Result<u64, String> {
        Ok(self.commands.run(self.dev, function, inputs, output)?.output_bytes)
    }

    /// Writes `bytes` (metadata: the material, the header, BGZF's end) at
    /// `at` in the device's memory: through the window on a staged device.
    fn host_put(&mut self, at: u64, bytes: &[u8]) -> Result<(), String> {
        host_put(self.dev, &mut self.commands, self.l.window_at, at, bytes)
    }

    fn stage(&mut self, r: DeviceRange, in_: bool) -> Result<(), String> {
        stage(self.dev, &mut self.commands, self.l.window_at, r, in_)
    }

    fn current(&self) -> DeviceRange {
        if self.stripes == 0 {
            self.l.first
        } else {
            self.l.stripe
        }
    }

    /// Appends a range of device memory to the stream: gathered into the stripe being filled.
    fn put(&mut self, mut from: DeviceRange) -> Result<(), Stop> {
        let stripe_bytes = self.l.stripe.len;
        while from.len > 0 {
            if self.stripe_fill == 0 {
                // A stripe begun: the set grows to `stripes + 1`.
                ec::check_stripes(self.o.data + self.o.parity, self.stripes + 1, self.dir)?;
            }
            let n = from.len.min(stripe_bytes - self.stripe_fill);
            let to = DeviceRange::new(self.current().offset + self.stripe_fill, n);
            self.run(Function::Copy, vec![DeviceRange::new(from.offset, n)], to)?;
            (from, self.stripe_fill, self.len) = (DeviceRange::new(from.offset + n, from.len - n), self.stripe_fill + n, self.len + n);
            if self.stripe_fill == stripe_bytes {
                if self.stripes > 0 {
                    let crcs = self.code_and_write(self.l.stripe, self.stripes)?;
                    self.crcs.iter_mut().zip(crcs).for_each(|(c, x)| c.push(x));
                }
                self.stripes += 1;
                self.stripe_fill = 0;
            }
        }
        Ok(())
    }

    /// Compressed bytes to the next stage: the block being sealed, or the stripes.
    fn feed(&mut self, mut from: DeviceRange) -> Result<(), Stop> {
        if self.sealer.is_none() {
            return self.put(from);
        }
        let block = self.l.plain.len;
        while from.len > 0 {
            let n = from.len.min(block - self.plain_fill);
            self.run(Function::Copy, vec![DeviceRange::new(from.offset, n)], DeviceRange::new(self.l.plain.offset + self.plain_fill, n))?;
            (from, self.plain_fill) = (DeviceRange::new(from.offset + n, from.len - n), self.plain_fill + n);
            if self.plain_fill == block {
                self.seal()?;
            }
        }
        Ok(())
    }

    /// Seals the block being filled (full, or the last) and puts it in the stream.
    fn seal(&mut self) -> Result<(), Stop> {
        let index = self.sealer.as_ref().expect("sealing").blocks();
        let n = self.plain_fill;
        let out = self.run(Function::AeadSealBlock { index }, vec![DeviceRange::new(self.l.plain.offset, n), self.l.material], self.l.sealed)?;
        if out != n + TAG_BYTES as u64 {
            return Err(Stop::Device(format!("the device sealed block {index} into {out} bytes")));
        }
        // The host's sealer only counts: the device did the sealing (its layout gives the header).
        self.sealer.as_mut().expect("sealing").count_sealed(n as usize);
        self.plain_fill = 0;
        self.put(DeviceRange::new(self.l.sealed.offset, out))
    }

    /// Codes stripe `s` held in `buf`, checksums its units and writes them
    /// from the device's memory; their CRC-32s.
    fn code_and_write(&mut self, buf: DeviceRange, s: u64) -> Result<Vec<u32>, Stop> {
        let (k, m, unit) = (self.o.data, self.o.parity, self.o.unit as u64);
        self.run(Function::EcEncode { data: k as u8, parity: m as u8 }, vec![buf], self.l.parity)?;
        let units: Vec<DeviceRange> = (0..k as u64).map(|i| DeviceRange::new(buf.offset + i * unit, unit)).chain((0..m as u64).map(|i| DeviceRange::new(self.l.parity.offset + i * unit, unit))).collect();
        let mut crcs = Vec::with_capacity(k + m);
        for (i, u) in units.iter().enumerate() {
            crcs.push(self.commands.run(self.dev, Function::Crc32, vec![*u], DeviceRange::EMPTY)?.input_crc32);
            self.stage(*u, false)?;
            let ptr = self.dev.memory().io_ptr(self.l.io(*u)).ok_or("a unit outside the device's memory")?;
            // SAFETY: the unit (the window's copy on a staged device) lies in the device's
            // mapped memory; no command writes it until this stripe is written.
            unsafe { device_job::write_from(ptr, unit as usize, &self.files[i].0, s * unit) }.map_err(|source| JobError::TargetIo { path: self.names[i].clone(), source })?;
        }
        Ok(crcs)
    }
}

/// The chain on `dev`: what `chain::compress_ec` does on the CPU, with the same output.
pub(crate) fn compress_ec(dev: &mut dyn Device, source: &Path, dir: &Path, o: &ChainOptions) -> Result<crate::chain::ChainReport, Stop> {
    let started = Instant::now();
    let unreadable = |e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e };
    // Before opening it: a FIFO's open waits for a writer.
    crate::refuse_stream_source(source, "--ec takes a regular file")?;
    let opened = peerpath_io::open_source(source, o.direct).map_err(unreadable)?;
    let meta = opened.file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(JobError::Usage(format!("{}: --ec takes a regular file", Quoted(source))).into());
    }
    // A kernel file's size (0 in /proc) is not what it holds: the device reads the file by its size.
    crate::refuse_a_sizeless_file(&opened.file, &meta, source, "compress --ec")?;
    ec::check_unit(o.data, o.parity, o.unit, "--ec-unit")?;
    ec::check_new_set_dir(dir, Some(source))?;
    let n = o.data + o.parity;
    let names = ec::shard_targets(dir, o.placement.as_ref(), n);
    let _held = ec::hold_set_dirs(dir, o.placement.as_ref());
    let files = ec::create_temporaries(&names, &ec::shard_paths(dir, o.placement.as_ref(), n), false)?;
    let sealer = match &o.encrypt {
        Some((key, block)) => Some(StreamSealer::new(key, *block).map_err(JobError::Usage)?),
        None => None,
    };
    let mut l = Layout::new(o);
    l.window_at = dev.memory().dma_window().map_or(0, |w| w.0);
    if l.window_at > 0 && (l.window_at < l.bytes() as u64 || (dev.memory().len() as u64) < l.window_at + l.bytes() as u64) {
        return Err("the device's memory is not staged as the chain needs (its own memory and its window each the chain's size)".into());
    }
    let on_gpu = matches!(dev.memory().domain(), peerpath_mem::MemoryDomain::Gpu { .. });
    let copied_before = dev.memory().host_copied_bytes();
    let mut c = Chain { dev, l, o, dir, files, names: ec::shard_paths(dir, o.placement.as_ref(), n), crcs: vec![Vec::new(); n], sealer, plain_fill: 0, stripe_fill: 0, stripes: 0, len: 0, compressed: 0, members: 0, commands: Default::default() };
    let ran = run_chain(&mut c, source, &opened.file, meta.len(), o);
    // The device's copy of the file's key material goes, whatever happened (on a
    // staged device that failed, the window's copy at least).
    if o.encrypt.is_some() {
        let _ = c.host_put(c.l.material.offset, &[0u8; DEVICE_KEY_BYTES]);
    }
    let stripes = match ran {
        Ok(s) => s,
        Err(stop) => {
            c.files.iter().for_each(|(_, t)| peerpath_io::discard(t));
            return Err(stop);
        }
    };
    if let Err(err) = crate::source_size_unchanged(&opened.file, source, meta.len(), Some(peerpath_io::Stamp::of(&meta))) {
        c.files.iter().for_each(|(_, t)| peerpath_io::discard(t));
        return Err(err.into());
    }
    let name = crate::chain::stream_name(source, if c.sealer.is_some() { ".gz.ppenc" } else { ".gz" });
    let mut manifest = Manifest::new(&name, c.len, (o.data, o.parity, o.unit), stripes, std::mem::take(&mut c.crcs));
    manifest.place(o.placement.as_ref());
    ec::publish(dir, c.files, &manifest, &peerpath_io::Inherited::mode_of(Some(&meta)))?;
    let facts = crate::chain::ChainFacts {
        source,
        dir,
        source_bytes: meta.len(),
        members: c.members,
        compressed_bytes: c.compressed,
        sealed_blocks: c.sealer.as_ref().map(|s| s.blocks()),
        stripes,
        stream_name: name,
        stream_bytes: c.len,
        seconds: started.elapsed().as_secs_f64(),
    };
    let host_copies = device_job::HostCopies { bytes: c.dev.memory().host_copied_bytes() - copied_before, of: "the key material and its zeroing, the file's header, the first stripe's head".into(), payload_bytes: meta.len() };
    let device = crate::chain::ChainDevice {
        name: c.dev.name().to_string(),
        description: c.dev.description().map(str::to_string),
        gpu: on_gpu,
        workers: (!on_gpu).then(|| chain_workers(o)),
        in_flight: chain_slots(o),
        commands: c.commands.count(),
        read_by_dma: device_job::is_direct(&opened.file),
        host_copies,
    };
    let (engine, provenance) = if on_gpu { ("gpu", "measured on a real accelerator (GPU)") } else { ("emulated", "measured on emulated devices") };
    let ledger = vec![
        crate::chain::Moved { memory: "device", what: "source read into device memory", bytes: meta.len() },
        crate::chain::Moved { memory: "device", what: "shards written from it", bytes: stripes * (n * o.unit) as u64 },
        crate::chain::Moved { memory: "host", what: "header from this process", bytes: if c.sealer.is_some() { HEADER_BYTES as u64 } else { 0 } },
    ];
    let stages = device_job::stage_figures(c.dev);
    Ok(crate::chain::ChainReport::new(facts, o, crate::chain::ChainRun::on_device(engine, o.threads, device, stages, ledger, provenance)))
}

/// Reads, compresses, seals and codes the whole source; the number of stripes.
fn run_chain(c: &mut Chain, source: &Path, src: &File, size: u64, o: &ChainOptions) -> Result<u64, Stop> {
    if let Some((key, _)) = &o.encrypt {
        let material = device_key(key, &c.sealer.as_ref().expect("sealing").file_id());
        c.host_put(c.l.material.offset, &material[..])?;
        // The header's place, filled in at the end.
        c.run(Function::Fill { byte: 0 }, vec![], DeviceRange::new(c.l.first.offset, HEADER_BYTES as u64))?;
        c.stripe_fill = HEADER_BYTES as u64;
        c.len = HEADER_BYTES as u64;
    }
    // Blocks in flight, oldest first: the compress command's tag and its slot.
    let mut in_flight = std::collections::VecDeque::new();
    let mut free: Vec<usize> = (0..c.l.read.len()).rev().collect();
    let (mut at, mut first) = (0u64, true);
    loop {
        // Every free slot takes the next block (an empty source gives one empty member).
        while (at < size || first) && !free.is_empty() {
            let slot = free.pop().expect("a free slot");
            let want = (size - at).min(o.block_size as u64) as usize;
            let read = c.l.read[slot];
            let in_ptr = c.dev.memory().io_ptr(c.l.io(read)).ok_or("the device's memory is not mapped into this process for I/O")?;
            // SAFETY: the slot's read range (the window's copy on a staged device) holds a
            // block of whole pages; no command uses it until the ones submitted below.
            unsafe { device_job::read_into(src, at, want, in_ptr) }.map_err(|detail| JobError::SourceIo { path: source.to_path_buf(), detail })?;
            c.stage(DeviceRange::new(read.offset, want as u64), true)?;
            let tag = c.commands.submit(c.dev, Function::GzipCompressMember { level: o.level, format: o.format }, vec![DeviceRange::new(read.offset, want as u64)], c.l.member[slot])?;
            in_flight.push_back((tag, slot));
            (at, first) = (at + want as u64, false);
        }
        let Some((tag, slot)) = in_flight.pop_front() else { break };
        let bytes = c.commands.wait(c.dev, tag)?.output_bytes;
        c.members += 1;
        c.compressed += bytes;
        c.feed(DeviceRange::new(c.l.member[slot].offset, bytes))?;
        free.push(slot);
    }
    // The end marker, as `compress` ends its files.
    let marker = o.format.end_marker();
    c.host_put(c.l.eof.offset, marker)?;
    c.compressed += marker.len() as u64;
    c.feed(DeviceRange::new(c.l.eof.offset, marker.len() as u64))?;
    let mut head = Vec::new();
    if let Some(s) = &c.sealer {
        if c.plain_fill > 0 || s.blocks() == 0 {
            c.seal()?;
        }
        head = c.sealer.as_ref().expect("sealing").header().to_vec();
    }
    // The last stripe, zero-padded; then the first, with the header in place.
    if c.stripes > 0 && c.stripe_fill > 0 {
        c.run(Function::Fill { byte: 0 }, vec![], DeviceRange::new(c.l.stripe.offset + c.stripe_fill, c.l.stripe.len - c.stripe_fill))?;
        let crcs = c.code_and_write(c.l.stripe, c.stripes)?;
        c.crcs.iter_mut().zip(crcs).for_each(|(x, y)| x.push(y));
    }
    let stripes = if c.stripe_fill > 0 || c.stripes == 0 { c.stripes + 1 } else { c.stripes };
    if c.stripes == 0 {
        c.run(Function::Fill { byte: 0 }, vec![], DeviceRange::new(c.l.first.offset + c.stripe_fill, c.l.first.len - c.stripe_fill))?;
    }
    c.host_put(c.l.first.offset, &head)?;
    let crcs = c.code_and_write(c.l.first, 0)?;
    c.crcs.iter_mut().zip(crcs).for_each(|(x, y)| x.insert(0, y));
    Ok(stripes)
}

// ---------------------------------------------------------------------------
// The reverse: `peerpath decompress --ec DIR --engine emulated -o FILE`.

/// The largest sealed block, member and member output the device path
/// holds (its buffers are sized before the set's first bytes are seen; the
/// defaults make 1 MiB blocks and members). Larger: a clear error, decode
/// with `--engine cpu`.
const MAX_DEVICE_BLOCK_BYTES: u64 = 64 << 20;
/// Bytes of a member's start the host reads to find its length (peerpath's
/// and BGZF's headers take 24 and 18), where the first look is not enough
/// (a name or comment in the header).
const MEMBER_PEEK_BYTES: usize = 512;
/// The host's first look at a member: the fewest bytes a member with sizes
/// has (BGZF's empty one: 28; peerpath's end member: 34), so that the look
/// never reaches into the next member (the end member follows the last).
const MEMBER_FIRST_PEEK_BYTES: u64 = 28;

/// Where the reverse chain's data lives in the device's memory.
struct DecodeLayout {
    /// One slot per shard (data units first), each a unit rounded up to 4 KiB.
    slots: Vec<DeviceRange>,
    /// The k survivors gathered for reconstruction, their indices, the units rebuilt.
    gather: DeviceRange,
    indices: DeviceRange,
    rebuilt: DeviceRange,
    /// A sealed block being filled, and its plaintext.
    sealed: DeviceRange,
    plain: DeviceRange,
    /// Member slots: each a member gathered, and its output.
    member: Vec<DeviceRange>,
    out: Vec<DeviceRange>,
    material: DeviceRange,
    /// On a staged device (a GPU): where the window's copy of the layout
    /// starts, which storage and the host reach (0: the memory is all mapped).
    window_at: u64,
}

impl DecodeLayout {
    fn new(k: usize, m: usize, unit: usize, member_slots: usize) -> DecodeLayout {
        let mut at = 0u64;
        let mut next = |len: u64| {
            let r = DeviceRange::new(at, len);
            at += len.next_multiple_of(ALIGN).max(ALIGN);
            r
        };
        let slot = (unit as u64).next_multiple_of(ALIGN);
        let slots = (0..k + m).map(|_| DeviceRange::new(next(slot).offset, unit as u64)).collect();
        DecodeLayout {
            slots,
            gather: next((k * unit) as u64),
            indices: next((k + m) as u64),
            rebuilt: next((m * unit) as u64),
            sealed: next(MAX_DEVICE_BLOCK_BYTES + TAG_BYTES as u64),
            plain: next(MAX_DEVICE_BLOCK_BYTES + TAG_BYTES as u64),
            member: (0..member_slots).map(|_| next(MAX_DEVICE_BLOCK_BYTES)).collect(),
            out: (0..member_slots).map(|_| next(MAX_DEVICE_BLOCK_BYTES)).collect(),
            material: next(DEVICE_KEY_BYTES as u64),
            window_at: 0,
        }
    }

    fn bytes(&self) -> usize {
        (self.material.offset + ALIGN) as usize
    }

    /// Where storage and the host reach `r`: the window's copy on a staged device.
    fn io(&self, r: DeviceRange) -> DeviceRange {
        DeviceRange::new(self.window_at + r.offset, r.len)
    }
}

/// Starts an emulated CSP of `workers` workers with room for the reverse
/// chain of a set with `k` data and `m` parity units of `unit` bytes, or
/// says why it cannot.
pub(crate) fn start_decode(k: usize, m: usize, unit: usize, workers: usize, faults: Option<FaultConfig>, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    if k + m > u8::MAX as usize {
        return Err(format!("the device's command holds at most 255 shards, not {}", k + m));
    }
    let slots = slots(workers);
    let depth = (slots + k + m + 2) as u32;
    let dev = device_job::spawn("unchain", DecodeLayout::new(k, m, unit, slots).bytes(), depth, device_workers(workers) as u32, FunctionKind::GzipDecompressMember, timeout)?;
    for need in [FunctionKind::Copy, FunctionKind::EcReconstruct, FunctionKind::Crc32, FunctionKind::AeadOpenBlock] {
        if !dev.functions().contains(need) {
            return Err(format!("the emulated CSP does not offer {}", need.name()));
        }
    }
    Ok(device_job::with_faults(dev, faults))
}

/// Opens GPU `ordinal` for the reverse chain of a set with `k` data and
/// `m` parity units of `unit` bytes: nvCOMP's gzip decompressor, peerpath's
/// coding (Reed-Solomon, CRC-32) and AES-256-GCM kernels; the layout in its
/// memory and again in its pinned host window. Or why not.
pub(crate) fn start_decode_gpu(k: usize, m: usize, unit: usize, workers: usize, ordinal: usize, nvcomp: Option<std::path::PathBuf>, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    if k + m > u8::MAX as usize {
        return Err(format!("the device's command holds at most 255 shards, not {}", k + m));
    }
    let slots = slots(workers);
    let depth = slots + k + m + 2;
    let config = peerpath_gpu::GpuDeviceConfig { nvcomp, inflate: true, coding: true, crypt: true, ..peerpath_gpu::GpuDeviceConfig::staged(ordinal, DecodeLayout::new(k, m, unit, slots).bytes(), depth) };
    let dev = device_job::open_gpu(device_job::timed(config, timeout))?;
    for need in [FunctionKind::Copy, FunctionKind::EcReconstruct, FunctionKind::Crc32, FunctionKind::AeadOpenBlock, FunctionKind::GzipDecompressMember] {
        if !dev.functions().contains(need) {
            return Err(format!("GPU {ordinal} does not offer {}", need.name()));
        }
    }
    Ok(dev)
}

/// The reverse chain's state on the host: sizes, fill levels and counters.
struct Unchain<'a> {
    dev: &'a mut dyn Device,
    l: DecodeLayout,
    dir: &'a Path,
    key: Option<std::sync::Arc<peerpath_func::crypt::Key>>,
    target: &'a File,
    output: &'a Path,
    /// Stream bytes seen so far, and the stream's length.
    seen: u64,
    stream_bytes: u64,
    /// Whether the stream is an encrypted file (its first bytes are the
    /// peerpath-enc magic); its header being gathered, then its cipher.
    encrypted: bool,
    header: Vec<u8>,
    cipher: Option<peerpath_func::crypt::FileCipher>,
    /// Sealed bytes in the block being filled, and that block's index.
    sealed_fill: u64,
    block: u64,
    /// The member slot being filled, the bytes in it, and the member's
    /// length once its header is read.
    slot: Option<usize>,
    member_fill: u64,
    /// Whether the last member's header wants the end member after it
    /// ([`peerpath_func::MemberHeader::wants_an_end_member`]), and whether a
    /// stream that lacks it is an error.
    unended: bool,
    end_member_required: bool,
    member_bytes: Option<u64>,
    /// Member slots free, and members inflating (oldest first: the
    /// command's tag and the slot).
    free: Vec<usize>,
    inflating: std::collections::VecDeque<(u64, usize)>,
    /// Output bytes written (members in order), members decoded, units
    /// rebuilt, host-read metadata bytes, unit bytes read into the device.
    units_read: u64,
    produced: u64,
    members: u64,
    rebuilt: u64,
    metadata_bytes: u64,
    commands: device_job::Commands,
}

impl Unchain<'_> {
    fn run(&mut self, function: Function, inputs: Vec<DeviceRange>, output: DeviceRange) -> Result<peerpath_device::Completion, String> {
        self.commands.run(self.dev, function, inputs, output)
    }

    /// Writes `bytes` (metadata: the key material, the rebuild's indices)
    /// at `at` in the device's memory: through the window on a staged device.
    fn host_put(&mut self, at: u64, bytes: &[u8]) -> Result<(), String> {
        host_put(self.dev, &mut self.commands, self.l.window_at, at, bytes)
    }

    fn stage(&mut self, r: DeviceRange, in_: bool) -> Result<(), String> {
        stage(self.dev, &mut self.commands, self.l.window_at, r, in_)
    }

    fn damaged(&self, detail: String) -> Stop {
        Stop::Job(JobError::Damaged { path: self.dir.to_path_buf(), detail })
    }

    /// The set is damaged at the current member, said with the output
    /// byte where it starts (`detail` of it): the members before it
    /// inflated and written first, so a fault among them, earlier in the
    /// stream, is the one reported.
    fn damaged_here(&mut self, detail: impl FnOnce(u64) -> String) -> Stop {
        match self.drain() {
            Ok(()) => self.damaged(detail(self.produced)),
            Err(earlier) => earlier,
        }
    }

    /// [`Unchain::damaged_here`] for a stream that ends too soon: truncated (exit 7, as the
    /// CPU's decoder says it), not damaged.
    fn truncated_here(&mut self, detail: impl FnOnce(u64) -> String) -> Stop {
        match self.damaged_here(detail) {
            Stop::Job(JobError::Damaged { path, detail }) => Stop::Job(JobError::TruncatedFile { path, detail: format!("truncated: {detail}") }),
            earlier => earlier,
        }
    }

    /// The stream of peerpath's members ended without its end member (exit 7, as the CPU's
    /// decoder says it; its offset is in the output here).
    fn no_end_member(&mut self) -> Stop {
        self.truncated_here(|at| format!("the stream ends after output byte {at}, after a member of peerpath's, without the end member peerpath writes after a file's last member: it was cut at a member's end, and what followed is lost {}", peerpath_runtime::decompress::ALLOW_NO_END_MEMBER_HINT))
    }

    /// The slot the member being gathered goes in (the oldest member's,
    /// once written, when none is free).
    fn member_slot(&mut self) -> Result<usize, Stop> {
        if let Some(s) = self.slot {
            return Ok(s);
        }
        if self.free.is_empty() {
            self.retire_oldest()?;
        }
        let s = self.free.pop().expect("a slot was freed");
        self.slot = Some(s);
        Ok(s)
    }

    /// Waits for the oldest member inflating and writes its output.
    fn retire_oldest(&mut self) -> Result<(), Stop> {
        let Some((tag, slot)) = self.inflating.pop_front() else { return Ok(()) };
        let at = self.produced;
        let waited = self.commands.wait(self.dev, tag);
        if waited.is_err() {
            // The first fault in the stream is the one reported: the members after it are dropped.
            self.inflating.clear();
        }
        let c = match waited {
            Ok(c) => c,
            Err(e) if e.contains("OutputTooSmall") => return Err(Stop::Device(format!("a member's output is larger than the device path's {} MiB buffers (decode with --engine cpu)", MAX_DEVICE_BLOCK_BYTES >> 20))),
            // Not taken at the device's word (a GPU's decoder may refuse sound input): the CPU
            // decodes the set again, and names the member if the data is at fault.
            Err(e) if e.contains("CorruptInput") => return Err(Stop::Verdict(format!("the member at output byte {at} is corrupt (deflate data, CRC-32 or length)"))),
            Err(e) => return Err(Stop::Device(e)),
        };
        let out = DeviceRange::new(self.l.out[slot].offset, c.output_bytes);
        self.stage(out, false)?;
        let ptr = self.dev.memory().io_ptr(self.l.io(out)).ok_or("the device's memory is not mapped for I/O")?;
        // SAFETY: the output lies in the slot's out range (the window's copy on a
        // staged device), which no command writes until the slot is taken again (after this).
        unsafe { device_job::write_from(ptr, c.output_bytes as usize, self.target, at) }.map_err(|source| JobError::TargetIo { path: self.output.to_path_buf(), source })?;
        self.produced += c.output_bytes;
        self.free.push(slot);
        Ok(())
    }

    /// Waits for every member inflating and writes them, in order.
    fn drain(&mut self) -> Result<(), Stop> {
        while !self.inflating.is_empty() {
            self.retire_oldest()?;
        }
        Ok(())
    }

    /// Reads the bytes at `r` (headers only: metadata), copied to the
    /// window first on a staged device.
    fn peek(&mut self, r: DeviceRange) -> Result<Vec<u8>, String> {
        self.stage(r, false)?;
        let mut b = vec![0u8; r.len as usize];
        // SAFETY: `r` (the window's copy on a staged device) lies in the device's
        // memory (the layout); no command writes it now.
        unsafe { self.dev.memory().host_read(self.l.io(r).offset, &mut b) };
        self.metadata_bytes += r.len;
        Ok(b)
    }

    /// The next `from` bytes of the set's stream.
    fn stream(&mut self, mut from: DeviceRange) -> Result<(), Stop> {
        if self.seen == 0 && from.len > 0 {
            let head = self.peek(DeviceRange::new(from.offset, from.len.min(MAGIC.len() as u64)))?;
            if head.starts_with(MAGIC) {
                if self.key.is_none() {
                    return Err(Stop::Job(JobError::Usage(format!("{}: holds an encrypted file (peerpath-enc/1): give its key (--key-file FILE, --key-env VAR or $PEERPATH_KEY)", Quoted(self.dir)))));
                }
                self.encrypted = true;
            }
        }
        self.seen += from.len;
        if !self.encrypted {
            return self.members(from);
        }
        while self.header.len() < HEADER_BYTES && from.len > 0 {
            let n = from.len.min((HEADER_BYTES - self.header.len()) as u64);
            let part = self.peek(DeviceRange::new(from.offset, n))?;
            self.header.extend_from_slice(&part);
            from = DeviceRange::new(from.offset + n, from.len - n);
            if self.header.len() == HEADER_BYTES {
                let key = self.key.as_ref().expect("checked above");
                let cipher = peerpath_func::crypt::FileCipher::open(key, &self.header).map_err(|e| Stop::Job(JobError::from_crypt(self.dir, e)))?;
                cipher.check_length(self.stream_bytes).map_err(|e| Stop::Job(JobError::from_crypt(self.dir, e)))?;
                if u64::from(cipher.layout().block_bytes) > MAX_DEVICE_BLOCK_BYTES {
                    return Err(Stop::Device(format!("sealed blocks of {} bytes are larger than the device path's {} MiB buffers (decode with --engine cpu)", cipher.layout().block_bytes, MAX_DEVICE_BLOCK_BYTES >> 20)));
                }
                let material = device_key(key, &cipher.layout().file_id);
                self.host_put(self.l.material.offset, &material[..])?;
                self.cipher = Some(cipher);
            }
        }
        while from.len > 0 {
            let layout = *self.cipher.as_ref().expect("the header came first").layout();
            let want = (layout.plain_len(self.block) + TAG_BYTES) as u64;
            let n = from.len.min(want - self.sealed_fill);
            self.run(Function::Copy, vec![DeviceRange::new(from.offset, n)], DeviceRange::new(self.l.sealed.offset + self.sealed_fill, n))?;
            (from, self.sealed_fill) = (DeviceRange::new(from.offset + n, from.len - n), self.sealed_fill + n);
            if self.sealed_fill == want {
                let i = self.block;
                let opened = self.run(Function::AeadOpenBlock { index: i }, vec![DeviceRange::new(self.l.sealed.offset, want), self.l.material], self.l.plain);
                if let Err(e) = opened {
                    // As for members: the CPU opens the blocks again and names one that is not authentic.
                    return Err(match e.contains("CorruptInput") {
                        true => Stop::Verdict(format!("block {i} (plaintext bytes {}..{}) is not authentic", layout.plain_start(i), layout.plain_start(i) + layout.plain_len(i) as u64)),
                        false => Stop::Device(e),
                    });
                }
                (self.block, self.sealed_fill) = (i + 1, 0);
                self.members(DeviceRange::new(self.l.plain.offset, want - TAG_BYTES as u64))?;
            }
        }
        Ok(())
    }

    /// The next `from` bytes of the members: gathered member by member,
    /// each decoded (CRC-32 and length checked) and its output written.
    fn members(&mut self, mut from: DeviceRange) -> Result<(), Stop> {
        while from.len > 0 {
            // Its header first (a few dozen bytes; more only for a long one), then the rest.
            let peek = if self.member_fill < MEMBER_FIRST_PEEK_BYTES { MEMBER_FIRST_PEEK_BYTES } else { MEMBER_PEEK_BYTES as u64 };
            let want = self.member_bytes.unwrap_or(peek).max(self.member_fill + 1);
            let n = from.len.min(want - self.member_fill);
            let slot = self.member_slot()?;
            self.run(Function::Copy, vec![DeviceRange::new(from.offset, n)], DeviceRange::new(self.l.member[slot].offset + self.member_fill, n))?;
            (from, self.member_fill) = (DeviceRange::new(from.offset + n, from.len - n), self.member_fill + n);
            if self.member_bytes.is_none() {
                self.member_bytes = self.member_length(false)?;
            }
            if self.member_bytes == Some(self.member_fill) {
                self.decode_member()?;
            }
        }
        Ok(())
    }

    /// The length of the member being gathered, from its header, once
    /// enough of it is there (`at_end`: no more is coming).
    fn member_length(&mut self, at_end: bool) -> Result<Option<u64>, Stop> {
        let slot = self.slot.expect("a member is being gathered");
        let head = self.peek(DeviceRange::new(self.l.member[slot].offset, self.member_fill.min(MEMBER_PEEK_BYTES as u64)))?;
        match peerpath_func::MemberHeader::parse(&head) {
            Ok(h) => match h.sizes {
                Some(s) if s.member_bytes() as u64 > MAX_DEVICE_BLOCK_BYTES => Err(Stop::Device(format!("a member of {} bytes is larger than the device path's {} MiB buffers (decode with --engine cpu)", s.member_bytes(), MAX_DEVICE_BLOCK_BYTES >> 20))),
                Some(s) if (s.member_bytes() as u64) < self.member_fill => Err(self.damaged_here(|at| format!("the member at output byte {at} declares {} bytes, less than its own header", s.member_bytes()))),
                // A BGZF member right after one of peerpath's that wants its end member: damaged there.
                Some(_) if self.unended && self.end_member_required && !h.continues_a_peerpath_stream() => {
                    Err(self.damaged_here(|at| format!("the member at output byte {at}: {} {}", peerpath_func::gzip::NOT_PEERPATH_AFTER_PEERPATH, peerpath_runtime::decompress::ALLOW_NO_END_MEMBER_HINT)))
                }
                Some(s) => {
                    self.unended = h.wants_an_end_member();
                    Ok(Some(s.member_bytes() as u64))
                }
                None => Err(Stop::Device("its members declare no sizes (not peerpath's or BGZF's): the device decodes only members that do (decode with --engine cpu)".into())),
            },
            Err(peerpath_func::HeaderError::Truncated { .. }) if !at_end && head.len() < MEMBER_PEEK_BYTES => Ok(None),
            Err(e @ peerpath_func::HeaderError::Truncated { .. }) => Err(self.truncated_here(|at| format!("the member at output byte {at}: {e}"))),
            // Zeros where a member would start: padding after the last member (tar's records, a
            // block device's rest), which the CPU's decoder takes up to its limit; not the device's.
            Err(peerpath_func::HeaderError::NotGzip(0, _)) if self.unended && self.end_member_required => Err(self.no_end_member()),
            Err(peerpath_func::HeaderError::NotGzip(0, _)) => Err(Stop::Device("zero bytes where a member would start (padding after the last member?): the device decodes members only, the host CPU's decoder judges padding (decode with --engine cpu)".into())),
            // As the CPU's decoder says it (exit 8): the stream is no gzip file at all.
            Err(peerpath_func::HeaderError::NotGzip(a, b)) if self.members == 0 => Err(Stop::Job(JobError::NotGzip { path: self.dir.to_path_buf(), detail: format!("starts with {}, not 1f 8b", peerpath_func::gzip::first_bytes(a, b)) })),
            // Trailing garbage (exit 9) or a damaged member start with members after it (exit 6):
            // the CPU's decoder tells them apart by looking for members further on, which the
            // device does not; its word is checked by the CPU, as a corrupt member's is.
            Err(e @ peerpath_func::HeaderError::NotGzip(..)) => Err(match self.drain() {
                Ok(()) => Stop::Verdict(format!("bytes that are not a member follow output byte {} ({e})", self.produced)),
                Err(earlier) => earlier,
            }),
            Err(e) => Err(self.damaged_here(|at| format!("the member at output byte {at}: {e}"))),
        }
    }

    /// Starts inflating the member gathered (its output is written when
    /// its turn comes: [`Unchain::retire_oldest`]).
    fn decode_member(&mut self) -> Result<(), Stop> {
        let slot = self.slot.take().expect("a member was gathered");
        let tag = self.commands.submit(self.dev, Function::GzipDecompressMember, vec![DeviceRange::new(self.l.member[slot].offset, self.member_fill)], self.l.out[slot])?;
        self.inflating.push_back((tag, slot));
        self.members += 1;
        (self.member_fill, self.member_bytes) = (0, None);
        Ok(())
    }

    /// After the last stripe: the stream must end between members (and blocks).
    fn finish(&mut self) -> Result<(), Stop> {
        if self.encrypted && (self.cipher.is_none() || self.sealed_fill > 0) {
            return Err(self.truncated_here(|_| "the encrypted file ends inside its header or a block".into()));
        }
        if self.member_fill > 0 {
            match self.member_length(true)? {
                Some(n) if n == self.member_fill => self.decode_member()?,
                _ => return Err(self.truncated_here(|at| format!("the stream ends inside a member (after output byte {at})"))),
            }
        }
        if self.members == 0 {
            // As the CPU's decoder says it (exit 10): zero bytes are no gzip file.
            return Err(Stop::Job(JobError::EmptyArchive { path: self.dir.to_path_buf() }));
        }
        if self.unended && self.end_member_required {
            return Err(self.no_end_member());
        }
        self.drain()
    }
}

/// Reads stripe `s`'s units into their slots (data units first, parity
/// only as needed), each checked against the manifest's CRC-32 on the
/// device; rebuilds the missing data units there. False if fewer than k
/// units survive.
fn load_stripe(c: &mut Unchain, m: &Manifest, shards: &[Option<File>], s: u64) -> Result<bool, Stop> {
    let (k, p, unit, _, _) = m.shape();
    let mut good: Vec<usize> = Vec::with_capacity(k);
    // Units being checked (the Crc32 command's tag, the shard), oldest first:
    // the next unit is read while the device checks the last.
    let mut checking = std::collections::VecDeque::new();
    let mut next = 0;
    loop {
        while good.len() + checking.len() < k && next < k + p {
            let i = next;
            next += 1;
            let Some(f) = &shards[i] else { continue };
            let slot = c.l.slots[i];
            let ptr = c.dev.memory().io_ptr(c.l.io(DeviceRange::new(slot.offset, (unit as u64).next_multiple_of(ALIGN)))).ok_or("the device's memory is not mapped for I/O")?;
            // SAFETY: the slot (the window's copy on a staged device) holds a unit rounded
            // up to whole pages; no command uses it now.
            if unsafe { device_job::read_into(f, s * unit as u64, unit, ptr) }.is_err() {
                continue;
            }
            c.units_read += unit as u64;
            c.stage(slot, true)?;
            checking.push_back((c.commands.submit(c.dev, Function::Crc32, vec![slot], DeviceRange::EMPTY)?, i));
        }
        let Some((tag, i)) = checking.pop_front() else { break };
        if c.commands.wait(c.dev, tag)?.input_crc32 == m.crc(i, s) {
            good.push(i);
        }
    }
    if good.len() < k {
        return Ok(false);
    }
    let missing: Vec<usize> = (0..k).filter(|i| !good.contains(i)).collect();
    if !missing.is_empty() {
        // Gathered one by one: a command carries two input ranges at most.
        for (j, &i) in good.iter().enumerate() {
            c.run(Function::Copy, vec![c.l.slots[i]], DeviceRange::new(c.l.gather.offset + (j * unit) as u64, unit as u64))?;
        }
        let indices: Vec<u8> = good.iter().chain(&missing).map(|&i| i as u8).collect();
        c.host_put(c.l.indices.offset, &indices)?;
        let wanted = missing.len() as u8;
        c.run(Function::EcReconstruct { data: k as u8, parity: p as u8, wanted }, vec![c.l.gather, DeviceRange::new(c.l.indices.offset, indices.len() as u64)], c.l.rebuilt)?;
        for (j, &i) in missing.iter().enumerate() {
            c.run(Function::Copy, vec![DeviceRange::new(c.l.rebuilt.offset + (j * unit) as u64, unit as u64)], c.l.slots[i])?;
        }
        c.rebuilt += missing.len() as u64;
    }
    Ok(true)
}

/// The reverse chain on `dev`: what `chain::decompress_ec` does on the CPU,
/// with the same output. Each stripe's units are read by the kernel into
/// the device's memory (O_DIRECT where `direct` and the unit size allow), checked
/// there (`Crc32`), missing or corrupt data units rebuilt there
/// (`EcReconstruct`), sealed blocks opened there (`AeadOpenBlock`), members
/// decoded there (`GzipDecompressMember`) and written to OUTPUT from it.
/// The host reads only the file's header and each member's first bytes
/// (to find its length). A stripe that lost too much is named, with every
/// other such stripe, and nothing is written.
/// `end_member_required`: a stream of peerpath's members must end with its
/// end member, as [`peerpath_func::StreamDecoder`] requires by default.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decompress_ec(dev: &mut dyn Device, dir: &Path, output: &Path, key: Option<std::sync::Arc<peerpath_func::crypt::Key>>, force: bool, workers: usize, end_member_required: bool, direct: bool) -> Result<crate::chain::ReverseChainReport, Stop> {
    let started = Instant::now();
    let (m, _) = ec::load(dir)?;
    let (k, p, unit, stripes, stream_bytes) = m.shape();
    let direct = direct && (unit as u64).is_multiple_of(ALIGN);
    let mut l = DecodeLayout::new(k, p, unit, slots(workers));
    l.window_at = dev.memory().dma_window().map_or(0, |w| w.0);
    if l.window_at > 0 && (l.window_at < l.bytes() as u64 || (dev.memory().len() as u64) < l.window_at + l.bytes() as u64) {
        return Err("the device's memory is not staged as the reverse chain needs (its own memory and its window each the chain's size)".into());
    }
    let on_gpu = matches!(dev.memory().domain(), peerpath_mem::MemoryDomain::Gpu { .. });
    let copied_before = dev.memory().host_copied_bytes();
    // A shard that is not a regular file (a FIFO: its open waited for a writer for ever) is a missing one.
    let shards: Vec<Option<File>> = (0..k + p).map(|i| ec::shard_file(&m.shard_path(dir, i)).and_then(|p| ec::open_shard(p, direct))).collect();
    let _held = peerpath_io::OutputDir::hold_parent_of(output);
    let (t, temporary) = peerpath_io::create_temporary(output, false).map_err(|source| JobError::TargetIo { path: output.to_path_buf(), source })?;
    let mut c = Unchain {
        dev,
        l,
        dir,
        key,
        target: &t.file,
        output,
        seen: 0,
        stream_bytes,
        encrypted: false,
        header: Vec::new(),
        cipher: None,
        sealed_fill: 0,
        block: 0,
        member_fill: 0,
        member_bytes: None,
        slot: None,
        free: (0..slots(workers)).rev().collect(),
        inflating: Default::default(),
        units_read: 0,
        produced: 0,
        members: 0,
        rebuilt: 0,
        metadata_bytes: 0,
        commands: Default::default(),
        unended: false,
        end_member_required,
    };
    let ran = (|| -> Result<(), Stop> {
        let mut lost = Vec::new();
        for s in 0..stripes {
            if !load_stripe(&mut c, &m, &shards, s)? {
                lost.push(s);
            }
            if !lost.is_empty() {
                continue; // only surveyed from here on, to name every lost stripe
            }
            for i in 0..k {
                let n = (stream_bytes - c.seen).min(unit as u64);
                c.stream(DeviceRange::new(c.l.slots[i].offset, n))?;
            }
        }
        if !lost.is_empty() {
            return Err(Stop::Job(ec::unrecoverable(dir, &m, &lost)));
        }
        c.finish()
    })()
    // Members still inflating come before whatever stopped the chain: a fault among them is reported first.
    .or_else(|e| c.drain().and(Err(e)));
    let outcome = ran.and_then(|()| ec::put_restored_in_place(&t.file, &temporary, output, dir, force).map_err(Stop::Job));
    if c.cipher.is_some() {
        // The device's copy of the file's key material goes, whatever happened (on a
        // staged device that failed, the window's copy at least).
        let _ = c.host_put(c.l.material.offset, &[0u8; DEVICE_KEY_BYTES]);
    }
    if let Err(e) = outcome {
        peerpath_io::discard(&temporary);
        return Err(e);
    }
    // What this process copied: the file and member headers it read, each stripe's unit indices, the key material and its zeroing.
    let host_copies = device_job::HostCopies {
        bytes: c.dev.memory().host_copied_bytes() - copied_before,
        of: format!("{} bytes of file and member headers read, the rest unit indices and key material", c.metadata_bytes),
        payload_bytes: c.units_read,
    };
    let device = crate::chain::ChainDevice {
        name: c.dev.name().to_string(),
        description: c.dev.description().filter(|_| on_gpu).map(str::to_string),
        gpu: on_gpu,
        workers: (!on_gpu).then(|| device_workers(workers)),
        in_flight: slots(workers),
        commands: c.commands.count(),
        read_by_dma: direct && shards.iter().flatten().any(device_job::is_direct),
        host_copies,
    };
    let (engine, provenance) = if on_gpu { ("gpu", "measured on a real accelerator (GPU)") } else { ("emulated", "measured on emulated devices") };
    let facts = crate::chain::ReverseFacts {
        dir,
        output,
        stream_bytes,
        encrypted: c.cipher.is_some(),
        output_bytes: c.produced,
        members: Some(c.members),
        units_rebuilt: Some(c.rebuilt),
        seconds: started.elapsed().as_secs_f64(),
    };
    let ledger = vec![crate::chain::Moved { memory: "device", what: "units read into device memory", bytes: c.units_read }, crate::chain::Moved { memory: "device", what: "output written from it", bytes: c.produced }];
    let stages = device_job::stage_figures(c.dev);
    Ok(crate::chain::ReverseChainReport::new(facts, crate::chain::ChainRun::on_device(engine, workers, device, stages, ledger, provenance)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::ChainOptions;
    use crate::device_job::testing::{cpu_device, xorshift};
    use peerpath_func::crypt::{open_all, Key};
    use peerpath_func::Level;

    fn options(encrypt: Option<(std::sync::Arc<Key>, u32)>) -> ChainOptions {
        ChainOptions { level: Level::new(1).unwrap(), format: Format::Gzip, block_size: 64 << 10, threads: 2, device_workers: None, encrypt, data: 3, parity: 2, unit: 16 << 10, placement: None, direct: true }
    }

    /// A set's files by name (its shards and manifest).
    fn files(dir: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
        let mut f: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).map(|e| (e.file_name(), std::fs::read(e.path()).unwrap())).collect();
        f.sort();
        f
    }

    /// The stream a set holds: its data units stripe by stripe, cut to the manifest's length.
    fn stream(dir: &Path) -> Vec<u8> {
        let (m, _) = ec::load(dir).map_err(|e| e.to_string()).unwrap();
        let (k, _, unit, stripes, len) = m.shape();
        let shards: Vec<Vec<u8>> = (0..k).map(|i| std::fs::read(m.shard_path(dir, i)).unwrap()).collect();
        let mut s: Vec<u8> = (0..stripes as usize).flat_map(|st| shards.iter().flat_map(move |sh| sh[st * unit..(st + 1) * unit].to_vec())).collect();
        s.truncate(len as usize);
        s
    }

    #[test]
    fn the_chain_on_a_staged_device_writes_the_cpus_set() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Half text that compresses, half random bytes: 700,001 bytes, eleven blocks.
        let mut data: Vec<u8> = b"peerpath moves data peer to peer; ".iter().copied().cycle().take(350_000).collect();
        data.extend(xorshift(350_001, 3));
        let src = d.join("src");
        std::fs::write(&src, &data).unwrap();
        let plain = options(None);
        crate::chain::compress_ec(&src, &d.join("cpu"), &plain).unwrap();
        let key = std::sync::Arc::new(Key::from_bytes(&[9u8; 32]).unwrap());
        let sealed = options(Some((key.clone(), 20_000)));
        for staged in [false, true] {
            let mut dev = cpu_device(staged, Layout::new(&plain).bytes().max(Layout::new(&sealed).bytes()));
            let out = d.join(format!("dev-{staged}"));
            compress_ec(&mut dev, &src, &out, &plain).map_err(|_| "the chain on the device").unwrap();
            assert!(files(&out) == files(&d.join("cpu")), "staged {staged}: the device's set is the CPU chain's, byte for byte");
            // Sealed on the device (a fresh file id): the set's stream opens to the CPU's members.
            let out = d.join(format!("sealed-{staged}"));
            compress_ec(&mut dev, &src, &out, &sealed).map_err(|_| "the sealed chain on the device").unwrap();
            assert!(open_all(&key, &stream(&out)).unwrap() == stream(&d.join("cpu")), "staged {staged}: sealed members");
            // The material is zeroed where the host can see it.
            let mut l = Layout::new(&sealed);
            l.window_at = dev.memory().dma_window().map_or(0, |w| w.0);
            let mut m = [1u8; DEVICE_KEY_BYTES];
            // SAFETY: the material's range in the device's memory (the window's copy when staged); no command runs.
            unsafe { dev.memory().host_read(l.io(l.material).offset, &mut m) };
            assert_eq!(m, [0u8; DEVICE_KEY_BYTES]);
        }
    }

    /// A stripe begun past the most a manifest holds stops the chain (exit 2, naming the set's
    /// directory), as the CPU's stream encoder does; the last stripe allowed is begun.
    #[test]
    fn a_stripe_past_what_a_manifest_holds_is_refused() {
        let o = options(None);
        let n = o.data + o.parity;
        let (bytes, plain) = (Layout::new(&o).bytes(), Layout::new(&o).plain);
        let mut dev = cpu_device(false, bytes);
        let dir = Path::new("set");
        let most = peerpath_func::ec_manifest::max_stripes(n);
        for (stripes, refused) in [(most - 1, false), (most, true)] {
            let mut c = Chain { dev: &mut dev, l: Layout::new(&o), o: &o, dir, files: Vec::new(), names: Vec::new(), crcs: vec![Vec::new(); n], sealer: None, plain_fill: 0, stripe_fill: 0, stripes, len: 0, compressed: 0, members: 0, commands: Default::default() };
            match c.put(DeviceRange::new(plain.offset, 10)) {
                Err(Stop::Job(JobError::Usage(why))) => assert!(refused && why.starts_with("set: ") && why.contains("more than a manifest holds"), "{stripes} stripes: {why}"),
                Err(_) => panic!("{stripes} stripes: not a usage error"),
                Ok(()) => assert!(!refused && c.stripe_fill == 10, "{stripes} stripes: stripe {} begun", stripes + 1),
            }
        }
    }

    /// The reverse chain on a staged device (memory as a GPU's: its own part,
    /// and a window that storage and the host reach, so every unit read, header
    /// peeked, material and index written and output written goes through the
    /// window and a Copy) and on a mapped one (an emulated CSP's): a set the CPU
    /// chain made, plain and sealed, with a data shard gone and another corrupt
    /// (two units rebuilt in the first stripe, one in each other), gives back
    /// the source byte for byte, and the key material is zeroed in both parts.
    #[test]
    fn the_reverse_chain_on_a_staged_device_gives_back_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut data: Vec<u8> = b"peerpath moves data peer to peer; ".iter().copied().cycle().take(350_000).collect();
        data.extend(xorshift(350_001, 5));
        let src = d.join("src");
        std::fs::write(&src, &data).unwrap();
        let key = std::sync::Arc::new(Key::from_bytes(&[7u8; 32]).unwrap());
        let workers = 2;
        let why = |s: Stop| match s {
            Stop::Job(e) => format!("job: {e}"),
            Stop::Device(w) => format!("device: {w}"),
            Stop::Verdict(w) => format!("verdict: {w}"),
        };
        for (name, o, k) in [("plain", options(None), None), ("sealed", options(Some((key.clone(), 20_000))), Some(key.clone()))] {
            let set = d.join(name);
            crate::chain::compress_ec(&src, &set, &o).unwrap();
            let (m, _) = ec::load(&set).map_err(|e| e.to_string()).unwrap();
            let (data_units, parity, unit, stripes, _) = m.shape();
            assert!(stripes > 2, "{name}: several stripes ({stripes})");
            // Shard 0 (the stream's first bytes) gone; shard 1 corrupt in the first stripe and the last.
            std::fs::remove_file(m.shard_path(&set, 0)).unwrap();
            let mut b = std::fs::read(m.shard_path(&set, 1)).unwrap();
            let n = b.len();
            b[100] ^= 0x40;
            b[n - unit + 10] ^= 0x01;
            std::fs::write(m.shard_path(&set, 1), &b).unwrap();
            for staged in [false, true] {
                let mut l = DecodeLayout::new(data_units, parity, unit, slots(workers));
                let mut dev = cpu_device(staged, l.bytes());
                let out = d.join(format!("{name}-{staged}"));
                decompress_ec(&mut dev, &set, &out, k.clone(), false, workers, true, true).map_err(why).unwrap();
                assert!(std::fs::read(&out).unwrap() == data, "{name}, staged {staged}: the source, byte for byte");
                if k.is_some() {
                    // The material is zeroed in the device's own memory and where the host sees it.
                    l.window_at = dev.memory().dma_window().map_or(0, |w| w.0);
                    assert_eq!(l.window_at > 0, staged);
                    for at in [l.material.offset, l.io(l.material).offset] {
                        let mut b = [1u8; DEVICE_KEY_BYTES];
                        // SAFETY: the material's range in the device's memory (own or window); no command runs.
                        unsafe { dev.memory().host_read(at, &mut b) };
                        assert_eq!(b, [0u8; DEVICE_KEY_BYTES], "{name}, staged {staged}: material at {at}");
                    }
                }
            }
        }
    }

    /// A device that calls a sound member corrupt, or a sound block not authentic, is not
    /// taken at its word: the reverse chain stops with the device's verdict (the caller has the
    /// CPU decode the set again, which names what is really damaged), not as damaged data.
    #[test]
    fn a_device_s_corrupt_verdict_is_checked_by_the_cpu_not_reported_as_damage() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let src = d.join("src");
        std::fs::write(&src, xorshift(700_001, 5)).unwrap();
        let key = std::sync::Arc::new(Key::from_bytes(&[9u8; 32]).unwrap());
        for (encrypt, kind) in [(None, FunctionKind::GzipDecompressMember), (Some((key.clone(), 128 << 10)), FunctionKind::AeadOpenBlock)] {
            let set = d.join(format!("set-{kind:?}"));
            let k = encrypt.as_ref().map(|(k, _): &(std::sync::Arc<Key>, u32)| k.clone());
            crate::chain::compress_ec(&src, &set, &options(encrypt)).unwrap();
            let (m, _) = ec::load(&set).map_err(|e| e.to_string()).unwrap();
            let (data, parity, unit, _, _) = m.shape();
            let l = DecodeLayout::new(data, parity, unit, slots(2));
            let mut dev = crate::device_job::testing::Accuses { inner: cpu_device(false, l.bytes()), kind, nth: 2, seen: 0 };
            match decompress_ec(&mut dev, &set, &d.join(format!("out-{kind:?}")), k, true, 2, true, true) {
                Err(Stop::Verdict(why)) => assert!(why.contains("corrupt") || why.contains("not authentic"), "{kind:?}: {why}"),
                Err(Stop::Device(why)) => panic!("{kind:?}: not a verdict: {why}"),
                Err(Stop::Job(e)) => panic!("{kind:?}: reported as the job's failure: {e}"),
                Ok(_) => panic!("{kind:?}: the accusation went unnoticed"),
            }
        }
    }
}
