//! `peerpath ec encode --engine emulated`: erasure coding on an emulated
//! CSP, its payload never in the host process's memory. Each stripe is
//! read from the source by the kernel straight into the device's memory
//! (`pread`, O_DIRECT where the file system takes it), the device computes
//! the parity (`Function::EcEncode`, the same ISA-L code as the CPU path)
//! and every unit's CRC-32 (`Function::Crc32`: only checksums come back),
//! and the shards are written from the device's memory (`pwrite`, O_DIRECT
//! where taken). The host orchestrates: one stripe at a time, in order.
//! A device that fails mid-job fails the job (nothing is kept); it is not
//! handed over to the CPU half-way.

use crate::device_job;
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

/// Starts an emulated CSP with room for one stripe and its parity.
pub(crate) fn start(k: usize, m: usize, unit: usize) -> Result<EmulatedCsp, DeviceFailure> {
    if k + m > u8::MAX as usize {
        return Err(DeviceFailure::NotStarted(format!("the device's command holds at most 255 shards, not {}", k + m)));
    }
    device_job::spawn("ec", (k + m) * unit, (k + m + 2).next_power_of_two().max(8) as u32, 2, FunctionKind::EcEncode).map_err(DeviceFailure::NotStarted)
}

fn run(dev: &mut EmulatedCsp, requests: Vec<Request>) -> Result<Vec<peerpath_device::Completion>, DeviceFailure> {
    device_job::run_all(dev, requests).map_err(DeviceFailure::Failed)
}

/// Encodes `size` bytes of `src` in stripes of `k` units of `unit` bytes
/// (a multiple of 4 KiB) into `targets` (k data then m parity shards).
pub(crate) fn encode(dev: &mut EmulatedCsp, src: &File, size: u64, k: usize, m: usize, unit: usize, targets: &[&File]) -> Result<DevicePass, DeviceFailure> {
    let src_direct = device_job::is_direct(src);
    let (input, output) = (DeviceRange::new(0, (k * unit) as u64), DeviceRange::new((k * unit) as u64, (m * unit) as u64));
    let memory = dev.memory();
    let (in_ptr, out_ptr) = match (memory.io_ptr(input), memory.io_ptr(output)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(DeviceFailure::NotStarted("the device's memory is not mapped into this process for I/O".into())),
    };
    let stripes = size.div_ceil((k * unit) as u64).max(1);
    let mut crcs = vec![Vec::with_capacity(stripes as usize); k + m];
    let mut coding = Duration::ZERO;
    for s in 0..stripes {
        // Read the stripe into device memory; a short last stripe is padded with zeros by the device.
        let at = s * (k * unit) as u64;
        let want = ((size - at.min(size)) as usize).min(k * unit);
        // SAFETY: the input range holds k units (multiples of 4 KiB when direct) of the
        // device's mapped memory, which no command uses now.
        unsafe { device_job::read_into(src, at, want, in_ptr) }.map_err(DeviceFailure::Failed)?;
        let got = want;
        let mut requests = Vec::new();
        if got < k * unit {
            requests.push(Request::fill(0, 0, DeviceRange::new(got as u64, (k * unit - got) as u64)));
            run(dev, std::mem::take(&mut requests))?;
        }
        let t = Instant::now();
        run(dev, vec![Request::ec_encode(1, k as u8, m as u8, input, output)])?;
        coding += t.elapsed();
        // Every unit's CRC-32, computed where the unit is.
        let units: Vec<DeviceRange> = (0..k + m).map(|i| DeviceRange::new((i * unit) as u64, unit as u64)).collect();
        let done = run(dev, units.iter().enumerate().map(|(i, r)| Request::crc32(i as u64, &[*r])).collect())?;
        for (i, c) in done.iter().enumerate() {
            crcs[i].push(c.input_crc32);
        }
        // Write each unit from device memory to its shard.
        for (i, f) in targets.iter().enumerate() {
            // SAFETY: units lie inside the device memory's mapping (data: input range,
            // parity: output range, contiguous); the kernel only reads them, and no
            // command writes them until the next stripe.
            let ptr = unsafe { if i < k { in_ptr.add(i * unit) } else { out_ptr.add((i - k) * unit) } };
            // SAFETY: as above: the unit's bytes, unwritten until the next stripe.
            unsafe { device_job::write_from_or_say(ptr, unit, f, s * unit as u64) }.map_err(|e| DeviceFailure::Failed(format!("a shard: {e}")))?;
        }
    }
    let direct = device_job::moved;
    let targets_direct = targets.iter().all(|f| device_job::is_direct(f));
    let path = format!(
        "stripes read {} into the emulated CSP's memory, parity and CRC-32s computed there, shards written {} from it: the host process handled no payload byte",
        direct(src_direct),
        direct(targets_direct)
    );
    Ok(DevicePass { crcs, coding, path })
}
