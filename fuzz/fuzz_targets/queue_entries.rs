//! The queue file's entries and data pages (`docs/queue-format.md`) on
//! arbitrary bytes, as each side reads what the other wrote: a submission
//! entry (the device's side), a completion entry, identify and stats data
//! (the host's side, from a device process it does not trust). Decoding
//! never panics; an entry the device accepts encodes back to the same 64
//! bytes (nothing in it is ignored); stats data it accepts encodes back to
//! the words it was read from; identify data and completions built from the
//! input decode to what was encoded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use peerpath_device::emulated::layout::{
    decode_cqe, decode_identify, decode_sqe, decode_stats, encode_admin, encode_cqe, encode_identify, encode_sqe, encode_stats, sqe_cid, stats_words, Command,
    IDENTIFY_MAGIC, OPCODE_GET_STATS, OPCODE_IDENTIFY, STATS_MAGIC,
};
use peerpath_device::{FunctionSet, Identify};

fn words(data: &[u8]) -> Vec<u64> {
    data.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    }).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let mut w = words(rest);
    match mode % 4 {
        0 => {
            w.resize(8, 0);
            let e: [u64; 8] = w[..8].try_into().expect("8 words");
            let (cid, decoded) = decode_sqe(&e);
            assert_eq!(cid, sqe_cid(&e));
            match decoded {
                Ok(Command::Io(request)) => {
                    assert_eq!(request.tag, 0);
                    assert_eq!(encode_sqe(cid, &request), e, "an accepted entry is canonical: {request:?}");
                }
                Ok(Command::Identify) => assert_eq!(encode_admin(cid, OPCODE_IDENTIFY), e),
                Ok(Command::GetStats) => assert_eq!(encode_admin(cid, OPCODE_GET_STATS), e),
                Err(_) => {}
            }
        }
        1 => {
            // What the host reads of a completion: any words decode; fields encode and decode back.
            w.resize(4, 0);
            let e: [u64; 4] = w[..4].try_into().expect("4 words");
            let f = decode_cqe(&e);
            assert_eq!(decode_cqe(&encode_cqe(&f)), f);
        }
        2 => {
            // Stats data: the first word is taken as the magic half the time.
            if mode & 4 != 0 && !w.is_empty() {
                w[0] = STATS_MAGIC;
            }
            if let Some(s) = decode_stats(&w) {
                let n = stats_words(s.functions.len());
                assert!(n <= w.len());
                assert_eq!(encode_stats(&s), w[..n], "accepted stats are what they encode to");
                assert_eq!(decode_stats(&encode_stats(&s)), Some(s));
            }
        }
        _ => {
            if mode & 4 != 0 && !w.is_empty() {
                w[0] = IDENTIFY_MAGIC;
            }
            let _ = decode_identify(&w);
            // Identify data as a device writes it: a name of 1-32 of the characters a device
            // name may hold, and the other fields from the input.
            if w.len() >= 6 {
                let name: String = rest.iter().rev().take(1 + usize::from(mode >> 3) % 32).map(|b| b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"[usize::from(*b) % 64] as char).collect();
                let id = Identify {
                    name,
                    version: w[1] as u32,
                    pid: (w[1] >> 32) as u32,
                    memory_bytes: w[2],
                    queue_count: w[3] as u32,
                    queue_depth: (w[3] >> 32) as u32,
                    max_input_ranges: w[4] as u32,
                    workers: (w[4] >> 32) as u32,
                    functions: FunctionSet::from_bits(w[5] as u32),
                };
                assert_eq!(decode_identify(&encode_identify(&id)), Some(id));
            }
        }
    }
});
