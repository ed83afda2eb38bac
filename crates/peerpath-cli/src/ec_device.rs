//! `peerpath ec encode --engine emulated`: erasure coding on an emulated
//! CSP, its payload never in the host process's memory. Each stripe is
//! read from the source by the kernel straight into the device's memory
//! (`pread`, O_DIRECT where the file system takes it), the device computes
//! the parity (`Function::EcEncode`, the same ISA-L code as the CPU path)
//! and every unit's CRC-32 (`Function::Crc32`: only checksums come back),
//! and the shards are written from the device's memory (`pwrite`, O_DIRECT
//! where taken). The host orchestrates three stripes at once, each in its
//! own slot of the device's memory: while the device codes stripe s, the
//! kernel reads stripe s + 1 into the next slot and writes stripe s - 1's
//! shards from the one before (they never share a slot).
//!
//! `ec verify`, `repair` and `decode --engine emulated` work the same way
//! on an existing set ([`SetLayout`]): units read into the device's memory
//! and checked there against the manifest's CRC-32s, lost units rebuilt
//! there (`Function::EcReconstruct`) and checked again, and the results
//! written from it.
//!
//! Nothing is published (the set, rebuilt shards, the output) until the
//! whole job has succeeded, so a device that fails mid-job ([`Stop::Device`])
//! hands the job to the CPU from the start; a source or target that fails
//! ([`Stop::Job`]) fails it as on the CPU.

use crate::chain_device::Stop;
use crate::device_job::{self, SLOTS};
use crate::ec::{self, Manifest};
use peerpath_device::{Device, DeviceRange, Function, FunctionKind, Request};
use peerpath_runtime::JobError;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the device pass did.
pub(crate) struct DevicePass {
    /// Per shard, the CRC-32 of each of its units.
    pub crcs: Vec<Vec<u32>>,
    /// Time the device's workers spent coding (its statistics; where it
    /// keeps none, the time the job waited for its parity commands).
    pub coding: Duration,
    /// What moved where, in words, for the summary.
    pub path: String,
}

/// Whether a code of `k` + `m` shards fits a device command (a byte per shard index).
fn fits_a_command(k: usize, m: usize) -> Result<(), String> {
    if k + m > u8::MAX as usize {
        return Err(format!("the device's command holds at most 255 shards, not {}", k + m));
    }
    Ok(())
}

/// Starts an emulated CSP with room for [`SLOTS`] stripes and their parity,
/// with seeded faults where asked.
pub(crate) fn start(k: usize, m: usize, unit: usize, faults: Option<peerpath_device::FaultConfig>, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    fits_a_command(k, m)?;
    let dev = device_job::spawn("ec", SLOTS * (k + m) * unit, (k + m + 2).next_power_of_two().max(8) as u32, 2, FunctionKind::EcEncode, timeout)?;
    Ok(device_job::with_faults(dev, faults))
}

/// Opens GPU `ordinal` with peerpath's coding kernels (no nvCOMP), with
/// room for [`SLOTS`] stripes in its memory and in its pinned host window.
pub(crate) fn start_gpu(ordinal: usize, k: usize, m: usize, unit: usize, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    fits_a_command(k, m)?;
    open_gpu(ordinal, SLOTS * (k + m) * unit, k + m, timeout)
}

/// GPU `ordinal` with `bytes` of its memory and of pinned window, coding only,
/// with room in its queue for a command per unit of `units`.
fn open_gpu(ordinal: usize, bytes: usize, units: usize, timeout: Option<Duration>) -> Result<Box<dyn Device>, String> {
    let config = peerpath_gpu::GpuDeviceConfig { coding: true, ..peerpath_gpu::GpuDeviceConfig::staged(ordinal, bytes, (units + 2).next_power_of_two().max(8)) };
    device_job::open_gpu(device_job::timed(config, timeout))
}

/// Encodes `size` bytes of `src` in stripes of `k` units of `unit` bytes
/// (a multiple of 4 KiB) into `targets` (k data then m parity shards).
///
/// On a device whose whole memory the kernel reaches by DMA (an emulated
/// CSP's), each stripe is read into its slot there, coded and checked in
/// place, and written from it. On a staged device (a GPU's memory, which
/// storage reaches only through a host window), the slot is in the window:
/// the stripe is read into it, copied to the device's own memory by the
/// device (`Copy`), coded and checked there, and the parity copied back
/// beside the data to be written: the host handles no payload byte either way.
pub(crate) fn encode(dev: &mut dyn Device, (src, source): (&File, &std::path::Path), size: u64, k: usize, m: usize, unit: usize, (targets, paths): (&[&File], &[std::path::PathBuf])) -> Result<DevicePass, Stop> {
    let src_direct = device_job::is_direct(src);
    let stripe = (k + m) * unit;
    let Some((window_at, _)) = dev.memory().dma_window() else {
        return Err("the device's memory is not mapped into this process for I/O".into());
    };
    let staged = window_at > 0;
    let copied_before = dev.memory().host_copied_bytes();
    // Slot b, where the I/O goes (its `io` ranges) and where the device computes (its
    // `compute` ranges; the same place unless staged): k data units, then m parity units.
    let io = |b: usize, from: usize, units: usize| DeviceRange::new(window_at + (b * stripe + from * unit) as u64, (units * unit) as u64);
    let compute = |b: usize, from: usize, units: usize| if staged { DeviceRange::new((b * stripe + from * unit) as u64, (units * unit) as u64) } else { io(b, from, units) };
    let memory = dev.memory();
    let mut slots = [0usize; SLOTS];
    for (b, at) in slots.iter_mut().enumerate() {
        *at = match memory.io_ptr(io(b, 0, k + m)) {
            Some(p) => p as usize,
            None => return Err("the device's memory is not mapped into this process for I/O".into()),
        };
    }
    if staged && !compute(SLOTS - 1, 0, k + m).fits(window_at) {
        return Err(format!("the device's own memory ({} MiB) cannot hold {SLOTS} stripes of {} MiB", window_at >> 20, stripe >> 20).into());
    }
    let stripes = size.div_ceil((k * unit) as u64).max(1);
    let slot_of = |s: u64| (s % SLOTS as u64) as usize;
    // Stripe s's source bytes (a short last stripe: padded with zeros).
    let want = |s: u64| ((size - (s * (k * unit) as u64).min(size)) as usize).min(k * unit);
    let read = |s: u64| -> Result<(), Stop> {
        let at = slots[slot_of(s)] as *mut u8;
        // SAFETY: slot s % SLOTS holds k units (multiples of 4 KiB when direct) of the device's
        // mapped memory; in this step no command uses it and no write reads it (the device
        // works on the slot after it, the writes on the one before).
        unsafe { device_job::read_into(src, s * (k * unit) as u64, want(s), at) }.map_err(|detail| Stop::Job(JobError::SourceIo { path: source.to_path_buf(), detail }))?;
        if staged && want(s) < k * unit {
            // The window is host memory: its padding is zeroed here (no payload byte).
            // SAFETY: the rest of the slot's k units, in the same step as the read above.
            unsafe { std::ptr::write_bytes(at.add(want(s)), 0, k * unit - want(s)) };
        }
        Ok(())
    };
    // A stripe's units are written side by side (write_side_by_side).
    let base = slots[0];
    let write = |s: u64| -> Result<(), Stop> {
        let writes: Vec<(u64, &File, u64)> = targets.iter().enumerate().map(|(i, &f)| ((slots[slot_of(s)] - base + i * unit) as u64, f, s * unit as u64)).collect();
        write_side_by_side(base, unit, &writes).map_err(|(w, source)| Stop::Job(JobError::TargetIo { path: paths[w].clone(), source }))
    };
    let mut coding = Duration::ZERO;
    let coded = device_job::three_slots(stripes, read, |s| {
        let b = slot_of(s);
        let got = want(s);
        if staged {
            device_job::run_all(dev, vec![Request::copy(0, &[io(b, 0, k)], compute(b, 0, k))])?;
        } else if got < k * unit {
            device_job::run_all(dev, vec![Request::fill(0, 0, DeviceRange::new(io(b, 0, k).offset + got as u64, (k * unit - got) as u64))])?;
        }
        let t = Instant::now();
        device_job::run_all(dev, vec![Request::ec_encode(1, k as u8, m as u8, compute(b, 0, k), compute(b, k, m))])?;
        coding += t.elapsed();
        // Every unit's CRC-32, computed where the unit is (and, staged, the parity back to the window).
        let mut commands: Vec<Request> = (0..k + m).map(|i| Request::crc32(i as u64, &[compute(b, i, 1)])).collect();
        if staged {
            commands.push(Request::copy((k + m) as u64, &[compute(b, k, m)], io(b, k, m)));
        }
        let done = device_job::run_all(dev, commands)?;
        Ok(done.iter().take(k + m).map(|c| c.input_crc32).collect::<Vec<u32>>())
    }, write)?;
    let coding = device_job::busy(dev, FunctionKind::EcEncode).unwrap_or(coding);
    // Per shard, its units' CRC-32s in stripe order.
    let crcs = (0..k + m).map(|i| coded.iter().map(|stripe| stripe[i]).collect()).collect();
    let direct = device_job::moved;
    let targets_direct = targets.iter().all(|f| device_job::is_direct(f));
    let copies = device_job::host_copies(dev.memory().host_copied_bytes() - copied_before, "none: the stripes' padding is zeroed in place", size);
    let path = if staged {
        format!(
            "stripes read {} into the device's pinned host window ({SLOTS} at once: one read, one coded, one written), copied to its own memory by the device, parity and CRC-32s computed there, parity copied back beside the data, shards written {} from the window; {copies}",
            direct(src_direct),
            direct(targets_direct)
        )
    } else {
        format!(
            "stripes read {} into the emulated CSP's memory ({SLOTS} at once: one read, one coded, one written), parity and CRC-32s computed there, shards written {} from it; {copies}",
            direct(src_direct),
            direct(targets_direct)
        )
    };
    Ok(DevicePass { crcs, coding, path })
}

/// Where a set's stripes lie in the memory of a device that checks,
/// rebuilds and restores them (`ec verify`, `repair` and `decode` with
/// `--engine emulated` or `gpu`): [`SLOTS`] slots, each holding a stripe's `n` units
/// (each at a 4 KiB boundary, for O_DIRECT), the `k` survivors gathered
/// back to back (what `EcReconstruct` takes), up to `m` rebuilt units, and
/// the index list that says which is which.
///
/// On a staged device (a GPU) the layout is twice over: the commands' ranges
/// in its own memory, and the same ranges from `window_at` on in its host
/// window, where storage reads and writes. Units read into the window are
/// copied to its own memory when checked ([`check_units`]); rebuilt units
/// are copied back to the window to be written ([`rebuild_units`]).
pub(crate) struct SetLayout {
    k: usize,
    m: usize,
    unit: usize,
    /// A unit's room: the unit rounded up to 4 KiB.
    room: u64,
    slot: u64,
    /// Where the window's copy of the layout starts (0: the device's memory is all mapped).
    window_at: u64,
}

impl SetLayout {
    pub(crate) fn new(k: usize, m: usize, unit: usize) -> SetLayout {
        let room = (unit as u64).next_multiple_of(4096);
        let gathered = ((k * unit) as u64).next_multiple_of(4096);
        let rebuilt = ((m * unit) as u64).next_multiple_of(4096);
        SetLayout { k, m, unit, room, slot: (k + m) as u64 * room + gathered + rebuilt + 4096, window_at: 0 }
    }

    fn staged(&self) -> bool {
        self.window_at > 0
    }

    /// The window's copy of `r` (where storage reads and writes it).
    fn io(&self, r: DeviceRange) -> DeviceRange {
        DeviceRange::new(self.window_at + r.offset, r.len)
    }

    fn bytes(&self) -> u64 {
        SLOTS as u64 * self.slot
    }

    /// Stripe `s`'s slot.
    fn slot_of(&self, s: u64) -> u64 {
        (s % SLOTS as u64) * self.slot
    }

    /// Unit `i` of stripe `s`.
    fn unit(&self, s: u64, i: usize) -> DeviceRange {
        DeviceRange::new(self.slot_of(s) + i as u64 * self.room, self.unit as u64)
    }

    fn gathered(&self, s: u64) -> DeviceRange {
        DeviceRange::new(self.slot_of(s) + (self.k + self.m) as u64 * self.room, (self.k * self.unit) as u64)
    }

    /// The first `count` rebuilt units, back to back.
    fn rebuilt(&self, s: u64, count: usize) -> DeviceRange {
        let gathered = self.gathered(s);
        DeviceRange::new(gathered.offset + gathered.len.next_multiple_of(4096), (count * self.unit) as u64)
    }

    fn indices(&self, s: u64) -> DeviceRange {
        DeviceRange::new(self.slot_of(s) + self.slot - 4096, (self.k + self.m) as u64)
    }
}

/// A device that checks, rebuilds and restores sets, and where their stripes lie in its memory.
pub(crate) type SetDevice = (Box<dyn Device>, SetLayout);

/// The smallest unit of a set a device checks, rebuilds and restores: each unit is a room of
/// 4 KiB (at least) in its memory and a command of its own (its CRC-32 is the manifest's
/// check), and each stripe a step of the pipeline, so smaller units only add commands and
/// steps: a 4 MiB file in RS(8, 4) of 1-byte units (524,288 stripes, 6.3 million commands) ran
/// for minutes on an emulated CSP where the host CPU checks it in seconds.
pub(crate) const MIN_SET_UNIT_BYTES: usize = 4096;

/// Starts an emulated CSP for a set of `k` + `m` units of `unit` bytes
/// (see [`SetLayout`]), with seeded faults where asked; or why it cannot.
pub(crate) fn start_set(k: usize, m: usize, unit: usize, faults: Option<peerpath_device::FaultConfig>, timeout: Option<Duration>) -> Result<SetDevice, String> {
    fits_a_command(k, m)?;
    let l = SetLayout::new(k, m, unit);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4) as u32;
    let dev = device_job::spawn("ecset", l.bytes() as usize, (k + m + 2).next_power_of_two().max(8) as u32, workers, FunctionKind::EcReconstruct, timeout)?;
    for need in [FunctionKind::Copy, FunctionKind::Crc32] {
        if !dev.functions().contains(need) {
            return Err(format!("the emulated CSP does not offer {}", need.name()));
        }
    }
    Ok((device_job::with_faults(dev, faults), l))
}

/// Opens GPU `ordinal` with peerpath's coding kernels for a set of `k` + `m`
/// units of `unit` bytes: the layout in its memory and again in its pinned window.
pub(crate) fn start_set_gpu(ordinal: usize, k: usize, m: usize, unit: usize, timeout: Option<Duration>) -> Result<SetDevice, String> {
    fits_a_command(k, m)?;
    let mut l = SetLayout::new(k, m, unit);
    let dev = open_gpu(ordinal, l.bytes() as usize, k + m, timeout)?;
    l.window_at = dev.memory().dma_window().map_or(0, |w| w.0);
    if l.window_at < l.bytes() {
        return Err("the GPU device's memory is not staged as asked".into());
    }
    Ok((dev, l))
}

/// A set's shards opened for the device's reads: O_DIRECT where the unit
/// size allows it and the file system takes it.
pub(crate) fn open_shards(dir: &std::path::Path, m: &Manifest) -> Vec<Option<File>> {
    let (k, p, unit, _, _) = m.shape();
    (0..k + p).map(|i| crate::ec::shard_file(&m.shard_path(dir, i)).and_then(|p| crate::ec::open_shard(p, unit.is_multiple_of(4096)))).collect()
}

/// The set's memory as the host addresses it (for the kernel's reads and
/// writes): the device's memory, or its window's copy of the layout; a
/// command's range `r` is at `base + r.offset` either way.
fn base(dev: &dyn Device, l: &SetLayout) -> Result<usize, String> {
    dev.memory().io_ptr(DeviceRange::new(l.window_at, l.bytes())).map(|p| p as usize).ok_or_else(|| "the device's memory is not mapped into this process for I/O".into())
}

/// On a staged device, copies `ranges` from the window to the device's own
/// memory (`to_device`) or back, all side by side; nothing on a mapped one.
fn stage((dev, commands): (&mut dyn Device, &mut device_job::Commands), l: &SetLayout, ranges: &[DeviceRange], to_device: bool) -> Result<(), String> {
    if !l.staged() {
        return Ok(());
    }
    let tags = ranges
        .iter()
        .map(|&r| {
            let (from, to) = if to_device { (l.io(r), r) } else { (r, l.io(r)) };
            commands.submit(dev, Function::Copy, vec![from], to)
        })
        .collect::<Result<Vec<u64>, String>>()?;
    for tag in tags {
        commands.wait(dev, tag)?;
    }
    Ok(())
}

/// Reads unit `i` of stripe `s` from `shard` into its place in the device's
/// memory (the kernel writes it there); false if the shard is missing or short.
fn read_unit(base: usize, l: &SetLayout, shard: Option<&File>, s: u64, i: usize) -> bool {
    let Some(f) = shard else { return false };
    let r = l.unit(s, i);
    // SAFETY: the unit's room (a multiple of 4 KiB) lies in the device's mapped
    // memory (`base` maps all of it); in this step only this read uses it.
    unsafe { device_job::read_into(f, s * l.unit as u64, l.unit, (base + r.offset as usize) as *mut u8) }.is_ok()
}

/// Units `which` of stripe `s`, checked on the device: those whose CRC-32
/// is the manifest's (only the checksums come back to the host).
fn check_units((dev, commands): (&mut dyn Device, &mut device_job::Commands), l: &SetLayout, m: &Manifest, s: u64, which: &[usize]) -> Result<Vec<usize>, String> {
    stage((dev, commands), l, &which.iter().map(|&i| l.unit(s, i)).collect::<Vec<_>>(), true)?;
    let tags = which.iter().map(|&i| commands.submit(dev, Function::Crc32, vec![l.unit(s, i)], DeviceRange::EMPTY)).collect::<Result<Vec<u64>, String>>()?;
    let mut good = Vec::with_capacity(which.len());
    for (&i, tag) in which.iter().zip(tags) {
        if commands.wait(dev, tag)?.input_crc32 == m.crc(i, s) {
            good.push(i);
        }
    }
    Ok(good)
}

/// Per stripe, which units are missing, short or fail their CRC-32: every
/// unit read into the device's memory and checked there (see
/// [`check_units`]), a stripe read while the one before is checked.
pub(crate) fn survey(dev: &mut dyn Device, l: &SetLayout, m: &Manifest, shards: &[Option<File>]) -> Result<Vec<Vec<usize>>, String> {
    let (_, _, _, stripes, _) = m.shape();
    let n = shards.len();
    let base = base(dev, l)?;
    let read: [std::sync::Mutex<Vec<usize>>; SLOTS] = Default::default();
    let mut commands = device_job::Commands::default();
    device_job::three_slots(
        stripes,
        |s| {
            *read[(s % SLOTS as u64) as usize].lock().expect("no reader panics holding it") = (0..n).filter(|&i| read_unit(base, l, shards[i].as_ref(), s, i)).collect();
            Ok(())
        },
        |s| {
            let there = std::mem::take(&mut *read[(s % SLOTS as u64) as usize].lock().expect("no reader panics holding it"));
            let good = check_units((dev, &mut commands), l, m, s, &there)?;
            Ok((0..n).filter(|i| !good.contains(i)).collect())
        },
        |_| Ok(()),
    )
}

/// What rebuilding or restoring a set on the device did.
#[derive(Default)]
pub(crate) struct SetPass {
    /// Time the device's workers spent in `EcReconstruct` (its statistics;
    /// where it keeps none, the time the job waited for those commands).
    pub coding: Duration,
    /// Bytes those commands read and wrote (k survivors and the rebuilt units).
    pub coded: u64,
    /// Units rebuilt on the device, and unit bytes read into its memory.
    pub rebuilt: u64,
    pub read_bytes: u64,
}

/// Rebuilds units `missing` of stripe `s` on the device from the first `k`
/// of `good` (their units in place): survivors gathered (`Copy`), the code's
/// inverse applied (`EcReconstruct`), and each rebuilt unit checked against
/// the manifest's CRC-32 there. A rebuilt unit that does not check is the
/// device's fault (its inputs had checked out).
fn rebuild_units((dev, commands): (&mut dyn Device, &mut device_job::Commands), l: &SetLayout, m: &Manifest, s: u64, good: &[usize], missing: &[usize], pass: &mut SetPass) -> Result<(), String> {
    let (k, p, unit, _, _) = m.shape();
    let gathered = l.gathered(s);
    let copies = good[..k].iter().enumerate().map(|(j, &i)| commands.submit(dev, Function::Copy, vec![l.unit(s, i)], DeviceRange::new(gathered.offset + (j * unit) as u64, unit as u64))).collect::<Result<Vec<u64>, String>>()?;
    for tag in copies {
        commands.wait(dev, tag)?;
    }
    let indices: Vec<u8> = good[..k].iter().chain(missing).map(|&i| i as u8).collect();
    // SAFETY: the slot's index range (in the window's copy, staged) holds k + m bytes; no
    // command in flight uses it.
    unsafe { dev.memory().host_write(l.io(l.indices(s)).offset, &indices) };
    stage((dev, commands), l, &[DeviceRange::new(l.indices(s).offset, indices.len() as u64)], true)?;
    let t = Instant::now();
    commands.run(dev, Function::EcReconstruct { data: k as u8, parity: p as u8, wanted: missing.len() as u8 }, vec![gathered, DeviceRange::new(l.indices(s).offset, indices.len() as u64)], l.rebuilt(s, missing.len()))?;
    pass.coding += t.elapsed();
    pass.coded += ((k + missing.len()) * unit) as u64;
    pass.rebuilt += missing.len() as u64;
    let rebuilt = l.rebuilt(s, missing.len());
    for (j, &i) in missing.iter().enumerate() {
        let r = DeviceRange::new(rebuilt.offset + (j * unit) as u64, unit as u64);
        let crc = commands.run(dev, Function::Crc32, vec![r], DeviceRange::EMPTY)?.input_crc32;
        if crc != m.crc(i, s) {
            return Err(format!("the device rebuilt {}'s unit of stripe {s} wrong (its CRC-32 is not the manifest's, from survivors that checked out)", peerpath_runtime::report::quoted_name(&m.shard_label(i))));
        }
    }
    // Staged: the rebuilt units back to the window, where they are written from.
    stage((dev, commands), l, &[rebuilt], false)
}

/// Where unit `i` of stripe `s` is in the device's memory once the stripe is
/// whole: its own place, or among the rebuilt units.
fn unit_after(l: &SetLayout, s: u64, i: usize, missing: &[usize]) -> DeviceRange {
    match missing.iter().position(|&j| j == i) {
        Some(j) => DeviceRange::new(l.rebuilt(s, missing.len()).offset + (j * l.unit) as u64, l.unit as u64),
        None => l.unit(s, i),
    }
}

/// Writes `len` bytes of device memory at each `(offset, file, at)` side
/// by side, a thread each (an O_DIRECT write returns when its DMA is
/// done; one after the other they would wait once each). An error says
/// which write failed (its index in `writes`).
fn write_side_by_side(base: usize, len: usize, writes: &[(u64, &File, u64)]) -> Result<(), (usize, std::io::Error)> {
    let write = |w: usize| {
        let (offset, f, at) = writes[w];
        // SAFETY: `offset` names a unit in the device's mapped memory that, in this
        // step, no command writes and no read fills (the pipeline's slots).
        unsafe { device_job::write_from((base + offset as usize) as *const u8, len, f, at) }.map_err(|e| (w, e))
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..writes.len()).map(|w| scope.spawn(move || write(w))).collect();
        let first = if writes.is_empty() { Ok(()) } else { write(0) };
        others.into_iter().map(|h| h.join().expect("a unit's write thread panicked")).fold(first, Result::and)
    })
}

/// `ec repair` on the device: stripe by stripe, the units it needs (k
/// survivors, and the good units of shards being rewritten) read into the
/// device's memory and checked there (one that no longer checks out changed
/// since the survey: the job fails), the lost ones rebuilt and checked
/// there ([`rebuild_units`]), and every rewritten shard's unit written from
/// it to `outs` (shard index, its new file). A stripe is read while the one
/// before is rebuilt and the one before that written.
pub(crate) fn repair(dev: &mut dyn Device, l: &SetLayout, (dir, m): (&std::path::Path, &Manifest), shards: &[Option<File>], bad: &[Vec<usize>], outs: &[(usize, &File)]) -> Result<SetPass, Stop> {
    let (k, _, unit, stripes, _) = m.shape();
    let n = shards.len();
    let base = base(dev, l)?;
    let plan = |s: u64| {
        let missing = &bad[s as usize];
        let good: Vec<usize> = (0..n).filter(|i| !missing.contains(i)).collect();
        let mut needed: Vec<usize> = good.iter().copied().take(k).chain(outs.iter().map(|o| o.0).filter(|i| !missing.contains(i))).collect();
        needed.sort_unstable();
        needed.dedup();
        (missing, good, needed)
    };
    let mut pass = SetPass::default();
    let read_bytes = AtomicU64::new(0);
    let mut commands = device_job::Commands::default();
    device_job::three_slots(
        stripes,
        |s| {
            for i in plan(s).2 {
                if !read_unit(base, l, shards[i].as_ref(), s, i) {
                    return Err(Stop::Job(ec::changed(dir, m, i, s)));
                }
                read_bytes.fetch_add(unit as u64, Ordering::Relaxed);
            }
            Ok(())
        },
        |s| {
            let (missing, good, needed) = plan(s);
            let checked = check_units((dev, &mut commands), l, m, s, &needed)?;
            if let Some(&i) = needed.iter().find(|i| !checked.contains(i)) {
                return Err(Stop::Job(ec::changed(dir, m, i, s)));
            }
            if !missing.is_empty() {
                rebuild_units((dev, &mut commands), l, m, s, &good, missing, &mut pass)?;
            }
            Ok(())
        },
        |s| {
            let writes: Vec<(u64, &File, u64)> = outs.iter().map(|&(i, f)| (unit_after(l, s, i, &bad[s as usize]).offset, f, s * unit as u64)).collect();
            write_side_by_side(base, unit, &writes).map_err(|(w, source)| Stop::Job(JobError::TargetIo { path: m.shard_path(dir, outs[w].0), source }))
        },
    )?;
    pass.read_bytes = read_bytes.into_inner();
    pass.coding = device_job::busy(dev, FunctionKind::EcReconstruct).unwrap_or(pass.coding);
    Ok(pass)
}

/// `ec decode` on the device: each stripe's data units read into the
/// device's memory and checked there; where one is missing or bad, parity
/// units are read (in order, until k check out) and the lost data units
/// rebuilt and checked there ([`rebuild_units`]); the data is written to
/// `out` from the device's memory, up to the stream's end. A stripe with
/// fewer than k good units stops the job; `Ok(Err(s))` names the first.
pub(crate) fn decode(dev: &mut dyn Device, l: &SetLayout, m: &Manifest, shards: &[Option<File>], out: &File, output: &std::path::Path) -> Result<Result<SetPass, u64>, Stop> {
    let (k, _, unit, stripes, stream_bytes) = m.shape();
    let base = base(dev, l)?;
    let read: [std::sync::Mutex<Vec<usize>>; SLOTS] = Default::default();
    let missing: [std::sync::Mutex<Vec<usize>>; SLOTS] = Default::default();
    let slot = |s: u64| (s % SLOTS as u64) as usize;
    let mut pass = SetPass::default();
    let read_bytes = AtomicU64::new(0);
    let mut commands = device_job::Commands::default();
    let mut lost = None;
    let done = device_job::three_slots(
        stripes,
        |s| {
            let there: Vec<usize> = (0..k).filter(|&i| read_unit(base, l, shards[i].as_ref(), s, i)).collect();
            read_bytes.fetch_add((there.len() * unit) as u64, Ordering::Relaxed);
            *read[slot(s)].lock().expect("no reader panics holding it") = there;
            Ok(())
        },
        |s| {
            let there = std::mem::take(&mut *read[slot(s)].lock().expect("no reader panics holding it"));
            let mut good = check_units((dev, &mut commands), l, m, s, &there)?;
            let gone: Vec<usize> = (0..k).filter(|i| !good.contains(i)).collect();
            for (i, shard) in shards.iter().enumerate().skip(k) {
                if good.len() >= k {
                    break;
                }
                if read_unit(base, l, shard.as_ref(), s, i) {
                    read_bytes.fetch_add(unit as u64, Ordering::Relaxed);
                    good.extend(check_units((dev, &mut commands), l, m, s, &[i])?);
                }
            }
            if good.len() < k {
                // Stops the pipeline; what stopped it is `lost`, not this.
                lost = Some(s);
                return Err(Stop::Device(String::new()));
            }
            if !gone.is_empty() {
                rebuild_units((dev, &mut commands), l, m, s, &good, &gone, &mut pass)?;
            }
            *missing[slot(s)].lock().expect("no worker panics holding it") = gone;
            Ok(())
        },
        |s| {
            let gone = std::mem::take(&mut *missing[slot(s)].lock().expect("no worker panics holding it"));
            for i in 0..k {
                let at = (s * k as u64 + i as u64) * unit as u64;
                let len = (stream_bytes.saturating_sub(at)).min(unit as u64) as usize;
                if len > 0 {
                    write_side_by_side(base, len, &[(unit_after(l, s, i, &gone).offset, out, at)]).map_err(|(_, source)| Stop::Job(JobError::TargetIo { path: output.to_path_buf(), source }))?;
                }
            }
            Ok(())
        },
    );
    if let Some(s) = lost {
        return Ok(Err(s));
    }
    done?;
    pass.read_bytes = read_bytes.into_inner();
    pass.coding = device_job::busy(dev, FunctionKind::EcReconstruct).unwrap_or(pass.coding);
    Ok(Ok(pass))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device_job::testing::{cpu_device, xorshift};
    use peerpath_func::ec::RsCode;

    /// The CPU's set of `data`: each stripe's k units (zeros past the end), then ISA-L's m parity units; per shard, its bytes.
    fn cpu_set(data: &[u8], k: usize, m: usize, unit: usize) -> Vec<Vec<u8>> {
        let code = RsCode::new(k, m).unwrap();
        let mut shards = vec![Vec::new(); k + m];
        for s in 0..data.len().div_ceil(k * unit) {
            let mut units: Vec<Vec<u8>> = (0..k)
                .map(|i| {
                    let from = ((s * k + i) * unit).min(data.len());
                    let mut u = data[from..(from + unit).min(data.len())].to_vec();
                    u.resize(unit, 0);
                    u
                })
                .collect();
            let mut parity = vec![vec![0u8; unit]; m];
            code.encode(&units.iter().map(|u| u.as_slice()).collect::<Vec<_>>(), &mut parity.iter_mut().map(|p| p.as_mut_slice()).collect::<Vec<_>>());
            units.extend(parity);
            units.into_iter().enumerate().for_each(|(i, u)| shards[i].extend(u));
        }
        shards
    }

    /// The encode pass on a device gives ISA-L's shards and their units' CRC-32s,
    /// whether the device computes where storage puts the stripe or in memory of
    /// its own behind a window (the GPU's way: copies in and out by the device).
    #[test]
    fn a_staged_device_encodes_what_isa_l_encodes() {
        let (k, m, unit) = (4usize, 2usize, 8192usize);
        let dir = tempfile::tempdir().unwrap();
        // Two full stripes, a third and a fourth (the last short), as the pipeline's three slots wrap.
        let size = 3 * k * unit + 5000;
        let data = xorshift(size, 7);
        let source = dir.path().join("src");
        std::fs::write(&source, &data).unwrap();
        let want = cpu_set(&data, k, m, unit);
        for staged in [true, false] {
            let mut dev = cpu_device(staged, SLOTS * (k + m) * unit);
            let src = File::open(&source).unwrap();
            let paths: Vec<_> = (0..k + m).map(|i| dir.path().join(format!("shard{i}.{staged}"))).collect();
            let files: Vec<File> = paths.iter().map(|p| File::options().read(true).write(true).create_new(true).open(p).unwrap()).collect();
            let targets: Vec<&File> = files.iter().collect();
            let pass = match encode(&mut dev, (&src, &source), size as u64, k, m, unit, (&targets, &paths)) {
                Ok(p) => p,
                Err(Stop::Job(e)) => panic!("staged {staged}: {e}"),
                Err(Stop::Device(why) | Stop::Verdict(why)) => panic!("staged {staged}: {why}"),
            };
            for i in 0..k + m {
                let got = std::fs::read(&paths[i]).unwrap();
                assert!(got == want[i], "staged {staged}: shard {i} differs from ISA-L's");
                let crcs: Vec<u32> = want[i].chunks(unit).map(crc32fast::hash).collect();
                assert_eq!(pass.crcs[i], crcs, "staged {staged}: shard {i}'s CRC-32s");
            }
            assert!(pass.path.contains(if staged { "copied to its own memory by the device" } else { "into the emulated CSP's memory" }), "{}", pass.path);
        }
    }

    /// A set's check, repair and restore on a device give the CPU's verdicts,
    /// shards and bytes, whether the units are read where the device computes
    /// or into its window and copied to its own memory and back (the GPU's way).
    #[test]
    fn a_staged_device_checks_repairs_and_restores_a_set() {
        // Units of whole pages (read by O_DIRECT) and of 1000 bytes (each in a room of 4 KiB).
        for (unit, staged) in [(8192usize, true), (8192, false), (1000, true)] {
            check_repair_restore(unit, staged);
        }
    }

    /// RS(4,2) with `unit`-byte units, shard 1 lost and a unit of shard 4 corrupt: surveyed,
    /// repaired and decoded on a CPU device with `staged` memory or mapped.
    fn check_repair_restore(unit: usize, staged: bool) {
        let (k, m) = (4usize, 2usize);
        let size = 3 * k * unit + 5000;
        let data = xorshift(size, 3);
        let shards = cpu_set(&data, k, m, unit);
        let stripes = size.div_ceil(k * unit);
        let dir = tempfile::tempdir().unwrap();
        let set = dir.path();
        let crcs = shards.iter().map(|sh| sh.chunks(unit).map(crc32fast::hash).collect()).collect();
        let manifest = Manifest::new("src", size as u64, (k, m, unit), stripes as u64, crcs);
        for (i, sh) in shards.iter().enumerate() {
            std::fs::write(manifest.shard_path(set, i), sh).unwrap();
        }
        // Shard 1 lost; shard 4's unit of stripe 2 corrupt.
        std::fs::remove_file(manifest.shard_path(set, 1)).unwrap();
        let mut four = shards[4].clone();
        four[2 * unit + 99] ^= 0x40;
        std::fs::write(manifest.shard_path(set, 4), &four).unwrap();
        let mut l = SetLayout::new(k, m, unit);
        let mut dev = cpu_device(staged, l.bytes() as usize);
        if staged {
            l.window_at = dev.memory().dma_window().unwrap().0;
        }
        let what = format!("unit {unit}, staged {staged}");
        let files = open_shards(set, &manifest);
        let bad = survey(&mut dev, &l, &manifest, &files).unwrap();
        let want: Vec<Vec<usize>> = (0..stripes).map(|s| if s == 2 { vec![1, 4] } else { vec![1] }).collect();
        assert_eq!(bad, want, "{what}: the survey's verdicts");
        // Repair into new files for shards 1 and 4: the CPU's shards.
        let outs: Vec<(usize, File)> = [1, 4].iter().map(|&i| (i, File::options().read(true).write(true).create_new(true).open(set.join(format!("new{i}"))).unwrap())).collect();
        let to: Vec<(usize, &File)> = outs.iter().map(|(i, f)| (*i, f)).collect();
        let pass = repair(&mut dev, &l, (set, &manifest), &files, &bad, &to).unwrap_or_else(|_| panic!("{what}: repair"));
        assert_eq!(pass.rebuilt, stripes as u64 + 1, "{what}: one unit a stripe, two in stripe 2");
        for i in [1, 4] {
            assert!(std::fs::read(set.join(format!("new{i}"))).unwrap() == shards[i], "{what}: shard {i} repaired");
        }
        // Restore from the damaged set: the source.
        let out = File::options().read(true).write(true).create_new(true).open(set.join("back")).unwrap();
        match decode(&mut dev, &l, &manifest, &files, &out, &set.join("back")) {
            Ok(Ok(_)) => {}
            _ => panic!("{what}: decode"),
        }
        assert!(std::fs::read(set.join("back")).unwrap() == data, "{what}: the restored source");
    }
}
