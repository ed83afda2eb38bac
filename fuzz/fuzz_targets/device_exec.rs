//! The CPU device (the oracle every device must match) running a queue
//! entry on device memory, both from arbitrary bytes: the entry as the
//! device reads it (`decode_sqe`), then checked and run. The first byte
//! is the opcode, the next eight the parameter word, then the number of
//! inputs and three ranges (offset and length, two bytes each, within the
//! memory or, where the top bit of the count byte is set, anywhere), then
//! the memory's contents. Whatever they say: a completion, never a panic;
//! no more output bytes than the output range holds, none but on
//! success; and not a byte of memory written outside the output range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_device::emulated::layout::{decode_sqe, Command};
use peerpath_device::{CpuDevice, CpuDeviceConfig, Device, Submit};
use std::time::Duration;

const MEMORY_BYTES: usize = 16 << 10;

fuzz_target!(|data: &[u8]| {
    let Some((head, contents)) = data.split_first_chunk::<22>() else { return };
    let opcode = head[0];
    let param = u64::from_le_bytes(head[1..9].try_into().expect("8 bytes"));
    let (count, anywhere) = (u64::from(head[9] & 3), head[9] & 0x80 != 0);
    let range = |i: usize| {
        let (o, l) = (u16::from_le_bytes([head[10 + 4 * i], head[11 + 4 * i]]), u16::from_le_bytes([head[12 + 4 * i], head[13 + 4 * i]]));
        let (o, l) = if anywhere { (u64::from(o) << 4, u64::from(l) << 4) } else { (u64::from(o) % MEMORY_BYTES as u64, u64::from(l) % (MEMORY_BYTES as u64 + 1)) };
        (o, l)
    };
    let mut e = [0u64; 8];
    e[0] = u64::from(opcode) | 7 << 16 | count << 32;
    e[1] = param;
    (e[2], e[3]) = range(0);
    for i in 0..count.min(2) as usize {
        (e[4 + 2 * i], e[5 + 2 * i]) = range(1 + i);
    }
    let (_, Ok(Command::Io(request))) = decode_sqe(&e) else { return };
    let mut device = CpuDevice::new(CpuDeviceConfig { workers: 0, queue_depth: 1, ..CpuDeviceConfig::new(MEMORY_BYTES) }).expect("a CPU device");
    let len = device.memory().len();
    let mut before = vec![0u8; len];
    for (i, b) in before.iter_mut().enumerate() {
        *b = contents.get(i % contents.len().max(1)).copied().unwrap_or(0) ^ (i / contents.len().max(1)) as u8;
    }
    // SAFETY: nothing is in flight on this new device; this thread alone touches its memory.
    unsafe { device.memory().host_write(0, &before) };
    let output = request.output;
    let submitted = device.submit(request);
    assert!(matches!(submitted, Submit::Queued), "{submitted:?}");
    let mut done = Vec::new();
    while done.is_empty() {
        device.poll(&mut done).expect("a CPU device does not fail");
        if done.is_empty() {
            device.wait(Duration::from_secs(60)).expect("a CPU device does not fail");
        }
    }
    let c = &done[0];
    assert!(c.output_bytes <= output.len, "{c:?}");
    assert!(c.status.is_success() || c.output_bytes == 0, "{c:?}");
    let mut after = vec![0u8; len];
    // SAFETY: the command has completed; nothing is in flight.
    unsafe { device.memory().host_read(0, &mut after) };
    let (start, end) = (output.offset as usize, (output.offset + output.len) as usize);
    // An output range that does not fit is refused: then nothing at all is written.
    let (start, end) = if end <= len { (start, end) } else { (len, len) };
    assert!(before[..start] == after[..start] && before[end..] == after[end..], "{:?} ({:?}) wrote outside its output range {output}", c.request.function, c.status);
});
