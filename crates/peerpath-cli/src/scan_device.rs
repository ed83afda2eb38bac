//! `peerpath scan --engine emulated`: counting near the data. The file is
//! read by the kernel straight into an emulated CSP's memory (`pread`,
//! O_DIRECT where taken) in 4 MiB blocks; the device filters the whole
//! records of each block (`Function::ScanCount`, `peerpath_func::scan`
//! inside) and returns only counters and a histogram (544 bytes a block).
//! A record cut by a block's end is carried to the front of the next
//! block by the device itself (`Function::Copy`), in the other of two
//! buffers so source and destination never overlap.

use peerpath_device::{run_to_completion, Completion, Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request, ServeOptions, SpawnOptions, Status, SCAN_RESULT_BYTES};
use peerpath_func::scan::{Found, RecordFormat};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::Duration;

const BLOCK: usize = 4 << 20;
/// The longest record the device path carries from block to block.
const CARRY: usize = 4 << 20;
const PATTERN_AT: u64 = 0;
const PATTERN_MAX: usize = 64 << 10;
const RESULT_AT: u64 = PATTERN_MAX as u64;
const BUFFERS_AT: u64 = 2 * PATTERN_MAX as u64;
const TIMEOUT: Duration = Duration::from_secs(60);

/// Where buffer `b`'s block is read (after room for a carried record).
fn block_at(b: usize) -> u64 {
    BUFFERS_AT + (b * (CARRY + BLOCK) + CARRY) as u64
}

pub(crate) fn start() -> Result<EmulatedCsp, String> {
    let mut serve = ServeOptions::new(&format!("scan{}", std::process::id()));
    serve.memory_bytes = BUFFERS_AT as usize + 2 * (CARRY + BLOCK);
    serve.queues = 1;
    serve.queue_depth = 8;
    serve.workers = 1;
    let dev = EmulatedCsp::spawn(&SpawnOptions::new(serve)).map_err(|e| format!("the emulated CSP did not start: {e}"))?;
    if !dev.functions().contains(FunctionKind::ScanCount) {
        return Err("the emulated CSP does not offer scan count".into());
    }
    Ok(dev)
}

fn run(dev: &mut EmulatedCsp, r: Request) -> Result<Completion, String> {
    let mut done = run_to_completion(dev, [r], TIMEOUT).map_err(|e| format!("the emulated CSP failed: {e}"))?;
    let c = done.pop().ok_or("the emulated CSP lost a command")?;
    if c.status != Status::Success {
        return Err(format!("the emulated CSP answered {:?}", c.status));
    }
    Ok(c)
}

/// What the device pass found, and whether the file was read by DMA.
pub(crate) struct DeviceScan {
    pub found: Found,
    pub bytes: u64,
    pub direct: bool,
    pub blocks: u64,
}

/// Counts `file`'s records on the device. `motif` is the pattern's text.
pub(crate) fn scan(dev: &mut EmulatedCsp, file: &File, direct: bool, format: Option<RecordFormat>, motif: &str, ignore_case: bool, min_length: Option<usize>) -> Result<DeviceScan, String> {
    if motif.len() > PATTERN_MAX {
        return Err(format!("the motif is longer than the device takes ({PATTERN_MAX} bytes)"));
    }
    let min_length = u32::try_from(min_length.unwrap_or(0)).map_err(|_| "--min-length is over 2^32-1 for the device".to_string())?;
    // SAFETY: no command is in flight; the pattern area is inside the device's memory.
    unsafe { dev.memory().host_write(PATTERN_AT, motif.as_bytes()) };
    let pattern = DeviceRange::new(PATTERN_AT, motif.len() as u64);
    let (mut found, mut at, mut tail, mut buf, mut blocks) = (Found::default(), 0u64, 0usize, 0usize, 0u64);
    let mut format = format;
    loop {
        let dst = dev.memory().io_ptr(DeviceRange::new(block_at(buf), BLOCK as u64)).ok_or("the device's memory is not mapped for I/O")?;
        // SAFETY: the kernel writes at most BLOCK bytes at dst, buffer `buf`'s block area in the
        // device's mapped memory; no command uses it now.
        let n = unsafe { libc::pread(file.as_raw_fd(), dst.cast(), BLOCK, at as libc::off_t) };
        if n < 0 {
            return Err(format!("reading into device memory: {}", std::io::Error::last_os_error()));
        }
        let n = n as usize;
        at += n as u64;
        let at_end = n < BLOCK;
        let records = DeviceRange::new(block_at(buf) - tail as u64, (tail + n) as u64);
        // The format, from the first byte (read back: one byte of metadata).
        let fmt = match format {
            Some(f) => f,
            None => {
                let mut first = [0u8; 1];
                if records.len > 0 {
                    // SAFETY: no command is in flight; one byte inside the block just read.
                    unsafe { dev.memory().host_read(records.offset, &mut first) };
                }
                *format.insert(RecordFormat::detect(&first[..records.len.min(1) as usize]))
            }
        };
        let code = match fmt {
            RecordFormat::Fasta => 0,
            RecordFormat::Fastq => 1,
            RecordFormat::Lines => 2,
        };
        let f = Function::ScanCount { format: code, ignore_case, at_end, min_length };
        run(dev, Request::scan_count(blocks, f, records, pattern, DeviceRange::new(RESULT_AT, SCAN_RESULT_BYTES as u64)))?;
        blocks += 1;
        let mut result = [0u8; SCAN_RESULT_BYTES];
        // SAFETY: the command has completed; its output range is not in use.
        unsafe { dev.memory().host_read(RESULT_AT, &mut result) };
        let word = |i: usize| u64::from_le_bytes(result[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let mut hist: Vec<u64> = (0..64).map(|b| word(4 + b)).collect();
        while hist.last() == Some(&0) {
            hist.pop();
        }
        found.add(&Found { records: word(0), matched: word(1), matched_bases: word(2), histogram: hist });
        if at_end {
            return Ok(DeviceScan { found, bytes: at, direct, blocks });
        }
        // Carry what was not consumed to the front of the other buffer.
        let consumed = word(3) as usize;
        let rest = tail + n - consumed;
        if rest > CARRY {
            return Err(format!("a record longer than {} MiB: the device path carries at most that (use --engine cpu)", CARRY >> 20));
        }
        let other = 1 - buf;
        if rest > 0 {
            let from = DeviceRange::new(records.offset + consumed as u64, rest as u64);
            run(dev, Request::copy(blocks, &[from], DeviceRange::new(block_at(other) - rest as u64, rest as u64)))?;
        }
        tail = rest;
        buf = other;
    }
}
