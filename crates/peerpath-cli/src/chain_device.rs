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
//! memory until the end, as on the CPU (`ec::StreamEncoder`). One command at
//! a time, in order; a device that fails fails the job (nothing is kept).

use crate::chain::ChainOptions;
use crate::device_job;
use crate::ec::{self, Manifest};
use peerpath_device::{Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request};
use peerpath_func::crypt::{device_key, StreamSealer, DEVICE_KEY_BYTES, HEADER_BYTES, TAG_BYTES};
use peerpath_func::{member_bound_bytes, Format, BGZF_EOF_BLOCK};
use peerpath_runtime::JobError;
use std::fs::File;
use std::path::Path;
use std::time::Instant;

const ALIGN: u64 = 4096;

/// Where everything lives in the device's memory.
struct Layout {
    /// The block read from the source.
    read: DeviceRange,
    /// Its member.
    member: DeviceRange,
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
}

impl Layout {
    fn new(o: &ChainOptions) -> Layout {
        let mut at = 0u64;
        let mut next = |len: u64| {
            let r = DeviceRange::new(at, len);
            at += len.next_multiple_of(ALIGN).max(ALIGN);
            r
        };
        let block = o.encrypt.as_ref().map_or(0, |(_, b)| *b as u64);
        let stripe = (o.data * o.unit) as u64;
        Layout {
            read: next(o.block_size as u64),
            member: next(member_bound_bytes(o.block_size) as u64),
            plain: next(block),
            sealed: next(block + TAG_BYTES as u64),
            first: next(stripe),
            stripe: next(stripe),
            parity: next((o.parity * o.unit) as u64),
            material: next(DEVICE_KEY_BYTES as u64),
            eof: next(BGZF_EOF_BLOCK.len() as u64),
        }
    }

    fn bytes(&self) -> usize {
        (self.eof.offset + ALIGN) as usize
    }
}

/// Starts an emulated CSP with room for the chain, or says why it cannot run there.
pub(crate) fn start(o: &ChainOptions) -> Result<EmulatedCsp, String> {
    if !(o.block_size as u64).is_multiple_of(ALIGN) {
        return Err(format!("the device reads whole 4 KiB pages by DMA: --block-size {} is not a multiple of 4K", o.block_size));
    }
    if o.data + o.parity > u8::MAX as usize {
        return Err(format!("the device's command holds at most 255 shards, not {}", o.data + o.parity));
    }
    let dev = device_job::spawn("chain", Layout::new(o).bytes(), 8, 1, FunctionKind::GzipCompressMember)?;
    for need in [FunctionKind::Copy, FunctionKind::EcEncode, FunctionKind::Crc32, FunctionKind::AeadSealBlock] {
        if !dev.functions().contains(need) {
            return Err(format!("the emulated CSP does not offer {}", need.name()));
        }
    }
    Ok(dev)
}

/// The chain's state on the host: fill levels, counters and the shards.
struct Chain<'a> {
    dev: &'a mut EmulatedCsp,
    l: Layout,
    o: &'a ChainOptions,
    files: Vec<(File, peerpath_io::Temporary)>,
    crcs: Vec<Vec<u32>>,
    sealer: Option<StreamSealer>,
    /// Bytes in the block being sealed, in the stripe being filled; full stripes.
    plain_fill: u64,
    stripe_fill: u64,
    stripes: u64,
    /// The stream's length so far, compressed bytes, members, commands.
    len: u64,
    compressed: u64,
    members: u64,
    commands: u64,
}

impl Chain<'_> {
    fn run(&mut self, function: Function, inputs: Vec<DeviceRange>, output: DeviceRange) -> Result<u64, String> {
        self.commands += 1;
        let c = device_job::run_one(self.dev, Request { tag: self.commands, function, inputs, output })?;
        Ok(c.output_bytes)
    }

    fn current(&self) -> DeviceRange {
        if self.stripes == 0 {
            self.l.first
        } else {
            self.l.stripe
        }
    }

    /// Appends a range of device memory to the stream: gathered into the stripe being filled.
    fn put(&mut self, mut from: DeviceRange) -> Result<(), String> {
        let stripe_bytes = self.l.stripe.len;
        while from.len > 0 {
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
    fn feed(&mut self, mut from: DeviceRange) -> Result<(), String> {
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
    fn seal(&mut self) -> Result<(), String> {
        let index = self.sealer.as_ref().expect("sealing").blocks();
        let n = self.plain_fill;
        let out = self.run(Function::AeadSealBlock { index }, vec![DeviceRange::new(self.l.plain.offset, n), self.l.material], self.l.sealed)?;
        if out != n + TAG_BYTES as u64 {
            return Err(format!("the device sealed block {index} into {out} bytes"));
        }
        // The host's sealer only counts: the device did the sealing (its layout gives the header).
        self.sealer.as_mut().expect("sealing").count_sealed(n as usize);
        self.plain_fill = 0;
        self.put(DeviceRange::new(self.l.sealed.offset, out))
    }

    /// Codes stripe `s` held in `buf`, checksums its units and writes them
    /// from the device's memory; their CRC-32s.
    fn code_and_write(&mut self, buf: DeviceRange, s: u64) -> Result<Vec<u32>, String> {
        let (k, m, unit) = (self.o.data, self.o.parity, self.o.unit as u64);
        self.run(Function::EcEncode { data: k as u8, parity: m as u8 }, vec![buf], self.l.parity)?;
        let units: Vec<DeviceRange> = (0..k as u64).map(|i| DeviceRange::new(buf.offset + i * unit, unit)).chain((0..m as u64).map(|i| DeviceRange::new(self.l.parity.offset + i * unit, unit))).collect();
        let mut crcs = Vec::with_capacity(k + m);
        for (i, u) in units.iter().enumerate() {
            self.commands += 1;
            crcs.push(device_job::run_one(self.dev, Request::crc32(self.commands, &[*u]))?.input_crc32);
            let ptr = self.dev.memory().io_ptr(*u).ok_or("a unit outside the device's memory")?;
            // SAFETY: the unit lies in the device's mapped memory; no command writes it
            // until this stripe is written.
            unsafe { device_job::write_from(ptr, unit as usize, &self.files[i].0, s * unit)? };
        }
        Ok(crcs)
    }
}

/// The chain on `dev`: what `chain::compress_ec` does on the CPU, with the same output.
pub(crate) fn compress_ec(dev: &mut EmulatedCsp, source: &Path, dir: &Path, o: &ChainOptions) -> Result<(), JobError> {
    let started = Instant::now();
    let unreadable = |e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e };
    let opened = peerpath_io::open_source(source, true).map_err(unreadable)?;
    let meta = opened.file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(JobError::Usage(format!("{}: --ec takes a regular file", source.display())));
    }
    ec::check_unit(o.unit)?;
    if std::fs::symlink_metadata(dir).is_ok() {
        return Err(JobError::TargetDirExists { path: dir.to_path_buf() });
    }
    let n = o.data + o.parity;
    let names: Vec<_> = (0..n).map(|i| dir.with_file_name(ec::shard_name(i))).collect();
    let files = ec::create_temporaries(&names, false).map_err(|source| JobError::TargetIo { path: dir.to_path_buf(), source })?;
    let sealer = match &o.encrypt {
        Some((key, block)) => Some(StreamSealer::new(key, *block).map_err(JobError::Usage)?),
        None => None,
    };
    let l = Layout::new(o);
    let mut c = Chain { dev, l, o, files, crcs: vec![Vec::new(); n], sealer, plain_fill: 0, stripe_fill: 0, stripes: 0, len: 0, compressed: 0, members: 0, commands: 0 };
    let ran = run_chain(&mut c, &opened.file, meta.len(), o);
    // The device's copy of the file's key material goes, whatever happened.
    if o.encrypt.is_some() {
        // SAFETY: the material range lies in the device's memory; no command is running.
        unsafe { c.dev.memory().host_write(c.l.material.offset, &[0u8; DEVICE_KEY_BYTES]) };
    }
    let stripes = match ran {
        Ok(s) => s,
        Err(why) => {
            c.files.iter().for_each(|(_, t)| peerpath_io::discard(t));
            return Err(JobError::Device { detail: format!("{why}; nothing was kept") });
        }
    };
    let name = source.file_name().map_or_else(|| "source".into(), |n| n.to_string_lossy().into_owned());
    let name = if c.sealer.is_some() { format!("{name}.gz.ppenc") } else { format!("{name}.gz") };
    let manifest = Manifest::new(name.clone(), c.len, (o.data, o.parity, o.unit), stripes, std::mem::take(&mut c.crcs));
    ec::publish(dir, c.files, &manifest, &peerpath_io::Inherited::mode_of(Some(&meta)))?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{}: {} -> {} members, {} compressed (level {}){} -> RS({}, {}): {stripes} stripe(s) in {n} shards, in {}; {:.3} s, {:.2} GB/s of source (measured on emulated devices: every stage on 1 emulated CSP, {} commands; the block read {} into its memory, shards written from it by kernel copies; payload bytes into this process: 0)",
        source.display(),
        peerpath_metrics::human_bytes(meta.len()),
        c.members,
        peerpath_metrics::human_bytes(c.compressed),
        o.level.get(),
        if c.sealer.is_some() { " -> encrypted on the device (peerpath-enc/1)" } else { "" },
        o.data,
        o.parity,
        dir.display(),
        secs,
        meta.len() as f64 / secs.max(1e-9) / 1e9,
        c.commands,
        device_job::moved(device_job::is_direct(&opened.file)),
    );
    println!("{}: `peerpath decompress --ec {} -o FILE` (or `ec decode`) gives back the {}-byte {name}", dir.display(), dir.display(), c.len);
    Ok(())
}

/// Reads, compresses, seals and codes the whole source; the number of stripes.
fn run_chain(c: &mut Chain, src: &File, size: u64, o: &ChainOptions) -> Result<u64, String> {
    if let Some((key, _)) = &o.encrypt {
        let material = device_key(key, &c.sealer.as_ref().expect("sealing").file_id());
        // SAFETY: the material range lies in the device's memory; no command is running.
        unsafe { c.dev.memory().host_write(c.l.material.offset, &material[..]) };
        // The header's place, filled in at the end.
        c.run(Function::Fill { byte: 0 }, vec![], DeviceRange::new(c.l.first.offset, HEADER_BYTES as u64))?;
        c.stripe_fill = HEADER_BYTES as u64;
        c.len = HEADER_BYTES as u64;
    }
    let in_ptr = c.dev.memory().io_ptr(c.l.read).ok_or("the device's memory is not mapped into this process for I/O")?;
    let mut at = 0u64;
    loop {
        let want = (size - at).min(o.block_size as u64) as usize;
        // SAFETY: the read range holds a block of whole pages; no command uses it now.
        unsafe { device_job::read_into(src, at, want, in_ptr)? };
        let bytes = c.run(Function::GzipCompressMember { level: o.level, format: o.format }, vec![DeviceRange::new(c.l.read.offset, want as u64)], c.l.member)?;
        c.members += 1;
        c.compressed += bytes;
        c.feed(DeviceRange::new(c.l.member.offset, bytes))?;
        at += want as u64;
        if at >= size {
            break;
        }
    }
    if o.format == Format::Bgzf {
        // SAFETY: the EOF range lies in the device's memory; no command is running.
        unsafe { c.dev.memory().host_write(c.l.eof.offset, &BGZF_EOF_BLOCK) };
        c.compressed += BGZF_EOF_BLOCK.len() as u64;
        c.feed(DeviceRange::new(c.l.eof.offset, BGZF_EOF_BLOCK.len() as u64))?;
    }
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
    // SAFETY: the header's place lies in the first stripe's range; no command is running.
    unsafe { c.dev.memory().host_write(c.l.first.offset, &head) };
    let crcs = c.code_and_write(c.l.first, 0)?;
    c.crcs.iter_mut().zip(crcs).for_each(|(x, y)| x.insert(0, y));
    Ok(stripes)
}
