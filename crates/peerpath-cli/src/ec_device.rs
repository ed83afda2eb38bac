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
//! A device that fails mid-job fails the job (nothing is kept); it is not
//! handed over to the CPU half-way.

use crate::device_job::{self, SLOTS};
use peerpath_device::{Device, DeviceRange, EmulatedCsp, FunctionKind, Request};
use std::fs::File;
use std::time::{Duration, Instant};

/// What the device pass did.
pub(crate) struct DevicePass {
    /// Per shard, the CRC-32 of each of its units.
    pub crcs: Vec<Vec<u32>>,
    /// Time the job waited for the device's parity commands.
    pub coding: Duration,
    /// What moved where, in words, for the summary.
    pub path: String,
}

/// Why the device pass did not run or did not finish.
pub(crate) enum DeviceFailure {
    /// The device did not start or cannot run the function: the CPU may take over.
    NotStarted(String),
    /// It failed after writing began: the job fails.
    Failed(String),
}

/// Starts an emulated CSP with room for [`SLOTS`] stripes and their parity.
pub(crate) fn start(k: usize, m: usize, unit: usize) -> Result<EmulatedCsp, DeviceFailure> {
    if k + m > u8::MAX as usize {
        return Err(DeviceFailure::NotStarted(format!("the device's command holds at most 255 shards, not {}", k + m)));
    }
    device_job::spawn("ec", SLOTS * (k + m) * unit, (k + m + 2).next_power_of_two().max(8) as u32, 2, FunctionKind::EcEncode).map_err(DeviceFailure::NotStarted)
}

fn run(dev: &mut EmulatedCsp, requests: Vec<Request>) -> Result<Vec<peerpath_device::Completion>, DeviceFailure> {
    device_job::run_all(dev, requests).map_err(DeviceFailure::Failed)
}

/// Encodes `size` bytes of `src` in stripes of `k` units of `unit` bytes
/// (a multiple of 4 KiB) into `targets` (k data then m parity shards).
pub(crate) fn encode(dev: &mut EmulatedCsp, src: &File, size: u64, k: usize, m: usize, unit: usize, targets: &[&File]) -> Result<DevicePass, DeviceFailure> {
    let src_direct = device_job::is_direct(src);
    let stripe = (k + m) * unit;
    // Slot b: k data units, then m parity units, back to back.
    let unit_range = |b: usize, i: usize| DeviceRange::new((b * stripe + i * unit) as u64, unit as u64);
    let input = |b: usize| DeviceRange::new((b * stripe) as u64, (k * unit) as u64);
    let output = |b: usize| DeviceRange::new((b * stripe + k * unit) as u64, (m * unit) as u64);
    let memory = dev.memory();
    let mut slots = [0usize; SLOTS];
    for (b, at) in slots.iter_mut().enumerate() {
        *at = match memory.io_ptr(DeviceRange::new((b * stripe) as u64, stripe as u64)) {
            Some(p) => p as usize,
            None => return Err(DeviceFailure::NotStarted("the device's memory is not mapped into this process for I/O".into())),
        };
    }
    let stripes = size.div_ceil((k * unit) as u64).max(1);
    let slot_of = |s: u64| (s % SLOTS as u64) as usize;
    // Stripe s's source bytes (a short last stripe: the device pads it with zeros).
    let want = |s: u64| ((size - (s * (k * unit) as u64).min(size)) as usize).min(k * unit);
    let read = |s: u64| -> Result<(), DeviceFailure> {
        // SAFETY: slot s % SLOTS holds k units (multiples of 4 KiB when direct) of the device's
        // mapped memory; in this step no command uses it and no write reads it (the device
        // works on the slot after it, the writes on the one before).
        unsafe { device_job::read_into(src, s * (k * unit) as u64, want(s), slots[slot_of(s)] as *mut u8) }.map_err(DeviceFailure::Failed)
    };
    // A stripe's units are written side by side, one thread each: an O_DIRECT write
    // returns when its DMA is done, and one after the other they wait k + m times.
    let write = |s: u64| -> Result<(), DeviceFailure> {
        let write_unit = |i: usize, f: &File| {
            // SAFETY: unit i of slot s % SLOTS, inside the device's mapped memory; the kernel only
            // reads it, and in this step no command writes it and no read fills it.
            let ptr = unsafe { (slots[slot_of(s)] as *const u8).add(i * unit) };
            // SAFETY: as above.
            unsafe { device_job::write_from_or_say(ptr, unit, f, s * unit as u64) }.map_err(|e| DeviceFailure::Failed(format!("a shard: {e}")))
        };
        std::thread::scope(|scope| {
            let others: Vec<_> = targets.iter().enumerate().skip(1).map(|(i, f)| scope.spawn(move || write_unit(i, f))).collect();
            let first = write_unit(0, targets[0]);
            others.into_iter().map(|h| h.join().expect("a shard's write thread panicked")).fold(first, Result::and)
        })
    };
    let mut coding = Duration::ZERO;
    let coded = device_job::three_slots(stripes, read, |s| {
        let b = slot_of(s);
        let got = want(s);
        if got < k * unit {
            run(dev, vec![Request::fill(0, 0, DeviceRange::new((b * stripe + got) as u64, (k * unit - got) as u64))])?;
        }
        let t = Instant::now();
        run(dev, vec![Request::ec_encode(1, k as u8, m as u8, input(b), output(b))])?;
        coding += t.elapsed();
        // Every unit's CRC-32, computed where the unit is.
        let done = run(dev, (0..k + m).map(|i| Request::crc32(i as u64, &[unit_range(b, i)])).collect())?;
        Ok(done.iter().map(|c| c.input_crc32).collect::<Vec<u32>>())
    }, write)?;
    // Per shard, its units' CRC-32s in stripe order.
    let crcs = (0..k + m).map(|i| coded.iter().map(|stripe| stripe[i]).collect()).collect();
    let direct = device_job::moved;
    let targets_direct = targets.iter().all(|f| device_job::is_direct(f));
    let path = format!(
        "stripes read {} into the emulated CSP's memory ({SLOTS} at once: one read, one coded, one written), parity and CRC-32s computed there, shards written {} from it: the host process handled no payload byte",
        direct(src_direct),
        direct(targets_direct)
    );
    Ok(DevicePass { crcs, coding, path })
}
