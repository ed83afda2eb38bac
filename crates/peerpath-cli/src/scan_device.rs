//! `peerpath scan --engine emulated`: counting near the data. The file is
//! read by the kernel straight into an emulated CSP's memory (`pread`,
//! O_DIRECT where taken) in 4 MiB blocks; the device filters the whole
//! records of each block (`Function::ScanCount`, `peerpath_func::scan`
//! inside) and returns only counters and a histogram (544 bytes a block).
//! A record cut by a block's end is carried to the next block by the
//! device (`device_job::Blocks`).
//!
//! `--engine gpu` runs the same pass on a GPU (peerpath's scan kernels: the
//! motif as a DFA, `peerpath_gpu::scan`), whose memory storage reaches only
//! through a pinned host window: the layout is there twice, the motif and
//! each block are written or read into the window and copied to GPU memory
//! by the device, and each block's counters are copied back to the window
//! to be read.

use crate::chain_device::Stop;
use crate::device_job::{self, Blocks};
use peerpath_device::{parse_scan_fault_record, Device, DeviceRange, Function, FunctionKind, Request, Status, SCAN_FAULT_BYTES, SCAN_RESULT_BYTES};
use peerpath_func::scan::{FastqFault, Found, RecordFormat};
use peerpath_runtime::JobError;
use std::fs::File;
use std::path::Path;

const PATTERN_AT: u64 = 0;
const PATTERN_MAX: usize = 64 << 10;
const RESULT_AT: u64 = PATTERN_MAX as u64;
/// Blocks of 4 MiB, records of up to 4 MiB carried between them.
const BLOCKS: Blocks = Blocks { base: 2 * PATTERN_MAX as u64, carry: 4 << 20, block: 4 << 20, window_at: 0 };

/// The longest record the pass may count: one carried whole from a block and the next block
/// after it. The device says nothing of records' lengths, so it cannot hold records to a lower
/// `--max-record` (the scan keeps such a limit on the CPU); a longer record it cannot count (its
/// tail overflows the carry), and the file goes to the CPU, which stops at it there.
pub(crate) const LONGEST_RECORD: usize = BLOCKS.carry + BLOCKS.block;

/// Bytes of device memory the pass lays out.
const MEMORY_BYTES: usize = BLOCKS.base as usize + BLOCKS.bytes();

/// Opens GPU `ordinal` with peerpath's scan kernels (no nvCOMP) for
/// `motif`, or says why it cannot count with it (a motif its DFA cannot
/// walk, said before the GPU is opened).
pub(crate) fn start_gpu(ordinal: usize, motif: Option<&str>, ignore_case: bool, timeout: Option<std::time::Duration>) -> Result<Box<dyn Device>, String> {
    if let Some(m) = motif {
        peerpath_gpu::scan::Dfa::new(m, ignore_case).map_err(|e| e.to_string())?;
    }
    let config = peerpath_gpu::GpuDeviceConfig { scan: true, ..peerpath_gpu::GpuDeviceConfig::staged(ordinal, MEMORY_BYTES, 8) };
    device_job::open_gpu(device_job::timed(config, timeout))
}

pub(crate) fn start(faults: Option<peerpath_device::FaultConfig>, timeout: Option<std::time::Duration>) -> Result<Box<dyn Device>, String> {
    let dev = device_job::spawn("scan", MEMORY_BYTES, 8, 1, FunctionKind::ScanCount, timeout)?;
    Ok(device_job::with_faults(dev, faults))
}

/// What the device pass found, and how the file moved.
pub(crate) struct DeviceScan {
    pub found: Found,
    pub bytes: u64,
    pub direct: bool,
    pub blocks: u64,
    /// The device's memory is not the host's: the blocks were read into its
    /// window and copied (a GPU).
    pub staged: bool,
    /// Bytes this process copied to or from the device's memory (the motif,
    /// the format's first byte, the counters; measured).
    pub host_copied: u64,
    /// The format the records were read as (given, or told from the first
    /// byte; `None`: no bytes to tell it by).
    pub format: Option<RecordFormat>,
}

/// Where the device found FASTQ that is not: the record (from its fault record), or only the
/// block (a fault record that names no record of the block, never from a sound device).
enum Malformed {
    Record { at: u64, fault: FastqFault },
    Block { from: u64, to: u64 },
}

/// Counts `file`'s records on the device. `motif` is the pattern's text.
/// Records the device finds malformed (FASTQ that is not) stop the pass
/// as the data's fault ([`Stop::Job`], naming the bytes of `path` they lie in).
/// `skip`: bytes at the file's start that are no part of its records (a byte order mark,
/// [`peerpath_func::scan::byte_order_mark`]: the device is not given them, the CPU drops them).
pub(crate) fn scan(dev: &mut dyn Device, (file, path, skip): (&File, &Path, usize), format: Option<RecordFormat>, motif: &str, ignore_case: bool, min_length: Option<usize>) -> Result<DeviceScan, Stop> {
    if motif.len() > PATTERN_MAX {
        return Err(format!("the motif is longer than the device takes ({PATTERN_MAX} bytes)").into());
    }
    let min_length = u32::try_from(min_length.unwrap_or(0)).map_err(|_| "--min-length is over 2^32-1 for the device".to_string())?;
    // A staged device (a GPU): the layout again in its window, from window_at.
    let window_at = dev.memory().dma_window().map_or(0, |w| w.0);
    if window_at > 0 && (window_at < MEMORY_BYTES as u64 || dev.memory().len() < window_at as usize + MEMORY_BYTES) {
        return Err("the device's memory is not staged as this pass needs".into());
    }
    let io = |r: DeviceRange| DeviceRange::new(window_at + r.offset, r.len);
    let copied_before = dev.memory().host_copied_bytes();
    let mut blocks_in = BLOCKS;
    blocks_in.window_at = window_at;
    let pattern = DeviceRange::new(PATTERN_AT, motif.len() as u64);
    let result = DeviceRange::new(RESULT_AT, SCAN_RESULT_BYTES as u64);
    // SAFETY: no command is in flight; the pattern area is inside the device's memory (its window).
    unsafe { dev.memory().host_write(io(pattern).offset, motif.as_bytes()) };
    let mut commands = 0u64;
    if window_at > 0 && !motif.is_empty() {
        device_job::run_one(dev, Request::copy(commands, &[io(pattern)], pattern))?;
        commands += 1;
    }
    let (mut found, mut blocks, mut format) = (Found::default(), 0u64, format);
    // The file offset the next block's records start at, and the bytes a malformed record lies in.
    let (mut done, mut malformed, mut skip) = (skip as u64, None, skip as u64);
    let counted = blocks_in.stream(dev, file, |dev, records, at_end| {
        // The first block's records start after the bytes skipped (the file has them all).
        let skipped = std::mem::take(&mut skip).min(records.len);
        let records = DeviceRange::new(records.offset + skipped, records.len - skipped);
        if records.len == 0 {
            // No byte of records (an empty file, or one of only a byte order mark): nothing to
            // count, nor to tell the format by (the CPU tells none either).
            return Ok(skipped as usize);
        }
        // The format, from the first byte that is not white space (read back: one byte of
        // metadata, up to 4 KiB where the file starts with blank lines).
        let fmt = match format {
            Some(f) => f,
            None => {
                let mut first = [0u8; 4096];
                let mut n = records.len.min(1) as usize;
                for _ in 0..2 {
                    // SAFETY: no command is in flight; at most the block's own bytes, inside the block
                    // just read (the first block: nothing carried in front of it, in the window too).
                    unsafe { dev.memory().host_read(io(records).offset, &mut first[..n]) };
                    if !first[..n].iter().all(|b| peerpath_func::scan::BLANK.contains(b)) {
                        break;
                    }
                    n = records.len.min(first.len() as u64) as usize;
                }
                *format.insert(RecordFormat::detect(&first[..n]))
            }
        };
        let code = [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines].iter().position(|f| *f == fmt).expect("a format") as u8;
        let f = Function::ScanCount { format: code, ignore_case, at_end, min_length };
        let c = device_job::run_one_answer(dev, Request::scan_count(commands, f, records, pattern, result))?;
        commands += 1;
        if c.status == Status::CorruptInput && fmt == RecordFormat::Fastq {
            // The device left the first malformed record's offset in the block and why where
            // the counters would be (SCAN_FAULT_BYTES: metadata).
            if window_at > 0 {
                device_job::run_one(dev, Request::copy(commands, &[DeviceRange::new(RESULT_AT, SCAN_FAULT_BYTES as u64)], io(DeviceRange::new(RESULT_AT, SCAN_FAULT_BYTES as u64))))?;
            }
            let mut record = [0u8; SCAN_FAULT_BYTES];
            // SAFETY: the command (and the copy) has completed; its output range is not in use.
            unsafe { dev.memory().host_read(io(DeviceRange::new(RESULT_AT, 0)).offset, &mut record) };
            let (at, why) = parse_scan_fault_record(&record);
            malformed = Some(match FastqFault::from_code(why).filter(|_| at < records.len) {
                Some(fault) => Malformed::Record { at: done + at, fault },
                None => Malformed::Block { from: done, to: done + records.len },
            });
            return Err("malformed FASTQ".into());
        }
        device_job::succeeded(dev, &c, "scan count")?;
        blocks += 1;
        if window_at > 0 {
            device_job::run_one(dev, Request::copy(commands, &[result], io(result)))?;
            commands += 1;
        }
        let mut result = [0u8; SCAN_RESULT_BYTES];
        // SAFETY: the command (and the copy) has completed; its output range is not in use.
        unsafe { dev.memory().host_read(io(DeviceRange::new(RESULT_AT, 0)).offset, &mut result) };
        let word = |i: usize| u64::from_le_bytes(result[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let mut histogram: Vec<u64> = (0..64).map(|b| word(4 + b)).collect();
        while histogram.last() == Some(&0) {
            histogram.pop();
        }
        found.add(&Found { records: word(0), matched: word(1), matched_bases: word(2), histogram });
        // The device's count of whole-record bytes, held to the block (Blocks clamps it too).
        let whole = word(3).min(records.len);
        done += whole;
        Ok((skipped + whole) as usize)
    });
    let bytes = match (counted, malformed) {
        (_, Some(m)) => {
            let detail = match m {
                // The data's fault only where the host finds the same: a device that names a
                // sound record has failed, and the CPU counts the file instead.
                Malformed::Record { at, fault } => match host_confirms(path, at, fault) {
                    Ok(true) => format!("not FASTQ: the record at byte {at} is malformed: {} (found by the device, confirmed on the host)", fault.why()),
                    Ok(false) => return Err(Stop::Device(format!("it named the record at byte {at} malformed ({}), but the host finds that record sound", fault.why()))),
                    Err(e) => return Err(Stop::Device(format!("it named the record at byte {at} malformed ({}), and the host could not read it back to check: {e}", fault.why()))),
                },
                // A device must name the record: one that does not has failed, and the CPU
                // counts the file (naming the record, if the data is at fault).
                Malformed::Block { from, to } => return Err(Stop::Device(format!("it called bytes {from}..{to} malformed FASTQ without naming a record in them"))),
            };
            return Err(Stop::Job(JobError::Damaged { path: path.to_path_buf(), detail }));
        }
        (counted, None) => counted?,
    };
    Ok(DeviceScan { found, bytes, direct: device_job::is_direct(file), blocks, staged: window_at > 0, host_copied: dev.memory().host_copied_bytes() - copied_before, format })
}

/// Bytes read back at most to check a record a device named (a FASTQ record is far shorter; past
/// this the device's word is taken).
const CONFIRM_MAX_BYTES: usize = 64 << 20;

/// Whether the record at byte `at` of `path` is malformed as `fault` says: its bytes read back
/// (the record and what follows, until a whole record is there or the file ends) through the
/// CPU's filter, which must name that record (offset 0 of what was read) and that fault.
fn host_confirms(path: &Path, at: u64, fault: FastqFault) -> std::io::Result<bool> {
    use peerpath_func::scan::{BlockCutter, Filter};
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(at))?;
    // The first block of whole records from `at` (a run of blank lines is kept short).
    let (mut cutter, mut chunk, mut read) = (BlockCutter::new(Some(RecordFormat::Fastq), 1).within(), vec![0u8; 64 << 10], 0);
    let mut first = None;
    while first.is_none() {
        let n = f.read(&mut chunk)?;
        read += n;
        let _ = cutter.push(&chunk[..n], n == 0, |b| {
            first = Some(b);
            Err(())
        });
        if first.is_none() && read >= CONFIRM_MAX_BYTES {
            return Ok(true);
        }
    }
    let b = first.expect("a first block");
    Ok(matches!(Filter::default().block(&b.data, RecordFormat::Fastq, b.at_end, None), Err(m) if m.offset == 0 && m.fault == fault))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device_job::testing::cpu_device;

    /// The host's check of a record a device named: true where the CPU's filter names the same
    /// record and fault, false for a sound record or another fault.
    #[test]
    fn the_host_confirms_only_what_the_cpu_finds() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.fq");
        let good = "@a\nACGT\n+\nFFFF\n@b\nAC\n+\nFF\n";
        let bad = format!("{good}@c\nACG\n+\nF\n{good}");
        std::fs::write(&p, &bad).unwrap();
        let c = good.len() as u64;
        assert!(host_confirms(&p, c, FastqFault::QualityLength).unwrap(), "the short quality line");
        assert!(!host_confirms(&p, c, FastqFault::NoPlus).unwrap(), "another fault");
        assert!(!host_confirms(&p, 0, FastqFault::QualityLength).unwrap(), "a sound record");
        // Cut short at the end of the file: only the end tells.
        std::fs::write(&p, format!("{good}@d\nACGT\n")).unwrap();
        assert!(host_confirms(&p, c, FastqFault::CutShort).unwrap());
        // A blank line before more reads.
        std::fs::write(&p, format!("{good}\n{good}")).unwrap();
        assert!(host_confirms(&p, c, FastqFault::NoAt).unwrap());
        assert!(!host_confirms(&p, c + 1, FastqFault::NoAt).unwrap(), "the read after it is sound");
    }
    use peerpath_func::scan::Filter;

    /// The pass on a device whose memory is mapped whole (an emulated CSP's)
    /// and on one staged as a GPU's counts what the CPU's filter counts, over
    /// blocks and records carried between them; a staged pass that skipped
    /// its copies would count other bytes. A file that starts with a byte order mark, skipped,
    /// counts as the file without it.
    #[test]
    fn the_pass_counts_what_the_cpu_counts_staged_or_not() {
        let protein = peerpath_func::sample::protein_like(11 << 20, 3);
        let mut data = Vec::new();
        for (i, line) in protein.split_inclusive(|&b| b == b'\n').enumerate() {
            if i % 5 == 0 || i % 7 == 0 {
                data.extend_from_slice(format!(">sp|Q{i} x\n").as_bytes());
            }
            data.extend_from_slice(line);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.fa");
        std::fs::write(&path, &data).unwrap();
        let marked = dir.path().join("bom.fa");
        std::fs::write(&marked, [peerpath_func::scan::BYTE_ORDER_MARK, &data].concat()).unwrap();
        for (motif, ic, min) in [("KL[VI]", false, None), ("mk", true, Some(150)), ("", false, Some(250))] {
            let regex = (!motif.is_empty()).then(|| regex::bytes::RegexBuilder::new(motif).case_insensitive(ic).build().unwrap());
            let want = Filter { motif: regex, min_length: min, id_prefix: None }.block(&data, RecordFormat::Fasta, true, None).unwrap();
            assert!(want.matched > 100 && want.matched < want.records, "a weak case: {want:?}");
            for staged in [false, true] {
                let mut dev = cpu_device(staged, 2 * MEMORY_BYTES);
                let Ok(got) = scan(&mut dev, (&File::open(&path).unwrap(), &path, 0), None, motif, ic, min) else { panic!("motif {motif:?}, staged {staged}: the pass failed") };
                assert_eq!((&got.found, got.bytes, got.blocks, got.staged), (&want, data.len() as u64, 3, staged), "motif {motif:?}, staged {staged}");
                // The motif in, the format's first byte and three blocks' counters out: no record.
                assert_eq!(got.host_copied, (motif.len() + 1 + 3 * SCAN_RESULT_BYTES) as u64, "motif {motif:?}, staged {staged}");
                let mut dev = cpu_device(staged, 2 * MEMORY_BYTES);
                let Ok(got) = scan(&mut dev, (&File::open(&marked).unwrap(), &marked, 3), None, motif, ic, min) else { panic!("motif {motif:?}, staged {staged}: the marked file's pass failed") };
                assert_eq!((&got.found, got.bytes, got.format), (&want, data.len() as u64 + 3, Some(RecordFormat::Fasta)), "the marked file: motif {motif:?}, staged {staged}");
            }
        }
    }
}
