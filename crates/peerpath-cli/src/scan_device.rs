//! `peerpath scan --engine emulated`: counting near the data. The file is
//! read by the kernel straight into an emulated CSP's memory (`pread`,
//! O_DIRECT where taken) in 4 MiB blocks; the device filters the whole
//! records of each block (`Function::ScanCount`, `peerpath_func::scan`
//! inside) and returns only counters and a histogram (544 bytes a block).
//! A record cut by a block's end is carried to the next block by the
//! device (`device_job::Blocks`).

use crate::device_job::{self, Blocks};
use peerpath_device::{Device, DeviceRange, Function, FunctionKind, Request, SCAN_RESULT_BYTES};
use peerpath_func::scan::{Found, RecordFormat};
use std::fs::File;

const PATTERN_AT: u64 = 0;
const PATTERN_MAX: usize = 64 << 10;
const RESULT_AT: u64 = PATTERN_MAX as u64;
/// Blocks of 4 MiB, records of up to 4 MiB carried between them.
const BLOCKS: Blocks = Blocks { base: 2 * PATTERN_MAX as u64, carry: 4 << 20, block: 4 << 20, window_at: 0 };

pub(crate) fn start(faults: Option<peerpath_device::FaultConfig>) -> Result<Box<dyn Device>, String> {
    let dev = device_job::spawn("scan", BLOCKS.base as usize + BLOCKS.bytes(), 8, 1, FunctionKind::ScanCount)?;
    Ok(device_job::with_faults(dev, faults))
}

/// What the device pass found, and how the file moved.
pub(crate) struct DeviceScan {
    pub found: Found,
    pub bytes: u64,
    pub direct: bool,
    pub blocks: u64,
}

/// Counts `file`'s records on the device. `motif` is the pattern's text.
pub(crate) fn scan(dev: &mut dyn Device, file: &File, format: Option<RecordFormat>, motif: &str, ignore_case: bool, min_length: Option<usize>) -> Result<DeviceScan, String> {
    if motif.len() > PATTERN_MAX {
        return Err(format!("the motif is longer than the device takes ({PATTERN_MAX} bytes)"));
    }
    let min_length = u32::try_from(min_length.unwrap_or(0)).map_err(|_| "--min-length is over 2^32-1 for the device".to_string())?;
    // SAFETY: no command is in flight; the pattern area is inside the device's memory.
    unsafe { dev.memory().host_write(PATTERN_AT, motif.as_bytes()) };
    let pattern = DeviceRange::new(PATTERN_AT, motif.len() as u64);
    let (mut found, mut blocks, mut format) = (Found::default(), 0u64, format);
    let bytes = BLOCKS.stream(dev, file, |dev, records, at_end| {
        // The format, from the first byte (read back: one byte of metadata).
        let fmt = match format {
            Some(f) => f,
            None => {
                let mut first = [0u8; 1];
                let n = records.len.min(1) as usize;
                // SAFETY: no command is in flight; at most one byte inside the block just read.
                unsafe { dev.memory().host_read(records.offset, &mut first[..n]) };
                *format.insert(RecordFormat::detect(&first[..n]))
            }
        };
        let code = [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines].iter().position(|f| *f == fmt).expect("a format") as u8;
        let f = Function::ScanCount { format: code, ignore_case, at_end, min_length };
        device_job::run_one(dev, Request::scan_count(blocks, f, records, pattern, DeviceRange::new(RESULT_AT, SCAN_RESULT_BYTES as u64)))?;
        blocks += 1;
        let mut result = [0u8; SCAN_RESULT_BYTES];
        // SAFETY: the command has completed; its output range is not in use.
        unsafe { dev.memory().host_read(RESULT_AT, &mut result) };
        let word = |i: usize| u64::from_le_bytes(result[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let mut histogram: Vec<u64> = (0..64).map(|b| word(4 + b)).collect();
        while histogram.last() == Some(&0) {
            histogram.pop();
        }
        found.add(&Found { records: word(0), matched: word(1), matched_bases: word(2), histogram });
        Ok(word(3) as usize)
    })?;
    Ok(DeviceScan { found, bytes, direct: device_job::is_direct(file), blocks })
}
