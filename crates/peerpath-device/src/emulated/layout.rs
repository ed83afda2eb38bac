//! The queue file, byte by byte (the contract is `docs/queue-format.md`;
//! keep the two in step). Pure encoding and decoding: no shared memory here.

use crate::function::{Function, FunctionKind, FunctionSet};
use crate::request::{DeviceRange, Request, Status, MAX_INPUT_RANGES};
use crate::stats::{DeviceStats, FunctionStats};
use serde::Serialize;

/// "PPCSPQ01": the first 8 bytes of a queue file.
pub const QUEUE_MAGIC: u64 = u64::from_le_bytes(*b"PPCSPQ01");
/// Version of this layout.
pub const QUEUE_VERSION: u32 = 1;
pub const PAGE_BYTES: usize = 4096;
pub const HEADER_BYTES: usize = PAGE_BYTES;
pub const SQE_BYTES: usize = 64;
pub const CQE_BYTES: usize = 32;
pub const MAX_QUEUES: u32 = 64;
pub const MIN_QUEUE_DEPTH: u32 = 2;
pub const MAX_QUEUE_DEPTH: u32 = 4096;

/// Header fields (byte offsets in the queue file).
pub mod header {
    pub const MAGIC: usize = 0; // u64
    pub const VERSION: usize = 8; // u32
    pub const STATE: usize = 12; // u32: STATE_*
    pub const QUEUE_COUNT: usize = 16; // u32
    pub const QUEUE_DEPTH: usize = 20; // u32
    pub const SQE_BYTES: usize = 24; // u32
    pub const CQE_BYTES: usize = 28; // u32
    pub const QUEUE_STRIDE: usize = 32; // u64
    pub const MEMORY_BYTES: usize = 40; // u64
    pub const SERVER_PID: usize = 48; // u32
    /// u32: 0, or the signal that stopped the device (written before the
    /// state becomes STATE_STOPPING), for the host's report.
    pub const STOP_SIGNAL: usize = 52;
}

pub const STATE_STARTING: u32 = 0;
pub const STATE_READY: u32 = 1;
pub const STATE_STOPPING: u32 = 2;

/// Doorbell words (u32, one per 64-byte line) at the start of a queue pair.
pub mod doorbell {
    /// Host writes: index of the next free SQ slot.
    pub const SQ_TAIL: usize = 0;
    /// Device writes: index of the next SQ slot it will read.
    pub const SQ_HEAD: usize = 64;
    /// Host writes: index of the next CQ slot it will read.
    pub const CQ_HEAD: usize = 128;
    /// Device sets 1 before it sleeps; the host, seeing 1 after ringing
    /// SQ_TAIL, sets 0 and signals the SQ eventfd.
    pub const SQ_NEED_WAKE: usize = 192;
    /// Host sets 1 before it sleeps; the device, seeing 1 after posting a
    /// completion, sets 0 and signals the CQ eventfd.
    pub const CQ_NEED_WAKE: usize = 256;
}

/// Offsets inside a queue pair block.
pub const QP_DOORBELLS: usize = 0;
pub const QP_DATA: usize = PAGE_BYTES;
pub const QP_SQ: usize = 2 * PAGE_BYTES;

/// Admin opcodes (I/O opcodes are [`FunctionKind`]'s).
pub const OPCODE_IDENTIFY: u8 = 0xC0;
pub const OPCODE_GET_STATS: u8 = 0xC1;

/// Queue count and depth; everything else follows from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub queue_count: u32,
    pub queue_depth: u32,
}

const fn page_align(n: usize) -> usize {
    n.div_ceil(PAGE_BYTES) * PAGE_BYTES
}

impl Geometry {
    pub fn is_valid(&self) -> bool {
        (1..=MAX_QUEUES).contains(&self.queue_count) && (MIN_QUEUE_DEPTH..=MAX_QUEUE_DEPTH).contains(&self.queue_depth)
    }
    pub fn sq_bytes(&self) -> usize {
        page_align(self.queue_depth as usize * SQE_BYTES)
    }
    pub fn cq_bytes(&self) -> usize {
        page_align(self.queue_depth as usize * CQE_BYTES)
    }
    /// Bytes of one queue pair block.
    pub fn queue_stride(&self) -> usize {
        QP_SQ + self.sq_bytes() + self.cq_bytes()
    }
    /// Offset of queue pair `q` in the file.
    pub fn queue_base(&self, q: u32) -> usize {
        HEADER_BYTES + q as usize * self.queue_stride()
    }
    /// Offset of the CQ inside a queue pair block.
    pub fn cq_offset(&self) -> usize {
        QP_SQ + self.sq_bytes()
    }
    pub fn total_bytes(&self) -> usize {
        HEADER_BYTES + self.queue_count as usize * self.queue_stride()
    }
}

/// A submission queue entry: 64 bytes as 8 little-endian u64 words.
pub type Sqe = [u64; 8];
/// A completion queue entry: 32 bytes as 4 little-endian u64 words.
pub type Cqe = [u64; 4];

/// What an entry asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Io(Request),
    Identify,
    GetStats,
}

/// Encodes an I/O request under command id `cid`. The request must carry
/// at most [`MAX_INPUT_RANGES`] inputs (the caller checks).
pub fn encode_sqe(cid: u16, request: &Request) -> Sqe {
    assert!(request.inputs.len() <= MAX_INPUT_RANGES, "an entry holds at most {MAX_INPUT_RANGES} input ranges");
    let mut e = [0u64; 8];
    e[0] = request.function.kind().opcode() as u64 | (cid as u64) << 16 | (request.inputs.len() as u64) << 32;
    e[1] = request.function.param_word();
    e[2] = request.output.offset;
    e[3] = request.output.len;
    for (i, r) in request.inputs.iter().enumerate() {
        e[4 + 2 * i] = r.offset;
        e[5 + 2 * i] = r.len;
    }
    e
}

/// Encodes an admin command (identify, get stats).
pub fn encode_admin(cid: u16, opcode: u8) -> Sqe {
    let mut e = [0u64; 8];
    e[0] = opcode as u64 | (cid as u64) << 16;
    e
}

/// The command id of an entry (bytes 2-3), whatever else it holds.
pub fn sqe_cid(e: &Sqe) -> u16 {
    (e[0] >> 16) as u16
}

/// Replaces the command id of an entry.
pub fn set_sqe_cid(e: &mut Sqe, cid: u16) {
    e[0] = (e[0] & !(0xffff << 16)) | (cid as u64) << 16;
}

/// Decodes an entry; every reserved bit must be zero. The request's tag is
/// 0 (tags never cross the queue; command ids do).
pub fn decode_sqe(e: &Sqe) -> (u16, Result<Command, Status>) {
    let cid = sqe_cid(e);
    let opcode = e[0] as u8;
    let flags = (e[0] >> 8) as u8;
    let n_inputs = (e[0] >> 32) as u8 as usize;
    let reserved = e[0] >> 40;
    let result = (|| {
        if opcode == OPCODE_IDENTIFY || opcode == OPCODE_GET_STATS {
            if e[0] >> 32 != 0 || flags != 0 || e[1..].iter().any(|w| *w != 0) {
                return Err(Status::InvalidField);
            }
            return Ok(if opcode == OPCODE_IDENTIFY { Command::Identify } else { Command::GetStats });
        }
        let function = match Function::from_opcode(opcode, e[1]) {
            None => return Err(Status::InvalidOpcode),
            Some(Err(())) => return Err(Status::InvalidField),
            Some(Ok(f)) => f,
        };
        if flags != 0 || reserved != 0 || n_inputs > MAX_INPUT_RANGES {
            return Err(Status::InvalidField);
        }
        // Unused input slots must be zero.
        if e[4 + 2 * n_inputs..].iter().any(|w| *w != 0) {
            return Err(Status::InvalidField);
        }
        let inputs = (0..n_inputs).map(|i| DeviceRange::new(e[4 + 2 * i], e[5 + 2 * i])).collect();
        Ok(Command::Io(Request { tag: 0, function, inputs, output: DeviceRange::new(e[2], e[3]) }))
    })();
    (cid, result)
}

/// The fields of a completion queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqeFields {
    pub output_bytes: u64,
    pub input_crc32: u32,
    pub device_time_us: u32,
    /// The device's SQ head after it took this command.
    pub sq_head: u16,
    pub cid: u16,
    /// Raw status code (see [`Status`]); the host refuses codes it does not know.
    pub status_code: u16,
    pub phase: bool,
}

pub fn encode_cqe(f: &CqeFields) -> Cqe {
    [
        f.output_bytes,
        f.input_crc32 as u64 | (f.device_time_us as u64) << 32,
        f.sq_head as u64,
        cqe_status_word(f.cid, f.status_code, f.phase),
    ]
}

/// Word 3 of a completion: command id, then status and phase (the word
/// the device stores last, with release ordering).
pub fn cqe_status_word(cid: u16, status_code: u16, phase: bool) -> u64 {
    let status_phase = (status_code as u64) << 1 | phase as u64;
    cid as u64 | (status_phase & 0xffff) << 16
}

pub fn cqe_phase(word3: u64) -> bool {
    (word3 >> 16) & 1 == 1
}

pub fn decode_cqe(e: &Cqe) -> CqeFields {
    CqeFields {
        output_bytes: e[0],
        input_crc32: e[1] as u32,
        device_time_us: (e[1] >> 32) as u32,
        sq_head: e[2] as u16,
        cid: e[3] as u16,
        status_code: ((e[3] >> 17) & 0x7fff) as u16,
        phase: cqe_phase(e[3]),
    }
}

/// What a device says about itself (the identify command).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Identify {
    pub name: String,
    pub version: u32,
    /// The device process.
    pub pid: u32,
    pub memory_bytes: u64,
    pub queue_count: u32,
    pub queue_depth: u32,
    pub max_input_ranges: u32,
    pub workers: u32,
    pub functions: FunctionSet,
}

/// "PPCSPID1" and "PPCSPST1": first words of the identify and stats data.
pub const IDENTIFY_MAGIC: u64 = u64::from_le_bytes(*b"PPCSPID1");
pub const STATS_MAGIC: u64 = u64::from_le_bytes(*b"PPCSPST1");
pub const NAME_BYTES: usize = 32;

/// Identify data: 10 words (80 bytes) at the start of the data page.
pub fn encode_identify(id: &Identify) -> Vec<u64> {
    let mut name = [0u8; NAME_BYTES];
    let n = id.name.len().min(NAME_BYTES);
    name[..n].copy_from_slice(&id.name.as_bytes()[..n]);
    let mut w = vec![
        IDENTIFY_MAGIC,
        id.version as u64 | (id.pid as u64) << 32,
        id.memory_bytes,
        id.queue_count as u64 | (id.queue_depth as u64) << 32,
        id.max_input_ranges as u64 | (id.workers as u64) << 32,
        id.functions.bits() as u64,
    ];
    w.extend(name.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))));
    w
}

pub fn decode_identify(w: &[u64]) -> Option<Identify> {
    if w.len() < 10 || w[0] != IDENTIFY_MAGIC {
        return None;
    }
    let name_bytes: Vec<u8> = w[6..10].iter().flat_map(|x| x.to_le_bytes()).collect();
    let end = name_bytes.iter().position(|b| *b == 0).unwrap_or(NAME_BYTES);
    Some(Identify {
        name: String::from_utf8_lossy(&name_bytes[..end]).into_owned(),
        version: w[1] as u32,
        pid: (w[1] >> 32) as u32,
        memory_bytes: w[2],
        queue_count: w[3] as u32,
        queue_depth: (w[3] >> 32) as u32,
        max_input_ranges: w[4] as u32,
        workers: (w[4] >> 32) as u32,
        functions: FunctionSet::from_bits(w[5] as u32),
    })
}

/// Words of the stats data: magic, count, rejected entries, uptime, then
/// 5 words per function in opcode order.
pub fn stats_words(count: usize) -> usize {
    4 + 5 * count
}

pub fn encode_stats(s: &DeviceStats) -> Vec<u64> {
    let mut w = vec![STATS_MAGIC, s.functions.len() as u64, s.rejected_entries, s.uptime_ns];
    for f in &s.functions {
        w.extend([f.commands, f.errors, f.input_bytes, f.output_bytes, f.busy_ns]);
    }
    w
}

pub fn decode_stats(w: &[u64]) -> Option<DeviceStats> {
    if w.len() < 4 || w[0] != STATS_MAGIC {
        return None;
    }
    let count = w[1] as usize;
    if count > FunctionKind::ALL.len() || w.len() < stats_words(count) {
        return None;
    }
    let functions = (0..count)
        .map(|i| {
            let f = &w[4 + 5 * i..9 + 5 * i];
            FunctionStats {
                function: Some(FunctionKind::ALL[i]),
                commands: f[0],
                errors: f[1],
                input_bytes: f[2],
                output_bytes: f[3],
                busy_ns: f[4],
            }
        })
        .collect();
    Some(DeviceStats { functions, rejected_entries: w[2], uptime_ns: w[3] })
}

#[cfg(test)]
mod tests {
    use super::*;
    use peerpath_func::{Format, Level};

    #[test]
    fn entries_have_the_documented_sizes() {
        assert_eq!(std::mem::size_of::<Sqe>(), SQE_BYTES);
        assert_eq!(std::mem::size_of::<Cqe>(), CQE_BYTES);
        let g = Geometry { queue_count: 2, queue_depth: 100 };
        assert_eq!(g.sq_bytes(), 8192);
        assert_eq!(g.cq_bytes(), 4096);
        assert_eq!(g.queue_stride(), 4 * 4096 + 4096);
        assert_eq!(g.total_bytes(), 4096 + 2 * 20480);
        assert_eq!(g.queue_base(1), 4096 + 20480);
    }

    #[test]
    fn requests_round_trip_through_entries() {
        let r = |o, l| DeviceRange::new(o, l);
        let reqs = [
            Request::compress(0, Level::new(9).unwrap(), Format::Bgzf, r(4096, 1000), r(8192, 2000)),
            Request::decompress(0, r(1, 2), r(3, 4)),
            Request::copy(0, &[r(10, 20), r(40, 50)], r(100, 70)),
            Request::fill(0, 0xee, r(0, 4096)),
            Request::crc32(0, &[]),
        ];
        for req in reqs {
            let e = encode_sqe(513, &req);
            assert_eq!(decode_sqe(&e), (513, Ok(Command::Io(req))));
        }
        assert_eq!(decode_sqe(&encode_admin(7, OPCODE_IDENTIFY)), (7, Ok(Command::Identify)));
        assert_eq!(decode_sqe(&encode_admin(8, OPCODE_GET_STATS)), (8, Ok(Command::GetStats)));
    }

    #[test]
    fn malformed_entries_are_refused() {
        let good = encode_sqe(1, &Request::copy(0, &[DeviceRange::new(0, 8)], DeviceRange::new(8, 8)));
        let bad = |f: &dyn Fn(&mut Sqe)| {
            let mut e = good;
            f(&mut e);
            decode_sqe(&e).1.unwrap_err()
        };
        assert_eq!(bad(&|e| e[0] = (e[0] & !0xff) | 0x55), Status::InvalidOpcode);
        assert_eq!(bad(&|e| e[0] |= 1 << 8), Status::InvalidField, "flags");
        assert_eq!(bad(&|e| e[0] |= 1 << 40), Status::InvalidField, "reserved bytes 5-7");
        assert_eq!(bad(&|e| e[0] = (e[0] & !(0xff << 32)) | 3 << 32), Status::InvalidField, "three inputs");
        assert_eq!(bad(&|e| e[6] = 1), Status::InvalidField, "unused input slot");
        assert_eq!(bad(&|e| e[1] = 1), Status::InvalidField, "copy takes no parameter");
        let mut admin = encode_admin(1, OPCODE_IDENTIFY);
        admin[3] = 1;
        assert_eq!(decode_sqe(&admin).1, Err(Status::InvalidField));
    }

    #[test]
    fn completions_round_trip_and_carry_the_phase_in_word_three() {
        let f = CqeFields {
            output_bytes: 1 << 40,
            input_crc32: 0xdead_beef,
            device_time_us: 12345,
            sq_head: 77,
            cid: 4095,
            status_code: Status::OutOfRange.code(),
            phase: true,
        };
        let e = encode_cqe(&f);
        assert_eq!(decode_cqe(&e), f);
        assert!(cqe_phase(e[3]));
        assert!(!cqe_phase(encode_cqe(&CqeFields { phase: false, ..f })[3]));
        assert_eq!(e[3] & 0xffff, 4095, "command id in bytes 24-25");
    }

    #[test]
    fn identify_and_stats_round_trip() {
        let id = Identify {
            name: "csp0".into(),
            version: QUEUE_VERSION,
            pid: 1234,
            memory_bytes: 512 << 20,
            queue_count: 4,
            queue_depth: 128,
            max_input_ranges: 2,
            workers: 8,
            functions: FunctionSet::all(),
        };
        assert_eq!(decode_identify(&encode_identify(&id)), Some(id));
        let s = DeviceStats {
            functions: FunctionKind::ALL
                .iter()
                .enumerate()
                .map(|(i, k)| FunctionStats { function: Some(*k), commands: i as u64, errors: 1, input_bytes: 2, output_bytes: 3, busy_ns: 4 })
                .collect(),
            rejected_entries: 9,
            uptime_ns: 10,
        };
        assert_eq!(decode_stats(&encode_stats(&s)), Some(s));
        assert_eq!(decode_stats(&[0; 4]), None);
    }

    proptest::proptest! {
        /// Any 64 bytes decode without panicking.
        #[test]
        fn any_entry_decodes(words in proptest::array::uniform8(proptest::prelude::any::<u64>())) {
            let (cid, _) = decode_sqe(&words);
            proptest::prop_assert_eq!(cid, sqe_cid(&words));
        }

        /// An entry the device accepts is canonical: encoding what it
        /// decoded gives back the same 64 bytes (nothing is ignored).
        #[test]
        fn accepted_entries_are_canonical(
            words in proptest::array::uniform8(proptest::prelude::any::<u64>()),
            opcode in 0u8..=0x12,
            n_inputs in 0u64..4,
            param in 0u64..0x300,
        ) {
            let mut e = words;
            e[0] = opcode as u64 | (words[0] & 0xffff_0000) | n_inputs << 32;
            e[1] = param;
            for w in e.iter_mut().skip(4 + 2 * n_inputs.min(2) as usize) {
                *w = 0;
            }
            if let (cid, Ok(Command::Io(request))) = decode_sqe(&e) {
                proptest::prop_assert_eq!(encode_sqe(cid, &request), e);
            }
        }

        /// Completions round-trip whatever their fields.
        #[test]
        fn any_completion_round_trips(output_bytes: u64, crc: u32, us: u32, head: u16, cid: u16, status in 0u16..0x8000, phase: bool) {
            let f = CqeFields { output_bytes, input_crc32: crc, device_time_us: us, sq_head: head, cid, status_code: status, phase };
            proptest::prop_assert_eq!(decode_cqe(&encode_cqe(&f)), f);
        }
    }
}
