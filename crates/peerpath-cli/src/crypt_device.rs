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
//! cache, as they sit at unaligned offsets). One block at a time, in order.
//! A device that fails, or a block that is not authentic, fails the job
//! (nothing is kept).

use crate::device_job;
use peerpath_device::{Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request};
use peerpath_func::crypt::{device_key, FileCipher, Key, DEVICE_KEY_BYTES, TAG_BYTES};
use std::fs::File;

const ALIGN: usize = 4096;

/// The device's memory: a plaintext block, its sealed form (each with room
/// for the tag: a block is opened in place in its output), the material.
fn layout(block: usize) -> (DeviceRange, DeviceRange, DeviceRange) {
    let plain = DeviceRange::new(0, (block + TAG_BYTES).next_multiple_of(ALIGN) as u64);
    let sealed = DeviceRange::new(plain.len, (block + TAG_BYTES).next_multiple_of(ALIGN) as u64);
    let material = DeviceRange::new(plain.len + sealed.len, DEVICE_KEY_BYTES as u64);
    (plain, sealed, material)
}

/// Starts an emulated CSP for blocks of `block` bytes: to seal, whole 4 KiB
/// pages (so each block's read lands aligned for O_DIRECT).
pub(crate) fn start(block: usize, sealing: bool) -> Result<EmulatedCsp, String> {
    if sealing && !block.is_multiple_of(ALIGN) {
        return Err(format!("the device reads whole 4 KiB pages by DMA: --block-size {block} is not a multiple of 4K"));
    }
    let (_, _, material) = layout(block);
    let need = if sealing { FunctionKind::AeadSealBlock } else { FunctionKind::AeadOpenBlock };
    device_job::spawn("enc", (material.offset + ALIGN as u64) as usize, 8, 1, need)
}

/// Why opening stopped: a block that is not authentic, or anything else.
pub(crate) enum OpenFailure {
    NotAuthentic(String),
    Failed(String),
}

/// Opens every sealed block of `src` into `dst`; says how the payload
/// moved, and the seconds the device spent opening.
pub(crate) fn open(dev: &mut EmulatedCsp, src: &File, master: &Key, cipher: &FileCipher, dst: &File) -> Result<(String, f64), OpenFailure> {
    let l = *cipher.layout();
    // Sealed blocks land in the larger range, opened into the other.
    let (plain, sealed, material) = layout(l.block_bytes as usize);
    let memory = dev.memory();
    let (Some(in_ptr), Some(out_ptr)) = (memory.io_ptr(sealed), memory.io_ptr(plain)) else {
        return Err(OpenFailure::Failed("the device's memory is not mapped into this process for I/O".into()));
    };
    let key = device_key(master, &l.file_id);
    // SAFETY: the material range lies inside the device's memory (layout) and no command runs.
    unsafe { memory.host_write(material.offset, &key[..]) };
    let mut device_us = 0u64;
    let opened_all = (|| -> Result<(), OpenFailure> {
        for i in 0..l.blocks() {
            let n = l.plain_len(i);
            // SAFETY: the sealed range holds a block and its tag; no command uses it now.
            unsafe { device_job::read_into(src, l.sealed_offset(i), n + TAG_BYTES, in_ptr) }.map_err(OpenFailure::Failed)?;
            let request = Request { tag: i, function: Function::AeadOpenBlock { index: i }, inputs: vec![DeviceRange::new(sealed.offset, (n + TAG_BYTES) as u64), material], output: plain };
            let c = device_job::run_one(dev, request).map_err(|e| match e.contains("CorruptInput") {
                true => OpenFailure::NotAuthentic(format!("block {i} (bytes {}..) is not authentic: tampered, moved, from another file, or damaged", l.sealed_offset(i))),
                false => OpenFailure::Failed(e),
            })?;
            device_us += u64::from(c.device_time_us);
            // SAFETY: the plaintext lies in the output range, which no command writes until the next block.
            unsafe { device_job::write_from_or_say(out_ptr, n, dst, l.plain_start(i)) }.map_err(OpenFailure::Failed)?;
        }
        Ok(())
    })();
    // SAFETY: as above; the job's commands have all completed or failed.
    unsafe { dev.memory().host_write(material.offset, &[0u8; DEVICE_KEY_BYTES]) };
    opened_all?;
    let how = format!(
        "opened on 1 emulated CSP ({}): sealed blocks read into its memory (by kernel copies: they sit at unaligned offsets), authenticated and decrypted there with the file's block key (zeroed at the end), written from it to the target; payload bytes into this process: 0",
        dev.name()
    );
    Ok((how, device_us as f64 / 1e6))
}

/// Seals every block of `src` (opened with O_DIRECT where it could be) into
/// `dst` at its place; says how the payload moved, and the seconds the
/// device spent sealing.
pub(crate) fn seal(dev: &mut EmulatedCsp, src: &File, master: &Key, cipher: &FileCipher, dst: &File) -> Result<(String, f64), String> {
    let l = *cipher.layout();
    let (plain, sealed, material) = layout(l.block_bytes as usize);
    let memory = dev.memory();
    let (Some(in_ptr), Some(out_ptr)) = (memory.io_ptr(plain), memory.io_ptr(sealed)) else {
        return Err("the device's memory is not mapped into this process for I/O".into());
    };
    let key = device_key(master, &l.file_id);
    // SAFETY: the material range lies inside the device's memory (layout) and no command runs.
    unsafe { memory.host_write(material.offset, &key[..]) };
    let mut device_us = 0u64;
    let sealed_all = (|| -> Result<(), String> {
        for i in 0..l.blocks() {
            let (at, want) = (l.plain_start(i), l.plain_len(i));
            // SAFETY: the plaintext range holds a block rounded up to whole pages; no command uses it now.
            unsafe { device_job::read_into(src, at, want, in_ptr)? };
            let request = Request { tag: i, function: Function::AeadSealBlock { index: i }, inputs: vec![DeviceRange::new(0, want as u64), material], output: sealed };
            let c = device_job::run_one(dev, request)?;
            device_us += u64::from(c.device_time_us);
            let bytes = c.output_bytes as usize;
            if bytes != want + TAG_BYTES {
                return Err(format!("the device sealed block {i} into {bytes} bytes, not {}", want + TAG_BYTES));
            }
            // SAFETY: the sealed block lies in the sealed range, which no command writes until the next block.
            unsafe { device_job::write_from_or_say(out_ptr, bytes, dst, l.sealed_offset(i))? };
        }
        Ok(())
    })();
    // SAFETY: as above; the job's commands have all completed or failed.
    unsafe { dev.memory().host_write(material.offset, &[0u8; DEVICE_KEY_BYTES]) };
    sealed_all?;
    let how = format!(
        "sealed on 1 emulated CSP ({}): blocks read {} into its memory, sealed there with the file's block key (not the master key; zeroed at the end), written from it to the target (by kernel copies: sealed blocks sit at unaligned offsets); payload bytes into this process: 0",
        dev.name(),
        device_job::moved(device_job::is_direct(src))
    );
    Ok((how, device_us as f64 / 1e6))
}
