//! Checking and running one request on a device's memory: the code every
//! device runs (the CPU device on its threads, the emulated CSP on its
//! workers), built on `peerpath-func`, the oracle.

use crate::function::{Function, FunctionSet};
use crate::memory::DeviceMemory;
use crate::request::{Request, Status, MAX_INPUT_RANGES};
use peerpath_func::{
    decode_member, encode_member, member_bound_bytes, Format, Level, MemberEncoder, MemberHeader, BGZF_MAX_INPUT_BYTES,
    MAX_MEMBER_UNCOMPRESSED_BYTES,
};
use crate::function::{scan_fault_record, CHUNK_ENTRY_BYTES, SCAN_FAULT_BYTES, SCAN_RESULT_BYTES};
use peerpath_func::crypt::{open_block_with, seal_block_with, DEVICE_KEY_BYTES, MAX_BLOCK_BYTES, TAG_BYTES};
use peerpath_func::dedup::{chunk_digests, ChunkParams, Fingerprint};
use peerpath_func::ec::RsCode;
use peerpath_func::scan::{whole_records, Filter, RecordFormat};
use regex::bytes::{Regex, RegexBuilder};
use std::time::Instant;

/// What running a request gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub status: Status,
    pub output_bytes: u64,
    pub input_crc32: u32,
    pub device_time_us: u32,
    pub busy_ns: u64,
}

impl Outcome {
    pub(crate) fn failed(status: Status) -> Outcome {
        Outcome { status, output_bytes: 0, input_crc32: 0, device_time_us: 0, busy_ns: 0 }
    }

    /// What a command gave, and the time it took (its device time and busy time).
    fn timed(status: Status, output_bytes: u64, input_crc32: u32, elapsed: std::time::Duration) -> Outcome {
        Outcome {
            status,
            output_bytes,
            input_crc32,
            device_time_us: elapsed.as_micros().min(u32::MAX as u128) as u32,
            busy_ns: elapsed.as_nanos().min(u64::MAX as u128) as u64,
        }
    }
}

/// Checks everything about `request` that can be checked without reading
/// device memory: the function is supported, the number of inputs fits the
/// function, every range lies inside `memory_bytes`, inputs do not overlap
/// the output, and sizes suit the function.
pub fn check(request: &Request, memory_bytes: u64, supported: FunctionSet) -> Result<(), Status> {
    let f = request.function;
    if !supported.contains(f.kind()) {
        return Err(Status::Unsupported);
    }
    let n = request.inputs.len();
    let count_ok = n <= MAX_INPUT_RANGES
        && match f {
            Function::Copy | Function::Crc32 => true,
            Function::Fill { .. } | Function::StorageRead { .. } => n == 0,
            Function::ScanCount { .. } | Function::AeadSealBlock { .. } | Function::AeadOpenBlock { .. } | Function::EcReconstruct { .. } => n == 2,
            Function::GzipCompressMember { .. }
            | Function::GzipCompressChunk { .. }
            | Function::GzipDecompressMember
            | Function::EcEncode { .. }
            | Function::ChunkFingerprint { .. }
            | Function::StorageWrite { .. } => n == 1,
        };
    if !count_ok {
        return Err(Status::InvalidField);
    }
    if matches!(f, Function::Crc32 | Function::StorageWrite { .. }) && request.output.len != 0 {
        return Err(Status::InvalidField);
    }
    if !request.output.fits(memory_bytes) || request.inputs.iter().any(|r| !r.fits(memory_bytes)) {
        return Err(Status::OutOfRange);
    }
    if request.inputs.iter().any(|r| r.overlaps(&request.output)) {
        return Err(Status::RangeOverlap);
    }
    let input_bytes = request.input_bytes();
    match f {
        Function::Copy if request.output.len < input_bytes => Err(Status::OutputTooSmall),
        Function::GzipCompressMember { format, .. } => {
            let limit = match format {
                Format::Gzip => MAX_MEMBER_UNCOMPRESSED_BYTES,
                Format::Bgzf => BGZF_MAX_INPUT_BYTES,
            };
            if input_bytes > limit as u64 {
                Err(Status::InputTooLarge)
            } else if request.output.len < member_bound_bytes(input_bytes as usize) as u64 {
                Err(Status::OutputTooSmall)
            } else {
                Ok(())
            }
        }
        // A chunk of at least nothing: refused before the bound below divides by it.
        Function::ChunkFingerprint { min_kib: 0, .. } => Err(Status::InvalidField),
        Function::ChunkFingerprint { min_kib, .. } if request.output.len < 16 + CHUNK_ENTRY_BYTES as u64 * (input_bytes / (min_kib as u64 * 1024) + 1) => Err(Status::OutputTooSmall),
        Function::ScanCount { .. } if request.inputs[1].len > MAX_PATTERN_BYTES as u64 => Err(Status::InputTooLarge),
        Function::AeadSealBlock { .. } | Function::AeadOpenBlock { .. } if request.inputs[1].len != DEVICE_KEY_BYTES as u64 => Err(Status::InvalidField),
        Function::AeadOpenBlock { .. } if request.inputs[0].len < TAG_BYTES as u64 => Err(Status::CorruptInput),
        Function::AeadOpenBlock { .. } if request.inputs[0].len > u64::from(MAX_BLOCK_BYTES) + TAG_BYTES as u64 => Err(Status::InputTooLarge),
        // Opened in place in the output: room for the tag too.
        Function::AeadOpenBlock { .. } if request.output.len < request.inputs[0].len => Err(Status::OutputTooSmall),
        Function::AeadSealBlock { .. } if request.inputs[0].len > u64::from(MAX_BLOCK_BYTES) => Err(Status::InputTooLarge),
        Function::AeadSealBlock { .. } if request.output.len < request.inputs[0].len + TAG_BYTES as u64 => Err(Status::OutputTooSmall),
        Function::ScanCount { .. } if request.output.len < SCAN_RESULT_BYTES as u64 => Err(Status::OutputTooSmall),
        Function::StorageRead { offset, .. } | Function::StorageWrite { offset, .. } => {
            // The device memory read or written: the output of a read, the input of a write.
            let memory = if let Function::StorageRead { .. } = f { request.output } else { request.inputs[0] };
            let aligned = |n: u64| n.is_multiple_of(crate::function::STORAGE_ALIGN_BYTES);
            if memory.len == 0 || !aligned(offset) || !aligned(memory.offset) || !aligned(memory.len) {
                Err(Status::InvalidField)
            } else {
                Ok(())
            }
        }
        Function::EcEncode { data, parity } => {
            if !input_bytes.is_multiple_of(data as u64) {
                Err(Status::InvalidField)
            } else if input_bytes / data as u64 > i32::MAX as u64 {
                Err(Status::InputTooLarge)
            } else if request.output.len < input_bytes / data as u64 * parity as u64 {
                Err(Status::OutputTooSmall)
            } else {
                Ok(())
            }
        }
        Function::EcReconstruct { data, wanted, .. } => {
            let k = data as u64;
            if request.inputs[1].len != k + wanted as u64 || !request.inputs[0].len.is_multiple_of(k) {
                Err(Status::InvalidField)
            } else if request.inputs[0].len / k > i32::MAX as u64 {
                Err(Status::InputTooLarge)
            } else if request.output.len < request.inputs[0].len / k * wanted as u64 {
                Err(Status::OutputTooSmall)
            } else {
                Ok(())
            }
        }
        // Members of nothing: refused before a split into them divides by it (or never ends).
        Function::GzipCompressChunk { member_bytes: 0, .. } => Err(Status::InvalidField),
        Function::GzipCompressChunk { format, member_bytes, .. } => {
            let limit = match format {
                Format::Gzip => MAX_MEMBER_UNCOMPRESSED_BYTES,
                Format::Bgzf => BGZF_MAX_INPUT_BYTES,
            };
            if member_bytes as usize > limit {
                Err(Status::InputTooLarge)
            } else if request.output.len < chunk_bound_bytes(input_bytes as usize, member_bytes as usize) as u64 {
                Err(Status::OutputTooSmall)
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

/// The most output a chunk of `input` bytes compressed in members of
/// `member_bytes` can take (an empty input is one empty member).
pub fn chunk_bound_bytes(input: usize, member_bytes: usize) -> usize {
    input.div_ceil(member_bytes.max(1)).max(1) * member_bound_bytes(member_bytes.min(input))
}

/// Reusable function state made on first use: one encoder per level, and
/// the last erasure code's tables.
#[derive(Default)]
pub(crate) struct Encoders {
    by_level: Vec<Option<MemberEncoder>>,
    code: Option<RsCode>,
    /// The last scan motif: its text, case flag and compiled form.
    motif: Option<(Vec<u8>, bool, Regex)>,
}

/// The longest motif a scan command takes.
const MAX_PATTERN_BYTES: usize = 64 << 10;

impl Encoders {
    fn motif(&mut self, text: &[u8], ignore_case: bool) -> Result<&Regex, Status> {
        if !self.motif.as_ref().is_some_and(|(t, i, _)| t == text && *i == ignore_case) {
            let s = std::str::from_utf8(text).map_err(|_| Status::InvalidField)?;
            let r = RegexBuilder::new(s).case_insensitive(ignore_case).build().map_err(|_| Status::InvalidField)?;
            self.motif = Some((text.to_vec(), ignore_case, r));
        }
        Ok(&self.motif.as_ref().expect("just made").2)
    }

    fn code(&mut self, data: usize, parity: usize) -> &RsCode {
        if self.code.as_ref().is_none_or(|c| (c.data_shards(), c.parity_shards()) != (data, parity)) {
            self.code = Some(RsCode::new(data, parity).expect("from_opcode admits only valid codes"));
        }
        self.code.as_ref().expect("just made")
    }

    fn get(&mut self, level: Level) -> &mut MemberEncoder {
        let i = level.get() as usize;
        if self.by_level.len() <= i {
            self.by_level.resize_with(i + 1, || None);
        }
        self.by_level[i].get_or_insert_with(|| MemberEncoder::new(level))
    }
}

fn crc_of(inputs: &[&[u8]]) -> u32 {
    let mut crc = libdeflater::Crc::new();
    for i in inputs {
        crc.update(i);
    }
    crc.sum()
}

/// Runs a request that passed [`check`]. A panic inside a function becomes
/// [`Status::Internal`].
///
/// # Safety
/// `request` passed [`check`] against this memory's length, and its ranges
/// are claimed (a [`crate::memory::RangeTable`]) for the duration: nothing
/// writes its inputs, nothing else touches its output.
pub(crate) unsafe fn run(memory: &DeviceMemory, request: &Request, encoders: &mut Encoders) -> Outcome {
    let start = Instant::now();
    // SAFETY: the caller's contract: ranges fit and are exclusive as claimed.
    let inputs: Vec<&[u8]> = request.inputs.iter().map(|r| unsafe { memory.input(*r) }).collect();
    // SAFETY: as above; the output does not overlap the inputs (check).
    let output = unsafe { memory.output(request.output) };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(request.function, &inputs, output, encoders)));
    let (status, output_bytes, input_crc32) = match result {
        Ok(Ok((n, crc))) => (Status::Success, n, crc),
        Ok(Err(status)) => (status, 0, 0),
        Err(_) => {
            // The encoders may be mid-stream; start afresh.
            *encoders = Encoders::default();
            (Status::Internal, 0, 0)
        }
    };
    Outcome::timed(status, output_bytes, input_crc32, start.elapsed())
}

/// The functions themselves, on plain slices. Returns (output bytes, CRC-32
/// of the input read).
fn execute(function: Function, inputs: &[&[u8]], output: &mut [u8], encoders: &mut Encoders) -> Result<(u64, u32), Status> {
    match function {
        Function::Copy => {
            let mut at = 0;
            for i in inputs {
                output[at..at + i.len()].copy_from_slice(i);
                at += i.len();
            }
            Ok((at as u64, crc_of(inputs)))
        }
        Function::Fill { byte } => {
            output.fill(byte);
            Ok((output.len() as u64, 0))
        }
        Function::Crc32 => Ok((0, crc_of(inputs))),
        Function::GzipCompressMember { level, format } => {
            let input = inputs[0];
            let n = encode_member(encoders.get(level), format, input, output);
            // The trailer holds the CRC-32 of the input: no second pass.
            let crc = u32::from_le_bytes(output[n - 8..n - 4].try_into().expect("4 bytes"));
            Ok((n as u64, crc))
        }
        Function::GzipCompressChunk { level, format, member_bytes } => {
            let input = inputs[0];
            let enc = encoders.get(level);
            let mut at = if input.is_empty() { encode_member(enc, format, &[], output) } else { 0 };
            for piece in input.chunks(member_bytes as usize) {
                at += encode_member(enc, format, piece, &mut output[at..]);
            }
            Ok((at as u64, crc_of(inputs)))
        }
        Function::EcEncode { data, parity } => {
            let (k, m) = (data as usize, parity as usize);
            let unit = inputs[0].len() / k;
            let units: Vec<&[u8]> = inputs[0].chunks(unit.max(1)).take(if unit == 0 { 0 } else { k }).collect();
            if unit > 0 {
                let mut out: Vec<&mut [u8]> = output[..m * unit].chunks_mut(unit).collect();
                encoders.code(k, m).encode(&units, &mut out);
            }
            Ok(((m * unit) as u64, crc_of(inputs)))
        }
        Function::EcReconstruct { data, parity, wanted } => {
            let (k, n, w) = (data as usize, data as usize + parity as usize, wanted as usize);
            let (survivors, missing) = inputs[1].split_at(k);
            let mut seen = [false; 256];
            for &i in inputs[1] {
                if i as usize >= n || std::mem::replace(&mut seen[i as usize], true) {
                    return Err(Status::InvalidField);
                }
            }
            let unit = inputs[0].len() / k;
            if unit > 0 {
                let units: Vec<(usize, &[u8])> = survivors.iter().zip(inputs[0].chunks(unit)).map(|(&i, u)| (i as usize, u)).collect();
                let missing: Vec<usize> = missing.iter().map(|&i| i as usize).collect();
                let mut out: Vec<&mut [u8]> = output[..w * unit].chunks_mut(unit).collect();
                encoders.code(k, n - k).reconstruct(&units, &missing, &mut out).map_err(|_| Status::InvalidField)?;
            }
            Ok(((w * unit) as u64, crc_of(inputs)))
        }
        Function::ChunkFingerprint { min_kib, avg_kib, max_kib, sha256, at_end } => {
            let sizes = ChunkParams::new(min_kib as usize * 1024, avg_kib as usize * 1024, max_kib as usize * 1024).map_err(|_| Status::InvalidField)?;
            let fp = if sha256 { Fingerprint::Sha256 } else { Fingerprint::Blake3 };
            let cuts = chunk_digests(inputs[0], sizes, fp, at_end);
            let consumed = cuts.last().map_or(0, |&(o, l, _)| o + l);
            output[..8].copy_from_slice(&(cuts.len() as u64).to_le_bytes());
            output[8..16].copy_from_slice(&(consumed as u64).to_le_bytes());
            for (i, &(o, l, digest)) in cuts.iter().enumerate() {
                let e = &mut output[16 + i * CHUNK_ENTRY_BYTES..16 + (i + 1) * CHUNK_ENTRY_BYTES];
                e[..8].copy_from_slice(&(o as u64).to_le_bytes());
                e[8..16].copy_from_slice(&(l as u64).to_le_bytes());
                e[16..].copy_from_slice(&digest);
            }
            Ok(((16 + cuts.len() * CHUNK_ENTRY_BYTES) as u64, crc_of(inputs)))
        }
        Function::ScanCount { format, ignore_case, at_end, min_length } => {
            let format = [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines][format as usize];
            let motif = if inputs[1].is_empty() { None } else { Some(encoders.motif(inputs[1], ignore_case)?.clone()) };
            let filter = Filter { motif, min_length: (min_length > 0).then_some(min_length as usize), id_prefix: None };
            let records = inputs[0];
            let whole = whole_records(records, format, at_end).unwrap_or(0);
            // A FASTQ record that is not one is the data's fault, said as such: the output then
            // holds where it starts and why (SCAN_FAULT_BYTES), and no counters.
            let found = filter.block(&records[..whole], format, at_end, None).map_err(|m| {
                output[..SCAN_FAULT_BYTES].copy_from_slice(&scan_fault_record(m.offset as u64, m.fault as u64));
                Status::CorruptInput
            })?;
            let mut words = vec![found.records, found.matched, found.matched_bases, whole as u64];
            words.extend((0..64).map(|b| found.histogram.get(b).copied().unwrap_or(0)));
            for (i, w) in words.iter().enumerate() {
                output[8 * i..8 * i + 8].copy_from_slice(&w.to_le_bytes());
            }
            Ok((SCAN_RESULT_BYTES as u64, crc_of(&inputs[..1])))
        }
        Function::AeadSealBlock { index } => {
            let n = inputs[0].len();
            output[..n].copy_from_slice(inputs[0]);
            seal_block_with(inputs[1], index, &mut output[..n + TAG_BYTES]).ok_or(Status::InvalidField)?;
            // The CRC-32 of the plaintext only: the key material stays out of every report.
            Ok(((n + TAG_BYTES) as u64, crc_of(&inputs[..1])))
        }
        Function::AeadOpenBlock { index } => {
            // Opened in the output (the input stays as it was); nothing of a block that fails
            // authentication is left there.
            let n = inputs[0].len();
            output[..n].copy_from_slice(inputs[0]);
            if open_block_with(inputs[1], index, &mut output[..n]).is_none() {
                output[..n].fill(0);
                return Err(Status::CorruptInput);
            }
            Ok(((n - TAG_BYTES) as u64, crc_of(&inputs[..1])))
        }
        Function::GzipDecompressMember => {
            let member = inputs[0];
            let header = MemberHeader::parse(member).map_err(|_| Status::CorruptInput)?;
            let declared = peerpath_func::gzip::declared_output_bytes(&header, member).map_err(|_| Status::CorruptInput)?;
            let member_bytes = header.sizes.map(|s| s.member_bytes()).ok_or(Status::CorruptInput)?;
            if member_bytes != member.len() {
                return Err(Status::CorruptInput);
            }
            if output.len() < declared {
                return Err(Status::OutputTooSmall);
            }
            let n = decode_member(&header, member, output).map_err(|_| Status::CorruptInput)?;
            Ok((n as u64, crc_of(inputs)))
        }
        // Storage needs the device's files: a device that registers them runs
        // these itself (the CPU device: `storage_io`).
        Function::StorageRead { .. } | Function::StorageWrite { .. } => Err(Status::Unsupported),
    }
}

/// Runs a [`Function::StorageRead`] or [`Function::StorageWrite`] that passed
/// [`check`] on `file` (the CPU device's own storage I/O, `pread`/`pwrite` by
/// its worker): a read fills its output range until it is full or the file
/// ends; a write writes all of its input.
///
/// # Safety
/// As [`run`]: the ranges are claimed for the duration.
pub(crate) unsafe fn storage_io(memory: &DeviceMemory, request: &Request, file: Option<&std::fs::File>) -> Outcome {
    use std::os::unix::fs::FileExt;
    let start = Instant::now();
    let Some(file) = file else { return Outcome::failed(Status::StorageError) };
    let mut at = 0;
    let done = match request.function {
        Function::StorageRead { offset, .. } => {
            // SAFETY: the caller's contract: the output range fits and is claimed.
            let output = unsafe { memory.output(request.output) };
            loop {
                match file.read_at(&mut output[at..], offset + at as u64) {
                    Ok(0) => break Ok(()),
                    Ok(n) => at += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
                if at == output.len() {
                    break Ok(());
                }
            }
        }
        Function::StorageWrite { offset, .. } => {
            // SAFETY: the caller's contract: the input range fits and nothing writes it.
            let input = unsafe { memory.input(request.inputs[0]) };
            file.write_all_at(input, offset).map(|()| at = input.len())
        }
        _ => return Outcome::failed(Status::InvalidField),
    };
    if done.is_err() {
        return Outcome::failed(Status::StorageError);
    }
    Outcome::timed(Status::Success, at as u64, 0, start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::DeviceRange;

    fn all() -> FunctionSet {
        FunctionSet::all()
    }

    #[test]
    fn checks_refuse_what_cannot_run() {
        let r = DeviceRange::new;
        let lvl = Level::new(1).unwrap();
        let mem = 1 << 20;
        assert_eq!(check(&Request::fill(0, 1, r(0, 10)), mem, FunctionSet::EMPTY), Err(Status::Unsupported));
        assert_eq!(check(&Request::copy(0, &[r(0, 1), r(1, 1), r(2, 1)], r(100, 10)), mem, all()), Err(Status::InvalidField));
        let mut fill_with_input = Request::fill(0, 1, r(0, 10));
        fill_with_input.inputs.push(r(20, 1));
        assert_eq!(check(&fill_with_input, mem, all()), Err(Status::InvalidField));
        let mut crc_with_output = Request::crc32(0, &[r(0, 10)]);
        crc_with_output.output = r(100, 1);
        assert_eq!(check(&crc_with_output, mem, all()), Err(Status::InvalidField));
        assert_eq!(check(&Request::fill(0, 1, r(mem - 1, 2)), mem, all()), Err(Status::OutOfRange));
        assert_eq!(check(&Request::crc32(0, &[r(u64::MAX, 1)]), mem, all()), Err(Status::OutOfRange));
        assert_eq!(check(&Request::copy(0, &[r(0, 10)], r(5, 10)), mem, all()), Err(Status::RangeOverlap));
        assert_eq!(check(&Request::copy(0, &[r(0, 10)], r(10, 9)), mem, all()), Err(Status::OutputTooSmall));
        assert_eq!(
            check(&Request::compress(0, lvl, Format::Bgzf, r(0, 0xff01), r(0x10000, 0x20000)), mem, all()),
            Err(Status::InputTooLarge)
        );
        assert_eq!(check(&Request::compress(0, lvl, Format::Gzip, r(0, 1000), r(1000, 1000)), mem, all()), Err(Status::OutputTooSmall));
        assert_eq!(check(&Request::compress(0, lvl, Format::Gzip, r(0, 1000), r(1000, 2000)), mem, all()), Ok(()));
        assert_eq!(check(&Request::crc32(0, &[]), mem, all()), Ok(()), "the CRC-32 of nothing is 0");
        let seal = |inputs: Vec<DeviceRange>, output| Request { tag: 0, function: Function::AeadSealBlock { index: 3 }, inputs, output };
        assert_eq!(check(&seal(vec![r(0, 100)], r(1000, 200)), mem, all()), Err(Status::InvalidField), "no key material");
        assert_eq!(check(&seal(vec![r(0, 100), r(500, 32)], r(1000, 200)), mem, all()), Err(Status::InvalidField), "a bare 32-byte key is not the material");
        assert_eq!(check(&seal(vec![r(0, 100), r(500, 48)], r(1000, 115)), mem, all()), Err(Status::OutputTooSmall), "no room for the tag");
        assert_eq!(check(&seal(vec![r(0, 100), r(500, 48)], r(1000, 116)), mem, all()), Ok(()));
        let open = |inputs: Vec<DeviceRange>, output| Request { tag: 0, function: Function::AeadOpenBlock { index: 3 }, inputs, output };
        assert_eq!(check(&open(vec![r(0, 15), r(500, 48)], r(1000, 100)), mem, all()), Err(Status::CorruptInput), "shorter than a tag");
        assert_eq!(check(&open(vec![r(0, 116), r(500, 48)], r(1000, 100)), mem, all()), Err(Status::OutputTooSmall), "opened in place: room for the tag");
        assert_eq!(check(&open(vec![r(0, 116), r(500, 48)], r(1000, 116)), mem, all()), Ok(()));
        let cut = |min_kib| Request { tag: 0, function: Function::ChunkFingerprint { min_kib, avg_kib: 64, max_kib: 256, sha256: false, at_end: true }, inputs: vec![r(0, 100)], output: r(1000, 2000) };
        assert_eq!(check(&cut(0), mem, all()), Err(Status::InvalidField), "a minimum of 0 (no division by it)");
        assert_eq!(check(&cut(16), mem, all()), Ok(()));
        let chunk = |member_bytes| Request::compress_chunk(0, lvl, Format::Gzip, member_bytes, r(0, 1000), r(1000, 4000));
        assert_eq!(check(&chunk(0), mem, all()), Err(Status::InvalidField), "members of 0 bytes (a split into them panicked)");
        assert_eq!(check(&chunk(500), mem, all()), Ok(()));
    }

    #[test]
    fn compress_reports_the_crc_of_its_input_and_decompress_restores_it() {
        let m = DeviceMemory::host(1 << 20);
        let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
        // SAFETY: nothing else uses this memory.
        unsafe { m.host_write(0, &data) };
        let mut enc = Encoders::default();
        let req = Request::compress(1, Level::new(6).unwrap(), Format::Gzip, DeviceRange::new(0, data.len() as u64), DeviceRange::new(65536, 131072));
        check(&req, m.len() as u64, all()).unwrap();
        // SAFETY: checked, and nothing else runs on this memory.
        let out = unsafe { run(&m, &req, &mut enc) };
        assert_eq!(out.status, Status::Success);
        assert_eq!(out.input_crc32, libdeflater::crc32(&data));
        let member = DeviceRange::new(65536, out.output_bytes);
        let back = Request::decompress(2, member, DeviceRange::new(262144, 65536));
        check(&back, m.len() as u64, all()).unwrap();
        // SAFETY: as above.
        let out2 = unsafe { run(&m, &back, &mut enc) };
        assert_eq!(out2.status, Status::Success);
        assert_eq!(out2.output_bytes, data.len() as u64);
        let mut restored = vec![0u8; data.len()];
        // SAFETY: as above.
        unsafe { m.host_read(262144, &mut restored) };
        assert_eq!(restored, data);
        // A member range one byte short is corrupt input.
        let short = Request::decompress(3, DeviceRange::new(65536, out.output_bytes - 1), DeviceRange::new(262144, 65536));
        // SAFETY: as above.
        assert_eq!(unsafe { run(&m, &short, &mut enc) }.status, Status::CorruptInput);
    }
}
