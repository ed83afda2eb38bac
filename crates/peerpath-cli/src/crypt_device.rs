//! `peerpath encrypt|decrypt --engine emulated`: `peerpath-enc/1` sealing
//! and opening on an emulated CSP, the plaintext never in the host
//! process's memory. Each
//! block is read by the kernel straight into the device's memory (`pread`,
//! O_DIRECT where taken), the device seals it (`Function::AeadSealBlock`,
//! the CPU's AES-256-GCM code) and the sealed block is written to the target
//! from the device's memory (`pwrite`; sealed blocks sit at unaligned
//! offsets, so through the page cache). The device gets the file's device
//! material (its block key and file id), never the master key, and the host
//! overwrites it with zeros when the job ends, failed or not. Opening is the
//! mirror (`Function::AeadOpenBlock`; sealed blocks are read through the page
//! cache, as they sit at unaligned offsets). Blocks go a group at a time,
//! one per device worker, the next group read ahead and the one before
//! written behind (`device_job::three_slots`).
//! A block that is not authentic, a source that cannot be read (or shrank)
//! and a target that cannot be written fail the job (nothing is kept); a
//! device that fails hands the whole file to the CPU (said), or fails the
//! job with `--no-fallback`.

use crate::device_job::{self, SLOTS};
use peerpath_device::{Completion, Device, DeviceRange, Function, FunctionKind, Request, Status};
use peerpath_func::crypt::{device_key, FileCipher, Key, DEVICE_KEY_BYTES, TAG_BYTES};
use std::fs::File;

const ALIGN: usize = 4096;
/// Blocks sealed or opened side by side: one per device worker.
const WORKERS: usize = 2;

/// The device's memory: [`SLOTS`] groups of [`WORKERS`] blocks, each block a
/// plaintext range and its sealed form (each with room for the tag: a block
/// is opened in place in its output), then the material.
struct Layout {
    room: u64,
}

impl Layout {
    fn new(block: usize) -> Layout {
        Layout { room: (block + TAG_BYTES).next_multiple_of(ALIGN) as u64 }
    }
    /// Block `i`'s plaintext and sealed ranges (its group's slot, its place in the group).
    fn ranges(&self, i: u64) -> (DeviceRange, DeviceRange) {
        let at = ((i / WORKERS as u64) % SLOTS as u64 * WORKERS as u64 + i % WORKERS as u64) * 2 * self.room;
        (DeviceRange::new(at, self.room), DeviceRange::new(at + self.room, self.room))
    }
    fn material(&self) -> DeviceRange {
        DeviceRange::new((SLOTS * WORKERS) as u64 * 2 * self.room, DEVICE_KEY_BYTES as u64)
    }
}

/// Starts an emulated CSP for blocks of `block` bytes: to seal, whole 4 KiB
/// pages (so each block's read lands aligned for O_DIRECT).
pub(crate) fn start(block: usize, sealing: bool, faults: Option<peerpath_device::FaultConfig>) -> Result<Box<dyn Device>, String> {
    if sealing && !block.is_multiple_of(ALIGN) {
        return Err(format!("the device reads whole 4 KiB pages by DMA: --block-size {block} is not a multiple of 4K"));
    }
    let material = Layout::new(block).material();
    let need = if sealing { FunctionKind::AeadSealBlock } else { FunctionKind::AeadOpenBlock };
    let dev = device_job::spawn("enc", (material.offset + ALIGN as u64) as usize, 8, WORKERS as u32, need)?;
    Ok(device_job::with_faults(dev, faults))
}

/// Why a pass stopped: each is a different failure of the job.
pub(crate) enum PassFailure {
    /// A sealed block that is not authentic (opening only).
    NotAuthentic(String),
    /// Reading the source into the device's memory (it shrank, a read error).
    Source(String),
    /// Writing the target from the device's memory.
    Target(std::io::Error),
    /// The device: it died, timed out, or answered what it must not.
    Device(String),
}

/// Writes `len` bytes of the device's memory at `from` to `dst` at `at`.
///
/// # Safety
/// As [`device_job::write_from`].
unsafe fn write_out(from: usize, len: usize, dst: &File, at: u64) -> Result<(), PassFailure> {
    // SAFETY: the caller's contract is write_from's.
    unsafe { device_job::write_from(from as *const u8, len, dst, at) }.map_err(PassFailure::Target)
}

/// The address of `r` in the device's memory as this process maps it.
fn address(dev: &dyn Device, r: DeviceRange) -> Result<usize, String> {
    dev.memory().io_ptr(r).map(|p| p as usize).ok_or_else(|| "the device's memory is not mapped into this process for I/O".to_string())
}

/// What sealing and opening share: the file's layout, where its blocks go
/// in the device's memory (and its address in this process), the material.
struct Pass {
    l: peerpath_func::crypt::Layout,
    layout: Layout,
    base: usize,
    material: DeviceRange,
}

impl Pass {
    /// Writes the file's device material into the device's memory ([`Pass::end`] zeroes it).
    fn begin(dev: &dyn Device, master: &Key, cipher: &FileCipher) -> Result<Pass, String> {
        let l = *cipher.layout();
        let layout = Layout::new(l.block_bytes as usize);
        let material = layout.material();
        let base = address(dev, DeviceRange::new(0, material.offset))?;
        let key = device_key(master, &l.file_id);
        // SAFETY: the material range lies inside the device's memory (layout) and no command runs.
        unsafe { dev.memory().host_write(material.offset, &key[..]) };
        Ok(Pass { l, layout, base, material })
    }

    /// Overwrites the material with zeros: the job's commands have all completed or failed.
    fn end(&self, dev: &dyn Device) {
        // SAFETY: as in `begin`; no command runs.
        unsafe { dev.memory().host_write(self.material.offset, &[0u8; DEVICE_KEY_BYTES]) };
    }

    fn groups(&self) -> u64 {
        self.l.blocks().div_ceil(WORKERS as u64)
    }

    /// The blocks of group `g`.
    fn group(&self, g: u64) -> std::ops::Range<u64> {
        g * WORKERS as u64..((g + 1) * WORKERS as u64).min(self.l.blocks())
    }

    /// Where `r` of the device's memory is in this process.
    fn at(&self, r: DeviceRange) -> usize {
        self.base + r.offset as usize
    }
}

/// Runs `blocks` (group `g`'s) through the device, sealing or opening with
/// the material: a command per block, side by side. Their completions, in
/// block order.
fn run_group(dev: &mut dyn Device, g: u64, blocks: u64, command: impl Fn(u64) -> Request) -> Result<Vec<Completion>, String> {
    let first = g * WORKERS as u64;
    device_job::run_side_by_side(dev, (first..(first + WORKERS as u64).min(blocks)).map(command).collect())
}

/// Opens every sealed block of `src` into `dst`; says how the payload
/// moved, and the seconds the device spent opening. [`WORKERS`] blocks at
/// once, read ahead of them and written behind them ([`device_job::three_slots`]).
pub(crate) fn open(dev: &mut dyn Device, src: &File, master: &Key, cipher: &FileCipher, dst: &File) -> Result<(String, f64), PassFailure> {
    let p = Pass::begin(dev, master, cipher).map_err(PassFailure::Device)?;
    let (l, layout, material) = (p.l, &p.layout, p.material);
    let read = |g: u64| {
        for i in p.group(g) {
            let (_, sealed) = layout.ranges(i);
            // SAFETY: block i's sealed range holds it and its tag; its slot is this step's read
            // slot, which no command uses and no write reads (device_job::three_slots).
            unsafe { device_job::read_into(src, l.sealed_offset(i), l.plain_len(i) + TAG_BYTES, p.at(sealed) as *mut u8) }.map_err(PassFailure::Source)?;
        }
        Ok(())
    };
    let write = |g: u64| {
        for i in p.group(g) {
            let (plain, _) = layout.ranges(i);
            // SAFETY: block i's plaintext lies in its plain range; its slot is this step's write
            // slot, which no command writes and no read fills.
            unsafe { write_out(p.at(plain), l.plain_len(i), dst, l.plain_start(i))? };
        }
        Ok(())
    };
    let opened = device_job::three_slots(p.groups(), read, |g| {
        let done = run_group(dev, g, l.blocks(), |i| {
            let (plain, sealed) = layout.ranges(i);
            Request { tag: i, function: Function::AeadOpenBlock { index: i }, inputs: vec![DeviceRange::new(sealed.offset, (l.plain_len(i) + TAG_BYTES) as u64), material], output: plain }
        })
        .map_err(PassFailure::Device)?;
        for c in &done {
            let i = c.tag();
            match c.status {
                Status::Success => {}
                Status::CorruptInput => return Err(PassFailure::NotAuthentic(format!("block {i} (bytes {}..) is not authentic: tampered, moved, from another file, or damaged", l.sealed_offset(i)))),
                s => return Err(PassFailure::Device(format!("the emulated CSP answered {s:?} to AeadOpenBlock"))),
            }
        }
        Ok(done.iter().map(|c| u64::from(c.device_time_us)).sum::<u64>())
    }, write);
    p.end(dev);
    let device_us: u64 = opened?.iter().sum();
    let how = format!(
        "opened on 1 emulated CSP ({}, {WORKERS} blocks at once, read ahead and written behind): sealed blocks read into its memory (by kernel copies: they sit at unaligned offsets), authenticated and decrypted there with the file's block key (zeroed at the end), written from it to the target; payload bytes into this process: 0",
        dev.name()
    );
    Ok((how, device_us as f64 / 1e6))
}

/// Seals every block of `src` (opened with O_DIRECT where it could be) into
/// `dst` at its place; says how the payload moved, and the seconds the
/// device spent sealing. [`WORKERS`] blocks at once, as `open`.
pub(crate) fn seal(dev: &mut dyn Device, src: &File, master: &Key, cipher: &FileCipher, dst: &File) -> Result<(String, f64), PassFailure> {
    let p = Pass::begin(dev, master, cipher).map_err(PassFailure::Device)?;
    let (l, layout, material) = (p.l, &p.layout, p.material);
    let read = |g: u64| {
        for i in p.group(g) {
            let (plain, _) = layout.ranges(i);
            // SAFETY: block i's plain range holds a block rounded up to whole pages; its slot is
            // this step's read slot, which no command uses and no write reads.
            unsafe { device_job::read_into(src, l.plain_start(i), l.plain_len(i), p.at(plain) as *mut u8) }.map_err(PassFailure::Source)?;
        }
        Ok(())
    };
    let write = |g: u64| {
        for i in p.group(g) {
            let (_, sealed) = layout.ranges(i);
            // SAFETY: block i's sealed form lies in its sealed range; its slot is this step's
            // write slot, which no command writes and no read fills.
            unsafe { write_out(p.at(sealed), l.plain_len(i) + TAG_BYTES, dst, l.sealed_offset(i))? };
        }
        Ok(())
    };
    let sealed = device_job::three_slots(p.groups(), read, |g| {
        let done = run_group(dev, g, l.blocks(), |i| {
            let (plain, sealed) = layout.ranges(i);
            Request { tag: i, function: Function::AeadSealBlock { index: i }, inputs: vec![DeviceRange::new(plain.offset, l.plain_len(i) as u64), material], output: sealed }
        })
        .map_err(PassFailure::Device)?;
        for c in &done {
            let (i, want) = (c.tag(), l.plain_len(c.tag()) + TAG_BYTES);
            if c.status != Status::Success {
                return Err(PassFailure::Device(format!("the emulated CSP answered {:?} to AeadSealBlock", c.status)));
            }
            if c.output_bytes as usize != want {
                return Err(PassFailure::Device(format!("the device sealed block {i} into {} bytes, not {want}", c.output_bytes)));
            }
        }
        Ok(done.iter().map(|c| u64::from(c.device_time_us)).sum::<u64>())
    }, write);
    p.end(dev);
    let device_us: u64 = sealed?.iter().sum();
    let how = format!(
        "sealed on 1 emulated CSP ({}, {WORKERS} blocks at once, read ahead and written behind): blocks read {} into its memory, sealed there with the file's block key (not the master key; zeroed at the end), written from it to the target (by kernel copies: sealed blocks sit at unaligned offsets); payload bytes into this process: 0",
        dev.name(),
        device_job::moved(device_job::is_direct(src))
    );
    Ok((how, device_us as f64 / 1e6))
}
