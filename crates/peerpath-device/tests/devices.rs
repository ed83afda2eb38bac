//! The CPU device and the emulated CSP against each other and against the
//! oracle, byte for byte; queue limits; what a device refuses.

mod common;

use common::*;
use peerpath_device::emulated::{layout, OPCODE_IDENTIFY};
use peerpath_device::{parse_scan_fault_record, run_to_completion, Completion, Device, DeviceRange, EmulatedCsp, Function, FunctionKind, Request, Status, Submit, SCAN_FAULT_BYTES};
use peerpath_func::{encode_member, member_bound_bytes, Format, Level, MemberEncoder, BGZF_MAX_INPUT_BYTES};

const INPUT_AT: u64 = 0;
const MEMBER_AT: u64 = 8 << 20;
const OUTPUT_AT: u64 = 16 << 20;
const OUTPUT_CAP: u64 = 8 << 20;
const PATTERN_AT: u64 = 24 << 20;
const PATTERN: &[u8] = b"K[LV]{2}|x";
const KEY_AT: u64 = 25 << 20;
const FILE_ID: [u8; 16] = [0x5a; 16];

fn master() -> peerpath_func::crypt::Key {
    peerpath_func::crypt::Key::from_bytes(&[0x42; 32]).unwrap()
}

fn run_one(device: &mut dyn Device, request: Request) -> Completion {
    let mut done = run_to_completion(device, [request], TIMEOUT).expect("device works");
    assert_eq!(done.len(), 1, "one request, one completion");
    done.pop().unwrap()
}

/// What one device did with one request: completion fields and output bytes.
#[derive(Debug, PartialEq, Eq)]
struct Result1 {
    status: Status,
    output_bytes: u64,
    input_crc32: u32,
    output: Vec<u8>,
}

fn outcome(device: &mut dyn Device, request: Request) -> Result1 {
    let out = request.output;
    let c = run_one(device, request);
    let output = read(device, out.offset, c.output_bytes as usize);
    Result1 { status: c.status, output_bytes: c.output_bytes, input_crc32: c.input_crc32, output }
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("empty", Vec::new()),
        ("one byte", vec![b'x']),
        ("protein 100 KB", protein(100_000)),
        ("protein 1 MiB", protein(1 << 20)),
        ("incompressible 300 KB", incompressible(300_000, 7)),
        ("zeros 1 MiB", vec![0; 1 << 20]),
        ("fastq 2000 reads", fastq(2000)),
        ("bgzf-sized incompressible", incompressible(BGZF_MAX_INPUT_BYTES, 9)),
    ]
}

/// What a FASTQ scan of `data` answers: the CPU filter's verdict on its whole records.
fn fastq_status(data: &[u8], at_end: bool) -> Status {
    use peerpath_func::scan::{whole_records, Filter, RecordFormat};
    let whole = whole_records(data, RecordFormat::Fastq, at_end).unwrap_or(0);
    match Filter::default().block(&data[..whole], RecordFormat::Fastq, at_end, None) {
        Ok(_) => Status::Success,
        Err(_) => Status::CorruptInput,
    }
}

/// The first malformed FASTQ record (offset, fault number), as the filter finds it.
fn fastq_fault(data: &[u8], at_end: bool) -> (u64, u64) {
    use peerpath_func::scan::{whole_records, Filter, RecordFormat};
    let whole = whole_records(data, RecordFormat::Fastq, at_end).unwrap_or(0);
    let m = Filter::default().block(&data[..whole], RecordFormat::Fastq, at_end, None).expect_err("malformed");
    (m.offset as u64, m.fault as u64)
}

/// Reads of protein-like text as FASTQ, `n` of them (the last cut short: a record waits).
fn fastq(n: usize) -> Vec<u8> {
    let text = protein(n * 80);
    let mut data = Vec::new();
    for (i, line) in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).take(n).enumerate() {
        data.extend_from_slice(format!("@read{i}\n").as_bytes());
        data.extend_from_slice(line);
        data.extend_from_slice(b"\n+\n");
        data.extend(std::iter::repeat_n(b'I', line.len()));
        data.push(b'\n');
    }
    data.truncate(data.len() - 5);
    data
}

fn requests_for(len: u64) -> Vec<Request> {
    let input = DeviceRange::new(INPUT_AT, len);
    let out = DeviceRange::new(OUTPUT_AT, OUTPUT_CAP);
    let mut v = vec![
        Request::crc32(1, &[input]),
        Request::crc32(2, &[DeviceRange::new(INPUT_AT, len / 2), DeviceRange::new(INPUT_AT + len / 2, len - len / 2)]),
        Request::copy(3, &[input], out),
        Request::copy(4, &[DeviceRange::new(INPUT_AT, len / 3), DeviceRange::new(INPUT_AT + len / 2, len - len / 2)], out),
        Request::fill(5, 0x5a, DeviceRange::new(OUTPUT_AT, len + 1)),
    ];
    for level in [0, 1, 3, 4, 6, 9, 12] {
        let level = Level::new(level).unwrap();
        v.push(Request::compress(10, level, Format::Gzip, input, out));
        if len as usize <= BGZF_MAX_INPUT_BYTES {
            v.push(Request::compress(11, level, Format::Bgzf, input, out));
        }
    }
    // Erasure-code parity over the input cut into k units (the part that divides evenly).
    for (k, m) in [(1u8, 1u8), (4, 2), (10, 4)] {
        let whole = len / k as u64 * k as u64;
        v.push(Request::ec_encode(14, k, m, DeviceRange::new(INPUT_AT, whole), out));
    }
    // Scans: the input as lines and as FASTA, whole or up to its last whole record.
    let pattern = DeviceRange::new(PATTERN_AT, PATTERN.len() as u64);
    for (format, at_end, min_length) in [(2u8, true, 0u32), (2, false, 30), (0, true, 0), (1, false, 0)] {
        let f = Function::ScanCount { format, ignore_case: format == 0, at_end, min_length };
        v.push(Request::scan_count(15, f, input, pattern, out));
        v.push(Request::scan_count(16, f, input, DeviceRange::new(PATTERN_AT, 0), out));
    }
    // Content-defined chunks and their digests.
    for (sha256, at_end) in [(false, true), (true, false)] {
        v.push(Request::chunk_fingerprint(17, Function::ChunkFingerprint { min_kib: 4, avg_kib: 16, max_kib: 64, sha256, at_end }, input, out));
    }
    // Sealed blocks of a peerpath-enc/1 file.
    for index in [0, 7] {
        v.push(Request { tag: 18, function: Function::AeadSealBlock { index }, inputs: vec![input, DeviceRange::new(KEY_AT, peerpath_func::crypt::DEVICE_KEY_BYTES as u64)], output: out });
    }
    // Whole chunks: members of 4 KiB and of 64 KiB, back to back.
    for member_bytes in [4096, 65536] {
        v.push(Request::compress_chunk(12, Level::new(1).unwrap(), Format::Gzip, member_bytes, input, out));
        v.push(Request::compress_chunk(13, Level::new(6).unwrap(), Format::Bgzf, member_bytes.min(BGZF_MAX_INPUT_BYTES as u32), input, out));
    }
    v
}

fn oracle_member(level: Level, format: Format, data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; member_bound_bytes(data.len())];
    let n = encode_member(&mut MemberEncoder::new(level), format, data, &mut out);
    out.truncate(n);
    out
}

#[test]
fn cpu_and_emulated_devices_agree_byte_for_byte_on_every_function() {
    let mut cpu = cpu(2, 8);
    let mut emu = spawn_csp("agree", 16);
    assert_eq!((fastq_status(&fastq(2000), false), fastq_status(&fastq(2000), true)), (Status::Success, Status::CorruptInput), "reads, the last cut short");
    write(&cpu, PATTERN_AT, PATTERN);
    write(&emu, PATTERN_AT, PATTERN);
    let material = peerpath_func::crypt::device_key(&master(), &FILE_ID);
    write(&cpu, KEY_AT, &material[..]);
    write(&emu, KEY_AT, &material[..]);
    for (what, data) in inputs() {
        write(&cpu, INPUT_AT, &data);
        write(&emu, INPUT_AT, &data);
        let crc = libdeflater::crc32(&data);
        for request in requests_for(data.len() as u64) {
            let a = outcome(&mut cpu, request.clone());
            let b = outcome(&mut emu, request.clone());
            assert_eq!(a, b, "{what}: {} differs between the CPU and the emulated device", request.function);
            // FASTQ scans of data that is not FASTQ are the data's fault, as the filter says.
            let expect = match request.function {
                Function::ScanCount { format: 1, at_end, .. } => fastq_status(&data, at_end),
                _ => Status::Success,
            };
            assert_eq!(a.status, expect, "{what}: {}", request.function);
            if expect != Status::Success {
                // Malformed FASTQ: both devices leave where the first bad record starts, and why.
                let (at, why) = fastq_fault(&data, matches!(request.function, Function::ScanCount { at_end: true, .. }));
                for (name, dev) in [("cpu", &cpu as &dyn Device), ("emulated", &emu as &dyn Device)] {
                    let record: [u8; SCAN_FAULT_BYTES] = read(dev, request.output.offset, SCAN_FAULT_BYTES).try_into().unwrap();
                    assert_eq!(parse_scan_fault_record(&record), (at, why), "{what}: {}: the {name} device's fault record", request.function);
                }
                continue;
            }
            let input_crc = match request.function {
                Function::Fill { .. } => 0,
                Function::ScanCount { .. } | Function::AeadSealBlock { .. } => libdeflater::crc32(&data),
                _ => libdeflater::crc32(&request.inputs.iter().flat_map(|r| data[r.offset as usize..(r.offset + r.len) as usize].to_vec()).collect::<Vec<u8>>()),
            };
            assert_eq!(a.input_crc32, input_crc, "{what}: {}: CRC-32 of the input read", request.function);
            match request.function {
                Function::GzipCompressMember { level, format } => {
                    assert_eq!(a.output, oracle_member(level, format, &data), "{what}: {} differs from encode_member", request.function);
                    assert_eq!(a.input_crc32, crc);
                }
                Function::Copy => {
                    let expect: Vec<u8> = request.inputs.iter().flat_map(|r| data[r.offset as usize..(r.offset + r.len) as usize].to_vec()).collect();
                    assert_eq!(a.output, expect);
                }
                Function::Fill { byte } => assert_eq!(a.output, vec![byte; data.len() + 1]),
                Function::Crc32 => assert_eq!(a.output_bytes, 0),
                Function::GzipCompressChunk { level, format, member_bytes } => {
                    let mut expect = if data.is_empty() { oracle_member(level, format, &[]) } else { Vec::new() };
                    for piece in data.chunks(member_bytes as usize) {
                        expect.extend(oracle_member(level, format, piece));
                    }
                    assert_eq!(a.output, expect, "{what}: {} differs from encode_member per block, packed", request.function);
                }
                Function::EcEncode { data: k, parity: m } => {
                    let input = &data[..request.inputs[0].len as usize];
                    let unit = input.len() / k as usize;
                    let mut expect = vec![0u8; unit * m as usize];
                    if unit > 0 {
                        let units: Vec<&[u8]> = input.chunks(unit).collect();
                        let mut parity: Vec<&mut [u8]> = expect.chunks_mut(unit).collect();
                        peerpath_func::ec::RsCode::new(k as usize, m as usize).unwrap().encode(&units, &mut parity);
                    }
                    assert_eq!(a.output, expect, "{what}: {} differs from RsCode::encode", request.function);
                }
                Function::ScanCount { format, ignore_case, at_end, min_length } => {
                    use peerpath_func::scan::{whole_records, Filter, RecordFormat};
                    let fmt = [RecordFormat::Fasta, RecordFormat::Fastq, RecordFormat::Lines][format as usize];
                    let motif = (request.inputs[1].len > 0).then(|| regex::bytes::RegexBuilder::new(std::str::from_utf8(PATTERN).unwrap()).case_insensitive(ignore_case).build().unwrap());
                    let filter = Filter { motif, min_length: (min_length > 0).then_some(min_length as usize), id_prefix: None };
                    let whole = whole_records(&data, fmt, at_end).unwrap_or(0);
                    let found = filter.block(&data[..whole], fmt, at_end, None).unwrap();
                    let word = |i: usize| u64::from_le_bytes(a.output[8 * i..8 * i + 8].try_into().unwrap());
                    assert_eq!((word(0), word(1), word(2), word(3)), (found.records, found.matched, found.matched_bases, whole as u64), "{what}: {}", request.function);
                    let bins: Vec<u64> = (0..64).map(|b| word(4 + b)).collect();
                    assert_eq!(bins.iter().sum::<u64>(), found.matched, "{what}: histogram");
                    assert_eq!(&bins[..found.histogram.len()], &found.histogram[..]);
                }
                Function::ChunkFingerprint { sha256, at_end, .. } => {
                    use peerpath_func::dedup::{cut_points, ChunkParams, Fingerprint};
                    let fp = if sha256 { Fingerprint::Sha256 } else { Fingerprint::Blake3 };
                    let mut expect = Vec::new();
                    let cuts = cut_points(&data, ChunkParams::new(4096, 16384, 65536).unwrap(), at_end);
                    expect.extend((cuts.len() as u64).to_le_bytes());
                    expect.extend((cuts.last().map_or(0, |&(o, l)| o + l) as u64).to_le_bytes());
                    for (o, l) in cuts {
                        expect.extend((o as u64).to_le_bytes());
                        expect.extend((l as u64).to_le_bytes());
                        expect.extend(fp.digest(&data[o..o + l]));
                    }
                    assert_eq!(a.output, expect, "{what}: {} differs from cut_points and the digests", request.function);
                }
                Function::AeadSealBlock { index } => {
                    // A file whose block `index` is this data (an empty block only ends an empty file).
                    let mut expect = data.clone();
                    expect.resize(data.len() + peerpath_func::crypt::TAG_BYTES, 0);
                    if data.is_empty() && index > 0 {
                        peerpath_func::crypt::seal_block_with(&material[..], index, &mut expect).unwrap();
                    } else {
                        let len = data.len() as u64;
                        let (cipher, _) = peerpath_func::crypt::FileCipher::create_with_id(&master(), (len as u32).max(1), len * (index + 1), FILE_ID).unwrap();
                        cipher.seal(index, &mut expect);
                    }
                    assert_eq!(a.output, expect, "{what}: {} differs from FileCipher::seal", request.function);
                }
                Function::GzipDecompressMember | Function::AeadOpenBlock { .. } | Function::EcReconstruct { .. } | Function::StorageRead { .. } | Function::StorageWrite { .. } => unreachable!("not in requests_for (tested on their own)"),
            }
        }
        // Decompression: a member made by the oracle, back to the input.
        for format in [Format::Gzip, Format::Bgzf] {
            if format == Format::Bgzf && data.len() > BGZF_MAX_INPUT_BYTES {
                continue;
            }
            let member = oracle_member(Level::new(6).unwrap(), format, &data);
            write(&cpu, MEMBER_AT, &member);
            write(&emu, MEMBER_AT, &member);
            let req = Request::decompress(20, DeviceRange::new(MEMBER_AT, member.len() as u64), DeviceRange::new(OUTPUT_AT, OUTPUT_CAP));
            let a = outcome(&mut cpu, req.clone());
            let b = outcome(&mut emu, req);
            assert_eq!(a, b, "{what}: decompression differs");
            assert_eq!(a.status, Status::Success);
            assert_eq!(a.output, data, "{what}: decompression restores the input");
            assert_eq!(a.input_crc32, libdeflater::crc32(&member), "CRC-32 of the member bytes read");
        }
        // Opening: a block sealed by the oracle, back to the input; tampered, refused by both.
        let len = data.len() as u64;
        let (cipher, _) = peerpath_func::crypt::FileCipher::create_with_id(&master(), (len as u32).max(1), len * 3, FILE_ID).unwrap();
        let mut sealed = data.clone();
        sealed.resize(data.len() + peerpath_func::crypt::TAG_BYTES, 0);
        let index = if data.is_empty() { 0 } else { 2 };
        if data.is_empty() {
            let (empty, _) = peerpath_func::crypt::FileCipher::create_with_id(&master(), 1, 0, FILE_ID).unwrap();
            empty.seal(0, &mut sealed);
        } else {
            cipher.seal(index, &mut sealed);
        }
        let open = |sealed: &[u8], cpu: &mut peerpath_device::CpuDevice, emu: &mut EmulatedCsp| {
            write(&*cpu, MEMBER_AT, sealed);
            write(&*emu, MEMBER_AT, sealed);
            let req = Request { tag: 21, function: Function::AeadOpenBlock { index }, inputs: vec![DeviceRange::new(MEMBER_AT, sealed.len() as u64), DeviceRange::new(KEY_AT, peerpath_func::crypt::DEVICE_KEY_BYTES as u64)], output: DeviceRange::new(OUTPUT_AT, OUTPUT_CAP) };
            let (a, b) = (outcome(cpu, req.clone()), outcome(emu, req));
            assert_eq!(a, b, "{what}: opening differs");
            a
        };
        let a = open(&sealed, &mut cpu, &mut emu);
        assert_eq!((a.status, &a.output), (Status::Success, &data), "{what}: opening gives the plaintext back");
        let mut tampered = sealed.clone();
        tampered[0] ^= 0x20;
        assert_eq!(open(&tampered, &mut cpu, &mut emu).status, Status::CorruptInput, "{what}: a tampered block");
    }
    // Both kept statistics of the same work.
    let (s_cpu, s_emu) = (cpu.stats().unwrap(), emu.device_stats().unwrap());
    for kind in FunctionKind::ALL {
        let (a, b) = (s_cpu.function(kind), s_emu.function(kind));
        assert_eq!((a.commands, a.errors, a.input_bytes, a.output_bytes), (b.commands, b.errors, b.input_bytes, b.output_bytes), "{kind:?}");
    }
    assert!(s_emu.total().busy_ns > 0 && s_emu.function(FunctionKind::GzipCompressMember).commands > 0);
    emu.shutdown().unwrap();
}

#[test]
fn corrupt_members_fail_the_same_way_on_both_devices() {
    let mut cpu = cpu(0, 4);
    let mut emu = spawn_csp("corrupt", 8);
    let data = protein(200_000);
    let good = oracle_member(Level::new(1).unwrap(), Format::Gzip, &data);
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    let mut bad_crc = good.clone();
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 1;
    let plain_gzip = {
        // A member without a size subfield (what `gzip` writes) is refused.
        let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
        m.extend_from_slice(&good[24..]);
        m
    };
    for (what, member, expect) in [
        ("flipped deflate byte", &flipped, Status::CorruptInput),
        ("wrong CRC-32", &bad_crc, Status::CorruptInput),
        ("no size subfield", &plain_gzip, Status::CorruptInput),
        ("not gzip", &data[..1000].to_vec(), Status::CorruptInput),
    ] {
        write(&cpu, MEMBER_AT, member);
        write(&emu, MEMBER_AT, member);
        let req = Request::decompress(1, DeviceRange::new(MEMBER_AT, member.len() as u64), DeviceRange::new(OUTPUT_AT, OUTPUT_CAP));
        let a = run_one(&mut cpu, req.clone());
        let b = run_one(&mut emu, req);
        assert_eq!((a.status, a.output_bytes), (expect, 0), "{what}");
        assert_eq!((b.status, b.output_bytes), (expect, 0), "{what}");
    }
    // Too small an output for the declared size.
    write(&emu, MEMBER_AT, &good);
    let req = Request::decompress(2, DeviceRange::new(MEMBER_AT, good.len() as u64), DeviceRange::new(OUTPUT_AT, data.len() as u64 - 1));
    assert_eq!(run_one(&mut emu, req).status, Status::OutputTooSmall);
}

#[test]
fn many_requests_in_flight_complete_correctly_on_both_devices() {
    let data = protein(4 << 20);
    let block = 64 << 10;
    let level = Level::new(4).unwrap();
    let requests: Vec<Request> = (0..64u64)
        .map(|i| {
            let input = DeviceRange::new(i * block, block);
            let output = DeviceRange::new(OUTPUT_AT + i * 2 * block, 2 * block);
            Request::compress(i, level, Format::Gzip, input, output)
        })
        .collect();
    let mut cpu = cpu(2, 8);
    let mut emu = spawn_csp("many", 8);
    for device in [&mut cpu as &mut dyn Device, &mut emu as &mut dyn Device] {
        write(device, 0, &data);
        let done = run_to_completion(device, requests.clone(), TIMEOUT).unwrap();
        assert_eq!(done.len(), requests.len());
        for c in done {
            assert_eq!(c.status, Status::Success);
            let i = c.tag();
            let chunk = &data[(i * block) as usize..((i + 1) * block) as usize];
            assert_eq!(read(device, c.request.output.offset, c.output_bytes as usize), oracle_member(level, Format::Gzip, chunk), "block {i}");
            assert_eq!(c.input_crc32, libdeflater::crc32(chunk));
        }
        assert_eq!(device.in_flight(), 0);
    }
}

#[test]
fn a_full_queue_answers_busy_and_hands_the_request_back() {
    // Big, slow requests so that the queue is still full when we look.
    let data = protein(2 << 20);
    let slow = |i: u64| {
        Request::compress(i, Level::new(12).unwrap(), Format::Gzip, DeviceRange::new(0, data.len() as u64), DeviceRange::new(OUTPUT_AT + i * (3 << 20), 3 << 20))
    };
    let mut emu = spawn_csp("busy", 4);
    let mut cpu = cpu(1, 3);
    for device in [&mut emu as &mut dyn Device, &mut cpu as &mut dyn Device] {
        write(device, 0, &data);
        assert_eq!(device.queue_depth(), 3, "{}", device.name());
        for i in 0..3 {
            assert!(matches!(device.submit(slow(i)), Submit::Queued));
        }
        let fourth = slow(3);
        match device.submit(fourth.clone()) {
            Submit::Busy(r) => assert_eq!(r, fourth, "busy hands back the very request"),
            other => panic!("{}: expected Busy, got {other:?}", device.name()),
        }
        // Once something completes there is room again.
        let mut done = Vec::new();
        while done.is_empty() {
            device.poll(&mut done).unwrap();
            if done.is_empty() {
                device.wait(TIMEOUT).unwrap();
            }
        }
        assert!(matches!(device.submit(fourth), Submit::Queued));
        while device.in_flight() > 0 {
            if device.poll(&mut done).unwrap() == 0 {
                device.wait(TIMEOUT).unwrap();
            }
        }
        assert_eq!(done.len(), 4);
        assert!(done.iter().all(|c| c.status == Status::Success));
    }
}

#[test]
fn out_of_range_and_overlapping_requests_are_refused_without_touching_memory() {
    let mut cpu = cpu(1, 8);
    let mut emu = spawn_csp("range", 8);
    for device in [&mut cpu as &mut dyn Device, &mut emu as &mut dyn Device] {
        let mem = device.memory().len() as u64;
        let canary = vec![0xc3u8; 4096];
        write(device, mem - 4096, &canary);
        write(device, 0, &canary);
        let r = DeviceRange::new;
        let cases = [
            ("fill past the end", Request::fill(1, 0, r(mem - 4096, 4097)), Status::OutOfRange),
            ("fill at the end", Request::fill(2, 0, r(mem, 1)), Status::OutOfRange),
            ("offset overflows", Request::fill(3, 0, r(u64::MAX - 10, 100)), Status::OutOfRange),
            ("input past the end", Request::copy(4, &[r(mem - 10, 11)], r(0, 4096)), Status::OutOfRange),
            ("input overflows", Request::crc32(5, &[r(u64::MAX, 1)]), Status::OutOfRange),
            ("compress output past the end", Request::compress(6, Level::new(1).unwrap(), Format::Gzip, r(0, 100), r(mem - 100, 4096)), Status::OutOfRange),
            ("copy onto itself", Request::copy(7, &[r(0, 4096)], r(100, 4096)), Status::RangeOverlap),
            ("output too small", Request::copy(8, &[r(0, 4096)], r(mem - 4096, 4095)), Status::OutputTooSmall),
            ("fill with an input", Request { tag: 9, function: Function::Fill { byte: 0 }, inputs: vec![r(0, 1)], output: r(mem - 4096, 1) }, Status::InvalidField),
            ("three inputs", Request::copy(10, &[r(0, 1), r(1, 1), r(2, 1)], r(mem - 4096, 3)), Status::InvalidField),
            ("crc with an output", Request { tag: 11, function: Function::Crc32, inputs: vec![], output: r(mem - 4096, 1) }, Status::InvalidField),
            ("bgzf input too large", Request::compress(12, Level::new(1).unwrap(), Format::Bgzf, r(0, 0xff01), r(1 << 20, 1 << 20)), Status::InputTooLarge),
        ];
        for (what, request, expect) in cases {
            let c = run_one(device, request.clone());
            assert_eq!((c.status, c.output_bytes), (expect, 0), "{}: {what}", device.name());
            assert_eq!(c.request, request, "the request comes back");
        }
        assert_eq!(read(device, mem - 4096, 4096), canary, "{}: memory at the end untouched", device.name());
        assert_eq!(read(device, 0, 4096), canary, "{}: memory at the start untouched", device.name());
        // The emulated device never sees three inputs: an entry cannot hold them.
        let expected_errors = if device.name() == "cpu" { 12 } else { 11 };
        let stats = device.stats().unwrap();
        assert_eq!(stats.total().errors, expected_errors, "{}: errors counted", device.name());
    }
}

#[test]
fn a_request_that_writes_what_another_in_flight_uses_is_refused() {
    let data = protein(4 << 20);
    for mut device in [Box::new(cpu(1, 8)) as Box<dyn Device>, Box::new(spawn_csp("conflict", 8))] {
        write(&*device, 0, &data);
        let long = Request::compress(1, Level::new(12).unwrap(), Format::Gzip, DeviceRange::new(0, data.len() as u64), DeviceRange::new(OUTPUT_AT, 5 << 20));
        assert!(matches!(device.submit(long), Submit::Queued));
        // Writes the running command's input; then reads its output.
        assert!(matches!(device.submit(Request::fill(2, 0, DeviceRange::new(100, 10))), Submit::Queued));
        assert!(matches!(device.submit(Request::crc32(3, &[DeviceRange::new(OUTPUT_AT + 10, 10)])), Submit::Queued));
        // Reading the same input is fine.
        assert!(matches!(device.submit(Request::crc32(4, &[DeviceRange::new(0, 1000)])), Submit::Queued));
        let mut done = run_to_completion(&mut *device, [], TIMEOUT).unwrap();
        done.sort_by_key(|c| c.tag());
        let statuses: Vec<Status> = done.iter().map(|c| c.status).collect();
        assert_eq!(statuses, [Status::Success, Status::RangeConflict, Status::RangeConflict, Status::Success], "{}", device.name());
        assert_eq!(done[3].input_crc32, libdeflater::crc32(&data[..1000]));
    }
}

#[test]
fn malformed_queue_entries_are_refused_and_counted() {
    let mut emu = spawn_csp("malformed", 8);
    let good = layout::encode_sqe(0, &Request::fill(0, 1, DeviceRange::new(0, 10)));
    let with = |f: &dyn Fn(&mut [u64; 8])| {
        let mut e = good;
        f(&mut e);
        e
    };
    let mem = emu.memory().len() as u64;
    let cases: Vec<(&str, [u64; 8], Status)> = vec![
        ("unknown opcode", with(&|e| e[0] = (e[0] & !0xff) | 0x55), Status::InvalidOpcode),
        ("opcode zero", [0; 8], Status::InvalidOpcode),
        ("flags set", with(&|e| e[0] |= 0x80 << 8), Status::InvalidField),
        ("reserved bytes set", with(&|e| e[0] |= 0xff << 48), Status::InvalidField),
        ("three inputs", with(&|e| e[0] |= 3 << 32), Status::InvalidField),
        ("fill byte above 255", with(&|e| e[1] = 0x1ff), Status::InvalidField),
        ("stray input slot", with(&|e| e[7] = 5), Status::InvalidField),
        ("level 13", {
            let mut e = layout::encode_sqe(0, &Request::compress(0, Level::new(1).unwrap(), Format::Gzip, DeviceRange::new(0, 1), DeviceRange::new(4096, 4096)));
            e[1] = 13;
            e
        }, Status::InvalidField),
        ("admin with junk", { let mut e = layout::encode_admin(0, OPCODE_IDENTIFY); e[5] = 1; e }, Status::InvalidField),
        ("output offset beyond memory", with(&|e| e[2] = mem + 4096), Status::OutOfRange),
    ];
    let stats_before = emu.device_stats().unwrap();
    for (i, (what, entry, expect)) in cases.iter().enumerate() {
        assert!(matches!(emu.submit_raw(i as u64, *entry), Submit::Queued));
        let c = run_to_completion(&mut emu, [], TIMEOUT).unwrap();
        assert_eq!(c.len(), 1, "{what}");
        assert_eq!((c[0].tag(), c[0].status, c[0].output_bytes), (i as u64, *expect, 0), "{what}");
    }
    let after = emu.device_stats().unwrap();
    assert_eq!(after.rejected_entries - stats_before.rejected_entries, 9, "entries refused before naming a function");
    // The device still works.
    write(&emu, 0, b"hello");
    let c = run_one(&mut emu, Request::crc32(1, &[DeviceRange::new(0, 5)]));
    assert_eq!((c.status, c.input_crc32), (Status::Success, libdeflater::crc32(b"hello")));
}

#[test]
fn identify_reports_functions_memory_and_queue_limits() {
    let mut emu = spawn_csp("identify", 32);
    let id = emu.identify().unwrap();
    assert!(id.name.starts_with('t'));
    assert_eq!(id.memory_bytes, MEMORY_BYTES as u64);
    assert_eq!((id.queue_count, id.queue_depth, id.max_input_ranges, id.workers), (2, 32, 2, 2));
    assert_eq!(emu.parallelism(), Some(2), "the host sizes its pipeline by the device's workers");
    assert!(FunctionKind::ALL.iter().all(|k| id.functions.contains(*k) != k.reaches_storage()), "every function on memory; no storage reads (it has no files)");
    assert_eq!(id.pid, emu.pid());
    assert_eq!(emu.memory_domains(), vec![peerpath_mem::MemoryDomain::Emulated { device: id.name.clone() }]);
    assert!(emu.memory().mapped_region().is_some(), "a region for the allocator");
}

#[test]
fn a_device_asked_to_populate_its_memory_has_it_resident_when_it_starts() {
    use std::os::unix::fs::MetadataExt;
    let allocated = |emu: &EmulatedCsp| {
        let path = emu.memory().mapped_region().expect("shm memory").path().to_path_buf();
        std::fs::metadata(&path).expect("the device's memory file").blocks() * 512
    };
    let lazy = spawn_csp("lazy", 32);
    let mut o = spawn_options("populate", 32);
    o.serve.populate_bytes = 9 << 20; // not a whole number of 2 MiB pieces
    let populated = EmulatedCsp::spawn(&o).expect("the emulated CSP starts");
    assert!(allocated(&lazy) < 1 << 20, "without the option pages come on first touch: {}", allocated(&lazy));
    let n = allocated(&populated);
    assert!((9 << 20..MEMORY_BYTES as u64).contains(&n), "the first 9 MiB and not all 32 are allocated: {n}");
    let mut all = spawn_options("populate-all", 32);
    all.serve.populate_bytes = usize::MAX;
    assert_eq!(allocated(&EmulatedCsp::spawn(&all).expect("starts")), MEMORY_BYTES as u64, "clamped to its memory");
}

/// Not a benchmark of record (that is the runtime's job): a quick look at
/// what the queue costs. `cargo test -p peerpath-device --release --test
/// devices -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput_of_the_emulated_device_against_the_cpu_device() {
    let block: u64 = 1 << 20;
    let blocks = 12u64;
    let data = protein((block * blocks) as usize);
    let level = Level::new(1).unwrap();
    let requests = |round: u64| -> Vec<Request> {
        (0..blocks)
            .map(|i| Request::compress(round * blocks + i, level, Format::Gzip, DeviceRange::new(i * block, block), DeviceRange::new(OUTPUT_AT + i * (block + 4096), block + 4096)))
            .collect()
    };
    let mut cpu = cpu(2, 16);
    let mut emu = spawn_csp("speed", 16);
    for device in [&mut cpu as &mut dyn Device, &mut emu as &mut dyn Device] {
        write(device, 0, &data);
        run_to_completion(device, requests(0), TIMEOUT).unwrap(); // warm up
        let start = std::time::Instant::now();
        let rounds = 8;
        for round in 1..=rounds {
            let done = run_to_completion(device, requests(round), TIMEOUT).unwrap();
            assert!(done.iter().all(|c| c.status == Status::Success));
        }
        let secs = start.elapsed().as_secs_f64();
        println!("{:>8}: {:.2} GB/s ({} x {} MiB blocks, level 1, 2 workers)", device.name(), (rounds * blocks * block) as f64 / secs / 1e9, rounds * blocks, block >> 20);
    }
}

#[test]
fn random_entries_never_crash_the_device_and_each_gets_an_answer() {
    let mut emu = spawn_csp("fuzz", 16);
    let mem = emu.memory().len() as u64;
    write(&emu, 0, &protein(1 << 20));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let opcodes = [0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x12, 0xC0, 0xC1, 0xff];
    let mut statuses = std::collections::BTreeMap::new();
    for tag in 0..300u64 {
        let mut e = [0u64; 8];
        let well_formed = next() % 10 < 7;
        let opcode = opcodes[(next() % opcodes.len() as u64) as usize];
        let n_inputs = if well_formed { next() % 3 } else { next() % 4 };
        let flags = if well_formed { 0 } else { next() & 0xff00 };
        e[0] = opcode | flags | n_inputs << 32;
        e[1] = match (well_formed, opcode) {
            (true, 0x02) => next() % 256,
            (true, 0x10) => (next() % 13) | ((next() % 2) << 8),
            (true, _) => 0,
            (false, _) => next() % 4096,
        };
        for w in e.iter_mut().skip(2) {
            *w = match next() % 6 {
                0 => next(),
                1 => mem - next() % 8192,
                _ => next() % (1 << 20),
            };
        }
        // Most outputs clear of the inputs' first megabyte, and large enough.
        if next() % 4 != 0 {
            e[2] = (2 << 20) + next() % (8 << 20);
            e[3] = (1 << 20) + next() % (2 << 20);
        }
        if opcode == 0x03 && well_formed {
            e[2] = 0;
            e[3] = 0;
        }
        if n_inputs < 2 {
            e[6] = 0;
            e[7] = 0;
        }
        if n_inputs < 1 {
            e[4] = 0;
            e[5] = 0;
        }
        assert!(matches!(emu.submit_raw(tag, e), Submit::Queued));
        let done = run_to_completion(&mut emu, [], TIMEOUT).expect("the device survives every entry");
        assert_eq!(done.len(), 1, "entry {tag}: {e:x?}");
        *statuses.entry(format!("{:?}", done[0].status)).or_insert(0) += 1;
    }
    println!("outcomes of 300 random entries: {statuses:?}");
    assert!(statuses.len() >= 4, "a spread of outcomes: {statuses:?}");
    let c = run_one(&mut emu, Request::crc32(1, &[DeviceRange::new(0, 100)]));
    assert_eq!(c.status, Status::Success, "still working after: {statuses:?}");
}

#[test]
fn a_duplicate_completion_is_caught_as_malformed_and_the_device_retired() {
    let mut o = spawn_options("duplicate", 8);
    // Completions of the queue pair: identify (at connect), crc 1, then crc 2 twice.
    o.serve.duplicate_completion_after = Some(3);
    let mut emu = peerpath_device::EmulatedCsp::spawn(&o).expect("the emulated CSP starts");
    write(&emu, 0, b"hello");
    let crc = |tag| Request::crc32(tag, &[DeviceRange::new(0, 5)]);
    assert_eq!(run_one(&mut emu, crc(1)).status, Status::Success);
    // The duplicate lands right after the original: the host may reap the original alone and
    // see the copy on its next look, so keep looking (with nothing in flight) until it does.
    let e = match run_to_completion(&mut emu, [crc(2)], TIMEOUT) {
        Err(e) => e,
        Ok(_) => {
            let deadline = std::time::Instant::now() + TIMEOUT;
            loop {
                let mut out = Vec::new();
                match emu.poll(&mut out) {
                    Err(e) => break e,
                    Ok(_) => assert!(out.is_empty() && std::time::Instant::now() < deadline, "the duplicate was never caught: {out:?}"),
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    };
    assert_eq!(e.kind, peerpath_device::FailureKind::MalformedCompletion, "{e}");
    assert!(e.detail.contains("not in flight"), "{e}");
    // Retired: it takes nothing more.
    assert!(matches!(emu.submit(crc(4)), Submit::Refused(..)));
}

/// Erasure-code reconstruction (0x21) on the CPU and the emulated device:
/// erased units (data and parity) rebuilt from any k survivors, exactly the
/// units `RsCode::encode` made; bad index lists refused by both.
#[test]
fn ec_reconstruct_rebuilds_erased_units_on_both_devices() {
    let mut cpu = cpu(2, 8);
    let mut emu = spawn_csp("reconstruct", 16);
    const INDEX_AT: u64 = PATTERN_AT;
    for (k, m, unit, survivors, wanted) in [
        (4usize, 2usize, 4099usize, vec![1u8, 3, 4, 5], vec![0u8, 2]),
        (4, 2, 4099, vec![5, 0, 4, 2], vec![3]),
        (10, 4, 1000, vec![0, 1, 2, 3, 4, 5, 6, 7, 12, 13], vec![9, 8, 10, 11]),
        (1, 1, 17, vec![1], vec![0]),
    ] {
        let data = incompressible(k * unit, (k * 31 + unit) as u64);
        let mut all: Vec<Vec<u8>> = data.chunks(unit).map(<[u8]>::to_vec).collect();
        let mut parity = vec![vec![0u8; unit]; m];
        {
            let units: Vec<&[u8]> = all.iter().map(Vec::as_slice).collect();
            let mut p: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
            peerpath_func::ec::RsCode::new(k, m).unwrap().encode(&units, &mut p);
        }
        all.extend(parity);
        let input: Vec<u8> = survivors.iter().flat_map(|&i| all[i as usize].clone()).collect();
        let mut indices = survivors.clone();
        indices.extend(&wanted);
        let expect: Vec<u8> = wanted.iter().flat_map(|&i| all[i as usize].clone()).collect();
        let f = Function::EcReconstruct { data: k as u8, parity: m as u8, wanted: wanted.len() as u8 };
        let request = |indices: &[u8]| Request { tag: 30, function: f, inputs: vec![DeviceRange::new(INPUT_AT, input.len() as u64), DeviceRange::new(INDEX_AT, indices.len() as u64)], output: DeviceRange::new(OUTPUT_AT, OUTPUT_CAP) };
        for d in [&mut cpu as &mut dyn Device, &mut emu] {
            write(d, INPUT_AT, &input);
            write(d, INDEX_AT, &indices);
            let got = outcome(d, request(&indices));
            assert_eq!((got.status, got.output == expect), (Status::Success, true), "{f} from {survivors:?}");
            // A repeated index, a wanted unit that survives, an index past k + m, a short list.
            let mut bad = indices.clone();
            bad[1] = bad[0];
            let mut wants_a_survivor = indices.clone();
            *wants_a_survivor.last_mut().unwrap() = survivors[0];
            let mut past = indices.clone();
            past[0] = (k + m) as u8;
            for (why, list) in [("repeated", bad), ("wanted survives", wants_a_survivor), ("past k + m", past)] {
                if k == 1 && why == "repeated" {
                    continue; // one survivor: nothing to repeat it with
                }
                write(d, INDEX_AT, &list);
                assert_eq!(outcome(d, request(&list)).status, Status::InvalidField, "{f}: {why}");
            }
            assert_eq!(outcome(d, request(&indices[..indices.len() - 1])).status, Status::InvalidField, "{f}: a short index list");
        }
    }
}

/// The CPU device made to reach storage itself (`storage_io`): a
/// registered file read into its memory at aligned offsets, the last read
/// short at the end of the file, and written from it; unaligned commands
/// refused; an unknown file number, or a file it cannot write, a storage
/// error; without `storage_io` the functions are not there and registering
/// says so.
#[test]
fn the_cpu_device_reads_and_writes_registered_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("source");
    let data = peerpath_func::sample::protein_like((3 << 20) + 123, 9);
    std::fs::write(&path, &data).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let mut plain = cpu(2, 8);
    assert!(!plain.functions().contains(FunctionKind::StorageRead) && plain.storage_io().is_none());
    assert!(plain.register_file(&file).unwrap_err().contains("does not reach storage itself"));
    let read_at = |file: u8, offset: u64, at: u64, len: u64| Request { tag: 1, function: Function::StorageRead { file, offset }, inputs: Vec::new(), output: DeviceRange::new(at, len) };
    assert_eq!(outcome(&mut plain, read_at(0, 0, 0, 4096)).status, Status::Unsupported);
    let mut config = peerpath_device::CpuDeviceConfig::new(MEMORY_BYTES);
    config.storage_io = true;
    let mut dev = peerpath_device::CpuDevice::new(config).unwrap();
    assert!(dev.functions().contains(FunctionKind::StorageRead) && dev.storage_io().is_some_and(|r| r.direct));
    let f = dev.register_file(&file).unwrap();
    drop(file); // the device holds its own
    for (offset, len) in [(0u64, 1u64 << 20), (2 << 20, 2 << 20), (3 << 20, 4096)] {
        let got = outcome(&mut dev, read_at(f, offset, OUTPUT_AT, len));
        let end = (offset + len).min(data.len() as u64) as usize;
        assert_eq!((got.status, got.output_bytes), (Status::Success, (end - offset as usize) as u64), "read of {len} at {offset}");
        assert!(got.output == data[offset as usize..end], "read of {len} at {offset}: the file's bytes");
    }
    for bad in [read_at(f, 100, OUTPUT_AT, 4096), read_at(f, 0, OUTPUT_AT + 512, 4096), read_at(f, 0, OUTPUT_AT, 1000), read_at(f, 0, OUTPUT_AT, 0)] {
        assert_eq!(outcome(&mut dev, bad).status, Status::InvalidField, "O_DIRECT's alignment");
    }
    assert_eq!(outcome(&mut dev, read_at(f + 1, 0, OUTPUT_AT, 4096)).status, Status::StorageError, "no such file");
    dev.unregister_file(f);
    assert_eq!(outcome(&mut dev, read_at(f, 0, OUTPUT_AT, 4096)).status, Status::StorageError, "unregistered");
    assert_eq!(Function::from_opcode(0x50, 7 << 56 | 4096), Some(Ok(Function::StorageRead { file: 7, offset: 4096 })));
    // Writes: device memory to a registered file, at aligned offsets.
    let out_path = dir.path().join("target");
    let out = std::fs::OpenOptions::new().create(true).truncate(true).write(true).open(&out_path).unwrap();
    let w = dev.register_file(&out).unwrap();
    write(&dev, INPUT_AT, &data[..1 << 20]);
    let write_at = |tag, offset: u64, at: u64, len: u64| Request { tag, function: Function::StorageWrite { file: w, offset }, inputs: vec![DeviceRange::new(at, len)], output: DeviceRange::new(0, 0) };
    let got = outcome(&mut dev, write_at(1, 8192, INPUT_AT, 1 << 20));
    assert_eq!((got.status, got.output_bytes), (Status::Success, 1 << 20));
    let written = std::fs::read(&out_path).unwrap();
    assert!(written.len() == 8192 + (1 << 20) && written[8192..] == data[..1 << 20] && written[..8192].iter().all(|&b| b == 0), "the file holds the device's bytes at the offset");
    for bad in [write_at(2, 100, INPUT_AT, 4096), write_at(3, 0, INPUT_AT + 512, 4096), write_at(4, 0, INPUT_AT, 1000)] {
        assert_eq!(outcome(&mut dev, bad).status, Status::InvalidField, "O_DIRECT's alignment");
    }
    let with_output = Request { tag: 5, function: Function::StorageWrite { file: w, offset: 0 }, inputs: vec![DeviceRange::new(INPUT_AT, 4096)], output: DeviceRange::new(OUTPUT_AT, 4096) };
    assert_eq!(outcome(&mut dev, with_output).status, Status::InvalidField, "a write has no output");
    // A file open for reading only cannot be written: a storage error, not a panic.
    let ro = dev.register_file(&std::fs::File::open(&path).unwrap()).unwrap();
    let to_ro = Request { tag: 6, function: Function::StorageWrite { file: ro, offset: 0 }, inputs: vec![DeviceRange::new(INPUT_AT, 4096)], output: DeviceRange::new(0, 0) };
    assert_eq!(outcome(&mut dev, to_ro).status, Status::StorageError);
}
