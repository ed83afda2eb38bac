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
//!
//! `--engine gpu` runs the same passes on a GPU (peerpath's AES-256-GCM
//! kernels, `peerpath-gpu`'s crypt.cu), whose memory storage reaches only
//! through a pinned host window: the layout is there twice ([`Layout`]),
//! blocks are read into the window, copied to GPU memory by the device
//! (`Function::Copy`), sealed or opened there [`GPU_GROUP`] at a time, and
//! copied back to the window to be written. The material goes the same way
//! and is zeroed in both places at the end.
//!
//! A block that is not authentic, a source that cannot be read (or shrank)
//! and a target that cannot be written fail the job (nothing is kept); a
//! device that fails hands the whole file to the CPU (said), or fails the
//! job with `--no-fallback`.

use crate::device_job::{self, SLOTS};
use peerpath_device::{Completion, Device, DeviceRange, Function, FunctionKind, Request, Status};
use peerpath_func::crypt::{device_key, FileCipher, Key, DEVICE_KEY_BYTES, TAG_BYTES};
use std::fs::File;

const ALIGN: usize = 4096;
/// Blocks sealed or opened side by side on an emulated CSP: one per device worker.
const WORKERS: usize = 2;
/// Blocks sealed or opened at once on a GPU: one batch of its kernels (a
/// thread per KiB: 16K threads for 16 blocks of 1 MiB).
const GPU_GROUP: usize = 16;

/// The device's memory: [`SLOTS`] groups of `width` blocks, each block a
/// plaintext range and its sealed form (each with room for the tag: a block
/// is opened in place in its output), then the material. On a staged device
/// (a GPU) these are ranges of its own memory, and the same ranges from
/// `window_at` on in its host window are where storage reads and writes.
struct Layout {
    room: u64,
    width: usize,
    window_at: u64,
}

impl Layout {
    fn new(block: usize, width: usize) -> Layout {
        Layout { room: (block + TAG_BYTES).next_multiple_of(ALIGN) as u64, width, window_at: 0 }
    }
    /// For the file `l`: room for its largest block (block 0), so a file shorter than a block
    /// asks for no more than itself (1 GiB blocks of a 3 MB file asked an emulated CSP for 12
    /// GiB, populated before it was ready: it timed out, a fallback).
    fn of(l: &peerpath_func::crypt::Layout, width: usize) -> Layout {
        Layout::new(l.plain_len(0), width)
    }
    /// Block `i`'s plaintext and sealed ranges (its group's slot, its place in the group).
    fn ranges(&self, i: u64) -> (DeviceRange, DeviceRange) {
        let w = self.width as u64;
        let at = ((i / w) % SLOTS as u64 * w + i % w) * 2 * self.room;
        (DeviceRange::new(at, self.room), DeviceRange::new(at + self.room, self.room))
    }
    fn material(&self) -> DeviceRange {
        DeviceRange::new((SLOTS * self.width) as u64 * 2 * self.room, DEVICE_KEY_BYTES as u64)
    }
    fn bytes(&self) -> usize {
        (self.material().offset + ALIGN as u64) as usize
    }
    fn staged(&self) -> bool {
        self.window_at > 0
    }
    /// Where storage reads and writes `r`: the window's copy on a staged device, `r` itself otherwise.
    fn io(&self, r: DeviceRange) -> DeviceRange {
        DeviceRange::new(self.window_at + r.offset, r.len)
    }
}

/// Blocks of `block` bytes to seal must be whole 4 KiB pages (so each
/// block's read lands aligned for O_DIRECT).
fn check_block(block: usize, sealing: bool) -> Result<(), String> {
    if sealing && !block.is_multiple_of(ALIGN) {
        return Err(format!("the device reads whole 4 KiB pages by DMA: --block-size {block} is not a multiple of 4K"));
    }
    Ok(())
}

/// Starts an emulated CSP for the blocks of the file `l`.
pub(crate) fn start(l: &peerpath_func::crypt::Layout, sealing: bool, faults: Option<peerpath_device::FaultConfig>, timeout: Option<std::time::Duration>) -> Result<Box<dyn Device>, String> {
    check_block(l.block_bytes as usize, sealing)?;
    let need = if sealing { FunctionKind::AeadSealBlock } else { FunctionKind::AeadOpenBlock };
    let dev = device_job::spawn("enc", Layout::of(l, WORKERS).bytes(), 8, WORKERS as u32, need, timeout)?;
    Ok(device_job::with_faults(dev, faults))
}

/// Opens GPU `ordinal` with peerpath's AES-256-GCM kernels (no nvCOMP, no
/// coding kernels) for the blocks of the file `l`: [`GPU_GROUP`] blocks a
/// group, the layout in its memory and again in its pinned host window.
pub(crate) fn start_gpu(ordinal: usize, l: &peerpath_func::crypt::Layout, sealing: bool, timeout: Option<std::time::Duration>) -> Result<Box<dyn Device>, String> {
    check_block(l.block_bytes as usize, sealing)?;
    let bytes = Layout::of(l, GPU_GROUP).bytes();
    // A group's copies in, its commands and its copies out.
    let config = peerpath_gpu::GpuDeviceConfig { crypt: true, ..peerpath_gpu::GpuDeviceConfig::staged(ordinal, bytes, 2 * GPU_GROUP) };
    device_job::open_gpu(device_job::timed(config, timeout))
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
/// in the device's memory (and where storage reaches them in this process),
/// the material.
struct Pass {
    l: peerpath_func::crypt::Layout,
    layout: Layout,
    base: usize,
    material: DeviceRange,
    /// The device, in words ("1 emulated CSP (pp1234-enc0)", "1 GPU (gpu0)").
    who: String,
    /// What this process had copied to or from the device's memory before the pass.
    copied_before: u64,
}

impl Pass {
    /// Lays the file out in the device's memory and writes its device
    /// material there ([`Pass::end`] zeroes it): on a staged device, into
    /// the window and copied to its own memory by the device.
    fn begin(dev: &mut dyn Device, master: &Key, cipher: &FileCipher) -> Result<Pass, String> {
        let l = *cipher.layout();
        let window_at = dev.memory().dma_window().map_or(0, |w| w.0);
        let mut layout = Layout::of(&l, if window_at > 0 { GPU_GROUP } else { WORKERS });
        layout.window_at = window_at;
        if window_at > 0 && (window_at < layout.bytes() as u64 || dev.memory().len() < 2 * layout.bytes()) {
            return Err("the device's memory is not staged as this pass needs (its own memory and its window each the pass's size)".into());
        }
        let material = layout.material();
        let base = address(dev, layout.io(DeviceRange::new(0, layout.bytes() as u64)))?;
        let who = if layout.staged() { format!("1 GPU ({})", dev.name()) } else { format!("1 emulated CSP ({})", dev.name()) };
        let p = Pass { l, layout, base, material, who, copied_before: dev.memory().host_copied_bytes() };
        p.put_material(dev, &device_key(master, &l.file_id)[..])?;
        Ok(p)
    }

    /// Writes `bytes` as the material, where the device's commands read it
    /// (on a staged device the window's copy is zeroed again if the copy to
    /// the device's own memory fails: nothing of the key stays behind).
    fn put_material(&self, dev: &mut dyn Device, bytes: &[u8]) -> Result<(), String> {
        let io = self.layout.io(self.material);
        // SAFETY: the material's range (in the window on a staged device) lies inside the
        // device's memory (layout) and no command runs.
        unsafe { dev.memory().host_write(io.offset, bytes) };
        if self.layout.staged() {
            if let Err(why) = device_job::run_all(dev, vec![Request::copy(0, &[io], self.material)]) {
                // SAFETY: as above; the copy has completed or failed.
                unsafe { dev.memory().host_write(io.offset, &[0u8; DEVICE_KEY_BYTES]) };
                return Err(why);
            }
        }
        Ok(())
    }

    /// Overwrites the material with zeros (in the window and in the device's
    /// own memory): the job's commands have all completed or failed. On a
    /// device that failed, its own copy cannot be reached; the window's is
    /// zeroed all the same.
    fn end(&self, dev: &mut dyn Device) {
        let _ = self.put_material(dev, &[0u8; DEVICE_KEY_BYTES]);
    }

    fn groups(&self) -> u64 {
        self.l.blocks().div_ceil(self.layout.width as u64)
    }

    /// The blocks of group `g`.
    fn group(&self, g: u64) -> std::ops::Range<u64> {
        let w = self.layout.width as u64;
        g * w..((g + 1) * w).min(self.l.blocks())
    }

    /// Where storage reaches `r` of the device's memory in this process.
    fn at(&self, r: DeviceRange) -> usize {
        self.base + r.offset as usize
    }

    /// On a staged device, the ranges `which(i)` of group `g`'s blocks
    /// (`len(i)` bytes of each) copied by the device from the window to its
    /// own memory (`in_`) or back, side by side; nothing on a mapped one.
    fn stage(&self, dev: &mut dyn Device, g: u64, which: impl Fn(u64) -> DeviceRange, len: impl Fn(u64) -> usize, in_: bool) -> Result<(), String> {
        if !self.layout.staged() {
            return Ok(());
        }
        let copies = self
            .group(g)
            .filter(|&i| len(i) > 0)
            .map(|i| {
                let r = DeviceRange::new(which(i).offset, len(i) as u64);
                let io = self.layout.io(r);
                if in_ { Request::copy(i, &[io], r) } else { Request::copy(i, &[r], io) }
            })
            .collect::<Vec<_>>();
        // Every copy must have moved its bytes: a block sealed or written from stale memory
        // would be a file that authenticates and holds the wrong data.
        for c in device_job::run_side_by_side(dev, copies)? {
            if c.status != Status::Success {
                return Err(format!("{} answered {:?} to a staging copy of block {}", self.who, c.status, c.tag()));
            }
        }
        Ok(())
    }

    /// Runs group `g`'s blocks through the device, sealing or opening with
    /// the material: a command per block, side by side. Their completions,
    /// in block order.
    fn run_group(&self, dev: &mut dyn Device, g: u64, command: impl Fn(u64) -> Request) -> Result<Vec<Completion>, String> {
        device_job::run_side_by_side(dev, self.group(g).map(command).collect())
    }

    /// How the payload moved, in words: the device's memory, (staged) the
    /// copies, and what this process copied itself (measured: the key
    /// material in and its zeroing).
    fn route(&self, dev: &dyn Device, read: &str, write: &str, work: &str) -> String {
        let copies = device_job::host_copies(dev.memory().host_copied_bytes() - self.copied_before, "the block key and its zeroing", self.l.plaintext_bytes);
        if self.layout.staged() {
            format!("{read} into its pinned host window, copied to GPU memory by the device, {work} there with the file's block key (not the master key; zeroed at the end), copied back to the window by the device, {write} from it to the target; {copies} (storage DMAs into and out of the pinned window; the GPU's copy engines move them to and from its memory)")
        } else {
            format!("{read} into its memory, {work} there with the file's block key (not the master key; zeroed at the end), {write} from it to the target; {copies}")
        }
    }
}

/// Opens every sealed block of `src` into `dst`; says how the payload
/// moved, and the seconds the device spent opening. A group of blocks at
/// once, read ahead of them and written behind them ([`device_job::three_slots`]).
pub(crate) fn open(dev: &mut dyn Device, src: &File, master: &Key, cipher: &FileCipher, dst: &File) -> Result<(String, f64), PassFailure> {
    let p = Pass::begin(dev, master, cipher).map_err(PassFailure::Device)?;
    let (l, layout, material) = (p.l, &p.layout, p.material);
    let sealed_len = |i: u64| l.plain_len(i) + TAG_BYTES;
    let read = |g: u64| {
        for i in p.group(g) {
            let (_, sealed) = layout.ranges(i);
            // SAFETY: block i's sealed range holds it and its tag; its slot is this step's read
            // slot, which no command uses and no write reads (device_job::three_slots).
            unsafe { device_job::read_into(src, l.sealed_offset(i), sealed_len(i), p.at(sealed) as *mut u8) }.map_err(PassFailure::Source)?;
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
        p.stage(dev, g, |i| layout.ranges(i).1, sealed_len, true).map_err(PassFailure::Device)?;
        let done = p
            .run_group(dev, g, |i| {
                let (plain, sealed) = layout.ranges(i);
                Request { tag: i, function: Function::AeadOpenBlock { index: i }, inputs: vec![DeviceRange::new(sealed.offset, sealed_len(i) as u64), material], output: plain }
            })
            .map_err(PassFailure::Device)?;
        for c in &done {
            let i = c.tag();
            match c.status {
                Status::Success => {}
                // The device's verdict is confirmed on the host: the block read again from the
                // file and opened on the CPU. One that opens there means the device failed.
                Status::CorruptInput => {
                    let mut block = vec![0u8; sealed_len(i)];
                    std::os::unix::fs::FileExt::read_exact_at(src, &mut block, l.sealed_offset(i)).map_err(|e| PassFailure::Source(e.to_string()))?;
                    return Err(match cipher.open_block(i, &mut block) {
                        // The CPU's own words (the block and its plaintext bytes), as without a device.
                        Err(e) => PassFailure::NotAuthentic(format!("{e} (found by the device, confirmed on the host)")),
                        Ok(()) => PassFailure::Device(format!("{} called block {i} not authentic, and it opens on the host CPU", p.who)),
                    });
                }
                s => return Err(PassFailure::Device(format!("{} answered {s:?} to AeadOpenBlock", p.who))),
            }
        }
        p.stage(dev, g, |i| layout.ranges(i).0, |i| l.plain_len(i), false).map_err(PassFailure::Device)?;
        Ok(done.iter().map(|c| u64::from(c.device_time_us)).sum::<u64>())
    }, write);
    p.end(dev);
    let device_us: u64 = opened?.iter().sum();
    // The device's own busy time where it keeps statistics (a GPU's batch time is shared by its commands).
    let seconds = device_job::busy(dev, FunctionKind::AeadOpenBlock).map_or(device_us as f64 / 1e6, |d| d.as_secs_f64());
    let how = format!(
        "opened on {} ({} blocks at once, read ahead and written behind): {}",
        p.who,
        layout.width,
        p.route(dev, "sealed blocks read (by kernel copies: they sit at unaligned offsets)", "written", "authenticated and decrypted")
    );
    Ok((how, seconds))
}

/// Seals every block of `src` (opened with O_DIRECT where it could be) into
/// `dst` at its place; says how the payload moved, and the seconds the
/// device spent sealing. A group of blocks at once, as `open`.
pub(crate) fn seal(dev: &mut dyn Device, src: &File, master: &Key, cipher: &FileCipher, dst: &File) -> Result<(String, f64), PassFailure> {
    let p = Pass::begin(dev, master, cipher).map_err(PassFailure::Device)?;
    let (l, layout, material) = (p.l, &p.layout, p.material);
    let sealed_len = |i: u64| l.plain_len(i) + TAG_BYTES;
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
            unsafe { write_out(p.at(sealed), sealed_len(i), dst, l.sealed_offset(i))? };
        }
        Ok(())
    };
    let sealed = device_job::three_slots(p.groups(), read, |g| {
        p.stage(dev, g, |i| layout.ranges(i).0, |i| l.plain_len(i), true).map_err(PassFailure::Device)?;
        let done = p
            .run_group(dev, g, |i| {
                let (plain, sealed) = layout.ranges(i);
                Request { tag: i, function: Function::AeadSealBlock { index: i }, inputs: vec![DeviceRange::new(plain.offset, l.plain_len(i) as u64), material], output: sealed }
            })
            .map_err(PassFailure::Device)?;
        for c in &done {
            let (i, want) = (c.tag(), sealed_len(c.tag()));
            if c.status != Status::Success {
                return Err(PassFailure::Device(format!("{} answered {:?} to AeadSealBlock", p.who, c.status)));
            }
            if c.output_bytes as usize != want {
                return Err(PassFailure::Device(format!("the device sealed block {i} into {} bytes, not {want}", c.output_bytes)));
            }
        }
        p.stage(dev, g, |i| layout.ranges(i).1, sealed_len, false).map_err(PassFailure::Device)?;
        Ok(done.iter().map(|c| u64::from(c.device_time_us)).sum::<u64>())
    }, write);
    p.end(dev);
    let device_us: u64 = sealed?.iter().sum();
    // The device's own busy time where it keeps statistics (a GPU's batch time is shared by its commands).
    let seconds = device_job::busy(dev, FunctionKind::AeadSealBlock).map_or(device_us as f64 / 1e6, |d| d.as_secs_f64());
    let how = format!(
        "sealed on {} ({} blocks at once, read ahead and written behind): {}",
        p.who,
        layout.width,
        p.route(dev, &format!("blocks read {}", device_job::moved(device_job::is_direct(src))), "written (by kernel copies: sealed blocks sit at unaligned offsets)", "sealed")
    );
    Ok((how, seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device_job::testing::{cpu_device, xorshift};
    use peerpath_func::crypt::{open_all, HEADER_BYTES};
    use std::os::unix::fs::FileExt;

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        f.as_file().write_all_at(bytes, 0).unwrap();
        f
    }

    #[test]
    fn sealing_and_opening_on_a_device_give_the_cpus_file_staged_or_mapped() {
        let key = Key::from_bytes(&[7u8; 32]).unwrap();
        let block = 8192;
        // 49 blocks: three whole groups of a GPU's 16 and one block, the last one short.
        let data = xorshift(48 * block + 1000, 5);
        for staged in [false, true] {
            let width = if staged { GPU_GROUP } else { WORKERS };
            let (cipher, header) = FileCipher::create(&key, block as u32, data.len() as u64).unwrap();
            let src = file_with(&data);
            let sealed = file_with(&header);
            let mut dev = cpu_device(staged, Layout::new(block, width).bytes() * 2);
            let (how, _) = seal(&mut dev, src.as_file(), &key, &cipher, sealed.as_file()).map_err(|_| "seal").unwrap();
            assert!(how.contains(&format!("{width} blocks at once")), "{how}");
            // Measured: the key material in and its zeroing (in the window too when staged), nothing of the payload.
            let copied: u64 = how.split("device's memory: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            assert_eq!(copied, 2 * DEVICE_KEY_BYTES as u64, "{how}");
            assert_eq!(how.contains("copied to GPU memory by the device"), staged, "{how}");
            let file = std::fs::read(sealed.path()).unwrap();
            assert_eq!(file.len() as u64, cipher.layout().file_bytes());
            assert!(open_all(&key, &file).unwrap() == data, "staged {staged}: aws-lc opens the device's file to the source");
            // Each block is what the CPU seals (the same file id, so the same bytes).
            let l = cipher.layout();
            for i in [0, 17, l.blocks() - 1] {
                let mut b = data[l.plain_start(i) as usize..][..l.plain_len(i)].to_vec();
                b.resize(l.plain_len(i) + TAG_BYTES, 0);
                cipher.seal(i, &mut b);
                assert!(file[l.sealed_offset(i) as usize..][..b.len()] == b[..], "block {i}");
            }
            // The material is zeroed where the host can see it (the window's copy, or the memory).
            let mut m = [1u8; DEVICE_KEY_BYTES];
            let mut layout = Layout::new(block, width);
            layout.window_at = dev.memory().dma_window().map_or(0, |w| w.0);
            // SAFETY: the material's range in the device's memory; no command runs.
            unsafe { dev.memory().host_read(layout.io(layout.material()).offset, &mut m) };
            assert_eq!(m, [0u8; DEVICE_KEY_BYTES]);
            // Open it back on the device.
            let opened = tempfile::NamedTempFile::new().unwrap();
            let c = FileCipher::open(&key, &file[..HEADER_BYTES]).unwrap();
            open(&mut dev, sealed.as_file(), &key, &c, opened.as_file()).map_err(|_| "open").unwrap();
            assert!(std::fs::read(opened.path()).unwrap() == data, "staged {staged}: opened on the device");
            // A byte changed in block 20: not authentic, named.
            let at = l.sealed_offset(20) + 5;
            sealed.as_file().write_all_at(&[file[at as usize] ^ 1], at).unwrap();
            match open(&mut dev, sealed.as_file(), &key, &c, opened.as_file()) {
                Err(PassFailure::NotAuthentic(why)) => assert!(why.contains("block 20 ") && why.contains("confirmed on the host"), "{why}"),
                _ => panic!("staged {staged}: a tampered block opened"),
            }
            // A device that calls a sound block not authentic has failed: the host opens it.
            sealed.as_file().write_all_at(&file[at as usize..at as usize + 1], at).unwrap();
            let mut liar = crate::device_job::testing::Accuses { inner: cpu_device(staged, dev.memory().len()), kind: FunctionKind::AeadOpenBlock, nth: 3, seen: 0 };
            match open(&mut liar, sealed.as_file(), &key, &c, opened.as_file()) {
                Err(PassFailure::Device(why)) => assert!(why.contains("called block") && why.contains("opens on the host CPU"), "{why}"),
                Err(e) => panic!("staged {staged}: {}", match e { PassFailure::NotAuthentic(w) | PassFailure::Device(w) | PassFailure::Source(w) => w, PassFailure::Target(e) => e.to_string() }),
                Ok(_) => panic!("staged {staged}: the accusation went unnoticed"),
            }
        }
    }
}
