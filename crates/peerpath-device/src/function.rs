//! The closed set of functions a device can run, numbered like opcodes.

use peerpath_func::{Format, Level};
use serde::Serialize;
use std::fmt;

/// One function with its parameters. The set is closed: a new function is a
/// new variant here, a new [`FunctionKind`] opcode, a CPU implementation in
/// `exec.rs`, and a row in `docs/queue-format.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "function", rename_all = "snake_case")]
pub enum Function {
    /// Gathers the input ranges, in order, into the start of the output
    /// range. Output bytes: the sum of the input lengths.
    Copy,
    /// Writes `byte` over the whole output range (no inputs).
    Fill { byte: u8 },
    /// Computes the CRC-32 (gzip's, IEEE) of the input ranges; no output.
    Crc32,
    /// Compresses one input range into one complete gzip member (header,
    /// deflate data, trailer) at the start of the output range, byte for
    /// byte what [`peerpath_func::encode_member`] writes. The output range
    /// must hold [`peerpath_func::member_bound_bytes`] of the input.
    GzipCompressMember { level: Level, format: Format },
    /// Compresses one input range, in blocks of `member_bytes` (the last
    /// may be shorter; an empty input is one empty member), into complete
    /// members written back to back at the start of the output range: what
    /// one [`Function::GzipCompressMember`] per block, then packing, would
    /// write. One command per chunk, for devices that batch. The output range
    /// must hold the members' bounds.
    GzipCompressChunk { level: Level, format: Format, member_bytes: u32 },
    /// Decodes one input range holding exactly one member with declared
    /// sizes (peerpath's 'PP' or BGZF's 'BC' subfield) into the output
    /// range, checking its CRC-32 and length.
    GzipDecompressMember,
    /// Reed-Solomon parity (`peerpath_func::ec::RsCode`, ISA-L): the one
    /// input range holds `data` units of equal length back to back; the
    /// `parity` parity units are written back to back at the start of the
    /// output range. Output bytes: `parity` units.
    EcEncode { data: u8, parity: u8 },
    /// Reed-Solomon reconstruction (`peerpath_func::ec::RsCode::reconstruct`,
    /// the same code as [`Function::EcEncode`]): input 0 holds `data` (k)
    /// surviving units of equal length back to back; input 1 holds k + `wanted`
    /// index bytes: the survivors' indices (0..k+m, in input 0's order), then
    /// the indices of the units wanted. The `wanted` units are written back
    /// to back at the start of the output range. Indices out of range,
    /// repeated, or wanted ones that survive: `InvalidField`.
    EcReconstruct { data: u8, parity: u8, wanted: u8 },
    /// Counts the records of input 0 (FASTA, FASTQ or lines, as
    /// `peerpath_func::scan`) that match the motif in input 1 (a regular
    /// expression in UTF-8; empty: none) and the minimum length, over the
    /// whole records only (all of input 0 with `at_end`). Output:
    /// [`SCAN_RESULT_BYTES`]: records, matched, matched bases, bytes of
    /// whole records consumed, then 64 histogram bins (u64 LE each).
    ScanCount { format: u8, ignore_case: bool, at_end: bool, min_length: u32 },
    /// Content-defined chunks of the input (FastCDC, `peerpath_func::dedup`,
    /// sizes in KiB) and each one's digest (BLAKE3, or SHA-256): the output
    /// is a count, the bytes consumed, then per chunk its offset, length
    /// ([`CHUNK_ENTRY_BYTES`] each: u64 LE, u64 LE, 32 digest bytes).
    /// Without `at_end` the last chunk (which more data could change) is
    /// left for the next command.
    ChunkFingerprint { min_kib: u16, avg_kib: u16, max_kib: u16, sha256: bool, at_end: bool },
    /// Seals block `index` of a `peerpath-enc/1` file (AES-256-GCM,
    /// `peerpath_func::crypt::seal_block_with`): input 0 is the plaintext,
    /// input 1 the file's device material
    /// (`peerpath_func::crypt::DEVICE_KEY_BYTES`: its block key and file
    /// id, never the master key); the ciphertext and its 16-byte tag are
    /// written at the start of the output range. The parameter word is the
    /// index (all ones, the header's, is refused).
    AeadSealBlock { index: u64 },
    /// Opens block `index` of a `peerpath-enc/1` file: input 0 the sealed
    /// block (ciphertext then tag), input 1 the device material as for
    /// [`Function::AeadSealBlock`]; the plaintext is written at the start of
    /// the output range. A block that is not authentic is `CorruptInput`.
    AeadOpenBlock { index: u64 },
    /// Reads the device's registered file `file` ([`crate::Device::register_file`])
    /// from byte `offset` into the output range, as storage DMAs into device
    /// memory (a GPU's through GPUDirect Storage's cuFile): no inputs. Output
    /// bytes: the bytes read, fewer only at the end of the file. The offset,
    /// the output range's offset and its length are multiples of
    /// [`STORAGE_ALIGN_BYTES`] (O_DIRECT); the offset is below 2^56. Not in
    /// [`FunctionSet::all`]: only a device with files registered runs it.
    StorageRead { file: u8, offset: u64 },
    /// Writes input 0 (device memory) to the device's registered file `file`
    /// at byte `offset`, as storage DMAs out of device memory: no output
    /// (an empty output range). Output bytes: the bytes written, all of
    /// them. Aligned as [`Function::StorageRead`]; not in [`FunctionSet::all`].
    StorageWrite { file: u8, offset: u64 },
}

/// The alignment of [`Function::StorageRead`]'s offsets and lengths.
pub const STORAGE_ALIGN_BYTES: u64 = 4096;

/// One chunk in [`Function::ChunkFingerprint`]'s output.
pub const CHUNK_ENTRY_BYTES: usize = 48;

/// The output of [`Function::ScanCount`]: four counters and 64 bins.
pub const SCAN_RESULT_BYTES: usize = 8 * (4 + 64);

/// What a [`Function::ScanCount`] that ends **CorruptInput** leaves at the start of its output
/// instead of counters: the first malformed FASTQ record's offset in the records, then why
/// (`peerpath_func::scan::FastqFault`'s number, 1-4), u64 LE each.
pub const SCAN_FAULT_BYTES: usize = 16;

/// The fault record of [`SCAN_FAULT_BYTES`].
pub fn scan_fault_record(offset: u64, fault: u64) -> [u8; SCAN_FAULT_BYTES] {
    let mut r = [0u8; SCAN_FAULT_BYTES];
    r[..8].copy_from_slice(&offset.to_le_bytes());
    r[8..].copy_from_slice(&fault.to_le_bytes());
    r
}

/// The offset and fault number a fault record holds.
pub fn parse_scan_fault_record(r: &[u8; SCAN_FAULT_BYTES]) -> (u64, u64) {
    (u64::from_le_bytes(r[..8].try_into().expect("8 bytes")), u64::from_le_bytes(r[8..].try_into().expect("8 bytes")))
}

impl Function {
    pub fn kind(&self) -> FunctionKind {
        match self {
            Function::Copy => FunctionKind::Copy,
            Function::Fill { .. } => FunctionKind::Fill,
            Function::Crc32 => FunctionKind::Crc32,
            Function::GzipCompressMember { .. } => FunctionKind::GzipCompressMember,
            Function::GzipCompressChunk { .. } => FunctionKind::GzipCompressChunk,
            Function::GzipDecompressMember => FunctionKind::GzipDecompressMember,
            Function::EcEncode { .. } => FunctionKind::EcEncode,
            Function::EcReconstruct { .. } => FunctionKind::EcReconstruct,
            Function::ScanCount { .. } => FunctionKind::ScanCount,
            Function::ChunkFingerprint { .. } => FunctionKind::ChunkFingerprint,
            Function::AeadSealBlock { .. } => FunctionKind::AeadSealBlock,
            Function::AeadOpenBlock { .. } => FunctionKind::AeadOpenBlock,
            Function::StorageRead { .. } => FunctionKind::StorageRead,
            Function::StorageWrite { .. } => FunctionKind::StorageWrite,
        }
    }

    /// The parameter word of a queue entry (`docs/queue-format.md`).
    pub fn param_word(&self) -> u64 {
        match *self {
            Function::Fill { byte } => byte as u64,
            Function::GzipCompressMember { level, format } => level.get() as u64 | (format_code(format) << 8),
            Function::GzipCompressChunk { level, format, member_bytes } => {
                level.get() as u64 | (format_code(format) << 8) | (u64::from(member_bytes) << 16)
            }
            Function::EcEncode { data, parity } => data as u64 | (parity as u64) << 8,
            Function::EcReconstruct { data, parity, wanted } => data as u64 | (parity as u64) << 8 | (wanted as u64) << 16,
            Function::ChunkFingerprint { min_kib, avg_kib, max_kib, sha256, at_end } => {
                min_kib as u64 | (avg_kib as u64) << 16 | (max_kib as u64) << 32 | (sha256 as u64) << 48 | (at_end as u64) << 49
            }
            Function::ScanCount { format, ignore_case, at_end, min_length } => {
                format as u64 | (ignore_case as u64) << 8 | (at_end as u64) << 9 | u64::from(min_length) << 16
            }
            Function::AeadSealBlock { index } | Function::AeadOpenBlock { index } => index,
            Function::StorageRead { file, offset } | Function::StorageWrite { file, offset } => offset | u64::from(file) << 56,
            Function::Copy | Function::Crc32 | Function::GzipDecompressMember => 0,
        }
    }

    /// Rebuilds a function from its opcode and parameter word; `None` for
    /// an unknown opcode or a parameter word with bits that mean nothing.
    pub fn from_opcode(opcode: u8, param: u64) -> Option<Result<Function, ()>> {
        let kind = FunctionKind::from_opcode(opcode)?;
        Some(match kind {
            FunctionKind::Copy | FunctionKind::Crc32 | FunctionKind::GzipDecompressMember => {
                if param != 0 {
                    Err(())
                } else {
                    Ok(match kind {
                        FunctionKind::Copy => Function::Copy,
                        FunctionKind::Crc32 => Function::Crc32,
                        _ => Function::GzipDecompressMember,
                    })
                }
            }
            FunctionKind::Fill => {
                if param > 0xff {
                    Err(())
                } else {
                    Ok(Function::Fill { byte: param as u8 })
                }
            }
            FunctionKind::GzipCompressMember => match (Level::new((param & 0xff) as u32), format_of((param >> 8) & 0xff), param >> 16) {
                (Ok(level), Some(format), 0) => Ok(Function::GzipCompressMember { level, format }),
                _ => Err(()),
            },
            FunctionKind::GzipCompressChunk => {
                let member_bytes = param >> 16;
                match (Level::new((param & 0xff) as u32), format_of((param >> 8) & 0xff)) {
                    (Ok(level), Some(format)) if (1..=u64::from(u32::MAX)).contains(&member_bytes) => {
                        Ok(Function::GzipCompressChunk { level, format, member_bytes: member_bytes as u32 })
                    }
                    _ => Err(()),
                }
            }
            FunctionKind::ChunkFingerprint => {
                let kib = |shift: u32| ((param >> shift) & 0xffff) as u16;
                let (min_kib, avg_kib, max_kib) = (kib(0), kib(16), kib(32));
                let sizes = peerpath_func::dedup::ChunkParams::new(min_kib as usize * 1024, avg_kib as usize * 1024, max_kib as usize * 1024);
                if param >> 50 != 0 || sizes.is_err() {
                    Err(())
                } else {
                    Ok(Function::ChunkFingerprint { min_kib, avg_kib, max_kib, sha256: param >> 48 & 1 == 1, at_end: param >> 49 & 1 == 1 })
                }
            }
            FunctionKind::ScanCount => {
                let (format, flags) = ((param & 0xff) as u8, (param >> 8) & 0xff);
                if format > 2 || flags > 3 || param >> 48 != 0 {
                    Err(())
                } else {
                    Ok(Function::ScanCount { format, ignore_case: flags & 1 != 0, at_end: flags & 2 != 0, min_length: (param >> 16) as u32 })
                }
            }
            FunctionKind::AeadSealBlock | FunctionKind::AeadOpenBlock if param == u64::MAX => Err(()),
            FunctionKind::AeadSealBlock => Ok(Function::AeadSealBlock { index: param }),
            FunctionKind::StorageRead => Ok(Function::StorageRead { file: (param >> 56) as u8, offset: param & ((1 << 56) - 1) }),
            FunctionKind::StorageWrite => Ok(Function::StorageWrite { file: (param >> 56) as u8, offset: param & ((1 << 56) - 1) }),
            FunctionKind::AeadOpenBlock => Ok(Function::AeadOpenBlock { index: param }),
            FunctionKind::EcEncode => {
                let (data, parity) = ((param & 0xff) as usize, ((param >> 8) & 0xff) as usize);
                if param >> 16 != 0 || data == 0 || parity == 0 || data + parity > peerpath_func::ec::MAX_SHARDS {
                    Err(())
                } else {
                    Ok(Function::EcEncode { data: data as u8, parity: parity as u8 })
                }
            }
            FunctionKind::EcReconstruct => {
                let (data, parity, wanted) = ((param & 0xff) as usize, ((param >> 8) & 0xff) as usize, ((param >> 16) & 0xff) as usize);
                if param >> 24 != 0 || data == 0 || parity == 0 || data + parity > peerpath_func::ec::MAX_SHARDS || wanted == 0 || wanted > parity {
                    Err(())
                } else {
                    Ok(Function::EcReconstruct { data: data as u8, parity: parity as u8, wanted: wanted as u8 })
                }
            }
        })
    }
}

fn format_code(format: Format) -> u64 {
    match format {
        Format::Gzip => 0,
        Format::Bgzf => 1,
    }
}

fn format_of(code: u64) -> Option<Format> {
    match code {
        0 => Some(Format::Gzip),
        1 => Some(Format::Bgzf),
        _ => None,
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Function::Fill { byte } => write!(f, "fill {byte:#04x}"),
            Function::GzipCompressMember { level, format } => {
                write!(f, "gzip compress member (level {}, {format:?})", level.get())
            }
            Function::GzipCompressChunk { level, format, member_bytes } => {
                write!(f, "gzip compress chunk (level {}, {format:?}, {member_bytes}-byte members)", level.get())
            }
            Function::EcEncode { data, parity } => write!(f, "erasure-code encode (RS({data}, {parity}))"),
            Function::EcReconstruct { data, parity, wanted } => write!(f, "erasure-code reconstruct (RS({data}, {parity}), units wanted: {wanted})"),
            Function::AeadSealBlock { index } => write!(f, "AEAD seal block {index}"),
            Function::AeadOpenBlock { index } => write!(f, "AEAD open block {index}"),
            Function::StorageRead { file, offset } => write!(f, "storage read (file {file}, byte {offset})"),
            Function::StorageWrite { file, offset } => write!(f, "storage write (file {file}, byte {offset})"),
            Function::ScanCount { format, min_length, .. } => write!(f, "scan count (format {format}, min length {min_length})"),
            Function::ChunkFingerprint { min_kib, avg_kib, max_kib, sha256, .. } => {
                write!(f, "chunk and fingerprint ({min_kib}/{avg_kib}/{max_kib} KiB, {})", if *sha256 { "sha256" } else { "blake3" })
            }
            other => f.write_str(other.kind().name()),
        }
    }
}

/// A function without its parameters: the opcode of a queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum FunctionKind {
    Copy = 0x01,
    Fill = 0x02,
    Crc32 = 0x03,
    GzipCompressMember = 0x10,
    GzipDecompressMember = 0x11,
    GzipCompressChunk = 0x12,
    EcEncode = 0x20,
    EcReconstruct = 0x21,
    ScanCount = 0x30,
    ChunkFingerprint = 0x31,
    AeadSealBlock = 0x40,
    AeadOpenBlock = 0x41,
    StorageRead = 0x50,
    StorageWrite = 0x51,
}

impl FunctionKind {
    /// Every function, in opcode order.
    pub const ALL: [FunctionKind; 14] = [
        FunctionKind::Copy,
        FunctionKind::Fill,
        FunctionKind::Crc32,
        FunctionKind::GzipCompressMember,
        FunctionKind::GzipDecompressMember,
        FunctionKind::GzipCompressChunk,
        FunctionKind::EcEncode,
        FunctionKind::EcReconstruct,
        FunctionKind::ScanCount,
        FunctionKind::ChunkFingerprint,
        FunctionKind::AeadSealBlock,
        FunctionKind::AeadOpenBlock,
        FunctionKind::StorageRead,
        FunctionKind::StorageWrite,
    ];

    pub fn opcode(self) -> u8 {
        self as u8
    }

    pub fn from_opcode(opcode: u8) -> Option<FunctionKind> {
        FunctionKind::ALL.into_iter().find(|k| k.opcode() == opcode)
    }

    /// Position in [`FunctionKind::ALL`] (and in statistics tables).
    pub fn index(self) -> usize {
        FunctionKind::ALL.iter().position(|k| *k == self).expect("ALL lists every kind")
    }

    pub fn name(self) -> &'static str {
        match self {
            FunctionKind::Copy => "copy",
            FunctionKind::Fill => "fill",
            FunctionKind::Crc32 => "crc32",
            FunctionKind::GzipCompressMember => "gzip compress member",
            FunctionKind::GzipDecompressMember => "gzip decompress member",
            FunctionKind::GzipCompressChunk => "gzip compress chunk",
            FunctionKind::EcEncode => "erasure-code encode",
            FunctionKind::EcReconstruct => "erasure-code reconstruct",
            FunctionKind::ScanCount => "scan count",
            FunctionKind::ChunkFingerprint => "chunk and fingerprint",
            FunctionKind::AeadSealBlock => "aead seal block",
            FunctionKind::AeadOpenBlock => "aead open block",
            FunctionKind::StorageRead => "storage read",
            FunctionKind::StorageWrite => "storage write",
        }
    }

    /// It reads storage (files registered with the device), not only device memory.
    pub fn reaches_storage(self) -> bool {
        matches!(self, FunctionKind::StorageRead | FunctionKind::StorageWrite)
    }

    /// Bit of this function in a [`FunctionSet`] (one bit per index).
    fn bit(self) -> u32 {
        1 << self.index()
    }
}

/// The functions a device supports (a bit set over [`FunctionKind::ALL`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FunctionSet(u32);

impl FunctionSet {
    pub const EMPTY: FunctionSet = FunctionSet(0);

    /// Every function on device memory alone (not those that reach storage,
    /// which a device runs only for files registered with it).
    pub fn all() -> FunctionSet {
        FunctionKind::ALL.into_iter().filter(|k| !k.reaches_storage()).fold(FunctionSet::EMPTY, FunctionSet::with)
    }
    pub fn with(self, kind: FunctionKind) -> FunctionSet {
        FunctionSet(self.0 | kind.bit())
    }
    pub fn contains(&self, kind: FunctionKind) -> bool {
        self.0 & kind.bit() != 0
    }
    pub fn iter(&self) -> impl Iterator<Item = FunctionKind> + '_ {
        FunctionKind::ALL.into_iter().filter(|k| self.contains(*k))
    }
    /// The wire form (identify data): bit `i` is `FunctionKind::ALL[i]`.
    pub fn bits(&self) -> u32 {
        self.0
    }
    /// From the wire form; bits for functions this build does not know are dropped.
    pub fn from_bits(bits: u32) -> FunctionSet {
        FunctionSet(bits & FunctionKind::ALL.into_iter().fold(FunctionSet::EMPTY, FunctionSet::with).0)
    }
}

impl Serialize for FunctionSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The units a reconstruction wants, without "unit(s)" for any number.
    #[test]
    fn a_reconstruction_names_its_units_wanted_without_a_plural() {
        for wanted in [1, 2] {
            assert_eq!(Function::EcReconstruct { data: 4, parity: 2, wanted }.to_string(), format!("erasure-code reconstruct (RS(4, 2), units wanted: {wanted})"));
        }
    }

    #[test]
    fn every_function_round_trips_through_opcode_and_param() {
        let mut functions = vec![Function::Copy, Function::Crc32, Function::GzipDecompressMember, Function::Fill { byte: 0xa5 }, Function::EcEncode { data: 4, parity: 2 }, Function::EcEncode { data: 245, parity: 10 }, Function::EcReconstruct { data: 4, parity: 2, wanted: 2 }, Function::EcReconstruct { data: 200, parity: 55, wanted: 1 }, Function::ScanCount { format: 2, ignore_case: true, at_end: false, min_length: 70_000 }, Function::ChunkFingerprint { min_kib: 16, avg_kib: 64, max_kib: 256, sha256: true, at_end: true }, Function::AeadSealBlock { index: 0 }, Function::AeadSealBlock { index: u64::MAX - 1 }, Function::AeadOpenBlock { index: 9 }, Function::StorageRead { file: 255, offset: (1 << 56) - 4096 }, Function::StorageRead { file: 0, offset: 0 }, Function::StorageWrite { file: 3, offset: 1 << 40 }];
        for level in 0..=Level::MAX {
            for format in [Format::Gzip, Format::Bgzf] {
                functions.push(Function::GzipCompressMember { level: Level::new(level).unwrap(), format });
            }
        }
        for f in functions {
            assert_eq!(Function::from_opcode(f.kind().opcode(), f.param_word()), Some(Ok(f)));
        }
    }

    #[test]
    fn unknown_opcodes_and_bad_params_are_refused() {
        assert_eq!(Function::from_opcode(0x00, 0), None);
        assert_eq!(Function::from_opcode(0x7f, 0), None);
        assert_eq!(Function::from_opcode(0x01, 1), Some(Err(())));
        assert_eq!(Function::from_opcode(0x02, 0x100), Some(Err(())));
        assert_eq!(Function::from_opcode(0x10, 13), Some(Err(())), "level 13 does not exist");
        assert_eq!(Function::from_opcode(0x10, 2 << 8), Some(Err(())), "format 2 does not exist");
        assert_eq!(Function::from_opcode(0x10, 1 << 16), Some(Err(())), "reserved bits");
        assert_eq!(Function::from_opcode(0x20, 4), Some(Err(())), "no parity shards");
        assert_eq!(Function::from_opcode(0x20, 200 | 100 << 8), Some(Err(())), "over 255 shards");
        assert_eq!(Function::from_opcode(0x20, 4 | 2 << 8 | 1 << 16), Some(Err(())), "reserved bits");
        assert_eq!(Function::from_opcode(0x21, 4 | 2 << 8), Some(Err(())), "no unit wanted");
        assert_eq!(Function::from_opcode(0x21, 4 | 2 << 8 | 3 << 16), Some(Err(())), "more wanted than parity");
        assert_eq!(Function::from_opcode(0x21, 4 | 2 << 8 | 1 << 16 | 1 << 24), Some(Err(())), "reserved bits");
        assert_eq!(Function::from_opcode(0x30, 3), Some(Err(())), "format 3 does not exist");
        assert_eq!(Function::from_opcode(0x30, 1 << 10), Some(Err(())), "unknown flag");
        assert_eq!(Function::from_opcode(0x31, 16 | 8 << 16 | 256 << 32), Some(Err(())), "min over avg");
        assert_eq!(Function::from_opcode(0x31, 16 | 64 << 16 | 256 << 32 | 1 << 50), Some(Err(())), "unknown flag");
        assert_eq!(Function::from_opcode(0x40, u64::MAX), Some(Err(())), "the header's index");
        assert_eq!(Function::from_opcode(0x41, u64::MAX), Some(Err(())), "the header's index");
    }

    #[test]
    fn function_sets_hold_what_was_added() {
        let s = FunctionSet::EMPTY.with(FunctionKind::Crc32);
        assert!(s.contains(FunctionKind::Crc32));
        assert!(!s.contains(FunctionKind::Copy));
        assert_eq!(FunctionSet::from_bits(FunctionSet::all().bits() | 0x8000_0000), FunctionSet::all());
        assert_eq!(FunctionSet::all().iter().count(), FunctionKind::ALL.len() - 2, "all but the storage read and write");
        assert!(!FunctionSet::all().contains(FunctionKind::StorageRead) && FunctionKind::StorageRead.reaches_storage() && FunctionKind::StorageWrite.reaches_storage());
        let with = FunctionSet::all().with(FunctionKind::StorageRead).with(FunctionKind::StorageWrite);
        assert_eq!(FunctionSet::from_bits(with.bits()), with, "the wire keeps it");
    }
}
