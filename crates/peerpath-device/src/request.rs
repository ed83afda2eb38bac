//! Requests, completions and the errors of a device: plain data, shared by
//! every device and by the queue format.

use crate::function::Function;
use peerpath_func::{Format, Level};
use serde::Serialize;
use std::fmt;

/// The most input ranges one request carries (two fit in a queue entry).
pub const MAX_INPUT_RANGES: usize = 2;

/// A byte range in a device's memory: an offset from the start of that
/// memory, never a host pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize)]
pub struct DeviceRange {
    pub offset: u64,
    pub len: u64,
}

impl DeviceRange {
    pub const EMPTY: DeviceRange = DeviceRange { offset: 0, len: 0 };

    pub fn new(offset: u64, len: u64) -> DeviceRange {
        DeviceRange { offset, len }
    }

    /// One past the last byte, or `None` if that overflows.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.len)
    }

    /// Whether the range lies inside a memory of `memory_bytes`.
    pub fn fits(&self, memory_bytes: u64) -> bool {
        matches!(self.end(), Some(end) if end <= memory_bytes)
    }

    /// Whether two ranges share a byte (empty ranges share none).
    pub fn overlaps(&self, other: &DeviceRange) -> bool {
        if self.len == 0 || other.len == 0 {
            return false;
        }
        let (Some(a_end), Some(b_end)) = (self.end(), other.end()) else {
            return true; // an overflowing range is refused before this matters
        };
        self.offset < b_end && other.offset < a_end
    }
}

impl fmt::Display for DeviceRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:#x}, +{})", self.offset, self.len)
    }
}

/// One command for a device: a function, its input ranges and its output
/// range, all in the device's memory. `tag` is the caller's, returned
/// untouched in the completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub tag: u64,
    pub function: Function,
    /// At most [`MAX_INPUT_RANGES`]; the device refuses more.
    pub inputs: Vec<DeviceRange>,
    /// Empty for functions without output (CRC-32).
    pub output: DeviceRange,
}

impl Request {
    /// Compresses `input` in blocks of `member_bytes` into members written
    /// back to back at the start of `output`.
    pub fn compress_chunk(tag: u64, level: Level, format: Format, member_bytes: u32, input: DeviceRange, output: DeviceRange) -> Request {
        Request { tag, function: Function::GzipCompressChunk { level, format, member_bytes }, inputs: vec![input], output }
    }
    /// Compresses `input` into one gzip member at the start of `output`.
    pub fn compress(tag: u64, level: Level, format: Format, input: DeviceRange, output: DeviceRange) -> Request {
        Request { tag, function: Function::GzipCompressMember { level, format }, inputs: vec![input], output }
    }
    /// Decodes the member in `input` into `output`.
    pub fn decompress(tag: u64, input: DeviceRange, output: DeviceRange) -> Request {
        Request { tag, function: Function::GzipDecompressMember, inputs: vec![input], output }
    }
    /// The parity of `input` (`data` units back to back) into the start of `output`.
    pub fn ec_encode(tag: u64, data: u8, parity: u8, input: DeviceRange, output: DeviceRange) -> Request {
        Request { tag, function: Function::EcEncode { data, parity }, inputs: vec![input], output }
    }
    /// Counts the records of `records` matching the motif in `pattern` (see [`Function::ScanCount`]).
    pub fn scan_count(tag: u64, function: Function, records: DeviceRange, pattern: DeviceRange, output: DeviceRange) -> Request {
        Request { tag, function, inputs: vec![records, pattern], output }
    }
    /// Chunks and fingerprints of `input` (see [`Function::ChunkFingerprint`]).
    pub fn chunk_fingerprint(tag: u64, function: Function, input: DeviceRange, output: DeviceRange) -> Request {
        Request { tag, function, inputs: vec![input], output }
    }
    /// CRC-32 of `inputs` (in order).
    pub fn crc32(tag: u64, inputs: &[DeviceRange]) -> Request {
        Request { tag, function: Function::Crc32, inputs: inputs.to_vec(), output: DeviceRange::EMPTY }
    }
    /// Gathers `inputs` (in order) into the start of `output`.
    pub fn copy(tag: u64, inputs: &[DeviceRange], output: DeviceRange) -> Request {
        Request { tag, function: Function::Copy, inputs: inputs.to_vec(), output }
    }
    /// Writes `byte` over `output`.
    pub fn fill(tag: u64, byte: u8, output: DeviceRange) -> Request {
        Request { tag, function: Function::Fill { byte }, inputs: Vec::new(), output }
    }

    pub fn input_bytes(&self) -> u64 {
        self.inputs.iter().map(|r| r.len).fold(0, u64::saturating_add)
    }
}

/// The outcome of a command, as a device reports it. Codes are the queue
/// format's (`docs/queue-format.md`); 0 is success.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u16)]
pub enum Status {
    Success = 0,
    /// The opcode names no function (queue entries only).
    InvalidOpcode = 1,
    /// A malformed entry or request: reserved bits set, unknown parameter,
    /// wrong number of input ranges for the function.
    InvalidField = 2,
    /// A range ends past the device's memory (or its end overflows).
    OutOfRange = 3,
    /// Within one request, an input range overlaps the output range.
    RangeOverlap = 4,
    /// The request writes bytes another command in flight reads or writes,
    /// or reads bytes one in flight writes.
    RangeConflict = 5,
    /// The output range is smaller than the function needs.
    OutputTooSmall = 6,
    /// The input is larger than the function takes (a BGZF member over
    /// 0xff00 bytes, a gzip member over 256 MiB).
    InputTooLarge = 7,
    /// Decompression: not a member with declared sizes, or its data, CRC-32
    /// or length is wrong, or it does not fill its input range exactly.
    CorruptInput = 8,
    /// The device does not implement this function.
    Unsupported = 9,
    /// The device failed while running the command.
    Internal = 10,
    /// The command was dropped (queue reset, device shutting down).
    Aborted = 11,
    /// An error injected by the faulty-device wrapper.
    InjectedFault = 12,
    /// Reading a registered file failed (an I/O error, a file the device
    /// cannot reach, or one it has no number for).
    StorageError = 13,
}

impl Status {
    pub const ALL: [Status; 14] = [
        Status::Success,
        Status::InvalidOpcode,
        Status::InvalidField,
        Status::OutOfRange,
        Status::RangeOverlap,
        Status::RangeConflict,
        Status::OutputTooSmall,
        Status::InputTooLarge,
        Status::CorruptInput,
        Status::Unsupported,
        Status::Internal,
        Status::Aborted,
        Status::InjectedFault,
        Status::StorageError,
    ];

    pub fn code(self) -> u16 {
        self as u16
    }

    pub fn from_code(code: u16) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.code() == code)
    }

    pub fn is_success(self) -> bool {
        self == Status::Success
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Success => "success",
            Status::InvalidOpcode => "invalid opcode",
            Status::InvalidField => "invalid field in the request",
            Status::OutOfRange => "range outside the device memory",
            Status::RangeOverlap => "input range overlaps the output range",
            Status::RangeConflict => "range in use by a command in flight",
            Status::OutputTooSmall => "output range too small",
            Status::InputTooLarge => "input too large for the function",
            Status::CorruptInput => "corrupt input",
            Status::Unsupported => "function not supported by the device",
            Status::Internal => "internal device error",
            Status::Aborted => "command aborted",
            Status::InjectedFault => "injected fault",
            Status::StorageError => "storage read failed",
        })
    }
}

/// A finished command. The request comes back whatever happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub request: Request,
    pub status: Status,
    /// Bytes written at the start of the output range (0 unless success).
    pub output_bytes: u64,
    /// CRC-32 of the input bytes the device read (for compression, of the
    /// uncompressed input; for decompression, of the member bytes). 0 when
    /// it read nothing or failed before reading.
    pub input_crc32: u32,
    /// Time the device spent running the command, in microseconds.
    pub device_time_us: u32,
}

impl Completion {
    pub fn tag(&self) -> u64 {
        self.request.tag
    }
}

/// The answer to [`crate::Device::submit`].
#[derive(Debug)]
pub enum Submit {
    /// Accepted; its completion will come from `poll`.
    Queued,
    /// The queue is full: the request is handed back; poll, then retry.
    Busy(Request),
    /// The device has failed (lost, timed out, malformed completions) and
    /// will take nothing more: the request is handed back with the reason.
    Refused(Request, DeviceError),
}

/// How a device failed. After any of these the device takes no more
/// requests; its in-flight requests come back inside the error (once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The device is gone (process died, connection closed, crashed).
    Lost,
    /// Commands were in flight and none completed for the timeout.
    Timeout,
    /// The device posted a completion that cannot be right (unknown or
    /// duplicate command id, unknown status, output longer than its range).
    MalformedCompletion,
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailureKind::Lost => "lost",
            FailureKind::Timeout => "timed out",
            FailureKind::MalformedCompletion => "posted a malformed completion",
        })
    }
}

/// A failed device, with the requests that were in flight on it (handed
/// back so the caller can redo them elsewhere).
#[derive(Clone, Debug, thiserror::Error)]
#[error("device {device} {kind}: {detail} (requests handed back: {})", in_flight.len())]
pub struct DeviceError {
    pub device: String,
    pub kind: FailureKind,
    pub detail: String,
    pub in_flight: Vec<Request>,
}

impl DeviceError {
    /// The same failure without the requests (they are handed back once).
    pub fn without_requests(&self) -> DeviceError {
        DeviceError { device: self.device.clone(), kind: self.kind, detail: self.detail.clone(), in_flight: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed device counts the requests it hands back without "request(s)" for any number.
    #[test]
    fn a_device_error_counts_its_requests_without_a_plural() {
        let e = DeviceError { device: "d0".into(), kind: FailureKind::Lost, detail: "gone".into(), in_flight: Vec::new() };
        assert_eq!(e.to_string(), format!("device d0 {}: gone (requests handed back: 0)", FailureKind::Lost));
    }

    #[test]
    fn ranges_overlap_only_when_they_share_a_byte() {
        let a = DeviceRange::new(0, 10);
        assert!(a.overlaps(&DeviceRange::new(9, 1)));
        assert!(!a.overlaps(&DeviceRange::new(10, 5)));
        assert!(!a.overlaps(&DeviceRange::new(5, 0)), "empty ranges share nothing");
        assert!(DeviceRange::new(4, 2).overlaps(&a));
    }

    #[test]
    fn ranges_that_overflow_never_fit() {
        assert!(!DeviceRange::new(u64::MAX, 2).fits(u64::MAX));
        assert!(DeviceRange::new(4, 4).fits(8));
        assert!(!DeviceRange::new(4, 5).fits(8));
        assert!(DeviceRange::new(8, 0).fits(8));
    }

    #[test]
    fn status_codes_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::from_code(s.code()), Some(s));
        }
        assert_eq!(Status::from_code(999), None);
    }
}
