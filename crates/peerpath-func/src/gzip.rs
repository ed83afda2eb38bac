//! gzip members (RFC 1952), as peerpath writes and reads them.
//!
//! The header and the stored-block fallback are written by hand: they are a
//! few fixed bytes, and no maintained crate both writes a custom FEXTRA
//! subfield and parses headers with the byte offsets our errors report.
//!
//! ```text
//! peerpath member (default format)            BGZF member (htslib)
//! +----+----+----+-----+-------+-----+----+   +--------------------+----------+
//! | 1f | 8b | 08 | FLG | MTIME | XFL | OS |   | same, FLG = FEXTRA | XLEN = 6 |
//! +----+----+----+-----+-------+-----+----+   +--------------------+----------+
//! | XLEN=12 | 'P' 'P' | LEN=8 |                | 'B' 'C' | LEN=2 | BSIZE (u16) |
//! | member_bytes (u32 LE) | isize (u32 LE) |  | deflate data ...               |
//! | deflate data ...                       |  | CRC-32 | ISIZE                 |
//! | CRC-32 (LE) | ISIZE (LE)               |  +--------------------------------+
//! +----------------------------------------+  BSIZE = member bytes - 1
//! ```
//! `member_bytes` counts the whole member, header to trailer; with it a
//! reader can split a file into members without inflating, and decompress
//! them on all cores.
//!
//! A stream ends with an empty member of each format: peerpath's end member
//! ([`PEERPATH_END_MEMBER`]) and BGZF's end-of-file block. A file cut at a
//! member's end is whole to any reader but for it; readers here refuse a
//! stream of peerpath's members without it ([`StreamError::NoEndMember`]).

use crate::isal::{inflate_stateless, InflateOutcome, IsalDeflater, StepError, StreamInflater};
use serde::Serialize;
use std::io::{self, Read};

const ID1: u8 = 0x1f;
const ID2: u8 = 0x8b;
const CM_DEFLATE: u8 = 8;
const FTEXT: u8 = 0x01;
const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xe0;
const OS_UNIX: u8 = 3;
const TRAILER_BYTES: usize = 8;
/// Bytes kept before the read position for ISA-L's rewinds (its bit buffer is 64 bits).
const REWIND_BYTES: usize = 16;

/// The peerpath subfield ID ('P', 'P').
pub const PEERPATH_SUBFIELD: [u8; 2] = *b"PP";
pub const PEERPATH_HEADER_BYTES: usize = 10 + 2 + 4 + 8;
const BGZF_HEADER_BYTES: usize = 18;

/// The most zero bytes after a file's last member taken as padding and
/// ignored, as gzip ignores them: tar's records (10 KiB by default, 32 KiB
/// with `-b 64`) stay below it. More zeros are how a file whose end was lost
/// looks (a crash leaves zeros where data was not yet written), which would
/// otherwise decode short without a word. Other input (a block device, a
/// pipe) takes any ([`StreamDecoder::any_zero_padding`]).
pub const MAX_ZERO_PADDING: u64 = 64 << 10;

/// The largest input of one BGZF member (htslib's BGZF_BLOCK_SIZE = 0xff00),
/// chosen so that even stored (incompressible) data fits the 64 KiB limit.
pub const BGZF_MAX_INPUT_BYTES: usize = 0xff00;
/// htslib's end-of-file marker: an empty BGZF member.
pub const BGZF_EOF_BLOCK: [u8; 28] = [
    0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0xff, 0x06, 0, b'B', b'C', 0x02, 0, 0x1b, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];
/// peerpath's end member: an empty member with the 'PP' subfield (34
/// bytes, declaring itself and no data), written after every stream's last
/// member. A file cut at a member's end decodes whole to its last member, in
/// gzip as in any reader; this member is what tells such a file from one
/// that ended there (as BGZF's end-of-file block does, [`BGZF_EOF_BLOCK`]).
/// gzip, pigz and zcat read it as the empty member it is.
pub const PEERPATH_END_MEMBER: [u8; 34] = [
    0x1f, 0x8b, 0x08, 0x04, 0, 0, 0, 0, 0, 0x03, 12, 0, b'P', b'P', 8, 0, 34, 0, 0, 0, 0, 0, 0, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];
/// Members declaring more than this many uncompressed bytes are refused
/// before any allocation (a lying size field must not exhaust memory).
pub const MAX_MEMBER_UNCOMPRESSED_BYTES: usize = 256 << 20;
/// The most output one byte of deflate data can produce (a 258-byte match
/// coded in 2 bits: 258 * 8 / 2).
const MAX_DEFLATE_EXPANSION: usize = 1032;
/// Headers (with FNAME/FCOMMENT/FEXTRA) longer than this are refused.
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// How far past a bad member start [`StreamDecoder`] looks for a later
/// member, and the most bytes a member read whole into memory may declare
/// (one of peerpath's largest, 256 MiB stored, and its header).
const MAX_MEMBER_SCAN: u64 = (256 << 20) + (1 << 20);

/// Output layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Multi-member gzip, each member with a 'PP' size subfield.
    Gzip,
    /// BGZF: 64 KiB members with a 'BC' subfield and an EOF marker block.
    Bgzf,
}

/// The longer of the formats' end markers ([`Format::end_marker`]).
pub const END_MARKER_MAX_BYTES: usize = if PEERPATH_END_MEMBER.len() > BGZF_EOF_BLOCK.len() { PEERPATH_END_MEMBER.len() } else { BGZF_EOF_BLOCK.len() };

impl Format {
    /// What ends every stream written in this format: peerpath's end
    /// member ([`PEERPATH_END_MEMBER`]), BGZF's end-of-file block.
    pub fn end_marker(self) -> &'static [u8] {
        match self {
            Format::Gzip => &PEERPATH_END_MEMBER,
            Format::Bgzf => &BGZF_EOF_BLOCK,
        }
    }
}

/// A compression level and the library that implements it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Level(u32);

impl Level {
    pub const MAX: u32 = 12;

    pub fn new(level: u32) -> Result<Self, String> {
        if level > Self::MAX {
            return Err(format!("level {level} is out of range 0-{}", Self::MAX));
        }
        Ok(Level(level))
    }
    pub fn get(&self) -> u32 {
        self.0
    }
    /// Which library compresses at this level.
    pub fn library(&self) -> &'static str {
        if self.0 <= 3 {
            "ISA-L igzip"
        } else {
            "libdeflate"
        }
    }
    fn xfl(&self) -> u8 {
        match self.0 {
            0..=1 => 4, // fastest
            9.. => 2,   // maximum compression
            _ => 0,
        }
    }
}

/// Bytes of output that always suffice for one member of `input_bytes`
/// (the data stored uncompressed, plus header, block headers and trailer).
pub fn member_bound_bytes(input_bytes: usize) -> usize {
    PEERPATH_HEADER_BYTES + stored_deflate_bytes(input_bytes) + TRAILER_BYTES
}

fn stored_deflate_bytes(input_bytes: usize) -> usize {
    input_bytes + 5 * input_bytes.div_ceil(0xffff).max(1)
}

/// Writes `input` as stored deflate blocks (used when compression would
/// expand the data, as gzip and pigz do).
fn write_stored(input: &[u8], out: &mut [u8]) -> usize {
    let mut pos = 0;
    let mut chunks = input.chunks(0xffff).peekable();
    if chunks.peek().is_none() {
        out[..5].copy_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
        return 5;
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let len = chunk.len() as u16;
        out[pos] = u8::from(last);
        out[pos + 1..pos + 3].copy_from_slice(&len.to_le_bytes());
        out[pos + 3..pos + 5].copy_from_slice(&(!len).to_le_bytes());
        out[pos + 5..pos + 5 + chunk.len()].copy_from_slice(chunk);
        pos += 5 + chunk.len();
    }
    pos
}

/// Reusable compression state for one worker thread.
pub struct MemberEncoder {
    level: Level,
    isal: Option<IsalDeflater>,
    libdeflate: Option<libdeflater::Compressor>,
}

impl MemberEncoder {
    pub fn new(level: Level) -> Self {
        let (isal, libdeflate) = if level.0 <= 3 {
            (Some(IsalDeflater::new(level.0)), None)
        } else {
            let lvl = libdeflater::CompressionLvl::new(level.0 as i32).expect("level checked by Level::new");
            (None, Some(libdeflater::Compressor::new(lvl)))
        };
        MemberEncoder { level, isal, libdeflate }
    }

    pub fn level(&self) -> Level {
        self.level
    }

    /// Writes deflate data + trailer for `input` into `out`, returning its length.
    fn deflate_and_trailer(&mut self, input: &[u8], out: &mut [u8]) -> usize {
        let stored_total = stored_deflate_bytes(input.len()) + TRAILER_BYTES;
        let limit = stored_total.min(out.len());
        if let Some(isal) = &mut self.isal {
            if let Some(n) = isal.deflate_with_gzip_trailer(input, &mut out[..limit]) {
                if n < stored_total {
                    return n;
                }
            }
        } else if let Some(c) = &mut self.libdeflate {
            let room = limit - TRAILER_BYTES;
            if let Ok(n) = c.deflate_compress(input, &mut out[..room]) {
                if n + TRAILER_BYTES < stored_total {
                    write_trailer(&mut out[n..], libdeflater::crc32(input), input.len());
                    return n + TRAILER_BYTES;
                }
            }
        }
        let n = write_stored(input, out);
        let crc = libdeflater::crc32(input);
        write_trailer(&mut out[n..], crc, input.len());
        n + TRAILER_BYTES
    }
}

fn write_trailer(out: &mut [u8], crc32: u32, input_bytes: usize) {
    out[..4].copy_from_slice(&crc32.to_le_bytes());
    out[4..8].copy_from_slice(&(input_bytes as u32).to_le_bytes());
}

fn write_fixed_header(out: &mut [u8], xfl: u8) {
    out[..10].copy_from_slice(&[ID1, ID2, CM_DEFLATE, FEXTRA, 0, 0, 0, 0, xfl, OS_UNIX]);
}

/// peerpath's member header: the fixed header with FEXTRA and the 'PP'
/// subfield declaring the member's length (`member_bytes`, header
/// included) and its uncompressed bytes. A device that makes deflate data
/// and trailer puts this before them.
pub fn peerpath_header(xfl: u8, member_bytes: u32, uncompressed_bytes: u32) -> [u8; PEERPATH_HEADER_BYTES] {
    let mut h = [0u8; PEERPATH_HEADER_BYTES];
    write_fixed_header(&mut h, xfl);
    h[10..12].copy_from_slice(&12u16.to_le_bytes());
    h[12..14].copy_from_slice(&PEERPATH_SUBFIELD);
    h[14..16].copy_from_slice(&8u16.to_le_bytes());
    h[16..20].copy_from_slice(&member_bytes.to_le_bytes());
    h[20..24].copy_from_slice(&uncompressed_bytes.to_le_bytes());
    h
}

/// The deflate data and trailer of a gzip member with the plain 10-byte
/// header (no flags: no extra field, name or comment), as other encoders
/// (nvCOMP) make them; `None` for anything else.
pub fn plain_member_body(member: &[u8]) -> Option<&[u8]> {
    (member.len() >= 18 && member[..3] == [ID1, ID2, CM_DEFLATE] && member[3] == 0).then(|| &member[10..])
}

/// gzip's CRC-32 of `data` (libdeflate's, folded with PCLMULQDQ where the CPU has it).
pub fn crc32(data: &[u8]) -> u32 {
    libdeflater::crc32(data)
}

/// Compresses `input` into one complete member in `out` (which must hold
/// [`member_bound_bytes`]) and returns the member's length. Deterministic:
/// the same input, level and format give the same bytes on every device and
/// in every process (`isal::IsalDeflater` says what that took for ISA-L).
pub fn encode_member(enc: &mut MemberEncoder, format: Format, input: &[u8], out: &mut [u8]) -> usize {
    assert!(out.len() >= member_bound_bytes(input.len()), "output buffer below member_bound_bytes");
    match format {
        Format::Gzip => {
            assert!(input.len() <= MAX_MEMBER_UNCOMPRESSED_BYTES, "block larger than the member limit");
            let body = enc.deflate_and_trailer(input, &mut out[PEERPATH_HEADER_BYTES..]);
            let total = PEERPATH_HEADER_BYTES + body;
            out[..PEERPATH_HEADER_BYTES].copy_from_slice(&peerpath_header(enc.level.xfl(), total as u32, input.len() as u32));
            total
        }
        Format::Bgzf => {
            assert!(input.len() <= BGZF_MAX_INPUT_BYTES, "BGZF members hold at most 0xff00 input bytes");
            let body = enc.deflate_and_trailer(input, &mut out[BGZF_HEADER_BYTES..]);
            let total = BGZF_HEADER_BYTES + body;
            debug_assert!(total <= 65536, "stored fallback keeps BGZF members within 64 KiB");
            write_fixed_header(out, enc.level.xfl());
            out[9] = 0xff; // htslib writes OS = unknown
            out[10..12].copy_from_slice(&6u16.to_le_bytes());
            out[12..14].copy_from_slice(b"BC");
            out[14..16].copy_from_slice(&2u16.to_le_bytes());
            out[16..18].copy_from_slice(&((total - 1) as u16).to_le_bytes());
            total
        }
    }
}

/// Sizes a member declares about itself in its extra field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeclaredSizes {
    /// peerpath's 'PP' subfield.
    Peerpath { member_bytes: u32, uncompressed_bytes: u32 },
    /// BGZF's 'BC' subfield (the uncompressed size is in the trailer).
    Bgzf { member_bytes: u32 },
}

impl DeclaredSizes {
    pub fn member_bytes(&self) -> usize {
        match *self {
            DeclaredSizes::Peerpath { member_bytes, .. } | DeclaredSizes::Bgzf { member_bytes } => member_bytes as usize,
        }
    }
}

/// A parsed member header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberHeader {
    pub header_bytes: usize,
    pub flags: u8,
    pub mtime: u32,
    pub name: Option<Vec<u8>>,
    pub comment: Option<Vec<u8>>,
    pub sizes: Option<DeclaredSizes>,
}

/// Why a header could not be parsed. Offsets are relative to the member start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("header is cut short (needs more than {available} bytes)")]
    Truncated { available: usize },
    /// Its first byte, and its second where it has one.
    #[error("not gzip data (starts with {}, not 1f 8b)", first_bytes(*.0, *.1))]
    NotGzip(u8, Option<u8>),
    #[error("corrupt header at byte {offset}: {reason}")]
    Corrupt { offset: usize, reason: String },
}

/// "bytes 61 62", or "the one byte 61" of a file that has no more.
pub fn first_bytes(a: u8, b: Option<u8>) -> String {
    match b {
        Some(b) => format!("bytes {a:02x} {b:02x}"),
        None => format!("the one byte {a:02x}"),
    }
}

fn corrupt(offset: usize, reason: impl Into<String>) -> HeaderError {
    HeaderError::Corrupt { offset, reason: reason.into() }
}

fn take_zstring(data: &[u8], pos: usize) -> Result<(Vec<u8>, usize), HeaderError> {
    let limit = data.len().min(MAX_HEADER_BYTES);
    match data[pos..limit].iter().position(|&b| b == 0) {
        Some(n) => Ok((data[pos..pos + n].to_vec(), pos + n + 1)),
        None if data.len() >= MAX_HEADER_BYTES => Err(corrupt(pos, "unterminated name or comment longer than 1 MiB")),
        None => Err(HeaderError::Truncated { available: data.len() }),
    }
}

impl MemberHeader {
    /// Whether a stream that ends with this member lacks peerpath's end
    /// member ([`PEERPATH_END_MEMBER`]): a member of peerpath's (the 'PP'
    /// subfield) that holds data. peerpath ends every stream it writes with
    /// the empty one, so such a stream was cut at a member's end.
    pub fn wants_an_end_member(&self) -> bool {
        matches!(self.sizes, Some(DeclaredSizes::Peerpath { uncompressed_bytes, .. }) if uncompressed_bytes > 0)
    }

    /// Whether this member may follow one that wants an end member: only
    /// peerpath's members make up one of its streams, up to its end member,
    /// so another member there (plain gzip's, BGZF's) shows the stream cut.
    pub fn continues_a_peerpath_stream(&self) -> bool {
        matches!(self.sizes, Some(DeclaredSizes::Peerpath { .. }))
    }

    /// Whether a stream that ends with this member lacks BGZF's end-of-file
    /// block: a BGZF member with data (the block is the empty one, 28 bytes).
    pub fn wants_a_bgzf_eof_block(&self) -> bool {
        matches!(self.sizes, Some(DeclaredSizes::Bgzf { member_bytes }) if member_bytes as usize != BGZF_EOF_BLOCK.len())
    }

    /// Parses the header at the start of `data`.
    pub fn parse(data: &[u8]) -> Result<MemberHeader, HeaderError> {
        if data.len() >= 2 && (data[0] != ID1 || data[1] != ID2) {
            return Err(HeaderError::NotGzip(data[0], Some(data[1])));
        }
        // One byte that is not 1f is already not gzip (not a cut-short header).
        if data.len() == 1 && data[0] != ID1 {
            return Err(HeaderError::NotGzip(data[0], None));
        }
        if data.len() < 10 {
            return Err(HeaderError::Truncated { available: data.len() });
        }
        if data[2] != CM_DEFLATE {
            return Err(corrupt(2, format!("compression method {} (only 8, deflate, exists)", data[2])));
        }
        let flags = data[3];
        if flags & FRESERVED != 0 {
            return Err(corrupt(3, format!("reserved flag bits set ({flags:#04x})")));
        }
        let mtime = u32::from_le_bytes(data[4..8].try_into().expect("4 bytes"));
        let mut pos = 10;
        let mut sizes = None;
        if flags & FEXTRA != 0 {
            if data.len() < pos + 2 {
                return Err(HeaderError::Truncated { available: data.len() });
            }
            let xlen = u16::from_le_bytes([data[pos], data[pos + 1]]) as usize;
            pos += 2;
            if data.len() < pos + xlen {
                return Err(HeaderError::Truncated { available: data.len() });
            }
            sizes = parse_extra(&data[pos..pos + xlen]);
            pos += xlen;
        }
        let name = if flags & FNAME != 0 {
            let (s, p) = take_zstring(data, pos)?;
            pos = p;
            Some(s)
        } else {
            None
        };
        let comment = if flags & FCOMMENT != 0 {
            let (s, p) = take_zstring(data, pos)?;
            pos = p;
            Some(s)
        } else {
            None
        };
        if flags & FHCRC != 0 {
            if data.len() < pos + 2 {
                return Err(HeaderError::Truncated { available: data.len() });
            }
            let stored = u16::from_le_bytes([data[pos], data[pos + 1]]);
            let actual = (libdeflater::crc32(&data[..pos]) & 0xffff) as u16;
            if stored != actual {
                return Err(corrupt(pos, format!("header CRC {stored:#06x} does not match {actual:#06x}")));
            }
            pos += 2;
        }
        let _ = FTEXT; // FTEXT is a hint only
        Ok(MemberHeader { header_bytes: pos, flags, mtime, name, comment, sizes })
    }
}

/// Walks the FEXTRA subfields. An extra field that is not a list of whole
/// subfields declares no sizes: gzip skips the field whole and reads such a
/// member, and so does peerpath, streaming it (its CRC-32 and length still
/// check the data), rather than trust a size found in it.
fn parse_extra(extra: &[u8]) -> Option<DeclaredSizes> {
    let mut sizes = None;
    let mut p = 0;
    while p < extra.len() {
        if extra.len() - p < 4 {
            return None; // it ends inside a subfield's header
        }
        let id = [extra[p], extra[p + 1]];
        let len = u16::from_le_bytes([extra[p + 2], extra[p + 3]]) as usize;
        let body_start = p + 4;
        if extra.len() - body_start < len {
            return None; // a subfield runs past the field
        }
        let body = &extra[body_start..body_start + len];
        match (&id, len) {
            (b"PP", 8) => {
                sizes = Some(DeclaredSizes::Peerpath {
                    member_bytes: u32::from_le_bytes(body[..4].try_into().expect("4 bytes")),
                    uncompressed_bytes: u32::from_le_bytes(body[4..].try_into().expect("4 bytes")),
                })
            }
            (b"BC", 2) => {
                sizes = Some(DeclaredSizes::Bgzf { member_bytes: u16::from_le_bytes([body[0], body[1]]) as u32 + 1 })
            }
            _ => {}
        }
        p = body_start + len;
    }
    sizes
}

/// Why a member failed to decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemberError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("member is cut short: {declared} bytes declared, {available} present")]
    Truncated { declared: usize, available: usize },
    #[error("size field is inconsistent: {0}")]
    SizeField(String),
    /// The 'PP' field's uncompressed size is not the ISIZE found where its
    /// member size puts the trailer: either field may lie, or the trailer.
    /// The streaming decoders inflate such a member to tell which.
    #[error("size field is inconsistent: declares {uncompressed_bytes} uncompressed bytes, trailer says {trailer_isize}")]
    SizesDisagree { uncompressed_bytes: u32, trailer_isize: u32 },
    #[error("corrupt deflate data: {0}")]
    Deflate(String),
    /// The trailer's CRC-32 or ISIZE does not match the data: what each
    /// says, the fields that differ named. `length`: all the member's bytes
    /// (ISIZE holds them mod 2^32).
    #[error("{}", trailer_mismatch(*trailer_crc, *trailer_isize, *crc, *length))]
    Trailer { trailer_crc: u32, trailer_isize: u32, crc: u32, length: u64 },
    #[error("input ends inside the member (at byte {at})")]
    CutShort { at: u64 },
}

/// [`MemberError::Trailer`]'s words: each field that differs, what the
/// trailer says and what the data has.
fn trailer_mismatch(trailer_crc: u32, trailer_isize: u32, crc: u32, length: u64) -> String {
    let mut parts = Vec::new();
    if trailer_crc != crc {
        parts.push(format!("CRC-32 mismatch: the trailer says CRC-32 {trailer_crc:#010x}, the data has {crc:#010x}"));
    }
    if u64::from(trailer_isize) != length {
        let wrapped = if length > u64::from(u32::MAX) { format!(" ({} mod 2^32)", length as u32) } else { String::new() };
        parts.push(format!("length mismatch: the trailer says {trailer_isize} bytes (ISIZE), the data has {length}{wrapped}"));
    }
    parts.join("; ")
}

/// The uncompressed size a member with known sizes will produce (checked
/// against [`MAX_MEMBER_UNCOMPRESSED_BYTES`] before anyone allocates it).
pub fn declared_output_bytes(header: &MemberHeader, member: &[u8]) -> Result<usize, MemberError> {
    declared_output_bytes_from(header, member.len(), |member_bytes| u32::from_le_bytes(member[member_bytes - 4..member_bytes].try_into().expect("4 bytes")))
}

/// [`declared_output_bytes`] for a member of which `available` bytes exist
/// but only the header is at hand: `trailer_isize` gives the trailer's
/// ISIZE, asked only once the member is known to hold its header and
/// trailer and to lie within `available`.
pub fn declared_output_bytes_from(header: &MemberHeader, available: usize, trailer_isize: impl FnOnce(usize) -> u32) -> Result<usize, MemberError> {
    let sizes = header.sizes.ok_or_else(|| MemberError::SizeField("member has no size subfield".into()))?;
    let member_bytes = sizes.member_bytes();
    if member_bytes < header.header_bytes + TRAILER_BYTES {
        return Err(MemberError::SizeField(format!(
            "declares {member_bytes} bytes, less than its own header and trailer"
        )));
    }
    if available < member_bytes {
        return Err(MemberError::Truncated { declared: member_bytes, available });
    }
    let trailer_isize = trailer_isize(member_bytes);
    let out = match sizes {
        DeclaredSizes::Peerpath { uncompressed_bytes, .. } => {
            if uncompressed_bytes != trailer_isize {
                return Err(MemberError::SizesDisagree { uncompressed_bytes, trailer_isize });
            }
            uncompressed_bytes as usize
        }
        DeclaredSizes::Bgzf { .. } => trailer_isize as usize,
    };
    if out > MAX_MEMBER_UNCOMPRESSED_BYTES {
        return Err(MemberError::SizeField(format!(
            "declares {out} uncompressed bytes, above the {MAX_MEMBER_UNCOMPRESSED_BYTES}-byte member limit"
        )));
    }
    // Deflate cannot expand more than 1032:1 (a 258-byte match in 2 bits of
    // a dynamic block), so a member declaring more than that from its own
    // deflate bytes is lying, and is refused before anyone allocates: else a
    // 2 KiB file of tiny members each claiming 256 MiB makes the parallel
    // decoder reserve gigabytes.
    let deflate_bytes = member_bytes - header.header_bytes - TRAILER_BYTES;
    if out > deflate_bytes.saturating_mul(MAX_DEFLATE_EXPANSION) {
        return Err(MemberError::SizeField(format!(
            "declares {out} uncompressed bytes from {deflate_bytes} bytes of deflate data, more than deflate can expand to"
        )));
    }
    Ok(out)
}

/// Decodes one member whose sizes are declared in its header. `member`
/// holds at least the declared member bytes; `out` at least the declared
/// output. Returns bytes produced. Never reads or writes past either.
pub fn decode_member(header: &MemberHeader, member: &[u8], out: &mut [u8]) -> Result<usize, MemberError> {
    let expected_out = declared_output_bytes(header, member)?;
    let member_bytes = header.sizes.expect("checked above").member_bytes();
    assert!(out.len() >= expected_out, "output buffer below the declared size");
    let deflate = &member[header.header_bytes..member_bytes - TRAILER_BYTES];
    let trailer = &member[member_bytes - TRAILER_BYTES..member_bytes];
    let trailer_crc = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes"));
    let trailer_isize = u32::from_le_bytes(trailer[4..].try_into().expect("4 bytes"));
    match inflate_stateless(deflate, &mut out[..expected_out]) {
        InflateOutcome::Finished { consumed, produced, crc32 } => {
            if consumed != deflate.len() {
                return Err(MemberError::SizeField(format!(
                    "deflate data ends {} bytes before the declared member end",
                    deflate.len() - consumed
                )));
            }
            if crc32 != trailer_crc || produced != expected_out {
                return Err(MemberError::Trailer { trailer_crc, trailer_isize, crc: crc32, length: produced as u64 });
            }
            Ok(produced)
        }
        InflateOutcome::OutputFull => Err(MemberError::SizeField(format!(
            "data inflates to more than the declared {expected_out} bytes"
        ))),
        InflateOutcome::InputEnded => Err(MemberError::Deflate(
            "deflate stream does not end within the declared member size".into(),
        )),
        InflateOutcome::Invalid(why) => Err(MemberError::Deflate(why.into())),
    }
}

/// An error of the streaming decoder, placed in the input.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("member {member} at byte {offset}: {error}")]
    Member { member: u64, offset: u64, error: MemberError },
    #[error("empty input: a gzip file holds at least one member")]
    Empty,
    #[error("trailing garbage after the last member, at byte {offset}")]
    TrailingGarbage { offset: u64 },
    /// More zero bytes after the last member than padding leaves ([`MAX_ZERO_PADDING`]).
    #[error("{bytes} zero bytes after the last member, from byte {offset}: more than tar or block padding leaves ({} KiB), so the file's end may be lost (a crash leaves zeros where data was not yet written)", MAX_ZERO_PADDING >> 10)]
    ZeroTail { offset: u64, bytes: u64 },
    /// The last member is one of peerpath's with data, and no end member
    /// follows it ([`MemberHeader::wants_an_end_member`]).
    #[error("the file ends at byte {offset}, after a member of peerpath's, without the end member peerpath writes after a file's last member: it was cut at a member's end, and what followed is lost")]
    NoEndMember { offset: u64 },
    /// A member that is not peerpath's right after one of peerpath's that
    /// wants its end member: the file does not end there, so it is damaged
    /// there (a member header whose 'PP' field was hit, or a cut stream
    /// joined to other gzip data).
    #[error("member {member} at byte {offset}: {}", NOT_PEERPATH_AFTER_PEERPATH)]
    NotPeerpathAfterPeerpath { member: u64, offset: u64 },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What [`StreamError::NotPeerpathAfterPeerpath`] says of its member.
pub const NOT_PEERPATH_AFTER_PEERPATH: &str = "not a member of peerpath's (no 'PP' size field in its header), yet it follows one of peerpath's with no end member between them: this member's header is damaged, or the peerpath stream was cut here and other gzip data joined to it";

impl StreamError {
    fn at(member: u64, offset: u64, error: impl Into<MemberError>) -> Self {
        StreamError::Member { member, offset, error: error.into() }
    }
}

/// A member for a worker of [`StreamDecoder::run_parallel`]: its sequence
/// number, index and offset in the stream, header, bytes, and a buffer for its output.
type Job = (u64, u64, u64, MemberHeader, Vec<u8>, Vec<u8>);
/// What a worker gives back: the sequence number, the output length (or
/// the error), and both buffers.
type Done = (u64, Result<usize, StreamError>, Vec<u8>, Vec<u8>);

/// [`StreamDecoder::run_parallel`]'s results, put back in order.
struct Ordered {
    /// The sequence number of the next member whose output goes out.
    next: u64,
    waiting: std::collections::BTreeMap<u64, (Vec<u8>, usize)>,
    /// Buffers to reuse: members' and outputs'.
    members: Vec<Vec<u8>>,
    outs: Vec<Vec<u8>>,
    /// The first error met (by sequence number), after which nothing more goes out.
    error: Option<(u64, StreamError)>,
}

impl Ordered {
    fn arrived(&mut self, (seq, decoded, member, out): Done, sink: &mut impl FnMut(&[u8]) -> io::Result<()>, bytes_out: &mut u64) {
        self.members.push(member);
        match decoded {
            Ok(n) => {
                self.waiting.insert(seq, (out, n));
            }
            Err(e) => {
                self.outs.push(out);
                if self.error.as_ref().is_none_or(|(s, _)| seq < *s) {
                    self.error = Some((seq, e));
                }
            }
        }
        while self.error.is_none() {
            let Some((out, n)) = self.waiting.remove(&self.next) else { break };
            if let Err(e) = sink(&out[..n]) {
                self.error = Some((self.next, e.into()));
            }
            *bytes_out += n as u64;
            self.next += 1;
            self.outs.push(out);
        }
    }
}

/// Decodes any valid gzip stream (one or many members, any header fields)
/// one member after another, on one thread.
pub struct StreamDecoder<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Offset in the input of buf[start].
    offset: u64,
    inflater: StreamInflater,
    out: Vec<u8>,
    pub members: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Time spent inflating (summed over the workers of [`StreamDecoder::run_parallel`]).
    pub inflating: std::time::Duration,
    /// The most zero bytes after the last member taken as padding ([`MAX_ZERO_PADDING`]).
    max_zero_padding: u64,
    /// Where the last member ended, if it wants an end member after it
    /// ([`MemberHeader::wants_an_end_member`]).
    unended_at: Option<u64>,
    /// Whether a stream that lacks its end member is an error ([`StreamDecoder::allow_missing_end_member`]).
    end_member_required: bool,
    /// Where an end member was missing, where that was allowed.
    missing_end: Option<u64>,
    /// Whether the last member is BGZF's with data (no end-of-file block after it).
    bgzf_unended: bool,
}

impl<R: Read> StreamDecoder<R> {
    /// Any number of zero bytes after the last member is padding: for input that is not a
    /// file whose end a crash could have zeroed (a block device larger than its stream, a pipe
    /// from `dd` of one), as gzip takes it.
    pub fn any_zero_padding(mut self) -> Self {
        self.max_zero_padding = u64::MAX;
        self
    }

    /// A stream of peerpath's members without the end member after its
    /// last one decodes without an error: a file written before peerpath
    /// wrote end members, read knowing that a cut at a member's end goes
    /// unnoticed.
    pub fn allow_missing_end_member(mut self) -> Self {
        self.end_member_required = false;
        self
    }

    /// For a decoder that starts after members decoded elsewhere: the last
    /// of them ended at `at` and wanted an end member after it (a stream
    /// cut there must not pass for whole when what follows is padding).
    pub fn after_member_wanting_an_end(mut self, at: Option<u64>) -> Self {
        self.unended_at = at;
        self
    }

    /// Where an end member was missing (a stream of peerpath's members that
    /// ended, or went on with another kind of member, without it), where
    /// [`StreamDecoder::allow_missing_end_member`] let that pass.
    pub fn missing_end_member(&self) -> Option<u64> {
        self.missing_end
    }

    /// Whether the stream ended with a BGZF member of data, without BGZF's
    /// end-of-file block: a warning, as `bgzip` gives one (htslib's
    /// specification only recommends the block).
    pub fn ends_bgzf_without_eof(&self) -> bool {
        self.bgzf_unended
    }

    /// `offset` is where `reader` starts in the file (for error messages);
    /// `members_before` how many members precede it.
    pub fn new(reader: R, offset: u64, members_before: u64) -> Self {
        StreamDecoder {
            reader,
            buf: vec![0u8; 1 << 20],
            start: 0,
            end: 0,
            eof: false,
            offset,
            inflater: StreamInflater::new(),
            out: vec![0u8; 1 << 20],
            members: members_before,
            bytes_in: 0,
            bytes_out: 0,
            inflating: std::time::Duration::ZERO,
            max_zero_padding: MAX_ZERO_PADDING,
            unended_at: None,
            end_member_required: true,
            missing_end: None,
            bgzf_unended: false,
        }
    }

    /// At the stream's clean end: an error where its last member wants an end member after it.
    fn check_end(&mut self) -> Result<(), StreamError> {
        self.no_end_member_at(self.unended_at)
    }

    /// An end member missing where the last member ended (`at`): an error, or noted where allowed.
    fn no_end_member_at(&mut self, at: Option<u64>) -> Result<(), StreamError> {
        match at {
            Some(offset) if self.end_member_required => Err(StreamError::NoEndMember { offset }),
            Some(offset) => {
                self.missing_end.get_or_insert(offset);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// After member `header` (ending at the current offset): what a stream ending here lacks.
    fn ended_member(&mut self, header: &MemberHeader) {
        self.unended_at = header.wants_an_end_member().then_some(self.offset);
        self.bgzf_unended = header.wants_a_bgzf_eof_block();
    }

    /// Reads more input after what is buffered; false at end of input.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        // Keep a few bytes before `start`: ISA-L may hand back up to 8 bytes
        // of read-ahead from an earlier call (see `Step::consumed`).
        let keep = self.start.min(REWIND_BYTES);
        if self.start > keep {
            self.buf.copy_within(self.start - keep..self.end, 0);
            self.end -= self.start - keep;
            self.start = keep;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
        self.bytes_in += n as u64;
    }

    /// Decodes everything, handing output to `sink`. `first_is_required`
    /// makes an empty input an error (true for whole files).
    pub fn run(&mut self, first_is_required: bool, mut sink: impl FnMut(&[u8]) -> io::Result<()>) -> Result<(), StreamError> {
        let mut first = first_is_required;
        while self.member_follows(first)? {
            first = false;
            self.member(&mut sink)?;
        }
        self.check_end()
    }

    /// Whether another member starts here: false at a clean end (no more
    /// input, or only zero padding, which gzip ignores too); an error for an
    /// empty input where one is required (`first`), and for bytes that are
    /// not gzip.
    fn member_follows(&mut self, first: bool) -> Result<bool, StreamError> {
        while self.end - self.start < 2 && self.fill()? {}
        if self.end == self.start {
            return if first { Err(StreamError::Empty) } else { Ok(false) };
        }
        let avail = &self.buf[self.start..self.end];
        if avail[0] == ID1 && (avail.len() < 2 || avail[1] == ID2) {
            return Ok(true);
        }
        if first {
            return Err(StreamError::at(self.members, self.offset, HeaderError::NotGzip(avail[0], avail.get(1).copied())));
        }
        let (at, b0, b1) = (self.offset, avail[0], avail.get(1).copied().unwrap_or(0));
        // gzip ignores trailing zero padding (tar blocks); so do we, up to
        // what padding leaves: more is the look of a file whose end was lost.
        if self.rest_is_zero()? {
            let bytes = self.offset - at;
            return if bytes <= self.max_zero_padding { Ok(false) } else { Err(StreamError::ZeroTail { offset: at, bytes }) };
        }
        // Bytes that are not a member, then a member that declares its
        // sizes: a damaged member start (exit 6), not garbage at the end.
        if let Some(next) = self.member_after(at)? {
            let reason = format!(
                "bytes {b0:02x} {b1:02x} where a member should begin (not 1f 8b), but a member that declares its sizes begins {} bytes later, at byte {next}: the file is damaged here, not followed by garbage",
                next - at
            );
            return Err(StreamError::at(self.members, at, HeaderError::Corrupt { offset: 0, reason }));
        }
        Err(StreamError::TrailingGarbage { offset: at })
    }

    /// The offset of the first member that declares its sizes (peerpath's
    /// 'PP' or BGZF's 'BC' field) after byte `from`, looking at most
    /// [`MAX_MEMBER_SCAN`] bytes ahead. Garbage all but never holds one by
    /// chance (magic, method, flags and the field's id and length must all
    /// agree); after a bad member start it shows the file is damaged.
    /// Consumes what it looks at (the stream fails either way).
    fn member_after(&mut self, from: u64) -> io::Result<Option<u64>> {
        if self.offset == from {
            self.consume(1.min(self.end - self.start));
        }
        while self.offset - from <= MAX_MEMBER_SCAN {
            match self.buf[self.start..self.end].iter().position(|&b| b == ID1) {
                Some(i) => {
                    self.consume(i);
                    match MemberHeader::parse(&self.buf[self.start..self.end]) {
                        Ok(h) if h.sizes.is_some() => return Ok(Some(self.offset)),
                        // Needs more bytes: read them, then look again here.
                        Err(HeaderError::Truncated { .. }) => {
                            if !self.fill()? {
                                return Ok(None);
                            }
                        }
                        _ => self.consume(1),
                    }
                }
                None => {
                    self.consume(self.end - self.start);
                    if !self.fill()? {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(None)
    }

    /// The header of the member starting here (not consumed), reading as
    /// much input as it takes.
    fn header(&mut self) -> Result<MemberHeader, StreamError> {
        let (index, offset) = (self.members, self.offset);
        loop {
            match MemberHeader::parse(&self.buf[self.start..self.end]) {
                Ok(h) => {
                    // Another kind of member after one of peerpath's that wants its end member:
                    // damaged here (the file does not end here), or allowed and noted.
                    if !h.continues_a_peerpath_stream() {
                        if let Some(at) = self.unended_at.take() {
                            if self.end_member_required {
                                return Err(StreamError::NotPeerpathAfterPeerpath { member: index, offset });
                            }
                            self.missing_end.get_or_insert(at);
                        }
                    }
                    return Ok(h);
                }
                Err(HeaderError::Truncated { .. }) => {
                    if !self.fill()? {
                        return Err(StreamError::at(index, offset, self.cut_short()));
                    }
                }
                Err(e) => return Err(StreamError::at(index, offset, e)),
            }
        }
    }

    /// As [`StreamDecoder::run`], with the members that declare their sizes
    /// (peerpath's and BGZF's) decoded on `threads` worker threads, their
    /// output handed to `sink` in order; a member without sizes is decoded
    /// here, streaming, once those before it are out. This thread reads and
    /// cuts members; at most two per worker are in flight (memory stays
    /// bounded), their buffers reused. The first error in stream order is
    /// the one returned, as on one thread.
    pub fn run_parallel(&mut self, threads: usize, first_is_required: bool, mut sink: impl FnMut(&[u8]) -> io::Result<()>) -> Result<(), StreamError> {
        if threads <= 1 {
            return self.run(first_is_required, sink);
        }
        let (job_tx, job_rx) = std::sync::mpsc::sync_channel::<Job>(threads);
        let job_rx = std::sync::Mutex::new(job_rx);
        let (done_tx, done_rx) = std::sync::mpsc::channel::<Done>();
        let inflating_ns = std::sync::atomic::AtomicU64::new(0);
        let ran = std::thread::scope(|scope| {
            for _ in 0..threads {
                let (job_rx, done_tx, inflating_ns) = (&job_rx, done_tx.clone(), &inflating_ns);
                scope.spawn(move || loop {
                    let job = job_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((seq, index, offset, header, member, mut out)) = job else { return };
                    let t = std::time::Instant::now();
                    let decoded = declared_output_bytes(&header, &member).and_then(|n| {
                        out.resize(n, 0);
                        decode_member(&header, &member, &mut out)
                    });
                    inflating_ns.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
                    let _ = done_tx.send((seq, decoded.map_err(|e| StreamError::at(index, offset, e)), member, out));
                });
            }
            drop(done_tx);
            let mut order = Ordered { next: 0, waiting: std::collections::BTreeMap::new(), members: Vec::new(), outs: Vec::new(), error: None };
            let read = self.cut_members(threads, first_is_required, &job_tx, &done_rx, &mut order, &mut sink);
            drop(job_tx);
            // Every member in flight comes back (the workers end when the jobs do).
            while let Ok(d) = done_rx.recv() {
                order.arrived(d, &mut sink, &mut self.bytes_out);
            }
            // The first error in stream order: a member's before a later read error.
            match (order.error.take(), read) {
                (Some((seq, e)), Err((at, _))) if seq < at => Err(e),
                (_, Err((_, e))) => Err(e),
                (Some((_, e)), Ok(())) => Err(e),
                (None, Ok(())) => Ok(()),
            }
        });
        // The members the reader decoded itself (unsized ones) are in already.
        self.inflating += std::time::Duration::from_nanos(inflating_ns.into_inner());
        ran
    }

    /// `run_parallel`'s reading side: cuts sized members and sends them to
    /// the workers, decodes others here. An error carries the sequence
    /// number of the member it belongs to (errors of members before it win).
    #[allow(clippy::too_many_arguments)]
    fn cut_members(
        &mut self,
        threads: usize,
        first_is_required: bool,
        jobs: &std::sync::mpsc::SyncSender<Job>,
        done: &std::sync::mpsc::Receiver<Done>,
        order: &mut Ordered,
        sink: &mut impl FnMut(&[u8]) -> io::Result<()>,
    ) -> Result<(), (u64, StreamError)> {
        let mut first = first_is_required;
        let mut seq = 0u64;
        loop {
            // Results so far go out; at most two members a worker in flight.
            while let Ok(d) = done.try_recv() {
                order.arrived(d, sink, &mut self.bytes_out);
            }
            while seq - order.next >= 2 * threads as u64 && order.error.is_none() {
                match done.recv() {
                    Ok(d) => order.arrived(d, sink, &mut self.bytes_out),
                    Err(_) => break,
                }
            }
            if order.error.is_some() {
                return Ok(());
            }
            let at = |e: StreamError| (seq, e);
            if !self.member_follows(first).map_err(at)? {
                return self.check_end().map_err(at);
            }
            first = false;
            let (index, offset) = (self.members, self.offset);
            let header = self.header().map_err(at)?;
            let declared = header.sizes.map(|sizes| sizes.member_bytes());
            if let Some(n) = declared.filter(|&n| n < header.header_bytes + TRAILER_BYTES) {
                return Err(at(StreamError::at(index, offset, MemberError::SizeField(format!("declares {n} bytes, less than its own header and trailer")))));
            }
            // A member without sizes, or whose declared bytes are not all
            // there (cut inside it, or its field lies: only inflating it
            // tells which, as `run` does) or more than a member can hold
            // (not read into memory first), or whose sizes disagree with
            // the trailer where its member size puts it (which lies, only
            // inflating it tells), is decoded here, once everything before
            // it is out.
            let whole = match declared {
                Some(n) => {
                    self.holds(n).map_err(|e| at(e.into()))?
                        && !matches!(declared_output_bytes(&header, &self.buf[self.start..self.start + n]), Err(MemberError::SizesDisagree { .. }))
                }
                None => false,
            };
            let Some(n) = declared.filter(|_| whole) else {
                while order.next < seq {
                    match done.recv() {
                        Ok(d) => order.arrived(d, sink, &mut self.bytes_out),
                        Err(_) => break,
                    }
                    if order.error.is_some() {
                        return Ok(());
                    }
                }
                self.member(sink).map_err(at)?;
                seq += 1;
                order.next = seq;
                continue;
            };
            let (mut member, out) = (order.members.pop().unwrap_or_default(), order.outs.pop().unwrap_or_default());
            member.clear();
            member.extend_from_slice(&self.buf[self.start..self.start + n]);
            self.consume(n);
            self.members += 1;
            self.ended_member(&header);
            if jobs.send((seq, index, offset, header, member, out)).is_err() {
                return Ok(());
            }
            seq += 1;
        }
    }

    /// Whether the next `n` bytes are buffered, reading them where they are
    /// not yet: false where the input ends first, or where `n` is more than
    /// any member of up to [`MAX_MEMBER_UNCOMPRESSED_BYTES`] takes.
    fn holds(&mut self, n: usize) -> io::Result<bool> {
        if n as u64 > MAX_MEMBER_SCAN {
            return Ok(false);
        }
        while self.end - self.start < n {
            if !self.fill()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn rest_is_zero(&mut self) -> io::Result<bool> {
        loop {
            if self.buf[self.start..self.end].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            self.consume(self.end - self.start);
            if !self.fill()? {
                return Ok(true);
            }
        }
    }

    fn member(&mut self, sink: &mut impl FnMut(&[u8]) -> io::Result<()>) -> Result<(), StreamError> {
        let (index, member_offset) = (self.members, self.offset);
        let header = self.header()?;
        self.consume(header.header_bytes);
        self.inflater.reset();
        let mut produced: u64 = 0;
        loop {
            if self.start == self.end && !self.fill()? {
                return Err(StreamError::at(index, member_offset, self.cut_short()));
            }
            let t = std::time::Instant::now();
            let stepped = self.inflater.step(&self.buf[self.start..self.end], &mut self.out);
            self.inflating += t.elapsed();
            let step = match stepped {
                Ok(step) => step,
                Err(StepError::Invalid(why)) => return Err(StreamError::at(index, member_offset, MemberError::Deflate(why.into()))),
                Err(StepError::TrailerMismatch { consumed }) => return Err(StreamError::at(index, member_offset, self.trailer_mismatch(produced, consumed))),
            };
            if step.consumed >= 0 {
                self.consume(step.consumed as usize);
            } else {
                let back = step.consumed.unsigned_abs();
                if back > self.start || back as u64 > self.bytes_in {
                    return Err(StreamError::at(index, member_offset, MemberError::Deflate("decoder stepped back past the buffered input".into())));
                }
                self.start -= back;
                self.offset -= back as u64;
                self.bytes_in -= back as u64;
            }
            if step.produced > 0 {
                sink(&self.out[..step.produced])?;
                produced += step.produced as u64;
            }
            if step.finished {
                break;
            }
            if step.consumed <= 0 && step.produced == 0 && self.start < self.end && !self.fill()? {
                // No progress with input and output room: ISA-L wants more
                // input than is left.
                return Err(StreamError::at(index, member_offset, self.cut_short()));
            }
        }
        // A member with a size subfield must match it here as it must in the
        // parallel reader (which hands this decoder the members it cannot
        // take: after one without sizes, or larger than its read window).
        if let Some(sizes) = header.sizes {
            let actual = self.offset - member_offset;
            let lie = if sizes.member_bytes() as u64 != actual {
                Some(format!("declares {} member bytes, the member has {actual}", sizes.member_bytes()))
            } else if let DeclaredSizes::Peerpath { uncompressed_bytes, .. } = sizes {
                (uncompressed_bytes as u64 != produced)
                    .then(|| format!("declares {uncompressed_bytes} uncompressed bytes, the data gives {produced}"))
            } else {
                None
            };
            if let Some(why) = lie {
                return Err(StreamError::at(index, member_offset, MemberError::SizeField(why)));
            }
        }
        self.members += 1;
        self.bytes_out += produced;
        self.ended_member(&header);
        Ok(())
    }

    /// The input ended inside a member: where it ended.
    fn cut_short(&self) -> MemberError {
        MemberError::CutShort { at: self.offset + (self.end - self.start) as u64 }
    }

    /// `produced`: the member's bytes that went out before the step that
    /// failed; the inflater counted that step's too, but mod 2^32 (it said
    /// "length 12345" of a member of 4 GiB and 12345 bytes). `consumed`:
    /// that step's, which ends right after the trailer (still buffered:
    /// [`REWIND_BYTES`] are kept before the read position).
    fn trailer_mismatch(&self, produced: u64, consumed: isize) -> MemberError {
        let (crc, counted) = self.inflater.crc32_and_length();
        let length = produced + u64::from(counted.wrapping_sub(produced as u32));
        let end = self.start.checked_add_signed(consumed).filter(|&end| end <= self.end);
        let Some(trailer) = end.and_then(|end| self.buf.get(end.checked_sub(TRAILER_BYTES)?..end)) else {
            return MemberError::Deflate("decoder read its trailer outside the buffered input".into());
        };
        let field = |at: usize| u32::from_le_bytes(trailer[at..at + 4].try_into().expect("4 bytes"));
        MemberError::Trailer { trailer_crc: field(0), trailer_isize: field(4), crc, length }
    }
}
